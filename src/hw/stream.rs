// SPDX-License-Identifier: GPL-2.0

//! Streaming receive (Ensō-style): a queue pair's frames written back to
//! back into one large ring instead of one buffer each, with no
//! descriptor and no completion per frame.
//!
//! The ring is `bytes` long (a power of two) and divided into
//! [`ALIGN`]-byte units. Positions are free-running 32-bit counts of
//! units; the ring offset of position `p` is `(p % units) * ALIGN`. The
//! ring is made of chunks of `chunk_bytes` (a power of two), each
//! physically contiguous and anywhere in host memory: the chunk table
//! holds one little-endian 64-bit bus address per chunk.
//!
//! Each frame is a record starting on a unit: an [`ALIGN`]-aligned
//! [`StreamHeader`], `headroom` bytes the card does not write, the frame
//! (a GFT exception: its [`super::gft::META_LEN`]-byte meta block, then
//! the frame), and `tailroom` bytes it does not write either, rounded up
//! to whole units ([`StreamGeometry::record_units`]). The room lets the
//! driver run XDP on the frame where it lies (`xdp_frame` in front,
//! `skb_shared_info` behind); without XDP both are 0 and records are
//! packed. A record never crosses a chunk's end: when the next one does
//! not fit before it, the card writes a header with
//! [`StreamHeader::PAD`] and continues at the next chunk's start (at the
//! ring's end, offset 0).
//!
//! The card writes records from its write position on and publishes the
//! position by writing it to the tail word, once per batch of frames
//! (then raises the pair's vector as for completions: when armed, with
//! moderation). The driver reads records up to the published tail and
//! reports its read position (the head) with
//! [`super::regs::DB_STREAM_HEAD`]. Space comes back a chunk at a time:
//! the card writes a chunk again only once the head has left it, and
//! reads the chunk's table entry afresh each time it starts writing it.
//! So the driver may put a different chunk in an entry (a frame still in
//! the old one stays untouched, e.g. in a socket's queue) until it
//! reports a head past that chunk. The card never writes past the head's
//! chunk: a frame that does not fit is dropped and counted in
//! `rx_no_buffer`.

/// Bytes of one unit: every record starts on one.
pub const ALIGN: u32 = 64;
/// Smallest ring.
pub const MIN_BYTES: u32 = 64 * 1024;
/// Largest ring.
pub const MAX_BYTES: u32 = 16 * 1024 * 1024;
/// Smallest chunk: holds the longest record with the most room.
pub const MIN_CHUNK_BYTES: u32 = 16 * 1024;
/// Most room the card leaves in front of or behind a frame.
pub const MAX_ROOM: u16 = 512;
/// Longest record payload: a GFT exception's meta block and the largest
/// frame, with the most a GFT push adds.
pub const MAX_RECORD_LEN: u32 =
    super::MAX_FRAME + super::gft::META_LEN as u32 + super::gft::MAX_ENCAP_LEN;

wire_struct! {
    /// The header of a record in the stream.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct StreamHeader[8] {
        /// Bytes that follow the header (0 with [`StreamHeader::PAD`]).
        pub len @ 0: u16,
        /// The receive flags of [`super::Cqe`] ([`super::Cqe::CSUM_OK`],
        /// [`super::Cqe::HASH`], [`super::Cqe::HASH_L4`],
        /// [`super::Cqe::FCS_ERR`], [`super::Cqe::GFT_EXCEPTION`]),
        /// [`StreamHeader::PAD`], and in bits 8-15 the record's sequence
        /// number (records written since the pair was created, modulo
        /// 256, padding included).
        pub flags @ 2: u16,
        /// RSS hash of the frame, when [`super::Cqe::HASH`].
        pub hash @ 4: u32,
    }
}

impl StreamHeader {
    /// Padding: the rest of the ring up to its end holds no record.
    pub const PAD: u16 = 1 << 7;
    /// The flags without the sequence number.
    pub const FLAGS_MASK: u16 = 0xff;

    /// The record's sequence number.
    pub fn seq(&self) -> u8 {
        (self.flags >> 8) as u8
    }
}

/// The shape of a stream: what [`super::AdminCmd::SetRxStream`] asks
/// for besides its addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamGeometry {
    /// Ring bytes: a power of two in [`MIN_BYTES`]..=[`MAX_BYTES`].
    pub bytes: u32,
    /// Chunk bytes: a power of two, at least [`MIN_CHUNK_BYTES`], at most
    /// half the ring.
    pub chunk_bytes: u32,
    /// Bytes between a record's header and its frame: a multiple of 8,
    /// at most [`MAX_ROOM`].
    pub headroom: u16,
    /// Bytes left behind a frame: a multiple of 8, at most [`MAX_ROOM`].
    pub tailroom: u16,
}

impl StreamGeometry {
    /// Whether the card takes this shape.
    pub const fn valid(&self) -> bool {
        self.bytes.is_power_of_two()
            && self.bytes >= MIN_BYTES
            && self.bytes <= MAX_BYTES
            && self.chunk_bytes.is_power_of_two()
            && self.chunk_bytes >= MIN_CHUNK_BYTES
            && self.chunk_bytes <= self.bytes / 2
            && self.headroom <= MAX_ROOM
            && self.headroom.is_multiple_of(8)
            && self.tailroom <= MAX_ROOM
            && self.tailroom.is_multiple_of(8)
    }

    /// Ring size in units.
    pub const fn units(&self) -> u32 {
        self.bytes / ALIGN
    }

    /// Chunk size in units.
    pub const fn chunk_units(&self) -> u32 {
        self.chunk_bytes / ALIGN
    }

    /// Chunks in the ring (entries of the chunk table).
    pub const fn chunks(&self) -> u32 {
        self.bytes / self.chunk_bytes
    }

    /// Offset of a record's frame from the record's start.
    pub const fn data_offset(&self) -> u32 {
        StreamHeader::SIZE as u32 + self.headroom as u32
    }

    /// Units a record with a `len`-byte frame takes.
    pub const fn record_units(&self, len: u32) -> u32 {
        (self.data_offset() + len + self.tailroom as u32).div_ceil(ALIGN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PACKED: StreamGeometry = StreamGeometry {
        bytes: MIN_BYTES,
        chunk_bytes: MIN_CHUNK_BYTES,
        headroom: 0,
        tailroom: 0,
    };

    #[test]
    fn records_take_whole_units() {
        let g = PACKED;
        assert_eq!(g.record_units(56), 1);
        assert_eq!(g.record_units(57), 2);
        assert_eq!(g.record_units(60), 2);
        let roomy = StreamGeometry {
            headroom: 248,
            tailroom: 320,
            ..g
        };
        assert_eq!(roomy.data_offset(), 256);
        assert_eq!(roomy.record_units(60), (256 + 60 + 320u32).div_ceil(64));
        let most = StreamGeometry {
            headroom: MAX_ROOM,
            tailroom: MAX_ROOM,
            ..g
        };
        assert!(most.valid());
        assert!(most.record_units(MAX_RECORD_LEN) <= g.chunk_units());
        assert_eq!((g.units(), g.chunk_units(), g.chunks()), (1024, 256, 4));
        let bad = |f: fn(&mut StreamGeometry)| {
            let mut b = g;
            f(&mut b);
            !b.valid()
        };
        assert!(g.valid());
        assert!(bad(|b| b.bytes = MIN_BYTES / 2));
        assert!(bad(|b| b.bytes = MIN_BYTES + 64));
        assert!(bad(|b| b.bytes = MAX_BYTES * 2));
        assert!(bad(|b| b.chunk_bytes = MIN_CHUNK_BYTES / 2));
        assert!(bad(|b| b.chunk_bytes = b.bytes));
        assert!(bad(|b| b.chunk_bytes = MIN_CHUNK_BYTES + 64));
        assert!(bad(|b| b.headroom = 4));
        assert!(bad(|b| b.tailroom = MAX_ROOM + 8));
        let h = StreamHeader {
            len: 60,
            flags: 0x2a00 | StreamHeader::PAD,
            hash: 7,
        };
        assert_eq!(StreamHeader::from_bytes(&h.to_bytes()), h);
        assert_eq!(h.seq(), 0x2a);
    }
}
