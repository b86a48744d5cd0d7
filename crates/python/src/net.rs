//! `net` (like `nanopu net`): a network of hosts from a configuration;
//! returns one record per workload message, the load generators' reports
//! and the network's and transports' counters.

use crate::config::effective;
use crate::errors::{config_error, simulation_error};
use crate::progress::{SameThread, Ticker};
use anyhow::anyhow;
use nanopu_sim::{SimDuration, SimTime};
use nanopu_system::cluster::{Cluster, ClusterEnd, StopWhen};
use nanopu_system::{memory, SystemError};
use pyo3::prelude::*;
use serde_json::json;
use std::time::Instant;

/// Simulated time between looks at signals.
const SLICE: SimDuration = SimDuration::from_us(10);

fn system_error(e: SystemError) -> PyErr {
    simulation_error(e)
}

/// The timeline `timeline=` asks for (every `sample`th message).
pub(crate) fn open_timeline(
    path: Option<std::path::PathBuf>,
    sample: u32,
) -> PyResult<Option<nanopu_timeline::Timeline>> {
    let Some(path) = path else { return Ok(None) };
    let mut opts = nanopu_timeline::TimelineOptions::new(path);
    opts.sample_every = sample;
    nanopu_timeline::Timeline::new(opts)
        .map(Some)
        .map_err(|e| config_error(anyhow!("timeline: {e}")))
}

/// Writes a run's timeline, if it has one.
pub(crate) fn finish_timeline(tl: &Option<nanopu_timeline::Timeline>) -> PyResult<()> {
    if let Some(tl) = tl {
        tl.finish()
            .map_err(|e| pyo3::exceptions::PyOSError::new_err(format!("timeline: {e}")))?;
    }
    Ok(())
}

/// Simulates the network of `config` for at most `until_us`; JSON.
#[pyfunction]
#[pyo3(signature = (config, until_us=100_000, progress=None, timeline=None, timeline_sample=1))]
pub fn net(
    py: Python<'_>,
    config: &str,
    until_us: u64,
    progress: Option<PyObject>,
    timeline: Option<std::path::PathBuf>,
    timeline_sample: u32,
) -> PyResult<String> {
    let timeline = open_timeline(timeline, timeline_sample)?;
    let until = SimDuration::try_from_us(until_us)
        .map_err(|e| config_error(anyhow!("until_us {until_us}: {e}")))?;
    let cfg = effective(config)?;
    let hosts = cfg.network.topology.hosts();
    let count = cfg.workload.message_count(hosts);
    memory::check(
        &format!("a workload of {count} messages"),
        memory::messages_estimate(count),
    )
    .map_err(config_error)?;
    let max_bytes = cfg
        .nic
        .max_message_bytes
        .min(cfg.nic.transport.largest_message(cfg.nic.mtu_payload_bytes));
    let messages = cfg
        .workload
        .generate(hosts, max_bytes)
        .map_err(config_error)?;
    memory::check_cluster(&cfg, &messages).map_err(config_error)?;
    let mut c = Cluster::new(&cfg).map_err(system_error)?;
    for m in &messages {
        c.send(*m).map_err(system_error)?;
    }
    if let Some(tl) = &timeline {
        nanopu_system::timeline::attach(&mut c, tl);
    }
    let until = SimTime::ZERO + until;
    let mut ticker = Ticker::new(progress, false);
    let start = Instant::now();
    let mut shared = SameThread(&mut c);
    py.allow_threads(|| -> PyResult<()> {
        let c = &mut **shared.get();
        // With nodes, the run pauses for progress rather than running to
        // each slice's end, which would cut the nodes' windows there and
        // could change their results (`nanopu net` runs in one piece). A
        // network of built-in hosts alone gives the same either way.
        let nodes = (0..c.hosts()).any(|h| c.node(h).is_some());
        let mut next = SimTime::ZERO;
        loop {
            next = (next + SLICE).min(until);
            if nodes {
                c.set_pause((next < until).then_some(next));
                let end = c.run_until(until, StopWhen::default());
                c.set_pause(None);
                let done = (next.as_ns() / 1e3) as u64;
                match end.map_err(system_error)? {
                    ClusterEnd::Paused => ticker.tick(done, until_us, &[])?,
                    _ => return ticker.finish(done, until_us, &[]),
                }
                continue;
            }
            let end = c
                .run_until(next, StopWhen::default())
                .map_err(system_error)?;
            // Idle before `until` while a node's cores are busy past the
            // slice is the slice's end, not the run's.
            let busy = || {
                (0..c.hosts()).any(|h| {
                    c.node(h)
                        .is_some_and(|n| n.exit().is_none() && n.output_horizon().is_some())
                })
            };
            let slice_end = end == ClusterEnd::TimeLimit || (end == ClusterEnd::Idle && busy());
            // Progress: simulated microseconds of `until_us`.
            let done = (next.as_ns() / 1e3) as u64;
            if !slice_end || next == until {
                return ticker.finish(done, until_us, &[]);
            }
            ticker.tick(done, until_us, &[])?;
        }
    })?;
    let wall_s = start.elapsed().as_secs_f64();
    finish_timeline(&timeline)?;
    let clients: Vec<_> = c
        .client_hosts()
        .to_vec()
        .into_iter()
        .filter_map(|h| c.client_report(h).map(|r| json!({"host": h, "load": r})))
        .collect();
    let ns_opt = |t: Option<SimTime>| t.map(|t| t.as_ns());
    let records = json!({
        "message": (0..messages.len()).collect::<Vec<_>>(),
        "from": messages.iter().map(|m| m.from).collect::<Vec<_>>(),
        "to": messages.iter().map(|m| m.to).collect::<Vec<_>>(),
        "bytes": messages.iter().map(|m| m.len).collect::<Vec<_>>(),
        "sent_ns": c.records.iter().map(|r| r.sent_at.as_ns()).collect::<Vec<_>>(),
        "delivered_ns": c.records.iter().map(|r| ns_opt(r.delivered_at)).collect::<Vec<_>>(),
        "failed": c.records.iter().map(|r| r.failed).collect::<Vec<_>>(),
        "deliveries": c.records.iter().map(|r| r.deliveries).collect::<Vec<_>>(),
        "reply_ns": c.records.iter().map(|r| ns_opt(r.reply_at)).collect::<Vec<_>>(),
    });
    let summary = json!({
        "hosts": c.hosts(),
        "nodes": (0..c.hosts()).filter(|&h| c.node(h).is_some()).count(),
        "protocol": cfg.nic.transport.protocol.name(),
        "sim_us": c.sim_time().as_ns() / 1e3,
        "wall_s": wall_s,
        "until_us": until_us,
        "events": c.events,
        "node_messages_sent": c.node_messages_sent,
        "node_messages_delivered": c.node_messages_delivered,
        "network": c.network().stats(),
        "transport": c.transport_stats(),
        "clients": clients,
        "records": records,
    });
    Ok(summary.to_string())
}
