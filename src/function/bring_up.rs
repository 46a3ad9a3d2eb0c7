// SPDX-License-Identifier: GPL-2.0

//! What a bound function runs: the self-test, the admin queue, the GFT,
//! the network device (on the function's devlink port) and the debugfs
//! files. Built at probe and again by the second half of
//! `devlink dev reload`; torn down at remove and by a reload's first half
//! (`crate::devlink`).

use kernel::{device::Bound, pci, prelude::*, sync::Arc};

use super::clock::CardClock;
use super::{health::FunctionEvents, Function};
use crate::admin::AdminQueue;
use crate::debugfs::{FunctionFiles, GftFiles, NicFiles};
use crate::gft::Gft;
use crate::hw::{self, regs, AdminCmd, DeviceInfo, FuncKind};
use crate::linux::{
    devlink::{Locked, Registration},
    dma::{DmaBuffer, DmaDevice},
    irq::{IrqHandlerRegistration, MsixVectors},
    ptp::{realtime_ns, PtpClock},
};
use crate::nic::{self, FlowOffload, FunctionParts, KeptConfig, NicRegistration};
use crate::regs::{Registers, ResetOnDrop};
use crate::selftest::{self, SelfTestError, VectorIrq};

/// A running function.
///
/// Field order is drop order: `gft/` before the NIC (so no write
/// reaches a GFT going away), `queue_restart` before the NIC (its handle
/// keeps the NIC's registration waiting), the NIC stops its queues through the admin
/// queue, then the card is reset, and only then is the admin queue's
/// ring freed (the card stopped using it); last the function's debugfs
/// directory.
pub(crate) struct Loaded {
    /// PF: `gft/`.
    _gft_files: Option<Pin<KBox<GftFiles>>>,
    /// `queue_restart`, which holds the NIC.
    _nic_files: Pin<KBox<NicFiles>>,
    nic: NicRegistration,
    /// PF: the card's clock as a PTP hardware clock; after the NIC (which
    /// names it), before the reset and the admin queue (it uses them).
    _clock: Option<Pin<KBox<PtpClock<CardClock>>>>,
    /// PF: the GFT (the NIC's exception path, `gft/`, aging).
    gft: Option<Arc<Gft>>,
    /// Quiesces the card once the NIC is gone (it may already be gone
    /// itself, which is fine).
    _reset: ResetOnDrop,
    /// The admin queue (the NIC, the GFT and the RDMA half share it).
    admin: Arc<AdminQueue>,
    /// The function's debugfs directory (`gft/` is inside it).
    _files: Pin<KBox<FunctionFiles>>,
}

impl Loaded {
    /// The function's network device.
    pub(crate) fn nic(&self) -> &NicRegistration {
        &self.nic
    }

    /// The function's admin queue.
    pub(crate) fn admin(&self) -> &Arc<AdminQueue> {
        &self.admin
    }

    /// PF: the GFT.
    pub(super) fn gft(&self) -> Option<&Arc<Gft>> {
        self.gft.as_ref()
    }

    /// What a reload keeps of the network device's settings.
    pub(super) fn kept_config(&self) -> KeptConfig {
        let dev = self.nic.dev();
        dev.data().kept_config(dev)
    }
}

/// Logs why the card is refused; the caller then fails with `EIO`.
pub(crate) fn refuse(pdev: &pci::Device<Bound>, e: SelfTestError) -> Error {
    dev_err!(pdev, "self-test failed: {e}\n");
    EIO
}

/// Puts a self-test [`VectorIrq`] handler on every vector.
fn request_selftest_irqs(
    vectors: &MsixVectors<'_>,
) -> Result<KVec<Pin<KBox<IrqHandlerRegistration<VectorIrq>>>>> {
    let mut irqs = KVec::with_capacity(vectors.count() as usize, GFP_KERNEL)?;
    for index in 0..vectors.count() {
        let registration =
            IrqHandlerRegistration::new(vectors.irq(index)?, c"rsnic", VectorIrq::new());
        irqs.push(KBox::pin_init(registration, GFP_KERNEL)?, GFP_KERNEL)?;
    }
    Ok(irqs)
}

/// The card's clock as a PTP hardware clock, set to the system's time, if
/// the card keeps one. A clock that cannot be had costs the function only
/// its hardware time stamps (as in mlx5): logged, not fatal.
fn register_clock(
    pdev: &pci::Device<Bound>,
    regs: &Arc<Registers>,
    admin: &Arc<AdminQueue>,
) -> Option<Pin<KBox<PtpClock<CardClock>>>> {
    let entry = admin.exec(AdminCmd::QueryDevice).ok()?;
    if DeviceInfo::read_result(&entry).features & hw::feature::PTP == 0 {
        return None;
    }
    let registered = u64::try_from(realtime_ns())
        .map_err(|_| EINVAL)
        .and_then(|ns| admin.run(AdminCmd::PtpSetTime { ns }))
        .and_then(|()| {
            KBox::pin_init(
                PtpClock::new(
                    pdev.as_ref(),
                    &crate::THIS_MODULE,
                    CardClock::new(regs.clone(), admin.clone()),
                ),
                GFP_KERNEL,
            )
        });
    match registered {
        Ok(clock) => Some(clock),
        Err(e) => {
            dev_warn!(pdev, "no PTP clock ({e:?}): no hardware time stamps\n");
            None
        }
    }
}

/// Self-tests the card and builds what the function of `instance` runs,
/// under its devlink instance lock (`locked`: probe takes it, a reload
/// holds it), with a new devlink port:
/// its admin queue, a PF's GFT, its network device (configured as `kept`
/// says, after a reload), `gft/` and debugfs files.
pub(crate) fn bring_up(
    pdev: &pci::Device<Bound>,
    instance: &Arc<Registration<Function>>,
    locked: &Locked<'_>,
    vectors: &MsixVectors<'_>,
    kept: Option<&KeptConfig>,
) -> Result<Loaded> {
    let function = instance.data();
    let (regs, kind) = (&function.regs, function.kind);
    let report = {
        // The self-test's handlers and buffer go before the NIC takes
        // the vectors.
        let irqs = request_selftest_irqs(vectors)?;
        let buf = DmaBuffer::alloc(pdev.as_ref(), selftest::DMA_BUFFER_LEN)?;
        selftest::run(regs, &irqs, &buf).map_err(|e| refuse(pdev, e))?
    };
    if report.kind != kind {
        dev_err!(
            pdev,
            "card says it is a {}, its PCI ID says {}\n",
            report.kind.name(),
            kind.name()
        );
        return Err(EIO);
    }
    let mac = regs.mac()?;
    dev_info!(
        pdev,
        "{} self-test passed ({} MSI-X vectors, {} DMA cases); card {}, MAC {:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}\n",
        kind.name(),
        report.vectors,
        report.dma_cases,
        regs.read(regs::CARD_ID)?,
        mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]
    );
    // Dropped after the NIC if a later step fails, as in `Loaded`; the
    // admin queue after the reset.
    let dma = DmaDevice::new(pdev.as_ref());
    let admin = AdminQueue::new(regs.clone(), &dma)?;
    let reset = ResetOnDrop(regs.clone());
    let gft = match kind {
        FuncKind::Pf => Some(Gft::new(admin.clone(), &dma)?),
        FuncKind::Vf => None,
    };
    let clock = match kind {
        FuncKind::Pf => register_clock(pdev, regs, &admin),
        FuncKind::Vf => None,
    };
    // Both kinds get a network device; a VF's joins its PF's.
    let parts = FunctionParts {
        regs,
        admin: &admin,
        vectors,
        kind,
        port: function.new_port(instance, locked)?,
        flow: gft.clone().map(|g| -> Arc<dyn FlowOffload> { g }),
        events: Arc::new(FunctionEvents::new(instance, &admin), GFP_KERNEL)?,
        phc_index: clock.as_ref().map(|c| c.index()),
    };
    let nic = nic::register(pdev.as_ref(), parts, kept)?;
    let bond = (kind == FuncKind::Pf).then(|| nic.dev().data().bond().shared_state());
    let files = KBox::pin_init(
        FunctionFiles::new(pdev.as_ref().name(), regs.clone(), report, bond)?,
        GFP_KERNEL,
    )?;
    let gft_files = gft.as_ref().map(|g| GftFiles::new(&files, g)).transpose()?;
    let nic_files = NicFiles::new(&files, nic.dev().data().handle())?;
    Ok(Loaded {
        _gft_files: gft_files,
        _nic_files: nic_files,
        nic,
        _clock: clock,
        gft,
        _reset: reset,
        admin,
        _files: files,
    })
}
