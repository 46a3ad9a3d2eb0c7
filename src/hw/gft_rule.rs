// SPDX-License-Identifier: GPL-2.0

//! The GFT's masked rules: (match, mask, priority, action) as tc flower
//! and Open vSwitch's megaflows give them. A packet the exact-match
//! table misses is decided by the best rule it matches (lower priority
//! number first; equal ones in the order added); one no rule matches
//! takes the exception path. Each rule counts what it decided.
//!
//! A match is a [`MATCH_LEN`]-byte block of fields at fixed offsets
//! ([`field`], big-endian as on the wire); a mask is the same block with
//! the bits that matter set.

use super::gft::Action;

/// Length of a match (and of a mask).
pub const MATCH_LEN: usize = 112;
/// Length of the block [`super::AdminCmd::GftRuleAdd`] points at.
pub const RULE_RECORD_LEN: usize = 352;
/// Most rules the card holds.
pub const MAX_RULES: u32 = 16384;

/// Where each field sits in a match: (offset, length).
pub mod field {
    /// (offset, length) of a field.
    pub type Field = (usize, usize);
    /// The port the packet came in on ([`super::port`]).
    pub const IN_PORT: Field = (0, 2);
    /// EtherType (of the inner frame, if tunnelled).
    pub const ETH_TYPE: Field = (2, 2);
    /// 802.1Q TCI (priority and VLAN id), if tagged.
    pub const VLAN_TCI: Field = (4, 2);
    /// [`super::match_flags`].
    pub const FLAGS: Field = (6, 1);
    /// IP protocol.
    pub const IP_PROTO: Field = (7, 1);
    /// Destination MAC.
    pub const ETH_DST: Field = (8, 6);
    /// Source MAC.
    pub const ETH_SRC: Field = (14, 6);
    /// TCP flags (the low 12 bits of TCP's offset word).
    pub const TCP_FLAGS: Field = (20, 2);
    /// TCP/UDP source port; ICMP type in the low byte.
    pub const L4_SRC: Field = (22, 2);
    /// TCP/UDP destination port; ICMP code in the low byte.
    pub const L4_DST: Field = (24, 2);
    /// IP TOS / traffic class.
    pub const IP_TOS: Field = (26, 1);
    /// IP TTL / hop limit.
    pub const IP_TTL: Field = (27, 1);
    /// VXLAN VNI or NVGRE VSID of the outer header.
    pub const ENC_KEY_ID: Field = (28, 4);
    /// IP source address (IPv4 in the first 4 bytes).
    pub const IP_SRC: Field = (32, 16);
    /// IP destination address.
    pub const IP_DST: Field = (48, 16);
    /// Outer IP source address of a tunnelled packet.
    pub const ENC_IP_SRC: Field = (64, 16);
    /// Outer IP destination address.
    pub const ENC_IP_DST: Field = (80, 16);
    /// Outer UDP destination port (VXLAN).
    pub const ENC_DST_PORT: Field = (96, 2);
    /// Outer UDP source port.
    pub const ENC_SRC_PORT: Field = (98, 2);
    /// Outer IP TOS / traffic class.
    pub const ENC_IP_TOS: Field = (100, 1);
    /// Outer IP TTL / hop limit.
    pub const ENC_IP_TTL: Field = (101, 1);
}

/// Bits of [`field::FLAGS`].
pub mod match_flags {
    /// The frame carries an 802.1Q tag.
    pub const VLAN: u8 = 1 << 0;
    /// The frame is VXLAN or NVGRE: the plain fields are the inner
    /// packet's, the `ENC_*` ones the outer header's.
    pub const TUNNEL: u8 = 1 << 1;
    /// An IP fragment.
    pub const FRAGMENT: u8 = 1 << 2;
    /// A fragment other than the first (no L4 fields).
    pub const LATER_FRAGMENT: u8 = 1 << 3;
}

/// Ports of the card's switch, as [`field::IN_PORT`] names them.
pub mod port {
    /// The wire (the uplink).
    pub const UPLINK: u16 = 0;
    /// The PF.
    pub const PF: u16 = 1;
    /// VF `n` is `VF0 + n`.
    pub const VF0: u16 = 2;
    /// A VF of another make on the card's foreign-VF port (one at a
    /// time).
    pub const FOREIGN_VF: u16 = 0x100;
}

wire_struct! {
    /// One rule as [`super::AdminCmd::GftRuleAdd`] gives it. Decoding
    /// refuses an action the card cannot carry out.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct RuleRecord[RULE_RECORD_LEN] checked {
        /// The host's number for it (unique).
        pub id @ 0: u32,
        /// Lower wins.
        pub prio @ 4: u16,
        /// The match; bits outside the mask are ignored.
        pub key @ 8: [u8; MATCH_LEN],
        /// The bits of the match that count.
        pub mask @ 120: [u8; MATCH_LEN],
        /// What it does to the packets it decides; a meter is the
        /// rule's own, shared by all it decides.
        pub action @ 232: Action,
    }
}

admin_result! {
    /// Result of [`super::AdminCmd::GftRuleQuery`] and
    /// [`super::AdminCmd::GftRuleDelete`]: what a rule decided.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct RuleCounters {
        /// Packets.
        pub packets @ 8: u64,
        /// Bytes, as the packets arrived.
        pub bytes @ 16: u64,
        /// Milliseconds since its last packet; `u32::MAX` if none came.
        pub idle_ms @ 24: u32,
        /// Packets its meter dropped (counted in `packets` too).
        pub drops @ 32: u64,
    }
}
