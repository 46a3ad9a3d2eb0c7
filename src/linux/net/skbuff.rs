// SPDX-License-Identifier: GPL-2.0

//! Socket buffers (`struct sk_buff`) owned by the driver.

use core::marker::PhantomData;
use core::ptr::NonNull;

use kernel::prelude::*;

use crate::linux::bindings;
use crate::linux::net::any_netdev::AnyNetDev;
use crate::linux::net::napi::Napi;

/// `CHECKSUM_UNNECESSARY` (`skbuff.h` macros bindgen cannot read).
const CHECKSUM_UNNECESSARY: u8 = 1;
/// `CHECKSUM_PARTIAL`.
const CHECKSUM_PARTIAL: u8 = 3;

/// A socket buffer the driver owns: it must send, hand up or free it.
/// Dropping it frees it (counted as a drop by the kernel's tracing).
///
/// # Invariants
///
/// Points at a valid `sk_buff` that nothing else owns.
pub(crate) struct SkBuff(NonNull<bindings::sk_buff>);

// SAFETY: An owned skb may move between CPUs.
unsafe impl Send for SkBuff {}

/// Checksum work the stack left to the device (`CHECKSUM_PARTIAL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CsumRequest {
    /// Offset of the checksummed area from the frame start.
    pub(crate) start: u16,
    /// Where the checksum goes, from `start`.
    pub(crate) offset: u16,
}

/// Which segmentation the stack left to the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GsoKind {
    /// TCP segmentation (`SKB_GSO_TCPV4/6`).
    Tcp,
    /// TCP segmentation inside a tunnel (`SKB_GSO_UDP_TUNNEL[_CSUM]`,
    /// `SKB_GSO_GRE[_CSUM]`, `SKB_GSO_IPXIP4/6`): each segment's outer
    /// headers are fixed too.
    TunnelTcp {
        /// Offset of the inner IP header.
        inner_l3: u16,
        /// The outer UDP checksum is wanted (`SKB_GSO_UDP_TUNNEL_CSUM`).
        outer_udp_csum: bool,
    },
    /// UDP segmentation (`SKB_GSO_UDP_L4`): each segment a datagram.
    Udp,
}

/// The tunnel segmentation kinds (`SKB_GSO_*`) of [`GsoKind::TunnelTcp`].
// CAST: `SKB_GSO_*` are small positive bits of the u32 `gso_type`.
const TUNNEL_GSO: u32 = (bindings::SKB_GSO_UDP_TUNNEL
    | bindings::SKB_GSO_UDP_TUNNEL_CSUM
    | bindings::SKB_GSO_GRE
    | bindings::SKB_GSO_GRE_CSUM
    | bindings::SKB_GSO_IPXIP4
    | bindings::SKB_GSO_IPXIP6) as u32;
/// `SKB_GSO_UDP_TUNNEL_CSUM` as a `gso_type` bit.
// CAST: as above.
const UDP_TUNNEL_CSUM: u32 = bindings::SKB_GSO_UDP_TUNNEL_CSUM as u32;

/// Segmentation the stack left to the device (TSO or USO).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct GsoRequest {
    /// TCP or UDP.
    pub(crate) kind: GsoKind,
    /// Payload bytes per segment.
    pub(crate) mss: u16,
    /// Bytes of headers (through the TCP or UDP header) each segment
    /// repeats.
    pub(crate) hdr_len: u16,
    /// Segments the frame becomes.
    pub(crate) segs: u16,
}

/// A socket buffer the core lends the driver for one call
/// (`ndo_select_queue`): the driver may look at it, never keep or free
/// it.
///
/// # Invariants
///
/// Points at a valid `sk_buff` for `'a`.
pub(crate) struct SkBuffRef<'a> {
    ptr: NonNull<bindings::sk_buff>,
    _call: PhantomData<&'a mut bindings::sk_buff>,
}

impl SkBuffRef<'_> {
    /// Borrows `ptr` for the call.
    ///
    /// # Safety
    ///
    /// `ptr` must be NULL or a valid skb for the lifetime chosen.
    pub(super) unsafe fn from_raw(ptr: *mut bindings::sk_buff) -> Option<Self> {
        NonNull::new(ptr).map(|ptr| Self {
            ptr,
            _call: PhantomData,
        })
    }

    pub(super) fn as_raw(&self) -> *mut bindings::sk_buff {
        self.ptr.as_ptr()
    }
}

impl SkBuff {
    /// Takes ownership of `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` must be NULL or a valid skb that the caller owns and gives up.
    pub(crate) unsafe fn from_raw(ptr: *mut bindings::sk_buff) -> Option<Self> {
        NonNull::new(ptr).map(Self)
    }

    pub(super) fn as_raw(&self) -> *mut bindings::sk_buff {
        self.0.as_ptr()
    }

    /// Total length in bytes.
    pub(crate) fn len(&self) -> u32 {
        // SAFETY: Valid skb by the type invariant; a plain field.
        unsafe { (*self.as_raw()).len }
    }

    /// Makes all data linear (one buffer); fails on allocation failure.
    pub(crate) fn linearize(&mut self) -> Result {
        // SAFETY: Valid, owned skb.
        kernel::error::to_result(unsafe { bindings::rust_ext_skb_linearize(self.as_raw()) })
    }

    /// Bytes in the linear part.
    pub(crate) fn headlen(&self) -> u32 {
        // SAFETY: Valid skb.
        unsafe { bindings::rust_ext_skb_headlen(self.as_raw()) }
    }

    /// The linear part's bytes.
    pub(crate) fn head(&self) -> &[u8] {
        // SAFETY: Valid skb: `data` points at `headlen` readable bytes,
        // alive as long as the skb, which `&self` borrows.
        unsafe { core::slice::from_raw_parts((*self.as_raw()).data, self.headlen() as usize) }
    }

    /// The linear part's bytes, to rewrite in place. Only for an skb the
    /// driver made itself (received, not cloned), whose data no one else
    /// shares.
    pub(crate) fn head_mut(&mut self) -> &mut [u8] {
        let len = self.headlen() as usize;
        // SAFETY: As `head`; `&mut self` and the skb being the driver's
        // own unshared buffer make the access exclusive.
        unsafe { core::slice::from_raw_parts_mut((*self.as_raw()).data, len) }
    }

    /// Whether another page fragment fits: fewer than the fewest an skb
    /// may have (17, `CONFIG_MAX_SKB_FRAGS`'s least).
    pub(crate) fn has_frag_room(&self) -> bool {
        const MIN_MAX_SKB_FRAGS: u32 = 17;
        self.nr_frags() < MIN_MAX_SKB_FRAGS
    }

    /// Whether the driver may read the fragments: not when they are a
    /// memory provider's (devmem TX), which only the card may touch.
    pub(crate) fn frags_readable(&self) -> bool {
        // SAFETY: Valid skb.
        unsafe { bindings::rust_ext_skb_frags_readable(self.as_raw()) }
    }

    /// Whether the sender asked for a hardware TX time stamp
    /// (`SKBTX_HW_TSTAMP`): the device should report when the frame
    /// left, through [`SkBuff::tstamp_tx`].
    pub(crate) fn hw_tstamp_requested(&self) -> bool {
        // SAFETY: Valid skb; the helper reads its shared info.
        unsafe { bindings::rust_ext_skb_hw_tstamp_requested(self.as_raw()) }
    }

    /// Tells the stack the device will report the frame's TX time stamp
    /// (`SKBTX_IN_PROGRESS`), so it makes no software one in its place.
    pub(crate) fn set_hw_tstamp_in_progress(&mut self) {
        // SAFETY: Valid, owned skb, not yet on the ring.
        unsafe { bindings::rust_ext_skb_hw_tstamp_in_progress(self.as_raw()) }
    }

    /// The software TX time stamp, if asked for (`skb_tx_timestamp`):
    /// just before the device is given the frame.
    pub(crate) fn tx_timestamp(&mut self) {
        // SAFETY: Valid, owned skb.
        unsafe { bindings::rust_ext_skb_tx_timestamp(self.as_raw()) }
    }

    /// Reports the frame's hardware TX time stamp, `ns` on the device's
    /// clock, to its socket's error queue (`skb_tstamp_tx`).
    pub(crate) fn tstamp_tx(&self, ns: u64) {
        // SAFETY: Valid skb; the core clones what it queues.
        unsafe { bindings::rust_ext_skb_tstamp_tx_hw(self.as_raw(), ns) }
    }

    /// Sets a received frame's hardware time stamp: `ns` on the
    /// device's clock.
    pub(crate) fn set_hwtstamp(&mut self, ns: u64) {
        // SAFETY: Valid, owned skb; a plain field of its shared info.
        unsafe { bindings::rust_ext_skb_set_hwtstamp(self.as_raw(), ns) }
    }

    /// Number of page fragments after the linear part.
    pub(crate) fn nr_frags(&self) -> u32 {
        // SAFETY: Valid skb; its shared info is at its end.
        unsafe {
            (*bindings::rust_ext_skb_shinfo(self.as_raw()))
                .nr_frags
                .into()
        }
    }

    /// The segmentation (TCP or UDP) the stack wants the device to do, if
    /// any.
    pub(crate) fn gso_request(&self) -> Option<GsoRequest> {
        let skb = self.as_raw();
        // SAFETY: Valid skb; the helpers read its shared info and header
        // offsets.
        unsafe {
            if !bindings::rust_ext_skb_is_gso(skb) {
                return None;
            }
            let shinfo = bindings::rust_ext_skb_shinfo(skb);
            let gso_type = (*shinfo).gso_type;
            let (kind, hdr_len) = if gso_type & TUNNEL_GSO != 0 {
                if !bindings::rust_ext_skb_is_gso_tcp(skb)
                    || !bindings::rust_ext_skb_encapsulation(skb)
                {
                    return None;
                }
                let kind = GsoKind::TunnelTcp {
                    inner_l3: u16::try_from(bindings::rust_ext_skb_inner_network_offset(skb))
                        .ok()?,
                    outer_udp_csum: gso_type & UDP_TUNNEL_CSUM != 0,
                };
                (kind, bindings::rust_ext_skb_inner_tcp_all_headers(skb))
            } else if bindings::rust_ext_skb_is_gso_tcp(skb) {
                (GsoKind::Tcp, bindings::rust_ext_skb_tcp_all_headers(skb))
            } else if bindings::rust_ext_skb_is_gso_udp_l4(skb) {
                (GsoKind::Udp, bindings::rust_ext_skb_udp_all_headers(skb))
            } else {
                return None;
            };
            Some(GsoRequest {
                kind,
                mss: (*shinfo).gso_size,
                hdr_len: u16::try_from(hdr_len).ok()?,
                segs: (*shinfo).gso_segs,
            })
        }
    }

    /// The TX queue the stack picked.
    pub(crate) fn queue_mapping(&self) -> u16 {
        // SAFETY: Valid skb.
        unsafe { bindings::rust_ext_skb_get_queue_mapping(self.as_raw()) }
    }

    /// The checksum the stack wants the device to insert, if any.
    pub(crate) fn csum_request(&self) -> Option<CsumRequest> {
        let skb = self.as_raw();
        // SAFETY: Valid skb; the helpers read plain fields.
        unsafe {
            (bindings::rust_ext_skb_ip_summed(skb) == CHECKSUM_PARTIAL).then(|| CsumRequest {
                // CAST: the checksum start is an offset into the head, which
                // `skb_headlen` (a u32) bounds; the core keeps it in a u16
                // (`csum_start`).
                start: bindings::rust_ext_skb_checksum_start_offset(skb) as u16,
                offset: bindings::rust_ext_skb_csum_offset(skb),
            })
        }
    }

    /// A new skb holding a copy of `frame` (NAPI context, polling with
    /// `napi`), or `None` if no memory.
    pub(crate) fn copy_of(napi: &Napi, frame: &[u8]) -> Option<Self> {
        let len = u32::try_from(frame.len()).ok()?;
        // SAFETY: `napi` is the context polling right now.
        let skb = unsafe { bindings::napi_alloc_skb(napi.as_raw(), len) };
        // SAFETY: NULL or a new skb that we own.
        let skb = unsafe { Self::from_raw(skb) }?;
        // SAFETY: The new skb has room for `len` bytes of data (asked for
        // above); `skb_put` returns where they go, which `frame` cannot
        // overlap.
        unsafe {
            let to = bindings::skb_put(skb.as_raw(), len).cast::<u8>();
            core::ptr::copy_nonoverlapping(frame.as_ptr(), to, frame.len());
        }
        Some(skb)
    }

    /// A new skb of `len` bytes of data that `fill` writes (NAPI context,
    /// polling with `napi`); `None` if no memory or `fill` failed (the skb
    /// is freed).
    pub(crate) fn filled(
        napi: &Napi,
        len: usize,
        fill: impl FnOnce(&mut [u8]) -> Result,
    ) -> Option<Self> {
        let len32 = u32::try_from(len).ok()?;
        // SAFETY: `napi` is the context polling right now.
        let skb = unsafe { bindings::napi_alloc_skb(napi.as_raw(), len32) };
        // SAFETY: NULL or a new skb that we own.
        let skb = unsafe { Self::from_raw(skb) }?;
        // SAFETY: The new skb has room for `len` bytes of data (asked for
        // above); `skb_put` returns where they go, ours until the skb is
        // handed on.
        let data = unsafe {
            let to = bindings::skb_put(skb.as_raw(), len32).cast::<u8>();
            core::slice::from_raw_parts_mut(to, len)
        };
        // On error the skb is dropped: freed as a drop.
        fill(data).ok().map(|()| skb)
    }

    /// Puts `len` bytes in front of the data, first making the head
    /// room (or a private copy of a shared head) if needed; returns them
    /// to be written. `ENOMEM` leaves the skb as it was.
    pub(crate) fn push(&mut self, len: u32) -> Result<&mut [u8]> {
        let skb = self.as_raw();
        // SAFETY: We own `skb`; making head room keeps its data.
        kernel::error::to_result(unsafe { bindings::rust_ext_skb_cow_head(skb, len) })?;
        // SAFETY: The head has `len` bytes of room in front of the data
        // (made above); `skb_push` returns where they start, ours until the
        // skb is handed on.
        unsafe {
            let to = bindings::skb_push(skb, len).cast::<u8>();
            Ok(core::slice::from_raw_parts_mut(to, len as usize))
        }
    }

    /// Drops the first `len` bytes of the data; `EINVAL` if the linear
    /// part is shorter.
    pub(crate) fn pull(&mut self, len: u32) -> Result {
        if self.headlen() < len {
            return Err(EINVAL);
        }
        // SAFETY: We own the skb; its linear part holds `len` bytes.
        unsafe { bindings::skb_pull(self.as_raw(), len) };
        Ok(())
    }

    /// Hands a received Ethernet frame to the stack as received on `dev`
    /// (another device than the one whose queue it came in on: a
    /// representor's), through the backlog. Any context.
    pub(crate) fn receive_on(self, dev: &AnyNetDev) {
        let skb = self.into_raw();
        // SAFETY: We own `skb`, filled with an Ethernet frame; `dev` is a
        // live registered device, which the skb then holds no reference
        // to beyond the stack's own (as any received skb).
        unsafe {
            bindings::rust_ext_skb_set_protocol(skb, bindings::eth_type_trans(skb, dev.as_raw()));
            bindings::netif_rx(skb);
        }
    }

    /// Hands a received frame to the stack through GRO, on RX queue `queue`.
    pub(crate) fn receive(self, napi: &Napi, queue: u16) {
        let skb = self.into_raw();
        // SAFETY: We own `skb`, filled with an Ethernet frame; `napi` is the
        // context polling right now, bound to the device.
        unsafe {
            bindings::rust_ext_skb_set_protocol(skb, bindings::eth_type_trans(skb, napi.dev_raw()));
            bindings::rust_ext_skb_record_rx_queue(skb, queue);
            // The GRO result is for drivers that count merges; none here.
            bindings::rust_ext_napi_gro_receive(napi.as_raw(), skb);
        }
    }

    /// Hands a frame the device coalesced from `segs` TCP segments of
    /// `mss` payload bytes to the stack through GRO, on RX queue `queue`,
    /// as the packet GRO itself would have built (`tcp_gro_complete`): a
    /// GSO skb whose TCP checksum field holds the pseudo-header's sum,
    /// taken as checked. The headers come from the device: they must be
    /// IPv4 without options or IPv6, then TCP, all in the linear part;
    /// else the skb is freed as a drop and `EINVAL` returned.
    pub(crate) fn receive_coalesced(
        mut self,
        napi: &Napi,
        queue: u16,
        segs: u16,
        mss: u16,
    ) -> Result {
        let skb = self.as_raw();
        // SAFETY: We own `skb`, filled with an Ethernet frame; `napi` is the
        // context polling right now, bound to the device.
        let proto = unsafe { bindings::eth_type_trans(skb, napi.dev_raw()) };
        let len = self.len();
        let (l4, gso_type) = pseudo_sum_into_tcp(self.head_mut(), u16::from_be(proto), len)?;
        if segs < 2 || mss == 0 {
            return Err(EINVAL);
        }
        // SAFETY: We own `skb`; its network header is where `data` points
        // after `eth_type_trans`, the TCP header `l4` bytes further, both
        // in the linear part (checked above). `tcp_gro_complete` reads the
        // TCP header and the GRO count set just before it.
        unsafe {
            bindings::rust_ext_skb_set_protocol(skb, proto);
            bindings::rust_ext_skb_reset_network_header(skb);
            // CAST: at most 60 (an IPv6 or IPv4 header).
            bindings::rust_ext_skb_set_transport_header(skb, l4 as kernel::ffi::c_int);
            let shinfo = bindings::rust_ext_skb_shinfo(skb);
            (*shinfo).gso_size = mss;
            (*shinfo).gso_type = gso_type;
            bindings::rust_ext_napi_gro_cb_set_count(skb, segs);
            bindings::tcp_gro_complete(skb);
            bindings::rust_ext_skb_record_rx_queue(skb, queue);
            bindings::rust_ext_napi_gro_receive(napi.as_raw(), self.into_raw());
        }
        Ok(())
    }

    /// Marks the L4 checksum as verified by the device.
    pub(crate) fn set_csum_unnecessary(&mut self) {
        // SAFETY: Valid, owned skb.
        unsafe { bindings::rust_ext_skb_set_ip_summed(self.as_raw(), CHECKSUM_UNNECESSARY) };
    }

    /// Records the RSS hash the card computed (`l4`: it covers ports).
    pub(crate) fn set_hash(&mut self, hash: u32, l4: bool) {
        let kind = if l4 {
            bindings::pkt_hash_types_PKT_HASH_TYPE_L4
        } else {
            bindings::pkt_hash_types_PKT_HASH_TYPE_L3
        };
        // SAFETY: Valid, owned skb.
        unsafe { bindings::rust_ext_skb_set_hash(self.as_raw(), hash, kind) };
    }

    /// Transmits the skb on another device (a slave). The slave's
    /// transmit picks its TX queue by its own rule, as for any skb: the
    /// upper's queue number means nothing there, and is cleared so it is
    /// not taken for a recorded RX queue (`skb_tx_hash`). Consumes the skb
    /// whatever happens.
    pub(super) fn xmit_on(self, dev: *mut bindings::net_device) {
        let skb = self.into_raw();
        // SAFETY: We own the skb and give it up; the caller passes a live,
        // held device (see `TxLower::xmit`), in the TX path (RCU-BH).
        unsafe {
            bindings::rust_ext_skb_set_dev(skb, dev);
            bindings::rust_ext_skb_set_queue_mapping(skb, 0);
            bindings::__dev_queue_xmit(skb, core::ptr::null_mut());
        }
    }

    /// Frees a sent skb (not counted as a drop).
    pub(crate) fn consume(self) {
        // SAFETY: We own the skb; any context.
        unsafe { bindings::rust_ext_dev_consume_skb_any(self.into_raw()) };
    }

    fn into_raw(self) -> *mut bindings::sk_buff {
        let ptr = self.as_raw();
        core::mem::forget(self);
        ptr
    }
}

impl Drop for SkBuff {
    fn drop(&mut self) {
        // SAFETY: We own the skb; any context.
        unsafe { bindings::rust_ext_dev_kfree_skb_any(self.as_raw()) };
    }
}

/// A queue of socket buffers (`struct sk_buff_head`) with its own
/// IRQ-safe lock: one context enqueues (NAPI), another dequeues (a work
/// item). Frees what is left on drop.
///
/// # Invariants
///
/// `head` was initialised by `skb_queue_head_init` and holds only skbs
/// the queue owns.
#[pin_data(PinnedDrop)]
pub(crate) struct SkbQueue {
    #[pin]
    head: kernel::types::Opaque<bindings::sk_buff_head>,
}

// SAFETY: `sk_buff_head` is used through its own lock from any context.
unsafe impl Send for SkbQueue {}
// SAFETY: As above.
unsafe impl Sync for SkbQueue {}

impl SkbQueue {
    /// An empty queue.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            // SAFETY: Initialises the pinned, embedded list head.
            head <- kernel::types::Opaque::ffi_init(|h: *mut bindings::sk_buff_head| unsafe {
                bindings::rust_ext_skb_queue_head_init(h)
            }),
        })
    }

    /// Adds `skb` at the tail. Any context.
    pub(crate) fn enqueue(&self, skb: SkBuff) {
        // SAFETY: Initialised head (invariant); the queue takes the skb.
        unsafe { bindings::skb_queue_tail(self.head.get(), skb.into_raw()) };
    }

    /// Takes the skb at the head. Any context.
    pub(crate) fn dequeue(&self) -> Option<SkBuff> {
        // SAFETY: Initialised head; a dequeued skb is ours.
        unsafe { SkBuff::from_raw(bindings::skb_dequeue(self.head.get())) }
    }

    /// Skbs queued (a snapshot).
    pub(crate) fn len(&self) -> u32 {
        // SAFETY: Initialised head; a racy read of its length is allowed.
        unsafe { bindings::rust_ext_skb_queue_len(self.head.get()) }
    }
}

#[pinned_drop]
impl PinnedDrop for SkbQueue {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: Initialised head; frees every skb still queued.
        unsafe { bindings::rust_ext_skb_queue_purge(self.head.get()) };
    }
}

/// Ones'-complement sum of big-endian 16-bit words, folded.
fn fold_sum(words: &[u8], mut sum: u32) -> u16 {
    for w in words.chunks(2) {
        sum += u32::from(u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    // CAST: folded to 16 bits just above.
    sum as u16
}

/// For a coalesced TCP/IP packet at the start of `l3` (EtherType
/// `ethertype`, `len` bytes in all): checks its headers and writes the
/// pseudo-header sum of its TCP segment into the TCP checksum field, as
/// `CHECKSUM_PARTIAL` wants it. Returns the TCP header's offset and the
/// GSO type.
fn pseudo_sum_into_tcp(l3: &mut [u8], ethertype: u16, len: u32) -> Result<(usize, u32)> {
    const ETH_P_IP: u16 = 0x0800;
    const ETH_P_IPV6: u16 = 0x86dd;
    const IPPROTO_TCP: u8 = 6;
    let (l4, addrs, gso_type) = match ethertype {
        ETH_P_IP if l3.len() >= 20 && l3[0] == 0x45 && l3[9] == IPPROTO_TCP => {
            (20u32, 12..20, bindings::SKB_GSO_TCPV4)
        }
        ETH_P_IPV6 if l3.len() >= 40 && l3[0] >> 4 == 6 && l3[6] == IPPROTO_TCP => {
            (40, 8..40, bindings::SKB_GSO_TCPV6)
        }
        _ => return Err(EINVAL),
    };
    let tcp_len = len.checked_sub(l4).ok_or(EINVAL)?;
    if l3.len() < l4 as usize + 20 || tcp_len < 20 {
        return Err(EINVAL);
    }
    let fixed = u32::from(IPPROTO_TCP) + (tcp_len >> 16) + (tcp_len & 0xffff);
    let sum = fold_sum(&l3[addrs], fixed);
    let l4 = l4 as usize;
    l3[l4 + 16..l4 + 18].copy_from_slice(&sum.to_be_bytes());
    // CAST: the bindgen constant is a small positive flag.
    Ok((l4, gso_type as u32))
}
