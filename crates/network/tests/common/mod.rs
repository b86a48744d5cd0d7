//! A tiny harness: an event queue around a [`Network`], and frames.

#![allow(dead_code)]

use nanopu_network::{host_ip, HostId, NetAction, NetEvent, Network, NetworkConfig};
use nanopu_sim::{EventQueue, SimTime};
use nanopu_wire::{
    EthernetAddress, EthernetRepr, Flags, FrameRepr, Ipv4Address, Ipv4Repr, NanoTransportRepr,
};

/// A frame delivered to a host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    pub host: HostId,
    pub frame: Vec<u8>,
    pub first_bit: SimTime,
}

pub struct Harness {
    pub net: Network,
    queue: EventQueue<NetEvent>,
    actions: Vec<NetAction>,
    pub delivered: Vec<Delivery>,
}

impl Harness {
    pub fn new(cfg: &NetworkConfig) -> Harness {
        Harness {
            net: Network::new(cfg).unwrap(),
            queue: EventQueue::new(),
            actions: Vec::new(),
            delivered: Vec::new(),
        }
    }

    pub fn send(&mut self, host: HostId, frame: Vec<u8>, ready: SimTime) {
        self.net.send(host, frame, ready, &mut self.actions);
        self.drain();
    }

    fn drain(&mut self) {
        for a in self.actions.drain(..) {
            match a {
                NetAction::Deliver {
                    host,
                    frame,
                    first_bit,
                } => {
                    assert!(first_bit >= self.queue.now(), "delivery in the past");
                    self.delivered.push(Delivery {
                        host,
                        frame,
                        first_bit,
                    })
                }
                NetAction::Schedule { at, event } => {
                    assert!(at >= self.queue.now(), "event in the past");
                    self.queue.schedule(at, event)
                }
                NetAction::Reserve { port } => {
                    let key = self.queue.reserve();
                    self.net.reserved(port, key);
                }
                NetAction::ScheduleReserved { at, key, event } => {
                    assert!(at >= self.queue.now(), "event in the past");
                    self.queue.schedule_reserved(at, key, event)
                }
            }
        }
    }

    /// Runs until no event is left.
    pub fn run(&mut self) {
        while let Some((now, ev)) = self.queue.pop_until(SimTime::MAX) {
            let key = self.queue.current();
            self.net.handle_keyed(ev, now, key, &mut self.actions);
            self.drain();
        }
        self.net.settle_through(SimTime::MAX);
        assert!(!self.net.lazy_pending());
        assert_eq!(self.queue.late, 0);
    }

    /// Deliveries in order of first bit (stable).
    pub fn by_arrival(&self) -> Vec<Delivery> {
        let mut d = self.delivered.clone();
        d.sort_by_key(|d| d.first_bit);
        d
    }
}

/// A nanoPU frame from host `src` to host `dst`.
pub fn frame(
    src: HostId,
    dst: HostId,
    flags: Flags,
    tos: u8,
    payload: usize,
    msg_id: u16,
) -> Vec<u8> {
    let r = FrameRepr::new(
        EthernetRepr {
            src_addr: EthernetAddress::for_ipv4(host_ip(src)),
            dst_addr: EthernetAddress::for_ipv4(host_ip(dst)),
            ethertype: 0,
        },
        Ipv4Repr {
            src_addr: Ipv4Address::from_bits(host_ip(src)),
            dst_addr: Ipv4Address::from_bits(host_ip(dst)),
            protocol: 0,
            payload_len: 0,
            ttl: 64,
            tos,
            ident: 0,
            dont_frag: true,
        },
        NanoTransportRepr {
            flags,
            src_context: 1,
            dst_context: 2,
            msg_len: payload as u16,
            tx_msg_id: msg_id,
            priority: tos,
            ..Default::default()
        },
        payload,
    );
    let mut buf = vec![0u8; r.frame_len()];
    let data: Vec<u8> = (0..payload).map(|i| (i * 7) as u8).collect();
    r.emit(&data, &mut buf).unwrap();
    buf
}

/// A DATA frame of `payload` bytes.
pub fn data(src: HostId, dst: HostId, payload: usize) -> Vec<u8> {
    frame(src, dst, Flags::DATA, 0, payload, 0)
}

pub fn ns(n: u64) -> SimTime {
    SimTime(n * 1_000_000)
}

/// Source host of a delivered frame.
pub fn src_of(frame: &[u8]) -> HostId {
    let ip = u32::from_be_bytes(frame[26..30].try_into().unwrap());
    (ip - 0x0a00_0001) as usize
}
