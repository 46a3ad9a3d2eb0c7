// SPDX-License-Identifier: GPL-2.0

//! devlink ports: what `devlink port` lists, and what ties a net device to
//! its devlink instance (`ip -d link` then shows the port's name).

use kernel::{error::to_result, prelude::*, types::Opaque};

use super::DevlinkRef;
use crate::linux::bindings;

/// What a port is (`devlink port` "flavour").
#[derive(Clone, Copy)]
pub(crate) enum PortFlavour {
    /// A port to the outside, numbered.
    Physical(u32),
    /// A port of a virtual function's own instance, with no physical
    /// counterpart on this host.
    Virtual,
}

/// A registered devlink port; unregistered on drop, before its instance.
pub(crate) struct Port {
    // Boxed: the core links the struct into its lists, so it must not move.
    raw: KBox<Opaque<bindings::devlink_port>>,
    _devlink: DevlinkRef,
}

// SAFETY: The port may be used and unregistered from any thread.
unsafe impl Send for Port {}
// SAFETY: As above; `&Port` only hands out the raw pointer to the layer.
unsafe impl Sync for Port {}

impl Port {
    /// Registers port `index` of `flavour` on `devlink`.
    pub(crate) fn new(devlink: DevlinkRef, index: u32, flavour: PortFlavour) -> Result<Self> {
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
        };
        // SAFETY: `port` is zeroed, not registered yet, and stays where it
        // is; the instance is registered (we hold a reference to it).
        to_result(unsafe {
            bindings::rust_ext_devlink_port_attrs_set(port, flavour, number);
            bindings::devlink_port_register_with_ops(
                devlink.as_raw(),
                port,
                index,
                core::ptr::null(),
            )
        })?;
        Ok(Self {
            raw,
            _devlink: devlink,
        })
    }

    /// The C port, for a net device that belongs to it.
    pub(in crate::linux) fn as_raw(&self) -> *mut bindings::devlink_port {
        self.raw.get()
    }
}

impl Drop for Port {
    fn drop(&mut self) {
        // SAFETY: Registered in `new`; a net device linked to it was
        // unregistered first (the net device's registration owns the port).
        unsafe { bindings::devlink_port_unregister(self.raw.get()) };
    }
}
