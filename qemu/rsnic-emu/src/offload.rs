// SPDX-License-Identifier: GPL-2.0

//! Offloads the card performs on frames.

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

#[cfg(test)]
mod tests {
    use super::*;

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
