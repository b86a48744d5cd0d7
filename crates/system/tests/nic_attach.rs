//! A NIC design attaches its own device when it is built for a node
//! (`NicDesign::attach`): the node never does so from its configuration.

use nanopu_node::{IceNic, Node, NodeConfig};
use nanopu_system::{Config, NicKind, System, NODE_IP};
use nanopu_testkit::program;

fn node(cfg: NodeConfig, name: &str) -> Node {
    Node::with_program(cfg, &program(name)).unwrap()
}

#[test]
fn the_icenic_design_attaches_its_device() {
    let mut node_cfg = NodeConfig {
        cores: 1,
        ..NodeConfig::default()
    };
    node_cfg.icenic.ipv4 = NODE_IP.into();
    // What the front ends set from `--nic icenic`: the node alone still has
    // no IceNIC, its design brings it.
    node_cfg.icenic.enabled = true;
    let n = node(node_cfg, "trad_loopback");
    assert!(n.device::<IceNic>().is_none());
    let mut cfg = Config::default();
    cfg.nic.kind = NicKind::Icenic;
    let s = System::new(n, &cfg, None).unwrap();
    let names: Vec<_> = s.node().devices().names().collect();
    assert!(names.contains(&"icenic"), "{names:?}");
    assert!(s.node().device::<IceNic>().is_some());
}

#[test]
fn an_icenic_key_beside_another_nic_is_refused() {
    let mut node_cfg = NodeConfig::default();
    node_cfg.icenic.enabled = true;
    let err = System::new(node(node_cfg, "loopback"), &Config::default(), None)
        .err()
        .expect("refused");
    assert!(
        err.to_string()
            .contains("node.icenic.enabled = true but nic.kind = nanopu"),
        "{err}"
    );
}
