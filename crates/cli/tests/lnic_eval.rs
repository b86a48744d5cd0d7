//! The prototype-style evaluation flow end to end: `sdk/programs/lnic_eval`
//! (the interface of the prototype's lnic-evaluation.c) gets its arguments
//! under `--load`, runs at the prototype's addresses (node 10.0.0.2, load
//! generator 10.0.0.1), announces its threads, and serves 16 B
//! `[service_cycles, sent_cycle]` requests, for each of its test types.

use std::process::Command;

use nanopu_testkit::repo;

fn build_sdk() {
    nanopu_testkit::sdk_build();
}

struct Run {
    code: Option<i32>,
    stderr: String,
    stdout: String,
    stats: serde_json::Value,
}

/// `nanopu run lnic_eval.elf --load ...` with the prototype's arguments.
fn run(test: &str, contexts: &str, start_messages: u32, ip_arg: &str, stall: (u32, u32)) -> Run {
    build_sdk();
    let stats = std::env::temp_dir().join(format!(
        "nanopu-lnic-eval-{}-{test}-{ip_arg}-{}.json",
        std::process::id(),
        stall.1
    ));
    let _ = std::fs::remove_file(&stats);
    let o = Command::new(env!("CARGO_BIN_EXE_nanopu"))
        .arg("run")
        .arg(repo().join("sdk/build/lnic_eval.elf"))
        .args(["--load", "--pattern", "lnic-eval", "--msg-bytes", "16"])
        .args(["--rate-mrps", "0.5", "--count", "400", "--warmup", "20"])
        .args(["--contexts", contexts, "--service", "fixed:500"])
        .args(["--start-messages", &start_messages.to_string()])
        .args(["--node-ip", "10.0.0.2", "--client-ip", "10.0.0.1"])
        .args(["--max-sim-ms", "5", "--stats-json"])
        .arg(&stats)
        .arg("--")
        .args(["00:26:E1:00:00:00", ip_arg, test])
        .args([stall.0.to_string(), stall.1.to_string()])
        .output()
        .unwrap();
    Run {
        code: o.status.code(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stats: std::fs::read_to_string(&stats)
            .ok()
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or_default(),
    }
}

fn assert_served(r: &Run, test: &str, start_messages: u64) {
    assert_eq!(r.code, Some(0), "{test}: {}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout
            .contains(&format!("root node running test type {test}")),
        "{}",
        r.stdout
    );
    let load = &r.stats["load"];
    assert_eq!(load["received"], 400, "{test}: {load}");
    assert_eq!(load["wrong_replies"], 0, "{test}: {load}");
    assert_eq!(load["lost"], 0, "{test}: {load}");
    assert_eq!(load["start_messages"], start_messages, "{test}: {load}");
}

fn p50_of(r: &Run, context: u64) -> f64 {
    r.stats["load"]["per_context"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["context"] == context)
        .unwrap()["p50_ns"]
        .as_f64()
        .unwrap()
}

#[test]
fn one_context_on_four_cores() {
    let r = run("ONE_CONTEXT_FOUR_CORES", "0", 4, "10.0.0.2", (10, 5));
    assert_served(&r, "ONE_CONTEXT_FOUR_CORES", 4);
}

#[test]
fn four_contexts_on_four_cores() {
    let r = run(
        "FOUR_CONTEXTS_FOUR_CORES",
        "0,1,2,3",
        4,
        "10.0.0.2",
        (10, 5),
    );
    assert_served(&r, "FOUR_CONTEXTS_FOUR_CORES", 4);
    assert_eq!(r.stats["load"]["per_context"].as_array().unwrap().len(), 4);
}

#[test]
fn two_contexts_on_four_shared_cores() {
    let r = run(
        "TWO_CONTEXTS_FOUR_SHARED_CORES",
        "0,1",
        8,
        "10.0.0.2",
        (10, 5),
    );
    assert_served(&r, "TWO_CONTEXTS_FOUR_SHARED_CORES", 8);
}

#[test]
fn different_priorities_with_hts_and_with_timer_interrupts() {
    let hts = run("DIF_PRIORITY_LNIC_DRIVEN", "0,1", 2, "10.0.0.2", (10, 5));
    assert_served(&hts, "DIF_PRIORITY_LNIC_DRIVEN", 2);
    let tis = run("DIF_PRIORITY_TIMER_DRIVEN", "0,1", 2, "10.0.0.2", (10, 5));
    assert_served(&tis, "DIF_PRIORITY_TIMER_DRIVEN", 2);
    // The timer baseline makes the priority-0 thread wait for a tick when
    // the other holds the core; HTS preempts at once.
    assert!(
        p50_of(&tis, 0) > p50_of(&hts, 0),
        "TIS p50 {} vs HTS p50 {}",
        p50_of(&tis, 0),
        p50_of(&hts, 0)
    );
}

#[test]
fn context_one_stalls_by_the_factor() {
    // Every request of context 1 (frequency 0) takes 4x: 2 us instead of 500 ns.
    let mut c0 = Vec::new();
    for test in ["HIGH_PRIORITY_C1_STALL", "LOW_PRIORITY_C1_STALL"] {
        let r = run(test, "0,1", 2, "10.0.0.2", (4, 0));
        assert_served(&r, test, 2);
        let c1 = p50_of(&r, 1);
        assert!(c1 > 2000.0, "{test}: context 1 p50 {c1} ns");
        c0.push(p50_of(&r, 0));
    }
    // At priority 0 the bound demotes the stalling thread and context 0 gets
    // the core at once; at priority 1 (no bound) it waits behind the stalls.
    assert!(c0[0] < 1000.0 && c0[1] > c0[0], "context 0 p50: {c0:?} ns");
}

#[test]
fn a_node_that_is_not_the_root_does_not_serve() {
    let r = run("DIF_PRIORITY_LNIC_DRIVEN", "0,1", 2, "10.0.0.3", (10, 5));
    assert_eq!(r.code, Some(125), "{}", r.stderr);
    assert!(
        r.stdout.contains("10.0.0.3 is not the root node"),
        "{}",
        r.stdout
    );
    // Every core waits and the load generator never got its start-up
    // messages: the run says so instead of running out the clock.
    assert!(
        r.stderr.contains("stopped making progress") && r.stderr.contains("never started"),
        "{}",
        r.stderr
    );
}

#[test]
fn bad_arguments_are_reported_by_the_program() {
    let r = run("NO_SUCH_TEST", "0", 1, "10.0.0.2", (10, 5));
    assert!(
        r.stdout.contains("unknown test type NO_SUCH_TEST"),
        "{}",
        r.stdout
    );
    assert_ne!(r.code, Some(0));
}
