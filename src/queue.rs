// SPDX-License-Identifier: GPL-2.0

//! A queue pair of the synthetic NIC: TX ring, RX ring, their completion
//! queue, its NAPI context and interrupt.
//!
//! Nothing is copied. TX maps each part of the skb (linear head, page
//! fragments) for the card to read, one descriptor per part, and frees the
//! skb when the card completes its last descriptor. RX posts pages of a
//! page pool and builds the skb around the filled page. Everything the
//! card writes (completion index, length) is checked before use; a bad
//! completion is counted and skipped, never followed.

use kernel::{
    new_mutex, new_spinlock,
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc, Mutex, SpinLock,
    },
    time::{Delta, Instant, Monotonic},
};

use crate::hw::{self, regs, Cqe, RxDesc, TxDesc, CQ_ARM, ENTRY_FLAGS_OFFSET};
use crate::linux::{
    dma::DmaBuffer,
    dma::DmaDevice,
    irq::IrqHandler,
    net::dma_map::TxMapping,
    net::napi::{Napi, NapiPoll, WithNapi},
    net::netdev::{net_ratelimit, NetDev, NetDevRef, QueueCounters},
    net::page_pool::{PagePool, RxPage},
    net::skbuff::SkBuff,
    sync::lock_bh,
};
use crate::nic::Nic;
use crate::recovery::QueueHealth;
use crate::regs::Registers;
use crate::ring::{RingIndex, RingSize};
use crate::selftest::IrqCount;

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
    /// `tx_packets`).
    pub(crate) tx_tso: Atomic<u64>,
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
            tx_timeouts: Atomic::new(0),
            bad_completions: Atomic::new(0),
            rx_crc_errors: Atomic::new(0),
            resets: Atomic::new(0),
            missed_irqs: Atomic::new(0),
        }
    }
}

pub(crate) fn bump(counter: &Atomic<u64>, by: u64) {
    counter.fetch_add(by, Relaxed);
}

/// Most descriptors one TX frame takes: its head and `MAX_SKB_FRAGS`
/// (17) fragments; a frame with more fragments is linearised first. The
/// queue stops while fewer descriptors than this are free.
const TX_MAX_DESCS: u16 = 18;

/// Sizes of one queue pair's rings and buffers.
#[derive(Clone, Copy, Debug)]
pub(crate) struct QueueGeometry {
    /// TX ring entries.
    pub(crate) tx: RingSize,
    /// RX ring entries.
    pub(crate) rx: RingSize,
    /// Largest frame an RX buffer must hold (for the MTU).
    pub(crate) rx_frame: u32,
}

impl QueueGeometry {
    fn cq_entries(&self) -> u32 {
        (u32::from(self.tx.get()) + u32::from(self.rx.get())).next_power_of_two()
    }
}

/// A descriptor ring in DMA memory shared with the card.
struct Ring {
    desc: DmaBuffer,
    size: RingSize,
    /// TX: oldest descriptor the card has not completed. RX: next buffer
    /// the card fills.
    head: RingIndex,
    /// Next descriptor to post.
    tail: RingIndex,
}

impl Ring {
    /// A ring of `size` descriptors of `desc_size` bytes.
    fn alloc(dma: &DmaDevice, size: RingSize, desc_size: usize) -> Result<Self> {
        Ok(Self {
            desc: dma.alloc(usize::from(size.get()) * desc_size)?,
            size,
            head: RingIndex::default(),
            tail: RingIndex::default(),
        })
    }

    fn in_flight(&self) -> u16 {
        self.size.distance(self.head, self.tail)
    }

    /// Free descriptors; one stays unused so full and empty differ.
    fn free(&self) -> u16 {
        self.size.get() - 1 - self.in_flight()
    }
}

/// A slot table with one entry per ring descriptor.
fn slots<T>(size: RingSize, empty: impl Fn() -> T) -> Result<KVec<T>> {
    let mut v = KVec::with_capacity(usize::from(size.get()), GFP_KERNEL)?;
    for _ in 0..size.get() {
        v.push(empty(), GFP_KERNEL)?;
    }
    Ok(v)
}

struct CompletionQueue {
    mem: DmaBuffer,
    entries: u32,
    head: u32,
    phase: bool,
}

impl CompletionQueue {
    /// Moves past the entry at `head`, flipping the expected phase at the wrap.
    fn advance(&mut self) {
        self.head += 1;
        if self.head == self.entries {
            self.head = 0;
            self.phase = !self.phase;
        }
    }
}

/// What the driver holds for one TX descriptor until the card completes it.
#[derive(Default)]
struct TxSlot {
    /// The part of the frame the descriptor points at.
    mapping: Option<TxMapping>,
    /// On a frame's last descriptor: the skb, freed at its completion.
    skb: Option<SkBuff>,
}

/// The TX side of a running queue pair (xmit and TX completions).
struct TxState {
    ring: Ring,
    /// Declared after `ring` but dropped before `dma`: mappings unmap.
    slots: KVec<TxSlot>,
    dma: DmaDevice,
    csum: bool,
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

/// The completion queue and RX side of a running queue pair (NAPI only).
struct RxState {
    cq: CompletionQueue,
    ring: Ring,
    /// The page posted at each descriptor. Dropped before `pool`.
    pages: KVec<Option<RxPage>>,
    pool: PagePool,
}

impl RxState {
    /// Posts `page` at the RX tail and advances it.
    fn post(&mut self, page: RxPage) -> Result {
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
    /// Counters (they survive down/up).
    pub(crate) stats: QueueStats,
    /// Set by the TX watchdog, taken by the reset work.
    reset_requested: Atomic<u32>,
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
    ) -> Result<Arc<Self>> {
        let pair_dev = dev.clone();
        let pair = try_pin_init!(QueuePair {
            index,
            regs,
            dev: pair_dev,
            rx <- new_spinlock!(None),
            tx <- new_spinlock!(None),
            stats: QueueStats::new(),
            reset_requested: Atomic::new(0),
            polls: Atomic::new(0),
            polling: Atomic::new(0),
            health <- new_mutex!(QueueHealth::default()),
        }? Error);
        Arc::pin_init(WithNapi::new(&dev, u32::from(index), pair), GFP_KERNEL)
    }

    /// The health check of a running pair: a completion that waited a
    /// whole check interval without a poll lost its interrupt. Counts it,
    /// logs (rate-limited), and polls. Process context.
    pub(crate) fn check_interrupts(&self) {
        let waiting = {
            let guard = lock_bh(&self.rx);
            guard.as_ref().is_some_and(|rx| read_cqe(&rx.cq).is_some())
        };
        let lost = self
            .health
            .lock()
            .irq
            .check(waiting, self.polls.load(Relaxed));
        if !lost {
            return;
        }
        bump(&self.stats.missed_irqs, 1);
        if net_ratelimit() {
            pr_warn!(
                "{}: queue pair {}: completion waiting without an interrupt, polling\n",
                self.dev.get().name(),
                self.index
            );
        }
        self.napi().schedule_from_task();
    }

    /// Records the IRQ of this pair's vector in its NAPI context.
    pub(crate) fn set_irq(&self, irq: u32) {
        self.napi().set_irq(irq);
    }

    /// Posts every RX buffer, enables NAPI and arms the interrupt.
    pub(crate) fn start(&self) -> Result {
        {
            let mut guard = lock_bh(&self.rx);
            let rx = (*guard).as_mut().ok_or(EINVAL)?;
            for _ in 0..rx.ring.size.get() - 1 {
                let page = rx.pool.alloc().ok_or(ENOMEM)?;
                rx.post(page)?;
            }
            self.doorbell(regs::DB_RX_TAIL, u32::from(rx.ring.tail.get()));
        }
        self.napi().enable();
        self.napi().link_queue(u32::from(self.index), true);
        self.polling.store(1, Relaxed);
        self.doorbell(regs::DB_CQ_HEAD, CQ_ARM);
        Ok(())
    }

    /// Allocates rings and buffers of `geo` and returns the card's create
    /// command; the queue runs once the card accepted it and
    /// [`QueueVector::start`] ran.
    pub(crate) fn prepare(
        &self,
        dma: &DmaDevice,
        geo: QueueGeometry,
        tx_csum: bool,
    ) -> Result<hw::QpConfig> {
        let cq_entries = geo.cq_entries();
        let tx = TxState {
            ring: Ring::alloc(dma, geo.tx, TxDesc::SIZE)?,
            slots: slots(geo.tx, TxSlot::default)?,
            dma: dma.clone(),
            csum: tx_csum,
        };
        let rx = RxState {
            cq: CompletionQueue {
                mem: dma.alloc(cq_entries as usize * Cqe::SIZE)?,
                entries: cq_entries,
                head: 0,
                phase: true,
            },
            ring: Ring::alloc(dma, geo.rx, RxDesc::SIZE)?,
            pages: slots(geo.rx, || None)?,
            pool: PagePool::new(
                dma,
                self.napi(),
                u32::from(self.index),
                u32::from(geo.rx.get()),
                geo.rx_frame,
            )?,
        };
        let cmd = hw::QpConfig {
            qp: self.index,
            vector: hw::qp_vector(self.index),
            tx_entries: geo.tx.get(),
            rx_entries: geo.rx.get(),
            tx_ring: tx.ring.desc.dma_addr(0)?,
            rx_ring: rx.ring.desc.dma_addr(0)?,
            cq: rx.cq.mem.dma_addr(0)?,
            cq_entries,
        };
        *lock_bh(&self.rx) = Some(rx);
        *lock_bh(&self.tx) = Some(tx);
        Ok(cmd)
    }

    /// Stops polling (if [`Self::start`] got that far) and frees the
    /// rings (the card's queue must be destroyed first, or the device
    /// reset).
    pub(crate) fn stop(&self) {
        if self.polling.xchg(0, Relaxed) != 0 {
            self.napi().link_queue(u32::from(self.index), false);
            self.napi().disable();
        }
        // Freed outside the locks: destroying a page pool may sleep.
        let rx = lock_bh(&self.rx).take();
        let tx = lock_bh(&self.tx).take();
        drop((rx, tx));
    }
}

impl QueuePair {
    /// Asks for this pair to be reset; true if it was not asked already.
    pub(crate) fn request_reset(&self) -> bool {
        self.reset_requested.xchg(1, Relaxed) == 0
    }

    /// The card wrote a completion the ring cannot match (index outside
    /// what is in flight, bogus length): from here on its completions and
    /// the driver's ring no longer line up, so the pair is reset. Counted
    /// always, logged once per reset.
    fn out_of_step(&self) {
        bump(&self.stats.bad_completions, 1);
        if self.request_reset() {
            let dev = self.dev.get();
            pr_warn!(
                "{}: queue pair {}: completion out of step with its ring, resetting it\n",
                dev.name(),
                self.index
            );
            dev.data().schedule_work();
        }
    }

    /// Whether a reset was asked for since the last call.
    pub(crate) fn take_reset_request(&self) -> bool {
        self.reset_requested.xchg(0, Relaxed) != 0
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

    /// RX and TX packet/byte counters, for qstats.
    pub(crate) fn counters(&self) -> (QueueCounters, QueueCounters) {
        let s = &self.stats;
        (
            QueueCounters {
                packets: s.rx_packets.load(Relaxed),
                bytes: s.rx_bytes.load(Relaxed),
            },
            QueueCounters {
                packets: s.tx_packets.load(Relaxed),
                bytes: s.tx_bytes.load(Relaxed),
            },
        )
    }

    fn doorbell(&self, reg: usize, value: u32) {
        let offset = regs::QP_DOORBELLS + usize::from(self.index) * regs::QP_DOORBELL_STRIDE + reg;
        // A failed write means the device is gone; the queue stalls and the
        // TX watchdog reports it.
        let _ = self.regs.write(offset, value);
    }

    /// Sends one frame on this queue pair.
    pub(crate) fn xmit(&self, dev: &NetDev<Nic>, mut skb: SkBuff) {
        let mut guard = self.tx.lock();
        let Some(state) = &mut *guard else {
            bump(&self.stats.tx_dropped, 1);
            return;
        };
        if skb.nr_frags() >= u32::from(TX_MAX_DESCS) && skb.linearize().is_err() {
            bump(&self.stats.tx_dropped, 1);
            return;
        }
        if state.ring.free() < TX_MAX_DESCS {
            // The queue stops while fewer are free; this is a race with
            // a resize. Drop rather than ask the stack to retry.
            bump(&self.stats.tx_busy, 1);
            dev.tx_stop(self.index);
            return;
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
                bump(&self.stats.tx_tso, 1);
                (segs, len + (segs - 1) * u32::from(tso.hdr_len))
            }
            Some(_) => {
                // TSO needs the checksum offload; the stack never asks for
                // one without the other.
                bump(&self.stats.tx_dropped, 1);
                return;
            }
            None => (1, len),
        };
        let Ok(last) = state.post(&skb, offloads) else {
            bump(&self.stats.tx_dropped, 1);
            return;
        };
        bump(&self.stats.tx_packets, u64::from(packets));
        bump(&self.stats.tx_bytes, u64::from(bytes));
        state.slots[usize::from(last.get())].skb = Some(skb);
        if state.ring.free() < TX_MAX_DESCS {
            dev.tx_stop(self.index);
        }
        let tail = state.ring.tail.get();
        drop(guard);
        self.doorbell(regs::DB_TX_TAIL, u32::from(tail));
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
        let tail = state.ring.tail.get();
        drop(guard);
        self.doorbell(regs::DB_TX_TAIL, u32::from(tail));
        true
    }

    /// Retires the TX frame whose last descriptor a completion names:
    /// unmaps its parts, frees its skb, and wakes the queue if it stopped
    /// for lack of room.
    fn complete_tx(&self, dev: &NetDev<Nic>, cqe: Cqe) {
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
                self.out_of_step();
                return;
            }
        };
        loop {
            let slot = core::mem::take(&mut state.slots[usize::from(tx.head.get())]);
            let done = tx.head == last;
            tx.head = tx.size.next(tx.head);
            drop(slot.mapping);
            if let Some(skb) = slot.skb {
                skb.consume();
            }
            if done {
                break;
            }
        }
        // Under the lock, so a concurrent xmit cannot stop the queue
        // between this check and the wake.
        if tx.free() >= TX_MAX_DESCS && dev.tx_stopped(self.index) {
            dev.tx_wake(self.index);
        }
    }

    /// Hands the frame of an RX completion to the stack and posts a fresh
    /// page in its place. Runs with `rx` locked but `tx` free (the stack
    /// may transmit).
    fn complete_rx(&self, napi: &Napi, rx: &mut RxState, cqe: Cqe, rx_csum: bool) {
        let len = cqe.len;
        let head = usize::from(rx.ring.head.get());
        if rx.ring.size.index(cqe.index) != Some(rx.ring.head)
            || len < 14
            || len > rx.pool.frame_room()
            || rx.pages[head].is_none()
        {
            self.out_of_step();
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
                if cqe.flags & Cqe::HASH != 0 {
                    skb.set_hash(cqe.hash, cqe.flags & Cqe::HASH_L4 != 0);
                }
                if cqe.flags & Cqe::CSUM_OK != 0 && rx_csum {
                    skb.set_csum_unnecessary();
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

/// The next completion, if the card has written it (its phase is this
/// lap's).
fn read_cqe(cq: &CompletionQueue) -> Option<Cqe> {
    let offset = cq.head as usize * Cqe::SIZE;
    cq.mem
        .read_published(offset, ENTRY_FLAGS_OFFSET, |flags| {
            (flags & Cqe::PHASE != 0) == cq.phase
        })
        .map(|raw| Cqe::from_bytes(&raw))
}

impl NapiPoll for QueuePair {
    fn poll(&self, napi: &Napi, budget: u32) -> u32 {
        self.polls.fetch_add(1, Relaxed);
        let dev = self.dev.get();
        let rx_csum = dev.features().rx_csum;
        let mut received = 0;
        let mut guard = self.rx.lock();
        let Some(rx) = &mut *guard else {
            // Stopped meanwhile: nothing to poll, nothing to re-arm.
            drop(guard);
            napi.complete_done(0);
            return 0;
        };
        let rx_tail_before = rx.ring.tail;
        while received < budget {
            let Some(cqe) = read_cqe(&rx.cq) else {
                break;
            };
            rx.cq.advance();
            if cqe.flags & Cqe::RX != 0 {
                self.complete_rx(napi, rx, cqe, rx_csum);
                received += 1;
            } else {
                self.complete_tx(dev, cqe);
            }
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
