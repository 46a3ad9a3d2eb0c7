// SPDX-License-Identifier: GPL-2.0

//! What the function's clients ask of it: the NIC's [`FlowOffload`], the
//! RDMA half's [`RdmaParent`]; the NIC's `NicEvents` and the RDMA half's
//! `RdmaEvents` are in `health.rs`.

use kernel::{
    device::Device,
    prelude::*,
    sync::{atomic::Relaxed, Arc},
};

use super::{health::FunctionEvents, Function};
use crate::gft::{Gft, Ports};
use crate::linux::{
    devlink::Registration,
    net::{flower::FlowerCmd, skbuff::SkBuff, upper::PortNetDev},
};
use crate::nic::{FlowOffload, FlowerPorts};
use crate::rdma::{RdmaEvents, RdmaParent, RdmaPort};

impl FlowOffload for Gft {
    fn queue_exception(&self, skb: SkBuff) -> bool {
        Gft::queue_exception(self, skb)
    }

    fn decide_exceptions(
        &self,
        budget: u32,
        reinject: &mut dyn FnMut(SkBuff, bool) -> bool,
    ) -> bool {
        Gft::decide_exceptions(self, budget, reinject)
    }

    fn restore(&self) {
        Gft::restore(self)
    }

    fn set_cache(&self, on: bool) -> Result {
        Gft::set_cache(self, on)
    }

    fn flower(&self, cmd: FlowerCmd<'_>, ports: &FlowerPorts<'_>) -> Result {
        let ports = Ports {
            in_port: ports.in_port,
            tunnel: ports.tunnel,
            redirect: ports.redirect,
            encap: ports.encap,
        };
        Gft::flower(self, cmd, &ports)
    }

    fn has_rules(&self) -> bool {
        Gft::has_rules(self)
    }

    fn for_each_counter(&self, fetch: bool, each: &mut dyn FnMut(&str, u64)) {
        Gft::for_each_counter(self, fetch, each)
    }
}

impl RdmaParent for Registration<Function> {
    fn attach(&self, aux: &Device) -> Result<RdmaPort> {
        let function = self.data();
        *function.rdma.device.lock() = Some(aux.into());
        let instance = function.instance().ok_or(ENODEV)?;
        let loaded = function.loaded.lock();
        let loaded = loaded.as_ref().ok_or(ENODEV)?;
        let dev = loaded.nic().dev();
        let events: Arc<dyn RdmaEvents> =
            Arc::new(FunctionEvents::new(&instance, loaded.admin()), GFP_KERNEL)?;
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
