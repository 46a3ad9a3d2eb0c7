// SPDX-License-Identifier: GPL-2.0

//! The card as a whole, as its function watches it: the periodic check
//! that the card answers (a card gone has its network device detached, a
//! card back is reset and restored), the function reset, the aging of a
//! PF's GFT, and the devlink health reporters `card` (an admin command
//! the card failed or lost, the card gone, the card back) and, on a PF,
//! `rdma` (QPs the card's RDMA engine failed).
//!
//! A fault is noted where it is noticed (the watch, an admin command the
//! NIC sent, the RDMA half's event queue, the NIC's queue pairs) and
//! reported by the watch work, without a lock held: the devlink core
//! counts it, keeps a dump, and calls `recover` unless auto-recovery is
//! off or the grace period says no.
//!
//! The reporters, the NIC's `tx` and `completion` among them, are made
//! at probe under the devlink instance lock and kept until remove, as
//! mlx5 keeps its firmware reporters: `devlink dev reload` runs under
//! that lock, so it makes and destroys none, and it never waits for the
//! watch, whose report may be waiting for the lock.

use kernel::{
    new_mutex,
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc, Mutex,
    },
    time::{delay::fsleep, Delta, Instant, Monotonic},
};

use super::Function;
use crate::admin::AdminQueue;
use crate::hw::{regs, DevStatus};
use crate::linux::{
    device::reprobe,
    devlink::{
        DevlinkRef, Fmsg, HealthReporter, HealthReporterOps, HealthReporterVTable, Locked,
        Registration,
    },
    net::{netdev::NetDev, rtnl},
    work::{PinnedWork, PinnedWorkRun},
};
use crate::nic::{CardCounters, CurrentNic, Nic, NicEvents, NicReporters, QueueFault};
use crate::rdma::RdmaEvents;

/// [`crate::linux::work::PinnedWork`] id of the watch.
pub(super) const WATCH_WORK: u8 = 0;
/// [`crate::linux::work::PinnedWork`] id of the RDMA half's rebind.
pub(super) const REBIND_WORK: u8 = 1;

/// How often the watch runs while the function runs something, in ms.
const CHECK_MS: u32 = 1000;
/// How long the card must read all ones before it counts as gone, in
/// ms, so that a glitch (a read during a reset, a fault held briefly)
/// is not taken for a removal: two and a half periods, so the third
/// check after the first miss finds it gone even if it ran a little
/// early relative to the first, and a fault a test holds for a second
/// or so on a slow (debug) kernel is still a glitch.
const CARD_GONE_MS: i64 = 5 * CHECK_MS as i64 / 2;
/// How long a function reset may take, in milliseconds.
const RESET_POLLS: u32 = 100;
/// Queue pair faults waiting for the watch at most (one per pair is the
/// most the NIC sends before a recovery; more are dropped and logged).
const MAX_QUEUE_FAULTS: usize = 64;

/// What the watch learnt about the card.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CardChange {
    /// As before.
    Same,
    /// It stopped answering (surprise removal, or wedged).
    Gone,
    /// It answers again after being gone (it lost all its state).
    Back,
}

/// Whether the card answers register reads: gone once every check for
/// [`CARD_GONE_MS`] read all ones (one may be a glitch, such as a read
/// during a reset), back at the first good read. Time, not a count of
/// checks, so that a check run early or late changes nothing.
#[derive(Clone, Copy, Default)]
pub(crate) struct CardWatch {
    /// When the first check of the current run of misses read all ones.
    first_miss: Option<Instant<Monotonic>>,
    gone: bool,
}

impl CardWatch {
    /// One check at `now`; `answering`: a status register read something
    /// other than all ones.
    pub(crate) fn check(&mut self, answering: bool, now: Instant<Monotonic>) -> CardChange {
        if answering {
            self.first_miss = None;
            return if core::mem::take(&mut self.gone) {
                CardChange::Back
            } else {
                CardChange::Same
            };
        }
        let first = *self.first_miss.get_or_insert(now);
        if !self.gone && (now - first).as_millis() >= CARD_GONE_MS {
            self.gone = true;
            return CardChange::Gone;
        }
        CardChange::Same
    }
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
    /// The card stopped answering: the network device is detached.
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
    status: Option<DevStatus>,
    hw_version: u32,
    fw_version: u32,
    link_status: u32,
    admin_head: u32,
    admin_lost_track: bool,
    device_resets: u64,
    card_lost: u64,
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

/// The function's record of its card: the watch, faults noted and not
/// reported yet, and counters.
#[pin_data]
pub(crate) struct CardHealth {
    /// Whether the card answers; only the watch work uses it.
    #[pin]
    watch: Mutex<CardWatch>,
    /// Card faults noted, not reported yet ([`CardFault::bit`]s).
    pending: Atomic<u32>,
    /// Admin commands the card failed, as last reported.
    admin_errors_reported: Atomic<u64>,
    /// Times the function was reset for a command the card lost.
    device_resets: Atomic<u64>,
    /// Times the card stopped answering.
    card_lost: Atomic<u64>,
    /// PF: QP fatal events heard of (free running), reported, and the QP
    /// of the latest.
    rdma_seen: Atomic<u64>,
    rdma_reported: Atomic<u64>,
    rdma_last_qpn: Atomic<u32>,
    /// A function reset asks the RDMA half to be bound afresh.
    rebind: Atomic<bool>,
    /// Queue pair faults the NIC handed over, for the watch to report.
    #[pin]
    queue_faults: Mutex<KVec<QueueFault>>,
}

impl CardHealth {
    /// A card that answers, with nothing noted.
    pub(super) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            watch <- new_mutex!(CardWatch::default()),
            pending: Atomic::new(0),
            admin_errors_reported: Atomic::new(0),
            device_resets: Atomic::new(0),
            card_lost: Atomic::new(0),
            rdma_seen: Atomic::new(0),
            rdma_reported: Atomic::new(0),
            rdma_last_qpn: Atomic::new(0),
            rebind: Atomic::new(false),
            queue_faults <- new_mutex!(KVec::new()),
        })
    }

    fn note(&self, fault: CardFault) {
        let mut old = self.pending.load(Relaxed);
        while let Err(now) = self.pending.cmpxchg(old, old | fault.bit(), Relaxed) {
            old = now;
        }
    }
}

/// The function's reporters, made at probe and kept until remove.
pub(crate) struct Reporters {
    card: HealthReporter<CardReporter>,
    /// PF only: the RDMA engine lives there.
    rdma: Option<HealthReporter<RdmaReporter>>,
    /// The NIC's `tx` and `completion`.
    nic: NicReporters,
}

static CARD_REPORTER: HealthReporterVTable<CardReporter> = HealthReporterVTable::new();
static RDMA_REPORTER: HealthReporterVTable<RdmaReporter> = HealthReporterVTable::new();

impl Reporters {
    /// The reporters of `instance`, whose lock the caller holds
    /// (`locked`); `rdma` too for a PF. On an error none is left (each
    /// made is destroyed under the lock).
    pub(super) fn new(
        instance: &Arc<Registration<Function>>,
        locked: &Locked<'_>,
        rdma: bool,
    ) -> Result<Self> {
        let devlink = DevlinkRef::new(instance);
        let owner = || FunctionOwner(instance.clone());
        let current: Arc<dyn CurrentNic> = Arc::new(owner(), GFP_KERNEL)?;
        let card = HealthReporter::new(devlink.clone(), locked, &CARD_REPORTER, owner())?;
        let rdma = match rdma {
            true => match HealthReporter::new(devlink.clone(), locked, &RDMA_REPORTER, owner()) {
                Ok(r) => Some(r),
                Err(e) => {
                    card.destroy(locked);
                    return Err(e);
                }
            },
            false => None,
        };
        match NicReporters::new(&devlink, locked, current) {
            Ok(nic) => Ok(Self { card, rdma, nic }),
            Err(e) => {
                if let Some(r) = rdma {
                    r.destroy(locked);
                }
                card.destroy(locked);
                Err(e)
            }
        }
    }
}

/// The function's side of what its NIC notices (`crate::nic::NicEvents`),
/// with the admin queue of the bring-up that made the NIC.
pub(crate) struct FunctionEvents {
    instance: Arc<Registration<Function>>,
    admin: Arc<AdminQueue>,
}

impl FunctionEvents {
    /// The events of `instance`'s function, whose admin queue is `admin`.
    pub(super) fn new(instance: &Arc<Registration<Function>>, admin: &Arc<AdminQueue>) -> Self {
        Self {
            instance: instance.clone(),
            admin: admin.clone(),
        }
    }
}

impl NicEvents for FunctionEvents {
    fn reset_function(&self, lost_command: bool) -> Result {
        self.instance
            .data()
            .reset_function(&self.admin, lost_command)
    }

    fn counters(&self) -> CardCounters {
        let health = &self.instance.data().health;
        CardCounters {
            function_resets: health.device_resets.load(Relaxed),
            card_lost: health.card_lost.load(Relaxed),
        }
    }

    /// Queued for the watch, which runs now.
    fn queue_fault(&self, fault: QueueFault) {
        let function = self.instance.data();
        {
            let mut faults = function.health.queue_faults.lock();
            if faults.len() >= MAX_QUEUE_FAULTS || faults.push(fault, GFP_KERNEL).is_err() {
                pr_warn!("rsnic: a queue pair fault was not reported (too many pending)\n");
                return;
            }
        }
        PinnedWork::<_, WATCH_WORK>::schedule(function);
    }

    fn queues_rebuilt(&self) {
        if let Some(reporters) = self.instance.data().reporters() {
            reporters.nic.queues_rebuilt();
        }
    }
}

impl RdmaEvents for FunctionEvents {
    /// Notes the failed QP for the `rdma` reporter and has the watch
    /// report it now. Any context.
    fn qp_failed(&self, qpn: u32) {
        let function = self.instance.data();
        function.health.rdma_last_qpn.store(qpn, Relaxed);
        function.health.rdma_seen.fetch_add(1, Relaxed);
        PinnedWork::<_, WATCH_WORK>::schedule(function);
    }
}

impl Function {
    /// Resets the function on the card and waits until it is ready, with
    /// its admin queue `admin` started again; `lost_command`: for a
    /// command the card lost (counted and reported to `card`), not one
    /// the driver asked for (the card came back without its state). The
    /// card's RDMA engine was reset too: the RDMA half is bound afresh
    /// from the rebind work. Process context; the caller holds what it
    /// restores afterwards (the NIC, RTNL).
    fn reset_function(&self, admin: &AdminQueue, lost_command: bool) -> Result {
        if lost_command {
            self.health.device_resets.fetch_add(1, Relaxed);
            self.health.note(CardFault::AdminTimeout);
            PinnedWork::<_, WATCH_WORK>::schedule(self);
        }
        self.health.rebind.store(true, Relaxed);
        PinnedWork::<_, REBIND_WORK>::schedule(self);
        self.regs.reset_function()?;
        let mut ready = false;
        for _ in 0..RESET_POLLS {
            ready = self.regs.status().is_some_and(|status| status.ready());
            if ready {
                break;
            }
            fsleep(Delta::from_millis(1));
        }
        if !ready {
            return Err(ETIMEDOUT);
        }
        admin.restart()
    }

    /// Starts the watch (the function runs something now).
    pub(super) fn start_watch(&self) {
        PinnedWork::<_, WATCH_WORK>::schedule_after(self, CHECK_MS);
    }

    /// Stops both works for good (the function is going away): waits for
    /// a run in progress.
    pub(super) fn stop_works(&self) {
        self.watch_work.disable();
        self.rebind_work.disable();
    }

    fn card_snapshot(&self, admin: Option<&AdminQueue>) -> CardSnapshot {
        let read = |r| self.regs.read(r).unwrap_or(u32::MAX);
        CardSnapshot {
            status: self.regs.status(),
            hw_version: read(regs::HW_VERSION),
            fw_version: read(regs::FW_VERSION),
            link_status: read(regs::LINK_STATUS),
            admin_head: read(regs::AQ_HEAD),
            admin_lost_track: admin.is_some_and(|a| a.lost_track()),
            device_resets: self.health.device_resets.load(Relaxed),
            card_lost: self.health.card_lost.load(Relaxed),
        }
    }

    /// The card is back without its state: the function is reset and
    /// restored, the network device's queues and all. `EIO` if it does
    /// not answer, `ENODEV` if nothing runs.
    fn restore_card(&self) -> Result {
        if self.regs.status().is_none() {
            return Err(EIO);
        }
        let loaded = self.loaded.lock();
        let loaded = loaded.as_ref().ok_or(ENODEV)?;
        let dev = loaded.nic().dev();
        let rtnl = rtnl::lock();
        dev.data().reset_and_restore(dev, &dev.lock_instance(&rtnl));
        Ok(())
    }

    /// Queue pair faults of a NIC that is gone are not reported.
    pub(super) fn forget_queue_faults(&self) {
        self.health.queue_faults.lock().clear();
    }

    /// Reports the faults noted since the last report: the card's, the
    /// RDMA engine's and the queue pairs'. No lock held: the core takes
    /// the instance lock, a recovery `loaded` and RTNL.
    fn report(&self, reporters: &Reporters, admin: Option<&AdminQueue>) {
        let queue_faults = core::mem::take(&mut *self.health.queue_faults.lock());
        for fault in queue_faults.iter() {
            reporters.nic.report(fault);
        }
        let pending = self.health.pending.xchg(0, Relaxed);
        for fault in CardFault::ALL {
            if pending & fault.bit() != 0 {
                let report = CardReport {
                    fault,
                    at_fault: self.card_snapshot(admin),
                };
                let _ = reporters
                    .card
                    .report(fmt!("{}", fault.name().to_str().unwrap_or("")), &report);
            }
        }
        let Some(rdma) = &reporters.rdma else {
            return;
        };
        let seen = self.health.rdma_seen.load(Relaxed);
        let before = self.health.rdma_reported.xchg(seen, Relaxed);
        if seen != before {
            let fault = RdmaQpFault {
                qps: seen.wrapping_sub(before),
                last_qpn: self.health.rdma_last_qpn.load(Relaxed),
                total: seen,
            };
            let _ = rdma.report(
                fmt!(
                    "{} RDMA QP(s) failed, the last QP {}",
                    fault.qps,
                    fault.last_qpn
                ),
                &fault,
            );
        }
    }
}

impl PinnedWorkRun<WATCH_WORK> for Function {
    fn work(&self) -> &PinnedWork<Self, WATCH_WORK> {
        &self.watch_work
    }

    /// Checks that the card answers (a card gone has the network device
    /// detached; a card back is a fault whose recovery restores it),
    /// notes admin commands the card failed, ages a PF's GFT while the
    /// device is up, and reports what was noted. Runs again after
    /// [`CHECK_MS`] while the function runs something.
    fn run(&self) {
        let Some(reporters) = self.reporters() else {
            return;
        };
        let admin = {
            let loaded = self.loaded.lock();
            // Nothing runs (between a reload's halves, or going away):
            // nothing to watch; `set_loaded` starts the watch again.
            let Some(loaded) = loaded.as_ref() else {
                return;
            };
            let answering = self.regs.status().is_some();
            let change = self
                .health
                .watch
                .lock()
                .check(answering, Instant::<Monotonic>::now());
            let dev = loaded.nic().dev();
            match change {
                CardChange::Same => {}
                CardChange::Gone => {
                    self.health.card_lost.fetch_add(1, Relaxed);
                    self.health.note(CardFault::Gone);
                    let rtnl = rtnl::lock();
                    dev.data().card_gone(dev, &dev.lock_instance(&rtnl));
                }
                CardChange::Back => {
                    pr_info!("{}: card answers again\n", dev.name());
                    self.health.note(CardFault::Back);
                }
            }
            // A command the card failed (it changed nothing): noted once.
            let failed = loaded.admin().errors.load(Relaxed);
            if self.health.admin_errors_reported.xchg(failed, Relaxed) != failed {
                self.health.note(CardFault::AdminError);
            }
            if answering && dev.is_running() {
                if let Some(gft) = loaded.gft() {
                    gft.age();
                }
            }
            loaded.admin().clone()
        };
        // Not under `loaded`: a recovery takes it.
        self.report(&reporters, Some(&admin));
        PinnedWork::<_, WATCH_WORK>::schedule_after(self, CHECK_MS);
    }
}

impl PinnedWorkRun<REBIND_WORK> for Function {
    fn work(&self) -> &PinnedWork<Self, REBIND_WORK> {
        &self.rebind_work
    }

    /// After a function reset the card's RDMA engine has no GIDs, QPs,
    /// CQs or MRs: the RDMA half, if bound, is unbound (ib_core tells its
    /// users the device is gone) and bound again to a fresh engine, as
    /// mlx5 reloads its auxiliary devices after a firmware reset. No lock
    /// is held: unbinding and binding take `loaded` and RTNL.
    fn run(&self) {
        if !self.health.rebind.xchg(false, Relaxed) || !self.rdma.bound.load(Relaxed) {
            return;
        }
        let Some(rdma) = self.rdma.device() else {
            return;
        };
        match reprobe(&rdma) {
            Ok(()) => dev_info!(rdma, "RDMA half bound afresh after the reset\n"),
            Err(e) => dev_err!(rdma, "RDMA half not bound again: {:?}\n", e),
        }
    }
}

/// A reporter's owner: the function's devlink instance.
struct FunctionOwner(Arc<Registration<Function>>);

impl CurrentNic for FunctionOwner {
    /// Under `loaded`: a reload, which replaces the NIC, waits.
    fn with_nic(&self, f: &mut dyn FnMut(&NetDev<Nic>) -> Result) -> Result {
        let loaded = self.function().loaded.lock();
        f(loaded.as_ref().ok_or(ENODEV)?.nic().dev())
    }
}

impl FunctionOwner {
    fn function(&self) -> &Function {
        self.0.data()
    }

    /// The card now, with the admin queue's state if the function runs.
    fn snapshot(&self) -> CardSnapshot {
        let function = self.function();
        let loaded = function.loaded.lock();
        function.card_snapshot(loaded.as_ref().map(|l| &**l.admin()))
    }
}

fn put_card(fmsg: &mut Fmsg<'_>, s: &CardSnapshot) {
    fmsg.bool(c"answering", s.status.is_some())
        .u32(c"status", s.status.map_or(u32::MAX, DevStatus::raw))
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
    type Owner = FunctionOwner;
    type Fault = CardReport;

    fn recover(owner: &Self::Owner, fault: Option<&CardReport>) -> Result {
        match fault.map(|f| f.fault) {
            // Nothing to do: the command failed and changed nothing.
            Some(CardFault::AdminError) => Ok(()),
            // Nothing left to do: the function was reset and restored.
            Some(CardFault::AdminTimeout) => Ok(()),
            // Detached; the watch sees it return.
            Some(CardFault::Gone) => Ok(()),
            Some(CardFault::Back) | None => owner.function().restore_card(),
        }
    }

    fn dump(owner: &Self::Owner, fmsg: &mut Fmsg<'_>, fault: Option<&CardReport>) -> Result {
        if let Some(report) = fault {
            fmsg.object(c"fault", |f| {
                f.str(c"what", report.fault.name());
                put_card(f, &report.at_fault);
            });
        }
        fmsg.object(c"now", |f| put_card(f, &owner.snapshot()));
        Ok(())
    }

    fn diagnose(owner: &Self::Owner, fmsg: &mut Fmsg<'_>) -> Result {
        put_card(fmsg, &owner.snapshot());
        Ok(())
    }
}

/// The RDMA engine as the function knows it: the card answering, QP
/// fatal events heard of, the last failed QP.
fn put_rdma(fmsg: &mut Fmsg<'_>, function: &Function) {
    fmsg.bool(c"answering", function.regs.status().is_some())
        .u64(c"qp_fatal_events", function.health.rdma_seen.load(Relaxed))
        .u32(
            c"last_failed_qpn",
            function.health.rdma_last_qpn.load(Relaxed),
        );
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
    type Owner = FunctionOwner;
    type Fault = RdmaQpFault;

    fn recover(owner: &Self::Owner, _fault: Option<&RdmaQpFault>) -> Result {
        match owner.function().regs.status() {
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
        fmsg.object(c"now", |o| put_rdma(o, owner.function()));
        Ok(())
    }

    fn diagnose(owner: &Self::Owner, fmsg: &mut Fmsg<'_>) -> Result {
        put_rdma(fmsg, owner.function());
        Ok(())
    }
}
