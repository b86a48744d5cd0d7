//! Helpers shared by the application tests (`apps.rs`, `apps2.rs`): one
//! node behind a NIC driven by the load generator, and the check that every
//! request was answered right.

use nanopu_apps::AppConfig;
use nanopu_node::Node;
use nanopu_sim::SimTime;
use nanopu_system::client::{LoadConfig, LoadMode, LoadReport};
use nanopu_system::{Config, NicKind, System, SystemEnd};
use nanopu_testkit::program;

/// Generous: MICA preloads for 10 ms, the classifier builds its rules first.
pub const UNTIL: SimTime = SimTime(100_000_000_000_000); // 100 ms

pub fn load(app: AppConfig, count: u64, mode: LoadMode) -> LoadConfig {
    LoadConfig {
        count,
        warmup: 5,
        mode,
        app: Some(app),
        ..LoadConfig::default()
    }
}

/// `program` behind a NIC of `kind`, driven as `nanopu run --load` does.
pub fn one_node(program_name: &str, kind: NicKind, cores: usize, load: LoadConfig) -> LoadReport {
    let mut cfg = Config::default();
    cfg.nic.kind = kind;
    cfg.node.cores = cores;
    cfg.node.icenic.enabled = kind == NicKind::Icenic;
    let node = Node::with_program(cfg.node.base.clone(), &program(program_name)).unwrap();
    let mut s = System::new(node, &cfg, Some(load)).unwrap();
    let end = s.run(UNTIL).unwrap();
    let r = s.load_report().unwrap();
    assert_eq!(end, SystemEnd::ClientDone, "{program_name}: {r:?}");
    r
}

pub fn assert_all_right(what: &str, r: &LoadReport, count: u64) {
    assert_eq!(
        (
            r.sent,
            r.received,
            r.wrong_replies,
            r.unexpected_replies,
            r.lost
        ),
        (count, count, 0, 0, 0),
        "{what}: {:?}",
        r.first_error
    );
    assert!(
        r.p50_ns > 0.0 && r.client_p50_ns >= r.p50_ns,
        "{what}: {r:?}"
    );
}
