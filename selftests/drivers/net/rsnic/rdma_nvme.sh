#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# An in-kernel ULP over the RDMA engine: an nvmet-rdma target on card B
# exporting a file, the nvme-rdma host on card A connecting through
# rdma_cm (CM MADs over QP1, then RC queue pairs with fast-registered
# memory), 64 MiB of random data written and read back with equal
# SHA-256, a clean disconnect, and every resource given back.

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

ktap_header 9
check "card A reaches card B over the cable (not locally)" \
	eval 'ping -c 2 -W 2 -q $IP_B >/dev/null && ip neigh show $IP_B dev $NETIF_A | grep -q lladdr'

res0=$(rdma_objects)
tx0=$(rdma_counter "$IB_A" tx_packets)
rx0=$(rdma_counter "$IB_A" rx_packets)
truncate -s $((DATA_MB + 16))M /tmp/nvme-backing
ok=true
nvmet_setup /tmp/nvme-backing || ok=false
nvme_connect || ok=false
disk=$(wait_nvme_disk) || ok=false
check "nvme-rdma connects to the target through rdma_cm ($disk)" $ok
echo "# $(rdma res show qp link $IB_A 2>&1 | head -3 | tr '\n' ';')"
check "both devices hold RC queue pairs while connected" \
	eval 'rdma res show qp link $IB_A | grep -q "type RC" && rdma res show qp link $IB_B | grep -q "type RC"'

head -c ${DATA_MB}M /dev/urandom > /tmp/nvme-data
ok=false
if [ -n "$disk" ]; then
	dd if=/tmp/nvme-data of=/dev/$disk bs=1M oflag=direct status=none &&
		dd if=/dev/$disk of=/tmp/nvme-back bs=1M count=$DATA_MB iflag=direct status=none &&
		ok=true
fi
sum_w=$(sha256sum < /tmp/nvme-data | cut -c1-16)
sum_r=$(sha256sum < /tmp/nvme-back 2>/dev/null | cut -c1-16)
echo "# wrote $sum_w, read back $sum_r"
check "$DATA_MB MiB written and read back through the target: same SHA-256" \
	eval '$ok && [ "$sum_w" = "$sum_r" ]'
sum_f=$(head -c ${DATA_MB}M /tmp/nvme-backing | sha256sum | cut -c1-16)
check "the target's file holds the data" test "$sum_f" = "$sum_w"

tx=$(($(rdma_counter "$IB_A" tx_packets) - tx0))
rx=$(($(rdma_counter "$IB_A" rx_packets) - rx0))
echo "# card A's engine: $tx packets sent, $rx received; $(harness card A rdma-state | cut -c1-200)"
check "the traffic went through card A's engine (rdma statistic)" \
	test "$tx" -gt $((DATA_MB * 1024 / 4 / 2)) -a "$rx" -gt $((DATA_MB * 1024 / 4 / 2))

nvme_disconnect
nvmet_cleanup
check "disconnected; nvme-rdma and nvmet-rdma unload" modprobe -r nvme-rdma nvmet-rdma
echo "# PDs, CQs in use, QPs and MRs before: $res0"
check "every PD, CQ, QP and MR given back" wait_rdma_objects "$res0"
check "no kernel warnings" dmesg_clean
ktap_finish
