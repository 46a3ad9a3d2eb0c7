// SPDX-License-Identifier: GPL-2.0

//! Keyed hashing for tables whose keys an outsider chooses (`siphash`).
//!
//! A table keyed by what arrives from the network must not let a sender
//! pick keys that collide; SipHash under a random secret is the kernel's
//! answer (`include/linux/siphash.h`), as it is here.

use super::bindings;

/// A secret SipHash key.
pub(crate) struct SipKey([u64; 2]);

impl SipKey {
    /// A key drawn from the kernel's random pool (`get_random_u64`).
    pub(crate) fn random() -> Self {
        // SAFETY: `get_random_u64` has no preconditions and may be called
        // in any context.
        let key = unsafe { [bindings::get_random_u64(), bindings::get_random_u64()] };
        Self(key)
    }

    /// SipHash-2-4 of `data` under this key.
    pub(crate) fn hash(&self, data: &[u8]) -> u64 {
        // SAFETY: `data` is valid for reads of its length; the helper
        // reads nothing else and keeps no pointer.
        unsafe {
            bindings::rust_ext_siphash(data.as_ptr().cast(), data.len(), self.0[0], self.0[1])
        }
    }
}
