// SPDX-License-Identifier: GPL-2.0

//! A queue pair of the synthetic NIC: TX ring, RX ring, their completion
//! queue, its NAPI context and interrupt.
//!
//! TX copies each frame into a per-slot buffer in DMA memory, so the skb
//! is freed at once; RX copies each filled buffer into a fresh skb and
//! gives the buffer straight back to the card. Everything the card writes
//! (completion index, length) is checked before use; a bad completion is
//! counted and skipped, never followed.

use kernel::{
    new_spinlock,
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc, SpinLock,
    },
};

use crate::hw::{self, regs, Cqe, RxDesc, TxDesc, CQ_ARM};
use crate::kext::{
    dma_alloc::DmaAllocator,
    dma_buf::DmaBuffer,
    msix::IrqHandler,
    napi::{Napi, NapiPoll},
    netdev::{NetDev, NetDevRef},
    skb::SkBuff,
};
use crate::nic::Nic;
use crate::regs::Registers;
use crate::ring::{RingIndex, RingSize};

/// Counters of one queue pair.
pub(crate) struct QueueStats {
    pub(crate) tx_packets: Atomic<u64>,
    pub(crate) tx_bytes: Atomic<u64>,
    pub(crate) tx_dropped: Atomic<u64>,
    pub(crate) tx_busy: Atomic<u64>,
    pub(crate) rx_packets: Atomic<u64>,
    pub(crate) rx_bytes: Atomic<u64>,
    pub(crate) rx_dropped: Atomic<u64>,
    /// Completions with an index or length the driver did not expect.
    pub(crate) bad_completions: Atomic<u64>,
}

impl QueueStats {
    fn new() -> Self {
        Self {
            tx_packets: Atomic::new(0),
            tx_bytes: Atomic::new(0),
            tx_dropped: Atomic::new(0),
            tx_busy: Atomic::new(0),
            rx_packets: Atomic::new(0),
            rx_bytes: Atomic::new(0),
            rx_dropped: Atomic::new(0),
            bad_completions: Atomic::new(0),
        }
    }
}

fn bump(counter: &Atomic<u64>, by: u64) {
    counter.fetch_add(by, Relaxed);
}

/// Sizes of one queue pair's rings and buffers.
#[derive(Clone, Copy, Debug)]
pub(crate) struct QueueGeometry {
    /// TX ring entries.
    pub(crate) tx: RingSize,
    /// RX ring entries.
    pub(crate) rx: RingSize,
    /// Bytes per TX or RX buffer: the largest frame for the MTU.
    pub(crate) buf_len: usize,
}

impl QueueGeometry {
    fn cq_entries(&self) -> u32 {
        (u32::from(self.tx.get()) + u32::from(self.rx.get())).next_power_of_two()
    }
}

struct TxRing {
    desc: DmaBuffer,
    bufs: DmaBuffer,
    size: RingSize,
    /// Oldest descriptor the card has not completed.
    head: RingIndex,
    /// Next free descriptor.
    tail: RingIndex,
}

impl TxRing {
    fn in_flight(&self) -> u16 {
        self.size.distance(self.head, self.tail)
    }

    /// Free descriptors; one stays unused so full and empty differ.
    fn free(&self) -> u16 {
        self.size.get() - 1 - self.in_flight()
    }
}

struct RxRing {
    desc: DmaBuffer,
    bufs: DmaBuffer,
    size: RingSize,
    /// Next buffer the card fills.
    head: RingIndex,
    /// Next descriptor to post.
    tail: RingIndex,
}

struct CompletionQueue {
    mem: DmaBuffer,
    entries: u32,
    head: u32,
    phase: bool,
}

/// The rings of a running queue pair.
struct Rings {
    tx: TxRing,
    rx: RxRing,
    cq: CompletionQueue,
    buf_len: usize,
    tx_csum: bool,
}

/// One queue pair and its interrupt vector.
#[pin_data]
pub(crate) struct QueueVector {
    index: u16,
    regs: Arc<Registers>,
    dev: NetDevRef<Nic>,
    #[pin]
    napi: Napi,
    #[pin]
    rings: SpinLock<Option<Rings>>,
    /// Counters (they survive down/up).
    pub(crate) stats: QueueStats,
}

impl QueueVector {
    /// Queue pair `index` of `dev`, stopped.
    pub(crate) fn new(index: u16, regs: Arc<Registers>, dev: NetDevRef<Nic>) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(&this in Self {
                index,
                regs,
                // SAFETY: The NAPI context is a field of `this`, so its owner
                // outlives it; the `QueueVector` lives in the device's `Nic`,
                // which is dropped before the device is freed.
                napi <- unsafe { Napi::new(dev.get(), this.as_ptr().cast_const()) },
                dev,
                rings <- new_spinlock!(None),
                stats: QueueStats::new(),
            }),
            GFP_KERNEL,
        )
    }

    fn doorbell(&self, reg: usize, value: u32) {
        let offset = regs::QP_DOORBELLS + usize::from(self.index) * regs::QP_DOORBELL_STRIDE + reg;
        // A failed write means the device is gone; the queue stalls and the
        // TX watchdog reports it.
        let _ = self.regs.write(offset, value);
    }

    /// The admin command that hands these rings to the card.
    fn create_cmd(&self, rings: &Rings) -> Result<hw::QpConfig> {
        Ok(hw::QpConfig {
            qp: self.index,
            vector: hw::qp_vector(self.index),
            tx_entries: rings.tx.size.get(),
            rx_entries: rings.rx.size.get(),
            tx_ring: rings.tx.desc.dma_addr(0)?,
            rx_ring: rings.rx.desc.dma_addr(0)?,
            cq: rings.cq.mem.dma_addr(0)?,
            cq_entries: rings.cq.entries,
        })
    }

    /// Allocates rings of `geo` and returns the card's create command; the
    /// queue runs once the card accepted it and [`QueueVector::start`] ran.
    pub(crate) fn prepare(
        &self,
        dma: &DmaAllocator,
        geo: QueueGeometry,
        tx_csum: bool,
    ) -> Result<hw::QpConfig> {
        let (tx_n, rx_n) = (usize::from(geo.tx.get()), usize::from(geo.rx.get()));
        let cq_entries = geo.cq_entries();
        let rx = RxRing {
            desc: dma.alloc(rx_n * RxDesc::SIZE)?,
            bufs: dma.alloc(rx_n * geo.buf_len)?,
            size: geo.rx,
            head: RingIndex::default(),
            tail: RingIndex::default(),
        };
        let rings = Rings {
            tx: TxRing {
                desc: dma.alloc(tx_n * TxDesc::SIZE)?,
                bufs: dma.alloc(tx_n * geo.buf_len)?,
                size: geo.tx,
                head: RingIndex::default(),
                tail: RingIndex::default(),
            },
            rx,
            cq: CompletionQueue {
                mem: dma.alloc(cq_entries as usize * Cqe::SIZE)?,
                entries: cq_entries,
                head: 0,
                phase: true,
            },
            buf_len: geo.buf_len,
            tx_csum,
        };
        let cmd = self.create_cmd(&rings)?;
        *self.rings.lock() = Some(rings);
        Ok(cmd)
    }

    /// Posts every RX buffer, enables NAPI and arms the interrupt.
    pub(crate) fn start(&self) -> Result {
        {
            let mut guard = self.rings.lock();
            let rings = (*guard).as_mut().ok_or(EINVAL)?;
            let rx = &mut rings.rx;
            for _ in 0..rx.size.get() - 1 {
                post_rx(rx, rings.buf_len)?;
            }
            self.doorbell(regs::DB_RX_TAIL, u32::from(rx.tail.get()));
        }
        self.napi.enable();
        self.doorbell(regs::DB_CQ_HEAD, CQ_ARM);
        Ok(())
    }

    /// Stops polling and frees the rings (the card's queue must be
    /// destroyed first, or the device reset).
    pub(crate) fn stop(&self, started: bool) {
        if started {
            self.napi.disable();
        }
        self.rings.lock().take();
    }

    /// Sends one frame on this queue pair.
    pub(crate) fn xmit(&self, dev: &NetDev<Nic>, mut skb: SkBuff) {
        let mut guard = self.rings.lock();
        let Some(rings) = &mut *guard else {
            bump(&self.stats.tx_dropped, 1);
            return;
        };
        let len = skb.len() as usize;
        if len > rings.buf_len || skb.linearize().is_err() {
            bump(&self.stats.tx_dropped, 1);
            return;
        }
        if rings.tx.free() == 0 {
            // The queue is stopped before the ring fills; this is a race
            // with a resize. Drop rather than ask the stack to retry.
            bump(&self.stats.tx_busy, 1);
            dev.tx_stop(self.index);
            return;
        }
        let tx = &mut rings.tx;
        let slot = usize::from(tx.tail.get());
        let mut desc = TxDesc {
            len: len as u32,
            flags: TxDesc::EOP,
            ..TxDesc::default()
        };
        if let Some(csum) = skb.csum_request().filter(|_| rings.tx_csum) {
            desc.flags |= TxDesc::CSUM;
            desc.csum_start = csum.start;
            desc.csum_offset = csum.offset;
        }
        let copied = tx.bufs.dma_addr(slot * rings.buf_len).and_then(|addr| {
            desc.addr = addr;
            tx.bufs.write(slot * rings.buf_len, skb.linear_data())?;
            tx.desc.write(slot * TxDesc::SIZE, &desc.to_bytes())
        });
        if copied.is_err() {
            bump(&self.stats.tx_dropped, 1);
            return;
        }
        tx.tail = tx.size.next(tx.tail);
        bump(&self.stats.tx_packets, 1);
        bump(&self.stats.tx_bytes, len as u64);
        if tx.free() == 0 {
            dev.tx_stop(self.index);
        }
        let tail = tx.tail.get();
        drop(guard);
        skb.consume();
        self.doorbell(regs::DB_TX_TAIL, u32::from(tail));
    }

    /// Handles the completion `cqe`; returns whether it was a received frame.
    fn complete(&self, rings: &mut Rings, cqe: Cqe) -> bool {
        if cqe.flags & Cqe::RX == 0 {
            let tx = &mut rings.tx;
            match tx.size.index(cqe.index) {
                Some(last) if tx.size.distance(tx.head, last) < tx.in_flight() => {
                    tx.head = tx.size.next(last);
                }
                _ => bump(&self.stats.bad_completions, 1),
            }
            return false;
        }
        let rx = &mut rings.rx;
        let len = cqe.len as usize;
        if rx.size.index(cqe.index) != Some(rx.head) || len < 14 || len > rings.buf_len {
            bump(&self.stats.bad_completions, 1);
            return false;
        }
        let offset = usize::from(rx.head.get()) * rings.buf_len;
        rx.head = rx.size.next(rx.head);
        let skb = SkBuff::alloc_rx(&self.napi, len as u32).and_then(|mut skb| {
            skb.put_from_dma(&rx.bufs, offset, len).ok()?;
            Some(skb)
        });
        match skb {
            Some(skb) => {
                bump(&self.stats.rx_packets, 1);
                bump(&self.stats.rx_bytes, len as u64);
                skb.receive(&self.napi, self.index);
            }
            None => bump(&self.stats.rx_dropped, 1),
        }
        // The buffer's data is copied out: give it back to the card.
        if post_rx(rx, rings.buf_len).is_err() {
            bump(&self.stats.rx_dropped, 1);
        }
        true
    }
}

/// Writes the descriptor for the buffer at the RX tail and advances it.
fn post_rx(rx: &mut RxRing, buf_len: usize) -> Result {
    let slot = usize::from(rx.tail.get());
    let desc = RxDesc {
        addr: rx.bufs.dma_addr(slot * buf_len)?,
        len: buf_len as u32,
    };
    rx.desc.write(slot * RxDesc::SIZE, &desc.to_bytes())?;
    rx.tail = rx.size.next(rx.tail);
    Ok(())
}

fn read_cqe(cq: &CompletionQueue) -> Option<Cqe> {
    let mut raw = [0u8; Cqe::SIZE];
    cq.mem.read(cq.head as usize * Cqe::SIZE, &mut raw).ok()?;
    let cqe = Cqe::from_bytes(&raw);
    (((cqe.flags & Cqe::PHASE) != 0) == cq.phase).then_some(cqe)
}

impl NapiPoll for QueueVector {
    fn poll(&self, _napi: &Napi, budget: u32) -> u32 {
        let dev = self.dev.get();
        let mut received = 0;
        let (head, wake) = {
            let mut guard = self.rings.lock();
            let Some(rings) = &mut *guard else {
                return 0;
            };
            let rx_tail_before = rings.rx.tail;
            while received < budget {
                let Some(cqe) = read_cqe(&rings.cq) else {
                    break;
                };
                rings.cq.head += 1;
                if rings.cq.head == rings.cq.entries {
                    rings.cq.head = 0;
                    rings.cq.phase = !rings.cq.phase;
                }
                if self.complete(rings, cqe) {
                    received += 1;
                }
            }
            if rings.rx.tail != rx_tail_before {
                self.doorbell(regs::DB_RX_TAIL, u32::from(rings.rx.tail.get()));
            }
            (rings.cq.head, rings.tx.free() > 0)
        };
        if wake && dev.tx_stopped(self.index) {
            dev.tx_wake(self.index);
        }
        if received < budget && self.napi.complete_done(received) {
            self.doorbell(regs::DB_CQ_HEAD, head | CQ_ARM);
        } else {
            self.doorbell(regs::DB_CQ_HEAD, head);
        }
        received
    }
}

/// The interrupt handler of a queue pair's vector: schedules its NAPI.
#[pin_data]
pub(crate) struct QueueIrq {
    queue: Arc<QueueVector>,
}

impl QueueIrq {
    /// The handler for `queue`.
    pub(crate) fn new(queue: Arc<QueueVector>) -> impl PinInit<Self, Error> {
        try_pin_init!(Self { queue }? Error)
    }
}

impl IrqHandler for QueueIrq {
    fn handle(&self) -> bool {
        self.queue.napi.schedule();
        true
    }
}
