//! The nanoPU NIC (nanoPU Fig. 1): the fast path from the wire to the cores
//! and back, as a timed state machine.
//!
//! Receive: MAC and serial I/O, the ingress pipeline (header checks and the
//! layer-4 port match), reassembly, the transport, the application's global
//! RX queue and JBSQ core selection, the core's local RX FIFO. Transmit:
//! the core's local TX FIFO, the global TX queue, the transport,
//! packetization, the egress pipeline, MAC and serial I/O.
//!
//! Each stage is its own module ([`mac`](crate::mac), [`ingress`](crate::ingress),
//! [`reassembly`](crate::reassembly), [`transport`](crate::transport),
//! [`core_selection`](crate::core_selection), [`packetizer`](crate::packetizer));
//! the egress pipeline is its latency (`egress_ps`): it only hands frames on.
//!
//! The NIC is driven through four inputs ([`NanoNic::frame_in`],
//! [`NanoNic::message_from_core`], [`NanoNic::core_command`],
//! [`NanoNic::handle`]) and answers with [`NicAction`]s; it owns no clock
//! and no queue of its own, so it can be tested alone. Stages are fixed
//! latencies (`NicConfig`) and fully pipelined: they add delay, never
//! queueing, except the global RX queues (JBSQ) and the link.

use crate::config::NicConfig;
use crate::core_selection::CoreSelector;
use crate::ingress::{IngressDrop, IngressPipeline};
use crate::mac::Mac;
use crate::message::Message;
use crate::packetizer::Packetizer;
use crate::reassembly::{Reassembly, ReassemblyError};
use crate::transport::TransportStandIn;
use nanopu_sim::{SimDuration, SimTime};
use nanopu_transport::{
    NanoTransport, OutMessage, TransportAction, TransportEvent, TransportStats, TxLink,
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
    ingress: IngressPipeline,
    reassembly: Reassembly,
    transport: TransportStandIn,
    /// The programmable transport, when the configuration names a program
    /// (otherwise the stand-in and the fixed reassembly and packetizer).
    nano_transport: Option<NanoTransport>,
    transport_actions: Vec<TransportAction>,
    /// Per-application global RX queues and JBSQ core selection.
    pub selector: CoreSelector,
    packetizer: Packetizer,
    pub stats: NicStats,
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
        program: Option<Box<dyn nanopu_transport::program::TransportProgram>>,
    ) -> Result<NanoNic, String> {
        cfg.validate().map_err(|e| e.to_string())?;
        if link.gbps == 0 {
            return Err("the link rate must be positive".into());
        }
        let nano_transport =
            match program {
                Some(p) => Some(NanoTransport::with_program(
                    &cfg.transport,
                    ip,
                    cfg.mtu_payload_bytes,
                    link,
                    p,
                )?),
                None if NanoTransport::is_program(cfg.transport.protocol) => Some(
                    NanoTransport::new(&cfg.transport, ip, cfg.mtu_payload_bytes, link)?,
                ),
                None => None,
            };
        Ok(NanoNic {
            nano_transport,
            transport_actions: Vec::new(),
            mac: Mac {
                link_gbps: link.gbps,
                rx_latency: ps(cfg.mac_serial_rx_ps),
                tx_latency: ps(cfg.mac_serial_tx_ps),
            },
            ingress: IngressPipeline {
                ip,
                max_message_bytes: cfg.max_message_bytes,
            },
            reassembly: Reassembly::default(),
            transport: TransportStandIn {
                rx_latency: ps(cfg.transport_rx_ps),
            },
            selector: CoreSelector::with_policy(
                cfg.jbsq_depth,
                cfg.core_selection,
                cfg.core_selection_seed,
            ),
            packetizer: Packetizer::new(ip, cfg.mtu_payload_bytes),
            cfg,
            ip,
            stats: NicStats::default(),
        })
    }

    /// NanoTransport, if the NIC runs a transport program.
    pub fn nano_transport(&self) -> Option<&NanoTransport> {
        self.nano_transport.as_ref()
    }

    /// Gives a consumed frame buffer to the transport for reuse (see
    /// [`NanoTransport::recycle`]); returns it if not taken.
    pub fn recycle(&mut self, frame: Vec<u8>) -> Option<Vec<u8>> {
        match self.nano_transport.as_mut() {
            Some(t) => t.recycle(frame),
            None => Some(frame),
        }
    }

    /// Whether the transport would take more frame buffers.
    pub fn wants_frames(&self) -> bool {
        self.nano_transport
            .as_ref()
            .is_some_and(|t| t.wants_frames())
    }

    /// NanoTransport's counters, if the NIC runs a transport program.
    pub fn transport_stats(&self) -> Option<&TransportStats> {
        self.nano_transport.as_ref().map(|t| &t.stats)
    }

    /// The largest message this NIC sends or receives.
    pub fn max_message_bytes(&self) -> u32 {
        match &self.nano_transport {
            Some(t) => t.max_message_bytes().min(self.cfg.max_message_bytes),
            None => self.cfg.max_message_bytes,
        }
    }

    /// The transport's actions, in the NIC's terms.
    fn transport_out(&mut self, out: &mut Vec<NicAction>) {
        let mut actions = std::mem::take(&mut self.transport_actions);
        for a in actions.drain(..) {
            match a {
                TransportAction::Deliver { msg, at } => out.push(NicAction::Schedule {
                    at,
                    event: NicEvent::MessageReady(Message {
                        peer_ip: msg.src_ip,
                        peer_context: msg.src_port,
                        local_context: msg.dst_port,
                        len: msg.len,
                        payload: msg.payload,
                    }),
                }),
                TransportAction::Transmit { frame, at } => {
                    self.stats.tx_frames += 1;
                    out.push(NicAction::Transmit {
                        frame,
                        ready: self.mac.transmit_ready(at),
                    })
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

    /// A frame for NanoTransport: the port match for data packets, then the
    /// transport's ingress pipeline (its parser counts malformed frames).
    fn frame_to_transport(&mut self, frame: &[u8], in_nic: SimTime, out: &mut Vec<NicAction>) {
        if let Ok((repr, _)) = nanopu_wire::FrameRepr::parse(frame) {
            if repr.nt.flags.contains(nanopu_wire::Flags::DATA)
                && repr.ip.dst_addr.to_bits() == self.ip
                && !self.selector.has_context(repr.nt.dst_context)
            {
                self.stats.drop_unregistered_context += 1;
                return;
            }
        }
        let Some(t) = self.nano_transport.as_mut() else {
            return;
        };
        let malformed = t.stats.rx_malformed;
        let mut actions = std::mem::take(&mut self.transport_actions);
        t.packet_in(frame, in_nic, &mut actions);
        self.stats.drop_malformed += t.stats.rx_malformed - malformed;
        self.transport_actions = actions;
        self.transport_out(out);
    }

    /// A frame whose first bit reaches the NIC at `first_bit`.
    pub fn frame_in(&mut self, frame: &[u8], first_bit: SimTime, out: &mut Vec<NicAction>) {
        self.stats.rx_frames += 1;
        let in_nic = self.mac.received(first_bit, frame.len());
        if self.nano_transport.is_some() {
            return self.frame_to_transport(frame, in_nic, out);
        }
        let selector = &self.selector;
        let (info, payload) = match self.ingress.process(frame, |c| selector.has_context(c)) {
            Ok(p) => p,
            Err(drop) => {
                let counter = match drop {
                    IngressDrop::Malformed => &mut self.stats.drop_malformed,
                    IngressDrop::NotForUs => &mut self.stats.drop_not_for_us,
                    IngressDrop::TooLarge => &mut self.stats.drop_too_large,
                    IngressDrop::UnregisteredContext => &mut self.stats.drop_unregistered_context,
                };
                *counter += 1;
                return;
            }
        };
        let after_ingress = in_nic + ps(self.cfg.ingress_ps);
        match self
            .reassembly
            .packet(info, payload, self.cfg.mtu_payload_bytes)
        {
            Ok(Some(msg)) => {
                let reassembled = after_ingress + ps(self.cfg.reassembly_ps);
                out.push(NicAction::Schedule {
                    at: self.transport.message_received(reassembled),
                    event: NicEvent::MessageReady(msg),
                });
            }
            Ok(None) => {}
            Err(ReassemblyError::Duplicate) => self.stats.drop_duplicate += 1,
            Err(ReassemblyError::Inconsistent) => self.stats.drop_malformed += 1,
        }
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
                if let Some(t) = self.nano_transport.as_mut() {
                    let mut actions = std::mem::take(&mut self.transport_actions);
                    t.handle(ev, now, &mut actions);
                    self.transport_actions = actions;
                    self.transport_out(out);
                }
            }
        }
    }

    fn deliver(&mut self, core: usize, msg: Message, now: SimTime, out: &mut Vec<NicAction>) {
        out.push(NicAction::Deliver {
            core,
            context: msg.local_context,
            words: msg.rx_words(),
            at: now + ps(self.cfg.core_dispatch_ps),
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
                if let Some((core, msg)) = self.selector.done(context, core) {
                    self.deliver(core, msg, at, out);
                }
            }
        }
    }

    /// A whole message `words` (TX header first) written by `context` on
    /// `core`, its last word at `at`.
    pub fn message_from_core(
        &mut self,
        _core: usize,
        context: u16,
        words: &[u64],
        at: SimTime,
        out: &mut Vec<NicAction>,
    ) {
        let msg = Message::from_tx_words(context, words);
        if msg.len as u32 > self.max_message_bytes() {
            self.stats.tx_too_large += 1;
            return;
        }
        self.stats.tx_messages += 1;
        if let Some(t) = self.nano_transport.as_mut() {
            let mut actions = std::mem::take(&mut self.transport_actions);
            t.send_message(
                OutMessage {
                    dst_ip: msg.peer_ip,
                    dst_port: msg.peer_context,
                    src_port: msg.local_context,
                    len: msg.len,
                    payload: msg.payload,
                    tag: 0,
                },
                at + ps(self.cfg.tx_queue_ps),
                &mut actions,
            );
            self.transport_actions = actions;
            self.transport_out(out);
            return;
        }
        let queued = self
            .transport
            .message_to_send(at + ps(self.cfg.tx_queue_ps));
        let egress_done = queued + ps(self.cfg.packetize_ps) + ps(self.cfg.egress_ps);
        // Packets leave the pipeline back to back; the link spaces them.
        let ready = self.mac.transmit_ready(egress_done);
        let stats = &mut self.stats;
        self.packetizer.packetize(&msg, |frame| {
            stats.tx_frames += 1;
            out.push(NicAction::Transmit { frame, ready });
        });
    }

    /// Messages waiting for more packets.
    pub fn reassembling(&self) -> usize {
        self.reassembly.in_progress()
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
    use crate::frames;
    use crate::message::PacketInfo;

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
