// SPDX-License-Identifier: GPL-2.0

//! The exact-match flow table: flows in a slab of slots, found through a
//! hash index from key to slot, so a lookup costs one hash whatever the
//! number of flows. Slot numbers are the dump cursor.

use std::collections::HashMap;
use std::time::Instant;

use super::meter::TokenBucket;
use crate::hw::gft::{Action, FlowCounters, FlowKey, FlowRecord};

/// One installed flow.
#[derive(Clone, Debug)]
pub struct Flow {
    /// Its key.
    pub key: FlowKey,
    /// Policy generation it was installed under.
    pub generation: u32,
    /// What it does.
    pub action: Action,
    /// Packets that hit it.
    pub packets: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Packets its meter dropped.
    pub meter_drops: u64,
    /// Last hit, or the install.
    pub last_seen: Instant,
    /// The meter's bucket, if the action meters.
    pub meter: Option<TokenBucket>,
}

impl Flow {
    /// Counters as a dump reports them at `now`.
    pub fn counters(&self, now: Instant) -> FlowCounters {
        let idle = now.saturating_duration_since(self.last_seen).as_millis();
        FlowCounters {
            key: self.key,
            generation: self.generation,
            idle_ms: u32::try_from(idle).unwrap_or(u32::MAX),
            packets: self.packets,
            bytes: self.bytes,
            meter_drops: self.meter_drops,
            action_flags: self.action.flags,
        }
    }
}

/// Why an insert failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableFull;

/// The table.
#[derive(Debug)]
pub struct FlowTable {
    slots: Vec<Option<Flow>>,
    free: Vec<u32>,
    index: HashMap<FlowKey, u32>,
    capacity: u32,
}

impl FlowTable {
    /// An empty table for `capacity` flows.
    pub fn new(capacity: u32) -> Self {
        Self {
            slots: Vec::new(),
            free: Vec::new(),
            index: HashMap::new(),
            capacity,
        }
    }

    /// Flows held.
    pub fn len(&self) -> usize {
        self.index.len()
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

    /// The flow for `key`.
    pub fn get_mut(&mut self, key: &FlowKey) -> Option<&mut Flow> {
        let slot = *self.index.get(key)?;
        self.slots[slot as usize].as_mut()
    }

    /// Adds a flow or replaces the one with the same key (keeping its
    /// counters; the meter restarts if the action changed).
    pub fn insert(&mut self, rec: &FlowRecord, now: Instant) -> Result<(), TableFull> {
        let meter = |a: &Action| {
            (a.flags & crate::hw::gft::action::METER != 0)
                .then(|| TokenBucket::new(a.meter_rate, a.meter_burst, now))
        };
        if let Some(flow) = self.get_mut(&rec.key) {
            if flow.action != rec.action {
                flow.meter = meter(&rec.action);
            }
            flow.generation = rec.generation;
            flow.action = rec.action;
            return Ok(());
        }
        if self.len() >= self.capacity as usize {
            return Err(TableFull);
        }
        let flow = Flow {
            key: rec.key,
            generation: rec.generation,
            action: rec.action,
            packets: 0,
            bytes: 0,
            meter_drops: 0,
            last_seen: now,
            meter: meter(&rec.action),
        };
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Some(flow);
                slot
            }
            None => {
                self.slots.push(Some(flow));
                (self.slots.len() - 1) as u32
            }
        };
        self.index.insert(rec.key, slot);
        Ok(())
    }

    /// Removes the flow for `key`; false if there is none.
    pub fn remove(&mut self, key: &FlowKey) -> bool {
        match self.index.remove(key) {
            Some(slot) => {
                self.slots[slot as usize] = None;
                self.free.push(slot);
                true
            }
            None => false,
        }
    }

    /// Removes every flow.
    pub fn clear(&mut self) {
        self.slots.clear();
        self.free.clear();
        self.index.clear();
    }

    /// Up to `max` flows from slot `cursor` on, and the cursor after them
    /// (0 when the end was reached).
    pub fn walk(&self, cursor: u32, max: usize) -> (Vec<&Flow>, u32) {
        let mut out = Vec::new();
        let mut slot = cursor as usize;
        while slot < self.slots.len() && out.len() < max {
            if let Some(f) = &self.slots[slot] {
                out.push(f);
            }
            slot += 1;
        }
        let next = if slot >= self.slots.len() {
            0
        } else {
            slot as u32
        };
        (out, next)
    }

    /// Every flow, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = &Flow> {
        self.slots.iter().flatten()
    }
}
