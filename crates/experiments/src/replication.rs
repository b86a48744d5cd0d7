//! Applications of nanoPU §5.3 that span hosts: one-sided RDMA in software
//! (Table 2), chain replication and Raft (Table 1), and Raft losing its
//! leader. Each runs its guest program on nanoPU nodes of a `nanopu net`
//! cluster, driven by the built-in load generator with the application's
//! client (`nanopu_apps`), which checks every reply against its oracle;
//! response times are the client's (first send of a request to the last
//! bit of its reply), as the paper measures these three.

use super::{Experiment, Runner, Scale};
use crate::{ensure, fail, Result};
use nanopu_apps::chain::ChainConfig;
use nanopu_apps::raft::RaftConfig;
use nanopu_apps::rdma::{RdmaConfig, RdmaOps};
use nanopu_apps::AppConfig;
use nanopu_network::{host_ip, NetworkConfig, TopologyConfig};
use nanopu_report::{ExperimentResult, Figure, Series, Target};
use nanopu_sim::{SimDuration, SimTime};
use nanopu_system::cluster::{
    ClientSpec, Cluster, ClusterConfig, ClusterEnd, HostProgram, StopWhen,
};
use nanopu_system::host::Host;
use nanopu_system::{LoadConfig, LoadMode, LoadReport};
use std::collections::BTreeSet;

pub fn experiments() -> Vec<Experiment> {
    vec![
        Experiment {
            id: "rdma",
            title: "One-sided RDMA in software (nanoPU Table 2)",
            run: rdma,
            fixed: crate::Fixed::NONE,
            memory: crate::memory::Memory::AsConfigured,
        },
        Experiment {
            id: "chain",
            title: "Chain replication (nanoPU Table 1)",
            run: chain,
            fixed: crate::Fixed::NONE,
            memory: crate::memory::Memory::Prototype,
        },
        Experiment {
            id: "raft",
            title: "Raft: steady state (nanoPU Table 1) and a failed leader",
            run: raft,
            fixed: crate::Fixed::NONE,
            memory: crate::memory::Memory::Prototype,
        },
    ]
}

/// One-way latency from client to server through the switch and both
/// links in the RDMA setup. Source: nanoPU §5.3 / Table 2: "the one-way
/// latency through the switch and links is 300ns".
pub const RDMA_ONE_WAY_PS: u64 = 300_000;

/// What one cluster run of an application gave.
pub struct AppRun {
    pub report: LoadReport,
    /// Per measured request: (first send, response time at the client), us.
    pub series: Vec<(f64, f64)>,
    /// The server stopped mid-run (Raft's leader), if any, and when (us).
    pub stopped: Option<(usize, f64)>,
    /// The servers that sent the client something (answers, redirections)
    /// after the stop.
    pub answered_after_stop: BTreeSet<usize>,
    /// The server that sent the client its last message.
    pub last_server: Option<usize>,
}

impl AppRun {
    /// The longest response time (us) of the requests answered after the
    /// stop (those a failover delays), if a server was stopped.
    pub fn failover_gap_us(&self) -> Option<f64> {
        let (_, at) = self.stopped?;
        self.series
            .iter()
            .filter(|(sent, l)| sent + l > at)
            .map(|&(_, l)| l)
            .reduce(f64::max)
    }
}

/// `servers` hosts (0..servers) running `program` with the replica
/// arguments (own address, then every server's), and one client (host
/// `servers`) driving `app` with server list 0..servers, closed loop,
/// one request outstanding.
pub fn app_cluster(
    r: &Runner,
    program: &str,
    servers: usize,
    network: NetworkConfig,
    app: AppConfig,
    count: u64,
    timeout_ns: u64,
) -> Result<ClusterConfig> {
    let replicas: Vec<String> = (0..servers)
        .map(|h| std::net::Ipv4Addr::from(host_ip(h)).to_string())
        .collect();
    let args = if servers > 1 {
        std::iter::once("{ip}".to_string())
            .chain(replicas)
            .collect()
    } else {
        Vec::new()
    };
    let mut node = r.cfg.node.clone();
    // The programs run on hart 0 only.
    node.cores = 1;
    Ok(ClusterConfig {
        network: NetworkConfig {
            topology: TopologyConfig::SingleSwitch { hosts: servers + 1 },
            ..network
        },
        nic: r.cfg.nic.clone(),
        node,
        programs: vec![HostProgram {
            hosts: format!("0-{}", servers - 1),
            program: r.program(program)?,
            nic: None,
            args,
        }],
        clients: vec![ClientSpec {
            hosts: servers.to_string(),
            server: 0,
            servers: (1..servers).collect(),
            load: LoadConfig {
                count,
                warmup: (count / 20).clamp(1, 100),
                mode: LoadMode::Closed { window: 1 },
                seed: r.seed,
                timeout_ns,
                app: Some(app),
                ..LoadConfig::default()
            },
        }],
        ..Default::default()
    })
}

/// Runs `cfg` (built by [`app_cluster`]) until its client is done; with
/// `stop_leader`, once half the requests are answered the server that
/// answered the last one stops (a crash: `Network::stop_host`).
pub fn run_app(cfg: &ClusterConfig, stop_leader: bool) -> Result<AppRun> {
    let client = cfg.network.topology.hosts() - 1;
    let count = cfg.clients[0].load.count;
    let mut c = Cluster::new(cfg)?;
    client_mut(&mut c, client)?.series = Some(Vec::new());
    let stop = StopWhen {
        clients_done: true,
        node_exits: true,
    };
    // Generous: a run that takes this long is broken, not slow.
    let limit = SimTime::ZERO + SimDuration::from_us(100_000 + 50 * count);
    let mut stopped = None;
    if stop_leader {
        let mut t = SimTime::ZERO;
        while client_mut(&mut c, client)?.report.received < count / 2 {
            t += SimDuration::from_us(5);
            let end = c.run_until(t, stop)?;
            // Idle: the queue was empty at the slice's end (nodes may
            // still run: Raft's timers).
            ensure!(
                matches!(end, ClusterEnd::TimeLimit | ClusterEnd::Idle) && t < limit,
                "the client did not get half its replies ({end:?})"
            );
        }
        let client_ip = host_ip(client);
        let leader = c
            .node_sends
            .iter()
            .rev()
            .find(|m| m.peer_ip == client_ip)
            .map(|m| m.host)
            .ok_or_else(|| fail!("no server answered the client"))?;
        c.network_mut().stop_host(leader, t);
        stopped = Some((leader, t));
    }
    let end = c.run_until(limit, stop)?;
    if end != ClusterEnd::ClientsDone {
        return Err(fail!("the client is not done: the run ended with {end:?}"));
    }
    let report = c
        .client_report(client)
        .ok_or_else(|| fail!("host {client} is not a load generator"))?;
    if let Some(e) = &report.first_error {
        return Err(fail!("{} wrong replies; first: {e}", report.wrong_replies));
    }
    ensure!(
        report.received == count && report.lost == 0,
        "{} of {count} requests answered, {} lost",
        report.received,
        report.lost
    );
    let series = client_mut(&mut c, client)?
        .series
        .take()
        .unwrap_or_default()
        .into_iter()
        .map(|(sent, d)| (sent.fs() as f64 / 1e9, d.as_ns() / 1e3))
        .collect();
    let answered_after_stop = match stopped {
        Some((_, at)) => c
            .node_sends
            .iter()
            .filter(|m| m.at > at && m.peer_ip == host_ip(client))
            .map(|m| m.host)
            .collect(),
        None => BTreeSet::new(),
    };
    let last_server = c
        .node_sends
        .iter()
        .rev()
        .find(|m| m.peer_ip == host_ip(client))
        .map(|m| m.host);
    Ok(AppRun {
        report,
        series,
        stopped: stopped.map(|(h, at)| (h, at.fs() as f64 / 1e9)),
        answered_after_stop,
        last_server,
    })
}

fn client_mut(c: &mut Cluster, h: usize) -> Result<&mut nanopu_system::client::Client> {
    match c.host_mut(h) {
        Host::Client(ch) => ch
            .client
            .as_mut()
            .ok_or_else(|| fail!("host {h} has no load generator")),
        _ => Err(fail!("host {h} is not a load generator")),
    }
}

fn us(ns: f64) -> f64 {
    ns / 1e3
}

/// The network of the RDMA setup: the configuration's links, and a switch
/// whose forwarding latency makes the one-way client-to-server latency
/// [`RDMA_ONE_WAY_PS`].
pub fn rdma_network(r: &Runner) -> Result<NetworkConfig> {
    let mut n = r.cfg.network.clone();
    let links = 2 * n.link.host_propagation_ps;
    n.switch.forwarding_latency_ps = RDMA_ONE_WAY_PS.checked_sub(links).ok_or_else(|| {
        fail!(
            "network.link.host_propagation_ps = {}: two links exceed the 300 ns one-way latency of the RDMA setup",
            n.link.host_propagation_ps
        )
    })?;
    Ok(n)
}

const RDMA_PUBLISHED: [(RdmaOps, &str, f64, f64); 5] = [
    (RdmaOps::Read, "Read", 678.0, 680.0),
    (RdmaOps::Write, "Write", 679.0, 686.0),
    (RdmaOps::Cas, "Compare-and-Swap", 687.0, 690.0),
    (RdmaOps::Faa, "Fetch-and-Add", 688.0, 692.0),
    (RdmaOps::IndirectRead, "Indirect Read", 691.0, 715.0),
];

fn rdma(r: &Runner) -> Result<ExperimentResult> {
    let count = match r.scale {
        Scale::Quick => 200,
        Scale::Full => 2000,
    };
    let network = rdma_network(r)?;
    let cfgs = RDMA_PUBLISHED
        .iter()
        .map(|&(ops, ..)| {
            let app = AppConfig::Rdma(RdmaConfig {
                ops,
                ..RdmaConfig::default()
            });
            app_cluster(r, "rdma_server", 1, network.clone(), app, count, 1_000_000)
        })
        .collect::<Result<Vec<_>>>()?;
    let runs = r.par_map("rdma", &cfgs, |c| run_app(c, false))?;
    let mut table = vec![
        "| operation | median (ns) | p90 (ns) | paper median | paper p90 |".to_string(),
        "|---|---|---|---|---|".to_string(),
    ];
    let mut targets = Vec::new();
    let mut measured = Vec::new();
    let mut published = Vec::new();
    for (i, (&(ops, name, p50, p90), run)) in RDMA_PUBLISHED.iter().zip(&runs).enumerate() {
        let m = &run.report;
        table.push(format!(
            "| {name} | {:.0} | {:.0} | {p50:.0} | {p90:.0} |",
            m.client_p50_ns, m.client_p90_ns
        ));
        measured.push((i as f64, m.client_p50_ns));
        published.push((i as f64, p50));
        targets.extend(Target::from_table(
            &format!("rdma-{}-p50-ns", ops.name()),
            m.client_p50_ns,
            format!(
                "{name}, median at the client; p90 {:.0} ns",
                m.client_p90_ns
            ),
        ));
    }
    Ok(ExperimentResult {
        id: "rdma".into(),
        title: "One-sided RDMA in software (nanoPU Table 2)".into(),
        description: format!(
            "A client and a nanoPU node (one core running `rdma_server`) on one switch; one-way latency \
             through the switch and links {} ns (links {} ns each, the switch the rest). The server keeps a 32 KB \
             region and serves read, write, compare-and-swap, fetch-and-add and indirect read of one 8-byte word \
             straight from netRX to netTX. {count} requests per operation, one outstanding at a time, each \
             checked against a model of the region; response time at the client, first bit of the request \
             sent to last bit of the reply received.",
            RDMA_ONE_WAY_PS / 1000,
            network.link.host_propagation_ps as f64 / 1000.0
        ),
        figures: vec![Figure {
            name: "rdma-ops".into(),
            title: "One-sided RDMA: median latency per operation (0 read, 1 write, 2 CAS, 3 FAA, 4 indirect read)".into(),
            x_label: "operation".into(),
            y_label: "median latency at the client (ns)".into(),
            series: vec![Series::new("nanoPU", measured)],
            published: vec![Series::new("nanoPU", published)],
            ..Default::default()
        }],
        targets,
        notes: vec![
            table.join("\n"),
            "Our client is the built-in load generator on the wire: the paper's client is a nanoPU node, whose \
             own NIC (MAC and serial I/O, pipeline, register file) adds its transmit and receive latency, some \
             tens of ns, to every operation."
                .into(),
            "The published baseline, a commercial RDMA NIC on the same topology, is about 2 us (eRPC §7 via nanoPU \
             §5.3); the nanoPU's gain is the PCIe crossings it avoids on both hosts."
                .into(),
        ],
        wall_s: 0.0,
        cpu_s: 0.0,
    })
}

fn chain(r: &Runner) -> Result<ExperimentResult> {
    let count = match r.scale {
        Scale::Quick => 300,
        Scale::Full => 10_000,
    };
    let network = r.cfg.network.clone();
    let mixes = [("writes", 0.0), ("reads", 0.9)];
    let cfgs = mixes
        .iter()
        .map(|&(_, read_fraction)| {
            let app = AppConfig::Chain(ChainConfig {
                read_fraction,
                ..ChainConfig::default()
            });
            app_cluster(r, "chain_server", 3, network.clone(), app, count, 1_000_000)
        })
        .collect::<Result<Vec<_>>>()?;
    let runs = r.par_map("chain", &cfgs, |c| run_app(c, false))?;
    let (w, rd) = (&runs[0].report, &runs[1].report);
    let hop_ns =
        (network.switch.forwarding_latency_ps + 2 * network.link.host_propagation_ps) as f64 / 1e3;
    Ok(ExperimentResult {
        id: "chain".into(),
        title: "Chain replication (nanoPU Table 1)".into(),
        description: format!(
            "Three nanoPU nodes (one core each, `chain_server`, a key-value store of 16 B keys and 64 B values) \
             form a chain, head to tail, with a client on one switch ({} ns forwarding, links {} ns). A write goes \
             to the head, is applied by each replica in turn and acknowledged by the tail; a read is served by \
             the tail. {count} requests on 1000 keys, one outstanding at a time, every reply checked against a model \
             of the store; response time at the client.",
            network.switch.forwarding_latency_ps as f64 / 1e3,
            network.link.host_propagation_ps as f64 / 1e3,
        ),
        figures: vec![],
        targets: vec![
            Target::from_table(
                "chain-p50-us",
                us(w.client_p50_ns),
                "writes (head to tail, the tail answers)",
            )
            .unwrap_or_default(),
            Target::from_table("chain-p99-us", us(w.client_p99_ns), "writes").unwrap_or_default(),
        ],
        notes: vec![
            format!(
                "| requests | p50 (us) | p99 (us) |\n|---|---|---|\n| writes | {:.2} | {:.2} |\n| 90 % reads, 10 % writes | {:.2} | {:.2} |",
                us(w.client_p50_ns),
                us(w.client_p99_ns),
                us(rd.client_p50_ns),
                us(rd.client_p99_ns)
            ),
            format!(
                "A write crosses the network four times (client, head, middle, tail, client), {hop_ns:.0} ns each \
                 in this topology: at least {:.2} us before any NIC or core time. The paper does not say what its \
                 1.10 / 1.40 us measure (reads, writes or a mix) nor its chain's topology; a read crosses twice \
                 (at least {:.2} us). We report writes, the replicated path.",
                4.0 * hop_ns / 1e3,
                2.0 * hop_ns / 1e3
            ),
        ],
        wall_s: 0.0,
        cpu_s: 0.0,
    })
}

/// Client timeout of the failover run: a request unanswered this long is
/// re-sent to the next server. Assumption: ten steady-state response
/// times, far below the servers' 40-80 us election timeouts.
pub const RAFT_FAILOVER_TIMEOUT_NS: u64 = 25_000;

fn raft(r: &Runner) -> Result<ExperimentResult> {
    let (count, failover_count) = match r.scale {
        Scale::Quick => (300, 300),
        Scale::Full => (10_000, 2_000),
    };
    let network = r.cfg.network.clone();
    let app = AppConfig::Raft(RaftConfig::default());
    let cfgs = [
        (
            app_cluster(r, "raft", 3, network.clone(), app.clone(), count, 1_000_000)?,
            false,
        ),
        (
            app_cluster(
                r,
                "raft",
                3,
                network.clone(),
                app,
                failover_count,
                RAFT_FAILOVER_TIMEOUT_NS,
            )?,
            true,
        ),
    ];
    let runs = r.par_map("raft", &cfgs, |(c, stop)| run_app(c, *stop))?;
    let (steady, fail) = (&runs[0], &runs[1]);
    let m = &steady.report;
    let (stopped, stop_us) = fail.stopped.ok_or_else(|| fail!("no server was stopped"))?;
    let after: Vec<f64> = fail
        .series
        .iter()
        .filter(|(sent, _)| *sent > stop_us)
        .map(|&(_, l)| l)
        .collect();
    let gap = fail.failover_gap_us().unwrap_or(f64::NAN);
    let new_leader = fail
        .last_server
        .map_or_else(|| "none".to_string(), |h| h.to_string());
    let recovered = {
        let mut tail: Vec<f64> = after.iter().rev().take(100).copied().collect();
        tail.sort_by(f64::total_cmp);
        tail.get(tail.len() / 2).copied().unwrap_or(f64::NAN)
    };
    Ok(ExperimentResult {
        id: "raft".into(),
        title: "Raft: steady state (nanoPU Table 1) and a failed leader".into(),
        description: format!(
            "Three nanoPU nodes (one core each, `raft`: leader election with randomized 40-80 us timeouts, \
             AppendEntries replication, commit on a majority, a key-value state machine of 16 B keys and 64 B \
             values) and a client on one switch ({} ns forwarding, links {} ns). The client writes; the leader \
             answers once the entry is committed and held by all three servers (the paper's definition); a \
             server that does not lead names the leader and the client re-sends there. Steady state: {count} \
             writes on 1000 keys, one outstanding at a time, the first ones (during the first election) left \
             out; every reply checked against a model of the store. Response time at the client. Failover: \
             {failover_count} writes; once half are answered the leader's host stops (a crash: nothing leaves or \
             reaches it); the client re-sends a request unanswered after {} us to the next server.",
            network.switch.forwarding_latency_ps as f64 / 1e3,
            network.link.host_propagation_ps as f64 / 1e3,
            RAFT_FAILOVER_TIMEOUT_NS / 1000
        ),
        figures: vec![Figure {
            name: "raft-failover".into(),
            title: format!("Raft: response time of each write; the leader (host {stopped}) stops at {stop_us:.0} us"),
            x_label: "request sent at (us)".into(),
            y_label: "response time at the client (us)".into(),
            log_y: true,
            series: vec![Series::new("writes", fail.series.clone())],
            ..Default::default()
        }],
        targets: vec![
            Target::from_table(
                "raft-p50-us",
                us(m.client_p50_ns),
                "3-way replicated write, at the client",
            )
            .unwrap_or_default(),
            Target::from_table("raft-p99-us", us(m.client_p99_ns), "the same, p99")
                .unwrap_or_default(),
        ],
        notes: vec![
            format!(
                "Steady state: p50 {:.2} us, p90 {:.2} us, p99 {:.2} us over {} writes ({} redirections while the \
                 first leader was elected, in the warm-up).",
                us(m.client_p50_ns),
                us(m.client_p90_ns),
                us(m.client_p99_ns),
                m.received - m.received.min(count / 20),
                m.retries
            ),
            format!(
                "Failover: host {stopped} (the leader) stopped at {stop_us:.1} us; host {new_leader} leads \
                 afterwards. The write in flight at the stop took {gap:.1} us (client timeouts, an election, \
                 redirections; {} re-sends over the run, the first election's included); the last 100 writes' \
                 median is {recovered:.2} us. All {} replies checked, none wrong.",
                fail.report.retries,
                fail.report.received
            ),
            "The paper runs a production Raft library (willemt/raft) on the nanoPU and reports 3.08 / 3.26 us; \
             ours is a minimal Raft written for the register-file interface (an entry goes from netRX to the log \
             and from the log to netTX word by word). Each write needs four one-way crossings of the switch \
             (client, leader, followers, leader, client), about 1.55 us in this topology; the rest is NIC and \
             core time, which the production library spends more of."
                .into(),
        ],
        wall_s: 0.0,
        cpu_s: 0.0,
    })
}
