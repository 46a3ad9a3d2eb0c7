// SPDX-License-Identifier: GPL-2.0

//! A flow's token-bucket meter: a rate in bits per second and a burst in
//! bytes; packets that find too few tokens are dropped.

use std::time::Instant;

/// Burst when the action gives none: 10 ms at the rate, at least two
/// full-size frames.
fn default_burst(rate_bps: u64) -> u64 {
    (rate_bps / 8 / 100).max(2 * 1518)
}

/// Token bucket state.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    /// Bytes per second.
    rate: u64,
    /// Bucket depth in bytes.
    burst: u64,
    /// Tokens, in bytes × 10⁹ (nanobyte precision avoids rounding loss at
    /// low rates).
    tokens_nb: u128,
    last: Instant,
}

impl TokenBucket {
    /// A full bucket for `rate_bps` bits per second and `burst` bytes (0:
    /// a default).
    pub fn new(rate_bps: u64, burst: u32, now: Instant) -> Self {
        let burst = if burst == 0 {
            default_burst(rate_bps)
        } else {
            u64::from(burst)
        };
        Self {
            rate: (rate_bps / 8).max(1),
            burst,
            tokens_nb: u128::from(burst) * 1_000_000_000,
            last: now,
        }
    }

    /// Whether a packet of `len` bytes conforms at `now` (its tokens are
    /// then taken).
    pub fn admit(&mut self, len: usize, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.last).as_nanos();
        self.last = now.max(self.last);
        let cap = u128::from(self.burst) * 1_000_000_000;
        self.tokens_nb = (self.tokens_nb + elapsed * u128::from(self.rate)).min(cap);
        let need = len as u128 * 1_000_000_000;
        if self.tokens_nb >= need {
            self.tokens_nb -= need;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn long_run_rate_is_the_configured_one() {
        let t0 = Instant::now();
        // 8 Mbit/s = 1 MB/s, 10 KB burst; offer 3 MB/s for 2 s.
        let mut tb = TokenBucket::new(8_000_000, 10_000, t0);
        let mut passed = 0u64;
        for i in 0..6000u64 {
            let now = t0 + Duration::from_micros(i * 333);
            if tb.admit(1000, now) {
                passed += 1000;
            }
        }
        let expected = 2_000_000 + 10_000;
        assert!(passed.abs_diff(expected) < 5_000, "{passed} bytes passed");
    }

    #[test]
    fn default_burst_passes_a_couple_of_frames() {
        let t0 = Instant::now();
        let mut tb = TokenBucket::new(1000, 0, t0);
        assert!(tb.admit(1500, t0));
        assert!(tb.admit(1500, t0));
        assert!(!tb.admit(1500, t0));
    }
}
