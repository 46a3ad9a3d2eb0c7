#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The RDMA device of each PF as the rdma tool and sysfs show it: one
# rsnic_N per card, RoCEv2 on the synthetic netdev, port state following
# the interface and the cable, and the card's GID table equal to the one
# ib_core derives from the netdev's addresses. Last, a ULP (nvme-rdma
# against nvmet-rdma) connects: `rdma res` counts its objects and gives
# them back, `rdma statistic` counts its traffic.

source "$(dirname "$0")/lib.sh"
net_setup || echo "# no carrier after set-up"
cleanup() {
	if $ulp_set_up; then
		nvme_rdma_cleanup
		rm -f /tmp/dev-backing
		rdma_vrf_cleanup
	fi
	ip addr del 10.98.0.1/24 dev "$NETIF_A" 2>/dev/null
	[ -n "$AUX_A" ] && [ ! -e $RDMA_AUX_DRV/"$AUX_A" ] &&
		echo "$AUX_A" > $RDMA_AUX_DRV/bind 2>/dev/null
	net_cleanup
}
ulp_set_up=false
trap cleanup EXIT
dmesg_mark

A=$(card_addr A)
B=$(card_addr B)
IB_A=$(ibdev_of "$A")
IB_B=$(ibdev_of "$B")
AUX_A=$(rdma_aux_of "$A")
[ -n "$IB_A" ] && [ -n "$IB_B" ] || skip_all "no RDMA device under the PFs"
echo "# $A: $IB_A ($AUX_A) on $NETIF_A; $B: $IB_B"

# The node GUID is the EUI-64 of the permanent MAC (02:52:53:00:00:0a ->
# 0052:53ff:fe00:000a).
eui64() {
	python3 -c 'import sys
m = [int(x, 16) for x in sys.argv[1].split(":")]
g = [m[0] ^ 2, m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]]
print(":".join("%02x%02x" % (g[i], g[i + 1]) for i in range(0, 8, 2)))' "$1"
}

ktap_header 16
check "each PF has its RDMA device, named rsnic_N" \
	test "${IB_A#rsnic_}" != "$IB_A" -a "${IB_B#rsnic_}" != "$IB_B" -a "$IB_A" != "$IB_B"
dev=$(rdma dev show "$IB_A")
echo "# $dev"
guid=$(eui64 "$(cat /sys/class/net/$NETIF_A/address)")
check "rdma dev: a RoCE channel adapter whose node GUID is the MAC's EUI-64" \
	eval 'echo "$dev" | grep -q "node_type ca protocol roce node_guid $guid"'
link=$(rdma link show "$IB_A/1")
echo "# $link"
check "rdma link: ACTIVE, LINK_UP, on the synthetic netdev" \
	test "$(rdma_port_state "$IB_A")" = "ACTIVE LINK_UP " -a -n "$(echo "$link" | grep -w "netdev $NETIF_A")"

# ib_core adds GIDs from netdev events, asynchronously.
wait_gids A "$IB_A" "$IP_A" "$IP6_A"
echo "# ib_core: $(sysfs_gids "$IB_A" | tr '\n' ' ')"
echo "# card A:  $(card_gids A | tr '\n' ' ')"
check "card A's GID table is the one ib_core lists, with $IP_A and $IP6_A" \
	test "$(sysfs_gids "$IB_A")" = "$(card_gids A)" -a \
	"$(card_gids A | grep -cxF -e "$IP_A" -e "$IP6_A")" = 2
check "card B's GID table is the one ib_core lists (in netns $NS)" \
	test "$(sysfs_gids "$IB_B")" = "$(card_gids B)" -a "$(card_gids B | grep -cxF "$IP_B")" = 1

ip link set "$NETIF_A" down
check "interface down: port DOWN, DISABLED" wait_port "$IB_A" "DOWN DISABLED "
ip link set "$NETIF_A" up
check "interface up: port ACTIVE, LINK_UP" wait_port "$IB_A" "ACTIVE LINK_UP "
harness cable down >/dev/null
check "cable unplugged: port DOWN, POLLING" wait_port "$IB_A" "DOWN POLLING "
harness cable up >/dev/null
check "cable replugged: port ACTIVE again" wait_port "$IB_A" "ACTIVE LINK_UP "

ip addr add 10.98.0.1/24 dev "$NETIF_A"
card_has_gid() { card_gids A | grep -qxF "$1"; }
ok=false
wait_until 30 card_has_gid 10.98.0.1 && ok=true
ip addr del 10.98.0.1/24 dev "$NETIF_A"
wait_until 30 eval '! card_has_gid 10.98.0.1'
check "an address added reaches the card's GID table, and leaves it when removed" \
	eval '$ok && ! card_gids A | grep -qxF 10.98.0.1 && test "$(sysfs_gids "$IB_A")" = "$(card_gids A)"'

echo "$AUX_A" > $RDMA_AUX_DRV/unbind
ok=true
expect "RDMA device after unbind" "$(ibdev_of "$A")" "" || ok=false
[ -z "$(card_gids A)" ] || { echo "# card still holds: $(card_gids A | tr '\n' ' ')"; ok=false; }
ping -c 1 -W 2 -q "$IP_B" >/dev/null || { echo "# the netdev stopped working"; ok=false; }
check "RDMA half unbound: device gone, card's GID table empty, netdev still works" $ok
echo "$AUX_A" > $RDMA_AUX_DRV/bind
# Sets IB_A once the device is back with its GIDs, on the card too.
gids_back() {
	IB_A=$(ibdev_of "$A")
	[ -n "$IB_A" ] && [ -n "$(sysfs_gids "$IB_A")" ] && [ "$(sysfs_gids "$IB_A")" = "$(card_gids A)" ]
}
ok=false
wait_until 30 gids_back && ok=true
check "bound again: device back, ACTIVE, GIDs back on the card" \
	eval '$ok && wait_port "$IB_A" "ACTIVE LINK_UP "'

# The ULP: nvme-rdma and nvmet-rdma open their endpoints in init_net, so
# card B leaves the netns for a VRF (see rdma_vrf_setup).
if have_nvme_rdma; then
	net_cleanup
	ulp_set_up=true
	rdma_vrf_setup || echo "# no carrier after the VRF set-up"
	# QPs and CQs in use on both devices, and card A's MRs (the host
	# registers its buffers; the target reads and writes through the
	# device's DMA key, without MRs).
	objects() {
		echo -n "$(rdma_res $IB_A qp) $(rdma_cqs_in_use $IB_A) $(rdma_res $IB_A mr)"
		echo -n " $(rdma_res $IB_B qp) $(rdma_cqs_in_use $IB_B)"
	}
	before=$(objects)
	res0=$(rdma_objects)
	tx=$(rdma_counter "$IB_A" tx_packets)
	rx=$(rdma_counter "$IB_A" rx_packets)
	rx_b=$(rdma_counter "$IB_B" rx_packets)
	truncate -s 8M /tmp/dev-backing
	disk=
	nvmet_setup /tmp/dev-backing && nvme_connect && disk=$(wait_nvme_disk)
	during=$(objects)
	echo "# rdma res (qp, cq in use, mr of $IB_A; qp, cq in use of $IB_B): before $before, connected $during"
	check "rdma res: the ULP's QPs and CQs appear on both devices, its MRs on card A" \
		eval '[ -n "$disk" ] && python3 -c "import sys; b, d = (list(map(int, a.split())) for a in sys.argv[1:]); sys.exit(not all(y > x for x, y in zip(b, d)))" "$before" "$during"'
	[ -n "$disk" ] && head -c 1M /dev/urandom | dd of=/dev/$disk bs=1M oflag=direct status=none
	tx=$(($(rdma_counter "$IB_A" tx_packets) - tx))
	rx=$(($(rdma_counter "$IB_A" rx_packets) - rx))
	rx_b=$(($(rdma_counter "$IB_B" rx_packets) - rx_b))
	echo "# 1 MiB written: $IB_A sent $tx packets, received $rx; $IB_B received $rx_b"
	# 1 MiB in 1 KiB packets (the path MTU) from A to B, acknowledged.
	check "rdma statistic: the ULP's traffic is counted on both devices" \
		test "$tx" -ge 1024 -a "$rx" -gt 0 -a "$rx_b" -ge 1024
	nvme_rdma_cleanup
	check "rdma res: every PD, CQ, QP and MR given back after the disconnect" \
		wait_rdma_objects "$res0"
else
	for what in "rdma res: objects appear" "rdma statistic: traffic counted" "rdma res: objects given back"; do
		missing "$what" "the kernel has no NVMe over RDMA modules"
	done
fi
check "no kernel warnings" dmesg_clean
ktap_finish
