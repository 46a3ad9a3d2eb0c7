// SPDX-License-Identifier: GPL-2.0

//! The admin queue: the one mechanism for control commands to the card.
//!
//! Commands are 64-byte entries in a ring in host memory. The driver
//! writes a command, rings `AQ_TAIL`, and waits for the card to set the
//! done flag in the same entry, where the card also writes the result.
//! A mutex serialises callers, and each waits for its own entry, so a
//! slow or silent card costs one timeout, never a mixed-up result.
//! Commands may also be *posted* ([`AdminQueue::post`]), up to
//! [`MAX_POSTED`] at once, and their answers collected later
//! ([`AdminQueue::collect`]), in any order, while the caller does other
//! work: the GFT decides the next batches of exceptions while the card
//! installs the last ones' flows. A posted command hands the queue the
//! memory it points the card at; the queue gives it back with the
//! answer, so no one can write or free it while the card may read it.
//! The card takes entries in ring order, so a command run meanwhile
//! ([`AdminQueue::exec`]) is answered after the posted ones, and waits
//! only for its own. After a timeout the card's state is unknown (it may
//! yet act on the command): the queue remembers it, keeps the memory of
//! every command not answered until [`AdminQueue::restart`], and the NIC
//! resets the function before it frees memory the card might still use.
//!
//! A card with `ADMIN_TAIL_IN_PAGE` also reads the tail from the doorbell
//! page while it polls the page: the driver writes it there and rings
//! `AQ_TAIL` only when the card says it does not poll (as for TX tails).
//! A trapped doorbell reaches the card behind every doorbell queued
//! before it; under a flood that was most of an install command's wait.

use kernel::{
    alloc::kvec::PushError,
    new_mutex,
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        barrier::{smp_mb, smp_wmb},
        Arc, Mutex,
    },
    time::{
        delay::{fsleep, udelay},
        Delta,
    },
};

use crate::hw::{
    self, db_page, regs, AdminCmd, AdminStatus, AQ_DONE, AQ_ENTRY_SIZE, ENTRY_FLAGS_OFFSET,
};
use crate::linux::{
    alloc::push_or_return, dma::DmaBuffer, dma::DmaDevice, net::netdev::net_ratelimit,
};
use crate::regs::Registers;

/// Entries in the driver's admin queue.
const ENTRIES: u32 = 16;

/// How long a command may take, in polls (almost all [`POLL_US`] apart).
const TIMEOUT_POLLS: u32 = 20_000;
/// Poll interval while waiting for a command, in microseconds.
const POLL_US: i64 = 50;
/// The first polls' intervals, in microseconds, before [`POLL_US`].
const FIRST_POLLS_US: [i64; 4] = [2, 5, 10, 20];

/// How long to wait after poll number `poll`.
fn poll_interval_us(poll: u32) -> i64 {
    FIRST_POLLS_US
        .get(poll as usize)
        .copied()
        .unwrap_or(POLL_US)
}

/// Polls a microsecond apart, spinning, before the first sleep.
const SPIN_POLLS: u32 = 200;

/// Every this many polls, check that the card still answers at all.
const ALIVE_CHECK_POLLS: u32 = 100;

/// Why an admin command failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AdminError {
    /// The card refused the command.
    Refused(AdminStatus),
    /// The card wrote a status this interface does not define.
    BadStatus(u16),
    /// No answer in time.
    Timeout,
    /// The device is gone or memory could not be had.
    Io(Error),
}

impl From<AdminError> for Error {
    fn from(e: AdminError) -> Self {
        match e {
            AdminError::Refused(AdminStatus::BadParam) => EINVAL,
            AdminError::Refused(AdminStatus::BadState) => EBUSY,
            AdminError::Refused(AdminStatus::NoSpace) => ENOSPC,
            AdminError::Refused(AdminStatus::NotFound) => ENOENT,
            AdminError::Refused(_) | AdminError::BadStatus(_) => EIO,
            AdminError::Timeout => ETIMEDOUT,
            AdminError::Io(e) => e,
        }
    }
}

impl From<Error> for AdminError {
    fn from(e: Error) -> Self {
        Self::Io(e)
    }
}

/// Commands posted and not collected, at most. A post beyond it first
/// finishes the oldest (and forgets its answer); fewer than [`ENTRIES`],
/// so a posted command's entry is not reused before it is answered.
pub(crate) const MAX_POSTED: usize = 4;

/// A command written into the ring: its entry and opcode.
#[derive(Clone, Copy)]
struct Submitted {
    seq: u64,
    slot: usize,
    opcode: u16,
}

/// An answer read from the card, or why there is none.
type Answer = Result<[u8; AQ_ENTRY_SIZE], AdminError>;

/// A posted command, until it is collected.
struct Posted {
    cmd: Submitted,
    /// Its answer, once someone waited for it.
    answer: Option<Answer>,
    /// The memory the command points the card at.
    data: DmaBuffer,
}

/// Whether the card is done with a command that got `answer`: it wrote
/// the entry back. After a timeout (or a card gone) it may still act.
fn card_done(answer: &Answer) -> bool {
    !matches!(answer, Err(AdminError::Timeout | AdminError::Io(_)))
}

/// The answer of a posted command, collected with [`AdminQueue::collect`].
#[must_use = "a posted command is collected"]
pub(crate) struct Ticket {
    seq: u64,
}

struct Ring {
    mem: DmaBuffer,
    tail: u32,
    /// Posted commands not collected yet, oldest first.
    posted: KVec<Posted>,
    /// The memory of posted commands the card never answered: it may
    /// still use it, so it is kept until a reset makes it forget.
    orphaned: KVec<DmaBuffer>,
    /// Numbers commands (tickets).
    seq: u64,
    /// The doorbell page, once the card has it and follows its admin
    /// tail ([`AdminQueue::use_doorbell_page`]).
    page: Option<Arc<DmaBuffer>>,
}

impl Ring {
    /// Keeps `data` until a reset: the card may still use it.
    fn orphan(&mut self, data: DmaBuffer) {
        if let Err(data) = push_or_return(&mut self.orphaned, data) {
            // No memory to remember it: it must not be freed under the
            // card, so it is never freed.
            core::mem::forget(data);
        }
    }

    /// Writes the tail into the doorbell page, if the queue uses one;
    /// returns whether the card says it polls the page, so that no
    /// doorbell need be rung.
    fn tail_in_page_polled(&self) -> bool {
        let Some(page) = &self.page else {
            return false;
        };
        // The entry before its tail.
        smp_wmb();
        publish_to_polling_card(
            page,
            db_page::ADMIN_TAIL,
            db_page::ADMIN_TAIL_VALID | self.tail,
        )
    }
}

/// Writes a tail into the doorbell page `page` at `offset` and returns
/// whether the card says it polls the page (then no doorbell need be
/// rung). For the admin tail and the TX tails alike.
pub(crate) fn publish_to_polling_card(page: &DmaBuffer, offset: usize, tail: u32) -> bool {
    if page.write_position(offset, tail).is_err() {
        return false;
    }
    // The tail's store before the flag's load: the card clears the flag,
    // fences, then looks at the page once more, so one of the two sees
    // the other's store (no tail is left to a card that sleeps).
    smp_mb();
    // Untrusted like anything the card writes: a card that claims to
    // poll and does not stalls its own queue, which the TX watchdog or
    // the admin timeout (a function reset) reports.
    page.read_position(db_page::CARD_POLLING)
        .is_some_and(|polling| polling != 0)
}

/// The admin queue of one function.
#[pin_data]
pub(crate) struct AdminQueue {
    regs: Arc<Registers>,
    #[pin]
    ring: Mutex<Ring>,
    /// Commands the card did not answer in time.
    pub(crate) timeouts: Atomic<u64>,
    /// Commands the card failed or answered with a status it may not use.
    pub(crate) errors: Atomic<u64>,
    /// A command timed out since the last [`AdminQueue::restart`].
    lost: Atomic<u32>,
    /// `AQ_TAIL` doorbells rung.
    pub(crate) doorbells: Atomic<u64>,
    /// Doorbells not rung: the card was polling the page's admin tail.
    pub(crate) doorbells_skipped: Atomic<u64>,
}

impl AdminQueue {
    /// Allocates the queue and hands it to the card.
    pub(crate) fn new(regs: Arc<Registers>, dma: &DmaDevice) -> Result<Arc<Self>> {
        let mem = dma.alloc(ENTRIES as usize * AQ_ENTRY_SIZE)?;
        let posted = KVec::with_capacity(MAX_POSTED, GFP_KERNEL)?;
        Self::program(&regs, &mem)?;
        Arc::pin_init(
            pin_init!(Self {
                regs,
                ring <- new_mutex!(Ring {
                    mem,
                    tail: 0,
                    posted,
                    orphaned: KVec::new(),
                    seq: 0,
                    page: None
                }),
                timeouts: Atomic::new(0),
                errors: Atomic::new(0),
                lost: Atomic::new(0),
                doorbells: Atomic::new(0),
                doorbells_skipped: Atomic::new(0),
            }),
            GFP_KERNEL,
        )
    }

    fn program(regs: &Registers, mem: &DmaBuffer) -> Result {
        regs.write_addr(regs::AQ_BASE_LO, regs::AQ_BASE_HI, mem.dma_addr(0)?)?;
        regs.write(regs::AQ_SIZE, ENTRIES)
    }

    /// Hands the queue to the card again, empty, after a function reset
    /// made the card forget it.
    pub(crate) fn restart(&self) -> Result {
        let mut ring = self.ring.lock();
        let empty = [0u8; AQ_ENTRY_SIZE];
        for slot in 0..ENTRIES as usize {
            ring.mem.write(slot * AQ_ENTRY_SIZE, &empty)?;
        }
        ring.tail = 0;
        // The card forgot every command: their memory may go. A posted
        // command's ticket now finds no answer: its state is unknown, as
        // the caller is told.
        ring.posted.clear();
        ring.orphaned.clear();
        // The reset made the card forget the page too; an old tail left
        // in it must not be taken for the new queue's.
        if let Some(page) = ring.page.take() {
            let _ = page.write_position(db_page::ADMIN_TAIL, 0);
        }
        Self::program(&self.regs, &ring.mem)?;
        self.lost.store(0, Relaxed);
        Ok(())
    }

    /// The card took `page` as its doorbell page (`SET_DB_PAGE`) and
    /// follows its admin tail: write the tail there from now on, and
    /// ring only while the card does not poll. Until [`Self::restart`].
    pub(crate) fn use_doorbell_page(&self, page: Arc<DmaBuffer>) -> Result {
        let mut ring = self.ring.lock();
        page.write_position(db_page::ADMIN_TAIL, db_page::ADMIN_TAIL_VALID | ring.tail)?;
        ring.page = Some(page);
        Ok(())
    }

    /// Whether a command went unanswered since the last restart (or the
    /// caller said the card's state is unknown): the card may still act on
    /// it.
    pub(crate) fn lost_track(&self) -> bool {
        self.lost.load(Relaxed) != 0
    }

    /// Records that the card's state is unknown (a command whose failure
    /// leaves it so), as a timeout does.
    pub(crate) fn lose_track(&self) {
        self.lost.store(1, Relaxed);
    }

    /// Runs `cmd` and returns the completed entry (with any result).
    /// Sleeps; process context only.
    pub(crate) fn exec(&self, cmd: AdminCmd) -> Answer {
        let mut ring = self.ring.lock();
        let submitted = self.submit(&mut ring, cmd)?;
        self.wait(&ring.mem, submitted)
    }

    /// Sends `cmd`, which points the card at `data`, and returns at once;
    /// [`Self::collect`] waits for its answer and gives `data` back. With
    /// [`MAX_POSTED`] commands posted, the oldest is waited for first and
    /// its answer forgotten (its ticket then answers `EIO`).
    pub(crate) fn post(&self, cmd: AdminCmd, data: DmaBuffer) -> Result<Ticket, AdminError> {
        let mut ring = self.ring.lock();
        if ring.posted.len() >= MAX_POSTED {
            if let Ok(oldest) = ring.posted.remove(0) {
                self.forget(&mut ring, oldest);
            }
        }
        let submitted = match self.submit(&mut ring, cmd) {
            Ok(s) => s,
            Err(e) => {
                // The tail may have reached the card's page before the
                // failure: `data` is kept as if the card had it.
                ring.orphan(data);
                return Err(e);
            }
        };
        let posted = Posted {
            cmd: submitted,
            answer: None,
            data,
        };
        // Within the capacity reserved at creation (at most MAX_POSTED).
        if let Err(PushError(p)) = ring.posted.push_within_capacity(posted) {
            // Not reached; should it be, the command is not left behind.
            self.forget(&mut ring, p);
            return Err(AdminError::Io(ENOMEM));
        }
        Ok(Ticket { seq: submitted.seq })
    }

    /// The answer of the command `ticket` was given for, waiting for it
    /// if no one has yet, and the memory posted with it (none if the
    /// card may still use it). A function reset since then answers
    /// `EIO`.
    pub(crate) fn collect(&self, ticket: Ticket) -> (Answer, Option<DmaBuffer>) {
        let mut ring = self.ring.lock();
        let Some(i) = ring.posted.iter().position(|p| p.cmd.seq == ticket.seq) else {
            return (Err(AdminError::Io(EIO)), None);
        };
        match ring.posted.remove(i) {
            Ok(p) => self.finish(&mut ring, p),
            Err(_) => (Err(AdminError::Io(EIO)), None),
        }
    }

    /// Drops a posted command nobody will collect, once the card is done
    /// with it.
    fn forget(&self, ring: &mut Ring, p: Posted) {
        let _ = self.finish(ring, p);
    }

    /// A posted command's answer (waited for if no one has yet) and its
    /// memory, unless the card may still use it: then the ring keeps it.
    fn finish(&self, ring: &mut Ring, p: Posted) -> (Answer, Option<DmaBuffer>) {
        let answer = match p.answer {
            Some(a) => a,
            None => self.wait(&ring.mem, p.cmd),
        };
        if card_done(&answer) {
            (answer, Some(p.data))
        } else {
            ring.orphan(p.data);
            (answer, None)
        }
    }

    /// Writes `cmd` into the next entry and tells the card. A posted
    /// command still unanswered in that entry is waited for first (its
    /// answer kept for [`Self::collect`]).
    fn submit(&self, ring: &mut Ring, cmd: AdminCmd) -> Result<Submitted, AdminError> {
        let slot = ring.tail as usize * AQ_ENTRY_SIZE;
        let Ring { mem, posted, .. } = &mut *ring;
        for p in posted.iter_mut() {
            if p.cmd.slot == slot && p.answer.is_none() {
                p.answer = Some(self.wait(mem, p.cmd));
            }
        }
        let raw = cmd.to_bytes();
        let opcode = u16::from_le_bytes([raw[0], raw[1]]);
        ring.mem.write(slot, &raw)?;
        ring.tail = (ring.tail + 1) % ENTRIES;
        if ring.tail_in_page_polled() {
            self.doorbells_skipped.fetch_add(1, Relaxed);
        } else {
            self.doorbells.fetch_add(1, Relaxed);
            self.regs.write(regs::AQ_TAIL, ring.tail)?;
        }
        ring.seq += 1;
        Ok(Submitted {
            seq: ring.seq,
            slot,
            opcode,
        })
    }

    /// Waits for the card to answer the command `c` in the ring `mem`
    /// (spinning first, then sleeping), and returns the entry or why it
    /// failed.
    fn wait(&self, mem: &DmaBuffer, c: Submitted) -> Answer {
        let Submitted { slot, opcode, .. } = c;
        for poll in 0..TIMEOUT_POLLS {
            let done = mem.read_published(slot, ENTRY_FLAGS_OFFSET, |flags| flags & AQ_DONE != 0);
            if let Some(entry) = done {
                let (_, status) = hw::aq_entry_state(&entry);
                return match AdminStatus::from_raw(status) {
                    Some(AdminStatus::Ok) => Ok(entry),
                    Some(s) => {
                        if s == AdminStatus::DeviceError {
                            self.count_error(opcode, status);
                        }
                        Err(AdminError::Refused(s))
                    }
                    None => {
                        self.count_error(opcode, status);
                        Err(AdminError::BadStatus(status))
                    }
                };
            }
            if poll % ALIVE_CHECK_POLLS == ALIVE_CHECK_POLLS - 1 && self.regs.status().is_none() {
                // Gone (surprise removal) or wedged: no use waiting. Its
                // state is unknown, as after a timeout.
                self.lost.store(1, Relaxed);
                return Err(AdminError::Io(ENODEV));
            }
            // Most commands are done within microseconds of the
            // doorbell: look again soon, then back off to `POLL_US`.
            if poll < SPIN_POLLS {
                udelay(Delta::from_micros(1));
            } else {
                fsleep(Delta::from_micros(poll_interval_us(poll - SPIN_POLLS)));
            }
        }
        self.timeouts.fetch_add(1, Relaxed);
        self.lost.store(1, Relaxed);
        if net_ratelimit() {
            pr_warn!("admin command {} timed out\n", opcode);
        }
        Err(AdminError::Timeout)
    }

    /// Counts and logs (rate-limited) a command the card failed. Refusals
    /// of bad parameters are the caller's business, not the card's fault.
    fn count_error(&self, opcode: u16, status: u16) {
        self.errors.fetch_add(1, Relaxed);
        if net_ratelimit() {
            pr_warn!("admin command {} failed with status {}\n", opcode, status);
        }
    }

    /// Runs a command that returns nothing but its status.
    pub(crate) fn run(&self, cmd: AdminCmd) -> Result {
        self.exec(cmd).map(|_| ()).map_err(Error::from)
    }
}
