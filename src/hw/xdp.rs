// SPDX-License-Identifier: GPL-2.0

//! XDP offload: the card runs an eBPF XDP program on each frame it
//! receives from the wire, before the GFT and the queues, with BPF maps
//! of its own ([`super::feature::XDP_OFFLOAD`]).

/// Instructions a program may have.
pub const MAX_INSNS: u32 = 4096;

/// Room for a key at the start of an [`super::AdminCmd::XdpMapElem`]
/// buffer; the value (or the next key) follows at this offset.
pub const KEY_ROOM: u64 = 64;

/// A map's largest key in bytes ([`super::AdminCmd::XdpMapCreate`]): all
/// of [`KEY_ROOM`].
pub const MAX_KEY: u32 = 64;
/// A map's largest value in bytes.
pub const MAX_VALUE: u32 = 256;
/// A map's most entries.
pub const MAX_ENTRIES: u32 = 65536;

/// Map types (the kernel's `BPF_MAP_TYPE_*`).
pub mod map_type {
    /// `BPF_MAP_TYPE_HASH`.
    pub const HASH: u32 = 1;
    /// `BPF_MAP_TYPE_ARRAY`.
    pub const ARRAY: u32 = 2;
}

/// What [`super::AdminCmd::XdpMapElem`] does with its buffer (key at 0,
/// value at [`KEY_ROOM`]).
pub mod map_op {
    /// Writes the value of the key; [`super::super::AdminStatus::NotFound`]
    /// if absent.
    pub const LOOKUP: u32 = 0;
    /// Sets the key's value, as `bpf_map_update_elem` with `flags`.
    pub const UPDATE: u32 = 1;
    /// Deletes the key.
    pub const DELETE: u32 = 2;
    /// Writes the key after the key given (the first with `flags` 1) at
    /// [`super::KEY_ROOM`]; [`super::super::AdminStatus::NotFound`] after
    /// the last.
    pub const NEXT_KEY: u32 = 3;
}
