// SPDX-License-Identifier: GPL-2.0

//! Streaming DMA mappings of outgoing socket buffers: the card reads the
//! frame where the stack left it, no copy.

use kernel::{dma::DmaAddress, prelude::*};

use crate::linux::bindings;
use crate::linux::{
    dma::DmaDevice,
    net::{skbuff::SkBuff, xdp::XdpFrame},
};

/// Which part of an skb a mapping covers (they unmap differently).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    /// The linear head, or an XDP frame: one mapped range.
    Head,
    /// A page fragment, mapped by the driver.
    Frag,
    /// A fragment of a memory provider's buffer (devmem TX): the address
    /// is the provider's, mapped for this device when the user bound it;
    /// nothing to unmap.
    NetIov,
}

/// One part of an skb, mapped for the device to read. Unmapped on drop;
/// drop it only after the device finished reading (its TX completion) or
/// never saw it, and before the skb it maps is freed.
///
/// # Invariants
///
/// `dev` is the device of the [`DmaDevice`] that made the mapping, bound
/// while the mapping exists (the `DmaDevice` contract), and `addr`/`len`
/// describe a live `DMA_TO_DEVICE` mapping of the kind `part` on it (for
/// [`Part::NetIov`], the provider's, alive while the skb is).
pub(crate) struct TxMapping {
    dev: *mut bindings::device,
    addr: DmaAddress,
    len: u32,
    part: Part,
}

// SAFETY: A mapping is plain data about device state; unmapping is allowed
// from any CPU and any context.
unsafe impl Send for TxMapping {}

/// `ENOMEM` if `addr` is the device's mapping-error address.
fn check_mapping(dma: &DmaDevice, addr: DmaAddress) -> Result {
    // SAFETY: `dma` is a bound device; `addr` came from a mapping call.
    match unsafe { bindings::rust_ext_dma_mapping_error(dma.as_raw(), addr) } {
        0 => Ok(()),
        _ => Err(ENOMEM),
    }
}

impl TxMapping {
    /// Maps the linear part of `skb`; `None` if it is empty.
    pub(crate) fn head(dma: &DmaDevice, skb: &SkBuff) -> Result<Option<Self>> {
        let len = skb.headlen();
        if len == 0 {
            return Ok(None);
        }
        // SAFETY: `dma` is a bound device; `skb` is valid and owned by the
        // caller, so its head stays put until the caller frees it, which
        // happens only after this mapping is dropped (documented above).
        let addr = unsafe {
            bindings::rust_ext_dma_map_single_to_device(
                dma.as_raw(),
                (*skb.as_raw()).data.cast(),
                len,
            )
        };
        check_mapping(dma, addr)?;
        // INVARIANT: mapped just now on `dma`'s device.
        Ok(Some(Self {
            dev: dma.as_raw(),
            addr,
            len,
            part: Part::Head,
        }))
    }

    /// Maps fragment `i` of `skb`. A provider's fragment (a `net_iov` of
    /// a dmabuf bound for TX) comes already mapped: its address is used
    /// as is, and is never read or unmapped by the driver.
    pub(crate) fn frag(dma: &DmaDevice, skb: &SkBuff, i: u32) -> Result<Self> {
        if i >= skb.nr_frags() {
            return Err(EINVAL);
        }
        // SAFETY: Valid skb, `i < nr_frags` was checked.
        if unsafe { bindings::rust_ext_skb_frag_is_net_iov(skb.as_raw(), i) } {
            // SAFETY: As above. The core sends an skb with a devmem
            // fragment only to the device its dmabuf was bound to
            // (`validate_xmit_unreadable_skb`), and that binding mapped
            // the dmabuf for this device's parent (`netmem_tx` makes the
            // core bind for it); `skb_frag_dma_map` gives that mapping's
            // address. The skb holds a reference on the fragment's
            // `net_iov`, which holds the binding, so the mapping outlives
            // this one (dropped before the skb is freed, as documented).
            let (addr, len) = unsafe {
                (
                    bindings::rust_ext_skb_frag_dma_map(dma.as_raw(), skb.as_raw(), i),
                    bindings::rust_ext_skb_frag_size(skb.as_raw(), i),
                )
            };
            // INVARIANT: a live mapping on this device, not the driver's.
            return Ok(Self {
                dev: dma.as_raw(),
                addr,
                len,
                part: Part::NetIov,
            });
        }
        // SAFETY: As in `head`; `i < nr_frags` was checked.
        let (addr, len) = unsafe {
            (
                bindings::rust_ext_skb_frag_dma_map(dma.as_raw(), skb.as_raw(), i),
                bindings::rust_ext_skb_frag_size(skb.as_raw(), i),
            )
        };
        check_mapping(dma, addr)?;
        // INVARIANT: mapped just now on `dma`'s device.
        Ok(Self {
            dev: dma.as_raw(),
            addr,
            len,
            part: Part::Frag,
        })
    }

    /// Maps an XDP frame redirected to this device.
    pub(crate) fn xdp_frame(dma: &DmaDevice, frame: &XdpFrame) -> Result<Self> {
        let len = frame.len();
        // SAFETY: `dma` is a bound device; the caller owns `frame`, whose
        // data stays put until it is returned, which happens only after
        // this mapping is dropped (documented above).
        let addr =
            unsafe { bindings::rust_ext_dma_map_single_to_device(dma.as_raw(), frame.data(), len) };
        check_mapping(dma, addr)?;
        // INVARIANT: mapped just now on `dma`'s device, as a single range.
        Ok(Self {
            dev: dma.as_raw(),
            addr,
            len,
            part: Part::Head,
        })
    }

    /// Bus address for the device.
    pub(crate) fn addr(&self) -> DmaAddress {
        self.addr
    }

    /// Bytes mapped.
    pub(crate) fn len(&self) -> u32 {
        self.len
    }
}

impl Drop for TxMapping {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the mapping is live on a bound
        // device and of kind `part`; it is unmapped exactly once, here.
        unsafe {
            match self.part {
                Part::Head => {
                    bindings::rust_ext_dma_unmap_single_to_device(self.dev, self.addr, self.len)
                }
                Part::Frag => {
                    bindings::rust_ext_dma_unmap_page_to_device(self.dev, self.addr, self.len)
                }
                Part::NetIov => {}
            }
        }
    }
}
