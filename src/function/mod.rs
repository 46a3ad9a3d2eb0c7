// SPDX-License-Identifier: GPL-2.0

//! The PCI function: the core every other part of the driver is a client
//! of, as fbnic's `fbnic_dev` and mana's `gdma_context` are. [`Function`]
//! is the devlink instance's private data; it owns the registers, the
//! health reporters (made at probe under the instance lock, kept until
//! remove), the devlink port (made by each bring-up, unregistered by a
//! reload's first half), and what the function runs ([`Loaded`],
//! `bring_up.rs`): the admin queue, the GFT, the network device and the
//! debugfs files. It keeps the settings a reload carries over and the
//! RDMA half's auxiliary device, and watches the card (`health.rs`: the
//! card gone or back, the function reset, GFT aging, the reports).
//!
//! Its clients name nothing above them: the NIC asks for what it needs
//! through `crate::nic::{NicEvents, FlowOffload}`, the RDMA half through
//! `crate::rdma::{RdmaParent, RdmaEvents}`; `clients.rs` and `health.rs`
//! implement them.
//! `crate::devlink` has the devlink operations.

mod bring_up;
mod clients;
mod clock;
mod health;
mod switchdev;

use kernel::{
    device::Device,
    new_mutex,
    prelude::*,
    sync::{aref::ARef, atomic::Atomic, Arc, Mutex, UniqueArc},
};

use crate::hw::{regs, FuncKind};
use crate::linux::{
    devlink::{DevlinkRef, Locked, Port, PortFlavour, Registration, SwitchId},
    work::PinnedWork,
};
use crate::nic::KeptConfig;
use crate::regs::Registers;
pub(crate) use bring_up::{bring_up, refuse, Loaded};
use health::{CardHealth, Reporters, REBIND_WORK, WATCH_WORK};

/// The driver state of a function, in its devlink instance: what the
/// function runs, which a reload replaces, and the watch over its card.
///
/// Field order is drop order: the works come first, so each is disabled
/// before anything it uses goes away.
#[pin_data]
pub(crate) struct Function {
    /// The card watch, GFT aging and fault reports (`health.rs`).
    #[pin]
    watch_work: PinnedWork<Function, WATCH_WORK>,
    /// Binds the RDMA half afresh after a function reset.
    #[pin]
    rebind_work: PinnedWork<Function, REBIND_WORK>,
    /// The card's faults and counters.
    #[pin]
    health: CardHealth,
    regs: Arc<Registers>,
    kind: FuncKind,
    /// MSI-X vectors allocated at probe; they stay until unbind.
    vectors: u32,
    /// PF in switchdev mode: the VF port's representor and its devlink
    /// port (`switchdev.rs`). Before `loaded`: the representor holds
    /// the NIC, whose registration waits for it.
    #[pin]
    switchdev: Mutex<Option<switchdev::Switchdev>>,
    /// What the function runs; `None` between a reload's halves, after a
    /// failed bring-up, and once the function is removed.
    #[pin]
    loaded: Mutex<Option<KBox<Loaded>>>,
    /// The settings a reload carries from the old NIC to the new one.
    #[pin]
    kept: Mutex<Option<KeptConfig>>,
    /// The instance itself, for what a reload brings up. Cleared by
    /// [`Function::unload`]: it keeps the instance alive.
    #[pin]
    instance: Mutex<Option<Arc<Registration<Function>>>>,
    /// The devlink port the network device belongs to: made by each
    /// bring-up, unregistered by a reload's first half (the core wants no
    /// port left), else dropped by [`Function::unload`] (a drop takes the
    /// instance lock, so it is never a reload's).
    #[pin]
    port: Mutex<Option<Arc<Port>>>,
    /// The health reporters, made at probe and dropped by
    /// [`Function::unload`]; a reload keeps them. They keep the instance
    /// alive.
    #[pin]
    reporters: Mutex<Option<Arc<Reporters>>>,
    /// PF: the RDMA half's auxiliary device.
    rdma: Arc<RdmaAux>,
}

/// A PF's RDMA half as its function sees it: the auxiliary device, once
/// its driver probed it (a reload unbinds it before the NIC goes and
/// binds it again after), and whether it is bound now (a function reset
/// then rebinds it).
#[pin_data]
pub(crate) struct RdmaAux {
    #[pin]
    device: Mutex<Option<ARef<Device>>>,
    bound: Atomic<bool>,
}

impl RdmaAux {
    /// The auxiliary device, if its driver ever probed it.
    fn device(&self) -> Option<ARef<Device>> {
        self.device.lock().clone()
    }
}

impl Function {
    /// The state of a function of `kind` with `vectors` MSI-X vectors,
    /// running nothing yet.
    pub(crate) fn new(
        regs: Arc<Registers>,
        kind: FuncKind,
        vectors: u32,
    ) -> Result<impl PinInit<Self>> {
        let rdma = Arc::pin_init(
            pin_init!(RdmaAux {
                device <- new_mutex!(None),
                bound: Atomic::new(false),
            }),
            GFP_KERNEL,
        )?;
        Ok(pin_init!(Self {
            watch_work <- PinnedWork::new(),
            rebind_work <- PinnedWork::new(),
            health <- CardHealth::new(),
            regs,
            kind,
            vectors,
            switchdev <- new_mutex!(None),
            loaded <- new_mutex!(None),
            kept <- new_mutex!(None),
            instance <- new_mutex!(None),
            port <- new_mutex!(None),
            reporters <- new_mutex!(None),
            rdma,
        }))
    }

    /// Probe: what the function runs.
    pub(crate) fn set_loaded(&self, loaded: Loaded) -> Result {
        *self.loaded.lock() = Some(KBox::new(loaded, GFP_KERNEL)?);
        self.start_watch();
        Ok(())
    }

    /// Remove (or a failed probe): tears down what the function runs and
    /// lets the instance go.
    ///
    /// Each is taken out under its lock and dropped after it: dropping the
    /// NIC waits for its work items, and the function-reset work's
    /// reprobe of the RDMA half takes `loaded` (in
    /// [`crate::rdma::RdmaParent::attach`]), so dropping it under `loaded`
    /// could deadlock with a recovery in flight (lockdep caught it in
    /// `fault_removal.sh`'s rmmod with a gone card).
    ///
    /// The works are stopped first: a run in progress may hold the last
    /// reference to the instance (through the reporters), and must not
    /// drop it from inside the work its drop waits for.
    fn unload(&self) {
        self.stop_works();
        // Not under the instance lock: its port's drop takes it.
        self.leave_switchdev(None);
        let loaded = self.loaded.lock().take();
        drop(loaded);
        // Not under the instance lock: their drops take it.
        let reporters = self.reporters.lock().take();
        drop(reporters);
        let port = self.port.lock().take();
        drop(port);
        let rdma_aux = self.rdma.device.lock().take();
        drop(rdma_aux);
        let instance = self.instance.lock().take();
        drop(instance);
    }

    /// A reload's first half: what the function runs, taken out (the
    /// RDMA half's probe finds nothing from now on), with the settings it
    /// had noted; `None` if nothing runs (a previous bring-up failed).
    pub(crate) fn take_loaded(&self) -> Option<KBox<Loaded>> {
        let loaded = self.loaded.lock().take()?;
        self.forget_queue_faults();
        *self.kept.lock() = Some(loaded.kept_config());
        Some(loaded)
    }

    /// The settings the last reload noted.
    pub(crate) fn kept(&self) -> Option<KeptConfig> {
        self.kept.lock().clone()
    }

    /// The instance, while the function is bound.
    pub(crate) fn instance(&self) -> Option<Arc<Registration<Function>>> {
        self.instance.lock().clone()
    }

    /// Registers the devlink port of a bring-up under the instance lock
    /// (`locked`) and keeps it; `EBUSY` if one is registered already.
    fn new_port(
        &self,
        instance: &Arc<Registration<Function>>,
        locked: &Locked<'_>,
    ) -> Result<Arc<Port>> {
        let mut slot = self.port.lock();
        if slot.is_some() {
            return Err(EBUSY);
        }
        let (flavour, switch_id) = match self.kind {
            // The wire's port of the card's switch (its representor in
            // switchdev mode), in either mode: the switch id is the
            // card's.
            FuncKind::Pf => (PortFlavour::Physical(0), Some(self.switch_id()?)),
            FuncKind::Vf => (PortFlavour::Virtual, None),
        };
        let port = Port::new(
            DevlinkRef::new(instance),
            locked,
            0,
            flavour,
            switch_id.as_ref(),
        )?;
        *slot = Some(port.clone());
        Ok(port)
    }

    /// The identity of the card's switch, which all its ports share:
    /// the card's ID (`devlink dev info`'s serial number).
    pub(crate) fn switch_id(&self) -> Result<SwitchId> {
        Ok(u64::from(self.regs().read(regs::CARD_ID)?).to_be_bytes())
    }

    /// A reload's first half, once the network device is gone:
    /// unregisters the port under the instance lock (`locked`).
    pub(crate) fn unregister_port(&self, locked: &Locked<'_>) -> Result {
        let port = self.port.lock().take();
        match port {
            Some(port) => port.unregister(locked),
            None => Ok(()),
        }
    }

    /// The health reporters, from probe to remove.
    fn reporters(&self) -> Option<Arc<Reporters>> {
        self.reporters.lock().clone()
    }

    /// The RDMA half's auxiliary device, if its driver ever probed it.
    pub(crate) fn rdma_device(&self) -> Option<ARef<Device>> {
        self.rdma.device()
    }

    /// The registers.
    pub(crate) fn regs(&self) -> &Arc<Registers> {
        &self.regs
    }

    /// PF or VF.
    pub(crate) fn kind(&self) -> FuncKind {
        self.kind
    }

    /// MSI-X vectors allocated at probe.
    pub(crate) fn vectors(&self) -> u32 {
        self.vectors
    }
}

/// A function's devlink instance as its PCI driver holds it: dropping it
/// tears down what the function runs (see [`Function::unload`]) and lets
/// the instance go once its ports and reporters are gone.
pub(crate) struct FunctionInstance(Arc<Registration<Function>>);

impl FunctionInstance {
    /// Takes `instance`, whose state refers back to it until dropped, and
    /// gives the function its health reporters, made under the instance
    /// lock (`devl_health_reporter_create`).
    pub(crate) fn new(instance: Arc<Registration<Function>>) -> Result<Self> {
        *instance.data().instance.lock() = Some(instance.clone());
        // From here our drop undoes it all.
        let this = Self(instance);
        let instance = &this.0;
        let function = instance.data();
        // Allocated before the lock is taken: what is made under it must
        // not be dropped there.
        let slot = UniqueArc::new_uninit(GFP_KERNEL)?;
        {
            let locked = instance.lock();
            let reporters = Reporters::new(instance, &locked, function.kind == FuncKind::Pf)?;
            *function.reporters.lock() = Some(slot.write(reporters).into());
        }
        Ok(this)
    }

    /// The instance.
    pub(crate) fn get(&self) -> &Arc<Registration<Function>> {
        &self.0
    }
}

impl Drop for FunctionInstance {
    fn drop(&mut self) {
        self.0.data().unload();
    }
}
