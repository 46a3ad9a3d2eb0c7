// SPDX-License-Identifier: GPL-2.0

//! The RTNL lock as a type.
//!
//! Much of the net device API may only be used with RTNL held. Here that
//! precondition is a parameter: a function that needs the lock takes a
//! `&Rtnl`, which only exists while the lock is held, either because the
//! caller took it ([`lock`]) or because the networking core called the
//! driver with it held (the layer hands `&Rtnl` to those callbacks).
//! References tied to the lock (a device found by a lookup that is only
//! stable under RTNL) borrow from the token, so they cannot outlive it.

use core::{marker::PhantomData, ops::Deref};

use crate::linux::bindings;

/// Proof that the current task holds the RTNL lock.
///
/// Not `Send`/`Sync`: the proof belongs to the task holding the lock.
/// Only this layer creates one.
pub(crate) struct Rtnl(PhantomData<*mut ()>);

impl Rtnl {
    /// The proof, for a callback the networking core makes with RTNL held.
    ///
    /// # Safety
    ///
    /// The current task must hold RTNL for `'a`.
    pub(crate) const unsafe fn assume_held<'a>() -> &'a Rtnl {
        const HELD: &Rtnl = &Rtnl(PhantomData);
        HELD
    }
}

/// RTNL, held until dropped.
pub(crate) struct RtnlGuard(Rtnl);

/// Takes RTNL. Process context; sleeps.
pub(crate) fn lock() -> RtnlGuard {
    // SAFETY: Process context (the caller's duty, as for any sleeping
    // lock); the guard unlocks on drop, on this task (it is not `Send`).
    unsafe { bindings::rtnl_lock() };
    RtnlGuard(Rtnl(PhantomData))
}

impl Deref for RtnlGuard {
    type Target = Rtnl;

    fn deref(&self) -> &Rtnl {
        &self.0
    }
}

impl Drop for RtnlGuard {
    fn drop(&mut self) {
        // SAFETY: Taken in `lock` by this task.
        unsafe { bindings::rtnl_unlock() };
    }
}
