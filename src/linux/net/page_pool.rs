// SPDX-License-Identifier: GPL-2.0

//! Page pools for RX buffers: pages mapped for the device once, posted to
//! the RX ring, and turned into skbs without a copy; the stack gives a
//! page back to its pool when it frees the skb.

use core::ptr::NonNull;

use kernel::{dma::DmaAddress, ffi::c_int, page::PAGE_SIZE, prelude::*};

use crate::linux::bindings;
use crate::linux::{
    dma::DmaDevice,
    net::{napi::Napi, skbuff::SkBuff},
};

/// `PP_FLAG_DMA_MAP` (a `BIT()` macro bindgen cannot read): the pool maps
/// its pages for the device.
const PP_FLAG_DMA_MAP: u32 = 1 << 0;
/// `PP_FLAG_DMA_SYNC_DEV`: the pool syncs recycled pages for the device.
const PP_FLAG_DMA_SYNC_DEV: u32 = 1 << 1;
/// `NUMA_NO_NODE`.
const NUMA_NO_NODE: i32 = -1;

/// The page pool of one RX queue.
///
/// # Invariants
///
/// `pool` is a live page pool this value created and destroys on drop.
pub(crate) struct PagePool {
    pool: NonNull<bindings::page_pool>,
    /// Bytes per buffer (`PAGE_SIZE << order`).
    size: u32,
    /// Bytes in front of the frame, for the stack's headers.
    headroom: u32,
    /// Largest frame a buffer holds.
    frame_room: u32,
}

// SAFETY: A page pool may be used from any CPU; allocation, the one
// operation that needs a single user at a time, takes `&mut self`.
unsafe impl Send for PagePool {}
// SAFETY: `&PagePool` allows nothing but reading the geometry fields.
unsafe impl Sync for PagePool {}

impl PagePool {
    /// A pool of `entries` buffers, each holding a frame of up to
    /// `frame_len` bytes, for RX queue `queue` polled by `napi`. Destroy
    /// it (drop) before `napi` is deleted.
    pub(crate) fn new(
        dma: &DmaDevice,
        napi: &Napi,
        queue: u32,
        entries: u32,
        frame_len: u32,
    ) -> Result<Self> {
        // SAFETY: Pure functions of the kernel configuration.
        let (headroom, tailroom) = unsafe {
            (
                bindings::rust_ext_rx_headroom(),
                bindings::rust_ext_skb_shinfo_room(),
            )
        };
        let need = headroom as usize + frame_len as usize + tailroom as usize;
        let order = need
            .div_ceil(PAGE_SIZE)
            .next_power_of_two()
            .trailing_zeros();
        let size = u32::try_from(PAGE_SIZE << order)?;
        let frame_room = size - headroom - tailroom;
        // SAFETY: All-zero is a valid `page_pool_params` (no callbacks, no
        // flags); the fields set below are plain values and pointers.
        let mut params: bindings::page_pool_params = unsafe { core::mem::zeroed() };
        // SAFETY: Writing plain fields of the two field groups (the
        // struct's tagged groups are unions of a struct with itself).
        unsafe {
            let fast = &mut params.__bindgen_anon_1.fast;
            fast.order = order;
            fast.pool_size = entries;
            fast.nid = NUMA_NO_NODE;
            fast.dev = dma.as_raw();
            fast.napi = napi.as_raw();
            fast.dma_dir = bindings::dma_data_direction_DMA_FROM_DEVICE;
            fast.offset = headroom;
            fast.max_len = frame_room;
            let slow = &mut params.__bindgen_anon_2.slow;
            slow.netdev = napi.dev_raw();
            slow.queue_idx = queue;
            // Pages are mapped for the device by the pool, and synced for
            // it (from `offset`, `max_len` bytes) when they come back.
            slow.flags = PP_FLAG_DMA_MAP | PP_FLAG_DMA_SYNC_DEV;
        }
        // SAFETY: `dma` is a bound device, `napi` an initialised NAPI
        // context of the net device `napi.dev_raw()`; `params` is read
        // during the call. The result is a pool or an `ERR_PTR`.
        let pool = unsafe { bindings::page_pool_create(&params) };
        let pool = kernel::error::from_err_ptr(pool)?;
        // INVARIANT: created just now; `from_err_ptr` ruled out errors.
        Ok(Self {
            pool: NonNull::new(pool).ok_or(ENOMEM)?,
            size,
            headroom,
            frame_room,
        })
    }

    /// Largest frame one buffer holds.
    pub(crate) fn frame_room(&self) -> u32 {
        self.frame_room
    }

    /// A page for the device to fill, or `None` when memory is short.
    pub(crate) fn alloc(&mut self) -> Option<RxPage> {
        // SAFETY: Live pool; `&mut self` makes this the only allocator
        // right now, as the pool's lockless cache needs.
        let page = NonNull::new(unsafe {
            bindings::rust_ext_page_pool_dev_alloc_pages(self.pool.as_ptr())
        })?;
        // INVARIANT: a page just taken from `pool`.
        Some(RxPage {
            page,
            pool: self.pool,
            size: self.size,
            headroom: self.headroom,
        })
    }
}

impl Drop for PagePool {
    fn drop(&mut self) {
        // SAFETY: Live pool by the type invariant, destroyed once. Pages
        // still out (in skbs) keep it alive internally until they return.
        unsafe { bindings::page_pool_destroy(self.pool.as_ptr()) };
    }
}

/// A page of a [`PagePool`], owned by the driver (posted to the card or
/// about to be). Dropping it returns it to the pool.
///
/// # Invariants
///
/// `page` came from `pool` and nothing else owns it; `pool` stays valid
/// while its pages are out (page pools outlive their pages).
pub(crate) struct RxPage {
    page: NonNull<bindings::page>,
    pool: NonNull<bindings::page_pool>,
    size: u32,
    headroom: u32,
}

// SAFETY: An owned page may move between CPUs.
unsafe impl Send for RxPage {}

impl RxPage {
    /// Bus address where the device writes the frame.
    pub(crate) fn frame_addr(&self) -> DmaAddress {
        // SAFETY: A page of a pool mapping its pages (`PP_FLAG_DMA_MAP`).
        unsafe {
            bindings::rust_ext_page_pool_get_dma_addr(self.page.as_ptr())
                + DmaAddress::from(self.headroom)
        }
    }

    /// Wraps the page, now holding a received frame of `len` bytes, in an
    /// skb. Gives the page back if no skb could be allocated.
    pub(crate) fn into_skb(self, len: u32) -> Result<SkBuff, Self> {
        if len > self.size - self.headroom {
            return Err(self);
        }
        // SAFETY: We own the page, mapped by its pool; the range synced is
        // the frame the device wrote.
        unsafe {
            bindings::rust_ext_page_pool_dma_sync_for_cpu(
                self.pool.as_ptr(),
                self.page.as_ptr(),
                self.headroom,
                len,
            )
        };
        let page = self.page.as_ptr();
        // SAFETY: We own the page, `size` bytes long, with `len` frame
        // bytes at `headroom` and room for `skb_shared_info` at the end
        // (the pool was sized so). On success the skb owns the page, and
        // gives it back to its pool when freed (`skb_mark_for_recycle`).
        let skb = unsafe {
            let skb = bindings::napi_build_skb(bindings::rust_ext_page_address(page), self.size);
            if !skb.is_null() {
                bindings::rust_ext_skb_reserve(skb, self.headroom as c_int);
                bindings::skb_put(skb, len);
                bindings::rust_ext_skb_mark_for_recycle(skb);
            }
            skb
        };
        // SAFETY: NULL or a new skb that we own.
        match unsafe { SkBuff::from_raw(skb) } {
            Some(skb) => {
                core::mem::forget(self);
                Ok(skb)
            }
            None => Err(self),
        }
    }
}

impl Drop for RxPage {
    fn drop(&mut self) {
        // SAFETY: By the type invariant we own a page of `pool`; returned once.
        unsafe {
            bindings::rust_ext_page_pool_put_full_page(self.pool.as_ptr(), self.page.as_ptr())
        };
    }
}
