// SPDX-License-Identifier: GPL-2.0

//! Header/data split: where a received frame's headers end.

use crate::frame::{network_layer, ETH_P_IPV4, ETH_P_IPV6};
use crate::hw::gft::proto;

/// Bytes of `frame`'s headers, from the Ethernet header (behind at most one
/// VLAN tag) to the end of its TCP or UDP header: where the card splits
/// it. `None` for anything else (not IP, an IPv4 fragment, IPv6 extension
/// headers, another transport, a truncated header): such a frame is not
/// split.
pub fn header_len(frame: &[u8]) -> Option<usize> {
    let (ethertype, l3) = network_layer(frame)?;
    let (proto, l4) = match ethertype {
        ETH_P_IPV4 => {
            let ip = frame.get(l3..l3 + 20)?;
            let ihl = usize::from(ip[0] & 0x0f) * 4;
            let frag = u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff;
            if ip[0] >> 4 != 4 || ihl < 20 || frag != 0 {
                return None;
            }
            (ip[9], l3 + ihl)
        }
        ETH_P_IPV6 => {
            let ip = frame.get(l3..l3 + 40)?;
            if ip[0] >> 4 != 6 {
                return None;
            }
            (ip[6], l3 + 40)
        }
        _ => return None,
    };
    let end = match proto {
        proto::TCP => l4 + usize::from(*frame.get(l4 + 12)? >> 4) * 4,
        proto::UDP => l4 + 8,
        _ => return None,
    };
    (end <= frame.len()).then_some(end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::offload::tests::tcp_frame;

    #[test]
    fn tcp_over_ipv4_and_ipv6() {
        let (f, _) = tcp_frame(false, b"payload", 0x18);
        assert_eq!(header_len(&f), Some(14 + 20 + 20));
        let (f, _) = tcp_frame(true, b"payload", 0x18);
        assert_eq!(header_len(&f), Some(14 + 40 + 20));
    }

    #[test]
    fn udp_and_what_is_not_split() {
        let (mut f, _) = tcp_frame(false, b"payload", 0x18);
        f[14 + 9] = proto::UDP;
        assert_eq!(header_len(&f), Some(14 + 20 + 8));
        f[14 + 9] = proto::ICMP;
        assert_eq!(header_len(&f), None);
        f[14 + 9] = proto::TCP;
        f[14 + 6] = 0x20; // more fragments
        assert_eq!(header_len(&f), None);
        let (mut f, _) = tcp_frame(true, b"payload", 0x18);
        f[14 + 6] = 0; // a hop-by-hop extension header
        assert_eq!(header_len(&f), None);
        let (f, _) = tcp_frame(false, b"", 0x10);
        assert_eq!(header_len(&f[..50]), None, "truncated TCP header");
        assert_eq!(header_len(&f), Some(f.len()), "headers only");
    }
}
