#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Memory windows on card B, used by card A, checked with pyverbs.

Usage: rdma_mw.py CASE IBDEV_A GID_INDEX_A IBDEV_B GID_INDEX_B

Card B registers a 4 KiB MR with MW_BIND and binds a window over its
second KiB; card A reaches B's memory only through the window's rkey.

type2:     a type 2 window bound by B's BIND_MW work request (completion
           IBV_WC_BIND_MW): A WRITEs 512 bytes into it and READs them
           back; B invalidates it (IBV_WR_LOCAL_INV); A's next WRITE
           through it fails REM_ACCESS_ERR and B's memory is unchanged.
bounds:    a WRITE running past the window's end fails REM_ACCESS_ERR,
           B's memory unchanged (the MR goes on, the window does not).
rights:    a window granting remote read only: a READ works, a WRITE
           fails REM_ACCESS_ERR.
type1:     a type 1 window bound with ibv_bind_mw: A READs through it;
           rebound elsewhere, its old rkey fails REM_ACCESS_ERR.
send-inv:  A's SEND with invalidate names the type 2 window: B's receive
           completion says IBV_WC_WITH_INV with that rkey, and A's next
           WRITE through it fails REM_ACCESS_ERR.
Exit status 0 when the case holds.
"""

import sys
import time

import pyverbs.device as d
from pyverbs.cq import CQ
from pyverbs.libibverbs_enums import (ibv_access_flags as acc, ibv_mw_type,
                                      ibv_qp_type, ibv_send_flags,
                                      ibv_wc_flags, ibv_wc_opcode,
                                      ibv_wc_status as st,
                                      ibv_wr_opcode as op)
from pyverbs.mr import MR, MW, MWBind, MWBindInfo
from pyverbs.pd import PD
from pyverbs.qp import QP, QPCap, QPInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR

from rdma_verbs import RW, rc_to_rts

LEN = 4096
WIN = 1024  # the window: B's MR bytes 1024..2047


class Side:
    """Context, PD, a 4 KiB MR that windows may be bound over, a CQ and
    an RC QP."""

    def __init__(self, name, gid_index):
        self.ctx = d.Context(name=name)
        self.gid_index = gid_index
        self.gid = self.ctx.query_gid(1, gid_index)
        self.pd = PD(self.ctx)
        self.mr = MR(self.pd, LEN, RW | acc.IBV_ACCESS_MW_BIND)
        self.cq = CQ(self.ctx, 64)
        cap = QPCap(max_send_wr=16, max_recv_wr=16, max_send_sge=1,
                    max_recv_sge=1)
        self.qp = QP(self.pd, QPInitAttr(qp_type=ibv_qp_type.IBV_QPT_RC,
                                         scq=self.cq, rcq=self.cq, cap=cap))

    def connect(self, peer):
        rc_to_rts(self.qp, self.gid_index, peer.qp.qp_num, peer.gid)


def one(cq, timeout=10.0):
    """The next completion."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got, wcs = cq.poll(1)
        if got:
            return wcs[0]
        time.sleep(0.001)
    raise SystemExit("no completion")


def expect(cq, status, opcode=None, what=""):
    wc = one(cq)
    if wc.status != status or (opcode is not None and wc.opcode != opcode):
        raise SystemExit(f"{what}: {st(wc.status).name}, opcode {wc.opcode}")
    print(f"# {what}: {st(wc.status).name}")
    return wc


def bind2(b, rights, start=WIN, length=WIN):
    """A type 2 window over B's MR bytes start.., bound by B's QP."""
    mw = MW(b.pd, ibv_mw_type.IBV_MW_TYPE_2)
    info = MWBindInfo(b.mr, b.mr.buf + start, length, rights)
    wr = SendWR(wr_id=1, opcode=op.IBV_WR_BIND_MW,
                send_flags=ibv_send_flags.IBV_SEND_SIGNALED)
    wr.set_bind_wr(mw, info)
    b.qp.post_send(wr)
    expect(b.cq, st.IBV_WC_SUCCESS, ibv_wc_opcode.IBV_WC_BIND_MW,
           "B binds a type 2 window")
    return mw, wr.rkey


def rdma(a, opcode, rkey, addr, length, offset=0):
    """A's WRITE or READ of length bytes at B's addr, from/to A's MR at
    offset; returns its completion's status."""
    wr = SendWR(wr_id=2, opcode=opcode, num_sge=1,
                sg=[SGE(a.mr.buf + offset, length, a.mr.lkey)])
    wr.set_wr_rdma(rkey, addr)
    a.qp.post_send(wr)
    return one(a.cq).status


def check(cond, what):
    if not cond:
        raise SystemExit(what)
    print(f"# {what}: yes")


def case_type2(a, b):
    mw, rkey = bind2(b, acc.IBV_ACCESS_REMOTE_WRITE | acc.IBV_ACCESS_REMOTE_READ)
    data = bytes((i * 7 + 3) % 256 for i in range(512))
    a.mr.write(data, 512, 0)
    at = b.mr.buf + WIN + 256
    check(rdma(a, op.IBV_WR_RDMA_WRITE, rkey, at, 512) == st.IBV_WC_SUCCESS,
          "A's WRITE through the window succeeds")
    check(b.mr.read(512, WIN + 256) == data, "B's memory holds it")
    check(rdma(a, op.IBV_WR_RDMA_READ, rkey, at, 512, 2048) ==
          st.IBV_WC_SUCCESS and a.mr.read(512, 2048) == data,
          "A READs it back through the window")
    inv = SendWR(wr_id=3, opcode=op.IBV_WR_LOCAL_INV, imm_data=rkey,
                 send_flags=ibv_send_flags.IBV_SEND_SIGNALED)
    b.qp.post_send(inv)
    expect(b.cq, st.IBV_WC_SUCCESS, ibv_wc_opcode.IBV_WC_LOCAL_INV,
           "B invalidates the window")
    before = b.mr.read(LEN, 0)
    a.mr.write(bytes(512), 512, 0)
    check(rdma(a, op.IBV_WR_RDMA_WRITE, rkey, at, 512) ==
          st.IBV_WC_REM_ACCESS_ERR, "A's WRITE after it: REM_ACCESS_ERR")
    check(b.mr.read(LEN, 0) == before, "B's memory unchanged")
    mw.close()


def case_bounds(a, b):
    _, rkey = bind2(b, acc.IBV_ACCESS_REMOTE_WRITE)
    before = b.mr.read(LEN, 0)
    a.mr.write(bytes([0xee]) * 64, 64, 0)
    check(rdma(a, op.IBV_WR_RDMA_WRITE, rkey, b.mr.buf + 2 * WIN - 32, 64)
          == st.IBV_WC_REM_ACCESS_ERR,
          "a WRITE past the window's end: REM_ACCESS_ERR")
    check(b.mr.read(LEN, 0) == before, "B's memory unchanged")


def case_rights(a, b):
    _, rkey = bind2(b, acc.IBV_ACCESS_REMOTE_READ)
    check(rdma(a, op.IBV_WR_RDMA_READ, rkey, b.mr.buf + WIN, 64) ==
          st.IBV_WC_SUCCESS, "a READ through a read-only window succeeds")
    before = b.mr.read(LEN, 0)
    check(rdma(a, op.IBV_WR_RDMA_WRITE, rkey, b.mr.buf + WIN, 64) ==
          st.IBV_WC_REM_ACCESS_ERR, "a WRITE through it: REM_ACCESS_ERR")
    check(b.mr.read(LEN, 0) == before, "B's memory unchanged")


def case_type1(a, b):
    mw = MW(b.pd, ibv_mw_type.IBV_MW_TYPE_1)
    data = bytes((i * 5 + 1) % 256 for i in range(256))
    b.mr.write(data, 256, WIN)

    def bind(start):
        info = MWBindInfo(b.mr, b.mr.buf + start, WIN,
                          acc.IBV_ACCESS_REMOTE_READ)
        b.qp.bind_mw(mw, MWBind(info, ibv_send_flags.IBV_SEND_SIGNALED))
        expect(b.cq, st.IBV_WC_SUCCESS, ibv_wc_opcode.IBV_WC_BIND_MW,
               f"ibv_bind_mw over byte {start}")
        return mw.rkey

    old = bind(WIN)
    check(rdma(a, op.IBV_WR_RDMA_READ, old, b.mr.buf + WIN, 256) ==
          st.IBV_WC_SUCCESS and a.mr.read(256, 0) == data,
          "A READs through the type 1 window")
    new = bind(2 * WIN)
    check(new != old, "the rebind gave it a new rkey")
    check(rdma(a, op.IBV_WR_RDMA_READ, old, b.mr.buf + WIN, 256) ==
          st.IBV_WC_REM_ACCESS_ERR, "its old rkey: REM_ACCESS_ERR")


def case_send_inv(a, b):
    _, rkey = bind2(b, acc.IBV_ACCESS_REMOTE_WRITE)
    b.qp.post_recv(RecvWR(wr_id=9, num_sge=1,
                          sg=[SGE(b.mr.buf, 64, b.mr.lkey)]))
    send = SendWR(wr_id=4, opcode=op.IBV_WR_SEND_WITH_INV, num_sge=1,
                  imm_data=rkey, sg=[SGE(a.mr.buf, 64, a.mr.lkey)],
                  send_flags=ibv_send_flags.IBV_SEND_SIGNALED)
    a.qp.post_send(send)
    expect(a.cq, st.IBV_WC_SUCCESS, ibv_wc_opcode.IBV_WC_SEND,
           "A's SEND with invalidate")
    wc = expect(b.cq, st.IBV_WC_SUCCESS, ibv_wc_opcode.IBV_WC_RECV,
                "B receives it")
    # pyverbs shows invalidated_rkey as imm_data, their union.
    check(wc.wc_flags & ibv_wc_flags.IBV_WC_WITH_INV and
          wc.imm_data == rkey,
          f"B's completion: invalidated rkey {rkey:#x}")
    check(rdma(a, op.IBV_WR_RDMA_WRITE, rkey, b.mr.buf + WIN, 64) ==
          st.IBV_WC_REM_ACCESS_ERR, "A's WRITE after it: REM_ACCESS_ERR")


def main():
    case, name_a, gid_a, name_b, gid_b = sys.argv[1:6]
    a = Side(name_a, int(gid_a))
    b = Side(name_b, int(gid_b))
    a.connect(b)
    b.connect(a)
    {"type2": case_type2, "bounds": case_bounds, "rights": case_rights,
     "type1": case_type1, "send-inv": case_send_inv}[case](a, b)


if __name__ == "__main__":
    main()
