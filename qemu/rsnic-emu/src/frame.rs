// SPDX-License-Identifier: GPL-2.0

//! Ethernet framing shared by the card's parsers.

/// EtherType of IPv4.
pub const ETH_P_IPV4: u16 = 0x0800;
/// EtherType of IPv6.
pub const ETH_P_IPV6: u16 = 0x86dd;
/// EtherType of an 802.1Q VLAN tag.
const ETH_P_8021Q: u16 = 0x8100;

/// The network layer of an Ethernet frame, behind at most one VLAN tag:
/// its EtherType and the offset where it starts. `None` if truncated.
pub fn network_layer(frame: &[u8]) -> Option<(u16, usize)> {
    let ethertype_at =
        |off: usize| Some(u16::from_be_bytes([*frame.get(off)?, *frame.get(off + 1)?]));
    let mut off = 12;
    let mut ethertype = ethertype_at(off)?;
    if ethertype == ETH_P_8021Q {
        off += 4;
        ethertype = ethertype_at(off)?;
    }
    Some((ethertype, off + 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untagged_and_tagged() {
        let mut f = vec![0u8; 18];
        f[12..14].copy_from_slice(&ETH_P_IPV6.to_be_bytes());
        assert_eq!(network_layer(&f), Some((ETH_P_IPV6, 14)));
        f[12..14].copy_from_slice(&ETH_P_8021Q.to_be_bytes());
        f[16..18].copy_from_slice(&ETH_P_IPV4.to_be_bytes());
        assert_eq!(network_layer(&f), Some((ETH_P_IPV4, 18)));
        assert_eq!(network_layer(&f[..13]), None);
    }
}
