//! Random and damaged frames into the NIC (the lossless program and the
//! reliable ones): never a panic, every frame counted, every frame the
//! parser refuses counted as malformed. `PROPTEST_CASES=10000` for a long
//! pass.

use nanopu_nics::nanopu::{NanoNic, NicConfig};
use nanopu_sim::{SimDuration, SimTime};
use nanopu_testkit::{junk_frames, proptest_cases};
use nanopu_transport::Protocol;
use nanopu_wire::FrameRepr;
use proptest::prelude::*;

const IP: u32 = 0x0a00_0001;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(48)))]
    #[test]
    fn junk_is_counted_never_a_panic(
        protocol in prop_oneof![Just(Protocol::None), Just(Protocol::Ndp), Just(Protocol::Homa)],
        frames in prop::collection::vec(junk_frames(0x0a00_0002, IP), 1..60),
    ) {
        let mut cfg = NicConfig::default();
        cfg.transport.protocol = protocol;
        let mut nic = NanoNic::with_program(cfg, IP, nanopu_nics::nanopu::nic::default_link(), None).unwrap();
        let mut out = Vec::new();
        let mut refused = 0;
        for (i, f) in frames.iter().enumerate() {
            if FrameRepr::parse(f).is_err() {
                refused += 1;
            }
            nic.frame_in(f, SimTime::ZERO + SimDuration::from_ns(i as u64 * 10), &mut out);
            out.clear();
        }
        prop_assert_eq!(nic.stats.rx_frames, frames.len() as u64);
        prop_assert!(nic.stats.drop_malformed >= refused, "{} refused by the parser, {} counted", refused, nic.stats.drop_malformed);
    }
}
