// SPDX-License-Identifier: GPL-2.0

//! The RDMA engine's interface: its limits and its GID table, the
//! RoCEv2 wire constants both sides name, and the results of the RDMA
//! admin commands.
//!
//! Shared by the driver and the emulator like the rest of [`super`];
//! Documentation/rsnic/rdma.rst describes the same in prose.

use super::{le32, le64, put, AQ_ENTRY_SIZE};

/// UDP destination port of RoCEv2 (IANA).
pub const ROCE_V2_UDP_PORT: u16 = 4791;
/// Entries in the card's GID table.
pub const GID_TABLE_LEN: u32 = 16;
/// Length of a GID (an IPv6 address; IPv4 is mapped as `::ffff:a.b.c.d`).
pub const GID_LEN: usize = 16;
/// The one P_Key a RoCE port has: the default, full membership.
pub const DEFAULT_PKEY: u16 = 0xffff;
/// Vendor part ID the engine reports (`rdma dev`, `ibv_devinfo`).
pub const VENDOR_PART_ID: u32 = 0x5201;
/// Hardware version the engine reports.
pub const HW_VERSION: u32 = 1;

/// A GID: the 16-byte address of a RoCEv2 endpoint.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Gid(pub [u8; GID_LEN]);

impl Gid {
    /// The GID of an IPv4 address (IPv4-mapped IPv6).
    pub const fn from_ipv4(ip: [u8; 4]) -> Self {
        Self([
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, ip[0], ip[1], ip[2], ip[3],
        ])
    }

    /// The IPv4 address of an IPv4-mapped GID.
    pub fn ipv4(&self) -> Option<[u8; 4]> {
        let g = &self.0;
        (g[..10].iter().all(|&b| b == 0) && g[10] == 0xff && g[11] == 0xff)
            .then(|| [g[12], g[13], g[14], g[15]])
    }
}

/// The engine's limits, the result of
/// [`super::AdminCmd::RdmaQueryCaps`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RdmaCaps {
    /// Queue pairs, QP0 and QP1 included.
    pub max_qp: u32,
    /// Work requests one send or receive queue holds.
    pub max_qp_wr: u32,
    /// Scatter/gather entries of one work request.
    pub max_sge: u32,
    /// Completion queues.
    pub max_cq: u32,
    /// Entries of one completion queue.
    pub max_cqe: u32,
    /// Memory regions.
    pub max_mr: u32,
    /// Protection domains.
    pub max_pd: u32,
    /// RDMA READs one QP has outstanding as requester and as responder.
    pub max_qp_rd_atom: u32,
    /// Pages of one fast-registration page list.
    pub max_fast_reg_page_list_len: u32,
    /// Entries of the GID table.
    pub gid_table_len: u32,
    /// Largest memory region in bytes.
    pub max_mr_size: u64,
    /// Page sizes a memory region may use: bit n set means 2^n bytes.
    pub page_size_cap: u64,
}

impl RdmaCaps {
    /// Writes the result into an admin entry.
    pub fn write_result(&self, b: &mut [u8; AQ_ENTRY_SIZE]) {
        let words = [
            self.max_qp,
            self.max_qp_wr,
            self.max_sge,
            self.max_cq,
            self.max_cqe,
            self.max_mr,
            self.max_pd,
            self.max_qp_rd_atom,
            self.max_fast_reg_page_list_len,
            self.gid_table_len,
        ];
        for (i, w) in words.iter().enumerate() {
            put(b, 8 + 4 * i, &w.to_le_bytes());
        }
        put(b, 48, &self.max_mr_size.to_le_bytes());
        put(b, 56, &self.page_size_cap.to_le_bytes());
    }

    /// Reads the result from a completed admin entry.
    pub fn read_result(b: &[u8; AQ_ENTRY_SIZE]) -> Self {
        let w = |i: usize| le32(b, 8 + 4 * i);
        Self {
            max_qp: w(0),
            max_qp_wr: w(1),
            max_sge: w(2),
            max_cq: w(3),
            max_cqe: w(4),
            max_mr: w(5),
            max_pd: w(6),
            max_qp_rd_atom: w(7),
            max_fast_reg_page_list_len: w(8),
            gid_table_len: w(9),
            max_mr_size: le64(b, 48),
            page_size_cap: le64(b, 56),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_round_trip() {
        let caps = RdmaCaps {
            max_qp: 1,
            max_qp_wr: 2,
            max_sge: 3,
            max_cq: 4,
            max_cqe: 5,
            max_mr: 6,
            max_pd: 7,
            max_qp_rd_atom: 8,
            max_fast_reg_page_list_len: 9,
            gid_table_len: 10,
            max_mr_size: 1 << 40,
            page_size_cap: 0xffff_f000,
        };
        let mut b = [0u8; AQ_ENTRY_SIZE];
        caps.write_result(&mut b);
        assert_eq!(RdmaCaps::read_result(&b), caps);
    }

    #[test]
    fn ipv4_mapped_gids() {
        let gid = Gid::from_ipv4([10, 99, 0, 1]);
        assert_eq!(gid.ipv4(), Some([10, 99, 0, 1]));
        let mut v6 = gid;
        v6.0[0] = 0xfe;
        assert_eq!(v6.ipv4(), None);
    }
}
