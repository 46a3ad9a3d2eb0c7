// SPDX-License-Identifier: GPL-2.0

//! The requester, as rxe's `rxe_req.c`: work requests from the send
//! queue become packets (segmenting to the path MTU, assigning PSNs),
//! FLUSH and ATOMIC WRITE one packet each, UD sends go out whole, and
//! every packet sent is kept in flight for the completer.

use super::*;

impl Qp {
    /// A send doorbell, or a chance to continue: fetches and executes
    /// posted send WQEs.
    pub fn process_sq(
        &mut self,
        mem: &dyn HostMem,
        mrs: &mut MrTable,
        now: Instant,
        out: &mut Vec<Action>,
    ) {
        if self.state == QpState::Err {
            self.flush_all(out);
            return;
        }
        if self.state != QpState::Rts || self.rnr_resend_at.is_some() || self.odp_wait.is_some() {
            return;
        }
        while let Some((slot, addr)) = self.sq.peek() {
            let mut raw = [0u8; SQ_WQE_LEN];
            if mem.read(addr, &mut raw).is_err() {
                self.sq.pop();
                self.fail(false, slot, wc_op::SEND, wc_status::LOC_QP_OP_ERR, out);
                return;
            }
            let wqe = SqWqe::from_bytes(&raw);
            let reads = self.inflight.iter().filter(|f| f.awaits_response()).count();
            if self.is_rc()
                && (awaits_response(wqe.opcode) && reads >= usize::from(self.max_rd_atomic)
                    || wqe.flags & wqe_flag::FENCE != 0 && reads > 0)
            {
                return; // Continues when a READ completes.
            }
            self.sq.pop();
            if !self.execute_send(slot, wqe, mem, mrs, now, out) {
                if self.odp_wait.is_some() {
                    // Held for a page: nothing of it was sent, it starts
                    // again from its WQE once the page is mapped.
                    self.sq.unpop();
                }
                return;
            }
        }
    }

    /// Runs one send WQE; false if the QP failed.
    pub(super) fn execute_send(
        &mut self,
        slot: u16,
        wqe: SqWqe,
        mem: &dyn HostMem,
        mrs: &mut MrTable,
        now: Instant,
        out: &mut Vec<Action>,
    ) -> bool {
        let mut wqe = wqe;
        if matches!(
            wqe.opcode,
            wqe_op::READ
                | wqe_op::WRITE
                | wqe_op::WRITE_IMM
                | wqe_op::CMP_SWAP
                | wqe_op::FETCH_ADD
                | wqe_op::FLUSH
                | wqe_op::ATOMIC_WRITE
        ) && self.faults.take(RdmaFault::BadRkey)
        {
            wqe.rkey = !wqe.rkey;
        }
        let wc = send_wc_op(wqe.opcode);
        let signaled = wqe.flags & wqe_flag::SIGNALED != 0;
        let ok = |out: &mut Vec<Action>, qpn: u32, len: u32| {
            if signaled {
                out.push(Action::Complete {
                    recv: false,
                    cqe: Cqe {
                        wqe_index: slot,
                        qpn,
                        opcode: wc,
                        byte_len: len,
                        ..Cqe::default()
                    },
                    solicited: false,
                });
            }
        };
        // A process's QP maps no memory itself: it may only invalidate
        // its memory windows.
        let user = self.db_page != 0;
        if user && wqe.opcode == wqe_op::REG_MR {
            self.fail(false, slot, wc, wc_status::LOC_QP_OP_ERR, out);
            return false;
        }
        match wqe.opcode {
            wqe_op::BIND_MW => {
                let bound = mrs.bind(
                    self.qpn,
                    self.pd,
                    wqe.rkey,
                    &wqe.bind(),
                    wqe.remote_addr,
                    wqe.qkey,
                );
                match bound {
                    Ok(()) => ok(out, self.qpn, 0),
                    Err(_) => {
                        self.fail(false, slot, wc, wc_status::MW_BIND_ERR, out);
                        return false;
                    }
                }
            }
            wqe_op::LOCAL_INV => match mrs.invalidate(wqe.imm_or_key, self.pd, user) {
                Ok(()) => ok(out, self.qpn, 0),
                Err(_) => {
                    self.fail(false, slot, wc, wc_status::LOC_PROT_ERR, out);
                    return false;
                }
            },
            wqe_op::REG_MR => {
                let n = wqe.reg().npages as usize;
                let pages = (n <= (1 << 17))
                    .then(|| read_u64s(mem, wqe.remote_addr, n))
                    .flatten();
                let done = pages.ok_or(AccessError::OutOfBounds).and_then(|pages| {
                    mrs.fast_register(wqe.rkey, self.pd, wqe.qkey, &wqe.reg(), pages)
                });
                match done {
                    Ok(()) => ok(out, self.qpn, 0),
                    Err(_) => {
                        self.fail(false, slot, wc, wc_status::MW_BIND_ERR, out);
                        return false;
                    }
                }
            }
            // UC has neither READ nor SEND with invalidate (IBA 9.2,
            // its opcodes).
            wqe_op::SEND_INV | wqe_op::READ if self.qp_type == QpType::Uc => {
                self.fail(false, slot, wc, wc_status::LOC_QP_OP_ERR, out);
                return false;
            }
            // Nor has XRC FLUSH or ATOMIC WRITE (IBA 1.5 gives them RC
            // opcodes only).
            wqe_op::FLUSH | wqe_op::ATOMIC_WRITE if self.qp_type == QpType::XrcIni => {
                self.fail(false, slot, wc, wc_status::LOC_QP_OP_ERR, out);
                return false;
            }
            wqe_op::SEND
            | wqe_op::SEND_IMM
            | wqe_op::SEND_INV
            | wqe_op::WRITE
            | wqe_op::WRITE_IMM
            | wqe_op::READ => {
                let inline = if wqe.flags & wqe_flag::INLINE != 0 {
                    if wqe.opcode == wqe_op::READ {
                        self.fail(false, slot, wc, wc_status::LOC_QP_OP_ERR, out);
                        return false;
                    }
                    let Some(payload) = wqe.inline_data() else {
                        self.fail(false, slot, wc, wc_status::LOC_LEN_ERR, out);
                        return false;
                    };
                    Some(payload)
                } else {
                    None
                };
                let sge_count = if inline.is_some() {
                    0
                } else {
                    usize::from(wqe.num_sge)
                };
                if sge_count > wqe.sge.len() {
                    self.fail(false, slot, wc, wc_status::LOC_QP_OP_ERR, out);
                    return false;
                }
                let sges = &wqe.sge[..sge_count];
                let need = if wqe.opcode == wqe_op::READ {
                    access::LOCAL_WRITE
                } else {
                    0
                };
                let segs = match self.local_segments(sges, need, mrs) {
                    Ok(segs) => segs,
                    Err(e) => {
                        self.refuse_local(slot, wc, e, mrs, out);
                        return false;
                    }
                };
                // Only a READ keeps translations (where its response
                // lands); a SEND or WRITE copied its bytes already.
                let on_demand =
                    wqe.opcode == wqe_op::READ && sges.iter().any(|s| mrs.is_on_demand(s.lkey));
                if self.is_datagram() {
                    if wqe.opcode != wqe_op::SEND && wqe.opcode != wqe_op::SEND_IMM {
                        self.fail(false, slot, wc, wc_status::LOC_QP_OP_ERR, out);
                        return false;
                    }
                    let data = match inline {
                        Some(payload) => payload.as_slice().to_vec(),
                        None => match read_segments(mem, &segs) {
                            Ok(data) => data,
                            Err(_) => {
                                self.fail(false, slot, wc, wc_status::LOC_PROT_ERR, out);
                                return false;
                            }
                        },
                    };
                    if data.len() > self.path_mtu.max(256) as usize {
                        self.fail(false, slot, wc, wc_status::LOC_LEN_ERR, out);
                        return false;
                    }
                    self.send_ud(&wqe, &data, out);
                    let len = data.len() as u32;
                    ok(out, self.qpn, len);
                    return true;
                }
                let (data, read_segs) = if let Some(payload) = inline {
                    (payload.as_slice().to_vec(), Vec::new())
                } else if wqe.opcode == wqe_op::READ {
                    (Vec::new(), segs)
                } else {
                    match read_segments(mem, &segs) {
                        Ok(d) => (d, Vec::new()),
                        Err(_) => {
                            self.fail(false, slot, wc, wc_status::LOC_PROT_ERR, out);
                            return false;
                        }
                    }
                };
                let len = if wqe.opcode == wqe_op::READ {
                    read_segs.iter().map(|s| s.1).sum::<u64>()
                } else {
                    data.len() as u64
                };
                let packets = (len.div_ceil(u64::from(self.path_mtu))).max(1) as u32;
                if self.qp_type == QpType::Uc {
                    self.send_packets(slot, wqe, packets, data, Vec::new(), out);
                    ok(out, self.qpn, len as u32);
                    return true;
                }
                self.start_request(slot, wqe, packets, data, read_segs, on_demand, now, out);
            }
            wqe_op::CMP_SWAP | wqe_op::FETCH_ADD => {
                // One SGE of at least 8 bytes takes the original value.
                let sge = wqe.sge[0];
                if !self.is_rc() || wqe.num_sge != 1 || sge.len < 8 {
                    self.fail(false, slot, wc, wc_status::LOC_QP_OP_ERR, out);
                    return false;
                }
                let result = Sge { len: 8, ..sge };
                let read_segs = match self.local_segments(&[result], access::LOCAL_WRITE, mrs) {
                    Ok(segs) => segs,
                    Err(e) => {
                        self.refuse_local(slot, wc, e, mrs, out);
                        return false;
                    }
                };
                let on_demand = mrs.is_on_demand(sge.lkey);
                self.start_request(slot, wqe, 1, Vec::new(), read_segs, on_demand, now, out);
            }
            // IBA 1.5's FLUSH and ATOMIC WRITE: RC only, no gather list
            // (the 8 bytes of an ATOMIC WRITE are in the WQE).
            wqe_op::FLUSH | wqe_op::ATOMIC_WRITE => {
                if !self.is_rc() {
                    self.fail(false, slot, wc, wc_status::LOC_QP_OP_ERR, out);
                    return false;
                }
                let data = if wqe.opcode == wqe_op::ATOMIC_WRITE {
                    wqe.atomic_write().value.to_vec()
                } else {
                    Vec::new()
                };
                self.start_request(slot, wqe, 1, data, Vec::new(), false, now, out);
            }
            _ => {
                self.fail(false, slot, wc, wc_status::LOC_QP_OP_ERR, out);
                return false;
            }
        }
        true
    }

    /// A WQE's local SGE refused with `e`: held for the page if it is one
    /// the driver may still map, else the WQE fails (a local protection
    /// error) and the QP with it.
    fn refuse_local(
        &mut self,
        slot: u16,
        wc: u8,
        e: AccessError,
        mrs: &mut MrTable,
        out: &mut Vec<Action>,
    ) {
        match mrs.waits_for(e) {
            Some(fault) => self.hold_for(fault, None, out),
            None => self.fail(false, slot, wc, wc_status::LOC_PROT_ERR, out),
        }
    }

    /// Sends an RC request of `packets` PSNs and keeps it in flight
    /// (with the retransmission timer running) until it is answered.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn start_request(
        &mut self,
        slot: u16,
        wqe: SqWqe,
        packets: u32,
        data: Vec<u8>,
        read_segs: Vec<Segment>,
        on_demand: bool,
        now: Instant,
        out: &mut Vec<Action>,
    ) {
        let mut f = self.send_packets(slot, wqe, packets, data, read_segs, out);
        f.on_demand = on_demand;
        self.inflight.push_back(f);
        if self.deadline.is_none() {
            self.deadline = Some(now + self.timeout);
        }
    }

    /// Sends the packets of a request of `packets` PSNs from the next
    /// PSN on, and returns it. A UC SEND or WRITE is done then: nothing
    /// acknowledges it, and its WQE completes once its packets are out.
    pub(super) fn send_packets(
        &mut self,
        slot: u16,
        wqe: SqWqe,
        packets: u32,
        data: Vec<u8>,
        read_segs: Vec<Segment>,
        out: &mut Vec<Action>,
    ) -> InFlight {
        let f = InFlight {
            slot,
            wqe,
            first_psn: self.next_psn,
            packets,
            data,
            read_packets: 0,
            read_segs,
            on_demand: false,
        };
        self.next_psn = psn_add(self.next_psn, packets);
        self.emit(&f, 0, out);
        f
    }

    pub(super) fn send_ud(&mut self, wqe: &SqWqe, data: &[u8], out: &mut Vec<Action>) {
        let imm = wqe.opcode == wqe_op::SEND_IMM;
        // A Q_Key with the top bit set means "use the QP's own"
        // (`IB_QP_SET_QKEY`, which the MAD layer sends with).
        let qkey = if wqe.qkey & 0x8000_0000 != 0 {
            self.qkey
        } else {
            wqe.qkey
        };
        let pkt = Packet {
            bth: Bth {
                solicited: wqe.flags & wqe_flag::SOLICITED != 0,
                pkey: 0xffff,
                dest_qp: wqe.dest_qpn,
                psn: self.next_psn,
                ..Bth::default()
            },
            opcode: if imm {
                Opcode::UdSendOnlyImm
            } else {
                Opcode::UdSendOnly
            },
            xrc_srqn: None,
            deth: Some(Deth {
                qkey,
                src_qp: self.qpn,
            }),
            feth: None,
            reth: None,
            aeth: None,
            imm: imm.then_some(wqe.imm_or_key),
            inv_rkey: None,
            atomic: None,
            atomic_ack: None,
            payload: data,
        };
        self.next_psn = psn_add(self.next_psn, 1);
        out.push(Action::Send {
            av: wqe.av(),
            transport: wire::encode(&pkt),
        });
    }

    /// Sends the packets of `f` from its `from`-th on.
    pub(super) fn emit(&self, f: &InFlight, from: u32, out: &mut Vec<Action>) {
        let mtu = self.path_mtu as usize;
        let solicited = f.wqe.flags & wqe_flag::SOLICITED != 0;
        let uc = self.qp_type == QpType::Uc;
        // Every XRC request names the SRQ it goes to.
        let xrc_srqn = (self.qp_type == QpType::XrcIni).then_some(f.wqe.xrc_srqn);
        let bth = |i: u32, last: bool| Bth {
            solicited: solicited && last,
            pkey: 0xffff,
            dest_qp: self.dest_qpn,
            // Nothing acknowledges a UC packet.
            ack_req: last && !uc,
            psn: psn_add(f.first_psn, i),
            ..Bth::default()
        };
        if f.is_atomic() {
            let a = f.wqe.atomic();
            let (opcode, swap_add, compare) = match f.wqe.opcode {
                wqe_op::CMP_SWAP => (Opcode::RcCompareSwap, a.swap, a.compare_add),
                _ => (Opcode::RcFetchAdd, a.compare_add, 0),
            };
            let atomic = AtomicEth {
                va: f.wqe.remote_addr,
                rkey: f.wqe.rkey,
                swap_add,
                compare,
            };
            out.push(self.transmit(&Packet {
                xrc_srqn,
                atomic: Some(atomic),
                ..Packet::bare(bth(0, true), opcode)
            }));
            return;
        }
        if f.is_flush_or_atomic_write() {
            let (opcode, feth, len) = match f.wqe.opcode {
                wqe_op::FLUSH => {
                    let p = f.wqe.flush();
                    let feth = Feth {
                        placement: p.placement,
                        level: p.level,
                    };
                    (Opcode::RcFlush, Some(feth), p.len as u32)
                }
                _ => (Opcode::RcAtomicWrite, None, ATOMIC_WRITE_LEN as u32),
            };
            let reth = Reth {
                va: f.wqe.remote_addr,
                rkey: f.wqe.rkey,
                len,
            };
            out.push(self.transmit(&Packet {
                feth,
                reth: Some(reth),
                payload: &f.data,
                ..Packet::bare(bth(0, true), opcode)
            }));
            return;
        }
        if f.is_read() {
            // From the response `from` on: what came before has landed.
            let done = u64::from(from) * mtu as u64;
            let total = f.read_segs.iter().map(|s| s.1).sum::<u64>();
            let reth = Reth {
                va: f.wqe.remote_addr.wrapping_add(done),
                rkey: f.wqe.rkey,
                len: total.saturating_sub(done) as u32,
            };
            out.push(self.transmit(&Packet {
                xrc_srqn,
                reth: Some(reth),
                ..Packet::bare(bth(from, true), Opcode::RcReadRequest)
            }));
            return;
        }
        let reth = Reth {
            va: f.wqe.remote_addr,
            rkey: f.wqe.rkey,
            len: f.data.len() as u32,
        };
        let write = matches!(f.wqe.opcode, wqe_op::WRITE | wqe_op::WRITE_IMM);
        for i in from..f.packets {
            let first = i == 0;
            let last = i == f.packets - 1;
            let start = (i as usize * mtu).min(f.data.len());
            let end = ((i as usize + 1) * mtu).min(f.data.len());
            use Opcode::*;
            let opcode = match (f.wqe.opcode, first, last) {
                (wqe_op::SEND, true, true) => RcSendOnly,
                (wqe_op::SEND_IMM, true, true) => RcSendOnlyImm,
                (wqe_op::SEND_INV, true, true) => RcSendOnlyInv,
                (wqe_op::SEND | wqe_op::SEND_IMM | wqe_op::SEND_INV, true, false) => RcSendFirst,
                (wqe_op::SEND | wqe_op::SEND_IMM | wqe_op::SEND_INV, false, false) => RcSendMiddle,
                (wqe_op::SEND, false, true) => RcSendLast,
                (wqe_op::SEND_IMM, false, true) => RcSendLastImm,
                (wqe_op::SEND_INV, false, true) => RcSendLastInv,
                (wqe_op::WRITE_IMM, true, true) => RcWriteOnlyImm,
                (_, true, true) => RcWriteOnly,
                (_, true, false) => RcWriteFirst,
                (_, false, false) => RcWriteMiddle,
                (wqe_op::WRITE_IMM, false, true) => RcWriteLastImm,
                (_, false, true) => RcWriteLast,
            };
            let imm = matches!(
                opcode,
                RcSendOnlyImm | RcSendLastImm | RcWriteOnlyImm | RcWriteLastImm
            );
            let inv = matches!(opcode, RcSendOnlyInv | RcSendLastInv);
            // `transmit` turns them into UC's (SEND with invalidate was
            // refused before) or XRC's.
            let pkt = Packet {
                bth: bth(i, last),
                opcode,
                xrc_srqn,
                deth: None,
                feth: None,
                reth: (write && first).then_some(reth),
                aeth: None,
                imm: imm.then_some(f.wqe.imm_or_key),
                inv_rkey: inv.then_some(f.wqe.imm_or_key),
                atomic: None,
                atomic_ack: None,
                payload: &f.data[start..end],
            };
            out.push(self.transmit(&pkt));
        }
    }
}
