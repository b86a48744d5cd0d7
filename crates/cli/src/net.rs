//! `nanopu net`: a network of hosts (nanoPU nodes running programs, or
//! built-in traffic hosts) from a configuration file.

use anyhow::{bail, Context, Result};
use nanopu_sim::{SimDuration, SimTime};
use nanopu_system::cluster::{Cluster, ClusterEnd, StopWhen};
use nanopu_system::memory;
use nanopu_system::Config;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(clap::Args, Debug)]
pub struct NetArgs {
    /// The network, hosts and workload (TOML; examples in configs/).
    pub config: PathBuf,
    /// Write what crosses one host's link (both directions) to this pcap file.
    #[arg(long)]
    pub pcap: Option<PathBuf>,
    /// The host whose link `--pcap` records.
    #[arg(long, default_value_t = 0, requires = "pcap")]
    pub pcap_host: usize,
    /// Stop after this much simulated time (us).
    #[arg(long, default_value_t = 100_000)]
    pub until_us: u64,
    /// Write the summary as JSON.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write one line per workload message (CSV).
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Simulate the network partitioned on this many host threads (results
    /// are the same for any number; networks of built-in hosts only: with
    /// nodes or load generators one thread runs it, and a note says so).
    /// Overrides the `threads` key; without either, the single event loop runs.
    /// The `partitions` key (default 4) is the most parts the leaves are
    /// grouped into, and the spines: raise it with more host cores.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Do not print what the nodes' programs wrote to their consoles (the
    /// JSON summary keeps it).
    #[arg(long)]
    pub no_console: bool,
    #[command(flatten)]
    pub timeline: crate::timeline_args::TimelineArgs,
}

/// What one node's program wrote and how it ended.
struct NodeEnd {
    host: usize,
    /// Console output (HTIF and UART), lossily decoded.
    console: String,
    /// Bytes the node did not keep (its output limit).
    dropped: u64,
    /// Exit code, if the program exited.
    exit: Option<u64>,
}

fn node_ends(c: &Cluster) -> Vec<NodeEnd> {
    (0..c.hosts())
        .filter_map(|h| {
            let n = c.node(h)?;
            let mut bytes = n.htif().map_or_else(Vec::new, |t| t.output.clone());
            bytes.extend_from_slice(n.uart_output());
            Some(NodeEnd {
                host: h,
                console: String::from_utf8_lossy(&bytes).into_owned(),
                dropped: n.htif().map_or(0, |t| t.output_dropped),
                exit: n.exit().map(|(code, _)| code),
            })
        })
        .collect()
}

/// Exit status of a run that stopped (`--until-us`) with workload messages
/// neither delivered nor failed, or load generators still waiting.
pub const EXIT_INCOMPLETE: u8 = 3;

fn parse(path: &Path) -> Result<Config> {
    Ok(Config::load(path)?)
}

/// The largest message the built-in hosts' NICs carry.
fn max_message_bytes(cfg: &Config) -> u32 {
    cfg.nic
        .max_message_bytes
        .min(cfg.nic.transport.largest_message(cfg.nic.mtu_payload_bytes))
}

fn percentiles(sorted: &[f64]) -> String {
    if sorted.is_empty() {
        return "no samples".into();
    }
    format!(
        "p50 {:.3}, p99 {:.3}, max {:.3}",
        percentile(sorted, 50.0),
        percentile(sorted, 99.0),
        percentile(sorted, 100.0)
    )
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

pub fn net(args: NetArgs) -> Result<u8> {
    let until = SimDuration::try_from_us(args.until_us)
        .map_err(|e| anyhow::anyhow!("--until-us {}: {e}", args.until_us))?;
    let mut file = parse(&args.config)?;
    if args.threads.is_some() {
        file.threads = args.threads;
    }
    let cfg = file.clone();
    let hosts = cfg.network.topology.hosts();
    if args.pcap.is_some() && args.pcap_host >= hosts {
        bail!(
            "--pcap-host {}: the network has hosts 0..{}",
            args.pcap_host,
            hosts - 1
        );
    }
    // Memory first: the workload's size, then the whole network's.
    let count = file.workload.message_count(hosts);
    memory::check(
        &format!("a workload of {count} messages"),
        memory::messages_estimate(count),
    )?;
    let messages = file.workload.generate(hosts, max_message_bytes(&file))?;
    memory::check_cluster(&cfg, &messages)?;
    let mut c = Cluster::new(&cfg)?;
    for m in &messages {
        c.send(*m)?;
    }
    if let Some(p) = &args.pcap {
        c.capture(args.pcap_host, p)?;
    }
    if args.timeline.timeline.is_some() && c.partitioning().is_some() {
        bail!("--timeline: a network partitioned on threads (--threads or `threads`) records no timeline; leave threads out");
    }
    let timeline = args.timeline.open()?;
    if let Some(tl) = &timeline {
        nanopu_system::timeline::attach(&mut c, tl);
    }
    let progress = if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        let p = indicatif::ProgressBar::new_spinner();
        p.set_message(format!("simulating {} hosts", c.hosts()));
        p.enable_steady_tick(std::time::Duration::from_millis(200));
        p
    } else {
        indicatif::ProgressBar::hidden()
    };
    let start = Instant::now();
    let stop = c.run_until(SimTime::ZERO + until, StopWhen::default())?;
    // The nodes' cores may have run on after the last event.
    let end = c.sim_time();
    let stopped = if stop == ClusterEnd::TimeLimit || end >= SimTime::ZERO + until {
        format!("at {} us (--until-us)", args.until_us)
    } else {
        format!(
            "at {:.3} us, with nothing left to happen",
            end.as_ns() / 1e3
        )
    };
    let wall = start.elapsed().as_secs_f64();
    progress.finish_and_clear();
    if let Some(note) = c.parallel_note() {
        eprintln!("note: {note}");
    }
    if let Some(tl) = &timeline {
        crate::timeline_args::finish(tl)?;
    }

    let mut lat: Vec<f64> = c
        .records
        .iter()
        .filter_map(|r| r.delivered_at.map(|t| (t - r.sent_at).as_ns() / 1e3))
        .collect();
    lat.sort_by(f64::total_cmp);
    let delivered = lat.len();
    let mut rpc: Vec<f64> = c
        .records
        .iter()
        .filter_map(|r| r.reply_at.map(|t| (t - r.sent_at).as_ns() / 1e3))
        .collect();
    rpc.sort_by(f64::total_cmp);
    let failed = c.records.iter().filter(|r| r.failed).count();
    let duplicates = c.records.iter().filter(|r| r.deliveries > 1).count();
    let clients: Vec<(usize, nanopu_system::LoadReport)> = c
        .client_hosts()
        .to_vec()
        .into_iter()
        .filter_map(|h| c.client_report(h).map(|r| (h, r)))
        .collect();
    let clients_wrong = clients
        .iter()
        .filter(|(_, r)| r.wrong_replies > 0 || r.lost > 0)
        .count();
    let clients_waiting = clients
        .iter()
        .filter(|(_, r)| r.received + r.lost + r.unexpected_replies < r.sent.max(1))
        .count();
    let ends = node_ends(&c);
    let exited_badly: Vec<&NodeEnd> = ends
        .iter()
        .filter(|e| e.exit.is_some_and(|code| code != 0))
        .collect();
    let ns = c.network_stats();
    let ts = c.transport_stats();
    let packets = ns.delivered_frames;
    // The retransmission timeout the transports ran with (raised to the
    // network's worst round trip unless the configuration says otherwise).
    let rtx_timeout_ns = Cluster::covering_rtx_timeout(&cfg, c.network())
        .ok()
        .flatten()
        .map_or(cfg.nic.transport.rtx_timeout_ns, |x| {
            x.nic.transport.rtx_timeout_ns
        });
    let summary = serde_json::json!({
        "hosts": c.hosts(),
        "nodes": (0..c.hosts()).filter(|&h| c.node(h).is_some()).count(),
        "protocol": cfg.nic.transport.protocol.name(),
        "messages": messages.len(),
        "delivered": delivered,
        "failed": failed,
        "delivered_twice": duplicates,
        "latency_us": {"p50": percentile(&lat, 50.0), "p99": percentile(&lat, 99.0), "max": percentile(&lat, 100.0)},
        "replies": rpc.len(),
        "rpc_us": {"p50": percentile(&rpc, 50.0), "p99": percentile(&rpc, 99.0), "max": percentile(&rpc, 100.0)},
        "clients": clients.iter().map(|(h, r)| serde_json::json!({"host": h, "load": r})).collect::<Vec<_>>(),
        "node_messages_sent": c.node_messages_sent,
        "node_messages_delivered": c.node_messages_delivered,
        "node_programs": ends.iter().map(|e| serde_json::json!({
            "host": e.host, "exit_code": e.exit.map(|c| c as i64), "console": e.console, "console_bytes_dropped": e.dropped,
        })).collect::<Vec<_>>(),
        "sim_us": end.as_ns() / 1e3,
        "wall_s": wall,
        "packets_delivered": packets,
        "packets_per_host_s": packets as f64 / wall,
        "sim_us_per_host_s": end.as_ns() / 1e3 / wall,
        "network": ns,
        "transport": ts,
        "rtx_timeout_ns": rtx_timeout_ns,
        "config": file,
    });
    let outstanding = messages.len().saturating_sub(delivered + failed);
    let mut o = String::new();
    writeln!(
        o,
        "{} hosts, {}: {} messages, {} delivered, {} failed, {} delivered twice",
        c.hosts(),
        cfg.nic.transport.protocol.name(),
        messages.len(),
        delivered,
        failed,
        duplicates
    )?;
    if !messages.is_empty() {
        writeln!(o, "latency (us): {}", percentiles(&lat))?;
    }
    if !rpc.is_empty() {
        writeln!(
            o,
            "{} replies; round trip (us): {}",
            rpc.len(),
            percentiles(&rpc)
        )?;
    }
    for (h, r) in &clients {
        writeln!(
            o,
            "client {h}: {} requests, {} replies, {} wrong, {} lost; response time at the server's wire (ns): p50 {:.1}, p99 {:.1}; {:.2} Mrps",
            r.sent, r.received, r.wrong_replies, r.lost, r.p50_ns, r.p99_ns, r.throughput_mrps
        )?;
        if let Some(app) = r.app {
            writeln!(
                o,
                "  {app}: response time at the client (ns): p50 {:.1}, p99 {:.1}{}",
                r.client_p50_ns,
                r.client_p99_ns,
                match r.retries {
                    0 => String::new(),
                    n => format!("; {n} retries"),
                }
            )?;
        }
        if let Some(e) = &r.first_error {
            writeln!(o, "  first wrong reply: {e}")?;
        }
    }
    if !c.node_sends.is_empty() || !c.node_deliveries.is_empty() {
        writeln!(
            o,
            "nodes' cores: {} messages sent, {} received",
            c.node_messages_sent, c.node_messages_delivered
        )?;
    }
    if !args.no_console {
        for e in ends.iter().filter(|e| !e.console.is_empty()) {
            for line in e.console.lines() {
                writeln!(o, "[host {}] {line}", e.host)?;
            }
            if e.dropped > 0 {
                writeln!(o, "[host {}] ... {} more bytes not kept", e.host, e.dropped)?;
            }
        }
    }
    if !ends.is_empty() {
        let exited = ends.iter().filter(|e| e.exit.is_some()).count();
        writeln!(
            o,
            "nodes' programs: {} of {} exited{}",
            exited,
            ends.len(),
            if exited_badly.is_empty() {
                String::new()
            } else {
                format!(
                    ", {} with a non-zero code ({})",
                    exited_badly.len(),
                    exited_badly
                        .iter()
                        .map(|e| format!("host {}: {}", e.host, e.exit.unwrap_or(0) as i64))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        )?;
    }
    writeln!(
        o,
        "network: {} packets delivered, {} trimmed, {} dropped; transport: {} retransmissions, {} timeouts (timeout {:.3} us)",
        packets,
        ns.total.trimmed,
        ns.total.dropped.total(),
        ts.tx_retransmissions,
        ts.tx_timeouts,
        rtx_timeout_ns as f64 / 1e3
    )?;
    writeln!(
        o,
        "simulated {:.3} us in {:.3} s: {:.3e} packets per host second",
        end.as_ns() / 1e3,
        wall,
        packets as f64 / wall
    )?;
    let code = if !exited_badly.is_empty() {
        writeln!(
            o,
            "result: FAILED: {} node program(s) exited with a non-zero code; exit 1",
            exited_badly.len()
        )?;
        1
    } else if clients_wrong > 0 {
        writeln!(
            o,
            "result: FAILED: {clients_wrong} load generator(s) got wrong replies or lost requests; exit 1"
        )?;
        1
    } else if failed > 0 {
        writeln!(
            o,
            "result: FAILED: {failed} of {} messages failed (their senders gave up); exit 1",
            messages.len()
        )?;
        1
    } else if duplicates > 0 {
        writeln!(
            o,
            "result: FAILED: {duplicates} of {} messages delivered more than once; exit 1",
            messages.len()
        )?;
        1
    } else if outstanding > 0 {
        writeln!(
            o,
            "result: INCOMPLETE: {outstanding} of {} messages neither delivered nor failed when the run stopped {stopped}; exit {EXIT_INCOMPLETE}",
            messages.len(),
        )?;
        EXIT_INCOMPLETE
    } else if clients_waiting > 0 {
        writeln!(
            o,
            "result: INCOMPLETE: {clients_waiting} load generator(s) still waiting for replies when the run stopped {stopped}; exit {EXIT_INCOMPLETE}",
        )?;
        EXIT_INCOMPLETE
    } else if messages.is_empty() && clients.is_empty() {
        let exited = ends.iter().filter(|e| e.exit.is_some()).count();
        if !ends.is_empty() && exited == ends.len() {
            writeln!(o, "result: ok: every node's program exited with code 0")?;
        } else {
            writeln!(o, "result: ok: no workload messages")?;
        }
        0
    } else {
        writeln!(
            o,
            "result: ok: every message delivered, every request answered"
        )?;
        0
    };
    crate::output::write_stdout(&o)?;
    if let Some(p) = &args.json {
        std::fs::write(p, serde_json::to_string_pretty(&summary)?)
            .with_context(|| format!("cannot write {}", p.display()))?;
    }
    if let Some(p) = &args.csv {
        let mut s =
            String::from("message,from,to,bytes,sent_ns,delivered_ns,latency_ns,failed,reply_ns\n");
        for (i, (m, r)) in messages.iter().zip(&c.records).enumerate() {
            let d = r.delivered_at.map(|t| t.as_ns());
            s.push_str(&format!(
                "{i},{},{},{},{},{},{},{},{}\n",
                m.from,
                m.to,
                m.len,
                r.sent_at.as_ns(),
                d.map_or(String::new(), |d| d.to_string()),
                d.map_or(String::new(), |d| (d - r.sent_at.as_ns()).to_string()),
                r.failed,
                r.reply_at.map_or(String::new(), |t| t.as_ns().to_string())
            ));
        }
        std::fs::write(p, s).with_context(|| format!("cannot write {}", p.display()))?;
    }
    Ok(code)
}
