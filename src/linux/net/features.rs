// SPDX-License-Identifier: GPL-2.0

//! Offloads of a net device (`netdev_features_t`).

use crate::linux::bindings;

kernel::impl_flags!(
    /// A set of offloads (`netdev_features_t`), as `ethtool -k` shows them.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub(crate) struct Features(u64);

    /// One offload (`NETIF_F_*`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) enum Feature {
        /// `scatter-gather`.
        Sg = 1 << bindings::NETIF_F_SG_BIT,
        /// `tx-checksum-ipv4`.
        IpCsum = 1 << bindings::NETIF_F_IP_CSUM_BIT,
        /// `tx-checksum-ip-generic`.
        HwCsum = 1 << bindings::NETIF_F_HW_CSUM_BIT,
        /// `tx-checksum-ipv6`.
        Ipv6Csum = 1 << bindings::NETIF_F_IPV6_CSUM_BIT,
        /// `rx-checksum`.
        RxCsum = 1 << bindings::NETIF_F_RXCSUM_BIT,
        /// `tx-tcp-segmentation`.
        Tso = 1 << bindings::NETIF_F_TSO_BIT,
        /// `tx-tcp6-segmentation`.
        Tso6 = 1 << bindings::NETIF_F_TSO6_BIT,
        /// `tx-udp-segmentation`.
        GsoUdpL4 = 1 << bindings::NETIF_F_GSO_UDP_L4_BIT,
        /// `tx-udp_tnl-segmentation`.
        GsoUdpTunnel = 1 << bindings::NETIF_F_GSO_UDP_TUNNEL_BIT,
        /// `tx-udp_tnl-csum-segmentation`.
        GsoUdpTunnelCsum = 1 << bindings::NETIF_F_GSO_UDP_TUNNEL_CSUM_BIT,
        /// `tx-gre-segmentation`.
        GsoGre = 1 << bindings::NETIF_F_GSO_GRE_BIT,
        /// `tx-gre-csum-segmentation`.
        GsoGreCsum = 1 << bindings::NETIF_F_GSO_GRE_CSUM_BIT,
        /// `tx-ipxip4-segmentation`.
        GsoIpxip4 = 1 << bindings::NETIF_F_GSO_IPXIP4_BIT,
        /// `tx-ipxip6-segmentation`.
        GsoIpxip6 = 1 << bindings::NETIF_F_GSO_IPXIP6_BIT,
        /// `rx-gro-hw`.
        GroHw = 1 << bindings::NETIF_F_GRO_HW_BIT,
        /// `rx-vlan-offload`.
        HwVlanCtagRx = 1 << bindings::NETIF_F_HW_VLAN_CTAG_RX_BIT,
        /// `tx-vlan-offload`.
        HwVlanCtagTx = 1 << bindings::NETIF_F_HW_VLAN_CTAG_TX_BIT,
        /// `receive-hashing`.
        RxHash = 1 << bindings::NETIF_F_RXHASH_BIT,
        /// `ntuple-filters`.
        Ntuple = 1 << bindings::NETIF_F_NTUPLE_BIT,
        /// `loopback`.
        Loopback = 1 << bindings::NETIF_F_LOOPBACK_BIT,
        /// `hw-tc-offload`.
        HwTc = 1 << bindings::NETIF_F_HW_TC_BIT,
    }
);

impl Features {
    /// The features of a raw set this type can name (others dropped).
    pub(super) fn from_raw(raw: bindings::netdev_features_t) -> Self {
        Self(raw & Self::all_bits())
    }
}
