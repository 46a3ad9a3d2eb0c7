// SPDX-License-Identifier: GPL-2.0

//! The completer, as rxe's `rxe_comp.c`: ACKs, NAKs and read and
//! atomic responses retire what is in flight and complete its work
//! requests; the timer retransmits after a timeout, and a sequence or
//! RNR NAK makes the requester send again from where the responder is.

use super::*;

impl Qp {
    /// Completes `f` successfully (if signaled).
    pub(super) fn complete(&self, f: &InFlight, out: &mut Vec<Action>) {
        if f.wqe.flags & wqe_flag::SIGNALED == 0 {
            return;
        }
        // An atomic's segments hold its 8 bytes, a READ's its data; a
        // FLUSH has none, an ATOMIC WRITE its 8 bytes in `data`.
        let len = if f.is_read() || f.is_atomic() {
            f.read_segs.iter().map(|s| s.1).sum::<u64>() as u32
        } else {
            f.data.len() as u32
        };
        out.push(Action::Complete {
            recv: false,
            cqe: Cqe {
                wqe_index: f.slot,
                qpn: self.qpn,
                opcode: send_wc_op(f.wqe.opcode),
                byte_len: len,
                ..Cqe::default()
            },
            solicited: false,
        });
    }

    /// Progress was made: fresh retry budget and timer.
    pub(super) fn progressed(&mut self, now: Instant) {
        self.retries_left = self.retry_cnt;
        self.rnr_left = self.rnr_retry;
        self.deadline = (!self.inflight.is_empty()).then(|| now + self.timeout);
    }

    /// Everything up to `psn` is acknowledged: SENDs and WRITEs up to it
    /// complete; a READ or an atomic completes only with its response.
    pub(super) fn acknowledge(&mut self, psn: u32, now: Instant, out: &mut Vec<Action>) {
        let mut any = false;
        while let Some(f) = self.inflight.front() {
            if f.awaits_response() || psn_diff(psn, f.last_psn()) < 0 {
                break;
            }
            let f = self.inflight.pop_front().unwrap_or_else(|| unreachable!());
            self.complete(&f, out);
            any = true;
        }
        if any {
            self.progressed(now);
        }
    }

    /// Resends from the request holding `psn` (or from the oldest). A
    /// READ is asked for again from its first missing response: the data
    /// that landed stays (IBA lets a requester reissue a READ for the
    /// rest, and rxe does).
    pub(super) fn resend_from(&mut self, psn: Option<u32>, out: &mut Vec<Action>) {
        let mut started = false;
        let list: Vec<InFlight> = self.inflight.iter().cloned().collect();
        for f in &list {
            let from = match psn {
                _ if started => 0,
                None => 0,
                Some(p) => {
                    let d = psn_diff(p, f.first_psn);
                    if d < 0 || d >= f.packets as i32 {
                        continue;
                    }
                    d as u32
                }
            };
            started = true;
            let from = if f.awaits_response() {
                f.read_packets
            } else {
                from
            };
            // A READ is one request packet, whatever it asks for.
            let packets = if f.awaits_response() {
                1
            } else {
                f.packets - from
            };
            self.counters.retransmits += u64::from(packets);
            self.emit(f, from, out);
        }
    }

    /// Timers: retransmission timeout, end of an RNR wait.
    pub fn tick(
        &mut self,
        mem: &dyn HostMem,
        mrs: &mut MrTable,
        now: Instant,
        out: &mut Vec<Action>,
    ) {
        if self.state == QpState::Err {
            return;
        }
        if let Some(at) = self.rnr_resend_at {
            if now >= at {
                self.rnr_resend_at = None;
                self.resend_from(None, out);
                self.deadline = Some(now + self.timeout);
                self.process_sq(mem, mrs, now, out);
            }
        }
        let Some(deadline) = self.deadline else {
            return;
        };
        if now < deadline || self.rnr_resend_at.is_some() || self.odp_wait.is_some() {
            return;
        }
        let Some(head) = self.inflight.front() else {
            self.deadline = None;
            return;
        };
        self.counters.timeouts += 1;
        if self.retries_left == 0 {
            let (slot, op) = (head.slot, send_wc_op(head.wqe.opcode));
            self.inflight.pop_front();
            self.fail(false, slot, op, wc_status::RETRY_EXC_ERR, out);
            return;
        }
        self.retries_left -= 1;
        self.read_gap_at = None;
        self.resend_from(None, out);
        self.deadline = Some(now + self.timeout);
    }

    /// The response awaited by the FLUSH or ATOMIC WRITE at `idx` of
    /// what is in flight: one empty READ response at its PSN (as rxe
    /// answers them). It completes the request and those before it.
    fn on_empty_response(
        &mut self,
        idx: usize,
        pkt: &Packet<'_>,
        mem: &dyn HostMem,
        mrs: &mut MrTable,
        now: Instant,
        out: &mut Vec<Action>,
    ) {
        let f = &self.inflight[idx];
        if pkt.bth.psn != f.first_psn {
            return; // A duplicate, or not the response awaited.
        }
        if pkt.opcode != Opcode::RcReadResponseOnly || !pkt.payload.is_empty() {
            self.fail_inflight(idx, wc_status::BAD_RESP_ERR, out);
            return;
        }
        self.complete_through(idx, mem, mrs, now, out);
    }

    /// Fails the request at `idx` of what is in flight with `status`.
    fn fail_inflight(&mut self, idx: usize, status: u8, out: &mut Vec<Action>) {
        if let Some(f) = self.inflight.remove(idx) {
            self.fail(false, f.slot, send_wc_op(f.wqe.opcode), status, out);
        }
    }

    /// The request at `idx` is answered: it and those before it complete,
    /// and the send queue may go on.
    fn complete_through(
        &mut self,
        idx: usize,
        mem: &dyn HostMem,
        mrs: &mut MrTable,
        now: Instant,
        out: &mut Vec<Action>,
    ) {
        for _ in 0..=idx {
            if let Some(done) = self.inflight.pop_front() {
                self.complete(&done, out);
            }
        }
        self.progressed(now);
        self.process_sq(mem, mrs, now, out);
    }

    /// Where the response at `psn` to the READ or atomic at `idx` of
    /// what is in flight lands: `Ok(None)`, its segments as resolved when
    /// it was sent; `Ok(Some)`, for local SGEs on an on-demand region,
    /// as they are now (the driver may have taken a page back since the
    /// request left). `Err`: not now: the requester is held for a page
    /// (the response dropped, asked for again once mapped), or the
    /// request failed (a page the driver cannot map).
    fn landing(
        &mut self,
        idx: usize,
        psn: u32,
        mrs: &mut MrTable,
        out: &mut Vec<Action>,
    ) -> Result<Option<Vec<Segment>>, ()> {
        let f = &self.inflight[idx];
        if !f.on_demand {
            return Ok(None);
        }
        let sges = if f.is_atomic() {
            vec![Sge {
                len: 8,
                ..f.wqe.sge[0]
            }]
        } else {
            let n = usize::from(f.wqe.num_sge).min(f.wqe.sge.len());
            f.wqe.sge[..n].to_vec()
        };
        match self.local_segments(&sges, access::LOCAL_WRITE, mrs) {
            Ok(segs) => Ok(Some(segs)),
            Err(e) => {
                match mrs.waits_for(e) {
                    Some(fault) => self.hold_for(fault, Some(psn), out),
                    None => self.fail_inflight(idx, wc_status::LOC_PROT_ERR, out),
                }
                Err(())
            }
        }
    }

    /// An ACK, NAK or READ response for this QP's requester.
    pub(super) fn on_response(
        &mut self,
        pkt: &Packet<'_>,
        mem: &dyn HostMem,
        mrs: &mut MrTable,
        now: Instant,
        out: &mut Vec<Action>,
    ) {
        let psn = pkt.bth.psn;
        match pkt.opcode {
            Opcode::RcAck => {
                let Some(aeth) = pkt.aeth else { return };
                match aeth.kind {
                    AckKind::Ack(_) => self.acknowledge(psn, now, out),
                    AckKind::RnrNak(code) => {
                        self.acknowledge(psn_add(psn, PSN_MASK), now, out);
                        if self.rnr_retry != 7 {
                            if self.rnr_left == 0 {
                                if let Some(f) = self.inflight.pop_front() {
                                    let op = send_wc_op(f.wqe.opcode);
                                    self.fail(false, f.slot, op, wc_status::RNR_RETRY_EXC_ERR, out);
                                }
                                return;
                            }
                            self.rnr_left -= 1;
                        }
                        let wait = Duration::from_micros(rnr_timer_us(code)).max(MIN_RNR_WAIT);
                        self.rnr_resend_at = Some(now + wait);
                    }
                    AckKind::Nak(NakCode::PsnSequenceError) => {
                        self.acknowledge(psn_add(psn, PSN_MASK), now, out);
                        if self.retries_left == 0 {
                            if let Some(f) = self.inflight.pop_front() {
                                let op = send_wc_op(f.wqe.opcode);
                                self.fail(false, f.slot, op, wc_status::RETRY_EXC_ERR, out);
                            }
                            return;
                        }
                        self.retries_left -= 1;
                        self.resend_from(Some(psn), out);
                        self.deadline = Some(now + self.timeout);
                    }
                    AckKind::Nak(code) => {
                        self.acknowledge(psn_add(psn, PSN_MASK), now, out);
                        let status = match code {
                            NakCode::RemoteAccessError => wc_status::REM_ACCESS_ERR,
                            NakCode::RemoteOperationalError => wc_status::REM_OP_ERR,
                            _ => wc_status::REM_INV_REQ_ERR,
                        };
                        if let Some(f) = self.inflight.pop_front() {
                            let op = send_wc_op(f.wqe.opcode);
                            self.fail(false, f.slot, op, status, out);
                        }
                    }
                }
            }
            // Held for a page where a response lands: the responses
            // are asked for again once it is mapped.
            Opcode::RcReadResponseFirst
            | Opcode::RcReadResponseMiddle
            | Opcode::RcReadResponseLast
            | Opcode::RcReadResponseOnly
            | Opcode::RcAtomicAck
                if self.odp_wait.is_some() => {}
            Opcode::RcReadResponseFirst
            | Opcode::RcReadResponseMiddle
            | Opcode::RcReadResponseLast
            | Opcode::RcReadResponseOnly => {
                // Requests before the READ are implicitly acknowledged.
                let Some(idx) = self.inflight.iter().position(|f| f.awaits_response()) else {
                    return;
                };
                if self.inflight[idx].is_flush_or_atomic_write() {
                    self.on_empty_response(idx, pkt, mem, mrs, now, out);
                    return;
                }
                if !self.inflight[idx].is_read() {
                    return;
                }
                let f = &self.inflight[idx];
                let expect = psn_add(f.first_psn, f.read_packets);
                if psn != expect {
                    // Ahead: responses were lost. Ask for the rest of the
                    // READ now, once per gap, instead of waiting out the
                    // timeout. Behind: a duplicate, dropped.
                    if psn_diff(psn, expect) > 0
                        && self.read_gap_at != Some(expect)
                        && self.retries_left > 0
                    {
                        self.read_gap_at = Some(expect);
                        self.retries_left -= 1;
                        self.resend_from(Some(expect), out);
                        self.deadline = Some(now + self.timeout);
                    }
                    return;
                }
                let mtu = u64::from(self.path_mtu);
                let offset = u64::from(f.read_packets) * mtu;
                let total: u64 = f.read_segs.iter().map(|s| s.1).sum();
                let last = f.read_packets + 1 == f.packets;
                let len = pkt.payload.len() as u64;
                let fits = if last {
                    offset + len == total
                } else {
                    len == mtu
                };
                if !fits {
                    self.fail_inflight(idx, wc_status::BAD_RESP_ERR, out);
                    return;
                }
                let Ok(fresh) = self.landing(idx, expect, mrs, out) else {
                    return;
                };
                let dest = fresh.as_deref().unwrap_or(&self.inflight[idx].read_segs);
                let segs = slice_segments(dest, offset, len);
                if write_segments(mem, &segs, pkt.payload).is_err() {
                    self.fail_inflight(idx, wc_status::LOC_PROT_ERR, out);
                    return;
                }
                for _ in 0..idx {
                    if let Some(done) = self.inflight.pop_front() {
                        self.complete(&done, out);
                    }
                }
                self.inflight[0].read_packets += 1;
                self.read_gap_at = None;
                if last {
                    if let Some(done) = self.inflight.pop_front() {
                        self.complete(&done, out);
                    }
                }
                self.progressed(now);
                // A READ finishing may unblock the send queue.
                self.process_sq(mem, mrs, now, out);
            }
            Opcode::RcAtomicAck => {
                let (Some(idx), Some(orig)) = (
                    self.inflight.iter().position(|f| f.awaits_response()),
                    pkt.atomic_ack,
                ) else {
                    return;
                };
                let f = &self.inflight[idx];
                if !f.is_atomic() || psn != f.first_psn {
                    return; // A duplicate, or not the response awaited.
                }
                let first_psn = f.first_psn;
                let Ok(fresh) = self.landing(idx, first_psn, mrs, out) else {
                    return;
                };
                let dest = fresh.as_deref().unwrap_or(&self.inflight[idx].read_segs);
                if write_segments(mem, dest, &orig.to_le_bytes()).is_err() {
                    self.fail_inflight(idx, wc_status::LOC_PROT_ERR, out);
                    return;
                }
                self.complete_through(idx, mem, mrs, now, out);
            }
            _ => {}
        }
    }
}
