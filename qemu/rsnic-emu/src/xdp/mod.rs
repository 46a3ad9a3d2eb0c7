// SPDX-License-Identifier: GPL-2.0

//! XDP on the card: the interpreter (`vm.rs`) that runs an offloaded
//! XDP program on each frame from the wire, the maps (`maps.rs`) it and
//! the host share, and the offload state the PF's admin commands set
//! (`offload.rs`). The driver does not use it yet (issue 52).

pub mod maps;
pub mod offload;
pub mod vm;

#[cfg(test)]
mod tests;
