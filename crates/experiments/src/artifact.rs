//! Table 1 rows measured with the prototype's own programs: with
//! `NANOPU_CHIPYARD` naming a checkout of l-nic/chipyard (tag
//! `nanoPU-artifact-v1.0`), `scripts/build-lnic-tests.sh` builds them
//! unmodified and each row runs under the load generator that speaks its
//! request format (as l-nic/firesim's switch model does), measured by the
//! same definition as our version of the row: on one core, p50 and p99 at
//! the server's wire at 10 % of the program's closed-loop capacity, Poisson
//! arrivals.
//! The keys are `artifact-<row>-p50-us` / `-p99-us`, compared with Table 1;
//! the `table1` summary sets them beside ours.
//!
//! Rows run so far: `mica` (`lnic-multi-core-mica`, `--app lnic-mica`) and
//! `hdsearch` (`software/euclidean-dist`, `--app lnic-hdsearch`).
//! docs/artifact-programs.md says what the other rows need.

use super::prototype_flow::{LOAD_GEN_IP, NODE_IP};
use super::{Experiment, Runner, Scale};
use crate::{ensure, Result};
use nanopu_apps::lnic_hdsearch::LnicHdSearchConfig;
use nanopu_apps::lnic_mica::LnicMicaConfig;
use nanopu_apps::AppConfig;
use nanopu_report::{compared_with, ExperimentResult, Target};
use nanopu_system::{LoadConfig, LoadMode, NicKind, Start};
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn experiments() -> Vec<Experiment> {
    vec![Experiment {
        id: "artifact",
        title: "Table 1 with the prototype's own programs (NANOPU_CHIPYARD)",
        run: artifact,
        fixed: crate::Fixed {
            keys: &["node.cores"],
            why: "the prototype's programs serve on one core (ONE_CONTEXT_ONE_CORE), as our versions \
                  of the rows are measured",
        },
        memory: crate::memory::Memory::Prototype,
    }]
}

/// The environment variable naming the user's chipyard checkout.
pub const CHIPYARD_ENV: &str = "NANOPU_CHIPYARD";

/// One Table 1 row run with the prototype's program.
struct Row {
    /// The row's name in the keys (`artifact-<row>-p50-us`).
    row: &'static str,
    /// The program, as `build-lnic-tests.sh` names it.
    program: &'static str,
    app: fn() -> AppConfig,
    /// Start-up messages the program sends its load generator when ready.
    start_messages: u32,
    /// The closed-loop window of the capacity run: our version's.
    window: u32,
}

const ROWS: &[Row] = &[
    Row {
        row: "mica",
        program: "lnic-multi-core-mica",
        app: || AppConfig::LnicMica(LnicMicaConfig::default()),
        start_messages: 1,
        window: 8,
    },
    Row {
        row: "hdsearch",
        program: "lnic-euclidean-dist",
        app: || AppConfig::LnicHdsearch(LnicHdSearchConfig::default()),
        start_messages: 1,
        window: 4,
    },
];

fn requests(r: &Runner) -> u64 {
    match r.scale {
        Scale::Quick => 400,
        Scale::Full => 5_000,
    }
}

/// Builds the rows' programs from `chipyard` into `out`; the script names
/// each one that fails.
fn build(chipyard: &Path, out: &Path) -> Result<()> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/build-lnic-tests.sh");
    ensure!(
        script.is_file(),
        "{CHIPYARD_ENV} is set, but {} is not here to build the prototype's programs (run nanopu from its repository's build)",
        script.display()
    );
    let o = Command::new(&script)
        .arg(chipyard)
        .arg(out)
        .args(ROWS.iter().map(|r| r.program))
        .output()
        .map_err(|e| crate::fail!("{}: {e}", script.display()))?;
    ensure!(
        o.status.success(),
        "{CHIPYARD_ENV}={}: building the prototype's programs failed:\n{}{}",
        chipyard.display(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    Ok(())
}

fn load(app: AppConfig, count: u64, start_messages: u32, mode: LoadMode) -> LoadConfig {
    LoadConfig {
        count,
        warmup: count / 10,
        mode,
        app: Some(app),
        start: Start::StartMessages(start_messages),
        timeout_ns: 50_000_000,
        ..LoadConfig::default()
    }
}

fn target(key: String, measured: f64, note: &str) -> Target {
    let published = compared_with(&key).expect("an artifact- key of a Table 1 row");
    Target {
        key,
        measured,
        unit: published.unit.into(),
        published: published.value,
        note: note.into(),
    }
}

fn artifact(r: &Runner) -> Result<ExperimentResult> {
    let mut result = ExperimentResult {
        id: "artifact".into(),
        title: "Table 1 with the prototype's own programs".into(),
        description: format!(
            "The prototype's programs (l-nic/chipyard tag nanoPU-artifact-v1.0, tests-lnic/), built \
             unmodified from the checkout {CHIPYARD_ENV} names by scripts/build-lnic-tests.sh, each \
             driven in its own request format as l-nic/firesim's switch model drives it, and measured \
             as our version of the row is: on one core, p50 and p99 at the server's wire at 10 % of the \
             program's closed-loop capacity (with the window our version's experiment uses), Poisson \
             arrivals. Rows: {}.",
            ROWS.iter().map(|r| r.row).collect::<Vec<_>>().join(", ")
        ),
        ..Default::default()
    };
    let Some(chipyard) = std::env::var_os(CHIPYARD_ENV).map(PathBuf::from) else {
        result.notes.push(format!(
            "Not run: set {CHIPYARD_ENV} to a checkout of l-nic/chipyard (tag nanoPU-artifact-v1.0) to \
             measure Table 1 with the prototype's own programs beside ours."
        ));
        return Ok(result);
    };
    let out = std::env::temp_dir().join(format!("nanopu-artifact-{}", std::process::id()));
    let built = build(&chipyard, &out);
    // One core, as our versions run (the programs serve on core 0 only:
    // ONE_CONTEXT_ONE_CORE).
    let mut cfg = r.cfg.clone();
    cfg.node.cores = 1;
    let one_core = r.sequential_with(cfg);
    let measured = built.and_then(|()| {
        let count = requests(r);
        r.par_map("artifact", ROWS, |row| {
            let program = out.join(format!("{}.elf", row.program));
            let run = |mode| {
                one_core
                    .run_on_node(
                        &program,
                        &[],
                        NicKind::Nanopu,
                        None,
                        Some((NODE_IP, LOAD_GEN_IP)),
                        &load((row.app)(), count, row.start_messages, mode),
                    )
                    .map_err(|e| e.during(format!("{} ({})", row.row, row.program)))
            };
            let capacity = run(LoadMode::Closed { window: row.window })?
                .load
                .throughput_mrps;
            let rate_mrps = 0.1 * capacity;
            Ok((capacity, rate_mrps, run(LoadMode::Open { rate_mrps })?))
        })
    });
    let _ = std::fs::remove_dir_all(&out);
    for (row, (capacity, rate, m)) in ROWS.iter().zip(measured?) {
        let note = format!("{}, {rate:.3} Mrps", row.program);
        result.targets.push(target(
            format!("artifact-{}-p50-us", row.row),
            m.load.p50_ns / 1000.0,
            &note,
        ));
        result.targets.push(target(
            format!("artifact-{}-p99-us", row.row),
            m.load.p99_ns / 1000.0,
            &note,
        ));
        result.notes.push(format!(
            "{} (`{}`): capacity {capacity:.2} Mrps closed-loop; at {rate:.3} Mrps p50 {:.2} us, p99 {:.2} \
             us at the server's wire, {} of {} replies checked by the oracle, none wrong.",
            row.row,
            row.program,
            m.load.p50_ns / 1000.0,
            m.load.p99_ns / 1000.0,
            m.load.received,
            m.load.sent,
        ));
    }
    Ok(result)
}
