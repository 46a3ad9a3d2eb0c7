// SPDX-License-Identifier: GPL-2.0

//! The RX path of a queue pair and its NAPI poll: completions in order,
//! received pages turned into skbs and replaced, TX completions handed to
//! the TX path.

use kernel::{
    prelude::*,
    sync::{atomic::Relaxed, rcu},
};

use super::{bump, tx::TxDone, QueuePair};
use crate::hw::{regs, Cqe, RxDesc, CQ_ARM};
use crate::linux::net::{
    napi::{Napi, NapiPoll},
    netdev::Feature,
    page_pool::{PagePool, RxPage},
    xdp::{rss_type, xdp_flush, XdpDrop, XdpProgRef, XdpRxHash, XdpRxq, XdpVerdict},
};
use crate::nic::ring::{read_cqe, CompletionQueue, Ring};

/// The completion queue and RX side of a running queue pair (NAPI only).
pub(super) struct RxState {
    pub(super) cq: CompletionQueue,
    pub(super) ring: Ring,
    /// The page posted at each descriptor. Dropped before `pool`.
    pub(super) pages: KVec<Option<RxPage>>,
    /// The queue as XDP programs see it. Dropped before `pool`.
    pub(super) xdp_rxq: XdpRxq,
    pub(super) pool: PagePool,
}

/// What one poll works with: the RX offloads the stack has on
/// (`ethtool -K`) and the XDP program, read once per poll, and what XDP
/// left to do at its end.
struct PollCtx<'a> {
    /// `rx-checksum`: frames the card verified are `CHECKSUM_UNNECESSARY`.
    csum: bool,
    /// `receive-hashing`: the card's flow hash goes into the skb.
    hash: bool,
    xdp: Option<XdpProgRef<'a>>,
    /// Frames were redirected: flush them on their way.
    redirected: bool,
    /// `XDP_TX` frames wait for the TX doorbell.
    xdp_tx: bool,
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

/// The card's flow hash of a frame as XDP programs read it: the hash, and
/// what it covered (the card says whether the ports were in it; the
/// frame's headers say which protocols).
fn xdp_rx_hash(frame: &[u8], cqe: Cqe) -> XdpRxHash {
    let ethertype = frame.get(12..14).map(|t| u16::from_be_bytes([t[0], t[1]]));
    let (l3, proto) = match ethertype {
        Some(0x0800) => (rss_type::L3_IPV4, frame.get(14 + 9)),
        Some(0x86dd) => (rss_type::L3_IPV6, frame.get(14 + 6)),
        _ => (0, None),
    };
    let l4 = if cqe.flags & Cqe::HASH_L4 == 0 {
        0
    } else {
        rss_type::L4
            | match proto {
                Some(6) => rss_type::L4_TCP,
                Some(17) => rss_type::L4_UDP,
                _ => 0,
            }
    };
    XdpRxHash {
        hash: cqe.hash,
        kind: l3 | l4,
    }
}

impl QueuePair {
    /// Hands the frame of an RX completion to the stack and posts a fresh
    /// page in its place. Runs with `rx` locked but `tx` free (the stack
    /// may transmit).
    fn complete_rx(&self, napi: &Napi, rx: &mut RxState, cqe: Cqe, ctx: &mut PollCtx<'_>) {
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
        let Ok(frame) = page.received(len) else {
            // Longer than a buffer holds: checked above, never happens.
            bump(&self.stats.rx_dropped, 1);
            return;
        };
        if cqe.flags & Cqe::GFT_EXCEPTION != 0 {
            // Not for the stack (nor XDP): the GFT's exception path decides it.
            match frame.into_skb() {
                Ok(skb) => self.dev.get().data().gft_exception(self.index, skb),
                Err(_) => bump(&self.stats.rx_dropped, 1),
            }
            return;
        }
        // Received, whatever XDP decides: it is the stack's first layer.
        bump(&self.stats.rx_packets, 1);
        bump(&self.stats.rx_bytes, u64::from(len));
        let verdict = match ctx.xdp {
            Some(prog) => {
                let hash = (cqe.flags & Cqe::HASH != 0 && ctx.hash)
                    .then(|| xdp_rx_hash(frame.bytes(), cqe));
                frame.run_xdp(prog, &rx.xdp_rxq, hash)
            }
            None => XdpVerdict::Pass(frame),
        };
        let frame = match verdict {
            XdpVerdict::Pass(frame) => {
                if ctx.xdp.is_some() {
                    bump(&self.stats.xdp_pass, 1);
                }
                frame
            }
            XdpVerdict::Tx(frame) => {
                if self.xdp_tx(frame) {
                    bump(&self.stats.xdp_tx, 1);
                    ctx.xdp_tx = true;
                } else {
                    bump(&self.stats.xdp_tx_errors, 1);
                }
                return;
            }
            XdpVerdict::Redirected => {
                bump(&self.stats.xdp_redirect, 1);
                ctx.redirected = true;
                return;
            }
            XdpVerdict::Dropped(why) => {
                bump(
                    match why {
                        XdpDrop::Drop => &self.stats.xdp_drop,
                        XdpDrop::Aborted => &self.stats.xdp_aborted,
                        XdpDrop::RedirectFailed => &self.stats.xdp_redirect_errors,
                    },
                    1,
                );
                return;
            }
        };
        match frame.into_skb() {
            Ok(mut skb) => {
                if cqe.flags & Cqe::HASH != 0 && ctx.hash {
                    skb.set_hash(cqe.hash, cqe.flags & Cqe::HASH_L4 != 0);
                }
                if cqe.flags & Cqe::CSUM_OK != 0 && ctx.csum {
                    skb.set_csum_unnecessary();
                    bump(&self.stats.rx_csum_unnecessary, 1);
                } else {
                    bump(&self.stats.rx_csum_none, 1);
                }
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
        let rcu = rcu::read_lock();
        let mut ctx = PollCtx {
            csum: features.contains(Feature::RxCsum),
            hash: features.contains(Feature::RxHash),
            xdp: dev.data().xdp.get(&rcu),
            redirected: false,
            xdp_tx: false,
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
                self.complete_rx(napi, rx, cqe, &mut ctx);
                received += 1;
            } else {
                self.complete_tx(dev, cqe, &mut tx_done);
            }
        }
        if ctx.redirected {
            xdp_flush();
        }
        if ctx.xdp_tx {
            self.ring_xdp_tx();
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
