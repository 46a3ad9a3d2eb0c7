// SPDX-License-Identifier: GPL-2.0

//! RoCEv2 frames: Ethernet, IPv4 or IPv6 and UDP around the transport
//! headers of [`super::wire`], built with etherparse and sealed with the
//! ICRC; and the reverse, for frames from the wire.

use etherparse::{
    IpDscp, IpEcn, IpHeaders, IpNumber, Ipv4Header, Ipv6FlowLabel, Ipv6Header, NetSlice,
    PacketBuilder, SlicedPacket, TransportSlice,
};

use super::wire;
use crate::frame::{network_layer, ETH_P_IPV4, ETH_P_IPV6};
use crate::hw::rdma::{Gid, ROCE_V2_UDP_PORT};
use crate::offload::{self, UdpCsum};

/// Both ends of a RoCEv2 packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Route {
    /// Source MAC (the card's).
    pub smac: [u8; 6],
    /// Destination MAC.
    pub dmac: [u8; 6],
    /// Source GID (one of the card's).
    pub sgid: Gid,
    /// Destination GID.
    pub dgid: Gid,
    /// TOS / traffic class.
    pub traffic_class: u8,
    /// TTL / hop limit (0 means 64).
    pub hop_limit: u8,
    /// IPv6 flow label (20 bits).
    pub flow_label: u32,
    /// UDP source port (RoCEv2 uses it for ECMP entropy).
    pub sport: u16,
}

/// The UDP source port of a QP's packets: RoCEv2 wants 0xC000 and up,
/// varied per flow (the kernel's `rdma_flow_label_to_udp_sport` idea).
pub fn udp_sport(flow: u32) -> u16 {
    let f = flow ^ (flow >> 14);
    0xc000 | (f & 0x3fff) as u16
}

/// Wraps `transport` (BTH through ICRC, as [`wire::encode`] makes it) in
/// Ethernet/IP/UDP and fills in the ICRC. IPv4 if both GIDs are
/// IPv4-mapped, else IPv6.
pub fn build(route: &Route, transport: &[u8]) -> Vec<u8> {
    let hop = if route.hop_limit == 0 {
        64
    } else {
        route.hop_limit
    };
    let ip = match (route.sgid.ipv4(), route.dgid.ipv4()) {
        (Some(src), Some(dst)) => {
            let mut h = Ipv4Header::new(0, hop, IpNumber::UDP, src, dst).unwrap_or_default();
            h.dscp = IpDscp::try_new(route.traffic_class >> 2).unwrap_or_default();
            h.ecn = IpEcn::try_new(route.traffic_class & 3).unwrap_or(IpEcn::NotEct);
            h.dont_fragment = true;
            IpHeaders::Ipv4(h, Default::default())
        }
        _ => IpHeaders::Ipv6(
            Ipv6Header {
                traffic_class: route.traffic_class,
                flow_label: Ipv6FlowLabel::try_new(route.flow_label & 0xf_ffff).unwrap_or_default(),
                payload_length: 0,
                next_header: IpNumber::UDP,
                hop_limit: hop,
                source: route.sgid.0,
                destination: route.dgid.0,
            },
            Default::default(),
        ),
    };
    let ethertype = match ip {
        IpHeaders::Ipv4(..) => ETH_P_IPV4,
        IpHeaders::Ipv6(..) => ETH_P_IPV6,
    };
    let builder = PacketBuilder::ethernet2(route.smac, route.dmac)
        .ip(ip)
        .udp(route.sport, ROCE_V2_UDP_PORT);
    let mut out = Vec::with_capacity(builder.size(transport.len()));
    // Writing into a Vec cannot fail; a payload too big for IP is the
    // caller's bug (the engine segments to the path MTU).
    let _ = builder.write(&mut out, transport);
    // The ICRC first: the UDP checksum covers it.
    let _ = wire::seal(ethertype, &mut out[14..]);
    offload::fill_udp_checksum(&mut out);
    out
}

/// A RoCEv2 frame from the wire, checked (UDP port 4791, ICRC correct).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Received<'a> {
    /// Sender's MAC.
    pub smac: [u8; 6],
    /// Destination MAC.
    pub dmac: [u8; 6],
    /// Sender's GID.
    pub sgid: Gid,
    /// Destination GID.
    pub dgid: Gid,
    /// IPv4 (else IPv6).
    pub ipv4: bool,
    /// The IP header as received (a UD receive copies it to the GRH area).
    pub ip_header: &'a [u8],
    /// The UDP payload: BTH through ICRC.
    pub transport: &'a [u8],
}

/// Why a frame is not a RoCEv2 packet for the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RejectReason {
    /// Not IP/UDP to port 4791: not for the engine at all.
    NotRoce,
    /// RoCEv2 whose UDP checksum is there but wrong: dropped and counted,
    /// as the Linux UDP stack does (a zero checksum is accepted: rxe sends
    /// none, and its receive socket accepts none, on IPv4 and IPv6 alike).
    BadUdpChecksum {
        /// Its destination GID (the frame may be another endpoint's).
        dgid: Gid,
    },
    /// RoCEv2, but the ICRC is wrong: dropped and counted.
    BadIcrc {
        /// Its destination GID.
        dgid: Gid,
    },
}

/// Whether `frame` may be RoCEv2, read from its first headers alone: a
/// frame this says no to is certainly not (TCP, UDP to another port, not
/// IP), so the card hands it to the NIC without the engine's lock or a
/// full parse. Anything it cannot tell (IPv4 fragments, IPv6 extension
/// headers) may be.
pub fn may_be_roce(frame: &[u8]) -> bool {
    let Some((ethertype, l3)) = network_layer(frame) else {
        return false;
    };
    let udp_dport = |l4: usize| {
        frame
            .get(l4 + 2..l4 + 4)
            .map(|p| u16::from_be_bytes([p[0], p[1]]))
    };
    match ethertype {
        ETH_P_IPV4 => {
            let Some(h) = frame.get(l3..l3 + 20) else {
                return false;
            };
            let first_fragment = u16::from_be_bytes([h[6], h[7]]) & 0x1fff == 0;
            let l4 = l3 + usize::from(h[0] & 0x0f) * 4;
            h[9] == 17 && (!first_fragment || udp_dport(l4).is_none_or(|p| p == ROCE_V2_UDP_PORT))
        }
        ETH_P_IPV6 => match frame.get(l3 + 6) {
            Some(6) | None => false,
            Some(17) => udp_dport(l3 + 40).is_none_or(|p| p == ROCE_V2_UDP_PORT),
            Some(_) => true,
        },
        // Tags network_layer does not see through.
        0x8100 | 0x88a8 => true,
        _ => false,
    }
}

/// Parses a frame; `Err(NotRoce)` for everything the engine does not take.
pub fn parse(frame: &[u8]) -> Result<Received<'_>, RejectReason> {
    use RejectReason::*;
    let sliced = SlicedPacket::from_ethernet(frame).map_err(|_| NotRoce)?;
    let Some(TransportSlice::Udp(udp)) = &sliced.transport else {
        return Err(NotRoce);
    };
    if udp.destination_port() != ROCE_V2_UDP_PORT {
        return Err(NotRoce);
    }
    let link = sliced.link.as_ref().ok_or(NotRoce)?.to_header();
    let eth = link.and_then(|l| l.ethernet2()).ok_or(NotRoce)?;
    // Offsets into `frame` of a slice etherparse handed out.
    let offset = |part: &[u8]| part.as_ptr() as usize - frame.as_ptr() as usize;
    let (sgid, dgid, ipv4, ip_start, ip_hlen, ethertype) = match &sliced.net {
        Some(NetSlice::Ipv4(ip)) => {
            let h = ip.header();
            (
                Gid::from_ipv4(h.source()),
                Gid::from_ipv4(h.destination()),
                true,
                offset(h.slice()),
                h.slice().len(),
                ETH_P_IPV4,
            )
        }
        Some(NetSlice::Ipv6(ip)) => {
            let h = ip.header();
            (
                Gid(h.source()),
                Gid(h.destination()),
                false,
                offset(h.slice()),
                h.slice().len(),
                ETH_P_IPV6,
            )
        }
        _ => return Err(NotRoce),
    };
    if offload::udp_checksum(frame) == Some(UdpCsum::Bad) {
        return Err(BadUdpChecksum { dgid });
    }
    let payload_start = offset(udp.payload());
    let payload_len = udp.payload().len();
    // The ICRC covers the IP packet from its header to the end.
    let ip_packet = frame
        .get(ip_start..payload_start + payload_len)
        .ok_or(NotRoce)?;
    if !wire::icrc_ok(ethertype, ip_packet) {
        return Err(BadIcrc { dgid });
    }
    Ok(Received {
        smac: eth.source,
        dmac: eth.destination,
        sgid,
        dgid,
        ipv4,
        ip_header: &frame[ip_start..ip_start + ip_hlen],
        transport: &frame[payload_start..payload_start + payload_len],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rdma::wire::{Bth, Deth, Opcode, Packet};

    fn ud_packet(payload: &[u8]) -> Vec<u8> {
        let bth = Bth {
            pkey: 0xffff,
            dest_qp: 1,
            psn: 7,
            ..Bth::default()
        };
        let deth = Deth {
            qkey: 0x8001_0000,
            src_qp: 1,
        };
        wire::encode(&Packet {
            deth: Some(deth),
            payload,
            ..Packet::bare(bth, Opcode::UdSendOnly)
        })
    }

    #[test]
    fn build_then_parse_ipv4_and_ipv6() {
        for (sgid, dgid) in [
            (
                Gid::from_ipv4([10, 99, 0, 1]),
                Gid::from_ipv4([10, 99, 0, 2]),
            ),
            (
                Gid([0xfd, 0x99, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]),
                Gid([0xfd, 0x99, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]),
            ),
        ] {
            let route = Route {
                smac: [2, 0, 0, 0, 0, 1],
                dmac: [2, 0, 0, 0, 0, 2],
                sgid,
                dgid,
                traffic_class: 0x68,
                hop_limit: 0,
                flow_label: 5,
                sport: udp_sport(0x1234),
            };
            let frame = build(&route, &ud_packet(b"mad!"));
            assert!(may_be_roce(&frame));
            let got = parse(&frame).unwrap();
            assert_eq!((got.sgid, got.dgid), (sgid, dgid));
            assert_eq!(got.smac, route.smac);
            assert_eq!(got.ipv4, sgid.ipv4().is_some());
            let pkt = Packet::parse(got.transport).unwrap();
            assert_eq!(pkt.payload, b"mad!");
            assert_eq!(pkt.deth.unwrap().qkey, 0x8001_0000);
            // The UDP checksum verifies, independently of the builder.
            assert_eq!(offload::udp_checksum(&frame), Some(UdpCsum::Good));
            let (l4, len) = if got.ipv4 {
                (34, frame.len() - 34)
            } else {
                (54, frame.len() - 54)
            };
            assert_eq!(rfc768_sum(&frame, got.ipv4, l4, len), 0xffff);
            // One flipped payload bit: the UDP checksum catches it first;
            // without a checksum, the ICRC does.
            let mut bad = frame.clone();
            let n = bad.len();
            bad[n - 6] ^= 1;
            assert_eq!(parse(&bad), Err(RejectReason::BadUdpChecksum { dgid }));
            bad[l4 + 6..l4 + 8].copy_from_slice(&[0, 0]);
            assert_eq!(parse(&bad), Err(RejectReason::BadIcrc { dgid }));
        }
    }

    /// The RFC 768 sum of a frame's UDP datagram and pseudo-header, written
    /// out here independently of the card's code: 0xffff if it verifies.
    fn rfc768_sum(frame: &[u8], ipv4: bool, l4: usize, len: usize) -> u16 {
        let mut words: Vec<u8> = Vec::new();
        if ipv4 {
            words.extend_from_slice(&frame[26..34]);
            words.extend_from_slice(&[0, 17]);
            words.extend_from_slice(&(len as u16).to_be_bytes());
        } else {
            words.extend_from_slice(&frame[22..54]);
            words.extend_from_slice(&(len as u32).to_be_bytes());
            words.extend_from_slice(&[0, 0, 0, 17]);
        }
        words.extend_from_slice(&frame[l4..l4 + len]);
        if words.len() % 2 == 1 {
            words.push(0);
        }
        let mut sum: u64 = words
            .chunks(2)
            .map(|w| u64::from(u16::from_be_bytes([w[0], w[1]])))
            .sum();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        sum as u16
    }

    #[test]
    fn sent_checksums_are_never_zero() {
        // A payload chosen so that its datagram sums to zero would be sent
        // with all ones; whatever the payload, never zero.
        for n in 0..64u8 {
            let route = Route {
                sgid: Gid::from_ipv4([10, 0, 0, 1]),
                dgid: Gid::from_ipv4([10, 0, 0, n]),
                ..Route::default()
            };
            let frame = build(&route, &ud_packet(&[n; 5]));
            assert_ne!(&frame[40..42], &[0, 0]);
            assert_eq!(offload::udp_checksum(&frame), Some(UdpCsum::Good));
        }
    }

    #[test]
    fn other_traffic_is_not_roce() {
        let frame = {
            let b = PacketBuilder::ethernet2([2; 6], [3; 6])
                .ipv4([1, 1, 1, 1], [2, 2, 2, 2], 64)
                .udp(1, 4789);
            let mut out = Vec::new();
            b.write(&mut out, &[0; 32]).unwrap();
            out
        };
        assert_eq!(parse(&frame), Err(RejectReason::NotRoce));
        assert_eq!(parse(&[0; 10]), Err(RejectReason::NotRoce));
        assert!(!may_be_roce(&frame), "UDP to another port");
        assert!(!may_be_roce(&[0; 10]));
        let (tcp, _) = crate::offload::tests::tcp_frame(false, &[0; 8], 0x10);
        assert!(!may_be_roce(&tcp));
        let (tcp6, _) = crate::offload::tests::tcp_frame(true, &[0; 8], 0x10);
        assert!(!may_be_roce(&tcp6));
    }
}
