// SPDX-License-Identifier: GPL-2.0

//! The exact-match cache in front of the masked rules: which rule (or
//! none) decided a packet's match key, kept so that the next packet
//! with the same key is decided by one probe instead of one per mask (as
//! Open vSwitch's exact-match cache sits in front of its megaflow
//! classifier).
//!
//! The cache key is the packet's [`MatchKey`] with only the bits some
//! rule looks at (the union of the rules' masks). A rule's decision
//! depends on nothing else, so packets with equal cache keys are
//! decided by the same rule, and fields no rule matches (TTL, TCP flags
//! when no rule asks) do not split a conversation over several entries.
//! The GFT's own 48-byte flow key would not do: rules also match MACs,
//! VLAN, fragment and TCP flags, TOS, TTL, the outer header and the port
//! a packet came in on, which that key does not hold.
//!
//! What is cached is the rule's number, not its action: the packet is
//! counted (and metered) on the rule itself, so a rule's counters are
//! exact whether the cache or the table found it, and nothing needs
//! folding back when an entry goes. Any change to the rules makes every
//! entry stale at once (a version number); the next packet of each key
//! asks the table again.
//!
//! Entries are the ways of a 2-way set-associative array, two cache
//! lines each: a key lives in one of the two ways of the set its hash
//! picks. A new key takes a way that is free (or stale); in a full set
//! it takes the first way and moves the one there to the second (the
//! older of the two goes), but only every [`EVICT_EVERY`]th time a full
//! set is offered one: when more keys come than the cache holds, most
//! misses then cost a probe and no write, and a key that keeps coming
//! still gets in (Open vSwitch inserts into its exact-match cache with a
//! probability, for the same reason). Nothing is allocated until the
//! first entry.
//!
//! When the keys outnumber the cache many times over, its probes are
//! misses to memory on top of the table's lookup, which stays in the
//! processor's caches for a few thousand rules. So the cache judges
//! itself over windows of [`WINDOW`] probes that either hit or missed
//! with the key's set full (a miss that fills a free way, as after a rule
//! change, is neither), and steps aside while fewer than half of them
//! hit: then only one lookup in [`SAMPLE_EVERY`] probes it (and offers
//! its key), enough to see the hits come back.

use super::classifier::{MatchKey, RuleId, WordHash};
use super::slab::HugeVec;

/// Sets in the array (a power of two): 32768 entries, 4 MiB. At 2
/// ways a set, a working set of an eighth of that loses about 1% of its
/// keys to sets it overfills (a quarter: 5%).
const SETS: usize = 16384;
/// Ways per set.
const WAYS: usize = 2;
/// A full set takes a new key one time in this many.
const EVICT_EVERY: u32 = 8;
/// Probes over which the hit rate is judged.
const WINDOW: u32 = 1024;
/// Stepped aside, one lookup in this many still probes.
const SAMPLE_EVERY: u32 = 64;

/// One entry: a cache key and what decided it.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct Way {
    /// The cache's version when this was stored; another: stale.
    version: u32,
    /// The key's hash's upper half: compared before the key.
    tag: u32,
    /// The rule, or `None`: no rule matches (the exception path).
    rule: Option<RuleId>,
    key: MatchKey,
}

impl Way {
    const EMPTY: Self = Self {
        version: 0,
        tag: 0,
        rule: None,
        key: MatchKey([0; super::classifier::MATCH_LEN]),
    };
}

/// The cache's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups the cache answered.
    pub hits: u64,
    /// Lookups it did not (the rule table was asked, and the answer
    /// stored).
    pub misses: u64,
    /// New keys a full set did not take ([`EVICT_EVERY`]).
    pub skipped: u64,
    /// Lookups that went to the table without a probe (the cache
    /// stepped aside).
    pub bypassed: u64,
    /// Times every entry was made stale (a rule change).
    pub flushes: u64,
}

/// The cache.
#[derive(Debug)]
pub struct RuleCache {
    ways: HugeVec<Way>,
    /// Sets held ([`SETS`]; fewer in tests).
    sets: usize,
    /// Which bits of a packet's key any rule looks at.
    mask: MatchKey,
    /// Entries of another version are stale; never 0 (an empty way's).
    version: u32,
    hash: WordHash,
    enabled: bool,
    /// New keys a full set was offered since it last took one.
    refused: u32,
    /// Probes and hits in the current window.
    window: (u32, u32),
    /// Stepped aside: fewer than half of the last window's probes hit.
    aside: bool,
    /// Lookups since the last sampled one, while aside.
    unsampled: u32,
    stats: CacheStats,
}

impl Default for RuleCache {
    fn default() -> Self {
        Self::with_sets(SETS)
    }
}

impl RuleCache {
    /// A cache of `sets` sets (a power of two).
    fn with_sets(sets: usize) -> Self {
        Self {
            ways: HugeVec::new(),
            sets,
            mask: MatchKey::default(),
            version: 1,
            hash: WordHash::random(),
            enabled: true,
            refused: 0,
            window: (0, 0),
            aside: false,
            unsampled: 0,
            stats: CacheStats::default(),
        }
    }

    /// Turns the cache on or off (off: every lookup asks the table; for
    /// measuring what the cache buys).
    pub fn set_enabled(&mut self, on: bool) {
        self.enabled = on;
        self.invalidate(self.mask);
    }

    /// Whether lookups go through the cache.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Its counters.
    pub fn stats(&self) -> CacheStats {
        self.stats
    }

    /// Makes every entry stale: the rules changed, and `mask` is the
    /// union of their masks now.
    pub fn invalidate(&mut self, mask: MatchKey) {
        self.mask = mask;
        self.stats.flushes += 1;
        self.version = self.version.wrapping_add(1);
        if self.version == 0 {
            // Wrapped: no entry may keep a version that comes round
            // again.
            self.ways.fill(Way::EMPTY);
            self.version = 1;
        }
    }

    /// The cache key of a packet's `key`.
    pub fn key(&self, key: &MatchKey) -> MatchKey {
        key.masked(&self.mask)
    }

    /// The first way of `key`'s set, and its tag.
    fn place(&self, key: &MatchKey) -> (usize, u32) {
        let h = self.hash.of(key);
        // CAST: the set number is below `sets`; the tag is the upper
        // half.
        ((h as usize & (self.sets - 1)) * WAYS, (h >> 32) as u32)
    }

    /// Whether this lookup probes the cache: always, unless it stepped
    /// aside (then one in [`SAMPLE_EVERY`]).
    pub fn probes(&mut self) -> bool {
        if !self.aside {
            return true;
        }
        self.unsampled += 1;
        if self.unsampled < SAMPLE_EVERY {
            self.stats.bypassed += 1;
            return false;
        }
        self.unsampled = 0;
        true
    }

    /// What decided cache key `key`, if the cache holds it: `Some(None)`
    /// is "no rule".
    pub fn get(&mut self, key: &MatchKey) -> Option<Option<RuleId>> {
        let found = if self.ways.is_empty() {
            None
        } else {
            let (set, tag) = self.place(key);
            self.ways[set..set + WAYS]
                .iter()
                .find(|w| w.tag == tag && w.version == self.version && w.key == *key)
                .map(|w| w.rule)
        };
        match found {
            Some(_) => {
                self.stats.hits += 1;
                self.judge(true);
            }
            // Judged when its key is offered.
            None => self.stats.misses += 1,
        }
        found
    }

    /// Counts a probe in the window; at its end, steps aside or back.
    fn judge(&mut self, hit: bool) {
        self.window.0 += 1;
        self.window.1 += u32::from(hit);
        if self.window.0 == WINDOW {
            self.aside = self.window.1 * 2 < WINDOW;
            self.window = (0, 0);
        }
    }

    /// Offers that `rule` decides cache key `key` (a key it does not
    /// hold): taken into a free way, or into a full set one time in
    /// [`EVICT_EVERY`].
    pub fn put(&mut self, key: MatchKey, rule: Option<RuleId>) {
        if self.ways.is_empty() {
            self.ways = HugeVec::from_elem(Way::EMPTY, self.sets * WAYS);
        }
        let (set, tag) = self.place(&key);
        let version = self.version;
        let way = Way {
            version,
            tag,
            rule,
            key,
        };
        // The first way holds the newer key, the second the older.
        if self.ways[set].version != version {
            self.ways[set] = way;
            return;
        }
        if self.ways[set + 1].version == version {
            self.judge(false);
            self.refused += 1;
            if self.refused < EVICT_EVERY {
                self.stats.skipped += 1;
                return;
            }
            self.refused = 0;
        }
        self.ways[set + 1] = self.ways[set];
        self.ways[set] = way;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gft::classifier::field;

    fn key(port: u16) -> MatchKey {
        let mut k = MatchKey::default();
        k.set(field::L4_DST, &port.to_be_bytes());
        k
    }

    #[test]
    fn holds_what_was_put_until_invalidated() {
        let mut c = RuleCache::default();
        assert_eq!(c.get(&key(1)), None);
        c.put(key(1), Some(7));
        c.put(key(2), None);
        assert_eq!(c.get(&key(1)), Some(Some(7)));
        assert_eq!(c.get(&key(2)), Some(None));
        c.invalidate(MatchKey::default());
        assert_eq!(c.get(&key(1)), None);
        assert_eq!(
            c.stats(),
            CacheStats {
                hits: 2,
                misses: 2,
                skipped: 0,
                bypassed: 0,
                flushes: 1
            }
        );
    }

    #[test]
    fn a_full_set_takes_a_new_key_now_and_then_in_place_of_its_oldest() {
        // One set: every key lands in it.
        let mut c = RuleCache::with_sets(1);
        let first = key(0);
        let same = [key(1), key(2)];
        c.put(first, Some(0));
        c.put(same[0], Some(1));
        assert_eq!(c.get(&first), Some(Some(0)));
        assert_eq!(c.get(&same[0]), Some(Some(1)));
        for _ in 1..EVICT_EVERY {
            c.put(same[1], Some(2));
            assert_eq!(c.get(&same[1]), None);
        }
        assert_eq!(c.stats().skipped, u64::from(EVICT_EVERY - 1));
        c.put(same[1], Some(2));
        assert_eq!(c.get(&same[1]), Some(Some(2)));
        assert_eq!(c.get(&first), None);
        assert_eq!(c.get(&same[0]), Some(Some(1)));
        // A stale way is free again.
        c.invalidate(MatchKey::default());
        c.put(same[0], Some(3));
        assert_eq!(c.get(&same[0]), Some(Some(3)));
    }

    #[test]
    fn a_version_that_wraps_forgets_everything() {
        let mut c = RuleCache::default();
        c.put(key(1), Some(1));
        c.version = u32::MAX;
        c.put(key(2), Some(2));
        c.invalidate(MatchKey::default());
        assert_eq!(c.version, 1);
        assert_eq!(c.get(&key(1)), None);
        assert_eq!(c.get(&key(2)), None);
    }

    #[test]
    fn steps_aside_while_most_probes_miss_and_comes_back_when_they_hit() {
        // One set: from the third key on, every new key finds it full.
        let mut c = RuleCache::with_sets(1);
        let mut k = 0u16;
        let mut next = || {
            k += 1;
            key(k)
        };
        // The two keys that fill the free ways are not judged; a window
        // of keys that find the set full is.
        let mut offered = 0;
        while !c.aside {
            let k = next();
            assert!(c.probes());
            assert_eq!(c.get(&k), None);
            c.put(k, None);
            offered += 1;
        }
        assert_eq!(offered, WINDOW + 2);
        // Aside: one lookup in SAMPLE_EVERY probes.
        let sampled = (0..SAMPLE_EVERY * 4).filter(|_| c.probes()).count();
        assert_eq!(sampled, 4);
        // Then the keys hit again: after a window of sampled probes the
        // cache is back.
        let k = next();
        c.invalidate(MatchKey::default());
        c.put(k, Some(1));
        let mut probes = 0;
        while c.aside {
            if c.probes() {
                assert_eq!(c.get(&k), Some(Some(1)));
                probes += 1;
            }
        }
        assert_eq!(probes, WINDOW);
        assert!(c.probes());
        assert_eq!(
            c.stats().bypassed,
            u64::from((SAMPLE_EVERY - 1) * (WINDOW + 4))
        );
    }

    #[test]
    fn filling_an_empty_cache_does_not_step_it_aside() {
        let mut c = RuleCache::default();
        for i in 0..4 * WINDOW {
            // CAST: below 2^16.
            let k = key(i as u16);
            assert!(c.probes());
            assert_eq!(c.get(&k), None);
            c.put(k, None);
        }
        assert!(!c.aside);
    }
}
