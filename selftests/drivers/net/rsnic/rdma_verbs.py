# SPDX-License-Identifier: GPL-2.0
"""pyverbs pieces the RDMA checks share (rdma_isolation.py,
rdma_atomic.py, rdma_flush.py, rdma_cq_resize.py)."""

import pyverbs.device as d
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.libibverbs_enums import ibv_access_flags as acc, ibv_mtu
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QPAttr

# Local write, remote write and read.
RW = (acc.IBV_ACCESS_LOCAL_WRITE | acc.IBV_ACCESS_REMOTE_WRITE |
      acc.IBV_ACCESS_REMOTE_READ)
# And remote atomics.
RW_ATOMIC = RW | acc.IBV_ACCESS_REMOTE_ATOMIC


def rc_to_rts(qp, gid_index, peer_qpn, peer_gid, access=RW, rd_atomic=1,
              dest_rd_atomic=None):
    """Moves RC `qp` (port 1, source GID `gid_index`) to RTS toward QP
    `peer_qpn` at `peer_gid`: PSNs 0, 1024-byte MTU, 7 retries; READs
    and atomics outstanding: `rd_atomic` as requester, `dest_rd_atomic`
    (the same if None) as responder."""
    attr = QPAttr(port_num=1, path_mtu=ibv_mtu.IBV_MTU_1024)
    attr.qp_access_flags = access
    attr.dest_qp_num = peer_qpn
    attr.rq_psn = 0
    attr.sq_psn = 0
    attr.max_rd_atomic = rd_atomic
    attr.max_dest_rd_atomic = rd_atomic if dest_rd_atomic is None else dest_rd_atomic
    attr.min_rnr_timer = 12
    attr.timeout = 14
    attr.retry_cnt = 7
    attr.rnr_retry = 7
    gr = GlobalRoute(dgid=peer_gid, sgid_index=gid_index)
    attr.ah_attr = AHAttr(gr=gr, is_global=1, port_num=1)
    qp.to_rts(attr)


class Device:
    """A context on device `name`, a PD, and an MR of `length` bytes with
    `access`; `gid` is the GID at `gid_index` of port 1."""

    def __init__(self, name, gid_index, access, length):
        self.ctx = d.Context(name=name)
        self.name = name
        self.gid_index = gid_index
        self.gid = self.ctx.query_gid(1, gid_index)
        self.pd = PD(self.ctx)
        self.mr = MR(self.pd, length, access)
