// SPDX-License-Identifier: GPL-2.0

//! How a queue pair tells the card its RX tail and how far it read the
//! completion queue: trapped BAR0 doorbells, or (a card with
//! `hw::feature::RX_CQ_IN_PAGE`) words in the doorbell page that the card
//! reads when it needs them.
//!
//! In the page the driver's writes cost no exit to the card: the card
//! reads the RX tail when it runs out of buffers it knows of, and the
//! completion-queue word each time it decides whether to interrupt. It
//! does not see the write happen, so a driver that arms the interrupt
//! must itself look for a completion the card wrote before it saw the
//! arm (virtio's event index works the same way).

use kernel::sync::{
    barrier::{smp_mb, smp_wmb},
    Arc,
};

use super::{
    rx::{RingRx, RxState},
    QueuePair,
};
use crate::hw::{db_page, CqHead, CqWord, QpDoorbell};
use crate::linux::dma::DmaBuffer;
use crate::nic::ring::read_cqe;

/// Where a running pair's RX tail and completion-queue head go.
pub(super) enum RxDoorbells {
    /// Trapped doorbell writes.
    Trapped,
    /// The pair's words in the doorbell page.
    Page {
        page: Arc<DmaBuffer>,
        /// Of the last CQ word written ([`CqWord::generation`]).
        generation: u32,
    },
}

impl QueuePair {
    /// Tells the card of the buffers posted on `ring` since it was last
    /// told: in the page at once (a store), by doorbell in batches.
    pub(super) fn announce_rx_tail(&self, doorbells: &RxDoorbells, ring: &mut RingRx) {
        match doorbells {
            RxDoorbells::Trapped => {
                if let Some(tail) = ring.tail_to_announce() {
                    self.doorbell(QpDoorbell::RxTail, u32::from(tail.get()));
                }
            }
            RxDoorbells::Page { page, .. } => {
                if ring.announced != ring.ring.tail {
                    let tail = ring.announce_all();
                    // The descriptors before the tail that announces them.
                    smp_wmb();
                    // The page is the pair's own and in bounds; a failed
                    // store cannot happen, and would only leave the card
                    // short of buffers.
                    let _ =
                        page.write_position(db_page::rx_tail(self.index), u32::from(tail.get()));
                }
            }
        }
    }

    /// Tells the card how far the completion queue of `rx` was read and,
    /// with `arm`, to interrupt at the next completion. Returns whether
    /// the caller must poll again: it armed in the page and a completion
    /// was already there (written before the card could see the arm,
    /// so it raises nothing for it).
    pub(super) fn announce_cq_head(&self, rx: &mut RxState, arm: bool) -> bool {
        let head = rx.cq.head;
        match &mut rx.doorbells {
            RxDoorbells::Trapped => {
                self.doorbell(
                    QpDoorbell::CqHead,
                    CqHead::zero().with_head(head).with_arm(arm).raw(),
                );
                false
            }
            RxDoorbells::Page { page, generation } => {
                *generation = generation.wrapping_add(1);
                let word = CqWord::zero()
                    .with_head(head)
                    .with_generation(*generation)
                    .with_arm(arm);
                let _ = page.write_position(db_page::cq_word(self.index), word.raw());
                // The arm's store before the look at the queue: the card
                // writes a completion, fences, then reads the word, so
                // one of the two sees the other's store.
                smp_mb();
                arm && read_cqe(&rx.cq).is_some()
            }
        }
    }
}
