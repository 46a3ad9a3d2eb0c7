// SPDX-License-Identifier: GPL-2.0

//! The VFP's flow lifecycle: deciding an exception (evaluate the rules,
//! install the flow and its reverse, track TCP state), and keeping the
//! driver's table in step with the card's (counters, aging).

use kernel::{
    prelude::*,
    time::{Instant, Monotonic},
};

use super::flow_map::Entry;
use super::*;
use crate::admin::MAX_POSTED;
use crate::gft::card::PostedInstall;
use crate::hw::{gft::MAX_INSTALL_BATCH, AdminStatus};
use crate::linux::alloc::push_or_return;

/// A flow decided and not yet sent to the card.
pub(super) struct Staged {
    rec: FlowRecord,
    rule: u32,
    peer: Option<FlowKey>,
    reverse: bool,
}

/// Keys a decision may have to look for among a batch's flows: a filter
/// with false positives and no false negatives, so that most decisions
/// scan no list (a scan compared 64 keys twice per exception).
#[derive(Clone, Copy, Default)]
pub(super) struct KeyFilter([u64; 8]);

impl KeyFilter {
    fn bit(key: &FlowKey) -> usize {
        let word = |a: &[u8; 16]| {
            let (lo, hi) = a.split_at(8);
            u64::from_le_bytes(lo.try_into().unwrap_or_default())
                ^ u64::from_le_bytes(hi.try_into().unwrap_or_default())
        };
        let h = (word(&key.src) ^ word(&key.dst).rotate_left(29))
            .wrapping_add(u64::from(key.sport) << 16 | u64::from(key.dport))
            .wrapping_mul(0x9e37_79b9_7f4a_7c15);
        // CAST: the top 9 bits: one of 512.
        (h >> 55) as usize
    }

    /// Adds `key`.
    fn insert(&mut self, key: &FlowKey) {
        let b = Self::bit(key);
        self.0[b / 64] |= 1 << (b % 64);
    }

    /// Whether `key` may have been added.
    fn may_hold(&self, key: &FlowKey) -> bool {
        let b = Self::bit(key);
        self.0[b / 64] & (1 << (b % 64)) != 0
    }
}

/// Flows sent to the card with a posted install, whose answer the mirror
/// has not taken yet.
struct InFlight {
    install: PostedInstall,
    staged: KVec<Staged>,
    keys: KeyFilter,
    sent: Instant<Monotonic>,
}

/// Exceptions being decided together, under the policy lock: the flows
/// they install go to the card in batches, the last when this is
/// dropped, so no decision outlives the lock unsent. Between batches
/// ([`Decisions::send`]) up to [`MAX_POSTED`] installs may be in flight
/// while the next batches are decided; the mirror takes their answers,
/// oldest first, before any decision that reads their flows, when a
/// further install would exceed that, and at the end.
pub(crate) struct Decisions<'a> {
    vfp: &'a mut Vfp,
    /// Installs posted and not taken into the mirror, oldest first.
    in_flight: KVec<InFlight>,
    /// Lists of settled installs' flows, emptied, for the next batches
    /// (no allocation per batch).
    spare: KVec<KVec<Staged>>,
}

impl Decisions<'_> {
    /// Decides one exception (see [`Vfp::decisions`]).
    pub(crate) fn decide(&mut self, meta: &ExceptionMeta) -> Option<ReinjectMeta> {
        let key = meta.key;
        let rev = key.reverse();
        let ends_connection = meta.reason == ExceptionReason::TcpControl
            && meta.tcp_flags & (tcp_flags::FIN | tcp_flags::RST) != 0;
        // The newest install that may hold the key: it and every one
        // before it go into the mirror first.
        let newest = if ends_connection {
            self.in_flight.len()
        } else {
            self.in_flight
                .iter()
                .rposition(|f| {
                    (f.keys.may_hold(&key) || f.keys.may_hold(&rev))
                        && f.staged
                            .iter()
                            .any(|s| s.rec.key == key || s.rec.key == rev)
                })
                .map_or(0, |i| i + 1)
        };
        self.settle(newest);
        self.vfp.decide(meta)
    }

    /// Sends what is staged, the command posted: it stays in flight while
    /// the caller goes on (with [`MAX_POSTED`] in flight, the oldest is
    /// settled first).
    pub(crate) fn send(&mut self) {
        if self.in_flight.len() >= MAX_POSTED {
            self.settle(1);
        }
        let vfp = &mut *self.vfp;
        let at = vfp.staged.len().saturating_sub(MAX_INSTALL_BATCH as usize);
        if at > 0 {
            // (Not reached while install_pair commits at a full batch.)
            vfp.commit();
            return;
        }
        if vfp.staged.is_empty() {
            return;
        }
        let spare = self.spare.pop().unwrap_or_default();
        let staged = core::mem::replace(&mut vfp.staged, spare);
        let keys = core::mem::take(&mut vfp.staged_keys);
        vfp.stats.install_commands += 1;
        let sent = Instant::<Monotonic>::now();
        match vfp.card.post_install_batch(staged.iter().map(|s| &s.rec)) {
            Ok(install) => {
                let f = InFlight {
                    install,
                    staged,
                    keys,
                    sent,
                };
                if let Err(f) = push_or_return(&mut self.in_flight, f) {
                    // No memory to keep it in flight: take its answer now.
                    self.take_answer(f);
                    return;
                }
                let stats = &mut self.vfp.stats;
                // CAST: at most MAX_POSTED.
                stats.install_in_flight_max =
                    stats.install_in_flight_max.max(self.in_flight.len() as u64);
            }
            Err(e) => vfp.send_installs(&staged, Some(Err(e))),
        }
    }

    /// The `n` oldest installs' answers into the mirror (waiting for
    /// them).
    fn settle(&mut self, n: usize) {
        for _ in 0..n.min(self.in_flight.len()) {
            match self.in_flight.remove(0) {
                Ok(f) => self.take_answer(f),
                Err(_) => return,
            }
        }
    }

    /// A posted install's answer into the mirror (waiting for it).
    fn take_answer(&mut self, f: InFlight) {
        let vfp = &mut *self.vfp;
        let waited = Instant::<Monotonic>::now();
        let answer = vfp.card.collect_install(f.install);
        // CAST: a monotonic span is not negative.
        vfp.stats.install_wait_ns += waited.elapsed().as_nanos().max(0) as u64;
        vfp.stats.install_latency_ns += f.sent.elapsed().as_nanos().max(0) as u64;
        vfp.send_installs(&f.staged, Some(answer));
        let mut staged = f.staged;
        staged.clear();
        // Without memory for the list, it is freed.
        let _ = self.spare.push(staged, GFP_KERNEL);
    }
}

impl Drop for Decisions<'_> {
    fn drop(&mut self) {
        self.settle(self.in_flight.len());
        self.vfp.commit();
    }
}

impl Vfp {
    /// Starts deciding exceptions: what to do with each packet, and the
    /// flows to install for it.
    pub(crate) fn decisions(&mut self) -> Decisions<'_> {
        Decisions {
            vfp: self,
            in_flight: KVec::new(),
            spare: KVec::new(),
        }
    }

    /// The first matching rule's id and action (lowest priority, then
    /// lowest id); without one, the default: allow.
    fn evaluate(&mut self, key: &FlowKey) -> (u32, Action) {
        match self.rules.iter_mut().find(|r| r.rule.m.matches(key)) {
            Some(r) => {
                r.hits += 1;
                (r.rule.id, r.rule.action)
            }
            None => (0, Action::default()),
        }
    }

    /// Stages one flow for the card; [`Self::commit`] sends it, and the
    /// mirror follows what the card accepted. Fails (nothing staged) when
    /// fault injection says so or there is no memory.
    fn install(
        &mut self,
        key: FlowKey,
        rule: u32,
        action: Action,
        peer: Option<FlowKey>,
        reverse: bool,
    ) -> Result<(), AdminError> {
        if self.fail_installs > 0 {
            self.fail_installs -= 1;
            self.stats.install_failures += 1;
            return Err(AdminError::Refused(crate::hw::AdminStatus::DeviceError));
        }
        let staged = Staged {
            rec: FlowRecord {
                key,
                generation: self.generation,
                action,
            },
            rule,
            peer,
            reverse,
        };
        if self.staged.push(staged, GFP_KERNEL).is_err() {
            self.stats.install_failures += 1;
            return Err(AdminError::Io(ENOMEM));
        }
        self.staged_keys.insert(&key);
        Ok(())
    }

    /// The card installed `s` (its answer came at `now`): the mirror
    /// takes it.
    fn installed(&mut self, s: &Staged, now: Instant<Monotonic>) {
        let key = s.rec.key;
        self.stats.installs += 1;
        self.seq += 1;
        // One probe, found or not.
        let vacant = match self.flows.entry(key) {
            Entry::Occupied(f) => {
                f.rule = s.rule;
                f.action = s.rec.action;
                f.generation = s.rec.generation;
                f.peer = s.peer;
                f.reverse = s.reverse;
                return;
            }
            Entry::Vacant(v) => v,
        };
        let state = FlowState {
            rule: s.rule,
            action: s.rec.action,
            generation: s.rec.generation,
            peer: s.peer,
            reverse: s.reverse,
            fin: false,
            seq: self.seq,
            installed: now,
            packets: 0,
            bytes: 0,
            idle_ms: 0,
            meter_drops: 0,
        };
        if vacant.insert(state).is_err() {
            // No memory to remember it: do not leave it in the card.
            let _ = self.card.delete(&key);
            self.stats.install_failures += 1;
        }
    }

    /// Sends the staged flows to the card, [`MAX_INSTALL_BATCH`] a
    /// command, and waits for each.
    fn commit(&mut self) {
        let staged = core::mem::take(&mut self.staged);
        self.send_installs(&staged, None);
        // Keep the allocation for the next batch.
        self.staged = staged;
        self.staged.clear();
        self.staged_keys = KeyFilter::default();
    }

    /// Sends `staged` to the card, [`MAX_INSTALL_BATCH`] a command, the
    /// first command's answer given if it was posted already, and the
    /// mirror takes what the card installed. The card stops at the first
    /// it cannot install; the rest go in the next command. A pair is all
    /// or nothing: a failed forward flow takes its reverse with it (it is
    /// not sent), a failed reverse takes its forward back out of the card.
    fn send_installs(
        &mut self,
        staged: &[Staged],
        mut posted: Option<Result<(usize, Option<AdminStatus>), AdminError>>,
    ) {
        let mut at = 0;
        while at < staged.len() {
            let batch = &staged[at..staged.len().min(at + MAX_INSTALL_BATCH as usize)];
            let answer = match posted.take() {
                Some(answer) => answer,
                None => {
                    self.stats.install_commands += 1;
                    let sent = Instant::<Monotonic>::now();
                    let answer = self.card.install_batch(batch.iter().map(|s| &s.rec));
                    // CAST: a monotonic span is not negative.
                    let span = sent.elapsed().as_nanos().max(0) as u64;
                    self.stats.install_wait_ns += span;
                    self.stats.install_latency_ns += span;
                    answer
                }
            };
            let (installed, failed) = match answer {
                Ok(r) => r,
                Err(_) => {
                    // The card's state is unknown: the mirror keeps none
                    // of them, and a dump removes what the card kept.
                    self.stats.install_failures += batch.len() as u64;
                    at += batch.len();
                    continue;
                }
            };
            let now = Instant::<Monotonic>::now();
            for s in &batch[..installed] {
                self.installed(s, now);
            }
            at += installed;
            if failed.is_none() {
                continue;
            }
            self.stats.install_failures += 1;
            let s = &staged[at];
            at += 1;
            if s.reverse {
                if let Some(fwd) = s.peer {
                    let _ = self.card.delete(&fwd);
                    self.flows.remove(&fwd);
                }
            } else if staged
                .get(at)
                .is_some_and(|n| n.reverse && n.peer == Some(s.rec.key))
            {
                at += 1;
            }
        }
    }

    /// Sends what is staged first if `key` (either way) is among it: the
    /// decision about to be made reads the mirror.
    fn commit_if_staged(&mut self, key: &FlowKey) {
        let rev = key.reverse();
        if (self.staged_keys.may_hold(key) || self.staged_keys.may_hold(&rev))
            && self
                .staged
                .iter()
                .any(|s| s.rec.key == *key || s.rec.key == rev)
        {
            self.commit();
        }
    }

    /// Stages the flow for `key` and the reverse flow its action implies.
    fn install_pair(&mut self, key: FlowKey, rule: u32, action: Action) {
        let rev = reverse_flow(&key, &action);
        // A pair goes to the card in one command.
        if self.staged.len() + 2 > MAX_INSTALL_BATCH as usize {
            self.commit();
        }
        if self
            .install(key, rule, action, rev.map(|(k, _)| k), false)
            .is_ok()
        {
            if let Some((rk, ra)) = rev {
                if self.install(rk, rule, ra, Some(key), true).is_err() {
                    // Half a pair is worse than none: its packets would
                    // miss NAT or decap on the way back.
                    self.staged.pop();
                    if self.flows.remove(&key).is_some() {
                        let _ = self.card.delete(&key);
                    }
                }
            }
        }
    }

    /// Removes a flow and its peer (connection over); they are remembered
    /// as closed for a while.
    fn retire(&mut self, key: &FlowKey) {
        let peer = match self.flows.get(key) {
            Some(s) => s.peer.unwrap_or_else(|| key.reverse()),
            None => key.reverse(),
        };
        let now = Instant::<Monotonic>::now();
        for k in [*key, peer] {
            if let Some(s) = self.flows.remove(&k) {
                let _ = self.card.delete(&k);
                self.stats.tcp_retired += 1;
                let closed = Closed {
                    action: s.action,
                    since: now,
                };
                // Without memory the flow is simply forgotten.
                let _ = self.closed.try_create_and_insert(k, closed, GFP_KERNEL);
            }
        }
    }

    /// Connection tracking from a TCP packet's flags.
    fn track_tcp(&mut self, key: &FlowKey, flags: u8) {
        if key.proto != proto::TCP || flags & tcp_flags::CONTROL == 0 {
            return;
        }
        self.stats.tcp_control += 1;
        if flags & (tcp_flags::RST | tcp_flags::FIN) != 0 {
            // Retiring reads the mirror: what is staged goes in first.
            self.commit();
        }
        if flags & tcp_flags::RST != 0 {
            self.retire(key);
            return;
        }
        if flags & tcp_flags::FIN != 0 {
            let Some(s) = self.flows.get_mut(key) else {
                return;
            };
            s.fin = true;
            let peer = s.peer.unwrap_or_else(|| key.reverse());
            if self.flows.get(&peer).is_some_and(|p| p.fin) {
                self.retire(key);
            }
        }
    }

    /// Decides an exception packet: what to do with it (`None`: drop it,
    /// e.g. a TCP control copy, whose original the card forwarded).
    /// Installs are staged: [`Decisions`] commits them.
    fn decide(&mut self, meta: &ExceptionMeta) -> Option<ReinjectMeta> {
        self.stats.exceptions += 1;
        let key = meta.key;
        self.commit_if_staged(&key);
        if meta.reason == ExceptionReason::TcpControl {
            self.track_tcp(&key, meta.tcp_flags);
            return None;
        }
        let syn = key.proto == proto::TCP && meta.tcp_flags & tcp_flags::SYN != 0;
        if let Some(c) = self.closed.get(&key) {
            if !syn {
                return Some(ReinjectMeta {
                    dir: key.dir,
                    action: c.action,
                });
            }
            self.closed.remove(&key);
        }
        // A reverse flow is decided by the flow it is the reverse of.
        let origin = self
            .flows
            .get(&key)
            .filter(|s| s.reverse)
            .and_then(|s| s.peer);
        // What to do with this packet, and which flow (with its action)
        // to install for it.
        let (rule, act, fwd, fwd_act) = match origin {
            Some(fwd) => {
                let (rule, fwd_act) = self.evaluate(&fwd);
                match reverse_flow(&fwd, &fwd_act) {
                    Some((rk, ra)) if rk == key => (rule, ra, fwd, fwd_act),
                    _ => {
                        // Policy no longer makes this a reverse flow.
                        let _ = self.card.delete(&key);
                        self.flows.remove(&key);
                        let (rule, act) = self.evaluate(&key);
                        (rule, act, key, act)
                    }
                }
            }
            None => {
                let (rule, act) = self.evaluate(&key);
                (rule, act, key, act)
            }
        };
        if self.cache && meta.reason != ExceptionReason::NoCache {
            self.install_pair(fwd, rule, fwd_act);
        }
        self.track_tcp(&key, meta.tcp_flags);
        Some(ReinjectMeta {
            dir: key.dir,
            action: act,
        })
    }

    /// Reads the card's counters of every flow into the mirror. A flow the
    /// card holds but the driver does not know is removed from the card.
    pub(crate) fn refresh(&mut self) -> Result<(), AdminError> {
        let mut unknown = KVec::new();
        let flows = &mut self.flows;
        let garbled = self.card.dump(|c| match flows.get_mut(&c.key) {
            Some(s) => {
                s.packets = c.packets;
                s.bytes = c.bytes;
                s.idle_ms = c.idle_ms;
                s.meter_drops = c.meter_drops;
            }
            None => {
                let _ = unknown.push(c.key, GFP_KERNEL);
            }
        })?;
        self.stats.bad_dump_records += garbled;
        // CAST: a count of flows.
        self.stats.stray_flows += unknown.len() as u64;
        for k in unknown.iter() {
            let _ = self.card.delete(k);
        }
        self.card_stats = self.card.stats()?;
        Ok(())
    }

    /// Removes idle flows and forgets closed connections past their linger.
    /// Called from the periodic health check; it reads the whole table
    /// from the card, so it runs only every quarter of the idle timeout
    /// (1 to 10 s).
    pub(crate) fn age(&mut self) -> Result<(), AdminError> {
        if !self.enabled() {
            return Ok(());
        }
        let interval = i64::from(self.idle_timeout_ms / 4).clamp(1_000, 10_000);
        if self
            .last_aged
            .is_some_and(|t| t.elapsed().as_millis() + 100 < interval)
        {
            return Ok(());
        }
        self.last_aged = Some(Instant::<Monotonic>::now());
        self.refresh()?;
        let timeout = self.idle_timeout_ms;
        let mut idle = KVec::new();
        for (k, s) in self.flows.iter() {
            if s.idle_ms >= timeout {
                let _ = idle.push(*k, GFP_KERNEL);
            }
        }
        for k in idle.iter() {
            self.card.delete(k)?;
            self.flows.remove(k);
            self.stats.aged_out += 1;
        }
        let mut expired = KVec::new();
        for (k, c) in self.closed.iter() {
            if c.since.elapsed().as_millis() >= CLOSED_LINGER_MS {
                let _ = expired.push(*k, GFP_KERNEL);
            }
        }
        for k in expired.iter() {
            self.closed.remove(k);
        }
        Ok(())
    }
}
