//! Built-in verbs clients: traffic hosts whose "program" is Rust, posting
//! verbs through the same doorbell, WQE fetch and CQE write as a guest
//! program's (so their verbs cost what a program's do), with no CPU time of
//! their own between a completion and the next post (as the nanoPU
//! experiments' load generator).
//!
//! - [`OneSidedClient`]: READ, WRITE, compare-and-swap, fetch-and-add or an
//!   indirect read (a READ of a pointer, then a READ of what it points to)
//!   on a server's registered region, one at a time, each checked against a
//!   model of the region.
//! - [`StreamClient`]: a window of verbs spread over many connections, for
//!   throughput against the number of queue pairs.

use super::verbs::{op, Cqe, Transport, Wqe, F_SIGNALED};
use nanopu_node::dram::Dram;
use nanopu_sim::SimTime;
use serde::Serialize;

/// Verbs a client posts during one call, each with the time its doorbell
/// is written.
#[derive(Debug, Default)]
pub struct Posts {
    pub items: Vec<(SimTime, Wqe, Vec<u8>)>,
}

impl Posts {
    pub fn post(&mut self, at: SimTime, wqe: Wqe) {
        self.items.push((at, wqe, Vec::new()));
    }

    pub fn post_inline(&mut self, at: SimTime, wqe: Wqe, data: &[u8]) {
        self.items.push((at, wqe, data.to_vec()));
    }

    pub fn clear(&mut self) {
        self.items.clear();
    }

    /// Creates a CQ for the client (completions come back to it).
    pub fn create_cq(&mut self, at: SimTime, cqn: u32) {
        self.post(
            at,
            Wqe {
                opcode: op::CREATE_CQ,
                qpn: cqn,
                ..Wqe::default()
            },
        );
    }

    /// Creates QP `qpn` on CQ `cq`, connected to `remote_qpn` at `remote_ip`.
    pub fn create_qp(
        &mut self,
        at: SimTime,
        qpn: u32,
        t: Transport,
        cq: u32,
        remote_ip: u32,
        remote_qpn: u32,
    ) {
        self.post(
            at,
            Wqe {
                opcode: op::CREATE_QP,
                qpn,
                lkey: t.code(),
                rkey: cq,
                ud_ip: remote_ip,
                ud_qpn: remote_qpn,
                ..Wqe::default()
            },
        );
    }

    pub fn reg_mr(&mut self, at: SimTime, addr: u64, len: u64, rkey: u32) {
        self.post(
            at,
            Wqe {
                opcode: op::REG_MR,
                local_addr: addr,
                remote_addr: len,
                rkey,
                ..Wqe::default()
            },
        );
    }
}

/// A traffic program on an RDMA NIC.
pub trait VerbsClient {
    /// The client starts at `now`: set up and post the first verbs.
    fn start(&mut self, now: SimTime, posts: &mut Posts);
    /// A completion reached the client's CQ at `now`; `mem` is its node's
    /// memory (where READ data and atomic results landed).
    fn completion(&mut self, now: SimTime, cqe: &Cqe, mem: &Dram, posts: &mut Posts);
    /// Whether it has done all it was asked to.
    fn done(&self) -> bool;
    /// What it measured (for `stats`).
    fn report(&self) -> serde_json::Value;
    /// Latencies of the measured operations, ns (post to completion).
    fn latencies_ns(&self) -> &[f64];
    /// Wrong answers, described (the first few).
    fn wrong(&self) -> &[String];
    /// Measured operations and the window they span (first measured post
    /// to last completion), for throughput.
    fn measured(&self) -> Option<(u64, SimTime, SimTime)> {
        None
    }
}

/// Where a client keeps its local buffers: 32 MB into its node's DRAM.
pub const CLIENT_BUFFERS: u64 = 0x8200_0000;

/// A one-sided operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum OneSidedOp {
    Read,
    Write,
    Cas,
    Faa,
    IndirectRead,
}

/// The server's region as a client knows it (exchanged out of band in a
/// real deployment: here by convention, `verbs.h`'s shared base).
#[derive(Clone, Copy, Debug)]
pub struct RemoteRegion {
    pub ip: u32,
    pub qpn: u32,
    pub addr: u64,
    pub words: u64,
    pub rkey: u32,
}

/// One-sided verbs on a server's region, one outstanding, checked against
/// a model of the region (exact with one client; with several clients
/// only reads of words nobody writes are checked).
pub struct OneSidedClient {
    op: OneSidedOp,
    server: RemoteRegion,
    /// The region as this client expects it.
    model: Vec<u64>,
    /// Words other clients may change (not checked).
    shared: bool,
    qpn: u32,
    count: u64,
    warmup: u64,
    issued: u64,
    completed: u64,
    rng: u64,
    posted_at: SimTime,
    /// For an indirect read: the pointer's word, while its READ is out.
    pending: Option<(u64, u64)>,
    expect: Option<u64>,
    lat: Vec<f64>,
    wrong: Vec<String>,
    /// Values fetch-and-add and compare-and-swap returned (for the
    /// concurrency checks).
    pub returned: Vec<u64>,
    finished_at: Option<SimTime>,
}

impl OneSidedClient {
    /// `initial(i)`: word `i` of the region as the server initialized it;
    /// `pointers`: words `0..pointers` are byte offsets into the region.
    pub fn new(
        op: OneSidedOp,
        server: RemoteRegion,
        initial: impl Fn(u64) -> u64,
        count: u64,
        warmup: u64,
        seed: u64,
        shared: bool,
    ) -> OneSidedClient {
        OneSidedClient {
            op,
            model: (0..server.words).map(initial).collect(),
            server,
            shared,
            qpn: 1,
            count,
            warmup,
            issued: 0,
            completed: 0,
            rng: seed | 1,
            posted_at: SimTime::ZERO,
            pending: None,
            expect: None,
            lat: Vec::new(),
            wrong: Vec::new(),
            returned: Vec::new(),
            finished_at: None,
        }
    }

    fn next(&mut self) -> u64 {
        // xorshift64*: seeded, deterministic.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn wqe(&self, opcode: u8, word: u64) -> Wqe {
        Wqe {
            opcode,
            flags: F_SIGNALED,
            len: 8,
            qpn: self.qpn,
            wr_id: self.issued,
            local_addr: CLIENT_BUFFERS,
            remote_addr: self.server.addr + word * 8,
            rkey: self.server.rkey,
            ..Wqe::default()
        }
    }

    fn post_next(&mut self, now: SimTime, posts: &mut Posts) {
        if self.issued >= self.count + self.warmup {
            self.finished_at.get_or_insert(now);
            return;
        }
        let w = self.server.words;
        // Pointers and atomics live in the first 256 words, data after.
        let word = 256 + self.next() % (w - 256);
        let slot = self.next() % 256;
        let value = self.next();
        let wqe = match self.op {
            OneSidedOp::Read => {
                self.expect = (!self.shared).then(|| self.model[word as usize]);
                self.wqe(op::READ, word)
            }
            OneSidedOp::IndirectRead => {
                self.expect = None;
                self.pending = Some((slot, 0));
                self.wqe(op::READ, slot)
            }
            OneSidedOp::Write => {
                self.model[word as usize] = value;
                self.expect = None;
                let mut q = self.wqe(op::WRITE, word);
                q.flags |= super::verbs::F_INLINE;
                self.issued += 1;
                self.posted_at = now;
                posts.post_inline(now, q, &value.to_le_bytes());
                return;
            }
            OneSidedOp::Cas => {
                let old = self.model[slot as usize];
                // Half the swaps are expected to succeed.
                let cmp = if value & 1 == 0 { old } else { old ^ 1 };
                if cmp == old {
                    self.model[slot as usize] = value;
                }
                self.expect = (!self.shared).then_some(old);
                let mut q = self.wqe(op::CAS, slot);
                q.compare_add = cmp;
                q.swap = value;
                q
            }
            OneSidedOp::Faa => {
                let old = self.model[slot as usize];
                self.model[slot as usize] = old.wrapping_add(1);
                self.expect = (!self.shared).then_some(old);
                let mut q = self.wqe(op::FAA, slot);
                q.compare_add = 1;
                q
            }
        };
        self.issued += 1;
        self.posted_at = now;
        posts.post(now, wqe);
    }
}

fn word_at(mem: &Dram, addr: u64) -> u64 {
    mem.slice(addr, 8)
        .map_or(0, |b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
}

impl VerbsClient for OneSidedClient {
    fn start(&mut self, now: SimTime, posts: &mut Posts) {
        posts.create_cq(now, 1);
        posts.create_qp(
            now,
            self.qpn,
            Transport::Rc,
            1,
            self.server.ip,
            self.server.qpn,
        );
        posts.reg_mr(now, CLIENT_BUFFERS, 4096, 0);
        self.post_next(now, posts);
    }

    fn completion(&mut self, now: SimTime, cqe: &Cqe, mem: &Dram, posts: &mut Posts) {
        if cqe.status != 0 {
            if self.wrong.len() < 8 {
                self.wrong.push(format!(
                    "verb {} failed with status {}",
                    cqe.wr_id, cqe.status
                ));
            }
            self.completed += 1;
            return self.post_next(now, posts);
        }
        let got = word_at(mem, CLIENT_BUFFERS);
        if let Some((slot, 0)) = self.pending {
            // The pointer came back: now the word it points to.
            let off = got;
            if !off.is_multiple_of(8) || off / 8 >= self.server.words {
                self.wrong.push(format!(
                    "indirect read: pointer {slot} holds {off:#x}, outside the region"
                ));
                self.pending = None;
            } else {
                self.pending = Some((slot, 1));
                let word = off / 8;
                self.expect = (!self.shared).then(|| self.model[word as usize]);
                posts.post(now, self.wqe(op::READ, word));
                return;
            }
        }
        self.pending = None;
        if matches!(self.op, OneSidedOp::Cas | OneSidedOp::Faa) {
            self.returned.push(got);
        }
        if let Some(e) = self.expect {
            if e != got && self.wrong.len() < 8 {
                self.wrong.push(format!(
                    "{:?} {}: expected {e:#x}, got {got:#x}",
                    self.op, cqe.wr_id
                ));
            }
        }
        self.completed += 1;
        if self.completed > self.warmup {
            self.lat.push(now.since(self.posted_at).as_ns());
        }
        self.post_next(now, posts);
    }

    fn done(&self) -> bool {
        self.completed >= self.count + self.warmup
    }

    fn report(&self) -> serde_json::Value {
        serde_json::json!({
            "op": self.op,
            "completed": self.completed,
            "wrong": self.wrong,
        })
    }

    fn latencies_ns(&self) -> &[f64] {
        &self.lat
    }

    fn wrong(&self) -> &[String] {
        &self.wrong
    }
}

/// A window of signaled verbs over `connections` RC queue pairs to one
/// server (QP `i + 1` here to QP `first_remote_qpn + i` there), round-robin,
/// for `count` completions: the NIC's rate against the number of
/// connections (HERD §3.3, Fig. 6).
pub struct StreamClient {
    opcode: u8,
    server: RemoteRegion,
    connections: u32,
    first_remote_qpn: u32,
    window: u32,
    count: u64,
    issued: u64,
    completed: u64,
    next_qp: u32,
    started: SimTime,
    finished: Option<SimTime>,
    lat: Vec<f64>,
    posted: Vec<SimTime>,
    wrong: Vec<String>,
}

impl StreamClient {
    pub fn new(
        opcode: u8,
        server: RemoteRegion,
        connections: u32,
        first_remote_qpn: u32,
        window: u32,
        count: u64,
    ) -> StreamClient {
        StreamClient {
            opcode,
            server,
            connections: connections.max(1),
            first_remote_qpn,
            window: window.max(1),
            count,
            issued: 0,
            completed: 0,
            next_qp: 0,
            started: SimTime::ZERO,
            finished: None,
            lat: Vec::new(),
            posted: Vec::new(),
            wrong: Vec::new(),
        }
    }

    /// Completions per microsecond (Mops) over the run.
    pub fn mops(&self) -> Option<f64> {
        let end = self.finished?;
        let us = end.since(self.started).as_ns() / 1e3;
        (us > 0.0).then(|| self.completed as f64 / us)
    }

    fn post_one(&mut self, now: SimTime, posts: &mut Posts) {
        if self.issued >= self.count {
            return;
        }
        let qp = self.next_qp;
        self.next_qp = (qp + 1) % self.connections;
        let word = self.issued % self.server.words.max(1);
        let mut w = Wqe {
            opcode: self.opcode,
            flags: F_SIGNALED,
            len: 8,
            qpn: qp + 1,
            wr_id: self.issued,
            local_addr: CLIENT_BUFFERS + 8 * (self.issued % 64),
            remote_addr: self.server.addr + word * 8,
            rkey: self.server.rkey,
            ..Wqe::default()
        };
        self.posted.push(now);
        self.issued += 1;
        if self.opcode == op::WRITE {
            w.flags |= super::verbs::F_INLINE;
            posts.post_inline(now, w, &w.wr_id.to_le_bytes());
        } else {
            posts.post(now, w);
        }
    }
}

impl VerbsClient for StreamClient {
    fn start(&mut self, now: SimTime, posts: &mut Posts) {
        self.started = now;
        posts.create_cq(now, 1);
        for i in 0..self.connections {
            posts.create_qp(
                now,
                i + 1,
                Transport::Rc,
                1,
                self.server.ip,
                self.first_remote_qpn + i,
            );
        }
        posts.reg_mr(now, CLIENT_BUFFERS, 4096, 0);
        for _ in 0..self.window {
            self.post_one(now, posts);
        }
    }

    fn completion(&mut self, now: SimTime, cqe: &Cqe, _mem: &Dram, posts: &mut Posts) {
        if cqe.status != 0 && self.wrong.len() < 8 {
            self.wrong.push(format!(
                "verb {} failed with status {}",
                cqe.wr_id, cqe.status
            ));
        }
        if let Some(&t) = self.posted.get(cqe.wr_id as usize) {
            self.lat.push(now.since(t).as_ns());
        }
        self.completed += 1;
        if self.completed >= self.count {
            self.finished.get_or_insert(now);
        }
        self.post_one(now, posts);
    }

    fn done(&self) -> bool {
        self.completed >= self.count
    }

    fn report(&self) -> serde_json::Value {
        serde_json::json!({ "completed": self.completed, "mops": self.mops(), "wrong": self.wrong })
    }

    fn latencies_ns(&self) -> &[f64] {
        &self.lat
    }

    fn wrong(&self) -> &[String] {
        &self.wrong
    }
}
