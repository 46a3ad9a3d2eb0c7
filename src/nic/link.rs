// SPDX-License-Identifier: GPL-2.0

//! The link: the admin vector's interrupt reads the card's link state and
//! the carrier follows it while the interface is up.

use kernel::{
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc,
    },
};

use super::Nic;
use crate::hw::{self, LinkStatus, VfAssoc};
use crate::linux::{irq::IrqHandler, net::netdev::NetDevRef};
use crate::regs::Registers;
use crate::selftest::IrqCount;

/// The link-change interrupt (admin vector): carrier follows the card.
#[pin_data]
pub(crate) struct AdminIrq {
    pub(super) dev: NetDevRef<Nic>,
    pub(super) regs: Arc<Registers>,
    /// Last link state reported, so each change is logged once.
    pub(super) reported_up: Atomic<u32>,
    /// Interrupts seen (for `ethtool -t`).
    pub(super) fired: Atomic<u32>,
    /// Whether the interface is up (carrier is only reported then).
    pub(super) running: Atomic<u32>,
}

impl AdminIrq {
    /// Reads the link state and updates the carrier, logging a change.
    /// Runs in the interrupt handler; does nothing while the device's
    /// state does not exist (before it is built: the interface is not up
    /// yet; after it is unregistered: it is down for good).
    fn sync_link(&self) {
        let Some(dev) = self.dev.try_access() else {
            return;
        };
        let running = self.running.load(Relaxed) != 0;
        // All ones (or a failed read) is a card that is not answering, not
        // a link state: keep what we have until it answers again. But a
        // stopped interface has no carrier whatever the card says: `stop`
        // must leave it off even for a card gone, or the health check
        // could drop it after `unregister_netdev` (which stops the
        // device first), queueing a link event for a freed device.
        let up = match self.regs.get_answered::<LinkStatus>() {
            Some(v) => v.up(),
            None => {
                if !running {
                    dev.carrier_off();
                }
                return;
            }
        };
        if up && running {
            dev.carrier_on();
        } else {
            dev.carrier_off();
        }
        if self.reported_up.xchg(u32::from(up), Relaxed) != u32::from(up) {
            let speed = hw::LINK_SPEED_MBPS / 1000;
            if up {
                pr_info!("{}: link up, {} Gbit/s\n", dev.name(), speed);
            } else {
                pr_info!("{}: link down\n", dev.name());
            }
        }
    }
}

impl AdminIrq {
    /// Records whether the interface is up and re-reads the link.
    pub(super) fn set_running(&self, running: bool) {
        self.running.store(u32::from(running), Relaxed);
        self.sync_link();
    }
}

impl AdminIrq {
    /// PF: reads which foreign VF the card offers (netvsc's VF
    /// association) and hands it to the bond, whose work acts on it.
    fn sync_vf_offer(&self) {
        let Some(dev) = self.dev.try_access() else {
            return;
        };
        if dev.data().kind() != hw::FuncKind::Pf {
            return;
        }
        let Some(assoc) = self.regs.get_answered::<VfAssoc>() else {
            return;
        };
        let serial = if assoc.present() {
            match self.regs.read(hw::regs::VF_SERIAL) {
                Ok(serial) => Some(serial),
                Err(_) => return,
            }
        } else {
            None
        };
        super::bond::vf_offered(&dev, serial);
    }
}

impl IrqHandler for AdminIrq {
    fn handle(&self) -> bool {
        self.fired.fetch_add(1, Relaxed);
        self.sync_link();
        self.sync_vf_offer();
        true
    }
}

impl IrqCount for AdminIrq {
    fn fired(&self) -> u32 {
        self.fired.load(Relaxed)
    }
}
