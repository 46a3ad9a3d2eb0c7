// SPDX-License-Identifier: GPL-2.0

//! Queue management (`struct netdev_queue_mgmt_ops`): the networking core
//! restarts one RX queue on new memory (for a memory provider, or on
//! request), without taking the device down: it has the driver allocate
//! the queue's new memory while the queue runs, stop the queue (handing
//! its old memory over), start it on the new memory, and free the old.
//! If the new memory does not start, it starts the queue on the old
//! memory again.
//!
//! The memory moves as a `KBox<T::QueueMem>`. The core's per-queue memory
//! area (`ndo_queue_mem_size` bytes, zeroed by the core) holds an
//! `Option<KBox<T::QueueMem>>`: zero is `None`, so an area the driver
//! never filled frees nothing. The core calls every op under the device's
//! instance lock, not always with RTNL.

use core::{ffi::c_void, marker::PhantomData};

use kernel::{error::from_result, ffi::c_int, page::PAGE_SIZE, prelude::*};

use crate::linux::bindings;
use crate::linux::net::{instance_lock::DevLocked, netdev::NetDev, netdev_ops::NetDevOps};

/// A queue that did not start on the memory it was given: why, and the
/// memory back if the driver may free it (`None`: it keeps it, because
/// the card may still use it).
pub(crate) struct QueueStartError<M> {
    pub(crate) error: Error,
    pub(crate) mem: Option<KBox<M>>,
}

/// What the core's per-queue memory area holds.
type Slot<M> = Option<KBox<M>>;

/// The C-ABI entry points of a [`NetDevOps`] implementation's queue
/// management.
pub(super) struct QueueMgmtAdapter<T>(PhantomData<T>);

impl<T: NetDevOps> QueueMgmtAdapter<T> {
    pub(super) const OPS: bindings::netdev_queue_mgmt_ops = {
        // The area is zeroed by the core: `None` must be all zeros, which
        // the null niche of `KBox` makes it.
        const { assert!(core::mem::size_of::<Slot<T::QueueMem>>() == core::mem::size_of::<usize>()) };
        // SAFETY: All fields are nullable function pointers or integers,
        // for which zero is valid ("not implemented").
        let mut ops: bindings::netdev_queue_mgmt_ops = unsafe { core::mem::zeroed() };
        // Only for a driver that restarts queues (the table is then
        // given to its devices): the defaults must not be linked in.
        if T::HAS_QUEUE_START {
            ops.ndo_queue_mem_size = core::mem::size_of::<Slot<T::QueueMem>>();
            ops.ndo_queue_mem_alloc = Some(Self::mem_alloc);
            ops.ndo_queue_mem_free = Some(Self::mem_free);
            ops.ndo_queue_start = Some(Self::start);
            ops.ndo_queue_stop = Some(Self::stop);
        }
        // CAST: a page is far below 4 GiB.
        if T::HAS_QUEUE_START && T::MAX_RX_BUF_LEN > PAGE_SIZE as u32 {
            ops.supported_params = bindings::QCFG_RX_PAGE_SIZE;
            ops.ndo_default_qcfg = Some(Self::default_qcfg);
            ops.ndo_validate_qcfg = Some(Self::validate_qcfg);
        }
        ops
    };

    /// # Safety
    ///
    /// `qcfg` is the core's configuration being rendered, writable.
    unsafe extern "C" fn default_qcfg(
        _ndev: *mut bindings::net_device,
        qcfg: *mut bindings::netdev_queue_config,
    ) {
        // SAFETY: Per the function's contract.
        // CAST: a page is far below 4 GiB.
        unsafe { (*qcfg).rx_page_size = PAGE_SIZE as u32 };
    }

    /// A queue's RX buffers are a power of two from a page to
    /// [`NetDevOps::MAX_RX_BUF_LEN`]: `ERANGE` outside, `EINVAL` for
    /// another length (as bnxt answers).
    ///
    /// # Safety
    ///
    /// `qcfg` is the core's configuration being validated; `extack` null
    /// or the request's live extended ack.
    unsafe extern "C" fn validate_qcfg(
        _ndev: *mut bindings::net_device,
        qcfg: *mut bindings::netdev_queue_config,
        extack: *mut bindings::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: Per the function's contract.
        let len = unsafe { (*qcfg).rx_page_size };
        let (error, msg) = match check_rx_buf_len(len, T::MAX_RX_BUF_LEN) {
            Ok(()) => return 0,
            Err(e) => e,
        };
        if !extack.is_null() {
            // SAFETY: Live (contract); the message is `'static`.
            unsafe { (*extack)._msg = msg.as_char_ptr() };
        }
        error.to_errno()
    }

    /// # Safety
    ///
    /// `ndev` is a device registered by `Registration<T>`, alive for the
    /// call, which the core makes with its instance lock held; `mem` is
    /// the core's area of `ndo_queue_mem_size` bytes, suitably aligned
    /// (`kvzalloc`), holding a `Slot` (zeroed, or filled by these ops),
    /// used by no one else during the call.
    unsafe fn args<'a>(
        ndev: *mut bindings::net_device,
        mem: *mut c_void,
    ) -> (&'a NetDev<T>, &'a DevLocked, &'a mut Slot<T::QueueMem>) {
        // SAFETY: Per the function's contract.
        unsafe {
            (
                NetDev::from_raw(ndev),
                DevLocked::assume_held(),
                &mut *mem.cast::<Slot<T::QueueMem>>(),
            )
        }
    }

    /// # Safety
    ///
    /// As `args`; `mem` is zeroed.
    unsafe extern "C" fn mem_alloc(
        ndev: *mut bindings::net_device,
        _qcfg: *mut bindings::netdev_queue_config,
        mem: *mut c_void,
        idx: c_int,
    ) -> c_int {
        // SAFETY: Per the function's contract.
        let (dev, locked, slot) = unsafe { Self::args(ndev, mem) };
        from_result(|| {
            *slot = Some(T::queue_mem_alloc(dev, locked, u32::try_from(idx)?)?);
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As `args`.
    unsafe extern "C" fn mem_free(ndev: *mut bindings::net_device, mem: *mut c_void) {
        // SAFETY: Per the function's contract.
        let (_, _, slot) = unsafe { Self::args(ndev, mem) };
        drop(slot.take());
    }

    /// # Safety
    ///
    /// As `args`; the device is running.
    unsafe extern "C" fn start(
        ndev: *mut bindings::net_device,
        _qcfg: *mut bindings::netdev_queue_config,
        mem: *mut c_void,
        idx: c_int,
    ) -> c_int {
        // SAFETY: Per the function's contract.
        let (dev, locked, slot) = unsafe { Self::args(ndev, mem) };
        let Ok(queue) = u32::try_from(idx) else {
            return EINVAL.to_errno();
        };
        // The core frees the area without `mem_free` once the queue runs
        // on it: the memory is the queue's now, not the area's.
        let Some(queue_mem) = slot.take() else {
            return EINVAL.to_errno();
        };
        match T::queue_start(dev, locked, queue, queue_mem) {
            Ok(()) => 0,
            Err(e) => {
                // Freed by the core's `mem_free`, if the driver let go.
                *slot = e.mem;
                e.error.to_errno()
            }
        }
    }

    /// # Safety
    ///
    /// As `args`, `mem` zeroed; the device is running.
    unsafe extern "C" fn stop(
        ndev: *mut bindings::net_device,
        mem: *mut c_void,
        idx: c_int,
    ) -> c_int {
        // SAFETY: Per the function's contract.
        let (dev, locked, slot) = unsafe { Self::args(ndev, mem) };
        from_result(|| {
            *slot = Some(T::queue_stop(dev, locked, u32::try_from(idx)?)?);
            Ok(0)
        })
    }
}

/// Whether `len` is an RX buffer length a queue may be given: a power of
/// two from a page to `max`; otherwise the error and why.
fn check_rx_buf_len(len: u32, max: u32) -> Result<(), (Error, &'static CStr)> {
    // CAST: a page is far below 4 GiB.
    if len < PAGE_SIZE as u32 || len > max {
        return Err((ERANGE, c"rx_page_size: out of the device's range"));
    }
    if !len.is_power_of_two() {
        return Err((EINVAL, c"rx_page_size: not a power of two"));
    }
    Ok(())
}

impl<T> NetDev<T> {
    /// Bytes per RX buffer of queue `queue`: the memory provider's choice
    /// (`rx_page_size`, validated against [`NetDevOps::MAX_RX_BUF_LEN`]
    /// when it was bound), a page if it made none. Instance lock held
    /// (the provider's parameters change under it).
    pub(crate) fn rx_queue_buf_len(&self, _locked: &DevLocked, queue: u32) -> u32 {
        // CAST: a page is far below 4 GiB.
        let page = PAGE_SIZE as u32;
        // SAFETY: Registered (a `NetDev` is); a plain field, fixed at
        // allocation.
        let queues = unsafe { (*self.as_raw()).num_rx_queues };
        let Ok(idx) = c_int::try_from(queue) else {
            return page;
        };
        if queue >= queues {
            return page;
        }
        // SAFETY: All-zero is a valid `netdev_queue_config` (plain data).
        let mut qcfg: bindings::netdev_queue_config = unsafe { core::mem::zeroed() };
        // SAFETY: Registered; the instance lock is held; `idx` is an RX
        // queue of the device (checked above: the core does not check).
        unsafe { bindings::netdev_queue_config(self.as_raw(), idx, &mut qcfg) };
        qcfg.rx_page_size.max(page)
    }

    /// Restarts RX queue `queue` through the core's queue management
    /// (`netdev_rx_queue_restart`): new memory, the queue stopped and
    /// started on it, the old memory freed; if the new memory does not
    /// start, the queue runs on the old again. `EINVAL` for a queue not
    /// in use, `EOPNOTSUPP` without queue management; the driver's errors
    /// as they come.
    pub(crate) fn restart_rx_queue(&self, _locked: &DevLocked, queue: u32) -> Result {
        // SAFETY: Registered (a `NetDev` is); the count changes only under
        // the instance lock, which is held.
        if queue >= unsafe { (*self.as_raw()).real_num_rx_queues } {
            return Err(EINVAL);
        }
        // SAFETY: Registered; the instance lock is held, as the core
        // requires; `queue` is one in use (checked above; the core does
        // not check).
        kernel::error::to_result(unsafe { bindings::netdev_rx_queue_restart(self.as_raw(), queue) })
    }
}
