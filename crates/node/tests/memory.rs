//! The memory system below the L1s, seen by guest programs: a STREAM
//! kernel against a configured DRAM bandwidth, a pointer chase against the
//! configured latency, and the same run twice for determinism.

mod common;

use common::*;
use nanopu_core::timing::CacheConfig;
use nanopu_node::memory::dram_timing::DramTimingConfig;
use nanopu_node::{Node, NodeConfig, RunEnd};

fn run_with_args(name: &str, cfg: NodeConfig, args: &[&str]) -> (String, Node) {
    let mut node = Node::with_program(cfg, &program(name)).expect("program loads");
    let htif = node.htif_mut().unwrap();
    htif.args.extend(args.iter().map(|s| s.to_string()));
    let end = node
        .run(20_000_000_000)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let out = String::from_utf8_lossy(&node.htif().unwrap().output).into_owned();
    assert_eq!(end, RunEnd::Exited(0), "{name}: {out}");
    (out, node)
}

/// The MB/s figure of each kernel line ("stream: copy 1234 MB/s (...)").
fn stream_mb_s(out: &str) -> Vec<(String, f64)> {
    out.lines()
        .filter_map(|l| {
            let mut w = l.strip_prefix("stream: ")?.split_whitespace();
            let name = w.next()?.to_string();
            let v = w.next()?.parse().ok()?;
            (w.next()? == "MB/s").then_some((name, v))
        })
        .collect()
}

fn low_bandwidth() -> NodeConfig {
    NodeConfig {
        dram: DramTimingConfig {
            channels: 1,
            channel_mb_per_s: 2000,
            ..DramTimingConfig::default()
        },
        ..NodeConfig::default()
    }
}

#[test]
fn stream_saturates_a_low_bandwidth_and_never_exceeds_it() {
    let (out, node) = run_with_args("stream", low_bandwidth(), &["4"]);
    assert!(out.contains("harts 4"), "{out}");
    let kernels = stream_mb_s(&out);
    assert_eq!(kernels.len(), 4, "{out}");
    // STREAM counts 16 (copy, scale) or 24 (add, triad) bytes per element;
    // DRAM moves 24 or 32 (the destination's write-allocate read and its
    // write-back): the counted share of the peak is 2/3 or 3/4.
    for (name, mb_s) in &kernels {
        let share = if name == "copy" || name == "scale" {
            2.0 / 3.0
        } else {
            0.75
        };
        assert!(*mb_s <= 2000.0 * share * 1.01, "{name}: {mb_s} MB/s\n{out}");
        assert!(*mb_s >= 2000.0 * share * 0.85, "{name}: {mb_s} MB/s\n{out}");
    }
    let m = node.memory_stats();
    assert!(m.mean_gb_s <= 2.0 * 1.001, "{m:?}");
    // While the kernels run the channel is saturated: the busiest 40% of
    // the run's windows (start-up and hart 0's single-core check are the
    // rest) carry at least 95% of the peak.
    let mut windows: Vec<f64> = (m.series.read_bytes.iter().zip(&m.series.write_bytes))
        .map(|(r, w)| (r + w) as f64 / m.series_window_ns)
        .collect();
    windows.sort_by(f64::total_cmp);
    let p60 = windows[windows.len() * 6 / 10];
    assert!(p60 >= 0.95 * 2.0, "{p60} GB/s; windows {windows:?}");
    // A window of the series holds whole buckets: at most the peak, plus
    // the part of one line spilling over.
    let window_bytes_max = 2.0 * m.series_window_ns + 64.0;
    assert!(
        m.peak_gb_s * m.series_window_ns <= window_bytes_max,
        "{}",
        m.peak_gb_s
    );
    // Every core read and every dirty line was written back through the LLC.
    for h in 0..4 {
        let core = &m.by_source[h];
        assert_eq!(core.source, format!("core{h}"));
        assert!(core.read_bytes > 1 << 20, "{core:?}");
    }
    let wb = m
        .by_source
        .iter()
        .find(|s| s.source == "llc_writeback")
        .unwrap();
    assert!(wb.write_bytes > 2 << 20, "{wb:?}");
    assert!(m.mean_read_queue_cycles > 100.0, "saturated: reads queue");
}

#[test]
fn stream_at_the_default_bandwidth_is_latency_bound_not_capped() {
    let (out, node) = run_with_args("stream", NodeConfig::default(), &["4"]);
    let m = node.memory_stats();
    // 16 GB/s peak: four blocking cores use a fraction of it.
    assert!(
        m.mean_gb_s < 0.6 * m.configured_peak_gb_s,
        "{}\n{out}",
        m.mean_gb_s
    );
    let low = run_with_args("stream", low_bandwidth(), &["4"]).0;
    let (fast, slow) = (stream_mb_s(&out), stream_mb_s(&low));
    for (f, s) in fast.iter().zip(&slow) {
        assert!(f.1 > 1.3 * s.1, "{f:?} vs {s:?}");
    }
}

#[test]
fn pointer_chase_far_beyond_the_llc_costs_the_configured_latency() {
    // A 32 KB LLC against the chase's 1 MB table: 97% of loads go to DRAM.
    let cfg = NodeConfig {
        l2: CacheConfig {
            size_bytes: 32 * 1024,
            ways: 8,
            line_bytes: 64,
        },
        ..NodeConfig::default()
    };
    let want = (cfg.l2_hit_cycles + cfg.dram_cycles()) as f64;
    let (out, node) = run_with_args("pointer_chase", cfg, &[]);
    let per_load: f64 = out
        .split(": ")
        .last()
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no cycle figure in {out:?}"));
    assert!(
        per_load > 0.93 * want && per_load < want + 8.0,
        "{per_load} cycles per load, configured {want}"
    );
    // One core, one miss at a time: no queueing.
    assert!(node.memory_stats().mean_read_queue_cycles < 1.0);
}

#[test]
fn the_memory_system_is_deterministic() {
    let run = || {
        let (out, node) = run_with_args("stream", low_bandwidth(), &["3"]);
        (out, node.memory_stats(), node.cycle(0))
    };
    let (a, b) = (run(), run());
    assert_eq!(a.0, b.0);
    assert_eq!(a.1, b.1);
    assert_eq!(a.2, b.2);
}
