//! Fuzzing the gdb stub (`nanopu run --gdb`): random and malformed GDB
//! remote protocol input over the socket (packets of every command letter
//! with random arguments, bad checksums, over-long packets, stray bytes,
//! NAKs, Ctrl-C). The contract, whatever the input: no panic, and the stub
//! still answers: after the input, a Ctrl-C and `?` get a stop reply and `k`
//! ends the run, each within a bound.
//!
//! A short pass runs in `cargo test`; a long one:
//! `PROPTEST_CASES=500 cargo test --release -p nanopu --test fuzz_gdb`.

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Longest the stub may take to answer before it counts as a hang.
const HANG: Duration = Duration::from_secs(30);

fn packet(body: &[u8]) -> Vec<u8> {
    let sum = body.iter().fold(0u8, |a, &b| a.wrapping_add(b));
    let mut p = vec![b'$'];
    p.extend_from_slice(body);
    p.extend_from_slice(format!("#{sum:02x}").as_bytes());
    p
}

/// A program that never ends (so the session cannot end by itself).
fn spin() -> PathBuf {
    let d = std::env::temp_dir().join(format!("nanopu-fuzz-gdb-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let elf = d.join("spin.elf");
    if !elf.exists() {
        let image = nanopu_testkit::bare_metal_elf("spin", "  addi a0, a0, 1\n  j _start");
        let tmp = d.join(format!("spin.{:?}.tmp", std::thread::current().id()));
        std::fs::write(&tmp, image).unwrap();
        std::fs::rename(tmp, &elf).unwrap();
    }
    elf
}

/// One piece of input.
#[derive(Clone, Debug)]
enum Piece {
    /// A packet with a good checksum: a command letter (or name) and
    /// random arguments.
    Packet(String, Vec<u8>),
    BadChecksum(Vec<u8>),
    Raw(Vec<u8>),
    TooLong(usize),
    Nack,
    CtrlC,
}

/// Commands the stub knows and some it does not; never `D`, `k`, `R` or
/// `vKill`, which end the session on purpose.
const COMMANDS: &[&str] = &[
    "?",
    "g",
    "G",
    "m",
    "M",
    "X",
    "p",
    "P",
    "c",
    "s",
    "C",
    "S",
    "vCont",
    "vCont?",
    "vCont;c",
    "vCont;s:1",
    "vCont;c:1;s:2",
    "Z0,",
    "z0,",
    "Z1,",
    "H",
    "Hg",
    "Hc",
    "Hg0",
    "Hc-1",
    "T",
    "T1",
    "qSupported",
    "qSupported:",
    "qXfer",
    "qXfer:features:read:target.xml:",
    "qfThreadInfo",
    "qsThreadInfo",
    "qC",
    "qAttached",
    "qRcmd,",
    "qThreadExtraInfo,",
    "qOffsets",
    "QStartNoAckMode",
    "vMustReplyEmpty",
    "vFile:",
    "x",
    "!",
    "i",
    "A",
    "b",
    "t",
    "qTStatus",
    "QPassSignals:",
];

fn piece() -> impl Strategy<Value = Piece> {
    let args = prop::collection::vec(
        prop_oneof![
            8 => prop::sample::select(b"0123456789abcdef,:;-.".to_vec()),
            1 => any::<u8>(),
        ],
        0..24,
    );
    prop_oneof![
        8 => (prop::sample::select(COMMANDS), args).prop_map(|(c, a)| Piece::Packet(c.to_string(), a)),
        2 => prop::collection::vec(any::<u8>(), 0..16).prop_map(Piece::BadChecksum),
        2 => prop::collection::vec(any::<u8>(), 1..32).prop_map(Piece::Raw),
        1 => (4100usize..9000).prop_map(Piece::TooLong),
        1 => Just(Piece::Nack),
        1 => Just(Piece::CtrlC),
    ]
}

fn bytes(p: &Piece) -> Vec<u8> {
    match p {
        Piece::Packet(c, a) => {
            // Escape what the protocol reserves inside a body.
            let mut body = c.as_bytes().to_vec();
            for &b in a {
                if matches!(b, b'$' | b'#' | b'}' | b'*') {
                    body.extend_from_slice(&[b'}', b ^ 0x20]);
                } else {
                    body.push(b);
                }
            }
            if body.starts_with(b"D") || body.starts_with(b"k") || body.starts_with(b"R") {
                body.insert(0, b'?');
            }
            packet(&body)
        }
        Piece::BadChecksum(body) => {
            let body: Vec<u8> = body
                .iter()
                .map(|&b| if b == b'#' || b == b'$' { b'x' } else { b })
                .collect();
            let mut p = packet(&body);
            let n = p.len();
            p[n - 1] = if p[n - 1] == b'0' { b'1' } else { b'0' };
            p
        }
        Piece::Raw(b) => b.clone(),
        Piece::TooLong(n) => packet(&vec![b'm'; *n]),
        Piece::Nack => b"-".to_vec(),
        Piece::CtrlC => vec![0x03],
    }
}

/// Reads until `want` appears (or the connection ends); fails after [`HANG`].
fn read_until(s: &mut TcpStream, got: &mut Vec<u8>, want: &[u8]) -> Result<(), TestCaseError> {
    let start = Instant::now();
    let mut buf = [0u8; 4096];
    s.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    while !got.windows(want.len()).any(|w| w == want) {
        if start.elapsed() > HANG {
            return Err(TestCaseError::fail(format!(
                "no {:?} within {HANG:?}; got {:?}",
                String::from_utf8_lossy(want),
                String::from_utf8_lossy(&got[got.len().saturating_sub(200)..])
            )));
        }
        match s.read(&mut buf) {
            Ok(0) => return Err(TestCaseError::fail("the stub closed the connection")),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(TestCaseError::fail(format!("read: {e}"))),
        }
    }
    Ok(())
}

fn session(pieces: &[Piece]) -> Result<(), TestCaseError> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nanopu"))
        .args(["run", "--cores", "2"])
        .arg(spin())
        .args(["--gdb", "127.0.0.1:0"])
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let port: u16 = loop {
        line.clear();
        assert!(
            err.read_line(&mut line).unwrap() > 0,
            "nanopu ended before listening"
        );
        if let Some(rest) = line.split("waiting for a connection on 127.0.0.1:").nth(1) {
            break rest.split_whitespace().next().unwrap().parse().unwrap();
        }
    };
    // Standard error is read to the end on a thread (a full pipe would stall the stub).
    let stderr = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = err.read_to_string(&mut rest);
        rest
    });
    let result = (|| {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_nodelay(true).unwrap();
        let mut got = Vec::new();
        for p in pieces {
            s.write_all(&bytes(p))
                .map_err(|e| TestCaseError::fail(format!("write: {e}")))?;
            // Drain what came back so far (a full socket would stall both sides).
            s.set_read_timeout(Some(Duration::from_millis(5))).unwrap();
            let mut buf = [0u8; 65536];
            while let Ok(n) = s.read(&mut buf) {
                if n == 0 {
                    return Err(TestCaseError::fail("the stub closed the connection"));
                }
                got.extend_from_slice(&buf[..n]);
            }
        }
        // Whatever state it is in: end a packet left open (0x03 inside one
        // is data), stop it, ask why, get a stop reply.
        got.clear();
        s.write_all(b"#00\x03").unwrap();
        std::thread::sleep(Duration::from_millis(50));
        s.write_all(&packet(b"?")).unwrap();
        read_until(&mut s, &mut got, b"$T")?;
        s.write_all(&packet(b"k")).unwrap();
        Ok(())
    })();
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break Some(st);
        }
        if start.elapsed() > HANG {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stderr = stderr.join().unwrap();
    prop_assert!(!stderr.contains("panicked"), "{stderr}");
    result.map_err(|e| TestCaseError::fail(format!("{e}\n{stderr}")))?;
    prop_assert!(status.is_some(), "`k` did not end the run\n{stderr}");
    prop_assert_eq!(status.unwrap().code(), Some(130), "{}", stderr);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: nanopu_testkit::proptest_cases(24),
        max_shrink_iters: 20,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_gdb_input_never_panics_or_hangs_the_stub(pieces in prop::collection::vec(piece(), 1..40)) {
        session(&pieces)?;
    }
}
