// SPDX-License-Identifier: GPL-2.0

//! The card's masked rule table: rules of (match, mask, priority) as tc
//! flower and Open vSwitch's megaflows give them, looked up by tuple
//! space search (Srinivasan et al., SIGCOMM 1999; OVS's classifier).
//!
//! Rules with the same mask share a subtable, a hash map from the masked
//! match to the rules with that match, best priority first. A lookup
//! masks the packet's [`MatchKey`] with each subtable's mask in turn, in
//! the order of the best priority a subtable holds, and stops as soon as
//! no subtable left can beat what it found: with the few masks a switch
//! uses, a lookup is a handful of hash probes whatever the rule count.
//!
//! As in tc, a lower priority number wins; between rules of the same
//! priority the one added first does.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, Hasher};

use crate::frame::{network_layer, ETH_P_IPV4, ETH_P_IPV6};
use crate::hw::gft::{proto, Direction};

use super::parse;

pub use crate::hw::gft_rule::{field, match_flags as flags, port, MATCH_LEN};

/// What a rule matches on, or (as a mask) which bits of it matter.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct MatchKey(pub [u8; MATCH_LEN]);

impl Default for MatchKey {
    fn default() -> Self {
        Self([0; MATCH_LEN])
    }
}

impl std::fmt::Debug for MatchKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MatchKey(")?;
        for (i, b) in self.0.iter().enumerate().filter(|(_, b)| **b != 0) {
            write!(f, "{i}:{b:02x} ")?;
        }
        write!(f, ")")
    }
}

impl MatchKey {
    /// Sets `f` to `bytes` (as long as the field).
    pub fn set(&mut self, f: field::Field, bytes: &[u8]) -> &mut Self {
        self.0[f.0..f.0 + f.1].copy_from_slice(&bytes[..f.1]);
        self
    }

    /// Sets every bit of `f` (on a mask: the field must match exactly).
    pub fn set_all(&mut self, f: field::Field) -> &mut Self {
        self.0[f.0..f.0 + f.1].fill(0xff);
        self
    }

    /// The bytes of `f`.
    pub fn get(&self, f: field::Field) -> &[u8] {
        &self.0[f.0..f.0 + f.1]
    }

    /// This key with only the bits of `mask`.
    pub fn masked(&self, mask: &MatchKey) -> MatchKey {
        let mut out = [0u8; MATCH_LEN];
        for ((o, k), m) in out.iter_mut().zip(&self.0).zip(&mask.0) {
            *o = k & m;
        }
        MatchKey(out)
    }

    /// The key of `frame`, arriving on `in_port`. A frame that is not IP
    /// has its L2 fields only; a VXLAN or NVGRE frame its inner packet's
    /// in the plain fields and the outer header's in the `ENC_*` ones.
    pub fn of_frame(frame: &[u8], in_port: u16) -> MatchKey {
        let mut k = MatchKey::default();
        k.set(field::IN_PORT, &in_port.to_be_bytes());
        let Some(p) = parse::parse(frame, Direction::Rx) else {
            l2(&mut k, frame, 0);
            return k;
        };
        let mut fl = 0;
        let l = match p.inner {
            Some(inner) => {
                fl |= flags::TUNNEL;
                let (src, dst) = parse::addresses(frame, &p.outer);
                k.set(field::ENC_IP_SRC, &src).set(field::ENC_IP_DST, &dst);
                if let Some(id) = p.tunnel {
                    k.set(field::ENC_KEY_ID, &id.to_be_bytes());
                }
                if p.outer.proto == proto::UDP {
                    let udp = &frame[p.outer.l4..p.outer.l4 + 4];
                    k.set(field::ENC_SRC_PORT, &udp[..2])
                        .set(field::ENC_DST_PORT, &udp[2..]);
                }
                let (tos, ttl) = ip_tos_ttl(frame, &p.outer);
                k.set(field::ENC_IP_TOS, &[tos])
                    .set(field::ENC_IP_TTL, &[ttl]);
                inner
            }
            None => p.outer,
        };
        if l2(&mut k, frame, l.eth) {
            fl |= flags::VLAN;
        }
        k.set(field::IP_PROTO, &[l.proto]);
        let (src, dst) = parse::addresses(frame, &l);
        k.set(field::IP_SRC, &src).set(field::IP_DST, &dst);
        let (tos, ttl) = ip_tos_ttl(frame, &l);
        let frag = if l.ip_version == 4 {
            u16::from_be_bytes([frame[l.l3 + 6], frame[l.l3 + 7]]) & 0x3fff
        } else {
            0
        };
        k.set(field::IP_TOS, &[tos]).set(field::IP_TTL, &[ttl]);
        if frag != 0 {
            fl |= flags::FRAGMENT;
            if frag & 0x1fff != 0 {
                fl |= flags::LATER_FRAGMENT;
            }
        }
        if l.has_l4 {
            match l.proto {
                proto::TCP => {
                    k.set(field::L4_SRC, &frame[l.l4..])
                        .set(field::L4_DST, &frame[l.l4 + 2..]);
                    let word = u16::from_be_bytes([frame[l.l4 + 12], frame[l.l4 + 13]]) & 0x0fff;
                    k.set(field::TCP_FLAGS, &word.to_be_bytes());
                }
                proto::UDP => {
                    k.set(field::L4_SRC, &frame[l.l4..])
                        .set(field::L4_DST, &frame[l.l4 + 2..]);
                }
                proto::ICMP | proto::ICMPV6 => {
                    k.set(field::L4_SRC, &[0, frame[l.l4]])
                        .set(field::L4_DST, &[0, frame[l.l4 + 1]]);
                }
                _ => {}
            }
        }
        k.set(field::FLAGS, &[fl]);
        k
    }
}

/// Fills the L2 fields from the Ethernet header at `eth`; true if it is
/// tagged.
/// The TOS (traffic class) and TTL (hop limit) of the IP header `l`
/// describes.
fn ip_tos_ttl(frame: &[u8], l: &parse::Layers) -> (u8, u8) {
    if l.ip_version == 4 {
        (frame[l.l3 + 1], frame[l.l3 + 8])
    } else {
        ((frame[l.l3] << 4) | (frame[l.l3 + 1] >> 4), frame[l.l3 + 7])
    }
}

fn l2(k: &mut MatchKey, frame: &[u8], eth: usize) -> bool {
    let Some(hdr) = frame.get(eth..) else {
        return false;
    };
    let Some((ethertype, l3)) = network_layer(hdr) else {
        return false;
    };
    k.set(field::ETH_DST, hdr).set(field::ETH_SRC, &hdr[6..]);
    k.set(field::ETH_TYPE, &ethertype.to_be_bytes());
    let tagged = l3 == 18;
    if tagged {
        k.set(field::VLAN_TCI, &hdr[14..]);
        k.0[field::FLAGS.0] |= flags::VLAN;
    }
    debug_assert!(!matches!(ethertype, ETH_P_IPV4 | ETH_P_IPV6) || l3 >= 14);
    tagged
}

/// The subtables' hash: a multiply-xor mix of the key's 8-byte words
/// (as the exact-match table's), seeded per table so a host cannot pick
/// rules and packets that collide on every card. SipHash, the standard
/// map's, costs most of a probe over a 112-byte key.
#[derive(Clone, Copy, Debug)]
pub(super) struct WordHash {
    seed: u64,
}

impl WordHash {
    /// A hash with a seed of its own.
    pub(super) fn random() -> Self {
        Self {
            seed: fastrand::u64(..) | 1,
        }
    }

    /// The hash of `v`.
    pub(super) fn of(&self, v: &impl std::hash::Hash) -> u64 {
        self.hash_one(v)
    }
}

impl BuildHasher for WordHash {
    type Hasher = WordHasher;

    fn build_hasher(&self) -> WordHasher {
        WordHasher(self.seed)
    }
}

/// [`WordHash`]'s state.
pub(super) struct WordHasher(u64);

impl Hasher for WordHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in words.by_ref() {
            self.write_u64(u64::from_ne_bytes(w.try_into().unwrap_or_default()));
        }
        for &b in words.remainder() {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, w: u64) {
        let h = (self.0 ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = h ^ (h >> 32);
    }

    fn finish(&self) -> u64 {
        let mut h = self.0;
        h ^= h >> 29;
        h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
        h ^ (h >> 32)
    }
}

/// A rule's number, chosen by the host (tc's filter cookie maps to it).
pub type RuleId = u32;

/// A masked rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    /// Its number.
    pub id: RuleId,
    /// Lower wins.
    pub prio: u16,
    /// The match (only the bits of `mask` count).
    pub key: MatchKey,
    /// Which bits matter.
    pub mask: MatchKey,
}

impl Rule {
    /// Rule `id` of priority `prio`, its match and mask as `set` writes
    /// them into empty ones.
    pub fn new(id: RuleId, prio: u16, set: impl FnOnce(&mut MatchKey, &mut MatchKey)) -> Self {
        let (mut key, mut mask) = (MatchKey::default(), MatchKey::default());
        set(&mut key, &mut mask);
        Self {
            id,
            prio,
            key,
            mask,
        }
    }
}

/// Why a rule was not added.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddError {
    /// A rule with that number exists.
    Exists,
    /// The table holds its maximum.
    Full,
}

/// Rules of one mask.
#[derive(Debug)]
struct Subtable {
    mask: MatchKey,
    /// Masked match to the rules with it, best first: (prio, order
    /// added, id).
    rules: HashMap<MatchKey, Vec<(u16, u64, RuleId)>, WordHash>,
    /// How many rules hold each priority.
    prios: BTreeMap<u16, usize>,
    /// The best priority any of them has.
    best: u16,
}

impl Subtable {
    fn count_prio(&mut self, prio: u16, added: bool) {
        let n = self.prios.entry(prio).or_default();
        if added {
            *n += 1;
        } else {
            *n -= 1;
            if *n == 0 {
                self.prios.remove(&prio);
            }
        }
        self.best = self.prios.keys().next().copied().unwrap_or(u16::MAX);
    }
}

/// The table.
#[derive(Debug)]
pub struct Classifier {
    /// Ordered by `best`, so a lookup can stop early.
    subtables: Vec<Subtable>,
    rules: HashMap<RuleId, Rule>,
    /// Rules added so far (the tie-breaker between equal priorities).
    added: u64,
    hash: WordHash,
    max_rules: usize,
}

impl Classifier {
    /// An empty table of at most `max_rules`.
    pub fn new(max_rules: usize) -> Self {
        Self {
            subtables: Vec::new(),
            rules: HashMap::new(),
            added: 0,
            hash: WordHash::random(),
            max_rules,
        }
    }

    /// Rules held.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Distinct masks held (what a lookup probes at most).
    pub fn masks(&self) -> usize {
        self.subtables.len()
    }

    /// Which bits any rule's mask has.
    pub fn mask_union(&self) -> MatchKey {
        let mut out = MatchKey::default();
        for sub in &self.subtables {
            for (o, m) in out.0.iter_mut().zip(&sub.mask.0) {
                *o |= m;
            }
        }
        out
    }

    /// The rule numbered `id`.
    pub fn get(&self, id: RuleId) -> Option<&Rule> {
        self.rules.get(&id)
    }

    /// Adds `rule` (its key is stored masked).
    pub fn add(&mut self, mut rule: Rule) -> Result<(), AddError> {
        if self.rules.contains_key(&rule.id) {
            return Err(AddError::Exists);
        }
        if self.rules.len() >= self.max_rules {
            return Err(AddError::Full);
        }
        rule.key = rule.key.masked(&rule.mask);
        let order = self.added;
        self.added += 1;
        let i = match self.subtables.iter().position(|s| s.mask == rule.mask) {
            Some(i) => i,
            None => {
                self.subtables.push(Subtable {
                    mask: rule.mask,
                    rules: HashMap::with_hasher(self.hash),
                    prios: BTreeMap::new(),
                    best: u16::MAX,
                });
                self.subtables.len() - 1
            }
        };
        let sub = &mut self.subtables[i];
        let list = sub.rules.entry(rule.key).or_default();
        let at = list.partition_point(|e| (e.0, e.1) <= (rule.prio, order));
        list.insert(at, (rule.prio, order, rule.id));
        sub.count_prio(rule.prio, true);
        self.rules.insert(rule.id, rule);
        self.sort();
        Ok(())
    }

    /// Removes the rule numbered `id`.
    pub fn remove(&mut self, id: RuleId) -> Option<Rule> {
        let rule = self.rules.remove(&id)?;
        let i = self.subtables.iter().position(|s| s.mask == rule.mask)?;
        let sub = &mut self.subtables[i];
        if let Some(list) = sub.rules.get_mut(&rule.key) {
            list.retain(|e| e.2 != id);
            if list.is_empty() {
                sub.rules.remove(&rule.key);
            }
        }
        sub.count_prio(rule.prio, false);
        if sub.prios.is_empty() {
            self.subtables.remove(i);
        } else {
            self.sort();
        }
        Some(rule)
    }

    /// Removes every rule.
    pub fn clear(&mut self) {
        self.subtables.clear();
        self.rules.clear();
    }

    fn sort(&mut self) {
        self.subtables.sort_by_key(|s| s.best);
    }

    /// The rule that decides a packet of `key`: the best priority among
    /// the rules it matches.
    pub fn lookup(&self, key: &MatchKey) -> Option<RuleId> {
        let mut found: Option<(u16, u64, RuleId)> = None;
        for sub in &self.subtables {
            if found.is_some_and(|f| f.0 < sub.best) {
                break;
            }
            if let Some(&e) = sub
                .rules
                .get(&key.masked(&sub.mask))
                .and_then(|v| v.first())
            {
                if found.is_none_or(|f| (e.0, e.1) < (f.0, f.1)) {
                    found = Some(e);
                }
            }
        }
        found.map(|f| f.2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gft::parse::tests as frames;

    fn rule(id: RuleId, prio: u16, set: impl FnOnce(&mut MatchKey, &mut MatchKey)) -> Rule {
        Rule::new(id, prio, set)
    }

    fn udp_to(dport: u16) -> MatchKey {
        MatchKey::of_frame(&frames::udp4(1000, dport, b"x"), port::UPLINK)
    }

    #[test]
    fn a_frame_gives_its_fields() {
        let k = MatchKey::of_frame(&frames::udp4(1000, 53, b"hello"), port::VF0 + 3);
        assert_eq!(k.get(field::IN_PORT), &[0, 5]);
        assert_eq!(k.get(field::ETH_TYPE), &[0x08, 0x00]);
        assert_eq!(k.get(field::IP_PROTO), &[17]);
        assert_eq!(k.get(field::L4_SRC), &1000u16.to_be_bytes());
        assert_eq!(k.get(field::L4_DST), &53u16.to_be_bytes());
        assert_eq!(k.get(field::FLAGS), &[0]);
        let t = MatchKey::of_frame(&frames::tcp6(true, false), port::PF);
        assert_eq!(t.get(field::ETH_TYPE), &[0x86, 0xdd]);
        assert_eq!(t.get(field::TCP_FLAGS), &[0, 0x02]);
    }

    #[test]
    fn a_tunnelled_frame_has_inner_and_outer_fields() {
        let inner = frames::udp4(7, 8, b"in");
        let k = MatchKey::of_frame(&frames::vxlan4(42, &inner), port::UPLINK);
        assert_eq!(k.get(field::FLAGS)[0] & flags::TUNNEL, flags::TUNNEL);
        assert_eq!(k.get(field::ENC_KEY_ID), &42u32.to_be_bytes());
        assert_eq!(k.get(field::ENC_DST_PORT), &4789u16.to_be_bytes());
        assert_eq!(k.get(field::L4_DST), &8u16.to_be_bytes());
        assert_ne!(k.get(field::ENC_IP_DST), &[0; 16]);
        let f = frames::vxlan4(42, &inner);
        // The outer header's TTL, not the inner one's.
        assert_eq!(k.get(field::ENC_IP_TTL), &[f[14 + 8]]);
    }

    #[test]
    fn a_non_ip_frame_has_l2_fields_only() {
        let mut arp = vec![0xffu8; 6];
        arp.extend_from_slice(&[2, 0, 0, 0, 0, 1, 0x08, 0x06]);
        arp.resize(60, 0);
        let k = MatchKey::of_frame(&arp, port::PF);
        assert_eq!(k.get(field::ETH_TYPE), &[0x08, 0x06]);
        assert_eq!(k.get(field::ETH_DST), &[0xff; 6]);
        assert_eq!(k.get(field::IP_PROTO), &[0]);
    }

    #[test]
    fn best_priority_wins_across_masks() {
        let mut c = Classifier::new(16);
        // Any UDP: prio 10. UDP to port 53: prio 5. Everything: prio 20.
        c.add(rule(1, 10, |k, m| {
            k.set(field::IP_PROTO, &[17]);
            m.set_all(field::IP_PROTO);
        }))
        .unwrap();
        c.add(rule(2, 5, |k, m| {
            k.set(field::IP_PROTO, &[17])
                .set(field::L4_DST, &53u16.to_be_bytes());
            m.set_all(field::IP_PROTO).set_all(field::L4_DST);
        }))
        .unwrap();
        c.add(rule(3, 20, |_, _| {})).unwrap();
        assert_eq!(c.masks(), 3);
        assert_eq!(c.lookup(&udp_to(53)), Some(2));
        assert_eq!(c.lookup(&udp_to(54)), Some(1));
        let tcp = MatchKey::of_frame(&frames::tcp6(true, false), port::UPLINK);
        assert_eq!(c.lookup(&tcp), Some(3));
        assert_eq!(c.remove(2).map(|r| r.id), Some(2));
        assert_eq!(c.lookup(&udp_to(53)), Some(1));
        assert_eq!(c.masks(), 2);
    }

    #[test]
    fn a_mask_with_a_better_best_rule_does_not_shadow_a_better_match() {
        let mut c = Classifier::new(16);
        // By protocol: TCP at prio 1, UDP at prio 50. By port: 53 at 10.
        for (id, prio, proto) in [(1, 1, 6u8), (2, 50, 17)] {
            c.add(rule(id, prio, |k, m| {
                k.set(field::IP_PROTO, &[proto]);
                m.set_all(field::IP_PROTO);
            }))
            .unwrap();
        }
        c.add(rule(3, 10, |k, m| {
            k.set(field::L4_DST, &53u16.to_be_bytes());
            m.set_all(field::L4_DST);
        }))
        .unwrap();
        assert_eq!(c.lookup(&udp_to(53)), Some(3));
        assert_eq!(c.lookup(&udp_to(54)), Some(2));
    }

    #[test]
    fn equal_priorities_go_to_the_rule_added_first() {
        let mut c = Classifier::new(16);
        c.add(rule(7, 1, |k, m| {
            k.set(field::L4_DST, &53u16.to_be_bytes());
            m.set_all(field::L4_DST);
        }))
        .unwrap();
        c.add(rule(8, 1, |k, m| {
            k.set(field::IP_PROTO, &[17]);
            m.set_all(field::IP_PROTO);
        }))
        .unwrap();
        assert_eq!(c.lookup(&udp_to(53)), Some(7));
        c.remove(7);
        c.add(rule(7, 1, |k, m| {
            k.set(field::L4_DST, &53u16.to_be_bytes());
            m.set_all(field::L4_DST);
        }))
        .unwrap();
        assert_eq!(c.lookup(&udp_to(53)), Some(8));
    }

    #[test]
    fn a_masked_bit_range_matches_a_prefix() {
        let mut c = Classifier::new(16);
        // 10.0.0.0/8 destination.
        c.add(rule(1, 1, |k, m| {
            k.set(field::IP_DST, &[10; 16]);
            m.set(field::IP_DST, &[0xff; 16]);
            m.0[field::IP_DST.0 + 1..field::IP_DST.0 + 16].fill(0);
        }))
        .unwrap();
        let mut k = udp_to(9);
        k.set(
            field::IP_DST,
            &[10, 9, 8, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        );
        assert_eq!(c.lookup(&k), Some(1));
        k.set(
            field::IP_DST,
            &[11, 9, 8, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        );
        assert_eq!(c.lookup(&k), None);
    }

    #[test]
    fn duplicates_and_a_full_table_are_refused_and_lose_nothing() {
        let mut c = Classifier::new(2);
        c.add(rule(1, 1, |_, _| {})).unwrap();
        assert_eq!(c.add(rule(1, 2, |_, _| {})), Err(AddError::Exists));
        c.add(rule(2, 2, |k, m| {
            k.set(field::IP_PROTO, &[6]);
            m.set_all(field::IP_PROTO);
        }))
        .unwrap();
        assert_eq!(c.add(rule(3, 0, |_, _| {})), Err(AddError::Full));
        assert_eq!(c.len(), 2);
        assert_eq!(c.lookup(&udp_to(1)), Some(1));
        assert!(c.remove(3).is_none());
        c.clear();
        assert!(c.is_empty());
        assert_eq!(c.lookup(&udp_to(1)), None);
    }
}
