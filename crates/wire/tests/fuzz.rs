//! The header views and parsers on random, truncated and damaged bytes:
//! never a panic; a frame cut short of its headers or its IPv4 total
//! length is an error. `PROPTEST_CASES=100000 cargo test --release -p
//! nanopu-wire --test fuzz` for a long pass.

use nanopu_wire::{
    ethernet, ipv4, nanotransport, EthernetAddress, EthernetRepr, Flags, FrameRepr, Ipv4Address,
    Ipv4Repr, NanoTransportRepr,
};
use proptest::prelude::*;

/// Every view and parser of every layer, on `bytes` as that layer.
fn parse_everything(bytes: &[u8]) {
    if let Ok(p) = ethernet::Packet::new_checked(bytes) {
        let _ = EthernetRepr::parse(&p);
        let _ = p.payload();
    }
    if let Ok(p) = ipv4::Packet::new_checked(bytes) {
        let _ = Ipv4Repr::parse(&p);
        let _ = p.payload();
    }
    if let Ok(p) = nanotransport::Packet::new_checked(bytes) {
        let _ = NanoTransportRepr::parse(&p);
        let _ = (
            p.flags(),
            p.msg_len(),
            p.pkt_offset(),
            p.padding(),
            p.payload(),
        );
    }
    let _ = FrameRepr::parse(bytes);
}

fn valid_frame(flags: u8, msg_len: u16, pkt_offset: u16, payload_len: usize, tos: u8) -> Vec<u8> {
    let r = FrameRepr::new(
        EthernetRepr {
            src_addr: EthernetAddress::for_ipv4(0x0a00_0001),
            dst_addr: EthernetAddress::for_ipv4(0x0a00_0002),
            ethertype: 0,
        },
        Ipv4Repr {
            src_addr: Ipv4Address::from_bits(0x0a00_0001),
            dst_addr: Ipv4Address::from_bits(0x0a00_0002),
            protocol: 0,
            payload_len: 0,
            ttl: 64,
            tos,
            ident: 0,
            dont_frag: true,
        },
        NanoTransportRepr {
            flags: Flags::from_bits_retain(flags),
            msg_len,
            pkt_offset,
            ..Default::default()
        },
        payload_len,
    );
    let mut buf = vec![0u8; r.frame_len()];
    let data: Vec<u8> = (0..payload_len).map(|i| i as u8).collect();
    r.emit(&data, &mut buf).expect("a valid frame emits");
    buf
}

proptest! {
    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        parse_everything(&bytes);
    }

    #[test]
    fn damaged_frames_never_panic_and_short_ones_are_errors(
        flags in 0u8..=0x3f,
        msg_len in any::<u16>(),
        pkt_offset in any::<u16>(),
        payload_len in 0usize..1100,
        tos in any::<u8>(),
        cut in any::<prop::sample::Index>(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
    ) {
        let frame = valid_frame(flags, msg_len, pkt_offset, payload_len, tos);
        // Some flag bits are undefined: such a header is refused whole.
        prop_assume!(FrameRepr::parse(&frame).is_ok());
        let len = cut.index(frame.len() + 1);
        let short = &frame[..len];
        parse_everything(short);
        if len < frame.len() {
            prop_assert!(FrameRepr::parse(short).is_err(), "a frame cut at {} of {} parsed", len, frame.len());
        }
        let mut damaged = frame.clone();
        for (i, v) in flips {
            let i = i.index(damaged.len());
            damaged[i] = v;
        }
        parse_everything(&damaged);
    }
}
