// SPDX-License-Identifier: GPL-2.0

//! The harness's commands on a card's control socket, one line each,
//! parsed into a [`Command`] (with clap, as a command line without a
//! program name); the binary carries them out. A line that is not a
//! command gets clap's reason back, on one line.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use crate::nic::AdminFault;
use crate::queues::CqeFault;
use crate::rdma::faults::RdmaFault;

/// One command line.
#[derive(Parser, Debug)]
#[command(
    no_binary_name = true,
    disable_help_flag = true,
    disable_help_subcommand = true,
    disable_version_flag = true,
    subcommand_required = true,
    arg_required_else_help = false
)]
struct Line {
    #[command(subcommand)]
    command: Command,
}

/// A harness command.
#[derive(Subcommand, Debug, PartialEq, Eq)]
pub enum Command {
    /// Activates the register or DMA fault called NAME (`none` ends it).
    Fault { name: String },
    /// The active fault.
    Status,
    /// Carrier on the card's port.
    Link { state: LinkState },
    /// The card's identity registers.
    Identity,
    /// The GFT's flows, as the card holds them.
    GftFlows,
    /// The GFT's counters.
    GftStats,
    /// The RDMA engine's GID table.
    RdmaGids,
    /// The RDMA engine's limits.
    RdmaCaps,
    /// The RDMA engine's objects.
    RdmaState,
    /// The offloaded XDP program: loaded or not, and its verdicts.
    XdpState,
    /// Stops the PF's TX processing (a stuck queue); says how many pairs.
    StallTx,
    /// The next N completions of each PF pair are written wrong
    /// (`persist`: the fault stays on the pair).
    CqeFault {
        #[arg(value_parser = cqe_fault)]
        kind: CqeFault,
        n: u32,
        persist: Option<Persist>,
    },
    /// The next N interrupts of the PF are not sent.
    IrqDrop { n: u32 },
    /// The next N admin commands (with `create-qp`, the next N queue
    /// pair creations) time out or fail.
    AdminFault {
        #[arg(value_parser = admin_fault)]
        kind: AdminFault,
        n: u32,
        only: Option<AdminFaultOnly>,
    },
    /// Every DMA of both functions waits US microseconds.
    DmaDelay { us: u32 },
    /// Receive coalescing holds an aggregate until its queue has had no
    /// frame for US microseconds (at most 100 times that).
    GroHold { us: u32 },
    /// Impairs the wire: KIND (drop, dup, reorder, corrupt) at PER_MILLE.
    Wire { kind: String, per_mille: u32 },
    /// Captures the wire's frames to a pcap file, or `stop`.
    Capture { target: CaptureTarget },
    /// What the wire's impairments did.
    WireStats,
    /// Arms N of an RDMA fault; without arguments, what is armed.
    RdmaFault {
        #[arg(value_parser = rdma_fault, requires = "n")]
        kind: Option<RdmaFault>,
        n: Option<u32>,
    },
    /// N interrupts no event asked for, on every PF vector.
    SpuriousIrq { n: u32 },
    /// Which function the card delivers to, and whether the VF runs.
    Datapath,
    /// A foreign VF's port: `attach SERIAL LOCAL PEER` (the card binds
    /// LOCAL, QEMU's dgram netdev is at PEER, the VF is offered as
    /// SERIAL), `detach`, or without arguments what the port did.
    VfPort {
        action: Option<VfPortAction>,
        #[arg(requires = "peer")]
        serial: Option<u32>,
        local: Option<PathBuf>,
        peer: Option<PathBuf>,
    },
    /// The PF's counters.
    Stats,
    /// The VF's counters.
    VfStats,
}

/// What `vf-port` does.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum VfPortAction {
    Attach,
    Detach,
    /// The cable to QEMU's end breaks: the port's next send fails, as
    /// when QEMU's end is gone (QEMU keeps a deleted netdev's socket
    /// open while its NIC stays).
    Cut,
}

/// `link up` or `link down`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkState {
    Up,
    Down,
}

/// The word `persist`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Persist {
    Persist,
}

/// The admin commands an `admin-fault` hits: `create-qp`, queue pair
/// creations only (the others pass untouched).
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdminFaultOnly {
    CreateQp,
}

/// Where `capture` goes: a file, or `stop` for the one running.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CaptureTarget {
    Stop,
    File(PathBuf),
}

impl From<&str> for CaptureTarget {
    fn from(s: &str) -> Self {
        match s {
            "stop" => Self::Stop,
            path => Self::File(PathBuf::from(path)),
        }
    }
}

fn cqe_fault(s: &str) -> Result<CqeFault, String> {
    CqeFault::from_name(s)
        .ok_or_else(|| format!("'{s}' is not index, length, dup, drop, tail or hdr"))
}

fn admin_fault(s: &str) -> Result<AdminFault, String> {
    AdminFault::from_name(s).ok_or_else(|| format!("'{s}' is not timeout or error"))
}

fn rdma_fault(s: &str) -> Result<RdmaFault, String> {
    RdmaFault::from_name(s).ok_or_else(|| format!("'{s}' is not bad-rkey, reject-modify or rnr"))
}

impl Command {
    /// Parses one line; the error is clap's message up to its usage
    /// note, on one line and without its `error: ` (the reply adds it
    /// back).
    pub fn parse_line(line: &str) -> Result<Self, String> {
        Line::try_parse_from(line.split_whitespace())
            .map(|l| l.command)
            .map_err(|e| {
                let text = e.to_string();
                let reason: Vec<&str> = text
                    .lines()
                    .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more"))
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .collect();
                let reason = reason.join(" ");
                reason
                    .strip_prefix("error: ")
                    .unwrap_or(&reason)
                    .to_string()
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_kind_of_command() {
        let ok = |line| Command::parse_line(line).unwrap();
        assert_eq!(ok("status"), Command::Status);
        assert_eq!(
            ok("fault scratch"),
            Command::Fault {
                name: "scratch".into()
            }
        );
        assert_eq!(
            ok("link down"),
            Command::Link {
                state: LinkState::Down
            }
        );
        assert_eq!(ok("gft-flows"), Command::GftFlows);
        assert_eq!(
            ok("vf-port attach 2 /tmp/c /tmp/q"),
            Command::VfPort {
                action: Some(VfPortAction::Attach),
                serial: Some(2),
                local: Some("/tmp/c".into()),
                peer: Some("/tmp/q".into()),
            }
        );
        assert!(Command::parse_line("vf-port attach 2 /tmp/c").is_err());
        assert!(matches!(
            ok("vf-port detach"),
            Command::VfPort {
                action: Some(VfPortAction::Detach),
                serial: None,
                ..
            }
        ));
        assert_eq!(
            ok("cqe-fault tail 3 persist"),
            Command::CqeFault {
                kind: CqeFault::Tail,
                n: 3,
                persist: Some(Persist::Persist)
            }
        );
        assert_eq!(
            ok("cqe-fault dup 1"),
            Command::CqeFault {
                kind: CqeFault::Duplicate,
                n: 1,
                persist: None
            }
        );
        assert_eq!(
            ok("admin-fault timeout 2"),
            Command::AdminFault {
                kind: AdminFault::Timeout,
                n: 2,
                only: None
            }
        );
        assert_eq!(
            ok("admin-fault error 1 create-qp"),
            Command::AdminFault {
                kind: AdminFault::Error,
                n: 1,
                only: Some(AdminFaultOnly::CreateQp)
            }
        );
        assert_eq!(
            ok("capture stop"),
            Command::Capture {
                target: CaptureTarget::Stop
            }
        );
        assert_eq!(
            ok("capture /tmp/x.pcap"),
            Command::Capture {
                target: CaptureTarget::File("/tmp/x.pcap".into())
            }
        );
        assert_eq!(
            ok("rdma-fault"),
            Command::RdmaFault {
                kind: None,
                n: None
            }
        );
        assert_eq!(
            ok("rdma-fault rnr 1"),
            Command::RdmaFault {
                kind: Some(RdmaFault::Rnr),
                n: Some(1)
            }
        );
        assert_eq!(
            ok("wire drop 10"),
            Command::Wire {
                kind: "drop".into(),
                per_mille: 10
            }
        );
        assert_eq!(ok("  vf-stats  "), Command::VfStats);
    }

    #[test]
    fn refuses_with_a_reason_on_one_line() {
        for (line, says) in [
            ("", "subcommand"),
            ("frobnicate", "frobnicate"),
            ("irq-drop x", "'x'"),
            ("irq-drop", "<N>"),
            ("cqe-fault melt 1", "'melt' is not index"),
            ("cqe-fault dup 1 forever", "forever"),
            ("admin-fault melt 1", "'melt' is not timeout or error"),
            ("rdma-fault rnr", "<N>"),
            ("link sideways", "sideways"),
            ("stats extra", "extra"),
        ] {
            let e = Command::parse_line(line).unwrap_err();
            assert!(e.contains(says), "{line:?}: {e}");
            assert!(!e.contains('\n'), "{line:?}: {e}");
        }
    }
}
