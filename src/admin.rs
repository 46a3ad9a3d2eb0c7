// SPDX-License-Identifier: GPL-2.0

//! The admin queue: the one mechanism for control commands to the card.
//!
//! Commands are 64-byte entries in a ring in host memory. The driver
//! writes a command, rings `AQ_TAIL`, and waits for the card to set the
//! done flag in the same entry, where the card also writes the result.
//! One command is in flight at a time (a mutex serialises callers), so a
//! slow or silent card costs one timeout, never a mixed-up result.

use kernel::{
    new_mutex,
    prelude::*,
    sync::{barrier::smp_rmb, Arc, Mutex},
    time::{delay::fsleep, Delta},
};

use crate::hw::{self, regs, AdminCmd, AdminStatus, AQ_DONE, AQ_ENTRY_SIZE};
use crate::kext::{dma_buf::DmaBuffer, dma_device::DmaDevice};
use crate::regs::Registers;

/// Entries in the driver's admin queue.
const ENTRIES: u32 = 16;

/// How long a command may take, in units of [`POLL_US`].
const TIMEOUT_POLLS: u32 = 20_000;
/// Poll interval while waiting for a command, in microseconds.
const POLL_US: i64 = 50;

/// Why an admin command failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AdminError {
    /// The card refused the command.
    Refused(AdminStatus),
    /// The card wrote a status this interface does not define.
    BadStatus(u16),
    /// No answer in time.
    Timeout,
    /// The device is gone or memory could not be had.
    Io(Error),
}

impl From<AdminError> for Error {
    fn from(e: AdminError) -> Self {
        match e {
            AdminError::Refused(AdminStatus::BadParam) => EINVAL,
            AdminError::Refused(AdminStatus::BadState) => EBUSY,
            AdminError::Refused(_) | AdminError::BadStatus(_) => EIO,
            AdminError::Timeout => ETIMEDOUT,
            AdminError::Io(e) => e,
        }
    }
}

impl From<Error> for AdminError {
    fn from(e: Error) -> Self {
        Self::Io(e)
    }
}

struct Ring {
    mem: DmaBuffer,
    tail: u32,
}

/// The admin queue of one function.
#[pin_data]
pub(crate) struct AdminQueue {
    regs: Arc<Registers>,
    #[pin]
    ring: Mutex<Ring>,
}

impl AdminQueue {
    /// Allocates the queue and hands it to the card.
    pub(crate) fn new(regs: Arc<Registers>, dma: &DmaDevice) -> Result<Arc<Self>> {
        let mem = dma.alloc(ENTRIES as usize * AQ_ENTRY_SIZE)?;
        regs.write_addr(regs::AQ_BASE_LO, regs::AQ_BASE_HI, mem.dma_addr(0)?)?;
        regs.write(regs::AQ_SIZE, ENTRIES)?;
        Arc::pin_init(
            pin_init!(Self {
                regs,
                ring <- new_mutex!(Ring { mem, tail: 0 }),
            }),
            GFP_KERNEL,
        )
    }

    /// Runs `cmd` and returns the completed entry (with any result).
    /// Sleeps; process context only.
    pub(crate) fn exec(&self, cmd: AdminCmd) -> Result<[u8; AQ_ENTRY_SIZE], AdminError> {
        let mut ring = self.ring.lock();
        let slot = ring.tail as usize * AQ_ENTRY_SIZE;
        ring.mem.write(slot, &cmd.to_bytes())?;
        ring.tail = (ring.tail + 1) % ENTRIES;
        self.regs.write(regs::AQ_TAIL, ring.tail)?;
        let mut entry = [0u8; AQ_ENTRY_SIZE];
        for _ in 0..TIMEOUT_POLLS {
            // The card sets DONE last: check it first, the rest after a barrier.
            ring.mem.read(slot, &mut entry[..4])?;
            let (flags, _) = hw::aq_entry_state(&entry);
            if flags & AQ_DONE != 0 {
                smp_rmb();
                ring.mem.read(slot, &mut entry)?;
                let (_, status) = hw::aq_entry_state(&entry);
                return match AdminStatus::from_raw(status) {
                    Some(AdminStatus::Ok) => Ok(entry),
                    Some(s) => Err(AdminError::Refused(s)),
                    None => Err(AdminError::BadStatus(status)),
                };
            }
            fsleep(Delta::from_micros(POLL_US));
        }
        Err(AdminError::Timeout)
    }

    /// Runs a command that returns nothing but its status.
    pub(crate) fn run(&self, cmd: AdminCmd) -> Result {
        self.exec(cmd).map(|_| ()).map_err(Error::from)
    }
}
