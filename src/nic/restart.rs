// SPDX-License-Identifier: GPL-2.0

//! The core's queue restart (queue management, `netdev_queue_mgmt_ops`)
//! on the synthetic NIC: RX queue `n` is queue pair `n`, restarted on new
//! rings and buffers without taking the device down. The new memory is
//! allocated while the pair runs; the pair is destroyed on the card, its
//! memory taken (and rewound, in case the core starts it again), and the
//! pair created again on the new memory.
//!
//! What the card may still use is never freed: if it does not answer a
//! destroy or a create, the memory stays with the pair and the health
//! work resets the function, as for any lost admin command.

use kernel::prelude::*;

use super::queue::{PairMem, QueueVector, ResetCause};
use super::{rtnl, Nic};
use crate::linux::net::{
    instance_lock::DevLocked,
    netdev::{NetDev, NetDevRef},
    queue_mgmt::QueueStartError,
};
use crate::linux::{enetdown, eopnotsupp};

impl Nic {
    /// The pair of RX queue `queue`, if one is in use.
    fn restart_pair(&self, queue: u32) -> Result<(u16, &QueueVector)> {
        let q = u16::try_from(queue)?;
        let pair = self.queues.get(usize::from(q)).ok_or(EINVAL)?;
        Ok((q, pair))
    }

    /// New rings and buffers for the pair of RX queue `queue`, as the
    /// pair's own are configured. `ENETDOWN` while the device is down
    /// (the core expects that answer), `EOPNOTSUPP` for RX streams (their
    /// memory is not buffers), `EBUSY` while an AF_XDP socket owns the
    /// queue's buffers.
    pub(super) fn queue_mem_alloc(
        &self,
        dev: &NetDev<Self>,
        locked: &DevLocked,
        queue: u32,
    ) -> Result<KBox<PairMem>> {
        let cfg = self.config.lock();
        if !cfg.running {
            return Err(enetdown());
        }
        let (q, pair) = self.restart_pair(queue)?;
        if q >= cfg.queues {
            return Err(EINVAL);
        }
        if cfg.rx_stream {
            return Err(eopnotsupp());
        }
        if self.xsk_pool(usize::from(q)).is_some() {
            return Err(EBUSY);
        }
        let geo = self.geometry(&cfg, dev.mtu());
        let boxed = KBox::new_uninit(GFP_KERNEL)?;
        Ok(KBox::write(
            boxed,
            pair.alloc(locked, &self.dma, geo, self.tx_csum(), None)?,
        ))
    }

    /// Stops the pair of RX queue `queue`: TX stopped, the card's pair
    /// destroyed, its memory handed over.
    pub(super) fn queue_stop(
        &self,
        dev: &NetDev<Self>,
        locked: &DevLocked,
        queue: u32,
    ) -> Result<KBox<PairMem>> {
        let (q, pair) = self.restart_pair(queue)?;
        // Before anything stops: a restart that cannot even hold the old
        // memory changes nothing.
        let boxed = KBox::new_uninit(GFP_KERNEL)?;
        dev.tx_stop(q);
        self.destroy_pair(q);
        if self.admin.lost_track() {
            self.reset_later(pair);
            return Err(EIO);
        }
        match pair.take_mem(locked) {
            Some(mem) => Ok(KBox::write(boxed, mem)),
            // It had none (a reset that did not bring it back): the
            // health work's to bring back.
            None => {
                self.reset_later(pair);
                Err(EIO)
            }
        }
    }

    /// Starts the pair of RX queue `queue` on `mem`. If it does not start,
    /// the memory goes back to the core, unless the card may use it.
    pub(super) fn queue_start(
        &self,
        dev: &NetDev<Self>,
        locked: &DevLocked,
        queue: u32,
        mem: KBox<PairMem>,
    ) -> Result<(), QueueStartError<PairMem>> {
        let (q, pair) = match self.restart_pair(queue) {
            Ok(found) => found,
            Err(error) => {
                return Err(QueueStartError {
                    error,
                    mem: Some(mem),
                })
            }
        };
        let created = self.create_pair(pair.install(KBox::into_inner(mem)));
        let error = match created.and_then(|()| pair.start(locked)) {
            Ok(()) => {
                dev.tx_wake(q);
                return Ok(());
            }
            Err(e) => e,
        };
        if created.is_ok() {
            self.destroy_pair(q);
        }
        if self.admin.lost_track() {
            self.reset_later(pair);
            return Err(QueueStartError { error, mem: None });
        }
        let mem = pair
            .take_mem(locked)
            .and_then(|m| KBox::new(m, GFP_KERNEL).ok());
        Err(QueueStartError { error, mem })
    }

    /// Leaves `pair` to the health work, which resets it (or the whole
    /// function, if the card lost track of its commands).
    fn reset_later(&self, pair: &QueueVector) {
        pair.request_reset(ResetCause::RESTART);
        self.schedule_work();
    }
}

/// Restarts RX queue `queue` of `dev` through the core, as a memory
/// provider's binding would (debugfs `queue_restart`).
pub(crate) fn restart_rx_queue(dev: &NetDevRef<Nic>, queue: u32) -> Result {
    let rtnl = rtnl::lock();
    let dev = dev.try_access().ok_or(ENODEV)?;
    let locked = dev.lock_instance(&rtnl);
    dev.restart_rx_queue(locked.dev(), queue)
}
