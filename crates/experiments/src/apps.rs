//! The nanoPU paper's applications (§5.3): MICA (Fig. 9, Table 1) and set
//! algebra (Fig. 10, Table 1), each a guest program driven by its
//! application client (`nanopu_apps`), every reply checked by the
//! application's oracle.

use super::{highest_sustained, sustained, Experiment, Measured, Runner, Scale};
use crate::Result;
use nanopu_apps::mica::MicaConfig;
use nanopu_apps::setalg::SetAlgConfig;
use nanopu_apps::AppConfig;
use nanopu_nics::nanopu::core_selection::Policy;
use nanopu_report::{ExperimentResult, Figure, Series, Target};
use nanopu_system::{LoadConfig, LoadMode, NicKind};

pub fn experiments() -> Vec<Experiment> {
    vec![
        Experiment {
            id: "mica",
            title: "MICA key-value store: traditional vs nanoPU naive vs nanoPU optimized (Fig. 9)",
            run: mica,
            fixed: crate::settings::DESIGN_CORES_AND_NIC,
            memory: crate::memory::Memory::Prototype,
        },
        Experiment {
            id: "setalg",
            title: "Set algebra: traditional NIC vs one nanoPU core vs four with JBSQ (Fig. 10)",
            run: setalg,
            fixed: crate::settings::DESIGN_CORES_AND_NIC,
            memory: crate::memory::Memory::Prototype,
        },
    ]
}

/// A server design: program, NIC, cores.
struct Design {
    name: &'static str,
    program: &'static str,
    nic: NicKind,
    cores: usize,
}

/// Requests per point.
fn requests(r: &Runner) -> u64 {
    match r.scale {
        Scale::Quick => 400,
        Scale::Full => 5_000,
    }
}

/// Offered loads as fractions of the reference design's capacity: from low
/// load past saturation.
fn load_fractions(r: &Runner) -> Vec<f64> {
    match r.scale {
        Scale::Quick => vec![0.1, 0.5, 0.8, 1.0],
        Scale::Full => vec![
            0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0, 1.05, 1.1,
        ],
    }
}

/// Runs `program` on a node of `cores` cores behind `nic`, driven by `load`.
fn run(r: &Runner, d: &Design, load: &LoadConfig) -> Result<Measured> {
    let mut cfg = r.cfg.clone();
    cfg.node.cores = d.cores;
    let runner = r.sequential_with(cfg);
    let program = r.program(d.program)?;
    runner
        .run_on_node(&program, &[], d.nic, Some(Policy::Jbsq), None, load)
        .map_err(|e| e.during(format!("{} ({})", d.name, d.program)))
}

fn load(app: &AppConfig, count: u64, mode: LoadMode) -> LoadConfig {
    LoadConfig {
        count,
        warmup: count / 10,
        mode,
        app: Some(app.clone()),
        // Past saturation a queue of thousands of requests builds up: give
        // them time rather than count them lost.
        timeout_ns: 50_000_000,
        ..LoadConfig::default()
    }
}

/// What a sweep over designs measured.
struct Sweep {
    /// Closed-loop throughput (Mrps) of each design: its capacity.
    capacity: Vec<f64>,
    /// Offered loads (Mrps).
    loads: Vec<f64>,
    /// `[design][load]`.
    points: Vec<Vec<Measured>>,
    /// Low-load points of each design (10 % of `low_reference`'s capacity).
    low: Vec<Measured>,
    low_mrps: f64,
    count: u64,
}

/// Measures each design's capacity (closed loop, a window of 8 per core),
/// then sweeps offered loads (fractions of design `reference`'s capacity)
/// over every design, and a low load (10 % of design `low_reference`'s).
fn sweep(
    r: &Runner,
    label: &str,
    app: &AppConfig,
    designs: &[Design],
    reference: usize,
    low_reference: usize,
) -> Result<Sweep> {
    let count = requests(r);
    let capacity = r.par_map(&format!("{label} capacity"), designs, |d| {
        let window = 8 * d.cores as u32;
        run(r, d, &load(app, count, LoadMode::Closed { window })).map(|m| m.load.throughput_mrps)
    })?;
    let loads: Vec<f64> = load_fractions(r)
        .iter()
        .map(|f| f * capacity[reference])
        .collect();
    let low_mrps = 0.1 * capacity[low_reference];
    let items: Vec<(usize, Option<usize>)> = (0..designs.len())
        .flat_map(|d| {
            (0..loads.len())
                .map(move |l| (d, Some(l)))
                .chain([(d, None)])
        })
        .collect();
    let mut measured = r
        .par_map(label, &items, |&(d, l)| {
            let rate = l.map_or(low_mrps, |l| loads[l]);
            run(
                r,
                &designs[d],
                &load(app, count, LoadMode::Open { rate_mrps: rate }),
            )
            .map_err(|e| e.during(format!("at {rate:.3} Mrps")))
        })?
        .into_iter();
    let mut points = Vec::new();
    let mut low = Vec::new();
    for _ in designs {
        points.push(measured.by_ref().take(loads.len()).collect());
        low.push(measured.next().expect("a low-load point per design"));
    }
    Ok(Sweep {
        capacity,
        loads,
        points,
        low,
        low_mrps,
        count,
    })
}

fn p99_figure(name: &str, title: &str, designs: &[Design], s: &Sweep) -> Figure {
    Figure {
        name: name.into(),
        title: title.into(),
        x_label: "offered load (Mrps)".into(),
        y_label: "p99 response time at the server's wire (us)".into(),
        log_y: true,
        series: designs
            .iter()
            .zip(&s.points)
            .map(|(d, pts)| {
                Series::new(
                    d.name,
                    s.loads
                        .iter()
                        .zip(pts)
                        // A point where requests were dropped has no
                        // meaningful p99 (of the survivors): not drawn.
                        .map(|(&l, m)| {
                            let p99 = if m.load.lost == 0 {
                                m.load.p99_ns / 1000.0
                            } else {
                                f64::NAN
                            };
                            (l, p99)
                        })
                        .collect(),
                )
            })
            .collect(),
        ..Default::default()
    }
}

fn table1_note(designs: &[Design], s: &Sweep) -> String {
    let rows: Vec<String> = designs
        .iter()
        .zip(&s.low)
        .zip(&s.capacity)
        .map(|((d, m), cap)| {
            format!(
                "| {} | {:.2} | {:.2} | {:.2} | {:.2} |",
                d.name,
                m.load.p50_ns / 1000.0,
                m.load.p99_ns / 1000.0,
                m.load.client_p50_ns / 1000.0,
                cap
            )
        })
        .collect();
    let dropped: Vec<String> = designs
        .iter()
        .zip(&s.points)
        .flat_map(|(d, pts)| {
            s.loads
                .iter()
                .zip(pts)
                .filter(|(_, m)| m.load.lost > 0)
                .map(move |(l, m)| {
                    format!(
                        "{} at {l:.2} Mrps ({} of {} lost)",
                        d.name, m.load.lost, m.load.sent
                    )
                })
        })
        .collect();
    let dropped = if dropped.is_empty() {
        String::new()
    } else {
        format!(
            "\n\nPoints where the server dropped requests (a traditional NIC out of receive \
             buffers) are not drawn: {}.",
            dropped.join(", ")
        )
    };
    format!(
        "At low load ({:.2} Mrps, Poisson):\n\n| design | p50 (us) | p99 (us) | p50 at the client (us) | capacity (Mrps) |\n|---|---|---|---|---|\n{}",
        s.low_mrps,
        rows.join("\n")
    ) + &dropped
}

fn mica_designs() -> [Design; 3] {
    [
        Design {
            name: "traditional",
            program: "trad_mica",
            nic: NicKind::Icenic,
            cores: 1,
        },
        Design {
            name: "nanoPU naive",
            program: "mica_naive",
            nic: NicKind::Nanopu,
            cores: 1,
        },
        Design {
            name: "nanoPU optimized",
            program: "mica",
            nic: NicKind::Nanopu,
            cores: 1,
        },
    ]
}

fn mica(r: &Runner) -> Result<ExperimentResult> {
    let designs = mica_designs();
    let app = AppConfig::Mica(MicaConfig::default());
    let s = sweep(r, "mica", &app, &designs, 2, 2)?;
    let opt = &s.low[2].load;
    let tput_ratio = s.capacity[2] / s.capacity[1];
    let mem_note = "each request touches an index bucket and a 528-byte log entry of 5.3 MB of \
                    pairs: cache lines that miss the 512 KB L2, one at a time on this in-order core, \
                    so the time depends on the memory system below the L2 (`memory-systems` shows \
                    MICA under each)";
    let targets = vec![
        Target::from_table(
            "mica-p50-us",
            opt.p50_ns / 1000.0,
            format!(
                "nanoPU optimized at {:.2} Mrps; {mem_note}",
                s.low_mrps
            ),
        ),
        Target::from_table(
            "mica-p99-us",
            opt.p99_ns / 1000.0,
            format!("the same point's p99; {mem_note}"),
        ),
        Target::from_table(
            "mica-opt-vs-naive-tput",
            tput_ratio,
            format!(
                "closed-loop throughput (window 8), optimized {:.3} / naive {:.3} Mrps: the naive \
                 version's extra copies of the 512-byte value stay in the L1 and cost far less than \
                 the DRAM misses both versions share",
                s.capacity[2], s.capacity[1]
            ),
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    let notes = vec![
        table1_note(&designs, &s),
        format!(
            "Every reply was checked by the MICA oracle (crates/apps/src/mica.rs): zero wrong replies \
             at every point. Offered loads are fractions of the optimized version's capacity \
             ({:.3} Mrps); the traditional server drops requests when its 30 receive buffers are full.",
            s.capacity[2]
        ),
    ];
    Ok(ExperimentResult {
        id: "mica".into(),
        title: "MICA key-value store: traditional vs nanoPU naive vs nanoPU optimized (Fig. 9)".into(),
        description: format!(
            "A MICA-style store (partitioned hash index, circular log; sdk/programs/mica) with 10K \
             pairs of 16 B keys and 512 B values, 50/50 GET/SET with uniform keys, on one core: \
             traditional (IceNIC, the driver batching 30 buffers), nanoPU naive (copies between \
             netRX/netTX and memory buffers) and nanoPU optimized (the value streamed between the log \
             and the register file). Open-loop Poisson arrivals, {} requests per point; response \
             time at the server's wire.",
            s.count
        ),
        figures: vec![p99_figure(
            "mica-p99-vs-load",
            "MICA: p99 response time vs offered load",
            &designs,
            &s,
        )],
        targets,
        notes,
        wall_s: 0.0,
        cpu_s: 0.0,
    })
}

fn setalg_designs() -> [Design; 3] {
    [
        Design {
            name: "traditional",
            program: "trad_setalg",
            nic: NicKind::Icenic,
            cores: 1,
        },
        Design {
            name: "nanoPU, 1 core",
            program: "setalg",
            nic: NicKind::Nanopu,
            cores: 1,
        },
        Design {
            name: "nanoPU, 4 cores (JBSQ)",
            program: "setalg",
            nic: NicKind::Nanopu,
            cores: 4,
        },
    ]
}

fn setalg(r: &Runner) -> Result<ExperimentResult> {
    let designs = setalg_designs();
    let app = AppConfig::SetAlgebra(SetAlgConfig::default());
    let s = sweep(r, "setalg", &app, &designs, 2, 1)?;
    let one = &s.low[1].load;
    let trad = &s.low[0].load;
    // The mean service time of one query on one core, from its capacity.
    let service_ns = 1e3 / s.capacity[1];
    let (max4, past) = highest_sustained(&s.loads, |l| {
        let m = &s.points[2][l].load;
        sustained(m, s.count, m.p99_ns, service_ns, 4.0)
    });
    let targets = vec![
        Target::from_table(
            "setalg-p50-us",
            one.p50_ns / 1000.0,
            format!(
                "one nanoPU core at {:.2} Mrps: the median query intersects one to four posting \
                 lists of our synthetic corpus (a few to 90 document ids each) in a few hundred \
                 instructions; the paper's index of 100 real articles and its code are not ours, so \
                 the work per query differs",
                s.low_mrps
            ),
        ),
        Target::from_table(
            "setalg-p99-us",
            one.p99_ns / 1000.0,
            "the same point's p99: queries of 1-4 words over posting lists of up to 90 documents \
             vary several-fold in work",
        ),
        Target::from_table(
            "setalg-trad-vs-nanopu-p99-low",
            trad.p99_ns / one.p99_ns,
            format!(
                "p99 at {:.2} Mrps: traditional {:.2} us / one nanoPU core {:.2} us",
                s.low_mrps,
                trad.p99_ns / 1000.0,
                one.p99_ns / 1000.0
            ),
        ),
        Target::from_table(
            "setalg-jbsq4-max-mrps",
            max4.unwrap_or(f64::NAN),
            format!(
                "highest sustained offered load of the 4-core sweep (loads are fractions of its \
                 closed-loop capacity, {:.2} Mrps; sustained: p99 below 10 mean service times of \
                 {service_ns:.0} ns){}",
                s.capacity[2],
                if past {
                    ""
                } else {
                    "; ⚠ the sweep never reached a load it fails to sustain"
                }
            ),
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    let notes = vec![
        table1_note(&designs, &s),
        "Every reply was checked by the set-algebra oracle (crates/apps/src/setalg.rs): zero wrong \
         replies at every point."
            .to_string(),
    ];
    Ok(ExperimentResult {
        id: "setalg".into(),
        title: "Set algebra: traditional NIC vs one nanoPU core vs four with JBSQ (Fig. 10)".into(),
        description: format!(
            "An inverted index of 100 documents over 200 words with Zipf word frequencies \
             (sdk/programs/setalg); queries of 1-4 words drawn Zipf by frequency, the reply the \
             intersection of their posting lists. Traditional NIC on one core, one nanoPU core, four \
             nanoPU cores with JBSQ(2). Open-loop Poisson arrivals, {} requests per point, offered \
             loads fractions of the 4-core capacity; response time at the server's wire.",
            s.count
        ),
        figures: vec![p99_figure(
            "setalg-p99-vs-load",
            "Set algebra: p99 response time vs offered load",
            &designs,
            &s,
        )],
        targets,
        notes,
        wall_s: 0.0,
        cpu_s: 0.0,
    })
}

/// The Table 1 point of `mica` or `setalg` alone, as their sweeps measure
/// it: the nanoPU design's closed-loop capacity, then a Poisson load of
/// 10 % of it (`memory-systems` runs it under each memory system).
pub(crate) fn table1_point(r: &Runner, id: &str) -> Result<Measured> {
    let (design, app) = match id {
        "mica" => (&mica_designs()[2], AppConfig::Mica(MicaConfig::default())),
        _ => (
            &setalg_designs()[1],
            AppConfig::SetAlgebra(SetAlgConfig::default()),
        ),
    };
    let count = requests(r);
    let window = 8 * design.cores as u32;
    let capacity = run(r, design, &load(&app, count, LoadMode::Closed { window }))?
        .load
        .throughput_mrps;
    let rate_mrps = 0.1 * capacity;
    run(r, design, &load(&app, count, LoadMode::Open { rate_mrps }))
}
