// SPDX-License-Identifier: GPL-2.0

//! The harness's control socket and the card's fault-injection knobs.
//!
//! Protocol: one command per line on a UNIX stream socket, one reply line
//! per command, `ok ...` or `error: ...`.
//!
//! - `fault <name>`: make the card misbehave (see [`Fault`]); `fault none`
//!   restores normal behaviour (after `gone`, as a freshly inserted card).
//! - `status`: the active fault.
//! - `link up` / `link down`: plug or unplug the cable at this card's end.
//! - `stats`: the card's own counters, `key=value` pairs.
//! - `stall-tx`: hang the TX engine of every running PF queue pair until
//!   the driver recreates it (to exercise the TX watchdog).
//! - `cqe-fault <index|length|dup|drop|tail|hdr> <n> [persist]`: every
//!   running PF queue pair gets its next `n` completions wrong that way (with
//!   `persist`, pairs created later too); `n = 0` cancels.
//! - `spurious-irq <n>`: raise every PF MSI-X vector `n` times, with
//!   nothing to report.
//! - `irq-drop <n>`: lose the PF's next `n` queue interrupts.
//! - `admin-fault <timeout|error> <n> [create-qp]`: leave the PF's next
//!   `n` admin commands (with `create-qp`, queue pair creations)
//!   unanswered, or fail them.
//! - `dma-delay <us>`: every queue DMA pass (both functions) takes longer.
//! - `wire <drop|dup|reorder|corrupt> <per-mille>`: impair the frames this
//!   card sends; `wire-stats`: what the impairments did.
//! - `rdma-fault <bad-rkey|reject-modify|rnr> <n>`: the RDMA engine's next
//!   `n` RDMA READ/WRITE requests carry a wrong R_Key, its next `n` QP
//!   state changes are refused, or its responders answer the next `n` new
//!   SENDs with an RNR NAK; `rdma-fault`: what is armed and injected.
//! - `capture <path>` / `capture stop`: record every frame this card
//!   sends and receives into a pcap file (see [`crate::capture`]).
//! - `vf-stats`: the VF's counters, as `stats`.
//! - `rdma-gids`, `rdma-state`, `rdma-caps`: the RDMA engine's GID table,
//!   its QPs and counters, and the limits it reports.
//! - `xdp-state`: whether an offloaded XDP program runs, and its
//!   verdicts.
//! - `datapath`: where received frames go (`synthetic` or `vf`) and
//!   whether the VF runs a queue pair.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use log::warn;

/// A way the card can misbehave, for testing the driver's defences.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Fault {
    /// Behave correctly.
    None = 0,
    /// The scratch register reads back a value other than the one written.
    Scratch = 1,
    /// Test interrupts are counted but never delivered.
    Irq = 2,
    /// DMA fills write a corrupted pattern and verifies report mismatches.
    Dma = 3,
    /// Every register reads all-ones, as after surprise removal.
    AllOnes = 4,
    /// The permanent MAC address reads as a multicast address.
    BadMac = 5,
    /// The card is gone, as after surprise removal: registers read all
    /// ones, writes are lost, and it neither sends, receives, does DMA
    /// nor interrupts.
    Gone = 6,
}

impl Fault {
    const ALL: [Fault; 7] = [
        Fault::None,
        Fault::Scratch,
        Fault::Irq,
        Fault::Dma,
        Fault::AllOnes,
        Fault::BadMac,
        Fault::Gone,
    ];

    /// Name used on the control socket.
    pub fn name(self) -> &'static str {
        match self {
            Fault::None => "none",
            Fault::Scratch => "scratch",
            Fault::Irq => "irq",
            Fault::Dma => "dma",
            Fault::AllOnes => "all-ones",
            Fault::BadMac => "bad-mac",
            Fault::Gone => "gone",
        }
    }
}

/// The active fault, shared between the control thread and the device.
#[derive(Default)]
pub struct Faults {
    active: AtomicU8,
}

impl Faults {
    /// The fault currently active.
    pub fn active(&self) -> Fault {
        let v = self.active.load(Ordering::Relaxed);
        Fault::ALL
            .into_iter()
            .find(|f| *f as u8 == v)
            .unwrap_or(Fault::None)
    }

    /// Whether `fault` is the active one.
    pub fn is(&self, fault: Fault) -> bool {
        self.active() == fault
    }

    /// Activates the fault called `name`.
    pub fn set_by_name(&self, name: &str) -> Result<(), String> {
        let fault = Fault::ALL
            .into_iter()
            .find(|f| f.name() == name)
            .ok_or_else(|| {
                let names: Vec<_> = Fault::ALL.iter().map(|f| f.name()).collect();
                format!("unknown fault '{name}' (one of: {})", names.join(", "))
            })?;
        self.active.store(fault as u8, Ordering::Relaxed);
        Ok(())
    }
}

/// Executes one command line, returning the reply line.
pub type Handler = dyn Fn(&str) -> String + Send + Sync;

fn serve(stream: UnixStream, handler: &Handler) -> std::io::Result<()> {
    let mut out = stream.try_clone()?;
    for line in BufReader::new(stream).lines() {
        let reply = handler(line?.trim());
        writeln!(out, "{reply}")?;
    }
    Ok(())
}

/// Listens on `path` in a background thread, serving one client at a time.
pub fn spawn(path: &Path, handler: Arc<Handler>) -> std::io::Result<()> {
    let listener = UnixListener::bind(path)?;
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            match stream {
                Ok(s) => {
                    if let Err(e) = serve(s, &*handler) {
                        warn!("control connection: {e}");
                    }
                }
                Err(e) => warn!("control accept: {e}"),
            }
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_by_name() {
        let f = Faults::default();
        assert!(f.is(Fault::None));
        f.set_by_name("scratch").unwrap();
        assert!(f.is(Fault::Scratch));
        assert!(f
            .set_by_name("bogus")
            .unwrap_err()
            .starts_with("unknown fault"));
        assert!(f.is(Fault::Scratch), "a rejected name changes nothing");
        f.set_by_name("none").unwrap();
        assert_eq!(f.active().name(), "none");
    }
}
