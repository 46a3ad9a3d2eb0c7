// SPDX-License-Identifier: GPL-2.0

//! The rsnic hardware interface: PCI identity, BAR layout, registers and the
//! self-test block.
//!
//! This file is the single source of truth for the interface between the
//! driver and the card. It is compiled into both `rsnic.ko` (no_std) and the
//! emulator `rsnic-emu` (std), so it uses `core` only and holds no logic
//! beyond what both sides must compute identically. Documentation/rsnic/
//! hardware.rst describes the same interface in prose.

pub mod gft;
pub mod rdma;

/// PCI vendor ID of the card: Xilinx (AMD), the FPGA vendor, as FPGA
/// SmartNICs built on vendor FPGAs (RecoNIC, NetFPGA) carry; the device IDs
/// below are ones no upstream driver binds.
pub const PCI_VENDOR_ID: u16 = 0x10ee;
/// PCI device ID of the physical function (synthetic NIC, control, exceptions).
pub const PCI_DEVICE_ID_PF: u16 = 0x5201;
/// PCI device ID of the virtual function (accelerated data path).
pub const PCI_DEVICE_ID_VF: u16 = 0x5202;
/// PCI class code: network controller, Ethernet.
pub const PCI_CLASS_ETHERNET: u32 = 0x02_00_00;
/// PCI revision of this interface.
pub const PCI_REVISION: u8 = 1;

/// Size of BAR0 (registers), in bytes.
pub const BAR0_SIZE: usize = 0x1_0000;
/// Index of the BAR holding the MSI-X table and PBA.
pub const MSIX_BAR: u32 = 2;
/// Size of the MSI-X BAR, in bytes.
pub const MSIX_BAR_SIZE: usize = 0x2000;
/// Offset of the MSI-X table in [`MSIX_BAR`].
pub const MSIX_TABLE_OFFSET: u32 = 0x0;
/// Offset of the MSI-X pending-bit array in [`MSIX_BAR`].
pub const MSIX_PBA_OFFSET: u32 = 0x1000;
/// MSI-X vectors of a physical function.
pub const PF_MSIX_VECTORS: u16 = 16;
/// MSI-X vectors of a virtual function.
pub const VF_MSIX_VECTORS: u16 = 8;

/// Value of [`regs::MAGIC`]: "RSNC" in little-endian ASCII.
pub const MAGIC: u32 = u32::from_le_bytes(*b"RSNC");
/// Interface version in [`regs::HW_VERSION`]: major in bits 31:16, minor in 15:0.
/// The driver refuses a card whose major differs from its own.
pub const HW_VERSION: u32 = 1 << 16;

/// Register offsets in BAR0. All registers are 32 bits wide and little-endian.
pub mod regs {
    /// Read-only: [`super::MAGIC`].
    pub const MAGIC: usize = 0x000;
    /// Read-only: [`super::HW_VERSION`].
    pub const HW_VERSION: usize = 0x004;
    /// Read-only: firmware version, major.minor.patch in bits 23:16, 15:8, 7:0.
    pub const FW_VERSION: usize = 0x008;
    /// Read-only: [`super::FuncKind`] of this PCI function.
    pub const FUNC_KIND: usize = 0x00c;
    /// Read-only: identifier of the card; the PF and VF of one card share it.
    pub const CARD_ID: usize = 0x010;
    /// Read-only: number of MSI-X vectors the function implements.
    pub const NUM_VECTORS: usize = 0x014;
    /// Read-only: permanent MAC address, bytes 0..4 (byte 0 in bits 7:0).
    pub const MAC_LO: usize = 0x018;
    /// Read-only: permanent MAC address, bytes 4..6 in bits 15:0.
    pub const MAC_HI: usize = 0x01c;

    /// Read-write: device control, see [`super::ctrl`].
    pub const DEV_CTRL: usize = 0x040;
    /// Read-only: device status, see [`super::status`].
    pub const DEV_STATUS: usize = 0x044;

    /// Read-write: scratch register; reads return the last value written.
    pub const SCRATCH: usize = 0x100;
    /// Write-only: writing N raises MSI-X vector N once.
    pub const TEST_IRQ: usize = 0x104;
    /// Read-only: number of test interrupts the card has raised since reset.
    pub const TEST_IRQ_COUNT: usize = 0x108;
    /// Read-write: DMA test buffer bus address, bits 31:0.
    pub const DMA_ADDR_LO: usize = 0x110;
    /// Read-write: DMA test buffer bus address, bits 63:32.
    pub const DMA_ADDR_HI: usize = 0x114;
    /// Read-write: DMA test length in bytes (at most [`super::DMA_TEST_MAX_LEN`]).
    pub const DMA_LEN: usize = 0x118;
    /// Read-write: seed of the test pattern, see [`super::dma_pattern_byte`].
    pub const DMA_SEED: usize = 0x11c;
    /// Write-only: starts a DMA test, see [`super::DmaTestCmd`].
    pub const DMA_CMD: usize = 0x120;
    /// Read-only: outcome of the last DMA test, see [`super::DmaTestStatus`].
    pub const DMA_STATUS: usize = 0x124;
    /// Read-only: number of mismatching bytes found by the last verify.
    pub const DMA_MISMATCHES: usize = 0x128;

    /// Read-write: admin queue bus address, bits 31:0.
    pub const AQ_BASE_LO: usize = 0x200;
    /// Read-write: admin queue bus address, bits 63:32.
    pub const AQ_BASE_HI: usize = 0x204;
    /// Read-write: admin queue entries (power of two, at most
    /// [`super::AQ_MAX_ENTRIES`]); writing it resets both queue indices.
    pub const AQ_SIZE: usize = 0x208;
    /// Write-only doorbell: index one past the last command submitted.
    pub const AQ_TAIL: usize = 0x20c;
    /// Read-only: index of the next command the card will process.
    pub const AQ_HEAD: usize = 0x210;

    /// Read-only: link state, see [`super::link`].
    pub const LINK_STATUS: usize = 0x240;

    /// First queue-pair doorbell block; pair `n` is at
    /// `QP_DOORBELLS + n * QP_DOORBELL_STRIDE`.
    pub const QP_DOORBELLS: usize = 0x1000;
    /// Bytes between two pairs' doorbell blocks.
    pub const QP_DOORBELL_STRIDE: usize = 0x10;
    /// In a doorbell block, write-only: TX ring tail (next free index).
    pub const DB_TX_TAIL: usize = 0x0;
    /// In a doorbell block, write-only: RX ring tail (next free index).
    pub const DB_RX_TAIL: usize = 0x4;
    /// In a doorbell block, write-only: completion-queue head (next entry
    /// the driver will read), plus [`super::CQ_ARM`].
    pub const DB_CQ_HEAD: usize = 0x8;

    /// One past the last register; the size the driver maps.
    pub const END: usize = 0x2000;
}

/// Bits of [`regs::LINK_STATUS`].
pub mod link {
    /// The cable is connected at both ends.
    pub const UP: u32 = 1 << 0;
}

/// Link speed the card reports, in Mbit/s.
pub const LINK_SPEED_MBPS: u32 = 100_000;

/// MSI-X vector of admin events (link changes).
pub const ADMIN_VECTOR: u16 = 0;

/// MSI-X vector of queue pair `qp`.
pub const fn qp_vector(qp: u16) -> u16 {
    qp + 1
}

/// Most queue pairs of a function.
pub const MAX_QUEUE_PAIRS: u16 = 8;
/// Fewest descriptors in a TX or RX ring.
pub const MIN_RING_ENTRIES: u16 = 64;
/// Most descriptors in a TX or RX ring.
pub const MAX_RING_ENTRIES: u16 = 4096;
/// Most entries in the admin queue.
pub const AQ_MAX_ENTRIES: u32 = 64;
/// Smallest MTU the card accepts.
pub const MIN_MTU: u32 = 68;
/// Largest MTU the card accepts.
pub const MAX_MTU: u32 = 9000;
/// Largest frame on the wire: MTU plus Ethernet header and one VLAN tag.
pub const MAX_FRAME: u32 = MAX_MTU + 14 + 4;

/// Written with [`regs::DB_CQ_HEAD`]: raise the pair's vector at the next
/// completion (or at once if completions are already pending).
pub const CQ_ARM: u32 = 1 << 31;

/// Reads a little-endian `u16` at `off`.
const fn le16(b: &[u8], off: usize) -> u16 {
    u16::from_le_bytes([b[off], b[off + 1]])
}

/// Reads a little-endian `u32` at `off`.
const fn le32(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

/// Reads a little-endian `u64` at `off`.
const fn le64(b: &[u8], off: usize) -> u64 {
    (le32(b, off) as u64) | ((le32(b, off + 4) as u64) << 32)
}

/// Writes `v` little-endian at `off`.
fn put(b: &mut [u8], off: usize, v: &[u8]) {
    b[off..off + v.len()].copy_from_slice(v);
}

/// A TX descriptor: one buffer of an outgoing frame. 32 bytes in the ring.
///
/// A frame is one or more descriptors; the last has [`TxDesc::EOP`]. The
/// first carries the frame's offload requests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxDesc {
    /// Bus address of the buffer.
    pub addr: u64,
    /// Bytes in the buffer.
    pub len: u32,
    /// [`TxDesc::EOP`], [`TxDesc::CSUM`], [`TxDesc::TSO`].
    pub flags: u16,
    /// TSO: payload bytes per segment.
    pub mss: u16,
    /// CSUM: offset of the checksummed area from the frame start.
    pub csum_start: u16,
    /// CSUM: where the checksum goes, from `csum_start`.
    pub csum_offset: u16,
    /// TSO: bytes of headers (L2 + L3 + L4) replicated in each segment.
    pub hdr_len: u16,
}

impl TxDesc {
    /// Size in the ring.
    pub const SIZE: usize = 32;
    /// Last buffer of the frame.
    pub const EOP: u16 = 1 << 0;
    /// Fill in the L4 checksum (`csum_start`, `csum_offset`).
    pub const CSUM: u16 = 1 << 1;
    /// Segment the TCP frame into `mss`-byte segments.
    pub const TSO: u16 = 1 << 2;
    /// First descriptor, PF only: the frame starts with a
    /// [`gft::META_LEN`]-byte [`gft::ReinjectMeta`] (a packet the host
    /// took as a GFT exception, sent back with the action to apply).
    pub const GFT_REINJECT: u16 = 1 << 3;

    /// Ring encoding.
    pub fn to_bytes(self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        put(&mut b, 0, &self.addr.to_le_bytes());
        put(&mut b, 8, &self.len.to_le_bytes());
        put(&mut b, 12, &self.flags.to_le_bytes());
        put(&mut b, 14, &self.mss.to_le_bytes());
        put(&mut b, 16, &self.csum_start.to_le_bytes());
        put(&mut b, 18, &self.csum_offset.to_le_bytes());
        put(&mut b, 20, &self.hdr_len.to_le_bytes());
        b
    }

    /// Decodes a ring entry.
    pub fn from_bytes(b: &[u8; Self::SIZE]) -> Self {
        Self {
            addr: le64(b, 0),
            len: le32(b, 8),
            flags: le16(b, 12),
            mss: le16(b, 14),
            csum_start: le16(b, 16),
            csum_offset: le16(b, 18),
            hdr_len: le16(b, 20),
        }
    }
}

/// An RX descriptor: one empty buffer for the card to fill with a frame.
/// 16 bytes in the ring.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RxDesc {
    /// Bus address of the buffer.
    pub addr: u64,
    /// Buffer size in bytes.
    pub len: u32,
}

impl RxDesc {
    /// Size in the ring.
    pub const SIZE: usize = 16;

    /// Ring encoding.
    pub fn to_bytes(self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        put(&mut b, 0, &self.addr.to_le_bytes());
        put(&mut b, 8, &self.len.to_le_bytes());
        b
    }

    /// Decodes a ring entry.
    pub fn from_bytes(b: &[u8; Self::SIZE]) -> Self {
        Self {
            addr: le64(b, 0),
            len: le32(b, 8),
        }
    }
}

/// A completion: the card finished a TX frame or filled an RX buffer.
/// 16 bytes in the completion queue.
///
/// The card writes entries in order and flips [`Cqe::PHASE`] each time it
/// wraps around the queue, starting with the bit set; an entry is new when
/// its phase matches the driver's expected phase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cqe {
    /// TX: ring index of the frame's last descriptor. RX: ring index of the
    /// filled buffer.
    pub index: u16,
    /// [`Cqe::PHASE`], [`Cqe::RX`], [`Cqe::CSUM_OK`], [`Cqe::HASH`],
    /// [`Cqe::HASH_L4`], [`Cqe::FCS_ERR`].
    pub flags: u16,
    /// RX: frame length in bytes.
    pub len: u32,
    /// RX: RSS hash of the frame, when [`Cqe::HASH`].
    pub hash: u32,
}

impl Cqe {
    /// Size in the completion queue.
    pub const SIZE: usize = 16;
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
    /// [`gft::META_LEN`]-byte [`gft::ExceptionMeta`], the frame follows
    /// (`len` counts both). Only on the PF's queue pair 0.
    pub const GFT_EXCEPTION: u16 = 1 << 5;

    /// Queue encoding.
    pub fn to_bytes(self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        put(&mut b, 0, &self.index.to_le_bytes());
        put(&mut b, 2, &self.flags.to_le_bytes());
        put(&mut b, 4, &self.len.to_le_bytes());
        put(&mut b, 8, &self.hash.to_le_bytes());
        b
    }

    /// Decodes a queue entry.
    pub fn from_bytes(b: &[u8; Self::SIZE]) -> Self {
        Self {
            index: le16(b, 0),
            flags: le16(b, 2),
            len: le32(b, 4),
            hash: le32(b, 8),
        }
    }
}

/// Most segments the card cuts one TSO frame into; it drops larger
/// requests (the driver tells the stack, which splits before).
pub const TSO_MAX_SEGS: u32 = 64;

/// Where every entry the card writes into a ring (NIC [`Cqe`], admin
/// entry, RDMA CQE and EQE) holds its 16-bit flags word, with the bit that
/// says the entry is there. The card writes that word last.
pub const ENTRY_FLAGS_OFFSET: usize = 2;

/// Size of an admin queue entry.
pub const AQ_ENTRY_SIZE: usize = 64;
/// Admin entry flag the card sets when it has written the result.
pub const AQ_DONE: u16 = 1 << 15;

/// Bits of [`AdminCmd::SetRxMode`].
pub mod rx_mode {
    /// Accept every frame.
    pub const PROMISC: u32 = 1 << 0;
    /// Accept every multicast frame.
    pub const ALLMULTI: u32 = 1 << 1;
    /// Accept broadcast frames.
    pub const BROADCAST: u32 = 1 << 2;
}

/// Bits of [`AdminCmd::SetOffloads`] and [`DeviceInfo::offloads`].
pub mod offload {
    /// TX L4 checksum insertion.
    pub const TX_CSUM: u32 = 1 << 0;
    /// RX L4 checksum validation.
    pub const RX_CSUM: u32 = 1 << 1;
    /// TCP segmentation.
    pub const TSO: u32 = 1 << 2;
    /// Receive-side scaling.
    pub const RSS: u32 = 1 << 3;
}

/// Bytes of the RSS (Toeplitz) hash key.
pub const RSS_KEY_LEN: usize = 40;
/// Entries of the RSS indirection table (one queue pair index each).
pub const RSS_TABLE_LEN: usize = 128;
/// Size of the RSS configuration block [`AdminCmd::SetRss`] points at:
/// the key, then the table.
pub const RSS_CONFIG_LEN: usize = RSS_KEY_LEN + RSS_TABLE_LEN;

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

/// An admin command. Encoded in a 64-byte admin queue entry: opcode (u16
/// at 0), flags (u16 at 2, [`AQ_DONE`] set by the card), status (u16 at 4,
/// an [`AdminStatus`] written by the card), parameters and results from
/// byte 8.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdminCmd {
    /// Read the card's limits and features; result: [`DeviceInfo`].
    QueryDevice,
    /// Create and start a queue pair.
    CreateQp(QpConfig),
    /// Stop and forget a queue pair; in-flight buffers are abandoned.
    DestroyQp {
        /// Queue pair index.
        qp: u16,
    },
    /// Set the station MAC address RX filters on.
    SetMac {
        /// New address.
        mac: [u8; 6],
    },
    /// Set the largest frame payload the card sends and accepts.
    SetMtu {
        /// MTU in bytes, [`MIN_MTU`]..=[`MAX_MTU`].
        mtu: u32,
    },
    /// Set the RX filter.
    SetRxMode {
        /// [`rx_mode`] bits.
        flags: u32,
        /// Multicast filter, see [`mc_filter_bit`].
        mc_filter: u64,
    },
    /// Enable offloads ([`offload`] bits); others are disabled.
    SetOffloads {
        /// [`offload`] bits.
        flags: u32,
    },
    /// Set the RSS key and indirection table from a [`RSS_CONFIG_LEN`]-byte
    /// block in host memory.
    SetRss {
        /// Bus address of the block.
        config: u64,
    },
    /// Set interrupt moderation of every queue pair (running and future):
    /// an armed pair raises its vector once `frames` completions are
    /// pending or the oldest has waited `usecs`, whichever comes first.
    SetCoalesce {
        /// Longest wait in microseconds, 0..=[`MAX_COALESCE_USECS`]; 0: at once.
        usecs: u32,
        /// Pending completions that raise at once, 0..=[`MAX_COALESCE_FRAMES`]
        /// (0: no count limit).
        frames: u32,
    },
    /// Read the card's counters of a queue pair (running or not; they
    /// survive destroy and create, and reset with the function). Result:
    /// [`QpCardStats`].
    QueryQpStats {
        /// Queue pair index.
        qp: u16,
    },
    /// PF only: where the card delivers received frames. With `vf` set,
    /// frames go to the card's VF while the VF has a running queue pair
    /// (and back to the PF the moment it has none, e.g. when unplugged);
    /// otherwise to the PF's queues (the synthetic data path). The
    /// completion is the acknowledgement: once it is seen, no further
    /// frame goes the old way.
    SetDatapath {
        /// Deliver to the VF.
        vf: bool,
    },
    /// PF only: turn the GFT on or off and size its table. Shrinking
    /// below the flows held is [`AdminStatus::BadState`].
    GftConfig {
        /// [`gft::config`] bits.
        flags: u32,
        /// Capacity, 1..=[`gft::MAX_FLOWS_LIMIT`].
        max_flows: u32,
    },
    /// PF only: the current policy generation; a hit on a flow of another
    /// generation is an exception ([`gft::ExceptionReason::Stale`]).
    GftSetGeneration {
        /// Generation.
        generation: u32,
    },
    /// PF only: add a flow, or replace the flow with the same key, from a
    /// [`gft::FLOW_RECORD_LEN`]-byte block ([`gft::FlowRecord`]). A full
    /// table is [`AdminStatus::NoSpace`].
    GftInstall {
        /// Bus address of the block.
        record: u64,
    },
    /// PF only: remove the flow whose [`gft::KEY_LEN`]-byte key is at
    /// `key`; [`AdminStatus::NotFound`] if there is none.
    GftDelete {
        /// Bus address of the key.
        key: u64,
    },
    /// PF only: remove every flow.
    GftFlush,
    /// PF only: write up to `max` [`gft::FlowCounters`] records to `buf`,
    /// from table slot `cursor` on. Result: [`GftDumpResult`].
    GftDump {
        /// Bus address of the buffer.
        buf: u64,
        /// Records it holds.
        max: u32,
        /// Slot to start at (0, then the previous result's `next`).
        cursor: u32,
    },
    /// PF only: the card's GFT counters; result: [`gft::CardGftStats`].
    GftQueryStats,
    /// PF only: the RDMA engine's limits; result: [`rdma::RdmaCaps`].
    RdmaQueryCaps,
    /// PF only: set entry `index` of the RDMA engine's GID table (the
    /// RoCEv2 addresses it sends from and accepts packets for).
    RdmaSetGid {
        /// Entry, below [`rdma::GID_TABLE_LEN`].
        index: u32,
        /// Address.
        gid: rdma::Gid,
    },
    /// PF only: clear entry `index` of the GID table.
    RdmaDelGid {
        /// Entry, below [`rdma::GID_TABLE_LEN`].
        index: u32,
    },
    /// PF only: set up the RDMA event queue (one per function).
    RdmaCreateEq {
        /// Bus address of the ring ([`rdma::EQE_LEN`]-byte entries).
        ring: u64,
        /// Entries (power of two, 64..=4096).
        entries: u32,
        /// MSI-X vector raised when an event is written.
        vector: u16,
    },
    /// PF only: stop using the event queue.
    RdmaDestroyEq,
    /// PF only: create completion queue `cqn`.
    RdmaCreateCq {
        /// CQ number, below `max_cq`.
        cqn: u32,
        /// Bus address of the ring ([`rdma::CQE_LEN`]-byte entries).
        ring: u64,
        /// Entries (power of two, up to `max_cqe`).
        entries: u32,
    },
    /// PF only: destroy a completion queue no QP uses.
    RdmaDestroyCq {
        /// CQ number.
        cqn: u32,
    },
    /// PF only: create a queue pair in the reset state.
    RdmaCreateQp(rdma::QpCreate),
    /// PF only: change a queue pair's attributes and state from a
    /// [`rdma::QP_MODIFY_LEN`]-byte [`rdma::QpModify`] block.
    RdmaModifyQp {
        /// QP number.
        qpn: u32,
        /// Bus address of the block.
        block: u64,
    },
    /// PF only: a queue pair's state; result: [`rdma::QpState`] as the
    /// byte at 8.
    RdmaQueryQp {
        /// QP number.
        qpn: u32,
    },
    /// PF only: destroy a queue pair; its outstanding WQEs are dropped.
    RdmaDestroyQp {
        /// QP number.
        qpn: u32,
    },
    /// PF only: create a memory region.
    RdmaRegMr(rdma::MrReg),
    /// PF only: destroy a memory region.
    RdmaDeregMr {
        /// Its key.
        key: u32,
    },
    /// PF only: the RDMA engine's counters; result: [`rdma::RdmaCounters`].
    RdmaQueryStats,
}

/// Result of [`AdminCmd::GftDump`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GftDumpResult {
    /// Records written.
    pub count: u32,
    /// Cursor of the next call; 0 when the table has been walked.
    pub next: u32,
}

impl GftDumpResult {
    /// Writes the result into an admin entry.
    pub fn write_result(&self, b: &mut [u8; AQ_ENTRY_SIZE]) {
        put(b, 8, &self.count.to_le_bytes());
        put(b, 12, &self.next.to_le_bytes());
    }

    /// Reads the result from a completed admin entry.
    pub fn read_result(b: &[u8; AQ_ENTRY_SIZE]) -> Self {
        Self {
            count: le32(b, 8),
            next: le32(b, 12),
        }
    }
}

/// Longest interrupt moderation delay the card supports, in microseconds.
pub const MAX_COALESCE_USECS: u32 = 1000;
/// Largest interrupt moderation frame count the card supports.
pub const MAX_COALESCE_FRAMES: u32 = 256;

/// Result of [`AdminCmd::QueryQpStats`]: what the card counted for a
/// queue pair, independent of the driver's own counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpCardStats {
    /// RX frames dropped for lack of a posted buffer.
    pub rx_no_buffer: u64,
    /// Bytes of descriptors and completions the card moved.
    pub dma_meta_bytes: u64,
    /// Bytes of frame data the card moved (TX read plus RX written).
    pub dma_payload_bytes: u64,
    /// Doorbells or descriptors the card rejected.
    pub bad_requests: u64,
    /// Interrupts raised.
    pub irqs: u64,
    /// Of those, raised while interrupt moderation was on.
    pub irqs_moderated: u64,
    /// TCP segments the card cut from TSO frames.
    pub tso_segments: u64,
}

impl QpCardStats {
    /// Writes the result into an admin entry.
    pub fn write_result(&self, b: &mut [u8; AQ_ENTRY_SIZE]) {
        for (i, v) in self.to_array().iter().enumerate() {
            put(b, 8 + 8 * i, &v.to_le_bytes());
        }
    }

    /// Reads the result from a completed admin entry.
    pub fn read_result(b: &[u8; AQ_ENTRY_SIZE]) -> Self {
        let v = |i: usize| le64(b, 8 + 8 * i);
        Self {
            rx_no_buffer: v(0),
            dma_meta_bytes: v(1),
            dma_payload_bytes: v(2),
            bad_requests: v(3),
            irqs: v(4),
            irqs_moderated: v(5),
            tso_segments: v(6),
        }
    }

    /// The counters in result order, with their `ethtool -S` names.
    pub fn named(&self) -> [(&'static str, u64); 7] {
        let v = self.to_array();
        [
            ("card_rx_no_buffer", v[0]),
            ("card_dma_meta_bytes", v[1]),
            ("card_dma_payload_bytes", v[2]),
            ("card_bad_requests", v[3]),
            ("card_irqs", v[4]),
            ("card_irqs_moderated", v[5]),
            ("card_tso_segments", v[6]),
        ]
    }

    fn to_array(self) -> [u64; 7] {
        [
            self.rx_no_buffer,
            self.dma_meta_bytes,
            self.dma_payload_bytes,
            self.bad_requests,
            self.irqs,
            self.irqs_moderated,
            self.tso_segments,
        ]
    }
}

/// Status the card writes into an admin entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
pub enum AdminStatus {
    /// Done.
    Ok = 0,
    /// Unknown opcode.
    BadOpcode = 1,
    /// A parameter is out of range.
    BadParam = 2,
    /// The queue pair exists (create) or does not (destroy).
    BadState = 3,
    /// The card failed internally; the command had no effect.
    DeviceError = 4,
    /// The table is full.
    NoSpace = 5,
    /// No such entry.
    NotFound = 6,
}

impl AdminStatus {
    /// Decodes a status field; unknown values are `None`.
    pub fn from_raw(v: u16) -> Option<Self> {
        match v {
            0 => Some(Self::Ok),
            1 => Some(Self::BadOpcode),
            2 => Some(Self::BadParam),
            3 => Some(Self::BadState),
            4 => Some(Self::DeviceError),
            5 => Some(Self::NoSpace),
            6 => Some(Self::NotFound),
            _ => None,
        }
    }
}

/// Rings of one queue pair, as given to [`AdminCmd::CreateQp`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpConfig {
    /// Queue pair index, below [`MAX_QUEUE_PAIRS`].
    pub qp: u16,
    /// MSI-X vector of the pair's completions.
    pub vector: u16,
    /// TX ring entries (power of two, [`MIN_RING_ENTRIES`]..=[`MAX_RING_ENTRIES`]).
    pub tx_entries: u16,
    /// RX ring entries (as `tx_entries`).
    pub rx_entries: u16,
    /// Bus address of the TX ring.
    pub tx_ring: u64,
    /// Bus address of the RX ring.
    pub rx_ring: u64,
    /// Bus address of the completion queue.
    pub cq: u64,
    /// Completion queue entries: at least `tx_entries + rx_entries`, power of two.
    pub cq_entries: u32,
}

/// Result of [`AdminCmd::QueryDevice`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Queue pairs available.
    pub max_qps: u32,
    /// Largest ring.
    pub max_ring_entries: u32,
    /// Link speed in Mbit/s.
    pub speed_mbps: u32,
    /// [`offload`] bits the card supports.
    pub offloads: u32,
    /// Largest MTU.
    pub max_mtu: u32,
}

const OP_QUERY_DEVICE: u16 = 1;
const OP_CREATE_QP: u16 = 2;
const OP_DESTROY_QP: u16 = 3;
const OP_SET_MAC: u16 = 4;
const OP_SET_MTU: u16 = 5;
const OP_SET_RX_MODE: u16 = 6;
const OP_SET_OFFLOADS: u16 = 7;
const OP_SET_RSS: u16 = 8;
const OP_SET_COALESCE: u16 = 9;
const OP_QUERY_QP_STATS: u16 = 10;
const OP_SET_DATAPATH: u16 = 11;
const OP_GFT_CONFIG: u16 = 12;
const OP_GFT_SET_GENERATION: u16 = 13;
const OP_GFT_INSTALL: u16 = 14;
const OP_GFT_DELETE: u16 = 15;
const OP_GFT_FLUSH: u16 = 16;
const OP_GFT_DUMP: u16 = 17;
const OP_GFT_QUERY_STATS: u16 = 18;
const OP_RDMA_QUERY_CAPS: u16 = 19;
const OP_RDMA_SET_GID: u16 = 20;
const OP_RDMA_DEL_GID: u16 = 21;
const OP_RDMA_CREATE_EQ: u16 = 22;
const OP_RDMA_DESTROY_EQ: u16 = 23;
const OP_RDMA_CREATE_CQ: u16 = 24;
const OP_RDMA_DESTROY_CQ: u16 = 25;
const OP_RDMA_CREATE_QP: u16 = 26;
const OP_RDMA_MODIFY_QP: u16 = 27;
const OP_RDMA_QUERY_QP: u16 = 28;
const OP_RDMA_DESTROY_QP: u16 = 29;
const OP_RDMA_REG_MR: u16 = 30;
const OP_RDMA_DEREG_MR: u16 = 31;
const OP_RDMA_QUERY_STATS: u16 = 32;

impl AdminCmd {
    /// Whether it is one of the RDMA engine's commands.
    pub fn is_rdma(&self) -> bool {
        matches!(
            self,
            Self::RdmaQueryCaps
                | Self::RdmaSetGid { .. }
                | Self::RdmaDelGid { .. }
                | Self::RdmaCreateEq { .. }
                | Self::RdmaDestroyEq
                | Self::RdmaCreateCq { .. }
                | Self::RdmaDestroyCq { .. }
                | Self::RdmaCreateQp(_)
                | Self::RdmaModifyQp { .. }
                | Self::RdmaQueryQp { .. }
                | Self::RdmaDestroyQp { .. }
                | Self::RdmaRegMr(_)
                | Self::RdmaDeregMr { .. }
                | Self::RdmaQueryStats
        )
    }

    /// The admin entry for this command (flags and status zero).
    pub fn to_bytes(self) -> [u8; AQ_ENTRY_SIZE] {
        let mut b = [0u8; AQ_ENTRY_SIZE];
        let op = match self {
            Self::QueryDevice => OP_QUERY_DEVICE,
            Self::CreateQp(c) => {
                put(&mut b, 8, &c.qp.to_le_bytes());
                put(&mut b, 10, &c.vector.to_le_bytes());
                put(&mut b, 12, &c.tx_entries.to_le_bytes());
                put(&mut b, 14, &c.rx_entries.to_le_bytes());
                put(&mut b, 16, &c.tx_ring.to_le_bytes());
                put(&mut b, 24, &c.rx_ring.to_le_bytes());
                put(&mut b, 32, &c.cq.to_le_bytes());
                put(&mut b, 40, &c.cq_entries.to_le_bytes());
                OP_CREATE_QP
            }
            Self::DestroyQp { qp } => {
                put(&mut b, 8, &qp.to_le_bytes());
                OP_DESTROY_QP
            }
            Self::SetMac { mac } => {
                put(&mut b, 8, &mac);
                OP_SET_MAC
            }
            Self::SetMtu { mtu } => {
                put(&mut b, 8, &mtu.to_le_bytes());
                OP_SET_MTU
            }
            Self::SetRxMode { flags, mc_filter } => {
                put(&mut b, 8, &flags.to_le_bytes());
                put(&mut b, 16, &mc_filter.to_le_bytes());
                OP_SET_RX_MODE
            }
            Self::SetOffloads { flags } => {
                put(&mut b, 8, &flags.to_le_bytes());
                OP_SET_OFFLOADS
            }
            Self::SetRss { config } => {
                put(&mut b, 8, &config.to_le_bytes());
                OP_SET_RSS
            }
            Self::SetCoalesce { usecs, frames } => {
                put(&mut b, 8, &usecs.to_le_bytes());
                put(&mut b, 12, &frames.to_le_bytes());
                OP_SET_COALESCE
            }
            Self::QueryQpStats { qp } => {
                put(&mut b, 8, &qp.to_le_bytes());
                OP_QUERY_QP_STATS
            }
            Self::SetDatapath { vf } => {
                put(&mut b, 8, &u32::from(vf).to_le_bytes());
                OP_SET_DATAPATH
            }
            Self::GftConfig { flags, max_flows } => {
                put(&mut b, 8, &flags.to_le_bytes());
                put(&mut b, 12, &max_flows.to_le_bytes());
                OP_GFT_CONFIG
            }
            Self::GftSetGeneration { generation } => {
                put(&mut b, 8, &generation.to_le_bytes());
                OP_GFT_SET_GENERATION
            }
            Self::GftInstall { record } => {
                put(&mut b, 8, &record.to_le_bytes());
                OP_GFT_INSTALL
            }
            Self::GftDelete { key } => {
                put(&mut b, 8, &key.to_le_bytes());
                OP_GFT_DELETE
            }
            Self::GftFlush => OP_GFT_FLUSH,
            Self::GftDump { buf, max, cursor } => {
                put(&mut b, 8, &buf.to_le_bytes());
                put(&mut b, 16, &max.to_le_bytes());
                put(&mut b, 20, &cursor.to_le_bytes());
                OP_GFT_DUMP
            }
            Self::GftQueryStats => OP_GFT_QUERY_STATS,
            Self::RdmaQueryCaps => OP_RDMA_QUERY_CAPS,
            Self::RdmaSetGid { index, gid } => {
                put(&mut b, 8, &index.to_le_bytes());
                put(&mut b, 16, &gid.0);
                OP_RDMA_SET_GID
            }
            Self::RdmaDelGid { index } => {
                put(&mut b, 8, &index.to_le_bytes());
                OP_RDMA_DEL_GID
            }
            Self::RdmaCreateEq {
                ring,
                entries,
                vector,
            } => {
                put(&mut b, 8, &ring.to_le_bytes());
                put(&mut b, 16, &entries.to_le_bytes());
                put(&mut b, 20, &vector.to_le_bytes());
                OP_RDMA_CREATE_EQ
            }
            Self::RdmaDestroyEq => OP_RDMA_DESTROY_EQ,
            Self::RdmaCreateCq { cqn, ring, entries } => {
                put(&mut b, 8, &cqn.to_le_bytes());
                put(&mut b, 16, &ring.to_le_bytes());
                put(&mut b, 24, &entries.to_le_bytes());
                OP_RDMA_CREATE_CQ
            }
            Self::RdmaDestroyCq { cqn } => {
                put(&mut b, 8, &cqn.to_le_bytes());
                OP_RDMA_DESTROY_CQ
            }
            Self::RdmaCreateQp(q) => {
                put(&mut b, 8, &q.qpn.to_le_bytes());
                b[12] = q.qp_type;
                put(&mut b, 16, &q.pd.to_le_bytes());
                put(&mut b, 24, &q.sq.to_le_bytes());
                put(&mut b, 32, &q.rq.to_le_bytes());
                put(&mut b, 40, &q.sq_entries.to_le_bytes());
                put(&mut b, 44, &q.rq_entries.to_le_bytes());
                put(&mut b, 48, &q.send_cq.to_le_bytes());
                put(&mut b, 52, &q.recv_cq.to_le_bytes());
                OP_RDMA_CREATE_QP
            }
            Self::RdmaModifyQp { qpn, block } => {
                put(&mut b, 8, &qpn.to_le_bytes());
                put(&mut b, 16, &block.to_le_bytes());
                OP_RDMA_MODIFY_QP
            }
            Self::RdmaQueryQp { qpn } => {
                put(&mut b, 8, &qpn.to_le_bytes());
                OP_RDMA_QUERY_QP
            }
            Self::RdmaDestroyQp { qpn } => {
                put(&mut b, 8, &qpn.to_le_bytes());
                OP_RDMA_DESTROY_QP
            }
            Self::RdmaRegMr(m) => {
                put(&mut b, 8, &m.key.to_le_bytes());
                put(&mut b, 12, &m.pd.to_le_bytes());
                put(&mut b, 16, &m.access.to_le_bytes());
                b[20] = m.kind;
                put(&mut b, 24, &m.max_pages.to_le_bytes());
                OP_RDMA_REG_MR
            }
            Self::RdmaDeregMr { key } => {
                put(&mut b, 8, &key.to_le_bytes());
                OP_RDMA_DEREG_MR
            }
            Self::RdmaQueryStats => OP_RDMA_QUERY_STATS,
        };
        put(&mut b, 0, &op.to_le_bytes());
        b
    }

    /// Decodes an admin entry; an unknown opcode is [`AdminStatus::BadOpcode`].
    pub fn from_bytes(b: &[u8; AQ_ENTRY_SIZE]) -> Result<Self, AdminStatus> {
        Ok(match le16(b, 0) {
            OP_QUERY_DEVICE => Self::QueryDevice,
            OP_CREATE_QP => Self::CreateQp(QpConfig {
                qp: le16(b, 8),
                vector: le16(b, 10),
                tx_entries: le16(b, 12),
                rx_entries: le16(b, 14),
                tx_ring: le64(b, 16),
                rx_ring: le64(b, 24),
                cq: le64(b, 32),
                cq_entries: le32(b, 40),
            }),
            OP_DESTROY_QP => Self::DestroyQp { qp: le16(b, 8) },
            OP_SET_MAC => Self::SetMac {
                mac: [b[8], b[9], b[10], b[11], b[12], b[13]],
            },
            OP_SET_MTU => Self::SetMtu { mtu: le32(b, 8) },
            OP_SET_RX_MODE => Self::SetRxMode {
                flags: le32(b, 8),
                mc_filter: le64(b, 16),
            },
            OP_SET_OFFLOADS => Self::SetOffloads { flags: le32(b, 8) },
            OP_SET_RSS => Self::SetRss { config: le64(b, 8) },
            OP_SET_COALESCE => Self::SetCoalesce {
                usecs: le32(b, 8),
                frames: le32(b, 12),
            },
            OP_QUERY_QP_STATS => Self::QueryQpStats { qp: le16(b, 8) },
            OP_SET_DATAPATH => match le32(b, 8) {
                0 => Self::SetDatapath { vf: false },
                1 => Self::SetDatapath { vf: true },
                _ => return Err(AdminStatus::BadParam),
            },
            OP_GFT_CONFIG => Self::GftConfig {
                flags: le32(b, 8),
                max_flows: le32(b, 12),
            },
            OP_GFT_SET_GENERATION => Self::GftSetGeneration {
                generation: le32(b, 8),
            },
            OP_GFT_INSTALL => Self::GftInstall { record: le64(b, 8) },
            OP_GFT_DELETE => Self::GftDelete { key: le64(b, 8) },
            OP_GFT_FLUSH => Self::GftFlush,
            OP_GFT_DUMP => Self::GftDump {
                buf: le64(b, 8),
                max: le32(b, 16),
                cursor: le32(b, 20),
            },
            OP_GFT_QUERY_STATS => Self::GftQueryStats,
            OP_RDMA_QUERY_CAPS => Self::RdmaQueryCaps,
            OP_RDMA_SET_GID => {
                let mut gid = [0u8; rdma::GID_LEN];
                gid.copy_from_slice(&b[16..32]);
                Self::RdmaSetGid {
                    index: le32(b, 8),
                    gid: rdma::Gid(gid),
                }
            }
            OP_RDMA_DEL_GID => Self::RdmaDelGid { index: le32(b, 8) },
            OP_RDMA_CREATE_EQ => Self::RdmaCreateEq {
                ring: le64(b, 8),
                entries: le32(b, 16),
                vector: le16(b, 20),
            },
            OP_RDMA_DESTROY_EQ => Self::RdmaDestroyEq,
            OP_RDMA_CREATE_CQ => Self::RdmaCreateCq {
                cqn: le32(b, 8),
                ring: le64(b, 16),
                entries: le32(b, 24),
            },
            OP_RDMA_DESTROY_CQ => Self::RdmaDestroyCq { cqn: le32(b, 8) },
            OP_RDMA_CREATE_QP => Self::RdmaCreateQp(rdma::QpCreate {
                qpn: le32(b, 8),
                qp_type: b[12],
                pd: le32(b, 16),
                sq: le64(b, 24),
                rq: le64(b, 32),
                sq_entries: le32(b, 40),
                rq_entries: le32(b, 44),
                send_cq: le32(b, 48),
                recv_cq: le32(b, 52),
            }),
            OP_RDMA_MODIFY_QP => Self::RdmaModifyQp {
                qpn: le32(b, 8),
                block: le64(b, 16),
            },
            OP_RDMA_QUERY_QP => Self::RdmaQueryQp { qpn: le32(b, 8) },
            OP_RDMA_DESTROY_QP => Self::RdmaDestroyQp { qpn: le32(b, 8) },
            OP_RDMA_REG_MR => Self::RdmaRegMr(rdma::MrReg {
                key: le32(b, 8),
                pd: le32(b, 12),
                access: le32(b, 16),
                kind: b[20],
                max_pages: le32(b, 24),
            }),
            OP_RDMA_DEREG_MR => Self::RdmaDeregMr { key: le32(b, 8) },
            OP_RDMA_QUERY_STATS => Self::RdmaQueryStats,
            _ => return Err(AdminStatus::BadOpcode),
        })
    }
}

impl DeviceInfo {
    /// Writes the result into an admin entry.
    pub fn write_result(&self, b: &mut [u8; AQ_ENTRY_SIZE]) {
        put(b, 8, &self.max_qps.to_le_bytes());
        put(b, 12, &self.max_ring_entries.to_le_bytes());
        put(b, 16, &self.speed_mbps.to_le_bytes());
        put(b, 20, &self.offloads.to_le_bytes());
        put(b, 24, &self.max_mtu.to_le_bytes());
    }

    /// Reads the result from a completed admin entry.
    pub fn read_result(b: &[u8; AQ_ENTRY_SIZE]) -> Self {
        Self {
            max_qps: le32(b, 8),
            max_ring_entries: le32(b, 12),
            speed_mbps: le32(b, 16),
            offloads: le32(b, 20),
            max_mtu: le32(b, 24),
        }
    }
}

/// Reads the flags and status of a completed admin entry.
pub fn aq_entry_state(b: &[u8; AQ_ENTRY_SIZE]) -> (u16, u16) {
    (le16(b, 2), le16(b, 4))
}

/// Marks an admin entry done with `status` (card side).
pub fn aq_complete(b: &mut [u8; AQ_ENTRY_SIZE], status: AdminStatus) {
    put(b, 2, &AQ_DONE.to_le_bytes());
    put(b, 4, &(status as u16).to_le_bytes());
}

/// Bits of [`regs::DEV_CTRL`].
pub mod ctrl {
    /// Write 1: reset the function to its power-on state. Self-clearing.
    pub const RESET: u32 = 1 << 0;
}

/// Bits of [`regs::DEV_STATUS`].
pub mod status {
    /// The function finished reset and accepts commands.
    pub const READY: u32 = 1 << 0;
}

/// Kind of a PCI function, as read from [`regs::FUNC_KIND`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum FuncKind {
    /// Physical function: synthetic NIC, control and exception path.
    Pf = 0,
    /// Virtual function: the accelerated data path.
    Vf = 1,
}

impl FuncKind {
    /// Short name: "PF" or "VF".
    pub const fn name(self) -> &'static str {
        match self {
            Self::Pf => "PF",
            Self::Vf => "VF",
        }
    }

    /// Decodes a register value; `None` for values this interface does not define.
    pub fn from_reg(value: u32) -> Option<Self> {
        match value {
            0 => Some(Self::Pf),
            1 => Some(Self::Vf),
            _ => None,
        }
    }
}

/// Largest DMA self-test transfer, in bytes.
pub const DMA_TEST_MAX_LEN: u32 = 64 * 1024;

/// Commands written to [`regs::DMA_CMD`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum DmaTestCmd {
    /// The card writes the pattern into host memory.
    Fill = 1,
    /// The card reads host memory and counts bytes that differ from the pattern.
    Verify = 2,
}

impl DmaTestCmd {
    /// Decodes a register value; `None` for values this interface does not define.
    pub fn from_reg(value: u32) -> Option<Self> {
        match value {
            1 => Some(Self::Fill),
            2 => Some(Self::Verify),
            _ => None,
        }
    }
}

/// Values of [`regs::DMA_STATUS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum DmaTestStatus {
    /// No test has run since reset.
    Idle = 0,
    /// The last test completed; for a verify, see [`regs::DMA_MISMATCHES`].
    Done = 1,
    /// The last test was rejected: bad length or command.
    Invalid = 2,
    /// The last test hit an address the card cannot reach (not mapped for DMA).
    Fault = 3,
    /// A test is running; writing DMA_CMD sets this until the test ends.
    Busy = 4,
}

impl DmaTestStatus {
    /// Decodes a register value; `None` for values this interface does not define.
    pub fn from_reg(value: u32) -> Option<Self> {
        match value {
            0 => Some(Self::Idle),
            1 => Some(Self::Done),
            2 => Some(Self::Invalid),
            3 => Some(Self::Fault),
            4 => Some(Self::Busy),
            _ => None,
        }
    }
}

/// Byte `index` of the DMA self-test pattern for `seed`.
///
/// Both sides compute it: the card to fill or verify, the driver to do the
/// opposite. Every byte depends on both the seed and the position, so a
/// transfer landing at the wrong offset or with a stale seed is detected.
pub const fn dma_pattern_byte(seed: u32, index: u32) -> u8 {
    let x = seed ^ index.wrapping_mul(0x9e37_79b1);
    let x = x ^ (x >> 15);
    let x = x.wrapping_mul(0x2c1b_3c6d);
    (x >> 24) as u8
}
