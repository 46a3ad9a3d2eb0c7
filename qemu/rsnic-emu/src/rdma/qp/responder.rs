// SPDX-License-Identifier: GPL-2.0

//! The responder, as rxe's `rxe_resp.c`: requests from the peer are
//! checked against the expected PSN (duplicates answered again, gaps
//! NAKed), SENDs land in receive queue buffers, WRITEs and READs in and
//! from registered memory, atomics, FLUSHes and ATOMIC WRITEs run once
//! each; ACKs and NAKs go back.

use super::*;

impl Qp {
    /// The BTH of a response (ACK, READ response, atomic ACK) at `psn`.
    pub(super) fn response_bth(&self, psn: u32) -> Bth {
        Bth {
            pkey: 0xffff,
            dest_qp: self.dest_qpn,
            psn,
            ..Bth::default()
        }
    }

    pub(super) fn ack(&self, kind: AckKind, psn: u32) -> Action {
        let aeth = Aeth {
            kind,
            msn: self.msn,
        };
        self.transmit(&Packet {
            aeth: Some(aeth),
            ..Packet::bare(self.response_bth(psn), Opcode::RcAck)
        })
    }

    /// A packet addressed to this QP.
    pub fn receive(
        &mut self,
        inc: &Incoming<'_>,
        mem: &dyn HostMem,
        mrs: &mut MrTable,
        now: Instant,
        out: &mut Vec<Action>,
    ) {
        // A packet of another transport service than the QP's is
        // silently dropped (IBA 9.6.1.5.1, C9-54), not an error of the QP.
        if !matches!(self.state, QpState::Rtr | QpState::Rts | QpState::Sqd)
            || inc.packet.opcode.service() != self.service()
        {
            self.counters.dropped += 1;
            return;
        }
        if self.qp_type == QpType::Uc {
            self.on_uc_request(&inc.packet, mem, mrs, out);
        } else if self.is_rc() {
            // XRC's opcodes are RC's plus 0xa0: one code serves both.
            let pkt = Packet {
                opcode: inc.packet.opcode.as_rc(),
                ..inc.packet.clone()
            };
            // An XRC initiator only sends requests, a target only
            // answers them.
            match (pkt.opcode.is_response(), self.qp_type) {
                (true, QpType::XrcTgt) | (false, QpType::XrcIni) => self.counters.dropped += 1,
                (true, _) => self.on_response(&pkt, mem, mrs, now, out),
                (false, _) => self.on_request(&pkt, mem, mrs, out),
            }
        } else {
            self.receive_ud(inc, mem, mrs, out);
        }
    }

    pub(super) fn receive_ud(
        &mut self,
        inc: &Incoming<'_>,
        mem: &dyn HostMem,
        mrs: &MrTable,
        out: &mut Vec<Action>,
    ) {
        let pkt = &inc.packet;
        let Some(deth) = pkt.deth else { return };
        if deth.qkey != self.qkey {
            self.counters.dropped += 1;
            return;
        }
        if self.rq.pending() == 0 {
            // UD drops what it has no buffer for.
            self.counters.dropped += 1;
            return;
        }
        let Some(TakenRecv { slot, wqe, .. }) = self.take_recv(mem, out) else {
            return;
        };
        let mut data = inc.grh.to_vec();
        data.extend_from_slice(pkt.payload);
        let mut flags = self.recv_flags() | cqe_flag::GRH;
        if inc.ipv4 {
            flags |= cqe_flag::IPV4;
        }
        let mut status = wc_status::SUCCESS;
        match scatter(&wqe, self.pd, self.db_page != 0, mrs, mem, 0, &data) {
            Ok(()) => {}
            Err(ScatterError::TooLong) => status = wc_status::LOC_LEN_ERR,
            // A UD receive does not wait for a page (the engine does
            // not offer on-demand paging for UD receives).
            Err(ScatterError::Access | ScatterError::PageFault(_)) => {
                status = wc_status::LOC_PROT_ERR
            }
        }
        if pkt.imm.is_some() {
            flags |= cqe_flag::WITH_IMM;
        }
        out.push(Action::Complete {
            recv: true,
            cqe: Cqe {
                wqe_index: slot,
                flags,
                qpn: self.qpn,
                status,
                opcode: wc_op::RECV,
                byte_len: data.len() as u32,
                imm_or_key: pkt.imm.unwrap_or(0),
                src_qp: deth.src_qp,
                smac: inc.smac,
                ..Cqe::default()
            },
            solicited: pkt.bth.solicited,
        });
    }

    pub(super) fn on_request(
        &mut self,
        pkt: &Packet<'_>,
        mem: &dyn HostMem,
        mrs: &mut MrTable,
        out: &mut Vec<Action>,
    ) {
        let psn = pkt.bth.psn;
        let d = psn_diff(psn, self.epsn);
        if d < 0 {
            self.counters.duplicates += 1;
            if pkt.opcode == Opcode::RcReadRequest {
                // Lost responses: answer again with the request's PSNs.
                if let Some(reth) = pkt.reth {
                    let _ = self.read_response(psn, &reth, mem, mrs, out);
                }
            } else if pkt.opcode.answered_by_response() {
                // An atomic's, FLUSH's or ATOMIC WRITE's lost response:
                // the same answer again, the operation not run twice. One
                // too old to be kept gets none.
                match self.replies.iter().find(|r| r.0 == psn) {
                    Some(&(_, Some(orig))) => out.push(self.atomic_ack(psn, orig)),
                    Some(&(_, None)) => out.push(self.empty_read_response(psn)),
                    None => {}
                }
            } else {
                out.push(self.ack(AckKind::Ack(31), psn_add(self.epsn, PSN_MASK)));
            }
            return;
        }
        if d > 0 {
            if !self.nak_sent {
                self.nak_sent = true;
                self.counters.seq_naks_sent += 1;
                out.push(self.ack(AckKind::Nak(NakCode::PsnSequenceError), self.epsn));
            }
            return;
        }
        // An XRC target with no SRQ of its domain for this request
        // (IBA 9.7.5.1.x: invalid XRC SRQ number or domain).
        let result = if self.is_xrc_target() && self.rq.srqn().is_none() {
            Err(NakCode::InvalidRequest)
        } else {
            self.execute_request(pkt, mem, mrs, out)
        };
        self.conclude_request(pkt, result, out);
    }

    /// Runs a request in sequence: its step, or the NAK it earns.
    fn execute_request(
        &mut self,
        pkt: &Packet<'_>,
        mem: &dyn HostMem,
        mrs: &mut MrTable,
        out: &mut Vec<Action>,
    ) -> Result<Step, NakCode> {
        use Opcode::*;
        let psn = pkt.bth.psn;
        let op = pkt.opcode;
        match op {
            RcSendFirst | RcSendMiddle | RcSendLast | RcSendLastImm | RcSendOnly
            | RcSendOnlyImm | RcSendLastInv | RcSendOnlyInv => self.recv_send(pkt, mem, mrs, out),
            RcWriteFirst | RcWriteMiddle | RcWriteLast | RcWriteLastImm | RcWriteOnly
            | RcWriteOnlyImm => self.recv_write(pkt, mem, mrs, out),
            RcReadRequest => match pkt.reth {
                Some(reth) => self.read_response(psn, &reth, mem, mrs, out),
                None => Err(NakCode::InvalidRequest),
            },
            RcCompareSwap | RcFetchAdd => match pkt.atomic {
                Some(a) => self.atomic_response(psn, op, &a, mem, mrs, out),
                None => Err(NakCode::InvalidRequest),
            },
            RcFlush => match (pkt.feth, pkt.reth) {
                (Some(feth), Some(reth)) => self.flush_response(psn, &feth, &reth, mrs, out),
                _ => Err(NakCode::InvalidRequest),
            },
            RcAtomicWrite => match pkt.reth {
                Some(reth) => self.atomic_write_response(psn, &reth, pkt.payload, mem, mrs, out),
                None => Err(NakCode::InvalidRequest),
            },
            _ => Err(NakCode::InvalidRequest),
        }
    }

    /// ACKs, RNR NAKs or NAKs a request in sequence by its `result`; a
    /// NAK fails the QP.
    fn conclude_request(
        &mut self,
        pkt: &Packet<'_>,
        result: Result<Step, NakCode>,
        out: &mut Vec<Action>,
    ) {
        let (psn, op) = (pkt.bth.psn, pkt.opcode);
        match result {
            Ok(Step::Done { packets }) => {
                self.nak_sent = false;
                self.epsn = psn_add(self.epsn, packets);
                if pkt.bth.ack_req && !op.answered_by_response() {
                    out.push(self.ack(AckKind::Ack(31), psn));
                }
            }
            Ok(Step::Rnr) => {
                self.counters.rnr_naks_sent += 1;
                out.push(self.ack(AckKind::RnrNak(self.min_rnr_timer), psn));
            }
            Err(code) => {
                // The requester learns why; this QP fails too (a receive
                // the error hit has completed with it already), and what
                // else is posted is flushed.
                out.push(self.ack(AckKind::Nak(code), psn));
                self.state = QpState::Err;
                self.flush_all(out);
                out.push(Action::Fatal);
            }
        }
    }

    /// A UC request: no ACK, NAK or retry, as rxe does it (`check_psn`,
    /// the class D and E errors). A packet out of sequence drops the
    /// message it belongs to and the rest of it; the next packet that
    /// starts a message is taken at whatever PSN it has. No receive
    /// posted, a SEND too long for its receive or a WRITE the R_Key does
    /// not allow drop the message too (counted in `dropped`); a receive
    /// of a dropped SEND serves the next one. A receive whose own buffers
    /// are bad completes in error and the QP fails, as on RC.
    pub(super) fn on_uc_request(
        &mut self,
        pkt: &Packet<'_>,
        mem: &dyn HostMem,
        mrs: &mut MrTable,
        out: &mut Vec<Action>,
    ) {
        use Opcode::*;
        let op = pkt.opcode.as_rc();
        let starts = matches!(
            op,
            RcSendFirst | RcSendOnly | RcSendOnlyImm | RcWriteFirst | RcWriteOnly | RcWriteOnlyImm
        );
        if self.uc_dropping || pkt.bth.psn != self.epsn {
            if !starts {
                self.uc_drop_message();
                self.counters.dropped += 1;
                return;
            }
            self.epsn = pkt.bth.psn;
        }
        if starts {
            // Whatever message came before and did not end is dropped
            // (a lost last packet, or one cut short in sequence).
            self.uc_drop_message();
            self.uc_dropping = false;
        }
        let as_rc = Packet {
            opcode: op,
            ..pkt.clone()
        };
        let result = match op {
            RcSendFirst | RcSendMiddle | RcSendLast | RcSendLastImm | RcSendOnly
            | RcSendOnlyImm => self.recv_send(&as_rc, mem, mrs, out),
            RcWriteFirst | RcWriteMiddle | RcWriteLast | RcWriteLastImm | RcWriteOnly
            | RcWriteOnlyImm => self.recv_write(&as_rc, mem, mrs, out),
            _ => Err(NakCode::InvalidRequest),
        };
        match result {
            Ok(Step::Done { packets }) => self.epsn = psn_add(self.epsn, packets),
            Ok(Step::Rnr) | Err(NakCode::InvalidRequest | NakCode::RemoteAccessError) => {
                self.uc_drop_message();
                self.uc_dropping = true;
                self.counters.dropped += 1;
                self.epsn = psn_add(pkt.bth.psn, 1);
            }
            Err(_) => {
                self.state = QpState::Err;
                self.flush_all(out);
                out.push(Action::Fatal);
            }
        }
    }

    /// UC: forgets the message being received. A SEND's receive stays,
    /// from its first byte, for the next SEND.
    fn uc_drop_message(&mut self) {
        if let Some(r) = self.receiving.as_mut() {
            r.offset = 0;
        }
        self.writing = None;
    }

    /// Takes the next receive WQE for a new SEND (or WRITE with immediate).
    /// Raises the SRQ limit event if taking it crossed the limit.
    pub(super) fn take_recv(
        &mut self,
        mem: &dyn HostMem,
        out: &mut Vec<Action>,
    ) -> Option<TakenRecv> {
        let taken = self.rq.take(mem)?;
        if let Some(srqn) = taken.limit_reached {
            out.push(Action::SrqLimit(srqn));
        }
        Some(taken)
    }

    pub(super) fn recv_send(
        &mut self,
        pkt: &Packet<'_>,
        mem: &dyn HostMem,
        mrs: &mut MrTable,
        out: &mut Vec<Action>,
    ) -> Result<Step, NakCode> {
        use Opcode::*;
        let first = matches!(
            pkt.opcode,
            RcSendFirst | RcSendOnly | RcSendOnlyImm | RcSendOnlyInv
        );
        let last = !matches!(pkt.opcode, RcSendFirst | RcSendMiddle);
        // UC keeps the receive of a SEND it dropped (at offset 0) for
        // the next SEND; RC the receive of a SEND whose first packet
        // found a page of its buffers untranslated, for that SEND again.
        let kept = self.receiving.as_ref().is_some_and(|r| r.offset == 0);
        if first && !kept {
            if self.receiving.is_some() {
                return Err(NakCode::InvalidRequest);
            }
            if self.rq.pending() == 0 || self.faults.take(RdmaFault::Rnr) {
                return Ok(Step::Rnr);
            }
            self.receiving = self.take_recv(mem, out).map(|t| Receiving {
                slot: t.slot,
                wqe: t.wqe,
                offset: 0,
            });
            if self.receiving.is_none() {
                return Err(NakCode::RemoteOperationalError);
            }
        }
        if !last && pkt.payload.len() != self.path_mtu as usize {
            return Err(NakCode::InvalidRequest);
        }
        let rc = self.is_rc();
        let Some(r) = self.receiving.as_mut() else {
            return Err(NakCode::InvalidRequest);
        };
        match scatter(
            &r.wqe,
            self.pd,
            self.db_page != 0,
            mrs,
            mem,
            r.offset,
            pkt.payload,
        ) {
            Ok(()) => r.offset += pkt.payload.len() as u32,
            Err(ScatterError::TooLong) if !rc => {
                // UC drops the message; the receive serves the next one.
                r.offset = 0;
                return Err(NakCode::InvalidRequest);
            }
            Err(ScatterError::TooLong) => {
                let r = self.receiving.take().unwrap_or_else(|| unreachable!());
                out.push(self.recv_error(r.slot, wc_status::LOC_LEN_ERR));
                return Err(NakCode::InvalidRequest);
            }
            Err(ScatterError::PageFault(e)) => {
                if let Some(fault) = mrs.waits_for(e) {
                    // The receive stays where it got to; the requester
                    // sends this packet again after an RNR wait.
                    out.push(Action::PageFault(fault));
                    return Ok(Step::Rnr);
                }
                let r = self.receiving.take().unwrap_or_else(|| unreachable!());
                out.push(self.recv_error(r.slot, wc_status::LOC_PROT_ERR));
                return Err(NakCode::RemoteOperationalError);
            }
            Err(ScatterError::Access) => {
                let r = self.receiving.take().unwrap_or_else(|| unreachable!());
                out.push(self.recv_error(r.slot, wc_status::LOC_PROT_ERR));
                return Err(NakCode::RemoteOperationalError);
            }
        }
        if last {
            let r = self.receiving.take().unwrap_or_else(|| unreachable!());
            let mut flags = self.recv_flags();
            let mut key = 0;
            if let Some(imm) = pkt.imm {
                flags |= cqe_flag::WITH_IMM;
                key = imm;
            }
            if let Some(rkey) = pkt.inv_rkey {
                if mrs.invalidate(rkey, self.pd, self.db_page != 0).is_err() {
                    out.push(self.recv_error(r.slot, wc_status::LOC_PROT_ERR));
                    return Err(NakCode::InvalidRequest);
                }
                flags |= cqe_flag::WITH_INV;
                key = rkey;
            }
            out.push(Action::Complete {
                recv: true,
                cqe: Cqe {
                    wqe_index: r.slot,
                    flags,
                    qpn: self.qpn,
                    opcode: wc_op::RECV,
                    byte_len: r.offset,
                    imm_or_key: key,
                    src_qp: self.dest_qpn,
                    ..Cqe::default()
                },
                solicited: pkt.bth.solicited,
            });
            self.msn = psn_add(self.msn, 1);
        }
        Ok(Step::Done { packets: 1 })
    }

    pub(super) fn recv_error(&self, slot: u16, status: u8) -> Action {
        Action::Complete {
            recv: true,
            cqe: Cqe {
                wqe_index: slot,
                flags: self.recv_flags(),
                qpn: self.qpn,
                status,
                opcode: wc_op::RECV,
                ..Cqe::default()
            },
            solicited: false,
        }
    }

    pub(super) fn recv_write(
        &mut self,
        pkt: &Packet<'_>,
        mem: &dyn HostMem,
        mrs: &mut MrTable,
        out: &mut Vec<Action>,
    ) -> Result<Step, NakCode> {
        use Opcode::*;
        let first = matches!(pkt.opcode, RcWriteFirst | RcWriteOnly | RcWriteOnlyImm);
        let last = !matches!(pkt.opcode, RcWriteFirst | RcWriteMiddle);
        let imm = matches!(pkt.opcode, RcWriteOnlyImm | RcWriteLastImm);
        // A WRITE with immediate consumes a receive: make sure there is one
        // before any byte lands, so an RNR retry finds nothing half done.
        if imm && self.rq.pending() == 0 {
            return Ok(Step::Rnr);
        }
        if first {
            let reth = pkt.reth.ok_or(NakCode::InvalidRequest)?;
            if self.access & access::REMOTE_WRITE == 0 {
                return Err(NakCode::RemoteAccessError);
            }
            let len = u64::from(reth.len);
            let segs = if len == 0 {
                Vec::new()
            } else {
                match self.remote_memory(mrs, reth.rkey, reth.va, len, access::REMOTE_WRITE, out) {
                    Ok(segs) => segs,
                    Err(answer) => return answer,
                }
            };
            let on_demand = mrs
                .remote_on_demand(reth.rkey)
                .then_some((reth.rkey, reth.va));
            self.writing = Some(Writing {
                segs,
                offset: 0,
                len,
                on_demand,
            });
        }
        if !last && pkt.payload.len() != self.path_mtu as usize {
            return Err(NakCode::InvalidRequest);
        }
        let w = self.writing.as_mut().ok_or(NakCode::InvalidRequest)?;
        let n = pkt.payload.len() as u64;
        if w.offset + n > w.len || (last && w.offset + n != w.len) {
            self.writing = None;
            return Err(NakCode::InvalidRequest);
        }
        let segs = match w.on_demand {
            None => slice_segments(&w.segs, w.offset, n),
            // Translated again: the driver may have taken a page back
            // since the first packet.
            Some((rkey, va)) => {
                let (pd, qpn) = (self.pd, self.qpn);
                let at = va.wrapping_add(w.offset);
                match mrs.resolve_remote(rkey, pd, qpn, at, n, access::REMOTE_WRITE) {
                    Ok(segs) => segs,
                    Err(e) => {
                        let step = remote_fault(mrs, e, out);
                        if step.is_err() {
                            self.writing = None;
                        }
                        return step;
                    }
                }
            }
        };
        if write_segments(mem, &segs, pkt.payload).is_err() {
            self.writing = None;
            return Err(NakCode::RemoteOperationalError);
        }
        w.offset += n;
        if last {
            let total = w.len;
            self.writing = None;
            if imm {
                let r = self
                    .take_recv(mem, out)
                    .ok_or(NakCode::RemoteOperationalError)?;
                out.push(Action::Complete {
                    recv: true,
                    cqe: Cqe {
                        wqe_index: r.slot,
                        flags: self.recv_flags() | cqe_flag::WITH_IMM,
                        qpn: self.qpn,
                        opcode: wc_op::RECV_RDMA_WITH_IMM,
                        byte_len: total as u32,
                        imm_or_key: pkt.imm.unwrap_or(0),
                        src_qp: self.dest_qpn,
                        ..Cqe::default()
                    },
                    solicited: pkt.bth.solicited,
                });
            }
            self.msn = psn_add(self.msn, 1);
        }
        Ok(Step::Done { packets: 1 })
    }

    /// Answers a READ request starting at `psn`.
    pub(super) fn read_response(
        &mut self,
        psn: u32,
        reth: &Reth,
        mem: &dyn HostMem,
        mrs: &mut MrTable,
        out: &mut Vec<Action>,
    ) -> Result<Step, NakCode> {
        if self.access & access::REMOTE_READ == 0 {
            return Err(NakCode::RemoteAccessError);
        }
        let len = u64::from(reth.len);
        let data = if len == 0 {
            Vec::new()
        } else {
            let segs =
                match self.remote_memory(mrs, reth.rkey, reth.va, len, access::REMOTE_READ, out) {
                    Ok(segs) => segs,
                    Err(answer) => return answer,
                };
            read_segments(mem, &segs).map_err(|_| NakCode::RemoteOperationalError)?
        };
        let mtu = self.path_mtu as usize;
        let packets = data.len().div_ceil(mtu).max(1) as u32;
        let msn = psn_add(self.msn, 1);
        for i in 0..packets {
            let first = i == 0;
            let last = i + 1 == packets;
            use Opcode::*;
            let opcode = match (first, last) {
                (true, true) => RcReadResponseOnly,
                (true, false) => RcReadResponseFirst,
                (false, true) => RcReadResponseLast,
                (false, false) => RcReadResponseMiddle,
            };
            let start = (i as usize * mtu).min(data.len());
            let end = ((i as usize + 1) * mtu).min(data.len());
            let aeth = Aeth {
                kind: AckKind::Ack(31),
                msn,
            };
            out.push(self.transmit(&Packet {
                aeth: (first || last).then_some(aeth),
                payload: &data[start..end],
                ..Packet::bare(self.response_bth(psn_add(psn, i)), opcode)
            }));
        }
        if psn == self.epsn {
            self.msn = msn;
        }
        Ok(Step::Done { packets })
    }

    /// Runs an atomic request at `psn` and answers it. The engine
    /// handles one packet at a time, so the read-modify-write is atomic
    /// against every other access by the card (`IB_ATOMIC_HCA`); the
    /// target is 8 bytes in host order, as the CPU reads them.
    pub(super) fn atomic_response(
        &mut self,
        psn: u32,
        op: Opcode,
        a: &AtomicEth,
        mem: &dyn HostMem,
        mrs: &mut MrTable,
        out: &mut Vec<Action>,
    ) -> Result<Step, NakCode> {
        if self.access & access::REMOTE_ATOMIC == 0 {
            return Err(NakCode::RemoteAccessError);
        }
        if !a.va.is_multiple_of(8) {
            return Err(NakCode::InvalidRequest);
        }
        let segs = match self.remote_memory(mrs, a.rkey, a.va, 8, access::REMOTE_ATOMIC, out) {
            Ok(segs) => segs,
            Err(answer) => return answer,
        };
        let old = read_segments(mem, &segs).map_err(|_| NakCode::RemoteOperationalError)?;
        let orig = u64::from_le_bytes(
            old.as_slice()
                .try_into()
                .map_err(|_| NakCode::RemoteOperationalError)?,
        );
        let new = match op {
            Opcode::RcCompareSwap if orig == a.compare => Some(a.swap_add),
            Opcode::RcCompareSwap => None,
            _ => Some(orig.wrapping_add(a.swap_add)),
        };
        if let Some(new) = new {
            write_segments(mem, &segs, &new.to_le_bytes())
                .map_err(|_| NakCode::RemoteOperationalError)?;
        }
        self.msn = psn_add(self.msn, 1);
        self.remember_reply(psn, Some(orig));
        out.push(self.atomic_ack(psn, orig));
        Ok(Step::Done { packets: 1 })
    }

    /// Keeps the response to the request at `psn` for a retry of it.
    fn remember_reply(&mut self, psn: u32, reply: Option<u64>) {
        if self.replies.len() == REPLIES {
            self.replies.pop_front();
        }
        self.replies.push_back((psn, reply));
    }

    /// Runs a FLUSH at `psn` and answers it with an empty READ response,
    /// as rxe does. Placement type global visibility: the engine puts
    /// each packet's data in host memory before it takes the next packet,
    /// so every earlier WRITE is there; a fence orders the engine's
    /// stores before the response. Persistence is refused
    /// (RemoteAccessError, as a region without the right gets): host
    /// memory is not persistent, and no region has the right.
    pub(super) fn flush_response(
        &mut self,
        psn: u32,
        feth: &Feth,
        reth: &Reth,
        mrs: &MrTable,
        out: &mut Vec<Action>,
    ) -> Result<Step, NakCode> {
        let known = flush::GLOBAL | flush::PERSISTENT;
        if feth.level > flush::MR || feth.placement == 0 || feth.placement & !known != 0 {
            return Err(NakCode::InvalidRequest);
        }
        if feth.placement & flush::PERSISTENT != 0 || self.access & access::FLUSH_GLOBAL == 0 {
            return Err(NakCode::RemoteAccessError);
        }
        let need = access::FLUSH_GLOBAL;
        let allowed = if feth.level == flush::MR {
            // The whole region: the RETH's address and length mean nothing.
            mrs.check_remote(reth.rkey, self.pd, self.qpn, need)
        } else {
            let len = u64::from(reth.len);
            // An untranslated page of an on-demand region holds nothing
            // the card wrote: nothing to flush there, no fault.
            match mrs.resolve_remote(reth.rkey, self.pd, self.qpn, reth.va, len, need) {
                Ok(_) | Err(AccessError::PageFault { .. }) => Ok(()),
                Err(e) => Err(e),
            }
        };
        allowed.map_err(|_| NakCode::RemoteAccessError)?;
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        self.msn = psn_add(self.msn, 1);
        self.remember_reply(psn, None);
        out.push(self.empty_read_response(psn));
        Ok(Step::Done { packets: 1 })
    }

    /// Runs an ATOMIC WRITE at `psn`: its 8 bytes land in one store (a
    /// CPU reading them sees all or none), then an empty READ response.
    /// The target needs remote write; the length must be exactly 8 and
    /// the address 8-byte aligned (IBA oA19-28).
    pub(super) fn atomic_write_response(
        &mut self,
        psn: u32,
        reth: &Reth,
        payload: &[u8],
        mem: &dyn HostMem,
        mrs: &mut MrTable,
        out: &mut Vec<Action>,
    ) -> Result<Step, NakCode> {
        if self.access & access::REMOTE_WRITE == 0 {
            return Err(NakCode::RemoteAccessError);
        }
        let value: [u8; ATOMIC_WRITE_LEN] =
            payload.try_into().map_err(|_| NakCode::InvalidRequest)?;
        if reth.len as usize != ATOMIC_WRITE_LEN || !reth.va.is_multiple_of(8) {
            return Err(NakCode::InvalidRequest);
        }
        let segs = match self.remote_memory(mrs, reth.rkey, reth.va, 8, access::REMOTE_WRITE, out) {
            Ok(segs) => segs,
            Err(answer) => return answer,
        };
        let written = match segs.as_slice() {
            [(addr, 8)] => mem.write_u64(*addr, value),
            // Aligned 8 bytes never cross a page; a region of pages
            // smaller than that is not one the driver registers.
            _ => write_segments(mem, &segs, &value),
        };
        written.map_err(|_| NakCode::RemoteOperationalError)?;
        self.msn = psn_add(self.msn, 1);
        self.remember_reply(psn, None);
        out.push(self.empty_read_response(psn));
        Ok(Step::Done { packets: 1 })
    }

    /// The memory `len` bytes at `va` of the peer's key `rkey` reach,
    /// with the `need` rights; else what to answer instead
    /// ([`remote_fault`]).
    fn remote_memory(
        &self,
        mrs: &mut MrTable,
        rkey: u32,
        va: u64,
        len: u64,
        need: u32,
        out: &mut Vec<Action>,
    ) -> Result<Vec<Segment>, Result<Step, NakCode>> {
        mrs.resolve_remote(rkey, self.pd, self.qpn, va, len, need)
            .map_err(|e| remote_fault(mrs, e, out))
    }

    /// The response to a FLUSH or ATOMIC WRITE: an empty READ response.
    pub(super) fn empty_read_response(&self, psn: u32) -> Action {
        let aeth = Aeth {
            kind: AckKind::Ack(31),
            msn: self.msn,
        };
        self.transmit(&Packet {
            aeth: Some(aeth),
            ..Packet::bare(self.response_bth(psn), Opcode::RcReadResponseOnly)
        })
    }

    pub(super) fn atomic_ack(&self, psn: u32, orig: u64) -> Action {
        let aeth = Aeth {
            kind: AckKind::Ack(31),
            msn: self.msn,
        };
        self.transmit(&Packet {
            aeth: Some(aeth),
            atomic_ack: Some(orig),
            ..Packet::bare(self.response_bth(psn), Opcode::RcAtomicAck)
        })
    }
}

/// A peer's request refused with `e`: an untranslated page of an
/// on-demand region is answered with an RNR NAK (the requester sends it
/// again after its wait, as mlx5 answers it) and raises the page-fault
/// event; anything else, including a page the driver could not map, is
/// a remote access error.
fn remote_fault(mrs: &mut MrTable, e: AccessError, out: &mut Vec<Action>) -> Result<Step, NakCode> {
    match mrs.waits_for(e) {
        Some(fault) => {
            out.push(Action::PageFault(fault));
            Ok(Step::Rnr)
        }
        None => Err(NakCode::RemoteAccessError),
    }
}
