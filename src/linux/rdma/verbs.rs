// SPDX-License-Identifier: GPL-2.0

//! The verbs' objects and messages in safe form: handles to completion
//! queues and queue pairs, the attributes of a QP or an address handle,
//! work requests as ib_core posts them, and work completions as the
//! driver reports them.
//!
//! Objects ib_core allocates (PD, CQ, QP, AH) carry the driver's state
//! right after the ib_core struct ([`IbObject`]): written when the create
//! callback succeeds, dropped in place by the destroy callback.

use core::marker::PhantomData;

use kernel::{prelude::*, types::Opaque};

use crate::linux::bindings;
use crate::linux::rdma::device::IbDeviceOps;

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
        // SAFETY: Live QP (type invariant); the event lives on the stack
        // for the call.
        unsafe {
            if let Some(handler) = (*self.ptr).event_handler {
                let mut ev: bindings::ib_event = core::mem::zeroed();
                ev.device = (*self.ptr).device;
                ev.event = bindings::ib_event_type_IB_EVENT_QP_FATAL;
                ev.element.qp = self.ptr;
                handler(&mut ev, (*self.ptr).qp_context);
            }
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
}

impl QpKind {
    pub(super) fn from_raw(t: bindings::ib_qp_type) -> Option<Self> {
        match t {
            bindings::ib_qp_type_IB_QPT_RC => Some(Self::Rc),
            bindings::ib_qp_type_IB_QPT_UD => Some(Self::Ud),
            bindings::ib_qp_type_IB_QPT_GSI => Some(Self::Gsi),
            _ => None,
        }
    }

    pub(super) fn to_raw(self) -> bindings::ib_qp_type {
        match self {
            Self::Rc => bindings::ib_qp_type_IB_QPT_RC,
            Self::Ud => bindings::ib_qp_type_IB_QPT_UD,
            Self::Gsi => bindings::ib_qp_type_IB_QPT_GSI,
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
    /// Queue sizes asked for.
    pub(crate) caps: QpCaps,
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
}

impl Access {
    pub(super) fn from_raw(flags: u32) -> Self {
        Self {
            local_write: flags & bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE != 0,
            remote_write: flags & bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE != 0,
            remote_read: flags & bindings::ib_access_flags_IB_ACCESS_REMOTE_READ != 0,
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

/// One scatter/gather entry of a work request.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Sge {
    /// Address (bus address for the local DMA key, else IOVA).
    pub(crate) addr: u64,
    /// Bytes.
    pub(crate) len: u32,
    /// Local key.
    pub(crate) lkey: u32,
}

/// What a send work request does.
pub(crate) enum SendOp<'a, T: IbDeviceOps> {
    /// SEND.
    Send,
    /// SEND with immediate data (network order, as given).
    SendImm(u32),
    /// SEND invalidating the peer's rkey.
    SendInv(u32),
    /// RDMA WRITE.
    Write {
        /// Remote address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
    },
    /// RDMA WRITE with immediate data.
    WriteImm {
        /// Remote address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
        /// Immediate data.
        imm: u32,
    },
    /// RDMA READ.
    Read {
        /// Remote address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
    },
    /// Invalidate a local MR.
    LocalInv(u32),
    /// Register pages into a fast-registration MR.
    RegMr {
        /// The MR (its pages were set by `map_mr_sg`).
        mr: &'a T::Mr,
        /// Its new key.
        key: u32,
        /// Rights.
        access: Access,
        /// First address.
        iova: u64,
        /// Bytes.
        len: u64,
        /// Page size.
        page_size: u32,
    },
    /// A UD/GSI SEND (with immediate data if `imm` is set).
    Ud {
        /// Where to.
        ah: &'a T::Ah,
        /// Destination QP.
        remote_qpn: u32,
        /// Q_Key.
        remote_qkey: u32,
        /// Immediate data.
        imm: Option<u32>,
    },
    /// An opcode the device does not do.
    Unsupported,
}

/// A send work request.
pub(crate) struct SendWr<'a, T: IbDeviceOps> {
    /// The user's cookie, returned in the completion.
    pub(crate) wr_id: u64,
    /// What to do.
    pub(crate) op: SendOp<'a, T>,
    /// Gather list.
    pub(crate) sges: &'a [bindings::ib_sge],
    /// Complete even on success.
    pub(crate) signaled: bool,
    /// Solicited event at the receiver.
    pub(crate) solicited: bool,
    /// Wait for earlier READs.
    pub(crate) fence: bool,
    /// Data inline (not supported: refused).
    pub(crate) inline: bool,
}

impl<T: IbDeviceOps> SendWr<'_, T> {
    /// The gather list.
    pub(crate) fn sge(&self, i: usize) -> Option<Sge> {
        self.sges.get(i).map(|s| Sge {
            addr: s.addr,
            len: s.length,
            lkey: s.lkey,
        })
    }
}

/// The chain of send work requests of one `post_send`.
///
/// # Invariants
///
/// `next` is NULL or a valid work request chain for the call's duration.
pub(crate) struct SendWrs<'a, T: IbDeviceOps> {
    next: *const bindings::ib_send_wr,
    current: *const bindings::ib_send_wr,
    qp_kind: QpKind,
    _t: PhantomData<&'a T>,
}

impl<'a, T: IbDeviceOps> SendWrs<'a, T> {
    /// # Safety
    ///
    /// `first` must be a valid chain, alive for `'a`, of a QP of `kind`.
    pub(super) unsafe fn new(first: *const bindings::ib_send_wr, kind: QpKind) -> Self {
        Self {
            next: first,
            current: first,
            qp_kind: kind,
            _t: PhantomData,
        }
    }

    /// The request the driver took last (where a failure stopped).
    pub(super) fn current(&self) -> *const bindings::ib_send_wr {
        self.current
    }
}

impl<'a, T: IbDeviceOps> Iterator for SendWrs<'a, T> {
    type Item = SendWr<'a, T>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next.is_null() {
            return None;
        }
        self.current = self.next;
        // SAFETY: A valid element of the chain (type invariant).
        let wr = unsafe { &*self.current };
        self.next = wr.next;
        let n = usize::try_from(wr.num_sge).unwrap_or(0);
        let sges = if n == 0 || wr.sg_list.is_null() {
            &[][..]
        } else {
            // SAFETY: ib_core's contract: `sg_list` has `num_sge` entries.
            unsafe { core::slice::from_raw_parts(wr.sg_list, n) }
        };
        let flags = wr.send_flags;
        // SAFETY: Which union member is valid follows from the opcode;
        // the extended structs start with this `ib_send_wr` (ib_core's
        // `rdma_wr()`, `ud_wr()`, `reg_wr()` casts).
        let op = unsafe {
            let rdma = || &*self.current.cast::<bindings::ib_rdma_wr>();
            match (wr.opcode, self.qp_kind) {
                (
                    bindings::ib_wr_opcode_IB_WR_SEND | bindings::ib_wr_opcode_IB_WR_SEND_WITH_IMM,
                    k,
                ) if k != QpKind::Rc => {
                    let ud = &*self.current.cast::<bindings::ib_ud_wr>();
                    if ud.ah.is_null() {
                        SendOp::Unsupported
                    } else {
                        SendOp::Ud {
                            ah: IbObject::<bindings::ib_ah, T::Ah>::data(ud.ah),
                            remote_qpn: ud.remote_qpn,
                            remote_qkey: ud.remote_qkey,
                            imm: (wr.opcode == bindings::ib_wr_opcode_IB_WR_SEND_WITH_IMM)
                                .then_some(wr.ex.imm_data),
                        }
                    }
                }
                (_, k) if k != QpKind::Rc => SendOp::Unsupported,
                (bindings::ib_wr_opcode_IB_WR_SEND, _) => SendOp::Send,
                (bindings::ib_wr_opcode_IB_WR_SEND_WITH_IMM, _) => SendOp::SendImm(wr.ex.imm_data),
                (bindings::ib_wr_opcode_IB_WR_SEND_WITH_INV, _) => {
                    SendOp::SendInv(wr.ex.invalidate_rkey)
                }
                (bindings::ib_wr_opcode_IB_WR_RDMA_WRITE, _) => SendOp::Write {
                    remote_addr: rdma().remote_addr,
                    rkey: rdma().rkey,
                },
                (bindings::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM, _) => SendOp::WriteImm {
                    remote_addr: rdma().remote_addr,
                    rkey: rdma().rkey,
                    imm: wr.ex.imm_data,
                },
                (bindings::ib_wr_opcode_IB_WR_RDMA_READ, _) => SendOp::Read {
                    remote_addr: rdma().remote_addr,
                    rkey: rdma().rkey,
                },
                (bindings::ib_wr_opcode_IB_WR_LOCAL_INV, _) => {
                    SendOp::LocalInv(wr.ex.invalidate_rkey)
                }
                (bindings::ib_wr_opcode_IB_WR_REG_MR, _) => {
                    let reg = &*self.current.cast::<bindings::ib_reg_wr>();
                    if reg.mr.is_null() {
                        SendOp::Unsupported
                    } else {
                        let mr = &*reg.mr;
                        SendOp::RegMr {
                            mr: IbObject::<bindings::ib_mr, T::Mr>::data(reg.mr),
                            key: reg.key,
                            access: Access::from_raw(reg.access as u32),
                            iova: mr.iova,
                            len: mr.length,
                            page_size: mr.page_size,
                        }
                    }
                }
                _ => SendOp::Unsupported,
            }
        };
        Some(SendWr {
            // SAFETY: Both union members are 64 bits; kernel ULPs using
            // `wr_cqe` get the same bits back in the completion.
            wr_id: unsafe { wr.__bindgen_anon_1.wr_id },
            op,
            sges,
            signaled: flags & bindings::ib_send_flags_IB_SEND_SIGNALED != 0,
            solicited: flags & bindings::ib_send_flags_IB_SEND_SOLICITED != 0,
            fence: flags & bindings::ib_send_flags_IB_SEND_FENCE != 0,
            inline: flags & bindings::ib_send_flags_IB_SEND_INLINE != 0,
        })
    }
}

/// A receive work request.
pub(crate) struct RecvWr<'a> {
    /// The user's cookie.
    pub(crate) wr_id: u64,
    sges: &'a [bindings::ib_sge],
}

impl RecvWr<'_> {
    /// Scatter entries.
    pub(crate) fn num_sge(&self) -> usize {
        self.sges.len()
    }

    /// Scatter entry `i`.
    pub(crate) fn sge(&self, i: usize) -> Option<Sge> {
        self.sges.get(i).map(|s| Sge {
            addr: s.addr,
            len: s.length,
            lkey: s.lkey,
        })
    }
}

/// The chain of receive work requests of one `post_recv`.
///
/// # Invariants
///
/// As [`SendWrs`].
pub(crate) struct RecvWrs<'a> {
    next: *const bindings::ib_recv_wr,
    current: *const bindings::ib_recv_wr,
    _l: PhantomData<&'a ()>,
}

impl RecvWrs<'_> {
    /// # Safety
    ///
    /// `first` must be a valid chain for the lifetime.
    pub(super) unsafe fn new(first: *const bindings::ib_recv_wr) -> Self {
        Self {
            next: first,
            current: first,
            _l: PhantomData,
        }
    }

    pub(super) fn current(&self) -> *const bindings::ib_recv_wr {
        self.current
    }
}

impl<'a> Iterator for RecvWrs<'a> {
    type Item = RecvWr<'a>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next.is_null() {
            return None;
        }
        self.current = self.next;
        // SAFETY: A valid element of the chain (type invariant).
        let wr = unsafe { &*self.current };
        self.next = wr.next;
        let n = usize::try_from(wr.num_sge).unwrap_or(0);
        let sges = if n == 0 || wr.sg_list.is_null() {
            &[][..]
        } else {
            // SAFETY: `sg_list` has `num_sge` entries (ib_core's contract).
            unsafe { core::slice::from_raw_parts(wr.sg_list, n) }
        };
        Some(RecvWr {
            // SAFETY: Both union members are 64 bits.
            wr_id: unsafe { wr.__bindgen_anon_1.wr_id },
            sges,
        })
    }
}

/// Declares a Rust enum mirroring a C enum: each variant with the C
/// constant it stands for, and the conversions both ways.
macro_rules! c_enum {
    (
        $(#[$meta:meta])*
        $name:ident: $raw:ty {
            $( $(#[$vmeta:meta])* $variant:ident = $c:path, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(crate) enum $name {
            $( $(#[$vmeta])* $variant, )*
        }

        impl $name {
            /// The value, if it is one of this enum's.
            #[allow(dead_code)]
            pub(crate) fn from_raw(v: $raw) -> Option<Self> {
                match v {
                    $( $c => Some(Self::$variant), )*
                    _ => None,
                }
            }

            pub(super) fn to_raw(self) -> $raw {
                match self {
                    $( Self::$variant => $c, )*
                }
            }
        }
    };
}

c_enum! {
    /// Completion status (`enum ib_wc_status`).
    WcStatus: bindings::ib_wc_status {
        /// Success.
        Success = bindings::ib_wc_status_IB_WC_SUCCESS,
        /// Local length error.
        LocLenErr = bindings::ib_wc_status_IB_WC_LOC_LEN_ERR,
        /// Local QP operation error.
        LocQpOpErr = bindings::ib_wc_status_IB_WC_LOC_QP_OP_ERR,
        /// Local EE context operation error.
        LocEecOpErr = bindings::ib_wc_status_IB_WC_LOC_EEC_OP_ERR,
        /// Local protection error.
        LocProtErr = bindings::ib_wc_status_IB_WC_LOC_PROT_ERR,
        /// Flushed: the QP is in error.
        WrFlushErr = bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR,
        /// Memory window bind error.
        MwBindErr = bindings::ib_wc_status_IB_WC_MW_BIND_ERR,
        /// Bad response.
        BadRespErr = bindings::ib_wc_status_IB_WC_BAD_RESP_ERR,
        /// Local access error.
        LocAccessErr = bindings::ib_wc_status_IB_WC_LOC_ACCESS_ERR,
        /// Remote invalid request.
        RemInvReqErr = bindings::ib_wc_status_IB_WC_REM_INV_REQ_ERR,
        /// Remote access error.
        RemAccessErr = bindings::ib_wc_status_IB_WC_REM_ACCESS_ERR,
        /// Remote operation error.
        RemOpErr = bindings::ib_wc_status_IB_WC_REM_OP_ERR,
        /// Transport retries exhausted.
        RetryExcErr = bindings::ib_wc_status_IB_WC_RETRY_EXC_ERR,
        /// RNR retries exhausted.
        RnrRetryExcErr = bindings::ib_wc_status_IB_WC_RNR_RETRY_EXC_ERR,
        /// Local RDD violation.
        LocRddViolErr = bindings::ib_wc_status_IB_WC_LOC_RDD_VIOL_ERR,
        /// Remote invalid RD request.
        RemInvRdReqErr = bindings::ib_wc_status_IB_WC_REM_INV_RD_REQ_ERR,
        /// Remote aborted.
        RemAbortErr = bindings::ib_wc_status_IB_WC_REM_ABORT_ERR,
        /// Invalid EE context number.
        InvEecnErr = bindings::ib_wc_status_IB_WC_INV_EECN_ERR,
        /// Invalid EE context state.
        InvEecStateErr = bindings::ib_wc_status_IB_WC_INV_EEC_STATE_ERR,
        /// Fatal error.
        FatalErr = bindings::ib_wc_status_IB_WC_FATAL_ERR,
        /// Response timeout.
        RespTimeoutErr = bindings::ib_wc_status_IB_WC_RESP_TIMEOUT_ERR,
        /// Other error.
        GeneralErr = bindings::ib_wc_status_IB_WC_GENERAL_ERR,
    }
}

c_enum! {
    /// What a completed work request did (`enum ib_wc_opcode`).
    WcOpcode: bindings::ib_wc_opcode {
        /// SEND.
        Send = bindings::ib_wc_opcode_IB_WC_SEND,
        /// RDMA WRITE.
        RdmaWrite = bindings::ib_wc_opcode_IB_WC_RDMA_WRITE,
        /// RDMA READ.
        RdmaRead = bindings::ib_wc_opcode_IB_WC_RDMA_READ,
        /// Local invalidate.
        LocalInv = bindings::ib_wc_opcode_IB_WC_LOCAL_INV,
        /// Memory registration.
        RegMr = bindings::ib_wc_opcode_IB_WC_REG_MR,
        /// A receive.
        Recv = bindings::ib_wc_opcode_IB_WC_RECV,
        /// A receive of RDMA WRITE with immediate data.
        RecvRdmaWithImm = bindings::ib_wc_opcode_IB_WC_RECV_RDMA_WITH_IMM,
    }
}

/// The network header of a UD receive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NetworkHdr {
    /// IPv4 (in the last 20 bytes of the 40-byte GRH area).
    Ipv4,
    /// IPv6.
    Ipv6,
}

/// A work completion the driver reports.
pub(crate) struct WorkCompletion<'a> {
    /// The work request's cookie.
    pub(crate) wr_id: u64,
    /// Status.
    pub(crate) status: WcStatus,
    /// What the request did.
    pub(crate) opcode: WcOpcode,
    /// Bytes.
    pub(crate) byte_len: u32,
    /// The QP.
    pub(crate) qp: &'a QpHandle,
    /// Immediate data.
    pub(crate) imm: Option<u32>,
    /// The rkey the peer invalidated.
    pub(crate) invalidated: Option<u32>,
    /// UD: sending QP.
    pub(crate) src_qp: u32,
    /// UD: a GRH area precedes the data, with this network header.
    pub(crate) grh: Option<NetworkHdr>,
    /// UD: sender's MAC.
    pub(crate) smac: Option<[u8; 6]>,
}

/// The completion array of one `poll_cq`.
pub(crate) struct WcWriter<'a> {
    out: &'a mut [bindings::ib_wc],
    written: usize,
}

impl<'a> WcWriter<'a> {
    pub(super) fn new(out: &'a mut [bindings::ib_wc]) -> Self {
        Self { out, written: 0 }
    }

    pub(super) fn written(&self) -> usize {
        self.written
    }

    /// Whether another completion fits.
    pub(crate) fn has_room(&self) -> bool {
        self.written < self.out.len()
    }

    /// Adds a completion; false if the array is full.
    pub(crate) fn push(&mut self, c: WorkCompletion<'_>) -> bool {
        let Some(wc) = self.out.get_mut(self.written) else {
            return false;
        };
        // SAFETY: Plain C struct; all-zero is a valid value of it.
        *wc = unsafe { core::mem::zeroed() };
        wc.__bindgen_anon_1.wr_id = c.wr_id;
        wc.status = c.status.to_raw();
        wc.opcode = c.opcode.to_raw();
        wc.byte_len = c.byte_len;
        wc.qp = c.qp.as_raw();
        wc.src_qp = c.src_qp;
        wc.port_num = 1;
        let mut flags = 0;
        if let Some(imm) = c.imm {
            wc.ex.imm_data = imm;
            flags |= bindings::ib_wc_flags_IB_WC_WITH_IMM;
        }
        if let Some(key) = c.invalidated {
            wc.ex.invalidate_rkey = key;
            flags |= bindings::ib_wc_flags_IB_WC_WITH_INVALIDATE;
        }
        if let Some(hdr) = c.grh {
            flags |=
                bindings::ib_wc_flags_IB_WC_GRH | bindings::ib_wc_flags_IB_WC_WITH_NETWORK_HDR_TYPE;
            wc.network_hdr_type = match hdr {
                NetworkHdr::Ipv4 => bindings::rdma_network_type_RDMA_NETWORK_IPV4 as u8,
                NetworkHdr::Ipv6 => bindings::rdma_network_type_RDMA_NETWORK_IPV6 as u8,
            };
        }
        if let Some(mac) = c.smac {
            wc.smac = mac;
            flags |= bindings::ib_wc_flags_IB_WC_WITH_SMAC;
        }
        wc.wc_flags = flags as i32;
        self.written += 1;
        true
    }
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
    /// Queue sizes.
    pub(crate) caps: QpCaps,
    /// Transport.
    pub(crate) kind: QpKind,
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
