//! The hosts on a network, each behind one narrow interface, [`HostModel`],
//! that the co-simulation loops ([`crate::cluster`], and the partitioned
//! one for built-in hosts) drive and nothing else: a frame in, one of its
//! own events due, "run up to this time" and "when could you next send",
//! and a drain of what it asked for (its events, notes for the records,
//! frames for the network) into a [`HostSink`].
//!
//! - [`NodeHost`]: a node, its NIC (any [`crate::nics`] design) and its clock.
//! - [`BuiltinHost`]: a NIC's transport driven by a workload, no cores.
//! - [`ClientHost`]: the built-in load generator ([`crate::client`]).
//!
//! [`Host`] is one of the three, dispatched by a `match` (no virtual call
//! per event).

use crate::client::{Client, ClientEvent, ClientIo, Start};
use crate::nics::{Cores, NicIo, NicNote, NodeNic, NodeNicEvent};
use nanopu_nics::mac::Mac;
use nanopu_node::{Node, NodeError};
use nanopu_sim::{Reserved, SimDuration, SimTime};
use nanopu_transport::{NanoTransport, OutMessage, TransportAction, TransportEvent};
use std::collections::VecDeque;

/// Something a host tells the records (it never changes what the host
/// does).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostNote {
    /// A node's program sent its boot message (a message to 0.0.0.0);
    /// `on_wire`: it crosses the wire (a direct link), else it stops at the
    /// wiring, which starts the load generators waiting for it.
    Booted { at: SimTime, on_wire: bool },
    /// A node's core sent a message of `len` bytes to `dst_ip`.
    CoreSent { dst_ip: u32, len: u16, at: SimTime },
    /// A node's NIC put a message of `len` bytes from `src_ip` into a core;
    /// `first_word` is its first payload word, if it has one.
    CoreDelivered {
        src_ip: u32,
        len: u16,
        first_word: Option<u64>,
        at: SimTime,
    },
    /// A node's NIC could not put a message into a core's RX FIFO.
    DeliveryFailed,
    /// A built-in host's transport handed on a whole message from `src_ip`;
    /// `index` is its first payload word (a workload message's index) if
    /// it has eight bytes or more.
    Delivered {
        src_ip: u32,
        index: Option<u64>,
        at: SimTime,
    },
    /// A built-in host's transport gave up on the message tagged `tag`.
    Failed { tag: u64 },
}

impl HostNote {
    /// The node's view of a note of its NIC.
    fn of_nic(note: NicNote, boot_on_wire: bool) -> HostNote {
        match note {
            NicNote::Booted { at } => HostNote::Booted {
                at,
                on_wire: boot_on_wire,
            },
            NicNote::Sent { dst_ip, len, at } => HostNote::CoreSent { dst_ip, len, at },
            NicNote::Delivered {
                src_ip,
                len,
                first_word,
                at,
            } => HostNote::CoreDelivered {
                src_ip,
                len,
                first_word,
                at,
            },
            NicNote::DeliveryFailed => HostNote::DeliveryFailed,
        }
    }
}

/// Where a host's requests go (the loop's event queue, records and
/// network), in the order a host hands them over: its own events first,
/// then its notes, then its frames.
pub trait HostSink<E> {
    /// The next place in the event order, taken now for an event
    /// scheduled later ([`HostSink::schedule_reserved`]).
    fn reserve(&mut self) -> Reserved;
    /// Hand `event` back at `at`, in the place `key` of the event order.
    fn schedule_reserved(&mut self, at: SimTime, key: Reserved, event: E);
    /// Hand `event` back to the host at `at` (in the next place of the
    /// event order).
    #[inline]
    fn schedule(&mut self, at: SimTime, event: E) {
        let key = self.reserve();
        self.schedule_reserved(at, key, event);
    }
    fn note(&mut self, note: HostNote);
    /// A frame left the host's transport or NIC at `at` (recorded when
    /// transmit times are: `Cluster::record_transmits`).
    fn left(&mut self, _at: SimTime) {}
    /// `frame` is ready for the host's link at `ready`.
    fn transmit(&mut self, frame: Vec<u8>, ready: SimTime);
}

/// A host of the network, as the co-simulation loop sees it.
pub trait HostModel {
    /// The host's own timed events.
    type Event;

    /// A frame reaches the host at `at`: its first bit, or its last for a
    /// host that takes frames whole ([`HostModel::whole_frames_gbps`]).
    fn frame_in(&mut self, frame: &[u8], at: SimTime);

    /// An event the host scheduled comes due at `now`.
    fn handle(&mut self, event: Self::Event, now: SimTime);

    /// Hands everything asked for since the last drain to `out`.
    fn drain(&mut self, out: &mut impl HostSink<Self::Event>);

    /// Lets the host compute up to `limit` (a node's cores; nothing for a
    /// host that only reacts to events).
    fn advance(&mut self, _limit: SimTime) -> Result<(), NodeError> {
        Ok(())
    }

    /// The earliest time the host could send something without an event
    /// reaching it first (`None`: only events make it send).
    fn horizon(&self) -> Option<SimTime> {
        None
    }

    /// Whether the host can still compute before `until` ([`HostModel::advance`]).
    fn can_run(&self, _until: SimTime) -> bool {
        false
    }

    /// How far the host's own clock has gone, if it has one.
    fn clock(&self) -> Option<SimTime> {
        None
    }

    /// The host's exit code, if its program exited.
    fn exited(&self) -> Option<u64> {
        None
    }

    /// Whether the host has done all it was asked to (a load generator:
    /// every request answered).
    fn done(&self) -> bool {
        true
    }

    /// The link rate of a host that takes frames whole, at their last bit.
    fn whole_frames_gbps(&self) -> Option<u64> {
        None
    }

    /// Whether [`HostModel::recycle`] would take a buffer now.
    fn wants_frames(&self) -> bool {
        false
    }

    /// Takes a consumed frame buffer for reuse; returns it if not taken.
    fn recycle(&mut self, frame: Vec<u8>) -> Option<Vec<u8>> {
        Some(frame)
    }
}

/// Hands spare frame buffers from `spare` to `host` until it takes no
/// more; an empty `spare` is first refilled with `refill`.
pub(crate) fn top_up(
    host: &mut impl HostModel,
    spare: &mut Vec<Vec<u8>>,
    refill: impl FnOnce(&mut Vec<Vec<u8>>),
) {
    if !host.wants_frames() {
        return;
    }
    if spare.is_empty() {
        refill(spare);
    }
    while let Some(f) = spare.pop() {
        if let Some(f) = host.recycle(f) {
            spare.push(f);
            return;
        }
    }
}

/// A node, its NIC and its clock.
pub struct NodeHost {
    pub node: Node,
    pub nic: NodeNic,
    /// The cores' clock period.
    pub period: SimDuration,
    pub(crate) io: NicIo<NodeNicEvent>,
    /// The cores wait for something only the network can bring.
    pub deadlocked: bool,
    /// Pending NIC events, by the slot their event names (NIC events are
    /// large; kept out of line, the loop's events stay small), and the
    /// free slots.
    pending: Vec<Option<NodeNicEvent>>,
    free: Vec<u32>,
}

impl NodeHost {
    pub fn new(node: Node, nic: NodeNic) -> NodeHost {
        let period = SimDuration::clock_period_mhz(node.cfg().core.clock_mhz as u64);
        NodeHost {
            node,
            nic,
            period,
            io: NicIo::default(),
            deadlocked: false,
            pending: Vec::new(),
            free: Vec::new(),
        }
    }

    fn cores(&mut self) -> (Cores<'_>, &mut NodeNic, &mut NicIo<NodeNicEvent>) {
        (
            Cores {
                node: &mut self.node,
                period: self.period,
            },
            &mut self.nic,
            &mut self.io,
        )
    }

    /// Whether the NIC has asked for nothing not yet drained.
    pub fn idle_io(&self) -> bool {
        self.io.is_empty()
    }

    /// Runs the cores up to `limit` (unless the program has exited), then
    /// lets the NIC take what they sent.
    pub fn advance(&mut self, limit: SimTime) -> Result<(), NodeError> {
        if self.node.exit().is_some() {
            return Ok(());
        }
        match self.node.run(limit.to_cycle_ceil(self.period)) {
            Ok(_) => self.deadlocked = false,
            // Every core waits for a message: the network may bring one.
            Err(NodeError::Deadlock(_)) => self.deadlocked = true,
            Err(e) => return Err(e),
        }
        let (mut cores, nic, io) = self.cores();
        nic.take_from_cores(&mut cores, io);
        Ok(())
    }

    /// The earliest time the cores could still send something, if they can.
    pub fn output_horizon(&self) -> Option<SimTime> {
        if self.node.exit().is_some() {
            return None;
        }
        self.node
            .output_horizon()
            .map(|c| SimTime::from_cycle(c, self.period))
    }

    /// How far the node's clock has gone: its hart furthest ahead.
    pub fn clock(&self) -> SimTime {
        SimTime::from_cycle(self.node.latest_cycle(), self.period)
    }

    /// Whether the cores can still do something before `until`.
    pub fn can_run(&self, until: SimTime) -> bool {
        if self.node.exit().is_some() {
            return false;
        }
        let until = until.to_cycle_ceil(self.period);
        self.node.lead_cycle().is_some_and(|c| c < until)
            || self.node.next_wake_cycle().is_some_and(|c| c < until)
    }

    pub fn frame_in(&mut self, frame: &[u8], first_bit: SimTime) {
        let (mut cores, nic, io) = self.cores();
        nic.frame_in(frame, first_bit, &mut cores, io);
    }

    pub fn handle(&mut self, event: NodeNicEvent, now: SimTime) {
        let (mut cores, nic, io) = self.cores();
        nic.handle(event, now, &mut cores, io);
    }

    /// The NIC's counters, with those of its host-side device(s)
    /// ([`crate::nics::NicDesign::stats_on`]).
    pub fn nic_stats(&self) -> serde_json::Value {
        self.nic.stats_on(&self.node)
    }
}

impl HostModel for NodeHost {
    /// The slot of a pending NIC event.
    type Event = u32;

    fn frame_in(&mut self, frame: &[u8], first_bit: SimTime) {
        NodeHost::frame_in(self, frame, first_bit)
    }

    fn handle(&mut self, slot: u32, now: SimTime) {
        let e = self.pending[slot as usize]
            .take()
            .expect("a pending NIC event's slot is full");
        self.free.push(slot);
        NodeHost::handle(self, e, now)
    }

    fn drain(&mut self, out: &mut impl HostSink<u32>) {
        if self.io.is_empty() {
            return;
        }
        // Whether the node's boot message crosses the wire is its own
        // setting (its NIC's view of the world).
        let boot_on_wire = self.io.boot_on_wire;
        let mut requests = self.io.drain();
        for (at, e) in requests.schedule.by_ref() {
            let slot = match self.free.pop() {
                Some(slot) => {
                    self.pending[slot as usize] = Some(e);
                    slot
                }
                None => {
                    self.pending.push(Some(e));
                    (self.pending.len() - 1) as u32
                }
            };
            out.schedule(at, slot);
        }
        for note in requests.notes.by_ref() {
            out.note(HostNote::of_nic(note, boot_on_wire));
        }
        for (frame, ready) in requests.transmit.by_ref() {
            out.left(ready);
            out.transmit(frame, ready);
        }
    }

    fn advance(&mut self, limit: SimTime) -> Result<(), NodeError> {
        NodeHost::advance(self, limit)
    }

    fn horizon(&self) -> Option<SimTime> {
        self.output_horizon()
    }

    fn can_run(&self, until: SimTime) -> bool {
        !self.deadlocked && NodeHost::can_run(self, until)
    }

    fn clock(&self) -> Option<SimTime> {
        Some(NodeHost::clock(self))
    }

    fn exited(&self) -> Option<u64> {
        self.node.exit().map(|(code, _)| code)
    }

    fn wants_frames(&self) -> bool {
        self.nic.wants_frames()
    }

    fn recycle(&mut self, frame: Vec<u8>) -> Option<Vec<u8>> {
        self.nic.recycle(frame)
    }
}

/// A built-in host: a NIC's transport and MAC, no cores. A message "from
/// the core" enters the transport at the time the workload names
/// ([`BuiltinHost::send_workload`]); a delivered message is noted when the
/// reassembly module hands it on.
pub struct BuiltinHost {
    pub transport: NanoTransport,
    pub mac: Mac,
    actions: Vec<TransportAction>,
}

impl BuiltinHost {
    pub fn new(transport: NanoTransport, mac: Mac) -> BuiltinHost {
        BuiltinHost {
            transport,
            mac,
            actions: Vec::new(),
        }
    }

    /// Workload message `index`, `len` bytes to `dst_ip`, enters the
    /// transport at `now`. Its payload carries the index in its first word,
    /// by which its delivery is matched with it.
    pub fn send_workload(&mut self, index: usize, dst_ip: u32, len: u16, now: SimTime) {
        let payload = workload_payload(self.transport.payload_buffer(), index, len);
        let msg = OutMessage {
            dst_ip,
            dst_port: 0,
            src_port: 0,
            len,
            payload,
            tag: index as u64,
        };
        self.transport.send_message(msg, now, &mut self.actions);
    }
}

/// The payload of workload message `i`, `len` bytes, built in `payload`
/// (an empty buffer): the message's index in its first word, by which a
/// delivery is matched with its message, and zeros after it (bytes past
/// the words are sent as zeros). The bytes mean nothing else; a one-word
/// payload spares the host writing a message-sized buffer at the send and
/// copying it into every packet (until session 16 the words counted up:
/// leaf-spine-64, with messages up to 16 KB, ran ~7 % slower).
fn workload_payload(mut payload: Vec<u64>, i: usize, len: u16) -> Vec<u64> {
    if len > 0 {
        payload.push(i as u64);
    }
    payload
}

impl HostModel for BuiltinHost {
    type Event = TransportEvent;

    fn frame_in(&mut self, frame: &[u8], first_bit: SimTime) {
        let in_nic = self.mac.received(first_bit, frame.len());
        self.transport.packet_in(frame, in_nic, &mut self.actions);
    }

    fn handle(&mut self, event: TransportEvent, now: SimTime) {
        self.transport.handle(event, now, &mut self.actions);
    }

    fn drain(&mut self, out: &mut impl HostSink<TransportEvent>) {
        for a in &self.actions {
            if let TransportAction::Schedule { at, event } = *a {
                out.schedule(at, event);
            }
        }
        for a in self.actions.drain(..) {
            match a {
                TransportAction::Deliver { msg, at } => {
                    out.note(HostNote::Delivered {
                        src_ip: msg.src_ip,
                        index: (msg.len >= 8).then(|| msg.payload[0]),
                        at,
                    });
                    self.transport.recycle_payload(msg.payload);
                }
                TransportAction::Transmit { frame, at } => {
                    out.left(at);
                    out.transmit(frame, self.mac.transmit_ready(at));
                }
                TransportAction::Schedule { .. } | TransportAction::Sent { .. } => {}
                TransportAction::Failed { outcome, .. } => {
                    out.note(HostNote::Failed { tag: outcome.tag })
                }
            }
        }
    }

    fn wants_frames(&self) -> bool {
        self.transport.wants_frames()
    }

    fn recycle(&mut self, frame: Vec<u8>) -> Option<Vec<u8>> {
        self.transport.recycle(frame)
    }
}

/// An event of a [`ClientHost`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientHostEvent {
    /// The load generator starts.
    Start,
    /// Its next open-loop arrival.
    Tick,
    /// Its earliest pending timeout (the head of its FIFO of deadlines) is
    /// due.
    Timeout,
    /// A NACKed request's backoff is over (`[load] connections`).
    Resend,
}

/// The built-in load generator on a host of its own.
pub struct ClientHost {
    /// `None`: a host that only counts what reaches it.
    pub client: Option<Client>,
    /// The host it sends to.
    pub server: usize,
    /// More hosts an application sends to (`[[clients]] servers`): a client
    /// that starts at its servers' boot waits for all of them.
    pub more_servers: Vec<usize>,
    /// Its link's rate (frames are handed to it at their last bit).
    pub link_gbps: u64,
    /// When the server's boot message reached it, if it did.
    pub booted_at: Option<SimTime>,
    /// Frames that reached a host with no client.
    pub frames_to_nowhere: u64,
    io: ClientIo,
    /// Pending timeouts `(at, place in the event order, key)`, earliest
    /// first: only the first is in the loop's event queue (one event per
    /// client, not one per outstanding request).
    timeouts: VecDeque<(SimTime, Reserved, u64)>,
    /// The new head of `timeouts` to put in the queue, after the old one
    /// came due.
    rearm: Option<(SimTime, Reserved)>,
}

impl ClientHost {
    pub fn new(client: Option<Client>, server: usize, link_gbps: u64) -> ClientHost {
        ClientHost {
            client,
            server,
            more_servers: Vec::new(),
            link_gbps,
            booted_at: None,
            frames_to_nowhere: 0,
            io: ClientIo::default(),
            timeouts: VecDeque::new(),
            rearm: None,
        }
    }

    /// Whether every request has been answered (true with no client).
    pub fn done(&self) -> bool {
        self.client.as_ref().is_none_or(|c| c.done())
    }

    /// A frame whose last bit reached the client at `last_bit`.
    pub fn frame_in(&mut self, frame: &[u8], last_bit: SimTime) {
        let Some(c) = self.client.as_mut() else {
            self.frames_to_nowhere += 1;
            return;
        };
        if c.frame_in(frame, last_bit, &mut self.io) && self.booted_at.is_none() {
            self.booted_at = Some(last_bit);
        }
    }

    /// When the load generator starts by itself (`start = { at_ns }`).
    pub fn start_time(&self) -> Option<SimTime> {
        match self.client.as_ref()?.cfg.start {
            Start::AtNs(ns) => Some(SimTime::ZERO + SimDuration::from_ns(ns)),
            _ => None,
        }
    }

    /// Whether it starts at its servers' boot and `h` is one of them.
    pub fn waits_for_boot_of(&self, h: usize) -> bool {
        self.client
            .as_ref()
            .is_some_and(|x| matches!(x.cfg.start, Start::Boot))
            && self.servers().any(|s| s == h)
    }

    /// The hosts it sends to.
    pub fn servers(&self) -> impl Iterator<Item = usize> + Clone + '_ {
        std::iter::once(self.server).chain(self.more_servers.iter().copied())
    }

    /// Whether nothing has reached or left it yet.
    pub fn untouched(&self) -> bool {
        self.booted_at.is_none()
            && self.frames_to_nowhere == 0
            && self.timeouts.is_empty()
            && self.client.as_ref().is_none_or(|x| !x.started())
    }
}

impl HostModel for ClientHost {
    type Event = ClientHostEvent;

    fn frame_in(&mut self, frame: &[u8], last_bit: SimTime) {
        ClientHost::frame_in(self, frame, last_bit)
    }

    fn handle(&mut self, event: ClientHostEvent, now: SimTime) {
        let event = match event {
            ClientHostEvent::Start => None,
            ClientHostEvent::Tick => Some(ClientEvent::Tick),
            ClientHostEvent::Resend => Some(ClientEvent::Resend),
            ClientHostEvent::Timeout => {
                let (_, _, key) = self.timeouts.pop_front().expect("an armed timeout");
                // The next deadline takes the place in the event order it
                // was given when its request was sent.
                self.rearm = self.timeouts.front().map(|&(at, seq, _)| (at, seq));
                Some(ClientEvent::Timeout(key))
            }
        };
        if let Some(client) = self.client.as_mut() {
            match event {
                Some(e) => client.handle(e, now, &mut self.io),
                None => client.start(now, &mut self.io),
            }
        }
    }

    fn drain(&mut self, out: &mut impl HostSink<ClientHostEvent>) {
        if let Some((at, seq)) = self.rearm.take() {
            out.schedule_reserved(at, seq, ClientHostEvent::Timeout);
        }
        let mut requests = self.io.drain();
        for (at, e) in requests.schedule.by_ref() {
            match e {
                ClientEvent::Tick => out.schedule(at, ClientHostEvent::Tick),
                ClientEvent::Resend => out.schedule(at, ClientHostEvent::Resend),
                ClientEvent::Timeout(key) => {
                    // Deadlines are one timeout length after a send, so they
                    // come in time order: a FIFO, whose head alone is armed.
                    let seq = out.reserve();
                    debug_assert!(self.timeouts.back().is_none_or(|&(last, _, _)| last <= at));
                    if self.timeouts.is_empty() {
                        out.schedule_reserved(at, seq, ClientHostEvent::Timeout);
                    }
                    self.timeouts.push_back((at, seq, key));
                }
            }
        }
        for (frame, ready) in requests.transmit.by_ref() {
            out.transmit(frame, ready);
        }
    }

    fn done(&self) -> bool {
        ClientHost::done(self)
    }

    fn whole_frames_gbps(&self) -> Option<u64> {
        Some(self.link_gbps)
    }

    fn wants_frames(&self) -> bool {
        true
    }

    fn recycle(&mut self, frame: Vec<u8>) -> Option<Vec<u8>> {
        match self.client.as_mut() {
            Some(client) => client.recycle(frame),
            None => Some(frame),
        }
    }
}

/// An event of a [`Host`]: its variant's own.
#[derive(Clone, Copy, Debug)]
pub enum HostEvent {
    Node(u32),
    Builtin(TransportEvent),
    Client(ClientHostEvent),
}

/// A host of the network.
pub enum Host {
    Node(Box<NodeHost>),
    Builtin(Box<BuiltinHost>),
    Client(Box<ClientHost>),
}

/// A sink of [`HostEvent`]s taking one variant's events.
struct Wrap<'a, S, F>(&'a mut S, F);

impl<E, S: HostSink<HostEvent>, F: Fn(E) -> HostEvent> HostSink<E> for Wrap<'_, S, F> {
    #[inline]
    fn reserve(&mut self) -> Reserved {
        self.0.reserve()
    }
    #[inline]
    fn schedule_reserved(&mut self, at: SimTime, key: Reserved, event: E) {
        self.0.schedule_reserved(at, key, (self.1)(event))
    }
    #[inline]
    fn note(&mut self, note: HostNote) {
        self.0.note(note)
    }
    #[inline]
    fn left(&mut self, at: SimTime) {
        self.0.left(at)
    }
    #[inline]
    fn transmit(&mut self, frame: Vec<u8>, ready: SimTime) {
        self.0.transmit(frame, ready)
    }
}

/// Calls `$body` with the variant of `$host` bound to `$h`.
macro_rules! each_host {
    ($host:expr, |$h:ident| $body:expr) => {
        match $host {
            Host::Node($h) => $body,
            Host::Builtin($h) => $body,
            Host::Client($h) => $body,
        }
    };
}

impl HostModel for Host {
    type Event = HostEvent;

    #[inline]
    fn frame_in(&mut self, frame: &[u8], at: SimTime) {
        each_host!(self, |h| HostModel::frame_in(&mut **h, frame, at))
    }

    #[inline]
    fn handle(&mut self, event: HostEvent, now: SimTime) {
        match (self, event) {
            (Host::Node(h), HostEvent::Node(e)) => HostModel::handle(&mut **h, e, now),
            (Host::Builtin(h), HostEvent::Builtin(e)) => HostModel::handle(&mut **h, e, now),
            (Host::Client(h), HostEvent::Client(e)) => HostModel::handle(&mut **h, e, now),
            _ => unreachable!("an event goes back to the host that scheduled it"),
        }
    }

    #[inline]
    fn drain(&mut self, out: &mut impl HostSink<HostEvent>) {
        match self {
            Host::Node(h) => h.drain(&mut Wrap(out, HostEvent::Node)),
            Host::Builtin(h) => h.drain(&mut Wrap(out, HostEvent::Builtin)),
            Host::Client(h) => h.drain(&mut Wrap(out, HostEvent::Client)),
        }
    }

    fn advance(&mut self, limit: SimTime) -> Result<(), NodeError> {
        each_host!(self, |h| HostModel::advance(&mut **h, limit))
    }

    fn horizon(&self) -> Option<SimTime> {
        each_host!(self, |h| HostModel::horizon(&**h))
    }

    fn can_run(&self, until: SimTime) -> bool {
        each_host!(self, |h| HostModel::can_run(&**h, until))
    }

    fn clock(&self) -> Option<SimTime> {
        each_host!(self, |h| HostModel::clock(&**h))
    }

    fn exited(&self) -> Option<u64> {
        each_host!(self, |h| HostModel::exited(&**h))
    }

    fn done(&self) -> bool {
        each_host!(self, |h| HostModel::done(&**h))
    }

    fn whole_frames_gbps(&self) -> Option<u64> {
        each_host!(self, |h| HostModel::whole_frames_gbps(&**h))
    }

    #[inline]
    fn wants_frames(&self) -> bool {
        each_host!(self, |h| HostModel::wants_frames(&**h))
    }

    #[inline]
    fn recycle(&mut self, frame: Vec<u8>) -> Option<Vec<u8>> {
        each_host!(self, |h| HostModel::recycle(&mut **h, frame))
    }
}

impl Host {
    pub fn as_node(&self) -> Option<&NodeHost> {
        match self {
            Host::Node(n) => Some(n),
            _ => None,
        }
    }

    pub fn as_node_mut(&mut self) -> Option<&mut NodeHost> {
        match self {
            Host::Node(n) => Some(n),
            _ => None,
        }
    }

    pub fn as_client(&self) -> Option<&ClientHost> {
        match self {
            Host::Client(c) => Some(c),
            _ => None,
        }
    }

    pub fn as_builtin(&self) -> Option<&BuiltinHost> {
        match self {
            Host::Builtin(b) => Some(b),
            _ => None,
        }
    }

    pub fn as_builtin_mut(&mut self) -> Option<&mut BuiltinHost> {
        match self {
            Host::Builtin(b) => Some(b),
            _ => None,
        }
    }

    pub fn is_builtin(&self) -> bool {
        matches!(self, Host::Builtin(_))
    }

    /// What kind of host, for messages.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Host::Node(_) => "a node",
            Host::Builtin(_) => "a built-in traffic host",
            Host::Client(_) => "a load generator",
        }
    }

    /// The host's NanoTransport, if it runs one.
    pub fn transport(&self) -> Option<&NanoTransport> {
        match self {
            Host::Builtin(b) => Some(&b.transport),
            Host::Node(n) => n.nic.transport(),
            Host::Client(_) => None,
        }
    }

    /// Whether nothing has happened at the host but its cores running:
    /// nothing asked of it, nothing reached or left it.
    pub fn untouched(&self) -> bool {
        match self {
            Host::Node(n) => n.idle_io() && !n.deadlocked,
            Host::Client(c) => c.untouched(),
            Host::Builtin(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{LoadConfig, LoadMode};

    /// What a host handed over, in order.
    #[derive(Debug, PartialEq)]
    enum Call {
        Reserve(u64),
        Schedule(SimTime, u64, ClientHostEvent),
        Transmit(SimTime),
    }

    /// A sink that takes places in the event order from a queue, and
    /// names them by the order they were taken in.
    #[derive(Default)]
    struct Recorder {
        queue: nanopu_sim::EventQueue<()>,
        places: Vec<Reserved>,
        calls: Vec<Call>,
    }

    impl HostSink<ClientHostEvent> for Recorder {
        fn reserve(&mut self) -> Reserved {
            let key = self.queue.reserve();
            self.calls.push(Call::Reserve(self.places.len() as u64));
            self.places.push(key);
            key
        }
        fn schedule_reserved(&mut self, at: SimTime, key: Reserved, event: ClientHostEvent) {
            let place = self
                .places
                .iter()
                .position(|&k| k == key)
                .expect("reserved");
            self.calls.push(Call::Schedule(at, place as u64, event));
        }
        fn note(&mut self, _: HostNote) {}
        fn transmit(&mut self, _: Vec<u8>, ready: SimTime) {
            self.calls.push(Call::Transmit(ready));
        }
    }

    #[test]
    fn a_load_generator_arms_only_its_earliest_timeout_in_its_reserved_place() {
        let cfg = LoadConfig {
            mode: LoadMode::Closed { window: 3 },
            timeout_ns: 1_000,
            ..LoadConfig::default()
        };
        let client = Client::new(cfg, 2, 1, 1024, SimDuration::ZERO);
        let mut host = ClientHost::new(Some(client), 0, 100);
        let t0 = SimTime::ZERO;
        let deadline = t0 + SimDuration::from_ns(1_000);
        host.handle(ClientHostEvent::Start, t0);
        let mut out = Recorder::default();
        host.drain(&mut out);
        // Three requests: three places taken, the first deadline alone in
        // the queue (its events first, then its frames).
        assert_eq!(
            out.calls,
            vec![
                Call::Reserve(0),
                Call::Schedule(deadline, 0, ClientHostEvent::Timeout),
                Call::Reserve(1),
                Call::Reserve(2),
                Call::Transmit(t0),
                Call::Transmit(t0),
                Call::Transmit(t0),
            ]
        );
        // The first deadline passes unanswered: the second is armed in the
        // place it was given at its send, the request sent in its stead
        // takes a new place behind the others.
        out.calls.clear();
        host.handle(ClientHostEvent::Timeout, deadline);
        host.drain(&mut out);
        assert_eq!(
            out.calls,
            vec![
                Call::Schedule(deadline, 1, ClientHostEvent::Timeout),
                Call::Reserve(3),
                Call::Transmit(deadline),
            ]
        );
        assert_eq!(host.client.as_ref().unwrap().report.lost, 1);
        assert!(!host.untouched());
    }
}
