// SPDX-License-Identifier: GPL-2.0

//! A net device's counters: the link totals of `ip -s link`
//! (`rtnl_link_stats64`) and the per-queue stats of the netdev netlink
//! family (`netdev_queue_stats_rx/tx`).

use crate::linux::bindings;

/// Link counters reported to `ip -s link` (`struct rtnl_link_stats64`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LinkStats {
    /// Packets received.
    pub(crate) rx_packets: u64,
    /// Packets sent.
    pub(crate) tx_packets: u64,
    /// Bytes received.
    pub(crate) rx_bytes: u64,
    /// Bytes sent.
    pub(crate) tx_bytes: u64,
    /// Receive errors.
    pub(crate) rx_errors: u64,
    /// Of those, frames with a bad frame check sequence.
    pub(crate) rx_crc_errors: u64,
    /// Transmit errors.
    pub(crate) tx_errors: u64,
    /// Received packets dropped.
    pub(crate) rx_dropped: u64,
    /// Transmit packets dropped.
    pub(crate) tx_dropped: u64,
}

impl core::ops::AddAssign<&LinkStats> for LinkStats {
    fn add_assign(&mut self, more: &LinkStats) {
        self.rx_packets += more.rx_packets;
        self.tx_packets += more.tx_packets;
        self.rx_bytes += more.rx_bytes;
        self.tx_bytes += more.tx_bytes;
        self.rx_errors += more.rx_errors;
        self.rx_crc_errors += more.rx_crc_errors;
        self.tx_errors += more.tx_errors;
        self.rx_dropped += more.rx_dropped;
        self.tx_dropped += more.tx_dropped;
    }
}

/// Declares a queue-stats struct of the netdev netlink family: each
/// counter an `Option` (`None`: the driver does not count it, and the
/// core leaves it out), written into the C struct of the same fields.
macro_rules! queue_stats {
    ($(#[$meta:meta])* $name:ident: $c:ident { $( $(#[$fmeta:meta])* $field:ident, )* }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, Default)]
        pub(crate) struct $name {
            $( $(#[$fmeta])* pub(crate) $field: Option<u64>, )*
        }

        impl $name {
            /// Writes the counters this driver counts into the C struct.
            pub(super) fn write(&self, out: &mut bindings::$c) {
                $( if let Some(v) = self.$field { out.$field = v; } )*
            }
        }

        impl core::ops::AddAssign<&$name> for $name {
            /// Adds counter by counter; a counter one side does not count
            /// counts as zero there.
            fn add_assign(&mut self, more: &$name) {
                $(
                    if let Some(v) = more.$field {
                        self.$field = Some(self.$field.unwrap_or(0) + v);
                    }
                )*
            }
        }
    };
}

queue_stats! {
    /// Counters of an RX queue (`struct netdev_queue_stats_rx`).
    RxQueueStats: netdev_queue_stats_rx {
        /// Bytes.
        bytes,
        /// Packets.
        packets,
        /// Buffer allocations that failed.
        alloc_fail,
        /// Packets the device dropped.
        hw_drops,
        /// Of those, for lack of buffers.
        hw_drop_overruns,
        /// Packets with `CHECKSUM_COMPLETE`.
        csum_complete,
        /// Packets with `CHECKSUM_UNNECESSARY`.
        csum_unnecessary,
        /// Packets the device did not checksum.
        csum_none,
        /// Packets with a bad checksum.
        csum_bad,
        /// Packets the device coalesced (hardware GRO).
        hw_gro_packets,
        /// Their bytes.
        hw_gro_bytes,
        /// Wire packets in them.
        hw_gro_wire_packets,
        /// Wire bytes in them.
        hw_gro_wire_bytes,
        /// Packets dropped by rate limits.
        hw_drop_ratelimits,
    }
}

queue_stats! {
    /// Counters of a TX queue (`struct netdev_queue_stats_tx`).
    TxQueueStats: netdev_queue_stats_tx {
        /// Bytes.
        bytes,
        /// Packets.
        packets,
        /// Packets the device dropped.
        hw_drops,
        /// Of those, for errors.
        hw_drop_errors,
        /// Packets sent without a checksum offload.
        csum_none,
        /// Packets that needed one.
        needs_csum,
        /// Segmentation (GSO) packets handed to the device.
        hw_gso_packets,
        /// Their bytes.
        hw_gso_bytes,
        /// Wire packets they became.
        hw_gso_wire_packets,
        /// Wire bytes they became.
        hw_gso_wire_bytes,
        /// Packets dropped by rate limits.
        hw_drop_ratelimits,
        /// Times the queue was stopped.
        stop,
        /// Times it was woken.
        wake,
    }
}
