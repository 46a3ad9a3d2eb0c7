// SPDX-License-Identifier: GPL-2.0

//! The RX path of a queue pair and its NAPI poll: completions in order,
//! received pages turned into skbs and replaced, TX completions handed to
//! the TX path.

use kernel::{prelude::*, sync::atomic::Relaxed};

use super::{bump, tx::TxDone, QueuePair};
use crate::hw::{regs, Cqe, RxDesc, CQ_ARM};
use crate::linux::net::{
    napi::{Napi, NapiPoll},
    netdev::Feature,
    page_pool::{PagePool, RxPage},
};
use crate::nic::ring::{read_cqe, CompletionQueue, Ring};

/// The completion queue and RX side of a running queue pair (NAPI only).
pub(super) struct RxState {
    pub(super) cq: CompletionQueue,
    pub(super) ring: Ring,
    /// The page posted at each descriptor. Dropped before `pool`.
    pub(super) pages: KVec<Option<RxPage>>,
    pub(super) pool: PagePool,
}

/// The RX offloads the stack has on (`ethtool -K`), read once per poll.
#[derive(Clone, Copy)]
struct RxOffloads {
    /// `rx-checksum`: frames the card verified are `CHECKSUM_UNNECESSARY`.
    csum: bool,
    /// `receive-hashing`: the card's flow hash goes into the skb.
    hash: bool,
}

impl RxState {
    /// Posts fresh pages until the ring is full or an allocation fails
    /// (counted in `alloc_failed`); a later poll tries again. Returns how
    /// many were posted.
    pub(super) fn refill(&mut self, alloc_failed: &kernel::sync::atomic::Atomic<u64>) -> u16 {
        let mut posted = 0;
        while self.ring.free() > 0 {
            let Some(page) = self.pool.alloc() else {
                bump(alloc_failed, 1);
                break;
            };
            if self.post(page).is_err() {
                break;
            }
            posted += 1;
        }
        posted
    }

    /// Posts `page` at the RX tail and advances it.
    pub(super) fn post(&mut self, page: RxPage) -> Result {
        let slot = usize::from(self.ring.tail.get());
        let desc = RxDesc {
            addr: page.frame_addr(),
            len: self.pool.frame_room(),
        };
        self.ring
            .desc
            .write(slot * RxDesc::SIZE, &desc.to_bytes())?;
        self.pages[slot] = Some(page);
        self.ring.tail = self.ring.size.next(self.ring.tail);
        Ok(())
    }
}

impl QueuePair {
    /// Hands the frame of an RX completion to the stack and posts a fresh
    /// page in its place. Runs with `rx` locked but `tx` free (the stack
    /// may transmit).
    fn complete_rx(&self, napi: &Napi, rx: &mut RxState, cqe: Cqe, offloads: RxOffloads) {
        let len = cqe.len;
        let head = usize::from(rx.ring.head.get());
        if rx.ring.size.index(cqe.index) != Some(rx.ring.head)
            || len < 14
            || len > rx.pool.frame_room()
            || rx.pages[head].is_none()
        {
            self.out_of_step(false, cqe.index, len, rx.ring.head.get());
            return;
        }
        rx.ring.head = rx.ring.size.next(rx.ring.head);
        let Some(page) = rx.pages[head].take() else {
            return;
        };
        if cqe.flags & Cqe::FCS_ERR != 0 {
            // Damaged on the wire: dropped, its page straight back to the card.
            bump(&self.stats.rx_crc_errors, 1);
            if rx.post(page).is_err() {
                bump(&self.stats.bad_completions, 1);
            }
            return;
        }
        // Replace the page first; without a replacement the frame is
        // dropped and its page goes straight back to the card, so the
        // ring never runs dry.
        let (deliver, repost) = match rx.pool.alloc() {
            Some(fresh) => (Some(page), fresh),
            None => {
                bump(&self.stats.rx_alloc_failed, 1);
                bump(&self.stats.rx_dropped, 1);
                (None, page)
            }
        };
        if rx.post(repost).is_err() {
            bump(&self.stats.bad_completions, 1);
        }
        let Some(page) = deliver else {
            return;
        };
        match page.into_skb(len) {
            Ok(skb) if cqe.flags & Cqe::GFT_EXCEPTION != 0 => {
                // Not for the stack: the GFT's exception path decides it.
                self.dev.get().data().gft_exception(self.index, skb);
            }
            Ok(mut skb) => {
                if cqe.flags & Cqe::HASH != 0 && offloads.hash {
                    skb.set_hash(cqe.hash, cqe.flags & Cqe::HASH_L4 != 0);
                }
                if cqe.flags & Cqe::CSUM_OK != 0 && offloads.csum {
                    skb.set_csum_unnecessary();
                    bump(&self.stats.rx_csum_unnecessary, 1);
                } else {
                    bump(&self.stats.rx_csum_none, 1);
                }
                bump(&self.stats.rx_packets, 1);
                bump(&self.stats.rx_bytes, u64::from(len));
                skb.receive(napi, self.index);
            }
            Err(page) => {
                drop(page);
                bump(&self.stats.rx_dropped, 1);
            }
        }
    }
}

impl NapiPoll for QueuePair {
    fn poll(&self, napi: &Napi, budget: u32) -> u32 {
        self.polls.fetch_add(1, Relaxed);
        let dev = self.dev.get();
        let features = dev.features();
        let offloads = RxOffloads {
            csum: features.contains(Feature::RxCsum),
            hash: features.contains(Feature::RxHash),
        };
        let mut received = 0;
        let mut guard = self.rx.lock();
        let Some(rx) = &mut *guard else {
            // Stopped meanwhile: nothing to poll, nothing to re-arm.
            drop(guard);
            napi.complete_done(0);
            return 0;
        };
        let rx_tail_before = rx.ring.tail;
        let mut tx_done = TxDone::default();
        while received < budget {
            let Some(cqe) = read_cqe(&rx.cq) else {
                break;
            };
            rx.cq.advance();
            if cqe.flags & Cqe::RX != 0 {
                self.complete_rx(napi, rx, cqe, offloads);
                received += 1;
            } else {
                self.complete_tx(dev, cqe, &mut tx_done);
            }
        }
        if tx_done.packets > 0 && super::tx_batching() {
            dev.tx_completed(self.index, tx_done.packets, tx_done.bytes);
        }
        // A ring that could not be filled (allocations failed at start or
        // since) gets what it lacks.
        if rx.ring.free() > 0 {
            rx.refill(&self.stats.rx_alloc_failed);
        }
        if rx.ring.tail != rx_tail_before {
            self.doorbell(regs::DB_RX_TAIL, u32::from(rx.ring.tail.get()));
        }
        let head = rx.cq.head;
        drop(guard);
        if received < budget && napi.complete_done(received) {
            self.doorbell(regs::DB_CQ_HEAD, head | CQ_ARM);
        } else {
            self.doorbell(regs::DB_CQ_HEAD, head);
        }
        received
    }
}
