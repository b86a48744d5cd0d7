//! The eRPC-style library (`sdk/include/erpc.h`) on IceNIC nodes: requests
//! answered, at-most-once execution under loss, duplication and
//! reordering, session credits, Raft over it; multi-packet messages (CRs,
//! RFRs, reassembly, go-back-N) with their content and executions checked.

use nanopu_experiments::erpc::{client_server, icenic_cluster, run_until_exit, GuestRun};
use nanopu_experiments::{Runner, Scale};
use nanopu_network::{host_ip, NetworkConfig};
use nanopu_system::Config;

fn runner() -> Runner {
    Runner::new(Config::default(), Scale::Quick, Some(1), 1)
}

fn pair(network: NetworkConfig, args: &[&str]) -> GuestRun {
    let r = runner();
    let cfg = client_server(&r, network, args).expect("programs built (make -C sdk)");
    run_until_exit(&cfg, 1, 2_000_000).expect("the client finishes")
}

fn assert_ok(run: &GuestRun, host: usize) {
    assert!(
        run.code == 0 && run.output(host).contains("result ok"),
        "exit {}; host {host} printed:\n{}",
        run.code,
        run.output(host)
    );
}

#[test]
fn requests_are_answered_and_timed() {
    let run = pair(NetworkConfig::default(), &["latency", "30", "32"]);
    assert_ok(&run, 1);
    let s = run.samples(1);
    assert_eq!(s.len(), 30);
    // A round trip crosses the switch twice: more than 600 ns at 3.2 GHz.
    assert!(s.iter().all(|&c| c > 1920), "{s:?}");
    assert_eq!(run.field(1, "stats", "retransmissions"), Some(0));
}

#[test]
fn at_most_once_under_loss_duplication_and_reordering() {
    let mut net = NetworkConfig::default();
    net.faults.loss = 0.05;
    net.faults.duplicate = 0.05;
    net.faults.reorder = 0.05;
    net.seed = 7;
    let run = pair(net, &["exec", "300", "8", "rto_us=30"]);
    // The client checked every answer (executed once) and the server's own
    // count (300 executions, none twice).
    assert_ok(&run, 1);
    assert!(run.output(1).contains("executed total=300 max_per_id=1"));
    // The faults bit: requests were re-sent, and lost responses came back
    // from the server's saved copies (its handler did not run again).
    assert!(run.field(1, "stats", "retransmissions").unwrap() > 0);
    assert!(
        run.field(0, "server", "resent").unwrap() > 0,
        "{}",
        run.output(0)
    );
    assert_eq!(run.field(0, "server", "handled"), Some(301));
}

#[test]
fn a_session_never_has_more_requests_out_than_credits() {
    for (credits, expect) in [("credits=2", 2), ("credits=8", 8)] {
        let run = pair(NetworkConfig::default(), &["credits", "24", credits]);
        assert_ok(&run, 1);
        // The server counted the requests it held unanswered at once.
        assert_eq!(run.field(1, "held_at_once", "held_at_once"), Some(expect));
    }
}

#[test]
fn raft_over_erpc_answers_correctly() {
    let r = runner();
    let servers: Vec<String> = (0..3)
        .map(|h| std::net::Ipv4Addr::from(host_ip(h)).to_string())
        .collect();
    let server_args = std::iter::once("{ip}".to_string())
        .chain(servers.iter().cloned())
        .collect();
    let client_args = std::iter::once("60".to_string())
        .chain(servers.iter().cloned())
        .collect();
    let cfg = icenic_cluster(
        &r,
        NetworkConfig::default(),
        4,
        &[
            ("0-2", "erpc_raft", server_args),
            ("3", "erpc_raft_client", client_args),
        ],
    )
    .expect("programs built");
    let run = run_until_exit(&cfg, 3, 2_000_000).expect("the client finishes");
    assert_ok(&run, 3);
    assert_eq!(run.samples(3).len(), 60);
    assert!(run.field(3, "stats", "reads_checked").unwrap() > 0);
}

#[test]
fn runs_repeat_bit_for_bit() {
    let mut net = NetworkConfig::default();
    net.faults.loss = 0.05;
    let a = pair(net.clone(), &["latency", "40", "32", "rto_us=30"]);
    let b = pair(net, &["latency", "40", "32", "rto_us=30"]);
    assert_ok(&a, 1);
    assert_eq!(a.outputs, b.outputs);
    assert_eq!(a.sim_us, b.sim_us);
}

// ---- multi-packet messages (eRPC §4.2.1, §5.1, §5.3) ----

#[test]
fn multi_packet_echo_of_1_byte_to_16_kb_comes_back_whole() {
    // Sizes spread over 1 B..16 KB (1 to 16 packets), four at once on one
    // session of 8 credits: packets wait for credits returned by CRs.
    let run = pair(NetworkConfig::default(), &["echo", "60", "1", "16384", "4"]);
    assert_ok(&run, 1);
    assert_eq!(run.field(1, "stats", "received"), Some(61));
    assert_eq!(
        run.field(1, "stats", "retransmissions"),
        Some(0),
        "{}\n{}",
        run.output(1),
        run.output(0)
    );
    assert!(run.field(1, "stats", "cr_received").unwrap() > 0);
    assert!(run.field(1, "stats", "rfr_sent").unwrap() > 0);
}

#[test]
fn a_multi_packet_request_gets_a_response_of_another_multi_packet_size() {
    // 3000 B requests (3 packets) asking for 9000 B (9 packets): per
    // request 2 CRs and 8 RFRs, exactly, on a loss-free network; the
    // server's handler saw each whole request (the answer's content is
    // computed from every request byte) and ran once per request.
    let run = pair(
        NetworkConfig::default(),
        &["sized", "40", "3000", "9000", "2"],
    );
    assert_ok(&run, 1);
    assert!(run.output(1).contains("executed total=40 max_per_id=1"));
    assert_eq!(run.field(1, "stats", "cr_received"), Some(80));
    assert_eq!(run.field(1, "stats", "rfr_sent"), Some(320));
    assert_eq!(run.field(1, "stats", "retransmissions"), Some(0));
    assert_eq!(run.field(0, "server", "cr_sent"), Some(80));
    assert_eq!(run.field(0, "server", "rfr_received"), Some(320));
    // And the other way round: a big request, a one-packet answer; and a
    // one-packet request with a 16-packet answer.
    for (req, resp) in [("16384", "100"), ("100", "16384")] {
        let run = pair(NetworkConfig::default(), &["sized", "20", req, resp, "3"]);
        assert_ok(&run, 1);
        assert!(run.output(1).contains("executed total=20 max_per_id=1"));
    }
}

#[test]
fn a_message_larger_than_the_session_credits_still_completes() {
    // 16-packet requests and responses with 2 credits: at most two packets
    // of the session in flight, the rest sent as CRs and responses return
    // credits.
    let run = pair(
        NetworkConfig::default(),
        &["sized", "10", "16384", "16384", "1", "credits=2"],
    );
    assert_ok(&run, 1);
    assert!(run.output(1).contains("executed total=10 max_per_id=1"));
    assert_eq!(run.field(1, "stats", "cr_received"), Some(150));
    assert_eq!(run.field(1, "stats", "rfr_sent"), Some(150));
}

#[test]
fn multi_packet_rpcs_are_at_most_once_and_intact_under_loss() {
    let mut net = NetworkConfig::default();
    net.faults.loss = 0.03;
    net.faults.duplicate = 0.03;
    net.faults.reorder = 0.03;
    net.seed = 11;
    let run = pair(
        net.clone(),
        &["sized", "60", "5000", "7000", "3", "rto_us=150"],
    );
    // Every answer checked (size, id executed once, content from the whole
    // request) and the server's own count: 60 executions, none twice.
    assert_ok(&run, 1);
    assert!(run.output(1).contains("executed total=60 max_per_id=1"));
    // The faults bit: the client went back (go-back-N), and re-sent
    // packets were answered from the server's state, not by running the
    // handler again.
    assert!(run.field(1, "stats", "retransmissions").unwrap() > 0);
    assert!(
        run.field(0, "server", "resent").unwrap() > 0,
        "{}",
        run.output(0)
    );
    assert!(run.field(1, "stats", "stale").unwrap() > 0);
    assert_eq!(run.field(0, "server", "handled"), Some(61));
    // Echo of mixed sizes under the same faults: every byte comes back.
    let run = pair(net, &["echo", "40", "1", "16384", "4", "rto_us=150"]);
    assert_ok(&run, 1);
    assert!(run.field(1, "stats", "retransmissions").unwrap() > 0);
}

#[test]
fn latency_grows_with_the_message_size() {
    let median = |size: &str| {
        let run = pair(NetworkConfig::default(), &["latency", "20", size]);
        assert_ok(&run, 1);
        let mut s = run.samples(1);
        s.sort_unstable();
        s[s.len() / 2]
    };
    let (one, two, sixteen) = (median("1024"), median("1025"), median("16384"));
    // A second packet costs a CR's round trip for the request and an RFR's
    // for the response: more than one more round trip (> 1920 cycles).
    assert!(two > one + 1920, "{one} {two}");
    assert!(sixteen > two, "{two} {sixteen}");
}
