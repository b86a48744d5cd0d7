//! Table 1 of the nanoPU paper at a glance: every application's low-load
//! median (and p99 where published) beside the paper's, gathered from the
//! application experiments of a `nanopu reproduce` run. It measures nothing
//! itself: it only sets side by side what the other experiments measured.

use nanopu_report::{ExperimentResult, Figure, Series, Target};

/// The applications of Table 1: name, median key, p99 key (if published).
const ROWS: &[(&str, &str, Option<&str>)] = &[
    ("MICA", "mica-p50-us", Some("mica-p99-us")),
    ("set algebra", "setalg-p50-us", Some("setalg-p99-us")),
    ("Raft", "raft-p50-us", Some("raft-p99-us")),
    ("chain replication", "chain-p50-us", Some("chain-p99-us")),
    ("one-sided RDMA read", "rdma-read-p50-ns", None),
    ("Othello", "othello-p50-us", Some("othello-p99-us")),
    ("INT processing", "int-p50-us", None),
    (
        "packet classifier",
        "classifier-p50-us",
        Some("classifier-p99-us"),
    ),
    ("HD search", "hdsearch-p50-us", Some("hdsearch-p99-us")),
    ("N-body", "nbody-p50-us", None),
];

/// A target's value in microseconds (RDMA's keys are in nanoseconds).
fn us(t: &Target, v: f64) -> f64 {
    if t.unit == "ns" {
        v / 1000.0
    } else {
        v
    }
}

/// The Table 1 summary of `results`, or `None` if fewer than two of its
/// applications were run.
pub fn summary(results: &[ExperimentResult]) -> Option<ExperimentResult> {
    let find = |key: &str| {
        results
            .iter()
            .flat_map(|r| r.targets.iter().map(move |t| (r.id.as_str(), t)))
            .find(|(_, t)| t.key == key)
    };
    let mut series = Vec::new();
    let mut lines = Vec::new();
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for &(name, p50, p99) in ROWS {
        let Some((id, t50)) = find(p50) else {
            continue;
        };
        let (m, p) = (us(t50, t50.measured), us(t50, t50.published));
        lo = lo.min(m).min(p);
        hi = hi.max(m).max(p);
        series.push(Series::new(name, vec![(p, m)]));
        let tail = p99
            .and_then(find)
            .map(|(_, t)| {
                format!(
                    "; p99 {:.2} us vs {:.2} us",
                    us(t, t.measured),
                    us(t, t.published)
                )
            })
            .unwrap_or_default();
        lines.push(format!(
            "{name} (`{id}`): median {m:.2} us vs {p:.2} us published ({:.2}x){tail}",
            m / p
        ));
        // The same row with the prototype's own program (`artifact`), if run.
        if let Some((_, a50)) = find(&format!("artifact-{p50}")) {
            let a = us(a50, a50.measured);
            lo = lo.min(a);
            hi = hi.max(a);
            series.push(Series::new(
                format!("{name}, prototype's program"),
                vec![(p, a)],
            ));
            let differ = (m / a - 1.0).abs();
            let why = if differ > 0.10 {
                format!(
                    " Ours and the prototype's program differ by {:.0} %: see the notes of `{id}` and `artifact`.",
                    differ * 100.0
                )
            } else {
                " Ours and the prototype's program agree within 10 %: the gap to the paper is not the program's."
                    .to_string()
            };
            lines.push(format!(
                "{name}, the prototype's program (`artifact`): median {a:.2} us vs {p:.2} us published ({:.2}x); \
                 ours / the prototype's {:.2}.{why}",
                a / p,
                m / a
            ));
        }
    }
    if series.len() < 2 {
        return None;
    }
    let (lo, hi) = (lo / 2.0, hi * 2.0);
    series.push(Series::new(
        "measured = published",
        vec![(lo, lo), (hi, hi)],
    ));
    Some(ExperimentResult {
        id: "table1".into(),
        title: "Table 1 at a glance: every application, measured vs published".into(),
        description: "The low-load median of each application of the nanoPU paper's Table 1, \
             as the application experiments above measured it, against the published one: a \
             point above the diagonal is slower here than on the prototype. Why each one \
             differs is in its own experiment's notes. With NANOPU_CHIPYARD set, the rows the \
             prototype's own programs ran (`artifact`) stand beside ours."
            .into(),
        figures: vec![Figure {
            name: "table1-p50".into(),
            title: "Table 1: median response time, measured vs published".into(),
            x_label: "published median (us)".into(),
            y_label: "measured median (us)".into(),
            log_x: true,
            log_y: true,
            series,
            published: Vec::new(),
        }],
        targets: Vec::new(),
        notes: lines,
        wall_s: 0.0,
        cpu_s: 0.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(id: &str, targets: Vec<Target>) -> ExperimentResult {
        ExperimentResult {
            id: id.into(),
            targets,
            ..Default::default()
        }
    }

    fn target(key: &str, unit: &str, measured: f64, published: f64) -> Target {
        Target {
            key: key.into(),
            unit: unit.into(),
            measured,
            published,
            ..Default::default()
        }
    }

    #[test]
    fn gathers_rows_from_the_application_experiments() {
        let results = vec![
            result(
                "mica",
                vec![
                    target("mica-p50-us", "us", 1.0, 0.4),
                    target("mica-p99-us", "us", 2.0, 0.5),
                ],
            ),
            result("rdma", vec![target("rdma-read-p50-ns", "ns", 700.0, 678.0)]),
        ];
        let s = summary(&results).expect("two applications");
        let f = &s.figures[0];
        assert_eq!(f.series.len(), 3, "two applications and the diagonal");
        assert_eq!(f.series[0].points, vec![(0.4, 1.0)]);
        assert_eq!(f.series[1].points, vec![(0.678, 0.7)], "ns become us");
        assert!(s.notes[0].contains("p99 2.00 us vs 0.50 us"));
        assert!(s.targets.is_empty(), "it measures nothing itself");
    }

    #[test]
    fn sets_the_prototypes_program_beside_ours() {
        let results = vec![
            result(
                "mica",
                vec![
                    target("mica-p50-us", "us", 1.0, 0.4),
                    target("mica-p99-us", "us", 2.0, 0.5),
                ],
            ),
            result(
                "artifact",
                vec![target("artifact-mica-p50-us", "us", 1.05, 0.4)],
            ),
            result("rdma", vec![target("rdma-read-p50-ns", "ns", 700.0, 678.0)]),
        ];
        let s = summary(&results).expect("two applications");
        let f = &s.figures[0];
        assert_eq!(f.series[1].name, "MICA, prototype's program");
        assert_eq!(f.series[1].points, vec![(0.4, 1.05)]);
        assert!(s.notes[1].contains("agree within 10 %"), "{}", s.notes[1]);
        let far = vec![
            result("mica", vec![target("mica-p50-us", "us", 2.0, 0.4)]),
            result(
                "artifact",
                vec![target("artifact-mica-p50-us", "us", 1.0, 0.4)],
            ),
            result("rdma", vec![target("rdma-read-p50-ns", "ns", 700.0, 678.0)]),
        ];
        let s = summary(&far).expect("two applications");
        assert!(s.notes[1].contains("differ by 100 %"), "{}", s.notes[1]);
    }

    #[test]
    fn needs_two_applications() {
        let one = vec![result("mica", vec![target("mica-p50-us", "us", 1.0, 0.4)])];
        assert!(summary(&one).is_none());
    }
}
