// SPDX-License-Identifier: GPL-2.0

//! Header transpositions: the packet rewrites a GFT action performs, in
//! the order [`crate::hw::gft::action`] documents (the meter is the
//! engine's, before these).

use super::parse::{flow_key, outer_layers, parse, Layers};
use crate::frame::{ETH_P_IPV4, ETH_P_IPV6};
use crate::hw::gft::{action, proto, Action, Direction, VXLAN_PORT};
use crate::offload::{fill_udp_checksum, ipv4_header_checksum, ones_complement_sum};

/// 802.1Q TPID.
const ETH_P_8021Q: u16 = 0x8100;

/// Why an action could not be applied; the card drops the packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransformError {
    /// Decap of a packet that is not tunnelled.
    NotTunnelled,
    /// NAT or VLAN pop of a packet without the headers for it.
    NoHeader,
    /// Building the outer headers failed (too long).
    Encap,
}

/// The checksum `csum` after bytes `old` of its coverage became `new`
/// (RFC 1624, equation 3: HC' = ~(~HC + ~m + m')); both even-length.
fn csum_update(csum: u16, old: &[u8], new: &[u8]) -> u16 {
    // CAST: the sums are folded to 16 bits.
    let m = ones_complement_sum(old, 0) as u16;
    let mut sum = u32::from(!csum) + u32::from(!m) + ones_complement_sum(new, 0);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An L4 checksum field: its offset, and whether it is UDP's (which
/// sends a computed zero as all ones).
#[derive(Clone, Copy)]
struct L4Csum {
    at: usize,
    udp: bool,
}

/// The L4 checksum of `l`, if the pseudo-header (`pseudo`) or the ports
/// are in its coverage.
fn l4_csum_at(frame: &[u8], l: &Layers, pseudo: bool) -> Option<L4Csum> {
    if !l.has_l4 {
        return None;
    }
    let at = match l.proto {
        proto::TCP => l.l4 + 16,
        // A zero UDP checksum over IPv4 means "none".
        proto::UDP if l.ip_version == 6 || frame[l.l4 + 6..l.l4 + 8] != [0, 0] => l.l4 + 6,
        proto::ICMPV6 if pseudo => l.l4 + 2,
        _ => return None,
    };
    Some(L4Csum {
        at,
        udp: l.proto == proto::UDP,
    })
}

/// The longest field NAT rewrites: an IPv6 address.
const MAX_REWRITE: usize = 16;

/// Replaces the bytes at `at` with `new` (an address or a port, at most
/// [`MAX_REWRITE`] bytes), fixing the IP header checksum (`ip_csum`) and
/// the L4 one (`l4_csum`) that cover them. No allocation: this runs per
/// packet.
fn rewrite(frame: &mut [u8], at: usize, new: &[u8], ip_csum: Option<usize>, l4: Option<L4Csum>) {
    let mut saved = [0u8; MAX_REWRITE];
    let old = &mut saved[..new.len()];
    old.copy_from_slice(&frame[at..at + new.len()]);
    let old = &*old;
    let fix = |frame: &mut [u8], c: usize| {
        let v = u16::from_be_bytes([frame[c], frame[c + 1]]);
        let fixed = csum_update(v, old, new);
        frame[c..c + 2].copy_from_slice(&fixed.to_be_bytes());
        fixed
    };
    if let Some(c) = ip_csum {
        fix(frame, c);
    }
    if let Some(l4) = l4 {
        if fix(frame, l4.at) == 0 && l4.udp {
            frame[l4.at..l4.at + 2].copy_from_slice(&[0xff, 0xff]);
        }
    }
    frame[at..at + new.len()].copy_from_slice(new);
}

/// NAT on the outermost headers of `frame`.
fn nat(frame: &mut [u8], a: &Action) -> Result<(), TransformError> {
    let l = outer_layers(frame).ok_or(TransformError::NoHeader)?;
    let (addr_len, src_at, dst_at, ip_csum) = if l.ip_version == 4 {
        (4, l.l3 + 12, l.l3 + 16, Some(l.l3 + 10))
    } else {
        (16, l.l3 + 8, l.l3 + 24, None)
    };
    let pseudo_csum = l4_csum_at(frame, &l, true);
    if a.flags & action::NAT_SRC_IP != 0 {
        rewrite(frame, src_at, &a.nat_sip[..addr_len], ip_csum, pseudo_csum);
    }
    if a.flags & action::NAT_DST_IP != 0 {
        rewrite(frame, dst_at, &a.nat_dip[..addr_len], ip_csum, pseudo_csum);
    }
    let has_ports = l.has_l4 && matches!(l.proto, proto::TCP | proto::UDP);
    if a.flags & (action::NAT_SRC_PORT | action::NAT_DST_PORT) != 0 && !has_ports {
        return Err(TransformError::NoHeader);
    }
    let port_csum = l4_csum_at(frame, &l, false);
    if a.flags & action::NAT_SRC_PORT != 0 {
        rewrite(frame, l.l4, &a.nat_sport.to_be_bytes(), None, port_csum);
    }
    if a.flags & action::NAT_DST_PORT != 0 {
        rewrite(frame, l.l4 + 2, &a.nat_dport.to_be_bytes(), None, port_csum);
    }
    Ok(())
}

/// A 16-bit hash of the inner flow, for the outer UDP source port (so the
/// underlay can spread tunnelled flows as it would plain ones), when the
/// caller has none ([`apply`]).
fn flow_entropy(inner: &[u8]) -> u16 {
    let key = flow_key(inner, Direction::Tx).map_or([0u8; 48], |(k, _)| k.to_bytes());
    fold_entropy(u64::from(crc32fast::hash(&key)))
}

/// Folds a 64-bit flow hash into the 16 bits of a tunnel's entropy.
pub fn fold_entropy(h: u64) -> u16 {
    // CAST: the low 16 bits of the folded hash.
    (h ^ (h >> 16) ^ (h >> 32) ^ (h >> 48)) as u16
}

/// Outer Ethernet + IPv6 + UDP + VXLAN: the most a tunnel adds.
const MAX_ENCAP_HEADERS: usize = 14 + 40 + 8 + 8;

/// Wraps `frame` in the outer headers of `a`: Ethernet, IPv4 or IPv6
/// (TTL 64, IPv4 with DF and id 0), then UDP to the VXLAN port (source
/// port from `entropy`, or a hash of the inner flow) and the VXLAN
/// header, or GRE with the NVGRE key. The outer UDP checksum is zero over
/// IPv4 (RFC 7348 section 5, and Linux's vxlan default) and computed over
/// IPv6 ([`fill_udp_checksum`], as the card's TX offload; RFC 6935's zero
/// checksum needs the receiver's consent). The headers are written on the
/// stack and the frame moved up in its own buffer: no allocation when
/// the buffer has room.
fn encap(mut frame: Vec<u8>, a: &Action, entropy: Option<u16>) -> Result<Vec<u8>, TransformError> {
    let e = &a.encap;
    let v6 = a.flags & action::ENCAP_IPV6 != 0;
    let vxlan = a.flags & action::VXLAN_ENCAP != 0;
    let ip_len = if v6 { 40 } else { 20 };
    // What follows the IP header: UDP and VXLAN, or GRE with its key.
    let l4_len = if vxlan { 16 } else { 8 } + frame.len();
    let l4_len16 = u16::try_from(l4_len).map_err(|_| TransformError::Encap)?;
    let ip_total = u16::try_from(ip_len + l4_len).map_err(|_| TransformError::Encap)?;
    let next = if vxlan { proto::UDP } else { proto::GRE };
    let mut h = [0u8; MAX_ENCAP_HEADERS];
    let mut at = 0;
    let mut put = |bytes: &[u8]| {
        h[at..at + bytes.len()].copy_from_slice(bytes);
        at += bytes.len();
    };
    put(&e.dmac);
    put(&e.smac);
    let l3 = 14;
    if v6 {
        put(&ETH_P_IPV6.to_be_bytes());
        put(&[0x60, 0, 0, 0]);
        put(&l4_len16.to_be_bytes());
        put(&[next, 64]);
        put(&e.sip);
        put(&e.dip);
    } else {
        put(&ETH_P_IPV4.to_be_bytes());
        put(&[0x45, 0]);
        put(&ip_total.to_be_bytes());
        // Id 0, DF (RFC 7348 section 4.3: the underlay does not fragment).
        put(&[0, 0, 0x40, 0, 64, next, 0, 0]);
        put(&e.sip[..4]);
        put(&e.dip[..4]);
    }
    if vxlan {
        // Ephemeral range, as RFC 7348 recommends.
        let entropy = entropy.unwrap_or_else(|| flow_entropy(&frame));
        put(&(49152 | (entropy & 0x3fff)).to_be_bytes());
        put(&VXLAN_PORT.to_be_bytes());
        put(&l4_len16.to_be_bytes());
        put(&[0, 0, 0x08, 0, 0, 0]);
    } else {
        // FlowID 0: RFC 7637 makes it optional, and a plain GRE peer
        // (Linux gretap with key VSID << 8) then matches the key exactly.
        put(&[0x20, 0, 0x65, 0x58]);
    }
    put(&(e.id << 8).to_be_bytes());
    if !v6 {
        let csum = ipv4_header_checksum(&h[l3..l3 + 20]);
        h[l3 + 10..l3 + 12].copy_from_slice(&csum.to_be_bytes());
    }
    let inner_len = frame.len();
    frame.resize(inner_len + at, 0);
    frame.copy_within(..inner_len, at);
    frame[..at].copy_from_slice(&h[..at]);
    if vxlan && v6 && !fill_udp_checksum(&mut frame) {
        // Not reached: the frame just built is unfragmented UDP.
        return Err(TransformError::Encap);
    }
    Ok(frame)
}

/// Applies `a`'s rewrites to `frame` (not drop or meter, which the engine
/// handles). Returns the packet to send on. `entropy`, if given, is the
/// flow's hash for a VXLAN header's source port ([`fold_entropy`]); else
/// the inner flow is hashed.
pub fn apply(
    mut frame: Vec<u8>,
    a: &Action,
    entropy: Option<u16>,
) -> Result<Vec<u8>, TransformError> {
    if a.flags & action::DECAP != 0 {
        let inner = parse(&frame, Direction::Rx)
            .and_then(|p| p.inner)
            .ok_or(TransformError::NotTunnelled)?;
        frame.drain(..inner.eth);
    }
    if a.flags & action::VLAN_POP != 0 {
        let tagged = frame.len() >= 18 && frame[12..14] == ETH_P_8021Q.to_be_bytes();
        if !tagged {
            return Err(TransformError::NoHeader);
        }
        frame.drain(12..16);
    }
    if a.flags & action::NAT != 0 {
        nat(&mut frame, a)?;
    }
    if a.flags & action::VLAN_PUSH != 0 {
        if frame.len() < 14 {
            return Err(TransformError::NoHeader);
        }
        let mut tag = ETH_P_8021Q.to_be_bytes().to_vec();
        tag.extend_from_slice(&a.vlan_tci.to_be_bytes());
        frame.splice(12..12, tag);
    }
    if a.flags & (action::VXLAN_ENCAP | action::NVGRE_ENCAP) != 0 {
        frame = encap(frame, a, entropy)?;
    }
    Ok(frame)
}

#[cfg(test)]
mod tests {
    use super::super::parse::tests::{tcp6, udp4};
    use super::*;
    use etherparse::{PacketHeaders, TransportHeader};

    fn apply(frame: Vec<u8>, a: &Action) -> Result<Vec<u8>, TransformError> {
        super::apply(frame, a, None)
    }

    fn checksums_ok(frame: &[u8]) -> bool {
        let h = PacketHeaders::from_ethernet_slice(frame).unwrap();
        let payload = h.payload.slice();
        match (h.net.unwrap(), h.transport.unwrap()) {
            (etherparse::NetHeaders::Ipv4(ip, _), TransportHeader::Tcp(t)) => {
                ip.header_checksum == ip.calc_header_checksum()
                    && t.checksum == t.calc_checksum_ipv4(&ip, payload).unwrap()
            }
            (etherparse::NetHeaders::Ipv4(ip, _), TransportHeader::Udp(u)) => {
                ip.header_checksum == ip.calc_header_checksum()
                    && u.checksum == u.calc_checksum_ipv4(&ip, payload).unwrap()
            }
            (etherparse::NetHeaders::Ipv6(ip, _), TransportHeader::Tcp(t)) => {
                t.checksum == t.calc_checksum_ipv6(&ip, payload).unwrap()
            }
            _ => false,
        }
    }

    #[test]
    fn nat_rewrites_addresses_and_ports_with_valid_checksums() {
        let a = Action {
            flags: action::NAT_DST_IP | action::NAT_DST_PORT | action::NAT_SRC_IP,
            nat_dip: [10, 9, 9, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            nat_sip: [172, 16, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            nat_dport: 8080,
            ..Default::default()
        };
        let f = apply(udp4(1000, 53, b"some data!"), &a).unwrap();
        let p = parse(&f, Direction::Tx).unwrap();
        assert_eq!(&p.key.dst[..4], &[10, 9, 9, 9]);
        assert_eq!(&p.key.src[..4], &[172, 16, 0, 1]);
        assert_eq!(p.key.dport, 8080);
        assert!(checksums_ok(&f));

        let mut a6 = a;
        a6.flags = action::NAT_SRC_IP | action::NAT_SRC_PORT;
        a6.nat_sip = [0x20; 16];
        a6.nat_sport = 4444;
        let f = apply(tcp6(true, false), &a6).unwrap();
        let p = parse(&f, Direction::Tx).unwrap();
        assert_eq!((p.key.src, p.key.sport), ([0x20; 16], 4444));
        assert!(checksums_ok(&f));
    }

    /// The outer headers as etherparse builds them (how the card built
    /// them before it wrote them itself): the reference.
    fn encap_by_etherparse(inner: &[u8], a: &Action) -> Vec<u8> {
        use etherparse::{IpNumber, PacketBuilder};
        let e = &a.encap;
        let builder = PacketBuilder::ethernet2(e.smac, e.dmac);
        let v6 = a.flags & action::ENCAP_IPV6 != 0;
        let (sip4, dip4): ([u8; 4], [u8; 4]) = (
            e.sip[..4].try_into().unwrap(),
            e.dip[..4].try_into().unwrap(),
        );
        let mut out = Vec::new();
        let mut payload = Vec::new();
        if a.flags & action::VXLAN_ENCAP != 0 {
            payload.extend_from_slice(&[0x08, 0, 0, 0]);
            payload.extend_from_slice(&(e.id << 8).to_be_bytes());
            payload.extend_from_slice(inner);
            let sport = 49152 | (flow_entropy(inner) & 0x3fff);
            if v6 {
                builder
                    .ipv6(e.sip, e.dip, 64)
                    .udp(sport, VXLAN_PORT)
                    .write(&mut out, &payload)
            } else {
                let built = builder
                    .ipv4(sip4, dip4, 64)
                    .udp(sport, VXLAN_PORT)
                    .write(&mut out, &payload);
                // No outer UDP checksum over IPv4.
                out[14 + 20 + 6..14 + 20 + 8].fill(0);
                built
            }
        } else {
            payload.extend_from_slice(&[0x20, 0, 0x65, 0x58]);
            payload.extend_from_slice(&(e.id << 8).to_be_bytes());
            payload.extend_from_slice(inner);
            if v6 {
                builder
                    .ipv6(e.sip, e.dip, 64)
                    .write(&mut out, IpNumber::GRE, &payload)
            } else {
                builder
                    .ipv4(sip4, dip4, 64)
                    .write(&mut out, IpNumber::GRE, &payload)
            }
        }
        .unwrap();
        out
    }

    #[test]
    fn encap_builds_what_etherparse_builds() {
        let mut a = Action::default();
        a.encap.smac = [2, 0, 0, 0, 0, 1];
        a.encap.dmac = [2, 0, 0, 0, 0, 2];
        // No zero word in the first 4 bytes (the IPv4 addresses): a
        // checksum that skipped one would still come out right.
        a.encap.sip = [10, 1, 2, 3, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        a.encap.dip = [10, 4, 5, 6, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
        a.encap.id = 0x00ab_cdef;
        for payload in [&b"even payload"[..], b"odd payload", b""] {
            for inner in [udp4(1234, 80, payload), tcp6(true, false)] {
                for flags in [
                    action::VXLAN_ENCAP,
                    action::VXLAN_ENCAP | action::ENCAP_IPV6,
                    action::NVGRE_ENCAP,
                    action::NVGRE_ENCAP | action::ENCAP_IPV6,
                ] {
                    a.flags = flags;
                    let want = encap_by_etherparse(&inner, &a);
                    assert_eq!(
                        encap(inner.clone(), &a, None).unwrap(),
                        want,
                        "flags {flags:#x}"
                    );
                }
            }
        }
        // Too long for the outer IP header: refused, as etherparse did.
        a.flags = action::VXLAN_ENCAP;
        assert_eq!(encap(vec![0; 65535], &a, None), Err(TransformError::Encap));
    }

    #[test]
    fn vxlan_encap_then_decap_is_identity() {
        let inner = udp4(5000, 6000, b"inner payload");
        let mut a = Action {
            flags: action::VXLAN_ENCAP,
            ..Default::default()
        };
        a.encap.id = 4242;
        a.encap.sip[..4].copy_from_slice(&[192, 168, 1, 1]);
        a.encap.dip[..4].copy_from_slice(&[192, 168, 1, 2]);
        let outer = apply(inner.clone(), &a).unwrap();
        let p = parse(&outer, Direction::Rx).unwrap();
        assert_eq!(p.tunnel, Some(4242));
        assert_eq!(outer.len(), inner.len() + 50);
        let decap = Action {
            flags: action::DECAP,
            ..Default::default()
        };
        assert_eq!(apply(outer, &decap).unwrap(), inner);
        a.flags = action::NVGRE_ENCAP | action::ENCAP_IPV6;
        let outer = apply(inner.clone(), &a).unwrap();
        assert_eq!(parse(&outer, Direction::Rx).unwrap().tunnel, Some(4242));
        assert_eq!(apply(outer, &decap).unwrap(), inner);
        assert_eq!(
            apply(inner, &decap),
            Err(TransformError::NotTunnelled),
            "nothing to decap"
        );
    }

    #[test]
    fn vlan_push_then_pop() {
        let f = udp4(1, 2, b"abc");
        let push = Action {
            flags: action::VLAN_PUSH,
            vlan_tci: 100,
            ..Default::default()
        };
        let tagged = apply(f.clone(), &push).unwrap();
        assert!(parse(&tagged, Direction::Tx).unwrap().outer.vlan);
        let pop = Action {
            flags: action::VLAN_POP,
            ..Default::default()
        };
        assert_eq!(apply(tagged, &pop).unwrap(), f);
        assert_eq!(apply(f, &pop), Err(TransformError::NoHeader));
    }
}
