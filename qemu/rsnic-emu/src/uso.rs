// SPDX-License-Identifier: GPL-2.0

//! UDP segmentation (USO): a datagram the host handed over with
//! [`TxDesc::USO`] cut into `mss`-byte datagrams, as Linux's
//! `SKB_GSO_UDP_L4` asks. Unlike a TCP train, the card cuts it at once:
//! UDP datagrams are never coalesced again on the far side, so nothing
//! is gained by carrying it whole.

use crate::frame::{network_layer, ETH_P_IPV4, ETH_P_IPV6};
use crate::hw::{TxDesc, TSO_MAX_SEGS};
use crate::offload::{fill_udp_checksum, fix_segment_ip_header};

/// IPPROTO_UDP.
const UDP: u8 = 17;
/// Bytes of a UDP header.
const UDP_HDR: usize = 8;

/// The datagrams a USO descriptor's frame becomes: each with the frame's
/// headers, its own IP length (and IPv4 ID, counting up, and header
/// checksum), UDP length and UDP checksum. `None` if the request does not
/// describe an unfragmented IPv4 or IPv6 UDP datagram with the UDP header
/// right behind the IP header and `hdr_len` ending with it, has no
/// payload, or needs more than [`TSO_MAX_SEGS`] datagrams: the card then
/// drops it.
pub fn segment_udp(frame: &[u8], desc: &TxDesc) -> Option<Vec<Vec<u8>>> {
    let (ethertype, l3) = network_layer(frame)?;
    let (l4, hdr_len, mss) = (
        usize::from(desc.csum_start),
        usize::from(desc.hdr_len),
        usize::from(desc.mss),
    );
    if mss == 0 || hdr_len != l4 + UDP_HDR || hdr_len >= frame.len() {
        return None;
    }
    // The IP header lies before `l4`, inside the frame (checked above),
    // before any of it is read.
    let ipv4 = match ethertype {
        ETH_P_IPV4 if l4 >= l3 + 20 => {
            let ihl = usize::from(frame[l3] & 0x0f) * 4;
            let frag = u16::from_be_bytes([frame[l3 + 6], frame[l3 + 7]]) & 0x3fff;
            (l3 + ihl == l4 && frame[l3 + 9] == UDP && frag == 0).then_some(true)?
        }
        ETH_P_IPV6 if l4 == l3 + 40 => (frame[l3 + 6] == UDP).then_some(false)?,
        _ => return None,
    };
    let payload = &frame[hdr_len..];
    if payload.len().div_ceil(mss) > TSO_MAX_SEGS as usize {
        return None;
    }
    let segments = payload
        .chunks(mss)
        .enumerate()
        .map(|(i, chunk)| {
            let mut seg = Vec::with_capacity(hdr_len + chunk.len());
            seg.extend_from_slice(&frame[..hdr_len]);
            seg.extend_from_slice(chunk);
            let l3_len = seg.len() - l3;
            fix_segment_ip_header(&mut seg, ipv4, (l3, l4), l3_len, i);
            // CAST: at most a 64 KiB chunk plus its header.
            let udp_len = (UDP_HDR + chunk.len()) as u16;
            seg[l4 + 4..l4 + 6].copy_from_slice(&udp_len.to_be_bytes());
            let filled = fill_udp_checksum(&mut seg);
            debug_assert!(filled, "headers checked above");
            seg
        })
        .collect();
    Some(segments)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::offload::{ones_complement_sum, udp_checksum, UdpCsum};

    /// An IPv4 or IPv6 UDP frame with `payload` as the stack hands a USO
    /// frame over (lengths of the whole, checksum field not final).
    pub(crate) fn uso_frame(v6: bool, payload: &[u8], mss: u16) -> (Vec<u8>, TxDesc) {
        let l4 = 14 + if v6 { 40 } else { 20 };
        let mut f = vec![0u8; l4 + UDP_HDR];
        if v6 {
            f[12..14].copy_from_slice(&ETH_P_IPV6.to_be_bytes());
            f[14] = 0x60;
            f[18..20].copy_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
            f[20] = UDP;
            f[22..38].copy_from_slice(&[0xfd, 0x99, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
            f[38..54].copy_from_slice(&[0xfd, 0x99, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        } else {
            f[12..14].copy_from_slice(&ETH_P_IPV4.to_be_bytes());
            f[14] = 0x45;
            f[16..18].copy_from_slice(&((28 + payload.len()) as u16).to_be_bytes());
            f[18..20].copy_from_slice(&0xfffeu16.to_be_bytes());
            f[14 + 9] = UDP;
            f[26..34].copy_from_slice(&[10, 99, 0, 1, 10, 99, 0, 2]);
        }
        f[l4..l4 + 4].copy_from_slice(&[0x30, 0x39, 0x1f, 0x90]);
        f.extend_from_slice(payload);
        let desc = TxDesc {
            flags: TxDesc::USO | TxDesc::CSUM,
            mss,
            csum_start: l4 as u16,
            csum_offset: 6,
            hdr_len: (l4 + UDP_HDR) as u16,
            ..Default::default()
        };
        (f, desc)
    }

    #[test]
    fn datagrams_verify_and_cover_the_payload() {
        let payload: Vec<u8> = (0..1001u32).map(|i| (i * 13) as u8).collect();
        for v6 in [false, true] {
            // A partial last datagram, and an exact split.
            for (mss, sizes) in [(400, &[400, 400, 201][..]), (143, &[143; 7][..])] {
                let (frame, desc) = uso_frame(v6, &payload, mss);
                let segs = segment_udp(&frame, &desc).expect("a UDP frame");
                let (l3, l4, hdr) = (14, usize::from(desc.csum_start), usize::from(desc.hdr_len));
                let got: Vec<usize> = segs.iter().map(|s| s.len() - hdr).collect();
                assert_eq!(got, sizes, "v6 {v6} mss {mss}");
                let mut joined = Vec::new();
                for (i, s) in segs.iter().enumerate() {
                    assert_eq!(
                        udp_checksum(s),
                        Some(UdpCsum::Good),
                        "datagram {i} (v6 {v6})"
                    );
                    let udp_len = usize::from(u16::from_be_bytes([s[l4 + 4], s[l4 + 5]]));
                    assert_eq!(udp_len, s.len() - l4);
                    if v6 {
                        assert_eq!(
                            usize::from(u16::from_be_bytes([s[18], s[19]])),
                            s.len() - 54
                        );
                    } else {
                        assert_eq!(
                            usize::from(u16::from_be_bytes([s[16], s[17]])),
                            s.len() - l3
                        );
                        assert_eq!(ones_complement_sum(&s[14..34], 0), 0xffff, "IPv4 header");
                        assert_eq!(
                            u16::from_be_bytes([s[18], s[19]]),
                            0xfffeu16.wrapping_add(i as u16)
                        );
                    }
                    assert_eq!(s[..14], frame[..14], "Ethernet header");
                    assert_eq!(s[l4..l4 + 4], frame[l4..l4 + 4], "ports");
                    joined.extend_from_slice(&s[hdr..]);
                }
                assert_eq!(joined, payload);
            }
        }
    }

    #[test]
    fn refuses_what_is_not_udp() {
        let (mut frame, desc) = uso_frame(false, &[1; 300], 100);
        let bad = [
            (TxDesc { mss: 0, ..desc }, "no segment size"),
            (
                TxDesc {
                    hdr_len: 10_000,
                    ..desc
                },
                "headers past the frame",
            ),
            (
                TxDesc {
                    hdr_len: desc.hdr_len + 20,
                    ..desc
                },
                "headers not ending with UDP's",
            ),
            (
                TxDesc {
                    csum_start: 20,
                    ..desc
                },
                "UDP not behind IP",
            ),
            (
                TxDesc { mss: 4, ..desc },
                "75 datagrams, above the card's limit",
            ),
        ];
        for (d, why) in bad {
            assert!(segment_udp(&frame, &d).is_none(), "{why}");
        }
        // Offsets that put the UDP header before the IP header's end, in
        // frames too short to hold one (a VLAN tag moves IP to 18).
        for len in [16, 20, 30] {
            let mut short = frame[..len].to_vec();
            for vlan in [false, true] {
                if vlan && len >= 18 {
                    short[12..14].copy_from_slice(&0x8100u16.to_be_bytes());
                    short[16..18].copy_from_slice(&ETH_P_IPV4.to_be_bytes());
                }
                for csum_start in [0, 4, 14] {
                    let d = TxDesc {
                        csum_start,
                        hdr_len: csum_start + 8,
                        ..desc
                    };
                    assert!(
                        segment_udp(&short, &d).is_none(),
                        "{len} bytes at {csum_start}"
                    );
                }
            }
        }
        let (empty, edesc) = uso_frame(true, &[], 100);
        assert!(segment_udp(&empty, &edesc).is_none(), "no payload");
        frame[20] = 0x20;
        assert!(segment_udp(&frame, &desc).is_none(), "a fragment");
        frame[20] = 0;
        frame[23] = 6;
        assert!(segment_udp(&frame, &desc).is_none(), "TCP");
    }
}
