//! A node with NEBULA's NIC (any design) driven by a built-in client: many
//! connections, Poisson arrivals at a staircase of rates, MICA requests
//! made and checked by `nanopu_apps::mica` (every reply against the
//! oracle), NACKs answered by a retry after a backoff (and counted). The
//! client and the node share a link of `link_gbps` each way.
//!
//! Each stage of the staircase is measured on its own: server-side
//! latency of the RPCs received during it (NACKs count as infinite,
//! NEBULA §VI), and the memory system's DRAM bytes and LLC hits and misses
//! over it.

use super::{NebulaConfig, NebulaDesign, NebulaError, NebulaNic};
use crate::host::NodeHost;
use crate::nics::NodeNic;
use nanopu_apps::mica::{MicaClient, MicaConfig};
use nanopu_apps::{App, AppContext, AppRng, Request, Verdict};
use nanopu_nics::mac::Mac;
use nanopu_node::{Node, NodeConfig, NodeError};
use nanopu_sim::{SimDuration, SimTime};
use nanopu_wire::Flags;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp};
use serde::Serialize;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::path::PathBuf;

/// The server's and the client's addresses.
const SERVER_IP: u32 = 0x0a00_0001;
const CLIENT_IP: u32 = 0x0a00_0002;

/// What to run.
#[derive(Clone, Debug)]
pub struct MicaLoad {
    pub design: NebulaDesign,
    pub nic: NebulaConfig,
    pub node: NodeConfig,
    pub program: PathBuf,
    /// The program's arguments after its name.
    pub args: Vec<String>,
    pub mica: MicaConfig,
    /// Offered load of each stage, million requests per second.
    pub rates_mrps: Vec<f64>,
    pub requests_per_stage: u64,
    /// Requests before the first stage (at its rate), not measured.
    pub warmup_requests: u64,
    /// Client connections (§VI: 1024 nodes); requests pick one uniformly.
    pub connections: u32,
    /// Link rate each way (§VI: a 120 Gb/s NIC).
    pub link_gbps: u64,
    /// MAC and serial I/O each way, ps.
    pub mac_ps: u64,
    /// A NACKed request is sent again `backoff_ns * attempts` later.
    pub backoff_ns: u64,
    /// Attempts before the client gives up on a request (reported).
    pub max_attempts: u32,
    /// Stop offering load when this many requests are unanswered (the
    /// server is saturated; later stages are not run).
    pub max_backlog: u64,
    /// How long the program may take to register its receive buffer.
    pub boot_limit_ns: u64,
    /// After the last request, how long replies may still come.
    pub drain_ns: u64,
    pub seed: u64,
}

/// One stage's measurements.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StageResult {
    pub offered_mrps: f64,
    /// RPCs received in the stage and finished, and NACKs in it.
    pub finished: u64,
    pub nacks: u64,
    pub mean_ns: f64,
    pub p50_ns: Option<u64>,
    /// `None`: over 1% NACKed (infinite, §VI).
    pub p99_ns: Option<u64>,
    /// Finished RPCs per second over the stage, millions.
    pub achieved_mrps: f64,
    pub dram_gb_s: f64,
    pub dram_read_bytes: u64,
    pub dram_write_bytes: u64,
    pub llc_hits: u64,
    pub llc_misses: u64,
    pub llc_miss_rate: f64,
    pub duration_ns: f64,
}

/// The whole run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct MicaRun {
    pub design: String,
    pub stages: Vec<StageResult>,
    /// Stages not run: the server was saturated before.
    pub stages_skipped: usize,
    pub sent: u64,
    pub answered: u64,
    pub wrong: u64,
    pub first_error: Option<String>,
    pub nacks_received: u64,
    pub retries: u64,
    /// Requests the client gave up on after `max_attempts` NACKs.
    pub gave_up: u64,
    /// Requests without an answer when the run ended.
    pub unanswered: u64,
    pub boot_ns: f64,
    pub sim_ns: f64,
    pub nic: serde_json::Value,
}

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Node(#[from] NodeError),
    #[error(transparent)]
    Nic(#[from] NebulaError),
    #[error("the program did not register its receive buffer within {0} ns (nebula_init)")]
    NoBoot(u64),
    #[error("the program exited with code {0} while serving")]
    Exited(u64),
    #[error("bad load: {0}")]
    Config(&'static str),
}

enum Ev {
    Nic(crate::nics::NodeNicEvent),
    ToNic(Vec<u8>),
    ToClient(Vec<u8>),
    Retry((u16, u16)),
}

/// An event of the harness at `at`; events at the same instant in the
/// order they were pushed (`seq`).
struct Queued {
    at: SimTime,
    seq: u64,
    ev: Ev,
}

// Earliest first from `BinaryHeap` (a max-heap): ordered by (at, seq)
// reversed. `seq` is unique, so no two events compare equal.
impl Ord for Queued {
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

impl PartialOrd for Queued {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Queued {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}

impl Eq for Queued {}

/// The most frame buffers the client side keeps for reuse.
const SPARE_FRAMES: usize = 256;

struct Pending {
    seq: u64,
    req: Request,
    attempts: u32,
}

/// The client's connections: each one's next message id and requests in
/// flight, and every request sent and not yet answered or given up.
struct Connections {
    next_tid: Vec<u16>,
    outstanding: Vec<usize>,
    pending: HashMap<(u16, u16), Pending>,
}

impl Connections {
    fn new(count: u32) -> Connections {
        Connections {
            next_tid: vec![0; count as usize],
            outstanding: vec![0; count as usize],
            pending: HashMap::new(),
        }
    }

    /// Sends `req` (request number `seq`) on `conn` under its next message
    /// id, and keeps it until it is answered.
    fn open(&mut self, d: &mut Driver, conn: u16, seq: u64, req: Request, at: SimTime) {
        let tid = self.next_tid[conn as usize];
        self.next_tid[conn as usize] = tid.wrapping_add(1);
        self.outstanding[conn as usize] += 1;
        d.send_request(conn, tid, &req, at);
        self.pending.insert(
            (conn, tid),
            Pending {
                seq,
                req,
                attempts: 0,
            },
        );
    }

    /// Request `key` is answered or given up: its connection has room again.
    fn close(&mut self, key: (u16, u16)) -> Option<Pending> {
        let p = self.pending.remove(&key)?;
        self.outstanding[key.0 as usize] -= 1;
        Some(p)
    }
}

struct Snapshot {
    at: SimTime,
    read: u64,
    write: u64,
    hits: u64,
    misses: u64,
}

fn snapshot(node: &Node, at: SimTime) -> Snapshot {
    let m = node.memory_stats();
    Snapshot {
        at,
        read: m.dram_read_bytes,
        write: m.dram_write_bytes,
        hits: m.llc.hits,
        misses: m.llc.misses,
    }
}

/// The client, its link and the server, as the harness drives them. Once
/// warm it allocates nothing per request but the request itself
/// ([`App::next_request`]): events go through a heap, and frame buffers
/// and scratch vectors are reused.
struct Driver {
    host: NodeHost,
    events: BinaryHeap<Queued>,
    seq: u64,
    to_nic_free: SimTime,
    to_client_free: SimTime,
    link_gbps: u64,
    /// Frame buffers for the client's requests: those the NIC has taken
    /// in, and replies the NIC did not want back.
    spare_frames: Vec<Vec<u8>>,
    /// Scratch: a request's payload bytes; a reply's words.
    bytes: Vec<u8>,
    words: Vec<u64>,
    /// Scratch for [`Driver::drain_io`].
    sends: Vec<(Vec<u8>, SimTime)>,
    nic_events: Vec<(SimTime, crate::nics::NodeNicEvent)>,
}

impl Driver {
    /// `host` behind the client's link as `wire` gives it: the last event
    /// number and the two directions' free times, the link rate.
    fn new(host: NodeHost, wire: (u64, SimTime, SimTime, u64)) -> Driver {
        let (seq, to_nic_free, to_client_free, link_gbps) = wire;
        Driver {
            host,
            events: BinaryHeap::new(),
            seq,
            to_nic_free,
            to_client_free,
            link_gbps,
            spare_frames: Vec::new(),
            bytes: Vec::new(),
            words: Vec::new(),
            sends: Vec::new(),
            nic_events: Vec::new(),
        }
    }

    fn push(&mut self, at: SimTime, ev: Ev) {
        self.seq += 1;
        self.events.push(Queued {
            at,
            seq: self.seq,
            ev,
        });
    }

    /// The time of the earliest event, if any.
    fn next_event(&self) -> Option<SimTime> {
        self.events.peek().map(|q| q.at)
    }

    /// The earliest event, if it is due by `now`.
    fn pop_due(&mut self, now: SimTime) -> Option<(SimTime, Ev)> {
        if self.next_event()? > now {
            return None;
        }
        self.events.pop().map(|q| (q.at, q.ev))
    }

    /// A consumed frame buffer: to the NIC if it wants it, else kept for
    /// the client's requests (or freed beyond [`SPARE_FRAMES`]).
    fn recycle(&mut self, frame: Vec<u8>) {
        if let Some(frame) = self.host.nic.recycle(frame) {
            if self.spare_frames.len() < SPARE_FRAMES {
                self.spare_frames.push(frame);
            }
        }
    }

    /// The client sends `req` on connection `conn` as message `tid` at
    /// `at` (or once its link is free).
    fn send_request(&mut self, conn: u16, tid: u16, req: &Request, at: SimTime) {
        let mut bytes = std::mem::take(&mut self.bytes);
        bytes_of(req, &mut bytes);
        let frame = super::wire::frame(
            self.spare_frames.pop().unwrap_or_default(),
            CLIENT_IP,
            SERVER_IP,
            conn,
            req.context,
            tid,
            req.len,
            Flags::DATA,
            &bytes,
        );
        self.bytes = bytes;
        let first = at.max(self.to_nic_free);
        self.to_nic_free = first + SimDuration::serialization(frame.len() as u64, self.link_gbps);
        self.push(first, Ev::ToNic(frame));
    }

    fn drain_io(&mut self) {
        let mut sends = std::mem::take(&mut self.sends);
        let mut evs = std::mem::take(&mut self.nic_events);
        {
            let r = self.host.io.drain();
            sends.extend(r.transmit);
            evs.extend(r.schedule);
        }
        for (at, e) in evs.drain(..) {
            self.push(at, Ev::Nic(e));
        }
        for (frame, ready) in sends.drain(..) {
            let first = ready.max(self.to_client_free);
            let last = first + SimDuration::serialization(frame.len() as u64, self.link_gbps);
            self.to_client_free = last;
            self.push(last, Ev::ToClient(frame));
        }
        self.sends = sends;
        self.nic_events = evs;
    }

    /// Runs the cores to `t`, letting the NIC take what they give it.
    fn run_to(&mut self, t: SimTime) -> Result<(), LoadError> {
        loop {
            self.host.advance(t)?;
            self.drain_io();
            if let Some((code, _)) = self.host.node.exit() {
                return Err(LoadError::Exited(code));
            }
            let next = self.next_event().map_or(t, |e| e.min(t));
            if !self.host.can_run(next) || next < t && !self.host.can_run(t) {
                return Ok(());
            }
            if next < t {
                return Ok(());
            }
        }
    }
}

/// `bytes` as little-endian words into `out` (the last one zero-padded).
fn words_of(bytes: &[u8], out: &mut Vec<u64>) {
    out.clear();
    out.extend(bytes.chunks(8).map(|c| {
        let mut w = [0u8; 8];
        w[..c.len()].copy_from_slice(c);
        u64::from_le_bytes(w)
    }));
}

/// `req`'s payload as its `len` bytes, into `out`.
fn bytes_of(req: &Request, out: &mut Vec<u8>) {
    out.clear();
    out.extend(req.payload.iter().flat_map(|w| w.to_le_bytes()));
    out.resize(req.len as usize, 0);
}

/// Runs `load`; see the module documentation.
pub fn run_mica(load: &MicaLoad) -> Result<MicaRun, LoadError> {
    serve_mica(load, boot_mica(load)?)
}

/// A server of a [`MicaLoad`] booted (its store preloaded, its receive
/// buffer registered) and not yet offered any request.
pub struct BootedMica {
    d: Driver,
    boot: SimTime,
    key: BootKey,
}

/// What a boot depended on besides the NIC's design.
#[derive(Clone)]
struct BootKey {
    node: NodeConfig,
    program: PathBuf,
    args: Vec<String>,
    nic: NebulaConfig,
    link: (u64, u64),
}

impl BootKey {
    fn of(load: &MicaLoad) -> BootKey {
        BootKey {
            node: load.node.clone(),
            program: load.program.clone(),
            args: load.args.clone(),
            nic: load.nic.clone(),
            link: (load.link_gbps, load.mac_ps),
        }
    }

    fn matches(&self, load: &MicaLoad) -> bool {
        load.node == self.node
            && load.program == self.program
            && load.args == self.args
            && load.nic == self.nic
            && (load.link_gbps, load.mac_ps) == self.link
    }
}

/// A booted server without its NIC, to fork servers of any design from
/// ([`BootedMica::into_seed`]). `Send`, unlike a server with its NIC.
pub struct MicaSeed {
    node: Node,
    boot: SimTime,
    key: BootKey,
    seq: u64,
    to_nic_free: SimTime,
    to_client_free: SimTime,
    link_gbps: u64,
}

impl BootedMica {
    /// Whether the boot did not depend on the NIC's design: nothing reached
    /// the NIC (the program only reads the receive buffer's size from it,
    /// and `nb_mica` ignores it) and nothing is in flight.
    fn design_free(&self) -> bool {
        let nic = self.d.host.nic.as_nebula().expect("a NEBULA NIC");
        nic.untouched()
            && self.d.events.is_empty()
            && self.d.host.io.is_empty()
            && !self.d.host.deadlocked
            && self
                .d
                .host
                .node
                .nebula_queues()
                .is_some_and(|q| !q.has_commands())
    }

    /// The same server, as `load` would have booted it, for `load`'s
    /// design: a fork of the booted node behind a new NIC of that design.
    /// `None` (boot `load` itself) if the boot depended on the design
    /// (see [`MicaSeed`]) or `load` boots anything else (node, program,
    /// arguments, NIC parameters, link).
    pub fn fork_for(&self, load: &MicaLoad) -> Result<Option<BootedMica>, LoadError> {
        if !self.design_free() || !self.key.matches(load) {
            return Ok(None);
        }
        let d = &self.d;
        let wire = (d.seq, d.to_nic_free, d.to_client_free, d.link_gbps);
        serve_from(d.host.node.fork()?, self.boot, &self.key, wire, load).map(Some)
    }

    /// The booted node alone, to fork from ([`MicaSeed::fork_for`]);
    /// `None` if the boot depended on the design.
    pub fn into_seed(self) -> Option<MicaSeed> {
        if !self.design_free() {
            return None;
        }
        let BootedMica { d, boot, key } = self;
        Some(MicaSeed {
            seq: d.seq,
            to_nic_free: d.to_nic_free,
            to_client_free: d.to_client_free,
            link_gbps: d.link_gbps,
            node: d.host.node,
            boot,
            key,
        })
    }
}

impl MicaSeed {
    /// A server for `load` as its own boot would give it ([`BootedMica::fork_for`]);
    /// `None` if `load` boots anything else.
    pub fn fork_for(&self, load: &MicaLoad) -> Result<Option<BootedMica>, LoadError> {
        if !self.key.matches(load) {
            return Ok(None);
        }
        serve_from(self.node.fork()?, self.boot, &self.key, self.wire(), load).map(Some)
    }

    /// As [`MicaSeed::fork_for`], the seed's own node serving `load` (no
    /// copy: for the last point a seed serves). `None` if `load` boots
    /// anything else.
    pub fn into_server_for(self, load: &MicaLoad) -> Result<Option<BootedMica>, LoadError> {
        if !self.key.matches(load) {
            return Ok(None);
        }
        let wire = self.wire();
        serve_from(self.node, self.boot, &self.key, wire, load).map(Some)
    }

    /// The client's link as the boot left it (see [`serve_from`]).
    fn wire(&self) -> (u64, SimTime, SimTime, u64) {
        (
            self.seq,
            self.to_nic_free,
            self.to_client_free,
            self.link_gbps,
        )
    }
}

/// Booted `node` (a fork, or the seed's own) behind a new NIC of `load`'s
/// design, the client's link as it was (`wire`: the driver's sequence
/// number and the two directions' free times, the link rate).
fn serve_from(
    mut node: Node,
    boot: SimTime,
    key: &BootKey,
    wire: (u64, SimTime, SimTime, u64),
    load: &MicaLoad,
) -> Result<BootedMica, LoadError> {
    let nic = NebulaNic::rebind(
        load.design,
        load.nic.clone(),
        mac_of(load),
        SERVER_IP,
        &mut node,
    )
    .expect("the booted node has NEBULA's queues");
    Ok(BootedMica {
        d: Driver::new(NodeHost::new(node, NodeNic::nebula(nic)), wire),
        boot,
        key: key.clone(),
    })
}

fn check(load: &MicaLoad) -> Result<(), LoadError> {
    if load.rates_mrps.is_empty() || load.rates_mrps.iter().any(|&r| !r.is_finite() || r <= 0.0) {
        return Err(LoadError::Config(
            "rates_mrps must be positive and not empty",
        ));
    }
    if load.connections == 0 || load.connections > u16::MAX as u32 {
        return Err(LoadError::Config("connections must be in 1..=65535"));
    }
    Ok(())
}

fn mac_of(load: &MicaLoad) -> Mac {
    Mac {
        link_gbps: load.link_gbps,
        rx_latency: SimDuration::from_ps(load.mac_ps),
        tx_latency: SimDuration::from_ps(load.mac_ps),
    }
}

/// Boots the server of `load` (see [`BootedMica`]).
pub fn boot_mica(load: &MicaLoad) -> Result<BootedMica, LoadError> {
    check(load)?;
    let mut node = Node::with_program(load.node.clone(), &load.program)?;
    if let Some(h) = node.htif_mut() {
        let mut args = vec![nanopu_node::loader::argv0(&load.program)];
        args.extend(load.args.iter().cloned());
        h.args = args;
    }
    let mac = mac_of(load);
    let nic = NebulaNic::new(load.design, load.nic.clone(), mac, SERVER_IP, &mut node)?;
    let mut d = Driver::new(
        NodeHost::new(node, NodeNic::nebula(nic)),
        (0, SimTime::ZERO, SimTime::ZERO, load.link_gbps),
    );
    // Boot: until the program registers its receive buffer.
    let step = SimDuration::from_ns(2_000);
    let mut t = SimTime::ZERO;
    while d
        .host
        .node
        .nebula_queues()
        .and_then(|q| q.buffer_base())
        .is_none()
    {
        if t.fs() > SimDuration::from_ns(load.boot_limit_ns).fs() {
            return Err(LoadError::NoBoot(load.boot_limit_ns));
        }
        t += step;
        d.run_to(t)?;
    }
    let boot = t;
    Ok(BootedMica {
        d,
        boot,
        key: BootKey::of(load),
    })
}

/// Offers `load`'s requests to `booted` (booted for `load`: by
/// [`boot_mica`] or [`BootedMica::fork_for`]) and measures.
pub fn serve_mica(load: &MicaLoad, booted: BootedMica) -> Result<MicaRun, LoadError> {
    check(load)?;
    let BootedMica { mut d, boot, .. } = booted;

    let mut rng = AppRng::seed_from_u64(load.seed);
    let mut mica = MicaClient::new(load.mica.clone(), AppContext::SINGLE);
    let mut run = MicaRun {
        design: load.design.name().into(),
        boot_ns: boot.fs() as f64 / 1e6,
        ..MicaRun::default()
    };
    let mut conns = Connections::new(load.connections);
    // Requests waiting for a connection with room, with their numbers.
    let mut backlog: VecDeque<(u64, Request)> = VecDeque::new();
    let per_conn_limit = load.nic.per_connection_messages as usize;

    // Stage boundaries: request numbers.
    let total_stages = load.rates_mrps.len();
    let mut stage_starts: Vec<Snapshot> = Vec::new();
    let stage_of_seq = |seq: u64| -> Option<usize> {
        if seq < load.warmup_requests {
            None
        } else {
            Some(((seq - load.warmup_requests) / load.requests_per_stage) as usize)
        }
    };
    let total_requests = load.warmup_requests + load.requests_per_stage * total_stages as u64;
    let mut next_seq = 0u64;
    let mut next_arrival = boot;
    let mut stopped_at_stage: Option<usize> = None;
    let mut last_arrival = boot;
    let mut clock = boot;

    loop {
        let arrivals_left = next_seq < total_requests && stopped_at_stage.is_none();
        let next_event = d.next_event();
        let now = match (arrivals_left.then_some(next_arrival), next_event) {
            (Some(a), Some(e)) => a.min(e),
            (Some(a), None) => a,
            (None, Some(e)) => e,
            // Requests still in the node: let its cores run on.
            (None, None) if !conns.pending.is_empty() => clock + SimDuration::from_ns(1_000),
            (None, None) => break,
        };
        clock = now;
        if !arrivals_left && now.since(last_arrival) > SimDuration::from_ns(load.drain_ns) {
            break;
        }
        d.run_to(now)?;
        // Events due now (running the cores may have added earlier ones).
        while let Some((at, ev)) = d.pop_due(now) {
            match ev {
                Ev::Nic(e) => d.host.handle(e, at.max(now)),
                Ev::ToNic(frame) => {
                    d.host.frame_in(&frame, at);
                    d.recycle(frame);
                }
                Ev::Retry(key) => {
                    if let Some(p) = conns.pending.get(&key) {
                        run.retries += 1;
                        d.send_request(key.0, key.1, &p.req, at);
                    }
                }
                Ev::ToClient(frame) => {
                    if let Some((info, flags, payload)) = super::wire::parse(&frame) {
                        let key = (info.dst_context, info.tx_msg_id);
                        if flags.contains(Flags::NACK) {
                            run.nacks_received += 1;
                            if let Some(p) = conns.pending.get_mut(&key) {
                                p.attempts += 1;
                                if p.attempts >= load.max_attempts {
                                    conns.close(key);
                                    run.gave_up += 1;
                                } else {
                                    let back =
                                        SimDuration::from_ns(load.backoff_ns * p.attempts as u64);
                                    d.push(at + back, Ev::Retry(key));
                                }
                            }
                        } else if let Some(p) = conns.close(key) {
                            run.answered += 1;
                            let mut words = std::mem::take(&mut d.words);
                            words_of(payload, &mut words);
                            if !matches!(mica.check(&p.req, &words, info.msg_len), Verdict::Ok) {
                                run.wrong += 1;
                                run.first_error.get_or_insert_with(|| {
                                    format!("request {}: a wrong reply ({} B)", p.seq, info.msg_len)
                                });
                            }
                            d.words = words;
                            if let Some((seq, req)) = backlog.pop_front() {
                                conns.open(&mut d, key.0, seq, req, at);
                            }
                        }
                    }
                    d.recycle(frame);
                }
            }
            d.drain_io();
        }
        if arrivals_left && next_arrival <= now {
            let seq = next_seq;
            next_seq += 1;
            let stage = stage_of_seq(seq);
            if let Some(s) = stage {
                if stage_starts.len() == s {
                    // Saturated: stop offering load.
                    let backlog_now = run.sent - run.answered - run.gave_up;
                    if backlog_now > load.max_backlog {
                        stopped_at_stage = Some(s);
                        continue;
                    }
                    stage_starts.push(snapshot(&d.host.node, now));
                }
            }
            let req = mica.next_request(seq, &mut rng);
            run.sent += 1;
            let mut conn = None;
            for _ in 0..load.connections {
                let c = rng.random_range(0..load.connections) as usize;
                if conns.outstanding[c] < per_conn_limit {
                    conn = Some(c as u16);
                    break;
                }
            }
            match conn {
                Some(c) => conns.open(&mut d, c, seq, req, now),
                None => backlog.push_back((seq, req)),
            }
            last_arrival = now;
            let rate = load.rates_mrps[stage.unwrap_or(0).min(total_stages - 1)];
            let gap_ns: f64 = Exp::new(rate * 1e-3)
                .expect("positive rate")
                .sample(&mut rng);
            next_arrival = now + SimDuration::from_ps((gap_ns * 1000.0).round() as u64);
        }
    }
    let end = snapshot(&d.host.node, last_arrival);
    let nic = d.host.nic.as_nebula().expect("a NEBULA NIC");
    // Stage windows: [start of stage s, start of s + 1) by reception time.
    let n = stage_starts.len();
    for s in 0..n {
        let a = &stage_starts[s];
        let b = stage_starts.get(s + 1).unwrap_or(&end);
        let mut lat: Vec<u64> = nic
            .completions
            .iter()
            .filter(|(r, _)| *r >= a.at && *r < b.at)
            .map(|&(_, ns)| ns)
            .collect();
        lat.sort_unstable();
        let nacks = nic
            .nacked_at
            .iter()
            .filter(|&&t| t >= a.at && t < b.at)
            .count() as u64;
        let total = lat.len() as u64 + nacks;
        let pct = |q: f64| -> Option<u64> {
            if total == 0 {
                return Some(0);
            }
            let rank = ((q * total as f64).ceil() as usize).max(1);
            lat.get(rank - 1).copied()
        };
        let dur_ns = b.at.since(a.at).fs() as f64 / 1e6;
        let bytes = (b.read - a.read) + (b.write - a.write);
        let (hits, misses) = (b.hits - a.hits, b.misses - a.misses);
        run.stages.push(StageResult {
            offered_mrps: load.rates_mrps[s],
            finished: lat.len() as u64,
            nacks,
            mean_ns: if lat.is_empty() {
                0.0
            } else {
                lat.iter().sum::<u64>() as f64 / lat.len() as f64
            },
            p50_ns: pct(0.5),
            p99_ns: pct(0.99),
            achieved_mrps: if dur_ns > 0.0 {
                lat.len() as f64 / dur_ns * 1e3
            } else {
                0.0
            },
            dram_gb_s: if dur_ns > 0.0 {
                bytes as f64 / dur_ns
            } else {
                0.0
            },
            dram_read_bytes: b.read - a.read,
            dram_write_bytes: b.write - a.write,
            llc_hits: hits,
            llc_misses: misses,
            llc_miss_rate: if hits + misses > 0 {
                misses as f64 / (hits + misses) as f64
            } else {
                0.0
            },
            duration_ns: dur_ns,
        });
    }
    run.stages_skipped = total_stages - n;
    run.unanswered = conns.pending.len() as u64 + backlog.len() as u64;
    run.nic = d.host.nic_stats();
    run.sim_ns = d.next_event().unwrap_or(last_arrival).fs() as f64 / 1e6;
    Ok(run)
}

/// The `[node]` table of a configuration file such as
/// `configs/nebula-server.toml`.
pub fn node_config_from_toml(text: &str) -> Result<NodeConfig, toml::de::Error> {
    #[derive(serde::Deserialize)]
    struct File {
        #[serde(default)]
        node: NodeConfig,
    }
    toml::from_str::<File>(text).map(|f| f.node)
}

impl MicaLoad {
    /// A small load of `design` on `node` running `program`: a few stages,
    /// few requests (what tests and the quick scale start from).
    pub fn small(design: NebulaDesign, node: NodeConfig, program: PathBuf, pairs: u32) -> MicaLoad {
        MicaLoad {
            design,
            nic: NebulaConfig::default(),
            node,
            program,
            args: vec![pairs.to_string(), "512".into()],
            mica: MicaConfig {
                pairs,
                ..MicaConfig::default()
            },
            rates_mrps: vec![2.0],
            requests_per_stage: 200,
            warmup_requests: 50,
            connections: 1024,
            link_gbps: 120,
            mac_ps: 26_000,
            backoff_ns: 1_000,
            max_attempts: 50,
            max_backlog: 20_000,
            boot_limit_ns: 1_000_000_000,
            drain_ns: 500_000,
            seed: 1,
        }
    }
}

// Seeds go to other threads (`nb-mica` forks its points from them there).
const _: fn() = || {
    fn send<T: Send>() {}
    send::<MicaSeed>();
};
