//! The configuration from TOML text.

use nanopu_network::{
    BufferKind, FaultScope, LoadBalancing, Network, NetworkConfig, TopologyConfig,
};

fn parse(text: &str) -> Result<NetworkConfig, String> {
    toml::from_str(text).map_err(|e| e.to_string())
}

#[test]
fn empty_text_is_the_default() {
    assert_eq!(parse("").unwrap(), NetworkConfig::default());
    let c = parse("[topology]\nkind = \"single-switch\"\n").unwrap();
    assert_eq!(c.topology, TopologyConfig::SingleSwitch { hosts: 2 });
}

#[test]
fn full_example_parses() {
    let c = parse(
        r#"
        seed = 7
        [topology]
        kind = "leaf-spine"
        leaves = 4
        spines = 2
        hosts_per_leaf = 16
        [link]
        gbps = 100
        host_propagation_ps = 10000
        [switch]
        forwarding_latency_ps = 250000
        priority_bands = 4
        buffer = "shared"
        buffer_bytes = 55296
        trimming = false
        load_balancing = "spray"
        [faults]
        loss = 0.01
        reorder = 0.5
        reorder_delay_ps = 2000
        scope = "host-links"
        "#,
    )
    .unwrap();
    assert_eq!(c.seed, 7);
    assert_eq!(
        c.topology,
        TopologyConfig::LeafSpine {
            leaves: 4,
            spines: 2,
            hosts_per_leaf: 16
        }
    );
    assert_eq!((c.link.gbps, c.link.host_propagation_ps), (100, 10_000));
    assert_eq!(c.link.fabric_propagation_ps, 43_000);
    assert_eq!(c.switch.buffer, BufferKind::Shared);
    assert_eq!(c.switch.load_balancing, LoadBalancing::Spray);
    assert_eq!((c.switch.buffer_bytes, c.switch.trimming), (55_296, false));
    assert_eq!(c.switch.trim_queue_bytes, 8192);
    assert_eq!(c.faults.scope, FaultScope::HostLinks);
    assert_eq!((c.faults.loss, c.faults.reorder_delay_ps), (0.01, 2000));
    assert_eq!(Network::new(&c).unwrap().hosts(), 64);

    let d = parse("[topology]\nkind = \"dumbbell\"\nleft_hosts = 5\n").unwrap();
    assert_eq!(
        d.topology,
        TopologyConfig::Dumbbell {
            left_hosts: 5,
            right_hosts: 1
        }
    );
}

#[test]
fn round_trips_through_toml() {
    let mut c = NetworkConfig {
        topology: TopologyConfig::Dumbbell {
            left_hosts: 2,
            right_hosts: 3,
        },
        ..NetworkConfig::default()
    };
    c.faults.truncate = 0.25;
    let text = toml::to_string(&c).unwrap();
    assert_eq!(parse(&text).unwrap(), c);
}

#[test]
fn unknown_keys_and_bad_values_name_the_field() {
    let e = parse("[switch]\nbuffer_byte = 5\n").unwrap_err();
    assert!(e.contains("buffer_byte"), "{e}");
    let e = parse("[topology]\nkind = \"single-switch\"\nleaves = 2\n").unwrap_err();
    assert!(e.contains("leaves"), "{e}");
    let e = parse("[topology]\nkind = \"ring\"\n").unwrap_err();
    assert!(e.contains("ring"), "{e}");
    let e = parse("[switch]\nbuffer = \"pooled\"\n").unwrap_err();
    assert!(e.contains("pooled"), "{e}");
    let e = parse("[link]\ngbps = \"fast\"\n").unwrap_err();
    assert!(e.contains("gbps"), "{e}");

    // Parses, but does not validate.
    let c = parse("[switch]\nbuffer_bytes = 0\n").unwrap();
    assert_eq!(
        Network::new(&c).unwrap_err().to_string(),
        "network.switch.buffer_bytes = 0: must be positive"
    );
    let c = parse("[faults]\nloss = 2.0\n").unwrap();
    let e = Network::new(&c).unwrap_err().to_string();
    assert_eq!(
        e,
        "network.faults.loss = 2: must be a probability in [0, 1]"
    );
    let c = parse("[topology]\nkind = \"leaf-spine\"\nspines = 0\n").unwrap();
    assert!(c
        .validate()
        .unwrap_err()
        .to_string()
        .starts_with("topology.spines = 0"));
}
