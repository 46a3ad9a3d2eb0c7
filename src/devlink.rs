// SPDX-License-Identifier: GPL-2.0

//! The devlink operations of a function (`crate::function::Function` is
//! the instance's private data): `devlink dev info`, read from the card,
//! and `devlink dev reload`, which tears down what the function runs and
//! brings it up again with its settings kept, all under the instance
//! lock the core holds. The reporters (`card`, `rdma`, and the NIC's `tx`
//! and `completion`) are the function's, made at probe: a reload keeps
//! them. The devlink port is made by each bring-up and unregistered by
//! `reload_down` (the core wants none left across `driver_reinit`).

use kernel::{
    device::{Bound, Device},
    pci,
    prelude::*,
    str::CString,
};

use crate::function::{self, Function};
use crate::hw::{regs, FuncKind, FwVersion, HwVersion, PCI_DEVICE_ID_PF, PCI_DEVICE_ID_VF};
use crate::linux::{
    device,
    devlink::{DevlinkOps, EswitchMode, Extack, InfoRequest, Locked, ReloadAction, VersionKind},
    irq::MsixVectors,
};

/// `major.minor.patch`.
fn fw_string(v: FwVersion) -> Result<CString> {
    CString::try_from_fmt(fmt!("{}.{}.{}", v.major(), v.minor(), v.patch()))
}

#[vtable]
impl DevlinkOps for Function {
    /// `driver_reinit` only: the card has no firmware to activate.
    const RELOAD_ACTIONS: &'static [ReloadAction] = &[ReloadAction::DriverReinit];

    /// The RDMA half is unbound (ib_core tells its users the device is
    /// gone), the settings are noted, then the function goes as at
    /// remove: network device, GFT, card reset, debugfs; last its devlink
    /// port. The reporters stay.
    fn reload_down(
        data: &Self,
        _dev: &Device<Bound>,
        _action: ReloadAction,
        locked: &Locked<'_>,
    ) -> Result {
        // The representor first: it holds the NIC. A reload comes back
        // in legacy mode.
        data.leave_switchdev(Some(locked));
        // Taken out first: an RDMA probe from now on finds no NIC.
        if let Some(loaded) = data.take_loaded() {
            if let Some(aux) = data.rdma_device() {
                device::release_driver(&aux);
            }
            drop(loaded);
        }
        // Also after a failed bring-up, which may have left one.
        data.unregister_port(locked)
    }

    /// The function comes up as at probe (self-test included) with the
    /// settings noted, then the RDMA half binds again.
    fn reload_up(
        data: &Self,
        dev: &Device<Bound>,
        _action: ReloadAction,
        locked: &Locked<'_>,
    ) -> Result {
        let pdev = <&pci::Device<Bound>>::try_from(dev)?;
        let vectors = MsixVectors::allocated(pdev, data.vectors());
        let instance = data.instance().ok_or(ENODEV)?;
        let kept = data.kept();
        let loaded = function::bring_up(pdev, &instance, locked, &vectors, kept.as_ref())?;
        dev_info!(
            dev,
            "reloaded: {} is {}\n",
            data.kind().name(),
            loaded.nic().dev().name()
        );
        data.set_loaded(loaded)?;
        if let Some(aux) = data.rdma_device() {
            match device::attach(&aux) {
                Ok(true) => {}
                Ok(false) => dev_warn!(dev, "RDMA half did not bind again\n"),
                Err(e) => dev_warn!(dev, "RDMA half did not bind again: {e:?}\n"),
            }
        }
        Ok(())
    }

    fn eswitch_mode_get(data: &Self, _locked: &Locked<'_>) -> Result<EswitchMode> {
        Ok(data.eswitch_mode())
    }

    fn eswitch_mode_set(
        data: &Self,
        dev: &Device,
        mode: EswitchMode,
        extack: &mut Extack<'_>,
        locked: &Locked<'_>,
    ) -> Result {
        data.set_eswitch_mode(dev, mode, extack, locked)
    }

    fn info_get(data: &Self, req: &mut InfoRequest<'_>) -> Result {
        let card = data.regs().read(regs::CARD_ID)?;
        let hw: HwVersion = data.regs().get()?;
        let fw: FwVersion = data.regs().get()?;
        // All ones: the card is gone; report nothing rather than garbage.
        if data.regs().status().is_none() {
            return Err(EIO);
        }
        let device = match data.kind() {
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
            &CString::try_from_fmt(fmt!("{}.{}", hw.major(), hw.minor()))?,
        )?;
        req.version(VersionKind::Running, c"fw", &fw_string(fw)?)
    }
}
