//! NanoTransport end to end between hosts on a faulty wire: every message
//! of every protocol is delivered exactly once and intact, or its sender
//! is told it failed; nothing leaks once traffic stops.

mod harness;

use harness::*;
use nanopu_sim::{SimDuration, SimTime};
use nanopu_transport::Protocol;
use nanopu_wire::FrameRepr;
use std::collections::HashMap;

const PROTOCOLS: [Protocol; 3] = [Protocol::Ndp, Protocol::Homa, Protocol::HomaTr];

#[test]
fn per_packet_latency_is_table_1() {
    for (protocol, ingress, egress) in [(Protocol::Ndp, 5_000, 310), (Protocol::Homa, 6_250, 940)] {
        let mut net = Net::new(2, protocol, Faults::default(), 1);
        let t0 = SimTime::ZERO + SimDuration::from_ns(50);
        net.send(0, 1, 16, 7, t0);
        net.run(SimTime::MAX);
        let (_, first_tx, frame) = net.transmits[0].clone();
        assert_eq!(frame.len(), 80, "a 16 B message is an 80 B packet");
        assert_eq!(first_tx, t0 + SimDuration::from_ps(2_810 + egress));
        let (_, msg, at) = &net.delivered[0];
        assert_eq!(msg.payload, pattern(16, 7));
        let arrival = first_tx + net.delay;
        assert_eq!(*at, arrival + SimDuration::from_ps(ingress + 940));
    }
}

/// Runs `messages` random messages among `hosts` under `faults`; checks
/// exactly-once intact delivery or reported failure, and no leaks.
fn exercise(
    protocol: Protocol,
    faults: Faults,
    seed: u64,
    hosts: usize,
    messages: u64,
) -> (usize, usize) {
    let mut net = Net::new(hosts, protocol, faults, seed);
    let mut expected = HashMap::new();
    for k in 0..messages {
        let from = (k as usize * 7 + seed as usize) % hosts;
        let to = (from + 1 + (k as usize % (hosts - 1))) % hosts;
        // Sizes from one packet to 38 packets.
        let len = [8u16, 16, 1000, 1024, 1500, 4096, 9000, 20_000, 38_912][(k % 9) as usize];
        let s = seed * 1_000_003 + k;
        let at = SimTime::ZERO + SimDuration::from_ns(k * 37);
        expected.insert(s, (from, to, len));
        net.send(from, to, len, s, at);
    }
    net.run(SimTime::MAX);
    let mut seen = HashMap::new();
    for (host, msg, _) in &net.delivered {
        let s = msg.payload[0];
        let &(from, to, len) = expected.get(&s).expect("a message nobody sent");
        assert_eq!((*host, msg.src_ip, msg.len), (to, ip(from), len));
        assert_eq!(
            msg.payload,
            masked(&pattern(len, s), len),
            "payload of message {s}"
        );
        *seen.entry(s).or_insert(0) += 1;
    }
    assert!(
        seen.values().all(|&n| n == 1),
        "a message was delivered twice"
    );
    let failures = net.failed.len();
    // A message can be both delivered and reported failed (every ACK of
    // it lost): the sender cannot know. Never neither.
    assert!(
        seen.len() + failures >= messages as usize && net.sent.len() <= seen.len(),
        "{protocol:?}: {} delivered + {failures} failed < {messages} sent (acknowledged: {})",
        seen.len(),
        net.sent.len()
    );
    assert_eq!(
        net.sent.len() + failures,
        messages as usize,
        "each sender outcome once"
    );
    for (i, h) in net.hosts.iter().enumerate() {
        let o = h.occupancy();
        assert!(o.is_empty(), "{protocol:?} host {i} leaks: {o:?}");
    }
    (seen.len(), failures)
}

#[test]
fn lossless_everything_is_delivered() {
    for p in PROTOCOLS {
        let (delivered, failed) = exercise(p, Faults::default(), 1, 4, 60);
        assert_eq!((delivered, failed), (60, 0), "{p:?}");
    }
}

#[test]
fn faults_every_message_is_delivered_once_or_reported() {
    let faults = Faults {
        loss: 0.02,
        duplicate: 0.02,
        reorder: 0.05,
        trim: 0.05,
        truncate: 0.01,
    };
    for p in PROTOCOLS {
        for seed in 1..4 {
            let (delivered, failed) = exercise(p, faults, seed, 4, 60);
            // With 2% loss every message should make it within 5 timeouts.
            assert_eq!(failed, 0, "{p:?} seed {seed}: {failed} failed");
            assert_eq!(delivered, 60);
        }
    }
}

#[test]
fn a_black_hole_makes_the_sender_give_up() {
    for p in PROTOCOLS {
        let faults = Faults {
            loss: 1.0,
            ..Default::default()
        };
        let (delivered, failed) = exercise(p, faults, 5, 2, 10);
        assert_eq!((delivered, failed), (0, 10), "{p:?}");
    }
}

#[test]
fn malformed_packets_are_counted_and_dropped() {
    let mut net = Net::new(2, Protocol::Ndp, Faults::default(), 1);
    net.send(0, 1, 2000, 3, SimTime::ZERO);
    net.run(SimTime::MAX);
    let (_, _, frame) = net.transmits[0].clone();
    let mut actions = Vec::new();
    let h = &mut net.hosts[1];
    for cut in [0, 10, 40, 63, 64, 100] {
        h.packet_in(&frame[..cut.min(frame.len())], SimTime::ZERO, &mut actions);
    }
    // Offset beyond the message.
    let (mut repr, payload) = FrameRepr::parse(&frame).unwrap();
    repr.nt.pkt_offset = 9;
    let mut bad = vec![0; repr.frame_len()];
    repr.emit(payload, &mut bad).unwrap();
    h.packet_in(&bad, SimTime::ZERO, &mut actions);
    assert_eq!(h.stats.rx_malformed, 7);
    assert!(actions.is_empty());
}

#[test]
fn heavy_faults_never_break_exactly_once() {
    let faults = Faults {
        loss: 0.15,
        duplicate: 0.1,
        reorder: 0.2,
        trim: 0.2,
        truncate: 0.05,
    };
    let mut failures = 0;
    for p in PROTOCOLS {
        for seed in 10..30 {
            // Failures are allowed here (15% loss, 5 timeouts), but each
            // message is delivered once or reported, and nothing leaks.
            failures += exercise(p, faults, seed, 3, 30).1;
        }
    }
    assert!(failures < 3 * 20 * 30 / 10, "{failures} failures");
}
