// SPDX-License-Identifier: GPL-2.0

//! The card's GFT, timed on one core: lookup + action packets per second
//! with 1K, 100K and 1M flows installed, and install commands per second
//! (record read from guest memory by DMA, table insert). `cargo bench`;
//! `RSNIC_BENCH_SECONDS` sets the time per measurement (default 2).

use std::fs::File;
use std::hint::black_box;
use std::time::{Duration, Instant};

use rsnic_emu::dma::DmaSpace;
use rsnic_emu::gft::Gft;
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

fn seconds() -> Duration {
    let s = std::env::var("RSNIC_BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2.0);
    Duration::from_secs_f64(s)
}

/// Packets per second through `gft` for frames hitting its flows.
fn fast_path(gft: &mut Gft, flows: u32, budget: Duration) -> f64 {
    // 4096 frames of flows spread over the table, sent round-robin.
    let frames: Vec<Vec<u8>> = (0..4096u32)
        .map(|i| frame(&key(i.wrapping_mul(2_654_435_761) % flows)))
        .collect();
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < budget {
        let now = Instant::now();
        for f in &frames {
            black_box(gft.process(f.clone(), Direction::Tx, now));
        }
        n += frames.len() as u64;
    }
    n as f64 / start.elapsed().as_secs_f64()
}

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
    println!("GFT fast path, one core, 64-byte UDP frames hitting installed flows");
    println!(
        "{:>10} {:>14} {:>14} {:>14}",
        "flows", "allow Mpps", "NAT Mpps", "VXLAN Mpps"
    );
    for flows in [1_000u32, 100_000, 1_000_000] {
        let rates: Vec<f64> = [Action::default(), nat, vxlan]
            .iter()
            .map(|a| fast_path(&mut filled(flows, *a), flows, budget) / 1e6)
            .collect();
        println!(
            "{flows:>10} {:>14.2} {:>14.2} {:>14.2}",
            rates[0], rates[1], rates[2]
        );
    }

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
}
