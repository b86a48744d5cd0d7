//! NEBULA (seed 004, ISCA'20) on MICA: Fig. 6 (p99 latency and memory
//! bandwidth vs load for RSS, RPCValet, SRQ_emu, NEBULA_base and NEBULA,
//! throughput under SLO for each), Fig. 8 (NEBULA vs NEBULA_base vs a
//! software prefetch of the next RPC) and, at full scale, Table III (GET/SET
//! mixes) and Fig. 7 (item sizes), for RPCValet and NEBULA_base; beside
//! them the nanoPU on the same store and server.
//!
//! Every design runs on the NEBULA-class server of
//! `configs/nebula-server.toml` (16 cores, 16 MB LLC, 31 GB/s DRAM) behind a
//! 120 Gb/s link, in the same loop as every other experiment (`Cluster`,
//! through [`Runner::run_on_node_seeded`]): NEBULA's designs run
//! `sdk/programs/nb_mica` (`nic = nebula:...`), the nanoPU
//! `nb_nanopu_mica`. One load generator drives them all (NEBULA §VI: open
//! loop, Poisson arrivals, MICA requests from `nanopu_apps::mica`, every
//! reply checked; 1024 client connections of 256 messages, NACKs answered
//! after a backoff), one run per offered load, and measures one latency
//! for all: at the server's wire, NACKs counted as infinite. The
//! differences come from where the NIC puts payloads (the memory system's
//! LLC misses and DRAM bytes) and how it dispatches them.

use super::{Experiment, Measured, Runner, Scale};
use crate::boot_seed::BootSeed;
use crate::{fail, Result};
use nanopu_apps::mica::MicaConfig;
use nanopu_apps::AppConfig;
use nanopu_node::NodeConfig;
use nanopu_report::{ExperimentResult, Figure, Series, Target};
use nanopu_sim::SimDuration;
use nanopu_system::connections::ConnectionsConfig;
use nanopu_system::nics::nanopu::core_selection::Policy;
use nanopu_system::nics::nebula::NebulaDesign;
use nanopu_system::{LoadConfig, LoadMode, NicKind};

pub fn experiments() -> Vec<Experiment> {
    vec![Experiment {
        id: "nb-mica",
        title: "NEBULA: MICA under RSS, RPCValet, SRQ_emu, NEBULA_base, NEBULA (NEBULA Fig. 6-8, Table III)",
        run: nb_mica,
        fixed: FIXED,
        memory: crate::memory::Memory::AsConfigured,
    }]
}

/// What `nb-mica` sets itself: the server, its link and, per design, the NIC.
const FIXED: crate::Fixed = crate::Fixed {
    keys: &["node", "network.link.gbps", "nic.kind"],
    why: "it runs every design on the NEBULA-class server of configs/nebula-server.toml (16 \
          cores, 16 MB LLC, 31 GB/s DRAM) behind a 120 Gb/s link, each design with its own NIC \
          (NEBULA Table II, §VI)",
};

/// The server (NEBULA Table II, §VI), each value sourced in the file.
const SERVER: &str = include_str!("../../../configs/nebula-server.toml");

/// The `[node]` table of [`SERVER`] (`configs/nebula-server.toml`).
pub fn server_node() -> Result<NodeConfig> {
    #[derive(serde::Deserialize)]
    struct File {
        #[serde(default)]
        node: NodeConfig,
    }
    toml::from_str::<File>(SERVER)
        .map(|f| f.node)
        .map_err(|e| fail!("configs/nebula-server.toml: {e}"))
}

/// What moved when NEBULA's own simulation loop gave way to the one every
/// design runs in (issue #47 item 4).
const ONE_LOOP_NOTE: &str = "Until issue #47, NEBULA's designs ran in a loop of their own \
     (a staircase of loads in one run per design, latency from the NIC's receipt to `free_buffer`) while \
     the nanoPU ran here; see docs/nebula-one-loop.md for what moved when they joined it.";

/// The SLO: a p99 of 10x the mean service time (NEBULA §VI, after ZygOS).
pub const SLO_FACTOR: f64 = 10.0;

/// One design (and workload) of the sweep.
#[derive(Clone, Debug)]
struct Point {
    label: String,
    nic: NicKind,
    get_fraction: f64,
    value_bytes: u32,
    swpref: bool,
}

fn point(label: &str, nic: NicKind, get_fraction: f64, value_bytes: u32, swpref: bool) -> Point {
    Point {
        label: label.into(),
        nic,
        get_fraction,
        value_bytes,
        swpref,
    }
}

impl Point {
    fn program(&self) -> &'static str {
        match self.nic {
            NicKind::Nebula(_) => "nb_mica",
            _ => "nb_nanopu_mica",
        }
    }

    /// The program's arguments: the store's pairs and value size (and
    /// NEBULA's software prefetch).
    fn args(&self, scale: Scale) -> Vec<String> {
        let mut args = vec![pairs(scale).to_string(), self.value_bytes.to_string()];
        if let NicKind::Nebula(_) = self.nic {
            args.push(if self.swpref { "1" } else { "0" }.into());
        }
        args
    }

    /// The load at `rate_mrps` (see the module documentation).
    fn load(&self, scale: Scale, rate_mrps: f64) -> LoadConfig {
        let (_, per_load, warmup) = loads(scale);
        LoadConfig {
            count: per_load + warmup,
            warmup,
            mode: LoadMode::Open { rate_mrps },
            app: Some(AppConfig::Mica(MicaConfig {
                pairs: pairs(scale),
                value_bytes: self.value_bytes,
                get_fraction: self.get_fraction,
                ..MicaConfig::default()
            })),
            timeout_ns: 50_000_000,
            connections: Some(ConnectionsConfig::default()),
            ..LoadConfig::default()
        }
    }
}

/// Pairs the store holds: NEBULA §VI's 1.6 M at full scale; 20,000 (10 MB
/// of values, still DRAM-bound for the designs with per-connection
/// buffers) at quick scale so that preloading takes a fraction of a second.
fn pairs(scale: Scale) -> u32 {
    match scale {
        Scale::Quick => 20_000,
        Scale::Full => 1_600_000,
    }
}

/// The offered loads (MRPS), and the requests measured at each after a
/// warm-up.
fn loads(scale: Scale) -> (Vec<f64>, u64, u64) {
    match scale {
        Scale::Quick => (vec![2.0, 8.0, 14.0, 20.0, 24.0, 28.0, 32.0, 36.0], 800, 300),
        Scale::Full => ((1..=20).map(|i| 2.0 * i as f64).collect(), 4000, 1000),
    }
}

/// One design at one offered load.
#[derive(Clone, Debug)]
struct LoadPoint {
    offered_mrps: f64,
    /// At the server's wire, NACKs infinite.
    p99_ns: f64,
    mean_ns: f64,
    /// Over the measured requests.
    dram_gb_s: f64,
    llc_miss_rate: f64,
    nacks: u64,
}

impl LoadPoint {
    fn of(offered_mrps: f64, m: &Measured) -> LoadPoint {
        let (dram_gb_s, llc_miss_rate) = match &m.memory_at_warmup {
            Some((w, from, to)) => {
                let e = &m.memory;
                let bytes = (e.dram_read_bytes + e.dram_write_bytes)
                    .saturating_sub(w.dram_read_bytes + w.dram_write_bytes);
                let ns = to.since(*from).fs() as f64 / 1e6;
                let (h, x) = (
                    e.llc.hits.saturating_sub(w.llc.hits),
                    e.llc.misses.saturating_sub(w.llc.misses),
                );
                (
                    if ns > 0.0 { bytes as f64 / ns } else { 0.0 },
                    if h + x > 0 {
                        x as f64 / (h + x) as f64
                    } else {
                        0.0
                    },
                )
            }
            None => (f64::NAN, f64::NAN),
        };
        LoadPoint {
            offered_mrps,
            p99_ns: m.load.p99_ns,
            mean_ns: m.load.mean_ns,
            dram_gb_s,
            llc_miss_rate,
            nacks: m.load.nacks,
        }
    }
}

/// Runs point `p` at loads `rates[from..]` in order from `seed`, until the
/// first whose p99 exceeds `slo_ns` (the rest would too: the curve ends
/// there).
fn chain(
    r: &Runner,
    p: &Point,
    rates: &[f64],
    seed: &BootSeed,
    slo_ns: f64,
) -> Result<Vec<LoadPoint>> {
    let program = r.program(p.program())?;
    let args = p.args(r.scale);
    let selection = (p.nic == NicKind::Nanopu).then_some(Policy::Jbsq);
    let mut out = Vec::new();
    for &rate in rates {
        let load = p.load(r.scale, rate);
        let m = r
            .run_on_node_seeded(seed, &program, &args, p.nic, selection, &load)
            .map_err(|e| e.during(format!("nb-mica {} at {rate} MRPS", p.label)))?;
        if m.load.wrong_replies > 0 {
            return Err(fail!(
                "nb-mica {} at {rate} MRPS: {} wrong replies, first: {}",
                p.label,
                m.load.wrong_replies,
                m.load.first_error.clone().unwrap_or_default()
            ));
        }
        let lp = LoadPoint::of(rate, &m);
        let over = lp.p99_ns.is_nan() || lp.p99_ns > slo_ns;
        out.push(lp);
        if over {
            break;
        }
    }
    Ok(out)
}

/// The highest load whose p99 (and every lower load's) meets `slo_ns`, and
/// its index.
fn tput_under_slo(run: &[LoadPoint], slo_ns: f64) -> Option<(f64, usize)> {
    let ok = run.iter().take_while(|s| s.p99_ns <= slo_ns).count();
    ok.checked_sub(1).map(|i| (run[i].offered_mrps, i))
}

fn nb_mica(r: &Runner) -> Result<ExperimentResult> {
    let nebula = |d: NebulaDesign| NicKind::Nebula(d);
    let mut points: Vec<Point> = NebulaDesign::ALL
        .iter()
        .map(|&d| point(d.name(), nebula(d), 0.5, 512, false))
        .collect();
    points.push(point(
        "NEBULA_SWPref",
        nebula(NebulaDesign::NebulaBase),
        0.5,
        512,
        true,
    ));
    points.push(point("nanoPU", NicKind::Nanopu, 0.5, 512, false));
    if r.scale == Scale::Full {
        for d in [NebulaDesign::RpcValet, NebulaDesign::NebulaBase] {
            for (g, name) in [(0.0, "0/100"), (0.95, "95/5")] {
                points.push(point(
                    &format!("{} {name}", d.name()),
                    nebula(d),
                    g,
                    512,
                    false,
                ));
            }
            for v in [64, 256] {
                points.push(point(
                    &format!("{} {v} B", d.name()),
                    nebula(d),
                    0.5,
                    v,
                    false,
                ));
            }
        }
    }
    let (rates, per_load, warmup) = loads(r.scale);
    let mut cfg = r.cfg.clone();
    cfg.node = server_node()?.into();
    cfg.network.link.gbps = 120;
    let runner = Runner {
        cfg,
        memory_window: true,
        // NEBULA §VI's 1.6 M pairs take about half a simulated second to
        // preload.
        boot_allowance: SimDuration::from_us(2_000_000),
        ..r.clone()
    };
    let r = &runner;
    // Points with the same program and arguments share a boot (the
    // preload is most of a point's host time at full scale): the first of
    // them, NEBULA_base's among the designs, runs its lowest load first
    // and keeps its booted node; the others start from copies of it.
    let mut groups: Vec<(&'static str, Vec<String>)> = Vec::new();
    let group_of: Vec<usize> = points
        .iter()
        .map(|p| {
            let key = (p.program(), p.args(r.scale));
            groups.iter().position(|g| *g == key).unwrap_or_else(|| {
                groups.push(key);
                groups.len() - 1
            })
        })
        .collect();
    let leaders: Vec<usize> = (0..groups.len())
        .map(|g| {
            let mut members = (0..points.len()).filter(|&i| group_of[i] == g);
            let first = members.clone().next().expect("a group has a point");
            members
                .find(|&i| points[i].label == "NEBULA_base")
                .unwrap_or(first)
        })
        .collect();
    let seeds: Vec<BootSeed> = groups.iter().map(|_| BootSeed::new()).collect();
    let first = r.par_map("nb-mica", &leaders, |&i| {
        chain(
            r,
            &points[i],
            &rates[..1],
            &seeds[group_of[i]],
            f64::INFINITY,
        )
    })?;
    // The SLO: NEBULA_base's mean response time at the lowest load.
    let base = points
        .iter()
        .position(|p| p.label == "NEBULA_base")
        .expect("NEBULA_base is a point");
    let service_ns = leaders
        .iter()
        .position(|&i| i == base)
        .map_or(f64::NAN, |k| first[k][0].mean_ns);
    let slo_ns = SLO_FACTOR * service_ns;
    // Then each point's loads in order (a leader's from its second), until
    // the SLO is missed, beside each other.
    let runs = r.par_map("nb-mica", &(0..points.len()).collect::<Vec<_>>(), |&i| {
        let lead = leaders.iter().position(|&l| l == i);
        let from = lead.is_some() as usize;
        let mut run = lead.map_or_else(Vec::new, |k| first[k].clone());
        if run.iter().all(|l| l.p99_ns <= slo_ns) {
            run.extend(chain(
                r,
                &points[i],
                &rates[from..],
                &seeds[group_of[i]],
                slo_ns,
            )?);
        }
        Ok(run)
    })?;
    drop(seeds);
    let by = |label: &str| {
        points
            .iter()
            .position(|p| p.label == label)
            .map(|i| &runs[i][..])
            .expect("a point of the sweep")
    };
    let peak_gb_s = 31.0;

    let mut p99 = Vec::new();
    let mut bw = Vec::new();
    let mut table = String::from(
        "| design | throughput under SLO (MRPS) | p99 there (ns) | DRAM there (GB/s) | LLC miss rate there | NACKs |\n|---|---|---|---|---|---|\n",
    );
    let mut tput = std::collections::HashMap::new();
    for p in points
        .iter()
        .filter(|p| p.get_fraction == 0.5 && p.value_bytes == 512)
    {
        let run = by(&p.label);
        let label = match p.nic {
            NicKind::Nanopu => "nanoPU (JBSQ, register file)",
            _ => &p.label,
        };
        p99.push(Series::new(
            label,
            run.iter().map(|s| (s.offered_mrps, s.p99_ns)).collect(),
        ));
        bw.push(Series::new(
            label,
            run.iter().map(|s| (s.offered_mrps, s.dram_gb_s)).collect(),
        ));
        let t = tput_under_slo(run, slo_ns);
        tput.insert(p.label.clone(), t);
        let nacks: u64 = run.iter().map(|s| s.nacks).sum();
        match t {
            Some((rate, i)) => {
                let s = &run[i];
                table.push_str(&format!(
                    "| {label} | {rate:.1} | {:.0} | {:.1} | {:.3} | {nacks} |\n",
                    s.p99_ns, s.dram_gb_s, s.llc_miss_rate,
                ));
            }
            None => table.push_str(&format!("| {label} | none | | | | {nacks} |\n")),
        }
    }
    let t = |l: &str| tput.get(l).copied().flatten().map_or(f64::NAN, |x| x.0);
    let ratio = |a: &str, b: &str| t(a) / t(b);
    let mut targets = Vec::new();
    let mut add = |key: &str, v: f64, note: String| {
        if let Some(tg) = Target::from_table(key, v, note) {
            targets.push(tg);
        }
    };
    add(
        "nb-base-vs-rpcvalet-tput",
        ratio("NEBULA_base", "RPCValet"),
        format!(
            "{:.1} vs {:.1} MRPS under a {slo_ns:.0} ns SLO",
            t("NEBULA_base"),
            t("RPCValet")
        ),
    );
    add(
        "nb-srq-vs-rpcvalet-tput",
        ratio("SRQ_emu", "RPCValet"),
        format!("{:.1} vs {:.1} MRPS", t("SRQ_emu"), t("RPCValet")),
    );
    add(
        "nb-base-vs-srq-tput",
        ratio("NEBULA_base", "SRQ_emu"),
        format!("{:.1} vs {:.1} MRPS", t("NEBULA_base"), t("SRQ_emu")),
    );
    add(
        "nb-steering-gain-tput",
        ratio("NEBULA", "NEBULA_base"),
        format!("{:.1} vs {:.1} MRPS", t("NEBULA"), t("NEBULA_base")),
    );
    let rv = by("RPCValet");
    let rv_bw = tput
        .get("RPCValet")
        .copied()
        .flatten()
        .map_or(f64::NAN, |(_, i)| rv[i].dram_gb_s);
    add(
        "nb-rpcvalet-bw-at-slo",
        rv_bw / peak_gb_s,
        format!("{rv_bw:.1} GB/s of {peak_gb_s} GB/s at RPCValet's SLO limit"),
    );

    let mut extra = String::new();
    if r.scale == Scale::Full {
        extra.push_str("\n\nTable III and Fig. 7 (throughput under the same SLO, MRPS; DRAM GB/s there):\n\n| run | MRPS | GB/s |\n|---|---|---|\n");
        for p in points
            .iter()
            .filter(|p| p.get_fraction != 0.5 || p.value_bytes != 512)
        {
            let run = by(&p.label);
            match tput_under_slo(run, slo_ns) {
                Some((rate, i)) => extra.push_str(&format!(
                    "| {} | {rate:.1} | {:.1} |\n",
                    p.label, run[i].dram_gb_s
                )),
                None => extra.push_str(&format!("| {} | none | |\n", p.label)),
            }
        }
    }
    Ok(ExperimentResult {
        id: "nb-mica".into(),
        title: "NEBULA: MICA under RSS, RPCValet, SRQ_emu, NEBULA_base, NEBULA (NEBULA Fig. 6-8, Table III)".into(),
        description: format!(
            "`nb_mica` behind NEBULA's designs and `nb_nanopu_mica` behind the nanoPU NIC (MICA, {} pairs of 16 B \
             keys and 512 B values, GET/SET 50/50, uniform keys) on the 16 cores of `configs/nebula-server.toml` \
             (16 MB LLC, 2 x 15.5 GB/s DRAM, 2 GHz), 120 Gb/s link. One load generator for every design (NEBULA \
             §VI): 1024 client connections of at most 256 outstanding messages, Poisson arrivals, one run per \
             offered load from {} MRPS up ({} loads at most, {per_load} requests measured after {warmup} of \
             warm-up, each run from the same booted server), every reply checked against MICA's oracle; a NACKed \
             request is sent again after a backoff. Latency is server-side, the same for every design: from the \
             request's first bit reaching the server to its reply's last bit leaving it; NACKs count as infinite \
             (NEBULA §VI). SLO = {SLO_FACTOR} x the mean service time (NEBULA_base's mean latency at the lowest \
             load, {service_ns:.0} ns) = {slo_ns:.0} ns; a design's loads stop at the first whose p99 misses it. \
             DRAM bandwidth and LLC miss rate are the memory system's counters over the measured requests.\n\n{table}{extra}",
            pairs(r.scale),
            rates.first().copied().unwrap_or(0.0),
            rates.len(),
        ),
        figures: vec![
            Figure {
                name: "nb-mica-p99".into(),
                title: "MICA p99 latency vs load (NEBULA Fig. 6a, 8)".into(),
                x_label: "offered load (MRPS)".into(),
                y_label: "p99 latency (ns)".into(),
                log_y: true,
                series: p99,
                ..Default::default()
            },
            Figure {
                name: "nb-mica-dram-bw".into(),
                title: "DRAM bandwidth vs load (NEBULA Fig. 6b)".into(),
                x_label: "offered load (MRPS)".into(),
                y_label: "DRAM bandwidth (GB/s)".into(),
                series: bw,
                ..Default::default()
            },
        ],
        targets,
        notes: vec![
            "Our cores are single-issue in-order RISC-V cores, not the paper's out-of-order Cortex-A57s: absolute \
             MRPS and service times differ; the ratios between designs are what we compare."
                .into(),
            "RSS and RPCValet write each payload into a per-connection buffer (1024 connections x 256 messages x \
             576 B = 151 MB, far beyond the LLC); SRQ_emu, NEBULA_base and NEBULA into the 81 KB shared buffer \
             the NIC manages (160 x 512 B of 64 B slots). The NIC's writes go through the LLC (write-allocate, \
             `dma_allocation = \"all\"`), so the bloated buffers evict the store's lines and write dirty victims \
             back: the DRAM bandwidth and miss rates above are what separate the designs."
                .into(),
            "The wire carries 1 KB packets (the nanoPU transport header), not NEBULA's 64 B MTU; MICA runs with \
             64 partitions behind spin locks (any core serves any key)."
                .into(),
            "The nanoPU row runs `nb_nanopu_mica` (the same store, 16 cores, each registering context 0: JBSQ \
             core selection, messages in the register file, no memory buffers at all) on the same server, loads \
             and load generator as NEBULA's designs."
                .into(),
            ONE_LOOP_NOTE.into(),
        ],
        wall_s: 0.0,
        cpu_s: 0.0,
    })
}
