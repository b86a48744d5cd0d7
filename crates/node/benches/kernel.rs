//! The core model on a compute kernel (`cargo bench -p nanopu-node --bench
//! kernel`): the SDK's `hashing` program (integer hashing, loads, stores,
//! unpredictable branches) run to its exit on a default node, measured in
//! simulated instructions executed per host second. Builds the SDK first
//! if needed (the RISC-V toolchain: `scripts/setup.sh --test`).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use nanopu_node::{Node, NodeConfig, RunEnd};

fn run(elf: &std::path::Path) -> Node {
    let mut node = Node::with_program(NodeConfig::default(), elf).expect("the kernel loads");
    assert_eq!(node.run(u64::MAX).expect("runs"), RunEnd::Exited(0));
    node
}

fn hashing(c: &mut Criterion) {
    let elf = nanopu_testkit::program("hashing");
    // The same instructions every run (the simulation is deterministic).
    let executed = run(&elf).executed_instret();
    let mut g = c.benchmark_group("kernel");
    g.sample_size(10);
    g.throughput(Throughput::Elements(executed));
    g.bench_function("hashing", |b| {
        b.iter_batched(
            || Node::with_program(NodeConfig::default(), &elf).expect("the kernel loads"),
            |mut node| assert_eq!(node.run(u64::MAX).expect("runs"), RunEnd::Exited(0)),
            criterion::BatchSize::PerIteration,
        )
    });
    g.finish();
}

criterion_group!(benches, hashing);
criterion_main!(benches);
