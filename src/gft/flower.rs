// SPDX-License-Identifier: GPL-2.0

//! tc flower rules in the card's masked rule table: a rule on the
//! synthetic NIC's ingress block (the packets the wire brings) becomes a
//! card rule matching the wire's port; what the card cannot match or do
//! is refused with a message, and tc keeps such a rule in software.

use kernel::prelude::*;

use crate::hw::gft::{action, Action, Encap};
use crate::hw::gft_rule::{field, match_flags, port, RuleCounters, RuleRecord, MATCH_LEN};
use crate::linux::net::flower::{
    FlowCounts, FlowerAction, FlowerMatch, FlowerRule, MangleBase, Police, PoliceVerdict,
    TunnelKey, ADDR_IPV4, ADDR_IPV6, CTRL_FIRST_FRAG, CTRL_IS_FRAGMENT,
};

/// `ETH_P_8021Q`.
const ETH_P_8021Q: u16 = 0x8100;
/// `ETH_P_8021AD`.
const ETH_P_8021AD: u16 = 0x88a8;

/// A flower rule the card holds (kept by tc's cookie).
pub(super) struct Offloaded {
    /// What the card was given (replayed after a reset).
    pub(super) rec: RuleRecord,
    /// What was reported to tc so far (it wants increments).
    reported: FlowCounts,
}

impl Offloaded {
    /// A rule the card took.
    pub(super) fn new(rec: RuleRecord) -> Self {
        Self {
            rec,
            reported: FlowCounts::default(),
        }
    }

    /// What the card counted since the last report. The card's counts
    /// restart with a reset; then all it counted is new.
    pub(super) fn increments(&mut self, c: &RuleCounters) -> FlowCounts {
        let now = FlowCounts {
            packets: c.packets,
            bytes: c.bytes,
            drops: c.drops,
        };
        let was = self.reported;
        let inc = if now.packets >= was.packets && now.bytes >= was.bytes && now.drops >= was.drops
        {
            FlowCounts {
                packets: now.packets - was.packets,
                bytes: now.bytes - was.bytes,
                drops: now.drops - was.drops,
            }
        } else {
            now
        };
        self.reported = now;
        inc
    }

    /// The card forgot the rule (reset): its counts start again.
    pub(super) fn restart(&mut self) {
        self.reported = FlowCounts::default();
    }
}

/// A match and mask under construction.
struct Builder {
    key: [u8; MATCH_LEN],
    mask: [u8; MATCH_LEN],
}

impl Builder {
    /// Sets field `f` from `key` and `mask` (as long as the field; a
    /// shorter one sets only its bytes).
    fn set(&mut self, f: field::Field, key: &[u8], mask: &[u8]) {
        let to = f.0..f.0 + f.1;
        for (((k, m), key), mask) in self.key[to.clone()]
            .iter_mut()
            .zip(self.mask[to].iter_mut())
            .zip(key)
            .zip(mask)
        {
            *k = key & mask;
            *m = *mask;
        }
    }

    fn flag(&mut self, bit: u8) {
        self.key[field::FLAGS.0] |= bit;
        self.mask[field::FLAGS.0] |= bit;
    }
}

/// Where a filter's rule applies and where its redirects go: the
/// switch port its device's ingress is (the wire for the synthetic NIC,
/// a VF's port for a representor), and the switch port of a redirect's
/// target device (by ifindex), or why it has none.
pub(crate) struct Ports<'a> {
    /// The port the rule matches packets from.
    pub(crate) in_port: u16,
    /// The rule is a VXLAN device's (the packets of its tunnels, from
    /// `in_port`): it may match the outer header (`enc_*`), and matches
    /// only tunnelled packets.
    pub(crate) tunnel: bool,
    /// The port of a redirect target.
    pub(crate) redirect: &'a dyn Fn(i32) -> Result<u16, &'static CStr>,
    /// The outer headers of a tunnel a rule sends into (its next hop
    /// resolved), or why there are none.
    pub(crate) encap: &'a dyn Fn(&TunnelKey) -> Result<Encap, &'static CStr>,
}

/// The card rule numbered `id` for `rule`, on `ports.in_port`, or why
/// the card cannot carry it.
pub(super) fn translate(
    rule: &FlowerRule<'_>,
    id: u32,
    ports: &Ports<'_>,
) -> Result<RuleRecord, &'static CStr> {
    let m = rule.matches();
    let mut b = Builder {
        key: [0; MATCH_LEN],
        mask: [0; MATCH_LEN],
    };
    b.set(field::IN_PORT, &ports.in_port.to_be_bytes(), &[0xff; 2]);
    if ports.tunnel {
        tunnel_fields(&m, &mut b)?;
    } else if m.enc_key_id_mask != 0
        || m.enc_addr_type != 0
        || m.enc_dport_mask != 0
        || m.enc_sport_mask != 0
        || m.enc_tos_mask != 0
        || m.enc_ttl_mask != 0
    {
        return Err(c"rsnic: tunnel key matches are not offloaded on this device");
    }
    match_fields(&m, &mut b)?;
    let prio = u16::try_from(rule.prio())
        .map_err(|_| c"rsnic: priorities above 65535 are not offloaded")?;
    Ok(RuleRecord {
        id,
        prio,
        key: b.key,
        mask: b.mask,
        action: actions(rule, ports)?,
    })
}

/// `ip_flags`: [no]frag, firstfrag, frag/nofirstfrag, as the card's
/// fragment flags (a fragment; one after the first). `nofirstfrag`
/// alone (not a first fragment, so also not a fragment at all) is no
/// one mask of them, and other flags are not matched.
fn fragment_flags(m: &FlowerMatch, b: &mut Builder) -> Result<(), &'static CStr> {
    let (key, mask) = (m.ctrl_flags, m.ctrl_flags_mask);
    if mask & !(CTRL_IS_FRAGMENT | CTRL_FIRST_FRAG) != 0 {
        return Err(c"rsnic: the card matches only fragment flags");
    }
    let (is_frag, first) = (
        key & mask & CTRL_IS_FRAGMENT != 0,
        key & mask & CTRL_FIRST_FRAG != 0,
    );
    let mut set = |bit: u8, on: bool| {
        b.mask[field::FLAGS.0] |= bit;
        if on {
            b.key[field::FLAGS.0] |= bit;
        }
    };
    if mask & CTRL_FIRST_FRAG != 0 {
        if !first && !is_frag {
            return Err(c"rsnic: nofirstfrag is matched only with frag");
        }
        // A fragment: the first, or one after it.
        set(match_flags::FRAGMENT, true);
        set(match_flags::LATER_FRAGMENT, !first);
    } else if mask & CTRL_IS_FRAGMENT != 0 {
        set(match_flags::FRAGMENT, is_frag);
    }
    Ok(())
}

/// A tunnel device's rule: only tunnelled packets, and the outer
/// header's fields (VNI, IPv4 addresses, UDP ports) it names.
fn tunnel_fields(m: &FlowerMatch, b: &mut Builder) -> Result<(), &'static CStr> {
    b.flag(match_flags::TUNNEL);
    b.set(
        field::ENC_KEY_ID,
        &m.enc_key_id.to_be_bytes(),
        &m.enc_key_id_mask.to_be_bytes(),
    );
    match m.enc_addr_type {
        0 => {}
        ADDR_IPV4 => {
            // IPv4 in the first 4 bytes, the rest zero, as the card's.
            b.set(field::ENC_IP_SRC, &m.enc_src, &m.enc_src_mask);
            b.set(field::ENC_IP_DST, &m.enc_dst, &m.enc_dst_mask);
        }
        _ => return Err(c"rsnic: the card matches IPv4 tunnels only"),
    }
    b.set(
        field::ENC_DST_PORT,
        &m.enc_dport.to_be_bytes(),
        &m.enc_dport_mask.to_be_bytes(),
    );
    b.set(
        field::ENC_SRC_PORT,
        &m.enc_sport.to_be_bytes(),
        &m.enc_sport_mask.to_be_bytes(),
    );
    b.set(field::ENC_IP_TOS, &[m.enc_tos], &[m.enc_tos_mask]);
    b.set(field::ENC_IP_TTL, &[m.enc_ttl], &[m.enc_ttl_mask]);
    Ok(())
}

fn match_fields(m: &FlowerMatch, b: &mut Builder) -> Result<(), &'static CStr> {
    if m.unsupported != 0 {
        return Err(c"rsnic: the card cannot match some of the rule's keys");
    }
    fragment_flags(m, b)?;
    if m.n_proto_mask != 0 && matches!(m.n_proto, ETH_P_8021Q | ETH_P_8021AD) {
        return Err(c"rsnic: match the tagged frame's EtherType (vlan_ethtype)");
    }
    b.set(
        field::ETH_TYPE,
        &m.n_proto.to_be_bytes(),
        &m.n_proto_mask.to_be_bytes(),
    );
    b.set(field::IP_PROTO, &[m.ip_proto], &[m.ip_proto_mask]);
    b.set(field::ETH_DST, &m.eth_dst, &m.eth_dst_mask);
    b.set(field::ETH_SRC, &m.eth_src, &m.eth_src_mask);
    if m.vlan_id_mask != 0 || m.vlan_prio_mask != 0 {
        let tci = (u16::from(m.vlan_prio) << 13) | (m.vlan_id & 0xfff);
        let tci_mask = (u16::from(m.vlan_prio_mask & 7) << 13) | (m.vlan_id_mask & 0xfff);
        b.set(field::VLAN_TCI, &tci.to_be_bytes(), &tci_mask.to_be_bytes());
        b.flag(match_flags::VLAN);
    }
    let len = match m.addr_type {
        0 => 0,
        ADDR_IPV4 => 4,
        ADDR_IPV6 => 16,
        _ => return Err(c"rsnic: the card cannot match some of the rule's keys"),
    };
    let mut src_mask = [0u8; 16];
    let mut dst_mask = [0u8; 16];
    src_mask[..len].copy_from_slice(&m.src_mask[..len]);
    dst_mask[..len].copy_from_slice(&m.dst_mask[..len]);
    b.set(field::IP_SRC, &m.src, &src_mask);
    b.set(field::IP_DST, &m.dst, &dst_mask);
    b.set(field::IP_TOS, &[m.tos], &[m.tos_mask]);
    b.set(field::IP_TTL, &[m.ttl], &[m.ttl_mask]);
    b.set(
        field::L4_SRC,
        &m.sport.to_be_bytes(),
        &m.sport_mask.to_be_bytes(),
    );
    b.set(
        field::L4_DST,
        &m.dport.to_be_bytes(),
        &m.dport_mask.to_be_bytes(),
    );
    let flags_mask = m.tcp_flags_mask & 0x0fff;
    b.set(
        field::TCP_FLAGS,
        &m.tcp_flags.to_be_bytes(),
        &flags_mask.to_be_bytes(),
    );
    Ok(())
}

/// Gives `a` the rule's meter for police `p`; whether `p` ends the
/// action list (it accepts what conforms). The card's meter is one token
/// bucket by bytes that drops what exceeds it.
fn meter(a: &mut Action, p: &Police) -> Result<bool, &'static CStr> {
    if p.rate == 0 || p.pkt_rate != 0 {
        return Err(c"rsnic: police by packet rate is not offloaded");
    }
    if p.extras {
        return Err(c"rsnic: police with peakrate, avrate or overhead is not offloaded");
    }
    if p.exceed != PoliceVerdict::Drop {
        return Err(c"rsnic: the card's meter drops what exceeds (conform-exceed drop/...)");
    }
    let ends = match p.conform {
        PoliceVerdict::Pipe => false,
        PoliceVerdict::Accept => true,
        _ => return Err(c"rsnic: what conforms goes on (pipe) or is accepted (ok)"),
    };
    a.flags |= action::METER;
    a.meter_rate = p.rate.saturating_mul(8);
    a.meter_burst = p.burst;
    Ok(ends)
}

/// The card's action for the rule's actions.
fn actions(rule: &FlowerRule<'_>, ports: &Ports<'_>) -> Result<Action, &'static CStr> {
    let mut a = Action::default();
    // Words of the IPv6 addresses set so far (bit i: word i).
    let (mut sip6, mut dip6) = (0u8, 0u8);
    // A redirect, or a police that accepts what conforms, ended the
    // list.
    let mut ended = false;
    // The tunnel a `tunnel_key set` named, for the redirect after it.
    let mut tunnel = None;
    for act in rule.actions() {
        if ended {
            return Err(c"rsnic: actions after a redirect or a police that accepts");
        }
        match act {
            FlowerAction::Accept => {}
            FlowerAction::Drop => a.flags |= action::DROP,
            FlowerAction::VlanPop => a.flags |= action::VLAN_POP,
            FlowerAction::VlanPush { vid, prio, proto } => {
                if proto != ETH_P_8021Q {
                    return Err(c"rsnic: only 802.1Q tags are pushed");
                }
                a.flags |= action::VLAN_PUSH;
                a.vlan_tci = (u16::from(prio & 7) << 13) | (vid & 0xfff);
            }
            FlowerAction::Mangle {
                base,
                offset,
                mask,
                val,
            } => {
                let val = val.to_ne_bytes();
                let keep = mask.to_ne_bytes();
                match (base, offset) {
                    (MangleBase::Ip4, 12 | 16) if mask == 0 => {
                        let (flag, to) = if offset == 12 {
                            (action::NAT_SRC_IP, &mut a.nat_sip)
                        } else {
                            (action::NAT_DST_IP, &mut a.nat_dip)
                        };
                        a.flags |= flag;
                        to[..4].copy_from_slice(&val);
                    }
                    (MangleBase::Ip6, 8..=36) if mask == 0 && offset % 4 == 0 => {
                        // CAST: offset is 8 to 36.
                        let word = ((offset - 8) / 4) as usize;
                        let (words, to, flag) = if word < 4 {
                            (&mut sip6, &mut a.nat_sip, action::NAT_SRC_IP)
                        } else {
                            (&mut dip6, &mut a.nat_dip, action::NAT_DST_IP)
                        };
                        let w = word % 4;
                        to[w * 4..w * 4 + 4].copy_from_slice(&val);
                        *words |= 1 << w;
                        a.flags |= flag;
                    }
                    (MangleBase::Tcp | MangleBase::Udp, 0) => {
                        // The word holds the source port, then the
                        // destination port; `keep` says which stays.
                        if keep[..2] == [0, 0] {
                            a.flags |= action::NAT_SRC_PORT;
                            a.nat_sport = u16::from_be_bytes([val[0], val[1]]);
                        } else if keep[..2] != [0xff, 0xff] {
                            return Err(c"rsnic: only whole ports are rewritten");
                        }
                        if keep[2..] == [0, 0] {
                            a.flags |= action::NAT_DST_PORT;
                            a.nat_dport = u16::from_be_bytes([val[2], val[3]]);
                        } else if keep[2..] != [0xff, 0xff] {
                            return Err(c"rsnic: only whole ports are rewritten");
                        }
                    }
                    _ => return Err(c"rsnic: the card rewrites only IP addresses and L4 ports"),
                }
            }
            // The card fixes the checksums of what it rewrites.
            FlowerAction::Csum(_) => {}
            FlowerAction::Redirect(ifindex) => {
                a.flags |= action::FORWARD;
                a.port = (ports.redirect)(ifindex)?;
                // Nothing after it acts on the packet.
                ended = true;
            }
            FlowerAction::TunnelEncap(key) => {
                if tunnel.is_some() {
                    return Err(c"rsnic: one tunnel_key set per rule");
                }
                tunnel = Some(key);
            }
            // Into the tunnel, which leaves by the wire: the card adds the
            // outer headers and sends the packet out of the uplink.
            FlowerAction::RedirectToVxlan(_) => {
                let key =
                    tunnel.ok_or(c"rsnic: a redirect to a VXLAN device needs tunnel_key set")?;
                a.flags |= action::VXLAN_ENCAP | action::FORWARD;
                a.encap = (ports.encap)(&key)?;
                a.port = port::UPLINK;
                ended = true;
            }
            FlowerAction::TunnelDecap => {
                if !ports.tunnel {
                    return Err(c"rsnic: tunnel_key unset on a device that is no tunnel");
                }
                a.flags |= action::DECAP;
            }
            FlowerAction::Police(p) => {
                if a.flags & action::METER != 0 {
                    return Err(c"rsnic: one police per rule");
                }
                ended = meter(&mut a, &p)?;
            }
            FlowerAction::Other(_) => return Err(c"rsnic: an action the card does not do"),
        }
    }
    if sip6 != 0 && sip6 != 0xf || dip6 != 0 && dip6 != 0xf {
        return Err(c"rsnic: an IPv6 address is rewritten whole or not at all");
    }
    if a.flags & action::DROP != 0 && a.flags != action::DROP {
        return Err(c"rsnic: drop with other actions");
    }
    if !a.is_valid() {
        return Err(c"rsnic: an action the card does not do");
    }
    Ok(a)
}
