//! Every host reaches every other host; paths and load balancing.

mod common;

use common::{data, frame, ns, src_of, Harness};
use nanopu_network::{Endpoint, LoadBalancing, NetworkConfig, PortRef, TopologyConfig};
use nanopu_sim::SimDuration;
use nanopu_wire::Flags;

fn all_pairs(topology: TopologyConfig) -> Harness {
    let cfg = NetworkConfig {
        topology,
        ..NetworkConfig::default()
    };
    let mut h = Harness::new(&cfg);
    let n = h.net.hosts();
    for a in 0..n {
        for b in (0..n).filter(|&b| b != a) {
            h.send(a, data(a, b, 16), ns(0));
        }
    }
    h.run();
    let mut got = vec![vec![0u32; n]; n];
    for d in &h.delivered {
        let dst = u32::from_be_bytes(d.frame[30..34].try_into().unwrap()) as usize - 0x0a00_0001;
        assert_eq!(d.host, dst);
        assert_eq!(d.frame, data(src_of(&d.frame), dst, 16));
        got[src_of(&d.frame)][dst] += 1;
    }
    for (a, row) in got.iter().enumerate() {
        for (b, &count) in row.iter().enumerate() {
            assert_eq!(count, u32::from(a != b), "{a} -> {b}");
        }
    }
    let s = h.net.stats();
    assert_eq!(s.total.dropped.total(), 0);
    assert_eq!(s.delivered_frames, (n * (n - 1)) as u64);
    h
}

#[test]
fn dumbbell_connects_every_pair() {
    let h = all_pairs(TopologyConfig::Dumbbell {
        left_hosts: 3,
        right_hosts: 4,
    });
    // 3 * 4 frames each way over the fabric link.
    let fabric_left = PortRef { switch: 0, port: 3 };
    assert_eq!(h.net.peer(fabric_left), Some(Endpoint::Switch(1)));
    assert_eq!(h.net.port_stats(fabric_left).frames, 12);
    assert_eq!(h.net.port_stats(PortRef { switch: 1, port: 4 }).frames, 12);
    // Across: two host links, one fabric link, two switches.
    let ps = SimDuration::from_ps;
    assert_eq!(
        h.net.idle_one_way(0, 6, 80),
        ps(3 * 43_000 + 2 * 300_000) + SimDuration::serialization(80, 200)
    );
    assert_eq!(
        h.net.idle_one_way(4, 6, 80),
        ps(2 * 43_000 + 300_000) + SimDuration::serialization(80, 200)
    );
}

#[test]
fn leaf_spine_connects_every_pair() {
    let h = all_pairs(TopologyConfig::LeafSpine {
        leaves: 4,
        spines: 2,
        hosts_per_leaf: 16,
    });
    assert_eq!(h.net.hosts(), 64);
    assert_eq!(h.net.switches(), 6);
    // Every spine carries traffic (per-message hashing over 16 * 48 flows
    // per leaf).
    for spine in 4..6 {
        let frames: u64 = (0..4)
            .map(|leaf| {
                h.net
                    .port_stats(PortRef {
                        switch: spine,
                        port: leaf,
                    })
                    .frames
            })
            .sum();
        assert!(frames > 1000, "spine {spine}: {frames}");
    }
    // Leaf to leaf: two host links, two fabric links, three switches.
    assert_eq!(
        h.net.idle_one_way(0, 63, 72),
        SimDuration::from_ps(4 * 43_000 + 3 * 300_000) + SimDuration::serialization(72, 200)
    );
}

#[test]
fn idle_one_way_matches_a_lone_frame() {
    let cfg = NetworkConfig {
        topology: TopologyConfig::LeafSpine {
            leaves: 2,
            spines: 3,
            hosts_per_leaf: 2,
        },
        ..NetworkConfig::default()
    };
    for (a, b) in [(0, 1), (0, 3), (3, 0), (2, 2)] {
        let mut h = Harness::new(&cfg);
        h.send(a, data(a, b, 500), ns(7));
        h.run();
        let d = &h.delivered[0];
        let last_bit = d.first_bit.fs() + SimDuration::serialization(564, 200).fs();
        assert_eq!(last_bit - ns(7).fs(), h.net.idle_one_way(a, b, 564).fs());
    }
}

/// Frames that leaf 0 sent up to each spine.
fn uplink_frames(h: &Harness) -> Vec<u64> {
    (0..2)
        .map(|k| {
            h.net
                .port_stats(PortRef {
                    switch: 0,
                    port: 4 + k,
                })
                .frames
        })
        .collect()
}

fn leaf_spine(lb: LoadBalancing) -> NetworkConfig {
    let mut cfg = NetworkConfig {
        topology: TopologyConfig::LeafSpine {
            leaves: 2,
            spines: 2,
            hosts_per_leaf: 4,
        },
        ..NetworkConfig::default()
    };
    cfg.switch.load_balancing = lb;
    cfg
}

#[test]
fn ecmp_keeps_a_message_on_one_path_spray_alternates() {
    // Twenty packets of one message: one spine.
    let mut h = Harness::new(&leaf_spine(LoadBalancing::Ecmp));
    for i in 0..20u64 {
        h.send(0, frame(0, 5, Flags::DATA, 0, 64, 42), ns(i));
    }
    h.run();
    let up = uplink_frames(&h);
    assert!(up == [20, 0] || up == [0, 20], "{up:?}");
    // In order, too.
    assert_eq!(h.delivered.len(), 20);
    // Twenty messages: both spines.
    let mut h = Harness::new(&leaf_spine(LoadBalancing::Ecmp));
    for i in 0..20u16 {
        h.send(0, frame(0, 5, Flags::DATA, 0, 64, i), ns(u64::from(i)));
    }
    h.run();
    let up = uplink_frames(&h);
    assert!(up[0] > 0 && up[1] > 0, "{up:?}");
    // Spraying: round robin, whatever the message.
    let mut h = Harness::new(&leaf_spine(LoadBalancing::Spray));
    for i in 0..20u64 {
        h.send(0, frame(0, 5, Flags::DATA, 0, 64, 42), ns(i));
    }
    h.run();
    assert_eq!(uplink_frames(&h), [10, 10]);
    assert_eq!(h.delivered.len(), 20);
}
