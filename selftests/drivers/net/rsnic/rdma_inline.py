#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Inline data in send WQEs, checked with pyverbs on one device: two RC
QPs connected to each other, so every frame crosses the card's engine.

Usage: rdma_inline.py CASE IBDEV GID_INDEX

caps:    a QP reports max_inline_data 64 (created and queried); one
         asking for 65 is refused.
send:    an IBV_SEND_INLINE SEND of 64 bytes whose SGE names a key that
         does not exist arrives intact: the card took the payload from
         the WQE (an SGE it looked up would fail with a protection error).
write:   the same for an RDMA WRITE of 13 bytes.
refused: an inline SEND of 65 bytes is refused by ibv_post_send (EINVAL)
         and the QP still carries an ordinary SEND afterwards.
Exit status 0 when the case holds.
"""

import errno
import sys
import time

import pyverbs.device as d
from pyverbs.cq import CQ
from pyverbs.libibverbs_enums import ibv_qp_attr_mask, ibv_qp_type, ibv_send_flags, ibv_wr_opcode
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPCap, QPInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR

from rdma_verbs import RW, rc_to_rts

MAX_INLINE = 64
NO_SUCH_KEY = 0xDEAD00


def qp(pd, cq, inline=MAX_INLINE):
    cap = QPCap(max_send_wr=4, max_recv_wr=4, max_send_sge=1, max_recv_sge=1,
                max_inline_data=inline)
    return QP(pd, QPInitAttr(qp_type=ibv_qp_type.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))


def poll(cq, n):
    """The next `n` completions of `cq` (within 10 s)."""
    out = []
    end = time.monotonic() + 10
    while len(out) < n and time.monotonic() < end:
        got, wcs = cq.poll(n - len(out))
        out += wcs[:got]
    return out


def send_wr(payload_addr, length, lkey, opcode=ibv_wr_opcode.IBV_WR_SEND, inline=True):
    flags = ibv_send_flags.IBV_SEND_SIGNALED
    if inline:
        flags |= ibv_send_flags.IBV_SEND_INLINE
    return SendWR(wr_id=1, opcode=opcode, num_sge=1,
                  sg=[SGE(payload_addr, length, lkey)], send_flags=flags)


def transfer(qa, qb, cq, src, dst, wr, expect):
    """Posts `wr` on `qa` (a receive on `qb` for a SEND), and checks what
    lands at the start of `dst`."""
    if wr.opcode == ibv_wr_opcode.IBV_WR_SEND:
        qb.post_recv(RecvWR(wr_id=2, num_sge=1, sg=[SGE(dst.buf, 256, dst.lkey)]))
    qa.post_send(wr)
    want = 2 if wr.opcode == ibv_wr_opcode.IBV_WR_SEND else 1
    wcs = poll(cq, want)
    statuses = [wc.status for wc in wcs]
    print(f"# completions: {statuses}")
    if len(wcs) != want or any(statuses):
        return False
    got = dst.read(len(expect), 0)
    print(f"# landed: {got.hex()}")
    return got == expect


def main():
    case, name, gid_index = sys.argv[1], sys.argv[2], int(sys.argv[3])
    ctx = d.Context(name=name)
    gid = ctx.query_gid(1, gid_index)
    pd = PD(ctx)
    cq = CQ(ctx, 16)
    if case == "caps":
        q = qp(pd, cq)
        attr, init = q.query(ibv_qp_attr_mask.IBV_QP_CAP)
        print(f"# queried max_inline_data: {init.cap.max_inline_data}")
        try:
            qp(pd, cq, MAX_INLINE + 1).close()
        except PyverbsRDMAError as e:
            print(f"# 65 refused: {e}")
            sys.exit(0 if init.cap.max_inline_data == MAX_INLINE else 1)
        print("# a QP with 65 bytes inline was accepted")
        sys.exit(1)
    qa, qb = qp(pd, cq), qp(pd, cq)
    rc_to_rts(qa, gid_index, qb.qp_num, gid)
    rc_to_rts(qb, gid_index, qa.qp_num, gid)
    src, dst = MR(pd, 256, RW), MR(pd, 256, RW)
    dst.write(bytes(256), 256)
    payload = bytes((i * 31 + 9) & 0xFF for i in range(MAX_INLINE))
    src.write(payload, MAX_INLINE)
    if case == "send":
        ok = transfer(qa, qb, cq, src, dst, send_wr(src.buf, MAX_INLINE, NO_SUCH_KEY), payload)
    elif case == "write":
        wr = send_wr(src.buf, 13, NO_SUCH_KEY, ibv_wr_opcode.IBV_WR_RDMA_WRITE)
        wr.set_wr_rdma(dst.rkey, dst.buf)
        ok = transfer(qa, qb, cq, src, dst, wr, payload[:13])
    elif case == "refused":
        try:
            qa.post_send(send_wr(src.buf, MAX_INLINE + 1, NO_SUCH_KEY))
            print("# a 65-byte inline send was posted")
            ok = False
        except PyverbsRDMAError as e:
            print(f"# refused: {e}")
            ok = e.error_code == errno.EINVAL
        ok = ok and transfer(qa, qb, cq, src, dst,
                             send_wr(src.buf, MAX_INLINE, src.lkey, inline=False), payload)
    else:
        sys.exit(f"unknown case {case}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
