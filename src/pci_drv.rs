// SPDX-License-Identifier: GPL-2.0

//! The PCI driver: binds the card's PF and VF, maps BAR0, wires MSI-X,
//! runs the self-test and publishes the function in debugfs.

use kernel::{auxiliary, device::Core, pci, prelude::*, sync::Arc};

use crate::debugfs::{FunctionFiles, GftFiles};
use crate::devlink::FunctionDevlink;
use crate::hw::{self, regs, FuncKind};
use crate::linux::{
    devlink::{DevlinkVTable, Registration as DevlinkRegistration},
    dma::{self, DmaBuffer},
    irq::{IrqHandlerRegistration, MsixVectors},
};
use crate::nic::{self, NicRegistration};
use crate::rdma::{self, RdmaLink, RdmaLinkData};
use crate::regs::{Registers, ResetOnDrop};
use crate::selftest::{self, SelfTestError, VectorIrq};

/// The devlink operations of every function.
static DEVLINK_VTABLE: DevlinkVTable<FunctionDevlink> = DevlinkVTable::new();

/// Most MSI-X vectors the driver uses on one function, whatever the card claims.
const MAX_VECTORS: u32 = 64;

/// The driver's state for one bound function.
///
/// On drop the RDMA device goes first (it uses the network device), then
/// the network device (it stops its queues through the admin queue), then
/// the card is reset, then the debugfs files. The MSI-X
/// vectors are freed by devres after all of this.
///
/// Field order is drop order.
#[pin_data]
pub(crate) struct RsnicFunction<'bound> {
    /// PF: the auxiliary device the RDMA driver binds.
    rdma: Option<auxiliary::Registration<'bound, RdmaLinkData>>,
    /// PF: `gft/`. Removed before the NIC, so no write reaches a GFT
    /// going away.
    gft_files: Option<Pin<KBox<GftFiles>>>,
    nic: Option<NicRegistration>,
    /// Quiesces the card once the NIC is gone (it may already be gone
    /// itself, which is fine).
    _reset: ResetOnDrop,
    /// The function's debugfs directory (after `gft/`, inside it).
    files: Pin<KBox<FunctionFiles>>,
    /// The function's devlink instance; its port and health reporters
    /// (the NIC's) keep it registered until they are gone.
    _devlink: Arc<DevlinkRegistration<FunctionDevlink>>,
}

/// The PCI driver of rsnic functions.
pub(crate) struct RsnicDriver;

kernel::pci_device_table!(
    PCI_TABLE,
    MODULE_PCI_TABLE,
    <RsnicDriver as pci::Driver>::IdInfo,
    // `hw::PCI_VENDOR_ID` is Xilinx; upstream's `pci::Vendor` only has named vendors.
    [
        (
            pci::DeviceId::from_id(pci::Vendor::XILINX, hw::PCI_DEVICE_ID_PF as u32),
            FuncKind::Pf
        ),
        (
            pci::DeviceId::from_id(pci::Vendor::XILINX, hw::PCI_DEVICE_ID_VF as u32),
            FuncKind::Vf
        ),
    ]
);

/// Logs why the card is refused; probe then fails with `EIO`.
fn refuse(pdev: &pci::Device<Core<'_>>, e: SelfTestError) -> Error {
    dev_err!(pdev, "self-test failed: {e}\n");
    EIO
}

/// Allocates the MSI-X vectors the card reports, if that is a sane number.
fn alloc_vectors<'a>(pdev: &'a pci::Device<Core<'_>>, regs: &Registers) -> Result<MsixVectors<'a>> {
    let claimed = regs.read(regs::NUM_VECTORS)?;
    if claimed == 0 || claimed > MAX_VECTORS {
        dev_err!(
            pdev,
            "card reports {claimed} MSI-X vectors (1..={MAX_VECTORS} supported)\n"
        );
        return Err(EIO);
    }
    MsixVectors::alloc(pdev, claimed)
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

impl pci::Driver for RsnicDriver {
    type IdInfo = FuncKind;
    type Data<'bound> = RsnicFunction<'bound>;
    const ID_TABLE: pci::IdTable<Self::IdInfo> = &PCI_TABLE;

    fn probe<'bound>(
        pdev: &'bound pci::Device<Core<'_>>,
        kind: &'bound FuncKind,
    ) -> impl PinInit<Self::Data<'bound>, Error> + 'bound {
        pin_init::pin_init_scope(move || {
            pdev.enable_device_mem()?;
            pdev.set_master();
            dma::set_dma_limits(pdev)?;

            let bar = pdev.iomap_region_sized::<{ hw::BAR0_SIZE }>(0, c"rsnic/bar0")?;
            let regs = Arc::new(Registers::new(bar.into_devres()?), GFP_KERNEL)?;

            selftest::identify(&regs).map_err(|e| refuse(pdev, e))?;
            let vectors = alloc_vectors(pdev, &regs)?;
            let report = {
                // The self-test's handlers and buffer go before the NIC
                // takes the vectors.
                let irqs = request_selftest_irqs(&vectors)?;
                let buf = DmaBuffer::alloc(pdev.as_ref(), selftest::DMA_BUFFER_LEN)?;
                selftest::run(&regs, &irqs, &buf).map_err(|e| refuse(pdev, e))?
            };
            if report.kind != *kind {
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

            let devlink = DevlinkRegistration::new(
                pdev.as_ref(),
                &DEVLINK_VTABLE,
                FunctionDevlink::new(regs.clone(), *kind),
            )?;
            // Both kinds get a network device; a VF's joins its PF's.
            let nic = Some(nic::register(
                pdev.as_ref(),
                &regs,
                &vectors,
                *kind,
                &devlink,
            )?);
            let bond = nic
                .as_ref()
                .filter(|_| *kind == FuncKind::Pf)
                .map(|n| n.dev().data().bond().shared_state());
            let files = KBox::pin_init(
                FunctionFiles::new(pdev.as_ref().name(), regs.clone(), report, bond)?,
                GFP_KERNEL,
            )?;
            let gft_files = nic
                .as_ref()
                .and_then(|n| n.dev().data().gft().cloned())
                .map(|g| GftFiles::new(&files, &g))
                .transpose()?;
            let rdma = match (*kind, &nic) {
                (FuncKind::Pf, Some(n)) => Some(auxiliary::Registration::new(
                    pdev.as_ref(),
                    rdma::AUX_NAME,
                    regs.read(regs::CARD_ID)?,
                    crate::MODULE_NAME,
                    RdmaLink::new(
                        n.dev(),
                        &regs,
                        vectors.irq(rdma::EVENT_VECTOR.into())?,
                        rdma::EVENT_VECTOR,
                    ),
                )?),
                _ => None,
            };
            Ok(try_pin_init!(RsnicFunction {
                rdma,
                gft_files,
                nic,
                _reset: ResetOnDrop(regs),
                files,
                _devlink: devlink,
            }))
        })
    }
}
