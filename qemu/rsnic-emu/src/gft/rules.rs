// SPDX-License-Identifier: GPL-2.0

//! The card's masked rules with their actions and counters: what a
//! packet the exact-match table missed is decided by before it would go
//! to the host as an exception (tc flower's rules, OVS's megaflows).

use std::collections::HashMap;
use std::time::Instant;

use crate::hw::gft::{action, Action};

use super::classifier::{AddError, Classifier, MatchKey, Rule, RuleId, WordHash};
use super::meter::TokenBucket;
use super::rule_cache::RuleCache;

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
    entries: HashMap<RuleId, Entry, WordHash>,
    /// What the table decided for recent keys.
    pub cache: RuleCache,
}

impl Default for Rules {
    fn default() -> Self {
        Self {
            table: Classifier::new(DEFAULT_MAX_RULES),
            entries: HashMap::with_hasher(WordHash::random()),
            cache: RuleCache::default(),
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
        self.cache.invalidate(self.table.mask_union());
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
        self.cache.invalidate(self.table.mask_union());
        self.entries.remove(&id).map(|e| e.stats)
    }

    /// Removes every rule.
    pub fn clear(&mut self) {
        self.table.clear();
        self.entries.clear();
        self.cache.invalidate(MatchKey::default());
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
        let id = self.lookup(key)?;
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

    /// The rule that decides `key`: the cache's answer, or the table's
    /// (then cached).
    fn lookup(&mut self, key: &MatchKey) -> Option<RuleId> {
        if !self.cache.enabled() || !self.cache.probes() {
            return self.table.lookup(key);
        }
        let ckey = self.cache.key(key);
        if let Some(found) = self.cache.get(&ckey) {
            return found;
        }
        let found = self.table.lookup(key);
        self.cache.put(ckey, found);
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gft::classifier::{field, port};
    use crate::gft::parse::tests::udp4;

    /// A rule on one of four masks: source port, destination port,
    /// both, or the port the packet came in on, matching `n`.
    fn rule(id: RuleId, n: u16) -> Rule {
        let (mut key, mut mask) = (MatchKey::default(), MatchKey::default());
        match id % 4 {
            0 => {
                key.set(field::L4_SRC, &n.to_be_bytes());
                mask.set_all(field::L4_SRC);
            }
            1 => {
                key.set(field::L4_DST, &n.to_be_bytes());
                mask.set_all(field::L4_DST);
            }
            2 => {
                key.set(field::L4_SRC, &n.to_be_bytes())
                    .set(field::L4_DST, &n.to_be_bytes());
                mask.set_all(field::L4_SRC).set_all(field::L4_DST);
            }
            _ => {
                key.set(field::IN_PORT, &(n % 3).to_be_bytes());
                mask.set_all(field::IN_PORT);
            }
        }
        Rule {
            id,
            // CAST: a handful of priorities.
            prio: (id % 5) as u16,
            key,
            mask,
        }
    }

    /// An action of rule `id`'s own.
    fn act(id: RuleId) -> Action {
        Action {
            flags: action::NAT_DST_PORT,
            // CAST: tests use small ids.
            nat_dport: id as u16,
            ..Action::default()
        }
    }

    #[test]
    fn the_cache_decides_as_the_table_does_across_rule_changes() {
        let mut rng = fastrand::Rng::with_seed(7);
        let (mut cached, mut plain) = (Rules::default(), Rules::default());
        plain.cache.set_enabled(false);
        let now = Instant::now();
        let mut held = Vec::new();
        for round in 0..200u32 {
            // A rule added or removed now and then.
            if round % 4 == 0 {
                if rng.bool() || held.is_empty() {
                    let id = round;
                    let r = rule(id, rng.u16(0..8));
                    cached.add(r, act(id), now).unwrap();
                    plain.add(r, act(id), now).unwrap();
                    held.push(id);
                } else {
                    let id = held.swap_remove(rng.usize(..held.len()));
                    assert_eq!(cached.remove(id), plain.remove(id));
                }
            }
            for _ in 0..50 {
                let f = udp4(rng.u16(0..8), rng.u16(0..8), b"x");
                let key = MatchKey::of_frame(&f, rng.u16(0..3));
                let want = plain.decide(&key, f.len(), now, 1);
                assert_eq!(cached.decide(&key, f.len(), now, 1), want, "{key:?}");
            }
        }
        for id in held {
            assert_eq!(cached.stats(id), plain.stats(id));
        }
        let s = cached.cache.stats();
        assert!(s.hits > s.misses, "{s:?}");
        assert_eq!(plain.cache.stats().hits, 0);
    }

    #[test]
    fn a_rule_added_after_a_miss_was_cached_decides_the_next_packet() {
        let mut rules = Rules::default();
        let now = Instant::now();
        rules.add(rule(1, 4), act(1), now).unwrap();
        let key = MatchKey::of_frame(&udp4(3, 9, b"x"), port::PF);
        assert_eq!(rules.decide(&key, 1, now, 1), None);
        assert_eq!(rules.decide(&key, 1, now, 1), None);
        assert_eq!(rules.cache.stats().hits, 1);
        // Destination port 9 now: the cached "no rule" must not stand.
        rules.add(rule(5, 9), act(5), now).unwrap();
        assert_eq!(
            rules.decide(&key, 1, now, 1),
            Some((5, Decision::Act(act(5))))
        );
        assert_eq!(rules.remove(5).map(|s| s.packets), Some(1));
        assert_eq!(rules.decide(&key, 1, now, 1), None);
    }
}
