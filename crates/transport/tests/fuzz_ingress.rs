//! Random and damaged frames into a NanoTransport's ingress: never a panic,
//! every frame counted, every frame the parser refuses counted as
//! malformed. `PROPTEST_CASES=10000` for a long pass.

use nanopu_sim::{SimDuration, SimTime};
use nanopu_transport::{NanoTransport, Protocol, TransportAction, TransportConfig, TxLink};
use nanopu_wire::{
    EthernetAddress, EthernetRepr, Flags, FrameRepr, Ipv4Address, Ipv4Repr, NanoTransportRepr,
};
use proptest::prelude::*;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

const IP: u32 = 0x0a00_0002;

#[derive(Clone, Debug)]
enum Junk {
    Bytes(Vec<u8>),
    Frame {
        flags: u8,
        msg_len: u16,
        pkt_offset: u16,
        id: u16,
        payload: usize,
        cut: Option<usize>,
        flip: Option<(usize, u8)>,
    },
}

fn junk() -> impl Strategy<Value = Junk> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..120).prop_map(Junk::Bytes),
        (
            any::<u8>(),
            0u16..4096,
            0u16..6,
            0u16..8,
            0usize..1100,
            prop::option::of(0usize..1200),
            prop::option::of((0usize..1200, any::<u8>()))
        )
            .prop_map(
                |(flags, msg_len, pkt_offset, id, payload, cut, flip)| Junk::Frame {
                    flags,
                    msg_len,
                    pkt_offset,
                    id,
                    payload,
                    cut,
                    flip
                }
            ),
    ]
}

fn bytes(j: &Junk) -> Vec<u8> {
    match j {
        Junk::Bytes(b) => b.clone(),
        &Junk::Frame {
            flags,
            msg_len,
            pkt_offset,
            id,
            payload,
            cut,
            flip,
        } => {
            let r = FrameRepr::new(
                EthernetRepr {
                    src_addr: EthernetAddress::for_ipv4(0x0a00_0001),
                    dst_addr: EthernetAddress::for_ipv4(IP),
                    ethertype: 0,
                },
                Ipv4Repr {
                    src_addr: Ipv4Address::from_bits(0x0a00_0001),
                    dst_addr: Ipv4Address::from_bits(IP),
                    protocol: 0,
                    payload_len: 0,
                    ttl: 64,
                    tos: 0,
                    ident: 0,
                    dont_frag: true,
                },
                NanoTransportRepr {
                    flags: Flags::from_bits_retain(flags),
                    msg_len,
                    pkt_offset,
                    tx_msg_id: id,
                    ..Default::default()
                },
                payload,
            );
            let mut f = vec![0u8; r.frame_len()];
            r.emit(&vec![7u8; payload], &mut f).unwrap();
            if let Some((i, v)) = flip {
                let i = i % f.len();
                f[i] = v;
            }
            if let Some(c) = cut {
                f.truncate(c.min(f.len()));
            }
            f
        }
    }
}

/// `PROPTEST_CASES`, else a short pass.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(48)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]
    #[test]
    fn junk_is_counted_never_a_panic(
        protocol in prop_oneof![Just(Protocol::Ndp), Just(Protocol::Homa), Just(Protocol::HomaTr)],
        frames in prop::collection::vec(junk(), 1..60),
    ) {
        let cfg = TransportConfig::with_protocol(protocol);
        let mut t = NanoTransport::new(&cfg, IP, 1024, TxLink { gbps: 200, overhead_bytes: 20 }).unwrap();
        let mut out = Vec::new();
        let mut events = BinaryHeap::new();
        let mut store = Vec::new();
        let mut refused = 0;
        let mut now = SimTime::ZERO;
        for (i, j) in frames.iter().enumerate() {
            let f = bytes(j);
            if FrameRepr::parse(&f).is_err() {
                refused += 1;
            }
            now = SimTime::ZERO + SimDuration::from_ns(i as u64 * 10);
            t.packet_in(&f, now, &mut out);
            for a in out.drain(..) {
                if let TransportAction::Schedule { at, event } = a {
                    events.push(Reverse((at, store.len())));
                    store.push(event);
                }
            }
        }
        // Let the timers run out: whatever the junk started ends.
        let mut handled = 0;
        while let Some(Reverse((at, i))) = events.pop() {
            handled += 1;
            prop_assert!(handled < 100_000, "events never stop");
            t.handle(store[i], at.max(now), &mut out);
            for a in out.drain(..) {
                if let TransportAction::Schedule { at, event } = a {
                    events.push(Reverse((at, store.len())));
                    store.push(event);
                }
            }
        }
        prop_assert_eq!(t.stats.rx_packets, frames.len() as u64);
        prop_assert!(t.stats.rx_malformed >= refused, "{} refused by the parser, {} counted", refused, t.stats.rx_malformed);
    }
}
