// SPDX-License-Identifier: GPL-2.0

//! The verbs' objects in safe form: handles to completion queues and queue
//! pairs, the attributes of a QP or an address handle. Work requests are
//! in `work_request.rs`, work completions in `completion.rs`.
//!
//! Objects ib_core allocates (PD, CQ, QP, AH) carry the driver's state
//! right after the ib_core struct ([`IbObject`]): written when the create
//! callback succeeds, dropped in place by the destroy callback.

use kernel::{prelude::*, types::Opaque};

use crate::linux::bindings;
use crate::linux::rdma::device::IbDeviceOps;

pub(crate) use crate::linux::rdma::{
    completion::{NetworkHdr, WcOpcode, WcStatus, WcWriter, WorkCompletion},
    work_request::{RecvWr, RecvWrs, SendOp, SendWr, SendWrs},
};
/// An ib_core object (`C`) followed by the driver's state for it (`D`).
///
/// # Invariants
///
/// `data` is initialised from the end of the create callback until the
/// destroy callback drops it; only then does the layer hand out `&D`.
#[repr(C)]
pub(crate) struct IbObject<C, D> {
    ib: Opaque<C>,
    data: core::mem::MaybeUninit<D>,
}

impl<C, D> IbObject<C, D> {
    /// # Safety
    ///
    /// `ib` must be the first field of an `IbObject<C, D>` whose `data` is
    /// initialised, and stay so for `'a`.
    pub(super) unsafe fn data<'a>(ib: *mut C) -> &'a D {
        // SAFETY: `ib` is the start of the `repr(C)` object (caller's
        // promise); `data` is initialised.
        unsafe { (*ib.cast::<Self>()).data.assume_init_ref() }
    }

    /// Initialises the driver's state of a freshly created object in
    /// place (it is pinned: ib_core never moves its objects).
    ///
    /// # Safety
    ///
    /// `ib` must be the first field of an allocation of at least
    /// `size_of::<Self>()` bytes whose `data` is not initialised.
    pub(super) unsafe fn init(ib: *mut C, init: impl PinInit<D, Error>) -> Result {
        // SAFETY: In bounds of the allocation (caller's promise).
        let slot = unsafe { (*ib.cast::<Self>()).data.as_mut_ptr() };
        // SAFETY: `slot` is valid for a `D`, uninitialised, and never
        // moves until the object is freed.
        unsafe { init.__pinned_init(slot) }
    }

    /// Allocates a zeroed `C` followed by `data` (objects the driver
    /// allocates itself, such as memory regions).
    pub(super) fn boxed(init: impl PinInit<D, Error>) -> Result<*mut C> {
        let obj = KBox::new(
            Self {
                ib: Opaque::zeroed(),
                data: core::mem::MaybeUninit::uninit(),
            },
            GFP_KERNEL,
        )?;
        let raw = KBox::into_raw(obj);
        // SAFETY: A fresh allocation with `ib` first; `data` uninitialised.
        if let Err(e) = unsafe { Self::init(raw.cast(), init) } {
            // SAFETY: From `into_raw` above; `data` was not initialised,
            // and `MaybeUninit` does not drop it.
            drop(unsafe { KBox::from_raw(raw) });
            return Err(e);
        }
        Ok(raw.cast())
    }

    /// Drops the state of and frees an object from [`IbObject::boxed`].
    ///
    /// # Safety
    ///
    /// `ib` must come from [`IbObject::boxed`] and not be used afterwards.
    pub(super) unsafe fn free_boxed(ib: *mut C) {
        // SAFETY: Allocated by `boxed` as a `KBox<Self>` (caller's promise).
        let mut obj = unsafe { KBox::from_raw(ib.cast::<Self>()) };
        // SAFETY: `boxed` initialised it; dropped once.
        unsafe { obj.data.assume_init_drop() };
    }

    /// Drops the driver's state.
    ///
    /// # Safety
    ///
    /// As [`IbObject::data`]; nothing may use the state afterwards.
    pub(super) unsafe fn drop_data(ib: *mut C) {
        // SAFETY: Initialised, and dropped once (caller's promise).
        unsafe { (*ib.cast::<Self>()).data.assume_init_drop() };
    }
}

/// A completion queue as ib_core knows it: how the driver tells its user
/// that completions arrived. The driver gets it at creation and must give
/// it back when the CQ is destroyed, so it cannot outlive the CQ.
///
/// # Invariants
///
/// `ptr` is a live `ib_cq` of the driver's device until the handle is
/// returned from `destroy_cq`.
pub(crate) struct CqHandle {
    ptr: *mut bindings::ib_cq,
}

// SAFETY: ib_core's CQ callbacks may be called from any context and CPU.
unsafe impl Send for CqHandle {}
// SAFETY: As above; the handle is only read.
unsafe impl Sync for CqHandle {}

impl CqHandle {
    pub(super) fn new(ptr: *mut bindings::ib_cq) -> Self {
        Self { ptr }
    }

    pub(super) fn as_raw(&self) -> *mut bindings::ib_cq {
        self.ptr
    }

    /// Completions arrived on an armed CQ: calls its user's handler
    /// (any context, as mlx5 and mana do from their event queues).
    pub(crate) fn notify(&self) {
        // SAFETY: The CQ is live (type invariant); its handler and context
        // are set by ib_core before the CQ can be armed.
        unsafe {
            if let Some(handler) = (*self.ptr).comp_handler {
                handler(self.ptr, (*self.ptr).cq_context);
            }
        }
    }

    /// The CQ overflowed: an `IB_EVENT_CQ_ERR` to its user.
    pub(crate) fn error_event(&self) {
        // SAFETY: Live CQ (type invariant); an event on the stack, which
        // the handler only reads during the call.
        unsafe {
            if let Some(handler) = (*self.ptr).event_handler {
                let mut ev: bindings::ib_event = core::mem::zeroed();
                ev.device = (*self.ptr).device;
                ev.event = bindings::ib_event_type_IB_EVENT_CQ_ERR;
                ev.element.cq = self.ptr;
                handler(&mut ev, (*self.ptr).cq_context);
            }
        }
    }
}

/// A queue pair as ib_core knows it; like [`CqHandle`], the driver gives
/// it back when the QP is destroyed.
///
/// # Invariants
///
/// `ptr` is a live `ib_qp` of the driver's device until the handle is
/// returned from `destroy_qp`.
pub(crate) struct QpHandle {
    ptr: *mut bindings::ib_qp,
}

// SAFETY: The QP's event handler may be called from any context.
unsafe impl Send for QpHandle {}
// SAFETY: As above; the handle is only read.
unsafe impl Sync for QpHandle {}

impl QpHandle {
    pub(super) fn new(ptr: *mut bindings::ib_qp) -> Self {
        Self { ptr }
    }

    pub(super) fn as_raw(&self) -> *mut bindings::ib_qp {
        self.ptr
    }

    /// The QP failed by itself: an `IB_EVENT_QP_FATAL` to its user.
    pub(crate) fn fatal_event(&self) {
        self.event(bindings::ib_event_type_IB_EVENT_QP_FATAL);
    }

    /// The QP, in error, takes no more of its SRQ's requests: an
    /// `IB_EVENT_QP_LAST_WQE_REACHED` (`ib_drain_qp` waits for it).
    pub(crate) fn last_wqe_event(&self) {
        self.event(bindings::ib_event_type_IB_EVENT_QP_LAST_WQE_REACHED);
    }

    fn event(&self, kind: bindings::ib_event_type) {
        // SAFETY: Live QP (type invariant); the event lives on the stack
        // for the call.
        unsafe {
            if let Some(handler) = (*self.ptr).event_handler {
                let mut ev: bindings::ib_event = core::mem::zeroed();
                ev.device = (*self.ptr).device;
                ev.event = kind;
                ev.element.qp = self.ptr;
                handler(&mut ev, (*self.ptr).qp_context);
            }
        }
    }
}

/// A shared receive queue as ib_core knows it; the driver gives it back
/// when the SRQ is destroyed.
///
/// # Invariants
///
/// `ptr` is a live `ib_srq` of the driver's device until the handle is
/// returned from `destroy_srq`.
pub(crate) struct SrqHandle {
    ptr: *mut bindings::ib_srq,
}

// SAFETY: The SRQ's event handler may be called from any context.
unsafe impl Send for SrqHandle {}
// SAFETY: As above; the handle is only read.
unsafe impl Sync for SrqHandle {}

impl SrqHandle {
    pub(super) fn new(ptr: *mut bindings::ib_srq) -> Self {
        Self { ptr }
    }

    pub(super) fn as_raw(&self) -> *mut bindings::ib_srq {
        self.ptr
    }

    /// Fewer requests than the armed limit are posted: an
    /// `IB_EVENT_SRQ_LIMIT_REACHED` to its user.
    pub(crate) fn limit_event(&self) {
        // SAFETY: Live SRQ (type invariant); the event lives on the stack
        // for the call.
        unsafe {
            if let Some(handler) = (*self.ptr).event_handler {
                let mut ev: bindings::ib_event = core::mem::zeroed();
                ev.device = (*self.ptr).device;
                ev.event = bindings::ib_event_type_IB_EVENT_SRQ_LIMIT_REACHED;
                ev.element.srq = self.ptr;
                handler(&mut ev, (*self.ptr).srq_context);
            }
        }
    }
}

/// A shared receive queue's sizes and limit (`ib_srq_attr`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SrqAttr {
    /// Receive requests it holds.
    pub(crate) max_wr: u32,
    /// Scatter/gather entries of one request.
    pub(crate) max_sge: u32,
    /// The armed limit (0: not armed).
    pub(crate) limit: u32,
}

impl SrqAttr {
    pub(super) fn from_raw(a: &bindings::ib_srq_attr) -> Self {
        Self {
            max_wr: a.max_wr,
            max_sge: a.max_sge,
            limit: a.srq_limit,
        }
    }

    pub(super) fn write(&self, a: &mut bindings::ib_srq_attr) {
        a.max_wr = self.max_wr;
        a.max_sge = self.max_sge;
        a.srq_limit = self.limit;
    }
}

/// What makes an SRQ an XRC SRQ: its domain and the CQ its receives
/// complete on (ib_core holds references on both).
pub(crate) struct XrcSrq<'a, T: IbDeviceOps> {
    /// The XRC domain.
    pub(crate) xrcd: &'a T::Xrcd,
    /// The completion queue.
    pub(crate) cq: &'a T::Cq,
}

/// What `modify_srq` changes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SrqChange {
    /// A new size (`IB_SRQ_MAX_WR`).
    pub(crate) max_wr: Option<u32>,
    /// A limit to arm (`IB_SRQ_LIMIT`).
    pub(crate) limit: Option<u32>,
}

/// A memory window's type (`ib_mw_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MwKind {
    /// Type 1: bound to the PD, rebound through `ibv_bind_mw`.
    Type1,
    /// Type 2: bound to a QP by a work request, invalidated by one.
    Type2,
}

impl MwKind {
    pub(super) fn from_raw(t: bindings::ib_mw_type) -> Option<Self> {
        match t {
            bindings::ib_mw_type_IB_MW_TYPE_1 => Some(Self::Type1),
            bindings::ib_mw_type_IB_MW_TYPE_2 => Some(Self::Type2),
            _ => None,
        }
    }
}

/// A QP transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum QpKind {
    /// Reliable connection.
    Rc,
    /// Unreliable datagram.
    Ud,
    /// QP1, the general services interface.
    Gsi,
    /// Unreliable connection.
    Uc,
    /// XRC initiator: an RC send queue whose requests name an XRC SRQ of
    /// the target; no receive queue.
    XrcIni,
    /// XRC target: no queues; receives into the XRC SRQs of its domain.
    XrcTgt,
}

impl QpKind {
    /// UD and QP1: every SEND names its destination.
    pub(crate) fn is_datagram(self) -> bool {
        matches!(self, Self::Ud | Self::Gsi)
    }

    pub(super) fn from_raw(t: bindings::ib_qp_type) -> Option<Self> {
        match t {
            bindings::ib_qp_type_IB_QPT_RC => Some(Self::Rc),
            bindings::ib_qp_type_IB_QPT_UC => Some(Self::Uc),
            bindings::ib_qp_type_IB_QPT_UD => Some(Self::Ud),
            bindings::ib_qp_type_IB_QPT_GSI => Some(Self::Gsi),
            bindings::ib_qp_type_IB_QPT_XRC_INI => Some(Self::XrcIni),
            bindings::ib_qp_type_IB_QPT_XRC_TGT => Some(Self::XrcTgt),
            _ => None,
        }
    }

    pub(super) fn to_raw(self) -> bindings::ib_qp_type {
        match self {
            Self::Rc => bindings::ib_qp_type_IB_QPT_RC,
            Self::Ud => bindings::ib_qp_type_IB_QPT_UD,
            Self::Gsi => bindings::ib_qp_type_IB_QPT_GSI,
            Self::Uc => bindings::ib_qp_type_IB_QPT_UC,
            Self::XrcIni => bindings::ib_qp_type_IB_QPT_XRC_INI,
            Self::XrcTgt => bindings::ib_qp_type_IB_QPT_XRC_TGT,
        }
    }
}

/// Queue sizes of a QP: asked for at creation, then what was granted.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct QpCaps {
    /// Send work requests.
    pub(crate) max_send_wr: u32,
    /// Receive work requests.
    pub(crate) max_recv_wr: u32,
    /// SGEs per send work request.
    pub(crate) max_send_sge: u32,
    /// SGEs per receive work request.
    pub(crate) max_recv_sge: u32,
    /// Bytes of payload a send work request may carry inline.
    pub(crate) max_inline_data: u32,
}

/// What `create_qp` is asked for.
pub(crate) struct QpInit<'a, T: IbDeviceOps> {
    /// Transport.
    pub(crate) kind: QpKind,
    /// Its protection domain.
    pub(crate) pd: &'a T::Pd,
    /// CQ of send completions.
    pub(crate) send_cq: &'a T::Cq,
    /// CQ of receive completions.
    pub(crate) recv_cq: &'a T::Cq,
    /// Queue sizes asked for (the receive sizes mean nothing with `srq`).
    pub(crate) caps: QpCaps,
    /// The shared receive queue it receives from, if any.
    pub(crate) srq: Option<&'a T::Srq>,
    /// Every send request completes (`IB_SIGNAL_ALL_WR`), not only the
    /// signaled ones.
    pub(crate) signal_all: bool,
}

/// Where packets go: the RoCE part of `rdma_ah_attr`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct AddressPath {
    /// Destination MAC (resolved by ib_core).
    pub(crate) dmac: [u8; 6],
    /// Destination GID.
    pub(crate) dgid: [u8; 16],
    /// Source GID index.
    pub(crate) sgid_index: u8,
    /// Hop limit.
    pub(crate) hop_limit: u8,
    /// Traffic class.
    pub(crate) traffic_class: u8,
    /// Flow label.
    pub(crate) flow_label: u32,
}

impl AddressPath {
    /// # Safety
    ///
    /// `a` must point at a valid `rdma_ah_attr` of a RoCE port.
    pub(super) unsafe fn from_raw(a: *const bindings::rdma_ah_attr) -> Self {
        // SAFETY: Valid attribute (caller's promise); for a RoCE port the
        // union holds `roce`.
        unsafe {
            let a = &*a;
            Self {
                dmac: a.__bindgen_anon_1.roce.dmac,
                dgid: a.grh.dgid.raw,
                sgid_index: a.grh.sgid_index,
                hop_limit: a.grh.hop_limit,
                traffic_class: a.grh.traffic_class,
                flow_label: a.grh.flow_label,
            }
        }
    }

    /// The path as a RoCE `rdma_ah_attr` on port `port`, with the GRH it
    /// always has and no GID attribute reference (`query_qp`'s answer).
    pub(super) fn to_raw(self, port: u32) -> bindings::rdma_ah_attr {
        let mut a = bindings::rdma_ah_attr {
            type_: bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_ROCE,
            port_num: port,
            // CAST: IB_AH_GRH is 1.
            ah_flags: bindings::ib_ah_flags_IB_AH_GRH as u8,
            ..Default::default()
        };
        a.grh.dgid.raw = self.dgid;
        a.grh.sgid_index = self.sgid_index;
        a.grh.hop_limit = self.hop_limit;
        a.grh.traffic_class = self.traffic_class;
        a.grh.flow_label = self.flow_label;
        a.__bindgen_anon_1.roce = bindings::roce_ah_attr { dmac: self.dmac };
        a
    }
}

/// The QP states of the verbs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum QpStateKind {
    /// Reset.
    Reset,
    /// Init.
    Init,
    /// Ready to receive.
    Rtr,
    /// Ready to send.
    Rts,
    /// Send queue drained.
    Sqd,
    /// Send queue error.
    Sqe,
    /// Error.
    Err,
}

impl QpStateKind {
    pub(super) fn from_raw(s: bindings::ib_qp_state) -> Option<Self> {
        Some(match s {
            0 => Self::Reset,
            1 => Self::Init,
            2 => Self::Rtr,
            3 => Self::Rts,
            4 => Self::Sqd,
            5 => Self::Sqe,
            6 => Self::Err,
            _ => return None,
        })
    }

    pub(super) fn to_raw(self) -> bindings::ib_qp_state {
        self as bindings::ib_qp_state
    }
}

/// Access rights as the verbs give them (`IB_ACCESS_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Access {
    /// Local write.
    pub(crate) local_write: bool,
    /// Remote write.
    pub(crate) remote_write: bool,
    /// Remote read.
    pub(crate) remote_read: bool,
    /// Remote atomics.
    pub(crate) remote_atomic: bool,
    /// Memory windows may be bound over it (an MR's right).
    pub(crate) mw_bind: bool,
    /// A peer may RDMA FLUSH it for global visibility.
    pub(crate) flush_global: bool,
    /// A peer may RDMA FLUSH it for persistence (ib_core refuses it for
    /// an MR of a device without `IB_DEVICE_FLUSH_PERSISTENT`; a QP may
    /// carry it).
    pub(crate) flush_persistent: bool,
}

impl Access {
    pub(super) fn to_raw(self) -> u32 {
        let mut flags = 0;
        if self.local_write {
            flags |= bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE;
        }
        if self.remote_write {
            flags |= bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE;
        }
        if self.remote_read {
            flags |= bindings::ib_access_flags_IB_ACCESS_REMOTE_READ;
        }
        if self.remote_atomic {
            flags |= bindings::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC;
        }
        if self.mw_bind {
            flags |= bindings::ib_access_flags_IB_ACCESS_MW_BIND;
        }
        if self.flush_global {
            flags |= bindings::ib_access_flags_IB_ACCESS_FLUSH_GLOBAL;
        }
        if self.flush_persistent {
            flags |= bindings::ib_access_flags_IB_ACCESS_FLUSH_PERSISTENT;
        }
        flags
    }

    pub(super) fn from_raw(flags: u32) -> Self {
        Self {
            local_write: flags & bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE != 0,
            remote_write: flags & bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE != 0,
            remote_read: flags & bindings::ib_access_flags_IB_ACCESS_REMOTE_READ != 0,
            remote_atomic: flags & bindings::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC != 0,
            mw_bind: flags & bindings::ib_access_flags_IB_ACCESS_MW_BIND != 0,
            flush_global: flags & bindings::ib_access_flags_IB_ACCESS_FLUSH_GLOBAL != 0,
            flush_persistent: flags & bindings::ib_access_flags_IB_ACCESS_FLUSH_PERSISTENT != 0,
        }
    }
}

/// A `modify_qp`: the attributes its mask names, decoded.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct QpAttrs {
    /// The raw mask, for [`modify_is_ok`].
    pub(crate) mask: u32,
    /// New state.
    pub(crate) state: Option<QpStateKind>,
    /// The state the user believes the QP is in.
    pub(crate) cur_state: Option<QpStateKind>,
    /// Q_Key.
    pub(crate) qkey: Option<u32>,
    /// Responder access rights.
    pub(crate) access: Option<Access>,
    /// Address path.
    pub(crate) path: Option<AddressPath>,
    /// Path MTU in bytes.
    pub(crate) path_mtu: Option<u32>,
    /// Remote QP number.
    pub(crate) dest_qpn: Option<u32>,
    /// Receive PSN.
    pub(crate) rq_psn: Option<u32>,
    /// Send PSN.
    pub(crate) sq_psn: Option<u32>,
    /// Local ACK timeout exponent.
    pub(crate) timeout: Option<u8>,
    /// Retry count.
    pub(crate) retry_cnt: Option<u8>,
    /// RNR retry count.
    pub(crate) rnr_retry: Option<u8>,
    /// RNR NAK timer code.
    pub(crate) min_rnr_timer: Option<u8>,
    /// Outstanding READs as requester.
    pub(crate) max_rd_atomic: Option<u8>,
    /// Outstanding READs as responder.
    pub(crate) max_dest_rd_atomic: Option<u8>,
}

impl QpAttrs {
    /// # Safety
    ///
    /// `a` must point at a valid `ib_qp_attr` whose fields `mask` names
    /// are set.
    pub(super) unsafe fn from_raw(a: *const bindings::ib_qp_attr, mask: u32) -> Self {
        // SAFETY: Valid attribute (caller's promise).
        let a = unsafe { &*a };
        let has = |bit: u32| mask & bit != 0;
        let mtu = match a.path_mtu {
            bindings::ib_mtu_IB_MTU_256 => Some(256),
            bindings::ib_mtu_IB_MTU_512 => Some(512),
            bindings::ib_mtu_IB_MTU_1024 => Some(1024),
            bindings::ib_mtu_IB_MTU_2048 => Some(2048),
            bindings::ib_mtu_IB_MTU_4096 => Some(4096),
            _ => None,
        };
        Self {
            mask,
            state: has(bindings::ib_qp_attr_mask_IB_QP_STATE)
                .then(|| QpStateKind::from_raw(a.qp_state))
                .flatten(),
            cur_state: has(bindings::ib_qp_attr_mask_IB_QP_CUR_STATE)
                .then(|| QpStateKind::from_raw(a.cur_qp_state))
                .flatten(),
            qkey: has(bindings::ib_qp_attr_mask_IB_QP_QKEY).then_some(a.qkey),
            access: has(bindings::ib_qp_attr_mask_IB_QP_ACCESS_FLAGS)
                // CAST: access flags, a bit mask kept in an int.
                .then(|| Access::from_raw(a.qp_access_flags as u32)),
            // SAFETY: The mask says the address vector is set.
            path: has(bindings::ib_qp_attr_mask_IB_QP_AV)
                .then(|| unsafe { AddressPath::from_raw(&a.ah_attr) }),
            path_mtu: has(bindings::ib_qp_attr_mask_IB_QP_PATH_MTU)
                .then_some(mtu)
                .flatten(),
            dest_qpn: has(bindings::ib_qp_attr_mask_IB_QP_DEST_QPN).then_some(a.dest_qp_num),
            rq_psn: has(bindings::ib_qp_attr_mask_IB_QP_RQ_PSN).then_some(a.rq_psn),
            sq_psn: has(bindings::ib_qp_attr_mask_IB_QP_SQ_PSN).then_some(a.sq_psn),
            timeout: has(bindings::ib_qp_attr_mask_IB_QP_TIMEOUT).then_some(a.timeout),
            retry_cnt: has(bindings::ib_qp_attr_mask_IB_QP_RETRY_CNT).then_some(a.retry_cnt),
            rnr_retry: has(bindings::ib_qp_attr_mask_IB_QP_RNR_RETRY).then_some(a.rnr_retry),
            min_rnr_timer: has(bindings::ib_qp_attr_mask_IB_QP_MIN_RNR_TIMER)
                .then_some(a.min_rnr_timer),
            max_rd_atomic: has(bindings::ib_qp_attr_mask_IB_QP_MAX_QP_RD_ATOMIC)
                .then_some(a.max_rd_atomic),
            max_dest_rd_atomic: has(bindings::ib_qp_attr_mask_IB_QP_MAX_DEST_RD_ATOMIC)
                .then_some(a.max_dest_rd_atomic),
        }
    }
}

/// Whether the verbs' state table allows `cur` -> `next` for a QP of
/// `kind` with the attributes in `mask` (`ib_modify_qp_is_ok`).
pub(crate) fn modify_is_ok(cur: QpStateKind, next: QpStateKind, kind: QpKind, mask: u32) -> bool {
    // SAFETY: A pure function of its arguments.
    unsafe { bindings::ib_modify_qp_is_ok(cur.to_raw(), next.to_raw(), kind.to_raw(), mask) }
}
/// The keys of a memory region, as `ib_mr` publishes them.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct MrKeys {
    /// Local key.
    pub(crate) lkey: u32,
    /// Remote key.
    pub(crate) rkey: u32,
}

/// What `query_qp` reports.
#[derive(Clone, Copy, Debug)]
pub(crate) struct QpQuery {
    /// State (the card's).
    pub(crate) state: QpStateKind,
    /// Path MTU in bytes.
    pub(crate) path_mtu: u32,
    /// Remote QP.
    pub(crate) dest_qpn: u32,
    /// Receive PSN as set.
    pub(crate) rq_psn: u32,
    /// Send PSN as set.
    pub(crate) sq_psn: u32,
    /// Q_Key as set (UD).
    pub(crate) qkey: u32,
    /// Responder access as set (RC).
    pub(crate) access: Access,
    /// RDMA READs outstanding as requester, as set.
    pub(crate) max_rd_atomic: u8,
    /// RDMA READs outstanding as responder, as set.
    pub(crate) max_dest_rd_atomic: u8,
    /// Timeout, retry and RNR attributes as set.
    pub(crate) retry: QpRetry,
    /// The address path as set (RC).
    pub(crate) path: Option<AddressPath>,
    /// Queue sizes.
    pub(crate) caps: QpCaps,
    /// Transport.
    pub(crate) kind: QpKind,
}

/// A QP's ACK timeout and retry attributes, as the verbs number them.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct QpRetry {
    /// Local ACK timeout exponent.
    pub(crate) timeout: u8,
    /// Retries on timeout.
    pub(crate) retry_cnt: u8,
    /// Retries on RNR NAK.
    pub(crate) rnr_retry: u8,
    /// RNR NAK timer code.
    pub(crate) min_rnr_timer: u8,
}

/// The IB MTU enum value of `bytes` (rounded down; at least 256).
pub(super) fn ib_mtu(bytes: u32) -> bindings::ib_mtu {
    match bytes {
        4096.. => bindings::ib_mtu_IB_MTU_4096,
        2048.. => bindings::ib_mtu_IB_MTU_2048,
        1024.. => bindings::ib_mtu_IB_MTU_1024,
        512.. => bindings::ib_mtu_IB_MTU_512,
        _ => bindings::ib_mtu_IB_MTU_256,
    }
}

/// The name of a hardware counter `rdma statistic` shows.
#[repr(transparent)]
pub(crate) struct StatDesc(bindings::rdma_stat_desc);

// SAFETY: It points only at a `'static` string, never written.
unsafe impl Sync for StatDesc {}

impl StatDesc {
    /// A counter named `name`.
    // `as_char_ptr` is not `const`; the cast below does what it does.
    #[allow(clippy::disallowed_methods)]
    pub(crate) const fn new(name: &'static CStr) -> Self {
        Self(bindings::rdma_stat_desc {
            name: name.as_ptr().cast(),
            flags: 0,
            priv_: core::ptr::null(),
        })
    }
}
