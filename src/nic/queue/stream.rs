// SPDX-License-Identifier: GPL-2.0

//! The RX side of a streaming queue pair (`hw::stream`): records read
//! where the card wrote them in a ring of chunks, each frame handed on
//! as a page fragment of its chunk (small frames copied), space given
//! back a chunk at a time with one doorbell per poll.
//!
//! A chunk the head leaves is reused in place if no frame in it is still
//! out (in a socket's queue, say); otherwise a fresh chunk takes its
//! place in the card's table and the old one is freed with its last
//! frame, so a slow reader never holds the ring up. If no fresh chunk
//! can be had, the head stops short of the chunk until one can.
//!
//! Everything the card writes is checked before use: a tail more than a
//! ring ahead of the head, a record whose sequence number is not the next
//! one, a length beyond the largest record, past the tail or the chunk's
//! end. Any of these means the stream can no longer be walked: the pair
//! stops reading it and asks for a reset.

use kernel::{page::PAGE_SIZE, prelude::*};

use crate::hw::stream::{self, StreamGeometry, StreamHeader, ALIGN};
use crate::linux::{
    dma::{DmaBuffer, DmaDevice},
    net::{
        napi::Napi,
        page_pool::shinfo_room,
        rx_chunk::{ChunkFrame, ChunkMem, RxChunk},
        xdp::XdpRxq,
    },
};

/// Bytes of each streaming queue pair's ring.
pub(crate) const STREAM_BYTES: u32 = 2 * 1024 * 1024;
/// Bytes of each chunk of it (a compound page): order 3 with 4 KiB
/// pages, the order the kernel's own page-fragment caches allocate in
/// NAPI context.
const CHUNK_BYTES: u32 = 32 * 1024;
/// Room an XDP program gets in front of a frame: `XDP_PACKET_HEADROOM`,
/// counted from the record's start (the header is read by then).
const XDP_HEADROOM: u32 = 256;

/// Writes `chunk`'s address into entry `slot` of the card's chunk table.
fn list_chunk(table: &DmaBuffer, slot: usize, chunk: &RxChunk) -> Result {
    table.write(slot * 8, &chunk.dma_addr().to_le_bytes())
}

/// Bytes of the block holding the tail word (a cache line of its own).
const TAIL_BLOCK: usize = 64;

/// A record of the stream, read but not yet handed on.
pub(super) struct Record {
    pub(super) header: StreamHeader,
    /// The chunk holding it and the record's offset in it.
    chunk: usize,
    start: u32,
    /// Bytes the record spans.
    span: u32,
}

/// Why the stream cannot be walked further; the pair needs a reset.
#[derive(Clone, Copy, Debug)]
pub(super) struct OutOfStep {
    /// Where the driver stood (units) and what the card had written there
    /// (the header's length and flags, or the tail).
    pub(super) head: u32,
    pub(super) found: u32,
}

/// What [`StreamRx::give_back`] did.
#[derive(Default)]
pub(super) struct GiveBack {
    /// The head to ring, if it moved.
    pub(super) head: Option<u32>,
    /// Chunks replaced because frames in them were still out.
    pub(super) replaced: u64,
    /// A chunk could not be replaced: the head stops short of it, the
    /// poll should try again.
    pub(super) starved: bool,
}

/// The RX stream of a running queue pair (NAPI only).
pub(super) struct StreamRx {
    geometry: StreamGeometry,
    chunks: KVec<RxChunk>,
    /// The card's chunk table: each chunk's bus address.
    table: DmaBuffer,
    tail: DmaBuffer,
    /// Page order of a chunk.
    order: u32,
    dma: DmaDevice,
    /// The queue as XDP programs see it.
    rxq: XdpRxq<ChunkMem>,
    /// Next record (free-running units).
    head: u32,
    /// Head last written to the doorbell.
    rung: u32,
    /// Start (free-running units) of the oldest chunk the head entered
    /// that is not yet reused or replaced.
    unreleased: u32,
    /// Sequence number of the next record.
    seq: u8,
    /// The card broke the format: nothing more is read until the reset.
    broken: bool,
}

impl StreamRx {
    /// A stream of [`STREAM_BYTES`] in chunks of [`CHUNK_BYTES`] for
    /// queue `queue` polled by `napi`; with `xdp`, each record leaves an
    /// XDP program the room it needs around the frame.
    pub(super) fn alloc(dma: &DmaDevice, napi: &Napi, queue: u32, xdp: bool) -> Result<Self> {
        let geometry = StreamGeometry {
            bytes: STREAM_BYTES,
            chunk_bytes: CHUNK_BYTES,
            headroom: if xdp {
                (XDP_HEADROOM - StreamHeader::SIZE as u32) as u16
            } else {
                0
            },
            tailroom: if xdp {
                u16::try_from(shinfo_room().next_multiple_of(8))?
            } else {
                0
            },
        };
        if !geometry.valid() || CHUNK_BYTES as usize % PAGE_SIZE != 0 {
            return Err(EINVAL);
        }
        let order = (CHUNK_BYTES as usize / PAGE_SIZE).trailing_zeros();
        let n = geometry.chunks() as usize;
        let table = dma.alloc(n * 8)?;
        let mut chunks = KVec::with_capacity(n, GFP_KERNEL)?;
        for i in 0..n {
            let chunk = RxChunk::alloc(dma, order, false)?;
            list_chunk(&table, i, &chunk)?;
            chunks.push(chunk, GFP_KERNEL)?;
        }
        Ok(Self {
            geometry,
            chunks,
            table,
            tail: dma.alloc(TAIL_BLOCK)?,
            order,
            dma: dma.clone(),
            rxq: XdpRxq::new_chunk(napi, queue)?,
            head: 0,
            rung: 0,
            unreleased: 0,
            seq: 0,
            broken: false,
        })
    }

    /// The card's command choosing this stream for pair `qp`.
    pub(super) fn command(&self, qp: u16) -> Result<crate::hw::AdminCmd> {
        Ok(crate::hw::AdminCmd::SetRxStream {
            qp,
            bytes: self.geometry.bytes,
            table: self.table.dma_addr(0)?,
            tail: self.tail.dma_addr(0)?,
            chunk_bytes: self.geometry.chunk_bytes,
            headroom: self.geometry.headroom,
            tailroom: self.geometry.tailroom,
        })
    }

    /// The queue as XDP programs see it, if records leave them room.
    pub(super) fn xdp_rxq(&self) -> Option<&XdpRxq<ChunkMem>> {
        (self.geometry.headroom != 0).then_some(&self.rxq)
    }

    /// The tail the card published, if it is within a ring of the head.
    /// A broken stream has nothing more to read (its fault was reported).
    pub(super) fn tail(&mut self) -> Result<u32, OutOfStep> {
        if self.broken {
            return Ok(self.head);
        }
        let tail = self.tail.read_position(0).unwrap_or(self.head);
        if tail.wrapping_sub(self.head) > self.geometry.units() {
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
    /// padding; `Ok(None)` when there is none, or when the head may not
    /// enter another chunk before [`Self::give_back`] releases the one
    /// it leaves (a ring's worth of chunks is out).
    pub(super) fn next(&mut self, tail: u32) -> Result<Option<Record>, OutOfStep> {
        let g = self.geometry;
        let chunk_units = g.chunk_units();
        loop {
            if self.broken || self.head == tail {
                return Ok(None);
            }
            if self.head.wrapping_sub(self.unreleased) >= g.units() {
                return Ok(None);
            }
            let avail = tail.wrapping_sub(self.head);
            let in_chunk = self.head & (chunk_units - 1);
            let to_end = chunk_units - in_chunk;
            let chunk = ((self.head / chunk_units) % g.chunks()) as usize;
            let start = in_chunk * ALIGN;
            let mut raw = [0u8; StreamHeader::SIZE];
            if self.chunks[chunk].read(start, &mut raw).is_err() {
                return Err(self.out_of_step(self.head));
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
            let units = g.record_units(len);
            let possible = (14..=stream::MAX_RECORD_LEN).contains(&len);
            if !possible || units > avail || units > to_end {
                return Err(self.out_of_step(found));
            }
            self.head = self.head.wrapping_add(units);
            self.seq = self.seq.wrapping_add(1);
            return Ok(Some(Record {
                header,
                chunk,
                start,
                span: units * ALIGN,
            }));
        }
    }

    /// The frame of `record`, holding a reference to its chunk; `None`
    /// if it does not lie in the record (never: `next` checked it).
    pub(super) fn frame(&self, record: &Record) -> Option<ChunkFrame> {
        let data = record.start + self.geometry.data_offset();
        self.chunks[record.chunk].frame(
            record.start,
            data,
            u32::from(record.header.len),
            record.start + record.span,
        )
    }

    /// Releases the chunks the head has left (reused, or replaced if
    /// frames in them are still out) and says which head to ring, if it
    /// moved: the read position, or short of a chunk that could not be
    /// released. The card may then write the released chunks again.
    pub(super) fn give_back(&mut self) -> GiveBack {
        let chunk_units = self.geometry.chunk_units();
        let mut done = GiveBack::default();
        let mut head = self.head;
        while self.head.wrapping_sub(self.unreleased) >= chunk_units {
            let slot = ((self.unreleased / chunk_units) % self.geometry.chunks()) as usize;
            if self.chunks[slot].in_use() {
                let fresh = RxChunk::alloc(&self.dma, self.order, true)
                    .and_then(|fresh| list_chunk(&self.table, slot, &fresh).map(|()| fresh));
                let Ok(fresh) = fresh else {
                    done.starved = true;
                    // Anywhere short of the chunk's end keeps it the
                    // driver's; its last unit will do.
                    head = self.unreleased.wrapping_add(chunk_units - 1);
                    break;
                };
                // The old chunk goes with its last frame.
                self.chunks[slot] = fresh;
                done.replaced += 1;
            } else {
                self.chunks[slot].for_device();
            }
            self.unreleased = self.unreleased.wrapping_add(chunk_units);
        }
        if head != self.rung {
            self.rung = head;
            done.head = Some(head);
        }
        done
    }

    /// Ring size in bytes and the read position (units), for diagnostics.
    pub(super) fn position(&self) -> (u32, u32) {
        (self.geometry.bytes, self.head)
    }
}
