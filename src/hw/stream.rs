// SPDX-License-Identifier: GPL-2.0

//! Streaming receive (Ensō-style): a queue pair's frames written back to
//! back into one large ring instead of one buffer each, with no
//! descriptor and no completion per frame.
//!
//! The ring is `bytes` long (a power of two) and divided into
//! [`ALIGN`]-byte units. Positions are free-running 32-bit counts of
//! units; the ring offset of position `p` is `(p % units) * ALIGN`. Each
//! frame is a record starting on a unit: an [`ALIGN`]-aligned
//! [`StreamHeader`] immediately followed by the frame (a GFT exception:
//! its [`super::gft::META_LEN`]-byte meta block, then the frame), the
//! rest of the last unit unused and not written. A record never wraps:
//! when the next one does not fit before the ring's end, the card writes
//! a header with [`StreamHeader::PAD`] and continues at offset 0.
//!
//! The card writes records from its write position on and publishes the
//! position by writing it to the tail word, once per batch of frames
//! (then raises the pair's vector as for completions: when armed, with
//! moderation). The driver reads records up to the published tail and
//! gives space back with [`super::regs::DB_STREAM_HEAD`]. The card never
//! writes past the head: a frame that does not fit is dropped and
//! counted in `rx_no_buffer`.

/// Bytes of one unit: every record starts on one.
pub const ALIGN: u32 = 64;
/// Smallest ring.
pub const MIN_BYTES: u32 = 64 * 1024;
/// Largest ring.
pub const MAX_BYTES: u32 = 16 * 1024 * 1024;
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

    /// Units a record with `len` bytes after its header takes.
    pub const fn units(len: u32) -> u32 {
        (Self::SIZE as u32 + len).div_ceil(ALIGN)
    }
}

/// Whether `bytes` is a ring size the card accepts (0 is "no stream").
pub const fn valid_bytes(bytes: u32) -> bool {
    bytes.is_power_of_two() && bytes >= MIN_BYTES && bytes <= MAX_BYTES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_take_whole_units() {
        assert_eq!(StreamHeader::units(56), 1);
        assert_eq!(StreamHeader::units(57), 2);
        assert_eq!(StreamHeader::units(60), 2);
        assert_eq!(
            StreamHeader::units(MAX_RECORD_LEN),
            (8 + MAX_RECORD_LEN).div_ceil(64)
        );
        assert!(valid_bytes(MIN_BYTES) && valid_bytes(MAX_BYTES));
        assert!(!valid_bytes(0) && !valid_bytes(MIN_BYTES / 2) && !valid_bytes(MIN_BYTES + 64));
        let h = StreamHeader {
            len: 60,
            flags: 0x2a00 | StreamHeader::PAD,
            hash: 7,
        };
        assert_eq!(StreamHeader::from_bytes(&h.to_bytes()), h);
        assert_eq!(h.seq(), 0x2a);
    }
}
