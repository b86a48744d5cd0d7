//! Random and damaged frames into the NIC (the transport stand-in and
//! NanoTransport): never a panic, every frame counted, every frame the
//! parser refuses counted as malformed. `PROPTEST_CASES=10000` for a long
//! pass.

use nanopu_nic::{NanoNic, NicConfig};
use nanopu_sim::{SimDuration, SimTime};
use nanopu_transport::Protocol;
use nanopu_wire::{
    EthernetAddress, EthernetRepr, Flags, FrameRepr, Ipv4Address, Ipv4Repr, NanoTransportRepr,
};
use proptest::prelude::*;

const IP: u32 = 0x0a00_0001;

fn frame(flags: u8, msg_len: u16, pkt_offset: u16, ctx: u16, payload: usize) -> Vec<u8> {
    let r = FrameRepr::new(
        EthernetRepr {
            src_addr: EthernetAddress::for_ipv4(0x0a00_0002),
            dst_addr: EthernetAddress::for_ipv4(IP),
            ethertype: 0,
        },
        Ipv4Repr {
            src_addr: Ipv4Address::from_bits(0x0a00_0002),
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
            dst_context: ctx,
            ..Default::default()
        },
        payload,
    );
    let mut f = vec![0u8; r.frame_len()];
    r.emit(&vec![3u8; payload], &mut f).unwrap();
    f
}

fn junk() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..120),
        (
            any::<u8>(),
            0u16..5000,
            0u16..6,
            0u16..3,
            0usize..1100,
            prop::option::of(0usize..1200),
            prop::option::of((0usize..1200, any::<u8>()))
        )
            .prop_map(|(flags, len, off, ctx, payload, cut, flip)| {
                let mut f = frame(flags, len, off, ctx, payload);
                if let Some((i, v)) = flip {
                    let i = i % f.len();
                    f[i] = v;
                }
                if let Some(c) = cut {
                    f.truncate(c.min(f.len()));
                }
                f
            }),
    ]
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
        protocol in prop_oneof![Just(Protocol::None), Just(Protocol::Ndp), Just(Protocol::Homa)],
        frames in prop::collection::vec(junk(), 1..60),
    ) {
        let mut cfg = NicConfig::default();
        cfg.transport.protocol = protocol;
        let mut nic = NanoNic::with_program(cfg, IP, nanopu_nic::nic::default_link(), None).unwrap();
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
