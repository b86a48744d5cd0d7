//! A NIC design attaches its own device when it is built for a node
//! (`NicDesign::attach`): the node never does so from its configuration.

use nanopu_node::{Node, NodeConfig};
use nanopu_system::nics::icenic::IceNic;
use nanopu_system::{Config, NicKind, System, NODE_IP};
use nanopu_testkit::program;

fn node(cores: usize, name: &str) -> Node {
    let cfg = NodeConfig {
        cores,
        ..NodeConfig::default()
    };
    Node::with_program(cfg, &program(name)).unwrap()
}

#[test]
fn the_icenic_design_attaches_its_device() {
    let n = node(1, "trad_loopback");
    assert!(n.device::<IceNic>().is_none());
    let mut cfg = Config::default();
    cfg.nic.kind = NicKind::Icenic;
    // What the front ends set from `--nic icenic`: the node alone still has
    // no IceNIC, its design brings it, with `[node.icenic]`.
    cfg.node.icenic.enabled = true;
    cfg.node.icenic.ipv4 = NODE_IP.into();
    cfg.node.icenic.recv_req_depth = 33;
    let s = System::new(n, &cfg, None).unwrap();
    let names: Vec<_> = s.node().devices().names().collect();
    assert!(names.contains(&"icenic"), "{names:?}");
    let dev = s.node().device::<IceNic>().expect("attached");
    assert_eq!(dev.cfg.recv_req_depth, 33, "with the table's parameters");
    // Its counters reach the reports through the design, under `device`.
    let stats = s.nic_stats_json();
    assert_eq!(stats["device"]["rx_frames"], 0, "{stats}");
    assert_eq!(stats["rx_frames"], 0, "{stats}");
}

#[test]
fn an_icenic_key_beside_another_nic_is_refused() {
    let mut cfg = Config::default();
    cfg.node.icenic.enabled = true;
    let err = System::new(node(4, "loopback"), &cfg, None)
        .err()
        .expect("refused");
    assert!(
        err.to_string()
            .contains("node.icenic.enabled = true but nic.kind = nanopu"),
        "{err}"
    );
}

#[test]
fn the_icenic_table_keeps_its_place_and_its_messages_in_a_file() {
    let cfg = Config::parse("[node]\ncores = 2\n[node.icenic]\nrecv_req_depth = 40\n").unwrap();
    assert_eq!((cfg.node.cores, cfg.node.icenic.recv_req_depth), (2, 40));
    let e = Config::parse("[node]\ncores = 2\n[node.icenic]\nsend_req_depth = 0\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("node.icenic.send_req_depth = 0: must be between 1 and 255"),
        "{e}"
    );
    assert!(e.contains("line 4"), "{e}");
    let e = Config::parse("[node.icenic]\nbogus = 1\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("node.icenic") && e.contains("unknown field `bogus`"),
        "{e}"
    );
    assert!(e.contains("line 2"), "{e}");
    let e = Config::parse("[node]\nbogus = 1\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("unknown field `bogus`") && e.contains("line 2"),
        "{e}"
    );
    let e = Config::parse("[node.core]\nclock_mhz = \"x\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("node.core.clock_mhz"), "{e}");
    // What `nanopu config` prints reads back the same.
    let again = Config::parse(&cfg.to_toml()).unwrap();
    assert_eq!(again, cfg);
}
