// SPDX-License-Identifier: GPL-2.0

//! The driver-private part of a user verb (`struct ib_udata`): the bytes a
//! provider library sends after the common request and reads after the
//! common response, under ib_core's compatibility rules (a shorter
//! response is zero-padded, a longer one truncated; a request the driver
//! defines no struct for must be empty or zero).

use core::{marker::PhantomData, ptr::NonNull};

use kernel::{
    error::to_result,
    prelude::*,
    transmute::{AsBytes, FromBytes},
};

use crate::linux::bindings;
use crate::linux::rdma::{
    device::IbDeviceOps,
    mmap::{MapTarget, UserMapping},
    verbs::IbObject,
};

/// The driver data of one user verb call, valid for the call.
///
/// # Invariants
///
/// `raw` is the udata of the running call and `uctx` the live user
/// context of its process.
pub(crate) struct UserData<'a> {
    raw: NonNull<bindings::ib_udata>,
    uctx: *mut bindings::ib_ucontext,
    _call: PhantomData<&'a mut bindings::ib_udata>,
}

impl UserData<'_> {
    /// The driver data of a call from user space, `None` for a kernel
    /// caller (ib_core passes no udata then).
    ///
    /// # Safety
    ///
    /// `raw` is NULL or the `ib_udata` of the running verb call (one that
    /// carries a user context: every verb but `alloc_ucontext`), valid
    /// until the returned value is dropped.
    pub(super) unsafe fn from_raw(raw: *mut bindings::ib_udata) -> Option<Self> {
        NonNull::new(raw).map(|raw| Self {
            raw,
            // SAFETY: A user call's udata sits in its attribute bundle,
            // which names the process's context.
            uctx: unsafe { bindings::rust_ext_udata_ucontext(raw.as_ptr()) },
            _call: PhantomData,
        })
    }

    /// The driver data of `alloc_ucontext`, whose context `uctx` is being
    /// created.
    ///
    /// # Safety
    ///
    /// `raw` is the udata of that call and `uctx` the context, both valid
    /// until the returned value is dropped.
    pub(super) unsafe fn for_new_context(
        raw: *mut bindings::ib_udata,
        uctx: *mut bindings::ib_ucontext,
    ) -> Option<Self> {
        NonNull::new(raw).map(|raw| Self {
            raw,
            uctx,
            _call: PhantomData,
        })
    }

    /// The driver state of the calling process's context.
    ///
    /// # Safety
    ///
    /// Not during `alloc_ucontext` (the state is not initialised yet);
    /// `T` is the device's driver.
    pub(super) unsafe fn context<'b, T: IbDeviceOps>(&self) -> &'b T::Ucontext {
        // SAFETY: A live context of a `T` device whose state
        // `alloc_ucontext` initialised (caller's promise).
        unsafe { IbObject::<bindings::ib_ucontext, T::Ucontext>::data(self.uctx) }
    }

    /// Offers `target` to the calling process: the returned mapping's
    /// offset is what it passes to `mmap()`.
    pub(crate) fn map(&self, target: MapTarget) -> Result<UserMapping> {
        // SAFETY: The live context of the calling process (invariant).
        unsafe { UserMapping::insert(self.uctx, target) }
    }

    /// Fails with `EOPNOTSUPP` unless the provider sent no driver request
    /// (or only zeros): for verbs whose request the driver defines none.
    pub(crate) fn expect_no_request(&self) -> Result {
        // SAFETY: The udata of the running call (type invariant).
        if unsafe { self.raw.as_ref() }.inlen == 0 {
            return Ok(());
        }
        // SAFETY: As above; a NULL request of size 0 asks only that every
        // byte the provider sent be zero.
        to_result(unsafe {
            bindings::_ib_copy_validate_udata_in(self.raw.as_ptr(), core::ptr::null_mut(), 0, 0)
        })
    }

    /// The provider's request, which must hold at least the whole `R`
    /// (`EINVAL`); bytes past it must be zero (`EOPNOTSUPP`).
    pub(crate) fn request<R: FromBytes + AsBytes + Default>(&self) -> Result<R> {
        let mut req = R::default();
        let len = core::mem::size_of::<R>();
        // SAFETY: The udata of the running call; `req` is writable for
        // `len` bytes, and any bytes are a valid `R` (`FromBytes`).
        to_result(unsafe {
            bindings::_ib_copy_validate_udata_in(self.raw.as_ptr(), (&raw mut req).cast(), len, len)
        })?;
        Ok(req)
    }

    /// Writes the driver's response: truncated to what the provider reads,
    /// zero-padded if it reads more.
    pub(crate) fn respond<R: AsBytes>(&mut self, resp: &R) -> Result {
        let bytes = resp.as_bytes();
        // SAFETY: The udata of the running call; `bytes` is readable for
        // its length.
        to_result(unsafe {
            bindings::_ib_respond_udata(self.raw.as_ptr(), bytes.as_ptr().cast(), bytes.len())
        })
    }

    /// Zero-fills the response: for verbs the driver answers nothing.
    pub(super) fn respond_empty(&mut self) -> Result {
        // SAFETY: The udata of the running call; a zero-length source is
        // never read.
        to_result(unsafe { bindings::_ib_respond_udata(self.raw.as_ptr(), core::ptr::null(), 0) })
    }
}

/// A verb call from a process: the driver state of its context and the
/// call's driver data.
pub(crate) struct UserCall<'a, T: IbDeviceOps> {
    /// The calling process's context.
    pub(crate) context: &'a T::Ucontext,
    /// The call's driver request and response.
    pub(crate) udata: UserData<'a>,
}

impl<'a, T: IbDeviceOps> UserCall<'a, T> {
    /// The call's driver data with its context; `None` for a kernel
    /// caller.
    ///
    /// # Safety
    ///
    /// As [`UserData::from_raw`], for a device of `T`.
    pub(super) unsafe fn from_raw(raw: *mut bindings::ib_udata) -> Option<Self> {
        // SAFETY: As the function's contract says.
        let udata = unsafe { UserData::from_raw(raw) }?;
        // SAFETY: Not `alloc_ucontext` (the contract of `from_raw`).
        let context = unsafe { udata.context::<T>() };
        Some(Self { context, udata })
    }
}
