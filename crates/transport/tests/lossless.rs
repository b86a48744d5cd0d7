//! The lossless program (`protocol = "none"`): a message leaves whole, at
//! once, nothing is kept; every new packet is taken, duplicates and
//! contradictions are counted; no timers, no control packets.

use nanopu_sim::{SimDuration, SimTime};
use nanopu_transport::metadata::GetRxMsgInfoReq;
use nanopu_transport::reassembly::Reassembly;
use nanopu_transport::{
    Delivery, NanoTransport, OutMessage, Refusal, TransportAction, TransportConfig, TxLink,
    WholeMessages,
};
use nanopu_wire::{Flags, FrameRepr};

const LINK: TxLink = TxLink {
    gbps: 200,
    overhead_bytes: 20,
};
const A: u32 = 0x0a00_0001;
const B: u32 = 0x0a00_0002;

fn transport(ip: u32) -> NanoTransport {
    let t = NanoTransport::new(&TransportConfig::default(), ip, 1024, LINK).unwrap();
    assert_eq!(t.delivery(), Delivery::Lossless);
    assert_eq!(t.program_name(), "none");
    t
}

fn message(len: u16) -> OutMessage {
    OutMessage {
        dst_ip: B,
        dst_port: 3,
        src_port: 4,
        len,
        payload: (0..len.div_ceil(8) as u64).map(|i| i * 0x0101).collect(),
        tag: 0,
    }
}

fn frames(out: &[TransportAction]) -> Vec<(Vec<u8>, SimTime)> {
    out.iter()
        .map(|a| match a {
            TransportAction::Transmit { frame, at } => (frame.clone(), *at),
            other => panic!("only frames expected, got {other:?}"),
        })
        .collect()
}

#[test]
fn a_message_leaves_whole_after_packetization_and_egress() {
    let mut a = transport(A);
    let mut out = Vec::new();
    let t0 = SimTime::ZERO + SimDuration::from_ns(10);
    a.send_message(message(2500), t0, &mut out);
    let f = frames(&out);
    assert_eq!(f.len(), 3, "2500 B in 1 KB packets");
    let cfg = TransportConfig::default();
    let leave =
        t0 + SimDuration::from_ps(cfg.packetize_ps) + SimDuration::from_ps(a.latencies().egress_ps);
    for (i, (frame, at)) in f.iter().enumerate() {
        assert_eq!(*at, leave, "every packet at once: the link spaces them");
        let (r, payload) = FrameRepr::parse(frame).unwrap();
        assert_eq!(r.nt.flags, Flags::DATA);
        assert_eq!(
            (r.nt.pkt_offset, r.nt.msg_len, r.nt.tx_msg_id),
            (i as u16, 2500, 0)
        );
        assert_eq!((r.nt.pull_offset, r.nt.grant_offset, r.ip.tos), (0, 0, 0));
        assert_eq!(payload.len(), [1024, 1024, 452][i]);
    }
    // The next message has the next id; nothing is kept, no timer armed.
    out.clear();
    a.send_message(message(8), t0, &mut out);
    let (r, _) = FrameRepr::parse(&frames(&out)[0].0).unwrap();
    assert_eq!(r.nt.tx_msg_id, 1);
    assert!(a.occupancy().is_empty(), "{:?}", a.occupancy());
    assert_eq!(a.stats.tx_data_packets, 4);
}

#[test]
fn packets_are_reassembled_in_any_order_and_duplicates_counted() {
    let mut a = transport(A);
    let mut b = transport(B);
    let mut out = Vec::new();
    let msg = message(2500);
    a.send_message(msg.clone(), SimTime::ZERO, &mut out);
    let f = frames(&out);
    out.clear();
    let t = SimTime::ZERO + SimDuration::from_ns(100);
    for i in [2, 0, 0, 1] {
        b.packet_in(&f[i].0, t, &mut out);
    }
    assert_eq!(b.stats.rx_duplicate, 1);
    let [TransportAction::Deliver { msg: m, at }] = out.as_slice() else {
        panic!("one delivery expected, got {out:?}");
    };
    let cfg = TransportConfig::default();
    assert_eq!(
        *at,
        t + SimDuration::from_ps(b.latencies().ingress_ps)
            + SimDuration::from_ps(cfg.reassembly_ps)
    );
    assert_eq!((m.src_ip, m.src_port, m.dst_port, m.len), (A, 4, 3, 2500));
    assert_eq!(m.payload, msg.payload);
    // Forgotten once complete: the same packets again make a new message.
    assert!(b.occupancy().is_empty(), "{:?}", b.occupancy());
    out.clear();
    for (frame, _) in &f {
        b.packet_in(frame, t, &mut out);
    }
    assert_eq!(out.len(), 1);
}

#[test]
fn control_packets_cause_nothing() {
    let mut b = transport(B);
    let mut out = Vec::new();
    let mut a = transport(A);
    a.send_message(message(8), SimTime::ZERO, &mut out);
    let mut f = frames(&out).remove(0).0;
    out.clear();
    // The same headers as an ACK.
    let (r, _) = FrameRepr::parse(&f).unwrap();
    let mut nt = r.nt;
    nt.flags = Flags::ACK;
    let repr = FrameRepr::new(r.eth, r.ip, nt, 0);
    f = vec![0; repr.frame_len()];
    repr.emit(&[], &mut f).unwrap();
    b.packet_in(&f, SimTime::ZERO, &mut out);
    assert!(out.is_empty());
    assert_eq!(b.stats.rx_control, 1);
    assert!(b.occupancy().is_empty());
}

#[test]
fn whole_messages_and_the_lossless_reassembly_module_round_trip() {
    let mut p = WholeMessages::new(64);
    let mut r = Reassembly::lossless(16, &TransportConfig::default().buffer_classes, 64).unwrap();
    let msg = message(200);
    let mut pieces = Vec::new();
    p.packetize(&msg.as_ref(), |meta, payload| {
        pieces.push((*meta, payload.to_vec()))
    });
    assert_eq!(pieces.len(), 4);
    let req = |m: &nanopu_transport::metadata::EgressMetadata| GetRxMsgInfoReq {
        mark_received: true,
        src_ip: A,
        src_port: m.local_port,
        tx_msg_id: m.tx_msg_id,
        msg_len: m.msg_len,
        pkt_offset: m.pkt_offset,
    };
    let mut done = None;
    for (meta, payload) in pieces.iter().rev() {
        if let Some(m) = r
            .packet(req(meta), meta.remote_port, payload, SimTime::ZERO)
            .unwrap()
        {
            done = Some(m);
        }
    }
    assert_eq!(done.expect("complete").payload, msg.payload);
    // Contradictions and duplicates are refused by reason.
    let (meta, payload) = &pieces[0];
    r.packet(req(meta), 3, payload, SimTime::ZERO).unwrap();
    assert_eq!(
        r.packet(req(meta), 3, payload, SimTime::ZERO),
        Err(Refusal::Duplicate)
    );
    let longer = GetRxMsgInfoReq {
        msg_len: 300,
        ..req(meta)
    };
    assert_eq!(
        r.packet(longer, 3, payload, SimTime::ZERO),
        Err(Refusal::Inconsistent)
    );
    assert_eq!(
        r.packet(req(meta), 3, &payload[..10], SimTime::ZERO),
        Err(Refusal::Inconsistent),
        "a short payload"
    );
    assert_eq!(r.ids_in_use(), 1, "the incomplete message is kept");
    assert_eq!(r.next_timer(), None, "no timers");
}
