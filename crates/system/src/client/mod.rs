//! The built-in client: a load generator attached to a node's wire.
//!
//! It sends request messages to one context of the node, open-loop
//! (Poisson arrivals at a rate) or closed-loop (a window of outstanding
//! requests), checks that each reply echoes or transforms its request as
//! the program under test should, and records response times at the node's
//! wire: from the first bit of a request entering the node to the last bit
//! of its reply leaving it.

mod config;
mod connections;
mod report;

pub use config::{
    Expect, LoadConfig, LoadConfigError, LoadMode, LoadSetting, Pattern, ServiceTime, Start,
    MAX_WINDOW,
};
pub use report::{ContextReport, LoadReport};

use crate::connections::{ConnId, Connections};
use config::DOT_WEIGHTS;
use hdrhistogram::Histogram;
use nanopu_apps::{App, AppConfig, AppContext, Request, Verdict};
use nanopu_nics::nanopu::frames;
use nanopu_nics::nanopu::Message;
use nanopu_sim::{Io, SimDuration, SimTime};
use nanopu_transport::metadata::GetRxMsgInfoReq;
use nanopu_transport::reassembly::Reassembly;
use nanopu_transport::{OutMessageRef, TransportConfig, WholeMessages};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp};
use std::collections::BTreeMap;

struct Outstanding {
    seq: u64,
    context: u16,
    /// When it was first sent (response times run from here).
    sent: SimTime,
    expected: Vec<u64>,
    /// The application's request (with an app), and its sends so far.
    request: Option<Box<Request>>,
    attempts: u32,
    /// When it was last sent, and to which server (index into `servers`).
    attempt_sent: SimTime,
    server: usize,
    /// Its connection and message id there (with `[load] connections`;
    /// `None`: the client's context, or waiting for a connection).
    conn: Option<ConnId>,
    /// NACKed: waiting to be sent again (see [`crate::connections`]).
    resending: bool,
}

/// How many of the oldest outstanding requests a reply matched in order is
/// compared with (replies overtake lost requests, rarely many).
const IN_ORDER_LOOKAHEAD: usize = 64;

/// Spare frame buffers and word vectors a client keeps for reuse: a reply
/// frees what the next request needs, so a few suffice in steady state, and
/// clusters of many clients do not hold many idle buffers.
const SPARE_FRAMES: usize = 16;
const SPARE_WORDS: usize = 16;

/// The load generator.
pub struct Client {
    pub cfg: LoadConfig,
    pub ip: u32,
    pub context: u16,
    server_ip: u32,
    /// Every server the client may send to (`[0]` is `server_ip`): address
    /// and one-way propagation delay.
    servers: Vec<(u32, SimDuration)>,
    /// The application driven, if any (its requests, its oracle).
    app: Option<Box<dyn App>>,
    /// Response times at the client, ps.
    client_latencies: Histogram<u64>,
    /// Core clock, to turn service times into cycles.
    core_mhz: u32,
    /// Destination of the request being built.
    current_context: u16,
    rng: ChaCha8Rng,
    next_seq: u64,
    packetizer: WholeMessages,
    /// Spare frame buffers (handed over by the cluster: [`Client::recycle`])
    /// and word vectors (payloads and expected replies of answered
    /// requests), so that a steady load allocates nothing.
    spare_frames: Vec<Vec<u8>>,
    spare_words: Vec<Vec<u64>>,
    started: bool,
    /// Requests waiting for a reply, by key: their sequence number when
    /// replies are matched in order (so the first is the oldest), else the
    /// first word of the expected reply.
    outstanding: BTreeMap<u64, Outstanding>,
    reassembly: Reassembly,
    latencies: Histogram<u64>,
    /// Per destination context (in the order of `contexts()`).
    context_latencies: Vec<(u16, Histogram<u64>)>,
    first_measured_send: Option<SimTime>,
    last_reply: SimTime,
    measured_replies: u64,
    /// Frame bits of measured replies (for Gb/s).
    measured_bits: u64,
    reply_frame_bytes: u64,
    /// Acknowledge every data packet from the node, as a NanoTransport
    /// receiver would, and ignore the node's control packets: needed when
    /// the node's NIC runs a transport program (it retransmits what is not
    /// acknowledged). Requests must then fit in the unscheduled window: the
    /// client answers no PULL or GRANT.
    pub acknowledge: bool,
    /// Acknowledgements sent.
    pub acks_sent: u64,
    /// Send time (core cycle) of the last `Pattern::LnicEval` request.
    last_stamp: Option<u64>,
    pub report: LoadReport,
    /// When `Some`, every measured reply adds (its request's first send,
    /// its response time at the client): a latency series, to see a gap
    /// (a failover) over time. Off by default.
    pub series: Option<Vec<(SimTime, SimDuration)>>,
    /// `[load] connections`.
    conns: Option<Connections>,
    /// NACKs of measured requests (infinite response times).
    measured_nacks: u64,
}

/// Picoseconds, up to 10 s, 3 significant digits.
fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 10_000_000_000_000, 3).expect("valid bounds")
}

/// The client's own timed events, handed back through [`Client::handle`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientEvent {
    /// The next open-loop arrival ([`Client::tick`]).
    Tick,
    /// The deadline of request `key` ([`Client::timeout`]): one timeout
    /// length after its send, so deadlines come in time order.
    Timeout(u64),
    /// A NACKed request's backoff is over (`[load] connections`).
    Resend,
}

/// What the client asks for: frames onto its link (ready at the time
/// given), its own events.
pub type ClientIo = Io<ClientEvent>;

impl Client {
    pub fn new(
        cfg: LoadConfig,
        ip: u32,
        server_ip: u32,
        mtu_payload: u32,
        propagation: SimDuration,
    ) -> Client {
        Client {
            rng: ChaCha8Rng::seed_from_u64(cfg.seed),
            conns: cfg.connections.clone().map(Connections::new),
            measured_nacks: 0,
            cfg,
            ip,
            context: 1,
            server_ip,
            servers: vec![(server_ip, propagation)],
            app: None,
            client_latencies: new_histogram(),
            core_mhz: 3200,
            current_context: 0,
            next_seq: 0,
            packetizer: WholeMessages::new(mtu_payload),
            spare_frames: Vec::new(),
            spare_words: Vec::new(),
            started: false,
            outstanding: BTreeMap::new(),
            reassembly: {
                let t = TransportConfig::default();
                Reassembly::lossless(t.max_rx_messages, &t.buffer_classes, mtu_payload)
                    .expect("the default buffer classes are valid")
            },
            // Picoseconds, up to 10 s, 3 significant digits.
            latencies: new_histogram(),
            context_latencies: Vec::new(),
            first_measured_send: None,
            last_reply: SimTime::ZERO,
            measured_replies: 0,
            measured_bits: 0,
            reply_frame_bytes: 0,
            acknowledge: false,
            acks_sent: 0,
            last_stamp: None,
            report: LoadReport::default(),
            series: None,
        }
    }

    /// Whether replies are matched to requests by order rather than content.
    fn in_order(&self) -> bool {
        matches!(self.cfg.pattern, Pattern::Zeros | Pattern::DotProduct)
            || self.cfg.expect == Expect::Any
    }

    /// Sets the core clock service times are converted with (default 3200 MHz).
    pub fn set_core_mhz(&mut self, mhz: u32) {
        self.core_mhz = mhz;
    }

    /// Whether every request has been answered.
    pub fn done(&self) -> bool {
        self.report.received + self.report.unexpected_replies + self.report.lost >= self.cfg.count
            && self.next_seq >= self.cfg.count
            && self.outstanding.is_empty()
    }

    pub fn started(&self) -> bool {
        self.started
    }

    /// Starts sending at `now`.
    pub fn start(&mut self, now: SimTime, out: &mut ClientIo) {
        if self.started {
            return;
        }
        self.started = true;
        if let Some(app) = self.app.as_mut() {
            for req in app.preamble(now.fs() / 1000, &mut self.rng) {
                let server = self.servers[req.server.min(self.servers.len() - 1)].0;
                self.send_frames(server, &req, None, now, out);
            }
        }
        match self.cfg.mode {
            LoadMode::Closed { window } => {
                for _ in 0..window {
                    self.send_next(now, out);
                }
            }
            LoadMode::Open { .. } | LoadMode::OpenTicked { .. } => self.tick(now, out),
        }
    }

    /// An event the client scheduled comes due at `now`.
    pub fn handle(&mut self, event: ClientEvent, now: SimTime, out: &mut ClientIo) {
        match event {
            ClientEvent::Tick => self.tick(now, out),
            ClientEvent::Timeout(key) => self.timeout(key, now, out),
            ClientEvent::Resend => self.resend_due(now, out),
        }
    }

    /// An open-loop arrival at `now`.
    pub fn tick(&mut self, now: SimTime, out: &mut ClientIo) {
        let (rate_mrps, tick_fs) = match self.cfg.mode {
            LoadMode::Closed { .. } => return,
            LoadMode::Open { rate_mrps } => (rate_mrps, 0),
            LoadMode::OpenTicked { rate_mrps, tick_ns } => {
                (rate_mrps, (tick_ns * 1e6).round() as u64)
            }
        };
        self.send_next(now, out);
        if self.next_seq < self.cfg.count {
            // Exponential inter-arrival times, in femtoseconds.
            let exp = Exp::new(rate_mrps * 1e6 / 1e15).expect("positive rate");
            let mut gap = exp.sample(&mut self.rng).round() as u64;
            if tick_fs > 0 {
                // The next iteration at or after the gap, at least the next one.
                gap = gap.div_ceil(tick_fs).max(1) * tick_fs;
            }
            out.schedule(now + SimDuration::from_fs(gap.max(1)), ClientEvent::Tick);
        }
    }

    /// The payload word that identifies a reply's request (when not in order).
    fn key_word(&self) -> usize {
        match self.cfg.pattern {
            Pattern::LnicEval => 1,
            _ => 0,
        }
    }

    fn service_dist(&self) -> ServiceTime {
        self.cfg
            .service_by_context
            .iter()
            .find(|(c, _)| *c == self.current_context)
            .map_or(self.cfg.service, |&(_, d)| d)
    }

    /// The payload of request `seq` at `now`, written into `p` (emptied
    /// first).
    fn payload_into(&mut self, seq: u64, now: SimTime, p: &mut Vec<u64>) {
        p.clear();
        let words = (self.cfg.message_bytes as usize).div_ceil(8);
        match self.cfg.pattern {
            Pattern::Counter => p.extend((0..words as u64).map(|i| (seq << 16) | i)),
            Pattern::Random => p.extend((0..words).map(|_| self.rng.random::<u64>())),
            Pattern::Zeros => p.resize(words, 0),
            Pattern::Service => {
                let ns = self.service_dist().sample(&mut self.rng).max(0.0);
                let cycles = (ns * self.core_mhz as f64 / 1000.0).round() as u64;
                p.extend([seq, cycles]);
                return;
            }
            Pattern::LnicEval => {
                let ns = self.service_dist().sample(&mut self.rng).max(0.0);
                // A service time of 0 tells the prototype's program to exit.
                let cycles = ((ns * self.core_mhz as f64 / 1000.0).round() as u64).max(1);
                let cycle = now.fs() / (1_000_000_000 / self.core_mhz as u64);
                let stamp = self.last_stamp.map_or(cycle, |l| cycle.max(l + 1));
                self.last_stamp = Some(stamp);
                p.extend([cycles, stamp]);
                return;
            }
            Pattern::DotProduct => {
                let n = (words - 2) / 2;
                p.extend([1, n as u64]);
                for _ in 0..n {
                    p.push(self.rng.random_range(0..DOT_WEIGHTS));
                    p.push(self.rng.random_range(0..1u64 << 20));
                }
                return;
            }
        }
        if self.cfg.pattern != Pattern::Zeros {
            p[0] = seq;
        }
        // Bytes beyond the length are not sent: keep the expected words equal.
        let tail = self.cfg.message_bytes as usize % 8;
        if tail != 0 {
            let last = p.len() - 1;
            p[last] &= (1u64 << (8 * tail)) - 1;
        }
    }

    /// Keeps a word vector for the next request's payload or expected reply.
    fn recycle_words(&mut self, mut v: Vec<u64>) {
        if self.spare_words.len() < SPARE_WORDS && v.capacity() > 0 {
            v.clear();
            self.spare_words.push(v);
        }
    }

    /// Takes a consumed frame buffer for its next sends; returns it if it
    /// has enough.
    pub fn recycle(&mut self, frame: Vec<u8>) -> Option<Vec<u8>> {
        if self.spare_frames.len() < SPARE_FRAMES {
            self.spare_frames.push(frame);
            None
        } else {
            Some(frame)
        }
    }

    /// Drives the application of `cfg.app` as client `ctx.client` of
    /// `ctx.clients`, sending to `servers` (`[0]` must be the server given
    /// to [`Client::new`]; address and one-way propagation delay of each).
    /// `client_host` calls it for a single client and server; a cluster
    /// calls it again with its own context.
    pub fn use_app(
        &mut self,
        ctx: AppContext,
        servers: Vec<(u32, SimDuration)>,
    ) -> Result<(), nanopu_apps::AppError> {
        if !servers.is_empty() {
            self.servers = servers;
        }
        let ctx = AppContext {
            servers: self.servers.len(),
            ..ctx
        };
        self.app = match &self.cfg.app {
            Some(AppConfig::Script(s)) => {
                // Its "count" words are the number of requests sent.
                let s = nanopu_apps::script::ScriptConfig {
                    count: self.cfg.count,
                    ..s.clone()
                };
                Some(AppConfig::Script(s).build(ctx)?)
            }
            Some(a) => Some(a.build(ctx)?),
            None => None,
        };
        self.report.app = self.app.as_ref().map(|a| a.name());
        Ok(())
    }

    /// The application's next request (`seq` is its tag).
    fn send_app_request(&mut self, seq: u64, now: SimTime, out: &mut ClientIo) {
        let app = self.app.as_mut().expect("called with an app");
        let req = app.next_request_at(seq, now.fs() / 1000, &mut self.rng);
        if req.server >= self.servers.len()
            || req.payload.len() != (req.len as usize).div_ceil(8)
            || req.len as usize > u16::MAX as usize
        {
            // The application broke its contract: count the request as
            // lost and say why, rather than send something malformed.
            self.report.lost += 1;
            self.report.wrong_replies += 1;
            self.report.first_error.get_or_insert_with(|| {
                format!(
                    "{} request {seq}: to server {} of {}, {} B in {} words: not a request the client can send",
                    app.name(),
                    req.server,
                    self.servers.len(),
                    req.len,
                    req.payload.len()
                )
            });
            return;
        }
        self.note_send(seq, now);
        self.outstanding.insert(
            seq,
            Outstanding {
                seq,
                context: req.context,
                sent: now,
                expected: Vec::new(),
                request: None,
                attempts: 0,
                attempt_sent: now,
                server: req.server,
                conn: None,
                resending: false,
            },
        );
        self.report.sent += 1;
        if let Some(conns) = self.conns.as_mut() {
            let o = self.outstanding.get_mut(&seq).expect("just inserted");
            match conns.open(seq, &mut self.rng) {
                Some(id) => o.conn = Some(id),
                None => {
                    // Sent when a connection has room (`close_conn`).
                    o.request = Some(Box::new(req));
                    return;
                }
            }
        }
        self.transmit(seq, req, now, out);
    }

    /// Puts the frames of application message `req` to `server` on the
    /// link, from connection `conn` (`None`: the client's context).
    fn send_frames(
        &mut self,
        server: u32,
        req: &Request,
        conn: Option<ConnId>,
        now: SimTime,
        out: &mut ClientIo,
    ) {
        let msg = OutMessageRef {
            dst_ip: server,
            dst_port: req.context,
            src_port: conn.map_or(self.context, |c| c.0),
            len: req.len,
            payload: &req.payload,
            tag: 0,
        };
        self.put_on_link(&msg, conn.map(|c| c.1), now, out);
    }

    /// Puts the frames of `msg` on the link at `now`, in spare buffers,
    /// as message `id` (`None`: the next of the client's counter).
    fn put_on_link(
        &mut self,
        msg: &OutMessageRef<'_>,
        id: Option<u16>,
        now: SimTime,
        out: &mut ClientIo,
    ) {
        let spare = &mut self.spare_frames;
        let buffer = || spare.pop().unwrap_or_default();
        let frame = |frame| out.transmit(frame, now);
        match id {
            Some(id) => self.packetizer.frames_as(id, self.ip, msg, buffer, frame),
            None => self.packetizer.frames(self.ip, msg, buffer, frame),
        }
    }

    /// Sends (or re-sends) application request `seq`, which is outstanding.
    fn transmit(&mut self, seq: u64, req: Request, now: SimTime, out: &mut ClientIo) {
        let conn = self.outstanding.get(&seq).and_then(|o| o.conn);
        self.send_frames(self.servers[req.server].0, &req, conn, now, out);
        if let Some(o) = self.outstanding.get_mut(&seq) {
            o.attempts += 1;
            o.attempt_sent = now;
            o.resending = false;
            o.server = req.server;
            o.context = req.context;
            o.request = Some(Box::new(req));
        }
        out.schedule(
            now + SimDuration::from_ns(self.cfg.timeout_ns),
            ClientEvent::Timeout(seq),
        );
    }

    /// Bookkeeping of the request numbered `seq`, sent at `now`.
    fn note_send(&mut self, seq: u64, now: SimTime) {
        if seq == self.cfg.warmup {
            self.first_measured_send = Some(now);
        }
        if seq == self.cfg.warmup + (self.cfg.count - self.cfg.warmup) / 2 {
            self.report.outstanding_at_midpoint = self.outstanding.len() as u64;
            self.report.sent_after_midpoint = self.cfg.count - 1 - seq;
        }
        if seq + 1 == self.cfg.count {
            self.report.outstanding_at_last_send = self.outstanding.len() as u64;
        }
    }

    fn send_next(&mut self, now: SimTime, out: &mut ClientIo) {
        if self.next_seq >= self.cfg.count {
            return;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        if self.app.is_some() {
            return self.send_app_request(seq, now, out);
        }
        let context = if self.cfg.extra_contexts.is_empty() {
            self.cfg.context
        } else {
            let i = self.rng.random_range(0..=self.cfg.extra_contexts.len());
            if i == 0 {
                self.cfg.context
            } else {
                self.cfg.extra_contexts[i - 1]
            }
        };
        self.current_context = context;
        let mut payload = self.spare_words.pop().unwrap_or_default();
        self.payload_into(seq, now, &mut payload);
        let mut expected = match self.cfg.expect {
            Expect::Any => Vec::new(),
            _ => self.spare_words.pop().unwrap_or_default(),
        };
        match self.cfg.expect {
            Expect::Echo | Expect::LnicEval => expected.extend_from_slice(&payload),
            Expect::Increment => expected.extend(payload.iter().map(|w| w.wrapping_add(1))),
            Expect::Any => {}
            Expect::DotProduct => {
                let sum = payload[2..].chunks(2).fold(0u64, |acc, p| {
                    acc.wrapping_add(p[1].wrapping_mul(p[0] % DOT_WEIGHTS + 1))
                });
                expected.extend([2, sum]);
            }
        }
        let key = if self.in_order() {
            seq
        } else {
            expected[self.key_word()]
        };
        self.outstanding.insert(
            key,
            Outstanding {
                seq,
                context,
                sent: now,
                expected,
                request: None,
                attempts: 1,
                attempt_sent: now,
                server: 0,
                conn: None,
                resending: false,
            },
        );
        self.note_send(seq, now);
        out.schedule(
            now + SimDuration::from_ns(self.cfg.timeout_ns),
            ClientEvent::Timeout(key),
        );
        self.report.sent += 1;
        let msg = OutMessageRef {
            dst_ip: self.server_ip,
            dst_port: context,
            src_port: self.context,
            len: self.cfg.message_bytes,
            payload: &payload,
            tag: 0,
        };
        self.put_on_link(&msg, None, now, out);
        self.recycle_words(payload);
    }

    /// A frame from the node; `last_bit_in` is when its last bit arrived.
    /// Returns true if it was the program's boot message.
    pub fn frame_in(&mut self, frame: &[u8], last_bit_in: SimTime, out: &mut ClientIo) -> bool {
        if self.conns.is_some() && self.nack(frame, last_bit_in, out) {
            return false;
        }
        let (info, payload) = match frames::decode(frame) {
            Ok(p) => p,
            // The node's ACKs, PULLs and GRANTs for our requests.
            Err(frames::DropReason::NotForUs) if self.acknowledge => return false,
            Err(_) => {
                self.report.frames_not_for_client += 1;
                return false;
            }
        };
        if info.dst_ip != 0 && frame.get(..6) != Some(&frames::mac_of(self.ip).0[..]) {
            // Not a reply: addressed to another host (the wire of `run
            // --load` is a cable, so the client sees it), broadcast,
            // multicast, loopback. A NIC goes by the Ethernet address (the
            // paper's traditional loopback swaps only that).
            self.report.frames_not_for_client += 1;
            return false;
        }
        if self.acknowledge {
            self.ack(frame, last_bit_in, out);
        }
        if info.dst_ip == 0 {
            if let Start::Boot = self.cfg.start {
                self.start(last_bit_in, out);
            }
            return true;
        }
        if let Start::StartMessages(n) = self.cfg.start {
            if !self.started {
                // A start-up message (one packet each: the prototype's are 16 B).
                self.report.start_messages += 1;
                if self.report.start_messages >= n as u64 {
                    self.start(last_bit_in, out);
                    return true;
                }
                return false;
            }
        }
        let req = GetRxMsgInfoReq {
            mark_received: true,
            src_ip: info.src_ip,
            src_port: info.src_context,
            tx_msg_id: info.tx_msg_id,
            msg_len: info.msg_len,
            pkt_offset: info.pkt_offset,
        };
        match self
            .reassembly
            .packet(req, info.dst_context, payload, last_bit_in)
        {
            Ok(Some(m)) => {
                let msg = Message {
                    peer_ip: m.src_ip,
                    peer_context: m.src_port,
                    local_context: m.dst_port,
                    len: m.len,
                    payload: m.payload,
                    flow: 0,
                };
                self.reply(msg, last_bit_in, frame.len() as u64, out)
            }
            Ok(None) => self.reply_frame_bytes += frame.len() as u64,
            Err(_) => self.report.unexpected_replies += 1,
        }
        false
    }

    /// An ACK for the data packet `frame` (its header fields mirrored).
    fn ack(&mut self, frame: &[u8], at: SimTime, out: &mut ClientIo) {
        let Ok((r, _)) = nanopu_wire::FrameRepr::parse(frame) else {
            return;
        };
        let mut nt = r.nt;
        nt.flags = nanopu_wire::Flags::ACK;
        std::mem::swap(&mut nt.src_context, &mut nt.dst_context);
        let mut eth = r.eth;
        std::mem::swap(&mut eth.src_addr, &mut eth.dst_addr);
        let mut ip = r.ip;
        std::mem::swap(&mut ip.src_addr, &mut ip.dst_addr);
        // Control packets at the top priority, as the shipped programs do.
        ip.tos = nanopu_transport::protocols::CONTROL_PRIORITY;
        let repr = nanopu_wire::FrameRepr::new(eth, ip, nt, 0);
        let mut ack = self.spare_frames.pop().unwrap_or_default();
        ack.clear();
        ack.resize(repr.frame_len(), 0);
        if repr.emit(&[], &mut ack).is_ok() {
            self.acks_sent += 1;
            out.transmit(ack, at);
        }
    }

    fn reply(&mut self, msg: Message, at: SimTime, last_frame: u64, out: &mut ClientIo) {
        let frame_bytes = std::mem::take(&mut self.reply_frame_bytes) + last_frame;
        let key = if let Some(app) = &self.app {
            app.reply_tag(&msg.payload, msg.len)
        } else if self.in_order() {
            // In order, but a reply may skip lost requests: take the oldest
            // request this reply answers among the oldest
            // `IN_ORDER_LOOKAHEAD` (the oldest at all if none does), so a
            // reply costs O(1) whatever the window.
            let oldest = self.outstanding.keys().next().copied();
            if self.cfg.expect == Expect::Any {
                oldest
            } else {
                self.outstanding
                    .iter()
                    .take(IN_ORDER_LOOKAHEAD)
                    .find(|(_, r)| r.expected == msg.payload)
                    .map(|(&k, _)| k)
                    .or(oldest)
            }
        } else {
            msg.payload.get(self.key_word()).copied()
        };
        let Some(req) = key.and_then(|k| self.outstanding.remove(&k)) else {
            self.report.unexpected_replies += 1;
            return;
        };
        let correct = match (self.app.as_mut(), req.request.as_deref()) {
            (Some(app), Some(request)) => match app.check(request, &msg.payload, msg.len) {
                Verdict::Ok => Ok(()),
                Verdict::Wrong(why) => Err(why),
                Verdict::Retry { server, context } => {
                    return self.retry(req, server, context, at, out);
                }
            },
            _ => self.check_pattern_reply(&req, &msg),
        };
        self.close_conn(&req, at, out);
        self.report.received += 1;
        if let Err(why) = correct {
            self.report.wrong_replies += 1;
            if self.report.first_error.is_none() {
                self.report.first_error = Some(why);
            }
        }
        if req.seq >= self.cfg.warmup {
            // At the node's wire: the request's first bit arrived one
            // propagation delay after it left; the reply's last bit left
            // one propagation delay before it arrived here.
            let propagation = self.servers[req.server].1;
            let at_node = req.attempt_sent + propagation;
            let left_node = SimTime(at.fs().saturating_sub(propagation.fs()));
            let ps = left_node.since(at_node).fs() / 1000;
            self.latencies.saturating_record(ps.max(1));
            self.client_latencies
                .saturating_record((at.since(req.sent).fs() / 1000).max(1));
            if let Some(series) = &mut self.series {
                series.push((req.sent, at.since(req.sent)));
            }
            let h = match self
                .context_latencies
                .iter()
                .position(|(c, _)| *c == req.context)
            {
                Some(i) => &mut self.context_latencies[i].1,
                None => {
                    self.context_latencies.push((req.context, new_histogram()));
                    &mut self.context_latencies.last_mut().expect("pushed").1
                }
            };
            h.saturating_record(ps.max(1));
            self.measured_replies += 1;
            self.last_reply = at;
            self.measured_bits += frame_bytes * 8;
        }
        self.recycle_words(req.expected);
        self.reassembly.recycle_payload(msg.payload);
        if let LoadMode::Closed { .. } = self.cfg.mode {
            self.send_next(at, out);
        }
    }

    /// Re-sends application request `req` to `server`, `context`.
    fn retry(
        &mut self,
        mut req: Outstanding,
        server: usize,
        context: u16,
        now: SimTime,
        out: &mut ClientIo,
    ) {
        let mut request = *req.request.take().expect("an application request");
        if server >= self.servers.len() {
            self.report.received += 1;
            self.report.wrong_replies += 1;
            self.report.first_error.get_or_insert_with(|| {
                format!(
                    "request {}: retry asked for server {server}, but the client has {}",
                    req.seq,
                    self.servers.len()
                )
            });
            if let LoadMode::Closed { .. } = self.cfg.mode {
                self.send_next(now, out);
            }
            return;
        }
        self.report.retries += 1;
        request.server = server;
        request.context = context;
        let seq = req.seq;
        self.outstanding.insert(seq, req);
        self.transmit(seq, request, now, out);
    }

    /// Whether a reply of the built-in patterns is right (`Err` says how not).
    fn check_pattern_reply(&self, req: &Outstanding, msg: &Message) -> Result<(), String> {
        let correct = match self.cfg.expect {
            Expect::Any => true,
            // [service (or a multiple: a stalled request), send time]
            Expect::LnicEval => {
                msg.payload.len() == 2
                    && msg.payload[1] == req.expected[1]
                    && msg.payload[0] >= req.expected[0]
                    && msg.payload[0].is_multiple_of(req.expected[0])
            }
            _ => msg.payload == req.expected,
        };
        if correct {
            return Ok(());
        }
        Err(format!(
            "request {}: expected payload {:x?}, got {:x?} (length {})",
            req.seq,
            &req.expected[..req.expected.len().min(4)],
            &msg.payload[..msg.payload.len().min(4)],
            msg.len
        ))
    }

    /// The timeout of request `key` at `now`: if still unanswered, it is lost.
    pub fn timeout(&mut self, key: u64, now: SimTime, out: &mut ClientIo) {
        let Some(req) = self.outstanding.get(&key) else {
            return;
        };
        if req.resending || now.since(req.attempt_sent) < SimDuration::from_ns(self.cfg.timeout_ns)
        {
            return; // the key was reused by a later request, or re-sent
        }
        let mut req = self.outstanding.remove(&key).expect("outstanding");
        if let (Some(app), Some(request)) = (self.app.as_mut(), req.request.as_deref()) {
            if let Some((server, context)) = app.on_timeout(request, req.attempts) {
                req.attempt_sent = now;
                return self.retry(req, server, context, now, out);
            }
        }
        self.close_conn(&req, now, out);
        self.report.lost += 1;
        if let LoadMode::Closed { .. } = self.cfg.mode {
            self.send_next(now, out);
        }
    }

    /// Fills in the percentiles and throughput.
    pub fn finish(&mut self) -> &LoadReport {
        let h = &self.latencies;
        let r = &mut self.report;
        if !h.is_empty() {
            let ns = |ps: u64| ps as f64 / 1000.0;
            // NACKs of measured requests count as infinite (NEBULA §VI):
            // quantile q of all is quantile q (n + k) / n of the n finite.
            let (n, k) = (h.len() as f64, self.measured_nacks as f64);
            let at = |q: f64| match q * (n + k) / n {
                _ if k == 0.0 => ns(h.value_at_quantile(q)),
                q if q > 1.0 => f64::INFINITY,
                q => ns(h.value_at_quantile(q)),
            };
            r.p50_ns = at(0.5);
            r.p90_ns = at(0.9);
            r.p99_ns = at(0.99);
            r.p999_ns = at(0.999);
            r.min_ns = ns(h.min());
            r.max_ns = ns(h.max());
            r.mean_ns = h.mean() / 1000.0;
        }
        let c = &self.client_latencies;
        if !c.is_empty() {
            let ns = |ps: u64| ps as f64 / 1000.0;
            r.client_p50_ns = ns(c.value_at_quantile(0.5));
            r.client_p90_ns = ns(c.value_at_quantile(0.9));
            r.client_p99_ns = ns(c.value_at_quantile(0.99));
            r.client_p999_ns = ns(c.value_at_quantile(0.999));
            r.client_mean_ns = c.mean() / 1000.0;
        }
        let ns = |ps: u64| ps as f64 / 1000.0;
        let mut per_context: Vec<ContextReport> = self
            .context_latencies
            .iter()
            .map(|(c, h)| ContextReport {
                context: *c,
                received: h.len(),
                p50_ns: ns(h.value_at_quantile(0.5)),
                p99_ns: ns(h.value_at_quantile(0.99)),
                max_ns: ns(h.max()),
            })
            .collect();
        per_context.sort_by_key(|c| c.context);
        r.per_context = per_context;
        if let Some(first) = self.first_measured_send {
            let span = self.last_reply.since(first);
            if span.fs() > 0 {
                let s = span.fs() as f64 / 1e15;
                r.measured_ns = span.as_ns();
                r.throughput_mrps = self.measured_replies as f64 / s / 1e6;
                r.throughput_gbps = self.measured_bits as f64 / s / 1e9;
            }
        }
        &self.report
    }
}
