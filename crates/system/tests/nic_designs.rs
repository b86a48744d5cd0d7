//! NIC designs behind the NIC interface: nodes with different NICs on one
//! network, and a design of our own plugged in from outside the crate.

use nanopu_network::TopologyConfig;
use nanopu_node::CoreOutput;
use nanopu_sim::{SimDuration, SimTime};
use nanopu_system::client::{LoadConfig, LoadMode};
use nanopu_system::cluster::{ClientSpec, Cluster, ClusterConfig, HostProgram};
use nanopu_system::nics::{Cores, NicDesign, NicIo, NicNote};
use nanopu_system::NicKind;
use nanopu_testkit::program;

const UNTIL: SimTime = SimTime(2_000_000_000_000); // 2 ms

fn load(count: u64) -> LoadConfig {
    LoadConfig {
        count,
        warmup: 5,
        mode: LoadMode::Closed { window: 1 },
        ..LoadConfig::default()
    }
}

/// Hosts 0 (nanoPU NIC, `loopback`) and 1 (traditional NIC,
/// `trad_loopback` built to swap IPv4 addresses as well, since the switch
/// routes by them) behind one switch, answering load generators 2 and 3.
fn mixed() -> ClusterConfig {
    let mut cfg = ClusterConfig::default();
    cfg.network.topology = TopologyConfig::SingleSwitch { hosts: 4 };
    cfg.node.cores = 1;
    cfg.programs = vec![
        HostProgram {
            hosts: "0".into(),
            program: program("loopback"),
            nic: None,
            args: Vec::new(),
        },
        HostProgram {
            hosts: "1".into(),
            program: program("trad_loopback_routed"),
            nic: Some(NicKind::Icenic),
            args: Vec::new(),
        },
    ];
    cfg.clients = vec![
        ClientSpec {
            hosts: "2".into(),
            server: 0,
            load: load(200),
            servers: Vec::new(),
        },
        ClientSpec {
            hosts: "3".into(),
            server: 1,
            load: load(200),
            servers: Vec::new(),
        },
    ];
    cfg
}

#[test]
fn nanopu_and_traditional_nics_answer_clients_on_one_network() {
    let mut c = Cluster::new(&mixed()).unwrap();
    assert_eq!(c.client_hosts(), &[2, 3]);
    c.run(UNTIL).unwrap();
    let nano = c.client_report(2).unwrap();
    let trad = c.client_report(3).unwrap();
    for (name, r) in [("nanopu", &nano), ("icenic", &trad)] {
        assert_eq!(
            (r.sent, r.received, r.wrong_replies, r.lost),
            (200, 200, 0, 0),
            "{name}: {r:?}"
        );
    }
    // Both booted (the wiring saw their boot messages and started the clients).
    let mut booted: Vec<usize> = c.booted.iter().map(|&(h, _)| h).collect();
    booted.sort();
    assert_eq!(booted, vec![0, 1]);
    // The same switch and wires: the difference is the NIC and its software.
    assert!(
        nano.p50_ns < trad.p50_ns,
        "nanoPU {} ns vs traditional {} ns",
        nano.p50_ns,
        trad.p50_ns
    );
    // The traditional node's counters include its device's.
    let stats = c.host(1).as_node().unwrap().nic_stats();
    assert!(
        stats["device"]["rx_frames"].as_u64().unwrap() >= 200,
        "{stats}"
    );
}

#[test]
fn a_mixed_network_repeats_bit_for_bit() {
    let run = || {
        let mut c = Cluster::new(&mixed()).unwrap();
        c.run(UNTIL).unwrap();
        let a = c.client_report(2).unwrap();
        let b = c.client_report(3).unwrap();
        (
            a.p50_ns, a.p99_ns, a.max_ns, b.p50_ns, b.p99_ns, b.max_ns, c.events,
        )
    };
    assert_eq!(run(), run());
}

#[test]
fn a_client_must_name_a_node_as_its_server() {
    let mut cfg = mixed();
    cfg.clients[0].server = 3;
    let e = Cluster::new(&cfg).err().expect("an error").to_string();
    assert!(e.contains("server = 3"), "{e}");
}

/// A toy NIC design, written outside the crate: it answers every request
/// itself, a fixed time after the frame is in (a NIC-resident echo, as a
/// SmartNIC offload would), and never bothers the cores. Its only event is
/// "send the reply you hold", numbered by the slot it sits in.
struct EchoNic {
    latency: SimDuration,
    link_gbps: u64,
    held: Vec<Option<Vec<u8>>>,
    echoed: u64,
}

impl NicDesign for EchoNic {
    type Event = u64;

    fn frame_in(
        &mut self,
        frame: &[u8],
        first_bit: SimTime,
        _: &mut Cores<'_>,
        io: &mut NicIo<u64>,
    ) {
        let Ok((repr, payload)) = nanopu_wire::FrameRepr::parse(frame) else {
            return;
        };
        let mut r = repr;
        std::mem::swap(&mut r.eth.src_addr, &mut r.eth.dst_addr);
        std::mem::swap(&mut r.ip.src_addr, &mut r.ip.dst_addr);
        std::mem::swap(&mut r.nt.src_context, &mut r.nt.dst_context);
        let mut reply = vec![0u8; r.frame_len()];
        r.emit(payload, &mut reply)
            .expect("same size as the request");
        let slot = match self.held.iter().position(Option::is_none) {
            Some(i) => i,
            None => {
                self.held.push(None);
                self.held.len() - 1
            }
        };
        self.held[slot] = Some(reply);
        let last_bit = first_bit + SimDuration::serialization(frame.len() as u64, self.link_gbps);
        io.schedule(last_bit + self.latency, slot as u64);
    }

    fn take_from_cores(&mut self, cores: &mut Cores<'_>, io: &mut NicIo<u64>) {
        // The program's boot message is the only thing it takes from them.
        let period = cores.period;
        cores.node.take_core_output(|_, out| {
            if let CoreOutput::Message { cycle, words, .. } = out {
                if words.first().is_some_and(|h| h >> 32 == 0) {
                    io.note(NicNote::Booted {
                        at: SimTime::from_cycle(cycle, period),
                    });
                }
            }
        });
    }

    fn handle(&mut self, slot: u64, now: SimTime, _: &mut Cores<'_>, io: &mut NicIo<u64>) {
        if let Some(frame) = self.held[slot as usize].take() {
            self.echoed += 1;
            io.transmit(frame, now);
        }
    }

    fn stats(&self) -> serde_json::Value {
        serde_json::json!({ "echoed": self.echoed })
    }
}

#[test]
fn a_nic_design_of_our_own_plugs_into_the_seam() {
    let mut cfg = mixed();
    cfg.programs.truncate(1);
    cfg.clients.truncate(1);
    cfg.clients[0].hosts = "1".into();
    cfg.network.topology = TopologyConfig::SingleSwitch { hosts: 2 };
    cfg.clients[0].load.count = 100;
    let latency = SimDuration::from_ns(40);
    let mut c = Cluster::with_nics(&cfg, |h| {
        (h == 0).then(|| {
            Box::new(EchoNic {
                latency,
                link_gbps: 200,
                held: Vec::new(),
                echoed: 0,
            }) as nanopu_system::nics::CustomNic
        })
    })
    .unwrap();
    c.run(UNTIL).unwrap();
    let r = c.client_report(1).unwrap();
    assert_eq!((r.received, r.wrong_replies), (100, 0), "{r:?}");
    let node = c.host(0).as_node().unwrap();
    assert_eq!(node.nic.kind_name(), "custom");
    assert_eq!(node.nic_stats()["echoed"], 100);
    // At the server's wire, first bit in to last bit out: the request's
    // serialization (72 bytes, 2.88 ns), the NIC's latency, the reply's
    // serialization; nothing else (the histogram keeps 3 digits).
    let expected = 2.88 + 40.0 + 2.88;
    assert!(
        (r.p50_ns - expected).abs() < 0.1,
        "{} vs {expected}",
        r.p50_ns
    );
    // The cores never saw a request.
    assert_eq!(node.node.netif(0).tx_messages, 1, "only the boot message");
}
