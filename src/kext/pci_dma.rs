// SPDX-License-Identifier: GPL-2.0

//! DMA addressing set-up of a PCI function.

use kernel::{device::Core, dma, dma::Device as _, pci, prelude::*};

/// Declares that `pdev` can address all 64 bits for streaming and coherent
/// DMA. Call from `probe`, before any DMA allocation for the device.
pub(crate) fn set_dma_mask_64(pdev: &pci::Device<Core<'_>>) -> Result {
    // SAFETY: Called from probe before the driver allocates or maps any DMA
    // memory for this device, and probe is not run concurrently for one
    // device, so nothing races with the mask change.
    unsafe { pdev.dma_set_mask_and_coherent(dma::DmaMask::new::<64>()) }
}
