//! `docs/devices.md` lists every device a node can have: this fails if the
//! node attaches one the table does not name (the NIC designs' devices are
//! checked by `crates/nics/tests/devices_doc.rs`).

mod common;

use common::*;
use nanopu_node::{Node, NodeConfig};

#[test]
fn every_device_the_node_attaches_is_documented() {
    let listed = nanopu_testkit::documented_devices();
    // A program with a `tohost` word: the node attaches HTIF too.
    let elf = assemble("doc", "1:  j 1b\n");
    let node = Node::with_program_bytes(NodeConfig::default(), "doc", &elf).unwrap();
    let names: Vec<_> = node.devices().names().collect();
    assert_eq!(names, nanopu_node::Device::OWN);
    for name in names {
        assert!(
            listed.iter().any(|l| l == name),
            "docs/devices.md lists no device `{name}` (it lists {listed:?})"
        );
    }
}
