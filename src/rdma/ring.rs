// SPDX-License-Identifier: GPL-2.0

//! The memory of a CQ's or QP's ring: the kernel's own, which the driver
//! reads and writes, or one a process maps and uses directly (the kernel
//! allocates it, so the card gets one contiguous bus range; the process
//! writes WQEs and reads CQEs there itself).

use kernel::{dma::DmaAddress, prelude::*, sync::Arc};

use crate::linux::{
    dma::{DmaBuffer, DmaDevice},
    rdma::{
        mmap::{MapTarget, SharedPages, UserMapping},
        udata::UserData,
    },
};

/// A ring's memory.
pub(crate) enum RingMem {
    /// A kernel consumer's.
    Kernel(DmaBuffer),
    /// A process's: the pages and the mapping it was offered.
    User {
        pages: Arc<SharedPages>,
        map: UserMapping,
    },
}

impl RingMem {
    /// `len` bytes for the process making the call `udata` is of.
    pub(crate) fn user(dma: &DmaDevice, udata: &UserData<'_>, len: usize) -> Result<Self> {
        let pages = SharedPages::alloc(dma, len)?;
        let map = udata.map(MapTarget::Pages(pages.clone()))?;
        Ok(Self::User { pages, map })
    }

    /// Bus address of the first entry.
    pub(crate) fn dma_addr(&self) -> Result<DmaAddress> {
        match self {
            Self::Kernel(buf) => buf.dma_addr(0),
            Self::User { pages, .. } => Ok(pages.dma_addr()),
        }
    }

    /// The kernel's ring; `EINVAL` for a process's, which only the
    /// process writes.
    pub(crate) fn kernel(&self) -> Result<&DmaBuffer> {
        match self {
            Self::Kernel(buf) => Ok(buf),
            Self::User { .. } => Err(EINVAL),
        }
    }

    /// The offset the process maps the ring at (0 for a kernel ring).
    pub(crate) fn mmap_offset(&self) -> u64 {
        match self {
            Self::Kernel(_) => 0,
            Self::User { map, .. } => map.offset(),
        }
    }
}
