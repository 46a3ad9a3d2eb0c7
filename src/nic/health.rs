// SPDX-License-Identifier: GPL-2.0

//! The NIC's devlink health reporters, over the recovery it already had:
//! `tx` (a TX queue the watchdog found stuck) and `completion`
//! (completions out of step with their ring, lost interrupts). The card
//! as a whole has the function's reporters (`crate::function`).
//!
//! A fault is noticed where it happens (the TX watchdog, NAPI, the
//! health check), which asks for a recovery and
//! schedules the report work. That work reports the fault without RTNL
//! (the devlink core takes its instance lock, then our recovery takes
//! RTNL), and the core counts it, keeps a dump, and calls `recover`
//! unless auto-recovery is off or the grace period says no; a pair not
//! recovered then waits for `devlink health recover`.

use core::marker::PhantomData;

use kernel::{
    prelude::*,
    sync::Arc,
    time::{Instant, Monotonic},
};

use super::{
    queue::{PairSnapshot, ResetCause},
    Nic,
};
use crate::linux::{
    devlink::{DevlinkRef, Fmsg, HealthReporter, HealthReporterOps, HealthReporterVTable},
    net::{
        netdev::{NetDev, NetDevRef},
        rtnl,
        work::{DeviceWork, NoLock},
    },
};

/// [`crate::linux::net::work::NetDevWork`] id of the report work.
pub(super) const HEALTH_WORK: u8 = 3;

/// A queue pair's fault, as reported.
pub(crate) struct QueueFault {
    queue: u16,
    cause: ResetCause,
    /// The pair when the report work picked the fault up.
    at_fault: PairSnapshot,
}

/// The reporters.
pub(crate) struct NicHealth {
    tx: HealthReporter<TxReporter>,
    completion: HealthReporter<CompletionReporter>,
}

static TX_REPORTER: HealthReporterVTable<TxReporter> = HealthReporterVTable::new();
static COMPLETION_REPORTER: HealthReporterVTable<CompletionReporter> = HealthReporterVTable::new();

impl NicHealth {
    /// The reporters of the NIC `dev` on `devlink`.
    pub(crate) fn new(devlink: &DevlinkRef, dev: NetDevRef<Nic>) -> Result<Self> {
        Ok(Self {
            tx: HealthReporter::new(devlink.clone(), &TX_REPORTER, dev.clone())?,
            completion: HealthReporter::new(devlink.clone(), &COMPLETION_REPORTER, dev)?,
        })
    }

    /// Every queue pair was rebuilt by a function reset: neither queue
    /// reporter has a fault left.
    fn queues_rebuilt(&self) {
        self.tx.recovered_elsewhere();
        self.completion.recovered_elsewhere();
    }
}

impl Nic {
    /// The reporters, once the device is registered.
    fn health(&self) -> Option<Arc<NicHealth>> {
        self.health.lock().clone()
    }

    /// Gives the NIC its reporters (after its registration).
    pub(crate) fn set_health(&self, health: NicHealth) -> Result {
        *self.health.lock() = Some(Arc::new(health, GFP_KERNEL)?);
        Ok(())
    }

    /// Every pair was rebuilt (a function reset): none waits for
    /// a recovery any more.
    pub(super) fn pairs_rebuilt(&self) {
        for queue in self.queues.iter() {
            queue.set_awaiting_recovery(false);
        }
        if let Some(health) = self.health() {
            health.queues_rebuilt();
        }
    }

    /// `recover` of the queue reporters: resets the pair of `fault` (but
    /// a lost interrupt needs nothing more: it was polled), or every pair
    /// waiting for a recovery (`None`).
    fn recover_pairs(dev: &NetDev<Self>, fault: Option<&QueueFault>) -> Result {
        if fault.is_some_and(|f| f.cause == ResetCause::LOST_IRQ) {
            return Ok(());
        }
        let queue = fault.map(|f| f.queue);
        let nic = dev.data();
        let rtnl = rtnl::lock();
        let mut result = Ok(());
        for q in nic.queues.iter() {
            let wanted = match queue {
                Some(n) => q.index() == n,
                None => q.awaiting_recovery(),
            };
            if wanted {
                if let Err(e) = nic.reset_pair(dev, &rtnl, q.index()) {
                    result = Err(e);
                }
            }
        }
        result
    }
}

impl DeviceWork<HEALTH_WORK> for Nic {
    /// Reporting takes the devlink instance lock, and the recovery RTNL
    /// after it.
    type Lock = NoLock;

    /// Reports each queue pair asking for a reset once its backoff allows (a pair failing again soon waits
    /// longer, up to 5 s).
    fn run(dev: &NetDev<Self>, _: &NoLock) {
        let nic = dev.data();
        let Some(health) = nic.health() else {
            return;
        };
        let now = Instant::<Monotonic>::now();
        let mut next_ms: Option<u32> = None;
        for q in nic.queues.iter() {
            if !q.reset_pending() {
                continue;
            }
            let wait = q.reset_wait(now);
            if !wait.is_zero() {
                let ms = wait.as_millis().clamp(1, i64::from(u32::MAX)) as u32;
                next_ms = Some(next_ms.map_or(ms, |n| n.min(ms)));
                continue;
            }
            let Some(cause) = q.take_reset_request() else {
                continue;
            };
            // Reported already; it stays as it is until recovered.
            if q.awaiting_recovery() {
                continue;
            }
            if !nic.pair_in_use(q.index()) {
                continue;
            }
            let fault = QueueFault {
                queue: q.index(),
                cause,
                at_fault: q.snapshot(),
            };
            // A lost interrupt was dealt with (polled): nothing waits.
            let resets = cause != ResetCause::LOST_IRQ;
            q.set_awaiting_recovery(resets);
            let what = if cause.has(ResetCause::TX_TIMEOUT) {
                "TX timed out"
            } else if cause.has(ResetCause::COMPLETION) {
                "completion out of step with its ring"
            } else if cause.has(ResetCause::RESTART) {
                "did not come back after reconfiguration"
            } else {
                "completion waited without an interrupt, polled"
            };
            let msg = fmt!("{}: queue pair {}: {}", dev.name(), q.index(), what);
            let _ = if cause.has(ResetCause::TX_TIMEOUT) || cause.has(ResetCause::RESTART) {
                health.tx.report(msg, &fault)
            } else {
                health.completion.report(msg, &fault)
            };
            if q.awaiting_recovery() {
                pr_warn!(
                    "{}: queue pair {} not recovered automatically (devlink health recover)\n",
                    dev.name(),
                    q.index()
                );
            }
        }
        if let Some(ms) = next_ms {
            nic.health_work.schedule_after(ms);
        }
    }
}

/// A pair's state as `tx` sees it.
fn put_tx(fmsg: &mut Fmsg<'_>, s: &PairSnapshot) {
    fmsg.bool(c"running", s.running)
        .u32(c"tx_entries", s.tx_entries.into())
        .u32(c"tx_head", s.tx_head.into())
        .u32(c"tx_tail", s.tx_tail.into())
        .u32(c"tx_doorbell", s.tx_rung.into())
        .bool(c"tx_stopped", s.tx_stopped)
        .u64(c"tx_timeouts", s.tx_timeouts)
        .u64(c"resets", s.resets)
        .bool(c"awaiting_recovery", s.awaiting_recovery);
}

/// A pair's state as `completion` sees it.
fn put_completion(fmsg: &mut Fmsg<'_>, s: &PairSnapshot) {
    fmsg.bool(c"running", s.running)
        .u32(c"cq_entries", s.cq_entries)
        .u32(c"cq_head", s.cq_head)
        .bool(c"cq_phase", s.cq_phase)
        .u32(c"rx_head", s.rx_head.into())
        .u32(c"rx_tail", s.rx_tail.into())
        .u32(c"rx_stream_bytes", s.rx_stream_bytes)
        .u32(c"rx_stream_head", s.rx_stream_head)
        .u32(c"tx_head", s.tx_head.into())
        .u64(c"bad_completions", s.bad_completions)
        .u64(c"missed_irqs", s.missed_irqs)
        .u64(c"resets", s.resets)
        .bool(c"awaiting_recovery", s.awaiting_recovery);
    if s.bad_completions > 0 {
        fmsg.object(c"last_bad_completion", |f| {
            f.str(c"ring", if s.bad_cqe_tx { c"tx" } else { c"rx" })
                .u32(c"index", s.bad_cqe_index.into())
                .u32(c"expected", s.bad_cqe_expected.into())
                .u32(c"len", s.bad_cqe_len);
        });
    }
}

/// Every pair's state, one array element each.
fn put_pairs(fmsg: &mut Fmsg<'_>, nic: &Nic, put: fn(&mut Fmsg<'_>, &PairSnapshot)) {
    fmsg.array(c"queues", |list| {
        for q in nic.queues.iter() {
            let s = q.snapshot();
            list.element(|f| {
                f.u32(c"queue", q.index().into());
                put(f, &s);
            });
        }
    });
}

/// A report's fault and the pair then.
fn put_fault(fmsg: &mut Fmsg<'_>, fault: &QueueFault, put: fn(&mut Fmsg<'_>, &PairSnapshot)) {
    fmsg.object(c"fault", |f| {
        f.u32(c"queue", fault.queue.into())
            .bool(c"tx_timeout", fault.cause.has(ResetCause::TX_TIMEOUT))
            .bool(c"completion", fault.cause.has(ResetCause::COMPLETION))
            .bool(c"restart", fault.cause.has(ResetCause::RESTART))
            .bool(c"lost_irq", fault.cause.has(ResetCause::LOST_IRQ));
        put(f, &fault.at_fault);
    });
}

/// What a queue reporter is about: its name and what it shows of a pair.
trait PairView: 'static {
    const NAME: &'static CStr;
    fn put(fmsg: &mut Fmsg<'_>, s: &PairSnapshot);
}

/// A reporter of queue pair faults; recovered by resetting the pair.
struct QueueReporter<V>(PhantomData<V>);

#[vtable]
impl<V: PairView> HealthReporterOps for QueueReporter<V> {
    const NAME: &'static CStr = V::NAME;
    type Owner = NetDevRef<Nic>;
    type Fault = QueueFault;

    fn recover(owner: &Self::Owner, fault: Option<&QueueFault>) -> Result {
        Nic::recover_pairs(&*owner.try_access().ok_or(ENODEV)?, fault)
    }

    fn dump(owner: &Self::Owner, fmsg: &mut Fmsg<'_>, fault: Option<&QueueFault>) -> Result {
        if let Some(fault) = fault {
            put_fault(fmsg, fault, V::put);
        }
        put_pairs(fmsg, owner.try_access().ok_or(ENODEV)?.data(), V::put);
        Ok(())
    }

    fn diagnose(owner: &Self::Owner, fmsg: &mut Fmsg<'_>) -> Result {
        put_pairs(fmsg, owner.try_access().ok_or(ENODEV)?.data(), V::put);
        Ok(())
    }
}

/// `tx`: TX queues the watchdog found stuck, and pairs that did not come
/// back after a reconfiguration.
struct TxView;

impl PairView for TxView {
    const NAME: &'static CStr = c"tx";
    fn put(fmsg: &mut Fmsg<'_>, s: &PairSnapshot) {
        put_tx(fmsg, s);
    }
}

/// `completion`: completions the card wrote that do not match their ring
/// (bad index or length, duplicated, missing), and lost interrupts.
struct CompletionView;

impl PairView for CompletionView {
    const NAME: &'static CStr = c"completion";
    fn put(fmsg: &mut Fmsg<'_>, s: &PairSnapshot) {
        put_completion(fmsg, s);
    }
}

type TxReporter = QueueReporter<TxView>;
type CompletionReporter = QueueReporter<CompletionView>;
