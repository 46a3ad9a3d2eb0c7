// SPDX-License-Identifier: GPL-2.0

//! The card's device memory ([`hw::rdma::dm`], `ibv_alloc_dm`): a shared
//! memory file the size of the user doorbell BAR. The host's loads and
//! stores to the BAR's device-memory part are messages the backend
//! serves, or, with `--dm-mmap`, land in the file directly (QEMU maps it
//! as a sparse mmap area of the BAR; off by default: it slowed the TX
//! doorbell path, see `main.rs`). The RDMA engine reads and writes it as
//! it does host memory, through bus addresses at [`WINDOW`] and above,
//! which no host memory has ([`WithDeviceMemory`]).

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::sync::{Mutex, MutexGuard};

use memmap2::{MmapOptions, MmapRaw};

use crate::dma::{DmaFault, HostMem};
use crate::hw::rdma::{dm, udb};

/// Device memory seen as bus addresses: offset `o` is `WINDOW + o`.
pub const WINDOW: u64 = 1 << 62;

/// The device memory of one card and its allocations.
#[derive(Debug)]
pub struct DeviceMemory {
    file: File,
    /// The device-memory part of `file`.
    map: MmapRaw,
    /// Allocations: offset to bytes (whole pages).
    allocs: Mutex<BTreeMap<u64, u64>>,
}

impl DeviceMemory {
    /// Zeroed device memory with nothing allocated.
    pub fn new() -> io::Result<Self> {
        // SAFETY: A NUL-terminated name and valid flags; the descriptor
        // returned is ours.
        let fd = unsafe { libc::memfd_create(c"rsnic-dm".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: A descriptor just made, owned by nothing else.
        let file = unsafe { File::from_raw_fd(fd) };
        file.set_len(udb::BAR_SIZE as u64)?;
        let map = MmapOptions::new()
            .offset(dm::BAR_OFFSET as u64)
            .len(dm::SIZE)
            .map_raw(&file)?;
        Ok(Self {
            file,
            map,
            allocs: Mutex::new(BTreeMap::new()),
        })
    }

    /// The file QEMU maps (the whole BAR's size; only the device-memory
    /// part is offered to it).
    pub fn fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }

    fn allocs(&self) -> MutexGuard<'_, BTreeMap<u64, u64>> {
        self.allocs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Allocates `len` bytes (whole pages, the first gap that fits),
    /// zeroed; `None` if none fits or `len` is 0 or too large.
    pub fn alloc(&self, len: u64) -> Option<u64> {
        if len == 0 || len > dm::SIZE as u64 {
            return None;
        }
        let len = len.div_ceil(dm::PAGE) * dm::PAGE;
        let mut allocs = self.allocs();
        let mut at = 0u64;
        for (&off, &n) in allocs.iter() {
            if off - at >= len {
                break;
            }
            at = off + n;
        }
        if at + len > dm::SIZE as u64 {
            return None;
        }
        allocs.insert(at, len);
        drop(allocs);
        self.fill(at, len, 0);
        Some(at)
    }

    /// Bytes of the allocation at `offset`, if there is one.
    pub fn allocation_len(&self, offset: u64) -> Option<u64> {
        self.allocs().get(&offset).copied()
    }

    /// Frees the allocation at `offset`; false if there is none.
    pub fn free(&self, offset: u64) -> bool {
        self.allocs().remove(&offset).is_some()
    }

    /// Whether `len` bytes at `offset` lie inside one allocation.
    pub fn is_allocated(&self, offset: u64, len: u64) -> bool {
        let Some(end) = offset.checked_add(len) else {
            return false;
        };
        self.allocs()
            .range(..=offset)
            .next_back()
            .is_some_and(|(&o, &n)| end <= o + n)
    }

    /// A function reset: nothing allocated, the memory zeroed.
    pub fn reset(&self) {
        self.allocs().clear();
        self.fill(0, dm::SIZE as u64, 0);
    }

    fn fill(&self, offset: u64, len: u64, byte: u8) {
        // SAFETY: `offset + len` is within the mapping (callers pass an
        // allocation or the whole); the guest may touch the same bytes,
        // which a byte-wise fill of shared memory tolerates.
        unsafe {
            std::ptr::write_bytes(
                self.map.as_mut_ptr().add(offset as usize),
                byte,
                len as usize,
            )
        };
    }

    /// The pointer to `len` bytes at `offset`, if they are inside.
    fn at(&self, offset: u64, len: usize) -> Result<*mut u8, DmaFault> {
        let fault = DmaFault {
            addr: WINDOW + offset,
        };
        let end = offset.checked_add(len as u64).ok_or(fault)?;
        if end > dm::SIZE as u64 {
            return Err(fault);
        }
        // SAFETY: In bounds (checked above).
        Ok(unsafe { self.map.as_mut_ptr().add(offset as usize) })
    }

    /// Copies `buf.len()` bytes at `offset` into `buf`.
    pub fn read(&self, offset: u64, buf: &mut [u8]) -> Result<(), DmaFault> {
        let ptr = self.at(offset, buf.len())?;
        // SAFETY: `at` checked the range; the guest may write the same
        // memory meanwhile, as with host memory: bytes are copied, no
        // reference to shared memory is formed.
        unsafe { std::ptr::copy_nonoverlapping(ptr, buf.as_mut_ptr(), buf.len()) };
        Ok(())
    }

    /// Copies `buf` to `offset`.
    pub fn write(&self, offset: u64, buf: &[u8]) -> Result<(), DmaFault> {
        let ptr = self.at(offset, buf.len())?;
        // SAFETY: As in `read`.
        unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr(), ptr, buf.len()) };
        Ok(())
    }
}

/// Host memory with the card's device memory at [`WINDOW`]: what the
/// RDMA engine reaches.
pub struct WithDeviceMemory<'a> {
    /// Host memory (every address below the window).
    pub host: &'a dyn HostMem,
    /// The card's device memory.
    pub dm: &'a DeviceMemory,
}

impl HostMem for WithDeviceMemory<'_> {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), DmaFault> {
        match addr.checked_sub(WINDOW) {
            Some(offset) => self.dm.read(offset, buf),
            None => self.host.read(addr, buf),
        }
    }

    fn write(&self, addr: u64, buf: &[u8]) -> Result<(), DmaFault> {
        match addr.checked_sub(WINDOW) {
            Some(offset) => self.dm.write(offset, buf),
            None => self.host.write(addr, buf),
        }
    }

    fn write_u64(&self, addr: u64, value: [u8; 8]) -> Result<(), DmaFault> {
        match addr.checked_sub(WINDOW) {
            Some(offset) => self.dm.write(offset, &value),
            None => self.host.write_u64(addr, value),
        }
    }

    fn write_flags_last(&self, addr: u64, entry: &[u8]) -> Result<(), DmaFault> {
        // Rings are host memory.
        self.host.write_flags_last(addr, entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_fit_whole_pages_and_stay_apart() {
        let dm = DeviceMemory::new().unwrap();
        let a = dm.alloc(100).unwrap();
        let b = dm.alloc(4097).unwrap();
        assert_eq!((a, b), (0, 4096));
        assert!(dm.is_allocated(0, 4096));
        assert!(!dm.is_allocated(0, 4097), "past the end of the first");
        assert!(dm.is_allocated(4096, 8192));
        assert!(dm.alloc(dm::SIZE as u64).is_none(), "no room");
        assert!(dm.free(a));
        assert!(!dm.free(a), "freed once");
        assert_eq!(dm.alloc(4096), Some(0), "the gap is reused");
        assert!(dm.alloc(0).is_none());
    }

    #[test]
    fn the_window_routes_to_device_memory_and_bounds_hold() {
        let dm = DeviceMemory::new().unwrap();
        let host = crate::dma::tests::two_region_space().0;
        let mem = WithDeviceMemory {
            host: &host,
            dm: &dm,
        };
        mem.write(WINDOW + 8, b"card").unwrap();
        let mut got = [0u8; 4];
        dm.read(8, &mut got).unwrap();
        assert_eq!(&got, b"card");
        assert!(mem.read(WINDOW + dm::SIZE as u64 - 2, &mut got).is_err());
        assert!(mem.write(WINDOW + u64::MAX / 2, b"x").is_err());
    }
}
