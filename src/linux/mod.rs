// SPDX-License-Identifier: GPL-2.0

//! The abstraction layer: safe Rust interfaces to the kernel C APIs the
//! upstream `kernel` crate does not cover yet, laid out as they would be
//! in `rust/kernel/` (`net` for `kernel::net`, `rdma` for an RDMA
//! counterpart, and small additions to DMA, IRQ, locking and debugfs).
//!
//! The rules that make this a layer:
//! - all of the module's `unsafe` code lives here, each block with a
//!   `// SAFETY:` comment; the driver modules are compiled with
//!   `#[deny(unsafe_code)]`;
//! - the generated bindings and the C helpers ([`bindings`]) are private
//!   to it;
//! - it knows no driver: no driver name, hardware size or module object
//!   appears here; drivers pass them in through traits' associated
//!   constants, generic parameters and arguments. The exception is
//!   [`uapi`], the driver's user-verbs ABI header as bindgen generates
//!   it, bound here for the reason the kernel binds its own uapi headers.

mod bindings;

pub(crate) mod alloc;
pub(crate) mod debugfs;
pub(crate) mod device;
pub(crate) mod devlink;
pub(crate) mod dma;
pub(crate) mod hash;
pub(crate) mod irq;
pub(crate) mod net;
pub(crate) mod ptp;
pub(crate) mod rdma;
pub(crate) mod sync;
pub(crate) mod uapi;
pub(crate) mod work;

/// `-EOPNOTSUPP` ("operation not supported") as C callbacks return it;
/// the `kernel` crate's error codes do not include it.
pub(crate) const EOPNOTSUPP_ERRNO: kernel::ffi::c_int =
    -(kernel::bindings::EOPNOTSUPP as kernel::ffi::c_int);

/// `EOPNOTSUPP` as an [`Error`](kernel::error::Error).
pub(crate) fn eopnotsupp() -> kernel::error::Error {
    kernel::error::Error::from_errno(EOPNOTSUPP_ERRNO)
}

/// `ENETDOWN` ("network is down") as an [`Error`](kernel::error::Error);
/// the `kernel` crate's error codes do not include it either.
pub(crate) fn enetdown() -> kernel::error::Error {
    // CAST: a small errno constant.
    kernel::error::Error::from_errno(-(kernel::bindings::ENETDOWN as kernel::ffi::c_int))
}
