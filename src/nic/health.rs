// SPDX-License-Identifier: GPL-2.0

//! The NIC's devlink health reporters, over the recovery it already had:
//! `tx` (a TX queue the watchdog found stuck), `completion` (completions
//! out of step with their ring), `card` (an admin command the card
//! lost, the card gone, the card back) and, on a PF, `rdma` (QPs the
//! card's RDMA engine failed).
//!
//! A fault is noticed where it happens (the TX watchdog, NAPI, the
//! health check, an admin command), which asks for a recovery and
//! schedules the report work. That work reports the fault without RTNL
//! (the devlink core takes its instance lock, then our recovery takes
//! RTNL), and the core counts it, keeps a dump, and calls `recover`
//! unless auto-recovery is off or the grace period says no; a pair not
//! recovered then waits for `devlink health recover`.

use core::marker::PhantomData;

use kernel::{
    prelude::*,
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
use crate::hw::regs;
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

/// What happened to the card.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum CardFault {
    /// The card failed an admin command; it changed nothing, and the
    /// operation that sent it failed cleanly.
    AdminError,
    /// An admin command went unanswered; the operation that found it
    /// reset the function and restored what it needed.
    AdminTimeout,
    /// The card stopped answering: the device is detached.
    Gone,
    /// It answers again, with all its state lost.
    Back,
}

impl CardFault {
    const ALL: [Self; 4] = [Self::AdminError, Self::AdminTimeout, Self::Gone, Self::Back];

    fn bit(self) -> u32 {
        match self {
            Self::AdminError => 8,
            Self::AdminTimeout => 1,
            Self::Gone => 2,
            Self::Back => 4,
        }
    }

    fn name(self) -> &'static CStr {
        match self {
            Self::AdminError => c"admin command failed",
            Self::AdminTimeout => c"admin command unanswered, function reset",
            Self::Gone => c"card not answering",
            Self::Back => c"card answering again",
        }
    }
}

/// The card's fault, as reported, with its registers then.
pub(crate) struct CardReport {
    fault: CardFault,
    at_fault: CardSnapshot,
}

/// The card's registers and the driver's counters about it.
#[derive(Clone, Copy)]
struct CardSnapshot {
    /// `DEV_STATUS`; `None`: read all ones (the card is not answering).
    status: Option<u32>,
    hw_version: u32,
    fw_version: u32,
    link_status: u32,
    admin_head: u32,
    admin_lost_track: bool,
    device_resets: u64,
    card_lost: u64,
}

/// QP fatal events of the card's RDMA engine, as the PF's NIC hears of
/// them from the RDMA half's event queue.
pub(crate) struct RdmaQpFaults {
    /// Events heard of (free running).
    seen: Atomic<u64>,
    /// Events reported.
    reported: Atomic<u64>,
    /// The QP of the latest.
    last_qpn: Atomic<u32>,
}

impl RdmaQpFaults {
    pub(crate) fn new() -> Self {
        Self {
            seen: Atomic::new(0),
            reported: Atomic::new(0),
            last_qpn: Atomic::new(0),
        }
    }
}

/// QPs that failed since the last report, as reported.
pub(crate) struct RdmaQpFault {
    /// How many.
    qps: u64,
    /// The last of them.
    last_qpn: u32,
    /// All QP fatal events so far.
    total: u64,
}

/// The reporters.
pub(crate) struct NicHealth {
    tx: HealthReporter<TxReporter>,
    completion: HealthReporter<CompletionReporter>,
    card: HealthReporter<CardReporter>,
    /// PF only: the RDMA engine lives there.
    rdma: Option<HealthReporter<RdmaReporter>>,
}

static TX_REPORTER: HealthReporterVTable<TxReporter> = HealthReporterVTable::new();
static COMPLETION_REPORTER: HealthReporterVTable<CompletionReporter> = HealthReporterVTable::new();
static CARD_REPORTER: HealthReporterVTable<CardReporter> = HealthReporterVTable::new();
static RDMA_REPORTER: HealthReporterVTable<RdmaReporter> = HealthReporterVTable::new();

impl NicHealth {
    /// The reporters of the NIC `dev` on `devlink`; `rdma` too for a PF.
    pub(crate) fn new(devlink: &DevlinkRef, dev: NetDevRef<Nic>, rdma: bool) -> Result<Self> {
        let rdma = match rdma {
            true => Some(HealthReporter::new(
                devlink.clone(),
                &RDMA_REPORTER,
                dev.clone(),
            )?),
            false => None,
        };
        Ok(Self {
            rdma,
            tx: HealthReporter::new(devlink.clone(), &TX_REPORTER, dev.clone())?,
            completion: HealthReporter::new(devlink.clone(), &COMPLETION_REPORTER, dev.clone())?,
            card: HealthReporter::new(devlink.clone(), &CARD_REPORTER, dev)?,
        })
    }

    /// Every queue pair was rebuilt by a function reset: neither queue
    /// reporter has a fault left.
    fn queues_rebuilt(&self) {
        self.tx.recovered_elsewhere();
        self.completion.recovered_elsewhere();
    }
}

/// Card faults noticed, not yet reported ([`CardFault::bit`]s).
pub(crate) struct PendingCardFaults(Atomic<u32>);

impl PendingCardFaults {
    pub(crate) fn new() -> Self {
        Self(Atomic::new(0))
    }

    fn add(&self, fault: CardFault) {
        let mut old = self.0.load(Relaxed);
        while let Err(now) = self.0.cmpxchg(old, old | fault.bit(), Relaxed) {
            old = now;
        }
    }

    fn take(&self) -> u32 {
        self.0.xchg(0, Relaxed)
    }
}

impl Nic {
    /// The card's RDMA engine failed QP `qpn` (its user was told): notes it
    /// for the `rdma` reporter and schedules the report. Any context.
    pub(crate) fn rdma_qp_failed(&self, qpn: u32) {
        self.rdma_faults.last_qpn.store(qpn, Relaxed);
        self.rdma_faults.seen.fetch_add(1, Relaxed);
        self.health_work.schedule();
    }

    /// Notes a card fault for the report work and schedules it.
    pub(super) fn card_fault(&self, fault: CardFault) {
        self.card_faults.add(fault);
        self.health_work.schedule();
    }

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

    fn card_snapshot(&self) -> CardSnapshot {
        let read = |r| self.regs.read(r).unwrap_or(u32::MAX);
        CardSnapshot {
            status: self.regs.status(),
            hw_version: read(regs::HW_VERSION),
            fw_version: read(regs::FW_VERSION),
            link_status: read(regs::LINK_STATUS),
            admin_head: read(regs::AQ_HEAD),
            admin_lost_track: self.admin.lost_track(),
            device_resets: self.device_resets.load(Relaxed),
            card_lost: self.card_lost.load(Relaxed),
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

    /// Reports the card faults noticed, then each queue pair asking for a
    /// reset once its backoff allows (a pair failing again soon waits
    /// longer, up to 5 s).
    fn run(dev: &NetDev<Self>, _: &NoLock) {
        let nic = dev.data();
        let Some(health) = nic.health() else {
            return;
        };
        let faults = nic.card_faults.take();
        for fault in CardFault::ALL {
            if faults & fault.bit() != 0 {
                let report = CardReport {
                    fault,
                    at_fault: nic.card_snapshot(),
                };
                let _ = health
                    .card
                    .report(fmt!("{}: {}", dev.name(), fault.name()), &report);
            }
        }
        if let Some(rdma) = &health.rdma {
            let seen = nic.rdma_faults.seen.load(Relaxed);
            let before = nic.rdma_faults.reported.xchg(seen, Relaxed);
            if seen != before {
                let fault = RdmaQpFault {
                    qps: seen.wrapping_sub(before),
                    last_qpn: nic.rdma_faults.last_qpn.load(Relaxed),
                    total: seen,
                };
                let _ = rdma.report(
                    fmt!(
                        "{}: {} RDMA QP(s) failed, the last QP {}",
                        dev.name(),
                        fault.qps,
                        fault.last_qpn
                    ),
                    &fault,
                );
            }
        }
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
        Nic::recover_pairs(owner.get(), fault)
    }

    fn dump(owner: &Self::Owner, fmsg: &mut Fmsg<'_>, fault: Option<&QueueFault>) -> Result {
        if let Some(fault) = fault {
            put_fault(fmsg, fault, V::put);
        }
        put_pairs(fmsg, owner.get().data(), V::put);
        Ok(())
    }

    fn diagnose(owner: &Self::Owner, fmsg: &mut Fmsg<'_>) -> Result {
        put_pairs(fmsg, owner.get().data(), V::put);
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

fn put_card(fmsg: &mut Fmsg<'_>, s: &CardSnapshot) {
    fmsg.bool(c"answering", s.status.is_some())
        .u32(c"status", s.status.unwrap_or(u32::MAX))
        .u32(c"hw_version", s.hw_version)
        .u32(c"fw_version", s.fw_version)
        .u32(c"link_status", s.link_status)
        .u32(c"admin_head", s.admin_head)
        .bool(c"admin_lost_track", s.admin_lost_track)
        .u64(c"function_resets", s.device_resets)
        .u64(c"card_lost", s.card_lost);
}

/// `card`: the card as a whole. An admin command it did not answer is
/// recovered by the operation that found it (it resets the function and
/// restores the state); a card gone has the device detached; a card back
/// is reset and restored, queues and all.
struct CardReporter;

#[vtable]
impl HealthReporterOps for CardReporter {
    const NAME: &'static CStr = c"card";
    type Owner = NetDevRef<Nic>;
    type Fault = CardReport;

    fn recover(owner: &Self::Owner, fault: Option<&CardReport>) -> Result {
        let dev = owner.get();
        let nic = dev.data();
        match fault.map(|f| f.fault) {
            // Nothing to do: the command failed and changed nothing.
            Some(CardFault::AdminError) => Ok(()),
            // Nothing left to do: the function was reset and restored.
            Some(CardFault::AdminTimeout) => Ok(()),
            // Detached; the health check watches for its return.
            Some(CardFault::Gone) => Ok(()),
            Some(CardFault::Back) | None => {
                if nic.regs.status().is_none() {
                    return Err(EIO);
                }
                let rtnl = rtnl::lock();
                nic.reset_and_restore(dev, &rtnl);
                Ok(())
            }
        }
    }

    fn dump(owner: &Self::Owner, fmsg: &mut Fmsg<'_>, fault: Option<&CardReport>) -> Result {
        if let Some(report) = fault {
            fmsg.object(c"fault", |f| {
                f.str(c"what", report.fault.name());
                put_card(f, &report.at_fault);
            });
        }
        fmsg.object(c"now", |f| put_card(f, &owner.get().data().card_snapshot()));
        Ok(())
    }

    fn diagnose(owner: &Self::Owner, fmsg: &mut Fmsg<'_>) -> Result {
        put_card(fmsg, &owner.get().data().card_snapshot());
        Ok(())
    }
}

/// The RDMA engine as the NIC knows it: the card answering, QP fatal
/// events heard of, the last failed QP.
fn put_rdma(fmsg: &mut Fmsg<'_>, nic: &Nic) {
    fmsg.bool(c"answering", nic.regs.status().is_some())
        .u64(c"qp_fatal_events", nic.rdma_faults.seen.load(Relaxed))
        .u32(c"last_failed_qpn", nic.rdma_faults.last_qpn.load(Relaxed));
}

/// `rdma`: QPs the card's RDMA engine failed by itself (a NAK, a
/// protection or length error, retries exhausted), which the engine
/// announces with a QP fatal event. The QP's user hears of it from
/// ib_core (`IB_EVENT_QP_FATAL`) and re-creates the QP, as nvme-rdma
/// reconnects; the engine itself needs nothing, so recovery checks that
/// the card still answers.
struct RdmaReporter;

#[vtable]
impl HealthReporterOps for RdmaReporter {
    const NAME: &'static CStr = c"rdma";
    type Owner = NetDevRef<Nic>;
    type Fault = RdmaQpFault;

    fn recover(owner: &Self::Owner, _fault: Option<&RdmaQpFault>) -> Result {
        match owner.get().data().regs.status() {
            Some(_) => Ok(()),
            None => Err(EIO),
        }
    }

    fn dump(owner: &Self::Owner, fmsg: &mut Fmsg<'_>, fault: Option<&RdmaQpFault>) -> Result {
        if let Some(f) = fault {
            fmsg.object(c"fault", |o| {
                o.u64(c"qps_failed", f.qps)
                    .u32(c"last_failed_qpn", f.last_qpn)
                    .u64(c"qp_fatal_events", f.total);
            });
        }
        fmsg.object(c"now", |o| put_rdma(o, owner.get().data()));
        Ok(())
    }

    fn diagnose(owner: &Self::Owner, fmsg: &mut Fmsg<'_>) -> Result {
        put_rdma(fmsg, owner.get().data());
        Ok(())
    }
}
