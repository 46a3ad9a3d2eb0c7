// SPDX-License-Identifier: GPL-2.0

//! The RDMA half of the driver: an auxiliary driver that binds the
//! `rsnic.rdma` device a PF creates and registers the card's RoCEv2
//! engine with ib_core, as mana_ib and mlx5_ib bind theirs.
//!
//! The PF hands over an [`RdmaLink`]: its function, as an [`RdmaParent`]
//! (which gives the admin queue and the net device the RDMA device's
//! GIDs and port state follow, whichever that is when it binds), its
//! registers and its event vector. The RDMA half names nothing above
//! it: the function implements these traits. A `devlink dev reload` of
//! the PF unbinds the RDMA half before the NIC goes and binds it to the
//! new one after.

mod cq;
mod device;
mod dm;
mod eq;
mod ids;
mod mr;
mod odp;
mod qp;
mod ring;
mod srq;
mod tables;
mod ucontext;

use kernel::{auxiliary, device::Core, prelude::*, sync::Arc, types::ForLt};

use crate::admin::AdminQueue;
use crate::linux::{net::upper::PortNetDev, rdma::device as ib_device};
use crate::regs::Registers;
use device::{EngineAccess, RdmaDev};

/// The PF's MSI-X vector of RDMA events: the last of the card's, past
/// those of the NIC's queue pairs.
pub(crate) const EVENT_VECTOR: u16 = crate::hw::PF_MSIX_VECTORS - 1;

/// Name of the auxiliary device a PF creates (`rsnic.rdma.<n>`).
pub(crate) const AUX_NAME: &CStr = c"rdma";

/// What the RDMA half asks of the function it serves.
pub(crate) trait RdmaParent: Send + Sync {
    /// The RDMA half is binding to `aux`: the function notes the device
    /// (a reload unbinds and binds it again) and gives what the RDMA
    /// device uses; `ENODEV` while a reload has the function down (it
    /// binds again after).
    fn attach(&self, aux: &kernel::device::Device) -> Result<RdmaPort>;

    /// The RDMA half is bound (`true`, from a successful probe until its
    /// unbind): while it is, a function reset rebinds it, since the
    /// card's RDMA engine lost its state.
    fn set_bound(&self, bound: bool);
}

/// Hears of what the card's RDMA engine did by itself. Any context.
pub(crate) trait RdmaEvents: Send + Sync {
    /// The engine failed QP `qpn` (its user was told).
    fn qp_failed(&self, qpn: u32);
}

/// What the function gives its RDMA device when it binds.
pub(crate) struct RdmaPort {
    /// The function's admin queue.
    pub(crate) admin: Arc<AdminQueue>,
    /// The net device of the RDMA device's one port.
    pub(crate) netdev: PortNetDev,
    /// The function's permanent MAC (the node GUID derives from it).
    pub(crate) mac: [u8; 6],
    /// Hears of QPs the engine failed.
    pub(crate) events: Arc<dyn RdmaEvents>,
}

/// What the PF gives its RDMA device: its function, its registers, and
/// the MSI-X vector of the engine's events.
pub(crate) struct RdmaLink {
    parent: Arc<dyn RdmaParent>,
    regs: Arc<Registers>,
    irq: u32,
    vector: u16,
    udb_bar: Option<u64>,
}

impl RdmaLink {
    /// The link of a PF's function `parent`, with event vector `vector`
    /// (Linux IRQ `irq`) and the user doorbell BAR at physical address
    /// `udb_bar`.
    pub(crate) fn new(
        parent: Arc<dyn RdmaParent>,
        regs: &Arc<Registers>,
        irq: u32,
        vector: u16,
        udb_bar: Option<u64>,
    ) -> Self {
        Self {
            parent,
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
    _bound: Bound,
    _ib: ib_device::Registration<RdmaDev>,
}

/// The function knowing its RDMA half is bound, from creation until drop.
struct Bound(Arc<dyn RdmaParent>);

impl Bound {
    fn new(parent: &Arc<dyn RdmaParent>) -> Self {
        parent.set_bound(true);
        Self(parent.clone())
    }
}

impl Drop for Bound {
    fn drop(&mut self) {
        self.0.set_bound(false);
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
            // None while a reload has the NIC down: bound again after it.
            let port = link.parent.attach(adev.as_ref())?;
            let access = EngineAccess {
                admin: &port.admin,
                regs: &link.regs,
                pci: adev.parent(),
                irq: link.irq,
                vector: link.vector,
                events: port.events.clone(),
                udb_bar: link.udb_bar,
            };
            let init = RdmaDev::new(access).inspect_err(|e| {
                dev_err!(adev, "RDMA engine does not answer: {e:?}\n");
            })?;
            let setup = ib_device::Setup {
                name: c"rsnic_%d",
                node_guid: ib_device::node_guid(&port.mac),
                comp_vectors: 1,
                module: &crate::THIS_MODULE,
            };
            // Under the PCI function, as mlx5 and mana register theirs:
            // `device/` in sysfs is the card's function, whose PTP clock
            // (`device/ptp`) is what completion time stamps count, and
            // whose PCI id the provider matches.
            let ib = ib_device::Registration::new(
                adev.parent(),
                adev.parent(),
                &[&port.netdev],
                setup,
                init,
            )?;
            dev_info!(
                adev,
                "{}: RoCEv2 on {}\n",
                ib.dev().name(),
                port.netdev.name()
            );
            let bound = Bound::new(&link.parent);
            Ok(try_pin_init!(RdmaBinding {
                _bound: bound,
                _ib: ib,
            }? Error))
        })
    }
}
