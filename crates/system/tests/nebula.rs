//! NEBULA's NIC and the designs it is measured against (issue 13): MICA on
//! 16 cores behind each design answers correctly; NACKed requests are
//! retried and answered; steering puts the payload in the core's L1.

use nanopu_system::nics::nebula::load::{node_config_from_toml, run_mica, MicaLoad};
use nanopu_system::nics::nebula::NebulaDesign;
use nanopu_testkit::{program, repo};

fn server() -> nanopu_node::NodeConfig {
    let text = std::fs::read_to_string(repo().join("configs/nebula-server.toml")).unwrap();
    node_config_from_toml(&text).unwrap()
}

fn small(design: NebulaDesign) -> MicaLoad {
    MicaLoad::small(design, server(), program("nb_mica"), 2000)
}

#[test]
fn mica_answers_correctly_under_every_design() {
    for design in NebulaDesign::ALL {
        let run = run_mica(&small(design)).unwrap();
        assert_eq!(run.wrong, 0, "{}: {:?}", design.name(), run.first_error);
        assert_eq!(run.unanswered, 0, "{}", design.name());
        assert_eq!(run.answered, run.sent, "{}", design.name());
        assert_eq!(
            run.nacks_received,
            0,
            "{}: no NACKs at low load",
            design.name()
        );
        let s = &run.stages[0];
        assert!(s.finished > 150, "{}: {s:?}", design.name());
        assert!(s.p99_ns.unwrap() > 100, "{}: {s:?}", design.name());
    }
}

#[test]
fn nacked_requests_are_retried_and_answered() {
    // A receive buffer of 4 slots of 576 B: a burst overflows it.
    let mut load = small(NebulaDesign::NebulaBase);
    load.nic.shared_buffer_bytes = 4 * 576;
    load.rates_mrps = vec![40.0];
    load.backoff_ns = 500;
    let run = run_mica(&load).unwrap();
    assert!(run.nacks_received > 0, "{run:?}");
    assert!(run.retries > 0);
    assert_eq!(run.wrong, 0, "{:?}", run.first_error);
    assert_eq!(run.gave_up + run.answered, run.sent, "{run:?}");
    assert_eq!(run.unanswered, 0);
    assert!(run.answered > run.sent / 2);
    // And a client that gives up at once reports what it gave up on.
    load.max_attempts = 1;
    let run = run_mica(&load).unwrap();
    assert!(run.gave_up > 0);
    assert_eq!(run.gave_up + run.answered, run.sent, "{run:?}");
}
