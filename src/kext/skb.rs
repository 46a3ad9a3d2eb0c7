// SPDX-License-Identifier: GPL-2.0

//! Socket buffers (`struct sk_buff`) owned by the driver.

use core::ptr::NonNull;

use kernel::prelude::*;

use crate::ffi;
use crate::kext::napi::Napi;

/// A socket buffer the driver owns: it must send, hand up or free it.
/// Dropping it frees it (counted as a drop by the kernel's tracing).
///
/// # Invariants
///
/// Points at a valid `sk_buff` that nothing else owns.
pub(crate) struct SkBuff(NonNull<ffi::sk_buff>);

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

/// TCP segmentation the stack left to the device (`SKB_GSO_TCPV4/6`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TsoRequest {
    /// Payload bytes per segment.
    pub(crate) mss: u16,
    /// Bytes of headers (through TCP) each segment repeats.
    pub(crate) hdr_len: u16,
    /// Segments the frame becomes.
    pub(crate) segs: u16,
}

impl SkBuff {
    /// Takes ownership of `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` must be NULL or a valid skb that the caller owns and gives up.
    pub(crate) unsafe fn from_raw(ptr: *mut ffi::sk_buff) -> Option<Self> {
        NonNull::new(ptr).map(Self)
    }

    pub(super) fn as_raw(&self) -> *mut ffi::sk_buff {
        self.0.as_ptr()
    }

    /// Total length in bytes.
    pub(crate) fn len(&self) -> u32 {
        // SAFETY: Valid skb by the type invariant.
        unsafe { ffi::rsnic_skb_len(self.as_raw()) }
    }

    /// Makes all data linear (one buffer); fails on allocation failure.
    pub(crate) fn linearize(&mut self) -> Result {
        // SAFETY: Valid, owned skb.
        kernel::error::to_result(unsafe { ffi::rsnic_skb_linearize(self.as_raw()) })
    }

    /// Bytes in the linear part.
    pub(crate) fn headlen(&self) -> u32 {
        // SAFETY: Valid skb.
        unsafe { ffi::rsnic_skb_headlen(self.as_raw()) }
    }

    /// Number of page fragments after the linear part.
    pub(crate) fn nr_frags(&self) -> u32 {
        // SAFETY: Valid skb.
        unsafe { ffi::rsnic_skb_nr_frags(self.as_raw()) }
    }

    /// The TCP segmentation the stack wants the device to do, if any.
    pub(crate) fn tso_request(&self) -> Option<TsoRequest> {
        let (mut mss, mut hdr_len, mut segs) = (0u16, 0u16, 0u16);
        // SAFETY: Valid skb; the out-pointers are valid.
        unsafe { ffi::rsnic_skb_tso(self.as_raw(), &mut mss, &mut hdr_len, &mut segs) }
            .then_some(TsoRequest { mss, hdr_len, segs })
    }

    /// The TX queue the stack picked.
    pub(crate) fn queue_mapping(&self) -> u16 {
        // SAFETY: Valid skb.
        unsafe { ffi::rsnic_skb_get_queue_mapping(self.as_raw()) }
    }

    /// The checksum the stack wants the device to insert, if any.
    pub(crate) fn csum_request(&self) -> Option<CsumRequest> {
        let (mut start, mut offset) = (0u16, 0u16);
        // SAFETY: Valid skb; the out-pointers are valid.
        unsafe { ffi::rsnic_skb_csum_partial(self.as_raw(), &mut start, &mut offset) }
            .then_some(CsumRequest { start, offset })
    }

    /// Hands a received frame to the stack through GRO, on RX queue `queue`.
    pub(crate) fn receive(self, napi: &Napi, queue: u16) {
        let skb = self.into_raw();
        // SAFETY: We own `skb`, filled with an Ethernet frame; `napi` is the
        // context polling right now, bound to the device.
        unsafe {
            ffi::rsnic_skb_set_eth_protocol(skb, napi.dev_raw());
            ffi::rsnic_skb_record_rx_queue(skb, queue);
            ffi::rsnic_napi_gro_receive(napi.as_raw(), skb);
        }
    }

    /// Marks the L4 checksum as verified by the device.
    pub(crate) fn set_csum_unnecessary(&mut self) {
        // SAFETY: Valid, owned skb.
        unsafe { ffi::rsnic_skb_set_csum_unnecessary(self.as_raw()) };
    }

    /// Records the RSS hash the card computed (`l4`: it covers ports).
    pub(crate) fn set_hash(&mut self, hash: u32, l4: bool) {
        // SAFETY: Valid, owned skb.
        unsafe { ffi::rsnic_skb_set_hash(self.as_raw(), hash, l4) };
    }

    /// Transmits the skb on another device (a slave), on the queue the
    /// stack picked for it. Consumes it whatever happens.
    pub(super) fn xmit_on(self, dev: *mut ffi::net_device) {
        // SAFETY: We own the skb and give it up; the caller passes a live,
        // held device (see `TxLower::xmit`), in the TX path (RCU-BH).
        unsafe { ffi::rsnic_skb_xmit_on(self.into_raw(), dev) };
    }

    /// Frees a sent skb (not counted as a drop).
    pub(crate) fn consume(self) {
        // SAFETY: We own the skb; any context.
        unsafe { ffi::rsnic_dev_consume_skb_any(self.into_raw()) };
    }

    fn into_raw(self) -> *mut ffi::sk_buff {
        let ptr = self.as_raw();
        core::mem::forget(self);
        ptr
    }
}

impl Drop for SkBuff {
    fn drop(&mut self) {
        // SAFETY: We own the skb; any context.
        unsafe { ffi::rsnic_dev_kfree_skb_any(self.as_raw()) };
    }
}
