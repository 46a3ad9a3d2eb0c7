// SPDX-License-Identifier: GPL-2.0

//! Spinlocks that process context shares with softirq context (NAPI): held
//! with bottom halves off, as `spin_lock_bh` does in C, so a softirq on the
//! same CPU cannot spin on a lock its interrupted task holds. And spinlocks
//! shared with a hard interrupt handler: held with interrupts off, as
//! `spin_lock_irqsave` does. And counts of holds on something that must
//! not go away while held ([`HoldCount`]).

use core::marker::PhantomData;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicUsize, Ordering};

use kernel::prelude::*;
use kernel::sync::{lock::Guard, Completion, SpinLock};

use crate::linux::bindings;

/// Bottom halves off on this CPU until dropped.
pub(crate) struct BhDisabled(PhantomData<*mut ()>);

impl BhDisabled {
    /// Disables bottom halves. Process context.
    pub(crate) fn new() -> Self {
        // SAFETY: Process context; paired with the enable in `drop`, on the
        // same task (the type is neither `Send` nor `Sync`).
        unsafe { bindings::rust_ext_local_bh_disable() };
        Self(PhantomData)
    }
}

impl Drop for BhDisabled {
    fn drop(&mut self) {
        // SAFETY: Disabled in `new` on this task; no spinlock taken after
        // that is still held (`BhLocked` drops its guard first).
        unsafe { bindings::rust_ext_local_bh_enable() };
    }
}

/// A spinlock guard taken with bottom halves off; they come back on after
/// the lock is released.
pub(crate) struct BhLocked<'a, T> {
    // Field order is drop order: the lock goes first.
    guard: Guard<'a, T, kernel::sync::lock::spinlock::SpinLockBackend>,
    _bh: BhDisabled,
}

/// Locks `lock` from process context with bottom halves off.
pub(crate) fn lock_bh<T>(lock: &SpinLock<T>) -> BhLocked<'_, T> {
    let bh = BhDisabled::new();
    BhLocked {
        guard: lock.lock(),
        _bh: bh,
    }
}

impl<T> Deref for BhLocked<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T: Unpin> DerefMut for BhLocked<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}

/// Interrupts off on this CPU until dropped (restored as they were).
struct IrqsDisabled {
    flags: kernel::ffi::c_ulong,
    _not_send: PhantomData<*mut ()>,
}

impl IrqsDisabled {
    fn new() -> Self {
        // SAFETY: Any context; paired with the restore in `drop` on the
        // same CPU (the type is neither `Send` nor `Sync`).
        let flags = unsafe { bindings::rust_ext_local_irq_save() };
        Self {
            flags,
            _not_send: PhantomData,
        }
    }
}

impl Drop for IrqsDisabled {
    fn drop(&mut self) {
        // SAFETY: Saved in `new` on this CPU; locks taken after it are
        // released first (`IrqLocked` drops its guard first).
        unsafe { bindings::rust_ext_local_irq_restore(self.flags) };
    }
}

/// A spinlock guard taken with interrupts off.
pub(crate) struct IrqLocked<'a, T> {
    // Field order is drop order: the lock goes first.
    guard: Guard<'a, T, kernel::sync::lock::spinlock::SpinLockBackend>,
    _irqs: IrqsDisabled,
}

/// Locks `lock`, which a hard interrupt handler also takes, from any
/// context.
pub(crate) fn lock_irqsave<T>(lock: &SpinLock<T>) -> IrqLocked<'_, T> {
    let irqs = IrqsDisabled::new();
    IrqLocked {
        guard: lock.lock(),
        _irqs: irqs,
    }
}

impl<T> Deref for IrqLocked<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T: Unpin> DerefMut for IrqLocked<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}

/// Holds on something that must not go away while held, and a wait for
/// the last to be given back, as `netdev_hold`, `netdev_put` and
/// `netdev_wait_allrefs` do for a net device. It starts with one hold,
/// its owner's.
#[pin_data]
pub(crate) struct HoldCount {
    holds: AtomicUsize,
    /// Completed when the last hold is given back.
    #[pin]
    released: Completion,
}

impl HoldCount {
    /// A count of one hold.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            holds: AtomicUsize::new(1),
            released <- Completion::new(),
        })
    }

    /// Takes one more hold; only a holder may (the count is not zero).
    pub(crate) fn hold(&self) {
        self.holds.fetch_add(1, Ordering::Relaxed);
    }

    /// Gives one hold back.
    pub(crate) fn unhold(&self) {
        if self.holds.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.released.complete_all();
        }
    }

    /// Waits until every hold is given back. Process context.
    pub(crate) fn wait(&self) {
        if self.holds.load(Ordering::Acquire) != 0 {
            self.released.wait_for_completion();
        }
    }
}
