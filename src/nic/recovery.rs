// SPDX-License-Identifier: GPL-2.0

//! Recovery: when to reset a queue pair and how to tell a lost interrupt
//! (the policy), and the device's work items that carry it out: the
//! periodic health check of its queue pairs, queue pair resets, the
//! restore after a function reset, and the GFT exception work. The card
//! as a whole is the function's to watch (`crate::function`).

use kernel::{
    prelude::*,
    time::{Delta, Instant, Monotonic},
};

use super::bond;
use super::{
    queue::{QueueVector, ResetCause},
    Nic,
};
use crate::linux::net::{
    instance_lock::RtnlLocked,
    netdev::NetDev,
    work::{DeviceWork, NoLock, RtnlAndInstance},
};

/// [`crate::linux::net::work::NetDevWork`] id of the GFT exception work.
pub(super) const GFT_WORK: u8 = 1;
/// GFT exceptions one run of the work decides before it yields.
const GFT_WORK_BUDGET: u32 = 256;

/// How often the device's health check runs while it is up, in ms.
pub(crate) const HEALTH_CHECK_MS: u32 = 1000;

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

impl DeviceWork for Nic {
    type Lock = RtnlAndInstance;

    /// Syncs the VF if asked; checks each running queue pair for a lost
    /// interrupt; hands the pairs marked for a reset (a TX timeout,
    /// completions out of step with the ring) to the health report work,
    /// which reports and recovers them. While the device is up, or the
    /// card does not answer (the queues are then not checked), it runs
    /// again after [`HEALTH_CHECK_MS`].
    fn run(dev: &NetDev<Self>, rtnl: &RtnlLocked<'_>) {
        let nic = dev.data();
        if nic.bond.take_sync_request() {
            bond::sync(dev, rtnl);
        }
        if nic.regs.status().is_none() {
            // The function watches the card; nothing to check meanwhile.
            nic.reset_work.schedule_after(HEALTH_CHECK_MS);
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
        if cfg.running {
            nic.reset_work.schedule_after(HEALTH_CHECK_MS);
        }
    }
}

impl DeviceWork<GFT_WORK> for Nic {
    /// Exceptions need no RTNL (admin commands and the exception queue
    /// have their own locks), and must not wait behind configuration.
    type Lock = NoLock;

    /// Exceptions arrive on queue pair 0, whose NAPI poll queues this
    /// work: on the poll's CPU the two would take turns.
    const ANY_CPU: bool = true;

    /// Decides the queued GFT exceptions and sends each back to the card,
    /// up to a budget per run, one doorbell a batch. A batch goes through
    /// the TX ring with the most room (the lowest pair on a tie): the
    /// stack may keep a ring full, and a reinjection finds no room there.
    /// The room is only a reading: a ring the stack fills meanwhile hands
    /// the rest of the batch to the ring with the most room then.
    fn run(dev: &NetDev<Self>, _: &NoLock) {
        let nic = dev.data();
        let Some(flow) = &nic.flow else {
            return;
        };
        let roomiest = || {
            let mut best: Option<(&QueueVector, u16)> = None;
            for q in nic.queues.iter() {
                let room = q.tx_room();
                if best.is_none_or(|(_, most)| room > most) {
                    best = Some((q, room));
                }
            }
            best.map(|(q, _)| q)
        };
        let mut batch_queue = None;
        let reinject = &mut |mut skb, more| {
            // At most two rings a frame: the batch's, then the roomiest.
            for _ in 0..2 {
                let Some(q) = *batch_queue.get_or_insert_with(roomiest) else {
                    return false;
                };
                match q.reinject(skb, more) {
                    Ok(()) => {
                        if !more {
                            batch_queue = None;
                        }
                        return true;
                    }
                    Err(back) => {
                        skb = back;
                        batch_queue = None;
                    }
                }
            }
            // Dropped: no ring had room.
            false
        };
        if flow.decide_exceptions(GFT_WORK_BUDGET, reinject) {
            nic.gft_work.schedule();
        }
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
    pub(super) fn reset_pair(&self, dev: &NetDev<Self>, rtnl: &RtnlLocked<'_>, q: u16) -> Result {
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
            queue.stop(rtnl.dev());
            result = queue
                .prepare(
                    rtnl.dev(),
                    &self.dma,
                    self.geometry(&cfg, dev.mtu()),
                    self.tx_csum(),
                    self.xsk_pool(usize::from(q)),
                )
                .and_then(|cmds| self.create_pair(cmds))
                .and_then(|()| queue.start(rtnl.dev()));
            match &result {
                Ok(()) => pr_info!("{}: queue pair {} reset\n", dev.name(), q),
                Err(_) if self.admin.lost_track() => {}
                Err(e) => {
                    queue.stop(rtnl.dev());
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

    /// The function found the card not answering (surprise removal, or
    /// wedged): the device is detached with its carrier off, so nothing
    /// more is sent to it, until the card is back.
    pub(crate) fn card_gone(&self, dev: &NetDev<Self>, rtnl: &RtnlLocked<'_>) {
        pr_warn!(
            "{}: card not answering (surprise removal?); detached\n",
            dev.name()
        );
        dev.carrier_off();
        dev.detach(rtnl);
    }

    /// The card's state is unknown (an admin command went unanswered in
    /// the reset work, or the card answers again after being gone): reset
    /// the function, restore it, and bring every queue pair back as
    /// configured; carrier from the card's link again.
    pub(crate) fn reset_and_restore(&self, dev: &NetDev<Self>, rtnl: &RtnlLocked<'_>) {
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
        dev.attach(rtnl);
        self.admin_irq.handler().set_running(cfg.running);
        if cfg.running {
            self.reset_work.schedule_after(HEALTH_CHECK_MS);
        }
    }
}
