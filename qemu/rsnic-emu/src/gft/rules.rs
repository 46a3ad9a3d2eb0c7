// SPDX-License-Identifier: GPL-2.0

//! The card's masked rules with their actions and counters: what a
//! packet the exact-match table missed is decided by before it would go
//! to the host as an exception (tc flower's rules, OVS's megaflows).

use std::collections::HashMap;

use crate::hw::gft::{action, Action};

use super::classifier::{AddError, Classifier, MatchKey, Rule, RuleId};

/// Rules the card holds unless told otherwise.
pub const DEFAULT_MAX_RULES: usize = 16384;

/// What a rule counted: packets and bytes (as they arrived) it decided,
/// and when it last did (the engine's milliseconds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RuleStats {
    /// Packets.
    pub packets: u64,
    /// Bytes.
    pub bytes: u64,
    /// When the last one came; 0 if none did.
    pub last_ms: u32,
}

/// Why a rule was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleError {
    /// [`AddError`] of the table.
    Table(AddError),
    /// An action the card does not run on a rule (a meter: rules have
    /// none yet) or one that does not hold together.
    BadAction,
}

#[derive(Debug)]
struct Entry {
    action: Action,
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

    /// Adds `rule` with `act`.
    pub fn add(&mut self, rule: Rule, act: Action) -> Result<(), RuleError> {
        if act.flags & action::METER != 0 || !act.is_valid() {
            return Err(RuleError::BadAction);
        }
        self.table.add(rule).map_err(RuleError::Table)?;
        self.entries.insert(
            rule.id,
            Entry {
                action: act,
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

    /// The action of the rule that decides a packet of `key`, `len`
    /// bytes long, which it counts.
    pub fn decide(&mut self, key: &MatchKey, len: usize, now_ms: u32) -> Option<(RuleId, Action)> {
        let id = self.table.lookup(key)?;
        let e = self.entries.get_mut(&id)?;
        e.stats.packets += 1;
        e.stats.bytes += len as u64;
        e.stats.last_ms = now_ms.max(1);
        Some((id, e.action))
    }
}
