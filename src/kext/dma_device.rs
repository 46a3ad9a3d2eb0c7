// SPDX-License-Identifier: GPL-2.0

//! The DMA side of a device after probe: coherent allocations (at
//! `ndo_open`, ring resizes) and streaming mappings (every TX frame, the
//! RX page pools).

use kernel::{
    device::{Bound, Device},
    prelude::*,
    sync::aref::ARef,
};

use crate::ffi;
use crate::kext::dma_buf::DmaBuffer;

/// DMA access to a device the driver is bound to.
///
/// The upstream allocator wants a `&Device<Bound>`, which only probe
/// holds; the network device calls back later. A `DmaDevice` (and every
/// mapping or pool made through it) lives in the network device's driver
/// state, which unbind drops before the device unbinds, so the device is
/// bound whenever it is used.
#[derive(Clone)]
pub(crate) struct DmaDevice {
    dev: ARef<Device>,
}

impl DmaDevice {
    /// DMA access for `dev`; keep it only in state dropped at unbind.
    pub(crate) fn new(dev: &Device<Bound>) -> Self {
        let dev: &Device = dev;
        Self { dev: dev.into() }
    }

    /// Allocates `len` zeroed bytes of coherent memory.
    pub(crate) fn alloc(&self, len: usize) -> Result<DmaBuffer> {
        let dev: *const Device = &*self.dev;
        // SAFETY: `Device<Ctx>` is `repr(transparent)` over the same
        // `struct device` for every context; by the type's contract the
        // driver is bound while a `DmaDevice` exists.
        let bound = unsafe { &*dev.cast::<Device<Bound>>() };
        DmaBuffer::alloc(bound, len)
    }

    /// The `struct device`, for the mapping and page-pool wrappers.
    ///
    /// `Device` is `repr(transparent)` over `struct device`, so the cast
    /// pointer is the device's `struct device`.
    pub(super) fn as_raw(&self) -> *mut ffi::device {
        let dev: *const Device = &*self.dev;
        dev.cast_mut().cast()
    }
}
