// SPDX-License-Identifier: GPL-2.0

//! The GFT (Generic Flow Table) interface: flow keys, header
//! transposition actions, the records the admin commands point at, and the
//! metadata header that travels with an exception packet (card to host)
//! and a reinjected one (host to card).
//!
//! Shared by the driver and the emulator like the rest of [`super`];
//! Documentation/rsnic/gft.rst describes the same in prose.

use super::layout::{CheckedField, Field};

/// Length of the metadata header in front of an exception or reinjected
/// frame.
pub const META_LEN: usize = 128;
/// Length of an encoded [`FlowKey`].
pub const KEY_LEN: usize = 48;
/// Length of an encoded [`Action`].
pub const ACTION_LEN: usize = 112;
/// Most records one [`super::AdminCmd::GftInstallBatch`] carries.
pub const MAX_INSTALL_BATCH: u32 = 64;
/// How long a missed flow stays pending (only its first packet is an
/// exception) unless installed sooner.
pub const PENDING_MS: u32 = 20;
/// Most pending marks the card holds; past that a miss is sent unmarked.
pub const MAX_PENDING: u32 = 4096;
/// Exceptions a second each remote address may send the host, until set
/// otherwise.
pub const DEFAULT_EXCEPTION_RATE: u32 = 50_000;
/// Exceptions each remote address may send at once, until set otherwise.
pub const DEFAULT_EXCEPTION_BURST: u32 = 1024;
/// Most a burst may be set to.
pub const MAX_EXCEPTION_BURST: u32 = 65_536;
/// Length of the block [`super::AdminCmd::GftInstall`] points at: key at
/// 0, generation at 48, action at 64.
pub const FLOW_RECORD_LEN: usize = 176;
/// Length of one record [`super::AdminCmd::GftDump`] writes.
pub const DUMP_RECORD_LEN: usize = 96;
/// Flows the table holds unless configured otherwise.
pub const DEFAULT_MAX_FLOWS: u32 = 65536;
/// Largest table the card supports.
pub const MAX_FLOWS_LIMIT: u32 = 1 << 22;
/// Most bytes encapsulation adds in front of a frame (Ethernet, 802.1Q,
/// IPv6, UDP, VXLAN).
pub const MAX_ENCAP_LEN: u32 = 14 + 4 + 40 + 8 + 8;
/// UDP destination port of VXLAN.
pub const VXLAN_PORT: u16 = 4789;
/// The card's vport of the host it serves (this card serves one).
pub const HOST_VPORT: u16 = 0;

/// Bits of [`super::AdminCmd::GftConfig`].
pub mod config {
    /// Packets go through the GFT (else it is bypassed: a plain NIC).
    pub const ENABLE: u32 = 1 << 0;
    /// Look flows up (`hw-tc-offload` on); else every packet is an
    /// exception and policy runs in host software only.
    pub const CACHE: u32 = 1 << 1;
}

wire_enum! {
    /// Which way a packet crosses the card.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
    pub enum Direction: u8 {
        /// From the host to the wire.
        Tx = 0,
        /// From the wire to the host.
        Rx = 1,
    }
}

impl Direction {
    /// The other way.
    pub fn reverse(self) -> Self {
        match self {
            Self::Tx => Self::Rx,
            Self::Rx => Self::Tx,
        }
    }

    /// `tx` or `rx`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Tx => "tx",
            Self::Rx => "rx",
        }
    }
}

/// IP protocol numbers the GFT knows.
pub mod proto {
    /// ICMP.
    pub const ICMP: u8 = 1;
    /// TCP.
    pub const TCP: u8 = 6;
    /// UDP.
    pub const UDP: u8 = 17;
    /// GRE (NVGRE's carrier).
    pub const GRE: u8 = 47;
    /// ICMPv6.
    pub const ICMPV6: u8 = 58;
}

/// A tunnel id on the wire: bit 31 set if there is one, the 24-bit VXLAN
/// VNI or NVGRE VSID in bits 23:0, bits 30:24 zero.
impl CheckedField for Option<u32> {
    const LEN: usize = 4;

    fn put(&self, out: &mut [u8]) {
        Field::put(&self.map_or(0, |id| (1 << 31) | (id & 0xff_ffff)), out);
    }

    fn get(b: &[u8]) -> Option<Self> {
        let v = <u32 as Field>::get(b);
        match v >> 24 {
            0 if v == 0 => Some(None),
            0x80 => Some(Some(v & 0xff_ffff)),
            _ => None,
        }
    }
}

/// Whether a decoded key is one the card can hold: IPv4 or IPv6.
fn key_is_valid(k: &FlowKey) -> bool {
    matches!(k.ip_version, 4 | 6)
}

wire_struct! {
    /// An exact-match key: the (inner, if tunnelled) 5-tuple of a packet,
    /// on a vport, in a direction, optionally under a tunnel id. IPv4
    /// addresses sit in the first 4 bytes of `src`/`dst`, the rest zero.
    /// ICMP has its echo identifier in `sport` and `dport` zero.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
    pub struct FlowKey[KEY_LEN] checked_by key_is_valid {
        /// Vport ([`HOST_VPORT`]).
        pub vport @ 0: u16,
        /// Direction.
        pub dir @ 2: Direction,
        /// VXLAN VNI or NVGRE VSID of the outer header, if tunnelled.
        pub tunnel @ 8: Option<u32>,
        /// 4 or 6.
        pub ip_version @ 3: u8,
        /// IP protocol.
        pub proto @ 4: u8,
        /// Source address.
        pub src @ 16: [u8; 16],
        /// Destination address.
        pub dst @ 32: [u8; 16],
        /// Source port.
        pub sport @ 12: u16,
        /// Destination port.
        pub dport @ 14: u16,
    }
}

impl FlowKey {
    /// The key of the same conversation's packets the other way. ICMP's
    /// echo identifier stays where it is (requests and replies carry it
    /// alike).
    pub fn reverse(&self) -> Self {
        let icmp = matches!(self.proto, proto::ICMP | proto::ICMPV6);
        let (sport, dport) = if icmp {
            (self.sport, self.dport)
        } else {
            (self.dport, self.sport)
        };
        Self {
            dir: self.dir.reverse(),
            src: self.dst,
            dst: self.src,
            sport,
            dport,
            ..*self
        }
    }
}

/// Bits of [`Action::flags`]: what a flow does to its packets, applied in
/// this order: meter, decap, VLAN pop, NAT, VLAN push, encap. No bit:
/// forward unchanged.
pub mod action {
    /// Discard.
    pub const DROP: u32 = 1 << 0;
    /// Remove the outer headers (VXLAN or NVGRE): the inner frame goes on.
    pub const DECAP: u32 = 1 << 1;
    /// Remove the 802.1Q tag.
    pub const VLAN_POP: u32 = 1 << 2;
    /// Rewrite the source address.
    pub const NAT_SRC_IP: u32 = 1 << 3;
    /// Rewrite the destination address.
    pub const NAT_DST_IP: u32 = 1 << 4;
    /// Rewrite the source port (TCP, UDP).
    pub const NAT_SRC_PORT: u32 = 1 << 5;
    /// Rewrite the destination port (TCP, UDP).
    pub const NAT_DST_PORT: u32 = 1 << 6;
    /// Insert an 802.1Q tag.
    pub const VLAN_PUSH: u32 = 1 << 7;
    /// Encapsulate in VXLAN (UDP source port from the inner 5-tuple hash).
    pub const VXLAN_ENCAP: u32 = 1 << 8;
    /// Encapsulate in NVGRE.
    pub const NVGRE_ENCAP: u32 = 1 << 9;
    /// The outer header of an encap is IPv6 (else IPv4).
    pub const ENCAP_IPV6: u32 = 1 << 10;
    /// Police with a token bucket; packets over the rate are dropped.
    pub const METER: u32 = 1 << 11;
    /// Switchdev mode: send the packet out of switch port `port` (the
    /// wire, or a VF) instead of on its way (tc's mirred redirect).
    pub const FORWARD: u32 = 1 << 12;
    /// Every bit defined.
    pub const ALL: u32 = (1 << 13) - 1;
    /// Any NAT rewrite.
    pub const NAT: u32 = NAT_SRC_IP | NAT_DST_IP | NAT_SRC_PORT | NAT_DST_PORT;
}

wire_struct! {
    /// Outer headers an encap action adds.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Encap[48] {
        /// Outer source MAC.
        pub smac @ 4: [u8; 6],
        /// Outer destination MAC.
        pub dmac @ 10: [u8; 6],
        /// Outer source address (IPv4 in the first 4 bytes).
        pub sip @ 16: [u8; 16],
        /// Outer destination address.
        pub dip @ 32: [u8; 16],
        /// VXLAN VNI or NVGRE VSID (24 bits).
        pub id @ 0: u32,
    }
}

wire_struct! {
    /// A header transposition: what a flow does to each packet. Decoding
    /// refuses unknown flags, both encaps at once, a VNI over 24 bits, or
    /// a meter without a rate.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Action[ACTION_LEN] checked_by Action::is_valid {
        /// [`action`] bits.
        pub flags @ 0: u32,
        /// Tag control information [`action::VLAN_PUSH`] inserts.
        pub vlan_tci @ 4: u16,
        /// Meter rate in bits per second.
        pub meter_rate @ 16: u64,
        /// Meter burst in bytes.
        pub meter_burst @ 12: u32,
        /// Outer headers of an encap.
        pub encap @ 24: Encap,
        /// New source address (same family as the packet).
        pub nat_sip @ 72: [u8; 16],
        /// New destination address.
        pub nat_dip @ 88: [u8; 16],
        /// New source port.
        pub nat_sport @ 6: u16,
        /// New destination port.
        pub nat_dport @ 8: u16,
        /// [`action::FORWARD`]: the switch port it goes out of
        /// ([`super::gft_rule::port`]).
        pub port @ 10: u16,
    }
}

impl Action {
    /// Whether the card can carry this action out.
    pub fn is_valid(&self) -> bool {
        let both_encaps = action::VXLAN_ENCAP | action::NVGRE_ENCAP;
        self.flags & !action::ALL == 0
            && self.flags & both_encaps != both_encaps
            && self.encap.id < 1 << 24
            && (self.flags & action::METER == 0 || self.meter_rate > 0)
            && (self.flags & action::FORWARD == 0
                || matches!(
                    self.port,
                    super::gft_rule::port::UPLINK | super::gft_rule::port::VF0
                ))
    }
}

wire_enum! {
    /// Why the card sent a packet to the host ([`ExceptionMeta::reason`]).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum ExceptionReason: u8 {
        /// No flow matched.
        Miss = 1,
        /// The matching flow has an older generation than the card's
        /// current one: policy changed since it was installed.
        Stale = 2,
        /// A copy of a TCP SYN, FIN or RST that hit a flow (and was
        /// forwarded).
        TcpControl = 3,
        /// Flow lookup is off (`hw-tc-offload` off): every packet comes
        /// here.
        NoCache = 4,
        /// Switchdev mode: a packet from a VF's port that no rule
        /// forwarded, for the port's representor ([`ExceptionMeta::port`]).
        /// No key (all zero but `ip_version` 4: the packet need not be
        /// IP); the card sends every such packet.
        PortMiss = 5,
    }
}

wire_struct! {
    /// The header in front of an exception frame (card to host).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct ExceptionMeta[META_LEN] checked {
        /// Why.
        pub reason @ 0: ExceptionReason,
        /// TCP flags byte (FIN 0x01, SYN 0x02, RST 0x04, ...), 0 if not TCP.
        pub tcp_flags @ 1: u8,
        /// The packet's key.
        pub key @ 8: FlowKey,
        /// [`ExceptionReason::Stale`]: the flow's generation.
        pub generation @ 56: u32,
        /// [`ExceptionReason::PortMiss`]: the switch port it came in on.
        pub port @ 60: u16,
    }
}

/// TCP flags the GFT looks at.
pub mod tcp_flags {
    /// FIN.
    pub const FIN: u8 = 0x01;
    /// SYN.
    pub const SYN: u8 = 0x02;
    /// RST.
    pub const RST: u8 = 0x04;
    /// The ones that hit a flow and are still copied to the host.
    pub const CONTROL: u8 = FIN | SYN | RST;
}

wire_struct! {
    /// The header in front of a reinjected frame (host to card, on a TX
    /// descriptor with [`super::TxDesc::GFT_REINJECT`]). The card does not
    /// look the packet up; it applies the action and sends the result on
    /// its way (to the wire for [`Direction::Tx`], to the host for
    /// [`Direction::Rx`]).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct ReinjectMeta[META_LEN] checked {
        /// Where the packet goes after the action.
        pub dir @ 0: Direction,
        /// What to do to it.
        pub action @ 16: Action,
    }
}

wire_struct! {
    /// One flow as [`super::AdminCmd::GftInstall`] gives it.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct FlowRecord[FLOW_RECORD_LEN] checked {
        /// Key.
        pub key @ 0: FlowKey,
        /// Policy generation the flow was computed under.
        pub generation @ 48: u32,
        /// Action.
        pub action @ 64: Action,
    }
}

wire_struct! {
    /// One flow as the card reports it in a dump.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct FlowCounters[DUMP_RECORD_LEN] checked {
        /// Key.
        pub key @ 0: FlowKey,
        /// Generation.
        pub generation @ 48: u32,
        /// Milliseconds since the last hit (or the install).
        pub idle_ms @ 52: u32,
        /// Packets that hit.
        pub packets @ 56: u64,
        /// Their bytes (as received, before the action).
        pub bytes @ 64: u64,
        /// Packets the meter dropped.
        pub meter_drops @ 72: u64,
        /// The flow's action flags.
        pub action_flags @ 80: u32,
    }
}

admin_result! {
    /// Result of [`super::AdminCmd::GftQueryStats`]: the card's own counts.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct CardGftStats {
        /// Packets looked up.
        pub lookups @ 8: u64,
        /// Lookups that found a current flow.
        pub hits @ 16: u64,
        /// Lookups that found nothing.
        pub misses @ 24: u64,
        /// Packets sent to the host's exception queue (misses, stale hits,
        /// TCP control copies, uncached).
        pub exceptions @ 32: u64,
        /// TCP control copies among them.
        pub tcp_duplicates @ 40: u64,
        /// Packets meters dropped.
        pub meter_drops @ 48: u64,
        /// Flows held.
        pub flows @ 56: u32,
    }
}

admin_result! {
    /// Result of [`super::AdminCmd::GftQueryExceptionStats`]: how the card
    /// kept its exception path from flooding the host.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct CardExceptionStats {
        /// Misses sent to the host and marked pending: later packets of
        /// the flow are not sent again until it is installed or the mark
        /// expires ([`PENDING_MS`]).
        pub pending_marked @ 8: u64,
        /// Packets of a pending flow, dropped while its install was under
        /// way.
        pub pending_drops @ 16: u64,
        /// Pending marks held now.
        pub pending @ 24: u32,
        /// Exceptions dropped because their remote address was over its
        /// rate ([`super::AdminCmd::GftSetExceptionRate`]).
        pub rate_drops @ 32: u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tunnel_ids_and_keys() {
        let mut key = FlowKey {
            vport: HOST_VPORT,
            dir: Direction::Rx,
            ip_version: 4,
            proto: proto::UDP,
            tunnel: Some(0x12_3456),
            sport: 1,
            dport: 2,
            src: [1; 16],
            dst: [2; 16],
        };
        let b = key.to_bytes();
        assert_eq!(&b[8..12], &[0x56, 0x34, 0x12, 0x80]);
        assert_eq!(FlowKey::from_bytes(&b), Some(key));
        key.tunnel = None;
        assert_eq!(FlowKey::from_bytes(&key.to_bytes()), Some(key));
        let mut bad = b;
        bad[11] = 0x81;
        assert_eq!(FlowKey::from_bytes(&bad), None);
        let mut bad = b;
        bad[3] = 5;
        assert_eq!(FlowKey::from_bytes(&bad), None);
        let mut bad = b;
        bad[2] = 2;
        assert_eq!(FlowKey::from_bytes(&bad), None);
    }

    #[test]
    fn actions_are_validated() {
        let a = Action {
            flags: action::VXLAN_ENCAP | action::METER,
            meter_rate: 1000,
            encap: Encap {
                id: 42,
                ..Encap::default()
            },
            ..Action::default()
        };
        assert_eq!(Action::from_bytes(&a.to_bytes()), Some(a));
        let both = Action {
            flags: action::VXLAN_ENCAP | action::NVGRE_ENCAP,
            ..a
        };
        assert_eq!(Action::from_bytes(&both.to_bytes()), None);
        let no_rate = Action { meter_rate: 0, ..a };
        assert_eq!(Action::from_bytes(&no_rate.to_bytes()), None);
    }
}
