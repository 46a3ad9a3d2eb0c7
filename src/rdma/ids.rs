// SPDX-License-Identifier: GPL-2.0

//! Numbers of the engine's objects (PDs, CQs, QPs, MR indices): the
//! driver hands them out, the card checks them against its limits.

use kernel::prelude::*;

/// A set of numbers in `first..end`.
pub(crate) struct IdPool {
    used: KVec<bool>,
    first: u32,
}

impl IdPool {
    /// Numbers `first..end`.
    pub(crate) fn new(first: u32, end: u32) -> Result<Self> {
        let n = end.saturating_sub(first) as usize;
        let mut used = KVec::with_capacity(n, GFP_KERNEL)?;
        used.resize(n, false, GFP_KERNEL)?;
        Ok(Self { used, first })
    }

    /// The lowest free number.
    pub(crate) fn alloc(&mut self) -> Result<u32> {
        let i = self.used.iter().position(|u| !u).ok_or(ENOSPC)?;
        self.used[i] = true;
        Ok(self.first + i as u32)
    }

    /// Takes `id` if it is free.
    pub(crate) fn take(&mut self, id: u32) -> Result {
        let slot = id
            .checked_sub(self.first)
            .and_then(|i| self.used.get_mut(i as usize))
            .ok_or(EINVAL)?;
        if *slot {
            return Err(EBUSY);
        }
        *slot = true;
        Ok(())
    }

    /// Gives `id` back.
    pub(crate) fn free(&mut self, id: u32) {
        if let Some(slot) = id
            .checked_sub(self.first)
            .and_then(|i| self.used.get_mut(i as usize))
        {
            *slot = false;
        }
    }
}
