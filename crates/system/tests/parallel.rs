//! The partitioned network simulation (`threads`) gives the same results,
//! bit for bit, on any number of host threads.

use nanopu_network::{BufferKind, LoadBalancing, NetworkConfig, NetworkStats, TopologyConfig};
use nanopu_nics::nanopu::NicConfig;
use nanopu_sim::SimTime;
use nanopu_system::cluster::{Cluster, ClusterConfig, MessageRecord, MessageSpec};
use nanopu_transport::{Protocol, TransportConfig, TransportStats};

/// Everything a run produced that the thread count must not change.
#[derive(Debug, PartialEq)]
struct Outcome {
    records: Vec<MessageRecord>,
    network: NetworkStats,
    transport: TransportStats,
    events: u64,
    now: SimTime,
    late: u64,
}

fn config(topology: TopologyConfig, threads: usize) -> ClusterConfig {
    let mut network = NetworkConfig {
        topology,
        ..Default::default()
    };
    // Small buffers: trimming and drops, so retransmissions too.
    network.switch.buffer = BufferKind::PerPort;
    network.switch.buffer_bytes = 16 * 1024;
    network.switch.load_balancing = LoadBalancing::Spray;
    let nic = NicConfig::default();
    ClusterConfig {
        network,
        nic: NicConfig {
            max_message_bytes: 16_384,
            transport: TransportConfig {
                protocol: Protocol::Ndp,
                ..nic.transport.clone()
            },
            ..nic
        },
        threads: Some(threads),
        ..Default::default()
    }
}

/// A deterministic workload: every host sends `count` messages of 64 B to
/// 16 KB to random others, some at the very same instant (ties).
fn random_workload(hosts: usize, count: usize) -> Vec<MessageSpec> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out = Vec::new();
    for from in 0..hosts {
        for k in 0..count {
            let to = (from + 1 + next() as usize % (hosts - 1)) % hosts;
            let len = 64 + (next() % 16_320) as u16;
            // Every fourth message at a round microsecond, shared by hosts.
            let at_ns = if k % 4 == 0 {
                1_000 * k as u64
            } else {
                next() % 40_000
            };
            out.push(MessageSpec {
                from,
                to,
                len,
                at_ns,
            });
        }
    }
    out
}

fn incast(hosts: usize) -> Vec<MessageSpec> {
    (1..hosts)
        .map(|from| MessageSpec {
            from,
            to: 0,
            len: 1024,
            at_ns: 1_000,
        })
        .collect()
}

fn run(cfg: &ClusterConfig, workload: &[MessageSpec]) -> Outcome {
    // On exactly the threads asked for, even where one thread would be
    // faster (a single switch's short lookahead).
    let mut c = Cluster::new(&ClusterConfig {
        threads: None,
        ..cfg.clone()
    })
    .unwrap();
    if let Some(threads) = cfg.threads {
        c.force_threads(threads).unwrap();
    }
    run_cluster(c, workload)
}

fn run_cluster(mut c: Cluster, workload: &[MessageSpec]) -> Outcome {
    for m in workload {
        c.send(*m).unwrap();
    }
    // In two pieces: a run may stop and go on.
    c.run(SimTime::ZERO + nanopu_sim::SimDuration::from_ns(20_000))
        .unwrap();
    c.run(SimTime::MAX).unwrap();
    Outcome {
        records: c.records.clone(),
        network: c.network_stats(),
        transport: c.transport_stats(),
        events: c.events,
        now: c.now,
        late: c.late_events(),
    }
}

fn same_on_1_2_3_5_threads(topology: TopologyConfig, workload: &[MessageSpec]) -> Outcome {
    let one = run(&config(topology.clone(), 1), workload);
    assert_eq!(one.late, 0, "no event was scheduled in a partition's past");
    assert!(
        one.records
            .iter()
            .all(|r| r.deliveries == 1 && !r.failed && r.delivered_at.is_some()),
        "every message delivered once"
    );
    // 5: more threads than the host has cores, some waiting for others.
    for threads in [2, 3, 5] {
        let other = run(&config(topology.clone(), threads), workload);
        assert!(other == one, "{threads} threads differ from 1");
    }
    one
}

#[test]
fn leaf_spine_is_the_same_on_any_thread_count() {
    let topology = TopologyConfig::LeafSpine {
        leaves: 4,
        spines: 2,
        hosts_per_leaf: 4,
    };
    let c = Cluster::new(&config(topology.clone(), 2)).unwrap();
    // Four leaves with their hosts, each spine apart.
    assert_eq!(c.partitioning().map(|p| p.0), Some(6));
    let out = same_on_1_2_3_5_threads(topology, &random_workload(16, 12));
    assert!(out.network.total.trimmed > 0, "the buffers overflowed");
}

#[test]
fn leaves_grouped_are_the_same_on_any_thread_count() {
    // Seven leaves in at most three groups (three, three and one leaf),
    // the five spines likewise (two, two and one).
    let topology = TopologyConfig::LeafSpine {
        leaves: 7,
        spines: 5,
        hosts_per_leaf: 3,
    };
    let grouped = |threads| ClusterConfig {
        partitions: Some(3),
        ..config(topology.clone(), threads)
    };
    let c = Cluster::new(&grouped(2)).unwrap();
    assert_eq!(c.partitioning().map(|p| p.0), Some(6));
    let workload = random_workload(21, 8);
    let one = run(&grouped(1), &workload);
    assert_eq!(one.late, 0, "no event was scheduled in a partition's past");
    assert!(one.records.iter().all(|r| r.deliveries == 1 && !r.failed));
    for threads in [2, 3] {
        assert!(
            run(&grouped(threads), &workload) == one,
            "{threads} threads differ from 1"
        );
    }
    // By default at most four groups of each; one switch per partition
    // at most.
    let c = Cluster::new(&config(topology.clone(), 2)).unwrap();
    assert_eq!(c.partitioning().map(|p| p.0), Some(4 + 3));
    let c = Cluster::new(&ClusterConfig {
        partitions: Some(50),
        ..config(topology.clone(), 2)
    })
    .unwrap();
    assert_eq!(c.partitioning().map(|p| p.0), Some(7 + 5));
    // One partition: the single loop, whatever the threads.
    let c = Cluster::new(&ClusterConfig {
        partitions: Some(1),
        ..config(topology.clone(), 2)
    })
    .unwrap();
    assert_eq!(c.partitioning(), None);
    assert!(c
        .parallel_note()
        .unwrap()
        .contains("one partition (partitions = 1)"));
    let e = Cluster::new(&ClusterConfig {
        partitions: Some(0),
        ..config(topology, 2)
    })
    .err()
    .expect("partitions = 0 is refused");
    assert!(e.to_string().contains("partitions = 0"), "{e}");
}

#[test]
fn bursts_apart_in_time_are_the_same_on_any_thread_count() {
    // Two bursts 3 ms apart: threads stop at the end of each epoch and the
    // next starts at the earliest event, so the idle stretch between them
    // is skipped, not crossed a lookahead at a time.
    let topology = TopologyConfig::LeafSpine {
        leaves: 4,
        spines: 2,
        hosts_per_leaf: 4,
    };
    let mut workload = random_workload(16, 4);
    let later: Vec<MessageSpec> = workload
        .iter()
        .map(|m| MessageSpec {
            at_ns: m.at_ns + 3_000_000,
            ..*m
        })
        .collect();
    workload.extend(later);
    let out = same_on_1_2_3_5_threads(topology, &workload);
    assert!(out.now > SimTime::ZERO + nanopu_sim::SimDuration::from_ns(3_000_000));
}

#[test]
fn a_single_switch_incast_is_the_same_on_any_thread_count() {
    let topology = TopologyConfig::SingleSwitch { hosts: 41 };
    let mut c = Cluster::new(&ClusterConfig {
        threads: None,
        ..config(topology.clone(), 3)
    })
    .unwrap();
    c.force_threads(3).unwrap();
    // Hosts in four groups, the switch apart.
    assert_eq!(c.partitioning().map(|p| p.0), Some(5));
    let out = same_on_1_2_3_5_threads(topology, &incast(41));
    assert!(out.network.total.trimmed > 0, "the incast trimmed packets");
}

#[test]
fn a_dumbbell_is_the_same_on_any_thread_count() {
    let topology = TopologyConfig::Dumbbell {
        left_hosts: 6,
        right_hosts: 5,
    };
    same_on_1_2_3_5_threads(topology, &random_workload(11, 6));
}

#[test]
fn partitioned_and_single_loop_agree_on_the_incast() {
    // Not guaranteed in general (exact ties between partitions may order
    // differently), but the incast's ties are all in host order both ways.
    let topology = TopologyConfig::SingleSwitch { hosts: 41 };
    let partitioned = run(&config(topology.clone(), 2), &incast(41));
    let single = run(
        &ClusterConfig {
            threads: None,
            ..config(topology, 1)
        },
        &incast(41),
    );
    assert_eq!(partitioned.records, single.records);
    assert_eq!(partitioned.network, single.network);
}

#[test]
fn threads_are_used_only_where_they_pay() {
    // A single switch: partitions would meet every 43 ns, so the single
    // loop runs it, on any thread count, with its results.
    let topology = TopologyConfig::SingleSwitch { hosts: 41 };
    let mut outcomes = Vec::new();
    for threads in [1, 2] {
        let c = Cluster::new(&config(topology.clone(), threads)).unwrap();
        assert_eq!(c.partitioning(), None);
        let note = c.parallel_note().expect("a note");
        assert!(note.contains("single event loop"), "{note}");
        assert!(note.contains("every 43 ns"), "{note}");
        outcomes.push(run_cluster(c, &incast(41)));
    }
    let single = run_cluster(
        Cluster::new(&ClusterConfig {
            threads: None,
            ..config(topology, 1)
        })
        .unwrap(),
        &incast(41),
    );
    assert!(
        outcomes.iter().all(|o| *o == single),
        "threads changed the single loop's results"
    );
    // A leaf-spine: 343 ns, threads as asked.
    let topology = TopologyConfig::LeafSpine {
        leaves: 4,
        spines: 2,
        hosts_per_leaf: 4,
    };
    let c = Cluster::new(&config(topology, 2)).unwrap();
    assert_eq!(c.parallel_note(), None);
    // Forced: as asked, however short the lookahead.
    let mut c = Cluster::new(&ClusterConfig {
        threads: None,
        ..config(TopologyConfig::SingleSwitch { hosts: 41 }, 2)
    })
    .unwrap();
    c.force_threads(2).unwrap();
    assert_eq!(c.parallel_note(), None);
}

#[test]
fn a_forced_run_is_not_reported_as_run_on_fewer_threads() {
    // Forced runs never fall back to one thread: after running, the note
    // must not claim that most simulated time ran on one.
    let topology = TopologyConfig::LeafSpine {
        leaves: 4,
        spines: 2,
        hosts_per_leaf: 4,
    };
    let mut c = Cluster::new(&ClusterConfig {
        threads: None,
        ..config(topology, 2)
    })
    .unwrap();
    c.force_threads(2).unwrap();
    for m in random_workload(16, 4) {
        c.send(m).unwrap();
    }
    c.run(SimTime::MAX).unwrap();
    assert!(c.events > 0);
    assert_eq!(c.parallel_note(), None);
}

#[test]
fn switching_thread_counts_as_it_goes_changes_nothing() {
    // Not forced: epochs on 1 thread and on 2, whichever is faster.
    let topology = TopologyConfig::LeafSpine {
        leaves: 4,
        spines: 2,
        hosts_per_leaf: 4,
    };
    let workload = random_workload(16, 12);
    let forced = run(&config(topology.clone(), 1), &workload);
    let c = Cluster::new(&config(topology, 2)).unwrap();
    assert_eq!(c.parallel_note(), None);
    let adaptive = run_cluster(c, &workload);
    assert!(adaptive == forced, "adaptive epochs differ from 1 thread");
}

#[test]
fn zero_threads_is_an_error() {
    let cfg = config(TopologyConfig::SingleSwitch { hosts: 4 }, 0);
    let e = Cluster::new(&cfg).err().expect("an error");
    assert!(e.to_string().contains("threads = 0"), "{e}");
}

#[test]
fn threads_on_a_cluster_with_a_node_run_one_loop_with_a_note() {
    // `threads` is a speed knob: it must not make a valid network fail. A
    // node on host 0, built-in hosts elsewhere: the single loop, and a note.
    let mut cfg = config(TopologyConfig::SingleSwitch { hosts: 4 }, 2);
    cfg.programs = vec![nanopu_system::cluster::HostProgram {
        hosts: "0".into(),
        program: nanopu_testkit::program("hello"),
        nic: None,
        args: Vec::new(),
    }];
    let c = Cluster::new(&cfg).expect("threads with a node");
    let note = c.parallel_note().expect("a note");
    assert!(note.contains("host 0 is a node"), "{note}");
    assert_eq!(c.partitioning(), None);
    // Forcing partitions is for the engine's own tests: an error there.
    cfg.threads = None;
    let mut c = Cluster::new(&cfg).unwrap();
    let e = c
        .force_threads(2)
        .expect_err("a node cannot be partitioned");
    assert!(e.to_string().contains("host 0 is a node"), "{e}");
}
