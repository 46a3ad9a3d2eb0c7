#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""ibv_resize_cq on a process's CQ, checked with pyverbs on an RC pair.

Usage: rdma_cq_resize.py IBDEV_A GID_INDEX_A IBDEV_B GID_INDEX_B

Card A's send CQ starts with room for 8. A posts 6 signaled SENDs and
polls 2 of their completions; the CQ grows to 64 with 4 unpolled, and
polling goes on with those 4, in order; then 40 more SENDs, more than
the old ring held, complete in order on the new ring. Shrinking it to 2
while 20 completions wait must fail with EINVAL (the smallest ring holds
15) and lose none of them; shrinking it when empty works, and the CQ
still completes SENDs.
Exit status 0 when all of that holds.
"""

import errno
import sys
import time

import pyverbs.device as d
from pyverbs.cq import CQ
from pyverbs.libibverbs_enums import (ibv_qp_type, ibv_wc_status as st,
                                      ibv_wr_opcode as op)
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPCap, QPInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR

from rdma_verbs import RW as ALL, rc_to_rts

LEN = 4096


class Side:
    """Context, PD, MR, a send CQ of `cqe` and an RC QP."""

    def __init__(self, name, gid_index, cqe):
        self.ctx = d.Context(name=name)
        self.gid_index = gid_index
        self.gid = self.ctx.query_gid(1, gid_index)
        self.pd = PD(self.ctx)
        self.mr = MR(self.pd, LEN, ALL)
        self.scq = CQ(self.ctx, cqe)
        self.rcq = CQ(self.ctx, 128)
        cap = QPCap(max_send_wr=64, max_recv_wr=64, max_send_sge=1,
                    max_recv_sge=1)
        self.qp = QP(self.pd, QPInitAttr(qp_type=ibv_qp_type.IBV_QPT_RC,
                                         scq=self.scq, rcq=self.rcq, cap=cap))

    def connect(self, peer):
        rc_to_rts(self.qp, self.gid_index, peer.qp.qp_num, peer.gid)


def sends(a, b, first, n):
    """n SENDs from A (wr_id first..), each received by B."""
    for i in range(n):
        b.qp.post_recv(RecvWR(wr_id=i, num_sge=1,
                              sg=[SGE(b.mr.buf, 64, b.mr.lkey)]))
    for i in range(first, first + n):
        a.qp.post_send(SendWR(wr_id=i, opcode=op.IBV_WR_SEND, num_sge=1,
                              sg=[SGE(a.mr.buf, 64, a.mr.lkey)]))


def drain(cq, n, timeout=10.0):
    """Exactly n completions' wr_ids (each a success)."""
    ids = []
    end = time.monotonic() + timeout
    while len(ids) < n and time.monotonic() < end:
        got, wcs = cq.poll(n - len(ids))
        for wc in wcs[:got]:
            if wc.status != st.IBV_WC_SUCCESS:
                raise SystemExit(f"wr {wc.wr_id}: {st(wc.status).name}")
            ids.append(wc.wr_id)
        if not got:
            time.sleep(0.001)
    if len(ids) != n:
        raise SystemExit(f"{len(ids)} of {n} completions")
    return ids


def expect(what, got, want):
    print(f"# {what}: {got}")
    if got != want:
        raise SystemExit(f"{what}: expected {want}")


def main(argv):
    a = Side(argv[0], int(argv[1]), 8)
    b = Side(argv[2], int(argv[3]), 8)
    a.connect(b)
    b.connect(a)

    sends(a, b, 0, 6)
    drain(b.rcq, 6)
    expect("polled before the resize", drain(a.scq, 2), [0, 1])
    a.scq.resize(64)
    expect("room after growing to 64", a.scq.cqe >= 64, True)
    expect("the 4 unpolled, after it", drain(a.scq, 4), [2, 3, 4, 5])
    sends(a, b, 6, 40)
    drain(b.rcq, 40)
    expect("40 more on the new ring, in order", drain(a.scq, 40),
           list(range(6, 46)))

    # The smallest ring the driver makes has 16 entries (15 usable).
    sends(a, b, 46, 20)
    drain(b.rcq, 20)
    time.sleep(0.2)
    try:
        a.scq.resize(2)
        raise SystemExit(f"shrinking to 2 with 20 waiting worked (cqe {a.scq.cqe})")
    except PyverbsRDMAError as e:
        expect("shrinking to 2 with 20 waiting", errno.errorcode.get(
            e.error_code, e.error_code), "EINVAL")
    expect("the 20 waiting, none lost", drain(a.scq, 20), list(range(46, 66)))
    a.scq.resize(2)
    expect("room after shrinking to 2 when empty", 2 <= a.scq.cqe < 64, True)
    sends(a, b, 66, 2)
    drain(b.rcq, 2)
    expect("SENDs complete on the small ring", drain(a.scq, 2), [66, 67])


if __name__ == "__main__":
    if len(sys.argv) != 5:
        raise SystemExit(__doc__)
    main(sys.argv[1:])
