// SPDX-License-Identifier: GPL-2.0

//! TX shapers (`net_shaper_ops`): the hierarchy a user builds through the
//! `net-shaper` netlink family, which the core keeps and validates (scopes,
//! parents, the capabilities the device declares), applied by the device.
//! A [`NetDevOps`] implementation that has shapers implements
//! [`NetDevOps::shaper_set`], [`NetDevOps::shaper_delete`],
//! [`NetDevOps::shaper_group`] and [`NetDevOps::shaper_caps`]; the core
//! calls them with the device's instance lock held.

use core::marker::PhantomData;

use kernel::{
    error::from_result,
    ffi::{c_int, c_ulong},
    prelude::*,
};

use super::{instance_lock::DevLocked, netdev::NetDev, netdev_ops::NetDevOps};
use crate::linux::bindings;

/// Which shaper (`net_shaper_handle`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Handle {
    /// Not given (a parent the core leaves to the device's default).
    Unspec,
    /// The device as a whole.
    Netdev,
    /// TX queue `n`.
    Queue(u32),
    /// Group node `n`, numbered by the core.
    Node(u32),
}

impl Handle {
    fn from_raw(raw: &bindings::net_shaper_handle) -> Self {
        match raw.scope {
            bindings::net_shaper_scope_NET_SHAPER_SCOPE_NETDEV => Self::Netdev,
            bindings::net_shaper_scope_NET_SHAPER_SCOPE_QUEUE => Self::Queue(raw.id),
            bindings::net_shaper_scope_NET_SHAPER_SCOPE_NODE => Self::Node(raw.id),
            _ => Self::Unspec,
        }
    }
}

/// The scope a capability query is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scope {
    /// The device as a whole.
    Netdev,
    /// A TX queue.
    Queue,
    /// A group node.
    Node,
}

kernel::impl_flags!(
    /// What shapers of one scope can do (`NET_SHAPER_A_CAPS_SUPPORT_*`):
    /// the core refuses any setting the device does not declare.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub(crate) struct ShaperCaps(u64);

    /// One capability.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) enum ShaperCap {
        /// Rates in bits a second.
        MetricBps = 1 << bindings::NET_SHAPER_A_CAPS_SUPPORT_METRIC_BPS,
        /// Rates in packets a second.
        MetricPps = 1 << bindings::NET_SHAPER_A_CAPS_SUPPORT_METRIC_PPS,
        /// Shapers of this scope may hang below group nodes.
        Nesting = 1 << bindings::NET_SHAPER_A_CAPS_SUPPORT_NESTING,
        /// A guaranteed rate.
        BwMin = 1 << bindings::NET_SHAPER_A_CAPS_SUPPORT_BW_MIN,
        /// A peak rate.
        BwMax = 1 << bindings::NET_SHAPER_A_CAPS_SUPPORT_BW_MAX,
        /// A burst size.
        Burst = 1 << bindings::NET_SHAPER_A_CAPS_SUPPORT_BURST,
        /// A strict priority.
        Priority = 1 << bindings::NET_SHAPER_A_CAPS_SUPPORT_PRIORITY,
        /// A weight among siblings.
        Weight = 1 << bindings::NET_SHAPER_A_CAPS_SUPPORT_WEIGHT,
    }
);

/// One shaper's settings as the core passes them (`struct net_shaper`):
/// zero is "not set".
#[repr(transparent)]
pub(crate) struct Shaper(bindings::net_shaper);

impl Shaper {
    /// Which shaper.
    pub(crate) fn handle(&self) -> Handle {
        Handle::from_raw(&self.0.handle)
    }

    /// Its parent.
    pub(crate) fn parent(&self) -> Handle {
        Handle::from_raw(&self.0.parent)
    }

    /// Peak rate (0: none).
    pub(crate) fn bw_max(&self) -> u64 {
        self.0.bw_max
    }

    /// Burst, bytes (0: the device's default).
    pub(crate) fn burst(&self) -> u64 {
        self.0.burst
    }

    /// Weight among siblings (0: not set).
    pub(crate) fn weight(&self) -> u32 {
        self.0.weight
    }
}

/// The request's extended ack: where a refusal's reason goes.
///
/// # Invariants
///
/// `raw` is null or the request's live extended ack, for `'a`.
pub(crate) struct ShaperAck<'a> {
    raw: *mut bindings::netlink_ext_ack,
    _life: PhantomData<&'a mut bindings::netlink_ext_ack>,
}

impl ShaperAck<'_> {
    /// Tells the user why the request is refused (`NL_SET_ERR_MSG`).
    pub(crate) fn refuse(&mut self, msg: &'static CStr) {
        if !self.raw.is_null() {
            // SAFETY: Live extended ack (type invariant); the message is
            // a static string, as the core requires.
            unsafe { (*self.raw)._msg = msg.as_char_ptr() };
        }
    }
}

/// The C-ABI entry points of a [`NetDevOps`] implementation's shapers.
pub(super) struct ShaperAdapter<T>(PhantomData<T>);

impl<T: NetDevOps> ShaperAdapter<T> {
    pub(super) const OPS: bindings::net_shaper_ops = bindings::net_shaper_ops {
        group: Some(Self::group),
        set: Some(Self::set),
        delete: Some(Self::delete),
        capabilities: Some(Self::capabilities),
    };

    /// # Safety
    ///
    /// `binding` is the core's live binding of a net device registered
    /// for `T` (the only kind: the ops are reached through the device's
    /// `netdev_ops`), alive for `'a`; `extack` is null or live for `'a`.
    unsafe fn parts<'a>(
        binding: *mut bindings::net_shaper_binding,
        extack: *mut bindings::netlink_ext_ack,
    ) -> (&'a NetDev<T>, &'a DevLocked, ShaperAck<'a>) {
        // SAFETY: Per the function's contract; the core calls the ops
        // with the device's instance lock held (net/shaper/shaper.c).
        unsafe {
            (
                NetDev::from_raw((*binding).__bindgen_anon_1.netdev),
                DevLocked::assume_held(),
                ShaperAck {
                    raw: extack,
                    _life: PhantomData,
                },
            )
        }
    }

    /// # Safety
    ///
    /// As `parts`; `shaper` is live for the call.
    unsafe extern "C" fn set(
        binding: *mut bindings::net_shaper_binding,
        shaper: *const bindings::net_shaper,
        extack: *mut bindings::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: Per the function's contract.
        let (dev, locked, mut ack) = unsafe { Self::parts(binding, extack) };
        // SAFETY: Live for the call; `Shaper` is `repr(transparent)` over
        // `net_shaper`.
        let shaper = unsafe { &*shaper.cast::<Shaper>() };
        from_result(|| T::shaper_set(dev, locked, shaper, &mut ack).map(|()| 0))
    }

    /// # Safety
    ///
    /// As `parts`; `handle` is live for the call.
    unsafe extern "C" fn delete(
        binding: *mut bindings::net_shaper_binding,
        handle: *const bindings::net_shaper_handle,
        extack: *mut bindings::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: Per the function's contract.
        let (dev, locked, mut ack) = unsafe { Self::parts(binding, extack) };
        // SAFETY: Live for the call.
        let handle = Handle::from_raw(unsafe { &*handle });
        from_result(|| T::shaper_delete(dev, locked, handle, &mut ack).map(|()| 0))
    }

    /// # Safety
    ///
    /// As `parts`; `leaves` holds `count` shapers and `node` is one, all
    /// live for the call.
    unsafe extern "C" fn group(
        binding: *mut bindings::net_shaper_binding,
        count: c_int,
        leaves: *const bindings::net_shaper,
        node: *const bindings::net_shaper,
        extack: *mut bindings::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: Per the function's contract.
        let (dev, locked, mut ack) = unsafe { Self::parts(binding, extack) };
        // CAST: a count of leaves, not negative after `max(0)`.
        let count = count.max(0) as usize;
        let leaves = if count == 0 {
            &[][..]
        } else {
            // SAFETY: `count` shapers at `leaves`, live for the call;
            // `Shaper` is `repr(transparent)` over `net_shaper`.
            unsafe { core::slice::from_raw_parts(leaves.cast::<Shaper>(), count) }
        };
        // SAFETY: Live for the call; as above.
        let node = unsafe { &*node.cast::<Shaper>() };
        from_result(|| T::shaper_group(dev, locked, leaves, node, &mut ack).map(|()| 0))
    }

    /// # Safety
    ///
    /// As `parts`; `cap` is valid for writes.
    unsafe extern "C" fn capabilities(
        binding: *mut bindings::net_shaper_binding,
        scope: bindings::net_shaper_scope,
        cap: *mut c_ulong,
    ) {
        // SAFETY: Per the function's contract (no extended ack here).
        let (dev, _, _) = unsafe { Self::parts(binding, core::ptr::null_mut()) };
        let scope = match scope {
            bindings::net_shaper_scope_NET_SHAPER_SCOPE_NETDEV => Some(Scope::Netdev),
            bindings::net_shaper_scope_NET_SHAPER_SCOPE_QUEUE => Some(Scope::Queue),
            bindings::net_shaper_scope_NET_SHAPER_SCOPE_NODE => Some(Scope::Node),
            _ => None,
        };
        let caps = scope.map_or(0, |s| u64::from(T::shaper_caps(dev, s)));
        // SAFETY: Valid for writes. CAST: the capability bits are below 32.
        unsafe { *cap = caps as c_ulong };
    }
}
