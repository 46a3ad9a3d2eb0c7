// SPDX-License-Identifier: GPL-2.0

//! The doorbell page ([`hw::db_page`]): a page of host memory where the
//! driver writes the TX tails of its queue pairs, and the card says
//! whether it polls them.
//!
//! The page is host memory, not part of a BAR, because QEMU's vfio-user
//! client stops posting writes for the whole device once any region is
//! mmap-able: every trapped doorbell would then wait for the card's reply
//! (testing.rst). Host memory the card reaches as DMA has no such cost.
//!
//! Everything in the page but [`hw::db_page::CARD_POLLING`] is written by
//! the driver and untrusted: a tail is only a number the card checks like
//! a trapped doorbell's.

use std::sync::atomic::{fence, Ordering};
use std::time::{Duration, Instant};

use crate::dma::DmaSpace;
use crate::hw::db_page;

/// Where a function's doorbell page is, once the driver has said.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DoorbellPage {
    addr: Option<u64>,
}

/// Why a page was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadPage;

impl DoorbellPage {
    /// The page at bus address `addr` (0: none), which must be aligned
    /// and mapped whole. The card's word starts cleared.
    pub fn at(dma: &DmaSpace, addr: u64) -> Result<Self, BadPage> {
        if addr == 0 {
            return Ok(Self::default());
        }
        // CAST: the page's size, 4 KiB, fits in a u64.
        if !addr.is_multiple_of(db_page::SIZE as u64) || !dma.is_mapped(addr, db_page::SIZE) {
            return Err(BadPage);
        }
        let page = Self { addr: Some(addr) };
        page.set_card_polling(dma, false);
        Ok(page)
    }

    /// Whether the driver gave a page.
    pub fn is_set(&self) -> bool {
        self.addr.is_some()
    }

    fn word(&self, offset: usize) -> Option<u64> {
        // CAST: offsets inside a 4 KiB page.
        self.addr.map(|a| a + offset as u64)
    }

    /// Queue pair `qp`'s TX tail as the driver last wrote it (0 if there
    /// is no page, or it became unreachable).
    pub fn tx_tail(&self, dma: &DmaSpace, qp: u16) -> u32 {
        self.word(db_page::tx_tail(qp))
            .and_then(|a| dma.load_u32(a).ok())
            .unwrap_or(0)
    }

    /// The admin queue's tail as the driver last wrote it into the page,
    /// if it uses the page for it ([`db_page::ADMIN_TAIL_VALID`]).
    /// Untrusted: a number the card checks like a trapped doorbell's.
    pub fn admin_tail(&self, dma: &DmaSpace) -> Option<u32> {
        let word = self
            .word(db_page::ADMIN_TAIL)
            .and_then(|a| dma.load_u32(a).ok())?;
        (word & db_page::ADMIN_TAIL_VALID != 0).then_some(word & !db_page::ADMIN_TAIL_VALID)
    }

    /// Bus address of queue pair `qp`'s RX tail in the page (its CQ
    /// word follows), for a pair with [`crate::hw::qp_flags::RX_CQ_IN_PAGE`].
    pub fn rx_words(&self, qp: u16) -> Option<u64> {
        self.word(db_page::rx_tail(qp))
    }

    /// Zeroes queue pair `qp`'s RX tail and CQ word (the pair is being
    /// created: an earlier pair's must not pass for its own).
    pub fn clear_rx_words(&self, dma: &DmaSpace, qp: u16) {
        for offset in [db_page::rx_tail(qp), db_page::cq_word(qp)] {
            if let Some(a) = self.word(offset) {
                let _ = dma.store_u32(a, 0);
            }
        }
    }

    /// Zeroes queue pair `qp`'s TX tail (the pair is being created: no
    /// tail of an earlier pair may be taken for one of its own).
    pub fn clear_tx_tail(&self, dma: &DmaSpace, qp: u16) {
        if let Some(a) = self.word(db_page::tx_tail(qp)) {
            let _ = dma.store_u32(a, 0);
        }
    }

    /// Says whether the card polls the page. A full fence follows: the
    /// caller's next look at the tails is ordered after the store, as the
    /// driver's look at this word is after its tail's (so of a tail
    /// written as the card stops polling, one side sees the other's
    /// store: the card the tail, or the driver that it must ring).
    pub fn set_card_polling(&self, dma: &DmaSpace, polling: bool) {
        if let Some(a) = self.word(db_page::CARD_POLLING) {
            let _ = dma.store_u32(a, u32::from(polling));
        }
        fence(Ordering::SeqCst);
    }
}

/// Whether the card polls the page after a kick, and for how long.
///
/// Polling pays when tails come within the budget of each other: a
/// small-packet flood, whose tails the card then takes with no kick. It
/// does not when they come far apart (a TCP sender's large TSO frames):
/// the card would spin for nothing, on a core the vCPUs and the wire's
/// threads need (measured: testing.rst). So the window keeps a score of
/// how often a tail came within the budget (a tail caught while polling,
/// or a kick that soon after the last poll ended) against how often one
/// did not (a later kick), and polls for the budget only while the score
/// says most do, and while the card is not receiving: on two cores, a
/// core spent polling is one the card's own receive path and the vCPUs
/// that take its frames cannot use (a TCP receiver's ACKs are a flood of
/// small kicks; polling for them cost TCP throughput, testing.rst).
#[derive(Clone, Copy, Debug)]
pub struct PollWindow {
    max: Duration,
    /// Exponentially weighted share of tails that came soon, out of
    /// [`Self::FULL`].
    score: u32,
    last_end: Option<Instant>,
    /// [`crate::card::Card::rx_batches`] at the last kick.
    rx_batches: u64,
}

impl PollWindow {
    /// The score of "every tail came soon".
    const FULL: u32 = 256;

    /// A window of at most `max`; it starts out polling.
    pub fn new(max: Duration) -> Self {
        Self {
            max,
            score: Self::FULL / 2,
            last_end: None,
            rx_batches: 0,
        }
    }

    fn record(&mut self, soon: bool) {
        // Weight 1/8 to the newest: the steady score of all-soon is FULL.
        self.score = self.score - self.score / 8 + if soon { Self::FULL / 8 } else { 0 };
    }

    /// A kick came at `now`, when the card had taken `rx_batches` batches
    /// from the wire: how long to poll after it (zero: not at all).
    pub fn on_kick(&mut self, now: Instant, rx_batches: u64) -> Duration {
        let soon = self
            .last_end
            .is_some_and(|end| now.saturating_duration_since(end) <= self.max);
        self.record(soon);
        let receiving = rx_batches != self.rx_batches;
        self.rx_batches = rx_batches;
        if self.score >= Self::FULL / 2 && !receiving {
            self.max
        } else {
            Duration::ZERO
        }
    }

    /// Polling took a tail that moved: one that came soon.
    pub fn on_caught(&mut self) {
        self.record(true);
    }

    /// The poll ended (the card said it sleeps) at `now`.
    pub fn on_end(&mut self, now: Instant) {
        self.last_end = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dma::tests::two_region_space;

    #[test]
    fn refuses_unaligned_or_unmapped_pages() {
        let (dma, _file) = two_region_space();
        assert_eq!(DoorbellPage::at(&dma, 0x1000 + 8), Err(BadPage));
        assert_eq!(DoorbellPage::at(&dma, 0x7fff_0000), Err(BadPage));
        assert!(!DoorbellPage::at(&dma, 0).unwrap().is_set());
    }

    #[test]
    fn tails_are_read_from_the_page_and_cleared_on_create() {
        let (dma, _file) = two_region_space();
        let page = DoorbellPage::at(&dma, 0x1000).unwrap();
        dma.store_u32(0x1000 + db_page::tx_tail(3) as u64, 17)
            .unwrap();
        assert_eq!(page.tx_tail(&dma, 3), 17);
        page.clear_tx_tail(&dma, 3);
        assert_eq!(page.tx_tail(&dma, 3), 0);
        page.set_card_polling(&dma, true);
        assert_eq!(dma.load_u32(0x1000 + db_page::CARD_POLLING as u64), Ok(1));
    }

    #[test]
    fn the_admin_tail_counts_only_when_marked_valid() {
        let (dma, _file) = two_region_space();
        let page = DoorbellPage::at(&dma, 0x1000).unwrap();
        let at = 0x1000 + db_page::ADMIN_TAIL as u64;
        assert_eq!(page.admin_tail(&dma), None, "a zeroed word is unused");
        dma.store_u32(at, 5).unwrap();
        assert_eq!(page.admin_tail(&dma), None, "no valid bit");
        dma.store_u32(at, db_page::ADMIN_TAIL_VALID | 5).unwrap();
        assert_eq!(page.admin_tail(&dma), Some(5));
        assert_eq!(DoorbellPage::default().admin_tail(&dma), None);
    }

    #[test]
    fn the_window_polls_while_tails_come_soon() {
        let max = Duration::from_micros(50);
        let mut w = PollWindow::new(max);
        let mut t = Instant::now();
        assert_eq!(w.on_kick(t, 0), Duration::ZERO, "a first kick is not soon");
        // A flood: kicks soon after each poll, tails caught while polling.
        for _ in 0..4 {
            w.on_end(t);
            t += Duration::from_micros(20);
            w.on_kick(t, 0);
            w.on_caught();
        }
        w.on_end(t);
        assert_eq!(
            w.on_kick(t + Duration::from_micros(20), 1),
            Duration::ZERO,
            "receiving"
        );
        w.on_end(t);
        assert_eq!(w.on_kick(t + Duration::from_micros(20), 1), max);
        // Then frames far apart: the card stops polling within a few.
        let mut polls = 0;
        for _ in 0..10 {
            w.on_end(t);
            t += Duration::from_millis(1);
            if !w.on_kick(t, 0).is_zero() {
                polls += 1;
            }
        }
        assert!((1..6).contains(&polls), "{polls} polls");
        assert_eq!(w.on_kick(t + Duration::from_millis(1), 0), Duration::ZERO);
    }
}
