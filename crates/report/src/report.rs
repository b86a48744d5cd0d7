//! `report.md` and `summary.json` for the whole reproduction.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use serde::Serialize;

use crate::num::{fmt_num, fmt_ratio};
use crate::{
    published, write_json, ExperimentResult, ReportError, Target, MEMORY_SYSTEM_MOVES, PUBLISHED,
};

/// The marker of a result outside its tolerance (or with no value).
const OFF: &str = "⚠ outside tolerance";
/// The marker of a ratio key that does not show the published effect.
const NO_EFFECT: &str = "⚠ effect not shown";
const NO_VALUE: &str = "⚠ no comparable value";

/// Writes every result's files (as [`ExperimentResult::write`]), then
/// `report.md` and `summary.json`, into `dir`.
///
/// `config_toml` is the effective configuration (`nanopu config`), shown at
/// the end of the report; `command` is the command line that produced the
/// results, without dates or host paths, so that two runs give the same report
/// apart from wall times.
///
/// Fails, before writing anything, if two experiments share an id, two
/// figures a name, or two targets a key.
pub fn write_report(
    dir: &Path,
    results: &[ExperimentResult],
    config_toml: &str,
    command: &str,
) -> Result<(), ReportError> {
    let summary = summary(results)?;
    check_unique(results)?;
    for r in results {
        r.write(dir)?;
    }
    write_json(&dir.join("summary.json"), &summary)?;
    let md = markdown(results, config_toml, command);
    let path = dir.join("report.md");
    fs::write(&path, md).map_err(|e| ReportError::write(&path, e))
}

/// One `summary.json` entry.
#[derive(Serialize)]
struct SummaryEntry<'a> {
    measured: f64,
    unit: &'a str,
    published: f64,
    ratio: Option<f64>,
    /// Relative tolerance of the key (`published.rs`).
    tolerance: f64,
    within_tolerance: bool,
    /// Mostly configured constants (`published.rs`'s `CONFIGURED`).
    configured: bool,
}

fn summary(results: &[ExperimentResult]) -> Result<BTreeMap<&str, SummaryEntry<'_>>, ReportError> {
    let mut out = BTreeMap::new();
    let mut owner: BTreeMap<&str, &str> = BTreeMap::new();
    for r in results {
        for t in &r.targets {
            if let Some(first) = owner.insert(&t.key, &r.id) {
                return Err(ReportError::Duplicate {
                    what: "summary.json key",
                    name: t.key.clone(),
                    first: first.into(),
                    second: r.id.clone(),
                });
            }
            let entry = SummaryEntry {
                measured: t.measured,
                unit: &t.unit,
                published: t.published,
                ratio: t.ratio(),
                tolerance: t.tolerance(),
                within_tolerance: t.within_tolerance(),
                configured: t.configured().is_some(),
            };
            out.insert(t.key.as_str(), entry);
        }
    }
    Ok(out)
}

fn check_unique(results: &[ExperimentResult]) -> Result<(), ReportError> {
    let mut ids: BTreeMap<&str, &str> = BTreeMap::new();
    let mut figures: BTreeMap<&str, &str> = BTreeMap::new();
    for r in results {
        if r.id == "summary" {
            return Err(ReportError::InvalidName {
                what: "experiment",
                name: r.id.clone(),
                reason: "ID.json would overwrite summary.json",
            });
        }
        if ids.insert(&r.id, &r.id).is_some() {
            return Err(ReportError::Duplicate {
                what: "experiment",
                name: r.id.clone(),
                first: r.id.clone(),
                second: r.id.clone(),
            });
        }
        for f in &r.figures {
            // A figure named like an experiment's JSON or the summary would
            // be overwritten too, but those have a different extension.
            if let Some(first) = figures.insert(&f.name, &r.id) {
                return Err(ReportError::Duplicate {
                    what: "figure",
                    name: f.name.clone(),
                    first: first.into(),
                    second: r.id.clone(),
                });
            }
        }
    }
    Ok(())
}

/// Text for a markdown table cell: no line breaks, `|` escaped.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\r', '\n'], " ")
}

/// The `measured/published` cell, with the marker when off.
fn ratio_cell(t: &Target) -> String {
    match t.ratio() {
        None => NO_VALUE.to_string(),
        r if !t.within_tolerance()
            && !published::shows_effect(&t.unit, t.published, t.measured) =>
        {
            format!("{} {NO_EFFECT}", fmt_ratio(r))
        }
        r if !t.within_tolerance() => format!("{} {OFF}", fmt_ratio(r)),
        r if t.configured().is_some() => format!("{} (configured)", fmt_ratio(r)),
        r => fmt_ratio(r),
    }
}

/// The tolerance as a band: `±10 %`, or `0.5-2x` from 100 % up.
fn tolerance_cell(t: &Target) -> String {
    let tol = t.tolerance();
    if tol >= 1.0 {
        format!("{}-{}x", fmt_num(1.0 / (1.0 + tol)), fmt_num(1.0 + tol))
    } else {
        format!("±{} %", fmt_num(tol * 100.0))
    }
}

/// The note cell, prefixed with disagreements with targets.md.
fn note_cell(t: &Target) -> String {
    let mut parts = Vec::new();
    if let Some(p) = published(&t.key) {
        if p.unit != t.unit {
            parts.push(format!("⚠ targets.md gives this in {}", p.unit));
        }
        if p.value != t.published {
            parts.push(format!("⚠ targets.md publishes {}", fmt_num(p.value)));
        }
    }
    if !t.note.is_empty() {
        parts.push(t.note.clone());
    }
    cell(&parts.join("; "))
}

/// Ends `md` with exactly one blank line.
fn blank_line(md: &mut String) {
    md.truncate(md.trim_end_matches('\n').len());
    md.push_str("\n\n");
}

/// The section on the keys the memory-system change moved
/// ([`MEMORY_SYSTEM_MOVES`]): each measured in this run, its value before,
/// now, and why.
fn memory_moves(md: &mut String, targets: &[(&ExperimentResult, &Target)]) {
    let rows: Vec<_> = MEMORY_SYSTEM_MOVES
        .iter()
        .filter_map(|m| {
            let (_, t) = targets.iter().find(|(_, t)| t.key == m.key)?;
            Some((m, t))
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    blank_line(md);
    md.push_str(
        "## What the prototype's memory system moved\n\nThe nanoPU experiments run on the \
         prototype's memory system below the L2 (`[node.memory] preset = \"firesim-lnic\"`, \
         issue #49) where they had the fluid model's flat 75 ns DRAM. The keys that change moved \
         (every other key kept its value to the last digit), before (on the fluid model) and in \
         this run; `docs/memory.md` explains each. The values before are a full-scale run's \
         with the default seed: at another scale or seed this run's differ for that reason too.\n\n\
         | key | before | this run | change | why |\n|---|---|---|---|---|\n",
    );
    for (m, t) in rows {
        let change = if t.measured == m.before {
            "⚠ did not move".to_string()
        } else {
            format!("{:+.1} %", (t.measured / m.before - 1.0) * 100.0)
        };
        let _ = writeln!(
            md,
            "| `{}` | {} | {} {} | {change} | {} |",
            m.key,
            fmt_num(m.before),
            fmt_num(t.measured),
            t.unit,
            cell(m.why)
        );
    }
}

fn markdown(results: &[ExperimentResult], config_toml: &str, command: &str) -> String {
    let mut md = String::new();
    let targets: Vec<(&ExperimentResult, &Target)> = results
        .iter()
        .flat_map(|r| r.targets.iter().map(move |t| (r, t)))
        .collect();
    let off: Vec<_> = targets
        .iter()
        .filter(|(_, t)| !t.within_tolerance())
        .collect();
    let missing: Vec<_> = PUBLISHED
        .iter()
        .filter(|p| !targets.iter().any(|(_, t)| t.key == p.key))
        .collect();

    md.push_str("# nanoPU reproduction report\n\n");
    md.push_str("Produced by:\n\n```sh\n");
    md.push_str(command.trim());
    md.push_str(
        "\n```\n\nThe experiments ran side by side: each one's wall-clock time below runs from its \
         start to its end, with others running beside it.\n\n## Summary\n\n",
    );
    let configured = targets
        .iter()
        .filter(|(_, t)| t.configured().is_some())
        .count();
    let configured_off = off.iter().filter(|(_, t)| t.configured().is_some()).count();
    let _ = writeln!(
        md,
        "{} results reproduced by the model, compared with the papers: {} within their tolerance, {} not. \
         {} more are mostly configured constants ({} within their tolerance), counted apart. A ratio \
         key counts only if it shows the published effect: the same direction, at least half as large \
         (in log terms). Each key's tolerance, and why, and the configured keys are in \
         `crates/report/src/published.rs`; keys measured another way (`proto-`, `lnic-evaluation-`, \
         `artifact-`) take the tolerance of the key they measure again.",
        targets.len() - configured,
        targets.len() - configured - (off.len() - configured_off),
        off.len() - configured_off,
        configured,
        configured - configured_off
    );
    if !off.is_empty() {
        md.push_str("\nOutside their tolerance, or with no measured value (⚠), and why:\n\n");
        for (r, t) in &off {
            let more = if r.notes.is_empty() {
                String::new()
            } else {
                format!(" (more in the notes of `{}`)", r.id)
            };
            let why = match (t.note.trim().is_empty(), r.notes.is_empty()) {
                (true, true) => "⚠ the experiment gives no explanation".to_string(),
                (true, false) => format!("See the notes of `{}`.", r.id),
                (false, _) => format!("{}{more}", cell(t.note.trim())),
            };
            if !t.measured.is_finite() {
                let _ = writeln!(
                    md,
                    "- `{}` ({}): not measured ({}), published {} {}. {why}",
                    t.key,
                    r.id,
                    fmt_num(t.measured),
                    fmt_num(t.published),
                    t.unit
                );
                continue;
            }
            let effect = if published::shows_effect(&t.unit, t.published, t.measured) {
                ""
            } else {
                " (the published effect is not shown)"
            };
            let _ = writeln!(
                md,
                "- `{}` ({}): measured {} {}, published {} {} — ratio {}, tolerance {}{effect}. {why}",
                t.key,
                r.id,
                fmt_num(t.measured),
                t.unit,
                fmt_num(t.published),
                t.unit,
                fmt_ratio(t.ratio()),
                tolerance_cell(t)
            );
        }
    }
    let configured_keys: Vec<_> = targets
        .iter()
        .filter_map(|(_, t)| t.configured().map(|why| (t, why)))
        .collect();
    if !configured_keys.is_empty() {
        md.push_str("\nMostly configured constants, not counted as reproduced:\n\n");
        for (t, why) in configured_keys {
            let _ = writeln!(md, "- `{}`: {why}", t.key);
        }
    }
    if !missing.is_empty() {
        md.push_str("\nFixed keys of targets.md that no experiment measured:\n\n");
        for p in &missing {
            let _ = writeln!(
                md,
                "- `{}`: {} (published {} {})",
                p.key,
                p.meaning,
                fmt_num(p.value),
                p.unit
            );
        }
    }

    memory_moves(&mut md, &targets);

    blank_line(&mut md);
    md.push_str("## Source of the model\n\n");
    let _ = writeln!(
        md,
        "What each experiment's model follows: the prototype's RTL and harness (l-nic/rocket-chip, \
         l-nic/lnic, l-nic/chipyard, l-nic/firesim), the papers, or our assumptions \
         (`docs/fidelity.md` has every parameter with its line). The nanoPU {}.\n",
        crate::model_source::core_source()
    );
    md.push_str("| experiment | results | source of the model |\n|---|---|---|\n");
    for r in results {
        let keys: Vec<String> = r.targets.iter().map(|t| format!("`{}`", t.key)).collect();
        let _ = writeln!(
            md,
            "| `{}` | {} | {} |",
            r.id,
            keys.join(", "),
            cell(crate::model_source::model_source(&r.id).unwrap_or("not recorded"))
        );
    }

    for r in results {
        blank_line(&mut md);
        let _ = write!(md, "## {}\n\n`{}`", r.title.trim(), r.id);
        let _ = write!(md, ", {} s wall-clock", fmt_num(r.wall_s));
        if r.cpu_s > 0.0 {
            let _ = write!(md, ", {} s of host CPU", fmt_num(r.cpu_s));
        }
        md.push_str("\n\n");
        if !r.description.trim().is_empty() {
            md.push_str(r.description.trim());
            md.push_str("\n\n");
        }
        if let Some(src) = crate::model_source::model_source(&r.id) {
            let _ = writeln!(md, "Source of the model: {src}.\n");
        }
        if !r.targets.is_empty() {
            md.push_str(
                "| result | measured | published | unit | measured/published | tolerance | note |\n",
            );
            md.push_str("|---|---:|---:|---|---|---|---|\n");
            for t in &r.targets {
                let _ = writeln!(
                    md,
                    "| `{}` | {} | {} | {} | {} | {} | {} |",
                    cell(&t.key),
                    fmt_num(t.measured),
                    fmt_num(t.published),
                    cell(&t.unit),
                    ratio_cell(t),
                    tolerance_cell(t),
                    note_cell(t)
                );
            }
            md.push('\n');
        }
        for f in &r.figures {
            let alt = f.title.replace(['[', ']'], "").replace('\n', " ");
            let _ = write!(md, "![{alt}]({0}.svg)\n\nData: [{0}.csv]({0}.csv)", f.name);
            match f.points_not_drawn() {
                0 => md.push_str("\n\n"),
                n => {
                    let _ = write!(
                        md,
                        " ({n} point{} not drawn: NaN or infinite, or ≤ 0 on a log axis)\n\n",
                        if n == 1 { "" } else { "s" }
                    );
                }
            }
        }
        if !r.notes.is_empty() {
            md.push_str("Notes:\n\n");
            for n in &r.notes {
                let _ = writeln!(md, "- {}", n.trim().replace('\n', "\n  "));
            }
        }
    }

    blank_line(&mut md);
    md.push_str("## Configuration\n\n```toml\n");
    md.push_str(config_toml.trim_end());
    md.push_str("\n```\n");
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(key: &str, measured: f64, published: f64) -> Target {
        Target {
            key: key.into(),
            measured,
            unit: "ns".into(),
            published,
            note: String::new(),
        }
    }

    #[test]
    fn cells_mark_misses() {
        // An unknown key: within 2x.
        assert_eq!(ratio_cell(&target("a", 100.0, 69.0)), "1.45");
        assert_eq!(ratio_cell(&target("a", 300.0, 69.0)), format!("4.35 {OFF}"));
        assert_eq!(ratio_cell(&target("a", 10.0, 69.0)), format!("0.14 {OFF}"));
        assert_eq!(ratio_cell(&target("a", f64::NAN, 69.0)), NO_VALUE);
        assert_eq!(tolerance_cell(&target("a", 1.0, 1.0)), "0.5-2x");
        // w2w-8B: within 10 %, and mostly configured constants.
        assert_eq!(
            ratio_cell(&target("w2w-8B", 72.5, 69.0)),
            "1.05 (configured)"
        );
        assert_eq!(
            ratio_cell(&target("w2w-8B", 80.0, 69.0)),
            format!("1.16 {OFF}")
        );
        assert_eq!(tolerance_cell(&target("w2w-8B", 1.0, 1.0)), "±10 %");
        // An alternative measurement takes the key's tolerance.
        assert_eq!(
            ratio_cell(&target("proto-hts-max-load", 0.9, 0.96)),
            format!("0.94 {OFF}")
        );
        assert_eq!(cell("a|b\nc"), "a\\|b c");
        // A ratio key within its 0.5-2x band but with no effect, or a
        // reversed one, is a miss; a gain of the published size is not.
        let ratio = |measured| Target {
            unit: "x".into(),
            ..target("nb-srq-vs-rpcvalet-tput", measured, 1.75)
        };
        assert_eq!(ratio_cell(&ratio(1.0)), format!("0.57 {NO_EFFECT}"));
        assert_eq!(ratio_cell(&ratio(0.9)), format!("0.51 {NO_EFFECT}"));
        assert_eq!(ratio_cell(&ratio(1.75)), "1.00");
    }

    #[test]
    fn the_memory_change_section_lists_measured_moved_keys_only() {
        let r = ExperimentResult {
            id: "e".into(),
            targets: vec![
                target("mica-p50-us", 0.3, 0.4),
                target("othello-p50-us", 6.025215, 0.9),
                target("w2w-8B", 70.0, 69.0),
            ],
            ..Default::default()
        };
        let md = markdown(&[r], "", "nanopu reproduce");
        assert!(md.contains("## What the prototype's memory system moved"));
        assert!(
            md.contains("| `mica-p50-us` | 0.9974 | 0.3 ns | -69.9 % |"),
            "{md}"
        );
        assert!(md.contains("| `othello-p50-us` | 6.025 | 6.025 ns | ⚠ did not move |"));
        let section = md
            .split("## What the prototype's memory system moved")
            .nth(1)
            .and_then(|s| s.split("## Source of the model").next())
            .unwrap();
        assert!(!section.contains("`w2w-8B`"));
        assert!(!section.contains("`classifier-p50-us`"));
        // Without a moved key measured, no section.
        let none = ExperimentResult {
            id: "e".into(),
            targets: vec![target("w2w-8B", 70.0, 69.0)],
            ..Default::default()
        };
        assert!(!markdown(&[none], "", "x").contains("memory system moved"));
    }

    #[test]
    fn configured_keys_are_counted_apart() {
        let r = ExperimentResult {
            id: "e".into(),
            targets: vec![
                target("w2w-8B", 70.0, 69.0),
                target("fastpath-8B", 17.0, 17.0),
                target("trad-loopback-8B", 500.0, 51.0),
            ],
            ..Default::default()
        };
        let md = markdown(&[r], "", "nanopu reproduce");
        assert!(
            md.contains(
                "2 results reproduced by the model, compared with the papers: 1 within their tolerance, 1 not. \
                 1 more are mostly configured constants (1 within their tolerance), counted apart."
            ),
            "{md}"
        );
        assert!(md.contains("- `w2w-8B`: about 52 of its 69 ns"), "{md}");
        let no_effect = ExperimentResult {
            id: "nb".into(),
            targets: vec![Target {
                unit: "x".into(),
                ..target("nb-srq-vs-rpcvalet-tput", 0.9, 1.75)
            }],
            ..Default::default()
        };
        let md = markdown(&[no_effect], "", "nanopu reproduce");
        assert!(
            md.contains("tolerance 0.5-2x (the published effect is not shown)."),
            "{md}"
        );
    }

    #[test]
    fn notes_flag_disagreement_with_targets_md() {
        let mut t = target("w2w-8B", 70.0, 70.0);
        t.unit = "us".into();
        t.note = "MAC modelled as 0 cycles".into();
        let n = note_cell(&t);
        assert!(n.contains("⚠ targets.md gives this in ns"), "{n}");
        assert!(n.contains("⚠ targets.md publishes 69"), "{n}");
        assert!(n.ends_with("MAC modelled as 0 cycles"), "{n}");
        assert_eq!(note_cell(&target("w2w-8B", 1.0, 69.0)), "");
    }

    #[test]
    fn duplicate_keys_are_errors() {
        let r = |id: &str| ExperimentResult {
            id: id.into(),
            targets: vec![target("k", 1.0, 1.0)],
            ..Default::default()
        };
        let err = summary(&[r("one"), r("two")]).err().unwrap();
        assert!(
            err.to_string()
                .contains("\"k\" appears twice (in one and in two)"),
            "{err}"
        );
    }
}
