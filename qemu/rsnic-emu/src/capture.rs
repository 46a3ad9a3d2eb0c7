// SPDX-License-Identifier: GPL-2.0

//! A packet capture of one end of the cable, as a pcap file any standard
//! tool reads (tcpdump, tshark).
//!
//! The card's RoCE traffic never crosses the host's netdev, so a capture
//! in the guest cannot see it; this is the tap on the wire instead. Frames
//! are written as they leave (after the impairments) and as they arrive
//! (damaged ones included), without their FCS.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use pcap_file::pcap::{PcapPacket, PcapWriter};

/// An open capture file and the frames written to it.
struct Open {
    writer: PcapWriter<BufWriter<File>>,
    frames: u64,
}

/// A tap on the wire: off, or writing every frame to a pcap file.
#[derive(Default)]
pub struct Capture {
    open: Mutex<Option<Open>>,
    /// Whether a capture runs (read without the lock, per frame).
    on: AtomicBool,
}

impl Capture {
    fn lock(&self) -> MutexGuard<'_, Option<Open>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts writing to `path` (created or truncated); a capture already
    /// running is finished first.
    pub fn start(&self, path: &Path) -> io::Result<()> {
        let writer = PcapWriter::new(BufWriter::new(File::create(path)?))
            .map_err(|e| io::Error::other(e.to_string()))?;
        let old = {
            let mut open = self.lock();
            self.on.store(true, Ordering::Relaxed);
            open.replace(Open { writer, frames: 0 })
        };
        if let Some(old) = old {
            finish(old)?;
        }
        Ok(())
    }

    /// Whether a capture runs.
    pub fn is_on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    /// Finishes the capture (the file is complete when this returns);
    /// returns the number of frames written, or `None` if none was running.
    pub fn stop(&self) -> io::Result<Option<u64>> {
        let open = {
            let mut open = self.lock();
            self.on.store(false, Ordering::Relaxed);
            open.take()
        };
        match open {
            Some(open) => finish(open).map(Some),
            None => Ok(None),
        }
    }

    /// Records one frame (without FCS), if a capture is running. A frame
    /// that cannot be written is left out; the wire does not wait for it.
    pub fn record(&self, frame: &[u8]) {
        if !self.is_on() {
            return;
        }
        let mut guard = self.lock();
        let Some(open) = guard.as_mut() else {
            return;
        };
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let len = u32::try_from(frame.len()).unwrap_or(u32::MAX);
        if open
            .writer
            .write_packet(&PcapPacket::new(now, len, frame))
            .is_ok()
        {
            open.frames += 1;
        }
    }
}

fn finish(open: Open) -> io::Result<u64> {
    open.writer.into_writer().flush()?;
    Ok(open.frames)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use pcap_file::pcap::PcapReader;

    /// The frames of the pcap file at `path`, in order.
    pub(crate) fn read_frames(path: &Path) -> Vec<Vec<u8>> {
        let mut reader = PcapReader::new(File::open(path).unwrap()).unwrap();
        let mut frames = Vec::new();
        while let Some(packet) = reader.next_packet() {
            frames.push(packet.unwrap().data.into_owned());
        }
        frames
    }

    #[test]
    fn frames_recorded_while_running_are_read_back() {
        let path = std::env::temp_dir().join(format!("rsnic-capture-{}.pcap", std::process::id()));
        let tap = Capture::default();
        tap.record(b"before the capture");
        assert_eq!(tap.stop().unwrap(), None);
        tap.start(&path).unwrap();
        tap.record(b"first frame");
        tap.record(b"second");
        assert_eq!(tap.stop().unwrap(), Some(2));
        tap.record(b"after the capture");

        let reader = PcapReader::new(File::open(&path).unwrap()).unwrap();
        assert_eq!(
            reader.header().datalink,
            pcap_file::DataLink::ETHERNET,
            "tcpdump must decode the frames as Ethernet"
        );
        assert_eq!(
            read_frames(&path),
            [b"first frame".to_vec(), b"second".to_vec()]
        );
        std::fs::remove_file(&path).unwrap();
    }
}
