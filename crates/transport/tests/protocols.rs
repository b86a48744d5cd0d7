//! What distinguishes the shipped programs, seen on the wire: NDP paces its
//! PULLs and NACKs trimmed packets; Homa grants in SRPT order with
//! priorities in the IPv4 ToS; Homa-Tr NACKs where Homa waits for its
//! timeout.

mod harness;

use harness::*;
use nanopu_sim::{SimDuration, SimTime};
use nanopu_transport::config::BDP_PACKETS;
use nanopu_transport::protocols::homa::{SCHEDULED_PRIORITY, UNSCHEDULED_PRIORITY};
use nanopu_transport::protocols::CONTROL_PRIORITY;
use nanopu_transport::Protocol;
use nanopu_wire::{Flags, FrameRepr};

/// Every frame `host` sent: (time, flags, ToS, header).
fn frames_of(net: &Net, host: usize) -> Vec<(SimTime, Flags, u8, nanopu_wire::NanoTransportRepr)> {
    net.transmits
        .iter()
        .filter(|(h, _, _)| *h == host)
        .map(|(_, t, f)| {
            let (r, _) = FrameRepr::parse(f).unwrap();
            (*t, r.nt.flags, r.ip.tos, r.nt)
        })
        .collect()
}

#[test]
fn ndp_pulls_the_rest_of_a_long_message_one_mtu_time_apart() {
    let mut net = Net::new(2, Protocol::Ndp, Faults::default(), 1);
    net.send(0, 1, 38 * 1024, 1, SimTime::ZERO);
    net.run(SimTime::MAX);
    assert_eq!(net.delivered.len(), 1);
    let pulls: Vec<_> = frames_of(&net, 1)
        .into_iter()
        .filter(|f| f.1.contains(Flags::PULL))
        .collect();
    // The first BDP goes unscheduled; each later packet is pulled.
    assert_eq!(pulls.len(), 38 - BDP_PACKETS as usize);
    let mtu_time = LINK.frame_time(64 + 1024);
    for w in pulls.windows(2) {
        assert!(
            w[1].0 - w[0].0 >= mtu_time,
            "PULLs {:?} and {:?}",
            w[0].0,
            w[1].0
        );
        assert_eq!(w[1].3.pull_offset, w[0].3.pull_offset + 1);
    }
    assert_eq!(pulls.last().unwrap().3.pull_offset, 38);
    // Control packets travel at the top priority, data at the bottom.
    assert!(frames_of(&net, 1).iter().all(|f| f.2 == CONTROL_PRIORITY));
    assert!(frames_of(&net, 0).iter().all(|f| f.2 == 0));
}

#[test]
fn ndp_nacks_a_trimmed_packet_and_the_pull_resends_it() {
    let faults = Faults {
        trim: 0.3,
        ..Default::default()
    };
    let mut net = Net::new(2, Protocol::Ndp, faults, 4);
    net.send(0, 1, 20 * 1024, 1, SimTime::ZERO);
    net.run(SimTime::MAX);
    assert_eq!(net.delivered.len(), 1);
    let nacks = frames_of(&net, 1)
        .iter()
        .filter(|f| f.1.contains(Flags::NACK))
        .count();
    assert!(nacks > 0);
    let s = &net.hosts[0].stats;
    assert!(s.tx_retransmissions >= nacks as u64, "{s:?}");
    assert_eq!(s.tx_timeouts, 0, "recovered by NACKs, not timeouts: {s:?}");
}

#[test]
fn homa_grants_the_shortest_message_first() {
    let mut net = Net::new(4, Protocol::Homa, Faults::default(), 1);
    // Three senders, one receiver (host 0), all at once; the longest first.
    for (from, packets) in [(1, 38u16), (2, 30), (3, 20)] {
        net.send(from, 0, packets * 1024, from as u64, SimTime::ZERO);
    }
    net.run(SimTime::MAX);
    assert_eq!(net.delivered.len(), 3);
    // SRPT: completion in order of size.
    let order: Vec<u32> = net.delivered.iter().map(|(_, m, _)| m.src_ip).collect();
    assert_eq!(order, vec![ip(3), ip(2), ip(1)]);
    // GRANTs at control priority carry a scheduled priority for the data;
    // each message is fully granted in order of size.
    let grants: Vec<(SimTime, u32, u16)> = net
        .transmits
        .iter()
        .filter(|(h, _, _)| *h == 0)
        .filter_map(|(_, t, f)| {
            let (r, _) = FrameRepr::parse(f).unwrap();
            r.nt.flags.contains(Flags::GRANT).then(|| {
                assert_eq!(r.ip.tos, CONTROL_PRIORITY);
                assert!(r.nt.priority <= SCHEDULED_PRIORITY);
                (*t, r.ip.dst_addr.to_bits(), r.nt.grant_offset)
            })
        })
        .collect();
    let fully_granted = |host: usize, packets: u16| {
        grants
            .iter()
            .find(|g| g.1 == ip(host) && g.2 == packets)
            .map(|g| g.0)
            .expect("fully granted")
    };
    assert!(fully_granted(3, 20) < fully_granted(2, 30));
    assert!(fully_granted(2, 30) < fully_granted(1, 38));
    // Senders put the priority in the ToS: unscheduled first, then granted.
    let tos: Vec<u8> = frames_of(&net, 3).iter().map(|f| f.2).collect();
    assert!(tos[..BDP_PACKETS as usize]
        .iter()
        .all(|&t| t == UNSCHEDULED_PRIORITY));
    assert!(tos[BDP_PACKETS as usize..]
        .iter()
        .all(|&t| t <= SCHEDULED_PRIORITY));
}

#[test]
fn homa_waits_for_its_timeout_where_homa_tr_nacks() {
    let faults = Faults {
        trim: 0.2,
        ..Default::default()
    };
    let mut times = Vec::new();
    for p in [Protocol::Homa, Protocol::HomaTr] {
        let mut net = Net::new(2, p, faults, 9);
        net.send(0, 1, 16 * 1024, 1, SimTime::ZERO);
        net.run(SimTime::MAX);
        assert_eq!(net.delivered.len(), 1, "{p:?}");
        let s = &net.hosts[0].stats;
        if p == Protocol::Homa {
            assert!(s.tx_timeouts > 0, "{s:?}");
        } else {
            assert_eq!(s.tx_timeouts, 0, "{s:?}");
        }
        times.push(net.delivered[0].2);
    }
    assert!(
        times[0] > times[1] + SimDuration::from_ns(5_000),
        "Homa {:?} vs Homa-Tr {:?}",
        times[0],
        times[1]
    );
}
