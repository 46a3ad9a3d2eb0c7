// SPDX-License-Identifier: GPL-2.0

//! A process's context on the RDMA device (`ibv_open_device` through the
//! provider library): what the provider learns when it opens the device.

use kernel::prelude::*;

use crate::hw::rdma::{CQE_LEN, MAX_SGE, RQ_WQE_LEN, SQ_WQE_LEN};
use crate::linux::{rdma::udata::UserData, uapi};

/// A user context's driver state.
#[pin_data]
pub(crate) struct RdmaUcontext {}

impl RdmaUcontext {
    /// A context for a process that opened the device, after telling its
    /// provider the formats of the card's queue entries.
    pub(super) fn new(udata: &mut UserData<'_>) -> Result<impl PinInit<Self, Error>> {
        let wire = |len: usize| u32::try_from(len).map_err(|_| EINVAL);
        udata.respond(&uapi::AllocUcontextResp {
            sq_wqe_len: wire(SQ_WQE_LEN)?,
            rq_wqe_len: wire(RQ_WQE_LEN)?,
            cqe_len: wire(CQE_LEN)?,
            max_sge: wire(MAX_SGE)?,
        })?;
        Ok(try_pin_init!(Self {}? Error))
    }
}
