// SPDX-License-Identifier: GPL-2.0

//! rsnic: driver for the rsnic SmartNIC, an Azure-AccelNet-style card with
//! a synthetic NIC, a VF data path, a GFT flow table and a RoCEv2 engine.
//!
//! Layout: `hw` is the hardware interface (shared with the emulator),
//! `linux` the abstraction layer over kernel C APIs (all `unsafe` lives
//! there, with the generated bindings), and the rest is driver logic in
//! safe Rust: the compiler refuses `unsafe` in every driver module.

use kernel::{auxiliary, driver, pci, prelude::*};

// Shared verbatim with the emulator, hence `pub` items and some the driver
// does not use.
#[allow(dead_code, unreachable_pub)]
#[deny(unsafe_code)]
mod hw;
mod linux;

#[deny(unsafe_code)]
mod admin;
#[deny(unsafe_code)]
mod debugfs;
#[deny(unsafe_code)]
mod devlink;
#[deny(unsafe_code)]
mod function;
#[deny(unsafe_code)]
mod gft;
#[deny(unsafe_code)]
mod nic;
#[deny(unsafe_code)]
mod pci_drv;
#[deny(unsafe_code)]
mod rdma;
#[deny(unsafe_code)]
mod regs;
#[deny(unsafe_code)]
mod selftest;

use linux::{debugfs::DebugfsRoot, net::upper::NetdevNotifier};

/// The module's name, as auxiliary device names start with.
pub(crate) const MODULE_NAME: &CStr = <LocalModule as kernel::ModuleMetadata>::NAME;

/// Driver version, as `ethtool -i` shows it.
pub(crate) const VERSION: &str = "0.2.0";

/// The module: the debugfs root and the PCI and auxiliary (RDMA) driver
/// registrations.
#[pin_data]
struct RsnicModule {
    // Unregistered first, so every RDMA device leaves ib_core before its
    // PF goes.
    #[pin]
    _rdma_driver: driver::Registration<auxiliary::Adapter<rdma::RdmaDriver>>,
    // Then every function is unbound (and has removed its debugfs
    // directory) before the root directory goes.
    #[pin]
    _driver: driver::Registration<pci::Adapter<pci_drv::RsnicDriver>>,
    // After the driver: it sees the devices' last events (VF release).
    #[pin]
    _netdev_events: NetdevNotifier<nic::Nic>,
    _debugfs: DebugfsRoot,
}

impl kernel::InPlaceModule for RsnicModule {
    fn init(module: &'static ThisModule) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            _debugfs: DebugfsRoot::new(c"rsnic"),
            _netdev_events <- NetdevNotifier::new(&nic::NIC_VTABLE),
            _driver <- driver::Registration::new(MODULE_NAME, module),
            _rdma_driver <- driver::Registration::new(MODULE_NAME, module),
        })
    }
}

module! {
    type: RsnicModule,
    name: "rsnic",
    authors: ["The rsnic developers"],
    description: "rsnic SmartNIC driver (synthetic NIC, VF bonding, GFT, RoCEv2)",
    license: "GPL v2",
    // `netdev_rx_queue_restart`, the core's queue restart (debugfs
    // `queue_restart`).
    imports_ns: ["NETDEV_INTERNAL"],
    params: {
        tx_batching: u8 {
            default: 1,
            description: "TX byte queue limits and one doorbell per xmit_more batch (1, the default); 0: a doorbell per frame and no BQL, to measure what batching gains",
        },
    },
}
