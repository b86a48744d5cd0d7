//! The part-2 applications of Table 1 (Othello, NN inference, INT
//! processing, packet classifier, HD search (both versions), N-body) driven by the load
//! generator: every reply checked by the application's oracle, on one node
//! and in a cluster.

use nanopu_apps::classifier::ClassifierConfig;
use nanopu_apps::hdsearch::HdSearchConfig;
use nanopu_apps::int_proc::IntConfig;
use nanopu_apps::lnic_hdsearch::{LnicHdSearchConfig, Vectors};
use nanopu_apps::nbody::NbodyConfig;
use nanopu_apps::nn::NnConfig;
use nanopu_apps::othello::OthelloConfig;
use nanopu_apps::AppConfig;
use nanopu_network::TopologyConfig;
use nanopu_system::client::LoadMode;
use nanopu_system::cluster::{ClientSpec, Cluster, ClusterConfig, HostProgram};
use nanopu_system::NicKind;
use nanopu_testkit::program;

mod common;
use common::{assert_all_right, load, one_node, UNTIL};

fn othello() -> AppConfig {
    AppConfig::Othello(OthelloConfig {
        malformed_fraction: 0.05,
        ..OthelloConfig::default()
    })
}

#[test]
fn othello_chooses_the_oracles_move_on_one_and_four_cores() {
    for cores in [1, 4] {
        let r = one_node(
            "othello",
            NicKind::Nanopu,
            cores,
            load(othello(), 200, LoadMode::Open { rate_mrps: 0.05 }),
        );
        assert_all_right(&format!("othello on {cores} cores"), &r, 200);
        assert_eq!(r.app, Some("othello"));
    }
    // Depth 3 as well: a different search, the same oracle.
    let deeper = AppConfig::Othello(OthelloConfig {
        depth: 3,
        ..OthelloConfig::default()
    });
    let r = one_node(
        "othello",
        NicKind::Nanopu,
        1,
        load(deeper, 50, LoadMode::Closed { window: 1 }),
    );
    assert_all_right("othello depth 3", &r, 50);
}

#[test]
fn nn_inference_matches_the_oracle_on_both_nics() {
    let app = || {
        AppConfig::Nn(NnConfig {
            malformed_fraction: 0.05,
            ..NnConfig::default()
        })
    };
    for (name, kind, cores) in [
        ("nn", NicKind::Nanopu, 1),
        ("nn", NicKind::Nanopu, 4),
        ("trad_nn", NicKind::Icenic, 1),
    ] {
        let r = one_node(
            name,
            kind,
            cores,
            load(app(), 300, LoadMode::Open { rate_mrps: 0.05 }),
        );
        assert_all_right(&format!("{name} on {cores} cores"), &r, 300);
    }
}

fn int_app() -> AppConfig {
    AppConfig::Int(IntConfig {
        malformed_fraction: 0.05,
        ..IntConfig::default()
    })
}

#[test]
fn int_processing_replays_the_oracles_state_machine() {
    for mode in [
        LoadMode::Closed { window: 4 },
        LoadMode::Open { rate_mrps: 2.0 },
    ] {
        let r = one_node("int_proc", NicKind::Nanopu, 1, load(int_app(), 1000, mode));
        assert_all_right(&format!("int_proc {mode:?}"), &r, 1000);
        assert_eq!(r.app, Some("int"));
    }
}

fn host(hosts: &str, name: &str, nic: Option<NicKind>) -> HostProgram {
    HostProgram {
        hosts: hosts.into(),
        program: program(name),
        nic,
        args: Vec::new(),
    }
}

/// Host 0 plays Othello for client 4; hosts 1 (`nn`) and 2 (`trad_nn`)
/// answer client 5's inference requests; host 3 processes the INT reports
/// of clients 6 and 7 (each with its own paths and switches); hosts 8 and 9
/// hold N-body bodies and client 10 asks both for forces.
fn apps2_cluster() -> ClusterConfig {
    let mut cfg = ClusterConfig::default();
    cfg.network.topology = TopologyConfig::SingleSwitch { hosts: 11 };
    cfg.node.cores = 1;
    cfg.programs = vec![
        host("0", "othello", None),
        host("1", "nn", None),
        host("2", "trad_nn", Some(NicKind::Icenic)),
        host("3", "int_proc", None),
        host("8-9", "nbody", None),
    ];
    let client =
        |hosts: &str, server: usize, servers: Vec<usize>, app: AppConfig, rate: f64| ClientSpec {
            hosts: hosts.into(),
            server,
            servers,
            load: load(app, 200, LoadMode::Open { rate_mrps: rate }),
        };
    cfg.clients = vec![
        client("4", 0, vec![], othello(), 0.05),
        client("5", 1, vec![2], AppConfig::Nn(NnConfig::default()), 0.05),
        client("6-7", 3, vec![], int_app(), 1.0),
        client(
            "10",
            8,
            vec![9],
            AppConfig::Nbody(NbodyConfig::default()),
            0.5,
        ),
    ];
    cfg
}

#[test]
fn the_part2_apps_answer_in_a_cluster() {
    let mut c = Cluster::new(&apps2_cluster()).unwrap();
    c.run(UNTIL).unwrap();
    for h in [4, 5, 6, 7, 10] {
        let r = c.client_report(h).unwrap();
        assert_all_right(&format!("client {h}"), &r, 200);
    }
    let trad = c.host(2).as_node().unwrap().nic_stats();
    assert!(trad["device"]["rx_frames"].as_u64().unwrap() > 50, "{trad}");
}

#[test]
fn the_classifier_finds_the_first_matching_rule_of_100k() {
    let app = AppConfig::Classifier(ClassifierConfig {
        malformed_fraction: 0.05,
        ..ClassifierConfig::default()
    });
    for cores in [1, 4] {
        let r = one_node(
            "classifier",
            NicKind::Nanopu,
            cores,
            load(app.clone(), 300, LoadMode::Open { rate_mrps: 0.1 }),
        );
        assert_all_right(&format!("classifier on {cores} cores"), &r, 300);
    }
}

#[test]
fn hd_search_returns_the_exact_nearest_neighbours() {
    let app = AppConfig::HdSearch(HdSearchConfig {
        malformed_fraction: 0.05,
        uniform_fraction: 0.05,
        ..HdSearchConfig::default()
    });
    for cores in [1, 4] {
        let r = one_node(
            "hdsearch",
            NicKind::Nanopu,
            cores,
            load(app.clone(), 200, LoadMode::Open { rate_mrps: 0.01 }),
        );
        assert_all_right(&format!("hdsearch on {cores} cores"), &r, 200);
    }
}

#[test]
fn hd_distance_returns_the_closest_candidate_as_the_prototypes_program_does() {
    let app = AppConfig::LnicHdsearch(LnicHdSearchConfig {
        vectors: Vectors::Generated,
        ..LnicHdSearchConfig::default()
    });
    for cores in [1, 4] {
        let r = one_node(
            "hd_distance",
            NicKind::Nanopu,
            cores,
            load(app.clone(), 300, LoadMode::Open { rate_mrps: 0.2 }),
        );
        assert_all_right(&format!("hd_distance on {cores} cores"), &r, 300);
    }
}

#[test]
fn nbody_forces_match_the_oracle_bit_for_bit() {
    for bodies in [1, 4] {
        let app = AppConfig::Nbody(NbodyConfig {
            bodies,
            malformed_fraction: 0.05,
            ..NbodyConfig::default()
        });
        let r = one_node(
            "nbody",
            NicKind::Nanopu,
            1,
            load(app, 300, LoadMode::Open { rate_mrps: 0.1 }),
        );
        assert_all_right(&format!("nbody with {bodies} bodies"), &r, 300);
    }
}

/// N-body with the nodes exchanging bodies among themselves
/// (`nbody_cluster`): every node's final checksum, printed on its console,
/// is the oracle's, for a 2-node and a 4-node cluster.
#[test]
fn nbody_nodes_exchanging_bodies_end_where_the_oracle_does() {
    for (nodes, steps) in [(2usize, 3u64), (4, 4)] {
        let mut cfg = ClusterConfig::default();
        cfg.network.topology = TopologyConfig::SingleSwitch { hosts: nodes };
        cfg.node.cores = 1;
        let mut args = vec![steps.to_string(), "{ip}".to_string()];
        args.extend((1..=nodes).map(|i| format!("10.0.0.{i}")));
        cfg.programs = vec![HostProgram {
            args,
            ..host(&format!("0-{}", nodes - 1), "nbody_cluster", None)
        }];
        let mut c = Cluster::new(&cfg).unwrap();
        c.run(UNTIL).unwrap();
        let want = nanopu_apps::nbody::cluster_checksums(nodes, steps);
        for (h, sum) in want.iter().enumerate() {
            let n = c.node(h).unwrap();
            let out = String::from_utf8_lossy(&n.htif().unwrap().output).into_owned();
            assert_eq!(n.exit().map(|e| e.0), Some(0), "host {h}: {out}");
            let line =
                format!("nbody_cluster node {h} of {nodes}: {steps} steps, checksum {sum:016x}");
            assert!(out.contains(&line), "host {h}: want {line:?}, got {out:?}");
        }
        // Each step every node sends its 16 bodies to every other node in
        // 4 requests and gets 4 replies from each.
        let per_step = nodes * (nodes - 1) * 4 * 2;
        assert_eq!(c.node_sends.len(), per_step * steps as usize);
    }
}
