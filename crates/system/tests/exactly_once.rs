//! Exactly-once delivery on networks that are busy but working (issue #55):
//! over random topologies, load balancing modes, protocols, switch buffers
//! and workloads (random traffic and incasts), every message is delivered
//! exactly once and none fails, unless a fault made its receiver (or its
//! sender) unreachable: a host stopped before anything was sent
//! (`[[network.faults.stops]]`), in which case the message fails and is
//! never delivered. Nothing is held once the run is over.
//!
//! Bounded so that `make test` stays quick: 100 small networks (up to 16
//! hosts and 95 messages each) take well under a second
//! (`PROPTEST_CASES` raises the count).

use nanopu_network::{BufferKind, HostStop, LoadBalancing, TopologyConfig};
use nanopu_sim::{SimDuration, SimTime};
use nanopu_system::cluster::{Cluster, ClusterConfig, ClusterEnd, MessageSpec, StopWhen};
use nanopu_transport::Protocol;
use proptest::prelude::*;

/// Largest message: 16 packets.
const MAX_LEN: u16 = 16 * 1024;

#[derive(Clone, Debug)]
struct Case {
    topology: TopologyConfig,
    balancing: LoadBalancing,
    protocol: Protocol,
    buffer_bytes: u64,
    trimming: bool,
    /// Random messages: (from, to, len, gap before it in ns), host indices
    /// taken modulo the host count.
    messages: Vec<(usize, usize, u16, u64)>,
    /// An incast of `len` bytes from every other host to this one.
    incast: Option<(usize, u16)>,
    /// A host that stops at time 0.
    stopped: Option<usize>,
}

fn topology() -> impl Strategy<Value = TopologyConfig> {
    prop_oneof![
        (3usize..=8).prop_map(|hosts| TopologyConfig::SingleSwitch { hosts }),
        (1usize..=4, 1usize..=3).prop_map(|(left_hosts, right_hosts)| {
            TopologyConfig::Dumbbell {
                left_hosts,
                right_hosts,
            }
        }),
        (2usize..=3, 1usize..=2, 2usize..=4).prop_map(|(leaves, spines, hosts_per_leaf)| {
            TopologyConfig::LeafSpine {
                leaves,
                spines,
                hosts_per_leaf,
            }
        }),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    (
        topology(),
        prop_oneof![Just(LoadBalancing::Ecmp), Just(LoadBalancing::Spray)],
        prop_oneof![
            Just(Protocol::Ndp),
            Just(Protocol::Homa),
            Just(Protocol::HomaTr)
        ],
        prop_oneof![Just(8 * 1024u64), Just(32 * 1024), Just(1 << 20)],
        any::<bool>(),
        prop::collection::vec((0usize..64, 0usize..64, 8u16..=MAX_LEN, 0u64..2_000), 5..40),
        prop::option::weighted(0.5, (0usize..64, 8u16..=4096)),
        prop::option::weighted(0.25, 0usize..64),
    )
        .prop_map(
            |(topology, balancing, protocol, buffer_bytes, trim, messages, incast, stopped)| {
                Case {
                    topology,
                    balancing,
                    protocol,
                    buffer_bytes,
                    // NDP and Homa-Tr need trimming switches; Homa runs on
                    // either (it ignores trimmed headers).
                    trimming: trim || protocol != Protocol::Homa,
                    messages,
                    incast,
                    stopped,
                }
            },
        )
}

fn config(c: &Case) -> ClusterConfig {
    let mut cfg = ClusterConfig::default();
    cfg.network.topology = c.topology.clone();
    cfg.network.switch.load_balancing = c.balancing;
    cfg.network.switch.buffer = BufferKind::PerPort;
    cfg.network.switch.buffer_bytes = c.buffer_bytes;
    cfg.network.switch.trimming = c.trimming;
    cfg.nic.max_message_bytes = MAX_LEN as u32;
    cfg.nic.transport.protocol = c.protocol;
    let hosts = c.topology.hosts();
    if let Some(h) = c.stopped {
        cfg.network.faults.stops.push(HostStop {
            host: h % hosts,
            at_ns: 0,
        });
    }
    cfg
}

fn specs(c: &Case) -> Vec<MessageSpec> {
    let hosts = c.topology.hosts();
    let mut at_ns = 100;
    let mut out: Vec<MessageSpec> = c
        .messages
        .iter()
        .map(|&(from, to, len, gap)| {
            let from = from % hosts;
            let to = (from + 1 + to % (hosts - 1)) % hosts;
            at_ns += gap;
            MessageSpec {
                from,
                to,
                len,
                at_ns,
            }
        })
        .collect();
    if let Some((to, len)) = c.incast {
        let to = to % hosts;
        out.extend((0..hosts).filter(|&h| h != to).map(|from| MessageSpec {
            from,
            to,
            len,
            at_ns: 500,
        }));
    }
    out
}

fn check(c: &Case) -> Result<(), TestCaseError> {
    let cfg = config(c);
    let specs = specs(c);
    let mut cl = Cluster::new(&cfg).unwrap();
    for &m in &specs {
        cl.send(m).unwrap();
    }
    // Far beyond any run's end: a run that does not end by itself here is
    // a livelock.
    let limit = SimTime::ZERO + SimDuration::from_ns(100_000_000);
    let end = cl.run_until(limit, StopWhen::default()).unwrap();
    prop_assert_eq!(end, ClusterEnd::Idle, "{:?}", c);
    let stopped = c.stopped.map(|h| h % c.topology.hosts());
    for (i, (r, m)) in cl.records.iter().zip(&specs).enumerate() {
        let unreachable = stopped.is_some_and(|h| h == m.from || h == m.to);
        if unreachable {
            prop_assert!(
                r.failed && r.deliveries == 0,
                "message {} {:?} to or from a stopped host: {:?} ({:?})",
                i,
                m,
                r,
                c
            );
        } else {
            prop_assert!(
                !r.failed && r.deliveries == 1,
                "message {} {:?}: {:?}, transport {:?} ({:?})",
                i,
                m,
                r,
                cl.transport_stats(),
                c
            );
        }
    }
    prop_assert_eq!(cl.unknown_deliveries, 0);
    prop_assert!(cl.unmatched_deliveries.is_empty());
    prop_assert_eq!(cl.occupancy(), None, "a host still holds resources");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: nanopu_testkit::proptest_cases(100),
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_message_exactly_once_unless_its_peer_is_unreachable(c in case()) {
        check(&c)?;
    }
}
