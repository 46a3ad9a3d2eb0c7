// SPDX-License-Identifier: GPL-2.0

//! Host memory as the RDMA engine reaches it: through memory regions,
//! whose keys, protection domains, access rights and bounds are checked
//! on every access, so a bad key or address fails before any byte moves.

use std::collections::{HashMap, HashSet};

use crate::dma::{DmaFault, HostMem};
use crate::hw::rdma::{
    access, mr_kind, odp_pte, BindParams, MrReg, RegMrParams, MAX_ODP_MAP_PAGES, MAX_USER_MR_PAGES,
};
use crate::hw::AdminStatus;

/// The reserved local key: every bus address, as is, for local access by
/// any PD (the device's `local_dma_lkey`).
pub const LOCAL_DMA_LKEY: u32 = 0;

/// Why an access through a memory region is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessError {
    /// No MR has this key (or its variant byte is stale).
    BadKey,
    /// The MR is of another protection domain.
    WrongPd,
    /// The MR does not grant the access.
    NoRights,
    /// The range is outside the MR.
    OutOfBounds,
    /// A fast-registration MR not (or no longer) registered, or a
    /// memory window not bound.
    Invalid,
    /// A type 2 memory window used through another QP than the one it
    /// was bound through.
    WrongQp,
    /// A page of an on-demand region without a translation (or mapped
    /// read-only, for a write): the access waits for the driver.
    PageFault {
        /// The region's key.
        key: u32,
        /// The page, from the region's first.
        page: u32,
        /// Whether the access writes.
        write: bool,
    },
}

/// A page of an on-demand region an access found untranslated: the
/// access waits until the driver maps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Fault {
    /// The region's key.
    pub key: u32,
    /// The page, from the region's first.
    pub page: u32,
    /// Whether the access writes.
    pub write: bool,
}

/// Bytes of an on-demand region's page.
const ODP_PAGE: u64 = 4096;

/// How a valid MR maps its addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Map {
    /// Address = bus address.
    Dma,
    /// IOVA range over a page list.
    Pages {
        iova: u64,
        len: u64,
        page_shift: u8,
        pages: Vec<u64>,
    },
    /// IOVA range over 4 KiB pages translated on demand ([`odp_pte`]
    /// entries; 0: none yet).
    OnDemand { iova: u64, len: u64, ptes: Vec<u64> },
    /// Zero-based range of the card's device memory, from bus address
    /// `base` ([`crate::device_memory::WINDOW`] and up).
    Device { len: u64, base: u64 },
}

/// What a bound memory window shows: part of an MR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Binding {
    mr_key: u32,
    addr: u64,
    len: u64,
    /// Type 2: the QP it was bound through, the only one that may use it.
    qpn: Option<u32>,
}

#[derive(Clone, Debug)]
struct Mr {
    key: u32,
    pd: u32,
    access: u32,
    kind: u8,
    max_pages: u32,
    /// `None`: a fast-registration MR that is not registered (a window:
    /// always).
    map: Option<Map>,
    /// A memory window: what it is bound to, if it is.
    bound: Option<Binding>,
}

impl Mr {
    fn is_window(&self) -> bool {
        matches!(self.kind, mr_kind::MW_TYPE1 | mr_kind::MW_TYPE2)
    }
}

/// The engine's memory regions, by index (key bits 8-31).
#[derive(Debug, Default)]
pub struct MrTable {
    mrs: HashMap<u32, Mr>,
    limit: u32,
    /// On-demand pages (region index, page) the driver could not map
    /// ([`odp_pte::ERROR`]): the next access faulting on one fails.
    failed: HashSet<(u32, u32)>,
}

/// A piece of host memory: bus address and length.
pub type Segment = (u64, u64);

impl MrTable {
    /// An empty table holding at most `limit` regions.
    pub fn new(limit: u32) -> Self {
        Self {
            mrs: HashMap::new(),
            limit,
            failed: HashSet::new(),
        }
    }

    /// Whether an access refused with `e` waits for a page to be mapped
    /// (the page), or fails: any other error, or a fault on a page the
    /// driver said it cannot map (that answer serves this access only).
    pub fn waits_for(&mut self, e: AccessError) -> Option<Fault> {
        match e {
            AccessError::PageFault { key, page, write } => {
                (!self.failed.remove(&(key >> 8, page))).then_some(Fault { key, page, write })
            }
            _ => None,
        }
    }

    /// Whether the remote key `key` reaches an on-demand region: names
    /// one, or a window bound over one.
    pub fn remote_on_demand(&self, key: u32) -> bool {
        match self.mrs.get(&(key >> 8)) {
            Some(w) if w.key == key && w.is_window() => {
                w.bound.is_some_and(|b| self.is_on_demand(b.mr_key))
            }
            _ => self.is_on_demand(key),
        }
    }

    /// Whether `key` names an on-demand region.
    pub fn is_on_demand(&self, key: u32) -> bool {
        self.mrs
            .get(&(key >> 8))
            .is_some_and(|m| m.key == key && matches!(m.map, Some(Map::OnDemand { .. })))
    }

    /// `RDMA_REG_MR`.
    pub fn register(&mut self, reg: &MrReg) -> AdminStatus {
        if !self.key_and_rights_ok(reg)
            || !matches!(
                reg.kind,
                mr_kind::DMA | mr_kind::FAST_REG | mr_kind::MW_TYPE1 | mr_kind::MW_TYPE2
            )
        {
            return AdminStatus::BadParam;
        }
        let map = (reg.kind == mr_kind::DMA).then_some(Map::Dma);
        self.insert(reg, map)
    }

    /// Whether `reg`'s key is one a region may have (not the local DMA
    /// key, an index within the table) and its rights are known ones.
    fn key_and_rights_ok(&self, reg: &MrReg) -> bool {
        reg.key != LOCAL_DMA_LKEY && reg.key >> 8 < self.limit && reg.access & !access::ALL == 0
    }

    /// Adds the region `reg` describes, mapped by `map`, unless its index
    /// is taken.
    fn insert(&mut self, reg: &MrReg, map: Option<Map>) -> AdminStatus {
        let index = reg.key >> 8;
        if self.mrs.contains_key(&index) {
            return AdminStatus::BadState;
        }
        self.mrs.insert(
            index,
            Mr {
                key: reg.key,
                pd: reg.pd,
                access: reg.access,
                kind: reg.kind,
                max_pages: reg.max_pages,
                map,
                bound: None,
            },
        );
        AdminStatus::Ok
    }

    /// `RDMA_REG_MR` of a user MR: `reg.len` bytes at `reg.iova` over
    /// `pages` (bus addresses of `1 << reg.page_shift`-byte pages; the
    /// first holds `reg.iova`, at its offset in a page).
    pub fn register_user(&mut self, reg: &MrReg, pages: Vec<u64>) -> AdminStatus {
        let page = 1u64.checked_shl(u32::from(reg.page_shift)).unwrap_or(0);
        let offset = reg.iova & page.wrapping_sub(1);
        if !self.key_and_rights_ok(reg)
            || !(12..=30).contains(&reg.page_shift)
            || reg.len == 0
            || reg.iova.checked_add(reg.len).is_none()
            || offset + reg.len > page.saturating_mul(pages.len() as u64)
            || pages.iter().any(|p| p & (page - 1) != 0)
        {
            return AdminStatus::BadParam;
        }
        let map = Map::Pages {
            iova: reg.iova,
            len: reg.len,
            page_shift: reg.page_shift,
            pages,
        };
        self.insert(reg, Some(map))
    }

    /// `RDMA_REG_MR` of a device-memory MR ([`mr_kind::DEVICE`]):
    /// `reg.len` bytes from bus address `base`, addressed from 0 (the
    /// caller checked they are allocated device memory).
    pub fn register_device(&mut self, reg: &MrReg, base: u64) -> AdminStatus {
        // Zero bytes is a region too (ibv_reg_dm_mr allows it): every
        // access but an empty one is out of bounds.
        if !self.key_and_rights_ok(reg) || reg.iova != 0 {
            return AdminStatus::BadParam;
        }
        let map = Map::Device { len: reg.len, base };
        self.insert(reg, Some(map))
    }

    /// Whether a device-memory MR starts in bus addresses `range`.
    pub fn uses_device(&self, range: std::ops::Range<u64>) -> bool {
        self.mrs
            .values()
            .any(|mr| matches!(mr.map, Some(Map::Device { base, .. }) if range.contains(&base)))
    }

    /// `RDMA_REG_MR` of an on-demand region ([`mr_kind::ODP`]): no page
    /// translated yet.
    pub fn register_on_demand(&mut self, reg: &MrReg) -> AdminStatus {
        let spans = reg
            .iova
            .checked_add(reg.len)
            .map(|end| end.div_ceil(ODP_PAGE) - reg.iova / ODP_PAGE);
        if !self.key_and_rights_ok(reg)
            || reg.page_shift != 12
            || reg.len == 0
            || spans != Some(u64::from(reg.max_pages))
            || reg.max_pages > MAX_USER_MR_PAGES
        {
            return AdminStatus::BadParam;
        }
        let map = Map::OnDemand {
            iova: reg.iova,
            len: reg.len,
            ptes: vec![0; reg.max_pages as usize],
        };
        self.insert(reg, Some(map))
    }

    /// The translations of the on-demand region `key` (its exact key).
    fn ptes_mut(&mut self, key: u32) -> Result<&mut Vec<u64>, AdminStatus> {
        let mr = self
            .mrs
            .get_mut(&(key >> 8))
            .filter(|m| m.key == key)
            .ok_or(AdminStatus::NotFound)?;
        match mr.map.as_mut() {
            Some(Map::OnDemand { ptes, .. }) => Ok(ptes),
            _ => Err(AdminStatus::BadParam),
        }
    }

    /// `RDMA_ODP_MAP`: pages `first..` of the on-demand region `key` take
    /// `entries` ([`odp_pte`]). Nothing changes on an error.
    pub fn map_on_demand(&mut self, key: u32, first: u32, entries: &[u64]) -> AdminStatus {
        let ptes = match self.ptes_mut(key) {
            Ok(p) => p,
            Err(status) => return status,
        };
        let bad_entry = |e: &u64| {
            let flags = e & (ODP_PAGE - 1);
            if e & odp_pte::VALID != 0 {
                flags & !(odp_pte::VALID | odp_pte::WRITE) != 0
            } else {
                *e & !odp_pte::ERROR != 0
            }
        };
        let end = (first as usize).checked_add(entries.len());
        match end {
            Some(end)
                if !entries.is_empty()
                    && entries.len() <= MAX_ODP_MAP_PAGES as usize
                    && end <= ptes.len()
                    && !entries.iter().any(bad_entry) =>
            {
                for (pte, e) in ptes[first as usize..end].iter_mut().zip(entries) {
                    *pte = if e & odp_pte::VALID != 0 { *e } else { 0 };
                }
                for (page, e) in (first..).zip(entries) {
                    if e & odp_pte::ERROR != 0 {
                        self.failed.insert((key >> 8, page));
                    } else {
                        self.failed.remove(&(key >> 8, page));
                    }
                }
                AdminStatus::Ok
            }
            _ => AdminStatus::BadParam,
        }
    }

    /// `RDMA_ODP_UNMAP`: pages `first..first + count` of the on-demand
    /// region `key` lose their translations.
    pub fn unmap_on_demand(&mut self, key: u32, first: u32, count: u32) -> AdminStatus {
        let ptes = match self.ptes_mut(key) {
            Ok(p) => p,
            Err(status) => return status,
        };
        match first.checked_add(count) {
            Some(end) if count > 0 && end as usize <= ptes.len() => {
                ptes[first as usize..end as usize].fill(0);
                self.failed
                    .retain(|&(i, p)| i != key >> 8 || !(first..end).contains(&p));
                AdminStatus::Ok
            }
            _ => AdminStatus::BadParam,
        }
    }

    /// `RDMA_DEREG_MR`: the region whose index `key` names (whatever
    /// variant byte fast registrations gave it since).
    /// Windows bound over it are unbound: none outlives its MR (whose
    /// index a new MR may take).
    pub fn deregister(&mut self, key: u32) -> AdminStatus {
        let index = key >> 8;
        self.failed.retain(|&(i, _)| i != index);
        for m in self.mrs.values_mut() {
            if m.bound.is_some_and(|b| b.mr_key >> 8 == index) {
                m.bound = None;
            }
        }
        match self.mrs.remove(&index) {
            Some(_) => AdminStatus::Ok,
            None => AdminStatus::NotFound,
        }
    }

    /// Regions held.
    pub fn len(&self) -> usize {
        self.mrs.len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.mrs.is_empty()
    }

    /// A REG_MR work request: maps `pages` (bus addresses of
    /// `1 << page_shift`-byte pages) at `params.iova` into the
    /// fast-registration MR whose index `key` names, which takes `key`
    /// (its new variant byte) and `access`.
    pub fn fast_register(
        &mut self,
        key: u32,
        pd: u32,
        access_bits: u32,
        params: &RegMrParams,
        pages: Vec<u64>,
    ) -> Result<(), AccessError> {
        let mr = self.mrs.get_mut(&(key >> 8)).ok_or(AccessError::BadKey)?;
        if mr.kind != mr_kind::FAST_REG {
            return Err(AccessError::BadKey);
        }
        if mr.pd != pd {
            return Err(AccessError::WrongPd);
        }
        if mr.map.is_some() || access_bits & !access::ALL != 0 {
            return Err(AccessError::Invalid);
        }
        let page = 1u64.checked_shl(u32::from(params.page_shift)).unwrap_or(0);
        let covered = page.saturating_mul(pages.len() as u64);
        let offset = params.iova & page.wrapping_sub(1);
        if !(12..=30).contains(&params.page_shift)
            || pages.len() != params.npages as usize
            || params.npages > mr.max_pages
            || params.len == 0
            || offset + params.len > covered
            || params.iova.checked_add(params.len).is_none()
        {
            return Err(AccessError::OutOfBounds);
        }
        mr.key = key;
        mr.access = access_bits;
        mr.map = Some(Map::Pages {
            iova: params.iova,
            len: params.len,
            page_shift: params.page_shift,
            pages,
        });
        Ok(())
    }

    /// LOCAL_INV, or a peer's SEND with invalidate: the fast-registration
    /// MR `key` stops translating until registered again, or the type 2
    /// window `key` is unbound. `windows_only`: a process's QP, which may
    /// not invalidate MRs.
    pub fn invalidate(&mut self, key: u32, pd: u32, windows_only: bool) -> Result<(), AccessError> {
        let mr = self.mrs.get_mut(&(key >> 8)).ok_or(AccessError::BadKey)?;
        let mr_ok = mr.kind == mr_kind::FAST_REG && !windows_only;
        if mr.key != key || !(mr_ok || mr.kind == mr_kind::MW_TYPE2) {
            return Err(AccessError::BadKey);
        }
        if mr.pd != pd {
            return Err(AccessError::WrongPd);
        }
        mr.map = None;
        mr.bound = None;
        Ok(())
    }

    /// A BIND_MW work request of QP `qpn` (PD `pd`): the window whose
    /// index `key` names takes `key` and shows `[addr, addr + len)` of
    /// the MR `mr_key` with the remote rights `rights`. A type 2 window
    /// must be unbound; a type 1 window is rebound (length 0 unbinds it).
    /// Nothing changes on an error.
    pub fn bind(
        &mut self,
        qpn: u32,
        pd: u32,
        key: u32,
        p: &BindParams,
        addr: u64,
        rights: u32,
    ) -> Result<(), AccessError> {
        let (kind, bound) = {
            let w = self.mrs.get(&(key >> 8)).ok_or(AccessError::BadKey)?;
            if !w.is_window() {
                return Err(AccessError::BadKey);
            }
            if w.pd != pd {
                return Err(AccessError::WrongPd);
            }
            (w.kind, w.bound)
        };
        if rights & !access::REMOTE != 0 || (kind == mr_kind::MW_TYPE2 && bound.is_some()) {
            return Err(AccessError::Invalid);
        }
        let binding = if p.len == 0 && kind == mr_kind::MW_TYPE1 {
            None
        } else {
            let mr = self.mrs.get(&(p.mr_key >> 8)).ok_or(AccessError::BadKey)?;
            if mr.is_window() || mr.key != p.mr_key {
                return Err(AccessError::BadKey);
            }
            // Remote writes through it need the MR's local write.
            let writes = rights & (access::REMOTE_WRITE | access::REMOTE_ATOMIC) != 0;
            if mr.access & access::MW_BIND == 0 || (writes && mr.access & access::LOCAL_WRITE == 0)
            {
                return Err(AccessError::NoRights);
            }
            // Inside the MR, of the same PD.
            self.resolve(p.mr_key, pd, addr, p.len, 0)?;
            Some(Binding {
                mr_key: p.mr_key,
                addr,
                len: p.len,
                qpn: (kind == mr_kind::MW_TYPE2).then_some(qpn),
            })
        };
        let w = self.mrs.get_mut(&(key >> 8)).ok_or(AccessError::BadKey)?;
        w.key = key;
        w.access = rights;
        w.bound = binding;
        Ok(())
    }

    /// As [`MrTable::resolve`], for a peer's request arriving on QP
    /// `qpn`: `key` may also be a memory window's, bound and granting
    /// `need`, which then resolves through its MR.
    pub fn resolve_remote(
        &self,
        key: u32,
        pd: u32,
        qpn: u32,
        addr: u64,
        len: u64,
        need: u32,
    ) -> Result<Vec<Segment>, AccessError> {
        let b = match self.window(key, pd, qpn, need) {
            None => return self.resolve(key, pd, addr, len, need),
            Some(b) => b?,
        };
        let end = addr.checked_add(len).ok_or(AccessError::OutOfBounds)?;
        if addr < b.addr || end > b.addr + b.len {
            return Err(AccessError::OutOfBounds);
        }
        // The window's rights stand for the MR's.
        self.resolve(b.mr_key, pd, addr, len, 0)
    }

    /// Whether `pd`, through QP `qpn`, may use the MR or window `key` with
    /// the `need` rights, whatever the range (a FLUSH of a whole region).
    pub fn check_remote(&self, key: u32, pd: u32, qpn: u32, need: u32) -> Result<(), AccessError> {
        let mr = match self.window(key, pd, qpn, need) {
            None => self.region(key, pd, need)?,
            // The window's rights stand for the MR's.
            Some(b) => self.region(b?.mr_key, pd, 0)?,
        };
        mr.map.as_ref().map(|_| ()).ok_or(AccessError::Invalid)
    }

    /// If `key` names a memory window: its binding, if `pd` may use it
    /// through QP `qpn` with the `need` rights. `None` for any other key.
    fn window(
        &self,
        key: u32,
        pd: u32,
        qpn: u32,
        need: u32,
    ) -> Option<Result<Binding, AccessError>> {
        let w = self.mrs.get(&(key >> 8)).filter(|m| m.is_window())?;
        let usable = || {
            if w.key != key {
                return Err(AccessError::BadKey);
            }
            if w.pd != pd {
                return Err(AccessError::WrongPd);
            }
            let b = w.bound.ok_or(AccessError::Invalid)?;
            if b.qpn.is_some_and(|q| q != qpn) {
                return Err(AccessError::WrongQp);
            }
            if w.access & need != need {
                return Err(AccessError::NoRights);
            }
            Ok(b)
        };
        Some(usable())
    }

    /// The memory region (not a window: that is a remote key only, see
    /// [`MrTable::resolve_remote`]) `key` names, if `pd` may use it with
    /// the `need` rights.
    fn region(&self, key: u32, pd: u32, need: u32) -> Result<&Mr, AccessError> {
        let mr = self.mrs.get(&(key >> 8)).ok_or(AccessError::BadKey)?;
        if mr.key != key || mr.is_window() {
            return Err(AccessError::BadKey);
        }
        if mr.pd != pd {
            return Err(AccessError::WrongPd);
        }
        if mr.access & need != need {
            return Err(AccessError::NoRights);
        }
        Ok(mr)
    }

    /// The host memory behind `[addr, addr + len)` of the MR `key`, if
    /// `pd` may use it with the `need` rights ([`access`] bits; 0 for a
    /// local read).
    pub fn resolve(
        &self,
        key: u32,
        pd: u32,
        addr: u64,
        len: u64,
        need: u32,
    ) -> Result<Vec<Segment>, AccessError> {
        if key == LOCAL_DMA_LKEY {
            if need & !access::LOCAL_WRITE != 0 {
                return Err(AccessError::NoRights);
            }
            addr.checked_add(len).ok_or(AccessError::OutOfBounds)?;
            return Ok(vec![(addr, len)]);
        }
        let mr = self.region(key, pd, need)?;
        match mr.map.as_ref().ok_or(AccessError::Invalid)? {
            Map::Dma => {
                addr.checked_add(len).ok_or(AccessError::OutOfBounds)?;
                Ok(vec![(addr, len)])
            }
            Map::Pages {
                iova,
                len: mr_len,
                page_shift,
                pages,
            } => {
                let end = addr.checked_add(len).ok_or(AccessError::OutOfBounds)?;
                if addr < *iova || end > iova + mr_len {
                    return Err(AccessError::OutOfBounds);
                }
                let page = 1u64 << page_shift;
                // Offsets count from the start of the first page.
                let base = iova & !(page - 1);
                let mut segs: Vec<Segment> = Vec::new();
                let mut at = addr - base;
                let stop = end - base;
                while at < stop {
                    let idx = (at >> page_shift) as usize;
                    let in_page = at & (page - 1);
                    let n = (page - in_page).min(stop - at);
                    let bus = pages.get(idx).ok_or(AccessError::OutOfBounds)? + in_page;
                    match segs.last_mut() {
                        Some((b, l)) if *b + *l == bus => *l += n,
                        _ => segs.push((bus, n)),
                    }
                    at += n;
                }
                Ok(segs)
            }
            Map::Device { len: mr_len, base } => {
                let end = addr.checked_add(len).ok_or(AccessError::OutOfBounds)?;
                if end > *mr_len {
                    return Err(AccessError::OutOfBounds);
                }
                Ok(vec![(base + addr, len)])
            }
            Map::OnDemand {
                iova,
                len: mr_len,
                ptes,
            } => {
                let end = addr.checked_add(len).ok_or(AccessError::OutOfBounds)?;
                if addr < *iova || end > iova + mr_len {
                    return Err(AccessError::OutOfBounds);
                }
                let write = need
                    & (access::LOCAL_WRITE | access::REMOTE_WRITE | access::REMOTE_ATOMIC)
                    != 0;
                let base = iova & !(ODP_PAGE - 1);
                let mut segs: Vec<Segment> = Vec::new();
                let mut at = addr - base;
                let stop = end - base;
                while at < stop {
                    // CAST: below `max_pages`, a u32.
                    let page = (at / ODP_PAGE) as u32;
                    let in_page = at % ODP_PAGE;
                    let n = (ODP_PAGE - in_page).min(stop - at);
                    let pte = *ptes.get(page as usize).ok_or(AccessError::OutOfBounds)?;
                    if pte & odp_pte::VALID == 0 || (write && pte & odp_pte::WRITE == 0) {
                        return Err(AccessError::PageFault {
                            key: mr.key,
                            page,
                            write,
                        });
                    }
                    let bus = (pte & !(ODP_PAGE - 1)) + in_page;
                    match segs.last_mut() {
                        Some((b, l)) if *b + *l == bus => *l += n,
                        _ => segs.push((bus, n)),
                    }
                    at += n;
                }
                Ok(segs)
            }
        }
    }
}

/// Copies `data` into host memory along `segs` (which cover it).
pub fn write_segments(mem: &dyn HostMem, segs: &[Segment], data: &[u8]) -> Result<(), DmaFault> {
    let mut done = 0usize;
    for &(addr, len) in segs {
        let n = (len as usize).min(data.len() - done);
        mem.write(addr, &data[done..done + n])?;
        done += n;
        if done == data.len() {
            break;
        }
    }
    Ok(())
}

/// `n` little-endian u64s (page lists, translations) read from host
/// memory at `addr`.
pub fn read_u64s(mem: &dyn HostMem, addr: u64, n: usize) -> Option<Vec<u64>> {
    let mut raw = vec![0u8; n.checked_mul(8)?];
    mem.read(addr, &mut raw).ok()?;
    Some(
        raw.chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
            .collect(),
    )
}

/// Reads host memory along `segs` into a buffer of their total length.
pub fn read_segments(mem: &dyn HostMem, segs: &[Segment]) -> Result<Vec<u8>, DmaFault> {
    let total: u64 = segs.iter().map(|s| s.1).sum();
    let mut out = vec![0u8; total as usize];
    let mut done = 0usize;
    for &(addr, len) in segs {
        mem.read(addr, &mut out[done..done + len as usize])?;
        done += len as usize;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fast_reg(table: &mut MrTable, key: u32) {
        let reg = MrReg {
            key,
            pd: 1,
            access: 0,
            kind: mr_kind::FAST_REG,
            max_pages: 4,
            ..MrReg::default()
        };
        assert_eq!(table.register(&reg), AdminStatus::Ok);
    }

    #[test]
    fn an_on_demand_region_translates_only_what_the_driver_mapped() {
        let mut t = MrTable::new(16);
        let rw = access::LOCAL_WRITE | access::REMOTE_READ | access::REMOTE_WRITE;
        // 0x1800 bytes from 0x7000_0800: pages 0 and 1.
        let reg = MrReg {
            key: 0x105,
            pd: 1,
            access: rw,
            kind: mr_kind::ODP,
            max_pages: 2,
            page_shift: 12,
            iova: 0x7000_0800,
            len: 0x1800,
            ..MrReg::default()
        };
        // Page count or page size not what the range spans: refused.
        for bad in [
            MrReg {
                max_pages: 3,
                ..reg
            },
            MrReg {
                page_shift: 13,
                ..reg
            },
        ] {
            assert_eq!(t.register_on_demand(&bad), AdminStatus::BadParam);
        }
        assert_eq!(t.register_on_demand(&reg), AdminStatus::Ok);
        let fault = |page, write| {
            Err(AccessError::PageFault {
                key: 0x105,
                page,
                write,
            })
        };
        // Nothing mapped: reads and writes fault on the first page.
        assert_eq!(t.resolve(0x105, 1, 0x7000_0800, 8, 0), fault(0, false));
        assert_eq!(
            t.resolve(0x105, 1, 0x7000_1000, 8, access::REMOTE_WRITE),
            fault(1, true)
        );
        // Page 0 read-only, page 1 writable.
        let ro = 0x10_0000 | odp_pte::VALID;
        let wr = 0x30_0000 | odp_pte::VALID | odp_pte::WRITE;
        assert_eq!(t.map_on_demand(0x105, 0, &[ro, wr]), AdminStatus::Ok);
        assert_eq!(
            t.resolve(0x105, 1, 0x7000_0f00, 0x200, 0),
            Ok(vec![(0x10_0f00, 0x100), (0x30_0000, 0x100)])
        );
        assert_eq!(
            t.resolve(0x105, 1, 0x7000_0f00, 0x200, access::LOCAL_WRITE),
            fault(0, true)
        );
        assert_eq!(
            t.resolve(0x105, 1, 0x7000_1000, 0x10, access::REMOTE_WRITE),
            Ok(vec![(0x30_0000, 0x10)])
        );
        // Bounds and rights come first, as for any region.
        assert_eq!(
            t.resolve(0x105, 1, 0x7000_2000, 1, 0),
            Err(AccessError::OutOfBounds)
        );
        assert_eq!(
            t.resolve(0x105, 1, 0x7000_1000, 8, access::REMOTE_ATOMIC),
            Err(AccessError::NoRights)
        );
        // Unmapped again: faults again.
        assert_eq!(t.unmap_on_demand(0x105, 1, 1), AdminStatus::Ok);
        assert_eq!(t.resolve(0x105, 1, 0x7000_1000, 8, 0), fault(1, false));
        // Refused, nothing changed: past the end, no pages, an entry
        // with stray bits, a stale key, a region of another kind.
        assert_eq!(t.map_on_demand(0x105, 1, &[wr, wr]), AdminStatus::BadParam);
        assert_eq!(t.map_on_demand(0x105, 0, &[]), AdminStatus::BadParam);
        assert_eq!(
            t.map_on_demand(0x105, 1, &[wr | 0x10]),
            AdminStatus::BadParam
        );
        assert_eq!(t.unmap_on_demand(0x105, 2, 1), AdminStatus::BadParam);
        assert_eq!(t.map_on_demand(0x106, 1, &[wr]), AdminStatus::NotFound);
        fast_reg(&mut t, 0x200);
        assert_eq!(t.map_on_demand(0x200, 0, &[wr]), AdminStatus::BadParam);
        assert_eq!(t.resolve(0x105, 1, 0x7000_1000, 8, 0), fault(1, false));
        assert_eq!(
            t.resolve(0x105, 1, 0x7000_0800, 8, 0),
            Ok(vec![(0x10_0800, 8)])
        );
    }

    #[test]
    fn fast_registration_translates_pages() {
        let mut t = MrTable::new(16);
        fast_reg(&mut t, 0x100);
        // Not registered yet: nothing translates.
        assert_eq!(t.resolve(0x100, 1, 0, 1, 0), Err(AccessError::Invalid));
        let params = RegMrParams {
            iova: 0x7000_0800,
            len: 0x1000,
            npages: 2,
            page_shift: 12,
        };
        let rights = access::LOCAL_WRITE | access::REMOTE_READ;
        t.fast_register(0x101, 1, rights, &params, vec![0x10_0000, 0x30_0000])
            .unwrap();
        // Old variant byte: refused.
        assert_eq!(
            t.resolve(0x100, 1, 0x7000_0800, 4, 0),
            Err(AccessError::BadKey)
        );
        // Across the page boundary: two pieces.
        assert_eq!(
            t.resolve(0x101, 1, 0x7000_0f00, 0x200, access::REMOTE_READ),
            Ok(vec![(0x10_0f00, 0x100), (0x30_0000, 0x100)])
        );
        assert_eq!(
            t.resolve(0x101, 1, 0x7000_1700, 0x200, 0),
            Err(AccessError::OutOfBounds)
        );
        assert_eq!(
            t.resolve(0x101, 1, 0x7000_07ff, 1, 0),
            Err(AccessError::OutOfBounds)
        );
        assert_eq!(
            t.resolve(0x101, 1, 0x7000_0800, 1, access::REMOTE_WRITE),
            Err(AccessError::NoRights)
        );
        assert_eq!(
            t.resolve(0x101, 2, 0x7000_0800, 1, 0),
            Err(AccessError::WrongPd)
        );
        t.invalidate(0x101, 1, false).unwrap();
        assert_eq!(
            t.resolve(0x101, 1, 0x7000_0800, 1, 0),
            Err(AccessError::Invalid)
        );
        assert_eq!(t.deregister(0x101), AdminStatus::Ok);
        assert_eq!(
            t.resolve(0x101, 1, 0x7000_0800, 1, 0),
            Err(AccessError::BadKey)
        );
    }

    #[test]
    fn memory_windows_show_part_of_an_mr_to_the_right_qp_until_invalidated() {
        let mut t = MrTable::new(16);
        let reg = |key, access, kind| MrReg {
            key,
            pd: 1,
            access,
            kind,
            ..MrReg::default()
        };
        // A DMA MR that allows binding, one that does not, two windows.
        let bindable = access::LOCAL_WRITE | access::MW_BIND;
        assert_eq!(
            t.register(&reg(0x500, access::MW_BIND, mr_kind::DMA)),
            AdminStatus::Ok
        );
        assert_eq!(
            t.register(&reg(0x100, bindable, mr_kind::DMA)),
            AdminStatus::Ok
        );
        assert_eq!(
            t.register(&reg(0x200, access::LOCAL_WRITE, mr_kind::DMA)),
            AdminStatus::Ok
        );
        assert_eq!(
            t.register(&reg(0x300, 0, mr_kind::MW_TYPE2)),
            AdminStatus::Ok
        );
        assert_eq!(
            t.register(&reg(0x400, 0, mr_kind::MW_TYPE1)),
            AdminStatus::Ok
        );
        let p = |mr_key, len| BindParams { mr_key, len };
        let rw = access::REMOTE_READ | access::REMOTE_WRITE;
        // Unbound: no access.
        assert_eq!(
            t.resolve_remote(0x300, 1, 7, 0x1000, 8, 0),
            Err(AccessError::Invalid)
        );
        // Not over an MR without MW_BIND, nor with local rights, nor
        // from another PD.
        assert!(t.bind(7, 1, 0x301, &p(0x200, 0x100), 0x1000, rw).is_err());
        assert!(t
            .bind(7, 1, 0x301, &p(0x100, 0x100), 0x1000, access::LOCAL_WRITE)
            .is_err());
        assert!(t.bind(7, 2, 0x301, &p(0x100, 0x100), 0x1000, rw).is_err());
        t.bind(7, 1, 0x301, &p(0x100, 0x100), 0x1000, rw).unwrap();
        // Remote write needs the MR's local write.
        let read_only = |len| BindParams { mr_key: 0x500, len };
        assert!(t
            .bind(9, 1, 0x401, &read_only(0x10), 0x1000, access::REMOTE_WRITE)
            .is_err());
        // A bound type 2 window is not bound again.
        assert!(t.bind(7, 1, 0x302, &p(0x100, 0x100), 0x1000, rw).is_err());
        // Its new key, inside it, through its QP, with its rights.
        assert_eq!(
            t.resolve_remote(0x301, 1, 7, 0x1080, 0x80, access::REMOTE_WRITE),
            Ok(vec![(0x1080, 0x80)])
        );
        assert_eq!(
            t.resolve_remote(0x300, 1, 7, 0x1080, 8, 0),
            Err(AccessError::BadKey)
        );
        assert_eq!(
            t.resolve_remote(0x301, 1, 7, 0x10f9, 8, 0),
            Err(AccessError::OutOfBounds)
        );
        assert_eq!(
            t.resolve_remote(0x301, 1, 8, 0x1080, 8, 0),
            Err(AccessError::WrongQp)
        );
        assert_eq!(
            t.resolve_remote(0x301, 1, 7, 0x1080, 8, access::REMOTE_ATOMIC),
            Err(AccessError::NoRights)
        );
        // Not a local key.
        assert_eq!(t.resolve(0x301, 1, 0x1080, 8, 0), Err(AccessError::BadKey));
        // Type 1: any QP of the PD; rebound, unbound with length 0; no
        // LOCAL_INV.
        t.bind(7, 1, 0x401, &p(0x100, 0x10), 0x2000, access::REMOTE_READ)
            .unwrap();
        assert!(t
            .resolve_remote(0x401, 1, 9, 0x2000, 0x10, access::REMOTE_READ)
            .is_ok());
        assert_eq!(t.invalidate(0x401, 1, true), Err(AccessError::BadKey));
        t.bind(9, 1, 0x402, &p(0x100, 0), 0, 0).unwrap();
        assert_eq!(
            t.resolve_remote(0x402, 1, 9, 0x2000, 1, 0),
            Err(AccessError::Invalid)
        );
        // A process may invalidate its type 2 window, not an MR.
        assert_eq!(t.invalidate(0x100, 1, true), Err(AccessError::BadKey));
        t.invalidate(0x301, 1, true).unwrap();
        assert_eq!(
            t.resolve_remote(0x301, 1, 7, 0x1080, 8, 0),
            Err(AccessError::Invalid)
        );
        // Deregistering the MR unbinds what shows it.
        t.bind(7, 1, 0x302, &p(0x100, 0x100), 0x1000, rw).unwrap();
        assert_eq!(t.deregister(0x100), AdminStatus::Ok);
        assert_eq!(
            t.resolve_remote(0x302, 1, 7, 0x1080, 8, 0),
            Err(AccessError::Invalid)
        );
    }

    #[test]
    fn bad_registrations_are_refused() {
        let mut t = MrTable::new(16);
        fast_reg(&mut t, 0x200);
        let p = |npages, len| RegMrParams {
            iova: 0,
            len,
            npages,
            page_shift: 12,
        };
        // More pages than allocated, or the length beyond the pages.
        assert!(t
            .fast_register(0x200, 1, 0, &p(5, 4096), vec![0; 5])
            .is_err());
        assert!(t
            .fast_register(0x200, 1, 0, &p(1, 4097), vec![0; 1])
            .is_err());
        assert!(t
            .fast_register(0x200, 1, 0, &p(2, 4096), vec![0; 1])
            .is_err());
        assert_eq!(
            t.fast_register(0x200, 2, 0, &p(1, 4096), vec![0]),
            Err(AccessError::WrongPd)
        );
        let dma = MrReg {
            key: 7 << 8,
            pd: 1,
            access: access::ALL,
            kind: mr_kind::DMA,
            ..MrReg::default()
        };
        assert_eq!(t.register(&dma), AdminStatus::Ok);
        assert_eq!(t.register(&dma), AdminStatus::BadState);
        assert_eq!(t.register(&MrReg { key: 0, ..dma }), AdminStatus::BadParam);
        assert_eq!(
            t.register(&MrReg {
                key: 99 << 8,
                ..dma
            }),
            AdminStatus::BadParam
        );
        // The local DMA key is for local access only.
        assert!(t
            .resolve(LOCAL_DMA_LKEY, 9, 0x1000, 8, access::LOCAL_WRITE)
            .is_ok());
        assert_eq!(
            t.resolve(LOCAL_DMA_LKEY, 9, 0x1000, 8, access::REMOTE_WRITE),
            Err(AccessError::NoRights)
        );
    }
}
