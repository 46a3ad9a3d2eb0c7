// SPDX-License-Identifier: GPL-2.0

//! AF_XDP zero copy: the buffer pool of an AF_XDP socket bound to one of
//! a device's queues (`XDP_SETUP_XSK_POOL`), whose user-space memory
//! (the umem) the device receives into and sends from directly.
//!
//! RX: the driver posts [`XskBuf`]s from the pool's fill ring instead of
//! page-pool pages and runs the device's XDP program on what arrives;
//! a redirect to the socket hands the buffer over without a copy. TX:
//! the driver takes descriptors from the socket's TX ring
//! ([`XskPool::next_tx`]) and reports them done in order
//! ([`XskPool::tx_completed`]).

use core::ptr::NonNull;

use kernel::{
    dma::DmaAddress,
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
    types::Opaque,
};

use crate::linux::{
    bindings,
    dma::DmaDevice,
    net::{
        napi::Napi,
        rtnl::Rtnl,
        skbuff::SkBuff,
        xdp::{
            act_on, XdpBuffMeta, XdpFrame, XdpProgRef, XdpRunnable, XdpRxHash, XdpRxq, XdpVerdict,
            XskMem,
        },
    },
    sync::HoldCount,
};

/// An AF_XDP buffer pool bound to one of the device's queues in
/// zero-copy mode, from the `XDP_SETUP_XSK_POOL` that enabled it until
/// the one that disables it. Copies are counted: the layer answers the
/// disabling request only once every copy is dropped (see [`XskSlots`]),
/// so none can outlive the binding.
///
/// # Invariants
///
/// `raw` is a pool the core bound to a queue of the device, and this
/// value is one of `life`'s holds; the core is told the pool is let go
/// only after the last hold is given back.
pub(crate) struct XskPool {
    raw: NonNull<bindings::xsk_buff_pool>,
    life: Arc<HoldCount>,
}

impl Clone for XskPool {
    fn clone(&self) -> Self {
        self.life.hold();
        // INVARIANT: one more hold, given back by `drop`.
        Self {
            raw: self.raw,
            life: self.life.clone(),
        }
    }
}

impl Drop for XskPool {
    fn drop(&mut self) {
        self.life.unhold();
    }
}

// SAFETY: The pool's driver-side functions may be called from any CPU;
// each ring is used by one NAPI context at a time (the queue's); the
// count is atomic.
unsafe impl Send for XskPool {}
// SAFETY: As for `Send`.
unsafe impl Sync for XskPool {}

/// A TX descriptor taken from an AF_XDP socket: the frame's bus address
/// (already visible to the device) and length.
pub(crate) struct XskTxDesc {
    pub(crate) addr: DmaAddress,
    pub(crate) len: u32,
}

impl XskPool {
    /// The first copy of `raw`.
    ///
    /// # Safety
    ///
    /// `raw` is a pool the core is binding to a queue of the device, and
    /// the caller waits for [`Self::let_go`] before it tells the core the
    /// pool may go.
    unsafe fn new(raw: NonNull<bindings::xsk_buff_pool>) -> Result<Self> {
        let life = Arc::pin_init(HoldCount::new(), GFP_KERNEL)?;
        // INVARIANT: per the function's contract; the one hold.
        Ok(Self { raw, life })
    }

    /// Drops this copy and waits until every other one is dropped.
    /// Process context.
    fn let_go(self) {
        let life = self.life.clone();
        drop(self);
        life.wait();
    }

    /// Maps the pool's memory for `dma`'s device to read and write.
    /// The core requires it before the enabling request returns.
    pub(crate) fn dma_map(&self, dma: &DmaDevice) -> Result {
        // SAFETY: Live pool (type invariant); live device.
        kernel::error::to_result(unsafe {
            bindings::rust_ext_xsk_pool_dma_map(self.raw.as_ptr(), dma.as_raw())
        })
    }

    /// Undoes [`Self::dma_map`], once nothing the device may still use
    /// is posted.
    pub(crate) fn dma_unmap(&self) {
        // SAFETY: Live pool.
        unsafe { bindings::rust_ext_xsk_pool_dma_unmap(self.raw.as_ptr()) };
    }

    /// Bytes of frame one RX buffer holds (after the headroom).
    pub(crate) fn rx_frame_size(&self) -> u32 {
        // SAFETY: Live pool.
        unsafe { bindings::rust_ext_xsk_pool_get_rx_frame_size(self.raw.as_ptr()) }
    }

    /// A buffer from the fill ring, or `None` if user space left none.
    pub(crate) fn alloc(&self) -> Option<XskBuf> {
        // SAFETY: Live, DMA-mapped pool; called from the queue's NAPI
        // poll or with it disabled (the fill ring has one consumer).
        let xdp = unsafe { bindings::rust_ext_xsk_buff_alloc(self.raw.as_ptr()) };
        // INVARIANT: a buffer of this pool, now ours.
        NonNull::new(xdp).map(|xdp| XskBuf { xdp })
    }

    /// The next frame of the socket's TX ring, or `None`. Descriptors
    /// taken are released to user space by [`Self::tx_release`].
    pub(crate) fn next_tx(&self) -> Option<XskTxDesc> {
        let mut desc = bindings::xdp_desc::default();
        // SAFETY: Live pool; `desc` is valid for writes. The core checked
        // the descriptor lies inside the umem.
        if !unsafe { bindings::xsk_tx_peek_desc(self.raw.as_ptr(), &mut desc) } {
            return None;
        }
        // SAFETY: As above; `desc` came from the pool's TX ring. The frame
        // is handed to the device for reading: synced for it first.
        let addr = unsafe {
            let dma = bindings::rust_ext_xsk_buff_raw_get_dma(self.raw.as_ptr(), desc.addr);
            bindings::rust_ext_xsk_buff_raw_dma_sync_for_device(
                self.raw.as_ptr(),
                dma,
                desc.len as usize,
            );
            dma
        };
        Some(XskTxDesc {
            addr,
            len: desc.len,
        })
    }

    /// Tells user space the descriptors taken by [`Self::next_tx`] were
    /// read from its TX ring.
    pub(crate) fn tx_release(&self) {
        // SAFETY: Live pool.
        unsafe { bindings::xsk_tx_release(self.raw.as_ptr()) };
    }

    /// `n` frames from [`Self::next_tx`] were sent, in the order taken.
    pub(crate) fn tx_completed(&self, n: u32) {
        // SAFETY: Live pool; `n` frames were taken and not yet completed.
        unsafe { bindings::xsk_tx_completed(self.raw.as_ptr(), n) };
    }

    /// Whether user space must wake the driver (`sendto`, `poll`) for it
    /// to look at the fill ring again: set when the RX ring could not be
    /// filled.
    pub(crate) fn set_rx_need_wakeup(&self, need: bool) {
        // SAFETY: Live pool.
        unsafe {
            if need {
                bindings::xsk_set_rx_need_wakeup(self.raw.as_ptr());
            } else {
                bindings::xsk_clear_rx_need_wakeup(self.raw.as_ptr());
            }
        }
    }

    /// User space must wake the driver to send what it adds to its TX
    /// ring next.
    pub(crate) fn set_tx_need_wakeup(&self) {
        // SAFETY: Live pool.
        unsafe { bindings::xsk_set_tx_need_wakeup(self.raw.as_ptr()) };
    }
}

/// An RX buffer of an [`XskPool`], owned by the driver until it hands it
/// on; dropping it puts it back in the pool.
///
/// # Invariants
///
/// `xdp` is the `xdp_buff` of a buffer of a live pool, owned by this value.
pub(crate) struct XskBuf {
    xdp: NonNull<bindings::xdp_buff>,
}

// SAFETY: An owned buffer may move between CPUs.
unsafe impl Send for XskBuf {}

impl XskBuf {
    /// Bus address where the device writes the frame (after the headroom).
    pub(crate) fn frame_addr(&self) -> DmaAddress {
        // SAFETY: Owned buffer of a DMA-mapped pool.
        unsafe { bindings::rust_ext_xsk_buff_xdp_get_dma(self.xdp.as_ptr()) }
    }

    /// The buffer now holds a frame of `len` bytes the device wrote, at
    /// most `room` (the pool's [`XskPool::rx_frame_size`]): makes it
    /// visible to the CPU. Gives the buffer back if `len` does not fit.
    pub(crate) fn received(self, len: u32, room: u32) -> Result<XskFrame, Self> {
        if len > room {
            return Err(self);
        }
        // SAFETY: Owned buffer; the device wrote `len` bytes, within it.
        unsafe { bindings::rust_ext_xsk_buff_received(self.xdp.as_ptr(), len) };
        Ok(XskFrame { buf: self })
    }

    fn into_raw(self) -> *mut bindings::xdp_buff {
        let raw = self.xdp.as_ptr();
        core::mem::forget(self);
        raw
    }
}

impl Drop for XskBuf {
    fn drop(&mut self) {
        // SAFETY: Owned (type invariant), given back once.
        unsafe { bindings::rust_ext_xsk_buff_free(self.xdp.as_ptr()) };
    }
}

// The driver's bytes after each AF_XDP buffer's `xdp_buff` hold the rest
// of an `XdpBuffMeta` (what the metadata functions read).
const _: () = assert!(
    core::mem::size_of::<XdpBuffMeta>()
        <= core::mem::size_of::<bindings::xdp_buff>() + bindings::XSK_PRIV_MAX as usize
);

/// A received frame in an AF_XDP buffer, visible to the CPU: the bytes
/// between the buffer's `data` and `data_end`.
pub(crate) struct XskFrame {
    buf: XskBuf,
}

impl XskFrame {
    /// The frame's bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        let xdp = self.buf.xdp.as_ptr();
        // SAFETY: Owned buffer; `data..data_end` is the frame, inside it,
        // synced for the CPU (the core's helpers keep it so).
        unsafe {
            let (data, end) = ((*xdp).data.cast::<u8>(), (*xdp).data_end.cast::<u8>());
            let len = (end as usize).saturating_sub(data as usize);
            core::slice::from_raw_parts(data, len)
        }
    }

    /// A copy of the frame in a new skb, for the stack; the buffer goes
    /// back to its pool either way.
    pub(crate) fn copy_to_skb(self, napi: &Napi) -> Option<SkBuff> {
        SkBuff::copy_of(napi, self.bytes())
    }

    /// The frame copied out of the umem into a frame of its own, for the
    /// TX ring (`XDP_TX`: user space keeps its buffer). `None` if no
    /// memory; the buffer goes back to its pool either way.
    pub(crate) fn into_xdp_frame(self) -> Option<XdpFrame> {
        let xdp = self.buf.into_raw();
        // SAFETY: An owned buffer of a pool registered as its rxq's memory
        // model: the core copies it into a page of its own and frees the
        // buffer, or on failure leaves it to us.
        let frame = unsafe { bindings::rust_ext_xdp_convert_buff_to_frame(xdp) };
        match NonNull::new(frame) {
            // SAFETY: A new frame, ours.
            Some(frame) => Some(unsafe { XdpFrame::from_raw(frame) }),
            None => {
                // INVARIANT: still ours; given back.
                drop(XskBuf {
                    // SAFETY: `xdp` came from a `NonNull` above.
                    xdp: unsafe { NonNull::new_unchecked(xdp) },
                });
                None
            }
        }
    }
}

impl XdpRunnable for XskFrame {
    type Mem = XskMem;

    fn bytes(&self) -> &[u8] {
        XskFrame::bytes(self)
    }

    /// A redirect to the socket hands the buffer over without a copy; a
    /// drop puts it back in its pool. `rxq` is set up for this frame's
    /// pool.
    fn run_xdp(
        self,
        prog: XdpProgRef<'_>,
        rxq: &XdpRxq<XskMem>,
        hash: Option<XdpRxHash>,
    ) -> XdpVerdict<Self> {
        let xdp = self.buf.xdp.as_ptr();
        // SAFETY: The buffer is the `xdp_buff` at the start of a pool's
        // `xdp_buff_xsk`, followed by `XSK_PRIV_MAX` bytes of the
        // driver's (checked above to hold the rest of an `XdpBuffMeta`).
        unsafe { (*xdp.cast::<XdpBuffMeta>()).hash = hash };
        // SAFETY: Owned buffer, set up by the pool (its rxq is `rxq`'s).
        let act = unsafe { bindings::rust_ext_bpf_prog_run_xdp(prog.as_raw(), xdp) };
        // SAFETY: `xdp` is our buffer as the program left it; its pool is
        // `rxq`'s memory model.
        unsafe {
            act_on(act, self, rxq, prog, xdp, |frame| {
                // The redirect target owns the buffer now.
                let _ = frame.buf.into_raw();
            })
        }
    }
}

/// An `ndo_bpf` request to bind an AF_XDP pool to queue `queue` in
/// zero-copy mode, or (no pool) to let the bound one (`old`) go. The
/// layer has already put `pool` in the queue's slot, or taken `old` out.
pub(crate) struct XskSetup {
    pub(crate) queue: u16,
    pub(crate) pool: Option<XskPool>,
    pub(crate) old: Option<XskPool>,
}

/// The AF_XDP pools bound to a device's queues, one slot per queue: the
/// driver keeps one in its state ([`super::netdev::NetDevOps::xsk_slots`])
/// and reads it ([`Self::get`]) when it builds a queue's rings. The layer
/// fills a slot before the driver's `xsk_setup` binds the pool and
/// empties it before the driver lets the pool go; then it waits until the
/// driver dropped every copy before it answers the core, as
/// [`super::xdp::XdpProgSlot`] holds the program the core hands over.
#[pin_data]
pub(crate) struct XskSlots {
    #[pin]
    slots: Mutex<KVec<Option<XskPool>>>,
}

impl XskSlots {
    /// `queues` empty slots.
    pub(crate) fn new(queues: usize) -> Result<impl PinInit<Self>> {
        let mut slots = KVec::with_capacity(queues, GFP_KERNEL)?;
        for _ in 0..queues {
            slots.push(None, GFP_KERNEL)?;
        }
        Ok(pin_init!(Self {
            slots <- new_mutex!(slots),
        }))
    }

    /// The pool bound to queue `q`.
    pub(crate) fn get(&self, q: usize) -> Option<XskPool> {
        self.slots.lock().get(q).cloned().flatten()
    }

    /// Whether any bound pool satisfies `f`.
    pub(crate) fn any(&self, f: impl Fn(&XskPool) -> bool) -> bool {
        self.slots.lock().iter().flatten().any(f)
    }

    /// Takes queue `q`'s pool out of its slot while an enabling request
    /// fails (the queue restarts without it). Under RTNL, as the request.
    pub(crate) fn withdraw(&self, _rtnl: &Rtnl, q: usize) {
        drop(self.take(q));
    }

    /// Empties queue `q`'s slot; its pool, if it held one.
    fn take(&self, q: usize) -> Option<XskPool> {
        self.slots.lock().get_mut(q).and_then(Option::take)
    }

    /// Carries out an `XDP_SETUP_XSK_POOL` request through the driver's
    /// `op`: fills or empties queue `queue`'s slot around it, and on
    /// return no copy of a pool that is not bound is left.
    ///
    /// # Safety
    ///
    /// `pool` is null or a pool the core is binding to `queue` of the
    /// device whose slots these are.
    pub(in crate::linux) unsafe fn setup(
        &self,
        pool: *mut bindings::xsk_buff_pool,
        queue: u16,
        op: impl FnOnce(XskSetup) -> Result,
    ) -> Result {
        let q = usize::from(queue);
        let Some(raw) = NonNull::new(pool) else {
            let old = self.take(q);
            let ret = op(XskSetup {
                queue,
                pool: None,
                old: old.clone(),
            });
            if let Some(old) = old {
                old.let_go();
            }
            return ret;
        };
        // SAFETY: Per the function's contract; we let go of it below unless
        // it stays bound.
        let pool = unsafe { XskPool::new(raw) }?;
        {
            let mut slots = self.slots.lock();
            let slot = slots.get_mut(q).ok_or(EINVAL)?;
            if slot.is_some() {
                // The core binds one pool per queue.
                return Err(EBUSY);
            }
            *slot = Some(pool.clone());
        }
        let ret = op(XskSetup {
            queue,
            pool: Some(pool.clone()),
            old: None,
        });
        if ret.is_err() {
            drop(self.take(q));
            pool.let_go();
        }
        ret
    }
}

/// Registers `rxq`'s memory model as `pool`'s, and tells the pool the
/// rxq its buffers arrive on.
///
/// # Safety
///
/// `rxq` is a registered `xdp_rxq_info` without a memory model.
pub(in crate::linux) unsafe fn set_rxq_pool(
    rxq: &Opaque<bindings::xdp_rxq_info>,
    pool: &XskPool,
) -> Result {
    // SAFETY: Per the function's contract; this memory model takes no
    // allocator.
    kernel::error::to_result(unsafe {
        bindings::xdp_rxq_info_reg_mem_model(
            rxq.get(),
            bindings::xdp_mem_type_MEM_TYPE_XSK_BUFF_POOL,
            core::ptr::null_mut(),
        )
    })?;
    // SAFETY: Live pool and rxq.
    unsafe { bindings::rust_ext_xsk_pool_set_rxq_info(pool.raw.as_ptr(), rxq.get()) };
    Ok(())
}
