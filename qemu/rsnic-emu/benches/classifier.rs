// SPDX-License-Identifier: GPL-2.0

//! The card's masked rule table, timed on one core: lookups per second
//! with rules spread over a few masks (what a switch's megaflows or tc
//! flower rules give: per-destination /32, per-subnet /24, per-port,
//! and a catch-all), and adds + removes per second. Keys are built from
//! frames once (the lookup, not the parser, is timed). Each figure is 5
//! runs, median [min-max]. `cargo bench --bench classifier`;
//! `RSNIC_BENCH_SECONDS` sets the time per figure (default 2).

mod common;
use common::{seconds, spread};

use std::hint::black_box;
use std::time::{Duration, Instant};

use rsnic_emu::gft::classifier::{field, port, Classifier, MatchKey, Rule};

/// A UDP/IPv4 frame from 10.0.x.y:`i` to 10.1.x.y:4000.
fn frame(i: u32) -> Vec<u8> {
    let mut out = Vec::new();
    let b = i.to_be_bytes();
    etherparse::PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
        .ipv4([10, 0, b[2], b[3]], [10, 1, b[2], b[3]], 64)
        .udp(1024 + (i % 50000) as u16, 4000)
        .write(&mut out, &[0u8; 22])
        .unwrap();
    out
}

/// Rule `i` of `masks` kinds: kind 0 matches a /32 destination, kind 1 a
/// /24, kind 2 an L4 source port, further kinds UDP to port 4000 at a
/// destination prefix of 31, 30, ... bits; lower kinds have better
/// priorities.
fn rule(i: u32, masks: u32) -> Rule {
    let kind = i % masks;
    let n = i / masks;
    let b = n.to_be_bytes();
    let (mut key, mut mask) = (MatchKey::default(), MatchKey::default());
    let mut dst = [0u8; 16];
    dst[..4].copy_from_slice(&[10, 1, b[2], b[3]]);
    key.set(field::IN_PORT, &port::PF.to_be_bytes());
    mask.set_all(field::IN_PORT);
    match kind {
        0 => {
            key.set(field::IP_DST, &dst);
            mask.set_all(field::IP_DST);
        }
        1 => {
            dst[3] = 0;
            dst[2] = b[3];
            key.set(field::IP_DST, &dst);
            mask.set(
                field::IP_DST,
                &[0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            );
        }
        2 => {
            key.set(field::L4_SRC, &(1024 + (n % 50000) as u16).to_be_bytes());
            mask.set_all(field::L4_SRC);
        }
        k => {
            // A destination prefix of 31 bits, 30, ...: a mask each.
            let bits = 32 - (k - 2);
            let mut dmask = [0u8; 16];
            dmask[..4].copy_from_slice(&(u32::MAX << (32 - bits)).to_be_bytes());
            key.set(field::IP_DST, &dst).set(field::IP_PROTO, &[17]);
            key.set(field::L4_DST, &4000u16.to_be_bytes());
            mask.set(field::IP_DST, &dmask)
                .set_all(field::IP_PROTO)
                .set_all(field::L4_DST);
        }
    }
    Rule {
        id: i,
        prio: kind as u16,
        key,
        mask,
    }
}

fn lookups(c: &Classifier, keys: &[MatchKey], budget: Duration) -> f64 {
    let start = Instant::now();
    let mut n = 0u64;
    let mut hits = 0u64;
    while start.elapsed() < budget {
        for k in keys {
            hits += u64::from(c.lookup(black_box(k)).is_some());
        }
        n += keys.len() as u64;
    }
    black_box(hits);
    n as f64 / start.elapsed().as_secs_f64()
}

fn main() {
    let budget = seconds();
    // Keys of 4096 packets, spread over the rules' addresses.
    let keys: Vec<MatchKey> = (0..4096u32)
        .map(|i| MatchKey::of_frame(&frame(i * 7), port::PF))
        .collect();
    // The same packets from the wire: every rule asks for the PF, so a
    // lookup probes every mask.
    let misses: Vec<MatchKey> = (0..4096u32)
        .map(|i| MatchKey::of_frame(&frame(i * 7), port::UPLINK))
        .collect();
    println!("masked rule table: lookups/s (5 runs, median [min-max])");
    for (rules, masks) in [
        (16u32, 4u32),
        (1000, 4),
        (10_000, 4),
        (10_000, 16),
        (100_000, 16),
    ] {
        let mut c = Classifier::new(rules as usize);
        for i in 0..rules {
            c.add(rule(i, masks)).unwrap();
        }
        for (what, keys) in [("", &keys), (", from the wire: no rule matches", &misses)] {
            let hit = keys.iter().filter(|k| c.lookup(k).is_some()).count();
            let runs: Vec<f64> = (0..5).map(|_| lookups(&c, keys, budget)).collect();
            let (m, lo, hi) = spread(runs);
            println!(
                "  {rules:>6} rules, {:>2} masks: {:>6.2} M lookups/s [{:.2}-{:.2}] ({hit}/4096 keys match{what})",
                c.masks(),
                m / 1e6,
                lo / 1e6,
                hi / 1e6
            );
        }
    }
    let rules = 10_000u32;
    let runs: Vec<f64> = (0..5)
        .map(|_| {
            let mut c = Classifier::new(rules as usize);
            let start = Instant::now();
            for i in 0..rules {
                c.add(rule(i, 16)).unwrap();
            }
            for i in 0..rules {
                c.remove(i).unwrap();
            }
            f64::from(2 * rules) / start.elapsed().as_secs_f64()
        })
        .collect();
    let (m, lo, hi) = spread(runs);
    println!(
        "  add + remove of {rules} rules over 16 masks: {:.0} k ops/s [{:.0}-{:.0}]",
        m / 1e3,
        lo / 1e3,
        hi / 1e3
    );
}
