// SPDX-License-Identifier: GPL-2.0

//! Routes and next hops, for a tunnel's outer headers.

use kernel::{error::to_result, prelude::*};

use super::any_netdev::AnyNetDev;
use crate::linux::bindings;

/// Where the packets of an IPv4 tunnel leave and whom they go to.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TunnelRoute {
    /// The outer source address (the one asked, or the route's).
    pub(crate) src: [u8; 4],
    /// The device the route leaves by.
    pub(crate) ifindex: i32,
    /// Its MAC.
    pub(crate) smac: [u8; 6],
    /// The next hop's MAC.
    pub(crate) dmac: [u8; 6],
}

/// The route towards `dst` (network order) from `src` (0: the route's
/// own source), in `dev`'s namespace. `EAGAIN` if the next hop is not
/// resolved yet (the kernel is then asked to resolve it), `ENOENT` if
/// it has no neighbour entry, or the routing error.
pub(crate) fn tunnel_route4(dev: &AnyNetDev, dst: [u8; 4], src: [u8; 4]) -> Result<TunnelRoute> {
    let mut route = TunnelRoute {
        src,
        ifindex: 0,
        smac: [0; 6],
        dmac: [0; 6],
    };
    let mut saddr = u32::from_ne_bytes(src);
    // SAFETY: `dev` is live; the out-pointers are valid for their writes
    // (an `int`, 6 bytes each).
    to_result(unsafe {
        bindings::rust_ext_tunnel_route4(
            dev.as_raw(),
            u32::from_ne_bytes(dst),
            &mut saddr,
            &mut route.ifindex,
            route.smac.as_mut_ptr(),
            route.dmac.as_mut_ptr(),
        )
    })?;
    route.src = saddr.to_ne_bytes();
    Ok(route)
}
