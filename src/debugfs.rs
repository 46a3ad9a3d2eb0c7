// SPDX-License-Identifier: GPL-2.0

//! Everything the driver shows in debugfs, under
//! `/sys/kernel/debug/rsnic/<pci-bdf>/`: the function's registers, its
//! probe self-test and (PF) bond state, `queue_restart` (write an RX
//! queue's number: the core restarts it, as for a memory provider), and
//! the PF's `gft/` directory,
//! whose files are an ABI (Documentation/rsnic/gft.rst). The text each
//! file shows is built here; the state behind it belongs to the modules
//! that own it.

use kernel::{debugfs, fmt, prelude::*, sync::Arc, uaccess::UserSliceReader};

use crate::gft::{Gft, WriteError};
use crate::hw;
use crate::linux::debugfs as root;
use crate::linux::net::netdev::NetDevRef;
use crate::nic::{self, bond::BondState, Nic};
use crate::regs::Registers;
use crate::selftest::SelfTestReport;

/// Longest write a `gft/` file accepts.
const MAX_WRITE: usize = 1024;

/// A function's directory and its files.
#[pin_data]
pub(crate) struct FunctionFiles {
    /// The VF bond of a PF's synthetic NIC (`bond`).
    #[pin]
    bond: debugfs::File<Option<Arc<BondState>>>,
    #[pin]
    regs: debugfs::File<Arc<Registers>>,
    #[pin]
    selftest: debugfs::File<SelfTestReport>,
    dir: debugfs::Dir,
}

impl FunctionFiles {
    /// The directory `name` under the module's root, with its files.
    pub(crate) fn new(
        name: &CStr,
        regs: Arc<Registers>,
        report: SelfTestReport,
        bond: Option<Arc<BondState>>,
    ) -> Result<impl PinInit<Self, Error>> {
        let dir = root::subdir(name)?;
        Ok(try_pin_init!(Self {
            bond <- dir.read_callback_file(c"bond", bond, &show_bond),
            regs <- dir.read_callback_file(c"regs", regs, &show_regs),
            selftest <- dir.read_callback_file(c"selftest", report, &show_selftest),
            dir,
        }? Error))
    }
}

/// The files of a function's network device, in the function's
/// directory. They hold the device: dropped before it is unregistered.
#[pin_data]
pub(crate) struct NicFiles {
    #[pin]
    queue_restart: debugfs::File<NetDevRef<Nic>>,
}

impl NicFiles {
    /// The device's files in `parent`'s directory.
    pub(crate) fn new(parent: &FunctionFiles, nic: NetDevRef<Nic>) -> Result<Pin<KBox<Self>>> {
        let dir = &parent.dir;
        KBox::pin_init(
            try_pin_init!(Self {
                queue_restart <- dir.write_callback_file(
                    c"queue_restart", nic, &write_queue_restart),
            }? Error),
            GFP_KERNEL,
        )
    }
}

/// `queue_restart`: the number of an RX queue in use, which the core
/// restarts through the driver's queue management (new rings and
/// buffers, then the old freed). The restart's error is the write's.
fn write_queue_restart(dev: &NetDevRef<Nic>, reader: &mut UserSliceReader) -> Result {
    let mut buf = [0u8; 16];
    let len = reader.len();
    if len == 0 || len > buf.len() {
        return Err(EINVAL);
    }
    reader.read_slice(&mut buf[..len])?;
    let queue = core::str::from_utf8(&buf[..len])
        .ok()
        .and_then(|t| t.trim().parse::<u32>().ok())
        .ok_or(EINVAL)?;
    nic::restart_rx_queue(dev, queue)
}

/// `regs`: every register software can read (reading one has no side
/// effect), by name.
fn show_regs(regs: &Arc<Registers>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    for reg in hw::regs::ALL.iter().filter(|r| r.access != hw::Access::Wo) {
        let (name, offset) = (reg.name, reg.offset);
        match regs.read(offset) {
            Ok(value) => writeln!(f, "{offset:#06x} {name:<16} {value:#010x}")?,
            Err(_) => writeln!(f, "{offset:#06x} {name:<16} unavailable")?,
        }
    }
    Ok(())
}

/// `bond`: `vf_present=0|1 datapath=synthetic|vf switches=N foreign=0|1
/// offered=SLOT|none`, one line (`foreign`: the VF is another make's,
/// `offered`: the slot of the foreign VF the card offers).
fn show_bond(bond: &Option<Arc<BondState>>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let Some(state) = bond else {
        return writeln!(f, "a VF: its bond state is in its PF's directory");
    };
    let (present, datapath_vf, switches) = state.get();
    let datapath = if datapath_vf { "vf" } else { "synthetic" };
    write!(
        f,
        "vf_present={} datapath={datapath} switches={switches} foreign={} offered=",
        u8::from(present),
        u8::from(state.is_foreign())
    )?;
    match state.offered() {
        Some(slot) => writeln!(f, "{slot}"),
        None => writeln!(f, "none"),
    }
}

/// `selftest`: what the probe self-test found.
fn show_selftest(report: &SelfTestReport, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    writeln!(
        f,
        "passed kind={} vectors={} dma_cases={}",
        report.kind.name(),
        report.vectors,
        report.dma_cases
    )
}

/// The PF's `gft/` directory.
#[pin_data]
pub(crate) struct GftFiles {
    #[pin]
    rules: debugfs::File<Arc<Gft>>,
    #[pin]
    flows: debugfs::File<Arc<Gft>>,
    #[pin]
    stats: debugfs::File<Arc<Gft>>,
    #[pin]
    max_flows: debugfs::File<Arc<Gft>>,
    #[pin]
    fail_installs: debugfs::File<Arc<Gft>>,
    #[pin]
    idle_timeout: debugfs::File<Arc<Gft>>,
    #[pin]
    exception_rate: debugfs::File<Arc<Gft>>,
    #[pin]
    exception_burst: debugfs::File<Arc<Gft>>,
    _dir: debugfs::Dir,
}

impl GftFiles {
    /// `gft/` under the function's directory.
    pub(crate) fn new(parent: &FunctionFiles, gft: &Arc<Gft>) -> Result<Pin<KBox<Self>>> {
        let dir = parent.dir.subdir(c"gft");
        KBox::pin_init(
            try_pin_init!(Self {
                rules <- dir.read_write_callback_file(
                    c"rules", gft.clone(), &|g: &Arc<Gft>, f| g.show_rules(f),
                    &|g: &Arc<Gft>, r| write_with("rules", r, |t| g.write_rules(t))),
                flows <- dir.read_write_callback_file(
                    c"flows", gft.clone(), &|g: &Arc<Gft>, f| g.show_flows(f),
                    &|g: &Arc<Gft>, r| write_with("flows", r, |t| g.write_flows(t))),
                stats <- dir.read_callback_file(c"stats", gft.clone(), &show_gft_stats),
                max_flows <- dir.read_write_callback_file(
                    c"max_flows", gft.clone(),
                    &|g: &Arc<Gft>, f| writeln!(f, "{}", g.max_flows()),
                    &|g: &Arc<Gft>, r| write_with("max_flows", r, |t| g.set_max_flows(t))),
                fail_installs <- dir.read_write_callback_file(
                    c"fail_installs", gft.clone(),
                    &|g: &Arc<Gft>, f| writeln!(f, "{}", g.fail_installs()),
                    &|g: &Arc<Gft>, r| {
                        write_with("fail_installs", r, |t| g.set_fail_installs(t))
                    }),
                idle_timeout <- dir.read_write_callback_file(
                    c"idle_timeout_ms", gft.clone(),
                    &|g: &Arc<Gft>, f| writeln!(f, "{}", g.idle_timeout_ms()),
                    &|g: &Arc<Gft>, r| {
                        write_with("idle_timeout_ms", r, |t| g.set_idle_timeout_ms(t))
                    }),
                exception_rate <- dir.read_write_callback_file(
                    c"exception_rate", gft.clone(),
                    &|g: &Arc<Gft>, f| writeln!(f, "{}", g.exception_rate().0),
                    &|g: &Arc<Gft>, r| {
                        write_with("exception_rate", r, |t| g.set_exception_rate(t))
                    }),
                exception_burst <- dir.read_write_callback_file(
                    c"exception_burst", gft.clone(),
                    &|g: &Arc<Gft>, f| writeln!(f, "{}", g.exception_rate().1),
                    &|g: &Arc<Gft>, r| {
                        write_with("exception_burst", r, |t| g.set_exception_burst(t))
                    }),
                _dir: dir,
            }? Error),
            GFP_KERNEL,
        )
    }
}

/// `gft/stats`: one `name value` line per counter.
fn show_gft_stats(gft: &Arc<Gft>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let mut result = Ok(());
    gft.for_each_counter(true, |name, value| {
        if result.is_ok() {
            result = writeln!(f, "{name} {value}");
        }
    });
    result
}

/// Runs the write `op` of `gft/<file>` on the text written (trimmed): text
/// that is too long, not UTF-8 or malformed is `EINVAL` with the reason
/// logged, and changes nothing.
fn write_with(
    file: &str,
    reader: &mut UserSliceReader,
    op: impl FnOnce(&str) -> Result<(), WriteError>,
) -> Result {
    let len = reader.len();
    if len == 0 || len > MAX_WRITE {
        pr_info!(
            "gft {}: write of {} bytes refused (1..={})\n",
            file,
            len,
            MAX_WRITE
        );
        return Err(EINVAL);
    }
    let mut buf = [0u8; MAX_WRITE];
    reader.read_slice(&mut buf[..len])?;
    let Ok(text) = core::str::from_utf8(&buf[..len]) else {
        pr_info!("gft {}: not UTF-8\n", file);
        return Err(EINVAL);
    };
    match op(text.trim()) {
        Ok(()) => Ok(()),
        Err(WriteError::Invalid(reason)) => {
            pr_info!("gft {}: {}\n", file, reason);
            Err(EINVAL)
        }
        Err(WriteError::Failed(e)) => Err(e),
    }
}
