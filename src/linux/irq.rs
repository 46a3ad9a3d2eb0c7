// SPDX-License-Identifier: GPL-2.0

//! MSI-X vectors with one handler each.
//!
//! Upstream's `pci::Device::alloc_irq_vectors` hands out only the first and
//! last vector of an allocation; a NIC needs every one of them. This module
//! allocates the vectors through upstream (so devres frees them at unbind)
//! and adds per-index IRQ lookup and handler registration.

use core::marker::PhantomPinned;

use kernel::{
    bindings,
    device::Bound,
    error::to_result,
    ffi::{c_int, c_void},
    pci,
    prelude::*,
};

/// The MSI-X vectors of a bound PCI device.
///
/// The vectors are released by devres when the device unbinds, after the
/// driver's data (and so every [`IrqHandlerRegistration`]) has been dropped.
pub(crate) struct MsixVectors<'a> {
    pdev: &'a pci::Device<Bound>,
    count: u32,
}

impl<'a> MsixVectors<'a> {
    /// Allocates exactly `count` MSI-X vectors for `pdev`.
    pub(crate) fn alloc(pdev: &'a pci::Device<Bound>, count: u32) -> Result<Self> {
        let types = pci::IrqTypes::default().with(pci::IrqType::MsiX);
        pdev.alloc_irq_vectors(count, count, types)?;
        Ok(Self { pdev, count })
    }

    /// The `count` vectors [`MsixVectors::alloc`] allocated for `pdev`
    /// earlier in this binding, for building the driver's state again.
    /// Asking for a vector that was not allocated fails in [`Self::irq`].
    pub(crate) fn allocated(pdev: &'a pci::Device<Bound>, count: u32) -> Self {
        Self { pdev, count }
    }

    /// Number of vectors allocated.
    pub(crate) fn count(&self) -> u32 {
        self.count
    }

    /// Linux IRQ number of vector `index`.
    pub(crate) fn irq(&self, index: u32) -> Result<u32> {
        if index >= self.count {
            return Err(EINVAL);
        }
        let pdev: *const pci::Device<Bound> = self.pdev;
        // SAFETY: `pci::Device` is `#[repr(transparent)]` over
        // `Opaque<bindings::pci_dev>`, so a pointer to it is a pointer to the
        // device's `struct pci_dev`, valid while `self.pdev` is borrowed.
        // `index < count`, the number of vectors allocated for it above.
        let irq = unsafe { bindings::pci_irq_vector(pdev.cast_mut().cast(), index) };
        u32::try_from(irq).map_err(|_| Error::from_errno(irq))
    }
}

/// An interrupt handler.
pub(crate) trait IrqHandler: Sync {
    /// Called in hard-IRQ context when the interrupt fires. Returns whether
    /// the interrupt was for this handler.
    fn handle(&self) -> bool;
}

/// A handler registered on one IRQ line; unregistered on drop.
///
/// # Invariants
///
/// `request_irq` succeeded for `irq` with a cookie pointing at `self.handler`,
/// which stays pinned until `drop` has called `free_irq`.
#[pin_data(PinnedDrop)]
pub(crate) struct IrqHandlerRegistration<T: IrqHandler> {
    irq: u32,
    #[pin]
    handler: T,
    #[pin]
    _pin: PhantomPinned,
}

impl<T: IrqHandler> IrqHandlerRegistration<T> {
    /// Registers `handler` on `irq`, named `name` in /proc/interrupts.
    pub(crate) fn new(
        irq: u32,
        name: &'static CStr,
        handler: impl PinInit<T, Error>,
    ) -> impl PinInit<Self, Error> {
        try_pin_init!(&this in Self {
            irq,
            handler <- handler,
            _pin: PhantomPinned,
            _: {
                // SAFETY: `this` points at the pinned, fully initialised
                // `Self` except `_pin` (a ZST). The handler field stays valid
                // and pinned until `PinnedDrop` frees the IRQ, so the
                // callback may run as soon as `request_irq` returns. `name`
                // is 'static.
                to_result(unsafe {
                    bindings::request_irq(
                        *irq,
                        Some(handle_irq::<T>),
                        0,
                        name.as_char_ptr(),
                        (&raw const (*this.as_ptr()).handler).cast_mut().cast(),
                    )
                })?;
            },
        })
    }

    /// The registered handler.
    pub(crate) fn handler(&self) -> &T {
        &self.handler
    }
}

#[pinned_drop]
impl<T: IrqHandler> PinnedDrop for IrqHandlerRegistration<T> {
    fn drop(self: Pin<&mut Self>) {
        let cookie: *const T = &self.handler;
        // SAFETY: By the type invariant the IRQ was requested with this cookie
        // and has not been freed. `free_irq` waits for running handlers, so
        // none touches `handler` after this returns.
        unsafe { bindings::free_irq(self.irq, cookie.cast_mut().cast()) };
    }
}

/// The C-ABI trampoline `request_irq` calls.
///
/// # Safety
///
/// `cookie` must be the handler pointer registered by
/// [`IrqHandlerRegistration::new`].
unsafe extern "C" fn handle_irq<T: IrqHandler>(
    _irq: c_int,
    cookie: *mut c_void,
) -> bindings::irqreturn_t {
    // SAFETY: By the function's safety requirement `cookie` points at a live,
    // pinned `T` (the registration frees the IRQ before dropping it).
    let handler = unsafe { &*cookie.cast::<T>() };
    if handler.handle() {
        bindings::irqreturn_IRQ_HANDLED
    } else {
        bindings::irqreturn_IRQ_NONE
    }
}
