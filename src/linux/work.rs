// SPDX-License-Identifier: GPL-2.0

//! Deferred work of a pinned driver object that is not a net device (a
//! PCI function's state, in its devlink instance): at once or after a
//! delay, on the system workqueue.
//!
//! As [`crate::linux::net::work::NetDevWork`], the work item is embedded
//! in its owner and disabled (waited for, never run again) when dropped,
//! so the work uses its owner without a reference count. The owner says
//! which field is the work ([`PinnedWorkRun::work`]); scheduling checks
//! that the field lies inside the owner and records where, which is how
//! the run finds the owner again.

use core::marker::PhantomData;

use kernel::{
    prelude::*,
    sync::atomic::{Atomic, Relaxed},
    types::Opaque,
};

use crate::linux::bindings;

/// What an owner does when its [`PinnedWork`] number `ID` runs.
pub(crate) trait PinnedWorkRun<const ID: u8 = 0>: Send + Sync + Sized + 'static {
    /// The owner's work item `ID`: one of its own fields.
    fn work(&self) -> &PinnedWork<Self, ID>;

    /// Runs in process context, with no lock held, at most once per
    /// [`PinnedWork::schedule`] or [`PinnedWork::schedule_after`] and
    /// never concurrently with itself; never after the owner's work
    /// field was dropped.
    fn run(&self);
}

/// A work item inside a pinned `T`. Declare it before the fields its run
/// uses (fields drop in order): dropping it waits for a running
/// instance, cancels a pending one and ignores any later scheduling.
///
/// # Invariants
///
/// `work` was initialised with [`Self::run_raw`] as its function. While
/// it is queued, the item lies inside a `T` (pinned, as the item is) at
/// byte offset `offset`.
#[pin_data(PinnedDrop)]
pub(crate) struct PinnedWork<T: PinnedWorkRun<ID>, const ID: u8 = 0> {
    #[pin]
    work: Opaque<bindings::delayed_work>,
    offset: Atomic<usize>,
    _t: PhantomData<fn() -> T>,
}

// SAFETY: Scheduling and cancelling a work item are allowed from any
// thread; the run sees `&T`, and `T: Sync`.
unsafe impl<T: PinnedWorkRun<ID>, const ID: u8> Send for PinnedWork<T, ID> {}
// SAFETY: As above.
unsafe impl<T: PinnedWorkRun<ID>, const ID: u8> Sync for PinnedWork<T, ID> {}

impl<T: PinnedWorkRun<ID>, const ID: u8> PinnedWork<T, ID> {
    /// A work item running `T::run` on the `T` it is placed in.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            // SAFETY: `INIT_DELAYED_WORK` on the embedded, pinned `delayed_work`.
            work <- Opaque::ffi_init(|w: *mut bindings::delayed_work| unsafe {
                bindings::rust_ext_init_delayed_work(w, Some(Self::run_raw))
            }),
            offset: Atomic::new(0),
            _t: PhantomData,
        })
    }

    /// `owner`'s work item, with where it lies in `owner` recorded;
    /// `None` (and a warning) if [`PinnedWorkRun::work`] named an item
    /// outside `owner`.
    fn of(owner: &T) -> Option<&Self> {
        let work = owner.work();
        let base = core::ptr::from_ref(owner).addr();
        let at = core::ptr::from_ref(work).addr();
        if at < base || at + size_of::<Self>() > base + size_of::<T>() {
            pr_warn!("work item outside its owner; not scheduled\n");
            return None;
        }
        // The same value each time: a field's offset.
        work.offset.store(at - base, Relaxed);
        Some(work)
    }

    /// Runs `owner`'s work as soon as possible (sooner than a pending
    /// delayed run, which it replaces). Any context.
    pub(crate) fn schedule(owner: &T) {
        let Some(this) = Self::of(owner) else {
            return;
        };
        // SAFETY: `work` is initialised (type invariant) and pinned; the
        // offset of the owner is recorded (the invariant while queued).
        unsafe { bindings::rust_ext_mod_delayed_work(this.work.get(), 0, false) };
    }

    /// Runs `owner`'s work after `msecs` unless a run is already pending.
    /// Any context.
    pub(crate) fn schedule_after(owner: &T, msecs: u32) {
        let Some(this) = Self::of(owner) else {
            return;
        };
        let delay = kernel::time::msecs_to_jiffies(msecs);
        // SAFETY: As in `schedule`.
        unsafe { bindings::rust_ext_queue_delayed_work(this.work.get(), delay, false) };
    }

    /// Waits for a run in progress and keeps the work from running again
    /// (later scheduling queues nothing). Process context; not from the
    /// work itself.
    pub(crate) fn disable(&self) {
        // SAFETY: `work` is initialised (type invariant) and pinned.
        unsafe { bindings::disable_delayed_work_sync(self.work.get()) };
    }

    /// # Safety
    ///
    /// `w` is the `work` member of the `delayed_work` in a live, queued
    /// `PinnedWork<T, ID>` (the workqueue calls this only for initialised
    /// items it ran, which are disabled before they are dropped).
    unsafe extern "C" fn run_raw(w: *mut bindings::work_struct) {
        const { assert!(core::mem::offset_of!(bindings::delayed_work, work) == 0) };
        // SAFETY: Per the function's contract `w` is the first member of
        // the `delayed_work` in the `work` field of a live
        // `PinnedWork<T, ID>` (so has its address; `Opaque` is
        // `repr(transparent)`).
        let item = unsafe {
            &*kernel::container_of!(w.cast::<Opaque<bindings::delayed_work>>(), Self, work)
        };
        let offset = item.offset.load(Relaxed);
        // SAFETY: It was queued, so it lies `offset` bytes into a `T` (type
        // invariant), which is live: the item is, and it is disabled
        // before its owner's fields are dropped.
        let owner = unsafe {
            &*core::ptr::from_ref(item)
                .cast::<u8>()
                .sub(offset)
                .cast::<T>()
        };
        owner.run();
    }
}

#[pinned_drop]
impl<T: PinnedWorkRun<ID>, const ID: u8> PinnedDrop for PinnedWork<T, ID> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: `work` is initialised; after this returns it is neither
        // pending nor running, and stays disabled: a later `schedule`
        // (from itself, or from a sibling field's drop) queues nothing,
        // so `run_raw` cannot see a dropped owner.
        unsafe { bindings::disable_delayed_work_sync(self.work.get()) };
    }
}
