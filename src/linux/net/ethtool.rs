// SPDX-License-Identifier: GPL-2.0

//! ethtool operations (`struct ethtool_ops`) dispatched to a Rust trait.

use core::{fmt, marker::PhantomData};

use kernel::{error::from_result, ffi::c_int, prelude::*};

use crate::hw;
use crate::linux::bindings;
use crate::linux::net::netdev::NetDev;

/// Length of an ethtool string (`ETH_GSTRING_LEN`).
const GSTRING_LEN: usize = 32;

/// `ETH_SS_TEST`: the string set of `ethtool -t`.
const SS_TEST: u32 = 0;
/// `ETH_SS_STATS`: the string set of `ethtool -S`.
const SS_STATS: u32 = 1;
/// `ETHTOOL_COALESCE_RX_USECS | ETHTOOL_COALESCE_RX_MAX_FRAMES` (the
/// header's `BIT()` macros do not reach the bindings).
const COALESCE_RX_USECS_AND_FRAMES: u32 = (1 << 0) | (1 << 1);

/// Interrupt moderation (`ethtool -c/-C rx-usecs N rx-frames N`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Coalesce {
    /// Longest a completion waits for its interrupt, in microseconds.
    pub(crate) usecs: u32,
    /// Completions that raise the interrupt at once (0: no count limit).
    pub(crate) frames: u32,
}

/// Identity shown by `ethtool -i`.
pub(crate) struct DrvInfo<'a> {
    /// Driver name.
    pub(crate) driver: &'static str,
    /// Driver version.
    pub(crate) version: &'static str,
    /// Firmware version, as the card reports it.
    pub(crate) fw_version: [u8; 3],
    /// Bus address of the device, e.g. `0000:01:00.0`.
    pub(crate) bus_info: &'a [u8],
}

/// Receives the device's statistics as (name, value) pairs, in a fixed order.
pub(crate) trait StatsSink {
    /// One counter. `name` must be at most 31 bytes once formatted.
    fn stat(&mut self, name: fmt::Arguments<'_>, value: u64);
    /// Whether values are used (else only names are counted or copied,
    /// and costly values, like the card's, need not be fetched).
    fn wants_values(&self) -> bool;
}

/// What a driver reports to ethtool.
pub(crate) trait EthtoolOps: Send + Sync + Sized + 'static {
    /// Names of the `ethtool -t` tests, in the order of [`Self::self_test`]'s
    /// results; each at most 31 bytes.
    const SELF_TESTS: &'static [&'static str];
    /// `ethtool -i`.
    fn drvinfo(dev: &NetDev<Self>) -> DrvInfo<'_>;
    /// Link speed in Mbit/s while the carrier is up.
    fn speed_mbps(dev: &NetDev<Self>) -> u32;
    /// Every counter of `ethtool -S`, always the same names in the same order.
    fn stats(dev: &NetDev<Self>, sink: &mut dyn StatsSink);
    /// `ethtool -l`: (maximum, current) combined channels.
    fn channels(dev: &NetDev<Self>) -> (u32, u32);
    /// `ethtool -g`: (maximum, current RX, current TX) ring entries.
    fn rings(dev: &NetDev<Self>) -> (u32, u32, u32);
    /// `ethtool -L combined N`; on error nothing changed.
    fn set_channels(dev: &NetDev<Self>, combined: u32) -> Result;
    /// `ethtool -G rx R tx T`; on error nothing changed.
    fn set_rings(dev: &NetDev<Self>, rx: u32, tx: u32) -> Result;
    /// `ethtool -c`: interrupt moderation.
    fn coalesce(dev: &NetDev<Self>) -> Coalesce;
    /// `ethtool -C`; on error nothing changed.
    fn set_coalesce(dev: &NetDev<Self>, coalesce: Coalesce) -> Result;
    /// `ethtool -t`: runs the tests (those that disturb traffic only if
    /// `offline`) and stores 0 (passed or not run) or an error code per
    /// test in `results`, one per [`Self::SELF_TESTS`] entry.
    fn self_test(dev: &NetDev<Self>, offline: bool, results: &mut [u64]);
    /// `ethtool -x`: the RSS indirection table and hash key.
    fn rss(dev: &NetDev<Self>) -> ([u8; hw::RSS_TABLE_LEN], [u8; hw::RSS_KEY_LEN]);
    /// `ethtool -X`: a new table and/or key (each `None` if unchanged). The
    /// core already checked the table against the channel count.
    fn set_rss(
        dev: &NetDev<Self>,
        table: Option<&[u8; hw::RSS_TABLE_LEN]>,
        key: Option<&[u8; hw::RSS_KEY_LEN]>,
    ) -> Result;
}

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

fn copy_cstr(dst: &mut [u8], src: &[u8]) {
    let n = src.len().min(dst.len().saturating_sub(1));
    dst[..n].copy_from_slice(&src[..n]);
    dst[n..].fill(0);
}

/// The C-ABI entry points of an [`EthtoolOps`] implementation.
pub(crate) struct EthtoolAdapter<T>(PhantomData<T>);

impl<T: EthtoolOps> EthtoolAdapter<T> {
    /// The ops table to install in the net device.
    pub(crate) const OPS: bindings::ethtool_ops = {
        // SAFETY: All-zero is a valid `ethtool_ops`: null callbacks and no
        // supported parameters.
        let mut ops: bindings::ethtool_ops = unsafe { core::mem::zeroed() };
        ops.get_drvinfo = Some(Self::get_drvinfo);
        ops.get_link = Some(bindings::ethtool_op_get_link);
        ops.get_link_ksettings = Some(Self::get_link_ksettings);
        ops.get_sset_count = Some(Self::get_sset_count);
        ops.get_strings = Some(Self::get_strings);
        ops.get_ethtool_stats = Some(Self::get_ethtool_stats);
        ops.get_channels = Some(Self::get_channels);
        ops.get_ringparam = Some(Self::get_ringparam);
        ops.set_channels = Some(Self::set_channels);
        ops.set_ringparam = Some(Self::set_ringparam);
        ops.get_rx_ring_count = Some(Self::rx_ring_count);
        ops.get_rxfh_key_size = Some(Self::rss_key_size);
        ops.get_rxfh_indir_size = Some(Self::rss_table_size);
        ops.get_rxfh = Some(Self::get_rxfh);
        ops.set_rxfh = Some(Self::set_rxfh);
        ops.supported_coalesce_params = COALESCE_RX_USECS_AND_FRAMES;
        ops.get_coalesce = Some(Self::get_coalesce);
        ops.set_coalesce = Some(Self::set_coalesce);
        ops.self_test = Some(Self::self_test);
        ops
    };

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
        let c = T::coalesce(unsafe { Self::dev(ndev) });
        // SAFETY: `ec` is valid for writes.
        let ec = unsafe { &mut *ec };
        ec.rx_coalesce_usecs = c.usecs;
        ec.rx_max_coalesced_frames = c.frames;
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
            usecs: ec.rx_coalesce_usecs,
            frames: ec.rx_max_coalesced_frames,
        };
        // SAFETY: Per the function's contract.
        let dev = unsafe { Self::dev(ndev) };
        from_result(|| {
            T::set_coalesce(dev, c)?;
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
        T::self_test(unsafe { Self::dev(ndev) }, offline, results);
        if results.iter().any(|&r| r != 0) {
            test.flags |= bindings::ethtool_test_flags_ETH_TEST_FL_FAILED;
        }
    }

    /// # Safety
    ///
    /// As `dev`.
    unsafe extern "C" fn rx_ring_count(ndev: *mut bindings::net_device) -> u32 {
        // SAFETY: Per the function's contract.
        T::channels(unsafe { Self::dev(ndev) }).1
    }

    extern "C" fn rss_key_size(_ndev: *mut bindings::net_device) -> u32 {
        hw::RSS_KEY_LEN as u32
    }

    extern "C" fn rss_table_size(_ndev: *mut bindings::net_device) -> u32 {
        hw::RSS_TABLE_LEN as u32
    }

    /// # Safety
    ///
    /// As `dev`; `param` is valid, its non-null `indir` and `key` point at
    /// the sizes reported above.
    unsafe extern "C" fn get_rxfh(
        ndev: *mut bindings::net_device,
        param: *mut bindings::ethtool_rxfh_param,
    ) -> c_int {
        // SAFETY: Per the function's contract.
        let (table, key) = T::rss(unsafe { Self::dev(ndev) });
        // SAFETY: `param` is valid for reads and writes.
        let param = unsafe { &mut *param };
        param.hfunc = RSS_HASH_TOP;
        if !param.indir.is_null() {
            // SAFETY: ethtool sized `indir` by `get_rxfh_indir_size`.
            let indir = unsafe { core::slice::from_raw_parts_mut(param.indir, hw::RSS_TABLE_LEN) };
            for (out, &q) in indir.iter_mut().zip(table.iter()) {
                *out = u32::from(q);
            }
        }
        if !param.key.is_null() {
            // SAFETY: ethtool sized `key` by `get_rxfh_key_size`.
            unsafe { core::slice::from_raw_parts_mut(param.key, hw::RSS_KEY_LEN) }
                .copy_from_slice(&key);
        }
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
        let mut table = [0u8; hw::RSS_TABLE_LEN];
        let table = if param.indir.is_null() {
            None
        } else {
            // SAFETY: ethtool sized `indir` by `get_rxfh_indir_size`.
            let indir = unsafe { core::slice::from_raw_parts(param.indir, hw::RSS_TABLE_LEN) };
            for (t, &q) in table.iter_mut().zip(indir) {
                let Ok(q) = u8::try_from(q) else {
                    return EINVAL.to_errno();
                };
                *t = q;
            }
            Some(&table)
        };
        let mut key = [0u8; hw::RSS_KEY_LEN];
        let key = if param.key.is_null() {
            None
        } else {
            // SAFETY: ethtool sized `key` by `get_rxfh_key_size`.
            key.copy_from_slice(unsafe { core::slice::from_raw_parts(param.key, hw::RSS_KEY_LEN) });
            Some(&key)
        };
        // SAFETY: Per the function's contract.
        let dev = unsafe { Self::dev(ndev) };
        from_result(|| {
            T::set_rss(dev, table, key)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `ndev` is a device registered by `Registration<T>`, alive for the call.
    unsafe fn dev<'a>(ndev: *mut bindings::net_device) -> &'a NetDev<T> {
        // SAFETY: Per the function's contract; ethtool calls run under RTNL
        // on a registered device.
        unsafe { NetDev::from_raw(ndev) }
    }

    /// # Safety
    ///
    /// As `dev`; `info` is valid for writes.
    unsafe extern "C" fn get_drvinfo(
        ndev: *mut bindings::net_device,
        info: *mut bindings::ethtool_drvinfo,
    ) {
        // SAFETY: Per the function's contract.
        let d = T::drvinfo(unsafe { Self::dev(ndev) });
        // SAFETY: `info` is valid for writes per the contract.
        let info = unsafe { &mut *info };
        copy_cstr(&mut info.driver, d.driver.as_bytes());
        copy_cstr(&mut info.version, d.version.as_bytes());
        let mut fw = [0u8; 16];
        let mut slot = Slot(&mut fw, 0);
        let [a, b, c] = d.fw_version;
        let _ = fmt::write(&mut slot, format_args!("{a}.{b}.{c}"));
        let len = slot.1;
        copy_cstr(&mut info.fw_version, &fw[..len]);
        copy_cstr(&mut info.bus_info, d.bus_info);
    }

    /// # Safety
    ///
    /// As `dev`; `ks` is valid for writes.
    unsafe extern "C" fn get_link_ksettings(
        ndev: *mut bindings::net_device,
        ks: *mut bindings::ethtool_link_ksettings,
    ) -> c_int {
        // SAFETY: Per the function's contract.
        let dev = unsafe { Self::dev(ndev) };
        // SAFETY: `ks` is valid for writes per the contract.
        let base = unsafe { &mut (*ks).base };
        // SAFETY: The device is alive.
        let up = unsafe { bindings::rsnic_netif_carrier_ok(dev.as_raw()) };
        if up {
            base.speed = T::speed_mbps(dev);
            base.duplex = bindings::DUPLEX_FULL as u8;
        } else {
            base.speed = bindings::SPEED_UNKNOWN as u32;
            base.duplex = bindings::DUPLEX_UNKNOWN as u8;
        }
        base.port = bindings::PORT_DA as u8;
        base.autoneg = bindings::AUTONEG_DISABLE as u8;
        0
    }

    /// # Safety
    ///
    /// As `dev`.
    unsafe extern "C" fn get_sset_count(ndev: *mut bindings::net_device, sset: c_int) -> c_int {
        if sset as u32 == SS_TEST {
            return T::SELF_TESTS.len() as c_int;
        }
        if sset as u32 != SS_STATS {
            return -(kernel::bindings::EOPNOTSUPP as c_int);
        }
        let mut counter = Counter(0);
        // SAFETY: Per the function's contract.
        T::stats(unsafe { Self::dev(ndev) }, &mut counter);
        counter.0 as c_int
    }

    /// # Safety
    ///
    /// As `dev`; `data` has room for `get_sset_count` strings.
    unsafe extern "C" fn get_strings(ndev: *mut bindings::net_device, sset: u32, data: *mut u8) {
        if sset == SS_TEST {
            // SAFETY: ethtool sized `data` from `get_sset_count`.
            let names =
                unsafe { core::slice::from_raw_parts_mut(data, T::SELF_TESTS.len() * GSTRING_LEN) };
            for (slot, name) in names.chunks_exact_mut(GSTRING_LEN).zip(T::SELF_TESTS) {
                copy_cstr(slot, name.as_bytes());
            }
            return;
        }
        if sset != SS_STATS {
            return;
        }
        // SAFETY: Per the function's contract.
        let dev = unsafe { Self::dev(ndev) };
        let mut counter = Counter(0);
        T::stats(dev, &mut counter);
        // SAFETY: ethtool sized `data` from `get_sset_count`, which counted
        // the same stats under the same lock (RTNL).
        let names = unsafe { core::slice::from_raw_parts_mut(data, counter.0 * GSTRING_LEN) };
        T::stats(
            dev,
            &mut Filler {
                names: Some(names),
                values: None,
                index: 0,
            },
        );
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
        let dev = unsafe { Self::dev(ndev) };
        let mut counter = Counter(0);
        T::stats(dev, &mut counter);
        // SAFETY: As in `get_strings`, for values.
        let values = unsafe { core::slice::from_raw_parts_mut(data, counter.0) };
        T::stats(
            dev,
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
        let (max, current) = T::channels(unsafe { Self::dev(ndev) });
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
        let dev = unsafe { Self::dev(ndev) };
        from_result(|| {
            T::set_channels(dev, ch.combined_count)?;
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
        let dev = unsafe { Self::dev(ndev) };
        from_result(|| {
            T::set_rings(dev, ring.rx_pending, ring.tx_pending)?;
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
        let (max, rx, tx) = T::rings(unsafe { Self::dev(ndev) });
        // SAFETY: `ring` is valid for writes.
        let ring = unsafe { &mut *ring };
        ring.rx_max_pending = max;
        ring.tx_max_pending = max;
        ring.rx_pending = rx;
        ring.tx_pending = tx;
    }
}
