//! Figs. 7-8 again, through the nanoPU prototype's own evaluation flow: the
//! interface of its `lnic-evaluation.c` (arguments MAC IP TEST_TYPE
//! STALL_FACTOR STALL_FREQ, the node at 10.0.0.2, the load generator at
//! 10.0.0.1, start-up messages, 16 B `[service_cycles, sent_cycle]`
//! requests) and the parameters of its FireSim runs (l-nic/firesim,
//! `deploy/workloads/lnic-evaluation/config_*_runtime.ini`: fixed 1600-cycle
//! service, exponential inter-arrival times, context chosen at random, stall
//! factor 10 every 101st request of context 1).
//!
//! The program is ours (`sdk/programs/lnic_eval`, same interface, written for
//! this SDK) and, if `NANOPU_LNIC_EVALUATION` names an ELF built from the
//! prototype's sources (`scripts/build-lnic-evaluation.sh`), the prototype's
//! unmodified program too: an implementation of the same experiments
//! independent of `hts-vs-tis` and `bounded` (different programs, requests,
//! stall pattern and scheduler code), side by side with them.

use super::{highest_sustained, sustained, Experiment, Runner, Scale, SUSTAINED_DEFINITION};
use crate::{ensure, Result};
use nanopu_report::{ExperimentResult, Figure, Series, Target};
use nanopu_system::{Expect, LoadConfig, LoadMode, NicKind, Pattern, ServiceTime, Start};
use std::net::Ipv4Addr;
use std::path::PathBuf;

pub fn experiments() -> Vec<Experiment> {
    vec![Experiment {
        id: "prototype-flow",
        title: "Figs. 7-8 through the prototype's evaluation flow (lnic-evaluation interface)",
        run: prototype_flow,
        fixed: crate::settings::NIC_PER_POINT,
        memory: crate::memory::Memory::Prototype,
    }]
}

/// The environment variable naming the prototype's own program.
pub const LNIC_EVALUATION_ENV: &str = "NANOPU_LNIC_EVALUATION";

/// The prototype's addresses: node (root) and load generator (also the
/// prototype's other programs', `artifact`).
pub(crate) const NODE_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
pub(crate) const LOAD_GEN_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
/// `fixed_dist_cycles` of the prototype's Figs. 7-8 runs: 500 ns at 3.2 GHz.
const SERVICE_CYCLES: f64 = 1600.0;
/// The FireSim switch's iteration (its `linklatency=140` cycles in these
/// runs, config_*_runtime.ini): its load generator sends at most one
/// request per iteration, on iteration boundaries (switch.cc:685-700, 1362;
/// `LoadMode::OpenTicked`).
const LOAD_GEN_TICK_CYCLES: f64 = 140.0;
/// What timing a response in the switch adds to timing it at the node's
/// wire: the 140-cycle link each way (switch.cc:540 stamps a reply when it
/// reaches the switch, l.1055 a request when it leaves), at 3.2 GHz.
const SWITCH_TIMING_NS: f64 = 2.0 * 140.0 / 3.2;
/// `c1_stall_factor` / `c1_stall_freq` of its bounded runs.
const STALL_FACTOR: u64 = 10;
const STALL_FREQ: u64 = 100;

/// The test types of Figs. 7 and 8, and what they stand for.
const TESTS: [(&str, &str); 4] = [
    ("DIF_PRIORITY_LNIC_DRIVEN", "HTS"),
    ("DIF_PRIORITY_TIMER_DRIVEN", "TIS"),
    ("HIGH_PRIORITY_C1_STALL", "bound on"),
    ("LOW_PRIORITY_C1_STALL", "bound off"),
];

/// Mean inter-arrival times in cycles (`request_rate_lambda_inverse`). The
/// prototype's runs stepped down from 3200 by 200 (50 %, 53 %, ... of the 2
/// Mrps capacity, ending at 100 % or 114 %); here the loads of the other
/// scheduling sweeps from 50 % on (2 % steps up to 110 %), past saturation
/// for every test type.
fn lambda_inverse(r: &Runner) -> Vec<f64> {
    match r.scale {
        Scale::Quick => vec![3200.0, 2000.0, 1600.0, 1400.0],
        Scale::Full => super::scheduling::sweep_loads(r)
            .into_iter()
            .filter(|&l| l >= 0.5)
            .map(|l| SERVICE_CYCLES / l)
            .collect(),
    }
}

struct Implementation {
    name: &'static str,
    key_prefix: &'static str,
    program: PathBuf,
}

fn prototype_flow(r: &Runner) -> Result<ExperimentResult> {
    let mut impls = vec![Implementation {
        name: "lnic_eval (ours)",
        key_prefix: "proto",
        program: r.program("lnic_eval")?,
    }];
    let external = std::env::var_os(LNIC_EVALUATION_ENV).map(PathBuf::from);
    if let Some(p) = &external {
        ensure!(
            p.is_file(),
            "{LNIC_EVALUATION_ENV}={}: no such file (build it with scripts/build-lnic-evaluation.sh)",
            p.display()
        );
        impls.push(Implementation {
            name: "lnic-evaluation (prototype)",
            key_prefix: "lnic-evaluation",
            program: p.clone(),
        });
    }
    let lambdas = lambda_inverse(r);
    let mhz = r.cfg.node.core.clock_mhz as f64;
    let count = super::scheduling::requests(r);
    let run_impl = |program: &PathBuf, label: &str| {
        let items: Vec<(usize, usize)> = (0..TESTS.len())
            .flat_map(|ti| (0..lambdas.len()).map(move |li| (ti, li)))
            .collect();
        r.par_map(label, &items, |&(ti, li)| {
            let (test, _) = TESTS[ti];
            let stall_freq = if test.ends_with("C1_STALL") {
                STALL_FREQ
            } else {
                5
            };
            let args = [
                "00:26:E1:00:00:00".to_string(),
                NODE_IP.to_string(),
                test.to_string(),
                STALL_FACTOR.to_string(),
                stall_freq.to_string(),
            ];
            let load = LoadConfig {
                message_bytes: 16,
                count,
                warmup: count / 10,
                mode: LoadMode::OpenTicked {
                    rate_mrps: mhz / lambdas[li],
                    tick_ns: LOAD_GEN_TICK_CYCLES * 1000.0 / mhz,
                },
                context: 0,
                extra_contexts: vec![1],
                pattern: Pattern::LnicEval,
                expect: Expect::LnicEval,
                start: Start::StartMessages(2),
                seed: 7,
                service: ServiceTime::Fixed {
                    ns: SERVICE_CYCLES * 1000.0 / mhz,
                },
                timeout_ns: 10_000_000,
                ..LoadConfig::default()
            };
            r.run_on_node(
                program,
                &args,
                NicKind::Nanopu,
                None,
                Some((NODE_IP, LOAD_GEN_IP)),
                &load,
            )
            .map_err(|e| e.during(format!("{test} at {} cycles between requests", lambdas[li])))
        })
    };
    let mut m = run_impl(&impls[0].program, "prototype-flow")?;
    let mut failed_external = None;
    if impls.len() > 1 {
        // The prototype's program is not ours to fix: a failure is reported,
        // not fatal.
        match run_impl(&impls[1].program, "prototype-flow (prototype's program)") {
            Ok(more) => m.extend(more),
            Err(e) => {
                failed_external = Some(format!("{e:#}"));
                impls.pop();
            }
        }
    }
    let at = |ii: usize, ti: usize, li: usize| &m[(ii * TESTS.len() + ti) * lambdas.len() + li];
    let p99 = |ii: usize, ti: usize, li: usize, ctx: u16| {
        at(ii, ti, li)
            .load
            .per_context
            .iter()
            .find(|c| c.context == ctx)
            .map_or(f64::NAN, |c| c.p99_ns)
    };
    let service_ns = SERVICE_CYCLES * 1000.0 / mhz;
    let loads: Vec<f64> = lambdas.iter().map(|l| SERVICE_CYCLES / l).collect();
    let series = |ii: usize, ti: usize, ctx: u16, label: &str| {
        Series::new(
            format!("{}: {label}", impls[ii].name),
            (0..lambdas.len())
                .map(|li| (loads[li], p99(ii, ti, li, ctx) / 1000.0))
                .collect(),
        )
    };
    let mut fig7 = Vec::new();
    let mut fig8 = Vec::new();
    let mut targets = Vec::new();
    let mut notes = vec![format!(
        "Sustained: {SUSTAINED_DEFINITION}. Here the p99 is context 0's (priority 0 in the HTS and TIS \
         runs, the well-behaved thread in the stall runs); offered load is {SERVICE_CYCLES} cycles over the \
         mean inter-arrival time, as the prototype's load generator computes it."
    )];
    for (ii, imp) in impls.iter().enumerate() {
        fig7.push(series(ii, 0, 0, "HTS, priority 0"));
        fig7.push(series(ii, 1, 0, "TIS, priority 0"));
        fig7.push(series(ii, 0, 1, "HTS, priority 1"));
        fig8.push(series(ii, 2, 0, "well-behaved, bound on"));
        fig8.push(series(ii, 3, 0, "well-behaved, bound off"));
        let ok = |ti: usize, li: usize| {
            sustained(
                &at(ii, ti, li).load,
                count,
                p99(ii, ti, li, 0),
                service_ns,
                1.0,
            )
        };
        let maxes: Vec<_> = (0..TESTS.len())
            .map(|ti| highest_sustained(&loads, |li| ok(ti, li)))
            .collect();
        let ratio_low = p99(ii, 1, 0, 0) / p99(ii, 0, 0, 0);
        // Mean service with the stalls: one request of context 1 in 101 takes 10x.
        let stall_mean =
            SERVICE_CYCLES * (1.0 + 0.5 * (STALL_FACTOR - 1) as f64 / (STALL_FREQ + 1) as f64);
        let bounded_worst = (0..lambdas.len())
            .filter(|&li| stall_mean / lambdas[li] <= 1.0)
            .map(|li| p99(ii, 2, li, 0))
            .fold(f64::NAN, f64::max)
            / 1000.0;
        let key = |k: &str| format!("{}-{k}", imp.key_prefix);
        let extra = |k: &str, measured: f64, note: String| -> Target {
            let mut t = Target::from_table(k, measured, note).unwrap_or_default();
            t.key = key(k);
            t
        };
        targets.push(extra(
            "hts-max-load",
            maxes[0].0.unwrap_or(f64::NAN),
            format!(
                "{}: DIF_PRIORITY_LNIC_DRIVEN; the program waits on mcycle (wall time), as the prototype's \
                 does: a priority-1 request preempted by priority 0 keeps counting its service time off the \
                 core, so the core works less than {SERVICE_CYCLES} cycles a request and can go past 100 %{}",
                imp.name,
                if maxes[0].1 {
                    ""
                } else {
                    "; ⚠ the sweep never reached a load it fails to sustain"
                }
            ),
        ));
        targets.push(extra(
            "hts-vs-tis-p99-ratio-low",
            ratio_low,
            format!(
                "{}: priority 0, at {:.0} % load, timed at the node's wire; timed in the switch as the \
                 prototype's load generator did (2 x 140 cycles of link added to both p99s): {:.2}",
                imp.name,
                loads[0] * 100.0,
                (p99(ii, 1, 0, 0) + SWITCH_TIMING_NS) / (p99(ii, 0, 0, 0) + SWITCH_TIMING_NS)
            ),
        ));
        targets.push(extra(
            "bounded-p99-max-us",
            bounded_worst,
            format!(
                "{}: HIGH_PRIORITY_C1_STALL, context 0, up to 100 % load (mean service with the stalls)",
                imp.name
            ),
        ));
        notes.push(format!(
            "{}: highest load sustained: {}.",
            imp.name,
            TESTS
                .iter()
                .zip(&maxes)
                .map(|((test, what), (max, saturated))| format!(
                    "{test} ({what}) {}{}",
                    max.map_or("none".to_string(), |l| format!("{:.0} %", l * 100.0)),
                    if *saturated {
                        ""
                    } else {
                        " (the sweep's highest point)"
                    }
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if let Some(e) = failed_external {
        notes.push(format!(
            "⚠ The prototype's unmodified program ({}) did not run through the flow: {}",
            external
                .as_ref()
                .map_or(String::new(), |p| p.display().to_string()),
            e.replace('\n', " ")
        ));
    }
    if external.is_none() {
        notes.push(format!(
            "The prototype's unmodified program did not run: set {LNIC_EVALUATION_ENV}=/path/to/lnic-evaluation.elf \
             (built from your chipyard checkout by scripts/build-lnic-evaluation.sh CHIPYARD_DIR)."
        ));
    }
    Ok(ExperimentResult {
        id: "prototype-flow".into(),
        title: "Figs. 7-8 through the prototype's evaluation flow (lnic-evaluation interface)".into(),
        description: format!(
            "The thread-scheduling experiments as the prototype ran them: a program with the interface of \
             lnic-evaluation.c (`lnic_eval MAC 10.0.0.2 TEST_TYPE {STALL_FACTOR} STALL_FREQ`) on a 4-core node at \
             10.0.0.2, the load generator at 10.0.0.1, waiting for each thread's start-up message, then 16 B \
             requests [service cycles, send cycle] with a fixed {SERVICE_CYCLES}-cycle service to context 0 or 1 at \
             random, exponential inter-arrival times from {:.0} down to {:.0} cycles ({} requests per point), \
             sent as the FireSim load generator sends them: on its switch's 140-cycle iterations, at most one \
             per iteration (so the actual load is below the nominal one the axis shows; switch.cc:685-700). \
             Response times are taken at the node's wire; the load generator timed them in the switch, a \
             140-cycle link away each way (switch.cc:540, 1055), which adds at least 87.5 ns to each. The \
             program waits on mcycle (wall time) where `hts-vs-tis` spins for CPU time, and context 1 stalls \
             (x{STALL_FACTOR}) on every {}st request in the stall runs where `bounded` draws 1 % at random.",
            lambdas[0],
            lambdas[lambdas.len() - 1],
            count,
            STALL_FREQ + 1
        ),
        figures: vec![
            Figure {
                name: "prototype-flow-fig7".into(),
                title: "Prototype flow: p99 by thread priority, HTS vs TIS".into(),
                x_label: "offered load (fraction of 2 Mrps)".into(),
                y_label: "p99 response time (us)".into(),
                log_y: true,
                series: fig7,
                ..Default::default()
            },
            Figure {
                name: "prototype-flow-fig8".into(),
                title: "Prototype flow: well-behaved thread's p99, bound on and off".into(),
                x_label: "offered load (fraction of 2 Mrps)".into(),
                y_label: "p99 response time (us)".into(),
                log_y: true,
                series: fig8,
                ..Default::default()
            },
        ],
        targets,
        notes,
        wall_s: 0.0,
        cpu_s: 0.0,
    })
}
