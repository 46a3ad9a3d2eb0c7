// SPDX-License-Identifier: GPL-2.0

//! What the NIC asks of the function it belongs to, as traits the NIC
//! owns and the function implements (`crate::function`): the NIC is a
//! client of its function and names nothing above it.

use kernel::prelude::*;

use super::health::QueueFault;
use crate::hw::gft::Encap;
use crate::linux::net::{
    flower::{FlowerCmd, TunnelKey},
    skbuff::SkBuff,
};

/// The function's side of what the NIC notices: the function owns the
/// card's reset and its counters.
pub(crate) trait NicEvents: Send + Sync {
    /// The card's state is unknown (`lost_command`: it lost track of an
    /// admin command; else it came back without its state): the function
    /// resets it, waits until it is ready and starts its admin queue
    /// again. What the card held for the NIC (queue pairs, MAC, RX
    /// filter) is the NIC's to give back; the function's other parts
    /// (the RDMA half, the GFT) are restored by the function. Process
    /// context, under RTNL; may sleep.
    fn reset_function(&self, lost_command: bool) -> Result;

    /// The function's counters of the card, for `ethtool -S`.
    fn counters(&self) -> CardCounters;

    /// A queue pair's fault, for the function to report to the queue
    /// reporters (`super::health::NicReporters`) from its own work. Any
    /// process context; does not wait.
    fn queue_fault(&self, fault: QueueFault);

    /// A function reset rebuilt every queue pair: the queue reporters
    /// are healthy again. Process context.
    fn queues_rebuilt(&self);
}

/// What the function counted of its card.
pub(crate) struct CardCounters {
    /// Function resets for a command the card lost.
    pub(crate) function_resets: u64,
    /// Times the card stopped answering.
    pub(crate) card_lost: u64,
}

/// A PF's flow table (the GFT) as its NIC's data path and work items use
/// it: exceptions from NAPI, their decisions, aging, restore after a
/// function reset, `hw-tc-offload` and the `ethtool -S` counters.
/// Where a tc flower rule applies and where it sends packets.
pub(crate) struct FlowerPorts<'a> {
    /// The switch port of the block's device (the synthetic NIC's: the
    /// wire; a representor's: its VF's; a VXLAN device's: the wire).
    pub(crate) in_port: u16,
    /// The block is a VXLAN device's: tunnelled packets only.
    pub(crate) tunnel: bool,
    /// The switch port of a redirect's target device (by ifindex), or
    /// why it has none.
    pub(crate) redirect: &'a dyn Fn(i32) -> Result<u16, &'static CStr>,
    /// The outer headers of a tunnel a rule sends into, or why there
    /// are none.
    pub(crate) encap: &'a dyn Fn(&TunnelKey) -> Result<Encap, &'static CStr>,
}

pub(crate) trait FlowOffload: Send + Sync {
    /// NAPI of the exception queue received `skb`. Returns whether the
    /// exception work should run (it was queued).
    fn queue_exception(&self, skb: SkBuff) -> bool;

    /// The exception work: decides up to `budget` queued exceptions,
    /// handing each frame to send back to the card to `reinject` with
    /// whether more follow at once (the doorbell waits for the last);
    /// `reinject` says whether it was sent. Returns whether more are
    /// queued.
    fn decide_exceptions(
        &self,
        budget: u32,
        reinject: &mut dyn FnMut(SkBuff, bool) -> bool,
    ) -> bool;

    /// A function reset cleared the card's table: configure it again.
    fn restore(&self);

    /// `hw-tc-offload` turned on or off.
    fn set_cache(&self, on: bool) -> Result;

    /// A tc flower request of an ingress block of the card's switch
    /// (`ports`).
    fn flower(&self, cmd: FlowerCmd<'_>, ports: &FlowerPorts<'_>) -> Result;

    /// Whether any policy rule or tc flower rule is in place.
    fn has_rules(&self) -> bool;

    /// Each counter, by name without the `gft_` prefix (`fetch`: ask the
    /// card for its own first).
    fn for_each_counter(&self, fetch: bool, each: &mut dyn FnMut(&str, u64));
}
