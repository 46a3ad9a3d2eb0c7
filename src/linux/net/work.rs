// SPDX-License-Identifier: GPL-2.0

//! Deferred work of a net device: what atomic context (a timer, an
//! interrupt) asks for and process context does, on the system workqueue,
//! at once or after a delay (periodic health checks, backoff).
//!
//! Unlike `kernel::workqueue`, the work item is embedded in the device's
//! state and cancelled (waited for) when that state is dropped, so the
//! work can use the device without holding a reference count.

use core::marker::PhantomData;

use kernel::{container_of, prelude::*, types::Opaque};

use crate::linux::bindings;
use crate::linux::net::{
    instance_lock::RtnlLocked,
    netdev::{NetDev, NetDevRef},
    rtnl::{self, Rtnl},
};

mod private {
    pub(crate) trait Sealed {}
}

/// The lock a work item runs under: [`Rtnl`] (taken around the run),
/// [`RtnlAndInstance`] (RTNL, then the device's instance lock: the work
/// may reconfigure the device as an `ndo_*` callback would) or [`NoLock`].
pub(crate) trait WorkLock: private::Sealed {
    /// The proof the work's `run` gets.
    type Held<'a>;

    /// Runs `f` on the device (if it is still registered) with the lock
    /// held.
    fn with<T>(dev: &NetDevRef<T>, f: impl FnOnce(&NetDev<T>, &Self::Held<'_>));
}

/// No lock: the work takes the locks it needs itself.
pub(crate) struct NoLock;

/// RTNL and the device's instance lock (taken in that order, the core's).
pub(crate) struct RtnlAndInstance;

impl private::Sealed for NoLock {}
impl private::Sealed for Rtnl {}
impl private::Sealed for RtnlAndInstance {}

impl WorkLock for NoLock {
    type Held<'a> = NoLock;

    fn with<T>(dev: &NetDevRef<T>, f: impl FnOnce(&NetDev<T>, &NoLock)) {
        if let Some(dev) = dev.try_access() {
            f(&dev, &NoLock);
        }
    }
}

impl WorkLock for Rtnl {
    type Held<'a> = Rtnl;

    fn with<T>(dev: &NetDevRef<T>, f: impl FnOnce(&NetDev<T>, &Rtnl)) {
        let rtnl = rtnl::lock();
        if let Some(dev) = dev.try_access() {
            f(&dev, &rtnl);
        }
    }
}

impl WorkLock for RtnlAndInstance {
    type Held<'a> = RtnlLocked<'a>;

    fn with<T>(dev: &NetDevRef<T>, f: impl FnOnce(&NetDev<T>, &RtnlLocked<'_>)) {
        let rtnl = rtnl::lock();
        if let Some(dev) = dev.try_access() {
            let locked = dev.lock_instance(&rtnl);
            f(&dev, &locked);
        }
    }
}

/// What a net device's driver does when its [`NetDevWork`] runs. A
/// driver with several work items tells them apart by `ID`.
pub(crate) trait DeviceWork<const ID: u8 = 0>: Send + Sync + Sized + 'static {
    /// The lock `run` is called under.
    type Lock: WorkLock;

    /// Whether the work may run on any CPU (the unbound workqueue)
    /// instead of the one that scheduled it: for work a NAPI
    /// poll queues in a stream, which on the poll's CPU would take turns
    /// with the poll while the other CPUs idle.
    const ANY_CPU: bool = false;

    /// Runs in process context, under [`DeviceWork::Lock`], at most once
    /// per [`NetDevWork::schedule`] or [`NetDevWork::schedule_after`] and
    /// never concurrently with itself. It may run after the device was
    /// stopped or unregistered; the device's removal waits for a run in
    /// progress, and a run due after that does nothing.
    fn run(dev: &NetDev<Self>, lock: &<Self::Lock as WorkLock>::Held<'_>);
}

/// A work item of a net device, usually a field of the device's `T`;
/// dropping it waits for a running instance, cancels a pending one and
/// ignores any later scheduling.
///
/// # Invariants
///
/// `work` was initialised with [`Self::run_raw`] as its function.
#[pin_data(PinnedDrop)]
pub(crate) struct NetDevWork<T: DeviceWork<ID>, const ID: u8 = 0> {
    #[pin]
    work: Opaque<bindings::delayed_work>,
    dev: NetDevRef<T>,
    _t: PhantomData<T>,
}

// SAFETY: Scheduling and cancelling a work item are allowed from any thread;
// `NetDevRef<T>` is `Send + Sync` for a `Send + Sync` `T`.
unsafe impl<T: DeviceWork<ID>, const ID: u8> Send for NetDevWork<T, ID> {}
// SAFETY: As above.
unsafe impl<T: DeviceWork<ID>, const ID: u8> Sync for NetDevWork<T, ID> {}

impl<T: DeviceWork<ID>, const ID: u8> NetDevWork<T, ID> {
    /// A work item running `T::run` on `dev` while the device's state
    /// exists.
    pub(crate) fn new(dev: NetDevRef<T>) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            // SAFETY: `INIT_DELAYED_WORK` on the embedded, pinned `delayed_work`.
            work <- Opaque::ffi_init(|w: *mut bindings::delayed_work| unsafe {
                bindings::rust_ext_init_delayed_work(w, Some(Self::run_raw))
            }),
            dev,
            _t: PhantomData,
        }? Error)
    }

    /// Runs the work as soon as possible (sooner than a pending delayed
    /// run, which it replaces). Any context.
    pub(crate) fn schedule(&self) {
        // SAFETY: `work` is initialised (type invariant) and pinned.
        unsafe { bindings::rust_ext_mod_delayed_work(self.work.get(), 0, T::ANY_CPU) };
    }

    /// Runs the work after `msecs` unless a run is already pending. Any
    /// context.
    pub(crate) fn schedule_after(&self, msecs: u32) {
        let delay = kernel::time::msecs_to_jiffies(msecs);
        // SAFETY: `work` is initialised (type invariant) and pinned.
        unsafe { bindings::rust_ext_queue_delayed_work(self.work.get(), delay, T::ANY_CPU) };
    }

    /// # Safety
    ///
    /// `w` is the `work` member of the `delayed_work` in a live
    /// `NetDevWork<T>` (the workqueue calls this only for initialised
    /// items, which are cancelled before they are dropped).
    unsafe extern "C" fn run_raw(w: *mut bindings::work_struct) {
        const { assert!(core::mem::offset_of!(bindings::delayed_work, work) == 0) };
        // SAFETY: Per the function's contract `w` is the first member of
        // the `delayed_work` in the `work` field of a `NetDevWork<T>` (so
        // has its address); `Opaque` is `repr(transparent)`.
        let this =
            unsafe { &*container_of!(w.cast::<Opaque<bindings::delayed_work>>(), Self, work) };
        // Taking RTNL here cannot deadlock with the device's removal (which
        // waits for our access, then cancels us): that never runs under
        // RTNL. A run after the device's unregistration does nothing.
        T::Lock::with(&this.dev, |dev, lock| T::run(dev, lock));
    }
}

#[pinned_drop]
impl<T: DeviceWork<ID>, const ID: u8> PinnedDrop for NetDevWork<T, ID> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: `work` is initialised; after this returns it is neither
        // pending nor running, and stays disabled: a later `schedule`
        // (from itself, or from a sibling field's drop reaching it
        // through the device) queues nothing, so `run_raw` cannot see a
        // dropped `self`.
        unsafe { bindings::disable_delayed_work_sync(self.work.get()) };
    }
}
