// SPDX-License-Identifier: GPL-2.0

//! NAPI contexts: interrupt-driven polling of a queue.

use core::marker::PhantomPinned;

use kernel::{
    ffi::{c_int, c_void},
    prelude::*,
    types::Opaque,
};

use crate::linux::bindings;
use crate::linux::net::netdev::{NetDev, NetDevRef};

/// What a NAPI context polls.
pub(crate) trait NapiPoll: Send + Sync {
    /// Processes up to `budget` received frames; returns how many it did.
    /// Returning less than `budget` ends the poll (see [`Napi::complete_done`]).
    fn poll(&self, napi: &Napi, budget: u32) -> u32;
}

// `Napi` stays untyped in the device it belongs to: the poll reaches the
// device through its owner (which the driver keeps inside the device).

/// A NAPI context added to a net device, with the [`NapiPoll`] it drives.
///
/// # Invariants
///
/// `napi` was added to `dev` with [`Self::poll_trampoline`] and is deleted
/// in `drop`; `owner` is the [`NapiPoll`] the trampoline calls.
#[repr(C)]
#[pin_data(PinnedDrop)]
pub(crate) struct Napi {
    #[pin]
    napi: Opaque<bindings::napi_struct>,
    dev: *mut bindings::net_device,
    owner: *const c_void,
    poll: fn(*const c_void, &Napi, u32) -> u32,
    #[pin]
    _pin: PhantomPinned,
}

// SAFETY: The NAPI context and device are usable from any CPU; `owner` is
// `Send + Sync`.
unsafe impl Send for Napi {}
// SAFETY: As above; mutation goes through the kernel's NAPI state machine.
unsafe impl Sync for Napi {}

impl Napi {
    /// Adds NAPI context number `index` (its queue pair) to `dev`, calling
    /// `owner.poll`. Its settings and NAPI ID persist per index across
    /// disable/enable, as the netdev netlink family expects.
    ///
    /// # Safety
    ///
    /// `owner` must stay valid until this `Napi` is dropped, and `dev` must
    /// outlive it (drop it before the device is freed).
    pub(crate) unsafe fn new<D, P: NapiPoll + 'static>(
        dev: &NetDev<D>,
        index: u32,
        owner: *const P,
    ) -> impl PinInit<Self> + '_ {
        pin_init!(Self {
            napi <- Opaque::ffi_init(|slot: *mut bindings::napi_struct| {
                // SAFETY: `slot` is zeroed-or-uninit storage for a
                // napi_struct that stays pinned in `this`; the device is
                // alive. `netif_napi_add` initialises it.
                unsafe {
                    core::ptr::write_bytes(slot, 0, 1);
                    bindings::rust_ext_netif_napi_add_config(
                        dev.as_raw(),
                        slot,
                        Some(Self::poll_trampoline),
                        index as c_int,
                    );
                }
            }),
            dev: dev.as_raw(),
            owner: owner.cast(),
            poll: Self::call_poll::<P>,
            _pin: PhantomPinned,
        })
    }

    /// The raw context.
    pub(crate) fn as_raw(&self) -> *mut bindings::napi_struct {
        self.napi.get()
    }

    /// The device's raw pointer.
    pub(crate) fn dev_raw(&self) -> *mut bindings::net_device {
        self.dev
    }

    /// Records the IRQ that schedules this context (shown by the netdev
    /// netlink family). Call before the device is registered.
    pub(crate) fn set_irq(&self, irq: u32) {
        // SAFETY: Added in `new`; the helper takes the device's lock.
        unsafe { bindings::rust_ext_netif_napi_set_irq(self.as_raw(), irq as c_int) };
    }

    /// Links (or with `false`, unlinks) RX and TX queue `queue` of the
    /// device to this context, for the netdev netlink family. Call under
    /// RTNL (ndo_open/ndo_stop), with `queue` below the real queue count.
    pub(crate) fn link_queue(&self, queue: u32, link: bool) {
        let napi = if link {
            self.as_raw()
        } else {
            core::ptr::null_mut()
        };
        // SAFETY: Added in `new`; RTNL held by the caller's contract.
        unsafe {
            bindings::netif_queue_set_napi(
                self.dev,
                queue,
                bindings::netdev_queue_type_NETDEV_QUEUE_TYPE_RX,
                napi,
            );
            bindings::netif_queue_set_napi(
                self.dev,
                queue,
                bindings::netdev_queue_type_NETDEV_QUEUE_TYPE_TX,
                napi,
            );
        }
    }

    /// Allows polling (ndo_open). Must be paired with [`Napi::disable`].
    pub(crate) fn enable(&self) {
        // SAFETY: Added in `new`; process context under RTNL.
        unsafe { bindings::napi_enable(self.as_raw()) };
    }

    /// Waits for a running poll and prevents new ones (ndo_stop).
    pub(crate) fn disable(&self) {
        // SAFETY: Added and enabled; process context.
        unsafe { bindings::napi_disable(self.as_raw()) };
    }

    /// Schedules a poll (from the interrupt handler).
    pub(crate) fn schedule(&self) {
        // SAFETY: Added in `new`; any context.
        unsafe { bindings::rust_ext_napi_schedule(self.as_raw()) };
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
        (this.poll)(this.owner, this, budget.max(0) as u32) as c_int
    }
}

#[pinned_drop]
impl PinnedDrop for Napi {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: Added in `new` and (by the driver's contract) disabled;
        // the device is still alive.
        unsafe { bindings::rust_ext_netif_napi_del(self.as_raw()) };
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
    /// `owner` with NAPI context number `index` of `dev`. Like every
    /// [`NetDevRef`] holder, the result must live inside the device's state.
    pub(crate) fn new<'a, D: 'a>(
        dev: &'a NetDevRef<D>,
        index: u32,
        owner: impl PinInit<P, Error> + 'a,
    ) -> impl PinInit<Self, Error> + 'a {
        try_pin_init!(&this in Self {
            owner <- owner,
            // SAFETY: `owner` is a field of `this`, already initialised and
            // pinned with it; `napi` is declared first, so it is deleted
            // before `owner` is dropped. `dev` outlives us by the
            // `NetDevRef` contract (we live in the device's state).
            napi <- unsafe {
                Napi::new(dev.get(), index, &raw const (*this.as_ptr()).owner)
            },
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
