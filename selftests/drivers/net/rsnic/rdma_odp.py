#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""On-demand paging on one device, with pyverbs: two RC QPs connected to
each other, so every frame crosses the card's engine, and regions
registered with IBV_ACCESS_ON_DEMAND over freshly mapped memory (no page
present until the card faults it in).

Usage: rdma_odp.py CASE IBDEV GID_INDEX

unpinned:   a 64 MiB on-demand region pins nothing (VmPin in
            /proc/self/status stays as it was); a 1 MiB ordinary region
            pins 1024 kB (the measure works).
traffic:    SEND, RDMA WRITE and RDMA READ of 3 pages each, and a
            fetch-and-add, between on-demand regions on both sides: the
            data arrives intact.
taken_back: the kernel takes a page back (MADV_DONTNEED, which zaps it
            and gives the process a fresh zeroed page on its next touch)
            after the card wrote it once; a second WRITE must land in
            the page the process now has, not in the one taken back.
unmapped:   a page of the region is munmap()ed: a WRITE into it completes
            with a remote access error and a SEND from it with a local
            protection error; the region's other pages keep their bytes.
prefetch:   ibv_advise_mr PREFETCH_WRITE over 8 pages, then a WRITE into
            them (the shell counts the card's page faults around it).
Exit status 0 when the case holds.
"""

import sys
import time

import pyverbs.device as d
from pyverbs.cq import CQ
from pyverbs.libibverbs_enums import (ibv_access_flags as acc, ibv_qp_type, ibv_send_flags,
                                      ibv_wc_status, ibv_wr_opcode)
from pyverbs.mem_alloc import madvise, mmap, munmap
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPCap, QPInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR

from rdma_verbs import RW_ATOMIC, rc_to_rts

PAGE = 4096
ODP = RW_ATOMIC | acc.IBV_ACCESS_ON_DEMAND
# ibv_advise_mr's advice and flag (infiniband/verbs.h).
PREFETCH_WRITE = 1
ADVISE_FLUSH = 1


def vm_pin_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmPin:"):
                return int(line.split()[1])
    return None


class Pair:
    """Two connected RC QPs of one PD on device `name`, sharing a CQ."""

    def __init__(self, name, gid_index):
        self.ctx = d.Context(name=name)
        gid = self.ctx.query_gid(1, gid_index)
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 32)
        cap = QPCap(max_send_wr=8, max_recv_wr=8, max_send_sge=1, max_recv_sge=1)
        init = QPInitAttr(qp_type=ibv_qp_type.IBV_QPT_RC, scq=self.cq, rcq=self.cq, cap=cap)
        self.qa, self.qb = QP(self.pd, init), QP(self.pd, init)
        rc_to_rts(self.qa, gid_index, self.qb.qp_num, gid, RW_ATOMIC)
        rc_to_rts(self.qb, gid_index, self.qa.qp_num, gid, RW_ATOMIC)

    def region(self, pages):
        """An on-demand region over `pages` freshly mapped pages."""
        addr = mmap(length=pages * PAGE)
        return addr, MR(self.pd, pages * PAGE, ODP, address=addr)

    def poll(self, n):
        """The next `n` completions (within 20 s)."""
        out = []
        end = time.monotonic() + 20
        while len(out) < n and time.monotonic() < end:
            got, wcs = self.cq.poll(n - len(out))
            out += wcs[:got]
        return out

    def post(self, opcode, src, length, dst_mr=None, dst_addr=0):
        """Posts `opcode` on qa from `src` (an (address, MR) pair), to
        `dst_addr` of `dst_mr` for a WRITE or READ; waits for its
        completion and returns its status."""
        addr, mr = src
        wr = SendWR(wr_id=1, opcode=opcode, num_sge=1, sg=[SGE(addr, length, mr.lkey)],
                    send_flags=ibv_send_flags.IBV_SEND_SIGNALED)
        if dst_mr is not None:
            wr.set_wr_rdma(dst_mr.rkey, dst_addr)
        self.qa.post_send(wr)
        wcs = self.poll(1)
        status = wcs[0].status if wcs else None
        print(f"# {opcode!r}: {status!r}")
        return status


def pattern(n, seed):
    return bytes((i * 31 + seed) & 0xFF for i in range(n))


def case_unpinned(p):
    before = vm_pin_kb()
    addr, odp = p.region(16384)
    odp_pin = vm_pin_kb()
    plain = MR(p.pd, 1 << 20, RW_ATOMIC)
    plain_pin = vm_pin_kb()
    print(f"# VmPin: {before} kB, with a 64 MiB on-demand region {odp_pin} kB, "
          f"with a 1 MiB ordinary one {plain_pin} kB")
    plain.close()
    odp.close()
    munmap(addr, 16384 * PAGE)
    return odp_pin == before and plain_pin == before + 1024


def case_traffic(p):
    n = 3 * PAGE
    src, dst = p.region(3), p.region(3)
    data = pattern(n, 5)
    src[1].write(data, n)
    ok = True
    # SEND: a receive in the destination region.
    p.qb.post_recv(RecvWR(wr_id=2, num_sge=1, sg=[SGE(dst[0], n, dst[1].lkey)]))
    p.qa.post_send(SendWR(wr_id=1, opcode=ibv_wr_opcode.IBV_WR_SEND, num_sge=1,
                          sg=[SGE(src[0], n, src[1].lkey)],
                          send_flags=ibv_send_flags.IBV_SEND_SIGNALED))
    wcs = p.poll(2)
    print(f"# SEND: {[wc.status for wc in wcs]}")
    ok &= len(wcs) == 2 and not any(wc.status for wc in wcs) and dst[1].read(n, 0) == data
    # WRITE of other bytes, then READ them back into a third region.
    data = pattern(n, 77)
    src[1].write(data, n)
    ok &= p.post(ibv_wr_opcode.IBV_WR_RDMA_WRITE, src, n, dst[1], dst[0]) == 0
    ok &= dst[1].read(n, 0) == data
    back = p.region(3)
    ok &= p.post(ibv_wr_opcode.IBV_WR_RDMA_READ, back, n, dst[1], dst[0]) == 0
    ok &= back[1].read(n, 0) == data
    # Fetch-and-add on the destination's last page, the old value into
    # a fourth region.
    old = p.region(1)
    wr = SendWR(wr_id=3, opcode=ibv_wr_opcode.IBV_WR_ATOMIC_FETCH_AND_ADD, num_sge=1,
                sg=[SGE(old[0], 8, old[1].lkey)], send_flags=ibv_send_flags.IBV_SEND_SIGNALED)
    wr.set_wr_atomic(dst[1].rkey, dst[0] + 2 * PAGE, 5, 0)
    before = int.from_bytes(data[2 * PAGE:2 * PAGE + 8], "little")
    p.qa.post_send(wr)
    wcs = p.poll(1)
    ok &= len(wcs) == 1 and wcs[0].status == 0
    ok &= int.from_bytes(old[1].read(8, 0), "little") == before
    ok &= int.from_bytes(dst[1].read(8, 2 * PAGE), "little") == before + 5
    print(f"# all intact: {ok}")
    return ok


def case_taken_back(p):
    src, dst = p.region(1), p.region(2)
    first = pattern(PAGE, 1)
    src[1].write(first, PAGE)
    if p.post(ibv_wr_opcode.IBV_WR_RDMA_WRITE, src, PAGE, dst[1], dst[0] + PAGE) != 0:
        return False
    landed = dst[1].read(PAGE, PAGE) == first
    # The kernel takes the page back: the process's next touch gets a
    # fresh page. The card must forget the old one.
    madvise(dst[0] + PAGE, PAGE)
    second = pattern(PAGE, 2)
    src[1].write(second, PAGE)
    status = p.post(ibv_wr_opcode.IBV_WR_RDMA_WRITE, src, PAGE, dst[1], dst[0] + PAGE)
    got = dst[1].read(PAGE, PAGE)
    print(f"# first WRITE landed: {landed}; after MADV_DONTNEED the process sees "
          f"{'the second WRITE' if got == second else 'zeros' if got == bytes(PAGE) else 'other bytes'}")
    return landed and status == 0 and got == second


def case_unmapped(p):
    src, dst = p.region(1), p.region(3)
    mine = pattern(PAGE, 9)
    # Pages 0 and 2 hold bytes of the process; page 1 goes away.
    dst[1].write(mine, PAGE, 0)
    dst[1].write(mine, PAGE, 2 * PAGE)
    munmap(dst[0] + PAGE, PAGE)
    src[1].write(pattern(PAGE, 3), PAGE)
    write = p.post(ibv_wr_opcode.IBV_WR_RDMA_WRITE, src, PAGE, dst[1], dst[0] + PAGE)
    ok = write == ibv_wc_status.IBV_WC_REM_ACCESS_ERR
    # A fresh pair (the QP above is in error now): a SEND from a hole.
    q = Pair(sys.argv[2], int(sys.argv[3]))
    region, sink = q.region(3), q.region(1)
    munmap(region[0] + PAGE, PAGE)
    q.qb.post_recv(RecvWR(wr_id=2, num_sge=1, sg=[SGE(sink[0], PAGE, sink[1].lkey)]))
    send = q.post(ibv_wr_opcode.IBV_WR_SEND, (region[0] + PAGE, region[1]), 64)
    ok &= send == ibv_wc_status.IBV_WC_LOC_PROT_ERR
    intact = dst[1].read(PAGE, 0) == mine and dst[1].read(PAGE, 2 * PAGE) == mine
    print(f"# WRITE into the hole: {write!r}; SEND from it: {send!r}; "
          f"the pages around it intact: {intact}")
    return ok and intact


def case_prefetch(p):
    src, dst = p.region(8), p.region(8)
    n = 8 * PAGE
    data = pattern(n, 4)
    src[1].write(data, n)
    for addr, mr in (src, dst):
        p.pd.advise_mr(PREFETCH_WRITE, ADVISE_FLUSH, [SGE(addr, n, mr.lkey)])
    # The shell reads the card's page-fault count now (stdin handshake).
    print("# prefetched", flush=True)
    sys.stdin.readline()
    ok = p.post(ibv_wr_opcode.IBV_WR_RDMA_WRITE, src, n, dst[1], dst[0]) == 0
    return ok and dst[1].read(n, 0) == data


def main():
    case, name, gid_index = sys.argv[1], sys.argv[2], int(sys.argv[3])
    p = Pair(name, gid_index)
    cases = {"unpinned": case_unpinned, "traffic": case_traffic, "taken_back": case_taken_back,
             "unmapped": case_unmapped, "prefetch": case_prefetch}
    if case not in cases:
        sys.exit(f"unknown case {case}")
    sys.exit(0 if cases[case](p) else 1)


if __name__ == "__main__":
    main()
