// SPDX-License-Identifier: GPL-2.0

//! PCI configuration space of an rsnic function.
//!
//! QEMU's vfio code emulates the BARs and the MSI-X table itself; what the
//! card must provide is the identity, the BAR types, and a capability list
//! with a PCI Express capability and an MSI-X capability that points at
//! [`hw::MSIX_BAR`].

use crate::hw;

/// Size of PCI Express configuration space.
pub const CONFIG_SPACE_SIZE: usize = 4096;

const PCIE_CAP_OFFSET: usize = 0x40;
const MSIX_CAP_OFFSET: usize = 0x80;

/// Configuration space contents plus the mask of bits software may write.
pub struct ConfigSpace {
    data: [u8; CONFIG_SPACE_SIZE],
    writable: [u8; CONFIG_SPACE_SIZE],
}

impl ConfigSpace {
    /// Builds the configuration space of a function with `device_id` and
    /// `vectors` MSI-X vectors.
    pub fn new(device_id: u16, vectors: u16) -> Self {
        let mut cs = Self {
            data: [0; CONFIG_SPACE_SIZE],
            writable: [0; CONFIG_SPACE_SIZE],
        };
        cs.put16(0x00, hw::PCI_VENDOR_ID);
        cs.put16(0x02, device_id);
        cs.put16(0x06, 0x0010); // status: capability list present
        cs.data[0x08] = hw::PCI_REVISION;
        let class = hw::PCI_CLASS_ETHERNET.to_le_bytes();
        cs.data[0x09..0x0c].copy_from_slice(&class[..3]);
        cs.put32(0x10, 0x4); // BAR0: 64-bit memory
        cs.put32(0x18, 0x4); // BAR2: 64-bit memory (MSI-X)
        cs.put32(0x20, 0x4); // BAR4: 64-bit memory (user doorbell pages)
        cs.put16(0x2c, hw::PCI_VENDOR_ID);
        cs.put16(0x2e, device_id);
        cs.data[0x34] = PCIE_CAP_OFFSET as u8;

        // PCI Express capability, version 2, endpoint, link 2.5 GT/s x1.
        let p = PCIE_CAP_OFFSET;
        cs.data[p] = 0x10;
        cs.data[p + 1] = MSIX_CAP_OFFSET as u8;
        cs.put16(p + 0x02, 0x0002);
        cs.put32(p + 0x0c, 0x0000_0011); // link capabilities
        cs.put16(p + 0x12, 0x0011); // link status

        // MSI-X capability.
        let m = MSIX_CAP_OFFSET;
        cs.data[m] = 0x11;
        cs.data[m + 1] = 0;
        cs.put16(m + 0x02, vectors - 1);
        cs.put32(m + 0x04, hw::MSIX_TABLE_OFFSET | hw::MSIX_BAR);
        cs.put32(m + 0x08, hw::MSIX_PBA_OFFSET | hw::MSIX_BAR);

        // Command register: I/O, memory, bus master, INTx disable.
        cs.writable[0x04] = 0x07;
        cs.writable[0x05] = 0x04;
        // PCIe device control and link control.
        cs.writable[p + 0x08..p + 0x0a].fill(0xff);
        cs.writable[p + 0x10..p + 0x12].fill(0xff);
        // MSI-X enable and function mask.
        cs.writable[m + 0x03] = 0xc0;
        cs
    }

    fn put16(&mut self, offset: usize, value: u16) {
        self.data[offset..offset + 2].copy_from_slice(&value.to_le_bytes());
    }

    fn put32(&mut self, offset: usize, value: u32) {
        self.data[offset..offset + 4].copy_from_slice(&value.to_le_bytes());
    }

    /// Reads `out.len()` bytes at `offset`; bytes past the end read as 0xff.
    pub fn read(&self, offset: u64, out: &mut [u8]) {
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = usize::try_from(offset)
                .ok()
                .and_then(|o| o.checked_add(i))
                .and_then(|o| self.data.get(o))
                .copied()
                .unwrap_or(0xff);
        }
    }

    /// Writes `bytes` at `offset`, changing only writable bits.
    pub fn write(&mut self, offset: u64, bytes: &[u8]) {
        for (i, &byte) in bytes.iter().enumerate() {
            let Some(o) = usize::try_from(offset).ok().and_then(|o| o.checked_add(i)) else {
                return;
            };
            if o >= CONFIG_SPACE_SIZE {
                return;
            }
            let mask = self.writable[o];
            self.data[o] = (self.data[o] & !mask) | (byte & mask);
        }
    }

    /// Whether the driver enabled bus mastering (DMA) in the command register.
    pub fn bus_master(&self) -> bool {
        self.data[0x04] & 0x04 != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read32(cs: &ConfigSpace, offset: u64) -> u32 {
        let mut b = [0u8; 4];
        cs.read(offset, &mut b);
        u32::from_le_bytes(b)
    }

    #[test]
    fn identity_and_class() {
        let cs = ConfigSpace::new(hw::PCI_DEVICE_ID_PF, 16);
        assert_eq!(
            read32(&cs, 0),
            u32::from(hw::PCI_DEVICE_ID_PF) << 16 | u32::from(hw::PCI_VENDOR_ID)
        );
        assert_eq!(read32(&cs, 8) >> 8, hw::PCI_CLASS_ETHERNET);
    }

    #[test]
    fn capability_chain_reaches_msix() {
        let cs = ConfigSpace::new(hw::PCI_DEVICE_ID_VF, 8);
        let mut ids = Vec::new();
        let mut ptr = cs.data[0x34] as usize;
        while ptr != 0 {
            ids.push(cs.data[ptr]);
            ptr = cs.data[ptr + 1] as usize;
        }
        assert_eq!(ids, vec![0x10, 0x11]);
        assert_eq!(read32(&cs, 0x80) >> 16, 7, "table size is N-1");
        assert_eq!(read32(&cs, 0x84), hw::MSIX_BAR);
    }

    #[test]
    fn read_only_bits_stay() {
        let mut cs = ConfigSpace::new(hw::PCI_DEVICE_ID_PF, 16);
        cs.write(0, &[0xff; 4]);
        cs.write(4, &[0xff, 0xff]);
        assert_eq!(read32(&cs, 0) & 0xffff, u32::from(hw::PCI_VENDOR_ID));
        assert_eq!(read32(&cs, 4) & 0xffff, 0x0407);
        assert!(cs.bus_master());
    }

    #[test]
    fn out_of_range_reads_all_ones() {
        let cs = ConfigSpace::new(hw::PCI_DEVICE_ID_PF, 16);
        let mut b = [0u8; 4];
        cs.read(4094, &mut b);
        assert_eq!(b, [0, 0, 0xff, 0xff]);
    }
}
