// SPDX-License-Identifier: GPL-2.0

//! A process's memory registered on demand (`struct ib_umem_odp`):
//! nothing is pinned; pages are faulted in and mapped for the device
//! when it asks (`ib_umem_odp_map_dma_and_lock`), and the kernel takes
//! them back through an `mmu_interval_notifier`, whose invalidation
//! tells the driver ([`OdpClient`]) before the pages are unmapped.

use core::ptr::NonNull;

use kernel::prelude::*;

use crate::linux::{bindings, rdma::verbs::Access};

/// Bytes of a page of an on-demand region (the CPU's page).
pub(crate) const ODP_PAGE_SIZE: u64 = 1 << ODP_PAGE_SHIFT;
const ODP_PAGE_SHIFT: usize = kernel::page::PAGE_SHIFT;

/// What the driver does when the kernel takes pages of its on-demand
/// region back.
pub(crate) trait OdpClient: Send + Sync + 'static {
    /// Pages `first..first + count` (counted from the region's first)
    /// are taken back: once this returns the device must no longer
    /// reach them. Called with the region locked (no page is mapped for
    /// the device meanwhile); may sleep.
    fn invalidate(&self, first: u32, count: u32);
}

/// A page mapped for the device.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OdpPage {
    /// Its bus address.
    pub(crate) bus: u64,
    /// Whether the device may write it (it was faulted in writable).
    pub(crate) writable: bool,
}

/// The notifier's ops and the client they call, where the notifier's
/// `ops` pointer finds them.
#[repr(C)]
struct Notifier<T: OdpClient> {
    ops: bindings::mmu_interval_notifier_ops,
    client: T,
}

/// A process's memory registered on demand for a device.
///
/// # Invariants
///
/// `umem` came from `ib_umem_odp_get` with `_notifier.ops` as its ops
/// and is released once, on drop, before `_notifier` is freed.
pub(crate) struct OdpMemory<T: OdpClient> {
    umem: NonNull<bindings::ib_umem_odp>,
    /// Reached only through the umem's notifier.
    _notifier: Pin<KBox<Notifier<T>>>,
}

// SAFETY: The umem may be used and released from any thread; what
// changes in it (its page list, its mapped pages) changes under its own
// mutex (`map_pages`, the invalidation). `T` is `Send + Sync`.
unsafe impl<T: OdpClient> Send for OdpMemory<T> {}
// SAFETY: As above.
unsafe impl<T: OdpClient> Sync for OdpMemory<T> {}

impl<T: OdpClient> OdpMemory<T> {
    /// Registers `len` bytes at `addr` of the calling process for
    /// `ibdev` on demand, with the verbs' `access` flags; `client`
    /// hears of invalidations from now on.
    ///
    /// # Safety
    ///
    /// `ibdev` is a registered device; called in the process's context
    /// (a verb call).
    pub(super) unsafe fn get(
        ibdev: *mut bindings::ib_device,
        addr: u64,
        len: u64,
        access: Access,
        client: T,
    ) -> Result<Self> {
        let len = usize::try_from(len).map_err(|_| EINVAL)?;
        let notifier = KBox::pin(
            Notifier {
                ops: bindings::mmu_interval_notifier_ops {
                    invalidate: Some(Self::invalidate),
                    invalidate_start: None,
                    invalidate_finish: None,
                },
                client,
            },
            GFP_KERNEL,
        )?;
        // CAST: an address of the process, as `unsigned long`.
        let addr = addr as usize;
        // SAFETY: As the function's contract says; `notifier.ops` is
        // boxed and outlives the umem (type invariant). ERR_PTR on failure.
        let umem = unsafe {
            bindings::ib_umem_odp_get(
                ibdev,
                addr,
                len,
                // CAST: access flags, a bit mask kept in an int.
                (access.to_raw() | bindings::ib_access_flags_IB_ACCESS_ON_DEMAND) as i32,
                &raw const notifier.ops,
            )
        };
        let umem = kernel::error::from_err_ptr(umem)?;
        // INVARIANT: from `ib_umem_odp_get` with `notifier.ops`.
        Ok(Self {
            umem: NonNull::new(umem).ok_or(ENOMEM)?,
            _notifier: notifier,
        })
    }

    /// The process's address of the first page.
    pub(crate) fn start(&self) -> u64 {
        // SAFETY: A live umem (type invariant).
        unsafe { bindings::rust_ext_umem_odp_start(self.umem.as_ptr()) as u64 }
    }

    /// Pages the region spans.
    pub(crate) fn pages(&self) -> u32 {
        // SAFETY: A live umem (type invariant).
        let end = unsafe { bindings::rust_ext_umem_odp_end(self.umem.as_ptr()) } as u64;
        // CAST: a region's pages, below 2^32 (ib_core bounds its length).
        ((end - self.start()) >> ODP_PAGE_SHIFT) as u32
    }

    /// Whether the region may be written (its pages are faulted in for
    /// writing).
    pub(crate) fn writable(&self) -> bool {
        // SAFETY: A live umem (type invariant); a field fixed at creation.
        unsafe { (*self.umem.as_ptr()).umem.writable() != 0 }
    }

    /// Maps pages `first..first + count` for the device, faulting them
    /// in first if `fault` (for writing if `write`), and runs `f` on each
    /// page's mapping (`None`: not present) while the region stays locked:
    /// no invalidation takes a page back until `f` returns. `EFAULT`:
    /// the process has no memory (or not writable memory) there.
    pub(crate) fn map_pages<R>(
        &self,
        first: u32,
        count: u32,
        write: bool,
        fault: bool,
        f: impl FnOnce(&[Option<OdpPage>]) -> R,
    ) -> Result<R> {
        let end = first.checked_add(count).ok_or(EINVAL)?;
        if count == 0 || end > self.pages() {
            return Err(EINVAL);
        }
        let umem = self.umem.as_ptr();
        let va = self.start() + (u64::from(first) << ODP_PAGE_SHIFT);
        let access = if write {
            bindings::hmm_pfn_flags_HMM_PFN_WRITE as u64
        } else {
            0
        };
        // SAFETY: A live umem (type invariant), a range inside it. On
        // success the umem's mutex is held; unlocked below.
        let got = unsafe {
            bindings::ib_umem_odp_map_dma_and_lock(
                umem,
                va,
                u64::from(count) << ODP_PAGE_SHIFT,
                access,
                fault,
            )
        };
        kernel::error::to_result(got)?;
        let mut pages = KVec::with_capacity(count as usize, GFP_KERNEL);
        if let Ok(list) = pages.as_mut() {
            for idx in first..end {
                // SAFETY: The umem is locked and `idx` is one of its pages.
                let page = unsafe { Self::dma_page(umem, idx as usize) };
                // Room for `count` reserved above.
                let _ = list.push(page, GFP_KERNEL);
            }
        }
        let result = pages.map(|p| f(&p));
        // SAFETY: Locked by `ib_umem_odp_map_dma_and_lock` above.
        unsafe { bindings::mutex_unlock(&raw mut (*umem).umem_mutex) };
        Ok(result?)
    }

    /// Page `idx`'s mapping for the device, made if it has none yet.
    ///
    /// # Safety
    ///
    /// `umem` is live and locked; `idx` is one of its pages.
    unsafe fn dma_page(umem: *mut bindings::ib_umem_odp, idx: usize) -> Option<OdpPage> {
        // SAFETY: As the function's contract says: the list has a slot
        // per page, stable while locked.
        let pfn = unsafe { *(*umem).map.pfn_list.add(idx) } as u64;
        if pfn & bindings::hmm_pfn_flags_HMM_PFN_VALID as u64 == 0 {
            return None;
        }
        let mapped = pfn & bindings::hmm_pfn_flags_HMM_PFN_DMA_MAPPED as u64 != 0;
        let mut p2p = core::mem::MaybeUninit::<bindings::pci_p2pdma_map_state>::zeroed();
        // SAFETY: A live, locked umem; its device's DMA device; a page it
        // holds; `p2p` zeroed as the callee expects.
        let (ibdev, bus) = unsafe {
            let ibdev = (*umem).umem.ibdev;
            let bus = bindings::hmm_dma_map_pfn(
                (*ibdev).dma_device,
                &raw mut (*umem).map,
                idx,
                p2p.as_mut_ptr(),
            );
            (ibdev, bus)
        };
        // SAFETY: The umem's live device.
        if unsafe { bindings::rust_ext_ib_dma_mapping_error(ibdev, bus) } {
            return None;
        }
        if !mapped {
            // ib_umem_odp_unmap_dma_pages counts them down again.
            // SAFETY: A field of the locked umem.
            unsafe { (*umem).npages += 1 };
        }
        Some(OdpPage {
            bus,
            writable: pfn & bindings::hmm_pfn_flags_HMM_PFN_WRITE as u64 != 0,
        })
    }

    /// The notifier's invalidation: the kernel takes `range` back.
    ///
    /// # Safety
    ///
    /// Called by the mmu notifier core for a notifier of an `OdpMemory<T>`
    /// (whose `ops` are those of a `Notifier<T>`), with live arguments.
    unsafe extern "C" fn invalidate(
        mni: *mut bindings::mmu_interval_notifier,
        range: *const bindings::mmu_notifier_range,
        cur_seq: usize,
    ) -> bool {
        // SAFETY: Live arguments (the function's contract).
        if !unsafe { bindings::rust_ext_mmu_notifier_range_blockable(range) } {
            return false;
        }
        // SAFETY: The notifier is the `notifier` field of an
        // `ib_umem_odp`, whose `ops` point into a live `Notifier<T>` (the
        // umem is released before it is freed).
        let (umem, notifier) = unsafe {
            let umem = mni
                .byte_sub(core::mem::offset_of!(bindings::ib_umem_odp, notifier))
                .cast::<bindings::ib_umem_odp>();
            let ops = (*mni).ops;
            (umem, &*ops.cast::<Notifier<T>>())
        };
        // SAFETY: A live umem; its mutex guards its pages and sequence.
        let (start, end) = unsafe {
            bindings::rust_ext_mutex_lock(&raw mut (*umem).umem_mutex);
            bindings::rust_ext_mmu_interval_set_seq(mni, cur_seq);
            let start = bindings::rust_ext_umem_odp_start(umem) as u64;
            let end = bindings::rust_ext_umem_odp_end(umem) as u64;
            let from = bindings::rust_ext_mmu_notifier_range_start(range) as u64;
            let to = bindings::rust_ext_mmu_notifier_range_end(range) as u64;
            (start.max(from), end.min(to))
        };
        // SAFETY: A field of the locked umem.
        let mapped = unsafe { (*umem).npages } > 0;
        if start < end && mapped {
            // SAFETY: A live umem.
            let base = unsafe { bindings::rust_ext_umem_odp_start(umem) } as u64;
            let first = (start - base) >> ODP_PAGE_SHIFT;
            let last = (end - base).div_ceil(ODP_PAGE_SIZE);
            // CAST: pages of a region, below 2^32.
            notifier
                .client
                .invalidate(first as u32, (last - first) as u32);
            // SAFETY: Locked above; the device no longer reaches them.
            unsafe { bindings::ib_umem_odp_unmap_dma_pages(umem, start, end) };
        }
        // SAFETY: Locked above.
        unsafe { bindings::mutex_unlock(&raw mut (*umem).umem_mutex) };
        true
    }
}

impl<T: OdpClient> Drop for OdpMemory<T> {
    fn drop(&mut self) {
        // SAFETY: From `ib_umem_odp_get`, released once (type invariant);
        // this removes the notifier (waiting for a running invalidation)
        // before `notifier` is freed after this.
        unsafe { bindings::ib_umem_odp_release(self.umem.as_ptr()) };
    }
}
