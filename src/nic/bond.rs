// SPDX-License-Identifier: GPL-2.0

//! Transparent VF bonding, as hv_netvsc does it: the PF's synthetic NIC is
//! the device the stack uses; when the card's VF appears, its NIC becomes
//! the synthetic NIC's slave, and while it is up with carrier the card
//! delivers to it and the synthetic NIC transmits through it. When the VF
//! goes down or away, the data path is switched back first, then the VF
//! is released, so no connection on the synthetic NIC notices.
//!
//! States of a PF's bond: no VF; VF enslaved, data path synthetic; VF
//! enslaved, data path VF. Every transition runs under RTNL (netdevice
//! events, the PF's work item, `ndo_*` calls).
//!
//! Both functions' devices are ops-locked. What changes the VF's device
//! (its features, its XDP program) runs under the VF's instance lock:
//! the core's, in the VF's own `Register` event, or taken here, nested
//! in the PF's (the PF's work and ndos) or alone (unregistration). The
//! order is always PF, then VF, under RTNL; nothing here takes the PF's
//! lock from a VF's event. What the core does under the VF's lock
//! itself (`dev_open`, `dev_set_mtu`, a namespace move) runs without it
//! held, and a VF that registers in another namespace is moved by the
//! PF's work, not from inside its own `Register` event.

use kernel::{
    new_spinlock,
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc, SpinLock,
    },
};

use super::{Nic, NIC_VTABLE};
use crate::hw::{AdminCmd, FuncKind};
use crate::linux::net::{
    any_netdev::AnyNetDevHold,
    instance_lock::RtnlLocked,
    netdev::{AnyNetDev, Feature, Features, LinkStats, NetDev, RxQueueStats, TxQueueStats},
    rtnl::Rtnl,
    upper::{find_any, NetDevHold, NetdevEvent, TxLower, WatchNetdevs},
};

/// The enslaved VF: the card's own, or another make's that the card
/// offered (netvsc's VF of any driver).
enum Slave {
    Own(NetDevHold<Nic>),
    Foreign(AnyNetDevHold),
}

/// The VF's share of the synthetic NIC's counters.
struct VfCounters {
    /// What VFs that left had counted when they left.
    base: LinkStats,
    /// The enslaved VF, whose live counters are added to `base`.
    vf: Option<Slave>,
}

impl VfCounters {
    fn total(&self) -> LinkStats {
        let mut total = self.base;
        match &self.vf {
            Some(Slave::Own(vf)) => total += &vf.get().data().own_link_stats(),
            Some(Slave::Foreign(vf)) => total += &vf.get().link_stats(),
            None => {}
        }
        total
    }

    /// Whether the enslaved VF is the foreign device `dev`.
    fn is_foreign(&self, dev: &AnyNetDev) -> bool {
        matches!(&self.vf, Some(Slave::Foreign(vf)) if vf.is(dev))
    }
}

/// The offloads a VF follows its synthetic NIC in: the data path's, not
/// `hw-tc-offload`, which is the synthetic NIC's own (the GFT).
fn followed_features() -> Features {
    Feature::Sg
        | Feature::HwCsum
        | Feature::RxCsum
        | Feature::Tso
        | Feature::Tso6
        | Feature::GsoUdpL4
        | super::tunnel_gso_features()
}

/// A PF's view of its VF.
#[pin_data]
pub(crate) struct Bond {
    /// What the VF counted while enslaved; the synthetic NIC reports it
    /// as its own, so its counters cover both paths and never go back.
    #[pin]
    counters: SpinLock<VfCounters>,
    /// The VF to transmit through while the data path is VF.
    pub(crate) tx: TxLower,
    /// What debugfs shows, shared with the function's debugfs file.
    state: Arc<BondState>,
    /// The PF's work item should bring the VF in line (open, MTU).
    sync_requested: Atomic<u32>,
}

/// The bond's state as debugfs shows it (`rsnic/<bdf>/bond`).
pub(crate) struct BondState {
    /// A VF is enslaved.
    vf_present: Atomic<u32>,
    /// The enslaved VF is another make's.
    foreign: Atomic<u32>,
    /// The card delivers to the VF (the last switch it acknowledged).
    datapath_vf: Atomic<u32>,
    /// Data-path switches the card acknowledged.
    switches: Atomic<u64>,
    /// The foreign VF the card offers: its serial plus one (0: none).
    offered: Atomic<u64>,
}

impl BondState {
    /// (VF present, data path is VF, switches so far).
    pub(crate) fn get(&self) -> (bool, bool, u64) {
        (
            self.vf_present.load(Relaxed) != 0,
            self.datapath_vf.load(Relaxed) != 0,
            self.switches.load(Relaxed),
        )
    }

    /// The serial of the foreign VF the card offers, if any.
    pub(crate) fn offered(&self) -> Option<u32> {
        // CAST: stored as serial + 1 by `vf_offered`.
        self.offered.load(Relaxed).checked_sub(1).map(|s| s as u32)
    }

    /// The enslaved VF is another make's.
    pub(crate) fn is_foreign(&self) -> bool {
        self.foreign.load(Relaxed) != 0
    }
}

impl Bond {
    /// No VF.
    pub(crate) fn new() -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            counters <- new_spinlock!(VfCounters {
                base: LinkStats::default(),
                vf: None,
            }),
            tx: TxLower::new(),
            state: Arc::new(
                BondState {
                    vf_present: Atomic::new(0),
                    foreign: Atomic::new(0),
                    datapath_vf: Atomic::new(0),
                    switches: Atomic::new(0),
                    offered: Atomic::new(0),
                },
                GFP_KERNEL,
            )?,
            sync_requested: Atomic::new(0),
        }? Error)
    }

    /// The state debugfs shows.
    pub(crate) fn shared_state(&self) -> Arc<BondState> {
        self.state.clone()
    }

    /// Everything the VF path counted: VFs that left and the current one.
    pub(crate) fn vf_link_stats(&self) -> LinkStats {
        self.counters.lock().total()
    }

    /// The same as RX and TX packets and bytes, for qstats.
    pub(crate) fn vf_queue_counters(&self) -> (RxQueueStats, TxQueueStats) {
        let t = self.vf_link_stats();
        (
            RxQueueStats {
                packets: Some(t.rx_packets),
                bytes: Some(t.rx_bytes),
                ..Default::default()
            },
            TxQueueStats {
                packets: Some(t.tx_packets),
                bytes: Some(t.tx_bytes),
                ..Default::default()
            },
        )
    }

    /// (VF present, data path is VF, switches so far), for debugfs and
    /// ethtool.
    pub(crate) fn state(&self) -> (bool, bool, u64) {
        self.state.get()
    }

    /// Whether a VF is enslaved.
    pub(super) fn has_vf(&self) -> bool {
        self.state.vf_present.load(Relaxed) != 0
    }

    /// Whether the card's own VF is enslaved.
    fn has_own_vf(&self) -> bool {
        self.has_vf() && self.state.foreign.load(Relaxed) == 0
    }

    /// The serial of the foreign VF the card offers.
    fn offered(&self) -> Option<u32> {
        self.state.offered()
    }

    /// Whether the PF's work item has a VF sync to do (and takes it).
    pub(crate) fn take_sync_request(&self) -> bool {
        self.sync_requested.xchg(0, Relaxed) != 0
    }
}

/// The NIC of the function of `kind` on `dev`'s card (same card ID, same
/// MAC), if it exists.
fn sibling<'r>(dev: &NetDev<Nic>, rtnl: &'r Rtnl, kind: FuncKind) -> Option<&'r NetDev<Nic>> {
    let (card, mac) = (dev.data().card_id(), *dev.data().perm_mac());
    NIC_VTABLE.find(rtnl, |d| {
        d.data().kind() == kind && d.data().card_id() == card && *d.data().perm_mac() == mac
    })
}

/// The VF of `pf`'s card, if its NIC exists.
fn vf_of<'r>(pf: &NetDev<Nic>, rtnl: &'r Rtnl) -> Option<&'r NetDev<Nic>> {
    sibling(pf, rtnl, FuncKind::Vf)
}

/// The PF whose synthetic NIC `vf` belongs to.
fn pf_of<'r>(vf: &NetDev<Nic>, rtnl: &'r Rtnl) -> Option<&'r NetDev<Nic>> {
    sibling(vf, rtnl, FuncKind::Pf)
}

/// The VF enslaved to `pf`, if one is.
pub(crate) fn enslaved_vf<'r>(pf: &NetDev<Nic>, rtnl: &'r Rtnl) -> Option<&'r NetDev<Nic>> {
    pf.data()
        .bond()
        .has_own_vf()
        .then(|| vf_of(pf, rtnl))
        .flatten()
}

/// Has `pf`'s work item bring its VF in line.
fn request_sync(pf: &NetDev<Nic>) {
    pf.data().bond().sync_requested.store(1, Relaxed);
    pf.data().schedule_work();
}

/// Gives `vf` the MTU `mtu` of its master `pf`.
fn follow_mtu(pf: &NetDev<Nic>, vf: &NetDev<Nic>, rtnl: &Rtnl, mtu: u32) {
    if let Err(e) = vf.change_mtu_to(rtnl, mtu) {
        pr_warn!(
            "{}: VF {} refused MTU {}: {:?}\n",
            pf.name(),
            vf.name(),
            mtu,
            e
        );
    }
}

/// Programs `vf`'s card with its own RX filter joined with `pf`'s.
fn follow_rx_filter(pf: &NetDev<Nic>, vf: &NetDev<Nic>) {
    if let Err(e) = vf.data().apply_rx_filter(Some(pf.data())) {
        pr_warn!(
            "{}: VF {} did not take the RX filter: {:?}\n",
            pf.name(),
            vf.name(),
            e
        );
    }
}

/// Asks the card for data path `to_vf` and follows it on TX. Switching
/// away from the VF stops TX through it first; switching to it starts TX
/// through it only once the card acknowledged.
fn switch_datapath(pf: &NetDev<Nic>, vf: &AnyNetDev, to_vf: bool) {
    let bond = pf.data().bond();
    if (bond.state.datapath_vf.load(Relaxed) != 0) == to_vf {
        return;
    }
    if !to_vf {
        bond.tx.clear();
    }
    match pf.data().admin.run(AdminCmd::SetDatapath { vf: to_vf }) {
        Ok(()) => {
            bond.state.datapath_vf.store(u32::from(to_vf), Relaxed);
            bond.state.switches.fetch_add(1, Relaxed);
            if to_vf {
                bond.tx.set(vf);
            }
            pr_info!(
                "{}: data path {} ({})\n",
                pf.name(),
                if to_vf { "VF" } else { "synthetic" },
                vf.name()
            );
        }
        Err(e) => pr_err!(
            "{}: data path switch refused by the card: {:?}\n",
            pf.name(),
            e
        ),
    }
}

/// Puts the data path where the states of both devices say it belongs:
/// on the VF while both are up and the VF has carrier.
fn update_datapath(pf: &NetDev<Nic>, vf: &AnyNetDev) {
    let to_vf = pf.data().bond().has_vf() && pf.is_running() && vf.is_running() && vf.carrier_ok();
    switch_datapath(pf, vf, to_vf);
}

/// Moves a VF that is in another namespace than its synthetic NIC there
/// (as hv_netvsc does); it registers again in that namespace and joins
/// then. The VF's instance lock must not be held (the move takes it).
fn move_vf(pf: &NetDev<Nic>, vf: &NetDev<Nic>, rtnl: &Rtnl) {
    match vf.move_to_netns_of(rtnl, pf) {
        Ok(()) => pr_info!(
            "{}: VF moved to the namespace of {}\n",
            vf.name(),
            pf.name()
        ),
        Err(e) => pr_err!(
            "{}: cannot move VF to the namespace of {}: {:?}\n",
            vf.name(),
            pf.name(),
            e
        ),
    }
}

/// A VF's NIC appeared in its synthetic NIC's namespace (or the synthetic
/// NIC reappeared): enslave it and let the PF's work open it. `vf_locked`
/// is the VF's instance lock.
fn join(pf: &NetDev<Nic>, vf: &NetDev<Nic>, vf_locked: &RtnlLocked<'_>) {
    let bond = pf.data().bond();
    if bond.has_vf() || !pf.same_netns(vf) || pf.data().switchdev() {
        return;
    }
    let rtnl: &Rtnl = vf_locked;
    if let Err(e) = pf.enslave(rtnl, vf) {
        pr_err!("{}: cannot enslave VF {}: {:?}\n", pf.name(), vf.name(), e);
        return;
    }
    bond.counters.lock().vf = Some(Slave::Own(NetDevHold::new(vf)));
    bond.state.vf_present.store(1, Relaxed);
    vf.sync_features(vf_locked, pf.features(), followed_features());
    follow_rx_filter(pf, vf);
    vf.data().follow_xdp(vf_locked, Some(pf.data()));
    vf.update_features(vf_locked);
    pr_info!("{}: VF {} joined\n", pf.name(), vf.name());
    request_sync(pf);
}

/// The VF is going away: data path back to synthetic first, then release.
/// `vf_locked` is the VF's instance lock.
fn leave(pf: &NetDev<Nic>, vf: &NetDev<Nic>, vf_locked: &RtnlLocked<'_>) {
    let bond = pf.data().bond();
    if !bond.has_own_vf() {
        return;
    }
    switch_datapath(pf, vf, false);
    pf.release(vf_locked, vf);
    // The program stays on the synthetic NIC only.
    vf.data().follow_xdp(vf_locked, None);
    vf.update_features(vf_locked);
    {
        // In one step, so a reader sees the VF's counts in the base or
        // live, never both or neither.
        let mut counters = bond.counters.lock();
        counters.base = counters.total();
        counters.vf = None;
    }
    bond.state.vf_present.store(0, Relaxed);
    pr_info!("{}: VF {} left\n", pf.name(), vf.name());
}

/// The PF's work item, under the PF's instance lock: brings an enslaved
/// VF in line with its master (MTU, up if the master is up) and the data
/// path with both; takes a VF that is not enslaved (moving it to the
/// synthetic NIC's namespace first if need be).
pub(crate) fn sync(pf: &NetDev<Nic>, pf_locked: &RtnlLocked<'_>) {
    let rtnl: &Rtnl = pf_locked;
    // Switchdev mode: the VF is a port of the card's switch, not a
    // slave (it stays where the user puts it).
    if pf.data().switchdev() {
        return;
    }
    if sync_foreign(pf, rtnl) {
        return;
    }
    let Some(vf) = vf_of(pf, rtnl) else {
        return;
    };
    if !pf.data().bond().has_vf() {
        if pf.same_netns(vf) {
            join(pf, vf, &vf.lock_instance(rtnl));
        } else {
            move_vf(pf, vf, rtnl);
        }
        return;
    }
    if vf.mtu() != pf.mtu() {
        follow_mtu(pf, vf, rtnl, pf.mtu());
    }
    if pf.is_running() && !vf.is_running() {
        if let Err(e) = vf.open(rtnl) {
            pr_warn!("{}: cannot open VF {}: {:?}\n", pf.name(), vf.name(), e);
        }
    }
    update_datapath(pf, vf);
}

/// The synthetic NIC's MTU changed: the VF follows.
pub(crate) fn mtu_changed(pf: &NetDev<Nic>, rtnl: &Rtnl, mtu: u32) {
    if let Some(vf) = enslaved_vf(pf, rtnl) {
        follow_mtu(pf, vf, rtnl, mtu);
    }
}

/// The RX filter a function's card should apply: its own, and for an
/// enslaved VF also its master's (the synthetic NIC's addresses are the
/// ones the stack subscribed to; the VF now receives for it).
pub(crate) fn rx_filter_master<'r>(dev: &NetDev<Nic>, rtnl: &'r Rtnl) -> Option<&'r NetDev<Nic>> {
    match dev.data().kind() {
        FuncKind::Pf => None,
        FuncKind::Vf => pf_of(dev, rtnl).filter(|pf| pf.data().bond().has_own_vf()),
    }
}

/// The card reset the PF's function, which forgot the data path (it is
/// synthetic again): the sync switches back if the VF still qualifies.
pub(crate) fn card_reset(pf: &NetDev<Nic>) {
    let bond = pf.data().bond();
    if bond.state.datapath_vf.xchg(0, Relaxed) != 0 {
        bond.tx.clear();
    }
    request_sync(pf);
}

/// The synthetic NIC's RX filter changed: its VF's card takes it too, or
/// a foreign VF its address lists.
pub(crate) fn rx_mode_changed(pf: &NetDev<Nic>, rtnl: &Rtnl) {
    if let Some(vf) = enslaved_vf(pf, rtnl) {
        follow_rx_filter(pf, vf);
    }
    addr_lists_changed(pf, rtnl);
}

/// The synthetic NIC's XDP program changed (under its instance lock): its
/// VF runs the new one.
pub(crate) fn xdp_changed(pf: &NetDev<Nic>, rtnl: &Rtnl) {
    if let Some(vf) = enslaved_vf(pf, rtnl) {
        let vf_locked = vf.lock_instance(rtnl);
        vf.data().follow_xdp(&vf_locked, Some(pf.data()));
        vf.update_features(&vf_locked);
    }
}

/// Whether `vf` is enslaved to its synthetic NIC.
pub(crate) fn is_enslaved(vf: &NetDev<Nic>, rtnl: &Rtnl) -> bool {
    rx_filter_master(vf, rtnl).is_some()
}

/// The synthetic NIC's offloads become `features` (under its instance
/// lock): the VF's follow.
pub(crate) fn features_changed(pf: &NetDev<Nic>, rtnl: &Rtnl, features: Features) {
    if let Some(vf) = enslaved_vf(pf, rtnl) {
        vf.sync_features(&vf.lock_instance(rtnl), features, followed_features());
    }
}

/// The card offers the foreign VF `serial` (`None`: it withdrew it), from
/// the admin interrupt: the PF's work acts on it.
pub(crate) fn vf_offered(pf: &NetDev<Nic>, serial: Option<u32>) {
    let stored = serial.map_or(0, |s| u64::from(s) + 1);
    if pf.data().bond().state.offered.xchg(stored, Relaxed) != stored {
        request_sync(pf);
    }
}

/// Whether `dev`, of another driver, is the VF the card offers `pf`, by
/// hv_netvsc's rules: an Ethernet device, not a VLAN, not part of a bond,
/// team or failover, with no master yet, whose PCI slot number is the
/// serial the card announced and whose address is the synthetic NIC's.
/// A device with the right address in another slot is not taken.
fn is_offered_vf(pf: &NetDev<Nic>, dev: &AnyNetDev, rtnl: &Rtnl) -> bool {
    let Some(serial) = pf.data().bond().offered() else {
        return false;
    };
    dev.is_ethernet()
        && !dev.is_vlan()
        && !dev.is_aggregate_member()
        && !dev.has_master(rtnl)
        && dev.pci_slot_serial() == Some(serial)
        && dev.addr(rtnl) == *pf.data().perm_mac()
}

/// The PF whose card offers `dev`.
fn offering_pf<'r>(dev: &AnyNetDev, rtnl: &'r Rtnl) -> Option<&'r NetDev<Nic>> {
    NIC_VTABLE.find(rtnl, |pf| {
        pf.data().kind() == FuncKind::Pf && is_offered_vf(pf, dev, rtnl)
    })
}

/// The PF that has `dev` enslaved as its foreign VF.
fn master_of_foreign<'r>(dev: &AnyNetDev, rtnl: &'r Rtnl) -> Option<&'r NetDev<Nic>> {
    NIC_VTABLE.find(rtnl, |pf| {
        pf.data().kind() == FuncKind::Pf && pf.data().bond().counters.lock().is_foreign(dev)
    })
}

/// `pf`'s foreign VF, while enslaved (it stays registered while RTNL is
/// held: its unregistration releases it first).
fn foreign_vf<'r>(pf: &NetDev<Nic>, rtnl: &'r Rtnl) -> Option<&'r AnyNetDev> {
    let bond = pf.data().bond();
    if bond.state.foreign.load(Relaxed) == 0 {
        return None;
    }
    find_any(rtnl, |dev| bond.counters.lock().is_foreign(dev))
}

/// Takes `vf`, another make's VF the card offers, as the slave: the data
/// path follows once the PF's work has opened it.
fn join_foreign(pf: &NetDev<Nic>, vf: &AnyNetDev, rtnl: &Rtnl) {
    let bond = pf.data().bond();
    if bond.has_vf() || !pf.same_netns(vf) || pf.data().switchdev() {
        return;
    }
    if let Err(e) = pf.enslave(rtnl, vf) {
        pr_err!("{}: cannot enslave VF {}: {:?}\n", pf.name(), vf.name(), e);
        return;
    }
    vf.mark_slave(rtnl);
    bond.counters.lock().vf = Some(Slave::Foreign(AnyNetDevHold::new(vf)));
    bond.state.foreign.store(1, Relaxed);
    bond.state.vf_present.store(1, Relaxed);
    pf.sync_addr_lists_to(vf);
    pr_info!(
        "{}: VF {} joined (slot {})\n",
        pf.name(),
        vf.name(),
        bond.offered().unwrap_or(0)
    );
    request_sync(pf);
}

/// The foreign VF goes away, or the card withdrew it: data path back to
/// synthetic first, then release.
fn leave_foreign(pf: &NetDev<Nic>, vf: &AnyNetDev, rtnl: &Rtnl) {
    let bond = pf.data().bond();
    switch_datapath(pf, vf, false);
    pf.unsync_addr_lists_from(vf);
    pf.release(rtnl, vf);
    vf.unmark_slave(rtnl);
    {
        let mut counters = bond.counters.lock();
        counters.base = counters.total();
        counters.vf = None;
    }
    bond.state.vf_present.store(0, Relaxed);
    bond.state.foreign.store(0, Relaxed);
    pr_info!("{}: VF {} left\n", pf.name(), vf.name());
}

/// The PF's work for a foreign VF: releases one the card no longer
/// offers, takes one it offers that exists, brings an enslaved one in
/// line (MTU, up) and the data path with it. True if a foreign VF is (or
/// was until now) the PF's concern, so the card's own VF is left alone.
fn sync_foreign(pf: &NetDev<Nic>, rtnl: &Rtnl) -> bool {
    let bond = pf.data().bond();
    if let Some(vf) = foreign_vf(pf, rtnl) {
        if bond.offered().is_none() {
            leave_foreign(pf, vf, rtnl);
            return true;
        }
        if vf.mtu() != pf.mtu() {
            if let Err(e) = vf.change_mtu_to(rtnl, pf.mtu()) {
                pr_warn!(
                    "{}: VF {} refused MTU {}: {:?}\n",
                    pf.name(),
                    vf.name(),
                    pf.mtu(),
                    e
                );
            }
        }
        if pf.is_running() && !vf.is_running() {
            if let Err(e) = vf.open(rtnl) {
                pr_warn!("{}: cannot open VF {}: {:?}\n", pf.name(), vf.name(), e);
            }
        }
        update_datapath(pf, vf);
        return true;
    }
    if bond.has_vf() || bond.offered().is_none() {
        return false;
    }
    match find_any(rtnl, |dev| is_offered_vf(pf, dev, rtnl)) {
        Some(vf) => {
            join_foreign(pf, vf, rtnl);
            true
        }
        None => false,
    }
}

/// The synthetic NIC's address lists changed: a foreign VF, which filters
/// by its own, takes them (as netvsc's `dev_uc_sync`/`dev_mc_sync`).
fn addr_lists_changed(pf: &NetDev<Nic>, rtnl: &Rtnl) {
    if let Some(vf) = foreign_vf(pf, rtnl) {
        pf.sync_addr_lists_to(vf);
    }
}

/// An event of a net device of another driver.
pub(crate) fn other_netdev_event(event: NetdevEvent, dev: &AnyNetDev, rtnl: &Rtnl) {
    match event {
        // Before it registers: a slave from the start, so addrconf
        // leaves it alone (netvsc's `netvsc_prepare_bonding`).
        NetdevEvent::PostInit => {
            if offering_pf(dev, rtnl).is_some() {
                dev.mark_slave(rtnl);
            }
        }
        NetdevEvent::Register => {
            if let Some(pf) = offering_pf(dev, rtnl) {
                join_foreign(pf, dev, rtnl);
            }
        }
        NetdevEvent::Unregister => {
            if let Some(pf) = master_of_foreign(dev, rtnl) {
                leave_foreign(pf, dev, rtnl);
            }
        }
        NetdevEvent::GoingDown => {
            if let Some(pf) = master_of_foreign(dev, rtnl) {
                switch_datapath(pf, dev, false);
            }
        }
        NetdevEvent::Up | NetdevEvent::Change => {
            if let Some(pf) = master_of_foreign(dev, rtnl) {
                update_datapath(pf, dev);
            }
        }
    }
}

impl WatchNetdevs for Nic {
    fn other_netdev_event(event: NetdevEvent, dev: &AnyNetDev, rtnl: &Rtnl) {
        other_netdev_event(event, dev, rtnl);
    }

    fn netdev_event(
        event: NetdevEvent,
        dev: &NetDev<Self>,
        rtnl: &Rtnl,
        locked: Option<&RtnlLocked<'_>>,
    ) {
        match dev.data().kind() {
            FuncKind::Vf => {
                let Some(pf) = pf_of(dev, rtnl) else {
                    return;
                };
                match event {
                    NetdevEvent::Register => match locked {
                        Some(vf_locked) if pf.same_netns(dev) => join(pf, dev, vf_locked),
                        // In another namespace: the PF's work moves it
                        // (not from inside its own registration).
                        _ => request_sync(pf),
                    },
                    NetdevEvent::Unregister => leave(pf, dev, &dev.lock_instance(rtnl)),
                    NetdevEvent::GoingDown => switch_datapath(pf, dev, false),
                    NetdevEvent::Up | NetdevEvent::Change => update_datapath(pf, dev),
                    // Not sent for our own devices.
                    NetdevEvent::PostInit => {}
                }
            }
            FuncKind::Pf => {
                if let Some(vf) = foreign_vf(dev, rtnl) {
                    match event {
                        NetdevEvent::Unregister => leave_foreign(dev, vf, rtnl),
                        NetdevEvent::GoingDown => switch_datapath(dev, vf, false),
                        NetdevEvent::Up | NetdevEvent::Register => request_sync(dev),
                        NetdevEvent::Change | NetdevEvent::PostInit => {}
                    }
                    return;
                }
                let Some(vf) = vf_of(dev, rtnl) else {
                    // A foreign VF the card offers may be waiting.
                    if matches!(event, NetdevEvent::Up | NetdevEvent::Register) {
                        request_sync(dev);
                    }
                    return;
                };
                match event {
                    NetdevEvent::Unregister => leave(dev, vf, &vf.lock_instance(rtnl)),
                    NetdevEvent::GoingDown => switch_datapath(dev, vf, false),
                    // Up: open the VF too. Register: the synthetic NIC
                    // moved namespace; its work takes the VF back (not
                    // from inside this notifier, which would move
                    // another device while this one registers).
                    NetdevEvent::Up | NetdevEvent::Register => request_sync(dev),
                    NetdevEvent::Change | NetdevEvent::PostInit => {}
                }
            }
        }
    }
}
