// SPDX-License-Identifier: GPL-2.0

//! devlink ports: what `devlink port` lists, and what ties a net device to
//! its devlink instance (`ip -d link` then shows the port's name).

use kernel::{
    error::to_result,
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc, UniqueArc,
    },
    types::Opaque,
};

use super::{DevlinkRef, Locked};
use crate::linux::bindings;

/// What a port is (`devlink port` "flavour").
#[derive(Clone, Copy)]
pub(crate) enum PortFlavour {
    /// A port to the outside, numbered.
    Physical(u32),
    /// A port of a virtual function's own instance, with no physical
    /// counterpart on this host.
    Virtual,
    /// The switch's port to virtual function `n` of PF 0, whose
    /// representor is the net device (`pf0vf<n>`).
    PciVf(u16),
}

/// The identity of a switch its ports share (`phys_switch_id`).
pub(crate) type SwitchId = [u8; 8];

/// A devlink port, registered by [`Port::new`] and unregistered by
/// [`Port::unregister`] under the instance lock (a driver's reload, which
/// the core requires to leave no port), or else by the drop of the last
/// reference, which takes that lock (so that drop never happens where the
/// lock is held). A net device that belongs to the port holds a reference
/// and marks it linked while registered: a linked port is not
/// unregistered.
pub(crate) struct Port {
    // Boxed: the core links the struct into its lists, so it must not move.
    raw: KBox<Opaque<bindings::devlink_port>>,
    registered: Atomic<bool>,
    linked: Atomic<bool>,
    _devlink: DevlinkRef,
}

// SAFETY: The port may be used and unregistered from any thread.
unsafe impl Send for Port {}
// SAFETY: As above; `&Port` only hands out the raw pointer to the layer.
unsafe impl Sync for Port {}

impl Port {
    /// Registers port `index` of `flavour` on `devlink`, whose lock the
    /// caller holds (`locked`), as `devl_port_register_with_ops` wants.
    /// `EINVAL` if `locked` is another instance's lock. Shared: a net
    /// device that belongs to the port holds a reference (see
    /// [`crate::linux::net::netdev::Setup`]). Nothing registered is
    /// dropped on the way out, so no error path takes the lock again.
    pub(crate) fn new(
        devlink: DevlinkRef,
        locked: &Locked<'_>,
        index: u32,
        flavour: PortFlavour,
        switch_id: Option<&SwitchId>,
    ) -> Result<Arc<Self>> {
        devlink.check(locked)?;
        // Allocated first: once registered, nothing may fail.
        let slot = UniqueArc::new_uninit(GFP_KERNEL)?;
        // The core wants the struct zeroed before registration.
        let raw = KBox::new(Opaque::<bindings::devlink_port>::zeroed(), GFP_KERNEL)?;
        let port = raw.get();
        let (flavour, number) = match flavour {
            PortFlavour::Physical(n) => (
                bindings::devlink_port_flavour_DEVLINK_PORT_FLAVOUR_PHYSICAL,
                n,
            ),
            PortFlavour::Virtual => (
                bindings::devlink_port_flavour_DEVLINK_PORT_FLAVOUR_VIRTUAL,
                0,
            ),
            PortFlavour::PciVf(n) => (
                bindings::devlink_port_flavour_DEVLINK_PORT_FLAVOUR_PCI_VF,
                u32::from(n),
            ),
        };
        let switch_id = switch_id.map_or(core::ptr::null(), |id| id.as_ptr());
        // SAFETY: `port` is zeroed, not registered yet, and stays where it
        // is; the instance is registered (we hold a reference to it) and
        // this thread holds its lock (`locked`, checked to be its);
        // `switch_id` is null or 8 bytes, copied.
        to_result(unsafe {
            bindings::rust_ext_devlink_port_attrs_set(port, flavour, number, switch_id);
            bindings::devl_port_register_with_ops(devlink.as_raw(), port, index, core::ptr::null())
        })?;
        Ok(slot
            .write(Self {
                raw,
                registered: Atomic::new(true),
                linked: Atomic::new(false),
                _devlink: devlink,
            })
            .into())
    }

    /// Unregisters the port under the instance lock the caller holds
    /// (`locked`), as `devl_port_unregister` wants; nothing if it was
    /// unregistered already. `EBUSY` while a registered net device
    /// belongs to it, `EINVAL` if `locked` is another instance's lock.
    pub(crate) fn unregister(&self, locked: &Locked<'_>) -> Result {
        self._devlink.check(locked)?;
        if self.linked.load(Relaxed) {
            return Err(EBUSY);
        }
        if self.registered.xchg(false, Relaxed) {
            // SAFETY: Registered in `new`, once (the flag); no net device
            // is linked to it; this thread holds the instance lock
            // (`locked`, checked to be its).
            unsafe { bindings::devl_port_unregister(self.raw.get()) };
        }
        Ok(())
    }

    /// Links a net device being set up to the port, until the returned
    /// value is dropped (after the device is unregistered). `EBUSY` if a
    /// device is linked already, `ENODEV` if the port is unregistered.
    pub(in crate::linux) fn link(self: &Arc<Self>) -> Result<PortLink> {
        if !self.registered.load(Relaxed) {
            return Err(ENODEV);
        }
        if self.linked.xchg(true, Relaxed) {
            return Err(EBUSY);
        }
        Ok(PortLink(self.clone()))
    }
}

/// A net device's hold on the port it belongs to (see [`Port::link`]).
pub(in crate::linux) struct PortLink(Arc<Port>);

impl PortLink {
    /// The C port, for the net device.
    pub(in crate::linux) fn as_raw(&self) -> *mut bindings::devlink_port {
        self.0.raw.get()
    }
}

impl Drop for PortLink {
    fn drop(&mut self) {
        self.0.linked.store(false, Relaxed);
    }
}

impl Drop for Port {
    fn drop(&mut self) {
        if self.registered.load(Relaxed) {
            // SAFETY: Registered in `new` and not unregistered since (the
            // flag); no net device is linked to it (a link holds a
            // reference). Takes the instance lock.
            unsafe { bindings::devlink_port_unregister(self.raw.get()) };
        }
    }
}
