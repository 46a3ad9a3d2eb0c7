// SPDX-License-Identifier: GPL-2.0

//! A queue pair's RX stream as the card writes it (see
//! [`crate::hw::stream`] for the format).
//!
//! The head the driver writes is untrusted: one that is not between the
//! card's previous head and the tail it published is counted and ignored,
//! so the card never writes over records the driver has not read. Chunk
//! addresses are read from the driver's table when the card starts
//! writing a chunk; a misaligned one drops the frame.

use crate::dma::{DmaFault, DmaSpace};
use crate::hw::stream::{StreamGeometry, StreamHeader, ALIGN};

/// How a faulty stream engine gets its output wrong (fault injection).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamFault {
    /// A record's sequence number is off by 0x21.
    Seq,
    /// A record's header claims 32 KiB more than it holds.
    Length,
    /// The published tail lies a whole ring and 7 units past the head,
    /// in this and every later publication: a tail pointer gone wrong
    /// stays wrong until the pair is created again (a later correct
    /// publication must not hide it from the driver).
    Tail,
}

/// Why a frame was not written.
#[derive(Debug, PartialEq, Eq)]
pub enum StreamDrop {
    /// Not enough space between the card's position and the head's chunk.
    NoRoom,
    /// The table or a chunk is not in host memory.
    Dma(DmaFault),
    /// The table gave a chunk address that is not [`ALIGN`]-aligned.
    BadChunk,
}

impl From<DmaFault> for StreamDrop {
    fn from(f: DmaFault) -> Self {
        Self::Dma(f)
    }
}

/// The RX stream of a running queue pair.
#[derive(Clone, Debug)]
pub struct RxStream {
    table: u64,
    /// Ring and chunk size in units (powers of two).
    units: u32,
    chunk_units: u32,
    /// Where a record's frame starts, and the units a frame takes.
    geometry: StreamGeometry,
    tail_addr: u64,
    /// The chunk being written (free-running chunk number) and its
    /// address, as read from the table when the card entered it.
    chunk: Option<(u32, u64)>,
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
    /// A tail fault was injected: every publication is wrong.
    tail_broken: bool,
}

impl RxStream {
    /// Checks a stream request: `None` for a shape the card does not
    /// take or a misaligned address.
    pub fn new(geometry: StreamGeometry, table: u64, tail: u64) -> Option<Self> {
        if !geometry.valid() || !table.is_multiple_of(8) || !tail.is_multiple_of(4) {
            return None;
        }
        Some(Self {
            table,
            units: geometry.units(),
            chunk_units: geometry.chunk_units(),
            geometry,
            tail_addr: tail,
            chunk: None,
            written: 0,
            published: 0,
            head: 0,
            seq: 0,
            unpublished: 0,
            fault: None,
            injected: 0,
            tail_broken: false,
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

    /// Units free for the card to write: up to a ring past the start of
    /// the head's chunk (space comes back a chunk at a time).
    fn free(&self) -> u32 {
        let returned = self.head & !(self.chunk_units - 1);
        self.units - self.written.wrapping_sub(returned)
    }

    /// Writes one record (header, then `data` after the headroom).
    /// Returns the metadata bytes moved (the header, a padding header
    /// when the record went on to the next chunk, the chunk table entries
    /// read), or why the frame was dropped.
    pub fn write(
        &mut self,
        dma: &DmaSpace,
        data: &[u8],
        flags: u16,
        hash: u32,
    ) -> Result<u64, StreamDrop> {
        let len = u16::try_from(data.len()).map_err(|_| StreamDrop::NoRoom)?;
        let units = self.geometry.record_units(u32::from(len));
        let to_end = self.chunk_units - (self.written & (self.chunk_units - 1));
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
            let (at, read) = self.addr(dma, self.written)?;
            dma.write(at, &header.to_bytes())?;
            self.written = self.written.wrapping_add(pad);
            self.seq = self.seq.wrapping_add(1);
            meta += read + StreamHeader::SIZE as u64;
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
        let (at, read) = self.addr(dma, self.written)?;
        if self.geometry.headroom == 0 {
            let mut record = Vec::with_capacity(StreamHeader::SIZE + data.len());
            record.extend_from_slice(&header.to_bytes());
            record.extend_from_slice(data);
            dma.write(at, &record)?;
        } else {
            dma.write(at + u64::from(self.geometry.data_offset()), data)?;
            dma.write(at, &header.to_bytes())?;
        }
        self.written = self.written.wrapping_add(units);
        self.seq = self.seq.wrapping_add(1);
        self.unpublished += 1;
        Ok(meta + read + StreamHeader::SIZE as u64)
    }

    /// Bus address of position `pos` (free-running units), reading its
    /// chunk's table entry if the card has not entered that chunk yet;
    /// with the bytes of table read.
    fn addr(&mut self, dma: &DmaSpace, pos: u32) -> Result<(u64, u64), StreamDrop> {
        let chunk = pos / self.chunk_units;
        let mut read = 0;
        let base = match self.chunk {
            Some((n, base)) if n == chunk => base,
            _ => {
                let slot = chunk & (self.units / self.chunk_units - 1);
                let mut entry = [0u8; 8];
                dma.read(self.table + 8 * u64::from(slot), &mut entry)?;
                let base = u64::from_le_bytes(entry);
                read = 8;
                if !base.is_multiple_of(u64::from(ALIGN)) {
                    return Err(StreamDrop::BadChunk);
                }
                self.chunk = Some((chunk, base));
                base
            }
        };
        let offset = u64::from(pos & (self.chunk_units - 1)) * u64::from(ALIGN);
        Ok((base + offset, read))
    }

    /// Publishes the write position in the tail word if records were
    /// written since the last time. Returns the records it announced (0:
    /// nothing written, nothing published).
    pub fn publish(&mut self, dma: &DmaSpace) -> Result<u32, DmaFault> {
        if self.unpublished == 0 {
            return Ok(0);
        }
        let mut tail = self.written;
        if !self.tail_broken && self.take_fault(&[StreamFault::Tail]).is_some() {
            self.tail_broken = true;
        }
        if self.tail_broken {
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

    /// The same stream over `units` units in chunks of `chunk_units`
    /// (tests: smaller than the card accepts).
    #[cfg(test)]
    pub fn shrunk(mut self, units: u32, chunk_units: u32) -> Self {
        self.units = units;
        self.chunk_units = chunk_units;
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
    use crate::hw::stream::{MIN_BYTES, MIN_CHUNK_BYTES};

    // A real ring needs more than the test space holds: the tests shrink
    // it to 16 units in two chunks of 8, at 0x1000 and 0x2000, listed in
    // a table at 0x3800; the tail word is at 0x3c00.
    const TABLE: u64 = 0x3800;
    const TAIL: u64 = 0x3c00;
    const C0: u64 = 0x1000;
    const C1: u64 = 0x2000;

    fn geometry(headroom: u16, tailroom: u16) -> StreamGeometry {
        StreamGeometry {
            bytes: MIN_BYTES,
            chunk_bytes: MIN_CHUNK_BYTES,
            headroom,
            tailroom,
        }
    }

    fn set_chunk(dma: &DmaSpace, slot: u64, addr: u64) {
        dma.write(TABLE + 8 * slot, &addr.to_le_bytes()).unwrap();
    }

    fn small(dma: &DmaSpace, headroom: u16, tailroom: u16) -> RxStream {
        set_chunk(dma, 0, C0);
        set_chunk(dma, 1, C1);
        RxStream::new(geometry(headroom, tailroom), TABLE, TAIL)
            .unwrap()
            .shrunk(16, 8)
    }

    fn header(dma: &DmaSpace, at: u64) -> StreamHeader {
        let mut b = [0u8; StreamHeader::SIZE];
        dma.read(at, &mut b).unwrap();
        StreamHeader::from_bytes(&b)
    }

    fn tail(dma: &DmaSpace) -> u32 {
        let mut t = [0u8; 4];
        dma.read(TAIL, &mut t).unwrap();
        u32::from_le_bytes(t)
    }

    #[test]
    fn rejects_bad_requests() {
        let g = geometry(0, 0);
        assert!(RxStream::new(g, 0x1000, 0x2000).is_some());
        let bad = StreamGeometry {
            chunk_bytes: MIN_BYTES,
            ..g
        };
        assert!(RxStream::new(bad, 0x1000, 0x2000).is_none());
        assert!(RxStream::new(g, 0x1004, 0x2000).is_none());
        assert!(RxStream::new(g, 0x1000, 0x2002).is_none());
    }

    #[test]
    fn records_back_to_back_then_padding_at_a_chunk_end() {
        let (dma, _f) = two_region_space();
        let mut s = small(&dma, 0, 0);
        // The first record also reads chunk 0's table entry.
        assert_eq!(s.write(&dma, &[1; 60], 0x0006, 9), Ok(8 + 8));
        assert_eq!(s.write(&dma, &[2; 100], 0, 0), Ok(8));
        let h = header(&dma, C0);
        assert_eq!((h.len, h.flags, h.hash, h.seq()), (60, 0x0006, 9, 0));
        // 8 + 60 bytes take two units.
        let h = header(&dma, C0 + 2 * 64);
        assert_eq!((h.len, h.seq()), (100, 1));
        let mut b = [0u8; 100];
        dma.read(C0 + 2 * 64 + 8, &mut b).unwrap();
        assert_eq!(b, [2; 100]);
        assert_eq!(s.publish(&dma), Ok(2));
        assert_eq!(s.publish(&dma), Ok(0), "nothing new: no tail write");
        assert_eq!(tail(&dma), 4);
        // Four units left in chunk 0: a six-unit record pads them and
        // goes to chunk 1's start (its entry read: 8 more bytes).
        assert_eq!(s.write(&dma, &[3; 6 * 64 - 8], 0, 0), Ok(8 + 8 + 8));
        let pad = header(&dma, C0 + 4 * 64);
        assert_eq!(
            (pad.flags & StreamHeader::PAD, pad.seq()),
            (StreamHeader::PAD, 2)
        );
        let h = header(&dma, C1);
        assert_eq!((h.len, h.seq()), (6 * 64 - 8, 3));
        assert_eq!(s.written, 14);
    }

    #[test]
    fn space_comes_back_a_chunk_at_a_time_into_the_chunk_the_table_names() {
        let (dma, _f) = two_region_space();
        let mut s = small(&dma, 0, 0);
        for _ in 0..8 {
            assert!(s.write(&dma, &[0; 100], 0, 0).is_ok());
        }
        assert_eq!(s.write(&dma, &[0; 100], 0, 0), Err(StreamDrop::NoRoom));
        s.publish(&dma).unwrap();
        // Read into chunk 0 only: nothing comes back.
        assert!(s.head_doorbell(6));
        assert_eq!(s.write(&dma, &[0; 100], 0, 0), Err(StreamDrop::NoRoom));
        // Chunk 0 left, with a different chunk in its table entry: the
        // next lap's first record goes there.
        set_chunk(&dma, 0, 0x3000);
        assert!(s.head_doorbell(8));
        assert_eq!(s.write(&dma, &[7; 100], 0, 0), Ok(8 + 8));
        assert_eq!(header(&dma, 0x3000).len, 100);
        assert_eq!(header(&dma, 0x3000).seq(), 8);
    }

    #[test]
    fn a_misaligned_chunk_drops_the_frame() {
        let (dma, _f) = two_region_space();
        let mut s = small(&dma, 0, 0);
        set_chunk(&dma, 0, C0 + 8);
        assert_eq!(s.write(&dma, &[0; 60], 0, 0), Err(StreamDrop::BadChunk));
        assert_eq!(s.written, 0);
    }

    #[test]
    fn room_around_the_frame_stays_unwritten() {
        let (dma, _f) = two_region_space();
        dma.write(C0, &[0xee; 256]).unwrap();
        let mut s = small(&dma, 24, 16);
        // 8 + 24 + 60 + 16 = 108 bytes: two units.
        s.write(&dma, &[5; 60], 0, 0).unwrap();
        assert_eq!(s.written, 2);
        assert_eq!(header(&dma, C0).len, 60);
        let mut b = [0u8; 24 + 60 + 16];
        dma.read(C0 + 8, &mut b).unwrap();
        assert_eq!(b[..24], [0xee; 24]);
        assert_eq!(b[24..84], [5; 60]);
        assert_eq!(b[84..], [0xee; 16]);
    }

    #[test]
    fn never_overwrites_unread_records() {
        let (dma, _f) = two_region_space();
        let mut s = small(&dma, 0, 0);
        for _ in 0..8 {
            assert!(s.write(&dma, &[0; 100], 0, 0).is_ok());
        }
        s.publish(&dma).unwrap();
        assert!(!s.head_doorbell(17), "beyond the tail: ignored");
        assert!(!s.head_doorbell(u32::MAX), "behind the head: ignored");
        assert!(s.head_doorbell(8));
        assert!(s.write(&dma, &[0; 100], 0, 0).is_ok());
        assert!(s.unread());
        s.publish(&dma).unwrap();
        assert!(s.head_doorbell(18));
        assert!(!s.unread());
    }

    #[test]
    fn faults_corrupt_what_they_say() {
        let (dma, _f) = two_region_space();
        let mut s = small(&dma, 0, 0);
        s.fault(StreamFault::Length, 1);
        s.write(&dma, &[0; 60], 0, 0).unwrap();
        assert_eq!(header(&dma, C0).len, 60 + 0x8000);
        s.fault(StreamFault::Seq, 1);
        s.write(&dma, &[0; 60], 0, 0).unwrap();
        assert_eq!(header(&dma, C0 + 2 * 64).seq(), 1 ^ 0x21);
        s.fault(StreamFault::Tail, 1);
        s.publish(&dma).unwrap();
        assert_eq!(tail(&dma), 16 + 7);
        // It stays wrong: the next batch does not cover it up.
        s.write(&dma, &[0; 60], 0, 0).unwrap();
        s.publish(&dma).unwrap();
        assert_eq!(tail(&dma), 16 + 7);
        assert_eq!(s.take_injected(), 3);
    }
}
