// SPDX-License-Identifier: GPL-2.0

//! The RX side of a streaming queue pair (`hw::stream`): records read
//! where the card wrote them in one large ring, each frame copied into a
//! fresh skb, the space given back with one doorbell per poll.
//!
//! Everything the card writes is checked before use: a tail more than a
//! ring ahead of the head, a record whose sequence number is not the next
//! one, a length beyond the largest record or past the tail or the ring's
//! end. Any of these means the stream can no longer be walked: the pair
//! stops reading it and asks for a reset.

use kernel::prelude::*;

use crate::hw::stream::{self, StreamHeader, ALIGN};
use crate::linux::dma::{DmaBuffer, DmaDevice};

/// Bytes of each streaming queue pair's ring.
pub(crate) const STREAM_BYTES: u32 = 2 * 1024 * 1024;

/// Bytes of the block holding the tail word (a cache line of its own).
const TAIL_BLOCK: usize = 64;

/// A record of the stream, read but not yet given back.
pub(super) struct Record {
    pub(super) header: StreamHeader,
    /// Offset of the data (after the header) in the ring.
    pub(super) offset: usize,
}

/// Why the stream cannot be walked further; the pair needs a reset.
#[derive(Clone, Copy, Debug)]
pub(super) struct OutOfStep {
    /// Where the driver stood (units) and what the card had written there
    /// (the header's length and flags, or the tail).
    pub(super) head: u32,
    pub(super) found: u32,
}

/// The RX stream of a running queue pair (NAPI only).
pub(super) struct StreamRx {
    ring: DmaBuffer,
    tail: DmaBuffer,
    /// Ring size in units.
    units: u32,
    /// Next record (free-running units).
    head: u32,
    /// Head last written to the doorbell.
    rung: u32,
    /// Sequence number of the next record.
    seq: u8,
    /// The card broke the format: nothing more is read until the reset.
    broken: bool,
}

impl StreamRx {
    /// A zeroed ring of `bytes` (a size the card takes) and tail word.
    pub(super) fn alloc(dma: &DmaDevice, bytes: u32) -> Result<Self> {
        if !stream::valid_bytes(bytes) {
            return Err(EINVAL);
        }
        Ok(Self {
            ring: dma.alloc(bytes as usize)?,
            tail: dma.alloc(TAIL_BLOCK)?,
            units: bytes / ALIGN,
            head: 0,
            rung: 0,
            seq: 0,
            broken: false,
        })
    }

    /// The card's command choosing this stream for pair `qp`.
    pub(super) fn command(&self, qp: u16) -> Result<crate::hw::AdminCmd> {
        Ok(crate::hw::AdminCmd::SetRxStream {
            qp,
            bytes: self.units * ALIGN,
            ring: self.ring.dma_addr(0)?,
            tail: self.tail.dma_addr(0)?,
        })
    }

    /// The tail the card published, if it is within a ring of the head.
    /// A broken stream has nothing more to read (its fault was reported).
    pub(super) fn tail(&mut self) -> Result<u32, OutOfStep> {
        if self.broken {
            return Ok(self.head);
        }
        let tail = self.tail.read_position(0).unwrap_or(self.head);
        if tail.wrapping_sub(self.head) > self.units {
            return Err(self.out_of_step(tail));
        }
        Ok(tail)
    }

    /// Whether published records wait (for the lost-interrupt check).
    pub(super) fn waiting(&self) -> bool {
        !self.broken && self.tail.read_position(0).is_some_and(|t| t != self.head)
    }

    fn out_of_step(&mut self, found: u32) -> OutOfStep {
        self.broken = true;
        OutOfStep {
            head: self.head,
            found,
        }
    }

    /// The next record before `tail` (from [`Self::tail`]), skipping
    /// padding; `Ok(None)` when there is none. The record stays valid
    /// until [`Self::give_back`].
    pub(super) fn next(&mut self, tail: u32) -> Result<Option<Record>, OutOfStep> {
        loop {
            if self.broken || self.head == tail {
                return Ok(None);
            }
            let avail = tail.wrapping_sub(self.head);
            let pos = self.head & (self.units - 1);
            let to_end = self.units - pos;
            let at = (pos * ALIGN) as usize;
            let mut raw = [0u8; StreamHeader::SIZE];
            if self.ring.read(at, &mut raw).is_err() {
                return Err(self.out_of_step(pos));
            }
            let header = StreamHeader::from_bytes(&raw);
            let found = u32::from(header.len) << 16 | u32::from(header.flags);
            if header.seq() != self.seq {
                return Err(self.out_of_step(found));
            }
            if header.flags & StreamHeader::PAD != 0 {
                if to_end > avail {
                    return Err(self.out_of_step(found));
                }
                self.head = self.head.wrapping_add(to_end);
                self.seq = self.seq.wrapping_add(1);
                continue;
            }
            let len = u32::from(header.len);
            let units = StreamHeader::units(len);
            let possible = (14..=stream::MAX_RECORD_LEN).contains(&len);
            if !possible || units > avail || units > to_end {
                return Err(self.out_of_step(found));
            }
            self.head = self.head.wrapping_add(units);
            self.seq = self.seq.wrapping_add(1);
            return Ok(Some(Record {
                header,
                offset: at + StreamHeader::SIZE,
            }));
        }
    }

    /// Copies the data of `record` into `out` (exactly its length).
    pub(super) fn copy(&self, record: &Record, out: &mut [u8]) -> Result {
        self.ring.copy_out(record.offset, out)
    }

    /// The head to ring if records were read since the last time; the
    /// card may then write over them.
    pub(super) fn give_back(&mut self) -> Option<u32> {
        (self.head != self.rung).then(|| {
            self.rung = self.head;
            self.head
        })
    }

    /// Ring size in bytes and the read position (units), for diagnostics.
    pub(super) fn position(&self) -> (u32, u32) {
        (self.units * ALIGN, self.head)
    }
}
