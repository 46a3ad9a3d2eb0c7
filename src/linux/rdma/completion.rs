// SPDX-License-Identifier: GPL-2.0

//! Work completions as the driver reports them (`ib_wc`), with the C
//! enums of their status and opcode as Rust enums.

use crate::linux::bindings;
use crate::linux::rdma::verbs::QpHandle;

/// Declares a Rust enum mirroring a C enum: each variant with the C
/// constant it stands for, and the conversions both ways.
macro_rules! c_enum {
    (
        $(#[$meta:meta])*
        $name:ident: $raw:ty {
            $( $(#[$vmeta:meta])* $variant:ident = $c:path, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(crate) enum $name {
            $( $(#[$vmeta])* $variant, )*
        }

        impl $name {
            /// The value, if it is one of this enum's.
            #[allow(dead_code)]
            pub(crate) fn from_raw(v: $raw) -> Option<Self> {
                match v {
                    $( $c => Some(Self::$variant), )*
                    _ => None,
                }
            }

            pub(super) fn to_raw(self) -> $raw {
                match self {
                    $( Self::$variant => $c, )*
                }
            }
        }
    };
}

c_enum! {
    /// Completion status (`enum ib_wc_status`).
    WcStatus: bindings::ib_wc_status {
        /// Success.
        Success = bindings::ib_wc_status_IB_WC_SUCCESS,
        /// Local length error.
        LocLenErr = bindings::ib_wc_status_IB_WC_LOC_LEN_ERR,
        /// Local QP operation error.
        LocQpOpErr = bindings::ib_wc_status_IB_WC_LOC_QP_OP_ERR,
        /// Local EE context operation error.
        LocEecOpErr = bindings::ib_wc_status_IB_WC_LOC_EEC_OP_ERR,
        /// Local protection error.
        LocProtErr = bindings::ib_wc_status_IB_WC_LOC_PROT_ERR,
        /// Flushed: the QP is in error.
        WrFlushErr = bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR,
        /// Memory window bind error.
        MwBindErr = bindings::ib_wc_status_IB_WC_MW_BIND_ERR,
        /// Bad response.
        BadRespErr = bindings::ib_wc_status_IB_WC_BAD_RESP_ERR,
        /// Local access error.
        LocAccessErr = bindings::ib_wc_status_IB_WC_LOC_ACCESS_ERR,
        /// Remote invalid request.
        RemInvReqErr = bindings::ib_wc_status_IB_WC_REM_INV_REQ_ERR,
        /// Remote access error.
        RemAccessErr = bindings::ib_wc_status_IB_WC_REM_ACCESS_ERR,
        /// Remote operation error.
        RemOpErr = bindings::ib_wc_status_IB_WC_REM_OP_ERR,
        /// Transport retries exhausted.
        RetryExcErr = bindings::ib_wc_status_IB_WC_RETRY_EXC_ERR,
        /// RNR retries exhausted.
        RnrRetryExcErr = bindings::ib_wc_status_IB_WC_RNR_RETRY_EXC_ERR,
        /// Local RDD violation.
        LocRddViolErr = bindings::ib_wc_status_IB_WC_LOC_RDD_VIOL_ERR,
        /// Remote invalid RD request.
        RemInvRdReqErr = bindings::ib_wc_status_IB_WC_REM_INV_RD_REQ_ERR,
        /// Remote aborted.
        RemAbortErr = bindings::ib_wc_status_IB_WC_REM_ABORT_ERR,
        /// Invalid EE context number.
        InvEecnErr = bindings::ib_wc_status_IB_WC_INV_EECN_ERR,
        /// Invalid EE context state.
        InvEecStateErr = bindings::ib_wc_status_IB_WC_INV_EEC_STATE_ERR,
        /// Fatal error.
        FatalErr = bindings::ib_wc_status_IB_WC_FATAL_ERR,
        /// Response timeout.
        RespTimeoutErr = bindings::ib_wc_status_IB_WC_RESP_TIMEOUT_ERR,
        /// Other error.
        GeneralErr = bindings::ib_wc_status_IB_WC_GENERAL_ERR,
    }
}

c_enum! {
    /// What a completed work request did (`enum ib_wc_opcode`).
    WcOpcode: bindings::ib_wc_opcode {
        /// SEND.
        Send = bindings::ib_wc_opcode_IB_WC_SEND,
        /// RDMA WRITE.
        RdmaWrite = bindings::ib_wc_opcode_IB_WC_RDMA_WRITE,
        /// RDMA READ.
        RdmaRead = bindings::ib_wc_opcode_IB_WC_RDMA_READ,
        /// Atomic compare-and-swap.
        CompSwap = bindings::ib_wc_opcode_IB_WC_COMP_SWAP,
        /// Atomic fetch-and-add.
        FetchAdd = bindings::ib_wc_opcode_IB_WC_FETCH_ADD,
        /// Local invalidate.
        LocalInv = bindings::ib_wc_opcode_IB_WC_LOCAL_INV,
        /// Memory registration.
        RegMr = bindings::ib_wc_opcode_IB_WC_REG_MR,
        /// A receive.
        Recv = bindings::ib_wc_opcode_IB_WC_RECV,
        /// A receive of RDMA WRITE with immediate data.
        RecvRdmaWithImm = bindings::ib_wc_opcode_IB_WC_RECV_RDMA_WITH_IMM,
    }
}

/// The network header of a UD receive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NetworkHdr {
    /// IPv4 (in the last 20 bytes of the 40-byte GRH area).
    Ipv4,
    /// IPv6.
    Ipv6,
}

/// A work completion the driver reports.
pub(crate) struct WorkCompletion<'a> {
    /// The work request's cookie.
    pub(crate) wr_id: u64,
    /// Status.
    pub(crate) status: WcStatus,
    /// What the request did.
    pub(crate) opcode: WcOpcode,
    /// Bytes.
    pub(crate) byte_len: u32,
    /// The QP.
    pub(crate) qp: &'a QpHandle,
    /// Immediate data.
    pub(crate) imm: Option<u32>,
    /// The rkey the peer invalidated.
    pub(crate) invalidated: Option<u32>,
    /// UD: sending QP.
    pub(crate) src_qp: u32,
    /// UD: a GRH area precedes the data, with this network header.
    pub(crate) grh: Option<NetworkHdr>,
    /// UD: sender's MAC.
    pub(crate) smac: Option<[u8; 6]>,
}

/// The completion array of one `poll_cq`.
pub(crate) struct WcWriter<'a> {
    out: &'a mut [bindings::ib_wc],
    written: usize,
}

impl<'a> WcWriter<'a> {
    pub(super) fn new(out: &'a mut [bindings::ib_wc]) -> Self {
        Self { out, written: 0 }
    }

    pub(super) fn written(&self) -> usize {
        self.written
    }

    /// Whether another completion fits.
    pub(crate) fn has_room(&self) -> bool {
        self.written < self.out.len()
    }

    /// Adds a completion; false if the array is full.
    pub(crate) fn push(&mut self, c: WorkCompletion<'_>) -> bool {
        let Some(wc) = self.out.get_mut(self.written) else {
            return false;
        };
        // SAFETY: Plain C struct; all-zero is a valid value of it.
        *wc = unsafe { core::mem::zeroed() };
        wc.__bindgen_anon_1.wr_id = c.wr_id;
        wc.status = c.status.to_raw();
        wc.opcode = c.opcode.to_raw();
        wc.byte_len = c.byte_len;
        wc.qp = c.qp.as_raw();
        wc.src_qp = c.src_qp;
        // SAFETY: The QP is live (the handle's invariant); `port` is set
        // before any completion.
        wc.port_num = unsafe { (*c.qp.as_raw()).port }.max(1);
        let mut flags = 0;
        if let Some(imm) = c.imm {
            wc.ex.imm_data = imm;
            flags |= bindings::ib_wc_flags_IB_WC_WITH_IMM;
        }
        if let Some(key) = c.invalidated {
            wc.ex.invalidate_rkey = key;
            flags |= bindings::ib_wc_flags_IB_WC_WITH_INVALIDATE;
        }
        if let Some(hdr) = c.grh {
            flags |=
                bindings::ib_wc_flags_IB_WC_GRH | bindings::ib_wc_flags_IB_WC_WITH_NETWORK_HDR_TYPE;
            wc.network_hdr_type = match hdr {
                // CAST: `enum rdma_network_type` values are 0 to 3.
                NetworkHdr::Ipv4 => bindings::rdma_network_type_RDMA_NETWORK_IPV4 as u8,
                NetworkHdr::Ipv6 => bindings::rdma_network_type_RDMA_NETWORK_IPV6 as u8,
            };
        }
        if let Some(mac) = c.smac {
            wc.smac = mac;
            flags |= bindings::ib_wc_flags_IB_WC_WITH_SMAC;
        }
        // CAST: `enum ib_wc_flags` bits, kept in an int.
        wc.wc_flags = flags as i32;
        self.written += 1;
        true
    }
}
