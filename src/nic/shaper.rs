// SPDX-License-Identifier: GPL-2.0

//! TX shapers (`net-shaper` netlink, [`crate::linux::net::shaper`]) on
//! the card's shaper tree ([`hw::shaper`]): the device is the card's root,
//! each TX queue its queue pair's shaper, each group node one of the
//! card's 16. Each has a peak rate and a burst, and a queue a weight
//! among its siblings; the card has no guaranteed rates or priorities,
//! and the core refuses those (and weights of nodes).
//!
//! The driver keeps what it gave the card, so a function reset (or any
//! queue restart) can give it again.

use kernel::prelude::*;

use super::Nic;
use crate::hw::{self, shaper as card, AdminCmd};
use crate::linux::net::shaper::{Handle, Scope, Shaper, ShaperAck, ShaperCap, ShaperCaps};

/// One card shaper as the driver set it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct CardShaper {
    parent: u16,
    burst: u32,
    rate: u64,
    weight: u32,
}

impl CardShaper {
    /// The command that sets card shaper `node` so.
    fn cmd(&self, node: u16) -> AdminCmd {
        AdminCmd::SetShaper {
            node,
            parent: self.parent,
            burst: self.burst,
            rate: self.rate,
            weight: self.weight,
        }
    }
}

/// Every card shaper as the driver set it.
pub(super) struct Shapers {
    nodes: [CardShaper; card::COUNT as usize],
    /// Whether any was ever set: if not, a start has nothing to give.
    used: bool,
}

impl Shapers {
    pub(super) const fn new() -> Self {
        Self {
            nodes: [CardShaper {
                parent: 0,
                burst: 0,
                rate: 0,
                weight: 0,
            }; card::COUNT as usize],
            used: false,
        }
    }
}

/// What the card's shapers can do, by scope: a peak rate in bits a
/// second and a burst everywhere; queues and group nodes hang below
/// group nodes; a queue has a weight among its siblings.
pub(super) fn caps(scope: Scope) -> ShaperCaps {
    let all = ShaperCap::MetricBps | ShaperCap::BwMax | ShaperCap::Burst;
    match scope {
        Scope::Netdev => all,
        Scope::Node => all | ShaperCap::Nesting,
        Scope::Queue => all | ShaperCap::Nesting | ShaperCap::Weight,
    }
}

impl Nic {
    /// The card shaper behind `handle` (a parent not given is the root).
    fn card_node(handle: Handle, ack: &mut ShaperAck<'_>) -> Result<u16> {
        match handle {
            Handle::Netdev | Handle::Unspec => Ok(card::ROOT),
            // The core checked the queue exists: below MAX_QUEUE_PAIRS.
            Handle::Queue(q) => u16::try_from(q)
                .ok()
                .filter(|&q| q < hw::MAX_QUEUE_PAIRS)
                .map(|q| card::QUEUE_BASE + q)
                .ok_or(EINVAL),
            Handle::Node(n) => match u16::try_from(n) {
                Ok(n) if n < card::NODES => Ok(card::NODE_BASE + n),
                _ => {
                    ack.refuse(c"the card has 16 shaper group nodes");
                    Err(ENOSPC)
                }
            },
        }
    }

    /// The card setting for `shaper` below `parent`, refused (nothing
    /// changed) if the card cannot do it.
    fn card_setting(
        &self,
        shaper: &Shaper,
        parent: u16,
        ack: &mut ShaperAck<'_>,
    ) -> Result<CardShaper> {
        // The core refuses what `caps` does not declare; a rate above the
        // port's speed is the driver's to refuse, as iavf and ice do.
        let line = u64::from(self.info.speed_mbps) * 1_000_000;
        if shaper.bw_max() > line {
            ack.refuse(c"bw-max exceeds the port's speed");
            return Err(EINVAL);
        }
        let Ok(burst) = u32::try_from(shaper.burst()) else {
            ack.refuse(c"burst above 4 GiB");
            return Err(EINVAL);
        };
        Ok(CardShaper {
            parent,
            burst,
            rate: shaper.bw_max(),
            weight: shaper.weight(),
        })
    }

    /// Gives the card `settings` (node, setting) in order and keeps them;
    /// on a refusal, what was given is taken back.
    fn apply_shapers(&self, settings: &[(u16, CardShaper)], ack: &mut ShaperAck<'_>) -> Result {
        let mut table = self.shapers.lock();
        for (done, &(node, s)) in settings.iter().enumerate() {
            if let Err(e) = self.admin.run(s.cmd(node)) {
                for &(node, _) in settings[..done].iter().rev() {
                    // Best effort: the next start gives the table again.
                    let _ = self.admin.run(table.nodes[usize::from(node)].cmd(node));
                }
                ack.refuse(c"the card refused the shaper setting (more than 4 group nodes deep?)");
                return Err(e);
            }
        }
        for &(node, s) in settings {
            table.nodes[usize::from(node)] = s;
        }
        table.used = true;
        Ok(())
    }

    /// `net_shaper_ops.set`.
    pub(super) fn set_shaper(&self, shaper: &Shaper, ack: &mut ShaperAck<'_>) -> Result {
        let node = Self::card_node(shaper.handle(), ack)?;
        let parent = Self::card_node(shaper.parent(), ack)?;
        let setting = self.card_setting(shaper, parent, ack)?;
        self.apply_shapers(&[(node, setting)], ack)
    }

    /// `net_shaper_ops.delete`.
    pub(super) fn delete_shaper(&self, handle: Handle, ack: &mut ShaperAck<'_>) -> Result {
        let node = Self::card_node(handle, ack)?;
        self.apply_shapers(&[(node, CardShaper::default())], ack)
    }

    /// `net_shaper_ops.group`: the node first, then each leaf below it.
    pub(super) fn group_shapers(
        &self,
        leaves: &[Shaper],
        node: &Shaper,
        ack: &mut ShaperAck<'_>,
    ) -> Result {
        let id = Self::card_node(node.handle(), ack)?;
        let parent = Self::card_node(node.parent(), ack)?;
        let mut settings = KVec::with_capacity(leaves.len() + 1, GFP_KERNEL)?;
        settings.push((id, self.card_setting(node, parent, ack)?), GFP_KERNEL)?;
        for leaf in leaves {
            let leaf_id = Self::card_node(leaf.handle(), ack)?;
            settings.push((leaf_id, self.card_setting(leaf, id, ack)?), GFP_KERNEL)?;
        }
        self.apply_shapers(&settings, ack)
    }

    /// Forgets the shapers of TX queues from `queues` on.
    pub(super) fn forget_queue_shapers(&self, queues: u16) {
        let mut table = self.shapers.lock();
        for q in queues..hw::MAX_QUEUE_PAIRS {
            table.nodes[usize::from(card::QUEUE_BASE + q)] = CardShaper::default();
        }
    }

    /// Gives the card every shaper (after a function reset it has none;
    /// at a restart with fewer queues the gone queues' go).
    pub(super) fn push_shapers(&self) -> Result {
        let table = self.shapers.lock();
        if !table.used {
            return Ok(());
        }
        for (node, s) in (0u16..).zip(table.nodes.iter()) {
            self.admin.run(s.cmd(node))?;
        }
        Ok(())
    }
}
