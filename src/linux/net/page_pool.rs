// SPDX-License-Identifier: GPL-2.0

//! Page pools for RX buffers: pages mapped for the device once, posted to
//! the RX ring, and turned into skbs without a copy; the stack gives a
//! page back to its pool when it frees the skb.

use core::ptr::NonNull;

use kernel::{dma::DmaAddress, ffi::c_int, page::PAGE_SIZE, prelude::*};

use crate::linux::bindings;
use crate::linux::{
    dma::DmaDevice,
    net::{
        napi::Napi,
        skbuff::SkBuff,
        xdp::{
            act_on, PageMem, XdpBuffMeta, XdpDrop, XdpProgRef, XdpRunnable, XdpRxHash, XdpRxq,
            XdpVerdict,
        },
    },
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
    /// it (drop) before `napi` is deleted. Pages come back straight into
    /// its cache from `napi` only once [`Self::enable_direct_recycling`]
    /// says the context polls for it: a pool made for a queue restart
    /// while the context polls for the queue's old pool may be freed
    /// unused, which the core allows only for a pool not tied to a live
    /// context.
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
            // Both ways: an XDP program may send a frame back out of the
            // page it arrived in (`XDP_TX`).
            fast.dma_dir = bindings::dma_data_direction_DMA_BIDIRECTIONAL;
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

    /// Lets pages come back to the pool's cache straight from `napi`
    /// (`page_pool_enable_direct_recycling`), the context that allocates
    /// from the pool from now on: the context of the pool's queue, as
    /// given to [`Self::new`].
    pub(crate) fn enable_direct_recycling(&self, napi: &Napi) {
        // SAFETY: A live pool and an initialised NAPI context of its
        // device, which outlives the pool (`new`'s contract); the call
        // stores plain fields under the core's lock. Idempotent for the
        // same context; the pool had no other (`disable_direct_recycling`
        // clears it), which the core checks.
        unsafe { bindings::page_pool_enable_direct_recycling(self.pool.as_ptr(), napi.as_raw()) };
    }

    /// Stops pages coming back to the pool's cache straight from its
    /// NAPI context (`page_pool_disable_direct_recycling`): for a pool
    /// whose queue was stopped (its NAPI context disabled, as the core
    /// checks) and that may outlive that, while the context polls for
    /// another pool. Pages then come back through the pool's ring.
    pub(crate) fn disable_direct_recycling(&self) {
        // SAFETY: A live pool; the call only stores plain fields of it
        // (under the core's lock). Allocation, the pool's other user, is
        // over: the queue stopped.
        unsafe { bindings::page_pool_disable_direct_recycling(self.pool.as_ptr()) };
    }

    /// Largest frame one buffer holds.
    pub(crate) fn frame_room(&self) -> u32 {
        self.frame_room
    }

    pub(in crate::linux) fn as_raw(&self) -> *mut bindings::page_pool {
        self.pool.as_ptr()
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

    /// The page now holds a frame of `len` bytes the device wrote: makes
    /// it visible to the CPU. Gives the page back if `len` does not fit.
    pub(crate) fn received(self, len: u32) -> Result<RxFrame, Self> {
        if len > self.size - self.headroom - shinfo_room() {
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
        Ok(RxFrame {
            offset: self.headroom,
            len,
            page: self,
        })
    }
}

/// Bytes at the end of a buffer for `skb_shared_info`
/// (`SKB_DATA_ALIGN(sizeof(struct skb_shared_info))`).
pub(crate) fn shinfo_room() -> u32 {
    // SAFETY: A pure function of the kernel configuration.
    unsafe { bindings::rust_ext_skb_shinfo_room() }
}

/// A received frame in its page, visible to the CPU: `len` bytes from
/// `offset` (an XDP program may have moved either).
///
/// # Invariants
///
/// `offset + len + shinfo_room() <= page.size`.
pub(crate) struct RxFrame {
    page: RxPage,
    offset: u32,
    len: u32,
}

impl RxFrame {
    /// Bytes of the frame.
    pub(crate) fn len(&self) -> u32 {
        self.len
    }

    /// The frame's bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: We own the page; `len` bytes at `offset` are inside it
        // (type invariant) and were synced for the CPU.
        unsafe {
            let start = bindings::rust_ext_page_address(self.page.page.as_ptr()).cast::<u8>();
            core::slice::from_raw_parts(start.add(self.offset as usize), self.len as usize)
        }
    }

    /// The page, for the device to write another frame into (the frame
    /// was copied out).
    pub(crate) fn into_page(self) -> RxPage {
        self.page
    }

    /// Wraps the frame in an skb. Gives the page back if no skb could be
    /// allocated.
    pub(crate) fn into_skb(self) -> Result<SkBuff, RxPage> {
        let page = self.page.page.as_ptr();
        // SAFETY: We own the page, `size` bytes long, with `len` frame
        // bytes at `offset` and room for `skb_shared_info` after them
        // (type invariant). On success the skb owns the page, and gives
        // it back to its pool when freed (`skb_mark_for_recycle`).
        let skb = unsafe {
            let skb =
                bindings::napi_build_skb(bindings::rust_ext_page_address(page), self.page.size);
            if !skb.is_null() {
                // CAST: an offset inside one page.
                bindings::rust_ext_skb_reserve(skb, self.offset as c_int);
                bindings::skb_put(skb, self.len);
                bindings::rust_ext_skb_mark_for_recycle(skb);
            }
            skb
        };
        // SAFETY: NULL or a new skb that we own.
        match unsafe { SkBuff::from_raw(skb) } {
            Some(skb) => {
                core::mem::forget(self.page);
                Ok(skb)
            }
            None => Err(self.page),
        }
    }

    /// Adds the frame to `skb` as its next page fragment (the later
    /// buffers of a frame that spans several). Gives the frame back if
    /// the skb has no fragment slot left.
    pub(crate) fn append_to(self, skb: &mut SkBuff) -> Result<(), Self> {
        if !skb.has_frag_room() {
            return Err(self);
        }
        // SAFETY: We own the page, `size` bytes long, with `len` frame
        // bytes at `offset` (type invariant); the skb has a free fragment
        // slot (checked above), takes over our reference and, marked for
        // recycling, gives the page back to its pool when freed.
        unsafe {
            bindings::rust_ext_skb_mark_for_recycle(skb.as_raw());
            bindings::rust_ext_skb_add_rx_frag(
                skb.as_raw(),
                self.page.page.as_ptr(),
                self.offset,
                self.len,
                self.page.size,
            )
        };
        core::mem::forget(self.page);
        Ok(())
    }

    /// The frame's bus address, for the device to read it (`XDP_TX`);
    /// what the CPU wrote into it is made visible to the device first.
    pub(crate) fn for_device(&self) -> DmaAddress {
        let (pool, page) = (self.page.pool.as_ptr(), self.page.page.as_ptr());
        // SAFETY: We own the page, mapped both ways by its pool; the range
        // is inside it (type invariant).
        unsafe {
            bindings::rust_ext_page_pool_dma_sync_for_device(pool, page, self.offset, self.len);
            bindings::rust_ext_page_pool_get_dma_addr(page) + DmaAddress::from(self.offset)
        }
    }
}

impl XdpRunnable for RxFrame {
    type Mem = PageMem;

    fn bytes(&self) -> &[u8] {
        RxFrame::bytes(self)
    }

    /// A drop puts the page back in its pool.
    fn run_xdp(
        self,
        prog: XdpProgRef<'_>,
        rxq: &XdpRxq,
        hash: Option<XdpRxHash>,
    ) -> XdpVerdict<Self> {
        let page = self.page.page.as_ptr();
        // SAFETY: We own the page; its address is where the pool mapped it.
        let hard_start = unsafe { bindings::rust_ext_page_address(page) };
        let mut meta = XdpBuffMeta {
            // SAFETY: All-zero is a valid `xdp_buff` (null pointers,
            // zeros), set up fully by the helper below.
            xdp: unsafe { core::mem::zeroed() },
            hash,
        };
        // From the whole of `meta`: the metadata functions read past the
        // buffer (`XdpBuffMeta`).
        let xdp = (&raw mut meta).cast::<bindings::xdp_buff>();
        // SAFETY: The buffer describes our page: `size` bytes from
        // `hard_start`, the frame at `offset`; `rxq` is registered.
        let act = unsafe {
            bindings::rust_ext_xdp_buff_init(
                xdp,
                rxq.as_raw(),
                hard_start,
                self.page.size,
                self.offset,
                self.len,
            );
            bindings::rust_ext_bpf_prog_run_xdp(prog.as_raw(), xdp)
        };
        // Where the program left the frame: its helpers keep it between
        // the headroom's start and the tailroom `skb_shared_info` needs.
        // SAFETY: `xdp` points at `meta`, live, set up above.
        let (data, data_end) = unsafe { ((*xdp).data, (*xdp).data_end) };
        let start = (data as usize).wrapping_sub(hard_start as usize);
        let end = (data_end as usize).wrapping_sub(hard_start as usize);
        if start > end || end + shinfo_room() as usize > self.page.size as usize {
            // Not what the helpers allow: nothing is sent anywhere.
            return XdpVerdict::Dropped(XdpDrop::Aborted);
        }
        let (Ok(offset), Ok(len)) = (u32::try_from(start), u32::try_from(end - start)) else {
            return XdpVerdict::Dropped(XdpDrop::Aborted);
        };
        let frame = Self {
            page: self.page,
            offset,
            len,
        };
        // SAFETY: `xdp` describes our page, of a pool registered as `rxq`'s
        // memory model, as the program left it.
        unsafe {
            act_on(act, frame, rxq, prog, xdp, |frame| {
                // The target owns the page now and gives it back to its
                // pool.
                core::mem::forget(frame.page)
            })
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
