#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# VXLAN through Open vSwitch, on the card: card A in switchdev mode, its
# PF the underlay (10.99.0.1, out of OVS), an OVS bridge of pf0vf0 and a
# VXLAN port (VNI 42) to B, which terminates the tunnel with a plain
# kernel VXLAN device (192.168.77.2 inside). OVS offloads its flows as
# flower rules: tunnel_key set + redirect to its VXLAN device on the
# representor (the card encapsulates and sends out of the wire), and on
# the VXLAN device's ingress block, which the driver binds as an
# indirect block, enc_* matches with tunnel_key unset + redirect to the
# representor (the card decapsulates and hands the inner frame to the
# VF). OVS runs with tc-policy none: the kernel refuses skip_sw on a
# tunnel device's block. The witnesses: the VF's pings answered, the offloaded flows' counts
# (dp:tc), the representor and PF flat, and tcpdump at B decoding VNI 42
# around the VF's ICMP.

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
harness ping >/dev/null || bail_out "no harness control channel"
for t in devlink tc tcpdump ovs-vsctl ovs-vswitchd ovsdb-server ovsdb-tool ovs-appctl; do
	command -v $t >/dev/null || bail_out "$t not installed"
done
IN_VF=192.168.77.3
IN_B=192.168.77.2
REP=
cleanup() {
	ovs_stop
	switchdev_vf_cleanup
	ip -n $NS link del vx0 2>/dev/null # its qdisc and rule with it
	net_cleanup
}
trap cleanup EXIT
dmesg_mark

vm_ping() { ip netns exec $VM ping -c "$1" -i 0.05 -W 2 -q $IN_B >/dev/null; }

ktap_header 7
switchdev_vf $IN_VF/24
# B ends the tunnel.
ip -n $NS -force -batch - <<-EOF
	link add vx0 type vxlan id 42 remote $IP_A local $IP_B dstport 4789 dev $NETIF_B
	addr add $IN_B/24 dev vx0
	link set vx0 up
EOF
# tc refuses skip_sw rules on a block that has a device no driver binds
# directly (cls_api.c: nooffloaddevcnt), which a tunnel device's is:
# tc-policy none, so each rule is in software and, in_hw, on the card.
ovs_start none
ovs-vsctl add-br br-int -- add-port br-int "$REP" -- add-port br-int vx-a -- \
	set interface vx-a type=vxlan options:remote_ip=$IP_B options:key=42
ip link set br-int up
# The underlay's next hop resolved before OVS offloads the encap.
ping -c 1 -W 2 -q $IP_B >/dev/null
wait_until 100 vm_ping 1
check "the VF reaches B through the VXLAN tunnel (slow path first)" vm_ping 5

rep0=$(rx_packets_of "$REP") pf0=$(rx_packets_of "$NETIF_A")
cap=$(mktemp)
# VXLAN from A's underlay address carrying ICMP (the inner IP header's
# protocol byte: UDP 8 + VXLAN 8 + Ethernet 14 + 9 bytes in).
ip netns exec $NS timeout 20 tcpdump -c 4 -nn -vv -i "$NETIF_B" \
	"udp dst port 4789 and src host $IP_A and udp[39] = 1" >"$cap" 2>/dev/null &
tcpd=$!
nap 1
vm_ping 50
rc=$?
wait $tcpd
rep1=$(rx_packets_of "$REP") pf1=$(rx_packets_of "$NETIF_A")
ovs_offloaded | sed 's/^/# /'
enc=$(ovs_flow_packets "in_port($REP)") dec=$(ovs_flow_packets "in_port(vxlan_sys_4789)")
echo "# 50 pings: rc $rc; offloaded encap ${enc:-none} packets, decap ${dec:-none}; $REP rx +$((rep1 - rep0)), $NETIF_A rx +$((pf1 - pf0))"
sed 's/^/# B: /' "$cap" | head -n 8
check "OVS's encap and decap flows are offloaded (dp:tc), both directions" test -n "$enc" -a -n "$dec"
check "the card carried the pings: all answered, both flows counted them" \
	test "$rc" = 0 -a "${enc:-0}" -ge 50 -a "${dec:-0}" -ge 50
# What the host may see meanwhile: IPv6 neighbour discovery and MLD
# both ends send to multicast groups, which OVS floods to more than one
# port and so keeps in software.
check "and the host saw none of them (representor and PF: under 10 of the 100+)" \
	test $((rep1 - rep0)) -lt 10 -a $((pf1 - pf0)) -lt 10
check "B's tcpdump decodes VNI 42 around the VF's ICMP, from A's underlay address" \
	bash -c 'grep -q "vni 42" "$0" && grep -q "$1 > $2: ICMP echo request" "$0"' "$cap" "$IN_VF" "$IN_B"
rm -f "$cap"
# The decap rule as tc shows it: VNI 42, IPv4 inside, in hardware.
check "the tunnel device's decap rule (enc_key_id 42) is in hardware" bash -c '
	tc -j filter show dev vxlan_sys_4789 ingress | python3 -c "
import json, sys
ok = any(o.get(\"in_hw\") and o.get(\"keys\", {}).get(\"enc_key_id\") == 42
         and o.get(\"keys\", {}).get(\"eth_type\") == \"ipv4\"
         for o in (f.get(\"options\") for f in json.load(sys.stdin)) if o)
sys.exit(not ok)"' 

# B's VXLAN device is in another namespace (another host's stack): the
# card does not take its rules.
ip netns exec $NS tc qdisc add dev vx0 clsact
ip netns exec $NS tc filter add dev vx0 ingress protocol ip pref 1 flower enc_key_id 42 action pass
check "a VXLAN device of another namespace is not the card's (its rule not_in_hw)" bash -c "
	ip netns exec $NS tc filter show dev vx0 ingress | grep -q not_in_hw"
ktap_finish
