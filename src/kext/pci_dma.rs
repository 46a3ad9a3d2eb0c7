// SPDX-License-Identifier: GPL-2.0

//! DMA addressing set-up of a PCI function.

use kernel::{device::Core, dma, dma::Device as _, pci, prelude::*};

/// Declares what `pdev` can do for DMA: address all 64 bits (streaming and
/// coherent), and take a mapped segment of any 32-bit length (an RDMA
/// SGE's; ULPs map scatterlists for the RDMA engine through the PF, and
/// without this the DMA layer assumes 64 KiB, which the block layer's
/// merged segments exceed). Call from `probe`, before any DMA allocation
/// for the device.
pub(crate) fn set_dma_limits(pdev: &pci::Device<Core<'_>>) -> Result {
    // SAFETY: Called from probe before the driver allocates or maps any DMA
    // memory for this device, and probe is not run concurrently for one
    // device, so nothing races with the mask change.
    unsafe { pdev.dma_set_mask_and_coherent(dma::DmaMask::new::<64>()) }?;
    // SAFETY: As above: no DMA allocation or mapping for this device can
    // run concurrently with probe.
    unsafe { pdev.dma_set_max_seg_size(u32::MAX) };
    Ok(())
}
