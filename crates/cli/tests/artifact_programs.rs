//! The nanoPU artifact's own test programs (l-nic/chipyard tag
//! nanoPU-artifact-v1.0, `tests-lnic/`), built unmodified from the user's
//! checkout by `scripts/build-lnic-tests.sh`, run under `nanopu run --load`
//! with the client that fits each one's messages, and every reply checked
//! (docs/artifact-programs.md has the table). Needs `NANOPU_CHIPYARD` set to
//! such a checkout; without it the test says it is skipped (this repository
//! holds none of the artifact's code, and CI has no checkout).

use std::path::{Path, PathBuf};
use std::process::Command;

use nanopu_testkit::repo;

const CHIPYARD_ENV: &str = "NANOPU_CHIPYARD";

/// Builds every lnic-* program into a scratch directory; the checkout is
/// not touched. Returns the directory and the script's report.
fn build(chipyard: &Path) -> (PathBuf, String) {
    let out = std::env::temp_dir().join(format!("nanopu-artifact-programs-{}", std::process::id()));
    let o = Command::new(repo().join("scripts/build-lnic-tests.sh"))
        .arg(chipyard)
        .arg(&out)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "build-lnic-tests.sh failed: {report}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    (out, report)
}

/// `nanopu run OUT/PROGRAM.elf --load ARGS...` (with `--max-sim-ms 20`
/// unless ARGS set it): exit status and stderr.
fn run(out: &Path, program: &str, args: &[&str]) -> (Option<i32>, String) {
    let limit: &[&str] = if args.contains(&"--max-sim-ms") {
        &[]
    } else {
        &["--max-sim-ms", "20"]
    };
    let o = Command::new(env!("CARGO_BIN_EXE_nanopu"))
        .arg("run")
        .args(limit)
        .arg(out.join(format!("{program}.elf")))
        .arg("--load")
        .args(args)
        .output()
        .unwrap();
    let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&o.stderr));
    (o.status.code(), text)
}

/// The program answered all `count` requests, none wrong.
fn assert_served(out: &Path, program: &str, count: u32, args: &[&str]) {
    let count_arg = count.to_string();
    let mut all = vec!["--count", &count_arg];
    all.extend_from_slice(args);
    let (code, text) = run(out, program, &all);
    let served = format!("load: {count} sent, {count} replies (0 wrong, 0 unexpected, 0 lost)");
    assert!(
        code == Some(0) && text.contains(&served),
        "{program} {args:?}: exit {code:?}, expected `{served}`:\n{text}"
    );
}

/// The prototype's servers of Table 1: at 10.0.0.2, ready when they have
/// sent one start message to their load generator at 10.0.0.1.
const SERVER_STARTS: &[&str] = &[
    "--start-messages",
    "1",
    "--node-ip",
    "10.0.0.2",
    "--client-ip",
    "10.0.0.1",
];

// The CONFIG message `[0, number of DATA messages, start]` most of these
// programs wait for first.
const CONFIG: &str = r#"first=[[0,"count","start"]]"#;

#[test]
fn artifact_programs_run_unmodified() {
    let Some(chipyard) = std::env::var_os(CHIPYARD_ENV).map(PathBuf::from) else {
        eprintln!("skipped: set {CHIPYARD_ENV} to a checkout of l-nic/chipyard (tag nanoPU-artifact-v1.0)");
        return;
    };
    let (out, report) = build(&chipyard);
    // Only the programs that need a file the tag does not hold fail
    // (docs/artifact-programs.md).
    for line in report.lines().filter(|l| l.starts_with("FAILED")) {
        let known = ["lnic-int-collector"];
        assert!(
            known
                .iter()
                .any(|k| line.starts_with(&format!("FAILED {k}"))),
            "{line}"
        );
    }

    // Echo of any size the unrolled copy handles.
    assert_served(
        &out,
        "lnic-loopback-latency",
        100,
        &["--msg-bytes", "64", "--expect", "echo"],
    );
    // Echo after a stall of as many nops as the first word says; 4 cores.
    assert_served(
        &out,
        "lnic-multi-core",
        100,
        &[
            "--msg-bytes",
            "64",
            "--expect",
            "echo",
            "--start-ns",
            "20000",
        ],
    );
    // CONFIG, then DATA `[1, payload (16 B), timestamp]` answered with the
    // payload copied and the start time in place of the timestamp.
    let app = format!(
        r#"script:{CONFIG},request=[1,"counter",0,"timestamp"],reply=[1,"counter",0,"start"],match_word=1"#
    );
    assert_served(&out, "lnic-loopback-throughput", 100, &["--app", &app]);
    // The same with every payload word incremented.
    let app = format!(r#"script:{CONFIG},request=[1,7,8,"timestamp"],reply=[1,8,9,"start"]"#);
    assert_served(&out, "lnic-stream-throughput", 100, &["--app", &app]);
    // No CONFIG: `[payload, timestamp]`, payload incremented, timestamp echoed.
    let app = r#"script:request=[5,9,"timestamp"],reply=[6,10,"echo"]"#;
    assert_served(
        &out,
        "lnic-stream-gpr",
        100,
        &["--app", app, "--start-ns", "20000"],
    );
    // CONFIG, then `[1, service cycles, payload, timestamp]`: spins that long.
    let app = format!(
        r#"script:{CONFIG},request=[1,"service","counter",0,"timestamp"],reply=[1,"any","counter",0,"start"],match_word=2,service={{mean_ns=500.0}}"#
    );
    assert_served(
        &out,
        "lnic-service-time",
        100,
        &["--app", &app, "--start-ns", "20000"],
    );
    // CONFIG, then `[1, n, n words, timestamp]` answered with
    // `[2, sum of word * weights[word] (= word^2), cache misses, start]`.
    let app =
        format!(r#"script:{CONFIG},request=[1,2,3,4,"timestamp"],reply=[2,25,"any","start"]"#);
    for program in ["lnic-dot-product-opt", "lnic-dot-product-naive"] {
        assert_served(&out, program, 50, &["--app", &app]);
    }
    // The check bites: a wrong expected sum fails the run.
    let wrong =
        format!(r#"script:{CONFIG},request=[1,2,3,4,"timestamp"],reply=[2,26,"any","start"]"#);
    let (code, text) = run(
        &out,
        "lnic-dot-product-opt",
        &["--count", "5", "--app", &wrong],
    );
    assert_eq!(
        code,
        Some(1),
        "a wrong dot product must fail the run:\n{text}"
    );
    // CONFIG `[0, edges, start]`, WEIGHT `[1, index, weight, _]` (not
    // answered), then per edge DATA `[2, index, value, timestamp]`; after the
    // last edge `[2, 0, sum of weight * value, start]`, and a CONFIG again
    // (which the scripted client sends only once: one inference per run).
    let app = r#"script:first=[[0,1,"start"],[1,3,5,0]],request=[2,3,7,"timestamp"],reply=[2,0,35,"start"]"#;
    assert_served(
        &out,
        "lnic-nn-inference-gpr",
        1,
        &["--app", app, "--start-ns", "20000"],
    );
    // Its RX test: `[0, n, start]`, then n 1,024 B DATA messages `[2, ...]`,
    // answered by one DONE `[3, start]`.
    let data = format!("[2{}]", ",0".repeat(127));
    let app =
        format!(r#"script:first=[[0,3,"start"],{data},{data}],request={data},reply=[3,"start"]"#);
    assert_served(
        &out,
        "lnic-throughput-gpr",
        1,
        &["--app", &app, "--start-ns", "20000"],
    );
    // A fixed sequence of eight 520 B messages, each answered with some of
    // its first words moved to the end, then exit(0).
    assert_served(
        &out,
        "lnic-cache-test",
        8,
        &[
            "--msg-bytes",
            "520",
            "--expect",
            "any",
            "--start-ns",
            "20000",
        ],
    );
    // The prototype's evaluation program (also run by `nanopu reproduce`).
    assert_served(
        &out,
        "lnic-evaluation",
        200,
        &[
            "--pattern",
            "lnic-eval",
            "--expect",
            "lnic-eval",
            "--msg-bytes",
            "16",
            "--rate-mrps",
            "0.5",
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
            "--",
            "00:26:E1:00:00:00",
            "10.0.0.2",
            "DIF_PRIORITY_LNIC_DRIVEN",
            "10",
            "5",
        ],
    );
    // The prototype's MICA (C++, built with scripts/lnic-shims) as the
    // switch model's MICA load type drives it: GETs and SETs alternate,
    // every value checked.
    assert_served(
        &out,
        "lnic-multi-core-mica",
        500,
        &[
            "--app",
            "lnic-mica",
            // Inserting the 10,000 keys takes about 25 simulated ms.
            "--max-sim-ms",
            "100",
            "--rate-mrps",
            "0.5",
        ]
        .iter()
        .chain(SERVER_STARTS)
        .copied()
        .collect::<Vec<_>>(),
    );
    // The prototype's HD search (software/euclidean-dist) as the switch
    // model's EUCLIDEAN_DIST load type drives it: every closest id checked.
    assert_served(
        &out,
        "lnic-euclidean-dist",
        500,
        &["--app", "lnic-hdsearch", "--rate-mrps", "0.2"]
            .iter()
            .chain(SERVER_STARTS)
            .copied()
            .collect::<Vec<_>>(),
    );
    let _ = std::fs::remove_dir_all(&out);
}
