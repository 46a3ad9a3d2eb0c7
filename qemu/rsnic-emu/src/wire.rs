// SPDX-License-Identifier: GPL-2.0

//! The card's uplink: Ethernet frames as UNIX datagrams to the card at the
//! other end of the cable.
//!
//! Each card binds its own socket and sends to its peer's path, so two
//! emulator processes (in one VM or two) form a point-to-point link. The
//! cable's plugged state is per card end; the harness unplugs both ends.
//!
//! Every frame carries its Ethernet frame check sequence (CRC-32, 4 bytes
//! at the end), so damage on the way is seen by the receiving card. Fault
//! injection can impair the sending direction: drop, duplicate, reorder or
//! corrupt a share of the frames.

use std::io;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Length of the frame check sequence.
const FCS_LEN: usize = 4;

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
}

/// One end of the cable.
pub struct Wire {
    sock: UnixDatagram,
    peer: PathBuf,
    sender: Mutex<Sender>,
    /// Frames that could not be sent (peer absent or busy).
    pub send_errors: AtomicU64,
}

impl Wire {
    /// Binds `local` and sends to `peer`.
    pub fn bind(local: &Path, peer: &Path) -> io::Result<Self> {
        Ok(Self {
            sock: UnixDatagram::bind(local)?,
            peer: peer.to_path_buf(),
            sender: Mutex::new(Sender {
                impair: Impairments::default(),
                rng: fastrand::Rng::with_seed(0x5eed),
                held: None,
                stats: ImpairmentStats::default(),
            }),
            send_errors: AtomicU64::new(0),
        })
    }

    fn sender(&self) -> std::sync::MutexGuard<'_, Sender> {
        self.sender.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Changes one impairment of the sending direction (see
    /// [`Impairments::set`]). A frame held back is sent at once.
    pub fn impair(&self, name: &str, per_mille: u32) -> bool {
        let mut tx = self.sender();
        if !tx.impair.set(name, per_mille) {
            return false;
        }
        if let Some(frame) = tx.held.take() {
            self.send_raw(&frame);
        }
        true
    }

    /// Counts of what the impairments did.
    pub fn impairment_stats(&self) -> ImpairmentStats {
        self.sender().stats
    }

    /// Sends one frame (with its FCS), impaired as configured; a frame the
    /// peer cannot take is lost, as on a wire.
    pub fn send(&self, frame: &[u8]) {
        let mut out = Vec::with_capacity(frame.len() + FCS_LEN);
        out.extend_from_slice(frame);
        out.extend_from_slice(&crc32fast::hash(frame).to_le_bytes());
        let mut guard = self.sender();
        let tx = &mut *guard;
        if tx.roll(tx.impair.drop) {
            tx.stats.dropped += 1;
            return;
        }
        if !frame.is_empty() && tx.roll(tx.impair.corrupt) {
            let byte = tx.rng.usize(0..frame.len());
            out[byte] ^= 1 << tx.rng.u8(0..8);
            tx.stats.corrupted += 1;
        }
        if tx.held.is_none() && tx.roll(tx.impair.reorder) {
            tx.stats.reordered += 1;
            tx.held = Some(out);
            return;
        }
        self.send_raw(&out);
        if tx.roll(tx.impair.duplicate) {
            tx.stats.duplicated += 1;
            self.send_raw(&out);
        }
        if let Some(held) = tx.held.take() {
            self.send_raw(&held);
        }
    }

    fn send_raw(&self, bytes: &[u8]) {
        if self.sock.send_to(bytes, &self.peer).is_err() {
            self.send_errors.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Blocks for the next frame; returns its length in `buf` (without the
    /// FCS) and whether its FCS matched.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<(usize, bool)> {
        let n = self.sock.recv(buf)?;
        let Some(len) = n.checked_sub(FCS_LEN) else {
            return Ok((0, false));
        };
        let fcs = u32::from_le_bytes(buf[len..n].try_into().expect("four bytes"));
        Ok((len, crc32fast::hash(&buf[..len]) == fcs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        (buf[..n].to_vec(), ok)
    }

    #[test]
    fn two_ends_exchange_frames() {
        let (wa, wb, dir) = pair("exchange");
        wa.send(b"frame from a");
        assert_eq!(recv(&wb), (b"frame from a".to_vec(), true));
        std::fs::remove_file(dir.join("b")).unwrap();
        wa.send(b"lost");
        assert_eq!(wa.send_errors.load(Ordering::Relaxed), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn impairments_drop_corrupt_duplicate_and_reorder() {
        let (wa, wb, dir) = pair("impair");
        assert!(!wa.impair("drop", 1001));
        assert!(!wa.impair("melt", 1));

        assert!(wa.impair("corrupt", 1000));
        wa.send(b"damaged");
        let (frame, ok) = recv(&wb);
        assert!(!ok && frame != b"damaged" && frame.len() == 7);
        assert!(wa.impair("corrupt", 0));

        assert!(wa.impair("dup", 1000));
        wa.send(b"twice");
        assert_eq!(recv(&wb), (b"twice".to_vec(), true));
        assert_eq!(recv(&wb), (b"twice".to_vec(), true));
        assert!(wa.impair("dup", 0));

        assert!(wa.impair("reorder", 1000));
        wa.send(b"first");
        wa.send(b"second");
        assert_eq!(recv(&wb).0, b"second");
        assert_eq!(recv(&wb).0, b"first");
        // A frame held back when reordering stops goes out then.
        wa.send(b"held");
        assert!(wa.impair("reorder", 0));
        assert_eq!(recv(&wb).0, b"held");

        assert!(wa.impair("drop", 1000));
        wa.send(b"gone");
        assert!(wa.impair("drop", 0));
        wa.send(b"after");
        assert_eq!(recv(&wb).0, b"after");

        let s = wa.impairment_stats();
        assert_eq!(
            (s.corrupted, s.duplicated, s.reordered, s.dropped),
            (1, 1, 2, 1)
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
