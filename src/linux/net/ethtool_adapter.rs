// SPDX-License-Identifier: GPL-2.0

//! The C-ABI entry points of an [`EthtoolOps`] implementation, installed
//! in a net device's `ethtool_ops`: only the operations the driver
//! implements are filled in.

use core::{fmt, marker::PhantomData};

use kernel::{
    error::from_result,
    ffi::{c_int, c_void},
    prelude::*,
};

use crate::linux::net::{
    ethtool::{
        Coalesce, EthCtrlStats, EthMacStats, EthtoolOps, FlowAction, FlowRule, HashFields,
        HashFlow, InputXfrm, PortType, Rings, RuleFlow, Rxfh, StatsSink, TcpDataSplit,
    },
    instance_lock::{DevLocked, RtnlLocked},
    netdev::NetDev,
};
use crate::linux::{bindings, EOPNOTSUPP_ERRNO};

/// Length of an ethtool string (`ETH_GSTRING_LEN`).
const GSTRING_LEN: usize = 32;
/// `ETH_SS_TEST`: the string set of `ethtool -t`.
const SS_TEST: u32 = 0;
/// `ETH_SS_STATS`: the string set of `ethtool -S`.
const SS_STATS: u32 = 1;
/// `ETH_SS_PRIV_FLAGS`: the names of the private flags.
const SS_PRIV_FLAGS: u32 = 2;

/// The ops ethtool calls with RTNL held besides the instance lock
/// (`ETHTOOL_OP_NEEDS_RTNL_*` of `include/linux/ethtool.h`, `BIT()`
/// macros bindgen does not see): those that rebuild the queues and may
/// change the features (`set_channels`, `set_rings`, `set_priv_flags`,
/// `self_test`), and so take a [`RtnlLocked`]. The others run under the
/// instance lock alone and get a [`DevLocked`].
const OPS_NEEDING_RTNL: u32 = {
    const SPFLAGS: u32 = 1 << 1;
    const SRINGPARAM: u32 = 1 << 2;
    const SCHANNELS: u32 = 1 << 3;
    const TEST: u32 = 1 << 9;
    SPFLAGS | SRINGPARAM | SCHANNELS | TEST
};

/// `ETH_RSS_HASH_TOP`: the Toeplitz hash function.
const RSS_HASH_TOP: u8 = 1 << 0;
/// `ETH_RSS_HASH_NO_CHANGE`.
const RSS_HASH_NO_CHANGE: u8 = 0;

/// Counts the stats without storing them.
struct Counter(usize);

impl StatsSink for Counter {
    fn stat(&mut self, _name: fmt::Arguments<'_>, _value: u64) {
        self.0 += 1;
    }

    fn wants_values(&self) -> bool {
        false
    }
}

/// Writes names into ethtool's string table, or values into its array.
struct Filler<'a> {
    names: Option<&'a mut [u8]>,
    values: Option<&'a mut [u64]>,
    index: usize,
}

/// A `fmt::Write` into a fixed slot that truncates.
struct Slot<'a>(&'a mut [u8], usize);

impl fmt::Write for Slot<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for &b in s.as_bytes() {
            // Keep the last byte for the NUL terminator.
            if self.1 + 1 < self.0.len() {
                self.0[self.1] = b;
                self.1 += 1;
            }
        }
        Ok(())
    }
}

impl StatsSink for Filler<'_> {
    fn stat(&mut self, name: fmt::Arguments<'_>, value: u64) {
        let i = self.index;
        self.index += 1;
        if let Some(names) = self.names.as_deref_mut() {
            if let Some(slot) = names.get_mut(i * GSTRING_LEN..(i + 1) * GSTRING_LEN) {
                slot.fill(0);
                let _ = fmt::write(&mut Slot(slot, 0), name);
            }
        }
        if let Some(v) = self.values.as_deref_mut().and_then(|v| v.get_mut(i)) {
            *v = value;
        }
    }

    fn wants_values(&self) -> bool {
        self.values.is_some()
    }
}

/// Copies `src` into the C string `dst`, truncating, NUL-terminated.
fn copy_cstr(dst: &mut [u8], src: &[u8]) {
    let n = src.len().min(dst.len().saturating_sub(1));
    dst[..n].copy_from_slice(&src[..n]);
    dst[n..].fill(0);
}

/// The C-ABI entry points of an [`EthtoolOps`] implementation.
pub(super) struct EthtoolAdapter<T>(PhantomData<T>);

impl<T: EthtoolOps> EthtoolAdapter<T> {
    /// The ops table to install in the net device.
    pub(super) const OPS: bindings::ethtool_ops = {
        // SAFETY: All-zero is a valid `ethtool_ops`: null callbacks and no
        // supported parameters.
        let mut ops: bindings::ethtool_ops = unsafe { core::mem::zeroed() };
        ops.get_link = Some(bindings::ethtool_op_get_link);
        if T::HAS_DRVINFO {
            ops.get_drvinfo = Some(Self::get_drvinfo);
        }
        if T::HAS_LINK_SETTINGS {
            ops.get_link_ksettings = Some(Self::get_link_ksettings);
        }
        if T::HAS_STATS || !T::SELF_TESTS.is_empty() || T::HAS_PRIV_FLAGS {
            ops.get_sset_count = Some(Self::get_sset_count);
            ops.get_strings = Some(Self::get_strings);
        }
        if T::HAS_STATS {
            ops.get_ethtool_stats = Some(Self::get_ethtool_stats);
        }
        if T::HAS_PRIV_FLAGS {
            ops.get_priv_flags = Some(Self::get_priv_flags);
        }
        if T::HAS_SET_PRIV_FLAGS {
            ops.set_priv_flags = Some(Self::set_priv_flags);
        }
        if T::HAS_CHANNELS {
            ops.get_channels = Some(Self::get_channels);
            ops.get_rx_ring_count = Some(Self::rx_ring_count);
        }
        if T::HAS_SET_CHANNELS {
            ops.set_channels = Some(Self::set_channels);
        }
        if T::HAS_RINGS {
            ops.get_ringparam = Some(Self::get_ringparam);
        }
        if T::HAS_SET_RINGS {
            ops.set_ringparam = Some(Self::set_ringparam);
        }
        if T::HAS_RX_COPYBREAK {
            ops.get_tunable = Some(Self::get_tunable);
        }
        if T::HAS_SET_RX_COPYBREAK {
            ops.set_tunable = Some(Self::set_tunable);
        }
        ops.supported_coalesce_params = T::SUPPORTED_COALESCE;
        ops.op_needs_rtnl = OPS_NEEDING_RTNL;
        if T::HDS_THRESH_MAX != 0 {
            ops.supported_ring_params =
                bindings::ethtool_supported_ring_param_ETHTOOL_RING_USE_TCP_DATA_SPLIT
                    | bindings::ethtool_supported_ring_param_ETHTOOL_RING_USE_HDS_THRS;
        }
        if T::HAS_TS_INFO {
            ops.get_ts_info = Some(Self::get_ts_info);
        }
        if T::HAS_COALESCE {
            ops.get_coalesce = Some(Self::get_coalesce);
        }
        if T::HAS_SET_COALESCE {
            ops.set_coalesce = Some(Self::set_coalesce);
        }
        if T::HAS_SELF_TEST {
            ops.self_test = Some(Self::self_test);
        }
        if T::HAS_RSS {
            ops.get_rxfh_key_size = Some(Self::rss_key_size);
            ops.get_rxfh_indir_size = Some(Self::rss_table_size);
            ops.rxfh_indir_space = Self::RSS_TABLE_SPACE;
            ops.get_rxfh = Some(Self::get_rxfh);
        }
        if T::HAS_ETH_MAC_STATS {
            ops.get_eth_mac_stats = Some(Self::get_eth_mac_stats);
        }
        if T::HAS_ETH_CTRL_STATS {
            ops.get_eth_ctrl_stats = Some(Self::get_eth_ctrl_stats);
        }
        // The bit fields: `supported_input_xfrm` (bits 0-7),
        // `cap_link_lanes_supported` (8), `rxfh_per_ctx_fields` (9),
        // `rxfh_per_ctx_key` (10), `cap_rss_rxnfc_adds` (11); checked
        // against bindgen's accessors in `check_ops`.
        let mut caps = Self::supported_input_xfrm() as u16;
        if T::RSS_PER_CONTEXT_FIELDS {
            caps |= 1 << 9;
        }
        if T::HAS_CREATE_RSS_CONTEXT {
            // Each context has its own key (`create/modify_rss_context`).
            caps |= 1 << 10;
        }
        if T::HAS_SET_FLOW_RULE {
            // `FlowAction::Rss` carries a queue offset.
            caps |= 1 << 11;
        }
        ops._bitfield_1 = bindings::__BindgenBitfieldUnit::new(caps.to_le_bytes());
        if T::HAS_CREATE_RSS_CONTEXT {
            ops.rxfh_max_num_contexts = T::RSS_CONTEXTS;
            ops.create_rxfh_context = Some(Self::create_rxfh_context);
            ops.modify_rxfh_context = Some(Self::modify_rxfh_context);
            ops.remove_rxfh_context = Some(Self::remove_rxfh_context);
        }
        if T::HAS_FLOW_RULES {
            ops.get_rxnfc = Some(Self::get_rxnfc);
        }
        if T::HAS_SET_FLOW_RULE {
            ops.set_rxnfc = Some(Self::set_rxnfc);
        }
        if T::HAS_RXFH_FIELDS {
            ops.get_rxfh_fields = Some(Self::get_rxfh_fields);
        }
        if T::HAS_SET_RXFH_FIELDS {
            ops.set_rxfh_fields = Some(Self::set_rxfh_fields);
        }
        if T::HAS_SET_RSS {
            ops.set_rxfh = Some(Self::set_rxfh);
        }
        ops
    };

    /// # Safety
    ///
    /// `ndev` is a device registered by `Registration<T>`, alive for the
    /// call, which ethtool makes with the device's instance lock held (the
    /// device is ops-locked) and not necessarily RTNL.
    unsafe fn dev<'a>(ndev: *mut bindings::net_device) -> (&'a NetDev<T>, &'a DevLocked) {
        // SAFETY: Per the function's contract.
        unsafe { (NetDev::from_raw(ndev), DevLocked::assume_held()) }
    }

    /// # Safety
    ///
    /// As `dev`, for an op whose `ETHTOOL_OP_NEEDS_RTNL_*` bit
    /// [`Self::OPS`] sets ([`OPS_NEEDING_RTNL`]): ethtool holds RTNL too.
    unsafe fn dev_rtnl<'a>(ndev: *mut bindings::net_device) -> (&'a NetDev<T>, &'a RtnlLocked<'a>) {
        // SAFETY: Per the function's contract.
        unsafe { (NetDev::from_raw(ndev), RtnlLocked::assume_held()) }
    }

    /// # Safety
    ///
    /// `ndev` as in `dev` (the lock may not be held: the core asks for
    /// time stamping information from socket options too); `info` is
    /// valid for writes.
    unsafe extern "C" fn get_ts_info(
        ndev: *mut bindings::net_device,
        info: *mut bindings::kernel_ethtool_ts_info,
    ) -> c_int {
        // SAFETY: `ndev` is a device registered for `T`, alive for the
        // call (as in `dev`, without assuming its lock).
        let dev = unsafe { NetDev::<T>::from_raw(ndev) };
        // SAFETY: `info` is valid for writes.
        unsafe { T::ts_info(dev).write(info) };
        0
    }

    /// # Safety
    ///
    /// As `dev`; `ec` is valid for writes.
    unsafe extern "C" fn get_coalesce(
        ndev: *mut bindings::net_device,
        ec: *mut bindings::ethtool_coalesce,
        _kec: *mut bindings::kernel_ethtool_coalesce,
        _extack: *mut bindings::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: Per the function's contract.
        let (dev, locked) = unsafe { Self::dev(ndev) };
        let c = T::coalesce(dev, locked);
        // SAFETY: `ec` is valid for writes.
        let ec = unsafe { &mut *ec };
        ec.rx_coalesce_usecs = c.rx_usecs;
        ec.rx_max_coalesced_frames = c.rx_max_frames;
        ec.tx_coalesce_usecs = c.tx_usecs;
        ec.tx_max_coalesced_frames = c.tx_max_frames;
        0
    }

    /// # Safety
    ///
    /// As `dev`; `ec` is valid for reads. The core has already refused
    /// parameters outside `supported_coalesce_params`.
    unsafe extern "C" fn set_coalesce(
        ndev: *mut bindings::net_device,
        ec: *mut bindings::ethtool_coalesce,
        _kec: *mut bindings::kernel_ethtool_coalesce,
        _extack: *mut bindings::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: `ec` is valid for reads.
        let ec = unsafe { &*ec };
        let c = Coalesce {
            rx_usecs: ec.rx_coalesce_usecs,
            rx_max_frames: ec.rx_max_coalesced_frames,
            tx_usecs: ec.tx_coalesce_usecs,
            tx_max_frames: ec.tx_max_coalesced_frames,
        };
        // SAFETY: Per the function's contract.
        let (dev, locked) = unsafe { Self::dev(ndev) };
        from_result(|| {
            T::set_coalesce(dev, locked, c)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As `dev`; `test` is valid for reads and writes and `data` has room
    /// for `get_sset_count(ETH_SS_TEST)` results.
    unsafe extern "C" fn self_test(
        ndev: *mut bindings::net_device,
        test: *mut bindings::ethtool_test,
        data: *mut u64,
    ) {
        // SAFETY: `test` is valid for reads and writes.
        let test = unsafe { &mut *test };
        let offline = test.flags & bindings::ethtool_test_flags_ETH_TEST_FL_OFFLINE != 0;
        // SAFETY: The core sized `data` from `get_sset_count(ETH_SS_TEST)`,
        // which is `SELF_TESTS.len()`.
        let results = unsafe { core::slice::from_raw_parts_mut(data, T::SELF_TESTS.len()) };
        results.fill(0);
        // SAFETY: Per the function's contract.
        let (dev, rtnl) = unsafe { Self::dev_rtnl(ndev) };
        T::self_test(dev, rtnl, offline, results);
        if results.iter().any(|&r| r != 0) {
            test.flags |= bindings::ethtool_test_flags_ETH_TEST_FL_FAILED;
        }
    }

    /// # Safety
    ///
    /// As `dev`.
    unsafe extern "C" fn rx_ring_count(ndev: *mut bindings::net_device) -> u32 {
        // SAFETY: Per the function's contract.
        let (dev, locked) = unsafe { Self::dev(ndev) };
        T::channels(dev, locked).1
    }

    extern "C" fn rss_key_size(_ndev: *mut bindings::net_device) -> u32 {
        // CAST: a key length the driver declares (tens of bytes).
        T::RSS_KEY_LEN as u32
    }

    /// # Safety
    ///
    /// `ndev` is one of `T`'s registered devices (the core calls this
    /// under RTNL or the device's instance lock, for a device whose ops
    /// these are).
    unsafe extern "C" fn rss_table_size(ndev: *mut bindings::net_device) -> u32 {
        // SAFETY: Per the function's contract.
        let dev = unsafe { NetDev::<T>::from_raw(ndev) };
        T::rss_table_len(dev).min(Self::RSS_TABLE_SPACE)
    }

    /// [`EthtoolOps::RSS_TABLE_LEN`] as the core's `u32`.
    // CAST: a table length the driver declares (hundreds of entries).
    const RSS_TABLE_SPACE: u32 = T::RSS_TABLE_LEN as u32;

    /// # Safety
    ///
    /// As `dev`; `param` is valid, its non-null `indir` and `key` point at
    /// the sizes reported above.
    unsafe extern "C" fn get_rxfh(
        ndev: *mut bindings::net_device,
        param: *mut bindings::ethtool_rxfh_param,
    ) -> c_int {
        // SAFETY: `param` is valid for reads and writes.
        let param = unsafe { &mut *param };
        param.hfunc = RSS_HASH_TOP;
        let (mut table, mut key) = ([0u32; 0], [0u8; 0]);
        let table = if param.indir.is_null() {
            &mut table[..]
        } else {
            // SAFETY: ethtool allocated `indir_size` entries, which it
            // had from `get_rxfh_indir_size`.
            unsafe { core::slice::from_raw_parts_mut(param.indir, Self::indir_len(param)) }
        };
        let key = if param.key.is_null() {
            &mut key[..]
        } else {
            // SAFETY: ethtool sized `key` by `get_rxfh_key_size`.
            unsafe { core::slice::from_raw_parts_mut(param.key, T::RSS_KEY_LEN) }
        };
        // SAFETY: Per the function's contract.
        let (dev, locked) = unsafe { Self::dev(ndev) };
        T::rss(dev, locked, Rxfh { table, key });
        if T::HAS_SET_RSS {
            param.input_xfrm = T::rss_input_xfrm(dev, locked).bits();
        }
        0
    }

    /// The `RXH_XFRM_*` bits of [`EthtoolOps::INPUT_XFRMS`].
    const fn supported_input_xfrm() -> u8 {
        let mut bits = 0;
        let mut i = 0;
        while i < T::INPUT_XFRMS.len() {
            bits |= T::INPUT_XFRMS[i].bits();
            i += 1;
        }
        bits
    }

    /// # Safety
    ///
    /// As `get_rxfh`, for reads.
    unsafe extern "C" fn set_rxfh(
        ndev: *mut bindings::net_device,
        param: *mut bindings::ethtool_rxfh_param,
        _extack: *mut bindings::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: `param` is valid for reads.
        let param = unsafe { &*param };
        if (param.hfunc != RSS_HASH_NO_CHANGE && param.hfunc != RSS_HASH_TOP)
            || param.rss_context != 0
        {
            return EOPNOTSUPP_ERRNO;
        }
        let Ok(xfrm) = Self::xfrm_of(param) else {
            return EOPNOTSUPP_ERRNO;
        };
        // SAFETY: Per the function's contract.
        let (table, key) = unsafe { Self::given(param) };
        // SAFETY: Per the function's contract.
        let (dev, locked) = unsafe { Self::dev(ndev) };
        from_result(|| {
            T::set_rss(dev, locked, table, key, xfrm)?;
            Ok(0)
        })
    }

    /// The table and key a request gives (each `None` if unchanged), or
    /// `EOPNOTSUPP` for a hash function or input transform other than
    /// Toeplitz as it is.
    ///
    /// # Safety
    ///
    /// `param`'s non-null `indir` and `key` point at the sizes reported
    /// above.
    unsafe fn given(param: &bindings::ethtool_rxfh_param) -> (Option<&[u32]>, Option<&[u8]>) {
        let table = (!param.indir.is_null()).then(|| {
            // SAFETY: As in `get_rxfh`.
            unsafe { core::slice::from_raw_parts(param.indir, Self::indir_len(param)) }
        });
        let key = (!param.key.is_null()).then(|| {
            // SAFETY: ethtool sized `key` by `get_rxfh_key_size`.
            unsafe { core::slice::from_raw_parts(param.key, T::RSS_KEY_LEN) }
        });
        (table, key)
    }

    /// Entries of a request's `indir`: what the core allocated, never
    /// more than the table space (`get_rxfh_indir_size` caps it there).
    fn indir_len(param: &bindings::ethtool_rxfh_param) -> usize {
        param.indir_size.min(Self::RSS_TABLE_SPACE) as usize
    }

    /// Whether a context request keeps to Toeplitz.
    fn toeplitz(param: &bindings::ethtool_rxfh_param) -> bool {
        param.hfunc == RSS_HASH_NO_CHANGE || param.hfunc == RSS_HASH_TOP
    }

    /// The input transform a request asks for (`None`: no change), or
    /// `Err` for one the driver does not offer (the core lets through
    /// only the bits `supported_input_xfrm` names, or "no change").
    fn xfrm_of(
        param: &bindings::ethtool_rxfh_param,
    ) -> core::result::Result<Option<InputXfrm>, ()> {
        match u32::from(param.input_xfrm) {
            bindings::RXH_XFRM_NO_CHANGE => Ok(None),
            // CAST: below 256, the field's own width.
            bits => match InputXfrm::from_bits(bits as u8) {
                Some(x) if x == InputXfrm::None || T::INPUT_XFRMS.contains(&x) => Ok(Some(x)),
                _ => Err(()),
            },
        }
    }

    /// The table and key the core keeps for a context.
    ///
    /// # Safety
    ///
    /// `ctx` is a live context of this device, its storage sized by its
    /// `indir_size` and `key_size`, not otherwise borrowed for `'a`.
    unsafe fn ctx_storage<'a>(ctx: *mut bindings::ethtool_rxfh_context) -> Rxfh<'a> {
        // SAFETY: `ctx` is valid; plain field reads.
        let (indir_size, key_size) = unsafe { ((*ctx).indir_size, (*ctx).key_size) };
        // SAFETY: The core allocated `indir_size` entries and `key_size`
        // bytes after the context (`ethtool_rxfh_context_indir/key`).
        unsafe {
            Rxfh {
                table: core::slice::from_raw_parts_mut(
                    bindings::rust_ext_ethtool_rxfh_context_indir(ctx),
                    indir_size as usize,
                ),
                key: core::slice::from_raw_parts_mut(
                    bindings::rust_ext_ethtool_rxfh_context_key(ctx),
                    key_size as usize,
                ),
            }
        }
    }

    /// Whether [`Self::OPS`]'s hand-set bit fields mean what it says
    /// (the C layout as bindgen sees it).
    pub(super) fn check_ops() -> bool {
        let ops = &Self::OPS;
        u32::from(T::HAS_CREATE_RSS_CONTEXT) == ops.rxfh_per_ctx_key()
            && u32::from(T::HAS_SET_FLOW_RULE) == ops.cap_rss_rxnfc_adds()
            && ops.supported_input_xfrm() == u32::from(Self::supported_input_xfrm())
            && ops.cap_link_lanes_supported() == 0
            && ops.rxfh_per_ctx_fields() == u32::from(T::RSS_PER_CONTEXT_FIELDS)
    }

    /// # Safety
    ///
    /// As `dev`; `out` is valid for writes, its counters preset to
    /// `ETHTOOL_STAT_NOT_SET` (those left so are not reported).
    unsafe extern "C" fn get_eth_mac_stats(
        ndev: *mut bindings::net_device,
        out: *mut bindings::ethtool_eth_mac_stats,
    ) {
        // SAFETY: Per the function's contract.
        let (dev, locked) = unsafe { Self::dev(ndev) };
        let s: EthMacStats = T::eth_mac_stats(dev, locked);
        // SAFETY: `out` is valid for writes; `stats` is the named view of
        // the counters (`struct_group`), plain integers.
        let o = unsafe { &mut (*out).__bindgen_anon_1.stats };
        let set = |field: &mut u64, v: Option<u64>| {
            if let Some(v) = v {
                *field = v;
            }
        };
        set(&mut o.FramesTransmittedOK, s.frames_tx);
        set(&mut o.FramesReceivedOK, s.frames_rx);
        set(&mut o.FrameCheckSequenceErrors, s.fcs_errors);
        set(&mut o.OctetsTransmittedOK, s.octets_tx);
        set(&mut o.OctetsReceivedOK, s.octets_rx);
        set(&mut o.MulticastFramesXmittedOK, s.multicast_tx);
        set(&mut o.BroadcastFramesXmittedOK, s.broadcast_tx);
        set(&mut o.MulticastFramesReceivedOK, s.multicast_rx);
        set(&mut o.BroadcastFramesReceivedOK, s.broadcast_rx);
    }

    /// # Safety
    ///
    /// As `get_eth_mac_stats`.
    unsafe extern "C" fn get_eth_ctrl_stats(
        ndev: *mut bindings::net_device,
        out: *mut bindings::ethtool_eth_ctrl_stats,
    ) {
        // SAFETY: Per the function's contract.
        let (dev, locked) = unsafe { Self::dev(ndev) };
        let s: EthCtrlStats = T::eth_ctrl_stats(dev, locked);
        // SAFETY: As in `get_eth_mac_stats`.
        let o = unsafe { &mut (*out).__bindgen_anon_1.stats };
        if let Some(v) = s.frames_tx {
            o.MACControlFramesTransmitted = v;
        }
        if let Some(v) = s.frames_rx {
            o.MACControlFramesReceived = v;
        }
    }

    /// # Safety
    ///
    /// As `dev`; `ctx` is the new context (storage allocated, not yet
    /// filled), `rxfh` valid for reads as in `set_rxfh`.
    unsafe extern "C" fn create_rxfh_context(
        ndev: *mut bindings::net_device,
        ctx: *mut bindings::ethtool_rxfh_context,
        rxfh: *const bindings::ethtool_rxfh_param,
        _extack: *mut bindings::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: `rxfh` is valid for reads.
        let param = unsafe { &*rxfh };
        let xfrm = match Self::xfrm_of(param) {
            Ok(xfrm) if Self::toeplitz(param) => xfrm.unwrap_or_default(),
            _ => return EOPNOTSUPP_ERRNO,
        };
        // SAFETY: Per the function's contract.
        let (table, key) = unsafe { Self::given(param) };
        // SAFETY: `ctx` is valid; the core fills in what it was given
        // after this returns, the rest is ours to say.
        unsafe {
            (*ctx).hfunc = RSS_HASH_TOP;
            (*ctx).input_xfrm = xfrm.bits();
        }
        // SAFETY: The core's new context, not used elsewhere meanwhile.
        let out = unsafe { Self::ctx_storage(ctx) };
        // SAFETY: Per the function's contract.
        let (dev, locked) = unsafe { Self::dev(ndev) };
        from_result(|| {
            T::create_rss_context(dev, locked, param.rss_context, table, key, xfrm, out)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As `create_rxfh_context`, `ctx` holding the context's settings.
    unsafe extern "C" fn modify_rxfh_context(
        ndev: *mut bindings::net_device,
        ctx: *mut bindings::ethtool_rxfh_context,
        rxfh: *const bindings::ethtool_rxfh_param,
        _extack: *mut bindings::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: `rxfh` is valid for reads.
        let param = unsafe { &*rxfh };
        let xfrm = match Self::xfrm_of(param) {
            Ok(xfrm) if Self::toeplitz(param) => xfrm,
            _ => return EOPNOTSUPP_ERRNO,
        };
        // SAFETY: Per the function's contract.
        let (table, key) = unsafe { Self::given(param) };
        // SAFETY: The core's context, which it updates only after this.
        let old = unsafe { Self::ctx_storage(ctx) };
        // SAFETY: Per the function's contract.
        let (dev, locked) = unsafe { Self::dev(ndev) };
        from_result(|| {
            T::modify_rss_context(dev, locked, param.rss_context, table, key, xfrm, old)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As `dev`.
    unsafe extern "C" fn remove_rxfh_context(
        ndev: *mut bindings::net_device,
        _ctx: *mut bindings::ethtool_rxfh_context,
        rss_context: u32,
        _extack: *mut bindings::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: Per the function's contract.
        let (dev, locked) = unsafe { Self::dev(ndev) };
        from_result(|| {
            T::remove_rss_context(dev, locked, rss_context)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As `dev`; `info` is valid for reads and writes; for
    /// `ETHTOOL_GRXCLSRLALL`, `rule_locs` has room for `info.rule_cnt`.
    unsafe extern "C" fn get_rxnfc(
        ndev: *mut bindings::net_device,
        info: *mut bindings::ethtool_rxnfc,
        rule_locs: *mut u32,
    ) -> c_int {
        // SAFETY: `info` is valid for reads and writes.
        let info = unsafe { &mut *info };
        // SAFETY: Per the function's contract.
        let (dev, locked) = unsafe { Self::dev(ndev) };
        match info.cmd {
            bindings::ETHTOOL_GRXCLSRLCNT => {
                let mut n = 0;
                T::flow_rules(dev, locked, &mut |_, _| n += 1);
                info.__bindgen_anon_1.rule_cnt = n;
                info.data = u64::from(T::FLOW_RULES);
                0
            }
            bindings::ETHTOOL_GRXCLSRULE => {
                let want = info.fs.location;
                let mut found = None;
                T::flow_rules(dev, locked, &mut |loc, rule| {
                    if loc == want {
                        found = Some(*rule);
                    }
                });
                match found {
                    Some(rule) => {
                        write_flow_spec(&mut info.fs, want, &rule);
                        if let FlowAction::Rss { context, .. } = rule.action {
                            info.__bindgen_anon_1.rss_context = context;
                        }
                        0
                    }
                    None => ENOENT.to_errno(),
                }
            }
            bindings::ETHTOOL_GRXCLSRLALL => {
                // SAFETY: Reading the union's one integer.
                let room = unsafe { info.__bindgen_anon_1.rule_cnt } as usize;
                let locs = if rule_locs.is_null() {
                    &mut [][..]
                } else {
                    // SAFETY: The core made room for `rule_cnt` entries.
                    unsafe { core::slice::from_raw_parts_mut(rule_locs, room) }
                };
                let mut n = 0;
                T::flow_rules(dev, locked, &mut |loc, _| {
                    if let Some(slot) = locs.get_mut(n) {
                        *slot = loc;
                    }
                    n += 1;
                });
                if n > room {
                    return EMSGSIZE.to_errno();
                }
                // CAST: `n` is at most `room`, which came from this u32.
                info.__bindgen_anon_1.rule_cnt = n as u32;
                info.data = u64::from(T::FLOW_RULES);
                0
            }
            _ => EOPNOTSUPP_ERRNO,
        }
    }

    /// # Safety
    ///
    /// As `dev`; `info` is valid for reads and writes.
    unsafe extern "C" fn set_rxnfc(
        ndev: *mut bindings::net_device,
        info: *mut bindings::ethtool_rxnfc,
    ) -> c_int {
        // SAFETY: `info` is valid for reads and writes.
        let info = unsafe { &mut *info };
        // SAFETY: Per the function's contract.
        let (dev, locked) = unsafe { Self::dev(ndev) };
        from_result(|| {
            match info.cmd {
                bindings::ETHTOOL_SRXCLSRLINS => {
                    // SAFETY: Reading the union's one integer.
                    let context = unsafe { info.__bindgen_anon_1.rss_context };
                    let rule = read_flow_spec(&info.fs, context)?;
                    if info.fs.location >= T::FLOW_RULES {
                        return Err(EINVAL);
                    }
                    info.fs.location = T::set_flow_rule(dev, locked, info.fs.location, rule)?;
                }
                bindings::ETHTOOL_SRXCLSRLDEL => {
                    T::del_flow_rule(dev, locked, info.fs.location)?;
                }
                _ => return Err(crate::linux::eopnotsupp()),
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As `dev`; `fields` is valid for reads and writes.
    unsafe extern "C" fn get_rxfh_fields(
        ndev: *mut bindings::net_device,
        fields: *mut bindings::ethtool_rxfh_fields,
    ) -> c_int {
        // SAFETY: `fields` is valid for reads and writes.
        let fields = unsafe { &mut *fields };
        // The core names a context only with `rxfh_per_ctx_fields`.
        let context = fields.rss_context;
        let Some(flow) = HashFlow::from_raw(fields.flow_type)
            .filter(|_| context == 0 || T::RSS_PER_CONTEXT_FIELDS)
        else {
            return EOPNOTSUPP_ERRNO;
        };
        // SAFETY: Per the function's contract.
        let (dev, locked) = unsafe { Self::dev(ndev) };
        from_result(|| {
            fields.data = T::rxfh_fields(dev, locked, context, flow)?.bits();
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As `dev`; `fields` is valid for reads.
    unsafe extern "C" fn set_rxfh_fields(
        ndev: *mut bindings::net_device,
        fields: *const bindings::ethtool_rxfh_fields,
        _extack: *mut bindings::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: `fields` is valid for reads.
        let fields = unsafe { &*fields };
        let context = fields.rss_context;
        let Some(flow) = HashFlow::from_raw(fields.flow_type)
            .filter(|_| context == 0 || T::RSS_PER_CONTEXT_FIELDS)
        else {
            return EOPNOTSUPP_ERRNO;
        };
        let data = HashFields::from_bits(fields.data);
        // SAFETY: Per the function's contract.
        let (dev, locked) = unsafe { Self::dev(ndev) };
        from_result(|| {
            T::set_rxfh_fields(dev, locked, context, flow, data)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As `dev`; `info` is valid for writes.
    unsafe extern "C" fn get_drvinfo(
        ndev: *mut bindings::net_device,
        info: *mut bindings::ethtool_drvinfo,
    ) {
        // SAFETY: `info` is valid for writes per the contract.
        let info = unsafe { &mut *info };
        // SAFETY: Per the function's contract.
        let (dev, locked) = unsafe { Self::dev(ndev) };
        T::drvinfo(dev, locked, &mut |d| {
            copy_cstr(&mut info.driver, d.driver.as_bytes());
            copy_cstr(&mut info.version, d.version.as_bytes());
            let mut fw = [0u8; 32];
            let mut slot = Slot(&mut fw, 0);
            let _ = fmt::write(&mut slot, d.fw_version);
            let len = slot.1;
            copy_cstr(&mut info.fw_version, &fw[..len]);
            copy_cstr(&mut info.bus_info, d.bus_info);
        });
    }

    /// # Safety
    ///
    /// As `dev`; `ks` is valid for writes.
    unsafe extern "C" fn get_link_ksettings(
        ndev: *mut bindings::net_device,
        ks: *mut bindings::ethtool_link_ksettings,
    ) -> c_int {
        // SAFETY: Per the function's contract.
        let (dev, locked) = unsafe { Self::dev(ndev) };
        // SAFETY: `ks` is valid for writes per the contract.
        let base = unsafe { &mut (*ks).base };
        let link = T::link_settings(dev, locked);
        // CAST: the uapi duplex, speed, port and autoneg values fit the
        // fields the core declares for them.
        if dev.carrier_ok() {
            base.speed = link.speed_mbps;
            base.duplex = match link.full_duplex {
                true => bindings::DUPLEX_FULL as u8,
                false => bindings::DUPLEX_HALF as u8,
            };
        } else {
            base.speed = bindings::SPEED_UNKNOWN as u32;
            base.duplex = bindings::DUPLEX_UNKNOWN as u8;
        }
        base.port = match link.port {
            PortType::TwistedPair => bindings::PORT_TP,
            PortType::Fibre => bindings::PORT_FIBRE,
            PortType::DirectAttach => bindings::PORT_DA,
            PortType::Other => bindings::PORT_OTHER,
        } as u8;
        base.autoneg = match link.autoneg {
            true => bindings::AUTONEG_ENABLE as u8,
            false => bindings::AUTONEG_DISABLE as u8,
        };
        0
    }

    /// The number of stats `T` reports.
    fn stats_count(dev: &NetDev<T>, locked: &DevLocked) -> usize {
        let mut counter = Counter(0);
        if T::HAS_STATS {
            T::stats(dev, locked, &mut counter);
        }
        counter.0
    }

    /// # Safety
    ///
    /// As `dev`.
    unsafe extern "C" fn get_sset_count(ndev: *mut bindings::net_device, sset: c_int) -> c_int {
        // SAFETY: Per the function's contract.
        let (dev, locked) = unsafe { Self::dev(ndev) };
        // CAST: a string set number (`enum ethtool_stringset`); a negative one
        // matches no arm.
        match sset as u32 {
            // CAST: counts of tests, statistics and flags the driver declares,
            // far below `c_int::MAX`.
            SS_TEST if T::HAS_SELF_TEST => T::SELF_TESTS.len() as c_int,
            SS_STATS if T::HAS_STATS => Self::stats_count(dev, locked) as c_int,
            SS_PRIV_FLAGS if T::HAS_PRIV_FLAGS => T::PRIV_FLAGS.len() as c_int,
            _ => EOPNOTSUPP_ERRNO,
        }
    }

    /// # Safety
    ///
    /// As `dev`; `data` has room for `get_sset_count` strings.
    unsafe extern "C" fn get_strings(ndev: *mut bindings::net_device, sset: u32, data: *mut u8) {
        // SAFETY: Per the function's contract.
        let (dev, locked) = unsafe { Self::dev(ndev) };
        match sset {
            SS_TEST if T::HAS_SELF_TEST => {
                // SAFETY: ethtool sized `data` from `get_sset_count`.
                let names = unsafe {
                    core::slice::from_raw_parts_mut(data, T::SELF_TESTS.len() * GSTRING_LEN)
                };
                for (slot, name) in names.chunks_exact_mut(GSTRING_LEN).zip(T::SELF_TESTS) {
                    copy_cstr(slot, name.as_bytes());
                }
            }
            SS_PRIV_FLAGS if T::HAS_PRIV_FLAGS => {
                // SAFETY: ethtool sized `data` from `get_sset_count`.
                let names = unsafe {
                    core::slice::from_raw_parts_mut(data, T::PRIV_FLAGS.len() * GSTRING_LEN)
                };
                for (slot, name) in names.chunks_exact_mut(GSTRING_LEN).zip(T::PRIV_FLAGS) {
                    copy_cstr(slot, name.as_bytes());
                }
            }
            SS_STATS if T::HAS_STATS => {
                let n = Self::stats_count(dev, locked);
                // SAFETY: ethtool sized `data` from `get_sset_count`, which
                // counted the same stats under the same lock (RTNL).
                let names = unsafe { core::slice::from_raw_parts_mut(data, n * GSTRING_LEN) };
                T::stats(
                    dev,
                    locked,
                    &mut Filler {
                        names: Some(names),
                        values: None,
                        index: 0,
                    },
                );
            }
            _ => {}
        }
    }

    /// # Safety
    ///
    /// As `dev`; `data` has room for `get_sset_count` values.
    unsafe extern "C" fn get_ethtool_stats(
        ndev: *mut bindings::net_device,
        _stats: *mut bindings::ethtool_stats,
        data: *mut u64,
    ) {
        // SAFETY: Per the function's contract.
        let (dev, locked) = unsafe { Self::dev(ndev) };
        let n = Self::stats_count(dev, locked);
        // SAFETY: As in `get_strings`, for values.
        let values = unsafe { core::slice::from_raw_parts_mut(data, n) };
        T::stats(
            dev,
            locked,
            &mut Filler {
                names: None,
                values: Some(values),
                index: 0,
            },
        );
    }

    /// # Safety
    ///
    /// As `dev`.
    unsafe extern "C" fn get_priv_flags(ndev: *mut bindings::net_device) -> u32 {
        // SAFETY: Per the function's contract.
        let (dev, locked) = unsafe { Self::dev(ndev) };
        T::priv_flags(dev, locked)
    }

    /// # Safety
    ///
    /// As `dev`.
    unsafe extern "C" fn set_priv_flags(ndev: *mut bindings::net_device, flags: u32) -> c_int {
        // The core refuses flags beyond the count; checked again, so the
        // driver may rely on it.
        if u64::from(flags) >> T::PRIV_FLAGS.len() != 0 {
            return EINVAL.to_errno();
        }
        // SAFETY: Per the function's contract.
        let (dev, rtnl) = unsafe { Self::dev_rtnl(ndev) };
        from_result(|| {
            T::set_priv_flags(dev, rtnl, flags)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As `dev`; `ch` is valid for writes.
    unsafe extern "C" fn get_channels(
        ndev: *mut bindings::net_device,
        ch: *mut bindings::ethtool_channels,
    ) {
        // SAFETY: Per the function's contract.
        let (dev, locked) = unsafe { Self::dev(ndev) };
        let (max, current) = T::channels(dev, locked);
        // SAFETY: `ch` is valid for writes.
        let ch = unsafe { &mut *ch };
        ch.max_combined = max;
        ch.combined_count = current;
    }

    /// # Safety
    ///
    /// As `dev`; `ch` is valid for reads.
    unsafe extern "C" fn set_channels(
        ndev: *mut bindings::net_device,
        ch: *mut bindings::ethtool_channels,
    ) -> c_int {
        // SAFETY: `ch` is valid for reads.
        let ch = unsafe { &*ch };
        // Only combined channels exist.
        if ch.rx_count != 0 || ch.tx_count != 0 || ch.other_count != 0 || ch.combined_count == 0 {
            return EINVAL.to_errno();
        }
        // SAFETY: Per the function's contract.
        let (dev, rtnl) = unsafe { Self::dev_rtnl(ndev) };
        from_result(|| {
            T::set_channels(dev, rtnl, ch.combined_count)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As `dev`; `tuna` is valid for reads, and `data` for a write of the
    /// tunable's value, whose type and length the core checked
    /// (`ethtool_tunable_valid`: a `u32` for rx-copybreak).
    unsafe extern "C" fn get_tunable(
        ndev: *mut bindings::net_device,
        tuna: *const bindings::ethtool_tunable,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: `tuna` is valid for reads.
        if unsafe { (*tuna).id } != bindings::tunable_id_ETHTOOL_RX_COPYBREAK {
            return EOPNOTSUPP_ERRNO;
        }
        // SAFETY: Per the function's contract.
        let (dev, locked) = unsafe { Self::dev(ndev) };
        let bytes = T::rx_copybreak(dev, locked);
        // SAFETY: rx-copybreak is a `u32` (checked by the core), which
        // `data` is valid for writes of.
        unsafe { data.cast::<u32>().write_unaligned(bytes) };
        0
    }

    /// # Safety
    ///
    /// As `dev`; `tuna` is valid for reads, and `data` for a read of the
    /// tunable's value, whose type and length the core checked.
    unsafe extern "C" fn set_tunable(
        ndev: *mut bindings::net_device,
        tuna: *const bindings::ethtool_tunable,
        data: *const c_void,
    ) -> c_int {
        // SAFETY: `tuna` is valid for reads.
        if unsafe { (*tuna).id } != bindings::tunable_id_ETHTOOL_RX_COPYBREAK {
            return EOPNOTSUPP_ERRNO;
        }
        // SAFETY: rx-copybreak is a `u32` (checked by the core), which
        // `data` is valid for reads of.
        let bytes = unsafe { data.cast::<u32>().read_unaligned() };
        // SAFETY: Per the function's contract.
        let (dev, locked) = unsafe { Self::dev(ndev) };
        from_result(|| {
            T::set_rx_copybreak(dev, locked, bytes)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As `dev`; `ring` and `kring` are valid for reads.
    unsafe extern "C" fn set_ringparam(
        ndev: *mut bindings::net_device,
        ring: *mut bindings::ethtool_ringparam,
        kring: *mut bindings::kernel_ethtool_ringparam,
        _extack: *mut bindings::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: `ring` and `kring` are valid for reads.
        let (ring, kring) = unsafe { (&*ring, &*kring) };
        if ring.rx_mini_pending != 0 || ring.rx_jumbo_pending != 0 {
            return EINVAL.to_errno();
        }
        // The core refuses split settings unless `supported_ring_params`
        // has them; what it passes then is the configuration it keeps.
        let Some(tcp_data_split) = TcpDataSplit::from_raw(kring.tcp_data_split) else {
            return EINVAL.to_errno();
        };
        let want = Rings {
            rx: ring.rx_pending,
            tx: ring.tx_pending,
            tcp_data_split,
            hds_thresh: kring.hds_thresh,
        };
        if T::HDS_THRESH_MAX == 0 && want.tcp_data_split == TcpDataSplit::Enabled
            || want.hds_thresh > T::HDS_THRESH_MAX
        {
            return EINVAL.to_errno();
        }
        // SAFETY: Per the function's contract.
        let (dev, rtnl) = unsafe { Self::dev_rtnl(ndev) };
        from_result(|| {
            T::set_rings(dev, rtnl, want)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As `dev`; `ring` and `kring` are valid for writes.
    unsafe extern "C" fn get_ringparam(
        ndev: *mut bindings::net_device,
        ring: *mut bindings::ethtool_ringparam,
        kring: *mut bindings::kernel_ethtool_ringparam,
        _extack: *mut bindings::netlink_ext_ack,
    ) {
        // SAFETY: Per the function's contract.
        let (dev, locked) = unsafe { Self::dev(ndev) };
        let (max, now) = T::rings(dev, locked);
        // SAFETY: `ring` and `kring` are valid for writes.
        let (ring, kring) = unsafe { (&mut *ring, &mut *kring) };
        ring.rx_max_pending = max;
        ring.tx_max_pending = max;
        ring.rx_pending = now.rx;
        ring.tx_pending = now.tx;
        if T::HDS_THRESH_MAX != 0 {
            kring.tcp_data_split = now.tcp_data_split.to_raw();
            kring.hds_thresh = now.hds_thresh;
            kring.hds_thresh_max = T::HDS_THRESH_MAX;
        }
    }
}

/// The flow type of a TCP/UDP rule, and whether it is IPv6.
fn rule_flow(flow_type: u32) -> Option<(RuleFlow, bool)> {
    Some(match flow_type {
        bindings::TCP_V4_FLOW => (RuleFlow::Tcp4, false),
        bindings::UDP_V4_FLOW => (RuleFlow::Udp4, false),
        bindings::TCP_V6_FLOW => (RuleFlow::Tcp6, true),
        bindings::UDP_V6_FLOW => (RuleFlow::Udp6, true),
        _ => return None,
    })
}

/// `value` if `mask` is all ones, `None` if it is zero, `EINVAL` for a
/// partial mask (rules match fields exactly or not at all).
fn exact<const N: usize>(value: [u8; N], mask: [u8; N]) -> Result<Option<[u8; N]>> {
    if mask.iter().all(|&b| b == 0xff) {
        Ok(Some(value))
    } else if mask.iter().all(|&b| b == 0) {
        Ok(None)
    } else {
        Err(EINVAL)
    }
}

/// An address of `N` bytes as the rule's 16.
fn addr16<const N: usize>(a: [u8; N]) -> [u8; 16] {
    let mut out = [0u8; 16];
    out[..N].copy_from_slice(&a);
    out
}

/// The rule an `ethtool_rx_flow_spec` asks for (`context`: the request's
/// RSS context, used with `FLOW_RSS`); `EINVAL` for what a [`FlowRule`]
/// cannot say.
fn read_flow_spec(fs: &bindings::ethtool_rx_flow_spec, context: u32) -> Result<FlowRule> {
    let rss = fs.flow_type & bindings::FLOW_RSS != 0;
    let (flow, v6) = rule_flow(fs.flow_type & !bindings::FLOW_RSS).ok_or(EINVAL)?;
    let (src_ip, dst_ip, src_port, dst_port) = if v6 {
        // SAFETY: For a TCP/UDP over IPv6 flow type the union holds
        // `tcp_ip6_spec` (`udp_ip6_spec` has the same type); any bytes
        // are a valid value.
        let (h, m) = unsafe { (fs.h_u.tcp_ip6_spec, fs.m_u.tcp_ip6_spec) };
        if m.tclass != 0 {
            return Err(EINVAL);
        }
        let ip = |a: [u32; 4]| {
            let mut out = [0u8; 16];
            for (chunk, w) in out.chunks_exact_mut(4).zip(a) {
                chunk.copy_from_slice(&w.to_ne_bytes());
            }
            out
        };
        (
            exact(ip(h.ip6src), ip(m.ip6src))?,
            exact(ip(h.ip6dst), ip(m.ip6dst))?,
            exact(h.psrc.to_ne_bytes(), m.psrc.to_ne_bytes())?,
            exact(h.pdst.to_ne_bytes(), m.pdst.to_ne_bytes())?,
        )
    } else {
        // SAFETY: As above, `tcp_ip4_spec` for IPv4.
        let (h, m) = unsafe { (fs.h_u.tcp_ip4_spec, fs.m_u.tcp_ip4_spec) };
        if m.tos != 0 {
            return Err(EINVAL);
        }
        (
            exact(h.ip4src.to_ne_bytes(), m.ip4src.to_ne_bytes())?.map(addr16),
            exact(h.ip4dst.to_ne_bytes(), m.ip4dst.to_ne_bytes())?.map(addr16),
            exact(h.psrc.to_ne_bytes(), m.psrc.to_ne_bytes())?,
            exact(h.pdst.to_ne_bytes(), m.pdst.to_ne_bytes())?,
        )
    };
    let ring = fs.ring_cookie;
    let action = if ring == bindings::RX_CLS_FLOW_DISC as u64 {
        FlowAction::Drop
    } else {
        // Bits 32 and up name a VF's queue: not offered.
        let queue = u32::try_from(ring).map_err(|_| EINVAL)?;
        if rss {
            FlowAction::Rss {
                context,
                offset: queue,
            }
        } else {
            FlowAction::Queue(queue)
        }
    };
    Ok(FlowRule {
        flow,
        src_ip,
        dst_ip,
        src_port: src_port.map(u16::from_be_bytes),
        dst_port: dst_port.map(u16::from_be_bytes),
        action,
    })
}

/// Fills `fs` with `rule` at `location`.
fn write_flow_spec(fs: &mut bindings::ethtool_rx_flow_spec, location: u32, rule: &FlowRule) {
    // SAFETY: All-zero is a valid flow spec (no fields, no masks).
    *fs = unsafe { core::mem::zeroed() };
    let (flow_type, v6) = match rule.flow {
        RuleFlow::Tcp4 => (bindings::TCP_V4_FLOW, false),
        RuleFlow::Udp4 => (bindings::UDP_V4_FLOW, false),
        RuleFlow::Tcp6 => (bindings::TCP_V6_FLOW, true),
        RuleFlow::Udp6 => (bindings::UDP_V6_FLOW, true),
    };
    let port = |p: Option<u16>| (p.unwrap_or(0).to_be(), if p.is_some() { 0xffff } else { 0 });
    let (sp, spm) = port(rule.src_port);
    let (dp, dpm) = port(rule.dst_port);
    if v6 {
        let ip = |a: Option<[u8; 16]>| {
            let v = a.unwrap_or_default();
            let word = |i: usize| u32::from_ne_bytes([v[i], v[i + 1], v[i + 2], v[i + 3]]);
            let m = if a.is_some() { u32::MAX } else { 0 };
            ([word(0), word(4), word(8), word(12)], [m; 4])
        };
        let (s, sm) = ip(rule.src_ip);
        let (d, dm) = ip(rule.dst_ip);
        fs.h_u.tcp_ip6_spec = bindings::ethtool_tcpip6_spec {
            ip6src: s,
            ip6dst: d,
            psrc: sp,
            pdst: dp,
            tclass: 0,
        };
        fs.m_u.tcp_ip6_spec = bindings::ethtool_tcpip6_spec {
            ip6src: sm,
            ip6dst: dm,
            psrc: spm,
            pdst: dpm,
            tclass: 0,
        };
    } else {
        let ip = |a: Option<[u8; 16]>| {
            let v = a.unwrap_or_default();
            (
                u32::from_ne_bytes([v[0], v[1], v[2], v[3]]),
                if a.is_some() { u32::MAX } else { 0 },
            )
        };
        let (s, sm) = ip(rule.src_ip);
        let (d, dm) = ip(rule.dst_ip);
        fs.h_u.tcp_ip4_spec = bindings::ethtool_tcpip4_spec {
            ip4src: s,
            ip4dst: d,
            psrc: sp,
            pdst: dp,
            tos: 0,
        };
        fs.m_u.tcp_ip4_spec = bindings::ethtool_tcpip4_spec {
            ip4src: sm,
            ip4dst: dm,
            psrc: spm,
            pdst: dpm,
            tos: 0,
        };
    }
    fs.flow_type = flow_type;
    fs.location = location;
    fs.ring_cookie = match rule.action {
        FlowAction::Queue(q) => u64::from(q),
        FlowAction::Rss { offset, .. } => {
            fs.flow_type |= bindings::FLOW_RSS;
            u64::from(offset)
        }
        FlowAction::Drop => bindings::RX_CLS_FLOW_DISC as u64,
    };
}
