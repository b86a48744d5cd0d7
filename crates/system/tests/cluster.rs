//! Built-in hosts with NanoTransport NICs on a switched network
//! (`nanopu_system::cluster`), end to end: every protocol delivers every
//! message exactly once through lossy, duplicating, reordering, trimming and
//! truncating links, or says it failed; congestion is recovered from by
//! trimming and NACKs (NDP, Homa-Tr) or by timeouts (Homa); malformed frames
//! are counted and dropped; runs are a function of the configuration and
//! the seed; a host's link reads back in tshark through the Lua dissector;
//! a 64-host leaf-spine carries an all-to-all workload without loss.
//!
//! `Cluster` identifies a delivery by the first payload word only (the
//! message's index) and does not expose the rest of the payload, so
//! [`payloads_arrive_intact_through_faults`] wires the same blocks
//! (network, MAC latencies, NanoTransport) itself to compare every byte.
//!
//! The pcap test needs tshark (`scripts/setup.sh --test` installs it).
//! Without it the test is skipped with a notice, unless the `CI`
//! environment variable is set, in which case it fails.

use nanopu_network::{BufferKind, FaultConfig, FaultScope, NetworkStats, PortRef, TopologyConfig};
use nanopu_sim::{SimDuration, SimTime};
use nanopu_system::cluster::{Cluster, ClusterConfig, MessageSpec};
use nanopu_transport::{Protocol, TransportStats};
use nanopu_wire::{Flags, FrameRepr};
use std::path::{Path, PathBuf};
use std::process::Command;

const PROTOCOLS: [Protocol; 3] = [Protocol::Ndp, Protocol::Homa, Protocol::HomaTr];

/// 38 MTU packets: the largest message of the NanoTransport incast (§5.2).
const MAX_LEN: u16 = 38 * 1024;

/// SplitMix64: a deterministic generator with no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
}

/// `count` messages between random pairs of distinct hosts, one every
/// `spacing_ns` on average. Sizes: the first four are 8 B, 38 KB, exactly
/// one MTU and one byte more; then a quarter each of 8-64 B, 65 B to one
/// MTU, 2-8 packets and 9-38 packets.
fn workload(hosts: usize, count: usize, seed: u64, spacing_ns: u64) -> Vec<MessageSpec> {
    let mut r = Rng(seed);
    let mut at_ns = 0;
    (0..count)
        .map(|i| {
            let from = r.below(hosts as u64) as usize;
            let to = (from + 1 + r.below(hosts as u64 - 1) as usize) % hosts;
            let len = match i {
                0 => 8,
                1 => u64::from(MAX_LEN),
                2 => 1024,
                3 => 1025,
                _ => match r.below(4) {
                    0 => r.range(8, 64),
                    1 => r.range(65, 1024),
                    2 => r.range(1025, 8192),
                    _ => r.range(8193, u64::from(MAX_LEN)),
                },
            } as u16;
            at_ns += r.below(2 * spacing_ns);
            MessageSpec {
                from,
                to,
                len,
                at_ns,
            }
        })
        .collect()
}

fn config(
    protocol: Protocol,
    topology: TopologyConfig,
    faults: FaultConfig,
    seed: u64,
) -> ClusterConfig {
    let mut cfg = ClusterConfig::default();
    cfg.network.topology = topology;
    cfg.network.faults = faults;
    cfg.network.seed = seed;
    cfg.nic.transport.protocol = protocol;
    cfg
}

/// Two leaves of four hosts, two spines: every path between leaves crosses
/// four link directions.
fn small_leaf_spine() -> TopologyConfig {
    TopologyConfig::LeafSpine {
        leaves: 2,
        spines: 2,
        hosts_per_leaf: 4,
    }
}

/// Faults low enough that no message should fail within 5 timeouts
/// without progress: over four faulty hops a frame is lost or cut short
/// ~12% of the time and a data packet trimmed ~20% (a loss to Homa).
/// (Before acknowledgements counted as progress, a sender could give up on
/// a message its receiver had already delivered at these rates.)
fn light_faults() -> FaultConfig {
    FaultConfig {
        loss: 0.02,
        duplicate: 0.02,
        reorder: 0.05,
        trim: 0.05,
        truncate: 0.01,
        ..FaultConfig::default()
    }
}

/// Faults at which messages may fail.
fn heavy_faults() -> FaultConfig {
    FaultConfig {
        loss: 0.1,
        duplicate: 0.1,
        reorder: 0.2,
        trim: 0.1,
        truncate: 0.05,
        ..FaultConfig::default()
    }
}

fn ns(n: u64) -> SimTime {
    SimTime::ZERO + SimDuration::from_ns(n)
}

/// Runs the workload to the end (every timer run out).
fn run(cfg: &ClusterConfig, specs: &[MessageSpec]) -> Cluster {
    let mut c = Cluster::new(cfg).unwrap();
    for &m in specs {
        c.send(m).unwrap();
    }
    c.run(SimTime::MAX).unwrap();
    c
}

/// What every run must satisfy, whatever the faults: each message delivered
/// at most once and to its receiver, after it was sent, or else marked
/// failed; the counters of the transports and the network agree; nothing is
/// held once the run is over. Returns the number of failed records.
fn check_run(c: &Cluster, specs: &[MessageSpec], what: &str) -> usize {
    assert_eq!(c.records.len(), specs.len(), "{what}");
    let mut deliveries = 0;
    for (i, (r, m)) in c.records.iter().zip(specs).enumerate() {
        assert!(
            r.deliveries <= 1,
            "{what}: message {i} {m:?} delivered {} times",
            r.deliveries
        );
        assert_eq!(r.deliveries == 1, r.delivered_at.is_some(), "{what}: {i}");
        assert!(
            r.delivered_at.is_some() || r.failed,
            "{what}: message {i} {m:?} was neither delivered nor failed: {r:?}"
        );
        assert_eq!(r.sent_at, ns(m.at_ns), "{what}: message {i}");
        if let Some(t) = r.delivered_at {
            assert!(t > r.sent_at, "{what}: message {i} delivered before sent");
        }
        deliveries += u64::from(r.deliveries);
    }
    // Every delivery named a message of the workload sent to that host
    // (its first word is the index; no message is shorter than 8 bytes).
    assert_eq!(c.unknown_deliveries, 0, "{what}: deliveries of no message");
    assert!(c.unmatched_deliveries.is_empty(), "{what}");
    assert_eq!(c.occupancy(), None, "{what}: a host still holds resources");

    let n = specs.len() as u64;
    let s = c.transport_stats();
    let net = c.network().stats();
    assert_eq!(s.tx_messages, n, "{what}");
    assert_eq!(
        s.tx_completed + s.tx_failed,
        n,
        "{what}: every sender finished: {s:?}"
    );
    assert_eq!(s.rx_messages, deliveries, "{what}: {s:?}");
    assert_eq!(
        s.tx_data_packets + s.tx_control_packets,
        net.sent_frames,
        "{what}: every frame the transports sent entered the network"
    );
    assert_eq!(
        s.rx_packets, net.delivered_frames,
        "{what}: every frame the network delivered entered a transport"
    );
    let failed = c.records.iter().filter(|r| r.failed).count();
    // A failure the sender reports for a message the receiver already has
    // is not recorded (see `failed_records_match_the_senders_failures`).
    assert!(failed as u64 <= s.tx_failed, "{what}: {failed} > {s:?}");
    failed
}

fn delivered(c: &Cluster) -> usize {
    c.records
        .iter()
        .filter(|r| r.delivered_at.is_some())
        .count()
}

#[test]
fn every_protocol_delivers_exactly_once_through_light_faults() {
    for protocol in PROTOCOLS {
        for seed in 1..=3 {
            let what = format!("{} seed {seed}", protocol.name());
            let cfg = config(protocol, small_leaf_spine(), light_faults(), seed);
            let specs = workload(8, 100, seed, 300);
            assert!(specs.iter().any(|m| m.len == MAX_LEN));
            let c = run(&cfg, &specs);
            // Plain Homa resends nothing on a trimmed header (it answers
            // BUSY, which keeps its sender trying, but the copy is gone):
            // to it a packet crossing four faulty hops is lost ~28% of the
            // time, so a message running out of its six attempts when the
            // answers are lost too is rare bad luck, not a bug: allowed
            // once per run, never with the message also delivered. The
            // other programs recover trims by NACKs and must lose nothing.
            let allowed = if protocol == Protocol::Homa { 1 } else { 0 };
            let failed = check_run(&c, &specs, &what);
            assert!(failed <= allowed, "{what}: {failed} failed");
            assert_eq!(delivered(&c) + failed, specs.len(), "{what}");
            let s = c.transport_stats();
            assert!(
                s.tx_failed <= allowed as u64 && s.tx_completed + s.tx_failed == specs.len() as u64,
                "{what}: no message fails at these rates: {s:?}"
            );
            // The faults happened, and the transports saw their effects.
            let f = c.network().stats().faults;
            assert!(
                f.lost > 0 && f.duplicated > 0 && f.reordered > 0 && f.trimmed > 0,
                "{what}: {f:?}"
            );
            assert!(f.truncated > 0, "{what}: {f:?}");
            assert!(s.rx_trimmed > 0 && s.rx_malformed > 0, "{what}: {s:?}");
            assert!(
                s.tx_retransmissions > 0 && s.tx_timeouts > 0,
                "{what}: {s:?}"
            );
            // Every packet arrived whole at least once; duplicates and
            // needless retransmissions arrived too, and were not delivered
            // again (deliveries <= 1).
            let packets: u64 = specs.iter().map(|m| u64::from(m.len).div_ceil(1024)).sum();
            assert!(s.rx_data > packets, "{what}: {s:?}, {packets} packets");
        }
    }
}

#[test]
fn heavy_faults_may_fail_messages_but_never_duplicate_or_leak() {
    let mut any_failed = false;
    for protocol in PROTOCOLS {
        for scope in [FaultScope::AllLinks, FaultScope::HostLinks] {
            let what = format!("{} {scope:?}", protocol.name());
            let faults = FaultConfig {
                scope,
                ..heavy_faults()
            };
            let cfg = config(protocol, small_leaf_spine(), faults, 11);
            let specs = workload(8, 60, 11, 300);
            let c = run(&cfg, &specs);
            let failed = check_run(&c, &specs, &what);
            any_failed |= failed > 0;
            // Most messages still get through.
            assert!(delivered(&c) * 2 > specs.len(), "{what}: {:?}", c.records);
        }
    }
    assert!(any_failed, "the heavy faults never made a message fail");
}

/// Bug: `Cluster` drops a sender's `Failed` report when the message was
/// already delivered (the receiver got every packet; the sender ran out of
/// timeouts because ACKs were lost), so `records[i].failed` undercounts the
/// senders' `tx_failed` and a record can say "delivered, not failed" of a
/// message its sender reported failed. Its matching rule (the oldest
/// undelivered message with the same sender, receiver and length) can also
/// pin such a failure on another, still undelivered message of that length.
/// Input: the runs of `heavy_faults_may_fail_messages_but_never_duplicate_or_leak`
/// (all links); NDP: 8 records failed, tx_failed = 16.
#[test]

fn failed_records_match_the_senders_failures() {
    for protocol in PROTOCOLS {
        let cfg = config(protocol, small_leaf_spine(), heavy_faults(), 11);
        let specs = workload(8, 60, 11, 300);
        let c = run(&cfg, &specs);
        check_run(&c, &specs, protocol.name());
        let failed = c.records.iter().filter(|r| r.failed).count() as u64;
        assert_eq!(
            failed,
            c.transport_stats().tx_failed,
            "{}: records failed vs the senders' failures",
            protocol.name()
        );
    }
}

/// The incast of the NanoTransport evaluation, small: eight senders, one
/// receiver, a 16 KB output buffer.
fn incast(protocol: Protocol) -> (ClusterConfig, Vec<MessageSpec>) {
    let mut cfg = config(
        protocol,
        TopologyConfig::SingleSwitch { hosts: 9 },
        FaultConfig::default(),
        1,
    );
    cfg.network.switch.buffer = BufferKind::PerPort;
    cfg.network.switch.buffer_bytes = 16 * 1024;
    // NDP and Homa-Tr expect trimming switches; Homa expects drops.
    cfg.network.switch.trimming = protocol != Protocol::Homa;
    let specs = (0..8)
        .map(|s| MessageSpec {
            from: s,
            to: 8,
            len: 20_000 + 1000 * s as u16,
            at_ns: 0,
        })
        .collect();
    (cfg, specs)
}

#[test]
fn incast_is_recovered_by_trimming_and_nacks_or_by_timeouts() {
    let dir = TempDir::new("incast");
    for protocol in PROTOCOLS {
        let what = protocol.name();
        let (cfg, specs) = incast(protocol);
        let mut c = Cluster::new(&cfg).unwrap();
        for &m in &specs {
            c.send(m).unwrap();
        }
        let pcap = dir.0.join(format!("{what}.pcap"));
        c.capture(8, &pcap).unwrap();
        c.run(SimTime::MAX).unwrap();
        assert_eq!(check_run(&c, &specs, what), 0, "{what}");
        assert_eq!(delivered(&c), specs.len(), "{what}");

        let net = c.network().stats();
        let s = c.transport_stats();
        let receiver = &c.transport(8).stats;
        // What the receiver sent back, by kind.
        let back: Vec<Flags> = read_pcap(&pcap)
            .iter()
            .filter_map(|(_, f)| FrameRepr::parse(f).ok().map(|(r, _)| r))
            .filter(|r| r.ip.src_addr.to_bits() == nanopu_network::host_ip(8))
            .map(|r| r.nt.flags)
            .collect();
        let nacks = back.iter().filter(|f| f.contains(Flags::NACK)).count() as u64;
        let grants = back.iter().filter(|f| f.contains(Flags::GRANT)).count();
        let pulls = back.iter().filter(|f| f.contains(Flags::PULL)).count();
        let downlink = c
            .network()
            .port_stats(c.network().host_downlink(8).unwrap());
        assert!(
            downlink.max_bytes <= 16 * 1024 + cfg.network.switch.trim_queue_bytes,
            "{what}: {downlink:?}"
        );
        if protocol == Protocol::Homa {
            // A tail-drop switch: lost packets come back on timeouts.
            assert_eq!(net.total.trimmed, 0, "{what}");
            assert!(net.total.dropped.buffer_full > 0, "{what}: {net:?}");
            assert_eq!(net.total.dropped.total(), net.total.dropped.buffer_full);
            assert_eq!((s.rx_trimmed, nacks), (0, 0), "{what}");
            assert!(s.tx_timeouts > 0, "{what}: {s:?}");
            assert!(
                s.tx_retransmissions >= net.total.dropped.buffer_full,
                "{what}: every dropped packet was sent again: {s:?}"
            );
            assert!(grants > 0, "{what}: the receiver granted");
        } else {
            // Trimming: nothing is dropped, every trimmed header reaches
            // the receiver, which NACKs it; the sender resends each one.
            assert!(net.total.trimmed > 0, "{what}: {net:?}");
            assert_eq!(net.total.dropped.total(), 0, "{what}: {net:?}");
            assert_eq!(receiver.rx_trimmed, net.total.trimmed, "{what}");
            assert_eq!(nacks, receiver.rx_trimmed, "{what}: one NACK per trim");
            assert!(s.tx_retransmissions >= nacks, "{what}: {s:?}");
            if protocol == Protocol::Ndp {
                assert!(pulls > 0, "{what}: the receiver pulled");
            } else {
                assert!(grants > 0, "{what}: the receiver granted");
            }
        }
    }
}

/// A capture only reads frames: the same run with and without one (of a
/// receiver's link, of a sender's) delivers the same messages at the same
/// times, and the pcap's records are in time order.
#[test]
fn capturing_a_link_changes_nothing() {
    let dir = TempDir::new("capture-same");
    for protocol in PROTOCOLS {
        let what = protocol.name();
        let runs = [
            incast(protocol),
            (
                config(protocol, small_leaf_spine(), light_faults(), 5),
                workload(8, 80, 5, 200),
            ),
        ];
        for (i, (cfg, specs)) in runs.iter().enumerate() {
            let plain = run(cfg, specs);
            for host in [0, 5] {
                let pcap = dir.0.join(format!("{what}-{i}-{host}.pcap"));
                let mut c = Cluster::new(cfg).unwrap();
                for &m in specs {
                    c.send(m).unwrap();
                }
                c.capture(host, &pcap).unwrap();
                c.run(SimTime::MAX).unwrap();
                let case = format!("{what}, run {i}, capture of host {host}");
                assert_eq!(c.records, plain.records, "{case}");
                assert_eq!(c.network().stats(), plain.network().stats(), "{case}");
                assert_eq!(c.transport_stats(), plain.transport_stats(), "{case}");
                let records = read_pcap(&pcap);
                assert!(!records.is_empty(), "{case}");
                assert!(
                    records.windows(2).all(|w| w[0].0 <= w[1].0),
                    "{case}: records out of time order"
                );
            }
        }
    }
}

#[test]
fn truncated_frames_are_counted_and_dropped() {
    for protocol in PROTOCOLS {
        let what = protocol.name();
        let faults = FaultConfig {
            truncate: 0.3,
            scope: FaultScope::HostLinks,
            ..FaultConfig::default()
        };
        let cfg = config(protocol, small_leaf_spine(), faults, 5);
        let specs = workload(8, 40, 5, 300);
        let c = run(&cfg, &specs);
        check_run(&c, &specs, what);
        let s = c.transport_stats();
        let net = c.network().stats();
        assert!(s.rx_malformed > 0, "{what}: {s:?}");
        // Some frames were cut before the end of their IPv4 header: the
        // switch drops those, the NICs see the rest.
        assert!(net.total.dropped.malformed > 0, "{what}: {net:?}");
        assert!(
            s.rx_malformed + net.total.dropped.malformed <= net.faults.truncated,
            "{what}: only truncated frames are malformed: {s:?} {net:?}"
        );
        assert!(delivered(&c) > 0, "{what}");
    }
}

/// Everything a run produces that must be a function of its inputs.
#[derive(Debug, PartialEq)]
struct Outcome {
    records: Vec<String>,
    transport: TransportStats,
    network: NetworkStats,
    transmits: Vec<Vec<SimTime>>,
    events: u64,
    end: SimTime,
}

fn outcome(seed: u64) -> Outcome {
    let cfg = config(Protocol::HomaTr, small_leaf_spine(), heavy_faults(), seed);
    let mut c = Cluster::new(&cfg).unwrap();
    c.record_transmits(true);
    for m in workload(8, 40, 3, 300) {
        c.send(m).unwrap();
    }
    let end = c.run(SimTime::MAX).unwrap();
    Outcome {
        records: c.records.iter().map(|r| format!("{r:?}")).collect(),
        transport: c.transport_stats(),
        network: c.network().stats(),
        transmits: (0..c.hosts())
            .map(|h| c.transmit_times(h).to_vec())
            .collect(),
        events: c.events,
        end,
    }
}

#[test]
fn same_seed_same_run_other_seed_other_run() {
    let a = outcome(21);
    assert!(a.transmits.iter().all(|t| !t.is_empty()));
    assert_eq!(outcome(21), a);
    let b = outcome(22);
    assert_ne!(b.network.faults, a.network.faults);
    assert_ne!(b.transport, a.transport);
    assert_ne!(b.records, a.records);
}

/// A directory of our own under the system's temporary directory, removed
/// on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("nanopu-cluster-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The records of a pcap file (`nanopu_wire::PcapWriter`'s format:
/// little-endian, nanosecond timestamps): (time in ns, frame).
fn read_pcap(path: &Path) -> Vec<(u64, Vec<u8>)> {
    let b = std::fs::read(path).unwrap();
    let word = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    assert_eq!(word(0), nanopu_wire::pcap::MAGIC_NANOS);
    let mut out = Vec::new();
    let mut at = 24;
    while at < b.len() {
        let t = u64::from(word(at)) * 1_000_000_000 + u64::from(word(at + 4));
        let len = word(at + 8) as usize;
        out.push((t, b[at + 16..at + 16 + len].to_vec()));
        at += 16 + len;
    }
    out
}

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

/// One line of `tshark -T fields`, by field.
#[derive(Debug)]
struct Shown {
    time_ns: u64,
    src: String,
    dst: String,
    flags: Flags,
    msg_len: u16,
    pkt_offset: u16,
    pull_offset: u16,
    data_len: usize,
}

const TSHARK_FIELDS: [&str; 8] = [
    "frame.time_epoch",
    "ip.src",
    "ip.dst",
    "nanopu.flags",
    "nanopu.msg_len",
    "nanopu.pkt_offset",
    "nanopu.pull_offset",
    "data.len",
];

fn parse_shown(line: &str) -> Shown {
    let f: Vec<&str> = line.split('\t').collect();
    assert_eq!(f.len(), TSHARK_FIELDS.len(), "{line:?}");
    let int = |s: &str| -> u64 {
        match s.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16),
            None => s.parse(),
        }
        .unwrap_or_else(|_| panic!("{s:?} in {line:?}"))
    };
    let (secs, frac) = f[0].split_once('.').unwrap_or((f[0], "0"));
    let frac = format!("{frac:0<9}");
    Shown {
        time_ns: int(secs) * 1_000_000_000 + int(&frac[..9]),
        src: f[1].into(),
        dst: f[2].into(),
        flags: Flags::from_bits_retain(int(f[3]) as u8),
        msg_len: int(f[4]) as u16,
        pkt_offset: int(f[5]) as u16,
        pull_offset: int(f[6]) as u16,
        data_len: if f[7].is_empty() {
            0
        } else {
            int(f[7]) as usize
        },
    }
}

#[test]
fn pcap_of_an_ndp_exchange_reads_back_in_tshark() {
    if !have_tshark() {
        return;
    }
    let script = repo_root().join("tools/wireshark/nanopu.lua");
    assert!(script.is_file(), "{} is missing", script.display());
    let dir = TempDir::new("tshark");
    let pcap = dir.0.join("host0.pcap");

    // 16,000 bytes from host 0 to host 1 (16 packets: 12 unscheduled, 4
    // pulled), then 8 bytes back.
    let cfg = config(
        Protocol::Ndp,
        TopologyConfig::SingleSwitch { hosts: 2 },
        FaultConfig::default(),
        1,
    );
    let specs = [
        MessageSpec {
            from: 0,
            to: 1,
            len: 16_000,
            at_ns: 100,
        },
        MessageSpec {
            from: 1,
            to: 0,
            len: 8,
            at_ns: 5_000,
        },
    ];
    let mut c = Cluster::new(&cfg).unwrap();
    for m in specs {
        c.send(m).unwrap();
    }
    c.capture(0, &pcap).unwrap();
    c.run(SimTime::MAX).unwrap();
    check_run(&c, &specs, "ndp pcap");
    assert_eq!(delivered(&c), 2);
    let link_frames = c.network().uplink_stats(0).frames
        + c.network()
            .port_stats(c.network().host_downlink(0).unwrap())
            .frames;

    let mut cmd = Command::new("tshark");
    // Our own home directory: no personal preference or plugin applies.
    cmd.env("HOME", &dir.0)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("WIRESHARK_CONFIG_DIR")
        .arg("-r")
        .arg(&pcap)
        .arg("-X")
        .arg(format!("lua_script:{}", script.display()))
        .args(["-T", "fields", "-E", "separator=/t", "-E", "occurrence=f"]);
    for f in TSHARK_FIELDS {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("running tshark");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "tshark failed ({}):\n{stderr}",
        out.status
    );
    assert!(
        !stderr.contains("Lua"),
        "the dissector did not load:\n{stderr}"
    );
    let shown: Vec<Shown> = stdout.lines().map(parse_shown).collect();
    assert_eq!(
        shown.len() as u64,
        link_frames,
        "every frame on the link:\n{stdout}"
    );

    let (h0, h1) = ("10.0.0.1", "10.0.0.2");
    let big: Vec<&Shown> = shown.iter().filter(|s| s.msg_len == 16_000).collect();
    let data: Vec<&Shown> = big
        .iter()
        .copied()
        .filter(|s| s.flags == Flags::DATA)
        .collect();
    let control: Vec<&Shown> = big
        .iter()
        .copied()
        .filter(|s| s.flags != Flags::DATA)
        .collect();
    // The data packets: host 0 to host 1, offsets 0..16 in order, in time,
    // 1024 bytes each but the last (16,000 - 15 x 1024 = 640).
    assert_eq!(data.len(), 16, "{stdout}");
    for (i, d) in data.iter().enumerate() {
        assert_eq!((d.src.as_str(), d.dst.as_str()), (h0, h1), "{d:?}");
        assert_eq!(d.pkt_offset as usize, i, "{stdout}");
        assert_eq!(d.data_len, if i == 15 { 640 } else { 1024 }, "{d:?}");
    }
    assert!(data.windows(2).all(|w| w[0].time_ns < w[1].time_ns));
    // The receiver's answers: host 1 to host 0, one ACK per packet, no
    // payload; PULLs for the four packets beyond the first BDP (12).
    for s in &control {
        assert_eq!((s.src.as_str(), s.dst.as_str()), (h1, h0), "{s:?}");
        assert_eq!(s.data_len, 0, "{s:?}");
        assert!(
            (Flags::ACK | Flags::PULL).contains(s.flags),
            "only ACKs and PULLs: {s:?}"
        );
    }
    let mut acked: Vec<u16> = control
        .iter()
        .filter(|s| s.flags.contains(Flags::ACK))
        .map(|s| s.pkt_offset)
        .collect();
    acked.sort_unstable();
    assert_eq!(acked, (0..16).collect::<Vec<_>>(), "{stdout}");
    let pulls: Vec<&Shown> = control
        .iter()
        .copied()
        .filter(|s| s.flags.contains(Flags::PULL))
        .collect();
    assert_eq!(
        pulls.iter().map(|s| s.pull_offset).collect::<Vec<_>>(),
        [13, 14, 15, 16],
        "{stdout}"
    );
    // A pulled packet leaves after the PULL that allows it is seen here.
    for d in &data[12..] {
        let pull = pulls.iter().find(|p| p.pull_offset > d.pkt_offset).unwrap();
        assert!(pull.time_ns < d.time_ns, "{pull:?} before {d:?}");
    }
    // The first packet leaves once the message is in the transport (100
    // ns) and through its pipelines; the first ACK comes a round trip later.
    assert!((100..200).contains(&data[0].time_ns), "{:?}", data[0]);
    assert!(control[0].time_ns > data[0].time_ns + 2 * 43 + 300);

    // The 8-byte message the other way, and its ACK.
    let small: Vec<&Shown> = shown.iter().filter(|s| s.msg_len == 8).collect();
    assert_eq!(small.len(), 2, "{stdout}");
    assert_eq!(
        (small[0].src.as_str(), small[0].flags, small[0].data_len),
        (h1, Flags::DATA, 8)
    );
    assert_eq!((small[1].src.as_str(), small[1].flags), (h0, Flags::ACK));
    assert!(small[0].time_ns >= 5_000);
}

#[test]
fn leaf_spine_of_64_hosts_carries_all_to_all_without_loss() {
    let topology = TopologyConfig::LeafSpine {
        leaves: 4,
        spines: 2,
        hosts_per_leaf: 16,
    };
    // Eight rounds, 2 us apart: in each, every host sends to another
    // (round k: 9k + 1 hosts further on), so each receives one message a
    // round; sizes 500 B to 6.5 KB.
    let mut specs = Vec::new();
    for k in 0..8u64 {
        for h in 0..64usize {
            specs.push(MessageSpec {
                from: h,
                to: (h + 1 + (k as usize * 9) % 63) % 64,
                len: (500 + (h as u64 * 37 + k * 1001) % 6000) as u16,
                at_ns: k * 2000 + h as u64 * 13,
            });
        }
    }
    for protocol in [Protocol::Ndp, Protocol::Homa] {
        let what = protocol.name();
        let cfg = config(protocol, topology.clone(), FaultConfig::default(), 1);
        let c = run(&cfg, &specs);
        assert_eq!(check_run(&c, &specs, what), 0);
        assert_eq!(delivered(&c), specs.len(), "{what}");
        let s = c.transport_stats();
        assert_eq!(
            (
                s.tx_retransmissions,
                s.tx_timeouts,
                s.rx_trimmed,
                s.tx_failed
            ),
            (0, 0, 0, 0),
            "{what}: {s:?}"
        );
        let net = c.network().stats();
        assert_eq!((net.total.trimmed, net.total.dropped.total()), (0, 0));
        // Every leaf spreads its traffic over both spines.
        for leaf in 0..4 {
            for spine in 0..2 {
                let up = c.network().port_stats(PortRef {
                    switch: leaf,
                    port: 16 + spine,
                });
                assert!(up.frames > 100, "{what}: leaf {leaf} spine {spine}: {up:?}");
            }
        }
        // No message waits long: the slowest takes under 10 us.
        let worst = c
            .records
            .iter()
            .map(|r| r.delivered_at.unwrap().since(r.sent_at).as_ns())
            .fold(0.0, f64::max);
        assert!(worst < 10_000.0, "{what}: {worst} ns");
    }
}

/// The cluster's blocks wired by hand, as `Cluster` wires them, with every
/// payload word compared on delivery: `Cluster` checks the first word only.
mod wired {
    use nanopu_network::{host_ip, NetAction, NetEvent, Network};
    use nanopu_nics::mac::Mac;
    use nanopu_sim::{EventQueue, SimDuration, SimTime};
    use nanopu_system::cluster::{ClusterConfig, MessageSpec};
    use nanopu_transport::{
        NanoTransport, OutMessage, RxMessage, TransportAction, TransportEvent, TxLink, TxOutcome,
    };

    enum Ev {
        Net(NetEvent),
        AtHost(usize, Vec<u8>),
        Transport(usize, TransportEvent),
        Send(usize),
    }

    pub struct Hosts {
        pub net: Network,
        pub hosts: Vec<(NanoTransport, Mac)>,
        queue: EventQueue<Ev>,
        specs: Vec<MessageSpec>,
        pub delivered: Vec<(usize, RxMessage)>,
        pub sent: Vec<(usize, TxOutcome)>,
        pub failed: Vec<(usize, TxOutcome)>,
    }

    /// The payload of message `i`: every word differs from message to
    /// message and from word to word.
    pub fn payload(i: usize, len: u16) -> Vec<u64> {
        (0..(len as u64).div_ceil(8))
            .map(|w| (i as u64) << 32 ^ w.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ w)
            .collect()
    }

    /// The words a receiver reads: the bytes beyond `len` are zero.
    pub fn masked(mut words: Vec<u64>, len: u16) -> Vec<u64> {
        if !len.is_multiple_of(8) {
            if let Some(last) = words.last_mut() {
                *last &= (1u64 << ((len % 8) * 8)) - 1;
            }
        }
        words
    }

    impl Hosts {
        pub fn new(cfg: &ClusterConfig, specs: &[MessageSpec]) -> Hosts {
            let net = Network::new(&cfg.network).unwrap();
            let gbps = cfg.network.link.gbps;
            let link = TxLink {
                gbps,
                overhead_bytes: 20,
            };
            let hosts = (0..net.hosts())
                .map(|h| {
                    let t = NanoTransport::new(
                        &cfg.nic.transport,
                        host_ip(h),
                        cfg.nic.mtu_payload_bytes,
                        link,
                    )
                    .unwrap();
                    let mac = Mac {
                        link_gbps: gbps,
                        rx_latency: SimDuration::from_ps(cfg.nic.mac_serial_rx_ps),
                        tx_latency: SimDuration::from_ps(cfg.nic.mac_serial_tx_ps),
                    };
                    (t, mac)
                })
                .collect();
            let mut queue = EventQueue::new();
            for (i, m) in specs.iter().enumerate() {
                queue.schedule(SimTime::ZERO + SimDuration::from_ns(m.at_ns), Ev::Send(i));
            }
            Hosts {
                net,
                hosts,
                queue,
                specs: specs.to_vec(),
                delivered: Vec::new(),
                sent: Vec::new(),
                failed: Vec::new(),
            }
        }

        pub fn run(&mut self) {
            let (mut actions, mut net_actions) = (Vec::new(), Vec::new());
            while let Some((t, ev)) = self.queue.pop_until(SimTime::MAX) {
                let host = match ev {
                    Ev::Net(e) => {
                        self.net.handle(e, t, &mut net_actions);
                        None
                    }
                    Ev::AtHost(h, frame) => {
                        let (transport, mac) = &mut self.hosts[h];
                        let at = mac.received(t, frame.len());
                        transport.packet_in(&frame, at, &mut actions);
                        Some(h)
                    }
                    Ev::Transport(h, e) => {
                        self.hosts[h].0.handle(e, t, &mut actions);
                        Some(h)
                    }
                    Ev::Send(i) => {
                        let m = self.specs[i];
                        // The message's index as its source context, so
                        // that the sender's outcome names it.
                        let msg = OutMessage {
                            dst_ip: host_ip(m.to),
                            dst_port: 0,
                            src_port: i as u16,
                            len: m.len,
                            payload: payload(i, m.len),
                            tag: i as u64,
                        };
                        self.hosts[m.from].0.send_message(msg, t, &mut actions);
                        Some(m.from)
                    }
                };
                if let Some(h) = host {
                    for a in actions.drain(..) {
                        match a {
                            TransportAction::Deliver { msg, .. } => self.delivered.push((h, msg)),
                            TransportAction::Transmit { frame, at } => {
                                let ready = self.hosts[h].1.transmit_ready(at);
                                self.net.send(h, frame, ready, &mut net_actions);
                            }
                            TransportAction::Schedule { at, event } => {
                                self.queue.schedule(at, Ev::Transport(h, event))
                            }
                            TransportAction::Sent { outcome, .. } => self.sent.push((h, outcome)),
                            TransportAction::Failed { outcome, .. } => {
                                self.failed.push((h, outcome))
                            }
                        }
                    }
                }
                for a in net_actions.drain(..) {
                    match a {
                        NetAction::Deliver {
                            host,
                            frame,
                            first_bit,
                        } => self.queue.schedule(first_bit, Ev::AtHost(host, frame)),
                        NetAction::Schedule { at, event } => {
                            self.queue.schedule(at, Ev::Net(event))
                        }
                        NetAction::Reserve { .. } | NetAction::ScheduleReserved { .. } => {
                            unreachable!("lazy mode is off")
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn payloads_arrive_intact_through_faults() {
    for protocol in PROTOCOLS {
        for (faults, seed) in [(light_faults(), 7), (heavy_faults(), 8)] {
            let what = format!("{} loss {} seed {seed}", protocol.name(), faults.loss);
            let cfg = config(protocol, small_leaf_spine(), faults.clone(), seed);
            let specs = workload(8, 80, seed, 300);
            let mut w = wired::Hosts::new(&cfg, &specs);
            w.run();
            let n = specs.len();
            let mut deliveries = vec![0u32; n];
            for (host, msg) in &w.delivered {
                let i = msg.src_port as usize;
                let m = specs[i];
                assert_eq!(*host, m.to, "{what}: message {i} at the wrong host");
                assert_eq!(msg.src_ip, nanopu_network::host_ip(m.from), "{what}");
                assert_eq!(msg.len, m.len, "{what}: message {i}");
                let want = wired::masked(wired::payload(i, m.len), m.len);
                assert!(msg.payload == want, "{what}: message {i} {m:?} corrupted");
                deliveries[i] += 1;
            }
            // Each message: delivered once at most; its sender told of its
            // completion or its failure, once; completion only if delivered.
            let mut outcomes = vec![(0, 0); n];
            for (host, o) in &w.sent {
                let i = o.src_port as usize;
                assert_eq!(*host, specs[i].from, "{what}");
                outcomes[i].0 += 1;
            }
            for (_, o) in &w.failed {
                outcomes[o.src_port as usize].1 += 1;
            }
            for i in 0..n {
                assert!(deliveries[i] <= 1, "{what}: message {i} delivered twice");
                assert_eq!(
                    outcomes[i].0 + outcomes[i].1,
                    1,
                    "{what}: message {i}: (sent, failed) {:?}",
                    outcomes[i]
                );
                if outcomes[i].0 == 1 {
                    assert_eq!(deliveries[i], 1, "{what}: message {i} sent, not delivered");
                }
            }
            if faults == light_faults() {
                assert_eq!(w.failed.len(), 0, "{what}");
            }
            for (h, (t, _)) in w.hosts.iter().enumerate() {
                assert!(
                    t.occupancy().is_empty(),
                    "{what}: host {h}: {:?}",
                    t.occupancy()
                );
            }
        }
    }
}
