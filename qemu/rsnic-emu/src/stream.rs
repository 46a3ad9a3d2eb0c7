// SPDX-License-Identifier: GPL-2.0

//! A queue pair's RX stream as the card writes it (see
//! [`crate::hw::stream`] for the format).
//!
//! The head the driver writes is untrusted: one that is not between the
//! card's previous head and the tail it published is counted and ignored,
//! so the card never writes over records the driver has not read.

use crate::dma::{DmaFault, DmaSpace};
use crate::hw::stream::{self, StreamHeader, ALIGN};

/// How a faulty stream engine gets its output wrong (fault injection).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamFault {
    /// A record's sequence number is off by 0x21.
    Seq,
    /// A record's header claims 32 KiB more than it holds.
    Length,
    /// The published tail lies a whole ring and 7 units past the head.
    Tail,
}

/// Why a frame was not written.
#[derive(Debug, PartialEq, Eq)]
pub enum StreamDrop {
    /// Not enough space between the card's position and the head.
    NoRoom,
    /// The ring is not in host memory.
    Dma(DmaFault),
}

/// The RX stream of a running queue pair.
#[derive(Clone, Debug)]
pub struct RxStream {
    ring: u64,
    units: u32,
    tail_addr: u64,
    /// Where the next record goes (free-running units).
    written: u32,
    /// The tail last written to the tail word.
    published: u32,
    /// The driver's read position.
    head: u32,
    /// Sequence number of the next record.
    seq: u8,
    /// Records written since the last publication.
    unpublished: u32,
    fault: Option<(StreamFault, u32)>,
    /// Faults injected and not yet taken by [`Self::take_injected`].
    injected: u64,
}

impl RxStream {
    /// Checks a stream request: `None` for a size the card does not take
    /// or a misaligned address.
    pub fn new(bytes: u32, ring: u64, tail: u64) -> Option<Self> {
        if !stream::valid_bytes(bytes)
            || !ring.is_multiple_of(u64::from(ALIGN))
            || !tail.is_multiple_of(4)
        {
            return None;
        }
        Some(Self {
            ring,
            units: bytes / ALIGN,
            tail_addr: tail,
            written: 0,
            published: 0,
            head: 0,
            seq: 0,
            unpublished: 0,
            fault: None,
            injected: 0,
        })
    }

    /// Gets the next `n` records or publications wrong in the way of
    /// `kind`; `n == 0` cancels.
    pub fn fault(&mut self, kind: StreamFault, n: u32) {
        self.fault = Some((kind, n));
    }

    fn take_fault(&mut self, kinds: &[StreamFault]) -> Option<StreamFault> {
        match &mut self.fault {
            Some((kind, n)) if *n > 0 && kinds.contains(kind) => {
                *n -= 1;
                self.injected += 1;
                Some(*kind)
            }
            _ => None,
        }
    }

    /// Units free for the card to write.
    fn free(&self) -> u32 {
        self.units - self.written.wrapping_sub(self.head)
    }

    /// Writes one record (header and `data` in one DMA write). Returns
    /// the metadata bytes moved (the header, and a padding header when
    /// the record went to the ring's start), or why the frame was dropped.
    pub fn write(
        &mut self,
        dma: &DmaSpace,
        data: &[u8],
        flags: u16,
        hash: u32,
    ) -> Result<u64, StreamDrop> {
        let len = u16::try_from(data.len()).map_err(|_| StreamDrop::NoRoom)?;
        let units = StreamHeader::units(u32::from(len));
        let pos = self.written & (self.units - 1);
        let to_end = self.units - pos;
        let pad = if units > to_end { to_end } else { 0 };
        if pad + units > self.free() {
            return Err(StreamDrop::NoRoom);
        }
        let mut meta = 0;
        if pad > 0 {
            let header = StreamHeader {
                len: 0,
                flags: StreamHeader::PAD | u16::from(self.seq) << 8,
                hash: 0,
            };
            dma.write(self.addr(pos), &header.to_bytes())
                .map_err(StreamDrop::Dma)?;
            self.written = self.written.wrapping_add(pad);
            self.seq = self.seq.wrapping_add(1);
            meta += StreamHeader::SIZE as u64;
        }
        let mut header = StreamHeader {
            len,
            flags: (flags & StreamHeader::FLAGS_MASK & !StreamHeader::PAD)
                | u16::from(self.seq) << 8,
            hash,
        };
        match self.take_fault(&[StreamFault::Seq, StreamFault::Length]) {
            Some(StreamFault::Seq) => header.flags ^= 0x21 << 8,
            Some(StreamFault::Length) => header.len = header.len.wrapping_add(0x8000),
            _ => {}
        }
        let mut record = Vec::with_capacity(StreamHeader::SIZE + data.len());
        record.extend_from_slice(&header.to_bytes());
        record.extend_from_slice(data);
        let at = self.written & (self.units - 1);
        dma.write(self.addr(at), &record).map_err(StreamDrop::Dma)?;
        self.written = self.written.wrapping_add(units);
        self.seq = self.seq.wrapping_add(1);
        self.unpublished += 1;
        Ok(meta + StreamHeader::SIZE as u64)
    }

    fn addr(&self, pos: u32) -> u64 {
        self.ring + u64::from(pos) * u64::from(ALIGN)
    }

    /// Publishes the write position in the tail word if records were
    /// written since the last time. Returns the records it announced (0:
    /// nothing written, nothing published).
    pub fn publish(&mut self, dma: &DmaSpace) -> Result<u32, DmaFault> {
        if self.unpublished == 0 {
            return Ok(0);
        }
        let mut tail = self.written;
        if self.take_fault(&[StreamFault::Tail]).is_some() {
            tail = self.head.wrapping_add(self.units + 7);
        }
        // One aligned store, after the records (release).
        dma.store_u32(self.tail_addr, tail)?;
        self.published = self.written;
        Ok(std::mem::take(&mut self.unpublished))
    }

    /// Head doorbell: the driver read up to `head`. False (ignored) if it
    /// is not between the previous head and the published tail.
    pub fn head_doorbell(&mut self, head: u32) -> bool {
        if head.wrapping_sub(self.head) > self.published.wrapping_sub(self.head) {
            return false;
        }
        self.head = head;
        true
    }

    /// The same stream over only `units` units of its ring (tests: a
    /// ring smaller than the card accepts).
    #[cfg(test)]
    pub fn with_units(mut self, units: u32) -> Self {
        self.units = units;
        self
    }

    /// Faults injected since the last call.
    pub fn take_injected(&mut self) -> u64 {
        std::mem::take(&mut self.injected)
    }

    /// Whether published records wait for the driver.
    pub fn unread(&self) -> bool {
        self.published != self.head
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dma::tests::two_region_space;

    // A 64 KiB ring needs more than the test space holds: the tests use a
    // smaller unit count through a ring at the space's start, writing only
    // near its beginning and end.
    fn header(dma: &DmaSpace, at: u64) -> StreamHeader {
        let mut b = [0u8; StreamHeader::SIZE];
        dma.read(at, &mut b).unwrap();
        StreamHeader::from_bytes(&b)
    }

    fn small(ring: u64, tail: u64, units: u32) -> RxStream {
        RxStream::new(stream::MIN_BYTES, ring, tail)
            .unwrap()
            .with_units(units)
    }

    #[test]
    fn rejects_bad_requests() {
        assert!(RxStream::new(stream::MIN_BYTES, 0x1000, 0x2000).is_some());
        assert!(RxStream::new(stream::MIN_BYTES + 64, 0x1000, 0x2000).is_none());
        assert!(RxStream::new(stream::MIN_BYTES, 0x1010, 0x2000).is_none());
        assert!(RxStream::new(stream::MIN_BYTES, 0x1000, 0x2002).is_none());
    }

    #[test]
    fn records_back_to_back_then_padding_and_wrap() {
        let (dma, _f) = two_region_space();
        // 16 units of ring at 0x1000, tail word at 0x1800.
        let mut s = small(0x1000, 0x1800, 16);
        assert_eq!(s.write(&dma, &[1; 60], 0x0006, 9), Ok(8));
        assert_eq!(s.write(&dma, &[2; 100], 0, 0), Ok(8));
        let h = header(&dma, 0x1000);
        assert_eq!((h.len, h.flags, h.hash, h.seq()), (60, 0x0006, 9, 0));
        let h = header(&dma, 0x1000 + 2 * 64);
        assert_eq!((h.len, h.seq()), (100, 1));
        let mut b = [0u8; 100];
        dma.read(0x1000 + 2 * 64 + 8, &mut b).unwrap();
        assert_eq!(b, [2; 100]);
        assert_eq!(s.publish(&dma), Ok(2));
        assert_eq!(s.publish(&dma), Ok(0), "nothing new: no tail write");
        let mut t = [0u8; 4];
        dma.read(0x1800, &mut t).unwrap();
        assert_eq!(u32::from_le_bytes(t), 4);
        // 12 units left before the end; a 13-unit record does not fit
        // without wrapping, and the head is still at 0.
        let big = [3u8; 13 * 64 - 8];
        assert_eq!(s.write(&dma, &big, 0, 0), Err(StreamDrop::NoRoom));
        assert!(s.head_doorbell(4));
        assert_eq!(s.write(&dma, &[4; 10 * 64 - 8], 0, 0), Ok(8));
        s.publish(&dma).unwrap();
        assert!(s.head_doorbell(14));
        // Two units left before the end: padding, then the record at 0.
        assert_eq!(s.write(&dma, &[5; 3 * 64 - 8], 0, 0), Ok(8 + 8));
        let pad = header(&dma, 0x1000 + 14 * 64);
        assert_eq!(
            (pad.flags & StreamHeader::PAD, pad.seq()),
            (StreamHeader::PAD, 3)
        );
        let h = header(&dma, 0x1000);
        assert_eq!((h.len, h.seq()), (3 * 64 - 8, 4));
        assert_eq!(s.written, 16 + 3);
    }

    #[test]
    fn never_overwrites_unread_records() {
        let (dma, _f) = two_region_space();
        let mut s = small(0x1000, 0x1800, 16);
        for _ in 0..8 {
            assert!(s.write(&dma, &[0; 100], 0, 0).is_ok());
        }
        assert_eq!(s.write(&dma, &[0; 100], 0, 0), Err(StreamDrop::NoRoom));
        s.publish(&dma).unwrap();
        assert!(!s.head_doorbell(17), "beyond the tail: ignored");
        assert!(!s.head_doorbell(u32::MAX), "behind the head: ignored");
        assert!(s.head_doorbell(2));
        assert!(s.write(&dma, &[0; 100], 0, 0).is_ok());
        assert!(s.unread());
        s.publish(&dma).unwrap();
        assert!(s.head_doorbell(18));
        assert!(!s.unread());
    }

    #[test]
    fn faults_corrupt_what_they_say() {
        let (dma, _f) = two_region_space();
        let mut s = small(0x1000, 0x1800, 16);
        s.fault(StreamFault::Length, 1);
        s.write(&dma, &[0; 60], 0, 0).unwrap();
        assert_eq!(header(&dma, 0x1000).len, 60 + 0x8000);
        s.fault(StreamFault::Seq, 1);
        s.write(&dma, &[0; 60], 0, 0).unwrap();
        assert_eq!(header(&dma, 0x1000 + 2 * 64).seq(), 1 ^ 0x21);
        s.fault(StreamFault::Tail, 1);
        s.publish(&dma).unwrap();
        let mut t = [0u8; 4];
        dma.read(0x1800, &mut t).unwrap();
        assert_eq!(u32::from_le_bytes(t), 16 + 7);
    }
}
