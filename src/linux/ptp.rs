// SPDX-License-Identifier: GPL-2.0

//! PTP hardware clocks (`struct ptp_clock_info`, `/dev/ptpN`): a device's
//! clock that `phc_ctl`, `phc2sys` and `ptp4l` read and steer. A driver
//! implements [`PtpClockOps`] and registers it with [`PtpClock::new`]; the
//! clock is unregistered when the [`PtpClock`] is dropped. The PTP core
//! calls the operations in process context, one at a time per clock (its
//! `clock_adjtime` and `clock_gettime` paths take no driver lock: an
//! implementation serialises what must be).

use core::marker::PhantomData;

use kernel::{
    device::Device,
    error::{from_err_ptr, from_result},
    ffi::{c_char, c_int, c_long},
    prelude::*,
    types::Opaque,
    ThisModule,
};

use super::bindings;

/// Nanoseconds a second.
const NSEC_PER_SEC: i64 = 1_000_000_000;

/// The system clock read just before and just after the device's clock
/// (`struct ptp_system_timestamp`), for `PTP_SYS_OFFSET_EXTENDED`: the
/// user learns how closely the device's reading is bracketed.
pub(crate) struct SystemStamps<'a> {
    raw: *mut bindings::ptp_system_timestamp,
    _life: PhantomData<&'a mut bindings::ptp_system_timestamp>,
}

impl SystemStamps<'_> {
    /// Runs `read` (one read of the device's clock, the latching one)
    /// between the two system clock readings.
    pub(crate) fn bracket<R>(&mut self, read: impl FnOnce() -> R) -> R {
        // SAFETY: `raw` is null or the core's live timestamp pair, as the
        // helper expects.
        unsafe { bindings::rust_ext_ptp_read_system_prets(self.raw) };
        let r = read();
        // SAFETY: As above.
        unsafe { bindings::rust_ext_ptp_read_system_postts(self.raw) };
        r
    }
}

/// `CLOCK_REALTIME` now, in nanoseconds: what a device clock is set to
/// when it starts.
pub(crate) fn realtime_ns() -> i64 {
    // SAFETY: Reads the system clock; any context.
    let ns = unsafe { bindings::rust_ext_ktime_get_real_ns() };
    i64::try_from(ns).unwrap_or(i64::MAX)
}

/// A device clock's operations (the mandatory part of
/// `struct ptp_clock_info`). Times are nanoseconds since the epoch of
/// `CLOCK_REALTIME` once set.
pub(crate) trait PtpClockOps: Send + Sync + Sized {
    /// The name `/sys/class/ptp/ptpN/clock_name` shows (at most 31 bytes).
    const NAME: &'static CStr;
    /// Largest frequency offset the clock takes, parts per billion either
    /// way (the core refuses more with `ERANGE`).
    const MAX_ADJ_PPB: i32;

    /// The clock now, read inside `stamps.bracket`.
    fn gettimex(&self, stamps: &mut SystemStamps<'_>) -> Result<i64>;
    /// Sets the clock.
    fn settime(&self, ns: i64) -> Result;
    /// Moves the clock by `delta` nanoseconds.
    fn adjtime(&self, delta: i64) -> Result;
    /// Runs the clock faster or slower by `scaled_ppm` (parts per million
    /// with a 16-bit binary fraction), within [`Self::MAX_ADJ_PPB`].
    fn adjfine(&self, scaled_ppm: i64) -> Result;
}

/// A registered PTP hardware clock whose operations are `T`.
///
/// # Invariants
///
/// `clock` is what `ptp_clock_register` returned for `info`, which stays
/// pinned, with `data` beside it, until `drop` unregistered it.
#[pin_data(PinnedDrop)]
pub(crate) struct PtpClock<T: PtpClockOps> {
    #[pin]
    info: Opaque<bindings::ptp_clock_info>,
    clock: *mut bindings::ptp_clock,
    #[pin]
    data: T,
}

// SAFETY: The core's clock may be unregistered from any thread; `T` is
// `Send + Sync`, and `clock` is only passed to the core.
unsafe impl<T: PtpClockOps> Send for PtpClock<T> {}
// SAFETY: Shared references only read `clock` and use `data` (`Sync`).
unsafe impl<T: PtpClockOps> Sync for PtpClock<T> {}

impl<T: PtpClockOps + 'static> PtpClock<T> {
    /// Registers `data`'s clock under `parent`, owned by `module`.
    pub(crate) fn new<'a>(
        parent: &'a Device,
        module: &'static ThisModule,
        data: impl PinInit<T, Error> + 'a,
    ) -> impl PinInit<Self, Error> + 'a {
        try_pin_init!(&this in Self {
            info <- Opaque::try_ffi_init(|info: *mut bindings::ptp_clock_info| {
                // SAFETY: `info` is valid for writes of a whole
                // `ptp_clock_info`, of which zero is a valid value (no
                // pins, no optional operations).
                unsafe {
                    info.write(core::mem::zeroed());
                    (*info).owner = module.as_ptr().cast();
                    (*info).max_adj = T::MAX_ADJ_PPB;
                    (*info).adjfine = Some(Adapter::<T>::adjfine);
                    (*info).adjtime = Some(Adapter::<T>::adjtime);
                    (*info).gettimex64 = Some(Adapter::<T>::gettimex64);
                    (*info).settime64 = Some(Adapter::<T>::settime64);
                }
                let name = T::NAME.to_bytes();
                // SAFETY: As above; `name` is a field of the info.
                let dst = unsafe { &mut (*info).name };
                // Keeps the last byte zero.
                let room = dst.len() - 1;
                for (d, &s) in dst.iter_mut().take(room).zip(name) {
                    // CAST: a byte of a C string.
                    *d = s as c_char;
                }
                Ok::<(), Error>(())
            }),
            data <- data,
            clock: {
                // SAFETY: `this` is pinned; `info` was initialised above
                // and `data` is too by the time the core calls an
                // operation (registration publishes the clock last).
                let info = unsafe { Opaque::cast_into(&raw const (*this.as_ptr()).info) };
                let parent: *const Device = parent;
                // SAFETY: `info` is pinned until drop unregisters the
                // clock; `parent` is a live device (`Device` is
                // `repr(transparent)` over `struct device`).
                from_err_ptr(unsafe { bindings::ptp_clock_register(info, parent.cast_mut().cast()) })?
            },
        })
    }

    /// The clock's index: `/dev/ptpN`'s N (for `ethtool -T`).
    pub(crate) fn index(&self) -> i32 {
        // SAFETY: `clock` is registered (type invariant).
        unsafe { bindings::ptp_clock_index(self.clock) }
    }
}

#[pinned_drop]
impl<T: PtpClockOps> PinnedDrop for PtpClock<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: `clock` is registered (type invariant); after this the
        // core calls no operation.
        unsafe { bindings::ptp_clock_unregister(self.clock) };
    }
}

/// The C-ABI entry points of a [`PtpClockOps`] implementation.
struct Adapter<T>(PhantomData<T>);

impl<T: PtpClockOps> Adapter<T> {
    /// # Safety
    ///
    /// `info` is the `info` of a live [`PtpClock<T>`] (the core calls the
    /// operations only with the info it registered, before unregister
    /// returns).
    unsafe fn data<'a>(info: *mut bindings::ptp_clock_info) -> &'a T {
        // SAFETY: Per the function's contract, `info` is inside a
        // `PtpClock<T>`; `Opaque` is `repr(transparent)`.
        let clock = unsafe {
            kernel::container_of!(
                info.cast::<Opaque<bindings::ptp_clock_info>>(),
                PtpClock<T>,
                info
            )
        };
        // SAFETY: Live for the call, as above.
        unsafe { &(*clock).data }
    }

    /// # Safety
    ///
    /// As `data`.
    unsafe extern "C" fn adjfine(info: *mut bindings::ptp_clock_info, scaled_ppm: c_long) -> c_int {
        // SAFETY: Per the function's contract.
        let data = unsafe { Self::data(info) };
        // CAST: `long` is 64 bits on the architectures Rust builds for.
        from_result(|| data.adjfine(scaled_ppm as i64).map(|()| 0))
    }

    /// # Safety
    ///
    /// As `data`.
    unsafe extern "C" fn adjtime(info: *mut bindings::ptp_clock_info, delta: i64) -> c_int {
        // SAFETY: Per the function's contract.
        let data = unsafe { Self::data(info) };
        from_result(|| data.adjtime(delta).map(|()| 0))
    }

    /// # Safety
    ///
    /// As `data`; `ts` is valid for writes, `sts` null or live for the
    /// call.
    unsafe extern "C" fn gettimex64(
        info: *mut bindings::ptp_clock_info,
        ts: *mut bindings::timespec64,
        sts: *mut bindings::ptp_system_timestamp,
    ) -> c_int {
        // SAFETY: Per the function's contract.
        let data = unsafe { Self::data(info) };
        let mut stamps = SystemStamps {
            raw: sts,
            _life: PhantomData,
        };
        from_result(|| {
            let ns = data.gettimex(&mut stamps)?;
            // SAFETY: Valid for writes, per the function's contract.
            unsafe {
                (*ts).tv_sec = ns.div_euclid(NSEC_PER_SEC);
                // CAST: below a second's nanoseconds.
                (*ts).tv_nsec = ns.rem_euclid(NSEC_PER_SEC) as isize;
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As `data`; `ts` is live for the call.
    unsafe extern "C" fn settime64(
        info: *mut bindings::ptp_clock_info,
        ts: *const bindings::timespec64,
    ) -> c_int {
        // SAFETY: Per the function's contract.
        let (data, ts) = unsafe { (Self::data(info), &*ts) };
        from_result(|| {
            let ns = ts
                .tv_sec
                .checked_mul(NSEC_PER_SEC)
                // CAST: `long` into 64 bits.
                .and_then(|s| s.checked_add(ts.tv_nsec as i64))
                .ok_or(ERANGE)?;
            data.settime(ns).map(|()| 0)
        })
    }
}
