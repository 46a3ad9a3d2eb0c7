// SPDX-License-Identifier: GPL-2.0

//! A VF's representor in switchdev mode (`pf0vf0`): the host's end of
//! the card's switch port to the VF, as mlx5's and ice's representors
//! are. What the VF sends that no rule forwards arrives here (the card's
//! `PortMiss` exceptions on the PF's exception queue); what is sent here
//! goes out of the VF's port (reinjected through the PF with a forward
//! action, so the VF receives it). tc flower rules on its ingress become
//! card rules on the VF's port. It has no queues of its own: the PF's
//! must be up for it to carry anything.

use kernel::{
    device::Device,
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc,
    },
};

use crate::hw;
use crate::linux::{
    devlink::Port,
    net::{
        ethtool::EthtoolOps,
        flower::FlowerCmd,
        instance_lock::RtnlLocked,
        netdev::{
            random_ether_addr, Feature, Features, LinkStats, NetDev, NetDevOps, NetDevRef,
            NetDevVTable, Registration, Setup,
        },
        skbuff::SkBuff,
        xdp::XdpFeatures,
    },
};

use super::Nic;

/// The representor's operations.
pub(crate) static REP_VTABLE: NetDevVTable<Rep> = NetDevVTable::new();

/// A registered representor; unregistered on drop.
pub(crate) type RepRegistration = Registration<Rep>;

/// A representor's state, in its net device's private area.
#[pin_data]
pub(crate) struct Rep {
    /// The PF whose queues carry its frames and whose GFT its rules.
    pf: NetDevRef<Nic>,
    /// The switch port it represents ([`hw::gft_rule::port`]).
    port: u16,
    rx_packets: Atomic<u64>,
    rx_bytes: Atomic<u64>,
    tx_packets: Atomic<u64>,
    tx_bytes: Atomic<u64>,
    tx_dropped: Atomic<u64>,
}

fn bump(counter: &Atomic<u64>, by: u64) {
    counter.fetch_add(by, Relaxed);
}

impl Rep {
    /// The switch port it represents.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// A frame the VF sent, received here.
    pub(super) fn received(&self, len: u32) {
        bump(&self.rx_packets, 1);
        bump(&self.rx_bytes, u64::from(len));
    }
}

/// Registers the representor of switch port `port` of the PF `pf`, as a
/// child of `parent` (the PF's device), belonging to the devlink port
/// `devlink_port` (a VF port with the card's switch id).
pub(crate) fn register(
    parent: &Device,
    pf: NetDevRef<Nic>,
    port: u16,
    devlink_port: Arc<Port>,
) -> Result<RepRegistration> {
    let setup = Setup {
        mac: random_ether_addr(),
        min_mtu: hw::MIN_MTU,
        max_mtu: hw::MAX_MTU,
        queues: 1,
        // No offloads but tc's: the stack hands it whole, checksummed
        // frames; flower rules on its ingress go to the card.
        hw_features: Features::from(Feature::HwTc),
        features: Features::from(Feature::HwTc),
        enc_features: Features::default(),
        tso_max_segs: 0,
        watchdog_jiffies: 0,
        stacked: false,
        irq_affinity_auto: false,
        netmem_tx: false,
        devlink_port: Some(devlink_port),
        xdp_features: XdpFeatures::default(),
        xdp_rx_hash: false,
        bpf_offload: None,
    };
    Registration::new(parent, &REP_VTABLE, 1, setup, move |_dev| {
        Ok(try_pin_init!(Rep {
            pf,
            port,
            rx_packets: Atomic::new(0),
            rx_bytes: Atomic::new(0),
            tx_packets: Atomic::new(0),
            tx_bytes: Atomic::new(0),
            tx_dropped: Atomic::new(0),
        }? Error))
    })
}

#[vtable]
impl NetDevOps for Rep {
    /// No queues of its own to restart.
    type QueueMem = ();

    fn open(dev: &NetDev<Self>, _rtnl: &RtnlLocked<'_>) -> Result {
        dev.carrier_on();
        dev.tx_start_all();
        Ok(())
    }

    fn stop(dev: &NetDev<Self>, _rtnl: &RtnlLocked<'_>) -> Result {
        dev.carrier_off();
        Ok(())
    }

    /// Out of the VF's port, through the PF.
    fn start_xmit(dev: &NetDev<Self>, skb: SkBuff) {
        let rep = dev.data();
        let len = skb.len();
        let sent = rep
            .pf
            .try_access()
            .is_some_and(|pf| pf.data().send_to_port(skb, rep.port).is_ok());
        if sent {
            bump(&rep.tx_packets, 1);
            bump(&rep.tx_bytes, u64::from(len));
        } else {
            bump(&rep.tx_dropped, 1);
        }
    }

    fn get_stats64(dev: &NetDev<Self>, stats: &mut LinkStats) {
        let rep = dev.data();
        stats.rx_packets = rep.rx_packets.load(Relaxed);
        stats.rx_bytes = rep.rx_bytes.load(Relaxed);
        stats.tx_packets = rep.tx_packets.load(Relaxed);
        stats.tx_bytes = rep.tx_bytes.load(Relaxed);
        stats.tx_dropped = rep.tx_dropped.load(Relaxed);
    }

    /// Rules on its ingress: packets the VF sends.
    fn tc_flower(dev: &NetDev<Self>, cmd: FlowerCmd<'_>) -> Result {
        let rep = dev.data();
        let pf = rep.pf.try_access().ok_or(ENODEV)?;
        pf.data().port_flower(&pf, rep.port, false, cmd)
    }
}

#[vtable]
impl EthtoolOps for Rep {}
