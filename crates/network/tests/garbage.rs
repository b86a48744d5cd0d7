//! Junk never panics a switch, and every frame is accounted for.

mod common;

use common::{frame, ns, Harness};
use nanopu_network::{
    BufferKind, FaultConfig, LoadBalancing, NetworkConfig, PortRef, TopologyConfig,
};
use nanopu_wire::Flags;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A random frame: random bytes, or a valid frame with random damage, to a
/// random (possibly absent) host.
fn junk(rng: &mut ChaCha8Rng, hosts: usize) -> Vec<u8> {
    let kind = rng.random_range(0..4);
    if kind == 0 {
        let len = rng.random_range(0..120);
        return (0..len).map(|_| rng.random()).collect();
    }
    let src = rng.random_range(0..hosts);
    let dst = rng.random_range(0..hosts + 2);
    let flags = Flags::from_bits_retain(rng.random_range(0..=0x3f));
    let mut f = frame(
        src,
        dst,
        flags,
        rng.random(),
        rng.random_range(0..300),
        rng.random(),
    );
    match kind {
        1 => {
            let i = rng.random_range(0..f.len());
            f[i] = rng.random();
        }
        2 => {
            let len = rng.random_range(0..f.len());
            f.truncate(len);
        }
        _ => {}
    }
    f
}

fn config(faults: FaultConfig, buffer: BufferKind) -> NetworkConfig {
    let mut cfg = NetworkConfig {
        topology: TopologyConfig::LeafSpine {
            leaves: 2,
            spines: 2,
            hosts_per_leaf: 3,
        },
        faults,
        ..NetworkConfig::default()
    };
    cfg.switch.buffer = buffer;
    cfg.switch.buffer_bytes = 600;
    cfg.switch.trim_queue_bytes = 128;
    cfg.switch.priority_bands = 4;
    cfg.switch.load_balancing = LoadBalancing::Spray;
    cfg
}

fn blast(cfg: &NetworkConfig, seed: u64) -> Harness {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut h = Harness::new(cfg);
    for port in 0..h.net.switch_ports(0) {
        h.net.watch_queue(PortRef { switch: 0, port });
    }
    let n = h.net.hosts();
    for _ in 0..3000 {
        let f = junk(&mut rng, n);
        let host = rng.random_range(0..n);
        let at = ns(rng.random_range(0..2000));
        h.send(host, f, at);
    }
    h.run();
    // Every queue drained.
    for port in 0..h.net.switch_ports(0) {
        let s = h.net.queue_samples(PortRef { switch: 0, port });
        assert!(!s.is_empty());
        assert_eq!(s.last().unwrap().1, 0);
        assert!(s.windows(2).all(|w| w[0].0 <= w[1].0));
    }
    h
}

#[test]
fn junk_is_forwarded_or_counted() {
    for buffer in [BufferKind::PerPort, BufferKind::Shared] {
        let h = blast(&config(FaultConfig::default(), buffer), 3);
        let s = h.net.stats();
        // No faults: every frame is delivered or dropped exactly once.
        assert_eq!(s.delivered_frames + s.total.dropped.total(), 3000);
        let d = s.total.dropped;
        assert!(
            d.malformed > 0 && d.no_route > 0 && d.buffer_full + d.trim_full > 0,
            "{d:?}"
        );
        assert!(s.total.trimmed > 0);
    }
}

#[test]
fn junk_with_faults_never_panics() {
    let faults = FaultConfig {
        loss: 0.05,
        duplicate: 0.1,
        reorder: 0.1,
        trim: 0.2,
        truncate: 0.2,
        ..FaultConfig::default()
    };
    for seed in 0..3 {
        blast(&config(faults.clone(), BufferKind::Shared), seed);
    }
}
