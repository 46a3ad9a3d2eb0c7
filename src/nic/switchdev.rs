// SPDX-License-Identifier: GPL-2.0

//! The PF's side of switchdev mode: the card told the mode (again after
//! each function reset), the representor found for what the VF sent
//! (`PortMiss` exceptions), a representor's frames sent out of its port,
//! and tc flower rules of the switch's ports given to the GFT with the
//! ports their redirects name.

use kernel::prelude::*;

use super::rep::Rep;
use super::{FlowerPorts, Nic};
use crate::hw::gft::{
    action, Action, Direction, Encap, ExceptionMeta, ExceptionReason, ReinjectMeta, META_LEN,
    VXLAN_PORT,
};
use crate::hw::gft_rule::port;
use crate::hw::AdminCmd;
use crate::linux::{
    net::{
        flower::{FlowerCmd, TunnelKey},
        netdev::NetDev,
        netdev::NetDevRef,
        route::tunnel_route4,
        skbuff::SkBuff,
    },
    sync::lock_bh,
};

impl Nic {
    /// Whether the card's switch is in switchdev mode.
    pub(crate) fn switchdev(&self) -> bool {
        lock_bh(&self.rep).is_some()
    }

    /// Why the card's switch cannot go to switchdev mode now, if it
    /// cannot: only a PF's can; not while a VF is bonded to the synthetic
    /// NIC (transparent bonding is legacy mode's; unplug the VF first);
    /// not under rules, which would change meaning.
    pub(crate) fn switchdev_refused(&self) -> Option<&'static CStr> {
        let Some(flow) = &self.flow else {
            return Some(c"rsnic: the card's switch is its PF's");
        };
        if self.bond.has_vf() {
            return Some(c"rsnic: a VF is bonded to the synthetic NIC; unplug it first");
        }
        if flow.has_rules() {
            return Some(c"rsnic: GFT rules or tc flower rules are in place; remove them first");
        }
        None
    }

    /// Why the switch cannot go back to legacy mode now: not under tc
    /// flower rules (a representor's would go with it).
    pub(crate) fn legacy_refused(&self) -> Option<&'static CStr> {
        match &self.flow {
            Some(flow) if flow.has_rules() => {
                Some(c"rsnic: tc flower rules are in place; remove them first")
            }
            _ => None,
        }
    }

    /// Switchdev mode, with `rep` the representor of the VF's port.
    pub(crate) fn enter_switchdev(&self, rep: NetDevRef<Rep>) -> Result {
        self.admin.run(AdminCmd::SetEswitchMode { mode: 1 })?;
        *lock_bh(&self.rep) = Some(rep);
        Ok(())
    }

    /// Legacy mode again. The representor's handle goes whatever the
    /// card says (its registration waits for it).
    pub(crate) fn leave_switchdev(&self) -> Result {
        let rep = lock_bh(&self.rep).take();
        drop(rep);
        self.admin.run(AdminCmd::SetEswitchMode { mode: 0 })?;
        Ok(())
    }

    /// After a function reset: the card is in legacy mode; tell it the
    /// mode again.
    pub(super) fn restore_switch_mode(&self) -> Result {
        if self.switchdev() {
            self.admin.run(AdminCmd::SetEswitchMode { mode: 1 })?;
        }
        Ok(())
    }

    /// Whether `skb`, an exception from the card, is a `PortMiss`: a
    /// frame a VF sent, for its representor.
    pub(super) fn is_port_miss(skb: &SkBuff) -> bool {
        skb.head().first() == Some(&(ExceptionReason::PortMiss as u8))
    }

    /// A `PortMiss` exception (NAPI context): the frame goes up on the
    /// representor of the port the card names; dropped if there is none.
    pub(super) fn port_miss(&self, mut skb: SkBuff) -> Result {
        let meta = skb
            .head()
            .get(..META_LEN)
            .and_then(ExceptionMeta::from_bytes)
            .ok_or(EINVAL)?;
        // Under the lock, without a reference of our own per frame: the
        // representor goes only after leaving the slot.
        let slot = lock_bh(&self.rep);
        let rep = slot.as_ref().ok_or(ENODEV)?.try_access().ok_or(ENODEV)?;
        if rep.data().port() != meta.port {
            return Err(EINVAL);
        }
        // CAST: META_LEN is 128.
        skb.pull(META_LEN as u32)?;
        if skb.len() < 14 {
            return Err(EINVAL);
        }
        rep.data().received(skb.len());
        skb.receive_on(&rep);
        Ok(())
    }

    /// A representor's frame, out of switch port `to` (the VF
    /// receives it): reinjected through the PF's first queue pair with a
    /// forward action. Dropped (an error) if that pair is not running or
    /// its ring is full.
    pub(super) fn send_to_port(&self, mut skb: SkBuff, to: u16) -> Result {
        let meta = ReinjectMeta {
            dir: Direction::Tx,
            action: Action {
                flags: action::FORWARD,
                port: to,
                ..Action::default()
            },
        };
        // CAST: META_LEN is 128.
        skb.push(META_LEN as u32)?.copy_from_slice(&meta.to_bytes());
        let q = self.queues.first().ok_or(ENODEV)?;
        q.reinject(skb, false).map_err(|_| EBUSY)
    }

    /// A tc flower request on the ingress of switch port `in_port`
    /// (`pf` is this NIC's device; `tunnel`: the block is a VXLAN
    /// device's).
    pub(super) fn port_flower(
        &self,
        pf: &NetDev<Nic>,
        in_port: u16,
        tunnel: bool,
        cmd: FlowerCmd<'_>,
    ) -> Result {
        // A VF's NIC has no GFT, nor rules.
        let flow = self.flow.as_ref().ok_or_else(crate::linux::eopnotsupp)?;
        let ports = FlowerPorts {
            in_port,
            tunnel,
            redirect: &|ifindex| self.switch_port_of(pf, ifindex),
            encap: &|key| self.tunnel_encap(pf, key),
        };
        flow.flower(cmd, &ports)
    }

    /// The outer headers of VXLAN tunnel `key`, as the card adds them:
    /// IPv4, the VXLAN port, the route leaving by this PF (the wire) and
    /// its next hop resolved. Switchdev mode only.
    fn tunnel_encap(&self, pf: &NetDev<Nic>, key: &TunnelKey) -> Result<Encap, &'static CStr> {
        if !self.switchdev() {
            return Err(c"rsnic: tunnels need switchdev mode (devlink dev eswitch set)");
        }
        if !key.ipv4 {
            return Err(c"rsnic: the card sends IPv4 tunnels only");
        }
        if key.dport != 0 && key.dport != VXLAN_PORT {
            return Err(c"rsnic: the card sends VXLAN to port 4789 only");
        }
        let id = u32::try_from(key.id)
            .ok()
            .filter(|id| *id < 1 << 24)
            .ok_or(c"rsnic: a VXLAN id has 24 bits")?;
        let dst = [key.dst[0], key.dst[1], key.dst[2], key.dst[3]];
        let src = [key.src[0], key.src[1], key.src[2], key.src[3]];
        let route = match tunnel_route4(pf, dst, src) {
            Ok(route) => route,
            Err(e) if e == EAGAIN => {
                return Err(c"rsnic: the tunnel's next hop is not resolved yet")
            }
            Err(_) => return Err(c"rsnic: no route to the tunnel's remote address"),
        };
        if route.ifindex != pf.ifindex() {
            return Err(c"rsnic: the tunnel's route does not leave by this card's wire");
        }
        let mut encap = Encap {
            id,
            smac: route.smac,
            dmac: route.dmac,
            ..Encap::default()
        };
        encap.sip[..4].copy_from_slice(&route.src);
        encap.dip[..4].copy_from_slice(&dst);
        Ok(encap)
    }

    /// The switch port of device `ifindex`, a redirect's target: the
    /// wire for this PF's own device, the VF's port for its
    /// representor.
    fn switch_port_of(&self, pf: &NetDev<Nic>, ifindex: i32) -> Result<u16, &'static CStr> {
        let Some(rep) = lock_bh(&self.rep).clone() else {
            return Err(c"rsnic: redirect needs switchdev mode (devlink dev eswitch set)");
        };
        if ifindex == pf.ifindex() {
            return Ok(port::UPLINK);
        }
        let port = rep
            .try_access()
            .filter(|r| r.ifindex() == ifindex)
            .map(|r| r.data().port());
        port.ok_or(c"rsnic: redirect to a device that is not a port of this card's switch")
    }
}
