// SPDX-License-Identifier: GPL-2.0

//! The RDMA device's driver state and the ib_core callbacks on it: the
//! engine's limits and its GID table.

use kernel::{prelude::*, sync::Arc};

use crate::admin::AdminQueue;
use crate::hw::rdma::{Gid, RdmaCaps, GID_TABLE_LEN, HW_VERSION, VENDOR_PART_ID};
use crate::hw::{AdminCmd, PCI_VENDOR_ID};
use crate::kext::ib_device::{DeviceAttr, GidEntry, IbDevice, IbDeviceOps, PortAttr};

/// Largest RoCE MTU the engine segments to.
const MAX_MTU: u32 = 4096;

/// The driver state of one RDMA device.
#[pin_data]
pub(crate) struct RdmaDev {
    admin: Arc<AdminQueue>,
    caps: RdmaCaps,
}

impl RdmaDev {
    /// Reads the engine's limits; fails if it does not answer.
    pub(crate) fn new(admin: &Arc<AdminQueue>) -> Result<impl PinInit<Self, Error>> {
        let entry = admin.exec(AdminCmd::RdmaQueryCaps)?;
        let admin = admin.clone();
        Ok(try_pin_init!(Self {
            admin,
            caps: sane_caps(RdmaCaps::read_result(&entry)),
        }? Error))
    }
}

/// The card's limits bounded by what the driver supports: a card that
/// claims more is believed only that far.
fn sane_caps(c: RdmaCaps) -> RdmaCaps {
    RdmaCaps {
        gid_table_len: c.gid_table_len.min(GID_TABLE_LEN),
        ..c
    }
}

impl IbDeviceOps for RdmaDev {
    fn query_device(dev: &IbDevice<Self>) -> DeviceAttr {
        let c = &dev.data().caps;
        DeviceAttr {
            fw_ver: 0,
            vendor_id: PCI_VENDOR_ID.into(),
            vendor_part_id: VENDOR_PART_ID,
            hw_ver: HW_VERSION,
            max_mr_size: c.max_mr_size,
            page_size_cap: c.page_size_cap,
            max_qp: c.max_qp,
            max_qp_wr: c.max_qp_wr,
            max_sge: c.max_sge,
            max_cq: c.max_cq,
            max_cqe: c.max_cqe,
            max_mr: c.max_mr,
            max_pd: c.max_pd,
            max_ah: 0,
            max_qp_rd_atom: c.max_qp_rd_atom,
            max_fast_reg_page_list_len: 0,
        }
    }

    fn query_port(dev: &IbDevice<Self>) -> PortAttr {
        PortAttr {
            gid_tbl_len: dev.data().caps.gid_table_len,
            max_mtu: MAX_MTU,
        }
    }

    fn add_gid(dev: &IbDevice<Self>, entry: GidEntry) -> Result {
        let index = entry.index;
        if index >= dev.data().caps.gid_table_len {
            return Err(EINVAL);
        }
        let gid = Gid(entry.gid);
        dev.data().admin.exec(AdminCmd::RdmaSetGid { index, gid })?;
        Ok(())
    }

    fn del_gid(dev: &IbDevice<Self>, index: u32) -> Result {
        if index >= dev.data().caps.gid_table_len {
            return Err(EINVAL);
        }
        dev.data().admin.exec(AdminCmd::RdmaDelGid { index })?;
        Ok(())
    }
}
