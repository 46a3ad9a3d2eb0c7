// SPDX-License-Identifier: GPL-2.0

//! What a net device driver does (`net_device_ops` and `netdev_stat_ops`)
//! as a `#[vtable]` trait, and the C-ABI trampolines the kernel calls
//! (pattern of `rust/kernel/net/phy.rs`).

use core::marker::PhantomData;

use kernel::{
    error::{from_result, VTABLE_DEFAULT_ERROR},
    ffi::{c_int, c_uint, c_void},
    prelude::*,
};

use crate::linux::bindings;
use crate::linux::net::{
    bpf_offload::{BpfOffloadAdapter, MapDef, MapElem, XdpOffloadSetup},
    features::Features,
    flower::{self, FlowerCmd},
    instance_lock::{DevLocked, RtnlLocked},
    netdev::{is_valid_ether_addr, HwAddrList, NetDev},
    queue_mgmt::QueueStartError,
    shaper::{Handle, Scope, Shaper, ShaperAck, ShaperAdapter, ShaperCaps},
    skbuff::{SkBuff, SkBuffRef},
    stats::{LinkStats, RxQueueStats, TxQueueStats},
    tstamp::HwTstamp,
    xdp::{xdp_xmit_call, XdpSetup, XdpXmitBatch},
    xsk::{XskSetup, XskSlots},
};

/// The stack's own TX queue choice for an skb in `ndo_select_queue`
/// (`netdev_pick_tx`: the socket's queue, XPS, or a flow hash).
///
/// # Invariants
///
/// `ndev` is the device being transmitted on; `sb_dev` null or a live
/// device; both for the call.
pub(crate) struct StackPick<'a> {
    ndev: *mut bindings::net_device,
    sb_dev: *mut bindings::net_device,
    _call: PhantomData<&'a ()>,
}

impl StackPick<'_> {
    /// The queue the stack would pick for `skb`.
    pub(crate) fn pick(&self, skb: &mut SkBuffRef<'_>) -> u16 {
        // SAFETY: Live devices and skb for the call (type invariants).
        unsafe { bindings::netdev_pick_tx(self.ndev, skb.as_raw(), self.sb_dev) }
    }
}

/// What a network device driver does, called by the networking core.
/// Optional operations a driver does not implement stay NULL in the C
/// table, with the core's default behaviour.
#[vtable]
pub(crate) trait NetDevOps: Send + Sync + Sized + 'static {
    /// `ndo_open`: bring the device up.
    fn open(dev: &NetDev<Self>, rtnl: &RtnlLocked<'_>) -> Result;

    /// `ndo_stop`: bring it down.
    fn stop(dev: &NetDev<Self>, rtnl: &RtnlLocked<'_>) -> Result;

    /// `ndo_start_xmit`: send `skb` (or drop it and count the drop).
    fn start_xmit(dev: &NetDev<Self>, skb: SkBuff);

    /// `ndo_get_stats64`. Any context.
    fn get_stats64(_dev: &NetDev<Self>, _stats: &mut LinkStats) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ndo_set_rx_mode_async`: the address lists or flags changed; `mc`
    /// is a snapshot of the multicast list.
    fn set_rx_mode(_dev: &NetDev<Self>, _rtnl: &RtnlLocked<'_>, _mc: &HwAddrList) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ndo_set_mac_address`: `mac` is a valid unicast address; the layer
    /// records it in the device on success.
    fn set_mac_address(_dev: &NetDev<Self>, _rtnl: &RtnlLocked<'_>, _mac: [u8; 6]) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ndo_change_mtu`: `mtu` is within the device's min/max; the layer
    /// records it in the device on success.
    fn change_mtu(_dev: &NetDev<Self>, _rtnl: &RtnlLocked<'_>, _mtu: u32) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ndo_set_features`: the user changed offloads (within those the
    /// device offers); `features` is the new set.
    fn set_features(_dev: &NetDev<Self>, _rtnl: &RtnlLocked<'_>, _features: Features) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ndo_fix_features`: of the offloads `features` asks for, those the
    /// device can have on now; it can only take offloads away (the core
    /// then drops what depends on them).
    fn fix_features(_dev: &NetDev<Self>, _rtnl: &RtnlLocked<'_>, _features: Features) -> Features {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ndo_select_queue`: the TX queue for `skb` (the core caps it to
    /// the queues in use). `stack` is the stack's own choice
    /// (`netdev_pick_tx`), for a driver that only sometimes differs.
    /// Called only while the device has more than one TX queue.
    fn select_queue(_dev: &NetDev<Self>, _skb: &mut SkBuffRef<'_>, _stack: StackPick<'_>) -> u16 {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ndo_tx_timeout`: TX queue `queue` made no progress (softirq
    /// context, from the watchdog timer).
    fn tx_timeout(_dev: &NetDev<Self>, _queue: u32) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ndo_bpf` with `XDP_SETUP_PROG`: install `setup.prog()` as the
    /// device's native XDP program (none: remove it). The driver keeps
    /// its own reference ([`crate::linux::net::xdp::XdpProgRef::to_owned`]).
    /// Other `ndo_bpf` commands are refused with `EINVAL`.
    fn xdp_setup(_dev: &NetDev<Self>, _rtnl: &RtnlLocked<'_>, _setup: XdpSetup<'_>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ndo_bpf` with `XDP_SETUP_PROG_HW`: attach the offloaded program
    /// `setup.prog()` on the device (none: detach it). The driver keeps
    /// its own reference, as for [`Self::xdp_setup`]. Only for a device
    /// that joined a [`crate::linux::net::bpf_offload::BpfOffloadDev`].
    fn xdp_offload_setup(
        _dev: &NetDev<Self>,
        _rtnl: &RtnlLocked<'_>,
        _setup: XdpOffloadSetup<'_>,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Whether the device runs BPF helper `id` in offloaded programs;
    /// the verifier refuses programs calling others.
    fn xdp_offload_helper(_id: i32) -> bool {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ndo_bpf` with `BPF_OFFLOAD_MAP_ALLOC`: make the map on the
    /// device; returns the device's number for it (RTNL held, not the
    /// instance lock).
    fn xdp_map_alloc(_dev: &NetDev<Self>, _def: &MapDef) -> Result<u32> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ndo_bpf` with `BPF_OFFLOAD_MAP_FREE`: forget map `id` (RTNL
    /// held, not the instance lock; cannot fail).
    fn xdp_map_free(_dev: &NetDev<Self>, _id: u32) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// An element operation on offloaded map `id` (process context, may
    /// sleep; neither RTNL nor the instance lock).
    fn xdp_map_elem(_dev: &NetDev<Self>, _id: u32, _elem: MapElem<'_>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ndo_bpf` with `XDP_SETUP_XSK_POOL`: bind an AF_XDP pool to queue
    /// `setup.queue` in zero-copy mode (DMA-map it:
    /// [`crate::linux::net::xsk::XskPool::dma_map`]), or let the bound one
    /// (`setup.old`) go: the layer has put the pool in [`Self::xsk_slots`],
    /// or taken it out, and waits for the driver's copies to be dropped.
    fn xsk_setup(_dev: &NetDev<Self>, _rtnl: &RtnlLocked<'_>, _setup: XskSetup) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// The slots of the AF_XDP pools bound to the device's queues; a
    /// driver with [`Self::xsk_setup`] keeps them in its state.
    fn xsk_slots(&self) -> &XskSlots {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ndo_xsk_wakeup`: user space added to the rings of the AF_XDP
    /// socket bound to queue `queue` (any context, no RTNL): poll it.
    fn xsk_wakeup(_dev: &NetDev<Self>, _queue: u32) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `ndo_xdp_xmit`: send frames other devices' XDP programs redirected
    /// here, in order (softirq context); tell the device now if `flush`.
    fn xdp_xmit(_dev: &NetDev<Self>, _frames: &mut XdpXmitBatch<'_>, _flush: bool) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// tc flower offload ([`crate::linux::net::flower`]): carry out
    /// `cmd` (process context, may sleep; no RTNL). An error refuses it:
    /// a rule stays in software unless it is `skip_sw`.
    fn tc_flower(_dev: &NetDev<Self>, _cmd: FlowerCmd<'_>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// tc flower offload on a VXLAN device's ingress (the packets of
    /// its tunnels), for a device that registered
    /// [`crate::linux::net::flower::TunnelBlocks`]; as [`Self::tc_flower`].
    fn tc_flower_tunnel(_dev: &NetDev<Self>, _cmd: FlowerCmd<'_>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// TX shapers (`net_shaper_ops`, [`crate::linux::net::shaper`]):
    /// creates or updates `shaper`, which the core checked against
    /// [`NetDevOps::shaper_caps`]. Implement all four shaper methods.
    fn shaper_set(
        _dev: &NetDev<Self>,
        _locked: &DevLocked,
        _shaper: &Shaper,
        _ack: &mut ShaperAck<'_>,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Removes shaper `handle`: what it limited is no longer limited (a
    /// group node's leaves were moved to its parent before).
    fn shaper_delete(
        _dev: &NetDev<Self>,
        _locked: &DevLocked,
        _handle: Handle,
        _ack: &mut ShaperAck<'_>,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Hangs `leaves` (queue shapers, with their settings) below `node`
    /// (the device or a group node, with its settings), creating what
    /// does not exist yet.
    fn shaper_group(
        _dev: &NetDev<Self>,
        _locked: &DevLocked,
        _leaves: &[Shaper],
        _node: &Shaper,
        _ack: &mut ShaperAck<'_>,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// The hardware time stamping setting (`SIOCGHWTSTAMP`, ethtool's
    /// `tsconfig`).
    fn hwtstamp_get(_dev: &NetDev<Self>, _locked: &DevLocked) -> Result<HwTstamp> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Sets it (`SIOCSHWTSTAMP`): `ERANGE` for a kind the device cannot
    /// do; a filter may be widened (to what the device then does, written
    /// back into `cfg`). On error nothing changed.
    fn hwtstamp_set(_dev: &NetDev<Self>, _locked: &DevLocked, _cfg: &mut HwTstamp) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// What shapers of `scope` can do (none: the scope has no shapers).
    fn shaper_caps(_dev: &NetDev<Self>, _scope: Scope) -> ShaperCaps {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Per-queue stats (`netdev_stat_ops`): the counters of RX and TX
    /// queue `queue`, one of those in use. Implement with
    /// [`NetDevOps::base_stats`].
    fn queue_stats(
        _dev: &NetDev<Self>,
        _locked: &DevLocked,
        _queue: u32,
    ) -> (RxQueueStats, TxQueueStats) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// The base stats: what queues not in use counted, so that base plus
    /// the queues in use equals the device's totals.
    fn base_stats(_dev: &NetDev<Self>, _locked: &DevLocked) -> (RxQueueStats, TxQueueStats) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// A queue's memory, for queue management ([`crate::linux::net::queue_mgmt`]).
    type QueueMem: Send;

    /// The longest RX buffer a memory provider may ask a queue for
    /// (`rx_page_size`, a power of two; io_uring zero-copy RX's large
    /// chunks); a page: only pages. Read it with
    /// [`NetDev::rx_queue_buf_len`].
    // CAST: a page is far below 4 GiB.
    const MAX_RX_BUF_LEN: u32 = kernel::page::PAGE_SIZE as u32;

    /// Queue management: allocates new memory for RX queue `queue` (one
    /// in use) while the queue runs on its own. Implement with
    /// [`NetDevOps::queue_stop`] and [`NetDevOps::queue_start`].
    fn queue_mem_alloc(
        _dev: &NetDev<Self>,
        _locked: &DevLocked,
        _queue: u32,
    ) -> Result<KBox<Self::QueueMem>> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Stops RX queue `queue` of the running device and hands over its
    /// memory, which nothing uses any more. On error the queue is as it
    /// was, or the driver recovers it.
    fn queue_stop(
        _dev: &NetDev<Self>,
        _locked: &DevLocked,
        _queue: u32,
    ) -> Result<KBox<Self::QueueMem>> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Starts the stopped RX queue `queue` on `mem` (new, or what
    /// [`NetDevOps::queue_stop`] handed over).
    fn queue_start(
        _dev: &NetDev<Self>,
        _locked: &DevLocked,
        _queue: u32,
        _mem: KBox<Self::QueueMem>,
    ) -> Result<(), QueueStartError<Self::QueueMem>> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
}

/// The C-ABI entry points of a [`NetDevOps`] implementation.
pub(super) struct Adapter<T>(PhantomData<T>);

impl<T: NetDevOps> Adapter<T> {
    pub(super) const OPS: bindings::net_device_ops = {
        // SAFETY: All fields of `net_device_ops` are nullable function
        // pointers or integers, for which zero is valid ("not implemented").
        let mut ops: bindings::net_device_ops = unsafe { core::mem::zeroed() };
        ops.ndo_open = Some(Self::open);
        ops.ndo_stop = Some(Self::stop);
        ops.ndo_start_xmit = Some(Self::start_xmit);
        ops.ndo_validate_addr = Some(bindings::eth_validate_addr);
        if T::HAS_GET_STATS64 {
            ops.ndo_get_stats64 = Some(Self::get_stats64);
        }
        if T::HAS_SET_RX_MODE {
            ops.ndo_set_rx_mode_async = Some(Self::set_rx_mode);
        }
        if T::HAS_SET_MAC_ADDRESS {
            ops.ndo_set_mac_address = Some(Self::set_mac_address);
        }
        if T::HAS_CHANGE_MTU {
            ops.ndo_change_mtu = Some(Self::change_mtu);
        }
        if T::HAS_TX_TIMEOUT {
            ops.ndo_tx_timeout = Some(Self::tx_timeout);
        }
        if T::HAS_SET_FEATURES {
            ops.ndo_set_features = Some(Self::set_features);
        }
        if T::HAS_FIX_FEATURES {
            ops.ndo_fix_features = Some(Self::fix_features);
        }
        if T::HAS_SELECT_QUEUE {
            ops.ndo_select_queue = Some(Self::select_queue);
        }
        if T::HAS_XDP_SETUP {
            ops.ndo_bpf = Some(Self::bpf);
        }
        if T::HAS_XDP_XMIT {
            ops.ndo_xdp_xmit = Some(Self::xdp_xmit);
        }
        if T::HAS_XSK_WAKEUP {
            ops.ndo_xsk_wakeup = Some(Self::xsk_wakeup);
        }
        if T::HAS_HWTSTAMP_GET {
            ops.ndo_hwtstamp_get = Some(Self::hwtstamp_get);
        }
        if T::HAS_HWTSTAMP_SET {
            ops.ndo_hwtstamp_set = Some(Self::hwtstamp_set);
        }
        if T::HAS_TC_FLOWER {
            ops.ndo_setup_tc = Some(flower::setup_tc::<T>);
        }
        if T::HAS_SHAPER_SET {
            ops.net_shaper_ops = &ShaperAdapter::<T>::OPS;
        }
        ops
    };

    pub(super) const STAT_OPS: bindings::netdev_stat_ops = bindings::netdev_stat_ops {
        get_queue_stats_rx: if T::HAS_QUEUE_STATS {
            Some(Self::queue_stats_rx)
        } else {
            None
        },
        get_queue_stats_tx: if T::HAS_QUEUE_STATS {
            Some(Self::queue_stats_tx)
        } else {
            None
        },
        get_base_stats: if T::HAS_BASE_STATS {
            Some(Self::base_stats)
        } else {
            None
        },
    };

    /// # Safety
    ///
    /// `ndev` is a device set up by [`Registration`] for `T`, alive for
    /// `'a`.
    unsafe fn dev<'a>(ndev: *mut bindings::net_device) -> &'a NetDev<T> {
        // SAFETY: Per the function's contract.
        unsafe { NetDev::from_raw(ndev) }
    }

    /// # Safety
    ///
    /// As `dev`, called with the device's instance lock held (the qstats
    /// dump of an ops-locked device takes it, and not RTNL); `out` is
    /// valid for writes.
    unsafe extern "C" fn queue_stats_rx(
        ndev: *mut bindings::net_device,
        idx: c_int,
        out: *mut bindings::netdev_queue_stats_rx,
    ) {
        // SAFETY: Per the function's contract.
        let (dev, locked) = unsafe { (Self::dev(ndev), DevLocked::assume_held()) };
        // CAST: a queue index, not negative after `max(0)`.
        let (rx, _) = T::queue_stats(dev, locked, idx.max(0) as u32);
        // SAFETY: `out` is valid for writes; the core pre-filled the
        // fields a driver does not count.
        rx.write(unsafe { &mut *out });
    }

    /// # Safety
    ///
    /// As `queue_stats_rx`.
    unsafe extern "C" fn queue_stats_tx(
        ndev: *mut bindings::net_device,
        idx: c_int,
        out: *mut bindings::netdev_queue_stats_tx,
    ) {
        // SAFETY: Per the function's contract.
        let (dev, locked) = unsafe { (Self::dev(ndev), DevLocked::assume_held()) };
        // CAST: a queue index, not negative after `max(0)`.
        let (_, tx) = T::queue_stats(dev, locked, idx.max(0) as u32);
        // SAFETY: As in `queue_stats_rx`.
        tx.write(unsafe { &mut *out });
    }

    /// # Safety
    ///
    /// As `queue_stats_rx`; `rx` and `tx` are valid for writes.
    unsafe extern "C" fn base_stats(
        ndev: *mut bindings::net_device,
        rx: *mut bindings::netdev_queue_stats_rx,
        tx: *mut bindings::netdev_queue_stats_tx,
    ) {
        // SAFETY: Per the function's contract.
        let (dev, locked) = unsafe { (Self::dev(ndev), DevLocked::assume_held()) };
        let (r, t) = T::base_stats(dev, locked);
        // SAFETY: As in `queue_stats_rx`.
        unsafe {
            r.write(&mut *rx);
            t.write(&mut *tx);
        }
    }

    /// # Safety
    ///
    /// As `dev`, called with RTNL and the device's instance lock held
    /// (the device is ops-locked: [`Registration`] sets
    /// `request_ops_lock`).
    unsafe extern "C" fn open(ndev: *mut bindings::net_device) -> c_int {
        // SAFETY: Per the function's contract.
        let (dev, rtnl) = unsafe { (Self::dev(ndev), RtnlLocked::assume_held()) };
        from_result(|| {
            T::open(dev, rtnl)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As `open`.
    unsafe extern "C" fn stop(ndev: *mut bindings::net_device) -> c_int {
        // SAFETY: Per the function's contract.
        let (dev, rtnl) = unsafe { (Self::dev(ndev), RtnlLocked::assume_held()) };
        from_result(|| {
            T::stop(dev, rtnl)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As `dev`; `skb` is a socket buffer the core hands over.
    unsafe extern "C" fn start_xmit(
        skb: *mut bindings::sk_buff,
        ndev: *mut bindings::net_device,
    ) -> bindings::netdev_tx_t {
        // SAFETY: Per the function's contract.
        let dev = unsafe { Self::dev(ndev) };
        // SAFETY: The core passes ownership of a valid skb.
        if let Some(skb) = unsafe { SkBuff::from_raw(skb) } {
            T::start_xmit(dev, skb);
        }
        bindings::netdev_tx_NETDEV_TX_OK
    }

    /// # Safety
    ///
    /// As `dev`; `skb` is a socket buffer the core lends for the call;
    /// `sb_dev` is null or a live device.
    unsafe extern "C" fn select_queue(
        ndev: *mut bindings::net_device,
        skb: *mut bindings::sk_buff,
        sb_dev: *mut bindings::net_device,
    ) -> u16 {
        // SAFETY: Per the function's contract.
        let dev = unsafe { Self::dev(ndev) };
        // SAFETY: The core lends a valid skb for the call; it stays the
        // core's (`SkBuffRef` never frees it).
        let Some(mut skb) = (unsafe { SkBuffRef::from_raw(skb) }) else {
            return 0;
        };
        let stack = StackPick {
            ndev,
            sb_dev,
            _call: PhantomData,
        };
        T::select_queue(dev, &mut skb, stack)
    }

    /// # Safety
    ///
    /// As `dev`; `stats` is valid for reads and writes, but may be only
    /// 4-byte aligned: `rtnl_fill_stats` hands the driver the payload of
    /// a netlink attribute, which `nla_reserve_64bit` pads to 8 bytes
    /// only where unaligned access is slow (not on x86).
    unsafe extern "C" fn get_stats64(
        ndev: *mut bindings::net_device,
        stats: *mut bindings::rtnl_link_stats64,
    ) {
        // SAFETY: Per the function's contract.
        let dev = unsafe { Self::dev(ndev) };
        let mut s = LinkStats::default();
        T::get_stats64(dev, &mut s);
        // SAFETY: `stats` is valid for reads per the contract; read
        // unaligned, since it may not be 8-byte aligned (no reference to
        // it is ever made).
        let mut out = unsafe { stats.read_unaligned() };
        out.rx_packets = s.rx_packets;
        out.tx_packets = s.tx_packets;
        out.rx_bytes = s.rx_bytes;
        out.tx_bytes = s.tx_bytes;
        out.rx_errors = s.rx_errors;
        out.rx_crc_errors = s.rx_crc_errors;
        out.tx_errors = s.tx_errors;
        out.rx_dropped = s.rx_dropped;
        out.tx_dropped = s.tx_dropped;
        // SAFETY: `stats` is valid for writes per the contract; written
        // unaligned as it was read.
        unsafe { stats.write_unaligned(out) };
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
        let (dev, rtnl) = unsafe { (Self::dev(ndev), RtnlLocked::assume_held()) };
        // SAFETY: `HwAddrList` is `repr(transparent)` over the C list, live
        // for this call.
        let mc = unsafe { &*mc.cast::<HwAddrList>() };
        from_result(|| {
            T::set_rx_mode(dev, rtnl, mc)?;
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
        let (dev, rtnl) = unsafe { (Self::dev(ndev), RtnlLocked::assume_held()) };
        // SAFETY: `addr` is a `struct sockaddr` whose data holds the address.
        let sa = unsafe { &*addr.cast::<bindings::sockaddr>() };
        let mut mac = [0u8; 6];
        for (m, &b) in mac.iter_mut().zip(sa.sa_data.iter()) {
            *m = b;
        }
        if !is_valid_ether_addr(&mac) {
            // CAST: EADDRNOTAVAIL (99) fits a c_int; the kernel crate has no
            // code for it.
            return -(kernel::bindings::EADDRNOTAVAIL as c_int);
        }
        from_result(|| {
            T::set_mac_address(dev, rtnl, mac)?;
            dev.set_mac(rtnl, &mac);
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `ndev` as in `dev`, called with the device's instance lock held
    /// (`dev_get_hwtstamp` and ethtool's `tsconfig` take it); `cfg` is
    /// live for the call.
    unsafe extern "C" fn hwtstamp_get(
        ndev: *mut bindings::net_device,
        cfg: *mut bindings::kernel_hwtstamp_config,
    ) -> c_int {
        // SAFETY: Per the function's contract.
        let (dev, locked) = unsafe { (Self::dev(ndev), DevLocked::assume_held()) };
        from_result(|| {
            let current = T::hwtstamp_get(dev, locked)?;
            // SAFETY: `cfg` is live for the call.
            unsafe { current.write(cfg) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As `hwtstamp_get` (`dev_set_hwtstamp` takes the lock).
    unsafe extern "C" fn hwtstamp_set(
        ndev: *mut bindings::net_device,
        cfg: *mut bindings::kernel_hwtstamp_config,
        _extack: *mut bindings::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: Per the function's contract.
        let (dev, locked) = unsafe { (Self::dev(ndev), DevLocked::assume_held()) };
        from_result(|| {
            // SAFETY: `cfg` is live for the call.
            let mut want = unsafe { HwTstamp::read(cfg) };
            T::hwtstamp_set(dev, locked, &mut want)?;
            // SAFETY: As above.
            unsafe { want.write(cfg) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As `open`.
    unsafe extern "C" fn change_mtu(ndev: *mut bindings::net_device, mtu: c_int) -> c_int {
        // SAFETY: Per the function's contract.
        let (dev, rtnl) = unsafe { (Self::dev(ndev), RtnlLocked::assume_held()) };
        from_result(|| {
            let mtu = u32::try_from(mtu).map_err(|_| EINVAL)?;
            T::change_mtu(dev, rtnl, mtu)?;
            // SAFETY: Writing a plain field of the live device under RTNL,
            // as `WRITE_ONCE(dev->mtu, ...)` does in C.
            unsafe { core::ptr::write_volatile(&raw mut (*ndev).mtu, mtu) };
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
        let (dev, rtnl) = unsafe { (Self::dev(ndev), RtnlLocked::assume_held()) };
        from_result(|| {
            T::set_features(dev, rtnl, Features::from_raw(features))?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As `open`.
    unsafe extern "C" fn fix_features(
        ndev: *mut bindings::net_device,
        features: bindings::netdev_features_t,
    ) -> bindings::netdev_features_t {
        // SAFETY: Per the function's contract.
        let (dev, rtnl) = unsafe { (Self::dev(ndev), RtnlLocked::assume_held()) };
        let asked = Features::from_raw(features);
        let kept: bindings::netdev_features_t = T::fix_features(dev, rtnl, asked).into();
        // Bits `Features` does not name pass through untouched.
        features & !(bindings::netdev_features_t::from(asked) & !kept)
    }

    /// # Safety
    ///
    /// As `open` (the core holds RTNL and the device's instance lock; for
    /// `BPF_OFFLOAD_MAP_ALLOC/FREE` RTNL only); `bpf` is the live request.
    unsafe extern "C" fn bpf(
        ndev: *mut bindings::net_device,
        bpf: *mut bindings::netdev_bpf,
    ) -> c_int {
        // SAFETY: Per the function's contract.
        let (dev, rtnl) = unsafe { (Self::dev(ndev), RtnlLocked::assume_held()) };
        // SAFETY: `bpf` is live for the call.
        let bpf = unsafe { &mut *bpf };
        if bpf.command == bindings::bpf_netdev_command_XDP_SETUP_XSK_POOL && T::HAS_XSK_SETUP {
            // SAFETY: For `XDP_SETUP_XSK_POOL` the request holds the pool
            // (or null) the core binds to the queue, as `setup` needs.
            let ret = unsafe {
                let x = &bpf.__bindgen_anon_1.xsk;
                dev.data()
                    .xsk_slots()
                    .setup(x.pool, x.queue_id, |setup| T::xsk_setup(dev, rtnl, setup))
            };
            return from_result(|| ret.map(|()| 0));
        }
        let offload = T::HAS_XDP_OFFLOAD_SETUP;
        match bpf.command {
            bindings::bpf_netdev_command_XDP_SETUP_PROG => (),
            bindings::bpf_netdev_command_XDP_SETUP_PROG_HW if offload => (),
            bindings::bpf_netdev_command_BPF_OFFLOAD_MAP_ALLOC if offload => {
                // SAFETY: For the map commands the request holds the live
                // map; the core calls them only for devices that joined
                // an offload device, with RTNL.
                return from_result(|| unsafe {
                    BpfOffloadAdapter::<T>::map_alloc(
                        dev,
                        bpf.__bindgen_anon_1.__bindgen_anon_2.offmap,
                    )
                    .map(|()| 0)
                });
            }
            bindings::bpf_netdev_command_BPF_OFFLOAD_MAP_FREE if offload => {
                // SAFETY: As above, for a map `map_alloc` made.
                unsafe {
                    BpfOffloadAdapter::<T>::map_free(
                        dev,
                        bpf.__bindgen_anon_1.__bindgen_anon_2.offmap,
                    )
                };
                return 0;
            }
            _ => return EINVAL.to_errno(),
        }
        // SAFETY: For `XDP_SETUP_PROG(_HW)` the request holds the program
        // (or null) and the extended ack.
        let (prog, extack) = unsafe {
            let p = &bpf.__bindgen_anon_1.__bindgen_anon_1;
            (p.prog, p.extack)
        };
        let hw = bpf.command == bindings::bpf_netdev_command_XDP_SETUP_PROG_HW;
        from_result(|| {
            if hw {
                // SAFETY: The core holds RTNL and the instance lock, and
                // checked that a program is bound to this device's
                // offload device; both pointers live for the call.
                unsafe { BpfOffloadAdapter::<T>::setup(dev, rtnl, prog, extack)? };
            } else {
                // SAFETY: Both live for the call.
                T::xdp_setup(dev, rtnl, unsafe { XdpSetup::from_raw(prog, extack) })?;
            }
            // On success the driver owns the reference the core took for
            // it; it took its own, so this one goes back.
            if !prog.is_null() {
                // SAFETY: The core's reference, handed to us on success.
                unsafe { bindings::bpf_prog_put(prog) };
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As `dev` (softirq context, no RTNL); `frames` holds `n` frames the
    /// core hands over.
    unsafe extern "C" fn xdp_xmit(
        ndev: *mut bindings::net_device,
        n: c_int,
        frames: *mut *mut bindings::xdp_frame,
        flags: u32,
    ) -> c_int {
        // SAFETY: Per the function's contract.
        let dev = unsafe { Self::dev(ndev) };
        // SAFETY: Per the function's contract.
        unsafe {
            xdp_xmit_call(n, frames, flags, |batch, flush| {
                T::xdp_xmit(dev, batch, flush)
            })
        }
    }

    /// # Safety
    ///
    /// As `dev` (any context, no RTNL).
    unsafe extern "C" fn xsk_wakeup(
        ndev: *mut bindings::net_device,
        queue: u32,
        _flags: u32,
    ) -> c_int {
        // SAFETY: Per the function's contract.
        let dev = unsafe { Self::dev(ndev) };
        from_result(|| T::xsk_wakeup(dev, queue).map(|()| 0))
    }

    /// # Safety
    ///
    /// As `dev` (from the watchdog timer, without RTNL).
    unsafe extern "C" fn tx_timeout(ndev: *mut bindings::net_device, queue: c_uint) {
        // SAFETY: Per the function's contract.
        T::tx_timeout(unsafe { Self::dev(ndev) }, queue);
    }
}
