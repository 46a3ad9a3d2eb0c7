// SPDX-License-Identifier: GPL-2.0

//! The card's uplink: Ethernet frames as UNIX datagrams to the card at the
//! other end of the cable.
//!
//! Each card binds its own socket and sends to its peer's path, so two
//! emulator processes (in one VM or two) form a point-to-point link. The
//! cable's plugged state is per card end; the harness unplugs both ends.
//!
//! A frame goes straight to the peer's socket from the thread that sends
//! it (the doorbell's, the receive path's), with no hand-off; only when
//! the peer's socket is full does it wait in a queue that a transmit
//! thread per end drains, in order (see [`Wait`] for who may wait for
//! room there).
//!
//! Every frame carries its Ethernet frame check sequence (CRC-32, 4 bytes
//! at the end), so damage on the way is seen by the receiving card. Fault
//! injection can impair the sending direction: drop, duplicate, reorder or
//! corrupt a share of the frames.
//!
//! A [`Capture`] on the wire records what this end sends and receives.
//!
//! Two cards served by one process are cabled in process as well
//! ([`Wire::join`]): an unimpaired batch then goes from the sending
//! thread straight into the peer card ([`Sink`]), with no socket, no
//! copy and no wake-up of the peer's receive thread. The sockets stay
//! for everything else (impaired frames, single frames, a card sending
//! while it takes a delivery, a peer in another process).
//!
//! Each datagram starts with the cable's own header ([`HEADER_LEN`]
//! bytes, not part of the frame): a frame, or a TCP train ([`TcpTrain`]:
//! a TSO frame and how it is cut). A train crosses the wire whole, as a
//! tap carries a GSO packet, while no impairment is set; its FCS covers
//! the whole. Impaired, or for a capture, it is cut into its segments.

use std::cell::Cell;
use std::io;
use std::os::fd::AsRawFd as _;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};

use crate::capture::Capture;
use crate::train::{TcpTrain, TrainShape};

/// Length of the frame check sequence.
const FCS_LEN: usize = 4;

/// Length of the header every datagram starts with: its kind, then for
/// a train its shape (MSS, TCP header offset, header length; big-endian).
pub const HEADER_LEN: usize = 8;
const KIND_FRAME: u8 = 0;
const KIND_TRAIN: u8 = 1;

/// The longest frame or train a datagram carries.
pub const MAX_FRAME: usize = 65536;

/// What a datagram sent carries: a frame, or a train of that shape.
#[derive(Clone, Copy, Debug)]
pub struct Datagram<'a> {
    /// The frame (for a train, the whole TSO frame).
    pub frame: &'a [u8],
    /// For a train, how it is cut.
    pub train: Option<TrainShape>,
}

/// What a datagram received carries.
#[derive(Clone, Copy, Debug)]
pub enum Carried<'a> {
    /// One frame.
    Frame(&'a [u8]),
    /// A train, its shape checked.
    Train(TcpTrain<'a>),
}

fn header(train: Option<TrainShape>) -> [u8; HEADER_LEN] {
    let Some(t) = train else {
        return [KIND_FRAME, 0, 0, 0, 0, 0, 0, 0];
    };
    let ([m0, m1], [l0, l1], [h0, h1]) = (
        t.mss.to_be_bytes(),
        t.l4.to_be_bytes(),
        t.hdr_len.to_be_bytes(),
    );
    [KIND_TRAIN, 0, m0, m1, l0, l1, h0, h1]
}

/// What a datagram's `bytes` (header, frame; FCS removed) carry; `None`
/// for a header this end does not know or a train that does not check.
fn carried(bytes: &[u8]) -> Option<Carried<'_>> {
    let (h, frame) = bytes.split_at_checked(HEADER_LEN)?;
    let be = |i: usize| u16::from_be_bytes([h[i], h[i + 1]]);
    match h[0] {
        KIND_FRAME => Some(Carried::Frame(frame)),
        KIND_TRAIN => {
            let shape = TrainShape {
                mss: be(2),
                l4: be(4),
                hdr_len: be(6),
            };
            TcpTrain::new(frame, shape).map(Carried::Train)
        }
        _ => None,
    }
}

/// Records a datagram (header, frame, FCS) in `capture`: a frame as it
/// is, a train as its segments.
fn record(capture: &Capture, datagram: &[u8]) {
    if !capture.is_on() {
        return;
    }
    if let Some(c) = carried(&datagram[..datagram.len().saturating_sub(FCS_LEN)]) {
        record_carried(capture, &c);
    }
}

/// Records what a datagram carries: a frame as it is, a train as its
/// segments.
fn record_carried(capture: &Capture, carried: &Carried<'_>) {
    if !capture.is_on() {
        return;
    }
    match carried {
        Carried::Frame(frame) => capture.record(frame),
        Carried::Train(train) => train.segments().for_each(|seg| capture.record(&seg)),
    }
}

/// The card behind an end of the cable, as a peer in the same process
/// delivers to it.
pub trait Sink: Send + Sync {
    /// A frame or train arrived (`fcs_ok`: undamaged).
    fn receive(&self, carried: Carried<'_>, fcs_ok: bool);
    /// The end of a batch (as after one `recvmmsg`).
    fn end_of_batch(&self);
}

/// The peer end in this process, and the card behind it.
struct InlinePeer {
    wire: Weak<Wire>,
    sink: Weak<dyn Sink>,
}

thread_local! {
    /// Set while this thread delivers into a peer card: what that card
    /// sends meanwhile (an RDMA reply, a frame its flow table turns
    /// around) goes by socket, so a delivery never nests in another.
    static DELIVERING: Cell<bool> = const { Cell::new(false) };
}

/// Marks this thread as delivering until dropped.
struct Delivering;

impl Delivering {
    /// `None` if this thread is delivering already.
    fn enter() -> Option<Self> {
        DELIVERING.with(|d| (!d.replace(true)).then_some(Self))
    }
}

impl Drop for Delivering {
    fn drop(&mut self) {
        DELIVERING.with(|d| d.set(false));
    }
}

/// What the cable does to frames sent through it, each in frames per
/// thousand (0: never, 1000: always).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Impairments {
    /// Lost.
    pub drop: u32,
    /// Delivered twice.
    pub duplicate: u32,
    /// Held back and delivered after the next frame.
    pub reorder: u32,
    /// One bit flipped (the FCS then no longer matches).
    pub corrupt: u32,
}

impl Impairments {
    /// Sets the impairment a harness name (`drop`, `dup`, `reorder`,
    /// `corrupt`) stands for; false for an unknown name or a rate above
    /// 1000.
    pub fn set(&mut self, name: &str, per_mille: u32) -> bool {
        let rate = match name {
            "drop" => &mut self.drop,
            "dup" => &mut self.duplicate,
            "reorder" => &mut self.reorder,
            "corrupt" => &mut self.corrupt,
            _ => return false,
        };
        if per_mille > 1000 {
            return false;
        }
        *rate = per_mille;
        true
    }
}

/// What the impairments did, frame by frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImpairmentStats {
    /// Frames dropped.
    pub dropped: u64,
    /// Frames sent twice.
    pub duplicated: u64,
    /// Frames held back behind the next one.
    pub reordered: u64,
    /// Frames with a bit flipped.
    pub corrupted: u64,
}

struct Sender {
    impair: Impairments,
    rng: fastrand::Rng,
    /// A frame held back to go out after the next one (reordering).
    held: Option<Vec<u8>>,
    stats: ImpairmentStats,
}

impl Sender {
    fn roll(&mut self, per_mille: u32) -> bool {
        per_mille > 0 && self.rng.u32(0..1000) < per_mille
    }

    /// Whether frames go out as they are: no impairment set, none held.
    fn clean(&self) -> bool {
        self.impair == Impairments::default() && self.held.is_none()
    }
}

/// A way to the peer: a socket connected to the peer's path, so a frame
/// costs no path lookup (an unconnected `send_to` resolves the path for
/// every datagram). Connected again when the peer's socket has gone away
/// (its card restarted) or was not there yet. A non-blocking link fails
/// with `WouldBlock` when the peer's socket is full.
struct PeerLink {
    peer: PathBuf,
    sock: Option<UnixDatagram>,
    nonblocking: bool,
}

impl PeerLink {
    fn new(peer: PathBuf, nonblocking: bool) -> Self {
        Self {
            peer,
            sock: None,
            nonblocking,
        }
    }

    /// Runs `op` on the connected socket; connects first if there is
    /// none, and once more if the one it had is closed (`ECONNREFUSED`).
    fn with_socket<T>(
        &mut self,
        mut op: impl FnMut(&UnixDatagram) -> io::Result<T>,
    ) -> io::Result<T> {
        if let Some(sock) = &self.sock {
            match op(sock) {
                // The socket it was connected to is closed.
                Err(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => self.sock = None,
                done => return done,
            }
        }
        let sock = UnixDatagram::unbound()?;
        sock.connect(&self.peer)?;
        sock.set_nonblocking(self.nonblocking)?;
        deepen_send_buffer(&sock);
        let done = op(&sock);
        self.sock = Some(sock);
        done
    }

    fn send(&mut self, frame: &[u8]) -> io::Result<()> {
        self.with_socket(|sock| sock.send(frame).map(drop))
    }

    /// Sends `datagrams`, each as its header from `headers`, its frame
    /// and its FCS from `fcs`, in one `sendmmsg`; returns how many went
    /// (fewer when the peer's socket filled up; `WouldBlock` if none did).
    fn send_batch(
        &mut self,
        datagrams: &[Datagram<'_>],
        headers: &[[u8; HEADER_LEN]],
        fcs: &[[u8; FCS_LEN]],
    ) -> io::Result<usize> {
        let iov = |p: &[u8]| libc::iovec {
            iov_base: p.as_ptr().cast_mut().cast(),
            iov_len: p.len(),
        };
        let mut iovs: Vec<[libc::iovec; 3]> = datagrams
            .iter()
            .zip(headers)
            .zip(fcs)
            .map(|((d, h), c)| [iov(h), iov(d.frame), iov(c)])
            .collect();
        let mut msgs: Vec<libc::mmsghdr> = iovs
            .iter_mut()
            .map(|iov| {
                // SAFETY: all-zero is a valid `mmsghdr` (null pointers,
                // zero lengths).
                let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                m.msg_hdr.msg_iov = iov.as_mut_ptr();
                m.msg_hdr.msg_iovlen = 3;
                m
            })
            .collect();
        self.with_socket(|sock| {
            // SAFETY: `msgs` holds `msgs.len()` headers, each pointing at
            // three iovecs of memory valid for reads for the call (the
            // header, the frame and its FCS); the kernel only reads them.
            let n = unsafe {
                libc::sendmmsg(
                    sock.as_raw_fd(),
                    msgs.as_mut_ptr(),
                    msgs.len() as libc::c_uint,
                    0,
                )
            };
            if n < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(n as usize)
        })
    }
}

/// Room for this many bytes of datagrams in flight to the peer.
const SEND_BUFFER: libc::c_int = 8 << 20;

/// Lets `sock` have [`SEND_BUFFER`] bytes in flight (with CAP_NET_ADMIN
/// beyond `wmem_max`; without it, as much as the host allows).
fn deepen_send_buffer(sock: &UnixDatagram) {
    let set = |opt| {
        // SAFETY: the option value is a c_int that lives across the call,
        // and its size is passed with it.
        unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&SEND_BUFFER as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        }
    };
    if set(libc::SO_SNDBUFFORCE) != 0 {
        set(libc::SO_SNDBUF);
    }
}

/// Datagrams a socket's queue should hold for the wire to run at speed.
const DEEP_QUEUE: u32 = 256;

/// Logs a warning when this network namespace's AF_UNIX datagram queues
/// are shallower than [`DEEP_QUEUE`] (Linux's default is 10): a burst of
/// small frames then fills the peer's socket and goes through the
/// transmit thread one frame at a time. Not an error: the wire works.
fn warn_if_shallow() {
    let path = "/proc/sys/net/unix/max_dgram_qlen";
    let depth = std::fs::read_to_string(path)
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok());
    if let Some(depth) = depth.filter(|&d| d < DEEP_QUEUE) {
        log::warn!(
            "wire: {path} is {depth}; the peer's socket fills at {depth} datagrams \
             (at least {DEEP_QUEUE} for speed; qemu/vm.py sets 1024 in its own namespace)"
        );
    }
}

/// Frames waiting for the transmit thread, at most.
const TX_QUEUE_LEN: usize = 8192;

/// Whether a sender may wait for room in the transmit queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// The host's transmit path: waits (backpressure on the host's rings).
    Yes,
    /// The receive path and the timers: never waits; a frame that finds
    /// the queue full is lost, as on a congested wire. The receive thread
    /// is what drains this card's socket: were it to block on the peer
    /// while the peer blocks on it, both cards would stop.
    No,
}

/// Buffers for the datagrams one [`Wire::recv_batch`] takes.
pub struct RecvBatch {
    bufs: Vec<Box<[u8]>>,
    /// Length (header and frame, without the FCS) and FCS verdict of
    /// each datagram taken.
    taken: Vec<(usize, bool)>,
    /// `recvmmsg`'s vectors, pointed at `bufs` anew for each call (their
    /// room is kept: no allocation per batch).
    iovs: Vec<libc::iovec>,
    msgs: Vec<libc::mmsghdr>,
}

impl RecvBatch {
    /// Room for `count` datagrams of up to [`MAX_FRAME`] bytes.
    pub fn new(count: usize) -> Self {
        Self {
            bufs: (0..count.max(1))
                .map(|_| vec![0u8; HEADER_LEN + MAX_FRAME + FCS_LEN].into_boxed_slice())
                .collect(),
            taken: Vec::with_capacity(count),
            iovs: Vec::with_capacity(count),
            msgs: Vec::with_capacity(count),
        }
    }

    /// What the datagrams of the last [`Wire::recv_batch`] carry, and
    /// whether each one's FCS matched (those this end cannot read were
    /// counted and left out).
    pub fn frames(&self) -> impl Iterator<Item = (Carried<'_>, bool)> {
        self.bufs
            .iter()
            .zip(&self.taken)
            .filter_map(|(buf, &(len, ok))| Some((carried(&buf[..len])?, ok)))
    }
}

/// One end of the cable.
///
/// Frames go straight to the peer's socket without blocking; when it is
/// full they queue for a transmit thread, so no caller ever blocks on the
/// peer's socket itself.
pub struct Wire {
    sock: UnixDatagram,
    /// The senders' own link to the peer, non-blocking.
    direct: Mutex<PeerLink>,
    /// Frames queued for the transmit thread and not sent yet: while there
    /// are any, new frames queue behind them (frames keep their order).
    queued: Arc<AtomicUsize>,
    queue: SyncSender<Vec<u8>>,
    sender: Mutex<Sender>,
    /// Held for reading by a batch that found the wire clean until it is
    /// delivered; [`Self::impair`] takes it for writing, so once that
    /// returns no unimpaired batch is still on its way.
    clean_gate: RwLock<()>,
    /// Frames that could not be sent (peer absent or its socket gone).
    pub send_errors: Arc<AtomicU64>,
    /// Frames lost because the transmit queue was full.
    pub queue_drops: AtomicU64,
    /// Datagrams received that this end cannot read (a header it does
    /// not know, a train that does not check), dropped.
    pub bad_datagrams: AtomicU64,
    /// Trains sent whole, and received whole.
    pub trains_sent: AtomicU64,
    pub trains_received: AtomicU64,
    /// The tap on this end of the cable.
    pub capture: Arc<Capture>,
    /// The peer end, when it is in this process ([`Self::join`]).
    inline: OnceLock<InlinePeer>,
    /// Batches delivered straight into the peer card.
    pub inline_batches: AtomicU64,
}

impl Wire {
    /// Binds `local` and sends to `peer`.
    pub fn bind(local: &Path, peer: &Path) -> io::Result<Self> {
        let sock = UnixDatagram::bind(local)?;
        warn_if_shallow();
        let (queue, frames) = sync_channel::<Vec<u8>>(TX_QUEUE_LEN);
        let send_errors = Arc::new(AtomicU64::new(0));
        let capture = Arc::new(Capture::default());
        let queued = Arc::new(AtomicUsize::new(0));
        let (errors, tap, left, peer_path) = (
            Arc::clone(&send_errors),
            Arc::clone(&capture),
            Arc::clone(&queued),
            peer.to_path_buf(),
        );
        std::thread::Builder::new()
            .name("wire-tx".into())
            .spawn(move || {
                let mut link = PeerLink::new(peer_path, false);
                // Ends when the wire is dropped.
                for frame in frames {
                    record(&tap, &frame);
                    if link.send(&frame).is_err() {
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                    // Sent (or lost): a later frame may now go direct.
                    left.fetch_sub(1, Ordering::Release);
                }
            })?;
        Ok(Self {
            sock,
            direct: Mutex::new(PeerLink::new(peer.to_path_buf(), true)),
            queued,
            queue,
            sender: Mutex::new(Sender {
                impair: Impairments::default(),
                rng: fastrand::Rng::with_seed(0x5eed),
                held: None,
                stats: ImpairmentStats::default(),
            }),
            clean_gate: RwLock::new(()),
            send_errors,
            queue_drops: AtomicU64::new(0),
            bad_datagrams: AtomicU64::new(0),
            trains_sent: AtomicU64::new(0),
            trains_received: AtomicU64::new(0),
            capture,
            inline: OnceLock::new(),
            inline_batches: AtomicU64::new(0),
        })
    }

    /// Cables two ends in this process: an unimpaired batch sent at one
    /// end is delivered into the card behind the other (`a_card` behind
    /// `a`, `b_card` behind `b`) by the sending thread.
    pub fn join(a: &Arc<Self>, a_card: Weak<dyn Sink>, b: &Arc<Self>, b_card: Weak<dyn Sink>) {
        let _ = a.inline.set(InlinePeer {
            wire: Arc::downgrade(b),
            sink: b_card,
        });
        let _ = b.inline.set(InlinePeer {
            wire: Arc::downgrade(a),
            sink: a_card,
        });
    }

    /// Delivers `datagrams` into the peer card from this thread, if the
    /// peer is in this process and this thread is not delivering already;
    /// whether it did. The frames are not copied and carry no FCS: nothing
    /// on this path can damage them.
    fn deliver_inline(&self, datagrams: &[Datagram<'_>]) -> bool {
        let Some(peer) = self.inline.get() else {
            return false;
        };
        let (Some(wire), Some(sink)) = (peer.wire.upgrade(), peer.sink.upgrade()) else {
            return false;
        };
        let Some(_delivering) = Delivering::enter() else {
            return false;
        };
        for d in datagrams {
            let carried = match d.train {
                None => Carried::Frame(d.frame),
                Some(shape) => match TcpTrain::new(d.frame, shape) {
                    Some(train) => {
                        self.trains_sent.fetch_add(1, Ordering::Relaxed);
                        wire.trains_received.fetch_add(1, Ordering::Relaxed);
                        Carried::Train(train)
                    }
                    None => {
                        wire.bad_datagrams.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                },
            };
            record_carried(&self.capture, &carried);
            record_carried(&wire.capture, &carried);
            sink.receive(carried, true);
        }
        sink.end_of_batch();
        self.inline_batches.fetch_add(1, Ordering::Relaxed);
        true
    }

    fn sender(&self) -> std::sync::MutexGuard<'_, Sender> {
        self.sender.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Changes one impairment of the sending direction (see
    /// [`Impairments::set`]), in force for every frame sent once this
    /// returns. A frame held back is sent at once.
    pub fn impair(&self, name: &str, per_mille: u32) -> bool {
        // Waits out the batches that found the wire clean.
        let _no_clean_batch = self.clean_gate.write().unwrap_or_else(|e| e.into_inner());
        let held = {
            let mut tx = self.sender();
            if !tx.impair.set(name, per_mille) {
                return false;
            }
            tx.held.take()
        };
        if let Some(frame) = held {
            self.enqueue(frame, Wait::No);
        }
        true
    }

    /// Counts of what the impairments did.
    pub fn impairment_stats(&self) -> ImpairmentStats {
        self.sender().stats
    }

    /// Sends one frame (with its FCS), impaired as configured; a frame the
    /// peer cannot take is lost, as on a wire.
    pub fn send(&self, frame: &[u8], wait: Wait) {
        let mut out = Vec::with_capacity(HEADER_LEN + frame.len() + FCS_LEN);
        out.extend_from_slice(&header(None));
        out.extend_from_slice(frame);
        out.extend_from_slice(&crc32fast::hash(frame).to_le_bytes());
        // Decided under the lock, queued after it: a waiting sender must
        // not hold up one that may not wait.
        let mut ready = Vec::new();
        {
            let mut guard = self.sender();
            let tx = &mut *guard;
            if tx.roll(tx.impair.drop) {
                tx.stats.dropped += 1;
                return;
            }
            if !frame.is_empty() && tx.roll(tx.impair.corrupt) {
                let byte = HEADER_LEN + tx.rng.usize(0..frame.len());
                out[byte] ^= 1 << tx.rng.u8(0..8);
                tx.stats.corrupted += 1;
            }
            if tx.held.is_none() && tx.roll(tx.impair.reorder) {
                tx.stats.reordered += 1;
                tx.held = Some(out);
                return;
            }
            if tx.roll(tx.impair.duplicate) {
                tx.stats.duplicated += 1;
                ready.push(out.clone());
            }
            ready.insert(0, out);
            ready.extend(tx.held.take());
        }
        for frame in ready {
            self.transmit(frame, wait);
        }
    }

    /// Sends `datagrams` in order. While no impairment is set and nothing
    /// waits in the queue, straight into a peer card in this process
    /// ([`Self::join`]), else in one `sendmmsg` (a train whole; the header
    /// and the FCS iovecs of their own: no copy), and what the peer's
    /// socket has no room for then queues, in order. Otherwise one by one
    /// as [`Self::send`] does, a train cut into its segments.
    pub fn send_batch(&self, datagrams: &[Datagram<'_>], wait: Wait) {
        let whole = |d: &Datagram<'_>| d.train.is_none() || d.frame.len() <= MAX_FRAME;
        // A batch delivered by a peer card's thread sends nothing on this
        // wire while it holds the gate (the peer sends on its own wire).
        let _clean = self.clean_gate.read().unwrap_or_else(|e| e.into_inner());
        if !self.sender().clean()
            || self.queued.load(Ordering::Acquire) != 0
            || !datagrams.iter().all(whole)
        {
            for d in datagrams {
                match d.train.map(|shape| TcpTrain::new(d.frame, shape)) {
                    None => self.send(d.frame, wait),
                    Some(Some(train)) => train.segments().for_each(|seg| self.send(&seg, wait)),
                    // Checked when the card took it from the TX ring.
                    Some(None) => {
                        self.send_errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            return;
        }
        if self.deliver_inline(datagrams) {
            return;
        }
        let headers: Vec<[u8; HEADER_LEN]> = datagrams.iter().map(|d| header(d.train)).collect();
        let trains = datagrams.iter().filter(|d| d.train.is_some()).count();
        self.trains_sent.fetch_add(trains as u64, Ordering::Relaxed);
        let fcs: Vec<[u8; FCS_LEN]> = datagrams
            .iter()
            .map(|d| crc32fast::hash(d.frame).to_le_bytes())
            .collect();
        let sent = self
            .direct
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .send_batch(datagrams, &headers, &fcs);
        let went = match sent {
            Ok(n) => n,
            // The peer's socket is full: all of them queue below.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
            // Lost (as the transmit thread counts it).
            Err(_) => {
                self.send_errors
                    .fetch_add(datagrams.len() as u64, Ordering::Relaxed);
                datagrams.len()
            }
        };
        let parts = datagrams.iter().zip(&headers).zip(&fcs);
        for ((d, h), c) in parts.clone().take(went) {
            if self.capture.is_on() {
                record(&self.capture, &[&h[..], d.frame, c].concat());
            }
        }
        for ((d, h), c) in parts.skip(went) {
            self.enqueue([&h[..], d.frame, c].concat(), wait);
        }
    }

    /// Sends `frame` (with its FCS) straight to the peer unless frames
    /// wait in the queue or the peer's socket is full; queues it then.
    fn transmit(&self, frame: Vec<u8>, wait: Wait) {
        if self.queued.load(Ordering::Acquire) == 0 {
            let sent = self
                .direct
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .send(&frame);
            match sent {
                // The peer's socket is full: the frame queues below.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // Sent, or lost (as the transmit thread counts it).
                sent => {
                    record(&self.capture, &frame);
                    if sent.is_err() {
                        self.send_errors.fetch_add(1, Ordering::Relaxed);
                    }
                    return;
                }
            }
        }
        self.enqueue(frame, wait);
    }

    fn enqueue(&self, frame: Vec<u8>, wait: Wait) {
        self.queued.fetch_add(1, Ordering::AcqRel);
        let queued = match wait {
            Wait::Yes => self.queue.send(frame).is_ok(),
            Wait::No => self.queue.try_send(frame).is_ok(),
        };
        if !queued {
            self.queued.fetch_sub(1, Ordering::Release);
            self.queue_drops.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Blocks for the next datagram; returns its length in `buf` (header
    /// and frame, without the FCS) and whether its FCS matched.
    #[cfg(test)]
    fn recv(&self, buf: &mut [u8]) -> io::Result<(usize, bool)> {
        let n = self.sock.recv(buf)?;
        Ok(self.received(buf, n))
    }

    /// Blocks for the next frame, then takes the frames already waiting,
    /// up to the batch's size, all in one `recvmmsg`; returns how many
    /// (at least one) are in `batch`.
    pub fn recv_batch(&self, batch: &mut RecvBatch) -> io::Result<usize> {
        let RecvBatch {
            bufs,
            taken,
            iovs,
            msgs,
        } = batch;
        iovs.clear();
        iovs.extend(bufs.iter_mut().map(|b| libc::iovec {
            iov_base: b.as_mut_ptr().cast(),
            iov_len: b.len(),
        }));
        msgs.clear();
        msgs.extend(iovs.iter_mut().map(|iov| {
            // SAFETY: all-zero is a valid `mmsghdr` (null pointers, zero
            // lengths).
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            m.msg_hdr.msg_iov = iov;
            m.msg_hdr.msg_iovlen = 1;
            m
        }));
        let n = loop {
            // SAFETY: `msgs` holds `msgs.len()` headers, each pointing at one
            // iovec of a buffer of `batch`, all valid for writes for the call.
            let n = unsafe {
                libc::recvmmsg(
                    self.sock.as_raw_fd(),
                    msgs.as_mut_ptr(),
                    msgs.len() as libc::c_uint,
                    libc::MSG_WAITFORONE,
                    std::ptr::null_mut(),
                )
            };
            if n >= 0 {
                break n as usize;
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        };
        taken.clear();
        for (buf, msg) in bufs.iter().zip(msgs.iter()).take(n) {
            taken.push(self.received(buf, msg.msg_len as usize));
        }
        Ok(n)
    }

    /// A datagram of `n` bytes in `buf`: its length without the FCS, and
    /// whether the FCS matched the frame. One this end cannot read is
    /// counted.
    fn received(&self, buf: &[u8], n: usize) -> (usize, bool) {
        let Some(len) = n.checked_sub(FCS_LEN).filter(|&l| l >= HEADER_LEN) else {
            self.bad_datagrams.fetch_add(1, Ordering::Relaxed);
            return (0, false);
        };
        match carried(&buf[..len]) {
            None => {
                self.bad_datagrams.fetch_add(1, Ordering::Relaxed);
                return (0, false);
            }
            Some(Carried::Train(_)) => {
                self.trains_received.fetch_add(1, Ordering::Relaxed);
            }
            Some(Carried::Frame(_)) => {}
        }
        record(&self.capture, &buf[..n]);
        let fcs = u32::from_le_bytes(buf[len..n].try_into().expect("four bytes"));
        (len, crc32fast::hash(&buf[HEADER_LEN..len]) == fcs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn pair(name: &str) -> (Wire, Wire, PathBuf) {
        let dir = std::env::temp_dir().join(format!("rsnic-wire-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("a"), dir.join("b"));
        (
            Wire::bind(&a, &b).unwrap(),
            Wire::bind(&b, &a).unwrap(),
            dir,
        )
    }

    fn recv(w: &Wire) -> (Vec<u8>, bool) {
        let mut buf = [0u8; 2048];
        let (n, ok) = w.recv(&mut buf).unwrap();
        assert_eq!(buf[0], KIND_FRAME);
        (buf[HEADER_LEN..n].to_vec(), ok)
    }

    fn frame(c: Carried<'_>) -> Vec<u8> {
        match c {
            Carried::Frame(f) => f.to_vec(),
            Carried::Train(_) => panic!("a train where a frame was sent"),
        }
    }

    fn datagrams(frames: &[&[u8]]) -> Vec<Datagram<'static>> {
        frames
            .iter()
            .map(|f| Datagram {
                frame: f.to_vec().leak(),
                train: None,
            })
            .collect()
    }

    /// A card behind an end joined in process: records what it is
    /// given; with `echo`, sends each frame back from the delivering
    /// thread (as an RDMA reply goes); while `hold` is locked elsewhere,
    /// a delivery waits in `receive` (`entered` counts the arrivals).
    #[derive(Default)]
    struct Recorder {
        frames: Mutex<Vec<(Vec<u8>, bool)>>,
        batches: AtomicU64,
        echo: OnceLock<Arc<Wire>>,
        hold: Mutex<()>,
        entered: AtomicU64,
    }

    impl Sink for Recorder {
        fn receive(&self, carried: Carried<'_>, fcs_ok: bool) {
            self.entered.fetch_add(1, Ordering::SeqCst);
            drop(self.hold.lock().unwrap());
            let f = frame(carried);
            if let Some(wire) = self.echo.get() {
                wire.send_batch(&datagrams(&[&f]), Wait::No);
            }
            self.frames.lock().unwrap().push((f, fcs_ok));
        }

        fn end_of_batch(&self) {
            self.batches.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn joined(name: &str) -> (Arc<Wire>, Arc<Recorder>, Arc<Wire>, Arc<Recorder>, PathBuf) {
        let (a, b, dir) = pair(name);
        let (a, b) = (Arc::new(a), Arc::new(b));
        let (ra, rb) = (Arc::new(Recorder::default()), Arc::new(Recorder::default()));
        let (sa, sb): (Weak<dyn Sink>, Weak<dyn Sink>) =
            (Arc::downgrade(&ra) as _, Arc::downgrade(&rb) as _);
        Wire::join(&a, sa, &b, sb);
        (a, ra, b, rb, dir)
    }

    #[test]
    fn a_batch_goes_into_a_peer_in_process_by_the_sending_thread() {
        let (a, _ra, b, rb, dir) = joined("inline");
        a.send_batch(&datagrams(&[b"one", b"two"]), Wait::Yes);
        // Delivered before send_batch returned, as one batch, none by socket.
        let got = rb.frames.lock().unwrap().clone();
        assert_eq!(got, vec![(b"one".to_vec(), true), (b"two".to_vec(), true)]);
        assert_eq!(rb.batches.load(Ordering::Relaxed), 1);
        assert_eq!(a.inline_batches.load(Ordering::Relaxed), 1);
        b.sock.set_nonblocking(true).unwrap();
        assert!(
            b.sock.recv(&mut [0u8; 64]).is_err(),
            "nothing went by socket"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn what_a_peer_sends_while_it_takes_a_delivery_goes_by_socket() {
        let (a, _ra, b, rb, dir) = joined("inline-echo");
        assert!(rb.echo.set(Arc::clone(&b)).is_ok());
        a.send_batch(&datagrams(&[b"ping"]), Wait::Yes);
        assert_eq!(rb.frames.lock().unwrap().len(), 1);
        // B's echo, sent from A's thread while it delivered, did not nest
        // a delivery into A: it waits in A's socket.
        a.sock
            .set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        assert_eq!(recv(&a), (b"ping".to_vec(), true));
        assert_eq!(b.inline_batches.load(Ordering::Relaxed), 0);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn an_impaired_wire_sends_by_socket_even_to_a_peer_in_process() {
        let (a, _ra, b, rb, dir) = joined("inline-impaired");
        assert!(a.impair("corrupt", 1000));
        a.send_batch(&datagrams(&[b"bad"]), Wait::Yes);
        assert!(rb.frames.lock().unwrap().is_empty());
        let (f, ok) = recv(&b);
        assert_eq!(f.len(), 3);
        assert!(!ok, "the corrupted frame's FCS no longer matches");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn an_impairment_is_in_force_once_set_even_for_a_batch_in_flight() {
        let (a, _ra, _b, rb, dir) = joined("inline-gate");
        let held = rb.hold.lock().unwrap();
        let sending = {
            let a = Arc::clone(&a);
            std::thread::spawn(move || a.send_batch(&datagrams(&[b"early"]), Wait::Yes))
        };
        while rb.entered.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
        // The batch found the wire clean and is inside the peer card:
        // setting an impairment waits for it.
        let impairing = {
            let a = Arc::clone(&a);
            std::thread::spawn(move || a.impair("corrupt", 1000))
        };
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(
            !impairing.is_finished(),
            "impair returned with a clean batch in flight"
        );
        drop(held);
        sending.join().unwrap();
        assert!(impairing.join().unwrap());
        assert_eq!(a.inline_batches.load(Ordering::Relaxed), 1);
        a.send_batch(&datagrams(&[b"late"]), Wait::Yes);
        assert_eq!(
            a.inline_batches.load(Ordering::Relaxed),
            1,
            "impaired: by socket"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn two_ends_exchange_frames_across_a_peer_restart() {
        let (wa, wb, dir) = pair("exchange");
        wa.send(b"frame from a", Wait::Yes);
        assert_eq!(recv(&wb), (b"frame from a".to_vec(), true));
        // The peer's card goes away: its socket closes, its path goes.
        drop(wb);
        std::fs::remove_file(dir.join("b")).unwrap();
        wa.send(b"lost", Wait::Yes);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while wa.send_errors.load(Ordering::Relaxed) == 0 && std::time::Instant::now() < deadline {
            std::thread::yield_now();
        }
        assert_eq!(wa.send_errors.load(Ordering::Relaxed), 1);
        // It comes back at the same path: the sender connects again.
        let wb = Wire::bind(&dir.join("b"), &dir.join("a")).unwrap();
        // A sender stuck on the old socket fails the test, not hangs it.
        let five_s = Some(std::time::Duration::from_secs(5));
        wb.sock.set_read_timeout(five_s).unwrap();
        wa.send(b"after the restart", Wait::Yes);
        assert_eq!(recv(&wb), (b"after the restart".to_vec(), true));
        assert_eq!(wa.send_errors.load(Ordering::Relaxed), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_sending_socket_holds_a_batch_of_trains() {
        let (wa, _wb, dir) = pair("send-buffer");
        wa.send(b"connects", Wait::Yes);
        let mut link = wa.direct.lock().unwrap();
        let sndbuf = link
            .with_socket(|sock| {
                let mut v: libc::c_int = 0;
                let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
                // SAFETY: `v` and `len` live across the call and `len`
                // is `v`'s size.
                let r = unsafe {
                    libc::getsockopt(
                        sock.as_raw_fd(),
                        libc::SOL_SOCKET,
                        libc::SO_SNDBUF,
                        (&mut v as *mut libc::c_int).cast(),
                        &mut len,
                    )
                };
                assert_eq!(r, 0);
                Ok(v)
            })
            .unwrap();
        // The tests run as root (CAP_NET_ADMIN): the full buffer, which
        // Linux reports doubled; the default would be about 200 KiB.
        assert!(sndbuf >= SEND_BUFFER, "SO_SNDBUF {sndbuf}");
        drop(link);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_batch_arrives_whole_and_in_order_with_its_fcs() {
        let (wa, wb, _dir) = pair("send-batch");
        let frames: Vec<Vec<u8>> = (0..40u8).map(|i| vec![i; 60 + usize::from(i)]).collect();
        let refs: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
        wa.send_batch(&datagrams(&refs), Wait::Yes);
        for f in &frames {
            assert_eq!(recv(&wb), (f.clone(), true));
        }
        // Impaired, frame by frame as before: a dropped batch is lost.
        assert!(wa.impair("drop", 1000));
        wa.send_batch(&datagrams(&refs[..2]), Wait::Yes);
        assert!(wa.impair("drop", 0));
        wa.send(b"after", Wait::Yes);
        assert_eq!(recv(&wb), (b"after".to_vec(), true));
    }

    #[test]
    fn impairments_drop_corrupt_duplicate_and_reorder() {
        let (wa, wb, dir) = pair("impair");
        assert!(!wa.impair("drop", 1001));
        assert!(!wa.impair("melt", 1));

        assert!(wa.impair("corrupt", 1000));
        wa.send(b"damaged", Wait::Yes);
        let (frame, ok) = recv(&wb);
        assert!(!ok && frame != b"damaged" && frame.len() == 7);
        assert!(wa.impair("corrupt", 0));

        assert!(wa.impair("dup", 1000));
        wa.send(b"twice", Wait::Yes);
        assert_eq!(recv(&wb), (b"twice".to_vec(), true));
        assert_eq!(recv(&wb), (b"twice".to_vec(), true));
        assert!(wa.impair("dup", 0));

        assert!(wa.impair("reorder", 1000));
        wa.send(b"first", Wait::Yes);
        wa.send(b"second", Wait::Yes);
        assert_eq!(recv(&wb).0, b"second");
        assert_eq!(recv(&wb).0, b"first");
        // A frame held back when reordering stops goes out then.
        wa.send(b"held", Wait::Yes);
        assert!(wa.impair("reorder", 0));
        assert_eq!(recv(&wb).0, b"held");

        assert!(wa.impair("drop", 1000));
        wa.send(b"gone", Wait::Yes);
        assert!(wa.impair("drop", 0));
        wa.send(b"after", Wait::Yes);
        assert_eq!(recv(&wb).0, b"after");

        let s = wa.impairment_stats();
        assert_eq!(
            (s.corrupted, s.duplicated, s.reordered, s.dropped),
            (1, 1, 2, 1)
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_capture_records_both_directions_without_fcs() {
        let (wa, wb, dir) = pair("capture");
        let file = dir.join("a.pcap");
        wa.capture.start(&file).unwrap();
        wa.send(b"a to b", Wait::Yes);
        assert_eq!(recv(&wb).0, b"a to b");
        wb.send(b"b to a", Wait::Yes);
        assert_eq!(recv(&wa).0, b"b to a");
        assert_eq!(wa.capture.stop().unwrap(), Some(2));
        assert_eq!(
            crate::capture::tests::read_frames(&file),
            [b"a to b".to_vec(), b"b to a".to_vec()]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_sender_that_may_not_wait_never_blocks_on_a_stalled_peer() {
        // b never reads: its socket fills after a few frames, the transmit
        // thread blocks on it, then the queue fills.
        let (wa, _wb, dir) = pair("stalled");
        let start = std::time::Instant::now();
        for _ in 0..TX_QUEUE_LEN + 100 {
            wa.send(&[0u8; 64], Wait::No);
        }
        assert!(start.elapsed() < std::time::Duration::from_secs(10));
        // All but what the queue and b's socket hold (a handful) is lost.
        assert!(wa.queue_drops.load(Ordering::Relaxed) >= 50);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn frames_keep_their_order_when_the_peer_falls_behind() {
        // b reads slower than a sends: frames go straight to b's socket
        // until it is full, then wait in the queue; as b catches up, the
        // transmit thread sends the queued ones, and a's later frames may
        // not overtake them.
        let (wa, wb, dir) = pair("order");
        const FRAMES: u32 = 3000;
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            for n in 0..FRAMES {
                if n % 64 == 0 {
                    std::thread::sleep(std::time::Duration::from_micros(500));
                }
                let (frame, ok) = recv(&wb);
                assert!(ok);
                got.push(u32::from_le_bytes(frame.try_into().unwrap()));
            }
            got
        });
        let mut queued = false;
        for n in 0..FRAMES {
            wa.send(&n.to_le_bytes(), Wait::Yes);
            queued |= wa.queued.load(Ordering::Acquire) > 0;
        }
        let got = reader.join().unwrap();
        assert!(queued, "b never fell behind");
        let first_out_of_order = got.iter().zip(0..).find(|(g, n)| **g != *n);
        assert_eq!(first_out_of_order, None);
        assert_eq!(wa.queue_drops.load(Ordering::Relaxed), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn one_batch_takes_every_waiting_frame_up_to_its_size() {
        let (wa, wb, dir) = pair("batch");
        wa.send(b"one", Wait::Yes);
        wa.send(b"two", Wait::Yes);
        wa.send(b"three", Wait::Yes);
        // Damaged on the way: still taken, flagged.
        wa.impair("corrupt", 1000);
        wa.send(b"four", Wait::Yes);
        wa.impair("corrupt", 0);
        wa.send(b"five", Wait::Yes);
        let mut batch = RecvBatch::new(4);
        assert_eq!(wb.recv_batch(&mut batch).unwrap(), 4);
        let frames: Vec<(Vec<u8>, bool)> = batch.frames().map(|(f, ok)| (frame(f), ok)).collect();
        assert_eq!(
            frames[..3],
            [
                (b"one".to_vec(), true),
                (b"two".to_vec(), true),
                (b"three".to_vec(), true)
            ]
        );
        assert!(!frames[3].1, "a corrupted frame fails its FCS");
        // The rest, then a wait for the next.
        assert_eq!(wb.recv_batch(&mut batch).unwrap(), 1);
        let first = |b: &RecvBatch| b.frames().next().map(|(f, ok)| (frame(f), ok));
        assert_eq!(first(&batch), Some((b"five".to_vec(), true)));
        let late = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            wa.send(b"six", Wait::Yes);
        });
        assert_eq!(wb.recv_batch(&mut batch).unwrap(), 1);
        assert_eq!(first(&batch), Some((b"six".to_vec(), true)));
        late.join().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_train_crosses_whole_unless_impaired_and_is_captured_as_segments() {
        use crate::offload::tests::tcp_frame;
        let (wa, wb, dir) = pair("train");
        let (tso, desc) = tcp_frame(false, &[7u8; 250], 0x18);
        let shape = crate::offload::train_shape(&desc);
        let train = TcpTrain::new(&tso, shape).unwrap();
        let segments: Vec<Vec<u8>> = train.segments().collect();
        assert_eq!(segments.len(), 3);
        let pcap = dir.join("a.pcap");
        wa.capture.start(&pcap).unwrap();
        let sent = [Datagram {
            frame: &tso,
            train: Some(shape),
        }];
        wa.send_batch(&sent, Wait::Yes);
        let mut batch = RecvBatch::new(8);
        assert_eq!(wb.recv_batch(&mut batch).unwrap(), 1);
        match batch.frames().next() {
            Some((Carried::Train(t), true)) => {
                assert_eq!(t.frame(), &tso[..]);
                assert_eq!(t.shape(), shape);
            }
            other => panic!("not the train: {other:?}"),
        }
        assert_eq!(wa.capture.stop().unwrap(), Some(3));
        assert_eq!(crate::capture::tests::read_frames(&pcap), segments);
        // Impaired: its segments, one datagram each.
        assert!(wa.impair("dup", 1000));
        wa.send_batch(&sent, Wait::Yes);
        assert!(wa.impair("dup", 0));
        for seg in &segments {
            assert_eq!(&recv(&wb), &(seg.clone(), true));
            assert_eq!(&recv(&wb), &(seg.clone(), true));
        }
        // A datagram of a kind this end does not know is counted, dropped.
        let raw = UnixDatagram::unbound().unwrap();
        raw.send_to(&[9, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4], dir.join("b"))
            .unwrap();
        wa.send(b"next", Wait::Yes);
        assert_eq!(wb.recv_batch(&mut batch).unwrap(), 2);
        let got: Vec<Vec<u8>> = batch.frames().map(|(f, _)| frame(f)).collect();
        assert_eq!(got, [b"next".to_vec()]);
        assert_eq!(wb.bad_datagrams.load(Ordering::Relaxed), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
