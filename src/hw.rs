// SPDX-License-Identifier: GPL-2.0

//! The rsnic hardware interface: PCI identity, BAR layout, registers and the
//! self-test block.
//!
//! This file is the single source of truth for the interface between the
//! driver and the card. It is compiled into both `rsnic.ko` (no_std) and the
//! emulator `rsnic-emu` (std), so it uses `core` only and holds no logic
//! beyond what both sides must compute identically. Documentation/rsnic/
//! hardware.rst describes the same interface in prose.

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

    /// One past the last register; the size the driver maps.
    pub const END: usize = 0x200;
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
