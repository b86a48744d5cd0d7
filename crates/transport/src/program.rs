//! How a transport program is written: the [`TransportProgram`] trait and
//! the events and externs it may use (NanoTransport §3).
//!
//! A program is the P4 of NanoTransport's two PISA pipelines plus the
//! programmable packet generator. It sees packets and metadata, keeps its
//! own state in [`crate::state`] registers and a
//! [`crate::scheduler::PriorityScheduler`], and acts on the fixed modules
//! only through the externs and events below:
//!
//! | paper | here |
//! |---|---|
//! | `GetRxMsgInfo` extern | [`IngressExterns::get_rx_msg_info`] |
//! | `CtrlPktEvent` | [`IngressExterns::ctrl_pkt_event`] → [`TransportProgram::generate`] |
//! | `DeliveredEvent` | [`IngressExterns::delivered_event`] |
//! | `CreditTxEvent` | [`IngressExterns::credit_tx_event`] |
//! | `Drop()` / to reassembly | [`IngressVerdict`] |
//! | (the fixed modules' services) | [`TransportProgram::delivery`] |
//! | egress `FillHeadersFromMetaData` | [`EgressHeaders::from_metadata`] |
//!
//! It cannot reach the NIC's internals: the externs borrow the fixed
//! modules for the duration of one call and expose nothing else. Timeouts
//! (`TimeoutEvent`, `ScheduleEvent`, `ReScheduleEvent`, `CancelEvent`) are
//! handled by the fixed modules, as in the paper (§3.4.3, §3.5).
//!
//! To add a protocol, implement [`TransportProgram`] and hand it to
//! [`crate::NanoTransport::with_program`]; `crate::protocols` has NDP, Homa
//! and Homa-Tr as examples.

use crate::config::StageLatencies;
use crate::metadata::{
    EgressHeaders, EgressMetadata, GetRxMsgInfoReq, GetRxMsgInfoResp, IngressMetadata,
    PacketHeaders, RxMsgId, TxMsgId,
};
use crate::reassembly::Reassembly;
use nanopu_sim::{SimDuration, SimTime};

/// What the ingress pipeline does with a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IngressVerdict {
    /// A data packet for the reassembly module, with its metadata (Listing 1).
    Reassemble(IngressMetadata),
    /// Consumed or discarded here (control packets, trimmed packets).
    Drop,
    /// A data packet the program refuses, counted by reason in
    /// [`crate::TransportStats`].
    Refuse(Refusal),
}

/// Why a data packet was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The packet was already received.
    Duplicate,
    /// The packet contradicts its message (another length).
    Inconsistent,
    /// The reassembly module had no message id or buffer for it.
    NoResources,
}

/// What a program needs from the fixed modules.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Delivery {
    /// Reliable delivery (NDP, Homa): the packetization module keeps a
    /// message for retransmission until every packet is acknowledged and
    /// releases packets under the program's credit; the arbiter paces them
    /// at the link rate; the reassembly module remembers completed messages
    /// to recognise duplicates; both directions run timers.
    #[default]
    Reliable,
    /// A lossless wire (the fixed-latency stand-in): a message is split
    /// into all its packets when it arrives, they leave together (the link
    /// spaces them) and nothing is kept; the reassembly module forgets a
    /// message once complete; no timers, no acknowledgements, no credit.
    Lossless,
}

/// Arguments of `CreditTxEvent` (Algorithm 2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CreditTx {
    pub tx_msg_id: TxMsgId,
    /// Packets to mark for retransmission (`rtxFlag`/`rtxBitmap`; bit i is
    /// packet i); 0 for none.
    pub rtx_bitmap: u64,
    /// New credit (`creditUpdateFlag`/`newCredit`): packets with offset
    /// below it may be sent. Credit never decreases.
    pub new_credit: Option<u16>,
    /// Emit what the credit allows now (`allowTxFlag`).
    pub allow_tx: bool,
}

/// Read-only facts a program may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProgramParams {
    /// Payload bytes per packet.
    pub mtu_payload: u32,
    /// One bandwidth-delay product in packets (the unscheduled window).
    pub bdp_packets: u16,
    /// Messages the reassembly module can hold (size for per-message state).
    pub max_rx_messages: u32,
    /// Messages the packetization module can hold.
    pub max_tx_messages: u32,
    /// Homa's degree of overcommitment.
    pub homa_overcommit: u32,
    /// Slots of the priority scheduler.
    pub scheduler_slots: u32,
    /// Time one MTU-sized packet takes on this host's link (NDP's PULL
    /// pacing interval).
    pub mtu_packet_time: SimDuration,
}

impl ProgramParams {
    /// The facts for a transport with configuration `cfg`, `mtu_payload`
    /// bytes per packet, sending on `link` (for sizing a program's state
    /// before [`crate::NanoTransport::with_program`]).
    pub fn new(
        cfg: &crate::config::TransportConfig,
        mtu_payload: u32,
        link: crate::config::TxLink,
    ) -> ProgramParams {
        ProgramParams {
            mtu_payload,
            bdp_packets: cfg.bdp_packets,
            max_rx_messages: cfg.max_rx_messages,
            max_tx_messages: cfg.max_tx_messages,
            homa_overcommit: cfg.homa_overcommit,
            scheduler_slots: cfg.scheduler_slots,
            mtu_packet_time: link.frame_time(nanopu_wire::frame::HEADER_LEN + mtu_payload as usize),
        }
    }
}

/// Events the ingress pipeline raised, applied by the fixed modules after
/// the pipeline (the program cannot see their internals).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IngressEvent {
    Ctrl(EgressMetadata),
    Delivered { tx_msg_id: TxMsgId, ack_bitmap: u64 },
    CreditTx(CreditTx),
}

/// The externs and events available to the ingress pipeline.
pub struct IngressExterns<'a> {
    pub(crate) reassembly: &'a mut Reassembly,
    pub(crate) events: &'a mut Vec<IngressEvent>,
    pub(crate) params: &'a ProgramParams,
    pub(crate) now: SimTime,
}

impl IngressExterns<'_> {
    /// `GetRxMsgInfo` (§3.3.1): finds or allocates the message's state in
    /// the reassembly module and, if `mark_received`, marks the packet.
    pub fn get_rx_msg_info(&mut self, req: GetRxMsgInfoReq) -> GetRxMsgInfoResp {
        self.reassembly.get_rx_msg_info(&req, self.now)
    }

    /// `CtrlPktEvent` (§3.1): a mirrored packet with `meta` for the packet
    /// generator ([`TransportProgram::generate`]).
    pub fn ctrl_pkt_event(&mut self, meta: EgressMetadata) {
        self.events.push(IngressEvent::Ctrl(meta));
    }

    /// `DeliveredEvent` (§3.4.1, Algorithm 1): the packets of `ack_bitmap`
    /// of the local message `tx_msg_id` reached the receiver.
    pub fn delivered_event(&mut self, tx_msg_id: TxMsgId, ack_bitmap: u64) {
        self.events.push(IngressEvent::Delivered {
            tx_msg_id,
            ack_bitmap,
        });
    }

    /// `CreditTxEvent` (§3.4.2, Algorithm 2).
    pub fn credit_tx_event(&mut self, ev: CreditTx) {
        self.events.push(IngressEvent::CreditTx(ev));
    }

    pub fn params(&self) -> &ProgramParams {
        self.params
    }

    /// When the packet entered the pipeline.
    pub fn now(&self) -> SimTime {
        self.now
    }
}

/// The programmable packet generator's view (§3.1, §4.1): it turns a
/// `CtrlPktEvent` into control packets, now or at a later (paced) time.
pub struct PacketGenerator<'a> {
    pub(crate) out: &'a mut Vec<(SimTime, EgressMetadata)>,
    pub(crate) params: &'a ProgramParams,
    pub(crate) now: SimTime,
}

impl PacketGenerator<'_> {
    /// Sends a control packet with `meta` as soon as the arbiter can.
    pub fn emit(&mut self, meta: EgressMetadata) {
        self.out.push((self.now, meta));
    }

    /// Sends a control packet no earlier than `at` (pacing).
    pub fn emit_at(&mut self, at: SimTime, meta: EgressMetadata) {
        self.out.push((at.max(self.now), meta));
    }

    pub fn now(&self) -> SimTime {
        self.now
    }

    pub fn params(&self) -> &ProgramParams {
        self.params
    }
}

/// A transport protocol for NanoTransport's programmable modules.
pub trait TransportProgram: Send {
    /// A short name for reports (`ndp`, `homa`, ...).
    fn name(&self) -> &'static str;

    /// What the program needs from the fixed modules (default: reliable
    /// delivery, as NDP and Homa).
    fn delivery(&self) -> Delivery {
        Delivery::Reliable
    }

    /// The program's pipeline latencies (its stages: NanoTransport Table 1).
    fn latencies(&self) -> StageLatencies;

    /// The ingress pipeline: every packet that arrives for this host.
    fn ingress(&mut self, hdr: &PacketHeaders, x: &mut IngressExterns<'_>) -> IngressVerdict;

    /// The programmable packet generator, for each `CtrlPktEvent`.
    fn generate(&mut self, event: &EgressMetadata, g: &mut PacketGenerator<'_>);

    /// The egress pipeline: the headers of an outgoing packet.
    fn egress(&mut self, meta: &EgressMetadata) -> EgressHeaders {
        EgressHeaders::from_metadata(meta)
    }

    /// Credit a new message of `packets` packets starts with (packets it may
    /// send unscheduled).
    fn initial_credit(&self, packets: u16, params: &ProgramParams) -> u16 {
        packets.min(params.bdp_packets)
    }

    /// The reassembly module freed message `rx_msg_id` (delivered and
    /// forgotten, or timed out): per-message state of the program may be
    /// reset. An addition to the paper's events, so that a program's
    /// scheduler does not keep messages whose sender gave up.
    fn rx_message_freed(&mut self, _rx_msg_id: RxMsgId) {}

    /// Entries of the program's own per-message structures still in use
    /// (for leak checks once traffic stops).
    fn state_in_use(&self) -> usize {
        0
    }
}
