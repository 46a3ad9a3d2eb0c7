// SPDX-License-Identifier: GPL-2.0

//! A process's context on the RDMA device (`ibv_open_device` through the
//! provider library): what the provider learns when it opens the device,
//! and the doorbell page only this process's queues answer to.

use kernel::{page::PAGE_SIZE, prelude::*};

use crate::hw::rdma::{udb, CQE_LEN, MAX_SGE, RQ_WQE_LEN, SQ_WQE_LEN};
use crate::linux::{
    rdma::{
        mmap::{MapTarget, UserMapping},
        udata::UserData,
    },
    uapi,
};

/// A user context's driver state.
#[pin_data]
pub(crate) struct RdmaUcontext {
    /// Its page of the card's user doorbell BAR ([`udb`]); the card
    /// creates this context's CQs and QPs with it.
    page: u32,
    _doorbells: UserMapping,
}

impl RdmaUcontext {
    /// A context for a process that opened the device, rung through
    /// doorbell page `page` of the BAR at physical address `bar`; tells
    /// its provider the formats of the card's queue entries and where
    /// its doorbells are.
    pub(super) fn new(
        udata: &mut UserData<'_>,
        bar: u64,
        page: u32,
    ) -> Result<impl PinInit<Self, Error>> {
        const { assert!(udb::PAGE_SIZE == PAGE_SIZE) };
        let phys = bar + u64::from(page) * udb::PAGE_SIZE as u64;
        let doorbells = udata.map(MapTarget::Registers { phys })?;
        let wire = |len: usize| u32::try_from(len).map_err(|_| EINVAL);
        udata.respond(&uapi::AllocUcontextResp {
            sq_wqe_len: wire(SQ_WQE_LEN)?,
            rq_wqe_len: wire(RQ_WQE_LEN)?,
            cqe_len: wire(CQE_LEN)?,
            max_sge: wire(MAX_SGE)?,
            db_offset: doorbells.offset(),
        })?;
        Ok(try_pin_init!(Self {
            page,
            _doorbells: doorbells,
        }? Error))
    }

    /// Its doorbell page.
    pub(crate) fn page(&self) -> u32 {
        self.page
    }
}
