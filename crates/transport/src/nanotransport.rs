//! NanoTransport put together (NanoTransport Fig. 1): the programmable
//! ingress pipeline, the reassembly module, the packet generator, the
//! packetization module, the arbiter and the programmable egress pipeline,
//! with the timer modules of both directions, as a timed state machine.
//!
//! Like the rest of the NIC it owns no clock: it is driven by
//! [`NanoTransport::packet_in`], [`NanoTransport::send_message`] and
//! [`NanoTransport::handle`] (its own timed events), and answers with
//! [`TransportAction`]s.
//!
//! Timing. A packet entering at `t` leaves the ingress pipeline at
//! `t + ingress`; a message it completes reaches the core-selection stage at
//! `t + ingress + reassembly`; control packets it causes reach the arbiter
//! `packet_generator` later (or when paced). A message from a core at `t`
//! has its first packets at the arbiter at `t + packetize`. The arbiter
//! hands one packet at a time to the egress pipeline (`egress` later it is
//! on its way to the MAC) and keeps the link's pace: the next packet starts
//! when the previous one's frame and framing overhead have left. Control
//! packets go before data packets (our assumption: they are small and the
//! protocols' latency depends on them). The externs' effects on the
//! packetization module are applied when the ingress pipeline finishes.
//!
//! A lossless program ([`Delivery::Lossless`], the stand-in for a lossless
//! wire) bypasses the packetization module and the arbiter: a message's
//! packets all leave the egress pipeline `packetize + egress` after the
//! message arrived (the link spaces them), and nothing is kept.

pub use crate::config::TxLink;
use crate::config::{Protocol, StageLatencies, TransportConfig, TransportConfigError};
use crate::metadata::{EgressHeaders, EgressMetadata, PacketHeaders};
use crate::packetization::{OutMessage, OutMessageRef, Packetization, TxOutcome, WholeMessages};
use crate::program::{
    Delivery, IngressEvent, IngressExterns, IngressVerdict, PacketGenerator, ProgramParams,
    Refusal, TransportProgram,
};
use crate::protocols;
use crate::reassembly::{Expired, Reassembly, RxMessage};
use nanopu_sim::{SimDuration, SimTime};
use nanopu_wire::ethernet::ETHERTYPE_IPV4;
use nanopu_wire::frame::HEADER_LEN;
use nanopu_wire::{
    EthernetAddress, EthernetRepr, Flags, FrameRepr, Ipv4Address, Ipv4Repr, NanoTransportRepr,
};
use std::collections::VecDeque;

/// NanoTransport's own timed events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransportEvent {
    /// The timer modules' scan reaches an expired timer.
    Timers,
    /// A paced control packet is released to the arbiter.
    ControlRelease(EgressMetadata),
    /// The arbiter may send the next packet.
    Arbiter,
}

/// Something the transport needs done.
#[derive(Debug)]
pub enum TransportAction {
    /// A complete message for core selection, at `at`.
    Deliver { msg: RxMessage, at: SimTime },
    /// A frame leaves the egress pipeline for the MAC at `at`.
    Transmit { frame: Vec<u8>, at: SimTime },
    /// Call [`NanoTransport::handle`] with `event` at `at`.
    Schedule { at: SimTime, event: TransportEvent },
    /// Every packet of a sent message was acknowledged.
    Sent { outcome: TxOutcome, at: SimTime },
    /// A sent message was given up after `max_timeouts` timeouts.
    Failed { outcome: TxOutcome, at: SimTime },
}

/// Counters of the transport.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TransportStats {
    pub rx_packets: u64,
    pub rx_data: u64,
    pub rx_trimmed: u64,
    pub rx_control: u64,
    /// Frames that did not parse or whose transport fields are
    /// inconsistent (offset beyond the message, wrong payload size, ...).
    pub rx_malformed: u64,
    /// Frames for another address.
    pub rx_not_for_us: u64,
    /// Data packets the reassembly module had no room for (`fail`).
    pub rx_no_resources: u64,
    /// Data packets received before (refused by a program that says so).
    pub rx_duplicate: u64,
    pub rx_messages: u64,
    /// Incomplete messages discarded by the ingress timer.
    pub rx_expired: u64,
    pub tx_messages: u64,
    pub tx_data_packets: u64,
    pub tx_retransmissions: u64,
    pub tx_control_packets: u64,
    pub tx_timeouts: u64,
    pub tx_completed: u64,
    pub tx_failed: u64,
    /// Messages that waited for a free message entry or buffer.
    pub tx_waited: u64,
    pub tx_waiting_peak: u64,
    pub stale_events: u64,
}

impl TransportStats {
    /// Adds `o`'s counters (peaks are maxima). Destructured, so a new
    /// counter cannot be forgotten here.
    pub fn add(&mut self, o: &TransportStats) {
        let TransportStats {
            rx_packets,
            rx_data,
            rx_trimmed,
            rx_control,
            rx_malformed,
            rx_not_for_us,
            rx_no_resources,
            rx_duplicate,
            rx_messages,
            rx_expired,
            tx_messages,
            tx_data_packets,
            tx_retransmissions,
            tx_control_packets,
            tx_timeouts,
            tx_completed,
            tx_failed,
            tx_waited,
            tx_waiting_peak,
            stale_events,
        } = o;
        self.rx_packets += rx_packets;
        self.rx_data += rx_data;
        self.rx_trimmed += rx_trimmed;
        self.rx_control += rx_control;
        self.rx_malformed += rx_malformed;
        self.rx_not_for_us += rx_not_for_us;
        self.rx_no_resources += rx_no_resources;
        self.rx_duplicate += rx_duplicate;
        self.rx_messages += rx_messages;
        self.rx_expired += rx_expired;
        self.tx_messages += tx_messages;
        self.tx_data_packets += tx_data_packets;
        self.tx_retransmissions += tx_retransmissions;
        self.tx_control_packets += tx_control_packets;
        self.tx_timeouts += tx_timeouts;
        self.tx_completed += tx_completed;
        self.tx_failed += tx_failed;
        self.tx_waited += tx_waited;
        self.tx_waiting_peak = self.tx_waiting_peak.max(*tx_waiting_peak);
        self.stale_events += stale_events;
    }
}

/// Resources in use; all zero once traffic has stopped and timers ran out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Occupancy {
    pub rx_ids: usize,
    pub rx_buffers: usize,
    pub rx_timers: usize,
    pub tx_ids: usize,
    pub tx_buffers: usize,
    pub tx_timers: usize,
    pub tx_waiting: usize,
    pub program_state: usize,
    pub control_queue: usize,
}

impl Occupancy {
    pub fn is_empty(&self) -> bool {
        *self == Occupancy::default()
    }
}

/// The transport layer of one NIC.
pub struct NanoTransport {
    pub ip: u32,
    program: Box<dyn TransportProgram>,
    delivery: Delivery,
    /// The packetization of a lossless program.
    whole: WholeMessages,
    latencies: StageLatencies,
    params: ProgramParams,
    reassembly_delay: SimDuration,
    packetize_delay: SimDuration,
    generator_delay: SimDuration,
    link: TxLink,
    reassembly: Reassembly,
    packetization: Packetization,
    /// Control packets waiting for the arbiter, with their ready time.
    control: VecDeque<(SimTime, EgressMetadata)>,
    /// When the link is free for the next frame.
    tx_free_at: SimTime,
    arbiter_wake: Option<SimTime>,
    timer_wake: Option<SimTime>,
    pub stats: TransportStats,
    // Scratch space, kept to avoid allocating per packet.
    events: Vec<IngressEvent>,
    generated: Vec<(SimTime, EgressMetadata)>,
    /// Payload bytes per packet (the size frame buffers are made for).
    mtu_payload: usize,
    /// Frame buffers handed back by [`NanoTransport::recycle`], reused
    /// for outgoing frames so that steady state does not allocate.
    spare_frames: Vec<Vec<u8>>,
    rx_fired: Vec<(usize, (), SimTime)>,
    tx_fired: Vec<(usize, u16, SimTime)>,
    expired: Vec<Expired>,
    failed: Vec<TxOutcome>,
}

impl NanoTransport {
    /// The transport running the built-in program `cfg.protocol`.
    pub fn new(
        cfg: &TransportConfig,
        ip: u32,
        mtu_payload: u32,
        link: TxLink,
    ) -> Result<NanoTransport, TransportConfigError> {
        let params = Self::params(cfg, mtu_payload, link);
        let program = protocols::program_for(cfg.protocol, &params);
        Self::with_program(cfg, ip, mtu_payload, link, program)
    }

    fn params(cfg: &TransportConfig, mtu_payload: u32, link: TxLink) -> ProgramParams {
        ProgramParams::new(cfg, mtu_payload, link)
    }

    /// The transport running a program of your own.
    pub fn with_program(
        cfg: &TransportConfig,
        ip: u32,
        mtu_payload: u32,
        link: TxLink,
        program: Box<dyn TransportProgram>,
    ) -> Result<NanoTransport, TransportConfigError> {
        cfg.validate()?;
        if link.gbps == 0 {
            return Err(TransportConfigError::ZeroLinkRate);
        }
        let check = SimDuration::from_ps(cfg.timer_check_ps);
        let params = Self::params(cfg, mtu_payload, link);
        let latencies = cfg.latencies.unwrap_or_else(|| program.latencies());
        let delivery = program.delivery();
        let reassembly = match delivery {
            Delivery::Reliable => Reassembly::new(
                cfg.max_rx_messages,
                &cfg.buffer_classes,
                mtu_payload,
                SimDuration::from_ns(cfg.rx_timeout_ns()),
                check,
            )?,
            Delivery::Lossless => {
                Reassembly::lossless(cfg.max_rx_messages, &cfg.buffer_classes, mtu_payload)?
            }
        };
        Ok(NanoTransport {
            ip,
            delivery,
            whole: WholeMessages::new(mtu_payload),
            latencies,
            params,
            reassembly_delay: SimDuration::from_ps(cfg.reassembly_ps),
            packetize_delay: SimDuration::from_ps(cfg.packetize_ps),
            generator_delay: SimDuration::from_ps(cfg.packet_generator_ps),
            link,
            reassembly,
            packetization: Packetization::new(
                cfg.max_tx_messages,
                &cfg.buffer_classes,
                mtu_payload,
                SimDuration::from_ns(cfg.rtx_timeout_ns),
                cfg.max_timeouts,
                check,
            )?,
            program,
            control: VecDeque::new(),
            tx_free_at: SimTime::ZERO,
            arbiter_wake: None,
            timer_wake: None,
            stats: TransportStats::default(),
            events: Vec::new(),
            generated: Vec::new(),
            mtu_payload: mtu_payload as usize,
            spare_frames: Vec::new(),
            rx_fired: Vec::new(),
            tx_fired: Vec::new(),
            expired: Vec::new(),
            failed: Vec::new(),
        })
    }

    pub fn program_name(&self) -> &'static str {
        self.program.name()
    }

    pub fn latencies(&self) -> StageLatencies {
        self.latencies
    }

    /// What the program needs from the fixed modules.
    pub fn delivery(&self) -> Delivery {
        self.delivery
    }

    /// The largest message this transport can carry.
    pub fn max_message_bytes(&self) -> u32 {
        self.reassembly.largest_message().min(u16::MAX as u32)
    }

    fn ingress_delay(&self) -> SimDuration {
        SimDuration::from_ps(self.latencies.ingress_ps)
    }

    fn egress_delay(&self) -> SimDuration {
        SimDuration::from_ps(self.latencies.egress_ps)
    }

    /// A frame enters the ingress pipeline at `at` (after the MAC).
    pub fn packet_in(&mut self, frame: &[u8], at: SimTime, out: &mut Vec<TransportAction>) {
        self.packet_in_checked(frame, at, |_| true, out);
    }

    /// [`NanoTransport::packet_in`] after the NIC's own check of a data
    /// packet for this host (the layer-4 port match, its message size
    /// limit): a packet `admit` refuses is not seen by the transport (not
    /// counted either: the NIC counts it). Returns false if refused.
    pub fn packet_in_checked(
        &mut self,
        frame: &[u8],
        at: SimTime,
        admit: impl FnOnce(&PacketHeaders) -> bool,
        out: &mut Vec<TransportAction>,
    ) -> bool {
        let parsed = FrameRepr::parse(frame);
        if let Ok((repr, payload)) = &parsed {
            if repr.nt.flags.contains(Flags::DATA)
                && repr.ip.dst_addr.to_bits() == self.ip
                && !admit(&Self::headers(repr, payload.len()))
            {
                return false;
            }
        }
        self.stats.rx_packets += 1;
        let Some((hdr, payload)) = self.check(parsed) else {
            return true;
        };
        let mut events = std::mem::take(&mut self.events);
        events.clear();
        let verdict = {
            let mut x = IngressExterns {
                reassembly: &mut self.reassembly,
                events: &mut events,
                params: &self.params,
                now: at,
            };
            self.program.ingress(&hdr, &mut x)
        };
        let done = at + self.ingress_delay();
        for ev in events.drain(..) {
            match ev {
                IngressEvent::Ctrl(meta) => self.ctrl_pkt_event(&meta, done, out),
                IngressEvent::Delivered {
                    tx_msg_id,
                    ack_bitmap,
                } => {
                    if let Some(o) = self.packetization.delivered(tx_msg_id, ack_bitmap, done) {
                        self.stats.tx_completed += 1;
                        out.push(TransportAction::Sent {
                            outcome: o,
                            at: done,
                        });
                    }
                }
                IngressEvent::CreditTx(c) => {
                    self.packetization.credit_tx(&c, done, self.packetize_delay)
                }
            }
        }
        self.events = events;
        match verdict {
            IngressVerdict::Reassemble(meta) => {
                if let Some(msg) = self.reassembly.store(&meta, payload, done) {
                    self.stats.rx_messages += 1;
                    out.push(TransportAction::Deliver {
                        msg,
                        at: done + self.reassembly_delay,
                    });
                }
            }
            IngressVerdict::Drop => {}
            IngressVerdict::Refuse(why) => match why {
                Refusal::Duplicate => self.stats.rx_duplicate += 1,
                Refusal::Inconsistent => self.stats.rx_malformed += 1,
                Refusal::NoResources => self.stats.rx_no_resources += 1,
            },
        }
        self.after_input(done, out);
        true
    }

    /// Gives a delivered message's payload vector back for reuse.
    pub fn recycle_payload(&mut self, payload: Vec<u64>) {
        self.reassembly.recycle_payload(payload);
    }

    /// An empty payload vector to build an [`OutMessage`] in: one a sent
    /// message no longer needs, so that a steady stream of sends allocates
    /// nothing.
    pub fn payload_buffer(&mut self) -> Vec<u64> {
        self.packetization.take_payload()
    }

    /// After an input whose effects are in place at `t` (possibly later
    /// than the caller's present): admit waiting messages and have the
    /// arbiter called back at `t`. The arbiter only runs from
    /// [`NanoTransport::handle`], at the true present, so a packet is never
    /// sent at a time the caller has not reached.
    fn after_input(&mut self, t: SimTime, out: &mut Vec<TransportAction>) {
        self.admit_waiting(t);
        if self.has_work() {
            self.wake_arbiter(t, out);
        }
        self.arm_timers(t, out);
        self.stats.stale_events = self.packetization.stale_events + self.reassembly.stale_packets;
    }

    #[inline]
    fn admit_waiting(&mut self, now: SimTime) {
        if !self.packetization.waiting.is_empty() {
            let program = &self.program;
            let params = &self.params;
            self.packetization.admit_waiting(
                |p| program.initial_credit(p, params),
                now,
                self.packetize_delay,
            );
        }
    }

    fn headers(repr: &FrameRepr, payload_len: usize) -> PacketHeaders {
        let nt = &repr.nt;
        PacketHeaders {
            src_ip: repr.ip.src_addr.to_bits(),
            dst_ip: repr.ip.dst_addr.to_bits(),
            tos: repr.ip.tos,
            flags: nt.flags,
            src_port: nt.src_context,
            dst_port: nt.dst_context,
            msg_len: nt.msg_len,
            pkt_offset: nt.pkt_offset,
            pull_offset: nt.pull_offset,
            tx_msg_id: nt.tx_msg_id,
            priority: nt.priority,
            grant_offset: nt.grant_offset,
            payload_len: payload_len as u16,
        }
    }

    /// The ingress parser's checks every protocol needs, on a parsed frame.
    fn check<'f, E>(
        &mut self,
        parsed: Result<(FrameRepr, &'f [u8]), E>,
    ) -> Option<(PacketHeaders, &'f [u8])> {
        let Ok((repr, payload)) = parsed else {
            self.stats.rx_malformed += 1;
            return None;
        };
        if repr.ip.dst_addr.to_bits() != self.ip {
            self.stats.rx_not_for_us += 1;
            return None;
        }
        let nt = &repr.nt;
        let hdr = Self::headers(&repr, payload.len());
        if nt.flags.contains(Flags::DATA) {
            let mtu = self.params.mtu_payload as usize;
            let packets = (nt.msg_len as usize).div_ceil(mtu).max(1);
            let start = nt.pkt_offset as usize * mtu;
            let expected = (nt.msg_len as usize).saturating_sub(start).min(mtu);
            let trimmed = nt.flags.contains(Flags::CHOP);
            let ok = nt.msg_len as u32 <= self.max_message_bytes()
                && (nt.pkt_offset as usize) < packets
                && if trimmed {
                    payload.is_empty()
                } else {
                    payload.len() == expected
                };
            if !ok {
                self.stats.rx_malformed += 1;
                return None;
            }
            if trimmed {
                self.stats.rx_trimmed += 1;
            } else {
                self.stats.rx_data += 1;
            }
        } else {
            self.stats.rx_control += 1;
        }
        Some((hdr, payload))
    }

    /// `CtrlPktEvent`: the packet generator runs the program's generator.
    fn ctrl_pkt_event(
        &mut self,
        meta: &EgressMetadata,
        at: SimTime,
        out: &mut Vec<TransportAction>,
    ) {
        let now = at + self.generator_delay;
        let mut generated = std::mem::take(&mut self.generated);
        generated.clear();
        {
            let mut g = PacketGenerator {
                out: &mut generated,
                params: &self.params,
                now,
            };
            self.program.generate(meta, &mut g);
        }
        for &(when, meta) in &generated {
            if when <= now {
                self.control.push_back((now, meta));
            } else {
                out.push(TransportAction::Schedule {
                    at: when,
                    event: TransportEvent::ControlRelease(meta),
                });
            }
        }
        self.generated = generated;
    }

    /// A whole message from a core, its last word written at `at`.
    pub fn send_message(&mut self, msg: OutMessage, at: SimTime, out: &mut Vec<TransportAction>) {
        match self.delivery {
            Delivery::Lossless => self.send(msg.as_ref(), at, out),
            Delivery::Reliable => self.send_reliable(msg, at, out),
        }
    }

    /// [`NanoTransport::send_message`] with a borrowed message (copied only
    /// if the program keeps it for retransmission).
    pub fn send(&mut self, msg: OutMessageRef<'_>, at: SimTime, out: &mut Vec<TransportAction>) {
        match self.delivery {
            Delivery::Lossless => self.send_whole(&msg, at, out),
            Delivery::Reliable => {
                let mut payload = self.packetization.take_payload();
                payload.extend_from_slice(msg.payload);
                let msg = OutMessage {
                    dst_ip: msg.dst_ip,
                    dst_port: msg.dst_port,
                    src_port: msg.src_port,
                    len: msg.len,
                    payload,
                    tag: msg.tag,
                };
                self.send_reliable(msg, at, out)
            }
        }
    }

    /// A lossless program's send: every packet at once, nothing kept.
    fn send_whole(&mut self, msg: &OutMessageRef<'_>, at: SimTime, out: &mut Vec<TransportAction>) {
        self.stats.tx_messages += 1;
        let leave = at + self.packetize_delay + self.egress_delay();
        let mut whole = std::mem::take(&mut self.whole);
        whole.packetize(msg, |meta, payload| {
            self.stats.tx_data_packets += 1;
            let frame = self.egress(meta, payload);
            out.push(TransportAction::Transmit { frame, at: leave });
        });
        self.whole = whole;
    }

    fn send_reliable(&mut self, msg: OutMessage, at: SimTime, out: &mut Vec<TransportAction>) {
        self.stats.tx_messages += 1;
        let program = &self.program;
        let params = &self.params;
        if !self.packetization.new_message(
            msg,
            |p| program.initial_credit(p, params),
            at,
            self.packetize_delay,
        ) {
            self.stats.tx_waited += 1;
            self.stats.tx_waiting_peak = self.packetization.waiting_peak as u64;
        }
        self.after_input(at, out);
    }

    /// One of the transport's own events, at `now`.
    pub fn handle(&mut self, ev: TransportEvent, now: SimTime, out: &mut Vec<TransportAction>) {
        match ev {
            TransportEvent::Timers => {
                if self.timer_wake.is_some_and(|t| t <= now) {
                    self.timer_wake = None;
                }
                self.run_timers(now, out);
            }
            TransportEvent::ControlRelease(meta) => self.control.push_back((now, meta)),
            TransportEvent::Arbiter => {
                if self.arbiter_wake.is_some_and(|t| t <= now) {
                    self.arbiter_wake = None;
                }
            }
        }
        self.after(now, out);
    }

    fn run_timers(&mut self, now: SimTime, out: &mut Vec<TransportAction>) {
        let mut expired = std::mem::take(&mut self.expired);
        expired.clear();
        self.reassembly
            .poll_timers(now, &mut self.rx_fired, &mut expired);
        for e in &expired {
            let id = match *e {
                Expired::Incomplete(id) => {
                    self.stats.rx_expired += 1;
                    id
                }
                Expired::Forgotten(id) => id,
            };
            self.program.rx_message_freed(id);
        }
        self.expired = expired;
        let mut failed = std::mem::take(&mut self.failed);
        failed.clear();
        self.stats.tx_timeouts += self.packetization.poll_timers(
            now,
            self.packetize_delay,
            &mut self.tx_fired,
            &mut failed,
        );
        for o in failed.drain(..) {
            self.stats.tx_failed += 1;
            out.push(TransportAction::Failed {
                outcome: o,
                at: now,
            });
        }
        self.failed = failed;
    }

    /// After every input: admit waiting messages, run the arbiter, and ask
    /// to be called back for the next timer or packet.
    fn after(&mut self, now: SimTime, out: &mut Vec<TransportAction>) {
        self.admit_waiting(now);
        self.arbitrate(now, out);
        self.arm_timers(now, out);
        self.stats.stale_events = self.packetization.stale_events + self.reassembly.stale_packets;
    }

    /// Asks to be called back when the next timer fires.
    fn arm_timers(&mut self, now: SimTime, out: &mut Vec<TransportAction>) {
        let next_timer = match (
            self.reassembly.next_timer(),
            self.packetization.next_timer(),
        ) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(t) = next_timer {
            let t = t.max(now);
            if self.timer_wake.is_none_or(|w| t < w) {
                self.timer_wake = Some(t);
                out.push(TransportAction::Schedule {
                    at: t,
                    event: TransportEvent::Timers,
                });
            }
        }
    }

    /// The arbiter: control packets first, then data, one at a time at the
    /// link's pace.
    fn arbitrate(&mut self, now: SimTime, out: &mut Vec<TransportAction>) {
        loop {
            if self.tx_free_at > now {
                let free = self.tx_free_at;
                if self.has_work() {
                    self.wake_arbiter(free, out);
                }
                return;
            }
            let control = match self.control.front() {
                Some(&(ready, meta)) if ready <= now => {
                    self.control.pop_front();
                    self.stats.tx_control_packets += 1;
                    Some(meta)
                }
                _ => None,
            };
            let frame = match control {
                Some(meta) => {
                    let frame = self.new_frame();
                    self.finish_frame(&meta, frame)
                }
                None if self.packetization.next_ready().is_some_and(|t| t <= now) => {
                    let mut frame = self.new_frame();
                    let meta = self
                        .packetization
                        .next_packet(now, &mut frame)
                        .expect("a data packet is ready");
                    self.stats.tx_data_packets += 1;
                    if meta.is_rtx {
                        self.stats.tx_retransmissions += 1;
                    }
                    self.finish_frame(&meta, frame)
                }
                None => {
                    let next = [
                        self.control.front().map(|c| c.0),
                        self.packetization.next_ready(),
                    ]
                    .into_iter()
                    .flatten()
                    .min();
                    if let Some(t) = next {
                        self.wake_arbiter(t, out);
                    }
                    return;
                }
            };
            self.tx_free_at = now + self.link.frame_time(frame.len());
            out.push(TransportAction::Transmit {
                frame,
                at: now + self.egress_delay(),
            });
        }
    }

    fn has_work(&mut self) -> bool {
        !self.control.is_empty() || self.packetization.next_ready().is_some()
    }

    fn wake_arbiter(&mut self, at: SimTime, out: &mut Vec<TransportAction>) {
        if self.arbiter_wake.is_none_or(|w| at < w) {
            self.arbiter_wake = Some(at);
            out.push(TransportAction::Schedule {
                at,
                event: TransportEvent::Arbiter,
            });
        }
    }

    /// The egress pipeline: the program fills the headers; the frame is
    /// built around them.
    fn egress(&mut self, meta: &EgressMetadata, payload: &[u8]) -> Vec<u8> {
        let mut frame = self.new_frame();
        frame.extend_from_slice(payload);
        self.finish_frame(meta, frame)
    }

    /// A frame buffer (a recycled one if there is one) holding room for
    /// the headers, to which a payload is appended: made large enough for
    /// any packet, so that it never grows again.
    fn new_frame(&mut self) -> Vec<u8> {
        let mut frame = self.spare_frames.pop().unwrap_or_default();
        frame.clear();
        frame.reserve(HEADER_LEN + self.mtu_payload);
        frame.extend_from_slice(&[0; HEADER_LEN]);
        frame
    }

    /// The egress pipeline on a frame from [`NanoTransport::new_frame`]
    /// with its payload appended: the program fills the headers and they
    /// are written in front of the payload.
    fn finish_frame(&mut self, meta: &EgressMetadata, mut frame: Vec<u8>) -> Vec<u8> {
        let h = self.program.egress(meta);
        let repr = frame_repr(self.ip, meta.remote_ip, &h, frame.len() - HEADER_LEN);
        frame[..HEADER_LEN].copy_from_slice(&repr.header_bytes());
        frame
    }

    /// Frame buffers this transport would take back for reuse.
    pub const SPARE_FRAMES: usize = 64;

    /// Gives a frame buffer (one this or another transport sent, now
    /// consumed) back for reuse; returns it if there is no room.
    pub fn recycle(&mut self, mut frame: Vec<u8>) -> Option<Vec<u8>> {
        if self.spare_frames.len() >= Self::SPARE_FRAMES {
            return Some(frame);
        }
        frame.clear();
        self.spare_frames.push(frame);
        None
    }

    /// Whether the transport would take more frame buffers.
    pub fn wants_frames(&self) -> bool {
        self.spare_frames.len() < Self::SPARE_FRAMES / 2
    }

    /// What is still held (for leak checks).
    pub fn occupancy(&self) -> Occupancy {
        Occupancy {
            rx_ids: self.reassembly.ids_in_use(),
            rx_buffers: self.reassembly.buffers_in_use(),
            rx_timers: self.reassembly.timers_armed(),
            tx_ids: self.packetization.ids_in_use(),
            tx_buffers: self.packetization.buffers_in_use(),
            tx_timers: self.packetization.timers_armed(),
            tx_waiting: self.packetization.waiting.len(),
            program_state: self.program.state_in_use(),
            control_queue: self.control.len(),
        }
    }

    /// From a message's arrival to its packets leaving the egress
    /// pipeline, with the lossless program (see [`NanoTransport::send`]).
    pub fn whole_message_delay(&self) -> SimDuration {
        self.packetize_delay + self.egress_delay()
    }

    /// Messages waiting for a free message entry or buffer (the global TX
    /// queue in front of the packetization module).
    pub fn tx_waiting(&self) -> usize {
        self.packetization.waiting.len()
    }

    /// Whether `protocol` is a reliable program (acknowledges and
    /// retransmits), not the lossless one.
    pub fn is_program(protocol: Protocol) -> bool {
        protocol != Protocol::None
    }
}

/// The frame of one packet from `src_ip` to `dst_ip` with transport headers
/// `h` and `payload`, written into `frame` (its buffer reused): Ethernet,
/// IPv4 and the NanoTransport header (the egress deparser).
pub fn build_frame(
    src_ip: u32,
    dst_ip: u32,
    h: &EgressHeaders,
    payload: &[u8],
    frame: &mut Vec<u8>,
) {
    let repr = frame_repr(src_ip, dst_ip, h, payload.len());
    frame.clear();
    frame.resize(repr.frame_len(), 0);
    repr.emit(payload, frame)
        .expect("the frame is sized for its headers and payload");
}

/// The headers of a packet from `src_ip` to `dst_ip` with transport headers
/// `h` and `payload_len` bytes of payload.
///
/// # Panics
/// If `payload_len` exceeds [`nanopu_wire::frame::MAX_PAYLOAD_LEN`] (a
/// packet is at most an MTU).
fn frame_repr(src_ip: u32, dst_ip: u32, h: &EgressHeaders, payload_len: usize) -> FrameRepr {
    assert!(
        payload_len <= nanopu_wire::frame::MAX_PAYLOAD_LEN,
        "a packet payload of {payload_len} bytes does not fit in a frame"
    );
    FrameRepr::new(
        EthernetRepr {
            src_addr: EthernetAddress::for_ipv4(src_ip),
            dst_addr: EthernetAddress::for_ipv4(dst_ip),
            ethertype: ETHERTYPE_IPV4,
        },
        Ipv4Repr {
            src_addr: Ipv4Address::from_bits(src_ip),
            dst_addr: Ipv4Address::from_bits(dst_ip),
            protocol: nanopu_wire::nanotransport::PROTOCOL,
            payload_len: 0,
            ttl: 64,
            tos: h.tos,
            ident: 0,
            dont_frag: true,
        },
        NanoTransportRepr {
            flags: h.flags,
            src_context: h.src_port,
            dst_context: h.dst_port,
            msg_len: h.msg_len,
            pkt_offset: h.pkt_offset,
            pull_offset: h.pull_offset,
            tx_msg_id: h.tx_msg_id,
            buf_ptr: 0,
            buf_size_class: 0,
            priority: h.priority,
            grant_offset: h.grant_offset,
        },
        payload_len,
    )
}
