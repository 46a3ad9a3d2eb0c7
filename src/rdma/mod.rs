// SPDX-License-Identifier: GPL-2.0

//! The RDMA half of the driver: an auxiliary driver that binds the
//! `rsnic.rdma` device a PF creates and registers the card's RoCEv2
//! engine with ib_core, as mana_ib and mlx5_ib bind theirs.
//!
//! The PF hands over an [`RdmaLink`] (its admin queue and its synthetic
//! net device); the RDMA device's GIDs and port state follow that net
//! device.

mod device;

use kernel::{auxiliary, device::Core, prelude::*, sync::Arc, types::ForLt};

use crate::admin::AdminQueue;
use crate::kext::{ib_device, lower::LowerRef};
use crate::nic::Nic;
use device::RdmaDev;

/// Name of the auxiliary device a PF creates (`rsnic.rdma.<n>`).
pub(crate) const AUX_NAME: &CStr = c"rdma";

/// What the PF gives its RDMA device.
pub(crate) struct RdmaLink {
    admin: Arc<AdminQueue>,
    netdev: LowerRef<Nic>,
}

impl RdmaLink {
    /// The link of a PF's synthetic NIC.
    pub(crate) fn new(nic: &crate::kext::netdev::NetDev<Nic>) -> Self {
        Self {
            admin: nic.data().admin().clone(),
            netdev: LowerRef::new(nic),
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
    _ib: ib_device::Registration<RdmaDev>,
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
            let netdev = link.netdev.get();
            let init = RdmaDev::new(&link.admin).inspect_err(|e| {
                dev_err!(adev, "RDMA engine does not answer: {e:?}\n");
            })?;
            let setup = ib_device::Setup {
                name: c"rsnic_%d",
                node_guid: ib_device::node_guid(netdev.data().perm_mac()),
                comp_vectors: 1,
            };
            let ib =
                ib_device::Registration::new(adev.as_ref(), adev.parent(), netdev, setup, init)?;
            dev_info!(adev, "{}: RoCEv2 on {}\n", ib.dev().name(), netdev.name());
            Ok(try_pin_init!(RdmaBinding { _ib: ib }? Error))
        })
    }
}
