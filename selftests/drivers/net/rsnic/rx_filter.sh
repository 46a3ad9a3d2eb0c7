#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# RX filtering: frames addressed to another unicast MAC are dropped by
# card A (its rx_filtered counter, from the harness) and never reach the
# netdev; in promiscuous mode they do; a multicast group joined is
# received, one not joined is filtered.

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
cleanup() {
	ip link set "$NETIF_A" promisc off 2>/dev/null
	net_cleanup
}
trap cleanup EXIT
dmesg_mark
ktap_header 6

OTHER=02:00:00:00:be:ef
filtered() { harness card A stats | tr ' ' '\n' | sed -n 's/^rx_filtered=//p'; }
rx_packets() { ip -s -j link show "$NETIF_A" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["stats64"]["rx"]["packets"])'; }
# send_to MAC: 20 UDP datagrams from card B to A's address, in frames
# addressed to MAC (a static neighbour entry on B).
send_to() {
	ip -n $NS neigh replace $IP_A lladdr "$1" dev "$NETIF_B"
	ip netns exec $NS python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(20):
    s.sendto(b"filter", (sys.argv[1], 7300)); time.sleep(0.01)
' $IP_A
	sleep 0.3
}
# watch OUT: captures UDP port 7300 on A without making it promiscuous
# (-p): what the netdev got. seen OUT: how many.
watch() {
	tcpdump -p --immediate-mode -l -i "$NETIF_A" -nn -c 20 udp port 7300 >"$1" 2>/tmp/filter.err &
	watcher=$!
	wait_until 100 grep -q "listening on" /tmp/filter.err
}
seen() { grep -c "7300: UDP" "$1"; }
# others_start / others_stop: count B's other multicast frames meanwhile
# (its IPv6 router solicitations and MLD reports, to groups A may not
# have joined), which the card may filter too.
others_start() {
	ip netns exec $NS tcpdump -p -Q out --immediate-mode -l -i "$NETIF_B" -nn -e \
		'ether multicast and not ether dst 01:00:5e:01:02:03 and not ether broadcast' \
		>/tmp/filter.others 2>/tmp/filter.others.err &
	others=$!
	wait_until 100 grep -q "listening on" /tmp/filter.others.err
}
others_stop() { sleep 0.2; kill $others; wait $others 2>/dev/null; grep -c . /tmp/filter.others; }

f0=$(filtered) r0=$(rx_packets)
watch /tmp/filter.other
send_to $OTHER
capture_stop $watcher
f1=$(filtered) r1=$(rx_packets)
echo "# to $OTHER: card filtered $((f1 - f0)), netdev rx +$((r1 - r0)), tcpdump saw $(seen /tmp/filter.other)"
check "frames to another MAC: the card filtered all 20 (rx_filtered)" test $((f1 - f0)) -ge 20
check "and the netdev never saw them (tcpdump -p)" test "$(seen /tmp/filter.other)" -eq 0

ip link set "$NETIF_A" promisc on
f0=$(filtered)
watch /tmp/filter.promisc
send_to $OTHER
capture_stop $watcher
f1=$(filtered)
echo "# promiscuous: card filtered $((f1 - f0)), tcpdump saw $(seen /tmp/filter.promisc)"
check "promiscuous: the card passes them, the netdev sees all 20" \
	test $((f1 - f0)) -eq 0 -a "$(seen /tmp/filter.promisc)" -eq 20
ip link set "$NETIF_A" promisc off

# Multicast: a group A joined (ip maddr) passes, another is filtered.
# The kernel hands the driver the new list from a work item
# (ndo_set_rx_mode_async): wait until a datagram to the group gets
# through. (The card filters multicast by a 64-bit hash of the address;
# 01:00:5e:04:05:06 shares no bit with the groups joined here.)
ip maddr add 01:00:5e:01:02:03 dev "$NETIF_A"
for _ in $(seq 30); do
	f0=$(filtered)
	ip -n $NS neigh replace $IP_A lladdr 01:00:5e:01:02:03 dev "$NETIF_B"
	ip netns exec $NS python3 -c 'import socket, sys; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"probe", (sys.argv[1], 7301))' $IP_A
	sleep 0.1
	[ "$(filtered)" = "$f0" ] && break
done
others_start
f0=$(filtered)
watch /tmp/filter.joined
send_to 01:00:5e:01:02:03
capture_stop $watcher
f1=$(filtered)
n=$(others_stop)
echo "# joined group: card filtered $((f1 - f0)) (B sent $n other multicast frames meanwhile), tcpdump saw $(seen /tmp/filter.joined)"
check "a multicast group joined: received, none of it filtered" \
	test $((f1 - f0)) -le "$n" -a "$(seen /tmp/filter.joined)" -eq 20
f0=$(filtered)
send_to 01:00:5e:04:05:06
f1=$(filtered)
check "a group not joined: filtered" test $((f1 - f0)) -ge 20
ip maddr del 01:00:5e:01:02:03 dev "$NETIF_A"
ip -n $NS neigh del $IP_A dev "$NETIF_B"

check "no kernel warnings" dmesg_clean
ktap_finish
