#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Steering rules and the VF: a rule on the synthetic NIC (ethtool -N)
# steers its flow on the synthetic path; while the VF carries the data
# path the flow arrives on the VF's queues instead (the synthetic NIC's
# rules and RSS contexts are its own card function's), and once the VF
# is gone the rule steers again.

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
harness ping >/dev/null || bail_out "no harness control channel"
trap 'ethtool -N "$NETIF_A" delete 7 2>/dev/null; vf_unplug A 2>/dev/null; net_cleanup' EXIT
dmesg_mark

PORT=5301
stat() { ethtool -S "$NETIF_A" | awk -v k="$1:" '$1 == k {print $2}'; }
# send_flow: 200 UDP datagrams from B to A's port $PORT.
send_flow() {
	ip netns exec $NS python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(200):
    s.sendto(b"x" * 64, (sys.argv[1], int(sys.argv[2])))
' "$IP_A" $PORT
	sleep 0.5
}
# grew COUNTER BEFORE: whether the ethtool -S counter grew by 200 or more.
grew() { [ $(($(stat "$1") - $2)) -ge 200 ]; }
# stayed COUNTER BEFORE: whether it grew by less than 10.
stayed() { [ $(($(stat "$1") - $2)) -lt 10 ]; }

ktap_header 7
check "ethtool -N accepts a udp4 rule to queue 3" \
	ethtool -N "$NETIF_A" flow-type udp4 dst-port $PORT action 3 loc 7
check "ethtool -n lists it" bash -c "ethtool -n '$NETIF_A' | grep -q 'Filter: 7'"

before=$(stat rx3_packets)
send_flow
check "synthetic path: the flow arrives on queue 3" grew rx3_packets "$before"

vf_plug A
wait_datapath A vf || bail_out "the VF did not take the data path"
before=$(stat rx3_packets) vf_before=$(stat vf_rx_packets)
send_flow
check "VF path: the flow arrives on the VF's queues" grew vf_rx_packets "$vf_before"
check "VF path: not on the synthetic NIC's queue 3" stayed rx3_packets "$before"

vf_unplug A
wait_datapath A synthetic || bail_out "the data path did not come back"
before=$(stat rx3_packets)
send_flow
check "after the VF left: the rule steers to queue 3 again" grew rx3_packets "$before"
check "no kernel warnings" dmesg_clean
ktap_finish
