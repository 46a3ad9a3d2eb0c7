// SPDX-License-Identifier: GPL-2.0

//! Access to a function's BAR0 registers.
//!
//! Every value read here comes from the device and is untrusted: callers
//! decode it through the `hw` types, which reject what the interface does
//! not define.

use kernel::{devres::Devres, io::Io, pci, prelude::*};

use crate::hw;

/// BAR0 as mapped by the driver.
pub(crate) type Bar0 = pci::Bar<'static, { hw::BAR0_SIZE }>;

/// The register block of one function. Access fails with `ENODEV` once the
/// device is unbound.
pub(crate) struct Registers {
    bar: Devres<Bar0>,
}

impl Registers {
    /// Wraps a mapped BAR0.
    pub(crate) fn new(bar: Devres<Bar0>) -> Self {
        Self { bar }
    }

    /// Reads the register at byte offset `reg`.
    pub(crate) fn read(&self, reg: usize) -> Result<u32> {
        let bar = self.bar.try_access().ok_or(ENODEV)?;
        bar.try_read32(reg)
    }

    /// Writes `value` to the register at byte offset `reg`.
    pub(crate) fn write(&self, reg: usize, value: u32) -> Result {
        let bar = self.bar.try_access().ok_or(ENODEV)?;
        bar.try_write32(value, reg)
    }

    /// Writes a 64-bit bus address into a LO/HI register pair.
    pub(crate) fn write_addr(&self, lo: usize, hi: usize, addr: u64) -> Result {
        self.write(lo, addr as u32)?;
        self.write(hi, (addr >> 32) as u32)
    }

    /// `DEV_STATUS`, or `None` if the card does not answer: the read
    /// failed, or read all ones (surprise removal, a wedged card).
    pub(crate) fn status(&self) -> Option<u32> {
        self.read(hw::regs::DEV_STATUS)
            .ok()
            .filter(|&status| status != u32::MAX)
    }

    /// The card's permanent MAC address.
    pub(crate) fn mac(&self) -> Result<[u8; 6]> {
        let lo = self.read(hw::regs::MAC_LO)?.to_le_bytes();
        let hi = self.read(hw::regs::MAC_HI)?.to_le_bytes();
        Ok([lo[0], lo[1], lo[2], lo[3], hi[0], hi[1]])
    }
}

/// Named registers shown by the debugfs `regs` dump, in address order.
pub(crate) const DUMPED: &[(&str, usize)] = &[
    ("MAGIC", hw::regs::MAGIC),
    ("HW_VERSION", hw::regs::HW_VERSION),
    ("FW_VERSION", hw::regs::FW_VERSION),
    ("FUNC_KIND", hw::regs::FUNC_KIND),
    ("CARD_ID", hw::regs::CARD_ID),
    ("NUM_VECTORS", hw::regs::NUM_VECTORS),
    ("MAC_LO", hw::regs::MAC_LO),
    ("MAC_HI", hw::regs::MAC_HI),
    ("DEV_CTRL", hw::regs::DEV_CTRL),
    ("DEV_STATUS", hw::regs::DEV_STATUS),
    ("SCRATCH", hw::regs::SCRATCH),
    ("TEST_IRQ_COUNT", hw::regs::TEST_IRQ_COUNT),
    ("DMA_ADDR_LO", hw::regs::DMA_ADDR_LO),
    ("DMA_ADDR_HI", hw::regs::DMA_ADDR_HI),
    ("DMA_LEN", hw::regs::DMA_LEN),
    ("DMA_SEED", hw::regs::DMA_SEED),
    ("DMA_STATUS", hw::regs::DMA_STATUS),
    ("DMA_MISMATCHES", hw::regs::DMA_MISMATCHES),
];
