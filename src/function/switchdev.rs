// SPDX-License-Identifier: GPL-2.0

//! The card's switch mode (`devlink dev eswitch`). In legacy mode (the
//! default, and after a reload) the PF's synthetic NIC bonds the VF
//! transparently; in switchdev mode the PF's net device is the wire's
//! representor and the VF's port gets one of its own (`pf0vf0`, a PCI VF
//! devlink port on the card's switch), and tc flower rules on both
//! program the card. A mode change is refused while a VF is bonded or
//! rules are in place, so nothing is lost by it.

use kernel::{device::Device, prelude::*, sync::Arc};

use super::Function;
use crate::hw::{gft_rule::port, FuncKind};
use crate::linux::devlink::{DevlinkRef, EswitchMode, Extack, Locked, Port, PortFlavour};
use crate::linux::net::flower::TunnelBlocks;
use crate::nic::rep::{self, RepRegistration};
use crate::nic::Nic;

/// The devlink port index of the VF's representor (the PF's is 0).
const VF_PORT_INDEX: u32 = 1;

/// What switchdev mode adds to the function. Field order is drop
/// order: the VXLAN devices' blocks (their rules go) and the
/// representor before its devlink port.
pub(super) struct Switchdev {
    /// VXLAN devices' ingress blocks, bound to the PF's NIC (decap
    /// rules: the wire's tunnelled packets).
    tunnels: TunnelBlocks<Nic>,
    rep: RepRegistration,
    port: Arc<Port>,
}

impl Function {
    /// The switch's mode.
    pub(crate) fn eswitch_mode(&self) -> EswitchMode {
        if self.switchdev.lock().is_some() {
            EswitchMode::Switchdev
        } else {
            EswitchMode::Legacy
        }
    }

    /// `devlink dev eswitch set ... mode`: `parent` is the PF's device;
    /// the instance lock is held (`locked`).
    pub(crate) fn set_eswitch_mode(
        &self,
        parent: &Device,
        mode: EswitchMode,
        extack: &mut Extack<'_>,
        locked: &Locked<'_>,
    ) -> Result {
        if self.kind != FuncKind::Pf {
            return Err(extack.refuse(
                crate::linux::eopnotsupp(),
                c"rsnic: the card's switch is its PF's",
            ));
        }
        if mode == self.eswitch_mode() {
            return Ok(());
        }
        match mode {
            EswitchMode::Switchdev => self.enter_switchdev(parent, extack, locked),
            EswitchMode::Legacy => {
                let refused = {
                    let loaded = self.loaded.lock();
                    loaded
                        .as_ref()
                        .and_then(|l| l.nic().dev().data().legacy_refused())
                };
                if let Some(why) = refused {
                    return Err(extack.refuse(EBUSY, why));
                }
                self.leave_switchdev(Some(locked));
                Ok(())
            }
        }
    }

    fn enter_switchdev(
        &self,
        parent: &Device,
        extack: &mut Extack<'_>,
        locked: &Locked<'_>,
    ) -> Result {
        let pf = {
            let loaded = self.loaded.lock();
            let Some(l) = loaded.as_ref() else {
                return Err(extack.refuse(ENODEV, c"rsnic: the function is not running"));
            };
            let nic = l.nic().dev().data();
            if let Some(why) = nic.switchdev_refused() {
                return Err(extack.refuse(EBUSY, why));
            }
            nic.handle()
        };
        let instance = self.instance().ok_or(ENODEV)?;
        let switch_id = self.switch_id()?;
        let dl_port = Port::new(
            DevlinkRef::new(&instance),
            locked,
            VF_PORT_INDEX,
            PortFlavour::PciVf(0),
            Some(&switch_id),
        )?;
        let rep = match rep::register(parent, pf.clone(), port::VF0, dl_port.clone()) {
            Ok(rep) => rep,
            Err(e) => {
                let _ = dl_port.unregister(locked);
                return Err(e);
            }
        };
        let tunnels = match TunnelBlocks::register(pf.clone()) {
            Ok(t) => t,
            Err(e) => {
                drop(rep);
                let _ = dl_port.unregister(locked);
                return Err(e);
            }
        };
        let entered = match pf.try_access() {
            Some(nic) => nic.data().enter_switchdev(rep.handle()),
            None => Err(ENODEV),
        };
        if let Err(e) = entered {
            drop(tunnels);
            drop(rep);
            let _ = dl_port.unregister(locked);
            return Err(extack.refuse(e, c"rsnic: the card refused switchdev mode"));
        }
        *self.switchdev.lock() = Some(Switchdev {
            tunnels,
            rep,
            port: dl_port,
        });
        Ok(())
    }

    /// Back to legacy mode (a mode change, a reload's first half with
    /// the instance lock `locked`, or remove without it): the card told,
    /// the representor unregistered, then its devlink port. Nothing if
    /// in legacy mode.
    pub(crate) fn leave_switchdev(&self, locked: Option<&Locked<'_>>) {
        let Some(sw) = self.switchdev.lock().take() else {
            return;
        };
        if let Some(l) = self.loaded.lock().as_ref() {
            // The card may be gone (remove): the mode is forgotten anyway.
            let _ = l.nic().dev().data().leave_switchdev();
        }
        let Switchdev { tunnels, rep, port } = sw;
        // The tunnel devices' rules go first (tc takes them away through
        // the NIC, still here).
        drop(tunnels);
        drop(rep);
        if let Some(locked) = locked {
            let _ = port.unregister(locked);
        }
        // Otherwise its drop unregisters it, taking the lock.
        drop(port);
    }
}
