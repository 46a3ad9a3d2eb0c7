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
        barrier::smp_rmb,
        Arc, SpinLock,
    },
};

use crate::hw::{self, regs, Cqe, RxDesc, TxDesc, CQ_ARM};
use crate::kext::{
    dma_alloc::DmaAllocator,
    dma_buf::DmaBuffer,
    msix::IrqHandler,
    napi::{Napi, NapiPoll, WithNapi},
    netdev::{NetDev, NetDevRef, QueueCounters},
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

/// A descriptor ring with one DMA buffer per slot, as both TX and RX use.
struct Ring {
    desc: DmaBuffer,
    bufs: DmaBuffer,
    /// Bytes of each slot's buffer.
    buf_len: usize,
    size: RingSize,
    /// TX: oldest descriptor the card has not completed. RX: next buffer
    /// the card fills.
    head: RingIndex,
    /// Next descriptor to post.
    tail: RingIndex,
}

impl Ring {
    /// A ring of `size` descriptors of `desc_size` bytes, each slot with a
    /// `buf_len`-byte buffer.
    fn alloc(dma: &DmaAllocator, size: RingSize, desc_size: usize, buf_len: usize) -> Result<Self> {
        let n = usize::from(size.get());
        Ok(Self {
            desc: dma.alloc(n * desc_size)?,
            bufs: dma.alloc(n * buf_len)?,
            buf_len,
            size,
            head: RingIndex::default(),
            tail: RingIndex::default(),
        })
    }

    /// Offset of slot `i`'s buffer in `bufs`.
    fn buf_offset(&self, i: RingIndex) -> usize {
        usize::from(i.get()) * self.buf_len
    }

    fn in_flight(&self) -> u16 {
        self.size.distance(self.head, self.tail)
    }

    /// Free descriptors; one stays unused so full and empty differ.
    fn free(&self) -> u16 {
        self.size.get() - 1 - self.in_flight()
    }
}

struct CompletionQueue {
    mem: DmaBuffer,
    entries: u32,
    head: u32,
    phase: bool,
}

impl CompletionQueue {
    /// Moves past the entry at `head`, flipping the expected phase at the wrap.
    fn advance(&mut self) {
        self.head += 1;
        if self.head == self.entries {
            self.head = 0;
            self.phase = !self.phase;
        }
    }
}

/// The TX side of a running queue pair (xmit and TX completions).
struct TxState {
    ring: Ring,
    csum: bool,
}

/// The completion queue and RX side of a running queue pair (NAPI only).
struct RxState {
    cq: CompletionQueue,
    ring: Ring,
}

/// One queue pair and its interrupt vector: the pair with the NAPI
/// context that polls it.
pub(crate) type QueueVector = WithNapi<QueuePair>;

/// One queue pair: its rings and counters.
#[pin_data]
pub(crate) struct QueuePair {
    index: u16,
    regs: Arc<Registers>,
    dev: NetDevRef<Nic>,
    /// Lock order: `rx` before `tx`. The stack may transmit from inside
    /// RX delivery (an echo reply), so `tx` is never held across delivery.
    #[pin]
    rx: SpinLock<Option<RxState>>,
    #[pin]
    tx: SpinLock<Option<TxState>>,
    /// Counters (they survive down/up).
    pub(crate) stats: QueueStats,
}

impl WithNapi<QueuePair> {
    /// Queue pair `index` of `dev`, stopped. Keep it in the device's `Nic`.
    pub(crate) fn new_queue(
        index: u16,
        regs: Arc<Registers>,
        dev: NetDevRef<Nic>,
    ) -> Result<Arc<Self>> {
        let pair_dev = dev.clone();
        let pair = try_pin_init!(QueuePair {
            index,
            regs,
            dev: pair_dev,
            rx <- new_spinlock!(None),
            tx <- new_spinlock!(None),
            stats: QueueStats::new(),
        }? Error);
        Arc::pin_init(WithNapi::new(&dev, u32::from(index), pair), GFP_KERNEL)
    }

    /// Records the IRQ of this pair's vector in its NAPI context.
    pub(crate) fn set_irq(&self, irq: u32) {
        self.napi().set_irq(irq);
    }

    /// Posts every RX buffer, enables NAPI and arms the interrupt.
    pub(crate) fn start(&self) -> Result {
        {
            let mut guard = self.rx.lock();
            let rx = (*guard).as_mut().ok_or(EINVAL)?;
            for _ in 0..rx.ring.size.get() - 1 {
                post_rx(&mut rx.ring)?;
            }
            self.doorbell(regs::DB_RX_TAIL, u32::from(rx.ring.tail.get()));
        }
        self.napi().enable();
        self.napi().link_queue(u32::from(self.index), true);
        self.doorbell(regs::DB_CQ_HEAD, CQ_ARM);
        Ok(())
    }

    /// Stops polling and frees the rings (the card's queue must be
    /// destroyed first, or the device reset).
    pub(crate) fn stop(&self, started: bool) {
        if started {
            self.napi().link_queue(u32::from(self.index), false);
            self.napi().disable();
        }
        self.rx.lock().take();
        self.tx.lock().take();
    }
}

impl QueuePair {
    /// RX and TX packet/byte counters, for qstats.
    pub(crate) fn counters(&self) -> (QueueCounters, QueueCounters) {
        let s = &self.stats;
        (
            QueueCounters {
                packets: s.rx_packets.load(Relaxed),
                bytes: s.rx_bytes.load(Relaxed),
            },
            QueueCounters {
                packets: s.tx_packets.load(Relaxed),
                bytes: s.tx_bytes.load(Relaxed),
            },
        )
    }

    fn doorbell(&self, reg: usize, value: u32) {
        let offset = regs::QP_DOORBELLS + usize::from(self.index) * regs::QP_DOORBELL_STRIDE + reg;
        // A failed write means the device is gone; the queue stalls and the
        // TX watchdog reports it.
        let _ = self.regs.write(offset, value);
    }

    /// Allocates rings of `geo` and returns the card's create command; the
    /// queue runs once the card accepted it and [`QueueVector::start`] ran.
    pub(crate) fn prepare(
        &self,
        dma: &DmaAllocator,
        geo: QueueGeometry,
        tx_csum: bool,
    ) -> Result<hw::QpConfig> {
        let cq_entries = geo.cq_entries();
        let tx = TxState {
            ring: Ring::alloc(dma, geo.tx, TxDesc::SIZE, geo.buf_len)?,
            csum: tx_csum,
        };
        let rx = RxState {
            cq: CompletionQueue {
                mem: dma.alloc(cq_entries as usize * Cqe::SIZE)?,
                entries: cq_entries,
                head: 0,
                phase: true,
            },
            ring: Ring::alloc(dma, geo.rx, RxDesc::SIZE, geo.buf_len)?,
        };
        let cmd = hw::QpConfig {
            qp: self.index,
            vector: hw::qp_vector(self.index),
            tx_entries: geo.tx.get(),
            rx_entries: geo.rx.get(),
            tx_ring: tx.ring.desc.dma_addr(0)?,
            rx_ring: rx.ring.desc.dma_addr(0)?,
            cq: rx.cq.mem.dma_addr(0)?,
            cq_entries,
        };
        *self.rx.lock() = Some(rx);
        *self.tx.lock() = Some(tx);
        Ok(cmd)
    }

    /// Sends one frame on this queue pair.
    pub(crate) fn xmit(&self, dev: &NetDev<Nic>, mut skb: SkBuff) {
        let mut guard = self.tx.lock();
        let Some(state) = &mut *guard else {
            bump(&self.stats.tx_dropped, 1);
            return;
        };
        let len = skb.len() as usize;
        if len > state.ring.buf_len || skb.linearize().is_err() {
            bump(&self.stats.tx_dropped, 1);
            return;
        }
        if state.ring.free() == 0 {
            // The queue is stopped before the ring fills; this is a race
            // with a resize. Drop rather than ask the stack to retry.
            bump(&self.stats.tx_busy, 1);
            dev.tx_stop(self.index);
            return;
        }
        let tx = &mut state.ring;
        let slot = usize::from(tx.tail.get());
        let offset = tx.buf_offset(tx.tail);
        let mut desc = TxDesc {
            len: len as u32,
            flags: TxDesc::EOP,
            ..TxDesc::default()
        };
        if let Some(csum) = skb.csum_request().filter(|_| state.csum) {
            desc.flags |= TxDesc::CSUM;
            desc.csum_start = csum.start;
            desc.csum_offset = csum.offset;
        }
        let copied = tx.bufs.dma_addr(offset).and_then(|addr| {
            desc.addr = addr;
            tx.bufs.write(offset, skb.linear_data())?;
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

    /// Retires TX descriptors up to the one a TX completion names.
    /// Returns whether the ring has room again.
    fn complete_tx(&self, cqe: Cqe) -> bool {
        let mut guard = self.tx.lock();
        let Some(state) = &mut *guard else {
            return false;
        };
        let tx = &mut state.ring;
        match tx.size.index(cqe.index) {
            Some(last) if tx.size.distance(tx.head, last) < tx.in_flight() => {
                tx.head = tx.size.next(last);
            }
            _ => bump(&self.stats.bad_completions, 1),
        }
        tx.free() > 0
    }

    /// Hands the frame of an RX completion to the stack and re-posts its
    /// buffer. Runs with `rx` locked but `tx` free (the stack may transmit).
    fn complete_rx(&self, napi: &Napi, ring: &mut Ring, cqe: Cqe, rx_csum: bool) {
        let len = cqe.len as usize;
        if ring.size.index(cqe.index) != Some(ring.head) || len < 14 || len > ring.buf_len {
            bump(&self.stats.bad_completions, 1);
            return;
        }
        let offset = ring.buf_offset(ring.head);
        ring.head = ring.size.next(ring.head);
        let skb = SkBuff::alloc_rx(napi, len as u32).and_then(|mut skb| {
            skb.put_from_dma(&ring.bufs, offset, len).ok()?;
            if cqe.flags & Cqe::HASH != 0 {
                skb.set_hash(cqe.hash, cqe.flags & Cqe::HASH_L4 != 0);
            }
            if cqe.flags & Cqe::CSUM_OK != 0 && rx_csum {
                skb.set_csum_unnecessary();
            }
            Some(skb)
        });
        match skb {
            Some(skb) => {
                bump(&self.stats.rx_packets, 1);
                bump(&self.stats.rx_bytes, len as u64);
                skb.receive(napi, self.index);
            }
            None => bump(&self.stats.rx_dropped, 1),
        }
        // The buffer's data is copied out: give it back to the card.
        if post_rx(ring).is_err() {
            bump(&self.stats.rx_dropped, 1);
        }
    }
}

/// Writes the descriptor for the buffer at the RX tail and advances it.
fn post_rx(rx: &mut Ring) -> Result {
    let slot = usize::from(rx.tail.get());
    let desc = RxDesc {
        addr: rx.bufs.dma_addr(rx.buf_offset(rx.tail))?,
        len: rx.buf_len as u32,
    };
    rx.desc.write(slot * RxDesc::SIZE, &desc.to_bytes())?;
    rx.tail = rx.size.next(rx.tail);
    Ok(())
}

/// The next completion, if the card has written it.
///
/// The card writes an entry's flags word (with PHASE) last, so the driver
/// reads it first and the rest only after a read barrier.
fn read_cqe(cq: &CompletionQueue) -> Option<Cqe> {
    let offset = cq.head as usize * Cqe::SIZE;
    let mut flags = [0u8; 2];
    cq.mem.read(offset + 2, &mut flags).ok()?;
    if (u16::from_le_bytes(flags) & Cqe::PHASE != 0) != cq.phase {
        return None;
    }
    smp_rmb();
    let mut raw = [0u8; Cqe::SIZE];
    cq.mem.read(offset, &mut raw).ok()?;
    Some(Cqe::from_bytes(&raw))
}

impl NapiPoll for QueuePair {
    fn poll(&self, napi: &Napi, budget: u32) -> u32 {
        let dev = self.dev.get();
        let rx_csum = dev.features().rx_csum;
        let mut received = 0;
        let mut tx_room = false;
        let mut guard = self.rx.lock();
        let Some(rx) = &mut *guard else {
            // Stopped meanwhile: nothing to poll, nothing to re-arm.
            drop(guard);
            napi.complete_done(0);
            return 0;
        };
        let rx_tail_before = rx.ring.tail;
        while received < budget {
            let Some(cqe) = read_cqe(&rx.cq) else {
                break;
            };
            rx.cq.advance();
            if cqe.flags & Cqe::RX != 0 {
                self.complete_rx(napi, &mut rx.ring, cqe, rx_csum);
                received += 1;
            } else {
                tx_room = self.complete_tx(cqe);
            }
        }
        if rx.ring.tail != rx_tail_before {
            self.doorbell(regs::DB_RX_TAIL, u32::from(rx.ring.tail.get()));
        }
        let head = rx.cq.head;
        drop(guard);
        if tx_room && dev.tx_stopped(self.index) {
            dev.tx_wake(self.index);
        }
        if received < budget && napi.complete_done(received) {
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
        self.queue.napi().schedule();
        true
    }
}
