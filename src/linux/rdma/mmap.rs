// SPDX-License-Identifier: GPL-2.0

//! What a process maps of its device context (`mmap` on the uverbs file):
//! entries ib_core hands out offsets for (`rdma_user_mmap_entry`), each
//! either a page of device registers (doorbells) or memory the device and
//! the process share (queue rings).
//!
//! Lifetimes: a [`UserMapping`] belongs to the object that made it (a
//! context, a CQ, a QP); dropping it removes the entry, so the process
//! can map it no more. ib_core frees the entry (`mmap_free`) once no
//! mapping refers to it either. Register pages are zapped by ib_core when
//! the device goes; memory pages hold a page reference per mapped page,
//! so they outlive [`SharedPages`]' drop until the process unmaps them,
//! though the device no longer reaches them by then.

use core::ptr::NonNull;

use kernel::{
    dma::DmaAddress, ffi::c_int, mm::virt::VmaNew, page::PAGE_SIZE, prelude::*, sync::Arc,
    types::Opaque,
};

use crate::linux::{bindings, dma::DmaDevice};

/// Zeroed, physically contiguous pages, mapped for a device both ways,
/// which a process may map too (a queue ring the process writes and the
/// device reads, or the other way).
///
/// # Invariants
///
/// `page` heads a compound page of `PAGE_SIZE << order` bytes of which we
/// own one reference, mapped on `dma`'s device at `addr` until drop;
/// `len` (whole pages) is at most that.
pub(crate) struct SharedPages {
    page: NonNull<bindings::page>,
    order: u32,
    len: usize,
    addr: DmaAddress,
    dma: DmaDevice,
}

// SAFETY: Owned, mapped pages may be used and freed from any thread; the
// struct itself gives no access to their contents.
unsafe impl Send for SharedPages {}
// SAFETY: As above: `&SharedPages` only reads the fields.
unsafe impl Sync for SharedPages {}

impl SharedPages {
    /// `len` bytes rounded up to whole pages, zeroed, physically
    /// contiguous, mapped for `dma`'s device.
    pub(crate) fn alloc(dma: &DmaDevice, len: usize) -> Result<Arc<Self>> {
        let pages = len.div_ceil(PAGE_SIZE).max(1);
        let order = pages.next_power_of_two().trailing_zeros();
        // SAFETY: Any order is accepted (too large fails).
        let page =
            NonNull::new(unsafe { bindings::rust_ext_alloc_zeroed_pages(order) }).ok_or(ENOMEM)?;
        let size = PAGE_SIZE << order;
        // SAFETY: `dma` is a bound device; the page is ours, `size` long.
        let addr = unsafe { bindings::rust_ext_dma_map_chunk(dma.as_raw(), page.as_ptr(), size) };
        // SAFETY: `addr` came from the mapping call just above.
        if unsafe { bindings::rust_ext_dma_mapping_error(dma.as_raw(), addr) } != 0 {
            // SAFETY: Our only reference, not mapped.
            unsafe { bindings::rust_ext_put_page(page.as_ptr()) };
            return Err(ENOMEM);
        }
        // INVARIANT: allocated and mapped whole just now.
        let pages = Arc::new(
            Self {
                page,
                order,
                len: pages * PAGE_SIZE,
                addr,
                dma: dma.clone(),
            },
            GFP_KERNEL,
        )?;
        Ok(pages)
    }

    /// Bus address of the first byte.
    pub(crate) fn dma_addr(&self) -> DmaAddress {
        self.addr
    }

    /// Bytes (whole pages): what a process maps.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl Drop for SharedPages {
    fn drop(&mut self) {
        // SAFETY: Mapped on this device (type invariant), unmapped once;
        // then our reference goes (a process's mappings keep theirs).
        unsafe {
            bindings::rust_ext_dma_unmap_chunk(
                self.dma.as_raw(),
                self.addr,
                PAGE_SIZE << self.order,
            );
            bindings::rust_ext_put_page(self.page.as_ptr());
        }
    }
}

/// What a mapping shows the process.
pub(crate) enum MapTarget {
    /// One page of device registers at physical address `phys`, uncached.
    Registers {
        /// CPU physical address of the page (page aligned).
        phys: u64,
    },
    /// Shared memory.
    Pages(Arc<SharedPages>),
    /// Memory on the device, `len` bytes (whole pages) at physical address
    /// `phys` of one of its BARs, uncached.
    DeviceMemory {
        /// CPU physical address of the first byte (page aligned).
        phys: u64,
        /// Bytes, whole pages.
        len: usize,
    },
}

impl MapTarget {
    fn len(&self) -> usize {
        match self {
            Self::Registers { .. } => PAGE_SIZE,
            Self::Pages(p) => p.len(),
            Self::DeviceMemory { len, .. } => *len,
        }
    }
}

/// ib_core's entry and what it maps; allocated here, freed by `mmap_free`.
#[repr(C)]
struct MmapEntry {
    rdma: Opaque<bindings::rdma_user_mmap_entry>,
    target: MapTarget,
}

/// A mapping the process of one context may make.
///
/// # Invariants
///
/// `entry` was inserted into its context and not removed; ib_core keeps
/// it (and so our `MmapEntry`) until after it is removed.
pub(crate) struct UserMapping {
    entry: NonNull<MmapEntry>,
}

// SAFETY: The handle only names the entry; removal may happen anywhere.
unsafe impl Send for UserMapping {}
// SAFETY: `&UserMapping` only reads the entry's offset, fixed at insertion.
unsafe impl Sync for UserMapping {}

impl UserMapping {
    /// Offers `target` to the process of `uctx`.
    ///
    /// # Safety
    ///
    /// `uctx` is a live user context of the device (during a verb call of
    /// its process).
    pub(super) unsafe fn insert(
        uctx: *mut bindings::ib_ucontext,
        target: MapTarget,
    ) -> Result<Self> {
        // SAFETY: The caller's promise.
        unsafe { Self::insert_in(uctx, target, 0, u32::MAX) }
    }

    /// Offers `target` to the process of `uctx` at page offset `pgoff`
    /// exactly (`EBUSY`-like failure if another entry holds it): for
    /// an object whose offset the process computes itself.
    ///
    /// # Safety
    ///
    /// As [`Self::insert`].
    pub(super) unsafe fn insert_at(
        uctx: *mut bindings::ib_ucontext,
        target: MapTarget,
        pgoff: u32,
    ) -> Result<Self> {
        // SAFETY: The caller's promise.
        unsafe { Self::insert_in(uctx, target, pgoff, pgoff) }
    }

    /// # Safety
    ///
    /// As [`Self::insert`].
    unsafe fn insert_in(
        uctx: *mut bindings::ib_ucontext,
        target: MapTarget,
        min_pgoff: u32,
        max_pgoff: u32,
    ) -> Result<Self> {
        let len = target.len();
        let entry = KBox::new(
            MmapEntry {
                rdma: Opaque::zeroed(),
                target,
            },
            GFP_KERNEL,
        )?;
        let raw = KBox::into_raw(entry);
        // SAFETY: `uctx` is live (caller); the entry is zeroed and ours
        // until inserted, then ib_core's until `mmap_free`.
        let ret = unsafe {
            bindings::rdma_user_mmap_entry_insert_range(
                uctx,
                (*raw).rdma.get(),
                len,
                min_pgoff,
                max_pgoff,
            )
        };
        if ret != 0 {
            // SAFETY: Not inserted: still only ours.
            drop(unsafe { KBox::from_raw(raw) });
            return Err(Error::from_errno(ret));
        }
        // INVARIANT: inserted just now. `raw` is not null (a box).
        Ok(Self {
            entry: NonNull::new(raw).ok_or(EINVAL)?,
        })
    }

    /// The offset the process passes to `mmap()`.
    pub(crate) fn offset(&self) -> u64 {
        // SAFETY: Inserted and not freed (type invariant).
        unsafe { bindings::rust_ext_mmap_entry_offset((*self.entry.as_ptr()).rdma.get()) }
    }
}

impl Drop for UserMapping {
    fn drop(&mut self) {
        // SAFETY: Inserted and not removed (type invariant); removed once.
        unsafe { bindings::rdma_user_mmap_entry_remove((*self.entry.as_ptr()).rdma.get()) };
    }
}

/// `mmap` on the uverbs file of `uctx`: maps the entry `vma`'s offset
/// names.
///
/// # Safety
///
/// ib_core's call: `uctx` and `vma` are live, the mmap lock held.
pub(super) unsafe fn mmap(
    uctx: *mut bindings::ib_ucontext,
    vma: *mut bindings::vm_area_struct,
) -> c_int {
    // SAFETY: As the function's contract says; a reference on success.
    let rdma = unsafe { bindings::rdma_user_mmap_entry_get(uctx, vma) };
    if rdma.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: Every entry of our contexts is the first field of an
    // `MmapEntry` (inserted by `UserMapping::insert`), alive while we
    // hold the reference.
    let entry = unsafe { &*rdma.cast::<MmapEntry>() };
    let ret = match &entry.target {
        // SAFETY: Live context, VMA and entry; the page is the device's.
        MapTarget::Registers { phys } => unsafe {
            bindings::rust_ext_mmap_io(uctx, vma, *phys, PAGE_SIZE, rdma)
        },
        // SAFETY: Live context, VMA and entry; the memory is the device's
        // (ib_core checks the VMA's size against the entry's).
        MapTarget::DeviceMemory { phys, len } => unsafe {
            bindings::rust_ext_mmap_io(uctx, vma, *phys, *len, rdma)
        },
        // SAFETY: ib_core calls `mmap` from the file's mmap hook, with
        // the VMA being set up; the pages are live (the entry holds them).
        MapTarget::Pages(p) => match unsafe { map_pages(vma, p) } {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        },
    };
    // SAFETY: The reference taken above.
    unsafe { bindings::rdma_user_mmap_entry_put(rdma) };
    ret
}

/// Maps all of `pages` into `vma`, which must be exactly as long: each
/// page takes a reference, so the pages outlive their owner's free while
/// the process maps them; the mapping neither grows (`mremap`) nor goes
/// into core dumps.
///
/// # Safety
///
/// `vma` is being set up in an mmap hook.
unsafe fn map_pages(vma: *mut bindings::vm_area_struct, pages: &SharedPages) -> Result {
    // SAFETY: The caller's promise: set up for the duration of this call.
    let new = unsafe { VmaNew::from_raw(vma.cast()) };
    let (start, end) = (new.start(), new.end());
    if end - start != pages.len() {
        return Err(EINVAL);
    }
    new.set_dontexpand();
    new.set_dontdump();
    for (i, addr) in (start..end).step_by(PAGE_SIZE).enumerate() {
        // SAFETY: A VMA being set up; `addr` lies inside it; page `i` of
        // the compound page (`i` < its `len() / PAGE_SIZE` pages), live
        // while `pages` is borrowed.
        kernel::error::to_result(unsafe {
            bindings::vm_insert_page(vma, addr, pages.page.as_ptr().add(i))
        })?;
    }
    Ok(())
}

/// `mmap_free`: the last reference to a removed entry went.
///
/// # Safety
///
/// ib_core's call, once per entry, after which it never uses it.
pub(super) unsafe fn mmap_free(rdma: *mut bindings::rdma_user_mmap_entry) {
    // SAFETY: From `KBox::into_raw` in `UserMapping::insert` (the entry is
    // the first field), freed once.
    drop(unsafe { KBox::from_raw(rdma.cast::<MmapEntry>()) });
}
