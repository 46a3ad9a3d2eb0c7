// SPDX-License-Identifier: GPL-2.0

//! Device memory (`ibv_alloc_dm`, `alloc_dm`): memory on the device a
//! process maps and reaches with loads and stores, and registers as a
//! memory region (`reg_dm_mr`) for RDMA.
//!
//! ib_core's `DM_ALLOC` method carries no driver response, so the
//! process cannot be told where to map an allocation; it can compute it:
//! the driver maps each allocation at a page offset derived from the
//! object's handle, which the provider learns from the same call
//! ([`DmRequest::map_at`]).

use core::marker::PhantomData;

use kernel::prelude::*;

use super::mmap::{MapTarget, UserMapping};
use crate::linux::bindings;

/// An `alloc_dm` call of a process.
///
/// # Invariants
///
/// `uctx` is the calling process's live context, for `'a`.
pub(crate) struct DmRequest<'a> {
    uctx: *mut bindings::ib_ucontext,
    /// Bytes asked for.
    pub(crate) len: u64,
    /// log2 of the alignment asked for, in bytes.
    pub(crate) log_align: u32,
    /// The object's handle in the calling process (its `ibv_dm`'s
    /// `handle`).
    pub(crate) handle: u32,
    _call: PhantomData<&'a ()>,
}

impl DmRequest<'_> {
    /// # Safety
    ///
    /// `uctx` is the calling process's live context and `attrs` the
    /// running `DM_ALLOC` call's attributes, both for the request's life.
    pub(super) unsafe fn new(
        uctx: *mut bindings::ib_ucontext,
        attr: &bindings::ib_dm_alloc_attr,
        attrs: *mut bindings::uverbs_attr_bundle,
    ) -> Result<Self> {
        // SAFETY: The call's attributes (the caller's promise); the
        // handle attribute is mandatory, its object allocated (and
        // numbered) before the method's handler runs.
        let handle = unsafe { bindings::rust_ext_dm_alloc_handle(attrs) };
        Ok(Self {
            uctx,
            len: attr.length,
            log_align: attr.alignment,
            handle: u32::try_from(handle).map_err(|_| EINVAL)?,
            _call: PhantomData,
        })
    }

    /// Lets the process map `target` at page offset `pgoff` (one it
    /// computes from [`Self::handle`]).
    pub(crate) fn map_at(&self, pgoff: u32, target: MapTarget) -> Result<UserMapping> {
        // SAFETY: The live context of the calling process (invariant).
        unsafe { UserMapping::insert_at(self.uctx, target, pgoff) }
    }
}
