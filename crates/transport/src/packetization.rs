//! The packetization module (NanoTransport §3.4, §4.2): outgoing messages
//! are stored for retransmission and split into packets; per-message state
//! decides which packet may leave next.
//!
//! Per message: `deliveredBitmap`, `credit`, `txBitmap`, `maxTxPktOffset`
//! and `timeoutCnt` as in §3.4, updated by `DeliveredEvent` (Algorithm 1),
//! `CreditTxEvent` (Algorithm 2) and `TimeoutEvent` (Algorithm 3). "Emit"
//! moves packets into `pending`, from which the arbiter takes the lowest
//! offset; messages with pending packets are served round-robin, a packet
//! at a time, in the order their packets are ready (the paper does not say
//! how messages share the link).
//!
//! Message ids: the low bits of `tx_msg_id` index the message table, the
//! high bits count how often that entry was reused, so that a late
//! acknowledgement for an earlier message never touches a newer one and a
//! receiver still remembering an earlier message never takes a new one
//! for a duplicate. Free entries are reused oldest first.

use crate::buffers::{BufferError, BufferHandle, BufferPool, SizeClass};
use crate::ids::IdQueue;
use crate::metadata::{EgressMetadata, TxMsgId};
use crate::timer::TimerModule;
use crate::words::append_le_bytes;
use nanopu_sim::{SimDuration, SimTime};
use nanopu_wire::Flags;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// A message from a core, to be sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutMessage {
    pub dst_ip: u32,
    pub dst_port: u16,
    pub src_port: u16,
    pub len: u16,
    /// Payload words, little-endian (as the core wrote them); bytes beyond
    /// `len` are not sent, bytes missing below it are sent as zeros. Kept
    /// (not copied) until the message is acknowledged or given up.
    pub payload: Vec<u64>,
    /// The caller's name for the message, handed back in its [`TxOutcome`]
    /// (not sent).
    pub tag: u64,
}

impl OutMessage {
    /// The message, borrowed.
    pub fn as_ref(&self) -> OutMessageRef<'_> {
        OutMessageRef {
            dst_ip: self.dst_ip,
            dst_port: self.dst_port,
            src_port: self.src_port,
            len: self.len,
            payload: &self.payload,
            tag: self.tag,
        }
    }
}

/// A message from a core, borrowed (see [`OutMessage`]): senders that keep
/// nothing need not copy the payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutMessageRef<'a> {
    pub dst_ip: u32,
    pub dst_port: u16,
    pub src_port: u16,
    pub len: u16,
    /// Payload words, little-endian; bytes beyond `len` are not sent, bytes
    /// missing below it are sent as zeros.
    pub payload: &'a [u64],
    pub tag: u64,
}

impl OutMessageRef<'_> {
    /// The message, owned.
    pub fn to_owned(&self) -> OutMessage {
        OutMessage {
            dst_ip: self.dst_ip,
            dst_port: self.dst_port,
            src_port: self.src_port,
            len: self.len,
            payload: self.payload.to_vec(),
            tag: self.tag,
        }
    }
}

/// The packetization of a sender that keeps nothing for retransmission (a
/// lossless program, the built-in load generator): a message is split into
/// all its packets at once, one MTU of payload each (one packet for an
/// empty message), named by a wrapping message counter.
#[derive(Clone, Debug, Default)]
pub struct WholeMessages {
    mtu: u32,
    next_id: TxMsgId,
    payload: Vec<u8>,
}

impl WholeMessages {
    pub fn new(mtu: u32) -> WholeMessages {
        WholeMessages {
            mtu,
            next_id: 0,
            payload: Vec::new(),
        }
    }

    /// Each packet of `msg`, in order: its egress metadata and its payload.
    pub fn packetize(
        &mut self,
        msg: &OutMessageRef<'_>,
        mut packet: impl FnMut(&EgressMetadata, &[u8]),
    ) {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        let mtu = self.mtu as usize;
        let len = msg.len as usize;
        let packets = len.div_ceil(mtu).max(1);
        for p in 0..packets {
            let (start, end) = ((p * mtu).min(len), ((p + 1) * mtu).min(len));
            self.payload.clear();
            append_le_bytes(msg.payload, start, end, &mut self.payload);
            let meta = EgressMetadata {
                remote_ip: msg.dst_ip,
                remote_port: msg.dst_port,
                msg_len: msg.len,
                pkt_offset: p as u16,
                local_port: msg.src_port,
                tx_msg_id: id,
                credit: 0,
                rank: 0,
                flags: Flags::DATA,
                is_new_msg: p == 0,
                is_rtx: false,
            };
            packet(&meta, &self.payload);
        }
    }

    /// The frames of `msg` sent from `src_ip`, with the headers
    /// [`crate::metadata::EgressHeaders::from_metadata`] fills, each
    /// written into a buffer from `buffer` (its contents replaced).
    pub fn frames(
        &mut self,
        src_ip: u32,
        msg: &OutMessageRef<'_>,
        mut buffer: impl FnMut() -> Vec<u8>,
        mut frame: impl FnMut(Vec<u8>),
    ) {
        self.packetize(msg, |meta, payload| {
            let mut f = buffer();
            crate::nanotransport::build_frame(
                src_ip,
                meta.remote_ip,
                &crate::metadata::EgressHeaders::from_metadata(meta),
                payload,
                &mut f,
            );
            frame(f)
        });
    }

    /// [`WholeMessages::frames`] with message id `id` (a sender that names
    /// its messages per connection); the counter is left as it was.
    pub fn frames_as(
        &mut self,
        id: TxMsgId,
        src_ip: u32,
        msg: &OutMessageRef<'_>,
        buffer: impl FnMut() -> Vec<u8>,
        frame: impl FnMut(Vec<u8>),
    ) {
        let next = std::mem::replace(&mut self.next_id, id);
        self.frames(src_ip, msg, buffer, frame);
        self.next_id = next;
    }
}

/// Payload vectors kept for reuse (enough for a burst of sends).
const SPARE_PAYLOADS: usize = 64;

/// A message whose packets were all delivered, or that was given up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxOutcome {
    /// The [`OutMessage::tag`] it was sent with.
    pub tag: u64,
    pub tx_msg_id: TxMsgId,
    pub dst_ip: u32,
    pub dst_port: u16,
    pub src_port: u16,
    pub len: u16,
}

#[derive(Clone, Copy, Debug)]
struct TxMsg {
    active: bool,
    id: TxMsgId,
    dst_ip: u32,
    dst_port: u16,
    src_port: u16,
    msg_len: u16,
    packets: u16,
    buffer: Option<BufferHandle>,
    /// `deliveredBitmap`.
    delivered: u64,
    /// `txBitmap`: packets to (re)send once credit allows.
    tx: u64,
    /// Emitted to the arbiter, not yet sent.
    pending: u64,
    /// Sent at least once (to flag retransmissions).
    sent: u64,
    credit: u16,
    /// `maxTxPktOffset` + 1: packets below it have been emitted.
    max_tx: u16,
    timeout_cnt: u32,
    /// The receiver said something about the message (an ACK, NACK, PULL
    /// or GRANT: a `DeliveredEvent` or `CreditTxEvent` for it) since the
    /// last timeout: it is reachable.
    heard: bool,
    tag: u64,
    /// In the arbiter's round-robin.
    in_ready: bool,
}

const EMPTY: TxMsg = TxMsg {
    active: false,
    id: 0,
    dst_ip: 0,
    dst_port: 0,
    src_port: 0,
    msg_len: 0,
    packets: 0,
    buffer: None,
    delivered: 0,
    tx: 0,
    pending: 0,
    sent: 0,
    credit: 0,
    max_tx: 0,
    timeout_cnt: 0,
    heard: false,
    tag: 0,
    in_ready: false,
};

fn ones(n: u16) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

/// What a `TimeoutEvent` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeoutOutcome {
    /// Packets were marked for retransmission (possibly none).
    Retransmit,
    /// The message exceeded its timeouts and was cleared.
    Failed(TxOutcome),
}

/// Messages being sent.
pub struct Packetization {
    msgs: Vec<TxMsg>,
    free: IdQueue,
    index_bits: u32,
    /// Accounts for the buffers messages take (which fit, which wait); the
    /// bytes themselves are the messages' words in `payloads`.
    buffers: BufferPool,
    /// Each entry's message payload (the sender's words, kept for
    /// retransmission until the message is cleared).
    payloads: Vec<Vec<u64>>,
    timers: TimerModule<u16>,
    mtu: u32,
    rtx_timeout: SimDuration,
    max_timeouts: u32,
    /// Messages with pending packets, by the time their next packet is out
    /// of the buffer, then in round-robin order (a sequence number).
    ready: BinaryHeap<Reverse<(SimTime, u64, u16)>>,
    ready_seq: u64,
    /// Messages waiting for a free entry or buffer (the global TX queue).
    pub waiting: VecDeque<(OutMessage, SimTime)>,
    pub waiting_peak: usize,
    /// Payload vectors of cleared messages, for the next sender to fill:
    /// see [`Packetization::take_payload`].
    spare_payloads: Vec<Vec<u64>>,
    /// Events naming a message that is no longer here (late ACKs, ...).
    pub stale_events: u64,
}

impl Packetization {
    pub fn new(
        max_messages: u32,
        classes: &[SizeClass],
        mtu: u32,
        rtx_timeout: SimDuration,
        max_timeouts: u32,
        timer_check: SimDuration,
    ) -> Result<Packetization, BufferError> {
        let n = max_messages as usize;
        let index_bits = (max_messages as u64).next_power_of_two().trailing_zeros();
        Ok(Packetization {
            // Grown on first use of a slot: an idle host costs nothing.
            msgs: Vec::new(),
            free: IdQueue::new(max_messages),
            index_bits,
            buffers: BufferPool::unbacked(classes)?,
            payloads: Vec::new(),
            timers: TimerModule::new(n, timer_check),
            mtu,
            rtx_timeout,
            max_timeouts,
            ready: BinaryHeap::new(),
            ready_seq: 0,
            waiting: VecDeque::new(),
            waiting_peak: 0,
            spare_payloads: Vec::new(),
            stale_events: 0,
        })
    }

    fn slot_of(&self, id: TxMsgId) -> Option<usize> {
        let slot = (id as usize) & ((1usize << self.index_bits) - 1);
        let m = self.msgs.get(slot)?;
        (m.active && m.id == id).then_some(slot)
    }

    /// Takes a message from a core at `now`; its first packets may leave
    /// `packetize` later. Returns false if it has to wait for an entry or a
    /// buffer (it is then kept in `waiting`).
    pub fn new_message(
        &mut self,
        msg: OutMessage,
        initial_credit: impl Fn(u16) -> u16,
        now: SimTime,
        packetize: SimDuration,
    ) -> bool {
        if !self.waiting.is_empty() {
            self.waiting.push_back((msg, now));
            self.waiting_peak = self.waiting_peak.max(self.waiting.len());
            return false;
        }
        match self.admit(msg, &initial_credit, now, packetize) {
            Ok(()) => true,
            Err(msg) => {
                self.waiting.push_back((msg, now));
                self.waiting_peak = self.waiting_peak.max(self.waiting.len());
                false
            }
        }
    }

    /// An empty payload vector to build the next [`OutMessage`] in (one an
    /// admitted message no longer needs, if there is one).
    pub fn take_payload(&mut self) -> Vec<u64> {
        self.spare_payloads.pop().unwrap_or_default()
    }

    /// Admits waiting messages while entries and buffers allow.
    pub fn admit_waiting(
        &mut self,
        initial_credit: impl Fn(u16) -> u16,
        now: SimTime,
        packetize: SimDuration,
    ) {
        while let Some((msg, _)) = self.waiting.pop_front() {
            if let Err(msg) = self.admit(msg, &initial_credit, now, packetize) {
                self.waiting.push_front((msg, now));
                return;
            }
        }
    }

    fn admit(
        &mut self,
        msg: OutMessage,
        initial_credit: &impl Fn(u16) -> u16,
        now: SimTime,
        packetize: SimDuration,
    ) -> Result<(), OutMessage> {
        let Some(slot) = self.free.front().map(|s| s as u16) else {
            return Err(msg);
        };
        let Some(buffer) = self.buffers.alloc((msg.len as u32).max(1)) else {
            return Err(msg);
        };
        self.free.pop_front();
        if slot as usize == self.msgs.len() {
            self.msgs.push(EMPTY);
            self.payloads.push(Vec::new());
        }
        let old = self.msgs[slot as usize].id;
        let generation = (old >> self.index_bits).wrapping_add(1);
        let id = ((generation as u32) << self.index_bits | slot as u32) as u16;
        let packets = (msg.len as u32).div_ceil(self.mtu).max(1) as u16;
        self.msgs[slot as usize] = TxMsg {
            active: true,
            id,
            dst_ip: msg.dst_ip,
            dst_port: msg.dst_port,
            src_port: msg.src_port,
            msg_len: msg.len,
            packets,
            buffer: Some(buffer),
            tx: ones(packets),
            credit: initial_credit(packets),
            tag: msg.tag,
            ..EMPTY
        };
        // The slot's previous vector went back to the spares when it was
        // cleared.
        self.payloads[slot as usize] = msg.payload;
        self.release(slot as usize, now, packetize);
        let max_tx = self.msgs[slot as usize].max_tx;
        // ScheduleEvent of the egress timer module (§3.5).
        self.timers
            .schedule(slot as usize, now + self.rtx_timeout, max_tx);
        Ok(())
    }

    /// Emits what `txBitmap` and the credit allow (Algorithm 2, lines 9-12).
    fn release(&mut self, slot: usize, now: SimTime, packetize: SimDuration) {
        let m = &mut self.msgs[slot];
        let sendable = m.tx & ones(m.credit) & !m.delivered;
        self.emit(slot, sendable, now, packetize);
    }

    fn emit(&mut self, slot: usize, pkts: u64, now: SimTime, packetize: SimDuration) {
        if pkts == 0 {
            return;
        }
        let m = &mut self.msgs[slot];
        m.pending |= pkts;
        m.tx &= !pkts;
        let highest = 64 - pkts.leading_zeros() as u16;
        m.max_tx = m.max_tx.max(highest);
        if !m.in_ready {
            m.in_ready = true;
            self.ready_seq += 1;
            self.ready
                .push(Reverse((now + packetize, self.ready_seq, slot as u16)));
        }
    }

    /// The receiver spoke about the message in `slot` at `now`: it is
    /// reachable, and its timer restarts (a `ReScheduleEvent`, as every
    /// data packet is for the reassembly timer). The timeout thus measures
    /// silence, not the message's age: a receiver still acknowledging,
    /// pulling or granting is never timed out (issue #55).
    fn heard(&mut self, slot: usize, now: SimTime) {
        self.msgs[slot].heard = true;
        self.timers.reschedule(slot, now + self.rtx_timeout);
    }

    /// `DeliveredEvent` (Algorithm 1) at `now`. Returns the message if now
    /// complete.
    pub fn delivered(&mut self, id: TxMsgId, ack_bitmap: u64, now: SimTime) -> Option<TxOutcome> {
        let Some(slot) = self.slot_of(id) else {
            self.stale_events += 1;
            return None;
        };
        let m = &mut self.msgs[slot];
        m.delivered |= ack_bitmap & ones(m.packets);
        m.pending &= !m.delivered;
        if m.delivered == ones(m.packets) {
            return Some(self.clear(slot));
        }
        self.heard(slot, now);
        None
    }

    /// `CreditTxEvent` (Algorithm 2).
    pub fn credit_tx(
        &mut self,
        ev: &crate::program::CreditTx,
        now: SimTime,
        packetize: SimDuration,
    ) {
        let Some(slot) = self.slot_of(ev.tx_msg_id) else {
            self.stale_events += 1;
            return;
        };
        self.heard(slot, now);
        let m = &mut self.msgs[slot];
        m.tx |= ev.rtx_bitmap & ones(m.packets) & !m.delivered & !m.pending;
        if let Some(c) = ev.new_credit {
            m.credit = m.credit.max(c.min(m.packets));
        }
        if ev.allow_tx {
            self.release(slot, now, packetize);
        }
    }

    /// When the egress timer module next fires.
    pub fn next_timer(&self) -> Option<SimTime> {
        self.timers.next_fire()
    }

    /// Runs the egress timer scan to `now` and applies `TimeoutEvent`
    /// (Algorithm 3) to each expired message; failures go to `failed`.
    pub fn poll_timers(
        &mut self,
        now: SimTime,
        packetize: SimDuration,
        fired: &mut Vec<(usize, u16, SimTime)>,
        failed: &mut Vec<TxOutcome>,
    ) -> u64 {
        fired.clear();
        self.timers.poll(now, fired);
        let mut timeouts = 0;
        for &(slot, rtx_offset, _) in fired.iter() {
            if !self.msgs[slot].active {
                continue;
            }
            timeouts += 1;
            if let TimeoutOutcome::Failed(o) = self.timeout(slot, rtx_offset, now, packetize) {
                failed.push(o);
            }
        }
        timeouts
    }

    fn timeout(
        &mut self,
        slot: usize,
        rtx_offset: u16,
        now: SimTime,
        packetize: SimDuration,
    ) -> TimeoutOutcome {
        let max_timeouts = self.max_timeouts;
        let m = &mut self.msgs[slot];
        // Progress resets the count: a packet sent beyond `rtx_offset`
        // (Algorithm 3), or, our addition, any word from the receiver about
        // the message since the last timeout. Only a receiver that says
        // nothing for `max_timeouts + 1` timeouts in a row is given up on:
        // one still pulling or granting, however slowly, is reachable.
        let progress = m.heard || m.max_tx > rtx_offset;
        m.heard = false;
        if progress {
            m.timeout_cnt = 0;
        } else if m.timeout_cnt >= max_timeouts {
            return TimeoutOutcome::Failed(self.clear(slot));
        } else {
            m.timeout_cnt += 1;
        }
        // Every packet sent is at least one timeout old (sending restarts
        // the timer), so every one not acknowledged is resent, except those
        // the receiver NACKed (in `txBitmap` beyond the credit): it knows of
        // them and will pull them.
        let mut rtx = !m.delivered & ones(m.max_tx) & !m.pending & !m.tx;
        if rtx == 0 && m.pending == 0 && m.max_tx > 0 {
            // Everything sent was delivered or NACKed but the message is
            // incomplete: the credit to go on was lost. Probe with the last
            // packet sent so the receiver answers with its current credit
            // (our addition: Algorithm 3 would wait for the failure).
            rtx = 1u64 << (m.max_tx - 1);
        }
        self.emit(slot, rtx, now, packetize);
        let m = &self.msgs[slot];
        self.timers.schedule(slot, now + self.rtx_timeout, m.max_tx);
        TimeoutOutcome::Retransmit
    }

    /// `ClearStateForMsg`: frees the entry, its buffer and its timer.
    fn clear(&mut self, slot: usize) -> TxOutcome {
        let m = &mut self.msgs[slot];
        let out = TxOutcome {
            tag: m.tag,
            tx_msg_id: m.id,
            dst_ip: m.dst_ip,
            dst_port: m.dst_port,
            src_port: m.src_port,
            len: m.msg_len,
        };
        if let Some(b) = m.buffer.take() {
            let _ = self.buffers.free(b);
        }
        m.active = false;
        let mut payload = std::mem::take(&mut self.payloads[slot]);
        if self.spare_payloads.len() < SPARE_PAYLOADS {
            payload.clear();
            self.spare_payloads.push(payload);
        }
        m.pending = 0;
        // CancelEvent (§3.5).
        self.timers.cancel(slot);
        // Still in `ready`: dropped when the arbiter reaches it.
        self.free.push_back(slot as u32);
        out
    }

    /// When the arbiter's next data packet is out of its buffer, if any.
    pub fn next_ready(&mut self) -> Option<SimTime> {
        while let Some(&Reverse((at, _, slot))) = self.ready.peek() {
            let m = &self.msgs[slot as usize];
            if m.active && m.pending != 0 {
                return Some(at);
            }
            self.msgs[slot as usize].in_ready = false;
            self.ready.pop();
        }
        None
    }

    /// Takes the next data packet (the lowest pending offset of the message
    /// at the head of the round-robin): returns its metadata and appends
    /// its payload to `payload` (a frame being built, say).
    pub fn next_packet(&mut self, now: SimTime, payload: &mut Vec<u8>) -> Option<EgressMetadata> {
        let at = self.next_ready()?;
        if at > now {
            return None;
        }
        let Reverse((_, _, slot)) = self.ready.pop().expect("checked");
        let mtu = self.mtu as usize;
        let m = &mut self.msgs[slot as usize];
        let offset = m.pending.trailing_zeros() as u16;
        let bit = 1u64 << offset;
        m.pending &= !bit;
        let is_rtx = m.sent & bit != 0;
        m.sent |= bit;
        let start = offset as usize * mtu;
        let end = (start + mtu).min(m.msg_len as usize);
        if m.buffer.is_some() {
            append_le_bytes(&self.payloads[slot as usize], start, end, payload);
        }
        let meta = EgressMetadata {
            remote_ip: m.dst_ip,
            remote_port: m.dst_port,
            msg_len: m.msg_len,
            pkt_offset: offset,
            local_port: m.src_port,
            tx_msg_id: m.id,
            credit: m.credit,
            rank: 0,
            flags: Flags::DATA,
            is_new_msg: offset == 0 && !is_rtx,
            is_rtx,
        };
        if m.pending != 0 {
            self.ready_seq += 1;
            self.ready.push(Reverse((now, self.ready_seq, slot)));
        } else {
            m.in_ready = false;
        }
        // A packet leaves: the timer restarts, so that it expires one
        // timeout after the last packet sent (not after the message waited
        // behind others at the arbiter).
        self.timers
            .reschedule(slot as usize, now + self.rtx_timeout);
        Some(meta)
    }

    /// Message entries in use.
    pub fn ids_in_use(&self) -> usize {
        self.free.size() - self.free.len()
    }

    pub fn buffers_in_use(&self) -> usize {
        self.buffers.in_use()
    }

    pub fn timers_armed(&self) -> usize {
        self.timers.armed()
    }
}
