// SPDX-License-Identifier: GPL-2.0

//! Lower devices: a net device of ours (the synthetic NIC) taking another
//! of ours (the VF's NIC) as its slave, the way hv_netvsc does: master
//! link, an RX handler that hands the slave's frames to the master, TX
//! redirected to the slave, and the netdevice notifier that sees devices
//! come and go.
//!
//! "Ours" means a net device whose parent device is bound to the driver
//! named [`OUR_DRIVER`]; every such device carries the same driver state
//! type, which is what makes the typed views here sound.

use core::{
    marker::PhantomData,
    sync::atomic::{AtomicPtr, Ordering},
};

use kernel::{ffi::c_void, prelude::*, types::Opaque};

use crate::linux::bindings;
use crate::linux::net::{
    netdev::{Features, NetDev, NetDevOps},
    skbuff::SkBuff,
};

/// `NOTIFY_DONE`: the event is of no further interest to this notifier.
const NOTIFY_DONE: kernel::ffi::c_int = 0;

/// Name of the driver whose devices' net devices are "ours".
pub(crate) const OUR_DRIVER: &CStr = c"rsnic";

/// What happened to a net device (`enum netdev_cmd`, the ones we use).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NetdevEvent {
    /// Registered (`NETDEV_REGISTER`).
    Register,
    /// About to be unregistered (`NETDEV_UNREGISTER`).
    Unregister,
    /// Opened (`NETDEV_UP`).
    Up,
    /// About to be closed (`NETDEV_GOING_DOWN`).
    GoingDown,
    /// Carrier or flags changed (`NETDEV_CHANGE`).
    Change,
}

impl NetdevEvent {
    fn from_raw(event: u64) -> Option<Self> {
        Some(match u32::try_from(event).ok()? {
            bindings::netdev_cmd_NETDEV_REGISTER => Self::Register,
            bindings::netdev_cmd_NETDEV_UNREGISTER => Self::Unregister,
            bindings::netdev_cmd_NETDEV_UP => Self::Up,
            bindings::netdev_cmd_NETDEV_GOING_DOWN => Self::GoingDown,
            bindings::netdev_cmd_NETDEV_CHANGE => Self::Change,
            _ => return None,
        })
    }
}

/// A driver's reaction to events of its own net devices.
pub(crate) trait WatchNetdevs: NetDevOps {
    /// Called with RTNL held, in process context, for every event of a net
    /// device of ours.
    fn netdev_event(event: NetdevEvent, dev: &NetDev<Self>);
}

/// Whether `raw` is one of our net devices.
///
/// # Safety
///
/// `raw` is a live net device.
unsafe fn is_ours(raw: *mut bindings::net_device) -> bool {
    // SAFETY: `raw` is live; the name is a NUL-terminated string.
    unsafe { bindings::rsnic_netdev_parent_driver_is(raw, OUR_DRIVER.as_char_ptr()) }
}

/// A registered netdevice notifier that forwards our devices' events to
/// `T`. Unregistered on drop.
#[pin_data(PinnedDrop)]
pub(crate) struct NetdevNotifier<T: WatchNetdevs> {
    #[pin]
    nb: Opaque<bindings::notifier_block>,
    _t: PhantomData<T>,
}

// SAFETY: The notifier block is only touched by the notifier chain, which
// serialises under RTNL.
unsafe impl<T: WatchNetdevs> Send for NetdevNotifier<T> {}
// SAFETY: As above.
unsafe impl<T: WatchNetdevs> Sync for NetdevNotifier<T> {}

impl<T: WatchNetdevs> NetdevNotifier<T> {
    /// Registers the notifier (it first replays `Register` and `Up` for the
    /// devices that already exist).
    pub(crate) fn new() -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            nb <- Opaque::try_ffi_init(|nb: *mut bindings::notifier_block| {
                // SAFETY: `nb` points at the block's pinned, writable
                // storage; zero is a valid `notifier_block`.
                unsafe {
                    core::ptr::write_bytes(nb, 0, 1);
                    (*nb).notifier_call = Some(Self::call);
                }
                // SAFETY: Initialised above, registered once, at its final
                // address; `drop` unregisters it.
                kernel::error::to_result(unsafe { bindings::register_netdevice_notifier(nb) })
            }),
            _t: PhantomData,
        }? Error)
    }

    /// # Safety
    ///
    /// Called by the netdevice notifier chain with a `netdev_notifier_info`.
    unsafe extern "C" fn call(
        _nb: *mut bindings::notifier_block,
        event: usize,
        ptr: *mut c_void,
    ) -> kernel::ffi::c_int {
        let Some(event) = NetdevEvent::from_raw(event as u64) else {
            return NOTIFY_DONE;
        };
        // SAFETY: For netdevice events `ptr` is a `netdev_notifier_info`.
        let raw = unsafe { bindings::rsnic_netdev_notifier_info_to_dev(ptr.cast()) };
        // SAFETY: The chain passes a live device.
        if raw.is_null() || !unsafe { is_ours(raw) } {
            return NOTIFY_DONE;
        }
        // SAFETY: Ours, so allocated by `Registration::new` with a `T`
        // (module invariant); alive during the callback. `Register` comes
        // after the `T` was initialised, `Unregister` before it is dropped.
        T::netdev_event(event, unsafe { NetDev::from_raw(raw) });
        NOTIFY_DONE
    }
}

#[pinned_drop]
impl<T: WatchNetdevs> PinnedDrop for NetdevNotifier<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: Registered in `new`.
        unsafe { bindings::unregister_netdevice_notifier(self.nb.get()) };
    }
}

/// Finds one of our net devices, in any namespace, for which `pred` holds.
/// Call with RTNL held: the device stays registered until it is released.
pub(crate) fn find_ours<T: NetDevOps, F: FnMut(&NetDev<T>) -> bool>(
    mut pred: F,
) -> Option<&'static NetDev<T>> {
    /// # Safety
    ///
    /// `raw` is a live net device and `ctx` the `&mut F` passed below.
    unsafe extern "C" fn visit<T: NetDevOps, F: FnMut(&NetDev<T>) -> bool>(
        raw: *mut bindings::net_device,
        ctx: *mut c_void,
    ) -> bool {
        // SAFETY: `ctx` is the `&mut F` below; `raw` is a live device,
        // ours-checked first, so it carries a `T`.
        unsafe { is_ours(raw) && (*ctx.cast::<F>())(NetDev::from_raw(raw)) }
    }
    // SAFETY: The helper walks every device under RCU and calls `visit`
    // with `ctx`, which lives across the call.
    let raw = unsafe { bindings::rsnic_find_netdev(Some(visit::<T, F>), (&raw mut pred).cast()) };
    // SAFETY: Found under RCU; with RTNL held (the caller's duty) it cannot
    // be unregistered, so the reference is good while RTNL is.
    (!raw.is_null()).then(|| unsafe { NetDev::from_raw(raw) })
}

impl<T: NetDevOps> NetDev<T> {
    /// Makes `lower` this device's slave: master link (`ip link` shows
    /// `master`), `IFF_SLAVE`, and an RX handler that hands every frame it
    /// receives to this device. RTNL held.
    pub(crate) fn enslave(&self, lower: &NetDev<T>) -> Result {
        // SAFETY: Both devices are registered and RTNL is held (the
        // caller's duty, as for every notifier-time call).
        kernel::error::to_result(unsafe { bindings::rsnic_enslave(lower.as_raw(), self.as_raw()) })
    }

    /// Undoes [`NetDev::enslave`]. RTNL held.
    pub(crate) fn release(&self, lower: &NetDev<T>) {
        // SAFETY: Enslaved by `enslave`; RTNL held.
        unsafe { bindings::rsnic_release(lower.as_raw(), self.as_raw()) };
    }

    /// Whether both devices are in the same network namespace.
    pub(crate) fn same_netns(&self, other: &NetDev<T>) -> bool {
        // SAFETY: Both devices are live; reading their namespace is allowed.
        unsafe { bindings::rsnic_same_netns(self.as_raw(), other.as_raw()) }
    }

    /// Moves the device into `other`'s namespace (named `eth%d` there).
    /// It is unregistered and registered again, with the events that go
    /// with that. RTNL held.
    pub(crate) fn move_to_netns_of(&self, other: &NetDev<T>) -> Result {
        // SAFETY: Both registered; RTNL held (the caller's duty).
        kernel::error::to_result(unsafe {
            bindings::rsnic_move_to_netns_of(self.as_raw(), other.as_raw())
        })
    }

    /// Makes this device want `features` (the offloads `Features` names;
    /// others stay as they are). RTNL held.
    pub(crate) fn want_features(&self, features: Features) {
        // SAFETY: Registered; RTNL held (the caller's duty).
        unsafe {
            bindings::rsnic_features_sync(self.as_raw(), features.to_raw(), Features::ALL.to_raw())
        };
    }

    /// Whether the device is up (`IFF_UP`, `netif_running`).
    pub(crate) fn is_running(&self) -> bool {
        // SAFETY: Reading the state bit is always allowed.
        unsafe { bindings::rsnic_netif_running(self.as_raw()) }
    }

    /// Opens the device, as `ip link set up` would. RTNL held.
    pub(crate) fn open(&self) -> Result {
        // SAFETY: Registered; RTNL held.
        kernel::error::to_result(unsafe {
            bindings::dev_open(self.as_raw(), core::ptr::null_mut())
        })
    }

    /// Sets the MTU, as `ip link set mtu` would. RTNL held.
    pub(crate) fn change_mtu_to(&self, mtu: u32) -> Result {
        let mtu = i32::try_from(mtu)?;
        // SAFETY: Registered; RTNL held.
        kernel::error::to_result(unsafe { bindings::dev_set_mtu(self.as_raw(), mtu) })
    }
}

/// The slave a master transmits through, readable from the TX path.
///
/// # Invariants
///
/// `ptr` is null or a net device of ours with a `T`, held (`dev_hold`)
/// from [`TxLower::set`] until [`TxLower::clear`] returned.
pub(crate) struct TxLower<T> {
    ptr: AtomicPtr<bindings::net_device>,
    _t: PhantomData<T>,
}

impl<T: NetDevOps> TxLower<T> {
    /// No slave.
    pub(crate) fn new() -> Self {
        Self {
            ptr: AtomicPtr::new(core::ptr::null_mut()),
            _t: PhantomData,
        }
    }

    /// Starts transmitting through `lower`.
    pub(crate) fn set(&self, lower: &NetDev<T>) {
        // SAFETY: `lower` is registered; the reference is dropped in `clear`.
        unsafe { bindings::rsnic_dev_hold(lower.as_raw()) };
        let old = self.ptr.swap(lower.as_raw(), Ordering::AcqRel);
        if !old.is_null() {
            // SAFETY: Held by the `set` that stored it (type invariant);
            // no new reader can load it now. Wait for current ones.
            unsafe {
                bindings::synchronize_net();
                bindings::rsnic_dev_put(old);
            }
        }
    }

    /// Stops transmitting through the slave; returns when no transmit uses
    /// it any more. Process context.
    pub(crate) fn clear(&self) {
        let old = self.ptr.swap(core::ptr::null_mut(), Ordering::AcqRel);
        if !old.is_null() {
            // SAFETY: As in `set`: transmits run under RCU, which
            // `synchronize_net` waits out; then the hold is dropped.
            unsafe {
                bindings::synchronize_net();
                bindings::rsnic_dev_put(old);
            }
        }
    }

    /// Sends `skb` through the slave if there is one and `usable` says so;
    /// otherwise gives the skb back. Call from `ndo_start_xmit` (RCU-BH).
    pub(crate) fn xmit(
        &self,
        skb: SkBuff,
        usable: impl FnOnce(&NetDev<T>) -> bool,
    ) -> core::result::Result<(), SkBuff> {
        let raw = self.ptr.load(Ordering::Acquire);
        if raw.is_null() {
            return Err(skb);
        }
        // SAFETY: Held and ours (type invariant); `clear` waits for this
        // RCU-BH section before dropping the hold.
        let lower = unsafe { NetDev::from_raw(raw) };
        if !usable(lower) {
            return Err(skb);
        }
        skb.xmit_on(lower.as_raw());
        Ok(())
    }
}

impl<T> Drop for TxLower<T> {
    fn drop(&mut self) {
        let old = *self.ptr.get_mut();
        if !old.is_null() {
            // SAFETY: Held by `set` (type invariant); nothing can load it
            // once we are dropped.
            unsafe { bindings::rsnic_dev_put(old) };
        }
    }
}

/// A held reference to one of our net devices (`dev_hold`), so its driver
/// state can be read (for example its counters) from any context. Drop it
/// before the device's unregistration completes: the kernel waits for it.
///
/// # Invariants
///
/// `ptr` is one of our net devices with a `T`, held by this value.
pub(crate) struct LowerRef<T> {
    ptr: core::ptr::NonNull<bindings::net_device>,
    // Not `PhantomData<T>`: the device's state is pinned, the handle to
    // it need not be.
    _t: PhantomData<fn() -> T>,
}

// SAFETY: A held device may be used and released from any thread; `T` is
// shared between threads by `NetDevOps`' bounds.
unsafe impl<T: NetDevOps> Send for LowerRef<T> {}
// SAFETY: Sharing the handle only shares `&NetDev<T>`, which is `Sync`.
unsafe impl<T: NetDevOps> Sync for LowerRef<T> {}

impl<T: NetDevOps> LowerRef<T> {
    /// Holds `dev`.
    pub(crate) fn new(dev: &NetDev<T>) -> Self {
        // SAFETY: `dev` is registered; the hold is dropped in `drop`.
        unsafe { bindings::rsnic_dev_hold(dev.as_raw()) };
        // INVARIANT: held just now; ours because a `NetDev<T>` is.
        Self {
            ptr: core::ptr::NonNull::from(dev).cast(),
            _t: PhantomData,
        }
    }

    /// The device.
    pub(crate) fn get(&self) -> &NetDev<T> {
        // SAFETY: Held, so its unregistration cannot complete and its `T`
        // is not dropped while we exist (type invariant).
        unsafe { NetDev::from_raw(self.ptr.as_ptr()) }
    }
}

impl<T> Drop for LowerRef<T> {
    fn drop(&mut self) {
        // SAFETY: Held by this value (type invariant); any context.
        unsafe { bindings::rsnic_dev_put(self.ptr.as_ptr()) };
    }
}
