// SPDX-License-Identifier: GPL-2.0

//! The engine's UD multicast groups: which queue pairs a SEND to a group
//! reaches. The table is the engine's multicast filter too: a RoCEv2
//! packet for a group no QP of this card joined is not the engine's.

use std::collections::HashMap;

use crate::hw::rdma::{Gid, McastCaps};
use crate::hw::AdminStatus;

/// The engine's multicast limits (`max_mcast_grp`, `max_mcast_qp_attach`,
/// `max_total_mcast_qp_attach`): a small design's, as rxe's defaults are
/// a large one's.
pub const MCAST_CAPS: McastCaps = McastCaps {
    max_groups: 64,
    max_qp_per_group: 16,
    max_attach: 256,
};

/// Groups and their queue pairs.
#[derive(Debug, Default)]
pub struct McastGroups {
    groups: HashMap<Gid, Vec<u32>>,
    attached: u32,
}

impl McastGroups {
    /// Attaches `qpn` to `gid`, making the group if it is new. Attached
    /// already: nothing to do. Beyond [`MCAST_CAPS`]: `NoSpace`.
    pub fn attach(&mut self, gid: Gid, qpn: u32) -> Result<(), AdminStatus> {
        let c = MCAST_CAPS;
        let members = self.groups.get(&gid);
        if members.is_some_and(|m| m.contains(&qpn)) {
            return Ok(());
        }
        let full = match members {
            Some(m) => m.len() as u32 >= c.max_qp_per_group,
            None => self.groups.len() as u32 >= c.max_groups,
        };
        if full || self.attached >= c.max_attach {
            return Err(AdminStatus::NoSpace);
        }
        self.groups.entry(gid).or_default().push(qpn);
        self.attached += 1;
        Ok(())
    }

    /// Detaches `qpn` from `gid`; the group goes with its last QP.
    pub fn detach(&mut self, gid: &Gid, qpn: u32) -> Result<(), AdminStatus> {
        let members = self.groups.get_mut(gid).ok_or(AdminStatus::NotFound)?;
        let at = members
            .iter()
            .position(|&q| q == qpn)
            .ok_or(AdminStatus::NotFound)?;
        members.remove(at);
        if members.is_empty() {
            self.groups.remove(gid);
        }
        self.attached -= 1;
        Ok(())
    }

    /// Takes a destroyed queue pair out of every group.
    pub fn forget(&mut self, qpn: u32) {
        let groups: Vec<Gid> = self
            .groups
            .iter()
            .filter(|(_, m)| m.contains(&qpn))
            .map(|(g, _)| *g)
            .collect();
        for gid in groups {
            let _ = self.detach(&gid, qpn);
        }
    }

    /// The queue pairs attached to `gid`, in the order they joined.
    pub fn members(&self, gid: &Gid) -> Option<&[u32]> {
        self.groups.get(gid).map(Vec::as_slice)
    }

    /// Groups held.
    pub fn groups(&self) -> usize {
        self.groups.len()
    }

    /// Attachments of all groups.
    pub fn attached(&self) -> u32 {
        self.attached
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(n: u8) -> Gid {
        Gid::from_ipv4([239, 1, 2, n])
    }

    #[test]
    fn limits_hold_and_refusals_change_nothing() {
        let mut t = McastGroups::default();
        let c = MCAST_CAPS;
        for q in 0..c.max_qp_per_group {
            t.attach(group(0), 100 + q).unwrap();
        }
        assert_eq!(t.attach(group(0), 99), Err(AdminStatus::NoSpace));
        // Again for a member: nothing to do, not full.
        assert_eq!(t.attach(group(0), 100), Ok(()));
        assert_eq!(t.attached(), c.max_qp_per_group);
        for g in 1..c.max_groups {
            t.attach(group(g as u8), 7).unwrap();
        }
        assert_eq!(t.attach(group(200), 7), Err(AdminStatus::NoSpace));
        assert_eq!(t.groups(), c.max_groups as usize);
        t.forget(7);
        assert_eq!(t.groups(), 1);
        assert_eq!(t.attached(), c.max_qp_per_group);
    }

    #[test]
    fn total_attachments_are_bounded() {
        let mut t = McastGroups::default();
        let c = MCAST_CAPS;
        let per = c.max_attach / c.max_qp_per_group;
        for g in 0..per {
            for q in 0..c.max_qp_per_group {
                t.attach(group(g as u8), q).unwrap();
            }
        }
        assert_eq!(t.attach(group(250), 1), Err(AdminStatus::NoSpace));
        t.detach(&group(0), 3).unwrap();
        t.attach(group(250), 1).unwrap();
    }

    #[test]
    fn detach_of_a_stranger_is_not_found() {
        let mut t = McastGroups::default();
        assert_eq!(t.detach(&group(1), 5), Err(AdminStatus::NotFound));
        t.attach(group(1), 5).unwrap();
        t.attach(group(1), 6).unwrap();
        assert_eq!(t.detach(&group(1), 7), Err(AdminStatus::NotFound));
        t.detach(&group(1), 5).unwrap();
        assert_eq!(t.members(&group(1)), Some(&[6][..]));
        t.detach(&group(1), 6).unwrap();
        assert_eq!(t.members(&group(1)), None);
        assert_eq!(t.attached(), 0);
    }

    #[test]
    fn group_addresses_and_their_macs() {
        let v4 = Gid::from_ipv4([239, 129, 2, 3]);
        assert!(v4.is_multicast());
        assert_eq!(v4.multicast_mac(), [0x01, 0x00, 0x5e, 0x01, 0x02, 0x03]);
        assert!(!Gid::from_ipv4([10, 0, 0, 1]).is_multicast());
        let mut v6 = [0u8; 16];
        v6[0] = 0xff;
        v6[1] = 0x0e;
        v6[12..].copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
        assert!(Gid(v6).is_multicast());
        assert_eq!(
            Gid(v6).multicast_mac(),
            [0x33, 0x33, 0xde, 0xad, 0xbe, 0xef]
        );
        v6[0] = 0xfe;
        assert!(!Gid(v6).is_multicast());
    }
}
