#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# An in-kernel ULP over the RDMA engine: an nvmet-rdma target on card B
# exporting a file, the nvme-rdma host on card A connecting through
# rdma_cm (CM MADs over QP1, then RC queue pairs with fast-registered
# memory), 64 MiB of random data written and read back with equal
# SHA-256, a clean disconnect, and every resource given back; then the
# same again (16 MiB) with nvmet-rdma's use_srq=1, its queues receiving
# from card B's shared receive queues.

source "$(dirname "$0")/lib.sh"
rdma_vrf_setup || echo "# no carrier after set-up"
DATA_MB=${RSNIC_NVME_MB:-64}
is_debug_kernel && DATA_MB=16
cleanup() {
	nvme_rdma_cleanup
	rm -f /tmp/nvme-backing /tmp/nvme-data /tmp/nvme-back
	rdma_vrf_cleanup
}
trap cleanup EXIT
dmesg_mark

nvme_rdma_require
echo "# $IB_A on $NETIF_A ($IP_A), $IB_B on $NETIF_B ($IP_B, $VRF_B)"

ktap_header 16
check "card A reaches card B over the cable (not locally)" \
	eval 'ping -c 2 -W 2 -q $IP_B >/dev/null && ip neigh show $IP_B dev $NETIF_A | grep -q lladdr'

# round SRQ MIB: one connection, MIB MiB through it, with nvmet-rdma's
# use_srq=SRQ (1: the target's queues receive from shared receive
# queues of card B, one per completion vector).
round() {
	local srq=$1 mb=$2 res0 tx0 rx0 tx rx ok disk sum_w sum_r sum_f tag
	tag=$([ "$srq" = 1 ] && echo ", use_srq=1")
	res0=$(rdma_objects)
	tx0=$(rdma_counter "$IB_A" tx_packets)
	rx0=$(rdma_counter "$IB_A" rx_packets)
	truncate -s $((mb + 16))M /tmp/nvme-backing
	ok=true
	modprobe nvmet-rdma use_srq=$srq || ok=false
	nvmet_setup /tmp/nvme-backing || ok=false
	nvme_connect || ok=false
	disk=$(wait_nvme_disk) || ok=false
	check "nvme-rdma connects to the target through rdma_cm ($disk$tag)" $ok
	echo "# $(rdma res show qp link $IB_A 2>&1 | head -3 | tr '\n' ';')"
	if [ "$srq" = 1 ]; then
		echo "# $(rdma res show srq dev $IB_B 2>&1 | head -3 | tr '\n' ';')"
		check "rdma res shows the target's SRQs on card B, its QPs on them" \
			eval 'rdma res show srq dev $IB_B | grep -q "type BASIC.*comm \[nvmet_rdma\]" &&
			      rdma res show srq dev $IB_B | grep -q "lqpn [0-9]"'
	else
		check "both devices hold RC queue pairs while connected" \
			eval 'rdma res show qp link $IB_A | grep -q "type RC" && rdma res show qp link $IB_B | grep -q "type RC"'
	fi

	head -c ${mb}M /dev/urandom > /tmp/nvme-data
	ok=false
	if [ -n "$disk" ]; then
		dd if=/tmp/nvme-data of=/dev/$disk bs=1M oflag=direct status=none &&
			dd if=/dev/$disk of=/tmp/nvme-back bs=1M count=$mb iflag=direct status=none &&
			ok=true
	fi
	sum_w=$(sha256sum < /tmp/nvme-data | cut -c1-16)
	sum_r=$(sha256sum < /tmp/nvme-back 2>/dev/null | cut -c1-16)
	echo "# wrote $sum_w, read back $sum_r"
	check "$mb MiB written and read back through the target: same SHA-256$tag" \
		eval '$ok && [ "$sum_w" = "$sum_r" ]'
	sum_f=$(head -c ${mb}M /tmp/nvme-backing | sha256sum | cut -c1-16)
	check_eq "the target's file holds the data$tag" "$sum_f" "$sum_w"

	tx=$(($(rdma_counter "$IB_A" tx_packets) - tx0))
	rx=$(($(rdma_counter "$IB_A" rx_packets) - rx0))
	echo "# card A's engine: $tx packets sent, $rx received; $(harness card A rdma-state | cut -c1-200)"
	check "the traffic went through card A's engine (rdma statistic$tag)" \
		test "$tx" -gt $((mb * 1024 / 4 / 2)) -a "$rx" -gt $((mb * 1024 / 4 / 2))

	local t0=$SECONDS
	nvme_disconnect
	nvmet_cleanup
	check "disconnected; nvme-rdma and nvmet-rdma unload$tag" modprobe -r nvme-rdma nvmet-rdma
	# ib_drain_qp on an SRQ's QP waits up to 60 s for the last-WQE event.
	echo "# disconnect and unload took $((SECONDS - t0)) s"
	echo "# PDs, CQs in use, QPs, MRs and SRQs before: $res0"
	check "every PD, CQ, QP, MR and SRQ given back$tag" wait_rdma_objects "$res0"
}

round 0 $DATA_MB
round 1 $((DATA_MB / 4))
check "no kernel warnings" dmesg_clean
ktap_finish
