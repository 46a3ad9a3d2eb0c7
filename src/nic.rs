// SPDX-License-Identifier: GPL-2.0

//! The synthetic NIC: the network device the host stack binds to (NetVSC's
//! role). It runs through the card's queue pairs and is configured through
//! the admin queue.

use kernel::{
    device::{Bound, Device},
    new_mutex,
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc, Mutex,
    },
    time::{delay::fsleep, Delta, Instant, Monotonic},
};

use crate::admin::{AdminError, AdminQueue};
use crate::bond::{self, Bond};
use crate::gft::Gft;
use crate::hw::{
    self, mc_filter_bit, offload, regs, rx_mode, AdminCmd, AdminStatus, DeviceInfo, FuncKind,
    QpCardStats,
};
use crate::linux::{
    dma::DmaBuffer,
    dma::DmaDevice,
    irq::{IrqHandler, IrqHandlerRegistration, MsixVectors},
    net::ethtool::{Coalesce, DrvInfo, EthtoolOps, StatsSink},
    net::netdev::{
        is_valid_ether_addr, random_ether_addr, rss_key_fill, Features, HwAddrList, LinkStats,
        NetDev, NetDevOps, NetDevRef, QueueCounters, Registration, Setup,
    },
    net::skbuff::SkBuff,
    net::work::{DeviceWork, NetDevWork},
};
use crate::queue::{bump, QueueGeometry, QueueIrq, QueueVector};
use crate::recovery::{CardChange, CardWatch, HEALTH_CHECK_MS};
use crate::regs::Registers;
use crate::ring::RingSize;
use crate::selftest::{self, IrqCount, SelfTestError};

/// Queue pairs used when the card has enough.
const DEFAULT_QUEUES: u16 = 4;
/// Default TX and RX ring entries.
const DEFAULT_RING: u32 = 256;
/// Multicast addresses the driver filters exactly-ish (64-bit hash); more
/// than this and it accepts all multicast.
const MAX_MC_FILTER: usize = 32;

/// Settings that change under RTNL.
#[derive(Clone, Copy)]
struct Config {
    queues: u16,
    tx_ring: RingSize,
    rx_ring: RingSize,
    running: bool,
    rss_key: [u8; hw::RSS_KEY_LEN],
    rss_table: [u8; hw::RSS_TABLE_LEN],
    /// The user set the table (`ethtool -X`); else it follows the queue count.
    rss_table_set: bool,
    /// Interrupt moderation (`ethtool -C`).
    coalesce: Coalesce,
}

impl Config {
    /// The default table: entries round-robin over the queues in use.
    fn default_rss_table(queues: u16) -> [u8; hw::RSS_TABLE_LEN] {
        core::array::from_fn(|i| (i % usize::from(queues.max(1))) as u8)
    }
}

/// [`NetDevWork`] id of the GFT exception work.
const GFT_WORK: u8 = 1;
/// GFT exceptions one run of the work decides before it yields.
const GFT_WORK_BUDGET: u32 = 256;

/// How long a function reset may take, in milliseconds.
const RESET_POLLS: u32 = 100;

/// The synthetic NIC's driver state, in its net device's private area.
///
/// Field order is drop order: interrupt handlers go before the queues
/// they schedule.
#[pin_data]
pub(crate) struct Nic {
    /// The device's work: resets queue pairs that need it (with backoff),
    /// the periodic health check, VF sync. First, so it is cancelled
    /// before anything it uses goes away.
    #[pin]
    reset_work: NetDevWork<Nic>,
    /// PF: decides the GFT exceptions NAPI queued.
    #[pin]
    gft_work: NetDevWork<Nic, GFT_WORK>,
    /// Times the whole function was reset (the card lost track of an
    /// admin command).
    device_resets: Atomic<u64>,
    /// Times the card stopped answering (the health check found it gone).
    card_lost: Atomic<u64>,
    /// Whether the card answers, as the health check sees it.
    #[pin]
    card_watch: Mutex<CardWatch>,
    admin_irq: Pin<KBox<IrqHandlerRegistration<AdminIrq>>>,
    queue_irqs: KVec<Pin<KBox<IrqHandlerRegistration<QueueIrq>>>>,
    queues: KVec<Arc<QueueVector>>,
    regs: Arc<Registers>,
    admin: Arc<AdminQueue>,
    dma: DmaDevice,
    info: DeviceInfo,
    /// The PF's synthetic NIC, or a VF's NIC.
    kind: FuncKind,
    /// The card's identifier (a VF joins the PF of the same card).
    card_id: u32,
    /// The permanent MAC (the card's, or the random fallback).
    perm_mac: [u8; 6],
    /// PF: the VF bond.
    #[pin]
    bond: Bond,
    /// PF: the GFT's policy, flows and exception path.
    gft: Option<Arc<Gft>>,
    /// The RX filter the device's own address lists and flags ask for
    /// (`rx_mode` bits and multicast hash); see `apply_rx_filter`.
    rx_filter_flags: Atomic<u32>,
    rx_filter_mc: Atomic<u64>,
    fw_version: [u8; 3],
    bus_info: [u8; 16],
    /// Where the RSS configuration block goes for the card to read.
    rss_mem: DmaBuffer,
    #[pin]
    config: Mutex<Config>,
}

/// The link-change interrupt (admin vector): carrier follows the card.
#[pin_data]
pub(crate) struct AdminIrq {
    dev: NetDevRef<Nic>,
    regs: Arc<Registers>,
    /// Last link state reported, so each change is logged once.
    reported_up: Atomic<u32>,
    /// Interrupts seen (for `ethtool -t`).
    fired: Atomic<u32>,
    /// Whether the interface is up (carrier is only reported then).
    running: Atomic<u32>,
}

impl AdminIrq {
    /// Reads the link state and updates the carrier, logging a change.
    /// Runs in the interrupt handler, so it must not touch the `Nic`
    /// (which does not exist yet when the handler is first registered).
    fn sync_link(&self) {
        // All ones (or a failed read) is a card that is not answering, not
        // a link state: keep what we have until it answers again.
        let up = match self.regs.read(regs::LINK_STATUS) {
            Ok(v) if v != u32::MAX => v & hw::link::UP != 0,
            _ => return,
        };
        let dev = self.dev.get();
        if up && self.running.load(Relaxed) != 0 {
            dev.carrier_on();
        } else {
            dev.carrier_off();
        }
        if self.reported_up.xchg(u32::from(up), Relaxed) != u32::from(up) {
            let speed = hw::LINK_SPEED_MBPS / 1000;
            if up {
                pr_info!("{}: link up, {} Gbit/s\n", dev.name(), speed);
            } else {
                pr_info!("{}: link down\n", dev.name());
            }
        }
    }
}

impl AdminIrq {
    /// Records whether the interface is up and re-reads the link.
    fn set_running(&self, running: bool) {
        self.running.store(u32::from(running), Relaxed);
        self.sync_link();
    }
}

impl IrqHandler for AdminIrq {
    fn handle(&self) -> bool {
        self.fired.fetch_add(1, Relaxed);
        self.sync_link();
        true
    }
}

impl IrqCount for AdminIrq {
    fn fired(&self) -> u32 {
        self.fired.load(Relaxed)
    }
}

/// The registered network device of a function: a PF's synthetic NIC or
/// a VF's NIC.
pub(crate) type NicRegistration = Registration<Nic>;

/// Creates and registers the network device of a function whose self-test
/// passed: the synthetic NIC for a PF, a plain NIC with the same MAC for a
/// VF.
pub(crate) fn register(
    pdev: &Device<Bound>,
    regs: &Arc<Registers>,
    vectors: &MsixVectors<'_>,
    kind: FuncKind,
) -> Result<NicRegistration> {
    let dma = DmaDevice::new(pdev);
    let admin = AdminQueue::new(regs.clone(), &dma)?;
    let entry = admin.exec(AdminCmd::QueryDevice)?;
    let info = DeviceInfo::read_result(&entry);
    // Everything the card claims is bounded by what the driver can use.
    let max_queues = (info.max_qps.min(u32::from(hw::MAX_QUEUE_PAIRS)) as u16)
        .min(vectors.count().saturating_sub(1) as u16);
    if max_queues == 0 {
        dev_err!(pdev, "card offers no usable queue pair\n");
        return Err(EIO);
    }
    let ring =
        RingSize::new(DEFAULT_RING, hw::MIN_RING_ENTRIES, hw::MAX_RING_ENTRIES).ok_or(EINVAL)?;
    // The card's permanent address is untrusted like everything it says.
    let mut mac = regs.mac()?;
    if !is_valid_ether_addr(&mac) {
        let bad = mac;
        mac = random_ether_addr();
        dev_warn!(
            pdev,
            "card's MAC {:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x} is not a unicast address; using a random one\n",
            bad[0], bad[1], bad[2], bad[3], bad[4], bad[5]
        );
    }
    let card_id = regs.read(regs::CARD_ID)?;
    let setup = Setup {
        mac,
        min_mtu: hw::MIN_MTU,
        max_mtu: info.max_mtu.clamp(hw::MIN_MTU, hw::MAX_MTU),
        queues: u32::from(max_queues.min(DEFAULT_QUEUES)),
        features: Features {
            tx_csum: info.offloads & offload::TX_CSUM != 0,
            rx_csum: info.offloads & offload::RX_CSUM != 0,
            sg: true,
            tso: info.offloads & offload::TSO != 0,
            hw_tc: kind == FuncKind::Pf,
        },
        tso_max_segs: hw::TSO_MAX_SEGS,
        // A PF's synthetic NIC transmits through its VF's NIC.
        stacked: kind == FuncKind::Pf,
    };
    let queues_default = max_queues.min(DEFAULT_QUEUES);
    let fw = regs.read(regs::FW_VERSION)?.to_be_bytes();
    let mut bus_info = [0u8; 16];
    let name = pdev.name().to_bytes();
    let n = name.len().min(bus_info.len() - 1);
    bus_info[..n].copy_from_slice(&name[..n]);
    let rss_mem = dma.alloc(hw::RSS_CONFIG_LEN)?;
    let gft = match kind {
        FuncKind::Pf => Some(Gft::new(admin.clone(), &dma)?),
        FuncKind::Vf => None,
    };
    let mut rss_key = [0u8; hw::RSS_KEY_LEN];
    rss_key_fill(&mut rss_key);
    let regs = regs.clone();
    Registration::new(
        pdev,
        u32::from(max_queues),
        setup,
        move |dev: NetDevRef<Nic>| {
            let mut queues = KVec::with_capacity(usize::from(max_queues), GFP_KERNEL)?;
            let mut queue_irqs = KVec::with_capacity(usize::from(max_queues), GFP_KERNEL)?;
            for q in 0..max_queues {
                let queue = QueueVector::new_queue(q, regs.clone(), dev.clone())?;
                let irq = vectors.irq(u32::from(hw::qp_vector(q)))?;
                queue.set_irq(irq);
                let registration =
                    IrqHandlerRegistration::new(irq, c"rsnic-queue", QueueIrq::new(queue.clone()));
                queue_irqs.push(KBox::pin_init(registration, GFP_KERNEL)?, GFP_KERNEL)?;
                queues.push(queue, GFP_KERNEL)?;
            }
            let (irq_dev, irq_regs) = (dev.clone(), regs.clone());
            let admin_irq = KBox::pin_init(
                IrqHandlerRegistration::new(
                    vectors.irq(u32::from(hw::ADMIN_VECTOR))?,
                    c"rsnic-admin",
                    try_pin_init!(AdminIrq {
                    dev: irq_dev,
                    regs: irq_regs,
                    reported_up: Atomic::new(0),
                    fired: Atomic::new(0),
                    running: Atomic::new(0),
                }? Error),
                ),
                GFP_KERNEL,
            )?;
            Ok(try_pin_init!(Nic {
            reset_work <- NetDevWork::new(dev.clone()),
            gft_work <- NetDevWork::new(dev.clone()),
            device_resets: Atomic::new(0),
            card_lost: Atomic::new(0),
            card_watch <- new_mutex!(CardWatch::default()),
            admin_irq,
            queue_irqs,
            queues,
            regs,
            admin,
            dma,
            info,
            kind,
            card_id,
            perm_mac: mac,
            bond <- Bond::new(),
            gft,
            rx_filter_flags: Atomic::new(rx_mode::BROADCAST),
            rx_filter_mc: Atomic::new(0),
            fw_version: [fw[1], fw[2], fw[3]],
            bus_info,
            rss_mem,
            config <- new_mutex!(Config {
                queues: queues_default,
                tx_ring: ring,
                rx_ring: ring,
                running: false,
                rss_key,
                rss_table: Config::default_rss_table(queues_default),
                rss_table_set: false,
                coalesce: Coalesce::default(),
            }),
        }? Error))
        },
    )
}

impl Nic {
    /// The counters of this function's own queues, as `ip -s link` shows
    /// them (a PF adds its VF's).
    pub(crate) fn own_link_stats(&self) -> LinkStats {
        let mut stats = LinkStats::default();
        for queue in self.queues.iter() {
            let s = &queue.stats;
            stats.tx_packets += s.tx_packets.load(Relaxed);
            stats.tx_bytes += s.tx_bytes.load(Relaxed);
            stats.tx_dropped += s.tx_dropped.load(Relaxed) + s.tx_busy.load(Relaxed);
            stats.rx_packets += s.rx_packets.load(Relaxed);
            stats.rx_bytes += s.rx_bytes.load(Relaxed);
            stats.rx_dropped += s.rx_dropped.load(Relaxed);
            let crc_errors = s.rx_crc_errors.load(Relaxed);
            stats.rx_errors += s.bad_completions.load(Relaxed) + crc_errors;
            stats.rx_crc_errors += crc_errors;
        }
        stats
    }

    /// Programs the card's RX filter: this device's own, joined with
    /// `master`'s for an enslaved VF.
    pub(crate) fn apply_rx_filter(&self, master: Option<&Nic>) -> Result {
        let mut flags = self.rx_filter_flags.load(Relaxed);
        let mut mc_filter = self.rx_filter_mc.load(Relaxed);
        if let Some(m) = master {
            flags |= m.rx_filter_flags.load(Relaxed);
            mc_filter |= m.rx_filter_mc.load(Relaxed);
        }
        self.admin.run(AdminCmd::SetRxMode { flags, mc_filter })
    }

    /// PF or VF.
    pub(crate) fn kind(&self) -> FuncKind {
        self.kind
    }

    /// The card's identifier.
    pub(crate) fn card_id(&self) -> u32 {
        self.card_id
    }

    /// The permanent MAC address.
    pub(crate) fn perm_mac(&self) -> &[u8; 6] {
        &self.perm_mac
    }

    /// The VF bond (meaningful on a PF).
    pub(crate) fn bond(&self) -> &Bond {
        &self.bond
    }

    /// The admin queue.
    pub(crate) fn admin(&self) -> &Arc<AdminQueue> {
        &self.admin
    }

    /// Queues the device's work item (TX queue resets, VF sync).
    pub(crate) fn schedule_work(&self) {
        self.reset_work.schedule();
    }

    /// The largest frame at `mtu`: Ethernet header and one VLAN tag.
    fn max_frame(mtu: u32) -> u32 {
        mtu + 14 + 4
    }

    /// Ring and buffer sizes of every queue pair for `cfg` and `mtu`. A
    /// PF's buffers also fit a GFT exception: its header, and a tunnelled
    /// frame's outer headers.
    fn geometry(&self, cfg: &Config, mtu: u32) -> QueueGeometry {
        let gft_room = match self.kind {
            FuncKind::Pf => hw::gft::META_LEN as u32 + hw::gft::MAX_ENCAP_LEN,
            FuncKind::Vf => 0,
        };
        QueueGeometry {
            tx: cfg.tx_ring,
            rx: cfg.rx_ring,
            rx_frame: Self::max_frame(mtu) + gft_room,
        }
    }

    /// PF: the GFT.
    pub(crate) fn gft(&self) -> Option<&Arc<Gft>> {
        self.gft.as_ref()
    }

    /// NAPI of queue pair `queue` received a GFT exception: queued for the
    /// GFT work. Only the PF's queue pair 0 is the exception queue; one
    /// anywhere else is the card's mistake and is dropped.
    pub(crate) fn gft_exception(&self, queue: u16, skb: SkBuff) {
        match &self.gft {
            Some(gft) if queue == 0 => {
                if gft.queue_exception(skb) {
                    self.gft_work.schedule();
                }
            }
            _ => {
                if let Some(q) = self.queues.get(usize::from(queue)) {
                    bump(&q.stats.bad_completions, 1);
                }
            }
        }
    }

    /// Whether the card checksums TX frames.
    fn tx_csum(&self) -> bool {
        self.info.offloads & offload::TX_CSUM != 0
    }

    /// Creates and starts the card's queue pairs for `mtu`. On failure,
    /// everything started is torn down again.
    fn start_queues(
        &self,
        dev: &NetDev<Self>,
        cfg: &Config,
        mtu: u32,
        features: Features,
    ) -> Result {
        self.admin.run(AdminCmd::SetMtu { mtu })?;
        self.set_card_offloads(features)?;
        self.admin.run(AdminCmd::SetCoalesce {
            usecs: cfg.coalesce.usecs,
            frames: cfg.coalesce.frames,
        })?;
        let geo = self.geometry(cfg, mtu);
        self.push_rss(cfg)?;
        for (n, queue) in self.queues.iter().take(usize::from(cfg.queues)).enumerate() {
            let started = queue
                .prepare(&self.dma, geo, self.tx_csum())
                .and_then(|cmd| self.admin.run(AdminCmd::CreateQp(cmd)))
                .and_then(|()| queue.start());
            if let Err(e) = started {
                // A create that timed out may yet run on the card.
                self.quiesce_card(dev);
                queue.stop();
                self.stop_queues(dev, n);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Hands the RSS key and table of `cfg` to the card.
    fn push_rss(&self, cfg: &Config) -> Result {
        self.rss_mem.write(0, &cfg.rss_key)?;
        self.rss_mem.write(hw::RSS_KEY_LEN, &cfg.rss_table)?;
        self.admin.run(AdminCmd::SetRss {
            config: self.rss_mem.dma_addr(0)?,
        })
    }

    /// Tells the card which offloads to perform. TX checksumming and TSO
    /// stay on whenever the card has them: the stack only asks for them
    /// per packet while the feature is on, and packets already queued when
    /// the user turns it off still need them.
    fn set_card_offloads(&self, features: Features) -> Result {
        let mut flags = self.info.offloads & (offload::TX_CSUM | offload::TSO);
        if features.rx_csum {
            flags |= self.info.offloads & offload::RX_CSUM;
        }
        self.admin.run(AdminCmd::SetOffloads { flags })
    }

    /// Applies `new` settings (queue count, ring sizes) and `mtu`: if the
    /// interface is up, its queues restart with them. On failure the old
    /// settings are restored and the error returned.
    fn reconfigure(&self, dev: &NetDev<Self>, cfg: &mut Config, new: Config, mtu: u32) -> Result {
        let old = *cfg;
        if !old.running {
            dev.set_real_num_queues(u32::from(new.queues))?;
            *cfg = new;
            return Ok(());
        }
        dev.detach();
        self.stop_queues(dev, usize::from(old.queues));
        let result = dev
            .set_real_num_queues(u32::from(new.queues))
            .and_then(|()| self.start_queues(dev, &new, mtu, dev.features()));
        if result.is_ok() {
            *cfg = new;
        } else {
            // Come back up as before rather than stay down.
            let _ = dev.set_real_num_queues(u32::from(old.queues));
            let _ = self.start_queues(dev, &old, dev.mtu(), dev.features());
        }
        dev.attach();
        result
    }

    /// Destroys the first `count` queue pairs on the card and frees them.
    fn stop_queues(&self, dev: &NetDev<Self>, count: usize) {
        for q in 0..count {
            self.destroy_pair(q as u16);
        }
        // A destroy the card did not answer or failed may leave a pair
        // running: stop the card before its rings are freed.
        self.quiesce_card(dev);
        for queue in self.queues.iter().take(count) {
            queue.stop();
        }
    }

    /// Destroys queue pair `q` on the card. If the card may not have (it
    /// failed or did not answer), the admin queue records that the card's
    /// state is unknown, for [`Self::quiesce_card`].
    fn destroy_pair(&self, q: u16) {
        match self.admin.exec(AdminCmd::DestroyQp { qp: q }) {
            // Destroyed, or the card has no such pair (a reset took it).
            Ok(_) | Err(AdminError::Refused(AdminStatus::BadState)) => {}
            Err(_) => self.admin.lose_track(),
        }
    }

    /// Resets the function on the card if an admin command went
    /// unanswered since the last reset: the card may still act on it, so
    /// its state is unknown. The reset stops all of the card's DMA, so
    /// memory it was given may then be freed. The admin queue, MAC and RX
    /// filter (and a PF's data path) are given back; queue pairs are the
    /// caller's to recreate.
    fn quiesce_card(&self, dev: &NetDev<Self>) {
        if !self.admin.lost_track() {
            return;
        }
        bump(&self.device_resets, 1);
        pr_warn!(
            "{}: card lost track of an admin command, resetting the function\n",
            dev.name()
        );
        if let Err(e) = self.reset_function(dev) {
            pr_err!("{}: function reset failed: {:?}\n", dev.name(), e);
        }
    }

    fn reset_function(&self, dev: &NetDev<Self>) -> Result {
        self.regs.write(regs::DEV_CTRL, hw::ctrl::RESET)?;
        let mut ready = false;
        for _ in 0..RESET_POLLS {
            ready = self
                .regs
                .status()
                .is_some_and(|status| status & hw::status::READY != 0);
            if ready {
                break;
            }
            fsleep(Delta::from_millis(1));
        }
        if !ready {
            return Err(ETIMEDOUT);
        }
        self.admin.restart()?;
        self.admin.run(AdminCmd::SetMac { mac: dev.addr() })?;
        self.apply_rx_filter(bond::rx_filter_master(dev).map(|pf| pf.data()))?;
        if self.kind == FuncKind::Pf {
            bond::card_reset(dev);
        }
        Ok(())
    }
}

impl NetDevOps for Nic {
    fn open(dev: &NetDev<Self>) -> Result {
        let nic = dev.data();
        let mut cfg = nic.config.lock();
        nic.start_queues(dev, &cfg, dev.mtu(), dev.features())?;
        cfg.running = true;
        nic.admin_irq.handler().set_running(true);
        dev.tx_start_all();
        nic.reset_work.schedule_after(HEALTH_CHECK_MS);
        Ok(())
    }

    fn stop(dev: &NetDev<Self>) -> Result {
        let nic = dev.data();
        let mut cfg = nic.config.lock();
        dev.tx_disable();
        nic.admin_irq.handler().set_running(false);
        nic.stop_queues(dev, usize::from(cfg.queues));
        cfg.running = false;
        Ok(())
    }

    fn start_xmit(dev: &NetDev<Self>, skb: SkBuff) {
        let nic = dev.data();
        // Through the VF while the data path is the VF's and it can send.
        let Err(skb) = nic
            .bond
            .tx
            .xmit(skb, |vf| vf.is_running() && vf.carrier_ok())
        else {
            return;
        };
        match nic.queues.get(usize::from(skb.queue_mapping())) {
            Some(queue) => queue.xmit(dev, skb),
            // The stack only uses real queues; drop (and free) anything else.
            None => drop(skb),
        }
    }

    fn get_stats64(dev: &NetDev<Self>, stats: &mut LinkStats) {
        let nic = dev.data();
        *stats = nic.own_link_stats();
        if nic.kind == FuncKind::Pf {
            bond::add(stats, &nic.bond.vf_link_stats());
        }
    }

    fn set_rx_mode(dev: &NetDev<Self>, mc: &HwAddrList) -> Result {
        let (promisc, allmulti) = dev.promisc_allmulti();
        let mut addrs = [[0u8; 6]; MAX_MC_FILTER];
        let count = mc.copy_into(&mut addrs);
        let mut flags = rx_mode::BROADCAST;
        if promisc {
            flags |= rx_mode::PROMISC;
        }
        if allmulti || count > MAX_MC_FILTER {
            flags |= rx_mode::ALLMULTI;
        }
        let mc_filter = addrs
            .iter()
            .take(count.min(MAX_MC_FILTER))
            .fold(0u64, |filter, mac| filter | (1 << mc_filter_bit(mac)));
        let nic = dev.data();
        nic.rx_filter_flags.store(flags, Relaxed);
        nic.rx_filter_mc.store(mc_filter, Relaxed);
        nic.apply_rx_filter(bond::rx_filter_master(dev).map(|pf| pf.data()))?;
        if nic.kind == FuncKind::Pf {
            bond::rx_mode_changed(dev);
        }
        Ok(())
    }

    fn set_mac_address(dev: &NetDev<Self>, mac: [u8; 6]) -> Result {
        dev.data().admin.run(AdminCmd::SetMac { mac })
    }

    fn change_mtu(dev: &NetDev<Self>, mtu: u32) -> Result {
        let nic = dev.data();
        let mut cfg = nic.config.lock();
        if !cfg.running {
            nic.admin.run(AdminCmd::SetMtu { mtu })?;
            drop(cfg);
            bond::mtu_changed(dev, mtu);
            return Ok(());
        }
        // Buffers are sized for the MTU: restart the queues around it.
        let same = *cfg;
        nic.reconfigure(dev, &mut cfg, same, mtu)?;
        drop(cfg);
        bond::mtu_changed(dev, mtu);
        Ok(())
    }

    fn queue_stats(dev: &NetDev<Self>, queue: u32) -> (QueueCounters, QueueCounters) {
        dev.data()
            .queues
            .get(queue as usize)
            .map_or_else(Default::default, |q| q.counters())
    }

    fn base_stats(dev: &NetDev<Self>) -> (QueueCounters, QueueCounters) {
        let nic = dev.data();
        // Queues beyond the real count (after `ethtool -L` shrank it) keep
        // their counters here, so totals never go backwards.
        let active = usize::from(nic.config.lock().queues);
        let mut base = (QueueCounters::default(), QueueCounters::default());
        // A PF's VF path counts too (the bond keeps what VFs counted).
        let vf = if nic.kind == FuncKind::Pf {
            Some(nic.bond.vf_queue_counters())
        } else {
            None
        };
        let idle = nic.queues.iter().skip(active).map(|q| q.counters());
        for (rx, tx) in Iterator::chain(idle, vf) {
            base.0.packets += rx.packets;
            base.0.bytes += rx.bytes;
            base.1.packets += tx.packets;
            base.1.bytes += tx.bytes;
        }
        base
    }

    fn set_features(dev: &NetDev<Self>, features: Features) -> Result {
        let nic = dev.data();
        if let Some(gft) = &nic.gft {
            if features.hw_tc != dev.features().hw_tc {
                gft.set_cache(features.hw_tc)?;
            }
        }
        nic.set_card_offloads(features)?;
        bond::features_changed(dev, features);
        Ok(())
    }

    fn tx_timeout(dev: &NetDev<Self>, queue: u32) {
        let nic = dev.data();
        let Some(q) = nic.queues.get(queue as usize) else {
            return;
        };
        bump(&q.stats.tx_timeouts, 1);
        pr_warn!(
            "{}: TX queue {} timed out, resetting it\n",
            dev.name(),
            queue
        );
        let _ = q.request_reset();
        nic.reset_work.schedule();
    }
}

impl DeviceWork for Nic {
    /// Syncs the VF if asked; checks each running queue pair for a lost
    /// interrupt; resets the pairs marked for it (a TX timeout, or
    /// completions out of step with the ring) once their backoff allows:
    /// the card's queue pair is destroyed and created again with fresh
    /// rings. Frames still in the old rings are freed unsent. While the
    /// device is up it runs again after [`HEALTH_CHECK_MS`] (sooner if a
    /// reset waits for its backoff).
    fn run(dev: &NetDev<Self>) {
        let nic = dev.data();
        if nic.bond.take_sync_request() {
            bond::sync(dev);
        }
        if !nic.check_card(dev) {
            return;
        }
        let cfg = nic.config.lock();
        let now = Instant::<Monotonic>::now();
        let mut next_run_ms = HEALTH_CHECK_MS;
        for (q, queue) in (0u16..).zip(nic.queues.iter()) {
            if !cfg.running || q >= cfg.queues {
                let _ = queue.take_reset_request();
                continue;
            }
            queue.check_interrupts();
            if !queue.reset_pending() {
                continue;
            }
            let wait = queue.reset_wait(now);
            if !wait.is_zero() {
                next_run_ms =
                    next_run_ms.min(wait.as_millis().clamp(1, i64::from(u32::MAX)) as u32);
                continue;
            }
            let _ = queue.take_reset_request();
            queue.reset_done(now);
            dev.tx_stop(q);
            nic.destroy_pair(q);
            if !nic.admin.lost_track() {
                queue.stop();
                let restarted = queue
                    .prepare(&nic.dma, nic.geometry(&cfg, dev.mtu()), nic.tx_csum())
                    .and_then(|cmd| nic.admin.run(AdminCmd::CreateQp(cmd)))
                    .and_then(|()| queue.start());
                match restarted {
                    Ok(()) => pr_info!("{}: queue pair {} reset\n", dev.name(), q),
                    Err(_) if nic.admin.lost_track() => {}
                    Err(e) => {
                        queue.stop();
                        pr_err!(
                            "{}: queue pair {} did not come back: {:?}\n",
                            dev.name(),
                            q,
                            e
                        );
                    }
                }
            }
            if nic.admin.lost_track() {
                // The card may still run the pair: reset the function,
                // which stops every pair, and start them all again.
                drop(cfg);
                nic.reset_and_restore(dev);
                return;
            }
            dev.tx_wake(q);
        }
        if cfg.running {
            if let Some(gft) = &nic.gft {
                gft.age();
            }
            nic.reset_work.schedule_after(next_run_ms);
        }
    }
}

impl DeviceWork<GFT_WORK> for Nic {
    /// Exceptions need no RTNL (admin commands and the exception queue
    /// have their own locks), and must not wait behind configuration.
    const RTNL: bool = false;

    /// Decides the queued GFT exceptions and sends each back to the card
    /// through queue pair 0, up to a budget per run.
    fn run(dev: &NetDev<Self>) {
        let nic = dev.data();
        let Some(gft) = &nic.gft else {
            return;
        };
        for _ in 0..GFT_WORK_BUDGET {
            let Some(skb) = gft.next_exception() else {
                return;
            };
            if let Some(skb) = gft.decide(skb) {
                let sent = nic.queues.first().is_some_and(|q| q.reinject(skb));
                gft.reinjected(sent);
            }
        }
        nic.gft_work.schedule();
    }
}

impl Nic {
    /// The health check of the card as a whole. A card that stopped
    /// answering (surprise removal) has the device detached and the
    /// carrier off, so nothing more is sent to it; one that answers again
    /// lost all its state: the function is reset and restored, queues and
    /// all. Returns whether the card answers (the queue checks are then
    /// worth running). RTNL held.
    fn check_card(&self, dev: &NetDev<Self>) -> bool {
        let answering = self.regs.status().is_some();
        let change = self.card_watch.lock().check(answering);
        match change {
            CardChange::Same => {}
            CardChange::Gone => {
                bump(&self.card_lost, 1);
                pr_warn!(
                    "{}: card not answering (surprise removal?); detached\n",
                    dev.name()
                );
                dev.carrier_off();
                dev.detach();
            }
            CardChange::Back => {
                pr_info!(
                    "{}: card answers again; resetting the function\n",
                    dev.name()
                );
                self.reset_and_restore(dev);
            }
        }
        if !answering {
            // Keep watching until it answers (or is removed).
            self.reset_work.schedule_after(HEALTH_CHECK_MS);
        }
        answering
    }

    /// The card's state is unknown (an admin command went unanswered in
    /// the reset work, or the card answers again after being gone): reset
    /// the function, restore it, and bring every queue pair back as
    /// configured; carrier from the card's link again. RTNL held.
    fn reset_and_restore(&self, dev: &NetDev<Self>) {
        self.admin.lose_track();
        self.quiesce_card(dev);
        let mut cfg = self.config.lock();
        let same = *cfg;
        if let Err(e) = self.reconfigure(dev, &mut cfg, same, dev.mtu()) {
            pr_err!(
                "{}: queues did not come back after a function reset: {:?}\n",
                dev.name(),
                e
            );
        }
        if let Some(gft) = &self.gft {
            gft.restore();
        }
        dev.attach();
        self.admin_irq.handler().set_running(cfg.running);
        if cfg.running {
            self.reset_work.schedule_after(HEALTH_CHECK_MS);
        }
    }
}

impl EthtoolOps for Nic {
    fn drvinfo(dev: &NetDev<Self>) -> DrvInfo<'_> {
        let nic = dev.data();
        let len = nic
            .bus_info
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(nic.bus_info.len());
        DrvInfo {
            driver: "rsnic",
            version: crate::VERSION,
            fw_version: nic.fw_version,
            bus_info: &nic.bus_info[..len],
        }
    }

    fn speed_mbps(dev: &NetDev<Self>) -> u32 {
        dev.data().info.speed_mbps
    }

    const SELF_TESTS: &'static [&'static str] = &[
        "registers (offline)",
        "interrupts (offline)",
        "dma (offline)",
        "link (online)",
    ];

    fn self_test(dev: &NetDev<Self>, offline: bool, results: &mut [u64]) {
        let nic = dev.data();
        if let Some(link) = results.get_mut(3) {
            *link = u64::from(!dev.carrier_ok());
        }
        if !offline {
            return;
        }
        let cfg = nic.config.lock();
        if cfg.running {
            dev.detach();
            nic.stop_queues(dev, usize::from(cfg.queues));
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
            if let Err(e) = nic.start_queues(dev, &cfg, dev.mtu(), dev.features()) {
                pr_err!(
                    "{}: queues did not restart after the self-test: {:?}\n",
                    dev.name(),
                    e
                );
            }
            dev.attach();
        }
    }

    fn coalesce(dev: &NetDev<Self>) -> Coalesce {
        dev.data().config.lock().coalesce
    }

    fn set_coalesce(dev: &NetDev<Self>, coalesce: Coalesce) -> Result {
        if coalesce.usecs > hw::MAX_COALESCE_USECS || coalesce.frames > hw::MAX_COALESCE_FRAMES {
            return Err(EINVAL);
        }
        let nic = dev.data();
        let mut cfg = nic.config.lock();
        nic.admin.run(AdminCmd::SetCoalesce {
            usecs: coalesce.usecs,
            frames: coalesce.frames,
        })?;
        cfg.coalesce = coalesce;
        Ok(())
    }

    fn stats(dev: &NetDev<Self>, sink: &mut dyn StatsSink) {
        let nic = dev.data();
        sink.stat(
            format_args!("admin_timeouts"),
            nic.admin.timeouts.load(Relaxed),
        );
        sink.stat(format_args!("admin_errors"), nic.admin.errors.load(Relaxed));
        sink.stat(
            format_args!("device_resets"),
            nic.device_resets.load(Relaxed),
        );
        sink.stat(format_args!("card_lost"), nic.card_lost.load(Relaxed));
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
        if let Some(gft) = &nic.gft {
            let fetch = sink.wants_values();
            gft.for_each_counter(fetch, |name, value| {
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
            sink.stat(format_args!("tx{q}_packets"), s.tx_packets.load(Relaxed));
            sink.stat(format_args!("tx{q}_bytes"), s.tx_bytes.load(Relaxed));
            sink.stat(format_args!("tx{q}_dropped"), s.tx_dropped.load(Relaxed));
            sink.stat(format_args!("tx{q}_busy"), s.tx_busy.load(Relaxed));
            sink.stat(format_args!("tx{q}_tso"), s.tx_tso.load(Relaxed));
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

    fn channels(dev: &NetDev<Self>) -> (u32, u32) {
        let nic = dev.data();
        (nic.queues.len() as u32, u32::from(nic.config.lock().queues))
    }

    fn set_channels(dev: &NetDev<Self>, combined: u32) -> Result {
        let nic = dev.data();
        let queues = u16::try_from(combined)
            .ok()
            .filter(|&q| q >= 1 && usize::from(q) <= nic.queues.len())
            .ok_or(EINVAL)?;
        let mut cfg = nic.config.lock();
        let mut new = Config { queues, ..*cfg };
        if cfg.rss_table_set {
            // A table the user set must not point past the queues in use.
            if cfg.rss_table.iter().any(|&q| u16::from(q) >= queues) {
                return Err(EINVAL);
            }
        } else {
            new.rss_table = Config::default_rss_table(queues);
        }
        nic.reconfigure(dev, &mut cfg, new, dev.mtu())
    }

    fn rss(dev: &NetDev<Self>) -> ([u8; hw::RSS_TABLE_LEN], [u8; hw::RSS_KEY_LEN]) {
        let cfg = dev.data().config.lock();
        (cfg.rss_table, cfg.rss_key)
    }

    fn set_rss(
        dev: &NetDev<Self>,
        table: Option<&[u8; hw::RSS_TABLE_LEN]>,
        key: Option<&[u8; hw::RSS_KEY_LEN]>,
    ) -> Result {
        let nic = dev.data();
        let mut cfg = nic.config.lock();
        let mut new = *cfg;
        if let Some(table) = table {
            if table.iter().any(|&q| u16::from(q) >= cfg.queues) {
                return Err(EINVAL);
            }
            new.rss_table = *table;
            // An all-default table (`ethtool -X default`) follows the queue
            // count again.
            new.rss_table_set = *table != Config::default_rss_table(cfg.queues);
        }
        if let Some(key) = key {
            new.rss_key = *key;
        }
        nic.push_rss(&new)?;
        *cfg = new;
        Ok(())
    }

    fn set_rings(dev: &NetDev<Self>, rx: u32, tx: u32) -> Result {
        let nic = dev.data();
        let size = |n| RingSize::new(n, hw::MIN_RING_ENTRIES, hw::MAX_RING_ENTRIES).ok_or(EINVAL);
        let (rx_ring, tx_ring) = (size(rx)?, size(tx)?);
        let mut cfg = nic.config.lock();
        let new = Config {
            rx_ring,
            tx_ring,
            ..*cfg
        };
        nic.reconfigure(dev, &mut cfg, new, dev.mtu())
    }

    fn rings(dev: &NetDev<Self>) -> (u32, u32, u32) {
        let cfg = dev.data().config.lock();
        (
            u32::from(hw::MAX_RING_ENTRIES),
            u32::from(cfg.rx_ring.get()),
            u32::from(cfg.tx_ring.get()),
        )
    }
}
