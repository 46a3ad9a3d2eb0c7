// SPDX-License-Identifier: GPL-2.0

//! The NIC's devlink health reporters, over the recovery it already had:
//! `tx` (a TX queue the watchdog found stuck) and `completion`
//! (completions out of step with their ring, lost interrupts). The card
//! as a whole has the function's reporters (`crate::function`).
//!
//! The function makes these two with its own at probe, under the devlink
//! instance lock, and keeps them until remove: a `devlink dev reload`
//! runs under that lock and replaces the NIC, so it can neither destroy
//! nor create reporters, nor wait for a report (the core takes the lock
//! to report). Their operations find the NIC running now through
//! [`CurrentNic`].
//!
//! A fault is noticed where it happens (the TX watchdog, NAPI, the
//! health check), which asks for a recovery and schedules the NIC's
//! report work. That work decides what to report (each pair once, with a
//! backoff) and hands the [`QueueFault`] to the function
//! (`NicEvents::queue_fault`), whose work reports it: not from the NIC's
//! own work, which a reload's teardown waits for while it holds the lock
//! a report needs. The core counts the fault, keeps a dump, and calls
//! `recover` (under the instance lock, which then takes RTNL) unless
//! auto-recovery is off or the grace period says no; a pair not recovered
//! then waits for `devlink health recover`.

use core::marker::PhantomData;

use kernel::{
    prelude::*,
    str::CString,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc,
    },
    time::{Instant, Monotonic},
};

use super::{
    queue::{PairSnapshot, ResetCause},
    Nic,
};
use crate::linux::{
    devlink::{DevlinkRef, Fmsg, HealthReporter, HealthReporterOps, HealthReporterVTable, Locked},
    net::{
        netdev::NetDev,
        rtnl,
        work::{DeviceWork, NoLock},
    },
};

/// [`crate::linux::net::work::NetDevWork`] id of the report work.
pub(super) const HEALTH_WORK: u8 = 3;

/// Tells NICs apart across reloads: a fault names the NIC it happened on.
static NEXT_NIC_ID: Atomic<u64> = Atomic::new(1);

/// A new NIC's identity, never given out before.
pub(super) fn next_nic_id() -> u64 {
    NEXT_NIC_ID.fetch_add(1, Relaxed)
}

/// A queue pair's fault, as reported.
pub(crate) struct QueueFault {
    /// The NIC it happened on ([`Nic::id`]).
    nic: u64,
    queue: u16,
    cause: ResetCause,
    /// The pair when the report work picked the fault up.
    at_fault: PairSnapshot,
    /// What the report says.
    msg: CString,
}

/// How the queue reporters reach the NIC running now, which a reload
/// replaces: the function implements it.
pub(crate) trait CurrentNic: Send + Sync {
    /// Calls `f` with the function's NIC; `ENODEV` if none runs.
    fn with_nic(&self, f: &mut dyn FnMut(&NetDev<Nic>) -> Result) -> Result;
}

/// The `tx` and `completion` reporters.
pub(crate) struct NicReporters {
    tx: HealthReporter<TxReporter>,
    completion: HealthReporter<CompletionReporter>,
    /// What their operations see: the NIC running now.
    current: Arc<dyn CurrentNic>,
}

static TX_REPORTER: HealthReporterVTable<TxReporter> = HealthReporterVTable::new();
static COMPLETION_REPORTER: HealthReporterVTable<CompletionReporter> = HealthReporterVTable::new();

impl NicReporters {
    /// The reporters on `devlink`, whose lock the caller holds
    /// (`locked`); they find the NIC through `current`. On an error none
    /// is left.
    pub(crate) fn new(
        devlink: &DevlinkRef,
        locked: &Locked<'_>,
        current: Arc<dyn CurrentNic>,
    ) -> Result<Self> {
        let tx = HealthReporter::new(devlink.clone(), locked, &TX_REPORTER, current.clone())?;
        match HealthReporter::new(
            devlink.clone(),
            locked,
            &COMPLETION_REPORTER,
            current.clone(),
        ) {
            Ok(completion) => Ok(Self {
                tx,
                completion,
                current,
            }),
            Err(e) => {
                tx.destroy(locked);
                Err(e)
            }
        }
    }

    /// Reports `fault` to its reporter, which recovers it (or not: the
    /// pair then waits, and the log says so). Process context, no lock
    /// held, and not from work a reload waits for.
    pub(crate) fn report(&self, fault: &QueueFault) {
        let msg = fmt!("{}", fault.msg.to_str().unwrap_or("queue pair fault"));
        let _ = if fault.cause.has(ResetCause::TX_TIMEOUT) || fault.cause.has(ResetCause::RESTART) {
            self.tx.report(msg, fault)
        } else {
            self.completion.report(msg, fault)
        };
        let _ = self.current.with_nic(&mut |dev| {
            let nic = dev.data();
            let waits = nic.id == fault.nic
                && nic
                    .queues
                    .get(usize::from(fault.queue))
                    .is_some_and(|q| q.awaiting_recovery());
            if waits {
                pr_warn!(
                    "{}: queue pair {} not recovered automatically (devlink health recover)\n",
                    dev.name(),
                    fault.queue
                );
            }
            Ok(())
        });
    }

    /// Every queue pair was rebuilt by a function reset: neither queue
    /// reporter has a fault left.
    pub(crate) fn queues_rebuilt(&self) {
        self.tx.recovered_elsewhere();
        self.completion.recovered_elsewhere();
    }
}

impl Nic {
    /// Every pair was rebuilt (a function reset): none waits for
    /// a recovery any more.
    pub(super) fn pairs_rebuilt(&self) {
        for queue in self.queues.iter() {
            queue.set_awaiting_recovery(false);
        }
        self.events.queues_rebuilt();
    }

    /// `recover` of the queue reporters: resets the pair of `fault` (but
    /// a lost interrupt needs nothing more: it was polled, and a fault
    /// of a NIC a reload replaced needs nothing either), or every pair
    /// waiting for a recovery (`None`).
    fn recover_pairs(dev: &NetDev<Self>, fault: Option<&QueueFault>) -> Result {
        let nic = dev.data();
        if fault.is_some_and(|f| f.cause == ResetCause::LOST_IRQ || f.nic != nic.id) {
            return Ok(());
        }
        let queue = fault.map(|f| f.queue);
        let rtnl = rtnl::lock();
        let locked = dev.lock_instance(&rtnl);
        let mut result = Ok(());
        for q in nic.queues.iter() {
            let wanted = match queue {
                Some(n) => q.index() == n,
                None => q.awaiting_recovery(),
            };
            if wanted {
                if let Err(e) = nic.reset_pair(dev, &locked, q.index()) {
                    result = Err(e);
                }
            }
        }
        result
    }
}

impl DeviceWork<HEALTH_WORK> for Nic {
    /// Takes nothing: the report itself is the function's.
    type Lock = NoLock;

    /// Hands each queue pair asking for a reset to the function's report
    /// once its backoff allows (a pair failing again soon waits longer,
    /// up to 5 s).
    fn run(dev: &NetDev<Self>, _: &NoLock) {
        let nic = dev.data();
        let now = Instant::<Monotonic>::now();
        let mut next_ms: Option<u32> = None;
        for q in nic.queues.iter() {
            if !q.reset_pending() {
                continue;
            }
            let wait = q.reset_wait(now);
            if !wait.is_zero() {
                // CAST: clamped to the range of `u32`.
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
            let what = if cause.has(ResetCause::TX_TIMEOUT) {
                "TX timed out"
            } else if cause.has(ResetCause::COMPLETION) {
                "completion out of step with its ring"
            } else if cause.has(ResetCause::RESTART) {
                "did not come back after reconfiguration"
            } else {
                "completion waited without an interrupt, polled"
            };
            let Ok(msg) =
                CString::try_from_fmt(fmt!("{}: queue pair {}: {}", dev.name(), q.index(), what))
            else {
                // No memory for the report: asked again next time.
                q.request_reset(cause);
                next_ms = Some(next_ms.map_or(100, |n| n.min(100)));
                continue;
            };
            // A lost interrupt was dealt with (polled): nothing waits.
            q.set_awaiting_recovery(cause != ResetCause::LOST_IRQ);
            nic.events.queue_fault(QueueFault {
                nic: nic.id,
                queue: q.index(),
                cause,
                at_fault: q.snapshot(),
                msg,
            });
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
    type Owner = Arc<dyn CurrentNic>;
    type Fault = QueueFault;

    fn recover(owner: &Self::Owner, fault: Option<&QueueFault>) -> Result {
        owner.with_nic(&mut |dev| Nic::recover_pairs(dev, fault))
    }

    fn dump(owner: &Self::Owner, fmsg: &mut Fmsg<'_>, fault: Option<&QueueFault>) -> Result {
        if let Some(fault) = fault {
            put_fault(fmsg, fault, V::put);
        }
        owner.with_nic(&mut |dev| {
            put_pairs(fmsg, dev.data(), V::put);
            Ok(())
        })
    }

    fn diagnose(owner: &Self::Owner, fmsg: &mut Fmsg<'_>) -> Result {
        owner.with_nic(&mut |dev| {
            put_pairs(fmsg, dev.data(), V::put);
            Ok(())
        })
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
