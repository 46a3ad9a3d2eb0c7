// SPDX-License-Identifier: GPL-2.0

//! Access to a function's BAR0 registers.
//!
//! Every value read here comes from the device and is untrusted: callers
//! decode it through the `hw` types, which reject what the interface does
//! not define.

use kernel::{devres::Devres, io::Io, pci, prelude::*, sync::Arc};

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
        Ok(hw::mac_from_regs(
            self.read(hw::regs::MAC_LO)?,
            self.read(hw::regs::MAC_HI)?,
        ))
    }
}

/// Resets the function when dropped: the card stops using every queue and
/// buffer the driver gave it.
pub(crate) struct ResetOnDrop(pub(crate) Arc<Registers>);

impl Drop for ResetOnDrop {
    fn drop(&mut self) {
        // A card that is gone needs no reset; the write then fails.
        let _ = self.0.write(hw::regs::DEV_CTRL, hw::ctrl::RESET);
    }
}
