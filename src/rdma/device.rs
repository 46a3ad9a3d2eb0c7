// SPDX-License-Identifier: GPL-2.0

//! The RDMA device's driver state and the ib_core callbacks on it: the
//! engine's limits, its GID table, and the verbs on its objects, which
//! the submodules implement.

use kernel::{
    device::{Bound, Device},
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc, Mutex, SpinLock,
    },
};

use super::cq::RdmaCq;
use super::dm::RdmaDm;
use super::eq::{EqIrq, EQ_ENTRIES};
use super::ids::IdPool;
use super::mr::{RdmaMr, RdmaMw, UserRegion};
use super::odp::{OdpFaults, OdpRegion};
use super::qp::{self, access_bits, address_vector, RdmaQp};
use super::ring::RingMem;
use super::srq::{self, RdmaSrq};
use super::tables::{CqeErrors, QpEntry, SharedRing, SrqEntry, Tables, WorkRing};
use super::ucontext::RdmaUcontext;
use super::RdmaEvents;
use crate::admin::{AdminError, AdminQueue};
use crate::hw::rdma::{
    cq_create, mr_kind, rdma_cap, udb, AddressVector, Gid, McastCaps, MrReg, QpCreate, QpModify,
    QpQueryResult, QpType, RdmaCaps, RdmaCounters, COUNTERS_LEN, CQE_LEN, CQE_STAMPED_LEN, EQE_LEN,
    GID_TABLE_LEN, GSI_QPN, HW_VERSION, MAX_INLINE_DATA, MAX_ODP_MAP_PAGES, MAX_SGE,
    MAX_USER_MR_PAGES, MAX_XRCD, QP_MODIFY_LEN, RQ_WQE_LEN, SQ_WQE_LEN, VENDOR_PART_ID,
};
use crate::hw::{AdminCmd, AdminStatus, PCI_VENDOR_ID};
use crate::linux::{
    dma::DmaBuffer,
    dma::DmaDevice,
    eopnotsupp,
    irq::IrqHandlerRegistration,
    rdma::device::{
        CqInit, DeviceAttr, GidEntry, GidType, IbDevice, IbDeviceOps, OdpCaps, PortAttr,
    },
    rdma::dm::DmRequest,
    rdma::odp::ODP_PAGE_SIZE,
    rdma::udata::{UserCall, UserData},
    rdma::umem::{UserMemory, UserPin, UserRange},
    rdma::verbs::{
        Access, AddressPath, CqHandle, MrKeys, MwKind, QpAttrs, QpCaps, QpHandle, QpInit, QpKind,
        QpQuery, RecvWrs, SendWrs, SrqAttr, SrqChange, SrqHandle, StatDesc, WcWriter, XrcSrq,
    },
    rdma::work_request::Sge,
    sync::lock_irqsave,
    uapi,
};
use crate::regs::Registers;

/// Largest RoCE MTU the engine segments to.
const MAX_MTU: u32 = 4096;
/// Smallest ring the driver gives the card.
const MIN_RING: u32 = 16;

/// What the engine's objects are numbered by.
struct Ids {
    pds: IdPool,
    cqs: IdPool,
    qps: IdPool,
    mrs: IdPool,
    srqs: IdPool,
    /// XRC domains (none without [`rdma_cap::XRC`]).
    xrcds: IdPool,
    /// Pages of the user doorbell BAR, one per user context.
    udb_pages: IdPool,
}

/// The driver state of one RDMA device. Field order is drop order.
#[pin_data]
pub(crate) struct RdmaDev {
    /// Stops the event queue before its ring (in `eq_irq`) is freed.
    _eq: EventQueueOwner,
    pub(super) admin: Arc<AdminQueue>,
    regs: Arc<Registers>,
    dma: DmaDevice,
    pub(super) caps: RdmaCaps,
    /// UD multicast limits; all 0 on a card without multicast.
    mcast: McastCaps,
    /// Physical address of the user doorbell BAR; `None` on a card
    /// without one, which then serves no process.
    pub(super) udb_bar: Option<u64>,
    #[pin]
    ids: Mutex<Ids>,
    tables: Arc<SpinLock<Tables>>,
    /// The block `RDMA_MODIFY_QP` reads.
    #[pin]
    modify_block: Mutex<DmaBuffer>,
    /// The block `RDMA_QUERY_STATS` writes.
    #[pin]
    stats_block: Mutex<DmaBuffer>,
    eq_irq: Pin<KBox<IrqHandlerRegistration<EqIrq>>>,
    /// On-demand regions and their page faults.
    odp: Arc<OdpFaults>,
    /// Address handles that exist (at most [`MAX_AH`]; the card keeps none:
    /// each is the driver's, and user space's copy of its address).
    ahs: Atomic<u32>,
    /// Device memory the card gave and processes map: offset and bytes
    /// (`dm.rs`).
    #[pin]
    pub(super) dms: Mutex<KVec<(u64, u64)>>,
}

/// Address handles per device: a bound on the driver's memory for them
/// (they live in the driver, not on the card), reported as `max_ah`.
const MAX_AH: u32 = 4096;

/// The card's use of the event queue: ended on drop.
struct EventQueueOwner(Arc<AdminQueue>);

impl Drop for EventQueueOwner {
    fn drop(&mut self) {
        // Every object is gone (ib_core destroyed them before the device's
        // state is dropped); the card stops writing events.
        let _ = self.0.exec(AdminCmd::RdmaDestroyEq);
    }
}

/// What the PF gives for the engine's use.
pub(crate) struct EngineAccess<'a> {
    /// Admin queue.
    pub(crate) admin: &'a Arc<AdminQueue>,
    /// Registers (doorbells).
    pub(crate) regs: &'a Arc<Registers>,
    /// The PCI function (DMA).
    pub(crate) pci: &'a Device<Bound>,
    /// Linux IRQ and MSI-X index of the event vector.
    pub(crate) irq: u32,
    /// MSI-X index of the event vector.
    pub(crate) vector: u16,
    /// Hears of QPs the engine failed (the function's `rdma` health
    /// reporter).
    pub(crate) events: Arc<dyn RdmaEvents>,
    /// Physical address of the user doorbell BAR, if the card has it.
    pub(crate) udb_bar: Option<u64>,
}

/// The card's limits bounded by what the driver supports: a card that
/// claims more is believed only that far.
fn sane_caps(c: RdmaCaps) -> RdmaCaps {
    RdmaCaps {
        gid_table_len: c.gid_table_len.min(GID_TABLE_LEN),
        max_qp: c.max_qp.clamp(2, 1 << 16),
        max_cq: c.max_cq.min(1 << 16),
        max_sge: c.max_sge.min(MAX_SGE as u16),
        max_srq: c.max_srq.min(256),
        max_qp_wr: c.max_qp_wr.min(1 << 15),
        max_cqe: c.max_cqe.min(1 << 15),
        max_mr: c.max_mr.min(1 << 24),
        ..c
    }
}

/// The card's multicast limits, believed as far as each is consistent
/// with the others.
fn sane_mcast(c: McastCaps) -> McastCaps {
    let max_groups = c.max_groups.min(1 << 16);
    let max_attach = c.max_attach.min(1 << 20);
    McastCaps {
        max_groups,
        max_qp_per_group: c.max_qp_per_group.min(max_attach),
        max_attach,
    }
}

impl RdmaDev {
    /// Reads the engine's limits and sets up its event queue; fails if
    /// the engine does not answer.
    pub(crate) fn new(e: EngineAccess<'_>) -> Result<impl PinInit<Self, Error>> {
        let entry = e.admin.exec(AdminCmd::RdmaQueryCaps)?;
        let caps = sane_caps(RdmaCaps::read_result(&entry));
        let mcast = match e.admin.exec(AdminCmd::RdmaQueryMcastCaps) {
            Ok(entry) => sane_mcast(McastCaps::read_result(&entry)),
            Err(AdminError::Refused(AdminStatus::BadOpcode)) => McastCaps::default(),
            Err(err) => return Err(err.into()),
        };
        let dma = DmaDevice::new(e.pci);
        let ids = Ids {
            pds: IdPool::new(1, caps.max_pd)?,
            cqs: IdPool::new(0, caps.max_cq)?,
            qps: IdPool::new(GSI_QPN, caps.max_qp)?,
            mrs: IdPool::new(1, caps.max_mr)?,
            srqs: IdPool::new(1, u32::from(caps.max_srq) + 1)?,
            xrcds: IdPool::new(
                1,
                if caps.flags & rdma_cap::XRC != 0 {
                    MAX_XRCD + 1
                } else {
                    1
                },
            )?,
            udb_pages: IdPool::new(1, udb::PAGES)?,
        };
        let tables = Arc::pin_init(
            kernel::new_spinlock!(Tables::new(
                caps.max_cq,
                caps.max_qp,
                u32::from(caps.max_srq) + 1
            )?),
            GFP_KERNEL,
        )?;
        let odp = OdpFaults::new(e.admin.clone(), &dma)?;
        let ring = dma.alloc(EQ_ENTRIES as usize * EQE_LEN)?;
        let ring_addr = ring.dma_addr(0)?;
        let eq_irq = KBox::pin_init(
            IrqHandlerRegistration::new(
                e.irq,
                c"rsnic-rdma",
                EqIrq::new(ring, tables.clone(), e.events, odp.clone()),
            ),
            GFP_KERNEL,
        )?;
        e.admin.exec(AdminCmd::RdmaCreateEq {
            ring: ring_addr,
            entries: EQ_ENTRIES,
            vector: e.vector,
        })?;
        let modify = dma.alloc(QP_MODIFY_LEN)?;
        let stats = dma.alloc(COUNTERS_LEN)?;
        let admin = e.admin.clone();
        let regs = e.regs.clone();
        Ok(try_pin_init!(Self {
            _eq: EventQueueOwner(admin.clone()),
            admin,
            regs,
            dma,
            caps,
            mcast,
            udb_bar: e.udb_bar,
            ids <- kernel::new_mutex!(ids),
            tables,
            modify_block <- kernel::new_mutex!(modify),
            stats_block <- kernel::new_mutex!(stats),
            eq_irq,
            odp,
            ahs: Atomic::new(0),
            dms <- kernel::new_mutex!(KVec::new()),
        }? Error))
    }

    /// The engine's counters, as the card writes them.
    fn query_counters(&self) -> Result<RdmaCounters> {
        let block = self.stats_block.lock();
        self.admin.exec(AdminCmd::RdmaQueryStats {
            buf: block.dma_addr(0)?,
        })?;
        let mut raw = [0u8; COUNTERS_LEN];
        block.read(0, &mut raw)?;
        Ok(RdmaCounters::from_bytes(&raw))
    }

    /// Registers `reg` on the card; its key is given back if the card
    /// refuses.
    fn register_mr(&self, reg: MrReg) -> Result<MrKeys> {
        if let Err(e) = self.admin.exec(AdminCmd::RdmaRegMr(reg)) {
            self.ids.lock().mrs.free(reg.key >> 8);
            return Err(e.into());
        }
        Ok(MrKeys {
            lkey: reg.key,
            rkey: reg.key,
        })
    }

    /// Takes the MR or memory window whose index `key` names off the card
    /// and gives the index back. The key the card knows may have a newer
    /// variant byte (fast registration, binds); the index names the entry.
    fn release_key(&self, key: u32) {
        let _ = self.admin.exec(AdminCmd::RdmaDeregMr { key });
        self.ids.lock().mrs.free(key >> 8);
    }

    /// Takes SRQ `srqn` off the card and out of the tables and gives its
    /// number back; `None` if the tables did not hold it.
    fn release_srq(&self, srqn: u32) -> Option<SrqEntry> {
        let _ = self.admin.exec(AdminCmd::RdmaDestroySrq { srqn });
        let entry = lock_irqsave(&self.tables)
            .srqs
            .get_mut(srqn as usize)
            .and_then(Option::take)?;
        self.ids.lock().srqs.free(srqn);
        Some(entry)
    }

    /// The tables completions and events are resolved against.
    pub(crate) fn tables(&self) -> &SpinLock<Tables> {
        &self.tables
    }

    /// Entries of the GID table.
    pub(crate) fn gid_table_len(&self) -> u32 {
        u32::from(self.caps.gid_table_len)
    }

    /// READs and atomics a QP may have outstanding, either way
    /// (`max_qp_rd_atom`, `max_qp_init_rd_atom`).
    pub(crate) fn max_qp_rd_atom(&self) -> u32 {
        self.caps.max_qp_rd_atom
    }

    /// Writes an RDMA doorbell.
    pub(crate) fn doorbell(&self, reg: usize, value: u32) -> Result {
        self.regs.write(reg, value)
    }

    /// Has the card apply a modify. A transition the card refuses is
    /// `EINVAL`, as verbs drivers report an illegal one.
    pub(crate) fn modify_qp_on_card(&self, qpn: u32, m: &QpModify) -> Result {
        let block = self.modify_block.lock();
        block.write(0, &m.to_bytes())?;
        let addr = block.dma_addr(0)?;
        match self.admin.exec(AdminCmd::RdmaModifyQp { qpn, block: addr }) {
            Ok(_) => Ok(()),
            Err(AdminError::Refused(AdminStatus::BadState)) => Err(EINVAL),
            Err(e) => Err(e.into()),
        }
    }

    /// Completions and events the driver did not believe, and the
    /// completions it reported with an error status.
    pub(crate) fn completion_counts(&self) -> (u64, CqeErrors) {
        let t = lock_irqsave(&self.tables);
        (t.bogus, t.cqe_errors)
    }

    /// Events handled.
    pub(crate) fn events(&self) -> u64 {
        self.eq_irq
            .handler()
            .events
            .load(kernel::sync::atomic::Relaxed)
    }
}

/// Arms an SRQ's limit (0 disarms): recorded for `query_srq` before the
/// card may fire it.
fn arm_srq(d: &RdmaDev, srqn: u32, entries: u32, limit: u32) -> Result {
    if limit > entries {
        return Err(EINVAL);
    }
    if let Some(e) = lock_irqsave(&d.tables).srq(srqn) {
        e.limit = limit;
    }
    d.admin.exec(AdminCmd::RdmaArmSrq { srqn, limit })?;
    Ok(())
}

/// The card's registration of a user region of PD `pd` over `mem` at
/// address `iova` with `access` (its key still to be set), and the list of
/// its pages, which the card reads once, at registration.
fn user_mr_reg(
    d: &RdmaDev,
    pd: u32,
    mem: &UserMemory,
    iova: u64,
    access: Access,
) -> Result<(DmaBuffer, MrReg)> {
    let shift = mem
        .best_page_shift(d.caps.page_size_cap, iova)
        .ok_or(EINVAL)?;
    let pages = mem.dma_blocks(shift)?;
    let count = u32::try_from(pages.len())
        .ok()
        .filter(|n| (1..=MAX_USER_MR_PAGES).contains(n))
        .ok_or(EINVAL)?;
    let list = d.dma.alloc(pages.len() * 8)?;
    for (i, page) in pages.iter().enumerate() {
        list.write(i * 8, &page.to_le_bytes())?;
    }
    let reg = MrReg {
        key: 0,
        pd,
        access: access_bits(access),
        kind: mr_kind::USER,
        max_pages: count,
        page_shift: shift,
        pbl: list.dma_addr(0)?,
        iova,
        len: mem.len(),
    };
    Ok((list, reg))
}

/// A ring's size: what was asked for, rounded up to a power of two.
fn ring_size(asked: u32, max: u32) -> Result<u32> {
    if asked > max {
        return Err(EINVAL);
    }
    Ok(asked.max(MIN_RING).next_power_of_two().min(max))
}

/// How many counters [`HW_STATS`] names.
const HW_STAT_COUNT: usize = 17;

/// The port counters `rdma statistic` shows: the engine's, then the
/// driver's.
static HW_STATS: [StatDesc; HW_STAT_COUNT] = [
    StatDesc::new(c"tx_packets"),
    StatDesc::new(c"rx_packets"),
    StatDesc::new(c"rx_icrc_errors"),
    StatDesc::new(c"rx_udp_csum_errors"),
    StatDesc::new(c"rx_dropped"),
    StatDesc::new(c"retransmits"),
    StatDesc::new(c"seq_naks_sent"),
    StatDesc::new(c"rnr_naks_sent"),
    StatDesc::new(c"retransmit_timeouts"),
    StatDesc::new(c"duplicate_requests"),
    StatDesc::new(c"refused_doorbells"),
    StatDesc::new(c"events"),
    StatDesc::new(c"bogus_completions"),
    StatDesc::new(c"req_cqe_error"),
    StatDesc::new(c"req_cqe_flush_error"),
    StatDesc::new(c"resp_cqe_error"),
    StatDesc::new(c"resp_cqe_flush_error"),
];

/// A protection domain's driver state.
#[pin_data]
pub(crate) struct RdmaPd {
    pdn: u32,
}

/// An XRC domain's driver state.
#[pin_data]
pub(crate) struct RdmaXrcd {
    xrcdn: u32,
}

/// An address handle's driver state: where its datagrams go.
#[pin_data]
pub(crate) struct RdmaAh {
    /// The card's address vector.
    pub(crate) av: AddressVector,
}

#[vtable]
impl IbDeviceOps for RdmaDev {
    const HW_STATS: &'static [StatDesc] = &HW_STATS;
    const UVERBS_ABI_VERSION: u32 = uapi::ABI_VERSION;

    type Ucontext = RdmaUcontext;
    type Pd = RdmaPd;
    type Cq = RdmaCq;
    type Qp = RdmaQp;
    type Ah = RdmaAh;
    type Mr = RdmaMr;
    type Srq = RdmaSrq;
    type Mw = RdmaMw;
    type Xrcd = RdmaXrcd;
    type Dm = RdmaDm;

    fn query_device(dev: &IbDevice<Self>) -> DeviceAttr {
        let c = &dev.data().caps;
        let stamps = c.flags & rdma_cap::CQ_TIMESTAMP != 0;
        DeviceAttr {
            fw_ver: 0,
            vendor_id: PCI_VENDOR_ID.into(),
            vendor_part_id: VENDOR_PART_ID,
            hw_ver: HW_VERSION,
            max_mr_size: c.max_mr_size,
            page_size_cap: c.page_size_cap,
            // Numbers from 1 (`Ids`): RoCE has no QP 0; ib_core's GSI QP,
            // QP 1, is one of them.
            max_qp: c.max_qp - 1,
            max_qp_wr: c.max_qp_wr,
            // The engine's one limit holds for every kind of request.
            max_send_sge: c.max_sge.into(),
            max_recv_sge: c.max_sge.into(),
            max_sge_rd: c.max_sge.into(),
            max_srq_sge: c.max_sge.into(),
            // 4.096 us * 2^15 = 134 ms, which peers add to their retry
            // timeout: an emulated engine under a slow VM acknowledges
            // late (its own shortest timeout is 50 ms, rdma.rst).
            local_ca_ack_delay: 15,
            max_cq: c.max_cq,
            // A CQ's ring keeps one entry spare (see `create_cq`).
            max_cqe: c.max_cqe - 1,
            // Keys and PD numbers from 1: key 0 is the local DMA lkey.
            max_mr: c.max_mr.saturating_sub(1),
            // A window takes a key of the same space.
            max_mw: c.max_mr.saturating_sub(1),
            max_pd: c.max_pd.saturating_sub(1),
            max_srq: c.max_srq.into(),
            max_srq_wr: if c.max_srq == 0 { 0 } else { c.max_qp_wr },
            max_ah: MAX_AH,
            max_qp_rd_atom: c.max_qp_rd_atom,
            max_fast_reg_page_list_len: c.max_fast_reg_page_list_len,
            local_dma_lkey_0: true,
            atomic_hca: c.flags & rdma_cap::ATOMIC != 0,
            flush_global: c.flags & rdma_cap::FLUSH_GLOBAL != 0,
            atomic_write: c.flags & rdma_cap::ATOMIC_WRITE != 0,
            // A process's SRQs grow (`modify_srq`); the kernel's refuse.
            srq_resize: c.max_srq != 0,
            xrc: c.flags & rdma_cap::XRC != 0 && c.max_srq != 0,
            max_dm_size: dev.data().max_dm_size(),
            max_mcast_grp: dev.data().mcast.max_groups,
            max_mcast_qp_attach: dev.data().mcast.max_qp_per_group,
            max_total_mcast_qp_attach: dev.data().mcast.max_attach,
            // The card's clock: 64 bits of nanoseconds.
            timestamp_mask: if stamps { u64::MAX } else { 0 },
            hca_core_clock_khz: if stamps { 1_000_000 } else { 0 },
            odp: (c.flags & rdma_cap::ODP != 0 && ODP_PAGE_SIZE == 4096).then_some(OdpCaps {
                rc_all: true,
                ud_send: true,
            }),
        }
    }

    fn query_port(dev: &IbDevice<Self>, _port: u32) -> PortAttr {
        PortAttr {
            gid_tbl_len: u32::from(dev.data().caps.gid_table_len),
            max_mtu: MAX_MTU,
        }
    }

    fn add_gid(dev: &IbDevice<Self>, entry: GidEntry) -> Result {
        let index = entry.index;
        // One port; the engine speaks RoCEv2 only.
        if entry.kind != GidType::RoceV2 || index >= u32::from(dev.data().caps.gid_table_len) {
            return Err(EINVAL);
        }
        let gid = Gid(entry.gid);
        dev.data().admin.exec(AdminCmd::RdmaSetGid { index, gid })?;
        Ok(())
    }

    fn del_gid(dev: &IbDevice<Self>, _port: u32, index: u32) -> Result {
        if index >= u32::from(dev.data().caps.gid_table_len) {
            return Err(EINVAL);
        }
        dev.data().admin.exec(AdminCmd::RdmaDelGid { index })?;
        Ok(())
    }

    fn alloc_ucontext(
        dev: &IbDevice<Self>,
        udata: &mut UserData<'_>,
    ) -> Result<impl PinInit<RdmaUcontext, Error>> {
        let d = dev.data();
        let bar = d.udb_bar.ok_or(ENODEV)?;
        let page = d.ids.lock().udb_pages.alloc()?;
        RdmaUcontext::new(udata, bar, page).inspect_err(|_| d.ids.lock().udb_pages.free(page))
    }

    fn dealloc_ucontext(dev: &IbDevice<Self>, uctx: &RdmaUcontext) {
        dev.data().ids.lock().udb_pages.free(uctx.page());
    }

    fn alloc_pd(dev: &IbDevice<Self>) -> Result<impl PinInit<RdmaPd, Error>> {
        let pdn = dev.data().ids.lock().pds.alloc()?;
        Ok(try_pin_init!(RdmaPd { pdn }? Error))
    }

    fn dealloc_pd(dev: &IbDevice<Self>, pd: &RdmaPd) {
        dev.data().ids.lock().pds.free(pd.pdn);
    }

    fn alloc_xrcd(dev: &IbDevice<Self>) -> Result<impl PinInit<RdmaXrcd, Error>> {
        let d = dev.data();
        // A card without XRC has no domains to give: EOPNOTSUPP, as the
        // verbs expect of a device without it.
        if d.caps.flags & rdma_cap::XRC == 0 || d.caps.max_srq == 0 {
            return Err(eopnotsupp());
        }
        let xrcdn = d.ids.lock().xrcds.alloc()?;
        Ok(try_pin_init!(RdmaXrcd { xrcdn }? Error))
    }

    fn dealloc_xrcd(dev: &IbDevice<Self>, xrcd: &RdmaXrcd) {
        dev.data().ids.lock().xrcds.free(xrcd.xrcdn);
    }

    fn alloc_dm(dev: &IbDevice<Self>, req: &DmRequest<'_>) -> Result<impl PinInit<RdmaDm, Error>> {
        dev.data().alloc_dm(req)
    }

    fn dealloc_dm(dev: &IbDevice<Self>, dm: &RdmaDm) -> Result {
        dev.data().dealloc_dm(dm)
    }

    fn reg_dm_mr(
        dev: &IbDevice<Self>,
        pd: &RdmaPd,
        dm: &RdmaDm,
        offset: u64,
        len: u64,
        access: Access,
    ) -> Result<(impl PinInit<RdmaMr, Error>, MrKeys)> {
        let d = dev.data();
        let mut reg = d.dm_mr_reg(pd.pdn, dm, offset, len, access_bits(access))?;
        reg.key = d.ids.lock().mrs.alloc()? << 8;
        let keys = d.register_mr(reg)?;
        Ok((RdmaMr::dma(reg.key), keys))
    }

    fn create_cq(
        dev: &IbDevice<Self>,
        cq: CqHandle,
        init: CqInit,
        user: Option<&mut UserCall<'_, Self>>,
    ) -> Result<(impl PinInit<RdmaCq, Error>, u32)> {
        let d = dev.data();
        // Time stamps for a process's CQ only: a kernel work completion
        // has no field for one.
        if init.timestamps && (user.is_none() || d.caps.flags & rdma_cap::CQ_TIMESTAMP == 0) {
            return Err(eopnotsupp());
        }
        let (entry_len, flags) = if init.timestamps {
            (CQE_STAMPED_LEN, cq_create::TIMESTAMP)
        } else {
            (CQE_LEN, 0)
        };
        // One more than asked: a full ring is told from an empty one by
        // the card's count, but the user may have exactly `init.entries`
        // out.
        let n = ring_size(init.entries.saturating_add(1), d.caps.max_cqe)?;
        let len = n as usize * entry_len;
        let (ring, db_page) = match &user {
            Some(u) => (RingMem::user(&d.dma, &u.udata, len)?, u.context.page()),
            None => (RingMem::Kernel(d.dma.alloc(len)?), 0),
        };
        let addr = ring.dma_addr()?;
        let cqn = d.ids.lock().cqs.alloc()?;
        if let Some(u) = user {
            let resp = uapi::CreateCqResp {
                offset: ring.mmap_offset(),
                cqn,
                entries: n,
            };
            if let Err(e) = u.udata.respond(&resp) {
                d.ids.lock().cqs.free(cqn);
                return Err(e);
            }
        }
        let created = d.admin.exec(AdminCmd::RdmaCreateCq {
            cqn,
            ring: addr,
            entries: n,
            db_page,
            flags,
        });
        if let Err(e) = created {
            d.ids.lock().cqs.free(cqn);
            return Err(e.into());
        }
        if let Some(slot) = lock_irqsave(&d.tables).cqs.get_mut(cqn as usize) {
            *slot = Some(cq);
        }
        Ok((RdmaCq::new(cqn, ring, n, entry_len), n - 1))
    }

    fn resize_user_cq(
        dev: &IbDevice<Self>,
        cq: &RdmaCq,
        entries: u32,
        user: &mut UserCall<'_, Self>,
    ) -> Result<u32> {
        let d = dev.data();
        let req: uapi::ResizeCqReq = user.udata.request()?;
        let n = ring_size(entries.saturating_add(1), d.caps.max_cqe)?;
        let ring = RingMem::user(&d.dma, &user.udata, n as usize * cq.entry_len)?;
        user.udata.respond(&uapi::ResizeCqResp {
            offset: ring.mmap_offset(),
            entries: n,
            reserved: 0,
        })?;
        // The card checks the consumer index against what it produced,
        // and refuses (nothing moved) if the unpolled completions do not
        // fit: the process keeps its old ring then.
        d.admin.exec(AdminCmd::RdmaResizeCq {
            cqn: cq.cqn,
            ring: ring.dma_addr()?,
            entries: n,
            consumed: req.consumed & 0xffff,
        })?;
        drop(cq.replace_ring(ring, n));
        Ok(n - 1)
    }

    fn destroy_cq(dev: &IbDevice<Self>, cq: &RdmaCq) -> Result<CqHandle> {
        let d = dev.data();
        // A card that does not answer keeps nothing of ours alive that we
        // free: its ring goes with the CQ only after the card let go, or
        // after the function is reset.
        let _ = d.admin.exec(AdminCmd::RdmaDestroyCq { cqn: cq.cqn });
        let handle = lock_irqsave(&d.tables)
            .cqs
            .get_mut(cq.cqn as usize)
            .and_then(Option::take)
            .ok_or(EINVAL)?;
        d.ids.lock().cqs.free(cq.cqn);
        Ok(handle)
    }

    fn poll_cq(dev: &IbDevice<Self>, cq: &RdmaCq, out: &mut WcWriter<'_>) {
        cq.poll(dev.data(), out);
    }

    fn req_notify_cq(dev: &IbDevice<Self>, cq: &RdmaCq, solicited_only: bool) -> bool {
        cq.arm(dev.data(), solicited_only)
    }

    fn create_qp(
        dev: &IbDevice<Self>,
        qp: QpHandle,
        init: &QpInit<'_, Self>,
        user: Option<&mut UserCall<'_, Self>>,
    ) -> Result<(impl PinInit<RdmaQp, Error>, u32, QpCaps)> {
        let d = dev.data();
        let c = &init.caps;
        let max_sge = u32::from(d.caps.max_sge);
        if c.max_send_sge > max_sge || (init.srq.is_none() && c.max_recv_sge > max_sge) {
            return Err(EINVAL);
        }
        // A process's provider writes inline payloads into the WQE; the
        // kernel's post path takes none (`IB_SEND_INLINE` is refused).
        let max_inline = if user.is_some() { MAX_INLINE_DATA } else { 0 };
        // CAST: MAX_INLINE_DATA is 64.
        let max_inline = max_inline as u32;
        if c.max_inline_data > max_inline {
            return Err(EINVAL);
        }
        // Only the connected QPs (RC, UC) receive from an SRQ on this
        // card.
        if init.srq.is_some() && init.kind.is_datagram() {
            return Err(eopnotsupp());
        }
        // An XRC initiator receives nothing, and is a process's: the
        // kernel's send requests have no field for the SRQ they go to.
        let ini = init.kind == QpKind::XrcIni;
        if ini && (user.is_none() || d.caps.flags & rdma_cap::XRC == 0) {
            return Err(eopnotsupp());
        }
        let own_rq = init.srq.is_none() && !ini;
        let sq_n = ring_size(c.max_send_wr, d.caps.max_qp_wr)?;
        let rq_n = if own_rq {
            ring_size(c.max_recv_wr, d.caps.max_qp_wr)?
        } else {
            0
        };
        let (sq_len, rq_len) = (sq_n as usize * SQ_WQE_LEN, rq_n as usize * RQ_WQE_LEN);
        let db_page = user.as_ref().map_or(0, |u| u.context.page());
        let ring = |len: usize| match &user {
            Some(u) => RingMem::user(&d.dma, &u.udata, len),
            None => Ok(RingMem::Kernel(d.dma.alloc(len)?)),
        };
        let sq = ring(sq_len)?;
        let rq = if own_rq { Some(ring(rq_len)?) } else { None };
        let entry = QpEntry {
            handle: qp,
            sq: WorkRing::new(sq_n)?,
            rq: WorkRing::new(rq_n)?,
            srq: init.srq.map(|s| s.srqn),
        };
        let qpn = {
            let mut ids = d.ids.lock();
            match init.kind {
                QpKind::Gsi => ids.qps.take(GSI_QPN).map(|()| GSI_QPN)?,
                _ => loop {
                    // QP1 is the GSI's, whether it exists yet or not.
                    let n = ids.qps.alloc()?;
                    if n != GSI_QPN {
                        break n;
                    }
                },
            }
        };
        let qp_type = match init.kind {
            QpKind::Rc => QpType::Rc,
            QpKind::Ud => QpType::Ud,
            QpKind::Gsi => QpType::Gsi,
            QpKind::Uc => QpType::Uc,
            QpKind::XrcIni => QpType::XrcIni,
            // Made by `create_xrc_target`.
            QpKind::XrcTgt => return Err(EINVAL),
        };
        let create = QpCreate {
            qpn,
            qp_type: qp_type as u8,
            pd: init.pd.pdn,
            sq: sq.dma_addr()?,
            rq: rq.as_ref().map_or(Ok(0), RingMem::dma_addr)?,
            sq_entries: sq_n,
            rq_entries: rq_n,
            send_cq: init.send_cq.cqn,
            recv_cq: init.recv_cq.cqn,
            db_page,
            srq: init.srq.map_or(0, |s| s.srqn),
        };
        let responded = match user {
            Some(u) => u.udata.respond(&uapi::CreateQpResp {
                sq_offset: sq.mmap_offset(),
                rq_offset: rq.as_ref().map_or(0, RingMem::mmap_offset),
                qpn,
                sq_entries: sq_n,
                rq_entries: rq_n,
                reserved: 0,
            }),
            None => Ok(()),
        };
        if let Err(e) = responded.and_then(|()| Ok(d.admin.exec(AdminCmd::RdmaCreateQp(create))?)) {
            let mut ids = d.ids.lock();
            ids.qps.free(qpn);
            if init.kind == QpKind::Gsi {
                // Keep QP1 reserved from regular allocation.
                let _ = ids.qps.take(GSI_QPN);
                ids.qps.free(GSI_QPN);
            }
            return Err(e);
        }
        if let Some(slot) = lock_irqsave(&d.tables).qps.get_mut(qpn as usize) {
            *slot = Some(entry);
        }
        let caps = QpCaps {
            max_send_wr: sq_n,
            max_recv_wr: rq_n,
            max_send_sge: max_sge,
            max_recv_sge: if own_rq { max_sge } else { 0 },
            max_inline_data: max_inline,
        };
        let state = RdmaQp::new(qpn, init.kind, init.signal_all, Some(sq), rq, caps);
        Ok((state, qpn, caps))
    }

    fn create_xrc_target(
        dev: &IbDevice<Self>,
        qp: QpHandle,
        xrcd: &RdmaXrcd,
    ) -> Result<(impl PinInit<RdmaQp, Error>, u32)> {
        let d = dev.data();
        // No queues: its entry only keeps the handle until destruction.
        let entry = QpEntry {
            handle: qp,
            sq: WorkRing::new(0)?,
            rq: WorkRing::new(0)?,
            srq: None,
        };
        let qpn = loop {
            let n = d.ids.lock().qps.alloc()?;
            if n != GSI_QPN {
                break n;
            }
        };
        let create = QpCreate {
            qpn,
            qp_type: QpType::XrcTgt as u8,
            pd: xrcd.xrcdn,
            ..QpCreate::default()
        };
        if let Err(e) = d.admin.exec(AdminCmd::RdmaCreateQp(create)) {
            d.ids.lock().qps.free(qpn);
            return Err(e.into());
        }
        if let Some(slot) = lock_irqsave(&d.tables).qps.get_mut(qpn as usize) {
            *slot = Some(entry);
        }
        let state = RdmaQp::new(qpn, QpKind::XrcTgt, false, None, None, QpCaps::default());
        Ok((state, qpn))
    }

    fn modify_qp(dev: &IbDevice<Self>, qp: &RdmaQp, attrs: &QpAttrs) -> Result {
        qp::modify(dev.data(), qp, attrs)
    }

    fn query_qp(dev: &IbDevice<Self>, qp: &RdmaQp) -> Result<QpQuery> {
        let s = *qp.settings.lock();
        // The state is the card's: a QP fails by itself.
        let entry = dev
            .data()
            .admin
            .exec(AdminCmd::RdmaQueryQp { qpn: qp.qpn })?;
        Ok(QpQuery {
            state: qp::verbs_state(QpQueryResult::read_result(&entry).state),
            path_mtu: s.path_mtu,
            dest_qpn: s.dest_qpn,
            rq_psn: s.rq_psn,
            sq_psn: s.sq_psn,
            qkey: s.qkey,
            access: s.access,
            max_rd_atomic: s.max_rd_atomic,
            max_dest_rd_atomic: s.max_dest_rd_atomic,
            retry: s.retry,
            path: s.path,
            caps: qp.caps,
            kind: qp.kind,
        })
    }

    fn destroy_qp(dev: &IbDevice<Self>, qp: &RdmaQp) -> Result<QpHandle> {
        let d = dev.data();
        let _ = d.admin.exec(AdminCmd::RdmaDestroyQp { qpn: qp.qpn });
        let entry = lock_irqsave(&d.tables)
            .qps
            .get_mut(qp.qpn as usize)
            .and_then(Option::take)
            .ok_or(EINVAL)?;
        d.ids.lock().qps.free(qp.qpn);
        Ok(entry.handle)
    }

    fn post_send(dev: &IbDevice<Self>, qp: &RdmaQp, wrs: &mut SendWrs<'_, Self>) -> Result {
        qp::post_send(dev.data(), qp, wrs)
    }

    fn post_recv(dev: &IbDevice<Self>, qp: &RdmaQp, wrs: &mut RecvWrs<'_>) -> Result {
        qp::post_recv(dev.data(), qp, wrs)
    }

    fn create_srq(
        dev: &IbDevice<Self>,
        srq: SrqHandle,
        pd: &RdmaPd,
        attr: SrqAttr,
        xrc: Option<XrcSrq<'_, Self>>,
        user: Option<&mut UserCall<'_, Self>>,
    ) -> Result<(impl PinInit<RdmaSrq, Error>, SrqAttr, u32)> {
        let d = dev.data();
        let max_sge = u32::from(d.caps.max_sge);
        if d.caps.max_srq == 0 {
            return Err(eopnotsupp());
        }
        // XRC SRQs are a process's: the kernel's CQ polling finds an SRQ
        // through its QP, and an XRC target is no QP of the kernel's.
        if xrc.is_some() && user.is_none() {
            return Err(eopnotsupp());
        }
        if attr.max_sge > max_sge || attr.limit > attr.max_wr {
            return Err(EINVAL);
        }
        let n = ring_size(attr.max_wr, d.caps.max_qp_wr)?;
        // A process's SRQ may grow (`IBV_SRQ_MAX_WR`) within its ring,
        // which has room for the most: 4096 entries, 320 KiB. The
        // kernel's own SRQs keep their size.
        let max_entries = if user.is_some() {
            ring_size(d.caps.max_qp_wr, d.caps.max_qp_wr)?
        } else {
            n
        };
        let len = max_entries as usize * RQ_WQE_LEN;
        let (ring, db_page) = match &user {
            Some(u) => (RingMem::user(&d.dma, &u.udata, len)?, u.context.page()),
            None => (RingMem::Kernel(d.dma.alloc(len)?), 0),
        };
        let entry = SrqEntry {
            handle: srq,
            ring: SharedRing::new(n)?,
            limit: 0,
        };
        let srqn = d.ids.lock().srqs.alloc()?;
        let responded = match user {
            Some(u) => u.udata.respond(&uapi::CreateSrqResp {
                offset: ring.mmap_offset(),
                srqn,
                entries: n,
                max_entries,
                reserved: 0,
            }),
            None => Ok(()),
        };
        let created = responded.and_then(|()| {
            Ok(d.admin.exec(AdminCmd::RdmaCreateSrq {
                srqn,
                ring: ring.dma_addr()?,
                entries: n,
                pd: pd.pdn,
                db_page,
                xrcd: xrc.as_ref().map_or(0, |x| x.xrcd.xrcdn),
                cq: xrc.as_ref().map_or(0, |x| x.cq.cqn),
            })?)
        });
        if let Err(e) = created {
            d.ids.lock().srqs.free(srqn);
            return Err(e);
        }
        if let Some(slot) = lock_irqsave(&d.tables).srqs.get_mut(srqn as usize) {
            *slot = Some(entry);
        }
        if attr.limit != 0 {
            if let Err(e) = arm_srq(d, srqn, n, attr.limit) {
                let _ = d.release_srq(srqn);
                return Err(e);
            }
        }
        let state = try_pin_init!(RdmaSrq {
            srqn,
            ring,
            entries <- kernel::new_mutex!(n),
            max_entries,
            max_sge,
        }? Error);
        let granted = SrqAttr {
            max_wr: n,
            max_sge,
            limit: attr.limit,
        };
        Ok((state, granted, srqn))
    }

    fn modify_srq(dev: &IbDevice<Self>, srq: &RdmaSrq, change: SrqChange) -> Result {
        let d = dev.data();
        let mut entries = srq.entries.lock();
        if let Some(max_wr) = change.max_wr {
            // Grows only, within the ring (a kernel SRQ's is full); the
            // card counts the new size from the start of the lap the last
            // post is in, as the provider does (rsnic-abi.h).
            let n = ring_size(max_wr, d.caps.max_qp_wr)?;
            if n < *entries {
                return Err(EINVAL);
            }
            if n > *entries {
                // A kernel SRQ's ring is no bigger than it is.
                if n > srq.max_entries {
                    return Err(eopnotsupp());
                }
                d.admin
                    .exec(AdminCmd::RdmaResizeSrq {
                        srqn: srq.srqn,
                        entries: n,
                    })
                    .map_err(|e| match e {
                        // An earlier resize the card has not reached.
                        AdminError::Refused(AdminStatus::BadState) => EBUSY,
                        e => e.into(),
                    })?;
                *entries = n;
            }
        }
        match change.limit {
            Some(limit) => arm_srq(d, srq.srqn, *entries, limit),
            None => Ok(()),
        }
    }

    fn query_srq(dev: &IbDevice<Self>, srq: &RdmaSrq) -> Result<SrqAttr> {
        let limit = lock_irqsave(&dev.data().tables)
            .srq(srq.srqn)
            .ok_or(EINVAL)?
            .limit;
        Ok(SrqAttr {
            max_wr: *srq.entries.lock(),
            max_sge: srq.max_sge,
            limit,
        })
    }

    fn destroy_srq(dev: &IbDevice<Self>, srq: &RdmaSrq) -> Result<SrqHandle> {
        let entry = dev.data().release_srq(srq.srqn).ok_or(EINVAL)?;
        Ok(entry.handle)
    }

    fn post_srq_recv(dev: &IbDevice<Self>, srq: &RdmaSrq, wrs: &mut RecvWrs<'_>) -> Result {
        srq::post_recv(dev.data(), srq, wrs)
    }

    fn create_ah(
        dev: &IbDevice<Self>,
        path: &AddressPath,
        user: Option<&mut UserCall<'_, Self>>,
    ) -> Result<impl PinInit<RdmaAh, Error>> {
        if u32::from(path.sgid_index) >= u32::from(dev.data().caps.gid_table_len) {
            return Err(EINVAL);
        }
        let av = address_vector(path);
        let ahs = &dev.data().ahs;
        if ahs.load(Relaxed) >= MAX_AH {
            return Err(ENOMEM);
        }
        if let Some(u) = user {
            // A process's UD sends carry the address vector themselves.
            u.udata.respond(&uapi::CreateAhResp {
                dmac: av.dmac,
                reserved: [0; 2],
            })?;
        }
        // Counted last: nothing fails after this (the init below cannot),
        // so every counted AH is one `destroy_ah` uncounts.
        let mut n = ahs.load(Relaxed);
        loop {
            if n >= MAX_AH {
                return Err(ENOMEM);
            }
            match ahs.cmpxchg(n, n + 1, Relaxed) {
                Ok(_) => break,
                Err(now) => n = now,
            }
        }
        Ok(try_pin_init!(RdmaAh { av }? Error))
    }

    fn destroy_ah(dev: &IbDevice<Self>, _ah: &RdmaAh) {
        dev.data().ahs.fetch_sub(1, Relaxed);
    }

    fn get_dma_mr(
        dev: &IbDevice<Self>,
        pd: &RdmaPd,
        access: Access,
    ) -> Result<(impl PinInit<RdmaMr, Error>, MrKeys)> {
        let d = dev.data();
        let key = d.ids.lock().mrs.alloc()? << 8;
        let reg = MrReg {
            key,
            pd: pd.pdn,
            access: access_bits(access) | crate::hw::rdma::access::LOCAL_WRITE,
            kind: mr_kind::DMA,
            ..MrReg::default()
        };
        let keys = d.register_mr(reg)?;
        Ok((RdmaMr::dma(key), keys))
    }

    fn alloc_mr(
        dev: &IbDevice<Self>,
        pd: &RdmaPd,
        max_pages: u32,
    ) -> Result<(impl PinInit<RdmaMr, Error>, MrKeys)> {
        let d = dev.data();
        if max_pages == 0 || max_pages > d.caps.max_fast_reg_page_list_len {
            return Err(EINVAL);
        }
        let list = d.dma.alloc(max_pages as usize * 8)?;
        let key = d.ids.lock().mrs.alloc()? << 8;
        let reg = MrReg {
            key,
            pd: pd.pdn,
            access: 0,
            kind: mr_kind::FAST_REG,
            max_pages,
            ..MrReg::default()
        };
        let keys = d.register_mr(reg)?;
        Ok((RdmaMr::fast_reg(key, list, max_pages), keys))
    }

    fn alloc_mw(
        dev: &IbDevice<Self>,
        pd: &RdmaPd,
        kind: MwKind,
    ) -> Result<(impl PinInit<RdmaMw, Error>, u32)> {
        let d = dev.data();
        // Windows and regions share the card's key space.
        let key = d.ids.lock().mrs.alloc()? << 8;
        let reg = MrReg {
            key,
            pd: pd.pdn,
            access: 0,
            kind: match kind {
                MwKind::Type1 => mr_kind::MW_TYPE1,
                MwKind::Type2 => mr_kind::MW_TYPE2,
            },
            ..MrReg::default()
        };
        d.register_mr(reg)?;
        Ok((try_init!(RdmaMw { key }? Error), key))
    }

    fn dealloc_mw(dev: &IbDevice<Self>, mw: &RdmaMw) -> Result {
        dev.data().release_key(mw.key);
        Ok(())
    }

    fn mr_clear_pages(mr: &RdmaMr) {
        mr.clear_pages();
    }

    fn mr_add_page(mr: &RdmaMr, addr: u64) -> Result {
        mr.add_page(addr)
    }

    fn attach_mcast(dev: &IbDevice<Self>, qp: &RdmaQp, gid: &[u8; 16]) -> Result {
        let d = dev.data();
        if d.mcast.max_groups == 0 {
            return Err(eopnotsupp());
        }
        let cmd = AdminCmd::RdmaAttachMcast {
            qpn: qp.qpn,
            gid: Gid(*gid),
        };
        match d.admin.exec(cmd) {
            Ok(_) => Ok(()),
            // A full table is ENOMEM, as rxe and mlx4 report it.
            Err(AdminError::Refused(AdminStatus::NoSpace)) => Err(ENOMEM),
            Err(e) => Err(e.into()),
        }
    }

    fn detach_mcast(dev: &IbDevice<Self>, qp: &RdmaQp, gid: &[u8; 16]) -> Result {
        let cmd = AdminCmd::RdmaDetachMcast {
            qpn: qp.qpn,
            gid: Gid(*gid),
        };
        match dev.data().admin.exec(cmd) {
            Ok(_) => Ok(()),
            // Not a member: EINVAL, as rxe.
            Err(AdminError::Refused(AdminStatus::NotFound)) => Err(EINVAL),
            Err(e) => Err(e.into()),
        }
    }

    fn hw_stats(dev: &IbDevice<Self>, _port: u32, out: &mut [u64]) {
        let d = dev.data();
        // A card that does not answer reads as zeros.
        let c = d.query_counters().unwrap_or_default();
        let (bogus, errors) = d.completion_counts();
        // One value per name in `HW_STATS`, in its order.
        let values: [u64; HW_STAT_COUNT] = [
            c.tx_packets,
            c.rx_packets,
            c.rx_icrc_errors,
            c.rx_udp_csum_errors,
            c.rx_dropped,
            c.retransmits,
            c.seq_naks,
            c.rnr_naks,
            c.timeouts,
            c.duplicates,
            c.refused_doorbells,
            d.events(),
            bogus,
            errors.req,
            errors.req_flush,
            errors.resp,
            errors.resp_flush,
        ];
        for (o, v) in out.iter_mut().zip(values) {
            *o = v;
        }
    }

    fn reg_user_mr(
        dev: &IbDevice<Self>,
        pd: &RdmaPd,
        mem: UserMemory,
        iova: u64,
        access: Access,
    ) -> Result<(impl PinInit<RdmaMr, Error>, MrKeys)> {
        let d = dev.data();
        let (list, mut reg) = user_mr_reg(d, pd.pdn, &mem, iova, access)?;
        reg.key = d.ids.lock().mrs.alloc()? << 8;
        let keys = d.register_mr(reg)?;
        // The card read the list at registration; it is not needed after.
        drop(list);
        let region = UserRegion {
            mem,
            iova,
            access,
            pd: pd.pdn,
        };
        Ok((RdmaMr::user(reg.key, region), keys))
    }

    fn reg_user_mr_on_demand(
        dev: &IbDevice<Self>,
        pd: &RdmaPd,
        pin: &UserPin<'_>,
        range: UserRange,
        access: Access,
    ) -> Result<(impl PinInit<RdmaMr, Error>, MrKeys)> {
        let d = dev.data();
        // The card's on-demand pages are 4 KiB, the kernel's the CPU's.
        if d.caps.flags & rdma_cap::ODP == 0 || ODP_PAGE_SIZE != 4096 {
            return Err(eopnotsupp());
        }
        // The card counts pages from the region's first address and the
        // kernel from the process's: the two must lie alike in a page.
        if range.len == 0 || range.addr % ODP_PAGE_SIZE != range.iova % ODP_PAGE_SIZE {
            return Err(EINVAL);
        }
        let key = d.ids.lock().mrs.alloc()? << 8;
        let made = pin
            .on_demand(range.addr, range.len, access, d.odp.card_unmap(key))
            .and_then(|mem| OdpRegion::new(key, pd.pdn, mem));
        let region = match made {
            Ok(region) => region,
            Err(e) => {
                d.ids.lock().mrs.free(key >> 8);
                return Err(e);
            }
        };
        let reg = MrReg {
            key,
            pd: pd.pdn,
            access: access_bits(access),
            kind: mr_kind::ODP,
            max_pages: region.pages(),
            page_shift: 12,
            pbl: 0,
            iova: range.iova,
            len: range.len,
        };
        // Known before the card may fault on it.
        if let Err(e) = d.odp.add(region.clone()) {
            d.ids.lock().mrs.free(key >> 8);
            return Err(e);
        }
        let keys = match d.register_mr(reg) {
            Ok(keys) => keys,
            Err(e) => {
                d.odp.remove(key);
                return Err(e);
            }
        };
        Ok((RdmaMr::on_demand(key, region), keys))
    }

    fn advise_mr(
        dev: &IbDevice<Self>,
        pd: &RdmaPd,
        sges: &[Sge],
        _write: bool,
        fault: bool,
    ) -> Result {
        let odp = &dev.data().odp;
        for s in sges {
            // Only on-demand regions of the caller's PD (ib_core checked
            // the PD is the caller's), so no other process's memory.
            let region = odp
                .region(s.lkey)
                .filter(|r| r.pd == pd.pdn)
                .ok_or(EINVAL)?;
            let mr_start = region.start();
            if s.len == 0 {
                continue;
            }
            let first = s.addr.checked_sub(mr_start).ok_or(EINVAL)? / ODP_PAGE_SIZE;
            let last = (s.addr - mr_start + u64::from(s.len)).div_ceil(ODP_PAGE_SIZE);
            let end = u32::try_from(last)
                .ok()
                .filter(|&e| e <= region.pages())
                .ok_or(EINVAL)?;
            // CAST: below `end`, a u32.
            let mut page = first as u32;
            while page < end {
                let n = (end - page).min(MAX_ODP_MAP_PAGES);
                odp.map(&region, page, n, fault)?;
                page += n;
            }
        }
        Ok(())
    }

    fn rereg_user_mr(
        dev: &IbDevice<Self>,
        mr: &RdmaMr,
        pd: &RdmaPd,
        pin: &UserPin<'_>,
        range: Option<UserRange>,
        access: Option<Access>,
    ) -> Result {
        let d = dev.data();
        if mr.on_demand.is_some() {
            // Not built: an on-demand region stays as registered.
            return Err(eopnotsupp());
        }
        let mut user = mr.user_region();
        let cur: &mut UserRegion = (*user).as_mut().ok_or(EINVAL)?;
        let access = access.unwrap_or(cur.access);
        let range = range.unwrap_or(UserRange {
            addr: cur.mem.addr(),
            len: cur.mem.len(),
            iova: cur.iova,
        });
        // Pinned afresh even over the same range: the new access may
        // need the pages pinned writable.
        let mem = pin.pin(range.addr, range.len, access)?;
        let (list, mut reg) = user_mr_reg(d, pd.pdn, &mem, range.iova, access)?;
        reg.key = mr.key;
        // The same key, registered anew: the card has no in-place change.
        let _ = d.admin.exec(AdminCmd::RdmaDeregMr { key: mr.key });
        if let Err(e) = d.admin.exec(AdminCmd::RdmaRegMr(reg)) {
            // Back to the old registration, if the card takes it.
            if let Ok((_old_list, mut old)) = user_mr_reg(d, cur.pd, &cur.mem, cur.iova, cur.access)
            {
                old.key = mr.key;
                let _ = d.admin.exec(AdminCmd::RdmaRegMr(old));
            }
            return Err(e.into());
        }
        drop(list);
        // The old pages are unpinned once the card no longer maps them.
        *cur = UserRegion {
            mem,
            iova: range.iova,
            access,
            pd: pd.pdn,
        };
        Ok(())
    }

    fn dereg_mr(dev: &IbDevice<Self>, mr: &RdmaMr) -> Result {
        let d = dev.data();
        if mr.on_demand.is_some() {
            // No mapping is sent for the key from now on.
            d.odp.remove(mr.key);
        }
        d.release_key(mr.key);
        Ok(())
    }
}
