//! The RDMA NIC's engine: queue pairs and the verbs, RC reliability, the
//! NIC's processing rates and its QP-context cache. See the module
//! documentation of [`super`].

use super::client::{Posts, VerbsClient};
use super::doorbell::{RdmaDoorbell, RDMA_DOORBELL_BASE, RDMA_DOORBELL_SIZE};
use super::packet::{self, opcode, syndrome, Header};
use super::params::RdmaParams;
use super::pcie::{Pcie, PcieStats};
use super::verbs::{error_code, op, status, Cqe, Transport, Wqe, CQE_BYTES, WQE_BYTES};
use crate::mac::Mac;
use crate::{Cores, NicDesign, NicIo};
use nanopu_node::{Node, OverlapError};
use nanopu_sim::{SimDuration, SimTime};
use serde::Serialize;
use std::collections::{HashMap, VecDeque};

mod completion;
mod requester;
mod responder;

/// Where the built-in client's WQEs sit in its node's memory (only their
/// DMA timing is used): 16 MB into DRAM, clear of any program.
const CLIENT_WQE_RING: u64 = 0x8100_0000;
const CLIENT_WQE_SLOTS: u64 = 256;
/// WQEs a built-in client's doorbell carries: [`WQE_BYTES`] plus inline.
const CLIENT_WQE_STRIDE: u64 = 512;
/// RC requests in flight per QP besides READs and atomics (a bound on the
/// retransmission buffer; assumption).
const RC_WINDOW: usize = 128;
/// Atomic results an RC responder keeps to answer duplicates (IB spec
/// 9.7.5.2.3 asks for at least one per outstanding atomic).
const ATOMIC_REPLAY: usize = 16;

/// The NIC's timed events.
#[derive(Debug)]
pub enum RdmaEvent {
    /// A WQE fetched by DMA is executed.
    Execute { wqe: Wqe, inline: Vec<u8> },
    /// A DMA write reaches host memory.
    MemWrite { addr: u64, data: Vec<u8> },
    /// A completion reaches its CQ.
    Complete { cqn: u32, cqe: Cqe },
    /// An RC READ request's DMA read reaches host memory.
    ReadExec {
        qpn: u32,
        psn: u32,
        va: u64,
        len: u32,
    },
    /// An RC atomic's read-modify-write reaches host memory.
    AtomicExec { qpn: u32, psn: u32, hdr: Header },
    /// An RC retransmission timer (stale unless `gen` is the QP's).
    RcTimeout { qpn: u32, gen: u64 },
    /// The built-in client starts.
    ClientStart,
}

/// Counters.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RdmaStats {
    pub doorbells: u64,
    pub wqes: u64,
    pub tx_packets: u64,
    pub rx_packets: u64,
    pub rx_not_rdma: u64,
    pub rx_no_such_qp: u64,
    /// UD/UC SENDs and RC SENDs with no receive posted (dropped).
    pub rx_no_recv: u64,
    /// RC packets ahead of the expected PSN (dropped; the requester times out).
    pub rx_out_of_order: u64,
    pub rx_duplicates: u64,
    /// UC WRITEs refused by the memory check (dropped silently, as UC does).
    pub uc_access_dropped: u64,
    pub naks_sent: u64,
    pub retransmissions: u64,
    pub rc_timeouts: u64,
    pub completions: u64,
    pub error_completions: u64,
    pub qp_cache_hits: u64,
    pub qp_cache_misses: u64,
    pub cq_overflows: u64,
    /// Errors a program should read about (first few, described).
    pub errors: Vec<String>,
    pub pcie: PcieStats,
}

#[derive(Debug)]
enum CqRing {
    /// In the program's memory: ring base, entries.
    Guest { base: u64, entries: u32 },
    /// The built-in client's.
    Client,
}

#[derive(Debug)]
struct Cq {
    ring: CqRing,
    produced: u64,
    broken: bool,
}

#[derive(Debug, Clone, Copy)]
struct Mr {
    addr: u64,
    len: u64,
    rkey: u32,
}

#[derive(Debug)]
struct Pending {
    psn: u32,
    wqe: Wqe,
    frame: Vec<u8>,
    /// READ or atomic: completes on its response, not on an ACK.
    wants_response: bool,
}

#[derive(Debug, Clone, Copy)]
struct Recv {
    wr_id: u64,
    addr: u64,
    len: u32,
}

#[derive(Debug)]
struct Qp {
    transport: Transport,
    cq: u32,
    remote_ip: u32,
    remote_qpn: u32,
    next_psn: u32,
    expected_psn: u32,
    outstanding: VecDeque<Pending>,
    waiting: VecDeque<(Wqe, Vec<u8>)>,
    rq: VecDeque<Recv>,
    timer_gen: u64,
    timer_armed: bool,
    retries: u32,
    failed: bool,
    replay: VecDeque<(u32, u64)>,
}

const PSN_MASK: u32 = 0xff_ffff;

/// Whether `a` comes before `b` in 24-bit PSN order.
fn psn_before(a: u32, b: u32) -> bool {
    let d = b.wrapping_sub(a) & PSN_MASK;
    d != 0 && d < (1 << 23)
}

/// What a verb costs the NIC's processing pipeline.
#[derive(Clone, Copy)]
enum Work {
    OutboundWrite,
    OutboundReadRequest,
    ReadResponseIn,
    InboundWrite,
    InboundRead,
}

/// The RDMA NIC of one node.
pub struct RdmaNic {
    p: RdmaParams,
    ip: u32,
    mac: Mac,
    pcie: Pcie,
    qps: HashMap<u32, Qp>,
    cqs: HashMap<u32, Cq>,
    mrs: Vec<Mr>,
    /// Service time of each kind of work, fs.
    cost: [u64; 5],
    proc_free: SimTime,
    miss_free: Vec<SimTime>,
    /// QP-context cache: (qpn, last use), at most `qp_cache_entries`.
    cache: Vec<(u32, u64)>,
    uses: u64,
    client: Option<Box<dyn VerbsClient>>,
    client_start: Option<SimTime>,
    client_posts: Posts,
    client_wqe_slot: u64,
    /// The WQE fetcher works in doorbell order: a WQE is not executed
    /// before one rung earlier (so a QP's verbs keep their order).
    last_fetch: SimTime,
    /// Responses (READ data, atomic results) leave in the order their
    /// requests were processed, as an RC responder's must.
    last_response: SimTime,
    spare: Vec<Vec<u8>>,
    pub stats: RdmaStats,
}

fn fs_per_op(mops: f64) -> u64 {
    (1e9 / mops).round() as u64
}

impl RdmaNic {
    pub fn new(p: RdmaParams, ip: u32, mac: Mac) -> RdmaNic {
        let wr = fs_per_op(p.outbound_write_mops);
        let cost = [
            wr,
            wr,
            // An outbound READ costs 1/22 us in all: its request is issued
            // like a WRITE, the rest is charged to its response.
            fs_per_op(p.outbound_read_mops).saturating_sub(wr),
            fs_per_op(p.inbound_write_mops),
            fs_per_op(p.inbound_read_mops),
        ];
        RdmaNic {
            pcie: Pcie::new(&p),
            miss_free: vec![SimTime::ZERO; p.qp_miss_slots],
            cost,
            p,
            ip,
            mac,
            qps: HashMap::new(),
            cqs: HashMap::new(),
            mrs: Vec::new(),
            proc_free: SimTime::ZERO,
            cache: Vec::new(),
            uses: 0,
            client: None,
            client_start: None,
            client_posts: Posts::default(),
            client_wqe_slot: 0,
            last_fetch: SimTime::ZERO,
            last_response: SimTime::ZERO,
            spare: Vec::new(),
            stats: RdmaStats::default(),
        }
    }

    /// Queue pairs created so far (a server is ready once it has made its
    /// connections).
    pub fn qp_count(&self) -> usize {
        self.qps.len()
    }

    pub fn params(&self) -> &RdmaParams {
        &self.p
    }

    /// Runs `client` on this NIC from `start` (its verbs cost the doorbell,
    /// the WQE's DMA read and the CQE's DMA write as a program's do).
    pub fn set_client(&mut self, client: Box<dyn VerbsClient>, start: SimTime) {
        self.client = Some(client);
        self.client_start = Some(start);
    }

    pub fn client(&self) -> Option<&dyn VerbsClient> {
        self.client.as_deref()
    }

    fn buf(&mut self) -> Vec<u8> {
        let mut b = self.spare.pop().unwrap_or_default();
        b.clear();
        b
    }

    fn error(&mut self, cores: &mut Cores<'_>, code: u64, what: String) {
        if self.stats.errors.len() < 16 {
            self.stats.errors.push(what);
        }
        if let Some(d) = cores.node.device_mut::<RdmaDoorbell>() {
            d.report_error(code);
        }
    }

    /// Occupies the processing pipeline for `work` from `at`, fetching QP
    /// `qpn`'s context first if `touch` and it is not cached; returns when
    /// the work is done.
    fn process(&mut self, at: SimTime, work: Work, qpn: Option<u32>) -> SimTime {
        let mut ready = at;
        if let Some(q) = qpn {
            self.uses += 1;
            let uses = self.uses;
            if let Some(e) = self.cache.iter_mut().find(|e| e.0 == q) {
                e.1 = uses;
                self.stats.qp_cache_hits += 1;
            } else {
                self.stats.qp_cache_misses += 1;
                if self.cache.len() >= self.p.qp_cache_entries.max(1) {
                    let lru = (0..self.cache.len())
                        .min_by_key(|&i| self.cache[i].1)
                        .expect("cache is full");
                    self.cache.swap_remove(lru);
                }
                self.cache.push((q, uses));
                // The context is fetched over PCIe (it stays in the host's
                // LLC: no DRAM time), in one of the miss slots.
                let slot = (0..self.miss_free.len())
                    .min_by_key(|&i| self.miss_free[i])
                    .expect("at least one slot");
                let start = self.miss_free[slot].max(at);
                let at_host = self.pcie.read_request(start, self.p.qp_context_bytes);
                let back = self.pcie.read_completion(at_host, self.p.qp_context_bytes);
                self.miss_free[slot] = back;
                ready = back;
            }
        }
        let service = SimDuration::from_fs(self.cost[work as usize]);
        let start = self.proc_free.max(ready);
        self.proc_free = start + service;
        start + service
    }

    /// A DMA read of `out.len()` bytes at `addr` issued at `at`: the bytes
    /// (as memory holds them now) and when they are back in the NIC.
    fn dma_read(
        &mut self,
        cores: &mut Cores<'_>,
        at: SimTime,
        addr: u64,
        out: &mut [u8],
    ) -> Option<SimTime> {
        let len = out.len() as u64;
        let at_host = self.pcie.read_request(at, len);
        let cycle = cores.cycle_at(at_host);
        let done = cores
            .node
            .dma_read(addr, out, cycle, self.p.dma_outstanding_lines)?;
        let served = cores.time_of(done).max(at_host);
        Some(self.pcie.read_completion(served, len))
    }

    /// `data` is written to host memory at `addr` from `at`.
    fn dma_write_later(
        &mut self,
        io: &mut NicIo<RdmaEvent>,
        at: SimTime,
        addr: u64,
        data: Vec<u8>,
    ) -> SimTime {
        let lands = self.pcie.write(at, data.len() as u64);
        io.schedule(lands, RdmaEvent::MemWrite { addr, data });
        lands
    }

    /// A completion for `wqe`'s QP's CQ, its DMA issued at `at`.
    fn complete(&mut self, io: &mut NicIo<RdmaEvent>, at: SimTime, cqn: u32, cqe: Cqe) {
        let lands = self.pcie.write(at, CQE_BYTES as u64);
        io.schedule(lands, RdmaEvent::Complete { cqn, cqe });
    }

    fn requester_cqe(wqe: &Wqe, st: u8, byte_len: u32) -> Cqe {
        Cqe {
            wr_id: wqe.wr_id,
            byte_len,
            opcode: wqe.opcode,
            status: st,
            qpn: wqe.qpn,
            ..Cqe::default()
        }
    }

    fn transmit(&mut self, io: &mut NicIo<RdmaEvent>, frame: Vec<u8>, at: SimTime) {
        self.stats.tx_packets += 1;
        io.transmit(frame, self.mac.transmit_ready(at));
    }
}

impl NicDesign for RdmaNic {
    type Event = RdmaEvent;

    /// The doorbell page, at `[node.devices] rdma_doorbell` (default
    /// [`RDMA_DOORBELL_BASE`]).
    fn attach(&self, node: &mut Node) -> Result<(), OverlapError> {
        let base = node.cfg().devices.base("rdma_doorbell", RDMA_DOORBELL_BASE);
        let page = RdmaDoorbell::default();
        node.attach_device("rdma_doorbell", base, RDMA_DOORBELL_SIZE, page)
    }

    fn frame_in(
        &mut self,
        frame: &[u8],
        first_bit: SimTime,
        cores: &mut Cores<'_>,
        io: &mut NicIo<RdmaEvent>,
    ) {
        self.stats.rx_packets += 1;
        let at = self.mac.received(first_bit, frame.len());
        let pk = match packet::parse(frame) {
            Ok(p) => p,
            Err(_) => {
                self.stats.rx_not_rdma += 1;
                return;
            }
        };
        match pk.hdr.opcode {
            opcode::RC_ACK | opcode::RC_ATOMIC_ACK | opcode::RC_READ_RESPONSE_ONLY => {
                self.inbound_response(at, frame, pk, cores, io)
            }
            _ => self.inbound_request(at, frame, pk, io),
        }
    }

    fn take_from_cores(&mut self, cores: &mut Cores<'_>, io: &mut NicIo<RdmaEvent>) {
        if let Some(start) = self.client_start.take() {
            io.schedule(start, RdmaEvent::ClientStart);
        }
        // Messages to netTX have no path on this NIC: the register file
        // is the nanoPU's.
        cores.node.take_core_output(|_, _| {});
        // Most calls find no doorbell: looking first through the shared
        // accessor keeps the sleepers' wake memos (`Node::device_mut` drops them).
        while let Some((cycle, addr)) = match cores.node.device::<RdmaDoorbell>() {
            Some(d) if d.has_pending() => cores
                .node
                .device_mut::<RdmaDoorbell>()
                .and_then(RdmaDoorbell::take),
            _ => None,
        } {
            let at_nic = self.pcie.doorbell(cores.time_of(cycle));
            self.fetch_wqe(cores, io, at_nic, addr);
        }
    }

    fn handle(
        &mut self,
        event: RdmaEvent,
        now: SimTime,
        cores: &mut Cores<'_>,
        io: &mut NicIo<RdmaEvent>,
    ) {
        match event {
            RdmaEvent::Execute { wqe, inline } => self.execute(now, wqe, inline, cores, io),
            RdmaEvent::MemWrite { addr, data } => {
                let cycle = cores.cycle_at(now);
                if cores
                    .node
                    .dma_write(addr, &data, cycle, self.p.dma_outstanding_lines)
                    .is_none()
                {
                    self.error(
                        cores,
                        error_code::BAD_WQE,
                        format!("DMA write of {} bytes at {addr:#x}: not DRAM", data.len()),
                    );
                }
                self.spare.push(data);
            }
            RdmaEvent::Complete { cqn, cqe } => self.deliver_completion(now, cqn, cqe, cores, io),
            RdmaEvent::ReadExec { qpn, psn, va, len } => {
                let mut data = self.buf();
                data.resize(len as usize, 0);
                let cycle = cores.cycle_at(now);
                let done = cores
                    .node
                    .dma_read(va, &mut data, cycle, self.p.dma_outstanding_lines)
                    .map(|c| cores.time_of(c))
                    .unwrap_or(now);
                let back = self
                    .pcie
                    .read_completion(done.max(now), len as u64)
                    .max(self.last_response);
                self.last_response = back;
                let Some(qp) = self.qps.get(&qpn) else { return };
                let (ip, rq) = (qp.remote_ip, qp.remote_qpn);
                let h = Header::new(opcode::RC_READ_RESPONSE_ONLY, rq, psn);
                let mut frame = self.buf();
                packet::emit(&mut frame, self.ip, ip, &h, &data);
                self.spare.push(data);
                self.transmit(io, frame, back);
            }
            RdmaEvent::AtomicExec { qpn, psn, hdr } => {
                // The NIC serializes atomics: read, modify and write happen
                // here, in the order the requests were processed.
                let mut old = [0u8; 8];
                let cycle = cores.cycle_at(now);
                let Some(read) = cores.node.dma_read(hdr.va, &mut old, cycle, 1) else {
                    return;
                };
                let orig = u64::from_le_bytes(old);
                let new = if hdr.opcode == opcode::RC_CMP_SWAP {
                    if orig == hdr.compare {
                        hdr.swap_add
                    } else {
                        orig
                    }
                } else {
                    orig.wrapping_add(hdr.swap_add)
                };
                let done = cores.time_of(read).max(now);
                cores
                    .node
                    .dma_write(hdr.va, &new.to_le_bytes(), cores.cycle_at(done), 1);
                let back = self.pcie.read_completion(done, 8).max(self.last_response);
                self.last_response = back;
                let Some(qp) = self.qps.get_mut(&qpn) else {
                    return;
                };
                if qp.replay.len() >= ATOMIC_REPLAY {
                    qp.replay.pop_front();
                }
                qp.replay.push_back((psn, orig));
                let (ip, rq) = (qp.remote_ip, qp.remote_qpn);
                self.atomic_response(io, back, ip, rq, psn, orig);
            }
            RdmaEvent::RcTimeout { qpn, gen } => self.on_timeout(qpn, gen, now, io),
            RdmaEvent::ClientStart => {
                if let Some(mut c) = self.client.take() {
                    self.client_posts.clear();
                    c.start(now, &mut self.client_posts);
                    self.client = Some(c);
                    self.post_client(cores, io);
                }
            }
        }
    }

    fn stats(&self) -> serde_json::Value {
        let mut s = self.stats.clone();
        s.pcie = self.pcie.stats;
        let mut v = serde_json::to_value(s).expect("counters serialize");
        if let Some(c) = &self.client {
            v["client"] = c.report();
        }
        v
    }

    fn recycle(&mut self, frame: Vec<u8>) -> Option<Vec<u8>> {
        if self.spare.len() < 256 {
            self.spare.push(frame);
            None
        } else {
            Some(frame)
        }
    }

    fn wants_frames(&self) -> bool {
        self.spare.len() < 256
    }
}
