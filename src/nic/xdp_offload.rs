// SPDX-License-Identifier: GPL-2.0

//! XDP offload on the PF: the card runs the program on every frame from
//! the wire, before the GFT and the queues (`hw/xdp.rs`), with its maps
//! in its own memory. The kernel verifies the program
//! (`linux/net/bpf_offload.rs`); this file turns its requests into the
//! card's admin commands.
//!
//! A function reset (devlink health recovery, reload) makes the card
//! forget the program and its maps. A reload replaces the net device,
//! and the kernel destroys what was bound to the old one; recovery keeps
//! the device, so the driver loads the program again and makes its maps
//! again, empty, as a card restarted after a fault would have them.

use kernel::prelude::*;

use super::Nic;
use crate::admin::AdminError;
use crate::hw::{
    self,
    xdp::{map_op, map_type, KEY_ROOM, MAX_ENTRIES, MAX_INSNS, MAX_KEY, MAX_VALUE},
    AdminCmd, AdminStatus, FuncKind, XdpStatsResult,
};
use crate::linux::dma::DmaBuffer;
use crate::linux::net::{
    bpf_offload::{MapDef, MapElem, XdpOffloadSetup},
    instance_lock::RtnlLocked,
    netdev::NetDev,
    xdp::XdpProg,
};

/// `BPF_FUNC_map_lookup_elem`, `_update_elem`, `_delete_elem`: the
/// helpers the card runs.
pub(super) fn card_helper(id: i32) -> bool {
    matches!(id, 1..=3)
}

/// What the driver keeps of the offload: the attached program and its
/// image (to load again after a reset), the maps made, and the buffer
/// map elements pass through.
pub(super) struct XdpHw {
    prog: Option<(XdpProg, KVec<u8>)>,
    maps: KVec<(u32, MapDef)>,
    next_map: u32,
    buf: Option<DmaBuffer>,
}

impl XdpHw {
    pub(super) fn new() -> Self {
        Self {
            prog: None,
            maps: KVec::new(),
            next_map: 1,
            buf: None,
        }
    }
}

/// The errno of a refused map command, as the kernel's own maps give it.
fn map_errno(e: AdminError) -> Error {
    match e {
        AdminError::Refused(AdminStatus::NotFound) => ENOENT,
        AdminError::Refused(AdminStatus::BadState) => EEXIST,
        AdminError::Refused(AdminStatus::NoSpace) => E2BIG,
        e => e.into(),
    }
}

impl Nic {
    /// Whether the card runs offloaded programs for this NIC (a PF's).
    pub(super) fn offloads_xdp(&self) -> bool {
        self.kind == FuncKind::Pf && self.info.features & hw::feature::XDP_OFFLOAD != 0
    }

    /// The card's counts of what offloaded programs returned, or `None`
    /// if it does not answer (or runs none for this NIC).
    pub(super) fn offload_xdp_stats(&self) -> Option<XdpStatsResult> {
        if !self.offloads_xdp() {
            return None;
        }
        let entry = self.admin.exec(AdminCmd::XdpStats).ok()?;
        Some(XdpStatsResult::read_result(&entry))
    }

    /// `XDP_SETUP_PROG_HW`: loads the program into the card (it replaces
    /// any before at once) or stops it.
    pub(super) fn offload_xdp(
        &self,
        dev: &NetDev<Nic>,
        _rtnl: &RtnlLocked<'_>,
        mut setup: XdpOffloadSetup<'_>,
    ) -> Result {
        let mut hw = self.xdp_hw.lock();
        let Some(prog) = setup.prog() else {
            if hw.prog.take().is_some() {
                self.admin.run(AdminCmd::XdpUnload)?;
                pr_info!("{}: offloaded XDP program detached\n", dev.name());
            }
            return Ok(());
        };
        if setup.image_len() > MAX_INSNS as usize {
            setup.refuse(c"the card runs programs of at most 4096 instructions");
            return Err(E2BIG);
        }
        let mut image = KVec::with_capacity(setup.image_len() * 8, GFP_KERNEL)?;
        for insn in setup.image() {
            image.extend_from_slice(&insn, GFP_KERNEL)?;
        }
        if let Err(e) = self.load_image(&image) {
            setup.refuse(c"the card refused the program (see the verifier's log and dmesg)");
            return Err(e);
        }
        let attached = hw.prog.replace((prog.to_owned(), image)).is_none();
        if attached {
            pr_info!("{}: offloaded XDP program attached\n", dev.name());
        }
        Ok(())
    }

    fn load_image(&self, image: &[u8]) -> Result {
        let buf = self.dma.alloc(image.len())?;
        buf.write(0, image)?;
        // CAST: at most `MAX_INSNS` instructions.
        let count = (image.len() / 8) as u32;
        self.admin.run(AdminCmd::XdpLoad {
            prog: buf.dma_addr(0)?,
            count,
        })
    }

    /// `BPF_OFFLOAD_MAP_ALLOC`: makes the map on the card.
    pub(super) fn offload_map_alloc(&self, dev: &NetDev<Nic>, def: &MapDef) -> Result<u32> {
        // The card's map types are the kernel's numbers.
        let why = if def.map_type != map_type::ARRAY && def.map_type != map_type::HASH {
            Some((EINVAL, "array and hash maps only"))
        } else if def.flags != 0 {
            Some((EINVAL, "no map flags"))
        } else if def.key_size > MAX_KEY || def.value_size > MAX_VALUE {
            Some((E2BIG, "keys of at most 64 bytes and values of at most 256"))
        } else if def.max_entries > MAX_ENTRIES {
            Some((E2BIG, "at most 65536 entries"))
        } else {
            None
        };
        if let Some((e, what)) = why {
            pr_info!(
                "{}: offloaded map refused: the card takes {}\n",
                dev.name(),
                what
            );
            return Err(e);
        }
        let mut hw = self.xdp_hw.lock();
        let id = hw.next_map;
        self.create_map(id, def)?;
        hw.maps.push((id, *def), GFP_KERNEL)?;
        hw.next_map += 1;
        Ok(id)
    }

    fn create_map(&self, id: u32, def: &MapDef) -> Result {
        self.admin.run(AdminCmd::XdpMapCreate {
            id,
            map_type: def.map_type,
            key_size: def.key_size,
            value_size: def.value_size,
            max_entries: def.max_entries,
        })
    }

    /// `BPF_OFFLOAD_MAP_FREE`. The card may have forgotten it (a reset)
    /// or be gone: nothing to undo then.
    pub(super) fn offload_map_free(&self, id: u32) {
        let mut hw = self.xdp_hw.lock();
        hw.maps.retain(|(m, _)| *m != id);
        let _ = self.admin.run(AdminCmd::XdpMapDestroy { id });
    }

    /// An element operation on map `id`, through the card.
    pub(super) fn offload_map_elem(&self, id: u32, elem: MapElem<'_>) -> Result {
        let mut hw = self.xdp_hw.lock();
        if hw.buf.is_none() {
            hw.buf = Some(self.dma.alloc(KEY_ROOM as usize + MAX_VALUE as usize)?);
        }
        let buf = hw.buf.as_ref().ok_or(ENOMEM)?;
        let value_at = KEY_ROOM as usize;
        let (op, flags) = match &elem {
            MapElem::Lookup { key, .. } => (map_op::LOOKUP, buf.write(0, key).map(|()| 0)?),
            MapElem::Update { key, value, flags } => {
                buf.write(0, key)?;
                buf.write(value_at, value)?;
                (map_op::UPDATE, *flags)
            }
            MapElem::Delete { key } => (map_op::DELETE, buf.write(0, key).map(|()| 0)?),
            MapElem::NextKey { key: Some(key), .. } => {
                (map_op::NEXT_KEY, buf.write(0, key).map(|()| 0)?)
            }
            MapElem::NextKey { key: None, .. } => (map_op::NEXT_KEY, 1),
        };
        self.admin
            .exec(AdminCmd::XdpMapElem {
                id,
                op,
                flags,
                buf: buf.dma_addr(0)?,
            })
            .map_err(map_errno)?;
        match elem {
            MapElem::Lookup { value, .. } => buf.read(value_at, value),
            MapElem::NextKey { next, .. } => buf.read(value_at, next),
            MapElem::Update { .. } | MapElem::Delete { .. } => Ok(()),
        }
    }

    /// After a function reset: the card's maps again (empty) and the
    /// program. Failures are logged; the program then stays unloaded.
    pub(super) fn restore_xdp_offload(&self, dev: &NetDev<Nic>) {
        let hw = self.xdp_hw.lock();
        let mut ok = hw
            .maps
            .iter()
            .all(|(id, def)| self.create_map(*id, def).is_ok());
        if let Some((_, image)) = &hw.prog {
            ok = ok && self.load_image(image).is_ok();
        }
        if !ok {
            pr_warn!(
                "{}: the offloaded XDP program and maps could not be restored after the reset\n",
                dev.name()
            );
        }
    }
}
