#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The GFT on VLAN-tagged and IPv6 traffic, end to end. Card A's host has
# no VLAN device: a TX rule makes the card push VLAN 5 on what A sends to
# B's VLAN address, and an RX rule pops it off B's tagged replies. B's
# stack (a plain Linux VLAN device) answers only tagged frames, and
# tcpdump on B sees the tag: pings, IPv4 and IPv6, get through only if
# both actions work. An IPv6 rule drops one UDP port and lets the next
# one through, counted per flow in the driver and the card.

source "$(dirname "$0")/lib.sh"
gft_setup
cleanup() {
	ip -n $NS link del vl5 2>/dev/null
	ip addr del 10.79.0.1/24 dev "$NETIF_A" 2>/dev/null
	ip addr flush dev "$NETIF_A" scope global to fd79::/16 2>/dev/null
	gft_cleanup
}
trap cleanup EXIT
dmesg_mark

# IPv6 back on (gft_setup turns it off for exact counts), addresses of our
# own without DAD, static neighbours: no NDP through the GFT.
sysctl -qw "net.ipv6.conf.$NETIF_A.disable_ipv6=0"
ip netns exec $NS sysctl -qw "net.ipv6.conf.$NETIF_B.disable_ipv6=0"
ip -n $NS link add link "$NETIF_B" name vl5 type vlan id 5
ip netns exec $NS sysctl -qw net.ipv6.conf.vl5.disable_ipv6=0
ip -n $NS link set vl5 up
ip -n $NS addr add 10.79.0.2/24 dev vl5
ip -n $NS addr add fd79:5::2/64 dev vl5 nodad
ip -n $NS addr add fd79::2/64 dev "$NETIF_B" nodad
ip addr add 10.79.0.1/24 dev "$NETIF_A"
ip addr add fd79:5::1/64 dev "$NETIF_A" nodad
ip addr add fd79::1/64 dev "$NETIF_A" nodad
for ip in 10.79.0.2 fd79:5::2 fd79::2; do ip neigh replace $ip lladdr "$MAC_B" dev "$NETIF_A"; done
for ip in 10.79.0.1 fd79:5::1; do ip -n $NS neigh replace $ip lladdr "$MAC_A" dev vl5; done
ip -n $NS neigh replace fd79::1 lladdr "$MAC_A" dev "$NETIF_B"

ktap_header 10
ok=true
for r in "add prio=10 dir=tx dst=10.79.0.2 action=vlan_push vlan=5" \
	"add prio=10 dir=rx src=10.79.0.2 action=vlan_pop" \
	"add prio=10 dir=tx dst=fd79:5::2 action=vlan_push vlan=5" \
	"add prio=10 dir=rx src=fd79:5::2 action=vlan_pop" \
	"add prio=10 dir=tx proto=udp dst=fd79::2 dport=9999 action=drop"; do
	[ "$(gft_w rules "$r")" = OK ] || { echo "# refused: $r"; ok=false; }
done
check "VLAN push/pop rules (IPv4 and IPv6) and an IPv6 drop rule added" $ok

# tagged KIND ADDR COUNT: pings ADDR COUNT times while tcpdump records
# B's port; prints "LOSS% TAGGED", TAGGED the echo requests to ADDR that
# carry VLAN 5 (filtered from the recording afterwards).
tagged() {
	local pid loss err=/tmp/gft_vlan.err
	ip netns exec $NS timeout 15 tcpdump --immediate-mode -U -i "$NETIF_B" -w /tmp/gft_vlan.pcap 2>$err &
	pid=$!
	wait_until 100 grep -q "listening on" $err
	sleep 1
	loss=$(ping -c "$3" -i 0.1 -W 2 -q "$2" | sed -n 's/.* \([0-9.]*\)% packet loss.*/\1/p')
	sleep 1
	kill $pid 2>/dev/null
	wait $pid 2>/dev/null
	echo "${loss:-100} $(tcpdump -r /tmp/gft_vlan.pcap -nn "vlan 5 and $1 and dst host $2" 2>/dev/null | grep -c "echo request")"
}
read -r loss n < <(tagged icmp 10.79.0.2 5)
echo "# IPv4 over VLAN 5: $loss% loss, $n tagged requests on B's port"
check "IPv4: A's untagged pings reach B's VLAN 5 device tagged, the replies untagged (no loss)" \
	test "$loss" = 0 -a "$n" = 5
read -r loss n < <(tagged icmp6 fd79:5::2 5)
echo "# IPv6 over VLAN 5: $loss% loss, $n tagged requests on B's port"
check "IPv6: the same over VLAN 5 (no loss)" test "$loss" = 0 -a "$n" = 5
check "the push and pop flows are installed, IPv4 and IPv6, with the rules' actions" \
	test "$(drv_flows_with dir=tx "dst=10.79.0.2" action=vlan_push)" = 1 -a \
	"$(drv_flows_with dir=rx "src=10.79.0.2" action=vlan_pop)" = 1 -a \
	"$(drv_flows_with dir=tx "dst=fd79:5::2" action=vlan_push)" = 1 -a \
	"$(drv_flows_with dir=rx "src=fd79:5::2" action=vlan_pop)" = 1
# A new flow's first packet takes the exception path (the driver installs
# the flow and sends the packet back); the flow counts the other 4.
check "the card holds the IPv6 flows and counted the 4 packets after the first" \
	test "$(card_flows_with dir=tx "dst=fd79:5::2")" = 1 -a \
	"$(drv_flow_field packets dir=tx "dst=fd79:5::2")" = 4 -a \
	"$(drv_flow_field packets dir=rx "src=fd79:5::2")" = 4

# Without the pop rule B's tagged replies reach A's stack tagged: it has
# no VLAN 5, so they are lost (the pop above did the work).
gft_w rules "del $(awk '/src=10.79.0.2/ && /vlan_pop/ {sub(/id=/, "", $1); print $1}' "$GFT/rules")" >/dev/null
gft_w flows flush >/dev/null
read -r loss n < <(tagged icmp 10.79.0.2 3)
echo "# without the pop rule: $loss% loss, $n tagged requests"
grep "10.79.0.2" "$GFT/flows" | sed 's/^/# /'
check "without the pop rule the replies are lost, the requests still tagged" \
	test "$loss" = 100 -a "$n" = 3

# IPv6 match: port 9999 dropped in the card, 9998 delivered. Each
# receiver waits up to 10 s for a datagram, from its bind on: both senders
# (two Python starts) must fit in it, which took more than 3 s on the
# debug kernel, and 9999's count of 0 only means something if its wait
# covered the send.
recv() { ip netns exec $NS "$GFT_PY" udp-recv "$1" 5 10 >"/tmp/gft_udp$1" & }
recv 9999
r1=$!
recv 9998
r2=$!
wait_listening udp 9999
wait_listening udp 9998
"$GFT_PY" udp-send fd79::2 9999 5 40999
"$GFT_PY" udp-send fd79::2 9998 5 40998
wait $r1 $r2
echo "# B received: port 9999 $(cat /tmp/gft_udp9999), port 9998 $(cat /tmp/gft_udp9998)"
check "IPv6 UDP to port 9999 dropped by the card, to 9998 delivered (0 and 5 of 5)" \
	test "$(cat /tmp/gft_udp9999)" = 0 -a "$(cat /tmp/gft_udp9998)" = 5
check "the IPv6 drop flow counted the 4 it dropped after the first" \
	test "$(drv_flows_with dir=tx proto=udp "dst=fd79::2" dport=9999 action=drop)" = 1 -a \
	"$(drv_flow_field packets dir=tx proto=udp "dst=fd79::2" dport=9999)" = 4
check "the default-allow flow of port 9998 counted 4 after the first" \
	test "$(drv_flow_field packets dir=tx proto=udp "dst=fd79::2" dport=9998)" = 4
check "no kernel warnings" dmesg_clean
ktap_finish
