#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A VF that appears while its synthetic NIC lives in another network
# namespace is moved there (as hv_netvsc does), enslaved, and carries the
# traffic of that namespace.

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
harness ping >/dev/null || skip_all "no harness control channel"
LIB="$(dirname "$(readlink -f "$0")")/lib.sh"
TENANT=tenant

cleanup() {
	local vf
	vf=$(ip netns exec $TENANT bash -c "source $LIB; vf_addr A" 2>/dev/null)
	[ -n "$vf" ] && echo 1 >"/sys/bus/pci/devices/$vf/remove"
	ip -n $TENANT link set "$NETIF_A" netns 1 2>/dev/null
	ip netns del $TENANT 2>/dev/null
	net_cleanup
}
trap cleanup EXIT


ktap_header 4
ip netns add $TENANT
ip link set "$NETIF_A" netns $TENANT
ip -n $TENANT link set lo up
ip -n $TENANT addr add $IP_A/24 dev "$NETIF_A"
ip -n $TENANT link set "$NETIF_A" up
wait_carrier "$NETIF_A" 1 $TENANT
dmesg_mark
harness vf A plug | grep -q "already" && echo 1 >/sys/bus/pci/rescan
check "the card switches to the VF data path" wait_datapath A vf
VF=$(ip -n $TENANT -o link show | awk -F': ' -v m="master $NETIF_A" '$0 ~ m {print $2}' | cut -d@ -f1)
echo "# VF in $TENANT: ${VF:-none}"
dmesg_since_mark | grep -E "moved to the namespace|joined" | sed 's/^/# /'
check "the VF is in $TENANT, enslaved to $NETIF_A" test -n "$VF"
not_in_default_ns() { ! ip -o link show | grep -q "master $NETIF_A"; }
check "it left the default namespace" not_in_default_ns
rx0=$(ip -n $TENANT -s -j link show "$VF" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["stats64"]["rx"]["packets"])')
ip netns exec $TENANT ping -c 10 -i 0.05 -q $IP_B >/dev/null
rx1=$(ip -n $TENANT -s -j link show "$VF" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["stats64"]["rx"]["packets"])')
echo "# VF received $((rx1 - rx0)) packets for 10 pings from $TENANT"
check "traffic of $TENANT flows through the VF" test $((rx1 - rx0)) -ge 10
ktap_finish
