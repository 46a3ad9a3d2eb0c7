// SPDX-License-Identifier: GPL-2.0

//! Hardware time stamping of a net device: what it can do (`ethtool -T`,
//! [`TsInfo`]) and what it is told to do (`SIOCSHWTSTAMP` and the ethtool
//! `tsconfig` request, [`HwTstamp`]; [`super::netdev_ops::NetDevOps`]'s
//! `hwtstamp_get` and `hwtstamp_set`, called with the device's instance
//! lock held).

use crate::linux::bindings;

/// `HWTSTAMP_TX_*`: which sent frames get a hardware time stamp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TxType {
    /// None (`HWTSTAMP_TX_OFF`).
    Off,
    /// Those whose socket asks (`HWTSTAMP_TX_ON`).
    On,
    /// A kind (one-step) the abstraction does not name: its raw value.
    Other(u32),
}

impl TxType {
    fn from_raw(raw: i32) -> Self {
        match u32::try_from(raw) {
            Ok(bindings::hwtstamp_tx_types_HWTSTAMP_TX_OFF) => Self::Off,
            Ok(bindings::hwtstamp_tx_types_HWTSTAMP_TX_ON) => Self::On,
            Ok(v) => Self::Other(v),
            Err(_) => Self::Other(u32::MAX),
        }
    }

    fn into_raw(self) -> i32 {
        let raw = match self {
            Self::Off => bindings::hwtstamp_tx_types_HWTSTAMP_TX_OFF,
            Self::On => bindings::hwtstamp_tx_types_HWTSTAMP_TX_ON,
            Self::Other(v) => v,
        };
        // CAST: the core validated the value (a small enum) on the way in.
        raw as i32
    }

    /// The bit of this kind in [`TsInfo::tx_types`].
    pub(crate) fn bit(self) -> u32 {
        1u32.checked_shl(self.into_raw() as u32).unwrap_or(0)
    }
}

/// `HWTSTAMP_FILTER_*`: which received frames get one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RxFilter {
    /// None (`HWTSTAMP_FILTER_NONE`).
    None,
    /// Every frame (`HWTSTAMP_FILTER_ALL`).
    All,
    /// A narrower filter (PTP or NTP frames only): its raw value. A device
    /// may stamp more than asked and say so.
    Other(u32),
}

impl RxFilter {
    fn from_raw(raw: i32) -> Self {
        match u32::try_from(raw) {
            Ok(bindings::hwtstamp_rx_filters_HWTSTAMP_FILTER_NONE) => Self::None,
            Ok(bindings::hwtstamp_rx_filters_HWTSTAMP_FILTER_ALL) => Self::All,
            Ok(v) => Self::Other(v),
            Err(_) => Self::Other(u32::MAX),
        }
    }

    fn into_raw(self) -> i32 {
        let raw = match self {
            Self::None => bindings::hwtstamp_rx_filters_HWTSTAMP_FILTER_NONE,
            Self::All => bindings::hwtstamp_rx_filters_HWTSTAMP_FILTER_ALL,
            Self::Other(v) => v,
        };
        // CAST: as in `TxType::into_raw`.
        raw as i32
    }

    /// The bit of this filter in [`TsInfo::rx_filters`].
    pub(crate) fn bit(self) -> u32 {
        1u32.checked_shl(self.into_raw() as u32).unwrap_or(0)
    }
}

/// A device's time stamping setting (`struct kernel_hwtstamp_config`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HwTstamp {
    /// Sent frames.
    pub(crate) tx: TxType,
    /// Received frames.
    pub(crate) rx: RxFilter,
}

impl Default for HwTstamp {
    /// Nothing stamped.
    fn default() -> Self {
        Self {
            tx: TxType::Off,
            rx: RxFilter::None,
        }
    }
}

impl HwTstamp {
    /// # Safety
    ///
    /// `raw` is live for the call.
    pub(super) unsafe fn read(raw: *const bindings::kernel_hwtstamp_config) -> Self {
        // SAFETY: Per the function's contract.
        let raw = unsafe { &*raw };
        Self {
            tx: TxType::from_raw(raw.tx_type),
            rx: RxFilter::from_raw(raw.rx_filter),
        }
    }

    /// # Safety
    ///
    /// `raw` is valid for writes for the call.
    pub(super) unsafe fn write(self, raw: *mut bindings::kernel_hwtstamp_config) {
        // SAFETY: Per the function's contract; plain fields.
        unsafe {
            (*raw).tx_type = self.tx.into_raw();
            (*raw).rx_filter = self.rx.into_raw();
        }
    }
}

/// `SOF_TIMESTAMPING_*` capability bits of [`TsInfo::so_timestamping`].
pub(crate) mod sof {
    use crate::linux::bindings;

    /// Hardware TX stamps.
    pub(crate) const TX_HARDWARE: u32 = bindings::SOF_TIMESTAMPING_TX_HARDWARE;
    /// Software TX stamps (the driver calls `skb_tx_timestamp`).
    pub(crate) const TX_SOFTWARE: u32 = bindings::SOF_TIMESTAMPING_TX_SOFTWARE;
    /// Hardware RX stamps.
    pub(crate) const RX_HARDWARE: u32 = bindings::SOF_TIMESTAMPING_RX_HARDWARE;
    /// The raw hardware clock is reported.
    pub(crate) const RAW_HARDWARE: u32 = bindings::SOF_TIMESTAMPING_RAW_HARDWARE;
}

/// What a device can stamp (`ethtool -T`, `struct kernel_ethtool_ts_info`).
/// The core adds software RX stamping itself.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TsInfo {
    /// [`sof`] bits.
    pub(crate) so_timestamping: u32,
    /// The device's PTP clock (`/dev/ptpN`), if it has one.
    pub(crate) phc_index: Option<i32>,
    /// [`TxType::bit`]s.
    pub(crate) tx_types: u32,
    /// [`RxFilter::bit`]s.
    pub(crate) rx_filters: u32,
}

impl TsInfo {
    /// # Safety
    ///
    /// `raw` is valid for writes for the call (the core zeroed it and set
    /// `cmd` and `phc_index` -1).
    pub(super) unsafe fn write(self, raw: *mut bindings::kernel_ethtool_ts_info) {
        // SAFETY: Per the function's contract; plain fields.
        unsafe {
            (*raw).so_timestamping |= self.so_timestamping;
            (*raw).phc_index = self.phc_index.unwrap_or(-1);
            (*raw).tx_types = self.tx_types;
            (*raw).rx_filters = self.rx_filters;
        }
    }
}
