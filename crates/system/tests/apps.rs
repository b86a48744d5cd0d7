//! Applications (`nanopu_apps`) driven by the load generator: every reply
//! is checked by the application's oracle, on one node and in a cluster,
//! with the nanoPU NIC and with the traditional one.

use nanopu_apps::mica::MicaConfig;
use nanopu_apps::setalg::SetAlgConfig;
use nanopu_apps::AppConfig;
use nanopu_network::TopologyConfig;
use nanopu_node::Node;
use nanopu_system::client::LoadMode;
use nanopu_system::cluster::{ClientSpec, Cluster, ClusterConfig, HostProgram};
use nanopu_system::{Config, NicKind, System, SystemEnd};
use nanopu_testkit::program;

mod common;
use common::{assert_all_right, load, one_node, UNTIL};

fn mica_with_errors() -> AppConfig {
    AppConfig::Mica(MicaConfig {
        missing_fraction: 0.2,
        malformed_fraction: 0.1,
        ..MicaConfig::default()
    })
}

#[test]
fn mica_answers_correctly_in_all_three_versions_with_missing_keys_and_malformed_requests() {
    for (name, kind) in [
        ("mica", NicKind::Nanopu),
        ("mica_naive", NicKind::Nanopu),
        ("trad_mica", NicKind::Icenic),
    ] {
        for mode in [
            LoadMode::Closed { window: 4 },
            LoadMode::Open { rate_mrps: 0.5 },
        ] {
            let r = one_node(name, kind, 1, load(mica_with_errors(), 400, mode));
            assert_all_right(&format!("{name} {mode:?}"), &r, 400);
            assert_eq!(r.app, Some("mica"));
        }
    }
}

#[test]
fn the_oracle_catches_a_server_that_answers_wrongly() {
    // `loopback` echoes the request: no MICA reply is an echo.
    let r = one_node(
        "loopback",
        NicKind::Nanopu,
        1,
        load(
            AppConfig::Mica(MicaConfig::default()),
            50,
            LoadMode::Closed { window: 1 },
        ),
    );
    assert_eq!((r.received, r.wrong_replies), (50, 50), "{r:?}");
    let e = r.first_error.unwrap();
    assert!(e.contains("mica request 0"), "{e}");
}

#[test]
fn set_algebra_answers_correctly_on_each_design() {
    let app = || {
        AppConfig::SetAlgebra(SetAlgConfig {
            malformed_fraction: 0.1,
            ..SetAlgConfig::default()
        })
    };
    for (name, kind, cores) in [
        ("setalg", NicKind::Nanopu, 1),
        ("setalg", NicKind::Nanopu, 4),
        ("trad_setalg", NicKind::Icenic, 1),
    ] {
        let r = one_node(
            name,
            kind,
            cores,
            load(app(), 400, LoadMode::Open { rate_mrps: 1.0 }),
        );
        assert_all_right(&format!("{name} on {cores} cores"), &r, 400);
    }
}

/// Hosts 0 (`mica`, nanoPU NIC) and 1 (`trad_mica`, traditional NIC) behind
/// one switch hold the keys' two shards; clients 2 and 3 use both. Hosts 4
/// (`setalg`) and 5 (`trad_setalg`) answer client 6's queries.
fn apps_cluster() -> ClusterConfig {
    let mut cfg = ClusterConfig::default();
    cfg.network.topology = TopologyConfig::SingleSwitch { hosts: 7 };
    cfg.node.cores = 1;
    cfg.programs = vec![
        HostProgram {
            hosts: "0".into(),
            program: program("mica"),
            nic: None,
            args: Vec::new(),
        },
        HostProgram {
            hosts: "1".into(),
            program: program("trad_mica"),
            nic: Some(NicKind::Icenic),
            args: Vec::new(),
        },
        HostProgram {
            hosts: "4".into(),
            program: program("setalg"),
            nic: None,
            args: Vec::new(),
        },
        HostProgram {
            hosts: "5".into(),
            program: program("trad_setalg"),
            nic: Some(NicKind::Icenic),
            args: Vec::new(),
        },
    ];
    let load = load(mica_with_errors(), 300, LoadMode::Open { rate_mrps: 0.3 });
    let setalg = AppConfig::SetAlgebra(SetAlgConfig::default());
    cfg.clients = vec![
        ClientSpec {
            hosts: "2-3".into(),
            server: 0,
            servers: vec![1],
            load,
        },
        ClientSpec {
            hosts: "6".into(),
            server: 4,
            servers: vec![5],
            load: self::load(setalg, 300, LoadMode::Open { rate_mrps: 1.0 }),
        },
    ];
    cfg
}

#[test]
fn apps_answer_in_a_cluster_of_both_nics_and_several_clients() {
    let mut c = Cluster::new(&apps_cluster()).unwrap();
    c.run(UNTIL).unwrap();
    for h in [2, 3, 6] {
        let r = c.client_report(h).unwrap();
        assert_all_right(&format!("client {h}"), &r, 300);
    }
    // The traditional servers served their share.
    for h in [1, 5] {
        let trad = c.host(h).as_node().unwrap().nic_stats();
        assert!(
            trad["device"]["rx_frames"].as_u64().unwrap() > 100,
            "{trad}"
        );
    }
}

#[test]
fn a_cluster_config_file_drives_an_app() {
    let text = format!(
        "[network.topology]\nkind = \"single-switch\"\nhosts = 2\n\
         [[programs]]\nhosts = \"0\"\nprogram = {:?}\n\
         [[clients]]\nhosts = \"1\"\nserver = 0\n\
         [clients.load]\ncount = 100\nwarmup = 5\n\
         app = {{ kind = \"mica\", get_fraction = 0.9 }}\n",
        program("mica_naive")
    );
    let cfg = Config::parse(&text).unwrap();
    let mut c = Cluster::new(&cfg).unwrap();
    c.run(UNTIL).unwrap();
    let r = c.client_report(1).unwrap();
    assert_all_right("config file", &r, 100);
}

fn loopback_throughput_script(with_config: bool) -> AppConfig {
    use nanopu_apps::script::{ScriptConfig, Word};
    let f = |s: &str| Word::Field(s.into());
    AppConfig::Script(ScriptConfig {
        first: if with_config {
            vec![vec![Word::Const(0), f("count"), f("start")]]
        } else {
            Vec::new()
        },
        request: vec![Word::Const(1), f("counter"), f("random"), f("timestamp")],
        reply: vec![Word::Const(1), f("counter"), f("echo"), f("start")],
        match_word: Some(1),
        ..ScriptConfig::default()
    })
}

#[test]
fn the_scripted_client_drives_a_program_that_expects_a_config_message() {
    let r = one_node(
        "loopback_throughput",
        NicKind::Nanopu,
        1,
        load(
            loopback_throughput_script(true),
            300,
            LoadMode::Open { rate_mrps: 5.0 },
        ),
    );
    assert_all_right("loopback_throughput", &r, 300);
    assert_eq!(r.app, Some("script"));
}

#[test]
fn without_its_config_message_the_program_gives_up() {
    let mut cfg = Config::default();
    cfg.node.cores = 1;
    let node = Node::with_program(cfg.node.base.clone(), &program("loopback_throughput")).unwrap();
    let l = load(
        loopback_throughput_script(false),
        10,
        LoadMode::Closed { window: 1 },
    );
    let mut s = System::new(node, &cfg, Some(l)).unwrap();
    assert_eq!(s.run(UNTIL).unwrap(), SystemEnd::Exited(u32::MAX as u64)); // exit(-1)
}

#[test]
fn an_app_run_repeats_bit_for_bit() {
    let run = || {
        let r = one_node(
            "mica",
            NicKind::Nanopu,
            1,
            load(mica_with_errors(), 200, LoadMode::Open { rate_mrps: 0.8 }),
        );
        (
            r.p50_ns,
            r.p99_ns,
            r.max_ns,
            r.client_p99_ns,
            r.throughput_mrps,
        )
    };
    assert_eq!(run(), run());
}
