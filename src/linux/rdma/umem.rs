// SPDX-License-Identifier: GPL-2.0

//! Memory of a process pinned for the device (`struct ib_umem`): what a
//! user memory region maps, as bus addresses of equal blocks.

use core::{marker::PhantomData, ptr::NonNull};

use kernel::prelude::*;

use crate::linux::{
    bindings,
    rdma::odp::{OdpClient, OdpMemory},
    rdma::verbs::Access,
};

/// A range of a process's memory a verb names, and the address a region
/// over it has.
#[derive(Clone, Copy, Debug)]
pub(crate) struct UserRange {
    /// The process's address of its first byte.
    pub(crate) addr: u64,
    /// Its length in bytes.
    pub(crate) len: u64,
    /// The region's address of its first byte.
    pub(crate) iova: u64,
}

/// The right to pin the memory of the process whose verb call is running,
/// for one device; lent to the driver for that call only.
///
/// # Invariants
///
/// `ibdev` is a registered device and the value lives only inside a
/// verb call of the process (it is neither `Send` nor `Sync`).
pub(crate) struct UserPin<'call> {
    ibdev: *mut bindings::ib_device,
    _call: PhantomData<&'call ()>,
}

impl UserPin<'_> {
    /// # Safety
    ///
    /// `ibdev` is a registered device; made inside a process's verb call
    /// and not kept past it.
    pub(super) unsafe fn new(ibdev: *mut bindings::ib_device) -> Self {
        // INVARIANT: As the function's contract says.
        Self {
            ibdev,
            _call: PhantomData,
        }
    }

    /// Registers `len` bytes at `addr` of the process on demand (nothing
    /// pinned) for `access`; `client` hears of the pages the kernel takes
    /// back.
    pub(crate) fn on_demand<T: OdpClient>(
        &self,
        addr: u64,
        len: u64,
        access: Access,
        client: T,
    ) -> Result<OdpMemory<T>> {
        // SAFETY: A registered device, in the process's call (invariant).
        unsafe { OdpMemory::get(self.ibdev, addr, len, access, client) }
    }

    /// Pins `len` bytes at `addr` of the process for `access`.
    pub(crate) fn pin(&self, addr: u64, len: u64, access: Access) -> Result<UserMemory> {
        // SAFETY: A registered device, in the process's call (invariant).
        // CAST: access flags, a bit mask kept in an int.
        unsafe { UserMemory::get(self.ibdev, addr, len, access.to_raw() as i32) }
    }
}

/// Pinned process memory, mapped for the device until drop.
///
/// # Invariants
///
/// `umem` came from `ib_umem_get` and is released once, on drop.
pub(crate) struct UserMemory {
    umem: NonNull<bindings::ib_umem>,
}

// SAFETY: A pinned umem may be released from any thread; `&UserMemory`
// only reads its fixed fields and scatterlist.
unsafe impl Send for UserMemory {}
// SAFETY: As above.
unsafe impl Sync for UserMemory {}

impl UserMemory {
    /// Pins `len` bytes at `addr` of the calling process for `ibdev`,
    /// with the verbs' `access` flags (write access pins for writing).
    ///
    /// # Safety
    ///
    /// `ibdev` is a registered device; called in the process's context
    /// (a verb call).
    pub(super) unsafe fn get(
        ibdev: *mut bindings::ib_device,
        addr: u64,
        len: u64,
        access: i32,
    ) -> Result<Self> {
        let len = usize::try_from(len).map_err(|_| EINVAL)?;
        // SAFETY: As the function's contract says; an ERR_PTR on failure.
        let umem = unsafe { bindings::rust_ext_umem_get(ibdev, addr, len, access) };
        let umem = kernel::error::from_err_ptr(umem)?;
        // INVARIANT: from `ib_umem_get`, released on drop.
        Ok(Self {
            umem: NonNull::new(umem).ok_or(ENOMEM)?,
        })
    }

    /// The process's address of the first byte pinned.
    pub(crate) fn addr(&self) -> u64 {
        // SAFETY: A live umem (type invariant); its address is fixed.
        unsafe { (*self.umem.as_ptr()).address as u64 }
    }

    /// Bytes pinned.
    pub(crate) fn len(&self) -> u64 {
        // SAFETY: A live umem (type invariant); its length is fixed.
        unsafe { (*self.umem.as_ptr()).length as u64 }
    }

    /// The largest block size (log2) among `sizes` (bit n: 2^n bytes)
    /// that describes the memory as seen at `iova`; `None` if none does.
    pub(crate) fn best_page_shift(&self, sizes: u64, iova: u64) -> Option<u8> {
        // SAFETY: A live umem (type invariant).
        let size =
            unsafe { bindings::ib_umem_find_best_pgsz(self.umem.as_ptr(), sizes as usize, iova) };
        // CAST: a bit number of a u64, at most 63.
        (size != 0).then(|| size.trailing_zeros() as u8)
    }

    /// How many `1 << shift`-byte blocks cover the memory.
    pub(crate) fn blocks(&self, shift: u8) -> usize {
        // SAFETY: A live umem (type invariant).
        unsafe { bindings::rust_ext_umem_num_dma_blocks(self.umem.as_ptr(), 1 << shift) }
    }

    /// The bus addresses of the memory's `1 << shift`-byte blocks
    /// (`rdma_umem_for_each_dma_block`).
    pub(crate) fn dma_blocks(&self, shift: u8) -> Result<KVec<u64>> {
        let n = self.blocks(shift);
        let mut out = KVec::with_capacity(n, GFP_KERNEL)?;
        let mut iter = core::mem::MaybeUninit::<bindings::ib_block_iter>::zeroed();
        let iter = iter.as_mut_ptr();
        // SAFETY: A live umem (type invariant); `iter` is ours to write.
        unsafe { bindings::rust_ext_umem_block_iter_start(iter, self.umem.as_ptr(), 1 << shift) };
        // SAFETY: Started on this umem just above, which outlives the loop.
        // The iterator stops after `blocks(shift)` blocks; `out` stops at
        // its capacity all the same.
        while out.len() < n && unsafe { bindings::rust_ext_umem_block_iter_next(iter) } {
            // SAFETY: The iterator is on a block (`next` said so).
            let addr = unsafe { bindings::rust_ext_block_iter_dma_address(iter) };
            out.push(addr, GFP_KERNEL)?;
        }
        Ok(out)
    }
}

impl Drop for UserMemory {
    fn drop(&mut self) {
        // SAFETY: From `ib_umem_get`, released once (type invariant).
        unsafe { bindings::ib_umem_release(self.umem.as_ptr()) };
    }
}
