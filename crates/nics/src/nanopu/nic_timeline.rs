//! The NIC's timeline probes (`--timeline`, `nanopu_timeline`): one track
//! per stage of nanoPU Fig. 1 and one per core context, spans per message.
//!
//! [`NanoNic`](super::NanoNic) holds an `Option<Box<NicTimeline>>` and calls
//! these only when it is `Some`. Receive: wire in (MAC and serial I/O),
//! ingress (the transport's ingress pipeline), reassembly (from the first
//! packet's ingress to the whole message), transport (the receive-side
//! latency after it), core selection (global RX queue, JBSQ, dispatch into
//! the core's RX FIFO), then the thread: from when the message is at the
//! head of its context's RX FIFO, visible, and the previous one is done, to
//! its `lnic_msg_done`. Transmit: TX queue, packetization, egress, wire out.
//! A message a context sends while serving a request joins the request's
//! flow (a reply); any other starts a flow of its own.

use nanopu_sim::{SimDuration, SimTime};
use nanopu_timeline::{packet_key, FlowId, Timeline, Track};
use std::collections::{HashMap, VecDeque};

/// One context of one core: the messages delivered to it, not yet done.
#[derive(Debug)]
struct ContextLine {
    track: Track,
    /// (flow, visible from), in delivery order.
    queue: VecDeque<(FlowId, SimTime)>,
    last_done: SimTime,
}

/// The NIC's tracks and the per-message state its spans need.
#[derive(Debug)]
pub struct NicTimeline {
    tl: Timeline,
    pid: u32,
    wire_in: Track,
    ingress: Track,
    reassembly: Track,
    transport: Track,
    core_selection: Track,
    tx_queue: Track,
    packetization: Track,
    egress: Track,
    wire_out: Track,
    contexts: HashMap<(usize, u16), ContextLine>,
    /// Message key -> ingress end of its first packet.
    reassembly_from: HashMap<u64, SimTime>,
    /// The flow of the frame being received (set by `frame_in`).
    pub(crate) rx_flow: FlowId,
    rx_key: u64,
    /// Flow -> when it left the transport for core selection.
    ready_at: HashMap<FlowId, SimTime>,
    /// Messages from the cores not yet seen as packets: (context, flow, at
    /// the transport).
    pending_tx: VecDeque<(u16, FlowId, SimTime)>,
    /// Sent message key -> (flow, at the transport, last seen).
    tx_flows: HashMap<u64, (FlowId, SimTime, SimTime)>,
}

/// A sent key not seen for this long names a new message.
const TX_STALE: SimDuration = SimDuration::from_ns(500_000);

impl NicTimeline {
    /// The tracks of the NIC of process `pid` (a host).
    pub fn new(tl: Timeline, pid: u32) -> NicTimeline {
        let t = |name: &str| tl.track(pid, name);
        NicTimeline {
            wire_in: t("nic: wire in (MAC, serial I/O)"),
            ingress: t("nic: ingress"),
            reassembly: t("nic: reassembly"),
            transport: t("nic: transport"),
            core_selection: t("nic: core selection"),
            tx_queue: t("nic: tx queue"),
            packetization: t("nic: packetization"),
            egress: t("nic: egress"),
            wire_out: t("nic: wire out (MAC, serial I/O)"),
            tl,
            pid,
            contexts: HashMap::new(),
            reassembly_from: HashMap::new(),
            rx_flow: 0,
            rx_key: 0,
            ready_at: HashMap::new(),
            pending_tx: VecDeque::new(),
            tx_flows: HashMap::new(),
        }
    }

    /// The timeline this NIC records into.
    pub fn timeline(&self) -> &Timeline {
        &self.tl
    }

    /// A data frame reached the NIC at `first_bit`, in it at
    /// `in_nic`, through ingress at `ingress_done`.
    pub(crate) fn frame_in(
        &mut self,
        frame: &[u8],
        first_bit: SimTime,
        in_nic: SimTime,
        ingress_done: SimTime,
    ) {
        self.rx_flow = 0;
        let Some((key, true)) = packet_key(frame) else {
            return;
        };
        let flow = self.tl.flow_of_key(key, first_bit);
        self.rx_flow = flow;
        self.rx_key = key;
        if flow == 0 {
            return;
        }
        let len = frame.len() as u64;
        self.tl.span(
            self.wire_in,
            "wire in",
            first_bit,
            in_nic,
            flow,
            "bytes",
            len,
        );
        self.tl
            .span(self.ingress, "ingress", in_nic, ingress_done, flow, "", 0);
        self.reassembly_from.entry(key).or_insert(ingress_done);
    }

    /// The received message of the current frame is whole at `at`; the
    /// transport hands it on at `ready`. Returns its flow.
    pub(crate) fn message_whole(&mut self, at: SimTime, ready: SimTime, len: u16) -> FlowId {
        let (flow, key) = (self.rx_flow, self.rx_key);
        let from = self.reassembly_from.remove(&key).unwrap_or(at);
        self.tl.forget(key);
        if flow != 0 {
            self.tl.span(
                self.reassembly,
                "reassembly",
                from,
                at,
                flow,
                "bytes",
                len as u64,
            );
            self.tl
                .span(self.transport, "transport", at, ready, flow, "", 0);
            self.ready_at.insert(flow, ready);
        }
        flow
    }

    fn context(&mut self, core: usize, context: u16) -> &mut ContextLine {
        let (tl, pid) = (&self.tl, self.pid);
        self.contexts
            .entry((core, context))
            .or_insert_with(|| ContextLine {
                track: tl.track(pid, &format!("core {core} context {context}")),
                queue: VecDeque::new(),
                last_done: SimTime::ZERO,
            })
    }

    /// Message `flow` goes into `core`'s RX FIFO for `context`, visible at
    /// `visible`.
    pub(crate) fn delivered(&mut self, flow: FlowId, core: usize, context: u16, visible: SimTime) {
        // Untraced messages are queued too: a reply finds the request it
        // answers (and stays untraced with it).
        if let Some(ready) = self.ready_at.remove(&flow).filter(|_| flow != 0) {
            self.tl.span(
                self.core_selection,
                "core selection",
                ready,
                visible,
                flow,
                "core",
                core as u64,
            );
        }
        self.context(core, context).queue.push_back((flow, visible));
    }

    /// `context` on `core` reported its message done at `at`.
    pub(crate) fn done(&mut self, core: usize, context: u16, at: SimTime) {
        let tl = self.tl.clone();
        let line = self.context(core, context);
        if let Some((flow, visible)) = line.queue.pop_front() {
            let start = visible.max(line.last_done).min(at);
            tl.span(
                line.track,
                "thread",
                start,
                at,
                flow,
                "context",
                context as u64,
            );
        }
        line.last_done = at;
    }

    /// `context` on `core` wrote a message at `at`; it reaches the
    /// transport at `to_transport`.
    pub(crate) fn sent_by_core(
        &mut self,
        core: usize,
        context: u16,
        at: SimTime,
        to_transport: SimTime,
    ) {
        // A reply: the message the context is serving (visible by now).
        let serving = self
            .contexts
            .get(&(core, context))
            .and_then(|l| l.queue.front())
            .filter(|(_, visible)| *visible <= at)
            .map(|&(flow, _)| flow);
        let flow = match serving {
            Some(f) => f,
            None => self.tl.new_flow(),
        };
        self.tl
            .span(self.tx_queue, "tx queue", at, to_transport, flow, "", 0);
        // Untraced too, so that its packets are known as untraced.
        self.pending_tx.push_back((context, flow, to_transport));
        // Nothing sent matched it (a message the transport refused).
        while self.pending_tx.len() > 64 {
            self.pending_tx.pop_front();
        }
    }

    /// A frame of ours leaves egress at `egress_done` (after `egress`) and
    /// the MAC at `ready`.
    pub(crate) fn transmit(
        &mut self,
        frame: &[u8],
        egress: SimDuration,
        egress_done: SimTime,
        ready: SimTime,
    ) {
        let Some((key, true)) = packet_key(frame) else {
            return;
        };
        let context = (key >> 16) as u16;
        let (flow, at_transport) = match self.tx_flows.get_mut(&key) {
            Some((flow, t, seen)) if egress_done.fs() < (*seen + TX_STALE).fs() => {
                *seen = egress_done;
                (*flow, *t)
            }
            _ => {
                let Some(i) = self.pending_tx.iter().position(|p| p.0 == context) else {
                    return;
                };
                let (_, flow, t) = self.pending_tx.remove(i).expect("found above");
                self.tx_flows.insert(key, (flow, t, egress_done));
                self.tl.claim(key, flow, egress_done);
                (flow, t)
            }
        };
        if flow == 0 {
            return;
        }
        let egress_start = SimTime(egress_done.fs().saturating_sub(egress.fs()));
        self.tl.span(
            self.packetization,
            "packetization",
            at_transport.min(egress_start),
            egress_start,
            flow,
            "",
            0,
        );
        self.tl.span(
            self.egress,
            "egress",
            egress_start,
            egress_done,
            flow,
            "",
            0,
        );
        self.tl.span(
            self.wire_out,
            "wire out",
            egress_done,
            ready,
            flow,
            "bytes",
            frame.len() as u64,
        );
    }
}
