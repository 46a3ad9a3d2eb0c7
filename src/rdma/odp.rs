// SPDX-License-Identifier: GPL-2.0

//! On-demand paging: a process's memory region registered with
//! `IB_ACCESS_ON_DEMAND` is not pinned. The card raises a page-fault
//! event for a page it has no translation for; work here faults the page
//! in (`ib_umem_odp`, hmm_range_fault), maps it and gives the card the
//! translation (`RDMA_ODP_MAP`), or says the process has no memory there.
//! When the kernel takes pages back (munmap, migration, reclaim), the
//! card forgets them (`RDMA_ODP_UNMAP`) before they are unmapped.
//! `ibv_advise_mr` maps pages ahead of use the same way.

use kernel::{
    prelude::*,
    sync::{Arc, Mutex, SpinLock},
};

use crate::admin::{AdminError, AdminQueue};
use crate::hw::rdma::{odp_pte, MAX_ODP_MAP_PAGES};
use crate::hw::{AdminCmd, AdminStatus};
use crate::linux::{
    dma::{DmaBuffer, DmaDevice},
    rdma::odp::{OdpClient, OdpMemory, OdpPage},
    sync::lock_irqsave,
    work::{PinnedWork, PinnedWorkRun},
};

/// Pages mapped around a faulting one at once (the fault's page and
/// those after it, within the region): one fault per 64 KiB streamed.
const FAULT_AHEAD: u32 = 16;

/// Faults waiting for the work, as many as the event queue holds; more
/// are dropped. The card raises a page's fault again while it is not
/// mapped (every 100 ms), so a dropped one is served late, not lost.
const MAX_PENDING: usize = super::eq::EQ_ENTRIES as usize;

/// The card's side of an on-demand region: forgets pages the kernel takes
/// back.
pub(crate) struct CardUnmap {
    admin: Arc<AdminQueue>,
    key: u32,
}

impl OdpClient for CardUnmap {
    fn invalidate(&self, first: u32, count: u32) {
        let cmd = AdminCmd::RdmaOdpUnmap {
            key: self.key,
            first,
            count,
        };
        match self.admin.exec(cmd) {
            // A region the card no longer has (deregistered before the
            // process's memory went): it reaches nothing.
            Ok(_) | Err(AdminError::Refused(AdminStatus::NotFound)) => {}
            // The pages are unmapped all the same: a card that does not
            // answer is reset before it is used again (health).
            Err(e) => pr_warn!("rsnic: ODP unmap of key {:#x} failed: {:?}\n", self.key, e),
        }
    }
}

/// An on-demand region: the process's memory and whether it is still
/// registered on the card.
#[pin_data]
pub(crate) struct OdpRegion {
    /// The region's key on the card.
    pub(crate) key: u32,
    /// Its protection domain.
    pub(crate) pd: u32,
    mem: OdpMemory<CardUnmap>,
    /// Set once the card no longer has the region: no mapping may be
    /// sent for its key after (the index may name a new region).
    #[pin]
    gone: Mutex<bool>,
}

impl OdpRegion {
    /// A region of `mem` with key `key` in protection domain `pd`.
    pub(crate) fn new(key: u32, pd: u32, mem: OdpMemory<CardUnmap>) -> Result<Arc<Self>> {
        Arc::pin_init(
            try_pin_init!(Self {
                key,
                pd,
                mem,
                gone <- kernel::new_mutex!(false),
            }? Error),
            GFP_KERNEL,
        )
    }

    /// Pages the region spans.
    pub(crate) fn pages(&self) -> u32 {
        self.mem.pages()
    }

    /// The process's address of the region's first page.
    pub(crate) fn start(&self) -> u64 {
        self.mem.start()
    }
}

/// A page fault the card reported.
#[derive(Clone, Copy)]
struct Fault {
    key: u32,
    page: u32,
}

/// The device's on-demand regions and the work that serves their faults.
#[pin_data]
pub(crate) struct OdpFaults {
    /// Declared first: dropped (waited for) before what it uses.
    #[pin]
    work: PinnedWork<OdpFaults>,
    admin: Arc<AdminQueue>,
    /// Faults the event queue reported, for the work.
    #[pin]
    pending: SpinLock<KVec<Fault>>,
    /// The regions, by key.
    #[pin]
    regions: Mutex<KVec<Arc<OdpRegion>>>,
    /// The translations `RDMA_ODP_MAP` reads ([`MAX_ODP_MAP_PAGES`]).
    #[pin]
    list: Mutex<DmaBuffer>,
}

impl OdpFaults {
    /// No regions yet; `dma` allocates the translation list.
    pub(crate) fn new(admin: Arc<AdminQueue>, dma: &DmaDevice) -> Result<Arc<Self>> {
        let list = dma.alloc(MAX_ODP_MAP_PAGES as usize * 8)?;
        Arc::pin_init(
            try_pin_init!(Self {
                work <- PinnedWork::new(),
                admin,
                pending <- kernel::new_spinlock!(KVec::with_capacity(MAX_PENDING, GFP_KERNEL)?),
                regions <- kernel::new_mutex!(KVec::new()),
                list <- kernel::new_mutex!(list),
            }? Error),
            GFP_KERNEL,
        )
    }

    /// The card's admin queue, for the regions' unmapping.
    pub(crate) fn card_unmap(&self, key: u32) -> CardUnmap {
        CardUnmap {
            admin: self.admin.clone(),
            key,
        }
    }

    /// The card reported a fault on `page` of region `key` (event queue,
    /// interrupt context): the work maps it. Whether the access writes
    /// does not matter: a writable region is faulted in writable.
    pub(crate) fn fault(&self, key: u32, page: u32) {
        {
            let mut pending = lock_irqsave(&self.pending);
            // The card raises a fault again while it waits: once queued
            // is enough.
            if pending.iter().any(|f| f.key == key && f.page == page)
                || pending.len() >= MAX_PENDING
                || pending.push(Fault { key, page }, GFP_ATOMIC).is_err()
            {
                return;
            }
        }
        PinnedWork::schedule(self);
    }

    /// Adds a region (before the card may fault on it).
    pub(crate) fn add(&self, region: Arc<OdpRegion>) -> Result {
        self.regions.lock().push(region, GFP_KERNEL)?;
        Ok(())
    }

    /// Takes region `key` out: no fault or advice maps its pages from
    /// now on. Call before the card forgets the region.
    pub(crate) fn remove(&self, key: u32) {
        let region = {
            let mut regions = self.regions.lock();
            let Some(i) = regions.iter().position(|r| r.key == key) else {
                return;
            };
            regions.remove(i).ok()
        };
        if let Some(region) = region {
            *region.gone.lock() = true;
        }
    }

    /// The region `key` names, if it is one.
    pub(crate) fn region(&self, key: u32) -> Option<Arc<OdpRegion>> {
        self.regions.lock().iter().find(|r| r.key == key).cloned()
    }

    /// Maps pages `first..first + count` of `region` for the card (at
    /// most [`MAX_ODP_MAP_PAGES`]), faulting them in if `fault`. Pages
    /// not present (no fault asked) are sent as untranslated.
    pub(crate) fn map(&self, region: &OdpRegion, first: u32, count: u32, fault: bool) -> Result {
        let gone = region.gone.lock();
        if *gone {
            return Err(ENOENT);
        }
        let write = region.mem.writable();
        let list = self.list.lock();
        region.mem.map_pages(first, count, write, fault, |pages| {
            self.send(region.key, first, pages, &list)
        })?
    }

    /// `RDMA_ODP_MAP` of `pages` at `first` of region `key`.
    fn send(&self, key: u32, first: u32, pages: &[Option<OdpPage>], list: &DmaBuffer) -> Result {
        for (i, page) in pages.iter().enumerate() {
            let pte = match page {
                Some(p) if p.writable => p.bus | odp_pte::VALID | odp_pte::WRITE,
                Some(p) => p.bus | odp_pte::VALID,
                None => 0,
            };
            list.write(i * 8, &pte.to_le_bytes())?;
        }
        self.admin.exec(AdminCmd::RdmaOdpMap {
            key,
            first,
            // CAST: at most MAX_ODP_MAP_PAGES entries.
            count: pages.len() as u32,
            pbl: list.dma_addr(0)?,
        })?;
        Ok(())
    }

    /// Tells the card the process has no memory at `page` of region
    /// `key`: the access waiting for it fails.
    fn refuse(&self, region: &OdpRegion, page: u32) -> Result {
        let gone = region.gone.lock();
        if *gone {
            return Err(ENOENT);
        }
        let list = self.list.lock();
        list.write(0, &odp_pte::ERROR.to_le_bytes())?;
        self.admin.exec(AdminCmd::RdmaOdpMap {
            key: region.key,
            first: page,
            count: 1,
            pbl: list.dma_addr(0)?,
        })?;
        Ok(())
    }

    /// Serves one fault.
    fn serve(&self, f: Fault) {
        // A key of no region: a region deregistered since (its card
        // entry is gone too) or a card that made it up.
        let Some(region) = self.region(f.key) else {
            return;
        };
        if f.page >= region.pages() {
            return;
        }
        let count = FAULT_AHEAD.min(region.pages() - f.page);
        // The pages after it may not all be the process's memory: then
        // the page alone. If the process has none there (EFAULT; EINVAL:
        // it is gone), the access fails; any other error (the card did
        // not answer, memory was short) leaves the fault for the card to
        // raise again.
        let mapped = self
            .map(&region, f.page, count, true)
            .or_else(|_| self.map(&region, f.page, 1, true));
        if matches!(mapped, Err(e) if e == EFAULT || e == EINVAL) {
            let _ = self.refuse(&region, f.page);
        }
    }
}

impl PinnedWorkRun for OdpFaults {
    fn work(&self) -> &PinnedWork<Self> {
        &self.work
    }

    /// Serves the faults reported, oldest first.
    fn run(&self) {
        loop {
            let next = {
                let mut pending = lock_irqsave(&self.pending);
                if pending.is_empty() {
                    None
                } else {
                    Some(pending.remove(0))
                }
            };
            match next {
                Some(Ok(f)) => self.serve(f),
                _ => return,
            }
        }
    }
}
