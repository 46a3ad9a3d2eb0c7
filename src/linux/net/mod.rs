// SPDX-License-Identifier: GPL-2.0

//! Networking: net devices and their operations, ethtool, NAPI, socket
//! buffers, page pools, receive-stream chunks, native XDP, queue
//! management, TX shapers, the RTNL and instance locks, upper/lower device links and
//! the netdevice notifier.

pub(crate) mod any_netdev;
pub(crate) mod bpf_offload;
pub(crate) mod dma_map;
pub(crate) mod ethtool;
pub(crate) mod ethtool_adapter;
pub(crate) mod features;
pub(crate) mod flower;
pub(crate) mod instance_lock;
pub(crate) mod napi;
pub(crate) mod netdev;
pub(crate) mod netdev_ops;
pub(crate) mod netdev_ref;
pub(crate) mod netmem;
pub(crate) mod page_pool;
pub(crate) mod queue_mgmt;
pub(crate) mod route;
pub(crate) mod rtnl;
pub(crate) mod rx_chunk;
pub(crate) mod shaper;
pub(crate) mod skbuff;
pub(crate) mod stats;
pub(crate) mod tstamp;
pub(crate) mod upper;
pub(crate) mod work;
pub(crate) mod xdp;
pub(crate) mod xsk;
