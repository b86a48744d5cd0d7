//! The responder side of a queue pair: inbound requests checked against
//! the memory regions and executed (SEND into a posted receive, WRITE,
//! READ, atomics with their replay buffer), and the ACKs and NAKs sent back.

use super::*;

impl RdmaNic {
    /// The memory check of a remote access: a registered region with key
    /// `rkey` covering `[va, va + len)`.
    pub(super) fn access_ok(&self, rkey: u32, va: u64, len: u64) -> bool {
        self.mrs.iter().any(|m| {
            m.rkey == rkey
                && va >= m.addr
                && va.checked_add(len).is_some_and(|e| e <= m.addr + m.len)
        })
    }

    pub(super) fn send_ack(
        &mut self,
        io: &mut NicIo<RdmaEvent>,
        at: SimTime,
        to_ip: u32,
        to_qp: u32,
        psn: u32,
        syn: u8,
    ) {
        let mut h = Header::new(opcode::RC_ACK, to_qp, psn);
        h.syndrome = syn;
        if syn != syndrome::ACK {
            self.stats.naks_sent += 1;
        }
        let mut frame = self.buf();
        packet::emit(&mut frame, self.ip, to_ip, &h, &[]);
        self.transmit(io, frame, at);
    }

    /// A request packet for one of our QPs (we are the responder).
    pub(super) fn inbound_request(
        &mut self,
        at: SimTime,
        frame: &[u8],
        pk: packet::Parsed,
        io: &mut NicIo<RdmaEvent>,
    ) {
        let h = pk.hdr;
        let Some(qp) = self.qps.get_mut(&h.dst_qp) else {
            self.stats.rx_no_such_qp += 1;
            return;
        };
        let transport = match h.opcode & 0xe0 {
            0x00 => Transport::Rc,
            0x20 => Transport::Uc,
            _ => Transport::Ud,
        };
        if transport != qp.transport {
            self.stats.rx_no_such_qp += 1;
            return;
        }
        let (peer_ip, peer_qp) = if transport == Transport::Ud {
            (pk.src_ip, h.src_qp)
        } else {
            (qp.remote_ip, qp.remote_qpn)
        };
        let mut duplicate = false;
        if transport == Transport::Rc {
            if h.psn == qp.expected_psn {
                qp.expected_psn = (h.psn + 1) & PSN_MASK;
            } else if psn_before(h.psn, qp.expected_psn) {
                duplicate = true;
                self.stats.rx_duplicates += 1;
            } else {
                self.stats.rx_out_of_order += 1;
                return;
            }
        }
        let payload = &frame[pk.payload.0..pk.payload.1];
        // UC's responder keeps almost no state (HERD §3.3: inbound WRITEs
        // scale well), so only RC and UD touch the QP-context cache.
        let touch = (transport != Transport::Uc).then_some(h.dst_qp);
        match h.opcode {
            opcode::RC_WRITE_ONLY | opcode::UC_WRITE_ONLY => {
                let done = self.process(at, Work::InboundWrite, touch);
                let ok = self.access_ok(h.rkey, h.va, payload.len() as u64);
                if transport == Transport::Rc {
                    let syn = if ok {
                        syndrome::ACK
                    } else {
                        syndrome::NAK_REMOTE_ACCESS
                    };
                    self.send_ack(io, done, peer_ip, peer_qp, h.psn, syn);
                } else if !ok {
                    self.stats.uc_access_dropped += 1;
                }
                if ok && !duplicate {
                    let mut data = self.buf();
                    data.extend_from_slice(payload);
                    self.dma_write_later(io, done, h.va, data);
                }
            }
            opcode::RC_SEND_ONLY | opcode::UC_SEND_ONLY | opcode::UD_SEND_ONLY => {
                let done = self.process(at, Work::InboundWrite, touch);
                if duplicate {
                    self.send_ack(io, done, peer_ip, peer_qp, h.psn, syndrome::ACK);
                    return;
                }
                let qp = self.qps.get_mut(&h.dst_qp).expect("exists");
                let cqn = qp.cq;
                let Some(r) = qp.rq.pop_front() else {
                    self.stats.rx_no_recv += 1;
                    if transport == Transport::Rc {
                        // Not acknowledged: the requester retransmits.
                        qp.expected_psn = h.psn;
                    }
                    return;
                };
                let mut cqe = Cqe {
                    wr_id: r.wr_id,
                    byte_len: payload.len() as u32,
                    opcode: op::RECV,
                    status: status::SUCCESS,
                    qpn: h.dst_qp,
                    src_qpn: if transport == Transport::Ud {
                        h.src_qp
                    } else {
                        peer_qp
                    },
                    src_ip: pk.src_ip,
                    seq: 0,
                };
                if payload.len() as u32 > r.len {
                    cqe.status = status::LENGTH;
                    self.stats.error_completions += 1;
                } else {
                    let mut data = self.buf();
                    data.extend_from_slice(payload);
                    self.dma_write_later(io, done, r.addr, data);
                    self.stats.completions += 1;
                }
                if transport == Transport::Rc {
                    self.send_ack(io, done, peer_ip, peer_qp, h.psn, syndrome::ACK);
                }
                self.complete(io, done, cqn, cqe);
            }
            opcode::RC_READ_REQUEST => {
                let done = self.process(at, Work::InboundRead, touch);
                if !self.access_ok(h.rkey, h.va, h.dma_len as u64) || h.dma_len > self.p.mtu_bytes {
                    self.send_ack(
                        io,
                        done,
                        peer_ip,
                        peer_qp,
                        h.psn,
                        syndrome::NAK_REMOTE_ACCESS,
                    );
                    return;
                }
                let at_host = self.pcie.read_request(done, h.dma_len as u64);
                io.schedule(
                    at_host,
                    RdmaEvent::ReadExec {
                        qpn: h.dst_qp,
                        psn: h.psn,
                        va: h.va,
                        len: h.dma_len,
                    },
                );
            }
            opcode::RC_CMP_SWAP | opcode::RC_FETCH_ADD => {
                let done = self.process(at, Work::InboundRead, touch);
                if !h.va.is_multiple_of(8) || !self.access_ok(h.rkey, h.va, 8) {
                    self.send_ack(
                        io,
                        done,
                        peer_ip,
                        peer_qp,
                        h.psn,
                        syndrome::NAK_REMOTE_ACCESS,
                    );
                    return;
                }
                if duplicate {
                    let qp = self.qps.get(&h.dst_qp).expect("exists");
                    if let Some(&(_, orig)) = qp.replay.iter().find(|e| e.0 == h.psn) {
                        self.atomic_response(io, done, peer_ip, peer_qp, h.psn, orig);
                    }
                    return;
                }
                let at_host = self.pcie.read_request(done, 8);
                io.schedule(
                    at_host,
                    RdmaEvent::AtomicExec {
                        qpn: h.dst_qp,
                        psn: h.psn,
                        hdr: h,
                    },
                );
            }
            _ => self.stats.rx_not_rdma += 1,
        }
    }

    pub(super) fn atomic_response(
        &mut self,
        io: &mut NicIo<RdmaEvent>,
        at: SimTime,
        ip: u32,
        qp: u32,
        psn: u32,
        orig: u64,
    ) {
        let mut h = Header::new(opcode::RC_ATOMIC_ACK, qp, psn);
        h.orig = orig;
        let mut frame = self.buf();
        packet::emit(&mut frame, self.ip, ip, &h, &[]);
        self.transmit(io, frame, at);
    }
}
