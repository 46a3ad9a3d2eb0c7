// SPDX-License-Identifier: GPL-2.0

//! NAPI contexts: interrupt-driven polling of a queue.

use core::{
    marker::PhantomPinned,
    sync::atomic::{AtomicU32, AtomicU8, Ordering},
};

use kernel::{
    ffi::{c_int, c_void},
    prelude::*,
    types::Opaque,
};

use crate::linux::bindings;
use crate::linux::net::{instance_lock::DevLocked, netdev::NetDevRef, netdev_ref::DevHold};

/// What a NAPI context polls.
pub(crate) trait NapiPoll: Send + Sync {
    /// Processes up to `budget` received frames; returns how many it did.
    /// Returning less than `budget` ends the poll (see [`Napi::complete_done`]).
    fn poll(&self, napi: &Napi, budget: u32) -> u32;
}

// `Napi` stays untyped in the device it belongs to: the poll reaches the
// device through its owner (which the driver keeps inside the device).

/// Where a NAPI context is in its life: off the device's list, on it and
/// disabled (as `netif_napi_add` leaves it), or enabled.
const DELETED: u8 = 0;
const ADDED: u8 = 1;
const ENABLED: u8 = 2;

/// A NAPI context of a net device, with the [`NapiPoll`] it drives.
///
/// It is on the device's NAPI list only between [`Napi::add`] and
/// [`Napi::del`], as upstream drivers keep a queue's context only while
/// the queue exists (the core walks that list, e.g. to switch threaded
/// NAPI, and waits for every context on it to be idle or polled: one left
/// disabled there would block it).
///
/// The context knows its state, so no order of calls is wrong: enabling
/// needs it added, disabling one that is not enabled does nothing (the
/// kernel's `napi_disable` would wait forever on a context never
/// enabled), and deleting (or dropping) an enabled one disables it first.
///
/// # Invariants
///
/// While `state` is not [`DELETED`], `napi` was added to `dev` with
/// [`Self::poll_trampoline`]; while it is [`ENABLED`], `napi_enable` was
/// the last of `napi_enable` and `napi_disable` called on it. `owner` is
/// the [`NapiPoll`] the trampoline calls. `state` changes under RTNL (or
/// in drop, when nothing else can reach the context).
#[repr(C)]
#[pin_data(PinnedDrop)]
pub(crate) struct Napi {
    #[pin]
    napi: Opaque<bindings::napi_struct>,
    dev: DevHold,
    owner: *const c_void,
    poll: fn(*const c_void, &Napi, u32) -> u32,
    /// The context's number (its queue), for its persistent settings.
    index: u32,
    /// The IRQ that schedules it (0: none recorded).
    irq: AtomicU32,
    /// [`DELETED`], [`ADDED`] or [`ENABLED`].
    state: AtomicU8,
    #[pin]
    _pin: PhantomPinned,
}

// SAFETY: The NAPI context and device are usable from any CPU; `owner` is
// `Send + Sync`.
unsafe impl Send for Napi {}
// SAFETY: As above; mutation goes through the kernel's NAPI state machine.
unsafe impl Sync for Napi {}

impl Napi {
    /// NAPI context number `index` (its queue) of `dev`, calling
    /// `owner.poll`; not on the device's list until [`Napi::add`]. Its
    /// settings and NAPI ID persist per index across delete and add, as
    /// the netdev netlink family expects.
    ///
    /// # Safety
    ///
    /// `owner` must stay valid until this `Napi` is dropped.
    pub(in crate::linux) unsafe fn new<P: NapiPoll + 'static>(
        dev: DevHold,
        index: u32,
        owner: *const P,
    ) -> impl PinInit<Self> {
        pin_init!(Self {
            // Zeroed until added: never handed to the kernel before.
            napi <- Opaque::zeroed(),
            dev,
            owner: owner.cast(),
            poll: Self::call_poll::<P>,
            index,
            irq: AtomicU32::new(0),
            state: AtomicU8::new(DELETED),
            _pin: PhantomPinned,
        })
    }

    /// Puts the context on the device's NAPI list, disabled (enable it to
    /// poll). No-op if it is there. Process context, the device's
    /// instance lock held.
    pub(crate) fn add(&self, _locked: &DevLocked) {
        if self.state.load(Ordering::Acquire) != DELETED {
            return;
        }
        // SAFETY: Not added, so the kernel does not use the storage, which
        // is pinned in `self`; the device is alive (`new`'s contract).
        // `netif_napi_add_config_locked` initialises the whole struct;
        // the instance lock is held (`_locked`).
        unsafe {
            core::ptr::write_bytes(self.as_raw(), 0, 1);
            bindings::rust_ext_netif_napi_add_config_locked(
                self.dev.as_raw(),
                self.as_raw(),
                Some(Self::poll_trampoline),
                // CAST: a queue index (the core has at most a few thousand).
                self.index as c_int,
            );
        }
        self.state.store(ADDED, Ordering::Release);
        let irq = self.irq.load(Ordering::Relaxed);
        if irq != 0 {
            // SAFETY: Added just now; the instance lock is held.
            // CAST: a Linux IRQ number, which the core keeps as an int.
            unsafe { bindings::netif_napi_set_irq_locked(self.as_raw(), irq as c_int) };
        }
    }

    /// Takes the context off the device's list, waiting for RCU readers;
    /// an enabled one is disabled first. No-op if it is not there.
    /// Process context, the device's instance lock held.
    pub(crate) fn del(&self, locked: &DevLocked) {
        self.disable(locked);
        if self
            .state
            .compare_exchange(ADDED, DELETED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            // SAFETY: Added and disabled (it was `ADDED`, not `ENABLED`:
            // type invariant); process context; the instance lock held.
            unsafe { bindings::rust_ext_netif_napi_del_locked(self.as_raw()) };
        }
    }

    /// Takes a context that is not enabled off the device's list, taking
    /// the instance lock (which the caller must not hold).
    fn delete_disabled(&self) {
        if self
            .state
            .compare_exchange(ADDED, DELETED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            // SAFETY: Added and disabled (it was `ADDED`, not `ENABLED`:
            // type invariant); process context.
            unsafe { bindings::rust_ext_netif_napi_del(self.as_raw()) };
        }
    }

    /// The raw context.
    pub(crate) fn as_raw(&self) -> *mut bindings::napi_struct {
        self.napi.get()
    }

    /// The device's raw pointer.
    pub(crate) fn dev_raw(&self) -> *mut bindings::net_device {
        self.dev.as_raw()
    }

    /// Records the IRQ that schedules this context (shown by the netdev
    /// netlink family once the context is added).
    pub(crate) fn set_irq(&self, irq: u32) {
        self.irq.store(irq, Ordering::Relaxed);
    }

    /// Links (or with `false`, unlinks) RX and TX queue `queue` of the
    /// device to this context, for the netdev netlink family; `queue` is
    /// below the real queue count. A context not added is not linked.
    pub(crate) fn link_queue(&self, _locked: &DevLocked, queue: u32, link: bool) {
        let napi = if link && self.state.load(Ordering::Acquire) != DELETED {
            self.as_raw()
        } else {
            core::ptr::null_mut()
        };
        // SAFETY: `napi` is NULL or this added context; the instance lock
        // held.
        unsafe {
            bindings::netif_queue_set_napi(
                self.dev.as_raw(),
                queue,
                bindings::netdev_queue_type_NETDEV_QUEUE_TYPE_RX,
                napi,
            );
            bindings::netif_queue_set_napi(
                self.dev.as_raw(),
                queue,
                bindings::netdev_queue_type_NETDEV_QUEUE_TYPE_TX,
                napi,
            );
        }
    }

    /// Allows polling; `EINVAL` if the context is not added, no-op if it
    /// is enabled already.
    pub(crate) fn enable(&self, _locked: &DevLocked) -> Result {
        match self.state.load(Ordering::Acquire) {
            DELETED => Err(EINVAL),
            ENABLED => Ok(()),
            _ => {
                // SAFETY: Added and disabled (type invariant); process
                // context, the instance lock held.
                unsafe { bindings::napi_enable_locked(self.as_raw()) };
                self.state.store(ENABLED, Ordering::Release);
                Ok(())
            }
        }
    }

    /// Waits for a running poll and prevents new ones. No-op unless the
    /// context is enabled.
    pub(crate) fn disable(&self, _locked: &DevLocked) {
        if self.state.load(Ordering::Acquire) == ENABLED {
            // SAFETY: Added and enabled (type invariant); process context,
            // the instance lock held.
            unsafe { bindings::napi_disable_locked(self.as_raw()) };
            self.state.store(ADDED, Ordering::Release);
        }
    }

    /// Schedules a poll (from the interrupt handler). A context not on
    /// the list (its queue is stopped) ignores it, as does a disabled one.
    pub(crate) fn schedule(&self) {
        if self.state.load(Ordering::Acquire) != DELETED {
            // SAFETY: Added; any context. If it is being deleted meanwhile
            // it is already disabled, and `napi_schedule` then does nothing.
            unsafe { bindings::rust_ext_napi_schedule(self.as_raw()) };
        }
    }

    /// Schedules a poll from process context (a lost interrupt found by a
    /// health check); the poll runs before this returns or on ksoftirqd.
    pub(crate) fn schedule_from_task(&self) {
        // Process context must disable bottom halves around
        // `napi_schedule`; they run (and poll) when re-enabled.
        let _bh = crate::linux::sync::BhDisabled::new();
        self.schedule();
    }

    /// Ends a poll that did `work_done` (< budget) frames. Returns false if
    /// the poll must continue (rescheduled meanwhile); only when true may
    /// the driver re-arm the interrupt.
    pub(crate) fn complete_done(&self, work_done: u32) -> bool {
        // SAFETY: Called from this context's poll.
        // CAST: at most the poll's budget, which came from a c_int.
        unsafe { bindings::napi_complete_done(self.as_raw(), work_done as c_int) }
    }

    fn call_poll<P: NapiPoll>(owner: *const c_void, napi: &Napi, budget: u32) -> u32 {
        // SAFETY: `owner` is the `*const P` given to `new`, valid while the
        // context exists (the caller of `new` promised).
        let owner = unsafe { &*owner.cast::<P>() };
        owner.poll(napi, budget)
    }

    /// # Safety
    ///
    /// Called by the kernel with a context added by [`Napi::new`].
    unsafe extern "C" fn poll_trampoline(napi: *mut bindings::napi_struct, budget: c_int) -> c_int {
        // SAFETY: `napi` is the first field of a `repr(C)` `Napi`, which
        // is pinned and alive while the context is added.
        let this = unsafe { &*napi.cast::<Napi>() };
        // CAST: the budget is not negative after `max(0)`; the poll returns at
        // most it.
        (this.poll)(this.owner, this, budget.max(0) as u32) as c_int
    }
}

#[pinned_drop]
impl PinnedDrop for Napi {
    fn drop(self: Pin<&mut Self>) {
        if self.state.load(Ordering::Acquire) == ENABLED {
            // SAFETY: Added and enabled (type invariant); the device is
            // alive (we hold it); process context (a device's state is
            // dropped in process context).
            unsafe { bindings::napi_disable(self.as_raw()) };
            self.state.store(ADDED, Ordering::Release);
        }
        self.delete_disabled();
    }
}

/// A [`NapiPoll`] owner together with the NAPI context that polls it.
///
/// Keeping both in one pinned object is what makes the context's pointer
/// to its owner sound: the owner cannot move, and the context (declared
/// first) is deleted before the owner is dropped. Derefs to the owner.
#[pin_data]
pub(crate) struct WithNapi<P> {
    #[pin]
    napi: Napi,
    #[pin]
    owner: P,
}

impl<P: NapiPoll + 'static> WithNapi<P> {
    /// `owner` with NAPI context number `index` of `dev`, which it holds
    /// (the device is freed only after the result is dropped).
    pub(crate) fn new<'a, D: 'a>(
        dev: &'a NetDevRef<D>,
        index: u32,
        owner: impl PinInit<P, Error> + 'a,
    ) -> impl PinInit<Self, Error> + 'a {
        try_pin_init!(&this in Self {
            owner <- owner,
            // SAFETY: `owner` is a field of `this`, already initialised and
            // pinned with it; `napi` is declared first, so it is deleted
            // before `owner` is dropped.
            napi <- unsafe { Napi::new(dev.hold(), index, &raw const (*this.as_ptr()).owner) },
        }? Error)
    }

    /// The NAPI context.
    pub(crate) fn napi(&self) -> &Napi {
        &self.napi
    }
}

impl<P> core::ops::Deref for WithNapi<P> {
    type Target = P;

    fn deref(&self) -> &P {
        &self.owner
    }
}
