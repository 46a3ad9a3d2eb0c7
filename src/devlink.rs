// SPDX-License-Identifier: GPL-2.0

//! The devlink instance of a function: `devlink dev info`, read from the
//! card. The port and health reporters are the NIC's (`nic::register`,
//! `nic/health.rs`).

use kernel::{prelude::*, str::CString, sync::Arc};

use crate::hw::{regs, FuncKind, PCI_DEVICE_ID_PF, PCI_DEVICE_ID_VF};
use crate::linux::devlink::{DevlinkOps, InfoRequest, VersionKind};
use crate::regs::Registers;

/// The driver state of a function's devlink instance.
pub(crate) struct FunctionDevlink {
    regs: Arc<Registers>,
    kind: FuncKind,
}

impl FunctionDevlink {
    pub(crate) fn new(regs: Arc<Registers>, kind: FuncKind) -> Self {
        Self { regs, kind }
    }
}

/// `major.minor.patch` of a packed version (bits 23:16, 15:8, 7:0).
fn fw_string(v: u32) -> Result<CString> {
    CString::try_from_fmt(fmt!(
        "{}.{}.{}",
        (v >> 16) & 0xff,
        (v >> 8) & 0xff,
        v & 0xff
    ))
}

#[vtable]
impl DevlinkOps for FunctionDevlink {
    fn info_get(data: &Self, req: &mut InfoRequest<'_>) -> Result {
        let card = data.regs.read(regs::CARD_ID)?;
        let hw = data.regs.read(regs::HW_VERSION)?;
        let fw = data.regs.read(regs::FW_VERSION)?;
        // All ones: the card is gone; report nothing rather than garbage.
        if data.regs.status().is_none() {
            return Err(EIO);
        }
        let device = match data.kind {
            FuncKind::Pf => PCI_DEVICE_ID_PF,
            FuncKind::Vf => PCI_DEVICE_ID_VF,
        };
        req.serial_number(&CString::try_from_fmt(fmt!("{card:08x}"))?)?;
        req.version(
            VersionKind::Fixed,
            c"asic.id",
            &CString::try_from_fmt(fmt!("{device:04x}"))?,
        )?;
        req.version(
            VersionKind::Fixed,
            c"asic.rev",
            &CString::try_from_fmt(fmt!("{}.{}", hw >> 16, hw & 0xffff))?,
        )?;
        req.version(VersionKind::Running, c"fw", &fw_string(fw)?)
    }
}
