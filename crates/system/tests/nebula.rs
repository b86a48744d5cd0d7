//! NEBULA's NIC and the designs it is measured against (issue 13): MICA on
//! 16 cores behind each design answers correctly; NACKed requests are
//! retried and answered; steering puts the payload in the core's L1.

use nanopu_system::nics::nebula::load::{
    boot_mica, node_config_from_toml, run_mica, serve_mica, MicaLoad,
};
use nanopu_system::nics::nebula::NebulaDesign;
use nanopu_testkit::{program, repo};

fn server() -> nanopu_node::NodeConfig {
    let text = std::fs::read_to_string(repo().join("configs/nebula-server.toml")).unwrap();
    node_config_from_toml(&text).unwrap()
}

fn small(design: NebulaDesign) -> MicaLoad {
    MicaLoad::small(design, server(), program("nb_mica"), 2000)
}

#[test]
fn mica_answers_correctly_under_every_design() {
    for design in NebulaDesign::ALL {
        let run = run_mica(&small(design)).unwrap();
        assert_eq!(run.wrong, 0, "{}: {:?}", design.name(), run.first_error);
        assert_eq!(run.unanswered, 0, "{}", design.name());
        assert_eq!(run.answered, run.sent, "{}", design.name());
        assert_eq!(
            run.nacks_received,
            0,
            "{}: no NACKs at low load",
            design.name()
        );
        let s = &run.stages[0];
        assert!(s.finished > 150, "{}: {s:?}", design.name());
        assert!(s.p99_ns.unwrap() > 100, "{}: {s:?}", design.name());
    }
}

/// One preload served under every design gives what a preload per design
/// gives (`nb-mica` relies on it), and a fork that would not be exact is
/// refused.
#[test]
fn a_forked_boot_serves_as_its_own_boot_would() {
    let json = |r: &nanopu_system::nics::nebula::load::MicaRun| serde_json::to_string(r).unwrap();
    let mut first = small(NebulaDesign::Rss);
    first.rates_mrps = vec![2.0, 12.0];
    let booted = boot_mica(&first).unwrap();
    for design in [NebulaDesign::Nebula, NebulaDesign::SrqEmu] {
        let mut load = small(design);
        load.rates_mrps = first.rates_mrps.clone();
        let fork = booted
            .fork_for(&load)
            .unwrap()
            .expect("the preload did not touch the NIC");
        let forked = serve_mica(&load, fork).unwrap();
        let own = run_mica(&load).unwrap();
        assert_eq!(json(&forked), json(&own), "{}", design.name());
        assert_eq!(forked.wrong, 0);
    }
    // Other program arguments (another value size): another preload.
    let mut other = small(NebulaDesign::Nebula);
    other.args[1] = "256".into();
    assert!(booted.fork_for(&other).unwrap().is_none());
    // The original serves after its forks, as its own.
    let served = serve_mica(&first, booted).unwrap();
    assert_eq!(json(&served), json(&run_mica(&first).unwrap()));
}

#[test]
fn a_seed_serves_its_last_point_on_its_own_node() {
    let json = |r: &nanopu_system::nics::nebula::load::MicaRun| serde_json::to_string(r).unwrap();
    let first = small(NebulaDesign::Rss);
    let seed = boot_mica(&first)
        .unwrap()
        .into_seed()
        .expect("design-free boot");
    let mut other = small(NebulaDesign::Nebula);
    other.args[1] = "256".into();
    assert!(seed.fork_for(&other).unwrap().is_none());
    // SRQ_emu: another receive-buffer size, told to the queues at the hand-over.
    let load = small(NebulaDesign::SrqEmu);
    let forked = serve_mica(&load, seed.fork_for(&load).unwrap().unwrap()).unwrap();
    let own = serve_mica(&load, seed.into_server_for(&load).unwrap().unwrap()).unwrap();
    assert_eq!(json(&own), json(&forked));
    assert_eq!(json(&own), json(&run_mica(&load).unwrap()));
}

#[test]
fn nacked_requests_are_retried_and_answered() {
    // A receive buffer of 4 slots of 576 B: a burst overflows it.
    let mut load = small(NebulaDesign::NebulaBase);
    load.nic.shared_buffer_bytes = 4 * 576;
    load.rates_mrps = vec![40.0];
    load.backoff_ns = 500;
    let run = run_mica(&load).unwrap();
    assert!(run.nacks_received > 0, "{run:?}");
    assert!(run.retries > 0);
    assert_eq!(run.wrong, 0, "{:?}", run.first_error);
    assert_eq!(run.gave_up + run.answered, run.sent, "{run:?}");
    assert_eq!(run.unanswered, 0);
    assert!(run.answered > run.sent / 2);
    // And a client that gives up at once reports what it gave up on.
    load.max_attempts = 1;
    let run = run_mica(&load).unwrap();
    assert!(run.gave_up > 0);
    assert_eq!(run.gave_up + run.answered, run.sent, "{run:?}");
}

mod steering {
    use nanopu_nics::mac::Mac;
    use nanopu_node::{Node, NodeConfig};
    use nanopu_sim::{SimDuration, SimTime};
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
        let mut nic = NebulaNic::new(design, NebulaConfig::default(), mac, 1, &mut node).unwrap();
        node.nebula_queues_mut().unwrap().register_buffer(BUF);
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
        let q = node.nebula_queues().unwrap();
        let core = (0..2)
            .find(|&c| q.queued(c) > 0)
            .expect("assigned to a core");
        // Pop it as the core would, at a late cycle.
        let q = node.nebula_queues_mut().unwrap();
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
