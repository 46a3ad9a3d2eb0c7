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
use crate::linux::net::netdev::{NetDev, NetDevRef};

/// What a net device's driver does when its [`NetDevWork`] runs. A
/// driver with several work items tells them apart by `ID`.
pub(crate) trait DeviceWork<const ID: u8 = 0>: Send + Sync + Sized + 'static {
    /// Whether `run` is called with RTNL held.
    const RTNL: bool = true;

    /// Runs in process context, with RTNL held if [`Self::RTNL`] (so it
    /// may reconfigure the device as an `ndo_*` callback would), at most once per
    /// [`NetDevWork::schedule`] or [`NetDevWork::schedule_after`] and never
    /// concurrently with itself. It may
    /// run after the device was stopped or unregistered, but never after
    /// the device's state was dropped.
    fn run(dev: &NetDev<Self>);
}

/// A work item of a net device. Keep it inside the device's `T`; dropping
/// it waits for a running instance and cancels a pending one.
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
    /// A work item running `T::run` on `dev`. Like every [`NetDevRef`]
    /// holder, it must live inside the device's state.
    pub(crate) fn new(dev: NetDevRef<T>) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            // SAFETY: `INIT_DELAYED_WORK` on the embedded, pinned `delayed_work`.
            work <- Opaque::ffi_init(|w: *mut bindings::delayed_work| unsafe {
                bindings::rsnic_init_delayed_work(w, Some(Self::run_raw))
            }),
            dev,
            _t: PhantomData,
        }? Error)
    }

    /// Runs the work as soon as possible (sooner than a pending delayed
    /// run, which it replaces). Any context.
    pub(crate) fn schedule(&self) {
        // SAFETY: `work` is initialised (type invariant) and pinned.
        unsafe { bindings::rsnic_run_delayed_work_now(self.work.get()) };
    }

    /// Runs the work after `msecs` unless a run is already pending. Any
    /// context.
    pub(crate) fn schedule_after(&self, msecs: u32) {
        // SAFETY: `work` is initialised (type invariant) and pinned.
        unsafe { bindings::rsnic_run_delayed_work_after(self.work.get(), msecs) };
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
        if !T::RTNL {
            T::run(this.dev.get());
            return;
        }
        // SAFETY: Process context, no locks held: RTNL may be taken. The
        // state's drop (which cancels us) never runs under RTNL, so this
        // cannot deadlock with it.
        unsafe { bindings::rsnic_rtnl_lock() };
        T::run(this.dev.get());
        // SAFETY: Taken above.
        unsafe { bindings::rsnic_rtnl_unlock() };
    }
}

#[pinned_drop]
impl<T: DeviceWork<ID>, const ID: u8> PinnedDrop for NetDevWork<T, ID> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: `work` is initialised; after this returns it is neither
        // pending nor running (even if it re-queues itself), so `run_raw`
        // cannot see a dropped `self`.
        unsafe { bindings::rsnic_cancel_delayed_work_sync(self.work.get()) };
    }
}
