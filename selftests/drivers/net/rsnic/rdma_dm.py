#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Device memory (ibv_alloc_dm, ibv_reg_dm_mr, ibv_memcpy_to/from_dm)
on card A's RDMA device, with card B's device as the peer, through
pyverbs.

Usage: rdma_dm.py CHECK IBDEV_A GID_INDEX_A IBDEV_B GID_INDEX_B

CHECK is one of:
  peer       a DM of 64 KiB registered zero-based on A: B writes 60000
             bytes into it (RDMA WRITE), A reads them with
             ibv_memcpy_from_dm, the bytes before untouched; A writes
             with ibv_memcpy_to_dm, B reads them (RDMA READ); A sends
             from the DM (local SGE) and receives into it; a WRITE past
             the region's end fails at B (REM_ACCESS_ERR), the region's
             last bytes and a second DM beside it untouched. Prints the
             time of 200 4 KiB WRITEs from B into A's DM and into A's host
             memory (not judged)
  limits     max_dm_size is the card's 256 KiB; one byte more is refused,
             all of it granted; 3/4 of it twice: the second refused
             (ENOMEM) until the first is freed; a region longer than its
             DM refused
  isolation  the process's own context maps its DM at the offset the
             handle gives and reads what ibv_memcpy_to_dm wrote; a second
             context of the same device cannot map it there (EINVAL)
Exit status 0 when the check holds.
"""

import errno
import mmap
import sys
import time

import pyverbs.device as d
from pyverbs.cq import CQ
from pyverbs.libibverbs_enums import (ibv_access_flags as acc, ibv_qp_type,
                                      ibv_wc_opcode as wc_op,
                                      ibv_wc_status as st,
                                      ibv_wr_opcode as op)
from pyverbs.mr import DMMR
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPCap, QPInitAttr
from pyverbs.wr import RecvWR, SGE, SendWR

import rdma_verbs
from rdma_verbs import RW, rc_to_rts

DM_LEN = 64 * 1024
HOST_LEN = 64 * 1024
DEPTH = 16
CARD_DM = 256 * 1024
# RSNIC_DM_MMAP_PGOFF (include/uapi/rdma/rsnic-abi.h).
PGOFF_BASE, SLOT_PAGES = 0x1000000, 64
DM_RW = RW | acc.IBV_ACCESS_ZERO_BASED


def pattern(n, seed):
    return bytes((i * 7 + seed) & 0xFF for i in range(n))


class Qp:
    """An RC QP with its own CQ."""

    def __init__(self, dev):
        self.dev = dev
        self.cq = CQ(dev.ctx, 2 * DEPTH)
        cap = QPCap(max_send_wr=DEPTH, max_recv_wr=DEPTH, max_send_sge=1,
                    max_recv_sge=1)
        self.qp = QP(dev.pd, QPInitAttr(qp_type=ibv_qp_type.IBV_QPT_RC,
                                        scq=self.cq, rcq=self.cq, cap=cap))

    def connect(self, peer):
        rc_to_rts(self.qp, self.dev.gid_index, peer.qp.qp_num, peer.dev.gid,
                  RW, DEPTH)

    def post(self, opcode, sge, remote=None, wr_id=0):
        wr = SendWR(wr_id=wr_id, opcode=opcode, num_sge=1, sg=[sge])
        if remote is not None:
            wr.set_wr_rdma(remote[0], remote[1])
        self.qp.post_send(wr)

    def recv(self, sge, wr_id=0):
        self.qp.post_recv(RecvWR(wr_id=wr_id, num_sge=1, sg=[sge]))

    def completion(self, timeout=20.0):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            n, wcs = self.cq.poll(1)
            if n:
                return wcs[0]
            time.sleep(0.0002)
        raise SystemExit(f"{self.dev.name}: no completion in {timeout} s")


def expect(wc, status, opcode=None, what=""):
    if wc.status != status or (opcode is not None and wc.opcode != opcode):
        raise SystemExit(f"{what}: {st(wc.status).name}, opcode {wc.opcode}")


def devices(argv):
    a = rdma_verbs.Device(argv[0], int(argv[1]), RW, HOST_LEN)
    b = rdma_verbs.Device(argv[2], int(argv[3]), RW, HOST_LEN)
    return a, b


def connected(argv):
    a, b = devices(argv)
    qa, qb = Qp(a), Qp(b)
    qa.connect(qb)
    qb.connect(qa)
    return a, b, qa, qb


def check_peer(argv):
    a, b, qa, qb = connected(argv)
    dm = d.DM(a.ctx, d.AllocDmAttr(length=DM_LEN))
    dmmr = DMMR(a.pd, DM_LEN, DM_RW, dm, 0)
    # Its neighbour in card memory, filled, to be left alone.
    dm2 = d.DM(a.ctx, d.AllocDmAttr(length=4096))
    dm2.copy_to_dm(0, b"\xab" * 4096, 4096)

    data = pattern(60000, 1)
    b.mr.write(data, len(data))
    qb.post(op.IBV_WR_RDMA_WRITE, SGE(b.mr.buf, len(data), b.mr.lkey),
            (dmmr.rkey, 512))
    expect(qb.completion(), st.IBV_WC_SUCCESS, wc_op.IBV_WC_RDMA_WRITE,
           "B's WRITE into A's DM")
    if dm.copy_from_dm(512, len(data)) != data:
        raise SystemExit("A read back other bytes than B wrote into its DM")
    if dm.copy_from_dm(0, 512) != bytes(512):
        raise SystemExit("the DM's first 512 bytes changed")

    mine = pattern(4096, 2)
    dm.copy_to_dm(0, mine, len(mine))
    qb.post(op.IBV_WR_RDMA_READ, SGE(b.mr.buf, 4096, b.mr.lkey),
            (dmmr.rkey, 0))
    expect(qb.completion(), st.IBV_WC_SUCCESS, wc_op.IBV_WC_RDMA_READ,
           "B's READ of A's DM")
    if b.mr.read(4096, 0) != mine:
        raise SystemExit("B read other bytes than A wrote into its DM")

    # The DM as a local SGE: a SEND from it, a receive into it.
    qb.recv(SGE(b.mr.buf + 8192, 4096, b.mr.lkey))
    qa.post(op.IBV_WR_SEND, SGE(0, 4096, dmmr.lkey))
    expect(qa.completion(), st.IBV_WC_SUCCESS, wc_op.IBV_WC_SEND, "A's SEND")
    expect(qb.completion(), st.IBV_WC_SUCCESS, wc_op.IBV_WC_RECV, "B's RECV")
    if b.mr.read(4096, 8192) != mine:
        raise SystemExit("B received other bytes than A's DM holds")
    theirs = pattern(2048, 3)
    b.mr.write(theirs, len(theirs), 16384)
    qa.recv(SGE(8192, 2048, dmmr.lkey))
    qb.post(op.IBV_WR_SEND, SGE(b.mr.buf + 16384, 2048, b.mr.lkey))
    expect(qb.completion(), st.IBV_WC_SUCCESS, wc_op.IBV_WC_SEND, "B's SEND")
    expect(qa.completion(), st.IBV_WC_SUCCESS, wc_op.IBV_WC_RECV, "A's RECV")
    if dm.copy_from_dm(8192, 2048) != theirs:
        raise SystemExit("A's DM holds other bytes than B sent")

    # Timing, not judged: 200 WRITEs of 4 KiB into the DM, then into
    # A's host memory.
    times = {}
    for name, rkey in (("DM", dmmr.rkey), ("host", a.mr.rkey)):
        start = time.monotonic()
        for i in range(200):
            qb.post(op.IBV_WR_RDMA_WRITE, SGE(b.mr.buf, 4096, b.mr.lkey),
                    (rkey, 0 if name == "DM" else a.mr.buf), wr_id=i)
            expect(qb.completion(), st.IBV_WC_SUCCESS, what=f"WRITE {i}")
        times[name] = (time.monotonic() - start) / 200 * 1e6
    print(f"# 200 RDMA WRITEs of 4 KiB from B: {times['DM']:.0f} us each "
          f"into A's DM, {times['host']:.0f} us into A's host memory")

    # Past the region's end: refused at B, nothing written.
    last = dm.copy_from_dm(DM_LEN - 64, 64)
    qb.post(op.IBV_WR_RDMA_WRITE, SGE(b.mr.buf, 128, b.mr.lkey),
            (dmmr.rkey, DM_LEN - 64))
    wc = qb.completion()
    print(f"# a WRITE 64 bytes past the DM region's end: {st(wc.status).name}")
    expect(wc, st.IBV_WC_REM_ACCESS_ERR, what="WRITE past the end")
    if dm.copy_from_dm(DM_LEN - 64, 64) != last:
        raise SystemExit("the region's last bytes changed")
    if dm2.copy_from_dm(0, 4096) != b"\xab" * 4096:
        raise SystemExit("the DM beside it changed")


def refused(what, fn, code=None):
    try:
        fn()
    except PyverbsRDMAError as e:
        if code is not None and e.error_code != code:
            raise SystemExit(f"{what}: errno {e.error_code}, not {code}")
        print(f"# {what}: refused, errno {e.error_code}")
        return
    raise SystemExit(f"{what}: accepted")


def check_limits(argv):
    a, _ = devices(argv)
    max_dm = a.ctx.query_device_ex().max_dm_size
    print(f"# max_dm_size {max_dm}")
    if max_dm != CARD_DM:
        raise SystemExit(f"max_dm_size {max_dm}, not {CARD_DM}")
    refused("one byte more than max_dm_size",
            lambda: d.DM(a.ctx, d.AllocDmAttr(length=max_dm + 1)))
    d.DM(a.ctx, d.AllocDmAttr(length=max_dm)).close()
    first = d.DM(a.ctx, d.AllocDmAttr(length=max_dm * 3 // 4))
    refused("3/4 of it while 3/4 is taken",
            lambda: d.DM(a.ctx, d.AllocDmAttr(length=max_dm * 3 // 4)),
            errno.ENOMEM)
    first.close()
    second = d.DM(a.ctx, d.AllocDmAttr(length=max_dm * 3 // 4))
    refused("a region 4 bytes longer than its DM",
            lambda: DMMR(a.pd, max_dm * 3 // 4 + 4, DM_RW, second, 0))
    DMMR(a.pd, 4096, DM_RW, second, 0).close()
    second.close()


def check_isolation(argv):
    a, _ = devices(argv)
    dm = d.DM(a.ctx, d.AllocDmAttr(length=8192))
    mine = pattern(8192, 4)
    dm.copy_to_dm(0, mine, len(mine))
    offset = (PGOFF_BASE + dm.handle * SLOT_PAGES) * mmap.PAGESIZE
    own = mmap.mmap(a.ctx.cmd_fd, 8192, offset=offset)
    if bytes(own[:8192]) != mine:
        raise SystemExit("the own context's mapping shows other bytes")
    own.close()
    other = d.Context(name=argv[0])
    try:
        mmap.mmap(other.cmd_fd, 8192, offset=offset)
    except OSError as e:
        print(f"# another context mapping the DM's offset: errno {e.errno}")
        if e.errno != errno.EINVAL:
            raise SystemExit(f"errno {e.errno}, not EINVAL")
        return
    raise SystemExit("another context mapped the DM")


def main():
    checks = {"peer": check_peer, "limits": check_limits,
              "isolation": check_isolation}
    if len(sys.argv) < 6 or sys.argv[1] not in checks:
        raise SystemExit(__doc__)
    checks[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    main()
