// SPDX-License-Identifier: GPL-2.0

//! The module's debugfs root, `/sys/kernel/debug/<name>/`.
//!
//! Devices create their directories under it from `probe`, which has no
//! access to the module object, so the root lives in a global slot that
//! the module fills at load and empties at unload ([`DebugfsRoot`]).

use kernel::{debugfs::Dir, prelude::*};

kernel::sync::global_lock! {
    // SAFETY: `DebugfsRoot::new` initialises it before anything else uses it,
    // once per module load.
    unsafe(uninit) static ROOT: Mutex<Option<Dir>> = None;
}

/// Owns the module's debugfs root for the lifetime of the module.
pub(crate) struct DebugfsRoot(());

impl DebugfsRoot {
    /// Creates the root directory. Call once, from module init, before the
    /// driver registers.
    pub(crate) fn new(name: &'static CStr) -> Self {
        // SAFETY: Called once per module load from the module initialiser,
        // before any device can probe and touch `ROOT`.
        unsafe { ROOT.init() };
        *ROOT.lock() = Some(Dir::new(name));
        Self(())
    }
}

impl Drop for DebugfsRoot {
    fn drop(&mut self) {
        ROOT.lock().take();
    }
}

/// Creates directory `name` under the module's root.
pub(crate) fn subdir(name: &CStr) -> Result<Dir> {
    ROOT.lock()
        .as_ref()
        .map(|root| root.subdir(name))
        .ok_or(ENODEV)
}
