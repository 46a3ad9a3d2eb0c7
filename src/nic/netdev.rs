// SPDX-License-Identifier: GPL-2.0

//! The synthetic NIC's net device operations.

use kernel::{prelude::*, sync::atomic::Relaxed};

use super::bond;
use super::{
    queue::{bump, PairMem, QueuePair},
    recovery::HEALTH_CHECK_MS,
    Nic, MAX_MC_FILTER,
};
use crate::hw::{self, mc_filter_bit, rx_mode, AdminCmd, FuncKind};
use crate::linux::net::{
    bpf_offload::{MapDef, MapElem, XdpOffloadSetup},
    flower::FlowerCmd,
    instance_lock::{DevLocked, RtnlLocked},
    netdev::{
        Feature, Features, HwAddrList, LinkStats, NetDev, NetDevOps, RxQueueStats, StackPick,
        TxQueueStats,
    },
    queue_mgmt::QueueStartError,
    shaper::{Handle, Scope, Shaper, ShaperAck, ShaperCaps},
    skbuff::{SkBuff, SkBuffRef},
    tstamp::HwTstamp,
    xdp::{XdpSetup, XdpXmitBatch},
    xsk::{XskSetup, XskSlots},
};

#[vtable]
impl NetDevOps for Nic {
    fn open(dev: &NetDev<Self>, rtnl: &RtnlLocked<'_>) -> Result {
        let nic = dev.data();
        let mut cfg = nic.config.lock();
        nic.start_queues(dev, rtnl, &cfg, dev.mtu(), dev.features())?;
        cfg.running = true;
        nic.admin_irq.handler().set_running(true);
        dev.tx_start_all();
        nic.reset_work.schedule_after(HEALTH_CHECK_MS);
        Ok(())
    }

    fn stop(dev: &NetDev<Self>, rtnl: &RtnlLocked<'_>) -> Result {
        let nic = dev.data();
        let mut cfg = nic.config.lock();
        dev.tx_disable(rtnl);
        nic.admin_irq.handler().set_running(false);
        nic.stop_queues(dev, rtnl, usize::from(cfg.queues));
        cfg.running = false;
        Ok(())
    }

    fn start_xmit(dev: &NetDev<Self>, skb: SkBuff) {
        let nic = dev.data();
        // Through the VF while the data path is the VF's and it can send;
        // devmem frames stay here: their dmabuf is bound to this device
        // (the core would drop them on the VF).
        let skb = if skb.frags_readable() {
            match nic
                .bond
                .tx
                .xmit(skb, |vf| vf.is_running() && vf.carrier_ok())
            {
                Ok(()) => return,
                Err(skb) => skb,
            }
        } else {
            skb
        };
        match nic.queues.get(usize::from(skb.queue_mapping())) {
            Some(queue) => queue.xmit(dev, skb),
            // The stack only uses real queues; drop (and free) anything else.
            None => drop(skb),
        }
    }

    fn select_queue(dev: &NetDev<Self>, skb: &mut SkBuffRef<'_>, stack: StackPick<'_>) -> u16 {
        // As netvsc: while a VF is enslaved, its choice decides (folded
        // onto this device's queues), so a flow's queue is the same on
        // either data path.
        let queue = match dev.data().bond.tx.pick(skb) {
            Some(vf_queue) => u32::from(vf_queue),
            None => return stack.pick(skb),
        };
        (queue % dev.real_tx_queues().max(1)) as u16
    }

    fn get_stats64(dev: &NetDev<Self>, stats: &mut LinkStats) {
        let nic = dev.data();
        *stats = nic.own_link_stats();
        if nic.kind == FuncKind::Pf {
            *stats += &nic.bond.vf_link_stats();
        }
    }

    fn set_rx_mode(dev: &NetDev<Self>, rtnl: &RtnlLocked<'_>, mc: &HwAddrList) -> Result {
        let (promisc, allmulti) = dev.promisc_allmulti();
        let mut flags = rx_mode::BROADCAST;
        if promisc {
            flags |= rx_mode::PROMISC;
        }
        if allmulti || mc.len() > MAX_MC_FILTER {
            flags |= rx_mode::ALLMULTI;
        }
        let mut mc_filter = 0u64;
        mc.for_each(|mac| mc_filter |= 1 << mc_filter_bit(mac));
        let nic = dev.data();
        nic.rx_filter_flags.store(flags, Relaxed);
        nic.rx_filter_mc.store(mc_filter, Relaxed);
        nic.apply_rx_filter(bond::rx_filter_master(dev, rtnl).map(|pf| pf.data()))?;
        if nic.kind == FuncKind::Pf {
            bond::rx_mode_changed(dev, rtnl);
        }
        Ok(())
    }

    fn set_mac_address(dev: &NetDev<Self>, _rtnl: &RtnlLocked<'_>, mac: [u8; 6]) -> Result {
        dev.data().admin.run(AdminCmd::SetMac { mac })
    }

    fn change_mtu(dev: &NetDev<Self>, rtnl: &RtnlLocked<'_>, mtu: u32) -> Result {
        let nic = dev.data();
        let mut cfg = nic.config.lock();
        nic.xsk_fits(&cfg, mtu)?;
        if !cfg.running {
            nic.admin.run(AdminCmd::SetMtu { mtu })?;
        } else {
            // Buffers are sized for the MTU: restart the queues around it.
            let same = *cfg;
            nic.reconfigure(dev, rtnl, &mut cfg, same, mtu)?;
        }
        drop(cfg);
        bond::mtu_changed(dev, rtnl, mtu);
        Ok(())
    }

    type QueueMem = PairMem;

    /// A provider's buffers may be up to 16 pages (io_uring's large
    /// chunks): the card fills any buffer length a descriptor gives.
    const MAX_RX_BUF_LEN: u32 = crate::hw::MAX_PROVIDER_BUF_LEN;

    fn queue_mem_alloc(
        dev: &NetDev<Self>,
        locked: &DevLocked,
        queue: u32,
    ) -> Result<KBox<PairMem>> {
        dev.data().queue_mem_alloc(dev, locked, queue)
    }

    fn queue_stop(dev: &NetDev<Self>, locked: &DevLocked, queue: u32) -> Result<KBox<PairMem>> {
        dev.data().queue_stop(dev, locked, queue)
    }

    fn queue_start(
        dev: &NetDev<Self>,
        locked: &DevLocked,
        queue: u32,
        mem: KBox<PairMem>,
    ) -> Result<(), QueueStartError<PairMem>> {
        dev.data().queue_start(dev, locked, queue, mem)
    }

    fn queue_stats(
        dev: &NetDev<Self>,
        _locked: &DevLocked,
        queue: u32,
    ) -> (RxQueueStats, TxQueueStats) {
        dev.data()
            .queues
            .get(queue as usize)
            .map_or_else(Default::default, |q| q.counters())
    }

    fn base_stats(dev: &NetDev<Self>, _locked: &DevLocked) -> (RxQueueStats, TxQueueStats) {
        let nic = dev.data();
        // Queues beyond the real count (after `ethtool -L` shrank it) keep
        // their counters here, so totals never go backwards.
        let active = usize::from(nic.config.lock().queues);
        // Every counter the queues report, from zero.
        let mut base = QueuePair::zero_counters();
        // A PF's VF path counts too (the bond keeps what VFs counted).
        let vf = (nic.kind == FuncKind::Pf).then(|| nic.bond.vf_queue_counters());
        let idle = nic.queues.iter().skip(active).map(|q| q.counters());
        for (rx, tx) in Iterator::chain(idle, vf) {
            base.0 += &rx;
            base.1 += &tx;
        }
        base
    }

    fn tc_flower(dev: &NetDev<Self>, cmd: FlowerCmd<'_>) -> Result {
        // The PF's GFT carries the rules, on the wire's port; a VF has
        // none.
        dev.data()
            .port_flower(dev, crate::hw::gft_rule::port::UPLINK, false, cmd)
    }

    /// A VXLAN device's rules (switchdev mode): the wire's tunnelled
    /// packets.
    fn tc_flower_tunnel(dev: &NetDev<Self>, cmd: FlowerCmd<'_>) -> Result {
        dev.data()
            .port_flower(dev, crate::hw::gft_rule::port::UPLINK, true, cmd)
    }

    fn set_features(dev: &NetDev<Self>, rtnl: &RtnlLocked<'_>, features: Features) -> Result {
        let nic = dev.data();
        if let Some(flow) = &nic.flow {
            let hw_tc = features.contains(Feature::HwTc);
            if hw_tc != dev.features().contains(Feature::HwTc) {
                flow.set_cache(hw_tc)?;
            }
        }
        nic.set_card_offloads(features)?;
        // Rules apply only while ntuple-filters is on (as most drivers).
        if !features.contains(Feature::Ntuple) && dev.features().contains(Feature::Ntuple) {
            nic.clear_flow_rules()?;
        }
        bond::features_changed(dev, rtnl, features);
        Ok(())
    }

    fn hwtstamp_get(dev: &NetDev<Self>, _locked: &DevLocked) -> Result<HwTstamp> {
        Ok(dev.data().tstamp.config())
    }

    fn hwtstamp_set(dev: &NetDev<Self>, _locked: &DevLocked, cfg: &mut HwTstamp) -> Result {
        dev.data().set_hwtstamp(cfg)
    }

    fn shaper_set(
        dev: &NetDev<Self>,
        _locked: &DevLocked,
        shaper: &Shaper,
        ack: &mut ShaperAck<'_>,
    ) -> Result {
        dev.data().set_shaper(shaper, ack)
    }

    fn shaper_delete(
        dev: &NetDev<Self>,
        _locked: &DevLocked,
        handle: Handle,
        ack: &mut ShaperAck<'_>,
    ) -> Result {
        dev.data().delete_shaper(handle, ack)
    }

    fn shaper_group(
        dev: &NetDev<Self>,
        _locked: &DevLocked,
        leaves: &[Shaper],
        node: &Shaper,
        ack: &mut ShaperAck<'_>,
    ) -> Result {
        dev.data().group_shapers(leaves, node, ack)
    }

    fn shaper_caps(dev: &NetDev<Self>, scope: Scope) -> ShaperCaps {
        if dev.data().info.features & hw::feature::TX_SHAPERS == 0 {
            return ShaperCaps::default();
        }
        super::shaper::caps(scope)
    }

    fn fix_features(dev: &NetDev<Self>, rtnl: &RtnlLocked<'_>, mut features: Features) -> Features {
        if !dev.data().gro_hw_possible(rtnl) && features.contains(Feature::GroHw) {
            features ^= Feature::GroHw;
        }
        features
    }

    fn xdp_setup(dev: &NetDev<Self>, rtnl: &RtnlLocked<'_>, setup: XdpSetup<'_>) -> Result {
        dev.data().install_xdp(dev, rtnl, setup)
    }

    fn xdp_offload_setup(
        dev: &NetDev<Self>,
        rtnl: &RtnlLocked<'_>,
        setup: XdpOffloadSetup<'_>,
    ) -> Result {
        dev.data().offload_xdp(dev, rtnl, setup)
    }

    fn xdp_offload_helper(id: i32) -> bool {
        super::xdp_offload::card_helper(id)
    }

    fn xdp_map_alloc(dev: &NetDev<Self>, def: &MapDef) -> Result<u32> {
        dev.data().offload_map_alloc(dev, def)
    }

    fn xdp_map_free(dev: &NetDev<Self>, id: u32) {
        dev.data().offload_map_free(id);
    }

    fn xdp_map_elem(dev: &NetDev<Self>, id: u32, elem: MapElem<'_>) -> Result {
        dev.data().offload_map_elem(id, elem)
    }

    fn xdp_xmit(dev: &NetDev<Self>, frames: &mut XdpXmitBatch<'_>, flush: bool) {
        dev.data().xdp_xmit(dev, frames, flush);
    }

    fn xsk_setup(dev: &NetDev<Self>, rtnl: &RtnlLocked<'_>, setup: XskSetup) -> Result {
        dev.data().install_xsk(dev, rtnl, setup)
    }

    fn xsk_slots(&self) -> &XskSlots {
        &self.xsk
    }

    fn xsk_wakeup(dev: &NetDev<Self>, queue: u32) -> Result {
        dev.data().xsk_wakeup(queue)
    }

    fn tx_timeout(dev: &NetDev<Self>, queue: u32) {
        let nic = dev.data();
        let Some(q) = nic.queues.get(queue as usize) else {
            return;
        };
        bump(&q.stats.tx_timeouts, 1);
        pr_warn!(
            "{}: TX queue {} timed out, resetting it\n",
            dev.name(),
            queue
        );
        if q.request_reset(super::queue::ResetCause::TX_TIMEOUT) {
            nic.health_work.schedule();
        }
    }
}
