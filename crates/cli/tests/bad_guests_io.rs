//! Guest programs that misbehave on their way out (issue 53): flood netTX,
//! print without end, compute long inside a network, answer to the wrong
//! address. Each ends with a clear result in bounded host time and memory:
//! every run here is watched, killed past `watched::RSS_LIMIT_KB` or
//! `watched::TIME_LIMIT`, and its stdout counted, not kept.

mod watched;

use nanopu_testkit::{bare_metal_elf, NET_TX_FLOOD};
use std::path::PathBuf;
use watched::Ran;

/// `nanopu ARGS`, watched ([`watched::nanopu`]): it must end within the
/// limits, without a panic.
fn nanopu(args: &[&str]) -> Ran {
    let ran = watched::nanopu(args, &dir());
    assert!(ran.killed.is_none(), "nanopu {args:?}: {:?}", ran.killed);
    assert!(!ran.stderr.contains("panicked"), "{}", ran.stderr);
    ran
}

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("nanopu-bad-guests-io-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `body` as a bare-metal program in the temporary directory.
fn program(name: &str, body: &str) -> String {
    let p = dir().join(format!("{name}.elf"));
    std::fs::write(&p, bare_metal_elf(name, body)).unwrap();
    p.display().to_string()
}

fn write(name: &str, text: &str) -> String {
    let p = dir().join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn a_guest_flooding_net_tx_is_held_back_by_the_nic() {
    // The client starts after 2 ms of flooding; its one request is lost.
    let flood = program("flood", NET_TX_FLOOD);
    let r = nanopu(&[
        "run",
        &flood,
        "--load",
        "--start-ns",
        "2000000",
        "--count",
        "1",
        "--timeout-ns",
        "100000",
        "--max-sim-ms",
        "3",
    ]);
    assert_eq!(r.code, Some(3), "{}", r.stderr);
    assert!(
        r.last_line().starts_with("result: INCOMPLETE"),
        "{}",
        r.stderr
    );
    // About 200 Gb/s of 72-byte frames for 2.1 ms; none of them replies.
    assert!(
        r.stderr.contains("frames from the node were no reply"),
        "{}",
        r.stderr
    );
    eprintln!("run --load: peak {} KB", r.peak_rss_kb);

    // The same program on a node of a network (a reliable transport).
    let cfg = write(
        "flood.toml",
        &format!(
            "[network.topology]\nkind = \"single-switch\"\nhosts = 2\n[nic.transport]\nprotocol = \"ndp\"\n\
             [node]\ncores = 1\n[[programs]]\nhosts = \"0\"\nprogram = \"{flood}\"\n"
        ),
    );
    let r = nanopu(&["net", &cfg, "--until-us", "5000"]);
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    eprintln!("net: peak {} KB", r.peak_rss_kb);
}

#[test]
fn a_network_reports_its_nodes_time() {
    // About 20 M iterations of a countdown (several ms), then exit 0: no
    // event at all after the start.
    let compute = program(
        "compute",
        "li t0, 20000000\n1: addi t0, t0, -1\nbnez t0, 1b\nli a0, 1\nla a1, tohost\nsd a0, 0(a1)\n2: j 2b\n",
    );
    let cfg = write(
        "compute.toml",
        &format!(
            "[network.topology]\nkind = \"single-switch\"\nhosts = 2\n[nic.transport]\nprotocol = \"ndp\"\n\
             [node]\ncores = 1\n[[programs]]\nhosts = \"0\"\nprogram = \"{compute}\"\n"
        ),
    );
    let json = dir().join("compute.json");
    let r = nanopu(&[
        "net",
        &cfg,
        "--until-us",
        "100000",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let sim_us = v["sim_us"].as_f64().unwrap();
    // 20 M iterations of at least one 3.2 GHz cycle each.
    assert!(sim_us > 6_000.0 && sim_us < 100_000.0, "sim_us {sim_us}");
    let line = r
        .stdout
        .lines()
        .find(|l| l.starts_with("simulated "))
        .unwrap();
    assert!(
        line.starts_with(&format!("simulated {sim_us:.3} us")),
        "{line}"
    );

    // A load generator whose server exits without booting: nothing is
    // left to happen long before --until-us, and the result says so.
    let exit0 = program("exit0", "li a0, 1\nla a1, tohost\nsd a0, 0(a1)\n1: j 1b\n");
    let cfg = write(
        "waiting.toml",
        &format!(
            "[network.topology]\nkind = \"single-switch\"\nhosts = 2\n[nic.transport]\nprotocol = \"ndp\"\n\
             [[programs]]\nhosts = \"0\"\nprogram = \"{exit0}\"\n[[clients]]\nhosts = \"1\"\nserver = 0\n"
        ),
    );
    let r = nanopu(&["net", &cfg, "--until-us", "100000"]);
    assert_eq!(r.code, Some(3), "{}{}", r.stdout, r.stderr);
    let last = r.last_line();
    assert!(
        last.starts_with("result: INCOMPLETE")
            && last.contains("nothing left to happen")
            && !last.contains("--until-us"),
        "{last}"
    );
}

#[test]
fn guest_output_costs_simulated_time_so_max_cycles_bounds_it() {
    // 1 MiB per SYS_write, forever.
    let writer = program(
        "writer",
        "la a0, magic\nla a1, tohost\nla a2, fromhost\nli t1, 64\n\
         1: sd t1, 0(a0)\nsd a0, 0(a1)\n2: ld t0, 0(a2)\nbeqz t0, 2b\nsd zero, 0(a2)\nj 1b\n\
         .data\n.align 6\nmagic: .dword 64, 1, buf, 1048576, 0, 0, 0, 0\n\
         .bss\n.align 6\nbuf: .skip 1048576\n",
    );
    let r = nanopu(&["run", &writer, "--cores", "1", "--max-cycles", "2000000"]);
    assert_eq!(r.code, Some(125), "{}", r.stderr);
    assert!(
        r.stderr
            .starts_with("error: the program did not exit within --max-cycles 2000000"),
        "{}",
        r.stderr
    );
    // 4 bytes a cycle over the serial link: at most about 8 MiB in 2 M cycles.
    assert!(
        r.stdout_bytes >= 4 << 20 && r.stdout_bytes <= 9 << 20,
        "{} bytes written in 2 M cycles",
        r.stdout_bytes
    );
}

/// A server of one-word requests on context 0: it boots, then for each
/// request runs `reply` with the request's header in t1 and its word in t2.
fn server(name: &str, reply: &str) -> String {
    program(
        name,
        &format!(
            "csrwi 0x53, 0\ncsrwi 0x55, 0\ncsrwi 0x54, 1\nli x31, 8\nmv x31, zero\n\
             1: mv t1, x30\nmv t2, x30\n{reply}\ncsrwi 0x56, 1\nj 1b\n"
        ),
    )
}

const ECHO: &str = "mv x31, t1\nmv x31, t2\n";

#[test]
fn run_load_tells_replies_from_frames_addressed_elsewhere() {
    let load = [
        "--load",
        "--count",
        "20",
        "--msg-bytes",
        "8",
        "--timeout-ns",
        "50000",
    ];
    let run = |program: &str| {
        let mut args = vec!["run", program];
        args.extend(load);
        nanopu(&args)
    };
    // The right replies, and after each a message to the node's own
    // address, broadcast, loopback and multicast: not replies, dropped.
    let mut junk = String::from(ECHO);
    for ip in ["0x0a000001", "0xffffffff", "0x7f000001", "0xe0000001"] {
        junk +=
            &format!("li t3, {ip}\nslli t3, t3, 32\naddi t3, t3, 8\nmv x31, t3\nmv x31, zero\n");
    }
    let r = run(&server("echo_and_junk", &junk));
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("20 replies (0 wrong, 0 unexpected, 0 lost)"),
        "{}",
        r.stderr
    );
    // Four after each of 20 replies, less those the node had not sent
    // when the client got its last reply and the run ended.
    let dropped: u64 = r
        .stderr
        .split("note: ")
        .nth(1)
        .and_then(|n| n.split(' ').next()?.parse().ok())
        .unwrap_or(0);
    assert!(
        (76..=80).contains(&dropped) && r.stderr.contains("frames from the node were no reply"),
        "{}",
        r.stderr
    );
    assert!(r.last_line().starts_with("result: ok"), "{}", r.stderr);

    // A plain echo says so too.
    let r = run(&server("echo", ECHO));
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.last_line().starts_with("result: ok"), "{}", r.stderr);

    // Every reply to another address: none arrives.
    let elsewhere =
        "li t3, 0xffffffff\nand t1, t1, t3\nli t3, 0x0a000009\nslli t3, t3, 32\nor t1, t1, t3\n"
            .to_string()
            + ECHO;
    let r = run(&server("echo_elsewhere", &elsewhere));
    assert_eq!(r.code, Some(3), "{}", r.stderr);
    assert!(
        r.last_line().starts_with("result: INCOMPLETE"),
        "{}",
        r.stderr
    );

    // Every reply twice: the second answers no request.
    let r = run(&server("echo_twice", &format!("{ECHO}{ECHO}")));
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    let last = r.last_line();
    assert!(
        last.starts_with("result: FAILED") && last.contains("answered no request"),
        "{last}"
    );
}

#[test]
fn a_node_still_computing_at_the_time_limit_is_not_called_stuck() {
    // Counts down for several ms and never boots: at --max-sim-ms 1 its core
    // is still running, so the run hit the time limit, not a deadlock.
    let compute = program(
        "compute_long",
        "li t0, 20000000\n1: addi t0, t0, -1\nbnez t0, 1b\nli a0, 1\nla a1, tohost\nsd a0, 0(a1)\n2: j 2b\n",
    );
    let r = nanopu(&["run", &compute, "--load", "--max-sim-ms", "1"]);
    assert_eq!(r.code, Some(125), "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("within 1 ms of simulated time")
            && !r.stderr.contains("stopped making progress"),
        "{}",
        r.stderr
    );
}
