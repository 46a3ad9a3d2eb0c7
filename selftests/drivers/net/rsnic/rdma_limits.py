#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Every limit the device reports is what it accepts, checked with pyverbs.

Usage: rdma_limits.py CASE IBDEV GID_INDEX [EXISTING]

Counts (device-wide: EXISTING objects of the kind some other user, such
as ib_core's own MAD QP, already holds, count against them):
pd, cq, qp, srq, mr, mw, ah: max_X - EXISTING objects are created, and
           one more is refused; all are then freed, and one is created
           again (the refusal lost nothing).
Sizes (per object):
qp_wr:     a QP with max_qp_wr send and receive WRs, and max_sge SGEs of
           each, is created; one WR or one SGE more is refused.
cqe:       a CQ of max_cqe entries is created; one more is refused.
srq_wr:    an SRQ of max_srq_wr WRs and max_srq_sge SGEs is created; one
           more of either is refused.
rd_atom:   an RC QP reaches RTS with max_rd_atomic = max_qp_init_rd_atom
           and max_dest_rd_atomic = max_qp_rd_atom (looped to itself);
           one more of either is refused.
Prints what it created; exit status 0 when the case holds.
"""

import sys

import pyverbs.device as d
from pyverbs.addr import AH, AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.libibverbs_enums import ibv_mw_type, ibv_qp_type
from pyverbs.mr import MR, MW
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPCap, QPInitAttr
from pyverbs.srq import SRQ, SrqAttr, SrqInitAttr

from rdma_verbs import RW, rc_to_rts


def refused(make):
    """Whether `make()` is refused by the device (an RDMA error)."""
    try:
        obj = make()
    except PyverbsRDMAError as e:
        print(f"# refused: {e}")
        return True
    obj.close()
    print("# accepted")
    return False


def count(attr_max, existing, make):
    """Creates max - existing objects with `make(i)`, then one more,
    which must be refused; frees them and creates one again."""
    want = attr_max - existing
    made = []
    try:
        for i in range(want):
            made.append(make(i))
    except PyverbsRDMAError as e:
        print(f"# object {len(made) + 1} of {want} refused: {e}")
        return False
    print(f"# created {len(made)} (+{existing} existing = {attr_max}, the reported maximum)")
    if not refused(lambda: make(want)):
        print("# one past the reported maximum was accepted")
        return False
    for obj in reversed(made):
        obj.close()
    try:
        make(0).close()
    except PyverbsRDMAError as e:
        print(f"# after freeing them all, a new one is refused: {e}")
        return False
    return True


def rc_qp(pd, cq, send_wr=1, recv_wr=1, send_sge=1, recv_sge=1):
    cap = QPCap(max_send_wr=send_wr, max_recv_wr=recv_wr,
                max_send_sge=send_sge, max_recv_sge=recv_sge)
    return QP(pd, QPInitAttr(qp_type=ibv_qp_type.IBV_QPT_RC, scq=cq,
                             rcq=cq, cap=cap))


def main():
    case, name, gid_index = sys.argv[1], sys.argv[2], int(sys.argv[3])
    existing = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    ctx = d.Context(name=name)
    a = ctx.query_device()
    gid = ctx.query_gid(1, gid_index)
    # The test's own PD and CQ, where they do not count against the case.
    pd = PD(ctx) if case != "pd" else None
    cq = CQ(ctx, 16) if case not in ("pd", "cq") else None
    if case == "pd":
        ok = count(a.max_pd, existing, lambda i: PD(ctx))
    elif case == "cq":
        ok = count(a.max_cq, existing, lambda i: CQ(ctx, 1))
    elif case == "qp":
        ok = count(a.max_qp, existing, lambda i: rc_qp(pd, cq))
    elif case == "srq":
        ok = count(a.max_srq, existing,
                   lambda i: SRQ(pd, SrqInitAttr(SrqAttr(max_wr=1, max_sge=1))))
    elif case == "mr":
        ok = count(a.max_mr, existing, lambda i: MR(pd, 64, RW))
    elif case == "mw":
        print(f"# max_mw {a.max_mw} (max_mr {a.max_mr}: one key space)")
        ok = a.max_mw > 0 and count(a.max_mw, existing,
                                    lambda i: MW(pd, ibv_mw_type.IBV_MW_TYPE_2))
    elif case == "ah":
        attr = AHAttr(gr=GlobalRoute(dgid=gid, sgid_index=gid_index),
                      is_global=1, port_num=1)
        ok = count(a.max_ah, existing, lambda i: AH(pd, attr=attr))
    elif case == "qp_wr":
        print(f"# max_qp_wr {a.max_qp_wr}, max_sge {a.max_sge}")
        big = rc_qp(pd, CQ(ctx, 2 * a.max_qp_wr) if 2 * a.max_qp_wr <= a.max_cqe else cq,
                    a.max_qp_wr, a.max_qp_wr, a.max_sge, a.max_sge)
        big.close()
        ok = all(refused(lambda kw=kw: rc_qp(pd, cq, **kw)) for kw in (
            {"send_wr": a.max_qp_wr + 1}, {"recv_wr": a.max_qp_wr + 1},
            {"send_sge": a.max_sge + 1}, {"recv_sge": a.max_sge + 1}))
    elif case == "cqe":
        print(f"# max_cqe {a.max_cqe}")
        CQ(ctx, a.max_cqe).close()
        ok = refused(lambda: CQ(ctx, a.max_cqe + 1))
    elif case == "srq_wr":
        print(f"# max_srq_wr {a.max_srq_wr}, max_srq_sge {a.max_srq_sge}")
        srq = lambda wr, sge: SRQ(pd, SrqInitAttr(SrqAttr(max_wr=wr, max_sge=sge)))
        srq(a.max_srq_wr, a.max_srq_sge).close()
        ok = refused(lambda: srq(a.max_srq_wr + 1, 1)) and \
            refused(lambda: srq(1, a.max_srq_sge + 1))
    elif case == "rd_atom":
        print(f"# max_qp_rd_atom {a.max_qp_rd_atom}, max_qp_init_rd_atom {a.max_qp_init_rd_atom}")

        def rts(init, dest):
            qp = rc_qp(pd, cq)
            try:
                rc_to_rts(qp, gid_index, qp.qp_num, gid, rd_atomic=init,
                          dest_rd_atomic=dest)
            except PyverbsRDMAError:
                qp.close()
                raise
            return qp

        rts(a.max_qp_init_rd_atom, a.max_qp_rd_atom).close()
        ok = refused(lambda: rts(a.max_qp_init_rd_atom + 1, 1)) and \
            refused(lambda: rts(1, a.max_qp_rd_atom + 1))
    else:
        sys.exit(f"unknown case {case}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
