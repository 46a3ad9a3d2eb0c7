// SPDX-License-Identifier: GPL-2.0

//! What the NIC asks of the function it belongs to, as traits the NIC
//! owns and the function implements (`crate::function`): the NIC is a
//! client of its function and names nothing above it.

use kernel::prelude::*;

use crate::linux::net::skbuff::SkBuff;

/// The function's side of events the NIC notices.
pub(crate) trait NicEvents: Send + Sync {
    /// The card's function was reset: everything the card held for the
    /// function's other parts (its RDMA engine's GIDs, QPs, CQs, MRs) is
    /// gone. Called from the NIC's work item, in process context, with
    /// no lock held; may sleep.
    fn card_was_reset(&self, nic_name: &CStr);
}

/// A PF's flow table (the GFT) as its NIC's data path and work items use
/// it: exceptions from NAPI, their decisions, aging, restore after a
/// function reset, `hw-tc-offload` and the `ethtool -S` counters.
pub(crate) trait FlowOffload: Send + Sync {
    /// NAPI of the exception queue received `skb`. Returns whether the
    /// exception work should run (it was queued).
    fn queue_exception(&self, skb: SkBuff) -> bool;

    /// The exception work: decides up to `budget` queued exceptions,
    /// handing each frame to send back to the card to `reinject`, which
    /// says whether it was sent. Returns whether more are queued.
    fn decide_exceptions(&self, budget: u32, reinject: &mut dyn FnMut(SkBuff) -> bool) -> bool;

    /// Periodic aging of idle flows (the health check, while up).
    fn age(&self);

    /// A function reset cleared the card's table: configure it again.
    fn restore(&self);

    /// `hw-tc-offload` turned on or off.
    fn set_cache(&self, on: bool) -> Result;

    /// Each counter, by name without the `gft_` prefix (`fetch`: ask the
    /// card for its own first).
    fn for_each_counter(&self, fetch: bool, each: &mut dyn FnMut(&str, u64));
}
