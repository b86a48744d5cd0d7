//! Built-in key-value clients for the RDMA NIC: HERD's (requests by UC
//! WRITE into the server's request region, responses by UD SEND; HERD §4,
//! server `sdk/programs/herd`) and a READ-based store's (GETs by RDMA READs
//! of the index, then of the value, as Pilaf; server
//! `sdk/programs/herd_readkv`). Each checks every reply against a model of
//! the store: keys are partitioned among clients, and one client's
//! requests to one server core are executed in the order sent (one UC
//! connection, in order, one core per key), so the model is exact.

use super::client::{Posts, VerbsClient, CLIENT_BUFFERS};
use super::verbs::{op, Cqe, Transport, Wqe, F_INLINE, F_SIGNALED};
use nanopu_node::dram::Dram;
use nanopu_sim::SimTime;
use std::collections::HashMap;

/// `herd`'s layout (see its source).
pub const HERD_SLOT: u64 = 128;
pub const HERD_CORES: u32 = 4;
pub const HERD_VALUE_WORDS: usize = 8;
const OP_GET: u64 = 1;
const OP_PUT: u64 = 2;

/// Seeded xorshift64* (deterministic).
#[derive(Clone, Debug)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn word(mem: &Dram, addr: u64) -> u64 {
    mem.slice(addr, 8)
        .map_or(0, |b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
}

/// What every KV client measures.
#[derive(Debug, Default)]
struct Measure {
    lat: Vec<f64>,
    wrong: Vec<String>,
    first: Option<SimTime>,
    last: SimTime,
    completed: u64,
}

impl Measure {
    fn done(&mut self, now: SimTime, posted: SimTime, warmup: u64) {
        self.completed += 1;
        if self.completed > warmup {
            self.first.get_or_insert(posted);
            self.last = now;
            self.lat.push(now.since(posted).as_ns());
        }
    }

    fn wrong(&mut self, what: String) {
        if self.wrong.len() < 8 {
            self.wrong.push(what);
        }
    }
}

/// The HERD server as its clients know it.
#[derive(Clone, Copy, Debug)]
pub struct HerdServer {
    pub ip: u32,
    pub region: u64,
    pub rkey: u32,
    pub clients: u32,
    pub window: u32,
}

struct HerdRequest {
    posted: SimTime,
    /// Where its reply lands (the buffer of its RECV: a core's replies to
    /// this client come in the order its requests were sent, and so are
    /// the RECVs consumed).
    buf: u64,
    expect: Option<[u64; HERD_VALUE_WORDS]>,
    put: bool,
}

/// A HERD client: `window` requests outstanding, GETs with probability
/// `get_fraction`, on its own keys.
pub struct HerdClient {
    me: u32,
    server: HerdServer,
    keys: u64,
    get_fraction: f64,
    count: u64,
    warmup: u64,
    issued: u64,
    rng: Rng,
    model: HashMap<u64, [u64; HERD_VALUE_WORDS]>,
    per_core: [u64; HERD_CORES as usize],
    out: HashMap<u64, HerdRequest>,
    m: Measure,
}

impl HerdClient {
    pub fn new(
        me: u32,
        server: HerdServer,
        keys: u64,
        get_fraction: f64,
        count: u64,
        warmup: u64,
        seed: u64,
    ) -> HerdClient {
        HerdClient {
            me,
            server,
            keys: keys.max(1),
            get_fraction,
            count,
            warmup,
            issued: 0,
            rng: Rng(seed | 1),
            model: HashMap::new(),
            per_core: [0; HERD_CORES as usize],
            out: HashMap::new(),
            m: Measure::default(),
        }
    }

    /// Key `i` of this client: (k0, k1), k0 never 0.
    fn key(&self, i: u64) -> (u64, u64) {
        let k0 = 1 + i * self.server.clients as u64 + self.me as u64;
        (k0, k0.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn core_of(k0: u64) -> u32 {
        (k0.wrapping_mul(0xBF58_476D_1CE4_E5B9) >> 62) as u32 % HERD_CORES
    }

    fn issue(&mut self, now: SimTime, posts: &mut Posts) {
        if self.issued >= self.count + self.warmup {
            return;
        }
        let id = self.issued;
        self.issued += 1;
        let ki = self.rng.next() % self.keys;
        let (k0, k1) = self.key(ki);
        let put = (self.rng.next() % 1_000_000) as f64 >= self.get_fraction * 1e6;
        let s = Self::core_of(k0);
        let r = self.per_core[s as usize];
        self.per_core[s as usize] += 1;
        let w = self.server.window as u64;
        let slot = s as u64 * (w * self.server.clients as u64) + self.me as u64 * w + r % w;
        // The reply lands in a buffer of this (core, slot).
        let buf = CLIENT_BUFFERS + (s as u64 * w + r % w) * HERD_SLOT;
        posts.post(
            now,
            Wqe {
                opcode: op::RECV,
                qpn: 100 + s,
                wr_id: id,
                local_addr: buf,
                len: HERD_SLOT as u32,
                ..Wqe::default()
            },
        );
        let mut req = [0u8; HERD_SLOT as usize];
        let mut value = [0u64; HERD_VALUE_WORDS];
        let expect = if put {
            for (j, v) in value.iter_mut().enumerate() {
                *v = self.rng.next() ^ j as u64;
                req[8 * j..8 * j + 8].copy_from_slice(&v.to_le_bytes());
            }
            self.model.insert(k0, value);
            None
        } else {
            self.model.get(&k0).copied()
        };
        req[96..104].copy_from_slice(&(if put { OP_PUT } else { OP_GET }).to_le_bytes());
        req[104..112].copy_from_slice(&id.to_le_bytes());
        req[112..120].copy_from_slice(&k0.to_le_bytes());
        req[120..128].copy_from_slice(&k1.to_le_bytes());
        self.out.insert(
            id,
            HerdRequest {
                posted: now,
                buf,
                expect,
                put,
            },
        );
        // HERD: inlined, unsignaled WRITE over UC.
        posts.post_inline(
            now,
            Wqe {
                opcode: op::WRITE,
                flags: F_INLINE,
                len: HERD_SLOT as u32,
                qpn: 1,
                wr_id: id,
                remote_addr: self.server.region + slot * HERD_SLOT,
                rkey: self.server.rkey,
                ..Wqe::default()
            },
            &req,
        );
    }
}

impl VerbsClient for HerdClient {
    fn start(&mut self, now: SimTime, posts: &mut Posts) {
        posts.create_cq(now, 1);
        posts.create_qp(now, 1, Transport::Uc, 1, self.server.ip, 1 + self.me);
        for s in 0..HERD_CORES {
            posts.create_qp(now, 100 + s, Transport::Ud, 1, 0, 0);
        }
        for _ in 0..self.server.window {
            self.issue(now, posts);
        }
    }

    fn completion(&mut self, now: SimTime, cqe: &Cqe, mem: &Dram, posts: &mut Posts) {
        let Some(req) = self.out.remove(&cqe.wr_id) else {
            self.m.wrong(format!(
                "a completion for request {} that is not outstanding",
                cqe.wr_id
            ));
            return;
        };
        if cqe.status != 0 {
            self.m.wrong(format!(
                "request {}: receive failed with status {}",
                cqe.wr_id, cqe.status
            ));
        } else {
            let buf = req.buf;
            let id = word(mem, buf);
            let status = word(mem, buf + 8);
            if id != cqe.wr_id {
                self.m
                    .wrong(format!("request {}: reply carries id {id}", cqe.wr_id));
            } else if req.put {
                if status != 0 {
                    self.m.wrong(format!("PUT {}: status {status}", cqe.wr_id));
                }
            } else {
                match req.expect {
                    None if status != 1 => self.m.wrong(format!(
                        "GET {}: expected not found, status {status}",
                        cqe.wr_id
                    )),
                    Some(v) => {
                        let got: Vec<u64> = (0..HERD_VALUE_WORDS as u64)
                            .map(|j| word(mem, buf + 16 + 8 * j))
                            .collect();
                        if status != 0 || got != v {
                            self.m.wrong(format!(
                                "GET {}: status {status}, value {:x?}, expected {:x?}",
                                cqe.wr_id,
                                &got[..2],
                                &v[..2]
                            ));
                        }
                    }
                    None => {}
                }
            }
        }
        self.m.done(now, req.posted, self.warmup);
        self.issue(now, posts);
    }

    fn done(&self) -> bool {
        self.m.completed >= self.count + self.warmup
    }

    fn report(&self) -> serde_json::Value {
        serde_json::json!({ "completed": self.m.completed, "wrong": self.m.wrong })
    }

    fn latencies_ns(&self) -> &[f64] {
        &self.m.lat
    }

    fn wrong(&self) -> &[String] {
        &self.m.wrong
    }

    fn measured(&self) -> Option<(u64, SimTime, SimTime)> {
        Some((self.m.lat.len() as u64, self.m.first?, self.m.last))
    }
}

/// `herd_readkv`'s layout (see its source).
pub const READKV_BUCKETS: u64 = 4096;
const BUCKET_BYTES: u64 = 32;

fn readkv_hash(k0: u64) -> u64 {
    let h = k0.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h ^ (h >> 31)
}

/// Word `j` of key `i`'s value in `herd_readkv`.
pub fn readkv_value(i: u64, j: u64) -> u64 {
    (i.wrapping_mul(1_000_003) + j) ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

#[derive(Clone, Copy)]
struct Get {
    key: u64,
    bucket: u64,
    posted: SimTime,
    /// Reading the value (else a bucket).
    value: bool,
}

/// A READ-based store's client: `window` GETs outstanding, each a chain of
/// bucket READs then a value READ, on keys 1..=keys.
pub struct ReadKvClient {
    me: u32,
    server_ip: u32,
    region: u64,
    rkey: u32,
    keys: u64,
    window: u32,
    count: u64,
    warmup: u64,
    issued: u64,
    reads: u64,
    rng: Rng,
    slots: Vec<Option<Get>>,
    m: Measure,
}

impl ReadKvClient {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        me: u32,
        server_ip: u32,
        region: u64,
        rkey: u32,
        keys: u64,
        window: u32,
        count: u64,
        warmup: u64,
        seed: u64,
    ) -> ReadKvClient {
        ReadKvClient {
            me,
            server_ip,
            region,
            rkey,
            keys: keys.max(1),
            window: window.max(1),
            count,
            warmup,
            issued: 0,
            reads: 0,
            rng: Rng(seed | 1),
            slots: vec![None; window.max(1) as usize],
            m: Measure::default(),
        }
    }

    /// READs per GET so far.
    pub fn reads_per_get(&self) -> f64 {
        self.reads as f64 / self.m.completed.max(1) as f64
    }

    fn read(&mut self, now: SimTime, slot: usize, addr: u64, len: u32, posts: &mut Posts) {
        self.reads += 1;
        posts.post(
            now,
            Wqe {
                opcode: op::READ,
                flags: F_SIGNALED,
                len,
                qpn: 1,
                wr_id: slot as u64,
                local_addr: CLIENT_BUFFERS + slot as u64 * 128,
                remote_addr: addr,
                rkey: self.rkey,
                ..Wqe::default()
            },
        );
    }

    fn start_get(&mut self, now: SimTime, slot: usize, posts: &mut Posts) {
        if self.issued >= self.count + self.warmup {
            self.slots[slot] = None;
            return;
        }
        self.issued += 1;
        let key = 1 + self.rng.next() % self.keys;
        let bucket = readkv_hash(key) % READKV_BUCKETS;
        self.slots[slot] = Some(Get {
            key,
            bucket,
            posted: now,
            value: false,
        });
        self.read(
            now,
            slot,
            self.region + bucket * BUCKET_BYTES,
            BUCKET_BYTES as u32,
            posts,
        );
    }
}

impl VerbsClient for ReadKvClient {
    fn start(&mut self, now: SimTime, posts: &mut Posts) {
        posts.create_cq(now, 1);
        posts.create_qp(now, 1, Transport::Rc, 1, self.server_ip, 1 + self.me);
        for s in 0..self.window as usize {
            self.start_get(now, s, posts);
        }
    }

    fn completion(&mut self, now: SimTime, cqe: &Cqe, mem: &Dram, posts: &mut Posts) {
        let slot = cqe.wr_id as usize;
        let Some(Some(mut g)) = self.slots.get(slot).copied() else {
            self.m
                .wrong(format!("a completion for slot {slot} with no GET"));
            return;
        };
        let buf = CLIENT_BUFFERS + slot as u64 * 128;
        if cqe.status != 0 {
            self.m.wrong(format!(
                "GET {}: READ failed with status {}",
                g.key, cqe.status
            ));
            self.m.done(now, g.posted, self.warmup);
            return self.start_get(now, slot, posts);
        }
        if g.value {
            let got: Vec<u64> = (0..8).map(|j| word(mem, buf + 8 * j)).collect();
            let want: Vec<u64> = (0..8).map(|j| readkv_value(g.key, j)).collect();
            if got != want {
                self.m.wrong(format!(
                    "GET {}: value {:x?}, expected {:x?}",
                    g.key,
                    &got[..2],
                    &want[..2]
                ));
            }
            self.m.done(now, g.posted, self.warmup);
            return self.start_get(now, slot, posts);
        }
        let k0 = word(mem, buf);
        if k0 == g.key {
            let off = word(mem, buf + 16);
            g.value = true;
            self.slots[slot] = Some(g);
            self.read(now, slot, self.region + off, 64, posts);
        } else if k0 == 0 {
            self.m.wrong(format!("GET {}: not in the index", g.key));
            self.m.done(now, g.posted, self.warmup);
            self.start_get(now, slot, posts);
        } else {
            g.bucket = (g.bucket + 1) % READKV_BUCKETS;
            self.slots[slot] = Some(g);
            self.read(
                now,
                slot,
                self.region + g.bucket * BUCKET_BYTES,
                BUCKET_BYTES as u32,
                posts,
            );
        }
    }

    fn done(&self) -> bool {
        self.m.completed >= self.count + self.warmup
    }

    fn report(&self) -> serde_json::Value {
        serde_json::json!({ "completed": self.m.completed, "reads_per_get": self.reads_per_get(), "wrong": self.m.wrong })
    }

    fn latencies_ns(&self) -> &[f64] {
        &self.m.lat
    }

    fn wrong(&self) -> &[String] {
        &self.m.wrong
    }

    fn measured(&self) -> Option<(u64, SimTime, SimTime)> {
        Some((self.m.lat.len() as u64, self.m.first?, self.m.last))
    }
}
