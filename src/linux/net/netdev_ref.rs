// SPDX-License-Identifier: GPL-2.0

//! Handles to a net device for objects that cannot borrow it: interrupt
//! handlers, NAPI owners, work items and health reporters of the
//! device's own driver state.
//!
//! Such an object may run at any time (an interrupt, a work item queued
//! before the device went away), so a bare pointer would be valid only
//! by a rule the compiler cannot check ("keep it inside the state").
//! Instead a [`NetDevRef`] gives the device out only through
//! [`NetDevRef::try_access`], as the kernel's `Revocable` does: the
//! access is refused before the driver state exists and once the device
//! is unregistered, and [`Registration`](super::netdev::Registration)
//! waits for every access in progress to end before it drops the state.
//! Each handle also holds the device's memory, as `netdev_hold` does: the
//! registration frees the device only when the last handle is gone (the
//! handles the state keeps go with it), so a handle is never dangling.

use core::{
    marker::PhantomData,
    ops::Deref,
    ptr::NonNull,
    sync::atomic::{AtomicUsize, Ordering},
};

use kernel::{
    prelude::*,
    sync::{Arc, Completion},
};

use crate::linux::bindings;
use crate::linux::net::netdev::NetDev;
use crate::linux::sync::HoldCount;

/// Bit 0 of [`StateLife::users`]: the state exists and may be accessed.
const OPEN: usize = 1;
/// One access in progress (the count is kept above [`OPEN`]).
const USER: usize = 2;

/// Whether a device's driver state may be accessed, shared by the
/// registration and every handle.
#[pin_data]
pub(super) struct StateLife {
    /// [`OPEN`] while the state may be accessed, plus [`USER`] per access
    /// in progress.
    users: AtomicUsize,
    /// Completed when the state is closed and the last access ended.
    #[pin]
    idle: Completion,
    /// Handles alive, plus one for the registration.
    #[pin]
    holds: HoldCount,
}

impl StateLife {
    /// A life not open yet, held by the registration.
    pub(super) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                users: AtomicUsize::new(0),
                idle <- Completion::new(),
                holds <- HoldCount::new(),
            }),
            GFP_KERNEL,
        )
    }

    /// Gives back the registration's hold and waits until every handle is
    /// gone, after which the device may be freed. Process context.
    pub(super) fn release(&self) {
        self.holds.unhold();
        self.holds.wait();
    }

    /// Allows accesses: the state is initialised.
    pub(super) fn open(&self) {
        self.users.fetch_or(OPEN, Ordering::Release);
    }

    /// Refuses new accesses and waits until those in progress end. After
    /// this returns no access exists or will be granted. Process context;
    /// the caller holds nothing an access may wait for (RTNL, the devlink
    /// instance lock).
    pub(super) fn close(&self) {
        let before = self.users.fetch_and(!OPEN, Ordering::AcqRel);
        // Not open (never, or closed already): no access was or is granted.
        // Open with accesses in progress: the last to end completes `idle`.
        if before & OPEN != 0 && before != OPEN {
            self.idle.wait_for_completion();
        }
    }

    /// Takes an access if the state is open.
    fn enter(&self) -> bool {
        self.users
            .fetch_update(Ordering::Acquire, Ordering::Relaxed, |u| {
                (u & OPEN != 0).then_some(u + USER)
            })
            .is_ok()
    }

    /// Ends an access; the last one after [`Self::close`] wakes it.
    fn leave(&self) {
        if self.users.fetch_sub(USER, Ordering::AcqRel) == USER {
            // Closed, and that was the last access.
            self.idle.complete_all();
        }
    }
}

/// A hold on a net device's memory (not on its driver state), for the
/// layer's objects that keep its address.
///
/// # Invariants
///
/// `ptr` is a net device allocated by a registration whose life is
/// `life`, and this value holds it: the device is freed only after it is
/// dropped. Its driver state is initialised while `life` is open.
pub(in crate::linux) struct DevHold {
    ptr: NonNull<bindings::net_device>,
    life: Arc<StateLife>,
}

impl DevHold {
    /// The device, alive as long as `self`.
    pub(in crate::linux) fn as_raw(&self) -> *mut bindings::net_device {
        self.ptr.as_ptr()
    }
}

impl Clone for DevHold {
    fn clone(&self) -> Self {
        self.life.holds.hold();
        // INVARIANT: one more hold, given back by `drop`.
        Self {
            ptr: self.ptr,
            life: self.life.clone(),
        }
    }
}

impl Drop for DevHold {
    fn drop(&mut self) {
        self.life.holds.unhold();
    }
}

// SAFETY: Holds and accesses are atomic counts; the device may be used
// from any thread.
unsafe impl Send for DevHold {}
// SAFETY: As above.
unsafe impl Sync for DevHold {}

/// A handle to a net device and its driver state `T`, which may be
/// copied and kept anywhere: the device is reached only through
/// [`Self::try_access`].
///
/// # Invariants
///
/// `hold` is a device allocated by a `Registration<T>`.
pub(crate) struct NetDevRef<T> {
    hold: DevHold,
    _t: PhantomData<T>,
}

impl<T> Clone for NetDevRef<T> {
    fn clone(&self) -> Self {
        Self {
            hold: self.hold.clone(),
            _t: PhantomData,
        }
    }
}

// SAFETY: `DevHold` is `Send + Sync`; `T` is shared.
unsafe impl<T: Send + Sync> Send for NetDevRef<T> {}
// SAFETY: As above.
unsafe impl<T: Send + Sync> Sync for NetDevRef<T> {}

impl<T> NetDevRef<T> {
    /// # Safety
    ///
    /// `ptr` is a net device being set up by a `Registration<T>` whose
    /// life is `life`, which it frees only after [`StateLife::release`],
    /// and whose `T` is initialised while `life` is open.
    pub(super) unsafe fn new(ptr: NonNull<bindings::net_device>, life: Arc<StateLife>) -> Self {
        life.holds.hold();
        // INVARIANT: per the function's contract, with a hold of our own.
        Self {
            hold: DevHold { ptr, life },
            _t: PhantomData,
        }
    }

    /// The device and its state, or `None` before the state exists and
    /// from the device's unregistration on. Keep the access short: the
    /// device's removal waits for it. Any context.
    pub(crate) fn try_access(&self) -> Option<NetDevAccess<'_, T>> {
        let life = &self.hold.life;
        if !life.enter() {
            return None;
        }
        // SAFETY: We hold the device, and its life is open and stays so for
        // our access (the registration waits for it before dropping `T`):
        // the device and its `T` are live (type invariants).
        let dev = unsafe { NetDev::from_raw(self.hold.as_raw()) };
        Some(NetDevAccess { dev, life })
    }

    /// A hold on the device alone, for the layer's objects that keep its
    /// address (a NAPI context).
    pub(in crate::linux) fn hold(&self) -> DevHold {
        self.hold.clone()
    }
}

/// An access to a device and its driver state through a [`NetDevRef`];
/// the device's removal waits until it is dropped.
pub(crate) struct NetDevAccess<'a, T> {
    dev: &'a NetDev<T>,
    life: &'a StateLife,
}

impl<T> Deref for NetDevAccess<'_, T> {
    type Target = NetDev<T>;

    fn deref(&self) -> &NetDev<T> {
        self.dev
    }
}

impl<T> Drop for NetDevAccess<'_, T> {
    fn drop(&mut self) {
        self.life.leave();
    }
}
