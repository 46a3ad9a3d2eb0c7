// SPDX-License-Identifier: GPL-2.0

//! The synthetic NIC's ethtool operations.

use kernel::{prelude::*, sync::atomic::Relaxed};

use super::{
    ring::RingSize,
    rss_table_len,
    steering::{card_table, card_xfrm, resized_table, xfrm_of_card},
    Config, Nic,
};
use crate::hw::{self, AdminCmd, FuncKind, QpCardStats, XdpStatsResult};
use crate::linux::net::{
    ethtool::{
        coalesce_params, rxfh_ctxs_can_resize, rxfh_ctxs_resize, rxfh_indir_can_resize, Coalesce,
        DrvInfo, EthCtrlStats, EthMacStats, EthtoolOps, FlowRule, HashFields, HashFlow, InputXfrm,
        LinkSettings, PortType, Rings, Rxfh, StatsSink, TcpDataSplit,
    },
    instance_lock::{DevLocked, RtnlLocked},
    netdev::{Feature, NetDev},
    tstamp::TsInfo,
};
use crate::selftest::{self, IrqCount, SelfTestError};

#[vtable]
impl EthtoolOps for Nic {
    const SELF_TESTS: &'static [&'static str] = &[
        "registers (offline)",
        "interrupts (offline)",
        "dma (offline)",
        "link (online)",
    ];
    const RSS_KEY_LEN: usize = hw::RSS_KEY_LEN;
    const RSS_CONTEXTS: u32 = hw::MAX_RSS_CONTEXTS;
    const FLOW_RULES: u32 = hw::MAX_FLOW_RULES;
    const RSS_TABLE_LEN: usize = hw::RSS_TABLE_LEN;
    const SUPPORTED_COALESCE: u32 = coalesce_params::RX_USECS | coalesce_params::RX_MAX_FRAMES;
    const HDS_THRESH_MAX: u32 = hw::HDS_THRESH_MAX;
    const PRIV_FLAGS: &'static [&'static str] = &["rx-stream"];

    fn drvinfo(dev: &NetDev<Self>, _locked: &DevLocked, out: &mut dyn FnMut(DrvInfo<'_>)) {
        let nic = dev.data();
        let len = nic
            .bus_info
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(nic.bus_info.len());
        let [a, b, c] = nic.fw_version;
        out(DrvInfo {
            driver: "rsnic",
            version: crate::VERSION,
            fw_version: format_args!("{a}.{b}.{c}"),
            bus_info: &nic.bus_info[..len],
        });
    }

    /// The card's port: a direct-attach cable at the speed the card
    /// reports, full duplex, nothing negotiated.
    fn link_settings(dev: &NetDev<Self>, _locked: &DevLocked) -> LinkSettings {
        LinkSettings {
            speed_mbps: dev.data().info.speed_mbps,
            full_duplex: true,
            port: PortType::DirectAttach,
            autoneg: false,
        }
    }

    fn self_test(dev: &NetDev<Self>, rtnl: &RtnlLocked<'_>, offline: bool, results: &mut [u64]) {
        let nic = dev.data();
        if let Some(link) = results.get_mut(3) {
            *link = u64::from(!dev.carrier_ok());
        }
        if !offline {
            return;
        }
        let cfg = nic.config.lock();
        if cfg.running {
            dev.detach(rtnl);
            nic.stop_queues(dev, rtnl, usize::from(cfg.queues));
        }
        let report = |name: &str, r: Result<(), SelfTestError>| match r {
            Ok(()) => 0,
            Err(e) => {
                pr_err!("{}: self-test {}: {}\n", dev.name(), name, e);
                1
            }
        };
        let registers = report("registers", selftest::check_registers(&nic.regs));
        // Vector 0 is the admin vector, then one per queue pair.
        let admin = core::iter::once(nic.admin_irq.handler() as &dyn IrqCount);
        let queues = nic.queue_irqs.iter().map(|r| r.handler() as &dyn IrqCount);
        let handlers = Iterator::chain(admin, queues);
        let interrupts = report("interrupts", selftest::check_irqs(&nic.regs, handlers));
        let dma = report(
            "dma",
            nic.dma
                .alloc(selftest::DMA_BUFFER_LEN)
                .map_err(SelfTestError::from)
                .and_then(|buf| selftest::check_dma_cases(&nic.regs, &buf)),
        );
        for (result, value) in results.iter_mut().zip([registers, interrupts, dma]) {
            *result = value;
        }
        if cfg.running {
            if let Err(e) = nic.start_queues(dev, rtnl, &cfg, dev.mtu(), dev.features()) {
                pr_err!(
                    "{}: queues did not restart after the self-test: {:?}\n",
                    dev.name(),
                    e
                );
            }
            dev.attach(rtnl);
        }
    }

    fn ts_info(dev: &NetDev<Self>) -> TsInfo {
        dev.data().tstamp.info()
    }

    fn coalesce(dev: &NetDev<Self>, _locked: &DevLocked) -> Coalesce {
        dev.data().config.lock().coalesce
    }

    fn set_coalesce(dev: &NetDev<Self>, _locked: &DevLocked, coalesce: Coalesce) -> Result {
        if coalesce.rx_usecs > hw::MAX_COALESCE_USECS
            || coalesce.rx_max_frames > hw::MAX_COALESCE_FRAMES
        {
            return Err(EINVAL);
        }
        let nic = dev.data();
        let mut cfg = nic.config.lock();
        nic.admin.run(AdminCmd::SetCoalesce {
            usecs: coalesce.rx_usecs,
            frames: coalesce.rx_max_frames,
        })?;
        cfg.coalesce = coalesce;
        Ok(())
    }

    fn stats(dev: &NetDev<Self>, _locked: &DevLocked, sink: &mut dyn StatsSink) {
        let nic = dev.data();
        sink.stat(
            format_args!("admin_timeouts"),
            nic.admin.timeouts.load(Relaxed),
        );
        sink.stat(format_args!("admin_errors"), nic.admin.errors.load(Relaxed));
        sink.stat(
            format_args!("admin_doorbells"),
            nic.admin.doorbells.load(Relaxed),
        );
        sink.stat(
            format_args!("admin_doorbells_skipped"),
            nic.admin.doorbells_skipped.load(Relaxed),
        );
        let card = nic.events.counters();
        sink.stat(format_args!("device_resets"), card.function_resets);
        sink.stat(format_args!("card_lost"), card.card_lost);
        if nic.kind == FuncKind::Pf {
            let (present, datapath_vf, switches) = nic.bond.state();
            sink.stat(format_args!("vf_present"), u64::from(present));
            sink.stat(format_args!("vf_datapath"), u64::from(datapath_vf));
            sink.stat(format_args!("vf_datapath_switches"), switches);
            let vf = nic.bond.vf_link_stats();
            sink.stat(format_args!("vf_rx_packets"), vf.rx_packets);
            sink.stat(format_args!("vf_rx_bytes"), vf.rx_bytes);
            sink.stat(format_args!("vf_tx_packets"), vf.tx_packets);
            sink.stat(format_args!("vf_tx_bytes"), vf.tx_bytes);
        }
        if nic.offloads_xdp() {
            // The card's counts, asked for only when the values are read.
            let card = if sink.wants_values() {
                nic.offload_xdp_stats().unwrap_or_default()
            } else {
                XdpStatsResult::default()
            };
            for (name, value) in [
                ("pass", card.pass),
                ("drop", card.drop),
                ("aborted", card.aborted),
                ("tx", card.tx),
            ] {
                sink.stat(format_args!("xdp_offload_{name}"), value);
            }
        }
        if let Some(flow) = &nic.flow {
            let fetch = sink.wants_values();
            flow.for_each_counter(fetch, &mut |name, value| {
                sink.stat(format_args!("gft_{name}"), value)
            });
        }
        for (q, queue) in nic.queues.iter().enumerate() {
            let s = &queue.stats;
            sink.stat(format_args!("rx{q}_packets"), s.rx_packets.load(Relaxed));
            sink.stat(format_args!("rx{q}_bytes"), s.rx_bytes.load(Relaxed));
            sink.stat(format_args!("rx{q}_dropped"), s.rx_dropped.load(Relaxed));
            sink.stat(
                format_args!("rx{q}_alloc_failed"),
                s.rx_alloc_failed.load(Relaxed),
            );
            sink.stat(
                format_args!("rx{q}_copybreak"),
                s.rx_copybreak.load(Relaxed),
            );
            sink.stat(format_args!("rx{q}_hds"), s.rx_hds.load(Relaxed));
            sink.stat(format_args!("tx{q}_packets"), s.tx_packets.load(Relaxed));
            sink.stat(format_args!("tx{q}_bytes"), s.tx_bytes.load(Relaxed));
            sink.stat(format_args!("tx{q}_dropped"), s.tx_dropped.load(Relaxed));
            sink.stat(format_args!("tx{q}_busy"), s.tx_busy.load(Relaxed));
            sink.stat(format_args!("tx{q}_tso"), s.tx_tso.load(Relaxed));
            sink.stat(
                format_args!("tx{q}_tstamp_requests"),
                s.tx_tstamp_requests.load(Relaxed),
            );
            sink.stat(format_args!("tx{q}_tstamps"), s.tx_tstamps.load(Relaxed));
            sink.stat(
                format_args!("tx{q}_doorbells"),
                s.tx_doorbells.load(Relaxed),
            );
            sink.stat(
                format_args!("tx{q}_doorbells_skipped"),
                s.tx_doorbells_skipped.load(Relaxed),
            );
            sink.stat(format_args!("tx{q}_stops"), s.tx_stops.load(Relaxed));
            sink.stat(format_args!("tx{q}_wakes"), s.tx_wakes.load(Relaxed));
            sink.stat(format_args!("tx{q}_timeouts"), s.tx_timeouts.load(Relaxed));
            sink.stat(
                format_args!("q{q}_bad_completions"),
                s.bad_completions.load(Relaxed),
            );
            sink.stat(
                format_args!("rx{q}_crc_errors"),
                s.rx_crc_errors.load(Relaxed),
            );
            sink.stat(format_args!("q{q}_resets"), s.resets.load(Relaxed));
            sink.stat(
                format_args!("q{q}_missed_irqs"),
                s.missed_irqs.load(Relaxed),
            );
            sink.stat(
                format_args!("q{q}_rearm_polls"),
                s.rearm_polls.load(Relaxed),
            );
            for (name, counter) in [
                ("pass", &s.xdp_pass),
                ("tx", &s.xdp_tx),
                ("tx_errors", &s.xdp_tx_errors),
                ("redirect", &s.xdp_redirect),
                ("redirect_errors", &s.xdp_redirect_errors),
                ("drop", &s.xdp_drop),
                ("aborted", &s.xdp_aborted),
            ] {
                sink.stat(format_args!("rx{q}_xdp_{name}"), counter.load(Relaxed));
            }
            sink.stat(format_args!("tx{q}_xdp_xmit"), s.tx_xdp_xmit.load(Relaxed));
            sink.stat(
                format_args!("tx{q}_xdp_xmit_errors"),
                s.tx_xdp_xmit_errors.load(Relaxed),
            );
            sink.stat(format_args!("rx{q}_xsk"), s.rx_xsk.load(Relaxed));
            sink.stat(format_args!("tx{q}_xsk"), s.tx_xsk.load(Relaxed));
            for (name, counter) in [
                ("frags", &s.rx_stream_frags),
                ("copies", &s.rx_stream_copies),
                ("chunks_replaced", &s.rx_stream_chunks_replaced),
            ] {
                sink.stat(format_args!("rx{q}_stream_{name}"), counter.load(Relaxed));
            }
            // The card's own counts of this pair, asked for only when the
            // values are read. A card that does not answer reads as zeros.
            let card = if sink.wants_values() {
                nic.admin
                    .exec(AdminCmd::QueryQpStats { qp: q as u16 })
                    .map(|entry| QpCardStats::read_result(&entry))
                    .unwrap_or_default()
            } else {
                QpCardStats::default()
            };
            for (name, value) in card.named() {
                sink.stat(format_args!("q{q}_{name}"), value);
            }
        }
    }

    fn channels(dev: &NetDev<Self>, _locked: &DevLocked) -> (u32, u32) {
        let nic = dev.data();
        (nic.queues.len() as u32, u32::from(nic.config.lock().queues))
    }

    fn set_channels(dev: &NetDev<Self>, rtnl: &RtnlLocked<'_>, combined: u32) -> Result {
        let nic = dev.data();
        let queues = u16::try_from(combined)
            .ok()
            .filter(|&q| q >= 1 && usize::from(q) <= nic.queues.len())
            .ok_or(EINVAL)?;
        // The table's size follows the queue count; the core's tables
        // (the default context's, if the user set it, and every other
        // context's) must fold or unfold to it without changing what
        // they say, or the count stays. The core takes its RSS lock
        // before the configuration lock (it calls `rss` and the context
        // ops holding it), so the contexts are checked before that lock
        // is taken; a count that moved meanwhile refuses the change.
        let old_queues = nic.config.lock().queues;
        let (old_len, new_len) = (rss_table_len(old_queues), rss_table_len(queues));
        // CAST: at most the card's table length (128).
        let new_len_u32 = new_len as u32;
        if new_len != old_len {
            rxfh_ctxs_can_resize(dev, rtnl, new_len_u32)?;
        }
        let mut cfg = nic.config.lock();
        if cfg.queues != old_queues {
            return Err(EBUSY);
        }
        // Contexts and rules must not point past the queues in use.
        if nic
            .steering
            .lock()
            .max_queue()
            .is_some_and(|q| q >= u32::from(queues))
        {
            return Err(EINVAL);
        }
        let mut new = Config { queues, ..*cfg };
        if cfg.rss_table_set {
            let mut table = [0u32; hw::RSS_TABLE_LEN];
            for (t, &q) in table.iter_mut().zip(cfg.rss_table.iter()) {
                *t = u32::from(q);
            }
            if !rxfh_indir_can_resize(dev, rtnl, &table[..old_len], new_len_u32) {
                return Err(EINVAL);
            }
            new.rss_table = resized_table(&cfg.rss_table, old_len, new_len);
            // A table the user set must not point past the queues in use.
            if new.rss_table.iter().any(|&q| u16::from(q) >= queues) {
                return Err(EINVAL);
            }
        } else {
            new.rss_table = Config::default_rss_table(queues);
        }
        nic.reconfigure(dev, rtnl, &mut cfg, new, dev.mtu())?;
        if new_len == old_len {
            return Ok(());
        }
        let pushed = nic.resize_rss_contexts(old_len, new_len);
        // The core's copies follow the size now reported, whatever the
        // card said; its notification reads the tables back through
        // `rss`, which takes the configuration lock.
        drop(cfg);
        rxfh_ctxs_resize(dev, rtnl, new_len_u32);
        pushed
    }

    fn rss_table_len(dev: &NetDev<Self>) -> u32 {
        // CAST: at most the card's table length (128).
        rss_table_len(dev.data().config.lock().queues) as u32
    }

    fn rss(dev: &NetDev<Self>, _locked: &DevLocked, out: Rxfh<'_>) {
        let cfg = dev.data().config.lock();
        for (t, &q) in out.table.iter_mut().zip(cfg.rss_table.iter()) {
            *t = u32::from(q);
        }
        for (k, &b) in out.key.iter_mut().zip(cfg.rss_key.iter()) {
            *k = b;
        }
    }

    const INPUT_XFRMS: &'static [InputXfrm] = &[InputXfrm::SymXor];

    fn rss_input_xfrm(dev: &NetDev<Self>, _locked: &DevLocked) -> InputXfrm {
        xfrm_of_card(dev.data().config.lock().rss_xfrm)
    }

    fn set_rss(
        dev: &NetDev<Self>,
        _locked: &DevLocked,
        table: Option<&[u32]>,
        key: Option<&[u8]>,
        xfrm: Option<InputXfrm>,
    ) -> Result {
        let nic = dev.data();
        let mut cfg = nic.config.lock();
        let mut new = *cfg;
        if let Some(table) = table {
            new.rss_table = card_table(table, cfg.queues)?;
            // An all-default table (`ethtool -X default`) follows the queue
            // count again.
            new.rss_table_set = new.rss_table != Config::default_rss_table(cfg.queues);
        }
        if let Some(key) = key {
            new.rss_key = key.try_into().map_err(|_| EINVAL)?;
        }
        if let Some(xfrm) = xfrm {
            new.rss_xfrm = card_xfrm(xfrm);
        }
        nic.push_rss(&new)?;
        *cfg = new;
        Ok(())
    }

    const RSS_PER_CONTEXT_FIELDS: bool = true;

    fn rxfh_fields(
        dev: &NetDev<Self>,
        _locked: &DevLocked,
        context: u32,
        flow: HashFlow,
    ) -> Result<HashFields> {
        let addrs = HashFields::IP_SRC.with(HashFields::IP_DST);
        let nic = dev.data();
        let fields = match context {
            0 => nic.config.lock().rss_fields,
            id => nic.context_fields(id)?,
        };
        Ok(match rss_flow(flow) {
            Some(flow) => fields_of(fields[flow as usize]),
            // Other IP traffic hashes its addresses, always.
            None => addrs,
        })
    }

    fn set_rxfh_fields(
        dev: &NetDev<Self>,
        _locked: &DevLocked,
        context: u32,
        flow: HashFlow,
        fields: HashFields,
    ) -> Result {
        let addrs = HashFields::IP_SRC.with(HashFields::IP_DST);
        let Some(flow) = rss_flow(flow) else {
            return if fields == addrs { Ok(()) } else { Err(EINVAL) };
        };
        let mut mask = 0;
        for (field, bit) in FIELD_BITS {
            if fields.contains(field) {
                mask |= bit;
            }
        }
        // Only what the card can hash (the flow label of IPv6 only).
        if fields_of(mask) != fields || mask & !hw::rss_fields::allowed(flow) != 0 {
            return Err(EINVAL);
        }
        let nic = dev.data();
        if context != 0 {
            return nic.set_context_fields(context, flow, mask);
        }
        let mut cfg = nic.config.lock();
        let mut new = *cfg;
        new.rss_fields[flow as usize] = mask;
        nic.push_rss(&new)?;
        *cfg = new;
        Ok(())
    }

    fn eth_mac_stats(dev: &NetDev<Self>, _locked: &DevLocked) -> EthMacStats {
        let Some(m) = dev.data().mac_stats() else {
            return EthMacStats::default();
        };
        EthMacStats {
            frames_tx: Some(m.tx_frames),
            frames_rx: Some(m.rx_frames),
            fcs_errors: Some(m.rx_fcs_errors),
            octets_tx: Some(m.tx_octets),
            octets_rx: Some(m.rx_octets),
            multicast_tx: Some(m.tx_multicast),
            broadcast_tx: Some(m.tx_broadcast),
            multicast_rx: Some(m.rx_multicast),
            broadcast_rx: Some(m.rx_broadcast),
        }
    }

    fn eth_ctrl_stats(dev: &NetDev<Self>, _locked: &DevLocked) -> EthCtrlStats {
        let m = dev.data().mac_stats();
        EthCtrlStats {
            frames_tx: m.map(|m| m.tx_control),
            frames_rx: m.map(|m| m.rx_control),
        }
    }

    fn create_rss_context(
        dev: &NetDev<Self>,
        _locked: &DevLocked,
        id: u32,
        table: Option<&[u32]>,
        key: Option<&[u8]>,
        xfrm: InputXfrm,
        out: Rxfh<'_>,
    ) -> Result {
        dev.data().create_rss_context(id, table, key, xfrm, out)
    }

    fn modify_rss_context(
        dev: &NetDev<Self>,
        _locked: &DevLocked,
        id: u32,
        table: Option<&[u32]>,
        key: Option<&[u8]>,
        xfrm: Option<InputXfrm>,
        old: Rxfh<'_>,
    ) -> Result {
        dev.data().modify_rss_context(id, table, key, xfrm, old)
    }

    fn remove_rss_context(dev: &NetDev<Self>, _locked: &DevLocked, id: u32) -> Result {
        dev.data().remove_rss_context(id)
    }

    fn flow_rules(dev: &NetDev<Self>, _locked: &DevLocked, each: &mut dyn FnMut(u32, &FlowRule)) {
        for (loc, rule) in dev.data().steering.lock().rules() {
            each(loc, rule);
        }
    }

    fn set_flow_rule(
        dev: &NetDev<Self>,
        _locked: &DevLocked,
        location: u32,
        rule: FlowRule,
    ) -> Result<u32> {
        if !dev.features().contains(Feature::Ntuple) {
            return Err(crate::linux::eopnotsupp());
        }
        dev.data().set_flow_rule(location, rule)
    }

    fn del_flow_rule(dev: &NetDev<Self>, _locked: &DevLocked, location: u32) -> Result {
        dev.data().del_flow_rule(location)
    }

    /// Ring sizes and header/data split; a running interface restarts
    /// its queues if anything changed. Split is refused beside an RX
    /// stream (a record holds a frame whole) and an XDP program (the core
    /// refuses single-buffer ones; the driver runs no other kind), and by
    /// a card without it.
    fn set_rings(dev: &NetDev<Self>, rtnl: &RtnlLocked<'_>, want: Rings) -> Result {
        let nic = dev.data();
        let (rx_ring, tx_ring) = (RingSize::new(want.rx)?, RingSize::new(want.tx)?);
        let mut cfg = nic.config.lock();
        let new = Config {
            rx_ring,
            tx_ring,
            tcp_data_split: want.tcp_data_split,
            hds_thresh: want.hds_thresh,
            ..*cfg
        };
        if want.tcp_data_split == TcpDataSplit::Enabled
            && cfg.tcp_data_split != TcpDataSplit::Enabled
        {
            if nic.info.features & hw::feature::HDS == 0 {
                return Err(crate::linux::eopnotsupp());
            }
            if cfg.rx_stream || cfg.xdp {
                return Err(EBUSY);
            }
        }
        let splits = nic.splits(&new);
        if new.rx_ring == cfg.rx_ring
            && new.tx_ring == cfg.tx_ring
            && splits == nic.splits(&cfg)
            && (!splits || new.hds_thresh == cfg.hds_thresh)
        {
            // Nothing the queues see changes (a threshold while not
            // splitting, `auto` for `off`): no restart.
            *cfg = new;
            return Ok(());
        }
        nic.reconfigure(dev, rtnl, &mut cfg, new, dev.mtu())
    }

    fn rx_copybreak(dev: &NetDev<Self>, _locked: &DevLocked) -> u32 {
        dev.data().rx_copybreak.load(Relaxed)
    }

    /// Takes effect at each queue's next NAPI poll; at most
    /// [`MAX_RX_COPYBREAK`] bytes (0: never copy).
    fn set_rx_copybreak(dev: &NetDev<Self>, _locked: &DevLocked, bytes: u32) -> Result {
        if bytes > MAX_RX_COPYBREAK {
            return Err(EINVAL);
        }
        dev.data().rx_copybreak.store(bytes, Relaxed);
        Ok(())
    }

    fn priv_flags(dev: &NetDev<Self>, _locked: &DevLocked) -> u32 {
        u32::from(dev.data().config.lock().rx_stream) << PRIV_RX_STREAM
    }

    /// `rx-stream`: the queue pairs receive into streams; a running
    /// interface restarts its queues (frames in flight are lost, as for a
    /// ring resize). Refused while an AF_XDP socket is bound in zero-copy
    /// mode (it needs the RX ring's buffers).
    fn set_priv_flags(dev: &NetDev<Self>, rtnl: &RtnlLocked<'_>, flags: u32) -> Result {
        let nic = dev.data();
        let rx_stream = flags & 1 << PRIV_RX_STREAM != 0;
        let mut cfg = nic.config.lock();
        if rx_stream == cfg.rx_stream {
            return Ok(());
        }
        if rx_stream {
            nic.stream_allowed(dev, rtnl)?;
            if cfg.tcp_data_split == TcpDataSplit::Enabled {
                // A record holds a frame whole.
                return Err(EBUSY);
            }
        }
        let new = Config { rx_stream, ..*cfg };
        nic.reconfigure(dev, rtnl, &mut cfg, new, dev.mtu())?;
        drop(cfg);
        // Streams carry no coalesced frames (`fix_features`).
        dev.update_features(rtnl);
        Ok(())
    }

    /// The split as in effect: `on` only while the queues split.
    fn rings(dev: &NetDev<Self>, _locked: &DevLocked) -> (u32, Rings) {
        let nic = dev.data();
        let cfg = nic.config.lock();
        let rings = Rings {
            rx: u32::from(cfg.rx_ring.get()),
            tx: u32::from(cfg.tx_ring.get()),
            tcp_data_split: if nic.splits(&cfg) {
                TcpDataSplit::Enabled
            } else {
                TcpDataSplit::Disabled
            },
            hds_thresh: cfg.hds_thresh,
        };
        (u32::from(hw::MAX_RING_ENTRIES), rings)
    }
}

/// The largest rx-copybreak accepted: beyond a kilobyte a copy costs
/// more than the page it saves (bnxt has the same bound).
const MAX_RX_COPYBREAK: u32 = 1024;

/// Bit of the `rx-stream` private flag.
const PRIV_RX_STREAM: u32 = 0;

/// The card's hash-field bits and the ethtool fields they are.
const FIELD_BITS: [(HashFields, u8); 5] = [
    (HashFields::IP_SRC, hw::rss_fields::IP_SRC),
    (HashFields::IP_DST, hw::rss_fields::IP_DST),
    (HashFields::L4_SRC, hw::rss_fields::L4_SRC),
    (HashFields::L4_DST, hw::rss_fields::L4_DST),
    (HashFields::IP6_FL, hw::rss_fields::FLOW_LABEL),
];

/// The ethtool fields of a card hash-field mask.
fn fields_of(mask: u8) -> HashFields {
    FIELD_BITS
        .iter()
        .filter(|(_, bit)| mask & bit != 0)
        .fold(HashFields::empty(), |all, (field, _)| all.with(*field))
}

/// The card's flow type whose fields the driver chooses; `None` for the
/// ones the card always hashes by address.
fn rss_flow(flow: HashFlow) -> Option<hw::RssFlow> {
    match flow {
        HashFlow::Tcp4 => Some(hw::RssFlow::Tcp4),
        HashFlow::Udp4 => Some(hw::RssFlow::Udp4),
        HashFlow::Tcp6 => Some(hw::RssFlow::Tcp6),
        HashFlow::Udp6 => Some(hw::RssFlow::Udp6),
        HashFlow::Ip4 | HashFlow::Ip6 => None,
    }
}

impl Nic {
    /// The card's MAC counters of this function, or `None` if the card
    /// does not answer.
    pub(super) fn mac_stats(&self) -> Option<hw::MacStats> {
        let _cfg = self.config.lock();
        let buf = self.block_mem.dma_addr(0).ok()?;
        self.admin.run(AdminCmd::QueryMacStats { buf }).ok()?;
        let mut raw = [0u8; hw::MacStats::SIZE];
        self.block_mem.read(0, &mut raw).ok()?;
        Some(hw::MacStats::from_bytes(&raw))
    }
}
