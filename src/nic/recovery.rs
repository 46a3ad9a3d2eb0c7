// SPDX-License-Identifier: GPL-2.0

//! Recovery: when to reset a queue pair and how to tell a lost interrupt
//! (the policy), and the device's work items that carry it out: the
//! periodic health check of the card and its queue pairs, queue pair and
//! function resets, and the GFT exception work.

use kernel::{
    prelude::*,
    sync::atomic::Relaxed,
    time::{Delta, Instant, Monotonic},
};

use super::bond;
use super::{
    health::CardFault,
    queue::{bump, ResetCause},
    Nic,
};
use crate::linux::net::{
    netdev::NetDev,
    rtnl::Rtnl,
    work::{DeviceWork, NoLock},
};

/// [`crate::linux::net::work::NetDevWork`] id of the GFT exception work.
pub(super) const GFT_WORK: u8 = 1;
/// [`crate::linux::net::work::NetDevWork`] id of the work that tells the
/// function of a function reset.
pub(super) const EVENTS_WORK: u8 = 2;
/// GFT exceptions one run of the work decides before it yields.
const GFT_WORK_BUDGET: u32 = 256;

/// How often the device's health check runs while it is up, in ms.
pub(crate) const HEALTH_CHECK_MS: u32 = 1000;
/// How long the card must read all ones before it counts as gone, in
/// ms, so that a glitch (a read during a reset, a fault held briefly)
/// is not taken for a removal: two and a half health periods, so the
/// third periodic check after the first miss finds it gone even if it
/// ran a little early relative to the first, and a fault a test holds
/// for a second or so on a slow (debug) kernel is still a glitch.
const CARD_GONE_MS: i64 = 5 * HEALTH_CHECK_MS as i64 / 2;

/// Wait before a reset that follows another one closely.
const FIRST_BACKOFF_MS: i64 = 100;
/// The longest wait between two resets.
const MAX_BACKOFF_MS: i64 = 5000;
/// A reset this long after the previous one starts afresh (no wait).
const QUIET_MS: i64 = 10_000;

/// Pacing of one queue pair's resets: the first runs at once; one that
/// follows within [`QUIET_MS`] waits twice as long as the last wait
/// (from [`FIRST_BACKOFF_MS`] up to [`MAX_BACKOFF_MS`]), so a card that
/// keeps failing costs a few resets, not a reset storm.
#[derive(Clone, Copy)]
pub(crate) struct ResetBackoff {
    last: Option<Instant<Monotonic>>,
    wait: Delta,
}

impl ResetBackoff {
    /// No reset yet.
    pub(crate) const fn new() -> Self {
        Self {
            last: None,
            wait: Delta::ZERO,
        }
    }

    /// How long a reset asked for `now` must still wait (zero: go).
    pub(crate) fn remaining(&self, now: Instant<Monotonic>) -> Delta {
        let Some(last) = self.last else {
            return Delta::ZERO;
        };
        let since = now - last;
        let wait = self.next_wait(since);
        if since.as_millis() >= wait.as_millis() {
            Delta::ZERO
        } else {
            Delta::from_millis(wait.as_millis() - since.as_millis())
        }
    }

    /// Records a reset done `now`.
    pub(crate) fn record(&mut self, now: Instant<Monotonic>) {
        if let Some(last) = self.last {
            self.wait = self.next_wait(now - last);
        }
        self.last = Some(now);
    }

    /// The wait a reset `since` the last one owes.
    fn next_wait(&self, since: Delta) -> Delta {
        if since.as_millis() >= QUIET_MS {
            Delta::ZERO
        } else if self.wait.is_zero() {
            Delta::from_millis(FIRST_BACKOFF_MS)
        } else {
            Delta::from_millis((self.wait.as_millis() * 2).min(MAX_BACKOFF_MS))
        }
    }
}

/// What the health check saw of one queue pair's completion queue last
/// time: whether a completion waited, and how many polls had run then.
#[derive(Clone, Copy, Default)]
pub(crate) struct IrqWatch {
    waiting_at_polls: Option<u64>,
}

impl IrqWatch {
    /// One health check: `waiting` says whether a completion is in the
    /// queue, `polls` how many NAPI polls ran so far. True when a
    /// completion waited through a whole check interval without a poll:
    /// its interrupt was lost.
    pub(crate) fn check(&mut self, waiting: bool, polls: u64) -> bool {
        let lost = waiting && self.waiting_at_polls == Some(polls);
        self.waiting_at_polls = if waiting && !lost { Some(polls) } else { None };
        lost
    }
}

/// The health check's state of one queue pair.
#[derive(Default)]
pub(crate) struct QueueHealth {
    /// Lost-interrupt watch.
    pub(crate) irq: IrqWatch,
    /// Reset pacing.
    pub(crate) backoff: ResetBackoff,
}

impl Default for ResetBackoff {
    fn default() -> Self {
        Self::new()
    }
}

/// What the health check learnt about the card as a whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CardChange {
    /// As before.
    Same,
    /// It stopped answering (surprise removal, or wedged).
    Gone,
    /// It answers again after being gone (it lost all its state).
    Back,
}

/// Whether the card answers register reads, as the health check sees it:
/// gone once every check for [`CARD_GONE_MS`] read all ones (one may be
/// a glitch, such as a read during a reset), back at the first good
/// read. Time, not a count of checks: other events (a VF to sync, a
/// queue to reset) run the check too, so two checks may be a moment
/// apart.
#[derive(Clone, Copy, Default)]
pub(crate) struct CardWatch {
    /// When the first check of the current run of misses read all ones.
    first_miss: Option<Instant<Monotonic>>,
    gone: bool,
}

impl CardWatch {
    /// One health check at `now`; `answering`: a status register read
    /// something other than all ones.
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

impl DeviceWork for Nic {
    type Lock = Rtnl;

    /// Syncs the VF if asked; checks the card and each running queue
    /// pair for a lost interrupt; hands the pairs marked for a reset (a
    /// TX timeout, completions out of step with the ring) to the health
    /// report work, which reports and recovers them. While the device is
    /// up it runs again after [`HEALTH_CHECK_MS`].
    fn run(dev: &NetDev<Self>, rtnl: &Rtnl) {
        let nic = dev.data();
        if nic.bond.take_sync_request() {
            bond::sync(dev, rtnl);
        }
        if !nic.check_card(dev, rtnl) {
            return;
        }
        let cfg = nic.config.lock();
        for (q, queue) in (0u16..).zip(nic.queues.iter()) {
            if !cfg.running || q >= cfg.queues {
                let _ = queue.take_reset_request();
                continue;
            }
            if queue.check_interrupts() {
                queue.request_reset(ResetCause::LOST_IRQ);
            }
            if queue.reset_pending() {
                nic.health_work.schedule();
            }
        }
        // A command the card failed (it changed nothing): reported once.
        let failed = nic.admin.errors.load(Relaxed);
        if nic.admin_errors_reported.xchg(failed, Relaxed) != failed {
            nic.card_fault(CardFault::AdminError);
        }
        if cfg.running {
            if let Some(flow) = &nic.flow {
                flow.age();
            }
            nic.reset_work.schedule_after(HEALTH_CHECK_MS);
        }
    }
}

impl DeviceWork<GFT_WORK> for Nic {
    /// Exceptions need no RTNL (admin commands and the exception queue
    /// have their own locks), and must not wait behind configuration.
    type Lock = NoLock;

    /// Decides the queued GFT exceptions and sends each back to the card
    /// through queue pair 0, up to a budget per run.
    fn run(dev: &NetDev<Self>, _: &NoLock) {
        let nic = dev.data();
        let Some(flow) = &nic.flow else {
            return;
        };
        let reinject = &mut |skb| nic.queues.first().is_some_and(|q| q.reinject(skb));
        if flow.decide_exceptions(GFT_WORK_BUDGET, reinject) {
            nic.gft_work.schedule();
        }
    }
}

impl DeviceWork<EVENTS_WORK> for Nic {
    /// The function may rebind its RDMA half, which unregisters and
    /// registers an `ib_device`: that waits for its users and takes RTNL
    /// itself.
    type Lock = NoLock;

    /// Tells the function its card was reset.
    fn run(dev: &NetDev<Self>, _: &NoLock) {
        dev.data().events.card_was_reset(dev.name());
    }
}

impl Nic {
    /// Whether queue pair `q` is in use (the device is up and has it).
    pub(super) fn pair_in_use(&self, q: u16) -> bool {
        let cfg = self.config.lock();
        cfg.running && q < cfg.queues
    }

    /// Resets queue pair `q`: the card's pair is destroyed and created
    /// again with fresh rings; frames still in the old rings are freed
    /// unsent. A pair not in use is left alone. If the card loses track
    /// of an admin command meanwhile, the whole function is reset and
    /// restored instead.
    pub(super) fn reset_pair(&self, dev: &NetDev<Self>, rtnl: &Rtnl, q: u16) -> Result {
        let cfg = self.config.lock();
        let Some(queue) = self.queues.get(usize::from(q)) else {
            return Err(EINVAL);
        };
        if !cfg.running || q >= cfg.queues {
            queue.set_awaiting_recovery(false);
            return Ok(());
        }
        // A request made before this reset is answered by it.
        let _ = queue.take_reset_request();
        queue.reset_done(Instant::<Monotonic>::now());
        dev.tx_stop(q);
        self.destroy_pair(q);
        let mut result = Ok(());
        if !self.admin.lost_track() {
            queue.stop(rtnl);
            result = queue
                .prepare(
                    rtnl,
                    &self.dma,
                    self.geometry(&cfg, dev.mtu()),
                    self.tx_csum(),
                    self.xsk_pool(usize::from(q)),
                )
                .and_then(|cmds| self.create_pair(cmds))
                .and_then(|()| queue.start(rtnl));
            match &result {
                Ok(()) => pr_info!("{}: queue pair {} reset\n", dev.name(), q),
                Err(_) if self.admin.lost_track() => {}
                Err(e) => {
                    queue.stop(rtnl);
                    pr_err!(
                        "{}: queue pair {} did not come back: {:?}\n",
                        dev.name(),
                        q,
                        e
                    );
                }
            }
        }
        if self.admin.lost_track() {
            // The card may still run the pair: reset the function, which
            // stops every pair, and start them all again.
            drop(cfg);
            self.reset_and_restore(dev, rtnl);
            return Ok(());
        }
        if result.is_ok() {
            queue.set_awaiting_recovery(false);
        }
        dev.tx_wake(q);
        result
    }

    /// The health check of the card as a whole. A card that stopped
    /// answering (surprise removal) has the device detached and the
    /// carrier off, so nothing more is sent to it; one that answers again
    /// lost all its state: the function is reset and restored, queues and
    /// all. Returns whether the card answers (the queue checks are then
    /// worth running).
    fn check_card(&self, dev: &NetDev<Self>, rtnl: &Rtnl) -> bool {
        let answering = self.regs.status().is_some();
        let change = self
            .card_watch
            .lock()
            .check(answering, Instant::<Monotonic>::now());
        match change {
            CardChange::Same => {}
            CardChange::Gone => {
                bump(&self.card_lost, 1);
                pr_warn!(
                    "{}: card not answering (surprise removal?); detached\n",
                    dev.name()
                );
                dev.carrier_off();
                dev.detach(rtnl);
                self.card_fault(CardFault::Gone);
            }
            CardChange::Back => {
                // The card reporter's recovery resets and restores it.
                pr_info!("{}: card answers again\n", dev.name());
                self.card_fault(CardFault::Back);
            }
        }
        if !answering {
            // Keep watching until it answers (or is removed).
            self.reset_work.schedule_after(HEALTH_CHECK_MS);
        }
        answering
    }

    /// The card's state is unknown (an admin command went unanswered in
    /// the reset work, or the card answers again after being gone): reset
    /// the function, restore it, and bring every queue pair back as
    /// configured; carrier from the card's link again.
    pub(super) fn reset_and_restore(&self, dev: &NetDev<Self>, rtnl: &Rtnl) {
        pr_info!("{}: resetting the function\n", dev.name());
        // A fault of its own only if a command was lost (not when the
        // card came back).
        let lost = self.admin.lost_track();
        self.admin.lose_track();
        self.quiesce_card_for(dev, rtnl, lost);
        let mut cfg = self.config.lock();
        let same = *cfg;
        match self.reconfigure(dev, rtnl, &mut cfg, same, dev.mtu()) {
            Ok(()) => self.pairs_rebuilt(),
            Err(e) => pr_err!(
                "{}: queues did not come back after a function reset: {:?}\n",
                dev.name(),
                e
            ),
        }
        if let Some(flow) = &self.flow {
            flow.restore();
        }
        dev.attach(rtnl);
        self.admin_irq.handler().set_running(cfg.running);
        if cfg.running {
            self.reset_work.schedule_after(HEALTH_CHECK_MS);
        }
    }
}
