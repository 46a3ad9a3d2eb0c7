// SPDX-License-Identifier: GPL-2.0

//! RDMA devices: `struct ib_device` with a Rust driver state after it, and
//! `ib_device_ops` dispatched to a Rust trait.
//!
//! The pattern of [`super::netdev`]: ib_core allocates the device
//! (`ib_alloc_device`, which the driver's struct must start with), the
//! driver state `T` is pinned-initialised in place behind it, and dropped
//! in place once `ib_unregister_device` has returned, so every callback
//! sees a live `T`. The layer serves RoCE devices: each port's link layer
//! is Ethernet and its GIDs are the addresses of the net device bound to
//! it; which RoCE versions a port speaks is the driver's
//! ([`IbDeviceOps::ROCE_VERSIONS`]).

use core::{marker::PhantomData, ptr::NonNull};

use kernel::{device::Device, error::VTABLE_DEFAULT_ERROR, ffi::c_int, prelude::*, types::Opaque};

use crate::linux::bindings;
use crate::linux::net::upper::PortNetDev;
use crate::linux::rdma::{
    device_adapter::Adapter,
    dm::DmRequest,
    udata::{UserCall, UserData},
    umem::{UserMemory, UserPin, UserRange},
    verbs::{
        Access, AddressPath, CqHandle, MrKeys, MwKind, QpAttrs, QpCaps, QpHandle, QpInit, QpQuery,
        RecvWrs, SendWrs, SrqAttr, SrqChange, SrqHandle, StatDesc, WcWriter, XrcSrq,
    },
    work_request::Sge,
};

/// The device's limits, reported by `query_device` (`ib_device_attr`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct DeviceAttr {
    /// Firmware version.
    pub(crate) fw_ver: u64,
    /// Vendor ID (the PCI vendor).
    pub(crate) vendor_id: u32,
    /// Vendor part ID.
    pub(crate) vendor_part_id: u32,
    /// Hardware version.
    pub(crate) hw_ver: u32,
    /// Largest memory region in bytes.
    pub(crate) max_mr_size: u64,
    /// Page sizes a memory region may use (bit n: 2^n bytes).
    pub(crate) page_size_cap: u64,
    /// Queue pairs.
    pub(crate) max_qp: u32,
    /// Work requests per queue.
    pub(crate) max_qp_wr: u32,
    /// Scatter/gather entries per send work request.
    pub(crate) max_send_sge: u32,
    /// Scatter/gather entries per receive work request.
    pub(crate) max_recv_sge: u32,
    /// Scatter/gather entries of an RDMA READ's local side.
    pub(crate) max_sge_rd: u32,
    /// Scatter/gather entries per shared receive queue request.
    pub(crate) max_srq_sge: u32,
    /// How long the device may delay an ACK: 4.096 us * 2^this
    /// (`local_ca_ack_delay`, which peers add to their retry timeout).
    pub(crate) local_ca_ack_delay: u8,
    /// Completion queues.
    pub(crate) max_cq: u32,
    /// Entries per completion queue.
    pub(crate) max_cqe: u32,
    /// Memory regions.
    pub(crate) max_mr: u32,
    /// Memory windows, of type 1 and 2B (`IB_DEVICE_MEM_WINDOW`,
    /// `IB_DEVICE_MEM_WINDOW_TYPE_2B`); 0: the device has none.
    pub(crate) max_mw: u32,
    /// Protection domains.
    pub(crate) max_pd: u32,
    /// Shared receive queues (0: none).
    pub(crate) max_srq: u32,
    /// Requests of one shared receive queue.
    pub(crate) max_srq_wr: u32,
    /// Address handles.
    pub(crate) max_ah: u32,
    /// Outstanding RDMA READs per QP (requester and responder).
    pub(crate) max_qp_rd_atom: u32,
    /// Pages of a fast-registration page list; 0 if the device has no
    /// fast registration (`IB_DEVICE_MEM_MGT_EXTENSIONS`).
    pub(crate) max_fast_reg_page_list_len: u32,
    /// Key 0 reaches all memory by bus address for local access, for
    /// every PD (`IBK_LOCAL_DMA_LKEY`).
    pub(crate) local_dma_lkey_0: bool,
    /// RC atomics, atomic against the device's own accesses only
    /// (`IB_ATOMIC_HCA`; else `IB_ATOMIC_NONE`).
    pub(crate) atomic_hca: bool,
    /// RDMA FLUSH for global visibility (`IB_DEVICE_FLUSH_GLOBAL`).
    pub(crate) flush_global: bool,
    /// RDMA ATOMIC WRITE (`IB_DEVICE_ATOMIC_WRITE`).
    pub(crate) atomic_write: bool,
    /// Shared receive queues grow on `modify_srq` (`IB_DEVICE_SRQ_RESIZE`).
    pub(crate) srq_resize: bool,
    /// XRC domains, SRQs and QPs (`IB_DEVICE_XRC`; needs
    /// [`IbDeviceOps::alloc_xrcd`]).
    pub(crate) xrc: bool,
    /// Bytes of device memory one allocation may have (0: none; needs
    /// [`IbDeviceOps::alloc_dm`]).
    pub(crate) max_dm_size: u64,
    /// UD multicast groups (0: no multicast).
    pub(crate) max_mcast_grp: u32,
    /// Queue pairs one multicast group holds.
    pub(crate) max_mcast_qp_attach: u32,
    /// Multicast attachments of all groups together.
    pub(crate) max_total_mcast_qp_attach: u32,
    /// The bits of a completion time stamp that count (0: the device
    /// stamps no completion).
    pub(crate) timestamp_mask: u64,
    /// The time stamps' clock in kHz (1000000: nanoseconds).
    pub(crate) hca_core_clock_khz: u64,
    /// On-demand paging (`IBK_ON_DEMAND_PAGING`, `IB_ODP_SUPPORT`): what
    /// RC and UD QPs may do on on-demand regions; `None`: no on-demand
    /// regions.
    pub(crate) odp: Option<OdpCaps>,
}

/// What QPs may do with on-demand regions (`ib_odp_transport_cap_bits`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct OdpCaps {
    /// RC: SENDs, receives, WRITEs, READs, atomics, SRQ receives,
    /// FLUSHes and ATOMIC WRITEs.
    pub(crate) rc_all: bool,
    /// UD: SENDs.
    pub(crate) ud_send: bool,
}

/// What a CQ is created with.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CqInit {
    /// Room asked for, in completions.
    pub(crate) entries: u32,
    /// Each completion carries the device's clock
    /// (`IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION`, which libibverbs sets
    /// for `IBV_WC_EX_WITH_COMPLETION_TIMESTAMP*`).
    pub(crate) timestamps: bool,
}

/// What `query_port` reports beyond what the net device says.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PortAttr {
    /// Entries of the GID table.
    pub(crate) gid_tbl_len: u32,
    /// Largest RoCE MTU in bytes (256..=4096, a power of two).
    pub(crate) max_mtu: u32,
}

/// The RoCE versions a device's ports speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RoceVersions {
    /// RoCE v1 (Ethernet, ethertype 0x8915).
    pub(crate) v1: bool,
    /// RoCE v2 (IP/UDP port 4791).
    pub(crate) v2: bool,
}

impl RoceVersions {
    /// RoCE v2 only.
    pub(crate) const V2: Self = Self {
        v1: false,
        v2: true,
    };

    pub(super) fn core_caps(self) -> u32 {
        let mut caps = 0;
        if self.v1 {
            caps |= bindings::RDMA_CORE_PORT_IBA_ROCE;
        }
        if self.v2 {
            caps |= bindings::RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
        }
        caps
    }
}

/// The kind of a GID table entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GidType {
    /// RoCE v1.
    RoceV1,
    /// RoCE v2.
    RoceV2,
}

/// A GID table entry ib_core asks the driver to program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct GidEntry {
    /// Port (1-based).
    pub(crate) port: u32,
    /// Index in the port's table.
    pub(crate) index: u32,
    /// Kind.
    pub(crate) kind: GidType,
    /// The address (IPv6, or IPv4-mapped).
    pub(crate) gid: [u8; 16],
}

/// What an RDMA device driver does, called by ib_core.
///
/// Objects ib_core allocates (PD, CQ, QP, AH) hold the driver's state
/// ([`IbDeviceOps::Pd`]...) after the ib_core struct; memory regions are
/// allocated by this layer. Process context unless a method says otherwise.
#[vtable]
pub(crate) trait IbDeviceOps: Send + Sync + Sized + 'static {
    /// The RoCE versions the ports speak.
    const ROCE_VERSIONS: RoceVersions = RoceVersions::V2;
    /// The ports' hardware counters (`rdma statistic`), by name.
    const HW_STATS: &'static [StatDesc] = &[];
    /// The user-verbs ABI version a provider library must match
    /// (`uverbs_abi_ver`); only used with
    /// [`IbDeviceOps::alloc_ucontext`].
    const UVERBS_ABI_VERSION: u32 = 0;

    /// A user context's state: one per process (per open of the device's
    /// uverbs node and `ibv_open_device`).
    type Ucontext: Send + Sync;

    /// A protection domain's state.
    type Pd: Send + Sync;
    /// A completion queue's state.
    type Cq: Send + Sync;
    /// A queue pair's state.
    type Qp: Send + Sync;
    /// An address handle's state.
    type Ah: Send + Sync;
    /// A memory region's state.
    type Mr: Send + Sync;
    /// A shared receive queue's state.
    type Srq: Send + Sync;
    /// A memory window's state.
    type Mw: Send + Sync;
    /// An XRC domain's state.
    type Xrcd: Send + Sync;
    /// A device memory allocation's state.
    type Dm: Send + Sync;

    /// `query_device`: the device's limits.
    fn query_device(dev: &IbDevice<Self>) -> DeviceAttr;
    /// `query_port` of port `port` (1-based, checked by the layer).
    fn query_port(dev: &IbDevice<Self>, port: u32) -> PortAttr;
    /// `add_gid`: program a GID (may sleep). Without it, ib_core keeps
    /// the GID table in software only.
    fn add_gid(_dev: &IbDevice<Self>, _entry: GidEntry) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// `del_gid`: clear entry `index` of port `port`.
    fn del_gid(_dev: &IbDevice<Self>, _port: u32, _index: u32) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `alloc_ucontext`: a process opened the device. `udata` takes the
    /// driver's response. Without this operation the device serves kernel
    /// consumers only (ib_core creates no uverbs node for it).
    #[allow(unreachable_code)]
    fn alloc_ucontext(
        _dev: &IbDevice<Self>,
        _udata: &mut UserData<'_>,
    ) -> Result<impl PinInit<Self::Ucontext, Error>> {
        build_error!(VTABLE_DEFAULT_ERROR);
        // Gives the signature's initialiser a type; never reached.
        Err::<Result<Self::Ucontext>, _>(EINVAL)
    }
    /// `dealloc_ucontext`: every object of the context is destroyed.
    fn dealloc_ucontext(_dev: &IbDevice<Self>, _uctx: &Self::Ucontext) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `alloc_pd`.
    fn alloc_pd(dev: &IbDevice<Self>) -> Result<impl PinInit<Self::Pd, Error>>;
    /// `dealloc_pd`.
    fn dealloc_pd(dev: &IbDevice<Self>, pd: &Self::Pd);

    /// `alloc_xrcd`: an XRC domain (ib_uverbs shares one among the
    /// processes that open it through the same file). Without it ib_core
    /// refuses XRC.
    #[allow(unreachable_code)]
    fn alloc_xrcd(_dev: &IbDevice<Self>) -> Result<impl PinInit<Self::Xrcd, Error>> {
        build_error!(VTABLE_DEFAULT_ERROR);
        // Gives the signature's initialiser a type; never reached.
        Err::<Result<Self::Xrcd>, _>(EINVAL)
    }
    /// `dealloc_xrcd`: no SRQ or QP uses it any more (ib_core counts
    /// them).
    fn dealloc_xrcd(_dev: &IbDevice<Self>, _xrcd: &Self::Xrcd) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `alloc_dm`: device memory for the calling process (`req`), which
    /// the driver lets it map ([`DmRequest::map_at`]). Without it ib_core
    /// refuses `ibv_alloc_dm`.
    #[allow(unreachable_code)]
    fn alloc_dm(
        _dev: &IbDevice<Self>,
        _req: &DmRequest<'_>,
    ) -> Result<impl PinInit<Self::Dm, Error>> {
        build_error!(VTABLE_DEFAULT_ERROR);
        // Gives the signature's initialiser a type; never reached.
        Err::<Result<Self::Dm>, _>(EINVAL)
    }
    /// `dealloc_dm`: no memory region uses it any more (ib_core counts
    /// them).
    fn dealloc_dm(_dev: &IbDevice<Self>, _dm: &Self::Dm) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// `reg_dm_mr`: a zero-based region over `len` bytes of `dm` from
    /// `offset` (ib_core checked they are inside it).
    #[allow(unreachable_code)]
    fn reg_dm_mr(
        _dev: &IbDevice<Self>,
        _pd: &Self::Pd,
        _dm: &Self::Dm,
        _offset: u64,
        _len: u64,
        _access: Access,
    ) -> Result<(impl PinInit<Self::Mr, Error>, MrKeys)> {
        build_error!(VTABLE_DEFAULT_ERROR);
        // Gives the signature's initialiser a type; never reached.
        Err::<(Result<Self::Mr>, MrKeys), _>(EINVAL)
    }

    /// `create_cq` with room for at least `init.entries` completions: the
    /// state and the room granted. The driver keeps `cq` until
    /// [`IbDeviceOps::destroy_cq`] gives it back. `user` is a process's
    /// call (the driver answers through its udata); the process polls
    /// such a CQ itself, never through [`IbDeviceOps::poll_cq`].
    fn create_cq(
        dev: &IbDevice<Self>,
        cq: CqHandle,
        init: CqInit,
        user: Option<&mut UserCall<'_, Self>>,
    ) -> Result<(impl PinInit<Self::Cq, Error>, u32)>;
    /// `destroy_cq`: returns the handle given at creation (so nothing can
    /// notify the CQ any more).
    fn destroy_cq(dev: &IbDevice<Self>, cq: &Self::Cq) -> Result<CqHandle>;
    /// `poll_cq`: moves completions into `out` (any context).
    fn poll_cq(dev: &IbDevice<Self>, cq: &Self::Cq, out: &mut WcWriter<'_>);
    /// `resize_user_cq`: gives a process's CQ room for at least `entries`
    /// completions; returns the room granted. Without it ib_core refuses
    /// (`ibv_resize_cq` fails with `EOPNOTSUPP`).
    fn resize_user_cq(
        _dev: &IbDevice<Self>,
        _cq: &Self::Cq,
        _entries: u32,
        _user: &mut UserCall<'_, Self>,
    ) -> Result<u32> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// `req_notify_cq`: arms the CQ; returns whether completions are
    /// already waiting (for `IB_CQ_REPORT_MISSED_EVENTS`). Any context.
    fn req_notify_cq(dev: &IbDevice<Self>, cq: &Self::Cq, solicited_only: bool) -> bool;

    /// `create_qp`: the state, the QP number and the sizes granted. The
    /// driver keeps `qp` until [`IbDeviceOps::destroy_qp`] gives it back.
    /// `user` as for [`IbDeviceOps::create_cq`]: the process posts to
    /// such a QP itself, never through [`IbDeviceOps::post_send`].
    fn create_qp(
        dev: &IbDevice<Self>,
        qp: QpHandle,
        init: &QpInit<'_, Self>,
        user: Option<&mut UserCall<'_, Self>>,
    ) -> Result<(impl PinInit<Self::Qp, Error>, u32, QpCaps)>;
    /// `create_qp` of an XRC target in domain `xrcd`: no queues, PD or
    /// CQs (ib_uverbs creates it for a process, without its udata, and
    /// shares it with every process that opens it). The state and the QP
    /// number. Only with [`IbDeviceOps::alloc_xrcd`].
    #[allow(unreachable_code)]
    fn create_xrc_target(
        _dev: &IbDevice<Self>,
        _qp: QpHandle,
        _xrcd: &Self::Xrcd,
    ) -> Result<(impl PinInit<Self::Qp, Error>, u32)> {
        build_error!(VTABLE_DEFAULT_ERROR);
        // Gives the signature's initialiser a type; never reached.
        Err::<(Result<Self::Qp>, u32), _>(EINVAL)
    }
    /// `modify_qp`.
    fn modify_qp(dev: &IbDevice<Self>, qp: &Self::Qp, attrs: &QpAttrs) -> Result;
    /// `query_qp`.
    fn query_qp(_dev: &IbDevice<Self>, _qp: &Self::Qp) -> Result<QpQuery> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// `destroy_qp`: returns the handle given at creation.
    fn destroy_qp(dev: &IbDevice<Self>, qp: &Self::Qp) -> Result<QpHandle>;
    /// `post_send` (any context): on failure, the request the iterator
    /// yielded last is the one reported as failed.
    fn post_send(dev: &IbDevice<Self>, qp: &Self::Qp, wrs: &mut SendWrs<'_, Self>) -> Result;
    /// `post_recv` (any context), as `post_send`.
    fn post_recv(dev: &IbDevice<Self>, qp: &Self::Qp, wrs: &mut RecvWrs<'_>) -> Result;

    /// `create_srq` in protection domain `pd`, with room for at least
    /// `attr.max_wr` requests of `attr.max_sge` entries, an XRC SRQ with
    /// `xrc`: the state, the sizes granted and the SRQ's number (what
    /// an XRC initiator names it by). The driver keeps `srq` until
    /// [`IbDeviceOps::destroy_srq`] gives it back. `user` as for
    /// [`IbDeviceOps::create_qp`]. Without it ib_core refuses SRQs.
    #[allow(unreachable_code)]
    fn create_srq(
        _dev: &IbDevice<Self>,
        _srq: SrqHandle,
        _pd: &Self::Pd,
        _attr: SrqAttr,
        _xrc: Option<XrcSrq<'_, Self>>,
        _user: Option<&mut UserCall<'_, Self>>,
    ) -> Result<(impl PinInit<Self::Srq, Error>, SrqAttr, u32)> {
        build_error!(VTABLE_DEFAULT_ERROR);
        // Gives the signature's initialiser a type; never reached.
        Err::<(Result<Self::Srq>, SrqAttr, u32), _>(EINVAL)
    }
    /// `modify_srq`: resize or arm the limit (may sleep).
    fn modify_srq(_dev: &IbDevice<Self>, _srq: &Self::Srq, _change: SrqChange) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// `query_srq`.
    fn query_srq(_dev: &IbDevice<Self>, _srq: &Self::Srq) -> Result<SrqAttr> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// `destroy_srq`: returns the handle given at creation. No QP uses
    /// it any more (ib_core counts them).
    fn destroy_srq(_dev: &IbDevice<Self>, _srq: &Self::Srq) -> Result<SrqHandle> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// `post_srq_recv` (any context), as `post_recv`.
    fn post_srq_recv(_dev: &IbDevice<Self>, _srq: &Self::Srq, _wrs: &mut RecvWrs<'_>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `create_ah` (may be atomic context; a process's call, `user`,
    /// is not).
    fn create_ah(
        dev: &IbDevice<Self>,
        path: &AddressPath,
        user: Option<&mut UserCall<'_, Self>>,
    ) -> Result<impl PinInit<Self::Ah, Error>>;
    /// `destroy_ah`.
    fn destroy_ah(dev: &IbDevice<Self>, ah: &Self::Ah);

    /// `get_dma_mr`: a region over all memory by bus address.
    fn get_dma_mr(
        dev: &IbDevice<Self>,
        pd: &Self::Pd,
        access: Access,
    ) -> Result<(impl PinInit<Self::Mr, Error>, MrKeys)>;
    /// `alloc_mr` of type `IB_MR_TYPE_MEM_REG` with up to `max_pages`.
    fn alloc_mr(
        dev: &IbDevice<Self>,
        pd: &Self::Pd,
        max_pages: u32,
    ) -> Result<(impl PinInit<Self::Mr, Error>, MrKeys)>;
    /// `reg_user_mr`: a region over `mem`, a process's memory, at
    /// address `iova` of the region. Without it ib_core refuses user
    /// memory regions.
    #[allow(unreachable_code)]
    fn reg_user_mr(
        _dev: &IbDevice<Self>,
        _pd: &Self::Pd,
        _mem: UserMemory,
        _iova: u64,
        _access: Access,
    ) -> Result<(impl PinInit<Self::Mr, Error>, MrKeys)> {
        build_error!(VTABLE_DEFAULT_ERROR);
        // Gives the signature's initialiser a type; never reached.
        Err::<(Result<Self::Mr>, MrKeys), _>(EINVAL)
    }
    /// `reg_user_mr` with `IB_ACCESS_ON_DEMAND`: a region over `range`
    /// of the calling process's memory, nothing pinned; `pin` registers
    /// it on demand ([`UserPin::on_demand`]). Without it (or without
    /// [`DeviceAttr::odp`]) ib_core refuses on-demand regions.
    #[allow(unreachable_code)]
    fn reg_user_mr_on_demand(
        _dev: &IbDevice<Self>,
        _pd: &Self::Pd,
        _pin: &UserPin<'_>,
        _range: UserRange,
        _access: Access,
    ) -> Result<(impl PinInit<Self::Mr, Error>, MrKeys)> {
        build_error!(VTABLE_DEFAULT_ERROR);
        // Gives the signature's initialiser a type; never reached.
        Err::<(Result<Self::Mr>, MrKeys), _>(EINVAL)
    }
    /// `advise_mr` (`ibv_advise_mr`) on `sges` of protection domain
    /// `pd`: map their pages for the device now, faulting them in (for
    /// writing if `write`) unless `fault` is false.
    fn advise_mr(
        _dev: &IbDevice<Self>,
        _pd: &Self::Pd,
        _sges: &[Sge],
        _write: bool,
        _fault: bool,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// `alloc_mw` of `kind` in protection domain `pd` (a process's call,
    /// `udata` its): the state and the window's first rkey. Without it
    /// ib_core refuses memory windows.
    #[allow(unreachable_code)]
    fn alloc_mw(
        _dev: &IbDevice<Self>,
        _pd: &Self::Pd,
        _kind: MwKind,
    ) -> Result<(impl PinInit<Self::Mw, Error>, u32)> {
        build_error!(VTABLE_DEFAULT_ERROR);
        // Gives the signature's initialiser a type; never reached.
        Err::<(Result<Self::Mw>, u32), _>(EINVAL)
    }
    /// `dealloc_mw`.
    fn dealloc_mw(_dev: &IbDevice<Self>, _mw: &Self::Mw) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// `map_mr_sg` starts: forget the pages of the last mapping.
    fn mr_clear_pages(mr: &Self::Mr);
    /// `map_mr_sg` adds a page (bus address); fails when the MR is full.
    fn mr_add_page(mr: &Self::Mr, addr: u64) -> Result;
    /// `dereg_mr`.
    fn dereg_mr(dev: &IbDevice<Self>, mr: &Self::Mr) -> Result;
    /// `rereg_user_mr`, in place (the keys stay): a region
    /// [`Self::reg_user_mr`] made now belongs to `pd` (its own or a new
    /// one), over `range` if given and with `access` if given; what is
    /// not given stays. `pin` pins the calling process's memory. A
    /// failure leaves the region as it was, if it can. Without it
    /// ib_core refuses `ibv_rereg_mr`.
    fn rereg_user_mr(
        _dev: &IbDevice<Self>,
        _mr: &Self::Mr,
        _pd: &Self::Pd,
        _pin: &UserPin<'_>,
        _range: Option<UserRange>,
        _access: Option<Access>,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `attach_mcast`: UD queue pair `qp` joins multicast group `gid`
    /// (ib_core checked that the QP is UD and the address multicast).
    /// Joined already: nothing to do. Without it ib_core refuses
    /// multicast (EOPNOTSUPP).
    fn attach_mcast(_dev: &IbDevice<Self>, _qp: &Self::Qp, _gid: &[u8; 16]) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// `detach_mcast`: `qp` leaves group `gid`.
    fn detach_mcast(_dev: &IbDevice<Self>, _qp: &Self::Qp, _gid: &[u8; 16]) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// The values of port `port`'s counters, in
    /// [`IbDeviceOps::HW_STATS`] order (`out` has one slot per name).
    /// Process context.
    fn hw_stats(_dev: &IbDevice<Self>, _port: u32, _out: &mut [u64]) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
}

/// An RDMA device whose driver struct holds a `T` after the `ib_device`.
///
/// # Invariants
///
/// Allocated by [`Registration::new`] with `T` initialised in `data` for
/// as long as a `&IbDevice<T>` exists.
#[repr(C)]
pub(crate) struct IbDevice<T> {
    ib: Opaque<bindings::ib_device>,
    data: T,
}

// SAFETY: ib_core serialises nothing for us, so `T` must be shareable;
// the C part is used from any thread by ib_core itself.
unsafe impl<T: Send + Sync> Sync for IbDevice<T> {}

impl<T> IbDevice<T> {
    /// # Safety
    ///
    /// `ptr` must be a device allocated by [`Registration::new`] for this
    /// `T`, alive (with its `T`) for `'a`.
    pub(super) unsafe fn from_raw<'a>(ptr: *mut bindings::ib_device) -> &'a Self {
        // SAFETY: The `ib_device` is the first field of the `repr(C)`
        // struct; validity is the caller's promise.
        unsafe { &*ptr.cast() }
    }

    pub(super) fn as_raw(&self) -> *mut bindings::ib_device {
        self.ib.get()
    }

    /// The driver state.
    pub(crate) fn data(&self) -> &T {
        &self.data
    }

    /// The device's name, e.g. `mlx5_0` (empty before registration).
    pub(crate) fn name(&self) -> &CStr {
        // SAFETY: `name` is a NUL-terminated array inside the live device.
        unsafe { CStr::from_char_ptr((*self.as_raw()).name.as_ptr()) }
    }

    /// Whether `port` is usable: its net device is up with carrier
    /// (`ib_get_curr_port_state`), and whether that device is up at all.
    pub(super) fn port_state(&self, port: u32) -> (bool, bool) {
        // SAFETY: Live device; the returned net device (if any) is held.
        let ndev = unsafe { bindings::ib_device_get_netdev(self.as_raw(), port) };
        if ndev.is_null() {
            return (false, false);
        }
        // SAFETY: `ndev` is held; reading its state is always allowed.
        let running = unsafe { bindings::rust_ext_netif_running(ndev) };
        // SAFETY: As above.
        let carrier = unsafe { bindings::rust_ext_netif_carrier_ok(ndev) };
        // SAFETY: Releases the hold `ib_device_get_netdev` took.
        unsafe { bindings::rust_ext_dev_put(ndev) };
        (running && carrier, running)
    }
}

/// `RDMA_NODE_IB_CA` (uapi/rdma/rdma_netlink.h): a channel adapter, as
/// every RoCE device is.
const RDMA_NODE_IB_CA: u8 = 1;

/// The EUI-64 node GUID of a MAC address (`addrconf_addr_eui48`), as the
/// big-endian value `ib_device::node_guid` holds.
pub(crate) fn node_guid(mac: &[u8; 6]) -> u64 {
    u64::from_ne_bytes([
        mac[0] ^ 2,
        mac[1],
        mac[2],
        0xff,
        0xfe,
        mac[3],
        mac[4],
        mac[5],
    ])
}

/// Settings applied to a device before it is registered.
pub(crate) struct Setup<'a> {
    /// Name pattern, e.g. `mlx5_%d`.
    pub(crate) name: &'a CStr,
    /// Node GUID, see [`node_guid`].
    pub(crate) node_guid: u64,
    /// Completion vectors.
    pub(crate) comp_vectors: u32,
    /// The module whose code the operations are (`THIS_MODULE`).
    pub(crate) module: &'static ThisModule,
}

/// A registered RDMA device; unregistered and freed on drop.
pub(crate) struct Registration<T: IbDeviceOps> {
    ibdev: NonNull<bindings::ib_device>,
    _t: PhantomData<T>,
}

// SAFETY: The registration only holds the device pointer; the device and
// `T` may be used and dropped from any thread.
unsafe impl<T: IbDeviceOps> Send for Registration<T> {}
// SAFETY: As above.
unsafe impl<T: IbDeviceOps> Sync for Registration<T> {}

/// Alignment `kzalloc` guarantees (`ARCH_KMALLOC_MINALIGN` on x86-64).
const KMALLOC_MIN_ALIGN: usize = 8;

impl<T: IbDeviceOps> Registration<T> {
    /// The registered device.
    pub(crate) fn dev(&self) -> &IbDevice<T> {
        // SAFETY: Registered by `new`, with its `T`, until we are dropped.
        unsafe { IbDevice::from_raw(self.ibdev.as_ptr()) }
    }

    /// Allocates a device, applies `setup`, initialises `T` with `init`,
    /// binds port `n + 1` to `ports[n]` (its GIDs and state follow that
    /// net device) and registers it as a child of `parent` doing DMA as
    /// `dma`.
    pub(crate) fn new(
        parent: &Device,
        dma: &Device,
        ports: &[&PortNetDev],
        setup: Setup<'_>,
        init: impl PinInit<T, Error>,
    ) -> Result<Self> {
        const { assert!(core::mem::align_of::<T>() <= KMALLOC_MIN_ALIGN) };
        let port_count = u32::try_from(ports.len())
            .ok()
            .filter(|n| (1..=u32::from(u8::MAX)).contains(n))
            .ok_or(EINVAL)?;
        // SAFETY: Plain allocation of a zeroed `IbDevice<T>`-sized block
        // that starts with an initialised `ib_device`; NULL on failure.
        let raw =
            unsafe { bindings::rust_ext_ib_alloc_device(core::mem::size_of::<IbDevice<T>>()) };
        let ibdev = NonNull::new(raw).ok_or(ENOMEM)?;
        let free = move || {
            // SAFETY: Allocated above, not registered, `T` dropped or never
            // initialised.
            unsafe { bindings::ib_dealloc_device(raw) }
        };
        let mut ops = Adapter::<T>::OPS;
        ops.owner = setup.module.as_ptr().cast();
        let parent_raw: *const Device = parent;
        // SAFETY: `raw` is a live, unregistered device; `ops` is copied by
        // `ib_set_device_ops`; `Device` is `repr(transparent)` over
        // `struct device`.
        unsafe {
            bindings::ib_set_device_ops(raw, &ops);
            bindings::rust_ext_ib_set_parent(raw, parent_raw.cast_mut().cast());
            (*raw).node_type = RDMA_NODE_IB_CA;
            (*raw).phys_port_cnt = port_count;
            // CAST: a vector count the driver gives (a few).
            (*raw).num_comp_vectors = setup.comp_vectors as c_int;
            (*raw).node_guid = setup.node_guid;
        }
        // SAFETY: `data` is inside the allocation, suitably aligned
        // (asserted above), unused, and never moves while the device lives.
        let slot = unsafe { &raw mut (*raw.cast::<IbDevice<T>>()).data };
        // SAFETY: `slot` is valid for a `T` and pinned (see above).
        if let Err(e) = unsafe { init.__pinned_init(slot) } {
            free();
            return Err(e);
        }
        let drop_data = || {
            // SAFETY: `T` was initialised above and the device is not
            // registered, so nothing else can reach it.
            unsafe { core::ptr::drop_in_place(slot) };
            free();
        };
        for (port, netdev) in (1..).zip(ports) {
            // SAFETY: Both devices are live; ib_core takes its own hold
            // on the net device.
            let ret = unsafe { bindings::ib_device_set_netdev(raw, netdev.as_raw(), port) };
            if ret != 0 {
                drop_data();
                return Err(Error::from_errno(ret));
            }
        }
        let dma_raw: *const Device = dma;
        // SAFETY: The device is fully set up and `T` initialised; `dma`
        // is a bound bus device with DMA parameters, alive for as long as
        // we are (the caller's driver data owns us).
        let ret = unsafe {
            bindings::ib_register_device(raw, setup.name.as_char_ptr(), dma_raw.cast_mut().cast())
        };
        if ret != 0 {
            drop_data();
            return Err(Error::from_errno(ret));
        }
        Ok(Self {
            ibdev,
            _t: PhantomData,
        })
    }
}

impl<T: IbDeviceOps> Drop for Registration<T> {
    fn drop(&mut self) {
        let raw = self.ibdev.as_ptr();
        // SAFETY: Registered in `new`. Unregistration removes every client
        // (they destroy their objects through our callbacks, which still
        // see `T`) and returns once no callback runs any more.
        unsafe { bindings::ib_unregister_device(raw) };
        // SAFETY: No callback can run now; `T` is dropped exactly once.
        unsafe { core::ptr::drop_in_place(&raw mut (*raw.cast::<IbDevice<T>>()).data) };
        // SAFETY: Unregistered and its `T` dropped; ib_core frees the
        // memory when its last reference goes.
        unsafe { bindings::ib_dealloc_device(raw) };
    }
}
