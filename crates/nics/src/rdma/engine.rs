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

    /// A doorbell for the WQE at `addr` (with `inline` bytes after it)
    /// reaches the NIC at `at`: the WQE is read by DMA, then executed.
    fn fetch_wqe(
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

    fn setup(&mut self, cores: &mut Cores<'_>, wqe: &Wqe) {
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
    fn execute(
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
    fn issue(
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
    fn drain_waiting(
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

    /// The memory check of a remote access: a registered region with key
    /// `rkey` covering `[va, va + len)`.
    fn access_ok(&self, rkey: u32, va: u64, len: u64) -> bool {
        self.mrs.iter().any(|m| {
            m.rkey == rkey
                && va >= m.addr
                && va.checked_add(len).is_some_and(|e| e <= m.addr + m.len)
        })
    }

    fn send_ack(
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
    fn inbound_request(
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

    fn atomic_response(
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

    /// A response for one of our RC QPs (we are the requester).
    fn inbound_response(
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

    /// QP `qpn` enters the error state: what it still holds is flushed.
    fn fail_qp(&mut self, qpn: u32, at: SimTime, io: &mut NicIo<RdmaEvent>) {
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

    fn on_timeout(&mut self, qpn: u32, gen: u64, now: SimTime, io: &mut NicIo<RdmaEvent>) {
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

    /// A completion reaches CQ `cqn` at `now`.
    fn deliver_completion(
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
    fn post_client(&mut self, cores: &mut Cores<'_>, io: &mut NicIo<RdmaEvent>) {
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
