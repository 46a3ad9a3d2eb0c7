#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Open vSwitch on card A's switch in switchdev mode: a bridge of the PF
# (the wire's representor) and pf0vf0, with other_config:hw-offload=true
# and tc-policy=skip_sw. OVS learns the VF's and B's addresses through
# its kernel datapath (the first packets, through the representors),
# then puts its megaflows on the representors as tc flower rules, which
# the driver gives to the card: `ovs-appctl dpctl/dump-flows -m
# type=offloaded` lists them with dp:tc and counts what the card carried,
# the VF's pings to B are answered, and the host's counters stay flat.
# An OpenFlow rule that rewrites a destination address (NAT) is
# offloaded too: B receives the datagrams at its own address.

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
harness ping >/dev/null || bail_out "no harness control channel"
for t in devlink tc ovs-vsctl ovs-vswitchd ovsdb-server ovsdb-tool ovs-appctl; do
	command -v $t >/dev/null || bail_out "$t not installed"
done
IP_VF=10.99.0.3
REP=
cleanup() {
	ovs_stop
	switchdev_vf_cleanup
	net_cleanup
}
trap cleanup EXIT
dmesg_mark

vm_ping() { ip netns exec $VM ping -c "$1" -i 0.05 -W 2 -q $IP_B >/dev/null; }

ktap_header 8
switchdev_vf $IP_VF/24
ip addr flush dev "$NETIF_A"
ovs_start
ovs-vsctl add-br br0 -- add-port br0 "$NETIF_A" -- add-port br0 "$REP"
ip link set br0 up
check "OVS runs with hw-offload, the PF and pf0vf0 its ports" bash -c "
	[ \"\$(ovs-vsctl get Open_vSwitch . other_config:hw-offload)\" = '\"true\"' ] &&
	ovs-vsctl list-ports br0 | grep -qx '$REP' && ovs-vsctl list-ports br0 | grep -qx '$NETIF_A'"

# The first packets go up through the representors: OVS learns.
wait_until 100 vm_ping 1
vm_ping 5
check "the VF reaches B through OVS" vm_ping 5

rep0=$(rx_packets_of "$REP") pf0=$(rx_packets_of "$NETIF_A")
vm_ping 50
rc=$?
rep1=$(rx_packets_of "$REP") pf1=$(rx_packets_of "$NETIF_A")
ovs_offloaded | sed 's/^/# /'
up=$(ovs_flow_packets "in_port($REP)") down=$(ovs_flow_packets "in_port($NETIF_A)")
echo "# 50 pings: rc $rc; offloaded flows VF->B ${up:-none} packets, B->VF ${down:-none}; $REP rx +$((rep1 - rep0)), $NETIF_A rx +$((pf1 - pf0))"
check "dpctl/dump-flows type=offloaded lists both directions with dp:tc" test -n "$up" -a -n "$down"
check "the card carried the pings: all answered, the flows counted them" \
	test "$rc" = 0 -a "${up:-0}" -ge 50 -a "${down:-0}" -ge 50
check "and the host saw none of them (representor and PF flat)" \
	test $((rep1 - rep0)) -lt 5 -a $((pf1 - pf0)) -lt 5
check "OVS's rules are on the card (in_hw on both representors)" bash -c "
	tc filter show dev $REP ingress | grep -q in_hw && tc filter show dev $NETIF_A ingress | grep -q in_hw"

# NAT through OVS: an OpenFlow rule sends UDP for a virtual address
# (10.99.0.100, B's MAC) to B's address instead; OVS offloads the
# rewrite as pedit and csum, which the card carries out. B's socket on
# its own address is the witness (its stack drops what is addressed to
# 10.99.0.100).
VIP=10.99.0.100
b_mac=$(ip -n $NS -j link show "$NETIF_B" | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["address"])')
ip -n $VM neigh replace $VIP lladdr "$b_mac" dev "$VF"
ovs-ofctl add-flow br0 "priority=100,udp,in_port=$REP,nw_dst=$VIP,actions=mod_nw_dst:$IP_B,output:$NETIF_A"
got=$(mktemp)
ip netns exec $NS "$GFT_PY" udp-recv 7000 40 5 >"$got" &
recv=$!
wait_listening udp 7000
ip netns exec $VM "$GFT_PY" udp-send $VIP 7000 20 4000
nap 1
ip netns exec $VM "$GFT_PY" udp-send $VIP 7000 20 4000
wait $recv
n=$(cat "$got")
rm -f "$got"
nat=$(ovs_offloaded | grep "dst=$VIP" | grep "dp:tc")
echo "# NAT: B received ${n:-?} of 40 sent to $VIP:7000; offloaded: ${nat:-none}"
check "UDP for $VIP arrives at B rewritten to its address (40 of 40)" test "${n:-0}" = 40
check "the rewrite runs on the card: an offloaded flow with set(ipv4(dst)) and dp:tc" \
	bash -c '[[ $0 == *"set(ipv4(dst=$1"* ]] && [ "$(grep -o "packets:[0-9]*" <<<"$0" | cut -d: -f2)" -ge 15 ]' "$nat" "$IP_B"
ktap_finish
