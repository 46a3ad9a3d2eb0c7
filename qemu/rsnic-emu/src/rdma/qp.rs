// SPDX-License-Identifier: GPL-2.0

//! A queue pair: its state machine and its two halves, the requester
//! (send queue: segmenting, PSNs, retransmission on timeout, sequence NAK
//! or RNR NAK) and the responder (receive queue, WRITE and READ targets,
//! ACK/NAK generation, duplicate detection).
//!
//! The QP does not touch the network or the CQs itself: it returns
//! [`Action`]s for the engine to carry out.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::hw::rdma::{
    access, cqe_flag, qp_attr, wc_op, wc_status, wqe_flag, wqe_op, AddressVector, Cqe, QpModify,
    QpState, QpType, RqWqe, SqWqe, GSI_QKEY, SQ_WQE_LEN,
};

use super::faults::{RdmaFault, RdmaFaults};
use super::mem::{read_segments, write_segments, AccessError, MrTable, Segment, LOCAL_DMA_LKEY};
use super::queues::{RecvQueue, TakenRecv, WorkQueue};
use super::wire::{AckKind, Aeth, AtomicEth, Bth, Deth, NakCode, Opcode, Packet, Reth, PSN_MASK};
use crate::dma::HostMem;

/// Shortest retransmission timeout the engine uses, whatever the QP asks:
/// the emulated card runs under a slow VM, where a few tens of ms of delay
/// are normal.
const MIN_TIMEOUT: Duration = Duration::from_millis(50);
/// Shortest RNR wait.
const MIN_RNR_WAIT: Duration = Duration::from_millis(1);
/// Atomic responses a responder keeps to answer a retried request with
/// (the operation must not run twice); the QP's responder resources.
const ATOMIC_REPLIES: usize = 16;

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

    fn awaits_response(&self) -> bool {
        awaits_response(self.wqe.opcode)
    }
}

fn is_atomic_op(op: u8) -> bool {
    matches!(op, wqe_op::CMP_SWAP | wqe_op::FETCH_ADD)
}

/// READs and atomics complete with the responder's data, not with an
/// ACK, and count against the QP's outstanding-READ limit.
fn awaits_response(op: u8) -> bool {
    op == wqe_op::READ || is_atomic_op(op)
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
    /// Protection domain.
    pub pd: u32,
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
    /// The last atomics executed: (PSN, original value).
    atomic_replies: VecDeque<(u32, u64)>,
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
            read_gap_at: None,
            epsn: 0,
            msn: 0,
            receiving: None,
            writing: None,
            nak_sent: false,
            atomic_replies: VecDeque::new(),
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
        if m.mask & qp_attr::PATH != 0 && !(256..=4096).contains(&m.path_mtu)
            || m.mask & qp_attr::PATH != 0 && !m.path_mtu.is_power_of_two()
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
        fresh.counters = self.counters;
        *self = fresh;
    }

    /// The flags of a receive completion: its WQE came from the QP's own
    /// queue or from its SRQ.
    fn recv_flags(&self) -> u16 {
        match self.rq {
            RecvQueue::Own(_) => cqe_flag::RECV,
            RecvQueue::Shared { .. } => cqe_flag::RECV | cqe_flag::SRQ,
        }
    }

    fn is_rc(&self) -> bool {
        self.qp_type == QpType::Rc
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

    /// A send doorbell, or a chance to continue: fetches and executes
    /// posted send WQEs.
    pub fn process_sq(
        &mut self,
        mem: &dyn HostMem,
        mrs: &mut MrTable,
        now: Instant,
        out: &mut Vec<Action>,
    ) {
        if self.state == QpState::Err {
            self.flush_all(out);
            return;
        }
        if self.state != QpState::Rts || self.rnr_resend_at.is_some() {
            return;
        }
        while let Some((slot, addr)) = self.sq.peek() {
            let mut raw = [0u8; SQ_WQE_LEN];
            if mem.read(addr, &mut raw).is_err() {
                self.sq.pop();
                self.fail(false, slot, wc_op::SEND, wc_status::LOC_QP_OP_ERR, out);
                return;
            }
            let wqe = SqWqe::from_bytes(&raw);
            let reads = self.inflight.iter().filter(|f| f.awaits_response()).count();
            if self.is_rc()
                && (awaits_response(wqe.opcode) && reads >= usize::from(self.max_rd_atomic)
                    || wqe.flags & wqe_flag::FENCE != 0 && reads > 0)
            {
                return; // Continues when a READ completes.
            }
            self.sq.pop();
            if !self.execute_send(slot, wqe, mem, mrs, now, out) {
                return;
            }
        }
    }

    /// Runs one send WQE; false if the QP failed.
    fn execute_send(
        &mut self,
        slot: u16,
        wqe: SqWqe,
        mem: &dyn HostMem,
        mrs: &mut MrTable,
        now: Instant,
        out: &mut Vec<Action>,
    ) -> bool {
        let mut wqe = wqe;
        if matches!(
            wqe.opcode,
            wqe_op::READ | wqe_op::WRITE | wqe_op::WRITE_IMM | wqe_op::CMP_SWAP | wqe_op::FETCH_ADD
        ) && self.faults.take(RdmaFault::BadRkey)
        {
            wqe.rkey = !wqe.rkey;
        }
        let wc = send_wc_op(wqe.opcode);
        let signaled = wqe.flags & wqe_flag::SIGNALED != 0;
        let ok = |out: &mut Vec<Action>, qpn: u32, len: u32| {
            if signaled {
                out.push(Action::Complete {
                    recv: false,
                    cqe: Cqe {
                        wqe_index: slot,
                        qpn,
                        opcode: wc,
                        byte_len: len,
                        ..Cqe::default()
                    },
                    solicited: false,
                });
            }
        };
        // A process's QP maps no memory itself: it may only invalidate
        // its memory windows.
        let user = self.db_page != 0;
        if user && wqe.opcode == wqe_op::REG_MR {
            self.fail(false, slot, wc, wc_status::LOC_QP_OP_ERR, out);
            return false;
        }
        match wqe.opcode {
            wqe_op::BIND_MW => {
                let bound = mrs.bind(
                    self.qpn,
                    self.pd,
                    wqe.rkey,
                    &wqe.bind(),
                    wqe.remote_addr,
                    wqe.qkey,
                );
                match bound {
                    Ok(()) => ok(out, self.qpn, 0),
                    Err(_) => {
                        self.fail(false, slot, wc, wc_status::MW_BIND_ERR, out);
                        return false;
                    }
                }
            }
            wqe_op::LOCAL_INV => match mrs.invalidate(wqe.imm_or_key, self.pd, user) {
                Ok(()) => ok(out, self.qpn, 0),
                Err(_) => {
                    self.fail(false, slot, wc, wc_status::LOC_PROT_ERR, out);
                    return false;
                }
            },
            wqe_op::REG_MR => {
                let n = wqe.reg().npages as usize;
                let mut raw = vec![0u8; n.saturating_mul(8).min(1 << 20)];
                let pages =
                    (n <= (1 << 17) && mem.read(wqe.remote_addr, &mut raw).is_ok()).then(|| {
                        raw.chunks_exact(8)
                            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
                            .collect::<Vec<_>>()
                    });
                let done = pages.ok_or(AccessError::OutOfBounds).and_then(|pages| {
                    mrs.fast_register(wqe.rkey, self.pd, wqe.qkey, &wqe.reg(), pages)
                });
                match done {
                    Ok(()) => ok(out, self.qpn, 0),
                    Err(_) => {
                        self.fail(false, slot, wc, wc_status::MW_BIND_ERR, out);
                        return false;
                    }
                }
            }
            wqe_op::SEND
            | wqe_op::SEND_IMM
            | wqe_op::SEND_INV
            | wqe_op::WRITE
            | wqe_op::WRITE_IMM
            | wqe_op::READ => {
                let sges = &wqe.sge[..usize::from(wqe.num_sge).min(wqe.sge.len())];
                if usize::from(wqe.num_sge) > wqe.sge.len() {
                    self.fail(false, slot, wc, wc_status::LOC_QP_OP_ERR, out);
                    return false;
                }
                let need = if wqe.opcode == wqe_op::READ {
                    access::LOCAL_WRITE
                } else {
                    0
                };
                let mut segs = Vec::new();
                for s in sges {
                    if user && s.lkey == LOCAL_DMA_LKEY {
                        self.fail(false, slot, wc, wc_status::LOC_PROT_ERR, out);
                        return false;
                    }
                    match mrs.resolve(s.lkey, self.pd, s.addr, u64::from(s.len), need) {
                        Ok(mut v) => segs.append(&mut v),
                        Err(_) => {
                            self.fail(false, slot, wc, wc_status::LOC_PROT_ERR, out);
                            return false;
                        }
                    }
                }
                if !self.is_rc() {
                    if wqe.opcode != wqe_op::SEND && wqe.opcode != wqe_op::SEND_IMM {
                        self.fail(false, slot, wc, wc_status::LOC_QP_OP_ERR, out);
                        return false;
                    }
                    let Ok(data) = read_segments(mem, &segs) else {
                        self.fail(false, slot, wc, wc_status::LOC_PROT_ERR, out);
                        return false;
                    };
                    if data.len() > self.path_mtu.max(256) as usize {
                        self.fail(false, slot, wc, wc_status::LOC_LEN_ERR, out);
                        return false;
                    }
                    self.send_ud(&wqe, &data, out);
                    let len = data.len() as u32;
                    ok(out, self.qpn, len);
                    return true;
                }
                let (data, read_segs) = if wqe.opcode == wqe_op::READ {
                    (Vec::new(), segs)
                } else {
                    match read_segments(mem, &segs) {
                        Ok(d) => (d, Vec::new()),
                        Err(_) => {
                            self.fail(false, slot, wc, wc_status::LOC_PROT_ERR, out);
                            return false;
                        }
                    }
                };
                let len = if wqe.opcode == wqe_op::READ {
                    read_segs.iter().map(|s| s.1).sum::<u64>()
                } else {
                    data.len() as u64
                };
                let packets = (len.div_ceil(u64::from(self.path_mtu))).max(1) as u32;
                self.start_request(slot, wqe, packets, data, read_segs, now, out);
            }
            wqe_op::CMP_SWAP | wqe_op::FETCH_ADD => {
                // One SGE of at least 8 bytes takes the original value.
                let sge = wqe.sge[0];
                if !self.is_rc() || wqe.num_sge != 1 || sge.len < 8 {
                    self.fail(false, slot, wc, wc_status::LOC_QP_OP_ERR, out);
                    return false;
                }
                if user && sge.lkey == LOCAL_DMA_LKEY {
                    self.fail(false, slot, wc, wc_status::LOC_PROT_ERR, out);
                    return false;
                }
                let Ok(read_segs) =
                    mrs.resolve(sge.lkey, self.pd, sge.addr, 8, access::LOCAL_WRITE)
                else {
                    self.fail(false, slot, wc, wc_status::LOC_PROT_ERR, out);
                    return false;
                };
                self.start_request(slot, wqe, 1, Vec::new(), read_segs, now, out);
            }
            _ => {
                self.fail(false, slot, wc, wc_status::LOC_QP_OP_ERR, out);
                return false;
            }
        }
        true
    }

    /// Sends an RC request of `packets` PSNs and keeps it in flight
    /// (with the retransmission timer running) until it is answered.
    #[allow(clippy::too_many_arguments)]
    fn start_request(
        &mut self,
        slot: u16,
        wqe: SqWqe,
        packets: u32,
        data: Vec<u8>,
        read_segs: Vec<Segment>,
        now: Instant,
        out: &mut Vec<Action>,
    ) {
        let f = InFlight {
            slot,
            wqe,
            first_psn: self.next_psn,
            packets,
            data,
            read_packets: 0,
            read_segs,
        };
        self.next_psn = psn_add(self.next_psn, packets);
        self.emit(&f, 0, out);
        self.inflight.push_back(f);
        if self.deadline.is_none() {
            self.deadline = Some(now + self.timeout);
        }
    }

    fn send_ud(&mut self, wqe: &SqWqe, data: &[u8], out: &mut Vec<Action>) {
        let imm = wqe.opcode == wqe_op::SEND_IMM;
        // A Q_Key with the top bit set means "use the QP's own"
        // (`IB_QP_SET_QKEY`, which the MAD layer sends with).
        let qkey = if wqe.qkey & 0x8000_0000 != 0 {
            self.qkey
        } else {
            wqe.qkey
        };
        let pkt = Packet {
            bth: Bth {
                solicited: wqe.flags & wqe_flag::SOLICITED != 0,
                pkey: 0xffff,
                dest_qp: wqe.dest_qpn,
                psn: self.next_psn,
                ..Bth::default()
            },
            opcode: if imm {
                Opcode::UdSendOnlyImm
            } else {
                Opcode::UdSendOnly
            },
            deth: Some(Deth {
                qkey,
                src_qp: self.qpn,
            }),
            reth: None,
            aeth: None,
            imm: imm.then_some(wqe.imm_or_key),
            inv_rkey: None,
            atomic: None,
            atomic_ack: None,
            payload: data,
        };
        self.next_psn = psn_add(self.next_psn, 1);
        out.push(Action::Send {
            av: wqe.av(),
            transport: super::wire::encode(&pkt),
        });
    }

    /// Sends the packets of `f` from its `from`-th on.
    fn emit(&self, f: &InFlight, from: u32, out: &mut Vec<Action>) {
        let mtu = self.path_mtu as usize;
        let solicited = f.wqe.flags & wqe_flag::SOLICITED != 0;
        let bth = |i: u32, last: bool| Bth {
            solicited: solicited && last,
            pkey: 0xffff,
            dest_qp: self.dest_qpn,
            ack_req: last,
            psn: psn_add(f.first_psn, i),
            ..Bth::default()
        };
        if f.is_atomic() {
            let a = f.wqe.atomic();
            let (opcode, swap_add, compare) = match f.wqe.opcode {
                wqe_op::CMP_SWAP => (Opcode::RcCompareSwap, a.swap, a.compare_add),
                _ => (Opcode::RcFetchAdd, a.compare_add, 0),
            };
            let atomic = AtomicEth {
                va: f.wqe.remote_addr,
                rkey: f.wqe.rkey,
                swap_add,
                compare,
            };
            out.push(self.transmit(&Packet {
                atomic: Some(atomic),
                ..Packet::bare(bth(0, true), opcode)
            }));
            return;
        }
        if f.is_read() {
            // From the response `from` on: what came before has landed.
            let done = u64::from(from) * mtu as u64;
            let total = f.read_segs.iter().map(|s| s.1).sum::<u64>();
            let reth = Reth {
                va: f.wqe.remote_addr.wrapping_add(done),
                rkey: f.wqe.rkey,
                len: total.saturating_sub(done) as u32,
            };
            out.push(self.transmit(&Packet {
                reth: Some(reth),
                ..Packet::bare(bth(from, true), Opcode::RcReadRequest)
            }));
            return;
        }
        let reth = Reth {
            va: f.wqe.remote_addr,
            rkey: f.wqe.rkey,
            len: f.data.len() as u32,
        };
        let write = matches!(f.wqe.opcode, wqe_op::WRITE | wqe_op::WRITE_IMM);
        for i in from..f.packets {
            let first = i == 0;
            let last = i == f.packets - 1;
            let start = (i as usize * mtu).min(f.data.len());
            let end = ((i as usize + 1) * mtu).min(f.data.len());
            use Opcode::*;
            let opcode = match (f.wqe.opcode, first, last) {
                (wqe_op::SEND, true, true) => RcSendOnly,
                (wqe_op::SEND_IMM, true, true) => RcSendOnlyImm,
                (wqe_op::SEND_INV, true, true) => RcSendOnlyInv,
                (wqe_op::SEND | wqe_op::SEND_IMM | wqe_op::SEND_INV, true, false) => RcSendFirst,
                (wqe_op::SEND | wqe_op::SEND_IMM | wqe_op::SEND_INV, false, false) => RcSendMiddle,
                (wqe_op::SEND, false, true) => RcSendLast,
                (wqe_op::SEND_IMM, false, true) => RcSendLastImm,
                (wqe_op::SEND_INV, false, true) => RcSendLastInv,
                (wqe_op::WRITE_IMM, true, true) => RcWriteOnlyImm,
                (_, true, true) => RcWriteOnly,
                (_, true, false) => RcWriteFirst,
                (_, false, false) => RcWriteMiddle,
                (wqe_op::WRITE_IMM, false, true) => RcWriteLastImm,
                (_, false, true) => RcWriteLast,
            };
            let imm = matches!(
                opcode,
                RcSendOnlyImm | RcSendLastImm | RcWriteOnlyImm | RcWriteLastImm
            );
            let inv = matches!(opcode, RcSendOnlyInv | RcSendLastInv);
            let pkt = Packet {
                bth: bth(i, last),
                opcode,
                deth: None,
                reth: (write && first).then_some(reth),
                aeth: None,
                imm: imm.then_some(f.wqe.imm_or_key),
                inv_rkey: inv.then_some(f.wqe.imm_or_key),
                atomic: None,
                atomic_ack: None,
                payload: &f.data[start..end],
            };
            out.push(Action::Send {
                av: self.av,
                transport: super::wire::encode(&pkt),
            });
        }
    }

    /// Completes `f` successfully (if signaled).
    fn complete(&self, f: &InFlight, out: &mut Vec<Action>) {
        if f.wqe.flags & wqe_flag::SIGNALED == 0 {
            return;
        }
        // An atomic's segments hold its 8 bytes, a READ's its data.
        let len = if f.awaits_response() {
            f.read_segs.iter().map(|s| s.1).sum::<u64>() as u32
        } else {
            f.data.len() as u32
        };
        out.push(Action::Complete {
            recv: false,
            cqe: Cqe {
                wqe_index: f.slot,
                qpn: self.qpn,
                opcode: send_wc_op(f.wqe.opcode),
                byte_len: len,
                ..Cqe::default()
            },
            solicited: false,
        });
    }

    /// Progress was made: fresh retry budget and timer.
    fn progressed(&mut self, now: Instant) {
        self.retries_left = self.retry_cnt;
        self.rnr_left = self.rnr_retry;
        self.deadline = (!self.inflight.is_empty()).then(|| now + self.timeout);
    }

    /// Everything up to `psn` is acknowledged: SENDs and WRITEs up to it
    /// complete; a READ or an atomic completes only with its response.
    fn acknowledge(&mut self, psn: u32, now: Instant, out: &mut Vec<Action>) {
        let mut any = false;
        while let Some(f) = self.inflight.front() {
            if f.awaits_response() || psn_diff(psn, f.last_psn()) < 0 {
                break;
            }
            let f = self.inflight.pop_front().unwrap_or_else(|| unreachable!());
            self.complete(&f, out);
            any = true;
        }
        if any {
            self.progressed(now);
        }
    }

    /// Resends from the request holding `psn` (or from the oldest). A
    /// READ is asked for again from its first missing response: the data
    /// that landed stays (IBA lets a requester reissue a READ for the
    /// rest, and rxe does).
    fn resend_from(&mut self, psn: Option<u32>, out: &mut Vec<Action>) {
        let mut started = false;
        let list: Vec<InFlight> = self.inflight.iter().cloned().collect();
        for f in &list {
            let from = match psn {
                _ if started => 0,
                None => 0,
                Some(p) => {
                    let d = psn_diff(p, f.first_psn);
                    if d < 0 || d >= f.packets as i32 {
                        continue;
                    }
                    d as u32
                }
            };
            started = true;
            let from = if f.awaits_response() {
                f.read_packets
            } else {
                from
            };
            // A READ is one request packet, whatever it asks for.
            let packets = if f.awaits_response() {
                1
            } else {
                f.packets - from
            };
            self.counters.retransmits += u64::from(packets);
            self.emit(f, from, out);
        }
    }

    /// Timers: retransmission timeout, end of an RNR wait.
    pub fn tick(
        &mut self,
        mem: &dyn HostMem,
        mrs: &mut MrTable,
        now: Instant,
        out: &mut Vec<Action>,
    ) {
        if self.state == QpState::Err {
            return;
        }
        if let Some(at) = self.rnr_resend_at {
            if now >= at {
                self.rnr_resend_at = None;
                self.resend_from(None, out);
                self.deadline = Some(now + self.timeout);
                self.process_sq(mem, mrs, now, out);
            }
        }
        let Some(deadline) = self.deadline else {
            return;
        };
        if now < deadline || self.rnr_resend_at.is_some() {
            return;
        }
        let Some(head) = self.inflight.front() else {
            self.deadline = None;
            return;
        };
        self.counters.timeouts += 1;
        if self.retries_left == 0 {
            let (slot, op) = (head.slot, send_wc_op(head.wqe.opcode));
            self.inflight.pop_front();
            self.fail(false, slot, op, wc_status::RETRY_EXC_ERR, out);
            return;
        }
        self.retries_left -= 1;
        self.read_gap_at = None;
        self.resend_from(None, out);
        self.deadline = Some(now + self.timeout);
    }

    /// An ACK, NAK or READ response for this QP's requester.
    fn on_response(
        &mut self,
        pkt: &Packet<'_>,
        mem: &dyn HostMem,
        mrs: &mut MrTable,
        now: Instant,
        out: &mut Vec<Action>,
    ) {
        let psn = pkt.bth.psn;
        match pkt.opcode {
            Opcode::RcAck => {
                let Some(aeth) = pkt.aeth else { return };
                match aeth.kind {
                    AckKind::Ack(_) => self.acknowledge(psn, now, out),
                    AckKind::RnrNak(code) => {
                        self.acknowledge(psn_add(psn, PSN_MASK), now, out);
                        if self.rnr_retry != 7 {
                            if self.rnr_left == 0 {
                                if let Some(f) = self.inflight.pop_front() {
                                    let op = send_wc_op(f.wqe.opcode);
                                    self.fail(false, f.slot, op, wc_status::RNR_RETRY_EXC_ERR, out);
                                }
                                return;
                            }
                            self.rnr_left -= 1;
                        }
                        let wait = Duration::from_micros(rnr_timer_us(code)).max(MIN_RNR_WAIT);
                        self.rnr_resend_at = Some(now + wait);
                    }
                    AckKind::Nak(NakCode::PsnSequenceError) => {
                        self.acknowledge(psn_add(psn, PSN_MASK), now, out);
                        if self.retries_left == 0 {
                            if let Some(f) = self.inflight.pop_front() {
                                let op = send_wc_op(f.wqe.opcode);
                                self.fail(false, f.slot, op, wc_status::RETRY_EXC_ERR, out);
                            }
                            return;
                        }
                        self.retries_left -= 1;
                        self.resend_from(Some(psn), out);
                        self.deadline = Some(now + self.timeout);
                    }
                    AckKind::Nak(code) => {
                        self.acknowledge(psn_add(psn, PSN_MASK), now, out);
                        let status = match code {
                            NakCode::RemoteAccessError => wc_status::REM_ACCESS_ERR,
                            NakCode::RemoteOperationalError => wc_status::REM_OP_ERR,
                            _ => wc_status::REM_INV_REQ_ERR,
                        };
                        if let Some(f) = self.inflight.pop_front() {
                            let op = send_wc_op(f.wqe.opcode);
                            self.fail(false, f.slot, op, status, out);
                        }
                    }
                }
            }
            Opcode::RcReadResponseFirst
            | Opcode::RcReadResponseMiddle
            | Opcode::RcReadResponseLast
            | Opcode::RcReadResponseOnly => {
                // Requests before the READ are implicitly acknowledged.
                let Some(idx) = self.inflight.iter().position(|f| f.awaits_response()) else {
                    return;
                };
                if !self.inflight[idx].is_read() {
                    return;
                }
                let f = &self.inflight[idx];
                let expect = psn_add(f.first_psn, f.read_packets);
                if psn != expect {
                    // Ahead: responses were lost. Ask for the rest of the
                    // READ now, once per gap, instead of waiting out the
                    // timeout. Behind: a duplicate, dropped.
                    if psn_diff(psn, expect) > 0
                        && self.read_gap_at != Some(expect)
                        && self.retries_left > 0
                    {
                        self.read_gap_at = Some(expect);
                        self.retries_left -= 1;
                        self.resend_from(Some(expect), out);
                        self.deadline = Some(now + self.timeout);
                    }
                    return;
                }
                let mtu = u64::from(self.path_mtu);
                let offset = u64::from(f.read_packets) * mtu;
                let total: u64 = f.read_segs.iter().map(|s| s.1).sum();
                let last = f.read_packets + 1 == f.packets;
                let len = pkt.payload.len() as u64;
                let fits = if last {
                    offset + len == total
                } else {
                    len == mtu
                };
                if !fits {
                    let (slot, op) = (f.slot, send_wc_op(f.wqe.opcode));
                    self.inflight.remove(idx);
                    self.fail(false, slot, op, wc_status::BAD_RESP_ERR, out);
                    return;
                }
                let segs = slice_segments(&f.read_segs, offset, len);
                if write_segments(mem, &segs, pkt.payload).is_err() {
                    let (slot, op) = (f.slot, send_wc_op(f.wqe.opcode));
                    self.inflight.remove(idx);
                    self.fail(false, slot, op, wc_status::LOC_PROT_ERR, out);
                    return;
                }
                for _ in 0..idx {
                    if let Some(done) = self.inflight.pop_front() {
                        self.complete(&done, out);
                    }
                }
                self.inflight[0].read_packets += 1;
                self.read_gap_at = None;
                if last {
                    if let Some(done) = self.inflight.pop_front() {
                        self.complete(&done, out);
                    }
                }
                self.progressed(now);
                // A READ finishing may unblock the send queue.
                self.process_sq(mem, mrs, now, out);
            }
            Opcode::RcAtomicAck => {
                let (Some(idx), Some(orig)) = (
                    self.inflight.iter().position(|f| f.awaits_response()),
                    pkt.atomic_ack,
                ) else {
                    return;
                };
                let f = &self.inflight[idx];
                if !f.is_atomic() || psn != f.first_psn {
                    return; // A duplicate, or not the response awaited.
                }
                if write_segments(mem, &f.read_segs, &orig.to_le_bytes()).is_err() {
                    let (slot, op) = (f.slot, send_wc_op(f.wqe.opcode));
                    self.inflight.remove(idx);
                    self.fail(false, slot, op, wc_status::LOC_PROT_ERR, out);
                    return;
                }
                for _ in 0..=idx {
                    if let Some(done) = self.inflight.pop_front() {
                        self.complete(&done, out);
                    }
                }
                self.progressed(now);
                self.process_sq(mem, mrs, now, out);
            }
            _ => {}
        }
    }

    // ---- Responder -----------------------------------------------------

    /// A packet to the connected peer.
    fn transmit(&self, pkt: &Packet<'_>) -> Action {
        Action::Send {
            av: self.av,
            transport: super::wire::encode(pkt),
        }
    }

    /// The BTH of a response (ACK, READ response, atomic ACK) at `psn`.
    fn response_bth(&self, psn: u32) -> Bth {
        Bth {
            pkey: 0xffff,
            dest_qp: self.dest_qpn,
            psn,
            ..Bth::default()
        }
    }

    fn ack(&self, kind: AckKind, psn: u32) -> Action {
        let aeth = Aeth {
            kind,
            msn: self.msn,
        };
        self.transmit(&Packet {
            aeth: Some(aeth),
            ..Packet::bare(self.response_bth(psn), Opcode::RcAck)
        })
    }

    /// A packet addressed to this QP.
    pub fn receive(
        &mut self,
        inc: &Incoming<'_>,
        mem: &dyn HostMem,
        mrs: &mut MrTable,
        now: Instant,
        out: &mut Vec<Action>,
    ) {
        if !matches!(self.state, QpState::Rtr | QpState::Rts | QpState::Sqd) {
            self.counters.dropped += 1;
            return;
        }
        if self.is_rc() {
            let op = inc.packet.opcode;
            if matches!(
                op,
                Opcode::RcAck
                    | Opcode::RcAtomicAck
                    | Opcode::RcReadResponseFirst
                    | Opcode::RcReadResponseMiddle
                    | Opcode::RcReadResponseLast
                    | Opcode::RcReadResponseOnly
            ) {
                self.on_response(&inc.packet, mem, mrs, now, out);
            } else {
                self.on_request(&inc.packet, mem, mrs, out);
            }
        } else {
            self.receive_ud(inc, mem, mrs, out);
        }
    }

    fn receive_ud(
        &mut self,
        inc: &Incoming<'_>,
        mem: &dyn HostMem,
        mrs: &MrTable,
        out: &mut Vec<Action>,
    ) {
        let pkt = &inc.packet;
        let Some(deth) = pkt.deth else { return };
        if deth.qkey != self.qkey {
            self.counters.dropped += 1;
            return;
        }
        if self.rq.pending() == 0 {
            // UD drops what it has no buffer for.
            self.counters.dropped += 1;
            return;
        }
        let Some(TakenRecv { slot, wqe, .. }) = self.take_recv(mem, out) else {
            return;
        };
        let mut data = inc.grh.to_vec();
        data.extend_from_slice(pkt.payload);
        let mut flags = self.recv_flags() | cqe_flag::GRH;
        if inc.ipv4 {
            flags |= cqe_flag::IPV4;
        }
        let mut status = wc_status::SUCCESS;
        match scatter(&wqe, self.pd, self.db_page != 0, mrs, mem, 0, &data) {
            Ok(()) => {}
            Err(ScatterError::TooLong) => status = wc_status::LOC_LEN_ERR,
            Err(ScatterError::Access) => status = wc_status::LOC_PROT_ERR,
        }
        if pkt.imm.is_some() {
            flags |= cqe_flag::WITH_IMM;
        }
        out.push(Action::Complete {
            recv: true,
            cqe: Cqe {
                wqe_index: slot,
                flags,
                qpn: self.qpn,
                status,
                opcode: wc_op::RECV,
                byte_len: data.len() as u32,
                imm_or_key: pkt.imm.unwrap_or(0),
                src_qp: deth.src_qp,
                smac: inc.smac,
            },
            solicited: pkt.bth.solicited,
        });
    }

    fn on_request(
        &mut self,
        pkt: &Packet<'_>,
        mem: &dyn HostMem,
        mrs: &mut MrTable,
        out: &mut Vec<Action>,
    ) {
        let psn = pkt.bth.psn;
        let d = psn_diff(psn, self.epsn);
        if d < 0 {
            self.counters.duplicates += 1;
            if pkt.opcode == Opcode::RcReadRequest {
                // Lost responses: answer again with the request's PSNs.
                if let Some(reth) = pkt.reth {
                    let _ = self.read_response(psn, &reth, mem, mrs, out);
                }
            } else if matches!(pkt.opcode, Opcode::RcCompareSwap | Opcode::RcFetchAdd) {
                // A lost response: the same answer again, the operation
                // not run twice. One too old to be kept gets none.
                if let Some(&(_, orig)) = self.atomic_replies.iter().find(|r| r.0 == psn) {
                    out.push(self.atomic_ack(psn, orig));
                }
            } else {
                out.push(self.ack(AckKind::Ack(31), psn_add(self.epsn, PSN_MASK)));
            }
            return;
        }
        if d > 0 {
            if !self.nak_sent {
                self.nak_sent = true;
                self.counters.seq_naks_sent += 1;
                out.push(self.ack(AckKind::Nak(NakCode::PsnSequenceError), self.epsn));
            }
            return;
        }
        use Opcode::*;
        let op = pkt.opcode;
        let result = match op {
            RcSendFirst | RcSendMiddle | RcSendLast | RcSendLastImm | RcSendOnly
            | RcSendOnlyImm | RcSendLastInv | RcSendOnlyInv => self.recv_send(pkt, mem, mrs, out),
            RcWriteFirst | RcWriteMiddle | RcWriteLast | RcWriteLastImm | RcWriteOnly
            | RcWriteOnlyImm => self.recv_write(pkt, mem, mrs, out),
            RcReadRequest => match pkt.reth {
                Some(reth) => self.read_response(psn, &reth, mem, mrs, out),
                None => Err(NakCode::InvalidRequest),
            },
            RcCompareSwap | RcFetchAdd => match pkt.atomic {
                Some(a) => self.atomic_response(psn, op, &a, mem, mrs, out),
                None => Err(NakCode::InvalidRequest),
            },
            _ => Err(NakCode::InvalidRequest),
        };
        match result {
            Ok(Step::Done { packets }) => {
                self.nak_sent = false;
                self.epsn = psn_add(self.epsn, packets);
                if pkt.bth.ack_req && !matches!(op, RcReadRequest | RcCompareSwap | RcFetchAdd) {
                    out.push(self.ack(AckKind::Ack(31), psn));
                }
            }
            Ok(Step::Rnr) => {
                self.counters.rnr_naks_sent += 1;
                out.push(self.ack(AckKind::RnrNak(self.min_rnr_timer), psn));
            }
            Err(code) => {
                // The requester learns why; this QP fails too (a receive
                // the error hit has completed with it already), and what
                // else is posted is flushed.
                out.push(self.ack(AckKind::Nak(code), psn));
                self.state = QpState::Err;
                self.flush_all(out);
                out.push(Action::Fatal);
            }
        }
    }

    /// Takes the next receive WQE for a new SEND (or WRITE with immediate).
    /// Raises the SRQ limit event if taking it crossed the limit.
    fn take_recv(&mut self, mem: &dyn HostMem, out: &mut Vec<Action>) -> Option<TakenRecv> {
        let taken = self.rq.take(mem)?;
        if let Some(srqn) = taken.limit_reached {
            out.push(Action::SrqLimit(srqn));
        }
        Some(taken)
    }

    fn recv_send(
        &mut self,
        pkt: &Packet<'_>,
        mem: &dyn HostMem,
        mrs: &mut MrTable,
        out: &mut Vec<Action>,
    ) -> Result<Step, NakCode> {
        use Opcode::*;
        let first = matches!(
            pkt.opcode,
            RcSendFirst | RcSendOnly | RcSendOnlyImm | RcSendOnlyInv
        );
        let last = !matches!(pkt.opcode, RcSendFirst | RcSendMiddle);
        if first {
            if self.receiving.is_some() {
                return Err(NakCode::InvalidRequest);
            }
            if self.rq.pending() == 0 || self.faults.take(RdmaFault::Rnr) {
                return Ok(Step::Rnr);
            }
            self.receiving = self.take_recv(mem, out).map(|t| Receiving {
                slot: t.slot,
                wqe: t.wqe,
                offset: 0,
            });
            if self.receiving.is_none() {
                return Err(NakCode::RemoteOperationalError);
            }
        }
        if !last && pkt.payload.len() != self.path_mtu as usize {
            return Err(NakCode::InvalidRequest);
        }
        let Some(r) = self.receiving.as_mut() else {
            return Err(NakCode::InvalidRequest);
        };
        match scatter(
            &r.wqe,
            self.pd,
            self.db_page != 0,
            mrs,
            mem,
            r.offset,
            pkt.payload,
        ) {
            Ok(()) => r.offset += pkt.payload.len() as u32,
            Err(ScatterError::TooLong) => {
                let r = self.receiving.take().unwrap_or_else(|| unreachable!());
                out.push(self.recv_error(r.slot, wc_status::LOC_LEN_ERR));
                return Err(NakCode::InvalidRequest);
            }
            Err(ScatterError::Access) => {
                let r = self.receiving.take().unwrap_or_else(|| unreachable!());
                out.push(self.recv_error(r.slot, wc_status::LOC_PROT_ERR));
                return Err(NakCode::RemoteOperationalError);
            }
        }
        if last {
            let r = self.receiving.take().unwrap_or_else(|| unreachable!());
            let mut flags = self.recv_flags();
            let mut key = 0;
            if let Some(imm) = pkt.imm {
                flags |= cqe_flag::WITH_IMM;
                key = imm;
            }
            if let Some(rkey) = pkt.inv_rkey {
                if mrs.invalidate(rkey, self.pd, self.db_page != 0).is_err() {
                    out.push(self.recv_error(r.slot, wc_status::LOC_PROT_ERR));
                    return Err(NakCode::InvalidRequest);
                }
                flags |= cqe_flag::WITH_INV;
                key = rkey;
            }
            out.push(Action::Complete {
                recv: true,
                cqe: Cqe {
                    wqe_index: r.slot,
                    flags,
                    qpn: self.qpn,
                    opcode: wc_op::RECV,
                    byte_len: r.offset,
                    imm_or_key: key,
                    src_qp: self.dest_qpn,
                    ..Cqe::default()
                },
                solicited: pkt.bth.solicited,
            });
            self.msn = psn_add(self.msn, 1);
        }
        Ok(Step::Done { packets: 1 })
    }

    fn recv_error(&self, slot: u16, status: u8) -> Action {
        Action::Complete {
            recv: true,
            cqe: Cqe {
                wqe_index: slot,
                flags: self.recv_flags(),
                qpn: self.qpn,
                status,
                opcode: wc_op::RECV,
                ..Cqe::default()
            },
            solicited: false,
        }
    }

    fn recv_write(
        &mut self,
        pkt: &Packet<'_>,
        mem: &dyn HostMem,
        mrs: &mut MrTable,
        out: &mut Vec<Action>,
    ) -> Result<Step, NakCode> {
        use Opcode::*;
        let first = matches!(pkt.opcode, RcWriteFirst | RcWriteOnly | RcWriteOnlyImm);
        let last = !matches!(pkt.opcode, RcWriteFirst | RcWriteMiddle);
        let imm = matches!(pkt.opcode, RcWriteOnlyImm | RcWriteLastImm);
        // A WRITE with immediate consumes a receive: make sure there is one
        // before any byte lands, so an RNR retry finds nothing half done.
        if imm && self.rq.pending() == 0 {
            return Ok(Step::Rnr);
        }
        if first {
            let reth = pkt.reth.ok_or(NakCode::InvalidRequest)?;
            if self.access & access::REMOTE_WRITE == 0 {
                return Err(NakCode::RemoteAccessError);
            }
            let len = u64::from(reth.len);
            let segs = if len == 0 {
                Vec::new()
            } else {
                mrs.resolve_remote(
                    reth.rkey,
                    self.pd,
                    self.qpn,
                    reth.va,
                    len,
                    access::REMOTE_WRITE,
                )
                .map_err(|_| NakCode::RemoteAccessError)?
            };
            self.writing = Some(Writing {
                segs,
                offset: 0,
                len,
            });
        }
        if !last && pkt.payload.len() != self.path_mtu as usize {
            return Err(NakCode::InvalidRequest);
        }
        let w = self.writing.as_mut().ok_or(NakCode::InvalidRequest)?;
        let n = pkt.payload.len() as u64;
        if w.offset + n > w.len || (last && w.offset + n != w.len) {
            self.writing = None;
            return Err(NakCode::InvalidRequest);
        }
        let segs = slice_segments(&w.segs, w.offset, n);
        if write_segments(mem, &segs, pkt.payload).is_err() {
            self.writing = None;
            return Err(NakCode::RemoteOperationalError);
        }
        w.offset += n;
        if last {
            let total = w.len;
            self.writing = None;
            if imm {
                let r = self
                    .take_recv(mem, out)
                    .ok_or(NakCode::RemoteOperationalError)?;
                out.push(Action::Complete {
                    recv: true,
                    cqe: Cqe {
                        wqe_index: r.slot,
                        flags: self.recv_flags() | cqe_flag::WITH_IMM,
                        qpn: self.qpn,
                        opcode: wc_op::RECV_RDMA_WITH_IMM,
                        byte_len: total as u32,
                        imm_or_key: pkt.imm.unwrap_or(0),
                        src_qp: self.dest_qpn,
                        ..Cqe::default()
                    },
                    solicited: pkt.bth.solicited,
                });
            }
            self.msn = psn_add(self.msn, 1);
        }
        Ok(Step::Done { packets: 1 })
    }

    /// Answers a READ request starting at `psn`.
    fn read_response(
        &mut self,
        psn: u32,
        reth: &Reth,
        mem: &dyn HostMem,
        mrs: &MrTable,
        out: &mut Vec<Action>,
    ) -> Result<Step, NakCode> {
        if self.access & access::REMOTE_READ == 0 {
            return Err(NakCode::RemoteAccessError);
        }
        let len = u64::from(reth.len);
        let data = if len == 0 {
            Vec::new()
        } else {
            let segs = mrs
                .resolve_remote(
                    reth.rkey,
                    self.pd,
                    self.qpn,
                    reth.va,
                    len,
                    access::REMOTE_READ,
                )
                .map_err(|_| NakCode::RemoteAccessError)?;
            read_segments(mem, &segs).map_err(|_| NakCode::RemoteOperationalError)?
        };
        let mtu = self.path_mtu as usize;
        let packets = data.len().div_ceil(mtu).max(1) as u32;
        let msn = psn_add(self.msn, 1);
        for i in 0..packets {
            let first = i == 0;
            let last = i + 1 == packets;
            use Opcode::*;
            let opcode = match (first, last) {
                (true, true) => RcReadResponseOnly,
                (true, false) => RcReadResponseFirst,
                (false, true) => RcReadResponseLast,
                (false, false) => RcReadResponseMiddle,
            };
            let start = (i as usize * mtu).min(data.len());
            let end = ((i as usize + 1) * mtu).min(data.len());
            let aeth = Aeth {
                kind: AckKind::Ack(31),
                msn,
            };
            out.push(self.transmit(&Packet {
                aeth: (first || last).then_some(aeth),
                payload: &data[start..end],
                ..Packet::bare(self.response_bth(psn_add(psn, i)), opcode)
            }));
        }
        if psn == self.epsn {
            self.msn = msn;
        }
        Ok(Step::Done { packets })
    }
}

impl Qp {
    /// Runs an atomic request at `psn` and answers it. The engine
    /// handles one packet at a time, so the read-modify-write is atomic
    /// against every other access by the card (`IB_ATOMIC_HCA`); the
    /// target is 8 bytes in host order, as the CPU reads them.
    fn atomic_response(
        &mut self,
        psn: u32,
        op: Opcode,
        a: &AtomicEth,
        mem: &dyn HostMem,
        mrs: &MrTable,
        out: &mut Vec<Action>,
    ) -> Result<Step, NakCode> {
        if self.access & access::REMOTE_ATOMIC == 0 {
            return Err(NakCode::RemoteAccessError);
        }
        if !a.va.is_multiple_of(8) {
            return Err(NakCode::InvalidRequest);
        }
        let segs = mrs
            .resolve_remote(a.rkey, self.pd, self.qpn, a.va, 8, access::REMOTE_ATOMIC)
            .map_err(|_| NakCode::RemoteAccessError)?;
        let old = read_segments(mem, &segs).map_err(|_| NakCode::RemoteOperationalError)?;
        let orig = u64::from_le_bytes(
            old.as_slice()
                .try_into()
                .map_err(|_| NakCode::RemoteOperationalError)?,
        );
        let new = match op {
            Opcode::RcCompareSwap if orig == a.compare => Some(a.swap_add),
            Opcode::RcCompareSwap => None,
            _ => Some(orig.wrapping_add(a.swap_add)),
        };
        if let Some(new) = new {
            write_segments(mem, &segs, &new.to_le_bytes())
                .map_err(|_| NakCode::RemoteOperationalError)?;
        }
        self.msn = psn_add(self.msn, 1);
        if self.atomic_replies.len() == ATOMIC_REPLIES {
            self.atomic_replies.pop_front();
        }
        self.atomic_replies.push_back((psn, orig));
        out.push(self.atomic_ack(psn, orig));
        Ok(Step::Done { packets: 1 })
    }

    fn atomic_ack(&self, psn: u32, orig: u64) -> Action {
        let aeth = Aeth {
            kind: AckKind::Ack(31),
            msn: self.msn,
        };
        self.transmit(&Packet {
            aeth: Some(aeth),
            atomic_ack: Some(orig),
            ..Packet::bare(self.response_bth(psn), Opcode::RcAtomicAck)
        })
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
    let mut segs = Vec::new();
    for s in &wqe.sge[..n] {
        if user && s.lkey == LOCAL_DMA_LKEY {
            return Err(ScatterError::Access);
        }
        let mut v = mrs
            .resolve(s.lkey, pd, s.addr, u64::from(s.len), access::LOCAL_WRITE)
            .map_err(|_| ScatterError::Access)?;
        segs.append(&mut v);
    }
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
