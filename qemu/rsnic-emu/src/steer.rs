// SPDX-License-Identifier: GPL-2.0

//! Receive steering: the RSS contexts (each a key, an indirection table
//! and the hashed fields) and the steering rules that send a flow to a
//! queue pair or through a context.

use std::collections::BTreeMap;

use crate::hw::{self, rss_fields, AdminStatus, FlowRule, RssFlow};
use crate::rss;

/// One RSS context.
#[derive(Clone, Debug)]
pub struct RssContext {
    /// The Toeplitz hash under the context's key.
    pub hash: rss::Toeplitz,
    /// Indirection table; `None` (context 0 until the driver sets one):
    /// round-robin over the running pairs.
    pub table: Option<[u8; hw::RSS_TABLE_LEN]>,
    /// Hashed fields per [`RssFlow`] ([`rss_fields`] masks).
    pub fields: [u8; RssFlow::ALL.len()],
    /// Symmetric hashing ([`hw::rss_xfrm::SYM_XOR`]).
    pub sym_xor: bool,
}

impl Default for RssContext {
    fn default() -> Self {
        Self {
            hash: rss::Toeplitz::new(&rss::DEFAULT_KEY),
            table: None,
            fields: [rss_fields::ALL; RssFlow::ALL.len()],
            sym_xor: false,
        }
    }
}

/// Where a frame goes: the queue pair and its CQE hash flags and hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pick {
    /// Queue pair index.
    pub qp: usize,
    /// [`hw::Cqe::HASH`] and [`hw::Cqe::HASH_L4`] bits.
    pub flags: u16,
    /// The RSS hash, when [`hw::Cqe::HASH`].
    pub hash: u32,
}

/// The RSS contexts and steering rules of a function.
#[derive(Debug)]
pub struct Steering {
    /// Context 0 always exists; the others once the driver sets them.
    contexts: Vec<Option<RssContext>>,
    /// Rules by index (lowest first wins).
    rules: BTreeMap<u16, FlowRule>,
}

impl Default for Steering {
    fn default() -> Self {
        let mut contexts = vec![None; hw::MAX_RSS_CONTEXTS as usize];
        contexts[0] = Some(RssContext::default());
        Self {
            contexts,
            rules: BTreeMap::new(),
        }
    }
}

impl Steering {
    /// Sets (or creates) context `context` from a configuration block.
    pub fn set_context(&mut self, context: u32, block: &[u8; hw::RSS_CONFIG_LEN]) -> AdminStatus {
        let (key, rest) = block.split_at(hw::RSS_KEY_LEN);
        let (table, rest) = rest.split_at(hw::RSS_TABLE_LEN);
        let (fields, xfrm) = rest.split_at(RssFlow::ALL.len());
        let xfrm = xfrm[0];
        let Some(slot) = self.contexts.get_mut(context as usize) else {
            return AdminStatus::BadParam;
        };
        if table.iter().any(|&q| u16::from(q) >= hw::MAX_QUEUE_PAIRS)
            || RssFlow::ALL
                .iter()
                .zip(fields)
                .any(|(&flow, &f)| f & !rss_fields::allowed(flow) != 0)
            || xfrm & !hw::rss_xfrm::SYM_XOR != 0
        {
            return AdminStatus::BadParam;
        }
        *slot = Some(RssContext {
            hash: rss::Toeplitz::new(key.try_into().expect("split at the key length")),
            table: Some(table.try_into().expect("split at the table length")),
            fields: fields.try_into().expect("split at the fields' length"),
            sym_xor: xfrm & hw::rss_xfrm::SYM_XOR != 0,
        });
        AdminStatus::Ok
    }

    /// Deletes context `context` (not 0).
    pub fn del_context(&mut self, context: u32) -> AdminStatus {
        match self.contexts.get_mut(context as usize) {
            Some(slot) if context != 0 && slot.is_some() => {
                *slot = None;
                AdminStatus::Ok
            }
            Some(_) if context != 0 => AdminStatus::NotFound,
            _ => AdminStatus::BadParam,
        }
    }

    /// Adds or replaces a rule.
    pub fn set_rule(&mut self, rule: FlowRule) -> AdminStatus {
        let valid = u32::from(rule.index) < hw::MAX_FLOW_RULES
            && RssFlow::from_raw(rule.flow).is_some()
            && rule.fields & !rss_fields::ALL == 0
            && rule.flags & !FlowRule::RSS == 0
            && u32::from(rule.context) < hw::MAX_RSS_CONTEXTS
            && rule.queue < hw::MAX_QUEUE_PAIRS;
        if !valid {
            return AdminStatus::BadParam;
        }
        self.rules.insert(rule.index, rule);
        AdminStatus::Ok
    }

    /// Deletes a rule.
    pub fn del_rule(&mut self, index: u32) -> AdminStatus {
        match u16::try_from(index)
            .ok()
            .and_then(|i| self.rules.remove(&i))
        {
            Some(_) => AdminStatus::Ok,
            None if index < hw::MAX_FLOW_RULES => AdminStatus::NotFound,
            None => AdminStatus::BadParam,
        }
    }

    /// Where `frame` goes, given the running queue pairs (not empty): the
    /// first matching rule's pair or context, else context 0. A pick
    /// naming a pair that is not running falls back to the first running
    /// one.
    pub fn pick(&self, frame: &[u8], running: &[usize]) -> Pick {
        let no_hash = Pick {
            qp: running[0],
            flags: 0,
            hash: 0,
        };
        // Parsed once for the rules and the hash.
        let Some(t) = rss::tuple(frame) else {
            return no_hash;
        };
        let (context, offset) = match self.rules.values().find(|r| matches(r, &t)) {
            Some(r) if r.flags & FlowRule::RSS == 0 => {
                let qp = usize::from(r.queue);
                let qp = if running.contains(&qp) {
                    qp
                } else {
                    running[0]
                };
                return Pick {
                    qp,
                    flags: 0,
                    hash: 0,
                };
            }
            Some(r) => (usize::from(r.context), usize::from(r.queue)),
            None => (0, 0),
        };
        let ctx = self
            .contexts
            .get(context)
            .and_then(Option::as_ref)
            .or(self.contexts[0].as_ref())
            .expect("context 0 exists");
        let Some(f) = rss::tuple_fields(&t, &ctx.fields, ctx.sym_xor) else {
            return no_hash;
        };
        let hash = ctx.hash.hash(f.input());
        let entry = hash as usize % rss::TABLE_SIZE;
        let qp = match &ctx.table {
            Some(table) => usize::from(table[entry]) + offset,
            None => running[entry % running.len()] + offset,
        };
        let l4 = if f.l4 { hw::Cqe::HASH_L4 } else { 0 };
        Pick {
            qp: if running.contains(&qp) {
                qp
            } else {
                running[0]
            },
            flags: hw::Cqe::HASH | l4,
            hash,
        }
    }
}

/// Whether a frame (its tuple) is of the rule's flow type, not a
/// fragment, and its chosen fields equal.
fn matches(rule: &FlowRule, t: &rss::Tuple<'_>) -> bool {
    let (Some(flow), Some((sport, dport))) = (t.flow, t.ports) else {
        return false;
    };
    if flow as u8 != rule.flow {
        return false;
    }
    let alen = if flow.is_ipv6() { 16 } else { 4 };
    let want = |bit: u8| rule.fields & bit != 0;
    (!want(rss_fields::IP_SRC) || t.src == &rule.src_ip[..alen])
        && (!want(rss_fields::IP_DST) || t.dst == &rule.dst_ip[..alen])
        && (!want(rss_fields::L4_SRC) || sport == rule.src_port.to_be_bytes())
        && (!want(rss_fields::L4_DST) || dport == rule.dst_port.to_be_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPv4/TCP frame 10.0.0.1:sport -> 10.0.0.2:dport.
    fn tcp4(sport: u16, dport: u16) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 20 + 20];
        f[12] = 0x08;
        f[14] = 0x45;
        f[14 + 9] = 6;
        f[14 + 12..14 + 20].copy_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
        f[34..36].copy_from_slice(&sport.to_be_bytes());
        f[36..38].copy_from_slice(&dport.to_be_bytes());
        f
    }

    fn rule(index: u16, dport: u16, queue: u16) -> FlowRule {
        FlowRule {
            index,
            flow: RssFlow::Tcp4 as u8,
            fields: rss_fields::L4_DST,
            queue,
            dst_port: dport,
            ..Default::default()
        }
    }

    const RUNNING: [usize; 4] = [0, 1, 2, 3];

    #[test]
    fn a_rule_sends_its_flow_to_its_queue() {
        let mut s = Steering::default();
        assert_eq!(s.set_rule(rule(5, 80, 3)), AdminStatus::Ok);
        for sport in 1000..1032 {
            assert_eq!(s.pick(&tcp4(sport, 80), &RUNNING).qp, 3);
        }
        // Other ports spread by RSS (not all on one queue).
        let qps: std::collections::HashSet<_> = (1000..1064)
            .map(|p| s.pick(&tcp4(p, 81), &RUNNING).qp)
            .collect();
        assert!(qps.len() > 1);
        // The lower index wins.
        assert_eq!(s.set_rule(rule(2, 80, 1)), AdminStatus::Ok);
        assert_eq!(s.pick(&tcp4(1000, 80), &RUNNING).qp, 1);
        assert_eq!(s.del_rule(2), AdminStatus::Ok);
        assert_eq!(s.del_rule(2), AdminStatus::NotFound);
        assert_eq!(s.pick(&tcp4(1000, 80), &RUNNING).qp, 3);
        // A pair not running: the first running one.
        assert_eq!(s.pick(&tcp4(1000, 80), &[0, 1]).qp, 0);
    }

    #[test]
    fn a_context_spreads_over_its_own_table() {
        let mut s = Steering::default();
        let mut block = [0u8; hw::RSS_CONFIG_LEN];
        block[..hw::RSS_KEY_LEN].copy_from_slice(&rss::DEFAULT_KEY);
        // Context 1: queues 2 and 3 only.
        for (i, e) in block[hw::RSS_KEY_LEN..][..hw::RSS_TABLE_LEN]
            .iter_mut()
            .enumerate()
        {
            *e = 2 + (i % 2) as u8;
        }
        let fields_at = hw::RSS_KEY_LEN + hw::RSS_TABLE_LEN;
        block[fields_at..][..RssFlow::ALL.len()].fill(rss_fields::ALL);
        // A transform the card does not know: refused.
        block[hw::RSS_CONFIG_LEN - 1] = 2;
        assert_eq!(s.set_context(1, &block), AdminStatus::BadParam);
        block[hw::RSS_CONFIG_LEN - 1] = hw::rss_xfrm::SYM_XOR;
        assert_eq!(s.set_context(1, &block), AdminStatus::Ok);
        assert!(s.contexts[1].as_ref().is_some_and(|c| c.sym_xor));
        block[hw::RSS_CONFIG_LEN - 1] = 0;
        // The flow label: for IPv6 flow types only.
        block[fields_at + RssFlow::Tcp4 as usize] |= rss_fields::FLOW_LABEL;
        assert_eq!(s.set_context(1, &block), AdminStatus::BadParam);
        block[fields_at + RssFlow::Tcp4 as usize] = rss_fields::ALL;
        block[fields_at + RssFlow::Udp6 as usize] |= rss_fields::FLOW_LABEL;
        assert_eq!(s.set_context(1, &block), AdminStatus::Ok);
        let mut r = rule(0, 80, 0);
        r.flags = FlowRule::RSS;
        r.context = 1;
        assert_eq!(s.set_rule(r), AdminStatus::Ok);
        let qps: std::collections::HashSet<_> = (1000..1064)
            .map(|p| s.pick(&tcp4(p, 80), &RUNNING).qp)
            .collect();
        assert_eq!(qps, [2, 3].into_iter().collect());
        // Deleted: the rule falls back to context 0 (all four queues).
        assert_eq!(s.del_context(1), AdminStatus::Ok);
        assert_eq!(s.del_context(1), AdminStatus::NotFound);
        assert_eq!(s.del_context(0), AdminStatus::BadParam);
        let qps: std::collections::HashSet<_> = (1000..1064)
            .map(|p| s.pick(&tcp4(p, 80), &RUNNING).qp)
            .collect();
        assert_eq!(qps.len(), 4);
    }

    #[test]
    fn bad_rules_are_refused() {
        let mut s = Steering::default();
        let mut r = rule(0, 80, 0);
        r.index = hw::MAX_FLOW_RULES as u16;
        assert_eq!(s.set_rule(r), AdminStatus::BadParam);
        let mut r = rule(0, 80, 0);
        r.flow = 9;
        assert_eq!(s.set_rule(r), AdminStatus::BadParam);
        let mut r = rule(0, 80, 0);
        r.queue = hw::MAX_QUEUE_PAIRS;
        assert_eq!(s.set_rule(r), AdminStatus::BadParam);
        assert_eq!(s.del_rule(hw::MAX_FLOW_RULES), AdminStatus::BadParam);
        assert_eq!(
            s.set_context(hw::MAX_RSS_CONTEXTS, &[0; hw::RSS_CONFIG_LEN]),
            AdminStatus::BadParam
        );
    }
}
