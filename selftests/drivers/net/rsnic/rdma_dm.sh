#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Device memory on card A's RDMA device (rdma_dm.py, pyverbs), card B's
# device the peer across the cable:
#  - max_dm_size is the card's 256 KiB; beyond it, or beyond what is
#    free, refused; a region longer than its allocation refused;
#  - card B writes into a DM region of A (RDMA WRITE) and A's process
#    reads the bytes with ibv_memcpy_from_dm; A writes with
#    ibv_memcpy_to_dm and B reads them (RDMA READ); A sends from and
#    receives into its DM (local SGEs); a WRITE past the region's end
#    fails at B and changes neither the region nor the DM beside it
#    (A reads its DM through its mapping of the card's BAR: the bytes
#    are in the card's memory);
#  - a process maps its own DM only: another context of the device
#    cannot map it;
#  - no kernel warnings.
# rdma-core's own DM tests (test_device.DMTest, test_mr.DeviceMemoryAPITest)
# are in rdma_core.sh. perftest has no device-memory option.

source "$(dirname "$0")/lib.sh"
pyverbs_card_a_setup
DM=$(dirname "$0")/rdma_dm.py
IB_B=$(ibdev_of "$(card_addr B)")
[ -n "$IB_B" ] || bail_out "no RDMA device under card B's PF"
GID_B=$(roce_gid_index "$IB_B" "$IP_B")
trap 'net_cleanup' EXIT

ktap_header 4
check "limits: max_dm_size 256 KiB, more or more than is free refused, a region past its DM refused" \
	python3 "$DM" limits "$IB_A" "$GID_A" "$IB_B" "$GID_B"
check "peer: B writes into and reads A's DM; A copies in and out, sends from and receives into it; a WRITE past its end refused, nothing changed" \
	python3 "$DM" peer "$IB_A" "$GID_A" "$IB_B" "$GID_B"
check "isolation: the process's own context maps its DM, another context cannot" \
	python3 "$DM" isolation "$IB_A" "$GID_A" "$IB_B" "$GID_B"
dmesg_since_mark | grep -E 'WARNING|BUG|Oops|KASAN|UBSAN|lockdep|circular locking' -A20 | sed 's/^/# /'
check "no kernel warnings" dmesg_clean
ktap_finish
