//! `nanopu net`: a network of hosts (nanoPU nodes running programs, or
//! built-in traffic hosts) from a configuration file.

use anyhow::{Context, Result};
use nanopu_sim::{SimDuration, SimTime};
use nanopu_system::cluster::Cluster;
use nanopu_system::Config;
use std::io::Write;
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
    #[arg(long, default_value_t = 0)]
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
}

fn parse(path: &Path) -> Result<Config> {
    Ok(Config::load(path)?)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

pub fn net(args: NetArgs) -> Result<u8> {
    let file = parse(&args.config)?;
    let cfg = file.clone();
    let mut c = Cluster::new(&cfg)?;
    let messages = file
        .workload
        .generate(c.hosts())
        .map_err(|e| anyhow::anyhow!("workload.{e}"))?;
    for m in &messages {
        c.send(*m)?;
    }
    if let Some(p) = &args.pcap {
        c.capture(args.pcap_host, p)?;
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
    let until = SimTime::ZERO + SimDuration::from_us(args.until_us);
    let end = c.run(until)?;
    let wall = start.elapsed().as_secs_f64();
    progress.finish_and_clear();

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
    let client_failures = clients
        .iter()
        .filter(|(_, r)| r.received < r.sent || r.wrong_replies > 0 || r.lost > 0)
        .count();
    let ns = c.network().stats();
    let ts = c.transport_stats();
    let packets = ns.delivered_frames;
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
        "node_messages_sent": c.node_sends.len(),
        "node_messages_delivered": c.node_deliveries.len(),
        "sim_us": end.as_ns() / 1e3,
        "wall_s": wall,
        "packets_delivered": packets,
        "packets_per_host_s": packets as f64 / wall,
        "sim_us_per_host_s": end.as_ns() / 1e3 / wall,
        "network": ns,
        "transport": ts,
        "config": file,
    });
    // A closed pipe (`| head`) is not an error worth a panic.
    let mut o = std::io::stdout().lock();
    let _ = writeln!(
        o,
        "{} hosts, {}: {} messages, {} delivered, {} failed, {} delivered twice",
        c.hosts(),
        cfg.nic.transport.protocol.name(),
        messages.len(),
        delivered,
        failed,
        duplicates
    );
    if delivered > 0 {
        let _ = writeln!(
            o,
            "latency (us): p50 {:.3}, p99 {:.3}, max {:.3}",
            percentile(&lat, 50.0),
            percentile(&lat, 99.0),
            percentile(&lat, 100.0)
        );
    }
    if !rpc.is_empty() {
        let _ = writeln!(
            o,
            "{} replies; round trip (us): p50 {:.3}, p99 {:.3}, max {:.3}",
            rpc.len(),
            percentile(&rpc, 50.0),
            percentile(&rpc, 99.0),
            percentile(&rpc, 100.0)
        );
    }
    for (h, r) in &clients {
        let _ = writeln!(
            o,
            "client {h}: {} requests, {} replies, {} wrong, {} lost; response time at the server's wire (ns): p50 {:.1}, p99 {:.1}; {:.2} Mrps",
            r.sent, r.received, r.wrong_replies, r.lost, r.p50_ns, r.p99_ns, r.throughput_mrps
        );
    }
    if !c.node_sends.is_empty() || !c.node_deliveries.is_empty() {
        let _ = writeln!(
            o,
            "nodes' cores: {} messages sent, {} received",
            c.node_sends.len(),
            c.node_deliveries.len()
        );
    }
    let _ = writeln!(
        o,
        "network: {} packets delivered, {} trimmed, {} dropped; transport: {} retransmissions, {} timeouts",
        packets,
        ns.total.trimmed,
        ns.total.dropped.total(),
        ts.tx_retransmissions,
        ts.tx_timeouts
    );
    let _ = writeln!(
        o,
        "simulated {:.3} us in {:.3} s: {:.3e} packets per host second",
        end.as_ns() / 1e3,
        wall,
        packets as f64 / wall
    );
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
    Ok(
        if failed > 0 || delivered + failed < messages.len() || client_failures > 0 {
            1
        } else {
            0
        },
    )
}
