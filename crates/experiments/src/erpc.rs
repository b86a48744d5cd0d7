//! The eRPC-style software RPC stack (`sdk/include/erpc.h`, eRPC NSDI'19)
//! on the traditional NIC: small-RPC latency between two nodes on one ToR,
//! the per-core rate of small RPCs with batching, with and without
//! congestion control, and Raft over it against Raft on the nanoPU.
//!
//! Every host here is a node running a guest program (clients too, unlike
//! the load-generator experiments): the client programs measure with the
//! cycle counter and print what they measured (`sample CYCLES` lines,
//! `result ok`), which [`run_until_exit`] collects.

use super::{Experiment, Runner, Scale};
use crate::replication::rdma_network;
use crate::{ensure, fail, Result};
use nanopu_network::{host_ip, NetworkConfig, TopologyConfig};
use nanopu_report::{ExperimentResult, Target};
use nanopu_sim::{SimDuration, SimTime};
use nanopu_system::cluster::{Cluster, ClusterConfig, ClusterEnd, HostProgram, StopWhen};
use nanopu_system::NicKind;

pub fn experiments() -> Vec<Experiment> {
    vec![Experiment {
        id: "erpc",
        title: "eRPC-style RPCs on the traditional NIC: latency, rate, Raft",
        run: erpc,
    }]
}

/// Size of the small RPCs. Source: eRPC §6.1, Table 2: "32 B RPCs".
pub const SMALL_RPC_BYTES: u32 = 32;

/// What a run of guest programs printed and how it ended.
#[derive(Clone, Debug)]
pub struct GuestRun {
    /// The watched host's exit code.
    pub code: u64,
    /// Every node's console output, by host (empty for non-nodes).
    pub outputs: Vec<String>,
    /// Simulated time at the end, us.
    pub sim_us: f64,
}

impl GuestRun {
    /// The watched program's output.
    pub fn output(&self, host: usize) -> &str {
        &self.outputs[host]
    }

    /// The `sample N` values host `host` printed.
    pub fn samples(&self, host: usize) -> Vec<u64> {
        self.outputs[host]
            .lines()
            .filter_map(|l| l.strip_prefix("sample "))
            .filter_map(|v| v.trim().parse().ok())
            .collect()
    }

    /// The value of `key=` in the first line of host `host` starting with
    /// `prefix`.
    pub fn field(&self, host: usize, prefix: &str, key: &str) -> Option<u64> {
        let line = self.outputs[host]
            .lines()
            .find(|l| l.starts_with(prefix))?;
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
            .and_then(|v| v.parse().ok())
    }
}

/// `programs` (host range, program, args) on IceNIC nodes of one core on
/// `network` with `hosts` hosts on one switch.
pub fn icenic_cluster(
    r: &Runner,
    network: NetworkConfig,
    hosts: usize,
    programs: &[(&str, &str, Vec<String>)],
) -> Result<ClusterConfig> {
    let mut node = r.cfg.node.clone();
    node.cores = 1;
    Ok(ClusterConfig {
        network: NetworkConfig {
            topology: TopologyConfig::SingleSwitch { hosts },
            ..network
        },
        nic: r.cfg.nic.clone(),
        node,
        programs: programs
            .iter()
            .map(|(hosts, program, args)| {
                Ok(HostProgram {
                    hosts: hosts.to_string(),
                    program: r.program(program)?,
                    nic: Some(NicKind::Icenic),
                    args: args.clone(),
                })
            })
            .collect::<Result<Vec<_>>>()?,
        ..Default::default()
    })
}

/// Runs `cfg` until host `watch`'s program exits (or `limit_us` of
/// simulated time pass: an error, as is any other host exiting first).
pub fn run_until_exit(cfg: &ClusterConfig, watch: usize, limit_us: u64) -> Result<GuestRun> {
    let mut c = Cluster::new(cfg)?;
    let stop = StopWhen {
        clients_done: false,
        node_exits: true,
    };
    let end = c.run_until(SimTime::ZERO + SimDuration::from_us(limit_us), stop)?;
    let outputs: Vec<String> = (0..c.hosts())
        .map(|h| {
            c.node(h)
                .and_then(|n| n.htif())
                .map(|t| String::from_utf8_lossy(&t.output).into_owned())
                .unwrap_or_default()
        })
        .collect();
    match end {
        ClusterEnd::Exited { host, code } if host == watch => Ok(GuestRun {
            code,
            outputs,
            sim_us: c.now.fs() as f64 / 1e9,
        }),
        other => Err(fail!(
            "host {watch} did not finish ({other:?}); it printed:\n{}",
            outputs.get(watch).map_or("", |s| s.as_str())
        )),
    }
}

/// A server (host 0, `erpc_server`) and a client (host 1, `erpc_client`
/// with `client_args`, the server's address first) on `network`.
pub fn client_server(
    r: &Runner,
    network: NetworkConfig,
    client_args: &[&str],
) -> Result<ClusterConfig> {
    let server_ip = std::net::Ipv4Addr::from(host_ip(0)).to_string();
    let args = std::iter::once(server_ip)
        .chain(client_args.iter().map(|s| s.to_string()))
        .collect();
    icenic_cluster(
        r,
        network,
        2,
        &[
            ("0", "erpc_server", Vec::new()),
            ("1", "erpc_client", args),
        ],
    )
}

/// Percentile `p` (0..=100) of sorted `v`, nearest rank.
fn percentile(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

/// Median and p99 (ns) of a client's cycle samples.
fn latency_ns(run: &GuestRun, host: usize, clock_mhz: u64) -> Result<(f64, f64, usize)> {
    let mut ns: Vec<f64> = run
        .samples(host)
        .into_iter()
        .map(|c| c as f64 * 1e3 / clock_mhz as f64)
        .collect();
    ensure!(!ns.is_empty(), "host {host} printed no samples");
    ns.sort_by(f64::total_cmp);
    Ok((percentile(&ns, 50.0), percentile(&ns, 99.0), ns.len()))
}

fn erpc(r: &Runner) -> Result<ExperimentResult> {
    let count = match r.scale {
        Scale::Quick => 200,
        Scale::Full => 2000,
    };
    let clock = r.cfg.node.core.clock_mhz as u64;
    let network = rdma_network(r)?;
    let size = SMALL_RPC_BYTES.to_string();
    let n = count.to_string();
    let lat_cfg = client_server(r, network.clone(), &["latency", &n, &size])?;
    let cfgs = [lat_cfg];
    let runs = r.par_map("erpc", &cfgs, |c| run_until_exit(c, 1, 1_000_000))?;
    let lat = &runs[0];
    ensure!(
        lat.code == 0,
        "the latency client failed: {}",
        lat.output(1)
    );
    let (p50, p99, samples) = latency_ns(lat, 1, clock)?;
    let targets = vec![Target {
        key: "erpc-rpc-p50-ns".into(),
        measured: p50,
        unit: "ns".into(),
        // eRPC Table 2, CX5 (not a key of targets.md: the lead combines it
        // with the RDMA read median into erpc-vs-rdma-read-p50-ns).
        published: 2300.0,
        note: format!(
            "32 B eRPC-style RPC between two IceNIC nodes on one switch (300 ns one-way), median at the client \
             application; p99 {p99:.0} ns. Published: eRPC Table 2, CX5 (a 40 GbE NIC behind PCIe, a 300 ns switch)."
        ),
    }];
    Ok(ExperimentResult {
        id: "erpc".into(),
        title: "eRPC-style RPCs on the traditional NIC: latency, rate, Raft".into(),
        description: format!(
            "An eRPC-style library (`sdk/include/erpc.h`: sessions of 8 slots with credits, client-driven \
             retransmission, zero-copy msgbufs read by one DMA, Timely with eRPC's bypasses) on the traditional \
             DMA NIC (IceNIC). Latency: a client and a server node (one core each) on one switch, one-way latency \
             {} ns as in the RDMA setup; {samples} RPCs of {SMALL_RPC_BYTES} B one at a time, timed by the client \
             program from enqueue to continuation.",
            crate::replication::RDMA_ONE_WAY_PS / 1000
        ),
        figures: vec![],
        targets,
        notes: vec![format!(
            "| measurement | median | p99 | paper |\n|---|---|---|---|\n| 32 B RPC latency | {p50:.0} ns | {p99:.0} ns | 2.3 us (CX5) |"
        )],
        wall_s: 0.0,
    })
}
