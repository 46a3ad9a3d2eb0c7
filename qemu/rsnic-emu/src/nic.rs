// SPDX-License-Identifier: GPL-2.0

//! The card's network function: admin commands, queue pairs, RX filter and
//! link state. [`crate::function::Function`] routes register accesses here.

use std::cell::Cell;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use log::{debug, info};

use crate::clock::CardClock;
use crate::device_memory::WithDeviceMemory;
use crate::dma::{DmaSpace, HostMem as _};
use crate::doorbell_page::DoorbellPage;
use crate::gft::Gft;
use crate::hw::register::Register as _;
use crate::hw::stream::StreamGeometry;
use crate::hw::Cqe;
use crate::hw::{
    self, mc_filter_bit, offload as offload_bits, rx_mode, AdminCmd, AdminStatus, DeviceInfo,
    AQ_ENTRY_SIZE, AQ_MAX_ENTRIES, MAX_MTU, MAX_QUEUE_PAIRS, MIN_MTU,
};
use crate::offload;
use crate::queues::{CqeFault, Moderation, QpStats, QueuePair, RxOutcome, TxFrame};
use crate::rdma::{Io, RdmaEngine};
use crate::shaper::{Setting, ShaperTree};
use crate::steer::Steering;
use crate::stream::RxStream;
use crate::train::{TcpTrain, TrainShape};
use crate::tunnel::segment_tunnel;
use crate::uso::segment_udp;
use crate::xdp::offload::XdpOffload;

/// Offloads this card performs (RSS is always on).
/// How long received segments are held for coalescing unless told.
pub const DEFAULT_GRO_HOLD: Duration = Duration::from_micros(1000);

const SUPPORTED_OFFLOADS: u32 = offload_bits::TX_CSUM
    | offload_bits::RX_CSUM
    | offload_bits::TSO
    | offload_bits::GRO_HW
    | offload_bits::USO
    | offload_bits::TUNNEL_TSO;

/// Card-wide counters (per-pair ones live in each pair).
#[derive(Clone, Copy, Debug, Default)]
pub struct NicStats {
    /// Frames the RX filter dropped (not for us).
    pub rx_filtered: u64,
    /// Frames dropped because no queue pair was running.
    pub rx_no_queue: u64,
    /// TX frames dropped because the link was down.
    pub tx_link_down: u64,
    /// TX frames larger than the MTU allows, dropped.
    pub tx_oversize: u64,
    /// TSO frames the card segmented.
    pub tso_frames: u64,
    /// Segments those frames became.
    pub tso_segments: u64,
    /// TSO requests the card could not honour (not TCP, bad offsets, TSO
    /// not enabled, a tunnel it cannot read), dropped.
    pub tx_bad_tso: u64,
    /// Of `tso_frames`, those inside a tunnel ([`hw::TxDesc::TUNNEL`]).
    pub tso_tunnel_frames: u64,
    /// UDP datagrams the card segmented (USO).
    pub uso_frames: u64,
    /// Datagrams those became.
    pub uso_segments: u64,
    /// USO requests the card could not honour (not UDP, bad offsets, no
    /// payload, more than TSO_MAX_SEGS datagrams, USO not enabled),
    /// dropped.
    pub tx_bad_uso: u64,
    /// Admin commands processed.
    pub admin_cmds: u64,
    /// Admin tails taken from the doorbell page while polling, no
    /// doorbell rung.
    pub admin_tails_polled: u64,
    /// Frames that arrived with a bad frame check sequence (delivered
    /// flagged [`Cqe::FCS_ERR`]).
    pub rx_fcs_errors: u64,
    /// Admin commands left unanswered or failed by fault injection.
    pub admin_faults_injected: u64,
    /// GFT exceptions dropped: queue pair 0 not running or out of buffers.
    pub gft_exceptions_dropped: u64,
    /// Frames a VF sent flagged for reinjection (only the PF may), dropped.
    pub tx_bad_reinject: u64,
}

/// How a faulty card mishandles admin commands (fault injection).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdminFault {
    /// The command is consumed but never completed: the driver times out.
    Timeout,
    /// The command fails with [`AdminStatus::DeviceError`], without effect.
    Error,
}

impl AdminFault {
    /// Parses a harness name: `timeout`, `error`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "timeout" => Some(Self::Timeout),
            "error" => Some(Self::Error),
            _ => None,
        }
    }
}

/// A frame the host sent through a queue pair.
#[derive(Debug, PartialEq, Eq)]
pub struct Outgoing {
    /// The frame, after TX offloads.
    pub frame: Vec<u8>,
    /// A GFT reinjection: starts with a [`hw::gft::ReinjectMeta`].
    pub reinject: bool,
    /// From the RDMA engine: goes to the wire directly, as RoCE traffic
    /// bypasses the GFT.
    pub rdma: bool,
    /// A TSO frame, to be cut as this says ([`TcpTrain`]).
    pub train: Option<TrainShape>,
}

/// What a register write asks the caller to do next.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Effects {
    /// MSI-X vectors to raise.
    pub raise: Vec<u16>,
    /// Frames the host sent, for the card to pass on.
    pub send: Vec<Outgoing>,
}

/// The indices of the running queue pairs ([`Nic::running`]).
struct RunningPairs {
    pairs: [usize; MAX_QUEUE_PAIRS as usize],
    len: usize,
}

impl RunningPairs {
    fn as_slice(&self) -> &[usize] {
        &self.pairs[..self.len]
    }
}

/// Network function state.
pub struct Nic {
    /// A PF (it owns the data-path switch) or a VF.
    is_pf: bool,
    /// PF: received frames go to the VF (see `AdminCmd::SetDatapath`).
    datapath_vf: bool,
    /// PF: the card's switch is in switchdev mode (`SetEswitchMode`).
    switchdev: bool,
    /// PF: the serial of the foreign VF the card offers
    /// ([`hw::regs::VF_ASSOC`]), a property of the card's switch.
    vf_assoc: Option<u32>,
    perm_mac: [u8; 6],
    mac: [u8; 6],
    mtu: u32,
    rx_mode: u32,
    mc_filter: u64,
    offloads: u32,
    /// How long received segments are held for coalescing.
    gro_hold: Duration,
    aq_base: u64,
    aq_size: u32,
    aq_head: u32,
    link_up: bool,
    /// RSS contexts and steering rules.
    steering: Steering,
    /// IEEE 802.3 MAC counters. They count at the port, so, as on a
    /// real card, a function reset does not clear them: the host's
    /// standard statistics never go backwards.
    mac_stats: hw::MacStats,
    qps: Vec<Option<QueuePair>>,
    /// How each queue pair receives from its next creation on: into a
    /// copy of this (checked, empty) stream, or its RX ring (`None`).
    rx_streams: Vec<Option<RxStream>>,
    /// Interrupt moderation of every queue pair.
    moderation: Moderation,
    /// Counts of destroyed queue pairs, per index, so counters survive
    /// the driver recreating its queues.
    retired: Vec<QpStats>,
    /// The next admin commands to mishandle, and how (fault injection):
    /// the kind, how many, and whether only queue pair creations.
    admin_fault: Option<(AdminFault, u32, bool)>,
    /// Completion faults every newly created queue pair starts with.
    cqe_fault_new: Option<(CqeFault, u32)>,
    /// PF: the card's GFT engine, which its admin commands configure.
    gft: Option<Arc<Mutex<Gft>>>,
    /// PF: the card's RDMA engine.
    rdma: Option<Arc<Mutex<RdmaEngine>>>,
    /// PF: the card's XDP offload.
    xdp: Option<Arc<XdpOffload>>,
    /// The function's doorbell page, once the driver gives one.
    page: DoorbellPage,
    /// TX shapers.
    shapers: ShaperTree,
    /// Queue pairs whose next frame the shapers held back, and when to
    /// offer it again.
    tx_shaped: [Option<Instant>; MAX_QUEUE_PAIRS as usize],
    /// The card's clock.
    clock: Arc<CardClock>,
    /// Every received frame's completion carries the clock
    /// ([`AdminCmd::SetTimestamps`]).
    rx_tstamp: bool,
    /// Bits 63:32 of the clock at the last read of
    /// [`hw::regs::PTP_TIME_LO`].
    ptp_latch: Cell<u32>,
    /// Counters.
    pub stats: NicStats,
}

impl Nic {
    /// A function with permanent address `mac`, link down until cabled.
    pub fn new(mac: [u8; 6], is_pf: bool) -> Self {
        Self {
            is_pf,
            datapath_vf: false,
            switchdev: false,
            vf_assoc: None,
            perm_mac: mac,
            mac,
            mtu: 1500,
            rx_mode: rx_mode::BROADCAST,
            mc_filter: 0,
            offloads: 0,
            gro_hold: DEFAULT_GRO_HOLD,
            aq_base: 0,
            aq_size: 0,
            aq_head: 0,
            link_up: false,
            steering: Steering::default(),
            mac_stats: hw::MacStats::default(),
            qps: (0..MAX_QUEUE_PAIRS).map(|_| None).collect(),
            rx_streams: vec![None; usize::from(MAX_QUEUE_PAIRS)],
            moderation: Moderation::default(),
            retired: vec![QpStats::default(); usize::from(MAX_QUEUE_PAIRS)],
            admin_fault: None,
            cqe_fault_new: None,
            gft: None,
            rdma: None,
            xdp: None,
            page: DoorbellPage::default(),
            shapers: ShaperTree::default(),
            tx_shaped: [None; MAX_QUEUE_PAIRS as usize],
            clock: Arc::new(CardClock::default()),
            rx_tstamp: false,
            ptp_latch: Cell::new(0),
            stats: NicStats::default(),
        }
    }

    /// Shares the card's clock.
    pub fn set_clock(&mut self, clock: Arc<CardClock>) {
        self.clock = clock;
    }

    /// Whether the driver gave a doorbell page.
    pub fn has_doorbell_page(&self) -> bool {
        self.page.is_set()
    }

    /// Says in the doorbell page whether the card polls it.
    pub fn set_card_polling(&self, dma: &DmaSpace, polling: bool) {
        self.page.set_card_polling(dma, polling);
    }

    /// PF: gives the function the card's GFT to configure.
    pub fn set_gft(&mut self, gft: Arc<Mutex<Gft>>) {
        self.gft = Some(gft);
    }

    /// PF: gives the function the card's XDP offload to configure.
    pub fn set_xdp(&mut self, xdp: Arc<XdpOffload>) {
        self.xdp = Some(xdp);
    }

    /// PF: gives the function the card's RDMA engine to configure.
    pub fn set_rdma(&mut self, rdma: Arc<Mutex<RdmaEngine>>) {
        self.rdma = Some(rdma);
    }

    /// Runs `f` on the RDMA engine (PF only; `None` on a VF), passing on
    /// the frames it sends and the event vector it raises.
    fn with_rdma<R>(
        &self,
        dma: &DmaSpace,
        now: Instant,
        fx: &mut Effects,
        f: impl FnOnce(&mut RdmaEngine, &mut Io<'_>) -> R,
    ) -> Option<R> {
        let mut engine = self
            .rdma
            .as_ref()?
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        // The engine reaches the card's device memory as well as the host's.
        let dm = engine.device_memory();
        let with_dm;
        let mem: &dyn crate::dma::HostMem = match &dm {
            Some(dm) => {
                with_dm = WithDeviceMemory { host: dma, dm };
                &with_dm
            }
            None => dma,
        };
        let mut io = Io::new(mem, self.mac, now);
        let r = f(&mut engine, &mut io);
        engine.loop_back(&mut io);
        fx.send.extend(io.frames.into_iter().map(|frame| Outgoing {
            frame,
            reinject: false,
            rdma: true,
            train: None,
        }));
        fx.raise.extend(io.raise);
        Some(r)
    }

    /// A write to the user doorbell BAR ([`hw::rdma::udb`]) at `offset`.
    pub fn write_user_doorbell(
        &mut self,
        dma: &DmaSpace,
        offset: usize,
        value: u32,
        fx: &mut Effects,
    ) {
        let page = (offset / hw::rdma::udb::PAGE_SIZE) as u32;
        let reg = offset % hw::rdma::udb::PAGE_SIZE;
        let now = Instant::now();
        self.with_rdma(dma, now, fx, |e, io| e.user_doorbell(page, reg, value, io));
    }

    /// A frame from the wire the RDMA engine may take (RoCEv2 for this
    /// card); false if it is the NIC's.
    pub fn rdma_receive(&mut self, dma: &DmaSpace, frame: &[u8], fx: &mut Effects) -> bool {
        let now = Instant::now();
        self.with_rdma(dma, now, fx, |e, io| e.receive(frame, io))
            .unwrap_or(false)
    }

    /// The RDMA engine's timers; returns when to call again.
    pub fn rdma_tick(&mut self, dma: &DmaSpace, now: Instant, fx: &mut Effects) -> Option<Instant> {
        self.with_rdma(dma, now, fx, |e, io| e.tick(io)).flatten()
    }

    fn lock_gft(&self) -> Option<std::sync::MutexGuard<'_, Gft>> {
        self.gft
            .as_ref()
            .map(|g| g.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Mishandles the next `n` admin commands (with `create_qp_only`, the
    /// next `n` `CreateQp`) in the way of `kind` (fault injection); `n ==
    /// 0` cancels.
    pub fn fault_admin(&mut self, kind: AdminFault, n: u32, create_qp_only: bool) {
        self.admin_fault = Some((kind, n, create_qp_only));
    }

    /// Takes one admin fault to inject into `cmd`, if one is pending for it.
    fn take_admin_fault(&mut self, cmd: &Result<AdminCmd, AdminStatus>) -> Option<AdminFault> {
        match &mut self.admin_fault {
            Some((kind, n, create_qp_only))
                if *n > 0 && (!*create_qp_only || matches!(cmd, Ok(AdminCmd::CreateQp(_)))) =>
            {
                *n -= 1;
                self.stats.admin_faults_injected += 1;
                Some(*kind)
            }
            _ => None,
        }
    }

    /// Back to power-on state. The link and the MAC counters are the
    /// port's, and stay as they are.
    pub fn reset(&mut self) {
        let link = self.link_up;
        let mac_stats = self.mac_stats;
        let gft = self.gft.take();
        let rdma = self.rdma.take();
        let xdp = self.xdp.take();
        let gro_hold = self.gro_hold;
        let clock = Arc::clone(&self.clock);
        let vf_assoc = self.vf_assoc;
        *self = Self::new(self.perm_mac, self.is_pf);
        self.clock = clock;
        self.vf_assoc = vf_assoc;
        self.link_up = link;
        self.gro_hold = gro_hold;
        self.mac_stats = mac_stats;
        if let Some(gft) = gft {
            gft.lock().unwrap_or_else(|e| e.into_inner()).reset();
            self.gft = Some(gft);
        }
        if let Some(rdma) = rdma {
            rdma.lock().unwrap_or_else(|e| e.into_inner()).reset();
            self.rdma = Some(rdma);
        }
        // The offloaded program and its maps go with a reset.
        if let Some(xdp) = xdp {
            xdp.reset();
            self.xdp = Some(xdp);
        }
    }

    /// PF: whether received frames should go to the VF.
    pub fn datapath_vf(&self) -> bool {
        self.datapath_vf
    }

    /// PF: offers the foreign VF `serial` (`None`: withdraws it); true
    /// if that changed.
    pub fn set_vf_assoc(&mut self, serial: Option<u32>) -> bool {
        let changed = self.is_pf && self.vf_assoc != serial;
        if self.is_pf {
            self.vf_assoc = serial;
        }
        changed
    }

    /// Whether any queue pair runs (a function that can receive).
    pub fn has_running_queue(&self) -> bool {
        self.qps.iter().any(Option::is_some)
    }

    /// The running queue pairs' indices, in order (no allocation: asked
    /// for every received frame).
    fn running(&self) -> RunningPairs {
        let mut r = RunningPairs {
            pairs: [0; MAX_QUEUE_PAIRS as usize],
            len: 0,
        };
        for (i, _) in self.qps.iter().enumerate().filter(|(_, q)| q.is_some()) {
            r.pairs[r.len] = i;
            r.len += 1;
        }
        r
    }

    /// Whether the link is up.
    pub fn link_up(&self) -> bool {
        self.link_up
    }

    /// Changes the link state; returns true if it changed.
    pub fn set_link(&mut self, up: bool) -> bool {
        let changed = self.link_up != up;
        self.link_up = up;
        changed
    }

    /// Running queue pairs.
    pub fn queue_pairs(&self) -> impl Iterator<Item = &QueuePair> {
        self.qps.iter().flatten()
    }

    /// Hangs the TX engine of every running queue pair (fault injection);
    /// pairs the driver creates afterwards work. Returns how many hung.
    pub fn stall_tx(&mut self) -> usize {
        self.qps
            .iter_mut()
            .flatten()
            .map(QueuePair::stall_tx)
            .count()
    }

    /// Makes every running queue pair get its next `n` completions wrong
    /// in the way of `kind` (fault injection), and with `persist` every
    /// pair created later too (until cancelled with `n == 0`). Returns how
    /// many pairs were running.
    pub fn fault_completions(&mut self, kind: CqeFault, n: u32, persist: bool) -> usize {
        self.cqe_fault_new = (persist && n > 0).then_some((kind, n));
        self.qps
            .iter_mut()
            .flatten()
            .map(|q| q.fault_completions(kind, n))
            .count()
    }

    /// How long received TCP segments are held for coalescing, if they
    /// are.
    fn gro_on(&self) -> Option<Duration> {
        (self.offloads & offload_bits::GRO_HW != 0).then_some(self.gro_hold)
    }

    /// Sets how long an aggregate of received segments may stay open,
    /// for the queue pairs running and those to come.
    pub fn set_gro_hold(&mut self, hold: Duration) {
        self.gro_hold = hold;
        for q in self.qps.iter_mut().flatten() {
            q.set_gro_hold(hold);
        }
    }

    /// End of a batch of received frames: coalesced frames leave, every
    /// streaming pair publishes what it wrote. Returns the vectors to
    /// raise.
    pub fn end_of_batch(&mut self, dma: &DmaSpace) -> Vec<u16> {
        let now = Instant::now();
        self.qps
            .iter_mut()
            .flatten()
            .filter_map(|q| {
                (q.flush_gro(dma, Some(now)) | q.publish_stream(dma)).then(|| q.vector())
            })
            .collect()
    }

    /// Counters of queue pair `qp` since reset, across destroy and create.
    pub fn qp_stats(&self, qp: usize) -> Option<QpStats> {
        let mut total = *self.retired.get(qp)?;
        if let Some(Some(q)) = self.qps.get(qp) {
            total.add(&q.stats);
        }
        Some(total)
    }

    /// The timer of interrupt moderation and receive coalescing: the
    /// vectors due now, and when to look again (`None`: nothing is
    /// waiting).
    pub fn tick(&mut self, dma: &DmaSpace, now: Instant) -> (Vec<u16>, Option<Instant>) {
        let mut raise = Vec::new();
        for q in self.qps.iter_mut().flatten() {
            if q.tick(dma, now) {
                raise.push(q.vector());
            }
        }
        (raise, self.next_deadline())
    }

    /// The earliest moment a moderated interrupt or an aggregate falls
    /// due, or a queue pair the shapers held back may send.
    pub fn next_deadline(&self) -> Option<Instant> {
        let shaped = self.tx_shaped.iter().flatten().copied();
        self.qps
            .iter()
            .flatten()
            .filter_map(QueuePair::deadline)
            .chain(shaped)
            .min()
    }

    /// Queue pairs the shapers held back until now or earlier send what
    /// they may, a frame at a time, the one that sent least for its
    /// weight first.
    pub fn release_shaped(&mut self, dma: &DmaSpace, now: Instant, fx: &mut Effects) {
        let due = |d: &Option<Instant>| d.is_some_and(|d| d <= now);
        let mut waiting: Vec<usize> = (0..self.tx_shaped.len())
            .filter(|&qp| due(&self.tx_shaped[qp]))
            .collect();
        while let Some(i) = self.shapers.next_to_serve(&waiting) {
            let qp = waiting[i];
            self.tx_shaped[qp] = None;
            if let Some(Some(q)) = self.qps.get(qp) {
                let tail = q.tx_tail();
                self.follow_tx_tail(dma, qp, tail, now, Some(1), fx);
            }
            // Due again now: it sent its frame and has more.
            if !due(&self.tx_shaped[qp]) {
                waiting.swap_remove(i);
            }
        }
    }

    /// Reads a NIC register, or `None` if `offset` is not one.
    pub fn read_reg(&self, offset: usize) -> Option<u32> {
        Some(match offset {
            hw::regs::AQ_BASE_LO => self.aq_base as u32,
            hw::regs::AQ_BASE_HI => (self.aq_base >> 32) as u32,
            hw::regs::AQ_SIZE => self.aq_size,
            hw::regs::AQ_HEAD => self.aq_head,
            hw::regs::LINK_STATUS => u32::from(self.link_up) * hw::link::UP,
            hw::regs::VF_ASSOC if self.is_pf => hw::VfAssoc::default()
                .with_present(self.vf_assoc.is_some())
                .into_raw(),
            hw::regs::VF_SERIAL if self.is_pf => self.vf_assoc.unwrap_or(0),
            hw::regs::PTP_TIME_LO if self.is_pf => {
                let now = self.clock.now_ns();
                // CAST: the upper half.
                self.ptp_latch.set((now >> 32) as u32);
                // CAST: the lower half.
                now as u32
            }
            hw::regs::PTP_TIME_HI if self.is_pf => self.ptp_latch.get(),
            _ => return None,
        })
    }

    /// Writes a NIC register; returns false if `offset` is not one.
    pub fn write_reg(
        &mut self,
        dma: &DmaSpace,
        offset: usize,
        value: u32,
        fx: &mut Effects,
    ) -> bool {
        match offset {
            hw::regs::AQ_BASE_LO => self.aq_base = (self.aq_base & !0xffff_ffff) | u64::from(value),
            hw::regs::AQ_BASE_HI => {
                self.aq_base = (self.aq_base & 0xffff_ffff) | (u64::from(value) << 32)
            }
            hw::regs::AQ_SIZE => {
                self.aq_size = if value.is_power_of_two() && value <= AQ_MAX_ENTRIES {
                    value
                } else {
                    0
                };
                self.aq_head = 0;
            }
            hw::regs::AQ_TAIL => {
                // With the admin tail in the page the write is a kick and
                // the tail is the page's, as for the TX tails: a trapped
                // write may come after the card followed a later tail
                // from the page, and its older value would send the card
                // round the whole ring through stale entries.
                let tail = self.page.admin_tail(dma).unwrap_or(value);
                self.admin_doorbell(dma, tail, fx)
            }
            o if (hw::rdma::db::SQ..hw::rdma::db::END).contains(&o) => {
                let now = Instant::now();
                self.with_rdma(dma, now, fx, |e, io| e.doorbell(o, value, io));
            }
            o if (hw::regs::QP_DOORBELLS
                ..hw::regs::QP_DOORBELLS
                    + usize::from(MAX_QUEUE_PAIRS) * hw::regs::QP_DOORBELL_STRIDE)
                .contains(&o) =>
            {
                let rel = o - hw::regs::QP_DOORBELLS;
                self.qp_doorbell(
                    dma,
                    rel / hw::regs::QP_DOORBELL_STRIDE,
                    rel % hw::regs::QP_DOORBELL_STRIDE,
                    value,
                    fx,
                );
            }
            _ => return false,
        }
        true
    }

    fn qp_doorbell(&mut self, dma: &DmaSpace, qp: usize, reg: usize, value: u32, fx: &mut Effects) {
        let Some(Some(q)) = self.qps.get_mut(qp) else {
            debug!("doorbell for queue pair {qp}, which does not exist");
            return;
        };
        q.count_doorbell();
        let raise = match reg {
            hw::regs::DB_TX_TAIL => {
                q.stats.tx_doorbells += 1;
                // In page mode the write is a kick: the tail is the page's.
                let tail = if q.tx_tail_in_page() {
                    // CAST: below MAX_QUEUE_PAIRS, a u16.
                    let tail = self.page.tx_tail(dma, qp as u16);
                    q.take_page_tail(tail);
                    tail
                } else {
                    value
                };
                return self.tx_tail_moved(dma, qp, tail, fx);
            }
            // In page mode the write is a kick: the page says.
            hw::regs::DB_RX_TAIL | hw::regs::DB_CQ_HEAD if q.rx_cq_in_page() => {
                if reg == hw::regs::DB_RX_TAIL {
                    q.stats.rx_doorbells += 1;
                } else {
                    q.stats.cq_doorbells += 1;
                }
                q.page_kick(dma)
            }
            hw::regs::DB_RX_TAIL => {
                q.rx_doorbell(value);
                false
            }
            hw::regs::DB_CQ_HEAD => q.cq_doorbell(value),
            hw::regs::DB_STREAM_HEAD => {
                q.stream_doorbell(value);
                false
            }
            _ => false,
        };
        if raise {
            fx.raise
                .push(self.qps[qp].as_ref().map_or(0, |q| q.vector()));
        }
    }

    /// Queue pair `qp` (which exists) moved its TX tail to `tail`: its
    /// frames go out now, unless the shapers hold queue pairs back. Then
    /// it joins them and all that are due are served in weighted fair
    /// order: a frame sent the moment its doorbell rings would overtake
    /// pairs still waiting for the card's timer, which under load wakes
    /// late (seen: weights 1 and 3 shared 7.9 to 11.5 Mbit/s in a check).
    fn tx_tail_moved(&mut self, dma: &DmaSpace, qp: usize, tail: u32, fx: &mut Effects) {
        let now = Instant::now();
        if self.tx_shaped.iter().all(Option::is_none) {
            return self.follow_tx_tail(dma, qp, tail, now, None, fx);
        }
        // Takes the tail and marks the pair due now if it has a frame.
        self.follow_tx_tail(dma, qp, tail, now, Some(0), fx);
        self.release_shaped(dma, now, fx);
    }

    /// Takes the frames queue pair `qp` (which exists) posted up to `tail`
    /// and sends them (those the shapers let go at `now`); raises its
    /// vector if that completes something due.
    fn follow_tx_tail(
        &mut self,
        dma: &DmaSpace,
        qp: usize,
        tail: u32,
        now: Instant,
        most: Option<usize>,
        fx: &mut Effects,
    ) {
        let mtu = self.mtu;
        let link_up = self.link_up;
        let is_pf = self.is_pf;
        let Some(Some(q)) = self.qps.get_mut(qp) else {
            return;
        };
        let stats = &mut self.stats;
        let mac_stats = &mut self.mac_stats;
        let tx_csum = self.offloads & offload_bits::TX_CSUM != 0;
        let tso = self.offloads & offload_bits::TSO != 0;
        let uso = self.offloads & offload_bits::USO != 0;
        let tunnel_tso = tso && self.offloads & offload_bits::TUNNEL_TSO != 0;
        // The pair counts both kinds of segmentation together.
        let cut = |s: &NicStats| (s.tso_frames + s.uso_frames, s.tso_segments + s.uso_segments);
        let (frames_before, segments_before) = cut(stats);
        let shapers = &mut self.shapers;
        let shaped = &mut self.tx_shaped[qp];
        *shaped = None;
        let mut left = most.unwrap_or(usize::MAX);
        let admit = |first: &hw::TxDesc, len: usize| {
            if left == 0 {
                // The caller's share is taken: the rest waits its turn.
                *shaped = Some(now);
                return false;
            }
            match shapers.admit(qp, wire_len(first, len), now) {
                Ok(()) => {
                    left -= 1;
                    true
                }
                Err(due) => {
                    *shaped = Some(due);
                    false
                }
            }
        };
        let raise = q.tx_doorbell_shaped(dma, tail, admit, |mut f: TxFrame| {
            if f.first.flags & hw::TxDesc::GFT_REINJECT != 0 {
                // Checked when it came in; the card applies the
                // action in its header.
                if is_pf && link_up {
                    fx.send.push(Outgoing {
                        frame: f.data,
                        reinject: true,
                        rdma: false,
                        train: None,
                    });
                } else if !is_pf {
                    stats.tx_bad_reinject += 1;
                } else {
                    stats.tx_link_down += 1;
                }
                return;
            }
            if f.first.flags & (hw::TxDesc::TSO | hw::TxDesc::TUNNEL)
                == hw::TxDesc::TSO | hw::TxDesc::TUNNEL
            {
                let Some(segments) = segment_tunnel(&f.data, &f.first).filter(|_| tunnel_tso)
                else {
                    stats.tx_bad_tso += 1;
                    return;
                };
                // CAST: at most TSO_MAX_SEGS.
                let segs = segments.len() as u64;
                stats.tso_frames += 1;
                stats.tso_tunnel_frames += 1;
                stats.tso_segments += segs;
                send_segments(segments, link_up, mtu, stats, mac_stats, &mut fx.send);
                return;
            }
            if f.first.flags & hw::TxDesc::TSO != 0 {
                let shape = offload::train_shape(&f.first);
                let Some(train) = TcpTrain::new(&f.data, shape).filter(|_| tso) else {
                    stats.tx_bad_tso += 1;
                    return;
                };
                // CAST: at most TSO_MAX_SEGS.
                let segs = train.count() as u64;
                stats.tso_frames += 1;
                stats.tso_segments += segs;
                if !link_up {
                    stats.tx_link_down += segs;
                } else if train.segment_len(0) > mtu as usize + 14 + 4 {
                    // The first segment is the longest.
                    stats.tx_oversize += segs;
                } else {
                    for i in 0..train.count() {
                        count_tx(mac_stats, train.headers(), train.segment_len(i));
                    }
                    // Cut where frames are looked at one by one, or not
                    // at all (crossing the wire whole).
                    fx.send.push(Outgoing {
                        frame: f.data,
                        reinject: false,
                        rdma: false,
                        train: Some(shape),
                    });
                }
                return;
            }
            if f.first.flags & hw::TxDesc::USO != 0 {
                let Some(datagrams) = segment_udp(&f.data, &f.first).filter(|_| uso) else {
                    stats.tx_bad_uso += 1;
                    return;
                };
                // CAST: at most TSO_MAX_SEGS.
                let segs = datagrams.len() as u64;
                stats.uso_frames += 1;
                stats.uso_segments += segs;
                send_segments(datagrams, link_up, mtu, stats, mac_stats, &mut fx.send);
                return;
            }
            if tx_csum && f.first.flags & hw::TxDesc::CSUM != 0 {
                offload::insert_checksum(&mut f.data, &f.first);
            }
            if !link_up {
                stats.tx_link_down += 1;
            } else if f.data.len() > mtu as usize + 14 + 4 {
                stats.tx_oversize += 1;
            } else {
                count_tx(mac_stats, &f.data, f.data.len());
                fx.send.push(Outgoing {
                    frame: f.data,
                    reinject: false,
                    rdma: false,
                    train: None,
                });
            }
        });
        let (frames, segments) = cut(stats);
        q.stats.tso_frames += frames - frames_before;
        q.stats.tso_segments += segments - segments_before;
        if raise {
            fx.raise.push(q.vector());
        }
    }

    /// Follows every TX tail in the doorbell page that moved since the
    /// card last looked, and the admin tail, as if their doorbells had
    /// been rung (and counted apart, as polled). Returns whether any had.
    pub fn poll_tx_tails(&mut self, dma: &DmaSpace, fx: &mut Effects) -> bool {
        if !self.page.is_set() {
            return false;
        }
        let mut moved = false;
        if let Some(tail) = self.page.admin_tail(dma) {
            let head = self.aq_head;
            if tail != head {
                // A tail outside the queue is refused there, and the head
                // stays: nothing moved.
                self.admin_doorbell(dma, tail, fx);
                if self.aq_head != head {
                    self.stats.admin_tails_polled += 1;
                    moved = true;
                }
            }
        }
        // (The command may have moved the page.)
        let page = self.page;
        for qp in 0..usize::from(MAX_QUEUE_PAIRS) {
            let Some(Some(q)) = self.qps.get_mut(qp) else {
                continue;
            };
            // CAST: below MAX_QUEUE_PAIRS, a u16.
            let tail = page.tx_tail(dma, qp as u16);
            if !q.tx_tail_in_page() || !q.take_page_tail(tail) {
                continue;
            }
            q.stats.tx_tails_polled += 1;
            moved = true;
            self.tx_tail_moved(dma, qp, tail, fx);
        }
        moved
    }

    fn admin_doorbell(&mut self, dma: &DmaSpace, tail: u32, fx: &mut Effects) {
        if self.aq_size == 0 || tail >= self.aq_size {
            debug!("admin doorbell {tail} with queue size {}", self.aq_size);
            return;
        }
        while self.aq_head != tail {
            let addr = self.aq_base + u64::from(self.aq_head) * AQ_ENTRY_SIZE as u64;
            let mut entry = [0u8; AQ_ENTRY_SIZE];
            if dma.read(addr, &mut entry).is_err() {
                debug!("admin entry at {addr:#x} unreachable");
                return;
            }
            let cmd = AdminCmd::from_bytes(&entry);
            let status = match (self.take_admin_fault(&cmd), cmd) {
                (Some(AdminFault::Timeout), _) => {
                    info!("admin command dropped (fault injection)");
                    self.aq_head = (self.aq_head + 1) & (self.aq_size - 1);
                    continue;
                }
                (Some(AdminFault::Error), _) => AdminStatus::DeviceError,
                (None, Ok(cmd)) => self.execute(dma, cmd, &mut entry, fx),
                (None, Err(status)) => status,
            };
            hw::aq_complete(&mut entry, status);
            // The result goes back into the same entry; the done flag last.
            let _ = dma.write_flags_last(addr, &entry);
            self.stats.admin_cmds += 1;
            self.aq_head = (self.aq_head + 1) & (self.aq_size - 1);
        }
    }

    pub(crate) fn execute(
        &mut self,
        dma: &DmaSpace,
        cmd: AdminCmd,
        entry: &mut [u8; AQ_ENTRY_SIZE],
        fx: &mut Effects,
    ) -> AdminStatus {
        debug!("admin {cmd:?}");
        match cmd {
            AdminCmd::QueryDevice => {
                DeviceInfo {
                    max_qps: u32::from(MAX_QUEUE_PAIRS),
                    max_ring_entries: u32::from(hw::MAX_RING_ENTRIES),
                    speed_mbps: hw::LINK_SPEED_MBPS,
                    // RSS (and steering) is always on: reported, not
                    // switchable.
                    offloads: SUPPORTED_OFFLOADS | offload_bits::RSS,
                    max_mtu: MAX_MTU,
                    features: hw::feature::DOORBELL_PAGE
                        | hw::feature::ADMIN_TAIL_IN_PAGE
                        | hw::feature::RX_CQ_IN_PAGE
                        | hw::feature::HDS
                        | hw::feature::TX_SHAPERS
                        | if self.is_pf {
                            hw::feature::PTP | hw::feature::FOREIGN_VF
                        } else {
                            0
                        }
                        | if self.xdp.is_some() {
                            hw::feature::XDP_OFFLOAD
                        } else {
                            0
                        },
                }
                .write_result(entry);
            }
            AdminCmd::SetDoorbellPage { addr } => {
                if self
                    .queue_pairs()
                    .any(|q| q.tx_tail_in_page() || q.rx_cq_in_page())
                {
                    return AdminStatus::BadState;
                }
                match DoorbellPage::at(dma, addr) {
                    Ok(page) => self.page = page,
                    Err(_) => return AdminStatus::BadParam,
                }
            }
            AdminCmd::CreateQp(cfg) => {
                let gro = self.gro_on();
                let Some(slot) = self.qps.get_mut(usize::from(cfg.qp)) else {
                    return AdminStatus::BadParam;
                };
                if slot.is_some() {
                    return AdminStatus::BadState;
                }
                let Some(mut q) = QueuePair::new(cfg) else {
                    return AdminStatus::BadParam;
                };
                if q.tx_tail_in_page() {
                    if !self.page.is_set() {
                        return AdminStatus::BadParam;
                    }
                    // A tail an earlier pair left must not pass for this
                    // one's.
                    self.page.clear_tx_tail(dma, cfg.qp);
                }
                if q.rx_cq_in_page() {
                    // A ring pair only, in a page the card was given.
                    let Some(addr) = self.page.rx_words(cfg.qp) else {
                        return AdminStatus::BadParam;
                    };
                    if self.rx_streams[usize::from(cfg.qp)].is_some() {
                        return AdminStatus::BadParam;
                    }
                    self.page.clear_rx_words(dma, cfg.qp);
                    q.use_page_words(addr);
                }
                if let Some(stream) = &self.rx_streams[usize::from(cfg.qp)] {
                    q = q.with_stream(stream.clone());
                }
                q.set_moderation(self.moderation);
                q.set_timestamps(Arc::clone(&self.clock), self.rx_tstamp);
                q.set_gro(dma, gro);
                if let Some((kind, n)) = self.cqe_fault_new {
                    q.fault_completions(kind, n);
                }
                if q.streaming() {
                    info!(
                        "queue pair {} created ({} TX entries, RX stream)",
                        cfg.qp, cfg.tx_entries
                    );
                } else {
                    info!(
                        "queue pair {} created ({} TX, {} RX entries{})",
                        cfg.qp,
                        cfg.tx_entries,
                        cfg.rx_entries,
                        match (q.tx_tail_in_page(), q.rx_cq_in_page()) {
                            (true, true) => ", TX, RX tails and CQ head in the doorbell page",
                            (true, false) => ", TX tail in the doorbell page",
                            (false, true) => ", RX tail and CQ head in the doorbell page",
                            (false, false) => "",
                        }
                    );
                }
                *slot = Some(q);
            }
            AdminCmd::DestroyQp { qp } => match self.qps.get_mut(usize::from(qp)) {
                Some(slot @ Some(_)) => {
                    if let Some(q) = slot.take() {
                        self.retired[usize::from(qp)].add(&q.stats);
                    }
                }
                Some(None) => return AdminStatus::BadState,
                None => return AdminStatus::BadParam,
            },
            AdminCmd::SetCoalesce { usecs, frames } => {
                if usecs > hw::MAX_COALESCE_USECS || frames > hw::MAX_COALESCE_FRAMES {
                    return AdminStatus::BadParam;
                }
                self.moderation = Moderation { usecs, frames };
                for q in self.qps.iter_mut().flatten() {
                    q.set_moderation(self.moderation);
                }
            }
            AdminCmd::SetEswitchMode { mode } => {
                if !self.is_pf {
                    return AdminStatus::BadOpcode;
                }
                let switchdev = match mode {
                    0 => false,
                    1 => true,
                    _ => return AdminStatus::BadParam,
                };
                let Some(mut gft) = self.lock_gft() else {
                    return AdminStatus::BadOpcode;
                };
                info!(
                    "switch mode: {}",
                    if switchdev { "switchdev" } else { "legacy" }
                );
                gft.set_switchdev(switchdev);
                drop(gft);
                // The PF is the wire's representor: received frames are its.
                self.datapath_vf = false;
                self.switchdev = switchdev;
            }
            AdminCmd::SetDatapath { vf } => {
                if !self.is_pf {
                    return AdminStatus::BadOpcode;
                }
                info!("data path: {}", if vf { "VF" } else { "synthetic" });
                self.datapath_vf = vf;
            }
            AdminCmd::SetRxStream {
                qp,
                bytes,
                table,
                tail,
                chunk_bytes,
                headroom,
                tailroom,
            } => {
                let Some(slot) = self.rx_streams.get_mut(usize::from(qp)) else {
                    return AdminStatus::BadParam;
                };
                if self.qps[usize::from(qp)].is_some() {
                    return AdminStatus::BadState;
                }
                if bytes == 0 {
                    *slot = None;
                } else {
                    let geometry = StreamGeometry {
                        bytes,
                        chunk_bytes,
                        headroom,
                        tailroom,
                    };
                    let Some(stream) = RxStream::new(geometry, table, tail) else {
                        return AdminStatus::BadParam;
                    };
                    *slot = Some(stream);
                }
            }
            AdminCmd::QueryQpStats { qp } => {
                let Some(s) = self.qp_stats(usize::from(qp)) else {
                    return AdminStatus::BadParam;
                };
                hw::QpCardStats {
                    rx_no_buffer: s.rx_no_buffer,
                    dma_meta_bytes: s.dma_meta_bytes,
                    dma_payload_bytes: s.tx_bytes + s.rx_bytes,
                    bad_requests: s.bad_requests,
                    irqs: s.irqs,
                    irqs_moderated: s.irqs_moderated,
                    tso_segments: s.tso_segments,
                }
                .write_result(entry);
            }
            AdminCmd::SetMac { mac } => {
                if mac[0] & 1 != 0 {
                    return AdminStatus::BadParam;
                }
                self.mac = mac;
            }
            AdminCmd::SetMtu { mtu } => {
                if !(MIN_MTU..=MAX_MTU).contains(&mtu) {
                    return AdminStatus::BadParam;
                }
                self.mtu = mtu;
            }
            AdminCmd::SetRxMode { flags, mc_filter } => {
                self.rx_mode = flags;
                self.mc_filter = mc_filter;
            }
            AdminCmd::PtpSetTime { ns } if self.is_pf => self.clock.set(ns),
            AdminCmd::PtpAdjTime { delta } if self.is_pf => self.clock.adjust(delta),
            AdminCmd::PtpAdjFreq { scaled_ppm } if self.is_pf => {
                if self.clock.set_frequency(scaled_ppm).is_err() {
                    return AdminStatus::BadParam;
                }
            }
            AdminCmd::PtpSetTime { .. }
            | AdminCmd::PtpAdjTime { .. }
            | AdminCmd::PtpAdjFreq { .. } => return AdminStatus::BadState,
            AdminCmd::SetTimestamps { rx } => {
                if rx > 1 {
                    return AdminStatus::BadParam;
                }
                self.rx_tstamp = rx == 1;
                for q in self.qps.iter_mut().flatten() {
                    q.set_timestamps(Arc::clone(&self.clock), self.rx_tstamp);
                }
            }
            AdminCmd::SetShaper {
                node,
                parent,
                burst,
                rate,
                weight,
            } => {
                let setting = Setting {
                    burst,
                    rate,
                    weight,
                };
                if self
                    .shapers
                    .set(node, parent, setting, Instant::now())
                    .is_err()
                {
                    return AdminStatus::BadParam;
                }
                // A queue pair held back may go sooner now.
                for due in self.tx_shaped.iter_mut().flatten() {
                    *due = Instant::now();
                }
            }
            AdminCmd::SetOffloads { flags } => {
                // Coalescing keeps to checksums the card verified.
                if flags & !SUPPORTED_OFFLOADS != 0
                    || (flags & offload_bits::GRO_HW != 0 && flags & offload_bits::RX_CSUM == 0)
                {
                    return AdminStatus::BadParam;
                }
                self.offloads = flags;
                let on = self.gro_on();
                for q in self.qps.iter_mut().flatten() {
                    if q.set_gro(dma, on) {
                        fx.raise.push(q.vector());
                    }
                }
            }
            AdminCmd::GftConfig { .. }
            | AdminCmd::GftSetGeneration { .. }
            | AdminCmd::GftInstall { .. }
            | AdminCmd::GftInstallBatch { .. }
            | AdminCmd::GftQueryExceptionStats
            | AdminCmd::GftSetExceptionRate { .. }
            | AdminCmd::GftDelete { .. }
            | AdminCmd::GftFlush
            | AdminCmd::GftDump { .. }
            | AdminCmd::GftQueryStats
            | AdminCmd::GftRuleAdd { .. }
            | AdminCmd::GftRuleDelete { .. }
            | AdminCmd::GftRuleQuery { .. }
            | AdminCmd::GftRuleFlush => {
                return match self.lock_gft() {
                    Some(mut gft) => gft.execute(dma, cmd, entry, Instant::now()),
                    None => AdminStatus::BadOpcode,
                };
            }
            AdminCmd::XdpMapCreate { .. }
            | AdminCmd::XdpMapDestroy { .. }
            | AdminCmd::XdpMapElem { .. }
            | AdminCmd::XdpLoad { .. }
            | AdminCmd::XdpUnload => {
                return match &self.xdp {
                    Some(xdp) => xdp.execute(dma, cmd),
                    None => AdminStatus::BadOpcode,
                };
            }
            AdminCmd::XdpStats => {
                let Some(xdp) = &self.xdp else {
                    return AdminStatus::BadOpcode;
                };
                let s = xdp.stats();
                hw::XdpStatsResult {
                    pass: s.pass,
                    drop: s.drop,
                    aborted: s.aborted,
                    tx: s.tx,
                }
                .write_result(entry);
            }
            AdminCmd::RdmaQueryCaps
            | AdminCmd::RdmaSetGid { .. }
            | AdminCmd::RdmaDelGid { .. }
            | AdminCmd::RdmaCreateEq { .. }
            | AdminCmd::RdmaDestroyEq
            | AdminCmd::RdmaCreateCq { .. }
            | AdminCmd::RdmaDestroyCq { .. }
            | AdminCmd::RdmaResizeCq { .. }
            | AdminCmd::RdmaCreateSrq { .. }
            | AdminCmd::RdmaArmSrq { .. }
            | AdminCmd::RdmaResizeSrq { .. }
            | AdminCmd::RdmaOdpMap { .. }
            | AdminCmd::RdmaOdpUnmap { .. }
            | AdminCmd::RdmaDestroySrq { .. }
            | AdminCmd::RdmaCreateQp(_)
            | AdminCmd::RdmaModifyQp { .. }
            | AdminCmd::RdmaQueryQp { .. }
            | AdminCmd::RdmaDestroyQp { .. }
            | AdminCmd::RdmaRegMr(_)
            | AdminCmd::RdmaDeregMr { .. }
            | AdminCmd::RdmaAllocDm { .. }
            | AdminCmd::RdmaFreeDm { .. }
            | AdminCmd::RdmaQueryStats { .. }
            | AdminCmd::RdmaQueryMcastCaps
            | AdminCmd::RdmaAttachMcast { .. }
            | AdminCmd::RdmaDetachMcast { .. } => {
                let now = Instant::now();
                return self
                    .with_rdma(dma, now, fx, |e, io| e.execute(cmd, entry, io))
                    .unwrap_or(AdminStatus::BadOpcode);
            }
            AdminCmd::SetRss { config, context } => {
                let mut block = [0u8; hw::RSS_CONFIG_LEN];
                if dma.read(config, &mut block).is_err() {
                    return AdminStatus::BadParam;
                }
                return self.steering.set_context(context, &block);
            }
            AdminCmd::DelRssContext { context } => return self.steering.del_context(context),
            AdminCmd::SetFlowRule(rule) => return self.steering.set_rule(rule),
            AdminCmd::DelFlowRule { index } => return self.steering.del_rule(index),
            AdminCmd::QueryMacStats { buf } => {
                if dma.write(buf, &self.mac_stats.to_bytes()).is_err() {
                    return AdminStatus::BadParam;
                }
            }
        }
        AdminStatus::Ok
    }

    /// Whether the RX filter accepts a frame for `dst`.
    fn accepts(&self, dst: &[u8; 6]) -> bool {
        // Switchdev: the PF is the wire's representor, which gets every
        // frame no rule forwarded, whatever its address.
        if self.rx_mode & rx_mode::PROMISC != 0 || *dst == self.mac || self.switchdev {
            return true;
        }
        if *dst == [0xff; 6] {
            return self.rx_mode & rx_mode::BROADCAST != 0;
        }
        dst[0] & 1 != 0
            && (self.rx_mode & rx_mode::ALLMULTI != 0
                || self.mc_filter & (1 << mc_filter_bit(dst)) != 0)
    }

    /// PF: a GFT exception (metadata header, then the frame) for the host.
    /// It goes to queue pair 0, past the RX filter. Returns the vector to
    /// raise, if any.
    pub fn deliver_exception(&mut self, dma: &DmaSpace, data: &[u8]) -> Option<u16> {
        let delivered = match self.qps.first_mut() {
            Some(Some(q)) => match q.deliver(dma, data, Cqe::GFT_EXCEPTION, 0) {
                RxOutcome::Delivered { raise } => Some(raise.then(|| q.vector())),
                _ => None,
            },
            _ => None,
        };
        if delivered.is_none() {
            self.stats.gft_exceptions_dropped += 1;
        }
        delivered.flatten()
    }

    /// A frame arrived from the wire (`fcs_ok`: its frame check sequence
    /// matched). Returns the vector to raise, if any.
    pub fn receive(&mut self, dma: &DmaSpace, frame: &[u8], fcs_ok: bool) -> Option<u16> {
        if !self.link_up || frame.len() < 14 {
            return None;
        }
        let dst: [u8; 6] = frame[..6].try_into().expect("length checked");
        if !self.accepts(&dst) || frame.len() > self.mtu as usize + 14 + 4 {
            self.stats.rx_filtered += 1;
            return None;
        }
        if fcs_ok {
            count_rx(&mut self.mac_stats, frame, frame.len());
        } else {
            self.mac_stats.rx_fcs_errors += 1;
        }
        let running = self.running();
        let running = running.as_slice();
        if running.is_empty() {
            self.stats.rx_no_queue += 1;
            return None;
        }
        let csum = if !fcs_ok {
            self.stats.rx_fcs_errors += 1;
            Cqe::FCS_ERR
        } else if self.offloads & offload_bits::RX_CSUM != 0 && offload::l4_checksum_ok(frame) {
            Cqe::CSUM_OK
        } else {
            0
        };
        // Steering rules, then RSS (the rule's context or the default).
        let pick = self.steering.pick(frame, running);
        let q = self.qps[pick.qp].as_mut()?;
        match q.deliver(dma, frame, pick.flags | csum, pick.hash) {
            RxOutcome::Delivered { raise: true } => Some(q.vector()),
            _ => None,
        }
    }

    /// A train arrived from the wire, undamaged: its segments, each as
    /// [`Self::receive`] would take it (the RX filter, the MAC counters,
    /// steering on their common headers). Returns the vector to raise,
    /// if any.
    pub fn receive_train(&mut self, dma: &DmaSpace, train: &TcpTrain<'_>) -> Option<u16> {
        let headers = train.headers();
        if !self.link_up || headers.len() < 14 {
            return None;
        }
        let dst: [u8; 6] = headers[..6].try_into().expect("length checked");
        let longest = train.segment_len(0);
        // CAST: segments counted by a train are at most TSO_MAX_SEGS.
        let segs = train.count() as u64;
        if !self.accepts(&dst) || longest > self.mtu as usize + 14 + 4 {
            self.stats.rx_filtered += segs;
            return None;
        }
        for i in 0..train.count() {
            count_rx(&mut self.mac_stats, headers, train.segment_len(i));
        }
        let running = self.running();
        let running = running.as_slice();
        if running.is_empty() {
            self.stats.rx_no_queue += segs;
            return None;
        }
        // The card computed each segment's checksum as it cut the train.
        let csum = if self.offloads & offload_bits::RX_CSUM != 0 {
            Cqe::CSUM_OK
        } else {
            0
        };
        let pick = self.steering.pick(train.frame(), running);
        let q = self.qps[pick.qp].as_mut()?;
        match q.deliver_train(dma, train, pick.flags | csum, pick.hash) {
            RxOutcome::Delivered { raise: true } => Some(q.vector()),
            _ => None,
        }
    }
}

/// The MAC counter classes of a frame (without its FCS): (octets with
/// the FCS, multicast, broadcast, MAC control).
fn mac_class(head: &[u8], len: usize) -> (u64, bool, bool, bool) {
    let broadcast = head.get(..6) == Some(&[0xff; 6][..]);
    let multicast = !broadcast && head.first().is_some_and(|b| b & 1 != 0);
    let control = head.get(12..14) == Some(&[0x88, 0x08][..]);
    (len as u64 + 4, multicast, broadcast, control)
}

/// Counts a frame of `len` bytes that starts with `head` (its Ethernet
/// header at least) in one direction's frames, octets, multicast,
/// broadcast and control counters.
fn count_frame(
    [frames, octets, multicast, broadcast, control]: [&mut u64; 5],
    head: &[u8],
    len: usize,
) {
    let (len, m, b, c) = mac_class(head, len);
    *frames += 1;
    *octets += len;
    *multicast += u64::from(m);
    *broadcast += u64::from(b);
    *control += u64::from(c);
}

/// The bytes a frame of `len` bytes handed over with `first` puts on the
/// wire: one set of headers per segment if the card cuts it.
fn wire_len(first: &hw::TxDesc, len: usize) -> usize {
    if first.flags & (hw::TxDesc::TSO | hw::TxDesc::USO) == 0 || first.mss == 0 {
        return len;
    }
    let hdr = usize::from(first.hdr_len).min(len);
    let segs = (len - hdr).div_ceil(usize::from(first.mss)).max(1);
    len + (segs - 1) * hdr
}

/// Sends the frames a segmentation request became (the first is the
/// longest), or counts them dropped: link down, or longer than the MTU.
fn send_segments(
    segments: Vec<Vec<u8>>,
    link_up: bool,
    mtu: u32,
    stats: &mut NicStats,
    mac_stats: &mut hw::MacStats,
    send: &mut Vec<Outgoing>,
) {
    // CAST: at most TSO_MAX_SEGS.
    let count = segments.len() as u64;
    if !link_up {
        stats.tx_link_down += count;
    } else if segments
        .first()
        .is_some_and(|s| s.len() > mtu as usize + 14 + 4)
    {
        stats.tx_oversize += count;
    } else {
        for frame in segments {
            count_tx(mac_stats, &frame, frame.len());
            send.push(Outgoing {
                frame,
                reinject: false,
                rdma: false,
                train: None,
            });
        }
    }
}

/// Counts a frame of `len` bytes sent to the wire, starting with `head`.
fn count_tx(s: &mut hw::MacStats, head: &[u8], len: usize) {
    let c = [
        &mut s.tx_frames,
        &mut s.tx_octets,
        &mut s.tx_multicast,
        &mut s.tx_broadcast,
        &mut s.tx_control,
    ];
    count_frame(c, head, len);
}

/// Counts a good frame of `len` bytes taken from the wire, starting
/// with `head`.
fn count_rx(s: &mut hw::MacStats, head: &[u8], len: usize) {
    let c = [
        &mut s.rx_frames,
        &mut s.rx_octets,
        &mut s.rx_multicast,
        &mut s.rx_broadcast,
        &mut s.rx_control,
    ];
    count_frame(c, head, len);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mac_counters_survive_a_function_reset() {
        let mut pf = Nic::new([2, 0, 0, 0, 0, 1], true);
        count_tx(&mut pf.mac_stats, &[0xffu8; 64], 64);
        pf.reset();
        assert_eq!((pf.mac_stats.tx_frames, pf.mac_stats.tx_broadcast), (1, 1));
    }

    #[test]
    fn mac_counters_classify_frames() {
        let mut m = hw::MacStats::default();
        let mut f = vec![0u8; 100];
        f[..6].fill(0xff);
        count_tx(&mut m, &f, f.len());
        f[..6].copy_from_slice(&[0x01, 0x00, 0x5e, 0, 0, 1]);
        count_tx(&mut m, &f, f.len());
        f[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 1]);
        f[12..14].copy_from_slice(&[0x88, 0x08]);
        count_rx(&mut m, &f, f.len());
        assert_eq!(
            (
                m.tx_frames,
                m.tx_octets,
                m.tx_broadcast,
                m.tx_multicast,
                m.tx_control
            ),
            (2, 208, 1, 1, 0)
        );
        assert_eq!(
            (m.rx_frames, m.rx_octets, m.rx_control, m.rx_multicast),
            (1, 104, 1, 0)
        );
    }

    #[test]
    fn rx_filter() {
        let mut nic = Nic::new([2, 0, 0, 0, 0, 1], true);
        assert!(nic.accepts(&[2, 0, 0, 0, 0, 1]));
        assert!(nic.accepts(&[0xff; 6]));
        assert!(!nic.accepts(&[2, 0, 0, 0, 0, 2]));
        let mc = [0x33, 0x33, 0xff, 0, 0, 1];
        assert!(!nic.accepts(&mc));
        nic.mc_filter = 1 << mc_filter_bit(&mc);
        assert!(nic.accepts(&mc));
        nic.rx_mode |= rx_mode::PROMISC;
        assert!(nic.accepts(&[2, 0, 0, 0, 0, 2]));
    }

    #[test]
    fn admin_faults_drop_or_fail_commands() {
        let mut nic = Nic::new([2, 0, 0, 0, 0, 1], true);
        let (dma, _f) = crate::dma::tests::two_region_space();
        nic.aq_base = 0x1000;
        nic.aq_size = 4;
        let status = |dma: &DmaSpace, slot: u64| {
            let mut e = [0u8; AQ_ENTRY_SIZE];
            dma.read(0x1000 + slot * AQ_ENTRY_SIZE as u64, &mut e)
                .unwrap();
            hw::aq_entry_state(&e)
        };
        for slot in 0..3 {
            let cmd = AdminCmd::SetMtu { mtu: 2000 }.to_bytes();
            dma.write(0x1000 + slot * AQ_ENTRY_SIZE as u64, &cmd)
                .unwrap();
        }
        nic.fault_admin(AdminFault::Timeout, 1, false);
        nic.admin_doorbell(&dma, 1, &mut Effects::default());
        assert_eq!(status(&dma, 0).0 & hw::AQ_DONE, 0, "never completed");
        nic.fault_admin(AdminFault::Error, 1, false);
        nic.admin_doorbell(&dma, 2, &mut Effects::default());
        assert_eq!(status(&dma, 1).1, AdminStatus::DeviceError as u16);
        assert_eq!(nic.mtu, 1500, "a failed command has no effect");
        nic.admin_doorbell(&dma, 3, &mut Effects::default());
        assert_eq!(status(&dma, 2).1, AdminStatus::Ok as u16);
        assert_eq!(nic.mtu, 2000);
        assert_eq!(nic.stats.admin_faults_injected, 2);
        // Aimed at queue pair creations: other commands pass untouched.
        nic.fault_admin(AdminFault::Error, 1, true);
        let create = AdminCmd::CreateQp(hw::QpConfig::default()).to_bytes();
        let mtu = AdminCmd::SetMtu { mtu: 3000 }.to_bytes();
        dma.write(0x1000 + 3 * AQ_ENTRY_SIZE as u64, &mtu).unwrap();
        dma.write(0x1000, &create).unwrap();
        nic.admin_doorbell(&dma, 1, &mut Effects::default());
        assert_eq!(status(&dma, 3).1, AdminStatus::Ok as u16);
        assert_eq!(nic.mtu, 3000);
        assert_eq!(status(&dma, 0).1, AdminStatus::DeviceError as u16);
        assert_eq!(nic.stats.admin_faults_injected, 3);
    }

    #[test]
    fn admin_validates_parameters() {
        let mut nic = Nic::new([2, 0, 0, 0, 0, 1], true);
        let mut e = [0u8; AQ_ENTRY_SIZE];
        let (dma, _f) = crate::dma::tests::two_region_space();
        let mut run = |cmd| nic.execute(&dma, cmd, &mut e, &mut Effects::default());
        assert_eq!(run(AdminCmd::SetMtu { mtu: 67 }), AdminStatus::BadParam);
        assert_eq!(run(AdminCmd::SetMtu { mtu: 9001 }), AdminStatus::BadParam);
        assert_eq!(run(AdminCmd::SetMtu { mtu: 9000 }), AdminStatus::Ok);
        assert_eq!(
            run(AdminCmd::SetMac {
                mac: [1, 0, 0, 0, 0, 0]
            }),
            AdminStatus::BadParam
        );
        assert_eq!(run(AdminCmd::DestroyQp { qp: 0 }), AdminStatus::BadState);
        assert_eq!(run(AdminCmd::DestroyQp { qp: 99 }), AdminStatus::BadParam);
        assert_eq!(
            run(AdminCmd::SetRss {
                config: 0x10,
                context: 0
            }),
            AdminStatus::BadParam,
            "unmapped block"
        );
        let mut block = [0u8; hw::RSS_CONFIG_LEN];
        block[hw::RSS_KEY_LEN + 5] = MAX_QUEUE_PAIRS as u8;
        dma.write(0x1000, &block).unwrap();
        assert_eq!(
            run(AdminCmd::SetRss {
                config: 0x1000,
                context: 0
            }),
            AdminStatus::BadParam,
            "queue pair 16, past the last"
        );
        block[hw::RSS_KEY_LEN + 5] = 7;
        block[hw::RSS_KEY_LEN + hw::RSS_TABLE_LEN] = 0x10;
        dma.write(0x1000, &block).unwrap();
        assert_eq!(
            run(AdminCmd::SetRss {
                config: 0x1000,
                context: 0
            }),
            AdminStatus::BadParam,
            "unknown hash field"
        );
        block[hw::RSS_KEY_LEN + hw::RSS_TABLE_LEN] = hw::rss_fields::IP_SRC;
        dma.write(0x1000, &block).unwrap();
        assert_eq!(
            run(AdminCmd::SetRss {
                config: 0x1000,
                context: 0
            }),
            AdminStatus::Ok
        );
        assert_eq!(run(AdminCmd::QueryDevice), AdminStatus::Ok);
        assert_eq!(DeviceInfo::read_result(&e).max_mtu, 9000);
    }

    #[test]
    fn the_foreign_vf_offer_is_the_pfs_and_outlives_a_reset() {
        let mut vf = Nic::new([2, 0, 0, 0, 0, 1], false);
        assert!(!vf.set_vf_assoc(Some(3)));
        assert_eq!(vf.read_reg(hw::regs::VF_ASSOC), None);
        let mut pf = Nic::new([2, 0, 0, 0, 0, 1], true);
        assert_eq!(pf.read_reg(hw::regs::VF_ASSOC), Some(0));
        assert!(pf.set_vf_assoc(Some(3)));
        assert!(!pf.set_vf_assoc(Some(3)), "no change, no event");
        pf.reset();
        let assoc = hw::VfAssoc::from_raw(pf.read_reg(hw::regs::VF_ASSOC).unwrap());
        assert!(
            assoc.present(),
            "the offer is the switch's, not the function's"
        );
        assert_eq!(pf.read_reg(hw::regs::VF_SERIAL), Some(3));
        assert!(pf.set_vf_assoc(None));
        assert_eq!(pf.read_reg(hw::regs::VF_ASSOC), Some(0));
    }

    #[test]
    fn datapath_switch_is_the_pfs_and_coalescing_is_bounded() {
        let (dma, _f) = crate::dma::tests::two_region_space();
        let mut e = [0u8; AQ_ENTRY_SIZE];
        let mut vf = Nic::new([2, 0, 0, 0, 0, 1], false);
        assert_eq!(
            vf.execute(
                &dma,
                AdminCmd::SetDatapath { vf: true },
                &mut e,
                &mut Effects::default()
            ),
            AdminStatus::BadOpcode
        );
        let mut pf = Nic::new([2, 0, 0, 0, 0, 1], true);
        assert!(!pf.datapath_vf());
        assert_eq!(
            pf.execute(
                &dma,
                AdminCmd::SetDatapath { vf: true },
                &mut e,
                &mut Effects::default()
            ),
            AdminStatus::Ok
        );
        assert!(pf.datapath_vf());
        pf.reset();
        assert!(!pf.datapath_vf(), "reset returns to the synthetic path");
        let mut raw = AdminCmd::SetDatapath { vf: true }.to_bytes();
        raw[8] = 2;
        assert_eq!(AdminCmd::from_bytes(&raw), Err(AdminStatus::BadParam));
        let bad = AdminCmd::SetCoalesce {
            usecs: hw::MAX_COALESCE_USECS + 1,
            frames: 0,
        };
        assert_eq!(
            pf.execute(&dma, bad, &mut e, &mut Effects::default()),
            AdminStatus::BadParam
        );
        let good = AdminCmd::SetCoalesce {
            usecs: hw::MAX_COALESCE_USECS,
            frames: hw::MAX_COALESCE_FRAMES,
        };
        assert_eq!(
            pf.execute(&dma, good, &mut e, &mut Effects::default()),
            AdminStatus::Ok
        );
    }

    #[test]
    fn admin_entry_roundtrip() {
        let cmd = AdminCmd::SetRxMode {
            flags: 5,
            mc_filter: 0x8000_0000_0000_0001,
        };
        assert_eq!(AdminCmd::from_bytes(&cmd.to_bytes()), Ok(cmd));
        let mut raw = [0u8; AQ_ENTRY_SIZE];
        raw[0] = 0xee;
        assert_eq!(AdminCmd::from_bytes(&raw), Err(AdminStatus::BadOpcode));
    }
}

#[cfg(test)]
mod doorbell_page_tests {
    use super::*;
    use crate::dma::tests::two_region_space;
    use crate::queues::tests::{config, TX_RING};
    use hw::{db_page, qp_flags, TxDesc};

    // Past the queue pair's rings in the test space.
    const PAGE: u64 = 0x3000;
    const BUF: u64 = 0x3c00;

    fn create(qp: u16, flags: u32) -> AdminCmd {
        AdminCmd::CreateQp(config(qp, flags))
    }

    fn post(dma: &DmaSpace, idx: u64) {
        let d = TxDesc {
            addr: BUF,
            len: 60,
            flags: TxDesc::EOP,
            ..Default::default()
        };
        dma.write(TX_RING + idx * 32, &d.to_bytes()).unwrap();
    }

    /// Checks that `flagged`, a CREATE_QP with a page flag, is refused
    /// before the page is set, then sets it; returns the setting command.
    fn refused_until_the_page_is_set(nic: &mut Nic, dma: &DmaSpace, flagged: AdminCmd) -> AdminCmd {
        let (mut e, mut fx) = ([0u8; AQ_ENTRY_SIZE], Effects::default());
        assert_eq!(
            nic.execute(dma, flagged, &mut e, &mut fx),
            AdminStatus::BadParam,
            "no page yet"
        );
        let set = AdminCmd::SetDoorbellPage { addr: PAGE };
        assert_eq!(nic.execute(dma, set, &mut e, &mut fx), AdminStatus::Ok);
        set
    }

    fn tail_at(dma: &DmaSpace, qp: u16, tail: u32) {
        dma.store_u32(PAGE + db_page::tx_tail(qp) as u64, tail)
            .unwrap();
    }

    #[test]
    fn tails_in_the_page_are_polled_or_kicked() {
        let mut nic = Nic::new([2, 0, 0, 0, 0, 1], true);
        let (dma, _f) = two_region_space();
        let mut e = [0u8; AQ_ENTRY_SIZE];
        let mut fx = Effects::default();
        let bad = AdminCmd::SetDoorbellPage { addr: PAGE + 8 };
        assert_eq!(
            nic.execute(&dma, bad, &mut e, &mut fx),
            AdminStatus::BadParam
        );
        let unmapped = AdminCmd::SetDoorbellPage { addr: 0x9000 };
        assert_eq!(
            nic.execute(&dma, unmapped, &mut e, &mut fx),
            AdminStatus::BadParam
        );
        let flagged = create(1, qp_flags::TX_TAIL_IN_PAGE);
        let set = refused_until_the_page_is_set(&mut nic, &dma, flagged);
        // A tail an earlier pair left behind is not taken.
        tail_at(&dma, 1, 5);
        assert_eq!(nic.execute(&dma, flagged, &mut e, &mut fx), AdminStatus::Ok);
        assert!(!nic.poll_tx_tails(&dma, &mut fx));
        assert_eq!(
            nic.execute(&dma, set, &mut e, &mut fx),
            AdminStatus::BadState
        );

        // Polled: the tail moved in the page, no doorbell.
        post(&dma, 0);
        tail_at(&dma, 1, 1);
        assert!(nic.poll_tx_tails(&dma, &mut fx));
        assert!(!nic.poll_tx_tails(&dma, &mut fx), "nothing new");
        let s = nic.qp_stats(1).unwrap();
        assert_eq!((s.tx_packets, s.tx_tails_polled, s.tx_doorbells), (1, 1, 0));

        // Kicked: the value written is not the tail, the page's is.
        post(&dma, 1);
        tail_at(&dma, 1, 2);
        let kick = hw::QpDoorbell::TxTail.offset(1);
        assert!(nic.write_reg(&dma, kick, 77, &mut fx));
        let s = nic.qp_stats(1).unwrap();
        assert_eq!((s.tx_packets, s.tx_doorbells, s.bad_requests), (2, 1, 0));

        // A tail outside the ring is refused once, not at every look.
        tail_at(&dma, 1, 9999);
        nic.poll_tx_tails(&dma, &mut fx);
        nic.poll_tx_tails(&dma, &mut fx);
        let s = nic.qp_stats(1).unwrap();
        assert_eq!((s.tx_packets, s.bad_requests), (2, 1));

        // The admin tail in the page, marked valid, is followed too.
        const AQ: u64 = 0x2800;
        nic.write_reg(&dma, hw::regs::AQ_BASE_LO, AQ as u32, &mut fx);
        nic.write_reg(&dma, hw::regs::AQ_SIZE, 4, &mut fx);
        dma.write(AQ, &AdminCmd::QueryDevice.to_bytes()).unwrap();
        let admin_tail = PAGE + db_page::ADMIN_TAIL as u64;
        dma.store_u32(admin_tail, 1).unwrap();
        assert!(!nic.poll_tx_tails(&dma, &mut fx), "not marked valid");
        dma.store_u32(admin_tail, db_page::ADMIN_TAIL_VALID | 1)
            .unwrap();
        assert!(nic.poll_tx_tails(&dma, &mut fx));
        dma.read(AQ, &mut e).unwrap();
        assert_eq!(
            hw::aq_entry_state(&e),
            (hw::AQ_DONE, AdminStatus::Ok as u16)
        );
        assert!(!nic.poll_tx_tails(&dma, &mut fx), "nothing new");
        // One outside the queue is refused and moves nothing.
        dma.store_u32(admin_tail, db_page::ADMIN_TAIL_VALID | 9)
            .unwrap();
        assert!(!nic.poll_tx_tails(&dma, &mut fx));
        assert_eq!((nic.stats.admin_cmds, nic.stats.admin_tails_polled), (1, 1));

        // A trapped AQ_TAIL that comes after the card followed a later
        // tail from the page is a kick: its older value would send the
        // card round the ring again, through entries already done.
        dma.write(AQ + AQ_ENTRY_SIZE as u64, &AdminCmd::QueryDevice.to_bytes())
            .unwrap();
        dma.store_u32(admin_tail, db_page::ADMIN_TAIL_VALID | 2)
            .unwrap();
        assert!(nic.poll_tx_tails(&dma, &mut fx));
        assert_eq!(nic.stats.admin_cmds, 2);
        assert!(nic.write_reg(&dma, hw::regs::AQ_TAIL, 1, &mut fx));
        assert_eq!(nic.stats.admin_cmds, 2, "no command run again");

        // A reset forgets the page.
        nic.reset();
        assert!(!nic.has_doorbell_page());
        assert_eq!(
            nic.execute(&dma, flagged, &mut e, &mut fx),
            AdminStatus::BadParam
        );
    }

    /// A USO frame leaves as its datagrams, counted as such; refused
    /// (dropped, counted) while the host has USO off.
    #[test]
    fn uso_frames_leave_as_datagrams() {
        let test = crate::uso::tests::uso_frame(false, &[7; 250], 100);
        let (on, off, nic) = cut_through_a_doorbell(hw::offload::USO, test, 42);
        assert_eq!(on, [100, 100, 50]);
        assert!(off.is_empty(), "dropped while USO is off");
        let s = nic.stats;
        assert_eq!((s.uso_frames, s.uso_segments, s.tx_bad_uso), (1, 3, 1));
        let q = nic.qp_stats(0).unwrap();
        assert_eq!((q.tx_packets, q.tso_frames, q.tso_segments), (2, 1, 3));
    }

    #[test]
    fn tunnelled_tso_frames_leave_as_segments() {
        let test = crate::tunnel::tests::tunnelled(false, "vxlan", &[7; 700]);
        let hdr = usize::from(test.1.hdr_len);
        let bits = hw::offload::TSO | hw::offload::TUNNEL_TSO;
        let (on, off, nic) = cut_through_a_doorbell(bits, test, hdr);
        assert_eq!(on, [300, 300, 100]);
        assert!(off.is_empty(), "dropped while tunnel TSO is off");
        let s = nic.stats;
        assert_eq!(
            (s.tso_frames, s.tso_tunnel_frames, s.tso_segments),
            (1, 1, 3)
        );
        assert_eq!(s.tx_bad_tso, 1);
    }

    #[test]
    fn the_pf_steers_the_card_clock_and_reads_it_latched() {
        let (dma, _f) = two_region_space();
        let (mut e, mut fx) = ([0u8; AQ_ENTRY_SIZE], Effects::default());
        let clock = Arc::new(CardClock::default());
        let mut pf = Nic::new([2, 0, 0, 0, 0, 1], true);
        let mut vf = Nic::new([2, 0, 0, 0, 0, 2], false);
        pf.set_clock(Arc::clone(&clock));
        vf.set_clock(Arc::clone(&clock));
        let set = AdminCmd::PtpSetTime {
            ns: 5 << 32 | 0x1234,
        };
        assert_eq!(
            vf.execute(&dma, set, &mut e, &mut fx),
            AdminStatus::BadState
        );
        assert_eq!(pf.execute(&dma, set, &mut e, &mut fx), AdminStatus::Ok);
        let lo = pf.read_reg(hw::regs::PTP_TIME_LO).unwrap();
        assert_eq!(pf.read_reg(hw::regs::PTP_TIME_HI), Some(5), "latched");
        assert!(lo >= 0x1234);
        assert_eq!(vf.read_reg(hw::regs::PTP_TIME_LO), None, "the PF's only");
        let too_fast = AdminCmd::PtpAdjFreq {
            scaled_ppm: hw::ptp::MAX_SCALED_PPM + 1,
        };
        assert_eq!(
            pf.execute(&dma, too_fast, &mut e, &mut fx),
            AdminStatus::BadParam
        );
        let back = AdminCmd::PtpAdjTime { delta: -(4 << 32) };
        assert_eq!(pf.execute(&dma, back, &mut e, &mut fx), AdminStatus::Ok);
        pf.read_reg(hw::regs::PTP_TIME_LO);
        assert_eq!(pf.read_reg(hw::regs::PTP_TIME_HI), Some(1));
        // A function reset keeps the card's clock.
        pf.reset();
        pf.read_reg(hw::regs::PTP_TIME_LO);
        assert_eq!(pf.read_reg(hw::regs::PTP_TIME_HI), Some(1));
        let bad = AdminCmd::SetTimestamps { rx: 2 };
        assert_eq!(
            pf.execute(&dma, bad, &mut e, &mut fx),
            AdminStatus::BadParam
        );
    }

    #[test]
    fn shaped_frames_wait_on_the_ring_until_the_timer() {
        let mut nic = Nic::new([2, 0, 0, 0, 0, 1], true);
        nic.set_link(true);
        let (dma, _f) = two_region_space();
        let (mut e, mut fx) = ([0u8; AQ_ENTRY_SIZE], Effects::default());
        assert_eq!(
            nic.execute(&dma, create(0, 0), &mut e, &mut fx),
            AdminStatus::Ok
        );
        // Queue pair 0 at 8 Mbit/s (1 MB/s) with a 1500-byte burst.
        let shape = AdminCmd::SetShaper {
            node: hw::shaper::QUEUE_BASE,
            parent: hw::shaper::ROOT,
            burst: 1500,
            rate: 8_000_000,
            weight: 0,
        };
        assert_eq!(nic.execute(&dma, shape, &mut e, &mut fx), AdminStatus::Ok);
        let frame = vec![0u8; 1000];
        dma.write(BUF, &frame).unwrap();
        for idx in 0..4u64 {
            let d = TxDesc {
                addr: BUF,
                len: 1000,
                flags: TxDesc::EOP,
                ..Default::default()
            };
            dma.write(TX_RING + idx * 32, &d.to_bytes()).unwrap();
        }
        fx.send.clear();
        nic.write_reg(&dma, hw::QpDoorbell::TxTail.offset(0), 4, &mut fx);
        // 1500 bytes of tokens: two frames (the second into debt), two
        // wait.
        assert_eq!(fx.send.len(), 2);
        let due = nic.next_deadline().expect("a deadline for the held frames");
        let mut later = Effects::default();
        nic.release_shaped(&dma, due - Duration::from_millis(1), &mut later);
        assert!(later.send.is_empty(), "released early");
        // 500 bytes of debt at 1 MB/s: 0.5 ms; then one more (into debt).
        nic.release_shaped(&dma, due, &mut later);
        assert_eq!(later.send.len(), 1);
        let due = nic.next_deadline().expect("the last frame still waits");
        nic.release_shaped(&dma, due, &mut later);
        assert_eq!(later.send.len(), 2);
        assert_eq!(nic.qp_stats(0).unwrap().tx_packets, 4);
        assert!(nic
            .next_deadline()
            .is_none_or(|d| d > due + Duration::from_millis(1)));
    }

    /// Sends a segmentation request `(frame, desc)` through queue pair 0's
    /// TX doorbell twice: with TX checksums and `bits` on, then with only
    /// TX checksums. The payload sizes (past `hdr` bytes) of what left
    /// each time, and the card.
    fn cut_through_a_doorbell(
        bits: u32,
        (frame, desc): (Vec<u8>, TxDesc),
        hdr: usize,
    ) -> (Vec<usize>, Vec<usize>, Nic) {
        let mut nic = Nic::new([2, 0, 0, 0, 0, 1], true);
        nic.set_link(true);
        let (dma, _f) = two_region_space();
        let (mut e, mut fx) = ([0u8; AQ_ENTRY_SIZE], Effects::default());
        let offloads = |flags| AdminCmd::SetOffloads { flags };
        let all = hw::offload::TX_CSUM | bits;
        assert_eq!(
            nic.execute(&dma, offloads(all), &mut e, &mut fx),
            AdminStatus::Ok
        );
        assert_eq!(
            nic.execute(&dma, create(0, 0), &mut e, &mut fx),
            AdminStatus::Ok
        );
        dma.write(BUF, &frame).unwrap();
        let d = TxDesc {
            addr: BUF,
            // CAST: a test frame of a few hundred bytes.
            len: frame.len() as u32,
            flags: desc.flags | TxDesc::EOP,
            ..desc
        };
        let mut sizes = Vec::new();
        for (idx, on) in [(0u64, true), (1, false)] {
            if !on {
                let cmd = offloads(hw::offload::TX_CSUM);
                assert_eq!(nic.execute(&dma, cmd, &mut e, &mut fx), AdminStatus::Ok);
            }
            dma.write(TX_RING + idx * 32, &d.to_bytes()).unwrap();
            fx.send.clear();
            // CAST: 1 or 2.
            nic.write_reg(
                &dma,
                hw::QpDoorbell::TxTail.offset(0),
                idx as u32 + 1,
                &mut fx,
            );
            assert!(fx.send.iter().all(|o| o.train.is_none()));
            sizes.push(fx.send.iter().map(|o| o.frame.len() - hdr).collect());
        }
        let off = sizes.pop().unwrap();
        (sizes.pop().unwrap(), off, nic)
    }

    #[test]
    fn rx_tails_and_cq_words_in_the_page() {
        let mut nic = Nic::new([2, 0, 0, 0, 0, 1], true);
        let (dma, _f) = two_region_space();
        let mut e = [0u8; AQ_ENTRY_SIZE];
        let mut fx = Effects::default();
        let flagged = create(2, qp_flags::RX_CQ_IN_PAGE);
        let set = refused_until_the_page_is_set(&mut nic, &dma, flagged);
        // Words an earlier pair left behind are cleared at create.
        let rx_tail = PAGE + db_page::rx_tail(2) as u64;
        let cq_word = PAGE + db_page::cq_word(2) as u64;
        dma.store_u32(rx_tail, 7).unwrap();
        dma.store_u32(cq_word, hw::CQ_ARM | 3).unwrap();
        assert_eq!(nic.execute(&dma, flagged, &mut e, &mut fx), AdminStatus::Ok);
        assert_eq!(
            (dma.load_u32(rx_tail), dma.load_u32(cq_word)),
            (Ok(0), Ok(0))
        );
        assert_eq!(
            nic.execute(&dma, set, &mut e, &mut fx),
            AdminStatus::BadState,
            "the page is in use"
        );
        // A trapped RX tail or CQ head write is a kick: the page is read,
        // the value written (perhaps older than the page's) is not.
        dma.store_u32(rx_tail, 3).unwrap();
        assert!(nic.write_reg(&dma, hw::QpDoorbell::RxTail.offset(2), 60, &mut fx));
        dma.store_u32(cq_word, hw::CqWord::zero().with_generation(1).raw())
            .unwrap();
        assert!(nic.write_reg(&dma, hw::QpDoorbell::CqHead.offset(2), 99, &mut fx));
        let s = nic.qp_stats(2).unwrap();
        assert_eq!(
            (
                s.rx_doorbells,
                s.cq_doorbells,
                s.rx_tails_in_page,
                s.cq_words_in_page
            ),
            (1, 1, 1, 1)
        );
        assert_eq!(s.bad_requests, 0, "99 is outside the CQ, but was not taken");
    }
}
