//! `nanopu run`: one program on one node.

use crate::config_file::load_or_default;
use anyhow::{bail, Context, Result};
use nanopu_node::{Node, NodeError, RunEnd};
use nanopu_sim::{SimDuration, SimTime};
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
    #[arg(long)]
    pub trace: Option<PathBuf>,
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
    /// traditional (the DMA NIC; run a program written for it).
    #[arg(long, default_value = "nanopu")]
    pub nic: String,
    /// Write the frames on the node's link to this pcap file (with --load).
    #[arg(long)]
    pub pcap: Option<PathBuf>,
    /// Arguments passed to the program (argv[1..]) through HTIF.
    #[arg(last = true)]
    pub args: Vec<String>,
}

/// Options of the built-in client (used with --load).
#[derive(clap::Args, Clone, Debug)]
pub struct LoadOpts {
    /// Payload bytes per request message.
    #[arg(long, default_value_t = 8)]
    pub msg_bytes: u16,
    /// Requests to send.
    #[arg(long, default_value_t = 1000)]
    pub count: u64,
    /// Leading requests left out of the statistics.
    #[arg(long, default_value_t = 10)]
    pub warmup: u64,
    /// Closed loop: requests kept outstanding (the default mode, window 1).
    #[arg(long, conflicts_with = "rate_mrps")]
    pub window: Option<u32>,
    /// Open loop: Poisson arrivals at this rate (million requests per second).
    #[arg(long)]
    pub rate_mrps: Option<f64>,
    /// Destination context (layer-4 port) of the requests.
    #[arg(long, default_value_t = 0)]
    pub context: u16,
    /// Several destination contexts, comma-separated (each request picks one
    /// at random; statistics per context). Overrides --context.
    #[arg(long, value_delimiter = ',')]
    pub contexts: Vec<u16>,
    /// Request payload: counter, random, zeros or dot-product.
    #[arg(long, default_value = "counter")]
    pub pattern: String,
    /// What a correct reply is: echo, increment, any or dot-product.
    #[arg(long, default_value = "echo")]
    pub expect: String,
    /// Start at this simulated time (ns) instead of at the program's boot message.
    #[arg(long)]
    pub start_ns: Option<u64>,
    /// Seed of arrivals and random payloads.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Service times of --pattern service requests: fixed:NS, exp:MEAN_NS or
    /// bimodal:SHORT_NS:LONG_NS:LONG_FRACTION.
    #[arg(long, default_value = "fixed:500")]
    pub service: String,
    /// A request unanswered for this long (ns) is counted as lost.
    #[arg(long, default_value_t = 1_000_000)]
    pub timeout_ns: u64,
    /// Give up after this much simulated time (ms).
    #[arg(long, default_value_t = 1000)]
    pub max_sim_ms: u64,
}

impl LoadOpts {
    pub fn to_config(&self) -> Result<LoadConfig> {
        let pattern = match self.pattern.as_str() {
            "counter" => Pattern::Counter,
            "random" => Pattern::Random,
            "zeros" => Pattern::Zeros,
            "dot-product" => Pattern::DotProduct,
            "service" => Pattern::Service,
            p => bail!("--pattern {p}: expected counter, random, zeros, dot-product or service"),
        };
        let expect = match self.expect.as_str() {
            "echo" => Expect::Echo,
            "increment" => Expect::Increment,
            "any" => Expect::Any,
            "dot-product" => Expect::DotProduct,
            e => bail!("--expect {e}: expected echo, increment, any or dot-product"),
        };
        let mode = match (self.window, self.rate_mrps) {
            (_, Some(rate_mrps)) => LoadMode::Open { rate_mrps },
            (w, None) => LoadMode::Closed {
                window: w.unwrap_or(1),
            },
        };
        Ok(LoadConfig {
            message_bytes: self.msg_bytes,
            count: self.count,
            warmup: self.warmup.min(self.count.saturating_sub(1)),
            mode,
            context: self.contexts.first().copied().unwrap_or(self.context),
            extra_contexts: self.contexts.iter().skip(1).copied().collect(),
            service_by_context: Vec::new(),
            pattern,
            expect,
            start: self.start_ns.map_or(Start::Boot, Start::AtNs),
            seed: self.seed,
            service: parse_service(&self.service)?,
            timeout_ns: self.timeout_ns,
        })
    }
}

/// Runs the program; returns its exit code (clamped to 1..=255 when non-zero).
pub fn run(a: RunArgs) -> Result<u8> {
    let mut cfg = load_or_default(a.config.as_deref())?;
    if let Some(n) = a.cores {
        cfg.node.cores = n;
    }
    let mut node = Node::with_program(cfg.node.clone(), &a.program)?;
    match node.bus.htif.as_mut() {
        Some(h) => {
            h.echo = true;
            h.args = std::iter::once(a.program.display().to_string())
                .chain(a.args.iter().cloned())
                .collect();
        }
        None => eprintln!(
            "warning: {} defines no `tohost` symbol: it cannot print or report an exit code",
            a.program.display()
        ),
    }
    if let Some(path) = &a.trace {
        node.trace = Some(if path.as_os_str() == "-" {
            Box::new(std::io::stderr())
        } else {
            let f = std::fs::File::create(path)
                .with_context(|| format!("cannot create trace file {}", path.display()))?;
            Box::new(std::io::BufWriter::new(f))
        });
    }
    if a.load {
        drop(node);
        let mut cfg = cfg;
        cfg.system.nic_kind = match a.nic.as_str() {
            "nanopu" => NicKind::NanoPu,
            "traditional" => NicKind::Traditional,
            n => bail!("--nic {n}: expected nanopu or traditional"),
        };
        cfg.node.icenic.enabled = cfg.system.nic_kind == NicKind::Traditional;
        let mut node = Node::with_program(cfg.node.clone(), &a.program)?;
        if let Some(h) = node.bus.htif.as_mut() {
            h.echo = true;
        }
        node.stop_request = Some(interrupt_flag()?);
        return run_with_load(node, &cfg, &a);
    }
    let limit = a.max_cycles.unwrap_or(u64::MAX);
    node.stop_request = Some(interrupt_flag()?);
    let start = Instant::now();
    let end = match node.run(limit) {
        Err(NodeError::Interrupted(harts)) => return Ok(report_interrupt(&harts)),
        end => end?,
    };
    let wall_s = start.elapsed().as_secs_f64();
    if let Some(mut t) = node.trace.take() {
        t.flush().context("writing the trace")?;
    }
    if let Some(h) = &node.bus.htif {
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
    let (_, exit_hart) = node.exit.expect("exited");
    let cycles = node.harts[exit_hart].cycle;
    let instret = node.instret();
    let sim_ns = node.time_fs(exit_hart) as f64 / 1e6;
    if let Some(path) = &a.stats_json {
        let harts: Vec<_> = node
            .harts
            .iter()
            .map(|h| {
                json!({
                    "cycles": h.cycle,
                    "instret": h.instret,
                    "icache_misses": h.stats.icache_misses,
                    "dcache_misses": h.stats.dcache_misses,
                    "branch_mispredicts": h.predictor.mispredicts,
                    "traps": h.stats.traps,
                    "interrupts": h.stats.interrupts,
                    "idle_cycles": h.stats.idle_cycles,
                })
            })
            .collect();
        let stats = json!({
            "exit_code": code,
            "cycles": cycles,
            "instret": instret,
            "sim_ns": sim_ns,
            "wall_s": wall_s,
            "mips": instret as f64 / wall_s.max(1e-9) / 1e6,
            "harts": harts,
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
            long_fraction: num(3)?.min(1.0),
        },
        _ => bail!(
            "--service {s}: expected fixed:NS, exp:MEAN_NS or bimodal:SHORT_NS:LONG_NS:FRACTION"
        ),
    })
}

/// `nanopu run --load`: the program behind the NIC, driven by the client.
fn run_with_load(node: Node, cfg: &crate::config_file::SimConfig, a: &RunArgs) -> Result<u8> {
    let load = a.load_opts.to_config()?;
    let mut sys = System::new(node, &cfg.system, Some(load))?;
    if let Some(p) = &a.pcap {
        sys.capture(p)?;
    }
    let until = SimTime::ZERO + SimDuration::from_ns(a.load_opts.max_sim_ms * 1_000_000);
    let start = Instant::now();
    let end = match sys.run(until) {
        Err(nanopu_system::SystemError::Node(NodeError::Interrupted(harts))) => {
            return Ok(report_interrupt(&harts))
        }
        end => end?,
    };
    let wall_s = start.elapsed().as_secs_f64();
    let report = sys.load_report().expect("a client is attached");
    let nic = sys.nic_stats().clone();
    eprintln!(
        "load: {} sent, {} replies ({} wrong, {} unexpected, {} lost); response time at the node's wire: \
         p50 {:.1} ns, p90 {:.1} ns, p99 {:.1} ns, p99.9 {:.1} ns, max {:.1} ns; throughput {:.2} Mrps, {:.2} Gb/s \
         ({:.3} host s)",
        report.sent,
        report.received,
        report.wrong_replies,
        report.unexpected_replies,
        report.lost,
        report.p50_ns,
        report.p90_ns,
        report.p99_ns,
        report.p999_ns,
        report.max_ns,
        report.throughput_mrps,
        report.throughput_gbps,
        wall_s
    );
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
            "icenic": sys.node.icenic().map(|n| n.stats.clone()),
            "delivery_failures": sys.delivery_failures,
            "late_events": sys.late_events(),
            "booted_at_ns": sys.booted_at.map(|t| t.as_ns()),
            "instret": sys.node.instret(),
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
            a.load_opts.count,
            a.load_opts.max_sim_ms,
            if sys.booted_at.is_none() {
                " (the program never sent its boot message; use --start-ns to start without it)"
            } else {
                ""
            }
        ),
    }
    if let Some(e) = report.first_error {
        eprintln!(
            "error: {} of {} replies were wrong; first: {e}",
            report.wrong_replies, report.received
        );
        return Ok(1);
    }
    Ok(0)
}
