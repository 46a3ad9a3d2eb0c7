// SPDX-License-Identifier: GPL-2.0

//! Access to a function's BAR0 registers.
//!
//! Every value read here comes from the device and is untrusted: callers
//! decode it through the `hw` types, which reject what the interface does
//! not define.

use kernel::{devres::Devres, io::Io, pci, prelude::*, sync::Arc};

use crate::hw::{self, register::Register, DevCtrl, DevStatus, QpDoorbell};

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

    /// Reads the typed register `R`.
    pub(crate) fn get<R: Register>(&self) -> Result<R> {
        Ok(R::from_raw(self.read(R::OFFSET)?))
    }

    /// Writes the typed register `R`.
    pub(crate) fn set<R: Register>(&self, value: R) -> Result {
        self.write(R::OFFSET, value.into_raw())
    }

    /// Rings queue pair `qp`'s doorbell `db` with `value`.
    pub(crate) fn doorbell(&self, qp: u16, db: QpDoorbell, value: u32) -> Result {
        self.write(db.offset(qp), value)
    }

    /// Writes a 64-bit bus address into a LO/HI register pair.
    pub(crate) fn write_addr(&self, lo: usize, hi: usize, addr: u64) -> Result {
        self.write(lo, addr as u32)?;
        self.write(hi, (addr >> 32) as u32)
    }

    /// `DEV_STATUS`, or `None` if the card does not answer: the read
    /// failed, or read all ones (surprise removal, a wedged card).
    pub(crate) fn status(&self) -> Option<DevStatus> {
        self.get_answered()
    }

    /// The typed register `R`, or `None` if the card does not answer: the
    /// read failed, or read all ones (surprise removal, a wedged card).
    pub(crate) fn get_answered<R: Register>(&self) -> Option<R> {
        self.get::<R>().ok().filter(|r| r.into_raw() != u32::MAX)
    }

    /// Resets the function (its state, queues, DMA); the card then
    /// reads not ready until it is done.
    pub(crate) fn reset_function(&self) -> Result {
        self.set(DevCtrl::zero().with_reset(true))
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
        let _ = self.0.reset_function();
    }
}
