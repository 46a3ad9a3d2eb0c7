// SPDX-License-Identifier: GPL-2.0

//! Native XDP: the BPF program a driver runs on each received frame
//! before any skb exists, the per-RX-queue information programs and
//! redirects need, and what the program decided.
//!
//! The program of a device lives in an [`XdpProgSlot`]: replaced under
//! RTNL (`ndo_bpf`), read by NAPI polls under RCU. The core frees a
//! program only after an RCU grace period once its last reference is
//! gone, so a poll that read the old program may finish running it.
//! Running a program on a page is [`crate::linux::net::page_pool::RxFrame::run_xdp`].

use core::{
    marker::PhantomData,
    ptr::{self, NonNull},
    sync::atomic::{AtomicPtr, Ordering},
};

use kernel::{ffi::c_int, prelude::*, sync::rcu, types::Opaque};

use crate::linux::bindings;
use crate::linux::net::{
    napi::Napi,
    page_pool::PagePool,
    rtnl::Rtnl,
    rx_chunk::ChunkMem,
    xsk::{set_rxq_pool, XskPool},
};

/// A reference to an XDP program; dropping it gives the reference back.
///
/// # Invariants
///
/// `raw` is a live program of which this value owns one reference.
pub(crate) struct XdpProg {
    raw: NonNull<bindings::bpf_prog>,
}

// SAFETY: A program reference may be used and given back on any thread.
unsafe impl Send for XdpProg {}
// SAFETY: Shared use only runs the program or reads its flags.
unsafe impl Sync for XdpProg {}

impl Drop for XdpProg {
    fn drop(&mut self) {
        // SAFETY: We own one reference (type invariant), given back once.
        unsafe { bindings::bpf_prog_put(self.raw.as_ptr()) };
    }
}

/// An XDP program borrowed for `'a`.
///
/// # Invariants
///
/// `raw` is a live program for `'a`.
#[derive(Clone, Copy)]
pub(crate) struct XdpProgRef<'a> {
    raw: NonNull<bindings::bpf_prog>,
    _life: PhantomData<&'a ()>,
}

impl XdpProgRef<'_> {
    /// # Safety
    ///
    /// `raw` is a live program for the reference's lifetime.
    pub(in crate::linux) unsafe fn from_raw(raw: *mut bindings::bpf_prog) -> Self {
        Self {
            // SAFETY: Live, so not null (contract).
            raw: unsafe { NonNull::new_unchecked(raw) },
            _life: PhantomData,
        }
    }

    /// A reference of one's own.
    pub(crate) fn to_owned(self) -> XdpProg {
        // SAFETY: Live program (type invariant); the new reference is
        // owned by the result.
        unsafe { bindings::bpf_prog_inc(self.raw.as_ptr()) };
        XdpProg { raw: self.raw }
    }

    pub(in crate::linux) fn as_raw(self) -> *mut bindings::bpf_prog {
        self.raw.as_ptr()
    }
}

/// The XDP program of a device, or none.
///
/// # Invariants
///
/// `prog` is null or a program of which the slot owns one reference.
pub(crate) struct XdpProgSlot {
    prog: AtomicPtr<bindings::bpf_prog>,
}

impl XdpProgSlot {
    /// An empty slot.
    pub(crate) const fn new() -> Self {
        Self {
            prog: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Installs `prog` (or none) and returns the one it replaces. Polls
    /// still running the old one may do so until an RCU grace period
    /// ends, which the core waits for before freeing it.
    pub(crate) fn replace(&self, _rtnl: &Rtnl, prog: Option<XdpProg>) -> Option<XdpProg> {
        let new = prog.map_or(ptr::null_mut(), |p| {
            let raw = p.raw.as_ptr();
            // The slot owns the reference now.
            core::mem::forget(p);
            raw
        });
        let old = self.prog.swap(new, Ordering::AcqRel);
        // INVARIANT: the slot's reference to the old program is the
        // caller's now.
        NonNull::new(old).map(|raw| XdpProg { raw })
    }

    /// The program, for as long as the RCU read lock is held.
    pub(crate) fn get<'a>(&'a self, _rcu: &'a rcu::Guard) -> Option<XdpProgRef<'a>> {
        // INVARIANT: a program the slot held a reference to when read,
        // freed no sooner than an RCU grace period after it lost it.
        NonNull::new(self.prog.load(Ordering::Acquire)).map(|raw| XdpProgRef {
            raw,
            _life: PhantomData,
        })
    }

    /// Whether a program is installed (read under RTNL, under which the
    /// slot does not change).
    pub(crate) fn is_set(&self, _rtnl: &Rtnl) -> bool {
        !self.prog.load(Ordering::Acquire).is_null()
    }

    /// A reference of one's own to the program, read under RTNL (under
    /// which the slot does not change, so its program is live).
    pub(crate) fn cloned(&self, _rtnl: &Rtnl) -> Option<XdpProg> {
        NonNull::new(self.prog.load(Ordering::Acquire)).map(|raw| {
            XdpProgRef {
                raw,
                _life: PhantomData,
            }
            .to_owned()
        })
    }
}

impl Drop for XdpProgSlot {
    fn drop(&mut self) {
        let old = *self.prog.get_mut();
        if let Some(raw) = NonNull::new(old) {
            // The slot's reference, given back.
            drop(XdpProg { raw });
        }
    }
}

/// What an XDP program decided for a frame, once the driver acted on it.
pub(crate) enum XdpVerdict<F> {
    /// `XDP_PASS`: on to the stack (the frame as the program left it).
    Pass(F),
    /// `XDP_TX`: back out of the port it came in on.
    Tx(F),
    /// `XDP_REDIRECT`, accepted by the target (another device, a CPU map,
    /// an AF_XDP socket); the driver calls [`xdp_flush`] at the end of the
    /// poll.
    Redirected,
    /// The frame is dropped, its page back in its pool.
    Dropped(XdpDrop),
}

/// A received frame an XDP program can run on, in memory of model `Mem`.
pub(crate) trait XdpRunnable: Sized {
    /// The memory model of the rxqs its frames arrive on.
    type Mem;

    /// The frame's bytes.
    fn bytes(&self) -> &[u8];

    /// Runs the XDP program `prog` on the frame, received on `rxq` with
    /// the card's flow hash `hash` (which the program may read), and
    /// carries out what needs no driver: a redirect, a drop, the trace of
    /// an aborted or unknown action.
    fn run_xdp(
        self,
        prog: XdpProgRef<'_>,
        rxq: &XdpRxq<Self::Mem>,
        hash: Option<XdpRxHash>,
    ) -> XdpVerdict<Self>;
}

/// Why an XDP frame was dropped.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum XdpDrop {
    /// `XDP_DROP`.
    Drop,
    /// `XDP_ABORTED` or an action the kernel does not know (traced as an
    /// `xdp_exception`).
    Aborted,
    /// `XDP_REDIRECT` to a target that refused it (traced too).
    RedirectFailed,
}

/// Carries out program action `act` for `frame` (whose buffer `xdp` the
/// program ran on) where no driver is needed: a redirect (`redirected`
/// hands the frame's memory to the target on success; on failure the
/// frame is dropped, back to its owner), a drop, the trace of an aborted
/// or unknown action.
///
/// # Safety
///
/// `xdp` is `frame`'s buffer as the program left it, received on `rxq`
/// (whose memory model is the buffer's), in the NAPI poll.
pub(in crate::linux) unsafe fn act_on<F, M>(
    act: u32,
    frame: F,
    rxq: &XdpRxq<M>,
    prog: XdpProgRef<'_>,
    xdp: *mut bindings::xdp_buff,
    redirected: impl FnOnce(F),
) -> XdpVerdict<F> {
    let dev = rxq.dev_raw();
    let aborted = |act: u32| {
        // SAFETY: Live device and program for the call.
        unsafe { bindings::rust_ext_trace_xdp_exception(dev, prog.as_raw(), act) };
    };
    match act {
        bindings::xdp_action_XDP_PASS => XdpVerdict::Pass(frame),
        bindings::xdp_action_XDP_TX => XdpVerdict::Tx(frame),
        bindings::xdp_action_XDP_DROP => XdpVerdict::Dropped(XdpDrop::Drop),
        bindings::xdp_action_XDP_REDIRECT => {
            // SAFETY: Per the function's contract.
            let err = unsafe { bindings::xdp_do_redirect(dev, xdp, prog.as_raw()) };
            if err == 0 {
                redirected(frame);
                XdpVerdict::Redirected
            } else {
                aborted(act);
                XdpVerdict::Dropped(XdpDrop::RedirectFailed)
            }
        }
        bindings::xdp_action_XDP_ABORTED => {
            aborted(act);
            XdpVerdict::Dropped(XdpDrop::Aborted)
        }
        _ => {
            // SAFETY: Live device and program for the call.
            unsafe { bindings::bpf_warn_invalid_xdp_action(dev, prog.as_raw(), act) };
            aborted(act);
            XdpVerdict::Dropped(XdpDrop::Aborted)
        }
    }
}

/// Sends what this poll redirected on its way (`xdp_do_flush`). Call at
/// the end of a NAPI poll that had an [`XdpVerdict::Redirected`].
pub(crate) fn xdp_flush() {
    // SAFETY: Called from the NAPI poll that redirected, as required.
    unsafe { bindings::xdp_do_flush() };
}

/// Memory model of an [`XdpRxq`] whose frames are in page-pool pages.
pub(crate) enum PageMem {}
/// Memory model of an [`XdpRxq`] whose frames are in an AF_XDP pool's
/// buffers.
pub(crate) enum XskMem {}

/// The XDP information of one RX queue (`xdp_rxq_info`): its device,
/// index and memory model `M`, which programs and redirect targets read.
/// The core frees a frame by its rxq's model, so a frame is only ever run
/// with an rxq of its own kind (the type parameter says which).
///
/// # Invariants
///
/// `raw` is registered, with memory model `M`, until drop.
pub(crate) struct XdpRxq<M = PageMem> {
    raw: Pin<KBox<Opaque<bindings::xdp_rxq_info>>>,
    dev: NonNull<bindings::net_device>,
    _model: PhantomData<M>,
}

// SAFETY: Registration and unregistration may happen on any thread; the
// info is read by the core only.
unsafe impl<M> Send for XdpRxq<M> {}
// SAFETY: `&XdpRxq` only hands the pointer to the core.
unsafe impl<M> Sync for XdpRxq<M> {}

impl XdpRxq<PageMem> {
    /// Registers RX queue `queue`, polled by `napi`, whose pages come from
    /// `pool`. Drop it before the pool.
    pub(crate) fn new(napi: &Napi, queue: u32, pool: &PagePool) -> Result<Self> {
        Self::with_model(napi, queue, |raw| {
            // SAFETY: Registered, without a memory model yet; `pool` is
            // live (the caller drops us first). The core takes its own
            // hold on the pool.
            kernel::error::to_result(unsafe {
                bindings::xdp_rxq_info_reg_mem_model(
                    raw.get(),
                    bindings::xdp_mem_type_MEM_TYPE_PAGE_POOL,
                    pool.as_raw().cast(),
                )
            })
        })
    }
}

impl XdpRxq<XskMem> {
    /// Registers RX queue `queue`, polled by `napi`, whose buffers come
    /// from the AF_XDP pool `pool` (zero copy). Drop it before the pool
    /// goes.
    pub(crate) fn new_xsk(napi: &Napi, queue: u32, pool: &XskPool) -> Result<Self> {
        // SAFETY: Registered, without a memory model yet.
        Self::with_model(napi, queue, |raw| unsafe { set_rxq_pool(raw, pool) })
    }
}

impl XdpRxq<ChunkMem> {
    /// Registers RX queue `queue`, polled by `napi`, whose frames are in
    /// receive-stream chunks, each holding a page reference the core
    /// drops when it is done with the frame.
    pub(crate) fn new_chunk(napi: &Napi, queue: u32) -> Result<Self> {
        Self::with_model(napi, queue, |raw| {
            // SAFETY: Registered, without a memory model yet; the shared
            // page model needs no allocator.
            kernel::error::to_result(unsafe {
                bindings::xdp_rxq_info_reg_mem_model(
                    raw.get(),
                    bindings::xdp_mem_type_MEM_TYPE_PAGE_SHARED,
                    ptr::null_mut(),
                )
            })
        })
    }
}

impl<M> XdpRxq<M> {
    fn with_model(
        napi: &Napi,
        queue: u32,
        model: impl FnOnce(&Opaque<bindings::xdp_rxq_info>) -> Result,
    ) -> Result<Self> {
        let raw = KBox::pin(Opaque::<bindings::xdp_rxq_info>::zeroed(), GFP_KERNEL)?;
        let dev = NonNull::new(napi.dev_raw()).ok_or(EINVAL)?;
        // SAFETY: `raw` is zeroed and pinned; `napi` is an added NAPI
        // context of `dev`.
        kernel::error::to_result(unsafe {
            bindings::rust_ext_xdp_rxq_info_reg(raw.get(), dev.as_ptr(), queue, napi.as_raw())
        })?;
        if let Err(e) = model(&raw) {
            // SAFETY: Registered above, not used by anyone yet.
            unsafe { bindings::xdp_rxq_info_unreg(raw.get()) };
            return Err(e);
        }
        Ok(Self {
            raw,
            dev,
            _model: PhantomData,
        })
    }

    pub(in crate::linux) fn as_raw(&self) -> *mut bindings::xdp_rxq_info {
        self.raw.get()
    }

    pub(in crate::linux) fn dev_raw(&self) -> *mut bindings::net_device {
        self.dev.as_ptr()
    }
}

impl<M> Drop for XdpRxq<M> {
    fn drop(&mut self) {
        // SAFETY: Registered (type invariant); unregistered once. Also
        // drops the memory model's hold on the pool.
        unsafe { bindings::xdp_rxq_info_unreg(self.raw.get()) };
    }
}

/// An `ndo_bpf` request to install a program (`XDP_SETUP_PROG`).
///
/// # Invariants
///
/// `extack` is null or the request's live extended ack, for `'a`.
pub(crate) struct XdpSetup<'a> {
    prog: Option<XdpProgRef<'a>>,
    extack: *mut bindings::netlink_ext_ack,
}

impl<'a> XdpSetup<'a> {
    /// # Safety
    ///
    /// `prog` is null or live for `'a`; `extack` null or live for `'a`.
    pub(in crate::linux) unsafe fn from_raw(
        prog: *mut bindings::bpf_prog,
        extack: *mut bindings::netlink_ext_ack,
    ) -> Self {
        Self {
            prog: NonNull::new(prog).map(|raw| XdpProgRef {
                raw,
                _life: PhantomData,
            }),
            extack,
        }
    }

    /// The program to install, or `None` to remove the current one.
    pub(crate) fn prog(&self) -> Option<XdpProgRef<'a>> {
        self.prog
    }

    /// Tells the user why the request is refused (`NL_SET_ERR_MSG`).
    pub(crate) fn refuse(&mut self, msg: &'static CStr) {
        if !self.extack.is_null() {
            // SAFETY: Live extended ack (type invariant); the message is
            // a static string, as the core requires.
            unsafe { (*self.extack)._msg = msg.as_char_ptr() };
        }
    }
}

/// The flow hash the card computed for a frame, as XDP programs read it
/// (`bpf_xdp_metadata_rx_hash`): the hash and what it covered.
#[derive(Clone, Copy)]
pub(crate) struct XdpRxHash {
    pub(crate) hash: u32,
    /// `enum xdp_rss_hash_type` bits ([`rss_type`]).
    pub(crate) kind: u32,
}

/// Bits of what an RX hash covered (`enum xdp_rss_hash_type`).
pub(crate) mod rss_type {
    use crate::linux::bindings;

    pub(crate) const L3_IPV4: u32 = bindings::xdp_rss_hash_type_XDP_RSS_L3_IPV4;
    pub(crate) const L3_IPV6: u32 = bindings::xdp_rss_hash_type_XDP_RSS_L3_IPV6;
    /// The ports too (always with the protocol's bit when it is known).
    pub(crate) const L4: u32 = bindings::xdp_rss_hash_type_XDP_RSS_L4;
    pub(crate) const L4_TCP: u32 = bindings::xdp_rss_hash_type_XDP_RSS_L4_TCP;
    pub(crate) const L4_UDP: u32 = bindings::xdp_rss_hash_type_XDP_RSS_L4_UDP;
}

/// The `xdp_buff` of a frame a driver runs a program on, with the
/// metadata the device's `xdp_metadata_ops` hand out. `repr(C)` with the
/// buffer first: the core passes the metadata functions a pointer to the
/// buffer, and they read the rest of this.
#[repr(C)]
pub(in crate::linux) struct XdpBuffMeta {
    pub(in crate::linux) xdp: bindings::xdp_buff,
    pub(in crate::linux) hash: Option<XdpRxHash>,
}

/// `xmo_rx_hash`.
///
/// # Safety
///
/// `ctx` is the buffer of an [`XdpBuffMeta`] being run by
/// [`crate::linux::net::page_pool::RxFrame::run_xdp`]: the core calls it only
/// from a program bound to a device with [`XDP_METADATA_OPS`], running
/// on that device's frames, and every frame such a device runs a program
/// on is in an `XdpBuffMeta`. `hash` and `kind` are valid for writes.
unsafe extern "C" fn rx_hash(
    ctx: *const bindings::xdp_md,
    hash: *mut u32,
    kind: *mut bindings::xdp_rss_hash_type,
) -> c_int {
    // SAFETY: Per the function's contract; the buffer is the first field.
    let meta = unsafe { &*ctx.cast::<XdpBuffMeta>() };
    match meta.hash {
        Some(h) => {
            // SAFETY: Valid for writes, per the contract.
            unsafe {
                *hash = h.hash;
                *kind = h.kind;
            }
            0
        }
        // CAST: ENODATA (61) fits a c_int; the kernel crate has no code for it.
        None => -(kernel::bindings::ENODATA as c_int),
    }
}

/// The metadata a device's XDP programs can read (`xdp_metadata_ops`):
/// for devices whose every program run goes through `RxFrame::run_xdp`.
pub(in crate::linux) struct XdpMetadataOps(pub(in crate::linux) bindings::xdp_metadata_ops);

// SAFETY: Function pointers only, never written.
unsafe impl Sync for XdpMetadataOps {}

/// The RX hash (`xdp-rx-metadata-features`: `hash`).
pub(in crate::linux) static XDP_METADATA_OPS: XdpMetadataOps =
    XdpMetadataOps(bindings::xdp_metadata_ops {
        xmo_rx_timestamp: None,
        xmo_rx_hash: Some(rx_hash),
        xmo_rx_vlan_tag: None,
    });

/// A frame another device's XDP program redirected to this one
/// (`ndo_xdp_xmit`), owned until the card sent it. Dropping it gives it
/// back to its memory's owner (`xdp_return_frame`).
///
/// # Invariants
///
/// `raw` is a frame this value owns.
pub(crate) struct XdpFrame {
    raw: NonNull<bindings::xdp_frame>,
}

// SAFETY: An owned frame may be sent and returned from any CPU.
unsafe impl Send for XdpFrame {}

impl XdpFrame {
    /// # Safety
    ///
    /// `raw` is a frame the caller owns and hands over.
    pub(in crate::linux) unsafe fn from_raw(raw: NonNull<bindings::xdp_frame>) -> Self {
        Self { raw }
    }

    /// Bytes of the frame.
    pub(crate) fn len(&self) -> u32 {
        // SAFETY: Owned, live frame (type invariant).
        unsafe { (*self.raw.as_ptr()).len }
    }

    /// The frame's first byte.
    pub(in crate::linux) fn data(&self) -> *mut core::ffi::c_void {
        // SAFETY: Owned, live frame.
        unsafe { (*self.raw.as_ptr()).data }
    }
}

impl Drop for XdpFrame {
    fn drop(&mut self) {
        // SAFETY: Owned (type invariant), returned once.
        unsafe { bindings::xdp_return_frame(self.raw.as_ptr()) };
    }
}

/// The frames of one `ndo_xdp_xmit` call, in order.
///
/// # Invariants
///
/// `frames[taken..n]` are live frames still the core's, for the call.
pub(crate) struct XdpXmitBatch<'a> {
    frames: *mut *mut bindings::xdp_frame,
    n: usize,
    taken: usize,
    _call: PhantomData<&'a ()>,
}

impl XdpXmitBatch<'_> {
    /// Hands the frames to `send` in order, until it gives one back (no
    /// room): that one and the rest stay the core's, which frees them.
    /// Returns how many were not sent.
    pub(crate) fn send_each(
        &mut self,
        mut send: impl FnMut(XdpFrame) -> Result<(), XdpFrame>,
    ) -> usize {
        while self.taken < self.n {
            // SAFETY: `taken < n`: a live frame of the core's (type
            // invariant).
            let raw = unsafe { *self.frames.add(self.taken) };
            let Some(raw) = NonNull::new(raw) else {
                break;
            };
            // INVARIANT: ours from here; `taken` moves past it.
            self.taken += 1;
            if let Err(back) = send(XdpFrame { raw }) {
                // The core frees it with the rest.
                core::mem::forget(back);
                self.taken -= 1;
                break;
            }
        }
        self.n - self.taken
    }
}

/// Runs an `ndo_xdp_xmit` call: `xmit` gets the batch and whether the
/// device must be told now (`XDP_XMIT_FLUSH`). Returns what the core
/// expects: how many frames the driver took, or `-EINVAL` for flags it
/// does not know.
///
/// # Safety
///
/// `frames` holds `n` live frames the core hands over for the call.
pub(in crate::linux) unsafe fn xdp_xmit_call(
    n: c_int,
    frames: *mut *mut bindings::xdp_frame,
    flags: u32,
    xmit: impl FnOnce(&mut XdpXmitBatch<'_>, bool),
) -> c_int {
    const FLUSH: u32 = 1 << 0;
    if flags & !FLUSH != 0 {
        return EINVAL.to_errno();
    }
    let mut batch = XdpXmitBatch {
        frames,
        n: usize::try_from(n).unwrap_or(0),
        taken: 0,
        _call: PhantomData,
    };
    xmit(&mut batch, flags & FLUSH != 0);
    // CAST: At most `n`, which is a `c_int`.
    batch.taken as c_int
}

/// The XDP actions a device offers (`xdp_features`).
#[derive(Clone, Copy, Default)]
pub(crate) struct XdpFeatures(u32);

impl XdpFeatures {
    /// `XDP_ABORTED`, `XDP_DROP`, `XDP_PASS`, `XDP_TX`.
    pub(crate) const BASIC: Self = Self(bindings::netdev_xdp_act_NETDEV_XDP_ACT_BASIC);
    /// `XDP_REDIRECT` from this device.
    pub(crate) const REDIRECT: Self = Self(bindings::netdev_xdp_act_NETDEV_XDP_ACT_REDIRECT);
    /// Frames redirected to this device (`ndo_xdp_xmit`).
    pub(crate) const NDO_XMIT: Self = Self(bindings::netdev_xdp_act_NETDEV_XDP_ACT_NDO_XMIT);
    /// AF_XDP zero copy (`XDP_SETUP_XSK_POOL`, `ndo_xsk_wakeup`).
    pub(crate) const XSK_ZEROCOPY: Self =
        Self(bindings::netdev_xdp_act_NETDEV_XDP_ACT_XSK_ZEROCOPY);

    /// Offloaded programs (`XDP_SETUP_PROG_HW`).
    pub(crate) const HW_OFFLOAD: Self = Self(bindings::netdev_xdp_act_NETDEV_XDP_ACT_HW_OFFLOAD);

    /// Both sets.
    pub(crate) const fn with(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    pub(in crate::linux) fn bits(self) -> u32 {
        self.0
    }
}
