// SPDX-License-Identifier: GPL-2.0

//! The RDMA engine's interface: its limits and GID table, its doorbells,
//! the queue and memory-region commands, and the formats of work queue,
//! completion and event entries.
//!
//! Shared by the driver and the emulator like the rest of [`super`];
//! Documentation/rsnic/rdma.rst describes the same in prose.

use super::{le32, le64, put, AQ_ENTRY_SIZE};

/// UDP destination port of RoCEv2 (IANA).
pub const ROCE_V2_UDP_PORT: u16 = 4791;
/// Entries in the card's GID table.
pub const GID_TABLE_LEN: u32 = 16;
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

/// The engine's limits, the result of
/// [`super::AdminCmd::RdmaQueryCaps`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RdmaCaps {
    /// Queue pairs, QP0 and QP1 included.
    pub max_qp: u32,
    /// Work requests one send or receive queue holds.
    pub max_qp_wr: u32,
    /// Scatter/gather entries of one work request.
    pub max_sge: u32,
    /// Completion queues.
    pub max_cq: u32,
    /// Entries of one completion queue.
    pub max_cqe: u32,
    /// Memory regions.
    pub max_mr: u32,
    /// Protection domains.
    pub max_pd: u32,
    /// RDMA READs one QP has outstanding as requester and as responder.
    pub max_qp_rd_atom: u32,
    /// Pages of one fast-registration page list.
    pub max_fast_reg_page_list_len: u32,
    /// Entries of the GID table.
    pub gid_table_len: u32,
    /// Largest memory region in bytes.
    pub max_mr_size: u64,
    /// Page sizes a memory region may use: bit n set means 2^n bytes.
    pub page_size_cap: u64,
}

impl RdmaCaps {
    /// Writes the result into an admin entry.
    pub fn write_result(&self, b: &mut [u8; AQ_ENTRY_SIZE]) {
        let words = [
            self.max_qp,
            self.max_qp_wr,
            self.max_sge,
            self.max_cq,
            self.max_cqe,
            self.max_mr,
            self.max_pd,
            self.max_qp_rd_atom,
            self.max_fast_reg_page_list_len,
            self.gid_table_len,
        ];
        for (i, w) in words.iter().enumerate() {
            put(b, 8 + 4 * i, &w.to_le_bytes());
        }
        put(b, 48, &self.max_mr_size.to_le_bytes());
        put(b, 56, &self.page_size_cap.to_le_bytes());
    }

    /// Reads the result from a completed admin entry.
    pub fn read_result(b: &[u8; AQ_ENTRY_SIZE]) -> Self {
        let w = |i: usize| le32(b, 8 + 4 * i);
        Self {
            max_qp: w(0),
            max_qp_wr: w(1),
            max_sge: w(2),
            max_cq: w(3),
            max_cqe: w(4),
            max_mr: w(5),
            max_pd: w(6),
            max_qp_rd_atom: w(7),
            max_fast_reg_page_list_len: w(8),
            gid_table_len: w(9),
            max_mr_size: le64(b, 48),
            page_size_cap: le64(b, 56),
        }
    }
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
    /// End of the RDMA doorbell block.
    pub const END: usize = 0x4010;
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
/// Bytes of one event queue entry.
pub const EQE_LEN: usize = 16;
/// Scatter/gather entries of one WQE (send and receive).
pub const MAX_SGE: usize = 4;
/// The QP number of the general services interface (the CM's MADs).
pub const GSI_QPN: u32 = 1;
/// The well-known Q_Key of QP1.
pub const GSI_QKEY: u32 = 0x8001_0000;

/// A queue pair's transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum QpType {
    /// Reliable connection.
    Rc = 0,
    /// Unreliable datagram.
    Ud = 1,
    /// QP1: unreliable datagrams for management (MADs).
    Gsi = 2,
}

impl QpType {
    /// Decodes a byte.
    pub const fn from_u8(v: u8) -> Option<Self> {
        match v {
            0 => Some(Self::Rc),
            1 => Some(Self::Ud),
            2 => Some(Self::Gsi),
            _ => None,
        }
    }
}

/// A queue pair's state (the verbs' state machine).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
pub enum QpState {
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

impl QpState {
    /// Decodes a byte.
    pub const fn from_u8(v: u8) -> Option<Self> {
        match v {
            0 => Some(Self::Reset),
            1 => Some(Self::Init),
            2 => Some(Self::Rtr),
            3 => Some(Self::Rts),
            4 => Some(Self::Sqd),
            5 => Some(Self::Sqe),
            6 => Some(Self::Err),
            _ => None,
        }
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
    /// Every bit the engine knows.
    pub const ALL: u32 = LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ;
}

/// Arguments of [`super::AdminCmd::RdmaCreateQp`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpCreate {
    /// QP number: 1 for the GSI QP, else 2..max_qp.
    pub qpn: u32,
    /// [`QpType`] as a byte.
    pub qp_type: u8,
    /// Protection domain.
    pub pd: u32,
    /// Bus address of the send queue ([`SQ_WQE_LEN`]-byte entries).
    pub sq: u64,
    /// Bus address of the receive queue ([`RQ_WQE_LEN`]-byte entries).
    pub rq: u64,
    /// Send queue entries (power of two).
    pub sq_entries: u32,
    /// Receive queue entries (power of two).
    pub rq_entries: u32,
    /// CQ of send completions.
    pub send_cq: u32,
    /// CQ of receive completions.
    pub recv_cq: u32,
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

/// Where packets of a QP (or one UD send) go.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AddressVector {
    /// Destination MAC.
    pub dmac: [u8; 6],
    /// Source GID table index.
    pub sgid_index: u8,
    /// IP hop limit / TTL.
    pub hop_limit: u8,
    /// IP traffic class / TOS.
    pub traffic_class: u8,
    /// IPv6 flow label (20 bits); also the seed of the UDP source port.
    pub flow_label: u32,
    /// Destination GID.
    pub dgid: Gid,
}

/// Length of an encoded [`AddressVector`].
pub const AV_LEN: usize = 32;

impl AddressVector {
    /// Encodes it.
    pub fn to_bytes(self) -> [u8; AV_LEN] {
        let mut b = [0u8; AV_LEN];
        b[0..6].copy_from_slice(&self.dmac);
        b[6] = self.sgid_index;
        b[7] = self.hop_limit;
        b[8] = self.traffic_class;
        put(&mut b, 12, &self.flow_label.to_le_bytes());
        b[16..32].copy_from_slice(&self.dgid.0);
        b
    }

    /// Decodes it.
    pub fn from_bytes(b: &[u8]) -> Self {
        let mut dmac = [0u8; 6];
        dmac.copy_from_slice(&b[0..6]);
        let mut dgid = [0u8; GID_LEN];
        dgid.copy_from_slice(&b[16..32]);
        Self {
            dmac,
            sgid_index: b[6],
            hop_limit: b[7],
            traffic_class: b[8],
            flow_label: le32(b, 12) & 0xf_ffff,
            dgid: Gid(dgid),
        }
    }
}

/// The block [`super::AdminCmd::RdmaModifyQp`] points at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpModify {
    /// [`qp_attr`] bits: what to set.
    pub mask: u32,
    /// New [`QpState`] as a byte.
    pub state: u8,
    /// Path MTU in bytes (256..=4096, a power of two).
    pub path_mtu: u32,
    /// Q_Key (UD, GSI).
    pub qkey: u32,
    /// [`access`] bits the responder allows (RC).
    pub access: u32,
    /// Remote QP number (RC).
    pub dest_qpn: u32,
    /// First PSN expected from the peer.
    pub rq_psn: u32,
    /// First PSN sent.
    pub sq_psn: u32,
    /// Local ACK timeout exponent: 4.096 µs * 2^timeout (0: none).
    pub timeout: u8,
    /// Retries on timeout or sequence error (0..=7).
    pub retry_cnt: u8,
    /// Retries on RNR NAK (0..=7; 7: forever).
    pub rnr_retry: u8,
    /// RNR NAK timer code this responder advertises.
    pub min_rnr_timer: u8,
    /// RDMA READs outstanding as requester.
    pub max_rd_atomic: u8,
    /// RDMA READs outstanding as responder.
    pub max_dest_rd_atomic: u8,
    /// Where the peer is (RC).
    pub av: AddressVector,
}

/// Length of an encoded [`QpModify`].
pub const QP_MODIFY_LEN: usize = 80;

impl QpModify {
    /// Encodes it.
    pub fn to_bytes(self) -> [u8; QP_MODIFY_LEN] {
        let mut b = [0u8; QP_MODIFY_LEN];
        put(&mut b, 0, &self.mask.to_le_bytes());
        b[4] = self.state;
        b[5] = self.timeout;
        b[6] = self.retry_cnt;
        b[7] = self.rnr_retry;
        b[8] = self.min_rnr_timer;
        b[9] = self.max_rd_atomic;
        b[10] = self.max_dest_rd_atomic;
        put(&mut b, 12, &self.path_mtu.to_le_bytes());
        put(&mut b, 16, &self.qkey.to_le_bytes());
        put(&mut b, 20, &self.access.to_le_bytes());
        put(&mut b, 24, &self.dest_qpn.to_le_bytes());
        put(&mut b, 28, &self.rq_psn.to_le_bytes());
        put(&mut b, 32, &self.sq_psn.to_le_bytes());
        b[48..80].copy_from_slice(&self.av.to_bytes());
        b
    }

    /// Decodes it.
    pub fn from_bytes(b: &[u8; QP_MODIFY_LEN]) -> Self {
        Self {
            mask: le32(b, 0),
            state: b[4],
            timeout: b[5],
            retry_cnt: b[6],
            rnr_retry: b[7],
            min_rnr_timer: b[8],
            max_rd_atomic: b[9],
            max_dest_rd_atomic: b[10],
            path_mtu: le32(b, 12),
            qkey: le32(b, 16),
            access: le32(b, 20),
            dest_qpn: le32(b, 24),
            rq_psn: le32(b, 28),
            sq_psn: le32(b, 32),
            av: AddressVector::from_bytes(&b[48..80]),
        }
    }
}

/// Arguments of [`super::AdminCmd::RdmaRegMr`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MrReg {
    /// Key: index (bits 8-31) and a variant byte; lkey and rkey alike.
    pub key: u32,
    /// Protection domain.
    pub pd: u32,
    /// [`access`] bits.
    pub access: u32,
    /// [`mr_kind`] value.
    pub kind: u8,
    /// Fast-registration MRs: most pages a REG_MR may map.
    pub max_pages: u32,
}

/// Kinds of memory region.
pub mod mr_kind {
    /// Every bus address, as is (`get_dma_mr`, the PD's local DMA key).
    pub const DMA: u8 = 0;
    /// A fast-registration MR: invalid until a REG_MR WQE maps pages.
    pub const FAST_REG: u8 = 1;
}

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
}

/// Send WQE flags (byte 1).
pub mod wqe_flag {
    /// Write a completion when done (else only on error).
    pub const SIGNALED: u8 = 1 << 0;
    /// Set the solicited-event bit.
    pub const SOLICITED: u8 = 1 << 1;
    /// Wait for earlier READs to complete first.
    pub const FENCE: u8 = 1 << 2;
}

/// One scatter/gather entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sge {
    /// Address in the MR's address space.
    pub addr: u64,
    /// Bytes.
    pub len: u32,
    /// Local key of the MR.
    pub lkey: u32,
}

impl Sge {
    fn put(&self, b: &mut [u8], off: usize) {
        put(b, off, &self.addr.to_le_bytes());
        put(b, off + 8, &self.len.to_le_bytes());
        put(b, off + 12, &self.lkey.to_le_bytes());
    }

    fn get(b: &[u8], off: usize) -> Self {
        Self {
            addr: le64(b, off),
            len: le32(b, off + 8),
            lkey: le32(b, off + 12),
        }
    }
}

/// A send queue entry.
///
/// Layout: opcode (0), flags (1), SGE count (2), immediate data or key
/// to invalidate (u32 4, immediate in network order as the verbs hold it),
/// remote address (u64 8), rkey (u32 16), UD destination QP (u32 20) and
/// Q_Key (u32 24), the UD address vector (32..64), SGEs (64..128). A
/// REG_MR carries the MR's key in `rkey`, its access in `remote_qkey`,
/// the page list's bus address in `remote_addr`, and in the address
/// vector's place: IOVA (u64 32), length (u64 40), page count (u32 48),
/// page shift (u8 52).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SqWqe {
    /// [`wqe_op`].
    pub opcode: u8,
    /// [`wqe_flag`] bits.
    pub flags: u8,
    /// SGEs used.
    pub num_sge: u8,
    /// Immediate data, or the key SEND_INV / LOCAL_INV invalidates.
    pub imm_or_key: u32,
    /// WRITE/READ: remote address. REG_MR: page list address.
    pub remote_addr: u64,
    /// WRITE/READ: remote key. REG_MR: the MR's key.
    pub rkey: u32,
    /// UD: destination QP.
    pub dest_qpn: u32,
    /// UD: Q_Key. REG_MR: access bits.
    pub qkey: u32,
    /// UD: where to.
    pub av: AddressVector,
    /// REG_MR: IOVA, length, pages, page shift.
    pub reg: RegMrParams,
    /// Gather list.
    pub sge: [Sge; MAX_SGE],
}

/// What a REG_MR WQE maps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RegMrParams {
    /// First address of the region.
    pub iova: u64,
    /// Bytes.
    pub len: u64,
    /// Pages in the page list.
    pub npages: u32,
    /// log2 of the page size.
    pub page_shift: u8,
}

impl SqWqe {
    /// Encodes it.
    pub fn to_bytes(self) -> [u8; SQ_WQE_LEN] {
        let mut b = [0u8; SQ_WQE_LEN];
        b[0] = self.opcode;
        b[1] = self.flags;
        b[2] = self.num_sge;
        put(&mut b, 4, &self.imm_or_key.to_le_bytes());
        put(&mut b, 8, &self.remote_addr.to_le_bytes());
        put(&mut b, 16, &self.rkey.to_le_bytes());
        put(&mut b, 20, &self.dest_qpn.to_le_bytes());
        put(&mut b, 24, &self.qkey.to_le_bytes());
        if self.opcode == wqe_op::REG_MR {
            put(&mut b, 32, &self.reg.iova.to_le_bytes());
            put(&mut b, 40, &self.reg.len.to_le_bytes());
            put(&mut b, 48, &self.reg.npages.to_le_bytes());
            b[52] = self.reg.page_shift;
        } else {
            b[32..64].copy_from_slice(&self.av.to_bytes());
        }
        for (i, sge) in self.sge.iter().enumerate() {
            sge.put(&mut b, 64 + 16 * i);
        }
        b
    }

    /// Decodes it.
    pub fn from_bytes(b: &[u8; SQ_WQE_LEN]) -> Self {
        let mut w = Self {
            opcode: b[0],
            flags: b[1],
            num_sge: b[2],
            imm_or_key: le32(b, 4),
            remote_addr: le64(b, 8),
            rkey: le32(b, 16),
            dest_qpn: le32(b, 20),
            qkey: le32(b, 24),
            ..Self::default()
        };
        if w.opcode == wqe_op::REG_MR {
            w.reg = RegMrParams {
                iova: le64(b, 32),
                len: le64(b, 40),
                npages: le32(b, 48),
                page_shift: b[52],
            };
        } else {
            w.av = AddressVector::from_bytes(&b[32..64]);
        }
        for i in 0..MAX_SGE {
            w.sge[i] = Sge::get(b, 64 + 16 * i);
        }
        w
    }
}

/// A receive queue entry: SGE count (0), SGEs from 16.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RqWqe {
    /// SGEs used.
    pub num_sge: u8,
    /// Scatter list.
    pub sge: [Sge; MAX_SGE],
}

impl RqWqe {
    /// Encodes it.
    pub fn to_bytes(self) -> [u8; RQ_WQE_LEN] {
        let mut b = [0u8; RQ_WQE_LEN];
        b[0] = self.num_sge;
        for (i, sge) in self.sge.iter().enumerate() {
            sge.put(&mut b, 16 + 16 * i);
        }
        b
    }

    /// Decodes it.
    pub fn from_bytes(b: &[u8; RQ_WQE_LEN]) -> Self {
        let mut w = Self {
            num_sge: b[0],
            ..Self::default()
        };
        for i in 0..MAX_SGE {
            w.sge[i] = Sge::get(b, 16 + 16 * i);
        }
        w
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
    /// LOCAL_INV.
    pub const LOCAL_INV: u8 = 6;
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
    /// The card's phase: flips each time the ring wraps.
    pub const PHASE: u16 = 1 << 15;
}

/// A completion queue entry.
///
/// Layout: WQE index in its queue (u16 0), flags (u16 2), QP number (u32
/// 4), status (8), opcode (9), byte count (u32 12), immediate data or
/// invalidated key (u32 16), UD source QP (u32 20), UD source MAC (24..30).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cqe {
    /// Slot of the WQE in its queue.
    pub wqe_index: u16,
    /// [`cqe_flag`] bits.
    pub flags: u16,
    /// Local QP.
    pub qpn: u32,
    /// [`wc_status`].
    pub status: u8,
    /// [`wc_op`].
    pub opcode: u8,
    /// Bytes received (or read).
    pub byte_len: u32,
    /// Immediate data or invalidated key.
    pub imm_or_key: u32,
    /// UD: sending QP.
    pub src_qp: u32,
    /// UD: sender's MAC.
    pub smac: [u8; 6],
}

impl Cqe {
    /// Encodes it.
    pub fn to_bytes(self) -> [u8; CQE_LEN] {
        let mut b = [0u8; CQE_LEN];
        put(&mut b, 0, &self.wqe_index.to_le_bytes());
        put(&mut b, 2, &self.flags.to_le_bytes());
        put(&mut b, 4, &self.qpn.to_le_bytes());
        b[8] = self.status;
        b[9] = self.opcode;
        put(&mut b, 12, &self.byte_len.to_le_bytes());
        put(&mut b, 16, &self.imm_or_key.to_le_bytes());
        put(&mut b, 20, &self.src_qp.to_le_bytes());
        b[24..30].copy_from_slice(&self.smac);
        b
    }

    /// Decodes it.
    pub fn from_bytes(b: &[u8; CQE_LEN]) -> Self {
        let mut smac = [0u8; 6];
        smac.copy_from_slice(&b[24..30]);
        Self {
            wqe_index: u16::from_le_bytes([b[0], b[1]]),
            flags: u16::from_le_bytes([b[2], b[3]]),
            qpn: le32(b, 4),
            status: b[8],
            opcode: b[9],
            byte_len: le32(b, 12),
            imm_or_key: le32(b, 16),
            src_qp: le32(b, 20),
            smac,
        }
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
}

/// An event queue entry: type (u16 0), flags (u16 2: [`cqe_flag::PHASE`]),
/// id (u32 4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Eqe {
    /// [`eqe_type`].
    pub kind: u16,
    /// Phase bit.
    pub flags: u16,
    /// CQ or QP number.
    pub id: u32,
}

impl Eqe {
    /// Encodes it.
    pub fn to_bytes(self) -> [u8; EQE_LEN] {
        let mut b = [0u8; EQE_LEN];
        put(&mut b, 0, &self.kind.to_le_bytes());
        put(&mut b, 2, &self.flags.to_le_bytes());
        put(&mut b, 4, &self.id.to_le_bytes());
        b
    }

    /// Decodes it.
    pub fn from_bytes(b: &[u8; EQE_LEN]) -> Self {
        Self {
            kind: u16::from_le_bytes([b[0], b[1]]),
            flags: u16::from_le_bytes([b[2], b[3]]),
            id: le32(b, 4),
        }
    }
}

/// The RDMA engine's counters since reset, the result of
/// [`super::AdminCmd::RdmaQueryStats`] (seven u64 from byte 8).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RdmaCounters {
    /// RoCEv2 packets sent.
    pub tx_packets: u64,
    /// RoCEv2 packets received for a QP.
    pub rx_packets: u64,
    /// Packets received with a wrong ICRC (dropped).
    pub rx_icrc_errors: u64,
    /// Packets received for no QP, malformed, or dropped by a QP.
    pub rx_dropped: u64,
    /// Packets sent again (timeout, sequence NAK, RNR NAK).
    pub retransmits: u64,
    /// Sequence-error NAKs sent.
    pub seq_naks: u64,
    /// RNR NAKs sent.
    pub rnr_naks: u64,
}

impl RdmaCounters {
    fn words(&self) -> [u64; 7] {
        [
            self.tx_packets,
            self.rx_packets,
            self.rx_icrc_errors,
            self.rx_dropped,
            self.retransmits,
            self.seq_naks,
            self.rnr_naks,
        ]
    }

    /// Writes the result into an admin entry.
    pub fn write_result(&self, b: &mut [u8; AQ_ENTRY_SIZE]) {
        for (i, w) in self.words().iter().enumerate() {
            put(b, 8 + 8 * i, &w.to_le_bytes());
        }
    }

    /// Reads the result from a completed admin entry.
    pub fn read_result(b: &[u8; AQ_ENTRY_SIZE]) -> Self {
        let w = |i: usize| le64(b, 8 + 8 * i);
        Self {
            tx_packets: w(0),
            rx_packets: w(1),
            rx_icrc_errors: w(2),
            rx_dropped: w(3),
            retransmits: w(4),
            seq_naks: w(5),
            rnr_naks: w(6),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_round_trip() {
        let caps = RdmaCaps {
            max_qp: 1,
            max_qp_wr: 2,
            max_sge: 3,
            max_cq: 4,
            max_cqe: 5,
            max_mr: 6,
            max_pd: 7,
            max_qp_rd_atom: 8,
            max_fast_reg_page_list_len: 9,
            gid_table_len: 10,
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
        };
        c.write_result(&mut b);
        assert_eq!(RdmaCounters::read_result(&b), c);
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
