// SPDX-License-Identifier: GPL-2.0

//! The card's RDMA engine (RecoNIC-style RoCEv2 offload): its limits, its
//! GID table and the RoCEv2 wire format it speaks ([`wire`]).
//!
//! The PF configures it with the RDMA admin commands; what it holds is
//! visible to the test harness (`rdma-gids`).

pub mod wire;

use std::fmt::Write as _;

use log::debug;

use crate::hw::rdma::{Gid, RdmaCaps, GID_TABLE_LEN};
use crate::hw::{AdminCmd, AdminStatus, AQ_ENTRY_SIZE};

/// The limits the engine reports. Queue and region counts are those of a
/// small FPGA design; a page list covers 2 MiB in 4 KiB pages.
pub const CAPS: RdmaCaps = RdmaCaps {
    max_qp: 256,
    max_qp_wr: 4096,
    max_sge: 4,
    max_cq: 256,
    max_cqe: 8192,
    max_mr: 4096,
    max_pd: 1024,
    max_qp_rd_atom: 16,
    max_fast_reg_page_list_len: 512,
    gid_table_len: GID_TABLE_LEN,
    max_mr_size: 1 << 32,
    page_size_cap: 0x0000_0000_4020_1000,
};

/// The RDMA engine of one card.
#[derive(Debug, Default)]
pub struct RdmaEngine {
    gids: [Option<Gid>; GID_TABLE_LEN as usize],
}

impl RdmaEngine {
    /// Back to power-on state: the GID table is empty.
    pub fn reset(&mut self) {
        *self = Self::default();
    }

    /// Runs an RDMA admin command, writing its result into `entry`.
    pub fn execute(&mut self, cmd: AdminCmd, entry: &mut [u8; AQ_ENTRY_SIZE]) -> AdminStatus {
        debug!("rdma admin {cmd:?}");
        match cmd {
            AdminCmd::RdmaQueryCaps => CAPS.write_result(entry),
            AdminCmd::RdmaSetGid { index, gid } => match self.gids.get_mut(index as usize) {
                Some(slot) => *slot = Some(gid),
                None => return AdminStatus::BadParam,
            },
            AdminCmd::RdmaDelGid { index } => match self.gids.get_mut(index as usize) {
                Some(slot @ Some(_)) => *slot = None,
                Some(None) => return AdminStatus::NotFound,
                None => return AdminStatus::BadParam,
            },
            _ => return AdminStatus::BadOpcode,
        }
        AdminStatus::Ok
    }

    /// The GID at `index`, if set.
    pub fn gid(&self, index: u32) -> Option<Gid> {
        self.gids.get(index as usize).copied().flatten()
    }

    /// Whether a RoCEv2 packet for `gid` is for this card.
    pub fn owns(&self, gid: &Gid) -> bool {
        self.gids.iter().flatten().any(|g| g == gid)
    }

    /// The GID table for the harness: `index=address` per set entry
    /// (IPv4-mapped GIDs as dotted quads), space-separated.
    pub fn describe_gids(&self) -> String {
        let mut out = format!("gids={}", self.gids.iter().flatten().count());
        for (i, gid) in self.gids.iter().enumerate() {
            let Some(gid) = gid else { continue };
            let _ = match gid.ipv4() {
                Some(ip) => write!(out, " {i}={}", std::net::Ipv4Addr::from(ip)),
                None => write!(out, " {i}={}", std::net::Ipv6Addr::from(gid.0)),
            };
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(e: &mut RdmaEngine, cmd: AdminCmd) -> (AdminStatus, [u8; AQ_ENTRY_SIZE]) {
        let mut entry = cmd.to_bytes();
        let cmd = AdminCmd::from_bytes(&entry).unwrap();
        (e.execute(cmd, &mut entry), entry)
    }

    #[test]
    fn caps_are_reported() {
        let mut e = RdmaEngine::default();
        let (status, entry) = run(&mut e, AdminCmd::RdmaQueryCaps);
        assert_eq!(status, AdminStatus::Ok);
        assert_eq!(RdmaCaps::read_result(&entry), CAPS);
    }

    #[test]
    fn gid_table() {
        let mut e = RdmaEngine::default();
        let a = Gid::from_ipv4([10, 99, 0, 1]);
        let mut b = Gid::default();
        b.0[0] = 0xfe;
        b.0[1] = 0x80;
        b.0[15] = 1;
        assert_eq!(
            run(&mut e, AdminCmd::RdmaSetGid { index: 0, gid: b }).0,
            AdminStatus::Ok
        );
        assert_eq!(
            run(&mut e, AdminCmd::RdmaSetGid { index: 3, gid: a }).0,
            AdminStatus::Ok
        );
        let too_far = AdminCmd::RdmaSetGid {
            index: GID_TABLE_LEN,
            gid: a,
        };
        assert_eq!(run(&mut e, too_far).0, AdminStatus::BadParam);
        assert!(e.owns(&a) && e.owns(&b));
        assert_eq!(e.gid(3), Some(a));
        assert_eq!(e.describe_gids(), "gids=2 0=fe80::1 3=10.99.0.1");
        assert_eq!(
            run(&mut e, AdminCmd::RdmaDelGid { index: 3 }).0,
            AdminStatus::Ok
        );
        assert_eq!(
            run(&mut e, AdminCmd::RdmaDelGid { index: 3 }).0,
            AdminStatus::NotFound
        );
        assert!(!e.owns(&a));
        e.reset();
        assert_eq!(e.describe_gids(), "gids=0");
    }
}
