//! The event queue under a network-like load (`cargo bench -p nanopu-sim`):
//! host time per event taken and scheduled again. Criterion keeps the
//! previous run as a baseline and reports the change with its confidence
//! interval, which `nanopu bench`'s single host-time figures cannot.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use nanopu_sim::{EventQueue, SimDuration, SimTime};
use std::hint::black_box;

/// Events pending at any time (frames on links, transport timers).
const PENDING: u64 = 1_000;
/// Events per measured iteration.
const BATCH: u64 = 10_000;

/// A deterministic stream (xorshift64).
fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

fn pop_and_reschedule(c: &mut Criterion) {
    let mut g = c.benchmark_group("event_queue");
    g.throughput(Throughput::Elements(BATCH));
    g.bench_function("pop_and_reschedule", |b| {
        let mut q = EventQueue::new();
        for i in 0..PENDING {
            q.schedule(SimTime::ZERO + SimDuration::from_ns(i), i);
        }
        let mut rng = 0x9e37_79b9_7f4a_7c15;
        b.iter(|| {
            for _ in 0..BATCH {
                let (t, e) = q.pop_until(SimTime::MAX).expect("never empty");
                let r = next(&mut rng);
                // Mostly a frame's next hop, up to 500 ns on; one event in
                // 16 a timeout ~10 us on (beyond the wheel's reach).
                let ns = if r.is_multiple_of(16) {
                    10_000 + r % 1_000
                } else {
                    1 + (r >> 8) % 500
                };
                q.schedule(t + SimDuration::from_ns(ns), black_box(e));
            }
        })
    });
    g.finish();
}

criterion_group!(benches, pop_and_reschedule);
criterion_main!(benches);
