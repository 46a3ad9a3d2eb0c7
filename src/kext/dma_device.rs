// SPDX-License-Identifier: GPL-2.0

//! DMA allocations after probe (at `ndo_open`, ring resizes).

use kernel::{
    device::{Bound, Device},
    prelude::*,
    sync::aref::ARef,
};

use crate::kext::dma_buf::DmaBuffer;

/// Allocates coherent DMA memory for a device the driver is bound to.
///
/// The upstream allocator wants a `&Device<Bound>`, which only probe
/// holds; the network device calls back later. An allocator lives in the
/// network device's driver state, which unbind drops before the device
/// unbinds, so the device is bound whenever [`DmaAllocator::alloc`] runs.
pub(crate) struct DmaAllocator {
    dev: ARef<Device>,
}

impl DmaAllocator {
    /// An allocator for `dev`; keep it only in state dropped at unbind.
    pub(crate) fn new(dev: &Device<Bound>) -> Self {
        let dev: &Device = dev;
        Self { dev: dev.into() }
    }

    /// Allocates `len` zeroed bytes.
    pub(crate) fn alloc(&self, len: usize) -> Result<DmaBuffer> {
        let dev: *const Device = &*self.dev;
        // SAFETY: `Device<Ctx>` is `repr(transparent)` over the same
        // `struct device` for every context; by the type's contract the
        // driver is bound while an allocator exists.
        let bound = unsafe { &*dev.cast::<Device<Bound>>() };
        DmaBuffer::alloc(bound, len)
    }
}
