//! The memory system's models below the L1s (`cargo bench -p nanopu-node
//! --bench memory`): host time per LLC lookup and per booking of a shared
//! resource's time buckets, the work behind every simulated L1 miss.

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use nanopu_core::timing::CacheConfig;
use nanopu_node::memory::buckets::TimeBuckets;
use nanopu_node::memory::llc::{Alloc, Llc, LlcConfig};
use std::hint::black_box;

const BATCH: u64 = 10_000;

/// A deterministic stream (xorshift64).
fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// `name`: random lines of a `region`-byte store through an LLC of
/// `size_bytes` and `ways`, one access in four a write.
fn bench_llc(
    g: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    size_bytes: u32,
    ways: u32,
    region: u64,
    rng: &mut u64,
) {
    let geometry = CacheConfig {
        size_bytes,
        ways,
        line_bytes: 64,
    };
    let mut llc = Llc::new(&geometry, &LlcConfig::default());
    g.bench_function(name, |b| {
        b.iter(|| {
            for _ in 0..BATCH {
                let r = next(rng);
                let addr = (0x8000_0000 + r % region) & !63;
                black_box(llc.access(addr, r & 3 == 0, Alloc::All));
            }
        })
    });
}

fn llc_access(c: &mut Criterion) {
    let mut rng = 0x5eed_u64;
    let mut g = c.benchmark_group("memory");
    g.throughput(Throughput::Elements(BATCH));
    // The default 512 KB, 8-way LLC over 1 MB (about half hit, as in the
    // `pointer_chase` kernel).
    bench_llc(
        &mut g,
        "llc_access_1mb_random",
        512 << 10,
        8,
        1 << 20,
        &mut rng,
    );
    // The NEBULA server's 16 MB, 16-way LLC (configs/nebula-server.toml)
    // over a 64 MB store (MICA's values): its bookkeeping is larger than
    // the host's caches, so this measures host misses.
    bench_llc(
        &mut g,
        "llc_access_16mb_random",
        16 << 20,
        16,
        64 << 20,
        &mut rng,
    );
    g.bench_function("bucket_booking", |b| {
        // An LLC bank: 4 busy cycles per access, 32-cycle buckets, requests
        // every ~10 cycles with jitter (moderate load).
        let mut bank = TimeBuckets::new(32, 32);
        let mut cycle = 0u64;
        b.iter(|| {
            for _ in 0..BATCH {
                cycle += 5 + next(&mut rng) % 10;
                black_box(bank.book(cycle, 4));
            }
        })
    });
    g.finish();
}

criterion_group!(benches, llc_access);
criterion_main!(benches);
