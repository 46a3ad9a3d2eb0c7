// SPDX-License-Identifier: GPL-2.0

//! rsnic-emu: the emulated rsnic SmartNIC.
//!
//! One process serves one card, or two cabled to each other (`--peer-*`).
//! It serves a card's physical function over a vfio-user socket (QEMU's
//! `-device vfio-user-pci`), carries its frames on a wire to a peer card,
//! and takes harness commands (fault injection, cable, counters) on a
//! control socket. It exits when QEMU disconnects.
//!
//! Two cards in one process share the wire in process as well: a batch
//! one sends goes into the other from the sending thread, with no
//! hand-off to a receive thread (see the wire module).

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use clap::Parser;
use log::{info, warn};

use rsnic_emu::backend::{self, Backend};
use rsnic_emu::card::Card;
use rsnic_emu::command::{AdminFaultOnly, CaptureTarget, Command, LinkState, VfPortAction};
use rsnic_emu::control::{self, Fault, Faults};
use rsnic_emu::foreign_port::ForeignPort;
use rsnic_emu::function::{Function, FW_VERSION};
use rsnic_emu::hw;
use rsnic_emu::queues::QpStats;
use rsnic_emu::rdma;
use rsnic_emu::wire::{RecvBatch, Sink, Wire};

/// Most frames the wire's receive thread takes in one call and hands the
/// card before the card announces them (RX streams publish once per
/// batch).
const RX_BATCH: usize = 64;

/// Command line of the emulator.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// vfio-user socket of the physical function (created; must not exist).
    #[arg(long)]
    pf_socket: PathBuf,
    /// vfio-user socket of the virtual function (created; QEMU may plug
    /// and unplug it any number of times).
    #[arg(long)]
    vf_socket: Option<PathBuf>,
    /// Control socket for the harness (created; must not exist).
    #[arg(long)]
    ctl_socket: Option<PathBuf>,
    /// This card's end of the wire (a UNIX datagram socket, created).
    #[arg(long, requires = "wire_peer")]
    wire_socket: Option<PathBuf>,
    /// The peer card's end of the wire.
    #[arg(long, requires = "wire_socket")]
    wire_peer: Option<PathBuf>,
    /// Card identifier, reported in the CARD_ID register.
    #[arg(long, default_value_t = 0)]
    card_id: u32,
    /// Permanent MAC address of the card, aa:bb:cc:dd:ee:ff.
    #[arg(long, default_value = "02:52:53:00:00:01", value_parser = parse_mac)]
    mac: [u8; 6],
    /// Fault active from the start (see `fault` on the control socket).
    #[arg(long, default_value = "none")]
    fault: String,
    /// How long the card keeps polling the doorbell page for TX tails
    /// after the last one moved, in microseconds, before it asks the
    /// driver to ring again (0: only while a batch is being sent).
    #[arg(long, default_value_t = 15)]
    doorbell_poll_us: u64,
    /// How long the card holds received TCP segments for coalescing
    /// (hardware GRO) when nothing closes their aggregate, in
    /// microseconds.
    #[arg(long, default_value_t = rsnic_emu::nic::DEFAULT_GRO_HOLD.as_micros() as u64)]
    gro_hold_us: u64,
    /// vfio-user socket of the physical function of a second card served
    /// by this process, at the other end of the wire (its end is
    /// `--wire-peer`).
    #[arg(long, requires_all = ["wire_socket", "peer_ctl_socket"])]
    peer_pf_socket: Option<PathBuf>,
    /// The second card's VF socket.
    #[arg(long, requires = "peer_pf_socket")]
    peer_vf_socket: Option<PathBuf>,
    /// The second card's control socket.
    #[arg(long, requires = "peer_pf_socket")]
    peer_ctl_socket: Option<PathBuf>,
    /// The second card's identifier.
    #[arg(long, default_value_t = 1)]
    peer_card_id: u32,
    /// The second card's permanent MAC address.
    #[arg(long, default_value = "02:52:53:00:00:02", value_parser = parse_mac)]
    peer_mac: [u8; 6],
    /// Offer QEMU the device memory's shared file to map into the guest
    /// (a sparse mmap area of the user doorbell BAR), so the host's loads
    /// and stores reach it without a message. Off by default: with it,
    /// pktgen's one-frame bursts ran at 4667-8617 frames/s instead of
    /// 28161 (tx_batching.sh, QEMU 11.1, 2026-12-07), for reasons not yet
    /// known; without it each access is a trapped message.
    #[arg(long)]
    dm_mmap: bool,
}

/// What `main` fails with.
type MainError = Box<dyn std::error::Error>;

/// A card started, and its end of the wire if it has one.
type Started = (Arc<Card>, Option<Arc<Wire>>);

/// What makes one card: its sockets and identity.
struct CardSpec {
    pf_socket: PathBuf,
    vf_socket: Option<PathBuf>,
    ctl_socket: Option<PathBuf>,
    card_id: u32,
    mac: [u8; 6],
    fault: String,
    /// Whether QEMU may map the device memory (`--dm-mmap`).
    dm_mmap: bool,
}

fn parse_mac(s: &str) -> Result<[u8; 6], String> {
    let mut mac = [0u8; 6];
    let parts: Vec<&str> = s.split(':').collect();
    if parts.len() != 6 {
        return Err(format!("'{s}' is not a MAC address"));
    }
    for (byte, part) in mac.iter_mut().zip(parts) {
        *byte = u8::from_str_radix(part, 16).map_err(|e| format!("'{s}': {e}"))?;
    }
    Ok(mac)
}

/// Carries out one harness command line; the reply line.
fn card_command(card: &Arc<Card>, faults: &Faults, wire: Option<&Wire>, line: &str) -> String {
    match Command::parse_line(line) {
        Ok(command) => run(card, faults, wire, command),
        Err(e) => format!("error: {e}"),
    }
}

/// Carries out `command`; the reply line.
fn run(card: &Arc<Card>, faults: &Faults, wire: Option<&Wire>, command: Command) -> String {
    let no_wire = || "error: no wire".to_string();
    match command {
        Command::Fault { name } => match faults.set_by_name(&name) {
            Ok(()) => {
                info!("fault injection: {name}");
                "ok".into()
            }
            Err(e) => format!("error: {e}"),
        },
        Command::Status => format!("ok fault={}", faults.active().name()),
        Command::Link { state } => {
            card.set_link(state == LinkState::Up);
            "ok".into()
        }
        Command::GroHold { us } => {
            card.set_gro_hold(Duration::from_micros(u64::from(us)));
            "ok".into()
        }
        Command::Identity => {
            let id = *card.lock_pf().identity();
            format!(
                "ok card_id={:08x} hw_version={}.{} fw_version={}.{}.{}",
                id.card_id,
                hw::HW_VERSION >> 16,
                hw::HW_VERSION & 0xffff,
                FW_VERSION >> 16,
                (FW_VERSION >> 8) & 0xff,
                FW_VERSION & 0xff
            )
        }
        Command::GftFlows => format!("ok {}", card.lock_gft().describe_flows(Instant::now())),
        Command::GftStats => format!("ok {}", card.lock_gft().describe_stats()),
        Command::RdmaGids => format!("ok {}", card.lock_rdma().describe_gids()),
        Command::RdmaCaps => format!("ok {}", rdma::describe_caps()),
        Command::RdmaState => format!("ok {}", card.lock_rdma().describe_state()),
        Command::XdpState => format!("ok {}", card.xdp().describe()),
        Command::StallTx => format!("ok stalled={}", card.lock_pf().nic.stall_tx()),
        Command::CqeFault { kind, n, persist } => {
            let pairs = card
                .lock_pf()
                .nic
                .fault_completions(kind, n, persist.is_some());
            format!("ok pairs={pairs}")
        }
        Command::IrqDrop { n } => {
            card.lock_pf().drop_irqs(n);
            "ok".into()
        }
        Command::AdminFault { kind, n, only } => {
            let create_qp_only = only == Some(AdminFaultOnly::CreateQp);
            card.lock_pf().nic.fault_admin(kind, n, create_qp_only);
            "ok".into()
        }
        Command::DmaDelay { us } => {
            let delay = Duration::from_micros(u64::from(us));
            card.lock_pf().set_dma_delay(delay);
            card.lock_vf().set_dma_delay(delay);
            "ok".into()
        }
        Command::Wire { kind, per_mille } => match wire {
            Some(wire) if wire.impair(&kind, per_mille) => "ok".into(),
            Some(_) => {
                format!("error: '{kind} {per_mille}': drop, dup, reorder or corrupt, 0..=1000")
            }
            None => no_wire(),
        },
        Command::Capture { target } => match (wire, target) {
            (None, _) => no_wire(),
            (Some(wire), CaptureTarget::Stop) => match wire.capture.stop() {
                Ok(Some(frames)) => format!("ok frames={frames}"),
                Ok(None) => "error: no capture running".into(),
                Err(e) => format!("error: capture: {e}"),
            },
            (Some(wire), CaptureTarget::File(path)) => match wire.capture.start(&path) {
                Ok(()) => "ok".into(),
                Err(e) => format!("error: capture to '{}': {e}", path.display()),
            },
        },
        Command::WireStats => match wire {
            Some(wire) => {
                let s = wire.impairment_stats();
                let n = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
                format!(
                    "ok dropped={} duplicated={} reordered={} corrupted={} \
                     trains_sent={} trains_received={} bad_datagrams={} inline_batches={}",
                    s.dropped,
                    s.duplicated,
                    s.reordered,
                    s.corrupted,
                    n(&wire.trains_sent),
                    n(&wire.trains_received),
                    n(&wire.bad_datagrams),
                    n(&wire.inline_batches)
                )
            }
            None => no_wire(),
        },
        Command::RdmaFault { kind: None, .. } => {
            format!("ok {}", card.lock_rdma().faults.describe())
        }
        Command::RdmaFault {
            kind: Some(fault),
            n: Some(n),
        } => {
            card.lock_rdma().faults.arm(fault, n);
            "ok".into()
        }
        // The parser requires N with a kind.
        Command::RdmaFault { n: None, .. } => "error: rdma-fault KIND N".into(),
        Command::SpuriousIrq { n } => {
            format!("ok delivered={}", card.lock_pf().spurious_irqs(n))
        }
        Command::Datapath => {
            let vf_path = card.lock_pf().nic.datapath_vf();
            let vf_up = card.lock_vf().nic.has_running_queue();
            format!(
                "ok datapath={} vf_running={}",
                if vf_path { "vf" } else { "synthetic" },
                u8::from(vf_up)
            )
        }
        Command::VfPort {
            action: Some(VfPortAction::Attach),
            serial: Some(serial),
            local: Some(local),
            peer: Some(peer),
        } => match ForeignPort::bind(&local, &peer, serial) {
            Ok(port) => {
                card.attach_foreign(port);
                info!("foreign VF {serial} on {}", local.display());
                "ok".into()
            }
            Err(e) => format!("error: vf-port on '{}': {e}", local.display()),
        },
        Command::VfPort {
            action: Some(VfPortAction::Attach),
            ..
        } => "error: vf-port attach SERIAL LOCAL PEER".into(),
        Command::VfPort {
            action: Some(action @ (VfPortAction::Detach | VfPortAction::Cut)),
            ..
        } => {
            let done = if action == VfPortAction::Detach {
                card.detach_foreign()
            } else {
                card.cut_foreign()
            };
            if done {
                "ok".into()
            } else {
                "error: no foreign VF attached".into()
            }
        }
        Command::VfPort { action: None, .. } => match card.describe_foreign() {
            Some(d) => format!("ok {d}"),
            None => "ok none".into(),
        },
        Command::Stats => function_stats(&card.lock_pf()),
        Command::VfStats => function_stats(&card.lock_vf()),
    }
}

/// A function's own counters, as `ok key=value ...`.
fn function_stats(func: &Function) -> String {
    let n = func.nic.stats;
    let mut out = format!(
        "ok link={} admin_cmds={} admin_tails_polled={} rx_filtered={} rx_no_queue={} tx_link_down={} tx_oversize={} \
         tso_frames={} tso_segments={} tx_bad_tso={} tso_tunnel_frames={} uso_frames={} uso_segments={} tx_bad_uso={} rx_fcs_errors={} irqs_dropped={} \
         dma_delayed={} admin_faults_injected={}",
        u8::from(func.nic.link_up()),
        n.admin_cmds,
        n.admin_tails_polled,
        n.rx_filtered,
        n.rx_no_queue,
        n.tx_link_down,
        n.tx_oversize,
        n.tso_frames,
        n.tso_segments,
        n.tx_bad_tso,
        n.tso_tunnel_frames,
        n.uso_frames,
        n.uso_segments,
        n.tx_bad_uso,
        n.rx_fcs_errors,
        func.irqs_dropped,
        func.dma_delayed,
        n.admin_faults_injected
    );
    let (mut meta, mut payload, mut packets, mut doorbells, mut irqs) = (0, 0, 0, 0, 0);
    for q in func.nic.queue_pairs() {
        meta += q.stats.dma_meta_bytes;
        doorbells += q.stats.doorbells;
        irqs += q.stats.irqs;
        payload += q.stats.tx_bytes + q.stats.rx_bytes;
        packets += q.stats.wire_packets();
    }
    // Faults injected into pairs since destroyed count too.
    let mut all = QpStats::default();
    for s in (0..usize::from(hw::MAX_QUEUE_PAIRS)).filter_map(|qp| func.nic.qp_stats(qp)) {
        all.add(&s);
    }
    let streaming = func.nic.queue_pairs().filter(|q| q.streaming()).count();
    out += &format!(
        " dma_meta_bytes={meta} dma_payload_bytes={payload} packets={packets} \
         doorbells={doorbells} irqs={irqs} \
         cqe_faults_injected={} streaming_pairs={streaming} stream_notifications={} \
         rx_no_buffer={} gro_frames={} gro_segments={} hds_frames={} hds_drops={}",
        all.faults_injected,
        all.stream_notifications,
        all.rx_no_buffer,
        all.gro_frames,
        all.gro_segments,
        all.hds_frames,
        all.hds_drops
    );
    for (i, q) in func.nic.queue_pairs().enumerate() {
        let s = q.stats;
        out += &format!(
            " q{i}_tx_packets={} q{i}_tx_doorbells={} q{i}_tx_tails_polled={} q{i}_rx_packets={} \
             q{i}_rx_doorbells={} q{i}_cq_doorbells={} q{i}_rx_tails_in_page={} \
             q{i}_cq_words_in_page={} \
             q{i}_rx_no_buffer={} \
             q{i}_bad_requests={} q{i}_irqs={} q{i}_irqs_moderated={} q{i}_stream={} \
             q{i}_stream_notifications={}",
            s.tx_packets,
            s.tx_doorbells,
            s.tx_tails_polled,
            s.rx_packets,
            s.rx_doorbells,
            s.cq_doorbells,
            s.rx_tails_in_page,
            s.cq_words_in_page,
            s.rx_no_buffer,
            s.bad_requests,
            s.irqs,
            s.irqs_moderated,
            u8::from(q.streaming()),
            s.stream_notifications
        );
    }
    out
}

/// Keeps memory the card frees in its heaps. glibc gives the top of a
/// thread's heap back to the kernel once more than `M_TRIM_THRESHOLD`
/// (128 KiB) of it is free, and the card frees a TSO frame of up to 64
/// KiB after each send: the next frame then faulted its pages in again
/// (page faults and their zeroing were 15% of the TX thread's samples
/// under one TCP stream, testing.rst). The card's heaps stay at what its
/// batches need (a few MiB).
fn keep_freed_memory() {
    const KEEP: libc::c_int = 64 << 20;
    // SAFETY: mallopt only sets allocator parameters; it is called
    // before any other thread exists.
    let ok = unsafe { libc::mallopt(libc::M_TRIM_THRESHOLD, KEEP) };
    if ok != 1 {
        log::warn!("mallopt(M_TRIM_THRESHOLD) refused: freed memory goes back to the kernel");
    }
}

fn main() -> Result<(), MainError> {
    keep_freed_memory();
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let args = Args::parse();
    let poll = Duration::from_micros(args.doorbell_poll_us);
    let gro_hold = Duration::from_micros(args.gro_hold_us);
    let first = CardSpec {
        pf_socket: args.pf_socket,
        vf_socket: args.vf_socket,
        ctl_socket: args.ctl_socket,
        card_id: args.card_id,
        mac: args.mac,
        fault: args.fault,
        dm_mmap: args.dm_mmap,
    };
    let ends = args.wire_socket.zip(args.wire_peer);
    let (card, wire) = start_card(&first, ends.clone(), gro_hold, poll)?;
    if let Some(pf_socket) = args.peer_pf_socket {
        let second = CardSpec {
            pf_socket,
            vf_socket: args.peer_vf_socket,
            ctl_socket: args.peer_ctl_socket,
            card_id: args.peer_card_id,
            mac: args.peer_mac,
            fault: "none".into(),
            dm_mmap: args.dm_mmap,
        };
        let back = ends.map(|(local, peer)| (peer, local));
        let (peer_card, peer_wire) = start_card(&second, back, gro_hold, poll)?;
        if let (Some(a), Some(b)) = (&wire, &peer_wire) {
            let (card_sink, peer_sink): (Weak<dyn Sink>, Weak<dyn Sink>) =
                (Arc::downgrade(&card) as _, Arc::downgrade(&peer_card) as _);
            Wire::join(a, card_sink, b, peer_sink);
            info!(
                "cards {} and {} cabled in process",
                first.card_id, second.card_id
            );
        }
        // QEMU holds both PFs: the process ends with the first that
        // disconnects.
        std::thread::spawn(move || {
            if let Err(e) = serve_pf(&peer_card, &second, poll) {
                warn!("card {} PF: {e}", second.card_id);
            }
            std::process::exit(0);
        });
    }
    serve_pf(&card, &first, poll)
}

/// Builds a card from `spec`: its wire (this end and the peer's socket
/// paths, with the thread that receives), its control socket and its VF
/// server; the PF is served by [`serve_pf`].
fn start_card(
    spec: &CardSpec,
    ends: Option<(PathBuf, PathBuf)>,
    gro_hold: Duration,
    poll: Duration,
) -> Result<Started, MainError> {
    let faults = Arc::new(Faults::default());
    faults.set_by_name(&spec.fault)?;
    let card = Card::new(spec.card_id, spec.mac, Arc::clone(&faults));
    card.set_gro_hold(gro_hold);

    let wire = match ends {
        Some((local, peer)) => {
            let wire = Arc::new(Wire::bind(&local, &peer)?);
            card.attach_wire(Arc::clone(&wire));
            card.set_link(true);
            let (rx_wire, rx_card) = (Arc::clone(&wire), Arc::clone(&card));
            std::thread::spawn(move || {
                let mut batch = RecvBatch::new(RX_BATCH);
                loop {
                    // A batch: the first frame waited for, then those
                    // already queued, up to a limit, in one call; RX
                    // streams announce the whole batch at once.
                    if let Err(e) = rx_wire.recv_batch(&mut batch) {
                        warn!("wire receive: {e}");
                        return;
                    }
                    for (carried, fcs_ok) in batch.frames() {
                        Sink::receive(&*rx_card, carried, fcs_ok);
                    }
                    rx_card.end_of_batch();
                }
            });
            Some(wire)
        }
        None => None,
    };

    if let Some(path) = &spec.ctl_socket {
        let (faults, ctl_card, ctl_wire) = (Arc::clone(&faults), Arc::clone(&card), wire.clone());
        control::spawn(
            path,
            Arc::new(move |line: &str| {
                let was_gone = faults.is(Fault::Gone);
                let reply = card_command(&ctl_card, &faults, ctl_wire.as_deref(), line);
                if was_gone && !faults.is(Fault::Gone) {
                    info!("card is back, from power-on state");
                    ctl_card.power_cycle();
                }
                reply
            }),
        )?;
    }

    if let Some(path) = &spec.vf_socket {
        let vf_server = vfio_user::Server::new(
            path,
            true,
            backend::irq_infos(hw::VF_MSIX_VECTORS),
            backend::region_infos(None),
        )?;
        info!("card {} VF listening on {}", spec.card_id, path.display());
        let vf_card = Arc::clone(&card);
        std::thread::spawn(move || {
            let mut backend = Backend::new(Arc::clone(vf_card.vf()), Arc::clone(&vf_card), poll);
            // One QEMU session per hot-plug; the socket stays for the next.
            loop {
                if let Err(e) = vf_server.run(&mut backend) {
                    warn!("VF session: {e}");
                }
                info!("VF unplugged");
                vf_card.vf_disconnected();
            }
        });
    }
    Ok((card, wire))
}

/// Serves `card`'s PF until QEMU disconnects.
fn serve_pf(card: &Arc<Card>, spec: &CardSpec, poll: Duration) -> Result<(), MainError> {
    let server = vfio_user::Server::new(
        &spec.pf_socket,
        true,
        backend::irq_infos(hw::PF_MSIX_VECTORS),
        backend::region_infos(
            card.device_memory()
                .filter(|_| spec.dm_mmap)
                .map(|dm| dm.fd()),
        ),
    )?;
    info!(
        "card {} PF listening on {}",
        spec.card_id,
        spec.pf_socket.display()
    );
    let mut backend = Backend::new(Arc::clone(card.pf()), Arc::clone(card), poll);
    server.run(&mut backend)?;
    info!("card {} PF: QEMU disconnected, exiting", spec.card_id);
    Ok(())
}
