// SPDX-License-Identifier: GPL-2.0

//! The card's view of host memory: the regions QEMU maps for DMA.
//!
//! QEMU sends a `dma_map` for each guest RAM region with the file descriptor
//! of the shared memory backend; the card mmaps it and translates bus
//! addresses (guest physical addresses, as the guest has no IOMMU) to host
//! pointers. Every access is bounds-checked: an address outside all mappings
//! is a [`DmaFault`], never a stray host access.

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::sync::atomic::{fence, AtomicU64, Ordering};

use memmap2::{MmapOptions, MmapRaw};

use crate::hw::ENTRY_FLAGS_OFFSET;

/// A DMA access touched bus addresses with no mapping behind them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DmaFault {
    /// First unmapped bus address of the access.
    pub addr: u64,
}

impl std::fmt::Display for DmaFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DMA to unmapped bus address {:#x}", self.addr)
    }
}

struct Mapping {
    map: MmapRaw,
    len: u64,
}

/// All DMA mappings of one function, keyed by bus address.
#[derive(Default)]
pub struct DmaSpace {
    maps: BTreeMap<u64, Mapping>,
}

impl DmaSpace {
    /// Adds the mapping of `size` bytes at bus address `addr`, backed by
    /// `file` at `offset`.
    pub fn map(&mut self, addr: u64, size: u64, file: &File, offset: u64) -> io::Result<()> {
        let len =
            usize::try_from(size).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        if size == 0 || addr.checked_add(size).is_none() {
            return Err(io::ErrorKind::InvalidInput.into());
        }
        let map = MmapOptions::new().offset(offset).len(len).map_raw(file)?;
        self.maps.insert(addr, Mapping { map, len: size });
        Ok(())
    }

    /// Removes every mapping that starts inside `[addr, addr + size)`.
    pub fn unmap(&mut self, addr: u64, size: u64) {
        let end = addr.saturating_add(size);
        self.maps
            .retain(|&start, _| !(start >= addr && start < end));
    }

    /// Finds the mapping holding `addr`: (host pointer, bytes left in it).
    fn translate(&self, addr: u64) -> Result<(*mut u8, u64), DmaFault> {
        let (&start, m) = self
            .maps
            .range(..=addr)
            .next_back()
            .ok_or(DmaFault { addr })?;
        let off = addr - start;
        if off >= m.len {
            return Err(DmaFault { addr });
        }
        // `off < m.len`, which is the mapped length, so this stays in the map.
        let ptr = m.map.as_mut_ptr().wrapping_add(off as usize);
        Ok((ptr, m.len - off))
    }

    /// Checks that `[addr, addr + len)` is fully mapped.
    fn check(&self, addr: u64, len: usize) -> Result<(), DmaFault> {
        let mut cur = addr;
        let end = addr.checked_add(len as u64).ok_or(DmaFault { addr })?;
        while cur < end {
            let (_, avail) = self.translate(cur)?;
            cur = cur.saturating_add(avail);
        }
        Ok(())
    }

    /// Copies host memory at `addr` into `buf`. Nothing is read on a fault.
    pub fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), DmaFault> {
        self.check(addr, buf.len())?;
        let mut done = 0;
        while done < buf.len() {
            let (ptr, avail) = self.translate(addr + done as u64)?;
            let n = (buf.len() - done).min(avail as usize);
            // SAFETY: `translate` returned a pointer with at least `avail >= n`
            // mapped bytes behind it; `buf[done..done + n]` is in bounds. The
            // guest may write the same memory concurrently, as with real DMA;
            // we copy bytes and never form a reference to shared memory.
            unsafe { std::ptr::copy_nonoverlapping(ptr, buf.as_mut_ptr().add(done), n) };
            done += n;
        }
        Ok(())
    }

    /// Appends the `len` bytes of host memory at `addr` to `out`, with no
    /// zero-fill first. Nothing is appended on a fault.
    pub fn read_append(&self, addr: u64, len: usize, out: &mut Vec<u8>) -> Result<(), DmaFault> {
        self.check(addr, len)?;
        out.reserve(len);
        let spare = &mut out.spare_capacity_mut()[..len];
        let mut done = 0;
        while done < len {
            let (ptr, avail) = self.translate(addr + done as u64)?;
            let n = (len - done).min(avail as usize);
            // SAFETY: as in `read`; `spare[done..done + n]` is in bounds
            // (`reserve` made `len` bytes of room) and is written, not read.
            unsafe { std::ptr::copy_nonoverlapping(ptr, spare.as_mut_ptr().add(done).cast(), n) };
            done += n;
        }
        // SAFETY: the `len` bytes after the old length were all written
        // above (the loop ends with `done == len`; `check` made every
        // `translate` in it succeed).
        unsafe { out.set_len(out.len() + len) };
        Ok(())
    }

    /// The 4-byte aligned word at `addr`, as an atomic.
    fn word(&self, addr: u64) -> Result<&std::sync::atomic::AtomicU32, DmaFault> {
        if !addr.is_multiple_of(4) {
            return Err(DmaFault { addr });
        }
        let (ptr, avail) = self.translate(addr)?;
        if avail < 4 || !(ptr as usize).is_multiple_of(4) {
            return Err(DmaFault { addr });
        }
        // SAFETY: `translate` returned a pointer with at least 4 mapped
        // bytes behind it, 4-byte aligned (checked), so it is valid for an
        // atomic u32 as long as the mapping, which `&self` keeps; the
        // guest accesses the word only with plain aligned loads and
        // stores.
        Ok(unsafe { std::sync::atomic::AtomicU32::from_ptr(ptr.cast::<u32>()) })
    }

    /// Stores the 4-byte aligned little-endian word at `addr` in one
    /// access, with release ordering: a reader that sees the new value
    /// sees everything written before it, never half of the word (a
    /// position the driver reads while the card moves it).
    pub fn store_u32(&self, addr: u64, value: u32) -> Result<(), DmaFault> {
        self.word(addr)?
            .store(value.to_le(), std::sync::atomic::Ordering::Release);
        Ok(())
    }

    /// Loads the 4-byte aligned little-endian word at `addr` in one
    /// access, with acquire ordering: what the driver wrote before it
    /// (descriptors before a tail) is seen after it.
    pub fn load_u32(&self, addr: u64) -> Result<u32, DmaFault> {
        Ok(u32::from_le(
            self.word(addr)?.load(std::sync::atomic::Ordering::Acquire),
        ))
    }

    /// Whether `len` bytes at `addr` are all mapped.
    pub fn is_mapped(&self, addr: u64, len: usize) -> bool {
        self.check(addr, len).is_ok()
    }

    /// Copies `buf` into host memory at `addr`. Nothing is written on a fault.
    pub fn write(&self, addr: u64, buf: &[u8]) -> Result<(), DmaFault> {
        self.check(addr, buf.len())?;
        let mut done = 0;
        while done < buf.len() {
            let (ptr, avail) = self.translate(addr + done as u64)?;
            let n = (buf.len() - done).min(avail as usize);
            // SAFETY: as in `read`, with the copy going the other way; the
            // mapping is shared and writable (QEMU maps guest RAM read-write).
            unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr().add(done), ptr, n) };
            done += n;
        }
        Ok(())
    }

    /// Writes the 8 bytes at `addr` (8-byte aligned) in one store, which
    /// a CPU reading them sees whole or not at all (an RDMA ATOMIC
    /// WRITE); unaligned, an ordinary write.
    pub fn write_u64(&self, addr: u64, value: [u8; 8]) -> Result<(), DmaFault> {
        self.check(addr, value.len())?;
        let (ptr, avail) = self.translate(addr)?;
        if avail < 8 || !addr.is_multiple_of(8) || !ptr.cast::<u64>().is_aligned() {
            return self.write(addr, &value);
        }
        // SAFETY: `translate` gave a pointer into the shared, writable
        // mapping of guest RAM with at least 8 bytes behind it, aligned
        // for a u64 (checked above); the guest may touch the same bytes
        // at any time, which is what an atomic access allows.
        let word = unsafe { AtomicU64::from_ptr(ptr.cast::<u64>()) };
        word.store(u64::from_ne_bytes(value), Ordering::Release);
        Ok(())
    }
}

/// Host memory by bus address (the function's DMA space; a plain buffer
/// in tests).
pub trait HostMem {
    /// Reads `buf.len()` bytes at `addr`.
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), DmaFault>;
    /// Writes `buf` at `addr`.
    fn write(&self, addr: u64, buf: &[u8]) -> Result<(), DmaFault>;

    /// Writes 8 bytes at `addr` in one store where the memory allows it
    /// (an RDMA ATOMIC WRITE).
    fn write_u64(&self, addr: u64, value: [u8; 8]) -> Result<(), DmaFault> {
        self.write(addr, &value)
    }

    /// Writes a ring entry (CQE, EQE, admin entry) whose flags word, at
    /// [`ENTRY_FLAGS_OFFSET`], holds the bit that tells the driver it is
    /// there: that word last, behind a release fence, so a driver that
    /// sees the new phase finds the whole entry (written the other way, it
    /// may pair the new phase with the previous lap's slot and queue
    /// number).
    fn write_flags_last(&self, addr: u64, entry: &[u8]) -> Result<(), DmaFault> {
        let flags = ENTRY_FLAGS_OFFSET..ENTRY_FLAGS_OFFSET + 2;
        self.write(addr, &entry[..flags.start])?;
        self.write(addr + flags.end as u64, &entry[flags.end..])?;
        fence(Ordering::Release);
        self.write(addr + flags.start as u64, &entry[flags])
    }
}

impl HostMem for DmaSpace {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), DmaFault> {
        DmaSpace::read(self, addr, buf)
    }

    fn write(&self, addr: u64, buf: &[u8]) -> Result<(), DmaFault> {
        DmaSpace::write(self, addr, buf)
    }

    fn write_u64(&self, addr: u64, value: [u8; 8]) -> Result<(), DmaFault> {
        DmaSpace::write_u64(self, addr, value)
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use std::io::{Read, Seek, SeekFrom, Write};

    /// A DMA space over a temporary file standing in for guest RAM:
    /// two regions, [0x1000, 0x3000) and [0x3000, 0x4000), back to back.
    pub fn two_region_space() -> (DmaSpace, File) {
        let mut file = tempfile();
        file.write_all(&vec![0u8; 0x3000]).unwrap();
        let mut space = DmaSpace::default();
        space.map(0x1000, 0x2000, &file, 0).unwrap();
        space.map(0x3000, 0x1000, &file, 0x2000).unwrap();
        file.seek(SeekFrom::Start(0)).unwrap();
        (space, file)
    }

    fn tempfile() -> File {
        let path = std::env::temp_dir().join(format!(
            "rsnic-emu-test-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        std::fs::remove_file(&path).unwrap();
        file
    }

    #[test]
    fn write_then_read_across_regions() {
        let (space, mut file) = two_region_space();
        let data: Vec<u8> = (0..0x200u32).map(|i| i as u8).collect();
        space.write(0x2f00, &data).unwrap();
        let mut back = vec![0u8; data.len()];
        space.read(0x2f00, &mut back).unwrap();
        assert_eq!(back, data);
        // And the bytes really landed in the backing file at the right place.
        let mut raw = vec![0u8; 0x200];
        file.seek(SeekFrom::Start(0x1f00)).unwrap();
        file.read_exact(&mut raw).unwrap();
        assert_eq!(raw, data);
    }

    #[test]
    fn unmapped_access_faults_without_writing() {
        let (space, _file) = two_region_space();
        assert_eq!(
            space.write(0x3f00, &[1u8; 0x200]),
            Err(DmaFault { addr: 0x4000 })
        );
        let mut back = [0u8; 0x100];
        space.read(0x3f00, &mut back).unwrap();
        assert_eq!(back, [0u8; 0x100], "a faulting write must write nothing");
        assert_eq!(space.read(0x0, &mut back), Err(DmaFault { addr: 0 }));
        assert!(space.read(u64::MAX - 4, &mut [0u8; 8]).is_err());
    }

    #[test]
    fn read_append_across_regions_or_not_at_all() {
        let (space, _file) = two_region_space();
        let data: Vec<u8> = (0..0x200u32).map(|i| i as u8).collect();
        space.write(0x2f00, &data).unwrap();
        let mut out = b"head".to_vec();
        space.read_append(0x2f00, 0x200, &mut out).unwrap();
        assert_eq!((&out[..4], &out[4..]), (&b"head"[..], &data[..]));
        assert!(space.read_append(0x3f00, 0x200, &mut out).is_err());
        assert_eq!(out.len(), 0x204, "a faulting read appends nothing");
    }

    #[test]
    fn unmap_removes_region() {
        let (mut space, _file) = two_region_space();
        space.unmap(0x3000, 0x1000);
        assert!(space.read(0x3000, &mut [0u8; 1]).is_err());
        assert!(space.read(0x2fff, &mut [0u8; 1]).is_ok());
    }
}
