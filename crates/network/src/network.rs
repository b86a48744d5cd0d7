//! The whole network as one timed state machine: host uplinks, switches and
//! the links between them, wired as [`crate::topology`] says.
//!
//! Like the NIC (`nanopu-nics`'s `NanoNic`), it has no clock and no event
//! queue of its own. Inputs are [`Network::send`] (a host's NIC hands over
//! a frame) and [`Network::handle`] (a [`NetEvent`] the network asked for
//! comes due); outputs are [`NetAction`]s handed to the caller's
//! [`NetSink`] (a vector, or its event queue).
//!
//! A frame's life: `send` asks for a callback at `ready`; the frame then
//! joins its host's uplink queue (the NIC does not serialize: the uplink
//! serializer is modelled here) and is serialized when the uplink is free.
//! When its first bit leaves a port, faults are drawn ([`crate::faults`]),
//! the frame is written to the link's capture, and it moves on: to a switch,
//! which sees it one propagation delay later and queues it at the output
//! one forwarding latency after that ([`crate::switch`]); or to a host, as
//! a [`NetAction::Deliver`] whose `first_bit` is when its first bit reaches
//! the NIC (that time is at or after the moment the action is pushed; the
//! caller delivers it then, as `nanopu-system` schedules frames on its
//! link). Each port has at most one pending event (the end of its current
//! frame); a frame crossing one switch costs four events.
//!
//! Per-packet work allocates nothing but what a fault or a capture needs
//! (a duplicate's copy; the capture's writer): the frame `Vec` moves
//! through the events, and queues are reused.

use crate::capture::OrderedCapture;
use crate::config::{FaultScope, NetworkConfig};
use crate::faults::{self, Fate, FaultStats};
use crate::net_timeline::NetTimeline;
use crate::port::{wire_time, Capture, Charge, OutputPort, PendingDone, PortStats, Queued};
use crate::switch::{classify, Admission, Switch, SwitchStats};
use crate::topology::{Endpoint, LocalRoute, PortRef, Topology};
use crate::{host_of_ip, HostId};
use nanopu_sim::{Reserved, SimDuration, SimTime};
use nanopu_wire::PcapWriter;
use serde::Serialize;
use std::fmt;
use std::io::{self, Write};

/// Why a network cannot be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NetworkError {
    /// The configuration does not validate; the message names the field.
    #[error("network.{0}")]
    Config(#[from] crate::config::ConfigError),
}

/// An event the network asked to be handed back (opaque; a frame moves
/// through it, nothing is copied).
#[derive(Debug)]
pub struct NetEvent(Ev);

impl NetEvent {
    /// The switch the event happens at, if it is a frame reaching a switch
    /// (the other events happen at the port or host that asked for them):
    /// how a partitioned simulation routes it to the switch's owner.
    pub fn arriving_at(&self) -> Option<usize> {
        match &self.0 {
            Ev::Arrive { switch, .. } => Some(*switch as usize),
            _ => None,
        }
    }
}

/// One direction of a link, for partitioning a network: where it starts,
/// where it leads, and the least simulated time from the moment a frame is
/// handed to its sending end to the moment its far end acts on it (the
/// propagation delay, plus the forwarding latency if that end is a switch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkDirection {
    pub from: Endpoint,
    pub to: Endpoint,
    pub least_latency: SimDuration,
}

#[derive(Debug)]
enum Ev {
    /// A host's frame is ready for its uplink.
    HostReady { host: u32, frame: Vec<u8> },
    /// A frame's first bit reached the switch one forwarding latency ago.
    Arrive { switch: u32, frame: Vec<u8> },
    /// The last bit of the port's current frame has left.
    TxDone { port: u32 },
}

/// Something the network needs done.
#[derive(Debug)]
pub enum NetAction {
    /// `frame`'s first bit reaches `host`'s NIC at `first_bit`.
    Deliver {
        host: HostId,
        frame: Vec<u8>,
        first_bit: SimTime,
    },
    /// Call [`Network::handle`] with `event` at `at`.
    Schedule { at: SimTime, event: NetEvent },
    /// Lazy mode only ([`Network::set_lazy_tx_done`]): reserve the next
    /// place in the event order (as if an event were scheduled now) and
    /// give it to [`Network::reserved`] for `port`.
    Reserve { port: u32 },
    /// Lazy mode only: schedule `event` at `at` in the place `key` that
    /// was reserved for it.
    ScheduleReserved {
        at: SimTime,
        key: Reserved,
        event: NetEvent,
    },
}

/// Where the network's actions go ([`Network::send`],
/// [`Network::handle_keyed`]): a vector the caller carries out afterwards,
/// in order, or the caller's event queue itself. A sink that schedules
/// each action as it comes gives the events the places in the event order
/// that carrying out the vector afterwards would give them, provided
/// nothing else is scheduled between the call and that moment; it saves
/// the vector's traffic (a few actions per packet).
pub trait NetSink {
    /// Carries out `a` (never a [`NetAction::Reserve`]: the network asks
    /// [`NetSink::reserve`] instead).
    fn act(&mut self, a: NetAction);
    /// Lazy mode: the next place in the event order, for `port`'s frame
    /// end, if the sink can give it at once; `None` if it will give it
    /// later through [`Network::reserved`] (a vector records a
    /// [`NetAction::Reserve`]).
    fn reserve(&mut self, port: u32) -> Option<Reserved>;
}

impl NetSink for Vec<NetAction> {
    #[inline]
    fn act(&mut self, a: NetAction) {
        self.push(a);
    }

    #[inline]
    fn reserve(&mut self, port: u32) -> Option<Reserved> {
        self.push(NetAction::Reserve { port });
        None
    }
}

/// Counters of the whole network.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct NetworkStats {
    /// Frames hosts handed to [`Network::send`].
    pub sent_frames: u64,
    /// Frames delivered to hosts (duplicates included).
    pub delivered_frames: u64,
    /// Their bytes.
    pub delivered_bytes: u64,
    /// Each switch.
    pub switches: Vec<SwitchStats>,
    /// All switches: sums, and the maxima of the maxima.
    pub total: SwitchStats,
    /// Faults injected on links.
    pub faults: FaultStats,
}

impl NetworkStats {
    /// Adds the counters of `o`, the same network's other part (a
    /// partitioned simulation's: each part counts what its own ports and
    /// switches did, so the sum is the whole).
    pub fn merge(&mut self, o: &NetworkStats) {
        self.sent_frames += o.sent_frames;
        self.delivered_frames += o.delivered_frames;
        self.delivered_bytes += o.delivered_bytes;
        if self.switches.len() < o.switches.len() {
            self.switches
                .resize(o.switches.len(), SwitchStats::default());
        }
        for (a, b) in self.switches.iter_mut().zip(&o.switches) {
            a.add(b);
        }
        self.total = SwitchStats::default();
        for s in &self.switches {
            self.total.add(s);
        }
        let (f, g) = (&mut self.faults, &o.faults);
        f.lost += g.lost;
        f.trimmed += g.trimmed;
        f.truncated += g.truncated;
        f.duplicated += g.duplicated;
        f.reordered += g.reordered;
        f.stopped += g.stopped;
    }
}

/// The network: see the module documentation.
pub struct Network {
    cfg: NetworkConfig,
    topo: Topology,
    gbps: u64,
    forwarding: SimDuration,
    /// Host uplinks first (port `h` is host `h`'s), then each switch's ports.
    ports: Vec<OutputPort>,
    switches: Vec<Switch>,
    captures: Vec<Option<OrderedCapture>>,
    capture_error: Option<io::Error>,
    faults: FaultStats,
    /// When each host stops (empty if none ever does).
    stops: Vec<Option<SimTime>>,
    sent: u64,
    delivered: u64,
    delivered_bytes: u64,
    /// Timeline probes (`--timeline`); `None` costs one branch per frame.
    timeline: Option<Box<NetTimeline>>,
    /// Switch ports schedule the end of a frame only when another frame
    /// waits for it ([`Network::set_lazy_tx_done`]).
    lazy: bool,
    /// The event being handled: its time and place in the event order.
    present: (SimTime, Reserved),
    /// Buffers of frames dropped (by a switch, a fault or a stopped host),
    /// for the caller to reuse ([`Network::take_discarded`]): a congested
    /// network then allocates no frame buffer per dropped packet.
    discarded: Vec<Vec<u8>>,
}

/// Buffers of dropped frames the network keeps for [`Network::take_discarded`]
/// at most (the rest are freed).
const MAX_DISCARDED: usize = 256;

impl fmt::Debug for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Network")
            .field("topology", &self.cfg.topology)
            .field("ports", &self.ports.len())
            .finish_non_exhaustive()
    }
}

impl Network {
    /// Checks `cfg` as [`Network::new`] does, building nothing; the error
    /// names the key (`network.link.gbps`).
    pub fn validate_config(cfg: &NetworkConfig) -> Result<(), NetworkError> {
        Ok(cfg.validate()?)
    }

    /// Builds the network `cfg` describes, every queue empty.
    pub fn new(cfg: &NetworkConfig) -> Result<Network, NetworkError> {
        cfg.validate()?;
        let topo = Topology::new(&cfg.topology);
        let host_prop = SimDuration::from_ps(cfg.link.host_propagation_ps);
        let fabric_prop = SimDuration::from_ps(cfg.link.fabric_propagation_ps);
        let mut ports = Vec::new();
        for h in 0..topo.hosts() {
            let up = topo.uplink_peer(h);
            ports.push(OutputPort::new(None, up, host_prop, cfg.link.gbps, 1));
        }
        let mut switches = Vec::with_capacity(topo.switches());
        for s in 0..topo.switches() {
            switches.push(Switch::new(ports.len()));
            for p in 0..topo.ports(s) {
                let Some(peer) = topo.peer(s, p) else {
                    continue;
                };
                let (prop, gbps) = match peer {
                    Endpoint::Host(_) => (host_prop, cfg.link.gbps),
                    Endpoint::Switch(_) => (fabric_prop, cfg.link.fabric_gbps()),
                };
                ports.push(OutputPort::new(
                    Some(s),
                    peer,
                    prop,
                    gbps,
                    cfg.switch.priority_bands,
                ));
            }
        }
        if cfg.faults.any() {
            for (i, port) in ports.iter_mut().enumerate() {
                let host_link = port.owner.is_none() || matches!(port.peer, Endpoint::Host(_));
                if host_link || cfg.faults.scope == FaultScope::AllLinks {
                    port.faults = Some(faults::rng(cfg.seed, i));
                }
            }
        }
        let mut net = Network {
            cfg: cfg.clone(),
            topo,
            gbps: cfg.link.gbps,
            forwarding: SimDuration::from_ps(cfg.switch.forwarding_latency_ps),
            ports,
            switches,
            captures: Vec::new(),
            capture_error: None,
            faults: FaultStats::default(),
            stops: Vec::new(),
            sent: 0,
            delivered: 0,
            delivered_bytes: 0,
            timeline: None,
            lazy: false,
            present: (SimTime::ZERO, Reserved::default()),
            discarded: Vec::new(),
        };
        for stop in &cfg.faults.stops {
            net.stop_host(stop.host, SimTime::ZERO + SimDuration::from_ns(stop.at_ns));
        }
        Ok(net)
    }

    /// Lazy mode (off by default): the end of a switch port's frame, which
    /// releases its bytes, becomes an event only if another frame queues
    /// behind it; otherwise it takes effect when the switch next admits a
    /// frame, exactly where its event would have been in the event order.
    /// A frame crossing an idle switch then costs one event, not two, with
    /// the same results. The caller must then hand every event over with
    /// [`Network::handle_keyed`], carry out [`NetAction::Reserve`] and
    /// [`NetAction::ScheduleReserved`], and call
    /// [`Network::settle_through`] at the end of a run. Set it before any
    /// frame is sent.
    pub fn set_lazy_tx_done(&mut self, on: bool) {
        self.lazy = on;
    }

    /// Whether lazy mode is on.
    pub fn lazy_tx_done(&self) -> bool {
        self.lazy
    }

    /// The place reserved for `port`'s pending frame end
    /// ([`NetAction::Reserve`]).
    pub fn reserved(&mut self, port: u32, key: Reserved) {
        if let Some(d) = &mut self.ports[port as usize].pending_done {
            d.key = Some(key);
        }
    }

    /// The end of a run at `until` (every event up to it handled): the
    /// frame ends due by then take effect. Returns the latest of them, the
    /// time of the last event the run would have had if they were events.
    pub fn settle_through(&mut self, until: SimTime) -> Option<SimTime> {
        let mut last = None;
        for s in 0..self.switches.len() {
            let mut pending = std::mem::take(&mut self.switches[s].pending);
            pending.retain(|&p| match self.ports[p as usize].pending_done {
                Some(d) if d.at <= until => {
                    self.settle(s, p as usize, d);
                    last = last.max(Some(d.at));
                    false
                }
                _ => true,
            });
            self.switches[s].pending = pending;
        }
        last
    }

    /// Whether frame ends are pending that are not events (lazy mode; after
    /// [`Network::settle_through`]: ends past the run's end).
    pub fn lazy_pending(&self) -> bool {
        self.switches.iter().any(|s| !s.pending.is_empty())
    }

    /// Port `p` of switch `s`: its frame's end `d` takes effect (the caller
    /// takes `p` off the switch's pending list). The order in which a
    /// switch's ports settle does not matter: each releases its own bytes.
    fn settle(&mut self, s: usize, p: usize, d: PendingDone) {
        let port = &mut self.ports[p];
        port.pending_done = None;
        if let Some((len, charge)) = port.finish(d.at) {
            self.switches[s].release(len, charge);
        }
    }

    /// Before switch `s` admits a frame: the frame ends that came before
    /// the present take effect.
    fn settle_switch(&mut self, s: usize) {
        let (now, key) = self.present;
        let sw = &mut self.switches[s];
        if sw.pending.is_empty() || sw.earliest_pending > now {
            return;
        }
        let mut pending = std::mem::take(&mut sw.pending);
        let mut earliest = SimTime::MAX;
        pending.retain(|&p| {
            let d = self.ports[p as usize]
                .pending_done
                .expect("a port on the pending list has a pending end");
            if d.before(now, key) {
                self.settle(s, p as usize, d);
                false
            } else {
                earliest = earliest.min(d.at);
                true
            }
        });
        let sw = &mut self.switches[s];
        sw.pending = pending;
        sw.earliest_pending = earliest;
    }

    pub fn set_timeline(&mut self, timeline: Option<nanopu_timeline::Timeline>) {
        self.timeline = timeline.map(|tl| {
            let hosts = self.hosts();
            let ports = self.ports.iter().enumerate().map(|(p, port)| {
                let owner = port.owner.map(|s| (s, p - self.switches[s].first_port));
                debug_assert!(owner.is_some() || p < hosts);
                (p, owner, port.peer)
            });
            Box::new(NetTimeline::new(tl, ports))
        });
    }

    /// Stops `host` at `at` (a crash: see [`crate::faults`]); an earlier
    /// stop of the same host stays.
    ///
    /// # Panics
    /// If `host` is not a host of this network.
    pub fn stop_host(&mut self, host: HostId, at: SimTime) {
        assert!(host < self.hosts(), "host {host} of {}", self.hosts());
        if self.stops.is_empty() {
            self.stops = vec![None; self.hosts()];
        }
        let s = &mut self.stops[host];
        *s = Some(s.map_or(at, |t| t.min(at)));
    }

    /// Whether `host` has stopped by `at`.
    fn stopped(&self, host: HostId, at: SimTime) -> bool {
        matches!(self.stops.get(host), Some(Some(t)) if *t <= at)
    }

    /// The configuration it was built from.
    pub fn config(&self) -> &NetworkConfig {
        &self.cfg
    }

    /// Number of hosts.
    pub fn hosts(&self) -> usize {
        self.topo.hosts()
    }

    /// Number of switches.
    pub fn switches(&self) -> usize {
        self.switches.len()
    }

    /// Number of ports of switch `s`.
    pub fn switch_ports(&self, s: usize) -> usize {
        self.topo.ports(s)
    }

    /// What a switch port's link leads to; `None` if there is no such
    /// port (a direct link has no switch).
    pub fn peer(&self, port: PortRef) -> Option<Endpoint> {
        self.topo.peer(port.switch, port.port)
    }

    /// The switch host `h` is attached to (`None` on a direct link).
    pub fn host_switch(&self, h: HostId) -> Option<usize> {
        self.topo.attachment(h).map(|p| p.switch)
    }

    /// Every direction of every link (see [`LinkDirection`]).
    pub fn link_directions(&self) -> impl Iterator<Item = LinkDirection> + '_ {
        self.ports.iter().enumerate().map(|(i, p)| LinkDirection {
            // Ports 0..hosts are the hosts' uplinks.
            from: p.owner.map_or(Endpoint::Host(i), Endpoint::Switch),
            to: p.peer,
            least_latency: match p.peer {
                Endpoint::Host(_) => p.propagation,
                Endpoint::Switch(_) => p.propagation + self.forwarding,
            },
        })
    }

    /// Whether any link is captured or any port's occupancy watched.
    pub fn observed(&self) -> bool {
        self.ports
            .iter()
            .any(|p| p.capture.is_some() || p.samples.is_some())
    }

    /// A host's NIC hands a frame to its uplink; the first bit can leave at
    /// `ready` (later if the uplink is still busy). The uplink serializer is
    /// modelled here: the NIC does not serialize. Frames leave in the order
    /// of `ready`, then of the calls.
    ///
    /// # Panics
    /// If `host` is not a host of this network.
    pub fn send(&mut self, host: HostId, frame: Vec<u8>, ready: SimTime, out: &mut impl NetSink) {
        assert!(host < self.hosts(), "host {host} of {}", self.hosts());
        self.sent += 1;
        let port = &mut self.ports[host];
        // A capture only reads frames: it takes the same path as no capture
        // (an event on the way would change the order of events).
        if port.samples.is_none() && !port.queue_in_use() {
            let at = port.serialize_in_order(frame.len(), ready);
            if let Some(tl) = &self.timeline {
                tl.depart(host, &frame, ready, at, wire_time(frame.len(), port.gbps));
            }
            return self.depart(host, frame, at, out);
        }
        out.act(NetAction::Schedule {
            at: ready,
            event: NetEvent(Ev::HostReady {
                host: host as u32,
                frame,
            }),
        });
    }

    /// An event the network scheduled has come due at `now` (not in lazy
    /// mode: see [`Network::handle_keyed`]).
    pub fn handle(&mut self, ev: NetEvent, now: SimTime, out: &mut impl NetSink) {
        debug_assert!(!self.lazy, "lazy mode hands events over with their place");
        self.handle_keyed(ev, now, Reserved::default(), out)
    }

    /// An event the network scheduled has come due at `now`, in the place
    /// `key` of the event order.
    pub fn handle_keyed(
        &mut self,
        ev: NetEvent,
        now: SimTime,
        key: Reserved,
        out: &mut impl NetSink,
    ) {
        self.present = (now, key);
        match ev.0 {
            Ev::HostReady { host, frame } => {
                self.enqueue(host as usize, frame, 0, Charge::Unlimited, now, out)
            }
            Ev::Arrive { switch, frame } => self.arrive(switch as usize, frame, now, out),
            Ev::TxDone { port } => self.tx_done(port as usize, now, out),
        }
    }

    /// A frame is queued at switch `s`'s output, one forwarding latency
    /// after its first bit came in: route, admit (or trim, or drop), queue.
    fn arrive(&mut self, s: usize, mut frame: Vec<u8>, now: SimTime, out: &mut impl NetSink) {
        let sw = &mut self.switches[s];
        let Some(c) = classify(&frame, self.cfg.switch.priority_bands) else {
            sw.stats.dropped.malformed += 1;
            return self.discard(frame);
        };
        let Some(dst) = host_of_ip(c.dst_ip, self.topo.hosts()) else {
            sw.stats.dropped.no_route += 1;
            return self.discard(frame);
        };
        let Some(route) = self.topo.route(s, dst) else {
            sw.stats.dropped.no_route += 1;
            return self.discard(frame);
        };
        let local = sw.choose(route, self.cfg.switch.load_balancing, &frame);
        let p = sw.first_port + local;
        self.settle_switch(s);
        let sw = &mut self.switches[s];
        match sw.admit(&self.cfg.switch, &self.ports[p], c, &mut frame) {
            Admission::Drop => self.discard(frame),
            Admission::Queue { band, charge, .. } => self.enqueue(p, frame, band, charge, now, out),
        }
    }

    /// Charges `frame` to port `p` and its switch, then sends it at once if
    /// the port is idle, else queues it in `band`.
    fn enqueue(
        &mut self,
        p: usize,
        frame: Vec<u8>,
        band: usize,
        charge: Charge,
        now: SimTime,
        out: &mut impl NetSink,
    ) {
        let len = frame.len() as u64;
        let port = &mut self.ports[p];
        port.hold(len, charge, now);
        if let Some(s) = port.owner {
            self.switches[s].hold(len, charge, port.held());
        }
        let q = Queued {
            frame,
            charge,
            since: now,
        };
        if port.busy() {
            port.push(band, q);
            if let Some(d) = port.pending_done.take() {
                // The first frame behind it: its end becomes an event, in
                // the place it would have had.
                let key = d.key.expect("the place was reserved after the frame began");
                out.act(NetAction::ScheduleReserved {
                    at: d.at,
                    key,
                    event: NetEvent(Ev::TxDone { port: p as u32 }),
                });
                if let Some(s) = port.owner {
                    let pending = &mut self.switches[s].pending;
                    let i = pending
                        .iter()
                        .position(|&q| q as usize == p)
                        .expect("a port with a pending end is on its switch's list");
                    pending.swap_remove(i);
                }
            }
        } else {
            let at = port.start_time(now);
            self.transmit(p, q, at, out);
        }
    }

    /// The last bit of port `p`'s frame has left: release it, start the next.
    fn tx_done(&mut self, p: usize, now: SimTime, out: &mut impl NetSink) {
        let port = &mut self.ports[p];
        if let (Some((len, charge)), Some(s)) = (port.finish(now), port.owner) {
            self.switches[s].release(len, charge);
        }
        if let Some((q, at)) = port.next(now) {
            self.transmit(p, q, at, out);
        }
    }

    /// Port `p` starts serializing `q` at `at`: schedule its end, inject
    /// faults, capture it, pass it to the far end of the link.
    fn transmit(&mut self, p: usize, q: Queued, at: SimTime, out: &mut impl NetSink) {
        let port = &mut self.ports[p];
        let len = q.frame.len();
        let last_bit = port.begin(len, q.charge, at, port.gbps);
        if let Some(tl) = &self.timeline {
            tl.depart(p, &q.frame, q.since, at, last_bit - at);
        }
        match port.owner {
            Some(s) if self.lazy && port.waiting() == 0 && port.samples.is_none() => {
                let key = out.reserve(p as u32);
                port.pending_done = Some(PendingDone { at: last_bit, key });
                let sw = &mut self.switches[s];
                sw.pending.push(p as u32);
                sw.earliest_pending = sw.earliest_pending.min(last_bit);
            }
            _ => out.act(NetAction::Schedule {
                at: last_bit,
                event: NetEvent(Ev::TxDone { port: p as u32 }),
            }),
        }
        self.depart(p, q.frame, at, out);
    }

    /// Port `p`'s frame starts at `at`: inject faults, capture it, pass it
    /// to the far end of the link.
    fn depart(&mut self, p: usize, frame: Vec<u8>, at: SimTime, out: &mut impl NetSink) {
        // Ports 0..hosts are the hosts' uplinks.
        if self.stopped(p, at) {
            self.faults.stopped += 1;
            return self.discard(frame);
        }
        let port = &mut self.ports[p];
        let mut first_bit = at + port.propagation;
        if port.faults.is_none() && port.capture.is_none() {
            // The common case: no fault to draw, no capture to write.
            let peer = port.peer;
            return self.hand_over(peer, frame, first_bit, out);
        }
        let len = frame.len();
        let mut frame = frame;
        let mut duplicate = false;
        if let Some(rng) = &mut port.faults {
            match faults::apply(rng, &self.cfg.faults, &mut frame, &mut self.faults) {
                Fate::Lost => return self.discard(frame),
                Fate::Arrives {
                    duplicate: d,
                    extra_delay,
                } => {
                    duplicate = d;
                    first_bit += extra_delay;
                }
            }
        }
        let (peer, capture) = (port.peer, port.capture);
        let gbps = port.gbps;
        let copy = duplicate.then(|| {
            let mut copy = self.discarded.pop().unwrap_or_default();
            copy.clear();
            copy.extend_from_slice(&frame);
            copy
        });
        self.record(capture, at, &frame);
        self.hand_over(peer, frame, first_bit, out);
        if let Some(copy) = copy {
            let gap = wire_time(len, gbps);
            self.record(capture, at + gap, &copy);
            self.hand_over(peer, copy, first_bit + gap, out);
        }
    }

    /// `frame`'s first bit reaches `peer` at `first_bit`.
    #[inline]
    fn hand_over(
        &mut self,
        peer: Endpoint,
        frame: Vec<u8>,
        first_bit: SimTime,
        out: &mut impl NetSink,
    ) {
        match peer {
            Endpoint::Host(host) => {
                if self.stopped(host, first_bit) {
                    self.faults.stopped += 1;
                    return self.discard(frame);
                }
                self.delivered += 1;
                self.delivered_bytes += frame.len() as u64;
                out.act(NetAction::Deliver {
                    host,
                    frame,
                    first_bit,
                });
            }
            Endpoint::Switch(s) => out.act(NetAction::Schedule {
                at: first_bit + self.forwarding,
                event: NetEvent(Ev::Arrive {
                    switch: s as u32,
                    frame,
                }),
            }),
        }
    }

    /// A dropped frame's buffer, kept for reuse.
    fn discard(&mut self, frame: Vec<u8>) {
        if self.discarded.len() < MAX_DISCARDED {
            self.discarded.push(frame);
        }
    }

    /// Moves the buffers of frames dropped so far to `pool` while it holds
    /// fewer than `max` (the rest are freed): a caller that recycles the
    /// frames it delivers (to the hosts that send) takes these too.
    #[inline(always)]
    pub fn take_discarded(&mut self, pool: &mut Vec<Vec<u8>>, max: usize) {
        if !self.discarded.is_empty() {
            self.move_discarded(pool, max);
        }
    }

    #[inline(never)]
    fn move_discarded(&mut self, pool: &mut Vec<Vec<u8>>, max: usize) {
        let room = max.saturating_sub(pool.len()).min(self.discarded.len());
        let from = self.discarded.len() - room;
        pool.extend(self.discarded.drain(from..));
        self.discarded.clear();
    }

    fn record(&mut self, capture: Option<Capture>, at: SimTime, frame: &[u8]) {
        let Some(Capture(i)) = capture else { return };
        let Some(w) = &mut self.captures[i] else {
            return;
        };
        if let Err(e) = w.record(at.fs(), frame, self.present.0.fs()) {
            self.capture_error.get_or_insert(e);
            self.captures[i] = None;
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> NetworkStats {
        let switches: Vec<SwitchStats> = self.switches.iter().map(|s| s.stats).collect();
        let mut total = SwitchStats::default();
        for s in &switches {
            total.add(s);
        }
        NetworkStats {
            sent_frames: self.sent,
            delivered_frames: self.delivered,
            delivered_bytes: self.delivered_bytes,
            switches,
            total,
            faults: self.faults,
        }
    }

    fn port_index(&self, port: PortRef) -> usize {
        assert!(
            port.switch < self.switches.len() && port.port < self.topo.ports(port.switch),
            "no port {port:?}"
        );
        self.switches[port.switch].first_port + port.port
    }

    /// Counters of one switch port.
    pub fn port_stats(&self, port: PortRef) -> PortStats {
        self.ports[self.port_index(port)].stats
    }

    /// Counters of a host's uplink (the NIC's side of its link).
    pub fn uplink_stats(&self, host: HostId) -> PortStats {
        self.ports[host].stats
    }

    /// The switch output port that feeds `host` (its downlink): the usual
    /// bottleneck of an incast. `None` on a direct link (no switch).
    pub fn host_downlink(&self, host: HostId) -> Option<PortRef> {
        self.topo.attachment(host)
    }

    /// From now on, records `(time, bytes held)` at every change of that
    /// port's occupancy (queued and in flight, trimmed headers included).
    pub fn watch_queue(&mut self, port: PortRef) {
        let i = self.port_index(port);
        self.ports[i].samples.get_or_insert_with(Vec::new);
    }

    /// What [`Network::watch_queue`] recorded (empty if not watched).
    pub fn queue_samples(&self, port: PortRef) -> &[(SimTime, u64)] {
        self.ports[self.port_index(port)]
            .samples
            .as_deref()
            .unwrap_or(&[])
    }

    /// Writes every frame crossing the link between `host` and its switch,
    /// both directions, to `w`: after fault injection (lost frames are not
    /// written, duplicates are), timestamped when the first bit leaves.
    /// Records are written in time order ([`crate::capture`]). A second
    /// capture of the same host replaces the first.
    pub fn capture(&mut self, host: HostId, w: PcapWriter<Box<dyn Write + Send>>) {
        let c = Some(Capture(self.captures.len()));
        self.captures.push(Some(OrderedCapture::new(w)));
        // The port that feeds the host: its switch's, or the peer's uplink.
        let down = match self.topo.attachment(host) {
            Some(downlink) => self.port_index(downlink),
            // A direct link: the other host's uplink (hosts 0 and 1).
            None => 1 - host,
        };
        self.ports[host].capture = c;
        self.ports[down].capture = c;
    }

    /// Flushes and closes every capture; returns the first error any
    /// capture met (a capture stops at its first error).
    pub fn finish_capture(&mut self) -> io::Result<()> {
        for port in &mut self.ports {
            port.capture = None;
        }
        for mut w in self.captures.drain(..).flatten() {
            if let Err(e) = w.finish() {
                self.capture_error.get_or_insert(e);
            }
        }
        match self.capture_error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The longest a `len`-byte frame from host `a` can take to reach host
    /// `b` without being dropped: [`Network::idle_one_way`] plus, at every
    /// switch output on the path, a full queue ahead of it (the data buffer
    /// and the trimmed-header allowance, as 64-byte frames, the most
    /// framing a buffer can hold) draining at the port's rate. With the
    /// default 1 MiB per port at 200 Gb/s that is 55 us per hop. A frame
    /// that has not arrived by then was dropped. Assumption: strict
    /// priorities are left out (a low band can wait longer while higher
    /// bands keep arriving; no bound exists for that).
    pub fn worst_one_way(&self, a: HostId, b: HostId, len: usize) -> SimDuration {
        assert!(a < self.hosts() && b < self.hosts(), "hosts {a}, {b}");
        let queue_bytes = self.cfg.switch.buffer_bytes + self.cfg.switch.trim_queue_bytes;
        let min_frame = nanopu_wire::frame::HEADER_LEN as u64;
        let frames = queue_bytes.div_ceil(min_frame);
        let mut total = self.idle_one_way(a, b, len);
        let mut p = a;
        loop {
            let port = &self.ports[p];
            if port.owner.is_some() {
                let drain = wire_time(min_frame as usize, port.gbps)
                    .0
                    .saturating_mul(frames);
                total = total + SimDuration(drain);
            }
            match port.peer {
                Endpoint::Host(_) => return total,
                Endpoint::Switch(s) => {
                    let local = match self.topo.route(s, b) {
                        Some(LocalRoute::Port(x)) => x,
                        Some(LocalRoute::Spread { first, .. }) => first,
                        None => return total,
                    };
                    p = self.switches[s].first_port + local;
                }
            }
        }
    }

    /// Latency from the first bit of a `len`-byte frame leaving host `a` to
    /// its last bit reaching host `b`, on an idle network: one serialization
    /// (switches cut through), every link's propagation delay and every
    /// switch's forwarding latency on the path. Experiments use it for ideal
    /// completion times and RTTs.
    pub fn idle_one_way(&self, a: HostId, b: HostId, len: usize) -> SimDuration {
        assert!(a < self.hosts() && b < self.hosts(), "hosts {a}, {b}");
        let mut total = SimDuration::serialization(len as u64, self.gbps);
        let mut p = a;
        loop {
            let port = &self.ports[p];
            total = total + port.propagation;
            match port.peer {
                Endpoint::Host(_) => return total,
                Endpoint::Switch(s) => {
                    total = total + self.forwarding;
                    let local = match self.topo.route(s, b) {
                        Some(LocalRoute::Port(x)) => x,
                        Some(LocalRoute::Spread { first, .. }) => first,
                        None => return total,
                    };
                    p = self.switches[s].first_port + local;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worst_one_way_adds_a_full_queue_per_switch_port() {
        let mut cfg = NetworkConfig::default();
        cfg.switch.buffer_bytes = 64 * 1000;
        cfg.switch.trim_queue_bytes = 64 * 24;
        // One switch: one full queue of 1024 64-byte frames at 200 Gb/s,
        // 3.36 ns each on the wire with preamble and gap.
        let net = Network::new(&cfg).unwrap();
        let extra = net.worst_one_way(0, 1, 1088).0 - net.idle_one_way(0, 1, 1088).0;
        assert_eq!(extra, SimDuration::from_ps(1024 * 3_360).0);
        // Leaf-spine, hosts on different leaves: three switch ports.
        cfg.topology = crate::TopologyConfig::LeafSpine {
            leaves: 2,
            spines: 2,
            hosts_per_leaf: 2,
        };
        let net = Network::new(&cfg).unwrap();
        let extra = net.worst_one_way(0, 3, 64).0 - net.idle_one_way(0, 3, 64).0;
        assert_eq!(extra, SimDuration::from_ps(3 * 1024 * 3_360).0);
        let extra = net.worst_one_way(0, 1, 64).0 - net.idle_one_way(0, 1, 64).0;
        assert_eq!(extra, SimDuration::from_ps(1024 * 3_360).0, "same leaf");
    }

    #[test]
    fn events_are_small() {
        // A frame's Vec and a tag: events move frames, never copy them.
        assert!(std::mem::size_of::<NetEvent>() <= 32);
    }

    #[test]
    fn bad_configuration_is_an_error() {
        let mut cfg = NetworkConfig::default();
        cfg.link.gbps = 0;
        assert!(
            matches!(Network::new(&cfg), Err(e) if e.to_string().starts_with("network.link.gbps = 0"))
        );
    }
}
