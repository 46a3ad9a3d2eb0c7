#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Transparent VF bonding: card A's VF is plugged in and becomes the slave
# of the synthetic NIC, the card switches the data path to it and traffic
# flows through its queues; the synthetic NIC's MTU reaches it; when it is
# unplugged the data path comes back to the synthetic NIC first.

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
harness ping >/dev/null || skip_all "no harness control channel"
trap 'ip link set "$NETIF_A" mtu 1500; vf_unplug A 2>/dev/null; net_cleanup' EXIT

datapath() { harness card A datapath | sed -n 's/.*datapath=\([a-z]*\).*/\1/p'; }
vf_stat() { ethtool -S "$1" | awk -v k="$2" '$1 ~ k {n += $2} END {print n + 0}'; }

ktap_header 11
dmesg_mark
start=$(date +%s%N)
ok=false
if vf_plug A; then
	VF=$(netif_of "$(vf_addr A)")
	enslaved() { ip -d link show "$VF" | grep -q "master $NETIF_A" && [ "$(datapath)" = vf ]; }
	wait_until 50 enslaved && ok=true
fi
echo "# VF $VF enslaved and the data path switched $(( ($(date +%s%N) - start) / 1000000 )) ms after the plug request"
check "VF hot-plugged: enslaved to $NETIF_A within 5 s" $ok
[ -n "$VF" ] || { ktap_finish; exit; }
check "ip link shows it as a slave with master $NETIF_A" \
	bash -c "ip link show $VF | grep -q 'SLAVE.*master $NETIF_A'"
bond_file=/sys/kernel/debug/rsnic/$(card_addr A)/bond
echo "# $bond_file: $(cat "$bond_file")"
check "the card delivers to the VF; the driver says so (ethtool -S, debugfs)" \
	test "$(datapath)" = vf -a "$(vf_stat "$NETIF_A" '^vf_datapath:')" = 1 \
	-a -n "$(grep '^vf_present=1 datapath=vf switches=[1-9]' "$bond_file")"

vf_rx0=$(vf_stat "$VF" 'rx[0-9]+_packets:') vf_tx0=$(vf_stat "$VF" 'tx[0-9]+_packets:')
pf_rx0=$(vf_stat "$NETIF_A" 'rx[0-9]+_packets:') pf_tx0=$(vf_stat "$NETIF_A" 'tx[0-9]+_packets:')
ping -c 20 -i 0.05 -q $IP_B >/dev/null
vf_rx=$(( $(vf_stat "$VF" 'rx[0-9]+_packets:') - vf_rx0 )) vf_tx=$(( $(vf_stat "$VF" 'tx[0-9]+_packets:') - vf_tx0 ))
pf_rx=$(( $(vf_stat "$NETIF_A" 'rx[0-9]+_packets:') - pf_rx0 )) pf_tx=$(( $(vf_stat "$NETIF_A" 'tx[0-9]+_packets:') - pf_tx0 ))
echo "# 20 pings: VF queues rx $vf_rx tx $vf_tx, synthetic queues rx $pf_rx tx $pf_tx"
check "traffic flows through the VF's queues, not the synthetic ones" \
	test "$vf_rx" -ge 20 -a "$vf_tx" -ge 20 -a "$pf_rx" -eq 0 -a "$pf_tx" -eq 0

# The remote asks for A by neighbour solicitation, multicast to A's
# solicited-node group, which only the synthetic NIC joined.
ip neigh flush dev "$NETIF_A"
ip -n $NS neigh flush dev "$NETIF_B"
check "IPv6 from the remote (neighbour solicitation by multicast) reaches A on the VF path" \
	ip netns exec $NS ping -6 -c 3 -W 2 -q $IP6_A
feature() { ethtool -k "$1" | awk -v k="$2:" '$1 == k {print $2}'; }
ethtool -K "$NETIF_A" tso off
tso_off=$(feature "$VF" tcp-segmentation-offload)
ethtool -K "$NETIF_A" tso on
check "offload changes on $NETIF_A reach the VF (tso off, then on)" \
	test "$tso_off" = off -a "$(feature "$VF" tcp-segmentation-offload)" = on

ip link set "$NETIF_A" mtu 4000
ip -n $NS link set "$NETIF_B" mtu 4000
sleep 0.5
check "MTU 4000 on $NETIF_A reaches the VF, and 3000-byte pings pass" \
	bash -c "[ \$(cat /sys/class/net/$VF/mtu) = 4000 ] && ping -c 3 -W 2 -s 3000 -q $IP_B >/dev/null"
ip link set "$NETIF_A" mtu 1500
ip -n $NS link set "$NETIF_B" mtu 1500

vf_unplug A
sleep 0.5
check "VF unplugged: the data path is synthetic again" \
	test "$(datapath)" = synthetic -a "$(vf_stat "$NETIF_A" '^vf_datapath:')" = 0 -a "$(vf_stat "$NETIF_A" '^vf_present:')" = 0
check "traffic flows on the synthetic NIC alone" ping -c 3 -W 2 -q $IP_B
logged_all() { local p; for p; do dmesg_since_mark | grep -q "$p" || return 1; done; }
check "join, switch and leave logged" logged_all "VF .* joined" "data path VF" "data path synthetic" "VF .* left"
vf_plug A
check "replugged: enslaved and on the VF data path again" wait_datapath A vf
ktap_finish
