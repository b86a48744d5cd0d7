//! Fuzzing the command line: random key/value mutations of the example
//! configurations (`nanopu net`) and of `nanopu config`'s output
//! (`--config`), and random argument lists from the real option set. The
//! contract, whatever the input: exit 0, 1, 3 or 125, never a panic or a
//! backtrace, exactly one `error:` line with 125, and no hang.
//!
//! A short pass runs in `cargo test`; a long one:
//! `PROPTEST_CASES=2000 cargo test --release -p nanopu --test fuzz_cli`.

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn elf(name: &str) -> String {
    repo()
        .join("sdk/build")
        .join(format!("{name}.elf"))
        .display()
        .to_string()
}

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("nanopu-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Cases per property: `PROPTEST_CASES`, else a short pass.
fn cases(short: u32) -> ProptestConfig {
    ProptestConfig {
        cases: nanopu_testkit::proptest_cases(short),
        // Each case runs the simulator; shrinking would rerun it many times.
        max_shrink_iters: 20,
        ..ProptestConfig::default()
    }
}

/// Longest a case may take before it counts as a hang.
const HANG: Duration = Duration::from_secs(60);

/// Runs `nanopu args` and checks the contract; stdout and stderr go to
/// files (a pipe could fill and block the child).
fn run_checked(args: &[String]) -> Result<(), TestCaseError> {
    // Tests run in parallel: files of their own.
    static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = dir();
    let (out_path, err_path) = (d.join(format!("stdout{n}")), d.join(format!("stderr{n}")));
    let mut child = Command::new(env!("CARGO_BIN_EXE_nanopu"))
        .args(args)
        .current_dir(&d)
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("nanopu starts");
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > HANG {
            let _ = child.kill();
            let _ = child.wait();
            return Err(TestCaseError::fail(format!(
                "nanopu {args:?} ran for more than {HANG:?}"
            )));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let err = std::fs::read_to_string(&err_path).unwrap_or_default();
    let _ = std::fs::remove_file(&out_path);
    let _ = std::fs::remove_file(&err_path);
    let code = status.code();
    let what = format!("nanopu {args:?}: exit {code:?}\n{err}");
    prop_assert!(
        !err.contains("panicked") && !err.contains("stack backtrace"),
        "panic: {}",
        what
    );
    prop_assert!(
        matches!(code, Some(0 | 1 | 3 | 125)),
        "unexpected exit status: {}",
        what
    );
    let errors = err.lines().filter(|l| l.starts_with("error:")).count();
    if code == Some(125) {
        prop_assert_eq!(errors, 1, "{}", what);
    } else {
        prop_assert_eq!(errors, 0, "{}", what);
    }
    Ok(())
}

/// Values a key or an option is set to: edge cases of every type.
const VALUES: &[&str] = &[
    "0",
    "1",
    "2",
    "7",
    "64",
    "1000",
    "65535",
    "65536",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "-1",
    "0.5",
    "1.5",
    "-0.5",
    "1e300",
    "inf",
    "nan",
    "true",
    "\"\"",
    "\"x\"",
    "\"0-3\"",
    "\"0-65535\"",
    "\"ndp\"",
    "\"leaf-spine\"",
    "[]",
    "[0, 1]",
    "{}",
];

#[derive(Clone, Debug)]
enum Mutation {
    /// Set the value of the `i`th `key = value` line.
    SetValue(prop::sample::Index, &'static str),
    /// Delete a line.
    Delete(prop::sample::Index),
    /// Duplicate a line.
    Duplicate(prop::sample::Index),
    /// Add a key nobody knows after a line.
    Unknown(prop::sample::Index),
    /// Add a table header after a line.
    Header(prop::sample::Index, &'static str),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let idx = any::<prop::sample::Index>;
    prop_oneof![
        6 => (idx(), prop::sample::select(VALUES)).prop_map(|(i, v)| Mutation::SetValue(i, v)),
        1 => idx().prop_map(Mutation::Delete),
        1 => idx().prop_map(Mutation::Duplicate),
        1 => idx().prop_map(Mutation::Unknown),
        1 => (idx(), prop::sample::select(&["[network]", "[nic.transport]", "[node.core.l1d]", "[[workload.messages]]", "[network.topology]", "[nic]", "[load]", "[[clients]]"][..]))
            .prop_map(|(i, h)| Mutation::Header(i, h)),
    ]
}

fn mutate(text: &str, ms: &[Mutation]) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for m in ms {
        if lines.is_empty() {
            break;
        }
        match m {
            Mutation::SetValue(i, v) => {
                let keyed: Vec<usize> = (0..lines.len())
                    .filter(|&l| {
                        lines[l].contains(" = ") && !lines[l].trim_start().starts_with('#')
                    })
                    .collect();
                if keyed.is_empty() {
                    continue;
                }
                let l = keyed[i.index(keyed.len())];
                let key = lines[l].split(" = ").next().unwrap().to_string();
                lines[l] = format!("{key} = {v}");
            }
            Mutation::Delete(i) => {
                let l = i.index(lines.len());
                lines.remove(l);
            }
            Mutation::Duplicate(i) => {
                let l = i.index(lines.len());
                lines.insert(l, lines[l].clone());
            }
            Mutation::Unknown(i) => {
                let l = i.index(lines.len());
                lines.insert(l + 1, "no_such_key = 1".into());
            }
            Mutation::Header(i, h) => {
                let l = i.index(lines.len());
                lines.insert(l + 1, h.to_string());
            }
        }
    }
    lines.join("\n") + "\n"
}

/// The example network configurations, with programs' paths made absolute.
fn net_bases() -> Vec<String> {
    let sdk = repo().join("sdk/build").display().to_string();
    ["incast", "leaf-spine-64", "rpc-loopback", "incast-80-nodes"]
        .iter()
        .map(|n| {
            std::fs::read_to_string(repo().join(format!("configs/{n}.toml")))
                .unwrap()
                .replace("../sdk/build", &sdk)
        })
        .collect()
}

fn write(name: &str, text: &str) -> String {
    let p = dir().join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

proptest! {
    #![proptest_config(cases(24))]

    #[test]
    fn mutated_network_configs(base in 0usize..4, ms in prop::collection::vec(mutation(), 1..4)) {
        let text = mutate(&net_bases()[base], &ms);
        let cfg = write("net.toml", &text);
        run_checked(&["net".into(), cfg, "--until-us".into(), "20".into()])?;
    }

    #[test]
    fn mutated_node_configs(ms in prop::collection::vec(mutation(), 1..4)) {
        let out = Command::new(env!("CARGO_BIN_EXE_nanopu")).arg("config").output().unwrap();
        let text = mutate(&String::from_utf8_lossy(&out.stdout), &ms);
        let cfg = write("node.toml", &text);
        run_checked(&["config".into(), "--config".into(), cfg.clone()])?;
        run_checked(&["run".into(), elf("hello"), "--config".into(), cfg, "--max-cycles".into(), "2000000".into()])?;
    }

    #[test]
    fn random_argument_lists(cmd in 0usize..4, opts in prop::collection::vec((any::<prop::sample::Index>(), prop::sample::select(VALUES)), 0..6), extra in any::<prop::sample::Index>()) {
        let args = argv(cmd, &opts, extra);
        run_checked(&args)?;
    }
}

/// Options of each command, as clap knows them (flags take no value).
const RUN_OPTIONS: &[&str] = &[
    "--cores",
    "--max-cycles",
    "--stats-json",
    "--config",
    "--load",
    "--nic",
    "--pcap",
    "--msg-bytes",
    "--count",
    "--warmup",
    "--window",
    "--rate-mrps",
    "--context",
    "--contexts",
    "--pattern",
    "--expect",
    "--start-ns",
    "--seed",
    "--service",
    "--timeout-ns",
    "--bogus",
];
const NET_OPTIONS: &[&str] = &[
    "--pcap",
    "--pcap-host",
    "--until-us",
    "--json",
    "--csv",
    "--bogus",
];
const CONFIG_OPTIONS: &[&str] = &["--config", "--bogus"];
const EXPERIMENT_OPTIONS: &[&str] = &[
    "--scale",
    "--threads",
    "--seed",
    "--config",
    "--out",
    "--bogus",
];
const FLAGS: &[&str] = &["--load", "--bogus"];
/// Values of options that name a file or a choice.
const CHOICES: &[(&str, &[&str])] = &[
    ("--nic", &["nanopu", "icenic", "traditional", "x"]),
    (
        "--pattern",
        &["counter", "random", "zeros", "dot-product", "service", "x"],
    ),
    (
        "--expect",
        &["echo", "increment", "any", "dot-product", "x"],
    ),
    (
        "--service",
        &[
            "fixed:10",
            "exp:5",
            "bimodal:1:2:0.5",
            "bimodal:1:2:5",
            "exp:inf",
            "x:1",
            "fixed",
        ],
    ),
    ("--scale", &["quick", "full", "x"]),
    ("--contexts", &["0,1", "0,0,0", "70000", ","]),
];

fn argv(
    cmd: usize,
    opts: &[(prop::sample::Index, &str)],
    extra: prop::sample::Index,
) -> Vec<String> {
    let d = dir();
    let file = |n: &str| d.join(n).display().to_string();
    let good_cfg = write("good.toml", "[network.topology]\nhosts = 3\n[nic.transport]\nprotocol = \"ndp\"\n[[workload.messages]]\nfrom = 0\nto = 2\nlen = 64\nat_ns = 10\n");
    let (mut args, options): (Vec<String>, &[&str]) = match cmd {
        0 => {
            let program = ["hello", "loopback", "idle_wait"][extra.index(3)];
            (vec!["run".into(), elf(program)], RUN_OPTIONS)
        }
        1 => (vec!["net".into(), good_cfg.clone()], NET_OPTIONS),
        2 => (vec!["config".into()], CONFIG_OPTIONS),
        _ => (vec!["experiment".into()], EXPERIMENT_OPTIONS),
    };
    for (i, v) in opts {
        let o = options[i.index(options.len())];
        args.push(o.into());
        if FLAGS.contains(&o) {
            continue;
        }
        let value = match o {
            "--config" => {
                if v.len() % 2 == 0 {
                    good_cfg.clone()
                } else {
                    write("bad.toml", v)
                }
            }
            "--stats-json" | "--pcap" | "--json" | "--csv" | "--out" => {
                file(&format!("out{}", v.len()))
            }
            _ => match CHOICES.iter().find(|(name, _)| *name == o) {
                Some((_, choices)) => choices[v.len() % choices.len()].to_string(),
                None => v.trim_matches('"').to_string(),
            },
        };
        args.push(value);
    }
    // Bound the simulated time: the fuzzer looks for bad handling, not
    // for long runs.
    match cmd {
        0 => {
            if args.iter().any(|a| a == "--load") {
                args.push("--max-sim-ms".into());
                args.push(["1", "0", "18446745", "-1"][extra.index(4)].into());
            }
            if !args.iter().any(|a| a == "--max-cycles") {
                args.push("--max-cycles".into());
                args.push("3000000".into());
            }
        }
        3 => {
            // Only listing or refusing: never a real experiment.
            args.push("--scale".into());
            args.push("quick".into());
            if extra.index(2) == 0 {
                args.insert(1, "no-such-experiment".into());
            }
        }
        _ => {}
    }
    args
}

#[test]
fn the_guest_programs_exist() {
    for p in ["hello", "loopback", "idle_wait"] {
        assert!(Path::new(&elf(p)).exists(), "run `make -C sdk` first");
    }
}
