#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A full flow table. The policy (Documentation/rsnic/gft.rst): a full
# card refuses new flows; each refusal is counted as an install failure
# and the packet is still delivered through the exception path, so no
# packet is lost. Lowering max_flows evicts the oldest flows; injected
# install failures behave like a full table.

source "$(dirname "$0")/lib.sh"
gft_setup
trap gft_cleanup EXIT
dmesg_mark

# One datagram from each of 80 source ports (42000..42079) to B:5040;
# prints how many arrived.
spray() { # FIRST_PORT COUNT
	ip netns exec $NS "$GFT_PY" udp-count 5040 2 >/tmp/gft_rx &
	wait_listening udp 5040
	python3 - "$IP_B" "$1" "$2" <<'PY'
import socket, sys, time
dst, first, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for p in range(first, first + n):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("", p))
    s.sendto(b"capacity", (dst, 5040))
    s.close()
    time.sleep(0.01)
PY
	wait
	cat /tmp/gft_rx
}
card_count() { card_gft_flows | sed 's/^ok flows=\([0-9]*\).*/\1/'; }

ktap_header 12
check "max_flows 50, rule added" test "$(gft_w max_flows 50)$(gft_w rules "add prio=10 dir=tx proto=udp dport=5040 action=allow")" = OKOK
fail0=$(gft_stat install_failures)
check_eq "80 new flows: all 80 datagrams arrive" "$(spray 42000 80)" 80
check "the card holds 50 (its capacity), so does the driver" test "$(card_count)" = 50 -a "$(grep -c . "$GFT/flows")" = 50
check "30 install failures counted" test $(($(gft_stat install_failures) - fail0)) = 30
check_eq "again: 80 arrive (50 hit, 30 take the exception path)" "$(spray 42000 80)" 80

ev0=$(gft_stat evictions)
check "max_flows 20 evicts the 30 oldest" test "$(gft_w max_flows 20)" = OK -a \
	$(($(gft_stat evictions) - ev0)) = 30 -a "$(card_count)" = 20 -a "$(grep -c . "$GFT/flows")" = 20

gft_w max_flows 100 >/dev/null
fail0=$(gft_stat install_failures)
gft_w fail_installs 5 >/dev/null
check_eq "5 injected install failures: 10 new flows all arrive" "$(spray 43000 10)" 10
check "5 failures counted, 5 flows installed, none pending" test $(($(gft_stat install_failures) - fail0)) = 5 -a \
	"$(card_count)" = 25 -a "$(cat "$GFT/fail_installs")" = 0

# The driver's table through many removals. It is a hash table whose
# removal shifts the rest of a probe run back: a slip there loses other
# flows from lookups though the listing still shows them, so every
# listed flow must be found again by its key.
gft_w max_flows 4096 >/dev/null
gft_w flows flush >/dev/null
check_eq "300 new flows: all 300 datagrams arrive" "$(spray 44000 300)" 300
held=$(grep -c . "$GFT/flows")
check "the driver holds what the card holds (at least 300)" test "$held" -ge 300 -a "$(card_count)" = "$held"
# del-flows STEP: prints what the driver refused, then "deleted refused".
del_flows() { local out; out=$("$GFT_PY" del-flows "$GFT" "$1"); grep '^#' <<<"$out" | head -5 >&2; tail -n1 <<<"$out"; }
read -r gone refused < <(del_flows 2)
left=$(grep -c . "$GFT/flows")
echo "# deleted $gone of $held (refused $refused), $left left, card $(card_count)"
read -r gone2 refused2 < <(del_flows 1)
echo "# then deleted $gone2 (refused $refused2), $(grep -c . "$GFT/flows") left, card $(card_count)"
check "every second flow, then the rest, deleted by key: none missing, none left" test \
	"$refused$refused2" = 00 -a $((gone + gone2)) = "$held" -a $((held - gone)) = "$left" \
	-a "$(grep -c . "$GFT/flows")" = 0 -a "$(card_count)" = 0
check "no kernel warning" dmesg_clean
rm -f /tmp/gft_rx
ktap_finish
