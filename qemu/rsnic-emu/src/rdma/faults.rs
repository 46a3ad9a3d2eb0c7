// SPDX-License-Identifier: GPL-2.0

//! Faults the harness injects into the RDMA engine (`rdma-fault`), so
//! tests can see the driver and ib_core report errors the engine detects
//! for real.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// A way to make the engine misbehave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RdmaFault {
    /// The next RDMA READ or WRITE this card requests carries a wrong
    /// R_Key: the peer's responder finds no such region and NAKs it with
    /// a remote access error.
    BadRkey,
    /// The next QP state change is refused, as for an illegal transition.
    RejectModify,
    /// The responder answers the next new SEND with an RNR NAK, as if its
    /// receive queue were empty: the peer's requester must wait the RNR
    /// timer and send it again.
    Rnr,
}

impl RdmaFault {
    /// The fault a harness name (`bad-rkey`, `reject-modify`, `rnr`)
    /// stands for.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "bad-rkey" => Some(Self::BadRkey),
            "reject-modify" => Some(Self::RejectModify),
            "rnr" => Some(Self::Rnr),
            _ => None,
        }
    }
}

/// Faults armed and injected. Shared by the engine and its QPs.
#[derive(Debug, Default)]
pub struct RdmaFaults {
    bad_rkeys: AtomicU32,
    reject_modifies: AtomicU32,
    rnrs: AtomicU32,
    injected: AtomicU64,
}

impl RdmaFaults {
    fn counter(&self, fault: RdmaFault) -> &AtomicU32 {
        match fault {
            RdmaFault::BadRkey => &self.bad_rkeys,
            RdmaFault::RejectModify => &self.reject_modifies,
            RdmaFault::Rnr => &self.rnrs,
        }
    }

    /// The next `n` occasions for `fault` get it (0 cancels).
    pub fn arm(&self, fault: RdmaFault, n: u32) {
        self.counter(fault).store(n, Ordering::Relaxed);
    }

    /// Whether this occasion gets `fault` (one armed occasion used up).
    pub fn take(&self, fault: RdmaFault) -> bool {
        let taken = self
            .counter(fault)
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok();
        if taken {
            self.injected.fetch_add(1, Ordering::Relaxed);
        }
        taken
    }

    /// For the harness: `rnr=N bad_rkey=N reject_modify=N injected=N`
    /// (armed, and injected in all).
    pub fn describe(&self) -> String {
        format!(
            "rnr={} bad_rkey={} reject_modify={} injected={}",
            self.rnrs.load(Ordering::Relaxed),
            self.bad_rkeys.load(Ordering::Relaxed),
            self.reject_modifies.load(Ordering::Relaxed),
            self.injected.load(Ordering::Relaxed)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn armed_faults_are_used_up_one_by_one() {
        let f = RdmaFaults::default();
        assert!(!f.take(RdmaFault::BadRkey));
        f.arm(RdmaFault::BadRkey, 2);
        assert!(!f.take(RdmaFault::RejectModify));
        assert!(f.take(RdmaFault::BadRkey));
        assert!(f.take(RdmaFault::BadRkey));
        assert!(!f.take(RdmaFault::BadRkey));
        assert_eq!(f.describe(), "rnr=0 bad_rkey=0 reject_modify=0 injected=2");
        assert_eq!(
            RdmaFault::from_name("reject-modify"),
            Some(RdmaFault::RejectModify)
        );
        assert_eq!(RdmaFault::from_name("rnr"), Some(RdmaFault::Rnr));
        assert_eq!(RdmaFault::from_name("melt"), None);
    }
}
