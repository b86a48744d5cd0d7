//! The rest of the nanoPU paper's Table 1 (§4, issue 15): Othello, NN
//! inference, INT processing, the packet classifier, HD search and N-body,
//! each a guest program driven by its application client (`nanopu_apps`),
//! every reply checked by the application's oracle. Each experiment gives
//! the application's low-load median and p99 response time at the
//! server's wire on one core, as Table 1 does.

use super::{Experiment, Measured, Runner, Scale};
use crate::Result;
use nanopu_apps::classifier::{self, ClassifierConfig};
use nanopu_apps::hdsearch::{self, HdSearchConfig};
use nanopu_apps::int_proc::{self, IntConfig};
use nanopu_apps::lnic_hdsearch::{self, LnicHdSearchConfig};
use nanopu_apps::nbody::{self, NbodyConfig};
use nanopu_apps::nn::{self, NnConfig};
use nanopu_apps::othello::OthelloConfig;
use nanopu_apps::AppConfig;
use nanopu_report::{ExperimentResult, Target};
use nanopu_system::{LoadConfig, LoadMode, NicKind};

pub fn experiments() -> Vec<Experiment> {
    vec![
        Experiment {
            id: "othello",
            title: "Othello player: fixed-depth alpha-beta search (Table 1)",
            run: othello,
            fixed: crate::settings::DESIGN_CORES_AND_NIC,
            memory: crate::memory::Memory::Prototype,
        },
        Experiment {
            id: "nn",
            title: "NN inference: a small integer network, nanoPU vs traditional NIC",
            run: nn,
            fixed: crate::settings::DESIGN_CORES_AND_NIC,
            memory: crate::memory::Memory::Prototype,
        },
        Experiment {
            id: "int",
            title: "INT processing: per-path latency and heavy hitters from telemetry reports (Table 1)",
            run: int,
            fixed: crate::settings::DESIGN_CORES_AND_NIC,
            memory: crate::memory::Memory::Prototype,
        },
        Experiment {
            id: "classifier",
            title: "Packet classifier: tuple-space search over 100K ClassBench-style rules (Table 1)",
            run: classifier,
            fixed: crate::settings::DESIGN_CORES_AND_NIC,
            memory: crate::memory::Memory::Prototype,
        },
        Experiment {
            id: "hdsearch",
            title: "HD search: exact k-nearest neighbours of 2,048 points in 64 dimensions (Table 1)",
            run: hdsearch,
            fixed: crate::settings::DESIGN_CORES_AND_NIC,
            memory: crate::memory::Memory::Prototype,
        },
        Experiment {
            id: "nbody",
            title: "N-body: gravitational forces of a node's bodies on remote ones (Table 1)",
            run: nbody,
            fixed: crate::settings::DESIGN_CORES_AND_NIC,
            memory: crate::memory::Memory::Prototype,
        },
    ]
}

/// One server design of an application: program, NIC and workload.
struct Design {
    name: String,
    program: &'static str,
    nic: NicKind,
    app: AppConfig,
}

/// What one design measured: its capacity and its low-load point.
struct Row {
    /// Closed-loop throughput (window 4), Mrps.
    capacity_mrps: f64,
    /// The open-loop point at 10 % of the capacity.
    low_mrps: f64,
    low: Measured,
}

/// Requests per point.
fn requests(r: &Runner) -> u64 {
    match r.scale {
        Scale::Quick => 200,
        Scale::Full => 4_000,
    }
}

fn load(app: &AppConfig, count: u64, mode: LoadMode) -> LoadConfig {
    LoadConfig {
        count,
        warmup: count / 10,
        mode,
        app: Some(app.clone()),
        ..LoadConfig::default()
    }
}

/// `d` on one core: its capacity (closed loop), then a Poisson load of 10 %
/// of it: "low load", where a request rarely waits for another.
fn low_load(r: &Runner, d: &Design) -> Result<Row> {
    let mut cfg = r.cfg.clone();
    cfg.node.cores = 1;
    let runner = r.sequential_with(cfg);
    let program = r.program(d.program)?;
    let count = requests(r);
    let run = |mode: LoadMode| {
        runner
            .run_on_node(&program, &[], d.nic, None, None, &load(&d.app, count, mode))
            .map_err(|e| e.during(format!("{} ({}, {mode:?})", d.name, d.program)))
    };
    let capacity_mrps = run(LoadMode::Closed { window: 4 })?.load.throughput_mrps;
    let low_mrps = 0.1 * capacity_mrps;
    let low = run(LoadMode::Open {
        rate_mrps: low_mrps,
    })?;
    Ok(Row {
        capacity_mrps,
        low_mrps,
        low,
    })
}

/// Every design's low-load row (in parallel).
fn rows(r: &Runner, label: &str, designs: &[Design]) -> Result<Vec<Row>> {
    r.par_map(label, designs, |d| low_load(r, d))
}

/// The markdown table of the designs' low-load points.
fn table(designs: &[Design], rows: &[Row]) -> String {
    let lines: Vec<String> = designs
        .iter()
        .zip(rows)
        .map(|(d, row)| {
            let m = &row.low.load;
            format!(
                "| {} | {:.3} | {:.2} | {:.2} | {:.2} | {:.3} |",
                d.name,
                row.low_mrps,
                m.p50_ns / 1000.0,
                m.p99_ns / 1000.0,
                m.client_p50_ns / 1000.0,
                row.capacity_mrps
            )
        })
        .collect();
    format!(
        "Low load (Poisson at 10 % of each design's closed-loop capacity), one core:\n\n\
         | design | load (Mrps) | p50 (us) | p99 (us) | p50 at the client (us) | capacity (Mrps) |\n\
         |---|---|---|---|---|---|\n{}",
        lines.join("\n")
    )
}

/// The Table 1 targets `{prefix}-p50-us` and, if published, `{prefix}-p99-us`
/// of `row`, each with `why` (how the workload differs from the paper's).
fn table1_targets(prefix: &str, row: &Row, why: &str) -> Vec<Target> {
    let m = &row.low.load;
    [
        Target::from_table(
            &format!("{prefix}-p50-us"),
            m.p50_ns / 1000.0,
            format!("one core at {:.3} Mrps; {why}", row.low_mrps),
        ),
        Target::from_table(
            &format!("{prefix}-p99-us"),
            m.p99_ns / 1000.0,
            format!("the same point's p99; {why}"),
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn oracle_note(app: &str, module: &str) -> String {
    format!(
        "Every reply was checked by the {app} oracle (crates/apps/src/{module}.rs): zero wrong \
         replies at every point."
    )
}

fn othello(r: &Runner) -> Result<ExperimentResult> {
    let designs: Vec<Design> = [2, 1, 3]
        .into_iter()
        .map(|depth| Design {
            name: format!("depth {depth}"),
            program: "othello",
            nic: NicKind::Nanopu,
            app: AppConfig::Othello(OthelloConfig {
                depth,
                ..OthelloConfig::default()
            }),
        })
        .collect();
    let rows = rows(r, "othello", &designs)?;
    let targets = table1_targets(
        "othello",
        &rows[0],
        &format!(
            "a depth-2 negamax with alpha-beta over bitboards and a weighted-square evaluation, \
             positions from random games of 4-50 plies (our code: the paper names neither its \
             player nor its depth; at depth 1 our median is {:.2} us)",
            rows[1].low.load.p50_ns / 1000.0
        ),
    );
    Ok(ExperimentResult {
        id: "othello".into(),
        title: "Othello player: fixed-depth alpha-beta search (Table 1)".into(),
        description: format!(
            "An Othello player (sdk/programs/othello): a position in the request, a fixed-depth \
             negamax search with alpha-beta pruning, the chosen square in the reply. Positions from \
             seeded random games of 4-50 plies; the oracle searches them again with a plain negamax. \
             Depth 2 is the Table 1 row; depths 1 and 3 show how the cost grows. {} requests per \
             point; response time at the server's wire.",
            requests(r)
        ),
        figures: Vec::new(),
        targets,
        notes: vec![table(&designs, &rows), oracle_note("Othello", "othello")],
        wall_s: 0.0,
        cpu_s: 0.0,
    })
}

fn nn(r: &Runner) -> Result<ExperimentResult> {
    let app = AppConfig::Nn(NnConfig::default());
    let designs = [
        Design {
            name: "nanoPU".into(),
            program: "nn",
            nic: NicKind::Nanopu,
            app: app.clone(),
        },
        Design {
            name: "traditional".into(),
            program: "trad_nn",
            nic: NicKind::Icenic,
            app,
        },
    ];
    let rows = rows(r, "nn", &designs)?;
    let (nano, trad) = (&rows[0].low.load, &rows[1].low.load);
    Ok(ExperimentResult {
        id: "nn".into(),
        title: "NN inference: a small integer network, nanoPU vs traditional NIC".into(),
        description: format!(
            "A fully-connected network of {}-{}-{}-{} units with integer weights generated at              start (sdk/programs/nn, trad_nn; ReLU and a shift between layers): the input vector in              the request, the outputs and their argmax in the reply. The nanoPU version accumulates              the first layer as the inputs come off netRX; the traditional one reads them from its              DMA buffer. Table 1 has no NN row: the paper publishes no number to compare with. {}              requests per point; response time at the server's wire.",
            nn::INPUTS,
            nn::HIDDEN1,
            nn::HIDDEN2,
            nn::OUTPUTS,
            requests(r)
        ),
        figures: Vec::new(),
        targets: Vec::new(),
        notes: vec![
            table(&designs, &rows),
            format!(
                "Median: nanoPU {:.2} us, traditional {:.2} us ({:.2}x); p99: {:.2} vs {:.2} us. \
                 About 1,800 multiply-adds per request dominate both: the NIC path is a small part.",
                nano.p50_ns / 1000.0,
                trad.p50_ns / 1000.0,
                trad.p50_ns / nano.p50_ns,
                nano.p99_ns / 1000.0,
                trad.p99_ns / 1000.0
            ),
            oracle_note("NN", "nn"),
        ],
        wall_s: 0.0,
        cpu_s: 0.0,
    })
}

fn int(r: &Runner) -> Result<ExperimentResult> {
    let designs = [Design {
        name: "nanoPU".into(),
        program: "int_proc",
        nic: NicKind::Nanopu,
        app: AppConfig::Int(IntConfig::default()),
    }];
    let rows = rows(r, "int", &designs)?;
    let targets = table1_targets(
        "int",
        &rows[0],
        "reports of 2-5 hops (48-64 B) on 256 paths over 64 switches; per report the program \
         updates one path's moving average and each hop's switch counter: a few dozen instructions \
         (our state machine: the paper does not describe its own)",
    );
    Ok(ExperimentResult {
        id: "int".into(),
        title: "INT processing: per-path latency and heavy hitters from telemetry reports (Table 1)"
            .into(),
        description: format!(
            "In-band network telemetry reports (sdk/programs/int_proc): the path and, per hop, the \
             switch, its queue depth and the hop latency. The program keeps each path's average \
             latency (EWMA) and each switch's accumulated queue depth, and replies with an alert when \
             a path's average crosses {} ns or a switch's counter reaches {} packets, else with an \
             ack. 5 % of hops are congested. {} requests per point; response time at the server's \
             wire.",
            int_proc::LATENCY_THRESHOLD_NS,
            int_proc::HEAVY_QUEUE,
            requests(r)
        ),
        figures: Vec::new(),
        targets,
        notes: vec![
            table(&designs, &rows),
            "Every reply was checked by the INT oracle (crates/apps/src/int_proc.rs), which replays \
             the program's state machine in send order: zero wrong replies at every point."
                .to_string(),
        ],
        wall_s: 0.0,
        cpu_s: 0.0,
    })
}

fn classifier_designs() -> [Design; 1] {
    [Design {
        name: "nanoPU".into(),
        program: "classifier",
        nic: NicKind::Nanopu,
        app: AppConfig::Classifier(ClassifierConfig::default()),
    }]
}

fn classifier(r: &Runner) -> Result<ExperimentResult> {
    let designs = classifier_designs();
    let rows = rows(r, "classifier", &designs)?;
    let targets = table1_targets(
        "classifier",
        &rows[0],
        &format!(
            "{} generated ClassBench-style rules, tuple-space search: 25 hash probes per header into \
             2.4 MB of rules and a 1 MB bucket table, most of them misses of the 512 KB L2 (the \
             paper names neither its rule set nor its algorithm; `memory-systems` shows the \
             classifier under each memory system)",
            classifier::RULES
        ),
    );
    Ok(ExperimentResult {
        id: "classifier".into(),
        title: "Packet classifier: tuple-space search over 100K ClassBench-style rules (Table 1)"
            .into(),
        description: format!(
            "5-tuple classification (sdk/programs/classifier) against {} ClassBench-style rules \
             generated at start (prefixes of 32/24/16/8/0 bits, TCP/UDP/any, port ranges and 32 \
             common destination ports), indexed for tuple-space search over the 25 pairs of prefix \
             lengths; the reply is the first matching rule. 80 % of headers are drawn inside a random \
             rule, 20 % uniformly. {} requests per point; response time at the server's wire.",
            classifier::RULES,
            requests(r)
        ),
        figures: Vec::new(),
        targets,
        notes: vec![
            table(&designs, &rows),
            oracle_note("classifier (a linear scan of the rules)", "classifier"),
        ],
        wall_s: 0.0,
        cpu_s: 0.0,
    })
}

fn hdsearch_designs() -> [Design; 2] {
    [
        Design {
            name: "nanoPU, the prototype's workload (hd_distance)".into(),
            program: "hd_distance",
            nic: NicKind::Nanopu,
            app: AppConfig::LnicHdsearch(LnicHdSearchConfig {
                vectors: lnic_hdsearch::Vectors::Generated,
                ..LnicHdSearchConfig::default()
            }),
        },
        Design {
            name: "nanoPU, exact 4-NN over 2,048 points (hdsearch)".into(),
            program: "hdsearch",
            nic: NicKind::Nanopu,
            app: AppConfig::HdSearch(HdSearchConfig::default()),
        },
    ]
}

fn hdsearch(r: &Runner) -> Result<ExperimentResult> {
    let designs = hdsearch_designs();
    let rows = rows(r, "hdsearch", &designs)?;
    let targets = table1_targets(
        "hdsearch",
        &rows[0],
        &format!(
            "the prototype's HD search workload (software/euclidean-dist, driven as FireSim's switch \
             model's EUCLIDEAN_DIST load): the squared distance from a 64-dimension 16-bit query to 2-5 \
             candidates among {} vectors, the closest id returned",
            lnic_hdsearch::VECTORS
        ),
    );
    Ok(ExperimentResult {
        id: "hdsearch".into(),
        title: "HD search: the prototype's workload, and an exact k-NN search (Table 1)".into(),
        description: format!(
            "The Table 1 keys come from `sdk/programs/hd_distance`, our version of the prototype's HD \
             search program (l-nic/chipyard software/euclidean-dist/lnic-euclidean-dist.cc): {} vectors \
             of {} 16-bit dimensions held by the server, requests in its load generator's format \
             (firesim switch.cc EUCLIDEAN_DIST: 2 to 5 distinct candidate ids, uniform in 1..=10000), \
             the id of the closest candidate returned. Our vectors and queries are generated (the \
             prototype's are all ones), so the oracle checks a real answer. Beside it, our deeper \
             variant `sdk/programs/hdsearch`: the exact {} nearest neighbours of a query among {} points \
             of {} one-byte dimensions in {} clusters, found with box bounds (no key). {} requests per \
             point; response time at the server's wire.",
            lnic_hdsearch::VECTORS,
            lnic_hdsearch::DIMS,
            hdsearch::K,
            hdsearch::POINTS,
            hdsearch::DIMS,
            hdsearch::CLUSTERS,
            requests(r)
        ),
        figures: Vec::new(),
        targets,
        notes: vec![
            table(&designs, &rows),
            oracle_note("HD search (the distances recomputed; brute force for the k-NN)", "hdsearch"),
        ],
        wall_s: 0.0,
        cpu_s: 0.0,
    })
}

fn nbody(r: &Runner) -> Result<ExperimentResult> {
    let designs: Vec<Design> = [1, 4]
        .into_iter()
        .map(|bodies| Design {
            name: format!(
                "{bodies} remote bod{} per request",
                if bodies == 1 { "y" } else { "ies" }
            ),
            program: "nbody",
            nic: NicKind::Nanopu,
            app: AppConfig::Nbody(NbodyConfig {
                bodies,
                ..NbodyConfig::default()
            }),
        })
        .collect();
    let rows = rows(r, "nbody", &designs)?;
    let targets = table1_targets(
        "nbody",
        &rows[0],
        &format!(
            "one remote body per request against the node's {} bodies: {} softened force terms, each \
             with a square root and a division (our guess at the paper's per-message work, which it \
             does not state)",
            nbody::LOCAL,
            nbody::LOCAL
        ),
    );
    Ok(ExperimentResult {
        id: "nbody".into(),
        title: "N-body: gravitational forces of a node's bodies on remote ones (Table 1)".into(),
        description: format!(
            "A node of an N-body simulation (sdk/programs/nbody) holds {} bodies; a request carries \
             remote bodies (positions and masses as doubles, read from netRX as they arrive), the \
             reply the softened gravitational force the node's bodies exert on each (doubles). \
             The oracle computes the same doubles bit for bit (no fused multiply-adds in the \
             program). One remote body per request is the Table 1 row; four show the cost per body. \
             {} requests per point; response time at the server's wire.",
            nbody::LOCAL,
            requests(r)
        ),
        figures: Vec::new(),
        targets,
        notes: vec![table(&designs, &rows), oracle_note("N-body", "nbody")],
        wall_s: 0.0,
        cpu_s: 0.0,
    })
}

/// The Table 1 point of `hdsearch` or `classifier` alone, as the experiment
/// measures it (`memory-systems` runs it under each memory system).
pub(crate) fn table1_point(r: &Runner, id: &str) -> Result<Measured> {
    let design = match id {
        "hdsearch" => hdsearch_designs().into_iter().next(),
        _ => classifier_designs().into_iter().next(),
    };
    low_load(r, &design.expect("a design")).map(|row| row.low)
}
