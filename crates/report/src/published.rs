//! The fixed keys of `summary.json` and their published values, as listed in
//! `shared/reference/targets.md` ("Keys of `summary.json`"). Keep the two in step.

/// One fixed `summary.json` key with the paper's value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Published {
    /// The `summary.json` key, e.g. `"w2w-8B"`.
    pub key: &'static str,
    /// What is measured, in the words of targets.md.
    pub meaning: &'static str,
    /// Unit of `value`.
    pub unit: &'static str,
    /// The published result.
    pub value: f64,
}

const fn p(key: &'static str, meaning: &'static str, unit: &'static str, value: f64) -> Published {
    Published {
        key,
        meaning,
        unit,
        value,
    }
}

/// Every fixed key of targets.md, in its order. [`write_report`](crate::write_report)
/// lists the ones no experiment measured.
pub const PUBLISHED: &[Published] = &[
    p(
        "w2w-8B",
        "wire-to-wire latency, 8 B loopback, nanoPU",
        "ns",
        69.0,
    ),
    p(
        "fastpath-8B",
        "same, without MAC and serial I/O",
        "ns",
        17.0,
    ),
    p(
        "trad-loopback-8B",
        "traditional NIC loopback, without MAC and serial I/O",
        "ns",
        51.0,
    ),
    p(
        "loopback-tput-8B",
        "one core, nanoPU, 8 B messages",
        "Mrps",
        118.0,
    ),
    p(
        "trad-loopback-tput-8B",
        "one core, traditional NIC, 8 B messages",
        "Mrps",
        16.0,
    ),
    p(
        "loopback-tput-1KB",
        "one core, nanoPU, 1 KB messages",
        "Gb/s",
        166.0,
    ),
    p(
        "loopback-inc-speedup-max",
        "largest nanoPU / traditional throughput ratio over sizes",
        "x",
        10.0,
    ),
    p(
        "dot-product-speedup-small",
        "optimal nanoPU / traditional throughput, smallest vector",
        "x",
        4.5,
    ),
    p(
        "ctx-switch-cycles",
        "scheduler interrupt to first instruction of the target thread",
        "cycles",
        160.0,
    ),
    p(
        "hts-vs-tis-p99-ratio-low",
        "TIS p99 / HTS p99 at the lowest load point, high-priority thread",
        "x",
        6.5,
    ),
    p(
        "hts-vs-tis-p99-ratio-high",
        "the same at the highest load both sustain",
        "x",
        4.0,
    ),
    p(
        "hts-max-load",
        "highest offered load (fraction of 2 Mrps) HTS sustains",
        "fraction",
        0.96,
    ),
    p(
        "bounded-p99-max-us",
        "well-behaved thread's largest p99 up to 100 % load, bound on",
        "us",
        2.1,
    ),
    p(
        "jbsq-vs-rss-p99-ratio-low",
        "RSS p99 / JBSQ p99 at the lowest load point",
        "x",
        5.0,
    ),
    p(
        "jbsq-vs-rss-load-gain",
        "highest sustainable load, JBSQ / RSS",
        "x",
        1.15,
    ),
    p(
        "incast-80-max-latency-ratio",
        "timeout-only / NDP maximum latency",
        "x",
        3.0,
    ),
    p(
        "nt-latency-ndp",
        "per-packet NDP pipeline latency",
        "ns",
        9.06,
    ),
    p(
        "nt-latency-homa",
        "per-packet Homa pipeline latency",
        "ns",
        10.94,
    ),
    p(
        "nt-line-rate",
        "65 B one-packet messages through the transport",
        "Mrps",
        380.0,
    ),
    p(
        "nt-incast-small-homatr-vs-homa",
        "mean slowdown Homa / Homa-Tr, 54 KB buffer",
        "x",
        2.0,
    ),
    p(
        "nt-incast-small-homatr-vs-ndp",
        "mean slowdown NDP / Homa-Tr, 54 KB buffer",
        "x",
        1.5,
    ),
];

/// The fixed entry for `key`, if targets.md lists it.
pub fn published(key: &str) -> Option<&'static Published> {
    PUBLISHED.iter().find(|p| p.key == key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_unique_and_values_positive() {
        for (i, a) in PUBLISHED.iter().enumerate() {
            assert!(a.value > 0.0, "{}", a.key);
            assert!(
                PUBLISHED[i + 1..].iter().all(|b| b.key != a.key),
                "{}",
                a.key
            );
        }
        assert_eq!(PUBLISHED.len(), 21);
        assert_eq!(published("nt-latency-ndp").unwrap().value, 9.06);
        assert!(published("no-such-key").is_none());
    }
}
