//! The card's clock (`hw::ptp`): nanoseconds counted from the host's
//! monotonic clock, set, moved and run faster or slower by the driver's
//! admin commands. One per card, shared by its functions; what the card
//! stamps into completions (`hw::Cqe::TSTAMP`) and what
//! `hw::regs::PTP_TIME_LO` reads.

use std::sync::Mutex;
use std::time::Instant;

use crate::hw::ptp::MAX_SCALED_PPM;

/// Parts per million with a 16-bit binary fraction, per unit.
const SCALED_PPM_UNIT: i128 = 65_536 * 1_000_000;

/// The clock's reading at `base`, and how fast it runs since.
#[derive(Clone, Copy, Debug)]
struct Epoch {
    base: Instant,
    base_ns: u64,
    scaled_ppm: i64,
}

impl Epoch {
    fn at(&self, now: Instant) -> u64 {
        // CAST: a span of u64 nanoseconds fits i128 with room.
        let elapsed = now.saturating_duration_since(self.base).as_nanos() as i128;
        let steered = elapsed + elapsed * i128::from(self.scaled_ppm) / SCALED_PPM_UNIT;
        // CAST: the clock wraps as a 64-bit counter does.
        (i128::from(self.base_ns) + steered) as u64
    }
}

/// The card's clock.
#[derive(Debug)]
pub struct CardClock {
    epoch: Mutex<Epoch>,
}

/// A frequency offset beyond [`MAX_SCALED_PPM`].
#[derive(Debug, PartialEq, Eq)]
pub struct OutOfRange;

impl Default for CardClock {
    /// A clock at 0 from now, on its oscillator's frequency.
    fn default() -> Self {
        Self {
            epoch: Mutex::new(Epoch {
                base: Instant::now(),
                base_ns: 0,
                scaled_ppm: 0,
            }),
        }
    }
}

impl CardClock {
    fn epoch(&self) -> std::sync::MutexGuard<'_, Epoch> {
        self.epoch.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The clock now, in nanoseconds.
    pub fn now_ns(&self) -> u64 {
        self.at(Instant::now())
    }

    /// The clock at `now` (a moment the caller took), in nanoseconds.
    pub fn at(&self, now: Instant) -> u64 {
        self.epoch().at(now)
    }

    /// Sets the clock to `ns`.
    pub fn set(&self, ns: u64) {
        let mut e = self.epoch();
        e.base = Instant::now();
        e.base_ns = ns;
    }

    /// Moves the clock by `delta` nanoseconds.
    pub fn adjust(&self, delta: i64) {
        let mut e = self.epoch();
        let now = Instant::now();
        e.base_ns = e.at(now).wrapping_add_signed(delta);
        e.base = now;
    }

    /// Runs the clock `scaled_ppm` faster (or slower, below 0) than the
    /// oscillator from now on.
    pub fn set_frequency(&self, scaled_ppm: i64) -> Result<(), OutOfRange> {
        if !(-MAX_SCALED_PPM..=MAX_SCALED_PPM).contains(&scaled_ppm) {
            return Err(OutOfRange);
        }
        let mut e = self.epoch();
        let now = Instant::now();
        e.base_ns = e.at(now);
        e.base = now;
        e.scaled_ppm = scaled_ppm;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn runs_steered_by_frequency() {
        let base = Instant::now();
        let e = Epoch {
            base,
            base_ns: 1_000,
            scaled_ppm: 0,
        };
        assert_eq!(e.at(base + Duration::from_secs(1)), 1_000_001_000);
        // +100 ppm: 100 us more a second.
        let fast = Epoch {
            scaled_ppm: 100 * 65_536,
            ..e
        };
        assert_eq!(fast.at(base + Duration::from_secs(1)), 1_000_101_000);
        let slow = Epoch {
            scaled_ppm: -100 * 65_536,
            ..e
        };
        assert_eq!(slow.at(base + Duration::from_secs(1)), 999_901_000);
    }

    #[test]
    fn set_and_adjust_move_it() {
        let c = CardClock::default();
        c.set(5_000_000_000);
        let t = c.now_ns();
        assert!((5_000_000_000..5_100_000_000).contains(&t), "{t}");
        c.adjust(-2_000_000_000);
        let t = c.now_ns();
        assert!((3_000_000_000..3_100_000_000).contains(&t), "{t}");
        // Never before what it read a moment ago.
        assert!(c.now_ns() >= t);
    }

    #[test]
    fn refuses_a_frequency_out_of_range() {
        let c = CardClock::default();
        assert_eq!(c.set_frequency(MAX_SCALED_PPM + 1), Err(OutOfRange));
        assert_eq!(c.set_frequency(-MAX_SCALED_PPM - 1), Err(OutOfRange));
        assert_eq!(c.set_frequency(MAX_SCALED_PPM), Ok(()));
        assert_eq!(c.set_frequency(-MAX_SCALED_PPM), Ok(()));
    }
}
