// SPDX-License-Identifier: GPL-2.0

//! The driver's table of installed flows: a hash table by flow key.
//!
//! Under a flood of new flows the mirror's lookups were most of an
//! install's cost: a red-black tree of 32k flows is sixteen key compares
//! a walk, each field by field, and a new flow took three walks. Here a
//! lookup hashes the key once and compares one or two keys. The hash is
//! SipHash under a random secret: keys come from the network, and a
//! sender must not be able to choose keys that collide.
//!
//! Open addressing with linear probing over an array of slots, at most
//! half full; a slot holds the hash's low 32 bits (its home and a tag
//! that spares most key compares) and an index into a dense array of the
//! entries. A removal shifts the rest of its run back (no tombstones) and
//! moves the last entry into the hole, so iterating visits only flows.

use kernel::{
    alloc::{AllocError, KVVec},
    prelude::*,
};

use crate::hw::gft::FlowKey;
use crate::linux::hash::SipKey;

/// An empty slot.
const EMPTY: u64 = 0;
/// The fewest slots of a table that holds anything.
const MIN_SLOTS: usize = 64;

/// A slot for the entry at `index` whose key hashed to `hash`.
fn slot(hash: u32, index: usize) -> u64 {
    // CAST: entries are fewer than slots, which are fewer than 2^31.
    (u64::from(hash) << 32) | (index as u64 + 1)
}

/// The hash a full slot was filed under.
fn slot_hash(s: u64) -> u32 {
    // CAST: the high half.
    (s >> 32) as u32
}

/// The entry a full slot points to.
fn slot_index(s: u64) -> usize {
    // CAST: the low half, at most the number of entries.
    (s & 0xffff_ffff) as usize - 1
}

/// The first empty slot of `slots` (a power of two long, less than full)
/// from `hash`'s home on.
fn first_empty(slots: &[u64], hash: u32) -> usize {
    let mask = slots.len() - 1;
    // CAST: u32 to usize does not narrow on the kernel's targets.
    let mut at = hash as usize & mask;
    while slots[at] != EMPTY {
        at = (at + 1) & mask;
    }
    at
}

/// Flows by key, each with a `V`.
pub(super) struct FlowMap<V> {
    secret: SipKey,
    /// A power of two long (or empty); [`EMPTY`] or a [`slot`].
    slots: KVVec<u64>,
    entries: KVVec<(FlowKey, V)>,
}

/// Where a key is, or would go.
enum Probe {
    /// The slot of its entry.
    Found(usize),
    /// The empty slot that ends its run.
    Vacant(usize),
}

/// A key's place in a [`FlowMap`], from [`FlowMap::entry`].
pub(super) enum Entry<'a, V> {
    /// The key is there, with this value.
    Occupied(&'a mut V),
    /// The key is not there.
    Vacant(VacantEntry<'a, V>),
}

/// A key not in the map, with its hash and the empty slot its probe
/// ended at.
pub(super) struct VacantEntry<'a, V> {
    map: &'a mut FlowMap<V>,
    key: FlowKey,
    hash: u32,
    at: usize,
}

impl<V> VacantEntry<'_, V> {
    /// Adds the key with `value`; fails, changing nothing, without memory.
    pub(super) fn insert(self, value: V) -> Result<(), AllocError> {
        let map = self.map;
        map.entries.reserve(1, GFP_KERNEL)?;
        let mut at = self.at;
        if (map.entries.len() + 1) * 2 > map.slots.len() {
            map.grow()?;
            // The key is not there: its place is the first empty slot.
            at = first_empty(&map.slots, self.hash);
        }
        map.slots[at] = slot(self.hash, map.entries.len());
        map.entries.push((self.key, value), GFP_KERNEL)
    }
}

impl<V> FlowMap<V> {
    /// An empty map with a fresh secret.
    pub(super) fn new() -> Self {
        Self {
            secret: SipKey::random(),
            slots: KVVec::new(),
            entries: KVVec::new(),
        }
    }

    /// How many flows it holds.
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Forgets every flow (and frees the table).
    pub(super) fn clear(&mut self) {
        self.slots = KVVec::new();
        self.entries = KVVec::new();
    }

    fn hash(&self, key: &FlowKey) -> u32 {
        // CAST: the low half of the 64-bit hash.
        self.secret.hash(&key.to_bytes()) as u32
    }

    /// `key`'s slot, or the empty slot where it would go. The table is
    /// never more than half full, so a probe ends.
    fn probe(&self, key: &FlowKey, hash: u32) -> Probe {
        let mask = self.slots.len().wrapping_sub(1);
        // CAST: u32 to usize does not narrow on the kernel's targets.
        let mut at = hash as usize & mask;
        loop {
            match self.slots.get(at) {
                None | Some(&EMPTY) => return Probe::Vacant(at),
                Some(&s)
                    if slot_hash(s) == hash
                        && self
                            .entries
                            .get(slot_index(s))
                            .is_some_and(|(k, _)| k == key) =>
                {
                    return Probe::Found(at)
                }
                Some(_) => at = (at + 1) & mask,
            }
        }
    }

    /// Doubles the slots (to [`MIN_SLOTS`] at first) and files every entry
    /// again; fails, changing nothing, without memory.
    fn grow(&mut self) -> Result<(), AllocError> {
        let len = (self.slots.len() * 2).max(MIN_SLOTS);
        let mut slots = KVVec::from_elem(EMPTY, len, GFP_KERNEL)?;
        for &s in self.slots.iter().filter(|&&s| s != EMPTY) {
            let at = first_empty(&slots, slot_hash(s));
            slots[at] = s;
        }
        self.slots = slots;
        Ok(())
    }

    /// The value of `key`.
    pub(super) fn get(&self, key: &FlowKey) -> Option<&V> {
        match self.probe(key, self.hash(key)) {
            Probe::Found(at) => self.entries.get(slot_index(self.slots[at])).map(|(_, v)| v),
            Probe::Vacant(_) => None,
        }
    }

    /// The value of `key`, to change.
    pub(super) fn get_mut(&mut self, key: &FlowKey) -> Option<&mut V> {
        match self.probe(key, self.hash(key)) {
            Probe::Found(at) => {
                let i = slot_index(self.slots[at]);
                self.entries.get_mut(i).map(|(_, v)| v)
            }
            Probe::Vacant(_) => None,
        }
    }

    /// `key`'s place: its value or where it would go, found with one hash.
    pub(super) fn entry(&mut self, key: FlowKey) -> Entry<'_, V> {
        let hash = self.hash(&key);
        match self.probe(&key, hash) {
            Probe::Found(at) => {
                let i = slot_index(self.slots[at]);
                Entry::Occupied(&mut self.entries[i].1)
            }
            Probe::Vacant(at) => Entry::Vacant(VacantEntry {
                map: self,
                key,
                hash,
                at,
            }),
        }
    }

    /// Removes `key`, giving its value back.
    pub(super) fn remove(&mut self, key: &FlowKey) -> Option<V> {
        let Probe::Found(mut hole) = self.probe(key, self.hash(key)) else {
            return None;
        };
        let index = slot_index(self.slots[hole]);
        // Shift the run back over the hole: a slot moves into it unless
        // its home lies after the hole (cyclically), where a probe for it
        // starts past the hole.
        let mask = self.slots.len() - 1;
        let mut next = (hole + 1) & mask;
        while self.slots[next] != EMPTY {
            let s = self.slots[next];
            // CAST: as in `probe`.
            let home = slot_hash(s) as usize & mask;
            if next.wrapping_sub(home) & mask >= next.wrapping_sub(hole) & mask {
                self.slots[hole] = s;
                hole = next;
            }
            next = (next + 1) & mask;
        }
        self.slots[hole] = EMPTY;
        // The last entry moves into the removed one's place: its slot
        // follows.
        let last = self.entries.len() - 1;
        if index != last {
            self.entries.swap(index, last);
            let moved = self.hash(&self.entries[index].0);
            let mut at = moved as usize & mask;
            while self.slots[at] != slot(moved, last) {
                at = (at + 1) & mask;
            }
            self.slots[at] = slot(moved, index);
        }
        self.entries.pop().map(|(_, v)| v)
    }

    /// Every flow, in no particular order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&FlowKey, &V)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }
}
