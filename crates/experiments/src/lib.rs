//! Experiments: the papers' evaluations, run on the simulator and written
//! as CSV, plots, `report.md` and `summary.json` (`nanopu_report`).
//!
//! An experiment is a list of independent measurement points (a program,
//! a NIC, a load). Points run in parallel on the host's cores; each point is
//! deterministic (its own seed), so the results do not depend on how many
//! threads ran them. `nanopu reproduce` also runs the experiments side by
//! side, sharing the host's cores (`cores.rs`).

mod apps;
mod apps2;
mod artifact;
pub mod boot_seed;
pub mod cores;
pub mod erpc;
mod error;
pub mod gopt;
pub mod memory;
mod memory_systems;
mod microbench;
pub mod nb_queueing;
pub mod nebula;
mod prototype_flow;
mod rdma;
pub mod replication;
mod scheduling;
pub mod settings;
mod table1;
mod transport;

use boot_seed::{BootSeed, SeedKey};
use cores::Cores;
pub use error::{ExperimentError, Result};
use indicatif::{ProgressBar, ProgressStyle};
use nanopu_nics::nanopu::core_selection::Policy;
use nanopu_report::ExperimentResult;
use nanopu_sim::{SimDuration, SimTime};
use nanopu_system::nics::nebula::NebulaDesign;
use nanopu_system::Config as SimConfig;
use nanopu_system::{LoadConfig, LoadMode, LoadReport, NicKind, System, SystemEnd};
pub use settings::Fixed;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Where `make -C sdk` puts the guest programs (`NANOPU_SDK_BUILD`
/// overrides it).
pub fn sdk_build_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("NANOPU_SDK_BUILD") {
        return dir.into();
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../sdk/build")
}

/// How big a run: `quick` for tests and smoke runs, `full` for the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Scale {
    Quick,
    Full,
}

/// One measurement: a program on a node behind a NIC, driven by the client.
#[derive(Clone, Debug)]
pub struct Point {
    /// Guest program (an ELF in the SDK's build directory, without `.elf`).
    pub program: &'static str,
    pub nic: NicKind,
    pub load: LoadConfig,
    /// Core selection, if not the configuration's.
    pub selection: Option<Policy>,
}

/// What a point measured.
#[derive(Clone, Debug)]
pub struct Measured {
    pub load: LoadReport,
    /// Core 0's thread switches through the scheduler interrupt and their
    /// mean latency in cycles (NaN if none).
    pub ctx_switches: u64,
    pub ctx_switch_mean_cycles: f64,
    /// The node's LLC and DRAM counters over the whole point.
    pub memory: nanopu_node::memory::MemoryStats,
    /// With [`Runner::memory_window`]: the counters when the warm-up's
    /// requests had been sent, that time and the point's end, so that
    /// `memory` minus these is what the measured requests cost.
    pub memory_at_warmup: Option<(nanopu_node::memory::MemoryStats, SimTime, SimTime)>,
}

/// How many mean service times a sustained load's p99 may reach
/// (`targets.md`: "p99 stays below 10x the mean service time").
pub const SUSTAINED_P99_FACTOR: f64 = 10.0;

/// The definition of a sustained load, as the reports state it.
pub const SUSTAINED_DEFINITION: &str = "a load is sustained when every request is answered, the p99 \
     response time stays below 10 mean service times (targets.md), and the backlog does not grow: the \
     requests outstanding just after the last send exceed those just after the send half-way through the \
     measured requests by at most 10 per server (a growth that alone would delay a request by 10 service \
     times) or 1 % of the requests sent in between (a throughput shortfall of half the sweeps' 2 % load \
     step), whichever is more; the highest sustained load is the highest point of the sweep with every point up to it sustained";

/// Whether a load point is sustained ([`SUSTAINED_DEFINITION`]): `p99_ns` is
/// the percentile the experiment judges (all requests, or one priority's),
/// `servers` the cores serving the load.
pub fn sustained(
    m: &LoadReport,
    count: u64,
    p99_ns: f64,
    mean_service_ns: f64,
    servers: f64,
) -> bool {
    keeps_up(m, count, servers) && p99_ns < SUSTAINED_P99_FACTOR * mean_service_ns
}

/// The throughput half of [`sustained`]: every request answered and no
/// growing backlog, whatever the tail.
pub fn keeps_up(m: &LoadReport, count: u64, servers: f64) -> bool {
    let allowed =
        (SUSTAINED_P99_FACTOR * servers).max(BACKLOG_FRACTION * m.sent_after_midpoint as f64);
    m.received == count && m.lost == 0 && (m.backlog_growth() as f64) <= allowed
}

/// The backlog may grow by this fraction of the requests sent in the second
/// half: a 1 % shortfall of throughput is half the sweeps' 2 % load step, so
/// a scheduler that saturates between two load points fails at the higher
/// one, while the queue-length fluctuation of a stable queue near capacity
/// (tens of requests) does not fail it.
pub const BACKLOG_FRACTION: f64 = 0.01;

/// The highest load of `loads` (ascending) with every load up to it
/// sustained, if any, and whether the sweep went past it (reached a load
/// that is not sustained).
pub fn highest_sustained(loads: &[f64], ok: impl Fn(usize) -> bool) -> (Option<f64>, bool) {
    let n = (0..loads.len()).take_while(|&i| ok(i)).count();
    (n.checked_sub(1).map(|i| loads[i]), n < loads.len())
}

/// An experiment the CLI can run.
pub struct Experiment {
    pub id: &'static str,
    pub title: &'static str,
    pub run: fn(&Runner) -> Result<ExperimentResult>,
    /// The configuration settings it sets itself (a configuration that
    /// changes them is refused: `settings`).
    pub fixed: Fixed,
    /// The memory system below the L2 its nodes have when the
    /// configuration chooses none (`memory`).
    pub memory: memory::Memory,
}

/// Every experiment, in report order.
pub fn all() -> Vec<Experiment> {
    let mut all = microbench::experiments();
    all.extend(scheduling::experiments());
    all.extend(prototype_flow::experiments());
    all.extend(transport::experiments());
    all.extend(replication::experiments());
    all.extend(apps::experiments());
    all.extend(artifact::experiments());
    all.extend(gopt::experiments());
    all.extend(apps2::experiments());
    all.extend(memory_systems::experiments());
    all.extend(nb_queueing::experiments());
    all.extend(nebula::experiments());
    all.extend(erpc::experiments());
    all.extend(rdma::experiments());
    all
}

/// What a point runs on: a program with its arguments, behind a NIC with
/// its core selection, at its addresses ((node, client); `None`: the
/// configuration's).
#[derive(Clone, Copy)]
struct Server<'a> {
    program: &'a Path,
    args: &'a [String],
    nic: NicKind,
    selection: Option<Policy>,
    addresses: Option<(Ipv4Addr, Ipv4Addr)>,
}

/// Runs points for experiments: configuration, parallelism, progress.
#[derive(Clone)]
pub struct Runner {
    pub cfg: SimConfig,
    /// Seed of every point's arrivals, payloads and random core selection.
    pub seed: u64,
    pub scale: Scale,
    pub threads: usize,
    pub programs: PathBuf,
    pub progress: ProgressBar,
    /// Raised to stop early (Ctrl-C in the Python package): points not yet
    /// started end with [`ExperimentError::Interrupted`].
    pub stop: Arc<AtomicBool>,
    /// The host cores this runner's threads share with the other
    /// experiments run beside this one ([`cores`]), and this experiment's
    /// claim on them (its place in the report: lower first).
    pub cores: Arc<Cores>,
    pub rank: usize,
    /// Host CPU time this experiment's threads used so far, in ns (see
    /// [`thread_cpu_ns`]).
    pub cpu_ns: Arc<AtomicU64>,
    /// Keep the memory counters as they stand when the warm-up has been
    /// sent ([`Measured::memory_at_warmup`]).
    pub memory_window: bool,
    /// Simulated time a point's program may take to boot before its load
    /// (the time limit is this plus three times the load's arrivals).
    pub boot_allowance: SimDuration,
}

impl Runner {
    pub fn new(cfg: SimConfig, scale: Scale, threads: Option<usize>, seed: u64) -> Runner {
        let threads = threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
            .max(1);
        let progress = if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            ProgressBar::new(0)
        } else {
            ProgressBar::hidden()
        };
        progress.set_style(
            ProgressStyle::with_template(
                "{prefix:>26} [{bar:30}] {pos}/{len} points, {elapsed} {msg}",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        Runner {
            cfg,
            seed,
            scale,
            threads,
            programs: sdk_build_dir(),
            progress,
            stop: Arc::default(),
            cores: Arc::new(Cores::new(threads)),
            rank: 0,
            cpu_ns: Arc::default(),
            memory_window: false,
            boot_allowance: SimDuration::from_us(100_000),
        }
    }

    /// The same runner for the experiment of `rank` among those run side
    /// by side (see [`cores`]).
    pub fn ranked(&self, rank: usize) -> Runner {
        Runner {
            rank,
            cpu_ns: Arc::default(),
            ..self.clone()
        }
    }

    /// Adds this thread's host CPU time since `start` ([`thread_cpu_ns`])
    /// to the experiment's.
    pub fn add_cpu_since(&self, start: u64) {
        self.cpu_ns
            .fetch_add(thread_cpu_ns().saturating_sub(start), Ordering::Relaxed);
    }

    /// Host CPU time this experiment's threads used so far, in seconds.
    pub fn cpu_s(&self) -> f64 {
        self.cpu_ns.load(Ordering::Relaxed) as f64 / 1e9
    }

    /// The same runner on configuration `cfg`, one point at a time (for an
    /// experiment that runs its own points in sequence).
    pub fn sequential_with(&self, cfg: SimConfig) -> Runner {
        Runner {
            cfg,
            threads: 1,
            ..self.clone()
        }
    }

    pub fn program(&self, name: &str) -> Result<PathBuf> {
        let p = self.programs.join(format!("{name}.elf"));
        if !p.exists() {
            return Err(ExperimentError::MissingProgram(p));
        }
        Ok(p)
    }

    /// Runs every point (in parallel), results in the order of `points`.
    pub fn run(&self, label: &str, points: &[Point]) -> Result<Vec<Measured>> {
        self.par_map(label, points, |p| self.run_point(p))
    }

    /// Runs `f` on every item (in parallel), results in the order of `items`.
    pub fn par_map<T: Sync, R: Send>(
        &self,
        label: &str,
        items: &[T],
        f: impl Fn(&T) -> Result<R> + Sync,
    ) -> Result<Vec<R>> {
        self.progress.set_prefix(label.to_string());
        self.progress
            .set_length(self.progress.length().unwrap_or(0) + items.len() as u64);
        let run = |item: &T| {
            let r = if self.stop.load(Ordering::Relaxed) {
                Err(ExperimentError::Interrupted)
            } else {
                f(item)
            };
            self.progress.inc(1);
            r
        };
        if self.threads == 1 || items.len() <= 1 {
            // On this thread, with its core.
            let results: Vec<Result<R>> = items.iter().map(run).collect();
            return results.into_iter().collect();
        }
        // Workers take a core per point; this thread lends its own while it waits.
        let _lent = self.cores.lend(self.rank);
        let next = AtomicUsize::new(0);
        let results: Mutex<Vec<Option<Result<R>>>> =
            Mutex::new((0..items.len()).map(|_| None).collect());
        std::thread::scope(|s| {
            for _ in 0..self.threads.min(items.len()) {
                s.spawn(|| {
                    let cpu = thread_cpu_ns();
                    loop {
                        let _core = self.cores.hold(self.rank);
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        let r = run(item);
                        results.lock().expect("no panics")[i] = Some(r);
                    }
                    self.add_cpu_since(cpu);
                });
            }
        });
        results
            .into_inner()
            .expect("no panics")
            .into_iter()
            .map(|r| r.expect("every item ran"))
            .collect()
    }

    fn run_point(&self, p: &Point) -> Result<Measured> {
        let program = self.program(p.program)?;
        self.run_on_node(&program, &[], p.nic, p.selection, None, &p.load)
    }

    /// Runs `program` (argv = its file name and `args`) behind `nic`, driven by
    /// `load`; `addresses` = (node, client) if not the configuration's.
    pub fn run_on_node(
        &self,
        program: &Path,
        args: &[String],
        nic: NicKind,
        selection: Option<Policy>,
        addresses: Option<(Ipv4Addr, Ipv4Addr)>,
        load: &LoadConfig,
    ) -> Result<Measured> {
        let server = Server {
            program,
            args,
            nic,
            selection,
            addresses,
        };
        self.measure_on_node(&server, load, None)
    }

    /// [`Runner::run_on_node`] (with the configuration's addresses) for
    /// points that differ only in their load: the first point run with an
    /// empty `seed` keeps its booted node there, and the points after it
    /// start from copies of that node (`boot_seed.rs`). Results are those
    /// of `run_on_node`, bit for bit.
    pub fn run_on_node_seeded(
        &self,
        seed: &BootSeed,
        program: &Path,
        args: &[String],
        nic: NicKind,
        selection: Option<Policy>,
        load: &LoadConfig,
    ) -> Result<Measured> {
        let server = Server {
            program,
            args,
            nic,
            selection,
            addresses: None,
        };
        self.measure_on_node(&server, load, Some(seed))
    }

    fn measure_on_node(
        &self,
        server: &Server,
        load: &LoadConfig,
        seed: Option<&BootSeed>,
    ) -> Result<Measured> {
        let Server {
            program,
            args,
            nic,
            selection,
            addresses,
        } = *server;
        let name = program.display();
        let mut sys_cfg = self.cfg.clone();
        sys_cfg.node.icenic.enabled = nic == NicKind::Icenic;
        let (node_ip, client_ip) = addresses.unwrap_or((
            Ipv4Addr::from_bits(nanopu_system::NODE_IP),
            Ipv4Addr::from_bits(nanopu_system::CLIENT_IP),
        ));
        if addresses.is_some() {
            sys_cfg.node.icenic.ipv4 = node_ip;
        }
        sys_cfg.nic.kind = nic;
        if let Some(sel) = selection {
            sys_cfg.nic.core_selection = sel;
        }
        sys_cfg.nic.core_selection_seed = self.seed;
        let mut load = load.clone();
        load.seed = self.seed;
        // Only behind the nanoPU NIC and NEBULA's: the other designs were
        // not checked to stay as built while the cores run alone. NEBULA's
        // designs share a boot: they differ only in what the NIC does
        // with requests, and in the receive-buffer size it asks for, which
        // a fork is told anew if the program has not read it.
        let key = matches!(nic, NicKind::Nanopu | NicKind::Nebula(_)).then(|| {
            let mut cfg = sys_cfg.clone();
            if let NicKind::Nebula(_) = nic {
                cfg.nic.kind = NicKind::Nebula(NebulaDesign::Nebula);
            }
            SeedKey {
                program: program.to_path_buf(),
                args: args.to_vec(),
                addresses,
                cfg,
                link_propagation_ps: load.link_propagation_ps,
            }
        });
        let forked = match (seed, &key) {
            (Some(seed), Some(key)) => seed.fork_for(key)?.filter(|node| {
                let wants = nic.nebula().map(|d| sys_cfg.nic.nebula.buffer_bytes(d));
                node.device::<nanopu_nics::nebula::queues::NebulaQueues>()
                    .is_none_or(|q| q.stats.size_reads == 0 || Some(q.buffer_bytes()) == wants)
            }),
            _ => None,
        };
        let node = match forked {
            Some(node) => node,
            None => {
                let mut node = nanopu_node::Node::with_program(sys_cfg.node.base.clone(), program)?;
                if !args.is_empty() {
                    let h = node.htif_mut().ok_or_else(|| {
                        fail!("{name} takes arguments but defines no `tohost` symbol to read them through")
                    })?;
                    h.args = std::iter::once(nanopu_node::loader::argv0(program))
                        .chain(args.iter().cloned())
                        .collect();
                }
                node
            }
        };
        let mut sys =
            System::with_addresses(node, &sys_cfg, Some(load.clone()), node_ip, client_ip)?;
        // Generous: a point that takes longer is broken, not slow. Open-loop
        // points last as long as their arrivals do; a closed loop as long as
        // its requests take one after another (a second covers 4,000 requests
        // of 250 us, an Othello search at depth 3 takes about 40).
        let until_us = match load.mode {
            LoadMode::Open { rate_mrps } | LoadMode::OpenTicked { rate_mrps, .. } => {
                self.boot_allowance.fs() / 1_000_000_000
                    + 3 * (load.count as f64 / rate_mrps) as u64
            }
            LoadMode::Closed { .. } => 1_000_000,
        };
        let until = SimTime::ZERO + SimDuration::from_us(until_us);
        let mut at_warmup = None;
        let seeding = matches!((seed, &key), (Some(s), Some(_)) if s.is_empty());
        let end = (|| {
            let mut ended = match (seed, key) {
                (Some(seed), Some(key)) if seeding => {
                    boot_seed::run_seeding(&mut sys, until, seed, key)?
                }
                _ => None,
            };
            if self.memory_window && ended.is_none() {
                let start = seed.and_then(BootSeed::client_start);
                ended = run_through_warmup(&mut sys, until, load.warmup, start, &mut at_warmup)?;
            }
            match ended {
                Some(end) => Ok(end),
                None => sys.run(until),
            }
        })()
        .map_err(|e| ExperimentError::from(e).during(format!("{name} with {load:?}")))?;
        if let (true, Some(seed), Some(at)) = (seeding, seed, sys.booted_at()) {
            seed.note_start(at);
            if self.memory_window && at_warmup.is_none() && !seed.is_empty() {
                // The seeding point ran past its warm-up between two of its
                // pauses: run it again from the seed, which knows when
                // the load starts.
                return self.measure_on_node(server, &load, Some(seed));
            }
        }
        let report = sys.load_report().expect("client attached");
        if end != SystemEnd::ClientDone {
            return Err(fail!(
                "{name}: {} of {} replies after {end:?}",
                report.received,
                load.count
            ));
        }
        if let Some(e) = &report.first_error {
            return Err(fail!(
                "{name}: {} wrong replies; first: {e}",
                report.wrong_replies
            ));
        }
        let st = sys.node().hart_stats(0);
        Ok(Measured {
            load: report,
            ctx_switches: st.ctx_switches,
            ctx_switch_mean_cycles: st.ctx_switch_cycles as f64 / st.ctx_switches as f64,
            memory: sys.node().memory_stats(),
            memory_at_warmup: at_warmup.map(|(m, t)| (m, t, sys.cluster().sim_time())),
        })
    }
}

/// Runs `sys` until its client has sent `warmup` requests, then keeps the
/// node's memory counters and the time in `at`; `Some` if the run ended
/// before. `start`: when the client starts, if known (else the boot is
/// crossed in steps of 100 us). Pausing changes nothing in the run
/// ([`System::run_pausing`]).
fn run_through_warmup(
    sys: &mut System,
    until: SimTime,
    warmup: u64,
    start: Option<SimTime>,
    at: &mut Option<(nanopu_node::memory::MemoryStats, SimTime)>,
) -> std::result::Result<Option<SystemEnd>, nanopu_system::SystemError> {
    // Pauses only move forward, even where nothing happens before them.
    let mut pause = sys.cluster().sim_time();
    loop {
        let (started, sent) = sys
            .client()
            .map_or((true, u64::MAX), |c| (c.started(), c.report.sent));
        if sent >= warmup {
            *at = Some((sys.node().memory_stats(), sys.cluster().sim_time()));
            return Ok(None);
        }
        // To the client's start, then fine steps through the warm-up.
        pause = match start {
            Some(t) if !started && t > pause => t,
            _ => pause + SimDuration::from_ns(if started { 200 } else { 100_000 }),
        };
        if pause >= until {
            return Ok(None);
        }
        if let Some(end) = sys.run_pausing(until, Some(pause))? {
            return Ok(Some(end));
        }
    }
}

/// `nanopu experiment NAME` and `nanopu reproduce`: runs experiments and
/// writes their results (and, for reproduce, the report) into `out`.
pub fn run_experiments(
    ids: &[String],
    out: &Path,
    cfg: SimConfig,
    scale: Scale,
    threads: Option<usize>,
    seed: u64,
    report: bool,
) -> Result<()> {
    let all = all();
    let chosen: Vec<&Experiment> = if ids.is_empty() {
        all.iter().collect()
    } else {
        ids.iter()
            .map(|id| {
                all.iter().find(|e| e.id == id).ok_or_else(|| {
                    let known: Vec<_> = all.iter().map(|e| e.id).collect();
                    ExperimentError::Unknown {
                        id: id.clone(),
                        known: known.join(", "),
                    }
                })
            })
            .collect::<Result<_>>()?
    };
    // A setting an experiment does not use: refused when experiments are
    // named, a note when the whole evaluation runs (each experiment uses
    // what it can of the configuration).
    for e in &chosen {
        if report {
            for (key, why) in e.unused_settings(&cfg) {
                eprintln!(
                    "note: {} does not use {key} of the configuration: {why}",
                    e.id
                );
            }
        } else {
            e.check_config(&cfg)?;
        }
    }
    std::fs::create_dir_all(out).map_err(|cause| ExperimentError::CreateDir {
        path: out.to_path_buf(),
        cause,
    })?;
    let config_toml = cfg.to_toml();
    let runner = Runner::new(cfg, scale, threads, seed);
    let mut results = Vec::new();
    // A failed experiment does not lose the others: its section in the
    // report says why, and the run fails at the end.
    let mut failed = Vec::new();
    let total = chosen.len();
    // Side by side, each on a thread of its own that works only while it
    // holds one of the runner's cores (see `cores`): the experiments
    // earlier in the report go first, later ones fill the cores they
    // leave idle.
    // The bar's label is the sweep that started last; its message says
    // how far the run is.
    let finished = AtomicUsize::new(0);
    let finished = &finished;
    let runs: Vec<Result<(ExperimentResult, Option<String>)>> = std::thread::scope(|s| {
        let threads: Vec<_> = chosen
            .iter()
            .enumerate()
            .map(|(rank, e)| {
                let r = runner.ranked(rank);
                std::thread::Builder::new()
                    .name(e.id.into())
                    // As the main thread's, where experiments used to run.
                    .stack_size(8 << 20)
                    .spawn_scoped(s, move || {
                        let _core = r.cores.hold(rank);
                        let (start, cpu) = (Instant::now(), thread_cpu_ns());
                        let result = e.run_on(&r);
                        let wall_s = start.elapsed().as_secs_f64();
                        r.add_cpu_since(cpu);
                        let done = finished.fetch_add(1, Ordering::Relaxed) + 1;
                        r.progress
                            .set_message(format!("({done} of {total} experiments done)"));
                        r.progress.println(format!(
                            "{}: done in {wall_s:.1} s ({:.1} s of host CPU)",
                            e.id,
                            r.cpu_s()
                        ));
                        let times = (wall_s, r.cpu_s());
                        settle(e, result, times, &r.progress, (!report).then_some(out))
                    })
                    .map_err(|cause| ExperimentError::Thread { id: e.id, cause })
            })
            .collect();
        threads
            .into_iter()
            .map(|t| t.map(|t| t.join().expect("experiments do not panic")))
            .collect::<Result<_>>()
    })?;
    for run in runs {
        let (r, failure) = run?;
        failed.extend(failure);
        results.push(r);
    }
    runner.progress.finish_and_clear();
    if report {
        results.extend(table1::summary(&results));
        let command: Vec<String> = std::env::args().collect();
        nanopu_report::write_report(out, &results, &config_toml, &command.join(" "))?;
        eprintln!("wrote {}", out.join("report.md").display());
    }
    for r in &results {
        for t in &r.targets {
            eprintln!(
                "{:>30}: measured {:>9.2} {:<5} published {:>7.2}",
                t.key, t.measured, t.unit, t.published
            );
        }
    }
    if !failed.is_empty() {
        return Err(ExperimentError::SomeFailed { failed, total });
    }
    Ok(())
}

/// Host CPU time the calling thread has used, in ns (0 if the host cannot
/// tell): what an experiment costs, whatever runs beside it.
pub fn thread_cpu_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec to write; the clock id is a constant.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0;
    if ok {
        t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
    } else {
        0
    }
}

/// Experiment `e`'s result (or, if it failed, a result saying why, and the
/// failure for the run's error), its files written into `out` if given, as
/// soon as it finished: a run stopped later keeps them.
fn settle(
    e: &Experiment,
    result: Result<ExperimentResult>,
    (wall_s, cpu_s): (f64, f64),
    progress: &ProgressBar,
    out: Option<&Path>,
) -> Result<(ExperimentResult, Option<String>)> {
    let (mut r, failure) = match result {
        Ok(r) => (r, None),
        Err(ExperimentError::Interrupted) => return Err(ExperimentError::Interrupted),
        Err(err) => {
            let err = err.during(format!("experiment {}", e.id));
            progress.println(format!("{}: FAILED: {err}", e.id));
            let failed = ExperimentResult {
                id: e.id.into(),
                title: e.title.into(),
                description: format!("**This experiment failed**: {err}"),
                figures: Vec::new(),
                targets: Vec::new(),
                notes: Vec::new(),
                wall_s: 0.0,
                cpu_s: 0.0,
            };
            (failed, Some(err.to_string()))
        }
    };
    (r.wall_s, r.cpu_s) = (wall_s, cpu_s);
    if let Some(out) = out {
        r.write(out)?;
    }
    Ok((r, failure))
}
