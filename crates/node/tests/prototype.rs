//! A program built the way the nanoPU prototype's programs are (its
//! compiler flags, start-up conventions, HTIF and UART use, boot message
//! before registration) runs unmodified.

mod common;

use common::*;
use nanopu_node::{Node, NodeConfig, RunEnd};
use std::process::Command;

fn build() -> std::path::PathBuf {
    let out = std::env::temp_dir().join(format!("nanopu-proto-{}.elf", std::process::id()));
    let status = Command::new("make")
        .args(["-s", "-C"])
        .arg(repo().join("crates/node/tests/guest"))
        .arg(format!("OUT={}", out.display()))
        .status()
        .expect("make");
    assert!(
        status.success(),
        "building the prototype-style program failed"
    );
    out
}

#[test]
fn prototype_style_loopback_runs_unmodified() {
    let mut node = Node::with_program(NodeConfig::default(), &build()).unwrap();
    assert_eq!(node.run(200_000).unwrap(), RunEnd::Limit);
    let out = String::from_utf8_lossy(&node.htif().unwrap().output).into_owned();
    assert_eq!(out, "Ready!\n");
    let boot = node.pop_sent().expect("boot message");
    assert_eq!(boot.words, vec![16, 0, 0]);
    for len in [8u64, 64, 1024] {
        let mut msg = vec![(0x0a00_0002 << 32) | (9 << 16) | len];
        msg.extend((0..len / 8).map(|i| 0xabc0 + i));
        node.deliver_to_core(0, 0, &msg, 0).unwrap();
        let now = node.cycle(0);
        assert_eq!(node.run(now + 50_000).unwrap(), RunEnd::Limit);
        let reply = node.pop_sent().expect("reply");
        assert_eq!(reply.words, msg);
    }
}
