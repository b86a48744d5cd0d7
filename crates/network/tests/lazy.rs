//! Lazy frame ends ([`Network::set_lazy_tx_done`]) at an exact tie: a frame
//! reaching a switch at the very femtosecond another frame's last bit
//! leaves the same port. The order of the two is the event order's (the
//! frame end's place was reserved when its frame began), so the result is
//! the eager mode's.

mod common;

use common::{data, ns, Harness};
use nanopu_network::{BufferKind, NetworkConfig, NetworkStats, TopologyConfig};
use nanopu_sim::{SimDuration, SimTime};

/// Frame 1 (host 0 to host 2) leaves the switch port towards host 2 during
/// [t0, t0 + its serialization]; frame 2 (host 1 to host 2) is queued at
/// that port at exactly t0 + that serialization. Its arrival was scheduled
/// (when host 1 sent) before frame 1 began at the switch, so it comes first
/// at the tie: frame 1's bytes are still held and frame 2 does not fit the
/// buffer (it is trimmed).
fn tie(lazy: bool) -> (NetworkStats, Vec<common::Delivery>) {
    let mut cfg = NetworkConfig {
        topology: TopologyConfig::SingleSwitch { hosts: 3 },
        ..NetworkConfig::default()
    };
    let (f1, f2) = (data(0, 2, 1000), data(1, 2, 1000));
    cfg.switch.buffer = BufferKind::PerPort;
    cfg.switch.buffer_bytes = (f1.len() + f2.len() - 1) as u64;
    let mut h = Harness::new(&cfg);
    h.net.set_lazy_tx_done(lazy);
    // Frame 1's serialization at 200 Gb/s.
    let ser = SimDuration::serialization(f1.len() as u64, 200);
    h.send(0, f1, ns(0));
    h.send(1, f2, SimTime::ZERO + ser);
    h.run();
    (h.net.stats(), h.by_arrival())
}

#[test]
fn a_frame_end_tied_with_an_arrival_keeps_its_place() {
    let eager = tie(false);
    assert_eq!(eager.0.total.trimmed, 1, "frame 2 came first at the tie");
    assert_eq!(tie(true), eager);
}

/// Without the tie (frame 2 a femtosecond later) frame 2 fits, in both.
#[test]
fn a_frame_end_before_an_arrival_releases_the_buffer() {
    let run = |lazy: bool| {
        let mut cfg = NetworkConfig {
            topology: TopologyConfig::SingleSwitch { hosts: 3 },
            ..NetworkConfig::default()
        };
        let (f1, f2) = (data(0, 2, 1000), data(1, 2, 1000));
        cfg.switch.buffer = BufferKind::PerPort;
        cfg.switch.buffer_bytes = (f1.len() + f2.len() - 1) as u64;
        let mut h = Harness::new(&cfg);
        h.net.set_lazy_tx_done(lazy);
        let ser = SimDuration::serialization(f1.len() as u64, 200);
        h.send(0, f1, ns(0));
        h.send(1, f2, SimTime::ZERO + ser + SimDuration(1));
        h.run();
        (h.net.stats(), h.by_arrival())
    };
    let eager = run(false);
    assert_eq!(eager.0.total.trimmed, 0);
    assert_eq!(run(true), eager);
}
