// SPDX-License-Identifier: GPL-2.0

//! A queue pair: its state machine here, and its three parts in their
//! own files as rxe has them: the requester (`requester.rs`: the send
//! queue, segmenting, PSNs), the completer (`completer.rs`: ACKs, NAKs and
//! responses, retransmission on timeout, sequence NAK or RNR NAK) and the
//! responder (`responder.rs`: the receive queue, WRITE, READ and atomic
//! targets, ACK/NAK generation, duplicate detection).
//!
//! The QP does not touch the network or the CQs itself: it returns
//! [`Action`]s for the engine to carry out.

mod completer;
mod requester;
mod responder;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::hw::rdma::{
    access, cqe_flag, flush, qp_attr, wc_op, wc_status, wqe_flag, wqe_op, AddressVector, Cqe,
    QpModify, QpState, QpType, RqWqe, Sge, SqWqe, GSI_QKEY, SQ_WQE_LEN,
};

use super::faults::{RdmaFault, RdmaFaults};
use super::mem::{
    read_segments, read_u64s, write_segments, AccessError, Fault, MrTable, Segment, LOCAL_DMA_LKEY,
};
use super::queues::{RecvQueue, TakenRecv, WorkQueue};
use super::wire::{
    self, AckKind, Aeth, AtomicEth, Bth, Deth, Feth, NakCode, Opcode, Packet, Reth,
    ATOMIC_WRITE_LEN, PSN_MASK,
};
use crate::dma::HostMem;

/// Shortest retransmission timeout the engine uses, whatever the QP asks:
/// the emulated card runs under a slow VM, where a few tens of ms of delay
/// are normal.
const MIN_TIMEOUT: Duration = Duration::from_millis(50);
/// Shortest RNR wait.
const MIN_RNR_WAIT: Duration = Duration::from_millis(1);
/// Responses to atomics, FLUSHes and ATOMIC WRITEs a responder keeps to
/// answer a retried request with (the operation must not run twice); the
/// QP's responder resources.
const REPLIES: usize = 16;

/// Something the engine must do for a QP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Send a packet (transport bytes, from [`super::wire::encode`]) along
    /// the QP's path, or along `av` for a UD send.
    Send {
        /// Where to.
        av: AddressVector,
        /// BTH through ICRC.
        transport: Vec<u8>,
    },
    /// Write a completion to the send (`recv == false`) or receive CQ.
    Complete {
        /// Which CQ.
        recv: bool,
        /// The entry.
        cqe: Cqe,
        /// Solicited (for CQs armed for solicited events only).
        solicited: bool,
    },
    /// The QP went to the error state by itself: raise a fatal event.
    Fatal,
    /// A receive taken from this SRQ crossed its armed limit: raise the
    /// limit event.
    SrqLimit(u32),
    /// The QP, which receives from an SRQ, is in error and will take no
    /// more of its WQEs: raise the last-WQE event.
    LastWqeReached,
    /// An access found a page of an on-demand region untranslated: raise
    /// the page-fault event (once per page until it is mapped).
    PageFault(Fault),
}

/// A data packet the QP received, with what the engine knows of its
/// origin.
#[derive(Clone, Debug)]
pub struct Incoming<'a> {
    /// The decoded transport headers and payload.
    pub packet: Packet<'a>,
    /// Sender's MAC.
    pub smac: [u8; 6],
    /// The 40-byte GRH area a UD receive gets (IPv6 header, or an IPv4
    /// header in its last 20 bytes).
    pub grh: [u8; 40],
    /// IPv4 (else IPv6).
    pub ipv4: bool,
}

/// A request in flight (RC): sent, not yet acknowledged.
#[derive(Clone, Debug)]
struct InFlight {
    slot: u16,
    wqe: SqWqe,
    first_psn: u32,
    packets: u32,
    /// SEND/WRITE: the payload as gathered when posted.
    data: Vec<u8>,
    /// READ: response packets received so far.
    read_packets: u32,
    /// READ and atomics: where the data (the original value) lands.
    read_segs: Vec<Segment>,
    /// READ and atomics: a local SGE is on an on-demand region, so
    /// `read_segs` is resolved again for each response (the driver may
    /// have taken a page back since the request left).
    on_demand: bool,
}

impl InFlight {
    fn last_psn(&self) -> u32 {
        psn_add(self.first_psn, self.packets - 1)
    }

    fn is_read(&self) -> bool {
        self.wqe.opcode == wqe_op::READ
    }

    fn is_atomic(&self) -> bool {
        is_atomic_op(self.wqe.opcode)
    }

    /// A FLUSH or ATOMIC WRITE: one request packet, answered by an empty
    /// READ response.
    fn is_flush_or_atomic_write(&self) -> bool {
        matches!(self.wqe.opcode, wqe_op::FLUSH | wqe_op::ATOMIC_WRITE)
    }

    fn awaits_response(&self) -> bool {
        awaits_response(self.wqe.opcode)
    }
}

fn is_atomic_op(op: u8) -> bool {
    matches!(op, wqe_op::CMP_SWAP | wqe_op::FETCH_ADD)
}

/// READs, atomics, FLUSHes and ATOMIC WRITEs complete with the
/// responder's response, not with an ACK, and count against the QP's
/// outstanding-READ limit (they take responder resources).
fn awaits_response(op: u8) -> bool {
    matches!(op, wqe_op::READ | wqe_op::FLUSH | wqe_op::ATOMIC_WRITE) || is_atomic_op(op)
}

/// A SEND being received (RC): its receive WQE and how far it got.
#[derive(Clone, Debug)]
struct Receiving {
    slot: u16,
    wqe: RqWqe,
    offset: u32,
}

/// A WRITE being received (RC).
#[derive(Clone, Debug)]
struct Writing {
    segs: Vec<Segment>,
    offset: u64,
    len: u64,
    /// Into an on-demand region: its R_Key and the WRITE's first
    /// address, for resolving each packet's part again.
    on_demand: Option<(u32, u64)>,
}

/// What a requester waits for after a page fault of its own (an SGE of
/// a WQE it was starting, or where a response lands).
#[derive(Clone, Copy, Debug)]
struct OdpWait {
    /// The on-demand region's key.
    key: u32,
    /// A response was dropped: ask again from this PSN once mapped.
    resend: Option<u32>,
}

fn psn_add(psn: u32, n: u32) -> u32 {
    psn.wrapping_add(n) & PSN_MASK
}

/// `a - b` in PSN space, as a signed distance (-2^23..2^23).
fn psn_diff(a: u32, b: u32) -> i32 {
    let d = a.wrapping_sub(b) & PSN_MASK;
    if d & 0x80_0000 != 0 {
        d as i32 - 0x100_0000
    } else {
        d as i32
    }
}

/// The RNR NAK timer of a 5-bit code (IBA table 45), in microseconds.
fn rnr_timer_us(code: u8) -> u64 {
    const T: [u64; 32] = [
        655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920, 2560, 3840,
        5120, 7680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840,
        245_760, 327_680, 491_520,
    ];
    T[usize::from(code & 31)]
}

/// Counters of one QP.
#[derive(Clone, Copy, Debug, Default)]
pub struct QpCounters {
    /// Packets sent again (timeout, sequence NAK, RNR NAK).
    pub retransmits: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Sequence NAKs sent (responder) .
    pub seq_naks_sent: u64,
    /// RNR NAKs sent.
    pub rnr_naks_sent: u64,
    /// Duplicate requests received.
    pub duplicates: u64,
    /// Packets dropped: QP not ready to receive, wrong Q_Key, or (UD) no
    /// receive posted.
    pub dropped: u64,
}

impl QpCounters {
    /// Adds `o` to these.
    pub fn add(&mut self, o: &Self) {
        self.retransmits += o.retransmits;
        self.timeouts += o.timeouts;
        self.seq_naks_sent += o.seq_naks_sent;
        self.rnr_naks_sent += o.rnr_naks_sent;
        self.duplicates += o.duplicates;
        self.dropped += o.dropped;
    }
}

/// A queue pair.
#[derive(Debug)]
pub struct Qp {
    /// QP number.
    pub qpn: u32,
    /// Transport.
    pub qp_type: QpType,
    /// Protection domain (an XRC target's: that of the XRC SRQ the
    /// request it is receiving names).
    pub pd: u32,
    /// An XRC target's XRC domain (0 for other QPs).
    pub xrcd: u32,
    /// State.
    pub state: QpState,
    /// Send queue.
    pub sq: WorkQueue,
    /// Receive queue: its own or a shared one.
    pub rq: RecvQueue,
    /// CQ of send completions.
    pub send_cq: u32,
    /// CQ of receive completions.
    pub recv_cq: u32,
    /// The user doorbell page that rings it (0: the kernel's doorbells).
    /// A user QP may not use the local DMA key nor map or invalidate
    /// memory regions.
    pub db_page: u32,
    path_mtu: u32,
    qkey: u32,
    access: u32,
    dest_qpn: u32,
    av: AddressVector,
    timeout: Duration,
    retry_cnt: u8,
    rnr_retry: u8,
    min_rnr_timer: u8,
    max_rd_atomic: u8,
    // Requester.
    next_psn: u32,
    inflight: VecDeque<InFlight>,
    retries_left: u8,
    rnr_left: u8,
    deadline: Option<Instant>,
    rnr_resend_at: Option<Instant>,
    /// Held for a page of an on-demand region: the send queue and the
    /// retransmission timer wait until the driver maps a page of it.
    odp_wait: Option<OdpWait>,
    /// A gap in READ responses was seen at this PSN and the READ asked
    /// for again from it: later responses of the same burst are not gaps
    /// of their own.
    read_gap_at: Option<u32>,
    // Responder.
    epsn: u32,
    msn: u32,
    receiving: Option<Receiving>,
    writing: Option<Writing>,
    nak_sent: bool,
    /// UC: a packet of the current message was lost or refused; the rest
    /// of it is dropped until a packet starts a new one.
    uc_dropping: bool,
    /// The last atomics, FLUSHes and ATOMIC WRITEs executed: their PSN
    /// and the atomic's original value (`None`: an empty READ response).
    replies: VecDeque<(u32, Option<u64>)>,
    /// Counters.
    pub counters: QpCounters,
    /// The engine's fault injection.
    faults: Arc<RdmaFaults>,
}

impl Qp {
    /// A QP in the reset state.
    pub fn new(
        qpn: u32,
        qp_type: QpType,
        pd: u32,
        sq: WorkQueue,
        rq: RecvQueue,
        send_cq: u32,
        recv_cq: u32,
    ) -> Self {
        Self {
            qpn,
            qp_type,
            pd,
            xrcd: 0,
            state: QpState::Reset,
            sq,
            rq,
            send_cq,
            recv_cq,
            db_page: 0,
            path_mtu: 1024,
            qkey: if qp_type == QpType::Gsi { GSI_QKEY } else { 0 },
            access: 0,
            dest_qpn: 0,
            av: AddressVector::default(),
            timeout: MIN_TIMEOUT,
            retry_cnt: 7,
            rnr_retry: 7,
            min_rnr_timer: 1,
            max_rd_atomic: 1,
            next_psn: 0,
            inflight: VecDeque::new(),
            retries_left: 7,
            rnr_left: 7,
            deadline: None,
            rnr_resend_at: None,
            odp_wait: None,
            read_gap_at: None,
            epsn: 0,
            msn: 0,
            receiving: None,
            writing: None,
            nak_sent: false,
            uc_dropping: false,
            replies: VecDeque::new(),
            counters: QpCounters::default(),
            faults: Arc::default(),
        }
    }

    /// The QP with the engine's fault injection.
    pub fn with_faults(self, faults: Arc<RdmaFaults>) -> Self {
        Self { faults, ..self }
    }

    /// Whether the state machine allows `from` -> `to` (the verbs' table;
    /// which attributes each needs is the driver's to check).
    fn transition_ok(from: QpState, to: QpState) -> bool {
        use QpState::*;
        matches!(
            (from, to),
            (_, Reset)
                | (_, Err)
                | (Reset, Init)
                | (Init, Init)
                | (Init, Rtr)
                | (Rtr, Rts)
                | (Rts, Rts)
                | (Rts, Sqd)
                | (Sqd, Rts)
                | (Sqd, Sqd)
                | (Sqe, Rts)
        )
    }

    /// Applies a modify; [`BadModify`] if the transition or a value is
    /// impossible (nothing changes then). Returns the actions of entering
    /// the error state (flushes).
    pub fn modify(&mut self, m: &QpModify, now: Instant) -> Result<Vec<Action>, BadModify> {
        let to = if m.mask & qp_attr::STATE != 0 {
            QpState::from_raw(m.state).ok_or(BadModify)?
        } else {
            self.state
        };
        if m.mask & qp_attr::STATE != 0 && !Self::transition_ok(self.state, to) {
            return Err(BadModify);
        }
        let bad_mtu = !(256..=4096).contains(&m.path_mtu) || !m.path_mtu.is_power_of_two();
        if m.mask & qp_attr::PATH != 0 && bad_mtu
            || m.mask & qp_attr::ACCESS != 0 && m.access & !access::ALL != 0
            || m.mask & qp_attr::RETRY != 0 && (m.retry_cnt > 7 || m.rnr_retry > 7)
        {
            return Err(BadModify);
        }
        if m.mask & qp_attr::QKEY != 0 {
            self.qkey = m.qkey;
        }
        if m.mask & qp_attr::ACCESS != 0 {
            self.access = m.access;
        }
        if m.mask & qp_attr::PATH != 0 {
            self.av = m.av;
            self.path_mtu = m.path_mtu;
        }
        if m.mask & qp_attr::DEST_QPN != 0 {
            self.dest_qpn = m.dest_qpn & 0xff_ffff;
        }
        if m.mask & qp_attr::RQ_PSN != 0 {
            self.epsn = m.rq_psn & PSN_MASK;
        }
        if m.mask & qp_attr::SQ_PSN != 0 {
            self.next_psn = m.sq_psn & PSN_MASK;
        }
        if m.mask & qp_attr::RETRY != 0 {
            // 4.096 µs * 2^timeout; 0 means "wait forever", which an
            // emulator turns into a long but finite wait.
            let us = if m.timeout == 0 {
                10_000_000
            } else {
                4u64 << m.timeout.min(31)
            };
            self.timeout = Duration::from_micros(us).max(MIN_TIMEOUT);
            self.retry_cnt = m.retry_cnt;
            self.rnr_retry = m.rnr_retry;
            self.retries_left = m.retry_cnt;
            self.rnr_left = m.rnr_retry;
        }
        if m.mask & qp_attr::MIN_RNR_TIMER != 0 {
            self.min_rnr_timer = m.min_rnr_timer & 31;
        }
        if m.mask & qp_attr::MAX_RD_ATOMIC != 0 {
            self.max_rd_atomic = m.max_rd_atomic.max(1);
        }
        let mut actions = Vec::new();
        if m.mask & qp_attr::STATE != 0 {
            match to {
                QpState::Reset => self.reset(),
                QpState::Err if self.state != QpState::Err => {
                    self.state = QpState::Err;
                    self.flush_all(&mut actions);
                }
                _ => self.state = to,
            }
        }
        let _ = now;
        Ok(actions)
    }

    /// Back to RESET: the queues start again from slot 0 and the
    /// connection is forgotten; what the QP is (its queues, CQs, owner's
    /// doorbell page, counters, injected faults) stays.
    fn reset(&mut self) {
        let mut fresh = Self::new(
            self.qpn,
            self.qp_type,
            self.pd,
            WorkQueue::new(self.sq.base, self.sq.entries, SQ_WQE_LEN),
            self.rq.reset(),
            self.send_cq,
            self.recv_cq,
        )
        .with_faults(Arc::clone(&self.faults));
        fresh.db_page = self.db_page;
        fresh.xrcd = self.xrcd;
        fresh.counters = self.counters;
        *self = fresh;
    }

    /// The flags of a receive completion: its WQE came from the QP's own
    /// queue or from its SRQ.
    fn recv_flags(&self) -> u16 {
        match self.rq {
            RecvQueue::Own(_) | RecvQueue::None => cqe_flag::RECV,
            RecvQueue::Shared { .. } => cqe_flag::RECV | cqe_flag::SRQ,
        }
    }

    /// Reliable connected: RC, and XRC's two halves.
    fn is_rc(&self) -> bool {
        matches!(self.qp_type, QpType::Rc | QpType::XrcIni | QpType::XrcTgt)
    }

    /// An XRC target: requests are received into the XRC SRQ each names
    /// ([`Qp::bind_xrc_srq`]).
    pub fn is_xrc_target(&self) -> bool {
        self.qp_type == QpType::XrcTgt
    }

    /// An XRC target takes the next request into `srq` (`srqn`, an XRC
    /// SRQ of its domain): its receives, rights (the SRQ's protection
    /// domain) and receive completions (the SRQ's CQ) are that SRQ's.
    /// `None`: the request named no SRQ of its domain, and is refused.
    pub fn bind_xrc_srq(&mut self, srq: Option<(u32, super::queues::SrqRef)>) {
        match srq {
            Some((srqn, srq)) => {
                let s = super::queues::lock_srq(&srq);
                (self.pd, self.recv_cq, self.db_page) = (s.pd, s.cq, s.db_page);
                drop(s);
                self.rq = RecvQueue::Shared { srqn, srq };
            }
            None => {
                // No memory region is of this protection domain, and as
                // a process's QP it may not use the local DMA key.
                (self.pd, self.recv_cq, self.db_page) = (u32::MAX, 0, u32::MAX);
                self.rq = RecvQueue::None;
            }
        }
    }

    /// UD and QP1: each SEND one datagram to the address it names.
    fn is_datagram(&self) -> bool {
        matches!(self.qp_type, QpType::Ud | QpType::Gsi)
    }

    /// The transport service of the packets this QP takes.
    fn service(&self) -> wire::Service {
        match self.qp_type {
            QpType::Rc => wire::Service::Rc,
            QpType::Uc => wire::Service::Uc,
            QpType::Ud | QpType::Gsi => wire::Service::Ud,
            QpType::XrcIni | QpType::XrcTgt => wire::Service::Xrc,
        }
    }

    /// The memory the local SGEs `sges` name, for the `need` rights
    /// ([`local_segments`] for this QP).
    fn local_segments(
        &self,
        sges: &[Sge],
        need: u32,
        mrs: &MrTable,
    ) -> Result<Vec<Segment>, AccessError> {
        local_segments(sges, self.pd, self.db_page != 0, need, mrs)
    }

    /// The requester stops for the untranslated page `fault` (and asks
    /// again from PSN `resend` once it is mapped, if a response was
    /// dropped); the engine raises the page-fault event.
    fn hold_for(&mut self, fault: Fault, resend: Option<u32>, out: &mut Vec<Action>) {
        self.odp_wait = Some(OdpWait {
            key: fault.key,
            resend,
        });
        out.push(Action::PageFault(fault));
    }

    /// The driver mapped pages of the on-demand region `key`: a requester
    /// held for it goes on (asks again for what it dropped, restarts the
    /// WQE it held). Pages of other regions, or none it waits for: no
    /// change (a WQE that faults again is held again).
    pub fn odp_mapped(
        &mut self,
        key: u32,
        mem: &dyn HostMem,
        mrs: &mut MrTable,
        now: Instant,
        out: &mut Vec<Action>,
    ) {
        let Some(wait) = self.odp_wait.filter(|w| w.key == key) else {
            return;
        };
        self.odp_wait = None;
        if let Some(psn) = wait.resend {
            self.resend_from(Some(psn), out);
        }
        if !self.inflight.is_empty() {
            self.deadline = Some(now + self.timeout);
        }
        self.process_sq(mem, mrs, now, out);
    }

    /// When [`Qp::tick`] has work.
    pub fn deadline(&self) -> Option<Instant> {
        match (self.deadline, self.rnr_resend_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    // ---- Errors and flushing -------------------------------------------

    fn flush_cqe(&self, recv: bool, slot: u16, opcode: u8) -> Action {
        Action::Complete {
            recv,
            cqe: Cqe {
                wqe_index: slot,
                flags: if recv { self.recv_flags() } else { 0 },
                qpn: self.qpn,
                status: wc_status::WR_FLUSH_ERR,
                opcode,
                ..Cqe::default()
            },
            solicited: false,
        }
    }

    /// Completes every outstanding and posted WQE as flushed.
    fn flush_all(&mut self, out: &mut Vec<Action>) {
        for f in std::mem::take(&mut self.inflight) {
            out.push(self.flush_cqe(false, f.slot, send_wc_op(f.wqe.opcode)));
        }
        while let Some((slot, _)) = self.sq.peek() {
            self.sq.pop();
            out.push(self.flush_cqe(false, slot, wc_op::SEND));
        }
        if let Some(r) = self.receiving.take() {
            out.push(self.flush_cqe(true, r.slot, wc_op::RECV));
        }
        // An SRQ's WQEs are not this QP's: they stay for the others.
        let mut flushed = Vec::new();
        if let Some(rq) = self.rq.own_mut() {
            while let Some((slot, _)) = rq.peek() {
                rq.pop();
                flushed.push(slot);
            }
        }
        for slot in flushed {
            out.push(self.flush_cqe(true, slot, wc_op::RECV));
        }
        if self.rq.srqn().is_some() {
            out.push(Action::LastWqeReached);
        }
        self.writing = None;
        self.deadline = None;
        self.rnr_resend_at = None;
        self.odp_wait = None;
        self.read_gap_at = None;
    }

    /// An error the QP cannot continue after: the WQE at `slot` completes
    /// with `status`, then everything else is flushed.
    fn fail(&mut self, recv: bool, slot: u16, opcode: u8, status: u8, out: &mut Vec<Action>) {
        out.push(Action::Complete {
            recv,
            cqe: Cqe {
                wqe_index: slot,
                flags: if recv { self.recv_flags() } else { 0 },
                qpn: self.qpn,
                status,
                opcode,
                ..Cqe::default()
            },
            solicited: false,
        });
        self.state = QpState::Err;
        self.flush_all(out);
        out.push(Action::Fatal);
    }

    // ---- Requester -----------------------------------------------------

    // ---- Responder -----------------------------------------------------

    /// A packet to the connected peer.
    /// Sends `pkt` along the QP's path, with its RC opcode turned into
    /// the QP's service's (UC, XRC).
    fn transmit(&self, pkt: &Packet<'_>) -> Action {
        let opcode = match self.service() {
            wire::Service::Uc => pkt.opcode.to_uc(),
            wire::Service::Xrc => pkt.opcode.to_xrc(),
            _ => None,
        }
        .unwrap_or(pkt.opcode);
        Action::Send {
            av: self.av,
            transport: wire::encode(&Packet {
                opcode,
                ..pkt.clone()
            }),
        }
    }
}

/// A modify the state machine or the attribute ranges do not allow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadModify;

/// How far a request got.
enum Step {
    /// Processed; it used `packets` PSNs.
    Done { packets: u32 },
    /// No receive buffer: RNR NAK, the requester retries.
    Rnr,
}

enum ScatterError {
    TooLong,
    Access,
    /// A buffer's page is not translated (or not writable) yet.
    PageFault(AccessError),
}

/// The memory the local SGEs `sges` of protection domain `pd` name, for
/// the `need` rights; a `user` QP's may not use the local DMA key.
fn local_segments(
    sges: &[Sge],
    pd: u32,
    user: bool,
    need: u32,
    mrs: &MrTable,
) -> Result<Vec<Segment>, AccessError> {
    let mut segs = Vec::new();
    for s in sges {
        if user && s.lkey == LOCAL_DMA_LKEY {
            return Err(AccessError::BadKey);
        }
        segs.append(&mut mrs.resolve(s.lkey, pd, s.addr, u64::from(s.len), need)?);
    }
    Ok(segs)
}

/// Writes `data` into the receive WQE's buffers from byte `offset`; a
/// `user` QP's buffers may not use the local DMA key.
fn scatter(
    wqe: &RqWqe,
    pd: u32,
    user: bool,
    mrs: &MrTable,
    mem: &dyn HostMem,
    offset: u32,
    data: &[u8],
) -> Result<(), ScatterError> {
    let n = usize::from(wqe.num_sge).min(wqe.sge.len());
    let segs =
        local_segments(&wqe.sge[..n], pd, user, access::LOCAL_WRITE, mrs).map_err(|e| match e {
            AccessError::PageFault { .. } => ScatterError::PageFault(e),
            _ => ScatterError::Access,
        })?;
    let room: u64 = segs.iter().map(|s| s.1).sum();
    if u64::from(offset) + data.len() as u64 > room {
        return Err(ScatterError::TooLong);
    }
    let part = slice_segments(&segs, u64::from(offset), data.len() as u64);
    write_segments(mem, &part, data).map_err(|_| ScatterError::Access)
}

/// The part `[offset, offset + len)` of the memory `segs` describe.
fn slice_segments(segs: &[Segment], offset: u64, len: u64) -> Vec<Segment> {
    let mut out = Vec::new();
    let mut skip = offset;
    let mut want = len;
    for &(addr, l) in segs {
        if want == 0 {
            break;
        }
        if skip >= l {
            skip -= l;
            continue;
        }
        let n = (l - skip).min(want);
        out.push((addr + skip, n));
        want -= n;
        skip = 0;
    }
    out
}

/// The completion opcode of a send WQE opcode.
fn send_wc_op(op: u8) -> u8 {
    match op {
        wqe_op::WRITE | wqe_op::WRITE_IMM => wc_op::RDMA_WRITE,
        wqe_op::READ => wc_op::RDMA_READ,
        wqe_op::CMP_SWAP => wc_op::COMP_SWAP,
        wqe_op::FETCH_ADD => wc_op::FETCH_ADD,
        wqe_op::LOCAL_INV => wc_op::LOCAL_INV,
        wqe_op::REG_MR => wc_op::REG_MR,
        wqe_op::BIND_MW => wc_op::BIND_MW,
        wqe_op::FLUSH => wc_op::FLUSH,
        wqe_op::ATOMIC_WRITE => wc_op::ATOMIC_WRITE,
        _ => wc_op::SEND,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psn_arithmetic_wraps_at_24_bits() {
        assert_eq!(psn_add(PSN_MASK, 1), 0);
        assert_eq!(psn_diff(0, PSN_MASK), 1);
        assert_eq!(psn_diff(PSN_MASK, 0), -1);
        assert_eq!(psn_diff(5, 3), 2);
    }

    #[test]
    fn segments_slice() {
        let segs = [(0x1000, 0x100), (0x5000, 0x100)];
        assert_eq!(
            slice_segments(&segs, 0xf0, 0x20),
            vec![(0x10f0, 0x10), (0x5000, 0x10)]
        );
        assert_eq!(slice_segments(&segs, 0x100, 0x100), vec![(0x5000, 0x100)]);
    }

    #[test]
    fn state_machine() {
        use QpState::*;
        assert!(Qp::transition_ok(Reset, Init));
        assert!(Qp::transition_ok(Rts, Err));
        assert!(!Qp::transition_ok(Reset, Rts));
        assert!(!Qp::transition_ok(Init, Rts));
        assert!(!Qp::transition_ok(Err, Rts));
    }
}
