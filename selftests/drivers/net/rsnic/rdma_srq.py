#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A shared receive queue on card B, checked with pyverbs between the cards.

Usage: rdma_srq.py CASE IBDEV_A GID_INDEX_A IBDEV_B GID_INDEX_B

Card B has one SRQ and two RC QPs that receive from it, each connected
to one of card A's two QPs.

share:   8 receives posted to the SRQ, its limit armed at 4 (query_srq
         shows 4). 6 SENDs, alternating between A's QPs, each carrying its
         own pattern: B's CQ gets 6 completions, split over both QPs, each
         with a different wr_id, whose buffer holds that SEND's bytes
         exactly. The IBV_EVENT_SRQ_LIMIT_REACHED event comes once the SRQ
         holds fewer than 4, and query_srq then shows the limit disarmed
         (0).
full:    the SRQ takes exactly the max_wr it granted; one more post fails
         with ENOMEM; then max_wr SENDs all arrive, none lost.
resize:  an SRQ of 16, after a lap of 16 SENDs, holds 10 receives, 3 of
         them completed by SENDs;
         modify_srq(IBV_SRQ_MAX_WR 64) grows it: query_srq shows 64, a
         shrink to 32 is EINVAL with nothing changed, and exactly 64 are
         outstanding once posts stop with ENOMEM (the 7 from before keep
         their slots); then 64 SENDs land one per buffer, the 7 old ones
         among them, and the freed slots take posts again.
error:   B's first QP goes to the error state with 4 receives in the SRQ:
         IBV_EVENT_QP_LAST_WQE_REACHED comes for it, nothing is flushed
         from the SRQ (no completion on B), and the second QP still
         receives all 4 SENDs through it.
Exit status 0 when the case holds.
"""

import errno
import signal
import sys
import time

import pyverbs.device as d
from pyverbs.cq import CQ
from pyverbs.libibverbs_enums import (ibv_event_type, ibv_qp_state,
                                      ibv_qp_type, ibv_srq_attr_mask,
                                      ibv_wc_opcode, ibv_wc_status as st,
                                      ibv_wr_opcode as op)
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.srq import SRQ, SrqAttr, SrqInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR

from rdma_verbs import RW, rc_to_rts

MSG = 256
SLOTS = 64


class Side:
    """Context, PD, an MR of SLOTS message buffers, one CQ, two RC QPs;
    with `srq_wr`, both receive from one SRQ of that many requests."""

    def __init__(self, name, gid_index, srq_wr=0):
        self.ctx = d.Context(name=name)
        self.gid_index = gid_index
        self.gid = self.ctx.query_gid(1, gid_index)
        self.pd = PD(self.ctx)
        self.mr = MR(self.pd, MSG * SLOTS, RW)
        self.cq = CQ(self.ctx, 256)
        self.srq = None
        if srq_wr:
            self.srq = SRQ(self.pd, SrqInitAttr(SrqAttr(max_wr=srq_wr,
                                                        max_sge=1)))
        cap = QPCap(max_send_wr=64, max_recv_wr=0 if srq_wr else 64,
                    max_send_sge=1, max_recv_sge=0 if srq_wr else 1)
        self.qps = []
        for _ in range(2):
            attr = QPInitAttr(qp_type=ibv_qp_type.IBV_QPT_RC, scq=self.cq,
                              rcq=self.cq, cap=cap, srq=self.srq)
            self.qps.append(QP(self.pd, attr))

    def connect(self, peer):
        for mine, theirs in zip(self.qps, peer.qps):
            rc_to_rts(mine, self.gid_index, theirs.qp_num, peer.gid)

    def buf(self, slot):
        return self.mr.buf + slot * MSG

    def post_srq(self, slot):
        """A receive into buffer `slot`, wr_id = slot."""
        self.srq.post_recv(RecvWR(wr_id=slot, num_sge=1,
                                  sg=[SGE(self.buf(slot), MSG,
                                          self.mr.lkey)]))


def pattern(n):
    return bytes((n * 37 + i) % 251 for i in range(MSG))


def send(a, qp_index, n):
    """SEND number n (its pattern, from A's slot n) on A's QP qp_index."""
    a.mr.write(pattern(n), MSG, n * MSG)
    a.qps[qp_index].post_send(SendWR(wr_id=n, opcode=op.IBV_WR_SEND,
                                     num_sge=1,
                                     sg=[SGE(a.buf(n), MSG, a.mr.lkey)]))


def drain(cq, n, timeout=10.0):
    """Exactly n completions (each a success), as (wr_id, qp_num, len)."""
    got_all = []
    end = time.monotonic() + timeout
    while len(got_all) < n and time.monotonic() < end:
        got, wcs = cq.poll(n - len(got_all))
        for wc in wcs[:got]:
            if wc.status != st.IBV_WC_SUCCESS:
                raise SystemExit(f"wr {wc.wr_id}: {st(wc.status).name}")
            got_all.append((wc.wr_id, wc.qp_num, wc.byte_len, wc.opcode))
        if not got:
            time.sleep(0.001)
    if len(got_all) != n:
        raise SystemExit(f"{len(got_all)} of {n} completions")
    return got_all


def quiet(cq, wait=0.5):
    """True if no completion arrives within `wait` seconds."""
    end = time.monotonic() + wait
    while time.monotonic() < end:
        got, wcs = cq.poll(1)
        if got:
            print(f"# unexpected completion: wr {wcs[0].wr_id} "
                  f"{st(wcs[0].status).name}")
            return False
        time.sleep(0.01)
    return True


def received(a, b, sends, recvs):
    """B's receive completions of `sends` (n -> A's QP index): each
    SEND's bytes in the buffer its completion names, each buffer once."""
    seen = set()
    for wr_id, qpn, length, opcode in recvs:
        if opcode != ibv_wc_opcode.IBV_WC_RECV or length != MSG:
            raise SystemExit(f"wr {wr_id}: opcode {opcode}, {length} bytes")
        if wr_id in seen:
            raise SystemExit(f"buffer {wr_id} completed twice")
        seen.add(wr_id)
        data = b.mr.read(MSG, wr_id * MSG)
        n = next((n for n in sends if pattern(n) == data), None)
        if n is None:
            raise SystemExit(f"buffer {wr_id}: no SEND's bytes")
        if b.qps[sends[n]].qp_num != qpn:
            raise SystemExit(f"SEND {n} completed on QP {qpn}")
    got = {pattern(n) for n in sends}
    have = {b.mr.read(MSG, w * MSG) for w, _, _, _ in recvs}
    if got != have:
        raise SystemExit("not every SEND arrived")


def next_async_event(ctx, timeout=10):
    """The context's next async event; exits if none comes in time
    (the alarm interrupts the blocking read)."""
    def expired(_sig, _frame):
        raise SystemExit("no async event")
    signal.signal(signal.SIGALRM, expired)
    signal.alarm(timeout)
    try:
        return ctx.get_async_event()
    finally:
        signal.alarm(0)


def case_share(a, b):
    for slot in range(8):
        b.post_srq(slot)
    b.srq.modify(SrqAttr(srq_limit=4), ibv_srq_attr_mask.IBV_SRQ_LIMIT)
    armed = b.srq.query().srq_limit
    if armed != 4:
        raise SystemExit(f"query_srq: limit {armed}, armed 4")
    sends = {n: n % 2 for n in range(6)}
    for n, qp in sends.items():
        send(a, qp, n)
    drain(a.cq, len(sends))
    recvs = drain(b.cq, len(sends))
    received(a, b, sends, recvs)
    qps = {qpn for _, qpn, _, _ in recvs}
    print(f"# {len(recvs)} receives over QPs {sorted(qps)}")
    ev = next_async_event(b.ctx)
    kind = ev.event_type
    # Unacknowledged, it would keep ibv_destroy_srq waiting.
    ev.ack()
    if kind != ibv_event_type.IBV_EVENT_SRQ_LIMIT_REACHED:
        raise SystemExit(f"async event {kind}, not SRQ_LIMIT")
    after = b.srq.query().srq_limit
    if after != 0:
        raise SystemExit(f"query_srq after the event: limit {after}, not 0")
    print("# limit event came; limit disarmed")


def case_full(a, b):
    max_wr = b.srq.query().max_wr
    if max_wr > SLOTS:
        raise SystemExit(f"SRQ granted {max_wr}, more than {SLOTS} buffers")
    for slot in range(max_wr):
        b.post_srq(slot)
    try:
        b.post_srq(0)
        raise SystemExit(f"a post beyond max_wr {max_wr} was taken")
    except PyverbsRDMAError as e:
        if e.error_code != errno.ENOMEM:
            raise SystemExit(f"a post to the full SRQ: {e}")
    print(f"# SRQ of {max_wr}: one more post is ENOMEM")
    sends = {n: n % 2 for n in range(max_wr)}
    for start in range(0, max_wr, 32):
        batch = [n for n in sends if start <= n < start + 32]
        for n in batch:
            send(a, sends[n], n)
        drain(a.cq, len(batch))
    received(a, b, sends, drain(b.cq, max_wr))
    # Completed slots are free again.
    b.post_srq(0)


def case_resize(a, b):
    # A whole lap of the 16 first: the lap the resize counts from then
    # starts at position 16, not where slot 0 first was.
    for slot in range(16):
        b.post_srq(slot)
    sends = {n: n % 2 for n in range(200, 216)}
    for n in sends:
        a.mr.write(pattern(n), MSG, (n % SLOTS) * MSG)
        a.qps[sends[n]].post_send(SendWR(
            wr_id=n, opcode=op.IBV_WR_SEND, num_sge=1,
            sg=[SGE(a.buf(n % SLOTS), MSG, a.mr.lkey)]))
    drain(a.cq, 16)
    received(a, b, sends, drain(b.cq, 16))
    for slot in range(10):
        b.post_srq(slot)
    sends = {n: n % 2 for n in range(3)}
    for n in sends:
        send(a, sends[n], n)
    drain(a.cq, 3)
    received(a, b, sends, drain(b.cq, 3))
    b.srq.modify(SrqAttr(max_wr=64), ibv_srq_attr_mask.IBV_SRQ_MAX_WR)
    if b.srq.query().max_wr != 64:
        raise SystemExit(f"query_srq after the resize: max_wr {b.srq.query().max_wr}")
    try:
        b.srq.modify(SrqAttr(max_wr=32), ibv_srq_attr_mask.IBV_SRQ_MAX_WR)
        raise SystemExit("a shrink to 32 was taken")
    except PyverbsRDMAError as e:
        if e.error_code != errno.EINVAL:
            raise SystemExit(f"a shrink to 32: {e}")
    if b.srq.query().max_wr != 64:
        raise SystemExit("the refused shrink changed max_wr")
    # Buffers 0-2 completed, 3-9 still posted: 10-63 and 0-2 are free.
    free = list(range(10, SLOTS)) + [0, 1, 2]
    posted = 0
    for slot in free:
        try:
            b.post_srq(slot)
        except PyverbsRDMAError as e:
            if e.error_code != errno.ENOMEM:
                raise
            break
        posted += 1
    outstanding = 7 + posted
    print(f"# resized to 64: {posted} more posts taken, {outstanding} outstanding")
    if outstanding != 64:
        raise SystemExit(f"{outstanding} outstanding after the resize, not 64")
    # 64 SENDs, patterns 100-163 from A's buffers in turn (32 at a time).
    sends = {n: n % 2 for n in range(100, 164)}
    for start in range(100, 164, 32):
        for n in range(start, start + 32):
            a.mr.write(pattern(n), MSG, (n % SLOTS) * MSG)
            a.qps[sends[n]].post_send(SendWR(
                wr_id=n, opcode=op.IBV_WR_SEND, num_sge=1,
                sg=[SGE(a.buf(n % SLOTS), MSG, a.mr.lkey)]))
        drain(a.cq, 32)
    recvs = drain(b.cq, 64)
    received(a, b, sends, recvs)
    old = sorted(w for w, _, _, _ in recvs if 3 <= w <= 9)
    if old != list(range(3, 10)):
        raise SystemExit(f"the 7 receives from before the resize: {old}")
    b.post_srq(5)
    print("# 64 SENDs arrived, the 7 from before the resize among them")


def case_error(a, b):
    for slot in range(4):
        b.post_srq(slot)
    b.qps[0].modify(QPAttr(qp_state=ibv_qp_state.IBV_QPS_ERR),
                    1)  # IBV_QP_STATE
    ev = next_async_event(b.ctx)
    kind = ev.event_type
    ev.ack()
    if kind != ibv_event_type.IBV_EVENT_QP_LAST_WQE_REACHED:
        raise SystemExit(f"async event {kind}, not QP_LAST_WQE_REACHED")
    if not quiet(b.cq):
        raise SystemExit("the QP's error flushed the SRQ")
    sends = {n: 1 for n in range(4)}
    for n in sends:
        send(a, 1, n)
    drain(a.cq, 4)
    received(a, b, sends, drain(b.cq, 4))
    print("# QP 0 in error, its last-WQE event came; QP 1 received all 4 "
          "through the SRQ")


def main():
    case, name_a, gid_a, name_b, gid_b = sys.argv[1:6]
    a = Side(name_a, int(gid_a))
    b = Side(name_b, int(gid_b), srq_wr=SLOTS if case == "full" else 16)
    a.connect(b)
    b.connect(a)
    cases = {"share": case_share, "full": case_full, "resize": case_resize,
             "error": case_error}
    cases[case](a, b)


if __name__ == "__main__":
    main()
