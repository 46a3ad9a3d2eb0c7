// SPDX-License-Identifier: GPL-2.0

//! A net device of any driver: what one driver may read and ask of
//! another's device without knowing its private state. hv_netvsc and
//! net_failover look at devices this way to find the VF they take over
//! (its type, its parent PCI slot, its address, whether it is already a
//! slave), then read its counters and open it.
//!
//! Every [`NetDev<T>`](super::netdev::NetDev) is also an [`AnyNetDev`]
//! (by `Deref`); the reverse needs proof of the device's ops
//! ([`super::netdev::NetDevVTable::owns`]).

use core::ptr::NonNull;

use kernel::{error::to_result, prelude::*, types::Opaque};

use crate::linux::bindings;
use crate::linux::net::{rtnl::Rtnl, stats::LinkStats};

/// A registered net device of any driver.
///
/// # Invariants
///
/// Wraps a live `struct net_device`, registered for as long as the
/// reference is held (callers get one under RTNL, from a notifier, or
/// through an [`AnyNetDevHold`]).
#[repr(transparent)]
pub(crate) struct AnyNetDev(Opaque<bindings::net_device>);

// SAFETY: What this type does with a device is allowed from any thread.
unsafe impl Sync for AnyNetDev {}

impl AnyNetDev {
    /// # Safety
    ///
    /// `ptr` must be a live, registered net device for `'a`.
    pub(in crate::linux) unsafe fn from_raw<'a>(ptr: *mut bindings::net_device) -> &'a Self {
        // SAFETY: `repr(transparent)` over the opaque C struct; validity
        // is the caller's promise.
        unsafe { &*ptr.cast() }
    }

    /// The raw `struct net_device`.
    pub(in crate::linux) fn as_raw(&self) -> *mut bindings::net_device {
        self.0.get()
    }

    /// The interface name, e.g. `eth0`.
    pub(crate) fn name(&self) -> &CStr {
        // SAFETY: `name` is a NUL-terminated array inside the live device.
        unsafe { CStr::from_char_ptr((*self.as_raw()).name.as_ptr()) }
    }

    /// The interface index.
    pub(crate) fn ifindex(&self) -> i32 {
        // SAFETY: A field of the live device, fixed while it is
        // registered.
        unsafe { (*self.as_raw()).ifindex }
    }

    /// The current unicast address (it changes only under RTNL). An
    /// Ethernet device's ([`Self::is_ethernet`]).
    pub(crate) fn addr(&self, _rtnl: &Rtnl) -> [u8; 6] {
        let mut mac = [0u8; 6];
        if !self.is_ethernet() {
            return mac;
        }
        // SAFETY: `dev_addr` of a registered Ethernet device points at
        // its `ETH_ALEN` bytes; RTNL keeps it stable.
        let addr = unsafe { (*self.as_raw()).dev_addr };
        // SAFETY: As above: six readable bytes, not overlapping `mac`.
        unsafe { core::ptr::copy_nonoverlapping(addr, mac.as_mut_ptr(), mac.len()) };
        mac
    }

    /// The current MTU.
    pub(crate) fn mtu(&self) -> u32 {
        // SAFETY: Reading a plain field of the live device, as `READ_ONCE`.
        unsafe { core::ptr::read_volatile(&raw const (*self.as_raw()).mtu) }
    }

    /// Whether the device is up (`netif_running`).
    pub(crate) fn is_running(&self) -> bool {
        // SAFETY: The device is alive; reading its state bit is allowed.
        unsafe { bindings::rust_ext_netif_running(self.as_raw()) }
    }

    /// Whether the carrier is up.
    pub(crate) fn carrier_ok(&self) -> bool {
        // SAFETY: The device is alive; reading its state bit is always allowed.
        unsafe { bindings::rust_ext_netif_carrier_ok(self.as_raw()) }
    }

    /// Whether it is an Ethernet device with a six-byte address.
    pub(crate) fn is_ethernet(&self) -> bool {
        // SAFETY: The device is alive; `type` and `addr_len` are set
        // before registration and fixed after.
        unsafe { bindings::rust_ext_netdev_is_ether(self.as_raw()) }
    }

    /// Whether it is a VLAN device (`is_vlan_dev`).
    pub(crate) fn is_vlan(&self) -> bool {
        // SAFETY: The device is alive; `priv_flags` is read only.
        unsafe { bindings::rust_ext_netdev_is_vlan(self.as_raw()) }
    }

    /// Whether another device already is its master (a bond, a team, a
    /// failover or another synthetic NIC).
    pub(crate) fn has_master(&self, _rtnl: &Rtnl) -> bool {
        // SAFETY: The device is alive and RTNL held, which the upper list
        // lookup requires.
        unsafe { bindings::rust_ext_netdev_has_master(self.as_raw()) }
    }

    /// Whether it is a master of other devices (`IFF_MASTER`: bonding,
    /// team), a failover master or a failover slave.
    pub(crate) fn is_aggregate_member(&self) -> bool {
        // SAFETY: The device is alive; its flags are only read.
        unsafe { bindings::rust_ext_netdev_is_aggregate_member(self.as_raw()) }
    }

    /// The number of the PCI slot its parent device sits in, if its
    /// parent is a PCI device in a named, numbered slot (hv_netvsc's VF
    /// serial; QEMU's `pcie-root-port` `slot=`).
    pub(crate) fn pci_slot_serial(&self) -> Option<u32> {
        let mut serial = 0u32;
        // SAFETY: The device is alive; its parent, set before
        // registration, outlives it; the slot is read under the PCI
        // core's rules for a bound device.
        unsafe { bindings::rust_ext_netdev_pci_slot(self.as_raw(), &mut serial) }.then_some(serial)
    }

    /// Its counters (`dev_get_stats`), as its driver reports them.
    pub(crate) fn link_stats(&self) -> LinkStats {
        let mut s = bindings::rtnl_link_stats64::default();
        // SAFETY: The device is alive (registered or held); `s` is a
        // valid buffer the call fills. `dev_get_stats` may be called from
        // any context a driver's `ndo_get_stats64` may run in.
        unsafe { bindings::dev_get_stats(self.as_raw(), &mut s) };
        LinkStats {
            rx_packets: s.rx_packets,
            tx_packets: s.tx_packets,
            rx_bytes: s.rx_bytes,
            tx_bytes: s.tx_bytes,
            rx_errors: s.rx_errors,
            rx_crc_errors: s.rx_crc_errors,
            tx_errors: s.tx_errors,
            rx_dropped: s.rx_dropped,
            tx_dropped: s.tx_dropped,
        }
    }

    /// Whether both devices are in the same network namespace.
    pub(crate) fn same_netns(&self, other: &AnyNetDev) -> bool {
        // SAFETY: Both devices are live; reading their namespace is allowed.
        unsafe { bindings::rust_ext_same_netns(self.as_raw(), other.as_raw()) }
    }

    /// Opens the device, as `ip link set up` would; the core takes its
    /// instance lock, which the caller must not hold.
    pub(crate) fn open(&self, _rtnl: &Rtnl) -> Result {
        // SAFETY: Registered; RTNL held.
        to_result(unsafe { bindings::dev_open(self.as_raw(), core::ptr::null_mut()) })
    }

    /// Sets the MTU, as `ip link set mtu` would; the core takes the
    /// instance lock, which the caller must not hold.
    pub(crate) fn change_mtu_to(&self, _rtnl: &Rtnl, mtu: u32) -> Result {
        let mtu = i32::try_from(mtu)?;
        // SAFETY: Registered; RTNL held.
        to_result(unsafe { bindings::dev_set_mtu(self.as_raw(), mtu) })
    }
}

/// A held net device of any driver (`dev_hold`), readable from any
/// context. Drop it before the device's unregistration completes: the
/// kernel waits for it.
///
/// # Invariants
///
/// `ptr` is a net device held by this value.
pub(crate) struct AnyNetDevHold {
    ptr: NonNull<bindings::net_device>,
}

// SAFETY: A held device may be used and released from any thread.
unsafe impl Send for AnyNetDevHold {}
// SAFETY: Sharing the handle only shares `&AnyNetDev`, which is `Sync`.
unsafe impl Sync for AnyNetDevHold {}

impl AnyNetDevHold {
    /// Holds `dev`.
    pub(crate) fn new(dev: &AnyNetDev) -> Self {
        // SAFETY: `dev` is registered; the hold is dropped in `drop`.
        unsafe { bindings::rust_ext_dev_hold(dev.as_raw()) };
        // INVARIANT: held just now.
        Self {
            ptr: NonNull::from(dev).cast(),
        }
    }

    /// The device.
    pub(crate) fn get(&self) -> &AnyNetDev {
        // SAFETY: Held, so it stays allocated and its unregistration
        // cannot complete while we exist (type invariant).
        unsafe { AnyNetDev::from_raw(self.ptr.as_ptr()) }
    }

    /// Whether it is `dev`.
    pub(crate) fn is(&self, dev: &AnyNetDev) -> bool {
        self.ptr.as_ptr() == dev.as_raw()
    }
}

impl Drop for AnyNetDevHold {
    fn drop(&mut self) {
        // SAFETY: Held by this value (type invariant); any context.
        unsafe { bindings::rust_ext_dev_put(self.ptr.as_ptr()) };
    }
}
