//! The requester side of a queue pair: a doorbell's WQE fetched by DMA,
//! connection setup, the verbs executed and their packets issued within
//! the RC window, the responses and ACKs that come back, and timeouts.

use super::*;

impl RdmaNic {
    /// A doorbell for the WQE at `addr` (with `inline` bytes after it)
    /// reaches the NIC at `at`: the WQE is read by DMA, then executed.
    pub(super) fn fetch_wqe(
        &mut self,
        cores: &mut Cores<'_>,
        io: &mut NicIo<RdmaEvent>,
        at: SimTime,
        addr: u64,
    ) {
        self.stats.doorbells += 1;
        let mut raw = [0u8; WQE_BYTES];
        let Some(fetched) = self.dma_read(cores, at, addr, &mut raw) else {
            self.error(
                cores,
                error_code::BAD_WQE,
                format!("doorbell: WQE address {addr:#x} is not in DRAM"),
            );
            return;
        };
        let wqe = Wqe::parse(&raw);
        let mut inline = self.buf();
        let mut done = fetched;
        if wqe.inline() && matches!(wqe.opcode, op::WRITE | op::SEND) {
            if wqe.len > self.p.max_inline_bytes {
                self.error(
                    cores,
                    error_code::BAD_WQE,
                    format!(
                        "WQE {:#x}: inline payload of {} bytes exceeds max_inline_bytes {}",
                        wqe.wr_id, wqe.len, self.p.max_inline_bytes
                    ),
                );
                return;
            }
            inline.resize(wqe.len as usize, 0);
            // The inline bytes come in the same read as the WQE.
            match self.dma_read(cores, at, addr + WQE_BYTES as u64, &mut inline) {
                Some(t) => done = done.max(t),
                None => {
                    self.error(
                        cores,
                        error_code::BAD_WQE,
                        format!("WQE {:#x}: inline payload outside DRAM", wqe.wr_id),
                    );
                    return;
                }
            }
        }
        let done = done.max(self.last_fetch);
        self.last_fetch = done;
        io.schedule(done, RdmaEvent::Execute { wqe, inline });
    }

    pub(super) fn setup(&mut self, cores: &mut Cores<'_>, wqe: &Wqe) {
        match wqe.opcode {
            op::REG_MR => self.mrs.push(Mr {
                addr: wqe.local_addr,
                len: wqe.remote_addr,
                rkey: wqe.rkey,
            }),
            op::CREATE_CQ => {
                let ring = if wqe.local_addr == 0 {
                    CqRing::Client
                } else {
                    CqRing::Guest {
                        base: wqe.local_addr,
                        entries: wqe.len.max(1),
                    }
                };
                self.cqs.insert(
                    wqe.qpn,
                    Cq {
                        ring,
                        produced: 0,
                        broken: false,
                    },
                );
            }
            op::CREATE_QP => {
                let Some(transport) = Transport::from_code(wqe.lkey) else {
                    self.error(
                        cores,
                        error_code::BAD_WQE,
                        format!(
                            "CREATE_QP {}: transport {} is not 0 (RC), 1 (UC) or 2 (UD)",
                            wqe.qpn, wqe.lkey
                        ),
                    );
                    return;
                };
                if !self.cqs.contains_key(&wqe.rkey) {
                    self.error(
                        cores,
                        error_code::NO_SUCH_CQ,
                        format!("CREATE_QP {}: CQ {} does not exist", wqe.qpn, wqe.rkey),
                    );
                    return;
                }
                self.qps.insert(
                    wqe.qpn,
                    Qp {
                        transport,
                        cq: wqe.rkey,
                        remote_ip: wqe.ud_ip,
                        remote_qpn: wqe.ud_qpn,
                        next_psn: 0,
                        expected_psn: 0,
                        outstanding: VecDeque::new(),
                        waiting: VecDeque::new(),
                        rq: VecDeque::new(),
                        timer_gen: 0,
                        timer_armed: false,
                        retries: 0,
                        failed: false,
                        replay: VecDeque::new(),
                    },
                );
            }
            _ => unreachable!("setup opcodes only"),
        }
    }

    /// Executes a fetched WQE at `now`.
    pub(super) fn execute(
        &mut self,
        now: SimTime,
        wqe: Wqe,
        inline: Vec<u8>,
        cores: &mut Cores<'_>,
        io: &mut NicIo<RdmaEvent>,
    ) {
        self.stats.wqes += 1;
        match wqe.opcode {
            op::REG_MR | op::CREATE_CQ | op::CREATE_QP => return self.setup(cores, &wqe),
            op::RECV => {
                let Some(qp) = self.qps.get_mut(&wqe.qpn) else {
                    return self.error(
                        cores,
                        error_code::NO_SUCH_QP,
                        format!("RECV on QP {} that does not exist", wqe.qpn),
                    );
                };
                qp.rq.push_back(Recv {
                    wr_id: wqe.wr_id,
                    addr: wqe.local_addr,
                    len: wqe.len,
                });
                return;
            }
            op::WRITE | op::READ | op::SEND | op::CAS | op::FAA => {}
            other => {
                return self.error(
                    cores,
                    error_code::BAD_WQE,
                    format!("WQE {:#x}: opcode {other} is not a verb", wqe.wr_id),
                );
            }
        }
        let Some(qp) = self.qps.get_mut(&wqe.qpn) else {
            return self.error(
                cores,
                error_code::NO_SUCH_QP,
                format!("WQE {:#x} on QP {} that does not exist", wqe.wr_id, wqe.qpn),
            );
        };
        let (transport, cqn) = (qp.transport, qp.cq);
        let allowed = match transport {
            Transport::Rc => true,
            Transport::Uc => matches!(wqe.opcode, op::WRITE | op::SEND),
            Transport::Ud => wqe.opcode == op::SEND,
        };
        let too_long =
            wqe.len > self.p.mtu_bytes || (matches!(wqe.opcode, op::CAS | op::FAA) && wqe.len != 8);
        if qp.failed || !allowed || too_long {
            let st = if qp.failed {
                status::FLUSHED
            } else if too_long {
                status::LENGTH
            } else {
                status::LOCAL_ERROR
            };
            self.stats.error_completions += 1;
            let cqe = Self::requester_cqe(&wqe, st, 0);
            self.complete(io, now, cqn, cqe);
            return;
        }
        if transport == Transport::Rc {
            let reads = qp.outstanding.iter().filter(|p| p.wants_response).count();
            let full = qp.outstanding.len() >= RC_WINDOW
                || (matches!(wqe.opcode, op::READ | op::CAS | op::FAA)
                    && reads >= self.p.max_rd_atomic);
            if full || !qp.waiting.is_empty() {
                qp.waiting.push_back((wqe, inline));
                return;
            }
        }
        self.issue(now, wqe, inline, cores, io);
    }

    /// Sends a verb's request packet (the QP has room for it).
    pub(super) fn issue(
        &mut self,
        now: SimTime,
        wqe: Wqe,
        inline: Vec<u8>,
        cores: &mut Cores<'_>,
        io: &mut NicIo<RdmaEvent>,
    ) {
        let qp = self.qps.get(&wqe.qpn).expect("checked by the caller");
        let (transport, cqn) = (qp.transport, qp.cq);
        let work = if matches!(wqe.opcode, op::READ | op::CAS | op::FAA) {
            Work::OutboundReadRequest
        } else {
            Work::OutboundWrite
        };
        let mut t = self.process(now, work, Some(wqe.qpn));
        // The payload: inline, or read by DMA from the program's buffer.
        let mut payload = inline;
        if matches!(wqe.opcode, op::WRITE | op::SEND) && !wqe.inline() {
            payload.resize(wqe.len as usize, 0);
            match self.dma_read(cores, t, wqe.local_addr, &mut payload) {
                Some(back) => t = back,
                None => {
                    self.stats.error_completions += 1;
                    let cqe = Self::requester_cqe(&wqe, status::LOCAL_ERROR, 0);
                    self.complete(io, t, cqn, cqe);
                    return;
                }
            }
        }
        let qp = self.qps.get_mut(&wqe.qpn).expect("exists");
        let psn = qp.next_psn;
        qp.next_psn = (psn + 1) & PSN_MASK;
        let (dst_ip, dst_qp) = if transport == Transport::Ud {
            (wqe.ud_ip, wqe.ud_qpn)
        } else {
            (qp.remote_ip, qp.remote_qpn)
        };
        let opc = match (transport, wqe.opcode) {
            (Transport::Rc, op::WRITE) => opcode::RC_WRITE_ONLY,
            (Transport::Rc, op::SEND) => opcode::RC_SEND_ONLY,
            (Transport::Rc, op::READ) => opcode::RC_READ_REQUEST,
            (Transport::Rc, op::CAS) => opcode::RC_CMP_SWAP,
            (Transport::Rc, op::FAA) => opcode::RC_FETCH_ADD,
            (Transport::Uc, op::WRITE) => opcode::UC_WRITE_ONLY,
            (Transport::Uc, op::SEND) => opcode::UC_SEND_ONLY,
            (Transport::Ud, op::SEND) => opcode::UD_SEND_ONLY,
            _ => unreachable!("checked in execute"),
        };
        let mut h = Header::new(opc, dst_qp, psn);
        h.va = wqe.remote_addr;
        h.rkey = wqe.rkey;
        h.dma_len = wqe.len;
        h.src_qp = wqe.qpn;
        if wqe.opcode == op::CAS {
            h.compare = wqe.compare_add;
            h.swap_add = wqe.swap;
        } else if wqe.opcode == op::FAA {
            h.swap_add = wqe.compare_add;
        }
        let body: &[u8] = if matches!(wqe.opcode, op::WRITE | op::SEND) {
            &payload
        } else {
            &[]
        };
        let mut frame = self.buf();
        packet::emit(&mut frame, self.ip, dst_ip, &h, body);
        payload.clear();
        self.spare.push(payload);
        if transport == Transport::Rc {
            let qp = self.qps.get_mut(&wqe.qpn).expect("exists");
            qp.outstanding.push_back(Pending {
                psn,
                wqe,
                frame: frame.clone(),
                wants_response: matches!(wqe.opcode, op::READ | op::CAS | op::FAA),
            });
            if !qp.timer_armed {
                qp.timer_armed = true;
                qp.timer_gen += 1;
                let gen = qp.timer_gen;
                io.schedule(
                    t + SimDuration::from_ps(self.p.rc_timeout_ps),
                    RdmaEvent::RcTimeout { qpn: wqe.qpn, gen },
                );
            }
        } else if wqe.signaled() {
            // Unreliable: complete once the packet is on its way.
            self.stats.completions += 1;
            let cqe = Self::requester_cqe(&wqe, status::SUCCESS, wqe.len);
            self.complete(io, t, cqn, cqe);
        }
        self.transmit(io, frame, t);
    }

    /// Issues what waits on an RC QP while it has room.
    pub(super) fn drain_waiting(
        &mut self,
        qpn: u32,
        now: SimTime,
        cores: &mut Cores<'_>,
        io: &mut NicIo<RdmaEvent>,
    ) {
        loop {
            let Some(qp) = self.qps.get_mut(&qpn) else {
                return;
            };
            let Some((wqe, _)) = qp.waiting.front() else {
                return;
            };
            let reads = qp.outstanding.iter().filter(|p| p.wants_response).count();
            let is_read = matches!(wqe.opcode, op::READ | op::CAS | op::FAA);
            if qp.outstanding.len() >= RC_WINDOW || (is_read && reads >= self.p.max_rd_atomic) {
                return;
            }
            let (wqe, inline) = qp.waiting.pop_front().expect("front exists");
            self.issue(now, wqe, inline, cores, io);
        }
    }

    /// A response for one of our RC QPs (we are the requester).
    pub(super) fn inbound_response(
        &mut self,
        at: SimTime,
        frame: &[u8],
        pk: packet::Parsed,
        cores: &mut Cores<'_>,
        io: &mut NicIo<RdmaEvent>,
    ) {
        let h = pk.hdr;
        let qpn = h.dst_qp;
        let Some(qp) = self.qps.get_mut(&qpn) else {
            self.stats.rx_no_such_qp += 1;
            return;
        };
        if qp.transport != Transport::Rc {
            self.stats.rx_no_such_qp += 1;
            return;
        }
        let cqn = qp.cq;
        // Everything before `h.psn` that waits only for an ACK is
        // acknowledged (responses are cumulative, IB spec 9.7.5.1).
        let mut progressed = false;
        let mut done_writes = Vec::new();
        while let Some(front) = qp.outstanding.front() {
            let before = psn_before(front.psn, h.psn);
            let is_it = front.psn == h.psn;
            let plain_ack = h.opcode == opcode::RC_ACK && h.syndrome == syndrome::ACK;
            if (before && !front.wants_response) || (is_it && plain_ack && !front.wants_response) {
                let p = qp.outstanding.pop_front().expect("front");
                progressed = true;
                done_writes.push(p);
            } else {
                break;
            }
        }
        let matched = qp
            .outstanding
            .front()
            .is_some_and(|f| f.psn == h.psn)
            .then(|| qp.outstanding.pop_front().expect("front"));
        if matched.is_some() {
            progressed = true;
        }
        if progressed {
            qp.retries = 0;
            qp.timer_gen += 1;
            qp.timer_armed = !qp.outstanding.is_empty();
            if qp.timer_armed {
                let gen = qp.timer_gen;
                io.schedule(
                    at + SimDuration::from_ps(self.p.rc_timeout_ps),
                    RdmaEvent::RcTimeout { qpn, gen },
                );
            }
        } else {
            self.stats.rx_duplicates += 1;
        }
        for p in done_writes {
            if p.wqe.signaled() {
                self.stats.completions += 1;
                let cqe = Self::requester_cqe(&p.wqe, status::SUCCESS, p.wqe.len);
                self.complete(io, at, cqn, cqe);
            }
            self.spare.push(p.frame);
        }
        if let Some(p) = matched {
            let wqe = p.wqe;
            self.spare.push(p.frame);
            if h.opcode == opcode::RC_ACK && h.syndrome != syndrome::ACK {
                // A NAK: this verb fails, and the QP with it.
                self.stats.error_completions += 1;
                let cqe = Self::requester_cqe(&wqe, status::REMOTE_ACCESS, 0);
                self.complete(io, at, cqn, cqe);
                self.fail_qp(qpn, at, io);
                return;
            }
            let t = if wqe.opcode == op::READ || wqe.opcode == op::CAS || wqe.opcode == op::FAA {
                self.process(at, Work::ReadResponseIn, Some(qpn))
            } else {
                at
            };
            let mut data = self.buf();
            if h.opcode == opcode::RC_READ_RESPONSE_ONLY {
                data.extend_from_slice(&frame[pk.payload.0..pk.payload.1]);
            } else if h.opcode == opcode::RC_ATOMIC_ACK {
                data.extend_from_slice(&h.orig.to_le_bytes());
            }
            let lands = if data.is_empty() {
                self.spare.push(data);
                t
            } else if cores
                .node
                .dram()
                .offset(wqe.local_addr, data.len() as u64)
                .is_none()
            {
                self.spare.push(data);
                self.stats.error_completions += 1;
                let cqe = Self::requester_cqe(&wqe, status::LOCAL_ERROR, 0);
                self.complete(io, t, cqn, cqe);
                return self.drain_waiting(qpn, at, cores, io);
            } else {
                // The CQE's write may follow the data's at once: posted
                // writes stay in order on PCIe, so it lands after the data.
                self.dma_write_later(io, t, wqe.local_addr, data);
                t
            };
            if wqe.signaled() {
                self.stats.completions += 1;
                let cqe = Self::requester_cqe(&wqe, status::SUCCESS, wqe.len);
                self.complete(io, lands, cqn, cqe);
            }
        }
        self.drain_waiting(qpn, at, cores, io);
    }

    pub(super) fn on_timeout(
        &mut self,
        qpn: u32,
        gen: u64,
        now: SimTime,
        io: &mut NicIo<RdmaEvent>,
    ) {
        let Some(qp) = self.qps.get_mut(&qpn) else {
            return;
        };
        if qp.timer_gen != gen || !qp.timer_armed || qp.outstanding.is_empty() {
            return;
        }
        self.stats.rc_timeouts += 1;
        if qp.retries >= self.p.rc_retry_count {
            let cqn = qp.cq;
            let front = qp.outstanding.pop_front().expect("not empty").wqe;
            self.stats.error_completions += 1;
            let cqe = Self::requester_cqe(&front, status::RETRY_EXCEEDED, 0);
            self.complete(io, now, cqn, cqe);
            return self.fail_qp(qpn, now, io);
        }
        qp.retries += 1;
        // Go back N: everything unacknowledged goes again, in order.
        let frames: Vec<Vec<u8>> = qp.outstanding.iter().map(|p| p.frame.clone()).collect();
        qp.timer_gen += 1;
        let gen = qp.timer_gen;
        let mut t = now;
        for f in frames {
            self.stats.retransmissions += 1;
            t = self.process(t, Work::OutboundWrite, Some(qpn));
            self.transmit(io, f, t);
        }
        io.schedule(
            now + SimDuration::from_ps(self.p.rc_timeout_ps),
            RdmaEvent::RcTimeout { qpn, gen },
        );
    }
}
