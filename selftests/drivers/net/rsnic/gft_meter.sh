#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A metered flow: UDP offered at about 20 Mbit/s through a rule metering
# 2 Mbit/s; what arrives (counted in frame bytes, as the meter counts) is
# within 10% of 2 Mbit/s. The limit is low enough that even the debug
# kernel offers well over it, so the rate is always checked: a VM that
# offers less than 1.5 times the limit fails the check (nothing measured).

source "$(dirname "$0")/lib.sh"
gft_setup
trap gft_cleanup EXIT

RATE=2000000
SIZE=1000
FRAME=$((SIZE + 8 + 20 + 14))
ktap_header 4
check "meter rule added" test "$(gft_w rules "add prio=10 dir=tx proto=udp dport=5030 action=meter rate=2m burst=16000")" = OK
ip netns exec $NS "$GFT_PY" udp-count 5030 1 >/tmp/gft_rx &
wait_listening udp 5030
read -r sent secs < <("$GFT_PY" udp-blast $IP_B 5030 4 2500 $SIZE 41005)
wait
got=$(cat /tmp/gft_rx)
offered=$(python3 -c "print(int($sent * $FRAME * 8 / $secs))")
rate=$(python3 -c "print(int($got * $FRAME * 8 / $secs))")
echo "# offered $offered bit/s ($sent frames in $secs s); arrived $rate bit/s ($got frames); limit $RATE"
check "offered at least 1.5 times the limit, and the rate arrived within 10% of it" \
	python3 -c "import sys; sys.exit($offered < $RATE * 1.5 or abs($rate - $RATE) > $RATE * 0.1)"
check "the card's meter dropped the excess" test "$(card_gft_stat meter_drops)" -gt 0
check_eq "the flow's own meter drops shown" "$(drv_flows_with dir=tx proto=udp dport=5030 action=meter)" 1
rm -f /tmp/gft_rx
ktap_finish
