//! Writes a few nanoPU frames to a pcap file, to look at with Wireshark or
//! tshark: `cargo run -p nanopu-wire --example write_pcap -- out.pcap`.

use nanopu_wire::{
    ipv4, EthernetAddress, EthernetRepr, Flags, FrameRepr, Ipv4Address, Ipv4Repr,
    NanoTransportRepr, PcapWriter,
};
use std::fs::File;
use std::io::BufWriter;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: write_pcap OUT.pcap")?;
    let mut pcap = PcapWriter::new(BufWriter::new(File::create(&path)?))?;

    let mac = |n: u8| EthernetAddress([0x02, 0, 0, 0, 0, n]);
    let ip = |n: u8| Ipv4Address::new(10, 0, 0, n);
    let frame = |from: u8, to: u8, nt: NanoTransportRepr, payload_len: usize| {
        FrameRepr::new(
            EthernetRepr {
                src_addr: mac(from),
                dst_addr: mac(to),
                ethertype: 0,
            },
            Ipv4Repr {
                src_addr: ip(from),
                dst_addr: ip(to),
                protocol: 0,
                payload_len: 0,
                ttl: ipv4::DEFAULT_TTL,
                tos: 0,
                ident: 0,
                dont_frag: true,
            },
            nt,
            payload_len,
        )
    };

    let data = NanoTransportRepr {
        flags: Flags::DATA,
        src_context: 1,
        dst_context: 2,
        msg_len: 8,
        ..Default::default()
    };
    let ack = NanoTransportRepr {
        flags: Flags::ACK | Flags::PULL,
        src_context: 2,
        dst_context: 1,
        msg_len: 8,
        pull_offset: 1,
        ..Default::default()
    };
    let data16 = NanoTransportRepr {
        msg_len: 16,
        tx_msg_id: 1,
        ..data
    };

    let mut buf = [0u8; 128];
    let packets: [(u64, FrameRepr, &[u8]); 3] = [
        (1_000_000, frame(1, 2, data, 8), b"8 bytes!"),
        (2_500_000, frame(2, 1, ack, 0), b""),
        (1_000_000_000, frame(1, 2, data16, 16), b"sixteen bytes..."),
    ];
    for (time_fs, repr, payload) in packets {
        let n = repr.emit(payload, &mut buf)?;
        pcap.write_packet(time_fs, &buf[..n])?;
    }
    pcap.flush()?;
    println!("wrote {path}");
    Ok(())
}
