// SPDX-License-Identifier: GPL-2.0

//! Reading the entries the card writes into the CQ and event rings.

use kernel::sync::barrier::smp_rmb;

use crate::hw::rdma::cqe_flag;
use crate::kext::dma_buf::DmaBuffer;

/// The `N`-byte entry at `offset` of `ring`, if the card has written it
/// this lap (its phase bit equals `phase`).
///
/// The card writes an entry's flags word (bytes 2 and 3, with the phase
/// bit) last, so it is read first and the rest only after a read
/// barrier: read in one copy, a new phase may come with the previous
/// lap's slot and QP number.
pub(crate) fn read_entry<const N: usize>(
    ring: &DmaBuffer,
    offset: usize,
    phase: bool,
) -> Option<[u8; N]> {
    let mut flags = [0u8; 2];
    ring.read(offset + 2, &mut flags).ok()?;
    if (u16::from_le_bytes(flags) & cqe_flag::PHASE != 0) != phase {
        return None;
    }
    smp_rmb();
    let mut raw = [0u8; N];
    ring.read(offset, &mut raw).ok()?;
    Some(raw)
}
