// SPDX-License-Identifier: GPL-2.0

//! Network devices: `struct net_device` with a Rust driver state in its
//! private area, and `net_device_ops` dispatched to a Rust trait.
//!
//! Pattern of `rust/kernel/net/phy.rs`: a trait the driver implements
//! ([`NetDevOps`]) and C-ABI trampolines ([`Adapter`]) that the kernel
//! calls. The driver state `T` is pinned-initialised in place in the
//! private area ([`Registration::new`]) and dropped in place after
//! `unregister_netdev`, so every callback sees a live `T`.

use core::{marker::PhantomData, ptr::NonNull};

use kernel::{
    device::Device,
    error::from_result,
    ffi::{c_int, c_uint, c_void},
    prelude::*,
    types::Opaque,
};

use crate::linux::bindings;
use crate::linux::net::{
    ethtool::{EthtoolAdapter, EthtoolOps},
    skbuff::SkBuff,
};

/// Link counters reported to `ip -s link` (`struct rtnl_link_stats64`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LinkStats {
    /// Packets received.
    pub(crate) rx_packets: u64,
    /// Packets sent.
    pub(crate) tx_packets: u64,
    /// Bytes received.
    pub(crate) rx_bytes: u64,
    /// Bytes sent.
    pub(crate) tx_bytes: u64,
    /// Receive errors.
    pub(crate) rx_errors: u64,
    /// Of those, frames with a bad frame check sequence.
    pub(crate) rx_crc_errors: u64,
    /// Transmit errors.
    pub(crate) tx_errors: u64,
    /// Received packets dropped.
    pub(crate) rx_dropped: u64,
    /// Transmit packets dropped.
    pub(crate) tx_dropped: u64,
}

/// Packet and byte counters of one queue (or of the base: queues no
/// longer in use), for the netdev netlink family's `qstats`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct QueueCounters {
    /// Packets.
    pub(crate) packets: u64,
    /// Bytes.
    pub(crate) bytes: u64,
}

/// Offloads a device can do, as `ethtool -k` names them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Features {
    /// `tx-checksum-ip-generic` (`NETIF_F_HW_CSUM`).
    pub(crate) tx_csum: bool,
    /// `rx-checksum` (`NETIF_F_RXCSUM`).
    pub(crate) rx_csum: bool,
    /// `scatter-gather` (`NETIF_F_SG`).
    pub(crate) sg: bool,
    /// `tcp-segmentation-offload` for IPv4 and IPv6 (`NETIF_F_TSO`,
    /// `NETIF_F_TSO6`).
    pub(crate) tso: bool,
    /// `hw-tc-offload` (`NETIF_F_HW_TC`): flows cached in the device.
    pub(crate) hw_tc: bool,
}

impl Features {
    /// Every data-path offload this type names (what a lower device
    /// follows; not `hw_tc`, which is the upper device's own).
    pub(crate) const ALL: Self = Self {
        tx_csum: true,
        rx_csum: true,
        sg: true,
        tso: true,
        hw_tc: false,
    };

    pub(super) fn to_raw(self) -> bindings::netdev_features_t {
        let bit = |on: bool, b: u32| if on { 1u64 << b } else { 0 };
        bit(self.tx_csum, bindings::NETIF_F_HW_CSUM_BIT)
            | bit(self.rx_csum, bindings::NETIF_F_RXCSUM_BIT)
            | bit(self.sg, bindings::NETIF_F_SG_BIT)
            | bit(self.tso, bindings::NETIF_F_TSO_BIT)
            | bit(self.tso, bindings::NETIF_F_TSO6_BIT)
            | bit(self.hw_tc, bindings::NETIF_F_HW_TC_BIT)
    }

    fn from_raw(raw: bindings::netdev_features_t) -> Self {
        let has = |b: u32| raw & (1u64 << b) != 0;
        Self {
            tx_csum: has(bindings::NETIF_F_HW_CSUM_BIT),
            rx_csum: has(bindings::NETIF_F_RXCSUM_BIT),
            sg: has(bindings::NETIF_F_SG_BIT),
            tso: has(bindings::NETIF_F_TSO_BIT) || has(bindings::NETIF_F_TSO6_BIT),
            hw_tc: has(bindings::NETIF_F_HW_TC_BIT),
        }
    }
}

/// What a network device driver does, called by the networking core.
pub(crate) trait NetDevOps: Send + Sync + Sized + 'static {
    /// `ndo_open`: bring the device up.
    fn open(dev: &NetDev<Self>) -> Result;
    /// `ndo_stop`: bring it down.
    fn stop(dev: &NetDev<Self>) -> Result;
    /// `ndo_start_xmit`: send `skb` (or drop it and count the drop).
    fn start_xmit(dev: &NetDev<Self>, skb: SkBuff);
    /// `ndo_get_stats64`.
    fn get_stats64(dev: &NetDev<Self>, stats: &mut LinkStats);
    /// `ndo_set_rx_mode_async`: the address lists or flags changed.
    /// Process context, RTNL held; `mc` is a snapshot of the multicast list.
    fn set_rx_mode(dev: &NetDev<Self>, mc: &HwAddrList) -> Result;
    /// `ndo_set_mac_address`: `mac` is a valid unicast address.
    fn set_mac_address(dev: &NetDev<Self>, mac: [u8; 6]) -> Result;
    /// `ndo_change_mtu`: `mtu` is within the device's min/max.
    fn change_mtu(dev: &NetDev<Self>, mtu: u32) -> Result;
    /// `ndo_set_features`: the user changed offloads (within those the
    /// device offers); `features` is the new set.
    fn set_features(dev: &NetDev<Self>, features: Features) -> Result;
    /// Per-queue stats (`netdev_stat_ops`): RX and TX counters of queue
    /// `queue`, one of those in use.
    fn queue_stats(dev: &NetDev<Self>, queue: u32) -> (QueueCounters, QueueCounters);
    /// The base stats: RX and TX counters of queues not in use, so that
    /// base plus the queues in use equals `get_stats64`.
    fn base_stats(dev: &NetDev<Self>) -> (QueueCounters, QueueCounters);
    /// `ndo_tx_timeout`: TX queue `queue` made no progress.
    fn tx_timeout(dev: &NetDev<Self>, queue: u32);
}

/// A network device whose private area holds a `T`.
///
/// # Invariants
///
/// Wraps a `struct net_device` allocated by [`Registration::new`], whose
/// private area holds an initialised `T` for as long as a `&NetDev<T>`
/// exists.
#[repr(transparent)]
pub(crate) struct NetDev<T>(Opaque<bindings::net_device>, PhantomData<T>);

// SAFETY: The net_device is usable from any thread; `T` is `Send + Sync`.
unsafe impl<T: Send + Sync> Sync for NetDev<T> {}

impl<T> NetDev<T> {
    /// # Safety
    ///
    /// `ptr` must be a net_device allocated by [`Registration::new`] for
    /// this `T`, alive (with its `T`) for `'a`.
    pub(super) unsafe fn from_raw<'a>(ptr: *mut bindings::net_device) -> &'a Self {
        // SAFETY: `NetDev<T>` is `repr(transparent)` over the opaque C
        // struct; validity is the caller's promise.
        unsafe { &*ptr.cast() }
    }

    /// The raw `struct net_device`.
    pub(crate) fn as_raw(&self) -> *mut bindings::net_device {
        self.0.get()
    }

    /// The driver state in the private area.
    pub(crate) fn data(&self) -> &T {
        // SAFETY: By the type invariant the private area holds a live `T`.
        unsafe { &*bindings::rsnic_netdev_priv(self.as_raw()).cast::<T>() }
    }

    /// The interface name, e.g. `eth0`.
    pub(crate) fn name(&self) -> &CStr {
        // SAFETY: `name` is a NUL-terminated array inside the live device.
        unsafe { CStr::from_char_ptr((*self.as_raw()).name.as_ptr()) }
    }

    /// Sets the MAC address the stack uses. Call under RTNL (ndo callbacks
    /// and set-up before registration are).
    pub(crate) fn set_mac(&self, mac: &[u8; 6]) {
        // SAFETY: The device is alive; `mac` is 6 bytes, the Ethernet addr_len.
        unsafe { bindings::rsnic_eth_hw_addr_set(self.as_raw(), mac.as_ptr()) };
    }

    /// The current unicast address. RTNL held (it changes only under it).
    pub(crate) fn addr(&self) -> [u8; 6] {
        let mut mac = [0u8; 6];
        // SAFETY: `dev_addr` of a registered device points at its address
        // (at least `ETH_ALEN` bytes for Ethernet); RTNL keeps it stable.
        let addr = unsafe { (*self.as_raw()).dev_addr };
        // SAFETY: As above: six readable bytes, not overlapping `mac`.
        unsafe { core::ptr::copy_nonoverlapping(addr, mac.as_mut_ptr(), mac.len()) };
        mac
    }

    /// The current MTU.
    pub(crate) fn mtu(&self) -> u32 {
        // SAFETY: Reading a plain field of the live device.
        unsafe { core::ptr::read_volatile(&raw const (*self.as_raw()).mtu) }
    }

    /// Records a new MTU (from `change_mtu`, under RTNL).
    pub(crate) fn set_mtu(&self, mtu: u32) {
        // SAFETY: Writing a plain field of the live device under RTNL, as
        // `WRITE_ONCE(dev->mtu, ...)` does in C.
        unsafe { core::ptr::write_volatile(&raw mut (*self.as_raw()).mtu, mtu) };
    }

    /// The offloads currently enabled.
    pub(crate) fn features(&self) -> Features {
        // SAFETY: Reading a plain field of the live device.
        Features::from_raw(unsafe {
            core::ptr::read_volatile(&raw const (*self.as_raw()).features)
        })
    }

    /// Whether promiscuous (`IFF_PROMISC`) and all-multicast
    /// (`IFF_ALLMULTI`) reception are requested.
    pub(crate) fn promisc_allmulti(&self) -> (bool, bool) {
        // SAFETY: The device is alive (both read `dev->flags` once).
        unsafe {
            (
                bindings::rsnic_netdev_promisc(self.as_raw()),
                bindings::rsnic_netdev_allmulti(self.as_raw()),
            )
        }
    }

    /// Reports carrier up.
    pub(crate) fn carrier_on(&self) {
        // SAFETY: The device is alive; callable from any context.
        unsafe { bindings::netif_carrier_on(self.as_raw()) };
    }

    /// Reports carrier down.
    pub(crate) fn carrier_off(&self) {
        // SAFETY: As `carrier_on`.
        unsafe { bindings::netif_carrier_off(self.as_raw()) };
    }

    /// Whether the carrier is up.
    pub(crate) fn carrier_ok(&self) -> bool {
        // SAFETY: The device is alive; reading its state bit is always allowed.
        unsafe { bindings::rsnic_netif_carrier_ok(self.as_raw()) }
    }

    /// Sets how many TX and RX queues are in use (at most those allocated).
    pub(crate) fn set_real_num_queues(&self, n: u32) -> Result {
        // SAFETY: The device is alive; called under RTNL or before registration.
        kernel::error::to_result(unsafe {
            bindings::netif_set_real_num_tx_queues(self.as_raw(), n)
        })?;
        // SAFETY: As above.
        kernel::error::to_result(unsafe {
            bindings::netif_set_real_num_rx_queues(self.as_raw(), n)
        })
    }

    /// Allows transmission on every queue.
    pub(crate) fn tx_start_all(&self) {
        // SAFETY: The device is alive.
        unsafe { bindings::rsnic_netif_tx_start_all_queues(self.as_raw()) };
    }

    /// Marks the device absent while its queues are rebuilt, so the TX
    /// watchdog leaves it alone however long the card takes, and stops
    /// transmission on every queue, waiting for running xmits. RTNL held.
    pub(crate) fn detach(&self) {
        // SAFETY: The device is alive; process context.
        unsafe { bindings::netif_device_detach(self.as_raw()) };
        self.tx_disable();
    }

    /// Present again after [`Self::detach`]: wakes every TX queue and
    /// restarts the watchdog. RTNL held.
    pub(crate) fn attach(&self) {
        // SAFETY: The device is alive; process context.
        unsafe { bindings::netif_device_attach(self.as_raw()) };
    }

    /// Stops transmission on every queue and waits for running xmits.
    pub(crate) fn tx_disable(&self) {
        // SAFETY: The device is alive; process context (ndo_stop).
        unsafe { bindings::rsnic_netif_tx_disable(self.as_raw()) };
    }

    /// Stops TX queue `q` (ring full).
    pub(crate) fn tx_stop(&self, q: u16) {
        // SAFETY: The device is alive; the helper bounds nothing, so the
        // driver only passes queue numbers below its real TX queue count.
        unsafe { bindings::rsnic_netif_tx_stop_queue(self.as_raw(), q) };
    }

    /// Restarts TX queue `q` if stopped.
    pub(crate) fn tx_wake(&self, q: u16) {
        // SAFETY: As `tx_stop`.
        unsafe { bindings::rsnic_netif_tx_wake_queue(self.as_raw(), q) };
    }

    /// Whether TX queue `q` is stopped.
    pub(crate) fn tx_stopped(&self, q: u16) -> bool {
        // SAFETY: As `tx_stop`.
        unsafe { bindings::rsnic_netif_tx_queue_stopped(self.as_raw(), q) }
    }
}

/// Whether `mac` can be a station address: not multicast, not all zeros
/// (`is_valid_ether_addr`).
pub(crate) fn is_valid_ether_addr(mac: &[u8; 6]) -> bool {
    mac[0] & 1 == 0 && *mac != [0; 6]
}

/// A random locally administered unicast address (`eth_random_addr`).
pub(crate) fn random_ether_addr() -> [u8; 6] {
    let mut mac = [0u8; 6];
    // SAFETY: `mac` is valid for writes of the 6 bytes the helper fills.
    unsafe { bindings::rsnic_eth_random_addr(mac.as_mut_ptr()) };
    mac
}

/// Fills `key` with the system-wide random RSS key (`netdev_rss_key_fill`),
/// so that all devices of the host hash alike.
pub(crate) fn rss_key_fill(key: &mut [u8]) {
    // SAFETY: `key` is valid for writes of its length.
    unsafe { bindings::netdev_rss_key_fill(key.as_mut_ptr().cast(), key.len()) };
}

/// A snapshot of a device address list, as `ndo_set_rx_mode_async` gets it.
#[repr(transparent)]
pub(crate) struct HwAddrList(Opaque<bindings::netdev_hw_addr_list>);

impl HwAddrList {
    /// Copies the addresses into `out` (as many as fit); returns how many
    /// the list has.
    pub(crate) fn copy_into(&self, out: &mut [[u8; 6]]) -> usize {
        let max = out.len() as c_uint;
        // SAFETY: The list is a live snapshot for the callback's duration;
        // `out` has room for `max` 6-byte addresses.
        unsafe {
            bindings::rsnic_hw_addr_list_copy(self.0.get(), out.as_mut_ptr().cast(), max) as usize
        }
    }
}

/// A handle to a device for objects its driver state owns (interrupt
/// handlers, NAPI owners), which cannot hold a reference to it.
///
/// # Invariants
///
/// Only [`Registration::new`] creates it, handing it to the closure that
/// builds the device's `T`; it stays valid as long as that `T`, which the
/// driver must ensure by keeping the handle only inside `T`.
pub(crate) struct NetDevRef<T> {
    ptr: NonNull<bindings::net_device>,
    _t: PhantomData<T>,
}

impl<T> Clone for NetDevRef<T> {
    fn clone(&self) -> Self {
        Self {
            ptr: self.ptr,
            _t: PhantomData,
        }
    }
}

// SAFETY: The device may be used from any thread; `T` is shared.
unsafe impl<T: Send + Sync> Send for NetDevRef<T> {}
// SAFETY: As above.
unsafe impl<T: Send + Sync> Sync for NetDevRef<T> {}

impl<T> NetDevRef<T> {
    /// The device.
    pub(crate) fn get(&self) -> &NetDev<T> {
        // SAFETY: By the type invariant the device and its `T` outlive us.
        unsafe { NetDev::from_raw(self.ptr.as_ptr()) }
    }
}

/// Settings applied to a device before it is registered.
pub(crate) struct Setup {
    /// Permanent and current MAC address.
    pub(crate) mac: [u8; 6],
    /// Smallest MTU.
    pub(crate) min_mtu: u32,
    /// Largest MTU.
    pub(crate) max_mtu: u32,
    /// Queues in use at start.
    pub(crate) queues: u32,
    /// Offloads the device offers (all enabled at start).
    pub(crate) features: Features,
    /// Most segments the device cuts one TSO frame into (0: no limit).
    pub(crate) tso_max_segs: u32,
    /// The device transmits through a lower device of the same driver
    /// (a bond master): its TX locks get their own lockdep class, as
    /// netvsc's and bonding's do, or lockdep takes the nested xmit for a
    /// recursive lock.
    pub(crate) stacked: bool,
}

/// A registered network device; unregistered and freed on drop.
pub(crate) struct Registration<T: NetDevOps + EthtoolOps> {
    ndev: NonNull<bindings::net_device>,
    _t: PhantomData<T>,
}

// SAFETY: The registration only holds the device pointer; the device and
// `T` may be used and dropped from any thread.
unsafe impl<T: NetDevOps + EthtoolOps> Send for Registration<T> {}
// SAFETY: As above.
unsafe impl<T: NetDevOps + EthtoolOps> Sync for Registration<T> {}

/// Device alignment of `netdev_priv` (`NETDEV_ALIGN`).
const NETDEV_ALIGN: usize = 32;

impl<T: NetDevOps + EthtoolOps> Registration<T> {
    /// The registered device.
    pub(crate) fn dev(&self) -> &NetDev<T> {
        // SAFETY: Registered by `new`, with its `T`, until we are dropped.
        unsafe { NetDev::from_raw(self.ndev.as_ptr()) }
    }

    /// Allocates an Ethernet device with `max_queues` TX and RX queues as a
    /// child of `parent`, applies `setup`, initialises `T` in its private
    /// area with `init(dev)` and registers it. `init` must not use the
    /// device's `T` (it does not exist yet); it may keep the handle in `T`.
    pub(crate) fn new<I>(
        parent: &Device,
        max_queues: u32,
        setup: Setup,
        init: impl FnOnce(NetDevRef<T>) -> Result<I>,
    ) -> Result<Self>
    where
        I: PinInit<T, Error>,
    {
        const { assert!(core::mem::align_of::<T>() <= NETDEV_ALIGN) };
        // SAFETY: Plain allocation; returns NULL on failure.
        let raw = unsafe {
            bindings::alloc_etherdev_mqs(core::mem::size_of::<T>() as c_int, max_queues, max_queues)
        };
        let ndev = NonNull::new(raw).ok_or(ENOMEM)?;
        // SAFETY: `raw` was just allocated for `T`; `T` is not initialised
        // yet, so only raw-pointer methods may be used until it is.
        let dev = unsafe { NetDev::<T>::from_raw(raw) };
        let free = move || {
            // SAFETY: Allocated above, never registered, `T` dropped or
            // never initialised.
            unsafe { bindings::free_netdev(raw) }
        };
        let parent_raw: *const Device = parent;
        // SAFETY: `raw` is alive; `Device` is `repr(transparent)` over
        // `struct device`, so the cast pointer is the parent's `struct device`.
        unsafe {
            bindings::rsnic_set_netdev_dev(raw, parent_raw.cast_mut().cast());
            (*raw).netdev_ops = &Adapter::<T>::OPS;
            (*raw).ethtool_ops = &EthtoolAdapter::<T>::OPS;
            (*raw).stat_ops = &Adapter::<T>::STAT_OPS;
            (*raw).min_mtu = setup.min_mtu;
            (*raw).max_mtu = setup.max_mtu;
            (*raw).watchdog_timeo = 5 * kernel::bindings::HZ as c_int;
            (*raw).hw_features = setup.features.to_raw();
            (*raw).features = setup.features.to_raw();
            if setup.tso_max_segs != 0 {
                bindings::netif_set_tso_max_segs(raw, setup.tso_max_segs);
            }
            if setup.stacked {
                bindings::rsnic_netdev_lockdep_set_classes(raw);
            }
        }
        dev.set_mac(&setup.mac);
        // No carrier until the card says the link is up.
        dev.carrier_off();
        // SAFETY: `perm_addr` is a byte array of MAX_ADDR_LEN (>= 6) in the
        // live, unregistered device.
        unsafe { (&mut (*raw).perm_addr)[..6].copy_from_slice(&setup.mac) };
        if let Err(e) = dev.set_real_num_queues(setup.queues) {
            free();
            return Err(e);
        }
        let handle = NetDevRef {
            ptr: ndev,
            _t: PhantomData,
        };
        let initializer = match init(handle) {
            Ok(i) => i,
            Err(e) => {
                free();
                return Err(e);
            }
        };
        // SAFETY: The private area is `size_of::<T>()` bytes aligned to
        // NETDEV_ALIGN (>= align_of::<T>(), asserted above), unused, and
        // never moves while the device exists.
        let slot = unsafe { bindings::rsnic_netdev_priv(raw) }.cast::<T>();
        // SAFETY: `slot` is valid for a `T` and pinned (see above).
        if let Err(e) = unsafe { initializer.__pinned_init(slot) } {
            free();
            return Err(e);
        }
        // SAFETY: The device is fully set up and `T` initialised.
        let ret = unsafe { bindings::register_netdev(raw) };
        if ret != 0 {
            // SAFETY: `T` was initialised above and the device was never
            // registered, so nothing else can reach it.
            unsafe { core::ptr::drop_in_place(slot) };
            free();
            return Err(Error::from_errno(ret));
        }
        Ok(Self {
            ndev,
            _t: PhantomData,
        })
    }
}

impl<T: NetDevOps + EthtoolOps> Drop for Registration<T> {
    fn drop(&mut self) {
        let raw = self.ndev.as_ptr();
        // SAFETY: Registered in `new`. `unregister_netdev` stops the device
        // (calling `ndo_stop`, which still sees `T`) and waits until no
        // callback runs any more.
        unsafe { bindings::unregister_netdev(raw) };
        // SAFETY: No callback can run now; `T` is dropped exactly once.
        unsafe { core::ptr::drop_in_place(bindings::rsnic_netdev_priv(raw).cast::<T>()) };
        // SAFETY: Unregistered and its `T` dropped.
        unsafe { bindings::free_netdev(raw) };
    }
}

/// The C-ABI entry points of a [`NetDevOps`] implementation.
pub(crate) struct Adapter<T>(PhantomData<T>);

impl<T: NetDevOps> Adapter<T> {
    const OPS: bindings::net_device_ops = {
        // SAFETY: All fields of `net_device_ops` are nullable function
        // pointers or integers, for which zero is valid ("not implemented").
        let mut ops: bindings::net_device_ops = unsafe { core::mem::zeroed() };
        ops.ndo_open = Some(Self::open);
        ops.ndo_stop = Some(Self::stop);
        ops.ndo_start_xmit = Some(Self::start_xmit);
        ops.ndo_get_stats64 = Some(Self::get_stats64);
        ops.ndo_set_rx_mode_async = Some(Self::set_rx_mode);
        ops.ndo_set_mac_address = Some(Self::set_mac_address);
        ops.ndo_validate_addr = Some(bindings::eth_validate_addr);
        ops.ndo_change_mtu = Some(Self::change_mtu);
        ops.ndo_tx_timeout = Some(Self::tx_timeout);
        ops.ndo_set_features = Some(Self::set_features);
        ops
    };

    const STAT_OPS: bindings::netdev_stat_ops = bindings::netdev_stat_ops {
        get_queue_stats_rx: Some(Self::queue_stats_rx),
        get_queue_stats_tx: Some(Self::queue_stats_tx),
        get_base_stats: Some(Self::base_stats),
    };

    /// # Safety
    ///
    /// As `open`; `out` is valid for writes.
    unsafe extern "C" fn queue_stats_rx(
        ndev: *mut bindings::net_device,
        idx: c_int,
        out: *mut bindings::netdev_queue_stats_rx,
    ) {
        // SAFETY: Per the function's contract.
        let (rx, _) = T::queue_stats(unsafe { NetDev::<T>::from_raw(ndev) }, idx.max(0) as u32);
        // SAFETY: `out` is valid for writes; the core pre-fills unsupported
        // fields, we set the ones we count.
        unsafe {
            (*out).packets = rx.packets;
            (*out).bytes = rx.bytes;
        }
    }

    /// # Safety
    ///
    /// As `open`; `out` is valid for writes.
    unsafe extern "C" fn queue_stats_tx(
        ndev: *mut bindings::net_device,
        idx: c_int,
        out: *mut bindings::netdev_queue_stats_tx,
    ) {
        // SAFETY: Per the function's contract.
        let (_, tx) = T::queue_stats(unsafe { NetDev::<T>::from_raw(ndev) }, idx.max(0) as u32);
        // SAFETY: As in `queue_stats_rx`.
        unsafe {
            (*out).packets = tx.packets;
            (*out).bytes = tx.bytes;
        }
    }

    /// # Safety
    ///
    /// As `open`; `rx` and `tx` are valid for writes.
    unsafe extern "C" fn base_stats(
        ndev: *mut bindings::net_device,
        rx: *mut bindings::netdev_queue_stats_rx,
        tx: *mut bindings::netdev_queue_stats_tx,
    ) {
        // SAFETY: Per the function's contract.
        let (r, t) = T::base_stats(unsafe { NetDev::<T>::from_raw(ndev) });
        // SAFETY: As in `queue_stats_rx`.
        unsafe {
            (*rx).packets = r.packets;
            (*rx).bytes = r.bytes;
            (*tx).packets = t.packets;
            (*tx).bytes = t.bytes;
        }
    }

    /// # Safety
    ///
    /// Called by the networking core with a device set up by [`Registration`].
    unsafe extern "C" fn open(ndev: *mut bindings::net_device) -> c_int {
        // SAFETY: Per the function's contract.
        let dev = unsafe { NetDev::<T>::from_raw(ndev) };
        from_result(|| {
            T::open(dev)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As `open`.
    unsafe extern "C" fn stop(ndev: *mut bindings::net_device) -> c_int {
        // SAFETY: Per the function's contract.
        let dev = unsafe { NetDev::<T>::from_raw(ndev) };
        from_result(|| {
            T::stop(dev)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As `open`; `skb` is a socket buffer the core hands over.
    unsafe extern "C" fn start_xmit(
        skb: *mut bindings::sk_buff,
        ndev: *mut bindings::net_device,
    ) -> bindings::netdev_tx_t {
        // SAFETY: Per the function's contract.
        let dev = unsafe { NetDev::<T>::from_raw(ndev) };
        // SAFETY: The core passes ownership of a valid skb.
        if let Some(skb) = unsafe { SkBuff::from_raw(skb) } {
            T::start_xmit(dev, skb);
        }
        bindings::netdev_tx_NETDEV_TX_OK
    }

    /// # Safety
    ///
    /// As `open`; `stats` is valid for writes.
    unsafe extern "C" fn get_stats64(
        ndev: *mut bindings::net_device,
        stats: *mut bindings::rtnl_link_stats64,
    ) {
        // SAFETY: Per the function's contract.
        let dev = unsafe { NetDev::<T>::from_raw(ndev) };
        let mut s = LinkStats::default();
        T::get_stats64(dev, &mut s);
        // SAFETY: `stats` is valid for writes per the contract.
        let out = unsafe { &mut *stats };
        out.rx_packets = s.rx_packets;
        out.tx_packets = s.tx_packets;
        out.rx_bytes = s.rx_bytes;
        out.tx_bytes = s.tx_bytes;
        out.rx_errors = s.rx_errors;
        out.rx_crc_errors = s.rx_crc_errors;
        out.tx_errors = s.tx_errors;
        out.rx_dropped = s.rx_dropped;
        out.tx_dropped = s.tx_dropped;
    }

    /// # Safety
    ///
    /// As `open`; `mc` is a live address-list snapshot.
    unsafe extern "C" fn set_rx_mode(
        ndev: *mut bindings::net_device,
        _uc: *mut bindings::netdev_hw_addr_list,
        mc: *mut bindings::netdev_hw_addr_list,
    ) -> c_int {
        // SAFETY: Per the function's contract.
        let dev = unsafe { NetDev::<T>::from_raw(ndev) };
        // SAFETY: `HwAddrList` is `repr(transparent)` over the C list, live
        // for this call.
        let mc = unsafe { &*mc.cast::<HwAddrList>() };
        from_result(|| {
            T::set_rx_mode(dev, mc)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As `open`; `addr` is a `struct sockaddr`.
    unsafe extern "C" fn set_mac_address(
        ndev: *mut bindings::net_device,
        addr: *mut c_void,
    ) -> c_int {
        // SAFETY: Per the function's contract.
        let dev = unsafe { NetDev::<T>::from_raw(ndev) };
        // SAFETY: `addr` is a `struct sockaddr` whose data holds the address.
        let sa = unsafe { &*addr.cast::<bindings::sockaddr>() };
        let mut mac = [0u8; 6];
        for (m, &b) in mac.iter_mut().zip(sa.sa_data.iter()) {
            *m = b;
        }
        if !is_valid_ether_addr(&mac) {
            return -(kernel::bindings::EADDRNOTAVAIL as c_int);
        }
        from_result(|| {
            T::set_mac_address(dev, mac)?;
            dev.set_mac(&mac);
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As `open`.
    unsafe extern "C" fn change_mtu(ndev: *mut bindings::net_device, mtu: c_int) -> c_int {
        // SAFETY: Per the function's contract.
        let dev = unsafe { NetDev::<T>::from_raw(ndev) };
        from_result(|| {
            let mtu = u32::try_from(mtu).map_err(|_| EINVAL)?;
            T::change_mtu(dev, mtu)?;
            dev.set_mtu(mtu);
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As `open`.
    unsafe extern "C" fn set_features(
        ndev: *mut bindings::net_device,
        features: bindings::netdev_features_t,
    ) -> c_int {
        // SAFETY: Per the function's contract.
        let dev = unsafe { NetDev::<T>::from_raw(ndev) };
        from_result(|| {
            T::set_features(dev, Features::from_raw(features))?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As `open`.
    unsafe extern "C" fn tx_timeout(ndev: *mut bindings::net_device, queue: c_uint) {
        // SAFETY: Per the function's contract.
        T::tx_timeout(unsafe { NetDev::<T>::from_raw(ndev) }, queue);
    }
}

/// Whether a networking message may be logged now (`net_ratelimit`): the
/// rate limit every driver shares for warnings about traffic.
pub(crate) fn net_ratelimit() -> bool {
    // SAFETY: No preconditions; any context.
    unsafe { bindings::rsnic_net_ratelimit() }
}
