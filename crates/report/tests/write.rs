//! Writes results into a temporary directory and reads every file back.

use std::fs;
use std::path::Path;

use nanopu_report::{write_report, ExperimentResult, Figure, ReportError, Series, Target};

fn latency_figure() -> Figure {
    Figure {
        name: "latency-vs-size".into(),
        title: "Loopback latency vs size".into(),
        x_label: "message size (B)".into(),
        y_label: "latency (ns)".into(),
        log_x: true,
        log_y: true,
        series: vec![
            Series::new("nanoPU", vec![(8.0, 17.5), (64.0, 22.0), (1024.0, 100.0)]),
            Series::new(
                "traditional",
                vec![(8.0, 52.0), (64.0, 60.0), (1024.0, 160.0)],
            ),
        ],
        published: vec![Series::new("nanoPU", vec![(8.0, 17.0)])],
    }
}

/// A linear figure with a NaN, an infinity, an empty series and a
/// published series of its own colour.
fn awkward_figure() -> Figure {
    Figure {
        name: "tput-vs-size".into(),
        title: "Throughput & <escaping>".into(),
        x_label: "message size (B)".into(),
        y_label: "throughput (Gb/s)".into(),
        log_x: false,
        log_y: false,
        series: vec![
            Series::new(
                "nanoPU",
                vec![(8.0, 5.0), (64.0, f64::NAN), (1024.0, 166.0)],
            ),
            Series::new("nothing", vec![]),
        ],
        published: vec![Series::new(
            "line rate",
            vec![(1024.0, 200.0), (f64::INFINITY, 1.0)],
        )],
    }
}

fn result() -> ExperimentResult {
    ExperimentResult {
        id: "loopback".into(),
        title: "Loopback through the NIC".into(),
        description: "One node, one core, the loopback program.".into(),
        figures: vec![latency_figure(), awkward_figure()],
        targets: vec![
            Target::from_table("fastpath-8B", 17.5, "").unwrap(),
            Target::from_table("trad-loopback-8B", 160.0, "DMA path | modelled coarsely").unwrap(),
            Target::from_table("loopback-tput-1KB", f64::NAN, "not measured").unwrap(),
        ],
        notes: vec!["MAC and serial I/O excluded.".into()],
        wall_s: 0.5,
        cpu_s: 0.0,
    }
}

/// The text of every `<text>` element of an SVG, trimmed.
fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let body = &t[t.find('>')? + 1..];
            Some(body[..body.find("</text>")?].trim().to_string())
        })
        .collect()
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn experiment_writes_csv_svg_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let written = result().write(&out).unwrap();
    let names: Vec<_> = written
        .iter()
        .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
        .collect();
    assert_eq!(
        names,
        [
            "latency-vs-size.csv",
            "latency-vs-size.svg",
            "tput-vs-size.csv",
            "tput-vs-size.svg",
            "loopback.json"
        ]
    );
    for p in &written {
        assert!(p.is_file(), "{}", p.display());
    }

    // CSV: header, every point, non-finite values kept.
    let mut rdr = csv::Reader::from_path(out.join("tput-vs-size.csv")).unwrap();
    assert_eq!(rdr.headers().unwrap(), vec!["series", "source", "x", "y"]);
    let rows: Vec<(String, String, f64, f64)> = rdr.deserialize().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 5);
    assert_eq!(rows[0], ("nanoPU".into(), "measured".into(), 8.0, 5.0));
    assert!(rows[1].3.is_nan());
    assert_eq!(rows[3].1, "published");
    assert_eq!(rows[4].2, f64::INFINITY);
    let mut rdr = csv::Reader::from_path(out.join("latency-vs-size.csv")).unwrap();
    assert_eq!(rdr.records().count(), 7);

    // SVG: a document with the title, the legend and the escaped text.
    for (fig, legend) in [
        (
            "latency-vs-size",
            &["nanoPU", "traditional", "nanoPU (published)"][..],
        ),
        (
            "tput-vs-size",
            &["nanoPU", "nothing", "line rate (published)"][..],
        ),
    ] {
        let svg = read(&out.join(format!("{fig}.svg")));
        let start = svg.trim_start();
        assert!(
            start.starts_with("<svg") || start.starts_with("<?xml"),
            "{fig}"
        );
        assert!(svg.trim_end().ends_with("</svg>"), "{fig}");
        let texts = svg_texts(&svg);
        for label in legend {
            assert!(
                texts.iter().any(|t| t == label),
                "{fig}: {label} in {texts:?}"
            );
        }
        assert!(texts.iter().any(|t| t == "message size (B)"));
    }
    let svg = read(&out.join("tput-vs-size.svg"));
    assert!(svg.contains("Throughput &amp; &lt;escaping&gt;"));
    assert!(svg.contains("2 points not drawn"));

    // ID.json: targets with ratio; NaN becomes null.
    let json: serde_json::Value = serde_json::from_str(&read(&out.join("loopback.json"))).unwrap();
    assert_eq!(json["id"], "loopback");
    let targets = json["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 3);
    assert_eq!(targets[0]["key"], "fastpath-8B");
    assert_eq!(targets[0]["published"], 17.0);
    assert!(targets[2]["measured"].is_null() && targets[2]["ratio"].is_null());
    assert_eq!(json["figures"][1]["points_not_drawn"], 2);
}

#[test]
fn report_has_summary_table_markers_and_config() {
    let dir = tempfile::tempdir().unwrap();
    let other = ExperimentResult {
        id: "ctx-switch".into(),
        title: "Context switch".into(),
        targets: vec![Target {
            key: "my-extra-key".into(),
            measured: 3.0,
            unit: "x".into(),
            published: 4.0,
            note: String::new(),
        }],
        wall_s: 1.5,
        cpu_s: 2.5,
        ..Default::default()
    };
    let config = "[node]\ncores = 4\n";
    write_report(
        dir.path(),
        &[result(), other],
        config,
        "nanopu reproduce --quick",
    )
    .unwrap();

    // The experiments' own files are there too.
    assert!(dir.path().join("latency-vs-size.svg").is_file());
    assert!(dir.path().join("ctx-switch.json").is_file());

    let summary: serde_json::Value =
        serde_json::from_str(&read(&dir.path().join("summary.json"))).unwrap();
    let map = summary.as_object().unwrap();
    let keys: Vec<_> = map.keys().cloned().collect();
    assert_eq!(
        keys,
        [
            "fastpath-8B",
            "loopback-tput-1KB",
            "my-extra-key",
            "trad-loopback-8B"
        ]
    );
    for (k, v) in map {
        for field in [
            "measured",
            "unit",
            "published",
            "ratio",
            "tolerance",
            "within_tolerance",
        ] {
            assert!(v.get(field).is_some(), "{k}.{field}");
        }
    }
    assert_eq!(map["fastpath-8B"]["measured"], 17.5);
    assert_eq!(map["fastpath-8B"]["unit"], "ns");
    assert_eq!(map["fastpath-8B"]["published"], 17.0);
    assert_eq!(map["my-extra-key"]["ratio"], 0.75);
    assert!(map["loopback-tput-1KB"]["measured"].is_null());

    let md = read(&dir.path().join("report.md"));
    assert!(md.starts_with("# "));
    // Host time: CPU only where it was measured.
    assert!(md.contains("`ctx-switch`, 1.5 s wall-clock, 2.5 s of host CPU\n"));
    assert!(md.contains("`loopback`, 0.5 s wall-clock\n"));
    let record: serde_json::Value =
        serde_json::from_str(&read(&dir.path().join("ctx-switch.json"))).unwrap();
    assert_eq!(
        (record["wall_s"].clone(), record["cpu_s"].clone()),
        (1.5.into(), 2.5.into())
    );
    assert!(md.contains("nanopu reproduce --quick"));
    assert!(md.contains(
        "| result | measured | published | unit | measured/published | tolerance | note |"
    ));
    assert!(
        md.contains("| `fastpath-8B` | 17.5 | 17 | ns | 1.03 | ±25 % |  |"),
        "{md}"
    );
    assert!(
        md.contains("| `trad-loopback-8B` | 160 | 51 | ns | 3.14 ⚠ outside tolerance | ±25 % | DMA path \\| modelled coarsely |"),
        "{md}"
    );
    assert!(md.contains(
        "| `loopback-tput-1KB` | NaN | 166 | Gb/s | ⚠ no comparable value | ±10 % | not measured |"
    ));
    assert_eq!(map["fastpath-8B"]["within_tolerance"], true);
    assert_eq!(map["fastpath-8B"]["tolerance"], 0.25);
    assert!(md.contains("![Loopback latency vs size](latency-vs-size.svg)"));
    assert!(md.contains("[tput-vs-size.csv](tput-vs-size.csv) (2 points not drawn"));
    assert!(md.contains("- MAC and serial I/O excluded."));
    // Misses are listed up front, unmeasured fixed keys too.
    assert!(md.contains(
        "4 results reproduced by the model, compared with the papers: 2 within their tolerance, 2 not. \
         0 more are mostly configured constants (0 within their tolerance), counted apart."
    ));
    // Each miss with its tolerance and the experiment's explanation.
    assert!(md.contains(
        "- `trad-loopback-8B` (loopback): measured 160 ns, published 51 ns — ratio 3.14, tolerance ±25 %. \
         DMA path \\| modelled coarsely"
    ), "{md}");
    assert!(md.contains("- `w2w-8B`: wire-to-wire latency"));
    assert!(!md.contains("- `fastpath-8B`: "));
    assert!(
        md.trim_end().ends_with("```toml\n[node]\ncores = 4\n```"),
        "{md}"
    );
}

#[test]
fn empty_and_all_nan_figures_render() {
    let dir = tempfile::tempdir().unwrap();
    let empty = Figure {
        name: "empty".into(),
        title: "Nothing yet".into(),
        log_x: true,
        log_y: true,
        ..Default::default()
    };
    let nan = Figure {
        name: "nan".into(),
        title: "All NaN".into(),
        series: vec![Series::new(
            "s",
            vec![(f64::NAN, f64::NAN), (1.0, f64::NAN)],
        )],
        published: vec![Series::new("p", vec![(f64::NAN, 2.0)])],
        ..Default::default()
    };
    let single = Figure {
        name: "single".into(),
        title: "One point".into(),
        series: vec![Series::new("s", vec![(3.0, 3.0)])],
        ..Default::default()
    };
    let r = ExperimentResult {
        id: "edge".into(),
        figures: vec![empty, nan, single],
        ..Default::default()
    };
    r.write(dir.path()).unwrap();
    let svg = read(&dir.path().join("empty.svg"));
    assert!(svg_texts(&svg).iter().any(|t| t == "no data"));
    assert!(read(&dir.path().join("nan.svg")).contains("3 points not drawn"));
    let mut rdr = csv::Reader::from_path(dir.path().join("empty.csv")).unwrap();
    assert_eq!(rdr.headers().unwrap(), vec!["series", "source", "x", "y"]);
    assert_eq!(rdr.records().count(), 0);
}

#[test]
fn bad_names_and_duplicates_are_errors_naming_the_culprit() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = result();
    r.figures[1].name = "../escape".into();
    let err = r.write(dir.path()).unwrap_err();
    assert!(
        matches!(err, ReportError::InvalidName { what: "figure", .. }),
        "{err}"
    );
    assert!(err.to_string().contains("\"../escape\""));

    let mut a = result();
    a.targets.clear();
    let mut b = result();
    b.id = "again".into();
    b.targets.clear();
    let err = write_report(dir.path(), &[a, b], "", "x").unwrap_err();
    assert!(
        err.to_string()
            .contains("figure \"latency-vs-size\" appears twice (in loopback and in again)"),
        "{err}"
    );
    assert!(!dir.path().join("report.md").exists());

    let mut s = result();
    s.id = "summary".into();
    let err = write_report(dir.path(), &[s], "", "x").unwrap_err();
    assert!(err.to_string().contains("overwrite summary.json"), "{err}");
}

#[test]
fn unwritable_directory_names_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    fs::write(&file, "").unwrap();
    let err = result().write(&file.join("sub")).unwrap_err();
    assert!(matches!(err, ReportError::Write { .. }));
    assert!(err.to_string().contains("not-a-dir/sub"), "{err}");
}
