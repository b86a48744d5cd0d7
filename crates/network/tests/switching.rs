//! Timing, queueing, priorities, buffers and trimming on one switch.

mod common;

use common::{data, frame, ns, src_of, Harness};
use nanopu_network::{BufferKind, NetworkConfig, TopologyConfig};
use nanopu_sim::{SimDuration, SimTime};
use nanopu_wire::{nanotransport, Flags, FrameRepr};

fn single(hosts: usize) -> NetworkConfig {
    NetworkConfig {
        topology: TopologyConfig::SingleSwitch { hosts },
        ..NetworkConfig::default()
    }
}

#[test]
fn idle_latency_is_serialization_propagation_forwarding() {
    // Defaults: 200 Gb/s, 43 ns links, 300 ns switch.
    let mut h = Harness::new(&single(2));
    h.send(0, data(0, 1, 8), ns(0));
    h.run();
    assert_eq!(h.delivered.len(), 1);
    let d = &h.delivered[0];
    assert_eq!(d.host, 1);
    assert_eq!(d.frame, data(0, 1, 8));
    // First bit: 43 + 300 + 43 ns (cut-through: no serialization).
    assert_eq!(d.first_bit, ns(386));
    // Last bit: plus 72 bytes at 200 Gb/s = 2.88 ns.
    let one_way = h.net.idle_one_way(0, 1, 72);
    assert_eq!(one_way, SimDuration(388_880_000));
    assert_eq!(
        d.first_bit.fs() + SimDuration::serialization(72, 200).fs(),
        one_way.fs()
    );

    // Other parameters, a later start, a bigger frame.
    let mut cfg = single(2);
    cfg.link.host_propagation_ps = 10_000;
    cfg.switch.forwarding_latency_ps = 100_000;
    cfg.link.gbps = 100;
    let mut h = Harness::new(&cfg);
    h.send(1, data(1, 0, 1000), ns(5));
    h.run();
    assert_eq!(h.delivered[0].first_bit, ns(5 + 120));
    assert_eq!(
        h.net.idle_one_way(1, 0, 1064),
        SimDuration::from_ns(120) + SimDuration::serialization(1064, 100)
    );
}

#[test]
fn two_senders_queue_at_the_output_serializer() {
    let mut h = Harness::new(&single(3));
    h.send(0, data(0, 2, 8), ns(0));
    h.send(1, data(1, 2, 8), ns(0));
    // Host 0's second frame waits for its own uplink.
    h.send(0, data(0, 1, 8), ns(0));
    h.run();
    let d = h.by_arrival();
    let at = |host, src| {
        d.iter()
            .find(|d| d.host == host && src_of(&d.frame) == src)
            .unwrap()
            .first_bit
    };
    // 72 + 20 bytes of wire time at 200 Gb/s: 3.68 ns.
    assert_eq!(at(2, 0), ns(386));
    assert_eq!(at(2, 1), SimTime(389_680_000));
    assert_eq!(at(1, 0), SimTime(389_680_000));
    let down = h.net.host_downlink(2).unwrap();
    assert_eq!(h.net.port_stats(down).frames, 2);
    assert_eq!(h.net.port_stats(down).max_bytes, 144);
    assert_eq!(h.net.uplink_stats(0).frames, 2);
}

#[test]
fn strict_priority_lets_high_tos_overtake() {
    let mut h = Harness::new(&single(5));
    for src in 0..3 {
        h.send(src, frame(src, 4, Flags::DATA, 0, 8, 0), ns(0));
    }
    // Reaches the switch while host 0's frame is on the wire and 1, 2 wait.
    h.send(3, frame(3, 4, Flags::ACK, 7, 0, 0), ns(1));
    h.run();
    let order: Vec<usize> = h.by_arrival().iter().map(|d| src_of(&d.frame)).collect();
    assert_eq!(order, [0, 3, 1, 2]);

    // A ToS beyond the bands is capped to the highest, and bands are FIFO.
    let mut cfg = single(5);
    cfg.switch.priority_bands = 2;
    let mut h = Harness::new(&cfg);
    h.send(0, frame(0, 4, Flags::DATA, 0, 8, 0), ns(0));
    h.send(1, frame(1, 4, Flags::DATA, 1, 8, 0), ns(0));
    h.send(2, frame(2, 4, Flags::DATA, 200, 8, 0), ns(0));
    h.send(3, frame(3, 4, Flags::DATA, 0, 8, 0), ns(0));
    h.run();
    let order: Vec<usize> = h.by_arrival().iter().map(|d| src_of(&d.frame)).collect();
    assert_eq!(order, [0, 1, 2, 3]);
}

fn buffer_run(kind: BufferKind, pairs: &[(usize, usize)]) -> Harness {
    let mut cfg = single(6);
    cfg.switch.buffer = kind;
    cfg.switch.buffer_bytes = 200;
    cfg.switch.trimming = false;
    let mut h = Harness::new(&cfg);
    for &(src, dst) in pairs {
        h.send(src, data(src, dst, 8), ns(0));
    }
    h.run();
    h
}

#[test]
fn per_port_and_shared_buffers_overflow_differently() {
    // Two 72-byte frames to each of two ports: 144 bytes per port.
    let pairs = [(0, 4), (1, 4), (2, 5), (3, 5)];
    let h = buffer_run(BufferKind::PerPort, &pairs);
    assert_eq!(h.delivered.len(), 4);
    assert_eq!(h.net.stats().total.dropped.total(), 0);
    // Shared: 288 bytes would be held at once; the last two do not fit.
    let h = buffer_run(BufferKind::Shared, &pairs);
    let s = h.net.stats();
    assert_eq!(s.total.dropped.buffer_full, 2);
    assert_eq!(s.total.forwarded, 2);
    assert_eq!(s.total.max_switch_bytes, 144);
    assert!(h.delivered.iter().all(|d| d.host == 4));
    // Per port: three frames into one port do not fit.
    let h = buffer_run(BufferKind::PerPort, &[(0, 4), (1, 4), (2, 4), (3, 5)]);
    let s = h.net.stats();
    assert_eq!(s.total.dropped.buffer_full, 1);
    assert_eq!((s.delivered_frames, s.sent_frames), (3, 4));
    assert_eq!(s.total.max_port_bytes, 144);
    assert_eq!(s.switches[0], s.total);
}

#[test]
fn dropped_frames_leave_their_buffers_for_reuse() {
    let mut h = buffer_run(BufferKind::PerPort, &[(0, 4), (1, 4), (2, 4), (3, 5)]);
    assert_eq!(h.net.stats().total.dropped.buffer_full, 1);
    // The dropped frame's buffer, once; the pool's bound is kept.
    let mut pool = Vec::new();
    h.net.take_discarded(&mut pool, 8);
    assert_eq!(pool.len(), 1);
    assert!(pool[0].capacity() >= data(2, 4, 8).len());
    h.net.take_discarded(&mut pool, 8);
    assert_eq!(pool.len(), 1);
    let mut h = buffer_run(BufferKind::PerPort, &[(0, 4), (1, 4), (2, 4), (3, 4)]);
    let mut full = vec![Vec::new(); 7];
    h.net.take_discarded(&mut full, 8);
    assert_eq!(full.len(), 8, "two dropped, room for one");
    h.net.take_discarded(&mut full, 9);
    assert_eq!(full.len(), 8, "the other was freed, not kept");
}

#[test]
fn trimming_keeps_headers_in_the_highest_band_until_the_allowance_is_full() {
    let mut cfg = single(7);
    cfg.switch.buffer_bytes = 2500;
    cfg.switch.trim_queue_bytes = 128;
    let mut h = Harness::new(&cfg);
    let sent: Vec<Vec<u8>> = (0..6)
        .map(|src| frame(src, 6, Flags::DATA, 2, 1024, 100 + src as u16))
        .collect();
    for (src, f) in sent.iter().enumerate() {
        h.send(src, f.clone(), ns(0));
    }
    h.run();
    let s = h.net.stats();
    assert_eq!(s.total.trimmed, 2);
    assert_eq!(s.total.dropped.trim_full, 2);
    assert_eq!(s.total.forwarded, 4);
    assert_eq!(s.total.max_port_bytes, 2 * 1088 + 2 * 64);
    let d = h.by_arrival();
    let order: Vec<usize> = d.iter().map(|d| src_of(&d.frame)).collect();
    // Host 0's frame was already on the wire; the headers of 2 and 3 pass
    // host 1's queued data.
    assert_eq!(order, [0, 2, 3, 1]);
    for d in &d[1..3] {
        assert_eq!(d.frame.len(), 64);
        let (r, payload) = FrameRepr::parse(&d.frame).expect("a valid frame");
        assert!(payload.is_empty());
        let (orig, _) = FrameRepr::parse(&sent[src_of(&d.frame)]).unwrap();
        assert_eq!(r.nt.flags, Flags::DATA | Flags::CHOP);
        assert_eq!(r.ip.payload_len, nanotransport::HEADER_LEN);
        assert_eq!(
            (r.eth, r.ip.src_addr, r.ip.dst_addr),
            (orig.eth, orig.ip.src_addr, orig.ip.dst_addr)
        );
        assert_eq!(
            (r.ip.tos, r.ip.ident, r.ip.ttl),
            (orig.ip.tos, orig.ip.ident, orig.ip.ttl)
        );
        let mut nt = orig.nt;
        nt.flags = Flags::DATA | Flags::CHOP;
        assert_eq!(r.nt, nt);
    }
    assert_eq!(d[0].frame, sent[0]);
    assert_eq!(d[3].frame, sent[1]);

    // Control frames are never trimmed: dropped as buffer_full.
    let mut h = Harness::new(&cfg);
    for src in 0..4 {
        h.send(src, frame(src, 6, Flags::ACK, 0, 1000, 0), ns(0));
    }
    h.run();
    let s = h.net.stats();
    assert_eq!((s.total.trimmed, s.total.dropped.buffer_full), (0, 2));
}

#[test]
fn unknown_destination_is_dropped_and_counted() {
    let mut h = Harness::new(&single(2));
    // 10.0.0.3 is no host of a two-host network.
    h.send(0, data(0, 2, 8), ns(0));
    h.run();
    assert!(h.delivered.is_empty());
    assert_eq!(h.net.stats().total.dropped.no_route, 1);
}
