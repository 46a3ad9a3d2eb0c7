// SPDX-License-Identifier: GPL-2.0

//! The VFP role: host-side policy over the card's GFT.
//!
//! Rules are evaluated on the first packet of a flow (an exception); the
//! result is installed in the card as an exact-match flow (and its
//! reverse, where the action has one: NAT, encap) and the packet is sent
//! back with its action. TCP SYN/FIN/RST copies keep per-flow connection
//! state, so a closed connection's flows are retired; idle flows age out.
//! A rule change bumps the generation: flows of older generations come
//! back as exceptions on their next packet and are evaluated again.
//!
//! The driver's table mirrors what the card accepted; the card is the one
//! that counts packets (read with a dump).

mod flow_map;
mod flows;

use flow_map::FlowMap;
pub(crate) use flows::Decisions;
use flows::{KeyFilter, Staged};

use core::fmt;

use kernel::{
    prelude::*,
    rbtree::{RBTree, RBTreeNode},
    time::{Instant, Monotonic},
};

use super::card::GftCard;
use super::flower::{self, Offloaded, Ports};
use super::rule::{
    parse_addr, parse_dir, parse_proto, ActionText, Addr, ParseError, Proto, Rule, MAX_RULE_ID,
};
use crate::admin::AdminError;
use crate::hw::gft::{
    action, config, proto, tcp_flags, Action, CardExceptionStats, CardGftStats, ExceptionMeta,
    ExceptionReason, FlowKey, FlowRecord, ReinjectMeta, DEFAULT_EXCEPTION_BURST,
    DEFAULT_EXCEPTION_RATE, DEFAULT_MAX_FLOWS, HOST_VPORT, MAX_EXCEPTION_BURST, MAX_FLOWS_LIMIT,
};
use crate::hw::AdminStatus;
use crate::linux::net::flower::{FlowerRule, FlowerStats};

/// Most rules.
pub(crate) const MAX_RULES: usize = 4096;
/// Idle time after which a flow is removed, unless set otherwise.
pub(crate) const DEFAULT_IDLE_TIMEOUT_MS: u32 = 30_000;
/// Range of the idle timeout a user may set.
pub(crate) const IDLE_TIMEOUT_RANGE_MS: core::ops::RangeInclusive<u32> = 100..=3_600_000;
/// How long a closed connection's flows are remembered: its last packets
/// (the final ACK, retransmitted FINs) are forwarded with the old action
/// instead of installing a flow again.
const CLOSED_LINGER_MS: i64 = 5_000;
/// Most installs fault injection may be asked to fail.
pub(crate) const MAX_FAIL_INSTALLS: u32 = 1_000_000;

/// A rule and its hit count.
struct RuleEntry {
    rule: Rule,
    hits: u64,
}

/// An installed flow, as the driver knows it.
#[derive(Clone, Copy)]
struct FlowState {
    /// The rule that decided it (0: none matched, the default allow).
    rule: u32,
    action: Action,
    generation: u32,
    /// The flow of the other direction installed with it (NAT, encap).
    peer: Option<FlowKey>,
    /// Whether this is the reverse flow of `peer` (installed because of it).
    reverse: bool,
    /// A FIN was seen this way.
    fin: bool,
    /// Install order (eviction takes the oldest).
    seq: u64,
    installed: Instant<Monotonic>,
    // What the card counted, as of the last dump.
    packets: u64,
    bytes: u64,
    idle_ms: u32,
    meter_drops: u64,
}

/// A flow of a connection that closed.
struct Closed {
    action: Action,
    since: Instant<Monotonic>,
}

/// The driver's GFT counters.
#[derive(Clone, Copy, Default)]
pub(crate) struct VfpStats {
    /// Exception packets handled.
    pub(crate) exceptions: u64,
    /// Flows installed (or updated).
    pub(crate) installs: u64,
    /// Installs the card refused (full table) or fault injection failed.
    pub(crate) install_failures: u64,
    /// `GFT_INSTALL_BATCH` commands sent (installs over this: the batch).
    pub(crate) install_commands: u64,
    /// Nanoseconds the driver spent waiting for those commands' answers
    /// (an install posted while the next batch is decided is waited for
    /// only for what is left of it).
    pub(crate) install_wait_ns: u64,
    /// Nanoseconds from each of those commands' sending to its answer
    /// taken (the card's share of installing, and any overlap).
    pub(crate) install_latency_ns: u64,
    /// The most of those commands in flight at once (posted, answer not
    /// taken) since the driver was loaded.
    pub(crate) install_in_flight_max: u64,
    /// Flows removed to make room (`max_flows` lowered).
    pub(crate) evictions: u64,
    /// TCP SYN/FIN/RST seen (copies and misses).
    pub(crate) tcp_control: u64,
    /// Flows retired because their connection closed.
    pub(crate) tcp_retired: u64,
    /// Flows removed for being idle.
    pub(crate) aged_out: u64,
    /// Dump records the card garbled.
    pub(crate) bad_dump_records: u64,
    /// Flows the card held that the driver did not know, found by a
    /// dump and removed from the card (an install whose answer was lost).
    pub(crate) stray_flows: u64,
}

/// tc flower rules the card holds at most (its masked rule table).
const MAX_FLOWER_RULES: usize = crate::hw::gft_rule::MAX_RULES as usize;

/// The policy engine and the driver's view of the card's table.
pub(crate) struct Vfp {
    card: GftCard,
    rules: KVec<RuleEntry>,
    /// tc flower rules the card holds, in its masked rule table, by
    /// tc's cookie (tc asks for each rule's counters every second or so,
    /// OVS for all of them: a lookup must not walk the table).
    flower: RBTree<u64, Offloaded>,
    /// The card rule ids of `flower`'s rules, in the order they were
    /// given (to the cookie).
    flower_ids: RBTree<u32, u64>,
    /// How many rules `flower` holds.
    flower_len: usize,
    /// The card rule id the next flower rule gets (ids are unique
    /// among those held).
    next_flower_id: u32,
    next_rule_id: u32,
    generation: u32,
    flows: FlowMap<FlowState>,
    /// Flows decided and not yet sent to the card; empty outside
    /// [`Decisions`].
    staged: KVec<Staged>,
    /// The keys of `staged`.
    staged_keys: KeyFilter,
    closed: RBTree<FlowKey, Closed>,
    max_flows: u32,
    /// Flows are cached in the card (`hw-tc-offload`).
    cache: bool,
    fail_installs: u32,
    idle_timeout_ms: u32,
    /// How the card polices exceptions: a second, and at once, per remote
    /// address.
    exception_rate: u32,
    exception_burst: u32,
    seq: u64,
    /// When flows were last aged.
    last_aged: Option<Instant<Monotonic>>,
    /// The card's counters as of the last query.
    card_stats: CardGftStats,
    /// The card's exception-path counters as of the last query.
    card_exceptions: CardExceptionStats,
    /// Counters.
    pub(crate) stats: VfpStats,
}

/// Why a debugfs write was refused.
pub(crate) enum WriteError {
    /// Malformed: `EINVAL`, with the reason logged.
    Invalid(ParseError),
    /// Well-formed but failed (no such entry, card error).
    Failed(Error),
}

impl From<ParseError> for WriteError {
    fn from(e: ParseError) -> Self {
        Self::Invalid(e)
    }
}

impl From<AdminError> for WriteError {
    fn from(e: AdminError) -> Self {
        Self::Failed(e.into())
    }
}

impl From<kernel::alloc::AllocError> for WriteError {
    fn from(_: kernel::alloc::AllocError) -> Self {
        Self::Failed(ENOMEM)
    }
}

impl From<Error> for WriteError {
    fn from(e: Error) -> Self {
        Self::Failed(e)
    }
}

/// The flow of the other direction an action implies, if any: NAT's
/// reverse translation, or decap for an encap (the reply comes back in
/// the tunnel).
fn reverse_flow(key: &FlowKey, a: &Action) -> Option<(FlowKey, Action)> {
    let encap = a.flags & (action::VXLAN_ENCAP | action::NVGRE_ENCAP) != 0;
    if a.flags & action::NAT == 0 && !encap {
        return None;
    }
    // The packet as it leaves, then seen coming back.
    let mut out = *key;
    let mut rev = Action::default();
    if a.flags & action::NAT_SRC_IP != 0 {
        out.src = a.nat_sip;
        rev.flags |= action::NAT_DST_IP;
        rev.nat_dip = key.src;
    }
    if a.flags & action::NAT_DST_IP != 0 {
        out.dst = a.nat_dip;
        rev.flags |= action::NAT_SRC_IP;
        rev.nat_sip = key.dst;
    }
    if a.flags & action::NAT_SRC_PORT != 0 {
        out.sport = a.nat_sport;
        rev.flags |= action::NAT_DST_PORT;
        rev.nat_dport = key.sport;
    }
    if a.flags & action::NAT_DST_PORT != 0 {
        out.dport = a.nat_dport;
        rev.flags |= action::NAT_SRC_PORT;
        rev.nat_sport = key.dport;
    }
    let mut back = out.reverse();
    if encap {
        back.tunnel = Some(a.encap.id);
        rev.flags |= action::DECAP;
    }
    Some((back, rev))
}

impl Vfp {
    /// No rules, GFT off, nothing installed.
    pub(crate) fn new(card: GftCard) -> Self {
        Self {
            card,
            rules: KVec::new(),
            flower: RBTree::new(),
            flower_ids: RBTree::new(),
            flower_len: 0,
            next_flower_id: 1,
            next_rule_id: 1,
            generation: 1,
            flows: FlowMap::new(),
            staged: KVec::new(),
            staged_keys: KeyFilter::default(),
            closed: RBTree::new(),
            max_flows: DEFAULT_MAX_FLOWS,
            cache: true,
            fail_installs: 0,
            idle_timeout_ms: DEFAULT_IDLE_TIMEOUT_MS,
            exception_rate: DEFAULT_EXCEPTION_RATE,
            exception_burst: DEFAULT_EXCEPTION_BURST,
            seq: 0,
            last_aged: None,
            card_stats: CardGftStats::default(),
            card_exceptions: CardExceptionStats::default(),
            stats: VfpStats::default(),
        }
    }

    /// Whether the GFT is in the path: there is a policy (some rule, of
    /// its own or tc's).
    pub(crate) fn enabled(&self) -> bool {
        !self.rules.is_empty() || !self.flower.is_empty()
    }

    fn config_flags(&self) -> u32 {
        let mut flags = 0;
        if self.enabled() {
            flags |= config::ENABLE;
        }
        if self.cache {
            flags |= config::CACHE;
        }
        flags
    }

    /// The card lost its state (function reset): configure it again. The
    /// flows it held are gone; they come back as exceptions.
    pub(crate) fn restore(&mut self) -> Result<(), AdminError> {
        self.flows.clear();
        self.card.set_generation(self.generation)?;
        self.card
            .set_exception_rate(self.exception_rate, self.exception_burst)?;
        self.card.configure(self.config_flags(), self.max_flows)?;
        // tc's rules were lost with the rest: given again, in the order
        // they came (the first of equal priorities wins), counting anew.
        for (_, cookie) in self.flower_ids.iter() {
            if let Some(r) = self.flower.get_mut(cookie) {
                self.card.add_rule(&r.rec)?;
                r.restart();
            }
        }
        Ok(())
    }

    /// Forgets every flow, in the card and here.
    fn flush_all(&mut self) -> Result<(), AdminError> {
        self.card.flush()?;
        self.flows.clear();
        self.closed = RBTree::new();
        Ok(())
    }

    /// The policy changed: a new generation, and the GFT switched on or off
    /// with the rule table's emptiness.
    fn policy_changed(&mut self, was_enabled: bool) -> Result<(), AdminError> {
        self.generation = self.generation.wrapping_add(1);
        self.card.set_generation(self.generation)?;
        if was_enabled != self.enabled() {
            if !self.enabled() {
                self.flush_all()?;
            }
            self.card.configure(self.config_flags(), self.max_flows)?;
        }
        Ok(())
    }

    /// The id a rule added without one gets: the first one from
    /// `next_rule_id` on that no rule has, from 1 again after
    /// [`MAX_RULE_ID`] (there are far fewer rules than ids), as
    /// `idr_alloc_cyclic` does.
    fn free_rule_id(&self) -> u32 {
        let mut id = self.next_rule_id;
        while self.rules.iter().any(|r| r.rule.id == id) {
            id = id % MAX_RULE_ID + 1;
        }
        id
    }

    /// Executes a write to `rules`: `add key=value...`, `del <id>`, `flush`.
    pub(crate) fn write_rules(&mut self, text: &str) -> Result<(), WriteError> {
        let mut words = text.split_whitespace();
        let was_enabled = self.enabled();
        match (words.next(), words.clone().next()) {
            (Some("add"), _) => {
                let free = self.free_rule_id();
                let rule = Rule::parse(words, free)?;
                if self.rules.iter().any(|r| r.rule.id == rule.id) {
                    return Err(WriteError::Invalid("id in use"));
                }
                if self.rules.len() >= MAX_RULES {
                    return Err(WriteError::Invalid("too many rules"));
                }
                // Kept in evaluation order: priority, then id.
                let order = |r: &Rule| (r.prio, r.id);
                let at = self
                    .rules
                    .partition_point(|r| order(&r.rule) < order(&rule));
                self.rules.reserve(1, GFP_KERNEL)?;
                if self
                    .rules
                    .insert_within_capacity(at, RuleEntry { rule, hits: 0 })
                    .is_err()
                {
                    return Err(WriteError::Failed(ENOMEM));
                }
                if let Err(e) = self.policy_changed(was_enabled) {
                    // Fully added or not at all.
                    let _ = self.rules.remove(at);
                    return Err(e.into());
                }
                // Ids not given go on from the last one assigned, or
                // from above the largest given.
                self.next_rule_id = if rule.id == free {
                    free % MAX_RULE_ID + 1
                } else {
                    self.next_rule_id.max(rule.id % MAX_RULE_ID + 1)
                };
                Ok(())
            }
            (Some("del"), Some(id)) => {
                let id: u32 = id.parse().map_err(|_| "bad id")?;
                if words.nth(1).is_some() {
                    return Err(WriteError::Invalid("del takes one id"));
                }
                let Some(at) = self.rules.iter().position(|r| r.rule.id == id) else {
                    return Err(WriteError::Failed(ENOENT));
                };
                let removed = self
                    .rules
                    .remove(at)
                    .map_err(|_| WriteError::Failed(EINVAL))?;
                if let Err(e) = self.policy_changed(was_enabled) {
                    self.rules.insert_within_capacity(at, removed).ok();
                    return Err(e.into());
                }
                Ok(())
            }
            (Some("flush"), None) => {
                let old = core::mem::take(&mut self.rules);
                if let Err(e) = self.policy_changed(was_enabled) {
                    self.rules = old;
                    return Err(e.into());
                }
                Ok(())
            }
            _ => Err(WriteError::Invalid("expected add, del <id> or flush")),
        }
    }

    /// Executes a write to `flows`: `del <key fields>` or `flush`.
    pub(crate) fn write_flows(&mut self, text: &str) -> Result<(), WriteError> {
        let mut words = text.split_whitespace();
        match words.next() {
            Some("flush") if words.next().is_none() => Ok(self.flush_all()?),
            Some("del") => {
                let key = parse_key(words)?;
                if self.flows.get(&key).is_none() {
                    return Err(WriteError::Failed(ENOENT));
                }
                self.card.delete(&key)?;
                self.flows.remove(&key);
                Ok(())
            }
            _ => Err(WriteError::Invalid("expected del <key> or flush")),
        }
    }

    /// The flow capacity.
    pub(crate) fn max_flows(&self) -> u32 {
        self.max_flows
    }

    /// Resizes the table; the oldest flows are evicted if it holds more.
    pub(crate) fn set_max_flows(&mut self, max: u32) -> Result<(), WriteError> {
        if !(1..=MAX_FLOWS_LIMIT).contains(&max) {
            return Err(WriteError::Invalid("max_flows out of range"));
        }
        let held = self.flows.len();
        if held > max as usize {
            // The oldest by install order: the smallest sequence number
            // `newest` such that `excess` flows were installed no later
            // (sequence numbers are unique), found by bisection.
            let excess = held - max as usize;
            let installed_by = |t: u64| self.flows.iter().filter(|(_, s)| s.seq <= t).count();
            let (mut lo, mut newest) = (0, self.seq);
            while lo < newest {
                let mid = lo + (newest - lo) / 2;
                if installed_by(mid) >= excess {
                    newest = mid;
                } else {
                    lo = mid + 1;
                }
            }
            let mut victims = KVec::with_capacity(excess, GFP_KERNEL)?;
            for (k, st) in self.flows.iter() {
                if st.seq <= newest {
                    victims.push(*k, GFP_KERNEL)?;
                }
            }
            for key in victims.iter() {
                self.card.delete(key)?;
                self.flows.remove(key);
                self.stats.evictions += 1;
            }
        }
        self.card.configure(self.config_flags(), max)?;
        self.max_flows = max;
        Ok(())
    }

    /// Installs pending to fail (fault injection).
    pub(crate) fn fail_installs(&self) -> u32 {
        self.fail_installs
    }

    /// Makes the next `n` installs fail.
    pub(crate) fn set_fail_installs(&mut self, n: u32) -> Result<(), WriteError> {
        if n > MAX_FAIL_INSTALLS {
            return Err(WriteError::Invalid("fail_installs out of range"));
        }
        self.fail_installs = n;
        Ok(())
    }

    /// The idle timeout.
    pub(crate) fn idle_timeout_ms(&self) -> u32 {
        self.idle_timeout_ms
    }

    /// Sets the idle timeout.
    pub(crate) fn set_idle_timeout_ms(&mut self, ms: u32) -> Result<(), WriteError> {
        if !IDLE_TIMEOUT_RANGE_MS.contains(&ms) {
            return Err(WriteError::Invalid("idle_timeout_ms out of range"));
        }
        self.idle_timeout_ms = ms;
        Ok(())
    }

    /// The exception policer's rate (a second per remote address, 0: no
    /// limit) and burst.
    pub(crate) fn exception_rate(&self) -> (u32, u32) {
        (self.exception_rate, self.exception_burst)
    }

    /// Sets the exception policer's rate and burst (either kept if
    /// `None`).
    pub(crate) fn set_exception_rate(
        &mut self,
        rate: Option<u32>,
        burst: Option<u32>,
    ) -> Result<(), WriteError> {
        let rate = rate.unwrap_or(self.exception_rate);
        let burst = burst.unwrap_or(self.exception_burst);
        if !(1..=MAX_EXCEPTION_BURST).contains(&burst) {
            return Err(WriteError::Invalid("exception_burst out of range"));
        }
        self.card.set_exception_rate(rate, burst)?;
        (self.exception_rate, self.exception_burst) = (rate, burst);
        Ok(())
    }

    /// `hw-tc-offload` changed: with it off, nothing is cached and every
    /// packet is an exception. Refused (`EBUSY`) while tc rules are
    /// offloaded, as mlx5 does.
    pub(crate) fn set_cache(&mut self, on: bool) -> Result<(), AdminError> {
        if on == self.cache {
            return Ok(());
        }
        if !on && !self.flower.is_empty() {
            return Err(AdminError::Io(EBUSY));
        }
        if !on {
            self.flush_all()?;
        }
        self.cache = on;
        let configured = self.card.configure(self.config_flags(), self.max_flows);
        if configured.is_err() {
            self.cache = !on;
        }
        configured
    }

    /// tc adds a flower rule, or replaces the one with its cookie.
    pub(crate) fn flower_replace(&mut self, rule: &FlowerRule<'_>, ports: &Ports<'_>) -> Result {
        let was_enabled = self.enabled();
        if self.flower_len >= MAX_FLOWER_RULES {
            return Err(rule.refuse(c"rsnic: the card's rule table is full"));
        }
        let cookie = rule.cookie();
        let id = self.free_flower_id();
        let rec = flower::translate(rule, id, ports).map_err(|msg| rule.refuse(msg))?;
        // Allocated before the card has it: nothing fails after.
        let by_cookie = RBTreeNode::new(cookie, Offloaded::new(rec), GFP_KERNEL)?;
        let by_id = RBTreeNode::new(id, cookie, GFP_KERNEL)?;
        // The new rule first: if the card refuses it, the old one stays.
        match self.card.add_rule(&rec) {
            Ok(()) => {}
            Err(AdminError::Refused(AdminStatus::NoSpace)) => {
                return Err(rule.refuse(c"rsnic: the card's rule table is full"))
            }
            Err(e) => return Err(e.into()),
        }
        self.flower_ids.insert(by_id);
        match self.flower.insert(by_cookie) {
            Some(replaced) => {
                let (_, old) = replaced.to_key_value();
                self.flower_ids.remove(&old.rec.id);
                if let Err(e) = self.card.delete_rule(old.rec.id) {
                    pr_warn!(
                        "GFT: replaced tc rule {} not removed from the card: {:?}\n",
                        old.rec.id,
                        e
                    );
                }
            }
            None => self.flower_len += 1,
        }
        Ok(self.policy_changed(was_enabled)?)
    }

    /// tc removes the flower rule with `cookie`.
    pub(crate) fn flower_destroy(&mut self, cookie: u64) -> Result {
        let was_enabled = self.enabled();
        let r = self.flower.remove(&cookie).ok_or(ENOENT)?;
        self.flower_ids.remove(&r.rec.id);
        self.flower_len -= 1;
        match self.card.delete_rule(r.rec.id) {
            // The card already forgot it (a reset not yet replayed).
            Ok(_) | Err(AdminError::Refused(AdminStatus::NotFound)) => {}
            Err(e) => return Err(e.into()),
        }
        Ok(self.policy_changed(was_enabled)?)
    }

    /// tc asks what the flower rule with `cookie` counted.
    pub(crate) fn flower_stats(&mut self, stats: &mut FlowerStats<'_>) -> Result {
        let r = self.flower.get_mut(&stats.cookie()).ok_or(ENOENT)?;
        let c = self.card.query_rule(r.rec.id)?;
        stats.report(
            r.increments(&c),
            (c.idle_ms != u32::MAX).then_some(c.idle_ms),
        );
        Ok(())
    }

    /// An id no flower rule has, from `next_flower_id` on.
    fn free_flower_id(&mut self) -> u32 {
        let mut id = self.next_flower_id;
        while self.flower_ids.get(&id).is_some() {
            id = id.checked_add(1).unwrap_or(1);
        }
        self.next_flower_id = id.checked_add(1).unwrap_or(1);
        id
    }

    /// Lists the rules for `rules`.
    pub(crate) fn show_rules(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for r in self.rules.iter() {
            writeln!(f, "{} hits={}", r.rule, r.hits)?;
        }
        Ok(())
    }

    /// Lists the flows for `flows` (key order). Call [`Self::refresh`]
    /// first for current counters.
    pub(crate) fn show_flows(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Sorted through a tree (core's slice sort has paths objtool
        // cannot follow).
        let mut sorted = RBTree::new();
        for (k, s) in self.flows.iter() {
            sorted
                .try_create_and_insert(*k, s, GFP_KERNEL)
                .map_err(|_| fmt::Error)?;
        }
        for (k, &s) in sorted.iter() {
            write!(f, "{}", KeyText(k))?;
            writeln!(
                f,
                " rule={} {} packets={} bytes={} age_ms={} idle_ms={} gen={}{}",
                s.rule,
                ActionText(&s.action),
                s.packets,
                s.bytes,
                s.installed.elapsed().as_millis(),
                s.idle_ms,
                s.generation,
                if s.reverse { " reverse" } else { "" }
            )?;
        }
        Ok(())
    }

    /// The counters `stats` and `ethtool -S` show, named; those the
    /// exception queue keeps outside the policy lock are passed in.
    pub(crate) fn counters(&self, queue: &QueueCounts) -> [(&'static str, u64); 34] {
        let c = &self.card_stats;
        let e = &self.card_exceptions;
        let s = &self.stats;
        [
            ("lookups", c.lookups),
            ("hits", c.hits),
            ("misses", c.misses),
            ("exceptions", c.exceptions),
            ("tcp_duplicates", c.tcp_duplicates),
            ("meter_drops", c.meter_drops),
            ("card_flows", u64::from(c.flows)),
            ("pending_marked", e.pending_marked),
            ("pending_drops", e.pending_drops),
            ("pending", u64::from(e.pending)),
            ("exception_rate_drops", e.rate_drops),
            ("flows", self.flows.len() as u64),
            ("rules", self.rules.len() as u64),
            ("generation", u64::from(self.generation)),
            ("exceptions_handled", s.exceptions),
            ("bad_exceptions", queue.bad_exceptions),
            ("backlog_drops", queue.backlog_drops),
            ("reinjected", queue.reinjected),
            ("reinject_drops", queue.reinject_drops),
            ("exception_decide_us", queue.decide_us),
            ("exception_install_us", queue.install_us),
            ("exception_reinject_us", queue.reinject_us),
            ("installs", s.installs),
            ("install_failures", s.install_failures),
            ("install_commands", s.install_commands),
            ("install_wait_us", s.install_wait_ns / 1000),
            ("install_latency_us", s.install_latency_ns / 1000),
            ("install_in_flight_max", s.install_in_flight_max),
            ("evictions", s.evictions),
            ("tcp_control", s.tcp_control),
            ("tcp_retired", s.tcp_retired),
            ("aged_out", s.aged_out),
            ("bad_dump_records", s.bad_dump_records),
            ("stray_flows", s.stray_flows),
        ]
    }

    /// Updates the card's counters (for `stats` and `ethtool -S`).
    pub(crate) fn query_card_stats(&mut self) -> Result<(), AdminError> {
        self.card_stats = self.card.stats()?;
        self.card_exceptions = self.card.exception_stats()?;
        Ok(())
    }
}

/// Counters of the exception queue, kept outside the policy lock.
pub(crate) struct QueueCounts {
    /// Exceptions too short to hold their header.
    pub(crate) bad_exceptions: u64,
    /// Exceptions dropped because the backlog was full.
    pub(crate) backlog_drops: u64,
    /// Packets sent back to the card.
    pub(crate) reinjected: u64,
    /// Packets that could not be sent back (TX ring full or stopped).
    pub(crate) reinject_drops: u64,
    /// Time spent deciding exceptions under the policy lock, in us.
    pub(crate) decide_us: u64,
    /// Time spent in install commands, in us.
    pub(crate) install_us: u64,
    /// Time spent sending decided packets back, in us.
    pub(crate) reinject_us: u64,
}

/// A flow key in `flows` syntax.
struct KeyText<'a>(&'a FlowKey);

impl fmt::Display for KeyText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let k = self.0;
        write!(
            f,
            "dir={} proto={} src={} dst={} sport={} dport={}",
            k.dir.name(),
            Proto(k.proto),
            Addr(&k.src, k.ip_version),
            Addr(&k.dst, k.ip_version),
            k.sport,
            k.dport
        )?;
        if let Some(t) = k.tunnel {
            write!(f, " tunnel={t}")?;
        }
        Ok(())
    }
}

/// Parses a flow key: `dir= proto= src= dst= [sport=] [dport=] [tunnel=]`.
fn parse_key(words: core::str::SplitWhitespace<'_>) -> Result<FlowKey, ParseError> {
    let mut dir = None;
    let mut proto_num = None;
    let mut src = None;
    let mut dst = None;
    let (mut sport, mut dport, mut tunnel) = (None, None, None);
    for w in words {
        let (k, v) = w.split_once('=').ok_or("expected key=value")?;
        let slot_taken = match k {
            "dir" => dir.replace(parse_dir(v)?).is_some(),
            "proto" => proto_num.replace(parse_proto(v)?).is_some(),
            "src" => src.replace(v).is_some(),
            "dst" => dst.replace(v).is_some(),
            "sport" => sport
                .replace(v.parse::<u16>().map_err(|_| "bad port")?)
                .is_some(),
            "dport" => dport
                .replace(v.parse::<u16>().map_err(|_| "bad port")?)
                .is_some(),
            "tunnel" => {
                let t: u32 = v.parse().map_err(|_| "bad tunnel id")?;
                if t >= 1 << 24 {
                    return Err("tunnel id out of range");
                }
                tunnel.replace(t).is_some()
            }
            _ => return Err("unknown key"),
        };
        if slot_taken {
            return Err("key given twice");
        }
    }
    let addr = |v: Option<&str>| parse_addr(v.ok_or("src and dst are required")?);
    let (src, fs) = addr(src)?;
    let (dst, fd) = addr(dst)?;
    if fs != fd {
        return Err("IPv4 and IPv6 mixed");
    }
    Ok(FlowKey {
        vport: HOST_VPORT,
        dir: dir.ok_or("dir is required")?,
        tunnel,
        ip_version: fs,
        proto: proto_num.ok_or("proto is required")?,
        src,
        dst,
        sport: sport.unwrap_or(0),
        dport: dport.unwrap_or(0),
    })
}
