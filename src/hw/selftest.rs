// SPDX-License-Identifier: GPL-2.0

//! The probe self-test block: the DMA test's commands, outcomes and
//! pattern (the registers are in [`super::regs`]).

/// Largest DMA self-test transfer, in bytes.
pub const DMA_TEST_MAX_LEN: u32 = 64 * 1024;

wire_enum! {
    /// Commands written to [`super::regs::DMA_CMD`].
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum DmaTestCmd: u32 {
        /// The card writes the pattern into host memory.
        Fill = 1,
        /// The card reads host memory and counts bytes that differ from
        /// the pattern.
        Verify = 2,
    }
}

wire_enum! {
    /// Values of [`super::regs::DMA_STATUS`].
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum DmaTestStatus: u32 {
        /// No test has run since reset.
        Idle = 0,
        /// The last test completed; for a verify, see
        /// [`super::regs::DMA_MISMATCHES`].
        Done = 1,
        /// The last test was rejected: bad length or command.
        Invalid = 2,
        /// The last test hit an address the card cannot reach (not mapped
        /// for DMA).
        Fault = 3,
        /// A test is running; writing DMA_CMD sets this until the test ends.
        Busy = 4,
    }
}

/// Byte `index` of the DMA self-test pattern for `seed`.
///
/// Both sides compute it: the card to fill or verify, the driver to do the
/// opposite. Every byte depends on both the seed and the position, so a
/// transfer landing at the wrong offset or with a stale seed is detected.
pub const fn dma_pattern_byte(seed: u32, index: u32) -> u8 {
    let x = seed ^ index.wrapping_mul(0x9e37_79b1);
    let x = x ^ (x >> 15);
    let x = x.wrapping_mul(0x2c1b_3c6d);
    (x >> 24) as u8
}
