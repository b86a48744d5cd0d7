//! The nanoPU NIC as a [`NicDesign`]: [`NanoNic`] (its stages and
//! timing) joined to the cores' register-file interface.
//!
//! The cores' commands (`lniccmd`/`lnicucmd`) and finished netTX messages
//! reach the NIC at the cycle they happened, as events; the NIC's
//! deliveries go into the cores' RX FIFOs, visible from the cycle the NIC
//! says.

use super::nic_timeline::NicTimeline;
use super::{CoreCommand, NanoNic, NicAction, NicEvent, TxFull};
use crate::{Cores, NicDesign, NicIo, NicNote};
use nanopu_core::netif::CoreToNic;
use nanopu_core::HtsNote;
use nanopu_node::CoreOutput;
use nanopu_sim::SimTime;
use nanopu_timeline::{Timeline, Track};
use nanopu_transport::NanoTransport;

/// Spare word buffers kept (enough for the messages of 16 cores in flight
/// between the cores and the NIC).
const SPARE_WORD_BUFFERS: usize = 64;

/// The nanoPU NIC of one node.
pub struct NanoPuNic {
    pub nic: NanoNic,
    actions: Vec<NicAction>,
    /// Word buffers of messages from cores that the NIC has packetized,
    /// swapped into the node's scratch as the next message's words are taken
    /// from it: a steady stream of messages allocates nothing.
    spare_words: Vec<Vec<u64>>,
    /// The cores' scheduler tracks (`--timeline`).
    timeline: Option<Box<SchedulerTimeline>>,
    /// The NIC left a core's message in its TX FIFO for want of a transmit
    /// buffer: messages are taken again only from the time one is free
    /// ([`NanoPuNic::retake`]), never at their own (earlier) cycle.
    tx_blocked: bool,
    /// When the earliest [`NanoPuEvent::TxBufferFree`] pending is due.
    tx_retry_at: Option<SimTime>,
}

/// The thread schedulers' events as instants, one track per core.
struct SchedulerTimeline {
    tl: Timeline,
    pid: u32,
    tracks: Vec<Track>,
}

impl SchedulerTimeline {
    fn note(&mut self, core: usize, at: SimTime, note: HtsNote) {
        while self.tracks.len() <= core {
            let name = format!("core {} scheduler", self.tracks.len());
            self.tracks.push(self.tl.track(self.pid, &name));
        }
        let track = self.tracks[core];
        let (name, arg_name, arg) = match note {
            HtsNote::Switch { to } => ("context switch", "to_context", to as u64),
            HtsNote::InterruptRaised => ("interrupt 16 raised", "", 0),
            HtsNote::InterruptTaken => ("interrupt 16 taken", "", 0),
            HtsNote::Demoted => ("demoted (lmsgcycles)", "", 0),
            HtsNote::IdleTimeout => ("idle timeout (lidlecycles)", "", 0),
        };
        self.tl.instant(track, name, at, arg_name, arg);
    }
}

/// The nanoPU NIC's events.
#[derive(Debug)]
pub enum NanoPuEvent {
    /// One of the NIC's own (stages, NanoTransport).
    Nic(NicEvent),
    /// A command a core gave.
    FromCore { core: usize, command: CoreCommand },
    /// A message a core finished writing (TX header first).
    CoreMessage {
        core: usize,
        context: u16,
        words: Vec<u64>,
    },
    /// A transmit buffer is free again: take the messages left in the
    /// cores' TX FIFOs.
    TxBufferFree,
}

impl NanoPuNic {
    pub fn new(nic: NanoNic) -> NanoPuNic {
        NanoPuNic {
            nic,
            actions: Vec::new(),
            spare_words: Vec::new(),
            timeline: None,
            tx_blocked: false,
            tx_retry_at: None,
        }
    }

    /// Takes what the cores handed over: every command, and the messages
    /// the NIC has transmit buffers for, in order. A message finished at
    /// cycle `c` is taken at `c`; with `now` (the NIC's present, every core
    /// having run to it), messages left behind earlier are taken at `now`
    /// if they were finished by then. The first message refused leaves
    /// itself and all later ones where they are, and asks to be called
    /// again when a buffer frees.
    fn take_output(
        &mut self,
        now: Option<SimTime>,
        cores: &mut Cores<'_>,
        io: &mut NicIo<NanoPuEvent>,
    ) {
        let period = cores.period;
        let spare = &mut self.spare_words;
        let nic = &mut self.nic;
        let blocked = &mut self.tx_blocked;
        if now.is_some() {
            *blocked = false;
        }
        let mut retry = None;
        let mut taken_at = SimTime::ZERO;
        cores.node.offer_core_output(|core, out| match out {
            CoreOutput::Command(cmd) => {
                let (command, cycle) = match cmd {
                    CoreToNic::Registered { context, cycle, .. } => {
                        (CoreCommand::Registered { context }, cycle)
                    }
                    CoreToNic::MessageDone { context, cycle } => {
                        (CoreCommand::MessageDone { context }, cycle)
                    }
                };
                io.schedule(
                    SimTime::from_cycle(cycle, period),
                    NanoPuEvent::FromCore { core, command },
                );
                true
            }
            CoreOutput::Offer { cycle, header, .. } => {
                if *blocked {
                    return false;
                }
                let written = SimTime::from_cycle(cycle, period);
                let at = match now {
                    // Written after `now`: `take_from_cores` takes it.
                    Some(now) if written > now => return false,
                    Some(now) => now,
                    None => written,
                };
                match nic.take_tx_buffer((header & 0xffff) as u16, at) {
                    Ok(()) => {
                        taken_at = at;
                        true
                    }
                    Err(full) => {
                        *blocked = true;
                        retry = Some(full);
                        false
                    }
                }
            }
            CoreOutput::Message { context, words, .. } => {
                io.schedule(
                    taken_at,
                    NanoPuEvent::CoreMessage {
                        core,
                        context,
                        words: std::mem::replace(words, spare.pop().unwrap_or_default()),
                    },
                );
                true
            }
        });
        // One retry pending at a time (an earlier one takes what it can
        // and asks again).
        if let Some(TxFull::Until(t)) = retry {
            if self.tx_retry_at.is_none_or(|r| r > t) {
                self.tx_retry_at = Some(t);
                io.schedule(t, NanoPuEvent::TxBufferFree);
            }
        }
    }

    /// Records the NIC's stages and the cores' scheduler events into
    /// `timeline` as process `pid`, or stops. The node must keep its
    /// scheduler notes ([`nanopu_node::Node::keep_hts_notes`]).
    pub fn set_timeline(&mut self, timeline: Option<(&Timeline, u32)>) {
        self.nic
            .set_timeline(timeline.map(|(tl, pid)| NicTimeline::new(tl.clone(), pid)));
        self.timeline = timeline.map(|(tl, pid)| {
            Box::new(SchedulerTimeline {
                tl: tl.clone(),
                pid,
                tracks: Vec::new(),
            })
        });
    }

    /// What the NIC asked for, done.
    fn carry_out(&mut self, cores: &mut Cores<'_>, io: &mut NicIo<NanoPuEvent>) {
        for a in self.actions.drain(..) {
            match a {
                NicAction::Deliver {
                    core,
                    context,
                    words,
                    at,
                } => {
                    let header = words.first().copied().unwrap_or(0);
                    io.note(NicNote::Delivered {
                        src_ip: (header >> 32) as u32,
                        len: (header & 0xffff) as u16,
                        first_word: words.get(1).copied(),
                        at,
                    });
                    let cycle = cores.cycle_at(at);
                    if cores
                        .node
                        .deliver_to_core(core, context, &words, cycle)
                        .is_err()
                    {
                        io.note(NicNote::DeliveryFailed);
                    }
                    self.nic.recycle_words(words);
                }
                NicAction::Transmit { frame, ready } => io.transmit(frame, ready),
                NicAction::Schedule { at, event } => io.schedule(at, NanoPuEvent::Nic(event)),
            }
        }
    }
}

impl NicDesign for NanoPuNic {
    type Event = NanoPuEvent;

    fn frame_in(
        &mut self,
        frame: &[u8],
        first_bit: SimTime,
        cores: &mut Cores<'_>,
        io: &mut NicIo<NanoPuEvent>,
    ) {
        self.nic.frame_in(frame, first_bit, &mut self.actions);
        self.carry_out(cores, io);
        if self.tx_blocked {
            // An acknowledgement may have let the transport admit a message.
            self.take_output(Some(first_bit), cores, io);
        }
    }

    fn take_from_cores(&mut self, cores: &mut Cores<'_>, io: &mut NicIo<NanoPuEvent>) {
        let period = cores.period;
        if let Some(tl) = &mut self.timeline {
            cores.node.drain_hts_notes(|core, cycle, note| {
                tl.note(core, SimTime::from_cycle(cycle, period), note)
            });
        }
        self.take_output(None, cores, io);
    }

    fn handle(
        &mut self,
        event: NanoPuEvent,
        now: SimTime,
        cores: &mut Cores<'_>,
        io: &mut NicIo<NanoPuEvent>,
    ) {
        match event {
            NanoPuEvent::Nic(e) => self.nic.handle(e, now, &mut self.actions),
            NanoPuEvent::FromCore { core, command } => {
                self.nic.core_command(core, command, now, &mut self.actions)
            }
            NanoPuEvent::CoreMessage {
                core,
                context,
                words,
            } => {
                let header = words.first().copied().unwrap_or(0);
                let (dst_ip, len) = ((header >> 32) as u32, (header & 0xffff) as u16);
                if dst_ip == 0 {
                    io.note(NicNote::Booted { at: now });
                    if !io.boot_on_wire {
                        self.nic.tx_buffer_unused();
                        return;
                    }
                } else {
                    io.note(NicNote::Sent {
                        dst_ip,
                        len,
                        at: now,
                    });
                }
                self.nic
                    .message_from_core(core, context, &words, now, &mut self.actions);
                if self.spare_words.len() < SPARE_WORD_BUFFERS {
                    self.spare_words.push(words);
                }
            }
            NanoPuEvent::TxBufferFree => {
                if self.tx_retry_at == Some(now) {
                    self.tx_retry_at = None;
                }
            }
        }
        self.carry_out(cores, io);
        if self.tx_blocked {
            self.take_output(Some(now), cores, io);
        }
    }

    fn stats(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(&self.nic.stats).expect("counters serialize");
        v["transport"] =
            serde_json::to_value(self.nic.transport_stats()).expect("counters serialize");
        v
    }

    fn transport(&self) -> Option<&NanoTransport> {
        Some(self.nic.transport())
    }

    fn recycle(&mut self, frame: Vec<u8>) -> Option<Vec<u8>> {
        self.nic.recycle(frame)
    }

    fn wants_frames(&self) -> bool {
        self.nic.wants_frames()
    }
}
