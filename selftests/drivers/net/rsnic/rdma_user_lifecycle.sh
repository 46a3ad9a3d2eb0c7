#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# rdma_user.sh without its data-path checks: the devices as ibv_* sees
# them, then kill -9 mid-transfer, unbind, card removal and rmmod under
# live user contexts. make check runs it on the debug kernel (KASAN,
# lockdep, kmemleak), where the whole rdma_user.sh no longer fits CI's
# time; the normal pass runs the whole file.
RSNIC_RDMA_USER_LIFECYCLE=1 exec "$(dirname "$0")/rdma_user.sh"
