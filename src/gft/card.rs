// SPDX-License-Identifier: GPL-2.0

//! The card's flow table as the driver reaches it: GFT admin commands,
//! with the install, key and dump blocks in one DMA buffer.

use kernel::{prelude::*, sync::Arc};

use crate::admin::{AdminError, AdminQueue, Ticket, MAX_POSTED};
use crate::hw::gft::{
    CardExceptionStats, CardGftStats, FlowCounters, FlowKey, FlowRecord, DUMP_RECORD_LEN,
    FLOW_RECORD_LEN, MAX_INSTALL_BATCH,
};
use crate::hw::gft_rule::{RuleCounters, RuleRecord};
use crate::hw::{AdminCmd, AdminStatus, GftBatchResult, GftDumpResult, AQ_ENTRY_SIZE};
use crate::linux::{dma::DmaBuffer, dma::DmaDevice};

/// Records one dump command fetches.
pub(crate) const DUMP_BATCH: usize = 64;

/// Admin access to the card's GFT. Its buffer is shared by every command
/// that waits for its answer: use it under the policy lock. A posted
/// install has a buffer of its own, which the admin queue holds while
/// the card may read it.
pub(crate) struct GftCard {
    admin: Arc<AdminQueue>,
    mem: DmaBuffer,
    /// Install buffers back from collected installs, for the next posts.
    spare: KVec<DmaBuffer>,
    dma: DmaDevice,
}

/// An install command the card may still be working on
/// ([`GftCard::post_install_batch`]).
#[must_use = "a posted install is collected"]
pub(crate) struct PostedInstall {
    ticket: Ticket,
    count: usize,
}

impl GftCard {
    /// Wraps the PF's admin queue.
    pub(crate) fn new(admin: Arc<AdminQueue>, dma: &DmaDevice) -> Result<Self> {
        let len = (DUMP_BATCH * DUMP_RECORD_LEN).max(MAX_INSTALL_BATCH as usize * FLOW_RECORD_LEN);
        Ok(Self {
            admin,
            mem: dma.alloc(len)?,
            spare: KVec::with_capacity(MAX_POSTED, GFP_KERNEL)?,
            dma: dma.clone(),
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

    /// Adds or replaces the flows of `recs` (at most
    /// [`MAX_INSTALL_BATCH`]) with one command. The card stops at the
    /// first it cannot install: returns how many it installed (the first
    /// ones) and, if that is not all, why the next one failed.
    pub(crate) fn install_batch<'a>(
        &self,
        recs: impl Iterator<Item = &'a FlowRecord>,
    ) -> Result<(usize, Option<AdminStatus>), AdminError> {
        let count = write_records(&self.mem, recs)?;
        if count == 0 {
            return Ok((0, None));
        }
        let entry = self.admin.exec(install_cmd(&self.mem, count)?)?;
        Ok(batch_answer(&entry, count))
    }

    /// Sends the flows of `recs` (at most [`MAX_INSTALL_BATCH`], at least
    /// one) as [`Self::install_batch`] does, without waiting for the
    /// card: [`Self::collect_install`] gives its answer. Up to
    /// [`MAX_POSTED`] may be in flight.
    pub(crate) fn post_install_batch<'a>(
        &mut self,
        recs: impl Iterator<Item = &'a FlowRecord>,
    ) -> Result<PostedInstall, AdminError> {
        let buf = match self.spare.pop() {
            Some(buf) => buf,
            None => self
                .dma
                .alloc(MAX_INSTALL_BATCH as usize * FLOW_RECORD_LEN)?,
        };
        let count = match write_records(&buf, recs) {
            Ok(count) => count,
            Err(e) => {
                self.keep_spare(buf);
                return Err(e);
            }
        };
        let cmd = install_cmd(&buf, count)?;
        let ticket = self.admin.post(cmd, buf)?;
        Ok(PostedInstall { ticket, count })
    }

    /// What the card made of a posted install, as [`Self::install_batch`]
    /// answers; waits for it if need be.
    pub(crate) fn collect_install(
        &mut self,
        p: PostedInstall,
    ) -> Result<(usize, Option<AdminStatus>), AdminError> {
        let (answer, buf) = self.admin.collect(p.ticket);
        if let Some(buf) = buf {
            self.keep_spare(buf);
        }
        Ok(batch_answer(&answer?, p.count))
    }

    /// Keeps an install buffer for the next post, up to [`MAX_POSTED`]
    /// (the capacity reserved; one more is freed).
    fn keep_spare(&mut self, buf: DmaBuffer) {
        let _ = self.spare.push_within_capacity(buf);
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

    /// Adds a masked rule.
    pub(crate) fn add_rule(&self, rec: &RuleRecord) -> Result<(), AdminError> {
        self.mem.write(0, &rec.to_bytes())?;
        let record = self.mem.dma_addr(0)?;
        self.admin.exec(AdminCmd::GftRuleAdd { record }).map(|_| ())
    }

    /// Removes masked rule `id`; what it counted.
    pub(crate) fn delete_rule(&self, id: u32) -> Result<RuleCounters, AdminError> {
        self.admin
            .exec(AdminCmd::GftRuleDelete { id })
            .map(|e| RuleCounters::read_result(&e))
    }

    /// What masked rule `id` counted.
    pub(crate) fn query_rule(&self, id: u32) -> Result<RuleCounters, AdminError> {
        self.admin
            .exec(AdminCmd::GftRuleQuery { id })
            .map(|e| RuleCounters::read_result(&e))
    }

    /// The card's counters.
    pub(crate) fn stats(&self) -> Result<CardGftStats, AdminError> {
        self.admin
            .exec(AdminCmd::GftQueryStats)
            .map(|e| CardGftStats::read_result(&e))
    }

    /// Polices exceptions: `rate` a second per remote address (0: no
    /// limit), `burst` at once.
    pub(crate) fn set_exception_rate(&self, rate: u32, burst: u32) -> Result<(), AdminError> {
        self.admin
            .exec(AdminCmd::GftSetExceptionRate { rate, burst })
            .map(|_| ())
    }

    /// The card's exception-path counters.
    pub(crate) fn exception_stats(&self) -> Result<CardExceptionStats, AdminError> {
        self.admin
            .exec(AdminCmd::GftQueryExceptionStats)
            .map(|e| CardExceptionStats::read_result(&e))
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

/// Writes up to [`MAX_INSTALL_BATCH`] of `recs` into `mem`; how many.
fn write_records<'a>(
    mem: &DmaBuffer,
    recs: impl Iterator<Item = &'a FlowRecord>,
) -> Result<usize, AdminError> {
    let mut count = 0;
    for rec in recs.take(MAX_INSTALL_BATCH as usize) {
        mem.write(count * FLOW_RECORD_LEN, &rec.to_bytes())?;
        count += 1;
    }
    Ok(count)
}

/// The command that installs the `count` records at the start of `mem`.
fn install_cmd(mem: &DmaBuffer, count: usize) -> Result<AdminCmd, AdminError> {
    Ok(AdminCmd::GftInstallBatch {
        records: mem.dma_addr(0)?,
        // CAST: at most MAX_INSTALL_BATCH.
        count: count as u32,
    })
}

/// How many of `count` records an install command's answer says went in
/// (the first ones), and why the next one did not.
fn batch_answer(entry: &[u8; AQ_ENTRY_SIZE], count: usize) -> (usize, Option<AdminStatus>) {
    let r = GftBatchResult::read_result(entry);
    // A card that claims more than it was given installed them all.
    let installed = (r.installed as usize).min(count);
    if installed == count {
        return (installed, None);
    }
    // A failure with no reason given (or an unknown one) is the card's.
    let why = match AdminStatus::from_raw(r.status) {
        Some(AdminStatus::Ok) | None => AdminStatus::DeviceError,
        Some(s) => s,
    };
    (installed, Some(why))
}
