// SPDX-License-Identifier: GPL-2.0

//! The RDMA engine's interface: its limits and GID table, its doorbells,
//! the queue and memory-region commands, and the formats of work queue,
//! completion and event entries.
//!
//! Shared by the driver and the emulator like the rest of [`super`];
//! Documentation/rsnic/rdma.rst describes the same in prose.
//!
//! One file, as rdma.rst is one chapter: the engine's commands, queue
//! entries and counters are read together, and each is a short declaration.

use super::layout::Field;

/// UDP destination port of RoCEv2 (IANA).
pub const ROCE_V2_UDP_PORT: u16 = 4791;
/// Entries in the card's GID table.
pub const GID_TABLE_LEN: u16 = 16;
/// Length of a GID (an IPv6 address; IPv4 is mapped as `::ffff:a.b.c.d`).
pub const GID_LEN: usize = 16;
/// The one P_Key a RoCE port has: the default, full membership.
pub const DEFAULT_PKEY: u16 = 0xffff;
/// Vendor part ID the engine reports (`rdma dev`, `ibv_devinfo`).
pub const VENDOR_PART_ID: u32 = 0x5201;
/// Hardware version the engine reports.
pub const HW_VERSION: u32 = 1;

/// A GID: the 16-byte address of a RoCEv2 endpoint.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Gid(pub [u8; GID_LEN]);

impl Gid {
    /// The GID of an IPv4 address (IPv4-mapped IPv6).
    pub const fn from_ipv4(ip: [u8; 4]) -> Self {
        Self([
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, ip[0], ip[1], ip[2], ip[3],
        ])
    }

    /// The IPv4 address of an IPv4-mapped GID.
    pub fn ipv4(&self) -> Option<[u8; 4]> {
        let g = &self.0;
        (g[..10].iter().all(|&b| b == 0) && g[10] == 0xff && g[11] == 0xff)
            .then(|| [g[12], g[13], g[14], g[15]])
    }
}

impl Field for Gid {
    const LEN: usize = GID_LEN;

    fn put(&self, out: &mut [u8]) {
        self.0.put(out);
    }

    fn get(b: &[u8]) -> Self {
        Self(Field::get(b))
    }
}

admin_result! {
    /// The engine's limits, the result of
    /// [`super::AdminCmd::RdmaQueryCaps`].
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct RdmaCaps {
        /// Queue pairs, QP0 and QP1 included.
        pub max_qp @ 8: u32,
        /// Work requests one send or receive queue holds.
        pub max_qp_wr @ 12: u32,
        /// Scatter/gather entries of one work request.
        pub max_sge @ 16: u16,
        /// Shared receive queues, numbered 1..=max_srq (0: none). Each
        /// holds up to `max_qp_wr` requests of up to `max_sge` entries.
        pub max_srq @ 18: u16,
        /// Completion queues.
        pub max_cq @ 20: u32,
        /// Entries of one completion queue.
        pub max_cqe @ 24: u32,
        /// Memory regions.
        pub max_mr @ 28: u32,
        /// Protection domains.
        pub max_pd @ 32: u32,
        /// RDMA READs one QP has outstanding as requester and as responder.
        pub max_qp_rd_atom @ 36: u32,
        /// Pages of one fast-registration page list.
        pub max_fast_reg_page_list_len @ 40: u32,
        /// Entries of the GID table.
        pub gid_table_len @ 44: u16,
        /// [`rdma_cap`] bits.
        pub flags @ 46: u16,
        /// Largest memory region in bytes.
        pub max_mr_size @ 48: u64,
        /// Page sizes a memory region may use: bit n set means 2^n bytes.
        pub page_size_cap @ 56: u64,
    }
}

admin_result! {
    /// The engine's UD multicast limits, the result of
    /// [`super::AdminCmd::RdmaQueryMcastCaps`].
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct McastCaps {
        /// Groups the engine holds at once.
        pub max_groups @ 8: u32,
        /// Queue pairs one group holds.
        pub max_qp_per_group @ 12: u32,
        /// Attachments of all groups together.
        pub max_attach @ 16: u32,
    }
}

/// The destination QP number of a UD SEND to a multicast group.
pub const MULTICAST_QPN: u32 = 0x00ff_ffff;

impl Gid {
    /// Whether this is a multicast group address: IPv6 ff00::/8, or an
    /// IPv4-mapped 224.0.0.0/4 (as `rdma_is_multicast_addr`).
    pub fn is_multicast(&self) -> bool {
        match self.ipv4() {
            Some(ip) => ip[0] & 0xf0 == 0xe0,
            None => self.0[0] == 0xff,
        }
    }

    /// The Ethernet address frames to this multicast group go to: 01:00:5e
    /// and the low 23 bits of an IPv4 group, 33:33 and the low 32 bits of
    /// an IPv6 one (`ip_eth_mc_map`, `ipv6_eth_mc_map`).
    pub fn multicast_mac(&self) -> [u8; 6] {
        let g = &self.0;
        match self.ipv4() {
            Some(ip) => [0x01, 0x00, 0x5e, ip[1] & 0x7f, ip[2], ip[3]],
            None => [0x33, 0x33, g[12], g[13], g[14], g[15]],
        }
    }
}

/// What the engine can do beyond the basics ([`RdmaCaps::flags`]).
pub mod rdma_cap {
    /// RC atomics (compare-and-swap, fetch-and-add), atomic against the
    /// engine's own accesses only (`IB_ATOMIC_HCA`).
    pub const ATOMIC: u16 = 1 << 0;
    /// RDMA FLUSH of placement type global visibility (IBTA 1.5), on RC:
    /// answered once every earlier write has reached host memory
    /// (`IB_DEVICE_FLUSH_GLOBAL`). Persistence is not offered: host
    /// memory behind the card is not persistent.
    pub const FLUSH_GLOBAL: u16 = 1 << 1;
    /// RDMA ATOMIC WRITE (IBTA 1.5), on RC: 8 bytes written whole
    /// (`IB_DEVICE_ATOMIC_WRITE`).
    pub const ATOMIC_WRITE: u16 = 1 << 2;
    /// CQs whose entries carry the card's clock ([`cq_create::TIMESTAMP`]).
    pub const CQ_TIMESTAMP: u16 = 1 << 3;
    /// On-demand regions ([`mr_kind::ODP`], [`eqe_type::PAGE_FAULT`],
    /// [`super::AdminCmd::RdmaOdpMap`]) for RC's operations and UD sends.
    pub const ODP: u16 = 1 << 4;
    /// XRC: domains 1..=[`super::MAX_XRCD`], XRC SRQs
    /// ([`super::super::AdminCmd::RdmaCreateSrq`]`::xrcd`), XRC initiator
    /// and target QPs ([`super::QpType::XrcIni`], [`super::QpType::XrcTgt`]).
    pub const XRC: u16 = 1 << 5;
    /// Device memory ([`super::dm`]).
    pub const DEVICE_MEMORY: u16 = 1 << 6;
}

/// Device memory (`ibv_alloc_dm`, with [`rdma_cap::DEVICE_MEMORY`]):
/// memory on the card, in the user doorbell BAR after the doorbell pages,
/// which the host reaches with loads and stores through the BAR and the
/// engine reads and writes through memory regions of kind
/// [`mr_kind::DEVICE`]. The driver allocates it in 4 KiB pages
/// ([`super::AdminCmd::RdmaAllocDm`]).
pub mod dm {
    /// Bytes of device memory.
    pub const SIZE: usize = 256 * 1024;
    /// Where it starts in the user doorbell BAR ([`super::udb::BAR`]).
    pub const BAR_OFFSET: usize = super::udb::PAGES_SIZE;
    /// Allocation granule: a host page, so each allocation maps alone.
    pub const PAGE: u64 = 4096;
}

/// XRC domains are numbered 1..=MAX_XRCD (with [`rdma_cap::XRC`]).
pub const MAX_XRCD: u32 = 256;

/// Flags of [`super::AdminCmd::RdmaCreateCq`].
pub mod cq_create {
    /// Entries of [`super::CQE_STAMPED_LEN`] bytes, each stamped with the
    /// card's clock when written (needs [`super::rdma_cap::CQ_TIMESTAMP`]).
    pub const TIMESTAMP: u32 = 1 << 0;
}

/// RDMA doorbells in BAR0 (all write-only, 32 bits).
pub mod db {
    /// Send queue: QP number in bits 0-15, the new producer index (free
    /// running, 16 bits) in bits 16-31. The engine fetches and executes
    /// every WQE up to it, so one write may cover a batch.
    pub const SQ: usize = 0x4000;
    /// Receive queue: as [`SQ`].
    pub const RQ: usize = 0x4004;
    /// Completion queue consumed: CQ number in bits 0-15, the driver's
    /// consumer index (free running, 16 bits) in bits 16-31.
    pub const CQ_CI: usize = 0x4008;
    /// Arm a completion queue: CQ number in bits 0-15, [`super::arm`]
    /// bits in 16-31.
    pub const CQ_ARM: usize = 0x400c;
    /// Shared receive queue: SRQ number in bits 0-15, the new producer
    /// index in bits 16-31, as [`RQ`].
    pub const SRQ: usize = 0x4010;
    /// End of the RDMA doorbell block.
    pub const END: usize = 0x4014;
}

/// User doorbell pages: a BAR of 4 KiB pages, each with the four RDMA
/// doorbells at the offsets below, values as in [`db`]. The driver maps
/// page `n` (1 or more) into one process and creates that process's CQs
/// and QPs with `db_page = n`; a doorbell written to a page acts only on
/// queues created with that page, and any other is ignored and counted
/// (`refused_doorbells`). Page 0 is never given out: queues created
/// with `db_page = 0` are the kernel's, rung through [`db`] in BAR0 only.
pub mod udb {
    /// The BAR holding the pages.
    pub const BAR: u32 = 4;
    /// Bytes of one page (the host's page size: a page maps alone).
    pub const PAGE_SIZE: usize = 4096;
    /// Doorbell pages, page 0 included.
    pub const PAGES: u32 = 64;
    /// Bytes of the doorbell pages, at the start of the BAR.
    pub const PAGES_SIZE: usize = PAGE_SIZE * PAGES as usize;
    /// Size of the BAR in bytes: the doorbell pages, then the card's
    /// device memory ([`super::dm`]).
    pub const BAR_SIZE: usize = PAGES_SIZE + super::dm::SIZE;
    /// Send queue doorbell, as [`super::db::SQ`].
    pub const SQ: usize = 0x0;
    /// Receive queue doorbell, as [`super::db::RQ`].
    pub const RQ: usize = 0x4;
    /// CQ consumer index, as [`super::db::CQ_CI`].
    pub const CQ_CI: usize = 0x8;
    /// CQ arm, as [`super::db::CQ_ARM`].
    pub const CQ_ARM: usize = 0xc;
    /// Shared receive queue, as [`super::db::SRQ`].
    pub const SRQ: usize = 0x10;
}

/// Bits of [`db::CQ_ARM`] (shifted down by 16).
pub mod arm {
    /// Raise an event for the next completion.
    pub const NEXT: u32 = 1 << 0;
    /// Raise an event for the next solicited (or failed) completion only.
    pub const SOLICITED: u32 = 1 << 1;
}

/// Largest QP, CQ or ring index the doorbells can name.
pub const MAX_INDEX: u32 = 0xffff;
/// Bytes of one send queue entry.
pub const SQ_WQE_LEN: usize = 128;
/// Bytes of one receive queue entry.
pub const RQ_WQE_LEN: usize = 80;
/// Bytes of one completion queue entry.
pub const CQE_LEN: usize = 32;
/// Bytes of one entry of a CQ created with [`cq_create::TIMESTAMP`]: a
/// [`Cqe`], then at [`CQE_TIMESTAMP`] the card's clock (nanoseconds,
/// `hw::regs::PTP_TIME_LO`'s) when the card wrote it, then reserved.
pub const CQE_STAMPED_LEN: usize = 64;
/// Offset of the little-endian u64 time stamp in a stamped CQ's entry.
pub const CQE_TIMESTAMP: usize = CQE_LEN;
/// Bytes of one event queue entry.
pub const EQE_LEN: usize = 16;
/// Scatter/gather entries of one WQE (send and receive).
pub const MAX_SGE: usize = 4;
/// The QP number of the general services interface (the CM's MADs).
pub const GSI_QPN: u32 = 1;
/// The well-known Q_Key of QP1.
pub const GSI_QKEY: u32 = 0x8001_0000;

wire_enum! {
    /// A queue pair's transport.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum QpType: u8 {
        /// Reliable connection.
        Rc = 0,
        /// Unreliable datagram.
        Ud = 1,
        /// QP1: unreliable datagrams for management (MADs).
        Gsi = 2,
        /// Unreliable connection: SENDs and WRITEs to one peer QP, no
        /// acknowledgements; a lost packet drops its message.
        Uc = 3,
        /// XRC initiator: an RC send queue whose requests each name the
        /// XRC SRQ they go to ([`SqWqe::xrc_srqn`]); no receive queue.
        XrcIni = 4,
        /// XRC target: no queues; answers an initiator's requests, each
        /// received into (and its rights checked against the PD of) the
        /// XRC SRQ of its XRC domain the request names.
        XrcTgt = 5,
    }
}

wire_enum! {
    /// A queue pair's state (the verbs' state machine).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub enum QpState: u8 {
        /// Reset.
        #[default]
        Reset = 0,
        /// Initialised: receives may be posted.
        Init = 1,
        /// Ready to receive.
        Rtr = 2,
        /// Ready to send.
        Rts = 3,
        /// Send queue drained.
        Sqd = 4,
        /// Send queue error (UD/GSI).
        Sqe = 5,
        /// Error: every WQE completes flushed.
        Err = 6,
    }
}

admin_result! {
    /// The result of [`super::AdminCmd::RdmaQueryQp`].
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct QpQueryResult {
        /// The QP's [`QpState`] as a byte.
        pub state @ 8: u8,
    }
}

/// Memory access rights of a memory region (and of a QP's responder).
pub mod access {
    /// The engine may write it for local operations (receives, READ
    /// responses landing).
    pub const LOCAL_WRITE: u32 = 1 << 0;
    /// A peer may RDMA WRITE into it.
    pub const REMOTE_WRITE: u32 = 1 << 1;
    /// A peer may RDMA READ from it.
    pub const REMOTE_READ: u32 = 1 << 2;
    /// A peer may run atomics (compare-and-swap, fetch-and-add) on it.
    pub const REMOTE_ATOMIC: u32 = 1 << 3;
    /// Memory windows may be bound over it (an MR's right only).
    pub const MW_BIND: u32 = 1 << 4;
    /// A peer may RDMA FLUSH it for global visibility.
    pub const FLUSH_GLOBAL: u32 = 1 << 5;
    /// Every bit the engine knows.
    pub const ALL: u32 =
        LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC | MW_BIND | FLUSH_GLOBAL;
    /// The rights a memory window may grant.
    pub const REMOTE: u32 = REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC;
}

wire_struct! {
    /// Arguments of [`super::AdminCmd::RdmaCreateQp`] (offsets from
    /// [`super::AQ_PARAMS`]).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct QpCreate[56] {
        /// QP number: 1 for the GSI QP, else 2..max_qp.
        pub qpn @ 0: u32,
        /// [`QpType`] as a byte.
        pub qp_type @ 4: u8,
        /// Protection domain. An XRC target has none: this is its XRC
        /// domain, and the rest but `qpn` and `qp_type` are unused.
        pub pd @ 8: u32,
        /// Bus address of the send queue ([`SQ_WQE_LEN`]-byte entries).
        pub sq @ 16: u64,
        /// Bus address of the receive queue ([`RQ_WQE_LEN`]-byte entries).
        pub rq @ 24: u64,
        /// Send queue entries (power of two).
        pub sq_entries @ 32: u32,
        /// Receive queue entries (power of two).
        pub rq_entries @ 36: u32,
        /// CQ of send completions.
        pub send_cq @ 40: u32,
        /// CQ of receive completions.
        pub recv_cq @ 44: u32,
        /// The [`udb`] page that rings it; 0 for a kernel QP. Both CQs
        /// must have the same. A user QP may not use the reserved local
        /// key 0 (all bus addresses) nor REG_MR or LOCAL_INV.
        pub db_page @ 48: u32,
        /// The shared receive queue it receives from (same PD and
        /// `db_page`), or 0 for its own receive queue (`rq`, then
        /// unused with an SRQ). RC only.
        pub srq @ 52: u32,
    }
}

/// Bits of [`QpModify::mask`]: which attributes a modify sets.
pub mod qp_attr {
    /// `state`.
    pub const STATE: u32 = 1 << 0;
    /// `qkey`.
    pub const QKEY: u32 = 1 << 1;
    /// `access`.
    pub const ACCESS: u32 = 1 << 2;
    /// The address vector (`av`) and `path_mtu`.
    pub const PATH: u32 = 1 << 3;
    /// `dest_qpn`.
    pub const DEST_QPN: u32 = 1 << 4;
    /// `rq_psn`.
    pub const RQ_PSN: u32 = 1 << 5;
    /// `sq_psn`.
    pub const SQ_PSN: u32 = 1 << 6;
    /// `timeout`, `retry_cnt`, `rnr_retry`.
    pub const RETRY: u32 = 1 << 7;
    /// `min_rnr_timer`.
    pub const MIN_RNR_TIMER: u32 = 1 << 8;
    /// `max_rd_atomic`.
    pub const MAX_RD_ATOMIC: u32 = 1 << 9;
    /// `max_dest_rd_atomic`.
    pub const MAX_DEST_RD_ATOMIC: u32 = 1 << 10;
}

/// Length of an encoded [`AddressVector`].
pub const AV_LEN: usize = 32;

wire_struct! {
    /// Where packets of a QP (or one UD send) go.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct AddressVector[AV_LEN] {
        /// Destination MAC.
        pub dmac @ 0: [u8; 6],
        /// Source GID table index.
        pub sgid_index @ 6: u8,
        /// IP hop limit / TTL.
        pub hop_limit @ 7: u8,
        /// IP traffic class / TOS.
        pub traffic_class @ 8: u8,
        /// IPv6 flow label (20 bits); also the seed of the UDP source port.
        pub flow_label @ 12: u32,
        /// Destination GID.
        pub dgid @ 16: Gid,
    }
}

/// Length of an encoded [`QpModify`].
pub const QP_MODIFY_LEN: usize = 80;

wire_struct! {
    /// The block [`super::AdminCmd::RdmaModifyQp`] points at.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct QpModify[QP_MODIFY_LEN] {
        /// [`qp_attr`] bits: what to set.
        pub mask @ 0: u32,
        /// New [`QpState`] as a byte.
        pub state @ 4: u8,
        /// Path MTU in bytes (256..=4096, a power of two).
        pub path_mtu @ 12: u32,
        /// Q_Key (UD, GSI).
        pub qkey @ 16: u32,
        /// [`access`] bits the responder allows (RC).
        pub access @ 20: u32,
        /// Remote QP number (RC).
        pub dest_qpn @ 24: u32,
        /// First PSN expected from the peer.
        pub rq_psn @ 28: u32,
        /// First PSN sent.
        pub sq_psn @ 32: u32,
        /// Local ACK timeout exponent: 4.096 µs * 2^timeout (0: none).
        pub timeout @ 5: u8,
        /// Retries on timeout or sequence error (0..=7).
        pub retry_cnt @ 6: u8,
        /// Retries on RNR NAK (0..=7; 7: forever).
        pub rnr_retry @ 7: u8,
        /// RNR NAK timer code this responder advertises.
        pub min_rnr_timer @ 8: u8,
        /// RDMA READs outstanding as requester.
        pub max_rd_atomic @ 9: u8,
        /// RDMA READs outstanding as responder.
        pub max_dest_rd_atomic @ 10: u8,
        /// Where the peer is (RC).
        pub av @ 48: AddressVector,
    }
}

wire_struct! {
    /// Arguments of [`super::AdminCmd::RdmaRegMr`] (offsets from
    /// [`super::AQ_PARAMS`]).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct MrReg[48] {
        /// Key: index (bits 8-31) and a variant byte; lkey and rkey alike.
        pub key @ 0: u32,
        /// Protection domain.
        pub pd @ 4: u32,
        /// [`access`] bits.
        pub access @ 8: u32,
        /// [`mr_kind`] value.
        pub kind @ 12: u8,
        /// Fast-registration MRs: most pages a REG_MR may map. User MRs:
        /// pages in the page list.
        pub max_pages @ 16: u32,
        /// User MRs: log2 of the page size (12..=30).
        pub page_shift @ 13: u8,
        /// User MRs: bus address of the page list (`max_pages` u64 bus
        /// addresses of pages, little-endian, 8-byte aligned), read once
        /// at registration. Device-memory MRs: the offset in device
        /// memory.
        pub pbl @ 24: u64,
        /// User MRs: the first address of the region (the process's
        /// virtual address).
        pub iova @ 32: u64,
        /// User MRs: bytes.
        pub len @ 40: u64,
    }
}

/// Kinds of memory region.
pub mod mr_kind {
    /// Every bus address, as is (`get_dma_mr`, the PD's local DMA key).
    pub const DMA: u8 = 0;
    /// A fast-registration MR: invalid until a REG_MR WQE maps pages.
    pub const FAST_REG: u8 = 1;
    /// Memory of a process: pages from a page list, mapped at
    /// registration.
    pub const USER: u8 = 2;
    /// A memory window of type 1: a PD's remote view of part of an MR,
    /// unbound until a BIND_MW WQE binds it (length 0 unbinds).
    pub const MW_TYPE1: u8 = 3;
    /// A memory window of type 2 (2B): bound by a BIND_MW WQE to the
    /// QP that posted it, usable only through that QP, until
    /// invalidated (LOCAL_INV, or a peer's SEND with invalidate).
    pub const MW_TYPE2: u8 = 4;
    /// Memory of a process registered on demand (`IB_ACCESS_ON_DEMAND`):
    /// `len` bytes at `iova` in 4 KiB pages (`page_shift` 12,
    /// `max_pages` the pages it spans, no page list), none translated at
    /// registration. An access to a page without a translation (or a
    /// write to one mapped read-only) is not done: the card reports a
    /// [`eqe_type::PAGE_FAULT`] and retries once the driver mapped it
    /// ([`super::AdminCmd::RdmaOdpMap`]).
    pub const ODP: u8 = 5;
    /// Device memory ([`super::dm`]): `len` bytes at offset `pbl` of the
    /// card's device memory, inside one allocation, addressed from 0
    /// (zero-based, as `ibv_reg_dm_mr` wants; `iova` 0).
    pub const DEVICE: u8 = 6;
}

/// A page's translation in an on-demand region
/// ([`super::AdminCmd::RdmaOdpMap`]): its bus address (4 KiB aligned)
/// with these bits.
pub mod odp_pte {
    /// The translation is valid.
    pub const VALID: u64 = 1 << 0;
    /// The card may write the page (else a write faults).
    pub const WRITE: u64 = 1 << 1;
    /// Without [`VALID`]: the driver could not map the page (the
    /// process has no memory there). The page stays untranslated, and
    /// the next access that faults on it fails instead (a local
    /// protection error, or a remote access error NAK) — one access,
    /// so that memory mapped there later faults in as usual.
    pub const ERROR: u64 = 1 << 2;
}

/// Most translations one [`super::AdminCmd::RdmaOdpMap`] carries.
pub const MAX_ODP_MAP_PAGES: u32 = 512;

/// Most pages of a user MR's page list (its list is 2 MiB).
pub const MAX_USER_MR_PAGES: u32 = 1 << 18;

/// Send WQE opcodes (byte 0 of a send queue entry).
pub mod wqe_op {
    /// SEND.
    pub const SEND: u8 = 0;
    /// SEND with immediate data.
    pub const SEND_IMM: u8 = 1;
    /// SEND invalidating the peer's rkey `inv_key`.
    pub const SEND_INV: u8 = 2;
    /// RDMA WRITE.
    pub const WRITE: u8 = 3;
    /// RDMA WRITE with immediate data.
    pub const WRITE_IMM: u8 = 4;
    /// RDMA READ.
    pub const READ: u8 = 5;
    /// Invalidate a local MR (`inv_key`).
    pub const LOCAL_INV: u8 = 6;
    /// Map pages into a fast-registration MR.
    pub const REG_MR: u8 = 7;
    /// Atomic compare-and-swap of the 8 bytes at `remote_addr`
    /// ([`super::AtomicParams`]); the old value lands in the one SGE.
    pub const CMP_SWAP: u8 = 8;
    /// Atomic fetch-and-add, like [`CMP_SWAP`].
    pub const FETCH_ADD: u8 = 9;
    /// Bind the memory window whose index `rkey` names (which takes
    /// `rkey`, its new variant byte) over `remote_addr` and the
    /// [`super::BindParams`]'s length of an MR, granting the [`super::access`]
    /// bits in `qkey` (remote ones only).
    pub const BIND_MW: u8 = 10;
    /// RDMA FLUSH (RC) of the peer's memory at `remote_addr`/`rkey`, as
    /// [`super::FlushParams`] says; no gather list.
    pub const FLUSH: u8 = 11;
    /// RDMA ATOMIC WRITE (RC) of the 8 bytes of
    /// [`super::AtomicWriteParams`] to `remote_addr` (8-byte aligned);
    /// no gather list.
    pub const ATOMIC_WRITE: u8 = 12;
}

/// Send WQE flags (byte 1).
pub mod wqe_flag {
    /// Write a completion when done (else only on error).
    pub const SIGNALED: u8 = 1 << 0;
    /// Set the solicited-event bit.
    pub const SOLICITED: u8 = 1 << 1;
    /// Wait for earlier READs to complete first.
    pub const FENCE: u8 = 1 << 2;
    /// SEND/WRITE: the payload is in the WQE ([`SqWqe::inline_data`]), not
    /// behind the gather list.
    pub const INLINE: u8 = 1 << 3;
}

/// Bytes of payload a send WQE can carry inline: the gather list's room.
pub const MAX_INLINE_DATA: usize = 64;
const _: () = assert!(MAX_INLINE_DATA == MAX_SGE * Sge::SIZE);

wire_struct! {
    /// One scatter/gather entry.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Sge[16] {
        /// Address in the MR's address space.
        pub addr @ 0: u64,
        /// Bytes.
        pub len @ 8: u32,
        /// Local key of the MR.
        pub lkey @ 12: u32,
    }
}

wire_struct! {
    /// A send queue entry. Bytes 32..64 ([`SqWqe::ext`]) hold the UD
    /// address vector, for an atomic its [`AtomicParams`], or for a
    /// REG_MR its [`RegMrParams`]; a REG_MR
    /// carries the MR's key in `rkey`, its access in `qkey` and the page
    /// list's bus address in `remote_addr`.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct SqWqe[SQ_WQE_LEN] {
        /// [`wqe_op`].
        pub opcode @ 0: u8,
        /// [`wqe_flag`] bits.
        pub flags @ 1: u8,
        /// SGEs used.
        pub num_sge @ 2: u8,
        /// With [`wqe_flag::INLINE`]: bytes of payload in the gather list's
        /// place (at most [`MAX_INLINE_DATA`]).
        pub inline_len @ 3: u8,
        /// Immediate data (in network order, as the verbs hold it), or the
        /// key SEND_INV / LOCAL_INV invalidates.
        pub imm_or_key @ 4: u32,
        /// WRITE/READ/atomic: remote address. REG_MR: page list address.
        pub remote_addr @ 8: u64,
        /// WRITE/READ/atomic: remote key. REG_MR: the MR's key.
        pub rkey @ 16: u32,
        /// UD: destination QP.
        pub dest_qpn @ 20: u32,
        /// UD: Q_Key. REG_MR: access bits.
        pub qkey @ 24: u32,
        /// XRC initiator: the XRC SRQ at the target the request goes to.
        pub xrc_srqn @ 28: u32,
        /// The [`AddressVector`] (UD) or the [`RegMrParams`] (REG_MR).
        pub ext @ 32: [u8; AV_LEN],
        /// Gather list, or with [`wqe_flag::INLINE`] the payload.
        pub sge @ 64: [Sge; MAX_SGE],
    }
}

wire_struct! {
    /// The operands of an atomic WQE (in [`SqWqe::ext`]).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct AtomicParams[16] {
        /// CMP_SWAP: the value compared with. FETCH_ADD: the value added.
        pub compare_add @ 0: u64,
        /// CMP_SWAP: the value stored if equal.
        pub swap @ 8: u64,
    }
}

wire_struct! {
    /// What a FLUSH WQE flushes (in [`SqWqe::ext`]).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct FlushParams[16] {
        /// Bytes from `remote_addr` ([`flush::RANGE`]).
        pub len @ 0: u64,
        /// Placement type bits: [`flush::GLOBAL`], [`flush::PERSISTENT`].
        pub placement @ 8: u8,
        /// Selectivity level: [`flush::RANGE`] or [`flush::MR`].
        pub level @ 9: u8,
    }
}

/// FLUSH placement types and selectivity levels, as the verbs
/// (`IB_FLUSH_*`) and the wire's FETH number them.
pub mod flush {
    /// Placement type: global visibility.
    pub const GLOBAL: u8 = 1 << 0;
    /// Placement type: persistence.
    pub const PERSISTENT: u8 = 1 << 1;
    /// Selectivity: the range the RETH names.
    pub const RANGE: u8 = 0;
    /// Selectivity: the whole memory region of the R_Key.
    pub const MR: u8 = 1;
}

wire_struct! {
    /// What an ATOMIC_WRITE WQE writes (in [`SqWqe::ext`]).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct AtomicWriteParams[8] {
        /// The bytes, in the order they land in the peer's memory.
        pub value @ 0: [u8; 8],
    }
}

wire_struct! {
    /// What a BIND_MW WQE binds (in [`SqWqe::ext`]).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct BindParams[16] {
        /// The lkey of the MR the window shows (of the QP's PD, with
        /// [`access::MW_BIND`]).
        pub mr_key @ 0: u32,
        /// Bytes of the window (0: a type 1 window unbound).
        pub len @ 8: u64,
    }
}

wire_struct! {
    /// What a REG_MR WQE maps (in [`SqWqe::ext`]).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct RegMrParams[24] {
        /// First address of the region.
        pub iova @ 0: u64,
        /// Bytes.
        pub len @ 8: u64,
        /// Pages in the page list.
        pub npages @ 16: u32,
        /// log2 of the page size.
        pub page_shift @ 20: u8,
    }
}

impl SqWqe {
    /// The UD destination in [`SqWqe::ext`].
    pub fn av(&self) -> AddressVector {
        AddressVector::from_bytes(&self.ext)
    }

    /// Puts a UD destination in [`SqWqe::ext`].
    pub fn set_av(&mut self, av: &AddressVector) {
        self.ext = av.to_bytes();
    }

    /// The REG_MR parameters in [`SqWqe::ext`].
    pub fn reg(&self) -> RegMrParams {
        Field::get(&self.ext[..RegMrParams::SIZE])
    }

    /// Puts REG_MR parameters in [`SqWqe::ext`].
    pub fn set_reg(&mut self, reg: &RegMrParams) {
        self.ext = [0; AV_LEN];
        reg.put(&mut self.ext[..RegMrParams::SIZE]);
    }

    /// The atomic operands in [`SqWqe::ext`].
    pub fn atomic(&self) -> AtomicParams {
        Field::get(&self.ext[..AtomicParams::SIZE])
    }

    /// Puts atomic operands in [`SqWqe::ext`].
    pub fn set_atomic(&mut self, a: &AtomicParams) {
        self.ext = [0; AV_LEN];
        a.put(&mut self.ext[..AtomicParams::SIZE]);
    }

    /// The FLUSH parameters in [`SqWqe::ext`].
    pub fn flush(&self) -> FlushParams {
        Field::get(&self.ext[..FlushParams::SIZE])
    }

    /// Puts FLUSH parameters in [`SqWqe::ext`].
    pub fn set_flush(&mut self, f: &FlushParams) {
        self.ext = [0; AV_LEN];
        f.put(&mut self.ext[..FlushParams::SIZE]);
    }

    /// The ATOMIC_WRITE value in [`SqWqe::ext`].
    pub fn atomic_write(&self) -> AtomicWriteParams {
        Field::get(&self.ext[..AtomicWriteParams::SIZE])
    }

    /// Puts an ATOMIC_WRITE value in [`SqWqe::ext`].
    pub fn set_atomic_write(&mut self, a: &AtomicWriteParams) {
        self.ext = [0; AV_LEN];
        a.put(&mut self.ext[..AtomicWriteParams::SIZE]);
    }

    /// The BIND_MW parameters in [`SqWqe::ext`].
    pub fn bind(&self) -> BindParams {
        Field::get(&self.ext[..BindParams::SIZE])
    }

    /// Puts BIND_MW parameters in [`SqWqe::ext`].
    pub fn set_bind(&mut self, b: &BindParams) {
        self.ext = [0; AV_LEN];
        b.put(&mut self.ext[..BindParams::SIZE]);
    }

    /// With [`wqe_flag::INLINE`]: the payload, or `None` if
    /// [`SqWqe::inline_len`] is past [`MAX_INLINE_DATA`].
    pub fn inline_data(&self) -> Option<InlineData> {
        if usize::from(self.inline_len) > MAX_INLINE_DATA {
            return None;
        }
        let mut bytes = [0u8; MAX_INLINE_DATA];
        self.sge.put(&mut bytes);
        Some(InlineData {
            bytes,
            len: self.inline_len,
        })
    }

    /// Puts `data` (at most [`MAX_INLINE_DATA`] bytes, the rest dropped)
    /// in the gather list's place and sets [`wqe_flag::INLINE`].
    pub fn set_inline_data(&mut self, data: &[u8]) {
        let len = data.len().min(MAX_INLINE_DATA);
        let mut b = [0u8; MAX_INLINE_DATA];
        b[..len].copy_from_slice(&data[..len]);
        self.sge = Field::get(&b);
        // CAST: `len` is at most MAX_INLINE_DATA (64).
        self.inline_len = len as u8;
        self.num_sge = 0;
        self.flags |= wqe_flag::INLINE;
    }
}

/// The payload of an inline send WQE ([`SqWqe::inline_data`]).
#[derive(Clone, Copy, Debug)]
pub struct InlineData {
    bytes: [u8; MAX_INLINE_DATA],
    len: u8,
}

impl InlineData {
    /// The payload's bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

wire_struct! {
    /// A receive queue entry.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct RqWqe[RQ_WQE_LEN] {
        /// SGEs used.
        pub num_sge @ 0: u8,
        /// Scatter list.
        pub sge @ 16: [Sge; MAX_SGE],
    }
}

/// Completion status (byte 8 of a CQE), as `enum ib_wc_status` numbers
/// them.
pub mod wc_status {
    /// Success.
    pub const SUCCESS: u8 = 0;
    /// Local length error (a receive too small).
    pub const LOC_LEN_ERR: u8 = 1;
    /// Local QP operation error.
    pub const LOC_QP_OP_ERR: u8 = 2;
    /// Local protection error (bad lkey, bounds, access).
    pub const LOC_PROT_ERR: u8 = 4;
    /// Flushed: the QP is in error.
    pub const WR_FLUSH_ERR: u8 = 5;
    /// Memory window bind error.
    pub const MW_BIND_ERR: u8 = 6;
    /// Bad response from the peer.
    pub const BAD_RESP_ERR: u8 = 7;
    /// Local access error.
    pub const LOC_ACCESS_ERR: u8 = 8;
    /// The peer found the request invalid.
    pub const REM_INV_REQ_ERR: u8 = 9;
    /// The peer refused access (rkey, bounds, rights).
    pub const REM_ACCESS_ERR: u8 = 10;
    /// The peer failed the operation.
    pub const REM_OP_ERR: u8 = 11;
    /// Retries on timeout exhausted.
    pub const RETRY_EXC_ERR: u8 = 12;
    /// Retries on RNR exhausted.
    pub const RNR_RETRY_EXC_ERR: u8 = 13;
    /// Fatal error.
    pub const FATAL_ERR: u8 = 19;
    /// Other error.
    pub const GENERAL_ERR: u8 = 21;
}

/// Completion opcode (byte 9 of a CQE), as `enum ib_wc_opcode` numbers
/// them.
pub mod wc_op {
    /// SEND.
    pub const SEND: u8 = 0;
    /// RDMA WRITE.
    pub const RDMA_WRITE: u8 = 1;
    /// RDMA READ.
    pub const RDMA_READ: u8 = 2;
    /// Atomic compare-and-swap.
    pub const COMP_SWAP: u8 = 3;
    /// Atomic fetch-and-add.
    pub const FETCH_ADD: u8 = 4;
    /// BIND_MW.
    pub const BIND_MW: u8 = 5;
    /// LOCAL_INV.
    pub const LOCAL_INV: u8 = 6;
    /// RDMA FLUSH.
    pub const FLUSH: u8 = 8;
    /// RDMA ATOMIC WRITE.
    pub const ATOMIC_WRITE: u8 = 9;
    /// REG_MR.
    pub const REG_MR: u8 = 10;
    /// A receive.
    pub const RECV: u8 = 128;
    /// A receive of WRITE with immediate.
    pub const RECV_RDMA_WITH_IMM: u8 = 129;
}

/// CQE flags (u16 at 2).
pub mod cqe_flag {
    /// A receive completion (else send queue).
    pub const RECV: u16 = 1 << 0;
    /// `imm_or_key` holds immediate data.
    pub const WITH_IMM: u16 = 1 << 1;
    /// `imm_or_key` holds the rkey the peer invalidated.
    pub const WITH_INV: u16 = 1 << 2;
    /// UD/GSI: a 40-byte GRH area precedes the payload in the buffer.
    pub const GRH: u16 = 1 << 3;
    /// The sender's address was IPv4 (the GRH area holds an IPv4 header
    /// in its last 20 bytes).
    pub const IPV4: u16 = 1 << 4;
    /// A receive from the QP's shared receive queue: `wqe_index` is a
    /// slot of that SRQ's ring.
    pub const SRQ: u16 = 1 << 5;
    /// The card's phase: flips each time the ring wraps.
    pub const PHASE: u16 = 1 << 15;
}

wire_struct! {
    /// A completion queue entry. The flags word is at
    /// [`super::ENTRY_FLAGS_OFFSET`] and written last.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Cqe[CQE_LEN] {
        /// Slot of the WQE in its queue.
        pub wqe_index @ 0: u16,
        /// [`cqe_flag`] bits.
        pub flags @ 2: u16,
        /// Local QP.
        pub qpn @ 4: u32,
        /// [`wc_status`].
        pub status @ 8: u8,
        /// [`wc_op`].
        pub opcode @ 9: u8,
        /// With [`cqe_flag::SRQ`]: the SRQ `wqe_index` is a slot of (SRQ
        /// numbers fit: they are at most `max_srq`).
        pub srqn @ 10: u16,
        /// Bytes received (or read).
        pub byte_len @ 12: u32,
        /// Immediate data or invalidated key.
        pub imm_or_key @ 16: u32,
        /// UD: sending QP.
        pub src_qp @ 20: u32,
        /// UD: sender's MAC.
        pub smac @ 24: [u8; 6],
    }
}

/// Event types (u16 0 of an EQE).
pub mod eqe_type {
    /// A completion on an armed CQ; `id` is the CQ.
    pub const COMPLETION: u16 = 1;
    /// A QP went to the error state on its own; `id` is the QP.
    pub const QP_FATAL: u16 = 2;
    /// A CQ overflowed; `id` is the CQ.
    pub const CQ_ERROR: u16 = 3;
    /// A shared receive queue fell below its armed limit; `id` is the
    /// SRQ. The limit is disarmed.
    pub const SRQ_LIMIT: u16 = 4;
    /// A QP with an SRQ went to the error state: it takes no more of the
    /// SRQ's WQEs, and the one it had is flushed; `id` is the QP.
    pub const QP_LAST_WQE: u16 = 5;
    /// An access to a page of an on-demand region that has no
    /// translation (or a write to one mapped read-only); `id` is the
    /// region's key, `page` and `write` say which page and how. The
    /// access waits (a peer's request is answered with an RNR NAK, a
    /// local work request is held) until the driver maps the page. One
    /// event per page and access until it is mapped, raised again each
    /// 100 ms the driver leaves it unanswered.
    pub const PAGE_FAULT: u16 = 6;
}

wire_struct! {
    /// An event queue entry. The flags word holds the phase
    /// ([`cqe_flag::PHASE`]).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Eqe[EQE_LEN] {
        /// [`eqe_type`].
        pub kind @ 0: u16,
        /// Phase bit.
        pub flags @ 2: u16,
        /// CQ or QP number.
        pub id @ 4: u32,
        /// [`eqe_type::PAGE_FAULT`]: the page, counted in 4 KiB pages
        /// from the one that holds the region's first byte.
        pub page @ 8: u32,
        /// [`eqe_type::PAGE_FAULT`]: 1 if the access writes.
        pub write @ 12: u32,
    }
}

/// Length of the [`RdmaCounters`] block.
pub const COUNTERS_LEN: usize = 128;

wire_struct! {
    /// The RDMA engine's counters since reset, the block
    /// [`super::AdminCmd::RdmaQueryStats`] writes to host memory. Bytes
    /// past the last counter are reserved (written as zero).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct RdmaCounters[COUNTERS_LEN] {
        /// RoCEv2 packets sent.
        pub tx_packets @ 0: u64,
        /// RoCEv2 packets received for a QP.
        pub rx_packets @ 8: u64,
        /// Packets received with a wrong ICRC (dropped).
        pub rx_icrc_errors @ 16: u64,
        /// Packets received for no QP, malformed, or dropped by a QP.
        pub rx_dropped @ 24: u64,
        /// Packets sent again (timeout, sequence NAK, RNR NAK).
        pub retransmits @ 32: u64,
        /// Sequence-error NAKs sent.
        pub seq_naks @ 40: u64,
        /// RNR NAKs sent.
        pub rnr_naks @ 48: u64,
        /// Packets received with a wrong UDP checksum (dropped; a zero
        /// checksum is "none" and accepted).
        pub rx_udp_csum_errors @ 56: u64,
        /// Retransmission timeouts (a requester heard nothing in time).
        pub timeouts @ 64: u64,
        /// Duplicate requests received (a responder answered again).
        pub duplicates @ 72: u64,
        /// Doorbells on a user page for a queue the page does not own, or
        /// for none (ignored).
        pub refused_doorbells @ 80: u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::AQ_ENTRY_SIZE;

    #[test]
    fn caps_round_trip() {
        let caps = RdmaCaps {
            max_qp: 1,
            max_qp_wr: 2,
            max_sge: 3,
            max_srq: 12,
            max_cq: 4,
            max_cqe: 5,
            max_mr: 6,
            max_pd: 7,
            max_qp_rd_atom: 8,
            max_fast_reg_page_list_len: 9,
            gid_table_len: 10,
            flags: 11,
            max_mr_size: 1 << 40,
            page_size_cap: 0xffff_f000,
        };
        let mut b = [0u8; AQ_ENTRY_SIZE];
        caps.write_result(&mut b);
        assert_eq!(RdmaCaps::read_result(&b), caps);
        let c = RdmaCounters {
            tx_packets: 1,
            rx_packets: 2,
            rx_icrc_errors: 3,
            rx_dropped: 4,
            retransmits: 5,
            seq_naks: 6,
            rnr_naks: 7,
            rx_udp_csum_errors: 8,
            timeouts: 9,
            duplicates: 10,
            refused_doorbells: 11,
        };
        assert_eq!(RdmaCounters::from_bytes(&c.to_bytes()), c);
    }

    #[test]
    fn ipv4_mapped_gids() {
        let gid = Gid::from_ipv4([10, 99, 0, 1]);
        assert_eq!(gid.ipv4(), Some([10, 99, 0, 1]));
        let mut v6 = gid;
        v6.0[0] = 0xfe;
        assert_eq!(v6.ipv4(), None);
    }
}
