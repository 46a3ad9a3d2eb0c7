// SPDX-License-Identifier: GPL-2.0

//! Receive steering beyond the default RSS context: the additional RSS
//! contexts (`ethtool -X ... context`) and the steering rules
//! (`ethtool -N flow-type ...`) the card applies before RSS.
//!
//! The driver keeps what it gave the card, so a function reset (or any
//! queue restart) can give it again.

use kernel::prelude::*;

use super::{Config, Nic};
use crate::hw::{self, rss_fields, AdminCmd, RssFlow};
use crate::linux::net::ethtool::{FlowAction, FlowRule, InputXfrm, RuleFlow, Rxfh};

/// An additional RSS context as the card has it.
#[derive(Clone, Copy)]
pub(super) struct RssContext {
    key: [u8; hw::RSS_KEY_LEN],
    table: [u8; hw::RSS_TABLE_LEN],
    /// Hashed fields per [`RssFlow`] ([`rss_fields`] masks).
    fields: [u8; RssFlow::ALL.len()],
    /// Input transform ([`hw::rss_xfrm`] bits).
    xfrm: u8,
}

/// An input transform as the card's [`hw::rss_xfrm`] bits.
pub(super) fn card_xfrm(xfrm: InputXfrm) -> u8 {
    match xfrm {
        InputXfrm::SymXor => hw::rss_xfrm::SYM_XOR,
        InputXfrm::None => 0,
    }
}

/// The input transform the card's [`hw::rss_xfrm`] bits are.
pub(super) fn xfrm_of_card(bits: u8) -> InputXfrm {
    if bits & hw::rss_xfrm::SYM_XOR != 0 {
        InputXfrm::SymXor
    } else {
        InputXfrm::None
    }
}

impl RssContext {
    /// The highest queue its table names.
    fn highest_queue(&self) -> u32 {
        u32::from(self.table.iter().copied().max().unwrap_or(0))
    }
}

/// The additional RSS contexts and the steering rules, by ID and
/// location.
pub(super) struct Steering {
    contexts: [Option<RssContext>; hw::MAX_RSS_CONTEXTS as usize],
    rules: [Option<FlowRule>; hw::MAX_FLOW_RULES as usize],
}

impl Steering {
    /// No contexts, no rules.
    pub(super) const fn new() -> Self {
        Self {
            contexts: [None; hw::MAX_RSS_CONTEXTS as usize],
            rules: [None; hw::MAX_FLOW_RULES as usize],
        }
    }

    /// Every rule with its location, in location order.
    pub(super) fn rules(&self) -> impl Iterator<Item = (u32, &FlowRule)> {
        (0u32..)
            .zip(self.rules.iter())
            .filter_map(|(loc, r)| r.as_ref().map(|r| (loc, r)))
    }

    /// The highest queue any context or rule can send to, if any: the
    /// queue count must stay above it.
    pub(super) fn max_queue(&self) -> Option<u32> {
        let ctx = |c: u32| {
            self.contexts
                .get(c as usize)
                .copied()
                .flatten()
                .map_or(0, |ctx| ctx.highest_queue())
        };
        let contexts = self
            .contexts
            .iter()
            .flatten()
            .map(RssContext::highest_queue);
        let rules = self.rules().map(|(_, r)| match r.action {
            FlowAction::Queue(q) => q,
            FlowAction::Rss { context, offset } => ctx(context) + offset,
            FlowAction::Drop => 0,
        });
        Iterator::chain(contexts, rules).max()
    }
}

/// A user's table (as many entries as [`super::rss_table_len`] gives,
/// each below `queues`) as the card's: repeated to fill its entries.
pub(super) fn card_table(table: &[u32], queues: u16) -> Result<[u8; hw::RSS_TABLE_LEN]> {
    let len = table.len();
    if len == 0 || hw::RSS_TABLE_LEN % len != 0 || table.iter().any(|&q| q >= u32::from(queues)) {
        return Err(EINVAL);
    }
    // CAST: below the queue count (checked above), so each fits.
    Ok(core::array::from_fn(|i| table[i % len] as u8))
}

/// The card's table for a user's table of `old_len` entries resized to
/// `new_len` as the core resizes it (`ethtool_rxfh_ctxs_resize`): cut to
/// its first `new_len` entries, or repeated to fill them. Both lengths
/// divide the card's; the card's first `old_len` entries are the user's.
pub(super) fn resized_table(
    card: &[u8; hw::RSS_TABLE_LEN],
    old_len: usize,
    new_len: usize,
) -> [u8; hw::RSS_TABLE_LEN] {
    core::array::from_fn(|i| card[i % new_len.max(1) % old_len.max(1)])
}

impl Nic {
    /// Gives the card the default RSS context as `cfg` has it.
    pub(super) fn push_rss(&self, cfg: &Config) -> Result {
        let ctx = RssContext {
            key: cfg.rss_key,
            table: cfg.rss_table,
            fields: cfg.rss_fields,
            xfrm: cfg.rss_xfrm,
        };
        self.push_rss_context(0, &ctx)
    }

    /// Gives the card RSS context `id` (0: the default). The caller
    /// holds the configuration lock (the block is shared).
    fn push_rss_context(&self, id: u32, ctx: &RssContext) -> Result {
        self.block_mem.write(0, &ctx.key)?;
        self.block_mem.write(hw::RSS_KEY_LEN, &ctx.table)?;
        let fields_at = hw::RSS_KEY_LEN + hw::RSS_TABLE_LEN;
        self.block_mem.write(fields_at, &ctx.fields)?;
        self.block_mem
            .write(fields_at + ctx.fields.len(), &[ctx.xfrm])?;
        self.admin.run(AdminCmd::SetRss {
            config: self.block_mem.dma_addr(0)?,
            context: id,
        })
    }

    /// Gives the card every context and rule again (after a reset). The
    /// caller holds the configuration lock.
    pub(super) fn push_steering(&self) -> Result {
        let steering = self.steering.lock();
        for (id, ctx) in (0u32..).zip(steering.contexts.iter()) {
            if let Some(ctx) = ctx {
                self.push_rss_context(id, ctx)?;
            }
        }
        for (loc, rule) in steering.rules() {
            self.admin
                .run(AdminCmd::SetFlowRule(card_rule(loc, rule)?))?;
        }
        Ok(())
    }

    /// Creates RSS context `id`: the table given or one spreading over
    /// the queues in use, the key given or the default context's, every
    /// field hashed (the card's default), with input transform `xfrm`.
    pub(super) fn create_rss_context(
        &self,
        id: u32,
        table: Option<&[u32]>,
        key: Option<&[u8]>,
        xfrm: InputXfrm,
        out: Rxfh<'_>,
    ) -> Result {
        let cfg = self.config.lock();
        let table = match table {
            Some(t) => card_table(t, cfg.queues)?,
            None => Config::default_rss_table(cfg.queues),
        };
        let key = match key {
            Some(k) => k.try_into().map_err(|_| EINVAL)?,
            None => cfg.rss_key,
        };
        for (o, &q) in out.table.iter_mut().zip(table.iter()) {
            *o = u32::from(q);
        }
        for (o, &b) in out.key.iter_mut().zip(key.iter()) {
            *o = b;
        }
        let ctx = RssContext {
            key,
            table,
            fields: [rss_fields::ALL; RssFlow::ALL.len()],
            xfrm: card_xfrm(xfrm),
        };
        self.set_rss_context(id, ctx)
    }

    /// A new table, key and/or transform for context `id` (`old`: its
    /// table and key).
    pub(super) fn modify_rss_context(
        &self,
        id: u32,
        table: Option<&[u32]>,
        key: Option<&[u8]>,
        xfrm: Option<InputXfrm>,
        old: Rxfh<'_>,
    ) -> Result {
        let cfg = self.config.lock();
        let mut ctx = self.context(id)?;
        ctx.table = card_table(table.unwrap_or(old.table), cfg.queues)?;
        ctx.key = key.unwrap_or(old.key).try_into().map_err(|_| EINVAL)?;
        if let Some(xfrm) = xfrm {
            ctx.xfrm = card_xfrm(xfrm);
        }
        self.set_rss_context(id, ctx)
    }

    /// Resizes every additional context's table from `old_len` to
    /// `new_len` entries as the core resizes its copies, and gives the
    /// card those whose entries changed (a table cut short that was not
    /// periodic). The caller holds the configuration lock.
    pub(super) fn resize_rss_contexts(&self, old_len: usize, new_len: usize) -> Result {
        let mut steering = self.steering.lock();
        for (id, slot) in (0u32..).zip(steering.contexts.iter_mut()) {
            let Some(ctx) = slot else {
                continue;
            };
            let table = resized_table(&ctx.table, old_len, new_len);
            if table != ctx.table {
                ctx.table = table;
                self.push_rss_context(id, ctx)?;
            }
        }
        Ok(())
    }

    /// Context `id` (not 0) as the driver gave it to the card.
    fn context(&self, id: u32) -> Result<RssContext> {
        self.steering
            .lock()
            .contexts
            .get(id as usize)
            .copied()
            .flatten()
            .filter(|_| id != 0)
            .ok_or(ENOENT)
    }

    /// The fields context `id` (not 0) hashes per [`RssFlow`].
    pub(super) fn context_fields(&self, id: u32) -> Result<[u8; RssFlow::ALL.len()]> {
        Ok(self.context(id)?.fields)
    }

    /// Context `id` (not 0) hashes `mask` for `flow`.
    pub(super) fn set_context_fields(&self, id: u32, flow: RssFlow, mask: u8) -> Result {
        let _cfg = self.config.lock();
        let mut ctx = self.context(id)?;
        ctx.fields[flow as usize] = mask;
        self.set_rss_context(id, ctx)
    }

    /// Gives the card context `id` and keeps it. The caller holds the
    /// configuration lock (the block is shared).
    fn set_rss_context(&self, id: u32, ctx: RssContext) -> Result {
        if id == 0 || id >= hw::MAX_RSS_CONTEXTS {
            return Err(EINVAL);
        }
        self.push_rss_context(id, &ctx)?;
        self.steering.lock().contexts[id as usize] = Some(ctx);
        Ok(())
    }

    /// Deletes context `id`.
    pub(super) fn remove_rss_context(&self, id: u32) -> Result {
        let _cfg = self.config.lock();
        let mut steering = self.steering.lock();
        let slot = steering.contexts.get_mut(id as usize).ok_or(EINVAL)?;
        if slot.is_none() {
            return Err(ENOENT);
        }
        self.admin.run(AdminCmd::DelRssContext { context: id })?;
        *slot = None;
        Ok(())
    }

    /// Adds or replaces the rule at `location`; a rule with the same
    /// match elsewhere is replaced instead (as fbnic does: two rules
    /// for one flow cannot both apply). Returns the location used.
    pub(super) fn set_flow_rule(&self, location: u32, rule: FlowRule) -> Result<u32> {
        let cfg = self.config.lock();
        let mut steering = self.steering.lock();
        let queues = u32::from(cfg.queues);
        let highest = match rule.action {
            FlowAction::Queue(q) => q,
            FlowAction::Rss { context: 0, offset } => queues - 1 + offset,
            FlowAction::Rss { context, offset } => {
                let ctx = steering
                    .contexts
                    .get(context as usize)
                    .copied()
                    .flatten()
                    .ok_or(EINVAL)?;
                ctx.highest_queue() + offset
            }
            // The card has no drop action.
            FlowAction::Drop => return Err(crate::linux::eopnotsupp()),
        };
        if highest >= queues {
            return Err(EINVAL);
        }
        let location = steering
            .rules()
            .find(|(_, r)| same_match(r, &rule))
            .map_or(location, |(loc, _)| loc);
        let slot = steering.rules.get_mut(location as usize).ok_or(EINVAL)?;
        self.admin
            .run(AdminCmd::SetFlowRule(card_rule(location, &rule)?))?;
        *slot = Some(rule);
        Ok(location)
    }

    /// Deletes the rule at `location`.
    pub(super) fn del_flow_rule(&self, location: u32) -> Result {
        let _cfg = self.config.lock();
        let mut steering = self.steering.lock();
        let slot = steering.rules.get_mut(location as usize).ok_or(ENOENT)?;
        if slot.is_none() {
            return Err(ENOENT);
        }
        self.admin.run(AdminCmd::DelFlowRule { index: location })?;
        *slot = None;
        Ok(())
    }

    /// Deletes every rule (`ntuple-filters` turned off).
    pub(super) fn clear_flow_rules(&self) -> Result {
        let _cfg = self.config.lock();
        let mut steering = self.steering.lock();
        for (loc, slot) in (0u32..).zip(steering.rules.iter_mut()) {
            if slot.is_some() {
                self.admin.run(AdminCmd::DelFlowRule { index: loc })?;
                *slot = None;
            }
        }
        Ok(())
    }
}

/// Whether two rules match the same frames.
fn same_match(a: &FlowRule, b: &FlowRule) -> bool {
    (a.flow, a.src_ip, a.dst_ip, a.src_port, a.dst_port)
        == (b.flow, b.src_ip, b.dst_ip, b.src_port, b.dst_port)
}

/// The card's form of the rule at `location`.
fn card_rule(location: u32, rule: &FlowRule) -> Result<hw::FlowRule> {
    let flow = match rule.flow {
        RuleFlow::Tcp4 => RssFlow::Tcp4,
        RuleFlow::Udp4 => RssFlow::Udp4,
        RuleFlow::Tcp6 => RssFlow::Tcp6,
        RuleFlow::Udp6 => RssFlow::Udp6,
    };
    let mut fields = 0;
    for (present, bit) in [
        (rule.src_ip.is_some(), rss_fields::IP_SRC),
        (rule.dst_ip.is_some(), rss_fields::IP_DST),
        (rule.src_port.is_some(), rss_fields::L4_SRC),
        (rule.dst_port.is_some(), rss_fields::L4_DST),
    ] {
        if present {
            fields |= bit;
        }
    }
    let (queue, context, flags) = match rule.action {
        FlowAction::Queue(q) => (q, 0, 0),
        FlowAction::Rss { context, offset } => (offset, context, hw::FlowRule::RSS),
        FlowAction::Drop => return Err(crate::linux::eopnotsupp()),
    };
    Ok(hw::FlowRule {
        index: u16::try_from(location).map_err(|_| EINVAL)?,
        flow: flow as u8,
        fields,
        queue: u16::try_from(queue).map_err(|_| EINVAL)?,
        context: u8::try_from(context).map_err(|_| EINVAL)?,
        flags,
        src_port: rule.src_port.unwrap_or(0),
        dst_port: rule.dst_port.unwrap_or(0),
        src_ip: rule.src_ip.unwrap_or_default(),
        dst_ip: rule.dst_ip.unwrap_or_default(),
    })
}
