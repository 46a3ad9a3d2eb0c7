// SPDX-License-Identifier: GPL-2.0

//! The abstraction layer: safe wrappers over kernel interfaces that the
//! upstream `kernel` crate does not cover (yet). All of the module's
//! `unsafe` code lives here; driver logic above it is safe Rust.

pub(crate) mod bh;
pub(crate) mod debugfs_root;
pub(crate) mod dma_buf;
pub(crate) mod dma_device;
pub(crate) mod dma_map;
pub(crate) mod ethtool;
pub(crate) mod ib_device;
pub(crate) mod ib_verbs;
pub(crate) mod lower;
pub(crate) mod msix;
pub(crate) mod napi;
pub(crate) mod netdev;
pub(crate) mod page_pool;
pub(crate) mod pci_dma;
pub(crate) mod skb;
pub(crate) mod work;
