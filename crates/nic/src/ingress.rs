//! The ingress pipeline (nanoPU Fig. 1, step 1): header checks and the
//! layer-4 port match table that decides whether a packet takes the fast
//! path. Everything it refuses is counted by reason.

use crate::frames;
use crate::message::PacketInfo;

/// Why the ingress pipeline dropped a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IngressDrop {
    /// Not a well-formed nanoPU frame (truncated, bad checksum, other protocol).
    Malformed,
    /// Addressed to another node, or not a data packet.
    NotForUs,
    /// Announces a message larger than the NIC accepts.
    TooLarge,
    /// The port match table has no entry for the destination context.
    UnregisteredContext,
}

/// Header checks and the port match table.
#[derive(Clone, Debug)]
pub struct IngressPipeline {
    /// This node's IPv4 address.
    pub ip: u32,
    pub max_message_bytes: u32,
}

impl IngressPipeline {
    /// Classifies a frame; `has_context` is the port match table.
    pub fn process<'a>(
        &self,
        frame: &'a [u8],
        has_context: impl Fn(u16) -> bool,
    ) -> Result<(PacketInfo, &'a [u8]), IngressDrop> {
        let (info, payload) = frames::decode(frame).map_err(|e| match e {
            frames::DropReason::Malformed => IngressDrop::Malformed,
            frames::DropReason::NotForUs => IngressDrop::NotForUs,
        })?;
        if info.dst_ip != self.ip {
            return Err(IngressDrop::NotForUs);
        }
        if info.msg_len as u32 > self.max_message_bytes {
            return Err(IngressDrop::TooLarge);
        }
        if !has_context(info.dst_context) {
            return Err(IngressDrop::UnregisteredContext);
        }
        Ok((info, payload))
    }
}
