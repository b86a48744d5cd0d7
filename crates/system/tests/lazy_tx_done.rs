//! The network's lazy mode (an idle switch port's frame end is no event)
//! gives exactly what the eager mode gives: every record, counter, queue
//! sample and the final time, at exact ties too.

use nanopu_network::{BufferKind, LoadBalancing, NetworkConfig, NetworkStats, TopologyConfig};
use nanopu_nics::nanopu::NicConfig;
use nanopu_sim::{SimDuration, SimTime};
use nanopu_system::cluster::{Cluster, ClusterConfig, ClusterEnd, MessageSpec, StopWhen};
use nanopu_transport::{Protocol, TransportConfig, TransportStats};

#[derive(Debug, PartialEq)]
struct Outcome {
    records: Vec<String>,
    network: NetworkStats,
    transport: TransportStats,
    samples: Vec<(SimTime, u64)>,
    ends: Vec<(ClusterEnd, SimTime)>,
}

fn config(topology: TopologyConfig, buffer: BufferKind, lb: LoadBalancing) -> ClusterConfig {
    let mut network = NetworkConfig {
        topology,
        ..Default::default()
    };
    // Small buffers: trimming, drops and retransmissions.
    network.switch.buffer = buffer;
    network.switch.buffer_bytes = 12 * 1024;
    network.switch.load_balancing = lb;
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
        ..Default::default()
    }
}

/// Every host sends `count` messages to others, many at the very same
/// instants (ties at every switch).
fn workload(hosts: usize, count: usize) -> Vec<MessageSpec> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
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
            let len = 64 + (next() % 9_000) as u16;
            let at_ns = if k % 2 == 0 {
                500 * k as u64
            } else {
                next() % 20_000
            };
            out.push(MessageSpec {
                from,
                to,
                len,
                at_ns,
            });
        }
    }
    // An incast on host 0 at one instant.
    out.extend((1..hosts).map(|from| MessageSpec {
        from,
        to: 0,
        len: 2048,
        at_ns: 7_000,
    }));
    out
}

fn run(cfg: &ClusterConfig, lazy: bool, workload: &[MessageSpec]) -> (Outcome, u64) {
    let mut c = Cluster::new(cfg).unwrap();
    assert!(
        c.network().lazy_tx_done(),
        "built-in hosts: lazy by default"
    );
    c.network_mut().set_lazy_tx_done(lazy);
    let down = c.network().host_downlink(0).expect("a switched network");
    c.network_mut().watch_queue(down);
    for m in workload {
        c.send(*m).unwrap();
    }
    // In pieces, ending between and at events.
    let mut ends = Vec::new();
    for until_ns in [3_000, 7_001, 9_000, 15_000] {
        let until = SimTime::ZERO + SimDuration::from_ns(until_ns);
        let end = c.run_until(until, StopWhen::default()).unwrap();
        ends.push((end, c.now));
    }
    let end = c.run_until(SimTime::MAX, StopWhen::default()).unwrap();
    ends.push((end, c.now));
    assert_eq!(c.late_events(), 0);
    let o = Outcome {
        records: c.records.iter().map(|r| format!("{r:?}")).collect(),
        network: c.network_stats(),
        transport: c.transport_stats(),
        samples: c.network().queue_samples(down).to_vec(),
        ends,
    };
    (o, c.events)
}

fn same_lazy_and_eager(cfg: ClusterConfig, hosts: usize) {
    let w = workload(hosts, 6);
    let (eager, eager_events) = run(&cfg, false, &w);
    assert!(eager.network.total.trimmed > 0, "buffers overflowed");
    assert!(!eager.samples.is_empty());
    let (lazy, lazy_events) = run(&cfg, true, &w);
    assert_eq!(lazy, eager);
    assert!(
        lazy_events < eager_events * 9 / 10,
        "fewer events: {lazy_events} lazy, {eager_events} eager"
    );
}

#[test]
fn single_switch_per_port() {
    same_lazy_and_eager(
        config(
            TopologyConfig::SingleSwitch { hosts: 24 },
            BufferKind::PerPort,
            LoadBalancing::Ecmp,
        ),
        24,
    );
}

#[test]
fn leaf_spine_shared_spray() {
    let topology = TopologyConfig::LeafSpine {
        leaves: 3,
        spines: 2,
        hosts_per_leaf: 5,
    };
    same_lazy_and_eager(
        config(topology, BufferKind::Shared, LoadBalancing::Spray),
        15,
    );
}

#[test]
fn leaf_spine_per_port_ecmp() {
    let topology = TopologyConfig::LeafSpine {
        leaves: 4,
        spines: 2,
        hosts_per_leaf: 4,
    };
    same_lazy_and_eager(
        config(topology, BufferKind::PerPort, LoadBalancing::Ecmp),
        16,
    );
}
