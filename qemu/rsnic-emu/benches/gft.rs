// SPDX-License-Identifier: GPL-2.0

//! The card's GFT, timed on one core: lookup + action packets per second
//! with 1K, 100K and 1M flows installed, and install commands per second
//! (record read from guest memory by DMA, table insert). Frames come from
//! 4096 flows spread over the table, in turn (cache-resident), and, with
//! 1M flows, from all flows at random, uniformly or Zipf-distributed
//! (s = 1, ranks scattered over the table): working sets larger than the
//! caches. Frames are made in the card's buffers from a template (the
//! bench reads no per-flow memory) and go through the engine in bursts.
//! Then switchdev mode, where masked rules decide every packet, with the
//! rules' exact-match cache on and off. Each figure is 5
//! runs, median [min-max]. `cargo bench`;
//! `RSNIC_BENCH_SECONDS` sets the time per figure (default 2).

mod common;
use common::{seconds, spread};

use std::fs::File;
use std::hint::black_box;
use std::time::{Duration, Instant};

use rsnic_emu::dma::DmaSpace;
use rsnic_emu::gft::classifier::{field, port, MatchKey, Rule};
use rsnic_emu::gft::{Gft, Output, BURST};
use rsnic_emu::hw::gft::{
    action, config, proto, Action, Direction, FlowKey, FlowRecord, HOST_VPORT,
};
use rsnic_emu::hw::{AdminCmd, AdminStatus, AQ_ENTRY_SIZE};

/// The key of flow `i`: UDP 10.0.x.y:(i % 50000) -> 10.1.0.1:4000.
fn key(i: u32) -> FlowKey {
    let mut src = [0u8; 16];
    src[..4].copy_from_slice(&[10, 0, (i >> 16) as u8, (i >> 8) as u8]);
    let mut dst = [0u8; 16];
    dst[..4].copy_from_slice(&[10, 1, 0, i as u8]);
    FlowKey {
        vport: HOST_VPORT,
        dir: Direction::Tx,
        tunnel: None,
        ip_version: 4,
        proto: proto::UDP,
        src,
        dst,
        sport: 1024 + (i % 50000) as u16,
        dport: 4000,
    }
}

/// A 64-byte UDP frame with `k`'s addresses and ports.
fn frame(k: &FlowKey) -> Vec<u8> {
    let mut out = Vec::new();
    etherparse::PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
        .ipv4(
            k.src[..4].try_into().unwrap(),
            k.dst[..4].try_into().unwrap(),
            64,
        )
        .udp(k.sport, k.dport)
        .write(&mut out, &[0u8; 22])
        .unwrap();
    out
}

/// Which flows the frames come from.
#[derive(Clone, Copy)]
enum Access {
    /// 4096 flows spread over the table, in turn.
    Cycle,
    /// Every flow, uniformly at random.
    Uniform,
    /// Every flow, Zipf-distributed (s = 1) over a random ranking.
    Zipf,
}

impl Access {
    fn name(self) -> &'static str {
        match self {
            Access::Cycle => "4096 in turn",
            Access::Uniform => "all, uniform",
            Access::Zipf => "all, Zipf s=1",
        }
    }
}

/// The flows the frames come from, in order.
struct Workload {
    order: Vec<u32>,
}

/// Enough indices that a run does not repeat them within a cache's reach.
const ORDER_LEN: usize = 1 << 22;

impl Workload {
    fn new(flows: u32, access: Access, rng: &mut fastrand::Rng) -> Self {
        let order = match access {
            Access::Cycle => (0..4096u32)
                .map(|i| i.wrapping_mul(2_654_435_761) % flows)
                .collect(),
            Access::Uniform => (0..ORDER_LEN).map(|_| rng.u32(0..flows)).collect(),
            Access::Zipf => {
                // P(rank r) ~ 1/r; rank r is flow perm[r].
                let mut perm: Vec<u32> = (0..flows).collect();
                rng.shuffle(&mut perm);
                let mut cdf = Vec::with_capacity(flows as usize);
                let mut sum = 0.0f64;
                for r in 1..=flows {
                    sum += 1.0 / f64::from(r);
                    cdf.push(sum);
                }
                (0..ORDER_LEN)
                    .map(|_| {
                        let u = rng.f64() * sum;
                        let r = cdf.partition_point(|&c| c < u).min(flows as usize - 1);
                        perm[r]
                    })
                    .collect()
            }
        };
        Workload { order }
    }
}

/// Turns `buf` into flow `i`'s frame: the template with `key(i)`'s
/// addresses and ports written in (as a packet arriving in the card's
/// buffer; computed, so the bench reads no per-flow memory of its own).
fn make_frame(buf: &mut Vec<u8>, template: &[u8], i: u32) {
    buf.clear();
    buf.extend_from_slice(template);
    let k = key(i);
    buf[26..30].copy_from_slice(&k.src[..4]);
    buf[30..34].copy_from_slice(&k.dst[..4]);
    buf[34..36].copy_from_slice(&k.sport.to_be_bytes());
}

/// Packets per second through `gft` for `load`'s frames, for `budget`,
/// in bursts of [`BURST`] (in switchdev mode one by one, from the VF's
/// port, as the card switches them); the frames' buffers come back from
/// the engine's output and are used again (no allocation of the
/// bench's).
fn fast_path(gft: &mut Gft, load: &Workload, budget: Duration) -> f64 {
    let template = frame(&key(0));
    let mut pool: Vec<Vec<u8>> = (0..BURST).map(|_| Vec::with_capacity(256)).collect();
    let mut burst = Vec::with_capacity(BURST);
    let mut out = Vec::with_capacity(2 * BURST);
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < budget {
        let now = Instant::now();
        for chunk in load.order.chunks(4096) {
            for flows in chunk.chunks(BURST) {
                for &i in flows {
                    let mut buf = pool.pop().unwrap_or_default();
                    make_frame(&mut buf, &template, i);
                    burst.push(buf);
                }
                if gft.switchdev() {
                    out.extend(
                        burst
                            .drain(..)
                            .filter_map(|f| gft.switch(f, port::VF0, now)),
                    );
                } else {
                    gft.process_burst(burst.drain(..), port::PF, now, &mut out);
                }
                for o in out.drain(..) {
                    match black_box(o) {
                        Output::Wire(f)
                        | Output::Host(f)
                        | Output::Exception(f)
                        | Output::Vf(f) => pool.push(f),
                    }
                }
            }
            n += chunk.len() as u64;
            if start.elapsed() >= budget {
                break;
            }
        }
    }
    n as f64 / start.elapsed().as_secs_f64()
}

/// Runs per figure.
const RUNS: u32 = 5;

fn filled(flows: u32, act: Action) -> Gft {
    let mut gft = Gft::default();
    assert!(gft.configure(config::ENABLE | config::CACHE, flows.max(1)));
    let now = Instant::now();
    for i in 0..flows {
        let rec = FlowRecord {
            key: key(i),
            generation: 0,
            action: act,
        };
        assert!(gft.install(&rec, now));
    }
    gft
}

/// A card in switchdev mode with rules as a switch's megaflows: 1024 of
/// one priority over `masks` masks, and a catch-all a priority below,
/// all forwarding to the wire. Rules of mask k match the VF's port and a
/// destination prefix of 32 - k bits of 10.1.0.n; `per_conversation`:
/// also a source port, so that every conversation has a cache key of its
/// own.
fn with_rules(masks: u32, per_conversation: bool, cache: bool) -> Gft {
    let mut gft = Gft::default();
    assert!(gft.configure(config::ENABLE | config::CACHE, 1));
    gft.set_switchdev(true);
    gft.rules.cache.set_enabled(cache);
    let forward = Action {
        flags: action::FORWARD,
        port: port::UPLINK,
        ..Action::default()
    };
    let now = Instant::now();
    // From the VF's port, and what `set` adds.
    let rule = |id, prio, set: &dyn Fn(&mut MatchKey, &mut MatchKey)| {
        Rule::new(id, prio, |key, mask| {
            key.set(field::IN_PORT, &port::VF0.to_be_bytes());
            mask.set_all(field::IN_PORT);
            set(key, mask);
        })
    };
    for i in 0..1024u32 {
        let (k, n) = (i % masks, i / masks);
        let r = rule(i, 1, &|key, mask| {
            let (mut dst, mut dmask) = ([0u8; 16], [0u8; 16]);
            // CAST: n is below 1024; its low byte picks the address.
            dst[..4].copy_from_slice(&[10, 1, 0, n as u8]);
            dmask[..4].copy_from_slice(&(u32::MAX << k).to_be_bytes());
            key.set(field::IP_DST, &dst);
            mask.set(field::IP_DST, &dmask);
            if per_conversation {
                // CAST: below 1024 + 1024.
                key.set(field::L4_SRC, &(1024 + n as u16).to_be_bytes());
                mask.set_all(field::L4_SRC);
            }
        });
        gft.rules.add(r, forward, now).unwrap();
    }
    gft.rules
        .add(rule(1024, 2, &|_, _| {}), forward, now)
        .unwrap();
    gft
}

/// Packets decided by masked rules, the cache on and off.
fn rule_path(budget: Duration, rng: &mut fastrand::Rng) {
    println!(
        "switchdev mode, packets decided by masked rules, 64-byte UDP frames from the VF: Mpps, median [min-max] of {RUNS}; share of lookups the cache answered"
    );
    println!(
        "{:>5} {:>17} {:>14} {:>24} {:>24} {:>7}",
        "masks", "rules match", "frames from", "cache off", "cache on", "cached"
    );
    let cycle = Workload::new(100_000, Access::Cycle, rng);
    let uniform = Workload::new(1_000_000, Access::Uniform, rng);
    let cases = [
        (1u32, false, &cycle, Access::Cycle),
        (4, false, &cycle, Access::Cycle),
        (16, false, &cycle, Access::Cycle),
        (4, true, &cycle, Access::Cycle),
        (16, true, &cycle, Access::Cycle),
        (4, true, &uniform, Access::Uniform),
        (16, true, &uniform, Access::Uniform),
    ];
    for (masks, per_conversation, load, access) in cases {
        let mut share = 0.0;
        let cells: Vec<String> = [false, true]
            .iter()
            .map(|&cache| {
                let mut gft = with_rules(masks, per_conversation, cache);
                let runs = (0..RUNS)
                    .map(|_| fast_path(&mut gft, load, budget / RUNS) / 1e6)
                    .collect();
                let c = gft.rules.cache.stats();
                // CAST: counts far below 2^53.
                share = c.hits as f64 / (c.hits + c.misses + c.bypassed).max(1) as f64;
                let (med, lo, hi) = spread(runs);
                format!("{med:.2} [{lo:.2}-{hi:.2}] {:.0}ns", 1e3 / med)
            })
            .collect();
        let what = if per_conversation {
            "dst + src port"
        } else {
            "dst prefix"
        };
        println!(
            "{masks:>5} {what:>17} {:>14} {:>24} {:>24} {:>6.1}%",
            access.name(),
            cells[0],
            cells[1],
            share * 100.0
        );
    }
}

fn main() {
    let budget = seconds();
    let nat = Action {
        flags: action::NAT_DST_IP | action::NAT_DST_PORT,
        nat_dip: [10, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        nat_dport: 5000,
        ..Action::default()
    };
    let mut vxlan = Action {
        flags: action::VXLAN_ENCAP,
        ..Action::default()
    };
    vxlan.encap.id = 42;
    vxlan.encap.sip[..4].copy_from_slice(&[192, 168, 0, 1]);
    vxlan.encap.dip[..4].copy_from_slice(&[192, 168, 0, 2]);
    println!(
        "GFT fast path, one core, 64-byte UDP frames hitting installed flows: Mpps, median [min-max] of {RUNS}; ns/packet of the median"
    );
    println!(
        "{:>9} {:>14} {:>24} {:>24} {:>24}",
        "flows", "frames from", "allow", "NAT", "VXLAN encap"
    );
    let mut rng = fastrand::Rng::with_seed(0x5eed);
    let mut memory = Vec::new();
    let cases = [
        (1_000u32, Access::Cycle),
        (100_000, Access::Cycle),
        (1_000_000, Access::Cycle),
        (1_000_000, Access::Uniform),
        (1_000_000, Access::Zipf),
    ];
    for (flows, access) in cases {
        let load = Workload::new(flows, access, &mut rng);
        let cells: Vec<String> = [Action::default(), nat, vxlan]
            .iter()
            .map(|a| {
                let mut gft = filled(flows, *a);
                memory.push((flows, a.flags, gft.bytes_per_flow()));
                let runs = (0..RUNS)
                    .map(|_| fast_path(&mut gft, &load, budget / RUNS) / 1e6)
                    .collect();
                let (med, lo, hi) = spread(runs);
                format!("{med:.2} [{lo:.2}-{hi:.2}] {:.0}ns", 1e3 / med)
            })
            .collect();
        println!(
            "{flows:>9} {:>14} {:>24} {:>24} {:>24}",
            access.name(),
            cells[0],
            cells[1],
            cells[2]
        );
    }

    // Every flow of a case has the same action, so it is held once.
    for (flows, flags, bytes) in memory.iter().filter(|m| m.0 == 1_000_000).take(3) {
        println!(
            "table memory with {flows} flows, action flags {flags:#x}: {bytes} bytes per flow"
        );
    }

    // And with an action of its own per flow (a NAT to a different
    // address each).
    let mut gft = Gft::default();
    assert!(gft.configure(config::ENABLE | config::CACHE, 1_000_000));
    for i in 0..1_000_000u32 {
        let mut own = nat;
        own.nat_dip[..4].copy_from_slice(&(0x0a00_0000 | i).to_be_bytes());
        let rec = FlowRecord {
            key: key(i),
            generation: 0,
            action: own,
        };
        assert!(gft.install(&rec, Instant::now()));
    }
    println!(
        "table memory with 1000000 flows, a NAT action of its own each: {} bytes per flow",
        gft.bytes_per_flow()
    );
    drop(gft);

    // Install commands as the card executes them: the record is read from
    // guest memory, then inserted.
    let path = std::env::temp_dir().join(format!("rsnic-gft-bench.{}", std::process::id()));
    let mem = File::options()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .expect("temporary file");
    let _ = std::fs::remove_file(&path);
    mem.set_len(1 << 16).expect("size");
    let mut dma = DmaSpace::default();
    dma.map(0x10000, 1 << 16, &mem, 0).expect("map");
    let mut gft = Gft::default();
    assert!(gft.configure(config::ENABLE | config::CACHE, 1 << 22));
    let mut entry = [0u8; AQ_ENTRY_SIZE];
    let start = Instant::now();
    let mut n = 0u32;
    while start.elapsed() < budget && n < (1 << 22) {
        let rec = FlowRecord {
            key: key(n),
            generation: 0,
            action: nat,
        };
        dma.write(0x10000, &rec.to_bytes()).expect("write");
        let status = gft.execute(
            &dma,
            AdminCmd::GftInstall { record: 0x10000 },
            &mut entry,
            Instant::now(),
        );
        assert_eq!(status, AdminStatus::Ok);
        n += 1;
    }
    let rate = f64::from(n) / start.elapsed().as_secs_f64();
    println!(
        "GFT_INSTALL commands executed by the card: {:.0}/s ({n} flows)",
        rate
    );
    rule_path(budget, &mut rng);
}
