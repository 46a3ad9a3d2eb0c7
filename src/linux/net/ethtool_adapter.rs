// SPDX-License-Identifier: GPL-2.0

//! The C-ABI entry points of an [`EthtoolOps`] implementation, installed
//! in a net device's `ethtool_ops`: only the operations the driver
//! implements are filled in.

use core::{fmt, marker::PhantomData};

use kernel::{error::from_result, ffi::c_int, prelude::*};

use crate::linux::bindings;
use crate::linux::net::{
    ethtool::{Coalesce, EthtoolOps, HashFields, HashFlow, Rxfh, StatsSink},
    netdev::NetDev,
    rtnl::Rtnl,
};

/// Length of an ethtool string (`ETH_GSTRING_LEN`).
const GSTRING_LEN: usize = 32;
/// `ETH_SS_TEST`: the string set of `ethtool -t`.
const SS_TEST: u32 = 0;
/// `ETH_SS_STATS`: the string set of `ethtool -S`.
const SS_STATS: u32 = 1;

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
        if T::HAS_SPEED_MBPS {
            ops.get_link_ksettings = Some(Self::get_link_ksettings);
        }
        if T::HAS_STATS || !T::SELF_TESTS.is_empty() {
            ops.get_sset_count = Some(Self::get_sset_count);
            ops.get_strings = Some(Self::get_strings);
        }
        if T::HAS_STATS {
            ops.get_ethtool_stats = Some(Self::get_ethtool_stats);
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
        ops.supported_coalesce_params = T::SUPPORTED_COALESCE;
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
            ops.get_rxfh = Some(Self::get_rxfh);
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
    /// call, which ethtool makes with RTNL held.
    unsafe fn dev<'a>(ndev: *mut bindings::net_device) -> (&'a NetDev<T>, &'a Rtnl) {
        // SAFETY: Per the function's contract.
        unsafe { (NetDev::from_raw(ndev), Rtnl::assume_held()) }
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
        let (dev, rtnl) = unsafe { Self::dev(ndev) };
        let c = T::coalesce(dev, rtnl);
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
        let (dev, rtnl) = unsafe { Self::dev(ndev) };
        from_result(|| {
            T::set_coalesce(dev, rtnl, c)?;
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
        let (dev, rtnl) = unsafe { Self::dev(ndev) };
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
        let (dev, rtnl) = unsafe { Self::dev(ndev) };
        T::channels(dev, rtnl).1
    }

    extern "C" fn rss_key_size(_ndev: *mut bindings::net_device) -> u32 {
        T::RSS_KEY_LEN as u32
    }

    extern "C" fn rss_table_size(_ndev: *mut bindings::net_device) -> u32 {
        T::RSS_TABLE_LEN as u32
    }

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
            // SAFETY: ethtool sized `indir` by `get_rxfh_indir_size`.
            unsafe { core::slice::from_raw_parts_mut(param.indir, T::RSS_TABLE_LEN) }
        };
        let key = if param.key.is_null() {
            &mut key[..]
        } else {
            // SAFETY: ethtool sized `key` by `get_rxfh_key_size`.
            unsafe { core::slice::from_raw_parts_mut(param.key, T::RSS_KEY_LEN) }
        };
        // SAFETY: Per the function's contract.
        let (dev, rtnl) = unsafe { Self::dev(ndev) };
        T::rss(dev, rtnl, Rxfh { table, key });
        0
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
            return -(kernel::bindings::EOPNOTSUPP as c_int);
        }
        let table = (!param.indir.is_null()).then(|| {
            // SAFETY: ethtool sized `indir` by `get_rxfh_indir_size`.
            unsafe { core::slice::from_raw_parts(param.indir, T::RSS_TABLE_LEN) }
        });
        let key = (!param.key.is_null()).then(|| {
            // SAFETY: ethtool sized `key` by `get_rxfh_key_size`.
            unsafe { core::slice::from_raw_parts(param.key, T::RSS_KEY_LEN) }
        });
        // SAFETY: Per the function's contract.
        let (dev, rtnl) = unsafe { Self::dev(ndev) };
        from_result(|| {
            T::set_rss(dev, rtnl, table, key)?;
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
        // One set of fields, the default context's.
        let Some(flow) = HashFlow::from_raw(fields.flow_type).filter(|_| fields.rss_context == 0)
        else {
            return -(kernel::bindings::EOPNOTSUPP as c_int);
        };
        // SAFETY: Per the function's contract.
        let (dev, rtnl) = unsafe { Self::dev(ndev) };
        from_result(|| {
            fields.data = T::rxfh_fields(dev, rtnl, flow)?.bits();
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
        let Some(flow) = HashFlow::from_raw(fields.flow_type).filter(|_| fields.rss_context == 0)
        else {
            return -(kernel::bindings::EOPNOTSUPP as c_int);
        };
        // SAFETY: Per the function's contract.
        let (dev, rtnl) = unsafe { Self::dev(ndev) };
        from_result(|| {
            T::set_rxfh_fields(dev, rtnl, flow, HashFields::from_bits(fields.data))?;
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
        let (dev, rtnl) = unsafe { Self::dev(ndev) };
        T::drvinfo(dev, rtnl, &mut |d| {
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
        let (dev, rtnl) = unsafe { Self::dev(ndev) };
        // SAFETY: `ks` is valid for writes per the contract.
        let base = unsafe { &mut (*ks).base };
        if dev.carrier_ok() {
            base.speed = T::speed_mbps(dev, rtnl);
            base.duplex = bindings::DUPLEX_FULL as u8;
        } else {
            base.speed = bindings::SPEED_UNKNOWN as u32;
            base.duplex = bindings::DUPLEX_UNKNOWN as u8;
        }
        base.port = bindings::PORT_DA as u8;
        base.autoneg = bindings::AUTONEG_DISABLE as u8;
        0
    }

    /// The number of stats `T` reports.
    fn stats_count(dev: &NetDev<T>, rtnl: &Rtnl) -> usize {
        let mut counter = Counter(0);
        if T::HAS_STATS {
            T::stats(dev, rtnl, &mut counter);
        }
        counter.0
    }

    /// # Safety
    ///
    /// As `dev`.
    unsafe extern "C" fn get_sset_count(ndev: *mut bindings::net_device, sset: c_int) -> c_int {
        // SAFETY: Per the function's contract.
        let (dev, rtnl) = unsafe { Self::dev(ndev) };
        match sset as u32 {
            SS_TEST if T::HAS_SELF_TEST => T::SELF_TESTS.len() as c_int,
            SS_STATS if T::HAS_STATS => Self::stats_count(dev, rtnl) as c_int,
            _ => -(kernel::bindings::EOPNOTSUPP as c_int),
        }
    }

    /// # Safety
    ///
    /// As `dev`; `data` has room for `get_sset_count` strings.
    unsafe extern "C" fn get_strings(ndev: *mut bindings::net_device, sset: u32, data: *mut u8) {
        // SAFETY: Per the function's contract.
        let (dev, rtnl) = unsafe { Self::dev(ndev) };
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
            SS_STATS if T::HAS_STATS => {
                let n = Self::stats_count(dev, rtnl);
                // SAFETY: ethtool sized `data` from `get_sset_count`, which
                // counted the same stats under the same lock (RTNL).
                let names = unsafe { core::slice::from_raw_parts_mut(data, n * GSTRING_LEN) };
                T::stats(
                    dev,
                    rtnl,
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
        let (dev, rtnl) = unsafe { Self::dev(ndev) };
        let n = Self::stats_count(dev, rtnl);
        // SAFETY: As in `get_strings`, for values.
        let values = unsafe { core::slice::from_raw_parts_mut(data, n) };
        T::stats(
            dev,
            rtnl,
            &mut Filler {
                names: None,
                values: Some(values),
                index: 0,
            },
        );
    }

    /// # Safety
    ///
    /// As `dev`; `ch` is valid for writes.
    unsafe extern "C" fn get_channels(
        ndev: *mut bindings::net_device,
        ch: *mut bindings::ethtool_channels,
    ) {
        // SAFETY: Per the function's contract.
        let (dev, rtnl) = unsafe { Self::dev(ndev) };
        let (max, current) = T::channels(dev, rtnl);
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
        let (dev, rtnl) = unsafe { Self::dev(ndev) };
        from_result(|| {
            T::set_channels(dev, rtnl, ch.combined_count)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As `dev`; `ring` is valid for reads.
    unsafe extern "C" fn set_ringparam(
        ndev: *mut bindings::net_device,
        ring: *mut bindings::ethtool_ringparam,
        _kring: *mut bindings::kernel_ethtool_ringparam,
        _extack: *mut bindings::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: `ring` is valid for reads.
        let ring = unsafe { &*ring };
        if ring.rx_mini_pending != 0 || ring.rx_jumbo_pending != 0 {
            return EINVAL.to_errno();
        }
        // SAFETY: Per the function's contract.
        let (dev, rtnl) = unsafe { Self::dev(ndev) };
        from_result(|| {
            T::set_rings(dev, rtnl, ring.rx_pending, ring.tx_pending)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As `dev`; `ring` is valid for writes.
    unsafe extern "C" fn get_ringparam(
        ndev: *mut bindings::net_device,
        ring: *mut bindings::ethtool_ringparam,
        _kring: *mut bindings::kernel_ethtool_ringparam,
        _extack: *mut bindings::netlink_ext_ack,
    ) {
        // SAFETY: Per the function's contract.
        let (dev, rtnl) = unsafe { Self::dev(ndev) };
        let (max, rx, tx) = T::rings(dev, rtnl);
        // SAFETY: `ring` is valid for writes.
        let ring = unsafe { &mut *ring };
        ring.rx_max_pending = max;
        ring.tx_max_pending = max;
        ring.rx_pending = rx;
        ring.tx_pending = tx;
    }
}
