// SPDX-License-Identifier: GPL-2.0

//! The RDMA half of the driver: an auxiliary driver that binds the
//! `rsnic.rdma` device a PF creates and registers the card's RoCEv2
//! engine with ib_core, as mana_ib and mlx5_ib bind theirs.
//!
//! The PF hands over an [`RdmaLink`] (its function, whose synthetic NIC
//! and admin queue the RDMA device uses); the RDMA device's GIDs and port
//! state follow that net device. A `devlink dev reload` of the PF unbinds
//! the RDMA half before the NIC goes and binds it to the new one after.

mod cq;
mod device;
mod eq;
mod ids;
mod mr;
mod qp;
mod ring;
mod srq;
mod tables;
mod ucontext;

use kernel::{auxiliary, device::Core, prelude::*, sync::Arc, types::ForLt};

use crate::devlink::FunctionDevlink;
use crate::linux::{
    devlink::Registration as DevlinkRegistration,
    net::{netdev::NetDev, upper::NetDevHold},
    rdma::device as ib_device,
};
use crate::nic::Nic;
use crate::regs::Registers;
use device::{EngineAccess, RdmaDev};

/// The PF's MSI-X vector of RDMA events: the last of the card's 16, past
/// those of the NIC's queue pairs.
pub(crate) const EVENT_VECTOR: u16 = crate::hw::PF_MSIX_VECTORS - 1;

/// Name of the auxiliary device a PF creates (`rsnic.rdma.<n>`).
pub(crate) const AUX_NAME: &CStr = c"rdma";

/// What the PF gives its RDMA device: its function (whose NIC the RDMA
/// device uses, whichever that is when it binds), its registers, and the
/// MSI-X vector of the engine's events.
pub(crate) struct RdmaLink {
    function: Arc<DevlinkRegistration<FunctionDevlink>>,
    regs: Arc<Registers>,
    irq: u32,
    vector: u16,
    udb_bar: Option<u64>,
}

impl RdmaLink {
    /// The link of a PF's function, with event vector `vector` (Linux IRQ
    /// `irq`) and the user doorbell BAR at physical address `udb_bar`.
    pub(crate) fn new(
        function: Arc<DevlinkRegistration<FunctionDevlink>>,
        regs: &Arc<Registers>,
        irq: u32,
        vector: u16,
        udb_bar: Option<u64>,
    ) -> Self {
        Self {
            function,
            regs: regs.clone(),
            irq,
            vector,
            udb_bar,
        }
    }
}

/// The registration data type of the auxiliary device.
pub(crate) type RdmaLinkData = ForLt!(RdmaLink);

/// The auxiliary driver of the RDMA half.
pub(crate) struct RdmaDriver;

kernel::auxiliary_device_table!(
    AUX_TABLE,
    MODULE_AUX_TABLE,
    <RdmaDriver as auxiliary::Driver>::IdInfo,
    [(auxiliary::DeviceId::new(crate::MODULE_NAME, AUX_NAME), ())]
);

/// A bound RDMA device: unregistered from ib_core on unbind.
#[pin_data]
pub(crate) struct RdmaBinding {
    _bound: BoundToNic,
    _ib: ib_device::Registration<RdmaDev>,
}

/// The PF's NIC knowing its RDMA half is bound, from creation until drop
/// (so a function reset rebinds it while bound, and no longer after).
struct BoundToNic(NetDevHold<Nic>);

impl BoundToNic {
    fn new(nic: &NetDev<Nic>, rdma: &kernel::device::Device) -> Self {
        nic.data().set_rdma_device(Some(rdma.into()));
        Self(NetDevHold::new(nic))
    }
}

impl Drop for BoundToNic {
    fn drop(&mut self) {
        self.0.get().data().set_rdma_device(None);
    }
}

impl auxiliary::Driver for RdmaDriver {
    type IdInfo = ();
    type Data<'bound> = RdmaBinding;
    const ID_TABLE: auxiliary::IdTable<Self::IdInfo> = &AUX_TABLE;

    fn probe<'bound>(
        adev: &'bound auxiliary::Device<Core<'_>>,
        _info: &'bound Self::IdInfo,
    ) -> impl PinInit<Self::Data<'bound>, Error> + 'bound {
        pin_init::pin_init_scope(move || {
            let link = adev.registration_data::<RdmaLinkData>()?;
            let function = link.function.data();
            function.rdma_bound(adev.as_ref());
            // None while a reload has the NIC down: bound again after it.
            let nic = function.current_nic().ok_or(ENODEV)?;
            let netdev = nic.get();
            let admin = netdev.data().admin().clone();
            let access = EngineAccess {
                admin: &admin,
                regs: &link.regs,
                pci: adev.parent(),
                irq: link.irq,
                vector: link.vector,
                nic: netdev,
                udb_bar: link.udb_bar,
            };
            let init = RdmaDev::new(access).inspect_err(|e| {
                dev_err!(adev, "RDMA engine does not answer: {e:?}\n");
            })?;
            let setup = ib_device::Setup {
                name: c"rsnic_%d",
                node_guid: ib_device::node_guid(netdev.data().perm_mac()),
                comp_vectors: 1,
                module: &crate::THIS_MODULE,
            };
            let ib =
                ib_device::Registration::new(adev.as_ref(), adev.parent(), &[netdev], setup, init)?;
            dev_info!(adev, "{}: RoCEv2 on {}\n", ib.dev().name(), netdev.name());
            let bound = BoundToNic::new(netdev, adev.as_ref());
            Ok(try_pin_init!(RdmaBinding {
                _bound: bound,
                _ib: ib,
            }? Error))
        })
    }
}
