//! Bad inputs a new user could give, each with the exact exit status and a
//! piece of the one `error:` line (or of the last line, for runs that end
//! incomplete). Never a panic, a backtrace or a second error line.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn sdk(name: &str) -> String {
    nanopu_testkit::program(name).display().to_string()
}

fn tmp_dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("nanopu-bad-inputs-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// What a case must end with.
enum Expect {
    /// Exit 125 and exactly one `error:` line on stderr containing this.
    Error(&'static str),
    /// This exit status and a last line (stdout or stderr) containing this.
    LastLine(i32, &'static str),
    /// Exit 0 and stdout containing this.
    Works(&'static str),
}

struct Case {
    /// Arguments; `CFG` is replaced by the path of the config file,
    /// `@name` by `sdk/build/name.elf`.
    args: &'static str,
    /// The config file's contents (`CFG`), if any.
    file: Option<&'static str>,
    expect: Expect,
}

const fn case(args: &'static str, file: Option<&'static str>, expect: Expect) -> Case {
    Case { args, file, expect }
}

use Expect::{Error, LastLine, Works};

const NDP2: &str = "[nic.transport]\nprotocol = \"ndp\"\n";

fn cases() -> Vec<Case> {
    vec![
        // 1. Rates, sizes and counts, checked before anything is built.
        case("net CFG", Some("[network.link]\ngbps = 0\n[nic.transport]\nprotocol = \"ndp\"\n"), Error("network.link.gbps = 0")),
        case("net CFG", Some("[network.link]\ngbps = 1099511627776\n[nic.transport]\nprotocol = \"ndp\"\n"), Error("network.link.gbps")),
        case("config --config CFG", Some("[network.link]\ngbps = 0\n"), Error("network.link.gbps = 0")),
        case("run @loopback --load --config CFG", Some("[network.link]\ngbps = 0\n"), Error("network.link.gbps = 0")),
        case("config --config CFG", Some("[system.nic]\nlink_gbps = 0\n"), Error("the [system] table is gone")),
        case("config --config CFG", Some("[nic]\nmtu_payload_bytes = 7\n"), Error("mtu_payload_bytes = 7")),
        case("config --config CFG", Some("[nic.transport]\nmax_tx_messages = 0\n"), Error("transport.max_tx_messages = 0")),
        case("config --config CFG", Some("[nic.transport]\nbuffer_classes = []\n"), Error("transport.buffer_classes")),
        case("config --config CFG", Some("[nic]\nkind = \"smartnic\"\n"), Error("nic.kind")),
        case("net CFG", Some("[network]\ntopology = { kind = \"single-switch\", hosts = 2 }\n[nic.transport]\nprotocol = \"ndp\"\n[[clients]]\nhosts = \"1\"\nserver = 0\n"), Error("server = 0: not a host that runs a program")),
        case("config --config CFG", Some("[node.netif]\nrx_buffer_bytes_per_core = 0\n"), Error("node.netif.rx_buffer_bytes_per_core = 0")),
        case("config --config CFG", Some("[node]\ncores = 0\n"), Error("cores = 0")),
        case("net CFG", Some("[network.topology]\nhosts = 0\n"), Error("topology.hosts = 0")),
        case("net CFG", Some("[network.switch]\npriority_bands = 0\n[nic.transport]\nprotocol = \"ndp\"\n"), Error("network.switch.priority_bands = 0")),
        case("net CFG", Some("[network.faults]\nloss = 2.0\n[nic.transport]\nprotocol = \"ndp\"\n"), Error("network.faults.loss = 2")),
        case("net CFG", Some("[network.topology]\nkind = \"leaf-spine\"\nspines = 0\n"), Error("topology.spines = 0")),
        case("net CFG", Some("[nic]\njbsq_depth = 0\n"), Error("nic.jbsq_depth = 0")),
        case("net CFG", Some("[nic.transport]\nprotocol = \"none\"\n"), Error("protocol = none")),
        case("run @loopback --load --window 0", None, Error("--window 0")),
        case("run @loopback --load --window 4294967295", None, Error("--window 4294967295")),
        case("run @loopback --load --count 0", None, Error("--count 0")),
        case("bench --repeat 0", None, Error("--repeat")),
        case("run @loopback --load --msg-bytes 4", None, Error("--msg-bytes 4")),
        case("run @loopback --load --msg-bytes 4000", None, Error("nic.max_message_bytes")),
        case("run @loopback --load --rate-mrps 400", None, Error("--rate-mrps 400")),
        case("run @loopback --load --rate-mrps 0", None, Error("--rate-mrps 0")),
        case("run @loopback --load --rate-mrps inf", None, Error("--rate-mrps inf")),
        case("run @loopback --load --rate-mrps NaN", None, Error("--rate-mrps NaN")),
        case("run @loopback --load --timeout-ns 0", None, Error("--timeout-ns 0")),
        case("run @loopback --load --pattern bogus", None, Error("--pattern bogus")),
        case("run @loopback --load --expect dot-product", None, Error("dot-product requests need a length of 16 + 16n bytes")),
        case("run @loopback --load --expect bogus", None, Error("--expect bogus")),
        case("run @loopback --load --nic bogus", None, Error("--nic bogus: unknown NIC design \"bogus\": the designs are nanopu, icenic (or traditional), rdma, nebula")),
        case("run @loopback --cores 0", None, Error("cores = 0")),
        case("run @loopback --load --count 5 --warmup 5", None, Error("--warmup 5")),
        case("run @loopback --rate-mrps 5", None, Error("required arguments were not provided: --load")),
        case("run @loopback --pcap x.pcap", None, Error("required arguments were not provided: --load")),
        case("net CFG --pcap-host 1", Some(NDP2), Error("--pcap")),
        case("run @loopback --cores 100000", None, Error("cores = 100000")),
        // 2. Time never wraps.
        case("run @loopback --load --max-sim-ms 18446745", None, Error("--max-sim-ms 18446745")),
        case("run @loopback --load --start-ns 18446744073709551615", None, Error("--start-ns 18446744073709551615")),
        case("run @loopback --load --timeout-ns 18446744073709551615", None, Error("--timeout-ns 18446744073709551615")),
        case("net CFG --until-us 18446744073709551615", Some(NDP2), Error("--until-us 18446744073709551615")),
        case("net CFG", Some("[nic.transport]\nprotocol = \"ndp\"\n[[workload.messages]]\nfrom = 0\nto = 1\nlen = 64\nat_ns = 9223372036854775807\n"), Error("workload.messages[0].at_ns")),
        case("net CFG", Some("[network.link]\nhost_propagation_ps = 9223372036854775807\n[nic.transport]\nprotocol = \"ndp\"\n"), Error("network.link.host_propagation_ps")),
        case("net CFG", Some("[network.switch]\nforwarding_latency_ps = 9223372036854775807\n[nic.transport]\nprotocol = \"ndp\"\n"), Error("network.switch.forwarding_latency_ps")),
        case("net CFG", Some("[nic]\nmac_serial_rx_ps = 9223372036854775807\n[nic.transport]\nprotocol = \"ndp\"\n"), Error("nic.mac_serial_rx_ps")),
        case("net CFG", Some("[nic.transport]\nprotocol = \"ndp\"\nrtx_timeout_ns = 9223372036854775807\n"), Error("transport.rtx_timeout_ns")),
        case("net CFG", Some("[nic.transport]\nprotocol = \"ndp\"\nmax_timeouts = 4294967295\nrtx_timeout_ns = 100000000\n"), Error("transport.max_timeouts")),
        case("net CFG", Some("[nic.transport]\nprotocol = \"ndp\"\n[[workload.random]]\nhosts = \"0-1\"\ncount = 2\nmin_bytes = 8\nmax_bytes = 8\nmean_interval_ns = inf\n"), Error("random[0].mean_interval_ns")),
        case("net CFG", Some("[nic.transport]\nprotocol = \"ndp\"\n[[workload.random]]\nhosts = \"0-1\"\ncount = 2\nmin_bytes = 8\nmax_bytes = 8\nmean_interval_ns = nan\n"), Error("random[0].mean_interval_ns")),
        case("net CFG", Some("[nic.transport]\nprotocol = \"ndp\"\n[[workload.random]]\nhosts = \"0-1\"\ncount = 1000\nmin_bytes = 8\nmax_bytes = 8\nmean_interval_ns = 1e300\n"), Error("simulated time base")),
        case("net CFG", Some("[nic.transport]\nprotocol = \"ndp\"\n[[workload.incast]]\nsenders = \"0\"\nreceiver = 1\nsizes = [64]\ncount = 3\ninterval_ns = 9223372036854775807\n"), Error("incast[0].at_ns")),
        case("run @loopback --load --pattern service --msg-bytes 16 --service exp:inf", None, Error("--service")),
        case("run @loopback --load --pattern service --msg-bytes 16 --service fixed:-1", None, Error("--service fixed:-1")),
        // 3. Bounded memory.
        case("net CFG", Some("[network.topology]\nkind = \"single-switch\"\nhosts = 65536\n[nic.transport]\nprotocol = \"ndp\"\n[[workload.random]]\nhosts = \"0-65535\"\ncount = 1\nmin_bytes = 8\nmax_bytes = 8\nmean_interval_ns = 10\n"), Error("needs about")),
        case("net CFG", Some("[network.topology]\nkind = \"single-switch\"\nhosts = 65536\n[nic.transport]\nprotocol = \"ndp\"\n[[workload.random]]\nhosts = \"0-65535\"\ncount = 4294967295\nmin_bytes = 8\nmax_bytes = 8\nmean_interval_ns = 10\n"), Error("a workload of")),
        case("net CFG", Some("[network.topology]\nhosts = 65537\n"), Error("65537 hosts")),
        // 4. No silent loss or nonsense.
        case("net CFG", Some("[nic.transport]\nprotocol = \"ndp\"\n[[workload.messages]]\nfrom = 0\nto = 1\nlen = 4\nat_ns = 0\n"), Error("at least 8 bytes")),
        case("net CFG", Some("[nic.transport]\nprotocol = \"ndp\"\n[[workload.incast]]\nsenders = \"0\"\nreceiver = 1\nsizes = [0]\n"), Error("incast[0].sizes")),
        case("net CFG", Some("[nic]\nmax_message_bytes = 1000\n[nic.transport]\nprotocol = \"ndp\"\n[[workload.messages]]\nfrom = 0\nto = 1\nlen = 2000\nat_ns = 0\n"), Error("nic.max_message_bytes")),
        case("net CFG", Some("[nic.transport]\nprotocol = \"ndp\"\n[[workload.messages]]\nfrom = 0\nto = 7\nlen = 64\nat_ns = 0\n"), Error("the network has hosts 0..1")),
        case("net CFG", Some("[network.topology]\nhosts = 4\n[nic.transport]\nprotocol = \"ndp\"\n[[programs]]\nhosts = \"0-2\"\nprogram = \"x.elf\"\n[[programs]]\nhosts = \"2-3\"\nprogram = \"y.elf\"\n"), Error("must not overlap")),
        case("net CFG", Some("[nic.transport]\nprotocol = \"ndp\"\n[[programs]]\nhosts = \"5\"\nprogram = \"x.elf\"\n"), Error("programs[0].hosts")),
        case("run @loopback --load --pattern service --msg-bytes 16 --service bimodal:100:1000:1.5", None, Error("long fraction 1.5")),
        case("net CFG --until-us 1", Some("[nic.transport]\nprotocol = \"ndp\"\n[[workload.messages]]\nfrom = 0\nto = 1\nlen = 64\nat_ns = 5000\n"), LastLine(3, "INCOMPLETE: 1 of 1 messages")),
        case("net CFG", Some("[network.faults]\nloss = 1.0\n[nic.transport]\nprotocol = \"ndp\"\n[[workload.messages]]\nfrom = 0\nto = 1\nlen = 64\nat_ns = 0\n"), LastLine(1, "FAILED: 1 of 1 messages failed")),
        case("run @idle_wait --load --start-ns 0 --count 3 --timeout-ns 2000 --max-sim-ms 1", None, LastLine(3, "INCOMPLETE: 3 of 3 requests got no reply")),
        // 3b. Every kind of host counts in the memory estimate: load
        // generators as nodes do (each holds its histograms and state).
        case("net CFG", Some("[network.topology]\nkind = \"single-switch\"\nhosts = 65536\n[nic.transport]\nprotocol = \"ndp\"\n[[programs]]\nhosts = \"0\"\nprogram = \"x.elf\"\n[[clients]]\nhosts = \"1-65535\"\nserver = 0\n"), Error("65535 load generators) with 0 messages needs about")),
        case("net CFG", Some("[network.topology]\nkind = \"single-switch\"\nhosts = 65536\n[nic.transport]\nprotocol = \"ndp\"\n[[programs]]\nhosts = \"0\"\nprogram = \"x.elf\"\n[[clients]]\nhosts = \"1-30000\"\nserver = 0\n[[clients]]\nhosts = \"30001-65535\"\nserver = 0\n[clients.load]\nmode = { closed = { window = 64 } }\n"), Error("needs about")),
        // 4b. Errors in arrays of tables name the key path and its own line
        // (not an earlier key of the same name), and load generators' keys
        // are keys, not command-line options.
        case("net CFG", Some("[network.topology]\nhosts = 4\n[[programs]]\nhosts = \"0\"\nprogram = \"x.elf\"\n[[clients]]\nhosts = \"1\"\nserver = 0\n[clients.load]\ncount = 5\n[[clients]]\nhosts = \"2\"\nserver = 0\n[clients.load]\ncount = 0\n"), Error("clients[1].load.count = 0: must be at least 1 (line 15)")),
        case("net CFG", Some("[network.topology]\nhosts = 4\n[[programs]]\nhosts = \"0\"\nprogram = \"x.elf\"\n[[programs]]\nhosts = 1\nprogram = \"y.elf\"\n"), Error("programs[1].hosts: invalid type: integer `1`, expected a string (line 7)")),
        case("net CFG", Some("[network.topology]\nhosts = 3\n[[programs]]\nhosts = \"0\"\nprogram = \"x.elf\"\n[[clients]]\nhosts = \"1-2\"\nserver = 0\nload = { mode = { open = { rate_mrps = 0.0 } } }\n"), Error(".toml: clients[0].load.mode.open.rate_mrps = 0: must be positive and finite (line 9)")),
        case("net CFG", Some("[network.topology]\nhosts = 2\n[nic.transport]\nprotocol = \"ndp\"\nbdp_packets = 1\n[[programs]]\nhosts = \"0\"\nprogram = \"x.elf\"\n[[clients]]\nhosts = \"1\"\nserver = 0\n[clients.load]\nmessage_bytes = 2000\n"), Error("clients[0].load.message_bytes = 2000: with nic.transport.protocol = ndp, the built-in client sends only what fits in the unscheduled window (1024 bytes); it answers no PULL or GRANT (line 13)")),
        case("run @loopback --load --config CFG", Some("[load]\nwarmup = 0\n\ncount = 0\n"), Error("load.count = 0: must be at least 1 (line 4)")),
        case("run @loopback --load --count 0 --config CFG", Some("[load]\nwarmup = 0\n"), Error("--count 0: must be at least 1")),
        // 4c. A setting that would be ignored is refused, named.
        case("run @loopback --load --app mica --msg-bytes 64", None, Error("--msg-bytes: not used with an application (--app mica)")),
        case("run @loopback --load --app setalg --contexts 0,1", None, Error("--contexts: not used with an application")),
        case("run @loopback --load --app mica --context 1", None, Error("--context: not used")),
        case("run @loopback --load --app mica --expect increment", None, Error("--expect: not used")),
        case("run @loopback --load --app mica --service fixed:100", None, Error("--service: not used")),
        case("run @loopback --load --pattern zeros --config CFG", Some("[load]\napp = { kind = \"mica\" }\n"), Error("--pattern: not used with an application ([load] app = mica)")),
        case("run @loopback --load --config CFG", Some("[load]\napp = { kind = \"mica\" }\nmessage_bytes = 64\n"), Error("load.message_bytes = 64: not used with an application (app = mica)")),
        case("net CFG", Some("[network.topology]\nhosts = 2\n[[programs]]\nhosts = \"0\"\nprogram = \"x.elf\"\n[[clients]]\nhosts = \"1\"\nserver = 0\n[clients.load]\napp = { kind = \"mica\" }\npattern = \"zeros\"\n"), Error("clients[0].load.pattern = \"zeros\": not used with an application (app = mica)")),
        case("run @hello --config CFG", Some("[[programs]]\nhosts = \"0\"\nprogram = \"x.elf\"\n"), Error("[[programs]]: describes hosts of a network, which `nanopu run` does not build")),
        case("run @loopback --load --config CFG", Some("[network.topology]\nhosts = 3\n[[programs]]\nhosts = \"0\"\nprogram = \"x.elf\"\n[[clients]]\nhosts = \"1\"\nserver = 0\n"), Error("[[programs]]: describes hosts of a network")),
        case("run @hello --config CFG", Some("[[workload.incast]]\nsenders = \"0\"\nreceiver = 1\nsizes = [64]\n"), Error("[workload]: describes hosts of a network")),
        case("experiment nb-mica --scale quick --out OUT --config CFG", Some("[node]\ncores = 8\n"), Error("experiment nb-mica does not use node.cores of the configuration")),
        case("experiment nb-mica --scale quick --out OUT --config CFG", Some("[network.link]\ngbps = 100\n"), Error("does not use network.link.gbps")),
        case("experiment nb-mica --scale quick --out OUT --config CFG", Some("[node.l2]\nsize_bytes = 1048576\n"), Error("does not use node.l2.size_bytes")),
        case("experiment nb-mica --scale quick --out OUT --config CFG", Some("[nic]\nkind = \"icenic\"\n"), Error("does not use nic.kind")),
        case("experiment nb-queueing --scale quick --out OUT --config CFG", Some("[nic]\njbsq_depth = 3\n"), Error("does not use nic.jbsq_depth")),
        case("experiment w2w-8B --scale quick --out OUT --config CFG", Some("[load]\ncount = 3\n"), Error("does not use load.count")),
        // 5. Argument errors are the simulator's: 125 with a hint.
        case("run", None, Error("the following required arguments were not provided")),
        case("run @loopback --bogus", None, Error("unexpected argument '--bogus'")),
        case("run @loopback --cores -3", None, Error("unexpected argument '-3'")),
        case("run @loopback --max-cycles x", None, Error("--max-cycles")),
        case("net", None, Error("required arguments")),
        case("bogus", None, Error("unrecognized subcommand 'bogus'")),
        case("", None, Error("no command given")),
        case("run @loopback --load --window 2 --rate-mrps 1", None, Error("cannot be used with")),
        case("experiment no-such-experiment --scale quick", None, Error("no-such-experiment")),
        case("--help", None, Works("Usage: nanopu")),
        case("--version", None, Works("nanopu")),
        case("run --help", None, Works("Usage: nanopu run")),
        // 6. Messages that say what is wrong.
        case("net CFG", Some("[network.link]\ngbps = \"fast\"\n"), Error("network.link.gbps: invalid type: string \"fast\", expected u64 (line 2)")),
        case("net CFG", Some("[network.link]\ngbsp = 200\n"), Error("unknown field `gbsp`")),
        case("net CFG", Some("[network.topology]\nkind = \"ring\"\n"), Error("ring")),
        case("net CFG", Some("[[workload.messages]]\nfrom = 0\nto = 1\nlen = 70000\nat_ns = 0\n"), Error("workload.messages[0].len")),
        case("net CFG", Some("[network.link\ngbps = 1\n"), Error("line 1")),
        case("net CFG", Some("\u{0}\u{1}binary"), Error("line 1")),
        case("config --config CFG", Some("[node]\ncores = -1\n"), Error("node.cores")),
        case("config --config CFG", Some("[node.core.l1d]\nsize_bytes = 65536\n"), Works("size_bytes = 65536")),
        case("net CFG", Some("[nic.transport]\nprotocol = \"ndp\"\n[[workload.messages]]\nfrom = 0\nto = 1\nlen = 64\nat_ns = 5000\n"), Works("result: ok: every message delivered")),
        case("net CFG --until-us 1", Some("[nic.transport]\nprotocol = \"ndp\"\n[[workload.messages]]\nfrom = 0\nto = 1\nlen = 64\nat_ns = 5000\n"), LastLine(3, "--until-us")),
        case("net /nonexistent/x.toml", None, Error("cannot read config file /nonexistent/x.toml")),
        case("net /tmp", None, Error("cannot read config file /tmp")),
        case("config --config /dev/zero", None, Error("larger than the limit of 1048576 bytes")),
        case("net CFG --pcap /tmp/x.pcap --pcap-host 9", Some(NDP2), Error("--pcap-host 9")),
        case("net CFG --pcap /nonexistent/dir/x.pcap", Some(NDP2), Error("packet trace")),
        case("run /nonexistent.elf", None, Error("/nonexistent.elf")),
        case("run CFG", Some("not an elf"), Error("ELF")),
        case("run @loopback --stats-json /nonexistent/dir/s.json --load --count 2 --warmup 0", None, Error("cannot write /nonexistent/dir/s.json")),
    ]
}

fn run_case(c: &Case, dir: &Path, i: usize) -> Result<(), String> {
    let cfg = dir.join(format!("case{i}.toml"));
    if let Some(text) = c.file {
        std::fs::write(&cfg, text).unwrap();
    }
    let args: Vec<String> = c
        .args
        .split_whitespace()
        .map(|a| match a {
            "CFG" => cfg.display().to_string(),
            "OUT" => dir.join(format!("out{i}")).display().to_string(),
            a if a.starts_with('@') => sdk(&a[1..]),
            a => a.to_string(),
        })
        .collect();
    let o = Command::new(env!("CARGO_BIN_EXE_nanopu"))
        .args(&args)
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::null())
        .output()
        .expect("nanopu runs");
    check(c.args, &c.expect, &o)
}

/// The contract every bad input meets, whatever it is.
fn check(what: &str, expect: &Expect, o: &Output) -> Result<(), String> {
    let err = String::from_utf8_lossy(&o.stderr);
    let out = String::from_utf8_lossy(&o.stdout);
    let code = o.status.code();
    let fail = |why: String| {
        Err(format!(
            "`{what}`: {why}\nexit {code:?}\nstderr: {err}\nstdout: {out}"
        ))
    };
    if err.contains("panicked") || err.contains("stack backtrace") || code == Some(101) {
        return fail("panicked".into());
    }
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    match expect {
        Error(piece) => {
            if code != Some(125) {
                return fail("expected exit 125".into());
            }
            if errors.len() != 1 || !errors[0].contains(piece) {
                return fail(format!("expected one error: line containing {piece:?}"));
            }
        }
        LastLine(status, piece) => {
            let last = out.lines().last().into_iter().chain(err.lines().last());
            if code != Some(*status) || !last.into_iter().any(|l| l.contains(piece)) {
                return fail(format!(
                    "expected exit {status} and a last line containing {piece:?}"
                ));
            }
        }
        Works(piece) => {
            if code != Some(0) || !errors.is_empty() || !out.contains(piece) {
                return fail(format!("expected exit 0 and output containing {piece:?}"));
            }
        }
    }
    Ok(())
}

#[test]
fn every_bad_input_gets_one_clear_error() {
    let dir = tmp_dir();
    let cases = cases();
    let failures: Vec<String> = cases
        .iter()
        .enumerate()
        .filter_map(|(i, c)| run_case(c, &dir, i).err())
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

#[test]
fn a_write_error_on_standard_output_is_an_error() {
    for args in [&["config"][..], &["experiment"][..], &["--help"][..]] {
        let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
            return; // not Linux
        };
        let o = Command::new(env!("CARGO_BIN_EXE_nanopu"))
            .args(args)
            .stdout(full)
            .output()
            .expect("nanopu runs");
        let err = String::from_utf8_lossy(&o.stderr);
        if args == ["--help"] {
            // Help on a full disk: nothing more to say, no panic.
            assert!(!err.contains("panicked"), "{err}");
            continue;
        }
        assert_eq!(o.status.code(), Some(125), "{args:?}: {err}");
        assert!(
            err.lines().filter(|l| l.starts_with("error:")).count() == 1
                && err.contains("cannot write to standard output"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn argument_errors_give_a_hint() {
    let o = Command::new(env!("CARGO_BIN_EXE_nanopu"))
        .args(["run", "--bogus"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(125));
    assert!(err.contains("hint: see `nanopu run --help`"), "{err}");
}

#[test]
fn a_guest_fault_in_a_network_names_the_host() {
    // A program whose first instruction is illegal, with no trap handler.
    let dir = tmp_dir().join("fault");
    std::fs::create_dir_all(&dir).unwrap();
    let elf = dir.join("fault.elf");
    std::fs::write(&elf, nanopu_testkit::bare_metal_elf("fault", ".word 0")).unwrap();
    let cfg = dir.join("net.toml");
    std::fs::write(
        &cfg,
        format!(
            "[network.topology]\nhosts = 3\n[nic.transport]\nprotocol = \"ndp\"\n[[programs]]\nhosts = \"2\"\nprogram = \"{}\"\n",
            elf.display()
        ),
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_nanopu"))
        .arg("net")
        .arg(&cfg)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    check("net with a faulting node", &Error("host 2 (a node)"), &o).unwrap();
}

#[test]
fn log_commits_to_dash_is_standard_error_as_for_trace() {
    let d = tmp_dir().join("log-commits-dash");
    std::fs::create_dir_all(&d).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_nanopu"))
        .args(["run", &sdk("hello"), "--log-commits", "-"])
        .current_dir(&d)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(
        !d.join("-").exists(),
        "--log-commits - wrote a file named -"
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("core   0: 3 0x0000000080000000"), "{err}");
}

/// Whether process `pid` is gone (or a zombie nobody reaped yet).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

fn wait_until(what: &str, limit: std::time::Duration, mut done: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "{what} within {limit:?}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// `nanopu experiment --backend ray` with a "Python" that ignores SIGTERM
/// and SIGINT and never ends (what a Ray stuck retrying an address was):
/// nanopu ends on `signal` and its child does not outlive it.
fn ray_child_ends_with_nanopu(signal: &str) {
    use std::os::unix::fs::PermissionsExt;
    let d = tmp_dir().join(format!("ray-child-{signal}"));
    std::fs::create_dir_all(&d).unwrap();
    let pidfile = d.join("child.pid");
    let script = d.join("python");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ntrap '' TERM INT\necho $$ > {}\nexec sleep 300\n",
            pidfile.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut nanopu = Command::new(env!("CARGO_BIN_EXE_nanopu"))
        .args(["experiment", "w2w-8B", "--backend", "ray", "--out"])
        .arg(d.join("out"))
        .env("NANOPU_PYTHON", &script)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let limit = std::time::Duration::from_secs(20);
    wait_until("the child starts", limit, || {
        std::fs::read_to_string(&pidfile).is_ok_and(|s| s.ends_with('\n'))
    });
    let child: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let kill = Command::new("kill")
        .args([&format!("-{signal}"), &nanopu.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let mut status = None;
    wait_until("nanopu ends", limit, || {
        status = nanopu.try_wait().unwrap();
        status.is_some()
    });
    if signal == "INT" {
        assert_eq!(status.unwrap().code(), Some(130));
    }
    wait_until("its child ends", limit, || gone(child));
}

#[test]
fn the_ray_backend_s_child_dies_with_nanopu() {
    for signal in ["TERM", "INT", "KILL"] {
        ray_child_ends_with_nanopu(signal);
    }
}

/// `nanopu args`, or why not: killed if it runs longer than `limit` (a
/// command that waits forever, on a FIFO say, fails the test rather than
/// hanging it).
fn output_within(args: &[String], limit: std::time::Duration) -> Result<Output, String> {
    let child = Command::new(env!("CARGO_BIN_EXE_nanopu"))
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("nanopu starts");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(o) => Ok(o.expect("nanopu ran")),
        Err(_) => {
            // Our own child, by its id.
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            Err(format!(
                "`nanopu {}` ran for more than {limit:?}",
                args.join(" ")
            ))
        }
    }
}

#[test]
fn every_command_reads_a_program_with_the_same_checks() {
    let dir = tmp_dir().join("programs");
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("fifo.elf");
    let made = Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo {}", fifo.display());
    // 300 MB, sparse: no disk is used, and no byte of it may be read.
    let big = dir.join("big.elf");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(300 << 20)
        .unwrap();
    let cases: [(PathBuf, &'static str); 4] = [
        ("/dev/zero".into(), "not a regular file"),
        (fifo, "not a regular file"),
        (
            big,
            "more than the 268435456-byte (256 MiB) limit on ELF files",
        ),
        (dir.clone(), "a directory, not an ELF program file"),
    ];
    let mut failures = Vec::new();
    // A configuration file that is a FIFO is refused, not waited on.
    for command in ["net", "config --config", "run /dev/null --config"] {
        let mut args: Vec<String> = command.split(' ').map(str::to_string).collect();
        args.push(cases[1].0.display().to_string());
        let what = args.join(" ");
        let piece = "is a FIFO or a socket, not a file";
        let result = output_within(&args, std::time::Duration::from_secs(30))
            .and_then(|o| check(&what, &Error(piece), &o));
        failures.extend(result.err());
    }
    for (program, piece) in cases {
        let cfg = dir.join("net.toml");
        std::fs::write(
            &cfg,
            format!(
                "[network.topology]\nhosts = 3\n[nic.transport]\nprotocol = \"ndp\"\n\
                 [[programs]]\nhosts = \"0\"\nprogram = \"{}\"\n[[programs]]\nhosts = \"2\"\nprogram = {:?}\n",
                sdk("hello"),
                program.display().to_string()
            ),
        )
        .unwrap();
        let runs = [
            vec!["run".to_string(), program.display().to_string()],
            vec!["net".to_string(), cfg.display().to_string()],
        ];
        for args in runs {
            let what = args.join(" ");
            let result = output_within(&args, std::time::Duration::from_secs(30)).and_then(|o| {
                check(&what, &Error(piece), &o)?;
                let err = String::from_utf8_lossy(&o.stderr);
                if args[0] == "net" && !err.contains("programs[1].program") {
                    return Err(format!("`{what}`: the key is not named: {err}"));
                }
                Ok(())
            });
            failures.extend(result.err());
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
