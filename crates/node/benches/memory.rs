//! The memory system's models below the L1s (`cargo bench -p nanopu-node
//! --bench memory`): host time per LLC lookup and per booking of a shared
//! resource's time buckets, the work behind every simulated L1 miss.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
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

/// Random lines of a 1 MB region through the default 512 KB, 8-way LLC
/// (about half hit, as in the `pointer_chase` kernel), one in four a write.
fn llc_access(c: &mut Criterion) {
    let geometry = CacheConfig {
        size_bytes: 512 * 1024,
        ways: 8,
        line_bytes: 64,
    };
    let mut llc = Llc::new(&geometry, &LlcConfig::default());
    let mut rng = 0x5eed_u64;
    let mut g = c.benchmark_group("memory");
    g.throughput(Throughput::Elements(BATCH));
    g.bench_function("llc_access_1mb_random", |b| {
        b.iter(|| {
            for _ in 0..BATCH {
                let r = next(&mut rng);
                let addr = (0x8000_0000 + r % (1 << 20)) & !63;
                black_box(llc.access(addr, r & 3 == 0, Alloc::All));
            }
        })
    });
    // The NEBULA server's 16 MB, 16-way LLC (configs/nebula-server.toml)
    // under random lines of a 64 MB store (MICA's values): its bookkeeping
    // is larger than the host's caches, so this measures host misses.
    let geometry = CacheConfig {
        size_bytes: 16 << 20,
        ways: 16,
        line_bytes: 64,
    };
    let mut big = Llc::new(&geometry, &LlcConfig::default());
    g.bench_function("llc_access_16mb_random", |b| {
        b.iter(|| {
            for _ in 0..BATCH {
                let r = next(&mut rng);
                let addr = (0x8000_0000 + r % (64 << 20)) & !63;
                black_box(big.access(addr, r & 3 == 0, Alloc::All));
            }
        })
    });
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
