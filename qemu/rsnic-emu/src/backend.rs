// SPDX-License-Identifier: GPL-2.0

//! The vfio-user face of a function: regions and interrupts as QEMU sees
//! them, routed to [`Function`].

use std::fs::File;
use std::io;
use std::mem::size_of;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use log::{debug, info};
use vfio_bindings::bindings::vfio::{
    vfio_region_info, vfio_region_sparse_mmap_area, VFIO_IRQ_INFO_EVENTFD,
    VFIO_IRQ_SET_DATA_EVENTFD, VFIO_IRQ_SET_DATA_NONE, VFIO_PCI_BAR0_REGION_INDEX,
    VFIO_PCI_BAR2_REGION_INDEX, VFIO_PCI_CONFIG_REGION_INDEX, VFIO_PCI_ERR_IRQ_INDEX,
    VFIO_PCI_MSIX_IRQ_INDEX, VFIO_PCI_NUM_IRQS, VFIO_PCI_NUM_REGIONS, VFIO_REGION_INFO_FLAG_MMAP,
    VFIO_REGION_INFO_FLAG_READ, VFIO_REGION_INFO_FLAG_WRITE,
};
use vfio_user::{DmaMapFlags, DmaUnmapFlags, IrqInfo, ServerBackend, ServerRegion, SparseArea};

use crate::card::Card;
use crate::config_space::CONFIG_SPACE_SIZE;
use crate::doorbell_page::PollWindow;
use crate::function::Function;
use crate::hw::{self, QpDoorbell, MAX_QUEUE_PAIRS};
use std::sync::{Arc, Mutex};

/// Region table: config space, BAR0 (registers), the MSI-X BAR and the
/// user doorbell BAR, whose device-memory part QEMU maps from `dm_fd`
/// (the PF's device memory file; a VF has none, and the part reads as
/// zeros).
pub fn region_infos(dm_fd: Option<RawFd>) -> Vec<ServerRegion> {
    (0..VFIO_PCI_NUM_REGIONS)
        .map(|index| {
            let size = match index {
                VFIO_PCI_CONFIG_REGION_INDEX => CONFIG_SPACE_SIZE,
                VFIO_PCI_BAR0_REGION_INDEX => hw::BAR0_SIZE,
                i if i == hw::MSIX_BAR => hw::MSIX_BAR_SIZE,
                i if i == hw::rdma::udb::BAR => hw::rdma::udb::BAR_SIZE,
                _ => 0,
            };
            let flags = if size > 0 {
                VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE
            } else {
                0
            };
            let dm_fd = dm_fd.filter(|_| index == hw::rdma::udb::BAR);
            let mut flags = flags;
            if dm_fd.is_some() {
                flags |= VFIO_REGION_INFO_FLAG_MMAP;
            }
            ServerRegion {
                region_info: vfio_region_info {
                    argsz: size_of::<vfio_region_info>() as u32,
                    index,
                    size: size as u64,
                    flags,
                    // The file is the BAR's size: offsets match.
                    offset: 0,
                    ..Default::default()
                },
                sparse_areas: dm_fd
                    .map(|_| {
                        vec![SparseArea {
                            area: vfio_region_sparse_mmap_area {
                                offset: hw::rdma::dm::BAR_OFFSET as u64,
                                size: hw::rdma::dm::SIZE as u64,
                            },
                        }]
                    })
                    .unwrap_or_default(),
                mmap_fd: dm_fd,
            }
        })
        .collect()
}

/// Interrupt table: MSI-X, plus the error-reporting eventfd QEMU asks for
/// (the card never signals it). No INTx, no MSI.
pub fn irq_infos(vectors: u16) -> Vec<IrqInfo> {
    (0..VFIO_PCI_NUM_IRQS)
        .map(|index| {
            let count = match index {
                VFIO_PCI_MSIX_IRQ_INDEX => u32::from(vectors),
                VFIO_PCI_ERR_IRQ_INDEX => 1,
                _ => 0,
            };
            IrqInfo {
                index,
                count,
                flags: if count > 0 { VFIO_IRQ_INFO_EVENTFD } else { 0 },
            }
        })
        .collect()
}

/// Adapts a [`Function`] to the `vfio_user` crate's server loop.
///
/// The function is shared with the wire's receive thread and the control
/// socket, so every access takes its lock.
pub struct Backend {
    func: Arc<Mutex<Function>>,
    /// The port of the card's switch the function sits on.
    port: u16,
    card: Arc<Card>,
    /// How long the card polls the doorbell page after a kick, once no
    /// tail moves.
    poll: PollWindow,
}

impl Backend {
    /// Serves `func`, one of `card`'s functions, which passes on what it
    /// sends; after a TX kick the card polls the doorbell page until no
    /// tail has moved for `poll_budget`.
    pub fn new(func: Arc<Mutex<Function>>, card: Arc<Card>, poll_budget: Duration) -> Self {
        let port = func.lock().unwrap_or_else(|e| e.into_inner()).switch_port();
        Self {
            func,
            port,
            card,
            poll: PollWindow::new(poll_budget),
        }
    }

    /// After a TX kick: follows the doorbell page's TX tails, a batch at
    /// a time, until none moved for the poll window; then tells the
    /// driver the card sleeps (it rings again) and looks once more, since
    /// a tail written just before is the card's to take. Runs on the
    /// vfio-user thread: run to completion, no hand-off; QEMU's next
    /// message waits at most one budget. Yields the CPU between looks (on
    /// two cores the vCPUs need it).
    fn poll_doorbell_page(&mut self) {
        if !self.func().polls_doorbell_page() {
            return;
        }
        let budget = self.poll.on_kick(Instant::now(), self.card.rx_batches());
        self.func().set_card_polling(true);
        let mut idle_since = Instant::now();
        loop {
            // Each look compares the page's tails with those the queue
            // pairs last took, and follows any that moved.
            let (frames, moved) = self.func().poll_tx_tails();
            self.card.transmit(self.port, frames);
            if moved {
                idle_since = Instant::now();
                self.poll.on_caught();
            } else if idle_since.elapsed() >= budget {
                // The last look, after saying so: a tail written before
                // the word changed is this look's to take.
                self.func().set_card_polling(false);
                let (frames, moved) = self.func().poll_tx_tails();
                self.card.transmit(self.port, frames);
                if !moved {
                    self.poll.on_end(Instant::now());
                    return;
                }
                self.func().set_card_polling(true);
                idle_since = Instant::now();
                self.poll.on_caught();
                continue;
            }
            std::thread::yield_now();
        }
    }

    /// Whether BAR0 offset `offset` is a TX tail doorbell.
    fn is_tx_kick(offset: usize) -> bool {
        (0..MAX_QUEUE_PAIRS).any(|qp| QpDoorbell::TxTail.offset(qp) == offset)
    }

    /// Whether this is the card's PF (the one with device memory).
    fn is_pf(&self) -> bool {
        Arc::ptr_eq(&self.func, self.card.pf())
    }

    fn func(&self) -> std::sync::MutexGuard<'_, Function> {
        self.func.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Splits an access to a BAR of `size` bytes into naturally aligned
    /// 32-bit register accesses.
    fn dwords(offset: u64, len: usize, size: usize) -> io::Result<std::ops::Range<usize>> {
        let start =
            usize::try_from(offset).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        if !start.is_multiple_of(4) || !len.is_multiple_of(4) || start + len > size {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "register accesses are aligned dwords",
            ));
        }
        Ok(start..start + len)
    }
}

impl ServerBackend for Backend {
    fn region_read(&mut self, region: u32, offset: u64, data: &mut [u8]) -> io::Result<()> {
        match region {
            VFIO_PCI_CONFIG_REGION_INDEX => self.func().config.read(offset, data),
            VFIO_PCI_BAR0_REGION_INDEX => {
                let range = Self::dwords(offset, data.len(), hw::BAR0_SIZE)?;
                let mut func = self.func();
                for (chunk, reg) in data.chunks_exact_mut(4).zip(range.step_by(4)) {
                    chunk.copy_from_slice(&func.read_reg(reg).to_le_bytes());
                }
            }
            // QEMU emulates the MSI-X table; the PBA reads as nothing pending.
            VFIO_PCI_BAR2_REGION_INDEX => data.fill(0),
            // Doorbells are write-only; device memory, if QEMU did not map
            // it, is read here.
            i if i == hw::rdma::udb::BAR => {
                let dm = offset.checked_sub(hw::rdma::dm::BAR_OFFSET as u64);
                match (dm, self.card.device_memory()) {
                    (Some(at), Some(mem)) if self.is_pf() => {
                        if mem.read(at, data).is_err() {
                            data.fill(0xff);
                        }
                    }
                    _ => data.fill(0),
                }
            }
            _ => data.fill(0xff),
        }
        Ok(())
    }

    fn region_write(&mut self, region: u32, offset: u64, data: &[u8]) -> io::Result<()> {
        match region {
            VFIO_PCI_CONFIG_REGION_INDEX => self.func().config.write(offset, data),
            VFIO_PCI_BAR0_REGION_INDEX => {
                let range = Self::dwords(offset, data.len(), hw::BAR0_SIZE)?;
                let kick = Self::is_tx_kick(range.start);
                let mut frames = Vec::new();
                let mut func = self.func();
                for (chunk, reg) in data.chunks_exact(4).zip(range.step_by(4)) {
                    let value = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
                    frames.extend(func.write_reg(reg, value));
                }
                drop(func);
                self.card.transmit(self.port, frames);
                if kick {
                    self.poll_doorbell_page();
                }
            }
            i if i == hw::rdma::udb::BAR && offset >= hw::rdma::dm::BAR_OFFSET as u64 => {
                if let (true, Some(mem)) = (self.is_pf(), self.card.device_memory()) {
                    let _ = mem.write(offset - hw::rdma::dm::BAR_OFFSET as u64, data);
                }
            }
            i if i == hw::rdma::udb::BAR => {
                let range = Self::dwords(offset, data.len(), hw::rdma::udb::PAGES_SIZE)?;
                let mut frames = Vec::new();
                let mut func = self.func();
                for (chunk, reg) in data.chunks_exact(4).zip(range.step_by(4)) {
                    let value = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
                    frames.extend(func.write_user_doorbell(reg, value));
                }
                drop(func);
                self.card.transmit(self.port, frames);
            }
            _ => {}
        }
        Ok(())
    }

    fn dma_map(
        &mut self,
        flags: DmaMapFlags,
        offset: u64,
        address: u64,
        size: u64,
        fd: Option<File>,
    ) -> io::Result<()> {
        debug!("dma_map {flags:?} addr={address:#x} size={size:#x} offset={offset:#x}");
        match fd {
            Some(fd) => self.func().dma.map(address, size, &fd, offset),
            // Memory QEMU cannot share (no fd) is simply not reachable by DMA.
            None => Ok(()),
        }
    }

    fn dma_unmap(&mut self, _flags: DmaUnmapFlags, address: u64, size: u64) -> io::Result<()> {
        debug!("dma_unmap addr={address:#x} size={size:#x}");
        self.func().dma.unmap(address, size);
        Ok(())
    }

    fn reset(&mut self) -> io::Result<()> {
        info!("device reset from QEMU");
        self.func().reset();
        Ok(())
    }

    fn set_irqs(
        &mut self,
        index: u32,
        flags: u32,
        start: u32,
        count: u32,
        fds: Vec<File>,
    ) -> io::Result<()> {
        debug!(
            "set_irqs index={index} flags={flags:#x} start={start} count={count} fds={}",
            fds.len()
        );
        if index != VFIO_PCI_MSIX_IRQ_INDEX {
            return Ok(());
        }
        if flags & VFIO_IRQ_SET_DATA_EVENTFD != 0 {
            self.func().msix.connect(start, count, fds);
        } else if flags & VFIO_IRQ_SET_DATA_NONE != 0 && count == 0 {
            self.func().msix.disconnect_all();
        }
        Ok(())
    }
}
