//! The papers' experiments (`nanopu_experiments`): list them, run one and
//! return its figures and targets as Python data, and write results (from
//! any machine, e.g. Ray workers) as `nanopu experiment` and `nanopu
//! reproduce` write them.

use crate::config::effective;
use crate::errors::{config_error, experiment_error};
use crate::progress::Ticker;
use anyhow::anyhow;
use nanopu_experiments::{ExperimentError, Runner, Scale};
use nanopu_report::{ExperimentResult, Figure, Series, Target};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::mpsc;

/// Every experiment: (id, title), in report order.
#[pyfunction]
pub fn experiments() -> Vec<(String, String)> {
    nanopu_experiments::all()
        .into_iter()
        .map(|e| (e.id.to_string(), e.title.to_string()))
        .collect()
}

/// Where the experiments find the guest programs (`NANOPU_SDK_BUILD`, else
/// the checkout's `sdk/build`).
#[pyfunction]
pub fn sdk_build_dir() -> PathBuf {
    nanopu_experiments::sdk_build_dir()
}

fn scale(name: &str) -> PyResult<Scale> {
    match name {
        "quick" => Ok(Scale::Quick),
        "full" => Ok(Scale::Full),
        s => Err(config_error(anyhow!("scale {s:?}: expected quick or full"))),
    }
}

/// Runs experiment `id` on `threads` host threads (default: all cores);
/// returns it as a dict (id, title, description, wall_s, notes, targets,
/// figures with their measured and published series).
#[pyfunction]
#[pyo3(signature = (id, scale="quick", seed=1, config="", threads=None, progress=None))]
pub fn experiment<'py>(
    py: Python<'py>,
    id: &str,
    scale: &str,
    seed: u64,
    config: &str,
    threads: Option<usize>,
    progress: Option<PyObject>,
) -> PyResult<Bound<'py, PyDict>> {
    let scale = self::scale(scale)?;
    let cfg = effective(config)?;
    let all = nanopu_experiments::all();
    let Some(e) = all.iter().find(|e| e.id == id) else {
        let known: Vec<_> = all.iter().map(|e| e.id).collect();
        return Err(experiment_error(ExperimentError::Unknown {
            id: id.to_string(),
            known: known.join(", "),
        }));
    };
    e.check_config(&cfg).map_err(config_error)?;
    let mut runner = Runner::new(cfg, scale, threads, seed);
    // The Python side draws the progress; the bar still counts points.
    runner.progress = indicatif::ProgressBar::hidden();
    let mut ticker = Ticker::new(progress, false);
    let result = py.allow_threads(|| {
        std::thread::scope(|s| -> PyResult<ExperimentResult> {
            let (done_tx, done_rx) = mpsc::channel();
            let shared = &runner;
            let worker = s.spawn(move || {
                let start = std::time::Instant::now();
                let cpu = nanopu_experiments::thread_cpu_ns();
                let r = e.run_on(shared).map(|mut r| {
                    r.wall_s = start.elapsed().as_secs_f64();
                    shared.add_cpu_since(cpu);
                    r.cpu_s = shared.cpu_s();
                    r
                });
                let _ = done_tx.send(());
                r
            });
            let count = |r: &Runner| (r.progress.position(), r.progress.length().unwrap_or(0));
            loop {
                let finished = done_rx.recv_timeout(crate::progress::INTERVAL).is_ok();
                let (done, total) = count(&runner);
                let seen = if finished {
                    ticker.finish(done, total, &[])
                } else {
                    ticker.tick(done, total, &[])
                };
                if let Err(interrupt) = seen {
                    // Points already running finish; the rest do not start.
                    runner.stop.store(true, Ordering::Relaxed);
                    let _ = worker.join();
                    return Err(interrupt);
                }
                if finished {
                    break;
                }
            }
            worker
                .join()
                .map_err(|_| experiment_error(anyhow!("experiment {id} panicked")))?
                .map_err(|err| experiment_error(err.during(format!("experiment {id}"))))
        })
    })?;
    to_dict(py, &result)
}

fn to_dict<'py>(py: Python<'py>, r: &ExperimentResult) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("id", &r.id)?;
    d.set_item("title", &r.title)?;
    d.set_item("description", &r.description)?;
    d.set_item("wall_s", r.wall_s)?;
    d.set_item("cpu_s", r.cpu_s)?;
    d.set_item("notes", &r.notes)?;
    let targets = r
        .targets
        .iter()
        .map(|t| {
            let td = PyDict::new(py);
            td.set_item("key", &t.key)?;
            td.set_item("measured", t.measured)?;
            td.set_item("unit", &t.unit)?;
            td.set_item("published", t.published)?;
            td.set_item("note", &t.note)?;
            Ok(td)
        })
        .collect::<PyResult<Vec<_>>>()?;
    d.set_item("targets", targets)?;
    let series = |s: &[Series]| -> Vec<(String, Vec<(f64, f64)>)> {
        s.iter()
            .map(|s| (s.name.clone(), s.points.clone()))
            .collect()
    };
    let figures = r
        .figures
        .iter()
        .map(|f| {
            let fd = PyDict::new(py);
            fd.set_item("name", &f.name)?;
            fd.set_item("title", &f.title)?;
            fd.set_item("x_label", &f.x_label)?;
            fd.set_item("y_label", &f.y_label)?;
            fd.set_item("log_x", f.log_x)?;
            fd.set_item("log_y", f.log_y)?;
            fd.set_item("series", series(&f.series))?;
            fd.set_item("published", series(&f.published))?;
            Ok(fd)
        })
        .collect::<PyResult<Vec<_>>>()?;
    d.set_item("figures", figures)?;
    Ok(d)
}

#[derive(FromPyObject)]
struct TargetData {
    #[pyo3(item)]
    key: String,
    #[pyo3(item)]
    measured: f64,
    #[pyo3(item)]
    unit: String,
    #[pyo3(item)]
    published: f64,
    #[pyo3(item)]
    note: String,
}

#[derive(FromPyObject)]
struct FigureData {
    #[pyo3(item)]
    name: String,
    #[pyo3(item)]
    title: String,
    #[pyo3(item)]
    x_label: String,
    #[pyo3(item)]
    y_label: String,
    #[pyo3(item)]
    log_x: bool,
    #[pyo3(item)]
    log_y: bool,
    #[pyo3(item)]
    series: Vec<(String, Vec<(f64, f64)>)>,
    #[pyo3(item)]
    published: Vec<(String, Vec<(f64, f64)>)>,
}

#[derive(FromPyObject)]
struct ResultData {
    #[pyo3(item)]
    id: String,
    #[pyo3(item)]
    title: String,
    #[pyo3(item)]
    description: String,
    #[pyo3(item)]
    wall_s: f64,
    /// Absent from results of an older version.
    #[pyo3(item, default)]
    cpu_s: f64,
    #[pyo3(item)]
    notes: Vec<String>,
    #[pyo3(item)]
    targets: Vec<TargetData>,
    #[pyo3(item)]
    figures: Vec<FigureData>,
}

fn from_data(r: ResultData) -> ExperimentResult {
    let series = |s: Vec<(String, Vec<(f64, f64)>)>| -> Vec<Series> {
        s.into_iter().map(|(n, p)| Series::new(n, p)).collect()
    };
    ExperimentResult {
        id: r.id,
        title: r.title,
        description: r.description,
        wall_s: r.wall_s,
        cpu_s: r.cpu_s,
        notes: r.notes,
        targets: r
            .targets
            .into_iter()
            .map(|t| Target {
                key: t.key,
                measured: t.measured,
                unit: t.unit,
                published: t.published,
                note: t.note,
            })
            .collect(),
        figures: r
            .figures
            .into_iter()
            .map(|f| Figure {
                name: f.name,
                title: f.title,
                x_label: f.x_label,
                y_label: f.y_label,
                log_x: f.log_x,
                log_y: f.log_y,
                series: series(f.series),
                published: series(f.published),
            })
            .collect(),
    }
}

/// Writes experiment results (dicts from [`experiment`]) into `out`: each
/// one's CSV, SVG and JSON files (`nanopu experiment`), or with `report`
/// all of them with `report.md` and `summary.json` (`nanopu reproduce`).
#[pyfunction]
#[pyo3(signature = (results, out, report=false, config="", command="nanopu reproduce"))]
pub fn write_experiments(
    results: Vec<Bound<'_, PyAny>>,
    out: PathBuf,
    report: bool,
    config: &str,
    command: &str,
) -> PyResult<()> {
    let results = results
        .iter()
        .map(|r| r.extract::<ResultData>().map(from_data))
        .collect::<PyResult<Vec<_>>>()?;
    std::fs::create_dir_all(&out).map_err(|cause| {
        experiment_error(ExperimentError::CreateDir {
            path: out.clone(),
            cause,
        })
    })?;
    if report {
        let config_toml = effective(config)?.to_toml();
        nanopu_report::write_report(&out, &results, &config_toml, command)
            .map_err(experiment_error)?;
    } else {
        for r in &results {
            r.write(&out).map_err(experiment_error)?;
        }
    }
    Ok(())
}
