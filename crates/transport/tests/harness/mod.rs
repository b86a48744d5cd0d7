//! A few NanoTransports joined by an ideal wire (100 ns, no queueing) with
//! injected faults: the test bench of the transport's integration tests.
#![allow(dead_code)]

use nanopu_sim::{EventQueue, SimDuration, SimTime};
use nanopu_transport::{
    NanoTransport, OutMessage, Protocol, TransportAction, TransportConfig, TransportEvent, TxLink,
};
use nanopu_wire::{Flags, FrameRepr};

pub const LINK: TxLink = TxLink {
    gbps: 200,
    overhead_bytes: 20,
};

pub fn ip(i: usize) -> u32 {
    0x0a00_0001 + i as u32
}

/// Fault rates on every frame.
#[derive(Clone, Copy, Default)]
pub struct Faults {
    pub loss: f64,
    pub duplicate: f64,
    pub reorder: f64,
    pub trim: f64,
    pub truncate: f64,
}

pub enum Ev {
    /// A core hands a message to its host's transport.
    Send(usize, OutMessage),
    Frame(usize, Vec<u8>),
    Transport(usize, TransportEvent),
}

pub struct Net {
    pub hosts: Vec<NanoTransport>,
    pub queue: EventQueue<Ev>,
    pub faults: Faults,
    pub rng: u64,
    pub delay: SimDuration,
    pub delivered: Vec<(usize, nanopu_transport::RxMessage, SimTime)>,
    pub sent: Vec<(usize, u16)>,
    pub failed: Vec<(usize, u16)>,
    pub transmits: Vec<(usize, SimTime, Vec<u8>)>,
    pub actions: Vec<TransportAction>,
}

impl Net {
    pub fn new(n: usize, protocol: Protocol, faults: Faults, seed: u64) -> Net {
        let cfg = TransportConfig::with_protocol(protocol);
        let hosts = (0..n)
            .map(|i| NanoTransport::new(&cfg, ip(i), 1024, LINK).unwrap())
            .collect();
        Net::with_hosts(hosts, faults, seed)
    }

    /// Host `i` of `hosts` gets address `ip(i)`.
    pub fn with_hosts(hosts: Vec<NanoTransport>, faults: Faults, seed: u64) -> Net {
        Net {
            hosts,
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

    pub fn chance(&mut self, p: f64) -> bool {
        // xorshift64*: deterministic, no dependency.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let r = self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11;
        (r as f64 / (1u64 << 53) as f64) < p
    }

    pub fn apply(&mut self, host: usize) {
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

    pub fn wire(&mut self, from: usize, mut frame: Vec<u8>, at: SimTime) {
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

    /// Queues a message for `from`'s transport at `at` (inputs reach a
    /// transport in time order, as in the simulator).
    pub fn send(&mut self, from: usize, to: usize, len: u16, seed: u64, at: SimTime) {
        let msg = OutMessage {
            dst_ip: ip(to),
            dst_port: (seed % 4) as u16,
            src_port: 9,
            len,
            payload: pattern(len, seed),
            tag: 0,
        };
        self.queue.schedule(at, Ev::Send(from, msg));
    }

    pub fn run(&mut self, until: SimTime) {
        while let Some((t, ev)) = self.queue.pop_until(until) {
            let mut actions = std::mem::take(&mut self.actions);
            let host = match ev {
                Ev::Send(h, msg) => {
                    self.hosts[h].send_message(msg, t, &mut actions);
                    h
                }
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
pub fn pattern(len: u16, seed: u64) -> Vec<u64> {
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

pub fn masked(words: &[u64], len: u16) -> Vec<u64> {
    let mut w = words.to_vec();
    if !len.is_multiple_of(8) {
        if let Some(last) = w.last_mut() {
            *last &= (1u64 << ((len % 8) * 8)) - 1;
        }
    }
    w
}
