// SPDX-License-Identifier: GPL-2.0

//! Receive-side scaling: the Toeplitz hash over a frame's addresses and
//! ports, and the indirection table that maps it to a queue pair.

use crate::frame::{network_layer, ETH_P_IPV4, ETH_P_IPV6};
use crate::hw::{rss_fields, RssFlow};

/// The default hash key (the one in Microsoft's RSS specification, which
/// most NICs ship as their default).
pub const DEFAULT_KEY: [u8; 40] = [
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
    0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
    0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
];

/// Entries in the indirection table.
pub const TABLE_SIZE: usize = 128;

/// The most input bytes RSS hashes: two IPv6 addresses, two ports and
/// the flow label.
pub const MAX_INPUT: usize = 16 + 16 + 2 + 2 + 3;

/// The Toeplitz hash under one key, by table: for every nibble of the
/// input, the XOR of the key windows its set bits select, computed when
/// the key is set. A hash is then two lookups per input byte instead of
/// eight shifts and conditional XORs (4.5 KiB per key; it stays in the
/// first-level cache).
#[derive(Clone)]
pub struct Toeplitz {
    /// `nibbles[i][v]`: what nibble `i` of the input (high nibble of byte
    /// `i / 2` first) adds to the hash when its value is `v`.
    nibbles: Box<[[u32; 16]; 2 * MAX_INPUT]>,
}

impl Toeplitz {
    /// The table for `key`.
    pub fn new(key: &[u8; 40]) -> Self {
        // The 32-bit window of the key starting at bit `bit` (the key's
        // first bit is bit 0, the most significant of byte 0). The key
        // is read cyclically: up to 36 input bytes (every input without
        // the flow label) never reach its end, as Microsoft's definition
        // has it; the flow label's 3 bytes beyond get full windows from
        // its start, so that they reach the hash's low bits, which pick
        // the table entry (zeros past the end would leave those alone).
        let window = |bit: usize| -> u32 {
            let at = bit / 8;
            let w: [u8; 8] = std::array::from_fn(|k| key[(at + k) % key.len()]);
            // CAST: the 32 bits under the top ones after the shift.
            (u64::from_be_bytes(w) << (bit % 8) >> 32) as u32
        };
        let mut nibbles = Box::new([[0u32; 16]; 2 * MAX_INPUT]);
        for (i, row) in nibbles.iter_mut().enumerate() {
            for (v, entry) in row.iter_mut().enumerate() {
                // Bit 3 of the nibble is the first of its four input bits.
                *entry = (0..4)
                    .filter(|b| v & (8 >> b) != 0)
                    .fold(0, |h, b| h ^ window(4 * i + b));
            }
        }
        Self { nibbles }
    }

    /// The hash of `input` (at most [`MAX_INPUT`] bytes; more are not
    /// hashed).
    pub fn hash(&self, input: &[u8]) -> u32 {
        input
            .iter()
            .zip(self.nibbles.chunks_exact(2))
            .fold(0, |h, (&byte, rows)| {
                h ^ rows[0][usize::from(byte >> 4)] ^ rows[1][usize::from(byte & 0xf)]
            })
    }
}

impl std::fmt::Debug for Toeplitz {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Toeplitz { .. }")
    }
}

/// The fields RSS hashes, taken from a frame.
#[derive(Debug, PartialEq, Eq)]
pub struct FlowFields {
    /// The chosen of source address, destination address, source port,
    /// destination port and (IPv6) flow label, in that order and in
    /// network order, as Toeplitz hashes them: the first `len` bytes.
    input: [u8; MAX_INPUT],
    len: usize,
    /// Whether a port is included.
    pub l4: bool,
}

impl FlowFields {
    /// The bytes to hash.
    pub fn input(&self) -> &[u8] {
        &self.input[..self.len]
    }
}

/// The addresses and ports of an IP frame, as RSS and steering rules
/// see them.
#[derive(Debug, PartialEq, Eq)]
pub struct Tuple<'a> {
    /// The flow type, for TCP and UDP (fragments too).
    pub flow: Option<RssFlow>,
    /// Source address (4 or 16 bytes).
    pub src: &'a [u8],
    /// Destination address.
    pub dst: &'a [u8],
    /// Source and destination port, for TCP and UDP that is not a
    /// fragment.
    pub ports: Option<(&'a [u8], &'a [u8])>,
    /// IPv6: the flow label, as [`rss_fields::FLOW_LABEL`] hashes it.
    pub flow_label: Option<[u8; 3]>,
}

/// The [`Tuple`] of an Ethernet frame (IPv4 or IPv6, optionally
/// VLAN-tagged); `None` for other frames.
pub fn tuple(frame: &[u8]) -> Option<Tuple<'_>> {
    let (ethertype, l3) = network_layer(frame)?;
    let (addrs, proto, l4_off, fragment, v6) = match ethertype {
        ETH_P_IPV4 => {
            let ihl = usize::from(frame.get(l3)? & 0x0f) * 4;
            let frag = u16::from_be_bytes([*frame.get(l3 + 6)?, *frame.get(l3 + 7)?]) & 0x3fff != 0;
            (
                frame.get(l3 + 12..l3 + 20)?,
                *frame.get(l3 + 9)?,
                l3 + ihl,
                frag,
                false,
            )
        }
        ETH_P_IPV6 => (
            frame.get(l3 + 8..l3 + 40)?,
            *frame.get(l3 + 6)?,
            l3 + 40,
            false,
            true,
        ),
        _ => return None,
    };
    let (src, dst) = addrs.split_at(addrs.len() / 2);
    // Read above for IPv6: the header is 40 bytes.
    let flow_label = v6.then(|| [frame[l3 + 1] & 0x0f, frame[l3 + 2], frame[l3 + 3]]);
    let ports = frame
        .get(l4_off..l4_off + 4)
        .filter(|_| !fragment)
        .map(|p| p.split_at(2));
    let flow = match (proto, v6) {
        (6, false) => Some(RssFlow::Tcp4),
        (17, false) => Some(RssFlow::Udp4),
        (6, true) => Some(RssFlow::Tcp6),
        (17, true) => Some(RssFlow::Udp6),
        _ => None,
    };
    Some(Tuple {
        flow,
        src,
        dst,
        ports: ports.filter(|_| flow.is_some()),
        flow_label,
    })
}

/// The RSS input of a frame, from its [`Tuple`]: for unfragmented TCP
/// and UDP, the fields `select` names for its [`RssFlow`] (a
/// [`rss_fields`] mask each); for TCP and UDP fragments, the addresses
/// that mask names; for other IP traffic, both addresses. `None` if
/// nothing is selected. `sym_xor`: each selected address and port is
/// its source XOR its destination ([`crate::hw::rss_xfrm::SYM_XOR`]), so a flow
/// and its reverse hash alike.
pub fn tuple_fields(
    t: &Tuple<'_>,
    select: &[u8; RssFlow::ALL.len()],
    sym_xor: bool,
) -> Option<FlowFields> {
    let addrs = rss_fields::IP_SRC | rss_fields::IP_DST;
    let mask = match (t.flow, t.ports) {
        (Some(flow), Some(_)) => select[flow as usize],
        // A TCP/UDP fragment: its flow type's addresses.
        (Some(flow), None) => select[flow as usize] & addrs,
        (None, _) => addrs,
    };
    let (sport, dport) = t.ports.unwrap_or_default();
    let mut f = FlowFields {
        input: [0; MAX_INPUT],
        len: 0,
        l4: false,
    };
    for (bit, part, other) in [
        (rss_fields::IP_SRC, t.src, t.dst),
        (rss_fields::IP_DST, t.dst, t.src),
        (rss_fields::L4_SRC, sport, dport),
        (rss_fields::L4_DST, dport, sport),
    ] {
        if mask & bit != 0 && !part.is_empty() {
            // Addresses are 4 or 16 bytes, ports 2: it always fits.
            let out = &mut f.input[f.len..f.len + part.len()];
            out.copy_from_slice(part);
            if sym_xor {
                for (o, x) in out.iter_mut().zip(other) {
                    *o ^= x;
                }
            }
            f.len += part.len();
            f.l4 |= bit & (rss_fields::L4_SRC | rss_fields::L4_DST) != 0;
        }
    }
    // The label is one direction's own: never part of a symmetric hash
    // (the core refuses the pair).
    if let Some(label) = t.flow_label.filter(|_| mask & rss_fields::FLOW_LABEL != 0) {
        f.input[f.len..f.len + 3].copy_from_slice(&label);
        f.len += 3;
    }
    (f.len > 0).then_some(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow_fields(frame: &[u8], select: &[u8; RssFlow::ALL.len()]) -> Option<FlowFields> {
        tuple_fields(&tuple(frame)?, select, false)
    }

    /// The Toeplitz hash as its definition states it, bit by bit: what
    /// the table must agree with.
    fn toeplitz(key: &[u8; 40], input: &[u8]) -> u32 {
        let mut hash = 0u32;
        // The 32-bit window of the key at the current input bit.
        let mut window = u32::from_be_bytes([key[0], key[1], key[2], key[3]]);
        for (i, byte) in input.iter().enumerate() {
            for bit in (0..8).rev() {
                if byte & (1 << bit) != 0 {
                    hash ^= window;
                }
                let next_bit = (key[(i + 4) % key.len()] >> bit) & 1;
                window = (window << 1) | u32::from(next_bit);
            }
        }
        hash
    }

    #[test]
    fn the_table_agrees_with_the_definition() {
        let mut rng = fastrand::Rng::with_seed(46);
        for _ in 0..200 {
            let mut key = [0u8; 40];
            key.iter_mut().for_each(|b| *b = rng.u8(..));
            let table = Toeplitz::new(&key);
            for len in [0, 1, 4, 8, 12, 13, 32, 36, 37, 39] {
                let input: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
                assert_eq!(table.hash(&input), toeplitz(&key, &input), "len {len}");
            }
        }
        let ones = Toeplitz::new(&[0xff; 40]);
        assert_eq!(ones.hash(&[0xff; 36]), toeplitz(&[0xff; 40], &[0xff; 36]));
    }

    // Verification vectors from Microsoft's RSS specification.
    #[test]
    fn toeplitz_known_vectors() {
        let v4 = |s: [u8; 4], d: [u8; 4], sp: u16, dp: u16| {
            let mut ip = s.to_vec();
            ip.extend_from_slice(&d);
            let mut l4 = ip.clone();
            l4.extend_from_slice(&sp.to_be_bytes());
            l4.extend_from_slice(&dp.to_be_bytes());
            let t = Toeplitz::new(&DEFAULT_KEY);
            (t.hash(&ip), t.hash(&l4))
        };
        assert_eq!(
            v4([66, 9, 149, 187], [161, 142, 100, 80], 2794, 1766),
            (0x323e8fc2, 0x51ccc178)
        );
        assert_eq!(
            v4([199, 92, 111, 2], [65, 69, 140, 83], 14230, 4739),
            (0xd718262a, 0xc626b0ea)
        );
        assert_eq!(
            v4([24, 19, 198, 95], [12, 22, 207, 184], 12898, 38024),
            (0xd2d0a5de, 0x5c2b394a)
        );
    }

    fn ipv4_tcp_frame(frag: bool) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 20 + 20];
        f[12] = 0x08;
        f[14] = 0x45;
        f[14 + 9] = 6;
        if frag {
            f[14 + 7] = 1;
        }
        f[14 + 12..14 + 20].copy_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
        f[34..38].copy_from_slice(&[0x12, 0x34, 0x00, 0x50]);
        f
    }

    const ALL: [u8; 4] = [rss_fields::ALL; 4];

    #[test]
    fn fields_of_frames() {
        let f = flow_fields(&ipv4_tcp_frame(false), &ALL).unwrap();
        assert_eq!(
            f.input(),
            [10, 0, 0, 1, 10, 0, 0, 2, 0x12, 0x34, 0x00, 0x50]
        );
        assert!(f.l4);
        let frag = flow_fields(&ipv4_tcp_frame(true), &ALL).unwrap();
        assert!(!frag.l4, "fragments hash on addresses only");
        assert_eq!(frag.input(), [10, 0, 0, 1, 10, 0, 0, 2]);
        assert_eq!(flow_fields(&[0u8; 20], &ALL), None, "not IP");
        assert_eq!(
            flow_fields(&ipv4_tcp_frame(false)[..20], &ALL),
            None,
            "truncated"
        );
    }

    #[test]
    fn chosen_fields_only() {
        let mut select = ALL;
        select[RssFlow::Tcp4 as usize] = rss_fields::IP_DST | rss_fields::L4_DST;
        let f = flow_fields(&ipv4_tcp_frame(false), &select).unwrap();
        assert_eq!(f.input(), [10, 0, 0, 2, 0x00, 0x50]);
        assert!(f.l4);
        select[RssFlow::Tcp4 as usize] = rss_fields::IP_SRC;
        let f = flow_fields(&ipv4_tcp_frame(false), &select).unwrap();
        assert_eq!((f.input(), f.l4), (&[10, 0, 0, 1][..], false));
        select[RssFlow::Tcp4 as usize] = 0;
        assert_eq!(
            flow_fields(&ipv4_tcp_frame(false), &select),
            None,
            "nothing hashed"
        );
        // UDP's choice does not touch TCP.
        let mut udp_only = ALL;
        udp_only[RssFlow::Udp4 as usize] = rss_fields::IP_SRC;
        assert!(flow_fields(&ipv4_tcp_frame(false), &udp_only).unwrap().l4);
    }
}

#[cfg(test)]
mod sym_tests {
    use super::*;

    /// A UDP/IPv6 frame from `src`:`sport` to `dst`:`dport`.
    fn udp6(src: u8, dst: u8, sport: u16, dport: u16) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 40 + 8];
        f[12..14].copy_from_slice(&[0x86, 0xdd]);
        f[14] = 0x60;
        f[14 + 6] = 17;
        f[14 + 8 + 15] = src;
        f[14 + 24 + 15] = dst;
        f[54..56].copy_from_slice(&sport.to_be_bytes());
        f[56..58].copy_from_slice(&dport.to_be_bytes());
        f
    }

    fn hash(frame: &[u8], sym_xor: bool) -> u32 {
        let fields = tuple_fields(&tuple(frame).unwrap(), &[rss_fields::ALL; 4], sym_xor).unwrap();
        Toeplitz::new(&DEFAULT_KEY).hash(fields.input())
    }

    #[test]
    fn sym_xor_hashes_both_directions_alike() {
        let there = udp6(1, 2, 40000, 53);
        let back = udp6(2, 1, 53, 40000);
        assert_eq!(hash(&there, true), hash(&back, true));
        assert_ne!(hash(&there, false), hash(&back, false));
        // Swapping the ports alone (rss_input_xfrm.py's case) too.
        assert_eq!(hash(&udp6(1, 2, 7, 9), true), hash(&udp6(1, 2, 9, 7), true));
        // And it still tells flows apart.
        assert_ne!(hash(&there, true), hash(&udp6(1, 2, 40001, 53), true));
    }

    #[test]
    fn the_flow_label_is_hashed_only_when_chosen() {
        let labelled = |label: u32| {
            let mut f = udp6(1, 2, 40000, 53);
            // The version nibble stays; the label's 20 bits follow the
            // traffic class.
            f[15] = (f[15] & 0xf0) | ((label >> 16) as u8 & 0x0f);
            f[16..18].copy_from_slice(&(label as u16).to_be_bytes());
            f
        };
        let mut select = [rss_fields::ALL; 4];
        let input = |f: &[u8], s: &[u8; 4]| {
            tuple_fields(&tuple(f).unwrap(), s, false)
                .unwrap()
                .input()
                .to_vec()
        };
        assert_eq!(
            input(&labelled(0x12345), &select),
            input(&labelled(0xfedcb), &select)
        );
        select[RssFlow::Udp6 as usize] |= rss_fields::FLOW_LABEL;
        let with = input(&labelled(0x12345), &select);
        assert_eq!(with.len(), 39);
        assert_eq!(with[36..], [0x01, 0x23, 0x45]);
        let table = Toeplitz::new(&DEFAULT_KEY);
        // The label reaches the bits that pick the table entry.
        let entries: std::collections::HashSet<u32> = (0..64u32)
            .map(|l| table.hash(&input(&labelled(l * 0x3fff), &select)) % 128)
            .collect();
        assert!(entries.len() > 32, "{} entries of 128", entries.len());
    }

    #[test]
    fn sym_xor_input_is_the_xor_twice() {
        let f = tuple_fields(
            &tuple(&udp6(1, 2, 0x0102, 0x0304)).unwrap(),
            &[rss_fields::ALL; 4],
            true,
        )
        .unwrap();
        let mut want = [0u8; 36];
        want[15] = 3;
        want[31] = 3;
        want[32..].copy_from_slice(&[0x02, 0x06, 0x02, 0x06]);
        assert_eq!(f.input(), want);
    }
}
