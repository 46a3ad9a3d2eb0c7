#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The exception path: the first packet of a new UDP or TCP flow misses in
# the card and goes to the driver, which installs the flow; later packets
# hit in the card. Counters are checked exactly (IPv6 off, static
# neighbours: nothing else crosses the GFT). While a flow is being
# decided, only its first packet goes up (pending marks). With
# hw-tc-offload off every packet takes the exception path, and still
# arrives.

source "$(dirname "$0")/lib.sh"
gft_setup
trap gft_cleanup EXIT
dmesg_mark

# Card and driver counters as "lookups hits misses exceptions installs".
counts() { echo "$(gft_stat lookups) $(gft_stat hits) $(gft_stat misses) $(gft_stat exceptions) $(gft_stat installs)"; }
delta() { # BEFORE AFTER
	local b=($1) a=($2)
	echo $((a[0] - b[0])) $((a[1] - b[1])) $((a[2] - b[2])) $((a[3] - b[3])) $((a[4] - b[4]))
}

ktap_header 16
check "rule added" test "$(gft_w rules "add prio=10 dir=tx proto=udp dport=5001 action=allow")" = OK

# (The first datagram alone: two missed in one make check's streaming
# pass at a pace of 1.83, the install slower than 10 ms.)
times() { echo "$(gft_stat exception_decide_us) $(gft_stat exception_install_us) $(gft_stat install_wait_us) $(gft_stat install_latency_us)"; }
before=$(counts) t0=($(times))
got=$(udp_burst_settled 5001 10 40001 dir=tx proto=17 "sport=40001 dport=5001")
after=$(counts) t1=($(times))
echo "# UDP: lookups hits misses exceptions installs += $(delta "$before" "$after")"
check "UDP: 10 lookups, 9 hits, 1 miss, 1 exception, 1 install" test "$(delta "$before" "$after")" = "10 9 1 1 1"
check_eq "UDP: all 10 datagrams arrived" "$got" 10
check "UDP: the flow counted the 9 hits, in the driver's and the card's view" \
	test "$(drv_flow_field packets dir=tx proto=udp "sport=40001 dport=5001")" = 9 -a \
	"$(card_flows_with dir=tx proto=17 "sport=40001 dport=5001" "packets=9 ")" = 1
check "UDP: the rule counted one hit" grep -q 'dport=5001 action=allow hits=1$' "$GFT/rules"
echo "# exception path us: decide ${t0[0]}->${t1[0]} install ${t0[1]}->${t1[1]} of it waiting ${t0[2]}->${t1[2]}, sent to answered ${t0[3]}->${t1[3]}"
# (The install is posted and its answer taken after the packet went
# back: the wait may be nothing, the time from sending to answer not.)
check "the exception path timed its decision and the install it posted" \
	test "${t1[0]}" -gt "${t0[0]}" -a "${t1[3]}" -gt "${t0[3]}" -a "${t1[1]}" -ge "${t1[2]}" -a "${t1[3]}" -ge "${t1[2]}"

before=$(counts)
ip netns exec $NS "$GFT_PY" tcp-sink 5002 >/tmp/gft_rx &
wait_listening tcp 5002
"$GFT_PY" tcp-hold $IP_B 5002 $GFT_HOLD &
wait_card_flows 2 proto=6 5002
sleep 0.5
after=$(counts)
d=($(delta "$before" "$after"))
echo "# TCP (open): lookups hits misses exceptions installs += ${d[*]}"
flows_pkts=$(($(drv_flow_field packets dir=tx proto=tcp dport=5002) + $(drv_flow_field packets dir=rx proto=tcp sport=5002)))
check "TCP: SYN and SYN-ACK missed (2 exceptions, 2 installs), the rest hit" \
	test "${d[2]} ${d[3]} ${d[4]}" = "2 2 2" -a "${d[1]}" -eq $((d[0] - 2)) -a "${d[1]}" -gt 2
check_eq "TCP: the two flows' packets are the hits" "$flows_pkts" "${d[1]}"
wait

# Pending marks: while the driver decides a flow, only its first packet
# goes up. Here no install ever reaches the card (fail_installs), so the
# flow stays undecided and its mark expires every 20 ms: of a stream in
# 10 ms bursts, about one packet in each two bursts goes up and is
# delivered, the others are counted in the card's pending drops.
gft_w fail_installs 1000000 >/dev/null
exc0=$(gft_stat exceptions) pdrop0=$(card_gft_stat pending_drops) miss0=$(gft_stat misses)
ip netns exec $NS "$GFT_PY" udp-count 5003 2 >/tmp/gft_rx &
wait_listening udp 5003
read -r sent secs < <("$GFT_PY" udp-blast $IP_B 5003 1 2000 64 40004)
wait
gft_w fail_installs 0 >/dev/null
exc=$(($(gft_stat exceptions) - exc0)) pdrop=$(($(card_gft_stat pending_drops) - pdrop0))
miss=$(($(gft_stat misses) - miss0)) got=$(cat /tmp/gft_rx)
echo "# pending: sent $sent in $secs s; misses $miss, exceptions $exc, pending drops $pdrop, arrived $got"
check "pending: an undecided flow sent at most one packet in 4 up ($exc of $sent)" \
	test "$exc" -ge 1 -a $((exc * 4)) -le "$sent"
check "pending: each miss went up or was counted as a pending drop" \
	test "$miss" = "$sent" -a $((exc + pdrop)) = "$sent"
check "pending: what went up arrived; the driver's stats show the card's pending drops" \
	test "$got" = "$exc" -a "$(gft_stat pending_drops)" = "$(card_gft_stat pending_drops)"

ethtool -K "$NETIF_A" hw-tc-offload off
before=$(counts)
got=$(udp_burst 5001 10 40002)
after=$(counts)
echo "# hw-tc-offload off: lookups hits misses exceptions installs += $(delta "$before" "$after")"
check "offload off: no flows cached" test "$(card_gft_flows | sed 's/;.*//')" = "ok flows=0 max=65536"
check "offload off: every packet an exception, none looked up or installed" \
	test "$(delta "$before" "$after")" = "0 0 0 10 0"
check_eq "offload off: all 10 datagrams arrived" "$got" 10

ethtool -K "$NETIF_A" hw-tc-offload on
aged0=$(gft_stat aged_out)
"$GFT_PY" udp-send $IP_B 5001 1 40003
flows_of_40003() { [ "$(drv_flows_with "sport=40003")" = "$1" ]; }
wait_until 20 flows_of_40003 1
check "idle flows age out (idle_timeout_ms 1000): a new flow is installed" \
	test "$(drv_flows_with "sport=40003")" = 1 -a "$(gft_w idle_timeout_ms 1000)" = OK
wait_until 100 flows_of_40003 0
echo "# aged_out += $(($(gft_stat aged_out) - aged0))"
check "the idle flow is gone from the driver and the card" \
	test "$(drv_flows_with "sport=40003")" = 0 -a "$(card_flows_with "sport=40003")" = 0 -a \
	"$(($(gft_stat aged_out) - aged0))" -ge 1
rm -f /tmp/gft_rx
ktap_finish
