// SPDX-License-Identifier: GPL-2.0

//! The event queue: the card writes an entry when an armed CQ got a
//! completion, a QP failed by itself, a CQ overflowed, an SRQ fell
//! below its limit or an on-demand region's page is needed, and raises the
//! RDMA vector. The interrupt handler resolves each entry against the
//! tables and tells ib_core's user; a failed QP is also the function's
//! `rdma` health reporter's to report.

use kernel::{
    prelude::*,
    sync::{atomic::Atomic, atomic::Relaxed, Arc, SpinLock},
};

use super::{odp::OdpFaults, tables::Tables, RdmaEvents};
use crate::hw::rdma::{cqe_flag, eqe_type, Eqe, EQE_LEN};
use crate::hw::ENTRY_FLAGS_OFFSET;
use crate::linux::{dma::DmaBuffer, irq::IrqHandler, sync::lock_irqsave};

/// Entries of the event queue: more than all CQs, QPs and SRQs of the
/// card together (256, 256 and 64), so it cannot overflow (an event is written once per arming or per failure).
pub(crate) const EQ_ENTRIES: u32 = 1024;

/// The event interrupt's state.
#[pin_data]
pub(crate) struct EqIrq {
    ring: DmaBuffer,
    /// Entries consumed (free running); only the handler changes it.
    consumed: Atomic<u32>,
    tables: Arc<SpinLock<Tables>>,
    /// Hears of QPs that failed (the `rdma` health reporter).
    faults: Arc<dyn RdmaEvents>,
    /// Serves page faults of on-demand regions.
    odp: Arc<OdpFaults>,
    /// Events seen.
    pub(crate) events: Atomic<u64>,
}

impl EqIrq {
    /// A handler over `ring` ([`EQ_ENTRIES`] entries).
    pub(crate) fn new(
        ring: DmaBuffer,
        tables: Arc<SpinLock<Tables>>,
        faults: Arc<dyn RdmaEvents>,
        odp: Arc<OdpFaults>,
    ) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            ring,
            consumed: Atomic::new(0),
            tables,
            faults,
            odp,
            events: Atomic::new(0),
        }? Error)
    }

    /// The next entry, if the card wrote it (its phase is this lap's).
    fn next(&self, consumed: u32) -> Option<Eqe> {
        let offset = (consumed % EQ_ENTRIES) as usize * EQE_LEN;
        let lap_phase = (consumed / EQ_ENTRIES).is_multiple_of(2);
        self.ring
            .read_published(offset, ENTRY_FLAGS_OFFSET, |flags| {
                (flags & cqe_flag::PHASE != 0) == lap_phase
            })
            .map(|raw| Eqe::from_bytes(&raw))
    }

    fn dispatch(&self, eqe: &Eqe) {
        if eqe.kind == eqe_type::PAGE_FAULT {
            // The work checks the key names a region and the page is in it.
            self.odp.fault(eqe.id, eqe.page);
            return;
        }
        let mut tables = lock_irqsave(&self.tables);
        match eqe.kind {
            eqe_type::COMPLETION | eqe_type::CQ_ERROR => {
                let Some(Some(cq)) = tables.cqs.get(eqe.id as usize) else {
                    tables.bogus += 1;
                    return;
                };
                if eqe.kind == eqe_type::COMPLETION {
                    cq.notify();
                } else {
                    cq.error_event();
                }
            }
            eqe_type::SRQ_LIMIT => match tables.srq(eqe.id) {
                Some(srq) => {
                    srq.limit = 0;
                    srq.handle.limit_event();
                }
                None => tables.bogus += 1,
            },
            eqe_type::QP_LAST_WQE => match tables.qp(eqe.id) {
                Some(qp) if qp.srq.is_some() => qp.handle.last_wqe_event(),
                _ => tables.bogus += 1,
            },
            eqe_type::QP_FATAL => match tables.qp(eqe.id) {
                Some(qp) => {
                    qp.handle.fatal_event();
                    self.faults.qp_failed(eqe.id);
                }
                None => tables.bogus += 1,
            },
            _ => tables.bogus += 1,
        }
    }
}

impl IrqHandler for EqIrq {
    fn handle(&self) -> bool {
        let mut consumed = self.consumed.load(Relaxed);
        let mut any = false;
        // At most one lap per interrupt: a card writing faster than we
        // read cannot keep us here.
        for _ in 0..EQ_ENTRIES {
            let Some(eqe) = self.next(consumed) else {
                break;
            };
            self.dispatch(&eqe);
            consumed = consumed.wrapping_add(1);
            any = true;
        }
        self.consumed.store(consumed, Relaxed);
        if any {
            self.events.fetch_add(1, Relaxed);
        }
        any
    }
}
