// SPDX-License-Identifier: GPL-2.0

//! What the function's clients ask of it: the NIC's [`NicEvents`] and
//! [`FlowOffload`], the RDMA half's [`RdmaParent`] and [`RdmaEvents`].

use kernel::{
    device::Device,
    prelude::*,
    sync::{atomic::Relaxed, Arc},
};

use super::{Function, RdmaAux};
use crate::gft::Gft;
use crate::linux::{
    device::reprobe,
    devlink::Registration,
    net::{
        skbuff::SkBuff,
        upper::{NetDevHold, PortNetDev},
    },
};
use crate::nic::{FlowOffload, Nic, NicEvents};
use crate::rdma::{RdmaEvents, RdmaParent, RdmaPort};

impl NicEvents for RdmaAux {
    /// After a function reset the card's RDMA engine has no GIDs, QPs,
    /// CQs or MRs: the RDMA half, if bound, is unbound (ib_core tells its
    /// users the device is gone) and bound again to a fresh engine, as
    /// mlx5 reloads its auxiliary devices after a firmware reset.
    fn card_was_reset(&self, nic_name: &CStr) {
        if !self.bound.load(Relaxed) {
            return;
        }
        // Not under the lock: unbinding and binding take it.
        let Some(rdma) = self.device() else {
            return;
        };
        match reprobe(&rdma) {
            Ok(()) => pr_info!("{}: RDMA half bound afresh after the reset\n", nic_name),
            Err(e) => pr_err!("{}: RDMA half not bound again: {:?}\n", nic_name, e),
        }
    }
}

impl FlowOffload for Gft {
    fn queue_exception(&self, skb: SkBuff) -> bool {
        Gft::queue_exception(self, skb)
    }

    fn decide_exceptions(&self, budget: u32, reinject: &mut dyn FnMut(SkBuff) -> bool) -> bool {
        for _ in 0..budget {
            let Some(skb) = self.next_exception() else {
                return false;
            };
            if let Some(skb) = self.decide(skb) {
                let sent = reinject(skb);
                self.reinjected(sent);
            }
        }
        true
    }

    fn age(&self) {
        Gft::age(self)
    }

    fn restore(&self) {
        Gft::restore(self)
    }

    fn set_cache(&self, on: bool) -> Result {
        Gft::set_cache(self, on)
    }

    fn for_each_counter(&self, fetch: bool, each: &mut dyn FnMut(&str, u64)) {
        Gft::for_each_counter(self, fetch, each)
    }
}

/// The PF's NIC, whose `rdma` health reporter hears of failed QPs.
struct NicRdmaEvents(NetDevHold<Nic>);

impl RdmaEvents for NicRdmaEvents {
    fn qp_failed(&self, qpn: u32) {
        self.0.get().data().rdma_qp_failed(qpn);
    }
}

impl RdmaParent for Registration<Function> {
    fn attach(&self, aux: &Device) -> Result<RdmaPort> {
        let function = self.data();
        *function.rdma.device.lock() = Some(aux.into());
        let loaded = function.loaded.lock();
        let loaded = loaded.as_ref().ok_or(ENODEV)?;
        let dev = loaded.nic().dev();
        let events: Arc<dyn RdmaEvents> =
            Arc::new(NicRdmaEvents(NetDevHold::new(dev)), GFP_KERNEL)?;
        Ok(RdmaPort {
            admin: loaded.admin().clone(),
            netdev: PortNetDev::new(dev),
            mac: *dev.data().perm_mac(),
            events,
        })
    }

    fn set_bound(&self, bound: bool) {
        self.data().rdma.bound.store(bound, Relaxed);
    }
}
