// SPDX-License-Identifier: GPL-2.0

//! Memory regions: DMA regions (all memory by bus address) and
//! fast-registration regions, whose page list `map_mr_sg` fills and a
//! REG_MR work request hands to the card.

use kernel::{
    prelude::*,
    sync::{Arc, Mutex, MutexGuard, SpinLock},
};

use super::odp::OdpRegion;
use crate::linux::{
    dma::DmaBuffer,
    rdma::{umem::UserMemory, verbs::Access},
    sync::lock_irqsave,
};

/// A memory window's driver state: its key's index is the card's.
pub(crate) struct RdmaMw {
    /// Its first key (binds change the variant byte, not the index).
    pub(crate) key: u32,
}

/// A memory region's driver state.
#[pin_data]
pub(crate) struct RdmaMr {
    /// Its key (index in bits 8-31; the variant byte changes with each
    /// fast registration, under ib_core's control).
    pub(crate) key: u32,
    /// Fast registration: the page list the card reads, and the pages in
    /// it.
    #[pin]
    pages: SpinLock<Option<PageList>>,
    /// A user region: what it is registered over, and how (changed in
    /// place by a re-registration).
    #[pin]
    user: Mutex<Option<UserRegion>>,
    /// An on-demand region: its memory and mappings.
    pub(crate) on_demand: Option<Arc<OdpRegion>>,
}

/// What a user region is registered over, and how.
pub(crate) struct UserRegion {
    /// The process's memory, pinned while registered.
    pub(crate) mem: UserMemory,
    /// The region's address of its first byte.
    pub(crate) iova: u64,
    /// Its access rights.
    pub(crate) access: Access,
    /// Its protection domain.
    pub(crate) pd: u32,
}

struct PageList {
    buf: DmaBuffer,
    max: u32,
    count: u32,
}

impl RdmaMr {
    /// A DMA region.
    pub(crate) fn dma(key: u32) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            key,
            pages <- kernel::new_spinlock!(None),
            user <- kernel::new_mutex!(None),
            on_demand: None,
        }? Error)
    }

    /// A region over a process's memory, which stays pinned until the
    /// region is deregistered (or re-registered over other memory).
    pub(crate) fn user(key: u32, region: UserRegion) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            key,
            pages <- kernel::new_spinlock!(None),
            user <- kernel::new_mutex!(Some(region)),
            on_demand: None,
        }? Error)
    }

    /// An on-demand region over a process's memory, nothing pinned.
    pub(crate) fn on_demand(key: u32, region: Arc<OdpRegion>) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            key,
            pages <- kernel::new_spinlock!(None),
            user <- kernel::new_mutex!(None),
            on_demand: Some(region),
        }? Error)
    }

    /// The user region, locked (`None` inside for any other region).
    pub(crate) fn user_region(&self) -> MutexGuard<'_, Option<UserRegion>> {
        self.user.lock()
    }

    /// A fast-registration region of up to `max` pages listed in `buf`.
    pub(crate) fn fast_reg(key: u32, buf: DmaBuffer, max: u32) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            key,
            pages <- kernel::new_spinlock!(Some(PageList { buf, max, count: 0 })),
            user <- kernel::new_mutex!(None),
            on_demand: None,
        }? Error)
    }

    /// Forgets the pages of the last mapping.
    pub(crate) fn clear_pages(&self) {
        if let Some(p) = lock_irqsave(&self.pages).as_mut() {
            p.count = 0;
        }
    }

    /// Adds a page; `ENOMEM` once the list is full.
    pub(crate) fn add_page(&self, addr: u64) -> Result {
        let mut pages = lock_irqsave(&self.pages);
        let p = pages.as_mut().ok_or(EINVAL)?;
        if p.count >= p.max {
            return Err(ENOMEM);
        }
        p.buf.write(p.count as usize * 8, &addr.to_le_bytes())?;
        p.count += 1;
        Ok(())
    }

    /// The page list's bus address and its length, for a REG_MR.
    pub(crate) fn page_list(&self) -> Result<(u64, u32)> {
        let pages = lock_irqsave(&self.pages);
        let p = pages.as_ref().ok_or(EINVAL)?;
        Ok((p.buf.dma_addr(0)?, p.count))
    }
}
