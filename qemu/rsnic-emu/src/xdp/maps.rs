// SPDX-License-Identifier: GPL-2.0

//! The card's BPF maps: arrays and hash tables the offloaded program
//! reaches through its helpers and the host through admin commands.

use std::collections::HashMap;

/// `BPF_MAP_TYPE_HASH`.
pub const MAP_TYPE_HASH: u32 = 1;
/// `BPF_MAP_TYPE_ARRAY`.
pub const MAP_TYPE_ARRAY: u32 = 2;

/// Update flags (`BPF_ANY`, `BPF_NOEXIST`, `BPF_EXIST`).
pub mod update {
    /// Create or replace.
    pub const ANY: u64 = 0;
    /// Create only.
    pub const NOEXIST: u64 = 1;
    /// Replace only.
    pub const EXIST: u64 = 2;
}

/// Errors as the helpers return them (negative errno).
pub mod err {
    /// No such element.
    pub const ENOENT: i64 = -2;
    /// The map is full.
    pub const E2BIG: i64 = -7;
    /// The element exists (`BPF_NOEXIST`).
    pub const EEXIST: i64 = -17;
    /// A bad argument (flags, an array's delete, an index past its end).
    pub const EINVAL: i64 = -22;
}

/// What the interpreter needs of the maps.
pub trait Maps {
    /// A map's key and value sizes; `None` if it does not exist.
    fn sizes(&self, map: u32) -> Option<(usize, usize)>;
    /// The element of `key`, if present.
    fn lookup(&mut self, map: u32, key: &[u8]) -> Option<u32>;
    /// The value of element `elem`.
    fn value(&mut self, map: u32, elem: u32) -> Option<&mut [u8]>;
    /// `bpf_map_update_elem`: 0 or a negative errno.
    fn update(&mut self, map: u32, key: &[u8], value: &[u8], flags: u64) -> i64;
    /// `bpf_map_delete_elem`: 0 or a negative errno.
    fn delete(&mut self, map: u32, key: &[u8]) -> i64;
}

/// One map.
#[derive(Debug)]
enum Map {
    Array {
        value_size: usize,
        values: Vec<u8>,
    },
    Hash {
        key_size: usize,
        value_size: usize,
        max_entries: usize,
        slots: Vec<Option<(Vec<u8>, Vec<u8>)>>,
        index: HashMap<Vec<u8>, u32>,
    },
}

/// The card's maps, by number.
#[derive(Debug, Default)]
pub struct MapTable {
    maps: HashMap<u32, Map>,
}

/// Why a map cannot be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapError {
    /// A type the card does not keep.
    BadType,
    /// Sizes out of range (an array's key must be 4 bytes).
    BadSize,
    /// The number is taken.
    Exists,
}

/// Largest key, largest value and most entries a card map takes
/// ([`crate::hw::xdp`]'s, as sizes here).
pub const MAX_KEY: usize = crate::hw::xdp::MAX_KEY as usize;
/// Largest value.
pub const MAX_VALUE: usize = crate::hw::xdp::MAX_VALUE as usize;
/// Most entries.
pub const MAX_ENTRIES: usize = crate::hw::xdp::MAX_ENTRIES as usize;

impl MapTable {
    /// Makes map `id`.
    pub fn create(
        &mut self,
        id: u32,
        map_type: u32,
        key_size: usize,
        value_size: usize,
        max_entries: usize,
    ) -> Result<(), MapError> {
        if self.maps.contains_key(&id) {
            return Err(MapError::Exists);
        }
        if key_size == 0
            || key_size > MAX_KEY
            || value_size == 0
            || value_size > MAX_VALUE
            || max_entries == 0
            || max_entries > MAX_ENTRIES
        {
            return Err(MapError::BadSize);
        }
        let map = match map_type {
            MAP_TYPE_ARRAY if key_size == 4 => Map::Array {
                value_size,
                values: vec![0; value_size * max_entries],
            },
            MAP_TYPE_ARRAY => return Err(MapError::BadSize),
            MAP_TYPE_HASH => Map::Hash {
                key_size,
                value_size,
                max_entries,
                slots: Vec::new(),
                index: HashMap::new(),
            },
            _ => return Err(MapError::BadType),
        };
        self.maps.insert(id, map);
        Ok(())
    }

    /// Forgets map `id`; false if there was none.
    pub fn destroy(&mut self, id: u32) -> bool {
        self.maps.remove(&id).is_some()
    }

    /// The key after `key` (the first with `None`), for the host's
    /// walk; `None` at the end.
    pub fn next_key(&self, map: u32, key: Option<&[u8]>) -> Option<Vec<u8>> {
        match self.maps.get(&map)? {
            Map::Array { value_size, values } => {
                let n = (values.len() / value_size) as u32;
                let next = match key.map(array_index) {
                    None | Some(None) => 0,
                    Some(Some(i)) if i >= n => 0,
                    Some(Some(i)) => i + 1,
                };
                (next < n).then(|| next.to_le_bytes().to_vec())
            }
            Map::Hash { slots, index, .. } => {
                let start = key
                    .and_then(|k| index.get(k))
                    .map_or(0, |&i| i as usize + 1);
                slots[start.min(slots.len())..]
                    .iter()
                    .flatten()
                    .map(|(k, _)| k.clone())
                    .next()
            }
        }
    }
}

fn array_index(key: &[u8]) -> Option<u32> {
    Some(u32::from_le_bytes(key.try_into().ok()?))
}

impl Maps for MapTable {
    fn sizes(&self, map: u32) -> Option<(usize, usize)> {
        match self.maps.get(&map)? {
            Map::Array { value_size, .. } => Some((4, *value_size)),
            Map::Hash {
                key_size,
                value_size,
                ..
            } => Some((*key_size, *value_size)),
        }
    }

    fn lookup(&mut self, map: u32, key: &[u8]) -> Option<u32> {
        match self.maps.get(&map)? {
            Map::Array { value_size, values } => {
                let i = array_index(key)?;
                ((i as usize) < values.len() / value_size).then_some(i)
            }
            Map::Hash { index, .. } => index.get(key).copied(),
        }
    }

    fn value(&mut self, map: u32, elem: u32) -> Option<&mut [u8]> {
        match self.maps.get_mut(&map)? {
            Map::Array { value_size, values } => {
                let at = elem as usize * *value_size;
                values.get_mut(at..at + *value_size)
            }
            Map::Hash { slots, .. } => slots
                .get_mut(elem as usize)?
                .as_mut()
                .map(|(_, v)| v.as_mut_slice()),
        }
    }

    fn update(&mut self, map: u32, key: &[u8], value: &[u8], flags: u64) -> i64 {
        if flags > update::EXIST {
            return err::EINVAL;
        }
        let Some(m) = self.maps.get_mut(&map) else {
            return err::EINVAL;
        };
        match m {
            Map::Array { value_size, values } => {
                let Some(i) = array_index(key) else {
                    return err::EINVAL;
                };
                let at = i as usize * *value_size;
                if at + *value_size > values.len() || value.len() != *value_size {
                    return err::EINVAL;
                }
                // Every element of an array exists.
                if flags == update::NOEXIST {
                    return err::EEXIST;
                }
                values[at..at + *value_size].copy_from_slice(value);
                0
            }
            Map::Hash {
                key_size,
                value_size,
                max_entries,
                slots,
                index,
            } => {
                if key.len() != *key_size || value.len() != *value_size {
                    return err::EINVAL;
                }
                match (index.get(key), flags) {
                    (Some(_), update::NOEXIST) => err::EEXIST,
                    (Some(&i), _) => {
                        if let Some((_, v)) = slots[i as usize].as_mut() {
                            v.copy_from_slice(value);
                        }
                        0
                    }
                    (None, update::EXIST) => err::ENOENT,
                    (None, _) if index.len() >= *max_entries => err::E2BIG,
                    (None, _) => {
                        let entry = Some((key.to_vec(), value.to_vec()));
                        let i = match slots.iter().position(Option::is_none) {
                            Some(i) => {
                                slots[i] = entry;
                                i
                            }
                            None => {
                                slots.push(entry);
                                slots.len() - 1
                            }
                        };
                        // CAST: at most MAX_ENTRIES slots.
                        index.insert(key.to_vec(), i as u32);
                        0
                    }
                }
            }
        }
    }

    fn delete(&mut self, map: u32, key: &[u8]) -> i64 {
        match self.maps.get_mut(&map) {
            Some(Map::Hash { slots, index, .. }) => match index.remove(key) {
                Some(i) => {
                    slots[i as usize] = None;
                    0
                }
                None => err::ENOENT,
            },
            // An array's elements cannot be deleted.
            Some(Map::Array { .. }) | None => err::EINVAL,
        }
    }
}
