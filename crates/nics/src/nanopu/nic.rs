//! The nanoPU NIC (nanoPU Fig. 1): the fast path from the wire to the cores
//! and back, as a timed state machine.
//!
//! One pipeline. Receive: MAC and serial I/O ([`mac`](crate::mac)), the
//! transport's ingress pipeline (header checks, the NIC's layer-4 port
//! match and message size limit, the transport program), reassembly, the
//! application's global RX queue and JBSQ core selection
//! ([`core_selection`](super::core_selection)), the core's local RX FIFO.
//! Transmit: the core's local TX FIFO, the global TX queue, the
//! transport's packetization and egress pipeline, MAC and serial I/O.
//!
//! The transport is always NanoTransport (`nanopu_transport`): a reliable
//! program (NDP, Homa, Homa-Tr, one of your own) or, with
//! `transport.protocol = "none"`, the lossless program, whose stages cost
//! this configuration's `ingress_ps`, `reassembly_ps`, `packetize_ps` and
//! `egress_ps` and which sends a message's packets all at once (the link
//! spaces them).
//!
//! The NIC is driven through four inputs ([`NanoNic::frame_in`],
//! [`NanoNic::message_from_core`], [`NanoNic::core_command`],
//! [`NanoNic::handle`]) and answers with [`NicAction`]s; it owns no clock
//! and no queue of its own, so it can be tested alone. Stages are fixed
//! latencies and fully pipelined: they add delay, never queueing, except
//! the global RX queues (JBSQ), the transport's arbiter and the link.

use super::config::{NicConfig, NicConfigError};
use super::core_selection::CoreSelector;
use super::message::{Message, LEN_MASK};
use super::nic_timeline::NicTimeline;
use crate::mac::Mac;
use nanopu_sim::{SimDuration, SimTime};
use nanopu_transport::program::Delivery;
use nanopu_transport::program::TransportProgram;
use nanopu_transport::protocols::lossless::Lossless;
use nanopu_transport::{
    NanoTransport, OutMessageRef, Protocol, StageLatencies, TransportAction, TransportEvent,
    TransportStats, TxLink,
};

/// Something the NIC needs done.
#[derive(Debug)]
pub enum NicAction {
    /// Put `words` (RX header first) into `core`'s RX FIFO for `context`,
    /// visible from `at`.
    Deliver {
        core: usize,
        context: u16,
        words: Vec<u64>,
        at: SimTime,
    },
    /// A frame is ready to be serialized onto the link at `ready`.
    Transmit { frame: Vec<u8>, ready: SimTime },
    /// Call [`NanoNic::handle`] with `event` at `at`.
    Schedule { at: SimTime, event: NicEvent },
}

/// The NIC's own timed events.
#[derive(Debug)]
pub enum NicEvent {
    /// A reassembled message leaves the transport for its global RX queue.
    MessageReady(Message),
    /// One of NanoTransport's own events (timers, pacing, the arbiter).
    Transport(TransportEvent),
}

/// A command from a core (`lniccmd` / `lnicucmd`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoreCommand {
    /// A thread of `context` was registered on the core.
    Registered { context: u16 },
    /// The core finished a message of `context`.
    MessageDone { context: u16 },
}

/// Counters of everything the NIC did not deliver, and of what it did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct NicStats {
    pub rx_frames: u64,
    pub rx_messages: u64,
    pub tx_messages: u64,
    pub tx_frames: u64,
    /// Frames dropped by the ingress pipeline, by reason.
    pub drop_malformed: u64,
    pub drop_not_for_us: u64,
    /// Messages for a context no core has registered (the port match
    /// table misses): dropped and counted, never delivered.
    pub drop_unregistered_context: u64,
    pub drop_too_large: u64,
    pub drop_duplicate: u64,
    /// Messages a core sent that exceed the maximum message size.
    pub tx_too_large: u64,
    /// Messages the transport gave up on after its retries (NanoTransport).
    pub tx_failed: u64,
    /// Messages whose every packet was acknowledged (NanoTransport).
    pub tx_acknowledged: u64,
}

/// The NIC of one nanoPU node: its stages, in the order data flows.
pub struct NanoNic {
    pub cfg: NicConfig,
    /// This node's IPv4 address.
    pub ip: u32,
    mac: Mac,
    transport: NanoTransport,
    transport_actions: Vec<TransportAction>,
    /// Receive-side latency added after the transport (`transport_rx_ps`).
    transport_rx: SimDuration,
    /// Per-application global RX queues and JBSQ core selection.
    pub selector: CoreSelector,
    /// Word vectors handed back by [`NanoNic::recycle_words`], reused for
    /// deliveries.
    spare_words: Vec<Vec<u64>>,
    pub stats: NicStats,
    /// Timeline probes (`--timeline`); `None` costs one branch per probe.
    timeline: Option<Box<NicTimeline>>,
    /// The transmit buffers (`tx_buffers`) in use.
    tx: TxBuffers,
}

/// The transmit side's message buffers (`NicConfig::tx_buffers`): which
/// are taken, and until when.
#[derive(Default)]
struct TxBuffers {
    /// With the lossless program: when each taken buffer is given back
    /// (its message's last bit on the wire), in order.
    release: std::collections::VecDeque<SimTime>,
    /// With the lossless program: when the link has sent every frame of
    /// the messages taken so far.
    wire_free: SimTime,
    /// With a reliable program: messages taken from the cores that have
    /// not reached the transport yet.
    in_transit: usize,
}

/// Why the NIC cannot take a message from a core now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxFull {
    /// A buffer is given back at this time.
    Until(SimTime),
    /// A buffer is given back when the transport admits a waiting message
    /// (after an acknowledgement or a timeout: one of the NIC's events).
    UntilTransport,
}

impl NanoNic {
    /// A NIC on a default link (200 Gb/s, Ethernet framing); panics on a
    /// configuration [`NicConfig::validate`] refuses (use
    /// [`NanoNic::with_program`] for a clear error).
    pub fn new(cfg: NicConfig, ip: u32) -> NanoNic {
        Self::with_program(cfg, ip, default_link(), None).expect("a valid NIC configuration")
    }

    /// A NIC on `link` running `program` (a transport program of your own)
    /// instead of `cfg.transport.protocol`'s; the error names what is wrong.
    pub fn with_program(
        cfg: NicConfig,
        ip: u32,
        link: TxLink,
        program: Option<Box<dyn TransportProgram>>,
    ) -> Result<NanoNic, NicConfigError> {
        cfg.validate()?;
        if link.gbps == 0 {
            return Err(nanopu_transport::config::TransportConfigError::ZeroLinkRate.into());
        }
        let transport = match program {
            Some(p) => {
                NanoTransport::with_program(&cfg.transport, ip, cfg.mtu_payload_bytes, link, p)?
            }
            None if cfg.transport.protocol == Protocol::None => {
                // The lossless program costs this NIC's own stage latencies.
                let mut t = cfg.transport.clone();
                t.latencies = None;
                t.reassembly_ps = cfg.reassembly_ps;
                t.packetize_ps = cfg.packetize_ps;
                let program = Lossless::new(StageLatencies {
                    ingress_ps: cfg.ingress_ps,
                    egress_ps: cfg.egress_ps,
                });
                NanoTransport::with_program(&t, ip, cfg.mtu_payload_bytes, link, Box::new(program))?
            }
            None => NanoTransport::new(&cfg.transport, ip, cfg.mtu_payload_bytes, link)?,
        };
        Ok(NanoNic {
            transport,
            transport_actions: Vec::new(),
            transport_rx: ps(cfg.transport_rx_ps),
            mac: Mac {
                link_gbps: link.gbps,
                rx_latency: ps(cfg.mac_serial_rx_ps),
                tx_latency: ps(cfg.mac_serial_tx_ps),
            },
            selector: CoreSelector::with_policy(
                cfg.jbsq_depth,
                cfg.core_selection,
                cfg.core_selection_seed,
            ),
            spare_words: Vec::new(),
            cfg,
            ip,
            stats: NicStats::default(),
            timeline: None,
            tx: TxBuffers::default(),
        })
    }

    /// Records this NIC's stages into `timeline` (see
    /// [`NicTimeline`](super::nic_timeline::NicTimeline)), or stops.
    pub fn set_timeline(&mut self, timeline: Option<NicTimeline>) {
        self.timeline = timeline.map(Box::new);
    }

    /// The NIC's transport.
    pub fn transport(&self) -> &NanoTransport {
        &self.transport
    }

    /// Gives a consumed frame buffer to the transport for reuse (see
    /// [`NanoTransport::recycle`]); returns it if not taken.
    pub fn recycle(&mut self, frame: Vec<u8>) -> Option<Vec<u8>> {
        self.transport.recycle(frame)
    }

    /// Whether the transport would take more frame buffers.
    pub fn wants_frames(&self) -> bool {
        self.transport.wants_frames()
    }

    /// Word vectors kept for reuse.
    const SPARE_WORDS: usize = 64;

    /// Gives the words of a [`NicAction::Deliver`], once in the core's RX
    /// FIFO, back for reuse.
    pub fn recycle_words(&mut self, mut words: Vec<u64>) {
        if self.spare_words.len() < Self::SPARE_WORDS {
            words.clear();
            self.spare_words.push(words);
        }
    }

    /// The transport's counters.
    pub fn transport_stats(&self) -> &TransportStats {
        &self.transport.stats
    }

    /// The largest message this NIC sends or receives.
    pub fn max_message_bytes(&self) -> u32 {
        self.transport
            .max_message_bytes()
            .min(self.cfg.max_message_bytes)
    }

    /// The transport's actions, in the NIC's terms.
    fn transport_out(&mut self, out: &mut Vec<NicAction>) {
        let mut actions = std::mem::take(&mut self.transport_actions);
        for a in actions.drain(..) {
            match a {
                TransportAction::Deliver { msg, at } => {
                    let ready = at + self.transport_rx;
                    let flow = match &mut self.timeline {
                        Some(tl) => tl.message_whole(at, ready, msg.len),
                        None => 0,
                    };
                    out.push(NicAction::Schedule {
                        at: ready,
                        event: NicEvent::MessageReady(Message {
                            peer_ip: msg.src_ip,
                            peer_context: msg.src_port,
                            local_context: msg.dst_port,
                            len: msg.len,
                            payload: msg.payload,
                            flow,
                        }),
                    })
                }
                TransportAction::Transmit { frame, at } => {
                    self.stats.tx_frames += 1;
                    let ready = self.mac.transmit_ready(at);
                    if let Some(tl) = &mut self.timeline {
                        let egress = ps(self.transport.latencies().egress_ps);
                        tl.transmit(&frame, egress, at, ready);
                    }
                    out.push(NicAction::Transmit { frame, ready })
                }
                TransportAction::Schedule { at, event } => out.push(NicAction::Schedule {
                    at,
                    event: NicEvent::Transport(event),
                }),
                TransportAction::Sent { .. } => self.stats.tx_acknowledged += 1,
                TransportAction::Failed { .. } => self.stats.tx_failed += 1,
            }
        }
        self.transport_actions = actions;
    }

    /// A frame whose first bit reaches the NIC at `first_bit`.
    pub fn frame_in(&mut self, frame: &[u8], first_bit: SimTime, out: &mut Vec<NicAction>) {
        self.stats.rx_frames += 1;
        let in_nic = self.mac.received(first_bit, frame.len());
        if let Some(tl) = &mut self.timeline {
            let ingress_done = in_nic + ps(self.transport.latencies().ingress_ps);
            tl.frame_in(frame, first_bit, in_nic, ingress_done);
        }
        let before = &self.transport.stats;
        let (malformed, not_for_us, duplicate) = (
            before.rx_malformed,
            before.rx_not_for_us,
            before.rx_duplicate,
        );
        let (selector, stats) = (&self.selector, &mut self.stats);
        let max_message_bytes = self.cfg.max_message_bytes;
        let mut actions = std::mem::take(&mut self.transport_actions);
        // The port match table and the message size limit are the NIC's.
        self.transport.packet_in_checked(
            frame,
            in_nic,
            |h| {
                if h.msg_len as u32 > max_message_bytes {
                    stats.drop_too_large += 1;
                    false
                } else if !selector.has_context(h.dst_port) {
                    stats.drop_unregistered_context += 1;
                    false
                } else {
                    true
                }
            },
            &mut actions,
        );
        self.transport_actions = actions;
        let after = &self.transport.stats;
        self.stats.drop_malformed += after.rx_malformed - malformed;
        self.stats.drop_not_for_us += after.rx_not_for_us - not_for_us;
        self.stats.drop_duplicate += after.rx_duplicate - duplicate;
        self.transport_out(out);
    }

    /// One of the NIC's own events, at `now`.
    pub fn handle(&mut self, event: NicEvent, now: SimTime, out: &mut Vec<NicAction>) {
        match event {
            NicEvent::MessageReady(msg) => {
                self.stats.rx_messages += 1;
                if let Some((core, msg)) = self.selector.message(msg) {
                    self.deliver(core, msg, now, out);
                }
            }
            NicEvent::Transport(ev) => {
                let mut actions = std::mem::take(&mut self.transport_actions);
                self.transport.handle(ev, now, &mut actions);
                self.transport_actions = actions;
                self.transport_out(out);
            }
        }
    }

    fn deliver(&mut self, core: usize, msg: Message, now: SimTime, out: &mut Vec<NicAction>) {
        let mut words = self.spare_words.pop().unwrap_or_default();
        msg.rx_words_into(&mut words);
        self.transport.recycle_payload(msg.payload);
        let at = now + ps(self.cfg.core_dispatch_ps);
        if let Some(tl) = &mut self.timeline {
            tl.delivered(msg.flow, core, msg.local_context, at);
        }
        out.push(NicAction::Deliver {
            core,
            context: msg.local_context,
            words,
            at,
        });
    }

    /// A command from `core` at `at`.
    pub fn core_command(
        &mut self,
        core: usize,
        cmd: CoreCommand,
        at: SimTime,
        out: &mut Vec<NicAction>,
    ) {
        match cmd {
            CoreCommand::Registered { context } => self.selector.register(context, core),
            CoreCommand::MessageDone { context } => {
                if let Some(tl) = &mut self.timeline {
                    tl.done(core, context, at);
                }
                if let Some((core, msg)) = self.selector.done(context, core) {
                    self.deliver(core, msg, at, out);
                }
            }
        }
    }

    /// Takes a transmit buffer for a message of `len` bytes that a core
    /// finished writing, at `at` (`NicConfig::tx_buffers`); the caller then
    /// hands the message to [`NanoNic::message_from_core`] at `at`. With
    /// none free, says when to ask again: the core's message stays in its
    /// TX FIFO meanwhile.
    pub fn take_tx_buffer(&mut self, len: u16, at: SimTime) -> Result<(), TxFull> {
        let cap = self.cfg.tx_buffers as usize;
        if self.transport.delivery() != Delivery::Lossless {
            if self.transport.tx_waiting() + self.tx.in_transit >= cap {
                return Err(TxFull::UntilTransport);
            }
            self.tx.in_transit += 1;
            return Ok(());
        }
        let too_large = len as u32 > self.max_message_bytes();
        let ready = self
            .mac
            .transmit_ready(at + ps(self.cfg.tx_queue_ps) + self.transport.whole_message_delay());
        let tx = &mut self.tx;
        while tx.release.front().is_some_and(|&t| t <= at) {
            tx.release.pop_front();
        }
        if tx.release.len() >= cap {
            return Err(TxFull::Until(tx.release[0]));
        }
        if too_large {
            // Refused by `message_from_core`: nothing to send.
            return Ok(());
        }
        // Its packets leave the egress pipeline together and the link
        // sends them one after another, after what it already has.
        let mtu = self.cfg.mtu_payload_bytes as usize;
        let len = len as usize;
        let mut done = tx.wire_free.max(ready);
        for p in 0..len.div_ceil(mtu).max(1) {
            let payload = (len - p * mtu).min(mtu);
            let bits = nanopu_wire::frame::wire_bits(nanopu_wire::frame::HEADER_LEN + payload);
            done += SimDuration::serialization(bits / 8, self.mac.link_gbps);
        }
        tx.wire_free = done;
        tx.release.push_back(done);
        Ok(())
    }

    /// A message that took a transmit buffer will not reach
    /// [`NanoNic::message_from_core`] (a boot message kept off the wire).
    pub fn tx_buffer_unused(&mut self) {
        self.tx.in_transit = self.tx.in_transit.saturating_sub(1);
    }

    /// A whole message `words` (TX header first: destination IP,
    /// destination context, length) written by `context` on `core`, its
    /// last word at `at`.
    pub fn message_from_core(
        &mut self,
        core: usize,
        context: u16,
        words: &[u64],
        at: SimTime,
        out: &mut Vec<NicAction>,
    ) {
        self.tx_buffer_unused();
        let header = words.first().copied().unwrap_or(0);
        let len = (header & LEN_MASK) as u16;
        if len as u32 > self.max_message_bytes() {
            self.stats.tx_too_large += 1;
            return;
        }
        self.stats.tx_messages += 1;
        let to_transport = at + ps(self.cfg.tx_queue_ps);
        if let Some(tl) = &mut self.timeline {
            tl.sent_by_core(core, context, at, to_transport);
        }
        let msg = OutMessageRef {
            dst_ip: (header >> 32) as u32,
            dst_port: (header >> 16) as u16,
            src_port: context,
            len,
            payload: words.get(1..).unwrap_or(&[]),
            tag: 0,
        };
        let mut actions = std::mem::take(&mut self.transport_actions);
        self.transport.send(msg, to_transport, &mut actions);
        self.transport_actions = actions;
        self.transport_out(out);
    }

    /// Messages waiting for more packets (or lingering, with a reliable
    /// program).
    pub fn reassembling(&self) -> usize {
        self.transport.occupancy().rx_ids
    }
}

/// The nanoPU's link: 200 Gb/s with Ethernet's preamble and gap.
pub fn default_link() -> TxLink {
    TxLink {
        gbps: nanopu_wire::frame::DEFAULT_LINK_GBPS,
        overhead_bytes: nanopu_wire::frame::WIRE_OVERHEAD_LEN as u64,
    }
}

fn ps(ps: u64) -> SimDuration {
    SimDuration::from_ps(ps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nanopu::frames;
    use crate::nanopu::message::PacketInfo;

    const CLIENT: u32 = 0x0a00_0002;
    const NODE: u32 = 0x0a00_0001;

    fn nic() -> NanoNic {
        let mut n = NanoNic::new(NicConfig::default(), NODE);
        let mut out = Vec::new();
        n.core_command(
            0,
            CoreCommand::Registered { context: 0 },
            SimTime::ZERO,
            &mut out,
        );
        assert!(out.is_empty());
        n
    }

    fn request(len: u16, offset: u16, payload: &[u8]) -> Vec<u8> {
        frames::encode(
            &PacketInfo {
                src_ip: CLIENT,
                dst_ip: NODE,
                src_context: 1,
                dst_context: 0,
                msg_len: len,
                pkt_offset: offset,
                tx_msg_id: 9,
            },
            payload,
        )
    }

    fn ps(v: u64) -> SimDuration {
        SimDuration::from_ps(v)
    }

    #[test]
    fn receive_path_timing_is_the_sum_of_its_stages() {
        let mut n = nic();
        let c = n.cfg.clone();
        let mut out = Vec::new();
        let t0 = SimTime::ZERO + SimDuration::from_ns(100);
        n.frame_in(&request(8, 0, &7u64.to_le_bytes()), t0, &mut out);
        let Some(NicAction::Schedule { at, event }) = out.pop() else {
            panic!("expected the message to leave reassembly");
        };
        let expected = t0
            + SimDuration::serialization(72, nanopu_wire::frame::DEFAULT_LINK_GBPS)
            + ps(c.mac_serial_rx_ps)
            + ps(c.ingress_ps)
            + ps(c.reassembly_ps)
            + ps(c.transport_rx_ps);
        assert_eq!(at, expected);
        n.handle(event, at, &mut out);
        match out.pop() {
            Some(NicAction::Deliver {
                core,
                context,
                words,
                at: d,
            }) => {
                assert_eq!((core, context), (0, 0));
                assert_eq!(words, vec![(CLIENT as u64) << 32 | 1 << 16 | 8, 7]);
                assert_eq!(d, at + ps(c.core_dispatch_ps));
            }
            other => panic!("expected a delivery, got {other:?}"),
        }
    }

    #[test]
    fn transmit_path_timing_and_packetization() {
        let mut n = nic();
        let c = n.cfg.clone();
        let mut out = Vec::new();
        let t0 = SimTime::ZERO + SimDuration::from_ns(10);
        // A 1500-byte reply: two packets (1 KB MTU payload).
        let mut words = vec![(CLIENT as u64) << 32 | 1 << 16 | 1500];
        words.extend(0..188u64);
        n.message_from_core(0, 0, &words, t0, &mut out);
        assert_eq!(out.len(), 2);
        let ready =
            t0 + ps(c.tx_queue_ps) + ps(c.packetize_ps) + ps(c.egress_ps) + ps(c.mac_serial_tx_ps);
        for (i, a) in out.iter().enumerate() {
            let NicAction::Transmit { frame, ready: r } = a else {
                panic!()
            };
            assert_eq!(*r, ready);
            let (info, payload) = frames::decode(frame).unwrap();
            assert_eq!(
                (info.src_ip, info.dst_ip, info.dst_context, info.msg_len),
                (NODE, CLIENT, 1, 1500)
            );
            assert_eq!(info.pkt_offset as usize, i);
            assert_eq!(payload.len(), if i == 0 { 1024 } else { 476 });
        }
    }

    #[test]
    fn multi_packet_messages_are_reassembled_in_any_order() {
        let mut n = nic();
        let bytes: Vec<u8> = (0..2048u32).map(|i| i as u8).collect();
        let mut out = Vec::new();
        n.frame_in(&request(2048, 1, &bytes[1024..]), SimTime::ZERO, &mut out);
        assert!(out.is_empty());
        assert_eq!(n.reassembling(), 1);
        n.frame_in(&request(2048, 0, &bytes[..1024]), SimTime::ZERO, &mut out);
        let Some(NicAction::Schedule {
            event: NicEvent::MessageReady(m),
            ..
        }) = out.pop()
        else {
            panic!()
        };
        let back: Vec<u8> = m.payload.iter().flat_map(|w| w.to_le_bytes()).collect();
        assert_eq!(back, bytes);
    }

    #[test]
    fn bad_frames_are_counted_and_dropped() {
        let mut n = nic();
        let mut out = Vec::new();
        n.frame_in(b"not a frame", SimTime::ZERO, &mut out);
        let mut truncated = request(8, 0, &[0; 8]);
        truncated.truncate(40);
        n.frame_in(&truncated, SimTime::ZERO, &mut out);
        // For a context nobody registered.
        let mut other = request(8, 0, &[0; 8]);
        other[14 + 20 + 3..14 + 20 + 5].copy_from_slice(&5u16.to_be_bytes());
        let (info, _) = frames::decode(&other).unwrap();
        assert_eq!(info.dst_context, 5);
        // The IPv4 checksum does not cover the transport header: still valid.
        n.frame_in(&other, SimTime::ZERO, &mut out);
        assert!(out.is_empty());
        assert_eq!(n.stats.drop_malformed, 2);
        assert_eq!(n.stats.drop_unregistered_context, 1);
        assert_eq!(n.stats.rx_frames, 3);
    }

    #[test]
    fn done_releases_the_next_waiting_message() {
        let mut n = nic();
        let mut out = Vec::new();
        for id in 0..3u64 {
            let m = Message {
                peer_ip: CLIENT,
                peer_context: 1,
                local_context: 0,
                len: 8,
                payload: vec![id],
                flow: 0,
            };
            n.handle(NicEvent::MessageReady(m), SimTime::ZERO, &mut out);
        }
        assert_eq!(out.len(), 2, "JBSQ(2): the third message waits");
        out.clear();
        n.core_command(
            0,
            CoreCommand::MessageDone { context: 0 },
            SimTime(5),
            &mut out,
        );
        match out.pop() {
            Some(NicAction::Deliver { words, .. }) => assert_eq!(words[1], 2),
            other => panic!("{other:?}"),
        }
    }
}
