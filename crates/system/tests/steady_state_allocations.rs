//! Once warm, the simulation allocates (next to) nothing per packet or
//! message (issue #16): a nanoPU node serving the built-in client's
//! closed-loop load (frame buffers, message words and payloads reused along
//! the whole path: client, wire, NIC, cores and back), built-in hosts
//! exchanging messages over a leaf-spine network, and NEBULA's load harness
//! behind each of its NIC designs. Allocations are counted by
//! this test binary's global allocator; the tests here take turns (`TURN`),
//! since one running beside another would count the other's too.

use nanopu_network::TopologyConfig;
use nanopu_node::{Node, NodeConfig};
use nanopu_sim::SimTime;
use nanopu_system::cluster::{Cluster, ClusterConfig, MessageSpec};
use nanopu_system::{Config, LoadConfig, LoadMode, System};
use nanopu_testkit::program;
use nanopu_transport::Protocol;
use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Held by each test while it counts.
static TURN: Mutex<()> = Mutex::new(());

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { std::alloc::System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { std::alloc::System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// Allocations per reply while the load runs from `warm` to `end`.
fn allocations_per_reply(bytes: u16, window: u32, warm: SimTime, end: SimTime) -> f64 {
    let node = Node::with_program(NodeConfig::default(), &program("loopback")).unwrap();
    let load = LoadConfig {
        message_bytes: bytes,
        count: 1_000_000,
        mode: LoadMode::Closed { window },
        ..LoadConfig::default()
    };
    let mut s = System::new(node, &Config::default(), Some(load)).unwrap();
    s.run(warm).unwrap();
    let (a0, r0) = (
        ALLOCATIONS.load(Ordering::Relaxed),
        s.load_report().unwrap().received,
    );
    s.run(end).unwrap();
    let (a1, r1) = (
        ALLOCATIONS.load(Ordering::Relaxed),
        s.load_report().unwrap().received,
    );
    let r = s.load_report().unwrap();
    assert_eq!((r.wrong_replies, r.unexpected_replies), (0, 0), "{r:?}");
    assert!(r1 - r0 >= 1_000, "only {} replies measured", r1 - r0);
    // `load_report` itself allocates a little (its summary): not per reply.
    (a1 - a0) as f64 / (r1 - r0) as f64
}

#[test]
fn a_warm_node_and_client_allocate_next_to_nothing_per_request() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let warm = SimTime(50_000_000_000); // 50 us
    let end = SimTime(500_000_000_000); // 500 us
                                        // One packet per message, and two (the MTU is 1 KB).
    for (bytes, window) in [(64u16, 16u32), (2048, 4)] {
        let per_reply = allocations_per_reply(bytes, window, warm, end);
        // The client's table of outstanding requests (a B-tree) allocates a
        // node now and then; everything else is reused. Before buffers were
        // reused end to end this was about 5 per reply.
        assert!(
            per_reply < 0.2,
            "{bytes} B, window {window}: {per_reply:.3} allocations per reply"
        );
        eprintln!("{bytes} B, window {window}: {per_reply:.4} allocations per reply");
    }
}

#[test]
fn built_in_hosts_on_a_leaf_spine_allocate_nothing_per_packet_once_warm() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let mut cfg = ClusterConfig::default();
    cfg.network.topology = TopologyConfig::LeafSpine {
        leaves: 2,
        spines: 2,
        hosts_per_leaf: 4,
    };
    cfg.nic.transport.protocol = Protocol::Ndp;
    let hosts = 8;
    let mut c = Cluster::new(&cfg).unwrap();
    // Messages of one to four packets (the MTU is 1 KB) between every pair
    // in turn, one every 100 ns: a steady, uncongested load (~20 % of each
    // host's 200 Gb/s link).
    let count = 6_000;
    let len = |i: usize| (1 + i % 4) as u16 * 1000;
    for i in 0..count {
        let from = i % hosts;
        let to = (from + 1 + (i / hosts) % (hosts - 1)) % hosts;
        c.send(MessageSpec {
            from,
            to,
            len: len(i),
            at_ns: 100 * i as u64,
        })
        .unwrap();
    }
    let warm = SimTime(100_000_000_000); // 100 us
    let end = SimTime(500_000_000_000); // 500 us
    c.run(warm).unwrap();
    let a0 = ALLOCATIONS.load(Ordering::Relaxed);
    c.run(end).unwrap();
    let a1 = ALLOCATIONS.load(Ordering::Relaxed);
    let packets: u64 = c
        .records
        .iter()
        .enumerate()
        .filter(|(_, r)| r.delivered_at.is_some_and(|t| t > warm && t <= end))
        .map(|(i, _)| u64::from(len(i)).div_ceil(1024))
        .sum();
    assert!(packets >= 5_000, "only {packets} packets delivered");
    assert_eq!(c.records.iter().filter(|r| r.failed).count(), 0);
    let per_packet = (a1 - a0) as f64 / packets as f64;
    eprintln!("leaf-spine, NDP: {per_packet:.4} allocations per delivered packet");
    // What remains is growth: tables and pools reaching the largest number
    // of packets and messages in flight so far (each doubling once), not
    // work per packet. One allocation per message would be 0.4 per packet.
    assert!(
        per_packet < 0.1,
        "{per_packet:.3} allocations per delivered packet"
    );
}

#[test]
fn a_warm_nebula_server_and_its_connections_allocate_little_per_request() {
    use nanopu_apps::mica::MicaConfig;
    use nanopu_apps::AppConfig;
    use nanopu_system::connections::ConnectionsConfig;
    use nanopu_system::nics::nebula::NebulaDesign;
    use nanopu_system::NicKind;
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    #[derive(serde::Deserialize)]
    struct File {
        node: NodeConfig,
    }
    let text =
        std::fs::read_to_string(nanopu_testkit::repo().join("configs/nebula-server.toml")).unwrap();
    let node_cfg = toml::from_str::<File>(&text).unwrap().node;
    // Per-connection buffers and queues, one queue, the shared buffer
    // manager with steering.
    for design in [
        NebulaDesign::Rss,
        NebulaDesign::RpcValet,
        NebulaDesign::Nebula,
    ] {
        let mut cfg = Config {
            node: node_cfg.clone().into(),
            ..Config::default()
        };
        cfg.nic.kind = NicKind::Nebula(design);
        cfg.network.link.gbps = 120;
        let mut node = Node::with_program(cfg.node.base.clone(), &program("nb_mica")).unwrap();
        node.htif_mut().unwrap().args = vec!["nb_mica".into(), "2000".into(), "512".into()];
        let load = LoadConfig {
            count: 1_000_000,
            mode: LoadMode::Open { rate_mrps: 4.0 },
            app: Some(AppConfig::Mica(MicaConfig {
                pairs: 2000,
                ..MicaConfig::default()
            })),
            connections: Some(ConnectionsConfig::default()),
            ..LoadConfig::default()
        };
        let mut s = System::new(node, &cfg, Some(load)).unwrap();
        // The store's preload, then a warm-up of the connections.
        let at = |us: u64| SimTime(us * 1_000_000_000);
        s.run(at(2_000)).unwrap();
        let count = |s: &mut System| {
            (
                ALLOCATIONS.load(Ordering::Relaxed),
                s.load_report().unwrap().received,
            )
        };
        let (a0, r0) = count(&mut s);
        s.run(at(2_500)).unwrap();
        let (a1, r1) = count(&mut s);
        let r = s.load_report().unwrap();
        assert_eq!(r.wrong_replies, 0, "{}: {:?}", design.name(), r.first_error);
        assert!(
            r1 - r0 >= 1_000,
            "{}: only {} replies",
            design.name(),
            r1 - r0
        );
        let per_request = (a1 - a0) as f64 / (r1 - r0) as f64;
        eprintln!(
            "{}: {per_request:.3} allocations per request",
            design.name()
        );
        // The application's request words and the box the client keeps
        // them in: two. NEBULA's own loop, before it reused its frames,
        // events and scratch, made seven.
        assert!(
            per_request < 3.0,
            "{}: {per_request:.3} allocations per request",
            design.name()
        );
    }
}
