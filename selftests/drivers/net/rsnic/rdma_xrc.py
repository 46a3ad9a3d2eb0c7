#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""XRC on one device, with pyverbs: an XRC initiator (XRC_SEND) of one
context connected to an XRC target (XRC_RECV) of another, so every frame
crosses the card's engine; each request names the XRC SRQ it goes to.

Usage: rdma_xrc.py CASE IBDEV GID_INDEX

shared:  a domain opened through a file by two contexts is one domain:
         the target made in the first receives into an XRC SRQ made in
         the second (its receive completes on the second's CQ, naming
         the target), and a WRITE lands in the second's memory.
refused: a SEND naming an XRC SRQ of another domain, then one naming no
         SRQ at all, completes with a remote invalid request error at
         the initiator; the other domain's SRQ keeps its receive (a
         SEND to it through its own target lands there afterwards) and
         no byte is written.
rights:  a WRITE through an XRC SRQ of another PD than the memory's
         completes with a remote access error and writes nothing: the
         target's rights are those of the SRQ's PD.
ops:     an initiator that asks for FLUSH or ATOMIC WRITE
         (send_ops_flags) is refused (EOPNOTSUPP): XRC has neither.
Exit status 0 when the case holds.
"""

import errno
import os
import sys
import tempfile
import time

import pyverbs.device as d
from pyverbs.cq import CQ
from pyverbs.libibverbs_enums import (ibv_qp_create_send_ops_flags as ops,
                                      ibv_qp_init_attr_mask as qp_mask, ibv_qp_type,
                                      ibv_send_flags, ibv_srq_init_attr_mask as srq_mask,
                                      ibv_srq_type, ibv_wc_status, ibv_wr_opcode,
                                      ibv_xrcd_init_attr_mask as xrcd_mask)
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPCap, QPInitAttrEx
from pyverbs.srq import SRQ, SrqInitAttrEx
from pyverbs.wr import SGE, RecvWR, SendWR
from pyverbs.xrcd import XRCD, XRCDInitAttr

from rdma_verbs import RW_ATOMIC, rc_to_rts

LEN = 256


class Context:
    """A context on device `name` with a PD, a CQ and an MR, and the XRC
    domain of file `path`."""

    def __init__(self, name, gid_index, path):
        self.ctx = d.Context(name=name)
        self.gid_index = gid_index
        self.gid = self.ctx.query_gid(1, gid_index)
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 64)
        self.mr = MR(self.pd, 4 * LEN, RW_ATOMIC)
        self.fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o600)
        init = XRCDInitAttr(xrcd_mask.IBV_XRCD_INIT_ATTR_FD | xrcd_mask.IBV_XRCD_INIT_ATTR_OFLAGS,
                            os.O_CREAT, self.fd)
        self.xrcd = XRCD(self.ctx, init)
        self.passed = []

    def srq(self, pd=None):
        """An XRC SRQ of the context's domain, completing on its CQ."""
        attr = SrqInitAttrEx(max_wr=16)
        attr.srq_type = ibv_srq_type.IBV_SRQT_XRC
        attr.pd = pd or self.pd
        attr.xrcd = self.xrcd
        attr.cq = self.cq
        attr.comp_mask = (srq_mask.IBV_SRQ_INIT_ATTR_TYPE | srq_mask.IBV_SRQ_INIT_ATTR_PD |
                          srq_mask.IBV_SRQ_INIT_ATTR_CQ | srq_mask.IBV_SRQ_INIT_ATTR_XRCD)
        return SRQ(self.ctx, attr)

    def initiator(self, send_ops=0):
        cap = QPCap(max_send_wr=8, max_recv_wr=0, max_recv_sge=0)
        mask = qp_mask.IBV_QP_INIT_ATTR_PD
        if send_ops:
            mask |= qp_mask.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS
        attr = QPInitAttrEx(qp_type=ibv_qp_type.IBV_QPT_XRC_SEND, comp_mask=mask, pd=self.pd,
                            scq=self.cq, cap=cap, send_ops_flags=send_ops)
        return QP(self.ctx, attr)

    def target(self):
        attr = QPInitAttrEx(qp_type=ibv_qp_type.IBV_QPT_XRC_RECV,
                            comp_mask=qp_mask.IBV_QP_INIT_ATTR_XRCD, xrcd=self.xrcd)
        return QP(self.ctx, attr)

    def poll(self, n=1, wait=10):
        """The next `n` completions (within `wait` s), those
        `completion` passed over first."""
        out, self.passed = self.passed[:n], self.passed[n:]
        end = time.monotonic() + wait
        while len(out) < n and time.monotonic() < end:
            got, wcs = self.cq.poll(n - len(out))
            out += wcs[:got]
        return out

    def completion(self, wr_id):
        """The completion of `wr_id` (within 10 s); the others polled on
        the way are kept for `poll`."""
        end = time.monotonic() + 10
        while time.monotonic() < end:
            got, wcs = self.cq.poll(1)
            for w in wcs[:got]:
                if w.wr_id == wr_id:
                    return w
                self.passed.append(w)
        return None


def connect(ini_side, ini, tgt_side, tgt):
    """The initiator and the target, each toward the other."""
    rc_to_rts(tgt, tgt_side.gid_index, ini.qp_num, ini_side.gid, RW_ATOMIC)
    rc_to_rts(ini, ini_side.gid_index, tgt.qp_num, tgt_side.gid, 0)


def post_recv(ctx, srq, wr_id, offset):
    srq.post_recv(RecvWR(wr_id=wr_id, num_sge=1,
                         sg=[SGE(ctx.mr.buf + offset, LEN, ctx.mr.lkey)]))


def send(ctx, ini, srqn, data, opcode=ibv_wr_opcode.IBV_WR_SEND, rkey=0, addr=0):
    """Posts `data` from `ctx`'s MR on `ini` to XRC SRQ `srqn`; returns
    the initiator's completion status."""
    ctx.mr.write(data, len(data))
    wr = SendWR(wr_id=7, opcode=opcode, num_sge=1, sg=[SGE(ctx.mr.buf, len(data), ctx.mr.lkey)],
                send_flags=ibv_send_flags.IBV_SEND_SIGNALED)
    if opcode == ibv_wr_opcode.IBV_WR_RDMA_WRITE:
        wr.set_wr_rdma(rkey, addr)
    wr.set_qp_type_xrc(srqn)
    ini.post_send(wr)
    wc = ctx.completion(7)
    status = wc.status if wc else None
    print(f"# {opcode!r} to XRC SRQ {srqn}: {status!r}")
    return status


def pattern(seed):
    return bytes((i * 31 + seed) & 0xFF for i in range(LEN))


def case_shared(name, gid_index, path):
    a, b = Context(name, gid_index, path), Context(name, gid_index, path)
    ini, tgt = a.initiator(), a.target()
    srq = b.srq()
    connect(a, ini, a, tgt)
    post_recv(b, srq, 42, LEN)
    ok = send(a, ini, srq.get_srq_num(), pattern(1)) == ibv_wc_status.IBV_WC_SUCCESS
    wcs = b.poll()
    got = [(w.wr_id, w.status, w.qp_num, w.byte_len) for w in wcs]
    print(f"# the second context's receive: {got} (target {tgt.qp_num})")
    ok = ok and got == [(42, ibv_wc_status.IBV_WC_SUCCESS, tgt.qp_num, LEN)]
    ok = ok and b.mr.read(LEN, LEN) == pattern(1)
    status = send(a, ini, srq.get_srq_num(), pattern(2), ibv_wr_opcode.IBV_WR_RDMA_WRITE,
                  b.mr.rkey, b.mr.buf + 2 * LEN)
    return ok and status == ibv_wc_status.IBV_WC_SUCCESS and b.mr.read(LEN, 2 * LEN) == pattern(2)


def case_refused(name, gid_index, path):
    a = Context(name, gid_index, path)
    other = Context(name, gid_index, path + ".other")
    theirs = other.srq()
    post_recv(other, theirs, 9, 0)
    ok = True
    for srqn in (theirs.get_srq_num(), 0):
        ini, tgt = a.initiator(), a.target()
        connect(a, ini, a, tgt)
        status = send(a, ini, srqn, pattern(3))
        ok = ok and status == ibv_wc_status.IBV_WC_REM_INV_REQ_ERR
    untouched = other.mr.read(LEN, 0) == bytes(LEN) and not other.poll(wait=0.5)
    # The other domain's SRQ still has its receive, for its own target.
    ini, tgt = other.initiator(), other.target()
    connect(other, ini, other, tgt)
    ok = ok and send(other, ini, theirs.get_srq_num(), pattern(4)) == 0
    wcs = other.poll()
    got = [(w.wr_id, w.status) for w in wcs]
    print(f"# the other domain's SRQ: untouched {untouched}, then {got}")
    return ok and untouched and got == [(9, ibv_wc_status.IBV_WC_SUCCESS)]


def case_rights(name, gid_index, path):
    a = Context(name, gid_index, path)
    other_pd = PD(a.ctx)
    srq = a.srq(pd=other_pd)
    ini, tgt = a.initiator(), a.target()
    connect(a, ini, a, tgt)
    status = send(a, ini, srq.get_srq_num(), pattern(5), ibv_wr_opcode.IBV_WR_RDMA_WRITE,
                  a.mr.rkey, a.mr.buf + 2 * LEN)
    return status == ibv_wc_status.IBV_WC_REM_ACCESS_ERR and a.mr.read(LEN, 2 * LEN) == bytes(LEN)


def case_ops(name, gid_index, path):
    a = Context(name, gid_index, path)
    ok = True
    for asked in (ops.IBV_QP_EX_WITH_FLUSH, ops.IBV_QP_EX_WITH_ATOMIC_WRITE):
        try:
            a.initiator(ops.IBV_QP_EX_WITH_SEND | asked)
            print(f"# an initiator with {asked!r}: made")
            ok = False
        except PyverbsRDMAError as e:
            print(f"# an initiator with {asked!r}: {e.error_code}")
            ok = ok and e.error_code == errno.EOPNOTSUPP
    a.initiator(ops.IBV_QP_EX_WITH_SEND | ops.IBV_QP_EX_WITH_RDMA_WRITE)
    return ok


def main():
    case, name, gid_index = sys.argv[1], sys.argv[2], int(sys.argv[3])
    cases = {"shared": case_shared, "refused": case_refused, "rights": case_rights,
             "ops": case_ops}
    if case not in cases:
        sys.exit(f"unknown case {case}")
    with tempfile.TemporaryDirectory() as tmp:
        ok = cases[case](name, gid_index, os.path.join(tmp, "xrcd"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
