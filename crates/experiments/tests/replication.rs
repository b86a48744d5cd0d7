//! The applications that span hosts (one-sided RDMA, chain replication,
//! Raft) answer correctly in a cluster of nanoPU nodes: every reply is
//! checked against the application's oracle by the load generator, and a
//! run with a wrong reply fails. Raft keeps serving when its leader stops.
//! Needs the guest programs (`make -C sdk`).

use nanopu_apps::chain::ChainConfig;
use nanopu_apps::raft::RaftConfig;
use nanopu_apps::rdma::{RdmaConfig, RdmaOps};
use nanopu_apps::AppConfig;
use nanopu_experiments::replication::{app_cluster, rdma_network, run_app, AppRun};
use nanopu_experiments::{Runner, Scale};
use nanopu_system::Config;

fn runner() -> Runner {
    Runner::new(Config::default(), Scale::Quick, Some(1), 7)
}

fn run(program: &str, servers: usize, app: AppConfig, count: u64, stop: bool) -> AppRun {
    let r = runner();
    let network = if program == "rdma_server" {
        rdma_network(&r).unwrap()
    } else {
        r.cfg.network.clone()
    };
    let timeout = if stop { 25_000 } else { 1_000_000 };
    let cfg = app_cluster(&r, program, servers, network, app, count, timeout).unwrap();
    run_app(&cfg, stop).unwrap_or_else(|e| panic!("{program}: {e:#}"))
}

fn assert_all_right(run: &AppRun, count: u64) {
    let m = &run.report;
    assert_eq!(
        (m.received, m.wrong_replies, m.unexpected_replies, m.lost),
        (count, 0, 0, 0),
        "{:?}",
        m.first_error
    );
}

#[test]
fn rdma_operations_and_errors_match_the_region_model() {
    let app = AppConfig::Rdma(RdmaConfig {
        ops: RdmaOps::Mix,
        words: 4,
        malformed_fraction: 0.1,
        ..RdmaConfig::default()
    });
    let run = run("rdma_server", 1, app, 400, false);
    assert_all_right(&run, 400);
    // Two 300 ns crossings and the server's time.
    let p50 = run.report.client_p50_ns;
    assert!((600.0..800.0).contains(&p50), "p50 {p50} ns");
}

#[test]
fn chain_reads_see_every_acknowledged_write() {
    let app = AppConfig::Chain(ChainConfig {
        keys: 20,
        read_fraction: 0.5,
        ..ChainConfig::default()
    });
    assert_all_right(&run("chain_server", 3, app, 300, false), 300);
}

#[test]
fn a_chain_listed_in_the_wrong_order_is_caught() {
    // The servers' chain runs the other way from the client's list (head
    // first): the "head" the client writes to is the tail, which answers
    // with a redirection; the client counts it as wrong and the run fails.
    let r = runner();
    let app = AppConfig::Chain(ChainConfig::default());
    let mut cfg = app_cluster(
        &r,
        "chain_server",
        3,
        r.cfg.network.clone(),
        app,
        50,
        1_000_000,
    )
    .unwrap();
    cfg.programs[0].args[1..].reverse();
    let err = run_app(&cfg, false)
        .err()
        .expect("a wrong reply fails the run");
    assert!(format!("{err:#}").contains("wrong replies"), "{err:#}");
}

#[test]
fn raft_writes_and_reads_match_the_store_model() {
    let app = AppConfig::Raft(RaftConfig {
        keys: 20,
        read_fraction: 0.3,
        ..RaftConfig::default()
    });
    let run = run("raft", 3, app, 300, false);
    assert_all_right(&run, 300);
    // Committed on all three: at least four crossings of a 386 ns hop.
    assert!(
        run.report.client_p50_ns > 4.0 * 386.0,
        "{}",
        run.report.client_p50_ns
    );
}

#[test]
fn raft_elects_a_new_leader_when_the_leader_stops() {
    let app = AppConfig::Raft(RaftConfig {
        keys: 20,
        read_fraction: 0.3,
        ..RaftConfig::default()
    });
    let run = run("raft", 3, app, 400, true);
    assert_all_right(&run, 400);
    let (stopped, at) = run.stopped.expect("the leader was stopped");
    let new_leader = run.last_server.expect("someone answered");
    assert_ne!(new_leader, stopped, "the stopped host cannot answer");
    // Writes continued after the stop, through the new leader.
    let after: Vec<f64> = run
        .series
        .iter()
        .filter(|(sent, _)| *sent > at)
        .map(|&(_, l)| l)
        .collect();
    assert!(after.len() > 150, "{} writes after the stop", after.len());
    // The gap: the write in flight waited for timeouts and an election
    // (40-80 us timeouts), far longer than the steady state's few us.
    let gap = run.failover_gap_us().unwrap();
    assert!(gap > 30.0, "gap {gap} us");
    // And the new leader serves at the steady-state pace again.
    let mut tail: Vec<f64> = after.iter().rev().take(50).copied().collect();
    tail.sort_by(f64::total_cmp);
    assert!(tail[25] < 4.0, "median of the last 50: {} us", tail[25]);
}
