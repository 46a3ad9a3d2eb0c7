// SPDX-License-Identifier: GPL-2.0

//! Flows the host is deciding. A miss marks its flow pending; until the
//! flow is installed or the mark expires ([`PENDING_MS`]), the flow's
//! later packets are counted and dropped instead of following the first
//! to the host, where they would wait behind it in the exception queue
//! and be decided again. TCP SYN, FIN and RST are never held back: the
//! host's connection tracking needs each.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::hw::gft::{CardExceptionStats, MAX_PENDING, PENDING_MS};

/// A map key that is a hash already (the flow table's, which is seeded):
/// used as it is.
#[derive(Default)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

/// Whether `until` (a millisecond clock that wraps) is after `now`.
fn after(until: u32, now: u32) -> bool {
    // CAST: the difference of two wrapping clocks, read as signed.
    (until.wrapping_sub(now) as i32) > 0
}

/// The pending marks, by flow hash, with when each expires.
#[derive(Debug, Default)]
pub struct Pending {
    marks: HashMap<u64, u32, BuildHasherDefault<Prehashed>>,
    /// When expired marks were last swept out (a full set is swept at most
    /// once a millisecond).
    swept_ms: u32,
    marked: u64,
    drops: u64,
}

impl Pending {
    /// A miss of the flow hashed `hash` at `now_ms`: whether it goes to
    /// the host (the flow is marked, if there is room). A packet of a
    /// flow already pending is counted and does not.
    pub fn admit(&mut self, hash: u64, now_ms: u32) -> bool {
        if let Some(&until) = self.marks.get(&hash) {
            if after(until, now_ms) {
                self.drops += 1;
                return false;
            }
        } else if self.marks.len() >= MAX_PENDING as usize {
            if self.swept_ms == now_ms {
                // Full of live marks: sent up unmarked.
                return true;
            }
            self.swept_ms = now_ms;
            self.marks.retain(|_, &mut until| after(until, now_ms));
            if self.marks.len() >= MAX_PENDING as usize {
                return true;
            }
        }
        self.marks.insert(hash, now_ms.wrapping_add(PENDING_MS));
        self.marked += 1;
        true
    }

    /// The flow hashed `hash` was installed: no longer pending.
    pub fn settled(&mut self, hash: u64) {
        if !self.marks.is_empty() {
            self.marks.remove(&hash);
        }
    }

    /// Forgets every mark (the table was emptied; its hashes change).
    pub fn clear(&mut self) {
        self.marks.clear();
    }

    /// The counters the driver can query.
    pub fn stats(&self) -> CardExceptionStats {
        CardExceptionStats {
            pending_marked: self.marked,
            pending_drops: self.drops,
            // CAST: at most MAX_PENDING.
            pending: self.marks.len() as u32,
            rate_drops: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_first_packet_goes_up_until_installed_or_expired() {
        let mut p = Pending::default();
        assert!(p.admit(7, 100));
        assert!(!p.admit(7, 101));
        assert!(!p.admit(7, 100 + PENDING_MS - 1));
        // Expired: the next packet asks again.
        assert!(p.admit(7, 100 + PENDING_MS));
        p.settled(7);
        assert!(p.admit(7, 100 + PENDING_MS + 1));
        let s = p.stats();
        assert_eq!((s.pending_marked, s.pending_drops, s.pending), (3, 2, 1));
    }

    #[test]
    fn a_wrapping_clock_and_a_full_set() {
        let mut p = Pending::default();
        assert!(p.admit(1, u32::MAX - 1));
        assert!(!p.admit(1, 3));
        for h in 0..u64::from(MAX_PENDING) + 10 {
            assert!(p.admit(1000 + h, 50));
        }
        // Full of live marks: sent unmarked, so not held back.
        assert!(p.admit(99_999, 50));
        assert!(p.admit(99_999, 50));
        assert!(p.stats().pending as usize <= MAX_PENDING as usize);
        // Once they expire a sweep makes room.
        assert!(p.admit(5, 50 + PENDING_MS));
        assert!(!p.admit(5, 51 + PENDING_MS));
        p.clear();
        assert_eq!(p.stats().pending, 0);
    }
}
