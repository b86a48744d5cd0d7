//! A traditional DMA network interface: a model of IceNIC, the NIC of
//! FireSim and Chipyard (`icenet`, `NIC.scala`), which the nanoPU paper uses
//! as its "traditional" baseline (nanoPU §5.1: "an unmodified RISC-V Rocket
//! core with a standard NIC (IceNIC) ... performs DMA operations directly
//! with the last-level (L2) cache").
//!
//! Software hands the NIC buffer descriptors through memory-mapped queues
//! and polls for completions; the NIC moves whole Ethernet frames between
//! the wire and memory by DMA. Register map (offsets from [`ICENIC_BASE`],
//! as in IceNIC's `IceNicControllerModule` regmap and FireSim's `icenic.h`):
//!
//! | offset | access | register |
//! |---|---|---|
//! | `0x00` | 64-bit write | `SEND_REQ`: `(len << 48) \| addr`; queue the frame of `len` bytes at physical `addr` for transmission |
//! | `0x08` | 64-bit write | `RECV_REQ`: `addr`; post a receive buffer of [`IceNicConfig::recv_buffer_bytes`] (2048) bytes |
//! | `0x10` | 8/16-bit read | `SEND_COMP`: pops one send completion and returns 1; returns 0 when none is available |
//! | `0x12` | 16-bit read | `RECV_COMP`: pops one receive completion and returns the frame's length in bytes; returns 0 when none is available |
//! | `0x14` | 32-bit read (byte and halfword reads of its fields too) | `COUNTS`: bits 7..0 send requests the NIC can still accept, 15..8 receive requests it can still accept, 23..16 send completions available, 31..24 receive completions available |
//! | `0x18` | 64-bit read (or narrower, within it) | `MACADDR`: the node's MAC address, first byte on the wire in bits 7..0 (so `memcpy` of the value gives the address bytes, as FireSim drivers do) |
//!
//! What the prototype leaves undefined, as defined here (none of it panics;
//! each case is counted in [`IceNicStats`]):
//! - `SEND_REQ` with bit 63 set (IceNIC's "partial", a frame in several
//!   pieces: not modelled), a length of 0 or above
//!   [`IceNicConfig::max_frame_bytes`], or bytes outside DRAM: dropped,
//!   `send_errors`. With the send request queue full: dropped, `send_queue_full`.
//! - `RECV_REQ` whose buffer is not wholly inside DRAM: dropped,
//!   `recv_errors`; with the receive request queue full: dropped,
//!   `recv_queue_full`.
//! - A frame arriving with no receive buffer posted, or while the receive
//!   completion queue is full, waits in the RX packet buffer
//!   ([`IceNicConfig::rx_packet_buffer_flits`], IceNIC's
//!   `NetworkPacketBuffer`) and is written, in arrival order, as soon as a
//!   buffer is posted (`rx_held` counts them). A frame that does not fit in
//!   the packet buffer is dropped whole, as IceNIC does (it never
//!   backpressures the link): `rx_dropped_no_buffer`. One longer than a
//!   receive buffer (or empty) is dropped: `rx_dropped_too_long`.
//! - Any other access inside the register window (a store to a read-only
//!   register, a load of a write-only one, a wrong size): `bad_accesses`;
//!   loads return 0 and stores do nothing.
//!
//! # Timing
//!
//! Register accesses cost [`nanopu_node::NodeConfig::mmio_cycles`] (charged by the
//! core for any non-DRAM address). The DMA engines are one reader (TX) and
//! one writer (RX), each moving [`IceNicConfig::dma_bytes_per_cycle`] bytes
//! per core cycle after a fixed [`IceNicConfig::dma_setup_cycles`]; transfers
//! on one engine are serialized (the data path is busy until a frame's last
//! beat), their setups overlap with the previous transfer.
//! - RX: a frame whose last bit reached the NIC at cycle `c` is written into
//!   the oldest posted buffer; the writer starts at `s = max(c + setup,
//!   writer free)`, issues its line writes to the LLC from `s - setup` with
//!   [`IceNicConfig::dma_outstanding_lines`] in flight, and the write
//!   completes at `max(s + ceil(len / width), last line written)`; the
//!   receive completion is visible to loads from that cycle on. A frame
//!   held in the RX packet buffer is written the same way with `c` the
//!   cycle of the `RECV_REQ` store (or of the next frame's arrival) that
//!   found it a buffer.
//! - TX: a `SEND_REQ` store at cycle `c` makes the reader fetch the frame
//!   the same way (line reads served by the LLC, or by DRAM on a miss); it is
//!   ready for the wire at `max(s + ceil(len / width), last line read)`, and
//!   its send completion is visible from then on.
//! - A send request keeps its slot in the send request queue until its
//!   completion enters the completion queue (at the ready cycle, or when
//!   software frees a completion slot if that queue is full).
//!
//! The memory side effects go through the node's memory system
//! (`memory/system.rs`, `docs/memory.md`): DMA writes are placed in the LLC
//! per `[node.llc] dma_allocation` (all ways by default, as IceNIC is an
//! ordinary client of the L2 on the front bus; DDIO-like ways; or bypass
//! to DRAM), evict victims (a dirty one costs a DRAM write-back), read a
//! partly written missing line first, and the node invalidates the lines
//! in every core's L1 D-cache, so the core reads received data with L1
//! misses; DMA reads are served by the LLC, or by DRAM (bandwidth counted
//! under the source `nic`) without allocating. Data is moved functionally
//! at the moment of the request (TX) or arrival (RX): software may touch a
//! buffer only after its completion.

use super::params::IceNicConfig;
use nanopu_node::dram::Dram;
use nanopu_node::{BusDevice, DmaWritten, StoreEffect};
use std::collections::VecDeque;

/// Base address of IceNIC's register window (Chipyard/FireSim
/// `CanHavePeripheryIceNIC`: `0x10016000`).
pub const ICENIC_BASE: u64 = 0x1001_6000;
/// Size of the register window (a `TLRegisterRouter`'s default 4 KiB).
pub const ICENIC_SIZE: u64 = 0x1000;

/// Register offsets.
pub mod reg {
    pub const SEND_REQ: u64 = 0x00;
    pub const RECV_REQ: u64 = 0x08;
    pub const SEND_COMP: u64 = 0x10;
    pub const RECV_COMP: u64 = 0x12;
    pub const COUNTS: u64 = 0x14;
    pub const MACADDR: u64 = 0x18;
}

/// Bytes per flit of IceNIC's data path (`NET_IF_WIDTH = 64`).
const FLIT_BYTES: u64 = 8;
/// Header flits the packet buffer requires of a frame (`ETH_HEAD_BYTES` =
/// 16): the number of frames it can hold is `(flits - 1) / (2 + 1) + 1`
/// (`Buffer.scala:52`, `nPackets`).
const HEADER_FLITS: u64 = 2;

/// Counters of the device.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct IceNicStats {
    /// Frames written into receive buffers.
    pub rx_frames: u64,
    pub rx_bytes: u64,
    /// Frames dropped because no receive buffer was posted (or the receive
    /// completion queue was full) and the RX packet buffer had no room.
    pub rx_dropped_no_buffer: u64,
    /// Frames longer than a receive buffer (or empty).
    pub rx_dropped_too_long: u64,
    /// Frames that waited in the RX packet buffer for a receive buffer.
    pub rx_held: u64,
    /// Send requests accepted (frames read for the wire).
    pub tx_frames: u64,
    pub tx_bytes: u64,
    /// Send requests refused: length 0 or too long, outside DRAM, partial.
    pub send_errors: u64,
    /// Send requests refused because the queue was full.
    pub send_queue_full: u64,
    /// Receive requests refused: buffer outside DRAM.
    pub recv_errors: u64,
    /// Receive requests refused because the queue was full.
    pub recv_queue_full: u64,
    /// Register loads and stores by the cores (all of them, bad ones included).
    pub register_loads: u64,
    pub register_stores: u64,
    /// Register accesses that match no register (see the module documentation).
    pub bad_accesses: u64,
    /// Frames discarded because nothing took them (no NIC attached to the node).
    pub tx_discarded: u64,
}

pub use nanopu_node::Dma;

/// Where a received frame was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RxPlacement {
    pub addr: u64,
    pub len: u64,
    /// Cycle at which the write completes and the completion is visible.
    pub ready: u64,
}

/// The device state.
#[derive(Clone, Debug)]
pub struct IceNic {
    pub cfg: IceNicConfig,
    mac: u64,
    /// Posted receive buffers, oldest first.
    recv_bufs: VecDeque<u64>,
    /// Receive completions (length, visible-from cycle), oldest first.
    recv_comps: VecDeque<(u16, u64)>,
    /// Accepted send requests not yet popped as completions: the cycle each
    /// frame is ready (non-decreasing).
    sends: VecDeque<u64>,
    /// Frames for the wire with their ready cycle, oldest first.
    tx: VecDeque<(Vec<u8>, u64)>,
    /// Cycle at which the writer's (RX) data path is free.
    rx_free: u64,
    /// Cycle at which the reader's (TX) data path is free.
    tx_free: u64,
    /// Frames waiting in the RX packet buffer with their arrival cycle,
    /// oldest first, and the flits they occupy.
    rx_held: VecDeque<(Vec<u8>, u64)>,
    rx_held_flits: u64,
    /// Emptied frame vectors, reused for the next held frames.
    spare: Vec<Vec<u8>>,
    /// Frames written since the node last took them (it invalidates the
    /// cores' L1 lines they cover).
    placed: Vec<RxPlacement>,
    pub stats: IceNicStats,
}

impl IceNic {
    pub fn new(cfg: IceNicConfig) -> IceNic {
        let mac = cfg
            .mac()
            .iter()
            .enumerate()
            .fold(0u64, |m, (i, &b)| m | (b as u64) << (8 * i));
        IceNic {
            cfg,
            mac,
            recv_bufs: VecDeque::new(),
            recv_comps: VecDeque::new(),
            sends: VecDeque::new(),
            tx: VecDeque::new(),
            rx_free: 0,
            tx_free: 0,
            rx_held: VecDeque::new(),
            rx_held_flits: 0,
            spare: Vec::new(),
            placed: Vec::new(),
            stats: IceNicStats::default(),
        }
    }

    /// The MACADDR register: the address bytes in little-endian order.
    pub fn macaddr(&self) -> u64 {
        self.mac
    }

    fn beats(&self, len: u64) -> u64 {
        len.div_ceil(self.cfg.dma_bytes_per_cycle as u64)
    }

    /// Send completions available at `cycle`, and requests occupying the
    /// send request queue.
    fn send_state(&self, cycle: u64) -> (usize, usize) {
        let done = self.sends.iter().take_while(|&&r| r <= cycle).count();
        let comps = done.min(self.cfg.send_comp_depth as usize);
        (comps, self.sends.len() - comps)
    }

    /// Receive completions visible at `cycle`.
    fn recv_comps_at(&self, cycle: u64) -> usize {
        self.recv_comps
            .iter()
            .take_while(|&&(_, at)| at <= cycle)
            .count()
    }

    /// The first cycle after `cycle` at which a register a hart may poll
    /// without side effects (COUNTS) changes with no further input.
    pub fn next_change_after(&self, cycle: u64) -> Option<u64> {
        let send = self.sends.iter().copied().find(|&at| at > cycle);
        let recv = self
            .recv_comps
            .iter()
            .map(|&(_, at)| at)
            .find(|&at| at > cycle);
        [send, recv].into_iter().flatten().min()
    }

    /// The aligned 8-byte register word at offset `off` as a side-effect-free
    /// load would see it at `cycle`, for the registers [`Self::is_status`] accepts.
    pub fn peek_status(&self, off: u64, cycle: u64) -> u64 {
        match off & !7 {
            0x10 => (self.counts(cycle) as u64) << 32,
            _ => self.macaddr(),
        }
    }

    /// Whether offset `off` is a status register (COUNTS, MACADDR): loading
    /// it changes nothing.
    pub fn is_status(off: u64) -> bool {
        (reg::COUNTS..0x20).contains(&off)
    }

    /// The COUNTS register at `cycle`.
    pub fn counts(&self, cycle: u64) -> u32 {
        let (send_comps, send_reqs) = self.send_state(cycle);
        let send_space = (self.cfg.send_req_depth as usize).saturating_sub(send_reqs);
        let recv_space = (self.cfg.recv_req_depth as usize).saturating_sub(self.recv_bufs.len());
        let recv_comps = self.recv_comps_at(cycle);
        let f = |v: usize| v.min(255) as u32;
        f(send_space) | f(recv_space) << 8 | f(send_comps) << 16 | f(recv_comps) << 24
    }

    /// A load of `size` bytes at offset `off` by a hart at `cycle`.
    pub fn load(&mut self, off: u64, size: u8, cycle: u64) -> u64 {
        self.stats.register_loads += 1;
        let aligned = off.is_multiple_of(size as u64);
        match (off, size) {
            (reg::SEND_COMP, 1 | 2) => {
                let (comps, _) = self.send_state(cycle);
                if comps > 0 {
                    self.sends.pop_front();
                    1
                } else {
                    0
                }
            }
            (reg::RECV_COMP, 2) => match self.recv_comps.front() {
                Some(&(len, at)) if at <= cycle => {
                    self.recv_comps.pop_front();
                    len as u64
                }
                _ => 0,
            },
            (0x14..=0x17, 1 | 2 | 4) if aligned => {
                let v = self.counts(cycle) as u64 >> ((off - reg::COUNTS) * 8);
                v & mask(size)
            }
            (0x18..=0x1f, 1 | 2 | 4 | 8) if aligned => {
                (self.mac >> ((off - reg::MACADDR) * 8)) & mask(size)
            }
            _ => {
                self.stats.bad_accesses += 1;
                0
            }
        }
    }

    /// A store at offset `off` by a hart at `cycle`. Returns true if a frame
    /// was queued for the wire or a held frame was written (the node has
    /// work: [`Self::pop_placement`]).
    pub fn store(&mut self, off: u64, size: u8, value: u64, cycle: u64, dma: Dma<'_>) -> bool {
        self.stats.register_stores += 1;
        match (off, size) {
            (reg::SEND_REQ, 8) => self.send_request(value, cycle, dma),
            (reg::RECV_REQ, 8) => {
                self.recv_request(value, dma.dram);
                // A frame waiting in the packet buffer is written now.
                self.deliver_held(cycle, dma)
            }
            _ => {
                self.stats.bad_accesses += 1;
                false
            }
        }
    }

    fn send_request(&mut self, value: u64, cycle: u64, dma: Dma<'_>) -> bool {
        let addr = value & ((1 << 48) - 1);
        let len = (value >> 48) & 0x7fff;
        let partial = value >> 63 != 0;
        if partial || len == 0 || len > self.cfg.max_frame_bytes as u64 {
            self.stats.send_errors += 1;
            return false;
        }
        let Some(bytes) = dma.dram.slice(addr, len) else {
            self.stats.send_errors += 1;
            return false;
        };
        let (_, reqs) = self.send_state(cycle);
        if reqs >= self.cfg.send_req_depth as usize {
            self.stats.send_queue_full += 1;
            return false;
        }
        let frame = bytes.to_vec();
        // The reader starts on this frame when it is free; its line reads
        // go through the LLC (and DRAM on a miss), at most
        // `dma_outstanding_lines` at a time, overlapping the data beats.
        let setup = self.cfg.dma_setup_cycles as u64;
        let start = (cycle + setup).max(self.tx_free);
        let fetched = dma.mem.dma_read(
            addr,
            len,
            start - setup,
            self.cfg.dma_outstanding_lines as usize,
        );
        let ready = (start + self.beats(len)).max(fetched);
        self.tx_free = ready;
        self.sends.push_back(ready);
        self.tx.push_back((frame, ready));
        self.stats.tx_frames += 1;
        self.stats.tx_bytes += len;
        true
    }

    fn recv_request(&mut self, addr: u64, dram: &Dram) {
        if dram
            .offset(addr, self.cfg.recv_buffer_bytes as u64)
            .is_none()
        {
            self.stats.recv_errors += 1;
            return;
        }
        if self.recv_bufs.len() >= self.cfg.recv_req_depth as usize {
            self.stats.recv_queue_full += 1;
            return;
        }
        self.recv_bufs.push_back(addr);
    }

    /// A frame whose last bit reached the NIC at `cycle`: written by DMA into
    /// the oldest posted buffer (DRAM and L2), or held in the RX packet
    /// buffer until one is posted. Returns false if the frame was dropped.
    /// The caller takes the writes ([`Self::pop_placement`]) and
    /// invalidates the cores' L1 lines.
    pub fn frame_in(&mut self, frame: &[u8], cycle: u64, dma: Dma<'_>) -> bool {
        let len = frame.len() as u64;
        if len > self.cfg.recv_buffer_bytes as u64 || len == 0 {
            self.stats.rx_dropped_too_long += 1;
            return false;
        }
        let mut dma = dma;
        // A completion popped since the last frame may have made room.
        self.deliver_held(cycle, dma.reborrow());
        if self.rx_held.is_empty() && self.can_place() {
            self.place(frame, cycle, dma);
            return true;
        }
        // Behind held frames (in order) or with nowhere to write it: the
        // packet buffer keeps it if the whole frame fits.
        let flits = len.div_ceil(FLIT_BYTES);
        let capacity = self.cfg.rx_packet_buffer_flits as u64;
        let max_frames = capacity.saturating_sub(1) / (HEADER_FLITS + 1) + 1;
        if self.rx_held_flits + flits > capacity || self.rx_held.len() as u64 >= max_frames {
            self.stats.rx_dropped_no_buffer += 1;
            return false;
        }
        let mut copy = self.spare.pop().unwrap_or_default();
        copy.clear();
        copy.extend_from_slice(frame);
        self.rx_held.push_back((copy, cycle));
        self.rx_held_flits += flits;
        self.stats.rx_held += 1;
        true
    }

    /// Whether a frame can be written now: a buffer is posted and the
    /// completion queue has room (the writer waits for both).
    fn can_place(&self) -> bool {
        !self.recv_bufs.is_empty() && self.recv_comps.len() < self.cfg.recv_comp_depth as usize
    }

    /// Writes held frames into posted buffers from `cycle` on, oldest first,
    /// while there are buffers. Returns whether any was written.
    fn deliver_held(&mut self, cycle: u64, mut dma: Dma<'_>) -> bool {
        let mut any = false;
        while !self.rx_held.is_empty() && self.can_place() {
            let (frame, arrived) = self.rx_held.pop_front().expect("checked");
            self.rx_held_flits -= (frame.len() as u64).div_ceil(FLIT_BYTES);
            self.place(&frame, cycle.max(arrived), dma.reborrow());
            self.spare.push(frame);
            any = true;
        }
        any
    }

    /// Writes `frame` into the oldest posted buffer from `cycle`.
    fn place(&mut self, frame: &[u8], cycle: u64, dma: Dma<'_>) {
        let len = frame.len() as u64;
        let addr = self.recv_bufs.pop_front().expect("a buffer is posted");
        dma.dram
            .slice_mut(addr, len)
            .expect("receive buffers are checked when posted")
            .copy_from_slice(frame);
        // The writer's line writes go through the LLC (placement per
        // `llc.dma_allocation`); the completion waits for the last one.
        let setup = self.cfg.dma_setup_cycles as u64;
        let start = (cycle + setup).max(self.rx_free);
        let written = dma.mem.dma_write(
            addr,
            len,
            start - setup,
            self.cfg.dma_outstanding_lines as usize,
        );
        let ready = (start + self.beats(len)).max(written);
        self.rx_free = ready;
        self.recv_comps.push_back((len as u16, ready));
        self.stats.rx_frames += 1;
        self.stats.rx_bytes += len;
        self.placed.push(RxPlacement { addr, len, ready });
    }

    /// One of the frames written since the node last looked (it breaks
    /// reservations and invalidates the cores' L1 lines over them).
    pub fn pop_placement(&mut self) -> Option<RxPlacement> {
        self.placed.pop()
    }

    /// Frames waiting in the RX packet buffer.
    pub fn held_frames(&self) -> usize {
        self.rx_held.len()
    }

    /// Whether frames wait to be taken for the wire.
    pub fn has_tx(&self) -> bool {
        !self.tx.is_empty()
    }

    /// The oldest frame for the wire and the cycle it is ready.
    pub fn take_tx(&mut self) -> Option<(Vec<u8>, u64)> {
        self.tx.pop_front()
    }

    /// Keeps at most `keep` frames for the wire, discarding the oldest.
    pub fn discard_tx_beyond(&mut self, keep: usize) {
        while self.tx.len() > keep {
            self.tx.pop_front();
            self.stats.tx_discarded += 1;
        }
    }

    /// Receive buffers posted and not yet used.
    pub fn posted_buffers(&self) -> usize {
        self.recv_bufs.len()
    }
}

impl BusDevice for IceNic {
    fn mmio_load(&mut self, off: u64, size: u8, cycle: u64) -> Option<u64> {
        Some(self.load(off, size, cycle))
    }

    fn mmio_store(
        &mut self,
        off: u64,
        size: u8,
        value: u64,
        cycle: u64,
        mem: Dma<'_>,
    ) -> Option<StoreEffect> {
        // A frame for the wire: the hart returns to the node, which hands it over.
        let queued = self.store(off, size, value, cycle, mem);
        Some(if queued {
            StoreEffect::Yield
        } else {
            StoreEffect::Done
        })
    }

    fn is_status(&self, off: u64) -> bool {
        IceNic::is_status(off)
    }

    fn peek_status(&self, off: u64, cycle: u64) -> u64 {
        IceNic::peek_status(self, off, cycle)
    }

    fn next_change_after(&self, cycle: u64) -> Option<u64> {
        IceNic::next_change_after(self, cycle)
    }

    fn has_output(&self) -> bool {
        self.has_tx()
    }

    fn discard_output_beyond(&mut self, keep: usize) {
        self.discard_tx_beyond(keep)
    }

    fn take_dma_written(&mut self) -> Option<DmaWritten> {
        self.pop_placement().map(|p| DmaWritten {
            addr: p.addr,
            len: p.len,
        })
    }
}

fn mask(size: u8) -> u64 {
    if size >= 8 {
        u64::MAX
    } else {
        (1u64 << (size * 8)) - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nanopu_node::memory::MemorySystem;

    const BASE: u64 = 0x8000_0000;

    struct Mem {
        dram: Dram,
        sys: MemorySystem,
    }

    fn mem() -> Mem {
        Mem {
            dram: Dram::new(BASE, 1 << 20).unwrap(),
            sys: MemorySystem::new(&nanopu_node::NodeConfig::default()),
        }
    }

    impl Mem {
        fn dma(&mut self) -> Dma<'_> {
            Dma {
                dram: &mut self.dram,
                mem: &mut self.sys,
            }
        }

        /// Brings the lines of `[addr, addr + len)` into the LLC.
        fn warm(&mut self, addr: u64, len: u64) {
            for a in (addr..addr + len).step_by(64) {
                self.sys.refill(0, a, 0, nanopu_core::RefillKind::Load);
            }
        }

        fn nic_bytes(&self) -> (u64, u64) {
            let s = self.sys.stats();
            let nic = s.by_source.iter().find(|s| s.source == "nic").unwrap();
            (nic.read_bytes, nic.write_bytes)
        }
    }

    fn nic() -> IceNic {
        IceNic::new(IceNicConfig {
            enabled: true,
            send_req_depth: 4,
            recv_req_depth: 4,
            send_comp_depth: 2,
            recv_comp_depth: 3,
            ..IceNicConfig::default()
        })
    }

    /// Feeds `frame` at `cycle`: where it was written at once (`None` if
    /// it was held or dropped).
    fn rx(n: &mut IceNic, m: &mut Mem, frame: &[u8], cycle: u64) -> Option<RxPlacement> {
        n.frame_in(frame, cycle, m.dma());
        n.pop_placement()
    }

    fn counts(n: &IceNic, c: u64) -> [u32; 4] {
        let v = n.counts(c);
        [v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, v >> 24]
    }

    #[test]
    fn macaddr_is_02_00_and_the_ip_in_wire_order() {
        let mut n = nic();
        assert_eq!(n.cfg.mac(), [2, 0, 10, 0, 0, 1]);
        assert_eq!(n.load(reg::MACADDR, 8, 0), 0x0100_000a_0002);
        assert_eq!(n.load(reg::MACADDR + 2, 1, 0), 10);
        assert_eq!(n.load(reg::MACADDR + 4, 4, 0), 0x0100);
        assert_eq!(n.stats.bad_accesses, 0);
    }

    #[test]
    fn receive_path_fills_the_oldest_buffer_and_completes_after_the_dma() {
        let mut m = mem();
        let mut n = nic();
        assert_eq!(counts(&n, 0), [4, 4, 0, 0]);
        n.store(reg::RECV_REQ, 8, BASE + 0x1000, 0, m.dma());
        n.store(reg::RECV_REQ, 8, BASE + 0x2000, 0, m.dma());
        assert_eq!(counts(&n, 0), [4, 2, 0, 0]);
        // Buffers the LLC holds (as reused ones are).
        m.warm(BASE + 0x1000, 128);
        m.warm(BASE + 0x2000, 128);
        let frame: Vec<u8> = (0..72u8).collect();
        let p = rx(&mut n, &mut m, &frame, 100).unwrap();
        // 20 cycles of setup, 72 / 8 = 9 beats
        assert_eq!(
            p,
            RxPlacement {
                addr: BASE + 0x1000,
                len: 72,
                ready: 129
            }
        );
        assert_eq!(m.dram.slice(BASE + 0x1000, 72).unwrap(), &frame[..]);
        assert!(m.sys.llc.is_dirty(BASE + 0x1000) && m.sys.llc.is_dirty(BASE + 0x1040));
        assert_eq!(m.nic_bytes(), (0, 0), "no DRAM traffic");
        // Not visible before the DMA completes: no pop either.
        assert_eq!(counts(&n, 128), [4, 3, 0, 0]);
        assert_eq!(n.load(reg::RECV_COMP, 2, 128), 0);
        assert_eq!(counts(&n, 129), [4, 3, 0, 1]);
        assert_eq!(n.load(reg::COUNTS + 3, 1, 129), 1);
        // A second frame right behind waits for the writer: 73 bytes = 10 beats.
        let p2 = rx(&mut n, &mut m, &[7u8; 73], 101).unwrap();
        assert_eq!(p2.addr, BASE + 0x2000);
        assert_eq!(p2.ready, 139);
        assert_eq!(n.load(reg::RECV_COMP, 2, 130), 72);
        assert_eq!(n.load(reg::RECV_COMP, 2, 130), 0);
        assert_eq!(n.load(reg::RECV_COMP, 2, 139), 73);
        assert_eq!(n.stats.rx_frames, 2);
    }

    #[test]
    fn a_cold_receive_buffer_costs_a_dram_read_for_its_partial_line() {
        let mut m = mem();
        let mut n = nic();
        n.store(reg::RECV_REQ, 8, BASE + 0x1000, 0, m.dma());
        n.store(reg::RECV_REQ, 8, BASE + 0x2000, 0, m.dma());
        // 128 bytes: two whole lines, allocated without reading DRAM.
        let p = rx(&mut n, &mut m, &[1u8; 128], 100).unwrap();
        assert_eq!(p.ready, 100 + 20 + 16);
        assert_eq!(m.nic_bytes(), (0, 0));
        // 72 bytes: the second line is partial and absent: read first.
        let p = rx(&mut n, &mut m, &[1u8; 72], 1000).unwrap();
        assert_eq!(p.ready, 1000 + 20 + 240);
        assert_eq!(m.nic_bytes(), (64, 0));
    }

    #[test]
    fn frames_wait_in_the_packet_buffer_until_a_buffer_is_posted() {
        let mut m = mem();
        let mut n = nic();
        // Nothing posted: both frames are held, in order.
        assert!(n.frame_in(&[1; 64], 10, m.dma()));
        assert!(n.frame_in(&[2; 72], 20, m.dma()));
        assert_eq!(
            (n.held_frames(), n.stats.rx_held, n.stats.rx_frames),
            (2, 2, 0)
        );
        assert!(n.pop_placement().is_none());
        assert!(!n.frame_in(&[0; 2049], 30, m.dma()));
        assert_eq!(n.stats.rx_dropped_too_long, 1);
        // A posted buffer takes the oldest at once; the store tells the node.
        assert!(n.store(reg::RECV_REQ, 8, BASE + 0x1000, 500, m.dma()));
        let p = n.pop_placement().expect("written");
        assert_eq!((p.addr, p.len), (BASE + 0x1000, 64));
        assert!(p.ready >= 500 + 20 + 8, "the write starts at the post");
        assert_eq!(m.dram.slice(BASE + 0x1000, 64).unwrap(), &[1; 64][..]);
        assert_eq!(n.held_frames(), 1);
        // The second buffer takes the second frame; a frame arriving with
        // none left is held until the third.
        n.store(reg::RECV_REQ, 8, BASE + 0x2000, 600, m.dma());
        n.pop_placement();
        assert!(
            rx(&mut n, &mut m, &[3; 64], 700).is_none(),
            "no buffer left"
        );
        n.store(reg::RECV_REQ, 8, BASE + 0x3000, 800, m.dma());
        assert_eq!(m.dram.slice(BASE + 0x2000, 72).unwrap(), &[2; 72][..]);
        assert_eq!(m.dram.slice(BASE + 0x3000, 64).unwrap(), &[3; 64][..]);
        assert_eq!((n.held_frames(), n.stats.rx_frames), (0, 3));
        assert_eq!(n.stats.rx_dropped_no_buffer, 0);
        // Popping the completions in order gives the lengths in order.
        let lens: Vec<u64> = (0..3).map(|_| n.load(reg::RECV_COMP, 2, 10_000)).collect();
        assert_eq!(lens, [64, 72, 64]);
    }

    #[test]
    fn a_full_packet_buffer_drops_whole_frames_and_counts_them() {
        let mut m = mem();
        let mut n = IceNic::new(IceNicConfig {
            enabled: true,
            rx_packet_buffer_flits: 20, // 160 bytes
            ..IceNicConfig::default()
        });
        assert!(n.frame_in(&[1; 72], 0, m.dma())); // 9 flits
        assert!(n.frame_in(&[2; 65], 1, m.dma())); // 9 flits: 18
        assert!(!n.frame_in(&[3; 24], 2, m.dma()), "3 flits do not fit");
        assert!(n.frame_in(&[4; 16], 3, m.dma()), "2 flits do");
        assert_eq!((n.stats.rx_dropped_no_buffer, n.stats.rx_held), (1, 3));
        for i in 0..4 {
            n.store(reg::RECV_REQ, 8, BASE + i * 0x800, 100, m.dma());
        }
        assert_eq!((n.held_frames(), n.stats.rx_frames), (0, 3));
        assert_eq!(m.dram.slice(BASE + 0x1000, 16).unwrap(), &[4; 16][..]);
        // With no packet buffer, a frame with nowhere to go is dropped.
        let mut n = IceNic::new(IceNicConfig {
            enabled: true,
            rx_packet_buffer_flits: 0,
            ..IceNicConfig::default()
        });
        assert!(!n.frame_in(&[1; 64], 0, m.dma()));
        assert_eq!(n.stats.rx_dropped_no_buffer, 1);
    }

    #[test]
    fn a_full_completion_queue_holds_frames_until_a_post_after_a_pop() {
        let mut m = mem();
        let mut n = nic();
        for i in 0..4 {
            n.store(reg::RECV_REQ, 8, BASE + i * 0x800, 0, m.dma());
        }
        for _ in 0..3 {
            assert!(rx(&mut n, &mut m, &[0; 64], 0).is_some());
        }
        // The completion queue (3) is full: held although a buffer is posted.
        assert!(rx(&mut n, &mut m, &[9; 64], 0).is_none());
        assert_eq!((n.held_frames(), n.posted_buffers()), (1, 1));
        assert_eq!(n.load(reg::RECV_COMP, 2, 1000), 64);
        // The next frame (or receive request) finds room: the held one first.
        let p = rx(&mut n, &mut m, &[8; 64], 1100).expect("the held frame");
        assert_eq!(p.addr, BASE + 3 * 0x800);
        assert_eq!(m.dram.slice(p.addr, 64).unwrap(), &[9; 64][..]);
        assert_eq!(n.held_frames(), 1, "the new one waits for a buffer");
    }

    #[test]
    fn bad_receive_requests_are_counted() {
        let mut m = mem();
        let mut n = nic();
        n.store(reg::RECV_REQ, 8, 0x1000, 0, m.dma()); // not DRAM
        n.store(reg::RECV_REQ, 8, BASE + (1 << 20) - 100, 0, m.dma()); // runs off DRAM
        assert_eq!(n.stats.recv_errors, 2);
        for _ in 0..5 {
            n.store(reg::RECV_REQ, 8, BASE, 0, m.dma());
        }
        assert_eq!(n.stats.recv_queue_full, 1);
        assert_eq!(n.posted_buffers(), 4);
    }

    #[test]
    fn send_path_reads_the_frame_and_completes_in_order() {
        let mut m = mem();
        let mut n = nic();
        let frame: Vec<u8> = (0..80u8).collect();
        m.dram
            .slice_mut(BASE + 0x100, 80)
            .unwrap()
            .copy_from_slice(&frame);
        m.warm(BASE + 0x100, 128);
        assert!(n.store(reg::SEND_REQ, 8, (80 << 48) | (BASE + 0x100), 1000, m.dma()));
        // L2 hits: 20 + 10 beats.
        let (f, ready) = n.take_tx().unwrap();
        assert_eq!((f, ready), (frame.clone(), 1030));
        assert!(n.take_tx().is_none());
        assert_eq!(counts(&n, 1029), [3, 4, 0, 0]);
        assert_eq!(n.load(reg::SEND_COMP, 2, 1029), 0);
        assert_eq!(counts(&n, 1030), [4, 4, 1, 0]);
        // A frame in lines the L2 does not hold pays a DRAM access once the
        // reader is free (1030, its line requested at 1030 - 20).
        assert!(n.store(reg::SEND_REQ, 8, (8 << 48) | (BASE + 0x8000), 1001, m.dma()));
        assert_eq!(n.take_tx().unwrap().1, 1010 + 20 + 240);
        assert_eq!(m.nic_bytes(), (64, 0));
        assert_eq!(n.load(reg::SEND_COMP, 2, 1030), 1);
        assert_eq!(n.load(reg::SEND_COMP, 2, 1030), 0);
        assert_eq!(n.stats.tx_frames, 2);
        assert_eq!(n.stats.tx_bytes, 88);
    }

    #[test]
    fn full_completion_queue_holds_requests_in_their_slots() {
        let mut m = mem();
        let mut n = nic();
        for i in 0..4 {
            assert!(n.store(reg::SEND_REQ, 8, (64 << 48) | (BASE + i * 64), 0, m.dma()));
        }
        assert!(!n.store(reg::SEND_REQ, 8, (64 << 48) | BASE, 0, m.dma()));
        assert_eq!(n.stats.send_queue_full, 1);
        // Long after: two completions (the queue's depth), two requests still held.
        assert_eq!(counts(&n, 10_000), [2, 4, 2, 0]);
        assert_eq!(n.load(reg::SEND_COMP, 1, 10_000), 1);
        assert_eq!(counts(&n, 10_000), [3, 4, 2, 0]);
        for _ in 0..3 {
            assert_eq!(n.load(reg::SEND_COMP, 2, 10_000), 1);
        }
        assert_eq!(n.load(reg::SEND_COMP, 2, 10_000), 0);
        assert_eq!(counts(&n, 10_000), [4, 4, 0, 0]);
    }

    #[test]
    fn bad_send_requests_are_counted_not_queued() {
        let mut m = mem();
        let mut n = nic();
        for v in [
            BASE,                                // length 0
            (9001 << 48) | BASE,                 // too long
            (64 << 48) | 0x1000,                 // not DRAM
            (64 << 48) | (BASE + (1 << 20) - 8), // runs off DRAM
            (1 << 63) | (64 << 48) | BASE,       // partial
        ] {
            assert!(!n.store(reg::SEND_REQ, 8, v, 0, m.dma()));
        }
        assert_eq!(n.stats.send_errors, 5);
        assert!(!n.has_tx());
        assert_eq!(counts(&n, 0), [4, 4, 0, 0]);
    }

    #[test]
    fn bad_register_accesses_are_counted() {
        let mut m = mem();
        let mut n = nic();
        assert_eq!(n.load(reg::SEND_REQ, 8, 0), 0); // write-only
        assert_eq!(n.load(reg::RECV_COMP, 4, 0), 0); // wrong size
        assert_eq!(n.load(0x20, 4, 0), 0); // interrupt mask: not modelled
        assert_eq!(n.load(0x15, 2, 0), 0); // misaligned
        assert!(!n.store(reg::COUNTS, 4, 1, 0, m.dma())); // read-only
        assert!(!n.store(reg::SEND_REQ, 4, 1, 0, m.dma())); // half a request
        assert_eq!(n.stats.bad_accesses, 6);
        assert_eq!((n.stats.register_loads, n.stats.register_stores), (4, 2));
        assert_eq!(n.posted_buffers(), 0);
        assert!(!n.has_tx());
    }

    #[test]
    fn config_is_validated() {
        let ok = IceNicConfig::default();
        assert!(ok.validate().is_ok());
        assert!(!ok.enabled, "the device exists only when asked for");
        let bad = IceNicConfig {
            recv_req_depth: 256,
            ..ok.clone()
        };
        assert!(bad
            .validate()
            .unwrap_err()
            .to_string()
            .contains("recv_req_depth"));
        let bad = IceNicConfig {
            dma_bytes_per_cycle: 0,
            ..ok
        };
        assert!(bad.validate().is_err());
    }
}
