//! An output-queued, cut-through switch with strict priorities and NDP
//! trimming.
//!
//! **Forwarding.** A frame whose first bit reaches an input at `t` joins its
//! output queue at `t + forwarding_latency` (cut-through: no wait for the
//! last bit; every link has the same rate, so the output never runs ahead of
//! the input). The output port is the destination host's route
//! ([`crate::topology`]); among equal-cost uplinks a leaf picks one per
//! message (ECMP: a hash of source and destination IPv4 address, transport
//! source and destination context and `tx_msg_id`) or per packet (spray,
//! round robin). Frames are forwarded unchanged: no TTL decrement, no MAC
//! rewrite (an assumption; the hosts do not look at either). A frame whose
//! IPv4 header cannot be read (shorter than Ethernet + 20 bytes, or not
//! EtherType IPv4) is dropped as malformed; one that can be read is
//! forwarded by its destination address even if the rest does not parse;
//! a destination that is no host is dropped as unroutable.
//!
//! **Priorities.** Each output port has `priority_bands` FIFO queues served
//! in strict priority, highest band first. A frame's band is its IPv4 ToS
//! byte, capped at `priority_bands - 1`: the nanoPU transport writes its
//! priority straight into the ToS byte (Homa priorities 0-7, Homa §3.4;
//! control packets at the top). A trimmed header (nanoPU frame with CHOP)
//! always goes in the highest band, at this switch and every later one
//! (NDP §3.2: headers are forwarded with priority).
//!
//! **Buffer.** A frame's bytes are held from when it joins a queue until its
//! last bit leaves ([`crate::port`]). `buffer_bytes` is per port or shared
//! by all ports of the switch (`buffer`), first come first served. When a
//! frame does not fit:
//! - with `trimming` on, a nanoPU DATA frame not yet trimmed is cut to its
//!   64-byte header ([`trim_frame`]) and queued in the highest band, charged
//!   to `trim_queue_bytes`, a separate allowance (per port or shared, as the
//!   buffer): NDP §3.2's header queue; an arriving header (CHOP) that does
//!   not fit the buffer is charged there too. If the allowance is full the
//!   frame is dropped (`trim_full`).
//! - otherwise the frame is dropped (`buffer_full`).
//!
//! `buffer_bytes` thus plays the part of NDP's short data queue (NDP uses
//! 8 packets); a switch without trimming is a plain tail-drop switch.

use crate::config::{BufferKind, LoadBalancing, SwitchConfig};
use crate::port::{Charge, OutputPort};
use crate::topology::LocalRoute;
use nanopu_sim::SimTime;
use nanopu_wire::frame::{HEADER_LEN, IPV4_OFFSET, NANOTRANSPORT_OFFSET};
use nanopu_wire::nanotransport::{self, field as nt};
use nanopu_wire::{ipv4, Flags, FrameRepr};
use serde::Serialize;

/// Frames a switch dropped, by reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DropStats {
    /// The data buffer was full and the frame could not be trimmed
    /// (trimming off, or not an untrimmed nanoPU DATA frame).
    pub buffer_full: u64,
    /// The buffer was full and so was the trimmed-header allowance.
    pub trim_full: u64,
    /// The IPv4 header could not be read.
    pub malformed: u64,
    /// The destination address is no host.
    pub no_route: u64,
}

impl DropStats {
    /// All drops.
    pub fn total(&self) -> u64 {
        self.buffer_full + self.trim_full + self.malformed + self.no_route
    }

    fn add(&mut self, o: &DropStats) {
        self.buffer_full += o.buffer_full;
        self.trim_full += o.trim_full;
        self.malformed += o.malformed;
        self.no_route += o.no_route;
    }
}

/// What a switch did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SwitchStats {
    /// Frames admitted to an output queue (trimmed ones included).
    pub forwarded: u64,
    /// Their bytes (after trimming).
    pub forwarded_bytes: u64,
    /// Frames trimmed to their header for lack of buffer.
    pub trimmed: u64,
    /// Frames dropped.
    pub dropped: DropStats,
    /// Most bytes one output port held at once.
    pub max_port_bytes: u64,
    /// Most bytes the whole switch held at once.
    pub max_switch_bytes: u64,
}

impl SwitchStats {
    /// Adds `o`'s counters (maxima are maxima).
    pub fn add(&mut self, o: &SwitchStats) {
        self.forwarded += o.forwarded;
        self.forwarded_bytes += o.forwarded_bytes;
        self.trimmed += o.trimmed;
        self.dropped.add(&o.dropped);
        self.max_port_bytes = self.max_port_bytes.max(o.max_port_bytes);
        self.max_switch_bytes = self.max_switch_bytes.max(o.max_switch_bytes);
    }
}

/// One switch: where its ports are in the network's port list, its shared
/// occupancy and its counters.
#[derive(Debug)]
pub(crate) struct Switch {
    /// Index of its port 0 in the network's port list.
    pub first_port: usize,
    /// Bytes charged to the data buffer, all ports.
    pub buffer_bytes: u64,
    /// Bytes charged to the trimmed-header allowance, all ports.
    pub trim_bytes: u64,
    /// Next uplink when spraying.
    spray_next: usize,
    pub stats: SwitchStats,
    /// Ports (network port indices) whose frame end is pending without an
    /// event (lazy mode), in no particular order: settling is looked for
    /// among these, not among all of a switch's ports (81 on a single
    /// switch with 80 clients).
    pub pending: Vec<u32>,
    /// No pending frame end is earlier (a lower bound).
    pub earliest_pending: SimTime,
}

/// What the switch reads of a frame to forward it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Classified {
    pub dst_ip: u32,
    /// Queue band (the capped ToS byte, or the highest for a header).
    pub band: usize,
    /// A nanoPU frame with CHOP: a trimmed header.
    pub chopped: bool,
    /// A nanoPU DATA frame without CHOP: could be trimmed.
    pub trimmable: bool,
}

/// Reads the destination and band of a frame, or `None` if its IPv4 header
/// cannot be read. Looks at fixed offsets only; never panics.
pub(crate) fn classify(frame: &[u8], bands: usize) -> Option<Classified> {
    if frame.len() < IPV4_OFFSET + ipv4::HEADER_LEN
        || frame[12..14] != nanopu_wire::ethernet::ETHERTYPE_IPV4.to_be_bytes()
    {
        return None;
    }
    let ip = ipv4::Packet::new_unchecked(&frame[IPV4_OFFSET..]);
    let flags = (ip.protocol() == nanotransport::PROTOCOL)
        .then(|| frame.get(NANOTRANSPORT_OFFSET + nt::FLAGS))
        .flatten()
        .map(|&b| Flags::from_bits_retain(b));
    let chopped = flags.is_some_and(|f| f.contains(Flags::CHOP));
    let trimmable = flags.is_some_and(|f| f.contains(Flags::DATA) && !f.contains(Flags::CHOP));
    let top = bands - 1;
    Some(Classified {
        dst_ip: ip.dst_addr().to_bits(),
        band: if chopped {
            top
        } else {
            usize::from(ip.tos()).min(top)
        },
        chopped,
        trimmable,
    })
}

/// Trims a nanoPU DATA frame to its 64-byte header, as a congested NDP
/// switch does (NDP §3.2): CHOP set, the IPv4 total length and checksum
/// fixed, every other header field kept (the transport padding comes out
/// zero). Returns whether it did; a frame that does not parse, is no DATA
/// frame or is already trimmed is left alone.
pub fn trim_frame(frame: &mut Vec<u8>) -> bool {
    let Ok((mut r, _)) = FrameRepr::parse(frame) else {
        return false;
    };
    if !r.nt.flags.contains(Flags::DATA) || r.nt.flags.contains(Flags::CHOP) {
        return false;
    }
    r.nt.flags.insert(Flags::CHOP);
    r.payload_len = 0;
    r.ip.payload_len = nanotransport::HEADER_LEN;
    if r.emit(&[], &mut frame[..HEADER_LEN]).is_err() {
        return false;
    }
    frame.truncate(HEADER_LEN);
    true
}

/// Hash of a frame's message identity for ECMP: FNV-1a over the source and
/// destination IPv4 addresses and, for a nanoPU frame, the source and
/// destination context and `tx_msg_id`; then a SplitMix64 finalizer so
/// that the low bits mix well.
pub(crate) fn flow_hash(frame: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    };
    // Source and destination addresses: bytes 12..20 of the IPv4 header.
    if let Some(addrs) = frame.get(IPV4_OFFSET + 12..IPV4_OFFSET + 20) {
        eat(addrs);
    }
    let is_nanopu = frame.get(IPV4_OFFSET + 9) == Some(&nanotransport::PROTOCOL);
    if is_nanopu {
        if let Some(t) = frame.get(NANOTRANSPORT_OFFSET..HEADER_LEN) {
            eat(&t[nt::SRC_CONTEXT]);
            eat(&t[nt::DST_CONTEXT]);
            eat(&t[nt::TX_MSG_ID]);
        }
    }
    let mut z = h.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Whether a frame was admitted, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Queue it in `band`, charged to `charge`; `trimmed` if it was cut.
    Queue {
        band: usize,
        charge: Charge,
        trimmed: bool,
    },
    Drop,
}

impl Switch {
    pub fn new(first_port: usize) -> Switch {
        Switch {
            first_port,
            buffer_bytes: 0,
            trim_bytes: 0,
            spray_next: 0,
            stats: SwitchStats::default(),
            pending: Vec::new(),
            earliest_pending: SimTime::MAX,
        }
    }

    /// The local port for a frame, given the route to its destination.
    pub fn choose(&mut self, route: LocalRoute, lb: LoadBalancing, frame: &[u8]) -> usize {
        match route {
            LocalRoute::Port(p) => p,
            LocalRoute::Spread { first, count } => {
                let i = match lb {
                    LoadBalancing::Ecmp => (flow_hash(frame) % count as u64) as usize,
                    LoadBalancing::Spray => {
                        let i = self.spray_next % count;
                        self.spray_next = i + 1;
                        i
                    }
                };
                first + i
            }
        }
    }

    /// Admits `frame` to `port` (one of this switch's), trimming it if the
    /// buffer is full and it can be trimmed; counts the outcome. The caller
    /// charges the port with [`Switch::hold`] and queues the frame.
    pub fn admit(
        &mut self,
        cfg: &SwitchConfig,
        port: &OutputPort,
        c: Classified,
        frame: &mut Vec<u8>,
    ) -> Admission {
        let top = port.bands() - 1;
        let (buffer_used, trim_used) = match cfg.buffer {
            BufferKind::PerPort => (port.buffer_bytes, port.trim_bytes),
            BufferKind::Shared => (self.buffer_bytes, self.trim_bytes),
        };
        let len = frame.len() as u64;
        let trim_fits = |len: u64| trim_used + len <= cfg.trim_queue_bytes;
        let admission = if buffer_used + len <= cfg.buffer_bytes {
            Admission::Queue {
                band: c.band,
                charge: Charge::Buffer,
                trimmed: false,
            }
        } else if !cfg.trimming || !(c.chopped || c.trimmable) {
            self.stats.dropped.buffer_full += 1;
            Admission::Drop
        } else if c.chopped && trim_fits(len) {
            Admission::Queue {
                band: top,
                charge: Charge::Trim,
                trimmed: false,
            }
        } else if c.chopped || !trim_fits(HEADER_LEN as u64) {
            self.stats.dropped.trim_full += 1;
            Admission::Drop
        } else if trim_frame(frame) {
            Admission::Queue {
                band: top,
                charge: Charge::Trim,
                trimmed: true,
            }
        } else {
            // Looked like DATA but does not parse (a bad checksum, say).
            self.stats.dropped.buffer_full += 1;
            Admission::Drop
        };
        if let Admission::Queue { trimmed, .. } = admission {
            self.stats.forwarded += 1;
            self.stats.forwarded_bytes += frame.len() as u64;
            self.stats.trimmed += u64::from(trimmed);
        }
        admission
    }

    /// Charges the switch-wide occupancy (the port charges itself).
    pub fn hold(&mut self, len: u64, charge: Charge, port_held: u64) {
        match charge {
            Charge::Trim => self.trim_bytes += len,
            Charge::Buffer | Charge::Unlimited => self.buffer_bytes += len,
        }
        self.stats.max_port_bytes = self.stats.max_port_bytes.max(port_held);
        self.stats.max_switch_bytes = self
            .stats
            .max_switch_bytes
            .max(self.buffer_bytes + self.trim_bytes);
    }

    /// Releases what [`Switch::hold`] charged.
    pub fn release(&mut self, len: u64, charge: Charge) {
        match charge {
            Charge::Trim => self.trim_bytes -= len,
            Charge::Buffer | Charge::Unlimited => self.buffer_bytes -= len,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nanopu_wire::{EthernetAddress, EthernetRepr, Ipv4Address, Ipv4Repr, NanoTransportRepr};

    fn frame(flags: Flags, tos: u8, payload: usize) -> Vec<u8> {
        let r = FrameRepr::new(
            EthernetRepr {
                src_addr: EthernetAddress([2, 0, 0, 0, 0, 1]),
                dst_addr: EthernetAddress([2, 0, 0, 0, 0, 2]),
                ethertype: 0,
            },
            Ipv4Repr {
                src_addr: Ipv4Address::new(10, 0, 0, 1),
                dst_addr: Ipv4Address::new(10, 0, 0, 2),
                protocol: 0,
                payload_len: 0,
                ttl: 64,
                tos,
                ident: 9,
                dont_frag: true,
            },
            NanoTransportRepr {
                flags,
                src_context: 3,
                dst_context: 4,
                msg_len: 3000,
                pkt_offset: 2,
                tx_msg_id: 77,
                buf_ptr: 5,
                priority: 6,
                ..Default::default()
            },
            payload,
        );
        let mut buf = vec![0u8; r.frame_len()];
        let data: Vec<u8> = (0..payload).map(|i| i as u8).collect();
        r.emit(&data, &mut buf).unwrap();
        buf
    }

    #[test]
    fn trimming_keeps_the_header() {
        let mut f = frame(Flags::DATA, 5, 1024);
        let (before, _) = FrameRepr::parse(&f).unwrap();
        assert!(trim_frame(&mut f));
        assert_eq!(f.len(), HEADER_LEN);
        let (after, payload) = FrameRepr::parse(&f).unwrap();
        assert!(payload.is_empty());
        assert_eq!(after.nt.flags, Flags::DATA | Flags::CHOP);
        let mut expect = before;
        expect.nt.flags = Flags::DATA | Flags::CHOP;
        expect.payload_len = 0;
        expect.ip.payload_len = nanotransport::HEADER_LEN;
        assert_eq!(after, expect);
        // Only once; never a control frame.
        assert!(!trim_frame(&mut f));
        let mut ack = frame(Flags::ACK, 7, 0);
        assert!(!trim_frame(&mut ack));
        let mut junk = vec![0xffu8; 100];
        assert!(!trim_frame(&mut junk));
        assert_eq!(junk, vec![0xffu8; 100]);
    }

    #[test]
    fn classification() {
        let c = classify(&frame(Flags::DATA, 3, 8), 8).unwrap();
        assert_eq!(c.dst_ip, 0x0a00_0002);
        assert_eq!((c.band, c.chopped, c.trimmable), (3, false, true));
        // ToS beyond the bands: capped.
        assert_eq!(classify(&frame(Flags::ACK, 200, 0), 8).unwrap().band, 7);
        assert_eq!(classify(&frame(Flags::ACK, 5, 0), 4).unwrap().band, 3);
        // A header: highest band whatever its ToS.
        let c = classify(&frame(Flags::DATA | Flags::CHOP, 0, 0), 8).unwrap();
        assert_eq!((c.band, c.chopped, c.trimmable), (7, true, false));
        // Unreadable.
        assert_eq!(classify(&frame(Flags::DATA, 0, 8)[..33], 8), None);
        let mut f = frame(Flags::DATA, 0, 8);
        f[12] = 0x86;
        assert_eq!(classify(&f, 8), None);
        // Readable IPv4 header, the rest cut off: routable, not trimmable.
        let c = classify(&frame(Flags::DATA, 1, 8)[..34], 8).unwrap();
        assert_eq!((c.dst_ip, c.band, c.trimmable), (0x0a00_0002, 1, false));
    }

    #[test]
    fn admission() {
        use crate::topology::Endpoint;
        use nanopu_sim::{SimDuration, SimTime};
        let cfg = SwitchConfig {
            buffer_bytes: 100,
            trim_queue_bytes: 128,
            ..SwitchConfig::default()
        };
        let mut sw = Switch::new(0);
        let mut port = OutputPort::new(Some(0), Endpoint::Host(1), SimDuration::ZERO, 200, 8);
        let admit = |sw: &mut Switch, port: &mut OutputPort, cfg: &SwitchConfig, mut f: Vec<u8>| {
            let c = classify(&f, 8).unwrap();
            let a = sw.admit(cfg, port, c, &mut f);
            if let Admission::Queue { charge, .. } = a {
                port.hold(f.len() as u64, charge, SimTime::ZERO);
                sw.hold(f.len() as u64, charge, port.held());
            }
            (a, f.len())
        };
        let queue = |band, charge, trimmed| Admission::Queue {
            band,
            charge,
            trimmed,
        };
        // 72 bytes fit the 100-byte buffer; the next 72 do not and are trimmed.
        let (a, _) = admit(&mut sw, &mut port, &cfg, frame(Flags::DATA, 2, 8));
        assert_eq!(a, queue(2, Charge::Buffer, false));
        let (a, len) = admit(&mut sw, &mut port, &cfg, frame(Flags::DATA, 2, 8));
        assert_eq!((a, len), (queue(7, Charge::Trim, true), 64));
        // An arriving header that does not fit the buffer: the allowance.
        let (a, _) = admit(
            &mut sw,
            &mut port,
            &cfg,
            frame(Flags::DATA | Flags::CHOP, 0, 0),
        );
        assert_eq!(a, queue(7, Charge::Trim, false));
        // Allowance full (128 bytes): drops.
        let (a, _) = admit(&mut sw, &mut port, &cfg, frame(Flags::DATA, 2, 8));
        assert_eq!(a, Admission::Drop);
        let (a, _) = admit(&mut sw, &mut port, &cfg, frame(Flags::PULL, 7, 0));
        assert_eq!(a, Admission::Drop);
        assert_eq!(
            (sw.stats.dropped.trim_full, sw.stats.dropped.buffer_full),
            (1, 1)
        );
        assert_eq!((sw.stats.forwarded, sw.stats.trimmed), (3, 1));
        assert_eq!((sw.buffer_bytes, sw.trim_bytes), (72, 128));
        // Trimming off: a plain tail drop.
        let off = SwitchConfig {
            trimming: false,
            ..cfg.clone()
        };
        let (a, _) = admit(&mut sw, &mut port, &off, frame(Flags::DATA, 2, 8));
        assert_eq!(a, Admission::Drop);
        assert_eq!(sw.stats.dropped.buffer_full, 2);
    }

    #[test]
    fn ecmp_hash_is_per_message() {
        let a = frame(Flags::DATA, 0, 100);
        let mut b = frame(Flags::DATA, 0, 8);
        // Another packet of the same message: same hash.
        b[NANOTRANSPORT_OFFSET + 7] = 9;
        assert_eq!(flow_hash(&a), flow_hash(&b));
        // Another message id: (almost surely) another hash.
        b[NANOTRANSPORT_OFFSET + 12] ^= 1;
        assert_ne!(flow_hash(&a), flow_hash(&b));
        // Junk hashes without panicking.
        flow_hash(&[]);
        flow_hash(&[0x99; 40]);
    }
}
