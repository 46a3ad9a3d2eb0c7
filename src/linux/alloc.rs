// SPDX-License-Identifier: GPL-2.0

//! What the kernel's `KVec` lacks: a push that gives the value back when
//! there is no memory for it (`KVec::push` drops it, which for memory a
//! device may still use is not an option).

use kernel::{alloc::kvec::PushError, prelude::*};

/// Appends `value` to `v`, allocating if need be; without memory, returns
/// `value` to the caller.
pub(crate) fn push_or_return<T>(v: &mut KVec<T>, value: T) -> Result<(), T> {
    if v.reserve(1, GFP_KERNEL).is_err() {
        return Err(value);
    }
    v.push_within_capacity(value)
        .map_err(|PushError(value)| value)
}
