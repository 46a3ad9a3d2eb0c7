// SPDX-License-Identifier: GPL-2.0

//! Hardware time stamps (`ethtool -T`, `SIOCSHWTSTAMP`): the card stamps
//! every received frame's completion with its clock while the filter is
//! on, and a sent frame's when its socket asks and TX stamping is on
//! (`hw::TxDesc::TSTAMP`). The clock is the function's PTP hardware
//! clock (`crate::function`'s), whose index the NIC is given. Without one
//! (a VF, or a card without [`hw::feature::PTP`]) only software stamps.

use kernel::{prelude::*, sync::atomic::Atomic, sync::atomic::Relaxed};

use super::Nic;
use crate::hw::{self, AdminCmd};
use crate::linux::eopnotsupp;
use crate::linux::net::tstamp::{sof, HwTstamp, RxFilter, TsInfo, TxType};

/// What the NIC was told to stamp; read by the data path.
pub(crate) struct Tstamp {
    /// The PTP clock the card stamps with, if the function has one.
    phc_index: Option<i32>,
    tx: Atomic<bool>,
    rx: Atomic<bool>,
}

impl Tstamp {
    /// Nothing stamped yet, with the function's clock `phc_index`.
    pub(crate) fn new(phc_index: Option<i32>) -> Self {
        Self {
            phc_index,
            tx: Atomic::new(false),
            rx: Atomic::new(false),
        }
    }

    /// Whether a sent frame whose socket asks is stamped.
    pub(crate) fn tx_on(&self) -> bool {
        self.tx.load(Relaxed)
    }

    /// Whether the card stamps received frames.
    pub(crate) fn rx_on(&self) -> bool {
        self.rx.load(Relaxed)
    }

    /// The setting as the core reports it.
    pub(crate) fn config(&self) -> HwTstamp {
        HwTstamp {
            tx: if self.tx_on() {
                TxType::On
            } else {
                TxType::Off
            },
            rx: if self.rx_on() {
                RxFilter::All
            } else {
                RxFilter::None
            },
        }
    }

    /// What `ethtool -T` shows: software TX stamps always, hardware ones
    /// with the clock.
    pub(crate) fn info(&self) -> TsInfo {
        let Some(phc) = self.phc_index else {
            return TsInfo {
                so_timestamping: sof::TX_SOFTWARE,
                ..TsInfo::default()
            };
        };
        TsInfo {
            so_timestamping: sof::TX_SOFTWARE
                | sof::TX_HARDWARE
                | sof::RX_HARDWARE
                | sof::RAW_HARDWARE,
            phc_index: Some(phc),
            tx_types: TxType::Off.bit() | TxType::On.bit(),
            rx_filters: RxFilter::None.bit() | RxFilter::All.bit(),
        }
    }
}

impl Nic {
    /// Sets what is stamped: TX off or on (one-step kinds are `ERANGE`,
    /// as in mlx5 and ice), RX none or all (a PTP-only filter becomes
    /// all, written back into `cfg`). Without a clock, `EOPNOTSUPP`.
    pub(super) fn set_hwtstamp(&self, cfg: &mut HwTstamp) -> Result {
        if self.tstamp.phc_index.is_none() {
            return Err(eopnotsupp());
        }
        let tx = match cfg.tx {
            TxType::Off => false,
            TxType::On => true,
            TxType::Other(_) => return Err(ERANGE),
        };
        let rx = cfg.rx != RxFilter::None;
        cfg.rx = if rx { RxFilter::All } else { RxFilter::None };
        // Under the configuration lock, which a start holds while it
        // pushes what is stored.
        let cfg_lock = self.config.lock();
        if cfg_lock.running {
            self.admin
                .run(AdminCmd::SetTimestamps { rx: u8::from(rx) })?;
        }
        self.tstamp.rx.store(rx, Relaxed);
        self.tstamp.tx.store(tx, Relaxed);
        drop(cfg_lock);
        Ok(())
    }

    /// Tells the card at a start whether to stamp received frames (a
    /// function reset made it forget).
    pub(super) fn push_timestamps(&self) -> Result {
        if self.info.features & hw::feature::PTP == 0 {
            return Ok(());
        }
        let rx = self.tstamp.rx_on();
        self.admin.run(AdminCmd::SetTimestamps { rx: u8::from(rx) })
    }
}
