// SPDX-License-Identifier: GPL-2.0

//! The devlink instance of a function: `devlink dev info`, read from the
//! card, and `devlink dev reload`, which tears down what the function runs
//! (`function.rs`) and brings it up again with its settings kept. The port
//! and health reporters are the NIC's (`nic::register`, `nic/health.rs`).

use kernel::{
    device::{Bound, Device},
    new_mutex, pci,
    prelude::*,
    str::CString,
    sync::{aref::ARef, Arc, Mutex},
};

use crate::function::{self, Loaded};
use crate::hw::{regs, FuncKind, PCI_DEVICE_ID_PF, PCI_DEVICE_ID_VF};
use crate::linux::{
    device,
    devlink::{DevlinkOps, InfoRequest, Registration, VersionKind},
    irq::MsixVectors,
    net::upper::NetDevHold,
};
use crate::nic::{KeptConfig, Nic};
use crate::regs::Registers;

/// The driver state of a function's devlink instance: what the function
/// runs, which a reload replaces.
#[pin_data]
pub(crate) struct FunctionDevlink {
    regs: Arc<Registers>,
    kind: FuncKind,
    /// MSI-X vectors allocated at probe; they stay until unbind.
    vectors: u32,
    /// What the function runs; `None` between a reload's halves, after a
    /// failed bring-up, and once the function is removed.
    #[pin]
    loaded: Mutex<Option<KBox<Loaded>>>,
    /// The settings a reload carries from the old NIC to the new one.
    #[pin]
    kept: Mutex<Option<KeptConfig>>,
    /// The instance itself, for the port and reporters a reload creates.
    /// Cleared by [`FunctionDevlink::unload`]: it keeps the instance alive.
    #[pin]
    instance: Mutex<Option<Arc<Registration<FunctionDevlink>>>>,
    /// PF: the RDMA half's auxiliary device, once its driver bound. A
    /// reload unbinds it before the NIC goes and binds it again after.
    #[pin]
    rdma_aux: Mutex<Option<ARef<Device>>>,
}

impl FunctionDevlink {
    /// The state of a function of `kind` with `vectors` MSI-X vectors,
    /// running nothing yet.
    pub(crate) fn new(regs: Arc<Registers>, kind: FuncKind, vectors: u32) -> impl PinInit<Self> {
        pin_init!(Self {
            regs,
            kind,
            vectors,
            loaded <- new_mutex!(None),
            kept <- new_mutex!(None),
            instance <- new_mutex!(None),
            rdma_aux <- new_mutex!(None),
        })
    }

    /// Probe: what the function runs.
    pub(crate) fn set_loaded(&self, loaded: Loaded) -> Result {
        *self.loaded.lock() = Some(KBox::new(loaded, GFP_KERNEL)?);
        Ok(())
    }

    /// Remove (or a failed probe): tears down what the function runs and
    /// lets the instance go.
    ///
    /// Each is taken out under its lock and dropped after it: dropping the
    /// NIC waits for its work items, and the recovery item's reprobe of
    /// the RDMA half takes `loaded` (through `current_nic`), so dropping
    /// it under `loaded` could deadlock with a recovery in flight
    /// (lockdep caught it in `fault_removal.sh`'s rmmod with a gone card).
    fn unload(&self) {
        let loaded = self.loaded.lock().take();
        drop(loaded);
        let rdma_aux = self.rdma_aux.lock().take();
        drop(rdma_aux);
        let instance = self.instance.lock().take();
        drop(instance);
    }

    /// The NIC the function runs now, held.
    pub(crate) fn current_nic(&self) -> Option<NetDevHold<Nic>> {
        self.loaded
            .lock()
            .as_ref()
            .map(|l| NetDevHold::new(l.nic().dev()))
    }

    /// The RDMA half's auxiliary device bound (called from its probe).
    pub(crate) fn rdma_bound(&self, aux: &Device) {
        *self.rdma_aux.lock() = Some(aux.into());
    }
}

/// A function's devlink instance as its PCI driver holds it: dropping it
/// tears down what the function runs (see [`FunctionDevlink::unload`])
/// and lets the instance go once its ports and reporters are gone.
pub(crate) struct FunctionInstance(Arc<Registration<FunctionDevlink>>);

impl FunctionInstance {
    /// Takes `instance`, whose state refers back to it until dropped.
    pub(crate) fn new(instance: Arc<Registration<FunctionDevlink>>) -> Self {
        *instance.data().instance.lock() = Some(instance.clone());
        Self(instance)
    }

    /// The instance.
    pub(crate) fn get(&self) -> &Arc<Registration<FunctionDevlink>> {
        &self.0
    }
}

impl Drop for FunctionInstance {
    fn drop(&mut self) {
        self.0.data().unload();
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
    /// The RDMA half is unbound (ib_core tells its users the device is
    /// gone), the settings are noted, then the function goes as at
    /// remove: network device, GFT, card reset, debugfs.
    fn reload_down(data: &Self, _dev: &Device<Bound>) -> Result {
        // Taken out first: an RDMA probe from now on finds no NIC.
        let Some(loaded) = data.loaded.lock().take() else {
            // A previous bring-up failed; nothing runs.
            return Ok(());
        };
        let nic = loaded.nic().dev();
        *data.kept.lock() = Some(nic.data().kept_config(nic));
        let aux = data.rdma_aux.lock().clone();
        if let Some(aux) = aux {
            device::release_driver(&aux);
        }
        drop(loaded);
        Ok(())
    }

    /// The function comes up as at probe (self-test included) with the
    /// settings noted, then the RDMA half binds again.
    fn reload_up(data: &Self, dev: &Device<Bound>) -> Result {
        let pdev = <&pci::Device<Bound>>::try_from(dev)?;
        let vectors = MsixVectors::allocated(pdev, data.vectors);
        let instance = data.instance.lock().clone().ok_or(ENODEV)?;
        let kept = data.kept.lock().clone();
        let loaded = function::bring_up(
            pdev,
            &data.regs,
            &vectors,
            data.kind,
            &instance,
            kept.as_ref(),
        )?;
        dev_info!(
            dev,
            "reloaded: {} is {}\n",
            data.kind.name(),
            loaded.nic().dev().name()
        );
        *data.loaded.lock() = Some(KBox::new(loaded, GFP_KERNEL)?);
        let aux = data.rdma_aux.lock().clone();
        if let Some(aux) = aux {
            match device::attach(&aux) {
                Ok(true) => {}
                Ok(false) => dev_warn!(dev, "RDMA half did not bind again\n"),
                Err(e) => dev_warn!(dev, "RDMA half did not bind again: {e:?}\n"),
            }
        }
        Ok(())
    }

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
