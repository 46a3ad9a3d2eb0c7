#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# TCP connection tracking: SYN, FIN and RST packets that hit a flow are
# forwarded and copied to the driver; when a connection closes (FIN both
# ways, or a RST) its two flows are retired from the card, and its last
# packets do not install them again. (Counts are at least, not exact:
# late packets of earlier tests' connections may be retired meanwhile.)

source "$(dirname "$0")/lib.sh"
gft_setup
trap gft_cleanup EXIT
dmesg_mark

ktap_header 9
check "rule added" test "$(gft_w rules "add prio=10 dir=tx proto=tcp dport=5010 action=allow")" = OK

dups0=$(gft_stat tcp_duplicates)
ctl0=$(gft_stat tcp_control)
ret0=$(gft_stat tcp_retired)
ip netns exec $NS "$GFT_PY" tcp-sink 5010 >/tmp/gft_rx &
wait_listening tcp 5010
"$GFT_PY" tcp-hold $IP_B 5010 $GFT_HOLD &
wait_card_flows 2 proto=6 5010
check "open connection: its two flows in the driver and the card" \
	test "$(drv_flows_with proto=tcp 5010)" = 2 -a "$(card_flows_with proto=6 5010)" = 2
wait
wait_card_flows 0 proto=6 5010
sleep 0.5
dups=$(($(gft_stat tcp_duplicates) - dups0))
ctl=$(($(gft_stat tcp_control) - ctl0))
ret=$(($(gft_stat tcp_retired) - ret0))
echo "# FIN close: card copied $dups control packets; driver saw $ctl, retired $ret flows"
check "FIN both ways copied to the driver (forwarded too: the sink got its data)" \
	test "$dups" -ge 2 -a "$(cut -d' ' -f1 /tmp/gft_rx)" = 1000
check "SYN, SYN-ACK and the FINs tracked" test "$ctl" -ge 4
check "after the close: both flows retired, none installed again" \
	test "$ret" -ge 2 -a "$(drv_flows_with proto=tcp 5010)" = 0 -a "$(card_flows_with proto=6 5010)" = 0

dups0=$(gft_stat tcp_duplicates)
ret0=$(gft_stat tcp_retired)
ip netns exec $NS "$GFT_PY" tcp-sink 5010 >/tmp/gft_rx &
wait_listening tcp 5010
"$GFT_PY" tcp-reset $IP_B 5010 $GFT_HOLD &
wait_card_flows 2 proto=6 5010
check_eq "second connection: flows installed" "$(card_flows_with proto=6 5010)" 2
wait
wait_card_flows 0 proto=6 5010
sleep 0.5
dups=$(($(gft_stat tcp_duplicates) - dups0))
ret=$(($(gft_stat tcp_retired) - ret0))
echo "# RST close: card copied $dups; driver retired $ret flows"
check "the RST was copied" test "$dups" -ge 1
check "after the RST: both flows retired" \
	test "$ret" -ge 2 -a "$(drv_flows_with proto=tcp 5010)" = 0 -a "$(card_flows_with proto=6 5010)" = 0
check "no kernel warning" dmesg_clean
rm -f /tmp/gft_rx
ktap_finish
