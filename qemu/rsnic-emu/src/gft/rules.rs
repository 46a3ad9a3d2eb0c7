// SPDX-License-Identifier: GPL-2.0

//! The card's masked rules with their actions and counters: what a
//! packet the exact-match table missed is decided by before it would go
//! to the host as an exception (tc flower's rules, OVS's megaflows).

use std::collections::HashMap;
use std::time::Instant;

use crate::hw::gft::{action, Action};

use super::classifier::{AddError, Classifier, MatchKey, Rule, RuleId};
use super::meter::TokenBucket;

/// Rules the card holds unless told otherwise.
pub const DEFAULT_MAX_RULES: usize = 16384;

/// What a rule counted: packets and bytes (as they arrived) it decided,
/// those of them its meter dropped, and when it last decided one (the
/// engine's milliseconds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RuleStats {
    /// Packets.
    pub packets: u64,
    /// Bytes.
    pub bytes: u64,
    /// Packets over the meter's rate, dropped (counted in `packets` too,
    /// as tc's police counts what it saw and what it dropped).
    pub drops: u64,
    /// When the last one came; 0 if none did.
    pub last_ms: u32,
}

/// Why a rule was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleError {
    /// [`AddError`] of the table.
    Table(AddError),
    /// An action that does not hold together.
    BadAction,
}

/// What a rule made of a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Apply the rule's action.
    Act(Action),
    /// Over the rule's meter: dropped.
    OverRate,
}

#[derive(Debug)]
struct Entry {
    action: Action,
    /// The rule's own bucket, if its action has [`action::METER`]: one
    /// per rule, shared by every flow it decides (as tc's police on a
    /// filter).
    meter: Option<TokenBucket>,
    stats: RuleStats,
}

/// The rules.
#[derive(Debug)]
pub struct Rules {
    table: Classifier,
    entries: HashMap<RuleId, Entry>,
}

impl Default for Rules {
    fn default() -> Self {
        Self {
            table: Classifier::new(DEFAULT_MAX_RULES),
            entries: HashMap::new(),
        }
    }
}

impl Rules {
    /// Whether there is none (then nothing is looked up).
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Rules held.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Masks a lookup probes at most.
    pub fn masks(&self) -> usize {
        self.table.masks()
    }

    /// Adds `rule` with `act`; a meter starts with a full bucket at
    /// `now`.
    pub fn add(&mut self, rule: Rule, act: Action, now: Instant) -> Result<(), RuleError> {
        if !act.is_valid() {
            return Err(RuleError::BadAction);
        }
        self.table.add(rule).map_err(RuleError::Table)?;
        let meter = (act.flags & action::METER != 0)
            .then(|| TokenBucket::new(act.meter_rate, act.meter_burst, now));
        self.entries.insert(
            rule.id,
            Entry {
                action: act,
                meter,
                stats: RuleStats::default(),
            },
        );
        Ok(())
    }

    /// Removes rule `id`; its counters as it goes.
    pub fn remove(&mut self, id: RuleId) -> Option<RuleStats> {
        self.table.remove(id)?;
        self.entries.remove(&id).map(|e| e.stats)
    }

    /// Removes every rule.
    pub fn clear(&mut self) {
        self.table.clear();
        self.entries.clear();
    }

    /// Rule `id`'s counters.
    pub fn stats(&self, id: RuleId) -> Option<RuleStats> {
        self.entries.get(&id).map(|e| e.stats)
    }

    /// What the rule that decides a packet of `key`, `len` bytes long,
    /// makes of it at `now` (`now_ms` in the engine's milliseconds); the
    /// rule counts it.
    pub fn decide(
        &mut self,
        key: &MatchKey,
        len: usize,
        now: Instant,
        now_ms: u32,
    ) -> Option<(RuleId, Decision)> {
        let id = self.table.lookup(key)?;
        let e = self.entries.get_mut(&id)?;
        e.stats.packets += 1;
        e.stats.bytes += len as u64;
        e.stats.last_ms = now_ms.max(1);
        if let Some(m) = &mut e.meter {
            if !m.admit(len, now) {
                e.stats.drops += 1;
                return Some((id, Decision::OverRate));
            }
        }
        Some((id, Decision::Act(e.action)))
    }
}
