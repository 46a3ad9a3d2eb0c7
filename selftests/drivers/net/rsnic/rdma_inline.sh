#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Inline data in send WQEs on card A's RDMA device (rdma_inline.py,
# pyverbs): a QP reports max_inline_data 64 and refuses 65; an inline
# SEND and an inline RDMA WRITE whose SGE names no key arrive intact (the
# card read the payload from the WQE, not through the SGE, which would
# fail with a protection error); an inline send past 64 bytes is refused
# by ibv_post_send and the QP goes on working. perftest's -I runs across
# the wire are in rdma_user.sh.

source "$(dirname "$0")/lib.sh"
pyverbs_card_a_setup
INLINE=$(dirname "$0")/rdma_inline.py

ktap_header 5
check "a QP reports max_inline_data 64; one asking for 65 is refused" \
	timeout 60 python3 "$INLINE" caps "$IB_A" "$GID_A"
check "inline SEND of 64 bytes through an SGE with no valid key arrives intact" \
	timeout 60 python3 "$INLINE" send "$IB_A" "$GID_A"
check "inline RDMA WRITE of 13 bytes the same" \
	timeout 60 python3 "$INLINE" write "$IB_A" "$GID_A"
check "an inline send of 65 bytes is refused (EINVAL), the QP still carries a SEND" \
	timeout 60 python3 "$INLINE" refused "$IB_A" "$GID_A"
check "no kernel warnings" dmesg_clean
ktap_finish
