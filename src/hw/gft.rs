// SPDX-License-Identifier: GPL-2.0

//! The GFT (Generic Flow Table) interface: flow keys, header
//! transposition actions, the records the admin commands point at, and the
//! metadata header that travels with an exception packet (card to host)
//! and a reinjected one (host to card).
//!
//! Shared by the driver and the emulator like the rest of [`super`];
//! Documentation/rsnic/gft.rst describes the same in prose.

use super::{le16, le32, le64, put};

/// Length of the metadata header in front of an exception or reinjected
/// frame.
pub const META_LEN: usize = 128;
/// Length of an encoded [`FlowKey`].
pub const KEY_LEN: usize = 48;
/// Length of an encoded [`Action`].
pub const ACTION_LEN: usize = 112;
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

/// Which way a packet crosses the card.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Direction {
    /// From the host to the wire.
    Tx = 0,
    /// From the wire to the host.
    Rx = 1,
}

impl Direction {
    /// Decodes the wire value.
    pub fn from_raw(v: u8) -> Option<Self> {
        match v {
            0 => Some(Self::Tx),
            1 => Some(Self::Rx),
            _ => None,
        }
    }

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

/// An exact-match key: the (inner, if tunnelled) 5-tuple of a packet, on
/// a vport, in a direction, optionally under a tunnel id. IPv4 addresses
/// sit in the first 4 bytes of `src`/`dst`, the rest zero. ICMP has its
/// echo identifier in `sport` and `dport` zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FlowKey {
    /// Vport ([`HOST_VPORT`]).
    pub vport: u16,
    /// Direction.
    pub dir: Direction,
    /// VXLAN VNI or NVGRE VSID of the outer header, if tunnelled.
    pub tunnel: Option<u32>,
    /// 4 or 6.
    pub ip_version: u8,
    /// IP protocol.
    pub proto: u8,
    /// Source address.
    pub src: [u8; 16],
    /// Destination address.
    pub dst: [u8; 16],
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
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

    /// Encodes: vport (u16 at 0), direction (u8 at 2), IP version (3),
    /// protocol (4), has-tunnel (5), tunnel id (u32 at 8), source port (u16
    /// at 12), destination port (14), source address (16..32), destination
    /// (32..48).
    pub fn to_bytes(self) -> [u8; KEY_LEN] {
        let mut b = [0u8; KEY_LEN];
        put(&mut b, 0, &self.vport.to_le_bytes());
        b[2] = self.dir as u8;
        b[3] = self.ip_version;
        b[4] = self.proto;
        b[5] = u8::from(self.tunnel.is_some());
        put(&mut b, 8, &self.tunnel.unwrap_or(0).to_le_bytes());
        put(&mut b, 12, &self.sport.to_le_bytes());
        put(&mut b, 14, &self.dport.to_le_bytes());
        put(&mut b, 16, &self.src);
        put(&mut b, 32, &self.dst);
        b
    }

    /// Decodes; `None` for an unknown direction or IP version.
    pub fn from_bytes(b: &[u8]) -> Option<Self> {
        if b.len() < KEY_LEN || b[5] > 1 || !matches!(b[3], 4 | 6) {
            return None;
        }
        Some(Self {
            vport: le16(b, 0),
            dir: Direction::from_raw(b[2])?,
            ip_version: b[3],
            proto: b[4],
            tunnel: (b[5] == 1).then(|| le32(b, 8)),
            sport: le16(b, 12),
            dport: le16(b, 14),
            src: b[16..32].try_into().ok()?,
            dst: b[32..48].try_into().ok()?,
        })
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
    /// Every bit defined.
    pub const ALL: u32 = (1 << 12) - 1;
    /// Any NAT rewrite.
    pub const NAT: u32 = NAT_SRC_IP | NAT_DST_IP | NAT_SRC_PORT | NAT_DST_PORT;
}

/// Outer headers an encap action adds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Encap {
    /// Outer source MAC.
    pub smac: [u8; 6],
    /// Outer destination MAC.
    pub dmac: [u8; 6],
    /// Outer source address (IPv4 in the first 4 bytes).
    pub sip: [u8; 16],
    /// Outer destination address.
    pub dip: [u8; 16],
    /// VXLAN VNI or NVGRE VSID (24 bits).
    pub id: u32,
}

/// A header transposition: what a flow does to each packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Action {
    /// [`action`] bits.
    pub flags: u32,
    /// Tag control information [`action::VLAN_PUSH`] inserts.
    pub vlan_tci: u16,
    /// Meter rate in bits per second.
    pub meter_rate: u64,
    /// Meter burst in bytes.
    pub meter_burst: u32,
    /// Outer headers of an encap.
    pub encap: Encap,
    /// New source address (same family as the packet).
    pub nat_sip: [u8; 16],
    /// New destination address.
    pub nat_dip: [u8; 16],
    /// New source port.
    pub nat_sport: u16,
    /// New destination port.
    pub nat_dport: u16,
}

impl Action {
    /// Encodes: flags (u32 at 0), VLAN TCI (u16 at 4), NAT ports (u16 at 6
    /// and 8), VNI/VSID (u32 at 12), meter rate (u64 at 16), burst (u32 at
    /// 24), outer MACs (28, 34), outer addresses (40, 56), NAT addresses
    /// (72, 88); 104..112 reserved.
    pub fn to_bytes(self) -> [u8; ACTION_LEN] {
        let mut b = [0u8; ACTION_LEN];
        put(&mut b, 0, &self.flags.to_le_bytes());
        put(&mut b, 4, &self.vlan_tci.to_le_bytes());
        put(&mut b, 6, &self.nat_sport.to_le_bytes());
        put(&mut b, 8, &self.nat_dport.to_le_bytes());
        put(&mut b, 12, &self.encap.id.to_le_bytes());
        put(&mut b, 16, &self.meter_rate.to_le_bytes());
        put(&mut b, 24, &self.meter_burst.to_le_bytes());
        put(&mut b, 28, &self.encap.smac);
        put(&mut b, 34, &self.encap.dmac);
        put(&mut b, 40, &self.encap.sip);
        put(&mut b, 56, &self.encap.dip);
        put(&mut b, 72, &self.nat_sip);
        put(&mut b, 88, &self.nat_dip);
        b
    }

    /// Decodes; `None` for unknown flags, both encaps at once, a VNI over
    /// 24 bits, or a meter without a rate.
    pub fn from_bytes(b: &[u8]) -> Option<Self> {
        if b.len() < ACTION_LEN {
            return None;
        }
        let a = Self {
            flags: le32(b, 0),
            vlan_tci: le16(b, 4),
            nat_sport: le16(b, 6),
            nat_dport: le16(b, 8),
            encap: Encap {
                id: le32(b, 12),
                smac: b[28..34].try_into().ok()?,
                dmac: b[34..40].try_into().ok()?,
                sip: b[40..56].try_into().ok()?,
                dip: b[56..72].try_into().ok()?,
            },
            meter_rate: le64(b, 16),
            meter_burst: le32(b, 24),
            nat_sip: b[72..88].try_into().ok()?,
            nat_dip: b[88..104].try_into().ok()?,
        };
        a.is_valid().then_some(a)
    }

    /// Whether the card can carry this action out.
    pub fn is_valid(&self) -> bool {
        let both_encaps = action::VXLAN_ENCAP | action::NVGRE_ENCAP;
        self.flags & !action::ALL == 0
            && self.flags & both_encaps != both_encaps
            && self.encap.id < 1 << 24
            && (self.flags & action::METER == 0 || self.meter_rate > 0)
    }
}

/// Why the card sent a packet to the host ([`ExceptionMeta::reason`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum ExceptionReason {
    /// No flow matched.
    Miss = 1,
    /// The matching flow has an older generation than the card's current
    /// one: policy changed since it was installed.
    Stale = 2,
    /// A copy of a TCP SYN, FIN or RST that hit a flow (and was forwarded).
    TcpControl = 3,
    /// Flow lookup is off (`hw-tc-offload` off): every packet comes here.
    NoCache = 4,
}

impl ExceptionReason {
    /// Decodes the wire value.
    pub fn from_raw(v: u8) -> Option<Self> {
        match v {
            1 => Some(Self::Miss),
            2 => Some(Self::Stale),
            3 => Some(Self::TcpControl),
            4 => Some(Self::NoCache),
            _ => None,
        }
    }
}

/// The header in front of an exception frame (card to host): reason (u8 at
/// 0), TCP flags of the packet (u8 at 1, 0 if not TCP), the key the card
/// looked up (at 8), the generation of the stale flow (u32 at 56).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExceptionMeta {
    /// Why.
    pub reason: ExceptionReason,
    /// TCP flags byte (FIN 0x01, SYN 0x02, RST 0x04, ...).
    pub tcp_flags: u8,
    /// The packet's key.
    pub key: FlowKey,
    /// [`ExceptionReason::Stale`]: the flow's generation.
    pub generation: u32,
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

impl ExceptionMeta {
    /// Encodes into the front of a frame buffer.
    pub fn to_bytes(self) -> [u8; META_LEN] {
        let mut b = [0u8; META_LEN];
        b[0] = self.reason as u8;
        b[1] = self.tcp_flags;
        put(&mut b, 8, &self.key.to_bytes());
        put(&mut b, 56, &self.generation.to_le_bytes());
        b
    }

    /// Decodes; `None` if it is not a valid header.
    pub fn from_bytes(b: &[u8]) -> Option<Self> {
        if b.len() < META_LEN {
            return None;
        }
        Some(Self {
            reason: ExceptionReason::from_raw(b[0])?,
            tcp_flags: b[1],
            key: FlowKey::from_bytes(&b[8..8 + KEY_LEN])?,
            generation: le32(b, 56),
        })
    }
}

/// The header in front of a reinjected frame (host to card, on a TX
/// descriptor with [`super::TxDesc::GFT_REINJECT`]): direction (u8 at 0),
/// the action to apply once (at 16). The card does not look the packet
/// up; it applies the action and sends the result on its way (to the wire
/// for [`Direction::Tx`], to the host for [`Direction::Rx`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReinjectMeta {
    /// Where the packet goes after the action.
    pub dir: Direction,
    /// What to do to it.
    pub action: Action,
}

impl ReinjectMeta {
    /// Encodes into the front of a frame buffer.
    pub fn to_bytes(self) -> [u8; META_LEN] {
        let mut b = [0u8; META_LEN];
        b[0] = self.dir as u8;
        put(&mut b, 16, &self.action.to_bytes());
        b
    }

    /// Decodes; `None` if it is not a valid header.
    pub fn from_bytes(b: &[u8]) -> Option<Self> {
        if b.len() < META_LEN {
            return None;
        }
        Some(Self {
            dir: Direction::from_raw(b[0])?,
            action: Action::from_bytes(&b[16..16 + ACTION_LEN])?,
        })
    }
}

/// One flow as [`super::AdminCmd::GftInstall`] gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowRecord {
    /// Key.
    pub key: FlowKey,
    /// Policy generation the flow was computed under.
    pub generation: u32,
    /// Action.
    pub action: Action,
}

impl FlowRecord {
    /// Encodes the install block.
    pub fn to_bytes(self) -> [u8; FLOW_RECORD_LEN] {
        let mut b = [0u8; FLOW_RECORD_LEN];
        put(&mut b, 0, &self.key.to_bytes());
        put(&mut b, 48, &self.generation.to_le_bytes());
        put(&mut b, 64, &self.action.to_bytes());
        b
    }

    /// Decodes an install block.
    pub fn from_bytes(b: &[u8]) -> Option<Self> {
        if b.len() < FLOW_RECORD_LEN {
            return None;
        }
        Some(Self {
            key: FlowKey::from_bytes(&b[..KEY_LEN])?,
            generation: le32(b, 48),
            action: Action::from_bytes(&b[64..64 + ACTION_LEN])?,
        })
    }
}

/// One flow as the card reports it in a dump: key (at 0), generation (u32
/// at 48), idle milliseconds (u32 at 52), packets (u64 at 56), bytes (64),
/// packets the meter dropped (72), action flags (u32 at 80).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowCounters {
    /// Key.
    pub key: FlowKey,
    /// Generation.
    pub generation: u32,
    /// Milliseconds since the last hit (or the install).
    pub idle_ms: u32,
    /// Packets that hit.
    pub packets: u64,
    /// Their bytes (as received, before the action).
    pub bytes: u64,
    /// Packets the meter dropped.
    pub meter_drops: u64,
    /// The flow's action flags.
    pub action_flags: u32,
}

impl FlowCounters {
    /// Encodes a dump record.
    pub fn to_bytes(self) -> [u8; DUMP_RECORD_LEN] {
        let mut b = [0u8; DUMP_RECORD_LEN];
        put(&mut b, 0, &self.key.to_bytes());
        put(&mut b, 48, &self.generation.to_le_bytes());
        put(&mut b, 52, &self.idle_ms.to_le_bytes());
        put(&mut b, 56, &self.packets.to_le_bytes());
        put(&mut b, 64, &self.bytes.to_le_bytes());
        put(&mut b, 72, &self.meter_drops.to_le_bytes());
        put(&mut b, 80, &self.action_flags.to_le_bytes());
        b
    }

    /// Decodes a dump record.
    pub fn from_bytes(b: &[u8]) -> Option<Self> {
        if b.len() < DUMP_RECORD_LEN {
            return None;
        }
        Some(Self {
            key: FlowKey::from_bytes(&b[..KEY_LEN])?,
            generation: le32(b, 48),
            idle_ms: le32(b, 52),
            packets: le64(b, 56),
            bytes: le64(b, 64),
            meter_drops: le64(b, 72),
            action_flags: le32(b, 80),
        })
    }
}

/// Result of [`super::AdminCmd::GftQueryStats`]: the card's own counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CardGftStats {
    /// Flows held.
    pub flows: u32,
    /// Packets looked up.
    pub lookups: u64,
    /// Lookups that found a current flow.
    pub hits: u64,
    /// Lookups that found nothing.
    pub misses: u64,
    /// Packets sent to the host's exception queue (misses, stale hits,
    /// TCP control copies, uncached).
    pub exceptions: u64,
    /// TCP control copies among them.
    pub tcp_duplicates: u64,
    /// Packets meters dropped.
    pub meter_drops: u64,
}

impl CardGftStats {
    /// Writes the result into an admin entry.
    pub fn write_result(&self, b: &mut [u8; super::AQ_ENTRY_SIZE]) {
        put(b, 8, &self.lookups.to_le_bytes());
        put(b, 16, &self.hits.to_le_bytes());
        put(b, 24, &self.misses.to_le_bytes());
        put(b, 32, &self.exceptions.to_le_bytes());
        put(b, 40, &self.tcp_duplicates.to_le_bytes());
        put(b, 48, &self.meter_drops.to_le_bytes());
        put(b, 56, &self.flows.to_le_bytes());
    }

    /// Reads the result from a completed admin entry.
    pub fn read_result(b: &[u8; super::AQ_ENTRY_SIZE]) -> Self {
        Self {
            lookups: le64(b, 8),
            hits: le64(b, 16),
            misses: le64(b, 24),
            exceptions: le64(b, 32),
            tcp_duplicates: le64(b, 40),
            meter_drops: le64(b, 48),
            flows: le32(b, 56),
        }
    }
}
