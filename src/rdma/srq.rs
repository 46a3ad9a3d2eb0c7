// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues: one ring of receive requests that many RC QPs
//! take from, whichever QP a SEND arrives on (nvmet-rdma's `use_srq`,
//! `ibv_srq_pingpong`), with the limit event that tells its user to post
//! more.

use kernel::{prelude::*, sync::Mutex};

use super::device::RdmaDev;
use super::qp::recv_wqe;
use super::ring::RingMem;
use crate::hw::rdma::{db, RQ_WQE_LEN};
use crate::linux::{rdma::verbs::RecvWrs, sync::lock_irqsave};

/// A shared receive queue's driver state.
#[pin_data]
pub(crate) struct RdmaSrq {
    /// SRQ number.
    pub(crate) srqn: u32,
    /// Its ring ([`RQ_WQE_LEN`]-byte entries).
    pub(crate) ring: RingMem,
    /// Slots in use (a power of two); held across a resize.
    #[pin]
    pub(crate) entries: Mutex<u32>,
    /// Room of the ring, in entries: a process's SRQ has room for
    /// `max_srq_wr` and can grow to it; a kernel SRQ's room is its size.
    pub(crate) max_entries: u32,
    /// Scatter/gather entries of one request.
    pub(crate) max_sge: u32,
}

/// `post_srq_recv`: each request goes to the next slot of the ring if
/// that slot's last request completed (`ENOMEM` otherwise: the SRQ is
/// full); one doorbell for the batch.
pub(crate) fn post_recv(dev: &RdmaDev, srq: &RdmaSrq, wrs: &mut RecvWrs<'_>) -> Result {
    let ring = srq.ring.kernel()?;
    let mut tables = lock_irqsave(dev.tables());
    let entry = tables.srq(srq.srqn).ok_or(EINVAL)?;
    let start = entry.ring.head;
    let mut result = Ok(());
    for wr in wrs {
        let Some(slot) = entry.ring.next_free() else {
            result = Err(ENOMEM);
            break;
        };
        let written = recv_wqe(&wr).and_then(|w| ring.write(slot * RQ_WQE_LEN, &w.to_bytes()));
        if let Err(e) = written {
            result = Err(e);
            break;
        }
        entry.ring.post(slot, wr.wr_id);
    }
    let head = entry.ring.head;
    drop(tables);
    if head != start {
        let _ = dev.doorbell(db::SRQ, srq.srqn | u32::from(head) << 16);
    }
    result
}
