// SPDX-License-Identifier: GPL-2.0

//! One card: its PF, its VF (served while QEMU has it plugged in), the GFT
//! every packet crosses between them and the wire, and the data-path
//! switch that decides which function receives.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock, Weak};
use std::time::{Duration, Instant};

use crate::clock::CardClock;
use crate::control::Faults;
use crate::device_memory::DeviceMemory;
use crate::foreign_port::{self, ForeignPort};
use crate::function::{Function, Identity};
use crate::gft::{Gft, Output};
use crate::hw::gft::Direction;
use crate::hw::gft_rule::port;
use crate::hw::{self, FuncKind};
use crate::nic::Outgoing;
use crate::rdma::RdmaEngine;
use crate::train::{TcpTrain, TrainShape};
use crate::wire::{Carried, Datagram, Sink, Wait, Wire};
use crate::xdp::offload::{Verdict, XdpOffload};

/// Where a frame the card handles goes next: as the GFT decided, or (a
/// train while the GFT is off) whole onto the wire.
enum Onward {
    Gft(Output),
    WireTrain(Vec<u8>, TrainShape),
}

/// The card's functions, its GFT and its RDMA engine. Each has its own
/// lock; the PF's may be held while the GFT's or the RDMA engine's is
/// taken (admin commands), no other two at once.
pub struct Card {
    pf: Arc<Mutex<Function>>,
    vf: Arc<Mutex<Function>>,
    gft: Arc<Mutex<Gft>>,
    /// The offloaded XDP program, run first on what the wire brings.
    xdp: Arc<XdpOffload>,
    rdma: Arc<Mutex<RdmaEngine>>,
    /// The device memory RDMA reaches (the PF's BAR shows it).
    dm: Option<Arc<DeviceMemory>>,
    wire: Arc<OnceLock<Arc<Wire>>>,
    /// The port of a foreign VF, while the harness has one attached.
    foreign: RwLock<Option<Arc<ForeignPort>>>,
    /// Batches of frames taken from the wire, ever (the doorbell page's
    /// poll asks whether the card is receiving).
    rx_batches: AtomicU64,
}

fn lock(f: &Mutex<Function>) -> MutexGuard<'_, Function> {
    f.lock().unwrap_or_else(|e| e.into_inner())
}

impl Card {
    /// A card with permanent address `mac`; its VF has the same address
    /// and card ID. `faults` applies to the PF.
    pub fn new(card_id: u32, mac: [u8; 6], faults: Arc<Faults>) -> Arc<Self> {
        let pf = Identity {
            kind: FuncKind::Pf,
            card_id,
            mac,
            vectors: hw::PF_MSIX_VECTORS,
        };
        let vf = Identity {
            kind: FuncKind::Vf,
            vectors: hw::VF_MSIX_VECTORS,
            ..pf
        };
        let gft = Arc::new(Mutex::new(Gft::default()));
        let clock = Arc::new(CardClock::default());
        let mut pf = Function::new(pf, faults);
        pf.nic.set_clock(Arc::clone(&clock));
        let mut vf = Function::new(vf, Arc::new(Faults::default()));
        vf.nic.set_clock(Arc::clone(&clock));
        pf.nic.set_gft(Arc::clone(&gft));
        let xdp = Arc::new(XdpOffload::default());
        pf.nic.set_xdp(Arc::clone(&xdp));
        let mut engine = RdmaEngine::default();
        engine.set_clock(clock);
        // Without a memory file (none to be had) the card offers no
        // device memory.
        let dm = match DeviceMemory::new() {
            Ok(dm) => Some(Arc::new(dm)),
            Err(e) => {
                log::warn!("no device memory: {e}");
                None
            }
        };
        if let Some(dm) = &dm {
            engine.set_device_memory(Arc::clone(dm));
        }
        let rdma = Arc::new(Mutex::new(engine));
        pf.nic.set_rdma(Arc::clone(&rdma));
        Arc::new_cyclic(|me| {
            let card = Self {
                pf: Arc::new(Mutex::new(pf)),
                vf: Arc::new(Mutex::new(vf)),
                gft,
                xdp,
                rdma,
                dm,
                wire: Arc::new(OnceLock::new()),
                foreign: RwLock::new(None),
                rx_batches: AtomicU64::new(0),
            };
            for f in [&card.pf, &card.vf] {
                spawn_function_timer(f, me.clone());
            }
            spawn_rdma_timer(&card.pf, &card.wire);
            card
        })
    }

    /// The physical function.
    pub fn pf(&self) -> &Arc<Mutex<Function>> {
        &self.pf
    }

    /// The virtual function.
    pub fn vf(&self) -> &Arc<Mutex<Function>> {
        &self.vf
    }

    /// The physical function, locked.
    pub fn lock_pf(&self) -> MutexGuard<'_, Function> {
        lock(&self.pf)
    }

    /// The virtual function, locked.
    pub fn lock_vf(&self) -> MutexGuard<'_, Function> {
        lock(&self.vf)
    }

    /// Cables the card: frames it sends go to `wire`.
    pub fn attach_wire(&self, wire: Arc<Wire>) {
        let _ = self.wire.set(wire);
    }

    /// The GFT engine, locked.
    pub fn lock_gft(&self) -> MutexGuard<'_, Gft> {
        self.gft.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The device memory, which the PF's BAR shows the host.
    pub fn device_memory(&self) -> Option<&Arc<DeviceMemory>> {
        self.dm.as_ref()
    }

    /// The RDMA engine, locked.
    pub fn lock_rdma(&self) -> MutexGuard<'_, RdmaEngine> {
        self.rdma.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How long the functions hold received segments for coalescing.
    pub fn set_gro_hold(&self, hold: std::time::Duration) {
        lock(&self.pf).nic.set_gro_hold(hold);
        lock(&self.vf).nic.set_gro_hold(hold);
    }

    /// Frames the host sent through the function on switch port `from`
    /// ([`port`]: the PF, the VF, a VF of another make): through the
    /// GFT, then on their way.
    pub fn transmit(&self, from: u16, frames: Vec<Outgoing>) {
        if frames.is_empty() {
            return;
        }
        let now = Instant::now();
        let (rdma, frames): (Vec<Outgoing>, Vec<Outgoing>) =
            frames.into_iter().partition(|o| o.rdma);
        if let Some(wire) = self.wire.get() {
            for o in rdma {
                wire.send(&o.frame, Wait::Yes);
            }
        }
        let outputs: Vec<Onward> = {
            let mut gft = self.lock_gft();
            // Switchdev: the PF is the wire's representor, its frames go
            // out as they are; a VF's are switched by the rules.
            let switched = gft.switchdev() && from != port::PF;
            let straight = gft.switchdev() && from == port::PF;
            let mut outputs = Vec::with_capacity(frames.len());
            let run = |gft: &mut Gft, frame: Vec<u8>, outputs: &mut Vec<Onward>| {
                if switched {
                    outputs.extend(gft.switch(frame, from, now).map(Onward::Gft));
                } else {
                    let out = gft.process_from(frame, from, now);
                    outputs.extend(out.into_iter().map(Onward::Gft));
                }
            };
            for o in frames {
                match o.train {
                    // The GFT looks at frames one by one: cut first.
                    Some(shape) if !straight && (switched || gft.enabled()) => {
                        if let Some(train) = TcpTrain::new(&o.frame, shape) {
                            for seg in train.segments() {
                                run(&mut gft, seg, &mut outputs);
                            }
                        }
                    }
                    Some(shape) => outputs.push(Onward::WireTrain(o.frame, shape)),
                    None if o.reinject => {
                        outputs.extend(gft.reinject(&o.frame).map(Onward::Gft));
                    }
                    None if straight => outputs.push(Onward::Gft(Output::Wire(o.frame))),
                    None => run(&mut gft, o.frame, &mut outputs),
                }
            }
            outputs
        };
        let to_host = outputs.iter().any(|o| {
            matches!(
                o,
                Onward::Gft(Output::Host(_) | Output::Exception(_) | Output::Vf(_))
            )
        });
        self.dispatch(outputs, Wait::Yes);
        // Not the wire's receive thread: what went to a host is a batch
        // of its own.
        if to_host {
            self.end_of_batch();
        }
    }

    /// Sends what the GFT decided where it goes (`wait`: whether this
    /// thread may wait for room on the wire).
    fn dispatch(&self, outputs: Vec<Onward>, wait: Wait) {
        // Frames for the wire go out together, up to the next frame for a
        // host (which must not overtake them, nor they it).
        let mut wire_run: Vec<(Vec<u8>, Option<TrainShape>)> = Vec::new();
        for out in outputs {
            match out {
                Onward::Gft(Output::Wire(frame)) => wire_run.push((frame, None)),
                Onward::WireTrain(frame, shape) => wire_run.push((frame, Some(shape))),
                Onward::Gft(Output::Host(frame)) => {
                    self.send_run(&mut wire_run, wait);
                    self.deliver(&frame, true);
                }
                Onward::Gft(Output::Exception(data)) => {
                    self.send_run(&mut wire_run, wait);
                    lock(&self.pf).deliver_exception(&data);
                }
                Onward::Gft(Output::Vf(frame)) => {
                    self.send_run(&mut wire_run, wait);
                    // A VF not plugged in or not up: as a switch port
                    // with no link, the frame is lost.
                    let mut vf = lock(&self.vf);
                    if vf.nic.has_running_queue() {
                        vf.receive(&frame, true);
                    }
                }
            }
        }
        self.send_run(&mut wire_run, wait);
    }

    /// Sends the frames and trains of `run` to the wire in one batch and
    /// empties it.
    fn send_run(&self, run: &mut Vec<(Vec<u8>, Option<TrainShape>)>, wait: Wait) {
        if run.is_empty() {
            return;
        }
        if let Some(wire) = self.wire.get() {
            let datagrams: Vec<Datagram<'_>> = run
                .iter()
                .map(|(frame, train)| Datagram {
                    frame,
                    train: *train,
                })
                .collect();
            wire.send_batch(&datagrams, wait);
        }
        run.clear();
    }

    /// A frame arrived from the wire (`fcs_ok`: undamaged): through the
    /// GFT (a damaged frame cannot be parsed and goes straight to the host,
    /// flagged), then to the host.
    pub fn receive(&self, frame: &[u8], fcs_ok: bool) {
        // The offloaded XDP program sees every undamaged frame first.
        if fcs_ok && self.xdp.is_on() {
            match self.xdp.run(frame) {
                Verdict::Pass(frame) => return self.receive_after_xdp(&frame, fcs_ok),
                Verdict::Drop => return,
                Verdict::Tx(frame) => {
                    if let Some(wire) = self.wire.get() {
                        wire.send(&frame, Wait::No);
                    }
                    return;
                }
            }
        }
        self.receive_after_xdp(frame, fcs_ok);
    }

    /// The card's XDP offload.
    pub fn xdp(&self) -> &XdpOffload {
        &self.xdp
    }

    /// A frame from the wire the XDP program passed (or none ran).
    fn receive_after_xdp(&self, frame: &[u8], fcs_ok: bool) {
        // RoCEv2 for this card goes to its RDMA engine, not through the
        // GFT to the host.
        if fcs_ok && crate::rdma::packet::may_be_roce(frame) {
            let replies = lock(&self.pf).rdma_receive(frame);
            if let Some(replies) = replies {
                if let Some(wire) = self.wire.get() {
                    for f in replies {
                        wire.send(&f, Wait::No);
                    }
                }
                return;
            }
        }
        let outputs = {
            let mut gft = self.lock_gft();
            if fcs_ok && gft.switchdev() {
                gft.switch(frame.to_vec(), port::UPLINK, Instant::now())
                    .into_iter()
                    .collect()
            } else if fcs_ok && gft.enabled() {
                gft.process(frame.to_vec(), Direction::Rx, Instant::now())
            } else {
                drop(gft);
                self.deliver(frame, fcs_ok);
                return;
            }
        };
        self.dispatch(outputs.into_iter().map(Onward::Gft).collect(), Wait::No);
    }

    /// A train arrived from the wire (`fcs_ok`: undamaged): delivered as
    /// its segments, coalesced where the queue pair does; cut into them
    /// first if it is damaged or the GFT is on (it looks at each).
    pub fn receive_train(&self, train: &TcpTrain<'_>, fcs_ok: bool) {
        if !fcs_ok || self.xdp.is_on() || {
            let gft = self.lock_gft();
            gft.enabled() || gft.switchdev()
        } {
            for seg in train.segments() {
                self.receive(&seg, fcs_ok);
            }
            return;
        }
        let mut pf = lock(&self.pf);
        if pf.nic.datapath_vf() {
            drop(pf);
            if self.foreign_port().is_some() {
                for seg in train.segments() {
                    self.deliver(&seg, true);
                }
                return;
            }
            let mut vf = lock(&self.vf);
            if vf.nic.has_running_queue() {
                vf.receive_train(train);
                return;
            }
            drop(vf);
            pf = lock(&self.pf);
        }
        pf.receive_train(train);
    }

    /// A frame for the host. It goes to the VF while the PF's data path
    /// says so and the VF can take it (a foreign VF's port is attached
    /// and has not failed, or the card's own VF runs a queue pair);
    /// otherwise (VF not switched to, not plugged in, or not up) to the
    /// PF. A damaged frame never goes to a foreign VF, which could not
    /// tell.
    fn deliver(&self, frame: &[u8], fcs_ok: bool) {
        let mut pf = lock(&self.pf);
        if pf.nic.datapath_vf() {
            drop(pf);
            if let Some(port) = self.foreign_port() {
                if fcs_ok && port.deliver(frame) {
                    return;
                }
                if port.failed() {
                    // The VF's port failed: withdraw it, so the driver
                    // switches back and stops sending through it.
                    self.lock_pf().set_vf_association(None);
                }
            }
            let mut vf = lock(&self.vf);
            if vf.nic.has_running_queue() {
                vf.receive(frame, fcs_ok);
                return;
            }
            drop(vf);
            pf = lock(&self.pf);
        }
        pf.receive(frame, fcs_ok);
    }

    /// End of a batch of frames for the hosts (the wire had no more
    /// waiting, or the batch reached its limit): RX streams publish.
    pub fn end_of_batch(&self) {
        lock(&self.pf).end_of_batch();
        lock(&self.vf).end_of_batch();
        self.rx_batches.fetch_add(1, Ordering::Relaxed);
    }

    /// Batches of frames the card has taken from the wire so far.
    pub fn rx_batches(&self) -> u64 {
        self.rx_batches.load(Ordering::Relaxed)
    }

    /// Plugs or unplugs the cable: both functions share the uplink.
    pub fn set_link(&self, up: bool) {
        lock(&self.pf).set_link(up);
        lock(&self.vf).set_link(up);
    }

    /// The card was put back after being gone: both functions start from
    /// their power-on register state (QEMU's DMA mappings and interrupt
    /// wiring stay).
    pub fn power_cycle(&self) {
        lock(&self.pf).reset();
        lock(&self.vf).reset();
    }

    /// The foreign VF's port, if one is attached and has not failed.
    fn foreign_port(&self) -> Option<Arc<ForeignPort>> {
        let port = self.foreign.read().unwrap_or_else(|e| e.into_inner());
        port.as_ref().filter(|p| !p.failed()).cloned()
    }

    /// Attaches a foreign VF's port and offers the VF to the PF; frames
    /// the VF sends go out as the host's. Replaces a port attached before.
    pub fn attach_foreign(self: &Arc<Self>, port: ForeignPort) {
        let port = Arc::new(port);
        let serial = port.serial();
        let old = self
            .foreign
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .replace(Arc::clone(&port));
        if let Some(old) = old {
            old.shutdown();
        }
        let card = Arc::downgrade(self);
        std::thread::spawn(move || {
            let mut buf = vec![0u8; foreign_port::MAX_FRAME];
            while let Ok(n) = port.recv(&mut buf) {
                let Some(card) = card.upgrade() else {
                    return;
                };
                card.transmit(
                    port::FOREIGN_VF,
                    vec![Outgoing {
                        frame: buf[..n].to_vec(),
                        reinject: false,
                        rdma: false,
                        train: None,
                    }],
                );
            }
        });
        self.lock_pf().set_vf_association(Some(serial));
    }

    /// Breaks the foreign VF's port towards QEMU (fault injection): the
    /// next delivery fails and takes the usual way back to synthetic.
    pub fn cut_foreign(&self) -> bool {
        let port = self.foreign.read().unwrap_or_else(|e| e.into_inner());
        port.as_ref().inspect(|p| p.cut()).is_some()
    }

    /// Withdraws the foreign VF (the host unplugged it): the PF hears at
    /// once and the card delivers on the synthetic path.
    pub fn detach_foreign(&self) -> bool {
        let old = self
            .foreign
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        self.lock_pf().set_vf_association(None);
        old.inspect(|p| p.shutdown()).is_some()
    }

    /// What the foreign VF's port did, or `None` without one.
    pub fn describe_foreign(&self) -> Option<String> {
        let port = self.foreign.read().unwrap_or_else(|e| e.into_inner());
        port.as_ref().map(|p| p.describe())
    }

    /// QEMU unplugged the VF: it returns to power-on state, so the data
    /// path falls back to the PF at once.
    pub fn vf_disconnected(&self) {
        lock(&self.vf).disconnected();
    }
}

/// Starts the thread that runs the RDMA engine's timers (retransmission,
/// RNR waits) and sends what they produce.
fn spawn_rdma_timer(pf: &Arc<Mutex<Function>>, wire: &Arc<OnceLock<Arc<Wire>>>) {
    /// How often an idle engine is looked at.
    const IDLE: Duration = Duration::from_millis(20);
    let pf = Arc::clone(pf);
    let wire = Arc::clone(wire);
    std::thread::spawn(move || loop {
        let (frames, next) = lock(&pf).rdma_tick(Instant::now());
        if let Some(wire) = wire.get() {
            for f in frames {
                wire.send(&f, Wait::No);
            }
        }
        let wait = next.map_or(IDLE, |t| t.saturating_duration_since(Instant::now()));
        std::thread::sleep(wait.clamp(Duration::from_millis(1), IDLE));
    });
}

/// Starts the thread that runs `func`'s timer (moderated interrupts,
/// coalescing, TX shaping) when something falls due, and passes on what
/// the shapers let go through `card`; it sleeps until the function wakes
/// it.
fn spawn_function_timer(func: &Arc<Mutex<Function>>, card: Weak<Card>) {
    let timer_func = Arc::clone(func);
    let timer = std::thread::spawn(move || loop {
        let (next, frames, from) = {
            let mut func = lock(&timer_func);
            let (next, frames) = func.tick(Instant::now());
            (next, frames, func.switch_port())
        };
        if !frames.is_empty() {
            let Some(card) = card.upgrade() else {
                return;
            };
            card.transmit(from, frames);
        }
        match next {
            Some(due) => std::thread::park_timeout(due.saturating_duration_since(Instant::now())),
            None => std::thread::park(),
        }
    });
    lock(func).set_moderation_timer(timer.thread().clone());
}

/// A peer card in this process delivers straight into this one.
impl Sink for Card {
    fn receive(&self, carried: Carried<'_>, fcs_ok: bool) {
        match carried {
            Carried::Frame(frame) => Card::receive(self, frame, fcs_ok),
            Carried::Train(train) => self.receive_train(&train, fcs_ok),
        }
    }

    fn end_of_batch(&self) {
        Card::end_of_batch(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::register::Register as _;
    use crate::hw::{AdminStatus, AQ_ENTRY_SIZE};
    use crate::nic::Effects;
    use std::os::unix::net::UnixDatagram;

    const MAC: [u8; 6] = [2, 0x52, 0x53, 0, 0, 9];

    fn frame_to(mac: [u8; 6], tag: u8) -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[..6].copy_from_slice(&mac);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 0xee]);
        f[12..14].copy_from_slice(&[0x88, 0xb5]);
        f[14] = tag;
        f
    }

    #[test]
    fn the_switched_data_path_goes_to_a_foreign_vf_until_its_port_fails() {
        let dir = std::env::temp_dir().join(format!("rsnic-card-fvf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (card_end, vf_end) = (dir.join("card"), dir.join("vf"));
        let _ = std::fs::remove_file(&vf_end);
        let vf_sock = UnixDatagram::bind(&vf_end).unwrap();
        vf_sock
            .set_read_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        let card = Card::new(9, MAC, Arc::new(Faults::default()));
        card.lock_pf().set_link(true);
        card.attach_foreign(ForeignPort::bind(&card_end, &vf_end, 5).unwrap());
        {
            let mut pf = card.lock_pf();
            let assoc = hw::VfAssoc::from_raw(pf.read_reg(hw::regs::VF_ASSOC));
            assert!(assoc.present());
            assert_eq!(pf.read_reg(hw::regs::VF_SERIAL), 5);
        }
        // Synthetic path: the VF sees nothing.
        card.receive(&frame_to(MAC, 1), true);
        let mut buf = [0u8; 128];
        vf_sock.set_nonblocking(true).unwrap();
        assert!(vf_sock.recv(&mut buf).is_err(), "not switched yet");
        vf_sock.set_nonblocking(false).unwrap();
        let (dma, _f) = crate::dma::tests::two_region_space();
        let mut e = [0u8; AQ_ENTRY_SIZE];
        let st = card.lock_pf().nic.execute(
            &dma,
            hw::AdminCmd::SetDatapath { vf: true },
            &mut e,
            &mut Effects::default(),
        );
        assert_eq!(st, AdminStatus::Ok);
        card.receive(&frame_to(MAC, 2), true);
        let n = vf_sock.recv(&mut buf).unwrap();
        assert_eq!((n, buf[14]), (60, 2), "the VF gets the frame as it was");
        // A damaged frame stays on the synthetic path.
        card.receive(&frame_to(MAC, 3), false);
        // The VF's port goes away: the card withdraws the offer.
        drop(vf_sock);
        let _ = std::fs::remove_file(&vf_end);
        card.receive(&frame_to(MAC, 4), true);
        let mut pf = card.lock_pf();
        assert_eq!(pf.read_reg(hw::regs::VF_ASSOC), 0, "offer withdrawn");
        drop(pf);
        assert!(card.describe_foreign().unwrap().contains("failed=1"));
        assert!(card.detach_foreign());
        assert!(!card_end.exists());
    }

    /// The XDP program: by the byte after the Ethernet header, 2 drops,
    /// 3 goes back out, anything else passes.
    fn xdp_by_tag() -> Vec<u8> {
        use crate::xdp::vm::Insn;
        let i = |code, dst, src, off, imm| Insn {
            code,
            dst,
            src,
            off,
            imm,
        };
        [
            i(0x61, 2, 1, 0, 0),  // r2 = data
            i(0x61, 3, 1, 4, 0),  // r3 = data_end
            i(0xbf, 4, 2, 0, 0),  // r4 = r2
            i(0x07, 4, 0, 0, 15), // r4 += 15
            i(0x2d, 4, 3, 3, 0),  // if r4 > r3 goto pass
            i(0x71, 5, 2, 14, 0), // r5 = tag
            i(0x15, 5, 0, 3, 2),  // if r5 == 2 goto drop
            i(0x15, 5, 0, 4, 3),  // if r5 == 3 goto tx
            i(0xb7, 0, 0, 0, 2),  // pass: r0 = XDP_PASS
            i(0x95, 0, 0, 0, 0),
            i(0xb7, 0, 0, 0, 1), // drop: r0 = XDP_DROP
            i(0x95, 0, 0, 0, 0),
            i(0xb7, 0, 0, 0, 3), // tx: r0 = XDP_TX
            i(0x95, 0, 0, 0, 0),
        ]
        .iter()
        .flat_map(Insn::encode)
        .collect()
    }

    #[test]
    fn an_offloaded_xdp_program_sees_what_the_wire_brings_first() {
        let dir = std::env::temp_dir().join(format!("rsnic-card-xdp-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (card_end, vf_end) = (dir.join("card"), dir.join("vf"));
        let _ = std::fs::remove_file(&vf_end);
        let vf_sock = UnixDatagram::bind(&vf_end).unwrap();
        vf_sock.set_nonblocking(true).unwrap();
        let card = Card::new(9, MAC, Arc::new(Faults::default()));
        card.lock_pf().set_link(true);
        card.attach_foreign(ForeignPort::bind(&card_end, &vf_end, 5).unwrap());
        let (dma, _f) = crate::dma::tests::two_region_space();
        let admin_entry = |cmd| {
            let mut e = [0u8; AQ_ENTRY_SIZE];
            let status = card
                .lock_pf()
                .nic
                .execute(&dma, cmd, &mut e, &mut Effects::default());
            (status, e)
        };
        let admin = |cmd| admin_entry(cmd).0;
        assert_eq!(
            admin(hw::AdminCmd::SetDatapath { vf: true }),
            AdminStatus::Ok
        );
        let prog = xdp_by_tag();
        crate::dma::HostMem::write(&dma, 0x1000, &prog).unwrap();
        let load = hw::AdminCmd::XdpLoad {
            prog: 0x1000,
            count: (prog.len() / 8) as u32,
        };
        assert_eq!(admin(load), AdminStatus::Ok);
        let got = |card: &Card, tag| {
            card.receive(&frame_to(MAC, tag), true);
            let mut buf = [0u8; 128];
            vf_sock.recv(&mut buf).ok().map(|_| buf[14])
        };
        assert_eq!(got(&card, 1), Some(1), "passed to the host");
        assert_eq!(got(&card, 2), None, "dropped on the card");
        assert_eq!(got(&card, 3), None, "sent back out, not to the host");
        let (status, entry) = admin_entry(hw::AdminCmd::XdpStats);
        assert_eq!(status, AdminStatus::Ok);
        let s = hw::XdpStatsResult::read_result(&entry);
        assert_eq!((s.pass, s.drop, s.tx, s.aborted), (1, 1, 1, 0));
        // A program past its bytes is refused; the one before keeps running.
        let bad = hw::AdminCmd::XdpLoad {
            prog: 0x1000,
            count: 3,
        };
        assert_eq!(admin(bad), AdminStatus::BadParam);
        assert_eq!(got(&card, 2), None);
        // Unloaded, or gone with a function reset: everything passes.
        assert_eq!(admin(hw::AdminCmd::XdpUnload), AdminStatus::Ok);
        assert_eq!(got(&card, 2), Some(2));
        assert_eq!(admin(load), AdminStatus::Ok);
        card.lock_pf().nic.reset();
        assert!(!card.xdp().is_on());
        assert!(card.detach_foreign());
    }
}
