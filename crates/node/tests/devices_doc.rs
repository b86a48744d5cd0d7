//! `docs/devices.md` lists every device a node can have: this fails if the
//! node attaches one the table does not name (the NIC designs' devices are
//! checked by `crates/nics/tests/devices_doc.rs`).

mod common;

use common::*;
use nanopu_node::{Node, NodeConfig};

/// The names in the second column of the devices table of `docs/devices.md`.
fn documented() -> Vec<String> {
    let doc = std::fs::read_to_string(repo().join("docs/devices.md")).expect("docs/devices.md");
    let mut rows = doc
        .lines()
        .skip_while(|l| !l.starts_with("| device | name |"));
    rows.next()
        .expect("the devices table has a `| device | name |` header");
    rows.skip(1)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let name = l.split('|').nth(2).expect("a name column").trim();
            name.trim_matches('`').to_string()
        })
        .collect()
}

#[test]
fn every_device_the_node_attaches_is_documented() {
    let listed = documented();
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
