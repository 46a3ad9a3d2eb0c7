// SPDX-License-Identifier: GPL-2.0

//! Policy rules: ordered wildcard/prefix matches with an action, in the
//! text form the `rules` debugfs file reads and writes.
//!
//! A rule is written as `add key=value ...` and listed in the same form
//! (plus its hit count), so a listed rule can be added again as it is.
//!
//! Longer than most files: it is one grammar (parser, checks and the text
//! it prints back), which reads best in one place.

use core::fmt;
use core::net::{Ipv4Addr, Ipv6Addr};

use crate::hw::gft::{action, proto, Action, Direction, FlowKey};

/// Why a rule text was refused; shown in the kernel log.
pub(crate) type ParseError = &'static str;

/// An address prefix (IPv4 in the first 4 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Prefix {
    addr: [u8; 16],
    len: u8,
}

impl Prefix {
    fn contains(&self, addr: &[u8; 16]) -> bool {
        let full = usize::from(self.len / 8);
        let rest = self.len % 8;
        if self.addr[..full] != addr[..full] {
            return false;
        }
        rest == 0 || (self.addr[full] ^ addr[full]) & (0xff << (8 - rest)) == 0
    }
}

/// What packets a rule applies to. Unset fields match anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RuleMatch {
    /// Direction (required).
    pub(crate) dir: Direction,
    /// IP version, from the addresses given.
    pub(crate) family: Option<u8>,
    /// IP protocol.
    pub(crate) proto: Option<u8>,
    /// Source prefix.
    pub(crate) src: Option<Prefix>,
    /// Destination prefix.
    pub(crate) dst: Option<Prefix>,
    /// Source port.
    pub(crate) sport: Option<u16>,
    /// Destination port.
    pub(crate) dport: Option<u16>,
    /// Tunnel id (VNI or VSID) the packet arrived under.
    pub(crate) tunnel: Option<u32>,
}

impl RuleMatch {
    /// Whether `key` is matched.
    pub(crate) fn matches(&self, key: &FlowKey) -> bool {
        key.dir == self.dir
            && self.family.is_none_or(|f| f == key.ip_version)
            && self.proto.is_none_or(|p| p == key.proto)
            && self.src.is_none_or(|p| p.contains(&key.src))
            && self.dst.is_none_or(|p| p.contains(&key.dst))
            && self.sport.is_none_or(|p| p == key.sport)
            && self.dport.is_none_or(|p| p == key.dport)
            && self.tunnel.is_none_or(|t| Some(t) == key.tunnel)
    }
}

/// A policy rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rule {
    /// Identifier (`del <id>`).
    pub(crate) id: u32,
    /// Lower goes first; ties by id.
    pub(crate) prio: u16,
    /// What it applies to.
    pub(crate) m: RuleMatch,
    /// What it does.
    pub(crate) action: Action,
}

/// Largest rule id a user may give.
pub(crate) const MAX_RULE_ID: u32 = 1 << 30;
/// Priority of a rule that gives none.
const DEFAULT_PRIO: u16 = 1000;

/// The action names, with their [`action`] bits (nat's depend on the
/// parameters given).
const ACTIONS: [(&str, u32); 9] = [
    ("allow", 0),
    ("drop", action::DROP),
    ("decap", action::DECAP),
    ("vlan_pop", action::VLAN_POP),
    ("nat", 0),
    ("vlan_push", action::VLAN_PUSH),
    ("vxlan_encap", action::VXLAN_ENCAP),
    ("nvgre_encap", action::NVGRE_ENCAP),
    ("meter", action::METER),
];

/// Keys an `add` line may carry.
const KEYS: [&str; 22] = [
    "id",
    "prio",
    "dir",
    "proto",
    "src",
    "dst",
    "sport",
    "dport",
    "tunnel",
    "action",
    "encap_id",
    "outer_smac",
    "outer_dmac",
    "outer_sip",
    "outer_dip",
    "nat_sip",
    "nat_dip",
    "nat_sport",
    "nat_dport",
    "vlan",
    "rate",
    "burst",
];

/// An address: IPv4 or IPv6, as 16 bytes and its version.
pub(crate) fn parse_addr(s: &str) -> Result<([u8; 16], u8), ParseError> {
    if let Ok(v4) = s.parse::<Ipv4Addr>() {
        let mut a = [0u8; 16];
        a[..4].copy_from_slice(&v4.octets());
        return Ok((a, 4));
    }
    s.parse::<Ipv6Addr>()
        .map(|v6| (v6.octets(), 6))
        .map_err(|_| "bad IP address")
}

fn parse_prefix(s: &str) -> Result<(Prefix, u8), ParseError> {
    let (addr, len) = match s.split_once('/') {
        Some((a, l)) => (a, Some(l)),
        None => (s, None),
    };
    let (mut addr, family) = parse_addr(addr)?;
    let max = if family == 4 { 32 } else { 128 };
    let len = match len {
        Some(l) => l.parse::<u8>().map_err(|_| "bad prefix length")?,
        None => max,
    };
    if len > max {
        return Err("prefix length out of range");
    }
    // Host bits are ignored: clear them so the listing is canonical.
    for (i, b) in addr.iter_mut().enumerate() {
        let bit = (i * 8) as u8;
        if bit >= len {
            *b = 0;
        } else if len - bit < 8 {
            *b &= 0xff << (8 - (len - bit));
        }
    }
    Ok((Prefix { addr, len }, family))
}

fn parse_mac(s: &str) -> Result<[u8; 6], ParseError> {
    let mut mac = [0u8; 6];
    let mut parts = s.split(':');
    for b in mac.iter_mut() {
        let p = parts.next().ok_or("bad MAC address")?;
        if p.len() != 2 {
            return Err("bad MAC address");
        }
        *b = u8::from_str_radix(p, 16).map_err(|_| "bad MAC address")?;
    }
    if parts.next().is_some() {
        return Err("bad MAC address");
    }
    Ok(mac)
}

fn parse_num<T: core::str::FromStr>(s: &str, what: ParseError) -> Result<T, ParseError> {
    s.parse().map_err(|_| what)
}

/// A rate in bits per second: a number with an optional `k`, `m` or `g`.
fn parse_rate(s: &str) -> Result<u64, ParseError> {
    let (num, mult) = match s.as_bytes().last() {
        Some(b'k') => (&s[..s.len() - 1], 1_000),
        Some(b'm') => (&s[..s.len() - 1], 1_000_000),
        Some(b'g') => (&s[..s.len() - 1], 1_000_000_000),
        _ => (s, 1),
    };
    let n: u64 = parse_num(num, "bad rate")?;
    match n.checked_mul(mult) {
        Some(r) if r > 0 && r <= 400_000_000_000 => Ok(r),
        _ => Err("rate out of range"),
    }
}

/// A protocol: a name (`tcp`, `udp`, `icmp`, `icmpv6`) or a number.
pub(crate) fn parse_proto(s: &str) -> Result<u8, ParseError> {
    Ok(match s {
        "tcp" => proto::TCP,
        "udp" => proto::UDP,
        "icmp" => proto::ICMP,
        "icmpv6" => proto::ICMPV6,
        n => parse_num(n, "bad protocol")?,
    })
}

/// A direction: `tx` or `rx`.
pub(crate) fn parse_dir(s: &str) -> Result<Direction, ParseError> {
    match s {
        "tx" => Ok(Direction::Tx),
        "rx" => Ok(Direction::Rx),
        _ => Err("dir is tx or rx"),
    }
}

/// The `key=value` pairs of an `add` line, each key at most once.
struct Fields<'a> {
    values: [Option<&'a str>; KEYS.len()],
}

impl<'a> Fields<'a> {
    fn parse(tokens: core::str::SplitWhitespace<'a>) -> Result<Self, ParseError> {
        let mut values = [None; KEYS.len()];
        for token in tokens {
            let (k, v) = token.split_once('=').ok_or("expected key=value")?;
            let i = KEYS.iter().position(|&n| n == k).ok_or("unknown key")?;
            if values[i].is_some() {
                return Err("key given twice");
            }
            if v.is_empty() {
                return Err("empty value");
            }
            values[i] = Some(v);
        }
        Ok(Self { values })
    }

    /// Takes a value (so unused ones can be found afterwards).
    fn take(&mut self, key: &str) -> Option<&'a str> {
        let i = KEYS.iter().position(|&n| n == key)?;
        self.values[i].take()
    }
}

/// A parameter `v`, refused (`what`) unless its action `on` is asked for.
fn needs<'v>(
    v: Option<&'v str>,
    on: bool,
    what: ParseError,
) -> Result<Option<&'v str>, ParseError> {
    match (v, on) {
        (Some(_), false) => Err(what),
        (v, _) => Ok(v),
    }
}

/// Sets `family` to `f`, refusing a mix of IPv4 and IPv6.
fn same_family(family: &mut Option<u8>, f: u8) -> Result<(), ParseError> {
    match *family {
        Some(g) if g != f => Err("IPv4 and IPv6 mixed"),
        _ => {
            *family = Some(f);
            Ok(())
        }
    }
}

impl Rule {
    /// Parses the arguments of an `add` line (after `add`). `id` is used
    /// when the line gives none.
    pub(crate) fn parse(args: core::str::SplitWhitespace<'_>, id: u32) -> Result<Self, ParseError> {
        let mut f = Fields::parse(args)?;
        let id = match f.take("id") {
            Some(v) => match parse_num::<u32>(v, "bad id")? {
                0 => return Err("id out of range"),
                n if n > MAX_RULE_ID => return Err("id out of range"),
                n => n,
            },
            None => id,
        };
        let prio = match f.take("prio") {
            Some(v) => parse_num(v, "bad priority")?,
            None => DEFAULT_PRIO,
        };
        let dir = parse_dir(f.take("dir").ok_or("dir is required")?)?;
        let mut family = None;
        let prefix = |v: Option<&str>, family: &mut Option<u8>| -> Result<_, ParseError> {
            v.map(|v| {
                let (p, fam) = parse_prefix(v)?;
                same_family(family, fam)?;
                Ok(p)
            })
            .transpose()
        };
        let src = prefix(f.take("src"), &mut family)?;
        let dst = prefix(f.take("dst"), &mut family)?;
        let proto = f.take("proto").map(parse_proto).transpose()?;
        let port = |v: Option<&str>| v.map(|v| parse_num::<u16>(v, "bad port")).transpose();
        let (sport, dport) = (port(f.take("sport"))?, port(f.take("dport"))?);
        if (sport.is_some() || dport.is_some()) && !matches!(proto, Some(proto::TCP | proto::UDP)) {
            return Err("ports need proto=tcp or proto=udp");
        }
        let tunnel = f
            .take("tunnel")
            .map(|v| match parse_num::<u32>(v, "bad tunnel id")? {
                t if t < 1 << 24 => Ok(t),
                _ => Err("tunnel id out of range"),
            })
            .transpose()?;
        let mut a = Action::default();
        let names = f.take("action").ok_or("action is required")?;
        let mut nat = false;
        let mut count = 0;
        for name in names.split(',') {
            let &(_, bits) = ACTIONS
                .iter()
                .find(|(n, _)| *n == name)
                .ok_or("unknown action")?;
            count += 1;
            if name == "nat" {
                if nat {
                    return Err("action given twice");
                }
                nat = true;
            } else if name == "allow" {
                if count > 1 || names.contains(',') {
                    return Err("allow goes alone");
                }
            } else if a.flags & bits != 0 {
                return Err("action given twice");
            }
            a.flags |= bits;
        }
        if a.flags & action::DROP != 0 && count > 1 {
            return Err("drop goes alone");
        }
        if a.flags & action::VXLAN_ENCAP != 0 && a.flags & action::NVGRE_ENCAP != 0 {
            return Err("one encap at most");
        }
        // Parameters, each only with its action.
        let encap = a.flags & (action::VXLAN_ENCAP | action::NVGRE_ENCAP) != 0;
        let outer = [
            needs(f.take("encap_id"), encap, "encap_id needs an encap action")?,
            needs(
                f.take("outer_smac"),
                encap,
                "outer_smac needs an encap action",
            )?,
            needs(
                f.take("outer_dmac"),
                encap,
                "outer_dmac needs an encap action",
            )?,
            needs(
                f.take("outer_sip"),
                encap,
                "outer_sip needs an encap action",
            )?,
            needs(
                f.take("outer_dip"),
                encap,
                "outer_dip needs an encap action",
            )?,
        ];
        if encap {
            let [Some(id), Some(smac), Some(dmac), Some(sip), Some(dip)] = outer else {
                return Err("encap needs encap_id, outer_smac, outer_dmac, outer_sip, outer_dip");
            };
            a.encap.id = parse_num(id, "bad encap_id")?;
            if a.encap.id >= 1 << 24 {
                return Err("encap_id out of range");
            }
            a.encap.smac = parse_mac(smac)?;
            a.encap.dmac = parse_mac(dmac)?;
            let (sip, fs) = parse_addr(sip)?;
            let (dip, fd) = parse_addr(dip)?;
            if fs != fd {
                return Err("outer addresses of different families");
            }
            a.encap.sip = sip;
            a.encap.dip = dip;
            if fs == 6 {
                a.flags |= action::ENCAP_IPV6;
            }
        }
        let nat_fields = [
            (
                needs(f.take("nat_sip"), nat, "nat_sip needs action nat")?,
                action::NAT_SRC_IP,
            ),
            (
                needs(f.take("nat_dip"), nat, "nat_dip needs action nat")?,
                action::NAT_DST_IP,
            ),
            (
                needs(f.take("nat_sport"), nat, "nat_sport needs action nat")?,
                action::NAT_SRC_PORT,
            ),
            (
                needs(f.take("nat_dport"), nat, "nat_dport needs action nat")?,
                action::NAT_DST_PORT,
            ),
        ];
        for (v, bit) in nat_fields {
            let Some(v) = v else { continue };
            a.flags |= bit;
            match bit {
                action::NAT_SRC_IP | action::NAT_DST_IP => {
                    let (addr, fam) = parse_addr(v)?;
                    same_family(&mut family, fam)?;
                    if bit == action::NAT_SRC_IP {
                        a.nat_sip = addr;
                    } else {
                        a.nat_dip = addr;
                    }
                }
                _ => {
                    if !matches!(proto, Some(proto::TCP | proto::UDP)) {
                        return Err("port NAT needs proto=tcp or proto=udp");
                    }
                    let p = parse_num(v, "bad port")?;
                    if bit == action::NAT_SRC_PORT {
                        a.nat_sport = p;
                    } else {
                        a.nat_dport = p;
                    }
                }
            }
        }
        if nat && a.flags & action::NAT == 0 {
            return Err("nat needs nat_sip, nat_dip, nat_sport or nat_dport");
        }
        let push = a.flags & action::VLAN_PUSH != 0;
        if let Some(v) = needs(f.take("vlan"), push, "vlan needs action vlan_push")? {
            let vid: u16 = parse_num(v, "bad VLAN id")?;
            if vid == 0 || vid > 4094 {
                return Err("VLAN id out of range");
            }
            a.vlan_tci = vid;
        } else if push {
            return Err("vlan_push needs vlan");
        }
        let meter = a.flags & action::METER != 0;
        match needs(f.take("rate"), meter, "rate needs action meter")? {
            Some(v) => a.meter_rate = parse_rate(v)?,
            None if meter => return Err("meter needs rate"),
            None => {}
        }
        if let Some(v) = needs(f.take("burst"), meter, "burst needs action meter")? {
            a.meter_burst = parse_num(v, "bad burst")?;
            if a.meter_burst == 0 || a.meter_burst > 16 << 20 {
                return Err("burst out of range");
            }
        }
        if f.values.iter().any(Option::is_some) {
            return Err("unused key");
        }
        if !a.is_valid() {
            return Err("invalid action");
        }
        Ok(Self {
            id,
            prio,
            m: RuleMatch {
                dir,
                family,
                proto,
                src,
                dst,
                sport,
                dport,
                tunnel,
            },
            action: a,
        })
    }
}

/// An address of `family` for display.
pub(crate) struct Addr<'a>(pub(crate) &'a [u8; 16], pub(crate) u8);

impl fmt::Display for Addr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.1 == 4 {
            let a = self.0;
            write!(f, "{}", Ipv4Addr::new(a[0], a[1], a[2], a[3]))
        } else {
            write!(f, "{}", Ipv6Addr::from(*self.0))
        }
    }
}

struct Mac<'a>(&'a [u8; 6]);

impl fmt::Display for Mac<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            m[0], m[1], m[2], m[3], m[4], m[5]
        )
    }
}

/// An action in rule syntax: `action=... params`.
pub(crate) struct ActionText<'a>(pub(crate) &'a Action);

impl fmt::Display for ActionText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let a = self.0;
        f.write_str("action=")?;
        let mut first = true;
        let mut name = |f: &mut fmt::Formatter<'_>, n: &str| {
            let sep = if first { "" } else { "," };
            first = false;
            write!(f, "{sep}{n}")
        };
        if a.flags & !(action::ENCAP_IPV6) == 0 {
            name(f, "allow")?;
        }
        for (n, bits) in ACTIONS {
            let on = if n == "nat" {
                a.flags & action::NAT != 0
            } else {
                bits != 0 && a.flags & bits != 0
            };
            if on {
                name(f, n)?;
            }
        }
        if a.flags & (action::VXLAN_ENCAP | action::NVGRE_ENCAP) != 0 {
            let fam = if a.flags & action::ENCAP_IPV6 != 0 {
                6
            } else {
                4
            };
            let e = &a.encap;
            write!(
                f,
                " encap_id={} outer_smac={} outer_dmac={} outer_sip={} outer_dip={}",
                e.id,
                Mac(&e.smac),
                Mac(&e.dmac),
                Addr(&e.sip, fam),
                Addr(&e.dip, fam)
            )?;
        }
        // NAT addresses are of the packet's family; IPv4 leaves the rest 0.
        let fam = |addr: &[u8; 16]| {
            if addr[4..].iter().all(|&b| b == 0) {
                4
            } else {
                6
            }
        };
        if a.flags & action::NAT_SRC_IP != 0 {
            write!(f, " nat_sip={}", Addr(&a.nat_sip, fam(&a.nat_sip)))?;
        }
        if a.flags & action::NAT_DST_IP != 0 {
            write!(f, " nat_dip={}", Addr(&a.nat_dip, fam(&a.nat_dip)))?;
        }
        if a.flags & action::NAT_SRC_PORT != 0 {
            write!(f, " nat_sport={}", a.nat_sport)?;
        }
        if a.flags & action::NAT_DST_PORT != 0 {
            write!(f, " nat_dport={}", a.nat_dport)?;
        }
        if a.flags & action::VLAN_PUSH != 0 {
            write!(f, " vlan={}", a.vlan_tci)?;
        }
        if a.flags & action::METER != 0 {
            write!(f, " rate={}", a.meter_rate)?;
            if a.meter_burst != 0 {
                write!(f, " burst={}", a.meter_burst)?;
            }
        }
        Ok(())
    }
}

/// A protocol number by name where it has one.
pub(crate) struct Proto(pub(crate) u8);

impl fmt::Display for Proto {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            proto::TCP => f.write_str("tcp"),
            proto::UDP => f.write_str("udp"),
            proto::ICMP => f.write_str("icmp"),
            proto::ICMPV6 => f.write_str("icmpv6"),
            n => write!(f, "{n}"),
        }
    }
}

impl fmt::Display for Rule {
    /// The `add` arguments that make this rule.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = &self.m;
        write!(f, "id={} prio={} dir={}", self.id, self.prio, m.dir.name())?;
        if let Some(p) = m.proto {
            write!(f, " proto={}", Proto(p))?;
        }
        let fam = m.family.unwrap_or(4);
        if let Some(p) = &m.src {
            write!(f, " src={}/{}", Addr(&p.addr, fam), p.len)?;
        }
        if let Some(p) = &m.dst {
            write!(f, " dst={}/{}", Addr(&p.addr, fam), p.len)?;
        }
        if let Some(p) = m.sport {
            write!(f, " sport={p}")?;
        }
        if let Some(p) = m.dport {
            write!(f, " dport={p}")?;
        }
        if let Some(t) = m.tunnel {
            write!(f, " tunnel={t}")?;
        }
        write!(f, " {}", ActionText(&self.action))
    }
}
