// SPDX-License-Identifier: GPL-2.0

//! When to reset a queue pair and how to tell a lost interrupt: the
//! policy of recovery, kept apart from the mechanics in `queue.rs` and
//! `nic.rs`.

use kernel::time::{Delta, Instant, Monotonic};

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
/// gone once two checks in a row read all ones (one may be a glitch, such
/// as a read during a reset), back at the first good read.
#[derive(Clone, Copy, Default)]
pub(crate) struct CardWatch {
    misses: u32,
    gone: bool,
}

impl CardWatch {
    /// One health check; `answering`: a status register read something
    /// other than all ones.
    pub(crate) fn check(&mut self, answering: bool) -> CardChange {
        if answering {
            self.misses = 0;
            return if core::mem::take(&mut self.gone) {
                CardChange::Back
            } else {
                CardChange::Same
            };
        }
        self.misses = self.misses.saturating_add(1);
        if self.misses == 2 {
            self.gone = true;
            return CardChange::Gone;
        }
        CardChange::Same
    }
}
