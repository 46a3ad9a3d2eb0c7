// SPDX-License-Identifier: GPL-2.0

//! The module's user ABI (`include/uapi/rdma/rsnic-abi.h`) as bindgen
//! generates it: the structures the driver and its libibverbs provider
//! exchange. The one place the layer names the driver's own types, for
//! the reason the kernel's `uapi` crate exists: a C header that user space
//! compiles is the single declaration of the layout.

use kernel::transmute::{AsBytes, FromBytes};

pub(crate) use super::bindings::{
    rsnic_ib_alloc_ucontext_resp as AllocUcontextResp, rsnic_ib_create_ah_resp as CreateAhResp,
    rsnic_ib_create_cq_resp as CreateCqResp, rsnic_ib_create_qp_resp as CreateQpResp,
    rsnic_ib_create_srq_resp as CreateSrqResp, rsnic_ib_resize_cq as ResizeCqReq,
    rsnic_ib_resize_cq_resp as ResizeCqResp, RSNIC_DM_MAX_HANDLE as DM_MAX_HANDLE,
    RSNIC_DM_MMAP_PGOFF_BASE as DM_MMAP_PGOFF_BASE, RSNIC_DM_MMAP_SLOT_PAGES as DM_MMAP_SLOT_PAGES,
    RSNIC_UVERBS_ABI_VERSION as ABI_VERSION,
};

// SAFETY: Four `__u32` then a `__u64` at offset 16: no padding, every
// byte is initialised.
unsafe impl AsBytes for AllocUcontextResp {}
// SAFETY: A `__u64` then two `__u32`: no padding.
unsafe impl AsBytes for CreateCqResp {}
// SAFETY: Two `__u64` then four `__u32`: no padding.
unsafe impl AsBytes for CreateQpResp {}
// SAFETY: Eight bytes: no padding.
unsafe impl AsBytes for CreateAhResp {}
// SAFETY: A `__u64` then two `__u32`: no padding.
unsafe impl AsBytes for CreateSrqResp {}
// SAFETY: Two `__u32`: no padding.
unsafe impl AsBytes for ResizeCqReq {}
// SAFETY: Two `__u32`: any bytes are a valid value.
unsafe impl FromBytes for ResizeCqReq {}
// SAFETY: A `__u64` then two `__u32`: no padding.
unsafe impl AsBytes for ResizeCqResp {}
