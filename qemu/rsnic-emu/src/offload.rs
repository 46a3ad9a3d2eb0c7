// SPDX-License-Identifier: GPL-2.0

//! Offloads the card performs on frames.

use crate::frame::{network_layer, ETH_P_IPV4, ETH_P_IPV6};
use crate::hw::TxDesc;

/// Ones'-complement sum of `data` (RFC 1071), not yet inverted.
fn ones_complement_sum(data: &[u8], mut sum: u32) -> u32 {
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
    let csum = !(sum as u16);
    frame[field..field + 2].copy_from_slice(&csum.to_be_bytes());
    true
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
            let l4_len = total - ihl;
            let mut sum = ones_complement_sum(frame.get(l3 + 12..l3 + 20)?, 0);
            sum = ones_complement_sum(&[0, proto], sum);
            sum = ones_complement_sum(&(l4_len as u16).to_be_bytes(), sum);
            (proto, l3 + ihl, l3 + total, sum)
        }
        ETH_P_IPV6 => {
            let payload = usize::from(u16::from_be_bytes([
                *frame.get(l3 + 4)?,
                *frame.get(l3 + 5)?,
            ]));
            let proto = *frame.get(l3 + 6)?;
            let mut sum = ones_complement_sum(frame.get(l3 + 8..l3 + 40)?, 0);
            sum = ones_complement_sum(&(payload as u32).to_be_bytes(), sum);
            sum = ones_complement_sum(&[0, 0, 0, proto], sum);
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
mod tests {
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
