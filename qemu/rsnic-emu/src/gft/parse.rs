// SPDX-License-Identifier: GPL-2.0

//! The GFT's parser: where a frame's headers are and what its flow key is.
//!
//! Ethernet with at most one 802.1Q tag, IPv4 (options skipped) or IPv6
//! (the fixed header; an extension header shows as its own protocol, with
//! no ports), then TCP, UDP, ICMP or ICMPv6. One level of encapsulation is
//! looked through: VXLAN (UDP port 4789) and NVGRE (GRE with a key,
//! carrying Ethernet); the key is then the inner packet's, with the VNI or
//! VSID as tunnel id. Offsets are kept so actions rewrite in place.

use crate::frame::{network_layer, ETH_P_IPV4, ETH_P_IPV6};
use crate::hw::gft::{proto, Direction, FlowKey, HOST_VPORT, VXLAN_PORT};

/// GRE protocol type of transparent Ethernet bridging (NVGRE).
const ETH_P_TEB: u16 = 0x6558;
/// GRE flags: key present.
const GRE_KEY: u16 = 0x2000;

/// Where one Ethernet/IP/L4 header stack sits in a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layers {
    /// Offset of the Ethernet header.
    pub eth: usize,
    /// Offset of the IP header.
    pub l3: usize,
    /// Offset of the L4 header.
    pub l4: usize,
    /// Whether the Ethernet header has an 802.1Q tag.
    pub vlan: bool,
    /// 4 or 6.
    pub ip_version: u8,
    /// IP protocol of the L4 header.
    pub proto: u8,
    /// Whether L4 is a first (or only) fragment with its header present.
    pub has_l4: bool,
}

/// A parsed IP frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parsed {
    /// The outermost headers.
    pub outer: Layers,
    /// The encapsulated headers, when the frame is VXLAN or NVGRE.
    pub inner: Option<Layers>,
    /// The VNI or VSID.
    pub tunnel: Option<u32>,
    /// The key of the (inner) packet.
    pub key: FlowKey,
    /// TCP flags of the (inner) packet; 0 if not TCP.
    pub tcp_flags: u8,
}

fn be16(b: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(off)?, *b.get(off + 1)?]))
}

/// Parses one Ethernet/IP/L4 stack starting at `eth`; `None` if it is not
/// IP or is truncated.
fn layers(frame: &[u8], eth: usize) -> Option<Layers> {
    let (ethertype, l3_rel) = network_layer(frame.get(eth..)?)?;
    let l3 = eth + l3_rel;
    let vlan = l3_rel == 18;
    let (ip_version, proto, l4, has_l4) = match ethertype {
        ETH_P_IPV4 => {
            let ihl = usize::from(frame.get(l3)? & 0x0f) * 4;
            if ihl < 20 || frame.len() < l3 + ihl {
                return None;
            }
            let frag_off = be16(frame, l3 + 6)? & 0x1fff;
            (4, frame[l3 + 9], l3 + ihl, frag_off == 0)
        }
        ETH_P_IPV6 => {
            if frame.len() < l3 + 40 {
                return None;
            }
            (6, frame[l3 + 6], l3 + 40, true)
        }
        _ => return None,
    };
    let l4_len = match proto {
        proto::TCP => 20,
        proto::UDP => 8,
        proto::ICMP | proto::ICMPV6 => 8,
        proto::GRE => 8,
        _ => 0,
    };
    Some(Layers {
        eth,
        l3,
        l4,
        vlan,
        ip_version,
        proto,
        has_l4: has_l4 && frame.len() >= l4 + l4_len,
    })
}

/// The addresses of a stack, 16 bytes each (IPv4 in the first 4).
pub(super) fn addresses(frame: &[u8], l: &Layers) -> ([u8; 16], [u8; 16]) {
    let (mut src, mut dst) = ([0u8; 16], [0u8; 16]);
    if l.ip_version == 4 {
        src[..4].copy_from_slice(&frame[l.l3 + 12..l.l3 + 16]);
        dst[..4].copy_from_slice(&frame[l.l3 + 16..l.l3 + 20]);
    } else {
        src.copy_from_slice(&frame[l.l3 + 8..l.l3 + 24]);
        dst.copy_from_slice(&frame[l.l3 + 24..l.l3 + 40]);
    }
    (src, dst)
}

/// The tunnel under `outer`, if it is one: its id and where the inner
/// Ethernet header starts.
fn tunnel(frame: &[u8], outer: &Layers) -> Option<(u32, usize)> {
    if !outer.has_l4 {
        return None;
    }
    match outer.proto {
        proto::UDP if be16(frame, outer.l4 + 2)? == VXLAN_PORT => {
            let vxlan = outer.l4 + 8;
            // The I flag says the VNI is valid.
            if frame.get(vxlan)? & 0x08 == 0 || frame.len() < vxlan + 8 {
                return None;
            }
            let vni = u32::from_be_bytes([0, frame[vxlan + 4], frame[vxlan + 5], frame[vxlan + 6]]);
            Some((vni, vxlan + 8))
        }
        proto::GRE => {
            let flags = be16(frame, outer.l4)?;
            if flags & GRE_KEY == 0 || be16(frame, outer.l4 + 2)? != ETH_P_TEB {
                return None;
            }
            // Checksum present (bit 15) puts 4 bytes before the key.
            let key_at = outer.l4 + 4 + if flags & 0x8000 != 0 { 4 } else { 0 };
            let key = frame.get(key_at..key_at + 4)?;
            let vsid = u32::from_be_bytes([0, key[0], key[1], key[2]]);
            Some((vsid, key_at + 4))
        }
        _ => None,
    }
}

/// The outermost Ethernet/IP/L4 stack of `frame` (what NAT rewrites),
/// without the tunnel, the inner stack or the key that [`parse`] finds.
pub fn outer_layers(frame: &[u8]) -> Option<Layers> {
    layers(frame, 0)
}

/// Parses `frame` as seen going `dir`; `None` for frames the GFT does not
/// handle (not IP, truncated), which pass unchanged.
pub fn parse(frame: &[u8], dir: Direction) -> Option<Parsed> {
    let outer = layers(frame, 0)?;
    let (inner, tunnel) = match tunnel(frame, &outer) {
        Some((id, eth)) => match layers(frame, eth) {
            Some(inner) => (Some(inner), Some(id)),
            None => (None, None),
        },
        None => (None, None),
    };
    let l = inner.unwrap_or(outer);
    let (src, dst) = addresses(frame, &l);
    let (mut sport, mut dport, mut tcp_flags) = (0, 0, 0);
    if l.has_l4 {
        match l.proto {
            proto::TCP | proto::UDP => {
                sport = be16(frame, l.l4)?;
                dport = be16(frame, l.l4 + 2)?;
                if l.proto == proto::TCP {
                    tcp_flags = frame[l.l4 + 13];
                }
            }
            // Echo request/reply (v4: 8/0, v6: 128/129): the identifier.
            proto::ICMP | proto::ICMPV6 if matches!(frame[l.l4], 0 | 8 | 128 | 129) => {
                sport = be16(frame, l.l4 + 4)?;
            }
            _ => {}
        }
    }
    Some(Parsed {
        outer,
        inner,
        tunnel,
        key: FlowKey {
            vport: HOST_VPORT,
            dir,
            tunnel,
            ip_version: l.ip_version,
            proto: l.proto,
            src,
            dst,
            sport,
            dport,
        },
        tcp_flags,
    })
}

/// The key and TCP flags of `frame` as [`parse`] finds them, without the
/// layers: what a lookup needs. Plain IPv4 TCP and UDP (no VLAN tag, no
/// IP options, not a fragment, not VXLAN), the bulk of the traffic, are
/// read straight from their fixed offsets; everything else is parsed.
pub fn flow_key(frame: &[u8], dir: Direction) -> Option<(FlowKey, u8)> {
    plain_ipv4(frame, dir).or_else(|| parse(frame, dir).map(|p| (p.key, p.tcp_flags)))
}

/// [`flow_key`] of an untagged IPv4 frame without options carrying a
/// whole TCP or UDP header (not VXLAN's); `None` for any other.
fn plain_ipv4(frame: &[u8], dir: Direction) -> Option<(FlowKey, u8)> {
    // Ethernet, IPv4 without options, UDP: 42 bytes.
    let h: &[u8; 42] = frame.get(..42)?.try_into().ok()?;
    let frag_off = u16::from_be_bytes([h[20], h[21]]) & 0x1fff;
    if h[12..14] != ETH_P_IPV4.to_be_bytes() || h[14] & 0x0f != 5 || frag_off != 0 {
        return None;
    }
    let (ip_proto, dport) = (h[23], u16::from_be_bytes([h[36], h[37]]));
    let tcp_flags = match ip_proto {
        proto::UDP if dport != VXLAN_PORT => 0,
        // A whole TCP header: 54 bytes.
        proto::TCP if frame.len() >= 54 => frame[47],
        _ => return None,
    };
    let (mut src, mut dst) = ([0u8; 16], [0u8; 16]);
    src[..4].copy_from_slice(&h[26..30]);
    dst[..4].copy_from_slice(&h[30..34]);
    let key = FlowKey {
        vport: HOST_VPORT,
        dir,
        tunnel: None,
        ip_version: 4,
        proto: ip_proto,
        src,
        dst,
        sport: u16::from_be_bytes([h[34], h[35]]),
        dport,
    };
    Some((key, tcp_flags))
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use etherparse::PacketBuilder;

    /// A UDP/IPv4 frame from 10.0.0.1:`sport` to 10.0.0.2:`dport`.
    pub fn udp4(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .udp(sport, dport)
            .write(&mut out, payload)
            .unwrap();
        out
    }

    /// A TCP/IPv6 frame with `flags` (SYN: syn only, else ACK|`fin`).
    pub fn tcp6(syn: bool, fin: bool) -> Vec<u8> {
        let mut out = Vec::new();
        let b = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
            .single_vlan(7.try_into().unwrap())
            .ipv6([0xfd; 16], [0xfe; 16], 64)
            .tcp(1000, 80, 1, 1000);
        let b = if syn { b.syn() } else { b.ack(5) };
        let b = if fin { b.fin() } else { b };
        b.write(&mut out, b"hello").unwrap();
        out
    }

    /// `inner` in VXLAN `vni` from 192.168.0.1 to 192.168.0.2 over IPv4.
    pub fn vxlan4(vni: u8, inner: &[u8]) -> Vec<u8> {
        let mut vx = vec![0x08, 0, 0, 0, 0, 0, vni, 0];
        vx.extend_from_slice(inner);
        let mut out = Vec::new();
        PacketBuilder::ethernet2([4; 6], [5; 6])
            .ipv4([192, 168, 0, 1], [192, 168, 0, 2], 64)
            .udp(49152, VXLAN_PORT)
            .write(&mut out, &vx)
            .unwrap();
        out
    }

    #[test]
    fn ipv4_udp_key() {
        let p = parse(&udp4(1234, 53, b"x"), Direction::Tx).unwrap();
        assert_eq!(p.key.ip_version, 4);
        assert_eq!(p.key.proto, proto::UDP);
        assert_eq!(&p.key.src[..4], &[10, 0, 0, 1]);
        assert_eq!(&p.key.dst[..4], &[10, 0, 0, 2]);
        assert_eq!((p.key.sport, p.key.dport), (1234, 53));
        assert_eq!(p.key.tunnel, None);
        assert_eq!(p.outer.l4, 34);
    }

    #[test]
    fn vlan_ipv6_tcp_flags() {
        let p = parse(&tcp6(true, false), Direction::Rx).unwrap();
        assert!(p.outer.vlan);
        assert_eq!(p.key.ip_version, 6);
        assert_eq!(p.key.src, [0xfd; 16]);
        assert_eq!(p.tcp_flags & 0x02, 0x02);
        let p = parse(&tcp6(false, true), Direction::Rx).unwrap();
        assert_eq!(p.tcp_flags & 0x03, 0x01);
    }

    #[test]
    fn vxlan_and_nvgre_inner_keys() {
        let inner = udp4(5000, 6000, b"payload");
        let out = vxlan4(42, &inner);
        let p = parse(&out, Direction::Rx).unwrap();
        assert_eq!(p.tunnel, Some(42));
        assert_eq!(p.key.tunnel, Some(42));
        assert_eq!((p.key.sport, p.key.dport), (5000, 6000));
        assert_eq!(p.inner.unwrap().eth, 14 + 20 + 8 + 8);

        let mut gre = vec![0x20, 0, 0x65, 0x58, 0, 0, 7, 0];
        gre.extend_from_slice(&inner);
        let mut out = Vec::new();
        PacketBuilder::ethernet2([4; 6], [5; 6])
            .ipv4([192, 168, 0, 1], [192, 168, 0, 2], 64)
            .write(&mut out, etherparse::IpNumber::GRE, &gre)
            .unwrap();
        let p = parse(&out, Direction::Rx).unwrap();
        assert_eq!(p.tunnel, Some(7));
        assert_eq!(&p.key.dst[..4], &[10, 0, 0, 2]);
    }

    #[test]
    fn the_short_way_finds_what_parse_finds() {
        let vxlan = vxlan4(42, &udp4(5000, 6000, b"payload"));
        let mut tcp4 = Vec::new();
        PacketBuilder::ethernet2([2; 6], [3; 6])
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .tcp(1000, 80, 1, 1000)
            .syn()
            .write(&mut tcp4, b"")
            .unwrap();
        let mut icmp = Vec::new();
        PacketBuilder::ethernet2([2; 6], [3; 6])
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .icmpv4_echo_request(7, 1)
            .write(&mut icmp, b"ping")
            .unwrap();
        let templates = [udp4(1234, 53, b"x"), tcp4, tcp6(true, false), vxlan, icmp];
        let mut rng = fastrand::Rng::with_seed(47);
        for t in &templates {
            for _ in 0..2000 {
                let mut f = t.clone();
                // A byte or two of the headers changed (ethertype, IHL,
                // fragment bits, protocol, ports...), and any length.
                for _ in 0..rng.usize(0..3) {
                    let at = rng.usize(..f.len().min(60));
                    f[at] = rng.u8(..);
                }
                f.truncate(rng.usize(..=f.len()));
                for dir in [Direction::Tx, Direction::Rx] {
                    assert_eq!(
                        flow_key(&f, dir),
                        parse(&f, dir).map(|p| (p.key, p.tcp_flags)),
                        "{f:02x?}"
                    );
                }
            }
        }
        assert!(plain_ipv4(&templates[0], Direction::Tx).is_some());
        assert!(plain_ipv4(&templates[1], Direction::Tx).is_some());
        assert!(plain_ipv4(&templates[3], Direction::Tx).is_none());
    }

    #[test]
    fn non_ip_and_truncated_frames_are_not_parsed() {
        let mut arp = vec![0u8; 42];
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        assert_eq!(parse(&arp, Direction::Tx), None);
        let f = udp4(1, 2, b"");
        assert_eq!(parse(&f[..30], Direction::Tx), None);
    }
}
