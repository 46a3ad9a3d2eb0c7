// SPDX-License-Identifier: GPL-2.0

//! XDP on the card: the interpreter (`vm.rs`) that runs an offloaded
//! XDP program on each received frame, and the maps (`maps.rs`) it and
//! the host share. Not wired to the datapath or the admin queue yet
//! (issue 52): the pieces, tested alone.

pub mod maps;
pub mod vm;

#[cfg(test)]
mod tests;
