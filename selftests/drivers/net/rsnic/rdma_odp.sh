#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# On-demand paging on card A's RDMA device (rdma_odp.py, pyverbs): the
# device reports ODP for RC and UD sends; an on-demand region pins
# nothing (the kernel's VmPin accounting); RC traffic between on-demand
# regions over untouched memory arrives intact, the card faulting the
# pages in (its page-fault count grows); a page the kernel takes back
# after the card wrote it is not written again (the next WRITE reaches
# the process's new page); a hole in a region fails the access into it
# (remote access error, local protection error), not the pages around
# it; ibv_advise_mr prefetch maps pages so that a WRITE into them needs
# no fault. rdma-core's test_odp and perftest --odp against rdma_rxe are
# in rdma_core.sh and rdma_rxe.sh.

source "$(dirname "$0")/lib.sh"
pyverbs_card_a_setup
ODP=$(dirname "$0")/rdma_odp.py

odp_faults() { harness card A rdma-state | tr ' ' '\n' | sed -n 's/^page_faults=//p'; }

# odp_caps: ibv_devinfo -v's on-demand paging section for card A.
odp_caps() {
	local info
	info=$(ibv_devinfo -v -d "$IB_A")
	echo "$info" | sed -n '/odp_caps/,/xrc_odp_caps/p' | tr -s '\t ' ' ' | sed 's/^/# /'
	echo "$info" | grep -q "general_odp_caps:" &&
		echo "$info" | sed -n '/rc_odp_caps/,/uc_odp_caps/p' | grep -q SUPPORT_WRITE &&
		echo "$info" | sed -n '/ud_odp_caps/,/xrc_odp_caps/p' | grep -q SUPPORT_SEND
}

# traffic_faults: the traffic case, and the card faulted pages in for it.
traffic_faults() {
	local f0 f1
	f0=$(odp_faults)
	timeout 120 python3 "$ODP" traffic "$IB_A" "$GID_A" || return 1
	f1=$(odp_faults)
	echo "# the card's page faults during it: $((f1 - f0))"
	[ "$((f1 - f0))" -gt 0 ]
}

# prefetched_write: after ibv_advise_mr, the WRITE takes no page fault.
prefetched_write() {
	local f0 f1 line rc
	coproc PREFETCH { timeout 120 python3 "$ODP" prefetch "$IB_A" "$GID_A" 2>&1; }
	read -r -t 60 line <&"${PREFETCH[0]}"
	echo "$line"
	f0=$(odp_faults)
	echo >&"${PREFETCH[1]}"
	while read -r -t 60 line <&"${PREFETCH[0]}"; do echo "$line"; done
	wait "$PREFETCH_PID"
	rc=$?
	f1=$(odp_faults)
	echo "# the card's page faults during the WRITE after the prefetch: $((f1 - f0))"
	[ $rc = 0 ] && [ "$f1" = "$f0" ]
}

ktap_header 7
check "ibv_devinfo -v: ODP, RC operations and UD sends" odp_caps
check "a 64 MiB on-demand region pins nothing (VmPin), a 1 MiB ordinary one 1024 kB" \
	timeout 60 python3 "$ODP" unpinned "$IB_A" "$GID_A"
check "SEND, WRITE, READ and fetch-and-add between on-demand regions: intact, pages faulted in by the card" \
	traffic_faults
check "a page taken back (MADV_DONTNEED) after a WRITE: the next WRITE reaches the process's new page" \
	timeout 60 python3 "$ODP" taken_back "$IB_A" "$GID_A"
check "a hole in a region: WRITE into it a remote access error, SEND from it a local protection error, the pages around it intact" \
	timeout 120 python3 "$ODP" unmapped "$IB_A" "$GID_A"
check "ibv_advise_mr PREFETCH_WRITE of 8 pages: a WRITE into them takes no page fault" \
	prefetched_write
check "no kernel warnings" dmesg_clean
ktap_finish
