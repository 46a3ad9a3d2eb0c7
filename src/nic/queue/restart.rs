// SPDX-License-Identifier: GPL-2.0

//! A queue pair's memory apart from the pair, for the core's queue
//! restart (`netdev_queue_mgmt_ops`): allocated while the pair runs on
//! its old memory, swapped in, and the old memory either freed or, if
//! the new memory does not start, started again.
//!
//! The card knows pairs, not RX queues, so a restart of RX queue `n`
//! restarts pair `n` (as fbnic restarts a whole NAPI vector): its TX
//! ring too, whose frames in flight are freed unsent, as in a reset.

use kernel::{prelude::*, sync::atomic::Relaxed};

use super::{rx::RxPath, rx_doorbells::RxDoorbells, tx::TxSlot, QueueVector, RxState, TxState};
use crate::hw::Cqe;
use crate::linux::{eopnotsupp, net::instance_lock::DevLocked, sync::lock_bh};
use crate::nic::ring::RingIndex;

/// A queue pair's rings and buffers while the card does not know them:
/// allocated ahead of a restart, or taken from a stopped pair (then
/// rewound: nothing posted, nothing in flight, indices at zero, as if
/// just allocated).
pub(crate) struct PairMem {
    pub(super) rx: RxState,
    pub(super) tx: TxState,
}

impl PairMem {
    /// Forgets what the rings held: posted RX buffers go back to their
    /// pool, frames in flight are freed unsent (an AF_XDP socket's as
    /// done), the completion queue is cleared. The card must no longer
    /// use the rings.
    fn rewind(&mut self) -> Result {
        let tx = &mut self.tx;
        tx.drop_xsk_frames();
        for slot in tx.slots.iter_mut() {
            *slot = TxSlot::default();
        }
        tx.ring.head = RingIndex::default();
        tx.ring.tail = RingIndex::default();
        tx.rung = RingIndex::default();
        let rx = &mut self.rx;
        // Entries of the old lap would look valid to the new one.
        let zeros = [0u8; Cqe::SIZE];
        for i in 0..rx.cq.entries as usize {
            rx.cq.mem.write(i * Cqe::SIZE, &zeros)?;
        }
        rx.cq.head = 0;
        rx.cq.phase = true;
        if let RxDoorbells::Page { generation, .. } = &mut rx.doorbells {
            *generation = 0;
        }
        match &mut rx.path {
            RxPath::Ring(ring) => {
                ring.chain = None;
                for buf in ring.bufs.iter_mut() {
                    *buf = None;
                }
                ring.ring.head = RingIndex::default();
                ring.ring.tail = RingIndex::default();
                ring.announced = RingIndex::default();
                Ok(())
            }
            // Refused before a restart begins (`Nic::queue_mem_alloc`).
            RxPath::Stream(_) => Err(eopnotsupp()),
        }
    }
}

impl QueueVector {
    /// Takes the memory of a pair the card no longer runs (destroyed, or
    /// never created): stops polling, unlinks the queues from the NAPI
    /// context (which stays added) and returns the rings rewound. `None`
    /// if the pair had none.
    pub(crate) fn take_mem(&self, locked: &DevLocked) -> Option<PairMem> {
        if self.polling.xchg(0, Relaxed) != 0 {
            self.napi().link_queue(locked, u32::from(self.index), false);
            self.napi().disable(locked);
        }
        let rx = lock_bh(&self.rx).take();
        let tx = lock_bh(&self.tx).take();
        let (Some(rx), Some(tx)) = (rx, tx) else {
            return None;
        };
        let mut mem = PairMem { rx, tx };
        // The context polls again for the pair's next memory, while this
        // may wait to be freed, or start again.
        if let RxPath::Ring(ring) = &mem.rx.path {
            ring.tie_pool(None);
        }
        // A ring that cannot be cleared (a stream) is dropped here.
        mem.rewind().ok()?;
        Some(mem)
    }
}
