//! `--timeline`: the files `run --load` and `net` write are valid trace-event
//! JSON (checked by `nanopu_timeline::check`), follow every request through
//! each stage of nanoPU Fig. 1, show switch ports, and shrink with sampling.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::{Command, Output};

use nanopu_testkit::{program as sdk, repo};
use nanopu_timeline::check::{check, Summary};

fn nanopu(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nanopu"))
        .args(args)
        .output()
        .expect("nanopu runs")
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("nanopu-timeline-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs `loopback` for `count` requests with `extra` timeline options;
/// returns the checked file and its size.
fn loopback(name: &str, count: u32, extra: &[&str]) -> (Summary, u64) {
    let out = tmp(name);
    let elf = sdk("loopback");
    let count = count.to_string();
    let mut args = vec![
        "run",
        elf.to_str().unwrap(),
        "--load",
        "--count",
        &count,
        "--warmup",
        "0",
        "--timeline",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = nanopu(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("timeline: "), "{}", stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    let s = check(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    (s, text.len() as u64)
}

/// The stages of nanoPU Fig. 1, as (thread-name prefix, span name).
const FIG1: &[(&str, &str)] = &[
    ("nic: wire in", "wire in"),
    ("nic: ingress", "ingress"),
    ("nic: reassembly", "reassembly"),
    ("nic: transport", "transport"),
    ("nic: core selection", "core selection"),
    ("core 0 context 0", "thread"),
    ("nic: tx queue", "tx queue"),
    ("nic: packetization", "packetization"),
    ("nic: egress", "egress"),
    ("nic: wire out", "wire out"),
];

#[test]
fn a_loopback_timeline_is_valid_and_follows_every_request_through_fig1() {
    let count = 40;
    let (s, _) = loopback("loopback.json", count, &[]);
    // One flow per request, each through every stage, in order (and the
    // boot message's, which is sent on the wire: transmit side only).
    let requests: Vec<_> = s
        .flow_slices
        .iter()
        .filter(|(_, v)| v.iter().any(|(_, n)| n == "thread"))
        .collect();
    assert_eq!(requests.len(), count as usize);
    assert_eq!(s.flows, count as usize + 1);
    for (flow, slices) in requests {
        let names: Vec<&str> = slices.iter().map(|(_, n)| n.as_str()).collect();
        let stages: Vec<&str> = FIG1.iter().map(|&(_, n)| n).collect();
        // The host link (load generator side) adds its own spans.
        let in_fig1: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| stages.contains(n))
            .collect();
        assert_eq!(in_fig1, stages, "flow {flow}: {names:?}");
        for ((thread, span), (prefix, name)) in slices
            .iter()
            .filter(|(_, n)| stages.contains(&n.as_str()))
            .zip(FIG1)
        {
            assert!(
                thread.starts_with(prefix) && span == name,
                "flow {flow}: {span} on {thread}"
            );
        }
    }
    // The processes are named; the switch-free run has the node and the client.
    assert!(s.processes.values().any(|p| p.contains("nanoPU node")));
    assert!(s.processes.values().any(|p| p.contains("load generator")));
}

#[test]
fn thread_scheduler_switches_and_interrupts_are_instants() {
    // Two threads under the nanokernel (README, "The prototype's evaluation flow").
    let out = tmp("lnic_eval.json");
    let elf = sdk("lnic_eval");
    let o = nanopu(&[
        "run",
        elf.to_str().unwrap(),
        "--load",
        "--pattern",
        "lnic-eval",
        "--msg-bytes",
        "16",
        "--rate-mrps",
        "1.5",
        "--count",
        "100",
        "--contexts",
        "0,1",
        "--service",
        "fixed:500",
        "--start-messages",
        "2",
        "--node-ip",
        "10.0.0.2",
        "--client-ip",
        "10.0.0.1",
        "--timeline",
        out.to_str().unwrap(),
        "--",
        "00:26:E1:00:00:00",
        "10.0.0.2",
        "DIF_PRIORITY_LNIC_DRIVEN",
        "10",
        "100",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let s = check(&std::fs::read_to_string(&out).unwrap()).unwrap();
    for name in [
        "context switch",
        "interrupt 16 raised",
        "interrupt 16 taken",
    ] {
        assert!(s.instant_names.contains(name), "{:?}", s.instant_names);
    }
    for ctx in ["core 0 context 0", "core 0 context 1"] {
        assert!(
            s.span_names
                .iter()
                .any(|(_, t, n)| t == ctx && n == "thread"),
            "no thread span on {ctx}"
        );
    }
}

#[test]
fn sampling_and_the_window_shrink_the_file() {
    let count = 200;
    let (all, all_bytes) = loopback("all.json", count, &[]);
    let (tenth, tenth_bytes) = loopback("tenth.json", count, &["--timeline-sample", "10"]);
    // The boot message is the first message: sampled, and a flow.
    assert_eq!(all.flows, 201);
    assert_eq!(tenth.flows, 21);
    assert!(
        tenth_bytes * 5 < all_bytes,
        "{tenth_bytes} of {all_bytes} bytes"
    );
    // A window that starts after the run ended holds no request at all.
    let (none, _) = loopback("late.json", count, &["--timeline-window", "100000:100001"]);
    assert_eq!((none.flows, none.spans), (0, 0));
    // A window of the first microseconds holds some, not all.
    let (early, _) = loopback("early.json", count, &["--timeline-window", "0:10"]);
    assert!(early.flows > 0 && early.flows < 200, "{}", early.flows);
}

#[test]
fn a_network_timeline_shows_switch_ports() {
    let out = tmp("net.json");
    let cfg = repo().join("configs/rpc-loopback.toml");
    let o = nanopu(&[
        "net",
        cfg.to_str().unwrap(),
        "--timeline",
        out.to_str().unwrap(),
        "--timeline-sample",
        "5",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let s = check(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let switch_pids: BTreeSet<u64> = s
        .processes
        .iter()
        .filter(|(_, n)| n.starts_with("switch"))
        .map(|(p, _)| *p)
        .collect();
    assert_eq!(switch_pids.len(), 1);
    let port_spans = s
        .span_names
        .iter()
        .filter(|(pid, thread, _)| switch_pids.contains(pid) && thread.starts_with("port "))
        .count();
    assert!(port_spans > 0);
    // A request and its reply: the node's NIC and the switch in one flow.
    let through_both = s.flow_slices.values().filter(|v| {
        v.iter().any(|(t, _)| t.starts_with("port "))
            && v.iter().any(|(_, n)| n == "thread")
            && v.iter().any(|(_, n)| n == "wire out")
    });
    assert!(through_both.count() > 100, "{} flows", s.flows);
}

#[test]
fn bad_timeline_options_are_one_line_errors() {
    let elf = sdk("loopback");
    let elf = elf.to_str().unwrap();
    for (args, what) in [
        (
            vec![
                "run",
                elf,
                "--load",
                "--timeline",
                "/nonexistent/dir/t.json",
            ],
            "cannot write",
        ),
        (
            vec![
                "run",
                elf,
                "--load",
                "--timeline",
                "t.json",
                "--timeline-sample",
                "0",
            ],
            "at least 1",
        ),
        (
            vec![
                "run",
                elf,
                "--load",
                "--timeline",
                "t.json",
                "--timeline-window",
                "5:1",
            ],
            "START_US:END_US",
        ),
        (vec!["run", elf, "--timeline", "t.json"], "needs --load"),
    ] {
        let o = nanopu(&args);
        assert_eq!(o.status.code(), Some(125), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(what), "{args:?}: {}", stderr(&o));
    }
}
