// SPDX-License-Identifier: GPL-2.0

//! The driver-private part of a user verb (`struct ib_udata`): the bytes a
//! provider library sends after the common request and reads after the
//! common response, under ib_core's compatibility rules (a shorter
//! response is zero-padded, a longer one truncated; a request the driver
//! defines no struct for must be empty or zero).

use core::{marker::PhantomData, ptr::NonNull};

use kernel::{error::to_result, prelude::*, transmute::AsBytes};

use crate::linux::bindings;

/// The driver data of one user verb call, valid for the call.
pub(crate) struct UserData<'a> {
    raw: NonNull<bindings::ib_udata>,
    _call: PhantomData<&'a mut bindings::ib_udata>,
}

impl UserData<'_> {
    /// The driver data of a call from user space, `None` for a kernel
    /// caller (ib_core passes no udata then).
    ///
    /// # Safety
    ///
    /// `raw` is NULL or the `ib_udata` of the running verb call, valid
    /// until the returned value is dropped.
    pub(super) unsafe fn from_raw(raw: *mut bindings::ib_udata) -> Option<Self> {
        NonNull::new(raw).map(|raw| Self {
            raw,
            _call: PhantomData,
        })
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
