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
DL=pci/$(card_addr A)
VM=vm
IP_VF=10.99.0.3
VF_MAC=02:52:53:00:00:ee
REP=
export OVS_RUNDIR OVS_DBDIR OVS_LOGDIR OVS_SYSCONFDIR
OVS_RUNDIR=$(mktemp -d) OVS_DBDIR=$OVS_RUNDIR OVS_LOGDIR=$OVS_RUNDIR OVS_SYSCONFDIR=$OVS_RUNDIR
cleanup() {
	ovs-appctl -t ovs-vswitchd exit --cleanup 2>/dev/null
	ovs-appctl -t ovsdb-server exit 2>/dev/null
	[ -z "$REP" ] || tc qdisc del dev "$REP" ingress 2>/dev/null
	tc qdisc del dev "$NETIF_A" ingress 2>/dev/null
	ip netns del $VM 2>/dev/null
	devlink dev eswitch set $DL mode legacy 2>/dev/null
	vf_unplug A 2>/dev/null
	rm -rf "$OVS_RUNDIR"
	net_cleanup
}
trap cleanup EXIT
dmesg_mark

port_netdev() {
	local f
	for f in /sys/class/net/*/phys_port_name; do
		[ "$(cat "$f" 2>/dev/null)" = "$1" ] && { f=${f%/phys_port_name}; echo "${f##*/}"; return; }
	done
}
rx_of() { cat "/sys/class/net/$1/statistics/rx_packets"; }
vm_ping() { ip netns exec $VM ping -c "$1" -i 0.05 -W 2 -q $IP_B >/dev/null; }
offloaded() { ovs-appctl dpctl/dump-flows -m type=offloaded; }
# The packets of the offloaded flow from device $1 with IPv4.
flow_packets() {
	offloaded | python3 -c '
import re, sys
dev = sys.argv[1]
for line in sys.stdin:
    if "in_port(%s)" % dev in line and "eth_type(0x0800)" in line and "dp:tc" in line:
        m = re.search(r"packets:(\d+)", line)
        print(m.group(1) if m else 0)
        break' "$1"
}

ktap_header 8
modprobe openvswitch || bail_out "no openvswitch module"
vf_remove_all
devlink dev eswitch set $DL mode switchdev || bail_out "switchdev mode refused"
REP=$(port_netdev pf0vf0)
[ -n "$REP" ] || bail_out "no representor"
vf_plug A || bail_out "card A's VF did not appear"
VF=$(netif_of "$(vf_addr A)")
ip netns add $VM
ip link set "$VF" netns $VM
ip -n $VM -force -batch - <<-EOF
	link set lo up
	link set $VF address $VF_MAC
	addr add $IP_VF/24 dev $VF
	link set $VF up
EOF
ip addr flush dev "$NETIF_A"
ethtool -K "$NETIF_A" hw-tc-offload on
ip link set "$REP" up

ovsdb-tool create "$OVS_DBDIR/conf.db" /usr/share/openvswitch/vswitch.ovsschema
ovsdb-server --remote="punix:$OVS_RUNDIR/db.sock" --pidfile --detach --log-file \
	"$OVS_DBDIR/conf.db" || bail_out "ovsdb-server did not start"
ovs-vsctl --no-wait init
ovs-vsctl --no-wait set Open_vSwitch . other_config:hw-offload=true other_config:tc-policy=skip_sw
ovs-vswitchd --pidfile --detach --log-file || bail_out "ovs-vswitchd did not start"
ovs-vsctl add-br br0 -- add-port br0 "$NETIF_A" -- add-port br0 "$REP"
ip link set br0 up
check "OVS runs with hw-offload, the PF and pf0vf0 its ports" bash -c "
	[ \"\$(ovs-vsctl get Open_vSwitch . other_config:hw-offload)\" = '\"true\"' ] &&
	ovs-vsctl list-ports br0 | grep -qx '$REP' && ovs-vsctl list-ports br0 | grep -qx '$NETIF_A'"

# The first packets go up through the representors: OVS learns.
wait_until 100 vm_ping 1
vm_ping 5
check "the VF reaches B through OVS" vm_ping 5

rep0=$(rx_of "$REP") pf0=$(rx_of "$NETIF_A")
vm_ping 50
rc=$?
rep1=$(rx_of "$REP") pf1=$(rx_of "$NETIF_A")
offloaded | sed 's/^/# /'
up=$(flow_packets "$REP") down=$(flow_packets "$NETIF_A")
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
nat=$(offloaded | grep "dst=$VIP" | grep "dp:tc")
echo "# NAT: B received ${n:-?} of 40 sent to $VIP:7000; offloaded: ${nat:-none}"
check "UDP for $VIP arrives at B rewritten to its address (40 of 40)" test "${n:-0}" = 40
check "the rewrite runs on the card: an offloaded flow with set(ipv4(dst)) and dp:tc" \
	bash -c '[[ $0 == *"set(ipv4(dst=$1"* ]] && [ "$(grep -o "packets:[0-9]*" <<<"$0" | cut -d: -f2)" -ge 15 ]' "$nat" "$IP_B"
ktap_finish
