//! The transport programs that ship with the simulator, written only
//! against [`crate::program`]'s events and externs, as a user would write
//! their own.
//!
//! Priorities: every program puts a packet's priority in the IPv4 ToS byte
//! (the switches serve higher values first). Control packets (ACK, NACK,
//! PULL, GRANT) travel at [`CONTROL_PRIORITY`], as NDP's header queue and
//! Homa's highest level do.

pub mod homa;
pub mod lossless;
pub mod ndp;

use crate::config::Protocol;
use crate::metadata::{EgressMetadata, PacketHeaders};
use crate::program::{ProgramParams, TransportProgram};
use nanopu_wire::Flags;

/// Priority (ToS) of control packets: the highest of 8 levels.
pub const CONTROL_PRIORITY: u8 = 7;

/// The built-in program for `protocol` ([`Protocol::None`]: the lossless
/// program with NDP's pipeline latencies).
pub fn program_for(protocol: Protocol, params: &ProgramParams) -> Box<dyn TransportProgram> {
    match protocol {
        Protocol::None => Box::new(lossless::Lossless::default()),
        Protocol::Ndp => Box::new(ndp::Ndp::new(params)),
        Protocol::Homa => Box::new(homa::Homa::new(params, false)),
        Protocol::HomaTr => Box::new(homa::Homa::new(params, true)),
    }
}

/// The metadata of a control packet answering data packet `hdr`: back to
/// its sender, naming the sender's message.
pub fn reply_to(hdr: &PacketHeaders, flags: Flags, credit: u16) -> EgressMetadata {
    EgressMetadata {
        remote_ip: hdr.src_ip,
        remote_port: hdr.src_port,
        msg_len: hdr.msg_len,
        pkt_offset: hdr.pkt_offset,
        local_port: hdr.dst_port,
        tx_msg_id: hdr.tx_msg_id,
        credit,
        rank: CONTROL_PRIORITY,
        flags,
        is_new_msg: false,
        is_rtx: false,
    }
}
