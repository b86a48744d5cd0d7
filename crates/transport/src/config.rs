//! Parameters of NanoTransport. Each default is a named constant whose doc
//! comment gives its source; where the paper is silent, it says what was
//! assumed and why.

use crate::buffers::{BufferError, SizeClass};
use nanopu_sim::SimDuration;
use serde::{Deserialize, Serialize};

/// A transport parameter no transport can run with; names the key (under
/// `transport.`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TransportConfigError {
    /// `key = value` is out of its range.
    #[error("transport.{key} = {value}: {reason}")]
    Invalid {
        key: &'static str,
        value: String,
        reason: String,
    },
    /// The buffer classes cannot be carved.
    #[error("transport.buffer_classes: {0}")]
    BufferClasses(#[from] BufferError),
    /// The link the transport sends on has no rate.
    #[error("the link rate must be positive")]
    ZeroLinkRate,
}

fn invalid(
    key: &'static str,
    value: impl ToString,
    reason: impl Into<String>,
) -> TransportConfigError {
    TransportConfigError::Invalid {
        key,
        value: value.to_string(),
        reason: reason.into(),
    }
}

const TOO_LONG: &str = "too long for the simulated time base (at most about 5 hours)";

/// Which transport program runs in the NIC's pipelines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// The lossless program (`protocols::lossless`): the fixed-latency
    /// stand-in of the one-node microbenchmarks (no acknowledgements, no
    /// retransmission; a message is sent whole at once). Only for a node
    /// whose peer is the built-in load generator on a lossless wire.
    #[default]
    None,
    /// NDP (NanoTransport Algorithm 4): trimming, NACKs, paced PULLs.
    Ndp,
    /// Homa (NanoTransport Algorithm 5): SRPT grants, priorities in ToS.
    Homa,
    /// Homa with NDP's trimming and NACKs (NanoTransport §4.4).
    HomaTr,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::None => "none",
            Protocol::Ndp => "ndp",
            Protocol::Homa => "homa",
            Protocol::HomaTr => "homa-tr",
        }
    }
}

/// Per-stage latency of a transport program's pipelines (NanoTransport
/// Table 1), in picoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageLatencies {
    /// The programmable ingress pipeline (parser, match-action stages,
    /// extern calls).
    pub ingress_ps: u64,
    /// The programmable egress pipeline.
    pub egress_ps: u64,
}

/// NDP's pipelines: three ingress stages, one egress stage. Source:
/// NanoTransport Table 1 (ingress 5 ns, egress 0.31 ns).
pub const NDP_LATENCIES: StageLatencies = StageLatencies {
    ingress_ps: 5_000,
    egress_ps: 310,
};

/// Homa's pipelines: five ingress stages, two egress stages. Source:
/// NanoTransport Table 1 (ingress 6.25 ns, egress 0.94 ns). Homa-Tr is
/// given Homa's (the paper does not measure it; its extra NACK path is a
/// parallel branch, not a further dependent stage).
pub const HOMA_LATENCIES: StageLatencies = StageLatencies {
    ingress_ps: 6_250,
    egress_ps: 940,
};

/// Reassembly module: store the payload, check completion. Source:
/// NanoTransport Table 1 (0.94 ns, the same for both protocols).
pub const REASSEMBLY_PS: u64 = 940;
/// Packetization module: read a packet of a message out of its buffer.
/// Source: NanoTransport Table 1 (2.81 ns).
pub const PACKETIZE_PS: u64 = 2_810;
/// Packet generator: from a `CtrlPktEvent` to the arbiter. Assumption: one
/// NIC clock at 3.2 GHz (NanoTransport §5 runs the NIC at 3.2 GHz); the
/// paper gives no figure.
pub const PACKET_GENERATOR_PS: u64 = 312;
/// Time the timer modules' background scan spends on one entry.
/// Assumption: one NIC clock (one memory read per cycle, §4.3).
pub const TIMER_CHECK_PS: u64 = 312;

/// Sender retransmission timeout. Source: the nanoPU artifact's transport
/// model (`l-nic/nanoPU-sim`, `config.json`: `timeout_ns = 10000`).
pub const RTX_TIMEOUT_NS: u64 = 10_000;
/// Timeouts without progress before the sender gives up on a message.
/// Source: `l-nic/nanoPU-sim` `config.json` (`max_num_timeouts = 5`).
pub const MAX_TIMEOUTS: u32 = 5;

/// Messages the packetization module holds at once (transmit message ids).
/// Assumption: the NanoTransport prototype was sized for 16 or 128
/// concurrent messages (§5.3, Table 2); 1024 keeps the 200 Gb/s line-rate
/// test (a 65 B message every 2.6 ns, acknowledged a round trip later) from
/// running out of ids.
pub const MAX_TX_MESSAGES: u32 = 1024;
/// Messages the reassembly module holds at once (receive message ids),
/// completed ones included while they are remembered (`rx_timeout_ns`, 60
/// us by default, so that duplicates are not delivered twice); a message
/// that finds none free is refused, and its sender retries after its
/// timeout. So it must cover the message rate times the timeout: a core
/// answering 150 M requests/s needs 9 K; one-packet messages at line rate
/// (294 M/s) need 17.6 K, which `nt-line-rate` sets. Assumption: 16384
/// (the prototype was sized for 16 or 128 messages, NT §5.3); about 2 MB
/// of state per NIC here. Buffers are `buffer_classes`, not this.
pub const MAX_RX_MESSAGES: u32 = 16_384;

/// Packets a sender may send before any credit arrives: one bandwidth-delay
/// product. NDP and Homa both start a message with one BDP unscheduled
/// (NanoTransport §4.4). Assumption: 200 Gb/s x ~0.5 us RTT (the
/// NanoTransport incast's 525 ns) / 1088 B packets = 12 packets.
pub const BDP_PACKETS: u16 = 12;

/// Homa: how many messages the receiver grants to at once (the degree of
/// overcommitment, NanoTransport footnote 6). Assumption: 2 (the paper does
/// not give its value).
pub const HOMA_OVERCOMMIT: u32 = 2;
/// Slots of the priority scheduler compared in parallel. Source:
/// NanoTransport §4.4 ("up to 16 scheduled messages").
pub const SCHEDULER_SLOTS: u32 = 16;

/// The buffer size classes of the packetization and reassembly modules
/// (NanoTransport §4.2 leaves the carving to the operator). Assumption:
/// enough 1 KB buffers for one-packet messages at line rate, and classes
/// up to the largest message the 16-bit length allows.
pub fn default_buffer_classes() -> Vec<SizeClass> {
    vec![
        SizeClass {
            bytes: 1024,
            count: 1024,
        },
        SizeClass {
            bytes: 4096,
            count: 256,
        },
        SizeClass {
            bytes: 16384,
            count: 64,
        },
        SizeClass {
            bytes: 65536,
            count: 32,
        },
    ]
}

/// NanoTransport's parameters: which program, the fixed modules' sizes and
/// timings, and the program's tunables.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TransportConfig {
    /// The transport program: `none`, `ndp`, `homa` or `homa-tr`.
    pub protocol: Protocol,
    /// Override of the program's pipeline latencies (default: the
    /// program's own, from NanoTransport Table 1).
    pub latencies: Option<StageLatencies>,
    pub reassembly_ps: u64,
    pub packetize_ps: u64,
    pub packet_generator_ps: u64,
    pub timer_check_ps: u64,
    /// The sender's retransmission timeout: how long a message may go
    /// without any word from its receiver (and without sending) before
    /// its unacknowledged packets are resent. In a network of hosts it is
    /// at least the network's worst round trip (see
    /// `rtx_timeout_covers_queues`).
    pub rtx_timeout_ns: u64,
    /// In a network of hosts (`nanopu net`, clusters), raise
    /// `rtx_timeout_ns` to the longest round trip the network can impose
    /// without dropping anything (every queue on the longest path full):
    /// a shorter timeout fires on packets that are queued, not lost, and
    /// its retransmissions add to the queue (issue #55). `false`: use
    /// `rtx_timeout_ns` as given.
    pub rtx_timeout_covers_queues: bool,
    /// Consecutive timeouts without any word from the receiver (an ACK,
    /// NACK, PULL or GRANT for the message) before the sender gives up.
    pub max_timeouts: u32,
    /// How long the reassembly module keeps a message's state after its last
    /// packet: an incomplete message is discarded, a completed one is
    /// forgotten. Completed messages are remembered so that a retransmitted
    /// duplicate is acknowledged again instead of delivered twice; the
    /// default, `(max_timeouts + 1) x rtx_timeout`, outlasts every
    /// retransmission of the sender. 0 = that default.
    pub rx_timeout_ns: u64,
    pub max_tx_messages: u32,
    pub max_rx_messages: u32,
    pub bdp_packets: u16,
    pub homa_overcommit: u32,
    pub scheduler_slots: u32,
    pub buffer_classes: Vec<SizeClass>,
}

impl Default for TransportConfig {
    fn default() -> Self {
        TransportConfig {
            protocol: Protocol::None,
            latencies: None,
            reassembly_ps: REASSEMBLY_PS,
            packetize_ps: PACKETIZE_PS,
            packet_generator_ps: PACKET_GENERATOR_PS,
            timer_check_ps: TIMER_CHECK_PS,
            rtx_timeout_ns: RTX_TIMEOUT_NS,
            rtx_timeout_covers_queues: true,
            max_timeouts: MAX_TIMEOUTS,
            rx_timeout_ns: 0,
            max_tx_messages: MAX_TX_MESSAGES,
            max_rx_messages: MAX_RX_MESSAGES,
            bdp_packets: BDP_PACKETS,
            homa_overcommit: HOMA_OVERCOMMIT,
            scheduler_slots: SCHEDULER_SLOTS,
            buffer_classes: default_buffer_classes(),
        }
    }
}

impl TransportConfig {
    /// The configuration with `protocol`, everything else default.
    pub fn with_protocol(protocol: Protocol) -> Self {
        TransportConfig {
            protocol,
            ..Default::default()
        }
    }

    /// Checks every field; the error names the field.
    pub fn validate(&self) -> Result<(), TransportConfigError> {
        if self.rtx_timeout_ns == 0 {
            return Err(invalid("rtx_timeout_ns", 0, "must be positive"));
        }
        if self.timer_check_ps == 0 {
            return Err(invalid("timer_check_ps", 0, "must be positive"));
        }
        for (key, ps) in [
            ("reassembly_ps", self.reassembly_ps),
            ("packetize_ps", self.packetize_ps),
            ("packet_generator_ps", self.packet_generator_ps),
            ("timer_check_ps", self.timer_check_ps),
        ]
        .into_iter()
        .chain(self.latencies.iter().flat_map(|l| {
            [
                ("latencies.ingress_ps", l.ingress_ps),
                ("latencies.egress_ps", l.egress_ps),
            ]
        })) {
            if SimDuration::try_from_ps(ps).is_err() {
                return Err(invalid(key, ps, TOO_LONG));
            }
        }
        if SimDuration::try_from_ns(self.rtx_timeout_ns).is_err() {
            return Err(invalid("rtx_timeout_ns", self.rtx_timeout_ns, TOO_LONG));
        }
        let rx_timeout = (self.max_timeouts as u64 + 1).checked_mul(self.rtx_timeout_ns);
        if self.rx_timeout_ns == 0
            && rx_timeout.is_none_or(|t| SimDuration::try_from_ns(t).is_err())
        {
            return Err(invalid(
                "max_timeouts",
                self.max_timeouts,
                "(max_timeouts + 1) x rtx_timeout_ns, the default rx_timeout_ns, is too long for the simulated time base",
            ));
        }
        if SimDuration::try_from_ns(self.rx_timeout_ns).is_err() {
            return Err(invalid("rx_timeout_ns", self.rx_timeout_ns, TOO_LONG));
        }
        if !(1..=1 << 14).contains(&self.max_tx_messages) {
            return Err(invalid(
                "max_tx_messages",
                self.max_tx_messages,
                "must be between 1 and 16384 (the 16-bit message id: low bits name the message, the rest count reuses)",
            ));
        }
        if !(1..=1 << 16).contains(&self.max_rx_messages) {
            return Err(invalid(
                "max_rx_messages",
                self.max_rx_messages,
                "must be between 1 and 65536",
            ));
        }
        if self.bdp_packets == 0 {
            return Err(invalid("bdp_packets", 0, "must be at least 1"));
        }
        if self.homa_overcommit == 0 {
            return Err(invalid("homa_overcommit", 0, "must be at least 1"));
        }
        if self.scheduler_slots == 0 {
            return Err(invalid("scheduler_slots", 0, "must be at least 1"));
        }
        crate::buffers::BufferPool::check(&self.buffer_classes)?;
        Ok(())
    }

    /// The largest message this transport carries with payloads of
    /// `mtu_payload` bytes per packet (as [`crate::NanoTransport::max_message_bytes`]).
    pub fn largest_message(&self, mtu_payload: u32) -> u32 {
        let largest_buffer = self.buffer_classes.last().map_or(0, |c| c.bytes);
        largest_buffer
            .min(crate::reassembly::MAX_PACKETS.saturating_mul(mtu_payload))
            .min(u16::MAX as u32)
    }

    /// Host memory of one transport that has used every message id and
    /// buffer, in bytes (an estimate: tables, timers, both buffer pools).
    pub fn busy_memory_estimate(&self) -> u64 {
        let pool: u64 = self
            .buffer_classes
            .iter()
            .map(|c| (c.bytes as u64 + 12) * c.count as u64)
            .sum();
        // Per receive id: message state, timer, heap items, id queue,
        // table entry and the program's registers; per transmit id: the
        // same for a larger state.
        self.max_rx_messages as u64 * 160 + self.max_tx_messages as u64 * 240 + 2 * pool
    }

    /// The reassembly state timeout in ns (see `rx_timeout_ns`).
    pub fn rx_timeout_ns(&self) -> u64 {
        if self.rx_timeout_ns > 0 {
            self.rx_timeout_ns
        } else {
            (self.max_timeouts as u64 + 1) * self.rtx_timeout_ns
        }
    }
}

/// The link the transport sends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxLink {
    pub gbps: u64,
    /// Bytes a frame occupies on the wire beyond its own (preamble and
    /// inter-frame gap: 20).
    pub overhead_bytes: u64,
}

impl TxLink {
    /// Time a frame of `len` bytes occupies the link.
    pub fn frame_time(&self, len: usize) -> nanopu_sim::SimDuration {
        nanopu_sim::SimDuration::serialization(len as u64 + self.overhead_bytes, self.gbps)
    }
}
