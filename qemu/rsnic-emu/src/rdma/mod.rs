// SPDX-License-Identifier: GPL-2.0

//! The card's RDMA engine (RecoNIC-style RoCEv2 offload): its limits, its
//! GID table and the RoCEv2 wire format it speaks ([`wire`]).
//!
//! The PF configures it with the RDMA admin commands; what it holds is
//! visible to the test harness (`rdma-gids`).

pub mod faults;
pub mod mcast;
pub mod mem;
pub mod packet;
pub mod qp;
pub mod queues;
pub mod wire;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Instant;

use log::debug;

use crate::clock::CardClock;
use crate::device_memory::{DeviceMemory, WINDOW};
use crate::dma::HostMem;
use crate::hw::rdma::{
    arm, cq_create, cqe_flag, db, eqe_type, mr_kind, rdma_cap, udb, Eqe, Gid, MrReg, QpCreate,
    QpModify, QpQueryResult, QpState, QpType, RdmaCaps, RdmaCounters, GID_TABLE_LEN,
    MAX_ODP_MAP_PAGES, MAX_USER_MR_PAGES, MAX_XRCD, MULTICAST_QPN, QP_MODIFY_LEN, RQ_WQE_LEN,
    SQ_WQE_LEN,
};
use crate::hw::{AdminCmd, AdminStatus, AQ_ENTRY_SIZE};
use faults::{RdmaFault, RdmaFaults};
use mcast::{McastGroups, MCAST_CAPS};
use mem::{read_u64s, Fault, MrTable};
use packet::{RejectReason, Route};
use qp::{Action, Incoming, Qp};
use queues::{
    lock_srq, CompletionQueue, EventQueue, Posted, RecvQueue, SharedRq, SrqRef, WorkQueue,
};

/// The limits the engine reports. Queue and region counts are those of a
/// small FPGA design; a page list covers 2 MiB in 4 KiB pages.
pub const CAPS: RdmaCaps = RdmaCaps {
    max_qp: 256,
    max_qp_wr: 4096,
    max_sge: 4,
    max_srq: 64,
    max_cq: 256,
    max_cqe: 8192,
    max_mr: 4096,
    max_pd: 1024,
    max_qp_rd_atom: 16,
    max_fast_reg_page_list_len: 512,
    gid_table_len: GID_TABLE_LEN,
    flags: rdma_cap::ATOMIC
        | rdma_cap::FLUSH_GLOBAL
        | rdma_cap::ATOMIC_WRITE
        | rdma_cap::CQ_TIMESTAMP
        | rdma_cap::ODP
        | rdma_cap::XRC
        | rdma_cap::DEVICE_MEMORY,
    max_mr_size: 1 << 32,
    page_size_cap: 0x0000_0000_4020_1000,
};

/// [`CAPS`] as the harness shows them (`rdma-caps`): `name=value` pairs,
/// named as `ibv_devinfo -v` names them.
pub fn describe_caps() -> String {
    let c = CAPS;
    format!(
        "max_qp={} max_qp_wr={} max_sge={} max_cq={} max_cqe={} max_mr={} max_pd={} \
         max_qp_rd_atom={} max_mr_size={:#x} page_size_cap={:#x} max_srq={} \
         max_mcast_grp={} max_mcast_qp_attach={} max_total_mcast_qp_attach={}",
        c.max_qp,
        c.max_qp_wr,
        c.max_sge,
        c.max_cq,
        c.max_cqe,
        c.max_mr,
        c.max_pd,
        c.max_qp_rd_atom,
        c.max_mr_size,
        c.page_size_cap,
        c.max_srq,
        MCAST_CAPS.max_groups,
        MCAST_CAPS.max_qp_per_group,
        MCAST_CAPS.max_attach,
    )
}

/// Counters of the engine (the harness shows them with `rdma-state`).
#[derive(Clone, Copy, Debug, Default)]
pub struct RdmaStats {
    /// RoCEv2 packets sent.
    pub tx_packets: u64,
    /// RoCEv2 packets received for a QP.
    pub rx_packets: u64,
    /// Received with a wrong ICRC (dropped).
    pub rx_bad_icrc: u64,
    /// Received with a wrong (non-zero) UDP checksum (dropped).
    pub rx_bad_udp_csum: u64,
    /// Received for no QP, or malformed (dropped).
    pub rx_dropped: u64,
    /// Packets not sent: the source GID index is not set.
    pub tx_no_gid: u64,
    /// Completions lost to a full CQ.
    pub cq_overflows: u64,
    /// Doorbells naming no queue or an impossible index.
    pub bad_doorbells: u64,
    /// Doorbells on a user page for a queue it does not own, or for none.
    pub refused_doorbells: u64,
    /// Events written.
    pub events: u64,
    /// Page-fault events written (on-demand regions).
    pub page_faults: u64,
    /// Counters of QPs destroyed since reset.
    pub retired: qp::QpCounters,
}

/// The function's side of an engine call: host memory, the MAC packets
/// go out from, and what the call asks the function to do afterwards.
pub struct Io<'a> {
    /// Host memory.
    pub mem: &'a dyn HostMem,
    /// The card's MAC address.
    pub mac: [u8; 6],
    /// Now.
    pub now: Instant,
    /// Frames to put on the wire.
    pub frames: Vec<Vec<u8>>,
    /// The event queue's vector, if an event was written.
    pub raise: Option<u16>,
}

impl<'a> Io<'a> {
    /// A call on `mem` from a card with address `mac`.
    pub fn new(mem: &'a dyn HostMem, mac: [u8; 6], now: Instant) -> Self {
        Self {
            mem,
            mac,
            now,
            frames: Vec::new(),
            raise: None,
        }
    }
}

/// The RDMA engine of one card.
#[derive(Debug)]
pub struct RdmaEngine {
    gids: [Option<Gid>; GID_TABLE_LEN as usize],
    eq: Option<EventQueue>,
    cqs: HashMap<u32, CompletionQueue>,
    qps: HashMap<u32, Qp>,
    srqs: HashMap<u32, SrqRef>,
    mrs: MrTable,
    /// Page faults raised and not yet answered by a mapping of the page,
    /// and when each was raised last.
    faults_raised: HashMap<Fault, Instant>,
    mcast: McastGroups,
    /// Counters.
    pub stats: RdmaStats,
    /// Faults the harness armed (kept across a reset).
    pub faults: Arc<RdmaFaults>,
    /// The card's clock, which stamps completions (kept across a reset).
    clock: Arc<CardClock>,
    /// The card's device memory (kept across a reset, emptied by it).
    dm: Option<Arc<DeviceMemory>>,
}

impl Default for RdmaEngine {
    fn default() -> Self {
        Self {
            gids: Default::default(),
            eq: None,
            cqs: HashMap::new(),
            qps: HashMap::new(),
            srqs: HashMap::new(),
            mrs: MrTable::new(CAPS.max_mr),
            faults_raised: HashMap::new(),
            mcast: McastGroups::default(),
            stats: RdmaStats::default(),
            faults: Arc::default(),
            clock: Arc::default(),
            dm: None,
        }
    }
}

/// How long a page fault the driver has not answered waits before the
/// engine raises it again (the event may have been lost).
const FAULT_AGAIN: std::time::Duration = std::time::Duration::from_millis(100);

/// Rounds of frames an engine loops back to itself in one call (a
/// request, its response or ACK, and what that triggers).
const LOOPBACK_ROUNDS: usize = 8;

fn ring_ok(entries: u32, max: u32) -> bool {
    entries.is_power_of_two() && entries <= max
}

/// The page list of a user MR registration, read from host memory.
fn read_page_list(mem: &dyn HostMem, reg: &MrReg) -> Option<Vec<u64>> {
    let n = reg.max_pages;
    if n == 0 || n > MAX_USER_MR_PAGES || !reg.pbl.is_multiple_of(8) {
        return None;
    }
    read_u64s(mem, reg.pbl, n as usize)
}

impl RdmaEngine {
    /// Shares the card's clock.
    pub fn set_clock(&mut self, clock: Arc<CardClock>) {
        self.clock = clock;
    }

    /// The card's device memory, if it has any.
    pub fn device_memory(&self) -> Option<Arc<DeviceMemory>> {
        self.dm.clone()
    }

    /// Gives the engine the card's device memory.
    pub fn set_device_memory(&mut self, dm: Arc<DeviceMemory>) {
        self.dm = Some(dm);
    }

    /// Back to power-on state: no GIDs, queues, regions or device memory
    /// allocated.
    pub fn reset(&mut self) {
        if let Some(dm) = &self.dm {
            dm.reset();
        }
        *self = Self {
            faults: Arc::clone(&self.faults),
            clock: Arc::clone(&self.clock),
            dm: self.dm.clone(),
            ..Self::default()
        };
    }

    /// Runs an RDMA admin command, writing its result into `entry`.
    pub fn execute(
        &mut self,
        cmd: AdminCmd,
        entry: &mut [u8; AQ_ENTRY_SIZE],
        io: &mut Io<'_>,
    ) -> AdminStatus {
        debug!("rdma admin {cmd:?}");
        match cmd {
            AdminCmd::RdmaQueryCaps => {
                let mut caps = CAPS;
                if self.dm.is_none() {
                    caps.flags &= !rdma_cap::DEVICE_MEMORY;
                }
                caps.write_result(entry)
            }
            AdminCmd::RdmaSetGid { index, gid } => match self.gids.get_mut(index as usize) {
                Some(slot) => *slot = Some(gid),
                None => return AdminStatus::BadParam,
            },
            AdminCmd::RdmaDelGid { index } => match self.gids.get_mut(index as usize) {
                Some(slot @ Some(_)) => *slot = None,
                Some(None) => return AdminStatus::NotFound,
                None => return AdminStatus::BadParam,
            },
            AdminCmd::RdmaCreateEq {
                ring,
                entries,
                vector,
            } => {
                if !ring_ok(entries, 4096) || entries < 64 {
                    return AdminStatus::BadParam;
                }
                if self.eq.is_some() {
                    return AdminStatus::BadState;
                }
                self.eq = Some(EventQueue::new(ring, entries, vector));
            }
            AdminCmd::RdmaDestroyEq => {
                if self.eq.take().is_none() {
                    return AdminStatus::NotFound;
                }
            }
            AdminCmd::RdmaCreateCq {
                cqn,
                ring,
                entries,
                db_page,
                flags,
            } => {
                if cqn >= CAPS.max_cq
                    || !ring_ok(entries, CAPS.max_cqe)
                    || entries < 2
                    || db_page >= udb::PAGES
                    || flags & !cq_create::TIMESTAMP != 0
                {
                    return AdminStatus::BadParam;
                }
                if self.cqs.contains_key(&cqn) {
                    return AdminStatus::BadState;
                }
                let mut cq = CompletionQueue::new(ring, entries, db_page);
                if flags & cq_create::TIMESTAMP != 0 {
                    cq = cq.with_timestamps();
                }
                self.cqs.insert(cqn, cq);
            }
            AdminCmd::RdmaResizeCq {
                cqn,
                ring,
                entries,
                consumed,
            } => {
                if !ring_ok(entries, CAPS.max_cqe) || entries < 2 || consumed > 0xffff {
                    return AdminStatus::BadParam;
                }
                let Some(cq) = self.cqs.get_mut(&cqn) else {
                    return AdminStatus::NotFound;
                };
                if cq.resize(io.mem, ring, entries, consumed as u16).is_none() {
                    return AdminStatus::BadParam;
                }
            }
            AdminCmd::RdmaDestroyCq { cqn } => match self.cqs.get(&cqn) {
                None => return AdminStatus::NotFound,
                Some(cq) if cq.users > 0 => return AdminStatus::BadState,
                Some(_) => {
                    self.cqs.remove(&cqn);
                }
            },
            AdminCmd::RdmaCreateQp(c) => return self.create_qp(&c),
            AdminCmd::RdmaModifyQp { qpn, block } => {
                let mut raw = [0u8; QP_MODIFY_LEN];
                if io.mem.read(block, &mut raw).is_err() {
                    return AdminStatus::BadParam;
                }
                let m = QpModify::from_bytes(&raw);
                let Some(qp) = self.qps.get_mut(&qpn) else {
                    return AdminStatus::NotFound;
                };
                if m.mask & crate::hw::rdma::qp_attr::PATH != 0
                    && self.gids.get(usize::from(m.av.sgid_index)).is_none()
                {
                    return AdminStatus::BadParam;
                }
                if self.faults.take(RdmaFault::RejectModify) {
                    return AdminStatus::BadState;
                }
                match qp.modify(&m, io.now) {
                    Ok(actions) => self.apply(qpn, actions, io),
                    Err(qp::BadModify) => return AdminStatus::BadState,
                }
            }
            AdminCmd::RdmaQueryQp { qpn } => match self.qps.get(&qpn) {
                Some(qp) => QpQueryResult {
                    state: qp.state as u8,
                }
                .write_result(entry),
                None => return AdminStatus::NotFound,
            },
            AdminCmd::RdmaDestroyQp { qpn } => match self.qps.remove(&qpn) {
                Some(qp) => {
                    self.stats.retired.add(&qp.counters);
                    self.mcast.forget(qpn);
                    if qp.is_xrc_target() {
                        // It holds no CQ, and an XRC SRQ only for the
                        // request it last received.
                        return AdminStatus::Ok;
                    }
                    if let RecvQueue::Shared { srq, .. } = &qp.rq {
                        let mut s = lock_srq(srq);
                        s.users = s.users.saturating_sub(1);
                    }
                    for cqn in [qp.send_cq, qp.recv_cq] {
                        if let Some(cq) = self.cqs.get_mut(&cqn) {
                            cq.users = cq.users.saturating_sub(1);
                        }
                    }
                }
                None => return AdminStatus::NotFound,
            },
            AdminCmd::RdmaRegMr(reg) if reg.kind == mr_kind::USER => {
                let Some(pages) = read_page_list(io.mem, &reg) else {
                    return AdminStatus::BadParam;
                };
                return self.mrs.register_user(&reg, pages);
            }
            AdminCmd::RdmaRegMr(reg) if reg.kind == mr_kind::ODP => {
                return self.mrs.register_on_demand(&reg)
            }
            AdminCmd::RdmaRegMr(reg) if reg.kind == mr_kind::DEVICE => {
                let inside = self
                    .dm
                    .as_ref()
                    .is_some_and(|dm| dm.is_allocated(reg.pbl, reg.len.max(1)));
                if !inside {
                    return AdminStatus::BadParam;
                }
                return self.mrs.register_device(&reg, WINDOW + reg.pbl);
            }
            AdminCmd::RdmaRegMr(reg) => return self.mrs.register(&reg),
            AdminCmd::RdmaAllocDm { len } => {
                let Some(dm) = &self.dm else {
                    return AdminStatus::BadOpcode;
                };
                if len == 0 || len > crate::hw::rdma::dm::SIZE as u64 {
                    return AdminStatus::BadParam;
                }
                match dm.alloc(len) {
                    Some(offset) => crate::hw::RdmaDmAllocated { offset }.write_result(entry),
                    None => return AdminStatus::NoSpace,
                }
            }
            AdminCmd::RdmaFreeDm { offset } => {
                let Some(dm) = &self.dm else {
                    return AdminStatus::BadOpcode;
                };
                let Some(len) = dm.allocation_len(offset) else {
                    return AdminStatus::NotFound;
                };
                if self.mrs.uses_device(WINDOW + offset..WINDOW + offset + len) {
                    return AdminStatus::BadState;
                }
                dm.free(offset);
            }
            AdminCmd::RdmaOdpMap {
                key,
                first,
                count,
                pbl,
            } => {
                if count == 0 || count > MAX_ODP_MAP_PAGES || !pbl.is_multiple_of(8) {
                    return AdminStatus::BadParam;
                }
                let Some(entries) = read_u64s(io.mem, pbl, count as usize) else {
                    return AdminStatus::BadParam;
                };
                let status = self.mrs.map_on_demand(key, first, &entries);
                if status == AdminStatus::Ok {
                    self.odp_mapped(key, first, count, io);
                }
                return status;
            }
            AdminCmd::RdmaOdpUnmap { key, first, count } => {
                return self.mrs.unmap_on_demand(key, first, count)
            }
            AdminCmd::RdmaDeregMr { key } => {
                self.faults_raised.retain(|f, _| f.key >> 8 != key >> 8);
                return self.mrs.deregister(key);
            }
            AdminCmd::RdmaCreateSrq {
                srqn,
                ring,
                entries,
                pd,
                db_page,
                xrcd,
                cq,
            } => {
                if !(1..=u32::from(CAPS.max_srq)).contains(&srqn)
                    || !ring_ok(entries, CAPS.max_qp_wr)
                    || pd >= CAPS.max_pd
                    || db_page >= udb::PAGES
                    || xrcd > MAX_XRCD
                {
                    return AdminStatus::BadParam;
                }
                if self.srqs.contains_key(&srqn) {
                    return AdminStatus::BadState;
                }
                if xrcd != 0 {
                    // An XRC SRQ completes on its own CQ, of its process.
                    match self.cqs.get_mut(&cq) {
                        None => return AdminStatus::NotFound,
                        Some(c) if c.db_page != db_page => return AdminStatus::BadParam,
                        Some(c) => c.users += 1,
                    }
                }
                let mut srq = SharedRq::new(ring, entries, pd, db_page);
                (srq.xrcd, srq.cq) = (xrcd, if xrcd != 0 { cq } else { 0 });
                self.srqs.insert(srqn, Arc::new(std::sync::Mutex::new(srq)));
            }
            AdminCmd::RdmaArmSrq { srqn, limit } => {
                let Some(srq) = self.srqs.get(&srqn) else {
                    return AdminStatus::NotFound;
                };
                let due = {
                    let mut s = lock_srq(srq);
                    if limit > s.size() {
                        return AdminStatus::BadParam;
                    }
                    s.arm(limit)
                };
                if due {
                    self.event(eqe_type::SRQ_LIMIT, srqn, io);
                }
            }
            AdminCmd::RdmaResizeSrq { srqn, entries } => {
                let Some(srq) = self.srqs.get(&srqn) else {
                    return AdminStatus::NotFound;
                };
                let mut s = lock_srq(srq);
                if !ring_ok(entries, CAPS.max_qp_wr) || entries <= s.wq.entries {
                    return AdminStatus::BadParam;
                }
                if !s.resize(entries) {
                    return AdminStatus::BadState;
                }
            }
            AdminCmd::RdmaDestroySrq { srqn } => match self.srqs.get(&srqn) {
                None => return AdminStatus::NotFound,
                Some(srq) if lock_srq(srq).users > 0 => return AdminStatus::BadState,
                Some(srq) => {
                    let cq = lock_srq(srq).cq;
                    if let Some(c) = self.cqs.get_mut(&cq) {
                        c.users = c.users.saturating_sub(1);
                    }
                    self.srqs.remove(&srqn);
                }
            },
            AdminCmd::RdmaQueryMcastCaps => MCAST_CAPS.write_result(entry),
            AdminCmd::RdmaAttachMcast { qpn, gid } => {
                let ud = self.qps.get(&qpn).map(|qp| qp.qp_type == QpType::Ud);
                match ud {
                    None => return AdminStatus::NotFound,
                    Some(false) => return AdminStatus::BadParam,
                    Some(true) if !gid.is_multicast() => return AdminStatus::BadParam,
                    Some(true) => {
                        if let Err(status) = self.mcast.attach(gid, qpn) {
                            return status;
                        }
                    }
                }
            }
            AdminCmd::RdmaDetachMcast { qpn, gid } => {
                if let Err(status) = self.mcast.detach(&gid, qpn) {
                    return status;
                }
            }
            AdminCmd::RdmaQueryStats { buf } => {
                if io.mem.write(buf, &self.counters().to_bytes()).is_err() {
                    return AdminStatus::BadParam;
                }
            }
            _ => return AdminStatus::BadOpcode,
        }
        AdminStatus::Ok
    }

    fn create_qp(&mut self, c: &QpCreate) -> AdminStatus {
        let Some(qp_type) = QpType::from_raw(c.qp_type) else {
            return AdminStatus::BadParam;
        };
        if qp_type == QpType::XrcTgt {
            return self.create_xrc_target(c);
        }
        // An XRC initiator has no receive queue.
        let ini = qp_type == QpType::XrcIni;
        let qpn_ok = match qp_type {
            QpType::Gsi => c.qpn == crate::hw::rdma::GSI_QPN,
            _ => (2..CAPS.max_qp).contains(&c.qpn),
        };
        if !qpn_ok
            || !ring_ok(c.sq_entries, CAPS.max_qp_wr)
            || (c.srq == 0 && !ini && !ring_ok(c.rq_entries, CAPS.max_qp_wr))
            || (c.srq != 0 && !matches!(qp_type, QpType::Rc | QpType::Uc))
            || (ini && c.rq_entries != 0)
            || c.pd >= CAPS.max_pd
            || c.db_page >= udb::PAGES
            || (c.db_page != 0 && qp_type == QpType::Gsi)
        {
            return AdminStatus::BadParam;
        }
        if self.qps.contains_key(&c.qpn) {
            return AdminStatus::BadState;
        }
        let (Some(scq), Some(rcq)) = (self.cqs.get(&c.send_cq), self.cqs.get(&c.recv_cq)) else {
            return AdminStatus::NotFound;
        };
        // A QP and its CQs are rung through the same page: one process's.
        if scq.db_page != c.db_page || rcq.db_page != c.db_page {
            return AdminStatus::BadParam;
        }
        let rq = if ini {
            RecvQueue::None
        } else if c.srq == 0 {
            RecvQueue::Own(WorkQueue::new(c.rq, c.rq_entries, RQ_WQE_LEN))
        } else {
            let Some(srq) = self.srqs.get(&c.srq) else {
                return AdminStatus::NotFound;
            };
            {
                // And its SRQ: the same process's, the same PD.
                let mut s = lock_srq(srq);
                if s.db_page != c.db_page || s.pd != c.pd {
                    return AdminStatus::BadParam;
                }
                s.users += 1;
            }
            RecvQueue::Shared {
                srqn: c.srq,
                srq: Arc::clone(srq),
            }
        };
        for cqn in [c.send_cq, c.recv_cq] {
            if let Some(cq) = self.cqs.get_mut(&cqn) {
                cq.users += 1;
            }
        }
        let mut qp = Qp::new(
            c.qpn,
            qp_type,
            c.pd,
            WorkQueue::new(c.sq, c.sq_entries, SQ_WQE_LEN),
            rq,
            c.send_cq,
            c.recv_cq,
        )
        .with_faults(Arc::clone(&self.faults));
        qp.db_page = c.db_page;
        self.qps.insert(c.qpn, qp);
        AdminStatus::Ok
    }

    /// Creates an XRC target: no queues nor CQs; `c.pd` is its XRC
    /// domain.
    fn create_xrc_target(&mut self, c: &QpCreate) -> AdminStatus {
        if !(2..CAPS.max_qp).contains(&c.qpn) || !(1..=MAX_XRCD).contains(&c.pd) {
            return AdminStatus::BadParam;
        }
        if self.qps.contains_key(&c.qpn) {
            return AdminStatus::BadState;
        }
        let none = || WorkQueue::new(0, 1, SQ_WQE_LEN);
        let mut qp = Qp::new(c.qpn, QpType::XrcTgt, 0, none(), RecvQueue::None, 0, 0)
            .with_faults(Arc::clone(&self.faults));
        qp.xrcd = c.pd;
        qp.bind_xrc_srq(None);
        self.qps.insert(c.qpn, qp);
        AdminStatus::Ok
    }

    /// A write to one of the kernel's [`db`] registers in BAR0.
    pub fn doorbell(&mut self, offset: usize, value: u32, io: &mut Io<'_>) {
        self.ring(0, offset - db::SQ, value, io);
    }

    /// A write to user doorbell page `page` at `offset` ([`udb`]).
    pub fn user_doorbell(&mut self, page: u32, offset: usize, value: u32, io: &mut Io<'_>) {
        if page == 0 || page >= udb::PAGES {
            self.stats.refused_doorbells += 1;
            return;
        }
        self.ring(page, offset, value, io);
    }

    /// A doorbell of page `page` (0: the kernel's), `reg` one of the
    /// [`udb`] offsets: acts only on a queue that page owns.
    fn ring(&mut self, page: u32, reg: usize, value: u32, io: &mut Io<'_>) {
        let id = value & 0xffff;
        let arg = (value >> 16) as u16;
        let owner = match reg {
            udb::SQ | udb::RQ => self.qps.get(&id).map(|qp| qp.db_page),
            udb::CQ_CI | udb::CQ_ARM => self.cqs.get(&id).map(|cq| cq.db_page),
            udb::SRQ => self.srqs.get(&id).map(|srq| lock_srq(srq).db_page),
            _ => None,
        };
        if owner.is_some_and(|owner| owner != page) || (owner.is_none() && page != 0) {
            self.stats.refused_doorbells += 1;
            return;
        }
        match reg {
            udb::SQ | udb::RQ => {
                // An XRC target has no queues, an initiator no receive
                // queue.
                let has_queue = |qp: &&mut Qp| match qp.qp_type {
                    QpType::XrcTgt => false,
                    QpType::XrcIni => reg == udb::SQ,
                    _ => true,
                };
                let Some(qp) = self.qps.get_mut(&id).filter(has_queue) else {
                    self.stats.bad_doorbells += 1;
                    return;
                };
                let q = if reg == udb::SQ {
                    Some(&mut qp.sq)
                } else {
                    qp.rq.own_mut()
                };
                if !q.is_some_and(|q| q.ring(arg)) {
                    self.stats.bad_doorbells += 1;
                    return;
                }
                let mut actions = Vec::new();
                if reg == udb::SQ || qp.state == QpState::Err {
                    qp.process_sq(io.mem, &mut self.mrs, io.now, &mut actions);
                }
                self.apply(id, actions, io);
            }
            udb::SRQ => match self.srqs.get(&id) {
                Some(srq) if lock_srq(srq).ring(arg) => {}
                _ => self.stats.bad_doorbells += 1,
            },
            udb::CQ_CI => match self.cqs.get_mut(&id) {
                Some(cq) => cq.consumed_to(arg),
                None => self.stats.bad_doorbells += 1,
            },
            udb::CQ_ARM => match self.cqs.get_mut(&id) {
                Some(cq) => {
                    if cq.arm(u32::from(arg) & (arm::NEXT | arm::SOLICITED)) {
                        self.event(eqe_type::COMPLETION, id, io);
                    }
                }
                None => self.stats.bad_doorbells += 1,
            },
            _ => self.stats.bad_doorbells += 1,
        }
    }

    /// Takes back the frames in `io.frames` addressed to the card's own
    /// MAC (RoCE between two of its QPs), as a NIC loops them back instead
    /// of sending them to the wire; what they make the engine send loops
    /// too, for a bounded number of rounds. A multicast frame goes both
    /// ways: to this card's QPs in its group and to the wire. `io.frames`
    /// keeps what goes to the wire.
    pub fn loop_back(&mut self, io: &mut Io<'_>) {
        let mac = io.mac;
        let mut wire = Vec::new();
        for _ in 0..LOOPBACK_ROUNDS {
            let mut local = Vec::new();
            for frame in std::mem::take(&mut io.frames) {
                match frame.get(..6) {
                    Some(dmac) if dmac == mac => local.push(frame),
                    Some(dmac) if dmac[0] & 1 != 0 => {
                        local.push(frame.clone());
                        wire.push(frame);
                    }
                    _ => wire.push(frame),
                }
            }
            if local.is_empty() {
                break;
            }
            for frame in &local {
                self.receive(frame, io);
            }
        }
        wire.append(&mut io.frames);
        io.frames = wire;
    }

    /// A frame from the wire: returns false if it is not RoCEv2 for one of
    /// this card's GIDs (the NIC then delivers it as any other frame).
    pub fn receive(&mut self, frame: &[u8], io: &mut Io<'_>) -> bool {
        let rx = match packet::parse(frame) {
            Ok(rx) => rx,
            Err(RejectReason::NotRoce) => return false,
            // Damaged frames for one of this engine's GIDs are dropped and
            // counted; another endpoint's are the NIC's to deliver.
            Err(RejectReason::BadIcrc { dgid }) if self.accepts(&dgid) => {
                self.stats.rx_bad_icrc += 1;
                return true;
            }
            Err(RejectReason::BadUdpChecksum { dgid }) if self.accepts(&dgid) => {
                self.stats.rx_bad_udp_csum += 1;
                return true;
            }
            Err(_) => return false,
        };
        let group = rx.dgid.is_multicast();
        let for_us = if group {
            self.mcast.members(&rx.dgid).is_some() && rx.dmac == rx.dgid.multicast_mac()
        } else {
            self.owns(&rx.dgid) && rx.dmac == io.mac
        };
        if !for_us {
            return false;
        }
        let Ok(pkt) = wire::Packet::parse(rx.transport) else {
            self.stats.rx_dropped += 1;
            return true;
        };
        let mut grh = [0u8; 40];
        if rx.ipv4 {
            let n = rx.ip_header.len().min(20);
            grh[20..20 + n].copy_from_slice(&rx.ip_header[..n]);
        } else {
            let n = rx.ip_header.len().min(40);
            grh[..n].copy_from_slice(&rx.ip_header[..n]);
        }
        let inc = Incoming {
            packet: pkt,
            smac: rx.smac,
            grh,
            ipv4: rx.ipv4,
        };
        let qpn = inc.packet.bth.dest_qp;
        if !group {
            if self.deliver(qpn, &inc, io) {
                self.stats.rx_packets += 1;
            } else {
                self.stats.rx_dropped += 1;
            }
            return true;
        }
        // To a group: a UD SEND for QP 0xffffff, a copy for each QP
        // attached (each checks its own Q_Key). Nothing else goes to a
        // group.
        if qpn != MULTICAST_QPN || inc.packet.opcode.service() != wire::Service::Ud {
            self.stats.rx_dropped += 1;
            return true;
        }
        self.stats.rx_packets += 1;
        let members = self.mcast.members(&rx.dgid).unwrap_or_default().to_vec();
        for qpn in members {
            self.deliver(qpn, &inc, io);
        }
        true
    }

    /// Hands a received packet to QP `qpn` and carries out what it
    /// asks; false if there is no such QP.
    fn deliver(&mut self, qpn: u32, inc: &Incoming<'_>, io: &mut Io<'_>) -> bool {
        let Some(qp) = self.qps.get_mut(&qpn) else {
            return false;
        };
        if qp.is_xrc_target() && inc.packet.xrc_srqn.is_some() {
            // The request goes to the XRC SRQ it names, if that is one
            // of the target's domain.
            let xrcd = qp.xrcd;
            let srq = inc.packet.xrc_srqn.and_then(|srqn| {
                let srq = self.srqs.get(&srqn)?;
                (lock_srq(srq).xrcd == xrcd).then(|| (srqn, Arc::clone(srq)))
            });
            qp.bind_xrc_srq(srq);
        }
        let mut actions = Vec::new();
        qp.receive(inc, io.mem, &mut self.mrs, io.now, &mut actions);
        self.apply(qpn, actions, io);
        true
    }

    /// Whether a RoCEv2 packet for `gid` is the engine's: one of its
    /// addresses, or a group one of its QPs joined.
    fn accepts(&self, gid: &Gid) -> bool {
        self.owns(gid) || self.mcast.members(gid).is_some()
    }

    /// Timers of every QP; returns when to call again.
    pub fn tick(&mut self, io: &mut Io<'_>) -> Option<Instant> {
        let qpns: Vec<u32> = self.qps.keys().copied().collect();
        for qpn in qpns {
            let mut actions = Vec::new();
            if let Some(qp) = self.qps.get_mut(&qpn) {
                qp.tick(io.mem, &mut self.mrs, io.now, &mut actions);
            }
            self.apply(qpn, actions, io);
        }
        let faults = self.page_faults_again(io);
        self.qps
            .values()
            .filter_map(Qp::deadline)
            .chain(faults)
            .min()
    }

    /// Raises the page-fault event for `fault`, unless one was raised
    /// for that page (and access) less than [`FAULT_AGAIN`] ago and the
    /// driver has not mapped it since.
    fn page_fault(&mut self, fault: Fault, io: &mut Io<'_>) {
        if self
            .faults_raised
            .get(&fault)
            .is_some_and(|&at| io.now < at + FAULT_AGAIN)
        {
            return;
        }
        self.faults_raised.insert(fault, io.now);
        let Some(eq) = self.eq.as_mut() else { return };
        let eqe = Eqe {
            kind: eqe_type::PAGE_FAULT,
            id: fault.key,
            page: fault.page,
            write: u32::from(fault.write),
            ..Eqe::default()
        };
        if eq.post_entry(io.mem, eqe) {
            self.stats.events += 1;
            self.stats.page_faults += 1;
            io.raise = Some(eq.vector);
        }
    }

    /// Raises again the faults the driver has not answered for
    /// [`FAULT_AGAIN`] (an event it lost, or dropped for want of room);
    /// returns when the next one is due.
    fn page_faults_again(&mut self, io: &mut Io<'_>) -> Option<Instant> {
        let due: Vec<Fault> = self
            .faults_raised
            .iter()
            .filter(|&(_, &at)| io.now >= at + FAULT_AGAIN)
            .map(|(&f, _)| f)
            .collect();
        for fault in due {
            self.page_fault(fault, io);
        }
        self.faults_raised
            .values()
            .map(|&at| at + FAULT_AGAIN)
            .min()
    }

    /// The driver mapped (or failed to map) pages `first..first + count`
    /// of the on-demand region `key`: their faults may be raised again,
    /// and the QPs held for the region go on.
    fn odp_mapped(&mut self, key: u32, first: u32, count: u32, io: &mut Io<'_>) {
        let pages = first..first.saturating_add(count);
        self.faults_raised
            .retain(|f, _| f.key != key || !pages.contains(&f.page));
        let qpns: Vec<u32> = self.qps.keys().copied().collect();
        for qpn in qpns {
            let mut actions = Vec::new();
            if let Some(qp) = self.qps.get_mut(&qpn) {
                qp.odp_mapped(key, io.mem, &mut self.mrs, io.now, &mut actions);
            }
            self.apply(qpn, actions, io);
        }
    }

    fn event(&mut self, kind: u16, id: u32, io: &mut Io<'_>) {
        if let Some(eq) = self.eq.as_mut() {
            if eq.post(io.mem, kind, id) {
                self.stats.events += 1;
                io.raise = Some(eq.vector);
            }
        }
    }

    /// Carries out what a QP asked for.
    fn apply(&mut self, qpn: u32, actions: Vec<Action>, io: &mut Io<'_>) {
        let Some((send_cq, recv_cq, srqn)) = self
            .qps
            .get(&qpn)
            .map(|q| (q.send_cq, q.recv_cq, q.rq.srqn()))
        else {
            return;
        };
        for action in actions {
            match action {
                Action::Send { av, transport } => {
                    let Some(sgid) = self.gid(u32::from(av.sgid_index)) else {
                        self.stats.tx_no_gid += 1;
                        continue;
                    };
                    let route = Route {
                        smac: io.mac,
                        dmac: av.dmac,
                        sgid,
                        dgid: av.dgid,
                        traffic_class: av.traffic_class,
                        hop_limit: av.hop_limit,
                        flow_label: av.flow_label,
                        sport: packet::udp_sport(qpn ^ av.flow_label),
                    };
                    io.frames.push(packet::build(&route, &transport));
                    self.stats.tx_packets += 1;
                }
                Action::Complete {
                    recv,
                    mut cqe,
                    solicited,
                } => {
                    if recv && cqe.flags & cqe_flag::SRQ != 0 {
                        // CAST: SRQ numbers are at most `max_srq` (64).
                        cqe.srqn = srqn.unwrap_or(0) as u16;
                    }
                    let cqn = if recv { recv_cq } else { send_cq };
                    let Some(cq) = self.cqs.get_mut(&cqn) else {
                        continue;
                    };
                    let clock = &self.clock;
                    match cq.post(io.mem, cqe, solicited, || clock.at(io.now)) {
                        Posted::Written { event: true } => {
                            self.event(eqe_type::COMPLETION, cqn, io)
                        }
                        Posted::Written { event: false } => {}
                        Posted::Overflow | Posted::Fault => {
                            self.stats.cq_overflows += 1;
                            self.event(eqe_type::CQ_ERROR, cqn, io);
                        }
                    }
                }
                Action::Fatal => self.event(eqe_type::QP_FATAL, qpn, io),
                Action::SrqLimit(srqn) => self.event(eqe_type::SRQ_LIMIT, srqn, io),
                Action::LastWqeReached => self.event(eqe_type::QP_LAST_WQE, qpn, io),
                Action::PageFault(fault) => self.page_fault(fault, io),
            }
        }
    }

    /// The GID at `index`, if set.
    pub fn gid(&self, index: u32) -> Option<Gid> {
        self.gids.get(index as usize).copied().flatten()
    }

    /// Whether a RoCEv2 packet for `gid` is for this card.
    pub fn owns(&self, gid: &Gid) -> bool {
        self.gids.iter().flatten().any(|g| g == gid)
    }

    /// The GID table for the harness: `index=address` per set entry
    /// (IPv4-mapped GIDs as dotted quads), space-separated.
    pub fn describe_gids(&self) -> String {
        let mut out = format!("gids={}", self.gids.iter().flatten().count());
        for (i, gid) in self.gids.iter().enumerate() {
            let Some(gid) = gid else { continue };
            let _ = match gid.ipv4() {
                Some(ip) => write!(out, " {i}={}", std::net::Ipv4Addr::from(ip)),
                None => write!(out, " {i}={}", std::net::Ipv6Addr::from(gid.0)),
            };
        }
        out
    }

    /// Counters of live and destroyed QPs together.
    fn qp_totals(&self) -> qp::QpCounters {
        let mut t = self.stats.retired;
        for q in self.qps.values() {
            t.add(&q.counters);
        }
        t
    }

    /// The counters `RDMA_QUERY_STATS` reports.
    pub fn counters(&self) -> RdmaCounters {
        let q = self.qp_totals();
        RdmaCounters {
            tx_packets: self.stats.tx_packets,
            rx_packets: self.stats.rx_packets,
            rx_icrc_errors: self.stats.rx_bad_icrc,
            rx_dropped: self.stats.rx_dropped + q.dropped,
            retransmits: q.retransmits,
            seq_naks: q.seq_naks_sent,
            rnr_naks: q.rnr_naks_sent,
            rx_udp_csum_errors: self.stats.rx_bad_udp_csum,
            timeouts: q.timeouts,
            duplicates: q.duplicates,
            refused_doorbells: self.stats.refused_doorbells,
        }
    }

    /// Resources and counters for the harness.
    pub fn describe_state(&self) -> String {
        let s = &self.stats;
        let t = self.qp_totals();
        let (retransmits, timeouts, rnr, naks, dups, dropped) = (
            t.retransmits,
            t.timeouts,
            t.rnr_naks_sent,
            t.seq_naks_sent,
            t.duplicates,
            t.dropped,
        );
        let states: Vec<String> = self
            .qps
            .values()
            .map(|q| {
                format!(
                    "{}:{:?}:sq{}/{}:{}",
                    q.qpn,
                    q.state,
                    q.sq.head,
                    q.sq.tail,
                    q.rq.describe()
                )
            })
            .collect();
        let cqs: Vec<String> = self
            .cqs
            .iter()
            .map(|(id, cq)| format!("{id}:{}", cq.describe()))
            .collect();
        let errs = self
            .qps
            .values()
            .filter(|q| q.state == QpState::Err)
            .count();
        format!(
            "eq={} cqs={} qps={} qps_err={} mrs={} tx_packets={} rx_packets={} \
             rx_bad_icrc={} rx_bad_udp_csum={} rx_dropped={} tx_no_gid={} cq_overflows={} bad_doorbells={} \
             refused_doorbells={} events={} page_faults={} retransmits={} timeouts={} seq_naks={} rnr_naks={} duplicates={} \
             qp_drops={} states={} cq_positions={} srqs={}",
            u8::from(self.eq.is_some()),
            self.cqs.len(),
            self.qps.len(),
            errs,
            self.mrs.len(),
            s.tx_packets,
            s.rx_packets,
            s.rx_bad_icrc,
            s.rx_bad_udp_csum,
            s.rx_dropped,
            s.tx_no_gid,
            s.cq_overflows,
            s.bad_doorbells,
            s.refused_doorbells,
            s.events,
            s.page_faults,
            retransmits,
            timeouts,
            naks,
            rnr,
            dups,
            dropped,
            states.join(","),
            cqs.join(","),
            self.srqs.len(),
        )
    }
}

#[cfg(test)]
pub(crate) mod tests;
