#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Completion time stamps of card A's RDMA engine, checked with pyverbs
on one device (two RC QPs connected to each other) against the card's
PTP hardware clock, read through the kernel's PHC interface
(clock_gettime on /dev/ptpN), which reads the card's time registers, not
its completions.

Usage: rdma_timestamp.py CASE IBDEV GID_INDEX [BELOW_SECONDS]

caps:   query_device_ex reports completion_timestamp_mask 2^64-1 and
        hca_core_clock 1000000 kHz (nanoseconds); the device's
        device/ptp names the PHC.
stamps: a SEND between two QPs whose CQs were created with
        IBV_WC_EX_WITH_COMPLETION_TIMESTAMP (send side) and
        ..._WALLCLOCK (receive side): each completion's stamp lies
        between the PHC read before the post and after the poll; a
        second SEND 50 ms later is stamped 50 ms or more later. With
        BELOW_SECONDS, the stamps are also below that many seconds (the
        clock was set back).
rt:     ibv_query_rt_values_ex lies between two PHC reads; an unknown
        comp_mask bit is EINVAL.
Exit status 0 when the case holds.
"""

import errno
import os
import sys
import time

import pyverbs.device as d
from pyverbs.cq import CQEX, CqInitAttrEx, PollCqAttr
from pyverbs.libibverbs_enums import (IBV_WC_STANDARD_FLAGS, ibv_create_cq_wc_flags,
                                      ibv_qp_type)
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPCap, QPInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR

from rdma_verbs import RW, rc_to_rts

# linux/posix-timers.h: the clock id of a dynamic clock's descriptor.
CLOCKFD = 3


def phc_of(name):
    """The PHC under the RDMA device's PCI function, opened, and its name."""
    ptps = os.listdir(f"/sys/class/infiniband/{name}/device/ptp")
    f = open(f"/dev/{ptps[0]}", "rb")
    return f, ptps[0]


def phc_ns(f):
    return time.clock_gettime_ns((~f.fileno() << 3) | CLOCKFD)


def poll_stamp(cq, wallclock):
    """The next completion of an extended CQ (within 10 s): its status and
    its stamp."""
    end = time.monotonic() + 10
    while cq.start_poll(PollCqAttr()) != 0:
        if time.monotonic() > end:
            raise TimeoutError("no completion in 10 s")
    status = cq.status
    stamp = cq.read_completion_wallclock_ns() if wallclock else cq.read_timestamp()
    cq.end_poll()
    return status, stamp


def stamps(ctx, gid_index, phc, below_ns):
    gid = ctx.query_gid(1, gid_index)
    pd = PD(ctx)
    flags = ibv_create_cq_wc_flags
    scq = CQEX(ctx, CqInitAttrEx(cqe=16, wc_flags=IBV_WC_STANDARD_FLAGS
                                 | flags.IBV_WC_EX_WITH_COMPLETION_TIMESTAMP))
    rcq = CQEX(ctx, CqInitAttrEx(cqe=16, wc_flags=IBV_WC_STANDARD_FLAGS
                                 | flags.IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK))
    cap = QPCap(max_send_wr=4, max_recv_wr=4, max_send_sge=1, max_recv_sge=1)
    qa = QP(pd, QPInitAttr(qp_type=ibv_qp_type.IBV_QPT_RC, scq=scq, rcq=scq, cap=cap))
    qb = QP(pd, QPInitAttr(qp_type=ibv_qp_type.IBV_QPT_RC, scq=rcq, rcq=rcq, cap=cap))
    rc_to_rts(qa, gid_index, qb.qp_num, gid)
    rc_to_rts(qb, gid_index, qa.qp_num, gid)
    src, dst = MR(pd, 64, RW), MR(pd, 64, RW)
    ok, last = True, None
    for i in range(2):
        qb.post_recv(RecvWR(wr_id=i, num_sge=1, sg=[SGE(dst.buf, 64, dst.lkey)]))
        before = phc_ns(phc)
        qa.post_send(SendWR(wr_id=i, num_sge=1, sg=[SGE(src.buf, 64, src.lkey)]))
        sent = poll_stamp(scq, False)
        received = poll_stamp(rcq, True)
        after = phc_ns(phc)
        print(f"# SEND {i}: PHC before {before}, send stamp {sent[1]}, "
              f"receive stamp {received[1]}, PHC after {after}")
        for what, (status, stamp) in (("send", sent), ("receive", received)):
            if status != 0:
                print(f"# {what} completion status {status}")
                ok = False
            elif not before <= stamp <= after:
                print(f"# {what} stamp outside the PHC reads around it")
                ok = False
            elif below_ns is not None and stamp >= below_ns:
                print(f"# {what} stamp not below {below_ns} ns")
                ok = False
        if last is not None and sent[1] - last < 50_000_000:
            print(f"# the second send is stamped {sent[1] - last} ns after the first, "
                  "not 50 ms or more")
            ok = False
        last = sent[1]
        time.sleep(0.05)
    return ok


def main():
    case, name, gid_index = sys.argv[1], sys.argv[2], int(sys.argv[3])
    ctx = d.Context(name=name)
    phc, phc_name = phc_of(name)
    if case == "caps":
        attr = ctx.query_device_ex()
        print(f"# completion_timestamp_mask {attr.completion_timestamp_mask:#x}, "
              f"hca_core_clock {attr.hca_core_clock} kHz, PHC {phc_name}")
        ok = attr.completion_timestamp_mask == 2**64 - 1 and attr.hca_core_clock == 1_000_000
    elif case == "stamps":
        below = int(sys.argv[4]) * 1_000_000_000 if len(sys.argv) > 4 else None
        ok = stamps(ctx, gid_index, phc, below)
    elif case == "rt":
        before = phc_ns(phc)
        sec, nsec = ctx.query_rt_values_ex()
        after = phc_ns(phc)
        rt = sec * 1_000_000_000 + nsec
        print(f"# PHC before {before}, query_rt_values_ex {rt}, PHC after {after}")
        ok = before <= rt <= after
        # A value the provider does not know: EINVAL.
        try:
            ctx.query_rt_values_ex(comp_mask=1 << 1)
            print("# query_rt_values_ex with an unknown mask bit answered")
            ok = False
        except PyverbsRDMAError as e:
            print(f"# an unknown mask bit: {e}")
            ok = ok and e.error_code == errno.EINVAL
    else:
        sys.exit(f"unknown case {case}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
