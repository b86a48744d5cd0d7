//! The reassembly module (NanoTransport §3.3, §4.2): packets of incoming
//! messages into buffers, in any order, with one `receivedBitmap` per
//! message and the `rx_msg_id_table` that names messages locally.
//!
//! State per message (an `rx_msg_id`): receiving (buffer held, ingress
//! timer armed, reset by every packet), then completed (buffer freed when
//! the message goes to the cores; the id and bitmap linger until the
//! timer expires so that a retransmitted duplicate is recognised, re-acked
//! and not delivered twice — a gap the paper leaves open; every duplicate
//! restarts the timer, so the state lives as long as its sender may still
//! retransmit), then free. An
//! incomplete message whose timer expires is discarded (§3.5). When every
//! id is taken, a new message's packets are refused (`fail`) and its sender
//! retries later: forgetting a completed message early could deliver a
//! duplicate twice.
//!
//! For a lossless program ([`Reassembly::lossless`], the stand-in for a
//! lossless wire, and the built-in load generator) there are no timers: a
//! message is forgotten as soon as it is complete, and an incomplete one is
//! kept until its last packet comes.

use crate::buffers::{BufferError, BufferHandle, BufferPool, SizeClass};
use crate::ids::IdQueue;
use crate::metadata::{GetRxMsgInfoReq, GetRxMsgInfoResp, IngressMetadata, RxMsgId, TxMsgId};
use crate::program::Refusal;
use crate::timer::TimerModule;
use crate::words::write_le_bytes;
use nanopu_sim::{SimDuration, SimTime};
use rustc_hash::FxHashMap;

/// Packets a message may have: one bit each in a 64-bit bitmap. With 1 KB
/// packets this covers every length the 16-bit `msg_len` allows.
pub const MAX_PACKETS: u32 = 64;

/// `rx_msg_id_table` key: sender address, sender port, sender's id.
type Key = (u32, u16, TxMsgId);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RxState {
    Free,
    Receiving { buffer: BufferHandle },
    Completed,
}

#[derive(Clone, Copy, Debug)]
struct RxMsg {
    state: RxState,
    key: Key,
    msg_len: u16,
    packets: u16,
    /// `receivedBitmap`.
    received: u64,
}

/// A message the reassembly module completed, for the cores.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RxMessage {
    pub src_ip: u32,
    pub src_port: u16,
    pub dst_port: u16,
    pub len: u16,
    /// The payload as the core reads it: little-endian words.
    pub payload: Vec<u64>,
}

/// What a reassembly timer expiry did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expired {
    /// An incomplete message was discarded.
    Incomplete(RxMsgId),
    /// A completed message was forgotten.
    Forgotten(RxMsgId),
}

/// Messages being received.
pub struct Reassembly {
    /// Fx hashing: the keys are a few small integers, and SipHash showed in
    /// every packet's profile (no adversary picks keys in a simulation).
    table: FxHashMap<Key, RxMsgId>,
    /// Ids `0..msgs.len()` (those ever used; grown on first use).
    msgs: Vec<RxMsg>,
    free_ids: IdQueue,
    /// Accounts for the buffers messages take (which fit); the bytes are
    /// gathered in `payloads`.
    buffers: BufferPool,
    /// Each receiving message's payload so far, as the little-endian words
    /// the cores will read: packets are written straight into it, and it is
    /// handed over whole when the message completes.
    payloads: Vec<Vec<u64>>,
    timers: TimerModule<()>,
    /// How long a message's state lives after its last packet; `None` for
    /// a lossless program (no timers: completed messages are forgotten at
    /// once).
    timeout: Option<SimDuration>,
    mtu: u32,
    /// Payload vectors handed back by [`Reassembly::recycle_payload`],
    /// reused for new messages.
    spare_payloads: Vec<Vec<u64>>,
    /// Packets stored for a message that is no longer receiving.
    pub stale_packets: u64,
}

fn all_ones(packets: u16) -> u64 {
    if packets >= 64 {
        u64::MAX
    } else {
        (1u64 << packets) - 1
    }
}

impl Reassembly {
    pub fn new(
        max_messages: u32,
        classes: &[SizeClass],
        mtu: u32,
        timeout: SimDuration,
        timer_check: SimDuration,
    ) -> Result<Reassembly, BufferError> {
        Self::build(max_messages, classes, mtu, Some(timeout), timer_check)
    }

    /// The module of a lossless program: no timers; a message is forgotten
    /// as soon as it is complete.
    pub fn lossless(
        max_messages: u32,
        classes: &[SizeClass],
        mtu: u32,
    ) -> Result<Reassembly, BufferError> {
        Self::build(max_messages, classes, mtu, None, SimDuration::from_ps(1))
    }

    fn build(
        max_messages: u32,
        classes: &[SizeClass],
        mtu: u32,
        timeout: Option<SimDuration>,
        timer_check: SimDuration,
    ) -> Result<Reassembly, BufferError> {
        let buffers = BufferPool::unbacked(classes)?;
        let n = max_messages as usize;
        Ok(Reassembly {
            table: FxHashMap::default(),
            msgs: Vec::new(),
            payloads: Vec::new(),
            free_ids: IdQueue::new(max_messages),
            buffers,
            timers: TimerModule::new(n, timer_check),
            timeout,
            mtu,
            spare_payloads: Vec::new(),
            stale_packets: 0,
        })
    }

    /// Payload vectors kept for reuse.
    const SPARE_PAYLOADS: usize = 64;

    /// Gives a delivered message's payload vector back for reuse.
    pub fn recycle_payload(&mut self, mut payload: Vec<u64>) {
        if self.spare_payloads.len() < Self::SPARE_PAYLOADS {
            payload.clear();
            self.spare_payloads.push(payload);
        }
    }

    /// A data packet of a lossless program, in one call: `GetRxMsgInfo`
    /// and, if the packet is new, storing its payload (at least the bytes
    /// its offset and the message length call for; more are ignored).
    /// Returns the message when complete.
    pub fn packet(
        &mut self,
        req: GetRxMsgInfoReq,
        local_port: u16,
        payload: &[u8],
        now: SimTime,
    ) -> Result<Option<RxMessage>, Refusal> {
        let start = req.pkt_offset as usize * self.mtu as usize;
        let expected = (req.msg_len as usize)
            .saturating_sub(start)
            .min(self.mtu as usize);
        if req.msg_len as u32 > self.largest_message() || payload.len() < expected {
            return Err(Refusal::Inconsistent);
        }
        let info = self.get_rx_msg_info(
            &GetRxMsgInfoReq {
                mark_received: true,
                ..req
            },
            now,
        );
        if info.inconsistent {
            return Err(Refusal::Inconsistent);
        }
        if info.fail {
            return Err(Refusal::NoResources);
        }
        if !info.is_new_pkt {
            return Err(Refusal::Duplicate);
        }
        Ok(self.store(
            &IngressMetadata {
                remote_ip: req.src_ip,
                remote_port: req.src_port,
                msg_len: req.msg_len,
                pkt_offset: req.pkt_offset,
                local_port,
                rx_msg_id: info.rx_msg_id,
                tx_msg_id: req.tx_msg_id,
                is_last_pkt: info.is_last_pkt,
            },
            payload,
            now,
        ))
    }

    /// Packets of a message of `len` bytes.
    pub fn packets_for(&self, len: u16) -> u16 {
        (len as u32).div_ceil(self.mtu).max(1) as u16
    }

    /// The largest message a buffer can hold.
    pub fn largest_message(&self) -> u32 {
        self.buffers.largest().min(MAX_PACKETS * self.mtu)
    }

    /// `GetRxMsgInfo` (Listing 3).
    pub fn get_rx_msg_info(&mut self, req: &GetRxMsgInfoReq, now: SimTime) -> GetRxMsgInfoResp {
        let key = (req.src_ip, req.src_port, req.tx_msg_id);
        let packets = self.packets_for(req.msg_len);
        let failed = GetRxMsgInfoResp {
            fail: true,
            packets,
            ..Default::default()
        };
        let inconsistent = GetRxMsgInfoResp {
            inconsistent: true,
            ..failed
        };
        if req.pkt_offset >= packets {
            return inconsistent;
        }
        let (id, is_new_msg) = match self.table.get(&key) {
            Some(&id) => (id, false),
            None => {
                let Some(id) = self.free_ids.front() else {
                    return failed;
                };
                let Some(buffer) = self.buffers.alloc(req.msg_len.max(1) as u32) else {
                    return failed;
                };
                self.free_ids.pop_front();
                let id = id as RxMsgId;
                self.table.insert(key, id);
                let m = RxMsg {
                    state: RxState::Receiving { buffer },
                    key,
                    msg_len: req.msg_len,
                    packets,
                    received: 0,
                };
                let mut payload = self.spare_payloads.pop().unwrap_or_default();
                payload.reserve((req.msg_len as usize).div_ceil(8));
                match self.msgs.get_mut(id as usize) {
                    Some(slot) => {
                        *slot = m;
                        self.payloads[id as usize] = payload;
                    }
                    None => {
                        self.msgs.push(m);
                        self.payloads.push(payload);
                    }
                }
                // ScheduleEvent of the ingress timer module (§3.5).
                if let Some(timeout) = self.timeout {
                    self.timers.schedule(id as usize, now + timeout, ());
                }
                (id, true)
            }
        };
        let m = &mut self.msgs[id as usize];
        if m.msg_len != req.msg_len {
            return inconsistent;
        }
        let bit = 1u64 << req.pkt_offset;
        let receiving = matches!(m.state, RxState::Receiving { .. });
        let is_new_pkt = receiving && m.received & bit == 0;
        if receiving && req.mark_received {
            m.received |= bit;
        }
        // ReScheduleEvent: every packet of the message resets its timer,
        // a duplicate of a completed message too: its sender is still
        // retransmitting (its acknowledgements have not all arrived), so
        // the message must be remembered for as long again, or a later
        // copy would be taken for a new message and delivered twice.
        if let Some(timeout) = self.timeout {
            self.timers.reschedule(id as usize, now + timeout);
        }
        let all = all_ones(m.packets);
        GetRxMsgInfoResp {
            fail: false,
            inconsistent: false,
            rx_msg_id: id,
            is_new_msg,
            is_new_pkt,
            is_last_pkt: receiving && req.mark_received && is_new_pkt && m.received == all,
            ack_no: (m.received.trailing_ones() as u16).min(m.packets),
            received: m.received.count_ones() as u16,
            packets: m.packets,
        }
    }

    /// Stores a data packet's payload; returns the message when `is_last_pkt`.
    pub fn store(
        &mut self,
        meta: &IngressMetadata,
        payload: &[u8],
        now: SimTime,
    ) -> Option<RxMessage> {
        let id = meta.rx_msg_id as usize;
        let Some(m) = self.msgs.get(id).copied() else {
            self.stale_packets += 1;
            return None;
        };
        let RxState::Receiving { buffer } = m.state else {
            self.stale_packets += 1;
            return None;
        };
        if m.key != (meta.remote_ip, meta.remote_port, meta.tx_msg_id) {
            self.stale_packets += 1;
            return None;
        }
        let start = meta.pkt_offset as usize * self.mtu as usize;
        // The buffer holds the whole message: what lies beyond it is not
        // stored.
        let n = payload
            .len()
            .min((m.msg_len as usize).saturating_sub(start));
        write_le_bytes(&mut self.payloads[id], start, &payload[..n]);
        if !meta.is_last_pkt {
            return None;
        }
        let mut payload = std::mem::take(&mut self.payloads[id]);
        // Every packet was stored, so this is a no-op unless a program
        // marked a packet it did not store (its bytes read as zeros).
        payload.resize((m.msg_len as usize).div_ceil(8), 0);
        let _ = self.buffers.free(buffer);
        match self.timeout {
            // The timer now measures how long the completed message lingers.
            Some(timeout) => {
                self.msgs[id].state = RxState::Completed;
                self.timers.schedule(id, now + timeout, ());
            }
            // Lossless: nothing to recognise later.
            None => {
                self.table.remove(&m.key);
                self.msgs[id].state = RxState::Free;
                self.free_ids.push_back(id as u32);
            }
        }
        Some(RxMessage {
            src_ip: m.key.0,
            src_port: m.key.1,
            dst_port: meta.local_port,
            len: m.msg_len,
            payload,
        })
    }

    /// When the ingress timer module next fires, if a timer is armed.
    pub fn next_timer(&self) -> Option<SimTime> {
        self.timers.next_fire()
    }

    /// Runs the ingress timer scan to `now`; reports what it freed.
    pub fn poll_timers(
        &mut self,
        now: SimTime,
        fired: &mut Vec<(usize, (), SimTime)>,
        out: &mut Vec<Expired>,
    ) {
        fired.clear();
        self.timers.poll(now, fired);
        for &(id, (), _) in fired.iter() {
            let m = self.msgs[id];
            let what = match m.state {
                RxState::Free => continue,
                RxState::Receiving { buffer } => {
                    let _ = self.buffers.free(buffer);
                    let payload = std::mem::take(&mut self.payloads[id]);
                    self.recycle_payload(payload);
                    Expired::Incomplete(id as RxMsgId)
                }
                RxState::Completed => Expired::Forgotten(id as RxMsgId),
            };
            self.table.remove(&m.key);
            self.msgs[id].state = RxState::Free;
            self.free_ids.push_back(id as u32);
            out.push(what);
        }
    }

    /// Message ids in use (receiving or lingering).
    pub fn ids_in_use(&self) -> usize {
        self.free_ids.size() - self.free_ids.len()
    }

    /// Buffers in use.
    pub fn buffers_in_use(&self) -> usize {
        self.buffers.in_use()
    }

    /// Armed ingress timers.
    pub fn timers_armed(&self) -> usize {
        self.timers.armed()
    }
}
