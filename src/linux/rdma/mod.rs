// SPDX-License-Identifier: GPL-2.0

//! RDMA: devices registered with ib_core (`struct ib_device`) and the
//! verbs' objects and messages.

pub(crate) mod completion;
pub(crate) mod device;
pub(crate) mod device_adapter;
pub(crate) mod dm;
pub(crate) mod mmap;
pub(crate) mod odp;
pub(crate) mod udata;
pub(crate) mod umem;
pub(crate) mod verbs;
pub(crate) mod work_request;
