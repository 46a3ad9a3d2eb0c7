// SPDX-License-Identifier: GPL-2.0

//! The TX path of a queue pair: mapping an skb's parts, writing their
//! descriptors, the doorbell, and retiring frames the card completed.

use kernel::prelude::*;

use super::{bump, QueuePair};
use crate::hw::{regs, Cqe, TxDesc};
use crate::linux::{
    dma::DmaDevice,
    net::{dma_map::TxMapping, netdev::NetDev, skbuff::SkBuff},
    sync::lock_bh,
};
use crate::nic::{
    ring::{Ring, RingIndex},
    Nic,
};

/// Most descriptors one TX frame takes: its head and `MAX_SKB_FRAGS`
/// (17) fragments; a frame with more fragments is linearised first. The
/// queue stops while fewer descriptors than this are free.
pub(super) const TX_MAX_DESCS: u16 = 18;

/// What the driver holds for one TX descriptor until the card completes it.
#[derive(Default)]
pub(super) struct TxSlot {
    /// The part of the frame the descriptor points at.
    mapping: Option<TxMapping>,
    /// On a frame's last descriptor: the skb, freed at its completion.
    skb: Option<SkBuff>,
    /// On a frame's last descriptor: the bytes byte queue limits counted
    /// for it (none for a GFT reinjection, which the stack did not send).
    bql_bytes: Option<u32>,
}

/// Frames and bytes the card finished, for byte queue limits.
#[derive(Default)]
pub(super) struct TxDone {
    pub(super) packets: u32,
    pub(super) bytes: u32,
}

/// The TX side of a running queue pair (xmit and TX completions).
pub(super) struct TxState {
    pub(super) ring: Ring,
    /// Declared after `ring` but dropped before `dma`: mappings unmap.
    pub(super) slots: KVec<TxSlot>,
    pub(super) dma: DmaDevice,
    pub(super) csum: bool,
    /// The tail the card was last told (the doorbell): frames past it
    /// wait for the end of the stack's batch.
    pub(super) rung: RingIndex,
}

impl TxState {
    /// Maps every part of `skb` and writes its descriptors from the tail,
    /// offload requests in the first. Returns the index of the last one;
    /// the tail moves only on success.
    fn post(&mut self, skb: &SkBuff, offloads: TxDesc) -> Result<RingIndex> {
        let head = TxMapping::head(&self.dma, skb)?;
        let parts = u16::from(head.is_some()) + u16::try_from(skb.nr_frags())?;
        if parts == 0 || parts > self.ring.free() {
            return Err(EINVAL);
        }
        let mut idx = self.ring.tail;
        let mut frags = 0..skb.nr_frags();
        let mut head = head;
        let mut written = 0u16;
        let result = loop {
            let mapping = match head.take() {
                Some(m) => m,
                None => match frags.next().map(|i| TxMapping::frag(&self.dma, skb, i)) {
                    Some(Ok(m)) => m,
                    Some(Err(e)) => break Err(e),
                    None => break Err(EINVAL),
                },
            };
            written += 1;
            let first = written == 1;
            let last = written == parts;
            let mut desc = if first { offloads } else { TxDesc::default() };
            desc.addr = mapping.addr();
            desc.len = mapping.len();
            if last {
                desc.flags |= TxDesc::EOP;
            }
            let slot = usize::from(idx.get());
            if let Err(e) = self.ring.desc.write(slot * TxDesc::SIZE, &desc.to_bytes()) {
                break Err(e);
            }
            self.slots[slot].mapping = Some(mapping);
            if last {
                break Ok(idx);
            }
            idx = self.ring.size.next(idx);
        };
        match result {
            Ok(last) => self.ring.tail = self.ring.size.next(last),
            Err(_) => {
                // Unmap what was mapped; the card never saw these slots.
                let mut i = self.ring.tail;
                for _ in 0..written {
                    self.slots[usize::from(i.get())].mapping = None;
                    i = self.ring.size.next(i);
                }
            }
        }
        result
    }
}

impl QueuePair {
    /// Sends one frame on this queue pair. The doorbell waits while the
    /// stack says more frames follow (`xmit_more`), so a batch costs one.
    pub(crate) fn xmit(&self, dev: &NetDev<Nic>, skb: SkBuff) {
        let batching = super::tx_batching();
        let more = batching && dev.xmit_more();
        let mut guard = self.tx.lock();
        let Some(state) = &mut *guard else {
            bump(&self.stats.tx_dropped, 1);
            return;
        };
        let ring_now = self.queue_frame(dev, state, skb, more);
        if ring_now && state.rung != state.ring.tail {
            state.rung = state.ring.tail;
            bump(&self.stats.tx_doorbells, 1);
            self.doorbell(regs::DB_TX_TAIL, u32::from(state.rung.get()));
        }
    }

    /// Puts one frame on the ring (or drops it, counted). Returns whether
    /// the card must be told now: no more frames follow, or the queue
    /// stopped.
    fn queue_frame(
        &self,
        dev: &NetDev<Nic>,
        state: &mut TxState,
        mut skb: SkBuff,
        more: bool,
    ) -> bool {
        if skb.nr_frags() >= u32::from(TX_MAX_DESCS) && skb.linearize().is_err() {
            bump(&self.stats.tx_dropped, 1);
            return !more;
        }
        if state.ring.free() < TX_MAX_DESCS {
            // The queue stops while fewer are free; this is a race with
            // a resize. Drop rather than ask the stack to retry.
            bump(&self.stats.tx_busy, 1);
            dev.tx_stop(self.index);
            return true;
        }
        let len = skb.len();
        let mut offloads = TxDesc::default();
        if let Some(csum) = skb.csum_request().filter(|_| state.csum) {
            offloads.flags |= TxDesc::CSUM;
            offloads.csum_start = csum.start;
            offloads.csum_offset = csum.offset;
        }
        // The wire carries one header per segment: count what it carries.
        let (packets, bytes) = match skb.tso_request() {
            Some(tso) if offloads.flags & TxDesc::CSUM != 0 => {
                offloads.flags |= TxDesc::TSO;
                offloads.mss = tso.mss;
                offloads.hdr_len = tso.hdr_len;
                let segs = u32::from(tso.segs.max(1));
                let wire = len + (segs - 1) * u32::from(tso.hdr_len);
                bump(&self.stats.tx_tso, 1);
                bump(&self.stats.tx_tso_bytes, u64::from(len));
                bump(&self.stats.tx_tso_segs, u64::from(segs));
                bump(&self.stats.tx_tso_seg_bytes, u64::from(wire));
                (segs, wire)
            }
            Some(_) => {
                // TSO needs the checksum offload; the stack never asks for
                // one without the other.
                bump(&self.stats.tx_dropped, 1);
                return !more;
            }
            None => (1, len),
        };
        let Ok(last) = state.post(&skb, offloads) else {
            bump(&self.stats.tx_dropped, 1);
            return !more;
        };
        // Counted in wire packets, as `tx_packets` is.
        if offloads.flags & TxDesc::CSUM != 0 {
            bump(&self.stats.tx_needs_csum, u64::from(packets));
        } else {
            bump(&self.stats.tx_csum_none, u64::from(packets));
        }
        bump(&self.stats.tx_packets, u64::from(packets));
        bump(&self.stats.tx_bytes, u64::from(bytes));
        let slot = &mut state.slots[usize::from(last.get())];
        slot.skb = Some(skb);
        slot.bql_bytes = Some(len);
        if state.ring.free() < TX_MAX_DESCS {
            bump(&self.stats.tx_stops, 1);
            dev.tx_stop(self.index);
        }
        if !super::tx_batching() {
            return true;
        }
        dev.tx_sent(self.index, len, more)
    }

    /// Sends a GFT exception back to the card (its header already replaced
    /// by the reinjection header). Process context. Returns whether it was
    /// posted; a full or stopped ring drops it (the stack's frames keep
    /// their room: the queue is not stopped for this).
    pub(crate) fn reinject(&self, skb: SkBuff) -> bool {
        let mut guard = lock_bh(&self.tx);
        let Some(state) = &mut *guard else {
            return false;
        };
        if state.ring.free() < 2 * TX_MAX_DESCS {
            return false;
        }
        let offloads = TxDesc {
            flags: TxDesc::GFT_REINJECT,
            ..TxDesc::default()
        };
        let Ok(last) = state.post(&skb, offloads) else {
            return false;
        };
        state.slots[usize::from(last.get())].skb = Some(skb);
        // Also tells the card of any stack frames still waiting for the
        // end of their batch: harmless, they are complete.
        state.rung = state.ring.tail;
        bump(&self.stats.tx_doorbells, 1);
        self.doorbell(regs::DB_TX_TAIL, u32::from(state.rung.get()));
        true
    }

    /// Retires the TX frame whose last descriptor a completion names:
    /// unmaps its parts, frees its skb, adds it to `done` (for byte queue
    /// limits), and wakes the queue if it stopped for lack of room.
    pub(super) fn complete_tx(&self, dev: &NetDev<Nic>, cqe: Cqe, done: &mut TxDone) {
        let mut guard = self.tx.lock();
        let Some(state) = &mut *guard else {
            return;
        };
        let tx = &mut state.ring;
        let last = match tx.size.index(cqe.index) {
            Some(last)
                if tx.size.distance(tx.head, last) < tx.in_flight()
                    && state.slots[usize::from(last.get())].skb.is_some() =>
            {
                last
            }
            _ => {
                let expected = tx.head.get();
                drop(guard);
                self.out_of_step(true, cqe.index, cqe.len, expected);
                return;
            }
        };
        loop {
            let slot = core::mem::take(&mut state.slots[usize::from(tx.head.get())]);
            let at_last = tx.head == last;
            tx.head = tx.size.next(tx.head);
            drop(slot.mapping);
            if let Some(skb) = slot.skb {
                skb.consume();
            }
            if let Some(bytes) = slot.bql_bytes {
                done.packets += 1;
                done.bytes += bytes;
            }
            if at_last {
                break;
            }
        }
        // Under the lock, so a concurrent xmit cannot stop the queue
        // between this check and the wake.
        if tx.free() >= TX_MAX_DESCS && dev.tx_stopped(self.index) {
            bump(&self.stats.tx_wakes, 1);
            dev.tx_wake(self.index);
        }
    }
}
