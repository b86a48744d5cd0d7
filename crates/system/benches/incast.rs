//! The network model (`cargo bench -p nanopu-system --bench incast`): the
//! `incast-80` workload of `nanopu bench` (81 built-in NanoTransport hosts
//! on one switch, NDP, 32 KB per port, 80 x 1 KB to host 0), one incast per
//! iteration, measured in frames delivered per host second.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use nanopu_network::{BufferKind, NetworkConfig, TopologyConfig};
use nanopu_sim::SimTime;
use nanopu_system::cluster::{Cluster, ClusterConfig};
use nanopu_transport::Protocol;

const SENDERS: usize = 80;

fn cluster() -> Cluster {
    let mut cfg = ClusterConfig {
        network: NetworkConfig {
            topology: TopologyConfig::SingleSwitch { hosts: SENDERS + 1 },
            ..Default::default()
        },
        ..Default::default()
    };
    cfg.network.switch.buffer = BufferKind::PerPort;
    cfg.network.switch.buffer_bytes = 32 * 1024;
    cfg.nic.transport.protocol = Protocol::Ndp;
    Cluster::new(&cfg).expect("a valid cluster")
}

/// One incast, starting 1 us after the cluster's present.
fn incast(c: &mut Cluster) {
    let at_ns = c.now.fs().div_ceil(1_000_000) + 1_000;
    let first = c.records.len();
    c.send_incast(1..=SENDERS, 0, 1024, at_ns)
        .expect("valid messages");
    c.run(SimTime::MAX).expect("runs");
    assert!(c.records[first..].iter().all(|r| r.deliveries == 1));
}

fn incast_80(c: &mut Criterion) {
    let mut cl = cluster();
    // Warm up (buffers, wheel), then count the frames of one incast.
    incast(&mut cl);
    let before = cl.network_stats().delivered_frames;
    incast(&mut cl);
    let frames = cl.network_stats().delivered_frames - before;
    let mut g = c.benchmark_group("network");
    g.throughput(Throughput::Elements(frames));
    g.bench_function("incast_80", |b| b.iter(|| incast(&mut cl)));
    g.finish();
}

criterion_group!(benches, incast_80);
criterion_main!(benches);
