// SPDX-License-Identifier: GPL-2.0

//! The emulated rsnic card as a library: the binary (`main.rs`) serves it
//! to QEMU over vfio-user; the benchmarks (`benches/`) drive its parts
//! directly.

pub mod backend;
pub mod capture;
pub mod card;
pub mod clock;
pub mod command;
pub mod config_space;
pub mod control;
pub mod device_memory;
pub mod dma;
pub mod doorbell_page;
pub mod foreign_port;
pub mod frame;
pub mod function;
pub mod gft;
pub mod gro;
pub mod irq;
pub mod nic;
pub mod offload;
pub mod queues;
pub mod rdma;
pub mod rss;
pub mod shaper;
pub mod split;
pub mod steer;
pub mod stream;
pub mod train;
pub mod tunnel;
pub mod uso;
pub mod wire;
pub mod xdp;

#[path = "../../../src/hw/mod.rs"]
#[allow(dead_code)]
pub mod hw;
