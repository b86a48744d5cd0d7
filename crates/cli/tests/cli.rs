//! The command-line contract: exit codes, outputs and one-line errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use nanopu_testkit::{program as sdk, repo};

fn nanopu(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nanopu"))
        .args(args)
        .output()
        .expect("nanopu runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("nanopu-cli-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// Assembles `body` (linked with `extra`) with `tohost`/`fromhost`;
/// returns the ELF's path.
fn asm(name: &str, body: &str, extra: &[&str]) -> PathBuf {
    let elf = tmp(&format!("{name}.elf"));
    let image = nanopu_testkit::assemble(name, &nanopu_testkit::bare_metal(body), None, extra);
    std::fs::write(&elf, image).unwrap();
    elf
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn run_prints_output_and_exits_with_the_program_code() {
    let o = nanopu(&["run", path(&sdk("hello"))]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("Hello from hart 0"));

    let exit7 = asm(
        "exit7",
        "li a0, 15\nla a1, tohost\nsd a0, 0(a1)\n1: j 1b",
        &["-Wl,-N", "-Wl,-Ttext=0x80000000"],
    );
    let o = nanopu(&["run", path(&exit7)]);
    assert_eq!(o.status.code(), Some(7), "{}", stderr(&o));
}

#[test]
fn stats_json_has_the_contract_keys() {
    let stats = tmp("stats.json");
    let o = nanopu(&["run", path(&sdk("hello")), "--stats-json", path(&stats)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    for key in [
        "exit_code",
        "cycles",
        "instret",
        "executed_instret",
        "sim_ns",
        "wall_s",
        "mips",
    ] {
        assert!(j.get(key).is_some(), "missing {key}: {j}");
    }
    assert_eq!(j["exit_code"], 0);
    // Executed one by one, plus the harts' skipped polling iterations, is
    // every retired instruction.
    let skipped: u64 = j["harts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["idle_instret"].as_u64().unwrap())
        .sum();
    assert_eq!(
        j["executed_instret"].as_u64().unwrap() + skipped,
        j["instret"].as_u64().unwrap()
    );
    let (cycles, ns) = (j["cycles"].as_f64().unwrap(), j["sim_ns"].as_f64().unwrap());
    assert!(
        (ns - cycles * 0.3125).abs() < 1e-6,
        "3.2 GHz: {cycles} cycles = {ns} ns"
    );
}

#[test]
fn cores_flag_changes_the_node() {
    let stats = tmp("stats2.json");
    let o = nanopu(&[
        "run",
        path(&sdk("hello")),
        "--cores",
        "2",
        "--stats-json",
        path(&stats),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!(j["harts"].as_array().unwrap().len(), 2);
}

fn assert_one_line_error(o: &Output, needle: &str) {
    assert_eq!(o.status.code(), Some(125), "{}", stderr(o));
    let e = stderr(o);
    assert!(e.starts_with("error: "), "{e}");
    assert!(e.contains(needle), "expected {needle:?} in: {e}");
    assert!(!e.contains("panicked"), "{e}");
}

#[test]
fn missing_file() {
    let o = nanopu(&["run", "/nonexistent/prog.elf"]);
    assert_one_line_error(&o, "/nonexistent/prog.elf");
}

#[test]
fn not_an_elf() {
    let f = tmp("text.elf");
    std::fs::write(&f, "just some text").unwrap();
    assert_one_line_error(&nanopu(&["run", path(&f)]), "not an ELF");
}

#[test]
fn host_binary_is_not_risc_v() {
    assert_one_line_error(
        &nanopu(&["run", env!("CARGO_BIN_EXE_nanopu")]),
        "not RISC-V",
    );
}

#[test]
fn segment_outside_dram() {
    let low = asm("low", "j .", &["-Wl,-Ttext=0x10000"]);
    assert_one_line_error(&nanopu(&["run", path(&low)]), "outside DRAM");
}

#[test]
fn guest_fault_names_pc_instruction_and_cause() {
    let bad = asm(
        "bad",
        ".option norvc\nnop\n.word 0",
        &["-Wl,-N", "-Wl,-Ttext=0x80000000"],
    );
    let o = nanopu(&["run", path(&bad)]);
    assert_one_line_error(&o, "illegal instruction at pc 0x80000004");
}

#[test]
fn max_cycles_is_enforced() {
    let spin = asm(
        "spin",
        "1: addi a0, a0, 1\nj 1b",
        &["-Wl,-N", "-Wl,-Ttext=0x80000000"],
    );
    let o = nanopu(&["run", path(&spin), "--max-cycles", "10000"]);
    assert_one_line_error(&o, "--max-cycles 10000");
}

#[test]
fn config_errors_name_the_key() {
    let cfg = tmp("bad.toml");
    std::fs::write(&cfg, "[node]\ncorez = 4\n").unwrap();
    assert_one_line_error(
        &nanopu(&["run", path(&sdk("hello")), "--config", path(&cfg)]),
        "corez",
    );
    std::fs::write(&cfg, "[node.core]\nmul_cycles = \"eight\"\n").unwrap();
    assert_one_line_error(
        &nanopu(&["run", path(&sdk("hello")), "--config", path(&cfg)]),
        "line 2",
    );
    std::fs::write(&cfg, "[node]\ncores = 1000\n").unwrap();
    assert_one_line_error(
        &nanopu(&["run", path(&sdk("hello")), "--config", path(&cfg)]),
        "cores",
    );
}

#[test]
fn config_file_values_take_effect() {
    let cfg = tmp("slowmul.toml");
    let stats = |c: Option<&Path>| {
        let s = tmp(&format!("m{}.json", c.is_some()));
        let mut args = vec![
            "run".to_string(),
            path(&sdk("matmul")).into(),
            "--stats-json".into(),
            path(&s).into(),
        ];
        if let Some(c) = c {
            args.extend(["--config".into(), path(c).into()]);
        }
        let o = Command::new(env!("CARGO_BIN_EXE_nanopu"))
            .args(&args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let j: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&s).unwrap()).unwrap();
        j["cycles"].as_u64().unwrap()
    };
    std::fs::write(&cfg, "[node.core]\nmul_cycles = 16\n").unwrap();
    assert!(
        stats(Some(&cfg)) > stats(None),
        "a slower multiplier takes more cycles"
    );
}

#[test]
fn bench_reports_the_contract_keys() {
    sdk("matmul");
    let json = tmp("bench.json");
    let o = nanopu(&["bench", "--json", path(&json)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for key in [
        "kernel_mips",
        "kernel_cycles_per_s",
        "idle_cycles_per_s",
        "incast80_packets_per_s",
        "incast80_sim_us_per_s",
        "incast80_messages",
        "leafspine64_packets_per_s",
        "leafspine64_sim_us_per_s",
        "leafspine64_messages",
        "node16_mips",
        "node16_full_mips",
    ] {
        assert!(j[key].as_f64().unwrap() > 0.0, "{key}: {j}");
    }
    // The build the figures came from (the tests' binary is plain).
    assert_eq!(j["build"], "plain", "{j}");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.starts_with("build: plain, opt-level "), "{out}");
}

#[test]
fn bench_node_only_writes_its_json() {
    // `--json` used to be ignored with `--node-only` (no file, no error).
    sdk("loopback_16core");
    sdk("loopback_16core_full");
    let json = tmp("bench-node.json");
    let o = nanopu(&[
        "bench",
        "--node-only",
        "--repeat",
        "2",
        "--json",
        path(&json),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for key in ["node16_mips", "node16_full_mips", "node16_sim_us_per_s"] {
        assert!(j[key].as_f64().unwrap() > 0.0, "{key}: {j}");
    }
    assert_eq!(j["repeat"], 2, "{j}");
    // MIPS counts the instructions executed, not the skipped polling ones.
    let (executed, retired) = (
        j["node16_executed"].as_u64().unwrap(),
        j["node16_instret"].as_u64().unwrap(),
    );
    assert!(
        executed > 0 && executed < retired,
        "{executed} of {retired}"
    );
    assert!(j.get("kernel_mips").is_none(), "no kernels ran: {j}");
}

#[test]
fn net_runs_a_config_file_and_writes_json_csv_and_pcap() {
    let dir = tmp("net");
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("net.toml");
    std::fs::write(
        &cfg,
        r#"
[network.topology]
kind = "single-switch"
hosts = 4
[nic]
max_message_bytes = 20000
[nic.transport]
protocol = "homa"
[[workload.incast]]
senders = "1-3"
receiver = 0
sizes = [100, 5000, 20000]
[[workload.messages]]
from = 0
to = 2
len = 64
at_ns = 500
"#,
    )
    .unwrap();
    let (json, csv, pcap) = (dir.join("o.json"), dir.join("o.csv"), dir.join("o.pcap"));
    let o = nanopu(&[
        "net",
        path(&cfg),
        "--json",
        path(&json),
        "--csv",
        path(&csv),
        "--pcap",
        path(&pcap),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("4 hosts, homa: 4 messages, 4 delivered, 0 failed"),
        "{out}"
    );
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(j["delivered"], 4);
    assert!(j["latency_us"]["max"].as_f64().unwrap() > 0.0);
    assert_eq!(std::fs::read_to_string(&csv).unwrap().lines().count(), 5);
    // Host 0's link: the 3 incast messages in (1 + 5 + 20 packets), their
    // ACKs and GRANTs out, the 64 B message out and its ACK in.
    let pcap_len = std::fs::metadata(&pcap).unwrap().len();
    assert!(pcap_len > 24 + 26 * (16 + 64), "pcap of {pcap_len} bytes");
}

#[test]
fn net_config_errors_name_the_key() {
    let dir = tmp("net-bad");
    std::fs::create_dir_all(&dir).unwrap();
    for (text, want) in [
        ("[network.topology]\nkind = \"ring\"\n", "ring"),
        ("[network.switch]\nbuffer_bytes = 0\n[nic.transport]\nprotocol = \"ndp\"\n", "buffer_bytes"),
        ("[nic.transport]\nprotocol = \"ndp\"\n[[workload.incast]]\nsenders = \"1-9\"\nreceiver = 0\nsizes = [8]\n", "1-9"),
        ("[nic.transport]\nprotocol = \"none\"\n", "protocol"),
        ("[nic.transport]\nprotcol = \"ndp\"\n", "protcol"),
        ("[nic.transport]\nprotocol = \"ndp\"\n[[programs]]\nhosts = \"0\"\nprogram = \"missing.elf\"\n", "missing.elf"),
    ] {
        let cfg = dir.join("bad.toml");
        std::fs::write(&cfg, text).unwrap();
        let o = nanopu(&["net", path(&cfg)]);
        assert_eq!(o.status.code(), Some(125), "{text}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{text}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    }
}

#[test]
fn trace_lists_every_retired_instruction() {
    let trace = tmp("trace.txt");
    let stats = tmp("trace-stats.json");
    let o = nanopu(&[
        "run",
        path(&sdk("hello")),
        "--trace",
        path(&trace),
        "--stats-json",
        path(&stats),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&trace).unwrap();
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    let retired = text
        .lines()
        .filter(|l| !l.ends_with("(did not retire)"))
        .count() as u64;
    assert_eq!(retired, j["instret"].as_u64().unwrap());
    assert!(text.starts_with("0 "), "{}", &text[..80.min(text.len())]);
}

#[test]
fn the_example_network_configs_run() {
    sdk("loopback");
    sdk("incast_client");
    sdk("nbody_cluster");
    sdk("nb_mica");
    sdk("mica");
    for (name, want) in [
        (
            "incast.toml",
            "11 hosts, ndp: 10 messages, 10 delivered, 0 failed",
        ),
        ("rpc-loopback.toml", "1500 replies"),
        (
            "incast-80-nodes.toml",
            "nodes' cores: 160 messages sent, 160 received",
        ),
        (
            "leaf-spine-64.toml",
            "12800 delivered, 0 failed, 0 delivered twice",
        ),
        // The nodes' consoles, and every program's exit.
        (
            "nbody-cluster.toml",
            "[host 3] nbody_cluster node 3 of 4: 8 steps, checksum",
        ),
        (
            "nbody-cluster.toml",
            "result: ok: every node's program exited with code 0",
        ),
        // NEBULA's server and the nanoPU's in one loop, every reply checked.
        (
            "nebula-mica-net.toml",
            "client 2: 2000 requests, 2000 replies, 0 wrong, 0 lost",
        ),
        (
            "nebula-mica-net.toml",
            "result: ok: every message delivered, every request answered",
        ),
    ] {
        let cfg = repo().join("configs").join(name);
        let o = nanopu(&["net", path(&cfg)]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains(want), "{name}: {out}");
    }
}
