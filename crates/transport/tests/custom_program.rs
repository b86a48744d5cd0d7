//! A transport program written the way a user would write one: against the
//! public API of `nanopu_transport` only (the `TransportProgram` trait, its
//! externs and events, the `state` registers), run with
//! `NanoTransport::with_program` between hosts on a faulty wire.
//!
//! The protocol, "SimpleAck", is sender-driven: a sender may send a whole
//! message at once (`initial_credit` returns every packet), the receiver
//! acknowledges every data packet (a `DeliveredEvent` at the sender) and
//! NACKs every trimmed one (a `CreditTxEvent` with the packet in
//! `rtx_bitmap`, so the sender resends it at once). Lost packets and lost
//! ACKs are left to the fixed modules' retransmission timeout
//! (NanoTransport Algorithm 3). There is no congestion control: it is an
//! example of the API, not a protocol for a loaded network.
//!
//! See `docs/transport-programs.md` for the walk-through.

use nanopu_sim::{SimDuration, SimTime};
use nanopu_transport::config::NDP_LATENCIES;
use nanopu_transport::metadata::{EgressMetadata, GetRxMsgInfoReq, IngressMetadata, PacketHeaders};
use nanopu_transport::program::{
    CreditTx, IngressExterns, IngressVerdict, PacketGenerator, ProgramParams, TransportProgram,
};
use nanopu_transport::state::{RawOp, Register};
use nanopu_transport::{NanoTransport, StageLatencies, TransportConfig};
use nanopu_wire::{Flags, FrameRepr};
use std::collections::HashMap;

mod harness;
use harness::*;

// ---------------------------------------------------------------------------
// The program.
// ---------------------------------------------------------------------------

/// Priority (IPv4 ToS) of ACKs and NACKs: above data, so that they are not
/// stuck behind the data they acknowledge.
const CONTROL_TOS: u8 = 7;

/// SimpleAck's state: one register per receive message id.
struct SimpleAck {
    /// Data packets of the message received so far, counted by the program
    /// itself with one ifElseRAW atom per packet (a new message starts the
    /// count, every other packet adds 0 or 1).
    arrived: Register<u16>,
}

impl SimpleAck {
    /// State for `max_rx_messages` receive message ids (the configuration's
    /// `max_rx_messages`; `ProgramParams::max_rx_messages` at run time).
    fn new(max_rx_messages: u32) -> SimpleAck {
        SimpleAck {
            arrived: Register::new(max_rx_messages as usize),
        }
    }

    /// Listing 2 metadata of a control packet answering data packet `hdr`:
    /// back to its sender, naming the sender's message and the packet.
    fn answer(hdr: &PacketHeaders, flags: Flags) -> EgressMetadata {
        EgressMetadata {
            remote_ip: hdr.src_ip,
            remote_port: hdr.src_port,
            msg_len: hdr.msg_len,
            pkt_offset: hdr.pkt_offset,
            local_port: hdr.dst_port,
            tx_msg_id: hdr.tx_msg_id,
            credit: 0,
            rank: CONTROL_TOS,
            flags,
            is_new_msg: false,
            is_rtx: false,
        }
    }

    /// Receiver side: a data packet, whole or trimmed.
    fn data(&mut self, hdr: &PacketHeaders, x: &mut IngressExterns<'_>) -> IngressVerdict {
        let trimmed = hdr.flags.contains(Flags::CHOP);
        let info = x.get_rx_msg_info(GetRxMsgInfoReq {
            // A trimmed packet names its message but brings no data: a
            // read-only call.
            mark_received: !trimmed,
            src_ip: hdr.src_ip,
            src_port: hdr.src_port,
            tx_msg_id: hdr.tx_msg_id,
            msg_len: hdr.msg_len,
            pkt_offset: hdr.pkt_offset,
        });
        if info.fail {
            // No message id or buffer free: say nothing, the sender's
            // timeout tries again later.
            return IngressVerdict::Drop;
        }
        let new_data = !trimmed && info.is_new_pkt;
        // ifElseRAW: the first packet of a message (even a trimmed one)
        // restarts the count, any other packet adds 1 if it brings new data.
        let arrived = self.arrived.if_else_raw(
            info.rx_msg_id as usize,
            info.is_new_msg,
            RawOp::Set(new_data as u16),
            RawOp::Add(new_data as u16),
        );
        if trimmed && info.is_new_pkt {
            // Not received yet: ask for it again.
            x.ctrl_pkt_event(Self::answer(hdr, Flags::NACK));
            return IngressVerdict::Drop;
        }
        // New data, or a packet received before (its first ACK may have
        // been lost, and the sender must not give up on a delivered packet).
        x.ctrl_pkt_event(Self::answer(hdr, Flags::ACK));
        if !new_data {
            return IngressVerdict::Drop;
        }
        // Our own count says when the message is complete. (The reassembly
        // module's `receivedBitmap` says the same, `info.is_last_pkt`; the
        // check is for this test, a real program would use one or the
        // other.)
        let is_last_pkt = arrived == info.packets;
        assert_eq!(is_last_pkt, info.is_last_pkt, "count {arrived}");
        IngressVerdict::Reassemble(IngressMetadata {
            remote_ip: hdr.src_ip,
            remote_port: hdr.src_port,
            msg_len: hdr.msg_len,
            pkt_offset: hdr.pkt_offset,
            local_port: hdr.dst_port,
            rx_msg_id: info.rx_msg_id,
            tx_msg_id: hdr.tx_msg_id,
            is_last_pkt,
        })
    }
}

impl TransportProgram for SimpleAck {
    fn name(&self) -> &'static str {
        "simple-ack"
    }

    /// Parse, one stateful atom, one branch: priced like NDP's pipelines
    /// (three ingress stages, one egress stage; NanoTransport Table 1).
    fn latencies(&self) -> StageLatencies {
        NDP_LATENCIES
    }

    fn ingress(&mut self, hdr: &PacketHeaders, x: &mut IngressExterns<'_>) -> IngressVerdict {
        if hdr.flags.contains(Flags::DATA) {
            return self.data(hdr, x);
        }
        // Sender side: control packets name our message and one packet.
        let bit = 1u64 << (hdr.pkt_offset & 63);
        if hdr.flags.contains(Flags::ACK) {
            // Algorithm 1: never send this packet again.
            x.delivered_event(hdr.tx_msg_id, bit);
        }
        if hdr.flags.contains(Flags::NACK) {
            // Algorithm 2: mark it for retransmission and send it now (the
            // credit already covers the whole message).
            x.credit_tx_event(CreditTx {
                tx_msg_id: hdr.tx_msg_id,
                rtx_bitmap: bit,
                new_credit: None,
                allow_tx: true,
            });
        }
        IngressVerdict::Drop
    }

    /// ACKs and NACKs leave as soon as the arbiter can take them.
    fn generate(&mut self, event: &EgressMetadata, g: &mut PacketGenerator<'_>) {
        g.emit(*event);
    }

    /// The whole message may go out at once.
    fn initial_credit(&self, packets: u16, _params: &ProgramParams) -> u16 {
        packets
    }
}

// ---------------------------------------------------------------------------
// A small network: hosts joined by a faulty wire (after tests/reliability.rs).
// ---------------------------------------------------------------------------

const MTU: u32 = 1024;

/// `n` hosts running SimpleAck on the test wire.
fn simple_ack_net(n: usize, faults: Faults, seed: u64) -> Net {
    let cfg = TransportConfig::default();
    let hosts = (0..n)
        .map(|i| {
            // The program's registers are sized like the reassembly
            // module's message table (one per `rx_msg_id`).
            let params = ProgramParams::new(&cfg, MTU, LINK);
            let program = Box::new(SimpleAck::new(params.max_rx_messages));
            NanoTransport::with_program(&cfg, ip(i), MTU, LINK, program).unwrap()
        })
        .collect();
    Net::with_hosts(hosts, faults, seed)
}

/// Bytes of a message of `packets` packets (the last one partly filled,
/// except for every third size).
fn len_of(packets: u16) -> u16 {
    let full = packets * MTU as u16;
    if packets.is_multiple_of(3) {
        full
    } else {
        full - 5 * packets
    }
}

/// What a run did.
struct Outcome {
    delivered: usize,
    failed: usize,
}

/// Sends `messages` (from, to, packets) at the given times and runs to
/// quiescence; checks that every message is delivered intact at most once,
/// that each is delivered or reported failed, that each sender hears of
/// each message once, and that nothing leaks.
fn exercise(net: &mut Net, messages: &[(usize, usize, u16, SimTime)], seed: u64) -> Outcome {
    let mut expected = HashMap::new();
    for (k, &(from, to, packets, at)) in messages.iter().enumerate() {
        let s = seed * 1_000_003 + k as u64;
        let len = len_of(packets);
        expected.insert(s, (from, to, len));
        net.send(from, to, len, s, at);
    }
    net.run(SimTime::MAX);
    let mut seen = HashMap::new();
    for (host, msg, _) in &net.delivered {
        let s = msg.payload[0];
        let &(from, to, len) = expected.get(&s).expect("a message nobody sent");
        assert_eq!((*host, msg.src_ip, msg.len), (to, ip(from), len));
        assert_eq!(msg.payload, masked(&pattern(len, s), len), "message {s}");
        *seen.entry(s).or_insert(0) += 1;
    }
    assert!(seen.values().all(|&n| n == 1), "a message delivered twice");
    let n = messages.len();
    let failed = net.failed.len();
    // Delivered and reported failed is possible (every ACK of it lost);
    // neither is not.
    assert!(
        seen.len() + failed >= n && net.sent.len() <= seen.len(),
        "{} delivered + {failed} failed < {n} sent (acknowledged: {})",
        seen.len(),
        net.sent.len()
    );
    assert_eq!(net.sent.len() + failed, n, "one outcome per message");
    for (i, h) in net.hosts.iter().enumerate() {
        assert_eq!(h.program_name(), "simple-ack");
        let o = h.occupancy();
        assert!(o.is_empty(), "host {i} leaks: {o:?}");
    }
    Outcome {
        delivered: seen.len(),
        failed,
    }
}

// ---------------------------------------------------------------------------
// Tests.
// ---------------------------------------------------------------------------

#[test]
fn every_size_from_1_to_38_packets_is_delivered_intact() {
    let mut net = simple_ack_net(3, Faults::default(), 1);
    // One message of each size, among three hosts, 2 us apart: each is on
    // the wire before the next starts. (Closer together, a sender's queue
    // grows past the 10 us retransmission timeout and SimpleAck, which has
    // no congestion control, resends packets still in flight.)
    let messages: Vec<_> = (1..=38u16)
        .map(|p| {
            let from = p as usize % 3;
            let to = (from + 1 + p as usize % 2) % 3;
            let at = SimTime::ZERO + SimDuration::from_ns(p as u64 * 2_000);
            (from, to, p, at)
        })
        .collect();
    let o = exercise(&mut net, &messages, 1);
    assert_eq!((o.delivered, o.failed), (38, 0));
    let total: u64 = (1..=38).sum();
    let stats: Vec<_> = net.hosts.iter().map(|h| h.stats.clone()).collect();
    let data: u64 = stats.iter().map(|s| s.tx_data_packets).sum();
    let acks: u64 = stats.iter().map(|s| s.tx_control_packets).sum();
    assert_eq!(data, total, "on a clean wire, every packet is sent once");
    assert_eq!(acks, total, "one ACK per data packet");
    assert!(stats.iter().all(|s| s.tx_timeouts == 0));
}

#[test]
fn a_whole_message_leaves_back_to_back() {
    // `initial_credit` = every packet: 38 data packets at line rate, none
    // waiting for credit (NDP and Homa stop after one BDP, 12 packets, and
    // wait for PULLs or GRANTs).
    let mut net = simple_ack_net(2, Faults::default(), 2);
    let o = exercise(&mut net, &[(0, 1, 38, SimTime::ZERO)], 2);
    assert_eq!((o.delivered, o.failed), (1, 0));
    assert!(38 > TransportConfig::default().bdp_packets);
    let data: Vec<_> = net.transmits.iter().filter(|t| t.0 == 0).collect();
    assert_eq!(data.len(), 38);
    assert!(data
        .iter()
        .all(|t| FrameRepr::parse(&t.2).unwrap().0.nt.flags == Flags::DATA));
    for w in data.windows(2) {
        // The next frame starts as soon as the previous one is on the wire.
        assert_eq!(w[1].1, w[0].1 + LINK.frame_time(w[0].2.len()));
    }
}

#[test]
fn trimmed_packets_are_recovered_by_nacks_not_timeouts() {
    let faults = Faults {
        trim: 0.2,
        ..Default::default()
    };
    let mut net = simple_ack_net(2, faults, 3);
    // One sender, messages far enough apart that none waits long behind
    // another.
    let messages: Vec<_> = (0..20u64)
        .map(|k| {
            let packets = 1 + (k * 7 % 38) as u16;
            (
                0,
                1,
                packets,
                SimTime::ZERO + SimDuration::from_ns(k * 2_000),
            )
        })
        .collect();
    let o = exercise(&mut net, &messages, 3);
    assert_eq!((o.delivered, o.failed), (20, 0));
    let (sender, receiver) = (&net.hosts[0].stats, &net.hosts[1].stats);
    assert!(receiver.rx_trimmed > 0, "the wire trimmed nothing");
    assert_eq!(sender.tx_timeouts, 0, "a NACK, not a timeout, recovers");
    // One NACK per trimmed packet, one retransmission per NACK.
    assert_eq!(sender.tx_retransmissions, receiver.rx_trimmed);
}

#[test]
fn under_faults_each_message_is_delivered_once_or_reported() {
    let faults = Faults {
        loss: 0.03,
        duplicate: 0.03,
        reorder: 0.05,
        trim: 0.1,
        truncate: 0.01,
    };
    for seed in 1..6 {
        let hosts = 4;
        let mut net = simple_ack_net(hosts, faults, seed);
        let messages: Vec<_> = (0..40u64)
            .map(|k| {
                let from = (k as usize * 7 + seed as usize) % hosts;
                let to = (from + 1 + k as usize % (hosts - 1)) % hosts;
                let packets = 1 + ((k * 11 + seed) % 38) as u16;
                (
                    from,
                    to,
                    packets,
                    SimTime::ZERO + SimDuration::from_ns(k * 37),
                )
            })
            .collect();
        let o = exercise(&mut net, &messages, seed);
        // 3% loss is well within five timeouts.
        assert_eq!((o.delivered, o.failed), (40, 0), "seed {seed}");
        let stats = |f: fn(&nanopu_transport::TransportStats) -> u64| -> u64 {
            net.hosts.iter().map(|h| f(&h.stats)).sum()
        };
        assert!(stats(|s| s.rx_trimmed) > 0 && stats(|s| s.tx_retransmissions) > 0);
    }
}

#[test]
fn heavy_faults_never_break_exactly_once() {
    let faults = Faults {
        loss: 0.2,
        duplicate: 0.1,
        reorder: 0.2,
        trim: 0.2,
        truncate: 0.05,
    };
    let mut failed = 0;
    for seed in 10..25 {
        let mut net = simple_ack_net(3, faults, seed);
        let messages: Vec<_> = (0..20u64)
            .map(|k| {
                let from = (k + seed) as usize % 3;
                let to = (from + 1 + k as usize % 2) % 3;
                let packets = 1 + ((k * 13 + seed) % 38) as u16;
                (
                    from,
                    to,
                    packets,
                    SimTime::ZERO + SimDuration::from_ns(k * 41),
                )
            })
            .collect();
        failed += exercise(&mut net, &messages, seed).failed;
    }
    // Failures are allowed (20% loss, five timeouts), but not many.
    assert!(failed < 15 * 20 / 5, "{failed} failures");
}

#[test]
fn a_black_hole_makes_every_sender_give_up() {
    let faults = Faults {
        loss: 1.0,
        ..Default::default()
    };
    let mut net = simple_ack_net(2, faults, 5);
    let messages: Vec<_> = (1..=10u16)
        .map(|p| (0, 1, p * 3, SimTime::ZERO + SimDuration::from_ns(p as u64)))
        .collect();
    let o = exercise(&mut net, &messages, 5);
    assert_eq!((o.delivered, o.failed), (0, 10));
}
