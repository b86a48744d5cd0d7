//! `docs/devices.md` lists every device a node can have: the node's own and
//! those the NIC designs attach (`NicDesign::attach`). This fails if a
//! design attaches a device the table does not name, or the table names
//! one nothing attaches any more.

use nanopu_nics::icenic::IceNicPort;
use nanopu_nics::mac::Mac;
use nanopu_nics::nebula::{NebulaConfig, NebulaDesign, NebulaNic};
use nanopu_nics::rdma::RdmaNic;
use nanopu_nics::NicDesign;
use nanopu_node::{Node, NodeConfig};
use nanopu_sim::SimDuration;
use std::collections::BTreeSet;

/// The devices `docs/devices.md` lists.
fn documented() -> BTreeSet<String> {
    nanopu_testkit::documented_devices().into_iter().collect()
}

fn mac() -> Mac {
    Mac {
        link_gbps: 100,
        rx_latency: SimDuration::ZERO,
        tx_latency: SimDuration::ZERO,
    }
}

/// The devices of a node with `attach` run on it, by name.
fn attached(attach: impl FnOnce(&mut Node)) -> Vec<&'static str> {
    let mut node = Node::new(NodeConfig::default(), 0x8000_0000).unwrap();
    attach(&mut node);
    node.devices().names().collect()
}

#[test]
fn every_device_a_nic_design_attaches_is_documented_and_no_other() {
    let mut names = BTreeSet::new();
    names.extend(attached(|_| {}));
    // HTIF is the node's own, attached with a program that has `tohost`
    // (`crates/node/tests/devices_doc.rs` checks it that way).
    names.insert("htif");
    names.extend(attached(|n| {
        IceNicPort::new(mac(), Default::default())
            .attach(n)
            .unwrap()
    }));
    names.extend(attached(|n| {
        RdmaNic::new(Default::default(), 1, mac())
            .attach(n)
            .unwrap()
    }));
    for design in NebulaDesign::ALL {
        names.extend(attached(|n| {
            let nic = NebulaNic::new(design, NebulaConfig::default(), mac(), 1, n.cores()).unwrap();
            nic.attach(n).unwrap()
        }));
    }
    let names: BTreeSet<String> = names.into_iter().map(String::from).collect();
    let listed = documented();
    let missing: Vec<_> = names.difference(&listed).collect();
    assert!(
        missing.is_empty(),
        "docs/devices.md does not list {missing:?}"
    );
    let stale: Vec<_> = listed.difference(&names).collect();
    assert!(
        stale.is_empty(),
        "docs/devices.md lists {stale:?}, which nothing attaches"
    );
}
