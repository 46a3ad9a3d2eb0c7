// SPDX-License-Identifier: GPL-2.0

//! A coherent DMA buffer the device and the driver share, with bounded
//! copies in and out.
//!
//! Unlike `dma::Coherent::as_ref`, nothing here hands out references into
//! memory the device may be writing: every access is a bounds-checked
//! volatile copy, so a device that writes at the wrong time can corrupt
//! data but never make the driver's Rust code unsound.

use kernel::{
    device::{Bound, Device},
    dma::{Coherent, DmaAddress},
    prelude::*,
};

/// A byte buffer in coherent DMA memory.
pub(crate) struct DmaBuffer {
    mem: Coherent<[u8]>,
}

impl DmaBuffer {
    /// Allocates `len` zeroed bytes of coherent memory for `dev`.
    pub(crate) fn alloc(dev: &Device<Bound>, len: usize) -> Result<Self> {
        Ok(Self {
            mem: Coherent::zeroed_slice(dev, len, GFP_KERNEL)?,
        })
    }

    /// Length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.mem.len()
    }

    /// Bus address of byte `offset`, for handing to the device.
    pub(crate) fn dma_addr(&self, offset: usize) -> Result<DmaAddress> {
        if offset > self.len() {
            return Err(EINVAL);
        }
        Ok(self.mem.dma_handle() + offset as DmaAddress)
    }

    fn check(&self, offset: usize, len: usize) -> Result {
        match offset.checked_add(len) {
            Some(end) if end <= self.len() => Ok(()),
            _ => Err(EINVAL),
        }
    }

    /// Copies bytes starting at `offset` into `out`.
    pub(crate) fn read(&self, offset: usize, out: &mut [u8]) -> Result {
        self.check(offset, out.len())?;
        let base = self.mem.as_ptr().cast::<u8>();
        for (i, byte) in out.iter_mut().enumerate() {
            // SAFETY: `offset + i < offset + out.len() <= self.len()` by
            // `check`, so the pointer is inside the allocation. A volatile
            // read tolerates the device writing the byte concurrently.
            *byte = unsafe { base.add(offset + i).read_volatile() };
        }
        Ok(())
    }

    /// The `N`-byte entry at `offset` (a completion or event the device
    /// writes into a ring), if the device has published it.
    ///
    /// The device writes the entry's 16-bit little-endian flags word, at
    /// `offset + flags_at`, last. That word is read first and handed to
    /// `published`; only if it says yes is the entry read, after a DMA
    /// read barrier, so no byte of it is older than the word that
    /// announced it (read in one copy, a new flags word may come with the
    /// previous lap's contents). `None` too if the entry is out of bounds.
    pub(crate) fn read_published<const N: usize>(
        &self,
        offset: usize,
        flags_at: usize,
        published: impl FnOnce(u16) -> bool,
    ) -> Option<[u8; N]> {
        let mut flags = [0u8; 2];
        self.read(offset.checked_add(flags_at)?, &mut flags).ok()?;
        if !published(u16::from_le_bytes(flags)) {
            return None;
        }
        // SAFETY: `dma_rmb` has no preconditions.
        unsafe { crate::ffi::rsnic_dma_rmb() };
        let mut entry = [0u8; N];
        self.read(offset, &mut entry).ok()?;
        Some(entry)
    }

    /// Copies `data` into the buffer starting at `offset`.
    pub(crate) fn write(&self, offset: usize, data: &[u8]) -> Result {
        self.check(offset, data.len())?;
        let base = self.mem.as_mut_ptr().cast::<u8>();
        for (i, &byte) in data.iter().enumerate() {
            // SAFETY: in bounds as in `read`; a volatile write tolerates the
            // device accessing the byte concurrently.
            unsafe { base.add(offset + i).write_volatile(byte) };
        }
        Ok(())
    }
}
