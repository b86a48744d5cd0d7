//! Completions: a CQE written into the host's completion queue (or handed
//! to the built-in client), a queue pair failed with its outstanding work
//! flushed, and the built-in client's posts turned into work.

use super::*;

impl RdmaNic {
    /// QP `qpn` enters the error state: what it still holds is flushed.
    pub(super) fn fail_qp(&mut self, qpn: u32, at: SimTime, io: &mut NicIo<RdmaEvent>) {
        let Some(qp) = self.qps.get_mut(&qpn) else {
            return;
        };
        qp.failed = true;
        qp.timer_gen += 1;
        qp.timer_armed = false;
        let cqn = qp.cq;
        let mut flushed: Vec<Wqe> = qp.outstanding.drain(..).map(|p| p.wqe).collect();
        flushed.extend(qp.waiting.drain(..).map(|w| w.0));
        for wqe in flushed {
            self.stats.error_completions += 1;
            let cqe = Self::requester_cqe(&wqe, status::FLUSHED, 0);
            self.complete(io, at, cqn, cqe);
        }
    }

    /// A completion reaches CQ `cqn` at `now`.
    pub(super) fn deliver_completion(
        &mut self,
        now: SimTime,
        cqn: u32,
        mut cqe: Cqe,
        cores: &mut Cores<'_>,
        io: &mut NicIo<RdmaEvent>,
    ) {
        let Some(cq) = self.cqs.get_mut(&cqn) else {
            return;
        };
        if cq.broken {
            return;
        }
        match cq.ring {
            CqRing::Client => {
                cq.produced += 1;
                cqe.seq = cq.produced as u32;
                if let Some(mut c) = self.client.take() {
                    self.client_posts.clear();
                    c.completion(now, &cqe, cores.node.dram(), &mut self.client_posts);
                    self.client = Some(c);
                    self.post_client(cores, io);
                }
            }
            CqRing::Guest { base, entries } => {
                // The program's consumer index follows the ring.
                let ci_addr = base + entries as u64 * CQE_BYTES as u64;
                let consumed = cores
                    .node
                    .dram()
                    .slice(ci_addr, 8)
                    .map_or(0, |b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
                if cq.produced.wrapping_sub(consumed) >= entries as u64 {
                    cq.broken = true;
                    self.stats.cq_overflows += 1;
                    let what = format!(
                        "CQ {cqn} overflowed: {entries} entries, {} completions written, the program has consumed {consumed}",
                        cq.produced
                    );
                    return self.error(cores, error_code::CQ_OVERFLOW, what);
                }
                let slot = base + (cq.produced % entries as u64) * CQE_BYTES as u64;
                cq.produced += 1;
                cqe.seq = cq.produced as u32;
                let cycle = cores.cycle_at(now);
                if cores
                    .node
                    .dma_write(slot, &cqe.to_bytes(), cycle, self.p.dma_outstanding_lines)
                    .is_none()
                {
                    cq.broken = true;
                    self.error(
                        cores,
                        error_code::NO_SUCH_CQ,
                        format!("CQ {cqn}: ring at {base:#x} is not in DRAM"),
                    );
                }
            }
        }
    }

    /// Sends what the built-in client posted: each doorbell at its time.
    pub(super) fn post_client(&mut self, cores: &mut Cores<'_>, io: &mut NicIo<RdmaEvent>) {
        let posts = std::mem::take(&mut self.client_posts);
        for (at, wqe, inline) in posts.items.iter() {
            if matches!(wqe.opcode, op::REG_MR | op::CREATE_CQ | op::CREATE_QP) {
                // Connection set-up happens out of band, before the clock
                // matters.
                self.setup(cores, wqe);
                continue;
            }
            // The client's WQE sits in its memory like a program's: the
            // doorbell crosses PCIe and the WQE (with any inline payload)
            // is read by DMA.
            let slot =
                CLIENT_WQE_RING + (self.client_wqe_slot % CLIENT_WQE_SLOTS) * CLIENT_WQE_STRIDE;
            self.client_wqe_slot += 1;
            self.stats.doorbells += 1;
            let at_nic = self.pcie.doorbell(*at);
            // The client's CPU has just written the WQE: it is in the
            // cache hierarchy when the NIC reads it.
            let mut scratch = [0u8; WQE_BYTES + 256];
            scratch[..WQE_BYTES].copy_from_slice(&wqe.to_bytes());
            let n = WQE_BYTES
                + if wqe.inline() {
                    inline.len().min(256)
                } else {
                    0
                };
            scratch[WQE_BYTES..n].copy_from_slice(&inline[..n - WQE_BYTES]);
            let cycle = cores.cycle_at(*at);
            cores
                .node
                .dma_write(slot, &scratch[..n], cycle, self.p.dma_outstanding_lines);
            let fetched = self
                .dma_read(cores, at_nic, slot, &mut scratch[..n])
                .unwrap_or(at_nic)
                .max(self.last_fetch);
            self.last_fetch = fetched;
            let mut buf = self.buf();
            buf.extend_from_slice(inline);
            io.schedule(
                fetched,
                RdmaEvent::Execute {
                    wqe: *wqe,
                    inline: buf,
                },
            );
        }
        self.client_posts = posts;
        self.client_posts.clear();
    }
}
