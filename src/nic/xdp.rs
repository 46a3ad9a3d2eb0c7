// SPDX-License-Identifier: GPL-2.0

//! Native XDP on the synthetic NIC: installing the program. Every RX
//! queue runs it on each frame before an skb exists (`queue/rx.rs`);
//! `XDP_TX` frames go out on the TX ring of the same queue pair, shared
//! with the stack under the pair's TX lock (`queue/tx.rs`).
//!
//! A frame is always in one buffer: the page pool's buffers are sized
//! for the MTU (high-order pages above a page), with
//! `XDP_PACKET_HEADROOM` in front, so a program without frags support
//! runs at any MTU and nothing is restarted when a program comes or goes.

use kernel::{cpu::CpuId, prelude::*};

use super::{queue::bump, Nic};
use crate::bond;
use crate::hw::FuncKind;
use crate::linux::net::{
    netdev::NetDev,
    rtnl::Rtnl,
    xdp::{XdpSetup, XdpXmitBatch},
};

impl Nic {
    /// `ndo_bpf` `XDP_SETUP_PROG`: installs the program (or removes it).
    /// Polls pick the new one up from their next frame on. A synthetic
    /// NIC's enslaved VF runs the same program (as netvsc's does), so the
    /// accelerated data path runs it too; the VF itself then takes none
    /// of its own.
    pub(super) fn install_xdp(
        &self,
        dev: &NetDev<Nic>,
        rtnl: &Rtnl,
        mut setup: XdpSetup<'_>,
    ) -> Result {
        if self.kind == FuncKind::Vf && bond::is_enslaved(dev, rtnl) {
            setup.refuse(c"this VF runs its synthetic NIC's XDP program: attach it there");
            return Err(EBUSY);
        }
        let new = setup.prog().map(|p| p.to_owned());
        let installed = new.is_some();
        let old = self.xdp.replace(rtnl, new);
        if installed != old.is_some() {
            pr_info!(
                "{}: native XDP program {}\n",
                dev.name(),
                if installed { "attached" } else { "detached" }
            );
        }
        if self.kind == FuncKind::Pf {
            bond::xdp_changed(dev, rtnl);
        }
        Ok(())
    }

    /// `ndo_xdp_xmit`: frames other devices' programs redirected here go
    /// out on the TX ring of this CPU's queue pair (modulo the queues in
    /// use), shared with the stack as `XDP_TX` is; the card is told now
    /// if `flush`. Frames without room stay the core's, which frees them.
    pub(super) fn xdp_xmit(&self, dev: &NetDev<Nic>, frames: &mut XdpXmitBatch<'_>, flush: bool) {
        let in_use = dev.real_tx_queues().max(1);
        let Some(q) = self
            .queues
            .get((CpuId::current().as_u32() % in_use) as usize)
        else {
            return;
        };
        let refused = frames.send_each(|frame| q.xdp_xmit(frame));
        bump(&q.stats.tx_xdp_xmit_errors, refused as u64);
        if flush {
            q.ring_xdp_tx();
        }
    }

    /// Runs `master`'s program, or none: an enslaved VF follows its
    /// synthetic NIC's.
    pub(crate) fn follow_xdp(&self, rtnl: &Rtnl, master: Option<&Nic>) {
        let prog = master.and_then(|m| m.xdp.cloned(rtnl));
        drop(self.xdp.replace(rtnl, prog));
    }
}
