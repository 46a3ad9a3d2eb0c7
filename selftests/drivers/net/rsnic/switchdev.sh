#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Switchdev mode: `devlink dev eswitch set ... mode switchdev` makes card
# A's PF the wire's representor (p0) and gives the VF's port one of its
# own (pf0vf0), both with the card's switch id; the VF, plugged then, is
# not bonded but stays a port of its own (here in netns "vm"). With the
# PF and the representor joined, the VF reaches B through the
# host (the slow path, software tc rules between them: the
# representor's counters grow); with skip_sw
# flower rules redirecting between them, the card carries the traffic
# (the rules' hardware counters, B answering, the representor and the
# PF flat). What cannot be done is refused with a reason: switchdev with
# a VF bonded, a mode change under rules, a redirect to a device off the
# switch. Back in legacy mode the representor is gone and the VF bonds
# again; a devlink reload also comes back in legacy mode.

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
harness ping >/dev/null || bail_out "no harness control channel"
for t in devlink tc; do command -v $t >/dev/null || bail_out "$t (iproute2) not installed"; done
DL=pci/$(card_addr A)
IP_VF=10.99.0.3
REP=
cleanup() {
	[ -z "$REP" ] || tc qdisc del dev "$REP" clsact 2>/dev/null
	tc qdisc del dev "$NETIF_A" clsact 2>/dev/null
	ip netns del $VM 2>/dev/null
	devlink dev eswitch set $DL mode legacy 2>/dev/null
	vf_unplug A 2>/dev/null
	net_cleanup
}
trap cleanup EXIT
dmesg_mark

mode() { devlink -j dev eswitch show $DL | python3 -c 'import json,sys; print(list(json.load(sys.stdin)["dev"].values())[0]["mode"])'; }
# The hardware packet count of the flower filter with preference 1 on
# DEV's ingress.
hw_packets() {
	tc -s -j filter show dev "$1" ingress | python3 -c '
import json, sys
for f in json.load(sys.stdin):
    o = f.get("options")
    if o and f.get("pref") == 1:
        print(o["actions"][0]["stats"].get("hw_packets", o["actions"][0]["stats"]["packets"])) ; break'
}
vm_ping() { ip netns exec $VM ping -c "$1" -i 0.05 -W 2 -q $IP_B >/dev/null; }

ktap_header 15
check "the switch starts in legacy mode" test "$(mode)" = legacy

# Switchdev is refused while a VF is bonded.
vf_plug A || bail_out "card A's VF did not appear"
wait_datapath A vf
err=$(devlink dev eswitch set $DL mode switchdev 2>&1)
echo "# with the VF bonded: $err"
check "switchdev refused while a VF is bonded, with the reason" \
	bash -c '[[ $0 == *"rsnic: a VF is bonded"* && $1 == legacy ]]' "$err" "$(mode)"
vf_unplug A
vf_absent() { ! vf_present A; }
wait_until 100 vf_absent

check "devlink dev eswitch set ... mode switchdev" devlink dev eswitch set $DL mode switchdev
check "the mode is switchdev" test "$(mode)" = switchdev
REP=$(port_netdev pf0vf0)
swid_a=$(cat /sys/class/net/$NETIF_A/phys_switch_id 2>/dev/null)
swid_r=$(cat /sys/class/net/${REP:-none}/phys_switch_id 2>/dev/null)
echo "# representor: ${REP:-none}; switch id $NETIF_A $swid_a, representor $swid_r; $NETIF_A port name $(cat /sys/class/net/$NETIF_A/phys_port_name 2>/dev/null)"
devlink port show | sed 's/^/# /'
check "a representor pf0vf0 on the card's switch, the PF its p0" bash -c "
	[ -n '$REP' ] && [ -n '$swid_a' ] && [ '$swid_a' = '$swid_r' ] &&
	[ \"\$(cat /sys/class/net/$NETIF_A/phys_port_name)\" = p0 ] &&
	devlink -j port show | grep -q '\"flavour\":\"pcivf\"'"

# The VF, plugged now, is a port of its own: into the VM's namespace.
vf_plug A || bail_out "card A's VF did not appear"
VF_PCI=$(vf_addr A)
VF=$(netif_of "$VF_PCI")
nap 1 # the PF's work, which would take a late VF, runs within it
check "the VF plugged in switchdev mode is not bonded" \
	test -n "$VF" -a ! -e "/sys/class/net/$VF/master"
ip netns add $VM
ip link set "$VF" netns $VM
ip -n $VM -force -batch - <<-EOF
	link set lo up
	link set $VF address $VF_MAC
	addr add $IP_VF/24 dev $VF
	link set $VF up
EOF

# The slow path, as Open vSwitch's tc datapath would do it in software
# (skip_hw): what the VF sends, from its representor to the wire; what
# the wire brings for the VF (and ARP, copied), to the representor.
ip addr flush dev "$NETIF_A"
ip link set "$REP" up
ethtool -K "$NETIF_A" hw-tc-offload on
tc qdisc add dev "$REP" clsact
tc qdisc add dev "$NETIF_A" clsact
tc filter add dev "$REP" ingress pref 10 flower skip_hw action mirred egress redirect dev "$NETIF_A"
tc filter add dev "$NETIF_A" ingress pref 10 flower skip_hw dst_mac $VF_MAC action mirred egress redirect dev "$REP"
tc filter add dev "$NETIF_A" ingress protocol arp pref 11 flower skip_hw action mirred egress mirror dev "$REP"
rep0=$(rx_packets_of "$REP")
wait_until 50 vm_ping 1
vm_ping 20
rc=$?
rep1=$(rx_packets_of "$REP")
echo "# through the host: ping rc $rc; $REP rx_packets +$((rep1 - rep0))"
check "the VF reaches B through the host: its frames arrive on the representor" \
	test "$rc" = 0 -a $((rep1 - rep0)) -ge 20

# The card carries it: skip_sw redirects both ways.
e1=$(tc filter add dev "$REP" ingress protocol ip pref 1 flower skip_sw dst_ip $IP_B \
	action mirred egress redirect dev "$NETIF_A" 2>&1)
e2=$(tc filter add dev "$NETIF_A" ingress protocol ip pref 1 flower skip_sw dst_ip $IP_VF \
	action mirred egress redirect dev "$REP" 2>&1)
echo "# rules: ${e1:-ok} / ${e2:-ok}"
check "skip_sw redirects VF->wire and wire->VF taken in hardware" \
	bash -c "[ -z '$e1$e2' ] && tc filter show dev $REP ingress | grep -q in_hw && tc filter show dev $NETIF_A ingress | grep -q in_hw"
rep0=$(rx_packets_of "$REP") pf0=$(rx_packets_of "$NETIF_A")
dump=$(mktemp)
tcpdump -nn -l -i "$REP" >"$dump" 2>/dev/null &
tcpd=$!
nap 1
vm_ping 50
rc=$?
nap 0.5
kill -INT $tcpd
wait $tcpd
seen=$(grep -c "ICMP echo" "$dump")
grep "ICMP echo" "$dump" | sed 's/^/# on the representor: /'
grep -v "ICMP echo" "$dump" | head -n 10 | sed 's/^/# on the representor (not the pings): /'
rm -f "$dump"
rep1=$(rx_packets_of "$REP") pf1=$(rx_packets_of "$NETIF_A")
h1=$(hw_packets "$REP") h2=$(hw_packets "$NETIF_A")
echo "# offloaded: ping rc $rc; rule counters VF->wire ${h1:-?}, wire->VF ${h2:-?}; $REP rx +$((rep1 - rep0)), $NETIF_A rx +$((pf1 - pf0)); tcpdump on $REP: $seen ICMP echo"
check "the card carried the pings: all answered, both rules counted them" \
	test "$rc" = 0 -a "${h1:-0}" -ge 50 -a "${h2:-0}" -ge 50
# What does reach the representor is the VF's own control traffic, which
# no rule forwards: its neighbour probes for B (unicast ARP, up to 3 a
# round, when its entry goes stale mid-run) and IPv6 ND/MLD; 2 to 5
# frames in 50 pings (tcpdump also shows the representor's own). The
# ICMP echoes are the point: none.
check "and the host saw none of them (representor and PF flat, tcpdump on the representor empty)" \
	test $((rep1 - rep0)) -lt 10 -a $((pf1 - pf0)) -lt 10 -a "$seen" = 0

# The VF gone: the representor and its rules stay (as a switch port
# with no link); what the card forwards to the VF's port is lost there,
# none of it reaches the host. Then the VF comes back.
# (Its PCI address, noted while its netdev was here: sysfs shows no
# netdev of another namespace.)
echo 1 >"/sys/bus/pci/devices/$VF_PCI/remove"
vf_pci_gone() { [ ! -e "/sys/bus/pci/devices/$VF_PCI" ]; }
wait_until 100 vf_pci_gone
pf0=$(rx_packets_of "$NETIF_A") h0=$(hw_packets "$NETIF_A")
ip netns exec $NS ping -c 20 -i 0.05 -W 1 -q $IP_VF >/dev/null
rc=$?
h1=$(hw_packets "$NETIF_A") pf1=$(rx_packets_of "$NETIF_A")
echo "# VF gone: B's 20 pings to it (rc $rc): wire->VF rule +$((h1 - h0)); $NETIF_A rx +$((pf1 - pf0))"
check "with the VF gone its rules stay; the card drops what they forward, the host sees none" bash -c "
	vf_pci_gone() { [ ! -e /sys/bus/pci/devices/$VF_PCI ]; }; vf_pci_gone && [ $rc != 0 ] &&
	[ -e /sys/class/net/$REP ] && tc filter show dev $REP ingress | grep -q in_hw &&
	[ $((h1 - h0)) -ge 20 ] && [ $((pf1 - pf0)) -lt 5 ]"
vf_plug A || bail_out "card A's VF did not come back"
VF_PCI=$(vf_addr A)
VF=$(netif_of "$VF_PCI")
ip link set "$VF" netns $VM
ip -n $VM -force -batch - <<-EOF
	link set $VF address $VF_MAC
	addr add $IP_VF/24 dev $VF
	link set $VF up
EOF

err=$(tc filter add dev "$REP" ingress protocol ip pref 2 flower skip_sw dst_ip 10.99.0.9 \
	action mirred egress redirect dev lo 2>&1)
err2=$(devlink dev eswitch set $DL mode legacy 2>&1)
echo "# redirect to lo: $err"
echo "# legacy under rules: $err2"
check "a redirect off the switch and a mode change under rules are refused with the reason" \
	bash -c '[[ $0 == *"not a port of this card"* && $1 == *"rules are in place"* && $2 == switchdev ]]' \
	"$err" "$err2" "$(mode)"

# Back to legacy: the representor goes, the VF bonds again once home.
tc qdisc del dev "$REP" clsact
tc qdisc del dev "$NETIF_A" clsact
devlink dev eswitch set $DL mode legacy
check "back to legacy mode; the representor is gone" test "$(mode)" = legacy -a ! -e "/sys/class/net/$REP"
REP=
ip netns del $VM
check "the VF, back in the PF's namespace, is bonded again" wait_datapath A vf

# A reload comes back in legacy mode: the representor goes with the
# function's state.
vf_unplug A
wait_until 100 vf_absent
devlink dev eswitch set $DL mode switchdev
had=$(port_netdev pf0vf0)
devlink dev reload $DL
echo "# representor before the reload: ${had:-none}; mode after: $(mode)"
check "devlink dev reload in switchdev mode: legacy again, the representor gone" \
	test -n "$had" -a "$(mode)" = legacy -a -z "$(port_netdev pf0vf0)"
ktap_finish
