// SPDX-License-Identifier: GPL-2.0

//! The rsnic hardware interface: PCI identity, BAR layout and registers
//! here; the NIC's rings ([`nic`]), the admin queue ([`admin`]), the
//! probe self-test ([`selftest`]), the GFT ([`gft`]) and the RDMA engine
//! ([`rdma`]) in their modules.
//!
//! This module is the single source of truth for the interface between
//! the driver and the card. It is compiled into both `rsnic.ko` (no_std)
//! and the emulator `rsnic-emu` (std), so it uses `core` only and holds no
//! logic beyond what both sides must compute identically. Each register,
//! each field of a structure and each command is declared once, with its
//! offset ([`layout`]); Documentation/rsnic/hardware.rst describes the
//! same interface in prose.

#[macro_use]
pub mod layout;
#[macro_use]
pub mod register;

#[macro_use]
pub mod admin;
pub mod gft;
pub mod gft_rule;
pub mod nic;
pub mod rdma;
pub mod selftest;
pub mod stream;
pub mod xdp;

pub use admin::*;
pub use nic::*;
pub use selftest::*;

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
/// MSI-X vectors of a physical function: the admin vector, one per
/// queue pair, and the RDMA engine's events.
pub const PF_MSIX_VECTORS: u16 = MAX_QUEUE_PAIRS + 2;
/// MSI-X vectors of a virtual function.
pub const VF_MSIX_VECTORS: u16 = 8;

/// Value of [`regs::MAGIC`]: "RSNC" in little-endian ASCII.
pub const MAGIC: u32 = u32::from_le_bytes(*b"RSNC");
/// Interface version in [`regs::HW_VERSION`]: major in bits 31:16, minor in 15:0.
/// The driver refuses a card whose major differs from its own.
pub const HW_VERSION: u32 = 1 << 16;

/// How software may access a register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Read-only.
    Ro,
    /// Read-write.
    Rw,
    /// Write-only (reads return 0).
    Wo,
}

/// A named register, for dumps.
#[derive(Clone, Copy, Debug)]
pub struct Register {
    /// Its name, as the specification writes it.
    pub name: &'static str,
    /// Byte offset in BAR0.
    pub offset: usize,
    /// How software may access it.
    pub access: Access,
}

/// Declares the registers: for each, a constant with its offset, and one
/// [`Register`] entry in `ALL` (address order).
macro_rules! registers {
    ($( $(#[$meta:meta])* $name:ident @ $off:literal : $access:ident ),* $(,)?) => {
        $( $(#[$meta])* pub const $name: usize = $off; )*

        /// Every register above, in address order.
        pub const ALL: &[super::Register] = &[
            $( super::Register { name: stringify!($name), offset: $off, access: super::Access::$access }, )*
        ];
    };
}

/// Register offsets in BAR0. All registers are 32 bits wide and little-endian.
pub mod regs {
    registers! {
        /// [`super::MAGIC`].
        MAGIC @ 0x000: Ro,
        /// [`super::HW_VERSION`].
        HW_VERSION @ 0x004: Ro,
        /// Firmware version, major.minor.patch in bits 23:16, 15:8, 7:0.
        FW_VERSION @ 0x008: Ro,
        /// [`super::FuncKind`] of this PCI function.
        FUNC_KIND @ 0x00c: Ro,
        /// Identifier of the card; the PF and VF of one card share it.
        CARD_ID @ 0x010: Ro,
        /// Number of MSI-X vectors the function implements.
        NUM_VECTORS @ 0x014: Ro,
        /// Permanent MAC address, bytes 0..4 (byte 0 in bits 7:0); see
        /// [`super::mac_from_regs`].
        MAC_LO @ 0x018: Ro,
        /// Permanent MAC address, bytes 4..6 in bits 15:0.
        MAC_HI @ 0x01c: Ro,
        /// Device control, see [`super::ctrl`].
        DEV_CTRL @ 0x040: Rw,
        /// Device status, see [`super::status`].
        DEV_STATUS @ 0x044: Ro,
        /// Scratch register; reads return the last value written.
        SCRATCH @ 0x100: Rw,
        /// Writing N raises MSI-X vector N once.
        TEST_IRQ @ 0x104: Wo,
        /// Number of test interrupts the card has raised since reset.
        TEST_IRQ_COUNT @ 0x108: Ro,
        /// DMA test buffer bus address, bits 31:0.
        DMA_ADDR_LO @ 0x110: Rw,
        /// DMA test buffer bus address, bits 63:32.
        DMA_ADDR_HI @ 0x114: Rw,
        /// DMA test length in bytes (at most [`super::DMA_TEST_MAX_LEN`]).
        DMA_LEN @ 0x118: Rw,
        /// Seed of the test pattern, see [`super::dma_pattern_byte`].
        DMA_SEED @ 0x11c: Rw,
        /// Starts a DMA test, see [`super::DmaTestCmd`].
        DMA_CMD @ 0x120: Wo,
        /// Outcome of the last DMA test, see [`super::DmaTestStatus`].
        DMA_STATUS @ 0x124: Ro,
        /// Number of mismatching bytes found by the last verify.
        DMA_MISMATCHES @ 0x128: Ro,
        /// Admin queue bus address, bits 31:0.
        AQ_BASE_LO @ 0x200: Rw,
        /// Admin queue bus address, bits 63:32.
        AQ_BASE_HI @ 0x204: Rw,
        /// Admin queue entries (power of two, at most
        /// [`super::AQ_MAX_ENTRIES`]); writing it resets both queue indices.
        AQ_SIZE @ 0x208: Rw,
        /// Doorbell: index one past the last command submitted.
        AQ_TAIL @ 0x20c: Wo,
        /// Index of the next command the card will process.
        AQ_HEAD @ 0x210: Ro,
        /// Link state, see [`super::link`].
        LINK_STATUS @ 0x240: Ro,
        /// The accelerated VF the card offers the PF besides its own, see
        /// [`super::VfAssoc`] ([`super::feature::FOREIGN_VF`]).
        VF_ASSOC @ 0x244: Ro,
        /// The offered VF's serial: its PCI slot number as the host
        /// plugged it (hv_netvsc's VF serial).
        VF_SERIAL @ 0x248: Ro,
        /// The card's clock in nanoseconds, bits 31:0. Reading it latches
        /// bits 63:32 into [`PTP_TIME_HI`] for this function's next read
        /// of that ([`super::feature::PTP`]).
        PTP_TIME_LO @ 0x300: Ro,
        /// The card's clock, bits 63:32, as latched by the last read of
        /// [`PTP_TIME_LO`].
        PTP_TIME_HI @ 0x304: Ro,
    }

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
    /// In a doorbell block, write-only: RX stream head, the driver's read
    /// position in [`super::stream::ALIGN`]-byte units (free-running,
    /// wrapping); the card writes up to it and no further.
    pub const DB_STREAM_HEAD: usize = 0xc;

    /// One past the last register; the size the driver maps.
    pub const END: usize = 0x2000;
}

/// The doorbell page: a page of host memory the driver gives the card
/// ([`AdminCmd::SetDoorbellPage`]), where queue pairs created with
/// [`qp_flags::TX_TAIL_IN_PAGE`] keep their TX tail. The card polls the
/// page for a while after each kick and says so in
/// [`db_page::CARD_POLLING`]; the driver rings the trapped
/// [`regs::DB_TX_TAIL`] only while the card does not poll (the scheme of
/// virtio's event index and NVMe's shadow doorbells; the doorbell records
/// of mlx5 live in host memory the same way). Reported by
/// [`feature::DOORBELL_PAGE`]. Offsets are from the page's start.
pub mod db_page {
    /// The page's size and alignment: 4 KiB.
    pub const SIZE: usize = 0x1000;
    /// Bytes between two pairs' tails: each in a cache line of its own.
    pub const TX_TAIL_STRIDE: usize = 0x40;
    /// Written by the card, read by the driver: nonzero while the card
    /// polls the page's tails, so the driver need not ring
    /// [`super::regs::DB_TX_TAIL`].
    pub const CARD_POLLING: usize = 0x800;
    /// Written by the driver of a card with
    /// [`super::feature::ADMIN_TAIL_IN_PAGE`]: the admin queue's tail
    /// with [`ADMIN_TAIL_VALID`] set (zero: not used), so that a card
    /// that polls the page sees a new admin command without the trapped
    /// [`super::regs::AQ_TAIL`], which waits behind the card's other
    /// doorbells (NVMe's shadow doorbells cover the admin queue too).
    /// The driver still rings while the card does not poll.
    pub const ADMIN_TAIL: usize = 0x840;
    /// Set in [`ADMIN_TAIL`] by a driver that uses it.
    pub const ADMIN_TAIL_VALID: u32 = 1 << 31;

    /// Offset of queue pair `qp`'s TX tail (written by the driver, one
    /// aligned 32-bit store: the next free index, as
    /// [`super::regs::DB_TX_TAIL`] would carry it).
    pub const fn tx_tail(qp: u16) -> usize {
        qp as usize * TX_TAIL_STRIDE
    }

    /// Start of the pairs' RX-side words: pair `qp`'s RX tail and
    /// completion-queue word share a cache line, written by its NAPI
    /// poll, apart from the TX tails written by xmit on any CPU.
    pub const RX_WORDS: usize = 0x400;

    /// Offset of queue pair `qp`'s RX tail, for a pair with
    /// [`super::qp_flags::RX_CQ_IN_PAGE`] (written by the driver: the
    /// next free index, as [`super::regs::DB_RX_TAIL`] would carry it).
    /// The card reads it when it needs a buffer.
    pub const fn rx_tail(qp: u16) -> usize {
        RX_WORDS + qp as usize * TX_TAIL_STRIDE
    }

    /// Offset of queue pair `qp`'s completion-queue word, for a pair with
    /// [`super::qp_flags::RX_CQ_IN_PAGE`]: a [`super::CqWord`] the driver
    /// writes in place of the trapped [`super::regs::DB_CQ_HEAD`]. The
    /// card reads it whenever it decides whether to interrupt; a word it
    /// has not seen before counts as one CQ head doorbell. It does not
    /// react to the write itself: a driver that arms must then (after a
    /// full fence) look for a completion written before the card saw the
    /// arm, and poll again if there is one, as with virtio's event index.
    pub const fn cq_word(qp: u16) -> usize {
        rx_tail(qp) + 4
    }

    /// The largest completion queue a pair with
    /// [`super::qp_flags::RX_CQ_IN_PAGE`] may have: its head is
    /// [`super::CqWord::head`]'s 16 bits.
    pub const CQ_WORD_MAX_ENTRIES: u32 = 1 << 16;

    // The RX-side words past every pair's TX tail, before the card's word.
    const _: () = assert!(tx_tail(super::MAX_QUEUE_PAIRS) <= RX_WORDS);
    const _: () = assert!(rx_tail(super::MAX_QUEUE_PAIRS) <= CARD_POLLING);

    // The card's word past every pair's tail, inside the page.
    const _: () = assert!(tx_tail(super::MAX_QUEUE_PAIRS) <= CARD_POLLING);
    const _: () = assert!(CARD_POLLING + 4 <= SIZE);
    // The admin tail in a cache line of its own.
    const _: () = assert!(ADMIN_TAIL >= CARD_POLLING + TX_TAIL_STRIDE);
    const _: () = assert!(ADMIN_TAIL + 4 <= SIZE);
}

/// Bits of [`DeviceInfo::features`]: parts of the interface a card may
/// lack.
pub mod feature {
    /// The card implements [`super::db_page`].
    pub const DOORBELL_PAGE: u32 = 1 << 0;
    /// The card also follows [`super::db_page::ADMIN_TAIL`] while it
    /// polls the page.
    pub const ADMIN_TAIL_IN_PAGE: u32 = 1 << 1;
    /// The card takes [`super::qp_flags::RX_CQ_IN_PAGE`]: RX tails and
    /// completion-queue heads in the page.
    pub const RX_CQ_IN_PAGE: u32 = 1 << 2;
    /// The card splits headers from data ([`super::QpConfig::hdr_ring`],
    /// [`super::Cqe::SPLIT`]).
    pub const HDS: u32 = 1 << 3;
    /// The card shapes TX ([`super::AdminCmd::SetShaper`]).
    pub const TX_SHAPERS: u32 = 1 << 4;
    /// The card keeps a clock ([`super::ptp`]): read in
    /// [`super::regs::PTP_TIME_LO`], set and steered by admin commands,
    /// stamped into completions ([`super::Cqe::TSTAMP`]). The PF's only.
    pub const PTP: u32 = 1 << 5;
    /// The card may offer a VF of another make on a port of its switch
    /// ([`super::regs::VF_ASSOC`]); a change raises
    /// [`super::ADMIN_VECTOR`]. The PF's only.
    pub const FOREIGN_VF: u32 = 1 << 6;
    /// The card runs an offloaded XDP program on what it receives from
    /// the wire ([`super::xdp`], [`super::AdminCmd::XdpLoad`]). The PF's
    /// only.
    pub const XDP_OFFLOAD: u32 = 1 << 7;
}

/// The card's clock: one for the card, counting nanoseconds from the
/// card's power-on until set ([`super::AdminCmd::PtpSetTime`]), run
/// faster or slower by [`super::AdminCmd::PtpAdjFreq`]. A function reset
/// leaves it alone.
pub mod ptp {
    /// Largest frequency offset the clock takes, in parts per billion
    /// either way.
    pub const MAX_ADJ_PPB: i64 = 1_000_000;
    /// [`MAX_ADJ_PPB`] in the unit of [`super::AdminCmd::PtpAdjFreq`]:
    /// parts per million with a 16-bit binary fraction.
    pub const MAX_SCALED_PPM: i64 = MAX_ADJ_PPB * 65536 / 1000;
}

/// The TX shaper tree of a function ([`AdminCmd::SetShaper`]): a token
/// bucket per node; a frame leaves only when every bucket from its queue
/// pair's up to the root holds tokens, and takes its length from each.
/// Queue pairs held back are served again in weighted fair order (the
/// one that sent least for its weight first), a frame at a time.
pub mod shaper {
    /// The function as a whole (Linux's netdev scope).
    pub const ROOT: u16 = 0;
    /// Queue pair `q`'s shaper is `QUEUE_BASE + q`.
    pub const QUEUE_BASE: u16 = 1;
    /// Group node `n` (below [`NODES`]) is `NODE_BASE + n`.
    pub const NODE_BASE: u16 = QUEUE_BASE + super::MAX_QUEUE_PAIRS;
    /// Group nodes.
    pub const NODES: u16 = 16;
    /// Every shaper: the root, the queue pairs', the group nodes.
    pub const COUNT: u16 = NODE_BASE + NODES;
    /// Most group nodes between a queue pair and the root.
    pub const MAX_DEPTH: usize = 4;
    /// Fastest rate, bits a second (400 Gbit/s).
    pub const MAX_RATE: u64 = 400_000_000_000;

    /// The burst of a shaper set with none: 10 ms at its rate, at least a
    /// full-size frame.
    pub const fn default_burst(rate: u64) -> u64 {
        let ten_ms = rate / 8 / 100;
        if ten_ms > 9018 {
            ten_ms
        } else {
            9018
        }
    }
}

/// Bits of [`QpConfig::flags`].
pub mod qp_flags {
    /// The pair's TX tail is in the [`super::db_page`]; a write to
    /// [`super::regs::DB_TX_TAIL`] is then a kick: the card reads the
    /// tail from the page and ignores the value written.
    pub const TX_TAIL_IN_PAGE: u32 = 1 << 0;
    /// The pair's RX tail and completion-queue head are in the
    /// [`super::db_page`] ([`super::db_page::rx_tail`],
    /// [`super::db_page::cq_word`]); the card ignores the values of
    /// trapped [`super::regs::DB_RX_TAIL`] and [`super::regs::DB_CQ_HEAD`]
    /// writes and reads the page instead. Needs a ring pair (not a
    /// stream) whose CQ has at most
    /// [`super::db_page::CQ_WORD_MAX_ENTRIES`] entries.
    pub const RX_CQ_IN_PAGE: u32 = 1 << 1;
    /// The pair's RX buffers take payload only: the host cannot read
    /// them (device memory, a memory provider's), so every frame's
    /// headers must reach it through the header slots. A frame the card
    /// does not split ([`super::QpConfig::hds_thresh`] must be 0) goes
    /// whole into the header slot of the buffer it consumes if it fits
    /// (completion length 0, [`super::Cqe::SPLIT`], `hdr_len` the frame's
    /// length, at most [`super::HDS_HDR_SLOT`] - 1); a longer one is
    /// dropped (the card's `hds_drops`). Needs a header ring.
    pub const PAYLOAD_ONLY: u32 = 1 << 2;
}

/// The permanent MAC address held in [`regs::MAC_LO`] and [`regs::MAC_HI`].
pub const fn mac_from_regs(lo: u32, hi: u32) -> [u8; 6] {
    let lo = lo.to_le_bytes();
    let hi = hi.to_le_bytes();
    [lo[0], lo[1], lo[2], lo[3], hi[0], hi[1]]
}

/// The values of [`regs::MAC_LO`] and [`regs::MAC_HI`] for `mac`.
pub const fn mac_to_regs(mac: [u8; 6]) -> (u32, u32) {
    (
        u32::from_le_bytes([mac[0], mac[1], mac[2], mac[3]]),
        u32::from_le_bytes([mac[4], mac[5], 0, 0]),
    )
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

register! {
    /// [`regs::DEV_CTRL`].
    DevCtrl @ regs::DEV_CTRL {
        /// Write 1: reset the function to its power-on state.
        /// Self-clearing.
        0:0 reset / with_reset: bool,
    }
}

register! {
    /// [`regs::DEV_STATUS`].
    DevStatus @ regs::DEV_STATUS {
        /// The function finished reset and accepts commands.
        0:0 ready: bool,
    }
}

register! {
    /// [`regs::LINK_STATUS`].
    LinkStatus @ regs::LINK_STATUS {
        /// The cable is connected at both ends.
        0:0 up: bool,
    }
}

register! {
    /// [`regs::VF_ASSOC`]: netvsc's VF association message as a register.
    VfAssoc @ regs::VF_ASSOC {
        /// A VF of another make sits on the card's VF port, with the
        /// synthetic NIC's MAC and the serial in [`regs::VF_SERIAL`]; the
        /// data path switch ([`AdminCmd::SetDatapath`]) sends to it.
        0:0 present / with_present: bool,
    }
}

register! {
    /// [`regs::HW_VERSION`]: the interface version.
    HwVersion @ regs::HW_VERSION {
        /// Major: the driver refuses a card whose major differs.
        31:16 major: u16,
        /// Minor: additions a driver may ignore.
        15:0 minor: u16,
    }
}

register! {
    /// [`regs::FW_VERSION`]: the firmware version.
    FwVersion @ regs::FW_VERSION {
        /// Major.
        23:16 major: u8,
        /// Minor.
        15:8 minor: u8,
        /// Patch.
        7:0 patch: u8,
    }
}

/// A queue pair's doorbells, in its block at [`regs::QP_DOORBELLS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpDoorbell {
    /// [`regs::DB_TX_TAIL`].
    TxTail,
    /// [`regs::DB_RX_TAIL`].
    RxTail,
    /// [`regs::DB_CQ_HEAD`], written as a [`CqHead`].
    CqHead,
    /// [`regs::DB_STREAM_HEAD`].
    StreamHead,
}

impl QpDoorbell {
    /// Byte offset in BAR0 of queue pair `qp`'s doorbell.
    pub const fn offset(self, qp: u16) -> usize {
        let reg = match self {
            Self::TxTail => regs::DB_TX_TAIL,
            Self::RxTail => regs::DB_RX_TAIL,
            Self::CqHead => regs::DB_CQ_HEAD,
            Self::StreamHead => regs::DB_STREAM_HEAD,
        };
        regs::QP_DOORBELLS + qp as usize * regs::QP_DOORBELL_STRIDE + reg
    }
}

register! {
    /// The value of a pair's [`db_page::cq_word`].
    CqWord {
        /// The next entry the driver will read.
        15:0 head / with_head: u32,
        /// Incremented by the driver on every write, so that no two
        /// writes in a row are the same word (the card takes a new arm
        /// after an old one with the same head).
        30:16 generation / with_generation: u32,
        /// Raise the pair's vector at the next completion (as
        /// [`CQ_ARM`]).
        31:31 arm / with_arm: bool,
    }
}

register! {
    /// The value of a [`QpDoorbell::CqHead`] write.
    CqHead {
        /// The next entry the driver will read.
        30:0 head / with_head: u32,
        /// [`CQ_ARM`]: raise the pair's vector at the next completion
        /// (or at once if completions are already pending).
        31:31 arm / with_arm: bool,
    }
}

wire_enum! {
    /// Kind of a PCI function, as read from [`regs::FUNC_KIND`].
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum FuncKind: u32 {
        /// Physical function: synthetic NIC, control and exception path.
        Pf = 0,
        /// Virtual function: the accelerated data path.
        Vf = 1,
    }
}

impl FuncKind {
    /// Short name: "PF" or "VF".
    pub const fn name(self) -> &'static str {
        match self {
            Self::Pf => "PF",
            Self::Vf => "VF",
        }
    }
}

/// Where every entry the card writes into a ring (NIC [`Cqe`], admin
/// entry, RDMA CQE and EQE) holds its 16-bit flags word, with the bit that
/// says the entry is there. The card writes that word last.
pub const ENTRY_FLAGS_OFFSET: usize = 2;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_are_in_address_order_and_distinct() {
        for pair in regs::ALL.windows(2) {
            assert!(pair[0].offset < pair[1].offset, "{:?}", pair);
        }
        assert!(regs::ALL.iter().all(|r| r.offset < regs::QP_DOORBELLS));
    }

    #[test]
    fn mac_register_packing() {
        let mac = [0x02, 0x11, 0x22, 0x33, 0x44, 0x55];
        let (lo, hi) = mac_to_regs(mac);
        assert_eq!(lo, 0x3322_1102);
        assert_eq!(hi, 0x5544);
        assert_eq!(mac_from_regs(lo, hi), mac);
    }

    #[test]
    fn typed_registers_match_the_bits() {
        use register::Register;
        assert_eq!(DevCtrl::zero().with_reset(true).raw(), ctrl::RESET);
        assert!(DevStatus::from_raw(status::READY).ready());
        assert!(!DevStatus::from_raw(!status::READY).ready());
        assert!(LinkStatus::from_raw(link::UP).up());
        let fw = FwVersion::from_raw(0x0001_0203);
        assert_eq!((fw.major(), fw.minor(), fw.patch()), (1, 2, 3));
        let hw = HwVersion::from_raw(HW_VERSION | 7);
        assert_eq!((hw.major(), hw.minor()), (1, 7));
        let cq = CqHead::zero().with_head(0x1234).with_arm(true);
        assert_eq!(cq.raw(), 0x1234 | CQ_ARM);
        assert_eq!(cq.with_arm(false).raw(), 0x1234);
        // A head too wide for its field does not reach the arm bit.
        assert!(!CqHead::zero().with_head(u32::MAX).arm());
        assert_eq!(register::mask(31, 0), u32::MAX);
        assert_eq!(
            QpDoorbell::CqHead.offset(2),
            regs::QP_DOORBELLS + 2 * 0x10 + 0x8
        );
        assert_eq!(DevStatus::OFFSET, regs::DEV_STATUS);
    }
}
