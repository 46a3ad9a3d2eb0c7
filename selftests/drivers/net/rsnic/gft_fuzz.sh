#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# 10,000 random and mutated writes to every writable GFT debugfs file
# (rules, flows, max_flows, fail_installs, idle_timeout_ms, exception_rate,
# exception_burst) while traffic crosses the GFT. Afterwards the kernel log is clean, every listed rule
# is well-formed (it adds again as it is), and the driver's flows are
# exactly the ones the card holds.

source "$(dirname "$0")/lib.sh"
gft_setup
trap 'kill $ping_pid 2>/dev/null; gft_cleanup' EXIT
dmesg_mark

WRITES=${GFT_FUZZ_WRITES:-10000}
SEED=${GFT_FUZZ_SEED:-$RANDOM}

# Flow keys, in one syntax: the driver's listing and the card's.
drv_keys() {
	sed 's/ rule=.*//; s/proto=tcp/proto=6/; s/proto=udp/proto=17/; s/proto=icmpv6/proto=58/; s/proto=icmp/proto=1/' \
		"$GFT/flows" | sort
}
card_keys() { card_gft_flows | tr ';' '\n' | tail -n +2 | sed 's/^ //; s/ actions=.*//' | sort; }

ktap_header 5
gft_w rules "add prio=10 dir=tx proto=icmp action=allow" >/dev/null
ping -i 0.05 -q $IP_B >/dev/null 2>&1 &
ping_pid=$!
echo "# $WRITES writes, seed $SEED"
"$GFT_PY" fuzz "$GFT" "$WRITES" "$SEED"
check "$WRITES writes done, the driver still answers" test -r "$GFT/stats" -a -n "$(gft_stat lookups)"
kill $ping_pid
wait $ping_pid 2>/dev/null
check "no kernel warning" dmesg_clean

# Every listed rule must be one the parser accepts: re-add each under a
# fresh id into an emptied table.
out=$("$GFT_PY" readd "$GFT")
grep '^#' <<<"$out"
read -r n bad < <(tail -n1 <<<"$out")
check "all $n listed rules are well-formed" test "$bad" = 0 -a "$(grep -c . "$GFT/rules")" = "$n"

gft_w rules "add prio=10 dir=tx proto=icmp action=allow" >/dev/null
ping -c 5 -i 0.2 -q $IP_B >/dev/null
same=0
for i in 1 2 3; do
	if [ "$(drv_keys)" = "$(card_keys)" ]; then same=1; break; fi
	sleep 1
done
echo "# driver $(drv_keys | grep -c .) flows, card $(card_keys | grep -c .)"
check "the driver's flows are the card's" test $same = 1 -a "$(drv_keys | grep -c .)" -gt 0
check "traffic still flows" ping -c 3 -W 2 -q $IP_B
ktap_finish
