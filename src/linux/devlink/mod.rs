// SPDX-License-Identifier: GPL-2.0

//! devlink: the device-wide handle through which operators see a device's
//! versions (`devlink dev info`), its ports (`devlink port`) and its
//! faults and recoveries (`devlink health`).
//!
//! Pattern of [`crate::linux::net::netdev`]: a `#[vtable]` trait the
//! driver implements ([`DevlinkOps`]) with C-ABI trampolines, and the
//! driver's state `T` pinned in the instance's private area for as long
//! as the instance exists. A [`Registration`] is reference counted: the
//! ports and health reporters of an instance each hold a reference, so
//! the instance is unregistered and freed only after the last of them is
//! gone, whatever order the driver drops them in.
//!
//! The instance lock is a type: [`Locked`] proves the current thread
//! holds it, and what must be done under it takes one. Ports and health
//! reporters are registered with the locked calls (`devl_port_register`,
//! `devl_health_reporter_create`), under a [`Locked`] from
//! [`Registration::lock`] at probe, as C drivers take `devl_lock()`
//! there. `devlink dev reload`, for an action the driver names in
//! [`DevlinkOps::RELOAD_ACTIONS`], calls [`DevlinkOps::reload_down`] and
//! [`DevlinkOps::reload_up`] with the lock the core took still held, and
//! hands them its [`Locked`]. The parent device's lock is held too, so
//! neither a second reload nor the driver's remove runs meanwhile.
//!
//! What holding the lock asks of a driver: a reload does not wait for
//! work that takes the instance lock (a health report does), and drops
//! no port or reporter (their drop takes it). A driver whose ports and
//! reporters live as long as its instance, as mlx5's firmware reporters
//! do, and which reports from work its reload never waits for, meets
//! both.

mod health;
mod port;

use core::{marker::PhantomData, ptr::NonNull};

use kernel::{
    device::{Bound, Device},
    error::{from_result, to_result, VTABLE_DEFAULT_ERROR},
    ffi::{c_int, c_void},
    prelude::*,
    sync::Arc,
    types::{ForeignOwnable, Opaque},
};

use crate::linux::bindings;

pub(crate) use health::{Fmsg, HealthReporter, HealthReporterOps, HealthReporterVTable};
pub(in crate::linux) use port::PortLink;
pub(crate) use port::{Port, PortFlavour, SwitchId};

/// What a devlink instance's driver answers, called by the devlink core.
#[vtable]
pub(crate) trait DevlinkOps: Send + Sync + Sized + 'static {
    /// `info_get`: the device's serial number and versions
    /// (`devlink dev info`). The core adds the driver's name itself.
    fn info_get(_data: &Self, _req: &mut InfoRequest<'_>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// The reload actions the driver performs (`devlink dev reload
    /// action ...`); the core refuses the others. Offered only with both
    /// halves implemented.
    const RELOAD_ACTIONS: &'static [ReloadAction] = &[];

    /// First half of `devlink dev reload`, for one of
    /// [`DevlinkOps::RELOAD_ACTIONS`]: tears down what the driver builds
    /// again in [`DevlinkOps::reload_up`]. `dev` is the bound parent
    /// device; the instance lock is held (`locked`) throughout.
    /// Implement both halves or neither.
    fn reload_down(
        _data: &Self,
        _dev: &Device<Bound>,
        _action: ReloadAction,
        _locked: &Locked<'_>,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `eswitch_mode_get`: the switch's mode (`devlink dev eswitch
    /// show`). The instance lock is held (`locked`).
    fn eswitch_mode_get(_data: &Self, _locked: &Locked<'_>) -> Result<EswitchMode> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `eswitch_mode_set`: changes the switch's mode (`devlink dev
    /// eswitch set ... mode`); a refusal says why in `extack`. `dev` is
    /// the instance's parent device; the instance lock is held
    /// (`locked`). Implement both or neither.
    fn eswitch_mode_set(
        _data: &Self,
        _dev: &Device,
        _mode: EswitchMode,
        _extack: &mut Extack<'_>,
        _locked: &Locked<'_>,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Second half of `devlink dev reload`: builds the driver's state
    /// again, under the instance lock (`locked`). An error leaves the
    /// instance marked as failed to reload (`devlink dev show` says so)
    /// until a later reload succeeds.
    fn reload_up(
        _data: &Self,
        _dev: &Device<Bound>,
        _action: ReloadAction,
        _locked: &Locked<'_>,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
}

/// The mode of a device's embedded switch (`devlink dev eswitch`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum EswitchMode {
    /// `legacy`: the functions are plain NICs; the switch is the
    /// driver's business.
    Legacy,
    /// `switchdev`: the switch is programmed through representors.
    Switchdev,
}

/// The user's extended ack of a request: where a refusal says why.
pub(crate) struct Extack<'a> {
    raw: *mut bindings::netlink_ext_ack,
    _request: PhantomData<&'a mut bindings::netlink_ext_ack>,
}

impl Extack<'_> {
    /// Says why the request is refused; returns `err`, to refuse it with.
    pub(crate) fn refuse(&mut self, err: Error, msg: &'static CStr) -> Error {
        // SAFETY: `raw` is null or the request's live extended ack (type
        // invariant); `msg` outlives it.
        unsafe { bindings::rust_ext_extack_msg(self.raw, msg.as_char_ptr()) };
        err
    }
}

/// A `devlink dev reload` action.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum ReloadAction {
    /// `driver_reinit`: the driver's state torn down and built again,
    /// the device staying bound.
    DriverReinit,
}

impl ReloadAction {
    const fn to_raw(self) -> bindings::devlink_reload_action {
        match self {
            Self::DriverReinit => {
                bindings::devlink_reload_action_DEVLINK_RELOAD_ACTION_DRIVER_REINIT
            }
        }
    }

    /// The one of `actions` that `raw` is.
    fn find(actions: &[Self], raw: bindings::devlink_reload_action) -> Option<Self> {
        actions.iter().copied().find(|a| a.to_raw() == raw)
    }

    /// The core's bit mask of `actions`.
    const fn mask(actions: &[Self]) -> u32 {
        let mut mask = 0;
        let mut i = 0;
        while i < actions.len() {
            mask |= 1 << actions[i].to_raw();
            i += 1;
        }
        mask
    }
}

/// A devlink instance whose private area holds a `T`.
///
/// # Invariants
///
/// Wraps a `struct devlink` allocated by [`Registration::new`], whose
/// private area holds an initialised `T` while a `&Devlink<T>` exists.
#[repr(transparent)]
pub(crate) struct Devlink<T>(Opaque<bindings::devlink>, PhantomData<T>);

// SAFETY: The instance is usable from any thread; `T` is `Send + Sync`.
unsafe impl<T: Send + Sync> Sync for Devlink<T> {}

impl<T> Devlink<T> {
    /// # Safety
    ///
    /// `ptr` is an instance allocated by [`Registration::new`] for this
    /// `T`, alive with its `T` for `'a`.
    unsafe fn from_raw<'a>(ptr: *mut bindings::devlink) -> &'a Self {
        // SAFETY: `repr(transparent)` over the opaque C struct; validity
        // is the caller's promise.
        unsafe { &*ptr.cast() }
    }

    fn as_raw(&self) -> *mut bindings::devlink {
        self.0.get()
    }

    /// The driver state in the private area.
    pub(crate) fn data(&self) -> &T {
        // SAFETY: By the type invariant the private area holds a live `T`.
        unsafe { &*bindings::devlink_priv(self.as_raw()).cast::<T>() }
    }
}

/// The C operation table of a devlink driver `T`; declare one per type
/// as a `static`.
pub(crate) struct DevlinkVTable<T> {
    ops: bindings::devlink_ops,
    _t: PhantomData<T>,
}

// SAFETY: Function pointers and constants only, never written.
unsafe impl<T> Sync for DevlinkVTable<T> {}

impl<T: DevlinkOps> DevlinkVTable<T> {
    /// The table of `T`'s operations.
    pub(crate) const fn new() -> Self {
        // SAFETY: Every field of `devlink_ops` is a nullable function
        // pointer or an integer, for which zero means "not implemented".
        let mut ops: bindings::devlink_ops = unsafe { core::mem::zeroed() };
        if T::HAS_INFO_GET {
            ops.info_get = Some(info_get::<T>);
        }
        if T::HAS_ESWITCH_MODE_GET && T::HAS_ESWITCH_MODE_SET {
            ops.eswitch_mode_get = Some(eswitch_mode_get::<T>);
            ops.eswitch_mode_set = Some(eswitch_mode_set::<T>);
        }
        if T::HAS_RELOAD_DOWN && T::HAS_RELOAD_UP && !T::RELOAD_ACTIONS.is_empty() {
            ops.reload_actions = ReloadAction::mask(T::RELOAD_ACTIONS) as usize;
            ops.reload_down = Some(reload_down::<T>);
            ops.reload_up = Some(reload_up::<T>);
        }
        Self {
            ops,
            _t: PhantomData,
        }
    }
}

/// `info_get` of `T`'s table.
///
/// # Safety
///
/// The devlink core calls it for an instance made by
/// [`Registration::new`] for `T`, with live arguments for the call.
unsafe extern "C" fn info_get<T: DevlinkOps>(
    devlink: *mut bindings::devlink,
    req: *mut bindings::devlink_info_req,
    _extack: *mut bindings::netlink_ext_ack,
) -> c_int {
    from_result(|| {
        // SAFETY: The core calls this only for a registered instance, so
        // one of ours with its `T`, alive for the call.
        let dl = unsafe { Devlink::<T>::from_raw(devlink) };
        let mut req = InfoRequest {
            raw: req,
            _call: PhantomData,
        };
        T::info_get(dl.data(), &mut req)?;
        Ok(0)
    })
}

/// `eswitch_mode_get` of `T`'s table.
///
/// # Safety
///
/// The devlink core calls it for an instance made by
/// [`Registration::new`] for `T`, holding the instance lock, with
/// `p_mode` valid for a write.
unsafe extern "C" fn eswitch_mode_get<T: DevlinkOps>(
    devlink: *mut bindings::devlink,
    p_mode: *mut u16,
) -> c_int {
    from_result(|| {
        // SAFETY: A registered instance of ours, alive for the call.
        let dl = unsafe { Devlink::<T>::from_raw(devlink) };
        // SAFETY: The core holds the instance lock for the call; the
        // value does not outlive it.
        let locked = unsafe { Locked::held(devlink) };
        let mode = match T::eswitch_mode_get(dl.data(), &locked)? {
            EswitchMode::Legacy => bindings::devlink_eswitch_mode_DEVLINK_ESWITCH_MODE_LEGACY,
            EswitchMode::Switchdev => bindings::devlink_eswitch_mode_DEVLINK_ESWITCH_MODE_SWITCHDEV,
        };
        // SAFETY: The caller's promise.
        // CAST: the mode is one of the enum's first values.
        unsafe { *p_mode = mode as u16 };
        Ok(0)
    })
}

/// `eswitch_mode_set` of `T`'s table.
///
/// # Safety
///
/// As [`eswitch_mode_get`]; `extack` is null or live for the call.
unsafe extern "C" fn eswitch_mode_set<T: DevlinkOps>(
    devlink: *mut bindings::devlink,
    mode: u16,
    extack: *mut bindings::netlink_ext_ack,
) -> c_int {
    from_result(|| {
        // SAFETY: As in `eswitch_mode_get`.
        let dl = unsafe { Devlink::<T>::from_raw(devlink) };
        // SAFETY: As in `eswitch_mode_get`.
        let locked = unsafe { Locked::held(devlink) };
        let mut extack = Extack {
            raw: extack,
            _request: PhantomData,
        };
        let mode = match u32::from(mode) {
            bindings::devlink_eswitch_mode_DEVLINK_ESWITCH_MODE_LEGACY => EswitchMode::Legacy,
            bindings::devlink_eswitch_mode_DEVLINK_ESWITCH_MODE_SWITCHDEV => EswitchMode::Switchdev,
            _ => {
                return Err(extack.refuse(
                    crate::linux::eopnotsupp(),
                    c"rsnic: modes are legacy and switchdev",
                ))
            }
        };
        // SAFETY: A live instance holds a reference to its parent device
        // for as long as it lives, so past this call.
        let parent: &Device = unsafe {
            Device::from_raw(bindings::devlink_to_dev(devlink).cast::<kernel::bindings::device>())
        };
        T::eswitch_mode_set(dl.data(), parent, mode, &mut extack, &locked)?;
        Ok(0)
    })
}

/// `reload_down` of `T`'s table.
///
/// # Safety
///
/// The devlink core calls it for an instance made by
/// [`Registration::new`] for `T`, holding the instance lock and the
/// parent device's lock.
unsafe extern "C" fn reload_down<T: DevlinkOps>(
    devlink: *mut bindings::devlink,
    netns_change: bool,
    action: bindings::devlink_reload_action,
    _limit: bindings::devlink_reload_limit,
    _extack: *mut bindings::netlink_ext_ack,
) -> c_int {
    from_result(|| {
        // The instance stays in its namespace.
        let Some(action) = ReloadAction::find(T::RELOAD_ACTIONS, action).filter(|_| !netns_change)
        else {
            return Err(crate::linux::eopnotsupp());
        };
        // SAFETY: The caller's promise: one of ours, locked as required.
        unsafe {
            with_bound_parent::<T>(devlink, |data, dev, locked| {
                T::reload_down(data, dev, action, locked)
            })
        }?;
        Ok(0)
    })
}

/// `reload_up` of `T`'s table.
///
/// # Safety
///
/// As [`reload_down`]; `actions_performed` is valid for a write.
unsafe extern "C" fn reload_up<T: DevlinkOps>(
    devlink: *mut bindings::devlink,
    action: bindings::devlink_reload_action,
    _limit: bindings::devlink_reload_limit,
    actions_performed: *mut u32,
    _extack: *mut bindings::netlink_ext_ack,
) -> c_int {
    from_result(|| {
        let Some(action) = ReloadAction::find(T::RELOAD_ACTIONS, action) else {
            return Err(crate::linux::eopnotsupp());
        };
        // SAFETY: The caller's promise: one of ours, locked as required.
        unsafe {
            with_bound_parent::<T>(devlink, |data, dev, locked| {
                T::reload_up(data, dev, action, locked)
            })
        }?;
        // SAFETY: The caller's promise.
        unsafe { *actions_performed = ReloadAction::mask(&[action]) };
        Ok(0)
    })
}

/// Calls `op` with `T`, the bound parent device and the instance lock
/// the caller holds.
///
/// # Safety
///
/// `devlink` is an instance made by [`Registration::new`] for `T`; the
/// caller holds its lock and the parent device's lock for the call.
unsafe fn with_bound_parent<T: DevlinkOps>(
    devlink: *mut bindings::devlink,
    op: impl FnOnce(&T, &Device<Bound>, &Locked<'_>) -> Result,
) -> Result {
    // SAFETY: The caller's promise; the core calls ops only on a
    // registered instance, so its `T` is alive.
    let dl = unsafe { Devlink::<T>::from_raw(devlink) };
    // SAFETY: A live instance; its parent device, which it holds a
    // reference to.
    let parent = unsafe { bindings::devlink_to_dev(devlink) }.cast::<kernel::bindings::device>();
    // SAFETY: The caller holds the parent's device lock, as
    // `device_is_bound` requires.
    if !unsafe { kernel::bindings::device_is_bound(parent) } {
        return Err(ENODEV);
    }
    // SAFETY: `parent` is a live device (see above) for the whole call.
    let parent: &Device = unsafe { Device::from_raw(parent) };
    // SAFETY: Bound (checked above) and it stays bound until we return:
    // unbinding takes the device lock, which our caller holds.
    let parent = unsafe { parent.as_bound() };
    // SAFETY: The caller holds the instance lock for the call, and the
    // value does not outlive it (`op` only borrows it).
    let locked = unsafe { Locked::held(dl.as_raw()) };
    op(dl.data(), parent, &locked)
}

/// Proof that the current thread holds a devlink instance's lock, which
/// the locked calls (`devl_*`) require. [`Registration::lock`] takes the
/// lock and gives one, which releases it on drop; the core holds the
/// lock around the reload operations and hands them one.
///
/// # Invariants
///
/// The current thread holds `raw`'s instance lock for `'a`; when `owned`,
/// this value took it and releases it on drop.
pub(crate) struct Locked<'a> {
    raw: NonNull<bindings::devlink>,
    owned: bool,
    // Not `Send`: a mutex is released by the thread that took it.
    _held: PhantomData<(&'a (), *const ())>,
}

impl Locked<'_> {
    /// # Safety
    ///
    /// The current thread holds `raw`'s instance lock for as long as the
    /// value lives.
    unsafe fn held(raw: *mut bindings::devlink) -> Self {
        Self {
            // The core never passes a NULL instance; dangling would only
            // fail the instance check.
            raw: NonNull::new(raw).unwrap_or(NonNull::dangling()),
            owned: false,
            _held: PhantomData,
        }
    }

    fn as_raw(&self) -> *mut bindings::devlink {
        self.raw.as_ptr()
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: Taken by `Registration::lock` on this thread (type
            // invariant), released once, here.
            unsafe { bindings::devl_unlock(self.as_raw()) };
        }
    }
}

/// The answer to `devlink dev info` being built.
///
/// # Invariants
///
/// `raw` is the core's request, live for `'a`.
pub(crate) struct InfoRequest<'a> {
    raw: *mut bindings::devlink_info_req,
    _call: PhantomData<&'a ()>,
}

/// Which list of `devlink dev info` a version goes in.
#[derive(Clone, Copy)]
pub(crate) enum VersionKind {
    /// Of the hardware itself, cannot change (`fixed`).
    Fixed,
    /// Of what runs now (`running`).
    Running,
}

impl InfoRequest<'_> {
    /// The device's serial number.
    pub(crate) fn serial_number(&mut self, serial: &CStr) -> Result {
        // SAFETY: Live request (type invariant); a NUL-terminated string
        // the core copies.
        to_result(unsafe {
            bindings::devlink_info_serial_number_put(self.raw, serial.as_char_ptr())
        })
    }

    /// A version `name` = `value` (names as in
    /// Documentation/networking/devlink/devlink-info.rst where one fits).
    pub(crate) fn version(&mut self, kind: VersionKind, name: &CStr, value: &CStr) -> Result {
        let (n, v) = (name.as_char_ptr(), value.as_char_ptr());
        // SAFETY: Live request; NUL-terminated strings the core copies.
        to_result(unsafe {
            match kind {
                VersionKind::Fixed => bindings::devlink_info_version_fixed_put(self.raw, n, v),
                VersionKind::Running => bindings::devlink_info_version_running_put(self.raw, n, v),
            }
        })
    }
}

/// A registered devlink instance with a `T` in its private area;
/// unregistered and freed when the last reference goes.
pub(crate) struct Registration<T: DevlinkOps> {
    raw: NonNull<bindings::devlink>,
    _t: PhantomData<T>,
}

// SAFETY: Only the instance pointer; the instance and `T` may be used and
// dropped from any thread.
unsafe impl<T: DevlinkOps> Send for Registration<T> {}
// SAFETY: As above.
unsafe impl<T: DevlinkOps> Sync for Registration<T> {}

impl<T: DevlinkOps> Registration<T> {
    /// Allocates an instance for `parent` with `vtable`'s operations,
    /// initialises `T` in it and registers it.
    pub(crate) fn new<E>(
        parent: &Device,
        vtable: &'static DevlinkVTable<T>,
        init: impl PinInit<T, E>,
    ) -> Result<Arc<Self>>
    where
        Error: From<E>,
    {
        let parent_raw: *const Device = parent;
        // SAFETY: The table is `'static`; `Device` is `repr(transparent)`
        // over `struct device`, a live device. Returns NULL on failure.
        let raw = unsafe {
            bindings::rust_ext_devlink_alloc(
                &vtable.ops,
                core::mem::size_of::<T>(),
                parent_raw.cast_mut().cast(),
            )
        };
        let raw = NonNull::new(raw).ok_or(ENOMEM)?;
        // The private area is aligned as the core aligns it (`NETDEV_ALIGN`).
        const { assert!(core::mem::align_of::<T>() <= 32) };
        // SAFETY: Allocated above with room for a `T`; unused so far, and
        // it never moves while the instance exists.
        let slot = unsafe { bindings::devlink_priv(raw.as_ptr()) }.cast::<T>();
        // SAFETY: `slot` is valid for a `T` and pinned.
        if let Err(e) = unsafe { init.__pinned_init(slot) } {
            // SAFETY: Never registered, no `T`.
            unsafe { bindings::devlink_free(raw.as_ptr()) };
            return Err(e.into());
        }
        // SAFETY: Fully set up, `T` initialised.
        unsafe { bindings::devlink_register(raw.as_ptr()) };
        // From here our drop undoes it all, also if this allocation fails.
        let reg = Self {
            raw,
            _t: PhantomData,
        };
        Ok(Arc::new(reg, GFP_KERNEL)?)
    }

    /// Takes the instance lock until the returned value is dropped (what
    /// C drivers do with `devl_lock()` around registering ports and
    /// reporters at probe). Sleeps; never while holding RTNL (the core
    /// takes the instance lock first).
    pub(crate) fn lock(&self) -> Locked<'_> {
        // SAFETY: A registered instance, alive while `self` is.
        unsafe { bindings::devl_lock(self.raw.as_ptr()) };
        // INVARIANT: Taken just now, on this thread; released on drop.
        Locked {
            raw: self.raw,
            owned: true,
            _held: PhantomData,
        }
    }

    /// The driver state in the private area.
    pub(crate) fn data(&self) -> &T {
        // SAFETY: Registered in `new` with its `T`, which lives until our
        // drop.
        unsafe { &*bindings::devlink_priv(self.raw.as_ptr()).cast::<T>() }
    }
}

/// A reference to a [`Registration`] that does not name its `T`: what a
/// port or reporter holds so that the instance outlives it.
///
/// # Invariants
///
/// `hold` is an `Arc<Registration<T>>` turned foreign, for the `T` whose
/// `put` and `hold_again` these are; `raw` is that registration's instance.
pub(crate) struct DevlinkRef {
    raw: NonNull<bindings::devlink>,
    hold: *mut c_void,
    put: unsafe fn(*mut c_void),
    hold_again: unsafe fn(*mut c_void) -> *mut c_void,
}

// SAFETY: It only keeps a `Registration` (`Send + Sync`) alive.
unsafe impl Send for DevlinkRef {}
// SAFETY: As above.
unsafe impl Sync for DevlinkRef {}

/// # Safety
///
/// `hold` came from `Arc::<Registration<T>>::into_foreign` and is given
/// back once.
unsafe fn put<T: DevlinkOps>(hold: *mut c_void) {
    // SAFETY: The caller's promise.
    drop(unsafe { Arc::<Registration<T>>::from_foreign(hold) });
}

/// # Safety
///
/// `hold` came from `Arc::<Registration<T>>::into_foreign` and has not
/// been given back.
unsafe fn hold_again<T: DevlinkOps>(hold: *mut c_void) -> *mut c_void {
    // SAFETY: The caller's promise: the `Arc` lives while we borrow it.
    let reg = unsafe { Arc::<Registration<T>>::borrow(hold) };
    Arc::from(reg).into_foreign()
}

impl DevlinkRef {
    /// A new reference to `reg`.
    pub(crate) fn new<T: DevlinkOps>(reg: &Arc<Registration<T>>) -> Self {
        Self {
            raw: reg.raw,
            hold: reg.clone().into_foreign(),
            put: put::<T>,
            hold_again: hold_again::<T>,
        }
    }

    fn as_raw(&self) -> *mut bindings::devlink {
        self.raw.as_ptr()
    }

    /// `EINVAL` unless `locked` is this instance's lock.
    fn check(&self, locked: &Locked<'_>) -> Result {
        if locked.raw == self.raw {
            Ok(())
        } else {
            Err(EINVAL)
        }
    }
}

impl Clone for DevlinkRef {
    fn clone(&self) -> Self {
        Self {
            raw: self.raw,
            // SAFETY: `hold` is ours until our drop (type invariant), and
            // `hold_again` is its `T`'s.
            hold: unsafe { (self.hold_again)(self.hold) },
            put: self.put,
            hold_again: self.hold_again,
        }
    }
}

impl Drop for DevlinkRef {
    fn drop(&mut self) {
        // SAFETY: By the type invariant, given back exactly once, here.
        unsafe { (self.put)(self.hold) };
    }
}

impl<T: DevlinkOps> Drop for Registration<T> {
    fn drop(&mut self) {
        let raw = self.raw.as_ptr();
        // SAFETY: Registered in `new`. Unregistering waits for running
        // callbacks (they hold the instance lock), and no new one starts.
        // Every port and reporter held a reference to us, so all are gone.
        unsafe { bindings::devlink_unregister(raw) };
        // SAFETY: No callback can run now; `T` is dropped exactly once.
        unsafe { core::ptr::drop_in_place(bindings::devlink_priv(raw).cast::<T>()) };
        // SAFETY: Unregistered, `T` dropped.
        unsafe { bindings::devlink_free(raw) };
    }
}
