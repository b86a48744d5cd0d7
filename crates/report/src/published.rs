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
    /// How far a reproduction may land from `value` and still count as
    /// reproduced: `measured / value` within `[1 / (1 + t), 1 + t]`.
    pub tolerance: f64,
    /// Why that tolerance (what the result depends on).
    pub tolerance_reason: &'static str,
}

const fn p(
    key: &'static str,
    meaning: &'static str,
    unit: &'static str,
    value: f64,
    tolerance: f64,
    tolerance_reason: &'static str,
) -> Published {
    Published {
        key,
        meaning,
        unit,
        value,
        tolerance,
        tolerance_reason,
    }
}

/// Tolerance of a key with no entry of its own: a factor of 2.
pub const DEFAULT_TOLERANCE: f64 = 1.0;

/// Prefixes of extra keys that measure a fixed key another way (the
/// prototype-style flow, the prototype's own programs): they take its
/// published value and tolerance.
pub const ALTERNATIVE_PREFIXES: &[&str] = &["proto-", "lnic-evaluation-", "artifact-"];

/// Every fixed key of targets.md, in its order. [`write_report`](crate::write_report)
/// lists the ones no experiment measured.
pub const PUBLISHED: &[Published] = &[
    p(
        "w2w-8B",
        "wire-to-wire latency, 8 B loopback, nanoPU",
        "ns",
        69.0,
        0.10,
        "the path is a sum of modelled stage latencies (MAC and serial I/O, NIC pipeline, core); 10 % is about 2 ns per stage",
    ),
    p(
        "fastpath-8B",
        "same, without MAC and serial I/O",
        "ns",
        17.0,
        0.25,
        "17 ns is about 54 cycles: a few cycles of pipeline detail are already 10-20 %",
    ),
    p(
        "trad-loopback-8B",
        "traditional NIC loopback, without MAC and serial I/O",
        "ns",
        51.0,
        0.25,
        "depends on the driver code executed (descriptor pushes, polling, the 12 ns memcpy), which is ours, not the prototype's",
    ),
    p(
        "loopback-tput-8B",
        "one core, nanoPU, 8 B messages",
        "Mrps",
        118.0,
        0.20,
        "set by the instructions of the loop per message and the core model; 20 % is a handful of cycles per message",
    ),
    p(
        "trad-loopback-tput-8B",
        "one core, traditional NIC, 8 B messages",
        "Mrps",
        16.0,
        0.25,
        "set by our driver's batching of 30 and the DMA model; the published 16 Mrps comes from slides",
    ),
    p(
        "loopback-tput-1KB",
        "one core, nanoPU, 1 KB messages",
        "Gb/s",
        166.0,
        0.10,
        "close to the link's line rate (83 % of 200 Gb/s): little room for the core model to matter",
    ),
    p(
        "loopback-inc-speedup-max",
        "largest nanoPU / traditional throughput ratio over sizes",
        "x",
        10.0,
        0.25,
        "a ratio of two throughputs, each with its own modelling error",
    ),
    p(
        "dot-product-speedup-small",
        "optimal nanoPU / traditional throughput, smallest vector",
        "x",
        4.5,
        0.25,
        "the paper gives a range (4-5x) for small vectors",
    ),
    p(
        "ctx-switch-cycles",
        "scheduler interrupt to first instruction of the target thread",
        "cycles",
        160.0,
        0.15,
        "the handler's instructions are executed; 15 % is about 25 cycles of memory-system detail",
    ),
    p(
        "hts-vs-tis-p99-ratio-low",
        "TIS p99 / HTS p99 at the lowest load point, high-priority thread",
        "x",
        6.5,
        0.50,
        "a ratio of two tail latencies: the TIS tail depends on where requests fall in the 5 us tick",
    ),
    p(
        "hts-vs-tis-p99-ratio-high",
        "the same at the highest load both sustain",
        "x",
        4.0,
        0.50,
        "a ratio of two tail latencies near saturation, where tails move fast with load",
    ),
    p(
        "hts-max-load",
        "highest offered load (fraction of 2 Mrps) HTS sustains",
        "fraction",
        0.96,
        0.03,
        "load points are 2 % apart: saturating more than one step away from the paper is a real difference",
    ),
    p(
        "bounded-p99-max-us",
        "well-behaved thread's largest p99 up to 100 % load, bound on",
        "us",
        2.1,
        0.10,
        "the paper gives an analytic bound (2.15 us) the measurement should meet",
    ),
    p(
        "jbsq-vs-rss-p99-ratio-low",
        "RSS p99 / JBSQ p99 at the lowest load point",
        "x",
        5.0,
        0.50,
        "a ratio of two tail latencies at low load, sensitive to the service-time draw",
    ),
    p(
        "jbsq-vs-rss-load-gain",
        "highest sustainable load, JBSQ / RSS",
        "x",
        1.15,
        0.10,
        "the effect is a 15 % gain: a wider band could not tell a gain from none",
    ),
    p(
        "incast-80-max-latency-ratio",
        "timeout-only / NDP maximum latency",
        "x",
        3.0,
        0.50,
        "a ratio of maxima (single worst messages), sensitive to timeout and buffer settings",
    ),
    p(
        "nt-latency-ndp",
        "per-packet NDP pipeline latency",
        "ns",
        9.06,
        0.01,
        "the stage latencies are Table 1's, as parameters: the sum must match",
    ),
    p(
        "nt-latency-homa",
        "per-packet Homa pipeline latency",
        "ns",
        10.94,
        0.01,
        "the stage latencies are Table 1's, as parameters: the sum must match",
    ),
    p(
        "nt-line-rate",
        "65 B one-packet messages through the transport",
        "Mrps",
        380.0,
        0.05,
        "arithmetic of 65 B packets on a 200 Gb/s line",
    ),
    p(
        "nt-incast-small-homatr-vs-homa",
        "mean slowdown Homa / Homa-Tr, 54 KB buffer",
        "x",
        2.0,
        0.25,
        "the paper says \"~2x\", read off a figure",
    ),
    p(
        "nt-incast-small-homatr-vs-ndp",
        "mean slowdown NDP / Homa-Tr, 54 KB buffer",
        "x",
        1.5,
        0.25,
        "the paper says \"~1.5x\", read off a figure",
    ),
    p(
        "raft-p50-us",
        "3-way Raft write at the client, median",
        "us",
        3.08,
        0.50,
        "the paper runs a production Raft library, we a minimal one; about half the time is the network's four crossings, the rest implementation",
    ),
    p(
        "raft-p99-us",
        "3-way Raft write at the client, p99",
        "us",
        3.26,
        0.50,
        "as raft-p50-us",
    ),
    p(
        "chain-p50-us",
        "chain replication at the client, median",
        "us",
        1.10,
        0.50,
        "the paper says neither what it measured (reads, writes, a mix) nor the chain's topology",
    ),
    p(
        "chain-p99-us",
        "chain replication at the client, p99",
        "us",
        1.40,
        0.50,
        "as chain-p50-us",
    ),
    p(
        "rdma-read-p50-ns",
        "one-sided read on the nanoPU, at the client",
        "ns",
        678.0,
        0.10,
        "600 ns of it are the fixed 300 ns one-way crossings; 10 % is most of what the NICs and the core add",
    ),
    p(
        "rdma-write-p50-ns",
        "one-sided write, at the client",
        "ns",
        679.0,
        0.10,
        "as rdma-read-p50-ns",
    ),
    p(
        "rdma-cas-p50-ns",
        "compare-and-swap, at the client",
        "ns",
        687.0,
        0.10,
        "as rdma-read-p50-ns",
    ),
    p(
        "rdma-faa-p50-ns",
        "fetch-and-add, at the client",
        "ns",
        688.0,
        0.10,
        "as rdma-read-p50-ns",
    ),
    p(
        "rdma-indirect-p50-ns",
        "indirect read, at the client",
        "ns",
        691.0,
        0.10,
        "as rdma-read-p50-ns",
    ),
    p(
        "mica-p50-us",
        "MICA optimized on one nanoPU core, low load, median",
        "us",
        0.40,
        0.50,
        "dominated by the memory system (cache misses to the store's 5 MB), which is modelled, not the prototype's",
    ),
    p(
        "mica-p99-us",
        "MICA optimized on one nanoPU core, low load, p99",
        "us",
        0.50,
        0.50,
        "dominated by the memory system (cache misses to the store's 5 MB), which is modelled, not the prototype's",
    ),
    p(
        "mica-opt-vs-naive-tput",
        "sustained load, optimized / naive",
        "x",
        1.3,
        0.25,
        "a ratio of two throughputs; the copies it measures weigh against the memory system's misses",
    ),
    p(
        "setalg-p50-us",
        "set intersection, one core, low load, median",
        "us",
        0.60,
        0.50,
        "the work per query is our corpus's and our code's, not the paper's 100 articles",
    ),
    p(
        "setalg-p99-us",
        "set intersection, one core, low load, p99",
        "us",
        1.50,
        0.50,
        "the work per query is our corpus's and our code's, not the paper's 100 articles",
    ),
    p(
        "setalg-trad-vs-nanopu-p99-low",
        "traditional / nanoPU p99 at low load",
        "x",
        1.21,
        0.25,
        "a ratio of two tail latencies at low load",
    ),
    p(
        "setalg-jbsq4-max-mrps",
        "highest sustained load, 4 cores with JBSQ",
        "Mrps",
        7.0,
        0.50,
        "set by the work per query, which is our corpus's and our code's",
    ),
    p(
        "gopt-speedup-cuckoo",
        "G-Opt / naive lookup throughput on one core, 2-8 cuckoo hashing (G-Opt Fig. 8)",
        "x",
        2.6,
        0.5,
        "an in-order single-issue core, not the paper's out-of-order Xeon: how much the naive loop overlaps misses by itself differs",
    ),
    p(
        "gopt-speedup-pointer-chase",
        "G-Opt / naive lookup throughput on one core, pointer chasing, depth 100 (G-Opt Fig. 8)",
        "x",
        6.6,
        0.5,
        "bounded by the number of MSHRs (10, as the Xeon's line-fill buffers) and by G-Opt's switching instructions on the core",
    ),
    p(
        "gopt-speedup-ipv6",
        "G-Opt / naive lookup throughput on one core, IPv6 longest prefix match (G-Opt Fig. 8)",
        "x",
        2.0,
        0.5,
        "an in-order single-issue core, not the paper's out-of-order Xeon; our trie holds far fewer prefixes than DPDK's 200,000",
    ),
    p(
        "othello-p50-us",
        "Othello player, one core, low load, median (Table 1)",
        "us",
        0.90,
        1.0,
        "the paper names neither its player nor its search depth: the work per move is our guess",
    ),
    p(
        "othello-p99-us",
        "Othello player, one core, low load, p99 (Table 1)",
        "us",
        1.70,
        1.0,
        "the paper names neither its player nor its search depth: the work per move is our guess",
    ),
    p(
        "int-p50-us",
        "INT processing, one core, low load, median (Table 1)",
        "us",
        0.13,
        1.0,
        "the paper does not describe its INT state machine or report format: ours is a guess",
    ),
    p(
        "classifier-p50-us",
        "packet classifier, 100K rules, one core, low load, median (Table 1)",
        "us",
        0.90,
        1.0,
        "the paper names neither its rule set nor its algorithm: ours are generated and guessed, and the lookups are memory-bound",
    ),
    p(
        "classifier-p99-us",
        "packet classifier, 100K rules, one core, low load, p99 (Table 1)",
        "us",
        2.20,
        1.0,
        "the paper names neither its rule set nor its algorithm: ours are generated and guessed, and the lookups are memory-bound",
    ),
    p(
        "hdsearch-p50-us",
        "HD search, one core, low load, median (Table 1)",
        "us",
        0.80,
        1.0,
        "the paper names neither its data set nor its index: ours (2,048 x 64, exact) is a guess",
    ),
    p(
        "hdsearch-p99-us",
        "HD search, one core, low load, p99 (Table 1)",
        "us",
        1.20,
        1.0,
        "the paper names neither its data set nor its index: ours (2,048 x 64, exact) is a guess",
    ),
    p(
        "nbody-p50-us",
        "N-body force computation, one core, low load, median (Table 1)",
        "us",
        0.35,
        1.0,
        "the paper does not state how many bodies a node holds or a message carries: ours is a guess",
    ),
    p(
        "nb-queue-load-det",
        "highest load of an M/G/64 queue with deterministic service whose p99 response time meets the SLO of 10 mean service times (NEBULA Table I)",
        "fraction",
        0.999,
        0.02,
        "a queueing model with no machine in it: only the run length near saturation moves it",
    ),
    p(
        "nb-queue-load-exp",
        "the same with exponential service (NEBULA Table I)",
        "fraction",
        0.995,
        0.02,
        "a queueing model with no machine in it: only the run length near saturation moves it",
    ),
    p(
        "nb-queue-load-bimodal",
        "the same with bimodal service, S/2 at 0.9 and 5.5 S at 0.1 (NEBULA Table I)",
        "fraction",
        0.940,
        0.02,
        "a queueing model with no machine in it: only the run length near saturation moves it",
    ),
    p(
        "nb-base-vs-rpcvalet-tput",
        "throughput under SLO, NEBULA_base / RPCValet, MICA 50/50 (NEBULA Fig. 6: 22.2 / 11.4 MRPS)",
        "x",
        1.95,
        1.0,
        "in-order RISC-V cores against the paper's out-of-order A57s: service times and the memory traffic per request differ",
    ),
    p(
        "nb-srq-vs-rpcvalet-tput",
        "throughput under SLO, SRQ_emu / RPCValet (NEBULA §VII-A)",
        "x",
        1.75,
        1.0,
        "in-order RISC-V cores against the paper's out-of-order A57s",
    ),
    p(
        "nb-base-vs-srq-tput",
        "throughput under SLO, NEBULA_base / SRQ_emu (NEBULA §VII-A)",
        "x",
        1.2,
        1.0,
        "in-order RISC-V cores against the paper's out-of-order A57s",
    ),
    p(
        "nb-steering-gain-tput",
        "throughput under SLO, NEBULA / NEBULA_base (NEBULA §VII-C: +3 MRPS)",
        "x",
        1.14,
        1.0,
        "in-order RISC-V cores; our steering model installs lines without the A57's coherence latencies",
    ),
    p(
        "nb-rpcvalet-bw-at-slo",
        "RPCValet's memory bandwidth at its SLO limit / DRAM peak (NEBULA Fig. 6b: 25.3 of 31 GB/s)",
        "fraction",
        0.82,
        1.0,
        "where RPCValet saturates depends on the cores' own memory traffic, which differs from the A57's",
    ),
    p(
        "erpc-raft-vs-nanopu-p50",
        "Raft median at the client, eRPC-style stack / nanoPU, same simulated network (eRPC §7.1 5.5 us over nanoPU 3.08 us)",
        "x",
        1.79,
        1.0,
        "a ratio of two systems, each measured on other hardware than ours: the CX5 NIC's PCIe and the production LibRaft versus our IceNIC model and a minimal Raft",
    ),
    p(
        "erpc-vs-rdma-read-p50-ns",
        "eRPC-style 32 B RPC median minus RDMA read median, same simulated network (eRPC Table 2: 2.3 vs 2.0 us)",
        "ns",
        300.0,
        1.0,
        "our eRPC runs on an IceNIC that DMAs into the L2 with no PCIe, while our RDMA NIC sits behind a modelled PCIe link: the difference can change sign",
    ),
    p(
        "rnic-vs-nanopu-read-latency",
        "RDMA NIC one-sided read median / nanoPU software read median, same 300 ns topology",
        "x",
        2.95,
        0.30,
        "the published RDMA figure (about 2 us, eRPC §7 via nanoPU §5.3) is from a ConnectX cluster, not the nanoPU's topology; ours is a modelled ConnectX-3 behind PCIe",
    ),
    p(
        "herd-vs-readkv-tput",
        "HERD throughput / READ-based (Pilaf-style) GET throughput (HERD §5.2)",
        "x",
        2.6,
        0.40,
        "HERD's ratio is at the server NIC's saturation with 51 client processes; ours is at the loads simulated",
    ),
];
/// Keys whose value is mostly configured constants, not something the model
/// works out: the report counts them apart from the reproduced results, and
/// says why each is one. A key measured another way (`proto-`) is one too.
pub const CONFIGURED: &[(&str, &str)] = &[
    (
        "nt-latency-ndp",
        "the sum of NanoTransport's Table 1 stage latencies, which are parameters",
    ),
    (
        "nt-latency-homa",
        "the sum of NanoTransport's Table 1 stage latencies, which are parameters",
    ),
    (
        "w2w-8B",
        "about 52 of its 69 ns are the MAC and serial I/O latencies of the configuration; `fastpath-8B` is the part the model works out",
    ),
    (
        "rdma-read-p50-ns",
        "600 of its 678 ns are the two configured 300 ns one-way crossings of the network",
    ),
    (
        "rdma-write-p50-ns",
        "600 of its 679 ns are the two configured 300 ns one-way crossings of the network",
    ),
    (
        "rdma-cas-p50-ns",
        "600 of its 687 ns are the two configured 300 ns one-way crossings of the network",
    ),
    (
        "rdma-faa-p50-ns",
        "600 of its 688 ns are the two configured 300 ns one-way crossings of the network",
    ),
    (
        "rdma-indirect-p50-ns",
        "600 of its 691 ns are the two configured 300 ns one-way crossings of the network",
    ),
];

/// Why `key` (or the key it measures again) is mostly configured constants,
/// or `None` if the model works it out.
pub fn configured(key: &str) -> Option<&'static str> {
    let own = |k: &str| {
        CONFIGURED
            .iter()
            .find(|(c, _)| *c == k)
            .map(|(_, why)| *why)
    };
    own(key).or_else(|| {
        ALTERNATIVE_PREFIXES
            .iter()
            .find_map(|p| key.strip_prefix(p))
            .and_then(own)
    })
}

/// Whether a measured ratio shows the published effect. A ratio key (unit
/// `x`) whose published value is a gain (above 1) or a loss (below 1)
/// reproduces it only if the measured ratio goes the same way by at least
/// half as much, in log terms: a ratio of 1.0 (no effect) or a reversed one
/// is a miss however wide the key's tolerance. Other keys: always true.
pub fn shows_effect(unit: &str, published: f64, measured: f64) -> bool {
    let is_effect = unit == "x" && published.is_finite() && published > 0.0 && published != 1.0;
    if !is_effect {
        return true;
    }
    measured.is_finite() && measured > 0.0 && measured.ln() / published.ln() >= 0.5
}

/// The fixed entry for `key`, if targets.md lists it.
pub fn published(key: &str) -> Option<&'static Published> {
    PUBLISHED.iter().find(|p| p.key == key)
}

/// The fixed entry `key` is compared with: its own, or for an alternative
/// measurement (`proto-hts-max-load`) the one it measures again.
pub fn compared_with(key: &str) -> Option<&'static Published> {
    published(key).or_else(|| {
        ALTERNATIVE_PREFIXES
            .iter()
            .find_map(|p| key.strip_prefix(p))
            .and_then(published)
    })
}

/// The tolerance of `key` ([`Published::tolerance`], or [`DEFAULT_TOLERANCE`]).
pub fn tolerance(key: &str) -> f64 {
    compared_with(key).map_or(DEFAULT_TOLERANCE, |p| p.tolerance)
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
        assert_eq!(PUBLISHED.len(), 60);
        for a in PUBLISHED {
            assert!(a.tolerance > 0.0 && a.tolerance <= 1.0, "{}", a.key);
            assert!(!a.tolerance_reason.is_empty(), "{}", a.key);
        }
        assert_eq!(tolerance("proto-hts-max-load"), 0.03);
        assert_eq!(tolerance("something-else"), DEFAULT_TOLERANCE);
        assert_eq!(published("nt-latency-ndp").unwrap().value, 9.06);
        assert!(published("no-such-key").is_none());
    }

    #[test]
    fn configured_keys_are_fixed_keys() {
        for (k, why) in CONFIGURED {
            assert!(published(k).is_some(), "{k}");
            assert!(!why.is_empty(), "{k}");
        }
        assert!(configured("w2w-8B").is_some());
        assert!(configured("proto-nt-latency-ndp").is_some());
        assert!(configured("fastpath-8B").is_none());
    }

    #[test]
    fn a_null_or_reversed_effect_is_not_shown() {
        // A published gain of 1.75x: 1.0 and 0.9 do not show it, 1.33 (half
        // the effect in log terms) and more do.
        assert!(!shows_effect("x", 1.75, 1.0));
        assert!(!shows_effect("x", 1.75, 0.9));
        assert!(!shows_effect("x", 1.75, 1.3));
        assert!(shows_effect("x", 1.75, 1.33));
        assert!(shows_effect("x", 1.75, 3.0));
        // A published loss works the other way round.
        assert!(!shows_effect("x", 0.5, 1.0));
        assert!(shows_effect("x", 0.5, 0.6));
        assert!(!shows_effect("x", 1.75, f64::NAN));
        // Not a ratio key: the band alone decides.
        assert!(shows_effect("ns", 69.0, 10.0));
    }
}
