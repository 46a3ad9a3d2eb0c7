// SPDX-License-Identifier: GPL-2.0

//! A TCP train: a TSO frame the card has checked, and the segments it
//! stands for (TCP segmentation as Linux's `SKB_GSO_TCPV4/6` asks).
//!
//! Where frames are looked at one by one (the GFT, the wire's
//! impairments and capture, a queue pair without coalescing) the card
//! cuts the train into its segments. Otherwise it crosses the wire whole,
//! as a tap carries a GSO packet, and the receiving card coalesces its
//! segments from their headers and payload slices without making each a
//! frame of its own. Either way the segments are the same, bit for bit
//! but for the TCP checksum, which the card computes only for a segment
//! that leaves on its own.

use crate::frame::{network_layer, ETH_P_IPV4, ETH_P_IPV6};
use crate::hw::TSO_MAX_SEGS;
use crate::offload::{fix_segment_ip_header, set_tcp_checksum};

/// TCP flags a segment keeps only if it is the last one (FIN, PSH).
const TCP_LAST_ONLY: u8 = 0x01 | 0x08;
/// TCP flag a segment keeps only if it is the first one (CWR).
const TCP_FIRST_ONLY: u8 = 0x80;

/// How a train is cut: what its TSO descriptor said, and what crosses the
/// wire with it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TrainShape {
    /// Offset of the TCP header.
    pub l4: u16,
    /// Length of the headers (Ethernet, IP, TCP).
    pub hdr_len: u16,
    /// Payload bytes of each segment (the last may have fewer).
    pub mss: u16,
}

/// A TSO frame whose shape was checked: its segments can be made.
#[derive(Clone, Copy, Debug)]
pub struct TcpTrain<'a> {
    frame: &'a [u8],
    shape: TrainShape,
    ethertype: u16,
    l3: usize,
    count: usize,
}

impl<'a> TcpTrain<'a> {
    /// `frame` cut as `shape` says. `None` if it does not describe an IPv4
    /// or IPv6 TCP frame (the TCP header inside the headers, right behind
    /// an IPv4 header) or needs more than [`TSO_MAX_SEGS`] segments.
    pub fn new(frame: &'a [u8], shape: TrainShape) -> Option<Self> {
        let (ethertype, l3) = network_layer(frame)?;
        Self::at(frame, shape, ethertype, l3)
    }

    /// As [`Self::new`], the IP header (of kind `ethertype`) at `l3`
    /// rather than right behind the Ethernet header: the inner header of
    /// a tunnelled frame, whose segments' outer headers the caller fixes.
    pub fn at(frame: &'a [u8], shape: TrainShape, ethertype: u16, l3: usize) -> Option<Self> {
        let (l4, hdr_len, mss) = (
            usize::from(shape.l4),
            usize::from(shape.hdr_len),
            usize::from(shape.mss),
        );
        let min_l3 = if ethertype == ETH_P_IPV4 { 20 } else { 40 };
        if mss == 0 || l3 + min_l3 > l4 || l4 + 20 > hdr_len || hdr_len > frame.len() {
            return None;
        }
        let proto_ok = match ethertype {
            ETH_P_IPV4 => frame[l3 + 9] == 6 && usize::from(frame[l3] & 0x0f) * 4 == l4 - l3,
            ETH_P_IPV6 => true,
            _ => false,
        };
        let count = (frame.len() - hdr_len).div_ceil(mss).max(1);
        if !proto_ok || count > TSO_MAX_SEGS as usize {
            return None;
        }
        Some(Self {
            frame,
            shape,
            ethertype,
            l3,
            count,
        })
    }

    /// The whole TSO frame.
    pub fn frame(&self) -> &'a [u8] {
        self.frame
    }

    /// How it is cut.
    pub fn shape(&self) -> TrainShape {
        self.shape
    }

    /// How many segments it stands for.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The headers every segment starts from.
    pub fn headers(&self) -> &'a [u8] {
        &self.frame[..usize::from(self.shape.hdr_len)]
    }

    fn bounds(&self, i: usize) -> (usize, usize) {
        let (hdr, mss) = (usize::from(self.shape.hdr_len), usize::from(self.shape.mss));
        let start = (hdr + i * mss).min(self.frame.len());
        (start, (start + mss).min(self.frame.len()))
    }

    /// The payload of segment `i`.
    pub fn payload(&self, i: usize) -> &'a [u8] {
        let (start, end) = self.bounds(i);
        &self.frame[start..end]
    }

    /// The length of segment `i` as a frame (without FCS).
    pub fn segment_len(&self, i: usize) -> usize {
        let (start, end) = self.bounds(i);
        usize::from(self.shape.hdr_len) + end - start
    }

    /// Writes the headers of segment `i` into `out`: the IP length (and
    /// IPv4 ID, counting up, and header checksum), the TCP sequence number
    /// and flags fixed up; the TCP checksum field as the train has it.
    pub fn segment_header(&self, i: usize, out: &mut Vec<u8>) {
        let (l3, l4) = (self.l3, usize::from(self.shape.l4));
        let headers = self.headers();
        out.clear();
        out.extend_from_slice(headers);
        let payload = self.payload(i).len();
        let l3_len = headers.len() + payload - l3;
        fix_segment_ip_header(out, self.ethertype == ETH_P_IPV4, (l3, l4), l3_len, i);
        let seq = u32::from_be_bytes(headers[l4 + 4..l4 + 8].try_into().expect("4 bytes"));
        let offset = i * usize::from(self.shape.mss);
        // CAST: segment i's offset in the payload, below 64 KiB.
        out[l4 + 4..l4 + 8].copy_from_slice(&seq.wrapping_add(offset as u32).to_be_bytes());
        if i + 1 < self.count {
            out[l4 + 13] &= !TCP_LAST_ONLY;
        }
        if i > 0 {
            out[l4 + 13] &= !TCP_FIRST_ONLY;
        }
    }

    /// Segment `i` as a frame of its own, with its TCP checksum.
    pub fn segment(&self, i: usize) -> Vec<u8> {
        let mut seg = Vec::with_capacity(self.segment_len(i));
        self.segment_header(i, &mut seg);
        seg.extend_from_slice(self.payload(i));
        let (l3, l4, end) = (self.l3, usize::from(self.shape.l4), seg.len());
        let done = set_tcp_checksum(&mut seg, self.ethertype, l3, l4, end);
        debug_assert!(done, "headers checked when the train was made");
        seg
    }

    /// All its segments, in order.
    pub fn segments(&self) -> impl Iterator<Item = Vec<u8>> + '_ {
        (0..self.count).map(|i| self.segment(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::offload::tests::tcp_frame;

    #[test]
    fn headers_and_payloads_make_the_segments() {
        let payload: Vec<u8> = (0..250u32).map(|i| (i * 7) as u8).collect();
        for v6 in [false, true] {
            let (frame, desc) = tcp_frame(v6, &payload, 0x80 | 0x18);
            let shape = TrainShape {
                l4: desc.csum_start,
                hdr_len: desc.hdr_len,
                mss: desc.mss,
            };
            let train = TcpTrain::new(&frame, shape).expect("a TCP frame");
            assert_eq!(train.count(), 3);
            let mut hdr = Vec::new();
            for i in 0..train.count() {
                let seg = train.segment(i);
                assert_eq!(seg.len(), train.segment_len(i));
                train.segment_header(i, &mut hdr);
                let l4 = usize::from(shape.l4);
                // All but the TCP checksum.
                assert_eq!(hdr[..l4 + 16], seg[..l4 + 16]);
                assert_eq!(hdr[l4 + 18..], seg[l4 + 18..hdr.len()]);
                assert_eq!(train.payload(i), &seg[hdr.len()..]);
            }
        }
    }
}
