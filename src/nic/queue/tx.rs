// SPDX-License-Identifier: GPL-2.0

//! The TX path of a queue pair: mapping an skb's parts, writing their
//! descriptors, the doorbell, and retiring frames the card completed.

use kernel::{
    prelude::*,
    sync::atomic::{Acquire, Release},
};

use super::{bump, QueuePair};
use crate::admin::publish_to_polling_card;
use crate::hw::{db_page, Cqe, QpDoorbell, TxDesc};
use crate::linux::{
    dma::DmaDevice,
    net::{
        dma_map::TxMapping,
        netdev::NetDev,
        page_pool::RxFrame,
        skbuff::{GsoKind, SkBuff},
        xdp::XdpFrame,
        xsk::XskPool,
    },
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

/// A frame on the TX ring, released when the card completes it.
enum TxFrame {
    /// From the stack (or a GFT reinjection): freed.
    Skb(SkBuff),
    /// `XDP_TX`: a received frame sent back from its own page, which goes
    /// back to its pool.
    Xdp(RxFrame),
    /// Redirected here by another device's XDP program, or copied out of
    /// an AF_XDP buffer for `XDP_TX`: returned to its owner.
    Redirected(XdpFrame),
    /// From an AF_XDP socket's TX ring (zero copy): reported done to its
    /// pool, in order.
    Xsk,
}

/// What the driver holds for one TX descriptor until the card completes it.
#[derive(Default)]
pub(super) struct TxSlot {
    /// The part of an skb the descriptor points at.
    mapping: Option<TxMapping>,
    /// On a frame's last descriptor: the frame.
    frame: Option<TxFrame>,
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

/// AF_XDP frames one poll sends at most (more wait for the next poll).
pub(super) const XSK_TX_BUDGET: u32 = 64;

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
    /// The AF_XDP pool bound to this queue in zero-copy mode: its
    /// socket's TX ring feeds this one.
    pub(super) xsk: Option<XskPool>,
}

impl TxState {
    /// Gives the AF_XDP socket's frames still on the ring back to it as
    /// done (unsent: the ring is going away), so user space gets its
    /// buffers back.
    pub(super) fn drop_xsk_frames(&mut self) {
        let mut n = 0;
        for slot in self.slots.iter_mut() {
            if matches!(slot.frame, Some(TxFrame::Xsk)) {
                slot.frame = None;
                n += 1;
            }
        }
        if let Some(pool) = self.xsk.as_ref().filter(|_| n > 0) {
            pool.tx_completed(n);
        }
    }

    /// Whether a frame of one buffer for XDP fits beside what the stack
    /// may still send.
    fn room_for_xdp(&self) -> bool {
        self.ring.free() >= 2 * TX_MAX_DESCS
    }

    /// Puts a frame of one buffer (`addr`, `len`; `mapping` if the driver
    /// mapped it) on the ring for XDP, keeping room for what the stack
    /// may still send ([`Self::room_for_xdp`]). Gives the frame back
    /// without room.
    fn post_xdp<F>(
        &mut self,
        addr: kernel::dma::DmaAddress,
        len: u32,
        frame: F,
        slot_frame: impl FnOnce(F) -> TxFrame,
        mapping: Option<TxMapping>,
    ) -> Result<(), F> {
        if !self.room_for_xdp() {
            return Err(frame);
        }
        let desc = TxDesc {
            addr,
            len,
            flags: TxDesc::EOP,
            ..TxDesc::default()
        };
        let slot = usize::from(self.ring.tail.get());
        if self
            .ring
            .desc
            .write(slot * TxDesc::SIZE, &desc.to_bytes())
            .is_err()
        {
            return Err(frame);
        }
        self.slots[slot].mapping = mapping;
        self.slots[slot].frame = Some(slot_frame(frame));
        self.ring.tail = self.ring.size.next(self.ring.tail);
        Ok(())
    }

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
        let kick = {
            let mut guard = self.tx.lock();
            let Some(state) = &mut *guard else {
                bump(&self.stats.tx_dropped, 1);
                return;
            };
            self.queue_frame(dev, state, skb, more) && self.want_tx_doorbell(state)
        };
        if kick {
            self.kick_tx();
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
        let (packets, bytes) = match skb.gso_request() {
            Some(tso) if offloads.flags & TxDesc::CSUM != 0 => {
                offloads.flags |= match tso.kind {
                    GsoKind::Tcp => TxDesc::TSO,
                    GsoKind::TunnelTcp {
                        inner_l3,
                        outer_udp_csum,
                    } => {
                        offloads.inner_l3 = inner_l3;
                        let csum = if outer_udp_csum {
                            TxDesc::OUTER_UDP_CSUM
                        } else {
                            0
                        };
                        TxDesc::TSO | TxDesc::TUNNEL | csum
                    }
                    GsoKind::Udp => TxDesc::USO,
                };
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
                // Segmentation needs the checksum offload; the stack never
                // asks for one without the other.
                bump(&self.stats.tx_dropped, 1);
                return !more;
            }
            None => (1, len),
        };
        if skb.hw_tstamp_requested() && dev.data().tstamp.tx_on() {
            skb.set_hw_tstamp_in_progress();
            offloads.flags |= TxDesc::TSTAMP;
            bump(&self.stats.tx_tstamp_requests, 1);
        }
        skb.tx_timestamp();
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
        slot.frame = Some(TxFrame::Skb(skb));
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

    /// Descriptors free on the TX ring (0 while the pair is stopped): where
    /// a batch of reinjections has the most room.
    pub(crate) fn tx_room(&self) -> u16 {
        lock_bh(&self.tx)
            .as_ref()
            .map_or(0, |state| state.ring.free())
    }

    /// Sends a GFT exception back to the card (its header already replaced
    /// by the reinjection header). Process context. A full or stopped
    /// ring gives the skb back (the stack's frames keep their room: the
    /// queue is not stopped for this). With `more`, the doorbell waits
    /// for the batch's last frame, or for the first that does not fit:
    /// what this ring took of the batch is then rung for, and the rest
    /// may go to another ring.
    pub(crate) fn reinject(&self, skb: SkBuff, more: bool) -> Result<(), SkBuff> {
        let (result, kick) = {
            let mut guard = lock_bh(&self.tx);
            let Some(state) = &mut *guard else {
                return Err(skb);
            };
            let result = if state.ring.free() >= 2 * TX_MAX_DESCS {
                let offloads = TxDesc {
                    flags: TxDesc::GFT_REINJECT,
                    ..TxDesc::default()
                };
                match state.post(&skb, offloads) {
                    Ok(last) => {
                        state.slots[usize::from(last.get())].frame = Some(TxFrame::Skb(skb));
                        Ok(())
                    }
                    Err(_) => Err(skb),
                }
            } else {
                Err(skb)
            };
            // Also tells the card of any stack frames still waiting for
            // the end of their batch: harmless, they are complete.
            let ends_here = !more || result.is_err();
            (result, ends_here && self.want_tx_doorbell(state))
        };
        if kick {
            self.kick_tx();
        }
        result
    }

    /// `XDP_TX` from this pair's NAPI poll: puts a received frame on the
    /// TX ring, from the page it arrived in; [`Self::ring_xdp_tx`] tells
    /// the card at the end of the poll. Without room beside what the
    /// stack may still need, the frame is dropped (its page back to its
    /// pool) and `false` returned.
    pub(super) fn xdp_tx(&self, frame: RxFrame) -> bool {
        let mut guard = self.tx.lock();
        let Some(state) = &mut *guard else {
            return false;
        };
        let (addr, len) = (frame.for_device(), frame.len());
        if state
            .post_xdp(addr, len, frame, TxFrame::Xdp, None)
            .is_err()
        {
            return false;
        }
        self.count_xdp_sent(len);
        true
    }

    /// Puts an XDP frame of its own memory on the TX ring (mapped for the
    /// card here); [`Self::ring_xdp_tx`] tells the card. Gives the frame
    /// back without room (or while the pair is stopped).
    pub(super) fn send_xdp_frame(&self, frame: XdpFrame) -> Result<(), XdpFrame> {
        let mut guard = self.tx.lock();
        let Some(state) = &mut *guard else {
            return Err(frame);
        };
        let Ok(mapping) = TxMapping::xdp_frame(&state.dma, &frame) else {
            return Err(frame);
        };
        let (addr, len) = (mapping.addr(), mapping.len());
        state.post_xdp(addr, len, frame, TxFrame::Redirected, Some(mapping))?;
        self.count_xdp_sent(len);
        Ok(())
    }

    /// `ndo_xdp_xmit`: puts a frame another device redirected here on the
    /// TX ring ([`Self::send_xdp_frame`]), counted as such.
    pub(crate) fn xdp_xmit(&self, frame: XdpFrame) -> Result<(), XdpFrame> {
        self.send_xdp_frame(frame)?;
        bump(&self.stats.tx_xdp_xmit, 1);
        Ok(())
    }

    /// Moves up to [`XSK_TX_BUDGET`] frames from the bound AF_XDP socket's
    /// TX ring to this one (zero copy), keeping room for the stack, and
    /// tells the card. Returns whether frames may be left (the budget ran
    /// out). NAPI context.
    pub(super) fn xsk_xmit(&self) -> bool {
        let mut guard = self.tx.lock();
        let Some(state) = &mut *guard else {
            return false;
        };
        let mut kick = false;
        let Some(pool) = state.xsk.clone() else {
            return false;
        };
        let mut sent = 0;
        while sent < XSK_TX_BUDGET && state.room_for_xdp() {
            let Some(desc) = pool.next_tx() else {
                break;
            };
            // Room was checked above: the post cannot fail for it.
            if state
                .post_xdp(desc.addr, desc.len, (), |()| TxFrame::Xsk, None)
                .is_err()
            {
                break;
            }
            self.count_xdp_sent(desc.len);
            bump(&self.stats.tx_xsk, 1);
            sent += 1;
        }
        if sent > 0 {
            pool.tx_release();
            kick = self.want_tx_doorbell(state);
        }
        // User space wakes the queue (sendto) for what it adds next.
        pool.set_tx_need_wakeup();
        drop(guard);
        if kick {
            self.kick_tx();
        }
        sent == XSK_TX_BUDGET
    }

    fn count_xdp_sent(&self, len: u32) {
        bump(&self.stats.tx_packets, 1);
        bump(&self.stats.tx_bytes, u64::from(len));
        bump(&self.stats.tx_csum_none, 1);
    }

    /// Tells the card of the XDP frames queued since the last doorbell
    /// (and of any stack frames waiting for the end of their batch:
    /// harmless, they are complete).
    pub(crate) fn ring_xdp_tx(&self) {
        let kick = match &mut *self.tx.lock() {
            Some(state) => self.want_tx_doorbell(state),
            None => false,
        };
        if kick {
            self.kick_tx();
        }
    }

    /// Notes that the card must be told of every frame posted since the
    /// last doorbell, if there is one; returns whether to
    /// [`Self::kick_tx`] once `tx` is released. Under `tx`.
    fn want_tx_doorbell(&self, state: &mut TxState) -> bool {
        if state.rung == state.ring.tail {
            return false;
        }
        state.rung = state.ring.tail;
        // Release: the descriptors are written before the tail is seen.
        self.tx_tail_wanted
            .store(u32::from(state.rung.get()), Release);
        true
    }

    /// Writes the newest TX tail asked for to the card, unless it was
    /// written already. Outside `tx`: the trapped write is slow, and
    /// NAPI's TX completion must not spin on `tx` meanwhile. The tails
    /// reach the card in the order they were asked for: one writer at a
    /// time (`tx_doorbell`), and each writes the newest, so a kick that
    /// comes late finds its tail written (or a later one) and writes
    /// nothing. A pair restarted meanwhile reset both (see `start`). With
    /// a doorbell page the tail goes there, and the trapped doorbell only
    /// when the card does not poll the page.
    fn kick_tx(&self) {
        let mut written = lock_bh(&self.tx_doorbell);
        let wanted = self.tx_tail_wanted.load(Acquire);
        if *written == wanted {
            return;
        }
        *written = wanted;
        if self.tail_in_page_polled(wanted) {
            bump(&self.stats.tx_doorbells_skipped, 1);
            return;
        }
        bump(&self.stats.tx_doorbells, 1);
        self.doorbell(QpDoorbell::TxTail, wanted);
    }

    /// Writes TX tail `tail` into the doorbell page, if there is one;
    /// returns whether the card says it polls the page, so that no
    /// doorbell need be rung. Under `tx_doorbell`.
    fn tail_in_page_polled(&self, tail: u32) -> bool {
        let Some(page) = &self.db_page else {
            return false;
        };
        publish_to_polling_card(page, db_page::tx_tail(self.index), tail)
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
                    && state.slots[usize::from(last.get())].frame.is_some() =>
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
        let mut xsk_done = 0;
        loop {
            let slot = core::mem::take(&mut state.slots[usize::from(tx.head.get())]);
            let at_last = tx.head == last;
            tx.head = tx.size.next(tx.head);
            drop(slot.mapping);
            match slot.frame {
                Some(TxFrame::Skb(skb)) => {
                    if at_last && cqe.flags & Cqe::TSTAMP != 0 {
                        skb.tstamp_tx(cqe.timestamp);
                        bump(&self.stats.tx_tstamps, 1);
                    }
                    skb.consume()
                }
                // Its page goes back to its pool.
                Some(TxFrame::Xdp(frame)) => drop(frame),
                // Back to its owner (after the mapping went, above).
                Some(TxFrame::Redirected(frame)) => drop(frame),
                Some(TxFrame::Xsk) => xsk_done += 1,
                None => (),
            }
            if let Some(bytes) = slot.bql_bytes {
                done.packets += 1;
                done.bytes += bytes;
            }
            if at_last {
                break;
            }
        }
        if let Some(pool) = state.xsk.as_ref().filter(|_| xsk_done > 0) {
            pool.tx_completed(xsk_done);
        }
        // Under the lock, so a concurrent xmit cannot stop the queue
        // between this check and the wake.
        if tx.free() >= TX_MAX_DESCS && dev.tx_stopped(self.index) {
            bump(&self.stats.tx_wakes, 1);
            dev.tx_wake(self.index);
        }
    }
}
