//! Writes what the experiments produce: one CSV and one SVG plot per figure, a
//! JSON record per experiment, and for the whole reproduction `report.md` and
//! `summary.json`.
//!
//! An experiment builds an [`ExperimentResult`] and either calls
//! [`ExperimentResult::write`] or hands all results to [`write_report`], which
//! writes every experiment's files next to the report so that its links hold.
//!
//! Files, for an experiment `ID` with a figure `NAME`, all in one directory:
//!
//! - `NAME.csv`: long format, header `series,source,x,y`, one row per point of
//!   every series in the order given; `source` is `measured` for
//!   [`Figure::series`] and `published` for [`Figure::published`]. Every point is
//!   written, including non-finite values, which appear as `NaN`, `inf` or `-inf`
//!   (Rust's `f64` parser, pandas and R read them back).
//! - `NAME.svg`: the plot. Points that cannot be drawn (a non-finite coordinate,
//!   or zero or negative on a log axis) are left out, lines break around them, and
//!   the plot and report.md say how many were left out.
//! - `ID.json`: the experiment's id, title, wall time, targets (with `ratio`),
//!   figure files and notes.
//! - `summary.json`: `{"KEY": {"measured": N, "unit": "...", "published": N,
//!   "ratio": N, "tolerance": T, "within_tolerance": B, "configured": B}, ...}` over all targets, keys
//!   sorted. A non-finite `measured` or an undefined `ratio` is `null`. `within_tolerance` is false for a
//!   ratio key that does not show the published effect ([`shows_effect`]); `configured` is true for a key
//!   whose value is mostly configured constants ([`CONFIGURED`]), which the report counts apart.
//! - `report.md`: command line, per experiment its description, a results table
//!   (rows outside their tolerance carry "⚠"), the figures and the notes; the fixed
//!   keys of targets.md that nothing measured; the effective configuration.
//!
//! # Example
//!
//! ```
//! use nanopu_report::{write_report, ExperimentResult, Figure, Series, Target};
//!
//! let dir = tempfile::tempdir()?;
//! let result = ExperimentResult {
//!     id: "loopback".into(),
//!     title: "Loopback through the NIC".into(),
//!     description: "One core runs the loopback program.".into(),
//!     figures: vec![Figure {
//!         name: "loopback-latency-vs-size".into(),
//!         title: "Loopback latency vs message size".into(),
//!         x_label: "message size (B)".into(),
//!         y_label: "latency (ns)".into(),
//!         log_x: true,
//!         series: vec![Series::new("nanoPU", vec![(8.0, 17.4), (1024.0, 95.0)])],
//!         published: vec![Series::new("nanoPU", vec![(8.0, 17.0)])],
//!         ..Default::default()
//!     }],
//!     targets: vec![Target::from_table("fastpath-8B", 17.4, "").expect("a fixed key")],
//!     notes: vec![],
//!     wall_s: 0.2,
//!     cpu_s: 0.4,
//! };
//! write_report(dir.path(), &[result], "[node]\n", "nanopu reproduce")?;
//! assert!(dir.path().join("loopback-latency-vs-size.svg").is_file());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

mod error;
mod memory_moves;
mod model_source;
mod num;
mod plot;
mod published;
mod report;
mod table;

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;

pub use error::ReportError;
pub use memory_moves::{moved_before, MovedKey, MEMORY_SYSTEM_MOVES};
pub use model_source::{core_source, model_source};
pub use published::{
    compared_with, configured, published, shows_effect, tolerance, Published, CONFIGURED,
    DEFAULT_TOLERANCE, PUBLISHED,
};
pub use report::write_report;

/// One result compared with the paper.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Target {
    /// A `summary.json` key; the fixed ones are in [`PUBLISHED`] (targets.md),
    /// others are welcome.
    pub key: String,
    /// What the simulator gave. `NaN` if the experiment could not measure it:
    /// it is then reported as a miss.
    pub measured: f64,
    /// Unit of `measured` and `published`, e.g. `"ns"`, `"Mrps"`, `"x"`.
    pub unit: String,
    /// What the paper reports.
    pub published: f64,
    /// Why the two differ, or empty.
    pub note: String,
}

impl Target {
    /// A target for a fixed key of targets.md, with its unit and published
    /// value filled in; `None` if targets.md does not list `key`.
    pub fn from_table(key: &str, measured: f64, note: impl Into<String>) -> Option<Self> {
        published(key).map(|p| Target {
            key: p.key.into(),
            measured,
            unit: p.unit.into(),
            published: p.value,
            note: note.into(),
        })
    }

    /// `measured / published`, or `None` when either is not finite or
    /// `published` is zero.
    pub fn ratio(&self) -> Option<f64> {
        num::ratio(self.measured, self.published)
    }

    /// Whether `measured / published` lies in [0.5, 2].
    pub fn within_2x(&self) -> bool {
        num::within_2x(self.ratio())
    }

    /// The relative tolerance of this key ([`published::tolerance`]).
    pub fn tolerance(&self) -> f64 {
        published::tolerance(&self.key)
    }

    /// Whether `measured / published` lies in `[1 / (1 + t), 1 + t]` for
    /// the key's tolerance `t` and, for a ratio key, the measured ratio shows
    /// the published effect ([`shows_effect`]); false without a ratio.
    pub fn within_tolerance(&self) -> bool {
        let t = self.tolerance();
        self.ratio()
            .is_some_and(|r| r <= 1.0 + t && r >= 1.0 / (1.0 + t))
            && shows_effect(&self.unit, self.published, self.measured)
    }

    /// Why this key is mostly configured constants ([`configured`]), or
    /// `None` if the model works it out.
    pub fn configured(&self) -> Option<&'static str> {
        configured(&self.key)
    }
}

/// A data series of a figure: points `(x, y)`, drawn in the order given.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Series {
    /// Legend entry and the `series` column of the CSV.
    pub name: String,
    /// The points, joined by a line in this order (measured series).
    pub points: Vec<(f64, f64)>,
}

impl Series {
    /// A series named `name`.
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Series {
            name: name.into(),
            points,
        }
    }
}

/// A figure, written as `NAME.csv` and `NAME.svg` (see the crate docs).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figure {
    /// File stem: letters, digits, `-`, `_`, `.`; unique across a report.
    pub name: String,
    /// Plot title, and the image's alt text in report.md.
    pub title: String,
    /// X axis label, with its unit: `"message size (B)"`.
    pub x_label: String,
    /// Y axis label, with its unit: `"latency (ns)"`.
    pub y_label: String,
    /// Logarithmic x axis.
    pub log_x: bool,
    /// Logarithmic y axis.
    pub log_y: bool,
    /// Measured series: lines with dot markers, one colour each.
    pub series: Vec<Series>,
    /// Published reference points: hollow markers, no line, labelled
    /// "NAME (published)". A published series with the same name as a measured
    /// one takes its colour.
    pub published: Vec<Series>,
}

impl Figure {
    /// How many points (measured and published) the plot leaves out: a
    /// non-finite coordinate, or a value ≤ 0 on a log axis.
    pub fn points_not_drawn(&self) -> usize {
        self.series
            .iter()
            .chain(&self.published)
            .flat_map(|s| &s.points)
            .filter(|&&p| !self.drawable(p))
            .count()
    }

    fn drawable(&self, (x, y): (f64, f64)) -> bool {
        x.is_finite() && y.is_finite() && (!self.log_x || x > 0.0) && (!self.log_y || y > 0.0)
    }
}

/// What one experiment produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExperimentResult {
    /// Short id, also the JSON file's stem: `"loopback-latency-vs-size"`.
    pub id: String,
    /// Section title in report.md.
    pub title: String,
    /// The setup in prose (markdown), as the paper would state it.
    pub description: String,
    /// Figures, each written as CSV and SVG.
    pub figures: Vec<Figure>,
    /// Results compared with the paper.
    pub targets: Vec<Target>,
    /// Caveats and model assumptions, one per entry (markdown).
    pub notes: Vec<String>,
    /// Host wall-clock time the experiment took, in seconds. Experiments
    /// run side by side, so this overlaps the others' time.
    pub wall_s: f64,
    /// Host CPU time the experiment's threads used, in seconds (0 if not
    /// measured): its cost, whatever ran beside it.
    pub cpu_s: f64,
}

impl ExperimentResult {
    /// Writes `NAME.csv` and `NAME.svg` for every figure and `ID.json` into
    /// `dir` (created if missing). Returns the paths written, in that order.
    pub fn write(&self, dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
        check_name("experiment", &self.id)?;
        let mut seen = HashMap::new();
        for f in &self.figures {
            check_name("figure", &f.name)?;
            if seen.insert(f.name.as_str(), ()).is_some() {
                return Err(ReportError::Duplicate {
                    what: "figure",
                    name: f.name.clone(),
                    first: self.id.clone(),
                    second: self.id.clone(),
                });
            }
        }
        fs::create_dir_all(dir).map_err(|e| ReportError::write(dir, e))?;
        let mut written = Vec::new();
        for f in &self.figures {
            let csv_path = dir.join(format!("{}.csv", f.name));
            table::write_csv(f, &csv_path)?;
            written.push(csv_path);
            let svg_path = dir.join(format!("{}.svg", f.name));
            let svg = plot::render_svg(f).map_err(|message| ReportError::Plot {
                path: svg_path.clone(),
                message,
            })?;
            fs::write(&svg_path, svg).map_err(|e| ReportError::write(&svg_path, e))?;
            written.push(svg_path);
        }
        let json_path = dir.join(format!("{}.json", self.id));
        write_json(&json_path, &self.record())?;
        written.push(json_path);
        Ok(written)
    }

    fn record(&self) -> ExperimentRecord<'_> {
        ExperimentRecord {
            id: &self.id,
            title: &self.title,
            wall_s: self.wall_s,
            cpu_s: self.cpu_s,
            targets: self
                .targets
                .iter()
                .map(|t| TargetRecord {
                    key: &t.key,
                    measured: t.measured,
                    unit: &t.unit,
                    published: t.published,
                    ratio: t.ratio(),
                    note: &t.note,
                })
                .collect(),
            figures: self
                .figures
                .iter()
                .map(|f| FigureRecord {
                    name: &f.name,
                    title: &f.title,
                    csv: format!("{}.csv", f.name),
                    svg: format!("{}.svg", f.name),
                    points_not_drawn: f.points_not_drawn(),
                })
                .collect(),
            notes: &self.notes,
        }
    }
}

/// `ID.json`.
#[derive(Serialize)]
struct ExperimentRecord<'a> {
    id: &'a str,
    title: &'a str,
    wall_s: f64,
    cpu_s: f64,
    targets: Vec<TargetRecord<'a>>,
    figures: Vec<FigureRecord<'a>>,
    notes: &'a [String],
}

#[derive(Serialize)]
struct TargetRecord<'a> {
    key: &'a str,
    measured: f64,
    unit: &'a str,
    published: f64,
    ratio: Option<f64>,
    note: &'a str,
}

#[derive(Serialize)]
struct FigureRecord<'a> {
    name: &'a str,
    title: &'a str,
    csv: String,
    svg: String,
    points_not_drawn: usize,
}

/// Names become file stems: keep them portable and inside the directory.
fn check_name(what: &'static str, name: &str) -> Result<(), ReportError> {
    let ok = !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(ReportError::InvalidName {
            what,
            name: name.into(),
            reason: "use letters, digits, '-', '_' and '.', not starting with '.'",
        })
    }
}

/// Pretty JSON with a final newline; non-finite numbers become `null`.
fn write_json(path: &Path, value: &impl Serialize) -> Result<(), ReportError> {
    let mut text = serde_json::to_string_pretty(value).map_err(|e| ReportError::write(path, e))?;
    text.push('\n');
    fs::write(path, text).map_err(|e| ReportError::write(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(check_name("figure", "loopback-latency_vs.size2").is_ok());
        for bad in ["", ".hidden", "a/b", "a b", "..", "ü"] {
            assert!(check_name("figure", bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn from_table_fills_unit_and_value() {
        let t = Target::from_table("w2w-8B", 138.0, "").unwrap();
        assert_eq!((t.unit.as_str(), t.published), ("ns", 69.0));
        assert_eq!(t.ratio(), Some(2.0));
        assert!(t.within_2x());
        assert!(Target::from_table("nope", 1.0, "").is_none());
    }

    #[test]
    fn points_not_drawn_counts_nan_and_log_nonpositive() {
        let fig = Figure {
            log_y: true,
            series: vec![Series::new(
                "a",
                vec![(1.0, 1.0), (f64::NAN, 1.0), (2.0, 0.0)],
            )],
            published: vec![Series::new("a", vec![(1.0, -1.0), (3.0, 3.0)])],
            ..Default::default()
        };
        assert_eq!(fig.points_not_drawn(), 3);
    }
}
