//! `memory-systems`: the Table 1 applications whose time is mostly memory
//! (MICA, set algebra, HD search, the packet classifier), each at its Table 1
//! point under every named memory system below the L2 (issue #49): what the
//! prototype measured (`firesim-lnic`, the nanoPU experiments' default), what
//! a real DRAM gives (`ddr4-3200`), and the fluid model the simulator had
//! before (`fluid`).

use crate::memory::Memory;
use crate::{Experiment, Fixed, Measured, Result, Runner};
use nanopu_node::config::MemoryPreset;
use nanopu_report::{moved_before, ExperimentResult, Figure, Series};

pub fn experiments() -> Vec<Experiment> {
    vec![Experiment {
        id: "memory-systems",
        title: "Table 1's memory-bound applications under each memory system",
        run,
        fixed: Fixed {
            keys: &["node.memory", "node.dram.model", "node.fased_llc.enabled"],
            why: "memory-systems runs every named memory system itself",
        },
        memory: Memory::AsConfigured,
    }]
}

/// The applications, as their experiments name them.
const APPS: [&str; 4] = ["mica", "setalg", "hdsearch", "classifier"];

/// The memory systems, in the order of the table.
const PRESETS: [(MemoryPreset, &str); 3] = [
    (MemoryPreset::FiresimLnic, "firesim-lnic"),
    (MemoryPreset::Ddr43200, "ddr4-3200"),
    (MemoryPreset::Fluid, "fluid"),
];

/// Index of the fluid model in [`PRESETS`].
const FLUID: usize = 2;

/// Checks the values report.md gives as "before" for the keys the memory
/// change moved ([`nanopu_report::MEMORY_SYSTEM_MOVES`]) against this run of
/// the applications under the fluid model (`fluid(app, p99)`, in us): they
/// are the same points, so they must agree.
fn fluid_before_check(fluid: impl Fn(usize, bool) -> f64) -> String {
    let mut agree = Vec::new();
    let mut differ = Vec::new();
    for (a, app) in APPS.iter().enumerate() {
        for p99 in [false, true] {
            let key = format!("{app}-{}-us", if p99 { "p99" } else { "p50" });
            let Some(before) = moved_before(&key) else {
                continue;
            };
            let now = fluid(a, p99);
            if ((now - before) / before).abs() < 1e-6 {
                agree.push(format!("`{key}`"));
            } else {
                differ.push(format!("`{key}` recorded {before}, fluid run {now}"));
            }
        }
    }
    if differ.is_empty() {
        format!(
            "The values before the memory change that report.md gives for {} agree with this run's \
             `fluid` rows.",
            agree.join(", ")
        )
    } else {
        format!(
            "⚠ The values before the memory change that report.md gives differ from this run's \
             `fluid` rows: {} (the fluid model or the applications changed since they were \
             recorded).",
            differ.join("; ")
        )
    }
}

fn point(r: &Runner, app: &str, preset: MemoryPreset) -> Result<Measured> {
    let mut r = r.clone();
    r.cfg.node.memory.preset = Some(preset);
    match app {
        "mica" | "setalg" => crate::apps::table1_point(&r, app),
        _ => crate::apps2::table1_point(&r, app),
    }
    .map_err(|e| e.during(format!("{app} under {preset:?}")))
}

fn run(r: &Runner) -> Result<ExperimentResult> {
    let items: Vec<(usize, usize)> = (0..APPS.len())
        .flat_map(|a| (0..PRESETS.len()).map(move |p| (a, p)))
        .collect();
    let m = r.par_map("memory-systems", &items, |&(a, p)| {
        point(r, APPS[a], PRESETS[p].0)
    })?;
    let at = |a: usize, p: usize| &m[a * PRESETS.len() + p];
    let rows: Vec<String> = items
        .iter()
        .map(|&(a, p)| {
            let x = at(a, p);
            let n = x.load.received.max(1) as f64;
            let fased = x.memory.fased_llc.as_ref().map_or("-".to_string(), |s| {
                let reads = (s.read_hits + s.read_misses).max(1);
                format!("{:.0} %", 100.0 * s.read_hits as f64 / reads as f64)
            });
            format!(
                "| {} | {} | {:.2} | {:.2} | {:.0} | {:.1} | {fased} |",
                APPS[a],
                PRESETS[p].1,
                x.load.p50_ns / 1000.0,
                x.load.p99_ns / 1000.0,
                x.memory.dram_read_bytes as f64 / n,
                x.memory.llc.misses as f64 / n,
            )
        })
        .collect();
    let series = |stat: fn(&Measured) -> f64| {
        PRESETS
            .iter()
            .enumerate()
            .map(|(p, (_, name))| {
                Series::new(
                    *name,
                    (0..APPS.len())
                        .map(|a| ((a + 1) as f64, stat(at(a, p))))
                        .collect(),
                )
            })
            .collect::<Vec<_>>()
    };
    let before_check = fluid_before_check(|a, p99| {
        let x = at(a, FLUID);
        (if p99 { x.load.p99_ns } else { x.load.p50_ns }) / 1000.0
    });
    let x_label = format!(
        "application ({})",
        APPS.iter()
            .enumerate()
            .map(|(i, a)| format!("{} {a}", i + 1))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(ExperimentResult {
        id: "memory-systems".into(),
        title: "Table 1's memory-bound applications under each memory system".into(),
        description: "MICA, set algebra, HD search and the packet classifier, each at its Table 1 \
                      point (one nanoPU core, Poisson load at 10 % of its closed-loop capacity, the \
                      same programs, requests and seeds as their own experiments), under each named \
                      memory system below the L2 (`[node.memory] preset`, `docs/memory.md`): \
                      `firesim-lnic` (what the prototype's FireSim runs had: FASED's 4 MiB LLC \
                      model in front of its DDR3 FR-FCFS model; the nanoPU experiments' default, \
                      so this row repeats their keys), `ddr4-3200` (a real DDR4-3200 channel at \
                      real nanoseconds, no LLC below the L2) and `fluid` (a flat 75 ns DRAM \
                      behind bandwidth, the simulator's model before issue #49)."
            .into(),
        figures: vec![
            Figure {
                name: "memory-systems-p50".into(),
                title: "Median response time by memory system".into(),
                x_label: x_label.clone(),
                y_label: "p50 response time (us)".into(),
                series: series(|x| x.load.p50_ns / 1000.0),
                ..Default::default()
            },
            Figure {
                name: "memory-systems-p99".into(),
                title: "99th-percentile response time by memory system".into(),
                x_label,
                y_label: "p99 response time (us)".into(),
                series: series(|x| x.load.p99_ns / 1000.0),
                ..Default::default()
            },
        ],
        targets: Vec::new(),
        notes: vec![
            format!(
                "Counters are over the whole point, the program's start-up included.\n\n\
                 | application | memory system | p50 (us) | p99 (us) | DRAM bytes read per request \
                 | L2 misses per request | FASED LLC read hits |\n|---|---|---|---|---|---|---|\n{}",
                rows.join("\n")
            ),
            "Why the applications move: a request of MICA (an index bucket and a 528-byte log \
             entry among 5.3 MB of pairs), HD search (2-5 vectors of 128 B among 1.3 MB) or the \
             classifier (25 hash probes into 3.4 MB of rules and buckets) misses the 512 KB L2 \
             several times, one miss at a time on the in-order core. Below the L2, `firesim-lnic` \
             has FASED's 4 MiB LLC model, which answers most of those misses after warm-up (its \
             read hits above) in tens of cycles; `ddr4-3200` sends each to a DRAM channel (tens of \
             ns, row hits cheaper than misses); `fluid` charges a flat 75 ns. Set algebra's posting \
             lists fit in the L2, so its time does not move."
                .into(),
            before_check,
        ],
        wall_s: 0.0,
        cpu_s: 0.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recorded_before_values_are_checked_against_the_fluid_run() {
        assert_eq!(PRESETS[FLUID].0, MemoryPreset::Fluid);
        let recorded = |a: usize, p99: bool| {
            let key = format!("{}-{}-us", APPS[a], if p99 { "p99" } else { "p50" });
            moved_before(&key).unwrap()
        };
        let ok = fluid_before_check(recorded);
        assert!(ok.starts_with("The values"), "{ok}");
        assert!(ok.contains("`classifier-p99-us`"));
        let off = fluid_before_check(|a, p99| recorded(a, p99) * if a == 0 { 1.01 } else { 1.0 });
        assert!(off.starts_with("⚠"), "{off}");
        assert!(off.contains("`mica-p50-us` recorded 0.997375"), "{off}");
        assert!(!off.contains("`hdsearch-p50-us` recorded"));
    }
}
