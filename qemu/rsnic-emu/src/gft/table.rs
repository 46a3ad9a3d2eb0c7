// SPDX-License-Identifier: GPL-2.0

//! The exact-match flow table, laid out for lookups at memory speed (the
//! layout DPDK's `rte_hash` uses):
//!
//! - an index of 64-byte buckets, each with 8 ways of a 16-bit tag and a
//!   slot number; a key may live in two buckets (cuckoo hashing), its
//!   primary one and an alternate derived from its tag, so a lookup reads
//!   at most two bucket lines and compares full keys only where a tag
//!   matches;
//! - the flows in a slab of 64-byte [`Entry`] lines (key, generation,
//!   last hit, action and meter numbers), their counters in a second
//!   slab, actions shared between flows (most flows of a policy have the
//!   same one) and meters in side tables;
//! - no allocation and no lock of its own on the fast path; the engine
//!   that owns the table decides the locking;
//! - index, lines and counters in memory backed by 2 MiB pages where
//!   the kernel has them ([`HugeVec`]): a random line costs no page walk.
//!
//! Slot numbers are the dump cursor.

use std::collections::HashMap;
use std::time::Instant;

use super::meter::TokenBucket;
use super::slab::HugeVec;
use crate::hw::gft::{action, Action, FlowCounters, FlowKey, FlowRecord, ACTION_LEN, KEY_LEN};

/// Ways per bucket.
const WAYS: usize = 8;
/// A way that holds no flow.
const EMPTY: u32 = u32::MAX;
/// An entry without a meter; also marks a free slot's action.
const NONE: u32 = u32::MAX;
/// How many flows an insert may move to their other bucket to make room
/// before the index is rebuilt bigger.
const MAX_KICKS: usize = 64;

/// One bucket of the index: a cache line.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct Bucket {
    tags: [u16; WAYS],
    slots: [u32; WAYS],
}

impl Bucket {
    const EMPTY: Self = Self {
        tags: [0; WAYS],
        slots: [EMPTY; WAYS],
    };

    fn free_way(&self) -> Option<usize> {
        self.slots.iter().position(|&s| s == EMPTY)
    }
}

/// A flow's line: what a hit reads and writes.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct Entry {
    key: KeyWords,
    generation: u32,
    /// Last hit (or the install), in milliseconds since the table's epoch.
    last_seen_ms: u32,
    /// Index into the action table; [`NONE`] for a free slot.
    action: u32,
    /// Index into the meter table, or [`NONE`].
    meter: u32,
}

/// A flow's packet and byte counts.
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    packets: u64,
    bytes: u64,
}

/// A meter and what it dropped.
#[derive(Clone, Debug)]
struct Meter {
    bucket: TokenBucket,
    drops: u64,
}

/// Actions shared between the flows that have them, counted.
#[derive(Debug, Default)]
struct Actions {
    list: Vec<Action>,
    refs: Vec<u32>,
    ids: HashMap<[u8; ACTION_LEN], u32>,
    free: Vec<u32>,
}

impl Actions {
    fn get(&self, id: u32) -> &Action {
        &self.list[id as usize]
    }

    /// The number of `a`, shared if another flow has it; one more user.
    fn acquire(&mut self, a: &Action) -> u32 {
        let bytes = a.to_bytes();
        if let Some(&id) = self.ids.get(&bytes) {
            self.refs[id as usize] += 1;
            return id;
        }
        let id = match self.free.pop() {
            Some(id) => {
                self.list[id as usize] = *a;
                self.refs[id as usize] = 1;
                id
            }
            None => {
                self.list.push(*a);
                self.refs.push(1);
                (self.list.len() - 1) as u32
            }
        };
        self.ids.insert(bytes, id);
        id
    }

    /// One user fewer of action `id`.
    fn release(&mut self, id: u32) {
        let refs = &mut self.refs[id as usize];
        *refs -= 1;
        if *refs == 0 {
            self.ids.remove(&self.list[id as usize].to_bytes());
            self.free.push(id);
        }
    }

    /// Distinct actions held.
    fn len(&self) -> usize {
        self.ids.len()
    }
}

/// A key as the table holds and compares it: its bytes as words.
type KeyWords = [u64; KEY_LEN / 8];

/// Whether two keys are equal, compared word by word without a branch
/// (a 48-byte `==` is a call to `memcmp`).
fn same_key(a: &KeyWords, b: &KeyWords) -> bool {
    a.iter().zip(b).fold(0, |diff, (x, y)| diff | (x ^ y)) == 0
}

/// `k`'s bytes (as [`FlowKey::to_bytes`] lays them out) as words, put
/// together field by field: a lookup serializes no key.
fn key_words(k: &FlowKey) -> KeyWords {
    let tunnel = k.tunnel.map_or(0, |id| (1u32 << 31) | (id & 0xff_ffff));
    let half = |a: &[u8; 16], i: usize| {
        u64::from_le_bytes(a[8 * i..8 * i + 8].try_into().expect("8 bytes"))
    };
    [
        u64::from(k.vport)
            | u64::from(k.dir as u8) << 16
            | u64::from(k.ip_version) << 24
            | u64::from(k.proto) << 32,
        u64::from(tunnel) | u64::from(k.sport) << 32 | u64::from(k.dport) << 48,
        half(&k.src, 0),
        half(&k.src, 1),
        half(&k.dst, 0),
        half(&k.dst, 1),
    ]
}

fn key_bytes(k: &KeyWords) -> [u8; KEY_LEN] {
    let mut b = [0u8; KEY_LEN];
    for (chunk, w) in b.chunks_exact_mut(8).zip(k) {
        chunk.copy_from_slice(&w.to_le_bytes());
    }
    b
}

/// A key, hashed: what a lookup needs, computed once per packet.
#[derive(Clone, Copy, Debug)]
pub struct Probe {
    key: KeyWords,
    hash: u64,
}

impl Probe {
    /// The key's hash (seeded by its table; a new table, a new seed).
    pub fn hash(&self) -> u64 {
        self.hash
    }

    /// The key's IP protocol.
    pub fn proto(&self) -> u8 {
        // CAST: the byte at offset 4 of the key (the `key_words` layout).
        (self.key[0] >> 32) as u8
    }

    /// The key itself, put back together (for a packet that goes up).
    pub fn key(&self) -> FlowKey {
        FlowKey::from_bytes(&key_bytes(&self.key))
            .expect("the words of a key the engine parsed are a valid key")
    }
}

/// What a hit found: the flow's slot and what the engine applies.
#[derive(Clone, Copy, Debug)]
pub struct Hit<'a> {
    /// Policy generation it was installed under.
    pub generation: u32,
    /// What it does.
    pub action: &'a Action,
}

/// Why an insert failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableFull;

/// The table.
#[derive(Debug)]
pub struct FlowTable {
    buckets: HugeVec<Bucket>,
    entries: HugeVec<Entry>,
    counts: HugeVec<Counts>,
    actions: Actions,
    meters: Vec<Meter>,
    free_meters: Vec<u32>,
    free: Vec<u32>,
    len: usize,
    capacity: u32,
    /// Keys the hash from a seed of the table's own: a host cannot pick
    /// keys that collide on every card.
    seed: u64,
    epoch: Instant,
    /// Picks the way an insert takes over when both buckets are full.
    kicks: usize,
}

impl FlowTable {
    /// An empty table for `capacity` flows.
    pub fn new(capacity: u32) -> Self {
        Self {
            buckets: HugeVec::from_elem(Bucket::EMPTY, 16),
            entries: HugeVec::new(),
            counts: HugeVec::new(),
            actions: Actions::default(),
            meters: Vec::new(),
            free_meters: Vec::new(),
            free: Vec::new(),
            len: 0,
            capacity,
            seed: fastrand::u64(..) | 1,
            epoch: Instant::now(),
            kicks: 0,
        }
    }

    /// Flows held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Capacity.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Changes the capacity; refused below the flows held.
    pub fn set_capacity(&mut self, capacity: u32) -> Result<(), TableFull> {
        if (capacity as usize) < self.len() {
            return Err(TableFull);
        }
        self.capacity = capacity;
        Ok(())
    }

    /// Bytes the table holds per flow (index, entry, counters; meters and
    /// distinct actions beside), for the documentation and the tests.
    pub fn bytes_per_flow(&self) -> usize {
        let index = self.buckets.len() * std::mem::size_of::<Bucket>();
        let slab =
            self.entries.len() * (std::mem::size_of::<Entry>() + std::mem::size_of::<Counts>());
        let actions = self.actions.len() * (std::mem::size_of::<Action>() + ACTION_LEN + 16);
        let meters = self.meters.len() * std::mem::size_of::<Meter>();
        (index + slab + actions + meters) / self.len.max(1)
    }

    fn mask(&self) -> usize {
        self.buckets.len() - 1
    }

    /// The probe for `key`.
    pub fn probe(&self, key: &FlowKey) -> Probe {
        let key = key_words(key);
        Probe {
            key,
            hash: self.hash(&key),
        }
    }

    fn hash(&self, key: &KeyWords) -> u64 {
        let mut h = self.seed;
        for &w in key {
            h = (h ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            h ^= h >> 32;
        }
        h ^= h >> 29;
        h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
        h ^= h >> 32;
        h
    }

    fn tag(hash: u64) -> u16 {
        // CAST: the top 16 bits.
        (hash >> 48) as u16
    }

    fn primary(&self, hash: u64) -> usize {
        // CAST: only the bits under the mask are kept.
        (hash as usize) & self.mask()
    }

    /// The other bucket of a key with `tag` in `bucket`: the same
    /// function leads back, and never to the same bucket.
    fn alternate(&self, bucket: usize, tag: u16) -> usize {
        (bucket ^ (usize::from(tag).wrapping_mul(0x5bd1_e995) | 1)) & self.mask()
    }

    /// Asks the CPU to start loading `p`'s primary bucket (a burst of
    /// lookups overlaps their misses this way).
    pub fn prefetch(&self, p: &Probe) {
        prefetch(&self.buckets[self.primary(p.hash)]);
    }

    /// Asks the CPU to start loading slot `slot`'s entry and counters.
    pub fn prefetch_slot(&self, slot: u32) {
        prefetch(&self.entries[slot as usize]);
        prefetch(&self.counts[slot as usize]);
    }

    /// The first slot whose tag matches `p`'s in its buckets, without
    /// reading any flow's line: what a burst asks the CPU for before it
    /// compares keys ([`Self::find_from`]). `None` is a sure miss.
    pub fn candidate(&self, p: &Probe) -> Option<u32> {
        let tag = Self::tag(p.hash);
        let first = self.primary(p.hash);
        [first, self.alternate(first, tag)]
            .into_iter()
            .find_map(|b| {
                let b = &self.buckets[b];
                (0..WAYS)
                    .find(|&w| b.tags[w] == tag && b.slots[w] != EMPTY)
                    .map(|w| b.slots[w])
            })
    }

    /// The slot holding `p`'s key, given [`Self::candidate`]'s answer: the
    /// candidate's key compared, a full [`Self::find`] only where its tag
    /// matched another key's.
    pub fn find_from(&self, p: &Probe, candidate: Option<u32>) -> Option<u32> {
        let slot = candidate?;
        if same_key(&self.entries[slot as usize].key, &p.key) {
            Some(slot)
        } else {
            self.find(p)
        }
    }

    /// The slot holding `p`'s key.
    pub fn find(&self, p: &Probe) -> Option<u32> {
        let tag = Self::tag(p.hash);
        let first = self.primary(p.hash);
        [first, self.alternate(first, tag)]
            .into_iter()
            .find_map(|b| self.find_in(b, tag, &p.key))
    }

    fn find_in(&self, bucket: usize, tag: u16, key: &KeyWords) -> Option<u32> {
        let b = &self.buckets[bucket];
        (0..WAYS)
            .filter(|&w| b.tags[w] == tag && b.slots[w] != EMPTY)
            .map(|w| b.slots[w])
            .find(|&s| same_key(&self.entries[s as usize].key, key))
    }

    /// What slot `slot` holds.
    pub fn hit(&self, slot: u32) -> Hit<'_> {
        let e = &self.entries[slot as usize];
        Hit {
            generation: e.generation,
            action: self.actions.get(e.action),
        }
    }

    /// Counts a packet of `len` bytes on slot `slot` at `now`
    /// ([`Self::ms`] of it in `now_ms`); returns whether its meter (if
    /// any) lets it through.
    pub fn count(&mut self, slot: u32, len: usize, now: Instant, now_ms: u32) -> bool {
        let e = &mut self.entries[slot as usize];
        e.last_seen_ms = now_ms;
        let c = &mut self.counts[slot as usize];
        c.packets += 1;
        c.bytes += len as u64;
        if e.meter == NONE {
            return true;
        }
        let m = &mut self.meters[e.meter as usize];
        let conforms = m.bucket.admit(len, now);
        if !conforms {
            m.drops += 1;
        }
        conforms
    }

    /// `now` as the flow lines keep it: milliseconds since the epoch.
    pub fn ms(&self, now: Instant) -> u32 {
        // CAST: wraps after 49 days; idle times are differences.
        now.saturating_duration_since(self.epoch).as_millis() as u32
    }

    fn new_meter(&mut self, a: &Action, now: Instant) -> u32 {
        if a.flags & action::METER == 0 {
            return NONE;
        }
        let m = Meter {
            bucket: TokenBucket::new(a.meter_rate, a.meter_burst, now),
            drops: 0,
        };
        match self.free_meters.pop() {
            Some(id) => {
                self.meters[id as usize] = m;
                id
            }
            None => {
                self.meters.push(m);
                (self.meters.len() - 1) as u32
            }
        }
    }

    fn drop_meter(&mut self, id: u32) {
        if id != NONE {
            self.free_meters.push(id);
        }
    }

    /// Adds a flow or replaces the one with the same key (keeping its
    /// counters; the meter restarts if the action changed).
    pub fn insert(&mut self, rec: &FlowRecord, now: Instant) -> Result<(), TableFull> {
        let probe = self.probe(&rec.key);
        if let Some(slot) = self.find(&probe) {
            let e = self.entries[slot as usize];
            if *self.actions.get(e.action) != rec.action {
                let action = self.actions.acquire(&rec.action);
                self.actions.release(e.action);
                self.drop_meter(e.meter);
                let meter = self.new_meter(&rec.action, now);
                let e = &mut self.entries[slot as usize];
                (e.action, e.meter) = (action, meter);
            }
            self.entries[slot as usize].generation = rec.generation;
            return Ok(());
        }
        if self.len >= self.capacity as usize {
            return Err(TableFull);
        }
        // Keep the index at most 7/8 full: cuckoo paths stay short.
        if (self.len + 1) * 8 > self.buckets.len() * WAYS * 7 {
            self.grow();
        }
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                self.entries.push(Entry {
                    key: [0; KEY_LEN / 8],
                    generation: 0,
                    last_seen_ms: 0,
                    action: NONE,
                    meter: NONE,
                });
                self.counts.push(Counts::default());
                (self.entries.len() - 1) as u32
            }
        };
        // The entry first: the index is rebuilt from the live entries.
        let action = self.actions.acquire(&rec.action);
        let meter = self.new_meter(&rec.action, now);
        self.entries[slot as usize] = Entry {
            key: probe.key,
            generation: rec.generation,
            last_seen_ms: self.ms(now),
            action,
            meter,
        };
        self.counts[slot as usize] = Counts::default();
        self.len += 1;
        if !self.place(probe.hash, slot) {
            // A flow left without a way (rare below 7/8 full).
            self.grow();
        }
        Ok(())
    }

    /// Puts `slot` (whose key hashes to `hash`) into the index: a free
    /// way in either of its buckets, or else the way of a flow that moves
    /// to its own other bucket, and so on for at most [`MAX_KICKS`]
    /// moves. False if a flow is left without a way then: the index must
    /// be rebuilt ([`Self::grow`]), from the entries, which hold them all.
    fn place(&mut self, hash: u64, slot: u32) -> bool {
        let (mut tag, mut slot) = (Self::tag(hash), slot);
        let first = self.primary(hash);
        let mut b = self.alternate(first, tag);
        for c in [first, b] {
            if let Some(w) = self.buckets[c].free_way() {
                self.buckets[c].tags[w] = tag;
                self.buckets[c].slots[w] = slot;
                return true;
            }
        }
        for _ in 0..MAX_KICKS {
            self.kicks = self.kicks.wrapping_add(1);
            let w = self.kicks % WAYS;
            let bucket = &mut self.buckets[b];
            std::mem::swap(&mut bucket.tags[w], &mut tag);
            std::mem::swap(&mut bucket.slots[w], &mut slot);
            b = self.alternate(b, tag);
            if let Some(w) = self.buckets[b].free_way() {
                self.buckets[b].tags[w] = tag;
                self.buckets[b].slots[w] = slot;
                return true;
            }
        }
        false
    }

    /// Doubles the index (and again while a flow finds no way) and puts
    /// every live flow back.
    fn grow(&mut self) {
        let mut size = self.buckets.len() * 2;
        'bigger: loop {
            self.buckets = HugeVec::from_elem(Bucket::EMPTY, size);
            for slot in 0..self.entries.len() {
                if self.entries[slot].action == NONE {
                    continue;
                }
                let hash = self.hash(&self.entries[slot].key);
                // CAST: slots are numbered in u32.
                if !self.place(hash, slot as u32) {
                    size *= 2;
                    continue 'bigger;
                }
            }
            return;
        }
    }

    /// Removes the flow for `key`; false if there is none.
    pub fn remove(&mut self, key: &FlowKey) -> bool {
        let probe = self.probe(key);
        let tag = Self::tag(probe.hash);
        let first = self.primary(probe.hash);
        for b in [first, self.alternate(first, tag)] {
            let Some(slot) = self.find_in(b, tag, &probe.key) else {
                continue;
            };
            let w = self.buckets[b]
                .slots
                .iter()
                .position(|&s| s == slot)
                .expect("found in this bucket");
            self.buckets[b].slots[w] = EMPTY;
            let e = self.entries[slot as usize];
            self.actions.release(e.action);
            self.drop_meter(e.meter);
            self.entries[slot as usize].action = NONE;
            self.free.push(slot);
            self.len -= 1;
            return true;
        }
        false
    }

    /// Removes every flow.
    pub fn clear(&mut self) {
        let capacity = self.capacity;
        *self = Self::new(capacity);
    }

    /// Counters of slot `slot`'s flow as a dump reports them at `now`.
    fn counters(&self, slot: usize, now: Instant) -> FlowCounters {
        let e = &self.entries[slot];
        let c = &self.counts[slot];
        FlowCounters {
            key: FlowKey::from_bytes(&key_bytes(&e.key)).expect("a key the table took"),
            generation: e.generation,
            idle_ms: self.ms(now).wrapping_sub(e.last_seen_ms),
            packets: c.packets,
            bytes: c.bytes,
            meter_drops: if e.meter == NONE {
                0
            } else {
                self.meters[e.meter as usize].drops
            },
            action_flags: self.actions.get(e.action).flags,
        }
    }

    /// Up to `max` flows' counters at `now` from slot `cursor` on, and
    /// the cursor after them (0 when the end was reached).
    pub fn walk(&self, cursor: u32, max: usize, now: Instant) -> (Vec<FlowCounters>, u32) {
        let mut out = Vec::new();
        let mut slot = cursor as usize;
        while slot < self.entries.len() && out.len() < max {
            if self.entries[slot].action != NONE {
                out.push(self.counters(slot, now));
            }
            slot += 1;
        }
        let next = if slot >= self.entries.len() {
            0
        } else {
            slot as u32
        };
        (out, next)
    }

    /// Every flow's counters at `now`, in slot order.
    pub fn iter(&self, now: Instant) -> impl Iterator<Item = FlowCounters> + '_ {
        (0..self.entries.len())
            .filter(|&s| self.entries[s].action != NONE)
            .map(move |s| self.counters(s, now))
    }
}

/// Starts loading the cache line at `p`; a hint, never a fault.
fn prefetch<T>(p: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint that reads nothing architecturally and
    // cannot fault; `p` is a valid reference anyway.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            (p as *const T).cast(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::gft::{proto, Direction, HOST_VPORT};

    fn key(i: u32) -> FlowKey {
        let mut src = [0u8; 16];
        src[..4].copy_from_slice(&i.to_be_bytes());
        FlowKey {
            vport: HOST_VPORT,
            dir: Direction::Tx,
            tunnel: None,
            ip_version: 4,
            proto: proto::UDP,
            src,
            dst: [0; 16],
            sport: 1,
            dport: 2,
        }
    }

    fn rec(i: u32, action: Action) -> FlowRecord {
        FlowRecord {
            key: key(i),
            generation: 0,
            action,
        }
    }

    #[test]
    fn key_words_are_the_keys_bytes() {
        let mut k = key(0x0102_0304);
        k.dir = Direction::Rx;
        k.proto = proto::TCP;
        k.src = [0xa5; 16];
        k.dst[15] = 0x77;
        for (tunnel, ip_version) in [(None, 4), (Some(0xab_cdef), 6)] {
            (k.tunnel, k.ip_version) = (tunnel, ip_version);
            let words = key_words(&k);
            assert_eq!(key_bytes(&words), k.to_bytes());
            assert_eq!(FlowKey::from_bytes(&key_bytes(&words)), Some(k));
            let probe = FlowTable::new(1).probe(&k);
            assert_eq!((probe.key(), probe.proto()), (k, proto::TCP));
        }
    }

    #[test]
    fn holds_its_capacity_finds_every_flow_and_forgets_removed_ones() {
        let now = Instant::now();
        let n = 100_000;
        let mut t = FlowTable::new(n);
        for i in 0..n {
            t.insert(&rec(i, Action::default()), now).unwrap();
        }
        assert_eq!(t.len(), n as usize);
        assert_eq!(t.insert(&rec(n, Action::default()), now), Err(TableFull));
        for i in 0..n {
            assert!(t.find(&t.probe(&key(i))).is_some(), "flow {i}");
        }
        for i in (0..n).step_by(2) {
            assert!(t.remove(&key(i)));
            assert!(!t.remove(&key(i)));
        }
        for i in 0..n {
            assert_eq!(t.find(&t.probe(&key(i))).is_some(), i % 2 == 1, "flow {i}");
        }
        // Freed slots are taken again: the slab does not grow.
        let slab = t.entries.len();
        for i in (0..n).step_by(2) {
            t.insert(&rec(i, Action::default()), now).unwrap();
        }
        assert_eq!((t.len(), t.entries.len()), (n as usize, slab));
    }

    #[test]
    fn flows_share_actions_and_give_them_back() {
        let now = Instant::now();
        let mut t = FlowTable::new(16);
        let nat = Action {
            flags: action::NAT_DST_PORT,
            nat_dport: 9,
            ..Default::default()
        };
        for i in 0..4 {
            t.insert(&rec(i, nat), now).unwrap();
        }
        assert_eq!(t.actions.len(), 1);
        // A changed action is a new one; the old one loses a user.
        t.insert(&rec(0, Action::default()), now).unwrap();
        assert_eq!(t.actions.len(), 2);
        for i in 1..4 {
            t.remove(&key(i));
        }
        assert_eq!(t.actions.len(), 1, "the NAT action went with its last flow");
        let slot = t.find(&t.probe(&key(0))).unwrap();
        assert_eq!(*t.hit(slot).action, Action::default());
    }

    #[test]
    fn counts_hits_and_meters_per_flow() {
        let now = Instant::now();
        let mut t = FlowTable::new(16);
        let meter = Action {
            flags: action::METER,
            meter_rate: 8000,
            meter_burst: 2100,
            ..Default::default()
        };
        t.insert(&rec(1, meter), now).unwrap();
        let slot = t.find(&t.probe(&key(1))).unwrap();
        let passed = (0..5)
            .filter(|_| t.count(slot, 1000, now, t.ms(now)))
            .count();
        assert_eq!(passed, 2, "the burst holds two frames");
        let c = t.iter(now).next().unwrap();
        assert_eq!((c.packets, c.bytes, c.meter_drops), (5, 5000, 3));
        // Reinstalled with the same action: counters and meter stay.
        t.insert(&rec(1, meter), now).unwrap();
        assert!(!t.count(slot, 1000, now, t.ms(now)));
        assert_eq!(t.iter(now).next().unwrap().meter_drops, 4);
    }

    #[test]
    fn a_dump_walks_every_flow_once_across_cursors() {
        let now = Instant::now();
        let mut t = FlowTable::new(1000);
        for i in 0..1000 {
            t.insert(&rec(i, Action::default()), now).unwrap();
        }
        for i in (0..1000).step_by(3) {
            t.remove(&key(i));
        }
        let (mut seen, mut cursor) = (Vec::new(), 0);
        loop {
            let (flows, next) = t.walk(cursor, 64, now);
            seen.extend(flows.iter().map(|c| c.key));
            if next == 0 {
                break;
            }
            cursor = next;
        }
        assert_eq!(seen.len(), t.len());
        let mut ids: Vec<u32> = seen
            .iter()
            .map(|k| u32::from_be_bytes(k.src[..4].try_into().unwrap()))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), t.len());
        assert!(ids.iter().all(|i| i % 3 != 0));
    }

    #[test]
    fn the_index_fills_past_seven_eighths_before_it_grows() {
        let now = Instant::now();
        let mut t = FlowTable::new(1 << 20);
        for i in 0..200_000 {
            t.insert(&rec(i, Action::default()), now).unwrap();
        }
        let load = t.len() as f64 / (t.buckets.len() * WAYS) as f64;
        assert!(load > 0.38, "load {load}");
        assert!(
            t.bytes_per_flow() < 128,
            "{} bytes per flow",
            t.bytes_per_flow()
        );
    }
}
