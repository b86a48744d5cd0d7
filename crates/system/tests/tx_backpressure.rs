//! A guest that writes netTX faster than the link drains it is held back
//! (issue 53, class 1): the nanoPU NIC's transmit buffers
//! (`nic.tx_buffers`) fill, the core's TX FIFO fills behind them, and the
//! core stalls on netTX, so what waits between the core and the wire stays
//! bounded while the link runs at its rate.

use nanopu_node::Node;
use nanopu_sim::{SimDuration, SimTime};
use nanopu_system::{Config, System, SystemEnd};
use nanopu_testkit::{bare_metal_elf, NET_TX_FLOOD};
use nanopu_transport::Protocol;

const RUN_US: u64 = 200;

/// `flood` run for `us` microseconds behind a NIC running `protocol`.
fn flooded(protocol: Protocol, us: u64) -> System {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("flood.elf");
    std::fs::write(&path, bare_metal_elf("flood", NET_TX_FLOOD)).unwrap();
    let mut cfg = Config::default();
    cfg.node.cores = 1;
    cfg.nic.transport.protocol = protocol;
    let node = Node::with_program(cfg.node.base.clone(), &path).unwrap();
    let mut s = System::new(node, &cfg, None).unwrap();
    let end = s.run(SimTime::ZERO + SimDuration::from_us(us)).unwrap();
    assert_eq!(end, SystemEnd::TimeLimit);
    s
}

/// (messages the NIC took from the core, frames that reached the other end
/// of the cable, instructions the core retired).
fn flood(protocol: Protocol) -> (u64, u64, u64) {
    let s = flooded(protocol, RUN_US);
    let nic = s.nic_stats();
    (nic.tx_messages, s.frames_to_nowhere(), s.node().instret())
}

#[test]
fn a_net_tx_flood_waits_in_bounded_buffers_and_the_link_runs_at_its_rate() {
    let (taken, arrived, instret) = flood(Protocol::None);
    eprintln!("lossless: {taken} messages taken, {arrived} arrived, {instret} instructions");
    // 72-byte frames (64 bytes and the 8-byte payload... padded to the
    // minimum) plus preamble and gap: about 3.4 ns each at 200 Gb/s.
    let frame_ns = nanopu_wire::frame::wire_bits(nanopu_wire::frame::HEADER_LEN + 8) as f64 / 200.0;
    let line_rate = (RUN_US as f64 * 1e3 / frame_ns) as u64;
    assert!(
        arrived > line_rate * 9 / 10 && arrived <= line_rate,
        "{arrived} frames arrived; the link carries {line_rate} in {RUN_US} us"
    );
    let waiting = taken - arrived;
    let cap = nanopu_nics::nanopu::config::DEFAULT_TX_BUFFERS as u64;
    assert!(
        waiting <= cap + 8,
        "{waiting} messages taken from the core but not yet across the cable (buffers: {cap})"
    );
    // The core stalled: about three instructions per message sent, not the
    // 3.2 GHz core's 640 K in 200 us.
    assert!(
        instret < 4 * (taken + 600),
        "{instret} instructions for {taken} messages"
    );
    // The same run again, the same numbers.
    assert_eq!(flood(Protocol::None), (taken, arrived, instret));
}

#[test]
fn a_net_tx_flood_with_a_reliable_transport_stays_bounded_too() {
    // Nobody acknowledges: the transport keeps each message until it gives
    // up on it; its own buffers and the transmit queue bound the rest.
    let (taken, _, instret) = flood(Protocol::Ndp);
    eprintln!("ndp: {taken} messages taken, {instret} instructions");
    let t = nanopu_transport::TransportConfig::default();
    let bound = (t.max_tx_messages + nanopu_nics::nanopu::config::DEFAULT_TX_BUFFERS) as u64
        * (1 + RUN_US * 1000 / (t.rtx_timeout_ns * (t.max_timeouts as u64 + 1)));
    assert!(taken <= bound, "{taken} messages taken (bound {bound})");
    assert!(
        instret < 4 * (taken + 600),
        "{instret} instructions for {taken} messages"
    );
}

#[test]
fn the_record_of_what_nodes_sent_stays_bounded() {
    // About 290 K messages in 1 ms: the cluster keeps the latest, counts all.
    let s = flooded(Protocol::None, 1000);
    let c = s.cluster();
    let kept = nanopu_system::cluster::NODE_MESSAGES_KEPT;
    assert_eq!(c.node_sends.len(), kept);
    assert!(
        c.node_messages_sent > kept as u64,
        "{}",
        c.node_messages_sent
    );
    assert_eq!(c.node_messages_sent, s.nic_stats().tx_messages);
}
