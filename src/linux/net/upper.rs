// SPDX-License-Identifier: GPL-2.0

//! Upper and lower devices: a net device taking another of the same
//! driver as its slave, the way hv_netvsc takes its VF: master link, an
//! RX handler that hands the slave's frames to the master, TX redirected
//! to the slave; the netdevice notifier that sees devices come and go;
//! and lookups of a driver's devices.
//!
//! A device is a `NetDev<T>` when its operations are a [`NetDevVTable`]
//! of `T` ([`NetDevVTable::owns`]): that is what makes the typed views of
//! devices the notifier and lookups find sound.

use core::{
    marker::PhantomData,
    ptr::NonNull,
    sync::atomic::{AtomicPtr, Ordering},
};

use kernel::{
    error::to_result,
    ffi::{c_int, c_void},
    prelude::*,
    types::Opaque,
};

use crate::linux::bindings;
use crate::linux::net::{
    ethtool::EthtoolOps,
    instance_lock::RtnlLocked,
    netdev::{AnyNetDev, Features, NetDev, NetDevOps, NetDevVTable},
    rtnl::Rtnl,
    skbuff::{SkBuff, SkBuffRef},
};

/// `NOTIFY_DONE`: the event is of no further interest to this notifier.
const NOTIFY_DONE: c_int = 0;

/// What happened to a net device (`enum netdev_cmd`, the ones a bond
/// needs).
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
    /// Set up, about to be registered (`NETDEV_POST_INIT`); sent only
    /// for other drivers' devices.
    PostInit,
}

impl NetdevEvent {
    /// Whether the core sends this event of an ops-locked device under
    /// that device's instance lock (`Documentation/networking/
    /// netdevices.rst`, "Notifiers and netdev instance lock": `REGISTER`,
    /// `UP`, `CHANGE`; `UNREGISTER` never; `GOING_DOWN` either way).
    fn under_instance_lock(self) -> bool {
        matches!(self, Self::Register | Self::Up | Self::Change)
    }

    fn from_raw(event: u64) -> Option<Self> {
        Some(match u32::try_from(event).ok()? {
            bindings::netdev_cmd_NETDEV_REGISTER => Self::Register,
            bindings::netdev_cmd_NETDEV_UNREGISTER => Self::Unregister,
            bindings::netdev_cmd_NETDEV_UP => Self::Up,
            bindings::netdev_cmd_NETDEV_GOING_DOWN => Self::GoingDown,
            bindings::netdev_cmd_NETDEV_CHANGE => Self::Change,
            bindings::netdev_cmd_NETDEV_POST_INIT => Self::PostInit,
            _ => return None,
        })
    }
}

/// A driver's reaction to events of its own net devices (which are
/// ops-locked).
pub(crate) trait WatchNetdevs: NetDevOps + EthtoolOps {
    /// Called with RTNL held, in process context, for every event of a net
    /// device of type `Self`. `locked` is the device's instance lock for
    /// the events the core sends under it; for `Unregister` it is not
    /// held (the driver may take it), for `GoingDown` it may be (the
    /// driver must neither take nor assume it).
    fn netdev_event(
        event: NetdevEvent,
        dev: &NetDev<Self>,
        rtnl: &Rtnl,
        locked: Option<&RtnlLocked<'_>>,
    );

    /// Called with RTNL held, in process context, for every event of a
    /// net device of another driver; for `PostInit` the device is set up
    /// but not registered yet. No instance lock is assumed either way.
    fn other_netdev_event(_event: NetdevEvent, _dev: &AnyNetDev, _rtnl: &Rtnl) {}
}

/// A registered netdevice notifier that forwards the events of `T`'s
/// devices to `T`. Unregistered on drop.
#[pin_data(PinnedDrop)]
pub(crate) struct NetdevNotifier<T: WatchNetdevs> {
    #[pin]
    nb: Opaque<bindings::notifier_block>,
    vtable: &'static NetDevVTable<T>,
}

// SAFETY: The notifier block is only touched by the notifier chain, which
// serialises under RTNL; the vtable is `Sync`.
unsafe impl<T: WatchNetdevs> Send for NetdevNotifier<T> {}
// SAFETY: As above.
unsafe impl<T: WatchNetdevs> Sync for NetdevNotifier<T> {}

impl<T: WatchNetdevs> NetdevNotifier<T> {
    /// Registers the notifier for the devices of `vtable` (it first
    /// replays `Register` and `Up` for the devices that already exist).
    pub(crate) fn new(vtable: &'static NetDevVTable<T>) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            vtable,
            nb <- Opaque::try_ffi_init(|nb: *mut bindings::notifier_block| {
                // SAFETY: `nb` points at the block's pinned, writable
                // storage; zero is a valid `notifier_block`.
                unsafe {
                    core::ptr::write_bytes(nb, 0, 1);
                    (*nb).notifier_call = Some(Self::call);
                }
                // SAFETY: Initialised above, registered once, at its final
                // address inside the notifier, whose `vtable` is already set
                // (it is initialised first); `drop` unregisters it.
                to_result(unsafe { bindings::register_netdevice_notifier(nb) })
            }),
        }? Error)
    }

    /// # Safety
    ///
    /// Called by the netdevice notifier chain, with RTNL held, with the
    /// block of a live `Self` and a `netdev_notifier_info`.
    unsafe extern "C" fn call(
        nb: *mut bindings::notifier_block,
        event: usize,
        ptr: *mut c_void,
    ) -> c_int {
        let Some(event) = NetdevEvent::from_raw(event as u64) else {
            return NOTIFY_DONE;
        };
        // SAFETY: `nb` is the `nb` field of a live, pinned `Self`.
        let this = unsafe { &*kernel::container_of!(nb.cast::<Opaque<_>>(), Self, nb) };
        // SAFETY: For netdevice events `ptr` is a `netdev_notifier_info`.
        let raw = unsafe { bindings::rust_ext_netdev_notifier_info_to_dev(ptr.cast()) };
        if raw.is_null() {
            return NOTIFY_DONE;
        }
        // SAFETY: The chain passes a live device.
        if !unsafe { this.vtable.owns(raw) } {
            // SAFETY: A live device, registered or (for `PostInit`) about
            // to be, during the callback; RTNL is held.
            let (dev, rtnl) = unsafe { (AnyNetDev::from_raw(raw), Rtnl::assume_held()) };
            T::other_netdev_event(event, dev, rtnl);
            return NOTIFY_DONE;
        }
        if event == NetdevEvent::PostInit {
            // Our own device's state is not given out before it registers.
            return NOTIFY_DONE;
        }
        // SAFETY: Its ops are `T`'s, so it carries a `T`, alive during the
        // callback: `Register` comes after the `T` was initialised,
        // `Unregister` before it is dropped. RTNL is held.
        let (dev, rtnl) = unsafe { (NetDev::from_raw(raw), Rtnl::assume_held()) };
        let locked = if event.under_instance_lock() {
            // SAFETY: `T`'s devices are ops-locked (`Registration` sets
            // `request_ops_lock`), and the core sends these events of an
            // ops-locked device under its instance lock, RTNL held.
            Some(unsafe { RtnlLocked::assume_held() })
        } else {
            None
        };
        T::netdev_event(event, dev, rtnl, locked);
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

impl<T: NetDevOps + EthtoolOps> NetDevVTable<T> {
    /// Finds a device of these ops, in any network namespace, for which
    /// `pred` holds. It stays registered while RTNL is held.
    pub(crate) fn find<'r>(
        &'static self,
        rtnl: &'r Rtnl,
        mut pred: impl FnMut(&NetDev<T>) -> bool,
    ) -> Option<&'r NetDev<T>> {
        let mut found = None;
        find_any(rtnl, |any| {
            // SAFETY: `any` is live; if its ops are ours it carries a `T`,
            // and stays registered (with its `T`) while RTNL is held,
            // which `'r` is bounded by.
            if !unsafe { self.owns(any.as_raw()) } {
                return false;
            }
            // SAFETY: As just said.
            let dev = unsafe { NetDev::from_raw(any.as_raw()) };
            let hit = pred(dev);
            if hit {
                found = Some(dev);
            }
            hit
        });
        found
    }
}

/// Finds a net device of any driver, in any network namespace, for which
/// `pred` holds. It stays registered while RTNL is held.
pub(crate) fn find_any<'r>(
    _rtnl: &'r Rtnl,
    mut pred: impl FnMut(&AnyNetDev) -> bool,
) -> Option<&'r AnyNetDev> {
    let _rcu = kernel::sync::rcu::read_lock();
    // SAFETY: Under RCU, as `for_each_net_rcu` walks the namespaces.
    let mut net = unsafe { bindings::rust_ext_first_net_rcu() };
    while !net.is_null() {
        // SAFETY: A live namespace, under RCU (`for_each_netdev_rcu`).
        let mut raw = unsafe { bindings::rust_ext_first_net_device_rcu(net) };
        while !raw.is_null() {
            // SAFETY: `raw` is live and stays registered while RTNL is
            // held, which `'r` is bounded by.
            let dev = unsafe { AnyNetDev::from_raw(raw) };
            if pred(dev) {
                return Some(dev);
            }
            // SAFETY: `raw` is a live device of the list, under RCU.
            raw = unsafe { bindings::rust_ext_next_net_device_rcu(raw) };
        }
        // SAFETY: `net` is a live entry of the list, under RCU.
        net = unsafe { bindings::rust_ext_next_net_rcu(net) };
    }
    None
}

impl AnyNetDev {
    /// Marks the device a slave (`IFF_SLAVE`, `IFF_NO_ADDRCONF`) before
    /// it is enslaved, so addrconf leaves it alone from its first `up`.
    pub(crate) fn mark_slave(&self, _rtnl: &Rtnl) {
        // SAFETY: The device is live; RTNL held: its flags change only
        // under it.
        unsafe { bindings::rust_ext_netdev_mark_slave(self.as_raw(), true) };
    }

    /// Takes [`Self::mark_slave`]'s marks off a released device.
    pub(crate) fn unmark_slave(&self, _rtnl: &Rtnl) {
        // SAFETY: As in `mark_slave`.
        unsafe { bindings::rust_ext_netdev_mark_slave(self.as_raw(), false) };
    }
}

impl<T: NetDevOps> NetDev<T> {
    /// Gives `lower` this device's unicast and multicast address lists
    /// (`dev_uc_sync`, `dev_mc_sync`), for a slave that filters by its
    /// own.
    pub(crate) fn sync_addr_lists_to(&self, lower: &AnyNetDev) {
        // SAFETY: Both devices are live; the helper takes this device's
        // address lock around the sync, as `ndo_set_rx_mode` would hold it.
        unsafe { bindings::rust_ext_sync_addr_lists(lower.as_raw(), self.as_raw()) };
    }

    /// Takes back what [`Self::sync_addr_lists_to`] gave `lower`.
    pub(crate) fn unsync_addr_lists_from(&self, lower: &AnyNetDev) {
        // SAFETY: As above.
        unsafe { bindings::rust_ext_unsync_addr_lists(lower.as_raw(), self.as_raw()) };
    }

    /// Makes `lower` (of any driver) this device's slave: master link
    /// (`ip link` shows `master`), `IFF_SLAVE`, and an RX handler that
    /// hands every frame it receives to this device.
    pub(crate) fn enslave(&self, _rtnl: &Rtnl, lower: &AnyNetDev) -> Result {
        // SAFETY: Both devices are registered and RTNL is held. The handler
        // data is this device, which outlives the link: `release` (or the
        // core, on unregistration) removes the handler first.
        to_result(unsafe {
            bindings::netdev_rx_handler_register(
                lower.as_raw(),
                Some(slave_rx_handler),
                self.as_raw().cast(),
            )
        })?;
        // SAFETY: As above; no upper info, no extack.
        let linked = to_result(unsafe {
            bindings::netdev_master_upper_dev_link(
                lower.as_raw(),
                self.as_raw(),
                core::ptr::null_mut(),
                core::ptr::null_mut(),
                core::ptr::null_mut(),
            )
        });
        if let Err(e) = linked {
            // SAFETY: Registered just above; RTNL held.
            unsafe { bindings::netdev_rx_handler_unregister(lower.as_raw()) };
            return Err(e);
        }
        // SAFETY: RTNL held: flags change only under it.
        unsafe { (*lower.as_raw()).flags |= bindings::net_device_flags_IFF_SLAVE };
        Ok(())
    }

    /// Undoes [`NetDev::enslave`].
    pub(crate) fn release(&self, _rtnl: &Rtnl, lower: &AnyNetDev) {
        // SAFETY: Enslaved by `enslave`; RTNL held.
        unsafe {
            bindings::netdev_rx_handler_unregister(lower.as_raw());
            bindings::netdev_upper_dev_unlink(lower.as_raw(), self.as_raw());
            (*lower.as_raw()).flags &= !bindings::net_device_flags_IFF_SLAVE;
        }
    }

    /// Moves the device into `other`'s namespace (named `eth%d` there).
    /// It is unregistered and registered again, with the events that go
    /// with that; the core takes its instance lock, which the caller must
    /// not hold.
    pub(crate) fn move_to_netns_of(&self, _rtnl: &Rtnl, other: &NetDev<T>) -> Result {
        // SAFETY: Both registered; RTNL held.
        to_result(unsafe {
            bindings::dev_change_net_namespace(
                self.as_raw(),
                bindings::rust_ext_dev_net(other.as_raw()),
                c"eth%d".as_char_ptr(),
            )
        })
    }

    /// Makes this device want, of the offloads in `mask`, those in
    /// `features` (the others stay as they are). `locked` is this
    /// device's instance lock.
    pub(crate) fn sync_features(
        &self,
        _locked: &RtnlLocked<'_>,
        features: Features,
        mask: Features,
    ) {
        let raw = self.as_raw();
        let (features, mask): (u64, u64) = (features.into(), mask.into());
        // SAFETY: Registered; RTNL and the instance lock held, under which
        // `wanted_features` changes and `netdev_update_features` may run.
        unsafe {
            (*raw).wanted_features = ((*raw).wanted_features & !mask) | (features & mask);
            bindings::netdev_update_features(raw);
        }
    }
}

/// The RX handler of a slave: its frames are its master's.
///
/// # Safety
///
/// Called by the receive path, under RCU, with a valid skb whose device
/// has this handler, registered by [`NetDev::enslave`] with the master as
/// its data.
unsafe extern "C" fn slave_rx_handler(
    pskb: *mut *mut bindings::sk_buff,
) -> bindings::rx_handler_result_t {
    // SAFETY: The receive path passes a valid skb.
    let skb = unsafe { *pskb };
    // SAFETY: `skb->dev` is the slave; its handler data is the master,
    // alive while the handler is registered (RCU protects the pair).
    unsafe {
        let master = bindings::rust_ext_rx_handler_data(bindings::rust_ext_skb_dev(skb));
        bindings::rust_ext_skb_set_dev(skb, master.cast());
        bindings::rust_ext_skb_set_iif(skb, (*master.cast::<bindings::net_device>()).ifindex);
    }
    bindings::rx_handler_result_RX_HANDLER_ANOTHER
}

/// The slave a master transmits through, readable from the TX path.
///
/// # Invariants
///
/// `ptr` is null or a net device, held (`dev_hold`) from
/// [`TxLower::set`] until [`TxLower::clear`] returned.
pub(crate) struct TxLower {
    ptr: AtomicPtr<bindings::net_device>,
}

impl TxLower {
    /// No slave.
    pub(crate) fn new() -> Self {
        Self {
            ptr: AtomicPtr::new(core::ptr::null_mut()),
        }
    }

    /// Starts transmitting through `lower`, of any driver.
    pub(crate) fn set(&self, lower: &AnyNetDev) {
        // SAFETY: `lower` is registered; the reference is dropped in `clear`.
        unsafe { bindings::rust_ext_dev_hold(lower.as_raw()) };
        let old = self.ptr.swap(lower.as_raw(), Ordering::AcqRel);
        if !old.is_null() {
            // SAFETY: Held by the `set` that stored it (type invariant);
            // no new reader can load it now. Wait for current ones.
            unsafe {
                bindings::synchronize_net();
                bindings::rust_ext_dev_put(old);
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
                bindings::rust_ext_dev_put(old);
            }
        }
    }

    /// The slave's own choice of TX queue for `skb` (its
    /// `ndo_select_queue`, else the stack's pick for it); `None` without
    /// a slave. For an upper whose queues follow the slave's, as netvsc's
    /// do. Call from `ndo_select_queue` (RCU-BH).
    pub(crate) fn pick(&self, skb: &mut SkBuffRef<'_>) -> Option<u16> {
        let raw = self.ptr.load(Ordering::Acquire);
        if raw.is_null() {
            return None;
        }
        // SAFETY: Held (type invariant), and `clear` waits for this
        // RCU-BH section; its ops table lives as long as it is registered;
        // the skb is the core's for the call.
        let queue = unsafe {
            match (*(*raw).netdev_ops).ndo_select_queue {
                Some(select) => select(raw, skb.as_raw(), core::ptr::null_mut()),
                None => bindings::netdev_pick_tx(raw, skb.as_raw(), core::ptr::null_mut()),
            }
        };
        Some(queue)
    }

    /// Sends `skb` through the slave if there is one and `usable` says so,
    /// on the TX queue `queue` of the slave; otherwise gives the skb back.
    /// Call from `ndo_start_xmit` (RCU-BH).
    pub(crate) fn xmit(
        &self,
        skb: SkBuff,
        usable: impl FnOnce(&AnyNetDev) -> bool,
    ) -> core::result::Result<(), SkBuff> {
        let raw = self.ptr.load(Ordering::Acquire);
        if raw.is_null() {
            return Err(skb);
        }
        // SAFETY: Held (type invariant); `clear` waits for this RCU-BH
        // section before dropping the hold.
        let lower = unsafe { AnyNetDev::from_raw(raw) };
        if !usable(lower) {
            return Err(skb);
        }
        skb.xmit_on(lower.as_raw());
        Ok(())
    }
}

impl Drop for TxLower {
    fn drop(&mut self) {
        let old = *self.ptr.get_mut();
        if !old.is_null() {
            // SAFETY: Held by `set` (type invariant); nothing can load it
            // once we are dropped.
            unsafe { bindings::rust_ext_dev_put(old) };
        }
    }
}

/// A held net device whose driver state its holder does not name: an RDMA
/// device's port, whose GIDs and state ib_core takes from it.
///
/// # Invariants
///
/// `ptr` is a net device held by this value.
pub(crate) struct PortNetDev {
    ptr: NonNull<bindings::net_device>,
}

// SAFETY: A held device may be used and released from any thread.
unsafe impl Send for PortNetDev {}
// SAFETY: Sharing only reads the device's name.
unsafe impl Sync for PortNetDev {}

impl PortNetDev {
    /// Holds `dev`.
    pub(crate) fn new<T: NetDevOps>(dev: &NetDev<T>) -> Self {
        // SAFETY: `dev` is registered; the hold is dropped in `drop`.
        unsafe { bindings::rust_ext_dev_hold(dev.as_raw()) };
        // INVARIANT: held just now.
        Self {
            ptr: NonNull::from(dev).cast(),
        }
    }

    /// The device's name.
    pub(crate) fn name(&self) -> &CStr {
        // SAFETY: Held (type invariant); `name` is a NUL-terminated array
        // inside the device.
        unsafe { CStr::from_char_ptr((*self.ptr.as_ptr()).name.as_ptr()) }
    }

    /// The `struct net_device`.
    pub(in crate::linux) fn as_raw(&self) -> *mut bindings::net_device {
        self.ptr.as_ptr()
    }
}

impl Drop for PortNetDev {
    fn drop(&mut self) {
        // SAFETY: Held by this value (type invariant); any context.
        unsafe { bindings::rust_ext_dev_put(self.ptr.as_ptr()) };
    }
}

/// A held reference to a net device with a `T` (`dev_hold`), so its
/// driver state can be read (for example its counters) from any context.
/// Drop it before the device's unregistration completes: the kernel waits
/// for it.
///
/// # Invariants
///
/// `ptr` is a net device with a `T`, held by this value.
pub(crate) struct NetDevHold<T> {
    ptr: NonNull<bindings::net_device>,
    // Not `PhantomData<T>`: the device's state is pinned, the handle to
    // it need not be.
    _t: PhantomData<fn() -> T>,
}

// SAFETY: A held device may be used and released from any thread; `T` is
// shared between threads by `NetDevOps`' bounds.
unsafe impl<T: NetDevOps> Send for NetDevHold<T> {}
// SAFETY: Sharing the handle only shares `&NetDev<T>`, which is `Sync`.
unsafe impl<T: NetDevOps> Sync for NetDevHold<T> {}

impl<T: NetDevOps> NetDevHold<T> {
    /// Holds `dev`.
    pub(crate) fn new(dev: &NetDev<T>) -> Self {
        // SAFETY: `dev` is registered; the hold is dropped in `drop`.
        unsafe { bindings::rust_ext_dev_hold(dev.as_raw()) };
        // INVARIANT: held just now; a `NetDev<T>` carries a `T`.
        Self {
            ptr: NonNull::from(dev).cast(),
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

impl<T> Drop for NetDevHold<T> {
    fn drop(&mut self) {
        // SAFETY: Held by this value (type invariant); any context.
        unsafe { bindings::rust_ext_dev_put(self.ptr.as_ptr()) };
    }
}
