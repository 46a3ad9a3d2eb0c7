#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""IBTA 1.5's RDMA FLUSH and ATOMIC WRITE between two RDMA devices, with
pyverbs (ibv_wr_flush, ibv_wr_atomic_write on an extended RC QP).

Usage: rdma_flush.py CHECK IBDEV_A GID_INDEX_A IBDEV_B GID_INDEX_B [N]

A's QP is the requester, B's memory the target. CHECK is one of:
  caps          A reports FLUSH_GLOBAL and ATOMIC_WRITE in
                device_cap_flags_ex and not FLUSH_PERSISTENT, and refuses
                an MR with IBV_ACCESS_FLUSH_PERSISTENT (EOPNOTSUPP)
  atomic-write  N (default 300) ATOMIC WRITEs, 16 in flight, each of a
                distinct 8-byte value into one of 16 words of B's MR:
                every completion IBV_WC_ATOMIC_WRITE, each word ends with
                the last value written to it, the bytes around untouched
  flush         N rounds (default 50) of an RDMA WRITE of 4 KiB and a
                FLUSH of that range, then a FLUSH of the whole MR: every
                completion in order (WRITE then FLUSH), the data in B's
                memory once the FLUSH completed
  refusals      on fresh QPs each: a FLUSH for persistence
                (REM_ACCESS_ERR), a FLUSH of an MR without the flush right
                (REM_ACCESS_ERR), an ATOMIC WRITE 4 bytes into a word
                (REM_INV_REQ_ERR); B's memory unchanged by all three
Exit status 0 when the check holds.
"""

import errno
import os
import struct
import sys
import time

import pyverbs.device as d
from pyverbs.cq import CQ
from pyverbs.libibverbs_enums import (ibv_access_flags as acc,
                                      ibv_placement_type as ptype,
                                      ibv_qp_create_send_ops_flags as ops,
                                      ibv_qp_init_attr_mask as mask,
                                      ibv_qp_type, ibv_selectivity_level as lvl,
                                      ibv_send_flags, ibv_wc_opcode as wc_op,
                                      ibv_wc_status as st)
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QPCap, QPEx, QPInitAttrEx
from pyverbs.wr import SGE

import rdma_verbs
from rdma_verbs import RW, rc_to_rts

LEN = 8192
DEPTH = 16
FLUSH_ACCESS = RW | acc.IBV_ACCESS_FLUSH_GLOBAL
# As rdma-core's tests set them: the responder grants both flush types;
# what the MR grants decides.
QP_ACCESS = RW | acc.IBV_ACCESS_FLUSH_GLOBAL | acc.IBV_ACCESS_FLUSH_PERSISTENT
DEVICE_FLUSH_GLOBAL = 1 << 38
DEVICE_FLUSH_PERSISTENT = 1 << 39
DEVICE_ATOMIC_WRITE = 1 << 40


def Device(name, gid_index, access=FLUSH_ACCESS):
    """A context, a PD and an MR of one device."""
    return rdma_verbs.Device(name, gid_index, access, LEN)


class Qp:
    """An extended RC QP that may post FLUSH, ATOMIC WRITE and WRITE."""

    def __init__(self, dev):
        self.dev = dev
        self.cq = CQ(dev.ctx, 2 * DEPTH)
        cap = QPCap(max_send_wr=DEPTH, max_recv_wr=1, max_send_sge=1,
                    max_recv_sge=1)
        attr = QPInitAttrEx(
            qp_type=ibv_qp_type.IBV_QPT_RC, scq=self.cq, rcq=self.cq,
            cap=cap, pd=dev.pd,
            comp_mask=mask.IBV_QP_INIT_ATTR_PD |
            mask.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
            send_ops_flags=ops.IBV_QP_EX_WITH_FLUSH |
            ops.IBV_QP_EX_WITH_ATOMIC_WRITE | ops.IBV_QP_EX_WITH_RDMA_WRITE)
        self.qp = QPEx(dev.ctx, attr)

    def connect(self, peer):
        rc_to_rts(self.qp, self.dev.gid_index, peer.qp.qp_num, peer.dev.gid,
                  QP_ACCESS, DEPTH)

    def post(self, wr_id, build):
        """Posts one signaled request that `build(qp)` describes."""
        self.qp.wr_start()
        self.qp.wr_id = wr_id
        self.qp.wr_flags = ibv_send_flags.IBV_SEND_SIGNALED
        build(self.qp)
        self.qp.wr_complete()

    def completions(self, want, timeout=20.0):
        got = []
        end = time.monotonic() + timeout
        while len(got) < want:
            if time.monotonic() > end:
                raise SystemExit(f"{self.dev.name}: {len(got)} of {want} "
                                 f"completions in {timeout} s")
            n, wcs = self.cq.poll(want - len(got))
            if n:
                got.extend(wcs)
            else:
                time.sleep(0.0005)
        return got


def connected(argv, access=FLUSH_ACCESS):
    a = Device(argv[0], int(argv[1]))
    b = Device(argv[2], int(argv[3]), access)
    qa, qb = Qp(a), Qp(b)
    qa.connect(qb)
    qb.connect(qa)
    # B's QP answers: it lives as long as A's (pyverbs destroys a QP
    # nothing refers to).
    qa.peer = qb
    return a, b, qa


def expect(wc, status, opcode=None):
    if wc.status != status:
        raise SystemExit(f"wr {wc.wr_id}: {st(wc.status).name}, "
                         f"want {st(status).name}")
    if opcode is not None and wc.opcode != opcode:
        raise SystemExit(f"wr {wc.wr_id}: opcode {wc.opcode}, not {opcode}")


def check_caps(argv):
    ctx = d.Context(name=argv[0])
    flags = ctx.query_device_ex().device_cap_flags_ex
    have = {"FLUSH_GLOBAL": bool(flags & DEVICE_FLUSH_GLOBAL),
            "FLUSH_PERSISTENT": bool(flags & DEVICE_FLUSH_PERSISTENT),
            "ATOMIC_WRITE": bool(flags & DEVICE_ATOMIC_WRITE)}
    print(f"# {argv[0]}: {have}")
    if have != {"FLUSH_GLOBAL": True, "FLUSH_PERSISTENT": False,
                "ATOMIC_WRITE": True}:
        raise SystemExit("device_cap_flags_ex is not what the card does")
    try:
        MR(PD(ctx), LEN, RW | acc.IBV_ACCESS_FLUSH_PERSISTENT)
    except PyverbsRDMAError as e:
        if e.error_code != errno.EOPNOTSUPP:
            raise SystemExit(f"FLUSH_PERSISTENT MR: errno {e.error_code}, "
                             "not EOPNOTSUPP")
        print("# an MR with IBV_ACCESS_FLUSH_PERSISTENT: EOPNOTSUPP")
        return
    raise SystemExit("an MR with IBV_ACCESS_FLUSH_PERSISTENT was registered")


def check_atomic_write(argv):
    n = int(argv[4]) if len(argv) > 4 else 300
    _, b, qa = connected(argv)
    b.mr.write(b"\xee" * LEN, LEN)
    rkey, base = b.mr.rkey, b.mr.buf
    # Word i of 16, at offset 16 * i + 8: its neighbours must stay 0xee.
    last = {}
    posted = done = 0
    while done < n:
        while posted < n and posted - done < DEPTH:
            word = posted % 16
            value = struct.pack("<Q", 0x0101010101010101 * (posted % 250 + 1)
                                ^ posted << 16)
            last[word] = value
            qa.post(posted, lambda qp, w=word, v=value:
                    qp.wr_atomic_write(rkey, base + 16 * w + 8, v))
            posted += 1
        for wc in qa.completions(1):
            expect(wc, st.IBV_WC_SUCCESS, wc_op.IBV_WC_ATOMIC_WRITE)
            done += 1
    mem = b.mr.read(LEN, 0)
    for word, value in last.items():
        got = mem[16 * word + 8:16 * word + 16]
        if got != value:
            raise SystemExit(f"word {word}: {got.hex()}, want {value.hex()}")
    untouched = bytearray(mem)
    for word in last:
        untouched[16 * word + 8:16 * word + 16] = b"\xee" * 8
    if untouched != b"\xee" * LEN:
        raise SystemExit("bytes beside the words were written")
    print(f"# {n} ATOMIC WRITEs into 16 words: each holds its last value")


def check_flush(argv):
    rounds = int(argv[4]) if len(argv) > 4 else 50
    a, b, qa = connected(argv)
    rkey, base = b.mr.rkey, b.mr.buf
    src = a.mr
    for r in range(rounds):
        data = os.urandom(4096)
        src.write(data, 4096)
        off = 4096 * (r % 2)
        def write(qp):
            qp.wr_rdma_write(rkey, base + off)
            qp.wr_set_sge(SGE(src.buf, 4096, src.lkey))

        qa.post(2 * r, write)
        qa.post(2 * r + 1, lambda qp: qp.wr_flush(
            rkey, base + off, 4096, ptype.IBV_FLUSH_GLOBAL,
            lvl.IBV_FLUSH_RANGE))
        wcs = qa.completions(2)
        expect(wcs[0], st.IBV_WC_SUCCESS, wc_op.IBV_WC_RDMA_WRITE)
        expect(wcs[1], st.IBV_WC_SUCCESS, wc_op.IBV_WC_FLUSH)
        if b.mr.read(4096, off) != data:
            raise SystemExit(f"round {r}: the data is not in B's memory "
                             "when the FLUSH completed")
    # The whole region: the range given does not matter.
    qa.post(1000, lambda qp: qp.wr_flush(rkey, 0, 12345678,
                                         ptype.IBV_FLUSH_GLOBAL,
                                         lvl.IBV_FLUSH_MR))
    expect(qa.completions(1)[0], st.IBV_WC_SUCCESS, wc_op.IBV_WC_FLUSH)
    print(f"# {rounds} x (4 KiB WRITE, FLUSH of its range), one FLUSH of "
          "the MR: all completed, data in place")


def check_refusals(argv):
    cases = [
        ("FLUSH for persistence", FLUSH_ACCESS,
         lambda rkey, base: lambda qp: qp.wr_flush(
             rkey, base, 64, ptype.IBV_FLUSH_PERSISTENT, lvl.IBV_FLUSH_RANGE),
         st.IBV_WC_REM_ACCESS_ERR),
        ("FLUSH of an MR without the flush right", RW,
         lambda rkey, base: lambda qp: qp.wr_flush(
             rkey, base, 64, ptype.IBV_FLUSH_GLOBAL, lvl.IBV_FLUSH_RANGE),
         st.IBV_WC_REM_ACCESS_ERR),
        ("ATOMIC WRITE 4 bytes into a word", FLUSH_ACCESS,
         lambda rkey, base: lambda qp: qp.wr_atomic_write(
             rkey, base + 4, b"\xff" * 8),
         st.IBV_WC_REM_INV_REQ_ERR),
    ]
    for name, access, build, want in cases:
        _, b, qa = connected(argv, access)
        b.mr.write(b"\x5a" * LEN, LEN)
        qa.post(1, build(b.mr.rkey, b.mr.buf))
        wc = qa.completions(1)[0]
        expect(wc, want)
        if b.mr.read(LEN, 0) != b"\x5a" * LEN:
            raise SystemExit(f"{name}: B's memory changed")
        print(f"# {name}: {st(wc.status).name}, memory unchanged")


CHECKS = {"caps": check_caps, "atomic-write": check_atomic_write,
          "flush": check_flush, "refusals": check_refusals}

if __name__ == "__main__":
    if len(sys.argv) < 6 and not (len(sys.argv) >= 3 and
                                  sys.argv[1] == "caps"):
        raise SystemExit(__doc__)
    CHECKS[sys.argv[1]](sys.argv[2:])
