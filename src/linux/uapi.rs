// SPDX-License-Identifier: GPL-2.0

//! The module's user ABI (`include/uapi/rdma/rsnic-abi.h`) as bindgen
//! generates it: the structures the driver and its libibverbs provider
//! exchange. The one place the layer names the driver's own types, for
//! the reason the kernel's `uapi` crate exists: a C header that user space
//! compiles is the single declaration of the layout.

use kernel::transmute::AsBytes;

pub(crate) use super::bindings::{
    rsnic_ib_alloc_ucontext_resp as AllocUcontextResp, RSNIC_UVERBS_ABI_VERSION as ABI_VERSION,
};

// SAFETY: Four `__u32` fields, no padding: every byte is initialised.
unsafe impl AsBytes for AllocUcontextResp {}
