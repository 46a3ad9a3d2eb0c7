// SPDX-License-Identifier: GPL-2.0

//! The PCI driver: binds the card's PF and VF, maps BAR0, allocates
//! MSI-X, creates the function's devlink instance, brings the function up
//! (`crate::function`) and, on a PF, creates the RDMA auxiliary device.

use kernel::{auxiliary, device::Core, pci, prelude::*, sync::Arc};

use crate::function::{self, Function, FunctionInstance};
use crate::hw::{self, regs, FuncKind};
use crate::linux::{
    devlink::{DevlinkVTable, Registration as DevlinkRegistration},
    dma,
    irq::MsixVectors,
};
use crate::rdma::{self, RdmaLink, RdmaLinkData};
use crate::regs::Registers;
use crate::selftest;

/// The devlink operations of every function.
static DEVLINK_VTABLE: DevlinkVTable<Function> = DevlinkVTable::new();

/// Most MSI-X vectors the driver uses on one function, whatever the card claims.
const MAX_VECTORS: u32 = 64;

/// The driver's state for one bound function: its devlink instance, whose
/// private area holds what the function runs (`function::Loaded`, which
/// `devlink dev reload` rebuilds), and a PF's RDMA auxiliary device.
///
/// On drop the RDMA device goes first (it uses the network device), then
/// what the function runs, then the devlink instance (once its ports and
/// health reporters, the NIC's, are gone). The MSI-X vectors are freed by
/// devres after all of this.
///
/// Field order is drop order.
#[pin_data]
pub(crate) struct RsnicFunction<'bound> {
    /// PF: the auxiliary device the RDMA driver binds.
    _rdma: Option<auxiliary::Registration<'bound, RdmaLinkData>>,
    _instance: FunctionInstance,
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

/// Creates a PF's RDMA auxiliary device, `rsnic.rdma.<card id>`.
fn register_rdma<'a>(
    pdev: &'a pci::Device<Core<'_>>,
    regs: &Arc<Registers>,
    vectors: &MsixVectors<'_>,
    devlink: &Arc<DevlinkRegistration<Function>>,
) -> Result<auxiliary::Registration<'a, RdmaLinkData>> {
    auxiliary::Registration::new(
        pdev.as_ref(),
        rdma::AUX_NAME,
        regs.read(regs::CARD_ID)?,
        crate::MODULE_NAME,
        RdmaLink::new(
            devlink.clone(),
            regs,
            vectors.irq(rdma::EVENT_VECTOR.into())?,
            rdma::EVENT_VECTOR,
            user_doorbells(pdev),
        ),
    )
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

            selftest::identify(&regs).map_err(|e| function::refuse(pdev, e))?;
            let vectors = alloc_vectors(pdev, &regs)?;
            let devlink = DevlinkRegistration::new(
                pdev.as_ref(),
                &DEVLINK_VTABLE,
                Function::new(regs.clone(), *kind, vectors.count())?,
            )?;
            // From here an error drops it, which undoes what follows.
            let instance = FunctionInstance::new(devlink)?;
            let devlink = instance.get();
            {
                // Under the instance lock, as a reload's second half runs.
                let locked = devlink.lock();
                let loaded = function::bring_up(pdev, devlink, &locked, &vectors, None)?;
                devlink.data().set_loaded(loaded)?;
            }
            let rdma = match *kind {
                FuncKind::Pf => Some(register_rdma(pdev, &regs, &vectors, devlink)?),
                FuncKind::Vf => None,
            };
            Ok(try_pin_init!(RsnicFunction {
                _rdma: rdma,
                _instance: instance,
            }))
        })
    }
}

/// The physical address of the PF's user doorbell BAR, if it has one of
/// the size the interface gives it (an older card does not: its RDMA
/// device then serves kernel consumers only).
fn user_doorbells(pdev: &pci::Device<Core<'_>>) -> Option<u64> {
    let bar = crate::hw::rdma::udb::BAR;
    let len = pdev.resource_len(bar).ok()?;
    (len >= crate::hw::rdma::udb::BAR_SIZE as u64)
        .then(|| pdev.resource_start(bar).ok())
        .flatten()
}
