// SPDX-License-Identifier: GPL-2.0

//! Exception policing. The host decides exceptions one CPU's worth at a
//! time; a flood of new flows from one remote address (a SYN flood) must
//! not take the whole of it from everyone else. Each remote address (the
//! source of a packet from the wire, the destination of one from the
//! host) has a token bucket: at most `rate` exceptions a second, `burst`
//! at once; the rest are counted and dropped. A rate of 0 polices
//! nothing. The card keeps buckets for [`MAX_REMOTES`] addresses; when
//! that many are busy, the others share one more.

use std::collections::HashMap;

use crate::hw::gft::{Direction, FlowKey, DEFAULT_EXCEPTION_BURST, DEFAULT_EXCEPTION_RATE};

/// Remote addresses with a bucket of their own, at most.
pub const MAX_REMOTES: usize = 4096;

/// A token bucket, in thousandths of a token.
#[derive(Clone, Copy, Debug, Default)]
struct Bucket {
    milli_tokens: u64,
    last_ms: u32,
}

impl Bucket {
    /// Refills for the time since it was last used; whether it is full.
    fn refill(&mut self, now_ms: u32, rate: u64, full: u64) -> bool {
        let elapsed = u64::from(now_ms.wrapping_sub(self.last_ms));
        self.last_ms = now_ms;
        self.milli_tokens = (self.milli_tokens + elapsed.saturating_mul(rate)).min(full);
        self.milli_tokens == full
    }
}

/// The policers of the exception path.
#[derive(Debug)]
pub struct Policers {
    rate: u32,
    burst: u32,
    remotes: HashMap<[u8; 16], Bucket>,
    /// Shared by the addresses that find no room.
    overflow: Bucket,
    /// When full buckets were last swept out (at most once a millisecond).
    swept_ms: u32,
    drops: u64,
}

impl Default for Policers {
    fn default() -> Self {
        let mut p = Self {
            rate: 0,
            burst: 1,
            remotes: HashMap::new(),
            overflow: Bucket::default(),
            swept_ms: 0,
            drops: 0,
        };
        p.set(DEFAULT_EXCEPTION_RATE, DEFAULT_EXCEPTION_BURST);
        p
    }
}

impl Policers {
    /// Sets the rate (exceptions a second per remote address, 0: no
    /// limit) and burst; every bucket starts full.
    pub fn set(&mut self, rate: u32, burst: u32) {
        (self.rate, self.burst) = (rate, burst.max(1));
        self.remotes.clear();
        self.overflow = self.full_bucket(0);
    }

    /// The rate and burst.
    pub fn get(&self) -> (u32, u32) {
        (self.rate, self.burst)
    }

    fn full_bucket(&self, now_ms: u32) -> Bucket {
        Bucket {
            milli_tokens: u64::from(self.burst) * 1000,
            last_ms: now_ms,
        }
    }

    /// Whether an exception for `key` (going `key.dir`) may go to the host
    /// at `now_ms`; one that may not is counted.
    pub fn admit(&mut self, key: &FlowKey, now_ms: u32) -> bool {
        if self.rate == 0 {
            return true;
        }
        let (rate, full) = (u64::from(self.rate), u64::from(self.burst) * 1000);
        let remote = match key.dir {
            Direction::Rx => key.src,
            Direction::Tx => key.dst,
        };
        if !self.remotes.contains_key(&remote)
            && self.remotes.len() >= MAX_REMOTES
            && self.swept_ms != now_ms
        {
            // Full buckets are idle ones: a new one would be the same.
            self.swept_ms = now_ms;
            self.remotes.retain(|_, b| !b.refill(now_ms, rate, full));
        }
        let fresh = self.full_bucket(now_ms);
        let b = if self.remotes.len() < MAX_REMOTES || self.remotes.contains_key(&remote) {
            self.remotes.entry(remote).or_insert(fresh)
        } else {
            &mut self.overflow
        };
        b.refill(now_ms, rate, full);
        if b.milli_tokens < 1000 {
            self.drops += 1;
            return false;
        }
        b.milli_tokens -= 1000;
        true
    }

    /// Exceptions dropped for being over their rate.
    pub fn drops(&self) -> u64 {
        self.drops
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::gft::{proto, HOST_VPORT};

    fn key(dir: Direction, remote: u16, port: u16) -> FlowKey {
        let mut k = FlowKey {
            vport: HOST_VPORT,
            dir,
            tunnel: None,
            ip_version: 4,
            proto: proto::TCP,
            src: [0; 16],
            dst: [0; 16],
            sport: port,
            dport: 80,
        };
        let [hi, lo] = remote.to_be_bytes();
        let remote_addr = [10, 0, hi, lo, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        match dir {
            Direction::Rx => k.src = remote_addr,
            Direction::Tx => k.dst = remote_addr,
        }
        k
    }

    fn flood(p: &mut Policers, remote: u16, n: u16, ms: u32) -> usize {
        (0..n)
            .filter(|&i| p.admit(&key(Direction::Rx, remote, i), ms))
            .count()
    }

    #[test]
    fn a_flood_from_one_address_is_held_to_its_rate() {
        let mut p = Policers::default();
        p.set(1000, 10);
        // The burst, then one a millisecond.
        assert_eq!(flood(&mut p, 1, 100, 5), 10);
        assert_eq!(flood(&mut p, 1, 100, 6), 1);
        assert_eq!(flood(&mut p, 1, 100, 16), 10);
        assert_eq!(p.drops(), 300 - 21);
    }

    #[test]
    fn other_addresses_keep_their_share() {
        let mut p = Policers::default();
        p.set(100, 4);
        assert_eq!(flood(&mut p, 1, 1000, 0), 4);
        // Another address, whichever way its packets go.
        assert!(p.admit(&key(Direction::Tx, 2, 1), 0));
        assert!(p.admit(&key(Direction::Rx, 2, 2), 0));
        // No rate: nothing policed.
        p.set(0, 4);
        assert_eq!(flood(&mut p, 1, 1000, 0), 1000);
    }

    #[test]
    fn past_the_remotes_held_the_rest_share_a_bucket() {
        let mut p = Policers::default();
        p.set(1000, 2);
        // Every bucket busy (one token of two left).
        for r in 0..MAX_REMOTES as u16 {
            assert!(p.admit(&key(Direction::Rx, r, 0), 7));
        }
        let (a, b) = (MAX_REMOTES as u16, MAX_REMOTES as u16 + 1);
        assert!(p.admit(&key(Direction::Rx, a, 0), 7));
        assert!(p.admit(&key(Direction::Rx, b, 0), 7));
        assert!(!p.admit(&key(Direction::Rx, a, 1), 7));
        // A millisecond on, the idle (full) buckets make room.
        assert_eq!(flood(&mut p, a, 5, 9), 2);
        assert!(p.remotes.contains_key(&key(Direction::Rx, a, 0).src));
    }
}
