// SPDX-License-Identifier: GPL-2.0

//! The card's flow table as the driver reaches it: GFT admin commands,
//! with the install, key and dump blocks in one DMA buffer.

use kernel::{prelude::*, sync::Arc};

use crate::admin::{AdminError, AdminQueue};
use crate::hw::gft::{
    CardGftStats, FlowCounters, FlowKey, FlowRecord, DUMP_RECORD_LEN, FLOW_RECORD_LEN,
};
use crate::hw::{AdminCmd, GftDumpResult};
use crate::linux::{dma::DmaBuffer, dma::DmaDevice};

/// Records one dump command fetches.
pub(crate) const DUMP_BATCH: usize = 64;

/// Admin access to the card's GFT. Its buffer is shared by every command:
/// use it under the policy lock.
pub(crate) struct GftCard {
    admin: Arc<AdminQueue>,
    mem: DmaBuffer,
}

impl GftCard {
    /// Wraps the PF's admin queue.
    pub(crate) fn new(admin: Arc<AdminQueue>, dma: &DmaDevice) -> Result<Self> {
        let len = (DUMP_BATCH * DUMP_RECORD_LEN).max(FLOW_RECORD_LEN);
        Ok(Self {
            admin,
            mem: dma.alloc(len)?,
        })
    }

    /// Turns the GFT on or off (`hw::gft::config` bits) with `max_flows`.
    pub(crate) fn configure(&self, flags: u32, max_flows: u32) -> Result<(), AdminError> {
        self.admin
            .exec(AdminCmd::GftConfig { flags, max_flows })
            .map(|_| ())
    }

    /// Sets the current policy generation.
    pub(crate) fn set_generation(&self, generation: u32) -> Result<(), AdminError> {
        self.admin
            .exec(AdminCmd::GftSetGeneration { generation })
            .map(|_| ())
    }

    /// Adds or replaces a flow.
    pub(crate) fn install(&self, rec: &FlowRecord) -> Result<(), AdminError> {
        self.mem.write(0, &rec.to_bytes())?;
        let record = self.mem.dma_addr(0)?;
        self.admin.exec(AdminCmd::GftInstall { record }).map(|_| ())
    }

    /// Removes a flow.
    pub(crate) fn delete(&self, key: &FlowKey) -> Result<(), AdminError> {
        self.mem.write(0, &key.to_bytes())?;
        let key = self.mem.dma_addr(0)?;
        self.admin.exec(AdminCmd::GftDelete { key }).map(|_| ())
    }

    /// Removes every flow.
    pub(crate) fn flush(&self) -> Result<(), AdminError> {
        self.admin.exec(AdminCmd::GftFlush).map(|_| ())
    }

    /// The card's counters.
    pub(crate) fn stats(&self) -> Result<CardGftStats, AdminError> {
        self.admin
            .exec(AdminCmd::GftQueryStats)
            .map(|e| CardGftStats::read_result(&e))
    }

    /// Every flow the card holds, with its counters, passed to `each`.
    /// Records the card garbles are skipped and counted; the count is
    /// returned.
    pub(crate) fn dump(&self, mut each: impl FnMut(FlowCounters)) -> Result<u64, AdminError> {
        let buf = self.mem.dma_addr(0)?;
        let mut cursor = 0;
        let mut garbled = 0;
        // A card that never ends its walk is cut off after the most slots
        // it may hold.
        for _ in 0..=(crate::hw::gft::MAX_FLOWS_LIMIT as usize / DUMP_BATCH) {
            let entry = self.admin.exec(AdminCmd::GftDump {
                buf,
                max: DUMP_BATCH as u32,
                cursor,
            })?;
            let r = GftDumpResult::read_result(&entry);
            let count = (r.count as usize).min(DUMP_BATCH);
            let mut raw = [0u8; DUMP_RECORD_LEN];
            for i in 0..count {
                self.mem.read(i * DUMP_RECORD_LEN, &mut raw)?;
                match FlowCounters::from_bytes(&raw) {
                    Some(c) => each(c),
                    None => garbled += 1,
                }
            }
            if r.next == 0 || r.next <= cursor {
                break;
            }
            cursor = r.next;
        }
        Ok(garbled)
    }
}
