//! The node scheduler's shortcuts (wake memos and the checks they still owe,
//! the lazy `mip` update before a slice, the mask of cores with output, the
//! cached earliest wake-up: `crates/node/src/node.rs`) against the plain
//! rule (`Node::set_reference_scheduling`: every sleeper checked and `mip`
//! updated in full before every slice, every core asked for output).
//! Multi-hart runs must come out bit-identical: every hart's counters, the
//! thread schedulers' counters and events with their cycles, the memory
//! system's counters and the client's measurements.

use nanopu_apps::mica::MicaConfig;
use nanopu_apps::AppConfig;
use nanopu_core::{HtsNote, HtsStats};
use nanopu_node::{HartSummary, Node, RunEnd};
use nanopu_sim::SimTime;
use nanopu_system::{
    Config, Expect, LoadConfig, LoadMode, NicKind, Pattern, ServiceTime, System, SystemEnd,
};
use nanopu_testkit::program;

/// Everything a run's result is made of, as far as the node goes.
#[derive(Debug, PartialEq)]
struct Outcome {
    harts: Vec<HartSummary>,
    hts: Vec<HtsStats>,
    /// (core, cycle, event) of every thread-scheduler event.
    notes: Vec<(usize, u64, HtsNote)>,
    memory: String,
    /// The client's report (JSON), with a load.
    report: String,
    end: String,
}

fn outcome(node: &mut Node, report: String, end: String) -> Outcome {
    let mut notes = Vec::new();
    node.drain_hts_notes(|core, cycle, note| notes.push((core, cycle, note)));
    Outcome {
        harts: node.hart_summaries(),
        hts: (0..node.cores()).map(|h| node.netif(h).hts.stats).collect(),
        notes,
        memory: serde_json::to_string(&node.memory_stats()).unwrap(),
        report,
        end,
    }
}

/// `program_name` on `cores` cores, driven by the built-in client.
fn with_load(program_name: &str, cores: usize, load: &LoadConfig, reference: bool) -> Outcome {
    with_load_args(program_name, &[], NicKind::Nanopu, cores, load, reference)
}

/// [`with_load`], the program given `args`, behind `nic`.
fn with_load_args(
    program_name: &str,
    args: &[&str],
    nic: NicKind,
    cores: usize,
    load: &LoadConfig,
    reference: bool,
) -> Outcome {
    let mut cfg = Config::default();
    cfg.node.cores = cores;
    cfg.node.icenic.enabled = nic == NicKind::Icenic;
    cfg.nic.kind = nic;
    let path = program(program_name);
    let mut node = Node::with_program(cfg.node.base.clone(), &path).unwrap();
    let htif = node.htif_mut().expect("the program has an HTIF");
    htif.args = std::iter::once(nanopu_node::loader::argv0(&path))
        .chain(args.iter().map(|a| a.to_string()))
        .collect();
    node.set_reference_scheduling(reference);
    node.keep_hts_notes(true);
    let mut s = System::new(node, &cfg, Some(load.clone())).unwrap();
    let end = s.run(SimTime(100_000_000_000_000)).unwrap();
    assert_eq!(end, SystemEnd::ClientDone, "{program_name}");
    let report = serde_json::to_string(&s.load_report().unwrap()).unwrap();
    outcome(s.node_mut(), report, format!("{end:?}"))
}

/// `program_name` on `cores` cores with no network, until it exits.
fn alone(program_name: &str, cores: usize, reference: bool) -> Outcome {
    let cfg = nanopu_node::NodeConfig {
        cores,
        ..nanopu_node::NodeConfig::default()
    };
    let mut node = Node::with_program(cfg, &program(program_name)).unwrap();
    node.set_reference_scheduling(reference);
    node.keep_hts_notes(true);
    let end = node.run(2_000_000_000).unwrap();
    assert!(matches!(end, RunEnd::Exited(0)), "{program_name}: {end:?}");
    outcome(&mut node, String::new(), format!("{end:?}"))
}

fn echoes(count: u64, window: u32) -> LoadConfig {
    LoadConfig {
        message_bytes: 64,
        count,
        warmup: 0,
        mode: LoadMode::Closed { window },
        ..LoadConfig::default()
    }
}

fn assert_same(what: &str, fast: Outcome, plain: Outcome) {
    assert_eq!(fast.harts, plain.harts, "{what}: hart counters");
    assert_eq!(fast.hts, plain.hts, "{what}: thread-scheduler counters");
    assert_eq!(
        fast.notes.len(),
        plain.notes.len(),
        "{what}: thread-scheduler events"
    );
    assert_eq!(fast.notes, plain.notes, "{what}: thread-scheduler events");
    assert_eq!(fast.memory, plain.memory, "{what}: memory counters");
    assert_eq!(fast.report, plain.report, "{what}: client report");
    assert_eq!(fast.end, plain.end, "{what}");
}

#[test]
fn sixteen_serving_cores_match_the_plain_rule() {
    let load = echoes(1500, 64);
    let fast = with_load("loopback_16core_full", 16, &load, false);
    let plain = with_load("loopback_16core_full", 16, &load, true);
    // Not vacuous: all 16 cores served and switched contexts.
    assert!(
        fast.harts.iter().all(|h| h.instret > 1000),
        "{:?}",
        fast.harts
    );
    assert_same("loopback_16core_full", fast, plain);
}

#[test]
fn eight_serving_and_eight_parked_cores_match_the_plain_rule() {
    let load = echoes(1500, 16);
    let fast = with_load("loopback_16core", 16, &load, false);
    let plain = with_load("loopback_16core", 16, &load, true);
    assert_same("loopback_16core", fast, plain);
}

#[test]
fn memory_pollers_under_a_network_match_the_plain_rule() {
    // Hart 0 preloads a store while fifteen harts spin on a flag in memory
    // (their memos hold for all but that word), the node running in the
    // network's short windows; then all sixteen serve under load.
    let pairs = 3000;
    let load = LoadConfig {
        count: 400,
        warmup: 0,
        mode: LoadMode::Open { rate_mrps: 8.0 },
        app: Some(AppConfig::Mica(MicaConfig {
            pairs,
            value_bytes: 64,
            ..MicaConfig::default()
        })),
        timeout_ns: 10_000_000,
        ..LoadConfig::default()
    };
    let args = [pairs.to_string(), "64".to_string()];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let fast = with_load_args("nb_nanopu_mica", &args, NicKind::Nanopu, 16, &load, false);
    let plain = with_load_args("nb_nanopu_mica", &args, NicKind::Nanopu, 16, &load, true);
    // Not vacuous: the pollers spun while hart 0 preloaded, then served.
    assert!(
        fast.harts[0].instret > 100 * u64::from(pairs),
        "{:?}",
        fast.harts
    );
    let served = |h: &&HartSummary| h.instret - h.idle_instret > 10_000;
    assert!(
        fast.harts[1..].iter().filter(served).count() >= 3,
        "{:?}",
        fast.harts
    );
    assert_same("nb_nanopu_mica", fast, plain);
}

#[test]
fn a_traditional_nic_beside_parked_cores_matches_the_plain_rule() {
    // The traditional NIC's DMA and its transmit ring, polled for frames
    // after every run, with three cores parked in `wfi`.
    let load = echoes(1500, 8);
    let fast = with_load_args("trad_loopback", &[], NicKind::Icenic, 4, &load, false);
    let plain = with_load_args("trad_loopback", &[], NicKind::Icenic, 4, &load, true);
    assert!(fast.harts[0].instret > 100_000, "{:?}", fast.harts);
    assert_same("trad_loopback", fast, plain);
}

#[test]
fn thread_scheduler_preemptions_match_the_plain_rule() {
    // Two threads at different priorities on one core under an open-loop
    // overload: the scheduler raises interrupt 16 at arrivals while the
    // core runs or sleeps, and demotes long requests.
    let load = LoadConfig {
        message_bytes: 16,
        count: 600,
        warmup: 0,
        mode: LoadMode::Open { rate_mrps: 2.5 },
        pattern: Pattern::Service,
        extra_contexts: vec![1],
        expect: Expect::Any,
        service: ServiceTime::Exponential { mean_ns: 600.0 },
        timeout_ns: 10_000_000,
        ..LoadConfig::default()
    };
    let fast = with_load("service_hts", 1, &load, false);
    let plain = with_load("service_hts", 1, &load, true);
    assert!(fast.hts[0].interrupts_taken > 10, "{:?}", fast.hts);
    assert_same("service_hts", fast, plain);
}

#[test]
fn shared_memory_and_timer_programs_match_the_plain_rule() {
    // Atomics, LR/SC and a barrier on shared words (memory pollers), and
    // timer interrupts through the CLINT with several threads.
    for (name, cores) in [("multihart", 8), ("multihart", 3), ("nk_timer", 1)] {
        let fast = alone(name, cores, false);
        let plain = alone(name, cores, true);
        assert_same(&format!("{name} on {cores} cores"), fast, plain);
    }
}
