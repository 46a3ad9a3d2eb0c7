#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""What one process's verbs must not reach through the card, checked with
pyverbs on an RC pair between card A's and card B's RDMA devices.

Usage: rdma_isolation.py CHECK IBDEV_A GID_INDEX_A IBDEV_B GID_INDEX_B

CHECK is one of:
  doorbell       another context rings card A's QP from its own doorbell
                 page; the card must ignore it (the shell counts
                 refused_doorbells) and the QP must work on unharmed
  foreign-lkey   a SEND gathering from an MR of another PD
  local-bounds   a SEND gathering past the end of its MR
  remote-bounds  an RDMA WRITE past the end of the peer's MR
Each negative check needs the work request to complete in error with the
status upstream gives it, the peer's memory unchanged.
Exit status 0 when the check holds.
"""

import ctypes
import mmap
import sys
import time

import pyverbs.device as d
from pyverbs.cq import CQ
from pyverbs.libibverbs_enums import (ibv_qp_type, ibv_wc_status as st,
                                      ibv_wr_opcode as op)
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPCap, QPInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR

from rdma_verbs import RW as ALL, rc_to_rts

LEN = 4096


class Side:
    """One end: context, PD, CQ, an MR and an RC QP."""

    def __init__(self, name, gid_index):
        self.ctx = d.Context(name=name)
        self.gid_index = gid_index
        self.gid = self.ctx.query_gid(1, gid_index)
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 16)
        self.mr = MR(self.pd, LEN, ALL)
        cap = QPCap(max_send_wr=4, max_recv_wr=4, max_send_sge=1,
                    max_recv_sge=1)
        self.qp = QP(self.pd, QPInitAttr(qp_type=ibv_qp_type.IBV_QPT_RC,
                                         scq=self.cq, rcq=self.cq, cap=cap))

    def connect(self, peer):
        rc_to_rts(self.qp, self.gid_index, peer.qp.qp_num, peer.gid)

    def post_recv(self):
        sge = SGE(self.mr.buf, LEN, self.mr.lkey)
        self.qp.post_recv(RecvWR(wr_id=1, num_sge=1, sg=[sge]))

    def send(self, sge, opcode=op.IBV_WR_SEND, remote=None):
        wr = SendWR(wr_id=2, opcode=opcode, num_sge=1, sg=[sge])
        if remote:
            wr.set_wr_rdma(*remote)
        self.qp.post_send(wr)

    def completion(self, timeout=5.0):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            n, wcs = self.cq.poll(1)
            if n:
                return wcs[0]
            time.sleep(0.001)
        raise SystemExit(f"{self.ctx.device.name}: no completion in {timeout} s")


def pair(argv):
    a, b = Side(argv[0], int(argv[1])), Side(argv[2], int(argv[3]))
    a.connect(b)
    b.connect(a)
    return a, b


def expect(wc, status, what):
    got = st(wc.status).name
    print(f"# {what}: {got}")
    if wc.status != status:
        raise SystemExit(f"{what}: expected {st(status).name}")


def send_ok(a, b, payload):
    """A SEND from A arrives intact at B."""
    a.mr.write(payload, len(payload))
    b.post_recv()
    a.send(SGE(a.mr.buf, len(payload), a.mr.lkey))
    expect(a.completion(), st.IBV_WC_SUCCESS, "A's SEND")
    expect(b.completion(), st.IBV_WC_SUCCESS, "B's receive")
    if b.mr.read(len(payload), 0) != payload:
        raise SystemExit("B received other bytes than A sent")


def check_doorbell(argv):
    a, b = pair(argv)
    intruder = d.Context(name=argv[0])
    # The intruder's own doorbell page: its context's first mapping.
    page = mmap.mmap(intruder.cmd_fd, 4096, mmap.MAP_SHARED, mmap.PROT_WRITE,
                     offset=0)
    db = ctypes.c_uint32.from_buffer(page)
    # A's send queue with a producer index of 3: three WQEs that are not
    # there, and the CQ_ARM, CQ_CI and RQ doorbells of A's queues.
    regs = ((0x0, a.qp.qp_num | 3 << 16), (0x4, a.qp.qp_num | 3 << 16),
            (0x8, 0 | 5 << 16), (0xc, 0 | 1 << 16))
    for offset, value in regs:
        ctypes.c_uint32.from_buffer(page, offset).value = value
    del db
    time.sleep(0.2)
    # Nothing moved: A's queues still do exactly what A posts.
    send_ok(a, b, b"after the intruder's doorbells" * 10)
    send_ok(a, b, b"and again" * 50)


def check_foreign_lkey(argv):
    a, b = pair(argv)
    other = MR(PD(a.ctx), LEN, ALL)
    b.post_recv()
    a.send(SGE(other.buf, 64, other.lkey))
    expect(a.completion(), st.IBV_WC_LOC_PROT_ERR, "SEND from another PD's MR")


def check_local_bounds(argv):
    a, b = pair(argv)
    b.post_recv()
    a.send(SGE(a.mr.buf + LEN - 16, 64, a.mr.lkey))
    expect(a.completion(), st.IBV_WC_LOC_PROT_ERR, "SEND past its MR's end")


def check_remote_bounds(argv):
    a, b = pair(argv)
    before = b.mr.read(LEN, 0)
    a.mr.write(b"x" * 64, 64)
    a.send(SGE(a.mr.buf, 64, a.mr.lkey), op.IBV_WR_RDMA_WRITE,
           (b.mr.rkey, b.mr.buf + LEN - 16))
    expect(a.completion(), st.IBV_WC_REM_ACCESS_ERR, "WRITE past the peer's MR")
    if b.mr.read(LEN, 0) != before:
        raise SystemExit("the peer's MR changed")


CHECKS = {
    "doorbell": check_doorbell,
    "foreign-lkey": check_foreign_lkey,
    "local-bounds": check_local_bounds,
    "remote-bounds": check_remote_bounds,
}

if __name__ == "__main__":
    if len(sys.argv) != 6 or sys.argv[1] not in CHECKS:
        raise SystemExit(__doc__)
    CHECKS[sys.argv[1]](sys.argv[2:])
