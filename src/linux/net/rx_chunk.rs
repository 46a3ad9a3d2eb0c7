// SPDX-License-Identifier: GPL-2.0

//! Chunks of a receive stream: physically contiguous blocks of pages
//! (one compound page), mapped for the device, which writes many frames
//! into each. A frame taken from a chunk holds a reference to its page,
//! so an skb or XDP frame built on it outlives the chunk's place in the
//! ring: the driver puts a fresh chunk there while the old one is still
//! referenced, and the old pages go back to the allocator when the last
//! frame in them is freed.

use core::ptr::NonNull;

use kernel::{dma::DmaAddress, ffi::c_int, page::PAGE_SIZE, prelude::*};

use crate::linux::bindings;
use crate::linux::{
    dma::DmaDevice,
    net::{
        napi::Napi,
        page_pool::shinfo_room,
        skbuff::SkBuff,
        xdp::{
            act_on, XdpBuffMeta, XdpDrop, XdpFrame, XdpProgRef, XdpRunnable, XdpRxHash, XdpRxq,
            XdpVerdict,
        },
    },
};

/// Memory model of an [`XdpRxq`] whose frames are in [`RxChunk`]s: each
/// frame holds one page reference, which the core drops when it is done
/// (`MEM_TYPE_PAGE_SHARED`).
pub(crate) enum ChunkMem {}

/// One chunk of a receive stream, mapped both ways for the device.
///
/// # Invariants
///
/// `page` is the head of a compound page of `PAGE_SIZE << order` bytes
/// of which the chunk owns one reference; it is mapped on `dma`'s device
/// at `addr` for its whole size until drop.
pub(crate) struct RxChunk {
    page: NonNull<bindings::page>,
    order: u32,
    addr: DmaAddress,
    dma: DmaDevice,
}

// SAFETY: An owned, mapped page may move between CPUs and be unmapped on
// any of them.
unsafe impl Send for RxChunk {}

impl RxChunk {
    /// A chunk of `PAGE_SIZE << order` bytes mapped for `dma`'s device;
    /// `atomic` in a context that may not sleep (a NAPI poll).
    pub(crate) fn alloc(dma: &DmaDevice, order: u32, atomic: bool) -> Result<Self> {
        let size = PAGE_SIZE << order;
        // SAFETY: Any order is accepted (too large fails).
        let page =
            NonNull::new(unsafe { bindings::rust_ext_alloc_chunk(order, atomic) }).ok_or(ENOMEM)?;
        // SAFETY: `dma` is a bound device; the page is ours and `size`
        // bytes long.
        let addr = unsafe { bindings::rust_ext_dma_map_chunk(dma.as_raw(), page.as_ptr(), size) };
        // SAFETY: `addr` came from the mapping call just above.
        if unsafe { bindings::rust_ext_dma_mapping_error(dma.as_raw(), addr) } != 0 {
            // SAFETY: Our only reference to the page, not mapped.
            unsafe { bindings::rust_ext_put_page(page.as_ptr()) };
            return Err(ENOMEM);
        }
        // INVARIANT: allocated and mapped whole just now.
        Ok(Self {
            page,
            order,
            addr,
            dma: dma.clone(),
        })
    }

    /// Bytes of the chunk.
    pub(crate) fn size(&self) -> u32 {
        // CAST: The order is small enough for the allocation to have succeeded.
        (PAGE_SIZE << self.order) as u32
    }

    /// Bus address of the chunk's start.
    pub(crate) fn dma_addr(&self) -> DmaAddress {
        self.addr
    }

    /// Whether a frame taken from the chunk (an skb, an XDP frame) still
    /// refers to it: the device must then not write it again.
    pub(crate) fn in_use(&self) -> bool {
        // SAFETY: We hold a reference, so the page is live.
        unsafe { bindings::rust_ext_page_ref_count(self.page.as_ptr()) != 1 }
    }

    /// Hands the whole chunk back to the device, which may write it again.
    pub(crate) fn for_device(&self) {
        // SAFETY: The mapping covers the chunk (type invariant).
        unsafe {
            bindings::rust_ext_dma_sync_chunk_for_device(self.dma.as_raw(), self.addr, self.size())
        };
    }

    /// Whether `offset..offset + len` lies in the chunk.
    fn holds(&self, offset: u32, len: u32) -> bool {
        offset
            .checked_add(len)
            .is_some_and(|end| end <= self.size())
    }

    fn start(&self) -> *mut u8 {
        // SAFETY: Our page, in the kernel's direct map.
        unsafe { bindings::rust_ext_page_address(self.page.as_ptr()).cast() }
    }

    /// Makes `len` bytes at `offset`, which the device wrote, visible to
    /// the CPU and copies them to `out` (`len` is `out.len()`).
    pub(crate) fn read(&self, offset: u32, out: &mut [u8]) -> Result {
        let len = u32::try_from(out.len())?;
        if !self.holds(offset, len) {
            return Err(EINVAL);
        }
        self.sync_for_cpu(offset, len);
        // SAFETY: `len` bytes at `offset` are inside our chunk; `out` is a
        // distinct buffer.
        unsafe {
            core::ptr::copy_nonoverlapping(
                self.start().add(offset as usize),
                out.as_mut_ptr(),
                out.len(),
            )
        };
        Ok(())
    }

    fn sync_for_cpu(&self, offset: u32, len: u32) {
        // SAFETY: The range lies in the mapping (checked by callers).
        unsafe {
            bindings::rust_ext_dma_sync_chunk_for_cpu(
                self.dma.as_raw(),
                self.addr + DmaAddress::from(offset),
                len,
            )
        };
    }

    /// The `len`-byte frame at `data` in the record spanning `start..end`
    /// of the chunk (the frame inside it), made visible to the CPU and
    /// holding its own reference to the chunk. `None` if the ranges do
    /// not nest inside the chunk.
    pub(crate) fn frame(&self, start: u32, data: u32, len: u32, end: u32) -> Option<ChunkFrame> {
        let frame_end = data.checked_add(len)?;
        if start > data || frame_end > end || end > self.size() {
            return None;
        }
        self.sync_for_cpu(start, end - start);
        // SAFETY: The page is live (our reference); the new one is the
        // frame's.
        unsafe { bindings::rust_ext_get_page(self.page.as_ptr()) };
        // INVARIANT: the ranges nest inside the chunk (checked above) and
        // the frame owns the reference just taken.
        Some(ChunkFrame {
            page: self.page,
            chunk: self.start(),
            start,
            data,
            len,
            end,
        })
    }
}

impl Drop for RxChunk {
    fn drop(&mut self) {
        // SAFETY: Mapped on this device (type invariant), unmapped once;
        // then our reference is given back (frames keep theirs).
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

/// A received frame in a chunk, holding a reference to the chunk's
/// pages: `len` bytes at offset `data`, inside the record `start..end`
/// that the device wrote it into (room an XDP program may use).
///
/// # Invariants
///
/// `page` is the head of the compound page starting at `chunk`, of
/// which this value owns one reference; `start <= data`,
/// `data + len <= end`, and `end` is within the page.
pub(crate) struct ChunkFrame {
    page: NonNull<bindings::page>,
    chunk: *mut u8,
    start: u32,
    data: u32,
    len: u32,
    end: u32,
}

// SAFETY: An owned page reference may move between CPUs.
unsafe impl Send for ChunkFrame {}

impl ChunkFrame {
    /// Bytes of the frame.
    pub(crate) fn len(&self) -> u32 {
        self.len
    }

    /// The frame's bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: `len` bytes at `data` lie in the page (type invariant),
        // synced for the CPU; the device does not write them while the
        // chunk is out of its hands or referenced.
        unsafe {
            core::slice::from_raw_parts(self.chunk.add(self.data as usize), self.len as usize)
        }
    }

    /// The frame as an skb: copied whole if it is at most `copy_max`
    /// bytes (the page reference dropped), otherwise its first
    /// `head_max` bytes at most (the headers, as `eth_get_headlen`
    /// finds them) copied and the rest a page fragment of the chunk.
    /// `None` if no skb could be allocated.
    pub(crate) fn into_skb(self, napi: &Napi, copy_max: u32, head_max: u32) -> Option<SkBuff> {
        if self.len <= copy_max {
            return SkBuff::filled(napi, self.len as usize, |out| {
                out.copy_from_slice(self.bytes());
                Ok(())
            });
        }
        // SAFETY: The frame's bytes are readable (`bytes`); the device
        // pointer is only read for its features.
        let head = unsafe {
            bindings::eth_get_headlen(
                napi.dev_raw(),
                self.bytes().as_ptr().cast(),
                head_max.min(self.len),
            )
        }
        .clamp(14, head_max.min(self.len));
        let skb = SkBuff::filled(napi, head as usize, |out| {
            out.copy_from_slice(&self.bytes()[..head as usize]);
            Ok(())
        })?;
        if head < self.len {
            // SAFETY: The fragment lies in our page (type invariant); the
            // skb takes over our reference and frees it with the skb.
            unsafe {
                bindings::rust_ext_skb_add_rx_frag(
                    skb.as_raw(),
                    self.page.as_ptr(),
                    self.data + head,
                    self.len - head,
                    self.end - self.start,
                )
            };
            core::mem::forget(self);
        }
        Some(skb)
    }

    /// The frame as an skb built around its record, without a copy: the
    /// record must have `skb_shared_info` room behind the frame (a
    /// stream with tailroom). Gives the frame back if it has not, or no
    /// skb could be allocated.
    pub(crate) fn into_built_skb(self) -> Result<SkBuff, Self> {
        if (self.data + self.len + shinfo_room()) > self.end {
            return Err(self);
        }
        // SAFETY: `start..end` is ours to give (the record the device
        // wrote, nothing else lives there) with room for `skb_shared_info`
        // behind the frame; as a page fragment the skb frees it with
        // `page_frag_free`, dropping our reference.
        let skb = unsafe {
            let skb = bindings::napi_build_skb(
                self.chunk.add(self.start as usize).cast(),
                self.end - self.start,
            );
            if !skb.is_null() {
                // CAST: an offset inside one chunk, whose size is a u32 far
                // below `c_int::MAX`.
                bindings::rust_ext_skb_reserve(skb, (self.data - self.start) as c_int);
                bindings::skb_put(skb, self.len);
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

    /// Sets up `meta` as the XDP buffer of this frame on `rxq`.
    fn xdp_buff(&self, rxq: &XdpRxq<ChunkMem>, meta: &mut XdpBuffMeta) -> *mut bindings::xdp_buff {
        // From the whole of `meta`: the metadata functions read past the
        // buffer (`XdpBuffMeta`).
        let xdp = (&raw mut *meta).cast::<bindings::xdp_buff>();
        // SAFETY: The buffer describes our record: `end - start` bytes
        // from its start, the frame `data - start` bytes in; `rxq` is
        // registered.
        unsafe {
            bindings::rust_ext_xdp_buff_init(
                xdp,
                rxq.as_raw(),
                self.chunk.add(self.start as usize).cast(),
                self.end - self.start,
                self.data - self.start,
                self.len,
            )
        };
        xdp
    }

    /// The frame as an XDP frame (for `XDP_TX`, sent like a redirected
    /// one), its header written into the record's room; the page
    /// reference goes with it. `None` (the reference dropped) if the room
    /// is too small.
    pub(crate) fn into_xdp_frame(self, rxq: &XdpRxq<ChunkMem>) -> Option<XdpFrame> {
        let mut meta = XdpBuffMeta {
            // SAFETY: All-zero is a valid `xdp_buff`, set up fully below.
            xdp: unsafe { core::mem::zeroed() },
            hash: None,
        };
        let xdp = self.xdp_buff(rxq, &mut meta);
        // SAFETY: `xdp` describes our record on an rxq whose memory model
        // frees a frame by dropping its page reference, which we hand
        // over on success.
        let frame = unsafe { bindings::rust_ext_xdp_convert_buff_to_frame(xdp) };
        let frame = NonNull::new(frame)?;
        core::mem::forget(self);
        // SAFETY: A new frame, ours.
        Some(unsafe { XdpFrame::from_raw(frame) })
    }
}

impl XdpRunnable for ChunkFrame {
    type Mem = ChunkMem;

    fn bytes(&self) -> &[u8] {
        ChunkFrame::bytes(self)
    }

    /// A drop gives the page reference back.
    fn run_xdp(
        self,
        prog: XdpProgRef<'_>,
        rxq: &XdpRxq<ChunkMem>,
        hash: Option<XdpRxHash>,
    ) -> XdpVerdict<Self> {
        let mut meta = XdpBuffMeta {
            // SAFETY: All-zero is a valid `xdp_buff`, set up fully by
            // `xdp_buff`.
            xdp: unsafe { core::mem::zeroed() },
            hash,
        };
        let xdp = self.xdp_buff(rxq, &mut meta);
        // SAFETY: `xdp` is set up for our record.
        let act = unsafe { bindings::rust_ext_bpf_prog_run_xdp(prog.as_raw(), xdp) };
        // Where the program left the frame: its helpers keep it inside
        // the record, short of the `skb_shared_info` tailroom.
        // SAFETY: `xdp` points at `meta`, live, set up above.
        let (data, data_end) = unsafe { ((*xdp).data, (*xdp).data_end) };
        let base = self.chunk as usize;
        let data = (data as usize).wrapping_sub(base);
        let data_end = (data_end as usize).wrapping_sub(base);
        let start = self.start as usize;
        if data < start || data > data_end || data_end > self.end as usize {
            // Not what the helpers allow: nothing is sent anywhere.
            return XdpVerdict::Dropped(XdpDrop::Aborted);
        }
        let (Ok(data), Ok(len)) = (u32::try_from(data), u32::try_from(data_end - data)) else {
            return XdpVerdict::Dropped(XdpDrop::Aborted);
        };
        // INVARIANT: the frame stays inside the record (checked above).
        let mut frame = self;
        frame.data = data;
        frame.len = len;
        // SAFETY: `xdp` describes our record, on an rxq registered as
        // page-shared memory, as the program left it.
        unsafe {
            act_on(act, frame, rxq, prog, xdp, |frame| {
                // The target owns the page reference now.
                core::mem::forget(frame)
            })
        }
    }
}

impl Drop for ChunkFrame {
    fn drop(&mut self) {
        // SAFETY: We own one reference (type invariant), given back once.
        unsafe { bindings::rust_ext_put_page(self.page.as_ptr()) };
    }
}
