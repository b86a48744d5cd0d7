//! G-Opt's batched lookups against the naive loop (`sdk/programs/gopt_*`):
//! with 10 L1D MSHRs the prefetches overlap the misses and G-Opt is faster;
//! with none (the prototype's blocking cache) it cannot be; the results agree.
//! Needs the guest programs (`make -C sdk`).

use nanopu_experiments::gopt::{measure, BENCHES};
use nanopu_experiments::{Runner, Scale};
use nanopu_system::Config;

/// Small tables (still 8x the 512 KB L2) so the test runs in about a second.
fn size_and_lookups(name: &str) -> (u64, u32) {
    match name {
        "cuckoo" => (16, 512),
        "pointer-chase" => (20, 32),
        "ipv6" => (2048, 256),
        other => panic!("unknown benchmark {other}"),
    }
}

#[test]
fn gopt_overlaps_misses_only_with_mshrs_and_agrees_with_naive() {
    let r = Runner::new(Config::default(), Scale::Quick, Some(1), 1);
    for b in &BENCHES {
        let (size, lookups) = size_and_lookups(b.name);
        let with = measure(&r, b, size, lookups, 10, &[8]).unwrap_or_else(|e| panic!("{e}"));
        let without = measure(&r, b, size, lookups, 0, &[8]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            with.checksum, without.checksum,
            "{}: same lookups, same results",
            b.name
        );
        let (fast, slow) = (with.speedup(8), without.speedup(8));
        assert!(
            fast > 1.5,
            "{}: G-Opt with 10 MSHRs only {fast:.2}x naive",
            b.name
        );
        assert!(
            (0.5..=1.0).contains(&slow),
            "{}: without MSHRs G-Opt is {slow:.2}x naive: prefetches must do nothing",
            b.name
        );
        // Naive code has no independent misses to overlap: MSHRs barely help it.
        let naive_gain = without.naive_cycles / with.naive_cycles;
        assert!(
            naive_gain < 1.1,
            "{}: naive {naive_gain:.2}x faster with MSHRs",
            b.name
        );
    }
}
