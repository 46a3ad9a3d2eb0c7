// SPDX-License-Identifier: GPL-2.0

//! Work requests as ib_core posts them (`ib_send_wr` and its extended
//! kinds, `ib_recv_wr`), walked as iterators of safe descriptions.

use core::marker::PhantomData;

use crate::linux::bindings;
use crate::linux::rdma::{
    device::IbDeviceOps,
    verbs::{Access, IbObject, QpKind},
};

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
    /// Atomic compare-and-swap of 8 remote bytes.
    CmpSwap {
        /// Remote address (8-byte aligned).
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
        /// The value compared with.
        compare: u64,
        /// The value stored if equal.
        swap: u64,
    },
    /// Atomic fetch-and-add on 8 remote bytes.
    FetchAdd {
        /// Remote address (8-byte aligned).
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
        /// The value added.
        add: u64,
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
        // `rdma_wr()`, `ud_wr()`, `reg_wr()`, `atomic_wr()` casts).
        let op = unsafe {
            let rdma = || &*self.current.cast::<bindings::ib_rdma_wr>();
            let atomic = || &*self.current.cast::<bindings::ib_atomic_wr>();
            match (wr.opcode, self.qp_kind) {
                (
                    bindings::ib_wr_opcode_IB_WR_SEND | bindings::ib_wr_opcode_IB_WR_SEND_WITH_IMM,
                    k,
                ) if k.is_datagram() => {
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
                (_, k) if k.is_datagram() => SendOp::Unsupported,
                // UC has no READ, atomics nor SEND with invalidate.
                (
                    bindings::ib_wr_opcode_IB_WR_RDMA_READ
                    | bindings::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP
                    | bindings::ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD
                    | bindings::ib_wr_opcode_IB_WR_SEND_WITH_INV,
                    QpKind::Uc,
                ) => SendOp::Unsupported,
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
                (bindings::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP, _) => SendOp::CmpSwap {
                    remote_addr: atomic().remote_addr,
                    rkey: atomic().rkey,
                    compare: atomic().compare_add,
                    swap: atomic().swap,
                },
                (bindings::ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD, _) => SendOp::FetchAdd {
                    remote_addr: atomic().remote_addr,
                    rkey: atomic().rkey,
                    add: atomic().compare_add,
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
                            // CAST: access flags, a bit mask kept in an int.
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
