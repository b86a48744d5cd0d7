//! NEBULA's NIC and the designs it is measured against (issue 13): a
//! node with it runs in the one loop (`nb-mica` drives it through
//! `nanopu_experiments`); steering puts the payload in the core's L1.

use nanopu_apps::mica::MicaConfig;
use nanopu_apps::AppConfig;
use nanopu_sim::{SimDuration, SimTime};
use nanopu_system::connections::ConnectionsConfig;
use nanopu_system::nics::nebula::NebulaDesign;
use nanopu_system::{Config, LoadConfig, LoadMode, LoadReport, NicKind, System, SystemEnd};
use nanopu_testkit::{program, repo};

/// `nb_mica` (2,000 pairs) on the NEBULA server behind `design`, driven by
/// the one load generator at `rate` MRPS; `cfg` may change the NIC.
fn mica(design: NebulaDesign, rate: f64, cfg: impl Fn(&mut Config)) -> LoadReport {
    #[derive(serde::Deserialize)]
    struct File {
        node: nanopu_node::NodeConfig,
    }
    let text = std::fs::read_to_string(repo().join("configs/nebula-server.toml")).unwrap();
    let mut c = Config {
        node: toml::from_str::<File>(&text).unwrap().node.into(),
        ..Config::default()
    };
    c.nic.kind = NicKind::Nebula(design);
    c.network.link.gbps = 120;
    cfg(&mut c);
    let elf = program("nb_mica");
    let mut node = nanopu_node::Node::with_program(c.node.base.clone(), &elf).unwrap();
    node.htif_mut().unwrap().args = vec!["nb_mica".into(), "2000".into(), "512".into()];
    let load = LoadConfig {
        count: 300,
        warmup: 50,
        mode: LoadMode::Open { rate_mrps: rate },
        app: Some(AppConfig::Mica(MicaConfig {
            pairs: 2000,
            ..MicaConfig::default()
        })),
        timeout_ns: 50_000_000,
        connections: Some(ConnectionsConfig::default()),
        ..LoadConfig::default()
    };
    let mut sys = System::new(node, &c, Some(load)).unwrap();
    let end = sys
        .run(SimTime::ZERO + SimDuration::from_us(200_000))
        .unwrap();
    assert_eq!(end, SystemEnd::ClientDone, "{}", design.name());
    sys.load_report().unwrap()
}

#[test]
fn mica_answers_correctly_under_every_design_in_the_one_loop() {
    for design in NebulaDesign::ALL {
        let r = mica(design, 2.0, |_| {});
        assert_eq!(r.wrong_replies, 0, "{}: {:?}", design.name(), r.first_error);
        assert_eq!(
            (r.received, r.lost, r.nacks),
            (300, 0, 0),
            "{}",
            design.name()
        );
        assert!(
            r.p99_ns > 100.0 && r.p99_ns.is_finite(),
            "{}: {r:?}",
            design.name()
        );
    }
}

#[test]
fn nacked_requests_are_sent_again_and_count_as_infinite() {
    // A receive buffer of 4 slots: a burst overflows it.
    let r = mica(NebulaDesign::NebulaBase, 40.0, |c| {
        c.nic.nebula.shared_buffer_bytes = 4 * 576
    });
    assert!(r.nacks > 0 && r.retries > 0, "{r:?}");
    assert_eq!(r.wrong_replies, 0, "{:?}", r.first_error);
    assert_eq!(r.received + r.gave_up, 300, "{r:?}");
    // Over 1 % of the measured requests NACKed: the p99 is infinite.
    assert!(r.p99_ns.is_infinite(), "{r:?}");
}

mod steering {
    use nanopu_nics::mac::Mac;
    use nanopu_node::{Node, NodeConfig};
    use nanopu_sim::{SimDuration, SimTime};
    use nanopu_system::nics::nebula::queues::NebulaQueues;
    use nanopu_system::nics::nebula::{wire, NebulaConfig, NebulaDesign, NebulaNic};
    use nanopu_system::nics::{Cores, NicDesign, NicIo};
    use nanopu_wire::Flags;

    const BUF: u64 = 0x9000_0000;

    /// One 544-byte request into a fresh node: the CQ entry core 0 gets and
    /// whether each payload line is in its L1 D-cache when it becomes visible.
    fn deliver(design: NebulaDesign) -> (u64, u64, Vec<bool>) {
        let cfg = NodeConfig {
            cores: 2,
            ..NodeConfig::default()
        };
        let mut node = Node::new(cfg, 0x8000_0000).unwrap();
        let mac = Mac {
            link_gbps: 120,
            rx_latency: SimDuration::ZERO,
            tx_latency: SimDuration::ZERO,
        };
        node.attach_nic();
        let mut nic =
            NebulaNic::new(design, NebulaConfig::default(), mac, 1, node.cores()).unwrap();
        nic.attach(&mut node).unwrap();
        node.device_mut::<NebulaQueues>()
            .unwrap()
            .register_buffer(BUF);
        let period = SimDuration::clock_period_mhz(1000);
        let mut io = NicIo::default();
        let payload = vec![7u8; 544];
        let frame = wire::frame(Vec::new(), 2, 1, 5, 0, 9, 544, Flags::DATA, &payload);
        let mut cores = Cores {
            node: &mut node,
            period,
        };
        nic.frame_in(&frame, SimTime::ZERO, &mut cores, &mut io);
        let (at, ev) = io
            .drain()
            .schedule
            .next()
            .expect("the arrival is scheduled");
        let mut io2 = NicIo::default();
        nic.handle(ev, at, &mut cores, &mut io2);
        let q = node.device::<NebulaQueues>().unwrap();
        let core = (0..2)
            .find(|&c| q.queued(c) > 0)
            .expect("assigned to a core");
        // Pop it as the core would, at a late cycle.
        let q = node.device_mut::<NebulaQueues>().unwrap();
        use nanopu_node::BusDevice;
        let addr = q
            .mmio_load(core as u64 * 0x100 + 8, 8, u64::MAX / 2)
            .unwrap();
        let len = q
            .mmio_load(core as u64 * 0x100 + 0x10, 8, u64::MAX / 2)
            .unwrap();
        let lines = (0..len.div_ceil(64))
            .map(|i| node.hart(core).l1d().contains(addr + 64 * i))
            .collect();
        (addr, len, lines)
    }

    #[test]
    fn nebula_steers_the_payload_into_the_cores_l1() {
        let (addr, len, lines) = deliver(NebulaDesign::Nebula);
        assert_eq!((addr, len), (BUF, 544));
        assert_eq!(lines.len(), 9);
        assert!(
            lines.iter().all(|&l| l),
            "every payload line in L1: {lines:?}"
        );
        let (_, _, lines) = deliver(NebulaDesign::NebulaBase);
        assert!(
            lines.iter().all(|&l| !l),
            "NEBULA_base leaves it in the LLC"
        );
    }
}
