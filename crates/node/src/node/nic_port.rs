//! The node as its NIC sees it: the register-file interface of every core
//! (messages into a core's RX FIFO, the cores' commands and netTX messages
//! out), the bus devices a NIC design attaches and reaches by type, and the
//! DMA and L1 steering a NIC does through the node's memory. Everything
//! here that changes what a sleeping hart waits for drops its wake memo
//! (`wake.rs`).

use super::{clear_of_dram, harts_in, Node};
use crate::bus_device::{Dma, NicDevice};
use crate::device::{Device, OverlapError};
use nanopu_core::Hart;

/// A message a core sent while no NIC is attached to the node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SentMessage {
    pub hart: usize,
    /// Source context (layer-4 port).
    pub context: u16,
    /// Header first.
    pub words: Vec<u64>,
}

/// Where the cores' messages go while the node has no NIC: the most recent
/// ones are kept for inspection and all are counted, so none is lost silently.
#[derive(Clone, Debug, Default)]
pub struct TxSink {
    pub messages: std::collections::VecDeque<SentMessage>,
    /// Messages sent in all.
    pub count: u64,
    /// Messages no longer kept because the log was full.
    pub evicted: u64,
}

/// How many sent messages a [`TxSink`] keeps.
pub const TX_SINK_KEEP: usize = 4096;

/// What a core handed its NIC through the register-file interface.
#[derive(Debug)]
pub enum CoreOutput<'a> {
    /// A command (`lniccmd`/`lnicucmd`), with its cycle.
    Command(nanopu_core::netif::CoreToNic),
    /// A complete netTX message of `context` is next in a core's TX
    /// FIFO, finished at `cycle`, with this header: answer whether to take
    /// it now ([`Node::offer_core_output`]; `Message` follows if so).
    Offer {
        context: u16,
        cycle: u64,
        header: u64,
    },
    /// A complete netTX message of `context` (header first), finished at
    /// `cycle`. Take the words with `std::mem::take` to keep them.
    Message {
        context: u16,
        cycle: u64,
        words: &'a mut Vec<u64>,
    },
}

impl Node {
    /// Messages the cores sent while no NIC is attached.
    pub fn sent(&self) -> &TxSink {
        &self.sent
    }

    /// Takes the oldest message kept in [`sent`](Self::sent).
    pub fn pop_sent(&mut self) -> Option<SentMessage> {
        self.sent.messages.pop_front()
    }

    /// A NIC takes the cores' messages and commands from now on (with
    /// [`take_core_output`](Self::take_core_output), and its devices'
    /// output through [`device_mut`](Self::device_mut)), and the run
    /// returns as soon as there is some ([`crate::BusDevice::has_output`]).
    pub fn attach_nic(&mut self) {
        self.nic_attached = true;
    }

    /// Attaches a NIC design's host-side device at `[base, base + size)`
    /// as `name` (the `[node.devices]` key that moves it, and the name
    /// `docs/devices.md` lists it under); a NIC design does, when it is
    /// built for this node (`NicDesign::attach`). Refused if the window
    /// overlaps DRAM or another device's.
    pub fn attach_device<D: NicDevice>(
        &mut self,
        name: &'static str,
        base: u64,
        size: u64,
        device: D,
    ) -> Result<(), OverlapError> {
        self.forget_wakes();
        clear_of_dram(name, base, size, self.bus.dram())?;
        let device: Box<dyn NicDevice> = Box::new(device);
        self.bus
            .devices_mut()
            .attach(name, base, size, Device::Nic(device))
    }

    /// The NIC device of type `T` a NIC design attached, if any.
    pub fn device<T: 'static>(&self) -> Option<&T> {
        self.bus.devices().device()
    }

    /// The NIC device of type `T`, to change it (the sleepers' wake memos
    /// are dropped: look with [`device`](Self::device) first when there is
    /// usually nothing to do).
    pub fn device_mut<T: 'static>(&mut self) -> Option<&mut T> {
        self.forget_wakes();
        self.bus.devices_mut().device_mut()
    }

    /// `f` on the NIC device of type `T` with the node's DMA port (a frame
    /// that a DMA NIC writes into memory); `None` if there is no such
    /// device. What the device wrote is then taken out of the cores' L1
    /// D-caches and their reservations on it broken.
    pub fn with_device_dma<T: 'static, R>(
        &mut self,
        f: impl FnOnce(&mut T, Dma<'_>) -> R,
    ) -> Option<R> {
        self.forget_wakes();
        let r = self.bus.with_device_dma(f);
        self.finish_dma_writes();
        r
    }

    /// The cores' side of the devices' DMA writes: their L1 D-cache lines
    /// over the written bytes are invalidated.
    pub(super) fn finish_dma_writes(&mut self) {
        let line = self.cfg.core.l1d.line_bytes as u64;
        while let Some(written) = self.bus.take_dma_written() {
            let end = written.addr + written.len;
            let mut a = written.addr & !(line - 1);
            while a < end {
                for hart in &mut self.harts {
                    hart.invalidate_l1d_line(a);
                }
                a += line;
            }
        }
    }

    /// NIC-to-core steering (NEBULA §V-E): the lines of `[addr, addr + len)`
    /// are read from the LLC (or DRAM) from `cycle` and installed in core
    /// `core`'s L1 D-cache, their dirty victims written back. Returns the
    /// cycle the last line is in, or `None` if the range is not in DRAM or
    /// there is no such core.
    pub fn nic_steer_to_l1d(
        &mut self,
        core: usize,
        addr: u64,
        len: u64,
        cycle: u64,
        outstanding: usize,
    ) -> Option<u64> {
        if core >= self.harts.len() {
            return None;
        }
        self.forget_wakes();
        self.bus.dram().slice(addr, len)?;
        let done = self
            .bus
            .memory_mut()
            .dma_read(addr, len, cycle, outstanding);
        let mut victims = std::mem::take(&mut self.steer_victims);
        self.for_each_line(addr, len, |harts, a| {
            if let Some(v) = harts[core].install_l1d_line(a) {
                victims.push(v);
            }
        });
        for v in victims.drain(..) {
            self.bus.l1_writeback(v, done);
        }
        self.steer_victims = victims;
        Some(done)
    }

    /// A device's DMA read of `out.len()` bytes at `addr`, issued at core
    /// cycle `cycle`, through the LLC and DRAM (as the IceNIC's reads, with
    /// `outstanding` lines in flight): the bytes as memory holds them now,
    /// and the cycle the last line arrives. `None` if the range is not DRAM.
    pub fn dma_read(
        &mut self,
        addr: u64,
        out: &mut [u8],
        cycle: u64,
        outstanding: usize,
    ) -> Option<u64> {
        self.forget_wakes();
        let len = out.len() as u64;
        out.copy_from_slice(self.bus.dram().slice(addr, len)?);
        if len == 0 {
            return Some(cycle);
        }
        Some(
            self.bus
                .memory_mut()
                .dma_read(addr, len, cycle, outstanding),
        )
    }

    /// A device's DMA write of `data` at `addr` at core cycle `cycle`: the
    /// bytes are in memory from now on, the lines written are invalidated in
    /// every core's L1 D-cache and reservations on them broken (as for the
    /// IceNIC's receive DMA); returns the cycle the last line is written.
    /// `None` if the range is not DRAM.
    pub fn dma_write(
        &mut self,
        addr: u64,
        data: &[u8],
        cycle: u64,
        outstanding: usize,
    ) -> Option<u64> {
        self.forget_wakes();
        let len = data.len() as u64;
        self.bus
            .dram_mut()
            .slice_mut(addr, len)?
            .copy_from_slice(data);
        if len == 0 {
            return Some(cycle);
        }
        self.bus.break_reservations(addr, len);
        let done = self
            .bus
            .memory_mut()
            .dma_write(addr, len, cycle, outstanding);
        self.for_each_line(addr, len, |harts, a| {
            for hart in harts.iter_mut() {
                hart.invalidate_l1d_line(a);
            }
        });
        Some(done)
    }

    pub(super) fn for_each_line(
        &mut self,
        addr: u64,
        len: u64,
        mut f: impl FnMut(&mut [Hart], u64),
    ) {
        let line = self.cfg.core.l1d.line_bytes as u64;
        let end = addr + len;
        let mut a = addr & !(line - 1);
        while a < end {
            f(&mut self.harts, a);
            a += line;
        }
    }

    /// Register-file interface, NIC side: puts a message (RX header first)
    /// into core `core`'s RX FIFO for `context`, visible from `cycle`.
    pub fn deliver_to_core(
        &mut self,
        core: usize,
        context: u16,
        words: &[u64],
        cycle: u64,
    ) -> Result<(), nanopu_core::netif::RxError> {
        self.forget_wake(core);
        self.harts[core].net_mut().deliver(context, words, cycle)
    }

    /// Register-file interface, NIC side: hands over, core by core, every
    /// command (`lniccmd`/`lnicucmd`) and every complete netTX message the
    /// cores produced since the last call, each with the cycle it happened.
    /// A message's words (header first) are in a scratch buffer the callee
    /// may take, leaving an empty one in its place.
    pub fn take_core_output(&mut self, mut f: impl FnMut(usize, CoreOutput<'_>)) {
        self.offer_core_output(|core, out| {
            if !matches!(out, CoreOutput::Offer { .. }) {
                f(core, out);
            }
            true
        })
    }

    /// [`take_core_output`](Self::take_core_output) for a NIC with finite
    /// transmit buffers: each message is first offered
    /// ([`CoreOutput::Offer`]), and handed over ([`CoreOutput::Message`])
    /// only if `f` answers true. A message not taken stays at the head of
    /// its TX FIFO, the core's later messages behind it, and is offered
    /// again at the next call; the core stalls on netTX once the FIFO is
    /// full. Commands are always taken (`f`'s answer is ignored).
    pub fn offer_core_output(&mut self, mut f: impl FnMut(usize, CoreOutput<'_>) -> bool) {
        let mut words = std::mem::take(&mut self.tx_words);
        let mut left = 0u64;
        for core in harts_in(std::mem::take(&mut self.may_have_output)) {
            let hart = &mut self.harts[core];
            if !hart.net().has_output() {
                continue;
            }
            // Draining its netTX may let a hart stalled on it continue.
            self.memo_valid &= !(1 << core);
            while let Some(cmd) = hart.net_mut().outbox.pop_front() {
                f(core, CoreOutput::Command(cmd));
            }
            while let Some((m, header)) = hart.net().next_tx_message() {
                let offer = CoreOutput::Offer {
                    context: m.context,
                    cycle: m.cycle,
                    header,
                };
                if !f(core, offer) {
                    left |= 1 << core;
                    break;
                }
                hart.net_mut().take_tx_message(&mut words);
                f(
                    core,
                    CoreOutput::Message {
                        context: m.context,
                        cycle: m.cycle,
                        words: &mut words,
                    },
                );
                words.clear();
            }
        }
        self.may_have_output |= left;
        self.tx_words = words;
    }

    /// Whether any core has output for a NIC waiting (see
    /// [`Node::take_core_output`]).
    pub fn has_core_output(&self) -> bool {
        harts_in(self.may_have_output).any(|h| self.harts[h].net().has_output())
    }

    /// Takes the complete messages hart `h` has sent.
    pub(super) fn collect_sent(&mut self, h: usize) {
        let net = self.harts[h].net_mut();
        if !net.tx_pending() {
            return;
        }
        let mut words = Vec::new();
        while let Some(m) = net.take_tx_message(&mut words) {
            let sink = &mut self.sent;
            sink.count += 1;
            if sink.messages.len() == TX_SINK_KEEP {
                sink.messages.pop_front();
                sink.evicted += 1;
            }
            sink.messages.push_back(SentMessage {
                hart: h,
                context: m.context,
                words: std::mem::take(&mut words),
            });
        }
    }
}
