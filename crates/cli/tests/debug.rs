//! Debugging a guest: `nanopu run --gdb` driven by gdb-multiarch in batch
//! mode, and `--log-commits` against a Spike reference log.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use nanopu_testkit::{program as sdk, repo};

fn nanopu(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nanopu"))
        .args(args)
        .output()
        .expect("nanopu runs")
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("nanopu-debug-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Starts `nanopu run ARGS --gdb 127.0.0.1:0` and returns it with the port
/// it listens on (read from its standard error). The caller waits for it.
fn start_stub(args: &[&str]) -> (Child, u16, BufReader<std::process::ChildStderr>) {
    start_stub_with(Command::new(env!("CARGO_BIN_EXE_nanopu")), args)
}

/// [`start_stub`] with `cmd` as the command (`nanopu`, or a shell that
/// runs it).
#[allow(clippy::zombie_processes)]
fn start_stub_with(
    mut cmd: Command,
    args: &[&str],
) -> (Child, u16, BufReader<std::process::ChildStderr>) {
    let mut child = cmd
        .arg("run")
        .args(args)
        .args(["--gdb", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("nanopu runs");
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        if err.read_line(&mut line).unwrap() == 0 {
            let status = child.wait();
            panic!("nanopu ended before listening: {status:?}");
        }
        if let Some(rest) = line.split("waiting for a connection on 127.0.0.1:").nth(1) {
            let port = rest.split_whitespace().next().unwrap().parse().unwrap();
            return (child, port, err);
        }
    }
}

/// Runs gdb-multiarch in batch mode on `elf` against the stub at `port`
/// with the commands `cmds`; returns its standard output.
fn gdb(elf: &Path, port: u16, cmds: &[&str]) -> String {
    // A stub that stops answering fails the test instead of hanging it.
    let mut c = Command::new("timeout");
    c.args([
        "300",
        "gdb-multiarch",
        "-batch",
        "-nx",
        "-ex",
        "set confirm off",
    ]);
    c.args(["-ex", &format!("target remote 127.0.0.1:{port}")]);
    for cmd in cmds {
        c.args(["-ex", cmd]);
    }
    let o = c
        .arg(elf)
        .output()
        .expect("gdb-multiarch: run scripts/setup.sh --test");
    let out = text(&o.stdout) + &text(&o.stderr);
    assert!(o.status.success(), "gdb failed:\n{out}");
    out
}

/// Finishes the stub; returns its exit status, standard output and error.
fn finish(
    mut child: Child,
    mut err: BufReader<std::process::ChildStderr>,
) -> (i32, String, String) {
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    let mut out = String::new();
    std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut out).unwrap();
    let status = child.wait().unwrap();
    (status.code().unwrap_or(-1), out, rest)
}

#[test]
fn gdb_breaks_steps_reads_and_writes_registers_and_memory_and_sees_the_exit() {
    let hello = sdk("hello");
    let (child, port, err) = start_stub(&[path(&hello)]);
    let out = gdb(
        &hello,
        port,
        &[
            "p/x $pc",
            "break *main",
            "continue",
            "p/x $pc",
            "stepi",
            "p/x $pc",
            // argc (a0) is 1: make it 7; main prints it.
            "p $a0",
            "set $a0 = 7",
            "p $a0",
            // argv[0] (hello.elf): read it, then change its first byte.
            "x/s *(char **)$a1",
            "set {char}(*(char **)$a1) = 'J'",
            "x/s *(char **)$a1",
            "p/x $mstatus",
            "p/x $mhartid",
            "p $ft0",
            "monitor lnic",
            "monitor netrx",
            "info threads",
            // Exit with 3 instead of 0: stop in exit() and change its argument.
            "break *exit",
            "continue",
            "set $a0 = 3",
            "continue",
        ],
    );
    let (code, stdout, stderr) = finish(child, err);
    // Stopped at the entry point first.
    assert!(out.contains("$1 = 0x80000000"), "{out}");
    assert!(out.contains("Breakpoint 1, "), "{out}");
    assert!(out.contains("main"), "{out}");
    let main = text(
        &Command::new("riscv64-unknown-elf-nm")
            .arg(&hello)
            .output()
            .unwrap()
            .stdout,
    )
    .lines()
    .find(|l| l.ends_with(" T main"))
    .map(|l| u64::from_str_radix(&l[..16], 16).unwrap())
    .unwrap();
    assert!(
        out.contains(&format!("$2 = {main:#x}")),
        "break at main: {out}"
    );
    // One instruction further (2 or 4 bytes).
    assert!(
        out.contains(&format!("$3 = {:#x}", main + 2))
            || out.contains(&format!("$3 = {:#x}", main + 4)),
        "stepi: {out}"
    );
    assert!(
        out.contains("$4 = 1\n") && out.contains("$5 = 7\n"),
        "{out}"
    );
    assert!(
        out.contains("\"hello.elf\"") && out.contains("\"Jello.elf\""),
        "{out}"
    );
    // mstatus reads with UXL = 2 (64-bit) and FS on (the C start-up code
    // enables the FPU); mhartid 0.
    let mstatus = out
        .split("$6 = 0x")
        .nth(1)
        .and_then(|r| u64::from_str_radix(r.split_whitespace().next()?, 16).ok())
        .unwrap_or_else(|| panic!("mstatus: {out}"));
    assert_eq!((mstatus >> 32) & 3, 2, "mstatus.UXL: {mstatus:#x}");
    assert_ne!(mstatus & (3 << 13), 0, "mstatus.FS: {mstatus:#x}");
    assert!(out.contains("$7 = 0x0"), "mhartid: {out}");
    assert!(out.contains("lcurcontext"), "monitor lnic: {out}");
    assert!(out.contains("is not registered"), "monitor netrx: {out}");
    assert!(out.contains("hart 0"), "info threads: {out}");
    assert!(out.contains("exited with code 03"), "{out}");
    // The program saw both changes, and nanopu exits with its code.
    assert!(
        stdout.contains("argc = 7, argv[0] = Jello.elf"),
        "{stdout}\n{stderr}"
    );
    assert_eq!(code, 3, "{stderr}");
}

#[test]
fn gdb_lists_one_thread_per_hart() {
    let multihart = sdk("multihart");
    let (child, port, err) = start_stub(&["--cores", "4", path(&multihart)]);
    let out = gdb(
        &multihart,
        port,
        &[
            "info threads",
            "thread 3",
            "p $mhartid",
            "thread 4",
            "p $mhartid",
            "break *main",
            "continue",
            // Stepping over the breakpoint runs hart 0 alone (scheduler locking).
            "stepi",
            "p/x $pc",
            "delete",
            "continue",
        ],
    );
    let (code, _stdout, stderr) = finish(child, err);
    assert!(out.contains("Thread 1 hit Breakpoint 1"), "{out}");
    assert!(out.contains("$3 = 0x"), "{out}");
    for h in 0..4 {
        assert!(out.contains(&format!("hart {h} (")), "thread {h}: {out}");
    }
    assert!(
        out.contains("$1 = 2\n") && out.contains("$2 = 3\n"),
        "{out}"
    );
    assert!(out.contains("exited normally"), "{out}");
    assert_eq!(code, 0, "{stderr}");
}

/// A packet of the GDB remote protocol, with its checksum.
fn packet(body: &str) -> String {
    let sum = body.bytes().fold(0u8, |a, b| a.wrapping_add(b));
    format!("${body}#{sum:02x}")
}

/// Reads from `s` until a whole packet (`$...#xx`) has come; returns its body.
fn read_packet(s: &mut std::net::TcpStream) -> String {
    use std::io::Read;
    let mut got = Vec::new();
    let mut b = [0u8; 1];
    loop {
        s.read_exact(&mut b).expect("the stub answers");
        got.push(b[0]);
        let text = String::from_utf8_lossy(&got).into_owned();
        if let Some(start) = text.find('$') {
            if let Some(end) = text[start..].find('#') {
                if text.len() >= start + end + 3 {
                    return text[start + 1..start + end].to_string();
                }
            }
        }
    }
}

/// A reply body with the protocol's run-length encoding (`X*N`: X repeated
/// N - 29 more times) expanded.
fn run_length_decoded(body: &str) -> String {
    let mut out = String::new();
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c == '*' {
            let n = chars.next().expect("a count") as usize - 29;
            let last = out.chars().last().expect("a character to repeat");
            out.extend(std::iter::repeat_n(last, n));
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn ctrl_c_stops_a_program_that_never_ends() {
    use std::io::Write;
    // An endless loop (no idle skipping under the debugger).
    let elf = tmp("spin.elf");
    let image = nanopu_testkit::bare_metal_elf("spin", "  addi a0, a0, 1\n  j _start");
    std::fs::write(&elf, image).unwrap();
    let (mut child, port, _err) = start_stub(&["--cores", "1", path(&elf)]);
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(120)))
        .unwrap();
    s.write_all(packet("?").as_bytes()).unwrap();
    assert!(read_packet(&mut s).starts_with('T'));
    s.write_all(b"+").unwrap();
    s.write_all(packet("vCont;c").as_bytes()).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    s.write_all(&[0x03]).unwrap();
    // Stopped with SIGINT (2), then the registers show it ran: a0 counted.
    let stop = read_packet(&mut s);
    assert!(stop.starts_with("T02"), "{stop}");
    s.write_all(b"+").unwrap();
    s.write_all(packet("p0a").as_bytes()).unwrap();
    let a0 = run_length_decoded(&read_packet(&mut s));
    assert_eq!(a0.len(), 16, "p0a: {a0}");
    let a0 = u64::from_le_bytes(
        (0..8)
            .map(|i| u8::from_str_radix(&a0[2 * i..2 * i + 2], 16).unwrap())
            .collect::<Vec<_>>()
            .try_into()
            .unwrap(),
    );
    assert!(a0 > 1000, "a0 = {a0}");
    s.write_all(b"+").unwrap();
    s.write_all(packet("k").as_bytes()).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
}

/// Sends `bytes`; returns what comes back within `wait` (read until quiet).
fn exchange(s: &mut std::net::TcpStream, bytes: &[u8], wait: std::time::Duration) -> String {
    use std::io::{Read, Write};
    s.write_all(bytes).unwrap();
    s.set_read_timeout(Some(wait)).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = s.read(&mut buf) {
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
        s.set_read_timeout(Some(std::time::Duration::from_millis(200)))
            .unwrap();
    }
    text(&got)
}

#[test]
fn malformed_and_unsupported_packets_get_answers_and_the_session_goes_on() {
    let hello = sdk("hello");
    let (child, port, err) = start_stub(&[path(&hello)]);
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let wait = std::time::Duration::from_secs(30);
    // A bad checksum: NAK, and nothing else.
    assert_eq!(exchange(&mut s, b"$g#00", wait), "-");
    // Unsupported or malformed: an empty reply each.
    for body in [
        "qSupported",
        "H",
        "T",
        "qXfer",
        "Hz",
        "Hg-1",
        "T-1",
        "m",
        "Z0",
        "vCont;x",
        "p",
    ] {
        let reply = exchange(&mut s, packet(body).as_bytes(), wait);
        assert!(
            reply == "+$#00" || reply.starts_with("+$E"),
            "{body}: {reply}"
        );
    }
    // Junk between packets is skipped; an over-long packet gets an empty reply.
    let long = packet(&"a".repeat(10_000));
    assert_eq!(exchange(&mut s, long.as_bytes(), wait), "+$#00");
    let reply = exchange(
        &mut s,
        &[b"junk\r\n".as_slice(), packet("?").as_bytes()].concat(),
        wait,
    );
    assert!(reply.starts_with("+$T05"), "{reply}");
    // gdb's NAK resends our last packet.
    assert_eq!(exchange(&mut s, b"-", wait), &reply[1..]);
    // The session still works: the program runs to its exit.
    let reply = exchange(&mut s, packet("vCont;c").as_bytes(), wait);
    assert!(reply.contains("$W00"), "{reply}");
    let (code, stdout, stderr) = finish(child, err);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("Hello"), "{stdout}");
    assert!(!stderr.contains("should never happen"), "{stderr}");
}

/// Sends SIGINT to `child`; returns its exit status and standard error.
fn interrupt(mut child: Child, err: BufReader<std::process::ChildStderr>) -> (i32, String) {
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > std::time::Duration::from_secs(30) {
            let _ = child.kill();
            panic!("Ctrl-C did not stop nanopu --gdb");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let (code, _, stderr) = finish(child, err);
    (code, stderr)
}

#[test]
fn ctrl_c_while_waiting_for_gdb_stops_with_the_hart_report() {
    let hello = sdk("hello");
    // Also when SIGINT was inherited as ignored (a background job).
    for ignored in [false, true] {
        let cmd = if ignored {
            let mut c = Command::new("sh");
            c.args([
                "-c",
                "trap '' INT; exec \"$0\" \"$@\"",
                env!("CARGO_BIN_EXE_nanopu"),
            ]);
            c
        } else {
            Command::new(env!("CARGO_BIN_EXE_nanopu"))
        };
        let (child, _port, err) = start_stub_with(cmd, &[path(&hello)]);
        let (code, stderr) = interrupt(child, err);
        assert_eq!(code, 130, "ignored {ignored}: {stderr}");
        assert!(
            stderr.contains("interrupted (Ctrl-C); the harts were at:\n  hart 0: running, cycle 0, pc 0x80000000"),
            "ignored {ignored}: {stderr}"
        );
    }
}

#[test]
fn ctrl_c_during_a_session_stops_with_the_hart_report() {
    let elf = tmp("spin-int.elf");
    let image = nanopu_testkit::bare_metal_elf("spin", "  addi a0, a0, 1\n  j _start");
    std::fs::write(&elf, image).unwrap();
    // Stopped (gdb at its prompt), then running (gdb waiting for a stop).
    for running in [false, true] {
        let (child, port, err) = start_stub(&["--cores", "1", path(&elf)]);
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let wait = std::time::Duration::from_secs(30);
        assert!(exchange(&mut s, packet("?").as_bytes(), wait).contains("$T"));
        if running {
            let quiet = std::time::Duration::from_millis(300);
            assert_eq!(exchange(&mut s, packet("vCont;c").as_bytes(), quiet), "+");
        }
        let (code, stderr) = interrupt(child, err);
        assert_eq!(code, 130, "running {running}: {stderr}");
        assert!(
            stderr.contains("interrupted (Ctrl-C); the harts were at:\n  hart 0: running, cycle "),
            "running {running}: {stderr}"
        );
    }
}

#[test]
fn gdb_listens_on_localhost_unless_told_otherwise() {
    // A bad port is one clear error, before anything listens.
    let o = nanopu(&["run", path(&sdk("hello")), "--gdb", ":notaport"]);
    assert_eq!(o.status.code(), Some(125));
    assert!(
        text(&o.stderr).contains("--gdb :notaport"),
        "{}",
        text(&o.stderr)
    );
}

/// The lines of a Spike commit log from the program's entry on (Spike's
/// boot ROM at 0x1000 runs first; nanopu starts at the entry point).
fn from_entry(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| !l.starts_with("core   0: 3 0x00000000000010"))
        .collect()
}

#[test]
fn commit_log_matches_the_spike_reference() {
    let data = repo().join("crates/cli/tests/data");
    let elf = tmp("commit_log.elf");
    let read = |f: &str| std::fs::read_to_string(data.join(f)).unwrap();
    let image = nanopu_testkit::assemble(
        "commit_log",
        &read("commit_log.S"),
        Some(&read("commit_log.ld")),
        &[],
    );
    std::fs::write(&elf, image).unwrap();
    let log = tmp("commit_log.log");
    let o = nanopu(&[
        "run",
        path(&elf),
        "--cores",
        "1",
        "--log-commits",
        path(&log),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let ours = std::fs::read_to_string(&log).unwrap();
    let reference = std::fs::read_to_string(data.join("commit_log.spike.log")).unwrap();
    let (ours, reference) = (from_entry(&ours), from_entry(&reference));
    for (i, (a, b)) in ours.iter().zip(&reference).enumerate() {
        assert_eq!(a, b, "line {} differs (ours, then Spike's)", i + 1);
    }
    assert_eq!(ours.len(), reference.len(), "{ours:#?}");
}

#[test]
fn commit_log_has_one_line_per_retired_instruction_and_changes_nothing() {
    let hello = sdk("hello");
    let log = tmp("hello.log");
    let (with, without) = (tmp("with.json"), tmp("without.json"));
    let o = nanopu(&[
        "run",
        path(&hello),
        "--cores",
        "1",
        "--log-commits",
        path(&log),
        "--stats-json",
        path(&with),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = nanopu(&[
        "run",
        path(&hello),
        "--cores",
        "1",
        "--stats-json",
        path(&without),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let stats = |p: &Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    let (a, b) = (stats(&with), stats(&without));
    assert_eq!(a["instret"], b["instret"]);
    assert_eq!(a["cycles"], b["cycles"]);
    let lines = std::fs::read_to_string(&log).unwrap().lines().count() as u64;
    assert_eq!(Some(lines), a["instret"].as_u64());
    // Stores to tohost are logged with their value (the exit request).
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(log.lines().all(|l| l.starts_with("core   0: ")), "{log}");
}

#[test]
fn commit_log_works_under_load() {
    let log = tmp("loopback.log");
    let o = nanopu(&[
        "run",
        path(&sdk("loopback")),
        "--load",
        "--count",
        "20",
        "--log-commits",
        path(&log),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let log = std::fs::read_to_string(&log).unwrap();
    // The context is registered (lniccmd 1) and each echoed word goes out on
    // x31 (netTX): 20 requests of a header and one 8-byte word.
    assert!(
        log.contains(" c84_lniccmd 0x0000000000000001"),
        "no registration"
    );
    let sends = log.lines().filter(|l| l.contains(" x31 ")).count();
    assert!(sends >= 40, "{sends} writes of x31");
}
