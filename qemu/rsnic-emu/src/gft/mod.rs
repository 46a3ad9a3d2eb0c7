// SPDX-License-Identifier: GPL-2.0

//! The card's GFT engine (AccelNet's Generic Flow Table): every packet
//! crossing the card is parsed and looked up by exact match; a hit has its
//! flow's action applied in the card, a miss goes to the host's exception
//! queue for policy to decide (and install a flow).
//!
//! The engine is pure: it turns a packet into [`Output`]s and leaves the
//! delivery to the [`crate::card::Card`].

pub mod classifier;
mod meter;
pub mod parse;
mod pending;
mod policer;
pub mod rule_cache;
pub mod rules;
mod slab;
mod switch;
mod table;
pub mod transform;

use std::fmt::Write as _;
use std::time::Instant;

use log::debug;

use crate::dma::DmaSpace;
use crate::hw::gft::{
    self, action, config, tcp_flags, CardExceptionStats, CardGftStats, Direction, ExceptionMeta,
    ExceptionReason, FlowKey, FlowRecord, ReinjectMeta, DUMP_RECORD_LEN, FLOW_RECORD_LEN, KEY_LEN,
    META_LEN,
};
use crate::hw::gft_rule::{RuleCounters, RuleRecord, RULE_RECORD_LEN};
use crate::hw::{AdminCmd, AdminStatus, GftBatchResult, GftDumpResult, AQ_ENTRY_SIZE};
use classifier::{port, AddError, MatchKey};
use pending::Pending;
use policer::Policers;
use rules::{Decision, RuleError, RuleStats, Rules};
use table::FlowTable;

/// Packets whose lookups overlap in [`Gft::process_burst`].
pub const BURST: usize = 16;

/// A packet's lookup under way (its key is the probe's).
struct Lookup {
    tcp_flags: u8,
    probe: table::Probe,
    /// The slot whose tag matched, once the bucket was read (its key not
    /// compared yet).
    candidate: Option<u32>,
}

/// Most records one dump command may ask for.
pub const MAX_DUMP_RECORDS: u32 = 4096;

/// Where the engine sends a packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// Onto the wire.
    Wire(Vec<u8>),
    /// To the host, through the data path (PF or VF).
    Host(Vec<u8>),
    /// To the PF's exception queue: [`ExceptionMeta`] then the frame.
    Exception(Vec<u8>),
    /// Switchdev mode: to the VF's port, whose function receives it.
    Vf(Vec<u8>),
}

impl Output {
    fn onward(dir: Direction, frame: Vec<u8>) -> Self {
        match dir {
            Direction::Tx => Self::Wire(frame),
            Direction::Rx => Self::Host(frame),
        }
    }

    /// Out of switch port `port` ([`action::FORWARD`]).
    fn to_port(port: u16, frame: Vec<u8>) -> Self {
        match port {
            port::UPLINK => Self::Wire(frame),
            port::VF0 => Self::Vf(frame),
            _ => Self::Host(frame),
        }
    }
}

/// Which way a packet that came in on switch port `from` crosses the
/// card: from the wire to the host, or from a host function to the wire.
fn direction(from: u16) -> Direction {
    if from == port::UPLINK {
        Direction::Rx
    } else {
        Direction::Tx
    }
}

/// Counters the engine keeps beyond [`CardGftStats`].
#[derive(Clone, Copy, Debug, Default)]
pub struct EngineStats {
    /// What the driver can query.
    pub card: CardGftStats,
    /// Packets dropped by a drop action.
    pub dropped: u64,
    /// Packets an action could not be applied to (dropped).
    pub transform_errors: u64,
    /// Reinjected packets handled.
    pub reinjected: u64,
    /// Reinjected packets with an invalid header (dropped).
    pub bad_reinjects: u64,
    /// Missed packets a masked rule decided.
    pub rule_hits: u64,
    /// Missed packets no masked rule matched (exceptions, then).
    pub rule_misses: u64,
    /// Switchdev mode: packets from a VF no rule forwarded, sent to its
    /// representor.
    pub port_misses: u64,
}

/// The engine.
#[derive(Debug)]
pub struct Gft {
    flags: u32,
    generation: u32,
    table: FlowTable,
    pending: Pending,
    policers: Policers,
    /// Masked rules, for what the exact-match table misses.
    pub rules: Rules,
    /// Switchdev mode ([`AdminCmd::SetEswitchMode`]).
    switchdev: bool,
    /// Counters.
    pub stats: EngineStats,
}

impl Default for Gft {
    fn default() -> Self {
        Self {
            flags: 0,
            generation: 0,
            table: FlowTable::new(gft::DEFAULT_MAX_FLOWS),
            pending: Pending::default(),
            policers: Policers::default(),
            rules: Rules::default(),
            switchdev: false,
            stats: EngineStats::default(),
        }
    }
}

impl Gft {
    /// Back to power-on state: off, empty, default capacity.
    pub fn reset(&mut self) {
        *self = Self::default();
    }

    /// Sets the configuration ([`config`] bits) and capacity, as
    /// `GFT_CONFIG` does; false if the capacity is below the flows held.
    pub fn configure(&mut self, flags: u32, max_flows: u32) -> bool {
        if self.table.set_capacity(max_flows).is_err() {
            return false;
        }
        self.flags = flags;
        true
    }

    /// Adds or replaces a flow, as `GFT_INSTALL` does; false if the table
    /// is full.
    pub fn install(&mut self, rec: &FlowRecord, now: Instant) -> bool {
        self.pending.settled(self.table.probe(&rec.key).hash());
        self.table.insert(rec, now).is_ok()
    }

    /// Whether packets go through the table at all.
    pub fn enabled(&self) -> bool {
        self.flags & config::ENABLE != 0
    }

    fn exception(&mut self, frame: &[u8], meta: ExceptionMeta) -> Output {
        self.stats.card.exceptions += 1;
        let mut out = Vec::with_capacity(META_LEN + frame.len());
        out.extend_from_slice(&meta.to_bytes());
        out.extend_from_slice(frame);
        Output::Exception(out)
    }

    /// Runs a packet crossing the card `dir` through the table (from the
    /// host: as if from the PF).
    pub fn process(&mut self, frame: Vec<u8>, dir: Direction, now: Instant) -> Vec<Output> {
        let from = match dir {
            Direction::Tx => port::PF,
            Direction::Rx => port::UPLINK,
        };
        self.process_from(frame, from, now)
    }

    /// Runs a packet that came in on switch port `from` ([`port`]: the
    /// wire, the PF or a VF) through the table.
    pub fn process_from(&mut self, frame: Vec<u8>, from: u16, now: Instant) -> Vec<Output> {
        let mut out = Vec::with_capacity(1);
        self.process_burst([frame], from, now, &mut out);
        out
    }

    /// Runs packets that came in on switch port `from` through the
    /// table, in order, and appends where they go to `out`. Lookups go
    /// in groups of [`BURST`]: every key is hashed and its bucket asked
    /// for before the first is read, so the memory latencies of a group
    /// overlap.
    pub fn process_burst(
        &mut self,
        frames: impl IntoIterator<Item = Vec<u8>>,
        from: u16,
        now: Instant,
        out: &mut Vec<Output>,
    ) {
        let dir = direction(from);
        let mut frames = frames.into_iter();
        if !self.enabled() {
            out.extend(frames.map(|f| Output::onward(dir, f)));
            return;
        }
        let now_ms = self.table.ms(now);
        let mut group: [(Vec<u8>, Option<Lookup>); BURST] =
            std::array::from_fn(|_| (Vec::new(), None));
        loop {
            let mut n = 0;
            for frame in frames.by_ref().take(BURST) {
                let l = self.start_lookup(&frame, dir);
                group[n] = (frame, l);
                n += 1;
            }
            if n == 0 {
                return;
            }
            if self.flags & config::CACHE != 0 {
                // The buckets were asked for; now read them and ask for
                // the entries their tags point at (the keys are compared
                // in `finish`, when those lines have come).
                for (_, l) in group[..n].iter_mut() {
                    if let Some(l) = l {
                        l.candidate = self.table.candidate(&l.probe);
                        if let Some(slot) = l.candidate {
                            self.table.prefetch_slot(slot);
                        }
                    }
                }
            }
            for (frame, l) in group[..n].iter_mut() {
                let frame = std::mem::take(frame);
                match l {
                    None => out.push(Output::onward(dir, frame)),
                    Some(l) => self.finish(frame, l, from, now, now_ms, out),
                }
            }
        }
    }

    /// Parses `frame` and hashes its key; asks for its bucket.
    fn start_lookup(&self, frame: &[u8], dir: Direction) -> Option<Lookup> {
        // Not IP (ARP, LLDP, ...): the GFT does not apply.
        let (key, tcp_flags) = parse::flow_key(frame, dir)?;
        let probe = self.table.probe(&key);
        self.table.prefetch(&probe);
        Some(Lookup {
            tcp_flags,
            probe,
            candidate: None,
        })
    }

    /// The table's verdict on one parsed packet, appended to `out`.
    fn finish(
        &mut self,
        frame: Vec<u8>,
        l: &Lookup,
        from: u16,
        now: Instant,
        now_ms: u32,
        out: &mut Vec<Output>,
    ) {
        let dir = direction(from);
        // Built only for a packet that goes up: a hit copies no key.
        let meta = |reason, generation| ExceptionMeta {
            reason,
            tcp_flags: l.tcp_flags,
            key: l.probe.key(),
            generation,
            port: 0,
        };
        if self.flags & config::CACHE == 0 {
            out.push(self.exception(&frame, meta(ExceptionReason::NoCache, 0)));
            return;
        }
        self.stats.card.lookups += 1;
        let tcp_control =
            l.probe.proto() == gft::proto::TCP && l.tcp_flags & tcp_flags::CONTROL != 0;
        let Some(slot) = self.table.find_from(&l.probe, l.candidate) else {
            self.stats.card.misses += 1;
            if let Some(d) = self.rule_action(&frame, from, now, now_ms) {
                out.extend(self.by_rule(frame, d, dir));
                return;
            }
            if self.admit_undecided(l, tcp_control, now_ms) {
                out.push(self.exception(&frame, meta(ExceptionReason::Miss, 0)));
            }
            return;
        };
        let hit = self.table.hit(slot);
        if hit.generation != self.generation {
            let generation = hit.generation;
            self.stats.card.misses += 1;
            // A flow from before the policy changed (a rule added, say)
            // does not shadow the rules.
            if let Some(d) = self.rule_action(&frame, from, now, now_ms) {
                out.extend(self.by_rule(frame, d, dir));
                return;
            }
            if self.admit_undecided(l, tcp_control, now_ms) {
                out.push(self.exception(&frame, meta(ExceptionReason::Stale, generation)));
            }
            return;
        }
        let flags = hit.action.flags;
        let conforms = self.table.count(slot, frame.len(), now, now_ms);
        self.stats.card.hits += 1;
        if tcp_control && self.policers.admit(&l.probe.key(), now_ms) {
            self.stats.card.tcp_duplicates += 1;
            out.push(self.exception(&frame, meta(ExceptionReason::TcpControl, 0)));
        }
        if !conforms {
            self.stats.card.meter_drops += 1;
            return;
        }
        if flags == 0 {
            // No action: on its way as it came.
            out.push(Output::onward(dir, frame));
            return;
        }
        let act = *self.table.hit(slot).action;
        // The flow's own hash is the tunnel's entropy (the reinjected
        // first packet gets the same, see `reinject`).
        let entropy = transform::fold_entropy(l.probe.hash());
        out.extend(self.act(frame, &act, dir, Some(entropy)));
    }

    /// The action of the masked rule that decides a packet the
    /// exact-match table missed (or found stale), counted; none: the
    /// packet takes the exception path, as a tc filter's miss goes to
    /// software. With no rules nothing is looked up.
    #[inline(always)]
    fn rule_action(
        &mut self,
        frame: &[u8],
        from: u16,
        now: Instant,
        now_ms: u32,
    ) -> Option<Decision> {
        if self.rules.is_empty() {
            None
        } else {
            self.rule_lookup(frame, from, now, now_ms)
        }
    }

    /// Carries out a rule's decision on `frame`.
    fn by_rule(&mut self, frame: Vec<u8>, d: Decision, dir: Direction) -> Option<Output> {
        match d {
            Decision::Act(act) => self.act(frame, &act, dir, None),
            Decision::OverRate => {
                self.stats.card.meter_drops += 1;
                None
            }
        }
    }

    // Out of line: the hit path stays small (measured: inlined, the
    // fast path lost 5-10%).
    #[inline(never)]
    fn rule_lookup(
        &mut self,
        frame: &[u8],
        from: u16,
        now: Instant,
        now_ms: u32,
    ) -> Option<Decision> {
        let key = MatchKey::of_frame(frame, from);
        match self.rules.decide(&key, frame.len(), now, now_ms) {
            Some((_, d)) => {
                self.stats.rule_hits += 1;
                Some(d)
            }
            None => {
                self.stats.rule_misses += 1;
                None
            }
        }
    }

    /// Whether a packet of a flow the host has not decided goes up: only
    /// the first while it is pending (TCP control packets each), within
    /// its remote address's rate.
    fn admit_undecided(&mut self, l: &Lookup, tcp_control: bool, now_ms: u32) -> bool {
        (tcp_control || self.pending.admit(l.probe.hash(), now_ms))
            && self.policers.admit(&l.probe.key(), now_ms)
    }

    /// Applies `act` to a packet going `dir`; `entropy` for a VXLAN
    /// header ([`transform::apply`]).
    fn act(
        &mut self,
        frame: Vec<u8>,
        act: &gft::Action,
        dir: Direction,
        entropy: Option<u16>,
    ) -> Option<Output> {
        self.act_then(frame, act, entropy, |f| Output::onward(dir, f))
    }

    /// [`Self::act`], with `onward` saying where a packet the action
    /// does not forward goes.
    fn act_then(
        &mut self,
        frame: Vec<u8>,
        act: &gft::Action,
        entropy: Option<u16>,
        onward: impl FnOnce(Vec<u8>) -> Output,
    ) -> Option<Output> {
        if act.flags & action::DROP != 0 {
            self.stats.dropped += 1;
            return None;
        }
        match transform::apply(frame, act, entropy) {
            Ok(frame) if act.flags & action::FORWARD != 0 => Some(Output::to_port(act.port, frame)),
            Ok(frame) => Some(onward(frame)),
            Err(e) => {
                debug!("GFT action {:#x} failed: {e:?}", act.flags);
                self.stats.transform_errors += 1;
                None
            }
        }
    }

    /// A packet the host sends back after taking it as an exception:
    /// [`ReinjectMeta`] then the frame. The action applies once, without a
    /// lookup (or the meter, which is per flow).
    pub fn reinject(&mut self, data: &[u8]) -> Option<Output> {
        let meta = data.get(..META_LEN).and_then(ReinjectMeta::from_bytes);
        let (Some(meta), Some(frame)) = (meta, data.get(META_LEN..)) else {
            self.stats.bad_reinjects += 1;
            return None;
        };
        self.stats.reinjected += 1;
        // The entropy the flow's later packets get from their lookup.
        let entropy = (meta.action.flags & action::VXLAN_ENCAP != 0)
            .then(|| self.start_lookup(frame, meta.dir))
            .flatten()
            .map(|l| transform::fold_entropy(l.probe.hash()));
        self.act(frame.to_vec(), &meta.action, meta.dir, entropy)
    }

    /// The table's memory per flow held, in bytes (its index, entries,
    /// counters, meters and distinct actions, over the flows).
    pub fn bytes_per_flow(&self) -> usize {
        self.table.bytes_per_flow()
    }

    /// The exception path's counters.
    pub fn exception_stats(&self) -> CardExceptionStats {
        CardExceptionStats {
            rate_drops: self.policers.drops(),
            ..self.pending.stats()
        }
    }

    /// The card's counters.
    pub fn card_stats(&self) -> CardGftStats {
        CardGftStats {
            flows: self.table.len() as u32,
            ..self.stats.card
        }
    }

    /// Executes a GFT admin command.
    pub fn execute(
        &mut self,
        dma: &DmaSpace,
        cmd: AdminCmd,
        entry: &mut [u8; AQ_ENTRY_SIZE],
        now: Instant,
    ) -> AdminStatus {
        match cmd {
            AdminCmd::GftConfig { flags, max_flows } => {
                if flags & !(config::ENABLE | config::CACHE) != 0
                    || !(1..=gft::MAX_FLOWS_LIMIT).contains(&max_flows)
                {
                    return AdminStatus::BadParam;
                }
                if !self.configure(flags, max_flows) {
                    return AdminStatus::BadState;
                }
            }
            AdminCmd::GftSetGeneration { generation } => self.generation = generation,
            AdminCmd::GftInstall { record } => {
                let mut b = [0u8; FLOW_RECORD_LEN];
                if dma.read(record, &mut b).is_err() {
                    return AdminStatus::BadParam;
                }
                let Some(rec) = FlowRecord::from_bytes(&b) else {
                    return AdminStatus::BadParam;
                };
                if !self.install(&rec, now) {
                    return AdminStatus::NoSpace;
                }
            }
            AdminCmd::GftInstallBatch { records, count } => {
                if !(1..=gft::MAX_INSTALL_BATCH).contains(&count) {
                    return AdminStatus::BadParam;
                }
                let mut result = GftBatchResult {
                    installed: 0,
                    status: AdminStatus::Ok as u16,
                };
                let mut b = [0u8; FLOW_RECORD_LEN];
                for i in 0..u64::from(count) {
                    let at = records.wrapping_add(i * FLOW_RECORD_LEN as u64);
                    let rec = dma
                        .read(at, &mut b)
                        .ok()
                        .and_then(|()| FlowRecord::from_bytes(&b));
                    let status = match rec {
                        None => AdminStatus::BadParam,
                        Some(rec) if !self.install(&rec, now) => AdminStatus::NoSpace,
                        Some(_) => {
                            result.installed += 1;
                            continue;
                        }
                    };
                    result.status = status as u16;
                    break;
                }
                result.write_result(entry);
            }
            AdminCmd::GftQueryExceptionStats => self.exception_stats().write_result(entry),
            AdminCmd::GftSetExceptionRate { rate, burst } => {
                if !(1..=gft::MAX_EXCEPTION_BURST).contains(&burst) {
                    return AdminStatus::BadParam;
                }
                self.policers.set(rate, burst);
            }
            AdminCmd::GftDelete { key } => {
                let mut b = [0u8; KEY_LEN];
                if dma.read(key, &mut b).is_err() {
                    return AdminStatus::BadParam;
                }
                let Some(key) = FlowKey::from_bytes(&b) else {
                    return AdminStatus::BadParam;
                };
                if !self.table.remove(&key) {
                    return AdminStatus::NotFound;
                }
            }
            AdminCmd::GftFlush => {
                self.table.clear();
                self.pending.clear();
            }
            AdminCmd::GftDump { buf, max, cursor } => {
                if max == 0 || max > MAX_DUMP_RECORDS {
                    return AdminStatus::BadParam;
                }
                let (flows, next) = self.table.walk(cursor, max as usize, now);
                let mut block = Vec::with_capacity(flows.len() * DUMP_RECORD_LEN);
                for c in &flows {
                    block.extend_from_slice(&c.to_bytes());
                }
                if !block.is_empty() && dma.write(buf, &block).is_err() {
                    return AdminStatus::BadParam;
                }
                GftDumpResult {
                    count: flows.len() as u32,
                    next,
                }
                .write_result(entry);
            }
            AdminCmd::GftQueryStats => self.card_stats().write_result(entry),
            AdminCmd::GftRuleAdd { record } => {
                let mut b = [0u8; RULE_RECORD_LEN];
                if dma.read(record, &mut b).is_err() {
                    return AdminStatus::BadParam;
                }
                let Some(rec) = RuleRecord::from_bytes(&b) else {
                    return AdminStatus::BadParam;
                };
                let rule = classifier::Rule {
                    id: rec.id,
                    prio: rec.prio,
                    key: MatchKey(rec.key),
                    mask: MatchKey(rec.mask),
                };
                return match self.rules.add(rule, rec.action, now) {
                    Ok(()) => AdminStatus::Ok,
                    Err(RuleError::Table(AddError::Exists)) => AdminStatus::BadState,
                    Err(RuleError::Table(AddError::Full)) => AdminStatus::NoSpace,
                    Err(RuleError::BadAction) => AdminStatus::BadParam,
                };
            }
            AdminCmd::GftRuleDelete { id } => match self.rules.remove(id) {
                Some(s) => self.rule_counters(s, now).write_result(entry),
                None => return AdminStatus::NotFound,
            },
            AdminCmd::GftRuleQuery { id } => match self.rules.stats(id) {
                Some(s) => self.rule_counters(s, now).write_result(entry),
                None => return AdminStatus::NotFound,
            },
            AdminCmd::GftRuleFlush => self.rules.clear(),
            _ => return AdminStatus::BadOpcode,
        }
        AdminStatus::Ok
    }

    /// A rule's counters as the host reads them.
    fn rule_counters(&self, s: RuleStats, now: Instant) -> RuleCounters {
        RuleCounters {
            packets: s.packets,
            bytes: s.bytes,
            drops: s.drops,
            idle_ms: if s.last_ms == 0 {
                u32::MAX
            } else {
                self.table.ms(now).wrapping_sub(s.last_ms)
            },
        }
    }

    /// What the card holds, for the harness (`gft-flows`): one line, the
    /// count then each flow after a `; `, sorted; independent of what the
    /// driver believes.
    pub fn describe_flows(&self, now: Instant) -> String {
        let mut lines: Vec<String> = self
            .table
            .iter(now)
            .map(|c| {
                let k = &c.key;
                let addr = |a: &[u8; 16]| -> String {
                    if k.ip_version == 4 {
                        std::net::Ipv4Addr::new(a[0], a[1], a[2], a[3]).to_string()
                    } else {
                        std::net::Ipv6Addr::from(*a).to_string()
                    }
                };
                let mut s = format!(
                    "dir={} proto={} src={} dst={} sport={} dport={}",
                    k.dir.name(),
                    k.proto,
                    addr(&k.src),
                    addr(&k.dst),
                    k.sport,
                    k.dport
                );
                if let Some(t) = k.tunnel {
                    let _ = write!(s, " tunnel={t}");
                }
                let _ = write!(
                    s,
                    " actions={:#x} gen={} packets={} bytes={} meter_drops={}",
                    c.action_flags, c.generation, c.packets, c.bytes, c.meter_drops
                );
                s
            })
            .collect();
        lines.sort();
        let mut out = format!("flows={} max={}", self.table.len(), self.table.capacity());
        for l in lines {
            out.push_str("; ");
            out.push_str(&l);
        }
        out
    }

    /// The engine's counters, for the harness (`gft-stats`).
    pub fn describe_stats(&self) -> String {
        let s = self.card_stats();
        let p = self.exception_stats();
        format!(
            "enabled={} cache={} generation={} flows={} bytes_per_flow={} lookups={} hits={} misses={} exceptions={} tcp_duplicates={} meter_drops={} dropped={} transform_errors={} reinjected={} bad_reinjects={} pending_marked={} pending_drops={} pending={} rate_drops={} exception_rate={}/{} rules={} masks={} rule_hits={} rule_misses={} rule_cache_hits={} rule_cache_misses={}",
            u8::from(self.enabled()),
            u8::from(self.flags & config::CACHE != 0),
            self.generation,
            s.flows,
            self.bytes_per_flow(),
            s.lookups,
            s.hits,
            s.misses,
            s.exceptions,
            s.tcp_duplicates,
            s.meter_drops,
            self.stats.dropped,
            self.stats.transform_errors,
            self.stats.reinjected,
            self.stats.bad_reinjects,
            p.pending_marked,
            p.pending_drops,
            p.pending,
            p.rate_drops,
            self.policers.get().0,
            self.policers.get().1,
            self.rules.len(),
            self.rules.masks(),
            self.stats.rule_hits,
            self.stats.rule_misses,
            self.rules.cache.stats().hits,
            self.rules.cache.stats().misses
        )
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::parse::tests::{tcp6, udp4};
    use super::*;

    fn enabled() -> Gft {
        Gft {
            flags: config::ENABLE | config::CACHE,
            ..Default::default()
        }
    }

    /// What the host sends back for `frame`: its header, then the frame.
    pub(super) fn reinjected(dir: Direction, action: gft::Action, frame: &[u8]) -> Vec<u8> {
        let mut data = ReinjectMeta { dir, action }.to_bytes().to_vec();
        data.extend_from_slice(frame);
        data
    }

    fn install(g: &mut Gft, key: FlowKey, act: gft::Action) {
        let rec = FlowRecord {
            key,
            generation: g.generation,
            action: act,
        };
        assert!(g.install(&rec, Instant::now()));
    }

    #[test]
    fn a_pending_flow_sends_its_first_packet_only_until_installed() {
        let mut g = enabled();
        let f = udp4(1, 2, b"x");
        let now = Instant::now();
        let out = g.process(f.clone(), Direction::Tx, now);
        let key = exception_meta(&out[0]).key;
        // While the host decides: counted, not sent.
        assert!(g.process(f.clone(), Direction::Tx, now).is_empty());
        assert!(g.process(f.clone(), Direction::Tx, now).is_empty());
        // Another flow is not held back by it.
        assert_eq!(g.process(udp4(1, 3, b"x"), Direction::Tx, now).len(), 1);
        install(&mut g, key, gft::Action::default());
        assert_eq!(
            g.process(f.clone(), Direction::Tx, now),
            vec![Output::Wire(f.clone())]
        );
        let p = g.pending.stats();
        assert_eq!((p.pending_marked, p.pending_drops, p.pending), (2, 2, 1));
        // Marks expire: an install that never comes costs one more
        // exception per PENDING_MS, not a flow lost for good.
        let later = now + std::time::Duration::from_millis(u64::from(gft::PENDING_MS) + 1);
        assert_eq!(g.process(udp4(1, 3, b"x"), Direction::Tx, later).len(), 1);
    }

    #[test]
    fn a_refused_install_clears_the_pending_mark() {
        let mut g = enabled();
        g.configure(config::ENABLE | config::CACHE, 1);
        let now = Instant::now();
        let first = g.process(udp4(1, 2, b"x"), Direction::Tx, now);
        install(
            &mut g,
            exception_meta(&first[0]).key,
            gft::Action::default(),
        );
        let f = udp4(1, 3, b"x");
        let out = g.process(f.clone(), Direction::Tx, now);
        let rec = FlowRecord {
            key: exception_meta(&out[0]).key,
            generation: 0,
            action: gft::Action::default(),
        };
        // Full: refused, and the flow's next packet asks again at once
        // (the packet was delivered by reinjection; so is the next).
        assert!(!g.install(&rec, now));
        assert_eq!(g.process(f, Direction::Tx, now).len(), 1);
        assert_eq!(g.pending.stats().pending_drops, 0);
    }

    #[test]
    fn tcp_control_of_a_pending_flow_still_goes_up() {
        let mut g = enabled();
        let syn = tcp6(true, false);
        let now = Instant::now();
        assert_eq!(g.process(syn.clone(), Direction::Rx, now).len(), 1);
        assert_eq!(g.process(syn.clone(), Direction::Rx, now).len(), 1);
        assert_eq!(g.pending.stats().pending_drops, 0);
    }

    #[test]
    fn batch_install_stops_at_the_first_failure() {
        let (dma, _f) = crate::dma::tests::two_region_space();
        let mut g = enabled();
        g.configure(config::ENABLE | config::CACHE, 2);
        let rec = |port: u16| {
            let f = udp4(1, port, b"x");
            FlowRecord {
                key: parse::parse(&f, Direction::Tx).unwrap().key,
                generation: 0,
                action: gft::Action::default(),
            }
        };
        let mut block = Vec::new();
        for port in [10, 11, 12, 13] {
            block.extend_from_slice(&rec(port).to_bytes());
        }
        dma.write(0x1000, &block).unwrap();
        let mut e = [0u8; AQ_ENTRY_SIZE];
        let cmd = AdminCmd::GftInstallBatch {
            records: 0x1000,
            count: 4,
        };
        assert_eq!(
            g.execute(&dma, cmd, &mut e, Instant::now()),
            AdminStatus::Ok
        );
        let r = GftBatchResult::read_result(&e);
        assert_eq!((r.installed, r.status), (2, AdminStatus::NoSpace as u16));
        assert_eq!(g.card_stats().flows, 2);
        for count in [0, gft::MAX_INSTALL_BATCH + 1] {
            let cmd = AdminCmd::GftInstallBatch {
                records: 0x1000,
                count,
            };
            assert_eq!(
                g.execute(&dma, cmd, &mut e, Instant::now()),
                AdminStatus::BadParam
            );
        }
        // A garbled record is a bad one, after the good.
        g.configure(config::ENABLE | config::CACHE, 100);
        let cmd = AdminCmd::GftInstallBatch {
            records: 0x1000 + 2 * FLOW_RECORD_LEN as u64,
            count: 3,
        };
        dma.write(
            0x1000 + 4 * FLOW_RECORD_LEN as u64,
            &[0xff; FLOW_RECORD_LEN],
        )
        .unwrap();
        assert_eq!(
            g.execute(&dma, cmd, &mut e, Instant::now()),
            AdminStatus::Ok
        );
        let r = GftBatchResult::read_result(&e);
        assert_eq!((r.installed, r.status), (2, AdminStatus::BadParam as u16));
    }

    pub(super) fn exception_meta(o: &Output) -> ExceptionMeta {
        match o {
            Output::Exception(d) => ExceptionMeta::from_bytes(d).unwrap(),
            other => panic!("not an exception: {other:?}"),
        }
    }

    #[test]
    fn disabled_passes_everything() {
        let mut g = Gft::default();
        let f = udp4(1, 2, b"x");
        assert_eq!(
            g.process(f.clone(), Direction::Tx, Instant::now()),
            vec![Output::Wire(f)]
        );
    }

    #[test]
    fn miss_then_hit_then_stale() {
        let mut g = enabled();
        let f = udp4(1, 2, b"x");
        let now = Instant::now();
        let out = g.process(f.clone(), Direction::Tx, now);
        let meta = exception_meta(&out[0]);
        assert_eq!(meta.reason, ExceptionReason::Miss);
        install(&mut g, meta.key, gft::Action::default());
        assert_eq!(
            g.process(f.clone(), Direction::Tx, now),
            vec![Output::Wire(f.clone())]
        );
        g.generation = 1;
        let out = g.process(f.clone(), Direction::Tx, now);
        assert_eq!(exception_meta(&out[0]).reason, ExceptionReason::Stale);
        let s = g.card_stats();
        assert_eq!((s.lookups, s.hits, s.misses, s.exceptions), (3, 1, 2, 2));
        // The reverse direction is a different flow.
        let out = g.process(f, Direction::Rx, now);
        assert_eq!(exception_meta(&out[0]).key.dir, Direction::Rx);
    }

    #[test]
    fn tcp_control_hits_are_forwarded_and_copied() {
        let mut g = enabled();
        let syn = tcp6(true, false);
        let key = parse::parse(&syn, Direction::Rx).unwrap().key;
        install(&mut g, key, gft::Action::default());
        let out = g.process(syn.clone(), Direction::Rx, Instant::now());
        assert_eq!(out.len(), 2);
        assert_eq!(exception_meta(&out[0]).reason, ExceptionReason::TcpControl);
        assert_eq!(out[1], Output::Host(syn));
        let data = tcp6(false, false);
        assert_eq!(g.process(data, Direction::Rx, Instant::now()).len(), 1);
        assert_eq!(g.card_stats().tcp_duplicates, 1);
    }

    #[test]
    fn uncached_sends_everything_to_the_host_and_reinject_applies_once() {
        let mut g = Gft {
            flags: config::ENABLE,
            ..Default::default()
        };
        let f = udp4(7, 8, b"y");
        let out = g.process(f.clone(), Direction::Tx, Instant::now());
        assert_eq!(exception_meta(&out[0]).reason, ExceptionReason::NoCache);
        let act = gft::Action {
            flags: action::VLAN_PUSH,
            vlan_tci: 5,
            ..Default::default()
        };
        match g.reinject(&reinjected(Direction::Tx, act, &f)) {
            Some(Output::Wire(w)) => assert_eq!(w.len(), f.len() + 4),
            other => panic!("{other:?}"),
        }
        assert_eq!(g.reinject(&f), None, "no valid header");
        assert_eq!(g.stats.bad_reinjects, 1);
        assert_eq!(g.table.len(), 0, "reinjection installs nothing");
    }

    #[test]
    fn a_vxlan_flow_keeps_its_outer_source_port_from_first_packet_on() {
        let mut g = enabled();
        let act = gft::Action {
            flags: action::VXLAN_ENCAP,
            ..Default::default()
        };
        let sport = |o: Option<Output>| match o {
            Some(Output::Wire(w)) => u16::from_be_bytes([w[34], w[35]]),
            other => panic!("{other:?}"),
        };
        let mut ports = Vec::new();
        for src_port in [1000, 1001] {
            let f = udp4(src_port, 2, b"z");
            let key = parse::parse(&f, Direction::Tx).unwrap().key;
            // The first packet, sent back by the host after deciding.
            let first = sport(g.reinject(&reinjected(Direction::Tx, act, &f)));
            install(&mut g, key, act);
            let later = sport(g.process(f, Direction::Tx, Instant::now()).pop());
            assert_eq!(first, later, "the underlay sees one flow");
            ports.push(later);
        }
        assert_ne!(ports[0], ports[1], "flows spread over source ports");
    }

    /// A rule for packets in on `from`; `set` adds to its match and mask.
    pub(super) fn port_rule(
        id: u32,
        prio: u16,
        from: u16,
        set: impl FnOnce(&mut MatchKey, &mut MatchKey),
    ) -> classifier::Rule {
        use classifier::field;
        let (mut key, mut mask) = (MatchKey::default(), MatchKey::default());
        key.set(field::IN_PORT, &from.to_be_bytes());
        mask.set_all(field::IN_PORT);
        set(&mut key, &mut mask);
        classifier::Rule {
            id,
            prio,
            key,
            mask,
        }
    }

    fn drop_action() -> gft::Action {
        gft::Action {
            flags: action::DROP,
            ..Default::default()
        }
    }

    #[test]
    fn a_masked_rule_decides_what_the_exact_table_misses() {
        use classifier::field;
        let mut g = enabled();
        // UDP to port 53 from the host: destination rewritten to
        // 10.9.9.9; anything else from the host: dropped (prio 9).
        let dns_rule = port_rule(1, 1, port::PF, |k, m| {
            k.set(field::IP_PROTO, &[17])
                .set(field::L4_DST, &53u16.to_be_bytes());
            m.set_all(field::IP_PROTO).set_all(field::L4_DST);
        });
        let mut nat = gft::Action {
            flags: action::NAT_DST_IP,
            ..Default::default()
        };
        nat.nat_dip[..4].copy_from_slice(&[10, 9, 9, 9]);
        g.rules.add(dns_rule, nat, Instant::now()).unwrap();
        g.rules
            .add(
                port_rule(2, 9, port::PF, |_, _| {}),
                drop_action(),
                Instant::now(),
            )
            .unwrap();
        let now = Instant::now();

        let dns = udp4(1000, 53, b"query");
        let out = g.process(dns.clone(), Direction::Tx, now);
        let [Output::Wire(f)] = out.as_slice() else {
            panic!("{out:?}");
        };
        assert_eq!(
            parse::parse(f, Direction::Tx).unwrap().key.dst[..4],
            [10, 9, 9, 9]
        );
        assert!(g
            .process(udp4(1000, 54, b"x"), Direction::Tx, now)
            .is_empty());
        assert_eq!(g.rules.stats(1).unwrap().packets, 1);
        assert_eq!(g.rules.stats(1).unwrap().bytes, dns.len() as u64);
        assert_eq!(g.rules.stats(2).unwrap().packets, 1);
        assert_eq!(g.card_stats().exceptions, 0);

        // From the wire no rule matches: the exception path, as before.
        let out = g.process(udp4(53, 1000, b"answer"), Direction::Rx, now);
        assert!(matches!(out.as_slice(), [Output::Exception(_)]), "{out:?}");
        assert_eq!(g.stats.rule_misses, 1);

        // An exact flow the host installed comes first.
        let key = parse::parse(&dns, Direction::Tx).unwrap().key;
        install(&mut g, key, gft::Action::default());
        let out = g.process(dns, Direction::Tx, now);
        let [Output::Wire(f)] = out.as_slice() else {
            panic!("{out:?}");
        };
        assert_eq!(
            parse::parse(f, Direction::Tx).unwrap().key.dst[..4],
            [10, 0, 0, 2]
        );
        assert_eq!(g.rules.stats(1).unwrap().packets, 1);

        assert_eq!(g.rules.remove(2).unwrap().packets, 1);
    }

    #[test]
    fn a_rule_meter_polices_all_the_flows_it_decides_together() {
        let mut g = enabled();
        // 1000 bytes a second, 2100 at once: two of the frames below.
        let meter = gft::Action {
            flags: action::METER,
            meter_rate: 8000,
            meter_burst: 2100,
            ..Default::default()
        };
        g.rules
            .add(port_rule(1, 1, port::PF, |_, _| {}), meter, Instant::now())
            .unwrap();
        let now = Instant::now();
        // Ten flows, one frame each: the bucket is the rule's.
        let passed = |g: &mut Gft, now| {
            (0..10u16)
                .map(|sport| g.process(udp4(sport, 2, &[0u8; 1000]), Direction::Tx, now))
                .filter(|out| matches!(out.as_slice(), [Output::Wire(_)]))
                .count()
        };
        assert_eq!(passed(&mut g, now), 2);
        let s = g.rules.stats(1).unwrap();
        assert_eq!((s.packets, s.drops), (10, 8));
        assert_eq!(g.card_stats().meter_drops, 8);
        assert_eq!(g.card_stats().exceptions, 0);
        // Three seconds on the bucket is full again, not fuller.
        assert_eq!(passed(&mut g, now + std::time::Duration::from_secs(3)), 2);
        assert_eq!(g.rules.stats(1).unwrap().drops, 16);
    }

    #[test]
    fn a_rule_matches_the_port_a_packet_came_in_on() {
        let mut g = enabled();
        g.rules
            .add(
                port_rule(1, 1, port::VF0, |_, _| {}),
                drop_action(),
                Instant::now(),
            )
            .unwrap();
        let now = Instant::now();
        let f = udp4(1, 2, b"x");
        assert!(g.process_from(f.clone(), port::VF0, now).is_empty());
        let out = g.process_from(f, port::PF, now);
        assert!(matches!(out.as_slice(), [Output::Exception(_)]), "{out:?}");
        assert_eq!(g.rules.stats(1).unwrap().packets, 1);
    }

    #[test]
    fn a_stale_flow_does_not_shadow_a_rule_added_after_it() {
        let mut g = enabled();
        let f = udp4(1, 2, b"x");
        let key = parse::parse(&f, Direction::Tx).unwrap().key;
        install(&mut g, key, gft::Action::default());
        let now = Instant::now();
        assert!(matches!(
            g.process(f.clone(), Direction::Tx, now).as_slice(),
            [Output::Wire(_)]
        ));
        // A drop rule, and the policy's new generation (as the driver
        // sets it on every rule change): the old flow is stale.
        g.rules
            .add(
                port_rule(1, 1, port::PF, |_, _| {}),
                drop_action(),
                Instant::now(),
            )
            .unwrap();
        g.generation += 1;
        assert!(g.process(f.clone(), Direction::Tx, now).is_empty());
        assert_eq!(g.rules.stats(1).unwrap().packets, 1);
        // Without the rule the stale flow goes up, as before.
        g.rules.clear();
        let out = g.process(f, Direction::Tx, now);
        assert!(matches!(out.as_slice(), [Output::Exception(_)]), "{out:?}");
    }

    #[test]
    fn drop_and_meter() {
        let mut g = enabled();
        let f = udp4(1, 2, &[0u8; 1000]);
        let key = parse::parse(&f, Direction::Tx).unwrap().key;
        let meter = gft::Action {
            flags: action::METER,
            meter_rate: 8000,
            meter_burst: 2100,
            ..Default::default()
        };
        install(&mut g, key, meter);
        let now = Instant::now();
        let sent: usize = (0..10)
            .map(|_| g.process(f.clone(), Direction::Tx, now).len())
            .sum();
        assert_eq!(sent, 2, "the burst holds two frames");
        assert_eq!(g.card_stats().meter_drops, 8);
        let drop = gft::Action {
            flags: action::DROP,
            ..Default::default()
        };
        install(&mut g, key, drop);
        assert!(g.process(f, Direction::Tx, now).is_empty());
    }

    #[test]
    fn admin_install_capacity_delete_dump() {
        let (dma, _f) = crate::dma::tests::two_region_space();
        let mut g = enabled();
        let mut e = [0u8; AQ_ENTRY_SIZE];
        let now = Instant::now();
        let cfg = |flags, max_flows| AdminCmd::GftConfig { flags, max_flows };
        assert_eq!(
            g.execute(&dma, cfg(0x10, 4), &mut e, now),
            AdminStatus::BadParam
        );
        assert_eq!(
            g.execute(&dma, cfg(1, 0), &mut e, now),
            AdminStatus::BadParam
        );
        assert_eq!(g.execute(&dma, cfg(3, 2), &mut e, now), AdminStatus::Ok);
        let key = parse::parse(&udp4(1, 2, b""), Direction::Tx).unwrap().key;
        let mut install_status = |g: &mut Gft, sport| {
            let rec = FlowRecord {
                key: FlowKey { sport, ..key },
                generation: 0,
                action: gft::Action::default(),
            };
            dma.write(0x1000, &rec.to_bytes()).unwrap();
            g.execute(&dma, AdminCmd::GftInstall { record: 0x1000 }, &mut e, now)
        };
        assert_eq!(install_status(&mut g, 1), AdminStatus::Ok);
        assert_eq!(install_status(&mut g, 2), AdminStatus::Ok);
        assert_eq!(install_status(&mut g, 2), AdminStatus::Ok, "update");
        assert_eq!(install_status(&mut g, 3), AdminStatus::NoSpace);
        let mut e = [0u8; AQ_ENTRY_SIZE];
        assert_eq!(
            g.execute(&dma, cfg(3, 1), &mut e, now),
            AdminStatus::BadState
        );
        let dump = AdminCmd::GftDump {
            buf: 0x2000,
            max: 1,
            cursor: 0,
        };
        assert_eq!(g.execute(&dma, dump, &mut e, now), AdminStatus::Ok);
        let r = GftDumpResult::read_result(&e);
        assert_eq!((r.count, r.next), (1, 1));
        let mut rec = [0u8; DUMP_RECORD_LEN];
        dma.read(0x2000, &mut rec).unwrap();
        assert_eq!(gft::FlowCounters::from_bytes(&rec).unwrap().key.sport, 1);
        dma.write(0x3000, &FlowKey { sport: 1, ..key }.to_bytes())
            .unwrap();
        let del = AdminCmd::GftDelete { key: 0x3000 };
        assert_eq!(g.execute(&dma, del, &mut e, now), AdminStatus::Ok);
        assert_eq!(g.execute(&dma, del, &mut e, now), AdminStatus::NotFound);
        assert_eq!(g.card_stats().flows, 1);
    }
}
