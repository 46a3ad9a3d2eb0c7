// SPDX-License-Identifier: GPL-2.0

//! What a bound function runs: the self-test, the network device (with
//! its devlink port and health reporters), the GFT and the debugfs files.
//! Built at probe and again by the second half of `devlink dev reload`;
//! torn down at remove and by a reload's first half (`devlink.rs`).

use kernel::{device::Bound, pci, prelude::*, sync::Arc};

use crate::debugfs::{FunctionFiles, GftFiles};
use crate::devlink::FunctionDevlink;
use crate::hw::{regs, FuncKind};
use crate::linux::{
    devlink::Registration as DevlinkRegistration,
    dma::DmaBuffer,
    irq::{IrqHandlerRegistration, MsixVectors},
};
use crate::nic::{self, KeptConfig, NicRegistration};
use crate::regs::{Registers, ResetOnDrop};
use crate::selftest::{self, SelfTestError, VectorIrq};

/// A running function.
///
/// Field order is drop order: `gft/` goes before the NIC (so no write
/// reaches a GFT going away), the NIC stops its queues through the admin
/// queue, then the card is reset, then the function's debugfs directory.
pub(crate) struct Loaded {
    /// PF: `gft/`.
    _gft_files: Option<Pin<KBox<GftFiles>>>,
    nic: NicRegistration,
    /// Quiesces the card once the NIC is gone (it may already be gone
    /// itself, which is fine).
    _reset: ResetOnDrop,
    /// The function's debugfs directory (`gft/` is inside it).
    _files: Pin<KBox<FunctionFiles>>,
}

impl Loaded {
    /// The function's network device.
    pub(crate) fn nic(&self) -> &NicRegistration {
        &self.nic
    }
}

/// Logs why the card is refused; the caller then fails with `EIO`.
pub(crate) fn refuse(pdev: &pci::Device<Bound>, e: SelfTestError) -> Error {
    dev_err!(pdev, "self-test failed: {e}\n");
    EIO
}

/// Puts a self-test [`VectorIrq`] handler on every vector.
fn request_selftest_irqs(
    vectors: &MsixVectors<'_>,
) -> Result<KVec<Pin<KBox<IrqHandlerRegistration<VectorIrq>>>>> {
    let mut irqs = KVec::with_capacity(vectors.count() as usize, GFP_KERNEL)?;
    for index in 0..vectors.count() {
        let registration =
            IrqHandlerRegistration::new(vectors.irq(index)?, c"rsnic", VectorIrq::new());
        irqs.push(KBox::pin_init(registration, GFP_KERNEL)?, GFP_KERNEL)?;
    }
    Ok(irqs)
}

/// Self-tests the card and builds the function of `kind` on it: its
/// network device (configured as `kept` says, after a reload), `gft/`
/// and debugfs files.
pub(crate) fn bring_up(
    pdev: &pci::Device<Bound>,
    regs: &Arc<Registers>,
    vectors: &MsixVectors<'_>,
    kind: FuncKind,
    devlink: &Arc<DevlinkRegistration<FunctionDevlink>>,
    kept: Option<&KeptConfig>,
) -> Result<Loaded> {
    let report = {
        // The self-test's handlers and buffer go before the NIC takes
        // the vectors.
        let irqs = request_selftest_irqs(vectors)?;
        let buf = DmaBuffer::alloc(pdev.as_ref(), selftest::DMA_BUFFER_LEN)?;
        selftest::run(regs, &irqs, &buf).map_err(|e| refuse(pdev, e))?
    };
    if report.kind != kind {
        dev_err!(
            pdev,
            "card says it is a {}, its PCI ID says {}\n",
            report.kind.name(),
            kind.name()
        );
        return Err(EIO);
    }
    let mac = regs.mac()?;
    dev_info!(
        pdev,
        "{} self-test passed ({} MSI-X vectors, {} DMA cases); card {}, MAC {:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}\n",
        kind.name(),
        report.vectors,
        report.dma_cases,
        regs.read(regs::CARD_ID)?,
        mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]
    );
    // Dropped after the NIC if a later step fails, as in `Loaded`.
    let reset = ResetOnDrop(regs.clone());
    // Both kinds get a network device; a VF's joins its PF's.
    let nic = nic::register(pdev.as_ref(), regs, vectors, kind, devlink, kept)?;
    let bond = (kind == FuncKind::Pf).then(|| nic.dev().data().bond().shared_state());
    let files = KBox::pin_init(
        FunctionFiles::new(pdev.as_ref().name(), regs.clone(), report, bond)?,
        GFP_KERNEL,
    )?;
    let gft_files = nic
        .dev()
        .data()
        .gft()
        .cloned()
        .map(|g| GftFiles::new(&files, &g))
        .transpose()?;
    Ok(Loaded {
        _gft_files: gft_files,
        nic,
        _reset: reset,
        _files: files,
    })
}
