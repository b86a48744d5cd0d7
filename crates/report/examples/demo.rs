//! Writes a report of made-up results, to look at the plots and the markdown:
//!
//!     cargo run -p nanopu-report --example demo -- /tmp/report-demo
//!
//! The numbers are invented for the layout; they are not simulator output.

use std::path::PathBuf;

use nanopu_report::{write_report, ExperimentResult, Figure, Series, Target};

fn main() {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "report-demo".into()),
    );
    let sizes = [8.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0];
    let nanopu: Vec<(f64, f64)> = sizes.iter().map(|&s| (s, 17.0 + s * 0.08)).collect();
    let trad: Vec<(f64, f64)> = sizes.iter().map(|&s| (s, 51.0 + s * 0.11)).collect();
    let latency = Figure {
        name: "loopback-latency-vs-size".into(),
        title: "Loopback latency vs message size (fast path, no MAC)".into(),
        x_label: "message size (B)".into(),
        y_label: "latency (ns)".into(),
        log_x: true,
        log_y: true,
        series: vec![
            Series::new("nanoPU", nanopu),
            Series::new("traditional NIC (DMA to L2)", trad),
        ],
        published: vec![
            Series::new("nanoPU", vec![(8.0, 17.0)]),
            Series::new("traditional NIC (DMA to L2)", vec![(8.0, 51.0)]),
        ],
    };
    let tput = Figure {
        name: "loopback-tput-vs-size".into(),
        title: "Loopback throughput, one core".into(),
        x_label: "message size (B)".into(),
        y_label: "throughput (Gb/s)".into(),
        log_x: true,
        log_y: false,
        series: vec![
            Series::new(
                "nanoPU",
                sizes.iter().map(|&s| (s, (s * 0.5).min(170.0))).collect(),
            ),
            Series::new(
                "traditional NIC",
                vec![
                    (8.0, 1.0),
                    (64.0, f64::NAN),
                    (256.0, 20.0),
                    (1024.0, 55.0),
                    (4096.0, 80.0),
                ],
            ),
        ],
        published: vec![
            Series::new("line rate", vec![(1024.0, 200.0)]),
            Series::new("nanoPU", vec![(1024.0, 166.0)]),
        ],
    };
    let result = ExperimentResult {
        id: "loopback".into(),
        title: "Loopback through the NIC".into(),
        description: "One node; the loopback program swaps addresses and sends each message back."
            .into(),
        figures: vec![latency, tput],
        targets: vec![
            Target::from_table("fastpath-8B", 17.6, "").expect("fixed key"),
            Target::from_table("trad-loopback-8B", 160.0, "DMA model too slow").expect("fixed key"),
            Target::from_table("loopback-tput-1KB", f64::NAN, "not run").expect("fixed key"),
        ],
        notes: vec!["Invented numbers.".into()],
        wall_s: 1.25,
        cpu_s: 0.0,
    };
    write_report(
        &dir,
        &[result],
        "[node]\ncores = 1\n",
        "nanopu reproduce --only loopback",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    println!("wrote {}", dir.display());
}
