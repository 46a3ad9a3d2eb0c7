// SPDX-License-Identifier: GPL-2.0

//! Device memory (`ibv_alloc_dm`): allocations of the card's own memory
//! ([`hw::rdma::dm`]), which the process that made one maps through the
//! user doorbell BAR (its loads and stores reach the card directly) and
//! registers as a zero-based memory region the engine reads and writes.
//! A process maps only its own allocations: each is an mmap entry of its
//! context alone.

use kernel::{page::PAGE_SIZE, prelude::*};

use super::device::RdmaDev;
use crate::admin::AdminError;
use crate::hw::{
    self,
    rdma::{dm, rdma_cap},
    AdminCmd, AdminStatus, RdmaDmAllocated,
};
use crate::linux::{
    rdma::{
        dm::DmRequest,
        mmap::{MapTarget, UserMapping},
    },
    uapi,
};

/// An allocation's driver state.
#[pin_data]
pub(crate) struct RdmaDm {
    /// Its offset in the card's device memory.
    pub(crate) offset: u64,
    _mapping: UserMapping,
}

impl RdmaDev {
    /// Bytes one allocation may have: 0 on a card without device memory
    /// or a user doorbell BAR to show it through.
    pub(crate) fn max_dm_size(&self) -> u64 {
        if self.caps.flags & rdma_cap::DEVICE_MEMORY != 0 && self.udb_bar.is_some() {
            dm::SIZE as u64
        } else {
            0
        }
    }

    /// `alloc_dm`: the card allocates (whole pages, page aligned); the
    /// process may map it at the offset its handle gives.
    pub(crate) fn alloc_dm(&self, req: &DmRequest<'_>) -> Result<impl PinInit<RdmaDm, Error>> {
        let bar = self.udb_bar.ok_or_else(crate::linux::eopnotsupp)?;
        if self.max_dm_size() == 0 {
            return Err(crate::linux::eopnotsupp());
        }
        if req.len == 0 || req.len > self.max_dm_size() {
            return Err(EINVAL);
        }
        // Allocations are page aligned: any smaller alignment holds.
        if req.log_align > PAGE_SIZE.trailing_zeros() {
            return Err(EINVAL);
        }
        if req.handle > uapi::DM_MAX_HANDLE {
            return Err(ENOSPC);
        }
        let entry = self
            .admin
            .exec(AdminCmd::RdmaAllocDm { len: req.len })
            .map_err(|e| match e {
                AdminError::Refused(AdminStatus::NoSpace) => ENOMEM,
                e => e.into(),
            })?;
        let offset = RdmaDmAllocated::read_result(&entry).offset;
        let len = (req.len as usize).div_ceil(PAGE_SIZE) * PAGE_SIZE;
        // The card's answer is untrusted: inside its device memory, page
        // aligned and apart from every allocation a process maps (a card
        // reset forgets them before the RDMA half is rebound, and must not
        // hand one process another's), or nothing is mapped.
        let end = offset.checked_add(len as u64);
        let mut live = self.dms.lock();
        let inside = offset % PAGE_SIZE as u64 == 0
            && end.is_some_and(|end| end <= dm::SIZE as u64)
            && live
                .iter()
                .all(|&(o, n)| end.is_some_and(|end| end <= o) || offset >= o + n);
        let pgoff = uapi::DM_MMAP_PGOFF_BASE + req.handle * uapi::DM_MMAP_SLOT_PAGES;
        let target = MapTarget::DeviceMemory {
            phys: bar + dm::BAR_OFFSET as u64 + offset,
            len,
        };
        let mapped = if inside {
            req.map_at(pgoff, target)
        } else {
            Err(EIO)
        };
        let recorded = mapped.and_then(|m| {
            live.push((offset, len as u64), GFP_KERNEL)?;
            Ok(m)
        });
        drop(live);
        match recorded {
            Ok(mapping) => Ok(try_pin_init!(RdmaDm {
                offset,
                _mapping: mapping,
            }? Error)),
            Err(e) => {
                if inside {
                    let _ = self.admin.exec(AdminCmd::RdmaFreeDm { offset });
                }
                Err(e)
            }
        }
    }

    /// `dealloc_dm`: no region uses it (ib_core counted them).
    pub(crate) fn dealloc_dm(&self, dm: &RdmaDm) -> Result {
        match self.admin.exec(AdminCmd::RdmaFreeDm { offset: dm.offset }) {
            // A reset card forgot it already.
            Ok(_) | Err(AdminError::Refused(AdminStatus::NotFound)) => {
                self.dms.lock().retain(|e| e.0 != dm.offset);
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The region registration of `len` bytes (0 too) of `dm` from
    /// `offset` (inside it: ib_core checked), zero-based.
    pub(crate) fn dm_mr_reg(
        &self,
        pdn: u32,
        dm: &RdmaDm,
        offset: u64,
        len: u64,
        access: u32,
    ) -> Result<hw::rdma::MrReg> {
        Ok(hw::rdma::MrReg {
            key: 0,
            pd: pdn,
            access,
            kind: hw::rdma::mr_kind::DEVICE,
            max_pages: 0,
            page_shift: 0,
            pbl: dm.offset.checked_add(offset).ok_or(EINVAL)?,
            iova: 0,
            len,
        })
    }
}
