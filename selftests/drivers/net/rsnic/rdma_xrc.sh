#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# XRC on card A's RDMA device (rdma_xrc.py, pyverbs): the device reports
# XRC; a domain opened through one file by two contexts is one domain
# (a target of the first receives into an XRC SRQ of the second); a
# request naming an SRQ of another domain, or none, is refused (remote
# invalid request) and leaves that SRQ's receive for its own domain;
# the target's rights are the PD's of the SRQ the request names; an
# initiator that asks for FLUSH or ATOMIC WRITE is refused. rdma-core's
# own XRC tests (test_xrc_*, test_odp_xrc_traffic, test_qp_ex_xrc_*,
# test_ro_xrc_traffic) are in rdma_core.sh; rdma_rxe has no XRC to
# interoperate with.

source "$(dirname "$0")/lib.sh"
pyverbs_card_a_setup
XRC=$(dirname "$0")/rdma_xrc.py

xrc_cap() { ibv_devinfo -v -d "$IB_A" | sed -n '/device_cap_flags:/,/^\t[a-z_]*:/p' | grep -qw XRC; }

ktap_header 6
check "ibv_devinfo -v: the device capability XRC" xrc_cap
check "a domain opened through one file by two contexts: a target of one receives into an SRQ of the other" \
	timeout 60 python3 "$XRC" shared "$IB_A" "$GID_A"
check "a SEND naming an SRQ of another domain, or none: remote invalid request, that SRQ's receive kept" \
	timeout 60 python3 "$XRC" refused "$IB_A" "$GID_A"
check "a WRITE through an SRQ of another PD than the memory's: remote access error, nothing written" \
	timeout 60 python3 "$XRC" rights "$IB_A" "$GID_A"
check "an initiator asking for FLUSH or ATOMIC WRITE: EOPNOTSUPP" \
	timeout 60 python3 "$XRC" ops "$IB_A" "$GID_A"
check "no kernel warnings" dmesg_clean
ktap_finish
