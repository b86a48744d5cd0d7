//! `nanopu run`: one program on one node.

use crate::config_file::load_or_default;
use anyhow::{bail, Context, Result};
use nanopu_node::{Node, NodeError, RunEnd};
use nanopu_sim::{SimDuration, SimTime};
use nanopu_system::client::LoadSetting;
use nanopu_system::{
    Expect, LoadConfig, LoadMode, NicKind, Pattern, ServiceTime, Start, System, SystemEnd,
};
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

/// Exit status of a run stopped by Ctrl-C (SIGINT): 128 + 2, the shell's convention.
pub const EXIT_INTERRUPTED: u8 = 130;

/// A flag raised by Ctrl-C, which the node looks at between slices.
fn interrupt_flag() -> Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    let raised = flag.clone();
    ctrlc::set_handler(move || raised.store(true, std::sync::atomic::Ordering::Relaxed))
        .context("cannot install the Ctrl-C handler")?;
    Ok(flag)
}

/// Reports where the harts were when Ctrl-C stopped the run.
fn report_interrupt(harts: &str) -> u8 {
    eprintln!("interrupted (Ctrl-C); the harts were at:\n{harts}");
    EXIT_INTERRUPTED
}

#[derive(clap::Args)]
pub struct RunArgs {
    /// The program: a bare-metal RV64 ELF linked at 0x80000000.
    pub program: PathBuf,
    /// Number of cores (harts); overrides the configuration file.
    #[arg(long)]
    pub cores: Option<usize>,
    /// Stop with an error after this many core cycles.
    #[arg(long)]
    pub max_cycles: Option<u64>,
    /// Write run statistics as JSON to this file.
    #[arg(long)]
    pub stats_json: Option<PathBuf>,
    /// Write an instruction trace to this file (`-` for standard error):
    /// hart, cycle, pc, encoding, disassembly, value written.
    #[arg(long, conflicts_with = "log_commits")]
    pub trace: Option<PathBuf>,
    /// Write a commit log in Spike's `--log-commits` format to this file
    /// (`-` for standard error): one line per retired instruction with the registers, CSRs and memory
    /// it wrote or read, to diff against Spike (see README, "Debugging a
    /// guest program").
    #[arg(long, value_name = "FILE")]
    pub log_commits: Option<PathBuf>,
    /// Stop at the entry point and wait for gdb on [HOST:]PORT (`:PORT` or
    /// `PORT`: 127.0.0.1; port 0 picks a free one, printed on standard
    /// error): `gdb-multiarch -ex 'target remote :PORT' PROGRAM`. Harts are
    /// threads; `monitor netrx` and `monitor lnic` show the nanoPU network
    /// interface.
    #[arg(long, value_name = "[HOST:]PORT", conflicts_with_all = ["trace", "log_commits", "load"])]
    pub gdb: Option<String>,
    /// Configuration file (TOML); see `nanopu config`.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Drive the program with the built-in client through the nanoPU NIC
    /// (see the load options); the run ends when every reply is in.
    #[arg(long)]
    pub load: bool,
    #[command(flatten)]
    pub load_opts: LoadOpts,
    /// The node's NIC with --load: nanopu (the register-file fast path) or
    /// icenic (alias traditional: the DMA NIC; run a program written for
    /// it). Default: the configuration's `[nic] kind` (nanopu).
    #[arg(long)]
    pub nic: Option<String>,
    /// Write the frames on the node's link to this pcap file (with --load).
    #[arg(long, requires = "load")]
    pub pcap: Option<PathBuf>,
    #[command(flatten)]
    pub timeline: crate::timeline_args::TimelineArgs,
    /// Arguments passed to the program (argv[1..]) through HTIF.
    #[arg(last = true)]
    pub args: Vec<String>,
}

/// Options of the built-in client (used with --load).
#[derive(clap::Args, Clone, Debug)]
pub struct LoadOpts {
    /// Payload bytes per request message [default: 8, or `[load] message_bytes`].
    #[arg(long, requires = "load")]
    pub msg_bytes: Option<u16>,
    /// Requests to send [default: 1000, or `[load] count`].
    #[arg(long, requires = "load")]
    pub count: Option<u64>,
    /// Leading requests left out of the statistics [default: 10, or `[load] warmup`].
    #[arg(long, requires = "load")]
    pub warmup: Option<u64>,
    /// Closed loop: requests kept outstanding (the default mode, window 1).
    #[arg(long, requires = "load", conflicts_with = "rate_mrps")]
    pub window: Option<u32>,
    /// Open loop: Poisson arrivals at this rate (million requests per second).
    #[arg(long, requires = "load")]
    pub rate_mrps: Option<f64>,
    /// Destination context (layer-4 port) of the requests [default: 0].
    #[arg(long, requires = "load")]
    pub context: Option<u16>,
    /// Several destination contexts, comma-separated (each request picks one
    /// at random; statistics per context). Overrides --context.
    #[arg(long, requires = "load", value_delimiter = ',')]
    pub contexts: Vec<u16>,
    /// Request payload: counter, random, zeros, dot-product, service, or
    /// lnic-eval (the nanoPU prototype's evaluation requests: 16 B of service
    /// cycles and send cycle; implies --expect lnic-eval) [default: counter].
    #[arg(long, requires = "load")]
    pub pattern: Option<String>,
    /// What a correct reply is: echo, increment, any, dot-product or
    /// lnic-eval [default: echo].
    #[arg(long, requires = "load")]
    pub expect: Option<String>,
    /// Start at this simulated time (ns) instead of at the program's boot message.
    #[arg(long, requires = "load", conflicts_with = "start_messages")]
    pub start_ns: Option<u64>,
    /// Start after the program has sent this many start-up messages to the
    /// client (as the prototype's load generator does), not at a boot message.
    #[arg(long, requires = "load")]
    pub start_messages: Option<u32>,
    /// The node's IPv4 address (default 10.0.0.1).
    #[arg(long, requires = "load")]
    pub node_ip: Option<std::net::Ipv4Addr>,
    /// The client's IPv4 address (default 10.0.0.2).
    #[arg(long, requires = "load")]
    pub client_ip: Option<std::net::Ipv4Addr>,
    /// Seed of arrivals and random payloads [default: 1].
    #[arg(long, requires = "load")]
    pub seed: Option<u64>,
    /// Service times of --pattern service and lnic-eval requests: fixed:NS,
    /// exp:MEAN_NS, bimodal:SHORT_NS:LONG_NS:LONG_FRACTION, or the prototype
    /// load generator's two clamped normals,
    /// bimodal-normal:SHORT_NS:SHORT_SD:LONG_NS:LONG_SD:LONG_FRACTION:MIN_NS:MAX_NS
    /// [default: fixed:500].
    #[arg(long, requires = "load")]
    pub service: Option<String>,
    /// A request unanswered for this long (ns) is counted as lost [default: 1000000].
    #[arg(long, requires = "load")]
    pub timeout_ns: Option<u64>,
    /// Drive an application instead of --pattern/--expect: KIND or
    /// KIND:key=value,... (mica, setalg; keys in `nanopu_apps`, e.g.
    /// mica:get_fraction=0.9) [default: none, or `[load] app`].
    #[arg(long, requires = "load")]
    pub app: Option<String>,
    /// Give up after this much simulated time (ms).
    #[arg(long, requires = "load", default_value_t = 1000)]
    pub max_sim_ms: u64,
}

impl LoadOpts {
    /// Whether an option on the command line sets `setting`.
    fn gives(&self, setting: LoadSetting) -> bool {
        match setting {
            LoadSetting::MessageBytes => self.msg_bytes.is_some(),
            LoadSetting::Count => self.count.is_some(),
            LoadSetting::Window => self.window.is_some(),
            LoadSetting::RateMrps | LoadSetting::TickedRateMrps => self.rate_mrps.is_some(),
            LoadSetting::Pattern => self.pattern.is_some(),
            LoadSetting::Expect => self.expect.is_some() || self.pattern.is_some(),
            LoadSetting::Context => self.context.is_some() || !self.contexts.is_empty(),
            LoadSetting::StartNs => self.start_ns.is_some(),
            LoadSetting::Service => self.service.is_some(),
            LoadSetting::TimeoutNs => self.timeout_ns.is_some(),
            LoadSetting::App => self.app.is_some(),
            LoadSetting::TickNs | LoadSetting::ServiceByContext | LoadSetting::Connections => false,
        }
    }

    /// Options given that an application (`--app` or `[load] app`) ignores.
    fn unused_with_app(&self) -> Option<&'static str> {
        [
            (self.msg_bytes.is_some(), "--msg-bytes"),
            (self.context.is_some(), "--context"),
            (!self.contexts.is_empty(), "--contexts"),
            (self.pattern.is_some(), "--pattern"),
            (self.expect.is_some(), "--expect"),
            (self.service.is_some(), "--service"),
        ]
        .into_iter()
        .find_map(|(given, option)| given.then_some(option))
    }

    /// The load: the configuration's `[load]` with these options on top.
    pub fn to_config(&self, base: &LoadConfig) -> Result<LoadConfig> {
        if let (Some(option), Some(app)) = (
            self.unused_with_app(),
            self.app.as_deref().or(base.app.as_ref().map(|a| a.name())),
        ) {
            bail!(
                "{option}: not used with an application ({}): the application makes the \
                 requests (their sizes, contexts, payloads and service times) and checks the \
                 replies; leave {option} out",
                match &self.app {
                    Some(spec) => format!("--app {spec}"),
                    None => format!("[load] app = {app}"),
                }
            );
        }
        let pattern = match self.pattern.as_deref() {
            None => base.pattern,
            Some("counter") => Pattern::Counter,
            Some("random") => Pattern::Random,
            Some("zeros") => Pattern::Zeros,
            Some("dot-product") => Pattern::DotProduct,
            Some("service") => Pattern::Service,
            Some("lnic-eval") => Pattern::LnicEval,
            Some(p) => bail!(
                "--pattern {p}: expected counter, random, zeros, dot-product, service or lnic-eval"
            ),
        };
        let expect = match self.expect.as_deref() {
            _ if pattern == Pattern::LnicEval => Expect::LnicEval,
            None => base.expect,
            Some("echo") => Expect::Echo,
            Some("increment") => Expect::Increment,
            Some("any") => Expect::Any,
            Some("dot-product") => Expect::DotProduct,
            Some("lnic-eval") => Expect::LnicEval,
            Some(e) => {
                bail!("--expect {e}: expected echo, increment, any, dot-product or lnic-eval")
            }
        };
        let mode = match (self.window, self.rate_mrps) {
            (_, Some(rate_mrps)) => LoadMode::Open { rate_mrps },
            (Some(window), None) => LoadMode::Closed { window },
            (None, None) => base.mode,
        };
        let count = self.count.unwrap_or(base.count);
        let (context, extra_contexts) = match (self.contexts.first(), self.context) {
            (Some(&c), _) => (c, self.contexts.iter().skip(1).copied().collect()),
            (None, Some(c)) => (c, Vec::new()),
            (None, None) => (base.context, base.extra_contexts.clone()),
        };
        Ok(LoadConfig {
            message_bytes: self.msg_bytes.unwrap_or(base.message_bytes),
            count,
            warmup: match self.warmup {
                Some(w) if w >= count => bail!(
                    "--warmup {w}: must be less than --count {count} (no request would be measured)"
                ),
                Some(w) => w,
                None => base.warmup.min(count.saturating_sub(1)),
            },
            mode,
            context,
            extra_contexts,
            pattern,
            expect,
            start: match (self.start_ns, self.start_messages) {
                (Some(ns), _) => Start::AtNs(ns),
                (None, Some(n)) => Start::StartMessages(n),
                (None, None) => base.start,
            },
            seed: self.seed.unwrap_or(base.seed),
            service: match &self.service {
                Some(s) => parse_service(s)?,
                None => base.service,
            },
            timeout_ns: self.timeout_ns.unwrap_or(base.timeout_ns),
            app: match &self.app {
                Some(spec) => Some(nanopu_apps::AppConfig::from_spec(spec)?),
                None => base.app.clone(),
            },
            ..base.clone()
        })
    }
}

/// Runs the program; returns its exit code (clamped to 1..=255 when non-zero).
pub fn run(a: RunArgs) -> Result<u8> {
    if a.timeline.timeline.is_some() && !a.load {
        bail!("--timeline needs --load (it records the NIC, the cores' contexts and the network; without a NIC there is no request to follow)");
    }
    let mut cfg = load_or_default(a.config.as_deref())?;
    if let Some(file) = &a.config {
        cfg.check_one_node("`nanopu run`")
            .with_context(|| file.display().to_string())?;
    }
    if let Some(n) = a.cores {
        cfg.node.cores = n;
    }
    let mut node = Node::with_program(cfg.node.base.clone(), &a.program)?;
    match node.htif_mut() {
        Some(h) => {
            h.echo = true;
            h.args = program_args(&a);
        }
        None => eprintln!(
            "warning: {} defines no `tohost` symbol: it cannot print or report an exit code",
            a.program.display()
        ),
    }
    if a.load {
        drop(node);
        let mut cfg = cfg;
        if let Some(n) = &a.nic {
            cfg.nic.kind = n.parse().map_err(|e| anyhow::anyhow!("--nic {n}: {e}"))?;
        }
        cfg.node.icenic.enabled = cfg.nic.kind == NicKind::Icenic;
        if let Some(ip) = a.load_opts.node_ip {
            cfg.node.icenic.ipv4 = ip;
        }
        let mut node = Node::with_program(cfg.node.base.clone(), &a.program)?;
        if let Some(h) = node.htif_mut() {
            h.echo = true;
            h.args = program_args(&a);
        }
        attach_observer(&mut node, &a)?;
        node.set_stop_request(interrupt_flag()?);
        return run_with_load(node, &cfg, &a);
    }
    attach_observer(&mut node, &a)?;
    let limit = a.max_cycles.unwrap_or(u64::MAX);
    // Before --gdb waits: Ctrl-C there stops the run too, with the report.
    let interrupt = interrupt_flag()?;
    if let Some(spec) = &a.gdb {
        use crate::gdb::SessionEnd;
        let addr = crate::gdb::listen_address(spec)?;
        match crate::gdb::serve(&mut node, addr, limit, &interrupt)? {
            SessionEnd::Exited(code) => return Ok(code),
            SessionEnd::Killed => {
                eprintln!("gdb: the program was killed");
                return Ok(EXIT_INTERRUPTED);
            }
            SessionEnd::Lost => {
                eprintln!("gdb: the connection closed without a detach; the program is stopped");
                return Ok(EXIT_INTERRUPTED);
            }
            SessionEnd::Interrupted(harts) => return Ok(report_interrupt(&harts)),
            // Detached: the program runs on to its end.
            SessionEnd::Detached => eprintln!("gdb: detached; running on"),
        }
    }
    node.set_stop_request(interrupt);
    let start = Instant::now();
    let end = match node.run(limit) {
        Err(NodeError::Interrupted(harts)) => return Ok(report_interrupt(&harts)),
        end => end?,
    };
    let wall_s = start.elapsed().as_secs_f64();
    if let Some(mut t) = node.set_trace(None) {
        t.flush().context("writing the trace or commit log")?;
    }
    if let Some(h) = node.htif() {
        for (num, count) in &h.unsupported {
            eprintln!("warning: the program made {count} unsupported HTIF syscall(s) number {num}");
        }
    }
    let code = match end {
        RunEnd::Exited(code) => code,
        RunEnd::Limit => {
            let waits = node.describe_waits();
            bail!("the program did not exit within --max-cycles {limit}\n{waits}");
        }
    };
    let (_, exit_hart) = node.exit().expect("exited");
    let cycles = node.cycle(exit_hart);
    let instret = node.instret();
    let executed = node.executed_instret();
    let sim_ns = node.time_fs(exit_hart) as f64 / 1e6;
    if let Some(path) = &a.stats_json {
        let harts = node.hart_summaries();
        let stats = json!({
            "exit_code": code as i64,
            "cycles": cycles,
            "instret": instret,
            "sim_ns": sim_ns,
            "wall_s": wall_s,
            "executed_instret": executed,
        // Host speed: instructions executed one by one (not those of
        // skipped polling loops) per host second.
        "mips": executed as f64 / wall_s.max(1e-9) / 1e6,
            "harts": harts,
            "memory": node.memory_stats(),
            "config": cfg,
        });
        std::fs::write(path, serde_json::to_string_pretty(&stats)? + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(match code {
        0 => 0,
        c => c.clamp(1, 255) as u8,
    })
}

/// The instruction trace (`--trace`) or commit log (`--log-commits`), if asked for.
fn attach_observer(node: &mut Node, a: &RunArgs) -> Result<()> {
    if let Some(path) = &a.trace {
        node.set_trace(Some(output_file(path, "trace file")?));
    }
    if let Some(path) = &a.log_commits {
        let log = nanopu_core::commit_log::CommitLog::new(output_file(path, "commit log")?);
        node.set_observer(Some(Box::new(log)));
    }
    Ok(())
}

/// A file to write `--trace` or `--log-commits` to; `-` is standard error.
fn output_file(path: &std::path::Path, what: &str) -> Result<Box<dyn Write + Send>> {
    if path.as_os_str() == "-" {
        return Ok(Box::new(std::io::stderr()));
    }
    let f = std::fs::File::create(path)
        .with_context(|| format!("cannot create {what} {}", path.display()))?;
    Ok(Box::new(std::io::BufWriter::new(f)))
}

/// argv of the program: its file name, then the arguments after `--`.
fn program_args(a: &RunArgs) -> Vec<String> {
    std::iter::once(nanopu_node::loader::argv0(&a.program))
        .chain(a.args.iter().cloned())
        .collect()
}

/// Parses `fixed:NS`, `exp:MEAN_NS` or `bimodal:SHORT_NS:LONG_NS:LONG_FRACTION`.
fn parse_service(s: &str) -> Result<ServiceTime> {
    let parts: Vec<&str> = s.split(':').collect();
    let num = |i: usize| -> Result<f64> {
        parts
            .get(i)
            .and_then(|p| p.parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v >= 0.0)
            .with_context(|| {
                format!(
                    "--service {s}: expected a non-negative number in field {}",
                    i + 1
                )
            })
    };
    Ok(match (parts[0], parts.len()) {
        ("fixed", 2) => ServiceTime::Fixed { ns: num(1)? },
        ("exp", 2) => ServiceTime::Exponential { mean_ns: num(1)? },
        ("bimodal", 4) => ServiceTime::Bimodal {
            short_ns: num(1)?,
            long_ns: num(2)?,
            long_fraction: num(3)?,
        },
        ("bimodal-normal", 8) => ServiceTime::BimodalNormal {
            short_ns: num(1)?,
            short_sd_ns: num(2)?,
            long_ns: num(3)?,
            long_sd_ns: num(4)?,
            long_fraction: num(5)?.min(1.0),
            min_ns: num(6)?,
            max_ns: num(7)?,
        },
        _ => bail!(
            "--service {s}: expected fixed:NS, exp:MEAN_NS, bimodal:SHORT_NS:LONG_NS:FRACTION or \
             bimodal-normal:SHORT_NS:SHORT_SD:LONG_NS:LONG_SD:FRACTION:MIN_NS:MAX_NS"
        ),
    })
}

/// A load setting that cannot work, named as the user gave it: the option,
/// or the `[load]` key of the configuration file (with its line).
fn load_error(e: nanopu_system::client::LoadConfigError, a: &RunArgs) -> anyhow::Error {
    match &a.config {
        Some(file) if !a.load_opts.gives(e.setting()) => anyhow::anyhow!(
            "{}: {}{}",
            file.display(),
            e.at_key("load"),
            nanopu_system::config::line_in_file(file, &format!("load.{}", e.setting().key()))
        ),
        _ => e.into(),
    }
}

/// `nanopu run --load`: the program behind the NIC, driven by the client.
fn run_with_load(node: Node, cfg: &nanopu_system::Config, a: &RunArgs) -> Result<u8> {
    let load = a.load_opts.to_config(&cfg.load)?;
    let (count, timeout_ns) = (load.count, load.timeout_ns);
    let until = SimDuration::try_from_ms(a.load_opts.max_sim_ms)
        .map_err(|e| anyhow::anyhow!("--max-sim-ms {}: {e}", a.load_opts.max_sim_ms))?;
    load.validate(&cfg.nic, cfg.network.link.gbps)
        .map_err(|e| load_error(e, a))?;
    nanopu_system::memory::check(
        &format!(
            "the load generator's state for up to {} outstanding requests",
            load.max_outstanding()
        ),
        nanopu_system::memory::load_estimate(&load),
    )?;
    let node_ip = a
        .load_opts
        .node_ip
        .unwrap_or(std::net::Ipv4Addr::from_bits(nanopu_system::NODE_IP));
    let client_ip = a
        .load_opts
        .client_ip
        .unwrap_or(std::net::Ipv4Addr::from_bits(nanopu_system::CLIENT_IP));
    let mut sys = System::with_addresses(node, cfg, Some(load), node_ip, client_ip)?;
    if let Some(p) = &a.pcap {
        sys.capture(p)?;
    }
    let timeline = a.timeline.open()?;
    if let Some(tl) = &timeline {
        sys.set_timeline(tl);
    }
    let start = Instant::now();
    let end = match sys.run(SimTime::ZERO + until) {
        Err(nanopu_system::SystemError::Node(NodeError::Interrupted(harts))) => {
            return Ok(report_interrupt(&harts))
        }
        end => end?,
    };
    let wall_s = start.elapsed().as_secs_f64();
    if let Some(tl) = &timeline {
        crate::timeline_args::finish(tl)?;
    }
    if let Some(mut t) = sys.node_mut().set_trace(None) {
        t.flush().context("writing the trace or commit log")?;
    }
    let report = sys.load_report().expect("a client is attached");
    let nic = sys.nic_stats().clone();
    // No measured reply (all lost, or all in the warm-up): no percentiles.
    let response = if report.max_ns > 0.0 {
        format!(
            "p50 {:.1} ns, p90 {:.1} ns, p99 {:.1} ns, p99.9 {:.1} ns, max {:.1} ns; throughput {:.2} Mrps, {:.2} Gb/s",
            report.p50_ns,
            report.p90_ns,
            report.p99_ns,
            report.p999_ns,
            report.max_ns,
            report.throughput_mrps,
            report.throughput_gbps
        )
    } else {
        "no samples (no reply after the warm-up)".into()
    };
    eprintln!(
        "load: {} sent, {} replies ({} wrong, {} unexpected, {} lost); response time at the node's wire: \
         {response} ({wall_s:.3} host s)",
        report.sent,
        report.received,
        report.wrong_replies,
        report.unexpected_replies,
        report.lost,
    );
    if report.frames_not_for_client > 0 {
        eprintln!(
            "note: {} frames from the node were no reply to the client (another address: the node's own, \
             broadcast, multicast, loopback; or not a nanoPU data packet) and were dropped",
            report.frames_not_for_client
        );
    }
    if let (Some(app), true) = (report.app, report.max_ns > 0.0) {
        eprintln!(
            "  {app}: response time at the client p50 {:.1} ns, p90 {:.1} ns, p99 {:.1} ns{}",
            report.client_p50_ns,
            report.client_p90_ns,
            report.client_p99_ns,
            match report.retries {
                0 => String::new(),
                n => format!(" ({n} retries)"),
            }
        );
    }
    if report.per_context.len() > 1 {
        for c in &report.per_context {
            eprintln!(
                "  context {}: {} replies, p50 {:.1} ns, p99 {:.1} ns, max {:.1} ns",
                c.context, c.received, c.p50_ns, c.p99_ns, c.max_ns
            );
        }
    }
    if let Some(path) = &a.stats_json {
        let stats = json!({
            "end": format!("{end:?}"),
            "load": report,
            "nic": nic,
            "icenic": sys.node().device::<nanopu_system::nics::icenic::IceNic>().map(|n| n.stats.clone()),
            "delivery_failures": sys.delivery_failures(),
            "late_events": sys.late_events(),
            "booted_at_ns": sys.booted_at().map(|t| t.as_ns()),
            "instret": sys.node().instret(),
            "memory": sys.node().memory_stats(),
            "wall_s": wall_s,
            "config": cfg,
        });
        std::fs::write(path, serde_json::to_string_pretty(&stats)? + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    match end {
        SystemEnd::ClientDone => {}
        SystemEnd::Exited(code) => bail!(
            "the program exited with code {code} after {} of {} replies",
            report.received,
            report.sent
        ),
        SystemEnd::TimeLimit => bail!(
            "only {} of {} replies arrived within {} ms of simulated time{}",
            report.received,
            count,
            a.load_opts.max_sim_ms,
            if sys.booted_at().is_none() {
                " (the program never sent its boot message; use --start-ns to start without it)"
            } else {
                ""
            }
        ),
    }
    if let Some(e) = report.first_error {
        eprintln!(
            "result: FAILED: {} of {} replies were wrong; first: {e}; exit 1",
            report.wrong_replies, report.received
        );
        return Ok(1);
    }
    if report.lost > 0 {
        eprintln!(
            "result: INCOMPLETE: {} of {} requests got no reply within --timeout-ns {}{}; exit {}",
            report.lost,
            report.sent,
            timeout_ns,
            if report.received == 0 {
                " (all lost)"
            } else {
                ""
            },
            crate::net::EXIT_INCOMPLETE
        );
        return Ok(crate::net::EXIT_INCOMPLETE);
    }
    if report.unexpected_replies > 0 {
        eprintln!(
            "result: FAILED: {} replies answered no request the client sent; exit 1",
            report.unexpected_replies
        );
        return Ok(1);
    }
    eprintln!(
        "result: ok: {} of {} requests answered correctly",
        report.received, report.sent
    );
    Ok(0)
}
