//! Random and damaged frames into a NanoTransport's ingress: never a panic,
//! every frame counted, every frame the parser refuses counted as
//! malformed. `PROPTEST_CASES=10000` for a long pass.

use nanopu_sim::{SimDuration, SimTime};
use nanopu_testkit::{junk_frames, proptest_cases};
use nanopu_transport::{NanoTransport, Protocol, TransportAction, TransportConfig, TxLink};
use nanopu_wire::FrameRepr;
use proptest::prelude::*;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

const IP: u32 = 0x0a00_0002;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(48)))]
    #[test]
    fn junk_is_counted_never_a_panic(
        protocol in prop_oneof![Just(Protocol::None), Just(Protocol::Ndp), Just(Protocol::Homa), Just(Protocol::HomaTr)],
        frames in prop::collection::vec(junk_frames(0x0a00_0001, IP), 1..60),
    ) {
        let cfg = TransportConfig::with_protocol(protocol);
        let mut t = NanoTransport::new(&cfg, IP, 1024, TxLink { gbps: 200, overhead_bytes: 20 }).unwrap();
        let mut out = Vec::new();
        let mut events = BinaryHeap::new();
        let mut store = Vec::new();
        let mut refused = 0;
        let mut now = SimTime::ZERO;
        for (i, f) in frames.iter().enumerate() {
            if FrameRepr::parse(f).is_err() {
                refused += 1;
            }
            now = SimTime::ZERO + SimDuration::from_ns(i as u64 * 10);
            t.packet_in(f, now, &mut out);
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
