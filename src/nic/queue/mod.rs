// SPDX-License-Identifier: GPL-2.0

//! A queue pair of the synthetic NIC: TX ring, RX ring (or RX stream),
//! their completion queue, its NAPI context and interrupt. The TX path is
//! in `tx.rs`, the RX path and the NAPI poll in `rx.rs`, the RX stream in
//! `stream.rs`.
//!
//! Nothing is copied. TX maps each part of the skb (linear head, page
//! fragments) for the card to read, one descriptor per part, and frees the
//! skb when the card completes its last descriptor. RX posts pages of a
//! page pool and builds the skb around the filled page. Everything the
//! card writes (completion index, length) is checked before use; a bad
//! completion is counted and skipped, never followed. A streaming pair
//! (`ethtool --set-priv-flags rx-stream on`) copies each frame out of its
//! stream instead.

mod restart;
mod rx;
mod rx_doorbells;
mod stream;
mod tx;

pub(crate) use restart::PairMem;
pub(crate) use rx::RX_COPYBREAK;

use kernel::{
    new_mutex, new_spinlock,
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed, Release},
        Arc, Mutex, SpinLock,
    },
    time::{Delta, Instant, Monotonic},
};

use super::recovery::QueueHealth;
use super::ring::{slots, CompletionQueue, Ring, RingIndex, RingSize};
use super::Nic;
use crate::hw::{self, Cqe, QpDoorbell, RxDesc, TxDesc};
use crate::linux::{
    dma::{DmaBuffer, DmaDevice},
    irq::IrqHandler,
    net::{
        instance_lock::DevLocked,
        napi::WithNapi,
        netdev::{net_ratelimit, NetDev, NetDevRef, RxQueueStats, TxQueueStats},
        netmem::PayloadPool,
        page_pool::PagePool,
        xdp::XdpRxq,
        xsk::XskPool,
    },
    sync::lock_bh,
};
use crate::regs::Registers;
use crate::selftest::IrqCount;
use rx::{RingRx, RxMem, RxPath, RxState};
use rx_doorbells::RxDoorbells;
use stream::StreamRx;
use tx::{TxSlot, TxState};

/// Counters of one queue pair.
pub(crate) struct QueueStats {
    pub(crate) tx_packets: Atomic<u64>,
    pub(crate) tx_bytes: Atomic<u64>,
    pub(crate) tx_dropped: Atomic<u64>,
    pub(crate) tx_busy: Atomic<u64>,
    pub(crate) rx_packets: Atomic<u64>,
    pub(crate) rx_bytes: Atomic<u64>,
    pub(crate) rx_dropped: Atomic<u64>,
    /// RX frames dropped because no fresh page was available to replace
    /// the one holding them (the page goes back to the card instead).
    pub(crate) rx_alloc_failed: Atomic<u64>,
    /// TSO frames handed to the card (each counts as its segments in
    /// `tx_packets`), and their bytes as handed over.
    pub(crate) tx_tso: Atomic<u64>,
    pub(crate) tx_tso_bytes: Atomic<u64>,
    /// The segments the card cut them into, and those segments' bytes.
    pub(crate) tx_tso_segs: Atomic<u64>,
    pub(crate) tx_tso_seg_bytes: Atomic<u64>,
    /// Frames that asked for the checksum offload, and frames that did not.
    pub(crate) tx_needs_csum: Atomic<u64>,
    pub(crate) tx_csum_none: Atomic<u64>,
    /// Frames sent asking the card for a hardware time stamp, and the
    /// stamps it reported.
    pub(crate) tx_tstamp_requests: Atomic<u64>,
    pub(crate) tx_tstamps: Atomic<u64>,
    /// Small RX frames copied into an skb of their own, their page given
    /// straight back to the card (`ethtool --set-tunable rx-copybreak`).
    pub(crate) rx_copybreak: Atomic<u64>,
    /// RX frames the card split: headers copied out of the header slot
    /// into the skb, the payload left in its page (`tcp-data-split`).
    pub(crate) rx_hds: Atomic<u64>,
    /// RX frames the card verified the checksum of, and frames it did not.
    pub(crate) rx_csum_unnecessary: Atomic<u64>,
    pub(crate) rx_csum_none: Atomic<u64>,
    /// Frames the card coalesced (hardware GRO), their bytes, and the
    /// wire segments in them (those count in `rx_packets` too).
    pub(crate) rx_hw_gro: Atomic<u64>,
    pub(crate) rx_hw_gro_bytes: Atomic<u64>,
    pub(crate) rx_hw_gro_segs: Atomic<u64>,
    /// TX doorbells rung (one per batch the stack hands over, unless the
    /// card polled the doorbell page for it).
    pub(crate) tx_doorbells: Atomic<u64>,
    /// TX tails written to the doorbell page while the card polled it:
    /// doorbells not rung.
    pub(crate) tx_doorbells_skipped: Atomic<u64>,
    /// Times the TX queue stopped for lack of ring room, and restarted.
    pub(crate) tx_stops: Atomic<u64>,
    pub(crate) tx_wakes: Atomic<u64>,
    /// Times the stack's watchdog found this TX queue stuck.
    pub(crate) tx_timeouts: Atomic<u64>,
    /// Completions with an index or length the driver did not expect.
    pub(crate) bad_completions: Atomic<u64>,
    /// RX frames the card flagged as damaged on the wire (bad FCS), dropped.
    pub(crate) rx_crc_errors: Atomic<u64>,
    /// Times this pair was reset (TX timeout, completions out of step).
    pub(crate) resets: Atomic<u64>,
    /// Interrupts the health check found lost (a completion waited a whole
    /// check interval without a poll); each was followed by a poll.
    pub(crate) missed_irqs: Atomic<u64>,
    /// Polls run again because a completion arrived as the poll armed
    /// the interrupt in the doorbell page, before the card saw the arm.
    pub(crate) rearm_polls: Atomic<u64>,
    /// What the XDP program decided for RX frames: passed to the stack,
    /// sent back out (`xdp_tx`; those without TX ring room in
    /// `xdp_tx_errors`), redirected (refused by the target:
    /// `xdp_redirect_errors`), dropped, aborted.
    pub(crate) xdp_pass: Atomic<u64>,
    pub(crate) xdp_tx: Atomic<u64>,
    pub(crate) xdp_tx_errors: Atomic<u64>,
    pub(crate) xdp_redirect: Atomic<u64>,
    pub(crate) xdp_redirect_errors: Atomic<u64>,
    pub(crate) xdp_drop: Atomic<u64>,
    pub(crate) xdp_aborted: Atomic<u64>,
    /// Frames other devices redirected here (`ndo_xdp_xmit`) put on the
    /// TX ring, and those refused for lack of room.
    pub(crate) tx_xdp_xmit: Atomic<u64>,
    pub(crate) tx_xdp_xmit_errors: Atomic<u64>,
    /// Frames received into a bound AF_XDP socket's buffers (zero copy),
    /// and frames sent from its TX ring.
    pub(crate) rx_xsk: Atomic<u64>,
    pub(crate) tx_xsk: Atomic<u64>,
    /// Stream frames handed on as fragments of their chunk (or skbs
    /// built around their record), and those copied whole (small ones).
    pub(crate) rx_stream_frags: Atomic<u64>,
    pub(crate) rx_stream_copies: Atomic<u64>,
    /// Chunks the head left while frames in them were still out (a slow
    /// socket): replaced by fresh ones instead of reused.
    pub(crate) rx_stream_chunks_replaced: Atomic<u64>,
}

impl QueueStats {
    fn new() -> Self {
        Self {
            tx_packets: Atomic::new(0),
            tx_bytes: Atomic::new(0),
            tx_dropped: Atomic::new(0),
            tx_busy: Atomic::new(0),
            rx_packets: Atomic::new(0),
            rx_bytes: Atomic::new(0),
            rx_dropped: Atomic::new(0),
            rx_alloc_failed: Atomic::new(0),
            tx_tso: Atomic::new(0),
            tx_tso_bytes: Atomic::new(0),
            tx_tso_segs: Atomic::new(0),
            tx_tso_seg_bytes: Atomic::new(0),
            tx_needs_csum: Atomic::new(0),
            tx_csum_none: Atomic::new(0),
            tx_tstamp_requests: Atomic::new(0),
            tx_tstamps: Atomic::new(0),
            rx_copybreak: Atomic::new(0),
            rx_hds: Atomic::new(0),
            rx_csum_unnecessary: Atomic::new(0),
            rx_csum_none: Atomic::new(0),
            rx_hw_gro: Atomic::new(0),
            rx_hw_gro_bytes: Atomic::new(0),
            rx_hw_gro_segs: Atomic::new(0),
            tx_doorbells: Atomic::new(0),
            tx_doorbells_skipped: Atomic::new(0),
            tx_stops: Atomic::new(0),
            tx_wakes: Atomic::new(0),
            tx_timeouts: Atomic::new(0),
            bad_completions: Atomic::new(0),
            rx_crc_errors: Atomic::new(0),
            resets: Atomic::new(0),
            missed_irqs: Atomic::new(0),
            rearm_polls: Atomic::new(0),
            xdp_pass: Atomic::new(0),
            xdp_tx: Atomic::new(0),
            xdp_tx_errors: Atomic::new(0),
            xdp_redirect: Atomic::new(0),
            xdp_redirect_errors: Atomic::new(0),
            xdp_drop: Atomic::new(0),
            xdp_aborted: Atomic::new(0),
            tx_xdp_xmit: Atomic::new(0),
            tx_xdp_xmit_errors: Atomic::new(0),
            rx_xsk: Atomic::new(0),
            tx_xsk: Atomic::new(0),
            rx_stream_frags: Atomic::new(0),
            rx_stream_copies: Atomic::new(0),
            rx_stream_chunks_replaced: Atomic::new(0),
        }
    }
}

pub(crate) fn bump(counter: &Atomic<u64>, by: u64) {
    counter.fetch_add(by, Relaxed);
}

/// Sizes of one queue pair's rings and buffers.
#[derive(Clone, Copy, Debug)]
pub(crate) struct QueueGeometry {
    /// TX ring entries.
    pub(crate) tx: RingSize,
    /// RX ring entries.
    pub(crate) rx: RingSize,
    /// Largest frame an RX buffer must hold (for the MTU).
    pub(crate) rx_frame: u32,
    /// Largest frame a page pool's RX buffer holds (at least
    /// `rx_frame`; more for receive coalescing).
    pub(crate) rx_page_frame: u32,
    /// Receive into a stream ([`stream::STREAM_BYTES`]) instead of the RX
    /// ring.
    pub(crate) rx_stream: bool,
    /// An XDP program is attached: stream records leave it room.
    pub(crate) xdp: bool,
    /// Header/data split: frames longer than this are split (only a ring
    /// of page-pool buffers splits; not a stream nor an AF_XDP queue).
    pub(crate) hds_thresh: Option<u32>,
}

impl QueueGeometry {
    /// RX ring entries the card is told of (a streaming pair has no RX
    /// ring, but the card checks the smallest size).
    fn rx_entries(&self) -> u16 {
        if self.rx_stream {
            hw::MIN_RING_ENTRIES
        } else {
            self.rx.get()
        }
    }

    fn cq_entries(&self) -> u32 {
        (u32::from(self.tx.get()) + u32::from(self.rx_entries())).next_power_of_two()
    }
}

/// The card's commands that create a prepared pair, in order: how it
/// receives ([`hw::AdminCmd::SetRxStream`]), then the pair.
#[derive(Clone, Copy)]
pub(crate) struct PairCommands {
    pub(crate) rx_mode: hw::AdminCmd,
    pub(crate) create: hw::QpConfig,
}

/// One queue pair and its interrupt vector: the pair with the NAPI
/// context that polls it.
pub(crate) type QueueVector = WithNapi<QueuePair>;

/// One queue pair: its rings and counters.
#[pin_data]
pub(crate) struct QueuePair {
    index: u16,
    regs: Arc<Registers>,
    dev: NetDevRef<Nic>,
    /// Lock order: `rx` before `tx`. The stack may transmit from inside
    /// RX delivery (an echo reply), so `tx` is never held across delivery.
    /// NAPI (softirq) and xmit (bottom halves off) take them as they are;
    /// process context takes them with [`lock_bh`].
    #[pin]
    rx: SpinLock<Option<RxState>>,
    #[pin]
    tx: SpinLock<Option<TxState>>,
    /// The TX tail to tell the card, set under `tx`; the doorbell is
    /// written outside `tx` (a trapped write is slow, and NAPI's TX
    /// completion takes `tx`), under `tx_doorbell` (see `kick_tx`).
    tx_tail_wanted: Atomic<u32>,
    /// The TX tail last written to the card. Taken after `tx` is
    /// released, or inside it (never the other way round).
    #[pin]
    tx_doorbell: SpinLock<u32>,
    /// The function's doorbell page, if the card has one: the pair keeps
    /// its TX tail there and rings only when the card does not poll it.
    db_page: Option<Arc<DmaBuffer>>,
    /// The card reads RX tails and CQ heads from the page too
    /// (`hw::feature::RX_CQ_IN_PAGE`): a ring pair keeps them there if
    /// there is a page.
    rx_cq_in_page: bool,
    /// Counters (they survive down/up).
    pub(crate) stats: QueueStats,
    /// Why a reset is asked for ([`ResetCause`] bits; 0: it is not).
    /// Set by the TX watchdog and the completion checks, taken by the
    /// health report work.
    reset_requested: Atomic<u32>,
    /// A reset was reported but not done (the health reporter's
    /// auto-recovery is off, or in its grace period): the pair waits for
    /// `devlink health recover`.
    awaiting_recovery: Atomic<u32>,
    /// The last completion out of step: side (bit 16: TX) and index.
    bad_cqe_index: Atomic<u32>,
    /// Its length, and the ring index it should have had.
    bad_cqe_len: Atomic<u32>,
    bad_cqe_expected: Atomic<u32>,
    /// NAPI polls run so far (the health check's sign of life).
    polls: Atomic<u64>,
    /// NAPI is enabled (between `start` and `stop`).
    polling: Atomic<u32>,
    /// Lost-interrupt watch and reset pacing; the health check's alone.
    #[pin]
    health: Mutex<QueueHealth>,
}

impl WithNapi<QueuePair> {
    /// Queue pair `index` of `dev`, stopped. Keep it in the device's `Nic`.
    pub(crate) fn new_queue(
        index: u16,
        regs: Arc<Registers>,
        dev: NetDevRef<Nic>,
        db_page: Option<Arc<DmaBuffer>>,
        rx_cq_in_page: bool,
    ) -> Result<Arc<Self>> {
        let pair_dev = dev.clone();
        let pair = try_pin_init!(QueuePair {
            index,
            regs,
            dev: pair_dev,
            rx <- new_spinlock!(None),
            tx <- new_spinlock!(None),
            tx_tail_wanted: Atomic::new(0),
            tx_doorbell <- new_spinlock!(0),
            rx_cq_in_page,
            db_page,
            stats: QueueStats::new(),
            reset_requested: Atomic::new(0),
            awaiting_recovery: Atomic::new(0),
            bad_cqe_index: Atomic::new(0),
            bad_cqe_len: Atomic::new(0),
            bad_cqe_expected: Atomic::new(0),
            polls: Atomic::new(0),
            polling: Atomic::new(0),
            health <- new_mutex!(QueueHealth::default()),
        }? Error);
        Arc::pin_init(WithNapi::new(&dev, u32::from(index), pair), GFP_KERNEL)
    }

    /// The health check of a running pair: a completion that waited a
    /// whole check interval without a poll lost its interrupt. Counts it,
    /// logs (rate-limited), and polls; returns whether it did. Process
    /// context.
    pub(crate) fn check_interrupts(&self) -> bool {
        let waiting = {
            let guard = lock_bh(&self.rx);
            guard.as_ref().is_some_and(RxState::waiting)
        };
        let lost = self
            .health
            .lock()
            .irq
            .check(waiting, self.polls.load(Relaxed));
        if !lost {
            return false;
        }
        bump(&self.stats.missed_irqs, 1);
        if let Some(dev) = self.dev.try_access().filter(|_| net_ratelimit()) {
            pr_warn!(
                "{}: queue pair {}: completion waiting without an interrupt, polling\n",
                dev.name(),
                self.index
            );
        }
        self.napi().schedule_from_task();
        true
    }

    /// Whether an AF_XDP pool is bound to the running pair (zero copy).
    pub(crate) fn xsk_bound(&self) -> bool {
        lock_bh(&self.rx)
            .as_ref()
            .is_some_and(|rx| rx.xsk().is_some())
    }

    /// Records the IRQ of this pair's vector in its NAPI context.
    pub(crate) fn set_irq(&self, irq: u32) {
        self.napi().set_irq(irq);
    }

    /// Posts RX buffers, enables NAPI and arms the interrupt. A ring the
    /// page pool cannot fill completely starts with what it got (each
    /// failure counted in `rx_alloc_failed`) and is topped up by the
    /// polls; one with no buffer at all fails with `ENOMEM`. An AF_XDP
    /// socket's ring starts with what its fill ring holds, even nothing:
    /// the socket wakes the queue when it adds buffers.
    pub(crate) fn start(&self, locked: &DevLocked) -> Result {
        {
            let mut guard = lock_bh(&self.rx);
            let rx = (*guard).as_mut().ok_or(EINVAL)?;
            // A stream starts empty, with nothing to post.
            if let RxPath::Ring(ring) = &mut rx.path {
                if ring.refill(&self.stats.rx_alloc_failed) == 0 && ring.xsk().is_none() {
                    return Err(ENOMEM);
                }
                match &rx.doorbells {
                    // Every buffer at once, not in batches.
                    RxDoorbells::Trapped => {
                        let tail = ring.announce_all();
                        self.doorbell(QpDoorbell::RxTail, u32::from(tail.get()));
                    }
                    doorbells => self.announce_rx_tail(doorbells, ring),
                }
            }
        }
        self.napi().enable(locked)?;
        self.napi().link_queue(locked, u32::from(self.index), true);
        self.polling.store(1, Relaxed);
        let mut guard = lock_bh(&self.rx);
        // Frames may have come in since the card had buffers, before the
        // arm it would see: then the poll is not left to an interrupt.
        let waiting = match &mut *guard {
            Some(rx) => self.announce_cq_head(rx, true),
            None => false,
        };
        drop(guard);
        if waiting {
            bump(&self.stats.rearm_polls, 1);
            self.napi().schedule_from_task();
        }
        Ok(())
    }

    /// Adds the pair's NAPI context to the device, allocates rings and
    /// buffers (or the stream) of `geo` and returns the card's commands
    /// that create it; the queue runs once the card accepted them and
    /// [`QueueVector::start`] ran.
    /// With `xsk` (an AF_XDP pool bound in zero-copy mode), RX takes its
    /// buffers and its socket's frames go out on TX.
    pub(crate) fn prepare(
        &self,
        locked: &DevLocked,
        dma: &DmaDevice,
        geo: QueueGeometry,
        tx_csum: bool,
        xsk: Option<XskPool>,
    ) -> Result<PairCommands> {
        let mem = self.alloc(locked, dma, geo, tx_csum, xsk)?;
        Ok(self.install(mem))
    }

    /// Adds the pair's NAPI context to the device (if it is not there) and
    /// allocates rings and buffers (or the stream) of `geo`, not yet the
    /// pair's: a running pair keeps its own until [`Self::install`].
    pub(crate) fn alloc(
        &self,
        locked: &DevLocked,
        dma: &DmaDevice,
        geo: QueueGeometry,
        tx_csum: bool,
        xsk: Option<XskPool>,
    ) -> Result<PairMem> {
        // Before the page pool, which recycles pages through it.
        self.napi().add(locked);
        let cq_entries = geo.cq_entries();
        let ring = Ring::alloc(dma, geo.tx, TxDesc::SIZE)?;
        let tx = TxState {
            rung: ring.tail,
            ring,
            slots: slots(geo.tx, TxSlot::default)?,
            dma: dma.clone(),
            csum: tx_csum,
            xsk: xsk.clone(),
        };
        let cq = CompletionQueue {
            mem: dma.alloc(cq_entries as usize * Cqe::SIZE)?,
            entries: cq_entries,
            head: 0,
            phase: true,
        };
        if geo.rx_stream && xsk.is_some() {
            // Refused where they are set; never both.
            return Err(EINVAL);
        }
        let (mut hdr_ring, mut hds_thresh) = (0, 0);
        let (path, rx_ring, rx_mode) = if geo.rx_stream {
            let stream = StreamRx::alloc(dma, self.napi(), u32::from(self.index), geo.xdp)?;
            let cmd = stream.command(self.index)?;
            (RxPath::Stream(stream), 0, cmd)
        } else {
            let ring = self.prepare_ring(locked, dma, geo, xsk)?;
            let addr = ring.ring.desc.dma_addr(0)?;
            if let Some(hdrs) = &ring.hdrs {
                hdr_ring = hdrs.dma_addr(0)?;
                // A provider's queue splits every frame (the core binds
                // one only with a threshold of 0).
                hds_thresh = match ring.payload_only() {
                    true => 0,
                    false => geo.hds_thresh.unwrap_or(0),
                };
            }
            let cmd = hw::AdminCmd::SetRxStream {
                qp: self.index,
                bytes: 0,
                table: 0,
                tail: 0,
                chunk_bytes: 0,
                headroom: 0,
                tailroom: 0,
            };
            (RxPath::Ring(ring), addr, cmd)
        };
        // A ring pair keeps its RX tail and CQ head in the page if the
        // card reads them there (a stream has no RX tail).
        let page_words = match (&self.db_page, &path) {
            (Some(page), RxPath::Ring(_))
                if self.rx_cq_in_page && cq_entries <= hw::db_page::CQ_WORD_MAX_ENTRIES =>
            {
                Some(page.clone())
            }
            _ => None,
        };
        let mut flags = 0;
        if self.db_page.is_some() {
            flags |= hw::qp_flags::TX_TAIL_IN_PAGE;
        }
        if matches!(&path, RxPath::Ring(ring) if ring.payload_only()) {
            flags |= hw::qp_flags::PAYLOAD_ONLY;
        }
        let doorbells = match page_words {
            Some(page) => {
                flags |= hw::qp_flags::RX_CQ_IN_PAGE;
                RxDoorbells::Page {
                    page,
                    generation: 0,
                }
            }
            None => RxDoorbells::Trapped,
        };
        let create = hw::QpConfig {
            qp: self.index,
            vector: hw::qp_vector(self.index),
            tx_entries: geo.tx.get(),
            rx_entries: geo.rx_entries(),
            tx_ring: tx.ring.desc.dma_addr(0)?,
            rx_ring,
            cq: cq.mem.dma_addr(0)?,
            cq_entries,
            flags,
            hdr_ring,
            hds_thresh,
        };
        let rx = RxState {
            cq,
            path,
            doorbells,
            commands: PairCommands { rx_mode, create },
        };
        Ok(PairMem { rx, tx })
    }

    /// Makes `mem` the pair's (it had none) and returns the card's
    /// commands that create the pair on it.
    pub(crate) fn install(&self, mem: PairMem) -> PairCommands {
        let PairMem { rx, tx } = mem;
        let commands = rx.commands;
        // This context polls for the pool from now on (it does not poll
        // yet: `start` enables it). Outside the lock: it may sleep.
        if let RxPath::Ring(ring) = &rx.path {
            ring.tie_pool(Some(self.napi()));
        }
        *lock_bh(&self.rx) = Some(rx);
        let mut tx_slot = lock_bh(&self.tx);
        // The ring is new: byte queue limits start from nothing in flight.
        // Under the lock xmit counts its bytes in, so a frame an xmit
        // racing the reset puts on the new ring is counted after the
        // reset, never before (its completion would then exceed what is
        // in flight: dql_completed's BUG).
        if let Some(dev) = self.dev.try_access() {
            dev.tx_reset(self.index);
        }
        // The new ring's tail is what the card starts from. A doorbell
        // of the old ring still being written finishes before the card's
        // queue is created (it waits for `tx_doorbell` here); one asked
        // for but not written yet finds nothing left to write.
        let tail = u32::from(tx.rung.get());
        self.tx_tail_wanted.store(tail, Release);
        *lock_bh(&self.tx_doorbell) = tail;
        *tx_slot = Some(tx);
        drop(tx_slot);
        commands
    }

    /// The RX ring of `geo` and its buffers' memory: the page pool, the
    /// memory provider's pool if one is bound to the queue, or with `xsk`
    /// the AF_XDP socket's umem. The instance lock is held (a provider
    /// is read under it).
    fn prepare_ring(
        &self,
        locked: &DevLocked,
        dma: &DmaDevice,
        geo: QueueGeometry,
        xsk: Option<XskPool>,
    ) -> Result<RingRx> {
        let queue = u32::from(self.index);
        // A provider's buffers are as long as it asked (large chunks).
        let provider_buf_len = match xsk {
            Some(_) => None,
            None => self.dev.try_access().and_then(|dev| {
                dev.rx_queue_has_provider(queue)
                    .then(|| dev.rx_queue_buf_len(locked, queue))
            }),
        };
        let mem = match (xsk, provider_buf_len) {
            (Some(pool), _) => RxMem::Xsk {
                rxq: XdpRxq::new_xsk(self.napi(), queue, &pool)?,
                pool,
            },
            (None, Some(buf_len)) => RxMem::Payload {
                pool: PayloadPool::new(dma, self.napi(), queue, u32::from(geo.rx.get()), buf_len)?,
            },
            (None, None) => {
                let pool = PagePool::new(
                    dma,
                    self.napi(),
                    queue,
                    u32::from(geo.rx.get()),
                    geo.rx_page_frame,
                )?;
                RxMem::Pages {
                    rxq: XdpRxq::new(self.napi(), queue, &pool)?,
                    pool,
                }
            }
        };
        // Header slots for a split ring of pages or a provider's buffers
        // (an AF_XDP socket's frames stay whole). A provider without the
        // split cannot be: the core binds one only to a splitting queue
        // and keeps the split on while it is bound.
        let hdrs = match (&mem, geo.hds_thresh) {
            (RxMem::Pages { .. } | RxMem::Payload { .. }, Some(_)) => {
                Some(dma.alloc(usize::from(geo.rx.get()) * usize::from(hw::HDS_HDR_SLOT))?)
            }
            (RxMem::Payload { .. }, None) => return Err(EINVAL),
            _ => None,
        };
        Ok(RingRx {
            ring: Ring::alloc(dma, geo.rx, RxDesc::SIZE)?,
            announced: RingIndex::default(),
            bufs: slots(geo.rx, || None)?,
            chain: None,
            hdrs,
            mem,
        })
    }

    /// Stops polling (if [`Self::start`] got that far), frees the rings
    /// (the card's queue must be destroyed first, or the device reset) and
    /// takes the NAPI context off the device.
    pub(crate) fn stop(&self, locked: &DevLocked) {
        if self.polling.xchg(0, Relaxed) != 0 {
            self.napi().link_queue(locked, u32::from(self.index), false);
            self.napi().disable(locked);
        }
        // Freed outside the locks: destroying a page pool may sleep.
        let rx = lock_bh(&self.rx).take();
        let mut tx = lock_bh(&self.tx).take();
        if let Some(tx) = &mut tx {
            tx.drop_xsk_frames();
        }
        drop((rx, tx));
        // After the page pool is gone: it recycles through the context.
        self.napi().del(locked);
    }
}

/// Why a queue pair needs the health work (bits of a request): all but
/// [`ResetCause::LOST_IRQ`] reset it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct ResetCause(u32);

impl ResetCause {
    /// The stack's TX watchdog found the queue stuck.
    pub(crate) const TX_TIMEOUT: Self = Self(1);
    /// A completion did not match its ring.
    pub(crate) const COMPLETION: Self = Self(2);
    /// Reconfiguration could not bring the pair back.
    pub(crate) const RESTART: Self = Self(4);
    /// A completion waited without an interrupt; the health check
    /// polled, so only the report is left (no reset).
    pub(crate) const LOST_IRQ: Self = Self(8);

    /// Whether `other`'s bits are among ours.
    pub(crate) fn has(self, other: Self) -> bool {
        self.0 & other.0 != 0
    }
}

/// A queue pair's state for `devlink health` (diagnose and dump).
#[derive(Clone, Copy, Default)]
pub(crate) struct PairSnapshot {
    pub(crate) running: bool,
    pub(crate) tx_entries: u16,
    pub(crate) tx_head: u16,
    pub(crate) tx_tail: u16,
    pub(crate) tx_rung: u16,
    pub(crate) tx_stopped: bool,
    pub(crate) rx_entries: u16,
    pub(crate) rx_head: u16,
    pub(crate) rx_tail: u16,
    /// A streaming pair: its ring's bytes (0: descriptor mode) and read
    /// position in units.
    pub(crate) rx_stream_bytes: u32,
    pub(crate) rx_stream_head: u32,
    pub(crate) cq_entries: u32,
    pub(crate) cq_head: u32,
    pub(crate) cq_phase: bool,
    pub(crate) awaiting_recovery: bool,
    pub(crate) resets: u64,
    pub(crate) tx_timeouts: u64,
    pub(crate) bad_completions: u64,
    pub(crate) missed_irqs: u64,
    /// The last completion out of step: on the TX side, its index and
    /// length, and the index expected.
    pub(crate) bad_cqe_tx: bool,
    pub(crate) bad_cqe_index: u16,
    pub(crate) bad_cqe_len: u32,
    pub(crate) bad_cqe_expected: u16,
}

impl QueuePair {
    /// This pair's index.
    pub(crate) fn index(&self) -> u16 {
        self.index
    }

    /// Asks for this pair to be reset for `cause`; true if it was not
    /// asked already.
    pub(crate) fn request_reset(&self, cause: ResetCause) -> bool {
        let mut old = self.reset_requested.load(Relaxed);
        loop {
            match self.reset_requested.cmpxchg(old, old | cause.0, Relaxed) {
                Ok(_) => return old == 0,
                Err(now) => old = now,
            }
        }
    }

    /// The card wrote a completion the ring cannot match (index outside
    /// what is in flight, bogus length): from here on its completions and
    /// the driver's ring no longer line up, so the pair is reset. Counted
    /// always, logged once per reset. `tx`: on the TX side; `index` and
    /// `len` as the card wrote them, `expected` the ring's next index.
    fn out_of_step(&self, tx: bool, index: u16, len: u32, expected: u16) {
        let index = u32::from(tx) << 16 | u32::from(index);
        self.completion_fault(index, len, u32::from(expected), |dev| {
            pr_warn!(
                "{}: queue pair {}: completion out of step with its ring, resetting it\n",
                dev.name(),
                self.index
            )
        });
    }

    /// The card broke the RX stream's format (a tail beyond the ring, a
    /// record out of sequence or too long): as [`Self::out_of_step`], the
    /// driver's position and what the card wrote recorded for the dump.
    fn stream_out_of_step(&self, e: stream::OutOfStep) {
        self.completion_fault(e.head & 0xffff, e.found, 0, |dev| {
            pr_warn!(
                "{}: queue pair {}: RX stream out of step at {:#x} (card wrote {:#x}), resetting it\n",
                dev.name(),
                self.index,
                e.head,
                e.found
            )
        });
    }

    /// What the card wrote into a completion queue or stream no longer
    /// lines up with the driver: counted, recorded for the health dump
    /// (`index`, `len`, `expected`), and the pair's reset asked for,
    /// `log`ged once per reset.
    fn completion_fault(
        &self,
        index: u32,
        len: u32,
        expected: u32,
        log: impl FnOnce(&NetDev<Nic>),
    ) {
        bump(&self.stats.bad_completions, 1);
        self.bad_cqe_index.store(index, Relaxed);
        self.bad_cqe_len.store(len, Relaxed);
        self.bad_cqe_expected.store(expected, Relaxed);
        if self.request_reset(ResetCause::COMPLETION) {
            if let Some(dev) = self.dev.try_access() {
                log(&dev);
                dev.data().schedule_work();
            }
        }
    }

    /// Why a reset was asked for since the last call, if it was.
    pub(crate) fn take_reset_request(&self) -> Option<ResetCause> {
        match self.reset_requested.xchg(0, Relaxed) {
            0 => None,
            bits => Some(ResetCause(bits)),
        }
    }

    /// Marks the pair as waiting for a manual recovery, or not.
    pub(crate) fn set_awaiting_recovery(&self, waiting: bool) {
        self.awaiting_recovery.store(u32::from(waiting), Relaxed);
    }

    /// Whether the pair waits for a manual recovery.
    pub(crate) fn awaiting_recovery(&self) -> bool {
        self.awaiting_recovery.load(Relaxed) != 0
    }

    /// Its rings' indices and fault counters now.
    pub(crate) fn snapshot(&self) -> PairSnapshot {
        let mut s = PairSnapshot {
            running: self.polling.load(Relaxed) != 0,
            awaiting_recovery: self.awaiting_recovery(),
            resets: self.stats.resets.load(Relaxed),
            tx_timeouts: self.stats.tx_timeouts.load(Relaxed),
            bad_completions: self.stats.bad_completions.load(Relaxed),
            missed_irqs: self.stats.missed_irqs.load(Relaxed),
            ..Default::default()
        };
        let bad = self.bad_cqe_index.load(Relaxed);
        s.bad_cqe_tx = bad & 1 << 16 != 0;
        s.bad_cqe_index = bad as u16;
        s.bad_cqe_len = self.bad_cqe_len.load(Relaxed);
        s.bad_cqe_expected = self.bad_cqe_expected.load(Relaxed) as u16;
        if let Some(rx) = &*lock_bh(&self.rx) {
            match &rx.path {
                RxPath::Ring(ring) => {
                    s.rx_entries = ring.ring.size.get();
                    s.rx_head = ring.ring.head.get();
                    s.rx_tail = ring.ring.tail.get();
                }
                RxPath::Stream(stream) => {
                    (s.rx_stream_bytes, s.rx_stream_head) = stream.position();
                }
            }
            s.cq_entries = rx.cq.entries;
            s.cq_head = rx.cq.head;
            s.cq_phase = rx.cq.phase;
        }
        if let Some(tx) = &*lock_bh(&self.tx) {
            s.tx_entries = tx.ring.size.get();
            s.tx_head = tx.ring.head.get();
            s.tx_tail = tx.ring.tail.get();
            s.tx_rung = tx.rung.get();
        }
        s.tx_stopped = self
            .dev
            .try_access()
            .is_some_and(|dev| dev.tx_stopped(self.index));
        s
    }

    /// Whether a reset is asked for (without taking the request).
    pub(crate) fn reset_pending(&self) -> bool {
        self.reset_requested.load(Relaxed) != 0
    }

    /// How long a reset asked for `now` must wait for its backoff (zero:
    /// go); [`Self::reset_done`] records it once done.
    pub(crate) fn reset_wait(&self, now: Instant<Monotonic>) -> Delta {
        self.health.lock().backoff.remaining(now)
    }

    /// Records a reset done `now`, for the backoff of the next one.
    pub(crate) fn reset_done(&self, now: Instant<Monotonic>) {
        bump(&self.stats.resets, 1);
        self.health.lock().backoff.record(now);
    }

    /// The RX and TX counters qstats reports.
    pub(crate) fn counters(&self) -> (RxQueueStats, TxQueueStats) {
        Self::stats_from(|c| c.load(Relaxed), &self.stats)
    }

    /// Every counter [`Self::counters`] reports, at zero (the base stats
    /// start from it).
    pub(crate) fn zero_counters() -> (RxQueueStats, TxQueueStats) {
        Self::stats_from(|_| 0, &QueueStats::new())
    }

    /// The qstats this driver reports, each read by `v`: the one list of
    /// which counter backs which qstats field.
    fn stats_from(v: impl Fn(&Atomic<u64>) -> u64, s: &QueueStats) -> (RxQueueStats, TxQueueStats) {
        let v = |c| Some(v(c));
        (
            RxQueueStats {
                packets: v(&s.rx_packets),
                bytes: v(&s.rx_bytes),
                alloc_fail: v(&s.rx_alloc_failed),
                csum_unnecessary: v(&s.rx_csum_unnecessary),
                csum_none: v(&s.rx_csum_none),
                hw_gro_packets: v(&s.rx_hw_gro),
                hw_gro_bytes: v(&s.rx_hw_gro_bytes),
                hw_gro_wire_packets: v(&s.rx_hw_gro_segs),
                ..Default::default()
            },
            TxQueueStats {
                packets: v(&s.tx_packets),
                bytes: v(&s.tx_bytes),
                needs_csum: v(&s.tx_needs_csum),
                csum_none: v(&s.tx_csum_none),
                hw_gso_packets: v(&s.tx_tso),
                hw_gso_bytes: v(&s.tx_tso_bytes),
                hw_gso_wire_packets: v(&s.tx_tso_segs),
                hw_gso_wire_bytes: v(&s.tx_tso_seg_bytes),
                stop: v(&s.tx_stops),
                wake: v(&s.tx_wakes),
                ..Default::default()
            },
        )
    }

    fn doorbell(&self, db: QpDoorbell, value: u32) {
        // A failed write means the device is gone; the queue stalls and the
        // TX watchdog reports it.
        let _ = self.regs.doorbell(self.index, db, value);
    }
}

/// The interrupt handler of a queue pair's vector: schedules its NAPI.
#[pin_data]
pub(crate) struct QueueIrq {
    queue: Arc<QueueVector>,
    /// Interrupts seen (for `ethtool -t`).
    fired: Atomic<u32>,
}

impl QueueIrq {
    /// The handler for `queue`.
    pub(crate) fn new(queue: Arc<QueueVector>) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            queue,
            fired: Atomic::new(0),
        }? Error)
    }
}

impl IrqHandler for QueueIrq {
    fn handle(&self) -> bool {
        self.fired.fetch_add(1, Relaxed);
        self.queue.napi().schedule();
        true
    }
}

impl IrqCount for QueueIrq {
    fn fired(&self) -> u32 {
        self.fired.load(Relaxed)
    }
}

/// Whether TX uses byte queue limits and rings one doorbell per
/// `xmit_more` batch (module parameter `tx_batching`, fixed at load).
pub(super) fn tx_batching() -> bool {
    *crate::module_parameters::tx_batching.value() != 0
}
