// SPDX-License-Identifier: GPL-2.0

//! A net device's instance lock (`netdev_lock`, the device's own
//! mutex) as a type.
//!
//! A device with queue management ops is "ops-locked"
//! (`netdev_need_ops_lock`): the core holds its instance lock around the
//! device's ndos and ethtool ops (with RTNL), and around the queue
//! management ops and the qstats dump (without RTNL). Its NAPI contexts
//! are added, enabled, disabled and deleted under that lock, by the
//! `_locked` calls: the plain ones take the lock themselves, and would
//! deadlock. A function that needs the lock takes a `&DevLocked`, which
//! only exists while some instance lock is held: either the core's
//! callback holds it (the layer hands the proof to those callbacks) or
//! the driver took it ([`NetDev::lock_instance`]).
//!
//! The proof does not name the device: a driver holding one device's
//! lock must not use it for another's NAPI contexts. Lockdep
//! (`netdev_assert_locked`, in the core's `_locked` calls) checks that
//! on a debug kernel.
//!
//! [`NetDev::lock_instance`]: crate::linux::net::netdev::NetDev::lock_instance

use core::{marker::PhantomData, ops::Deref};

use crate::linux::{bindings, net::rtnl::Rtnl};

/// Proof that the current task holds a net device's instance lock.
///
/// Not `Send`/`Sync`: the proof belongs to the task holding the lock.
/// Only this layer creates one.
pub(crate) struct DevLocked(PhantomData<*mut ()>);

impl DevLocked {
    /// The proof, for a callback the networking core makes with the
    /// device's instance lock held.
    ///
    /// # Safety
    ///
    /// The current task must hold the instance lock of the device whose
    /// callback this is, for `'a`.
    pub(crate) const unsafe fn assume_held<'a>() -> &'a DevLocked {
        const HELD: &DevLocked = &DevLocked(PhantomData);
        HELD
    }
}

/// RTNL and a device's instance lock, as the core holds both around the
/// ndos and ethtool ops of an ops-locked device, or as a driver's work
/// takes them (RTNL first). Derefs to the RTNL proof.
pub(crate) struct RtnlLocked<'a> {
    rtnl: &'a Rtnl,
    dev: &'a DevLocked,
}

impl<'a> RtnlLocked<'a> {
    /// The proof, for a callback the networking core makes with RTNL and
    /// the device's instance lock held.
    ///
    /// # Safety
    ///
    /// As for [`Rtnl::assume_held`] and [`DevLocked::assume_held`].
    pub(crate) unsafe fn assume_held() -> &'a RtnlLocked<'a> {
        // A constant that holds no lock; the function's contract makes
        // what it claims true when it is handed out.
        const HELD: &RtnlLocked<'static> = &RtnlLocked {
            // SAFETY: Only ever handed out by this function, whose caller
            // holds RTNL.
            rtnl: unsafe { Rtnl::assume_held() },
            // SAFETY: As above, for the instance lock.
            dev: unsafe { DevLocked::assume_held() },
        };
        HELD
    }

    /// The instance lock's proof alone (borrowed from this one, so it
    /// ends with a guard's).
    pub(crate) fn dev(&self) -> &DevLocked {
        self.dev
    }
}

impl Deref for RtnlLocked<'_> {
    type Target = Rtnl;

    fn deref(&self) -> &Rtnl {
        self.rtnl
    }
}

/// A device's instance lock, taken by the driver under RTNL and held
/// until dropped.
///
/// # Invariants
///
/// `dev` is a live device whose instance lock this task took and holds
/// until the guard is dropped.
pub(crate) struct InstanceGuard<'a> {
    dev: *mut bindings::net_device,
    locked: RtnlLocked<'a>,
}

impl<'a> InstanceGuard<'a> {
    /// Takes `dev`'s instance lock, RTNL already held (the core's order:
    /// RTNL, then the instance lock). Process context; sleeps.
    ///
    /// # Safety
    ///
    /// `dev` is a live device for `'a`.
    pub(in crate::linux::net) unsafe fn lock(
        dev: *mut bindings::net_device,
        rtnl: &'a Rtnl,
    ) -> Self {
        // SAFETY: `dev` is live (the function's contract); process
        // context. Unlocked in `drop`, on this task (not `Send`).
        unsafe { bindings::rust_ext_netdev_lock(dev) };
        // INVARIANT: locked just now.
        Self {
            dev,
            locked: RtnlLocked {
                rtnl,
                // SAFETY: Held until the guard is dropped, which ends `'a`
                // for the borrow the guard hands out.
                dev: unsafe { DevLocked::assume_held() },
            },
        }
    }
}

impl<'a> Deref for InstanceGuard<'a> {
    type Target = RtnlLocked<'a>;

    fn deref(&self) -> &RtnlLocked<'a> {
        &self.locked
    }
}

impl Drop for InstanceGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: Taken in `lock` by this task (type invariant).
        unsafe { bindings::rust_ext_netdev_unlock(self.dev) };
    }
}
