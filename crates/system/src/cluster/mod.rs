//! The co-simulation loop: hosts on a network (`nanopu_network`), run in
//! time order. Every setting runs here, from one node and its load
//! generator on a cable ([`crate::System`]) to a thousand hosts on a
//! leaf-spine. A host ([`crate::host`]) is a nanoPU node with any NIC
//! design ([`crate::nics`]), a built-in traffic host (a NIC's transport
//! driven by a workload), or a built-in load generator.
//!
//! ```text
//!  cores ── NIC ── MAC ── host link ── switches ── … ── MAC ── NIC ── cores
//! ```
//!
//! Time safety: before events at time `t` are handled, every node has run
//! to `t` or to the earliest point it could next send something, whichever
//! is earlier; nodes run ahead of the next event by at most the least time
//! a message takes from a core to another host (the lookahead), so nothing
//! is ever delivered into a core's past.
//!
//! Boot messages (to 0.0.0.0) are recorded by the wiring. On a direct link
//! they go on to the peer (a load generator waiting for them); a switched
//! network has no route for them, so there they stop at the wiring, and the
//! load generators serving from that node are started instead.
//!
//! A built-in host has no cores: a message "from the core" enters the
//! transport at the time the workload names, and a delivered message is
//! recorded when the reassembly module hands it on. Messages carry their
//! index in the workload in their first payload word, so each delivery is
//! matched to its send (shorter messages are only counted, in
//! `unmatched_deliveries`; `nanopu net`'s workloads refuse them).

mod build;
mod threads;

pub use crate::config::{ClientSpec, HostProgram};
pub use crate::host_set::{host_args, parse_hosts};
pub use crate::records::{MessageRecord, MessageSpec, NodeMessage, NODE_MESSAGES_KEPT};
pub use build::{client_host, mac, node_nic};

use crate::error::SystemError;
use crate::host::{top_up, ClientHostEvent, Host, HostEvent, HostModel, HostNote, HostSink};
use crate::partition::{Outcome, Parallel};
use crate::records::{keep_latest, match_delivery, Matched};
use nanopu_network::{host_ip, NetAction, NetEvent, NetSink, Network};
use nanopu_node::Node;
use nanopu_sim::{EventQueue, Reserved, SimDuration, SimTime};
use nanopu_transport::{NanoTransport, Occupancy, TransportStats};
use nanopu_wire::PcapWriter;
use std::collections::VecDeque;

/// Hosts on a network: the one configuration schema ([`crate::config`]).
pub type ClusterConfig = crate::config::Config;

/// When [`Cluster::run_until`] stops early.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StopWhen {
    /// Every load generator has all its replies.
    pub clients_done: bool,
    /// A node's program exits.
    pub node_exits: bool,
}

/// How [`Cluster::run_until`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClusterEnd {
    /// Every load generator has all its replies (with `clients_done`).
    ClientsDone,
    /// Host `host`'s program exited with `code` (with `node_exits`).
    Exited { host: usize, code: u64 },
    /// Events remain after the time limit.
    TimeLimit,
    /// Nothing is left to do: no event is pending and no node can run.
    Idle,
    /// Nothing can happen before the pause time ([`Cluster::set_pause`]);
    /// `run_until` again goes on as if it had not stopped.
    Paused,
}

enum Ev {
    Net(NetEvent),
    /// A frame's first bit reaches a host's NIC.
    AtHost(usize, Vec<u8>),
    /// An event host `h` scheduled.
    Host(u32, HostEvent),
    /// Workload message `i` enters its sender's transport.
    Send(usize),
}

/// Hosts on a network, run in time order.
pub struct Cluster {
    net: Network,
    hosts: Vec<Host>,
    queue: EventQueue<Ev>,
    specs: Vec<MessageSpec>,
    pub records: Vec<MessageRecord>,
    /// Deliveries of messages too short to carry their index.
    pub unmatched_deliveries: Vec<(usize, SimTime)>,
    /// Deliveries whose index names no message of the workload.
    pub unknown_deliveries: u64,
    /// Per host, when each data packet left its transport (only when
    /// [`Cluster::record_transmits`] is on).
    transmits: Vec<Vec<SimTime>>,
    record_transmits: bool,
    /// Events handled (for speed figures).
    pub events: u64,
    pub now: SimTime,
    /// What nodes' cores sent and received (nodes only): the latest
    /// [`NODE_MESSAGES_KEPT`] of each (a guest may send without end), and
    /// how many there were in all.
    pub node_sends: VecDeque<NodeMessage>,
    pub node_deliveries: VecDeque<NodeMessage>,
    pub node_messages_sent: u64,
    pub node_messages_delivered: u64,
    /// When each node sent its (first) boot message.
    pub booted: Vec<(usize, SimTime)>,
    /// Messages a NIC could not put into a core's RX FIFO.
    pub delivery_failures: u64,
    /// The least time from a node's core sending to any other host's NIC
    /// receiving: how far nodes may run past each other.
    lookahead: SimDuration,
    /// The hosts that are nodes, and those that are load generators.
    nodes: Vec<usize>,
    clients: Vec<usize>,
    /// Per node (as in `nodes`), its output horizon when last computed,
    /// `None` once the node may have changed since (it ran, or an event
    /// reached it): the run loop asks twice a turn, nodes change rarely.
    horizons: Vec<Option<Option<SimTime>>>,
    /// Per host, its index in `nodes` (`u32::MAX`: not a node).
    node_index: Vec<u32>,
    /// Consumed frame buffers, for the hosts that send to reuse (frames go
    /// from senders to receivers; this brings the buffers back).
    spare_frames: Vec<Vec<u8>>,
    /// The partitioned simulation, when threads are set
    /// ([`Cluster::set_threads`]).
    par: Option<Box<Parallel>>,
    /// Why threads were asked for but the single loop runs the network
    /// (its partitions could never run on threads of their own).
    single_loop_note: Option<String>,
    /// The most partitions of leaves, and of spines ([`Cluster::set_partitions`]).
    partitions: usize,
    /// Per host, the rate of its link if it takes frames whole, at their
    /// last bit (a load generator), else 0.
    whole_frames_gbps: Vec<u64>,
    /// Stop between two turns once no node can send before this time
    /// ([`Cluster::set_pause`]).
    pause_at: Option<SimTime>,
}

/// The network's actions carried out as they come ([`NetSink`]): frames
/// and network events into the cluster's queue.
struct IntoQueue<'a> {
    queue: &'a mut EventQueue<Ev>,
    whole_frames_gbps: &'a [u64],
}

impl NetSink for IntoQueue<'_> {
    #[inline]
    fn act(&mut self, a: NetAction) {
        match a {
            NetAction::Deliver {
                host,
                frame,
                first_bit,
            } => {
                // A load generator takes frames whole, at their last bit.
                let at = match self.whole_frames_gbps[host] {
                    0 => first_bit,
                    gbps => first_bit + SimDuration::serialization(frame.len() as u64, gbps),
                };
                self.queue.schedule(at, Ev::AtHost(host, frame))
            }
            NetAction::Schedule { at, event } => self.queue.schedule(at, Ev::Net(event)),
            NetAction::Reserve { .. } => unreachable!("the network asks NetSink::reserve"),
            NetAction::ScheduleReserved { at, key, event } => {
                self.queue.schedule_reserved(at, key, Ev::Net(event))
            }
        }
    }

    #[inline]
    fn reserve(&mut self, _port: u32) -> Option<Reserved> {
        Some(self.queue.reserve())
    }
}

/// Frame buffers the cluster keeps for its hosts.
const SPARE_FRAMES: usize = 4096;

impl Cluster {
    /// A cluster of hosts built by hand on `net` (host `i` is attached
    /// where the network's host `i` is).
    pub fn from_hosts(mut net: Network, hosts: Vec<Host>, lookahead: SimDuration) -> Cluster {
        let n = hosts.len();
        assert_eq!(n, net.hosts(), "one host per network attachment");
        // Only built-in hosts: the run loop takes every event at once, and
        // idle switch ports need no event at the end of a frame (nodes and
        // load generators are kept in step by the events' times).
        net.set_lazy_tx_done(hosts.iter().all(Host::is_builtin));
        Cluster {
            net,
            queue: EventQueue::new(),
            specs: Vec::new(),
            records: Vec::new(),
            unmatched_deliveries: Vec::new(),
            unknown_deliveries: 0,
            transmits: vec![Vec::new(); n],
            record_transmits: false,
            events: 0,
            now: SimTime::ZERO,
            node_sends: VecDeque::new(),
            node_deliveries: VecDeque::new(),
            node_messages_sent: 0,
            node_messages_delivered: 0,
            booted: Vec::new(),
            delivery_failures: 0,
            lookahead,
            spare_frames: Vec::new(),
            par: None,
            single_loop_note: None,
            partitions: crate::DEFAULT_PARTITIONS,
            whole_frames_gbps: hosts
                .iter()
                .map(|h| h.whole_frames_gbps().unwrap_or(0))
                .collect(),
            pause_at: None,
            nodes: (0..n).filter(|&h| hosts[h].as_node().is_some()).collect(),
            horizons: vec![None; hosts.iter().filter(|h| h.as_node().is_some()).count()],
            node_index: {
                let mut next = 0;
                hosts
                    .iter()
                    .map(|h| match h.as_node() {
                        Some(_) => {
                            next += 1;
                            next - 1
                        }
                        None => u32::MAX,
                    })
                    .collect()
            },
            clients: (0..n).filter(|&h| hosts[h].as_client().is_some()).collect(),
            hosts,
        }
    }
    /// Counters of the whole network.
    pub fn network_stats(&self) -> nanopu_network::NetworkStats {
        match &self.par {
            Some(p) => p.network_stats(),
            None => self.net.stats(),
        }
    }

    /// Starts load generator `h` at `at` (instead of at its server's boot).
    pub fn start_client_at(&mut self, h: usize, at: SimTime) {
        self.queue.schedule(
            at,
            Ev::Host(h as u32, HostEvent::Client(ClientHostEvent::Start)),
        );
    }

    /// Events scheduled in the past (a causality slip; should stay zero).
    pub fn late_events(&self) -> u64 {
        self.queue.late + self.par.as_ref().map_or(0, |p| p.late_events())
    }

    /// Host `h`.
    pub fn host(&self, h: usize) -> &Host {
        &self.hosts[h]
    }

    pub fn host_mut(&mut self, h: usize) -> &mut Host {
        &mut self.hosts[h]
    }

    /// The measurements of load generator `h` (percentiles filled in), if
    /// `h` is one.
    pub fn client_report(&mut self, h: usize) -> Option<crate::client::LoadReport> {
        match self.hosts.get_mut(h)? {
            Host::Client(c) => c.client.as_mut().map(|c| c.finish().clone()),
            _ => None,
        }
    }

    /// The hosts that are load generators.
    pub fn client_hosts(&self) -> &[usize] {
        &self.clients
    }

    /// The node of `host`, if it is a node.
    pub fn node(&self, host: usize) -> Option<&Node> {
        self.hosts[host].as_node().map(|n| &n.node)
    }

    /// Records the time of every frame each host's transport sends.
    pub fn record_transmits(&mut self, on: bool) {
        self.record_transmits = on;
    }

    /// When `host`'s transport sent its frames (see `record_transmits`).
    pub fn transmit_times(&self, host: usize) -> &[SimTime] {
        &self.transmits[host]
    }

    pub fn hosts(&self) -> usize {
        self.hosts.len()
    }

    pub fn network(&self) -> &Network {
        &self.net
    }

    pub fn network_mut(&mut self) -> &mut Network {
        &mut self.net
    }

    /// The transport of `host` (built in or in a node's NIC).
    ///
    /// # Panics
    /// If the host runs none (a load generator, a NIC without one).
    pub fn transport(&self, host: usize) -> &NanoTransport {
        self.hosts[host]
            .transport()
            .unwrap_or_else(|| panic!("host {host} runs no NanoTransport"))
    }

    /// Counters of every host's transport, summed.
    pub fn transport_stats(&self) -> TransportStats {
        let mut t = TransportStats::default();
        for h in &self.hosts {
            if let Some(tr) = h.transport() {
                t.add(&tr.stats);
            }
        }
        t
    }

    /// Resources still held by some host, if any (leak check).
    pub fn occupancy(&self) -> Option<(usize, Occupancy)> {
        self.hosts
            .iter()
            .enumerate()
            .filter_map(|(i, h)| h.transport().map(|t| (i, t.occupancy())))
            .find(|(_, o)| !o.is_empty())
    }

    /// An incast: every host of `from` sends one `len`-byte message to
    /// host `to` at `at_ns` (added to the workload in host order).
    pub fn send_incast(
        &mut self,
        from: impl IntoIterator<Item = usize>,
        to: usize,
        len: u16,
        at_ns: u64,
    ) -> Result<(), SystemError> {
        for from in from {
            self.send(MessageSpec {
                from,
                to,
                len,
                at_ns,
            })?;
        }
        Ok(())
    }

    /// Adds a message to the workload; returns its index.
    pub fn send(&mut self, m: MessageSpec) -> Result<usize, SystemError> {
        let n = self.hosts.len();
        if m.from >= n || m.to >= n {
            return Err(SystemError::Config(format!(
                "message from host {} to host {}: the network has hosts 0..{}",
                m.from,
                m.to,
                n - 1
            )));
        }
        let Some(b) = self.hosts[m.from].as_builtin() else {
            return Err(SystemError::Config(format!(
                "a workload message from host {}: it is not a built-in traffic host (a node \
                 sends its own messages, a load generator its requests)",
                m.from
            )));
        };
        let max = b.transport.max_message_bytes();
        let at = SimDuration::try_from_ns(m.at_ns)
            .map_err(|e| SystemError::Config(format!("message at_ns: {e}")))?;
        if m.len as u32 > max {
            return Err(SystemError::Config(format!(
                "a message of {} bytes: the transport carries at most {max}",
                m.len
            )));
        }
        let i = self.specs.len();
        self.specs.push(m);
        self.records.push(MessageRecord::default());
        match &mut self.par {
            Some(p) => p.send(i, m.from, SimTime::ZERO + at),
            None => self.queue.schedule(SimTime::ZERO + at, Ev::Send(i)),
        }
        Ok(i)
    }

    /// Writes what crosses `host`'s link to a pcap file.
    pub fn capture(&mut self, host: usize, path: &std::path::Path) -> Result<(), SystemError> {
        if host >= self.hosts.len() {
            return Err(SystemError::Config(format!(
                "pcap host {host}: the network has hosts 0..{}",
                self.hosts.len() - 1
            )));
        }
        if self.par.is_some() {
            return Err(SystemError::Config(
                "pcap: a network run on threads captures nothing".into(),
            ));
        }
        let f = std::fs::File::create(path).map_err(SystemError::Pcap)?;
        let w: Box<dyn std::io::Write + Send> = Box::new(std::io::BufWriter::new(f));
        self.net
            .capture(host, PcapWriter::new(w).map_err(SystemError::Pcap)?);
        Ok(())
    }

    /// Runs until no event is left or `until`; returns the last event's time.
    pub fn run(&mut self, until: SimTime) -> Result<SimTime, SystemError> {
        self.run_until(until, StopWhen::default())?;
        Ok(self.now)
    }

    /// Runs until `until`, until nothing is left to do, or until what
    /// `stop` names happens.
    pub fn run_until(&mut self, until: SimTime, stop: StopWhen) -> Result<ClusterEnd, SystemError> {
        if self.par.is_some() {
            return self.run_partitioned(until, stop);
        }
        // Nodes may have been changed from outside (`host_mut`).
        self.horizons.fill(None);
        let end = loop {
            if let Some(end) = self.stopped(stop) {
                break end;
            }
            if let Some(at) = self.pause_at {
                // Between turns, so that the next `run_until` takes the
                // turn this one would have taken: a turn's window depends
                // only on the state (and on `until`, which the caller keeps).
                let next = self.queue.peek_time();
                let earliest = match (next, self.nodes_horizon()) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                // (Nothing left to happen: the run ends by itself.)
                if earliest.is_some_and(|t| t >= at) {
                    break ClusterEnd::Paused;
                }
            }
            if self.nodes.is_empty() && (self.clients.is_empty() || !stop.clients_done) {
                // No core to keep in step and nothing to stop for between
                // events: every event up to `until` at once (the loop
                // below would take them one instant per turn).
                while let Some((t, ev)) = self.queue.pop_until(until) {
                    self.now = t;
                    self.events += 1;
                    self.handle(t, ev);
                }
                if let Some(t) = self.net.settle_through(until) {
                    self.now = self.now.max(t);
                }
                break if self.queue.is_empty() && !self.net.lazy_pending() {
                    ClusterEnd::Idle
                } else {
                    ClusterEnd::TimeLimit
                };
            }
            let next = self.queue.peek_time().unwrap_or(SimTime::MAX);
            // Nodes run no further than the next event, nor further past the
            // earliest point some node could send than a message takes to
            // cross the network: so nothing is ever delivered into a core's
            // past.
            let limit = match self.nodes_horizon() {
                Some(h) => next.min(h + self.lookahead),
                None => next,
            }
            .min(until);
            for i in 0..self.nodes.len() {
                let h = self.nodes[i];
                self.hosts[h]
                    .advance(limit)
                    .map_err(|error| SystemError::Host { host: h, error })?;
                self.horizons[i] = None;
                self.carry_out(h);
            }
            // Events before every node's next possible output are final.
            let safe = self.nodes_horizon().map_or(limit, |h| h.min(limit));
            let mut handled = false;
            while let Some((t, ev)) = self.queue.pop_until(safe) {
                self.now = t;
                self.events += 1;
                self.handle(t, ev);
                handled = true;
            }
            if !handled && self.queue.peek_time().is_none_or(|t| t > until) {
                // No event left before `until`: done once no node can run.
                let running = self.nodes.iter().any(|&h| self.hosts[h].can_run(until));
                if !running {
                    // A node that reached `until` still computing is not
                    // idle: the time limit stopped it.
                    let could_go_on = self
                        .nodes
                        .iter()
                        .any(|&h| self.hosts[h].can_run(SimTime::MAX));
                    break if let Some(end) = self.stopped(stop) {
                        end
                    } else if self.queue.is_empty() && !could_go_on {
                        ClusterEnd::Idle
                    } else {
                        ClusterEnd::TimeLimit
                    };
                }
            }
        };
        self.net.finish_capture().map_err(SystemError::Pcap)?;
        Ok(end)
    }

    /// The simulated time the run has reached: the latest clock of
    /// anything in it, the last event handled or a node's cores (which
    /// compute between events, and may run on long after the last one).
    pub fn sim_time(&self) -> SimTime {
        self.nodes
            .iter()
            .filter_map(|&h| self.hosts[h].clock())
            .fold(self.now, SimTime::max)
    }

    /// Makes [`Cluster::run_until`] stop ([`ClusterEnd::Paused`]) between
    /// two turns once nothing can happen before `at`: no event is due and
    /// no node can send before it, but something may later (`None`: never
    /// pause). Pausing changes nothing in the run, unlike a shorter
    /// `until`, which ends the nodes' last window there (a busy multi-core
    /// node's results depend on its windows). The single event loop only:
    /// the partitioned engine does not pause.
    pub fn set_pause(&mut self, at: Option<SimTime>) {
        self.pause_at = at;
    }

    /// Whether nothing has happened yet but the nodes' cores running: no
    /// event handled or pending, nothing sent, no frame on the network, no
    /// load generator started. The nodes' NICs and the network are then as
    /// they were built, so a fork of the nodes behind new NICs, network and
    /// load generators (built from the same configuration) runs on exactly
    /// as this cluster would.
    pub fn only_cores_ran(&self) -> bool {
        self.events == 0
            && self.queue.is_empty()
            && !self.net.lazy_pending()
            && self.node_sends.is_empty()
            && self.node_deliveries.is_empty()
            && self.booted.is_empty()
            && self.hosts.iter().all(Host::untouched)
    }

    /// [`Cluster::run_until`] on the partitions (built-in hosts only).
    fn run_partitioned(
        &mut self,
        until: SimTime,
        stop: StopWhen,
    ) -> Result<ClusterEnd, SystemError> {
        if let Some(end) = self.stopped(stop) {
            return Ok(end);
        }
        let par = self.par.as_mut().expect("partitioned");
        let mut out = Outcome {
            records: &mut self.records,
            unmatched: &mut self.unmatched_deliveries,
            unknown: &mut self.unknown_deliveries,
            events: &mut self.events,
            now: &mut self.now,
        };
        par.run(&mut self.hosts, &self.specs, until, &mut out)?;
        Ok(if par.is_idle() {
            ClusterEnd::Idle
        } else {
            ClusterEnd::TimeLimit
        })
    }

    /// What `stop` names, if it has happened.
    fn stopped(&self, stop: StopWhen) -> Option<ClusterEnd> {
        if stop.clients_done && self.clients_done() {
            return Some(ClusterEnd::ClientsDone);
        }
        if stop.node_exits {
            if let Some((host, code)) = self.exited() {
                return Some(ClusterEnd::Exited { host, code });
            }
        }
        None
    }

    fn clients_done(&self) -> bool {
        self.clients.iter().all(|&h| self.hosts[h].done())
    }

    fn exited(&self) -> Option<(usize, u64)> {
        self.nodes
            .iter()
            .find_map(|&h| self.hosts[h].exited().map(|code| (h, code)))
    }

    /// The earliest time any node could send something, if any node can.
    fn nodes_horizon(&mut self) -> Option<SimTime> {
        let mut min = None;
        for (i, &h) in self.nodes.iter().enumerate() {
            let horizon = match self.horizons[i] {
                Some(known) => known,
                None => {
                    let x = self.hosts[h].horizon();
                    self.horizons[i] = Some(x);
                    x
                }
            };
            min = match (min, horizon) {
                (Some(a), Some(b)) => Some(std::cmp::min(a, b)),
                (a, b) => a.or(b),
            };
        }
        min
    }

    /// Node host `h` has changed (an event reached it): its horizon must be
    /// asked again.
    fn node_changed(&mut self, h: usize) {
        if let Some(x) = self.horizons.get_mut(self.node_index[h] as usize) {
            *x = None;
        }
    }

    /// Hands spare frame buffers to the host that is about to run.
    fn top_up(&mut self, h: usize) {
        let net = &mut self.net;
        top_up(&mut self.hosts[h], &mut self.spare_frames, |spare| {
            // Dropped frames' buffers too, before anyone allocates one.
            net.take_discarded(spare, SPARE_FRAMES)
        });
    }

    fn handle(&mut self, t: SimTime, ev: Ev) {
        match ev {
            Ev::Net(e) => {
                let key = self.queue.current();
                let mut sink = IntoQueue {
                    queue: &mut self.queue,
                    whole_frames_gbps: &self.whole_frames_gbps,
                };
                self.net.handle_keyed(e, t, key, &mut sink);
            }
            Ev::AtHost(h, frame) => {
                self.top_up(h);
                // `t`: the first bit, or the last for a host that takes
                // frames whole.
                self.hosts[h].frame_in(&frame, t);
                self.node_changed(h);
                self.carry_out(h);
                if self.spare_frames.len() < SPARE_FRAMES {
                    self.spare_frames.push(frame);
                }
            }
            Ev::Host(h, e) => {
                let h = h as usize;
                self.top_up(h);
                self.hosts[h].handle(e, t);
                self.node_changed(h);
                self.carry_out(h);
            }
            Ev::Send(i) => {
                let m = self.specs[i];
                self.top_up(m.from);
                self.records[i].sent_at = t;
                if let Some(b) = self.hosts[m.from].as_builtin_mut() {
                    b.send_workload(i, host_ip(m.to), m.len, t);
                }
                self.carry_out(m.from);
            }
        }
    }

    /// Carries out what host `h` asked for: its events into the queue, its
    /// notes into the records, its frames onto the network (whose actions
    /// are carried out as they come, after all of the host's events).
    fn carry_out(&mut self, h: usize) {
        // The other hosts stay readable (a note may concern them).
        let mut hosts = std::mem::take(&mut self.hosts);
        let (before, rest) = hosts.split_at_mut(h);
        let (host, after) = rest.split_first_mut().expect("a host");
        host.drain(&mut Out {
            h,
            c: self,
            before,
            after,
        });
        self.hosts = hosts;
    }
}

/// Where the host being drained hands its requests ([`HostSink`]): the
/// cluster (whose `hosts` are taken out meanwhile) and the other hosts.
struct Out<'a> {
    h: usize,
    c: &'a mut Cluster,
    before: &'a [Host],
    after: &'a [Host],
}

impl Out<'_> {
    /// Another host than the one drained.
    fn other(&self, i: usize) -> Option<&Host> {
        match i.cmp(&self.h) {
            std::cmp::Ordering::Less => self.before.get(i),
            std::cmp::Ordering::Equal => None,
            std::cmp::Ordering::Greater => self.after.get(i - self.h - 1),
        }
    }

    /// Node `self.h` booted at `at`.
    fn booted(&mut self, at: SimTime, on_wire: bool) {
        let (h, c) = (self.h, &mut *self.c);
        // A node boots once; more boot messages change nothing.
        if c.booted.iter().any(|&(b, _)| b == h) {
            return;
        }
        c.booted.push((h, at));
        if on_wire {
            return;
        }
        // No route for 0.0.0.0: the wiring starts the load generators that
        // wait for this node, once all their servers have booted.
        for i in 0..self.c.clients.len() {
            let ch = self.c.clients[i];
            let Some(client) = self.other(ch).and_then(Host::as_client) else {
                continue;
            };
            let last_to_boot = client.waits_for_boot_of(h)
                && client
                    .servers()
                    .all(|s| self.c.booted.iter().any(|&(b, _)| b == s));
            if last_to_boot {
                let e = Ev::Host(ch as u32, HostEvent::Client(ClientHostEvent::Start));
                self.c.queue.schedule(at, e);
            }
        }
    }

    /// A message carrying workload index `index` reached host `self.h`
    /// from `src`: the message itself, or the reply to it.
    fn matched(&mut self, src: u32, index: u64, at: SimTime) {
        let c = &mut *self.c;
        match match_delivery(&c.specs, self.h, src, index) {
            Matched::Delivered(i) => c.records[i].delivered(at),
            Matched::Reply(i) => c.records[i].replied(at),
            Matched::Unknown => c.unknown_deliveries += 1,
        }
    }
}

impl HostSink<HostEvent> for Out<'_> {
    #[inline]
    fn reserve(&mut self) -> Reserved {
        self.c.queue.reserve()
    }

    #[inline]
    fn schedule_reserved(&mut self, at: SimTime, key: Reserved, event: HostEvent) {
        self.c
            .queue
            .schedule_reserved(at, key, Ev::Host(self.h as u32, event));
    }

    fn note(&mut self, note: HostNote) {
        let h = self.h;
        match note {
            HostNote::Booted { at, on_wire } => self.booted(at, on_wire),
            HostNote::CoreSent { dst_ip, len, at } => {
                self.c.node_messages_sent += 1;
                keep_latest(
                    &mut self.c.node_sends,
                    NodeMessage {
                        host: h,
                        peer_ip: dst_ip,
                        len,
                        at,
                    },
                );
            }
            HostNote::CoreDelivered {
                src_ip,
                len,
                first_word,
                at,
            } => {
                self.c.node_messages_delivered += 1;
                keep_latest(
                    &mut self.c.node_deliveries,
                    NodeMessage {
                        host: h,
                        peer_ip: src_ip,
                        len,
                        at,
                    },
                );
                // A workload message from a built-in host to this node.
                if let (true, Some(index)) = (len >= 8, first_word) {
                    let n = self.c.whole_frames_gbps.len();
                    let from_builtin = nanopu_network::host_of_ip(src_ip, n)
                        .and_then(|f| self.other(f))
                        .is_some_and(Host::is_builtin);
                    if from_builtin {
                        self.matched(src_ip, index, at);
                    }
                }
            }
            HostNote::DeliveryFailed => self.c.delivery_failures += 1,
            HostNote::Delivered { src_ip, index, at } => match index {
                Some(index) => self.matched(src_ip, index, at),
                None => self.c.unmatched_deliveries.push((h, at)),
            },
            HostNote::Failed { tag } => {
                if let Some(r) = self.c.records.get_mut(tag as usize) {
                    r.failed = true;
                }
            }
        }
    }

    #[inline]
    fn left(&mut self, at: SimTime) {
        if self.c.record_transmits {
            self.c.transmits[self.h].push(at);
        }
    }

    #[inline]
    fn transmit(&mut self, frame: Vec<u8>, ready: SimTime) {
        let c = &mut *self.c;
        let mut sink = IntoQueue {
            queue: &mut c.queue,
            whole_frames_gbps: &c.whole_frames_gbps,
        };
        c.net.send(self.h, frame, ready, &mut sink);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn events_are_small() {
        // Events move twice through the queue: a frame's Vec and a tag.
        assert!(std::mem::size_of::<super::Ev>() <= 40);
    }
}
