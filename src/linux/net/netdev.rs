// SPDX-License-Identifier: GPL-2.0

//! Network devices: `struct net_device` with a Rust driver state in its
//! private area, and `net_device_ops` dispatched to a Rust trait.
//!
//! Pattern of `rust/kernel/net/phy.rs`: a `#[vtable]` trait the driver
//! implements ([`NetDevOps`], whose optional operations stay NULL in the
//! C table unless implemented) and C-ABI trampolines (`netdev_ops.rs`)
//! that the kernel calls. The driver state `T` is pinned-initialised in place
//! in the private area ([`Registration::new`]) and dropped in place after
//! `unregister_netdev`, so every callback sees a live `T`.
//!
//! The ops tables live in a [`NetDevVTable`] the driver declares as a
//! `static`: a net device whose `netdev_ops` is that table was created by
//! a [`Registration`] of the same `T`, which is how a device found by a
//! lookup or a notifier is known to carry a `T` ([`NetDevVTable::owns`]).

use core::{marker::PhantomData, ptr::NonNull};

use kernel::{device::Device, error::to_result, ffi::c_int, prelude::*, sync::Arc, types::Opaque};

use crate::linux::bindings;
use crate::linux::devlink::{Port, PortLink};
use crate::linux::net::{
    bpf_offload::BpfOffloadDev,
    ethtool::EthtoolOps,
    ethtool_adapter::EthtoolAdapter,
    instance_lock::{InstanceGuard, RtnlLocked},
    netdev_ops::Adapter,
    netdev_ref::StateLife,
    queue_mgmt::QueueMgmtAdapter,
    rtnl::Rtnl,
    xdp::{XdpFeatures, XDP_METADATA_OPS},
};

pub(crate) use crate::linux::net::{
    any_netdev::AnyNetDev,
    features::{Feature, Features},
    netdev_ops::{NetDevOps, StackPick},
    netdev_ref::NetDevRef,
    stats::{LinkStats, RxQueueStats, TxQueueStats},
};

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

/// What any net device offers (name, state, counters, ...) is this one's
/// too.
impl<T> core::ops::Deref for NetDev<T> {
    type Target = AnyNetDev;

    fn deref(&self) -> &AnyNetDev {
        // SAFETY: A live, registered net device (type invariant), as
        // `AnyNetDev` asks, for as long as `self` is borrowed.
        unsafe { AnyNetDev::from_raw(self.as_raw()) }
    }
}

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
    pub(in crate::linux) fn as_raw(&self) -> *mut bindings::net_device {
        self.0.get()
    }

    /// The driver state in the private area.
    pub(crate) fn data(&self) -> &T {
        // SAFETY: By the type invariant the private area holds a live `T`.
        unsafe { &*bindings::rust_ext_netdev_priv(self.as_raw()).cast::<T>() }
    }

    /// Sets the MAC address the stack uses.
    pub(crate) fn set_mac(&self, _rtnl: &Rtnl, mac: &[u8; 6]) {
        // SAFETY: The device is alive and RTNL held; `mac` is 6 bytes, the
        // Ethernet addr_len.
        unsafe { bindings::rust_ext_eth_hw_addr_set(self.as_raw(), mac.as_ptr()) };
    }

    /// Asks the driver again which offloads it can have on
    /// (`netdev_update_features`): after what its `fix_features` looks at
    /// changed.
    pub(crate) fn update_features(&self, _locked: &RtnlLocked<'_>) {
        // SAFETY: Registered; RTNL and the instance lock held, under which
        // the core recomputes the features and calls the driver's
        // `ndo_fix_features` and `ndo_set_features`.
        unsafe { bindings::netdev_update_features(self.as_raw()) };
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
        // SAFETY: Reading a plain field of the live device, as `READ_ONCE`.
        let flags = unsafe { core::ptr::read_volatile(&raw const (*self.as_raw()).flags) };
        (
            flags & bindings::net_device_flags_IFF_PROMISC != 0,
            flags & bindings::net_device_flags_IFF_ALLMULTI != 0,
        )
    }

    /// Reports carrier up. A change queues a link event holding the
    /// device, so none may happen after `unregister_netdev` has run (the
    /// device is freed with the event still queued): a driver leaves the
    /// carrier off in `ndo_stop`, which unregistering calls first, and
    /// raises it only while the interface runs.
    pub(crate) fn carrier_on(&self) {
        // SAFETY: The device is alive; callable from any context.
        unsafe { bindings::netif_carrier_on(self.as_raw()) };
    }

    /// Reports carrier down (see [`Self::carrier_on`]: a no-op once it is
    /// off, so calling it on a stopped device is harmless).
    pub(crate) fn carrier_off(&self) {
        // SAFETY: As `carrier_on`.
        unsafe { bindings::netif_carrier_off(self.as_raw()) };
    }

    /// Sets how many TX and RX queues are in use (at most those allocated).
    pub(crate) fn set_real_num_queues(&self, _locked: &RtnlLocked<'_>, n: u32) -> Result {
        self.set_real_num_queues_raw(n)
    }

    fn set_real_num_queues_raw(&self, n: u32) -> Result {
        // SAFETY: The device is alive; RTNL held or the device not yet
        // registered (the callers' contract).
        to_result(unsafe { bindings::netif_set_real_num_tx_queues(self.as_raw(), n) })?;
        // SAFETY: As above.
        to_result(unsafe { bindings::netif_set_real_num_rx_queues(self.as_raw(), n) })
    }

    /// Transmit Packet Steering, one TX queue per CPU: CPU `c` sends on
    /// queue `c % queues` of the first `queues`, and on no other (a queue
    /// beyond the CPUs takes no CPU's traffic: flows there come from
    /// sockets bound to it). A sender that stays on one CPU keeps to one
    /// queue, and its frames leave in the order it sent them.
    pub(crate) fn set_default_xps(&self, _rtnl: &Rtnl, queues: u16) -> Result {
        let cpus = kernel::cpu::nr_cpu_ids();
        for queue in 0..queues {
            let mut mask = kernel::cpumask::CpumaskVar::new_zero(GFP_KERNEL)?;
            for c in (0..cpus).filter(|c| c % u32::from(queues) == u32::from(queue)) {
                if let Some(cpu) = kernel::cpu::CpuId::from_u32(c) {
                    mask.set(cpu);
                }
            }
            // SAFETY: The device is alive and RTNL held; `mask` is a valid
            // cpumask for the call (the kernel's `struct cpumask`, which
            // both bindings name); `queue` is below the TX queues in use.
            to_result(unsafe {
                bindings::netif_set_xps_queue(self.as_raw(), mask.as_raw().cast(), queue)
            })?;
        }
        Ok(())
    }

    /// Allows transmission on every queue.
    pub(crate) fn tx_start_all(&self) {
        // SAFETY: The device is alive.
        unsafe { bindings::rust_ext_netif_tx_start_all_queues(self.as_raw()) };
    }

    /// Takes the device's instance lock, RTNL held (the core's order),
    /// for the driver's own work on it; held until the guard is dropped.
    /// Process context. The task must not hold the lock already (it is
    /// a mutex: that would deadlock), nor another device's (the layer
    /// does not nest them).
    pub(crate) fn lock_instance<'a>(&'a self, rtnl: &'a Rtnl) -> InstanceGuard<'a> {
        // SAFETY: The device is alive while borrowed.
        unsafe { InstanceGuard::lock(self.as_raw(), rtnl) }
    }

    /// Marks the device absent while its queues are rebuilt, so the TX
    /// watchdog leaves it alone however long the card takes, and stops
    /// transmission on every queue, waiting for running xmits.
    pub(crate) fn detach(&self, rtnl: &Rtnl) {
        // SAFETY: The device is alive; process context.
        unsafe { bindings::netif_device_detach(self.as_raw()) };
        self.tx_disable(rtnl);
    }

    /// Present again after [`Self::detach`]: wakes every TX queue and
    /// restarts the watchdog.
    pub(crate) fn attach(&self, _rtnl: &Rtnl) {
        // SAFETY: The device is alive; process context.
        unsafe { bindings::netif_device_attach(self.as_raw()) };
    }

    /// Stops transmission on every queue and waits for running xmits.
    pub(crate) fn tx_disable(&self, _rtnl: &Rtnl) {
        // SAFETY: The device is alive; process context.
        unsafe { bindings::rust_ext_netif_tx_disable(self.as_raw()) };
    }

    /// Stops TX queue `q` (ring full).
    pub(crate) fn tx_stop(&self, q: u16) {
        if let Some(txq) = self.txq(q) {
            // SAFETY: A TX queue of the live device.
            unsafe { bindings::rust_ext_netif_tx_stop_queue(txq) };
        }
    }

    /// Restarts TX queue `q` if stopped.
    pub(crate) fn tx_wake(&self, q: u16) {
        if let Some(txq) = self.txq(q) {
            // SAFETY: A TX queue of the live device.
            unsafe { bindings::netif_tx_wake_queue(txq) };
        }
    }

    /// TX queues in use (`real_num_tx_queues`).
    pub(crate) fn real_tx_queues(&self) -> u32 {
        // SAFETY: Valid device; a plain field, changed under RTNL (a racy
        // read gives the old or the new count).
        unsafe { (*self.as_raw()).real_num_tx_queues }
    }

    /// Inside `start_xmit`: whether the stack hands this queue another
    /// frame right after this one (`netdev_xmit_more`), so the card may be
    /// told about both at once.
    pub(crate) fn xmit_more(&self) -> bool {
        // SAFETY: Reads this CPU's softnet state; any context may.
        unsafe { bindings::rust_ext_netdev_xmit_more() }
    }

    /// Byte queue limits: `bytes` of a frame went on TX queue `q`.
    /// Returns whether to ring the doorbell now: true unless `more`
    /// frames follow and the queue is not stopped (by the driver or by
    /// BQL). Each byte counted here must be completed with
    /// [`Self::tx_completed`] exactly once.
    pub(crate) fn tx_sent(&self, q: u16, bytes: u32, more: bool) -> bool {
        match self.txq(q) {
            // SAFETY: A TX queue of the live device.
            Some(txq) => unsafe { bindings::rust_ext_netdev_tx_sent_queue(txq, bytes, more) },
            None => true,
        }
    }

    /// Byte queue limits: the card finished `packets` frames of `bytes`
    /// on TX queue `q` (counted by [`Self::tx_sent`]); may wake the queue.
    pub(crate) fn tx_completed(&self, q: u16, packets: u32, bytes: u32) {
        if let Some(txq) = self.txq(q) {
            // SAFETY: A TX queue of the live device.
            unsafe { bindings::rust_ext_netdev_tx_completed_queue(txq, packets, bytes) };
        }
    }

    /// Byte queue limits: forgets what TX queue `q` had in flight (its
    /// ring was freed, or is new).
    pub(crate) fn tx_reset(&self, q: u16) {
        if let Some(txq) = self.txq(q) {
            // SAFETY: A TX queue of the live device.
            unsafe { bindings::rust_ext_netdev_tx_reset_queue(txq) };
        }
    }

    /// Whether TX queue `q` is stopped.
    pub(crate) fn tx_stopped(&self, q: u16) -> bool {
        // SAFETY: A TX queue of the live device.
        self.txq(q)
            .is_some_and(|txq| unsafe { bindings::rust_ext_netif_tx_queue_stopped(txq) })
    }

    /// TX queue `q`, if the device has it.
    fn txq(&self, q: u16) -> Option<*mut bindings::netdev_queue> {
        // SAFETY: Reading a field fixed at allocation.
        let allocated = unsafe { (*self.as_raw()).num_tx_queues };
        // SAFETY: `q` is below the number of queues allocated.
        (u32::from(q) < allocated)
            .then(|| unsafe { bindings::rust_ext_netdev_get_tx_queue(self.as_raw(), q.into()) })
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
    unsafe { bindings::rust_ext_eth_random_addr(mac.as_mut_ptr()) };
    mac
}

/// Fills `key` with the system-wide random RSS key (`netdev_rss_key_fill`),
/// so that all devices of the host hash alike.
pub(crate) fn rss_key_fill(key: &mut [u8]) {
    // SAFETY: `key` is valid for writes of its length.
    unsafe { bindings::netdev_rss_key_fill(key.as_mut_ptr().cast(), key.len()) };
}

/// Whether a networking message may be logged now (`net_ratelimit`): the
/// rate limit every driver shares for warnings about traffic.
pub(crate) fn net_ratelimit() -> bool {
    // SAFETY: No preconditions; any context.
    unsafe { bindings::net_ratelimit() != 0 }
}

/// A snapshot of a device address list, as `ndo_set_rx_mode_async` gets it.
#[repr(transparent)]
pub(crate) struct HwAddrList(Opaque<bindings::netdev_hw_addr_list>);

impl HwAddrList {
    /// The number of addresses.
    pub(crate) fn len(&self) -> usize {
        // SAFETY: The snapshot is live and unchanging for the callback.
        // CAST: a count the core keeps as an int, not negative after `max(0)`.
        unsafe { (*self.0.get()).count }.max(0) as usize
    }

    /// Calls `f` with each address (its first six bytes: Ethernet).
    pub(crate) fn for_each(&self, mut f: impl FnMut(&[u8; 6])) {
        // SAFETY: The snapshot is live and unchanging for the callback.
        let head = unsafe { &raw mut (*self.0.get()).list };
        // SAFETY: `head` is the list head of the snapshot.
        let mut pos = unsafe { (*head).next };
        while !pos.is_null() && pos != head {
            // SAFETY: Every entry of the list is the `list` member of a
            // `netdev_hw_addr` (`netdev_hw_addr_list_for_each`).
            let ha = unsafe { &*kernel::container_of!(pos, bindings::netdev_hw_addr, list) };
            let mut mac = [0u8; 6];
            mac.copy_from_slice(&ha.addr[..6]);
            f(&mac);
            // SAFETY: As above, a live entry.
            pos = unsafe { (*pos).next };
        }
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
    /// Offloads the user may turn on and off (`hw_features`).
    pub(crate) hw_features: Features,
    /// Offloads on at start.
    pub(crate) features: Features,
    /// Offloads the device can do for a frame inside a tunnel
    /// (`hw_enc_features`): the inner checksum and segmentation, and
    /// which tunnels it segments.
    pub(crate) enc_features: Features,
    /// Most segments the device cuts one TSO frame into (0: no limit).
    pub(crate) tso_max_segs: u32,
    /// How long a TX queue may make no progress before
    /// [`NetDevOps::tx_timeout`], in jiffies.
    pub(crate) watchdog_jiffies: u32,
    /// The device transmits through lower devices of the same kind (a
    /// bond master): its TX locks get their own lockdep class, as
    /// netvsc's and bonding's do, or lockdep takes the nested xmit for a
    /// recursive lock.
    pub(crate) stacked: bool,
    /// The core spreads the queues' IRQs one CPU each and keeps the
    /// user's affinity across queue reconfiguration
    /// (`netif_set_affinity_auto`); each queue's NAPI must be given its
    /// IRQ.
    pub(crate) irq_affinity_auto: bool,
    /// The device sends fragments of a memory provider's buffers (devmem
    /// TX, `NETMEM_TX_DMA`): the user may bind a dmabuf for TX, and the
    /// driver's TX path maps fragments with [`super::dma_map::TxMapping`],
    /// which never reads them.
    pub(crate) netmem_tx: bool,
    /// The devlink port the device belongs to; the registration links
    /// the device to it (one device per port) and holds it until the
    /// device is unregistered.
    pub(crate) devlink_port: Option<Arc<Port>>,
    /// The XDP actions the driver carries out (`xdp_features`); a driver
    /// with any implements [`NetDevOps::xdp_setup`].
    pub(crate) xdp_features: XdpFeatures,
    /// Programs may read each frame's RX hash (`bpf_xdp_metadata_rx_hash`):
    /// the driver runs every program through
    /// [`crate::linux::net::page_pool::RxFrame::run_xdp`].
    pub(crate) xdp_rx_hash: bool,
    /// The BPF offload device the device joins (XDP offload,
    /// [`NetDevOps::xdp_offload_setup`]): from before it is registered
    /// until after it is unregistered. It must serve this type.
    pub(crate) bpf_offload: Option<Arc<BpfOffloadDev>>,
}

/// The C operation tables of a net device type `T`. Declare one per type
/// as a `static` and register devices with it; its address tells the
/// type's devices apart from every other net device.
pub(crate) struct NetDevVTable<T> {
    ndo: bindings::net_device_ops,
    ethtool: bindings::ethtool_ops,
    stat: bindings::netdev_stat_ops,
    queue: bindings::netdev_queue_mgmt_ops,
    _t: PhantomData<T>,
}

// SAFETY: The tables are only function pointers and constants, read by
// the kernel from any thread, never written.
unsafe impl<T> Sync for NetDevVTable<T> {}

impl<T: NetDevOps + EthtoolOps> NetDevVTable<T> {
    /// The tables of `T`'s operations.
    pub(crate) const fn new() -> Self {
        Self {
            ndo: Adapter::<T>::OPS,
            ethtool: EthtoolAdapter::<T>::OPS,
            stat: Adapter::<T>::STAT_OPS,
            queue: QueueMgmtAdapter::<T>::OPS,
            _t: PhantomData,
        }
    }

    /// Whether the net device `raw` was registered with these tables,
    /// which makes it a `NetDev<T>`.
    ///
    /// # Safety
    ///
    /// `raw` is a live net device.
    pub(super) unsafe fn owns(&'static self, raw: *mut bindings::net_device) -> bool {
        // SAFETY: Reading a pointer field of a live device.
        core::ptr::eq(unsafe { (*raw).netdev_ops }, &self.ndo)
    }
}

/// A registered network device; unregistered and freed on drop.
pub(crate) struct Registration<T: NetDevOps + EthtoolOps> {
    ndev: NonNull<bindings::net_device>,
    /// Whether the handles given to `T` may reach it.
    life: Arc<StateLife>,
    // Dropped after the device is unregistered (in `drop`).
    _port: Option<PortLink>,
    /// The BPF offload device the device joined; it leaves in `drop`.
    bpf_offload: Option<Arc<BpfOffloadDev>>,
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

    /// A handle to the device, for what reaches it from outside its
    /// callbacks; the registration's drop waits for every handle.
    pub(crate) fn handle(&self) -> NetDevRef<T> {
        // SAFETY: `ndev` was set up by this registration with `life`,
        // which it releases before freeing the device, and `T` is
        // initialised while `life` is open.
        unsafe { NetDevRef::new(self.ndev, self.life.clone()) }
    }

    /// Allocates an Ethernet device with `max_queues` TX and RX queues as a
    /// child of `parent`, with the operations of `vtable`, applies
    /// `setup`, initialises `T` in its private area with `init(dev)` and
    /// registers it. `init` may keep the handle (and copies of it)
    /// anywhere: it reaches the device only from the moment `T` exists
    /// until the device is unregistered.
    pub(crate) fn new<I>(
        parent: &Device,
        vtable: &'static NetDevVTable<T>,
        max_queues: u32,
        setup: Setup,
        init: impl FnOnce(NetDevRef<T>) -> Result<I>,
    ) -> Result<Self>
    where
        I: PinInit<T, Error>,
    {
        const { assert!(core::mem::align_of::<T>() <= NETDEV_ALIGN) };
        if !EthtoolAdapter::<T>::check_ops() {
            pr_err!("ethtool_ops bit fields do not match this kernel's layout\n");
            return Err(EINVAL);
        }
        // Linked until the device is unregistered or set-up fails.
        let port = setup.devlink_port.as_ref().map(Port::link).transpose()?;
        // SAFETY: Plain allocation; returns NULL on failure.
        let raw = unsafe {
            // CAST: a driver state of 2 GiB or more is no net device private
            // area.
            bindings::alloc_etherdev_mqs(core::mem::size_of::<T>() as c_int, max_queues, max_queues)
        };
        let ndev = NonNull::new(raw).ok_or(ENOMEM)?;
        let life = match StateLife::new() {
            Ok(life) => life,
            Err(e) => {
                // SAFETY: Allocated just above, never registered.
                unsafe { bindings::free_netdev(raw) };
                return Err(e);
            }
        };
        // SAFETY: `raw` was just allocated for `T`; `T` is not initialised
        // yet, so only raw-pointer methods may be used until it is.
        let dev = unsafe { NetDev::<T>::from_raw(raw) };
        let free = move |life: &StateLife| {
            // Handles the failed `init` kept anywhere must go first.
            life.release();
            // SAFETY: Allocated above, never registered, `T` dropped or
            // never initialised, no handle left.
            unsafe { bindings::free_netdev(raw) }
        };
        let parent_raw: *const Device = parent;
        // SAFETY: `raw` is alive and not registered, so nothing else uses
        // it; `Device` is `repr(transparent)` over `struct device`, so the
        // cast pointer is the parent's `struct device`; the tables are
        // `'static`.
        unsafe {
            bindings::rust_ext_set_netdev_dev(raw, parent_raw.cast_mut().cast());
            (*raw).netdev_ops = &vtable.ndo;
            (*raw).ethtool_ops = &vtable.ethtool;
            if T::HAS_QUEUE_STATS {
                (*raw).stat_ops = &vtable.stat;
            }
            if T::HAS_QUEUE_START {
                (*raw).queue_mgmt_ops = &vtable.queue;
            }
            // Ops-locked: the core holds the device's instance lock around
            // its ndos, ethtool ops and queue management, and the layer's
            // NAPI calls are the `_locked` ones (`instance_lock`).
            (*raw).request_ops_lock = true;
            (*raw).min_mtu = setup.min_mtu;
            (*raw).max_mtu = setup.max_mtu;
            // CAST: bounded by `c_int::MAX` just before.
            (*raw).watchdog_timeo = setup.watchdog_jiffies.min(c_int::MAX as u32) as c_int;
            (*raw).hw_features = setup.hw_features.into();
            (*raw).features = setup.features.into();
            (*raw).hw_enc_features = setup.enc_features.into();
            if setup.tso_max_segs != 0 {
                bindings::netif_set_tso_max_segs(raw, setup.tso_max_segs);
            }
            if setup.stacked {
                bindings::rust_ext_netdev_lockdep_set_classes(raw);
            }
            if setup.irq_affinity_auto {
                bindings::netif_set_affinity_auto(raw);
            }
            if setup.netmem_tx {
                bindings::rust_ext_netdev_set_netmem_tx_dma(raw);
            }
            (*raw).xdp_features = setup.xdp_features.bits();
            if setup.xdp_rx_hash {
                (*raw).xdp_metadata_ops = &XDP_METADATA_OPS.0;
            }
            bindings::rust_ext_eth_hw_addr_set(raw, setup.mac.as_ptr());
            (&mut (*raw).perm_addr)[..6].copy_from_slice(&setup.mac);
            // SET_NETDEV_DEVLINK_PORT: the port outlives the registered
            // device (the link is kept in the registration, and a linked
            // port is not unregistered).
            if let Some(port) = &port {
                (*raw).devlink_port = port.as_raw();
            }
        }
        // No carrier until the driver says the link is up.
        dev.carrier_off();
        if let Err(e) = dev.set_real_num_queues_raw(setup.queues) {
            free(&life);
            return Err(e);
        }
        // SAFETY: `ndev` is being set up for `T` with this life, opened
        // only while `T` is initialised, and released before the device is
        // freed (here on failure, else by the registration's drop).
        let handle = unsafe { NetDevRef::new(ndev, life.clone()) };
        let initializer = match init(handle) {
            Ok(i) => i,
            Err(e) => {
                free(&life);
                return Err(e);
            }
        };
        // SAFETY: The private area is `size_of::<T>()` bytes aligned to
        // NETDEV_ALIGN (>= align_of::<T>(), asserted above), unused, and
        // never moves while the device exists.
        let slot = unsafe { bindings::rust_ext_netdev_priv(raw) }.cast::<T>();
        // SAFETY: `slot` is valid for a `T` and pinned (see above).
        if let Err(e) = unsafe { initializer.__pinned_init(slot) } {
            free(&life);
            return Err(e);
        }
        life.open();
        let bpf_offload = setup.bpf_offload.filter(|o| o.serves(vtable));
        if let Some(offload) = &bpf_offload {
            // SAFETY: A live device of the type the offload device
            // serves; it leaves before it is freed (below, or in `drop`).
            if let Err(e) = unsafe { offload.add(raw) } {
                life.close();
                // SAFETY: As below: initialised, never registered.
                unsafe { core::ptr::drop_in_place(slot) };
                free(&life);
                return Err(e);
            }
        }
        // SAFETY: The device is fully set up and `T` initialised.
        let ret = unsafe { bindings::register_netdev(raw) };
        if ret != 0 {
            if let Some(offload) = &bpf_offload {
                // SAFETY: Added above; nothing bound to it yet.
                unsafe { offload.remove(raw) };
            }
            life.close();
            // SAFETY: `T` was initialised above and the device was never
            // registered, so nothing else can reach it.
            unsafe { core::ptr::drop_in_place(slot) };
            free(&life);
            return Err(Error::from_errno(ret));
        }
        Ok(Self {
            ndev,
            life,
            _port: port,
            bpf_offload,
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
        if let Some(offload) = &self.bpf_offload {
            // SAFETY: Added in `new`, not freed yet; unregistering
            // detached any offloaded program, and the maps still bound
            // are freed through `ndo_bpf`, which sees `T` still.
            unsafe { offload.remove(raw) };
        }
        // No handle reaches `T` from now on.
        self.life.close();
        // SAFETY: No callback can run now, nor any access through a handle;
        // `T` is dropped exactly once.
        unsafe { core::ptr::drop_in_place(bindings::rust_ext_netdev_priv(raw).cast::<T>()) };
        // The handles `T` kept went with it; wait for any kept elsewhere.
        self.life.release();
        // SAFETY: Unregistered, its `T` dropped, no handle left.
        unsafe { bindings::free_netdev(raw) };
    }
}
