// SPDX-License-Identifier: GPL-2.0

//! The PCI function: the core every other part of the driver is a client
//! of, as fbnic's `fbnic_dev` and mana's `gdma_context` are. [`Function`]
//! is the devlink instance's private data; it owns the registers, and
//! what the function runs ([`Loaded`], `bring_up.rs`): the admin queue,
//! the GFT, the network device, the card's health reporters and the
//! debugfs files. It keeps the settings a reload carries over and the
//! RDMA half's auxiliary device, and watches the card (`health.rs`: the
//! card gone or back, the function reset, GFT aging, the `card` and
//! `rdma` reporters).
//!
//! Its clients name nothing above them: the NIC asks for what it needs
//! through `crate::nic::{NicEvents, FlowOffload}`, the RDMA half through
//! `crate::rdma::{RdmaParent, RdmaEvents}`; `clients.rs` and `health.rs`
//! implement them.
//! `crate::devlink` has the devlink operations.

mod bring_up;
mod clients;
mod health;

use kernel::{
    device::Device,
    new_mutex,
    prelude::*,
    sync::{aref::ARef, atomic::Atomic, Arc, Mutex},
};

use crate::hw::FuncKind;
use crate::linux::{devlink::Registration, work::PinnedWork};
use crate::nic::KeptConfig;
use crate::regs::Registers;
pub(crate) use bring_up::{bring_up, refuse, Loaded};
use health::{CardHealth, REBIND_WORK, WATCH_WORK};

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
    /// What the function runs; `None` between a reload's halves, after a
    /// failed bring-up, and once the function is removed.
    #[pin]
    loaded: Mutex<Option<KBox<Loaded>>>,
    /// The settings a reload carries from the old NIC to the new one.
    #[pin]
    kept: Mutex<Option<KeptConfig>>,
    /// The instance itself, for the port and reporters a reload creates.
    /// Cleared by [`Function::unload`]: it keeps the instance alive.
    #[pin]
    instance: Mutex<Option<Arc<Registration<Function>>>>,
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
            loaded <- new_mutex!(None),
            kept <- new_mutex!(None),
            instance <- new_mutex!(None),
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
        let loaded = self.loaded.lock().take();
        drop(loaded);
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
    /// Takes `instance`, whose state refers back to it until dropped.
    pub(crate) fn new(instance: Arc<Registration<Function>>) -> Self {
        *instance.data().instance.lock() = Some(instance.clone());
        Self(instance)
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
