// SPDX-License-Identifier: GPL-2.0

//! rsnic-emu: the emulated rsnic SmartNIC.
//!
//! One process is one card. It serves the card's physical function over a
//! vfio-user socket (QEMU's `-device vfio-user-pci`) and takes harness
//! commands (fault injection, status) on a control socket. It exits when
//! QEMU disconnects.

mod backend;
mod config_space;
mod control;
mod dma;
mod function;
mod irq;

#[path = "../../../src/hw.rs"]
#[allow(dead_code)]
mod hw;

use std::path::PathBuf;
use std::sync::Arc;

use clap::Parser;
use log::info;

use crate::backend::Backend;
use crate::control::Faults;
use crate::function::Function;

/// Command line of the emulator.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// vfio-user socket of the physical function (created; must not exist).
    #[arg(long)]
    pf_socket: PathBuf,
    /// Control socket for the harness (created; must not exist).
    #[arg(long)]
    ctl_socket: Option<PathBuf>,
    /// Card identifier, reported in the CARD_ID register.
    #[arg(long, default_value_t = 0)]
    card_id: u32,
    /// Permanent MAC address of the card, aa:bb:cc:dd:ee:ff.
    #[arg(long, default_value = "02:52:53:00:00:01", value_parser = parse_mac)]
    mac: [u8; 6],
    /// Fault active from the start (see `fault` on the control socket).
    #[arg(long, default_value = "none")]
    fault: String,
}

fn parse_mac(s: &str) -> Result<[u8; 6], String> {
    let mut mac = [0u8; 6];
    let parts: Vec<&str> = s.split(':').collect();
    if parts.len() != 6 {
        return Err(format!("'{s}' is not a MAC address"));
    }
    for (byte, part) in mac.iter_mut().zip(parts) {
        *byte = u8::from_str_radix(part, 16).map_err(|e| format!("'{s}': {e}"))?;
    }
    Ok(mac)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let args = Args::parse();

    let faults = Arc::new(Faults::default());
    faults.set_by_name(&args.fault)?;
    if let Some(path) = &args.ctl_socket {
        control::spawn(path, Arc::clone(&faults))?;
    }

    let identity = function::Identity {
        kind: hw::FuncKind::Pf,
        card_id: args.card_id,
        mac: args.mac,
        vectors: hw::PF_MSIX_VECTORS,
    };
    let server = vfio_user::Server::new(
        &args.pf_socket,
        true,
        backend::irq_infos(identity.vectors),
        backend::region_infos(),
    )?;
    info!(
        "card {} PF listening on {}",
        args.card_id,
        args.pf_socket.display()
    );
    let mut backend = Backend::new(Function::new(identity, faults));
    server.run(&mut backend)?;
    info!("card {} PF: QEMU disconnected, exiting", args.card_id);
    Ok(())
}
