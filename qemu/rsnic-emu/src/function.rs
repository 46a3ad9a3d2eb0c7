// SPDX-License-Identifier: GPL-2.0

//! One PCI function of the card: its identity, BAR0 registers and the
//! self-test block (scratch echo, test interrupt, DMA fill/verify).

use std::sync::Arc;
use std::thread::Thread;
use std::time::{Duration, Instant};

use log::{info, warn};

use crate::config_space::ConfigSpace;
use crate::control::{Fault, Faults};
use crate::dma::DmaSpace;
use crate::hw::gft_rule::port;
use crate::hw::{self, regs, DmaTestCmd, DmaTestStatus, FuncKind};
use crate::irq::MsixVectors;
use crate::nic::{Effects, Nic, Outgoing};
use crate::train::TcpTrain;

/// Firmware version the card reports: the emulator's own version
/// (major.minor.patch in bits 23:16, 15:8, 7:0).
pub const FW_VERSION: u32 = (version_part(env!("CARGO_PKG_VERSION_MAJOR")) << 16)
    | (version_part(env!("CARGO_PKG_VERSION_MINOR")) << 8)
    | version_part(env!("CARGO_PKG_VERSION_PATCH"));

/// A decimal version number, at most 255.
const fn version_part(s: &str) -> u32 {
    let b = s.as_bytes();
    let mut v = 0u32;
    let mut i = 0;
    while i < b.len() {
        assert!(b[i].is_ascii_digit(), "version parts are decimal");
        v = v * 10 + (b[i] - b'0') as u32;
        i += 1;
    }
    assert!(v <= 0xff, "a version part fits 8 bits");
    v
}

/// What a function is, fixed at creation.
#[derive(Clone, Copy, Debug)]
pub struct Identity {
    /// PF or VF.
    pub kind: FuncKind,
    /// Card identifier shared by the card's functions.
    pub card_id: u32,
    /// Permanent MAC address.
    pub mac: [u8; 6],
    /// Number of MSI-X vectors.
    pub vectors: u16,
}

/// PCI device ID of a function of `kind`.
fn device_id(kind: FuncKind) -> u16 {
    match kind {
        FuncKind::Pf => hw::PCI_DEVICE_ID_PF,
        FuncKind::Vf => hw::PCI_DEVICE_ID_VF,
    }
}

/// Self-test block state.
#[derive(Default)]
struct SelfTest {
    scratch: u32,
    irq_count: u32,
    dma_addr: u64,
    dma_len: u32,
    dma_seed: u32,
    dma_status: u32,
    dma_mismatches: u32,
}

/// A PCI function: configuration space, registers, DMA and interrupts.
pub struct Function {
    id: Identity,
    faults: Arc<Faults>,
    /// PCI configuration space.
    pub config: ConfigSpace,
    /// Host memory QEMU mapped for this function.
    pub dma: DmaSpace,
    /// MSI-X vectors.
    pub msix: MsixVectors,
    /// The network function.
    pub nic: Nic,
    test: SelfTest,
    /// The interrupt moderation timer, woken when a moderated interrupt
    /// may have become pending.
    moderation_timer: Option<Thread>,
    /// When the moderation timer runs next of its own accord (`None`:
    /// it is parked until woken): it is woken only for an earlier one.
    timer_due: Option<Instant>,
    /// Queue interrupts still to lose (fault injection).
    irqs_to_drop: u32,
    /// Queue interrupts lost to fault injection.
    pub irqs_dropped: u64,
    /// Extra time every queue DMA pass takes (fault injection).
    dma_delay: Duration,
    /// Queue DMA passes slowed by `dma_delay`.
    pub dma_delayed: u64,
}

impl Function {
    /// What the function is.
    pub fn identity(&self) -> &Identity {
        &self.id
    }

    /// The port of the card's switch the function sits on.
    pub fn switch_port(&self) -> u16 {
        match self.id.kind {
            FuncKind::Pf => port::PF,
            FuncKind::Vf => port::VF0,
        }
    }

    /// A function in its power-on state.
    pub fn new(id: Identity, faults: Arc<Faults>) -> Self {
        Self {
            id,
            faults,
            config: ConfigSpace::new(device_id(id.kind), id.vectors),
            dma: DmaSpace::default(),
            msix: MsixVectors::new(id.vectors),
            nic: Nic::new(id.mac, id.kind == FuncKind::Pf),
            test: SelfTest::default(),
            moderation_timer: None,
            timer_due: None,
            irqs_to_drop: 0,
            irqs_dropped: 0,
            dma_delay: Duration::ZERO,
            dma_delayed: 0,
        }
    }

    /// Whether the card has a doorbell page to poll: the driver gave one
    /// and the card answers.
    pub fn polls_doorbell_page(&self) -> bool {
        !self.faults.is(Fault::Gone) && self.nic.has_doorbell_page()
    }

    /// Says in the doorbell page whether the card polls it.
    pub fn set_card_polling(&self, polling: bool) {
        self.nic.set_card_polling(&self.dma, polling);
    }

    /// Sets the thread that runs [`Function::tick`] for interrupt
    /// moderation; it is unparked whenever an interrupt is deferred.
    pub fn set_moderation_timer(&mut self, timer: Thread) {
        self.moderation_timer = Some(timer);
    }

    /// The function's timer (interrupt moderation, coalescing, TX
    /// shaping): raises the vectors now due and lets queue pairs the
    /// shapers held back send; returns when to call again (`None`: park
    /// until woken) and the frames to pass on.
    pub fn tick(&mut self, now: Instant) -> (Option<Instant>, Vec<Outgoing>) {
        let mut fx = Effects::default();
        if !self.faults.is(Fault::Gone) {
            self.nic.release_shaped(&self.dma, now, &mut fx);
        }
        let (raise, next) = self.nic.tick(&self.dma, now);
        for vector in fx.raise.into_iter().chain(raise) {
            self.raise_queue_irq(vector);
        }
        self.timer_due = next;
        (next, fx.send)
    }

    /// Wakes the moderation timer if something falls due before it runs
    /// of its own accord (not at every frame: a wake-up is a thread
    /// switch).
    fn kick_moderation_timer(&mut self) {
        let Some(timer) = &self.moderation_timer else {
            return;
        };
        let Some(next) = self.nic.next_deadline() else {
            return;
        };
        if self.timer_due.is_none_or(|due| next < due) {
            self.timer_due = Some(next);
            timer.unpark();
        }
    }

    /// QEMU let go of the function (hot-unplug): back to power-on state,
    /// with no DMA mappings or interrupt wiring left from the old session.
    pub fn disconnected(&mut self) {
        self.reset();
        self.dma = DmaSpace::default();
        self.msix = MsixVectors::new(self.id.vectors);
        self.config = ConfigSpace::new(device_id(self.id.kind), self.id.vectors);
    }

    /// Resets the function's register state (not its DMA mappings or
    /// interrupt wiring, which belong to QEMU).
    pub fn reset(&mut self) {
        self.test = SelfTest::default();
        // The page is forgotten: a driver reading its word must not think
        // the card still polls it (and leave a doorbell unrung).
        self.nic.set_card_polling(&self.dma, false);
        self.nic.reset();
    }

    /// A frame arrived from the wire (`fcs_ok`: undamaged).
    pub fn receive(&mut self, frame: &[u8], fcs_ok: bool) {
        self.take_from_wire(|nic, dma| nic.receive(dma, frame, fcs_ok));
    }

    /// A train arrived from the wire, undamaged: its segments, as
    /// [`Self::receive`] takes frames.
    pub fn receive_train(&mut self, train: &TcpTrain<'_>) {
        self.take_from_wire(|nic, dma| nic.receive_train(dma, train));
    }

    /// Runs `deliver` (the NIC taking what came from the wire; it returns
    /// the vector to raise) unless the card is gone, slowed by injected
    /// DMA delay, then raises and wakes the timer as needed.
    fn take_from_wire(&mut self, deliver: impl FnOnce(&mut Nic, &DmaSpace) -> Option<u16>) {
        if self.faults.is(Fault::Gone) {
            return;
        }
        self.delay_dma();
        if let Some(vector) = deliver(&mut self.nic, &self.dma) {
            self.raise_queue_irq(vector);
        }
        self.kick_moderation_timer();
    }

    /// End of a batch of received frames: coalesced frames leave,
    /// streaming queue pairs publish what they wrote, and their vectors
    /// are raised.
    pub fn end_of_batch(&mut self) {
        if self.faults.is(Fault::Gone) {
            return;
        }
        for vector in self.nic.end_of_batch(&self.dma) {
            self.raise_queue_irq(vector);
        }
        self.kick_moderation_timer();
    }

    /// PF: a frame the RDMA engine may take. `Some(frames to send)` if it
    /// took it, `None` if it is the NIC's.
    pub fn rdma_receive(&mut self, frame: &[u8]) -> Option<Vec<Vec<u8>>> {
        if self.faults.is(Fault::Gone) {
            return None;
        }
        let mut fx = Effects::default();
        if !self.nic.rdma_receive(&self.dma, frame, &mut fx) {
            return None;
        }
        for vector in fx.raise {
            self.raise_queue_irq(vector);
        }
        Some(fx.send.into_iter().map(|o| o.frame).collect())
    }

    /// PF: the RDMA engine's timers. Returns the frames to send and when
    /// to call again.
    pub fn rdma_tick(&mut self, now: Instant) -> (Vec<Vec<u8>>, Option<Instant>) {
        if self.faults.is(Fault::Gone) {
            return (Vec::new(), None);
        }
        let mut fx = Effects::default();
        let next = self.nic.rdma_tick(&self.dma, now, &mut fx);
        for vector in fx.raise {
            self.raise_queue_irq(vector);
        }
        (fx.send.into_iter().map(|o| o.frame).collect(), next)
    }

    /// PF: a GFT exception for the host's exception queue.
    pub fn deliver_exception(&mut self, data: &[u8]) {
        if self.faults.is(Fault::Gone) {
            return;
        }
        self.delay_dma();
        if let Some(vector) = self.nic.deliver_exception(&self.dma, data) {
            self.raise_queue_irq(vector);
        }
        self.kick_moderation_timer();
    }

    /// Raises a queue pair's vector, unless fault injection loses it.
    fn raise_queue_irq(&mut self, vector: u16) {
        if self.faults.is(Fault::Gone) {
            return;
        }
        if self.irqs_to_drop > 0 {
            self.irqs_to_drop -= 1;
            self.irqs_dropped += 1;
            return;
        }
        self.msix.raise(u32::from(vector));
    }

    /// Loses the next `n` queue interrupts (fault injection: missing
    /// interrupts); `n == 0` cancels.
    pub fn drop_irqs(&mut self, n: u32) {
        self.irqs_to_drop = n;
    }

    /// Makes every queue DMA pass (a frame received, a doorbell followed)
    /// take `delay` longer (fault injection: a slow bus).
    pub fn set_dma_delay(&mut self, delay: Duration) {
        self.dma_delay = delay;
    }

    fn delay_dma(&mut self) {
        if !self.dma_delay.is_zero() {
            std::thread::sleep(self.dma_delay);
            self.dma_delayed += 1;
        }
    }

    /// Plugs or unplugs the cable at this end; a change raises the admin vector.
    pub fn set_link(&mut self, up: bool) {
        if self.nic.set_link(up) {
            info!(
                "{:?}: link {}",
                self.id.kind,
                if up { "up" } else { "down" }
            );
            if !self.faults.is(Fault::Gone) {
                self.msix.raise(u32::from(hw::ADMIN_VECTOR));
            }
        }
    }

    /// PF: offers the foreign VF `serial` or withdraws it; a change
    /// raises the admin vector, as a link change does.
    pub fn set_vf_association(&mut self, serial: Option<u32>) {
        if self.nic.set_vf_assoc(serial) {
            info!("{:?}: foreign VF {:?}", self.id.kind, serial);
            if !self.faults.is(Fault::Gone) {
                self.msix.raise(u32::from(hw::ADMIN_VECTOR));
            }
        }
    }

    /// Reads the 32-bit register at `offset` in BAR0.
    pub fn read_reg(&mut self, offset: usize) -> u32 {
        if self.faults.is(Fault::AllOnes) || self.faults.is(Fault::Gone) {
            return u32::MAX;
        }
        let mut mac = self.id.mac;
        if self.faults.is(Fault::BadMac) {
            mac[0] |= 1;
        }
        match offset {
            regs::MAGIC => hw::MAGIC,
            regs::HW_VERSION => hw::HW_VERSION,
            regs::FW_VERSION => FW_VERSION,
            regs::FUNC_KIND => self.id.kind as u32,
            regs::CARD_ID => self.id.card_id,
            regs::NUM_VECTORS => self.msix.count(),
            regs::MAC_LO => hw::mac_to_regs(mac).0,
            regs::MAC_HI => hw::mac_to_regs(mac).1,
            regs::DEV_CTRL => 0,
            regs::DEV_STATUS => hw::status::READY,
            regs::SCRATCH if self.faults.is(Fault::Scratch) => self.test.scratch ^ 0x0000_0100,
            regs::SCRATCH => self.test.scratch,
            regs::TEST_IRQ_COUNT => self.test.irq_count,
            regs::DMA_ADDR_LO => self.test.dma_addr as u32,
            regs::DMA_ADDR_HI => (self.test.dma_addr >> 32) as u32,
            regs::DMA_LEN => self.test.dma_len,
            regs::DMA_SEED => self.test.dma_seed,
            regs::DMA_STATUS => self.test.dma_status,
            regs::DMA_MISMATCHES => self.test.dma_mismatches,
            _ => self.nic.read_reg(offset).unwrap_or(0),
        }
    }

    /// Writes the 32-bit register at `offset` in BAR0. Returns the frames
    /// the write made the host send, for the card to pass on.
    pub fn write_reg(&mut self, offset: usize, value: u32) -> Vec<Outgoing> {
        let mut fx = Effects::default();
        if self.faults.is(Fault::Gone) {
            return fx.send;
        }
        match offset {
            regs::DEV_CTRL if value & hw::ctrl::RESET != 0 => {
                info!("{:?}: reset by driver", self.id.kind);
                self.reset();
            }
            regs::SCRATCH => self.test.scratch = value,
            regs::TEST_IRQ => self.test_irq(value),
            regs::DMA_ADDR_LO => {
                self.test.dma_addr = (self.test.dma_addr & !0xffff_ffff) | u64::from(value)
            }
            regs::DMA_ADDR_HI => {
                self.test.dma_addr = (self.test.dma_addr & 0xffff_ffff) | (u64::from(value) << 32)
            }
            regs::DMA_LEN => self.test.dma_len = value,
            regs::DMA_SEED => self.test.dma_seed = value,
            regs::DMA_CMD => {
                // The card runs the test before answering the next access,
                // so software never observes `Busy` here; it is part of the
                // interface for cards that run tests in the background.
                self.test.dma_status = DmaTestStatus::Busy as u32;
                let status = self.dma_test(value);
                self.test.dma_status = status as u32;
            }
            _ => {
                if offset >= regs::QP_DOORBELLS {
                    self.delay_dma();
                }
                self.nic.write_reg(&self.dma, offset, value, &mut fx);
            }
        }
        for vector in fx.raise {
            self.raise_queue_irq(vector);
        }
        self.kick_moderation_timer();
        fx.send
    }

    /// Follows the TX tails the driver wrote into the doorbell page since
    /// the card last looked. Returns the frames to pass on, and whether
    /// any tail had moved.
    pub fn poll_tx_tails(&mut self) -> (Vec<Outgoing>, bool) {
        let mut fx = Effects::default();
        if self.faults.is(Fault::Gone) {
            return (fx.send, false);
        }
        let moved = self.nic.poll_tx_tails(&self.dma, &mut fx);
        if !moved {
            // Nothing was sent or completed: no interrupt to raise or time.
            return (fx.send, false);
        }
        self.delay_dma();
        for vector in fx.raise {
            self.raise_queue_irq(vector);
        }
        self.kick_moderation_timer();
        (fx.send, true)
    }

    /// Writes the 32-bit user doorbell at `offset` in the doorbell BAR
    /// ([`hw::rdma::udb`]; PF only, a VF has no RDMA engine). Returns the
    /// frames the write made the engine send.
    pub fn write_user_doorbell(&mut self, offset: usize, value: u32) -> Vec<Outgoing> {
        let mut fx = Effects::default();
        if self.faults.is(Fault::Gone) {
            return fx.send;
        }
        self.delay_dma();
        self.nic
            .write_user_doorbell(&self.dma, offset, value, &mut fx);
        for vector in fx.raise {
            self.raise_queue_irq(vector);
        }
        self.kick_moderation_timer();
        fx.send
    }

    /// Raises every MSI-X vector `n` times with nothing to report (fault
    /// injection: spurious interrupts). Returns how many were delivered.
    pub fn spurious_irqs(&mut self, n: u32) -> u32 {
        let mut delivered = 0;
        for _ in 0..n {
            for vector in 0..self.msix.count() {
                delivered += u32::from(self.msix.raise(vector));
            }
        }
        delivered
    }

    fn test_irq(&mut self, vector: u32) {
        self.test.irq_count = self.test.irq_count.wrapping_add(1);
        if self.faults.is(Fault::Irq) {
            return;
        }
        if !self.msix.raise(vector) {
            warn!(
                "{:?}: test interrupt on vector {vector} not delivered (no eventfd)",
                self.id.kind
            );
        }
    }

    fn dma_test(&mut self, cmd: u32) -> DmaTestStatus {
        self.test.dma_mismatches = 0;
        let (Some(cmd), true) = (
            DmaTestCmd::from_raw(cmd),
            self.test.dma_len <= hw::DMA_TEST_MAX_LEN,
        ) else {
            return DmaTestStatus::Invalid;
        };
        if !self.config.bus_master() {
            warn!("{:?}: DMA test with bus mastering disabled", self.id.kind);
            return DmaTestStatus::Fault;
        }
        let seed = self.test.dma_seed;
        let addr = self.test.dma_addr;
        let pattern: Vec<u8> = (0..self.test.dma_len)
            .map(|i| hw::dma_pattern_byte(seed, i))
            .collect();
        let corrupt = self.faults.is(Fault::Dma);
        let result = match cmd {
            DmaTestCmd::Fill => {
                let mut data = pattern;
                if corrupt {
                    data.iter_mut().step_by(97).for_each(|b| *b ^= 0x5a);
                }
                self.dma.write(addr, &data)
            }
            DmaTestCmd::Verify => {
                let mut data = vec![0u8; pattern.len()];
                self.dma.read(addr, &mut data).map(|()| {
                    let bad = data.iter().zip(&pattern).filter(|(a, b)| a != b).count();
                    self.test.dma_mismatches = bad as u32 + u32::from(corrupt);
                })
            }
        };
        match result {
            Ok(()) => DmaTestStatus::Done,
            Err(fault) => {
                warn!("{:?}: DMA test: {fault}", self.id.kind);
                DmaTestStatus::Fault
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dma::tests::two_region_space;

    fn pf(faults: Arc<Faults>) -> Function {
        let id = Identity {
            kind: FuncKind::Pf,
            card_id: 7,
            mac: [2, 0x52, 0x53, 0, 0, 9],
            vectors: 16,
        };
        let mut f = Function::new(id, faults);
        f.config.write(4, &[0x06]); // memory + bus master
        f
    }

    #[test]
    fn identity_registers() {
        let mut f = pf(Arc::default());
        assert_eq!(f.read_reg(regs::MAGIC), hw::MAGIC);
        assert_eq!(f.read_reg(regs::HW_VERSION) >> 16, 1);
        assert_eq!(f.read_reg(regs::CARD_ID), 7);
        assert_eq!(f.read_reg(regs::NUM_VECTORS), 16);
        assert_eq!(f.read_reg(regs::MAC_LO), 0x0053_5202);
        assert_eq!(f.read_reg(regs::MAC_HI), 0x0900);
        assert_eq!(
            FuncKind::from_raw(f.read_reg(regs::FUNC_KIND)),
            Some(FuncKind::Pf)
        );
    }

    #[test]
    fn scratch_echo_and_fault() {
        let faults = Arc::new(Faults::default());
        let mut f = pf(Arc::clone(&faults));
        f.write_reg(regs::SCRATCH, 0xdead_beef);
        assert_eq!(f.read_reg(regs::SCRATCH), 0xdead_beef);
        faults.set_by_name("scratch").unwrap();
        assert_ne!(f.read_reg(regs::SCRATCH), 0xdead_beef);
        faults.set_by_name("all-ones").unwrap();
        assert_eq!(f.read_reg(regs::MAGIC), u32::MAX);
        faults.set_by_name("bad-mac").unwrap();
        assert_eq!(f.read_reg(regs::MAC_LO) & 1, 1, "multicast bit set");
    }

    #[test]
    fn a_gone_card_reads_all_ones_and_loses_writes() {
        let faults = Arc::new(Faults::default());
        let mut f = pf(Arc::clone(&faults));
        f.write_reg(regs::SCRATCH, 1);
        faults.set_by_name("gone").unwrap();
        assert_eq!(f.read_reg(regs::DEV_STATUS), u32::MAX);
        f.write_reg(regs::SCRATCH, 2);
        f.drop_irqs(0);
        f.receive(&[0xff; 64], true);
        faults.set_by_name("none").unwrap();
        assert_eq!(
            f.read_reg(regs::SCRATCH),
            1,
            "the write while gone was lost"
        );
    }

    #[test]
    fn reset_clears_self_test_state() {
        let mut f = pf(Arc::default());
        f.write_reg(regs::SCRATCH, 5);
        f.write_reg(regs::DEV_CTRL, hw::ctrl::RESET);
        assert_eq!(f.read_reg(regs::SCRATCH), 0);
    }

    fn start_dma(
        f: &mut Function,
        addr: u64,
        len: u32,
        seed: u32,
        cmd: DmaTestCmd,
    ) -> DmaTestStatus {
        f.write_reg(regs::DMA_ADDR_LO, addr as u32);
        f.write_reg(regs::DMA_ADDR_HI, (addr >> 32) as u32);
        f.write_reg(regs::DMA_LEN, len);
        f.write_reg(regs::DMA_SEED, seed);
        f.write_reg(regs::DMA_CMD, cmd as u32);
        DmaTestStatus::from_raw(f.read_reg(regs::DMA_STATUS)).unwrap()
    }

    #[test]
    fn dma_fill_then_verify() {
        let mut f = pf(Arc::default());
        (f.dma, _) = two_region_space();
        assert_eq!(
            start_dma(&mut f, 0x1800, 0x2000, 42, DmaTestCmd::Fill),
            DmaTestStatus::Done
        );
        let mut back = vec![0u8; 0x2000];
        f.dma.read(0x1800, &mut back).unwrap();
        assert!(back
            .iter()
            .enumerate()
            .all(|(i, &b)| b == hw::dma_pattern_byte(42, i as u32)));
        assert_eq!(
            start_dma(&mut f, 0x1800, 0x2000, 42, DmaTestCmd::Verify),
            DmaTestStatus::Done
        );
        assert_eq!(f.read_reg(regs::DMA_MISMATCHES), 0);
        assert_eq!(
            start_dma(&mut f, 0x1800, 0x2000, 43, DmaTestCmd::Verify),
            DmaTestStatus::Done
        );
        assert!(
            f.read_reg(regs::DMA_MISMATCHES) > 0x1f00,
            "another seed differs almost everywhere"
        );
    }

    #[test]
    fn dma_rejects_bad_requests() {
        let mut f = pf(Arc::default());
        (f.dma, _) = two_region_space();
        assert_eq!(
            start_dma(&mut f, 0x3800, 0x1000, 1, DmaTestCmd::Fill),
            DmaTestStatus::Fault
        );
        f.write_reg(regs::DMA_LEN, hw::DMA_TEST_MAX_LEN + 1);
        f.write_reg(regs::DMA_CMD, DmaTestCmd::Fill as u32);
        assert_eq!(f.read_reg(regs::DMA_STATUS), DmaTestStatus::Invalid as u32);
        f.write_reg(regs::DMA_LEN, 16);
        f.write_reg(regs::DMA_CMD, 99);
        assert_eq!(f.read_reg(regs::DMA_STATUS), DmaTestStatus::Invalid as u32);
        f.config.write(4, &[0x02]); // bus mastering off
        assert_eq!(
            start_dma(&mut f, 0x1000, 16, 1, DmaTestCmd::Fill),
            DmaTestStatus::Fault
        );
    }

    #[test]
    fn dma_fault_corrupts_both_directions() {
        let faults = Arc::new(Faults::default());
        let mut f = pf(Arc::clone(&faults));
        (f.dma, _) = two_region_space();
        faults.set_by_name("dma").unwrap();
        start_dma(&mut f, 0x1000, 0x1000, 9, DmaTestCmd::Fill);
        faults.set_by_name("none").unwrap();
        assert_eq!(
            start_dma(&mut f, 0x1000, 0x1000, 9, DmaTestCmd::Verify),
            DmaTestStatus::Done
        );
        assert!(f.read_reg(regs::DMA_MISMATCHES) > 0);
    }

    #[test]
    fn irq_fault_counts_but_does_not_deliver() {
        let faults = Arc::new(Faults::default());
        let mut f = pf(Arc::clone(&faults));
        faults.set_by_name("irq").unwrap();
        f.write_reg(regs::TEST_IRQ, 3);
        assert_eq!(f.read_reg(regs::TEST_IRQ_COUNT), 1);
    }
}
