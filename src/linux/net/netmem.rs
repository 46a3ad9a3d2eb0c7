// SPDX-License-Identifier: GPL-2.0

//! Payload buffers of an RX queue bound to a memory provider (devmem TCP's
//! dmabuf, an io_uring zero-copy area): the queue's page pool hands out
//! the provider's `net_iov`s as netmems, which the device writes payload
//! into and the stack gets as skb fragments. The host cannot read them,
//! so this type has no way to: no bytes, no XDP, no copy. Headers reach
//! the host some other way (the card's header slots).

use core::ptr::NonNull;

use kernel::{dma::DmaAddress, page::PAGE_SIZE, prelude::*};

use crate::linux::bindings;
use crate::linux::{
    dma::DmaDevice,
    net::{napi::Napi, netdev::NetDev, skbuff::SkBuff},
};

/// `PP_FLAG_DMA_MAP`, `PP_FLAG_DMA_SYNC_DEV`, `PP_FLAG_ALLOW_UNREADABLE_NETMEM`
/// (`BIT()` macros bindgen cannot read): the pool maps its buffers, syncs
/// them for the device, and may hand out a provider's.
const PP_FLAGS: u32 = (1 << 0) | (1 << 1) | (1 << 3);
/// `NUMA_NO_NODE`.
const NUMA_NO_NODE: i32 = -1;

impl<T> NetDev<T> {
    /// Whether RX queue `queue` is bound to a memory provider whose
    /// buffers the host cannot read (`netif_rxq_has_unreadable_mp`).
    /// `false` for a queue not in use.
    pub(crate) fn rx_queue_has_provider(&self, queue: u32) -> bool {
        // SAFETY: A registered device; the call reads the queue's
        // provider parameters (set and cleared under the instance lock,
        // which the driver holds while it sets a queue up).
        unsafe { bindings::netif_rxq_has_unreadable_mp(self.as_raw(), queue) }
    }
}

/// The page pool of a queue bound to a memory provider.
///
/// # Invariants
///
/// `pool` is a live page pool this value created and destroys on drop.
pub(crate) struct PayloadPool {
    pool: NonNull<bindings::page_pool>,
    buf_len: u32,
}

// SAFETY: A page pool may be used from any CPU; allocation, the one
// operation that needs a single user at a time, takes `&mut self`.
unsafe impl Send for PayloadPool {}
// SAFETY: `&PayloadPool` allows only the pool's own locked operations.
unsafe impl Sync for PayloadPool {}

impl PayloadPool {
    /// A pool of `entries` buffers of `buf_len` bytes (a power of two, a
    /// page or more: what the provider asked for) for RX queue `queue`
    /// of `napi`'s device, from the memory provider bound to the queue
    /// (or pages, if none is). Destroy it (drop) before `napi` is
    /// deleted; it is tied to `napi` for direct recycling only by
    /// [`Self::enable_direct_recycling`]. The device's instance lock
    /// must be held (the core reads the queue's provider under it).
    pub(crate) fn new(
        dma: &DmaDevice,
        napi: &Napi,
        queue: u32,
        entries: u32,
        buf_len: u32,
    ) -> Result<Self> {
        // CAST: a page is far below 4 GiB.
        let page = PAGE_SIZE as u32;
        if buf_len < page || !buf_len.is_power_of_two() {
            return Err(EINVAL);
        }
        let order = (buf_len / page).trailing_zeros();
        // SAFETY: All-zero is a valid `page_pool_params`.
        let mut params: bindings::page_pool_params = unsafe { core::mem::zeroed() };
        // SAFETY: Writing plain fields of the two field groups.
        unsafe {
            let fast = &mut params.__bindgen_anon_1.fast;
            fast.order = order;
            fast.pool_size = entries;
            fast.nid = NUMA_NO_NODE;
            fast.dev = dma.as_raw();
            // The device only writes them; nothing sends from them.
            fast.dma_dir = bindings::dma_data_direction_DMA_FROM_DEVICE;
            fast.offset = 0;
            fast.max_len = buf_len;
            let slow = &mut params.__bindgen_anon_2.slow;
            slow.netdev = napi.dev_raw();
            slow.queue_idx = queue;
            slow.flags = PP_FLAGS;
        }
        // SAFETY: `dma` is a bound device, `napi` an initialised context
        // of the net device named, whose instance lock the caller holds
        // (the core asserts it for a pool that may take a provider).
        let pool = unsafe { bindings::page_pool_create(&params) };
        let pool = kernel::error::from_err_ptr(pool)?;
        // INVARIANT: created just now, not an error.
        Ok(Self {
            pool: NonNull::new(pool).ok_or(ENOMEM)?,
            buf_len,
        })
    }

    /// Bytes each buffer holds.
    pub(crate) fn buf_len(&self) -> u32 {
        self.buf_len
    }

    /// A buffer for the device to fill, or `None` when the provider has
    /// none free (user space holds them all) or memory is short.
    pub(crate) fn alloc(&mut self) -> Option<PayloadBuf> {
        // SAFETY: Live pool; `&mut self` makes this the only allocator.
        let netmem = unsafe { bindings::rust_ext_page_pool_alloc_netmem(self.pool.as_ptr()) };
        // INVARIANT: a netmem of this pool (0: none), which we now own, of
        // the pool's order: `buf_len` bytes.
        // Built only for a buffer: a `PayloadBuf` of 0 would give "0" back
        // to the pool when dropped.
        (netmem != 0).then(|| PayloadBuf {
            netmem,
            pool: self.pool,
            buf_len: self.buf_len,
        })
    }

    /// As [`super::page_pool::PagePool::enable_direct_recycling`].
    pub(crate) fn enable_direct_recycling(&self, napi: &Napi) {
        // SAFETY: As for `PagePool`'s: a live pool, an initialised context
        // of its device that outlives it; plain stores under the core's
        // lock.
        unsafe { bindings::page_pool_enable_direct_recycling(self.pool.as_ptr(), napi.as_raw()) };
    }

    /// As [`super::page_pool::PagePool::disable_direct_recycling`].
    pub(crate) fn disable_direct_recycling(&self) {
        // SAFETY: A live pool; plain stores under the core's lock.
        unsafe { bindings::page_pool_disable_direct_recycling(self.pool.as_ptr()) };
    }
}

impl Drop for PayloadPool {
    fn drop(&mut self) {
        // SAFETY: Created in `new`; buffers still out keep the pool's
        // memory until they come back (the core defers the free).
        unsafe { bindings::page_pool_destroy(self.pool.as_ptr()) };
    }
}

/// One payload buffer (`netmem_ref`) of a [`PayloadPool`], owned: given
/// back to its pool on drop, or to an skb.
///
/// # Invariants
///
/// `netmem` came from `pool` and nothing else owns it, `buf_len` bytes;
/// `pool` stays valid while its buffers are out (page pools outlive
/// their buffers).
pub(crate) struct PayloadBuf {
    netmem: usize,
    pool: NonNull<bindings::page_pool>,
    buf_len: u32,
}

// SAFETY: An owned buffer may move between CPUs.
unsafe impl Send for PayloadBuf {}

impl PayloadBuf {
    /// Bus address where the device writes payload.
    pub(crate) fn addr(&self) -> DmaAddress {
        // SAFETY: A buffer of a pool mapping its buffers (`PP_FLAG_DMA_MAP`;
        // a provider's come mapped).
        unsafe { bindings::rust_ext_page_pool_get_dma_addr_netmem(self.netmem) }
    }

    /// Adds the buffer's first `len` bytes, which the device wrote, to
    /// `skb` as its next fragment, unread. Gives the buffer back if `len`
    /// does not fit it or the skb has no fragment slot left.
    pub(crate) fn append_to(self, skb: &mut SkBuff, len: u32) -> Result<(), Self> {
        if len == 0 || len > self.buf_len || !skb.has_frag_room() {
            return Err(self);
        }
        // SAFETY: We own the buffer, `buf_len` bytes, of which the device
        // wrote `len` (synced for the CPU, a no-op for a provider's); the
        // skb has a free fragment slot, takes our reference and, marked
        // for recycling, gives the buffer back to its pool when freed.
        unsafe {
            bindings::rust_ext_page_pool_dma_sync_netmem_for_cpu(
                self.pool.as_ptr(),
                self.netmem,
                len,
            );
            bindings::rust_ext_skb_mark_for_recycle(skb.as_raw());
            bindings::rust_ext_skb_add_rx_frag_netmem(skb.as_raw(), self.netmem, len, self.buf_len);
        }
        core::mem::forget(self);
        Ok(())
    }
}

impl Drop for PayloadBuf {
    fn drop(&mut self) {
        // SAFETY: Ours, from `pool` (type invariant); not from NAPI's
        // direct path (no `allow_direct`), so any context.
        unsafe { bindings::rust_ext_page_pool_put_full_netmem(self.pool.as_ptr(), self.netmem) };
    }
}
