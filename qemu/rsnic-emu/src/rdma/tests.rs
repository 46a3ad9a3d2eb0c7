// SPDX-License-Identifier: GPL-2.0

//! The engine's unit tests: two cards back to back, each engine's host
//! memory one buffer from bus address 0.

use super::*;
use crate::dma::DmaFault;
use crate::hw::rdma::{
    access, cqe_flag, eqe_type, flush, mr_kind, odp_pte, qp_attr, wc_op, wc_status, wqe_flag,
    wqe_op, AddressVector, AtomicParams, AtomicWriteParams, Cqe, Eqe, FlushParams, MrReg, RqWqe,
    Sge, SqWqe, CQE_LEN, EQE_LEN, MAX_ODP_MAP_PAGES,
};
use std::cell::RefCell;
use std::time::Duration;

/// Host memory for tests: one buffer from bus address 0.
pub(crate) struct Memory(RefCell<Vec<u8>>);

impl Memory {
    pub(crate) fn new(len: usize) -> Self {
        Self(RefCell::new(vec![0; len]))
    }

    pub(crate) fn get(&self, addr: u64, len: usize) -> Vec<u8> {
        self.0.borrow()[addr as usize..addr as usize + len].to_vec()
    }

    pub(crate) fn set(&self, addr: u64, data: &[u8]) {
        self.0.borrow_mut()[addr as usize..addr as usize + data.len()].copy_from_slice(data);
    }
}

impl HostMem for Memory {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), DmaFault> {
        let m = self.0.borrow();
        let end = (addr as usize)
            .checked_add(buf.len())
            .ok_or(DmaFault { addr })?;
        buf.copy_from_slice(m.get(addr as usize..end).ok_or(DmaFault { addr })?);
        Ok(())
    }

    fn write(&self, addr: u64, buf: &[u8]) -> Result<(), DmaFault> {
        let mut m = self.0.borrow_mut();
        let end = (addr as usize)
            .checked_add(buf.len())
            .ok_or(DmaFault { addr })?;
        m.get_mut(addr as usize..end)
            .ok_or(DmaFault { addr })?
            .copy_from_slice(buf);
        Ok(())
    }
}

// Layout of each side's memory.
const EQ: u64 = 0x1000;
const SCQ: u64 = 0x2000;
const RCQ: u64 = 0x3000;
const SQ: u64 = 0x1_0000;
const RQ: u64 = 0x2_0000;
const MODIFY: u64 = 0x3_0000;
const DATA: u64 = 0x4_0000;
const REMOTE: u64 = 0x8_0000;
const QPN: u32 = 17;
const RKEY: u32 = 5 << 8;

/// One card of a back-to-back pair.
struct Side {
    e: RdmaEngine,
    mem: Memory,
    mac: [u8; 6],
    gid: Gid,
    sq_tail: u16,
    rq_tail: u16,
    scq_seen: u32,
    rcq_seen: u32,
    now: Instant,
    /// The user doorbell page its queues are created with (0: kernel).
    db_page: u32,
    /// The SRQ (at `RQ`) its QP receives from (0: its own queue).
    srq: u32,
}

impl Side {
    fn new(n: u8) -> Self {
        Self {
            e: RdmaEngine::default(),
            mem: Memory::new(0x10_0000),
            mac: [2, 0, 0, 0, 0, n],
            gid: Gid::from_ipv4([10, 0, 0, n]),
            sq_tail: 0,
            rq_tail: 0,
            scq_seen: 0,
            rcq_seen: 0,
            now: Instant::now(),
            db_page: 0,
            srq: 0,
        }
    }

    /// Runs `f` on the engine with the side's memory (and the engine's
    /// device memory, if it has any, as the card gives it); returns what
    /// `f` returns and the frames sent.
    fn call<R>(&mut self, f: impl FnOnce(&mut RdmaEngine, &mut Io<'_>) -> R) -> (R, Vec<Vec<u8>>) {
        let mem = std::mem::replace(&mut self.mem, Memory::new(0));
        let dm = self.e.device_memory();
        let with_dm;
        let host: &dyn HostMem = match &dm {
            Some(dm) => {
                with_dm = crate::device_memory::WithDeviceMemory { host: &mem, dm };
                &with_dm
            }
            None => &mem,
        };
        let mut io = Io::new(host, self.mac, self.now);
        let r = f(&mut self.e, &mut io);
        let frames = std::mem::take(&mut io.frames);
        drop(io);
        self.mem = mem;
        (r, frames)
    }

    /// Rings a doorbell (a [`udb`] offset) through the side's page.
    fn ring(&mut self, reg: usize, value: u32) -> Vec<Vec<u8>> {
        let page = self.db_page;
        self.call(|e, io| {
            if page == 0 {
                e.doorbell(db::SQ + reg, value, io);
            } else {
                e.user_doorbell(page, reg, value, io);
            }
        })
        .1
    }

    fn admin(&mut self, cmd: AdminCmd) -> AdminStatus {
        self.admin_frames(cmd).0
    }

    /// Runs an admin command; its status and the frames it sent (a
    /// command that restarts queues).
    fn admin_frames(&mut self, cmd: AdminCmd) -> (AdminStatus, Vec<Vec<u8>>) {
        self.admin_entry(cmd).0
    }

    /// Runs an admin command; its status, the frames it sent and its
    /// entry (with any result).
    fn admin_entry(&mut self, cmd: AdminCmd) -> ((AdminStatus, Vec<Vec<u8>>), [u8; AQ_ENTRY_SIZE]) {
        let mut entry = cmd.to_bytes();
        let cmd = AdminCmd::from_bytes(&entry).unwrap();
        let (status, frames) = self.call(|e, io| e.execute(cmd, &mut entry, io));
        ((status, frames), entry)
    }

    fn modify(&mut self, qpn: u32, m: QpModify) -> AdminStatus {
        self.mem.set(MODIFY, &m.to_bytes());
        self.admin(AdminCmd::RdmaModifyQp { qpn, block: MODIFY })
    }

    /// EQ, CQs, a DMA MR for the peer and an RC (or GSI) QP.
    fn setup(&mut self, qp_type: QpType, qpn: u32) {
        let ok = AdminStatus::Ok;
        let gid = self.gid;
        assert_eq!(self.admin(AdminCmd::RdmaSetGid { index: 0, gid }), ok);
        let eq = AdminCmd::RdmaCreateEq {
            ring: EQ,
            entries: 64,
            vector: 9,
        };
        assert_eq!(self.admin(eq), ok);
        for (cqn, ring) in [(1, SCQ), (2, RCQ)] {
            assert_eq!(
                self.admin(AdminCmd::RdmaCreateCq {
                    cqn,
                    ring,
                    entries: 128,
                    db_page: self.db_page,
                    flags: 0,
                }),
                ok
            );
        }
        let mr = MrReg {
            key: RKEY,
            pd: 3,
            access: access::ALL,
            kind: mr_kind::DMA,
            ..MrReg::default()
        };
        assert_eq!(self.admin(AdminCmd::RdmaRegMr(mr)), ok);
        let mut create = qp_create(qpn, qp_type, SQ, RQ, self.db_page);
        match qp_type {
            QpType::XrcIni => create.rq_entries = 0,
            // Its XRC domain.
            QpType::XrcTgt => create.pd = 1,
            _ => {}
        }
        if self.srq != 0 {
            let srq = AdminCmd::RdmaCreateSrq {
                srqn: self.srq,
                ring: RQ,
                entries: 64,
                pd: 3,
                db_page: self.db_page,
                xrcd: 0,
                cq: 0,
            };
            assert_eq!(self.admin(srq), ok);
            create.srq = self.srq;
        }
        assert_eq!(self.admin(AdminCmd::RdmaCreateQp(create)), ok);
    }

    /// Connects the RC QP to `peer` and moves it to RTS.
    fn connect(&mut self, peer: &Side, retry: u8, rnr_retry: u8) {
        let ok = AdminStatus::Ok;
        let init = QpModify {
            mask: qp_attr::STATE | qp_attr::ACCESS,
            state: QpState::Init as u8,
            access: access::ALL,
            ..QpModify::default()
        };
        assert_eq!(self.modify(QPN, init), ok);
        let rtr = QpModify {
            mask: qp_attr::STATE
                | qp_attr::PATH
                | qp_attr::DEST_QPN
                | qp_attr::RQ_PSN
                | qp_attr::MIN_RNR_TIMER,
            state: QpState::Rtr as u8,
            path_mtu: 1024,
            dest_qpn: QPN,
            rq_psn: 100,
            min_rnr_timer: 1,
            av: AddressVector {
                dmac: peer.mac,
                dgid: peer.gid,
                ..AddressVector::default()
            },
            ..QpModify::default()
        };
        assert_eq!(self.modify(QPN, rtr), ok);
        let rts = QpModify {
            mask: qp_attr::STATE | qp_attr::SQ_PSN | qp_attr::RETRY | qp_attr::MAX_RD_ATOMIC,
            state: QpState::Rts as u8,
            sq_psn: 100,
            timeout: 14,
            retry_cnt: retry,
            rnr_retry,
            max_rd_atomic: 4,
            ..QpModify::default()
        };
        assert_eq!(self.modify(QPN, rts), ok);
    }

    fn post_send(&mut self, _qpn: u32, wqe: SqWqe) {
        let slot = u64::from(self.sq_tail % 64);
        self.mem.set(SQ + slot * SQ_WQE_LEN as u64, &wqe.to_bytes());
        self.sq_tail = self.sq_tail.wrapping_add(1);
    }

    fn ring_sq(&mut self, qpn: u32) -> Vec<Vec<u8>> {
        let value = qpn | u32::from(self.sq_tail) << 16;
        self.ring(udb::SQ, value)
    }

    fn post_recv(&mut self, qpn: u32, addr: u64, len: u32) {
        let mut wqe = RqWqe {
            num_sge: 1,
            ..RqWqe::default()
        };
        wqe.sge[0] = Sge {
            addr,
            len,
            lkey: mem::LOCAL_DMA_LKEY,
        };
        let slot = u64::from(self.rq_tail % 64);
        self.mem.set(RQ + slot * RQ_WQE_LEN as u64, &wqe.to_bytes());
        self.rq_tail = self.rq_tail.wrapping_add(1);
        // With an SRQ, `RQ` is its ring and `qpn` is not used.
        let (reg, id) = if self.srq != 0 {
            (udb::SRQ, self.srq)
        } else {
            (udb::RQ, qpn)
        };
        self.ring(reg, id | u32::from(self.rq_tail) << 16);
    }

    fn receive(&mut self, frames: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
        self.call(|e, io| {
            for f in frames {
                assert!(e.receive(&f, io));
            }
        })
        .1
    }

    fn tick(&mut self, later: Duration) -> Vec<Vec<u8>> {
        self.now += later;
        let mem = std::mem::replace(&mut self.mem, Memory::new(0));
        let mut io = Io::new(&mem, self.mac, self.now);
        self.e.tick(&mut io);
        let frames = io.frames;
        self.mem = mem;
        frames
    }

    /// New completions of a CQ.
    fn completions(&mut self, recv: bool) -> Vec<Cqe> {
        let (ring, seen) = if recv {
            (RCQ, &mut self.rcq_seen)
        } else {
            (SCQ, &mut self.scq_seen)
        };
        let mut out = Vec::new();
        loop {
            let slot = u64::from(*seen % 128);
            let raw = self.mem.get(ring + slot * CQE_LEN as u64, CQE_LEN);
            let cqe = Cqe::from_bytes(&raw.try_into().unwrap());
            let phase = (*seen / 128) % 2 == 0;
            if (cqe.flags & cqe_flag::PHASE != 0) != phase {
                break;
            }
            out.push(cqe);
            *seen += 1;
        }
        out
    }

    fn events(&self) -> Vec<Eqe> {
        (0..64)
            .map(|i| {
                Eqe::from_bytes(
                    &self
                        .mem
                        .get(EQ + i * EQE_LEN as u64, EQE_LEN)
                        .try_into()
                        .unwrap(),
                )
            })
            .filter(|e| e.flags & cqe_flag::PHASE != 0)
            .collect()
    }

    fn state(&mut self) -> QpState {
        self.e.qps[&QPN].state
    }
}

/// A QP of protection domain 3 on CQs 1 (send) and 2 (receive), with
/// rings of 64 entries at `sq` and `rq`.
fn qp_create(qpn: u32, qp_type: QpType, sq: u64, rq: u64, db_page: u32) -> QpCreate {
    QpCreate {
        qpn,
        qp_type: qp_type as u8,
        pd: 3,
        sq,
        rq,
        sq_entries: 64,
        rq_entries: 64,
        send_cq: 1,
        recv_cq: 2,
        db_page,
        srq: 0,
    }
}

fn pair() -> (Side, Side) {
    let mut a = Side::new(1);
    let mut b = Side::new(2);
    a.setup(QpType::Rc, QPN);
    b.setup(QpType::Rc, QPN);
    a.connect(&b, 7, 7);
    b.connect(&a, 7, 7);
    (a, b)
}

fn send_wqe(op: u8, addr: u64, len: u32) -> SqWqe {
    let mut w = SqWqe {
        opcode: op,
        flags: wqe_flag::SIGNALED,
        num_sge: 1,
        ..SqWqe::default()
    };
    w.sge[0] = Sge {
        addr,
        len,
        lkey: mem::LOCAL_DMA_LKEY,
    };
    w
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// Delivers frames back and forth until both sides are quiet.
fn exchange(a: &mut Side, b: &mut Side, mut to_b: Vec<Vec<u8>>) {
    for _ in 0..50 {
        let to_a = b.receive(std::mem::take(&mut to_b));
        to_b = a.receive(to_a);
        if to_b.is_empty() {
            return;
        }
    }
    panic!("no quiet");
}

/// A pair whose side A's queues belong to a process (doorbell page 3).
fn user_pair() -> (Side, Side) {
    let mut a = Side::new(1);
    let mut b = Side::new(2);
    a.db_page = 3;
    a.setup(QpType::Rc, QPN);
    b.setup(QpType::Rc, QPN);
    a.connect(&b, 7, 7);
    b.connect(&a, 7, 7);
    (a, b)
}

/// A user MR (key `USER_KEY`, PD 3) over `DATA..DATA + 8 KiB` as two
/// 4 KiB pages listed in reverse, at virtual address `USER_VA`.
const USER_KEY: u32 = 7 << 8;
const USER_VA: u64 = 0x7f00_0000_0800;
const PBL: u64 = 0x3_8000;
fn reg_user_mr(s: &mut Side) -> AdminStatus {
    let pages = [DATA + 0x1000, DATA];
    let raw: Vec<u8> = pages.iter().flat_map(|p| p.to_le_bytes()).collect();
    s.mem.set(PBL, &raw);
    s.admin(AdminCmd::RdmaRegMr(MrReg {
        key: USER_KEY,
        pd: 3,
        access: access::LOCAL_WRITE,
        kind: mr_kind::USER,
        max_pages: 2,
        page_shift: 12,
        pbl: PBL,
        iova: USER_VA,
        len: 0x1800,
    }))
}

#[test]
fn user_queues_ring_only_through_their_page() {
    let (mut a, mut b) = user_pair();
    assert_eq!(reg_user_mr(&mut a), AdminStatus::Ok);
    let data = pattern(100, 3);
    // USER_VA is 0x800 into the first listed page, DATA + 0x1000.
    a.mem.set(DATA + 0x1800, &data);
    b.post_recv(QPN, DATA, 4096);
    let mut wqe = send_wqe(wqe_op::SEND, USER_VA, 100);
    wqe.sge[0].lkey = USER_KEY;
    a.post_send(QPN, wqe);
    let value = QPN | u32::from(a.sq_tail) << 16;
    // The kernel's doorbell and another process's page do nothing.
    a.db_page = 0;
    assert!(a.ring(udb::SQ, value).is_empty());
    a.db_page = 4;
    assert!(a.ring(udb::SQ, value).is_empty());
    a.db_page = 0;
    assert!(a.ring(udb::CQ_ARM, 1 | arm::NEXT << 16).is_empty());
    assert_eq!(a.e.stats.refused_doorbells, 3);
    assert_eq!(a.e.counters().refused_doorbells, 3);
    // Its own page sends.
    a.db_page = 3;
    let frames = a.ring(udb::SQ, value);
    assert_eq!(frames.len(), 1);
    exchange(&mut a, &mut b, frames);
    assert_eq!(b.mem.get(DATA, 100), data);
    assert_eq!(a.completions(false)[0].status, wc_status::SUCCESS);
    // A page no process holds, and page 0 through the user BAR.
    let mem = Memory::new(0);
    let mut io = Io::new(&mem, a.mac, a.now);
    a.e.user_doorbell(0, udb::SQ, value, &mut io);
    a.e.user_doorbell(udb::PAGES, udb::SQ, value, &mut io);
    assert_eq!(a.e.stats.refused_doorbells, 5);
}

#[test]
fn a_user_qp_reset_and_reconnected_rings_through_its_page_again() {
    let (mut a, mut b) = user_pair();
    let to_reset = |s: &mut Side| {
        let reset = QpModify {
            mask: qp_attr::STATE,
            state: QpState::Reset as u8,
            ..QpModify::default()
        };
        assert_eq!(s.modify(QPN, reset), AdminStatus::Ok);
        s.sq_tail = 0;
        s.rq_tail = 0;
    };
    to_reset(&mut a);
    to_reset(&mut b);
    a.connect(&b, 7, 7);
    b.connect(&a, 7, 7);
    assert_eq!(reg_user_mr(&mut a), AdminStatus::Ok);
    let data = pattern(100, 5);
    a.mem.set(DATA + 0x1800, &data);
    b.post_recv(QPN, DATA, 4096);
    let mut wqe = send_wqe(wqe_op::SEND, USER_VA, 100);
    wqe.sge[0].lkey = USER_KEY;
    a.post_send(QPN, wqe);
    let frames = a.ring_sq(QPN);
    assert_eq!(frames.len(), 1, "the page still owns the QP after RESET");
    assert_eq!(a.e.stats.refused_doorbells, 0);
    exchange(&mut a, &mut b, frames);
    assert_eq!(b.mem.get(DATA, 100), data);
    assert_eq!(a.completions(false)[0].status, wc_status::SUCCESS);
}

#[test]
fn user_qps_may_not_use_the_local_dma_key_nor_map_memory() {
    let (mut a, _b) = user_pair();
    a.post_send(QPN, send_wqe(wqe_op::SEND, DATA, 100));
    assert!(a.ring_sq(QPN).is_empty());
    let cqe = a.completions(false)[0];
    assert_eq!(cqe.status, wc_status::LOC_PROT_ERR);
    // It maps no memory; it invalidates only its memory windows.
    let (mut a, _b) = user_pair();
    a.post_send(QPN, send_wqe(wqe_op::REG_MR, 0, 0));
    assert!(a.ring_sq(QPN).is_empty());
    assert_eq!(a.completions(false)[0].status, wc_status::LOC_QP_OP_ERR);
    let (mut a, _b) = user_pair();
    let mut inv = send_wqe(wqe_op::LOCAL_INV, 0, 0);
    inv.imm_or_key = RKEY;
    a.post_send(QPN, inv);
    assert!(a.ring_sq(QPN).is_empty());
    assert_eq!(a.completions(false)[0].status, wc_status::LOC_PROT_ERR);
    // Its receive buffers cannot use it either: the QP fails.
    let (mut a, mut b) = user_pair();
    a.post_recv(QPN, DATA, 4096);
    b.post_send(QPN, send_wqe(wqe_op::SEND, DATA, 100));
    let frames = b.ring_sq(QPN);
    exchange(&mut b, &mut a, frames);
    assert_ne!(a.completions(true)[0].status, wc_status::SUCCESS);
    // A user QP needs CQs of its own page.
    let mut c = Side::new(3);
    c.setup(QpType::Rc, QPN);
    let create = qp_create(QPN + 1, QpType::Rc, SQ, RQ, 5);
    assert_eq!(
        c.admin(AdminCmd::RdmaCreateQp(create)),
        AdminStatus::BadParam
    );
}

#[test]
fn user_mrs_map_their_page_list() {
    let mut a = Side::new(1);
    assert_eq!(reg_user_mr(&mut a), AdminStatus::Ok);
    let segs = a.e.mrs.resolve(USER_KEY, 3, USER_VA + 0x700, 0x200, 0);
    assert_eq!(segs, Ok(vec![(DATA + 0x1f00, 0x100), (DATA, 0x100)]));
    let past = a.e.mrs.resolve(USER_KEY, 3, USER_VA + 0x1700, 0x200, 0);
    assert_eq!(past, Err(mem::AccessError::OutOfBounds));
    assert_eq!(
        a.e.mrs.resolve(USER_KEY, 4, USER_VA, 1, 0),
        Err(mem::AccessError::WrongPd)
    );
    // A list too short for the length, a misaligned page, no list.
    let mut bad = MrReg {
        key: 8 << 8,
        pd: 3,
        kind: mr_kind::USER,
        max_pages: 2,
        page_shift: 12,
        pbl: PBL,
        iova: USER_VA,
        len: 0x1801,
        ..MrReg::default()
    };
    assert_eq!(a.admin(AdminCmd::RdmaRegMr(bad)), AdminStatus::BadParam);
    a.mem.set(PBL, &(DATA + 8).to_le_bytes());
    bad.len = 0x100;
    assert_eq!(a.admin(AdminCmd::RdmaRegMr(bad)), AdminStatus::BadParam);
    bad.max_pages = 0;
    assert_eq!(a.admin(AdminCmd::RdmaRegMr(bad)), AdminStatus::BadParam);
}

#[test]
fn on_demand_regions_are_mapped_and_unmapped_by_command() {
    let mut a = Side::new(1);
    let reg = MrReg {
        key: USER_KEY,
        pd: 3,
        access: access::LOCAL_WRITE,
        kind: mr_kind::ODP,
        max_pages: 2,
        page_shift: 12,
        iova: USER_VA,
        len: 0x1800,
        ..MrReg::default()
    };
    assert_eq!(a.admin(AdminCmd::RdmaRegMr(reg)), AdminStatus::Ok);
    let fault = Err(mem::AccessError::PageFault {
        key: USER_KEY,
        page: 1,
        write: false,
    });
    assert_eq!(a.e.mrs.resolve(USER_KEY, 3, USER_VA + 0x800, 8, 0), fault);
    // Page 1 from the list in memory, writable.
    let pte = DATA | odp_pte::VALID | odp_pte::WRITE;
    a.mem.set(PBL, &pte.to_le_bytes());
    let map = |count, pbl| AdminCmd::RdmaOdpMap {
        key: USER_KEY,
        first: 1,
        count,
        pbl,
    };
    // No pages, too many, a misaligned list: refused.
    for bad in [
        map(0, PBL),
        map(MAX_ODP_MAP_PAGES + 1, PBL),
        map(1, PBL + 4),
    ] {
        assert_eq!(a.admin(bad), AdminStatus::BadParam);
    }
    assert_eq!(a.admin(map(1, PBL)), AdminStatus::Ok);
    assert_eq!(
        a.e.mrs
            .resolve(USER_KEY, 3, USER_VA + 0x800, 8, access::LOCAL_WRITE),
        Ok(vec![(DATA, 8)])
    );
    let unmap = AdminCmd::RdmaOdpUnmap {
        key: USER_KEY,
        first: 1,
        count: 1,
    };
    assert_eq!(a.admin(unmap), AdminStatus::Ok);
    assert_eq!(a.e.mrs.resolve(USER_KEY, 3, USER_VA + 0x800, 8, 0), fault);
}

/// An on-demand region (key `USER_KEY`, PD 3, all rights) of 3 pages
/// at `USER_VA`, nothing translated.
fn reg_odp_mr(s: &mut Side) {
    let reg = MrReg {
        key: USER_KEY,
        pd: 3,
        access: access::LOCAL_WRITE | access::REMOTE_READ | access::REMOTE_WRITE,
        kind: mr_kind::ODP,
        max_pages: 3,
        page_shift: 12,
        iova: USER_VA,
        len: 0x2800,
        ..MrReg::default()
    };
    assert_eq!(s.admin(AdminCmd::RdmaRegMr(reg)), AdminStatus::Ok);
}

/// Maps pages `first..first + n` of the on-demand region to
/// `DATA + 0x1000 * page`, writable; or, with `flags` 0, answers that
/// they cannot be mapped.
fn odp_map(s: &mut Side, first: u32, n: u32, flags: u64) -> AdminStatus {
    let ptes: Vec<u8> = (first..first + n)
        .flat_map(|p| {
            let pte = if flags == 0 {
                odp_pte::ERROR
            } else {
                (DATA + 0x1000 * u64::from(p)) | flags
            };
            pte.to_le_bytes()
        })
        .collect();
    s.mem.set(PBL, &ptes);
    s.admin(AdminCmd::RdmaOdpMap {
        key: USER_KEY,
        first,
        count: n,
        pbl: PBL,
    })
}

/// Maps page `page` of the on-demand region to bus address `bus` with
/// `flags`; the command's status and the frames it restarted.
fn odp_map_page(s: &mut Side, page: u32, bus: u64, flags: u64) -> (AdminStatus, Vec<Vec<u8>>) {
    s.mem.set(PBL, &(bus | flags).to_le_bytes());
    s.admin_frames(AdminCmd::RdmaOdpMap {
        key: USER_KEY,
        first: page,
        count: 1,
        pbl: PBL,
    })
}

fn page_faults(s: &Side) -> Vec<(u32, u32, u32)> {
    s.events()
        .iter()
        .filter(|e| e.kind == eqe_type::PAGE_FAULT)
        .map(|e| (e.id, e.page, e.write))
        .collect()
}

#[test]
fn a_write_to_untranslated_pages_is_rnr_naked_until_the_driver_maps_them() {
    let (mut a, mut b) = pair();
    reg_odp_mr(&mut b);
    let data = pattern(3000, 9);
    a.mem.set(DATA, &data);
    // 3000 bytes from 0x100 into the region: pages 0 and 1.
    let mut w = send_wqe(wqe_op::WRITE, DATA, 3000);
    w.remote_addr = USER_VA + 0x100;
    w.rkey = USER_KEY;
    a.post_send(QPN, w);
    let frames = a.ring_sq(QPN);
    exchange(&mut a, &mut b, frames);
    // Nothing written; one event for the first page missing, however
    // many packets asked (the first RNR NAKed, and again once the
    // sequence NAK for the second had it sent again).
    assert!(b.e.qps[&QPN].counters.rnr_naks_sent >= 1);
    assert_eq!(page_faults(&b), [(USER_KEY, 0, 1)]);
    assert!(a.completions(false).is_empty());
    let again = a.tick(Duration::from_millis(2));
    exchange(&mut a, &mut b, again);
    assert_eq!(page_faults(&b), [(USER_KEY, 0, 1)]);
    // Page 0 mapped: the next try faults on page 1.
    assert_eq!(
        odp_map(&mut b, 0, 1, odp_pte::VALID | odp_pte::WRITE),
        AdminStatus::Ok
    );
    let again = a.tick(Duration::from_millis(2));
    exchange(&mut a, &mut b, again);
    assert_eq!(page_faults(&b), [(USER_KEY, 0, 1), (USER_KEY, 1, 1)]);
    assert_eq!(
        odp_map(&mut b, 1, 1, odp_pte::VALID | odp_pte::WRITE),
        AdminStatus::Ok
    );
    let again = a.tick(Duration::from_millis(2));
    exchange(&mut a, &mut b, again);
    // USER_VA is 0x800 into page 0.
    assert_eq!(b.mem.get(DATA + 0x900, 3000), data);
    assert_eq!(a.completions(false)[0].status, wc_status::SUCCESS);
}

#[test]
fn a_page_taken_back_between_packets_is_not_written() {
    let (mut a, mut b) = pair();
    reg_odp_mr(&mut b);
    assert_eq!(
        odp_map(&mut b, 0, 3, odp_pte::VALID | odp_pte::WRITE),
        AdminStatus::Ok
    );
    let data = pattern(3000, 4);
    a.mem.set(DATA, &data);
    let mut w = send_wqe(wqe_op::WRITE, DATA, 3000);
    w.remote_addr = USER_VA;
    w.rkey = USER_KEY;
    a.post_send(QPN, w);
    let frames = a.ring_sq(QPN);
    assert_eq!(frames.len(), 3);
    // The first packet lands; then the driver takes page 1 back (the
    // process unmapped it): the second packet, whose bytes go to page 1,
    // must not be written where page 1 was.
    let mut frames = frames.into_iter();
    b.receive(vec![frames.next().unwrap()]);
    let unmap = AdminCmd::RdmaOdpUnmap {
        key: USER_KEY,
        first: 1,
        count: 1,
    };
    assert_eq!(b.admin(unmap), AdminStatus::Ok);
    let answer = b.receive(frames.collect());
    assert_eq!(b.mem.get(DATA + 0x800, 1024), data[..1024]);
    assert_eq!(b.mem.get(DATA + 0x1000, 0x1000), vec![0; 0x1000]);
    assert_eq!(page_faults(&b), [(USER_KEY, 1, 1)]);
    // Mapped again elsewhere: the rest lands there.
    a.receive(answer);
    let rw = odp_pte::VALID | odp_pte::WRITE;
    assert_eq!(
        odp_map_page(&mut b, 1, DATA + 0x5000, rw).0,
        AdminStatus::Ok
    );
    let again = a.tick(Duration::from_millis(2));
    exchange(&mut a, &mut b, again);
    assert_eq!(b.mem.get(DATA + 0x800, 0x800), data[..0x800]);
    assert_eq!(b.mem.get(DATA + 0x5000, 3000 - 0x800), data[0x800..]);
    assert_eq!(a.completions(false)[0].status, wc_status::SUCCESS);
}

#[test]
fn a_send_from_untranslated_pages_waits_for_the_driver() {
    let (mut a, mut b) = pair();
    reg_odp_mr(&mut a);
    b.post_recv(QPN, REMOTE, 4096);
    let mut w = send_wqe(wqe_op::SEND, USER_VA, 100);
    w.sge[0].lkey = USER_KEY;
    a.post_send(QPN, w);
    // Held: nothing sent, one event (a read of page 0).
    assert!(a.ring_sq(QPN).is_empty());
    assert_eq!(page_faults(&a), [(USER_KEY, 0, 0)]);
    // A doorbell or a timer tick while held sends nothing; a fault the
    // driver leaves unanswered 100 ms is raised again (the event may
    // have been lost), not before.
    assert!(a.ring_sq(QPN).is_empty());
    assert!(a.tick(Duration::from_millis(50)).is_empty());
    assert_eq!(page_faults(&a).len(), 1);
    assert!(a.tick(Duration::from_millis(60)).is_empty());
    assert_eq!(page_faults(&a), [(USER_KEY, 0, 0), (USER_KEY, 0, 0)]);
    let data = pattern(100, 5);
    a.mem.set(DATA + 0x800, &data);
    // Mapping the page starts the held WQE.
    let (status, frames) = odp_map_page(&mut a, 0, DATA, odp_pte::VALID);
    assert_eq!(status, AdminStatus::Ok);
    assert_eq!(frames.len(), 1);
    exchange(&mut a, &mut b, frames);
    assert_eq!(b.mem.get(REMOTE, 100), data);
    assert_eq!(a.completions(false)[0].status, wc_status::SUCCESS);
}

#[test]
fn a_read_response_for_a_page_taken_back_is_asked_for_again() {
    let (mut a, mut b) = pair();
    reg_odp_mr(&mut a);
    assert_eq!(
        odp_map(&mut a, 0, 1, odp_pte::VALID | odp_pte::WRITE),
        AdminStatus::Ok
    );
    let data = pattern(64, 8);
    b.mem.set(REMOTE, &data);
    let mut r = send_wqe(wqe_op::READ, USER_VA, 64);
    r.sge[0].lkey = USER_KEY;
    r.remote_addr = REMOTE;
    r.rkey = RKEY;
    a.post_send(QPN, r);
    let request = a.ring_sq(QPN);
    let response = b.receive(request);
    // The driver takes page 0 back before the response arrives: it is
    // dropped, not written where the page was.
    let unmap = AdminCmd::RdmaOdpUnmap {
        key: USER_KEY,
        first: 0,
        count: 1,
    };
    assert_eq!(a.admin(unmap), AdminStatus::Ok);
    assert!(a.receive(response).is_empty());
    assert_eq!(a.mem.get(DATA + 0x800, 64), vec![0; 64]);
    assert_eq!(page_faults(&a), [(USER_KEY, 0, 1)]);
    assert!(a.completions(false).is_empty());
    // Mapped elsewhere: asked again, it lands there.
    let rw = odp_pte::VALID | odp_pte::WRITE;
    let (status, again) = odp_map_page(&mut a, 0, DATA + 0x6000, rw);
    assert_eq!(status, AdminStatus::Ok);
    assert_eq!(again.len(), 1);
    exchange(&mut a, &mut b, again);
    assert_eq!(a.mem.get(DATA + 0x6800, 64), data);
    assert_eq!(a.completions(false)[0].status, wc_status::SUCCESS);
}

#[test]
fn a_read_into_a_page_the_driver_cannot_map_fails_and_touches_nothing() {
    let (mut a, b) = pair();
    reg_odp_mr(&mut a);
    b.mem.set(REMOTE, &pattern(64, 1));
    let mut r = send_wqe(wqe_op::READ, USER_VA, 64);
    r.sge[0].lkey = USER_KEY;
    r.remote_addr = REMOTE;
    r.rkey = RKEY;
    a.post_send(QPN, r);
    assert!(a.ring_sq(QPN).is_empty());
    assert_eq!(page_faults(&a), [(USER_KEY, 0, 1)]);
    // The process has no memory there: the READ fails, the QP with it.
    assert_eq!(odp_map(&mut a, 0, 1, 0), AdminStatus::Ok);
    let sc = a.completions(false);
    assert_eq!(sc[0].status, wc_status::LOC_PROT_ERR);
    assert_eq!(a.state(), QpState::Err);
    assert_eq!(a.mem.get(DATA, 0x3000), vec![0; 0x3000]);
}

#[test]
fn rc_between_two_qps_of_one_engine_loops_back() {
    let mut a = Side::new(1);
    a.setup(QpType::Rc, QPN);
    // A second QP on the same engine and CQs, rings after the first's.
    let create = qp_create(QPN + 1, QpType::Rc, SQ + 0x4000, RQ + 0x4000, 0);
    assert_eq!(a.admin(AdminCmd::RdmaCreateQp(create)), AdminStatus::Ok);
    for (qpn, dest) in [(QPN, QPN + 1), (QPN + 1, QPN)] {
        for m in [
            QpModify {
                mask: qp_attr::STATE | qp_attr::ACCESS,
                state: QpState::Init as u8,
                access: access::ALL,
                ..QpModify::default()
            },
            QpModify {
                mask: qp_attr::STATE | qp_attr::PATH | qp_attr::DEST_QPN | qp_attr::RQ_PSN,
                state: QpState::Rtr as u8,
                path_mtu: 1024,
                dest_qpn: dest,
                av: AddressVector {
                    dmac: a.mac,
                    dgid: a.gid,
                    ..AddressVector::default()
                },
                ..QpModify::default()
            },
            QpModify {
                mask: qp_attr::STATE | qp_attr::SQ_PSN,
                state: QpState::Rts as u8,
                ..QpModify::default()
            },
        ] {
            assert_eq!(a.modify(qpn, m), AdminStatus::Ok);
        }
    }
    // A receive on the second QP, a 3000-byte SEND from the first.
    let mut recv = RqWqe {
        num_sge: 1,
        ..RqWqe::default()
    };
    recv.sge[0] = Sge {
        addr: DATA + 0x8000,
        len: 4096,
        lkey: mem::LOCAL_DMA_LKEY,
    };
    a.mem.set(RQ + 0x4000, &recv.to_bytes());
    let data = pattern(3000, 7);
    a.mem.set(DATA, &data);
    a.post_send(QPN, send_wqe(wqe_op::SEND, DATA, 3000));
    let mem = std::mem::replace(&mut a.mem, Memory::new(0));
    let mut io = Io::new(&mem, a.mac, a.now);
    a.e.doorbell(db::RQ, (QPN + 1) | 1 << 16, &mut io);
    a.e.doorbell(db::SQ, QPN | u32::from(a.sq_tail) << 16, &mut io);
    assert_eq!(io.frames.len(), 3, "three packets of the SEND");
    a.e.loop_back(&mut io);
    // Nothing left for the wire: data, then the ACK, looped back.
    assert!(io.frames.is_empty());
    a.mem = mem;
    assert_eq!(a.mem.get(DATA + 0x8000, 3000), data);
    let sent = a.completions(false);
    let received = a.completions(true);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].status, wc_status::SUCCESS);
    assert_eq!((received[0].qpn, received[0].byte_len), (QPN + 1, 3000));
    // Frames for another MAC stay for the wire.
    let mut other = Io::new(&a.mem, a.mac, a.now);
    other.frames.push(vec![2, 0, 0, 0, 0, 9, 1, 2, 3]);
    a.e.loop_back(&mut other);
    assert_eq!(other.frames.len(), 1);
}

#[test]
fn caps_and_gids() {
    let mut a = Side::new(1);
    let mut entry = AdminCmd::RdmaQueryCaps.to_bytes();
    let mut io = Io::new(&a.mem, a.mac, a.now);
    assert_eq!(
        a.e.execute(AdminCmd::RdmaQueryCaps, &mut entry, &mut io),
        AdminStatus::Ok
    );
    // A card without device memory does not offer it.
    let mut caps = CAPS;
    caps.flags &= !rdma_cap::DEVICE_MEMORY;
    assert_eq!(RdmaCaps::read_result(&entry), caps);
    let g = Gid::from_ipv4([10, 99, 0, 1]);
    assert_eq!(
        a.admin(AdminCmd::RdmaSetGid { index: 3, gid: g }),
        AdminStatus::Ok
    );
    let far = AdminCmd::RdmaSetGid {
        index: u32::from(GID_TABLE_LEN),
        gid: g,
    };
    assert_eq!(a.admin(far), AdminStatus::BadParam);
    assert_eq!(a.e.describe_gids(), "gids=1 3=10.99.0.1");
    assert_eq!(a.admin(AdminCmd::RdmaDelGid { index: 3 }), AdminStatus::Ok);
    assert_eq!(
        a.admin(AdminCmd::RdmaDelGid { index: 3 }),
        AdminStatus::NotFound
    );
    assert!(!a.e.owns(&g));
}

#[test]
fn rc_send_of_three_packets() {
    let (mut a, mut b) = pair();
    let data = pattern(3000, 1);
    a.mem.set(DATA, &data);
    b.post_recv(QPN, DATA, 4096);
    a.post_send(QPN, send_wqe(wqe_op::SEND, DATA, 3000));
    let frames = a.ring_sq(QPN);
    assert_eq!(frames.len(), 3);
    // Every frame decodes as RoCEv2 with a correct ICRC.
    for f in &frames {
        assert!(packet::parse(f).is_ok());
    }
    exchange(&mut a, &mut b, frames);
    assert_eq!(b.mem.get(DATA, 3000), data);
    let r = b.completions(true);
    assert_eq!(r.len(), 1);
    assert_eq!(
        (r[0].status, r[0].opcode, r[0].byte_len),
        (0, wc_op::RECV, 3000)
    );
    let s = a.completions(false);
    assert_eq!(s.len(), 1);
    assert_eq!(
        (s[0].status, s[0].opcode),
        (wc_status::SUCCESS, wc_op::SEND)
    );
}

#[test]
fn write_with_immediate_then_read_back() {
    let (mut a, mut b) = pair();
    let data = pattern(5000, 7);
    a.mem.set(DATA, &data);
    b.post_recv(QPN, DATA, 16);
    let mut w = send_wqe(wqe_op::WRITE_IMM, DATA, 5000);
    w.remote_addr = REMOTE;
    w.rkey = RKEY;
    w.imm_or_key = 0x1234_5678;
    a.post_send(QPN, w);
    let mut r = send_wqe(wqe_op::READ, DATA + 0x4000, 5000);
    r.remote_addr = REMOTE;
    r.rkey = RKEY;
    a.post_send(QPN, r);
    let frames = a.ring_sq(QPN);
    exchange(&mut a, &mut b, frames);
    assert_eq!(b.mem.get(REMOTE, 5000), data);
    let rc = b.completions(true);
    assert_eq!(rc.len(), 1);
    assert_eq!(rc[0].opcode, wc_op::RECV_RDMA_WITH_IMM);
    assert_eq!((rc[0].imm_or_key, rc[0].byte_len), (0x1234_5678, 5000));
    assert_ne!(rc[0].flags & cqe_flag::WITH_IMM, 0);
    assert_eq!(a.mem.get(DATA + 0x4000, 5000), data);
    let sc = a.completions(false);
    let ops: Vec<_> = sc.iter().map(|c| (c.opcode, c.status)).collect();
    assert_eq!(ops, [(wc_op::RDMA_WRITE, 0), (wc_op::RDMA_READ, 0)]);
    assert_eq!(sc[1].byte_len, 5000);
}

#[test]
fn device_memory_is_written_and_read_by_the_peer_and_bounded() {
    let (mut a, mut b) = pair();
    let dm = Arc::new(crate::device_memory::DeviceMemory::new().unwrap());
    b.e.set_device_memory(Arc::clone(&dm));
    let ((status, _), entry) = b.admin_entry(AdminCmd::RdmaAllocDm { len: 6000 });
    assert_eq!(status, AdminStatus::Ok);
    let offset = crate::hw::RdmaDmAllocated::read_result(&entry).offset;
    let dm_key = 9 << 8;
    let mut reg = MrReg {
        key: dm_key,
        pd: 3,
        access: access::ALL,
        kind: mr_kind::DEVICE,
        pbl: offset,
        len: 8192,
        ..MrReg::default()
    };
    // Past its allocation (two pages), or not zero-based: refused.
    reg.len = 8193;
    assert_eq!(b.admin(AdminCmd::RdmaRegMr(reg)), AdminStatus::BadParam);
    reg.len = 8192;
    reg.iova = 4;
    assert_eq!(b.admin(AdminCmd::RdmaRegMr(reg)), AdminStatus::BadParam);
    reg.iova = 0;
    assert_eq!(b.admin(AdminCmd::RdmaRegMr(reg)), AdminStatus::Ok);
    // A writes 5000 bytes at offset 100 of the MR and reads them back.
    let data = pattern(5000, 3);
    a.mem.set(DATA, &data);
    let mut w = send_wqe(wqe_op::WRITE, DATA, 5000);
    w.remote_addr = 100;
    w.rkey = dm_key;
    a.post_send(QPN, w);
    let mut r = send_wqe(wqe_op::READ, DATA + 0x4000, 5000);
    r.remote_addr = 100;
    r.rkey = dm_key;
    a.post_send(QPN, r);
    // Past the MR's end: a remote access error, nothing written.
    let mut past = send_wqe(wqe_op::WRITE, DATA, 100);
    past.remote_addr = 8100;
    past.rkey = dm_key;
    a.post_send(QPN, past);
    let frames = a.ring_sq(QPN);
    exchange(&mut a, &mut b, frames);
    let mut got = vec![0u8; 5000];
    dm.read(offset + 100, &mut got).unwrap();
    assert_eq!(got, data, "in the card's memory");
    assert_eq!(b.mem.get(REMOTE, 16), vec![0; 16], "not in host memory");
    assert_eq!(a.mem.get(DATA + 0x4000, 5000), data, "read back");
    let sc = a.completions(false);
    let ops: Vec<_> = sc.iter().map(|c| (c.opcode, c.status)).collect();
    assert_eq!(ops[..2], [(wc_op::RDMA_WRITE, 0), (wc_op::RDMA_READ, 0)]);
    assert_eq!(sc[2].status, wc_status::REM_ACCESS_ERR);
    let mut tail = [0u8; 92];
    dm.read(offset + 8100, &mut tail).unwrap();
    assert_eq!(tail, [0u8; 92]);
    // The allocation cannot go while the MR uses it.
    let free = AdminCmd::RdmaFreeDm { offset };
    assert_eq!(b.admin(free), AdminStatus::BadState);
    assert_eq!(
        b.admin(AdminCmd::RdmaDeregMr { key: dm_key }),
        AdminStatus::Ok
    );
    assert_eq!(b.admin(free), AdminStatus::Ok);
    assert_eq!(b.admin(free), AdminStatus::NotFound);
    let too_big = AdminCmd::RdmaAllocDm {
        len: crate::hw::rdma::dm::SIZE as u64 + 1,
    };
    assert_eq!(b.admin(too_big), AdminStatus::BadParam);
}

#[test]
fn inline_send_and_write_carry_the_wqe_s_bytes_not_memory() {
    let (mut a, mut b) = pair();
    // Memory behind the (unused) gather list holds something else: the
    // card must not read it.
    a.mem.set(DATA, &[0xee; 64]);
    b.post_recv(QPN, DATA, 4096);
    let data = pattern(crate::hw::rdma::MAX_INLINE_DATA, 9);
    let mut s = send_wqe(wqe_op::SEND, DATA, 64);
    s.set_inline_data(&data);
    a.post_send(QPN, s);
    let mut w = send_wqe(wqe_op::WRITE, DATA, 64);
    w.set_inline_data(&data[..13]);
    w.remote_addr = REMOTE;
    w.rkey = RKEY;
    a.post_send(QPN, w);
    let frames = a.ring_sq(QPN);
    exchange(&mut a, &mut b, frames);
    assert_eq!(b.mem.get(DATA, 64), data);
    assert_eq!(b.mem.get(REMOTE, 13), &data[..13]);
    let r = b.completions(true);
    assert_eq!((r[0].status, r[0].byte_len), (0, 64));
    let sc: Vec<_> = a
        .completions(false)
        .iter()
        .map(|c| (c.opcode, c.status))
        .collect();
    assert_eq!(sc, [(wc_op::SEND, 0), (wc_op::RDMA_WRITE, 0)]);
}

#[test]
fn inline_read_or_oversized_inline_is_refused() {
    let (mut a, _b) = pair();
    let mut w = send_wqe(wqe_op::SEND, DATA, 8);
    w.set_inline_data(&[1; 8]);
    w.inline_len = 65;
    a.post_send(QPN, w);
    assert!(a.ring_sq(QPN).is_empty());
    assert_eq!(a.completions(false)[0].status, wc_status::LOC_LEN_ERR);
    let (mut a, _b) = pair();
    let mut r = send_wqe(wqe_op::READ, DATA, 8);
    r.set_inline_data(&[1; 8]);
    r.remote_addr = REMOTE;
    r.rkey = RKEY;
    a.post_send(QPN, r);
    assert!(a.ring_sq(QPN).is_empty());
    assert_eq!(a.completions(false)[0].status, wc_status::LOC_QP_OP_ERR);
}

fn atomic_wqe(op: u8, to: u64, compare_add: u64, swap: u64, result: u64) -> SqWqe {
    let mut w = send_wqe(op, result, 8);
    w.remote_addr = to;
    w.rkey = RKEY;
    w.set_atomic(&AtomicParams { compare_add, swap });
    w
}

fn u64_at(s: &Side, addr: u64) -> u64 {
    u64::from_le_bytes(s.mem.get(addr, 8).try_into().unwrap())
}

#[test]
fn atomics_return_the_old_value_and_compare_before_swapping() {
    let (mut a, mut b) = pair();
    b.mem.set(REMOTE, &5u64.to_le_bytes());
    a.post_send(QPN, atomic_wqe(wqe_op::FETCH_ADD, REMOTE, 3, 0, DATA));
    a.post_send(QPN, atomic_wqe(wqe_op::CMP_SWAP, REMOTE, 8, 100, DATA + 8));
    a.post_send(QPN, atomic_wqe(wqe_op::CMP_SWAP, REMOTE, 7, 1, DATA + 16));
    let frames = a.ring_sq(QPN);
    let req = packet::parse(&frames[0]).unwrap();
    let req = wire::Packet::parse(req.transport).unwrap();
    assert_eq!(req.opcode, wire::Opcode::RcFetchAdd);
    let eth = req.atomic.unwrap();
    assert_eq!((eth.va, eth.rkey, eth.swap_add), (REMOTE, RKEY, 3));
    exchange(&mut a, &mut b, frames);
    assert_eq!(u64_at(&b, REMOTE), 100);
    assert_eq!((u64_at(&a, DATA), u64_at(&a, DATA + 8)), (5, 8));
    assert_eq!(u64_at(&a, DATA + 16), 100);
    let sc = a.completions(false);
    let ops: Vec<_> = sc
        .iter()
        .map(|c| (c.opcode, c.status, c.byte_len))
        .collect();
    assert_eq!(
        ops,
        [
            (wc_op::FETCH_ADD, 0, 8),
            (wc_op::COMP_SWAP, 0, 8),
            (wc_op::COMP_SWAP, 0, 8)
        ]
    );
}

#[test]
fn a_retried_atomic_is_answered_again_not_run_again() {
    let (mut a, mut b) = pair();
    b.mem.set(REMOTE, &40u64.to_le_bytes());
    a.post_send(QPN, atomic_wqe(wqe_op::FETCH_ADD, REMOTE, 2, 0, DATA));
    let request = a.ring_sq(QPN);
    let lost = b.receive(request);
    assert_eq!(lost.len(), 1);
    assert_eq!(u64_at(&b, REMOTE), 42);
    let resent = a.tick(Duration::from_millis(100));
    assert_eq!(resent.len(), 1);
    exchange(&mut a, &mut b, resent);
    assert_eq!(u64_at(&b, REMOTE), 42);
    assert_eq!(u64_at(&a, DATA), 40);
    let sc = a.completions(false);
    assert_eq!(sc.len(), 1);
    assert_eq!(
        (sc[0].opcode, sc[0].status),
        (wc_op::FETCH_ADD, wc_status::SUCCESS)
    );
    assert_eq!(b.e.qps[&QPN].counters.duplicates, 1);
}

#[test]
fn a_misaligned_or_unpermitted_atomic_is_refused() {
    let (mut a, mut b) = pair();
    b.mem.set(REMOTE, &9u64.to_le_bytes());
    a.post_send(QPN, atomic_wqe(wqe_op::FETCH_ADD, REMOTE + 4, 1, 0, DATA));
    let frames = a.ring_sq(QPN);
    exchange(&mut a, &mut b, frames);
    let sc = a.completions(false);
    assert_eq!(sc[0].status, wc_status::REM_INV_REQ_ERR);
    assert_eq!(u64_at(&b, REMOTE), 9);

    // The target QP without remote-atomic access.
    let (mut a, mut b) = pair();
    let only_rw = QpModify {
        mask: qp_attr::ACCESS,
        access: access::ALL & !access::REMOTE_ATOMIC,
        ..QpModify::default()
    };
    assert_eq!(b.modify(QPN, only_rw), AdminStatus::Ok);
    b.mem.set(REMOTE, &9u64.to_le_bytes());
    a.post_send(QPN, atomic_wqe(wqe_op::CMP_SWAP, REMOTE, 9, 1, DATA));
    let frames = a.ring_sq(QPN);
    exchange(&mut a, &mut b, frames);
    let sc = a.completions(false);
    assert_eq!(sc[0].status, wc_status::REM_ACCESS_ERR);
    assert_eq!(u64_at(&b, REMOTE), 9);
}

fn flush_wqe(to: u64, len: u64, placement: u8, level: u8) -> SqWqe {
    let mut w = SqWqe {
        opcode: wqe_op::FLUSH,
        flags: wqe_flag::SIGNALED,
        remote_addr: to,
        rkey: RKEY,
        ..SqWqe::default()
    };
    w.set_flush(&FlushParams {
        len,
        placement,
        level,
    });
    w
}

fn atomic_write_wqe(to: u64, value: [u8; 8]) -> SqWqe {
    let mut w = SqWqe {
        opcode: wqe_op::ATOMIC_WRITE,
        flags: wqe_flag::SIGNALED,
        remote_addr: to,
        rkey: RKEY,
        ..SqWqe::default()
    };
    w.set_atomic_write(&AtomicWriteParams { value });
    w
}

/// The opcodes of `frames` and whether each carries payload.
fn opcodes(frames: &[Vec<u8>]) -> Vec<(wire::Opcode, bool)> {
    frames
        .iter()
        .map(|f| {
            let p = packet::parse(f).unwrap();
            let p = wire::Packet::parse(p.transport).unwrap();
            (p.opcode, !p.payload.is_empty())
        })
        .collect()
}

#[test]
fn flush_and_atomic_write_are_answered_by_empty_read_responses() {
    let (mut a, mut b) = pair();
    a.mem.set(DATA, &pattern(64, 3));
    let mut write = send_wqe(wqe_op::WRITE, DATA, 64);
    write.remote_addr = REMOTE;
    write.rkey = RKEY;
    a.post_send(QPN, write);
    a.post_send(QPN, flush_wqe(REMOTE, 64, flush::GLOBAL, flush::RANGE));
    a.post_send(QPN, atomic_write_wqe(REMOTE + 64, *b"atomic!!"));
    // The whole region: address and length are not looked at.
    a.post_send(
        QPN,
        flush_wqe(0, u64::from(u32::MAX), flush::GLOBAL, flush::MR),
    );
    let requests = a.ring_sq(QPN);
    use wire::Opcode::*;
    assert_eq!(
        opcodes(&requests),
        [
            (RcWriteOnly, true),
            (RcFlush, false),
            (RcAtomicWrite, true),
            (RcFlush, false)
        ]
    );
    let answers = b.receive(requests);
    assert_eq!(
        opcodes(&answers),
        [
            (RcAck, false),
            (RcReadResponseOnly, false),
            (RcReadResponseOnly, false),
            (RcReadResponseOnly, false)
        ]
    );
    assert_eq!(a.receive(answers), Vec::<Vec<u8>>::new());
    assert_eq!(b.mem.get(REMOTE, 64), pattern(64, 3));
    assert_eq!(b.mem.get(REMOTE + 64, 8), b"atomic!!");
    let sc = a.completions(false);
    let ops: Vec<_> = sc
        .iter()
        .map(|c| (c.opcode, c.status, c.byte_len))
        .collect();
    assert_eq!(
        ops,
        [
            (wc_op::RDMA_WRITE, 0, 64),
            (wc_op::FLUSH, 0, 0),
            (wc_op::ATOMIC_WRITE, 0, 8),
            (wc_op::FLUSH, 0, 0)
        ]
    );
}

/// An XRC initiator on A, a target of domain 1 on B with XRC SRQ 1
/// (domain 1, PD 3, ring `RQ`) and XRC SRQ 2 (domain 2), both
/// completing on B's receive CQ.
fn xrc_pair() -> (Side, Side) {
    let mut a = Side::new(1);
    let mut b = Side::new(2);
    a.setup(QpType::XrcIni, QPN);
    b.setup(QpType::XrcTgt, QPN);
    for (srqn, xrcd, ring) in [(1, 1, RQ), (2, 2, RQ + 0x8000)] {
        let srq = AdminCmd::RdmaCreateSrq {
            srqn,
            ring,
            entries: 64,
            pd: 3,
            db_page: 0,
            xrcd,
            cq: 2,
        };
        assert_eq!(b.admin(srq), AdminStatus::Ok);
    }
    b.srq = 1;
    a.connect(&b, 7, 7);
    b.connect(&a, 7, 7);
    (a, b)
}

#[test]
fn xrc_requests_land_in_the_srq_they_name_within_the_target_s_domain() {
    let (mut a, mut b) = xrc_pair();
    // The initiator has no receive queue, the target no queue at all.
    let ignored = |s: &Side| s.e.stats.bad_doorbells + s.e.stats.refused_doorbells;
    let (was_a, was_b) = (ignored(&a), ignored(&b));
    b.ring(udb::SQ, QPN | 1 << 16);
    a.ring(udb::RQ, QPN | 1 << 16);
    assert_eq!((ignored(&a), ignored(&b)), (was_a + 1, was_b + 1));
    b.post_recv(QPN, DATA, 256);
    let data = pattern(100, 7);
    a.mem.set(DATA, &data);
    let mut send = send_wqe(wqe_op::SEND, DATA, 100);
    send.xrc_srqn = 1;
    let mut write = send_wqe(wqe_op::WRITE, DATA, 100);
    (write.remote_addr, write.rkey, write.xrc_srqn) = (REMOTE, RKEY, 1);
    a.post_send(QPN, send);
    a.post_send(QPN, write);
    let requests = a.ring_sq(QPN);
    use wire::Opcode::*;
    assert_eq!(
        opcodes(&requests),
        [(XrcSendOnly, true), (XrcWriteOnly, true)]
    );
    let answers = b.receive(requests);
    assert_eq!(opcodes(&answers), [(XrcAck, false), (XrcAck, false)]);
    assert!(a.receive(answers).is_empty());
    assert_eq!(b.mem.get(DATA, 100), data);
    assert_eq!(b.mem.get(REMOTE, 100), data);
    let rc = b.completions(true);
    let got: Vec<_> = rc
        .iter()
        .map(|c| {
            (
                c.qpn,
                c.status,
                c.flags & !cqe_flag::PHASE,
                c.srqn,
                c.byte_len,
            )
        })
        .collect();
    assert_eq!(
        got,
        [(
            QPN,
            wc_status::SUCCESS,
            cqe_flag::RECV | cqe_flag::SRQ,
            1,
            100
        )]
    );
    let sc: Vec<_> = a.completions(false).iter().map(|c| c.status).collect();
    assert_eq!(sc, [wc_status::SUCCESS; 2]);
    // FLUSH and ATOMIC WRITE have no XRC opcodes.
    let mut flush = flush_wqe(REMOTE, 64, flush::GLOBAL, flush::RANGE);
    flush.xrc_srqn = 1;
    a.post_send(QPN, flush);
    assert!(a.ring_sq(QPN).is_empty());
    let sc: Vec<_> = a.completions(false).iter().map(|c| c.status).collect();
    assert_eq!(sc, [wc_status::LOC_QP_OP_ERR]);
}

#[test]
fn an_xrc_request_for_an_srq_of_another_domain_or_none_is_refused() {
    for srqn in [2, 9] {
        let (mut a, mut b) = xrc_pair();
        // SRQ 2 has a receive posted: it must stay unused.
        b.srq = 2;
        b.post_recv(QPN, DATA, 256);
        a.mem.set(DATA, &pattern(100, 7));
        let mut write = send_wqe(wqe_op::WRITE, DATA, 100);
        (write.remote_addr, write.rkey, write.xrc_srqn) = (REMOTE, RKEY, srqn);
        a.post_send(QPN, write);
        let requests = a.ring_sq(QPN);
        let answers = b.receive(requests);
        assert_eq!(opcodes(&answers), [(wire::Opcode::XrcAck, false)]);
        a.receive(answers);
        assert_eq!(b.mem.get(REMOTE, 100), vec![0; 100], "srq {srqn}");
        let sc: Vec<_> = a.completions(false).iter().map(|c| c.status).collect();
        assert_eq!(sc, [wc_status::REM_INV_REQ_ERR], "srq {srqn}");
        assert!(b.completions(true).is_empty());
        assert_eq!(lock_srq(&b.e.srqs[&2]).wq.pending(), 1);
    }
}

#[test]
fn a_retried_atomic_write_is_answered_again_not_run_again() {
    let (mut a, mut b) = pair();
    a.post_send(QPN, atomic_write_wqe(REMOTE, 7u64.to_le_bytes()));
    let lost = b.receive(a.ring_sq(QPN));
    assert_eq!(lost.len(), 1);
    assert_eq!(u64_at(&b, REMOTE), 7);
    // The target's CPU moves on; the retry must not undo that.
    b.mem.set(REMOTE, &8u64.to_le_bytes());
    let resent = a.tick(Duration::from_millis(100));
    assert_eq!(opcodes(&resent), [(wire::Opcode::RcAtomicWrite, true)]);
    exchange(&mut a, &mut b, resent);
    assert_eq!(u64_at(&b, REMOTE), 8);
    let sc = a.completions(false);
    assert_eq!(
        sc.iter().map(|c| (c.opcode, c.status)).collect::<Vec<_>>(),
        [(wc_op::ATOMIC_WRITE, wc_status::SUCCESS)]
    );
    assert_eq!(b.e.qps[&QPN].counters.duplicates, 1);
}

#[test]
fn flush_and_atomic_write_refusals() {
    // Persistence: no region has it (host memory is not persistent).
    let (mut a, mut b) = pair();
    a.post_send(QPN, flush_wqe(REMOTE, 8, flush::PERSISTENT, flush::RANGE));
    let frames = a.ring_sq(QPN);
    exchange(&mut a, &mut b, frames);
    assert_eq!(a.completions(false)[0].status, wc_status::REM_ACCESS_ERR);

    // A target QP without the flush right; then a placement type of none.
    for (access, placement) in [
        (access::ALL & !access::FLUSH_GLOBAL, flush::GLOBAL),
        (access::ALL, 0),
    ] {
        let (mut a, mut b) = pair();
        let m = QpModify {
            mask: qp_attr::ACCESS,
            access,
            ..QpModify::default()
        };
        assert_eq!(b.modify(QPN, m), AdminStatus::Ok);
        a.post_send(QPN, flush_wqe(REMOTE, 8, placement, flush::RANGE));
        let frames = a.ring_sq(QPN);
        exchange(&mut a, &mut b, frames);
        let want = if placement == 0 {
            wc_status::REM_INV_REQ_ERR
        } else {
            wc_status::REM_ACCESS_ERR
        };
        assert_eq!(a.completions(false)[0].status, want);
    }

    // A misaligned ATOMIC WRITE; memory untouched.
    let (mut a, mut b) = pair();
    b.mem.set(REMOTE, &[0u8; 16]);
    a.post_send(QPN, atomic_write_wqe(REMOTE + 4, [0xff; 8]));
    let frames = a.ring_sq(QPN);
    exchange(&mut a, &mut b, frames);
    assert_eq!(a.completions(false)[0].status, wc_status::REM_INV_REQ_ERR);
    assert_eq!(b.mem.get(REMOTE, 16), [0u8; 16]);

    // Neither on UC.
    let (mut a, _b) = uc_pair();
    a.post_send(QPN, atomic_write_wqe(REMOTE, [1; 8]));
    assert!(a.ring_sq(QPN).is_empty());
    assert_eq!(a.completions(false)[0].status, wc_status::LOC_QP_OP_ERR);
}

#[test]
fn a_resized_cq_keeps_what_the_driver_has_not_consumed() {
    let (mut a, mut b) = pair();
    a.mem.set(DATA, &pattern(64, 1));
    for _ in 0..3 {
        b.post_recv(QPN, DATA, 64);
        a.post_send(QPN, send_wqe(wqe_op::SEND, DATA, 64));
    }
    let frames = a.ring_sq(QPN);
    exchange(&mut a, &mut b, frames);
    let old: Vec<Cqe> = a.completions(false);
    assert_eq!(old.len(), 3);
    const NEW: u64 = 0x7_0000;
    let resize = |entries, consumed| AdminCmd::RdmaResizeCq {
        cqn: 1,
        ring: NEW,
        entries,
        consumed,
    };
    // Two unconsumed do not fit in two entries (one kept spare), nor
    // can the driver have consumed more than the card produced.
    assert_eq!(a.admin(resize(2, 1)), AdminStatus::BadParam);
    assert_eq!(a.admin(resize(4, 4)), AdminStatus::BadParam);
    assert_eq!(a.admin(resize(4, 1)), AdminStatus::Ok);
    let slot = |s: &Side, i: u64| {
        Cqe::from_bytes(
            &s.mem
                .get(NEW + i * CQE_LEN as u64, CQE_LEN)
                .try_into()
                .unwrap(),
        )
    };
    assert_eq!(slot(&a, 0).wqe_index, old[1].wqe_index);
    assert_eq!(slot(&a, 1).wqe_index, old[2].wqe_index);
    assert!(slot(&a, 1).flags & cqe_flag::PHASE != 0);
    // The next completion goes on in the new ring, first lap.
    b.post_recv(QPN, DATA, 64);
    a.post_send(QPN, send_wqe(wqe_op::SEND, DATA, 64));
    let frames = a.ring_sq(QPN);
    exchange(&mut a, &mut b, frames);
    let next = slot(&a, 2);
    assert!(next.flags & cqe_flag::PHASE != 0);
    assert_eq!(next.wqe_index, 3);
    assert_eq!(slot(&a, 3).flags & cqe_flag::PHASE, 0);
}

#[test]
fn lost_packet_is_resent_after_a_sequence_nak() {
    let (mut a, mut b) = pair();
    let data = pattern(4000, 3);
    a.mem.set(DATA, &data);
    b.post_recv(QPN, DATA, 4096);
    a.post_send(QPN, send_wqe(wqe_op::SEND, DATA, 4000));
    let mut frames = a.ring_sq(QPN);
    assert_eq!(frames.len(), 4);
    frames.remove(1);
    exchange(&mut a, &mut b, frames);
    assert_eq!(b.mem.get(DATA, 4000), data);
    assert_eq!(b.completions(true).len(), 1);
    assert_eq!(a.completions(false)[0].status, wc_status::SUCCESS);
    assert_eq!(b.e.qps[&QPN].counters.seq_naks_sent, 1);
    assert!(a.e.qps[&QPN].counters.retransmits >= 3);
}

#[test]
fn lost_read_response_asks_at_once_for_the_rest() {
    let (mut a, mut b) = pair();
    let data = pattern(5000, 4);
    b.mem.set(REMOTE, &data);
    let mut r = send_wqe(wqe_op::READ, DATA, 5000);
    r.remote_addr = REMOTE;
    r.rkey = RKEY;
    a.post_send(QPN, r);
    let request = a.ring_sq(QPN);
    let mut responses = b.receive(request);
    assert_eq!(responses.len(), 5);
    responses.remove(1);
    // The gap is seen at the third response: one new READ, for the
    // 3976 bytes from the second response on, at the second's PSN;
    // the fourth and fifth responses are not gaps of their own.
    let again = a.receive(responses);
    assert_eq!(again.len(), 1);
    let ask = packet::parse(&again[0]).unwrap();
    let ask = wire::Packet::parse(ask.transport).unwrap();
    let reth = ask.reth.unwrap();
    assert_eq!(ask.opcode, wire::Opcode::RcReadRequest);
    assert_eq!(ask.bth.psn, 101);
    assert_eq!((reth.va, reth.len), (REMOTE + 1024, 3976));
    assert_eq!(a.e.qps[&QPN].counters.retransmits, 1);
    exchange(&mut a, &mut b, again);
    assert_eq!(a.mem.get(DATA, 5000), data);
    let sc = a.completions(false);
    assert_eq!(sc.len(), 1);
    assert_eq!((sc[0].status, sc[0].byte_len), (wc_status::SUCCESS, 5000));
    assert_eq!(a.e.qps[&QPN].counters.timeouts, 0);
    assert_eq!(b.e.qps[&QPN].counters.duplicates, 1);
}

#[test]
fn lost_tail_is_resent_on_timeout_and_duplicates_are_harmless() {
    let (mut a, mut b) = pair();
    let data = pattern(2048, 9);
    a.mem.set(DATA, &data);
    b.post_recv(QPN, DATA, 4096);
    a.post_send(QPN, send_wqe(wqe_op::SEND, DATA, 2048));
    let mut frames = a.ring_sq(QPN);
    frames.pop(); // The last packet, which asks for the ACK.
    exchange(&mut a, &mut b, frames);
    assert!(a.completions(false).is_empty());
    // Not yet due; then due (timeout 14: 67 ms).
    assert!(a.tick(Duration::from_millis(10)).is_empty());
    let resent = a.tick(Duration::from_millis(100));
    assert_eq!(resent.len(), 2);
    exchange(&mut a, &mut b, resent);
    assert_eq!(b.mem.get(DATA, 2048), data);
    assert_eq!(b.completions(true).len(), 1);
    assert_eq!(a.completions(false).len(), 1);
    assert_eq!(b.e.qps[&QPN].counters.duplicates, 1);
    assert_eq!(a.e.qps[&QPN].counters.timeouts, 1);
}

#[test]
fn retries_exhausted_fail_the_qp() {
    let mut a = Side::new(1);
    let mut b = Side::new(2);
    a.setup(QpType::Rc, QPN);
    a.connect(&b, 2, 7);
    b.setup(QpType::Rc, QPN);
    a.post_send(QPN, send_wqe(wqe_op::SEND, DATA, 64));
    a.post_send(QPN, send_wqe(wqe_op::SEND, DATA, 64));
    assert_eq!(a.ring_sq(QPN).len(), 2);
    for _ in 0..2 {
        assert_eq!(a.tick(Duration::from_millis(100)).len(), 2);
    }
    assert!(a.tick(Duration::from_millis(100)).is_empty());
    let c = a.completions(false);
    let st: Vec<_> = c.iter().map(|c| c.status).collect();
    assert_eq!(st, [wc_status::RETRY_EXC_ERR, wc_status::WR_FLUSH_ERR]);
    assert_eq!(a.state(), QpState::Err);
    assert!(a
        .events()
        .iter()
        .any(|e| e.kind == eqe_type::QP_FATAL && e.id == QPN));
    let _ = &mut b;
}

#[test]
fn an_srq_feeds_its_qp_raises_its_limit_once_and_outlives_flushes() {
    let ok = AdminStatus::Ok;
    let mut a = Side::new(1);
    let mut b = Side::new(2);
    b.srq = 5;
    a.setup(QpType::Rc, QPN);
    b.setup(QpType::Rc, QPN);
    a.connect(&b, 7, 7);
    b.connect(&a, 7, 7);
    let limit_events = |s: &Side| {
        s.events()
            .iter()
            .filter(|e| (e.kind, e.id) == (eqe_type::SRQ_LIMIT, 5))
            .count()
    };
    // Armed over an empty SRQ: due at once, and spent.
    assert_eq!(b.admin(AdminCmd::RdmaArmSrq { srqn: 5, limit: 2 }), ok);
    assert_eq!(limit_events(&b), 1);
    for i in 0..3 {
        b.post_recv(QPN, DATA + i * 0x100, 64);
    }
    assert_eq!(b.admin(AdminCmd::RdmaArmSrq { srqn: 5, limit: 2 }), ok);
    assert_eq!(limit_events(&b), 1);
    // The QP's own receive doorbell means nothing with an SRQ.
    let bad = b.e.stats.bad_doorbells;
    b.ring(udb::RQ, QPN | 1 << 16);
    assert_eq!(b.e.stats.bad_doorbells, bad + 1);
    for n in 0..2u8 {
        a.mem.set(DATA, &[n; 8]);
        a.post_send(QPN, send_wqe(wqe_op::SEND, DATA, 8));
        let frames = a.ring_sq(QPN);
        exchange(&mut a, &mut b, frames);
    }
    let r = b.completions(true);
    assert_eq!(r.len(), 2);
    for (i, c) in r.iter().enumerate() {
        assert_eq!((c.status, c.wqe_index), (0, i as u16));
        assert_ne!(c.flags & cqe_flag::SRQ, 0);
    }
    assert_eq!(b.mem.get(DATA + 0x100, 8), [1; 8]);
    // One left, below 2: the event came once.
    assert_eq!(limit_events(&b), 2);
    // The QP's error flushes nothing of the SRQ's, and says it takes
    // no more of them.
    let err = QpModify {
        mask: qp_attr::STATE,
        state: QpState::Err as u8,
        ..QpModify::default()
    };
    assert_eq!(b.modify(QPN, err), ok);
    assert!(b.completions(true).is_empty());
    let last = b
        .events()
        .iter()
        .filter(|e| e.kind == eqe_type::QP_LAST_WQE)
        .count();
    assert_eq!(last, 1);
    assert_eq!(lock_srq(&b.e.srqs[&5]).wq.pending(), 1);
    // Destroyed only when no QP uses it.
    let destroy = AdminCmd::RdmaDestroySrq { srqn: 5 };
    assert_eq!(b.admin(destroy), AdminStatus::BadState);
    assert_eq!(b.admin(AdminCmd::RdmaDestroyQp { qpn: QPN }), ok);
    assert_eq!(b.admin(destroy), ok);
}

#[test]
fn an_srq_is_its_own_process_s_and_pd_s() {
    let mut s = Side::new(1);
    s.db_page = 3;
    s.setup(QpType::Rc, QPN);
    let srq = |pd, db_page| AdminCmd::RdmaCreateSrq {
        srqn: 1,
        ring: RQ,
        entries: 64,
        pd,
        db_page,
        xrcd: 0,
        cq: 0,
    };
    assert_eq!(s.admin(srq(3, 4)), AdminStatus::Ok);
    // Another page's SRQ, then another PD's: refused.
    let mut c = qp_create(20, QpType::Rc, SQ, RQ, 3);
    c.srq = 1;
    assert_eq!(s.admin(AdminCmd::RdmaCreateQp(c)), AdminStatus::BadParam);
    assert_eq!(
        s.admin(AdminCmd::RdmaDestroySrq { srqn: 1 }),
        AdminStatus::Ok
    );
    assert_eq!(s.admin(srq(4, 3)), AdminStatus::Ok);
    assert_eq!(s.admin(AdminCmd::RdmaCreateQp(c)), AdminStatus::BadParam);
    // Not with UD; not a number out of range.
    c.qp_type = QpType::Ud as u8;
    assert_eq!(s.admin(AdminCmd::RdmaCreateQp(c)), AdminStatus::BadParam);
    assert_eq!(s.admin(srq(3, 3)), AdminStatus::BadState);
    let far = AdminCmd::RdmaCreateSrq {
        srqn: 65,
        ring: RQ,
        entries: 64,
        pd: 3,
        db_page: 3,
        xrcd: 0,
        cq: 0,
    };
    assert_eq!(s.admin(far), AdminStatus::BadParam);
    // A doorbell through another page is refused.
    let refused = s.e.stats.refused_doorbells;
    s.db_page = 4;
    s.ring(udb::SRQ, 1 | 1 << 16);
    assert_eq!(s.e.stats.refused_doorbells, refused + 1);
}

#[test]
fn receiver_not_ready_then_ready() {
    let (mut a, mut b) = pair();
    a.mem.set(DATA, b"hello");
    a.post_send(QPN, send_wqe(wqe_op::SEND, DATA, 5));
    let frames = a.ring_sq(QPN);
    exchange(&mut a, &mut b, frames);
    assert_eq!(b.e.qps[&QPN].counters.rnr_naks_sent, 1);
    assert!(a.completions(false).is_empty());
    b.post_recv(QPN, DATA + 0x100, 64);
    // RNR timer code 1: 10 µs (the engine waits at least 1 ms).
    let resent = a.tick(Duration::from_millis(2));
    assert_eq!(resent.len(), 1);
    exchange(&mut a, &mut b, resent);
    assert_eq!(b.mem.get(DATA + 0x100, 5), b"hello");
    assert_eq!(a.completions(false)[0].status, wc_status::SUCCESS);
}

#[test]
fn access_violation_fails_both_sides_and_touches_nothing() {
    let (mut a, mut b) = pair();
    a.mem.set(DATA, &pattern(64, 5));
    b.mem.set(REMOTE, &[0xee; 64]);
    let mut w = send_wqe(wqe_op::WRITE, DATA, 64);
    w.remote_addr = REMOTE;
    w.rkey = RKEY + 1; // Wrong variant byte.
    a.post_send(QPN, w);
    a.post_send(QPN, send_wqe(wqe_op::SEND, DATA, 8));
    let frames = a.ring_sq(QPN);
    exchange(&mut a, &mut b, frames);
    assert_eq!(b.mem.get(REMOTE, 64), [0xee; 64]);
    let st: Vec<_> = a.completions(false).iter().map(|c| c.status).collect();
    assert_eq!(st, [wc_status::REM_ACCESS_ERR, wc_status::WR_FLUSH_ERR]);
    assert_eq!((a.state(), b.state()), (QpState::Err, QpState::Err));
    assert!(b.events().iter().any(|e| e.kind == eqe_type::QP_FATAL));
    // New work on a failed QP is flushed, not executed.
    a.post_send(QPN, send_wqe(wqe_op::SEND, DATA, 8));
    assert!(a.ring_sq(QPN).is_empty());
    assert_eq!(a.completions(false)[0].status, wc_status::WR_FLUSH_ERR);
}

#[test]
fn injected_rnr_naks_a_send_the_receive_queue_could_take() {
    let (mut a, mut b) = pair();
    a.mem.set(DATA, b"hello");
    b.post_recv(QPN, DATA + 0x100, 64);
    b.e.faults.arm(RdmaFault::Rnr, 1);
    a.post_send(QPN, send_wqe(wqe_op::SEND, DATA, 5));
    let frames = a.ring_sq(QPN);
    exchange(&mut a, &mut b, frames);
    assert_eq!(b.e.qps[&QPN].counters.rnr_naks_sent, 1);
    assert!(a.completions(false).is_empty());
    assert!(b.e.faults.describe().starts_with("rnr=0 "));
    // Sent again after the RNR timer, it lands in the receive posted
    // all along.
    let resent = a.tick(Duration::from_millis(2));
    assert_eq!(resent.len(), 1);
    exchange(&mut a, &mut b, resent);
    assert_eq!(b.mem.get(DATA + 0x100, 5), b"hello");
    assert_eq!(a.completions(false)[0].status, wc_status::SUCCESS);
    assert_eq!(b.e.qps[&QPN].counters.rnr_naks_sent, 1);
}

#[test]
fn injected_faults_spoil_one_rkey_and_refuse_one_modify() {
    let (mut a, mut b) = pair();
    b.mem.set(REMOTE, &[0xee; 64]);
    a.e.faults.arm(RdmaFault::BadRkey, 1);
    let mut r = send_wqe(wqe_op::READ, DATA, 64);
    r.remote_addr = REMOTE;
    r.rkey = RKEY;
    a.post_send(QPN, r);
    let frames = a.ring_sq(QPN);
    exchange(&mut a, &mut b, frames);
    assert_eq!(a.completions(false)[0].status, wc_status::REM_ACCESS_ERR);
    assert_ne!(a.mem.get(DATA, 64), [0xee; 64]);
    assert!(a.e.faults.describe().ends_with("injected=1"));

    let reset = QpModify {
        mask: qp_attr::STATE,
        state: QpState::Reset as u8,
        ..QpModify::default()
    };
    a.e.faults.arm(RdmaFault::RejectModify, 1);
    assert_eq!(a.modify(QPN, reset), AdminStatus::BadState);
    assert_eq!(a.state(), QpState::Err);
    assert_eq!(a.modify(QPN, reset), AdminStatus::Ok);
}

#[test]
fn bad_lkey_is_a_local_protection_error() {
    let (mut a, _b) = pair();
    let mut w = send_wqe(wqe_op::SEND, DATA, 8);
    w.sge[0].lkey = 0x7700;
    a.post_send(QPN, w);
    assert!(a.ring_sq(QPN).is_empty());
    assert_eq!(a.completions(false)[0].status, wc_status::LOC_PROT_ERR);
    assert_eq!(a.state(), QpState::Err);
}

#[test]
fn gsi_datagrams_carry_a_grh() {
    let mut a = Side::new(1);
    let mut b = Side::new(2);
    a.setup(QpType::Gsi, 1);
    b.setup(QpType::Gsi, 1);
    for s in [&mut a, &mut b] {
        for state in [QpState::Init, QpState::Rtr, QpState::Rts] {
            let m = QpModify {
                mask: qp_attr::STATE | qp_attr::SQ_PSN,
                state: state as u8,
                ..QpModify::default()
            };
            assert_eq!(s.modify(1, m), AdminStatus::Ok);
        }
    }
    let mad = pattern(256, 2);
    a.mem.set(DATA, &mad);
    b.post_recv(1, DATA, 40 + 256);
    let mut w = send_wqe(wqe_op::SEND, DATA, 256);
    w.dest_qpn = 1;
    w.qkey = crate::hw::rdma::GSI_QKEY;
    w.set_av(&AddressVector {
        dmac: b.mac,
        dgid: b.gid,
        ..AddressVector::default()
    });
    a.post_send(1, w);
    let frames = a.ring_sq(1);
    assert_eq!(frames.len(), 1);
    assert!(b.receive(frames).is_empty());
    let c = b.completions(true);
    assert_eq!(c.len(), 1);
    assert_eq!((c[0].byte_len, c[0].src_qp, c[0].smac), (296, 1, a.mac));
    assert_ne!(c[0].flags & cqe_flag::GRH, 0);
    assert_ne!(c[0].flags & cqe_flag::IPV4, 0);
    // The GRH area ends with the IPv4 header: source 10.0.0.1.
    assert_eq!(b.mem.get(DATA + 20 + 12, 4), [10, 0, 0, 1]);
    assert_eq!(b.mem.get(DATA + 40, 256), mad);
    assert_eq!(a.completions(false).len(), 1);
}

#[test]
fn one_doorbell_runs_a_batch() {
    let (mut a, mut b) = pair();
    for i in 0..32u64 {
        let mut w = send_wqe(wqe_op::WRITE, DATA + i * 64, 64);
        w.remote_addr = REMOTE + i * 64;
        w.rkey = RKEY;
        if i != 31 {
            w.flags = 0; // Unsignaled: only the last completes.
        }
        a.post_send(QPN, w);
    }
    a.mem.set(DATA, &pattern(32 * 64, 4));
    let frames = a.ring_sq(QPN);
    assert_eq!(frames.len(), 32);
    exchange(&mut a, &mut b, frames);
    assert_eq!(b.mem.get(REMOTE, 32 * 64), pattern(32 * 64, 4));
    assert_eq!(a.completions(false).len(), 1);
}

#[test]
fn damaged_frames_and_strangers_are_dropped() {
    let (mut a, mut b) = pair();
    a.mem.set(DATA, b"x");
    b.post_recv(QPN, DATA, 64);
    a.post_send(QPN, send_wqe(wqe_op::SEND, DATA, 1));
    let mut frames = a.ring_sq(QPN);
    let n = frames[0].len();
    frames[0][n - 5] ^= 0x10;
    let mut unsummed = frames.clone();
    assert!(b.receive(frames).is_empty());
    assert_eq!(b.e.stats.rx_bad_udp_csum, 1, "UDP checksum first");
    // Without a UDP checksum (rxe sends none) the ICRC catches it.
    unsummed[0][40..42].copy_from_slice(&[0, 0]);
    assert!(b.receive(unsummed).is_empty());
    assert_eq!(b.e.stats.rx_bad_icrc, 1);
    assert!(b.completions(true).is_empty());
    // Not RoCE, or not for this card: left to the NIC.
    let mem = std::mem::replace(&mut b.mem, Memory::new(0));
    let mut io = Io::new(&mem, b.mac, b.now);
    assert!(!b.e.receive(&[0u8; 60], &mut io));
    b.e.doorbell(db::SQ, 999, &mut io);
    assert_eq!(b.e.stats.bad_doorbells, 1);
}

#[test]
fn admin_refuses_bad_objects() {
    let mut a = Side::new(1);
    a.setup(QpType::Rc, QPN);
    assert_eq!(
        a.admin(AdminCmd::RdmaDestroyCq { cqn: 1 }),
        AdminStatus::BadState
    );
    let c = AdminCmd::RdmaCreateCq {
        cqn: 9,
        ring: 0,
        entries: 3,
        db_page: 0,
        flags: 0,
    };
    assert_eq!(a.admin(c), AdminStatus::BadParam);
    // A flag the card does not know.
    let c = AdminCmd::RdmaCreateCq {
        cqn: 9,
        ring: 0,
        entries: 4,
        db_page: 0,
        flags: 1 << 1,
    };
    assert_eq!(a.admin(c), AdminStatus::BadParam);
    let bad_jump = QpModify {
        mask: qp_attr::STATE,
        state: QpState::Rts as u8,
        ..QpModify::default()
    };
    assert_eq!(a.modify(QPN, bad_jump), AdminStatus::BadState);
    assert_eq!(
        a.admin(AdminCmd::RdmaDestroyQp { qpn: QPN }),
        AdminStatus::Ok
    );
    assert_eq!(a.admin(AdminCmd::RdmaDestroyCq { cqn: 1 }), AdminStatus::Ok);
    assert!(a.e.describe_state().starts_with("eq=1 cqs=1 qps=0"));
}

/// A UC pair: side A sends to side B, both in RTS.
fn uc_pair() -> (Side, Side) {
    let mut a = Side::new(1);
    let mut b = Side::new(2);
    a.setup(QpType::Uc, QPN);
    b.setup(QpType::Uc, QPN);
    a.connect(&b, 7, 7);
    b.connect(&a, 7, 7);
    (a, b)
}

#[test]
fn uc_send_and_write_complete_without_acknowledgements() {
    let (mut a, mut b) = uc_pair();
    let data = pattern(3000, 5);
    a.mem.set(DATA, &data);
    b.post_recv(QPN, DATA, 4096);
    b.post_recv(QPN, DATA + 0x2000, 16);
    a.post_send(QPN, send_wqe(wqe_op::SEND, DATA, 3000));
    let mut w = send_wqe(wqe_op::WRITE_IMM, DATA, 3000);
    w.remote_addr = REMOTE;
    w.rkey = RKEY;
    w.imm_or_key = 0xabcd;
    a.post_send(QPN, w);
    let frames = a.ring_sq(QPN);
    assert_eq!(frames.len(), 6);
    let ops: Vec<u8> = frames
        .iter()
        .map(|f| {
            wire::Packet::parse(packet::parse(f).unwrap().transport)
                .unwrap()
                .opcode as u8
        })
        .collect();
    assert_eq!(ops, [0x20, 0x21, 0x22, 0x26, 0x27, 0x29]);
    // Both WQEs completed as their packets went out.
    let sc = a.completions(false);
    let got: Vec<_> = sc
        .iter()
        .map(|c| (c.opcode, c.status, c.byte_len))
        .collect();
    assert_eq!(got, [(wc_op::SEND, 0, 3000), (wc_op::RDMA_WRITE, 0, 3000)]);
    // The responder answers nothing.
    assert!(b.receive(frames).is_empty());
    assert_eq!(b.mem.get(DATA, 3000), data);
    assert_eq!(b.mem.get(REMOTE, 3000), data);
    let rc = b.completions(true);
    let got: Vec<_> = rc
        .iter()
        .map(|c| (c.opcode, c.byte_len, c.imm_or_key))
        .collect();
    assert_eq!(
        got,
        [
            (wc_op::RECV, 3000, 0),
            (wc_op::RECV_RDMA_WITH_IMM, 3000, 0xabcd)
        ]
    );
    assert!(a.e.qps[&QPN].deadline().is_none());
}

#[test]
fn uc_loss_drops_the_message_and_its_receive_serves_the_next() {
    let (mut a, mut b) = uc_pair();
    let first = pattern(3000, 1);
    let second = pattern(2000, 2);
    a.mem.set(DATA, &first);
    a.mem.set(DATA + 0x1000, &second);
    b.post_recv(QPN, DATA, 4096);
    a.post_send(QPN, send_wqe(wqe_op::SEND, DATA, 3000));
    a.post_send(QPN, send_wqe(wqe_op::SEND, DATA + 0x1000, 2000));
    let mut frames = a.ring_sq(QPN);
    assert_eq!(frames.len(), 5);
    frames.remove(1); // the first SEND's middle packet
    assert!(b.receive(frames).is_empty());
    // The second SEND landed in the receive the first one started.
    let rc = b.completions(true);
    assert_eq!(rc.len(), 1);
    assert_eq!(
        (rc[0].status, rc[0].byte_len, rc[0].wqe_index),
        (0, 2000, 0)
    );
    assert_eq!(b.mem.get(DATA, 2000), second);
    assert_eq!(b.state(), QpState::Rts);
    assert_eq!(b.e.qps[&QPN].counters.dropped, 1);
    // The sender knows nothing of it: both completed.
    assert_eq!(a.completions(false).len(), 2);
}

#[test]
fn uc_drops_what_it_cannot_take_and_stays_up() {
    let (mut a, mut b) = uc_pair();
    let data = pattern(100, 9);
    a.mem.set(DATA, &data);
    // No receive posted: the SEND is dropped (no RNR NAK).
    a.post_send(QPN, send_wqe(wqe_op::SEND, DATA, 100));
    // A WRITE the R_Key does not allow is dropped too.
    let mut w = send_wqe(wqe_op::WRITE, DATA, 100);
    w.remote_addr = REMOTE;
    w.rkey = RKEY + 1;
    a.post_send(QPN, w);
    // A SEND too long for its receive: dropped, the receive kept.
    a.post_send(QPN, send_wqe(wqe_op::SEND, DATA, 100));
    let frames = a.ring_sq(QPN);
    let (f1, f3) = (
        vec![frames[0].clone(), frames[1].clone()],
        vec![frames[2].clone()],
    );
    assert!(b.receive(f1).is_empty());
    b.post_recv(QPN, DATA + 0x2000, 50);
    assert!(b.receive(f3).is_empty());
    assert!(b.completions(true).is_empty());
    assert_eq!(b.mem.get(REMOTE, 100), vec![0; 100]);
    assert_eq!(b.e.qps[&QPN].counters.dropped, 3);
    assert_eq!(b.state(), QpState::Rts);
    // And the next one that fits arrives in that receive.
    a.post_send(QPN, send_wqe(wqe_op::SEND, DATA, 40));
    let frames = a.ring_sq(QPN);
    assert!(b.receive(frames).is_empty());
    let rc = b.completions(true);
    assert_eq!((rc.len(), rc[0].status, rc[0].byte_len), (1, 0, 40));
    assert_eq!(b.mem.get(DATA + 0x2000, 40), data[..40]);
}

#[test]
fn uc_refuses_read_and_rc_packets_are_not_its_own() {
    let (mut a, mut b) = uc_pair();
    // An RC SEND to the UC QP is dropped, not an error of the QP.
    let (mut rc_a, _) = pair();
    rc_a.mem.set(DATA, &pattern(64, 3));
    rc_a.post_send(QPN, send_wqe(wqe_op::SEND, DATA, 64));
    let frames = rc_a.ring_sq(QPN);
    b.post_recv(QPN, DATA, 4096);
    // Side B's GID and MAC are the RC pair's side B's as well.
    assert!(b.receive(frames).is_empty());
    assert!(b.completions(true).is_empty());
    assert_eq!(b.e.qps[&QPN].counters.dropped, 1);
    assert_eq!(b.state(), QpState::Rts);
    // A READ on UC fails the WQE and the QP.
    let mut r = send_wqe(wqe_op::READ, DATA, 64);
    r.remote_addr = REMOTE;
    r.rkey = RKEY;
    a.post_send(QPN, r);
    assert!(a.ring_sq(QPN).is_empty());
    let sc = a.completions(false);
    assert_eq!(sc[0].status, wc_status::LOC_QP_OP_ERR);
    assert_eq!(a.state(), QpState::Err);
}

/// Group 239.1.2.3 and the Q_Key of the multicast tests.
const GROUP: Gid = Gid::from_ipv4([239, 1, 2, 3]);
const MC_QKEY: u32 = 0x0123_4567;

/// A UD QP `qpn` (receiving into a ring at `rq`) in RTS with `MC_QKEY`.
fn ud_qp(s: &mut Side, qpn: u32, rq: u64) {
    let c = qp_create(qpn, QpType::Ud, SQ, rq, 0);
    assert_eq!(s.admin(AdminCmd::RdmaCreateQp(c)), AdminStatus::Ok);
    ud_to_rts(s, qpn);
}

/// Moves UD QP `qpn` to RTS with `MC_QKEY`.
fn ud_to_rts(s: &mut Side, qpn: u32) {
    for state in [QpState::Init, QpState::Rtr, QpState::Rts] {
        let m = QpModify {
            mask: qp_attr::STATE | qp_attr::QKEY | qp_attr::SQ_PSN,
            state: state as u8,
            qkey: MC_QKEY,
            ..QpModify::default()
        };
        assert_eq!(s.modify(qpn, m), AdminStatus::Ok);
    }
}

/// Posts a receive of 256 bytes at `addr` as slot `slot` of the RQ ring
/// at `rq` of QP `qpn`.
fn post_ud_recv(s: &mut Side, qpn: u32, rq: u64, slot: u16, addr: u64) {
    let mut wqe = RqWqe {
        num_sge: 1,
        ..RqWqe::default()
    };
    wqe.sge[0] = Sge {
        addr,
        len: 256,
        lkey: mem::LOCAL_DMA_LKEY,
    };
    s.mem
        .set(rq + u64::from(slot) * RQ_WQE_LEN as u64, &wqe.to_bytes());
    s.ring(udb::RQ, qpn | u32::from(slot + 1) << 16);
}

/// A UD SEND of `len` bytes at `DATA` to the group, from QP `qpn`.
fn send_to_group(s: &mut Side, qpn: u32, len: u32) -> Vec<Vec<u8>> {
    let mut w = send_wqe(wqe_op::SEND, DATA, len);
    w.dest_qpn = MULTICAST_QPN;
    w.qkey = MC_QKEY;
    w.set_av(&AddressVector {
        dmac: GROUP.multicast_mac(),
        dgid: GROUP,
        ..AddressVector::default()
    });
    s.post_send(qpn, w);
    s.ring_sq(qpn)
}

#[test]
fn a_send_to_a_group_reaches_each_qp_attached() {
    let mut a = Side::new(1);
    let mut b = Side::new(2);
    a.setup(QpType::Ud, QPN);
    b.setup(QpType::Ud, QPN);
    ud_to_rts(&mut a, QPN);
    ud_to_rts(&mut b, QPN);
    const RQ2: u64 = 0x2_8000;
    ud_qp(&mut b, 18, RQ2);
    let attach = |qpn| AdminCmd::RdmaAttachMcast { qpn, gid: GROUP };
    // Not a group address; not a UD QP; no such QP.
    let unicast = AdminCmd::RdmaAttachMcast {
        qpn: QPN,
        gid: b.gid,
    };
    assert_eq!(b.admin(unicast), AdminStatus::BadParam);
    assert_eq!(b.admin(attach(99)), AdminStatus::NotFound);
    assert_eq!(b.admin(attach(QPN)), AdminStatus::Ok);
    assert_eq!(b.admin(attach(18)), AdminStatus::Ok);
    b.post_recv(QPN, DATA + 0x1000, 256);
    post_ud_recv(&mut b, 18, RQ2, 0, DATA + 0x2000);

    // Both QPs get a copy.
    a.mem.set(DATA, &pattern(100, 7));
    let frames = send_to_group(&mut a, QPN, 100);
    assert_eq!(frames.len(), 1);
    assert_eq!(&frames[0][..6], &[0x01, 0x00, 0x5e, 0x01, 0x02, 0x03]);
    assert!(b.receive(frames.clone()).is_empty());
    let c = b.completions(true);
    assert_eq!(c.len(), 2);
    let qps: Vec<u32> = c.iter().map(|c| c.qpn).collect();
    assert_eq!(qps, [QPN, 18]);
    for (cqe, at) in c.iter().zip([DATA + 0x1000, DATA + 0x2000]) {
        assert_eq!(
            (cqe.status, cqe.byte_len, cqe.src_qp),
            (wc_status::SUCCESS, 140, QPN)
        );
        assert_eq!(b.mem.get(at + 40, 100), pattern(100, 7));
    }

    // Detached, QP 18 gets nothing more; its posted receive stays.
    let detach = |qpn| AdminCmd::RdmaDetachMcast { qpn, gid: GROUP };
    assert_eq!(b.admin(detach(18)), AdminStatus::Ok);
    assert_eq!(b.admin(detach(18)), AdminStatus::NotFound);
    post_ud_recv(&mut b, 18, RQ2, 1, DATA + 0x3000);
    b.post_recv(QPN, DATA + 0x1000, 256);
    assert!(b.receive(frames.clone()).is_empty());
    let c = b.completions(true);
    assert_eq!(c.iter().map(|c| c.qpn).collect::<Vec<_>>(), [QPN]);

    // The last QP gone, the group is not B's: the frame is the NIC's.
    assert_eq!(b.admin(detach(QPN)), AdminStatus::Ok);
    let mut io = Io::new(&b.mem, b.mac, b.now);
    assert!(!b.e.receive(&frames[0], &mut io));
    // Joined again, a destroyed QP leaves the group with it.
    assert_eq!(b.admin(attach(18)), AdminStatus::Ok);
    assert_eq!(
        b.admin(AdminCmd::RdmaDestroyQp { qpn: 18 }),
        AdminStatus::Ok
    );
    let mut io = Io::new(&b.mem, b.mac, b.now);
    assert!(!b.e.receive(&frames[0], &mut io));
}

#[test]
fn a_group_send_loops_back_to_the_senders_card_and_goes_out() {
    let mut a = Side::new(1);
    a.setup(QpType::Ud, QPN);
    ud_to_rts(&mut a, QPN);
    const RQ2: u64 = 0x2_8000;
    ud_qp(&mut a, 18, RQ2);
    let attach = AdminCmd::RdmaAttachMcast {
        qpn: 18,
        gid: GROUP,
    };
    assert_eq!(a.admin(attach), AdminStatus::Ok);
    post_ud_recv(&mut a, 18, RQ2, 0, DATA + 0x2000);
    a.mem.set(DATA, &pattern(64, 3));
    let frames = send_to_group(&mut a, QPN, 64);
    let mem = std::mem::replace(&mut a.mem, Memory::new(0));
    let mut io = Io::new(&mem, a.mac, a.now);
    io.frames = frames;
    a.e.loop_back(&mut io);
    // Once on the wire, once to QP 18.
    assert_eq!(io.frames.len(), 1);
    drop(io);
    a.mem = mem;
    let c = a.completions(true);
    assert_eq!(c.len(), 1);
    assert_eq!((c[0].qpn, c[0].src_qp, c[0].byte_len), (18, QPN, 104));
    assert_eq!(a.mem.get(DATA + 0x2000 + 40, 64), pattern(64, 3));
}
