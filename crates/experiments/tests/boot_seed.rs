//! Points that share a boot (`boot_seed.rs`) measure what points booting
//! on their own measure, bit for bit: the seeding point pauses its run to
//! fork the node, and later points start from that fork. Needs the guest
//! programs (`make -C sdk`).

use nanopu_apps::mica::MicaConfig;
use nanopu_apps::AppConfig;
use nanopu_experiments::boot_seed::{BootSeed, SEED_PAUSE};
use nanopu_experiments::{Runner, Scale};
use nanopu_nics::nanopu::core_selection::Policy;
use nanopu_system::{Config, LoadConfig, LoadMode, NicKind};

/// 16 cores serving MICA; hart 0 preloads `PAIRS` pairs first, which takes
/// about 10 simulated ms: longer than a pause, so a seed is kept.
const PAIRS: u32 = 30_000;

fn load(rate_mrps: f64) -> LoadConfig {
    LoadConfig {
        count: 300,
        warmup: 30,
        mode: LoadMode::Open { rate_mrps },
        app: Some(AppConfig::Mica(MicaConfig {
            pairs: PAIRS,
            ..MicaConfig::default()
        })),
        ..LoadConfig::default()
    }
}

#[test]
fn points_from_a_shared_boot_measure_what_their_own_boots_do() {
    let cfg = Config {
        node: nanopu_experiments::nebula::server_node()
            .expect("configs/nebula-server.toml")
            .into(),
        ..Config::default()
    };
    let r = Runner::new(cfg, Scale::Quick, Some(1), 7);
    let program = r
        .program("nb_nanopu_mica")
        .unwrap_or_else(|e| panic!("{e}"));
    let args = vec![PAIRS.to_string(), "512".to_string()];
    let own = |rate| {
        r.run_on_node(
            &program,
            &args,
            NicKind::Nanopu,
            Some(Policy::Jbsq),
            None,
            &load(rate),
        )
        .unwrap_or_else(|e| panic!("{e}"))
    };
    let seed = BootSeed::new();
    let shared = |rate| {
        r.run_on_node_seeded(
            &seed,
            &program,
            &args,
            NicKind::Nanopu,
            Some(Policy::Jbsq),
            &load(rate),
        )
        .unwrap_or_else(|e| panic!("{e}"))
    };
    let first = shared(2.0);
    let second = shared(8.0);
    let third = shared(2.0);
    assert!(
        !seed.is_empty(),
        "a boot longer than {SEED_PAUSE:?} keeps a seed"
    );
    let (own_first, own_second) = (own(2.0), own(8.0));
    assert!(own_first.load.received == 300 && own_second.load.received == 300);
    // Everything measured: latencies, throughput, counters, the node's
    // LLC and DRAM statistics and its thread switches.
    let same = |a: &nanopu_experiments::Measured, b: &nanopu_experiments::Measured| {
        format!("{a:?}") == format!("{b:?}")
    };
    assert!(same(&first, &own_first), "the seeding point itself");
    assert!(same(&second, &own_second), "a point from the seed");
    assert!(same(&third, &own_first), "a second point from the seed");
    // The loads differ, and so do their measurements.
    assert!(!same(&first, &second));
}
