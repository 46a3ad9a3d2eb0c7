// SPDX-License-Identifier: GPL-2.0

//! The card's clock as the PF's PTP hardware clock (`/dev/ptpN`), as
//! fbnic's `fbnic_time.c` and mlx5's `lib/clock.c` make theirs: read in
//! two registers (the low half latches the high one), set, moved and
//! steered by admin commands. The card stamps completions with it
//! (`hw::Cqe::TSTAMP`); `ethtool -T` names it ([`crate::nic`] is told its
//! index). Set to the system's time when the function comes up; a
//! function reset leaves the card's clock running.

use kernel::{new_mutex, prelude::*, sync::Arc, sync::Mutex};

use crate::admin::AdminQueue;
use crate::hw::{ptp::MAX_ADJ_PPB, regs, AdminCmd};
use crate::linux::ptp::{PtpClockOps, SystemStamps};
use crate::regs::Registers;

/// The card's clock, as the PTP core drives it.
#[pin_data]
pub(crate) struct CardClock {
    regs: Arc<Registers>,
    admin: Arc<AdminQueue>,
    /// The latch is the function's: one reader at a time, or one could
    /// take the other's high half.
    #[pin]
    latch: Mutex<()>,
}

impl CardClock {
    /// The clock of the function with `regs` and `admin`.
    pub(crate) fn new(regs: Arc<Registers>, admin: Arc<AdminQueue>) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            regs,
            admin,
            latch <- new_mutex!(()),
        }? Error)
    }
}

impl PtpClockOps for CardClock {
    const NAME: &'static CStr = c"rsnic";
    // CAST: the card's limit, far below `i32::MAX`.
    const MAX_ADJ_PPB: i32 = MAX_ADJ_PPB as i32;

    fn gettimex(&self, stamps: &mut SystemStamps<'_>) -> Result<i64> {
        let _one = self.latch.lock();
        let lo = stamps.bracket(|| self.regs.read(regs::PTP_TIME_LO))?;
        let hi = self.regs.read(regs::PTP_TIME_HI)?;
        let ns = u64::from(hi) << 32 | u64::from(lo);
        // A card that reads all ones is gone; its time is not a time.
        i64::try_from(ns).map_err(|_| EIO)
    }

    fn settime(&self, ns: i64) -> Result {
        let ns = u64::try_from(ns).map_err(|_| EINVAL)?;
        self.admin.run(AdminCmd::PtpSetTime { ns })
    }

    fn adjtime(&self, delta: i64) -> Result {
        self.admin.run(AdminCmd::PtpAdjTime { delta })
    }

    fn adjfine(&self, scaled_ppm: i64) -> Result {
        self.admin.run(AdminCmd::PtpAdjFreq { scaled_ppm })
    }
}
