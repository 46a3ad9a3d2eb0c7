// SPDX-License-Identifier: GPL-2.0

//! The NIC's queue pairs: descriptor and completion formats, the limits of
//! rings, frames and interrupt moderation, offloads, RSS and the RX
//! filter.

/// Most queue pairs of a function.
pub const MAX_QUEUE_PAIRS: u16 = 16;
/// Fewest descriptors in a TX or RX ring.
pub const MIN_RING_ENTRIES: u16 = 64;
/// Most descriptors in a TX or RX ring.
pub const MAX_RING_ENTRIES: u16 = 4096;
/// Smallest MTU the card accepts.
pub const MIN_MTU: u32 = 68;
/// Largest MTU the card accepts.
pub const MAX_MTU: u32 = 9000;
/// Largest frame on the wire: MTU plus Ethernet header and one VLAN tag.
pub const MAX_FRAME: u32 = MAX_MTU + 14 + 4;

/// Written with [`super::regs::DB_CQ_HEAD`]: raise the pair's vector at
/// the next completion (or at once if completions are already pending).
pub const CQ_ARM: u32 = 1 << 31;

wire_struct! {
    /// A TX descriptor: one buffer of an outgoing frame.
    ///
    /// A frame is one or more descriptors; the last has [`TxDesc::EOP`].
    /// The first carries the frame's offload requests.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct TxDesc[32] {
        /// Bus address of the buffer.
        pub addr @ 0: u64,
        /// Bytes in the buffer.
        pub len @ 8: u32,
        /// [`TxDesc::EOP`], [`TxDesc::CSUM`], [`TxDesc::TSO`],
        /// [`TxDesc::GFT_REINJECT`], [`TxDesc::USO`], [`TxDesc::TUNNEL`],
        /// [`TxDesc::OUTER_UDP_CSUM`].
        pub flags @ 12: u16,
        /// TSO, USO: payload bytes per segment.
        pub mss @ 14: u16,
        /// CSUM: offset of the checksummed area from the frame start.
        pub csum_start @ 16: u16,
        /// CSUM: where the checksum goes, from `csum_start`.
        pub csum_offset @ 18: u16,
        /// TSO, USO: bytes of headers (L2 + L3 + L4) replicated in each
        /// segment.
        pub hdr_len @ 20: u16,
        /// TSO with [`TxDesc::TUNNEL`]: offset of the inner IP header.
        pub inner_l3 @ 22: u16,
    }
}

impl TxDesc {
    /// Last buffer of the frame.
    pub const EOP: u16 = 1 << 0;
    /// Fill in the L4 checksum (`csum_start`, `csum_offset`).
    pub const CSUM: u16 = 1 << 1;
    /// Segment the TCP frame into `mss`-byte segments.
    pub const TSO: u16 = 1 << 2;
    /// First descriptor, PF only: the frame starts with a
    /// [`super::gft::META_LEN`]-byte [`super::gft::ReinjectMeta`] (a
    /// packet the host took as a GFT exception, sent back with the action
    /// to apply).
    pub const GFT_REINJECT: u16 = 1 << 3;
    /// Cut the UDP datagram into datagrams of `mss` payload bytes, each
    /// with its own UDP length and checksum (`SKB_GSO_UDP_L4`; with
    /// [`TxDesc::CSUM`], `csum_start` at the UDP header and `hdr_len`
    /// ending with it).
    pub const USO: u16 = 1 << 4;
    /// With [`TxDesc::TSO`]: the TCP frame is inside a tunnel (outer IPv4
    /// or IPv6, then UDP (VXLAN, GENEVE), GRE, or the inner IP header
    /// right away), its inner IP header at `inner_l3`, `csum_start` at the
    /// inner TCP header and `hdr_len` through it. Each segment's outer
    /// headers are fixed too: IP length (and IPv4 ID and header checksum),
    /// UDP length, and the GRE checksum if the GRE header has one.
    pub const TUNNEL: u16 = 1 << 5;
    /// With [`TxDesc::TUNNEL`]: fill each segment's outer UDP checksum
    /// (`SKB_GSO_UDP_TUNNEL_CSUM`); without, it is left zero.
    pub const OUTER_UDP_CSUM: u16 = 1 << 6;
    /// First descriptor of a frame: report the moment it left for the
    /// wire in its completion ([`Cqe::TSTAMP`]).
    pub const TSTAMP: u16 = 1 << 7;
}

wire_struct! {
    /// An RX descriptor: one empty buffer for the card to fill with a frame.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct RxDesc[16] {
        /// Bus address of the buffer.
        pub addr @ 0: u64,
        /// Buffer size in bytes.
        pub len @ 8: u32,
    }
}

wire_struct! {
    /// A completion: the card finished a TX frame or filled an RX buffer.
    ///
    /// The card writes entries in order and flips [`Cqe::PHASE`] each time
    /// it wraps around the queue, starting with the bit set; an entry is
    /// new when its phase matches the driver's expected phase. The flags
    /// word is at [`super::ENTRY_FLAGS_OFFSET`] and written last.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Cqe[32] {
        /// TX: ring index of the frame's last descriptor. RX: ring index of
        /// the filled buffer.
        pub index @ 0: u16,
        /// [`Cqe::PHASE`], [`Cqe::RX`], [`Cqe::CSUM_OK`], [`Cqe::HASH`],
        /// [`Cqe::HASH_L4`], [`Cqe::FCS_ERR`], [`Cqe::GFT_EXCEPTION`].
        pub flags @ 2: u16,
        /// RX: frame length in bytes.
        pub len @ 4: u32,
        /// RX: RSS hash of the frame, when [`Cqe::HASH`].
        pub hash @ 8: u32,
        /// RX, receive coalescing: TCP segments from the wire in the
        /// frame (0 or 1: not coalesced, at most [`GRO_MAX_SEGS`]). The
        /// same in every completion of the frame.
        pub segs @ 12: u8,
        /// RX, header/data split ([`Cqe::SPLIT`]): bytes of headers the
        /// card wrote into the buffer's header slot, at most
        /// [`HDS_HDR_SLOT`]; `len` counts only the payload in the buffer.
        pub hdr_len @ 13: u8,
        /// RX, receive coalescing: TCP payload bytes of the frame's first
        /// segment, the size to cut it into again.
        pub mss @ 14: u16,
        /// With [`Cqe::TSTAMP`]: the card's clock ([`super::regs::PTP_TIME_LO`])
        /// in nanoseconds when the frame arrived (RX) or left for the
        /// wire (TX).
        pub timestamp @ 16: u64,
    }
}

impl Cqe {
    /// Phase of the pass over the queue that wrote this entry.
    pub const PHASE: u16 = 1 << 15;
    /// An RX completion (else TX).
    pub const RX: u16 = 1 << 0;
    /// RX: the card verified the L4 checksum.
    pub const CSUM_OK: u16 = 1 << 1;
    /// RX: `hash` is valid.
    pub const HASH: u16 = 1 << 2;
    /// RX: the hash covers L4 ports (else only addresses).
    pub const HASH_L4: u16 = 1 << 3;
    /// RX: the frame arrived with a bad frame check sequence (corrupted on
    /// the wire); the driver drops it and counts a CRC error.
    pub const FCS_ERR: u16 = 1 << 4;
    /// RX: a GFT exception: the buffer starts with a
    /// [`super::gft::META_LEN`]-byte [`super::gft::ExceptionMeta`], the
    /// frame follows (`len` counts both). Only on the PF's queue pair 0.
    pub const GFT_EXCEPTION: u16 = 1 << 5;
    /// RX: the frame goes on in the next buffer of the ring, whose
    /// completion follows this one (receive coalescing only, with
    /// [`offload::GRO_HW`]; at most [`GRO_MAX_BUFFERS`] buffers a frame).
    /// The other flags, the hash, `segs` and `mss` are the same in every
    /// completion of the frame; `len` is this buffer's part.
    pub const MORE: u16 = 1 << 6;
    /// RX, first completion of a frame only: the card split it, its
    /// first `hdr_len` bytes (the headers up to the end of TCP or UDP)
    /// are in the header slot of this completion's ring index (the pair's
    /// [`super::QpConfig::hdr_ring`]), the rest in the buffer(s).
    pub const SPLIT: u16 = 1 << 7;
    /// `timestamp` is valid: an RX completion of a function that time
    /// stamps what it receives ([`super::AdminCmd::SetTimestamps`]), a TX
    /// completion of a frame sent with [`TxDesc::TSTAMP`].
    pub const TSTAMP: u16 = 1 << 8;
}

/// Longest RX buffer the driver gives the card ([`RxDesc::len`]) for a
/// memory provider's buffers (the card fills any length it is given;
/// page-pool buffers are one page).
pub const MAX_PROVIDER_BUF_LEN: u32 = 64 * 1024;

/// Bytes of one RX buffer's header slot: a frame whose headers are
/// longer is not split.
pub const HDS_HDR_SLOT: u16 = 256;
/// Largest header/data split threshold ([`super::QpConfig::hds_thresh`]).
pub const HDS_THRESH_MAX: u32 = MAX_FRAME;

/// Most RX buffers one coalesced frame fills.
pub const GRO_MAX_BUFFERS: u16 = 16;
/// Most TCP segments the card coalesces into one frame.
pub const GRO_MAX_SEGS: u16 = 64;
/// Longest coalesced frame: the largest IPv4 packet and its Ethernet
/// header.
pub const GRO_MAX_FRAME: u32 = 65535 + 14;

/// Most segments the card cuts one TSO frame into; it drops larger
/// requests (the driver tells the stack, which splits before).
pub const TSO_MAX_SEGS: u32 = 64;

/// Bits of [`super::AdminCmd::SetRxMode`].
pub mod rx_mode {
    /// Accept every frame.
    pub const PROMISC: u32 = 1 << 0;
    /// Accept every multicast frame.
    pub const ALLMULTI: u32 = 1 << 1;
    /// Accept broadcast frames.
    pub const BROADCAST: u32 = 1 << 2;
}

/// Bits of [`super::AdminCmd::SetOffloads`] and [`super::DeviceInfo::offloads`].
pub mod offload {
    /// TX L4 checksum insertion.
    pub const TX_CSUM: u32 = 1 << 0;
    /// RX L4 checksum validation.
    pub const RX_CSUM: u32 = 1 << 1;
    /// TCP segmentation.
    pub const TSO: u32 = 1 << 2;
    /// Receive-side scaling.
    pub const RSS: u32 = 1 << 3;
    /// Receive coalescing (hardware GRO): consecutive TCP segments of a
    /// flow that arrive together are written as one frame, over up to
    /// [`super::GRO_MAX_BUFFERS`] buffers ([`super::Cqe::MORE`]), with
    /// the IP length fields of the whole and the TCP checksum left for
    /// the host (a frame is coalesced only from segments whose checksums
    /// the card verified). Descriptor-mode queue pairs only; needs
    /// [`RX_CSUM`].
    pub const GRO_HW: u32 = 1 << 4;
    /// UDP segmentation ([`super::TxDesc::USO`]), at most
    /// [`super::TSO_MAX_SEGS`] datagrams per request.
    pub const USO: u32 = 1 << 5;
    /// TCP segmentation inside a tunnel ([`super::TxDesc::TUNNEL`]): UDP
    /// (VXLAN, GENEVE) with or without an outer checksum, GRE with or
    /// without its checksum, IPv4/IPv6 in IPv4/IPv6; needs [`TSO`].
    pub const TUNNEL_TSO: u32 = 1 << 6;
}

/// Bytes of the RSS (Toeplitz) hash key.
pub const RSS_KEY_LEN: usize = 40;
/// Entries of the RSS indirection table (one queue pair index each).
pub const RSS_TABLE_LEN: usize = 128;
/// Size of the RSS configuration block [`super::AdminCmd::SetRss`] points
/// at: the key, the table, one [`rss_fields`] byte per [`RssFlow`] (in
/// its order), then the [`rss_xfrm`] byte.
pub const RSS_CONFIG_LEN: usize = RSS_KEY_LEN + RSS_TABLE_LEN + RssFlow::ALL.len() + 1;

/// The input transform of an RSS context (the last byte of its block).
pub mod rss_xfrm {
    /// Symmetric: each source field is XORed with its destination field
    /// and the result hashed in both places, so both directions of a flow
    /// hash alike (`RXH_XFRM_SYM_XOR`).
    pub const SYM_XOR: u8 = 1 << 0;
}

wire_struct! {
    /// The IEEE 802.3 MAC counters of a function since its reset, the
    /// block [`super::AdminCmd::QueryMacStats`] writes: frames it sent to
    /// and took from the wire, their octets (with the 4-byte FCS), and of
    /// them multicast, broadcast and MAC control (EtherType 0x8808)
    /// frames; received frames whose FCS was wrong.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct MacStats[88] {
        /// Frames sent.
        pub tx_frames @ 0: u64,
        /// Octets sent.
        pub tx_octets @ 8: u64,
        /// Multicast frames sent (broadcast not included).
        pub tx_multicast @ 16: u64,
        /// Broadcast frames sent.
        pub tx_broadcast @ 24: u64,
        /// MAC control frames sent.
        pub tx_control @ 32: u64,
        /// Frames received with a good FCS and accepted by the filter.
        pub rx_frames @ 40: u64,
        /// Their octets.
        pub rx_octets @ 48: u64,
        /// Multicast frames received.
        pub rx_multicast @ 56: u64,
        /// Broadcast frames received.
        pub rx_broadcast @ 64: u64,
        /// MAC control frames received.
        pub rx_control @ 72: u64,
        /// Frames received with a wrong FCS.
        pub rx_fcs_errors @ 80: u64,
    }
}

/// RSS contexts, the default one (0) included.
pub const MAX_RSS_CONTEXTS: u32 = 32;
/// Steering rules the card holds.
pub const MAX_FLOW_RULES: u32 = 64;

wire_struct! {
    /// A steering rule, the parameters of [`super::AdminCmd::SetFlowRule`]:
    /// a frame of flow type `flow` whose chosen fields equal the rule's
    /// goes to queue pair `queue`, or (with [`FlowRule::RSS`]) to the
    /// queue pair RSS context `context` picks, plus `queue`. Fragments
    /// match no rule. The lowest-indexed matching rule wins.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct FlowRule[44] {
        /// Index, below [`MAX_FLOW_RULES`].
        pub index @ 0: u16,
        /// An [`RssFlow`] value.
        pub flow @ 2: u8,
        /// The [`rss_fields`] bits that must match.
        pub fields @ 3: u8,
        /// Queue pair, or offset added to the context's pick.
        pub queue @ 4: u16,
        /// RSS context (with [`FlowRule::RSS`]).
        pub context @ 6: u8,
        /// [`FlowRule::RSS`] or 0.
        pub flags @ 7: u8,
        /// Source port.
        pub src_port @ 8: u16,
        /// Destination port.
        pub dst_port @ 10: u16,
        /// Source address (IPv4 in the first 4 bytes), in network order.
        pub src_ip @ 12: [u8; 16],
        /// Destination address.
        pub dst_ip @ 28: [u8; 16],
    }
}

impl FlowRule {
    /// [`FlowRule::flags`]: steer through RSS context `context`.
    pub const RSS: u8 = 1 << 0;
}

/// The flow types whose hashed fields the driver chooses; other IP
/// traffic (and fragments) hashes its addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RssFlow {
    /// TCP over IPv4.
    Tcp4 = 0,
    /// UDP over IPv4.
    Udp4 = 1,
    /// TCP over IPv6.
    Tcp6 = 2,
    /// UDP over IPv6.
    Udp6 = 3,
}

impl RssFlow {
    /// Every flow type, in the order of the configuration block.
    pub const ALL: [RssFlow; 4] = [RssFlow::Tcp4, RssFlow::Udp4, RssFlow::Tcp6, RssFlow::Udp6];

    /// The flow type numbered `v`, if any.
    pub fn from_raw(v: u8) -> Option<Self> {
        Self::ALL.get(usize::from(v)).copied()
    }

    /// Whether its addresses are IPv6.
    pub const fn is_ipv6(self) -> bool {
        matches!(self, RssFlow::Tcp6 | RssFlow::Udp6)
    }
}

/// Bits of a flow type's hashed fields in the RSS configuration block:
/// the Toeplitz input is the chosen ones, in this order.
pub mod rss_fields {
    /// Source address.
    pub const IP_SRC: u8 = 1 << 0;
    /// Destination address.
    pub const IP_DST: u8 = 1 << 1;
    /// Source port.
    pub const L4_SRC: u8 = 1 << 2;
    /// Destination port.
    pub const L4_DST: u8 = 1 << 3;
    /// Addresses and ports (the default).
    pub const ALL: u8 = IP_SRC | IP_DST | L4_SRC | L4_DST;
    /// IPv6 flow types only: the 20-bit flow label, hashed after the
    /// ports as three bytes (the label's top 4 bits in the low nibble of
    /// the first).
    pub const FLOW_LABEL: u8 = 1 << 4;

    /// The fields flow type `flow` may hash.
    pub const fn allowed(flow: super::RssFlow) -> u8 {
        if flow.is_ipv6() {
            ALL | FLOW_LABEL
        } else {
            ALL
        }
    }
}

/// Bit of the 64-bit multicast filter that `mac` selects: the card accepts
/// a multicast frame when its destination's bit is set in the filter.
pub const fn mc_filter_bit(mac: &[u8; 6]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    let mut i = 0;
    while i < 6 {
        h = (h ^ mac[i] as u32).wrapping_mul(0x0100_0193);
        i += 1;
    }
    h % 64
}

/// Longest interrupt moderation delay the card supports, in microseconds.
pub const MAX_COALESCE_USECS: u32 = 1000;
/// Largest interrupt moderation frame count the card supports.
pub const MAX_COALESCE_FRAMES: u32 = 256;
