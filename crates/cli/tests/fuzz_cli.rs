//! Fuzzing the command line: random key/value mutations of the example
//! configurations (`nanopu net`) and of `nanopu config`'s output
//! (`--config`), mutations of the nodes and load generators of a network
//! (`[[programs]]` and `[[clients]]`: their keys, load tables, program
//! files, copies of entries), and random argument lists from the real
//! option set. The contract, whatever the input: exit 0, 1, 3 or 125,
//! never a panic or a backtrace, exactly one `error:` line with 125, and no
//! hang; networks of a few nodes and load generators also stay under
//! 500 MB of memory.
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
    run_checked_within(args, None)
}

/// The resident memory of process `pid` in bytes (`VmRSS`), if it runs.
fn rss_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// [`run_checked`], and with `max_rss` the run must stay within that much
/// resident memory (looked at as it runs; over it, the run is stopped).
fn run_checked_within(args: &[String], max_rss: Option<u64>) -> Result<(), TestCaseError> {
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
        if let (Some(max), Some(rss)) = (max_rss, rss_bytes(child.id())) {
            if rss > max {
                let _ = child.kill();
                let _ = child.wait();
                return Err(TestCaseError::fail(format!(
                    "nanopu {args:?} grew to {} MB, more than {} MB",
                    rss >> 20,
                    max >> 20
                )));
            }
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
    fn mutated_program_and_client_configs(
        base in 0usize..4,
        ms in prop::collection::vec(host_mutation(), 1..4),
    ) {
        let text = mutate_hosts(&host_bases()[base], &ms);
        let cfg = write("hosts.toml", &text);
        // A run of a few nodes and load generators needs little memory:
        // whatever the configuration, it stays small or is refused.
        run_checked_within(
            &["net".into(), cfg, "--until-us".into(), "20".into(), "--no-console".into()],
            Some(SMALL_RUN_BYTES),
        )?;
    }

    #[test]
    fn random_argument_lists(cmd in 0usize..4, opts in prop::collection::vec((any::<prop::sample::Index>(), prop::sample::select(VALUES)), 0..6), extra in any::<prop::sample::Index>()) {
        let args = argv(cmd, &opts, extra);
        run_checked(&args)?;
    }
}

/// Most a run of the `[[programs]]`/`[[clients]]` fuzzer may hold: its
/// bases are a handful of small nodes and load generators.
const SMALL_RUN_BYTES: u64 = 500 << 20;

/// Configurations of nodes and load generators: example networks with
/// both, and a plain one (one node, two default load generators).
fn host_bases() -> Vec<String> {
    let sdk = repo().join("sdk/build").display().to_string();
    let mut bases: Vec<String> = ["mica-cluster", "raft", "rpc-loopback"]
        .iter()
        .map(|n| {
            std::fs::read_to_string(repo().join(format!("configs/{n}.toml")))
                .unwrap()
                .replace("../sdk/build", &sdk)
        })
        .collect();
    bases.push(format!(
        "[network.topology]\nkind = \"single-switch\"\nhosts = 4\n[nic.transport]\nprotocol = \"ndp\"\n\
         [[programs]]\nhosts = \"0\"\nprogram = \"{sdk}/loopback.elf\"\nargs = [\"x\"]\n\
         [[clients]]\nhosts = \"1-2\"\nserver = 0\n[clients.load]\ncount = 50\nwarmup = 5\n"
    ));
    bases
}

/// Program files a `program` key is set to: real ones, and what the loader
/// must refuse at once (devices, FIFOs, directories, huge, missing, text).
fn program_values() -> Vec<String> {
    let d = dir();
    let fifo = d.join("fifo.elf");
    if !fifo.exists() {
        let _ = Command::new("mkfifo").arg(&fifo).status();
    }
    let big = d.join("big.elf");
    if !big.exists() {
        // Sparse: no disk is used, and none of it may be read.
        let f = std::fs::File::create(&big).unwrap();
        f.set_len(300 << 20).unwrap();
    }
    let text = d.join("text.elf");
    std::fs::write(&text, "not a program").unwrap();
    [
        elf("hello"),
        elf("loopback"),
        elf("idle_wait"),
        "/dev/zero".into(),
        "/dev/null".into(),
        fifo.display().to_string(),
        big.display().to_string(),
        text.display().to_string(),
        d.display().to_string(),
        "/nonexistent/x.elf".into(),
    ]
    .into_iter()
    .map(|p| format!("{p:?}"))
    .collect()
}

/// Keys of a `[clients.load]` table with values of their type (edges and
/// nonsense among them).
const LOAD_KEYS: &[(&str, &[&str])] = &[
    ("count", &["1", "2", "50", "0", "4294967295"]),
    ("warmup", &["0", "1", "49", "1000"]),
    (
        "message_bytes",
        &["8", "16", "64", "0", "4", "2000", "65535"],
    ),
    ("context", &["0", "1", "65535"]),
    ("extra_contexts", &["[]", "[1, 2]", "[0, 0, 0]"]),
    ("timeout_ns", &["1", "1000", "0", "9223372036854775807"]),
    ("seed", &["0", "18446744073709551615"]),
    (
        "pattern",
        &[
            "\"zeros\"",
            "\"random\"",
            "\"service\"",
            "\"dot-product\"",
            "\"lnic-eval\"",
        ],
    ),
    (
        "expect",
        &[
            "\"any\"",
            "\"increment\"",
            "\"dot-product\"",
            "\"lnic-eval\"",
        ],
    ),
    (
        "mode",
        &[
            "{ closed = { window = 0 } }",
            "{ closed = { window = 64 } }",
            "{ closed = { window = 65536 } }",
            "{ open = { rate_mrps = 0.5 } }",
            "{ open = { rate_mrps = 1e9 } }",
            "{ open = { rate_mrps = -1.0 } }",
            "{ open-ticked = { rate_mrps = 1.0, tick_ns = 0.0 } }",
        ],
    ),
    (
        "start",
        &[
            "\"boot\"",
            "{ at-ns = 0 }",
            "{ start-messages = 1 }",
            "{ start-messages = 4294967295 }",
        ],
    ),
    (
        "service",
        &[
            "{ fixed = { ns = 100.0 } }",
            "{ fixed = { ns = -1.0 } }",
            "{ bimodal = { short_ns = 1.0, long_ns = 2.0, long_fraction = 2.0 } }",
        ],
    ),
    (
        "app",
        &[
            "{ kind = \"mica\" }",
            "{ kind = \"setalg\" }",
            "{ kind = \"mica\", pairs = 4294967295 }",
            "{ kind = \"bogus\" }",
        ],
    ),
    (
        "link_propagation_ps",
        &["0", "1000000", "9223372036854775807"],
    ),
];
/// Keys of `[[programs]]` and `[[clients]]` entries (`program` is set to
/// files of [`program_values`]).
const HOST_KEYS: &[(&str, &[&str])] = &[
    (
        "hosts",
        &[
            "\"0\"",
            "\"1\"",
            "\"2\"",
            "\"3\"",
            "\"1-2\"",
            "\"0,2\"",
            "\"3-1\"",
            "\"1-40000\"",
            "\"\"",
        ],
    ),
    ("server", &["0", "1", "2", "3", "70000"]),
    ("servers", &["[]", "[1]", "[0, 1]", "[5]"]),
    ("nic", &["\"icenic\"", "\"nanopu\"", "\"rdma\"", "\"x\""]),
    (
        "args",
        &["[]", "[\"{ip}\", \"{host}\"]", "[\"100000\"]", "[\"\"]"],
    ),
];

#[derive(Clone, Debug)]
enum HostMutation {
    /// Any mutation of [`mutate`].
    Any(Mutation),
    /// Set a `[[programs]]`/`[[clients]]` key in the `i`th such entry (or a
    /// load key in its `[clients.load]`), added if missing, to a value of
    /// its type or (`any`) of any type.
    Key(prop::sample::Index, &'static str, prop::sample::Index, bool),
    /// Point the `i`th `program` key at one of [`program_values`].
    Program(prop::sample::Index, prop::sample::Index),
    /// Append a copy of the `i`th entry (or a new load generator).
    Copy(prop::sample::Index),
    /// Make the network this many hosts, every one past the first entries'
    /// a load generator: a few of them run, tens of thousands are refused
    /// by the memory estimate.
    Scale(&'static str),
}

fn host_mutation() -> impl Strategy<Value = HostMutation> {
    let idx = any::<prop::sample::Index>;
    let keys: Vec<&'static str> = HOST_KEYS.iter().chain(LOAD_KEYS).map(|(k, _)| *k).collect();
    prop_oneof![
        1 => mutation().prop_map(HostMutation::Any),
        6 => (idx(), prop::sample::select(keys), idx(), prop::bool::weighted(0.2))
            .prop_map(|(i, k, v, any)| HostMutation::Key(i, k, v, any)),
        2 => (idx(), idx()).prop_map(|(i, p)| HostMutation::Program(i, p)),
        1 => idx().prop_map(HostMutation::Copy),
        1 => prop::sample::select(&["100", "65536"][..]).prop_map(HostMutation::Scale),
    ]
}

/// The line ranges of the `[[programs]]` and `[[clients]]` entries (each
/// with its sub-tables), in order.
fn entries(lines: &[String]) -> Vec<(usize, usize)> {
    let starts: Vec<usize> = (0..lines.len())
        .filter(|&l| lines[l].starts_with("[[programs]]") || lines[l].starts_with("[[clients]]"))
        .collect();
    starts
        .iter()
        .map(|&s| {
            let end = (s + 1..lines.len())
                .find(|&l| {
                    let t = lines[l].trim_start();
                    t.starts_with('[') && !t.starts_with("[clients.")
                })
                .unwrap_or(lines.len());
            (s, end)
        })
        .collect()
}

fn mutate_hosts(text: &str, ms: &[HostMutation]) -> String {
    let mut text = text.to_string();
    let programs = program_values();
    for m in ms {
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let found = entries(&lines);
        match m {
            HostMutation::Any(m) => {
                text = mutate(&text, std::slice::from_ref(m));
                continue;
            }
            HostMutation::Scale(n) => {
                let hosts = (0..lines.len()).find(|&l| lines[l].starts_with("hosts = "));
                let Some(l) =
                    (0..lines.len()).find(|&l| lines[l].starts_with("[network.topology]"))
                else {
                    continue;
                };
                if let Some(h) = hosts.filter(|&h| h > l) {
                    lines[h] = format!("hosts = {n}");
                }
                let last: usize = n.parse().unwrap();
                lines.extend([
                    "[[clients]]".into(),
                    format!("hosts = \"16-{}\"", last - 1),
                    "server = 0".into(),
                ]);
            }
            HostMutation::Copy(i) => {
                let block = match found.get(i.index(found.len().max(1))) {
                    Some(&(s, e)) => lines[s..e].to_vec(),
                    None => vec![
                        "[[clients]]".into(),
                        "hosts = \"1\"".into(),
                        "server = 0".into(),
                    ],
                };
                lines.extend(block);
            }
            HostMutation::Program(i, p) => {
                let keyed: Vec<usize> = (0..lines.len())
                    .filter(|&l| lines[l].starts_with("program = "))
                    .collect();
                if let Some(&l) = keyed.get(i.index(keyed.len().max(1))) {
                    lines[l] = format!("program = {}", programs[p.index(programs.len())]);
                }
            }
            HostMutation::Key(i, key, v, any) => {
                let is_load = LOAD_KEYS.iter().any(|(k, _)| k == key);
                // Load keys go to load generators, `server(s)` too.
                let client_key = is_load || key.starts_with("server");
                let found: Vec<(usize, usize)> = found
                    .into_iter()
                    .filter(|&(s, _)| !client_key || lines[s].starts_with("[[clients]]"))
                    .collect();
                let Some(&(s, e)) = found.get(i.index(found.len().max(1))) else {
                    continue;
                };
                let typed = HOST_KEYS
                    .iter()
                    .chain(LOAD_KEYS)
                    .find(|(k, _)| k == key)
                    .map_or(VALUES, |(_, v)| *v);
                let values = if *any { VALUES } else { typed };
                let value = values[v.index(values.len())];
                let table_start = if is_load {
                    (s..e).find(|&l| lines[l].starts_with("[clients.load]"))
                } else {
                    Some(s)
                };
                let table_end = table_start.map(|t| {
                    (t + 1..e)
                        .find(|&l| lines[l].trim_start().starts_with('['))
                        .unwrap_or(e)
                });
                let line = format!("{key} = {value}");
                match (table_start, table_end) {
                    (Some(t), Some(te)) => {
                        match (t + 1..te).find(|&l| lines[l].starts_with(&format!("{key} ="))) {
                            Some(l) => lines[l] = line,
                            None => lines.insert(t + 1, line),
                        }
                    }
                    // A load key in an entry without its table: add the table.
                    _ if lines[s].starts_with("[[clients]]") => {
                        lines.insert(e, line);
                        lines.insert(e, "[clients.load]".into());
                    }
                    _ => lines.insert(s + 1, line),
                }
            }
        }
        text = lines.join("\n") + "\n";
    }
    text
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
