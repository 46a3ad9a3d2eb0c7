#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""RC atomics between two RDMA devices, checked with pyverbs.

Usage: rdma_atomic.py CHECK IBDEV_A GID_INDEX_A IBDEV_B GID_INDEX_B [N]

A's QPs are the requesters, B's memory the target. CHECK is one of:
  fetch-add   two QPs of A, each with 16 operations in flight, add 1 to
              the same 8 bytes of B's memory N times each (default 2000):
              B ends at 2N, and the old values A got back are exactly
              0..2N-1, each once (no operation lost, none run twice, none
              interleaved with another)
  cmp-swap    the two QPs race to move the same word from v to v+1 by
              compare-and-swap, each retrying with the value it got back;
              the word ends at the number of swaps that succeeded, the
              two QPs' successes together are exactly 0..N-1, and some
              tries lost (the QPs did race)
  misaligned  a fetch-and-add 4 bytes into an aligned word: REM_INV_REQ_ERR,
              B's memory unchanged
  no-access   a fetch-and-add to an MR without remote-atomic access:
              REM_ACCESS_ERR, B's memory unchanged
Exit status 0 when the check holds.
"""

import struct
import sys
import time

from pyverbs.cq import CQ
from pyverbs.libibverbs_enums import (ibv_qp_type, ibv_wc_opcode as wc_op,
                                      ibv_wc_status as st,
                                      ibv_wr_opcode as op)
from pyverbs.qp import QP, QPCap, QPInitAttr
from pyverbs.wr import SGE, SendWR

import rdma_verbs
from rdma_verbs import RW, RW_ATOMIC as ALL, rc_to_rts

LEN = 4096
DEPTH = 16


def Device(name, gid_index, access=ALL):
    """A context, a PD and an MR of one device, shared by its QPs."""
    return rdma_verbs.Device(name, gid_index, access, LEN)


class Qp:
    """An RC QP on a device, with its own CQ."""

    def __init__(self, dev):
        self.dev = dev
        self.cq = CQ(dev.ctx, 2 * DEPTH)
        cap = QPCap(max_send_wr=DEPTH, max_recv_wr=1, max_send_sge=1,
                    max_recv_sge=1)
        self.qp = QP(dev.pd, QPInitAttr(qp_type=ibv_qp_type.IBV_QPT_RC,
                                        scq=self.cq, rcq=self.cq, cap=cap))

    def connect(self, peer):
        rc_to_rts(self.qp, self.dev.gid_index, peer.qp.qp_num, peer.dev.gid,
                  ALL, DEPTH)

    def atomic(self, wr_id, opcode, slot, target, compare_add, swap=0):
        """Posts an atomic on `target` (an MR, address) whose old value
        lands in 8-byte slot `slot` of this device's MR."""
        mr = self.dev.mr
        wr = SendWR(wr_id=wr_id, opcode=opcode, num_sge=1,
                    sg=[SGE(mr.buf + 8 * slot, 8, mr.lkey)])
        wr.set_wr_atomic(target[0].rkey, target[1], compare_add, swap)
        self.qp.post_send(wr)

    def completions(self, timeout=20.0):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            n, wcs = self.cq.poll(DEPTH)
            if n:
                return wcs
            time.sleep(0.0005)
        raise SystemExit(f"{self.dev.name}: no completion in {timeout} s")

    def old_value(self, slot):
        return struct.unpack("<Q", self.dev.mr.read(8, 8 * slot))[0]


def connected(argv, access=ALL, qps=1):
    a, b = Device(argv[0], int(argv[1])), Device(argv[2], int(argv[3]), access)
    pairs = []
    for _ in range(qps):
        qa, qb = Qp(a), Qp(b)
        qa.connect(qb)
        qb.connect(qa)
        pairs.append((qa, qb))
    return a, b, pairs


def word(dev, offset=0):
    return struct.unpack("<Q", dev.mr.read(8, offset))[0]


def expect_ok(wc, opcode):
    if wc.status != st.IBV_WC_SUCCESS:
        raise SystemExit(f"wr {wc.wr_id}: {st(wc.status).name}")
    if wc.opcode != opcode:
        raise SystemExit(f"wr {wc.wr_id}: opcode {wc.opcode}, not {opcode}")


def check_fetch_add(argv):
    n = int(argv[4]) if len(argv) > 4 else 2000
    _, b, pairs = connected(argv, qps=2)
    b.mr.write(bytes(8), 8)
    target = (b.mr, b.mr.buf)
    seen = []
    state = [{"posted": 0, "done": 0, "free": list(range(DEPTH))}
             for _ in pairs]
    # Slots: QP i uses 8-byte slots i*DEPTH.. of A's MR.
    while any(s["done"] < n for s in state):
        for i, (qa, _) in enumerate(pairs):
            s = state[i]
            while s["posted"] < n and s["free"]:
                slot = s["free"].pop()
                qa.atomic(i * DEPTH + slot, op.IBV_WR_ATOMIC_FETCH_AND_ADD,
                          i * DEPTH + slot, target, 1)
                s["posted"] += 1
            if s["done"] < s["posted"]:
                for wc in qa.completions():
                    expect_ok(wc, wc_op.IBV_WC_FETCH_ADD)
                    seen.append(qa.old_value(wc.wr_id))
                    s["free"].append(wc.wr_id - i * DEPTH)
                    s["done"] += 1
    final = word(b)
    print(f"# {2 * n} fetch-and-adds from 2 QPs: B holds {final}")
    if final != 2 * n:
        raise SystemExit(f"B holds {final}, not {2 * n}")
    if sorted(seen) != list(range(2 * n)):
        dup = len(seen) - len(set(seen))
        raise SystemExit(f"old values are not 0..{2 * n - 1} once each "
                         f"({dup} repeated)")


def check_cmp_swap(argv):
    n = int(argv[4]) if len(argv) > 4 else 1000
    _, b, pairs = connected(argv, qps=2)
    b.mr.write(bytes(8), 8)
    target = (b.mr, b.mr.buf)
    # Each QP keeps one CAS in flight: v -> v+1 with the v it last saw
    # (its own last win, or the value its last failed try found).
    guess = [0, 0]
    wins = [[], []]
    inflight = [True, True]
    tries = 0

    def post(i):
        pairs[i][0].atomic(i, op.IBV_WR_ATOMIC_CMP_AND_SWP, i, target,
                           guess[i], guess[i] + 1)

    post(0)
    post(1)
    last = time.monotonic()
    while any(inflight):
        if time.monotonic() - last > 20:
            raise SystemExit("no compare-and-swap completed in 20 s")
        for i, (qa, _) in enumerate(pairs):
            if not inflight[i]:
                continue
            got, wcs = qa.cq.poll(1)
            if not got:
                continue
            last = time.monotonic()
            expect_ok(wcs[0], wc_op.IBV_WC_COMP_SWAP)
            tries += 1
            old = qa.old_value(i)
            if old == guess[i]:
                wins[i].append(old)
                guess[i] = old + 1
            else:
                guess[i] = old
            if len(wins[0]) + len(wins[1]) < n:
                post(i)
            else:
                inflight[i] = False
    final = word(b)
    won = sorted(wins[0] + wins[1])
    print(f"# {tries} compare-and-swaps, {len(wins[0])} + {len(wins[1])} "
          f"won: B holds {final}")
    if won != list(range(len(won))) or final != len(won):
        raise SystemExit(f"B holds {final}; the swaps won are not "
                         f"0..{final - 1} once each")
    if tries == len(won):
        raise SystemExit("no compare-and-swap lost: the QPs never raced")


def refused(argv, access, offset, status):
    _, b, pairs = connected(argv, access=access)
    qa = pairs[0][0]
    b.mr.write(struct.pack("<QQ", 7, 9), 16)
    qa.atomic(1, op.IBV_WR_ATOMIC_FETCH_AND_ADD, 0, (b.mr, b.mr.buf + offset), 5)
    wc = qa.completions()[0]
    print(f"# {st(wc.status).name}")
    if wc.status != status:
        raise SystemExit(f"expected {st(status).name}")
    if b.mr.read(16, 0) != struct.pack("<QQ", 7, 9):
        raise SystemExit("B's memory changed")


CHECKS = {
    "fetch-add": check_fetch_add,
    "cmp-swap": check_cmp_swap,
    "misaligned": lambda argv: refused(argv, ALL, 4, st.IBV_WC_REM_INV_REQ_ERR),
    "no-access": lambda argv: refused(argv, RW, 0, st.IBV_WC_REM_ACCESS_ERR),
}

if __name__ == "__main__":
    if len(sys.argv) not in (6, 7) or sys.argv[1] not in CHECKS:
        raise SystemExit(__doc__)
    CHECKS[sys.argv[1]](sys.argv[2:])
