// SPDX-License-Identifier: GPL-2.0

//! The card's uplink: Ethernet frames as UNIX datagrams to the card at the
//! other end of the cable.
//!
//! Each card binds its own socket and sends to its peer's path, so two
//! emulator processes (in one VM or two) form a point-to-point link. The
//! cable's plugged state is per card end; the harness unplugs both ends.

use std::io;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// One end of the cable.
pub struct Wire {
    sock: UnixDatagram,
    peer: PathBuf,
    /// Frames that could not be sent (peer absent or busy).
    pub send_errors: AtomicU64,
}

impl Wire {
    /// Binds `local` and sends to `peer`.
    pub fn bind(local: &Path, peer: &Path) -> io::Result<Self> {
        Ok(Self {
            sock: UnixDatagram::bind(local)?,
            peer: peer.to_path_buf(),
            send_errors: AtomicU64::new(0),
        })
    }

    /// Sends one frame; a frame the peer cannot take is lost, as on a wire.
    pub fn send(&self, frame: &[u8]) {
        if self.sock.send_to(frame, &self.peer).is_err() {
            self.send_errors.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Blocks for the next frame.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.sock.recv(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_ends_exchange_frames() {
        let dir = std::env::temp_dir().join(format!("rsnic-wire-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("a"), dir.join("b"));
        let wa = Wire::bind(&a, &b).unwrap();
        let wb = Wire::bind(&b, &a).unwrap();
        wa.send(b"frame from a");
        let mut buf = [0u8; 64];
        let n = wb.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"frame from a");
        std::fs::remove_file(&b).unwrap();
        wa.send(b"lost");
        assert_eq!(wa.send_errors.load(Ordering::Relaxed), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
