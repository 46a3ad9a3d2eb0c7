// SPDX-License-Identifier: GPL-2.0

//! A queue pair as the card runs it: TX ring, RX ring and the completion
//! queue they share, all in host memory.
//!
//! Indices written by the driver (doorbells) are untrusted: a tail outside
//! the ring is ignored and counted, never used to address memory.

use std::sync::atomic::{fence, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::clock::CardClock;
use crate::dma::{DmaFault, DmaSpace, HostMem as _};
use crate::gro::{Coalescer, Offer, Release};
use crate::hw::{
    db_page, qp_flags, CqWord, Cqe, QpConfig, RxDesc, TxDesc, CQ_ARM, GRO_MAX_BUFFERS,
    HDS_HDR_SLOT, HDS_THRESH_MAX, MAX_FRAME, MAX_RING_ENTRIES, MIN_RING_ENTRIES,
};
use crate::split;
use crate::stream::{RxStream, StreamDrop, StreamFault};
use crate::train::TcpTrain;

/// Bytes a doorbell moves over PCIe: one 32-bit posted write.
pub const DOORBELL_BYTES: u64 = 4;
/// Bytes an interrupt moves over PCIe: the 32-bit MSI-X message.
pub const MSI_BYTES: u64 = 4;

/// Per-queue-pair counters, as the card counts them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpStats {
    /// Frames sent (a TSO frame counts once).
    pub tx_packets: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// TX doorbells rung (each may cover any number of frames).
    pub tx_doorbells: u64,
    /// TX tails the card found in the doorbell page while it polled it,
    /// with no doorbell rung (each may cover any number of frames).
    pub tx_tails_polled: u64,
    /// RX tail doorbells rung (each may announce any number of buffers).
    pub rx_doorbells: u64,
    /// CQ head doorbells rung.
    pub cq_doorbells: u64,
    /// RX tails the card took from the doorbell page ([`qp_flags::RX_CQ_IN_PAGE`]:
    /// each a change it found when it needed a buffer).
    pub rx_tails_in_page: u64,
    /// CQ words the card took from the doorbell page (each a change it
    /// found when it decided whether to interrupt).
    pub cq_words_in_page: u64,
    /// Doorbells of any kind (TX tail, RX tail, CQ head).
    pub doorbells: u64,
    /// Frames delivered into RX buffers.
    pub rx_packets: u64,
    /// Bytes delivered.
    pub rx_bytes: u64,
    /// Frames dropped because no RX buffer was posted.
    pub rx_no_buffer: u64,
    /// Metadata bytes moved over PCIe: descriptors and completions the
    /// card read or wrote, doorbells written to it ([`DOORBELL_BYTES`]
    /// each) and interrupt messages it sent ([`MSI_BYTES`] each).
    pub dma_meta_bytes: u64,
    /// Doorbells or descriptors the card rejected.
    pub bad_requests: u64,
    /// TSO and USO frames among `tx_packets`.
    pub tso_frames: u64,
    /// TCP segments and UDP datagrams cut from them.
    pub tso_segments: u64,
    /// Interrupts raised.
    pub irqs: u64,
    /// Of those, raised while interrupt moderation was on.
    pub irqs_moderated: u64,
    /// Completions written wrong or not at all (fault injection).
    pub faults_injected: u64,
    /// RX stream: times the card published its tail (notifications).
    pub stream_notifications: u64,
    /// Receive coalescing: frames made of more than one segment.
    pub gro_frames: u64,
    /// The segments in them.
    pub gro_segments: u64,
    /// Header/data split: frames written split (headers in the header
    /// slot, payload in the buffers).
    pub hds_frames: u64,
    /// Frames a payload-only pair ([`qp_flags::PAYLOAD_ONLY`]) could
    /// neither split nor fit whole in a header slot: dropped.
    pub hds_drops: u64,
}

impl QpStats {
    /// Packets that crossed the wire: received frames, sent frames, and
    /// for TSO frames their segments instead.
    pub fn wire_packets(&self) -> u64 {
        self.rx_packets + self.tx_packets - self.tso_frames + self.tso_segments
    }

    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &QpStats) {
        self.tx_packets += other.tx_packets;
        self.tx_bytes += other.tx_bytes;
        self.tx_doorbells += other.tx_doorbells;
        self.tx_tails_polled += other.tx_tails_polled;
        self.rx_doorbells += other.rx_doorbells;
        self.cq_doorbells += other.cq_doorbells;
        self.rx_tails_in_page += other.rx_tails_in_page;
        self.cq_words_in_page += other.cq_words_in_page;
        self.doorbells += other.doorbells;
        self.rx_packets += other.rx_packets;
        self.rx_bytes += other.rx_bytes;
        self.rx_no_buffer += other.rx_no_buffer;
        self.dma_meta_bytes += other.dma_meta_bytes;
        self.bad_requests += other.bad_requests;
        self.tso_frames += other.tso_frames;
        self.tso_segments += other.tso_segments;
        self.irqs += other.irqs;
        self.irqs_moderated += other.irqs_moderated;
        self.faults_injected += other.faults_injected;
        self.stream_notifications += other.stream_notifications;
        self.gro_frames += other.gro_frames;
        self.gro_segments += other.gro_segments;
        self.hds_frames += other.hds_frames;
        self.hds_drops += other.hds_drops;
    }
}

/// Interrupt moderation of a queue pair: an armed queue with completions
/// raises its vector once `frames` completions are pending or the oldest
/// has waited `usecs`, whichever comes first. `usecs == 0`: at once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Moderation {
    /// Longest wait of a completion, in microseconds.
    pub usecs: u32,
    /// Pending completions that raise at once (0: no count limit).
    pub frames: u32,
}

/// What happened to a frame offered to [`QueuePair::deliver`].
#[derive(Debug, PartialEq, Eq)]
pub enum RxOutcome {
    /// Written into a buffer (or, the frame lost, aggregates released
    /// before it were); raise the vector if true.
    Delivered { raise: bool },
    /// No buffer posted, or the frame did not fit; dropped.
    Dropped,
}

impl RxOutcome {
    /// The outcome of two deliveries: delivered if either was, raising
    /// if either asked to.
    fn or(self, other: Self) -> Self {
        match (self, other) {
            (Self::Delivered { raise: a }, Self::Delivered { raise: b }) => {
                Self::Delivered { raise: a || b }
            }
            (d @ Self::Delivered { .. }, Self::Dropped) | (Self::Dropped, d) => d,
        }
    }
}

/// How a faulty completion engine gets a completion wrong (fault injection).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CqeFault {
    /// The ring index is off by 0x21.
    Index,
    /// An RX completion claims 64 KiB more than the buffer holds (TX
    /// completions, which carry no length, are left alone).
    Length,
    /// The completion is written twice.
    Duplicate,
    /// The completion is never written.
    Drop,
    /// RX stream only: the published tail lies beyond the ring (from
    /// then on, until the pair is created again).
    Tail,
    /// An RX completion claims a split ([`Cqe::SPLIT`]) with 3 bytes of
    /// headers, shorter than any frame's (on a pair that does not
    /// split: headers in slots it has not got).
    Header,
}

impl CqeFault {
    /// Parses a harness name: `index`, `length`, `dup`, `drop`, `tail`,
    /// `hdr`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "index" => Some(Self::Index),
            "length" => Some(Self::Length),
            "dup" => Some(Self::Duplicate),
            "drop" => Some(Self::Drop),
            "tail" => Some(Self::Tail),
            "hdr" => Some(Self::Header),
            _ => None,
        }
    }
}

/// One frame the card took from the TX ring.
pub struct TxFrame {
    /// The frame's bytes, all buffers concatenated.
    pub data: Vec<u8>,
    /// The first descriptor (offload requests).
    pub first: TxDesc,
}

/// A running queue pair.
pub struct QueuePair {
    cfg: QpConfig,
    tx_head: u16,
    tx_tail: u16,
    /// The doorbell page's TX tail the card last acted on, valid or not
    /// (a pair with [`qp_flags::TX_TAIL_IN_PAGE`]).
    page_tail_seen: u32,
    rx_head: u16,
    rx_tail: u16,
    cq_tail: u32,
    cq_phase: bool,
    cq_head: u32,
    armed: bool,
    moderation: Moderation,
    /// A hung TX engine (fault injection): doorbells are recorded, frames
    /// are not sent or completed. Only recreating the pair clears it.
    tx_stalled: bool,
    /// The descriptors of the frame being read (kept: no allocation per
    /// frame).
    tx_descs: Vec<TxDesc>,
    /// The next completions to get wrong, and how (fault injection: a
    /// card whose completion engine misbehaves).
    cqe_fault: Option<(CqeFault, u32)>,
    /// When the oldest completion the driver has not been told about was
    /// written.
    oldest_unsignalled: Option<Instant>,
    /// Bus address of the pair's RX tail in the doorbell page (its CQ
    /// word follows), for a pair with [`qp_flags::RX_CQ_IN_PAGE`].
    page_rx: Option<u64>,
    /// The page's RX tail and CQ word as the card last took them: a word
    /// is news (a doorbell) only when it changed.
    page_rx_seen: u32,
    page_cq_seen: u32,
    /// Streaming RX in place of the RX ring, if the pair was created so.
    stream: Option<RxStream>,
    /// Stream records published since the last interrupt (moderation
    /// counts them as it counts completions).
    stream_unsignalled: u32,
    /// Receive coalescing, while the function has it on (never on a
    /// streaming pair), and how long an aggregate may stay open.
    gro: Option<Coalescer>,
    gro_hold: Duration,
    /// Length of the last RX buffer the card looked at: the driver posts
    /// buffers of one size, so a coalesced frame is kept to what
    /// [`GRO_MAX_BUFFERS`] of them hold.
    rx_buf_len: u32,
    /// The card's clock, which stamps completions that ask for it.
    clock: Option<Arc<CardClock>>,
    /// Every RX completion is stamped ([`hw::AdminCmd::SetTimestamps`]).
    rx_tstamp: bool,
    /// Counters.
    pub stats: QpStats,
}

/// Records `word`, read from the doorbell page, in `seen`; whether it
/// is news (the driver wrote it since the card last looked).
fn news(seen: &mut u32, word: u32) -> bool {
    let news = word != *seen;
    *seen = word;
    news
}

fn valid_ring(entries: u16) -> bool {
    entries.is_power_of_two() && (MIN_RING_ENTRIES..=MAX_RING_ENTRIES).contains(&entries)
}

impl QueuePair {
    /// Checks a create request; `None` if any size is out of range or a
    /// flag unknown.
    pub fn new(cfg: QpConfig) -> Option<Self> {
        let cq_needed = u32::from(cfg.tx_entries) + u32::from(cfg.rx_entries);
        let in_page = cfg.flags & qp_flags::RX_CQ_IN_PAGE != 0;
        let payload_only = cfg.flags & qp_flags::PAYLOAD_ONLY != 0;
        let known = qp_flags::TX_TAIL_IN_PAGE | qp_flags::RX_CQ_IN_PAGE | qp_flags::PAYLOAD_ONLY;
        if cfg.flags & !known != 0
            || (in_page && cfg.cq_entries > db_page::CQ_WORD_MAX_ENTRIES)
            || (payload_only && (cfg.hdr_ring == 0 || cfg.hds_thresh != 0))
            || !valid_ring(cfg.tx_entries)
            || !valid_ring(cfg.rx_entries)
            || !cfg.cq_entries.is_power_of_two()
            || cfg.cq_entries < cq_needed
            || cfg.hds_thresh > HDS_THRESH_MAX
        {
            return None;
        }
        Some(Self {
            cfg,
            tx_head: 0,
            tx_tail: 0,
            page_tail_seen: 0,
            rx_head: 0,
            rx_tail: 0,
            cq_tail: 0,
            cq_phase: true,
            cq_head: 0,
            armed: false,
            moderation: Moderation::default(),
            tx_stalled: false,
            tx_descs: Vec::new(),
            cqe_fault: None,
            oldest_unsignalled: None,
            page_rx: None,
            page_rx_seen: 0,
            page_cq_seen: 0,
            stream: None,
            stream_unsignalled: 0,
            gro: None,
            gro_hold: Duration::ZERO,
            rx_buf_len: 0,
            clock: None,
            rx_tstamp: false,
            stats: QpStats::default(),
        })
    }

    /// The pair receives into `stream` instead of its RX ring.
    pub fn with_stream(mut self, stream: RxStream) -> Self {
        self.stream = Some(stream);
        self
    }

    /// Whether the pair receives into a stream.
    pub fn streaming(&self) -> bool {
        self.stream.is_some()
    }

    /// The TX tail last written (or read from the page).
    pub fn tx_tail(&self) -> u32 {
        u32::from(self.tx_tail)
    }

    /// MSI-X vector of this pair.
    pub fn vector(&self) -> u16 {
        self.cfg.vector
    }

    /// Whether the pair's TX tail is in the doorbell page.
    pub fn tx_tail_in_page(&self) -> bool {
        self.cfg.flags & qp_flags::TX_TAIL_IN_PAGE != 0
    }

    /// Whether the pair's RX tail and CQ head are in the doorbell page.
    pub fn rx_cq_in_page(&self) -> bool {
        self.cfg.flags & qp_flags::RX_CQ_IN_PAGE != 0
    }

    /// Where the pair's RX tail and CQ word are (a pair with
    /// [`qp_flags::RX_CQ_IN_PAGE`]; the page's words are cleared).
    pub fn use_page_words(&mut self, addr: u64) {
        self.page_rx = Some(addr);
        self.page_rx_seen = 0;
        self.page_cq_seen = 0;
    }

    /// Takes the RX tail from the doorbell page if it changed (a pair
    /// with [`qp_flags::RX_CQ_IN_PAGE`]), checked as a trapped one is.
    fn sync_rx_tail(&mut self, dma: &DmaSpace) {
        let Some(addr) = self.page_rx else {
            return;
        };
        // An unreadable page reads as no change.
        let Ok(tail) = dma.load_u32(addr) else {
            return;
        };
        if news(&mut self.page_rx_seen, tail) {
            self.stats.rx_tails_in_page += 1;
            self.set_rx_tail(tail);
        }
    }

    /// Takes the CQ word from the doorbell page if it changed (a pair
    /// with [`qp_flags::RX_CQ_IN_PAGE`]): a new word is a CQ head
    /// doorbell, arming the pair if it says so, though not raising at
    /// once (the driver looks for a completion after arming).
    fn sync_cq(&mut self, dma: &DmaSpace) {
        let Some(addr) = self.page_rx else {
            return;
        };
        let Ok(raw) = dma.load_u32(addr + 4) else {
            return;
        };
        if !news(&mut self.page_cq_seen, raw) {
            return;
        }
        self.stats.cq_words_in_page += 1;
        let word = CqWord::of_raw(raw);
        self.note_cq_head(word.head(), word.arm());
    }

    /// A trapped RX tail or CQ head doorbell of a pair that keeps them in
    /// the page: the value written is ignored (an older one than the
    /// page's, it could send the card back), the page is read.
    pub fn page_kick(&mut self, dma: &DmaSpace) -> bool {
        self.sync_rx_tail(dma);
        self.decide(dma, Instant::now())
    }

    /// Reads the page's CQ word, then takes one raise decision.
    fn decide(&mut self, dma: &DmaSpace, now: Instant) -> bool {
        if self.page_rx.is_some() {
            // What was just written, then the arm read: the
            // driver arms, fences, and looks for a completion, so one of
            // the two sees the other's store.
            fence(Ordering::SeqCst);
            self.sync_cq(dma);
        }
        self.take_arm(now)
    }

    /// Notes `tail`, read from the doorbell page; whether it is news.
    pub fn take_page_tail(&mut self, tail: u32) -> bool {
        news(&mut self.page_tail_seen, tail)
    }

    /// Completions written but not yet consumed by the driver.
    fn cq_pending(&self) -> u32 {
        self.cq_tail.wrapping_sub(self.cq_head) & (self.cfg.cq_entries - 1)
    }

    /// Posts a completion, unless fault injection gets it wrong.
    fn post_cqe(&mut self, dma: &DmaSpace, mut cqe: Cqe) -> Result<(), DmaFault> {
        let fault = match &mut self.cqe_fault {
            Some((kind, n))
                if *n > 0
                    && (!matches!(kind, CqeFault::Length | CqeFault::Header)
                        || cqe.flags & Cqe::RX != 0) =>
            {
                *n -= 1;
                self.stats.faults_injected += 1;
                Some(*kind)
            }
            _ => None,
        };
        match fault {
            Some(CqeFault::Index) => cqe.index = cqe.index.wrapping_add(0x21),
            Some(CqeFault::Length) => cqe.len += 0x1_0000,
            Some(CqeFault::Duplicate) => self.write_cqe(dma, cqe)?,
            Some(CqeFault::Drop) => return Ok(()),
            Some(CqeFault::Header) => {
                cqe.flags |= Cqe::SPLIT;
                cqe.hdr_len = 3;
            }
            // Stream faults never reach the completion queue.
            Some(CqeFault::Tail) | None => {}
        }
        self.write_cqe(dma, cqe)
    }

    /// Writes `cqe` at the CQ tail with the current phase.
    fn write_cqe(&mut self, dma: &DmaSpace, mut cqe: Cqe) -> Result<(), DmaFault> {
        // While completions wait unsignalled, a pair in page mode learns
        // first how far the driver read: if it read everything,
        // moderation's wait starts at this entry, not at one the driver
        // already took (a trapped CQ head write would have told the card
        // at once). With none waiting the wait starts here anyway.
        if self.oldest_unsignalled.is_some() {
            self.sync_cq(dma);
        }
        if self.cq_phase {
            cqe.flags |= Cqe::PHASE;
        }
        if self.rx_tstamp && cqe.flags & Cqe::RX != 0 {
            cqe.flags |= Cqe::TSTAMP;
        }
        if cqe.flags & Cqe::TSTAMP != 0 {
            match &self.clock {
                Some(clock) => cqe.timestamp = clock.now_ns(),
                None => cqe.flags &= !Cqe::TSTAMP,
            }
        }
        let addr = self.cfg.cq + u64::from(self.cq_tail) * Cqe::SIZE as u64;
        dma.write_flags_last(addr, &cqe.to_bytes())?;
        self.stats.dma_meta_bytes += Cqe::SIZE as u64;
        self.oldest_unsignalled.get_or_insert_with(Instant::now);
        self.cq_tail += 1;
        if self.cq_tail == self.cfg.cq_entries {
            self.cq_tail = 0;
            self.cq_phase = !self.cq_phase;
        }
        Ok(())
    }

    /// Hangs the TX engine until the pair is destroyed (fault injection).
    pub fn stall_tx(&mut self) {
        self.tx_stalled = true;
    }

    /// Gets the next `n` completions wrong in the way of `kind` (fault
    /// injection); `n == 0` cancels what is still pending.
    /// On a streaming pair, index, length and tail faults hit the
    /// stream (its records' sequence numbers and lengths, its tail).
    pub fn fault_completions(&mut self, kind: CqeFault, n: u32) {
        let stream_fault = match kind {
            CqeFault::Index => Some(StreamFault::Seq),
            CqeFault::Length => Some(StreamFault::Length),
            CqeFault::Tail => Some(StreamFault::Tail),
            _ => None,
        };
        match (&mut self.stream, stream_fault) {
            (Some(stream), Some(fault)) => stream.fault(fault, n),
            (None, Some(StreamFault::Tail)) => {}
            _ => self.cqe_fault = Some((kind, n)),
        }
    }

    /// Sets interrupt moderation.
    pub fn set_moderation(&mut self, moderation: Moderation) {
        self.moderation = moderation;
    }

    /// Stamps completions with `clock`: every RX one with `rx`, a TX one
    /// whose frame asks ([`TxDesc::TSTAMP`]).
    pub fn set_timestamps(&mut self, clock: Arc<CardClock>, rx: bool) {
        self.clock = Some(clock);
        self.rx_tstamp = rx;
    }

    /// When moderation will raise the vector if nothing else does first.
    pub fn deadline(&self) -> Option<Instant> {
        let moderation = self
            .oldest_unsignalled
            .filter(|_| self.armed)
            .map(|oldest| oldest + Duration::from_micros(u64::from(self.moderation.usecs)));
        let gro = self.gro.as_ref().and_then(|g| g.deadline(self.gro_hold));
        moderation.into_iter().chain(gro).min()
    }

    /// Timer: coalesced frames whose time is up leave; whether to raise
    /// now (interrupt moderation).
    pub fn tick(&mut self, dma: &DmaSpace, now: Instant) -> bool {
        self.flush_gro(dma, Some(now)) | self.decide(dma, now)
    }

    /// Takes one raise decision after posting completions or arming:
    /// raise if armed with completions pending and moderation allows.
    fn take_arm(&mut self, now: Instant) -> bool {
        let unread = self.stream.as_ref().is_some_and(RxStream::unread);
        if !self.armed || (self.cq_pending() == 0 && !unread) {
            return false;
        }
        let m = self.moderation;
        let pending = self.cq_pending() + self.stream_unsignalled;
        // Completions the driver was already told about but re-armed
        // without consuming are raised again at once.
        let due = self.oldest_unsignalled.is_none_or(|oldest| {
            let by_count = m.frames != 0 && pending >= m.frames;
            by_count || now >= oldest + Duration::from_micros(u64::from(m.usecs))
        });
        if !due {
            return false;
        }
        self.armed = false;
        self.oldest_unsignalled = None;
        self.stream_unsignalled = 0;
        self.stats.irqs += 1;
        self.stats.dma_meta_bytes += MSI_BYTES;
        if m.usecs != 0 {
            self.stats.irqs_moderated += 1;
        }
        true
    }

    /// Counts a doorbell written to this pair, whatever it says.
    pub fn count_doorbell(&mut self) {
        self.stats.doorbells += 1;
        self.stats.dma_meta_bytes += DOORBELL_BYTES;
    }

    /// CQ head doorbell: records the driver's head and arm request. Returns
    /// whether to raise the vector now (armed with completions pending).
    pub fn cq_doorbell(&mut self, value: u32) -> bool {
        self.stats.cq_doorbells += 1;
        if self.note_cq_head(value & !CQ_ARM, value & CQ_ARM != 0) && value & CQ_ARM != 0 {
            return self.take_arm(Instant::now());
        }
        false
    }

    /// Records the driver's CQ head and arm request; false (counted) if
    /// the head is outside the queue.
    fn note_cq_head(&mut self, head: u32, arm: bool) -> bool {
        if head >= self.cfg.cq_entries {
            self.stats.bad_requests += 1;
            return false;
        }
        self.cq_head = head;
        let unread = self.stream.as_ref().is_some_and(RxStream::unread);
        if self.cq_pending() == 0 && !unread {
            // The driver has seen everything: nothing is waiting.
            self.oldest_unsignalled = None;
        }
        if arm {
            self.armed = true;
        }
        true
    }

    /// Stream head doorbell: the driver read the stream up to `head`.
    pub fn stream_doorbell(&mut self, head: u32) {
        let ok = self.stream.as_mut().is_some_and(|s| s.head_doorbell(head));
        if !ok {
            self.stats.bad_requests += 1;
        }
    }

    /// End of a batch of received frames: publishes the stream's tail if
    /// records were written. Returns whether to raise the vector.
    pub fn publish_stream(&mut self, dma: &DmaSpace) -> bool {
        let Some(stream) = &mut self.stream else {
            return false;
        };
        let published = stream.publish(dma);
        self.stats.faults_injected += stream.take_injected();
        match published {
            Ok(0) => false,
            Ok(records) => {
                self.stats.stream_notifications += 1;
                self.stats.dma_meta_bytes += 4;
                self.stream_unsignalled += records;
                self.oldest_unsignalled.get_or_insert_with(Instant::now);
                self.decide(dma, Instant::now())
            }
            Err(_) => {
                self.stats.bad_requests += 1;
                false
            }
        }
    }

    /// RX tail doorbell: the driver posted buffers up to `tail`.
    pub fn rx_doorbell(&mut self, tail: u32) {
        self.stats.rx_doorbells += 1;
        self.set_rx_tail(tail);
    }

    /// The driver's RX tail, from a doorbell or the page; a tail outside
    /// the ring is counted and ignored.
    fn set_rx_tail(&mut self, tail: u32) {
        match u16::try_from(tail) {
            Ok(t) if t < self.cfg.rx_entries => self.rx_tail = t,
            _ => self.stats.bad_requests += 1,
        }
    }

    /// TX tail doorbell: takes every complete frame from the ring, hands
    /// each to `send`, and completes it. Returns whether to raise the vector.
    pub fn tx_doorbell(&mut self, dma: &DmaSpace, tail: u32, send: impl FnMut(TxFrame)) -> bool {
        self.tx_doorbell_shaped(dma, tail, |_, _| true, send)
    }

    /// As [`Self::tx_doorbell`], each frame first offered to `admit` with
    /// its first descriptor and length: a frame it refuses, and those
    /// behind it, stay on the ring for a later call.
    pub fn tx_doorbell_shaped(
        &mut self,
        dma: &DmaSpace,
        tail: u32,
        mut admit: impl FnMut(&TxDesc, usize) -> bool,
        mut send: impl FnMut(TxFrame),
    ) -> bool {
        match u16::try_from(tail) {
            Ok(t) if t < self.cfg.tx_entries => self.tx_tail = t,
            _ => {
                self.stats.bad_requests += 1;
                return false;
            }
        }
        if self.tx_stalled {
            return false;
        }
        let mask = self.cfg.tx_entries - 1;
        let mut completed = false;
        'frames: while self.tx_head != self.tx_tail {
            // The frame's descriptors first, so its data is read into
            // one buffer of the right size (no zero-fill, no regrowth).
            self.tx_descs.clear();
            let mut idx = self.tx_head;
            loop {
                if idx == self.tx_tail {
                    // The frame's EOP descriptor is not posted yet.
                    break 'frames;
                }
                let mut raw = [0u8; TxDesc::SIZE];
                let addr = self.cfg.tx_ring + u64::from(idx) * TxDesc::SIZE as u64;
                if dma.read(addr, &mut raw).is_err() {
                    self.stats.bad_requests += 1;
                    break 'frames;
                }
                self.stats.dma_meta_bytes += TxDesc::SIZE as u64;
                let desc = TxDesc::from_bytes(&raw);
                self.tx_descs.push(desc);
                if desc.flags & TxDesc::EOP != 0 {
                    break;
                }
                idx = (idx + 1) & mask;
            }
            // A frame longer than any the card sends, or with a buffer
            // outside the DMA space, is completed unsent (and counted).
            let first = self.tx_descs.first().copied();
            let total = self.tx_descs.iter().map(|d| d.len as usize).sum::<usize>();
            if first.is_some_and(|f| !admit(&f, total)) {
                break 'frames;
            }
            let mut data = Vec::new();
            if total <= (MAX_FRAME as usize) * 64 {
                data.reserve_exact(total);
                for d in &self.tx_descs {
                    if dma.read_append(d.addr, d.len as usize, &mut data).is_err() {
                        data.clear();
                        break;
                    }
                }
            }
            if data.len() != total {
                self.stats.bad_requests += 1;
            }
            let eop = idx;
            let stamp = first.is_some_and(|f| f.flags & TxDesc::TSTAMP != 0);
            self.tx_head = (idx + 1) & mask;
            if let Some(first) = first {
                if !data.is_empty() {
                    self.stats.tx_packets += 1;
                    self.stats.tx_bytes += data.len() as u64;
                    send(TxFrame { data, first });
                }
            }
            if self
                .post_cqe(
                    dma,
                    Cqe {
                        index: eop,
                        flags: if stamp { Cqe::TSTAMP } else { 0 },
                        ..Cqe::default()
                    },
                )
                .is_err()
            {
                self.stats.bad_requests += 1;
            }
            completed = true;
        }
        completed && self.decide(dma, Instant::now())
    }

    /// Writes a received frame into the next posted RX buffer.
    pub fn deliver(&mut self, dma: &DmaSpace, frame: &[u8], flags: u16, hash: u32) -> RxOutcome {
        if let Some(stream) = &mut self.stream {
            // Announced at the end of the batch ([`Self::publish_stream`]).
            let written = stream.write(dma, frame, flags, hash);
            self.stats.faults_injected += stream.take_injected();
            return match written {
                Ok(meta) => {
                    self.stats.dma_meta_bytes += meta;
                    self.stats.rx_packets += 1;
                    self.stats.rx_bytes += frame.len() as u64;
                    RxOutcome::Delivered { raise: false }
                }
                Err(StreamDrop::NoRoom) => {
                    self.stats.rx_no_buffer += 1;
                    RxOutcome::Dropped
                }
                Err(StreamDrop::Dma(_) | StreamDrop::BadChunk) => {
                    self.stats.bad_requests += 1;
                    RxOutcome::Dropped
                }
            };
        }
        // What was due before this frame came leaves first, as the
        // card's timer would have let it go, however late its thread.
        let now = Instant::now();
        let mut raise = self.flush_gro(dma, Some(now));
        let Some(mut gro) = self.gro.take() else {
            return self.write_rx(dma, frame, flags, hash, 1, 0);
        };
        let max = self.gro_max(dma);
        let offer = gro.offer(frame, flags, hash, now, max, &mut |r: Release<'_>| {
            raise |= self.write_release(dma, r);
        });
        self.gro = Some(gro);
        match offer {
            Offer::Held => RxOutcome::Delivered { raise },
            Offer::Pass => self.write_passed(dma, frame, flags, hash, raise),
        }
    }

    /// The longest frame coalescing may make: what [`GRO_MAX_BUFFERS`]
    /// of the ring's buffers hold (their length learned at the first
    /// look).
    fn gro_max(&mut self, dma: &DmaSpace) -> usize {
        if self.rx_buf_len == 0 {
            self.rx_buf_len = self.peek_rx_buf_len(dma);
        }
        self.rx_buf_len as usize * usize::from(GRO_MAX_BUFFERS)
    }

    /// Writes a frame coalescing passed on, after the aggregates it
    /// released on the way (`released_raise`: writing those asked to
    /// raise the vector). If the frame finds no room, what was released
    /// still raises: the raise was taken (the pair disarmed) as they
    /// were written.
    fn write_passed(
        &mut self,
        dma: &DmaSpace,
        frame: &[u8],
        flags: u16,
        hash: u32,
        released_raise: bool,
    ) -> RxOutcome {
        match self.write_rx(dma, frame, flags, hash, 1, 0) {
            RxOutcome::Delivered { raise } => RxOutcome::Delivered {
                raise: raise || released_raise,
            },
            RxOutcome::Dropped if released_raise => RxOutcome::Delivered { raise: true },
            RxOutcome::Dropped => RxOutcome::Dropped,
        }
    }

    /// A train for this pair ([`TcpTrain`]): its segments, as if each
    /// had arrived with `flags` and `hash`. With coalescing on they join
    /// aggregates from their headers and payload slices; otherwise each
    /// is made a frame and delivered.
    pub fn deliver_train(
        &mut self,
        dma: &DmaSpace,
        train: &TcpTrain<'_>,
        flags: u16,
        hash: u32,
    ) -> RxOutcome {
        // What was due leaves first, as in [`Self::deliver`].
        let now = Instant::now();
        let mut due_raise = self.flush_gro(dma, Some(now));
        let Some(mut gro) = self.gro.take() else {
            return (0..train.count()).fold(RxOutcome::Dropped, |was, i| {
                let now = self.deliver(dma, &train.segment(i), flags, hash);
                was.or(now)
            });
        };
        let max = self.gro_max(dma);
        let mut headers = Vec::with_capacity(train.headers().len());
        let mut outcome = RxOutcome::Dropped;
        for i in 0..train.count() {
            train.segment_header(i, &mut headers);
            let mut raise = std::mem::take(&mut due_raise);
            let offer = gro.offer_parts(
                &headers,
                train.payload(i),
                flags,
                hash,
                now,
                max,
                &mut |r: Release<'_>| {
                    raise |= self.write_release(dma, r);
                },
            );
            let this = match offer {
                Offer::Held => RxOutcome::Delivered { raise },
                Offer::Pass => self.write_passed(dma, &train.segment(i), flags, hash, raise),
            };
            outcome = outcome.or(this);
        }
        self.gro = Some(gro);
        outcome
    }

    /// Turns receive coalescing on (aggregates open for at most `hold`)
    /// or off (`None`; a streaming pair has none); what it holds leaves
    /// first. Returns whether to raise the vector.
    pub fn set_gro(&mut self, dma: &DmaSpace, hold: Option<Duration>) -> bool {
        let raise = self.flush_gro(dma, None);
        self.gro = hold
            .filter(|_| self.stream.is_none())
            .map(|_| Coalescer::default());
        self.gro_hold = hold.unwrap_or_default();
        raise
    }

    /// How long an aggregate may stay open from now on (coalescing on).
    pub fn set_gro_hold(&mut self, hold: Duration) {
        if self.gro.is_some() {
            self.gro_hold = hold;
        }
    }

    /// Coalesced frames leave: those open for the hold time at `now`, or
    /// (`None`) all. Returns whether to raise the vector.
    pub fn flush_gro(&mut self, dma: &DmaSpace, now: Option<Instant>) -> bool {
        let Some(mut gro) = self.gro.take() else {
            return false;
        };
        let mut raise = false;
        if gro.holding() {
            let hold = self.gro_hold;
            let mut out = |r: Release<'_>| raise |= self.write_release(dma, r);
            match now {
                Some(now) => gro.flush_due(now, hold, &mut out),
                None => gro.flush(&mut out),
            }
        }
        self.gro = Some(gro);
        raise
    }

    /// The length of the next posted RX buffer (0 if none is posted or
    /// its descriptor cannot be read).
    fn peek_rx_buf_len(&mut self, dma: &DmaSpace) -> u32 {
        self.sync_rx_tail(dma);
        if self.rx_head == self.rx_tail {
            return 0;
        }
        self.read_rx_desc(dma, self.rx_head).map_or(0, |d| d.len)
    }

    /// The RX descriptor at ring index `idx`.
    fn read_rx_desc(&self, dma: &DmaSpace, idx: u16) -> Result<RxDesc, DmaFault> {
        let mut raw = [0u8; RxDesc::SIZE];
        dma.read(
            self.cfg.rx_ring + u64::from(idx) * RxDesc::SIZE as u64,
            &mut raw,
        )?;
        Ok(RxDesc::from_bytes(&raw))
    }

    fn write_release(&mut self, dma: &DmaSpace, r: Release<'_>) -> bool {
        let outcome = self.write_rx(dma, r.frame, r.flags, r.hash, r.segs, r.mss);
        matches!(outcome, RxOutcome::Delivered { raise: true })
    }

    /// Where header/data split cuts `frame`: after its headers if the
    /// pair splits ([`QpConfig::hdr_ring`]), the frame is longer than the
    /// threshold, its headers fit a header slot and payload follows
    /// them; else 0 (not split). A GFT exception frame goes whole: the
    /// host's exception path reads it as it arrived. A payload-only pair
    /// puts a frame it does not split whole into the slot if it fits
    /// (the whole length); `None`: it does not, and is dropped.
    fn split_at(&self, frame: &[u8], flags: u16) -> Option<usize> {
        let cut = if self.cfg.hdr_ring == 0
            || flags & Cqe::GFT_EXCEPTION != 0
            || frame.len() <= self.cfg.hds_thresh as usize
        {
            0
        } else {
            match split::header_len(frame) {
                Some(h) if h < usize::from(HDS_HDR_SLOT) && h < frame.len() => h,
                _ => 0,
            }
        };
        if cut != 0 || self.cfg.flags & qp_flags::PAYLOAD_ONLY == 0 {
            Some(cut)
        } else {
            (frame.len() < usize::from(HDS_HDR_SLOT)).then_some(frame.len())
        }
    }

    /// Writes a frame of `segs` wire segments into the next posted RX
    /// buffers: one, or for a coalesced frame as many as it fills, up to
    /// [`GRO_MAX_BUFFERS`]; all or nothing. A split frame's headers go
    /// into the first buffer's header slot ([`Self::split_at`]).
    fn write_rx(
        &mut self,
        dma: &DmaSpace,
        frame: &[u8],
        flags: u16,
        hash: u32,
        segs: u16,
        mss: u16,
    ) -> RxOutcome {
        let wire = u64::from(segs.max(1));
        let most = if segs > 1 { GRO_MAX_BUFFERS } else { 1 };
        let Some(cut) = self.split_at(frame, flags) else {
            self.stats.hds_drops += wire;
            return RxOutcome::Dropped;
        };
        let (head, body) = frame.split_at(cut);
        self.sync_rx_tail(dma);
        let mask = self.cfg.rx_entries - 1;
        let posted = self.rx_tail.wrapping_sub(self.rx_head) & mask;
        let mut bufs = [RxDesc::default(); GRO_MAX_BUFFERS as usize];
        let (mut n, mut room) = (0u16, 0usize);
        // A frame whole in its header slot still takes a buffer (its
        // index names the slot), and writes nothing there.
        let need = if body.is_empty() { 1 } else { body.len() };
        while room < need && n < most.min(posted) {
            let Ok(desc) = self.read_rx_desc(dma, (self.rx_head + n) & mask) else {
                self.stats.bad_requests += 1;
                return RxOutcome::Dropped;
            };
            self.stats.dma_meta_bytes += RxDesc::SIZE as u64;
            self.rx_buf_len = desc.len;
            room += desc.len as usize;
            bufs[usize::from(n)] = desc;
            n += 1;
        }
        if room < need {
            self.stats.rx_no_buffer += wire;
            return RxOutcome::Dropped;
        }
        // A buffer the card could not write marks the rest of the frame
        // damaged, so that the driver drops all of it.
        let (mut off, mut damaged) = (0, 0);
        if !head.is_empty() {
            let slot = self.cfg.hdr_ring + u64::from(self.rx_head) * u64::from(HDS_HDR_SLOT);
            if dma.write(slot, head).is_err() {
                self.stats.bad_requests += 1;
                damaged = Cqe::FCS_ERR;
            }
        }
        for (i, desc) in bufs[..usize::from(n)].iter().enumerate() {
            let part = &body[off..body.len().min(off + desc.len as usize)];
            off += part.len();
            // CAST: `i` is below GRO_MAX_BUFFERS.
            let idx = (self.rx_head + i as u16) & mask;
            if !part.is_empty() && dma.write(desc.addr, part).is_err() {
                self.stats.bad_requests += 1;
                damaged = Cqe::FCS_ERR;
            }
            let more = if off < body.len() { Cqe::MORE } else { 0 };
            let split = if i == 0 && !head.is_empty() {
                Cqe::SPLIT
            } else {
                0
            };
            let cqe = Cqe {
                index: idx,
                flags: flags | Cqe::RX | more | split | damaged,
                // CAST: at most a buffer's length.
                len: part.len() as u32,
                hash,
                // CAST: at most GRO_MAX_SEGS.
                segs: if segs > 1 { segs as u8 } else { 0 },
                // CAST: `split_at` keeps headers below HDS_HDR_SLOT (256).
                hdr_len: if split != 0 { head.len() as u8 } else { 0 },
                mss,
                timestamp: 0,
            };
            if self.post_cqe(dma, cqe).is_err() {
                self.stats.bad_requests += 1;
                self.rx_head = (idx + 1) & mask;
                return RxOutcome::Dropped;
            }
        }
        self.rx_head = (self.rx_head + n) & mask;
        self.stats.rx_packets += wire;
        self.stats.rx_bytes += frame.len() as u64;
        if segs > 1 {
            self.stats.gro_frames += 1;
            self.stats.gro_segments += u64::from(segs);
        }
        if !head.is_empty() {
            self.stats.hds_frames += 1;
        }
        RxOutcome::Delivered {
            raise: self.decide(dma, Instant::now()),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::dma::tests::two_region_space;

    // Layout inside the test DMA space [0x1000, 0x4000).
    pub(crate) const TX_RING: u64 = 0x1000; // 64 * 32 = 0x800
    const RX_RING: u64 = 0x1800; // 64 * 16 = 0x400
    const CQ: u64 = 0x1c00; // 128 * 16 = 0x800
    const BUFS: u64 = 0x2400;

    /// Queue pair `qp` of the test layout, with `flags`.
    pub(crate) fn config(qp: u16, flags: u32) -> QpConfig {
        QpConfig {
            qp,
            vector: 1,
            tx_entries: 64,
            rx_entries: 64,
            tx_ring: TX_RING,
            rx_ring: RX_RING,
            cq: CQ,
            cq_entries: 128,
            flags,
            ..QpConfig::default()
        }
    }

    fn qp() -> QueuePair {
        QueuePair::new(config(0, 0)).unwrap()
    }

    fn cqe(dma: &DmaSpace, i: u64) -> Cqe {
        let mut b = [0u8; Cqe::SIZE];
        dma.read(CQ + i * Cqe::SIZE as u64, &mut b).unwrap();
        Cqe::from_bytes(&b)
    }

    #[test]
    fn rejects_bad_sizes() {
        let mut cfg = QpConfig {
            tx_entries: 64,
            rx_entries: 64,
            cq_entries: 128,
            ..Default::default()
        };
        assert!(QueuePair::new(cfg).is_some());
        cfg.tx_entries = 100;
        assert!(QueuePair::new(cfg).is_none());
        cfg.tx_entries = 64;
        cfg.cq_entries = 64;
        assert!(QueuePair::new(cfg).is_none(), "CQ must hold both rings");
    }

    #[test]
    fn tx_frame_with_a_bad_buffer_is_completed_unsent() {
        let (dma, _f) = two_region_space();
        let mut q = qp();
        dma.write(BUFS, b"hello ").unwrap();
        let good = TxDesc {
            addr: BUFS,
            len: 6,
            ..Default::default()
        };
        // The second buffer runs past the end of the DMA space.
        let bad = TxDesc {
            addr: 0x3ffc,
            len: 8,
            flags: TxDesc::EOP,
            ..Default::default()
        };
        let next = TxDesc {
            flags: TxDesc::EOP,
            ..good
        };
        for (i, d) in [good, bad, next].iter().enumerate() {
            dma.write(TX_RING + 32 * i as u64, &d.to_bytes()).unwrap();
        }
        let mut sent = Vec::new();
        q.tx_doorbell(&dma, 3, |f| sent.push(f.data));
        // No part of the bad frame goes out; the next frame does.
        assert_eq!(sent, vec![b"hello ".to_vec()]);
        assert_eq!((cqe(&dma, 0).index, cqe(&dma, 1).index), (1, 2));
        assert_eq!((q.stats.tx_packets, q.stats.bad_requests), (1, 1));
    }

    #[test]
    fn tx_gathers_fragments_and_completes_eop() {
        let (dma, _f) = two_region_space();
        let mut q = qp();
        dma.write(BUFS, b"hello ").unwrap();
        dma.write(BUFS + 0x100, b"world").unwrap();
        let d0 = TxDesc {
            addr: BUFS,
            len: 6,
            ..Default::default()
        };
        let d1 = TxDesc {
            addr: BUFS + 0x100,
            len: 5,
            flags: TxDesc::EOP,
            ..Default::default()
        };
        dma.write(TX_RING, &d0.to_bytes()).unwrap();
        dma.write(TX_RING + 32, &d1.to_bytes()).unwrap();
        assert!(!q.cq_doorbell(CQ_ARM));
        let mut sent = Vec::new();
        // Only the first descriptor posted: nothing goes out yet.
        assert!(!q.tx_doorbell(&dma, 1, |f| sent.push(f.data)));
        assert!(sent.is_empty());
        assert!(
            q.tx_doorbell(&dma, 2, |f| sent.push(f.data)),
            "armed: raise"
        );
        assert_eq!(sent, vec![b"hello world".to_vec()]);
        let c = cqe(&dma, 0);
        assert_eq!((c.index, c.flags), (1, Cqe::PHASE));
        assert_eq!(q.stats.tx_packets, 1);
        // Metadata: three descriptor reads (the first doorbell read the
        // first descriptor, found no end of frame and left it), one
        // completion, one interrupt.
        let meta = 3 * TxDesc::SIZE as u64 + Cqe::SIZE as u64 + MSI_BYTES;
        assert_eq!(q.stats.dma_meta_bytes, meta);
    }

    #[test]
    fn completions_carry_the_clock_when_asked() {
        let (dma, _f) = two_region_space();
        let mut q = qp();
        let clock = Arc::new(CardClock::default());
        clock.set(7_000_000_000);
        dma.write(BUFS, b"frame").unwrap();
        let plain = TxDesc {
            addr: BUFS,
            len: 5,
            flags: TxDesc::EOP,
            ..Default::default()
        };
        let stamped = TxDesc {
            flags: TxDesc::EOP | TxDesc::TSTAMP,
            ..plain
        };
        dma.write(TX_RING, &plain.to_bytes()).unwrap();
        dma.write(TX_RING + 32, &stamped.to_bytes()).unwrap();
        // No clock yet: a frame that asks gets no stamp.
        q.tx_doorbell(&dma, 1, |_| ());
        q.set_timestamps(Arc::clone(&clock), false);
        q.tx_doorbell(&dma, 2, |_| ());
        let (c0, c1) = (cqe(&dma, 0), cqe(&dma, 1));
        assert_eq!((c0.flags & Cqe::TSTAMP, c0.timestamp), (0, 0));
        assert_ne!(c1.flags & Cqe::TSTAMP, 0, "the frame asked");
        assert!((7_000_000_000..7_100_000_000).contains(&c1.timestamp));
        // RX: stamped only while the function stamps what it receives.
        dma.write(
            RX_RING,
            &RxDesc {
                addr: BUFS + 0x100,
                len: 0x100,
            }
            .to_bytes(),
        )
        .unwrap();
        dma.write(
            RX_RING + 16,
            &RxDesc {
                addr: BUFS + 0x200,
                len: 0x100,
            }
            .to_bytes(),
        )
        .unwrap();
        q.rx_doorbell(2);
        q.deliver(&dma, b"a", 0, 0);
        q.set_timestamps(Arc::clone(&clock), true);
        q.deliver(&dma, b"b", 0, 0);
        let (r0, r1) = (cqe(&dma, 2), cqe(&dma, 3));
        assert_eq!(r0.flags & Cqe::TSTAMP, 0);
        assert_ne!(r1.flags & Cqe::TSTAMP, 0);
        assert!(r1.timestamp >= c1.timestamp, "the clock runs on");
    }

    #[test]
    fn moderation_defers_until_time_or_count() {
        let (dma, _f) = two_region_space();
        let mut q = qp();
        for i in 0..64u64 {
            let d = RxDesc {
                addr: BUFS + i * 0x40,
                len: 0x40,
            };
            dma.write(RX_RING + i * 16, &d.to_bytes()).unwrap();
        }
        q.rx_doorbell(63);
        q.set_moderation(Moderation {
            usecs: 50_000,
            frames: 3,
        });
        assert!(!q.cq_doorbell(CQ_ARM));
        let raised = |o| matches!(o, RxOutcome::Delivered { raise: true });
        assert!(!raised(q.deliver(&dma, b"a", 0, 0)), "deferred");
        let deadline = q.deadline().expect("armed with a completion waiting");
        assert!(!q.tick(&dma, deadline - Duration::from_micros(1)));
        assert!(q.tick(&dma, deadline), "the timer raises");
        assert!(q.deadline().is_none(), "disarmed");
        // Driver consumed entry 0 and re-armed; the third pending raises.
        assert!(!q.cq_doorbell(1 | CQ_ARM));
        assert!(!raised(q.deliver(&dma, b"b", 0, 0)));
        assert!(!raised(q.deliver(&dma, b"c", 0, 0)));
        assert!(raised(q.deliver(&dma, b"d", 0, 0)), "frame count reached");
        assert_eq!((q.stats.irqs, q.stats.irqs_moderated), (2, 2));
        // Moderation off: every armed completion raises at once.
        q.set_moderation(Moderation::default());
        assert!(q.cq_doorbell(1 | CQ_ARM), "still pending: raise on arm");
        assert!(!q.cq_doorbell(4 | CQ_ARM));
        assert!(raised(q.deliver(&dma, b"e", 0, 0)));
        assert_eq!((q.stats.irqs, q.stats.irqs_moderated), (4, 2));
    }

    #[test]
    fn completion_faults_get_completions_wrong() {
        let (dma, _f) = two_region_space();
        let mut q = qp();
        for i in 0..8u64 {
            let d = RxDesc {
                addr: BUFS + i * 0x100,
                len: 0x100,
            };
            dma.write(RX_RING + i * 16, &d.to_bytes()).unwrap();
        }
        q.rx_doorbell(8);
        let deliver = |q: &mut QueuePair| q.deliver(&dma, b"frame", 0, 0);

        q.fault_completions(CqeFault::Index, 1);
        deliver(&mut q);
        assert_eq!(cqe(&dma, 0).index, 0x21, "index off");
        q.fault_completions(CqeFault::Length, 1);
        deliver(&mut q);
        assert_eq!(cqe(&dma, 1).len, 5 + 0x1_0000, "length beyond the buffer");
        q.fault_completions(CqeFault::Duplicate, 1);
        deliver(&mut q);
        assert_eq!((cqe(&dma, 2).index, cqe(&dma, 3).index), (2, 2), "twice");
        q.fault_completions(CqeFault::Drop, 1);
        deliver(&mut q);
        deliver(&mut q);
        assert_eq!(cqe(&dma, 4).index, 4, "buffer 3's completion is missing");
        q.fault_completions(CqeFault::Header, 1);
        deliver(&mut q);
        let c = cqe(&dma, 5);
        assert_eq!(
            (c.flags & Cqe::SPLIT, c.hdr_len),
            (Cqe::SPLIT, 3),
            "a split claimed"
        );
        assert_eq!(q.stats.faults_injected, 5);
        assert_eq!(q.stats.rx_packets, 6, "the frames themselves went in");
    }

    #[test]
    fn bad_doorbells_are_counted_not_followed() {
        let (dma, _f) = two_region_space();
        let mut q = qp();
        assert!(!q.tx_doorbell(&dma, 64, |_| panic!("nothing to send")));
        q.rx_doorbell(1000);
        assert!(!q.cq_doorbell(500));
        assert_eq!(q.stats.bad_requests, 3);
        assert_eq!(q.deliver(&dma, b"frame", 0, 0), RxOutcome::Dropped);
        assert_eq!(q.stats.rx_no_buffer, 1);
    }

    #[test]
    fn a_release_raises_even_when_the_frame_after_it_finds_no_buffer() {
        let (dma, _f) = two_region_space();
        let mut q = qp();
        let d = RxDesc {
            addr: BUFS,
            len: 0x100,
        };
        dma.write(RX_RING, &d.to_bytes()).unwrap();
        // One buffer, and an armed pair.
        q.rx_doorbell(1);
        assert!(!q.set_gro(&dma, Some(Duration::from_secs(1))));
        assert!(!q.cq_doorbell(CQ_ARM));
        let held = crate::gro::tests::tcp4(1, 0, 100, 0, 0);
        let raised = RxOutcome::Delivered { raise: true };
        assert_eq!(
            q.deliver(&dma, &held, Cqe::CSUM_OK, 5),
            RxOutcome::Delivered { raise: false }
        );
        // Unverified, the flow's next segment releases the aggregate into
        // the last buffer and finds none for itself.
        let next = crate::gro::tests::tcp4(1, 100, 100, 1, 0);
        assert_eq!(q.deliver(&dma, &next, 0, 5), raised);
        assert_eq!(
            (q.stats.rx_packets, q.stats.rx_no_buffer, q.stats.irqs),
            (1, 1, 1)
        );
    }

    /// Posts 63 RX buffers of 256 bytes on `q`'s ring (64 entries),
    /// going round `bufs` distinct buffers from `BUFS`.
    fn post_rx_buffers(dma: &DmaSpace, q: &mut QueuePair, bufs: u64) {
        for i in 0..64u64 {
            let d = RxDesc {
                addr: BUFS + (i % bufs) * 0x100,
                len: 0x100,
            };
            dma.write(RX_RING + i * 16, &d.to_bytes()).unwrap();
        }
        q.rx_doorbell(63);
    }

    #[test]
    fn an_aggregate_past_its_hold_leaves_before_the_next_frame() {
        let (dma, _f) = two_region_space();
        let mut q = qp();
        post_rx_buffers(&dma, &mut q, 8);
        let hold = Duration::from_millis(5);
        q.set_gro(&dma, Some(hold));
        let first = crate::gro::tests::tcp4(1, 0, 100, 0, 0);
        q.deliver(&dma, &first, Cqe::CSUM_OK, 5);
        std::thread::sleep(hold * 2);
        // The timer has not run (its thread late): the frame of another
        // flow still comes after the one held past its time.
        let other = crate::gro::tests::tcp4(2, 0, 100, 0, 0);
        q.deliver(&dma, &other, Cqe::CSUM_OK, 5);
        assert_eq!(
            q.stats.rx_packets, 1,
            "the held one left, the new one is held"
        );
        let mut got = vec![0u8; 54];
        dma.read(BUFS, &mut got).unwrap();
        assert_eq!(got[..], first[..54]);
    }

    #[test]
    fn a_coalesced_frame_fills_buffers_in_turn_with_more() {
        let (dma, _f) = two_region_space();
        let mut q = qp();
        post_rx_buffers(&dma, &mut q, 8);
        assert!(!q.set_gro(&dma, Some(Duration::from_secs(1))));
        let segs: Vec<_> = (0..4)
            .map(|i| crate::gro::tests::tcp4(1, i * 100, 100, i as u16, 0))
            .collect();
        for s in &segs {
            assert_eq!(
                q.deliver(&dma, s, Cqe::CSUM_OK, 5),
                RxOutcome::Delivered { raise: false },
                "held"
            );
        }
        assert_eq!(q.stats.rx_packets, 0);
        assert!(q.deadline().is_some(), "the timer waits for it");
        q.flush_gro(&dma, Some(Instant::now()));
        assert_eq!(q.stats.rx_packets, 0, "held for the hold time");
        q.flush_gro(&dma, None);
        let (first, last) = (cqe(&dma, 0), cqe(&dma, 1));
        let flags = Cqe::PHASE | Cqe::RX | Cqe::CSUM_OK;
        assert_eq!(
            (first.index, first.flags, first.len, first.segs, first.mss),
            (0, flags | Cqe::MORE, 0x100, 4, 100)
        );
        assert_eq!(
            (last.index, last.flags, last.len, last.segs, last.mss),
            (1, flags, 54 + 400 - 0x100, 4, 100)
        );
        let mut got = vec![0u8; 54 + 400];
        dma.read(BUFS, &mut got).unwrap();
        let payload: Vec<u8> = segs.iter().flat_map(|s| s[54..].to_vec()).collect();
        assert_eq!(got[54..], payload[..]);
        assert_eq!(
            (q.stats.rx_packets, q.stats.gro_frames, q.stats.gro_segments),
            (4, 1, 4)
        );
        // Off: frames go out one by one again.
        q.set_gro(&dma, None);
        q.deliver(&dma, &segs[0], Cqe::CSUM_OK, 5);
        assert_eq!(cqe(&dma, 2).segs, 0);
    }

    /// The test layout's doorbell-page words of a pair with
    /// `RX_CQ_IN_PAGE`: its RX tail, then its CQ word.
    const PAGE_RX: u64 = 0x3c00;

    /// A pair with `RX_CQ_IN_PAGE` whose RX descriptors all name 0x100
    /// bytes at [`BUFS`] (none posted yet: the page's tail is 0).
    fn page_pair(dma: &DmaSpace) -> QueuePair {
        let mut q = QueuePair::new(config(0, qp_flags::RX_CQ_IN_PAGE)).unwrap();
        q.use_page_words(PAGE_RX);
        for i in 0..64u64 {
            let d = RxDesc {
                addr: BUFS,
                len: 0x100,
            };
            dma.write(RX_RING + i * 16, &d.to_bytes()).unwrap();
        }
        q
    }

    fn cq_word(head: u32, generation: u32, arm: bool) -> u32 {
        CqWord::zero()
            .with_head(head)
            .with_generation(generation)
            .with_arm(arm)
            .raw()
    }

    #[test]
    fn a_pair_in_page_mode_takes_its_rx_tail_and_arm_from_the_page() {
        let (dma, _f) = two_region_space();
        let mut q = page_pair(&dma);
        assert_eq!(
            q.deliver(&dma, b"a", 0, 0),
            RxOutcome::Dropped,
            "no tail yet"
        );
        dma.store_u32(PAGE_RX, 63).unwrap();
        assert_eq!(
            q.deliver(&dma, b"b", 0, 0),
            RxOutcome::Delivered { raise: false },
            "the page's tail taken, not armed"
        );
        // Consumed one, armed: the next completion raises, once.
        dma.store_u32(PAGE_RX + 4, cq_word(1, 1, true)).unwrap();
        assert_eq!(
            q.deliver(&dma, b"c", 0, 0),
            RxOutcome::Delivered { raise: true }
        );
        assert_eq!(
            q.deliver(&dma, b"d", 0, 0),
            RxOutcome::Delivered { raise: false },
            "the same word is not a second arm"
        );
        // The same head armed again is a new word by its generation.
        dma.store_u32(PAGE_RX + 4, cq_word(1, 2, true)).unwrap();
        assert_eq!(
            q.deliver(&dma, b"e", 0, 0),
            RxOutcome::Delivered { raise: true }
        );
        // The driver arms with completions waiting: nothing happens until
        // a completion or a kick (the driver polls again instead).
        dma.store_u32(PAGE_RX + 4, cq_word(2, 3, true)).unwrap();
        assert!(q.page_kick(&dma), "a kick reads the page: pending, armed");
        assert_eq!(q.stats.rx_tails_in_page, 1);
        assert_eq!(q.stats.cq_words_in_page, 3);
        assert_eq!((q.stats.rx_doorbells, q.stats.cq_doorbells), (0, 0));
        assert_eq!(q.stats.irqs, 3);
        assert_eq!(q.stats.bad_requests, 0);
    }

    #[test]
    fn in_page_mode_moderation_waits_from_the_first_unread_completion() {
        let (dma, _f) = two_region_space();
        let mut q = page_pair(&dma);
        dma.store_u32(PAGE_RX, 63).unwrap();
        q.set_moderation(Moderation {
            usecs: 1000,
            frames: 0,
        });
        // Received while the driver polls (not armed); it reads it, then
        // arms, all in the page.
        assert_eq!(
            q.deliver(&dma, b"a", 0, 0),
            RxOutcome::Delivered { raise: false }
        );
        dma.store_u32(PAGE_RX + 4, cq_word(1, 1, false)).unwrap();
        dma.store_u32(PAGE_RX + 4, cq_word(1, 2, true)).unwrap();
        std::thread::sleep(Duration::from_millis(2));
        // The next completion waits its own 1 ms, not the first one's.
        assert_eq!(
            q.deliver(&dma, b"b", 0, 0),
            RxOutcome::Delivered { raise: false }
        );
        let deadline = q.deadline().expect("armed, a completion waiting");
        assert!(deadline > Instant::now() + Duration::from_micros(500));
        assert!(q.tick(&dma, deadline), "the timer raises");
    }

    #[test]
    fn bad_words_in_the_page_are_counted_once_and_not_followed() {
        let (dma, _f) = two_region_space();
        let mut q = page_pair(&dma);
        dma.store_u32(PAGE_RX, 2).unwrap();
        dma.store_u32(PAGE_RX + 4, cq_word(0, 1, false)).unwrap();
        assert_eq!(
            q.deliver(&dma, b"a", 0, 0),
            RxOutcome::Delivered { raise: false }
        );
        // A tail outside the ring, a head outside the queue: the card
        // keeps what it had, and counts each bad word once however
        // often it looks.
        dma.store_u32(PAGE_RX, 1000).unwrap();
        dma.store_u32(PAGE_RX + 4, cq_word(500, 2, true)).unwrap();
        assert_eq!(
            q.deliver(&dma, b"b", 0, 0),
            RxOutcome::Delivered { raise: false }
        );
        assert_eq!(
            q.deliver(&dma, b"c", 0, 0),
            RxOutcome::Dropped,
            "tail 2: no third buffer"
        );
        assert_eq!(q.stats.bad_requests, 2);
        assert_eq!(q.stats.irqs, 0, "a bad word does not arm");
        // A larger CQ than the word's head can name is refused.
        let mut cfg = config(0, qp_flags::RX_CQ_IN_PAGE);
        cfg.cq_entries = db_page::CQ_WORD_MAX_ENTRIES * 2;
        assert!(QueuePair::new(cfg).is_none());
        cfg.flags = 0;
        assert!(QueuePair::new(cfg).is_some());
    }

    #[test]
    fn rx_splits_headers_from_data_above_the_threshold() {
        const HDRS: u64 = 0x3000; // slots 0..16 in the test space
        let (dma, _f) = two_region_space();
        let mut cfg = config(0, 0);
        cfg.hdr_ring = HDRS;
        cfg.hds_thresh = 100;
        let mut q = QueuePair::new(cfg).unwrap();
        post_rx_buffers(&dma, &mut q, 4);
        let (big, _) = crate::offload::tests::tcp_frame(false, &[0xab; 100], 0x18);
        let (small, _) = crate::offload::tests::tcp_frame(false, &[0xcd; 10], 0x18);
        q.deliver(&dma, &big, Cqe::CSUM_OK, 0);
        q.deliver(&dma, &small, Cqe::CSUM_OK, 0);
        let c = cqe(&dma, 0);
        assert_eq!(
            (c.flags & Cqe::SPLIT, c.hdr_len, c.len),
            (Cqe::SPLIT, 54, 100)
        );
        let mut h = [0u8; 54];
        dma.read(HDRS, &mut h).unwrap();
        assert_eq!(&h[..], &big[..54], "headers in slot 0");
        let mut b = [0u8; 100];
        dma.read(BUFS, &mut b).unwrap();
        assert_eq!(b, [0xab; 100], "payload alone in the buffer");
        let c = cqe(&dma, 1);
        assert_eq!(
            (c.flags & Cqe::SPLIT, c.hdr_len, c.len),
            (0, 0, 64),
            "at the threshold: whole"
        );
        assert_eq!(q.stats.hds_frames, 1);
        // The longest headers the card parses (IPv4 and TCP options,
        // 134 bytes) fit a slot.
        let mut long = big.clone();
        long[14] = 0x4f; // IHL 60
        long.splice(34..34, [0u8; 40]);
        long[74 + 12] = 15 << 4; // data offset 60
        long.splice(94..94, [0u8; 40]);
        q.deliver(&dma, &long, 0, 0);
        let c = cqe(&dma, 2);
        assert_eq!((c.hdr_len, c.len), (134, 100));
        // A GFT exception frame goes whole, for the exception path.
        q.deliver(&dma, &big, Cqe::GFT_EXCEPTION, 0);
        let c = cqe(&dma, 3);
        assert_eq!((c.flags & Cqe::SPLIT, c.hdr_len, c.len), (0, 0, 154));
        // A threshold above the largest frame is refused.
        cfg.hds_thresh = HDS_THRESH_MAX + 1;
        assert!(QueuePair::new(cfg).is_none());
    }

    #[test]
    fn a_payload_only_pair_keeps_every_header_out_of_its_buffers() {
        const HDRS: u64 = 0x3000;
        let (dma, _f) = two_region_space();
        let mut cfg = config(0, qp_flags::PAYLOAD_ONLY);
        assert!(QueuePair::new(cfg).is_none(), "needs a header ring");
        cfg.hdr_ring = HDRS;
        cfg.hds_thresh = 1;
        assert!(QueuePair::new(cfg).is_none(), "and a threshold of 0");
        cfg.hds_thresh = 0;
        let mut q = QueuePair::new(cfg).unwrap();
        post_rx_buffers(&dma, &mut q, 4);
        dma.write(BUFS, &[0x55; 0x100]).unwrap();
        dma.write(BUFS + 0x100, &[0x55; 0x100]).unwrap();
        let (data, _) = crate::offload::tests::tcp_frame(false, &[0xab; 100], 0x18);
        let (ack, _) = crate::offload::tests::tcp_frame(false, &[], 0x10);
        q.deliver(&dma, &data, Cqe::CSUM_OK, 0);
        q.deliver(&dma, &ack, Cqe::CSUM_OK, 0);
        let c = cqe(&dma, 0);
        assert_eq!(
            (c.flags & Cqe::SPLIT, c.hdr_len, c.len),
            (Cqe::SPLIT, 54, 100)
        );
        // No payload: the frame whole in its slot, its buffer untouched.
        let c = cqe(&dma, 1);
        assert_eq!(
            (c.index, c.flags & Cqe::SPLIT, c.hdr_len, c.len),
            (1, Cqe::SPLIT, 54, 0)
        );
        let mut h = [0u8; 54];
        dma.read(HDRS + u64::from(HDS_HDR_SLOT), &mut h).unwrap();
        assert_eq!(&h[..], &ack[..54]);
        let mut b = [0u8; 0x100];
        dma.read(BUFS + 0x100, &mut b).unwrap();
        assert_eq!(b, [0x55; 0x100], "nothing written to the buffer");
        // A frame the card cannot split and no slot holds: dropped.
        let mut long = vec![0u8; 300];
        long[12..14].copy_from_slice(&[0x08, 0x06]); // ARP, not parsed
        q.deliver(&dma, &long, 0, 0);
        assert_eq!((q.stats.hds_drops, q.stats.hds_frames), (1, 2));
        long.truncate(255);
        q.deliver(&dma, &long, 0, 0);
        let c = cqe(&dma, 2);
        assert_eq!(
            (c.flags & Cqe::SPLIT, c.hdr_len, c.len),
            (Cqe::SPLIT, 255, 0)
        );
    }

    #[test]
    fn a_header_slot_outside_host_memory_marks_the_frame_damaged() {
        let (dma, _f) = two_region_space();
        let mut cfg = config(0, 0);
        cfg.hdr_ring = 0x10_0000_0000;
        let mut q = QueuePair::new(cfg).unwrap();
        let d = RxDesc {
            addr: BUFS,
            len: 0x100,
        };
        dma.write(RX_RING, &d.to_bytes()).unwrap();
        q.rx_doorbell(1);
        let (big, _) = crate::offload::tests::tcp_frame(false, &[0xab; 100], 0x18);
        q.deliver(&dma, &big, Cqe::CSUM_OK, 0);
        let c = cqe(&dma, 0);
        assert_eq!(
            c.flags & (Cqe::SPLIT | Cqe::FCS_ERR),
            Cqe::SPLIT | Cqe::FCS_ERR
        );
        assert_eq!(q.stats.bad_requests, 1);
    }

    #[test]
    fn rx_fills_posted_buffers_and_wraps_phase() {
        let (dma, _f) = two_region_space();
        let mut q = qp();
        post_rx_buffers(&dma, &mut q, 4);
        assert_eq!(
            q.deliver(&dma, &[0u8; 0x101], 0, 0),
            RxOutcome::Dropped,
            "too big"
        );
        assert_eq!(
            q.deliver(&dma, b"abc", Cqe::CSUM_OK, 7),
            RxOutcome::Delivered { raise: false }
        );
        let c = cqe(&dma, 0);
        assert_eq!(
            c,
            Cqe {
                index: 0,
                flags: Cqe::PHASE | Cqe::RX | Cqe::CSUM_OK,
                len: 3,
                hash: 7,
                ..Cqe::default()
            }
        );
        let mut b = [0u8; 3];
        dma.read(BUFS, &mut b).unwrap();
        assert_eq!(&b, b"abc");
        // Consume, re-arm, fill the rest of the CQ: the phase flips at the wrap.
        assert!(!q.cq_doorbell(1 | CQ_ARM));
        assert_eq!(
            q.deliver(&dma, b"x", 0, 0),
            RxOutcome::Delivered { raise: true }
        );
        for _ in 0..61 {
            q.deliver(&dma, b"x", 0, 0);
        }
        assert_eq!(
            q.deliver(&dma, b"x", 0, 0),
            RxOutcome::Dropped,
            "ring empty: 63 posted"
        );
        // Re-post twice (tails wrap), 126 completions in, then 3 more wrap the CQ.
        q.rx_doorbell(62);
        for _ in 0..63 {
            q.deliver(&dma, b"y", 0, 0);
        }
        q.rx_doorbell(61);
        for _ in 0..3 {
            assert!(matches!(
                q.deliver(&dma, b"z", 0, 0),
                RxOutcome::Delivered { .. }
            ));
        }
        assert_eq!(cqe(&dma, 127).flags & Cqe::PHASE, Cqe::PHASE);
        assert_eq!(
            cqe(&dma, 0).flags & Cqe::PHASE,
            0,
            "second pass writes phase 0"
        );
    }

    #[test]
    fn a_streaming_pair_announces_batches_and_raises_once() {
        let (dma, _f) = two_region_space();
        // 8 units of stream in two chunks at 0x2400 and 0x2600 (the
        // table at 0x2c00), tail word at 0x2800.
        dma.write(0x2c00, &0x2400u64.to_le_bytes()).unwrap();
        dma.write(0x2c08, &0x2600u64.to_le_bytes()).unwrap();
        let geometry = crate::hw::stream::StreamGeometry {
            bytes: crate::hw::stream::MIN_BYTES,
            chunk_bytes: crate::hw::stream::MIN_CHUNK_BYTES,
            headroom: 0,
            tailroom: 0,
        };
        let stream = RxStream::new(geometry, 0x2c00, 0x2800)
            .unwrap()
            .shrunk(8, 4);
        let mut q = qp().with_stream(stream);
        assert!(q.streaming());
        assert!(!q.cq_doorbell(CQ_ARM));
        let delivered = RxOutcome::Delivered { raise: false };
        assert_eq!(q.deliver(&dma, &[1; 60], Cqe::CSUM_OK, 5), delivered);
        assert_eq!(q.deliver(&dma, &[2; 60], 0, 0), delivered);
        assert_eq!(q.cq_tail, 0, "no completion per frame");
        assert!(q.publish_stream(&dma), "armed: one interrupt for the batch");
        assert!(!q.publish_stream(&dma), "nothing new");
        let mut t = [0u8; 4];
        dma.read(0x2800, &mut t).unwrap();
        assert_eq!(u32::from_le_bytes(t), 4);
        assert_eq!(q.stats.stream_notifications, 1);
        // Two headers, a table entry, one tail write, one interrupt.
        assert_eq!(q.stats.dma_meta_bytes, 2 * 8 + 8 + 4 + MSI_BYTES);
        // Full: the next two records do not fit before the head.
        assert_eq!(q.deliver(&dma, &[3; 60], 0, 0), delivered);
        assert_eq!(q.deliver(&dma, &[3; 60], 0, 0), delivered);
        assert_eq!(q.deliver(&dma, &[4; 60], 0, 0), RxOutcome::Dropped);
        assert_eq!(q.stats.rx_no_buffer, 1);
        assert!(!q.publish_stream(&dma), "not armed");
        // A head beyond the tail is refused; arming with records unread
        // raises at once.
        q.stream_doorbell(9);
        assert_eq!(q.stats.bad_requests, 1);
        q.stream_doorbell(4);
        assert!(q.cq_doorbell(CQ_ARM), "unread records: raise at once");
        q.stream_doorbell(8);
        assert!(!q.cq_doorbell(CQ_ARM), "all read: wait");
    }
}
