// SPDX-License-Identifier: GPL-2.0

//! The engine's rings in host memory: work queues it fetches from,
//! completion queues it writes to, and the event queue that tells the
//! driver which completion queue has news.
//!
//! Indices the driver writes to doorbells are 16-bit and free running;
//! a value that would put more entries in flight than the ring holds is
//! ignored (and counted), never trusted.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::hw::rdma::{
    arm, cqe_flag, Cqe, Eqe, RqWqe, CQE_LEN, CQE_STAMPED_LEN, CQE_TIMESTAMP, EQE_LEN, RQ_WQE_LEN,
};

use crate::dma::HostMem;

/// A free-running 16-bit ring index.
fn distance(from: u16, to: u16) -> u32 {
    u32::from(to.wrapping_sub(from))
}

/// A work queue (send or receive) the engine consumes.
#[derive(Clone, Copy, Debug, Default)]
pub struct WorkQueue {
    /// Bus address of entry 0.
    pub base: u64,
    /// Entries (power of two).
    pub entries: u32,
    /// Bytes per entry.
    pub stride: u32,
    /// Next entry to fetch.
    pub head: u16,
    /// One past the last entry posted (from the doorbell).
    pub tail: u16,
    /// The position that is slot 0 (moves when an SRQ is resized).
    pub origin: u16,
}

impl WorkQueue {
    /// A queue of `entries` `stride`-byte entries at `base`.
    pub fn new(base: u64, entries: u32, stride: usize) -> Self {
        Self {
            base,
            entries,
            stride: stride as u32,
            head: 0,
            tail: 0,
            origin: 0,
        }
    }

    /// A doorbell: the driver posted up to `tail`. Returns false (and
    /// changes nothing) if that is more than the ring holds.
    pub fn ring(&mut self, tail: u16) -> bool {
        self.ring_within(tail, self.entries)
    }

    /// A doorbell that may put up to `room` entries in flight.
    fn ring_within(&mut self, tail: u16, room: u32) -> bool {
        if distance(self.head, tail) > room {
            return false;
        }
        self.tail = tail;
        true
    }

    /// Entries posted and not fetched.
    pub fn pending(&self) -> u32 {
        distance(self.head, self.tail)
    }

    /// Slot and bus address of the next entry, if one is posted.
    pub fn peek(&self) -> Option<(u16, u64)> {
        (self.pending() > 0).then(|| {
            let slot = (u32::from(self.head.wrapping_sub(self.origin)) & (self.entries - 1)) as u16;
            (slot, self.base + u64::from(slot) * u64::from(self.stride))
        })
    }

    /// Moves past the next entry.
    pub fn pop(&mut self) {
        self.head = self.head.wrapping_add(1);
    }

    /// Takes back the entry [`WorkQueue::pop`] moved past last (a send
    /// WQE held for a page fault before anything of it was done).
    pub fn unpop(&mut self) {
        self.head = self.head.wrapping_sub(1);
    }
}

/// A shared receive queue: one ring of receive WQEs that the QPs created
/// with it take from, in order, whichever QP a SEND arrives on. An XRC
/// SRQ is taken from by the XRC targets of its domain, for the SENDs that
/// name it.
#[derive(Debug)]
pub struct SharedRq {
    /// The ring.
    pub wq: WorkQueue,
    /// Protection domain (its QPs must have the same).
    pub pd: u32,
    /// The user doorbell page that rings it (0: the kernel's doorbells).
    pub db_page: u32,
    /// The armed limit (0: not armed).
    limit: u32,
    /// QPs using it.
    pub users: u32,
    /// An XRC SRQ's domain (0: a basic SRQ).
    pub xrcd: u32,
    /// An XRC SRQ's completion queue (a basic SRQ's receives complete on
    /// their QP's).
    pub cq: u32,
    /// A resize not yet reached: from this position on, this many slots.
    resize_at: Option<(u16, u32)>,
}

impl SharedRq {
    /// An SRQ of `entries` receive WQEs at `base`.
    pub fn new(base: u64, entries: u32, pd: u32, db_page: u32) -> Self {
        Self {
            wq: WorkQueue::new(base, entries, RQ_WQE_LEN),
            pd,
            db_page,
            limit: 0,
            users: 0,
            xrcd: 0,
            cq: 0,
            resize_at: None,
        }
    }

    /// Gives it `entries` slots ([`crate::hw::AdminCmd::RdmaResizeSrq`]):
    /// slot 0 of the new size is the start of the lap the last position
    /// rung is in, so the slots of that lap stay where they are and the
    /// positions after it go on to the new slots. Positions before that
    /// start, still to be taken, keep the old size. False (nothing
    /// changed) while an earlier resize is pending.
    pub fn resize(&mut self, entries: u32) -> bool {
        if self.resize_at.is_some() {
            return false;
        }
        let last = self.wq.tail.wrapping_sub(1);
        // CAST: `entries` is a power of two up to 2^16; positions wrap
        // at 2^16.
        let into = (u32::from(last.wrapping_sub(self.wq.origin)) & (self.wq.entries - 1)) as u16;
        self.resize_at = Some((last.wrapping_sub(into), entries));
        self.switch_if_due();
        true
    }

    /// Its size, counting a pending resize.
    pub fn size(&self) -> u32 {
        self.resize_at
            .map_or(self.wq.entries, |(_, entries)| entries)
    }

    /// Takes the new size once the head reached its first position.
    fn switch_if_due(&mut self) {
        if let Some((at, entries)) = self.resize_at {
            if distance(at, self.wq.head) <= self.wq.entries {
                self.wq.origin = at;
                self.wq.entries = entries;
                self.resize_at = None;
            }
        }
    }

    /// A doorbell: the driver posted up to `tail`. While a resize is
    /// pending the positions in flight span both sizes.
    pub fn ring(&mut self, tail: u16) -> bool {
        let pending = self.resize_at.map_or(0, |(_, entries)| entries);
        let room = self.wq.entries + pending;
        self.wq.ring_within(tail, room)
    }

    /// Arms the limit (0 disarms). Returns true if fewer than `limit`
    /// WQEs are posted already: the event is due now, and the limit is
    /// spent.
    pub fn arm(&mut self, limit: u32) -> bool {
        self.limit = limit;
        self.limit_reached()
    }

    /// Whether the armed limit was just crossed (then disarmed).
    fn limit_reached(&mut self) -> bool {
        if self.limit != 0 && self.wq.pending() < self.limit {
            self.limit = 0;
            return true;
        }
        false
    }
}

/// An SRQ as the engine and its QPs hold it.
pub type SrqRef = Arc<Mutex<SharedRq>>;

/// Locks an SRQ (the engine runs on one thread; a poisoned lock only
/// means a test panicked).
pub fn lock_srq(srq: &SrqRef) -> MutexGuard<'_, SharedRq> {
    srq.lock().unwrap_or_else(|e| e.into_inner())
}

/// Where a QP's receive WQEs come from.
#[derive(Clone, Debug)]
pub enum RecvQueue {
    /// Its own receive queue.
    Own(WorkQueue),
    /// None: an XRC target until a request names an XRC SRQ of its
    /// domain (then [`RecvQueue::Shared`] with that one, for that
    /// request), or an XRC initiator.
    None,
    /// Shared receive queue `srqn`.
    Shared {
        /// SRQ number.
        srqn: u32,
        /// The queue.
        srq: SrqRef,
    },
}

/// A receive WQE taken from a [`RecvQueue`].
#[derive(Clone, Copy, Debug)]
pub struct TakenRecv {
    /// Its slot in the ring it came from.
    pub slot: u16,
    /// The WQE as fetched.
    pub wqe: RqWqe,
    /// The SRQ whose armed limit this take crossed.
    pub limit_reached: Option<u32>,
}

impl RecvQueue {
    /// WQEs posted and not taken.
    pub fn pending(&self) -> u32 {
        match self {
            Self::Own(q) => q.pending(),
            Self::None => 0,
            Self::Shared { srq, .. } => lock_srq(srq).wq.pending(),
        }
    }

    /// Fetches and takes the next WQE; `None` (nothing taken) if none is
    /// posted or its memory is not reachable.
    pub fn take(&mut self, mem: &dyn HostMem) -> Option<TakenRecv> {
        fn fetch(q: &mut WorkQueue, mem: &dyn HostMem) -> Option<(u16, RqWqe)> {
            let (slot, addr) = q.peek()?;
            let mut raw = [0u8; RQ_WQE_LEN];
            mem.read(addr, &mut raw).ok()?;
            q.pop();
            Some((slot, RqWqe::from_bytes(&raw)))
        }
        match self {
            Self::Own(q) => fetch(q, mem).map(|(slot, wqe)| TakenRecv {
                slot,
                wqe,
                limit_reached: None,
            }),
            Self::None => None,
            Self::Shared { srqn, srq } => {
                let mut s = lock_srq(srq);
                s.switch_if_due();
                let (slot, wqe) = fetch(&mut s.wq, mem)?;
                Some(TakenRecv {
                    slot,
                    wqe,
                    limit_reached: s.limit_reached().then_some(*srqn),
                })
            }
        }
    }

    /// The QP's own queue; `None` with an SRQ.
    pub fn own_mut(&mut self) -> Option<&mut WorkQueue> {
        match self {
            Self::Own(q) => Some(q),
            Self::None | Self::Shared { .. } => None,
        }
    }

    /// The same queue as after creation: an own queue empty again, an SRQ
    /// as it is (its WQEs belong to no QP).
    pub fn reset(&self) -> Self {
        match self {
            Self::Own(q) => Self::Own(WorkQueue::new(q.base, q.entries, RQ_WQE_LEN)),
            shared => shared.clone(),
        }
    }

    /// The SRQ number, if shared.
    pub fn srqn(&self) -> Option<u32> {
        match self {
            Self::Own(_) | Self::None => None,
            Self::Shared { srqn, .. } => Some(*srqn),
        }
    }

    /// Positions for the harness.
    pub fn describe(&self) -> String {
        match self {
            Self::Own(q) => format!("rq{}/{}", q.head, q.tail),
            Self::None => "rq-".to_string(),
            Self::Shared { srqn, .. } => format!("srq{srqn}"),
        }
    }
}

/// What happened to a completion written to a [`CompletionQueue`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Posted {
    /// Written; `event`: the CQ was armed for it, raise an event.
    Written {
        /// Whether to raise a completion event.
        event: bool,
    },
    /// The ring was full (the driver did not keep up): dropped.
    Overflow,
    /// The ring is not reachable: dropped.
    Fault,
}

/// A completion queue.
#[derive(Clone, Copy, Debug)]
pub struct CompletionQueue {
    base: u64,
    entries: u32,
    /// Completions written (free running).
    produced: u32,
    /// Completions the driver consumed (free running, from the doorbell).
    consumed: u32,
    /// [`arm`] bits.
    armed: u32,
    /// QPs using it.
    pub users: u32,
    /// The user doorbell page that rings it (0: the kernel's doorbells).
    pub db_page: u32,
    /// Doorbells ignored as impossible.
    pub bad_doorbells: u64,
    /// Entries carry the card's clock ([`CQE_STAMPED_LEN`] bytes each).
    stamped: bool,
}

impl CompletionQueue {
    /// A CQ of `entries` entries at `base`, rung through doorbell page
    /// `db_page`.
    pub fn new(base: u64, entries: u32, db_page: u32) -> Self {
        Self {
            base,
            entries,
            produced: 0,
            consumed: 0,
            armed: 0,
            users: 0,
            db_page,
            bad_doorbells: 0,
            stamped: false,
        }
    }

    /// The same CQ with time-stamped entries of [`CQE_STAMPED_LEN`] bytes.
    pub fn with_timestamps(self) -> Self {
        Self {
            stamped: true,
            ..self
        }
    }

    /// Bytes per entry.
    fn stride(&self) -> u64 {
        // CAST: 32 or 64.
        (if self.stamped {
            CQE_STAMPED_LEN
        } else {
            CQE_LEN
        }) as u64
    }

    /// Writes `cqe` (and, in a stamped CQ, `stamp`) at `addr`, the flags
    /// word last.
    fn write_entry(&self, mem: &dyn HostMem, addr: u64, cqe: &Cqe, stamp: u64) -> Option<()> {
        let body = cqe.to_bytes();
        if self.stamped {
            let mut entry = [0u8; CQE_TIMESTAMP + 8];
            entry[..CQE_LEN].copy_from_slice(&body);
            entry[CQE_TIMESTAMP..].copy_from_slice(&stamp.to_le_bytes());
            mem.write_flags_last(addr, &entry).ok()
        } else {
            mem.write_flags_last(addr, &body).ok()
        }
    }

    /// Positions for the harness: `produced/consumed` and the arm bits.
    pub fn describe(&self) -> String {
        format!("{}/{}:arm{}", self.produced, self.consumed, self.armed)
    }

    /// The driver consumed up to `ci`.
    pub fn consumed_to(&mut self, ci: u16) {
        let back = distance(ci, self.produced as u16);
        if back > self.entries || back > self.produced.wrapping_sub(self.consumed) {
            self.bad_doorbells += 1;
            return;
        }
        self.consumed = self.produced.wrapping_sub(back);
    }

    /// The driver armed it ([`arm`] bits). Returns true if completions
    /// the driver has not consumed are already there: the event is due
    /// now (and the arming spent), or the driver, which read the ring
    /// before the card wrote them, would wait for an event that never
    /// comes.
    pub fn arm(&mut self, bits: u32) -> bool {
        if self.produced != self.consumed {
            self.armed = 0;
            return true;
        }
        self.armed |= bits & (arm::NEXT | arm::SOLICITED);
        false
    }

    /// Moves to `entries` entries at `base`: the completions from the
    /// driver's consumer index `ci` to the producer are copied, in
    /// order, to the new ring's first slots (with the first lap's phase);
    /// the driver consumes from slot 0 on. `None` (nothing changed) if
    /// `ci` is not one the driver can have, they do not fit with a slot
    /// to spare, or the memory is not reachable.
    pub fn resize(&mut self, mem: &dyn HostMem, base: u64, entries: u32, ci: u16) -> Option<()> {
        let back = distance(ci, self.produced as u16);
        if back > self.entries || back > self.produced.wrapping_sub(self.consumed) {
            return None;
        }
        if back >= entries {
            return None;
        }
        let from = self.produced.wrapping_sub(back);
        let mut moved = Vec::with_capacity(back as usize);
        for i in 0..back {
            let slot = from.wrapping_add(i) & (self.entries - 1);
            let mut raw = [0u8; CQE_TIMESTAMP + 8];
            let len = if self.stamped { raw.len() } else { CQE_LEN };
            mem.read(self.base + u64::from(slot) * self.stride(), &mut raw[..len])
                .ok()?;
            let mut cqe = Cqe::from_bytes(raw[..CQE_LEN].try_into().ok()?);
            cqe.flags |= cqe_flag::PHASE;
            let stamp = u64::from_le_bytes(raw[CQE_TIMESTAMP..].try_into().ok()?);
            moved.push((cqe, stamp));
        }
        for (i, (cqe, stamp)) in moved.iter().enumerate() {
            let addr = base + i as u64 * self.stride();
            self.write_entry(mem, addr, cqe, *stamp)?;
        }
        self.base = base;
        self.entries = entries;
        self.produced = back;
        self.consumed = 0;
        Some(())
    }

    /// Writes a completion (the phase bit set here); a stamped CQ's entry
    /// carries `stamp()`, which is not called for another.
    pub fn post(
        &mut self,
        mem: &dyn HostMem,
        mut cqe: Cqe,
        solicited: bool,
        stamp: impl FnOnce() -> u64,
    ) -> Posted {
        if self.produced.wrapping_sub(self.consumed) >= self.entries {
            return Posted::Overflow;
        }
        let slot = self.produced & (self.entries - 1);
        let lap = self.produced / self.entries;
        cqe.flags &= !cqe_flag::PHASE;
        if lap.is_multiple_of(2) {
            cqe.flags |= cqe_flag::PHASE;
        }
        let addr = self.base + u64::from(slot) * self.stride();
        let stamp = if self.stamped { stamp() } else { 0 };
        if self.write_entry(mem, addr, &cqe, stamp).is_none() {
            return Posted::Fault;
        }
        self.produced = self.produced.wrapping_add(1);
        let wants = self.armed & arm::NEXT != 0
            || (self.armed & arm::SOLICITED != 0 && (solicited || cqe.status != 0));
        if wants {
            self.armed = 0;
        }
        Posted::Written { event: wants }
    }
}

/// The event queue: one per function, its vector raised per event.
///
/// It cannot overflow: an event is written only for an armed CQ (once per
/// arming) or for a QP's fatal error (once per QP), and the driver sizes
/// the ring for every CQ and QP at once.
#[derive(Clone, Copy, Debug)]
pub struct EventQueue {
    base: u64,
    entries: u32,
    produced: u32,
    /// MSI-X vector.
    pub vector: u16,
}

impl EventQueue {
    /// An event queue of `entries` entries at `base`, raising `vector`.
    pub fn new(base: u64, entries: u32, vector: u16) -> Self {
        Self {
            base,
            entries,
            produced: 0,
            vector,
        }
    }

    /// Writes an event of `kind` about `id`; returns whether it reached
    /// host memory.
    pub fn post(&mut self, mem: &dyn HostMem, kind: u16, id: u32) -> bool {
        self.post_entry(
            mem,
            Eqe {
                kind,
                id,
                ..Eqe::default()
            },
        )
    }

    /// Writes `eqe` (the phase set here); returns whether it reached
    /// host memory.
    pub fn post_entry(&mut self, mem: &dyn HostMem, mut eqe: Eqe) -> bool {
        let slot = self.produced & (self.entries - 1);
        let lap = self.produced / self.entries;
        eqe.flags = if lap.is_multiple_of(2) {
            cqe_flag::PHASE
        } else {
            0
        };
        let addr = self.base + u64::from(slot) * EQE_LEN as u64;
        if mem.write_flags_last(addr, &eqe.to_bytes()).is_err() {
            return false;
        }
        self.produced = self.produced.wrapping_add(1);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rdma::tests::Memory;

    #[test]
    fn work_queue_refuses_impossible_doorbells() {
        let mut q = WorkQueue::new(0x1000, 4, 128);
        assert!(q.ring(4));
        assert!(!q.ring(5));
        assert_eq!(q.peek(), Some((0, 0x1000)));
        q.pop();
        assert_eq!(q.peek(), Some((1, 0x1080)));
        for _ in 0..3 {
            q.pop();
        }
        assert_eq!(q.peek(), None);
        // Wraps around the 16-bit index.
        let mut q = WorkQueue::new(0, 4, 128);
        q.head = 0xfffe;
        assert!(q.ring(1));
        assert_eq!(q.pending(), 3);
        assert_eq!(q.peek(), Some((2, 256)));
    }

    /// Host memory that records where each write went.
    #[derive(Default)]
    struct WriteLog(std::cell::RefCell<Vec<(u64, usize)>>);

    impl HostMem for WriteLog {
        fn read(&self, _addr: u64, _buf: &mut [u8]) -> Result<(), crate::dma::DmaFault> {
            Ok(())
        }
        fn write(&self, addr: u64, buf: &[u8]) -> Result<(), crate::dma::DmaFault> {
            self.0.borrow_mut().push((addr, buf.len()));
            Ok(())
        }
    }

    #[test]
    fn entries_are_written_with_the_phase_word_last() {
        let log = WriteLog::default();
        let mut cq = CompletionQueue::new(0x100, 4, 0);
        assert!(matches!(
            cq.post(&log, Cqe::default(), false, || 0),
            Posted::Written { .. }
        ));
        let mut eq = EventQueue::new(0x800, 4, 0);
        assert!(eq.post(&log, 1, 7));
        let writes = log.0.into_inner();
        // Each entry: its body, then the flags word at offset 2 alone.
        assert_eq!(writes[2], (0x102, 2));
        assert_eq!(writes[5], (0x802, 2));
        let body: usize = writes[..2].iter().map(|w| w.1).sum();
        assert_eq!(body, CQE_LEN - 2);
    }

    #[test]
    fn a_resized_srq_keeps_the_slots_of_the_lap_rung_and_grows_after_it() {
        let mem = Memory::new(0x1_0000);
        let srq = Arc::new(Mutex::new(SharedRq::new(0x1000, 4, 1, 0)));
        let mut rq = RecvQueue::Shared {
            srqn: 1,
            srq: Arc::clone(&srq),
        };
        let mut take = |n: usize| {
            (0..n)
                .map_while(|_| rq.take(&mem).map(|t| t.slot))
                .collect::<Vec<_>>()
        };
        // Positions 0-3 rung, 0-1 taken, then 4-5 (slots 0-1 again).
        assert!(lock_srq(&srq).ring(4));
        assert_eq!(take(2), [0, 1]);
        assert!(lock_srq(&srq).ring(6));
        // Position 5 is in the lap that starts at 4: the new size counts
        // from there, and positions 2-3 of the lap before keep theirs.
        assert!(lock_srq(&srq).resize(8));
        assert!(!lock_srq(&srq).resize(16), "one resize at a time");
        assert_eq!(lock_srq(&srq).size(), 8);
        // In flight meanwhile: 2-3 of the old size, 4-11 of the new.
        assert!(lock_srq(&srq).ring(12));
        assert!(!lock_srq(&srq).ring(15), "more than both sizes hold");
        assert_eq!(take(20), [2, 3, 0, 1, 2, 3, 4, 5, 6, 7]);
        // Settled: laps of 8 from position 4.
        assert!(lock_srq(&srq).ring(20));
        assert!(!lock_srq(&srq).ring(21), "more than 8 in flight");
        assert_eq!(take(20), [0, 1, 2, 3, 4, 5, 6, 7]);
        // The head already in the lap rung: at once, the lap's slots
        // unchanged (positions 20-21 were slots 0-1 of 8 and stay so).
        assert!(lock_srq(&srq).ring(22));
        assert!(lock_srq(&srq).resize(32));
        assert_eq!(lock_srq(&srq).size(), 32);
        assert!(lock_srq(&srq).ring(50));
        assert_eq!(take(40), (0..30).collect::<Vec<u16>>());
    }

    #[test]
    fn a_stamped_queue_writes_the_time_after_each_entry_and_keeps_it_in_a_resize() {
        let mem = Memory::new(0x1_0000);
        let mut cq = CompletionQueue::new(0x100, 4, 0).with_timestamps();
        for (i, t) in [(0u16, 1_000u64), (1, 2_000)] {
            let cqe = Cqe {
                wqe_index: i,
                ..Cqe::default()
            };
            assert!(matches!(
                cq.post(&mem, cqe, false, || t),
                Posted::Written { .. }
            ));
        }
        let at = |base: u64, slot: u64| {
            let raw = mem.get(base + slot * CQE_STAMPED_LEN as u64, CQE_STAMPED_LEN);
            let cqe = Cqe::from_bytes(raw[..CQE_LEN].try_into().unwrap());
            let t = u64::from_le_bytes(raw[CQE_TIMESTAMP..CQE_TIMESTAMP + 8].try_into().unwrap());
            (cqe.wqe_index, cqe.flags & cqe_flag::PHASE != 0, t)
        };
        assert_eq!(at(0x100, 0), (0, true, 1_000));
        assert_eq!(at(0x100, 1), (1, true, 2_000));
        // Not the 32-byte stride: slot 1 of that would be slot 0's stamp.
        assert_eq!(at(0x100, 2), (0, false, 0));
        cq.consumed_to(1);
        assert_eq!(cq.resize(&mem, 0x1000, 8, 1), Some(()));
        assert_eq!(at(0x1000, 0), (1, true, 2_000));
        // An unstamped queue never asks for the time.
        let mut plain = CompletionQueue::new(0x2000, 4, 0);
        let posted = plain.post(&mem, Cqe::default(), false, || unreachable!());
        assert!(matches!(posted, Posted::Written { .. }));
    }

    #[test]
    fn completion_queue_phases_arming_and_overflow() {
        let mem = Memory::new(0x1_0000);
        let mut cq = CompletionQueue::new(0x100, 2, 0);
        let cqe = Cqe::default();
        assert_eq!(
            cq.post(&mem, cqe, false, || 0),
            Posted::Written { event: false }
        );
        // Armed over an unconsumed completion: the event is due at once.
        assert!(cq.arm(arm::NEXT));
        assert_eq!(
            cq.post(&mem, cqe, false, || 0),
            Posted::Written { event: false }
        );
        assert_eq!(cq.post(&mem, cqe, false, || 0), Posted::Overflow);
        let first = Cqe::from_bytes(&mem.get(0x100, CQE_LEN).try_into().unwrap());
        assert_ne!(first.flags & cqe_flag::PHASE, 0);
        cq.consumed_to(2);
        assert!(!cq.arm(arm::SOLICITED));
        // Second lap: phase clear; a solicited completion fires the arm.
        assert_eq!(
            cq.post(&mem, cqe, true, || 0),
            Posted::Written { event: true }
        );
        let again = Cqe::from_bytes(&mem.get(0x100, CQE_LEN).try_into().unwrap());
        assert_eq!(again.flags & cqe_flag::PHASE, 0);
        // Disarmed after one event.
        cq.consumed_to(3);
        assert_eq!(
            cq.post(&mem, cqe, true, || 0),
            Posted::Written { event: false }
        );
        // A consumer index ahead of the producer is ignored.
        cq.consumed_to(9);
        assert_eq!(cq.bad_doorbells, 1);
    }
}
