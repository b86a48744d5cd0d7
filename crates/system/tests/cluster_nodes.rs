//! nanoPU nodes as hosts of a network: guest programs talk through their
//! NICs' NanoTransport and the switches, with built-in hosts or with each
//! other.

use nanopu_network::TopologyConfig;
use nanopu_sim::{SimDuration, SimTime};
use nanopu_system::cluster::{Cluster, ClusterConfig, HostProgram, MessageSpec};
use nanopu_testkit::program;
use nanopu_transport::Protocol;

fn config(hosts: usize, protocol: Protocol, programs: Vec<HostProgram>) -> ClusterConfig {
    let mut cfg = ClusterConfig::default();
    cfg.network.topology = TopologyConfig::SingleSwitch { hosts };
    cfg.nic.transport.protocol = protocol;
    cfg.node.cores = 2;
    cfg.programs = programs;
    cfg
}

#[test]
fn built_in_clients_get_replies_from_a_loopback_node() {
    for protocol in [Protocol::Ndp, Protocol::Homa, Protocol::HomaTr] {
        let cfg = config(
            4,
            protocol,
            vec![HostProgram {
                hosts: "0".into(),
                program: program("loopback"),
                nic: None,
                args: Vec::new(),
            }],
        );
        let mut c = Cluster::new(&cfg).unwrap();
        let mut n = 0;
        for from in 1..4 {
            for k in 0..10u64 {
                // After the node has booted (about 5 us); up to 2 packets.
                let len = [8u16, 1000, 2000][(k % 3) as usize];
                c.send(MessageSpec {
                    from,
                    to: 0,
                    len,
                    at_ns: 10_000 + k * 700 + from as u64 * 50,
                })
                .unwrap();
                n += 1;
            }
        }
        c.run(SimTime::ZERO + SimDuration::from_us(1_000)).unwrap();
        assert_eq!(c.booted.len(), 1, "the node sent its boot message");
        for (i, r) in c.records.iter().enumerate() {
            let (d, rep) = (r.delivered_at.unwrap(), r.reply_at.expect("a reply"));
            assert!(r.sent_at < d && d < rep, "{protocol:?} message {i}: {r:?}");
            assert_eq!(r.deliveries, 1);
            // Two switch crossings and the node's work: well under 5 us.
            assert!(rep - r.sent_at < SimDuration::from_us(5), "{r:?}");
        }
        assert_eq!(c.node_deliveries.len(), n);
        assert_eq!(c.node_sends.len(), n);
        assert_eq!(c.unknown_deliveries, 0);
        assert_eq!(c.transport_stats().tx_timeouts, 0, "{protocol:?}");
        assert!(c.occupancy().is_none(), "{:?}", c.occupancy());
    }
}

#[test]
fn nodes_talk_to_nodes_and_a_trimmed_incast_recovers() {
    // Host 0 echoes; hosts 1-12 each send 1 KB at boot and check the echo.
    let mut cfg = config(
        13,
        Protocol::Ndp,
        vec![
            HostProgram {
                hosts: "0".into(),
                program: program("loopback"),
                nic: None,
                args: Vec::new(),
            },
            HostProgram {
                hosts: "1-12".into(),
                program: program("incast_client"),
                nic: None,
                args: Vec::new(),
            },
        ],
    );
    // Room for 6 of the 12 packets: the rest are trimmed.
    cfg.network.switch.buffer_bytes = 6 * 1088;
    let mut c = Cluster::new(&cfg).unwrap();
    c.run(SimTime::ZERO + SimDuration::from_us(1_000)).unwrap();
    for h in 1..=12 {
        assert_eq!(
            c.node(h).unwrap().exit(),
            Some((0, 0)),
            "client {h} checked its echo"
        );
    }
    let s = c.network().stats();
    assert!(s.total.trimmed > 0, "{s:?}");
    assert_eq!(c.transport_stats().tx_timeouts, 0, "NACKs, not timeouts");
    assert!(c.occupancy().is_none());
}

#[test]
fn a_missing_program_is_a_clear_error() {
    let cfg = config(
        2,
        Protocol::Ndp,
        vec![HostProgram {
            hosts: "1".into(),
            program: "/nonexistent/x.elf".into(),
            nic: None,
            args: Vec::new(),
        }],
    );
    let e = Cluster::new(&cfg).err().expect("an error").to_string();
    assert!(e.contains("/nonexistent/x.elf"), "{e}");
    let mut bad = cfg.clone();
    bad.programs[0].hosts = "5".into();
    bad.programs[0].program = program("loopback");
    let e = Cluster::new(&bad).err().expect("an error").to_string();
    assert!(e.contains("hosts = \"5\""), "{e}");
}
