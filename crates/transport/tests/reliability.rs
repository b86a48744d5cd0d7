//! NanoTransport end to end between hosts on a faulty wire: every message
//! of every protocol is delivered exactly once and intact, or its sender
//! is told it failed; nothing leaks once traffic stops.

use nanopu_sim::{EventQueue, SimDuration, SimTime};
use nanopu_transport::{
    NanoTransport, OutMessage, Protocol, TransportAction, TransportConfig, TransportEvent, TxLink,
};
use nanopu_wire::{Flags, FrameRepr};
use std::collections::HashMap;

const LINK: TxLink = TxLink {
    gbps: 200,
    overhead_bytes: 20,
};

fn ip(i: usize) -> u32 {
    0x0a00_0001 + i as u32
}

/// Fault rates on every frame.
#[derive(Clone, Copy, Default)]
struct Faults {
    loss: f64,
    duplicate: f64,
    reorder: f64,
    trim: f64,
    truncate: f64,
}

enum Ev {
    Frame(usize, Vec<u8>),
    Transport(usize, TransportEvent),
}

struct Net {
    hosts: Vec<NanoTransport>,
    queue: EventQueue<Ev>,
    faults: Faults,
    rng: u64,
    delay: SimDuration,
    delivered: Vec<(usize, nanopu_transport::RxMessage, SimTime)>,
    sent: Vec<(usize, u16)>,
    failed: Vec<(usize, u16)>,
    transmits: Vec<(usize, SimTime, Vec<u8>)>,
    actions: Vec<TransportAction>,
}

impl Net {
    fn new(n: usize, protocol: Protocol, faults: Faults, seed: u64) -> Net {
        let cfg = TransportConfig::with_protocol(protocol);
        Net {
            hosts: (0..n)
                .map(|i| NanoTransport::new(&cfg, ip(i), 1024, LINK).unwrap())
                .collect(),
            queue: EventQueue::new(),
            faults,
            rng: seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1,
            delay: SimDuration::from_ns(100),
            delivered: Vec::new(),
            sent: Vec::new(),
            failed: Vec::new(),
            transmits: Vec::new(),
            actions: Vec::new(),
        }
    }

    fn chance(&mut self, p: f64) -> bool {
        // xorshift64*: deterministic, no dependency.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let r = self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11;
        (r as f64 / (1u64 << 53) as f64) < p
    }

    fn apply(&mut self, host: usize) {
        let mut actions = std::mem::take(&mut self.actions);
        for a in actions.drain(..) {
            match a {
                TransportAction::Deliver { msg, at } => self.delivered.push((host, msg, at)),
                TransportAction::Transmit { frame, at } => self.wire(host, frame, at),
                TransportAction::Schedule { at, event } => {
                    self.queue.schedule(at, Ev::Transport(host, event))
                }
                TransportAction::Sent { outcome, .. } => self.sent.push((host, outcome.tx_msg_id)),
                TransportAction::Failed { outcome, .. } => {
                    self.failed.push((host, outcome.tx_msg_id))
                }
            }
        }
        self.actions = actions;
    }

    fn wire(&mut self, from: usize, mut frame: Vec<u8>, at: SimTime) {
        self.transmits.push((from, at, frame.clone()));
        let Ok((repr, _)) = FrameRepr::parse(&frame) else {
            panic!("the transport sent a frame that does not parse");
        };
        let to = (repr.ip.dst_addr.to_bits() - ip(0)) as usize;
        let f = self.faults;
        if self.chance(f.loss) {
            return;
        }
        if repr.nt.flags.contains(Flags::DATA) && self.chance(f.trim) {
            let mut r = repr;
            r.nt.flags.insert(Flags::CHOP);
            r = FrameRepr::new(r.eth, r.ip, r.nt, 0);
            frame = vec![0; r.frame_len()];
            r.emit(&[], &mut frame).unwrap();
        }
        if self.chance(f.truncate) {
            frame.truncate(frame.len() / 2);
        }
        let mut arrive = at + self.delay;
        if self.chance(f.reorder) {
            arrive += SimDuration::from_ns(700);
        }
        if self.chance(f.duplicate) {
            self.queue.schedule(
                arrive + SimDuration::from_ns(3),
                Ev::Frame(to, frame.clone()),
            );
        }
        self.queue.schedule(arrive, Ev::Frame(to, frame));
    }

    fn send(&mut self, from: usize, to: usize, len: u16, seed: u64, at: SimTime) {
        let payload = pattern(len, seed);
        let msg = OutMessage {
            dst_ip: ip(to),
            dst_port: (seed % 4) as u16,
            src_port: 9,
            len,
            payload,
            tag: 0,
        };
        let mut actions = std::mem::take(&mut self.actions);
        self.hosts[from].send_message(msg, at, &mut actions);
        self.actions = actions;
        self.apply(from);
    }

    fn run(&mut self, until: SimTime) {
        while let Some((t, ev)) = self.queue.pop_until(until) {
            let mut actions = std::mem::take(&mut self.actions);
            let host = match ev {
                Ev::Frame(h, f) => {
                    self.hosts[h].packet_in(&f, t, &mut actions);
                    h
                }
                Ev::Transport(h, e) => {
                    self.hosts[h].handle(e, t, &mut actions);
                    h
                }
            };
            self.actions = actions;
            self.apply(host);
        }
    }
}

/// Payload words of a message, derived from a seed (first word = seed).
fn pattern(len: u16, seed: u64) -> Vec<u64> {
    let words = (len as usize).div_ceil(8);
    (0..words as u64)
        .map(|i| {
            if i == 0 {
                seed
            } else {
                seed.wrapping_mul(31).wrapping_add(i * 0x0101)
            }
        })
        .collect()
}

fn masked(words: &[u64], len: u16) -> Vec<u64> {
    let mut w = words.to_vec();
    if !len.is_multiple_of(8) {
        if let Some(last) = w.last_mut() {
            *last &= (1u64 << ((len % 8) * 8)) - 1;
        }
    }
    w
}

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
