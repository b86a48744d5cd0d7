//! Fault injection: nothing at rate 0, everything at rate 1, and the same
//! seed gives the same run.

mod common;

use common::{data, frame, ns, src_of, Delivery, Harness};
use nanopu_network::{FaultConfig, FaultScope, NetworkConfig, NetworkStats, TopologyConfig};
use nanopu_wire::{Flags, FrameRepr};

fn leaf_spine(faults: FaultConfig, seed: u64) -> NetworkConfig {
    NetworkConfig {
        topology: TopologyConfig::LeafSpine {
            leaves: 2,
            spines: 2,
            hosts_per_leaf: 4,
        },
        faults,
        seed,
        ..NetworkConfig::default()
    }
}

/// Every host sends ten frames to every other host.
fn run(cfg: &NetworkConfig) -> (Vec<Delivery>, NetworkStats) {
    let mut h = Harness::new(cfg);
    let n = h.net.hosts();
    for i in 0..10u16 {
        for a in 0..n {
            for b in (0..n).filter(|&b| b != a) {
                let f = frame(a, b, Flags::DATA, (i % 8) as u8, 100, i);
                h.send(a, f, ns(u64::from(i) * 50));
            }
        }
    }
    h.run();
    (h.delivered, h.net.stats())
}

fn mix() -> FaultConfig {
    FaultConfig {
        loss: 0.1,
        duplicate: 0.1,
        reorder: 0.1,
        trim: 0.1,
        truncate: 0.1,
        ..FaultConfig::default()
    }
}

#[test]
fn rate_zero_changes_nothing() {
    let clean = run(&leaf_spine(FaultConfig::default(), 1));
    let zero = FaultConfig {
        reorder_delay_ps: 5,
        scope: FaultScope::HostLinks,
        ..FaultConfig::default()
    };
    assert_eq!(run(&leaf_spine(zero, 99)), clean);
    assert_eq!(clean.1.faults, Default::default());
    assert_eq!(clean.1.delivered_frames, 560);
}

#[test]
fn rate_one_loss_drops_everything() {
    let loss = FaultConfig {
        loss: 1.0,
        ..FaultConfig::default()
    };
    let (d, s) = run(&leaf_spine(loss, 1));
    assert!(d.is_empty());
    assert_eq!(s.faults.lost, s.sent_frames);
    assert_eq!(s.total.forwarded, 0);
}

#[test]
fn same_seed_same_run() {
    let a = run(&leaf_spine(mix(), 7));
    assert_eq!(run(&leaf_spine(mix(), 7)), a);
    let b = run(&leaf_spine(mix(), 8));
    assert_ne!(b.0, a.0);
    let f = a.1.faults;
    assert!(f.lost > 0 && f.duplicated > 0 && f.reordered > 0 && f.trimmed > 0 && f.truncated > 0);
}

#[test]
fn each_fault_does_what_it_says() {
    let single = |faults| NetworkConfig {
        topology: TopologyConfig::SingleSwitch { hosts: 2 },
        faults,
        ..NetworkConfig::default()
    };
    // Duplicated on the uplink and again on the downlink: four copies, the
    // copy one frame time (92 bytes, 3.68 ns) behind.
    let mut h = Harness::new(&single(FaultConfig {
        duplicate: 1.0,
        ..FaultConfig::default()
    }));
    h.send(0, data(0, 1, 8), ns(0));
    h.run();
    let times: Vec<u64> = h.by_arrival().iter().map(|d| d.first_bit.fs()).collect();
    assert_eq!(times, [386_000_000, 389_680_000, 389_680_000, 393_360_000]);
    assert!(h.delivered.iter().all(|d| d.frame == data(0, 1, 8)));

    // Trimmed on the wire: a valid 64-byte header with CHOP.
    let mut h = Harness::new(&single(FaultConfig {
        trim: 1.0,
        ..FaultConfig::default()
    }));
    h.send(0, data(0, 1, 500), ns(0));
    h.send(0, frame(0, 1, Flags::ACK, 0, 0, 0), ns(0));
    h.run();
    let (r, _) = FrameRepr::parse(&h.delivered[0].frame).unwrap();
    assert_eq!(r.nt.flags, Flags::DATA | Flags::CHOP);
    assert_eq!(h.delivered[0].frame.len(), 64);
    assert_eq!(h.delivered[1].frame, frame(0, 1, Flags::ACK, 0, 0, 0));
    assert_eq!(h.net.stats().faults.trimmed, 1);

    // Truncated: nothing that arrives parses; what lost its IPv4 header is
    // dropped by the switch.
    let mut h = Harness::new(&single(FaultConfig {
        truncate: 1.0,
        ..FaultConfig::default()
    }));
    for i in 0..200 {
        h.send(0, data(0, 1, 100), ns(i));
    }
    h.run();
    assert!(h
        .delivered
        .iter()
        .all(|d| FrameRepr::parse(&d.frame).is_err()));
    let s = h.net.stats();
    assert!(s.total.dropped.malformed > 0);
    assert_eq!(s.delivered_frames + s.total.dropped.total(), 200);

    // Reordered: some frames of a back-to-back train arrive after later ones.
    let mut h = Harness::new(&single(FaultConfig {
        reorder: 0.3,
        ..FaultConfig::default()
    }));
    for i in 0..20u16 {
        h.send(0, frame(0, 1, Flags::DATA, 0, 64, i), ns(0));
    }
    h.run();
    let ids: Vec<u8> = h.by_arrival().iter().map(|d| d.frame[46]).collect();
    assert_eq!(ids.len(), 20);
    assert!(ids.windows(2).any(|w| w[0] > w[1]), "{ids:?}");
}

#[test]
fn scope_host_links_spares_the_fabric() {
    let dumbbell = |scope| NetworkConfig {
        topology: TopologyConfig::Dumbbell {
            left_hosts: 1,
            right_hosts: 1,
        },
        faults: FaultConfig {
            reorder: 1.0,
            scope,
            ..FaultConfig::default()
        },
        ..NetworkConfig::default()
    };
    for (scope, links) in [(FaultScope::AllLinks, 3), (FaultScope::HostLinks, 2)] {
        let mut h = Harness::new(&dumbbell(scope));
        h.send(0, data(0, 1, 8), ns(0));
        h.run();
        assert_eq!(h.net.stats().faults.reordered, links);
        assert_eq!(src_of(&h.delivered[0].frame), 0);
    }
}

/// A stopped host neither sends nor receives from its stop time on; before
/// it, everything flows; the config names a host that does not exist.
#[test]
fn a_stopped_host_is_cut_off_from_its_stop_time() {
    use nanopu_network::{HostStop, NetAction, Network, NetworkConfig, TopologyConfig};
    use nanopu_sim::{SimDuration, SimTime};
    let mut cfg = NetworkConfig {
        topology: TopologyConfig::SingleSwitch { hosts: 3 },
        ..NetworkConfig::default()
    };
    cfg.faults.stops = vec![HostStop {
        host: 1,
        at_ns: 10_000,
    }];
    let mut net = Network::new(&cfg).unwrap();
    let frame = |dst: usize| {
        let mut f = vec![0u8; 64];
        // An IPv4 frame to host `dst` (10.0.0.(dst + 1)): enough to route.
        f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        f[14] = 0x45;
        f[16..18].copy_from_slice(&50u16.to_be_bytes());
        f[23] = 0x99;
        f[30..34].copy_from_slice(&(0x0a00_0001u32 + dst as u32).to_be_bytes());
        f
    };
    // Deliveries to each host when `from` sends to `to` at `at_ns`.
    let deliveries = |net: &mut Network, from: usize, to: usize, at_ns: u64| {
        let mut out = Vec::new();
        let mut queue = Vec::new();
        net.send(
            from,
            frame(to),
            SimTime::ZERO + SimDuration::from_ns(at_ns),
            &mut out,
        );
        let mut delivered = 0;
        loop {
            for a in out.drain(..) {
                match a {
                    NetAction::Deliver { host, .. } => {
                        assert_eq!(host, to);
                        delivered += 1;
                    }
                    NetAction::Schedule { at, event } => queue.push((at, event)),
                    NetAction::Reserve { .. } | NetAction::ScheduleReserved { .. } => {
                        unreachable!("lazy mode is off")
                    }
                }
            }
            queue.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
            match queue.pop() {
                Some((at, ev)) => net.handle(ev, at, &mut out),
                None => break delivered,
            }
        }
    };
    assert_eq!(deliveries(&mut net, 0, 1, 1_000), 1);
    assert_eq!(deliveries(&mut net, 1, 2, 2_000), 1);
    assert_eq!(deliveries(&mut net, 0, 1, 20_000), 0);
    assert_eq!(deliveries(&mut net, 1, 2, 20_000), 0);
    assert_eq!(deliveries(&mut net, 0, 2, 20_000), 1);
    assert_eq!(net.stats().faults.stopped, 2);

    cfg.faults.stops = vec![HostStop { host: 3, at_ns: 0 }];
    let err = Network::new(&cfg).unwrap_err().to_string();
    assert!(err.contains("faults.stops.host"), "{err}");
}
