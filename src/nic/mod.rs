// SPDX-License-Identifier: GPL-2.0

//! The synthetic NIC: the network device the host stack binds to (NetVSC's
//! role). It runs through the card's queue pairs and is configured through
//! the admin queue. A VF's NIC is the same code.
//!
//! One file per surface, as fbnic and mana do it: registration and the
//! card-facing configuration here, the net device operations in
//! `netdev.rs`, ethtool in `ethtool.rs`, queue health checks and resets
//! in `recovery.rs`, the `tx` and `completion` health reporters in
//! `health.rs`, the admin vector and link state in `link.rs`, native XDP
//! in `xdp.rs`, `ethtool -N` steering in `steering.rs`, the queue pairs in
//! `queue/` (with `tx.rs`, `rx.rs`, `stream.rs`), the VF bond in
//! `bond.rs`.
//!
//! The NIC is a client of its function (`crate::function`), which owns
//! the admin queue, the GFT, the RDMA half, the card watch and the
//! function reset: what the NIC needs of them it asks through the traits
//! of `events.rs`, which the function implements; the function tells the
//! NIC of a card gone ([`Nic::card_gone`]) or back
//! ([`Nic::reset_and_restore`]).

pub(crate) mod bond;
mod ethtool;
mod events;
mod health;
mod link;
mod netdev;
pub(crate) mod queue;
mod recovery;
pub(crate) mod rep;
mod restart;
mod ring;
mod shaper;
mod steering;
mod switchdev;
mod tstamp;
mod xdp;
mod xdp_offload;

use kernel::{
    device::{Bound, Device},
    new_mutex, new_spinlock,
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc, Mutex, SpinLock,
    },
};

use crate::admin::{AdminError, AdminQueue};
use crate::hw::{
    self, offload, regs, rx_mode, AdminCmd, AdminStatus, DeviceInfo, FuncKind, FwVersion,
};
use crate::linux::{
    devlink::Port,
    dma::{DmaBuffer, DmaDevice},
    irq::{IrqHandlerRegistration, MsixVectors},
    net::{
        bpf_offload::BpfOffloadDev,
        ethtool::{Coalesce, TcpDataSplit},
        instance_lock::RtnlLocked,
        netdev::{
            is_valid_ether_addr, random_ether_addr, rss_key_fill, Feature, Features, LinkStats,
            NetDev, NetDevRef, NetDevVTable, Registration, Setup,
        },
        rtnl,
        skbuff::SkBuff,
        work::NetDevWork,
        xdp::{XdpFeatures, XdpProgSlot},
        xsk::XskSlots,
    },
};
use crate::regs::Registers;
use bond::Bond;
pub(crate) use events::{CardCounters, FlowOffload, FlowerPorts, NicEvents};
use health::HEALTH_WORK;
pub(crate) use health::{CurrentNic, NicReporters, QueueFault};
use link::AdminIrq;
use queue::{bump, QueueGeometry, QueueIrq, QueueVector};
use recovery::GFT_WORK;
pub(crate) use restart::restart_rx_queue;
use ring::RingSize;
use steering::Steering;

/// The operations of every rsnic net device; a net device with them is a
/// `NetDev<Nic>`.
pub(crate) static NIC_VTABLE: NetDevVTable<Nic> = NetDevVTable::new();

/// Queue pairs used when the card has enough.
const DEFAULT_QUEUES: u16 = 4;
/// Default TX ring entries.
const DEFAULT_TX_RING: u32 = 256;
/// Default RX ring entries: as mlx5 and fbnic, 1024. With 256, one TCP
/// stream overran the ring while the receiving vCPU was busy (the card
/// counted rx_no_buffer drops, TCP retransmitted them).
const DEFAULT_RX_RING: u32 = 1024;
/// Multicast addresses the driver filters exactly-ish (64-bit hash); more
/// than this and it accepts all multicast.
const MAX_MC_FILTER: usize = 32;
/// How long a TX queue may make no progress before it is reset.
const TX_WATCHDOG_MS: u32 = 5000;

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
    /// Hashed fields per [`hw::RssFlow`] ([`hw::rss_fields`] masks).
    rss_fields: [u8; hw::RssFlow::ALL.len()],
    /// The default context's input transform ([`hw::rss_xfrm`] bits;
    /// the other contexts keep theirs in [`steering`]).
    rss_xfrm: u8,
    /// Interrupt moderation (`ethtool -C`).
    coalesce: Coalesce,
    /// Receive into streams instead of RX rings (private flag
    /// `rx-stream`).
    rx_stream: bool,
    /// An XDP program is attached (stream records then leave it room).
    xdp: bool,
    /// Header/data split as the user set it (`ethtool -G tcp-data-split`;
    /// `Unknown`, the default, does not split), and its threshold.
    tcp_data_split: TcpDataSplit,
    hds_thresh: u32,
}

impl Config {
    /// The default table: entries round-robin over the queues in use, in
    /// a table of [`rss_table_len`] entries, repeated over the card's.
    fn default_rss_table(queues: u16) -> [u8; hw::RSS_TABLE_LEN] {
        let len = rss_table_len(queues);
        // CAST: below the queue count, a u16 that the card's table (u8
        // entries, below MAX_QUEUE_PAIRS) holds.
        core::array::from_fn(|i| (i % len % usize::from(queues.max(1))) as u8)
    }
}

/// Entries of the RSS indirection table the user sees with `queues`
/// queues in use: 16 per queue, rounded up to a power of two, at most the
/// card's [`hw::RSS_TABLE_LEN`] (as bnxt and mlx5 size theirs by their
/// rings). A power of two divides the card's table, which holds the
/// user's table repeated: the card indexes it by the hash's low bits, so
/// both send a hash to the same queue, and the core can fold a periodic
/// table into a smaller one when the queue count drops.
pub(super) fn rss_table_len(queues: u16) -> usize {
    (16 * usize::from(queues.max(1)).next_power_of_two()).min(hw::RSS_TABLE_LEN)
}

/// The synthetic NIC's driver state, in its net device's private area.
///
/// Field order is drop order: work items first, interrupt handlers
/// before the queues they schedule.
#[pin_data]
pub(crate) struct Nic {
    /// The device's work: the periodic health check, VF sync. The work
    /// items come first: each is disabled (waited for, never run again)
    /// before anything it uses goes away.
    #[pin]
    reset_work: NetDevWork<Nic>,
    /// The device, for what reaches it from outside its callbacks
    /// (debugfs).
    handle: NetDevRef<Nic>,
    /// Hands queue pair faults to the function, which reports them.
    #[pin]
    health_work: NetDevWork<Nic, HEALTH_WORK>,
    /// PF: decides the GFT exceptions NAPI queued.
    #[pin]
    gft_work: NetDevWork<Nic, GFT_WORK>,
    /// Tells this NIC's faults from those of the NIC a reload replaced.
    id: u64,
    /// The function this NIC belongs to: it resets the card.
    events: Arc<dyn NicEvents>,
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
    /// PF: the GFT's exception path, aging and counters.
    flow: Option<Arc<dyn FlowOffload>>,
    /// The native XDP program every RX queue runs (`xdp.rs`).
    xdp: XdpProgSlot,
    /// The RX filter the device's own address lists and flags ask for
    /// (`rx_mode` bits and multicast hash); see `apply_rx_filter`.
    rx_filter_flags: Atomic<u32>,
    rx_filter_mc: Atomic<u64>,
    /// RX frames of at most this many bytes are copied out of their page
    /// (`ethtool --set-tunable rx-copybreak`; read at each NAPI poll).
    rx_copybreak: Atomic<u32>,
    fw_version: [u8; 3],
    bus_info: [u8; 16],
    /// Command blocks the card reads or writes (an RSS configuration, the
    /// MAC counters); used under the configuration lock.
    block_mem: DmaBuffer,
    /// The doorbell page the queue pairs keep their TX tails in, if the
    /// card takes one; the card is told where it is at each start.
    db_page: Option<Arc<DmaBuffer>>,
    /// The card follows the admin tail in that page too.
    admin_tail_in_page: bool,
    #[pin]
    config: Mutex<Config>,
    /// Additional RSS contexts and steering rules. Taken after `config`.
    #[pin]
    steering: Mutex<KBox<Steering>>,
    /// The TX shapers the driver gave the card (`shaper.rs`). Taken
    /// after `config`.
    #[pin]
    shapers: Mutex<shaper::Shapers>,
    /// PF: the offloaded XDP program and maps (`xdp_offload.rs`).
    #[pin]
    xdp_hw: Mutex<xdp_offload::XdpHw>,
    /// Hardware time stamping (`tstamp.rs`).
    tstamp: tstamp::Tstamp,
    /// The AF_XDP pool bound to each queue in zero-copy mode (`xdp.rs`),
    /// filled and emptied by the layer around `install_xsk`.
    #[pin]
    xsk: XskSlots,
    /// PF in switchdev mode: the VF port's representor (`switchdev.rs`).
    #[pin]
    rep: SpinLock<Option<NetDevRef<rep::Rep>>>,
}

/// The registered network device of a function: a PF's synthetic NIC or
/// a VF's NIC.
pub(crate) type NicRegistration = Registration<Nic>;

/// What a function gives its network device.
pub(crate) struct FunctionParts<'a, 'v> {
    /// The function's registers.
    pub(crate) regs: &'a Arc<Registers>,
    /// The function's admin queue.
    pub(crate) admin: &'a Arc<AdminQueue>,
    /// The function's MSI-X vectors: the admin vector and one per queue
    /// pair.
    pub(crate) vectors: &'a MsixVectors<'v>,
    /// PF or VF.
    pub(crate) kind: FuncKind,
    /// The function's devlink port, which the device belongs to.
    pub(crate) port: Arc<Port>,
    /// PF: the GFT.
    pub(crate) flow: Option<Arc<dyn FlowOffload>>,
    /// The function, told of function resets.
    pub(crate) events: Arc<dyn NicEvents>,
    /// The function's PTP hardware clock, which the card stamps frames
    /// with, if it has one.
    pub(crate) phc_index: Option<i32>,
}

/// The tunnels the card segments TCP inside (`tx-udp_tnl-segmentation`,
/// `tx-udp_tnl-csum-segmentation`, `tx-gre-segmentation`,
/// `tx-gre-csum-segmentation`, `tx-ipxip4-segmentation`,
/// `tx-ipxip6-segmentation`) when it offers [`offload::TUNNEL_TSO`].
pub(crate) fn tunnel_gso_features() -> Features {
    Feature::GsoUdpTunnel
        | Feature::GsoUdpTunnelCsum
        | Feature::GsoGre
        | Feature::GsoGreCsum
        | Feature::GsoIpxip4
        | Feature::GsoIpxip6
}

/// Creates and registers the network device of a function whose self-test
/// passed: the synthetic NIC for a PF, a plain NIC with the same MAC for a
/// VF.
pub(crate) fn register(
    pdev: &Device<Bound>,
    parts: FunctionParts<'_, '_>,
    kept: Option<&KeptConfig>,
) -> Result<NicRegistration> {
    let FunctionParts {
        regs,
        admin,
        vectors,
        kind,
        port,
        flow,
        events,
        phc_index,
    } = parts;
    let dma = DmaDevice::new(pdev);
    let admin = admin.clone();
    let entry = admin.exec(AdminCmd::QueryDevice)?;
    let info = DeviceInfo::read_result(&entry);
    // Everything the card claims is bounded by what the driver can use:
    // a vector per queue pair besides the admin vector and, on a PF, the
    // RDMA engine's last one.
    let other_vectors = match kind {
        FuncKind::Pf => 2,
        FuncKind::Vf => 1,
    };
    // CAST: both below `MAX_QUEUE_PAIRS`, a u16, after the `min`s.
    let max_queues = (info.max_qps.min(u32::from(hw::MAX_QUEUE_PAIRS)) as u16)
        .min(vectors.count().saturating_sub(other_vectors) as u16);
    if max_queues == 0 {
        dev_err!(pdev, "card offers no usable queue pair\n");
        return Err(EIO);
    }
    // TX tails in a doorbell page, if the card takes one (the trapped
    // doorbell then only wakes it).
    let db_page = if info.features & hw::feature::DOORBELL_PAGE != 0 {
        Some(Arc::new(dma.alloc(hw::db_page::SIZE)?, GFP_KERNEL)?)
    } else {
        None
    };
    // And RX tails and CQ heads there too, if it reads them there.
    let rx_cq_in_page = info.features & hw::feature::RX_CQ_IN_PAGE != 0;
    let (tx_ring, rx_ring) = (
        RingSize::new(DEFAULT_TX_RING)?,
        RingSize::new(DEFAULT_RX_RING)?,
    );
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
    let mut features = Features::from(Feature::Sg);
    if info.offloads & offload::TX_CSUM != 0 {
        features |= Feature::HwCsum;
    }
    if info.offloads & offload::RX_CSUM != 0 {
        features |= Feature::RxCsum;
    }
    if info.offloads & offload::TSO != 0 {
        features |= Feature::Tso | Feature::Tso6;
    }
    if info.offloads & offload::USO != 0 {
        // The card cuts a UDP GSO datagram into its segments
        // (`ethtool -K tx-udp-segmentation`), as many as TSO's limit.
        features |= Feature::GsoUdpL4;
    }
    // What the card does for a frame inside a tunnel: the inner checksum
    // (anywhere, as outside) and, if it offers it, TCP segmentation with
    // the outer headers fixed per segment.
    let mut enc_features = features & (Feature::Sg | Feature::HwCsum);
    if info.offloads & offload::TSO != 0 && info.offloads & offload::TUNNEL_TSO != 0 {
        let tunnels = tunnel_gso_features();
        features |= tunnels;
        enc_features |= tunnels | Feature::Tso | Feature::Tso6;
    }
    if info.offloads & offload::GRO_HW != 0 && info.offloads & offload::RX_CSUM != 0 {
        // On by default, as bnxt's: the stack sees the segments a TSO
        // sender cut as one frame again (`ethtool -K rx-gro-hw`).
        features |= Feature::GroHw;
    }
    if info.offloads & offload::RSS != 0 {
        // The card's flow hash goes into each skb (`ethtool -K rxhash`);
        // its steering rules (`ethtool -N`) come before RSS.
        features |= Feature::RxHash | Feature::Ntuple;
    }
    if kind == FuncKind::Pf {
        features |= Feature::HwTc;
    }
    // A reload's device starts with the old one's channels, which the
    // stack's queue counts must match.
    let config = match kept {
        Some(k) => k.config(max_queues),
        None => {
            let mut rss_key = [0u8; hw::RSS_KEY_LEN];
            rss_key_fill(&mut rss_key);
            Config::initial(max_queues.min(DEFAULT_QUEUES), tx_ring, rx_ring, rss_key)
        }
    };
    // PF: programs and maps offloaded to the card, through a BPF offload
    // device of the card's own.
    let bpf_offload = if kind == FuncKind::Pf && info.features & hw::feature::XDP_OFFLOAD != 0 {
        Some(Arc::new(BpfOffloadDev::new(&NIC_VTABLE)?, GFP_KERNEL)?)
    } else {
        None
    };
    let setup = Setup {
        mac,
        min_mtu: hw::MIN_MTU,
        max_mtu: info.max_mtu.clamp(hw::MIN_MTU, hw::MAX_MTU),
        queues: u32::from(config.queues),
        hw_features: features,
        features,
        enc_features,
        tso_max_segs: hw::TSO_MAX_SEGS,
        watchdog_jiffies: kernel::time::msecs_to_jiffies(TX_WATCHDOG_MS) as u32,
        // A PF's synthetic NIC transmits through its VF's NIC.
        stacked: kind == FuncKind::Pf,
        irq_affinity_auto: true,
        // The card gathers any bus address; the TX path never reads frags.
        netmem_tx: true,
        // A PF's NIC is the card's port to the outside; a VF's is a
        // virtual one.
        xdp_features: XdpFeatures::BASIC
            .with(XdpFeatures::REDIRECT)
            .with(XdpFeatures::NDO_XMIT)
            .with(XdpFeatures::XSK_ZEROCOPY)
            .with(if bpf_offload.is_some() {
                XdpFeatures::HW_OFFLOAD
            } else {
                XdpFeatures::default()
            }),
        xdp_rx_hash: info.offloads & offload::RSS != 0,
        bpf_offload,
        devlink_port: Some(port),
    };
    let fw: FwVersion = regs.get()?;
    let mut bus_info = [0u8; 16];
    let name = pdev.name().to_bytes();
    let n = name.len().min(bus_info.len() - 1);
    bus_info[..n].copy_from_slice(&name[..n]);
    let block_mem = dma.alloc(hw::RSS_CONFIG_LEN.max(hw::MacStats::SIZE))?;
    let regs = regs.clone();
    let registration = Registration::new(
        pdev,
        &NIC_VTABLE,
        u32::from(max_queues),
        setup,
        move |dev: NetDevRef<Nic>| {
            let mut queues = KVec::with_capacity(usize::from(max_queues), GFP_KERNEL)?;
            let mut queue_irqs = KVec::with_capacity(usize::from(max_queues), GFP_KERNEL)?;
            for q in 0..max_queues {
                let queue = QueueVector::new_queue(
                    q,
                    regs.clone(),
                    dev.clone(),
                    db_page.clone(),
                    rx_cq_in_page,
                )?;
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
            let steering = KBox::new(Steering::new(), GFP_KERNEL)?;
            let xsk = XskSlots::new(usize::from(max_queues))?;
            Ok(try_pin_init!(Nic {
            handle: dev.clone(),
            health_work <- NetDevWork::new(dev.clone()),
            id: health::next_nic_id(),
            reset_work <- NetDevWork::new(dev.clone()),
            gft_work <- NetDevWork::new(dev.clone()),
            events,
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
            flow,
            xdp: XdpProgSlot::new(),
            rx_filter_flags: Atomic::new(rx_mode::BROADCAST),
            rx_filter_mc: Atomic::new(0),
            rx_copybreak: Atomic::new(queue::RX_COPYBREAK),
            fw_version: [fw.major(), fw.minor(), fw.patch()],
            bus_info,
            block_mem,
            db_page,
            admin_tail_in_page: info.features & hw::feature::ADMIN_TAIL_IN_PAGE != 0,
            config <- new_mutex!(config),
            steering <- new_mutex!(steering),
            shapers <- new_mutex!(shaper::Shapers::new()),
            xdp_hw <- new_mutex!(xdp_offload::XdpHw::new()),
            tstamp: tstamp::Tstamp::new(phc_index),
            xsk <- xsk,
            rep <- new_spinlock!(None),
        }? Error))
        },
    )?;
    if let Some(k) = kept {
        k.apply(registration.dev());
    }
    Ok(registration)
}

/// The settings a `devlink dev reload` carries over from a function's old
/// network device to its new one: MTU, up or down, channels, ring sizes,
/// interrupt moderation and RSS. What the stack holds (addresses, routes)
/// goes with the old device, and the card's own state (GFT rules and
/// flows, steering rules) with the function reset.
#[derive(Clone)]
pub(crate) struct KeptConfig {
    mtu: u32,
    up: bool,
    config: Config,
}

impl KeptConfig {
    /// The NIC's configuration, for a card offering `max_queues` pairs.
    fn config(&self, max_queues: u16) -> Config {
        // The new device starts without the old one's XDP program.
        // Nor its split settings: the core's copy of them (which `ethtool
        // -G` starts from) is the new device's, at its defaults.
        let mut config = Config {
            running: false,
            xdp: false,
            tcp_data_split: TcpDataSplit::Unknown,
            hds_thresh: 0,
            ..self.config
        };
        let queues = config.queues.clamp(1, max_queues);
        // A table naming queues the card no longer offers is not kept.
        if queues != config.queues {
            config.queues = queues;
            config.rss_table = Config::default_rss_table(queues);
            config.rss_table_set = false;
        }
        config
    }

    /// Sets the new device's MTU and opens it if the old one was up.
    fn apply(&self, dev: &NetDev<Nic>) {
        let rtnl = rtnl::lock();
        if dev.mtu() != self.mtu {
            if let Err(e) = dev.change_mtu_to(&rtnl, self.mtu) {
                pr_warn!("{}: MTU {} not kept: {:?}\n", dev.name(), self.mtu, e);
            }
        }
        if self.up {
            if let Err(e) = dev.open(&rtnl) {
                pr_warn!("{}: not up again: {:?}\n", dev.name(), e);
            }
        }
    }
}

impl Config {
    /// A new function's configuration: `queues` pairs, rings of
    /// `tx_ring` and `rx_ring` entries, hashing every field with `rss_key`.
    fn initial(
        queues: u16,
        tx_ring: RingSize,
        rx_ring: RingSize,
        rss_key: [u8; hw::RSS_KEY_LEN],
    ) -> Self {
        Config {
            queues,
            tx_ring,
            rx_ring,
            running: false,
            rss_key,
            rss_table: Config::default_rss_table(queues),
            rss_table_set: false,
            rss_fields: [hw::rss_fields::ALL; hw::RssFlow::ALL.len()],
            rss_xfrm: 0,
            coalesce: Coalesce::default(),
            rx_stream: false,
            xdp: false,
            tcp_data_split: TcpDataSplit::Unknown,
            hds_thresh: 0,
        }
    }
}

impl Nic {
    /// What a reload keeps of this device's settings.
    pub(crate) fn kept_config(&self, dev: &NetDev<Nic>) -> KeptConfig {
        KeptConfig {
            mtu: dev.mtu(),
            up: dev.is_running(),
            config: *self.config.lock(),
        }
    }
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

    /// A handle on the device, for what reaches it from outside.
    pub(crate) fn handle(&self) -> NetDevRef<Nic> {
        self.handle.clone()
    }

    /// Queues the device's work item (TX queue resets, VF sync).
    pub(crate) fn schedule_work(&self) {
        self.reset_work.schedule();
    }

    /// The largest frame at `mtu`: Ethernet header and one VLAN tag.
    fn max_frame(mtu: u32) -> u32 {
        mtu + 14 + 4
    }

    /// The least frame an RX page holds, whatever the MTU: enough that
    /// [`hw::GRO_MAX_BUFFERS`] buffers hold the longest coalesced frame,
    /// so that a 64 KiB TSO send arrives as one frame (in 4 KiB pages it
    /// took two, and the stack did its per-packet work twice).
    // CAST: u16 to u32 widens (`u32::from` is not const).
    const GRO_PAGE_FRAME: u32 = hw::GRO_MAX_FRAME.div_ceil(hw::GRO_MAX_BUFFERS as u32);

    /// Ring and buffer sizes of every queue pair for `cfg` and `mtu`. A
    /// PF's buffers also fit a GFT exception: its header, and a tunnelled
    /// frame's outer headers.
    fn geometry(&self, cfg: &Config, mtu: u32) -> QueueGeometry {
        let gft_room = match self.kind {
            FuncKind::Pf => hw::gft::META_LEN as u32 + hw::gft::MAX_ENCAP_LEN,
            FuncKind::Vf => 0,
        };
        let rx_frame = Self::max_frame(mtu) + gft_room;
        QueueGeometry {
            tx: cfg.tx_ring,
            rx: cfg.rx_ring,
            rx_frame,
            rx_page_frame: rx_frame.max(Self::GRO_PAGE_FRAME),
            rx_stream: cfg.rx_stream,
            xdp: cfg.xdp,
            hds_thresh: self.splits(cfg).then_some(cfg.hds_thresh),
        }
    }

    /// Whether the queue pairs split headers from data with `cfg`: the
    /// user turned it on and the card can (a stream or an XDP program,
    /// which the settings refuse beside it, would not split either).
    fn splits(&self, cfg: &Config) -> bool {
        cfg.tcp_data_split == TcpDataSplit::Enabled
            && self.info.features & hw::feature::HDS != 0
            && !cfg.rx_stream
            && !cfg.xdp
    }

    /// Has the card create a prepared queue pair: how it receives, then
    /// the pair.
    fn create_pair(&self, cmds: queue::PairCommands) -> Result {
        self.admin.run(cmds.rx_mode)?;
        self.admin.run(AdminCmd::CreateQp(cmds.create))
    }

    /// Whether the queue pairs receive into streams (`rx-stream`).
    /// Whether the card may coalesce received frames: not while an XDP
    /// program runs on them (it sees one frame per buffer) nor into RX
    /// streams (their records hold one wire frame each).
    fn gro_hw_possible(&self, rtnl: &RtnlLocked<'_>) -> bool {
        !self.xdp.is_set(rtnl) && !self.rx_streaming()
    }

    pub(crate) fn rx_streaming(&self) -> bool {
        self.config.lock().rx_stream
    }

    /// NAPI of queue pair `queue` received a GFT exception: queued for the
    /// GFT work. Only the PF's queue pair 0 is the exception queue; one
    /// anywhere else is the card's mistake and is dropped.
    pub(crate) fn gft_exception(&self, queue: u16, skb: SkBuff) {
        if queue == 0 && Self::is_port_miss(&skb) {
            if self.port_miss(skb).is_err() {
                if let Some(q) = self.queues.first() {
                    bump(&q.stats.rx_dropped, 1);
                }
            }
            return;
        }
        match &self.flow {
            Some(flow) if queue == 0 => {
                if flow.queue_exception(skb) {
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
        rtnl: &RtnlLocked<'_>,
        cfg: &Config,
        mtu: u32,
        features: Features,
    ) -> Result {
        self.admin.run(AdminCmd::SetMtu { mtu })?;
        if let Some(page) = &self.db_page {
            // Every start: a function reset makes the card forget it.
            self.admin.run(AdminCmd::SetDoorbellPage {
                addr: page.dma_addr(0)?,
            })?;
            if self.admin_tail_in_page {
                self.admin.use_doorbell_page(page.clone())?;
            }
        }
        self.set_card_offloads(features)?;
        self.admin.run(AdminCmd::SetCoalesce {
            usecs: cfg.coalesce.rx_usecs,
            frames: cfg.coalesce.rx_max_frames,
        })?;
        let geo = self.geometry(cfg, mtu);
        self.push_rss(cfg)?;
        self.push_steering()?;
        self.push_shapers()?;
        self.push_timestamps()?;
        // As after mlx5's and ice's channel set-up; a user's own map (sysfs
        // `xps_cpus`) lasts until the queues restart.
        dev.set_default_xps(rtnl, cfg.queues)?;
        for (n, queue) in self.queues.iter().take(usize::from(cfg.queues)).enumerate() {
            let started = queue
                .prepare(rtnl.dev(), &self.dma, geo, self.tx_csum(), self.xsk_pool(n))
                .and_then(|cmds| self.create_pair(cmds))
                .and_then(|()| queue.start(rtnl.dev()));
            if let Err(e) = started {
                // A create that timed out may yet run on the card.
                self.quiesce_card(dev, rtnl);
                queue.stop(rtnl.dev());
                self.stop_queues(dev, rtnl, n);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Tells the card which offloads to perform. TX checksumming, TSO and
    /// USO stay on whenever the card has them: the stack only asks for them
    /// per packet while the feature is on, and packets already queued when
    /// the user turns it off still need them.
    fn set_card_offloads(&self, features: Features) -> Result {
        let mut flags = self.info.offloads
            & (offload::TX_CSUM | offload::TSO | offload::USO | offload::TUNNEL_TSO);
        if features.contains(Feature::RxCsum) {
            flags |= self.info.offloads & offload::RX_CSUM;
            // The core keeps GRO_HW off without RXCSUM.
            if features.contains(Feature::GroHw) {
                flags |= self.info.offloads & offload::GRO_HW;
            }
        }
        self.admin.run(AdminCmd::SetOffloads { flags })
    }

    /// Sets the stack's queue counts to `queues`. The core drops the
    /// shapers of TX queues from `queues` on (they are gone); so does the
    /// driver, and the next start tells the card.
    fn set_queue_count(&self, dev: &NetDev<Self>, rtnl: &RtnlLocked<'_>, queues: u16) -> Result {
        dev.set_real_num_queues(rtnl, u32::from(queues))?;
        self.forget_queue_shapers(queues);
        Ok(())
    }

    /// Applies `new` settings (queue count, ring sizes) and `mtu`: if the
    /// interface is up, its queues restart with them. On failure the old
    /// settings are restored and the error returned.
    fn reconfigure(
        &self,
        dev: &NetDev<Self>,
        rtnl: &RtnlLocked<'_>,
        cfg: &mut Config,
        new: Config,
        mtu: u32,
    ) -> Result {
        let old = *cfg;
        if !old.running {
            self.set_queue_count(dev, rtnl, new.queues)?;
            *cfg = new;
            return Ok(());
        }
        dev.detach(rtnl);
        self.stop_queues(dev, rtnl, usize::from(old.queues));
        let result = self
            .set_queue_count(dev, rtnl, new.queues)
            .and_then(|()| self.start_queues(dev, rtnl, &new, mtu, dev.features()));
        if result.is_ok() {
            *cfg = new;
        } else {
            // Come back up as before rather than stay down; if even that
            // fails (memory is short), the health check keeps trying.
            let back = self
                .set_queue_count(dev, rtnl, old.queues)
                .and_then(|()| self.start_queues(dev, rtnl, &old, dev.mtu(), dev.features()));
            if let Err(e) = back {
                pr_err!(
                    "{}: queues did not come back as before: {:?}; retrying\n",
                    dev.name(),
                    e
                );
                for queue in self.queues.iter().take(usize::from(old.queues)) {
                    queue.request_reset(queue::ResetCause::RESTART);
                }
                self.schedule_work();
            }
        }
        dev.attach(rtnl);
        result
    }

    /// Destroys the first `count` queue pairs on the card and frees them.
    fn stop_queues(&self, dev: &NetDev<Self>, rtnl: &RtnlLocked<'_>, count: usize) {
        for q in 0..count {
            self.destroy_pair(q as u16);
        }
        // A destroy the card did not answer or failed may leave a pair
        // running: stop the card before its rings are freed.
        self.quiesce_card(dev, rtnl);
        for queue in self.queues.iter().take(count) {
            queue.stop(rtnl.dev());
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
    fn quiesce_card(&self, dev: &NetDev<Self>, rtnl: &RtnlLocked<'_>) {
        self.quiesce_card_for(dev, rtnl, true);
    }

    /// [`Self::quiesce_card`]; `fault`: the reset is for a command the card
    /// lost (the function counts it and reports it to the `card` health
    /// reporter), not one the driver asked for (the card came back without
    /// its state).
    pub(super) fn quiesce_card_for(&self, dev: &NetDev<Self>, rtnl: &RtnlLocked<'_>, fault: bool) {
        if !self.admin.lost_track() {
            return;
        }
        if fault {
            pr_warn!(
                "{}: card lost track of an admin command, resetting the function\n",
                dev.name()
            );
        }
        if let Err(e) = self.reset_function(dev, rtnl, fault) {
            pr_err!("{}: function reset failed: {:?}\n", dev.name(), e);
        }
    }

    /// Has the function reset the card, then gives back what the card
    /// held for the NIC: its MAC, RX filter, (PF) the VF data path, the
    /// GFT's configuration and rules and the offloaded XDP program.
    fn reset_function(&self, dev: &NetDev<Self>, rtnl: &RtnlLocked<'_>, fault: bool) -> Result {
        self.events.reset_function(fault)?;
        self.admin.run(AdminCmd::SetMac {
            mac: dev.addr(rtnl),
        })?;
        self.apply_rx_filter(bond::rx_filter_master(dev, rtnl).map(|pf| pf.data()))?;
        if self.kind == FuncKind::Pf {
            bond::card_reset(dev);
        }
        self.restore_switch_mode()?;
        // The GFT's configuration and tc's rules: whichever path reset
        // the function (a queue restart's, the health work's), the card
        // forgot them.
        if let Some(flow) = &self.flow {
            flow.restore();
        }
        self.restore_xdp_offload(dev);
        Ok(())
    }
}
