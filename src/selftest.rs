// SPDX-License-Identifier: GPL-2.0

//! The probe self-test: the driver refuses a card that does not answer
//! registers, interrupts and DMA exactly as the interface says.
//!
//! Steps, in order, each stopping the test on the first failure:
//! 1. identity: magic, interface major version and function kind;
//! 2. register echo: patterns written to SCRATCH read back unchanged;
//! 3. interrupts: a test interrupt on every MSI-X vector reaches its handler;
//! 4. DMA: at several offsets and sizes, the card fills a buffer that the
//!    driver checks (including guard bytes around it), and verifies a
//!    buffer the driver filled.

use kernel::{
    fmt,
    prelude::*,
    sync::atomic::{Atomic, Relaxed},
    time::{delay::fsleep, Delta},
};

use crate::hw::{self, regs, DmaTestCmd, DmaTestStatus, FuncKind};
use crate::linux::dma::DmaBuffer;
use crate::linux::irq::{IrqHandler, IrqHandlerRegistration};
use crate::regs::Registers;

/// Patterns written to the scratch register.
const SCRATCH_PATTERNS: [u32; 5] = [
    0x0000_0000,
    0xffff_ffff,
    0xa5a5_5a5a,
    0x5a5a_a5a5,
    0x1234_5678,
];

/// DMA test cases: (offset into the buffer, length).
const DMA_CASES: [(usize, usize); 5] = [(0, 64), (1, 4095), (4093, 7), (100, 32768), (0, 65536)];

/// Size of the self-test DMA buffer.
pub(crate) const DMA_BUFFER_LEN: usize = hw::DMA_TEST_MAX_LEN as usize;

/// Value the driver puts around a DMA target to detect stray writes.
const GUARD: u8 = 0xcc;

/// How long to wait for a test interrupt or a DMA test, in milliseconds.
const TIMEOUT_MS: u32 = 1000;

/// An interrupt handler that counts the interrupts it saw, so the test can
/// tell its vector fired: the probe's own handlers, and the NIC's once it
/// owns the vectors (`ethtool -t`).
pub(crate) trait IrqCount {
    /// Interrupts seen so far.
    fn fired(&self) -> u32;
}

/// Counts the interrupts of one MSI-X vector.
#[pin_data]
pub(crate) struct VectorIrq {
    fired: Atomic<u32>,
}

impl VectorIrq {
    /// A handler that has seen no interrupt.
    pub(crate) fn new() -> impl PinInit<Self, Error> {
        try_pin_init!(Self { fired: Atomic::new(0) }? Error)
    }
}

impl IrqCount for VectorIrq {
    fn fired(&self) -> u32 {
        self.fired.load(Relaxed)
    }
}

impl IrqHandler for VectorIrq {
    fn handle(&self) -> bool {
        self.fired.fetch_add(1, Relaxed);
        true
    }
}

/// Why the self-test failed.
#[derive(Debug)]
pub(crate) enum SelfTestError {
    /// A register access failed (device gone).
    Io(Error),
    /// MAGIC did not read as `hw::MAGIC`.
    BadMagic(u32),
    /// The card speaks another major version of the interface.
    BadVersion(u32),
    /// FUNC_KIND is not one the interface defines.
    BadFuncKind(u32),
    /// The scratch register did not echo.
    Scratch { wrote: u32, read: u32 },
    /// A test interrupt did not arrive.
    IrqMissing { vector: u32 },
    /// A DMA test did not complete.
    DmaStatus {
        case: usize,
        cmd: DmaTestCmd,
        status: u32,
    },
    /// The card's fill left a wrong byte at `offset`.
    DmaFill {
        case: usize,
        offset: usize,
        got: u8,
        want: u8,
    },
    /// The card's fill wrote outside its target, at `offset`.
    DmaGuard { case: usize, offset: usize },
    /// The card's verify found differences in what the driver wrote.
    DmaVerify { case: usize, mismatches: u32 },
}

impl From<Error> for SelfTestError {
    fn from(e: Error) -> Self {
        Self::Io(e)
    }
}

impl From<kernel::alloc::AllocError> for SelfTestError {
    fn from(_: kernel::alloc::AllocError) -> Self {
        Self::Io(ENOMEM)
    }
}

impl fmt::Display for SelfTestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(e) => write!(f, "register access failed ({e:?})"),
            Self::BadMagic(v) => write!(f, "magic reads {v:#010x}, expected {:#010x}", hw::MAGIC),
            Self::BadVersion(v) => write!(
                f,
                "interface version {v:#x} unsupported (need major {})",
                hw::HW_VERSION >> 16
            ),
            Self::BadFuncKind(v) => write!(f, "unknown function kind {v}"),
            Self::Scratch { wrote, read } => write!(
                f,
                "scratch register echo: wrote {wrote:#010x}, read {read:#010x}"
            ),
            Self::IrqMissing { vector } => write!(
                f,
                "test interrupt on MSI-X vector {vector} not received within {TIMEOUT_MS} ms"
            ),
            Self::DmaStatus { case, cmd, status } => {
                write!(f, "DMA case {case}: {cmd:?} ended with status {status}")
            }
            Self::DmaFill {
                case,
                offset,
                got,
                want,
            } => {
                write!(f, "DMA case {case}: fill wrote {got:#04x} at offset {offset}, expected {want:#04x}")
            }
            Self::DmaGuard { case, offset } => write!(
                f,
                "DMA case {case}: fill wrote outside its buffer at offset {offset}"
            ),
            Self::DmaVerify { case, mismatches } => write!(
                f,
                "DMA case {case}: card read back {mismatches} wrong bytes"
            ),
        }
    }
}

/// What a passed self-test covered.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SelfTestReport {
    /// Function kind the card reported.
    pub(crate) kind: FuncKind,
    /// MSI-X vectors tested.
    pub(crate) vectors: u32,
    /// DMA cases run (each fill and verify).
    pub(crate) dma_cases: u32,
}

/// Runs the self-test against a function's registers, its vector handlers
/// and a [`DMA_BUFFER_LEN`]-byte DMA buffer. Identity comes first: nothing
/// else the card says is trusted before it proves to be an rsnic.
pub(crate) fn run(
    regs: &Registers,
    vectors: &[Pin<KBox<IrqHandlerRegistration<VectorIrq>>>],
    buf: &DmaBuffer,
) -> Result<SelfTestReport, SelfTestError> {
    let kind = identify(regs)?;
    check_registers(regs)?;
    check_irqs(regs, vectors.iter().map(|r| r.handler() as &dyn IrqCount))?;
    check_dma_cases(regs, buf)?;
    Ok(SelfTestReport {
        kind,
        vectors: vectors.len() as u32,
        dma_cases: DMA_CASES.len() as u32,
    })
}

/// Step 2: identity, then the scratch register echoes every pattern.
pub(crate) fn check_registers(regs: &Registers) -> Result<(), SelfTestError> {
    identify(regs)?;
    check_scratch(regs)
}

/// Step 3: a test interrupt on vector `i` reaches handler `i`, for every
/// handler given.
pub(crate) fn check_irqs<'a>(
    regs: &Registers,
    handlers: impl Iterator<Item = &'a dyn IrqCount>,
) -> Result<(), SelfTestError> {
    for (vector, irq) in (0u32..).zip(handlers) {
        check_irq(regs, vector, irq)?;
    }
    Ok(())
}

/// Step 4: every DMA case, in a [`DMA_BUFFER_LEN`]-byte buffer.
pub(crate) fn check_dma_cases(regs: &Registers, buf: &DmaBuffer) -> Result<(), SelfTestError> {
    for (case, &(offset, len)) in DMA_CASES.iter().enumerate() {
        check_dma(regs, buf, case, offset, len)?;
    }
    Ok(())
}

/// Step 1 alone: checks magic and interface version and returns the
/// function kind. Probe runs it before sizing anything by what the card
/// reports.
pub(crate) fn identify(regs: &Registers) -> Result<FuncKind, SelfTestError> {
    let magic = regs.read(regs::MAGIC)?;
    if magic != hw::MAGIC {
        return Err(SelfTestError::BadMagic(magic));
    }
    let version = regs.read(regs::HW_VERSION)?;
    if version >> 16 != hw::HW_VERSION >> 16 {
        return Err(SelfTestError::BadVersion(version));
    }
    let kind = regs.read(regs::FUNC_KIND)?;
    FuncKind::from_raw(kind).ok_or(SelfTestError::BadFuncKind(kind))
}

fn check_scratch(regs: &Registers) -> Result<(), SelfTestError> {
    for wrote in SCRATCH_PATTERNS {
        regs.write(regs::SCRATCH, wrote)?;
        let read = regs.read(regs::SCRATCH)?;
        if read != wrote {
            return Err(SelfTestError::Scratch { wrote, read });
        }
    }
    Ok(())
}

/// Polls `done` every millisecond for up to [`TIMEOUT_MS`].
fn wait_for(mut done: impl FnMut() -> Result<bool, SelfTestError>) -> Result<bool, SelfTestError> {
    for _ in 0..TIMEOUT_MS {
        if done()? {
            return Ok(true);
        }
        fsleep(Delta::from_millis(1));
    }
    done()
}

fn check_irq(regs: &Registers, vector: u32, irq: &dyn IrqCount) -> Result<(), SelfTestError> {
    let before = irq.fired();
    regs.write(regs::TEST_IRQ, vector)?;
    if !wait_for(|| Ok(irq.fired() != before))? {
        return Err(SelfTestError::IrqMissing { vector });
    }
    Ok(())
}

fn start_dma(
    regs: &Registers,
    buf: &DmaBuffer,
    case: usize,
    offset: usize,
    len: usize,
    seed: u32,
    cmd: DmaTestCmd,
) -> Result<(), SelfTestError> {
    regs.write_addr(regs::DMA_ADDR_LO, regs::DMA_ADDR_HI, buf.dma_addr(offset)?)?;
    regs.write(regs::DMA_LEN, len as u32)?;
    regs.write(regs::DMA_SEED, seed)?;
    regs.write(regs::DMA_CMD, cmd as u32)?;
    let mut status = 0;
    let done = wait_for(|| {
        status = regs.read(regs::DMA_STATUS)?;
        Ok(DmaTestStatus::from_raw(status) != Some(DmaTestStatus::Busy))
    })?;
    if !done || DmaTestStatus::from_raw(status) != Some(DmaTestStatus::Done) {
        return Err(SelfTestError::DmaStatus { case, cmd, status });
    }
    Ok(())
}

fn check_dma(
    regs: &Registers,
    buf: &DmaBuffer,
    case: usize,
    offset: usize,
    len: usize,
) -> Result<(), SelfTestError> {
    let seed = 0x5eed_0000 | case as u32;
    let mut data = KVec::from_elem(GUARD, buf.len(), GFP_KERNEL)?;

    // Card -> host: the card fills [offset, offset + len) of a guarded buffer.
    buf.write(0, &data)?;
    start_dma(regs, buf, case, offset, len, seed, DmaTestCmd::Fill)?;
    buf.read(0, &mut data)?;
    for (i, &got) in data.iter().enumerate() {
        let inside = i >= offset && i < offset + len;
        if !inside && got != GUARD {
            return Err(SelfTestError::DmaGuard { case, offset: i });
        }
        let want = hw::dma_pattern_byte(seed, (i.wrapping_sub(offset)) as u32);
        if inside && got != want {
            return Err(SelfTestError::DmaFill {
                case,
                offset: i,
                got,
                want,
            });
        }
    }

    // Host -> card: the driver writes the next seed's pattern, the card checks it.
    let seed = seed ^ 0x00ff_0000;
    for (i, byte) in data.iter_mut().take(len).enumerate() {
        *byte = hw::dma_pattern_byte(seed, i as u32);
    }
    buf.write(offset, &data[..len])?;
    start_dma(regs, buf, case, offset, len, seed, DmaTestCmd::Verify)?;
    let mismatches = regs.read(regs::DMA_MISMATCHES)?;
    if mismatches != 0 {
        return Err(SelfTestError::DmaVerify { case, mismatches });
    }
    Ok(())
}
