// SPDX-License-Identifier: GPL-2.0

//! Ring geometry: sizes that are powers of two and indices that stay inside
//! them.

/// A ring size: a power of two between the card's limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RingSize(u16);

/// A position in a ring of some [`RingSize`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RingIndex(u16);

impl RingSize {
    /// `entries` if it is a power of two in `min..=max`.
    pub(crate) fn new(entries: u32, min: u16, max: u16) -> Option<Self> {
        let e = u16::try_from(entries).ok()?;
        (e.is_power_of_two() && (min..=max).contains(&e)).then_some(Self(e))
    }

    /// Number of entries.
    pub(crate) fn get(self) -> u16 {
        self.0
    }

    /// The index after `i`.
    pub(crate) fn next(self, i: RingIndex) -> RingIndex {
        RingIndex(i.0.wrapping_add(1) & (self.0 - 1))
    }

    /// Entries from `from` up to (not including) `to`.
    pub(crate) fn distance(self, from: RingIndex, to: RingIndex) -> u16 {
        to.0.wrapping_sub(from.0) & (self.0 - 1)
    }

    /// `raw` as an index, if it is inside the ring (untrusted input).
    pub(crate) fn index(self, raw: u16) -> Option<RingIndex> {
        (raw < self.0).then_some(RingIndex(raw))
    }
}

impl RingIndex {
    /// The index as a number, for doorbells and offsets.
    pub(crate) fn get(self) -> u16 {
        self.0
    }
}
