// SPDX-License-Identifier: GPL-2.0

//! MSI-X vectors: the eventfds QEMU hands the card through `set_irqs`.

use std::fs::File;
use std::io::Write;

use log::warn;

/// The eventfd behind each MSI-X vector, if QEMU connected one.
pub struct MsixVectors {
    fds: Vec<Option<File>>,
}

impl MsixVectors {
    /// A function with `count` vectors, none connected yet.
    pub fn new(count: u16) -> Self {
        Self {
            fds: (0..count).map(|_| None).collect(),
        }
    }

    /// Number of vectors the function implements.
    pub fn count(&self) -> u32 {
        self.fds.len() as u32
    }

    /// Connects vectors `start..start + fds.len()`; a shorter `fds` than
    /// `count` disconnects the rest of `start..start + count`.
    pub fn connect(&mut self, start: u32, count: u32, fds: Vec<File>) {
        let mut fds = fds.into_iter();
        for v in start..start.saturating_add(count) {
            if let Some(slot) = self.fds.get_mut(v as usize) {
                *slot = fds.next();
            }
        }
    }

    /// Disconnects every vector.
    pub fn disconnect_all(&mut self) {
        self.fds.iter_mut().for_each(|f| *f = None);
    }

    /// Raises `vector`. Returns false if it does not exist or is not connected.
    pub fn raise(&mut self, vector: u32) -> bool {
        let Some(Some(fd)) = self.fds.get_mut(vector as usize) else {
            return false;
        };
        match fd.write_all(&1u64.to_ne_bytes()) {
            Ok(()) => true,
            Err(e) => {
                warn!("MSI-X vector {vector}: eventfd write failed: {e}");
                false
            }
        }
    }
}
