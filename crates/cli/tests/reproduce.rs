//! `nanopu reproduce` end to end at the quick scale: every experiment runs,
//! report.md and summary.json are written with the fixed keys.

use std::path::PathBuf;
use std::process::Command;

#[test]
fn reproduce_writes_the_report_and_summary() {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let ok = Command::new("make")
        .args(["-s", "-C"])
        .arg(repo.join("sdk"))
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "building the guest programs failed: run scripts/setup.sh --test"
    );
    let out = std::env::temp_dir().join(format!("nanopu-reproduce-{}", std::process::id()));
    let o = Command::new(env!("CARGO_BIN_EXE_nanopu"))
        .args(["reproduce", "--scale", "quick", "--threads", "2", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    for key in [
        "w2w-8B",
        "fastpath-8B",
        "trad-loopback-8B",
        "loopback-tput-8B",
        "trad-loopback-tput-8B",
        "loopback-tput-1KB",
        "loopback-inc-speedup-max",
        "dot-product-speedup-small",
    ] {
        let v = &summary[key];
        assert!(
            v["measured"].as_f64().is_some_and(|m| m > 0.0),
            "{key}: {v}"
        );
        assert!(v["published"].as_f64().is_some(), "{key}: {v}");
        assert!(v["unit"].is_string(), "{key}: {v}");
    }
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("| `w2w-8B` |"), "{report}");
    assert!(out.join("loopback-latency-vs-size.svg").exists());
    assert!(out.join("loopback-tput-mrps.csv").exists());
}

#[test]
fn same_seed_same_numbers_whatever_the_thread_count() {
    let run = |threads: &str| {
        let out = std::env::temp_dir().join(format!("nanopu-exp-{}-{threads}", std::process::id()));
        let o = Command::new(env!("CARGO_BIN_EXE_nanopu"))
            .args([
                "experiment",
                "loopback-latency-vs-size",
                "--threads",
                threads,
                "--out",
            ])
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::read_to_string(out.join("loopback-latency-vs-size.csv")).unwrap()
    };
    assert_eq!(run("1"), run("2"));
}

#[test]
fn unknown_experiment_is_named() {
    let o = Command::new(env!("CARGO_BIN_EXE_nanopu"))
        .args(["experiment", "nope"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown experiment \"nope\""));
}
