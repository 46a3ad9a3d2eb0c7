#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The limits card A's RDMA device reports (ibv_devinfo -v, query_device)
# are what it accepts (rdma_limits.py, pyverbs): for each object count
# (PDs, CQs, QPs, SRQs, MRs, memory windows, address handles) the
# maximum can be reached, counting what already exists on the device
# (`rdma res`: ib_core's own GSI QP and its CQs and PD), and one more is
# refused; for each size (WRs and SGEs of a QP and an SRQ, CQ entries,
# outstanding READs and atomics) the maximum is accepted and one more
# refused. A memory window takes a key from the same space as a region,
# so max_mw is max_mr and the MRs that exist count against windows.
# Multicast (rdma_mcast.c): QPs per group, groups, and attachments in all
# up to each maximum, one more refused, the full groups still working.

source "$(dirname "$0")/lib.sh"
pyverbs_card_a_setup
LIMITS=$(dirname "$0")/rdma_limits.py

# existing KIND: card A's objects of KIND (pd, cq, qp, srq, mr) now.
existing() {
	if [ "$1" = qp ]; then rdma res show qp link "$IB_A/1"; else rdma res show "$1" dev "$IB_A"; fi 2>/dev/null | grep -c .
}

ktap_header 13
for kind in pd cq qp srq mr; do
	check "$kind: up to max_$kind with the $(existing $kind) that exist, one more refused" \
		timeout 300 python3 "$LIMITS" $kind "$IB_A" "$GID_A" "$(existing $kind)"
done
check "mw: max_mw windows with the $(existing mr) regions that exist (one key space), one more refused" \
	timeout 300 python3 "$LIMITS" mw "$IB_A" "$GID_A" "$(existing mr)"
check "ah: up to max_ah address handles, one more refused" \
	timeout 300 python3 "$LIMITS" ah "$IB_A" "$GID_A" 0
check "QP of max_qp_wr WRs and max_sge SGEs; one more of either refused" \
	timeout 60 python3 "$LIMITS" qp_wr "$IB_A" "$GID_A"
check "CQ of max_cqe entries; one more refused" timeout 60 python3 "$LIMITS" cqe "$IB_A" "$GID_A"
check "SRQ of max_srq_wr WRs and max_srq_sge SGEs; one more of either refused" \
	timeout 60 python3 "$LIMITS" srq_wr "$IB_A" "$GID_A"
check "RTS with max_qp_init_rd_atom / max_qp_rd_atom outstanding; one more refused" \
	timeout 60 python3 "$LIMITS" rd_atom "$IB_A" "$GID_A"
work=$(mktemp -d)
trap 'rm -rf "$work"; net_cleanup' EXIT
MCAST=$(build_rdma_mcast "$work") || bail_out "cannot build rdma_mcast.c"
check "multicast: max_mcast_qp_attach, max_mcast_grp, max_total_mcast_qp_attach reached, one more ENOMEM" \
	timeout 120 "$MCAST" "$IB_A" "$GID_A" limits
check "no kernel warnings" dmesg_clean
ktap_finish
