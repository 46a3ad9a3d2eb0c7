// SPDX-License-Identifier: GPL-2.0

//! Memory regions: DMA regions (all memory by bus address) and
//! fast-registration regions, whose page list `map_mr_sg` fills and a
//! REG_MR work request hands to the card.

use kernel::{prelude::*, sync::SpinLock};

use crate::linux::{dma::DmaBuffer, rdma::umem::UserMemory, sync::lock_irqsave};

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
    /// A user region: the process's memory, pinned while registered.
    _user: Option<UserMemory>,
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
            _user: None,
        }? Error)
    }

    /// A region over a process's memory, which stays pinned until the
    /// region is deregistered.
    pub(crate) fn user(key: u32, mem: UserMemory) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            key,
            pages <- kernel::new_spinlock!(None),
            _user: Some(mem),
        }? Error)
    }

    /// A fast-registration region of up to `max` pages listed in `buf`.
    pub(crate) fn fast_reg(key: u32, buf: DmaBuffer, max: u32) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            key,
            pages <- kernel::new_spinlock!(Some(PageList { buf, max, count: 0 })),
            _user: None,
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
