// SPDX-License-Identifier: GPL-2.0

//! Rings shared with the card: sizes that are powers of two, indices
//! that stay inside them, descriptor rings and completion queues in DMA
//! memory.

use kernel::prelude::*;

use crate::hw::{self, Cqe, ENTRY_FLAGS_OFFSET};
use crate::linux::dma::{DmaBuffer, DmaDevice};

/// A ring size: a power of two between the card's limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RingSize(u16);

/// A position in a ring of some [`RingSize`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RingIndex(u16);

impl RingSize {
    /// `entries` if it is a power of two within the card's limits
    /// ([`hw::MIN_RING_ENTRIES`]..=[`hw::MAX_RING_ENTRIES`]), else `EINVAL`.
    pub(crate) fn new(entries: u32) -> Result<Self> {
        let e = u16::try_from(entries).map_err(|_| EINVAL)?;
        let fits = (hw::MIN_RING_ENTRIES..=hw::MAX_RING_ENTRIES).contains(&e);
        if e.is_power_of_two() && fits {
            Ok(Self(e))
        } else {
            Err(EINVAL)
        }
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

/// A descriptor ring in DMA memory shared with the card.
pub(super) struct Ring {
    pub(super) desc: DmaBuffer,
    pub(super) size: RingSize,
    /// TX: oldest descriptor the card has not completed. RX: next buffer
    /// the card fills.
    pub(super) head: RingIndex,
    /// Next descriptor to post.
    pub(super) tail: RingIndex,
}

impl Ring {
    /// A ring of `size` descriptors of `desc_size` bytes.
    pub(super) fn alloc(dma: &DmaDevice, size: RingSize, desc_size: usize) -> Result<Self> {
        Ok(Self {
            desc: dma.alloc(usize::from(size.get()) * desc_size)?,
            size,
            head: RingIndex::default(),
            tail: RingIndex::default(),
        })
    }

    pub(super) fn in_flight(&self) -> u16 {
        self.size.distance(self.head, self.tail)
    }

    /// Free descriptors; one stays unused so full and empty differ.
    pub(super) fn free(&self) -> u16 {
        self.size.get() - 1 - self.in_flight()
    }
}

/// A slot table with one entry per ring descriptor.
pub(super) fn slots<T>(size: RingSize, empty: impl Fn() -> T) -> Result<KVec<T>> {
    let mut v = KVec::with_capacity(usize::from(size.get()), GFP_KERNEL)?;
    for _ in 0..size.get() {
        v.push(empty(), GFP_KERNEL)?;
    }
    Ok(v)
}

/// A completion queue the card writes and the driver reads.
pub(super) struct CompletionQueue {
    pub(super) mem: DmaBuffer,
    pub(super) entries: u32,
    /// Next entry to read.
    pub(super) head: u32,
    /// The phase the card writes this lap.
    pub(super) phase: bool,
}

impl CompletionQueue {
    /// Moves past the entry at `head`, flipping the expected phase at the wrap.
    pub(super) fn advance(&mut self) {
        self.head += 1;
        if self.head == self.entries {
            self.head = 0;
            self.phase = !self.phase;
        }
    }
}

/// The next completion, if the card has written it (its phase is this
/// lap's).
pub(super) fn read_cqe(cq: &CompletionQueue) -> Option<Cqe> {
    let offset = cq.head as usize * Cqe::SIZE;
    cq.mem
        .read_published(offset, ENTRY_FLAGS_OFFSET, |flags| {
            (flags & Cqe::PHASE != 0) == cq.phase
        })
        .map(|raw| Cqe::from_bytes(&raw))
}
