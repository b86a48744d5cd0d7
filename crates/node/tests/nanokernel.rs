//! The SDK nanokernel with contexts no thread runs (registered alone, or an
//! exited thread's) and with a demoted thread creating threads: the
//! self-checking guest `nk_fixes` (see its header), fed messages here.

mod common;

use common::*;
use nanopu_node::{Node, NodeConfig, RunEnd};

fn deliver(node: &mut Node, context: u16, after: u64) {
    let at = node.cycle(0) + after;
    let header = (0x0a00_0002u64 << 32) | ((context as u64) << 16) | 8;
    node.deliver_to_core(0, context, &[header, 0x1234], at)
        .unwrap();
}

#[test]
fn orphan_and_exited_contexts_and_demoted_creators() {
    let cfg = NodeConfig {
        cores: 1,
        ..NodeConfig::default()
    };
    let mut node = Node::with_program(cfg, &program("nk_fixes")).unwrap();
    // Start-up: context 9 is named and made idle, thread 2 exits; then
    // nothing is active and the hart sleeps (a livelock would spin here).
    assert_eq!(node.run(2_000_000).unwrap(), RunEnd::Limit);
    let interrupts = node.hart_stats(0).interrupts;
    assert!(interrupts >= 2, "context 9, then thread 2: {interrupts}");
    assert_eq!(node.run(4_000_000).unwrap(), RunEnd::Limit);
    assert_eq!(
        node.hart_stats(0).interrupts,
        interrupts,
        "the hart should be idle, not taking the scheduler's interrupt"
    );
    deliver(&mut node, 1, 100);
    deliver(&mut node, 2, 1000);
    let end = node.run(200_000_000).unwrap();
    let out = String::from_utf8_lossy(&node.htif().unwrap().output).into_owned();
    assert_eq!(end, RunEnd::Exited(0), "output: {out}");
}
