// SPDX-License-Identifier: GPL-2.0

//! Queue pairs: their rings in host memory, posting work requests into
//! them (one doorbell per `post_send` call, however many requests it
//! carries), and the state machine as the verbs define it.

use kernel::{prelude::*, sync::Mutex};

use super::device::RdmaDev;
use super::mr::RdmaMr;
use super::ring::RingMem;
use crate::hw::rdma::{
    access, db, qp_attr, wqe_flag, wqe_op, AddressVector, AtomicParams, Gid, QpModify, QpState,
    RegMrParams, RqWqe, Sge, SqWqe, MAX_SGE, RQ_WQE_LEN, SQ_WQE_LEN,
};
use crate::linux::{
    rdma::verbs::{
        modify_is_ok, Access, AddressPath, QpAttrs, QpCaps, QpKind, QpRetry, QpStateKind, RecvWr,
        RecvWrs, SendOp, SendWr, SendWrs,
    },
    sync::lock_irqsave,
};

/// A queue pair's driver state.
#[pin_data]
pub(crate) struct RdmaQp {
    /// QP number.
    pub(crate) qpn: u32,
    /// Transport.
    pub(crate) kind: QpKind,
    /// Every send request completes.
    pub(crate) signal_all: bool,
    /// Send queue ring; none for an XRC target.
    pub(crate) sq: Option<RingMem>,
    /// Receive queue ring; none with an SRQ.
    pub(crate) rq: Option<RingMem>,
    /// Queue sizes granted.
    pub(crate) caps: QpCaps,
    /// What the driver last set.
    #[pin]
    pub(crate) settings: Mutex<QpSettings>,
}

/// A QP's attributes as last set (what `query_qp` reports besides the
/// card's state).
#[derive(Clone, Copy, Debug)]
pub(crate) struct QpSettings {
    /// State.
    pub(crate) state: QpStateKind,
    /// Path MTU in bytes.
    pub(crate) path_mtu: u32,
    /// Remote QP.
    pub(crate) dest_qpn: u32,
    /// Receive PSN.
    pub(crate) rq_psn: u32,
    /// Send PSN.
    pub(crate) sq_psn: u32,
    /// Q_Key (UD).
    pub(crate) qkey: u32,
    /// Responder access (RC).
    pub(crate) access: Access,
    /// RDMA READs outstanding as requester.
    pub(crate) max_rd_atomic: u8,
    /// RDMA READs outstanding as responder.
    pub(crate) max_dest_rd_atomic: u8,
    /// Timeout and retries.
    pub(crate) retry: QpRetry,
    /// Where an RC QP's packets go (set on the way to RTR).
    pub(crate) path: Option<AddressPath>,
}

impl RdmaQp {
    /// A QP in the reset state.
    pub(crate) fn new(
        qpn: u32,
        kind: QpKind,
        signal_all: bool,
        sq: Option<RingMem>,
        rq: Option<RingMem>,
        caps: QpCaps,
    ) -> impl PinInit<Self, Error> {
        let settings = QpSettings {
            state: QpStateKind::Reset,
            path_mtu: 1024,
            dest_qpn: 0,
            rq_psn: 0,
            sq_psn: 0,
            qkey: 0,
            access: Access::default(),
            max_rd_atomic: 0,
            max_dest_rd_atomic: 0,
            retry: QpRetry::default(),
            path: None,
        };
        try_pin_init!(Self {
            qpn,
            kind,
            signal_all,
            sq,
            rq,
            caps,
            settings <- kernel::new_mutex!(settings),
        }? Error)
    }
}

/// The card's access bits of the verbs' rights.
pub(crate) fn access_bits(a: Access) -> u32 {
    let mut bits = 0;
    if a.local_write {
        bits |= access::LOCAL_WRITE;
    }
    if a.remote_write {
        bits |= access::REMOTE_WRITE;
    }
    if a.remote_read {
        bits |= access::REMOTE_READ;
    }
    if a.remote_atomic {
        bits |= access::REMOTE_ATOMIC;
    }
    if a.mw_bind {
        bits |= access::MW_BIND;
    }
    // Persistence has no bit: the card offers none, so a QP that grants
    // it grants nothing the card would act on.
    if a.flush_global {
        bits |= access::FLUSH_GLOBAL;
    }
    bits
}

/// The card's address vector of a path.
pub(crate) fn address_vector(p: &AddressPath) -> AddressVector {
    AddressVector {
        dmac: p.dmac,
        sgid_index: p.sgid_index,
        hop_limit: p.hop_limit,
        traffic_class: p.traffic_class,
        flow_label: p.flow_label & 0xf_ffff,
        dgid: Gid(p.dgid),
    }
}

fn card_state(s: QpStateKind) -> QpState {
    match s {
        QpStateKind::Reset => QpState::Reset,
        QpStateKind::Init => QpState::Init,
        QpStateKind::Rtr => QpState::Rtr,
        QpStateKind::Rts => QpState::Rts,
        QpStateKind::Sqd => QpState::Sqd,
        QpStateKind::Sqe => QpState::Sqe,
        QpStateKind::Err => QpState::Err,
    }
}

/// The verbs state of a state byte the card reported; one it should not
/// have reported counts as an error.
pub(crate) fn verbs_state(card: u8) -> QpStateKind {
    match QpState::from_raw(card) {
        Some(QpState::Reset) => QpStateKind::Reset,
        Some(QpState::Init) => QpStateKind::Init,
        Some(QpState::Rtr) => QpStateKind::Rtr,
        Some(QpState::Rts) => QpStateKind::Rts,
        Some(QpState::Sqd) => QpStateKind::Sqd,
        Some(QpState::Sqe) => QpStateKind::Sqe,
        Some(QpState::Err) | None => QpStateKind::Err,
    }
}

/// `modify_qp`: checks the transition against the verbs' table, then
/// has the card apply it.
pub(crate) fn modify(dev: &RdmaDev, qp: &RdmaQp, a: &QpAttrs) -> Result {
    let mut settings = qp.settings.lock();
    let cur = a.cur_state.unwrap_or(settings.state);
    let next = a.state.unwrap_or(cur);
    if !modify_is_ok(cur, next, qp.kind, a.mask) {
        return Err(EINVAL);
    }
    let mut m = QpModify::default();
    if let Some(s) = a.state {
        m.mask |= qp_attr::STATE;
        m.state = card_state(s) as u8;
    }
    if let Some(q) = a.qkey {
        m.mask |= qp_attr::QKEY;
        m.qkey = q;
    }
    if let Some(acc) = a.access {
        m.mask |= qp_attr::ACCESS;
        m.access = access_bits(acc);
    }
    if let Some(p) = a.path {
        if u32::from(p.sgid_index) >= dev.gid_table_len() {
            return Err(EINVAL);
        }
        m.mask |= qp_attr::PATH;
        m.av = address_vector(&p);
        m.path_mtu = a.path_mtu.unwrap_or(1024);
    } else if let Some(mtu) = a.path_mtu {
        // The card takes the MTU with the path; keep the path it has.
        let _ = mtu;
    }
    if let Some(d) = a.dest_qpn {
        m.mask |= qp_attr::DEST_QPN;
        m.dest_qpn = d;
    }
    if let Some(p) = a.rq_psn {
        m.mask |= qp_attr::RQ_PSN;
        m.rq_psn = p;
    }
    if let Some(p) = a.sq_psn {
        m.mask |= qp_attr::SQ_PSN;
        m.sq_psn = p;
    }
    if a.timeout.is_some() || a.retry_cnt.is_some() || a.rnr_retry.is_some() {
        m.mask |= qp_attr::RETRY;
        m.timeout = a.timeout.unwrap_or(14);
        m.retry_cnt = a.retry_cnt.unwrap_or(7).min(7);
        m.rnr_retry = a.rnr_retry.unwrap_or(7).min(7);
    }
    if let Some(t) = a.min_rnr_timer {
        m.mask |= qp_attr::MIN_RNR_TIMER;
        m.min_rnr_timer = t;
    }
    // More outstanding than the device reports is EINVAL, as rxe answers.
    let rd_atom = dev.max_qp_rd_atom();
    if [a.max_rd_atomic, a.max_dest_rd_atomic]
        .iter()
        .flatten()
        .any(|&n| u32::from(n) > rd_atom)
    {
        return Err(EINVAL);
    }
    if let Some(n) = a.max_rd_atomic {
        m.mask |= qp_attr::MAX_RD_ATOMIC;
        m.max_rd_atomic = n;
    }
    if let Some(n) = a.max_dest_rd_atomic {
        m.mask |= qp_attr::MAX_DEST_RD_ATOMIC;
        m.max_dest_rd_atomic = n;
    }
    dev.modify_qp_on_card(qp.qpn, &m)?;
    settings.state = next;
    if m.mask & qp_attr::PATH != 0 {
        settings.path_mtu = m.path_mtu;
        settings.path = a.path;
    }
    if let Some(d) = a.dest_qpn {
        settings.dest_qpn = d;
    }
    if let Some(p) = a.rq_psn {
        settings.rq_psn = p;
    }
    if let Some(p) = a.sq_psn {
        settings.sq_psn = p;
    }
    if let Some(q) = a.qkey {
        settings.qkey = q;
    }
    if let Some(acc) = a.access {
        settings.access = acc;
    }
    if let Some(n) = a.max_rd_atomic {
        settings.max_rd_atomic = n;
    }
    if let Some(n) = a.max_dest_rd_atomic {
        settings.max_dest_rd_atomic = n;
    }
    if m.mask & qp_attr::RETRY != 0 {
        settings.retry.timeout = m.timeout;
        settings.retry.retry_cnt = m.retry_cnt;
        settings.retry.rnr_retry = m.rnr_retry;
    }
    if let Some(t) = a.min_rnr_timer {
        settings.retry.min_rnr_timer = t;
    }
    if next == QpStateKind::Reset {
        // The card forgot the queues' contents; so do we.
        let mut tables = lock_irqsave(dev.tables());
        if let Some(e) = tables.qp(qp.qpn) {
            e.sq.head = 0;
            e.sq.tail = 0;
            e.rq.head = 0;
            e.rq.tail = 0;
        }
    }
    Ok(())
}

fn sges(wr: &SendWr<'_, RdmaDev>) -> Result<([Sge; MAX_SGE], u8)> {
    if wr.sges.len() > MAX_SGE {
        return Err(EINVAL);
    }
    let mut out = [Sge::default(); MAX_SGE];
    for (i, o) in out.iter_mut().enumerate().take(wr.sges.len()) {
        let s = wr.sge(i).ok_or(EINVAL)?;
        *o = Sge {
            addr: s.addr,
            len: s.len,
            lkey: s.lkey,
        };
    }
    Ok((out, wr.sges.len() as u8))
}

/// The send queue entry of a work request.
fn send_wqe(qp: &RdmaQp, wr: &SendWr<'_, RdmaDev>) -> Result<SqWqe> {
    if wr.inline {
        return Err(EINVAL);
    }
    let (sge, num_sge) = sges(wr)?;
    let mut flags = 0;
    if wr.signaled || qp.signal_all {
        flags |= wqe_flag::SIGNALED;
    }
    if wr.solicited {
        flags |= wqe_flag::SOLICITED;
    }
    if wr.fence {
        flags |= wqe_flag::FENCE;
    }
    let mut w = SqWqe {
        flags,
        num_sge,
        sge,
        ..SqWqe::default()
    };
    match &wr.op {
        SendOp::Send => w.opcode = wqe_op::SEND,
        SendOp::SendImm(imm) => (w.opcode, w.imm_or_key) = (wqe_op::SEND_IMM, *imm),
        SendOp::SendInv(key) => (w.opcode, w.imm_or_key) = (wqe_op::SEND_INV, *key),
        SendOp::Write { remote_addr, rkey } => {
            (w.opcode, w.remote_addr, w.rkey) = (wqe_op::WRITE, *remote_addr, *rkey)
        }
        SendOp::WriteImm {
            remote_addr,
            rkey,
            imm,
        } => {
            (w.opcode, w.remote_addr, w.rkey) = (wqe_op::WRITE_IMM, *remote_addr, *rkey);
            w.imm_or_key = *imm;
        }
        SendOp::Read { remote_addr, rkey } => {
            (w.opcode, w.remote_addr, w.rkey) = (wqe_op::READ, *remote_addr, *rkey)
        }
        SendOp::CmpSwap {
            remote_addr,
            rkey,
            compare,
            swap,
        } => {
            (w.opcode, w.remote_addr, w.rkey) = (wqe_op::CMP_SWAP, *remote_addr, *rkey);
            w.set_atomic(&AtomicParams {
                compare_add: *compare,
                swap: *swap,
            });
        }
        SendOp::FetchAdd {
            remote_addr,
            rkey,
            add,
        } => {
            (w.opcode, w.remote_addr, w.rkey) = (wqe_op::FETCH_ADD, *remote_addr, *rkey);
            w.set_atomic(&AtomicParams {
                compare_add: *add,
                swap: 0,
            });
        }
        SendOp::LocalInv(key) => (w.opcode, w.imm_or_key) = (wqe_op::LOCAL_INV, *key),
        SendOp::RegMr {
            mr,
            key,
            access,
            iova,
            len,
            page_size,
        } => {
            if !page_size.is_power_of_two() {
                return Err(EINVAL);
            }
            let (list, npages) = RdmaMr::page_list(mr)?;
            w.opcode = wqe_op::REG_MR;
            w.remote_addr = list;
            w.rkey = *key;
            w.qkey = access_bits(*access);
            w.set_reg(&RegMrParams {
                iova: *iova,
                len: *len,
                npages,
                page_shift: page_size.trailing_zeros() as u8,
            });
        }
        SendOp::Ud {
            ah,
            remote_qpn,
            remote_qkey,
            imm,
        } => {
            w.opcode = if imm.is_some() {
                wqe_op::SEND_IMM
            } else {
                wqe_op::SEND
            };
            w.imm_or_key = imm.unwrap_or(0);
            w.dest_qpn = *remote_qpn;
            w.qkey = *remote_qkey;
            w.set_av(&ah.av);
        }
        SendOp::Unsupported => return Err(EINVAL),
    }
    Ok(w)
}

/// `post_send`: writes every request into the send queue, then rings the
/// doorbell once.
pub(crate) fn post_send(dev: &RdmaDev, qp: &RdmaQp, wrs: &mut SendWrs<'_, RdmaDev>) -> Result {
    let mut tables = lock_irqsave(dev.tables());
    let entry = tables.qp(qp.qpn).ok_or(EINVAL)?;
    let start = entry.sq.head;
    let mut result = Ok(());
    for wr in wrs {
        if !entry.sq.has_room() {
            result = Err(ENOMEM);
            break;
        }
        let w = match send_wqe(qp, &wr) {
            Ok(w) => w,
            Err(e) => {
                result = Err(e);
                break;
            }
        };
        let slot = entry.sq.slot(entry.sq.head);
        if let Err(e) = qp
            .sq
            .as_ref()
            .ok_or(EINVAL)
            .and_then(RingMem::kernel)
            .and_then(|sq| sq.write(slot * SQ_WQE_LEN, &w.to_bytes()))
        {
            result = Err(e);
            break;
        }
        entry.sq.wr_ids[slot] = wr.wr_id;
        entry.sq.head = entry.sq.head.wrapping_add(1);
    }
    let head = entry.sq.head;
    drop(tables);
    if head != start {
        let _ = dev.doorbell(db::SQ, qp.qpn | u32::from(head) << 16);
    }
    result
}

/// The receive WQE of a request; `EINVAL` with too many entries.
pub(crate) fn recv_wqe(wr: &RecvWr<'_>) -> Result<RqWqe> {
    if wr.num_sge() > MAX_SGE {
        return Err(EINVAL);
    }
    let mut w = RqWqe {
        num_sge: wr.num_sge() as u8,
        ..RqWqe::default()
    };
    for (i, o) in w.sge.iter_mut().enumerate().take(wr.num_sge()) {
        if let Some(s) = wr.sge(i) {
            *o = Sge {
                addr: s.addr,
                len: s.len,
                lkey: s.lkey,
            };
        }
    }
    Ok(w)
}

/// `post_recv`: as [`post_send`], for the receive queue.
pub(crate) fn post_recv(dev: &RdmaDev, qp: &RdmaQp, wrs: &mut RecvWrs<'_>) -> Result {
    let mut tables = lock_irqsave(dev.tables());
    let entry = tables.qp(qp.qpn).ok_or(EINVAL)?;
    let start = entry.rq.head;
    let mut result = Ok(());
    if entry.srq.is_some() {
        // Its receives are posted to the SRQ.
        return Err(EINVAL);
    }
    for wr in wrs {
        if !entry.rq.has_room() {
            result = Err(ENOMEM);
            break;
        }
        let w = match recv_wqe(&wr) {
            Ok(w) => w,
            Err(e) => {
                result = Err(e);
                break;
            }
        };
        let slot = entry.rq.slot(entry.rq.head);
        if let Err(e) = qp
            .rq
            .as_ref()
            .ok_or(EINVAL)
            .and_then(RingMem::kernel)
            .and_then(|rq| rq.write(slot * RQ_WQE_LEN, &w.to_bytes()))
        {
            result = Err(e);
            break;
        }
        entry.rq.wr_ids[slot] = wr.wr_id;
        entry.rq.head = entry.rq.head.wrapping_add(1);
    }
    let head = entry.rq.head;
    drop(tables);
    if head != start {
        let _ = dev.doorbell(db::RQ, qp.qpn | u32::from(head) << 16);
    }
    result
}
