// SPDX-License-Identifier: GPL-2.0

//! devlink health reporters: a driver reports a fault; the core counts it,
//! keeps a dump of it, and calls the reporter's recovery unless the user
//! turned auto-recovery off or the last recovery is within the grace
//! period (`devlink health show/diagnose/dump/recover/set`).

use core::{marker::PhantomData, ptr::NonNull};

use kernel::{
    error::{from_result, VTABLE_DEFAULT_ERROR},
    ffi::{c_int, c_void},
    fmt,
    prelude::*,
    str::as_char_ptr_in_const_context,
};

use super::{DevlinkRef, Locked};
use crate::linux::bindings;

/// What a health reporter does, called by the devlink core. Optional
/// operations not implemented stay NULL (the core then refuses that
/// request with `EOPNOTSUPP`; without `recover` there is no
/// auto-recovery).
#[vtable]
pub(crate) trait HealthReporterOps: Sized + 'static {
    /// The reporter's name (`devlink health show`).
    const NAME: &'static CStr;
    /// Grace period after a recovery in which a new fault is not
    /// recovered automatically, in ms (0: none); the user may change it.
    const GRACEFUL_PERIOD_MS: u64 = 0;
    /// What the callbacks work on; it lives as long as the reporter.
    type Owner: Send + Sync;
    /// What a report says of its fault, for `dump` and `recover`.
    type Fault;

    /// Brings the device back from the reported fault (`fault`), or from
    /// whatever is wrong (`None`: `devlink health recover`). May sleep
    /// and take RTNL; runs under the devlink instance lock.
    fn recover(_owner: &Self::Owner, _fault: Option<&Self::Fault>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// What the driver saw at the fault (`fault`), or now (`None`: a dump
    /// asked for with no fault stored).
    fn dump(_owner: &Self::Owner, _fmsg: &mut Fmsg<'_>, _fault: Option<&Self::Fault>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// The current state.
    fn diagnose(_owner: &Self::Owner, _fmsg: &mut Fmsg<'_>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
}

/// The C operation table of a reporter type `R`; declare one per type as
/// a `static`.
pub(crate) struct HealthReporterVTable<R> {
    ops: bindings::devlink_health_reporter_ops,
    _r: PhantomData<R>,
}

// SAFETY: A name pointer to a `'static` string, function pointers and
// constants, never written.
unsafe impl<R> Sync for HealthReporterVTable<R> {}

impl<R: HealthReporterOps> HealthReporterVTable<R> {
    /// The table of `R`'s operations.
    pub(crate) const fn new() -> Self {
        // SAFETY: All fields are a pointer, nullable function pointers or
        // integers, for which zero is valid.
        let mut ops: bindings::devlink_health_reporter_ops = unsafe { core::mem::zeroed() };
        // The core only reads the name.
        ops.name = as_char_ptr_in_const_context(R::NAME).cast_mut();
        ops.default_graceful_period = R::GRACEFUL_PERIOD_MS;
        if R::HAS_RECOVER {
            ops.recover = Some(recover::<R>);
        }
        if R::HAS_DUMP {
            ops.dump = Some(dump::<R>);
        }
        if R::HAS_DIAGNOSE {
            ops.diagnose = Some(diagnose::<R>);
        }
        Self {
            ops,
            _r: PhantomData,
        }
    }
}

/// # Safety
///
/// `reporter` is one created by [`HealthReporter::new`] for `R`, not yet
/// destroyed.
unsafe fn owner<'a, R: HealthReporterOps>(
    reporter: *mut bindings::devlink_health_reporter,
) -> &'a R::Owner {
    // SAFETY: Its private pointer is the boxed owner, which outlives it.
    unsafe { &*bindings::devlink_health_reporter_priv(reporter).cast::<R::Owner>() }
}

/// # Safety
///
/// `ctx` is NULL or the `&R::Fault` [`HealthReporter::report`] passed,
/// alive for `'a`.
unsafe fn fault<'a, R: HealthReporterOps>(ctx: *mut c_void) -> Option<&'a R::Fault> {
    // SAFETY: The caller's promise.
    unsafe { ctx.cast::<R::Fault>().as_ref() }
}

/// `recover` of `R`'s table.
///
/// # Safety
///
/// The devlink core calls it for a reporter made by
/// [`HealthReporter::new`] for `R`, with live arguments for the call.
unsafe extern "C" fn recover<R: HealthReporterOps>(
    reporter: *mut bindings::devlink_health_reporter,
    ctx: *mut c_void,
    _extack: *mut bindings::netlink_ext_ack,
) -> c_int {
    from_result(|| {
        // SAFETY: The core calls us for a live reporter of ours, with the
        // context of a report (alive during it) or NULL.
        let (owner, fault) = unsafe { (owner::<R>(reporter), fault::<R>(ctx)) };
        R::recover(owner, fault)?;
        Ok(0)
    })
}

/// `dump` of `R`'s table.
///
/// # Safety
///
/// The devlink core calls it for a reporter made by
/// [`HealthReporter::new`] for `R`, with live arguments for the call.
unsafe extern "C" fn dump<R: HealthReporterOps>(
    reporter: *mut bindings::devlink_health_reporter,
    fmsg: *mut bindings::devlink_fmsg,
    ctx: *mut c_void,
    _extack: *mut bindings::netlink_ext_ack,
) -> c_int {
    from_result(|| {
        // SAFETY: As in `recover`; `fmsg` is the core's message, live
        // for the call.
        let (owner, fault) = unsafe { (owner::<R>(reporter), fault::<R>(ctx)) };
        R::dump(owner, &mut Fmsg::new(fmsg), fault)?;
        Ok(0)
    })
}

/// `diagnose` of `R`'s table.
///
/// # Safety
///
/// The devlink core calls it for a reporter made by
/// [`HealthReporter::new`] for `R`, with live arguments for the call.
unsafe extern "C" fn diagnose<R: HealthReporterOps>(
    reporter: *mut bindings::devlink_health_reporter,
    fmsg: *mut bindings::devlink_fmsg,
    _extack: *mut bindings::netlink_ext_ack,
) -> c_int {
    from_result(|| {
        // SAFETY: As in `dump`.
        let owner = unsafe { owner::<R>(reporter) };
        R::diagnose(owner, &mut Fmsg::new(fmsg))?;
        Ok(0)
    })
}

/// A health reporter of a devlink instance, with its owner; destroyed on
/// drop (waiting for a running callback), before the instance. The drop
/// takes the instance lock: the reporter is not dropped where that lock
/// is held (lockdep reports recursive locking if it is).
pub(crate) struct HealthReporter<R: HealthReporterOps> {
    raw: NonNull<bindings::devlink_health_reporter>,
    // The reporter's private pointer points into this box.
    _owner: KBox<R::Owner>,
    _devlink: DevlinkRef,
}

// SAFETY: The reporter may be used from any thread; the owner is
// `Send + Sync`.
unsafe impl<R: HealthReporterOps> Send for HealthReporter<R> {}
// SAFETY: As above.
unsafe impl<R: HealthReporterOps> Sync for HealthReporter<R> {}

impl<R: HealthReporterOps> HealthReporter<R> {
    /// Creates `R`'s reporter on `devlink`, whose lock the caller holds
    /// (`locked`), as `devl_health_reporter_create` wants; its callbacks
    /// see `owner`. Auto-recovery is on when `R` can recover. `EINVAL` if
    /// `locked` is another instance's lock, `EEXIST` if the instance has
    /// a reporter of that name.
    pub(crate) fn new(
        devlink: DevlinkRef,
        locked: &Locked<'_>,
        vtable: &'static HealthReporterVTable<R>,
        owner: R::Owner,
    ) -> Result<Self> {
        devlink.check(locked)?;
        let owner = KBox::new(owner, GFP_KERNEL)?;
        let priv_: *const R::Owner = &*owner;
        // SAFETY: A registered instance (alive: we hold a reference),
        // whose lock this thread holds (`locked`, checked to be its); a
        // `'static` table; `priv_` stays valid until the reporter is
        // destroyed in our drop (the box moves with us, its heap contents
        // do not). Returns an ERR_PTR on failure.
        let raw = unsafe {
            bindings::devl_health_reporter_create(
                devlink.as_raw(),
                &vtable.ops,
                priv_.cast_mut().cast(),
            )
        };
        let raw = kernel::error::from_err_ptr(raw)?;
        Ok(Self {
            raw: NonNull::new(raw).ok_or(ENOMEM)?,
            _owner: owner,
            _devlink: devlink,
        })
    }

    /// Reports `fault`, described by `msg`: counted, dumped (unless a dump
    /// is kept already), and recovered if auto-recovery is on and the
    /// grace period allows; otherwise the reporter stays in error until
    /// `devlink health recover`. Returns what the recovery returned
    /// (`ECANCELED`: not attempted). Process context; takes the instance
    /// lock, so never call it with RTNL held (the core takes them in the
    /// other order), nor from work that anything holding the instance
    /// lock waits for (a reload's teardown).
    pub(crate) fn report(&self, msg: fmt::Arguments<'_>, fault: &R::Fault) -> Result {
        let mut text = [0u8; 128];
        let msg = format_cstr(&mut text, msg);
        let ctx: *const R::Fault = fault;
        // SAFETY: A live reporter; `msg` NUL-terminated; `ctx` alive for
        // the call, which is as long as the core uses it.
        kernel::error::to_result(unsafe {
            bindings::devlink_health_report(self.raw.as_ptr(), msg, ctx.cast_mut().cast())
        })
    }
}

impl<R: HealthReporterOps> HealthReporter<R> {
    /// The driver recovered from the reported faults by other means (a
    /// wider reset): the reporter is healthy again.
    pub(crate) fn recovered_elsewhere(&self) {
        // SAFETY: A live reporter; the call takes no lock and may run in
        // any process context.
        unsafe {
            bindings::devlink_health_reporter_state_update(
                self.raw.as_ptr(),
                bindings::devlink_health_reporter_state_DEVLINK_HEALTH_REPORTER_STATE_HEALTHY,
            )
        };
    }
}

impl<R: HealthReporterOps> HealthReporter<R> {
    /// Destroys the reporter under the instance lock the caller holds
    /// (`locked`), as `devl_health_reporter_destroy` wants: how a driver
    /// undoes a reporter it made under that lock (dropping it there
    /// would take the lock again). If `locked` is another instance's
    /// lock, the reporter is dropped as usual.
    pub(crate) fn destroy(self, locked: &Locked<'_>) {
        if self._devlink.check(locked).is_err() {
            return;
        }
        let this = core::mem::ManuallyDrop::new(self);
        // SAFETY: Created in `new`, not destroyed (we own it, and our
        // drop will not run); this thread holds its instance's lock
        // (`locked`, checked to be its), so no callback runs.
        unsafe { bindings::devl_health_reporter_destroy(this.raw.as_ptr()) };
        // SAFETY: Each field is read once, from a value whose drop does
        // not run; the reporter that pointed into the owner is gone.
        unsafe {
            drop(core::ptr::read(&this._owner));
            drop(core::ptr::read(&this._devlink));
        }
    }
}

impl<R: HealthReporterOps> Drop for HealthReporter<R> {
    fn drop(&mut self) {
        // SAFETY: Created in `new`; takes the instance lock, so a running
        // callback finishes first and none starts after. The owner and
        // the instance are dropped after this.
        unsafe { bindings::devlink_health_reporter_destroy(self.raw.as_ptr()) };
    }
}

/// Formats `args` into `buf`, NUL-terminated (cut short if too long).
fn format_cstr(buf: &mut [u8], args: fmt::Arguments<'_>) -> *const kernel::ffi::c_char {
    struct Cursor<'a>(&'a mut [u8], usize);
    impl fmt::Write for Cursor<'_> {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            for &b in s.as_bytes() {
                // Keep the last byte for the NUL; an inner NUL would end
                // the message early, so it is replaced.
                if self.1 + 1 < self.0.len() {
                    self.0[self.1] = if b == 0 { b'?' } else { b };
                    self.1 += 1;
                }
            }
            Ok(())
        }
    }
    let mut cur = Cursor(buf, 0);
    let _ = fmt::Write::write_fmt(&mut cur, args);
    let end = cur.1;
    buf[end] = 0;
    buf.as_ptr().cast()
}

/// A devlink formatted message being built: nested objects of named
/// values, as `devlink health diagnose/dump` prints them. Errors are
/// kept in the message by the core and reported once it is sent.
///
/// # Invariants
///
/// `raw` is the core's message, live for `'a`.
pub(crate) struct Fmsg<'a> {
    raw: *mut bindings::devlink_fmsg,
    _call: PhantomData<&'a ()>,
}

impl Fmsg<'_> {
    fn new(raw: *mut bindings::devlink_fmsg) -> Self {
        Self {
            raw,
            _call: PhantomData,
        }
    }

    /// `name: value`.
    pub(crate) fn u32(&mut self, name: &CStr, value: u32) -> &mut Self {
        // SAFETY: Live message (type invariant); the core copies `name`.
        unsafe { bindings::devlink_fmsg_u32_pair_put(self.raw, name.as_char_ptr(), value) };
        self
    }

    /// `name: value`.
    pub(crate) fn u64(&mut self, name: &CStr, value: u64) -> &mut Self {
        // SAFETY: As in `u32`.
        unsafe { bindings::devlink_fmsg_u64_pair_put(self.raw, name.as_char_ptr(), value) };
        self
    }

    /// `name: true|false`.
    pub(crate) fn bool(&mut self, name: &CStr, value: bool) -> &mut Self {
        // SAFETY: As in `u32`.
        unsafe { bindings::devlink_fmsg_bool_pair_put(self.raw, name.as_char_ptr(), value) };
        self
    }

    /// `name: value`.
    pub(crate) fn str(&mut self, name: &CStr, value: &CStr) -> &mut Self {
        // SAFETY: As in `u32`; both strings are copied.
        unsafe {
            bindings::devlink_fmsg_string_pair_put(
                self.raw,
                name.as_char_ptr(),
                value.as_char_ptr(),
            )
        };
        self
    }

    /// `name: { ... }`: what `f` puts, as one object.
    pub(crate) fn object(&mut self, name: &CStr, f: impl FnOnce(&mut Self)) -> &mut Self {
        // SAFETY: As in `u32`; every start is ended below, in order.
        unsafe {
            bindings::devlink_fmsg_pair_nest_start(self.raw, name.as_char_ptr());
            bindings::devlink_fmsg_obj_nest_start(self.raw);
        }
        f(self);
        // SAFETY: Ends the two nests started above.
        unsafe {
            bindings::devlink_fmsg_obj_nest_end(self.raw);
            bindings::devlink_fmsg_pair_nest_end(self.raw);
        }
        self
    }

    /// `name: [ {...} {...} ]`: one object per `f` call `list` makes.
    pub(crate) fn array(
        &mut self,
        name: &CStr,
        list: impl FnOnce(&mut FmsgArray<'_, '_>),
    ) -> &mut Self {
        // SAFETY: As in `u32`; ended below.
        unsafe { bindings::devlink_fmsg_arr_pair_nest_start(self.raw, name.as_char_ptr()) };
        list(&mut FmsgArray(self));
        // SAFETY: Ends the nest started above.
        unsafe { bindings::devlink_fmsg_arr_pair_nest_end(self.raw) };
        self
    }
}

/// The elements of an [`Fmsg::array`].
pub(crate) struct FmsgArray<'m, 'a>(&'m mut Fmsg<'a>);

impl FmsgArray<'_, '_> {
    /// One element: an object of what `f` puts.
    pub(crate) fn element(&mut self, f: impl FnOnce(&mut Fmsg<'_>)) {
        // SAFETY: Live message; ended below.
        unsafe { bindings::devlink_fmsg_obj_nest_start(self.0.raw) };
        f(self.0);
        // SAFETY: Ends the nest started above.
        unsafe { bindings::devlink_fmsg_obj_nest_end(self.0.raw) };
    }
}
