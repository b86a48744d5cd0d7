//! `run` (like `nanopu run`) and `load` (like `nanopu run --load`): one
//! program on one node, alone or behind its NIC driven by the load
//! generator. Both run in slices so that Ctrl-C and progress are seen.

use crate::config::effective;
use crate::errors::{config_error, node_error, simulation_error};
use crate::progress::{SameThread, Ticker};
use anyhow::anyhow;
use nanopu_node::{Node, RunEnd};
use nanopu_sim::{SimDuration, SimTime};
use nanopu_system::{NicKind, System, SystemEnd, SystemError};
use pyo3::prelude::*;
use serde_json::json;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Cycles a plain run goes between looks at signals (the node's own
/// `STOP_CHECK_CYCLES`: a quarter of a millisecond at 3.2 GHz).
const SLICE_CYCLES: u64 = nanopu_node::node::STOP_CHECK_CYCLES;

/// Simulated time a load run goes between looks at signals.
const SLICE: SimDuration = SimDuration::from_us(10);

/// argv of the program: its file name, then `args`.
fn argv(program: &Path, args: &[String]) -> Vec<String> {
    std::iter::once(nanopu_node::loader::argv0(program))
        .chain(args.iter().cloned())
        .collect()
}

fn ipv4(what: &str, text: &str) -> PyResult<Ipv4Addr> {
    text.parse()
        .map_err(|e| config_error(anyhow!("{what} {text:?}: {e}")))
}

fn output(node: &Node) -> &[u8] {
    node.htif().map_or(&[], |h| &h.output)
}

fn system_error(e: SystemError) -> PyErr {
    match e {
        SystemError::Node(e) => node_error(e),
        e => simulation_error(e),
    }
}

/// Runs `program` on a node until it exits; returns the `--stats-json`
/// record (and the output, warnings) as JSON.
#[pyfunction]
#[pyo3(signature = (program, config, cores=None, args=Vec::new(), max_cycles=None, echo=false, progress=None))]
#[allow(clippy::too_many_arguments)]
pub fn run(
    py: Python<'_>,
    program: PathBuf,
    config: &str,
    cores: Option<usize>,
    args: Vec<String>,
    max_cycles: Option<u64>,
    echo: bool,
    progress: Option<PyObject>,
) -> PyResult<String> {
    let mut cfg = effective(config)?;
    cfg.check_one_node("`nanopu.run`").map_err(config_error)?;
    if let Some(n) = cores {
        cfg.node.cores = n;
    }
    let mut node = Node::with_program(cfg.node.base.clone(), &program).map_err(node_error)?;
    let mut warnings = Vec::new();
    match node.htif_mut() {
        Some(h) => h.args = argv(&program, &args),
        None => warnings.push(format!(
            "{} defines no `tohost` symbol: it cannot print or report an exit code",
            program.display()
        )),
    }
    let limit = max_cycles.unwrap_or(u64::MAX);
    let total = max_cycles.unwrap_or(0);
    let mut ticker = Ticker::new(progress, echo);
    let start = Instant::now();
    let end = py.allow_threads(|| -> PyResult<RunEnd> {
        let mut next = 0u64;
        loop {
            next = next.saturating_add(SLICE_CYCLES).min(limit);
            // Paused, not run to `next`: a run cut at `next` would end the
            // harts' slices there and could change a multi-core program's
            // results. A pause may come inside a slice, which the next call
            // goes on with (`Node::run_pausing`): the same numbers as
            // `nanopu run`.
            let pause = (next < limit).then_some(next);
            match node.run_pausing(limit, pause).map_err(node_error)? {
                Some(end) => {
                    let done = node.lead_cycle().unwrap_or(next);
                    ticker.finish(done, total, output(&node))?;
                    return Ok(end);
                }
                None => ticker.tick(next, total, output(&node))?,
            }
        }
    })?;
    let wall_s = start.elapsed().as_secs_f64();
    if let Some(h) = node.htif() {
        for (num, count) in &h.unsupported {
            warnings.push(format!(
                "the program made {count} unsupported HTIF syscall(s) number {num}"
            ));
        }
    }
    let code = match end {
        RunEnd::Exited(code) => code,
        RunEnd::Limit => {
            let waits = node.describe_waits();
            return Err(simulation_error(anyhow!(
                "the program did not exit within max_cycles {limit}\n{waits}"
            )));
        }
    };
    let (_, exit_hart) = node.exit().expect("exited");
    let instret = node.instret();
    let executed = node.executed_instret();
    let stats = json!({
        "exit_code": code,
        "cycles": node.cycle(exit_hart),
        "instret": instret,
        "sim_ns": node.time_fs(exit_hart) as f64 / 1e6,
        "wall_s": wall_s,
        "executed_instret": executed,
        // Host speed: instructions executed one by one (not those of
        // skipped polling loops) per host second.
        "mips": executed as f64 / wall_s.max(1e-9) / 1e6,
        "harts": node.hart_summaries(),
        "stdout": String::from_utf8_lossy(output(&node)),
        "output_dropped": node.htif().map_or(0, |h| h.output_dropped),
        "warnings": warnings,
    });
    Ok(stats.to_string())
}

/// Drives `program` behind its NIC with the load generator of the
/// configuration's `[load]` table (as `nanopu run --load`); returns the
/// report, the NIC's counters and every measured request as JSON.
#[pyfunction]
#[pyo3(signature = (program, config, args=Vec::new(), nic=None, node_ip=None, client_ip=None, max_sim_ms=1000, echo=false, progress=None, timeline=None, timeline_sample=1))]
#[allow(clippy::too_many_arguments)]
pub fn load(
    py: Python<'_>,
    program: PathBuf,
    config: &str,
    args: Vec<String>,
    nic: Option<String>,
    node_ip: Option<String>,
    client_ip: Option<String>,
    max_sim_ms: u64,
    echo: bool,
    progress: Option<PyObject>,
    timeline: Option<PathBuf>,
    timeline_sample: u32,
) -> PyResult<String> {
    let timeline = crate::net::open_timeline(timeline, timeline_sample)?;
    let mut cfg = effective(config)?;
    cfg.check_one_node("`nanopu.load`").map_err(config_error)?;
    let node_ip = node_ip.map(|a| ipv4("node_ip", &a)).transpose()?;
    let client_ip = client_ip.map(|a| ipv4("client_ip", &a)).transpose()?;
    if let Some(n) = &nic {
        cfg.nic.kind = n
            .parse::<NicKind>()
            .map_err(|e| config_error(anyhow!("nic {n}: {e}")))?;
    }
    cfg.node.icenic.enabled = cfg.nic.kind == NicKind::Icenic;
    if let Some(ip) = node_ip {
        cfg.node.icenic.ipv4 = ip;
    }
    let mut node = Node::with_program(cfg.node.base.clone(), &program).map_err(node_error)?;
    if let Some(h) = node.htif_mut() {
        h.args = argv(&program, &args);
    }
    let load = cfg.load.clone();
    let count = load.count;
    let until = SimDuration::try_from_ms(max_sim_ms)
        .map_err(|e| config_error(anyhow!("max_sim_ms {max_sim_ms}: {e}")))?;
    load.validate(&cfg.nic, cfg.network.link.gbps)
        .map_err(config_error)?;
    nanopu_system::memory::check(
        &format!(
            "the load generator's state for up to {} outstanding requests",
            load.max_outstanding()
        ),
        nanopu_system::memory::load_estimate(&load),
    )
    .map_err(config_error)?;
    let node_ip = node_ip.unwrap_or(Ipv4Addr::from_bits(nanopu_system::NODE_IP));
    let client_ip = client_ip.unwrap_or(Ipv4Addr::from_bits(nanopu_system::CLIENT_IP));
    let mut sys =
        System::with_addresses(node, &cfg, Some(load), node_ip, client_ip).map_err(system_error)?;
    if let Some(c) = sys.client_mut() {
        c.series = Some(Vec::new());
    }
    if let Some(tl) = &timeline {
        sys.set_timeline(tl);
    }
    let until = SimTime::ZERO + until;
    let mut ticker = Ticker::new(progress, echo);
    let start = Instant::now();
    let mut shared = SameThread(&mut sys);
    let end = py.allow_threads(|| -> PyResult<SystemEnd> {
        let sys = &mut **shared.get();
        let mut next = SimTime::ZERO;
        loop {
            next = (next + SLICE).min(until);
            // Paused, not run to `next`: a run cut at `next` would end the
            // node's window there and could change the results (`nanopu run
            // --load` runs in one piece; both give the same numbers).
            let pause = (next < until).then_some(next);
            let end = sys.run_pausing(until, pause).map_err(system_error)?;
            // Progress: requests answered (or lost) of `count`.
            let done = sys
                .client()
                .map_or(0, |c| c.report.received + c.report.lost);
            let out = output(sys.node());
            match end {
                Some(end) => {
                    ticker.finish(done, count, out)?;
                    return Ok(end);
                }
                None => ticker.tick(done, count, out)?,
            }
        }
    })?;
    let wall_s = start.elapsed().as_secs_f64();
    crate::net::finish_timeline(&timeline)?;
    let report = sys.load_report().expect("a client is attached");
    match end {
        SystemEnd::ClientDone => {}
        SystemEnd::Exited(code) => {
            return Err(simulation_error(anyhow!(
                "the program exited with code {code} after {} of {} replies",
                report.received,
                report.sent
            )))
        }
        SystemEnd::TimeLimit => {
            return Err(simulation_error(anyhow!(
                "only {} of {} replies arrived within {} ms of simulated time{}",
                report.received,
                count,
                max_sim_ms,
                if sys.booted_at().is_none() {
                    " (the program never sent its boot message; use start = { at-ns = T } to start without it)"
                } else {
                    ""
                }
            )))
        }
    }
    let (status, result) = if let Some(e) = &report.first_error {
        (
            "failed",
            format!(
                "result: FAILED: {} of {} replies were wrong; first: {e}",
                report.wrong_replies, report.received
            ),
        )
    } else if report.lost > 0 {
        (
            "incomplete",
            format!(
                "result: INCOMPLETE: {} of {} requests got no reply within timeout_ns {}{}",
                report.lost,
                report.sent,
                cfg.load.timeout_ns,
                if report.received == 0 {
                    " (all lost)"
                } else {
                    ""
                }
            ),
        )
    } else {
        ("ok", "result: ok".to_string())
    };
    let series = sys
        .client_mut()
        .and_then(|c| c.series.take())
        .unwrap_or_default();
    let stats = json!({
        "status": status,
        "result": result,
        "load": report,
        "nic": sys.nic_stats_json(),
        "icenic": sys.node().device::<nanopu_system::nics::icenic::IceNic>().map(|n| n.stats.clone()),
        "delivery_failures": sys.delivery_failures(),
        "late_events": sys.late_events(),
        "booted_at_ns": sys.booted_at().map(|t| t.as_ns()),
        "instret": sys.node().instret(),
        "harts": sys.node().hart_summaries(),
        "wall_s": wall_s,
        "stdout": String::from_utf8_lossy(output(sys.node())),
        "requests": {
            "sent_ns": series.iter().map(|(t, _)| t.as_ns()).collect::<Vec<_>>(),
            "latency_ns": series.iter().map(|(_, d)| d.as_ns()).collect::<Vec<_>>(),
        },
    });
    Ok(stats.to_string())
}
