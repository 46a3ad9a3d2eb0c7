#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Parent domains (ibv_alloc_parent_domain) on an RDMA device, with
pyverbs: what the provider refuses and what acts on the PD beneath.

Usage: rdma_parent_domain.py IBDEV

Checks, each printed: a parent domain over a PD, with allocators, is
made, and an MR registers through it; a parent domain over a parent
domain is refused (EINVAL); an extended CQ on the parent domain is
made. Traffic through parent domains is rdma-core's test_parent_domain's
(rdma_core.sh).
Exit status 0 when all hold.
"""

import errno
import sys

import pyverbs.device as d
import pyverbs.mem_alloc as mem
from pyverbs.cq import CQEX, CqInitAttrEx
from pyverbs.libibverbs_enums import IBV_WC_STANDARD_FLAGS
from pyverbs.libibverbs_enums import ibv_access_flags as acc
from pyverbs.libibverbs_enums import ibv_cq_init_attr_mask as cq_mask
from pyverbs.mr import MR
from pyverbs.pd import PD, ParentDomain, ParentDomainContext, ParentDomainInitAttr
from pyverbs.pyverbs_error import PyverbsRDMAError


def alloc(pd, context, size, alignment, resource_type):
    return mem.posix_memalign(size, alignment)


def free(pd, context, ptr, resource_type):
    mem.free(ptr)


def refused(what, errno_want, make):
    try:
        make()
    except PyverbsRDMAError as e:
        if e.error_code != errno_want:
            raise SystemExit(f"{what}: errno {e.error_code}, "
                             f"want {errno_want}")
        print(f"# {what}: refused, {errno.errorcode[errno_want]}")
        return
    raise SystemExit(f"{what}: made, not refused")


def main(name):
    ctx = d.Context(name=name)
    pd = PD(ctx)
    pdc = ParentDomainContext(pd, alloc, free)
    parent = ParentDomain(ctx, ParentDomainInitAttr(pd=pd, pd_context=pdc))
    print("# a parent domain over a PD, with allocators: made")
    mr = MR(parent, 4096, acc.IBV_ACCESS_LOCAL_WRITE)
    print(f"# an MR through it: lkey {mr.lkey:#x}")
    refused("a parent domain over a parent domain", errno.EINVAL,
            lambda: ParentDomain(ctx, ParentDomainInitAttr(pd=parent)))
    flags = cq_mask.IBV_CQ_INIT_ATTR_MASK_FLAGS | cq_mask.IBV_CQ_INIT_ATTR_MASK_PD
    # (A plain PD as an extended CQ's parent domain cannot be tried from
    # pyverbs: its CQEX takes a reference on the "parent domain" before it
    # looks at the result, and a plain PD refuses that reference.)
    CQEX(ctx, CqInitAttrEx(cqe=16, wc_flags=IBV_WC_STANDARD_FLAGS,
                           parent_domain=parent, comp_mask=flags))
    print("# an extended CQ on the parent domain: made")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(sys.argv[1])
