//! A cluster of built-in traffic hosts simulated on several host threads,
//! with results that do not depend on the thread count
//! (docs/parallel-network.md).
//!
//! The network is cut into *partitions* by its topology and the most
//! groups asked for alone: groups of consecutive leaves with the hosts
//! attached to them, groups of the switches no host hangs off (spines),
//! and a single switch's hosts in groups apart from the switch. Each
//! partition has its own event queue
//! and its own copy of the [`Network`] in which only its ports and
//! switches ever see a frame. A frame leaving a partition becomes an event
//! in the destination's queue, keyed by its sender's place in the sender's
//! order ([`EventQueue::with_origin`]): so every partition handles exactly
//! the same events in the same order (time, origin partition, origin's
//! order) whatever thread runs it and whenever the event arrived.
//!
//! Synchronization is conservative and asynchronous ([`worker`]): each
//! partition publishes a clock, the time before which it has handled
//! everything, and runs every event earlier than the least clock of the
//! partitions linked into it plus that link's latency (the *lookahead*),
//! so nothing can reach it inside what it runs. Threads wait only for the
//! neighbours that hold their partitions back, never for a round's
//! slowest thread.

use crate::error::SystemError;
use crate::host::{top_up, BuiltinHost, Host, HostModel, HostNote, HostSink};
use crate::records::{match_delivery, Matched, MessageRecord, MessageSpec};
use nanopu_network::{host_ip, NetAction, NetEvent, NetSink, Network, NetworkStats};
use nanopu_sim::{EventQueue, Reserved, SimDuration, SimTime};
use nanopu_transport::TransportEvent;
use std::cmp::Reverse;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

mod adapt;
mod layout;

use adapt::Adapt;
use layout::{partitions, Layout};

/// The most partitions the leaves of a network are grouped into, and its
/// spines (a single switch's hosts likewise), unless the configuration says
/// otherwise (`partitions`). On the
/// two-core machines `nanopu bench` is measured on, four beat one per
/// switch: a partition's own event queue, network and turn cost host time
/// whether or not it has much to do (incast-1024, 32 leaves and 8 spines:
/// ~25 % less host time on two threads, docs/parallel-network.md).
pub const DEFAULT_PARTITIONS: usize = 4;

/// Frame buffers a partition keeps for its hosts.
const SPARE_FRAMES: usize = 1024;

/// The least lookahead at which partitions run on threads of their own:
/// below it a partition can run so few events before it must wait for
/// another's clock (43 ns on a single switch) that the waiting costs more
/// than the threads gain, so such a network is not partitioned unless
/// forced: the single event loop runs it (`Cluster::set_threads`).
pub(crate) const MIN_THREADED_LOOKAHEAD: SimDuration = SimDuration(200_000_000);

enum Ev {
    Net(NetEvent),
    /// A frame's first bit reaches a host's NIC.
    AtHost(usize, Vec<u8>),
    Transport(usize, TransportEvent),
    /// Workload message `i` enters its sender's transport.
    Send(usize),
}

/// An event for another partition, with its place in the sender's order.
struct Cross {
    at: SimTime,
    key: Reserved,
    ev: Ev,
}

/// What a partition learned about a workload message.
#[derive(Clone, Copy)]
enum Update {
    Sent(SimTime),
    Delivered(SimTime),
    Reply(SimTime),
    Failed,
}

struct Partition {
    id: u16,
    /// Its hosts (partitions hold consecutive ranges, in order).
    hosts: Range<usize>,
    net: Network,
    queue: EventQueue<Ev>,
    /// Events for other partitions not handed over yet, by destination.
    outbox: Vec<Vec<Cross>>,
    /// The destinations whose outbox is not empty.
    sent: Vec<u16>,
    /// No event handled from now on is earlier (the partition's clock, or
    /// the start of its turn on one thread): an event for partition `q` is
    /// due no earlier than this plus the least latency into `q`.
    since: SimTime,
    /// Events for another partition due inside the lookahead (zero unless
    /// the lookahead is wrong).
    early: u64,
    spare_frames: Vec<Vec<u8>>,
    updates: Vec<(usize, Update)>,
    unknown_deliveries: u64,
    unmatched_deliveries: Vec<(usize, SimTime)>,
    events: u64,
    now: SimTime,
}

/// The partitioned simulation of a cluster of built-in hosts.
pub(crate) struct Parallel {
    threads: usize,
    /// The threads asked for, when more than `threads`.
    asked: usize,
    /// Whether `threads` threads run every epoch (else the faster of one
    /// thread and `threads`, measured as the run goes: [`Adapt`]).
    force: bool,
    adapt: Adapt,
    /// The least of `lookahead_to`.
    lookahead: SimDuration,
    /// `[p][q]`: the least latency of a link from partition `p` into `q`
    /// (`SimDuration(u64::MAX)` if there is none).
    lookahead_to: Vec<Vec<SimDuration>>,
    /// `[q]`: the partitions with a link into `q`, and that link's latency.
    inputs: Vec<Vec<(u16, SimDuration)>>,
    layout: Layout,
    parts: Vec<Partition>,
}

impl Parallel {
    /// Partitions of the network `cfg` describes (see the module
    /// documentation; leaves in at most `max_groups` groups), run on
    /// `threads` host threads.
    ///
    /// With `force` off, at most one thread per partition (the caller
    /// does not partition a network with one partition or a lookahead under
    /// [`MIN_THREADED_LOOKAHEAD`]).
    pub(crate) fn new(
        net: &Network,
        threads: usize,
        max_groups: usize,
        force: bool,
    ) -> Result<Parallel, SystemError> {
        // `Cluster::set_threads` refuses 0.
        debug_assert!(threads > 0, "at least one thread");
        let (mut layout, mut ranges) = partitions(net, max_groups);
        let pairs = |layout: &Layout, n: usize| {
            let mut to = vec![vec![SimDuration(u64::MAX); n]; n];
            for l in net.link_directions() {
                let (a, b) = (layout.of(l.from) as usize, layout.of(l.to) as usize);
                if a != b {
                    to[a][b] = to[a][b].min(l.least_latency);
                }
            }
            to
        };
        let mut lookahead_to = pairs(&layout, ranges.len());
        let mut lookahead = lookahead_to
            .iter()
            .flatten()
            .copied()
            .min()
            .unwrap_or(SimDuration(u64::MAX));
        if lookahead == SimDuration::ZERO {
            // A link with no latency cannot separate partitions.
            layout = Layout {
                host: vec![0; net.hosts()],
                switch: vec![0; net.switches()],
            };
            ranges = std::iter::once(0..net.hosts()).collect();
            lookahead = SimDuration(u64::MAX);
            lookahead_to = pairs(&layout, 1);
        }
        let n = ranges.len();
        let inputs = (0..n)
            .map(|q| {
                (0..n)
                    .filter(|&p| lookahead_to[p][q] != SimDuration(u64::MAX))
                    .map(|p| (p as u16, lookahead_to[p][q]))
                    .collect()
            })
            .collect();
        let mut parts = Vec::with_capacity(n);
        for (i, hosts) in ranges.into_iter().enumerate() {
            let id = i as u16;
            parts.push(Partition {
                id,
                hosts,
                net: {
                    let mut n = Network::new(net.config())
                        .map_err(|e| SystemError::Config(e.to_string()))?;
                    n.set_lazy_tx_done(true);
                    n
                },
                queue: EventQueue::with_origin(id),
                outbox: (0..n).map(|_| Vec::new()).collect(),
                sent: Vec::new(),
                since: SimTime::ZERO,
                early: 0,
                spare_frames: Vec::new(),
                updates: Vec::new(),
                unknown_deliveries: 0,
                unmatched_deliveries: Vec::new(),
                events: 0,
                now: SimTime::ZERO,
            });
        }
        let useful = if force { threads } else { threads.min(n) };
        Ok(Parallel {
            threads: useful,
            asked: threads,
            force,
            adapt: Adapt::new(lookahead),
            lookahead,
            lookahead_to,
            inputs,
            layout,
            parts,
        })
    }

    pub(crate) fn partitions(&self) -> usize {
        self.parts.len()
    }

    pub(crate) fn lookahead(&self) -> SimDuration {
        self.lookahead
    }

    /// The threads the partitions run on, and the threads asked for.
    pub(crate) fn threads(&self) -> (usize, usize) {
        (self.threads, self.asked)
    }

    /// Workload message `i` from `from` enters its transport at `at`.
    pub(crate) fn send(&mut self, i: usize, from: usize, at: SimTime) {
        let p = self.layout.host[from] as usize;
        self.parts[p].queue.schedule(at, Ev::Send(i));
    }

    /// Counters of the whole network: the sum of the partitions'.
    pub(crate) fn network_stats(&self) -> NetworkStats {
        let mut total = NetworkStats::default();
        for p in &self.parts {
            total.merge(&p.net.stats());
        }
        total
    }

    pub(crate) fn late_events(&self) -> u64 {
        self.parts.iter().map(|p| p.queue.late).sum()
    }

    pub(crate) fn is_idle(&self) -> bool {
        self.parts
            .iter()
            .all(|p| p.queue.is_empty() && !p.net.lazy_pending())
    }

    /// The share of simulated time run on more than one thread so far
    /// (the rest ran on one, measured faster at the time).
    pub(crate) fn threaded_share(&self) -> f64 {
        let a = &self.adapt;
        let total = a.sim_fs[0] + a.sim_fs[1];
        if total == 0 {
            return 0.0;
        }
        a.sim_fs[1] as f64 / total as f64
    }

    /// Runs every event up to `until`; the outcome goes into `out`.
    ///
    /// On several threads, in epochs of a few host milliseconds: each
    /// thread's clocks must have an end to reach (a partition with nothing
    /// to do advances its clock a lookahead at a time), and, unless forced,
    /// each epoch runs on one thread or on all of them, whichever has been
    /// faster lately: on a host whose cores are busy with other work,
    /// threads that wait for each other's progress are slower than one.
    /// The results are the same either way (partitions do not depend on
    /// the thread count), only the host time differs.
    pub(crate) fn run(
        &mut self,
        hosts: &mut [Host],
        specs: &[MessageSpec],
        until: SimTime,
        out: &mut Outcome<'_>,
    ) -> Result<(), SystemError> {
        self.run_epochs(hosts, specs, until, out)?;
        // Frame ends up to `until` (none left past the last epoch's end).
        for p in &mut self.parts {
            if let Some(t) = p.net.settle_through(until) {
                p.now = p.now.max(t);
                *out.now = (*out.now).max(p.now);
            }
        }
        Ok(())
    }

    /// [`Parallel::run`]: on one thread, a single epoch up to `until`; on
    /// several, epochs on one thread or on all. The other threads start
    /// once and wait between epochs; each keeps its partitions (and their
    /// host caches) from one threaded epoch to the next, and this thread
    /// keeps its own.
    fn run_epochs(
        &mut self,
        hosts: &mut [Host],
        specs: &[MessageSpec],
        until: SimTime,
        out: &mut Outcome<'_>,
    ) -> Result<(), SystemError> {
        let threads = self.threads.min(self.parts.len());
        let alone = threads == 1;
        let shared = Shared::new(
            &self.layout,
            self.lookahead,
            &self.lookahead_to,
            &self.inputs,
            specs,
        );
        let (adapt, force, lookahead) = (&mut self.adapt, self.force, self.lookahead);
        // Each partition with its hosts, by partition number.
        let mut builtins = builtin_hosts(hosts);
        let mut slots: Vec<Option<Slot<'_, '_>>> = with_hosts(&mut self.parts, &mut builtins)
            .into_iter()
            .map(Some)
            .collect();
        std::thread::scope(|s| -> Result<(), SystemError> {
            let shared = &shared;
            let (done_tx, done_rx) = std::sync::mpsc::channel::<Vec<Slot<'_, '_>>>();
            let mut jobs = Vec::with_capacity(threads - 1);
            for _ in 1..threads {
                let (job_tx, job_rx) = std::sync::mpsc::channel::<Vec<Slot<'_, '_>>>();
                let done_tx = done_tx.clone();
                s.spawn(move || {
                    while let Ok(mut bucket) = job_rx.recv() {
                        worker(&mut bucket, shared);
                        if done_tx.send(bucket).is_err() {
                            return;
                        }
                    }
                });
                jobs.push(job_tx);
            }
            drop(done_tx);
            // Between epochs every partition is home, its mail taken in.
            let earliest = |slots: &[Option<Slot<'_, '_>>]| {
                slots
                    .iter()
                    .flatten()
                    .filter_map(|(p, _)| p.queue.peek_time())
                    .min()
            };
            while let Some(t0) = earliest(&slots) {
                if t0 > until {
                    break;
                }
                let (end, k) = if alone {
                    (until, 0)
                } else {
                    let end = SimTime(t0.0.saturating_add(adapt.span.0)).min(until);
                    (end, if force { 1 } else { adapt.choose() })
                };
                let events = *out.events;
                let start = std::time::Instant::now();
                shared.until.store(end.fs(), Ordering::Relaxed);
                if k == 0 {
                    let mut all: Vec<Slot<'_, '_>> =
                        slots.iter_mut().map(|s| s.take().expect("home")).collect();
                    sequential(&mut all, shared);
                    for (slot, part) in slots.iter_mut().zip(all) {
                        *slot = Some(part);
                    }
                } else {
                    // No partition has an event earlier, nor will have.
                    for c in &shared.clock {
                        c.0.store(t0.fs(), Ordering::Relaxed);
                    }
                    for (j, job) in jobs.iter().enumerate() {
                        job.send(share(&mut slots, j + 1, threads))
                            .expect("a partition thread waits for work");
                    }
                    let mut own = share(&mut slots, 0, threads);
                    worker(&mut own, shared);
                    let mut back = vec![own];
                    while back.len() < threads {
                        match done_rx.recv_timeout(std::time::Duration::from_millis(10)) {
                            Ok(bucket) => back.push(bucket),
                            Err(_) => assert!(
                                !shared.poisoned.load(Ordering::Relaxed),
                                "another simulation thread panicked"
                            ),
                        }
                    }
                    for (p, h) in back.into_iter().flatten() {
                        let id = p.id as usize;
                        slots[id] = Some((p, h));
                    }
                }
                for (slot, mail) in slots.iter_mut().zip(&shared.mail) {
                    let (p, _) = slot.as_mut().expect("home");
                    mail.take_into(&mut p.queue);
                }
                for (p, _) in slots.iter_mut().flatten() {
                    p.collect(end, lookahead, out)?;
                }
                let wall = start.elapsed().as_secs_f64();
                if alone {
                    // Counted for the note's share of simulated time threaded.
                    adapt.sim_fs[0] += (*out.now).min(until).0.saturating_sub(t0.0);
                } else {
                    adapt.record(k, *out.events - events, wall, end.0 - t0.0);
                }
                if end == until {
                    break;
                }
            }
            Ok(())
        })
    }
}

/// A partition and its built-in hosts, as a thread runs them.
type Slot<'a, 'h> = (&'a mut Partition, &'a mut [&'h mut BuiltinHost]);

/// The built-in hosts, in order (nodes are not `Send`: threads get these
/// alone).
fn builtin_hosts(hosts: &mut [Host]) -> Vec<&mut BuiltinHost> {
    hosts
        .iter_mut()
        .map(|h| match h {
            Host::Builtin(b) => &mut **b,
            _ => unreachable!("a partitioned cluster has only built-in hosts"),
        })
        .collect()
}

/// Each partition with its hosts (partitions hold consecutive ranges, in
/// order).
fn with_hosts<'a, 'h>(
    parts: &'a mut [Partition],
    builtins: &'a mut [&'h mut BuiltinHost],
) -> Vec<Slot<'a, 'h>> {
    let mut rest = builtins;
    parts
        .iter_mut()
        .map(|p| {
            let (mine, later) = std::mem::take(&mut rest).split_at_mut(p.hosts.len());
            rest = later;
            (p, mine)
        })
        .collect()
}

/// Partitions `k`, `k + threads`, ... taken from their slots: thread
/// `k`'s share for an epoch.
fn share<'a, 'h>(
    slots: &mut [Option<Slot<'a, 'h>>],
    k: usize,
    threads: usize,
) -> Vec<Slot<'a, 'h>> {
    (k..slots.len())
        .step_by(threads)
        .map(|i| {
            slots[i]
                .take()
                .expect("every partition is home between epochs")
        })
        .collect()
}

/// Where [`Parallel::run`] leaves what the partitions found.
pub(crate) struct Outcome<'a> {
    pub records: &'a mut [MessageRecord],
    pub unmatched: &'a mut Vec<(usize, SimTime)>,
    pub unknown: &'a mut u64,
    pub events: &'a mut u64,
    pub now: &'a mut SimTime,
}

/// What the threads share during a run.
struct Shared<'a> {
    /// Events handed over, by destination partition.
    mail: Vec<Mailbox>,
    /// Each partition's clock (fs): it has handled every event before it
    /// and will handle none before it, and every event it handed over so
    /// far is in a mailbox (see [`worker`]).
    clock: Vec<Clock>,
    /// Set when a thread panics: the others stop waiting for it.
    poisoned: AtomicBool,
    layout: &'a Layout,
    specs: &'a [MessageSpec],
    lookahead: SimDuration,
    lookahead_to: &'a [Vec<SimDuration>],
    inputs: &'a [Vec<(u16, SimDuration)>],
    /// The end of the epoch (fs): every event up to it is run.
    until: AtomicU64,
}

impl<'a> Shared<'a> {
    /// Nothing posted, every clock and the end at zero.
    fn new(
        layout: &'a Layout,
        lookahead: SimDuration,
        lookahead_to: &'a [Vec<SimDuration>],
        inputs: &'a [Vec<(u16, SimDuration)>],
        specs: &'a [MessageSpec],
    ) -> Shared<'a> {
        let n = inputs.len();
        Shared {
            mail: (0..n).map(|_| Mailbox::default()).collect(),
            clock: (0..n).map(|_| Clock(AtomicU64::new(0))).collect(),
            poisoned: AtomicBool::new(false),
            layout,
            specs,
            lookahead,
            lookahead_to,
            inputs,
            until: AtomicU64::new(0),
        }
    }

    fn until(&self) -> SimTime {
        SimTime(self.until.load(Ordering::Relaxed))
    }
}

/// Every partition on this thread, without rounds: the partition with the
/// earliest event of all, at `t`, runs every event before `t + lookahead`
/// (nothing can reach it earlier: every other event is at `t` or later,
/// and crosses with at least the lookahead), then hands over what it sent;
/// then the partition with the earliest event then, and so on. Each
/// partition handles the same events in the same order as on threads.
fn sequential(parts: &mut [Slot<'_, '_>], sh: &Shared<'_>) {
    use std::collections::BinaryHeap;
    // (earliest event, partition); an entry is stale once the partition's
    // earliest event is another (one is pushed whenever it changes).
    let mut heap: BinaryHeap<Reverse<(SimTime, usize)>> = parts
        .iter()
        .enumerate()
        .filter_map(|(i, (p, _))| p.queue.peek_time().map(|t| Reverse((t, i))))
        .collect();
    while let Some(Reverse((t, i))) = heap.pop() {
        if t > sh.until() {
            break;
        }
        let (p, hosts) = &mut parts[i];
        if p.queue.peek_time() != Some(t) {
            continue;
        }
        let round_end = SimTime(t.0.saturating_add(sh.lookahead.0));
        let last = SimTime(round_end.0 - 1).min(sh.until());
        p.since = t;
        p.run_to(last, hosts, sh);
        let sent = std::mem::take(&mut p.sent);
        for &d in &sent {
            let d = d as usize;
            let mut boxed = std::mem::take(&mut parts[i].0.outbox[d]);
            let dest = &mut parts[d].0;
            let before = dest.queue.peek_time();
            for c in boxed.drain(..) {
                dest.queue.schedule_reserved(c.at, c.key, c.ev);
            }
            let after = dest.queue.peek_time();
            if after != before {
                heap.extend(after.map(|t| Reverse((t, d))));
            }
            parts[i].0.outbox[d] = boxed;
        }
        let p = &mut parts[i].0;
        p.sent = sent;
        p.sent.clear();
        if let Some(t) = p.queue.peek_time() {
            heap.push(Reverse((t, i)));
        }
    }
}

/// One thread's partitions, each run as far as its inputs allow
/// (asynchronous conservative synchronization: no rounds, no barrier).
///
/// A partition's clock says that it has handled every event before it
/// and will handle none before it, so nothing it hands over from now on
/// is due before its clock plus its least latency into the receiver. A
/// partition reads its inputs' clocks, takes in its mail (which holds
/// everything they handed over before publishing those clocks), runs
/// every event before the least input clock plus latency, hands what it
/// sent to the receivers' mailboxes, and only then publishes its new
/// clock: its earliest event left, or that bound if earlier. The
/// partition with the least clock can always go on (its bound is at least
/// a lookahead beyond it), so the run never stalls, and a thread waits
/// only when every one of its partitions waits for a neighbour.
/// Partitions are independent of which thread runs them: each handles
/// the events addressed to it in their order (time, origin partition,
/// origin's order), exactly as on one thread.
fn worker(bucket: &mut [(&mut Partition, &mut [&mut BuiltinHost])], sh: &Shared<'_>) {
    // A panic here must not leave the other threads waiting for this one.
    let _guard = PoisonOnPanic(&sh.poisoned);
    let until = sh.until().fs();
    let mut done = vec![false; bucket.len()];
    let mut idle = 0u32;
    loop {
        let mut moved = false;
        for i in 0..bucket.len() {
            if done[i] {
                continue;
            }
            let (m, next) = step(&mut bucket[i], sh);
            done[i] = next > until;
            moved |= m;
        }
        if done.iter().all(|&d| d) {
            return;
        }
        if moved {
            idle = 0;
            continue;
        }
        // Every partition here waits for another thread's: spin briefly
        // (threads on cores of their own move on within microseconds),
        // then leave the core to the thread waited for.
        assert!(
            !sh.poisoned.load(Ordering::Relaxed),
            "another simulation thread panicked"
        );
        idle += 1;
        if idle < WAIT_SPINS {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

/// One look of [`worker`] at partition `p`: takes in its mail, runs what
/// its inputs' clocks allow, hands over what it sent, publishes its clock.
/// Returns whether it moved on, and its clock.
fn step(
    (p, hosts): &mut (&mut Partition, &mut [&mut BuiltinHost]),
    sh: &Shared<'_>,
) -> (bool, u64) {
    let id = p.id as usize;
    let bound = sh.inputs[id]
        .iter()
        .map(|&(q, l)| {
            sh.clock[q as usize]
                .0
                .load(Ordering::Acquire)
                .saturating_add(l.0)
        })
        .min()
        .unwrap_or(u64::MAX);
    let clock = sh.clock[id].0.load(Ordering::Relaxed);
    sh.mail[id].take_into(&mut p.queue);
    let last = SimTime(bound.saturating_sub(1)).min(sh.until());
    let mut moved = false;
    if p.queue.peek_time().is_some_and(|t| t <= last) {
        p.since = SimTime(clock);
        p.run_to(last, hosts, sh);
        for dest in p.sent.drain(..) {
            sh.mail[dest as usize].post(&mut p.outbox[dest as usize]);
        }
        moved = true;
    }
    let next = p.queue.peek_time().map_or(u64::MAX, SimTime::fs).min(bound);
    if next > clock {
        sh.clock[id].0.store(next, Ordering::Release);
        moved = true;
    }
    (moved, next.max(clock))
}

/// A partition's clock, alone on its cache line (threads publish theirs
/// while others read them).
#[repr(align(64))]
struct Clock(AtomicU64);

/// Events handed over to a partition on another thread (alone on its
/// cache line, as [`Clock`]).
#[derive(Default)]
#[repr(align(64))]
struct Mailbox {
    frames: Mutex<Vec<Cross>>,
    /// Whether `frames` may hold any: a partition with no mail takes no
    /// lock (set after posting, before the sender publishes its clock).
    full: AtomicBool,
}

impl Mailbox {
    fn post(&self, cross: &mut Vec<Cross>) {
        let mut frames = self
            .frames
            .lock()
            .expect("no thread panicked holding a mailbox");
        frames.append(cross);
        self.full.store(true, Ordering::Release);
    }

    fn take_into(&self, queue: &mut EventQueue<Ev>) {
        if !self.full.load(Ordering::Acquire) {
            return;
        }
        let mut frames = self
            .frames
            .lock()
            .expect("no thread panicked holding a mailbox");
        self.full.store(false, Ordering::Relaxed);
        for c in frames.drain(..) {
            queue.schedule_reserved(c.at, c.key, c.ev);
        }
    }
}

/// Passes without progress a waiting thread spins for before it yields.
const WAIT_SPINS: u32 = 2_000;

impl Partition {
    /// After an epoch up to `until`: what the partition found goes into
    /// `out`; an event it handed over inside the lookahead fails the run.
    fn collect(
        &mut self,
        until: SimTime,
        lookahead: SimDuration,
        out: &mut Outcome<'_>,
    ) -> Result<(), SystemError> {
        if self.early > 0 {
            return Err(SystemError::Config(format!(
                "parallel simulation: {} events crossed partitions inside the lookahead \
                 of {} ps (a partitioning error)",
                self.early,
                lookahead.0 / 1_000
            )));
        }
        for (i, u) in self.updates.drain(..) {
            let r = &mut out.records[i];
            match u {
                Update::Sent(t) => r.sent_at = t,
                Update::Delivered(t) => {
                    r.deliveries += 1;
                    r.delivered_at.get_or_insert(t);
                }
                Update::Reply(t) => {
                    r.reply_at.get_or_insert(t);
                }
                Update::Failed => r.failed = true,
            }
        }
        if let Some(t) = self.net.settle_through(until) {
            self.now = self.now.max(t);
        }
        out.unmatched.append(&mut self.unmatched_deliveries);
        *out.unknown += std::mem::take(&mut self.unknown_deliveries);
        *out.events += std::mem::take(&mut self.events);
        *out.now = (*out.now).max(self.now);
        Ok(())
    }

    /// Handles every event due at or before `last`.
    fn run_to(&mut self, last: SimTime, hosts: &mut [&mut BuiltinHost], sh: &Shared<'_>) {
        while let Some((t, ev)) = self.queue.pop_until(last) {
            self.now = t;
            self.events += 1;
            self.handle(t, ev, hosts, sh);
        }
    }

    fn builtin<'h>(&self, hosts: &'h mut [&mut BuiltinHost], h: usize) -> &'h mut BuiltinHost {
        &mut *hosts[h - self.hosts.start]
    }

    /// Hands spare frame buffers to host `h`'s transport.
    fn top_up(&mut self, hosts: &mut [&mut BuiltinHost], h: usize) {
        let net = &mut self.net;
        let b = &mut *hosts[h - self.hosts.start];
        top_up(b, &mut self.spare_frames, |spare| {
            // Dropped frames' buffers too, before anyone allocates one.
            net.take_discarded(spare, SPARE_FRAMES)
        });
    }

    fn handle(&mut self, t: SimTime, ev: Ev, hosts: &mut [&mut BuiltinHost], sh: &Shared<'_>) {
        match ev {
            Ev::Net(e) => {
                let key = self.queue.current();
                let (net, mut sink) = self.split(sh);
                net.handle_keyed(e, t, key, &mut sink);
            }
            Ev::AtHost(h, frame) => {
                self.top_up(hosts, h);
                self.builtin(hosts, h).frame_in(&frame, t);
                self.carry_out(h, hosts, sh);
                if self.spare_frames.len() < SPARE_FRAMES {
                    self.spare_frames.push(frame);
                }
            }
            Ev::Transport(h, e) => {
                self.top_up(hosts, h);
                self.builtin(hosts, h).handle(e, t);
                self.carry_out(h, hosts, sh);
            }
            Ev::Send(i) => {
                let m = sh.specs[i];
                self.top_up(hosts, m.from);
                self.updates.push((i, Update::Sent(t)));
                self.builtin(hosts, m.from)
                    .send_workload(i, host_ip(m.to), m.len, t);
                self.carry_out(m.from, hosts, sh);
            }
        }
    }

    /// What built-in host `h` asked for, carried out as the single loop
    /// does (`Cluster::carry_out`).
    fn carry_out(&mut self, h: usize, hosts: &mut [&mut BuiltinHost], sh: &Shared<'_>) {
        let b = &mut *hosts[h - self.hosts.start];
        b.drain(&mut PartitionOut { h, p: self, sh });
    }

    /// The partition's network, and the sink its actions go to.
    fn split<'a>(&'a mut self, sh: &'a Shared<'_>) -> (&'a mut Network, Route<'a>) {
        (
            &mut self.net,
            Route {
                id: self.id,
                queue: &mut self.queue,
                outbox: &mut self.outbox,
                sent: &mut self.sent,
                since: self.since,
                lookahead_to: &sh.lookahead_to[self.id as usize],
                early: &mut self.early,
                layout: sh.layout,
            },
        )
    }
}

/// Where a partition's built-in host hands its requests ([`HostSink`]).
struct PartitionOut<'a, 's> {
    h: usize,
    p: &'a mut Partition,
    sh: &'a Shared<'s>,
}

impl HostSink<TransportEvent> for PartitionOut<'_, '_> {
    #[inline]
    fn reserve(&mut self) -> Reserved {
        self.p.queue.reserve()
    }

    #[inline]
    fn schedule_reserved(&mut self, at: SimTime, key: Reserved, event: TransportEvent) {
        self.p
            .queue
            .schedule_reserved(at, key, Ev::Transport(self.h, event));
    }

    fn note(&mut self, note: HostNote) {
        let (h, p) = (self.h, &mut *self.p);
        match note {
            HostNote::Delivered {
                src_ip,
                index: Some(index),
                at,
            } => match match_delivery(self.sh.specs, h, src_ip, index) {
                Matched::Delivered(i) => p.updates.push((i, Update::Delivered(at))),
                Matched::Reply(i) => p.updates.push((i, Update::Reply(at))),
                Matched::Unknown => p.unknown_deliveries += 1,
            },
            HostNote::Delivered {
                index: None, at, ..
            } => p.unmatched_deliveries.push((h, at)),
            HostNote::Failed { tag } => {
                let i = tag as usize;
                if i < self.sh.specs.len() {
                    p.updates.push((i, Update::Failed));
                }
            }
            // Nodes' notes: a partition has built-in hosts only.
            _ => {}
        }
    }

    #[inline]
    fn transmit(&mut self, frame: Vec<u8>, ready: SimTime) {
        let (net, mut sink) = self.p.split(self.sh);
        net.send(self.h, frame, ready, &mut sink);
    }
}

/// A partition's network actions carried out as they come ([`NetSink`]):
/// into its own queue, or, keyed by a place in its own order, into the
/// outbox of the partition that owns where they happen.
struct Route<'a> {
    id: u16,
    queue: &'a mut EventQueue<Ev>,
    outbox: &'a mut [Vec<Cross>],
    sent: &'a mut Vec<u16>,
    since: SimTime,
    /// The least latency from this partition into each.
    lookahead_to: &'a [SimDuration],
    early: &'a mut u64,
    layout: &'a Layout,
}

impl NetSink for Route<'_> {
    #[inline]
    fn act(&mut self, a: NetAction) {
        let (at, ev, owner) = match a {
            // Frame ends: always at the port's own partition.
            NetAction::Reserve { .. } => unreachable!("the network asks NetSink::reserve"),
            NetAction::ScheduleReserved { at, key, event } => {
                self.queue.schedule_reserved(at, key, Ev::Net(event));
                return;
            }
            NetAction::Deliver {
                host,
                frame,
                first_bit,
            } => (first_bit, Ev::AtHost(host, frame), self.layout.host[host]),
            NetAction::Schedule { at, event } => {
                let owner = event
                    .arriving_at()
                    .map_or(self.id, |s| self.layout.switch[s]);
                (at, Ev::Net(event), owner)
            }
        };
        if owner == self.id {
            self.queue.schedule(at, ev);
        } else {
            if at < self.since + self.lookahead_to[owner as usize] {
                *self.early += 1;
            }
            let key = self.queue.reserve();
            let outbox = &mut self.outbox[owner as usize];
            if outbox.is_empty() {
                self.sent.push(owner);
            }
            outbox.push(Cross { at, key, ev });
        }
    }

    #[inline]
    fn reserve(&mut self, _port: u32) -> Option<Reserved> {
        Some(self.queue.reserve())
    }
}

/// Marks the run poisoned if its thread panics.
struct PoisonOnPanic<'a>(&'a AtomicBool);

impl Drop for PoisonOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::Relaxed);
        }
    }
}
