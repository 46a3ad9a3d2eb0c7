// SPDX-License-Identifier: GPL-2.0

//! DMA for a bound device: its addressing limits (set at probe), coherent
//! buffers shared with the device ([`DmaBuffer`]), and the handle that
//! allocates them after probe ([`DmaDevice`]).
//!
//! Unlike `dma::Coherent::as_ref`, nothing here hands out references into
//! memory the device may be writing: every access is a bounds-checked
//! volatile copy, so a device that writes at the wrong time can corrupt
//! data but never make the driver's Rust code unsound.

use kernel::{
    device::{Bound, Core, Device},
    dma::{self, Coherent, Device as _, DmaAddress},
    pci,
    prelude::*,
    sync::aref::ARef,
};

use super::bindings;

/// Declares what `pdev` can do for DMA: address all 64 bits (streaming and
/// coherent), and take a mapped segment of any 32-bit length (an RDMA
/// SGE's; ULPs map scatterlists for the RDMA engine through the PF, and
/// without this the DMA layer assumes 64 KiB, which the block layer's
/// merged segments exceed). Call from `probe`, before any DMA allocation
/// for the device.
pub(crate) fn set_dma_limits(pdev: &pci::Device<Core<'_>>) -> Result {
    // SAFETY: Called from probe before the driver allocates or maps any DMA
    // memory for this device, and probe is not run concurrently for one
    // device, so nothing races with the mask change.
    unsafe { pdev.dma_set_mask_and_coherent(dma::DmaMask::new::<64>()) }?;
    // SAFETY: As above: no DMA allocation or mapping for this device can
    // run concurrently with probe.
    unsafe { pdev.dma_set_max_seg_size(u32::MAX) };
    Ok(())
}

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

    /// Copies bytes starting at `offset` into `out`: a byte at a time up
    /// to an 8-byte boundary, then whole words (one load each instead of
    /// eight), then the bytes left.
    pub(crate) fn read(&self, offset: usize, out: &mut [u8]) -> Result {
        self.check(offset, out.len())?;
        // SAFETY: `offset <= self.len()` by `check`: at most one past the
        // end of the allocation.
        let start = unsafe { self.mem.as_ptr().cast::<u8>().add(offset) };
        let head = start.align_offset(8).min(out.len());
        let (bytes, rest) = out.split_at_mut(head);
        for (i, byte) in bytes.iter_mut().enumerate() {
            // SAFETY: `i < head <= out.len()`, so `offset + i` is inside the
            // allocation (`check`). A volatile read tolerates the device
            // writing the byte concurrently.
            *byte = unsafe { start.add(i).read_volatile() };
        }
        let mut words = rest.chunks_exact_mut(8);
        let mut at = head;
        for word in &mut words {
            // SAFETY: `at + 8 <= out.len()`, so the word is inside the
            // allocation, and `start + head` is 8-byte aligned
            // (`align_offset`), as is every 8 bytes on. A volatile aligned
            // load tolerates the device writing concurrently (it may see a
            // mix of old and new bytes, as byte loads would).
            let w = unsafe { start.add(at).cast::<u64>().read_volatile() };
            word.copy_from_slice(&w.to_ne_bytes());
            at += 8;
        }
        for (i, byte) in words.into_remainder().iter_mut().enumerate() {
            // SAFETY: `at + i < out.len()`: inside the allocation, as above.
            *byte = unsafe { start.add(at + i).read_volatile() };
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
        unsafe { bindings::rust_ext_dma_rmb() };
        let mut entry = [0u8; N];
        self.read(offset, &mut entry).ok()?;
        Some(entry)
    }

    /// A 32-bit little-endian position the device publishes at `offset`
    /// (how far it wrote into a stream), read before anything it
    /// announces: a DMA read barrier follows the read. `None` if out of
    /// bounds.
    /// The word is read in one access (it must be 4-byte aligned): read
    /// byte by byte while the device moves it, it could mix the old value
    /// with the new.
    pub(crate) fn read_position(&self, offset: usize) -> Option<u32> {
        if !offset.is_multiple_of(4) {
            return None;
        }
        self.check(offset, 4).ok()?;
        let base = self.mem.as_ptr().cast::<u8>();
        // SAFETY: `offset..offset + 4` is inside the allocation (`check`),
        // and the address is 4-byte aligned: coherent allocations are at
        // least page aligned and `offset` is a multiple of 4. A volatile
        // aligned u32 load is one access, which the device may write
        // concurrently.
        let word = unsafe { base.add(offset).cast::<u32>().read_volatile() };
        // SAFETY: `dma_rmb` has no preconditions.
        unsafe { bindings::rust_ext_dma_rmb() };
        Some(u32::from_le(word))
    }

    /// Stores the 32-bit little-endian word `value` at `offset` in one
    /// access (it must be 4-byte aligned), for a position the device
    /// reads while the driver moves it: written byte by byte, the device
    /// could see half of the old value and half of the new.
    pub(crate) fn write_position(&self, offset: usize, value: u32) -> Result {
        if !offset.is_multiple_of(4) {
            return Err(EINVAL);
        }
        self.check(offset, 4)?;
        let base = self.mem.as_mut_ptr().cast::<u8>();
        // SAFETY: `offset..offset + 4` is inside the allocation (`check`),
        // and the address is 4-byte aligned (as in `read_position`). A
        // volatile aligned u32 store is one access, which the device may
        // read concurrently.
        unsafe { base.add(offset).cast::<u32>().write_volatile(value.to_le()) };
        Ok(())
    }

    /// Copies `data` into the buffer starting at `offset`, in whole
    /// words where it can (as [`Self::read`]).
    pub(crate) fn write(&self, offset: usize, data: &[u8]) -> Result {
        self.check(offset, data.len())?;
        // SAFETY: `offset <= self.len()` by `check`: at most one past the
        // end of the allocation.
        let start = unsafe { self.mem.as_mut_ptr().cast::<u8>().add(offset) };
        let head = start.align_offset(8).min(data.len());
        let (bytes, rest) = data.split_at(head);
        for (i, &byte) in bytes.iter().enumerate() {
            // SAFETY: in bounds as in `read`; a volatile write tolerates the
            // device accessing the byte concurrently.
            unsafe { start.add(i).write_volatile(byte) };
        }
        let words = rest.chunks_exact(8);
        let tail = words.remainder();
        let mut at = head;
        for word in words {
            let mut w = [0u8; 8];
            w.copy_from_slice(word);
            // SAFETY: in bounds and aligned as in `read`; a volatile aligned
            // store tolerates the device reading concurrently.
            unsafe {
                start
                    .add(at)
                    .cast::<u64>()
                    .write_volatile(u64::from_ne_bytes(w))
            };
            at += 8;
        }
        for (i, &byte) in tail.iter().enumerate() {
            // SAFETY: `at + i < data.len()`: inside the allocation.
            unsafe { start.add(at + i).write_volatile(byte) };
        }
        Ok(())
    }
}

/// DMA access to a device the driver is bound to.
///
/// The upstream allocator wants a `&Device<Bound>`, which only probe
/// holds; the network device calls back later. A `DmaDevice` (and every
/// mapping or pool made through it) lives in the network device's driver
/// state, which unbind drops before the device unbinds, so the device is
/// bound whenever it is used.
#[derive(Clone)]
pub(crate) struct DmaDevice {
    dev: ARef<Device>,
}

impl DmaDevice {
    /// DMA access for `dev`; keep it only in state dropped at unbind.
    pub(crate) fn new(dev: &Device<Bound>) -> Self {
        let dev: &Device = dev;
        Self { dev: dev.into() }
    }

    /// Allocates `len` zeroed bytes of coherent memory.
    pub(crate) fn alloc(&self, len: usize) -> Result<DmaBuffer> {
        let dev: *const Device = &*self.dev;
        // SAFETY: `Device<Ctx>` is `repr(transparent)` over the same
        // `struct device` for every context; by the type's contract the
        // driver is bound while a `DmaDevice` exists.
        let bound = unsafe { &*dev.cast::<Device<Bound>>() };
        DmaBuffer::alloc(bound, len)
    }

    /// The `struct device`, for the mapping and page-pool wrappers.
    ///
    /// `Device` is `repr(transparent)` over `struct device`, so the cast
    /// pointer is the device's `struct device`.
    pub(super) fn as_raw(&self) -> *mut bindings::device {
        let dev: *const Device = &*self.dev;
        dev.cast_mut().cast()
    }
}
