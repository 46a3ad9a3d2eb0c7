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
//! RX streams are the exception: their records are packed without room
//! for a program, so streaming queues restart when the first program
//! comes (records then leave `XDP_PACKET_HEADROOM` in front of each frame
//! and `skb_shared_info` room behind it) and when the last one goes.

use kernel::{cpu::CpuId, prelude::*};

use super::bond;
use super::{queue::bump, Config, Nic};
use crate::hw::FuncKind;
use crate::linux::eopnotsupp;
use crate::linux::net::{
    ethtool::TcpDataSplit,
    instance_lock::RtnlLocked,
    netdev::NetDev,
    xdp::{XdpSetup, XdpXmitBatch},
    xsk::{XskPool, XskSetup},
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
        rtnl: &RtnlLocked<'_>,
        mut setup: XdpSetup<'_>,
    ) -> Result {
        if self.kind == FuncKind::Vf && bond::is_enslaved(dev, rtnl) {
            setup.refuse(c"this VF runs its synthetic NIC's XDP program: attach it there");
            return Err(EBUSY);
        }
        let new = setup.prog().map(|p| p.to_owned());
        let installed = new.is_some();
        let vf_streams = self.kind == FuncKind::Pf
            && bond::enslaved_vf(dev, rtnl).is_some_and(|vf| vf.data().rx_streaming());
        if installed && vf_streams {
            setup.refuse(c"the enslaved VF receives into RX streams: turn its rx-stream flag off");
            return Err(eopnotsupp());
        }
        let mut cfg = self.config.lock();
        if installed && cfg.tcp_data_split == TcpDataSplit::Enabled {
            // The core refuses single-buffer programs; this driver runs
            // no other kind, and a split frame is not one buffer.
            setup.refuse(c"tcp-data-split is on: turn it off (ethtool -G tcp-data-split auto)");
            return Err(EBUSY);
        }
        let restart = cfg.xdp != installed && cfg.rx_stream;
        if installed && restart {
            // Room in the records before the program runs on them.
            let new_cfg = Config { xdp: true, ..*cfg };
            self.reconfigure(dev, rtnl, &mut cfg, new_cfg, dev.mtu())?;
        }
        cfg.xdp = installed;
        let old = self.xdp.replace(rtnl, new);
        if !installed && restart {
            // Packed records again, once no program runs on them.
            let new_cfg = Config { xdp: false, ..*cfg };
            if let Err(e) = self.reconfigure(dev, rtnl, &mut cfg, new_cfg, dev.mtu()) {
                pr_warn!(
                    "{}: RX streams keep XDP's room: restart failed ({:?})\n",
                    dev.name(),
                    e
                );
            }
        }
        drop(cfg);
        // Receive coalescing stops while a program runs (`fix_features`).
        dev.update_features(rtnl);
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

    /// `ndo_bpf` `XDP_SETUP_XSK_POOL`: binds an AF_XDP pool to a queue in
    /// zero-copy mode, or lets the bound one go. A running queue pair
    /// restarts around the change (its RX ring takes the other kind of
    /// buffer), as the other queues do: frames in flight are lost, as
    /// for a ring resize. The pool is mapped for the card before use and
    /// unmapped once the rings that used it are gone.
    pub(super) fn install_xsk(
        &self,
        dev: &NetDev<Nic>,
        rtnl: &RtnlLocked<'_>,
        setup: XskSetup,
    ) -> Result {
        let q = usize::from(setup.queue);
        let mut cfg = self.config.lock();
        if q >= self.queues.len() {
            return Err(EINVAL);
        }
        if let Some(pool) = &setup.pool {
            if cfg.rx_stream {
                // AF_XDP needs the RX ring's buffers.
                return Err(eopnotsupp());
            }
            if pool.rx_frame_size() < self.geometry(&cfg, dev.mtu()).rx_frame {
                return Err(EINVAL);
            }
            pool.dma_map(&self.dma)?;
        }
        let restart = if cfg.running && q < usize::from(cfg.queues) {
            let same = *cfg;
            self.reconfigure(dev, rtnl, &mut cfg, same, dev.mtu())
        } else {
            Ok(())
        };
        match (setup.pool, restart) {
            (Some(pool), Err(e)) => {
                // Not bound after all: the queues come back without it.
                self.xsk.withdraw(rtnl, q);
                let same = *cfg;
                if cfg.running {
                    let _ = self.reconfigure(dev, rtnl, &mut cfg, same, dev.mtu());
                }
                pool.dma_unmap();
                Err(e)
            }
            (Some(_), Ok(())) => Ok(()),
            (None, _) => {
                // The rings that used it are gone, restarted or not.
                if let Some(old) = setup.old {
                    old.dma_unmap();
                }
                Ok(())
            }
        }
    }

    /// Whether the queues may receive into streams: not while an AF_XDP
    /// socket is bound in zero-copy mode (`EBUSY`), which needs the RX
    /// ring's buffers, nor while a synthetic NIC's VF runs its XDP
    /// program (the VF's program cannot be given room without the VF
    /// restarting on its own).
    pub(super) fn stream_allowed(&self, dev: &NetDev<Nic>, rtnl: &RtnlLocked<'_>) -> Result {
        let follows_xdp = self.kind == FuncKind::Vf
            && bond::is_enslaved(dev, rtnl)
            && self.xdp.cloned(rtnl).is_some();
        if follows_xdp || self.xsk.any(|_| true) {
            pr_info!(
                "{}: rx-stream refused: unbind AF_XDP sockets (or the synthetic NIC's XDP program) first\n",
                dev.name()
            );
            return Err(EBUSY);
        }
        Ok(())
    }

    /// The AF_XDP pool bound to queue `q` in zero-copy mode.
    pub(super) fn xsk_pool(&self, q: usize) -> Option<XskPool> {
        self.xsk.get(q)
    }

    /// Whether frames of `mtu` fit the buffers of every bound AF_XDP pool
    /// (`EINVAL` if not: unbind the socket first).
    pub(super) fn xsk_fits(&self, cfg: &Config, mtu: u32) -> Result {
        let need = self.geometry(cfg, mtu).rx_frame;
        if self.xsk.any(|pool| pool.rx_frame_size() < need) {
            return Err(EINVAL);
        }
        Ok(())
    }

    /// `ndo_xsk_wakeup`: user space filled the fill ring or added to the
    /// TX ring of the socket bound to `queue`: its pair polls.
    pub(super) fn xsk_wakeup(&self, queue: u32) -> Result {
        let q = self.queues.get(queue as usize).ok_or(EINVAL)?;
        if !q.xsk_bound() {
            return Err(ENXIO);
        }
        q.napi().schedule_from_task();
        Ok(())
    }

    /// Runs `master`'s program, or none: an enslaved VF follows its
    /// synthetic NIC's.
    pub(crate) fn follow_xdp(&self, rtnl: &RtnlLocked<'_>, master: Option<&Nic>) {
        let prog = master.and_then(|m| m.xdp.cloned(rtnl));
        if prog.is_some() && self.rx_streaming() {
            pr_warn!("rsnic: a VF in rx-stream mode joined a synthetic NIC with an XDP program: the VF runs none\n");
        }
        drop(self.xdp.replace(rtnl, prog));
    }
}
