// SPDX-License-Identifier: GPL-2.0

//! TX shaping ([`hw::shaper`]): a tree of token buckets per function, the
//! root the function as a whole, a leaf per queue pair, group nodes in
//! between. A frame leaves only when every bucket on its way from its
//! queue pair's to the root holds tokens; it then takes its length (the
//! bytes it puts on the wire) from each, which may leave a bucket in
//! debt. A queue pair that may not send keeps its frames on its ring and
//! is looked at again when the last bucket in its way is out of debt.

use std::time::{Duration, Instant};

use crate::hw::shaper::{self, COUNT, MAX_DEPTH, MAX_RATE, NODE_BASE, QUEUE_BASE, ROOT};
use crate::hw::MAX_QUEUE_PAIRS;

/// One shaper.
#[derive(Clone, Copy, Debug, Default)]
struct Bucket {
    parent: u16,
    /// Bits a second; 0: no limit.
    rate: u64,
    /// A queue pair's share against its siblings (at least 1).
    weight: u32,
    /// Most bytes it holds.
    burst: f64,
    /// Bytes it holds (negative: in debt).
    tokens: f64,
    /// When `tokens` was last brought up to date.
    last: Option<Instant>,
}

impl Bucket {
    fn refill(&mut self, now: Instant) {
        if let Some(last) = self.last {
            let secs = now.saturating_duration_since(last).as_secs_f64();
            self.tokens = (self.tokens + secs * self.rate as f64 / 8.0).min(self.burst);
        }
        self.last = Some(now);
    }

    /// How long until it is out of debt (zero if it is not).
    fn debt_time(&self) -> Duration {
        if self.tokens >= 0.0 {
            return Duration::ZERO;
        }
        Duration::from_secs_f64(-self.tokens * 8.0 / self.rate as f64)
    }
}

/// A function's shapers.
#[derive(Clone, Debug)]
pub struct ShaperTree {
    nodes: [Bucket; COUNT as usize],
    /// Whether any shaper limits: if none, [`Self::admit`] does nothing.
    any: bool,
    /// Start-time fair queueing among held-back queue pairs: each pair's
    /// finish tag (bytes sent over its weight), and the start tag of the
    /// last frame sent (the virtual time a pair that was idle starts
    /// from, so that idling earns it nothing).
    finish: [f64; MAX_QUEUE_PAIRS as usize],
    virtual_time: f64,
}

impl Default for ShaperTree {
    fn default() -> Self {
        Self {
            nodes: [Bucket::default(); COUNT as usize],
            any: false,
            finish: [0.0; MAX_QUEUE_PAIRS as usize],
            virtual_time: 0.0,
        }
    }
}

/// What [`ShaperTree::set`] gives a shaper.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Setting {
    /// Bytes at once (0: the default for the rate).
    pub burst: u32,
    /// Bits a second (0: no limit).
    pub rate: u64,
    /// A queue pair's weight (0: 1).
    pub weight: u32,
}

/// Why [`ShaperTree::set`] refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadShaper;

impl ShaperTree {
    /// Sets shaper `node` as [`crate::hw::AdminCmd::SetShaper`] says;
    /// nothing changes if it is refused.
    pub fn set(
        &mut self,
        node: u16,
        parent: u16,
        setting: Setting,
        now: Instant,
    ) -> Result<(), BadShaper> {
        let Setting {
            burst,
            rate,
            weight,
        } = setting;
        let is_group = |n: u16| (NODE_BASE..COUNT).contains(&n);
        let parent_ok = parent == ROOT || (is_group(parent) && parent != node);
        if node >= COUNT || (node == ROOT && parent != ROOT) || !parent_ok || rate > MAX_RATE {
            return Err(BadShaper);
        }
        let old = self.nodes[usize::from(node)];
        let burst = match burst {
            0 => shaper::default_burst(rate),
            b => u64::from(b),
        } as f64;
        self.nodes[usize::from(node)] = Bucket {
            parent,
            rate,
            weight: weight.max(1),
            burst,
            tokens: burst,
            last: Some(now),
        };
        if (QUEUE_BASE..COUNT).any(|n| self.path(n).is_none()) {
            self.nodes[usize::from(node)] = old;
            return Err(BadShaper);
        }
        self.any = self.nodes.iter().any(|b| b.rate != 0);
        Ok(())
    }

    /// The shapers from `leaf` (a queue pair's or a group node) up to the
    /// root, or `None` if the way loops or passes more than [`MAX_DEPTH`]
    /// group nodes.
    fn path(&self, leaf: u16) -> Option<Vec<u16>> {
        let mut path = vec![leaf];
        let mut at = leaf;
        while at != ROOT {
            at = self.nodes[usize::from(at)].parent;
            path.push(at);
            if path.len() > MAX_DEPTH + 2 {
                return None;
            }
        }
        Some(path)
    }

    /// Whether queue pair `qp` may send a frame of `len` bytes now: if so
    /// it is charged to every shaper on its way; if not, when to ask
    /// again.
    pub fn admit(&mut self, qp: usize, len: usize, now: Instant) -> Result<(), Instant> {
        if !self.any {
            return Ok(());
        }
        // CAST: below MAX_QUEUE_PAIRS.
        let Some(path) = self.path(QUEUE_BASE + qp as u16) else {
            // Refused by `set`: cannot happen.
            return Ok(());
        };
        let mut wait = Duration::ZERO;
        for &n in &path {
            let b = &mut self.nodes[usize::from(n)];
            if b.rate != 0 {
                b.refill(now);
                wait = wait.max(b.debt_time());
            }
        }
        if !wait.is_zero() {
            return Err(now + wait);
        }
        for &n in &path {
            let b = &mut self.nodes[usize::from(n)];
            if b.rate != 0 {
                b.tokens -= len as f64;
            }
        }
        let weight = f64::from(self.nodes[usize::from(path[0])].weight.max(1));
        let start = self.finish[qp].max(self.virtual_time);
        self.virtual_time = start;
        self.finish[qp] = start + len as f64 / weight;
        Ok(())
    }

    /// Of the queue pairs `waiting`, the one to serve first: the one
    /// with the least sent for its weight. An index into `waiting`.
    pub fn next_to_serve(&self, waiting: &[usize]) -> Option<usize> {
        (0..waiting.len()).min_by(|&a, &b| {
            let tag = |i: usize| self.finish[waiting[i]].max(self.virtual_time);
            tag(a).total_cmp(&tag(b))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const Q0: u16 = QUEUE_BASE;
    const Q1: u16 = QUEUE_BASE + 1;
    const N0: u16 = NODE_BASE;
    const N1: u16 = NODE_BASE + 1;

    fn rate(rate: u64) -> Setting {
        Setting {
            rate,
            ..Default::default()
        }
    }

    /// Frames of `len` bytes queue pair `qp` sends in `secs` simulated
    /// seconds, sending whenever the shapers let it.
    fn sent_in(t: &mut ShaperTree, qps: &[usize], len: usize, secs: u64) -> Vec<u64> {
        let start = Instant::now();
        let end = start + Duration::from_secs(secs);
        let mut now = start;
        let mut sent = vec![0u64; qps.len()];
        let mut next = vec![start; qps.len()];
        while now < end {
            for (i, &qp) in qps.iter().enumerate() {
                if next[i] <= now {
                    match t.admit(qp, len, now) {
                        Ok(()) => sent[i] += 1,
                        Err(when) => next[i] = when,
                    }
                }
            }
            now = *next
                .iter()
                .min()
                .unwrap()
                .max(&(now + Duration::from_micros(10)));
        }
        sent
    }

    #[test]
    fn a_queue_shaper_holds_its_rate() {
        let mut t = ShaperTree::default();
        let now = Instant::now();
        // 12 Mbit/s: 1000 frames of 1500 bytes a second.
        t.set(Q1, ROOT, rate(12_000_000), now).unwrap();
        let sent = sent_in(&mut t, &[0, 1], 1500, 2);
        assert!(sent[0] > 100_000, "queue 0 is not shaped: {sent:?}");
        // 2 s at the rate, plus the burst (10 ms, 15 KB: 10 frames) and
        // the frame that put it in debt.
        assert!((2000..=2012).contains(&sent[1]), "{sent:?}");
    }

    #[test]
    fn a_group_and_the_root_limit_what_is_below() {
        let mut t = ShaperTree::default();
        let now = Instant::now();
        t.set(N0, ROOT, rate(12_000_000), now).unwrap();
        t.set(Q0, N0, rate(0), now).unwrap();
        t.set(Q1, N0, rate(0), now).unwrap();
        let sent = sent_in(&mut t, &[0, 1], 1500, 2);
        let total = sent[0] + sent[1];
        assert!((2000..=2012).contains(&total), "{sent:?}");
        // The root, slower still, limits everything.
        t.set(ROOT, ROOT, rate(1_200_000), now).unwrap();
        let sent = sent_in(&mut t, &[0, 1, 2], 1500, 2);
        let total: u64 = sent.iter().sum();
        assert!((200..=212).contains(&total), "{sent:?}");
        // No limit left: nothing is shaped.
        for n in [ROOT, N0] {
            t.set(n, ROOT, rate(0), now).unwrap();
        }
        assert!(!t.any);
    }

    #[test]
    fn held_back_queue_pairs_share_by_weight() {
        let mut t = ShaperTree::default();
        let start = Instant::now();
        t.set(N0, ROOT, rate(12_000_000), start).unwrap();
        for (q, weight) in [(Q0, 1), (Q1, 3)] {
            let s = Setting {
                weight,
                ..Default::default()
            };
            t.set(q, N0, s, start).unwrap();
        }
        // Both always have frames; whenever the node lets one go, the
        // card serves the one `next_to_serve` picks.
        let (mut now, mut sent) = (start, [0u64; 2]);
        while now < start + Duration::from_secs(2) {
            let pick = t.next_to_serve(&[0, 1]).unwrap();
            match t.admit(pick, 1500, now) {
                Ok(()) => sent[pick] += 1,
                Err(when) => now = when,
            }
        }
        let ratio = sent[1] as f64 / sent[0] as f64;
        assert!((2.9..=3.1).contains(&ratio), "{sent:?}");
        assert!((2000..=2012).contains(&(sent[0] + sent[1])), "{sent:?}");
    }

    #[test]
    fn bad_trees_are_refused_and_change_nothing() {
        let mut t = ShaperTree::default();
        let now = Instant::now();
        t.set(N1, N0, rate(1000), now).unwrap();
        // A loop, a queue or itself as parent, the root under something,
        // out of range, too fast.
        for (node, parent, r) in [
            (N0, N1, 0),
            (Q0, Q1, 0),
            (N0, N0, 0),
            (ROOT, N0, 0),
            (COUNT, ROOT, 0),
            (Q0, COUNT, 0),
            (Q0, ROOT, MAX_RATE + 1),
        ] {
            assert_eq!(
                t.set(node, parent, rate(r), now),
                Err(BadShaper),
                "{node} {parent}"
            );
        }
        // Deeper than MAX_DEPTH group nodes.
        let mut prev = ROOT;
        for n in 0..MAX_DEPTH as u16 {
            t.set(NODE_BASE + 2 + n, prev, rate(0), now).unwrap();
            prev = NODE_BASE + 2 + n;
        }
        t.set(Q0, prev, rate(0), now).unwrap();
        let top = NODE_BASE + 2;
        assert_eq!(t.set(top, N1, rate(0), now), Err(BadShaper));
        assert_eq!(t.nodes[usize::from(top)].parent, ROOT);
        assert_eq!(t.nodes[usize::from(N1)].parent, N0);
    }
}
