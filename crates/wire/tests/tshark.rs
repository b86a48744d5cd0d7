//! The pcap files of [`PcapWriter`] open in tshark, and the Lua dissector
//! `tools/wireshark/nanopu.lua` shows every nanoPU transport field: a few
//! frames built with [`FrameRepr`] are written to a temporary capture, read
//! back with `tshark -T fields`, and compared field by field.
//!
//! Needs tshark (`scripts/setup.sh --test` installs it). Without it the test
//! is skipped with a notice, unless the `CI` environment variable is set, in
//! which case it fails.

use nanopu_wire::{
    ipv4, EthernetAddress, EthernetRepr, Flags, FrameRepr, Ipv4Address, Ipv4Repr,
    NanoTransportRepr, PcapWriter,
};
use std::path::{Path, PathBuf};
use std::process::Command;

const FS_PER_NS: u64 = 1_000_000;
const FS_PER_S: u64 = 1_000_000_000 * FS_PER_NS;

/// The fields asked of tshark, in this order (`-e` options).
const FIELDS: [&str; 30] = [
    "frame.time_epoch",
    "frame.len",
    "eth.src",
    "eth.dst",
    "ip.src",
    "ip.dst",
    "ip.dsfield",
    "ip.ttl",
    "ip.flags.df",
    "ip.proto",
    "ip.len",
    "nanopu.flags",
    "nanopu.flags.data",
    "nanopu.flags.ack",
    "nanopu.flags.nack",
    "nanopu.flags.pull",
    "nanopu.flags.chop",
    "nanopu.flags.grant",
    "nanopu.src_context",
    "nanopu.dst_context",
    "nanopu.msg_len",
    "nanopu.pkt_offset",
    "nanopu.pull_offset",
    "nanopu.tx_msg_id",
    "nanopu.buf_ptr",
    "nanopu.buf_size_class",
    "nanopu.priority",
    "nanopu.grant_offset",
    "data.len",
    "_ws.col.Info",
];

/// One test packet: when it is seen, who sends it, and its headers.
struct Packet {
    time_fs: u64,
    from: u8,
    to: u8,
    tos: u8,
    nt: NanoTransportRepr,
    payload_len: usize,
}

fn frame(p: &Packet) -> FrameRepr {
    let mac = |n: u8| EthernetAddress([0x02, 0, 0, 0, 0, n]);
    let ip = |n: u8| Ipv4Address::new(10, 0, 0, n);
    FrameRepr::new(
        EthernetRepr {
            src_addr: mac(p.from),
            dst_addr: mac(p.to),
            ethertype: 0,
        },
        Ipv4Repr {
            src_addr: ip(p.from),
            dst_addr: ip(p.to),
            protocol: 0,
            payload_len: 0,
            ttl: ipv4::DEFAULT_TTL,
            tos: p.tos,
            ident: 0,
            dont_frag: true,
        },
        p.nt,
        p.payload_len,
    )
}

/// A 1500-byte message from 10.0.0.1 context 1 to 10.0.0.2 context 0: its
/// first packet (1024 bytes, the default MTU payload the dissector assumes),
/// its second trimmed to the header by a switch, the receiver's NACK for
/// it, an ACK|PULL, and a Homa GRANT at priority 5.
fn packets() -> Vec<Packet> {
    let msg = NanoTransportRepr {
        src_context: 1,
        dst_context: 0,
        msg_len: 1500,
        tx_msg_id: 3,
        buf_ptr: 9,
        buf_size_class: 2,
        ..Default::default()
    };
    let reply = NanoTransportRepr {
        src_context: 0,
        dst_context: 1,
        ..msg
    };
    vec![
        Packet {
            // 1 s + 123,456,789 ns + 999,999 fs: the femtoseconds are cut.
            time_fs: FS_PER_S + 123_456_789 * FS_PER_NS + 999_999,
            from: 1,
            to: 2,
            tos: 0,
            nt: NanoTransportRepr {
                flags: Flags::DATA,
                ..msg
            },
            payload_len: 1024,
        },
        Packet {
            time_fs: FS_PER_S + 123_456_789 * FS_PER_NS + 5_440_000,
            from: 1,
            to: 2,
            tos: 0,
            nt: NanoTransportRepr {
                flags: Flags::DATA | Flags::CHOP,
                pkt_offset: 1,
                ..msg
            },
            payload_len: 0,
        },
        Packet {
            time_fs: 2 * FS_PER_S,
            from: 2,
            to: 1,
            tos: 0,
            nt: NanoTransportRepr {
                flags: Flags::NACK,
                pkt_offset: 1,
                ..reply
            },
            payload_len: 0,
        },
        Packet {
            time_fs: 2 * FS_PER_S + 1,
            from: 2,
            to: 1,
            tos: 0,
            nt: NanoTransportRepr {
                flags: Flags::ACK | Flags::PULL,
                pull_offset: 5,
                ..reply
            },
            payload_len: 0,
        },
        Packet {
            time_fs: 3 * FS_PER_S + 999_999_999 * FS_PER_NS,
            from: 2,
            to: 1,
            tos: 5,
            nt: NanoTransportRepr {
                flags: Flags::GRANT,
                priority: 5,
                grant_offset: 4096,
                ..reply
            },
            payload_len: 0,
        },
    ]
}

/// What tshark must print for each packet, field by field (`FIELDS`), in
/// tshark's spelling apart from what `normalize` evens out.
const EXPECTED: [[&str; 30]; 5] = [
    [
        "1.123456789",
        "1088",
        "02:00:00:00:00:01",
        "02:00:00:00:00:02",
        "10.0.0.1",
        "10.0.0.2",
        "0x00",
        "64",
        "1",
        "153",
        "1074",
        "0x01",
        "1",
        "0",
        "0",
        "0",
        "0",
        "0",
        "1",
        "0",
        "1500",
        "0",
        "0",
        "3",
        "9",
        "2",
        "0",
        "0",
        "1024",
        "DATA ctx 1→0 msg 3 pkt 0/2 len 1500",
    ],
    [
        "1.123456794",
        "64",
        "02:00:00:00:00:01",
        "02:00:00:00:00:02",
        "10.0.0.1",
        "10.0.0.2",
        "0x00",
        "64",
        "1",
        "153",
        "50",
        "0x11",
        "1",
        "0",
        "0",
        "0",
        "1",
        "0",
        "1",
        "0",
        "1500",
        "1",
        "0",
        "3",
        "9",
        "2",
        "0",
        "0",
        "",
        "DATA|CHOP ctx 1→0 msg 3 pkt 1/2 len 1500",
    ],
    [
        "2.000000000",
        "64",
        "02:00:00:00:00:02",
        "02:00:00:00:00:01",
        "10.0.0.2",
        "10.0.0.1",
        "0x00",
        "64",
        "1",
        "153",
        "50",
        "0x04",
        "0",
        "0",
        "1",
        "0",
        "0",
        "0",
        "0",
        "1",
        "1500",
        "1",
        "0",
        "3",
        "9",
        "2",
        "0",
        "0",
        "",
        "NACK ctx 0→1 msg 3 pkt 1/2",
    ],
    [
        "2.000000000",
        "64",
        "02:00:00:00:00:02",
        "02:00:00:00:00:01",
        "10.0.0.2",
        "10.0.0.1",
        "0x00",
        "64",
        "1",
        "153",
        "50",
        "0x0a",
        "0",
        "1",
        "0",
        "1",
        "0",
        "0",
        "0",
        "1",
        "1500",
        "0",
        "5",
        "3",
        "9",
        "2",
        "0",
        "0",
        "",
        "ACK|PULL ctx 0→1 msg 3 pkt 0/2 pull 5",
    ],
    [
        "3.999999999",
        "64",
        "02:00:00:00:00:02",
        "02:00:00:00:00:01",
        "10.0.0.2",
        "10.0.0.1",
        "0x05",
        "64",
        "1",
        "153",
        "50",
        "0x20",
        "0",
        "0",
        "0",
        "0",
        "0",
        "1",
        "0",
        "1",
        "1500",
        "0",
        "0",
        "3",
        "9",
        "2",
        "5",
        "4096",
        "",
        "GRANT ctx 0→1 msg 3 pkt 0/2 grant 4096 prio 5",
    ],
];

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root")
}

/// Whether tshark can be run; if not, fails under CI and skips otherwise.
fn have_tshark() -> bool {
    if Command::new("tshark").arg("--version").output().is_ok() {
        return true;
    }
    if std::env::var_os("CI").is_some() {
        panic!("tshark is not installed: run scripts/setup.sh --test");
    }
    eprintln!("skipping the tshark test: tshark is not installed (scripts/setup.sh --test)");
    false
}

/// Evens out how tshark versions spell a field: booleans as `1`/`0`
/// (4.0 prints `1`, some versions `True`), numbers in hexadecimal where the
/// expectation is hexadecimal (the ToS byte is `0x05` in 4.0, `5` elsewhere),
/// and the epoch time to nanoseconds.
fn normalize(field: &str, value: &str) -> String {
    match (field, value) {
        (_, "True") => "1".into(),
        (_, "False") => "0".into(),
        ("ip.dsfield", v) => parse_int(v).map_or(v.into(), |n| n.to_string()),
        ("frame.time_epoch", v) => match v.split_once('.') {
            Some((s, frac)) if frac.len() >= 9 => format!("{s}.{}", &frac[..9]),
            Some((s, frac)) => format!("{s}.{frac:0<9}"),
            None => format!("{v}.000000000"),
        },
        (_, v) => v.into(),
    }
}

fn parse_int(v: &str) -> Option<u64> {
    match v.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => v.parse().ok(),
    }
}

#[test]
fn tshark_shows_the_nanopu_fields() {
    if !have_tshark() {
        return;
    }
    let root = repo_root();
    let script = root.join("tools/wireshark/nanopu.lua");
    assert!(script.is_file(), "{} is missing", script.display());

    // Everything in a directory of our own, which also stands in for the
    // home directory so that no personal Wireshark preference or plugin
    // (an installed copy of nanopu.lua) changes what tshark prints.
    let dir = std::env::temp_dir().join(format!("nanopu-tshark-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("trace.pcap");

    let packets = packets();
    {
        let mut w = PcapWriter::new(std::fs::File::create(&pcap).unwrap()).unwrap();
        let mut buf = vec![0u8; 2048];
        for p in &packets {
            let payload: Vec<u8> = (0..p.payload_len).map(|i| i as u8).collect();
            let n = frame(p).emit(&payload, &mut buf).unwrap();
            w.write_packet(p.time_fs, &buf[..n]).unwrap();
        }
        w.flush().unwrap();
    }

    let mut cmd = Command::new("tshark");
    cmd.env("HOME", &dir)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("WIRESHARK_CONFIG_DIR")
        .arg("-r")
        .arg(&pcap)
        .arg("-X")
        .arg(format!("lua_script:{}", script.display()))
        .args(["-T", "fields", "-E", "separator=/t", "-E", "occurrence=f"]);
    for f in FIELDS {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("running tshark");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let _ = std::fs::remove_dir_all(&dir);

    assert!(
        out.status.success(),
        "tshark failed ({}):\n{stderr}",
        out.status
    );
    // A Lua error is only a warning to tshark; the fields would be empty.
    assert!(
        !stderr.contains("Lua"),
        "the dissector did not load:\n{stderr}"
    );

    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines.len(),
        EXPECTED.len(),
        "one line per packet:\n{stdout}\n{stderr}"
    );
    for (i, (line, expected)) in lines.iter().zip(EXPECTED.iter()).enumerate() {
        let got: Vec<&str> = line.split('\t').collect();
        assert_eq!(got.len(), FIELDS.len(), "packet {}: {line:?}", i + 1);
        for ((field, value), want) in FIELDS.iter().zip(got).zip(expected) {
            assert_eq!(
                normalize(field, value),
                normalize(field, want),
                "packet {}, field {field}; the line was\n{line}",
                i + 1
            );
        }
    }
}
