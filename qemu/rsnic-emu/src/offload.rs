// SPDX-License-Identifier: GPL-2.0

//! Offloads the card performs on frames.

use crate::frame::{network_layer, ETH_P_IPV4, ETH_P_IPV6};
use crate::hw::TxDesc;
use crate::train::{TcpTrain, TrainShape};

/// Ones'-complement sum of `data` (RFC 1071), not yet inverted.
pub(crate) fn ones_complement_sum(data: &[u8], mut sum: u32) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        sum += u32::from(*last) << 8;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum
}

/// The IPv4 header checksum of `header` with its checksum field as it
/// is: 0 when the stored checksum is right, the value to store when the
/// field is zero.
pub fn ipv4_header_checksum(header: &[u8]) -> u16 {
    // CAST: the sum is folded to 16 bits.
    !(ones_complement_sum(header, 0) as u16)
}

/// Test frames: fills in the TCP checksum of an untagged IPv4 or IPv6
/// frame.
#[cfg(test)]
pub fn fill_tcp_checksum(frame: &mut [u8]) {
    let (ethertype, l3) = network_layer(frame).expect("Ethernet");
    let (l4, end) = if ethertype == ETH_P_IPV4 {
        let total = usize::from(u16::from_be_bytes([frame[l3 + 2], frame[l3 + 3]]));
        (l3 + usize::from(frame[l3] & 0x0f) * 4, l3 + total)
    } else {
        let payload = usize::from(u16::from_be_bytes([frame[l3 + 4], frame[l3 + 5]]));
        (l3 + 40, l3 + 40 + payload)
    };
    assert!(set_tcp_checksum(frame, ethertype, l3, l4, end));
}

/// Stores the TCP checksum of the segment from `l4` to `end` of `frame`,
/// whose IP header (of `ethertype`) is at `l3`. False (frame left as it
/// is) if those do not fit the frame.
pub fn set_tcp_checksum(
    frame: &mut [u8],
    ethertype: u16,
    l3: usize,
    l4: usize,
    end: usize,
) -> bool {
    if l4 + 20 > end || end > frame.len() {
        return false;
    }
    frame[l4 + 16..l4 + 18].fill(0);
    let Some(sum) = pseudo_header_sum(frame, ethertype, l3, 6, end - l4) else {
        return false;
    };
    // CAST: folded to 16 bits.
    let sum = !(ones_complement_sum(&frame[l4..end], sum) as u16);
    frame[l4 + 16..l4 + 18].copy_from_slice(&sum.to_be_bytes());
    true
}

/// TX checksum insertion, as Linux's `CHECKSUM_PARTIAL` asks: the field at
/// `csum_start + csum_offset` holds the pseudo-header sum; the card sums
/// from `csum_start` to the end and stores the complement there. Returns
/// false (frame left as is) if the offsets do not fit the frame.
pub fn insert_checksum(frame: &mut [u8], desc: &TxDesc) -> bool {
    let start = usize::from(desc.csum_start);
    let field = start + usize::from(desc.csum_offset);
    if start >= frame.len() || field + 2 > frame.len() {
        return false;
    }
    let sum = ones_complement_sum(&frame[start..], 0);
    let mut csum = !(sum as u16);
    // UDP sends a checksum that computes to zero as all ones (RFC 768):
    // zero means "no checksum". The field at offset 6 of the L4 header
    // is UDP's (TCP's is at 16).
    if csum == 0 && desc.csum_offset == UDP_CSUM_OFFSET {
        csum = 0xffff;
    }
    frame[field..field + 2].copy_from_slice(&csum.to_be_bytes());
    true
}

/// Where UDP's checksum sits in its header.
const UDP_CSUM_OFFSET: u16 = 6;

/// The UDP checksum of a frame, as a receiver judges it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UdpCsum {
    /// Zero: the sender computed none.
    Absent,
    /// It verifies.
    Good,
    /// It does not: the datagram was damaged (or the sender is wrong).
    Bad,
}

/// The UDP header of an IPv4 or IPv6 frame: (ethertype, IP header offset,
/// UDP offset, UDP length), if the frame is unfragmented UDP.
fn udp_layer(frame: &[u8]) -> Option<(u16, usize, usize, usize)> {
    let (ethertype, l3) = network_layer(frame)?;
    let (l4, len) = match ethertype {
        ETH_P_IPV4 => {
            let ihl = usize::from(frame.get(l3)? & 0x0f) * 4;
            let total = usize::from(u16::from_be_bytes([
                *frame.get(l3 + 2)?,
                *frame.get(l3 + 3)?,
            ]));
            let fragmented =
                u16::from_be_bytes([*frame.get(l3 + 6)?, *frame.get(l3 + 7)?]) & 0x3fff != 0;
            if fragmented || *frame.get(l3 + 9)? != 17 || ihl < 20 || total < ihl + 8 {
                return None;
            }
            (l3 + ihl, total - ihl)
        }
        ETH_P_IPV6 => {
            let payload = usize::from(u16::from_be_bytes([
                *frame.get(l3 + 4)?,
                *frame.get(l3 + 5)?,
            ]));
            if *frame.get(l3 + 6)? != 17 || payload < 8 {
                return None;
            }
            (l3 + 40, payload)
        }
        _ => return None,
    };
    (l4 + len <= frame.len()).then_some((ethertype, l3, l4, len))
}

/// Fixes the IP header (at `l3`, ending at `l4`) of segment `i` cut from
/// a larger IPv4 or IPv6 packet, `hdr` starting as a copy of that
/// packet's headers: the length field for `l3_len` bytes from `l3`, and
/// for IPv4 the ID (the packet's plus `i`, as Linux's segmentation
/// counts it) and the header checksum.
pub(crate) fn fix_segment_ip_header(
    hdr: &mut [u8],
    ipv4: bool,
    (l3, l4): (usize, usize),
    l3_len: usize,
    i: usize,
) {
    // CAST: lengths of at most 64 KiB plus headers, as the IP length
    // fields carry them; i below TSO_MAX_SEGS.
    if ipv4 {
        let ip_id = u16::from_be_bytes([hdr[l3 + 4], hdr[l3 + 5]]);
        hdr[l3 + 2..l3 + 4].copy_from_slice(&(l3_len as u16).to_be_bytes());
        hdr[l3 + 4..l3 + 6].copy_from_slice(&ip_id.wrapping_add(i as u16).to_be_bytes());
        hdr[l3 + 10..l3 + 12].fill(0);
        let csum = ipv4_header_checksum(&hdr[l3..l4]);
        hdr[l3 + 10..l3 + 12].copy_from_slice(&csum.to_be_bytes());
    } else {
        hdr[l3 + 4..l3 + 6].copy_from_slice(&((l3_len - 40) as u16).to_be_bytes());
    }
}

/// Computes and stores the UDP checksum of a UDP frame (all ones if it
/// computes to zero). False if the frame is not unfragmented UDP.
pub fn fill_udp_checksum(frame: &mut [u8]) -> bool {
    let Some((ethertype, l3, l4, len)) = udp_layer(frame) else {
        return false;
    };
    set_udp_checksum(frame, ethertype, l3, l4, l4 + len)
}

/// Stores the UDP checksum (all ones if it computes to zero) of the
/// datagram from `l4` to `end` of `frame`, whose IP header (of
/// `ethertype`) is at `l3`. False (frame left as it is) if those do not
/// fit the frame.
pub(crate) fn set_udp_checksum(
    frame: &mut [u8],
    ethertype: u16,
    l3: usize,
    l4: usize,
    end: usize,
) -> bool {
    if l4 + 8 > end || end > frame.len() {
        return false;
    }
    let Some(pseudo) = pseudo_header_sum(frame, ethertype, l3, 17, end - l4) else {
        return false;
    };
    frame[l4 + 6..l4 + 8].fill(0);
    // CAST: folded to 16 bits.
    let csum = match !(ones_complement_sum(&frame[l4..end], pseudo) as u16) {
        0 => 0xffff,
        c => c,
    };
    frame[l4 + 6..l4 + 8].copy_from_slice(&csum.to_be_bytes());
    true
}

/// The UDP checksum of a UDP frame as a receiver judges it; `None` if the
/// frame is not unfragmented UDP.
pub fn udp_checksum(frame: &[u8]) -> Option<UdpCsum> {
    let (ethertype, l3, l4, len) = udp_layer(frame)?;
    if frame[l4 + 6..l4 + 8] == [0, 0] {
        return Some(UdpCsum::Absent);
    }
    let pseudo = pseudo_header_sum(frame, ethertype, l3, 17, len)?;
    Some(
        if ones_complement_sum(&frame[l4..l4 + len], pseudo) == 0xffff {
            UdpCsum::Good
        } else {
            UdpCsum::Bad
        },
    )
}

/// TCP segmentation (TSO) of the frame a TSO descriptor describes (see
/// [`TcpTrain`]): each segment with its headers and TCP checksum fixed
/// up. `None` if the request does not describe a TCP frame or needs more
/// than [`crate::hw::TSO_MAX_SEGS`] segments (the card then drops it).
pub fn segment_tcp(frame: &[u8], desc: &TxDesc) -> Option<Vec<Vec<u8>>> {
    Some(
        TcpTrain::new(frame, train_shape(desc))?
            .segments()
            .collect(),
    )
}

/// The shape of the train a TSO descriptor describes.
pub fn train_shape(desc: &TxDesc) -> TrainShape {
    TrainShape {
        l4: desc.csum_start,
        hdr_len: desc.hdr_len,
        mss: desc.mss,
    }
}

/// Ones'-complement sum of the IPv4 or IPv6 pseudo-header of an L4
/// segment of `l4_len` bytes and protocol `proto`, the IP header at `l3`.
pub(crate) fn pseudo_header_sum(
    frame: &[u8],
    ethertype: u16,
    l3: usize,
    proto: u8,
    l4_len: usize,
) -> Option<u32> {
    let sum = match ethertype {
        ETH_P_IPV4 => {
            let sum = ones_complement_sum(frame.get(l3 + 12..l3 + 20)?, 0);
            let sum = ones_complement_sum(&[0, proto], sum);
            ones_complement_sum(&u16::try_from(l4_len).ok()?.to_be_bytes(), sum)
        }
        ETH_P_IPV6 => {
            let sum = ones_complement_sum(frame.get(l3 + 8..l3 + 40)?, 0);
            let sum = ones_complement_sum(&u32::try_from(l4_len).ok()?.to_be_bytes(), sum);
            ones_complement_sum(&[0, 0, 0, proto], sum)
        }
        _ => return None,
    };
    Some(sum)
}

/// Whether a received frame is IPv4 or IPv6 (optionally VLAN-tagged)
/// carrying TCP or UDP whose checksum verifies. Fragments, UDP without a
/// checksum and anything malformed are "not verified" (false), never an
/// error: the stack then checks in software.
pub fn l4_checksum_ok(frame: &[u8]) -> bool {
    verify_l4(frame).unwrap_or(false)
}

fn verify_l4(frame: &[u8]) -> Option<bool> {
    let (ethertype, l3) = network_layer(frame)?;
    let (proto, l4, end, pseudo) = match ethertype {
        ETH_P_IPV4 => {
            let ihl = usize::from(frame.get(l3)? & 0x0f) * 4;
            let total = usize::from(u16::from_be_bytes([
                *frame.get(l3 + 2)?,
                *frame.get(l3 + 3)?,
            ]));
            let fragmented =
                u16::from_be_bytes([*frame.get(l3 + 6)?, *frame.get(l3 + 7)?]) & 0x3fff != 0;
            if fragmented || ihl < 20 || total < ihl {
                return Some(false);
            }
            let proto = *frame.get(l3 + 9)?;
            let sum = pseudo_header_sum(frame, ethertype, l3, proto, total - ihl)?;
            (proto, l3 + ihl, l3 + total, sum)
        }
        ETH_P_IPV6 => {
            let payload = usize::from(u16::from_be_bytes([
                *frame.get(l3 + 4)?,
                *frame.get(l3 + 5)?,
            ]));
            let proto = *frame.get(l3 + 6)?;
            let sum = pseudo_header_sum(frame, ethertype, l3, proto, payload)?;
            (proto, l3 + 40, l3 + 40 + payload, sum)
        }
        _ => return Some(false),
    };
    let segment = frame.get(l4..end)?;
    match proto {
        6 if segment.len() >= 20 => {}
        // IPv4 UDP may leave the checksum out (zero): nothing to verify.
        17 if segment.len() >= 8 && (ethertype == ETH_P_IPV6 || segment[6..8] != [0, 0]) => {}
        _ => return Some(false),
    }
    Some(ones_complement_sum(segment, pseudo) == 0xffff)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// An IPv4/UDP frame with a correct checksum (computed by the same
    /// TX offload the card implements, seeded with the pseudo-header sum).
    fn udp4_frame(payload: &[u8]) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 20 + 8];
        f[12] = 0x08;
        f[14] = 0x45;
        let total = (20 + 8 + payload.len()) as u16;
        f[16..18].copy_from_slice(&total.to_be_bytes());
        f[14 + 9] = 17;
        f[26..34].copy_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
        f[34..36].copy_from_slice(&1234u16.to_be_bytes());
        f[36..38].copy_from_slice(&5678u16.to_be_bytes());
        f[38..40].copy_from_slice(&(8 + payload.len() as u16).to_be_bytes());
        f.extend_from_slice(payload);
        let mut seed = ones_complement_sum(&f[26..34], 0);
        seed = ones_complement_sum(&[0, 17], seed);
        seed = ones_complement_sum(&(8 + payload.len() as u16).to_be_bytes(), seed);
        f[40..42].copy_from_slice(&(seed as u16).to_be_bytes());
        insert_checksum(
            &mut f,
            &TxDesc {
                csum_start: 34,
                csum_offset: 6,
                ..Default::default()
            },
        );
        f
    }

    #[test]
    fn rx_checksum_verifies_tx_checksum() {
        let mut f = udp4_frame(b"some payload!");
        assert!(l4_checksum_ok(&f));
        // Ethernet padding after the IP packet does not count.
        f.extend_from_slice(&[0u8; 10]);
        assert!(l4_checksum_ok(&f));
        f[45] ^= 0x01;
        assert!(!l4_checksum_ok(&f), "corrupted payload");
        assert!(!l4_checksum_ok(&f[..30]), "truncated");
        let mut no_csum = udp4_frame(b"x");
        no_csum[40..42].fill(0);
        assert!(
            !l4_checksum_ok(&no_csum),
            "UDP without checksum is not verified"
        );
    }

    /// An IPv4 or IPv6 TCP frame with `payload`, as the stack hands a TSO
    /// frame over: lengths of the whole frame, checksum field not final.
    pub(crate) fn tcp_frame(v6: bool, payload: &[u8], flags: u8) -> (Vec<u8>, TxDesc) {
        let l3_len = if v6 { 40 } else { 20 };
        let l4 = 14 + l3_len;
        let mut f = vec![0u8; l4 + 20];
        if v6 {
            f[12..14].copy_from_slice(&ETH_P_IPV6.to_be_bytes());
            f[14] = 0x60;
            f[18..20].copy_from_slice(&((20 + payload.len()) as u16).to_be_bytes());
            f[20] = 6;
            f[22..38].copy_from_slice(&[0xfd, 0x99, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
            f[38..54].copy_from_slice(&[0xfd, 0x99, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        } else {
            f[12..14].copy_from_slice(&ETH_P_IPV4.to_be_bytes());
            f[14] = 0x45;
            f[16..18].copy_from_slice(&((40 + payload.len()) as u16).to_be_bytes());
            f[18..20].copy_from_slice(&0xfffeu16.to_be_bytes());
            f[23] = 6;
            f[26..34].copy_from_slice(&[10, 99, 0, 1, 10, 99, 0, 2]);
        }
        f[l4 + 4..l4 + 8].copy_from_slice(&0xffff_fff0u32.to_be_bytes());
        f[l4 + 12] = 5 << 4;
        f[l4 + 13] = flags;
        f.extend_from_slice(payload);
        let desc = TxDesc {
            flags: TxDesc::TSO | TxDesc::CSUM,
            mss: 100,
            csum_start: l4 as u16,
            csum_offset: 16,
            hdr_len: (l4 + 20) as u16,
            ..Default::default()
        };
        (f, desc)
    }

    #[test]
    fn tso_segments_verify_and_cover_the_payload() {
        let payload: Vec<u8> = (0..250u32).map(|i| (i * 13) as u8).collect();
        for v6 in [false, true] {
            let (frame, desc) = tcp_frame(v6, &payload, 0x80 | 0x10 | 0x08 | 0x01);
            let segs = segment_tcp(&frame, &desc).expect("a TCP frame");
            let l4 = usize::from(desc.csum_start);
            let hdr = usize::from(desc.hdr_len);
            assert_eq!(
                segs.iter().map(|s| s.len() - hdr).collect::<Vec<_>>(),
                [100, 100, 50]
            );
            let mut joined = Vec::new();
            for (i, s) in segs.iter().enumerate() {
                assert!(l4_checksum_ok(s), "segment {i} (v6 {v6}) verifies");
                let seq = u32::from_be_bytes(s[l4 + 4..l4 + 8].try_into().unwrap());
                assert_eq!(seq, 0xffff_fff0u32.wrapping_add(100 * i as u32));
                let flags = s[l4 + 13];
                assert_eq!(flags & 0x80 != 0, i == 0, "CWR only first");
                assert_eq!(flags & 0x09 != 0, i == 2, "FIN and PSH only last");
                assert_eq!(flags & 0x10, 0x10, "ACK on all");
                if !v6 {
                    assert_eq!(ones_complement_sum(&s[14..34], 0), 0xffff, "IPv4 header");
                    assert_eq!(
                        u16::from_be_bytes([s[18], s[19]]),
                        0xfffeu16.wrapping_add(i as u16)
                    );
                }
                joined.extend_from_slice(&s[hdr..]);
            }
            assert_eq!(joined, payload);
        }
    }

    #[test]
    fn tso_rejects_what_is_not_tcp() {
        let (mut frame, desc) = tcp_frame(false, &[1; 300], 0x10);
        assert!(segment_tcp(&frame, &TxDesc { mss: 0, ..desc }).is_none());
        assert!(segment_tcp(
            &frame,
            &TxDesc {
                hdr_len: 10_000,
                ..desc
            }
        )
        .is_none());
        assert!(segment_tcp(
            &frame,
            &TxDesc {
                csum_start: 20,
                ..desc
            }
        )
        .is_none());
        assert!(
            segment_tcp(&frame, &TxDesc { mss: 4, ..desc }).is_none(),
            "75 segments, above the card's limit"
        );
        frame[23] = 17;
        assert!(segment_tcp(&frame, &desc).is_none(), "UDP");
        let (frame, desc) = tcp_frame(false, &[], 0x11);
        assert_eq!(
            segment_tcp(&frame, &desc).map(|s| s.len()),
            Some(1),
            "no payload"
        );
    }

    #[test]
    fn rfc1071_example() {
        // RFC 1071 section 3: sum of 0001 f203 f4f5 f6f7 is ddf2.
        assert_eq!(
            ones_complement_sum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7], 0),
            0xddf2
        );
    }

    #[test]
    fn inserted_checksum_verifies() {
        let mut frame = vec![0u8; 40];
        frame[20..]
            .iter_mut()
            .enumerate()
            .for_each(|(i, b)| *b = i as u8 * 7);
        frame[26] = 0x12; // "pseudo-header sum" seed in the field
        frame[27] = 0x34;
        let desc = TxDesc {
            csum_start: 20,
            csum_offset: 6,
            ..Default::default()
        };
        assert!(insert_checksum(&mut frame, &desc));
        // Summing the area including the checksum gives all ones, minus the
        // seed the checksum compensated for.
        assert_eq!(ones_complement_sum(&frame[20..], 0x1234), 0xffff);
        let bad = TxDesc {
            csum_start: 39,
            csum_offset: 6,
            ..Default::default()
        };
        assert!(!insert_checksum(&mut frame, &bad));
    }
}
