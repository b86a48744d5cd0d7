//! The memory system from the command line: the NEBULA-class example
//! configuration runs a program, and `--stats-json` reports the memory
//! counters.

use std::process::{Command, Output};

use nanopu_testkit::{program as sdk, repo};

fn nanopu(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nanopu"))
        .args(args)
        .output()
        .expect("nanopu runs")
}

fn stats(name: &str, args: &[&str]) -> (Output, serde_json::Value) {
    let d = std::env::temp_dir().join(format!("nanopu-memcfg-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let file = d.join(name);
    // Before the program's arguments (after `--`).
    let mut all = vec!["run", "--stats-json", file.to_str().unwrap()];
    all.extend_from_slice(args);
    let o = nanopu(&all);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    (o, j)
}

#[test]
fn the_nebula_server_config_loads_and_runs_stream() {
    let cfg = repo().join("configs/nebula-server.toml");
    let elf = sdk("stream");
    let (o, j) = stats(
        "nebula.json",
        &[
            "--config",
            cfg.to_str().unwrap(),
            elf.to_str().unwrap(),
            "--",
            "8",
        ],
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("stream: harts 8"), "{out}");
    assert_eq!(j["harts"].as_array().unwrap().len(), 16);
    assert_eq!(j["config"]["node"]["l2"]["size_bytes"], 16 << 20);
    assert_eq!(j["config"]["node"]["dram_latency_ns"], 45);
    let m = &j["memory"];
    assert_eq!(m["configured_peak_gb_s"], 31.0);
    // 3 MB of arrays fit the 16 MB LLC: read from DRAM once, never evicted.
    assert_eq!(m["llc"]["dirty_evictions"], 0);
    assert!(m["dram_read_bytes"].as_u64().unwrap() >= 3 << 20, "{m}");
}

#[test]
fn stats_json_reports_bytes_per_source_and_bandwidth() {
    let elf = sdk("stream");
    let (_, j) = stats("stream.json", &[elf.to_str().unwrap(), "--", "2"]);
    let m = &j["memory"];
    let sources: Vec<&str> = m["by_source"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["source"].as_str().unwrap())
        .collect();
    assert_eq!(
        sources,
        ["core0", "core1", "core2", "core3", "nic", "llc_writeback"]
    );
    for key in [
        "peak_gb_s",
        "mean_gb_s",
        "dram_read_bytes",
        "dram_write_bytes",
    ] {
        assert!(m[key].as_f64().unwrap() > 0.0, "{key}: {m}");
    }
    assert!(m["peak_gb_s"].as_f64() <= m["configured_peak_gb_s"].as_f64());
    assert!(!m["series"]["read_bytes"].as_array().unwrap().is_empty());
}
