#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Encapsulation in the card. Card A's host has an overlay address
# (10.77.0.1) next to its underlay one; a rule encapsulates overlay
# traffic in VXLAN (VNI 42) to B's underlay address, where a plain Linux
# vxlan device terminates it. The reverse flow decapsulates B's replies.
# tcpdump on B sees correct VXLAN; pings and TCP transfers both ways
# arrive intact. The same with NVGRE (VSID 7) against a Linux gretap.

source "$(dirname "$0")/lib.sh"
gft_setup
cleanup() {
	ip -n $NS link del vx42 2>/dev/null
	ip -n $NS link del gre7 2>/dev/null
	ip addr del 10.77.0.1/24 dev "$NETIF_A" 2>/dev/null
	ip addr del 10.78.0.1/24 dev "$NETIF_A" 2>/dev/null
	gft_cleanup
}
trap cleanup EXIT
dmesg_mark

OUTER="outer_smac=$MAC_A outer_dmac=$MAC_B outer_sip=$IP_A outer_dip=$IP_B"
# B's underlay carries full-size inner frames plus the outer headers.
ip -n $NS link set "$NETIF_B" mtu 1600
ip -n $NS link add vx42 type vxlan id 42 dstport 4789 local $IP_B remote $IP_A dev "$NETIF_B"
ip -n $NS link set vx42 mtu 1500 up
ip -n $NS addr add 10.77.0.2/24 dev vx42
ip -n $NS link add gre7 type gretap local $IP_B remote $IP_A key $((7 << 8))
ip -n $NS link set gre7 mtu 1500 up
ip -n $NS addr add 10.78.0.2/24 dev gre7
ip addr add 10.77.0.1/24 dev "$NETIF_A"
ip addr add 10.78.0.1/24 dev "$NETIF_A"
# Inner frames are addressed to the tunnel devices, and back to A.
ip neigh replace 10.77.0.2 lladdr "$(ip netns exec $NS cat /sys/class/net/vx42/address)" dev "$NETIF_A"
ip neigh replace 10.78.0.2 lladdr "$(ip netns exec $NS cat /sys/class/net/gre7/address)" dev "$NETIF_A"
ip -n $NS neigh replace 10.77.0.1 lladdr "$MAC_A" dev vx42
ip -n $NS neigh replace 10.78.0.1 lladdr "$MAC_A" dev gre7

ktap_header 11
check "VXLAN and NVGRE encap rules added" test \
	"$(gft_w rules "add prio=10 dir=tx dst=10.77.0.0/24 action=vxlan_encap encap_id=42 $OUTER")$(gft_w rules "add prio=10 dir=tx dst=10.78.0.0/24 action=nvgre_encap encap_id=7 $OUTER")" = OKOK
check "decap rules for tunnels 42 and 7 added" test \
	"$(gft_w rules "add prio=20 dir=rx tunnel=42 action=decap")$(gft_w rules "add prio=20 dir=rx tunnel=7 action=decap")" = OKOK

capture $NS "$NETIF_B" 4 "udp port 4789" /tmp/gft_dump
dump=$!
check "ping through VXLAN" ping -c 3 -W 2 -q 10.77.0.2
capture_stop $dump
check "B's wire: VXLAN, VNI 42, from A's underlay" \
	grep -q "$IP_A\.[0-9]* > $IP_B\.4789: .*VXLAN, flags \[I\] (0x08), vni 42" /tmp/gft_dump
check "B's wire: the inner frame intact (echo request 10.77.0.1 > 10.77.0.2)" \
	grep -q "10.77.0.1 > 10.77.0.2: ICMP echo request" /tmp/gft_dump
check "encap flow and its decap reverse flow installed" \
	test "$(drv_flows_with dir=tx proto=icmp dst=10.77.0.2 action=vxlan_encap encap_id=42)" = 1 -a \
	"$(drv_flows_with dir=rx proto=icmp src=10.77.0.2 dst=10.77.0.1 tunnel=42 action=decap)" = 1

ip netns exec $NS "$GFT_PY" tcp-sink 5004 >/tmp/gft_rx &
sink=$!
wait_listening tcp 5004
sent=$("$GFT_PY" tcp-source 10.77.0.2 5004 $((1 << 20)))
wait $sink
echo "# A->B sent $sent; received $(cat /tmp/gft_rx)"
check "1 MiB A -> B through VXLAN intact" test -n "$sent" -a "$sent" = "$(cut -d' ' -f1,2 /tmp/gft_rx)"
"$GFT_PY" tcp-sink 5005 >/tmp/gft_rx &
sink=$!
wait_listening tcp 5005 ""
sent=$(ip netns exec $NS "$GFT_PY" tcp-source 10.77.0.1 5005 $((1 << 20)))
wait $sink
echo "# B->A sent $sent; received $(cat /tmp/gft_rx)"
check "1 MiB B -> A (decapsulated by the card) intact" test -n "$sent" -a "$sent" = "$(cut -d' ' -f1,2 /tmp/gft_rx)"

check "ping through NVGRE" ping -c 3 -W 2 -q 10.78.0.2
check "NVGRE flows: encap VSID 7 out, decap in" \
	test "$(drv_flows_with dir=tx proto=icmp dst=10.78.0.2 action=nvgre_encap encap_id=7)" = 1 -a \
	"$(card_flows_with dir=rx proto=1 src=10.78.0.2 tunnel=7)" = 1
check "no kernel warning" dmesg_clean
rm -f /tmp/gft_rx /tmp/gft_dump
ktap_finish
