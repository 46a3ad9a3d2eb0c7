// SPDX-License-Identifier: GPL-2.0

//! Completion queues: a ring the card writes completions into, polled by
//! phase bit. Everything in a completion is checked against what the
//! driver posted before ib_core's user sees it.

use kernel::{prelude::*, sync::SpinLock};

use super::device::RdmaDev;
use super::ring::RingMem;
use crate::hw::rdma::{arm, cqe_flag, db, wc_op, Cqe, CQE_LEN};
use crate::hw::ENTRY_FLAGS_OFFSET;
use crate::linux::{
    rdma::verbs::{NetworkHdr, WcOpcode, WcStatus, WcWriter, WorkCompletion},
    sync::lock_irqsave,
};

/// A completion queue's driver state.
#[pin_data]
pub(crate) struct RdmaCq {
    /// CQ number.
    pub(crate) cqn: u32,
    /// Bytes per entry ([`CQE_LEN`], or `CQE_STAMPED_LEN` for a CQ
    /// created with time stamps).
    pub(crate) entry_len: usize,
    #[pin]
    ring: SpinLock<CqRing>,
}

/// Where a CQ's completions are and how far they were consumed.
struct CqRing {
    mem: RingMem,
    /// Entries (a power of two).
    entries: u32,
    /// Completions consumed (free running; a process's CQ: unused).
    consumed: u32,
}

impl CqRing {
    /// The completion at `consumed`, if the card wrote it (never for a
    /// process's CQ, which it polls itself).
    fn peek(&self) -> Option<Cqe> {
        let offset = (self.consumed & (self.entries - 1)) as usize * CQE_LEN;
        let lap_phase = (self.consumed / self.entries).is_multiple_of(2);
        self.mem
            .kernel()
            .ok()?
            .read_published(offset, ENTRY_FLAGS_OFFSET, |flags| {
                (flags & cqe_flag::PHASE != 0) == lap_phase
            })
            .map(|raw| Cqe::from_bytes(&raw))
    }
}

impl RdmaCq {
    /// A CQ over `ring` of `entries` entries of `entry_len` bytes.
    pub(crate) fn new(
        cqn: u32,
        ring: RingMem,
        entries: u32,
        entry_len: usize,
    ) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            cqn,
            entry_len,
            ring <- kernel::new_spinlock!(CqRing {
                mem: ring,
                entries,
                consumed: 0,
            }),
        }? Error)
    }

    /// A process's CQ moved to `ring` of `entries` entries (the card
    /// already writes there); returns the old ring, to drop outside the
    /// lock (removing its mapping may sleep).
    pub(crate) fn replace_ring(&self, ring: RingMem, entries: u32) -> RingMem {
        let mut r = lock_irqsave(&self.ring);
        r.entries = entries;
        r.consumed = 0;
        core::mem::replace(&mut r.mem, ring)
    }

    /// Moves completions into `out`; tells the card how far it got.
    pub(crate) fn poll(&self, dev: &RdmaDev, out: &mut WcWriter<'_>) {
        let mut ring = lock_irqsave(&self.ring);
        let start = ring.consumed;
        let mut tables = lock_irqsave(dev.tables());
        while out.has_room() {
            let Some(cqe) = ring.peek() else {
                break;
            };
            ring.consumed = ring.consumed.wrapping_add(1);
            let recv = cqe.flags & cqe_flag::RECV != 0;
            let (status, opcode) = decode(&cqe, recv);
            let network = if cqe.flags & cqe_flag::IPV4 != 0 {
                NetworkHdr::Ipv4
            } else {
                NetworkHdr::Ipv6
            };
            let grh = (cqe.flags & cqe_flag::GRH != 0).then_some(network);
            let imm = (cqe.flags & cqe_flag::WITH_IMM != 0).then_some(cqe.imm_or_key);
            let invalidated = (cqe.flags & cqe_flag::WITH_INV != 0).then_some(cqe.imm_or_key);
            // A QP destroyed since (nobody to report to), or a slot with
            // nothing posted: not believed.
            let resolved = if recv {
                let shared = cqe.flags & cqe_flag::SRQ != 0;
                tables.complete_recv(cqe.qpn, cqe.wqe_index, shared)
            } else {
                tables
                    .qp(cqe.qpn)
                    .and_then(|e| Some((e.sq.complete(cqe.wqe_index)?, &e.handle)))
            };
            let Some((wr_id, qp)) = resolved else {
                tables.bogus += 1;
                continue;
            };
            out.push(WorkCompletion {
                wr_id,
                status,
                opcode,
                byte_len: cqe.byte_len,
                qp,
                imm,
                invalidated,
                src_qp: cqe.src_qp & 0xff_ffff,
                grh,
                smac: grh.map(|_| cqe.smac),
            });
            tables.cqe_errors.count(recv, status);
        }
        drop(tables);
        if ring.consumed != start {
            let value = self.cqn | u32::from(ring.consumed as u16) << 16;
            let _ = dev.doorbell(db::CQ_CI, value);
        }
    }

    /// Arms the CQ; returns whether a completion is already waiting.
    pub(crate) fn arm(&self, dev: &RdmaDev, solicited_only: bool) -> bool {
        let bits = if solicited_only {
            arm::SOLICITED
        } else {
            arm::NEXT
        };
        let _ = dev.doorbell(db::CQ_ARM, self.cqn | bits << 16);
        lock_irqsave(&self.ring).peek().is_some()
    }
}

/// The status and opcode of a completion; a value the card should not
/// have written is a general error.
fn decode(cqe: &Cqe, recv: bool) -> (WcStatus, WcOpcode) {
    // The card numbers statuses as the verbs do (`hw::rdma::wc_status`).
    let status = WcStatus::from_raw(cqe.status.into()).unwrap_or(WcStatus::GeneralErr);
    let opcode = match (cqe.opcode, recv) {
        (wc_op::SEND, false) => WcOpcode::Send,
        (wc_op::RDMA_WRITE, false) => WcOpcode::RdmaWrite,
        (wc_op::RDMA_READ, false) => WcOpcode::RdmaRead,
        (wc_op::COMP_SWAP, false) => WcOpcode::CompSwap,
        (wc_op::FETCH_ADD, false) => WcOpcode::FetchAdd,
        (wc_op::LOCAL_INV, false) => WcOpcode::LocalInv,
        (wc_op::REG_MR, false) => WcOpcode::RegMr,
        (wc_op::RECV_RDMA_WITH_IMM, true) => WcOpcode::RecvRdmaWithImm,
        (_, true) => WcOpcode::Recv,
        (_, false) => return (WcStatus::GeneralErr, WcOpcode::Send),
    };
    (status, opcode)
}
