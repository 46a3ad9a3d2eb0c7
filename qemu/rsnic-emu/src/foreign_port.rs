// SPDX-License-Identifier: GPL-2.0

//! A port of the card's switch for a VF that is not the card's own: a
//! QEMU network device (`virtio-net-pci`, `igb`) on a `-netdev dgram`
//! socket the card serves, as Azure's host puts a Mellanox or MANA VF
//! in front of the synthetic NIC.
//!
//! Frames are plain Ethernet frames, one per datagram, without the
//! wire's header or frame check sequence (QEMU's dgram netdev format).
//! The card binds its end and sends to QEMU's; while the port is
//! attached and the PF's data path is the VF, the card delivers what it
//! receives for the host here instead of to the synthetic queues. A send
//! that fails (QEMU's end gone) marks the port failed: the card then
//! delivers on the synthetic path again until the port is attached anew.
//!
//! Sends never block: a frame QEMU's end has no room for is dropped and
//! counted, as a switch port with a full buffer drops. (A blocking send
//! waited for QEMU's main loop while that loop waited for the card to
//! answer a register read: QEMU gave up on the card after its reply
//! timeout.)

use std::io;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// The longest frame the port carries (QEMU's dgram netdev sends at most
/// this much in one datagram).
pub const MAX_FRAME: usize = 65536;

/// The card's end of a foreign VF's port.
pub struct ForeignPort {
    /// Bound at `local`: what the VF sends arrives here.
    sock: UnixDatagram,
    /// Connected to `peer` (QEMU's end) on the first delivery,
    /// non-blocking.
    tx: Mutex<Option<UnixDatagram>>,
    /// `cut` was asked for: sends fail.
    cut: AtomicBool,
    local: PathBuf,
    peer: PathBuf,
    /// The identity the card announces for the VF (netvsc's serial: the
    /// guest sees it as the VF's PCI slot number).
    serial: u32,
    failed: AtomicBool,
    /// Frames the card delivered to the VF.
    pub delivered: AtomicU64,
    /// Frames the VF sent into the card.
    pub received: AtomicU64,
    /// Sends to QEMU's end that failed.
    pub send_errors: AtomicU64,
    /// Frames dropped because QEMU's end had no room.
    pub dropped: AtomicU64,
}

impl ForeignPort {
    /// Binds the card's end at `local` (replacing a stale socket file)
    /// for a VF at `peer` announced as `serial`.
    pub fn bind(local: &Path, peer: &Path, serial: u32) -> io::Result<Self> {
        let _ = std::fs::remove_file(local);
        let sock = UnixDatagram::bind(local)?;
        Ok(Self {
            sock,
            tx: Mutex::new(None),
            cut: AtomicBool::new(false),
            local: local.to_path_buf(),
            peer: peer.to_path_buf(),
            serial,
            failed: AtomicBool::new(false),
            delivered: AtomicU64::new(0),
            received: AtomicU64::new(0),
            send_errors: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        })
    }

    /// The serial the card announces for the VF.
    pub fn serial(&self) -> u32 {
        self.serial
    }

    /// Whether a send to the VF failed since the port was attached.
    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    /// Delivers `frame` to the VF. False if it could not (the port has
    /// failed, now or before): the caller delivers elsewhere.
    pub fn deliver(&self, frame: &[u8]) -> bool {
        if self.failed() {
            return false;
        }
        let mut tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        let sent = match &*tx {
            _ if self.cut.load(Ordering::Relaxed) => Err(io::ErrorKind::BrokenPipe.into()),
            Some(sock) => sock.send(frame),
            None => UnixDatagram::unbound().and_then(|sock| {
                sock.connect(&self.peer)?;
                sock.set_nonblocking(true)?;
                let sent = sock.send(frame);
                *tx = Some(sock);
                sent
            }),
        };
        match sent {
            Ok(_) => {
                self.delivered.fetch_add(1, Ordering::Relaxed);
                true
            }
            // Full: the frame is lost, as on a congested port; the port
            // itself is fine.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                true
            }
            Err(_) => {
                self.send_errors.fetch_add(1, Ordering::Relaxed);
                self.failed.store(true, Ordering::Relaxed);
                false
            }
        }
    }

    /// Breaks the way to QEMU's end (fault injection): the next send
    /// fails (EPIPE) and takes the failure's path.
    pub fn cut(&self) {
        self.cut.store(true, Ordering::Relaxed);
    }

    /// Waits for the next frame the VF sends; its length in `buf`. An
    /// error once the port is shut down.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.sock.recv(buf)?;
        if n == 0 {
            // What a shut-down socket returns (an Ethernet frame is never
            // empty).
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        self.received.fetch_add(1, Ordering::Relaxed);
        Ok(n)
    }

    /// Wakes a thread blocked in [`Self::recv`] (it gets an error) and
    /// removes the socket file: the port is being detached.
    pub fn shutdown(&self) {
        let _ = self.sock.shutdown(std::net::Shutdown::Both);
        let _ = std::fs::remove_file(&self.local);
    }

    /// `key=value` pairs for the control socket.
    pub fn describe(&self) -> String {
        format!(
            "serial={} failed={} delivered={} received={} send_errors={} dropped={}",
            self.serial,
            u8::from(self.failed()),
            self.delivered.load(Ordering::Relaxed),
            self.received.load(Ordering::Relaxed),
            self.send_errors.load(Ordering::Relaxed),
            self.dropped.load(Ordering::Relaxed)
        )
    }
}

impl Drop for ForeignPort {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.local);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(name: &str) -> (PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!("rsnic-fp-{}-{name}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        (dir.join("card"), dir.join("vf"))
    }

    #[test]
    fn frames_cross_both_ways_without_a_header() {
        let (card, vf) = paths("cross");
        let _ = std::fs::remove_file(&vf);
        let vf_sock = UnixDatagram::bind(&vf).unwrap();
        let port = ForeignPort::bind(&card, &vf, 7).unwrap();
        assert!(port.deliver(&[1, 2, 3]));
        let mut buf = [0u8; 16];
        assert_eq!(vf_sock.recv(&mut buf).unwrap(), 3);
        assert_eq!(&buf[..3], &[1, 2, 3]);
        vf_sock.send_to(&[9; 60], &card).unwrap();
        let mut big = vec![0u8; MAX_FRAME];
        assert_eq!(port.recv(&mut big).unwrap(), 60);
        assert_eq!(port.received.load(Ordering::Relaxed), 1);
        assert_eq!(port.serial(), 7);
        assert!(!port.failed());
    }

    #[test]
    fn shutdown_ends_a_waiting_receive() {
        let (card, vf) = paths("shutdown");
        let port = std::sync::Arc::new(ForeignPort::bind(&card, &vf, 2).unwrap());
        let waiting = std::sync::Arc::clone(&port);
        let t = std::thread::spawn(move || waiting.recv(&mut [0u8; 64]).is_err());
        std::thread::sleep(std::time::Duration::from_millis(50));
        port.shutdown();
        assert!(t.join().unwrap());
    }

    #[test]
    fn a_full_vf_drops_without_blocking() {
        let (card, vf) = paths("full");
        let _ = std::fs::remove_file(&vf);
        let _vf_sock = UnixDatagram::bind(&vf).unwrap(); // never read
        let port = ForeignPort::bind(&card, &vf, 3).unwrap();
        let start = std::time::Instant::now();
        for _ in 0..10_000 {
            assert!(port.deliver(&[0; 1500]), "a full port is not a failed one");
        }
        assert!(start.elapsed() < std::time::Duration::from_secs(5));
        assert!(port.dropped.load(Ordering::Relaxed) > 0);
        assert!(port.delivered.load(Ordering::Relaxed) > 0);
        assert!(!port.failed());
    }

    #[test]
    fn a_vanished_vf_fails_the_port_until_attached_again() {
        let (card, vf) = paths("gone");
        let _ = std::fs::remove_file(&vf);
        let port = ForeignPort::bind(&card, &vf, 1).unwrap();
        assert!(!port.deliver(&[0; 60]), "nobody at QEMU's end");
        assert!(port.failed());
        let _vf_sock = UnixDatagram::bind(&vf).unwrap();
        assert!(!port.deliver(&[0; 60]), "failed stays failed");
        assert_eq!(port.send_errors.load(Ordering::Relaxed), 1);
        drop(port);
        assert!(!card.exists(), "the card's socket file goes with the port");
    }
}
