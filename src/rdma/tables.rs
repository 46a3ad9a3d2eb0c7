// SPDX-License-Identifier: GPL-2.0

//! What completions and events are resolved against: the CQs, QPs and
//! SRQs by number, and each queue's bookkeeping (which request sits in
//! which slot). Shared by the verbs, the CQ poller and the event
//! interrupt, so it lives under one spinlock taken with interrupts off.

use kernel::prelude::*;

use crate::linux::rdma::verbs::{CqHandle, QpHandle, SrqHandle, WcStatus};

/// A free-running 16-bit ring index.
pub(crate) type RingIndex = u16;

/// One work queue as the driver tracks it: where the next request goes
/// (`head`), what the card finished (`tail`), and each slot's `wr_id`.
pub(crate) struct WorkRing {
    /// Entries (power of two).
    pub(crate) entries: u32,
    /// Next slot to fill.
    pub(crate) head: RingIndex,
    /// Oldest slot not completed.
    pub(crate) tail: RingIndex,
    /// The `wr_id` of each slot.
    pub(crate) wr_ids: KVec<u64>,
}

impl WorkRing {
    /// A ring of `entries` slots.
    pub(crate) fn new(entries: u32) -> Result<Self> {
        let mut wr_ids = KVec::with_capacity(entries as usize, GFP_KERNEL)?;
        wr_ids.resize(entries as usize, 0, GFP_KERNEL)?;
        Ok(Self {
            entries,
            head: 0,
            tail: 0,
            wr_ids,
        })
    }

    /// Requests posted and not completed.
    pub(crate) fn in_flight(&self) -> u32 {
        u32::from(self.head.wrapping_sub(self.tail))
    }

    /// Whether another request fits.
    pub(crate) fn has_room(&self) -> bool {
        self.in_flight() < self.entries
    }

    /// The slot of `index`.
    pub(crate) fn slot(&self, index: RingIndex) -> usize {
        (u32::from(index) & (self.entries - 1)) as usize
    }

    /// The card completed the request in `slot` (and, as queues complete
    /// in order, every one before it). Returns its `wr_id`, or `None` if
    /// no posted request sits there: a completion the driver cannot
    /// believe.
    pub(crate) fn complete(&mut self, slot: u16) -> Option<u64> {
        let slot = u32::from(slot);
        if slot >= self.entries {
            return None;
        }
        let ahead = (slot.wrapping_sub(u32::from(self.tail))) & (self.entries - 1);
        if ahead >= self.in_flight() {
            return None;
        }
        self.tail = self.tail.wrapping_add(ahead as u16 + 1);
        self.wr_ids.get(slot as usize).copied()
    }
}

/// A shared receive queue's ring as the driver tracks it. The card takes
/// entries in ring order, but they complete in any order (a SEND to one
/// QP may finish before an earlier one to another), so each slot is
/// tracked alone: the next post waits for its slot's completion.
pub(crate) struct SharedRing {
    /// Next slot to fill.
    pub(crate) head: RingIndex,
    /// The `wr_id` of each slot with a request posted and not completed.
    pub(crate) wr_ids: KVec<Option<u64>>,
}

impl SharedRing {
    /// A ring of `entries` slots (a power of two).
    pub(crate) fn new(entries: u32) -> Result<Self> {
        let mut wr_ids = KVec::with_capacity(entries as usize, GFP_KERNEL)?;
        wr_ids.resize(entries as usize, None, GFP_KERNEL)?;
        Ok(Self { head: 0, wr_ids })
    }

    /// The slot the next request goes to, if its last one completed.
    pub(crate) fn next_free(&self) -> Option<usize> {
        let slot = usize::from(self.head) & self.wr_ids.len().wrapping_sub(1);
        matches!(self.wr_ids.get(slot), Some(None)).then_some(slot)
    }

    /// Records a request in `slot` (from [`SharedRing::next_free`]).
    pub(crate) fn post(&mut self, slot: usize, wr_id: u64) {
        if let Some(s) = self.wr_ids.get_mut(slot) {
            *s = Some(wr_id);
            self.head = self.head.wrapping_add(1);
        }
    }

    /// The card completed the request in `slot`: its `wr_id`, or `None`
    /// if none is posted there.
    pub(crate) fn complete(&mut self, slot: u16) -> Option<u64> {
        self.wr_ids.get_mut(usize::from(slot))?.take()
    }
}

/// An SRQ's entry.
pub(crate) struct SrqEntry {
    /// ib_core's SRQ.
    pub(crate) handle: SrqHandle,
    /// Its ring (a process's SRQ: unused, the process tracks its own).
    pub(crate) ring: SharedRing,
    /// The armed limit (0: none); the card disarms it as it fires.
    pub(crate) limit: u32,
}

/// A QP's entry.
pub(crate) struct QpEntry {
    /// ib_core's QP.
    pub(crate) handle: QpHandle,
    /// Send queue.
    pub(crate) sq: WorkRing,
    /// Receive queue (no slots with an SRQ).
    pub(crate) rq: WorkRing,
    /// The SRQ it receives from.
    pub(crate) srq: Option<u32>,
}

/// Completions with an error status, as mlx5 counts them: requester
/// (send queue) and responder (receive queue), flushes apart.
#[derive(Clone, Copy, Default)]
pub(crate) struct CqeErrors {
    /// Send completions that failed.
    pub(crate) req: u64,
    /// Send completions flushed (the QP was in error).
    pub(crate) req_flush: u64,
    /// Receive completions that failed.
    pub(crate) resp: u64,
    /// Receive completions flushed.
    pub(crate) resp_flush: u64,
}

impl CqeErrors {
    /// Counts a completion of a send (`recv` false) or receive WQE that
    /// was reported to the ULP with `status`.
    pub(crate) fn count(&mut self, recv: bool, status: WcStatus) {
        let counter = match (recv, status) {
            (_, WcStatus::Success) => return,
            (false, WcStatus::WrFlushErr) => &mut self.req_flush,
            (false, _) => &mut self.req,
            (true, WcStatus::WrFlushErr) => &mut self.resp_flush,
            (true, _) => &mut self.resp,
        };
        *counter += 1;
    }
}

/// The CQs and QPs of a device, by number.
pub(crate) struct Tables {
    /// CQs.
    pub(crate) cqs: KVec<Option<CqHandle>>,
    /// QPs.
    pub(crate) qps: KVec<Option<QpEntry>>,
    /// SRQs.
    pub(crate) srqs: KVec<Option<SrqEntry>>,
    /// Completions and events naming no object, or a slot with nothing
    /// posted: the card's word not taken.
    pub(crate) bogus: u64,
    /// Completions reported with an error status.
    pub(crate) cqe_errors: CqeErrors,
}

impl Tables {
    /// Room for `cqs` CQs, `qps` QPs and `srqs` SRQs.
    pub(crate) fn new(cqs: u32, qps: u32, srqs: u32) -> Result<Self> {
        fn slots<E>(n: u32) -> Result<KVec<Option<E>>> {
            let mut v = KVec::with_capacity(n as usize, GFP_KERNEL)?;
            for _ in 0..n {
                v.push(None, GFP_KERNEL)?;
            }
            Ok(v)
        }
        Ok(Self {
            cqs: slots(cqs)?,
            qps: slots(qps)?,
            srqs: slots(srqs)?,
            bogus: 0,
            cqe_errors: CqeErrors::default(),
        })
    }

    /// The QP `qpn`, if it exists.
    pub(crate) fn qp(&mut self, qpn: u32) -> Option<&mut QpEntry> {
        self.qps.get_mut(qpn as usize).and_then(Option::as_mut)
    }

    /// The SRQ `srqn`, if it exists.
    pub(crate) fn srq(&mut self, srqn: u32) -> Option<&mut SrqEntry> {
        self.srqs.get_mut(srqn as usize).and_then(Option::as_mut)
    }

    /// Resolves a receive completion of QP `qpn` in `slot` of its own
    /// queue or (`shared`) of its SRQ's ring: the request's `wr_id` and
    /// the QP's handle, or `None` for a completion the driver cannot
    /// believe.
    pub(crate) fn complete_recv(
        &mut self,
        qpn: u32,
        slot: u16,
        shared: bool,
    ) -> Option<(u64, &QpHandle)> {
        let entry = self.qps.get_mut(qpn as usize)?.as_mut()?;
        let wr_id = match (shared, entry.srq) {
            (false, None) => entry.rq.complete(slot)?,
            (true, Some(srqn)) => self
                .srqs
                .get_mut(srqn as usize)?
                .as_mut()?
                .ring
                .complete(slot)?,
            _ => return None,
        };
        Some((wr_id, &entry.handle))
    }
}
