// SPDX-License-Identifier: GPL-2.0

//! TCP segmentation inside a tunnel: a TSO frame with
//! [`TxDesc::TUNNEL`], as Linux's `SKB_GSO_UDP_TUNNEL[_CSUM]`,
//! `SKB_GSO_GRE[_CSUM]`, `SKB_GSO_IPXIP4` and `SKB_GSO_IPXIP6` ask.
//!
//! The inner TCP frame is cut as a [`TcpTrain`] would cut it (inner IP
//! length, ID and checksum, TCP sequence, flags and checksum); then each
//! segment's outer headers are fixed: outer IP length (and IPv4 ID,
//! counting up, and header checksum), outer UDP length and, if asked, its
//! checksum, and a GRE checksum where the GRE header carries one. The
//! card does not need to know the tunnel header between the outer UDP or
//! GRE header and the inner IP header (VXLAN, GENEVE, an inner Ethernet
//! header): it copies it. Like USO, the frame is cut at once: the far side
//! sees ordinary tunnelled segments.

use crate::frame::{network_layer, ETH_P_IPV4, ETH_P_IPV6};
use crate::hw::TxDesc;
use crate::offload::{fix_segment_ip_header, ones_complement_sum, set_udp_checksum, train_shape};
use crate::train::TcpTrain;

/// IPPROTO_IPIP: IPv4 right behind the outer IP header.
const IPIP: u8 = 4;
/// IPPROTO_IPV6: IPv6 right behind the outer IP header.
const IPV6_IN_IP: u8 = 41;
/// IPPROTO_UDP.
const UDP: u8 = 17;
/// IPPROTO_GRE.
const GRE: u8 = 47;
/// IPv6 extension headers a tunnel's outer header may carry (hop-by-hop,
/// routing, destination options: ip6tnl's and ip6gre's encapsulation
/// limit is a destination option).
const IPV6_EXT: [u8; 3] = [0, 43, 60];
/// GRE's checksum-present flag (first byte).
const GRE_CSUM: u8 = 0x80;

/// What sits between the outer IP header and the inner IP header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Carrier {
    /// A UDP header at this offset (VXLAN, GENEVE, ... behind it).
    Udp(usize),
    /// A GRE header at this offset, with a checksum or not.
    Gre(usize, bool),
    /// Nothing: IP in IP.
    Ip,
}

/// The outer headers of a tunnelled frame.
#[derive(Clone, Copy, Debug)]
struct Outer {
    ethertype: u16,
    /// Outer IP header offset, and where its fixed part ends (IPv4: the
    /// header checksum covers `l3..ip_end`).
    l3: usize,
    ip_end: usize,
    carrier: Carrier,
    /// The inner IP header's kind (`ETH_P_IPV4` or `ETH_P_IPV6`).
    inner: u16,
}

impl Outer {
    /// Reads the outer headers of `frame` up to `inner_l3`, trusting
    /// nothing: `None` unless an unfragmented IPv4 or IPv6 header leads
    /// through UDP, GRE (version 0) or nothing to `inner_l3`, an IPv4 or
    /// IPv6 header of the version an IP-in-IP header says.
    fn parse(frame: &[u8], inner_l3: usize) -> Option<Self> {
        let (ethertype, l3) = network_layer(frame)?;
        let headers = frame.get(..inner_l3)?;
        let (ip_end, mut proto, mut next) = match ethertype {
            ETH_P_IPV4 => {
                let ihl = usize::from(headers.get(l3)? & 0x0f) * 4;
                let frag = u16::from_be_bytes([*headers.get(l3 + 6)?, *headers.get(l3 + 7)?]);
                if ihl < 20 || frag & 0x3fff != 0 {
                    return None;
                }
                (l3 + ihl, *headers.get(l3 + 9)?, l3 + ihl)
            }
            ETH_P_IPV6 => (l3 + 40, *headers.get(l3 + 6)?, l3 + 40),
            _ => return None,
        };
        if ethertype == ETH_P_IPV6 {
            while IPV6_EXT.contains(&proto) {
                let len = (usize::from(*headers.get(next + 1)?) + 1) * 8;
                proto = *headers.get(next)?;
                next += len;
            }
        }
        let inner = match frame.get(inner_l3)? >> 4 {
            4 => ETH_P_IPV4,
            6 => ETH_P_IPV6,
            _ => return None,
        };
        let carrier = match proto {
            UDP if next + 8 <= inner_l3 => Carrier::Udp(next),
            GRE if next + 4 <= inner_l3 => {
                let (flags, version) = (headers[next], headers[next + 1] & 0x07);
                if version != 0 || (flags & GRE_CSUM != 0 && next + 8 > inner_l3) {
                    return None;
                }
                Carrier::Gre(next, flags & GRE_CSUM != 0)
            }
            IPIP if next == inner_l3 && inner == ETH_P_IPV4 => Carrier::Ip,
            IPV6_IN_IP if next == inner_l3 && inner == ETH_P_IPV6 => Carrier::Ip,
            _ => return None,
        };
        Some(Self {
            ethertype,
            l3,
            ip_end,
            carrier,
            inner,
        })
    }

    /// Fixes segment `i`'s outer headers (its inner ones final).
    fn fix(&self, seg: &mut [u8], i: usize, udp_csum: bool) {
        let l3_len = seg.len() - self.l3;
        fix_segment_ip_header(
            seg,
            self.ethertype == ETH_P_IPV4,
            (self.l3, self.ip_end),
            l3_len,
            i,
        );
        match self.carrier {
            Carrier::Udp(l4) => {
                let len = seg.len() - l4;
                // CAST: a segment is at most 64 KiB.
                seg[l4 + 4..l4 + 6].copy_from_slice(&(len as u16).to_be_bytes());
                seg[l4 + 6..l4 + 8].fill(0);
                if udp_csum {
                    let end = seg.len();
                    let done = set_udp_checksum(seg, self.ethertype, self.l3, l4, end);
                    debug_assert!(done, "outer headers checked");
                }
            }
            Carrier::Gre(gre, true) => {
                seg[gre + 4..gre + 6].fill(0);
                let csum = !(ones_complement_sum(&seg[gre..], 0) as u16);
                seg[gre + 4..gre + 6].copy_from_slice(&csum.to_be_bytes());
            }
            Carrier::Gre(_, false) | Carrier::Ip => {}
        }
    }
}

/// The segments a tunnelled TSO descriptor's frame becomes, each a frame
/// of its own with inner and outer headers fixed. `None` if the outer
/// headers do not lead to an IPv4 or IPv6 TCP frame at `inner_l3` (see
/// [`Outer::parse`] and [`TcpTrain::at`]) or it needs more than
/// [`crate::hw::TSO_MAX_SEGS`] segments: the card then drops it.
pub fn segment_tunnel(frame: &[u8], desc: &TxDesc) -> Option<Vec<Vec<u8>>> {
    let inner_l3 = usize::from(desc.inner_l3);
    let outer = Outer::parse(frame, inner_l3)?;
    let train = TcpTrain::at(frame, train_shape(desc), outer.inner, inner_l3)?;
    let udp_csum = desc.flags & TxDesc::OUTER_UDP_CSUM != 0;
    Some(
        (0..train.count())
            .map(|i| {
                let mut seg = train.segment(i);
                outer.fix(&mut seg, i, udp_csum);
                seg
            })
            .collect(),
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::offload::{ipv4_header_checksum, l4_checksum_ok, pseudo_header_sum};

    /// Whether an IPv4 header (checksum field included) verifies.
    fn ipv4_ok(header: &[u8]) -> bool {
        ones_complement_sum(header, 0) == 0xffff
    }

    /// Outer headers for one tunnel kind, ending where the inner IP
    /// header starts.
    fn outer(v6: bool, carrier: &str) -> (Vec<u8>, u16) {
        let (proto, tail): (u8, Vec<u8>) = match carrier {
            // UDP to 4789, then an 8-byte VXLAN header and an inner
            // Ethernet header.
            "vxlan" => {
                let mut t = vec![0x12, 0x34, 0x12, 0xb5, 0, 0, 0, 0];
                t.extend_from_slice(&[0x08, 0, 0, 0, 0, 0, 100, 0]);
                t.extend_from_slice(&[2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00]);
                (UDP, t)
            }
            "gre" => (GRE, vec![0, 0, 0x08, 0x00]),
            "gre_csum" => (GRE, vec![GRE_CSUM, 0, 0x08, 0x00, 0, 0, 0, 0]),
            _ => (IPIP, Vec::new()),
        };
        let mut f = vec![0u8; 14];
        if v6 {
            f[12..14].copy_from_slice(&ETH_P_IPV6.to_be_bytes());
            let mut ip = vec![0u8; 40];
            ip[0] = 0x60;
            // A destination option (encapsulation limit), as ip6tnl adds.
            ip[6] = 60;
            ip[7] = 64;
            ip[8..24].copy_from_slice(&[0xfd, 0x98, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
            ip[24..40].copy_from_slice(&[0xfd, 0x98, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
            f.extend_from_slice(&ip);
            f.extend_from_slice(&[proto, 0, 4, 1, 4, 1, 1, 0]);
        } else {
            f[12..14].copy_from_slice(&ETH_P_IPV4.to_be_bytes());
            let mut ip = vec![0u8; 20];
            ip[0] = 0x45;
            ip[4..6].copy_from_slice(&0x1000u16.to_be_bytes());
            ip[8] = 64;
            ip[9] = proto;
            ip[12..20].copy_from_slice(&[10, 98, 0, 1, 10, 98, 0, 2]);
            f.extend_from_slice(&ip);
        }
        f.extend_from_slice(&tail);
        let inner_l3 = f.len() as u16;
        (f, inner_l3)
    }

    /// A tunnelled TCP frame as the stack hands it over: outer lengths of
    /// the whole, inner TCP checksum field not final.
    pub(crate) fn tunnelled(v6: bool, carrier: &str, payload: &[u8]) -> (Vec<u8>, TxDesc) {
        let (mut f, inner_l3) = outer(v6, carrier);
        let l3 = usize::from(inner_l3);
        let mut ip = vec![0u8; 20];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&((40 + payload.len()) as u16).to_be_bytes());
        ip[4..6].copy_from_slice(&0xfff0u16.to_be_bytes());
        ip[8] = 64;
        ip[9] = 6;
        ip[12..20].copy_from_slice(&[192, 0, 2, 1, 192, 0, 2, 2]);
        f.extend_from_slice(&ip);
        let mut tcp = vec![0u8; 20];
        tcp[0..4].copy_from_slice(&[0x30, 0x39, 0x1f, 0x90]);
        tcp[4..8].copy_from_slice(&0xffff_ff00u32.to_be_bytes());
        tcp[12] = 0x50;
        tcp[13] = 0x18;
        f.extend_from_slice(&tcp);
        f.extend_from_slice(payload);
        let total = f.len();
        if v6 {
            f[18..20].copy_from_slice(&((total - 54) as u16).to_be_bytes());
        } else {
            f[16..18].copy_from_slice(&((total - 14) as u16).to_be_bytes());
            let c = ipv4_header_checksum(&f[14..34]);
            f[24..26].copy_from_slice(&c.to_be_bytes());
        }
        let desc = TxDesc {
            flags: TxDesc::TSO | TxDesc::TUNNEL | TxDesc::CSUM,
            mss: 300,
            csum_start: (l3 + 20) as u16,
            csum_offset: 16,
            hdr_len: (l3 + 40) as u16,
            inner_l3,
            ..Default::default()
        };
        (f, desc)
    }

    /// The inner frame of a segment, behind a made-up Ethernet header.
    fn inner_frame(seg: &[u8], inner_l3: usize) -> Vec<u8> {
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&ETH_P_IPV4.to_be_bytes());
        f.extend_from_slice(&seg[inner_l3..]);
        f
    }

    #[test]
    fn every_tunnel_kind_cuts_into_verifying_segments() {
        let payload: Vec<u8> = (0..700u32).map(|i| (i * 11) as u8).collect();
        for v6 in [false, true] {
            for carrier in ["vxlan", "gre", "gre_csum", "ipip"] {
                for udp_csum in [false, true] {
                    let what = format!("v6 {v6} {carrier} udp_csum {udp_csum}");
                    let (frame, mut desc) = tunnelled(v6, carrier, &payload);
                    if udp_csum {
                        desc.flags |= TxDesc::OUTER_UDP_CSUM;
                    }
                    let segs = segment_tunnel(&frame, &desc).expect(&what);
                    let l3 = usize::from(desc.inner_l3);
                    let sizes: Vec<usize> = segs.iter().map(|s| s.len() - l3 - 40).collect();
                    assert_eq!(sizes, [300, 300, 100], "{what}");
                    let mut joined = Vec::new();
                    for (i, s) in segs.iter().enumerate() {
                        let inner = inner_frame(s, l3);
                        assert!(l4_checksum_ok(&inner), "{what}: inner TCP of {i}");
                        assert!(ipv4_ok(&inner[14..34]), "{what}: inner IPv4 of {i}");
                        let id = u16::from_be_bytes([inner[18], inner[19]]);
                        assert_eq!(id, 0xfff0 + i as u16, "{what}");
                        let seq = u32::from_be_bytes(inner[38..42].try_into().unwrap());
                        assert_eq!(seq, 0xffff_ff00u32.wrapping_add(300 * i as u32));
                        let psh = inner[47] & 0x08 != 0;
                        assert_eq!(psh, i == 2, "{what}: PSH on the last only");
                        if v6 {
                            let len = u16::from_be_bytes([s[18], s[19]]);
                            assert_eq!(usize::from(len), s.len() - 54, "{what}");
                        } else {
                            let len = u16::from_be_bytes([s[16], s[17]]);
                            assert_eq!(usize::from(len), s.len() - 14, "{what}");
                            assert!(ipv4_ok(&s[14..34]), "{what}: outer IPv4 of {i}");
                            let id = u16::from_be_bytes([s[18], s[19]]);
                            assert_eq!(id, 0x1000 + i as u16, "{what}");
                        }
                        let start = if v6 { 62 } else { 34 };
                        match carrier {
                            "vxlan" => {
                                let len = u16::from_be_bytes([s[start + 4], s[start + 5]]);
                                assert_eq!(usize::from(len), s.len() - start, "{what}");
                                let field = u16::from_be_bytes([s[start + 6], s[start + 7]]);
                                if udp_csum {
                                    let pseudo = pseudo_header_sum(
                                        s,
                                        if v6 { ETH_P_IPV6 } else { ETH_P_IPV4 },
                                        14,
                                        UDP,
                                        s.len() - start,
                                    )
                                    .unwrap();
                                    let sum = ones_complement_sum(&s[start..], pseudo);
                                    assert_eq!(sum, 0xffff, "{what}: outer UDP of {i}");
                                } else {
                                    assert_eq!(field, 0, "{what}");
                                }
                            }
                            "gre_csum" => {
                                let sum = ones_complement_sum(&s[start..], 0);
                                assert_eq!(sum, 0xffff, "{what}: GRE checksum of {i}");
                            }
                            _ => {}
                        }
                        joined.extend_from_slice(&s[l3 + 40..]);
                    }
                    assert_eq!(joined, payload, "{what}");
                }
            }
        }
    }

    #[test]
    fn inner_ipv6_in_ipv6() {
        let (mut f, inner_l3) = outer(true, "ipip");
        // The next header after the destination option: IPv6.
        f[54] = IPV6_IN_IP;
        let l3 = usize::from(inner_l3);
        let payload = vec![7u8; 250];
        let mut ip = vec![0u8; 40];
        ip[0] = 0x60;
        ip[4..6].copy_from_slice(&((20 + payload.len()) as u16).to_be_bytes());
        ip[6] = 6;
        ip[7] = 64;
        ip[8..40].copy_from_slice(&[0x20; 32]);
        f.extend_from_slice(&ip);
        let mut tcp = vec![0u8; 20];
        tcp[12] = 0x50;
        f.extend_from_slice(&tcp);
        f.extend_from_slice(&payload);
        let desc = TxDesc {
            flags: TxDesc::TSO | TxDesc::TUNNEL | TxDesc::CSUM,
            mss: 100,
            csum_start: (l3 + 40) as u16,
            csum_offset: 16,
            hdr_len: (l3 + 60) as u16,
            inner_l3,
            ..Default::default()
        };
        let segs = segment_tunnel(&f, &desc).expect("IPv6 in IPv6");
        assert_eq!(segs.len(), 3);
        for s in &segs {
            let mut inner = vec![0u8; 12];
            inner.extend_from_slice(&ETH_P_IPV6.to_be_bytes());
            inner.extend_from_slice(&s[l3..]);
            assert!(l4_checksum_ok(&inner));
            let len = u16::from_be_bytes([inner[18], inner[19]]);
            assert_eq!(usize::from(len), inner.len() - 54);
        }
    }

    #[test]
    fn what_is_not_a_tunnel_is_refused() {
        let payload = vec![1u8; 500];
        let (frame, desc) = tunnelled(false, "vxlan", &payload);
        let refused = |f: &[u8], d: &TxDesc| segment_tunnel(f, d).is_none();
        assert!(!refused(&frame, &desc));
        // The inner header beyond the frame, inside the UDP header, at
        // the outer header.
        for inner_l3 in [u16::MAX, 38, 14, frame.len() as u16] {
            assert!(
                refused(&frame, &TxDesc { inner_l3, ..desc }),
                "inner_l3 {inner_l3}"
            );
        }
        // An outer protocol that is no tunnel (TCP), and a fragment.
        let mut f = frame.clone();
        f[23] = 6;
        assert!(refused(&f, &desc));
        let mut f = frame.clone();
        f[20] = 0x20;
        assert!(refused(&f, &desc));
        // IPIP whose inner header is IPv6.
        let (mut f, mut d) = tunnelled(false, "ipip", &payload);
        f[34] = 0x65;
        d.hdr_len = 200;
        assert!(refused(&f, &d));
        // GRE version 1 (PPTP).
        let (mut f, d) = tunnelled(false, "gre", &payload);
        f[35] = 1;
        assert!(refused(&f, &d));
        // An inner frame that is not TCP, or needs too many segments.
        let mut f = frame.clone();
        let l3 = usize::from(desc.inner_l3);
        f[l3 + 9] = 17;
        assert!(refused(&f, &desc));
        assert!(refused(&frame, &TxDesc { mss: 7, ..desc }));
        // A truncated IPv6 extension header chain.
        let (f, d) = tunnelled(true, "gre", &payload);
        assert!(refused(&f[..60], &TxDesc { inner_l3: 59, ..d }));
    }
}
