// SPDX-License-Identifier: GPL-2.0

//! The GFT on the driver side: the exception path (packets the card sends
//! to the host because no flow matched, queued from NAPI and decided in a
//! work item, [`DECIDE_BATCH`] at a time), and the operations behind the debugfs interface of policy
//! and flows (`crate::debugfs` publishes them).
//!
//! Documentation/rsnic/gft.rst is the ABI of the debugfs files.

mod card;
mod flower;
mod rule;
mod vfp;

use core::fmt;

use kernel::{
    new_mutex,
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc, Mutex,
    },
    time::{Instant, Monotonic},
};

use crate::admin::AdminQueue;
use crate::hw::gft::{ExceptionMeta, META_LEN};
use crate::linux::{
    dma::DmaDevice,
    net::{
        flower::FlowerCmd,
        skbuff::{SkBuff, SkbQueue},
    },
};
use card::GftCard;
pub(crate) use flower::Ports;
pub(crate) use vfp::WriteError;
use vfp::{Decisions, QueueCounts, Vfp};

/// Exceptions waiting for the work item, at most; more are dropped.
const BACKLOG_MAX: u32 = 1024;

/// Exceptions decided together: under one policy lock, their flows sent
/// to the card in one admin command (a pair each at most, within
/// [`crate::hw::gft::MAX_INSTALL_BATCH`]), sent back with one doorbell.
pub(crate) const DECIDE_BATCH: usize = 32;

/// The GFT state of a PF.
#[pin_data]
pub(crate) struct Gft {
    #[pin]
    vfp: Mutex<Vfp>,
    /// Exception packets from NAPI, for the work item.
    #[pin]
    backlog: SkbQueue,
    backlog_drops: Atomic<u64>,
    bad_exceptions: Atomic<u64>,
    reinjected: Atomic<u64>,
    reinject_drops: Atomic<u64>,
    /// Where the exception path's time goes, in nanoseconds: deciding
    /// (under the policy lock), installing (the batch admin commands),
    /// sending back.
    decide_ns: Atomic<u64>,
    install_ns: Atomic<u64>,
    reinject_ns: Atomic<u64>,
}

impl Gft {
    /// The GFT of the PF whose admin queue is `admin`; off until a rule
    /// is added.
    pub(crate) fn new(admin: Arc<AdminQueue>, dma: &DmaDevice) -> Result<Arc<Self>> {
        let card = GftCard::new(admin, dma)?;
        Arc::pin_init(
            try_pin_init!(Self {
                vfp <- new_mutex!(Vfp::new(card)),
                backlog <- SkbQueue::new(),
                backlog_drops: Atomic::new(0),
                bad_exceptions: Atomic::new(0),
                reinjected: Atomic::new(0),
                reinject_drops: Atomic::new(0),
                decide_ns: Atomic::new(0),
                install_ns: Atomic::new(0),
                reinject_ns: Atomic::new(0),
            }? Error),
            GFP_KERNEL,
        )
    }

    /// NAPI received an exception. Returns whether the work item should
    /// run (it was queued).
    pub(crate) fn queue_exception(&self, skb: SkBuff) -> bool {
        if skb.headlen() < (META_LEN + 14) as u32 {
            self.bad_exceptions.fetch_add(1, Relaxed);
            return false;
        }
        if self.backlog.len() >= BACKLOG_MAX {
            self.backlog_drops.fetch_add(1, Relaxed);
            return false;
        }
        self.backlog.enqueue(skb);
        true
    }

    /// Decides up to `budget` queued exceptions, [`DECIDE_BATCH`] at a
    /// time (while any are queued: those that arrive during a batch make
    /// the next), and hands each packet to send back to `reinject` (with
    /// whether more of its batch follow, so the doorbell waits for the
    /// last). Returns whether exceptions are left.
    pub(crate) fn decide_exceptions(
        &self,
        budget: u32,
        reinject: &mut dyn FnMut(SkBuff, bool) -> bool,
    ) -> bool {
        let mut left = budget as usize;
        // The whole run under the policy lock: a batch's install is in
        // flight while the next batch is decided, and the mirror has
        // taken every answer when the lock is let go.
        let mut vfp = self.vfp.lock();
        let mut decisions = vfp.decisions();
        let mut more = true;
        while left > 0 {
            let want = left.min(DECIDE_BATCH);
            let mut batch: [Option<SkBuff>; DECIDE_BATCH] = Default::default();
            let mut taken = 0;
            while taken < want {
                let Some(skb) = self.backlog.dequeue() else {
                    break;
                };
                batch[taken] = Some(skb);
                taken += 1;
            }
            let batch = &mut batch[..taken];
            let start = Instant::<Monotonic>::now();
            for slot in batch.iter_mut() {
                *slot = slot.take().and_then(|skb| self.decide(&mut decisions, skb));
            }
            let decided = Instant::<Monotonic>::now();
            // The batch's flows go to the card (the last command stays in
            // flight); its packets need not wait for them: each carries
            // its action.
            decisions.send();
            let installed = Instant::<Monotonic>::now();
            let last = batch.iter().rposition(Option::is_some);
            for (i, slot) in batch.iter_mut().enumerate() {
                if let Some(skb) = slot.take() {
                    let counter = if reinject(skb, Some(i) != last) {
                        &self.reinjected
                    } else {
                        &self.reinject_drops
                    };
                    counter.fetch_add(1, Relaxed);
                }
            }
            let done = Instant::<Monotonic>::now();
            add_ns(&self.decide_ns, decided - start);
            add_ns(&self.install_ns, installed - decided);
            add_ns(&self.reinject_ns, done - installed);
            // A short batch ends the run only if nothing came meanwhile:
            // under a flood the run goes on (up to its budget), each
            // batch's install in flight while the next is decided.
            if taken == 0 || (taken < want && self.backlog.len() == 0) {
                more = false;
                break;
            }
            left -= taken;
        }
        // The last install's answer.
        let start = Instant::<Monotonic>::now();
        drop(decisions);
        add_ns(&self.install_ns, Instant::<Monotonic>::now() - start);
        drop(vfp);
        more && self.backlog.len() > 0
    }

    /// Decides an exception: the skb rewritten for reinjection (its
    /// exception header replaced by the reinjection header), or `None` if
    /// it is done with (dropped or only tracked).
    fn decide(&self, decisions: &mut Decisions<'_>, mut skb: SkBuff) -> Option<SkBuff> {
        let Some(meta) = ExceptionMeta::from_bytes(skb.head()) else {
            self.bad_exceptions.fetch_add(1, Relaxed);
            return None;
        };
        let verdict = decisions.decide(&meta)?;
        skb.head_mut()[..META_LEN].copy_from_slice(&verdict.to_bytes());
        Some(skb)
    }

    /// `hw-tc-offload` changed.
    pub(crate) fn set_cache(&self, on: bool) -> Result {
        Ok(self.vfp.lock().set_cache(on)?)
    }

    /// A tc flower request of an ingress block of the card's switch
    /// (the synthetic NIC's, a representor's: `ports`).
    pub(crate) fn flower(&self, cmd: FlowerCmd<'_>, ports: &Ports<'_>) -> Result {
        let mut vfp = self.vfp.lock();
        match cmd {
            FlowerCmd::Replace(rule) => vfp.flower_replace(&rule, ports),
            FlowerCmd::Destroy(cookie) => vfp.flower_destroy(cookie),
            FlowerCmd::Stats(mut stats) => vfp.flower_stats(&mut stats),
        }
    }

    /// Whether any policy rule or tc flower rule is in place.
    pub(crate) fn has_rules(&self) -> bool {
        self.vfp.lock().enabled()
    }

    /// The card was reset: configure its GFT again.
    pub(crate) fn restore(&self) {
        if let Err(e) = self.vfp.lock().restore() {
            pr_warn!("GFT not restored after reset: {:?}\n", e);
        }
    }

    /// Periodic aging of idle flows (from the health check).
    pub(crate) fn age(&self) {
        let _ = self.vfp.lock().age();
    }

    /// The counters, `gft_`-prefixed for `ethtool -S` (`fetch`: ask the
    /// card for its own first).
    pub(crate) fn for_each_counter(&self, fetch: bool, mut each: impl FnMut(&str, u64)) {
        let mut vfp = self.vfp.lock();
        if fetch {
            let _ = vfp.query_card_stats();
        }
        let queue = QueueCounts {
            bad_exceptions: self.bad_exceptions.load(Relaxed),
            backlog_drops: self.backlog_drops.load(Relaxed),
            reinjected: self.reinjected.load(Relaxed),
            reinject_drops: self.reinject_drops.load(Relaxed),
            decide_us: self.decide_ns.load(Relaxed) / 1000,
            install_us: self.install_ns.load(Relaxed) / 1000,
            reinject_us: self.reinject_ns.load(Relaxed) / 1000,
        };
        for (name, value) in vfp.counters(&queue) {
            each(name, value);
        }
    }
}

/// Adds a span's length to a time counter (a negative span, which a
/// monotonic clock never gives, adds nothing).
fn add_ns(counter: &Atomic<u64>, span: kernel::time::Delta) {
    // CAST: checked non-negative.
    counter.fetch_add(span.as_nanos().max(0) as u64, Relaxed);
}

impl Gft {
    /// `rules`: the policy, one rule a line.
    pub(crate) fn show_rules(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.vfp.lock().show_rules(f)
    }

    /// `rules`: add, del, flush.
    pub(crate) fn write_rules(&self, text: &str) -> Result<(), WriteError> {
        self.vfp.lock().write_rules(text)
    }

    /// `flows`: the flows, with the card's current counters.
    pub(crate) fn show_flows(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut vfp = self.vfp.lock();
        // A card that does not answer shows the last counters read.
        let _ = vfp.refresh();
        vfp.show_flows(f)
    }

    /// `flows`: del, flush.
    pub(crate) fn write_flows(&self, text: &str) -> Result<(), WriteError> {
        self.vfp.lock().write_flows(text)
    }

    /// `max_flows`.
    pub(crate) fn max_flows(&self) -> u32 {
        self.vfp.lock().max_flows()
    }

    /// `max_flows`: 1..=`MAX_FLOWS_LIMIT`; lowering it evicts the oldest
    /// flows.
    pub(crate) fn set_max_flows(&self, text: &str) -> Result<(), WriteError> {
        self.vfp.lock().set_max_flows(parse_u32(text)?)
    }

    /// `fail_installs`: installs still to fail.
    pub(crate) fn fail_installs(&self) -> u32 {
        self.vfp.lock().fail_installs()
    }

    /// `fail_installs`: make the next N installs fail (fault injection).
    pub(crate) fn set_fail_installs(&self, text: &str) -> Result<(), WriteError> {
        self.vfp.lock().set_fail_installs(parse_u32(text)?)
    }

    /// `exception_rate` and `exception_burst`.
    pub(crate) fn exception_rate(&self) -> (u32, u32) {
        self.vfp.lock().exception_rate()
    }

    /// `exception_rate`: exceptions a second per remote address (0: no
    /// limit).
    pub(crate) fn set_exception_rate(&self, text: &str) -> Result<(), WriteError> {
        self.vfp
            .lock()
            .set_exception_rate(Some(parse_u32(text)?), None)
    }

    /// `exception_burst`: exceptions at once per remote address.
    pub(crate) fn set_exception_burst(&self, text: &str) -> Result<(), WriteError> {
        self.vfp
            .lock()
            .set_exception_rate(None, Some(parse_u32(text)?))
    }

    /// `idle_timeout_ms`.
    pub(crate) fn idle_timeout_ms(&self) -> u32 {
        self.vfp.lock().idle_timeout_ms()
    }

    /// `idle_timeout_ms`: how long a flow may be idle before it is removed.
    pub(crate) fn set_idle_timeout_ms(&self, text: &str) -> Result<(), WriteError> {
        self.vfp.lock().set_idle_timeout_ms(parse_u32(text)?)
    }
}

fn parse_u32(text: &str) -> Result<u32, WriteError> {
    text.parse()
        .map_err(|_| WriteError::Invalid("expected a number"))
}
