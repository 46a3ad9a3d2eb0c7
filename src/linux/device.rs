// SPDX-License-Identifier: GPL-2.0

//! Additions to `kernel::device`: asking the driver core to unbind a
//! device, or bind it afresh.

use kernel::{device::Device, error::to_result, prelude::*};

/// Unbinds `dev`'s driver, if any, and probes for a driver again
/// (`device_reprobe()`): a device whose hardware lost its state is set up
/// from scratch. A device already deleted from the driver core is left
/// alone. Sleeps; must not be called from `dev`'s own driver callbacks
/// (they run under the device lock this takes).
pub(crate) fn reprobe(dev: &Device) -> Result {
    // `Device` is `repr(transparent)` over `struct device`, so the cast
    // pointer is the device's `struct device`.
    let raw: *const Device = dev;
    // SAFETY: `raw` is a valid, reference-counted `struct device` for the
    // whole call (the caller's reference keeps it alive), and the caller
    // is in process context without `dev`'s lock, as `device_reprobe()`
    // requires.
    to_result(unsafe { kernel::bindings::device_reprobe(raw.cast_mut().cast()) })
}

/// Unbinds `dev`'s driver, if any (`device_release_driver()`), waiting
/// for a probe in progress. Sleeps; must not be called from `dev`'s own
/// driver callbacks or with `dev`'s lock held (it takes it).
pub(crate) fn release_driver(dev: &Device) {
    let raw: *const Device = dev;
    // SAFETY: As in `reprobe`: a valid `struct device` for the call, in
    // process context without its lock.
    unsafe { kernel::bindings::device_release_driver(raw.cast_mut().cast()) };
}

/// Probes for a driver of `dev` if it has none (`device_attach()`).
/// Returns whether one bound. Same context rules as [`release_driver`].
pub(crate) fn attach(dev: &Device) -> Result<bool> {
    let raw: *const Device = dev;
    // SAFETY: As in `reprobe`.
    let ret = unsafe { kernel::bindings::device_attach(raw.cast_mut().cast()) };
    to_result(ret)?;
    Ok(ret > 0)
}
