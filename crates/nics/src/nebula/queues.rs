//! The memory-mapped queues of NEBULA's integrated NIC (NEBULA, Sutherland
//! et al., ISCA'20, §V-A/§V-B and Fig. 3): per core a completion queue
//! (CQ) of RPC arrival notifications, and the commands a core gives the
//! NIC (`RPC_send`, `free_buffer`, Fig. 4). The NIC itself (buffer
//! management, dispatch, steering) is a design of the system crate
//! (`nanopu_system::nics::nebula`); this device is only its register
//! window on the node's bus, so that guest programs reach it with loads
//! and stores (`sdk/include/nebula.h`).
//!
//! Register map, offsets from the base ([`NEBULA_BASE`]); core `c`'s block
//! starts at `c * 0x100`:
//!
//! | offset | access | meaning |
//! |---|---|---|
//! | `0x00` | load (status) | CQ entries visible now |
//! | `0x08` | load | pop the oldest visible entry: its buffer address (0 if none); latches its length and token |
//! | `0x10` | load | length in bytes of the entry last popped |
//! | `0x18` | load | token of the entry last popped (names the RPC for `RPC_send`) |
//! | `0x20` | store | `RPC_send`: address of the reply in memory |
//! | `0x28` | store | `RPC_send`: its length in bytes |
//! | `0x30` | store | `RPC_send`: the token of the RPC answered; queues the send |
//! | `0x40` | store | `free_buffer`: address |
//! | `0x48` | store | `free_buffer`: length in bytes; queues the free |
//! | `0x50` | load | buffer address of the next visible entry after the head, 0 if none (for a software prefetch of the next RPC, NEBULA §VII-C) |
//!
//! Global registers at [`GLOBAL_OFFSET`]: `+0x00` (load) the bytes of
//! receive buffer the NIC needs, `+0x08` (store) where software put them
//! (§V-B: "after the receive buffers are allocated and initialized by
//! software, they are managed by the NIC").
//!
//! A CQ entry is visible from the cycle the NIC gives it; the queue is a
//! function of the reading core's cycle, so a core polling the count
//! sleeps exactly until the next entry appears.

use nanopu_node::{BusDevice, Dma, StoreEffect};
use std::collections::VecDeque;

/// Where the window sits (a free spot of the prototype's map, above the
/// IceNIC's).
pub const NEBULA_BASE: u64 = 0x1002_0000;
/// Up to 64 cores' blocks plus the global registers.
pub const NEBULA_SIZE: u64 = 0x1_0000;
/// Bytes of one core's register block.
pub const CORE_BLOCK: u64 = 0x100;
/// Offset of the global registers.
pub const GLOBAL_OFFSET: u64 = 0x8000;

/// One RPC arrival notification in a core's CQ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CqEntry {
    /// The core cycle from which the core sees it.
    pub visible: u64,
    pub addr: u64,
    pub len: u32,
    pub token: u32,
}

/// What a core asked of the NIC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NebulaCommand {
    /// `RPC_send`: the reply at `addr`, `len` bytes, answers RPC `token`.
    Send { addr: u64, len: u32, token: u32 },
    /// `free_buffer`: the slots `[addr, addr + len)` may be reused.
    Free { addr: u64, len: u32 },
    /// Software registered its receive buffer at `base` (the global
    /// register; given as core 0's): the NIC may take RPCs from now on.
    Register { base: u64 },
}

#[derive(Clone, Debug, Default)]
struct CoreQueues {
    cq: VecDeque<CqEntry>,
    popped_len: u64,
    popped_token: u64,
    send_addr: u64,
    send_len: u64,
    free_addr: u64,
}

/// Counters of the device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct NebulaQueueStats {
    pub pops: u64,
    pub empty_pops: u64,
    pub sends: u64,
    pub frees: u64,
    /// Accesses at offsets with no register (or a core beyond the node's).
    pub bad_accesses: u64,
    /// Loads of the receive-buffer size (what software may have made of
    /// the NIC's design so far).
    pub size_reads: u64,
}

/// The register window. See the module documentation.
#[derive(Clone, Debug)]
pub struct NebulaQueues {
    cores: Vec<CoreQueues>,
    commands: VecDeque<(usize, u64, NebulaCommand)>,
    buffer_bytes: u64,
    buffer_base: Option<u64>,
    pub stats: NebulaQueueStats,
}

impl NebulaQueues {
    /// Queues for `cores` cores; the NIC wants `buffer_bytes` of receive buffer.
    pub fn new(cores: usize, buffer_bytes: u64) -> NebulaQueues {
        NebulaQueues {
            cores: vec![CoreQueues::default(); cores],
            commands: VecDeque::new(),
            buffer_bytes,
            buffer_base: None,
            stats: NebulaQueueStats::default(),
        }
    }

    /// NIC side: appends an entry to core `core`'s CQ (entries stay in the
    /// order given; the NIC gives them non-decreasing `visible` cycles).
    pub fn push(&mut self, core: usize, entry: CqEntry) {
        self.cores[core].cq.push_back(entry);
    }

    /// NIC side: the oldest command a core gave, with its core and cycle.
    pub fn take_command(&mut self) -> Option<(usize, u64, NebulaCommand)> {
        self.commands.pop_front()
    }

    /// Whether a command waits for the NIC.
    pub fn has_commands(&self) -> bool {
        !self.commands.is_empty()
    }

    /// The receive-buffer size the NIC asks for (what software reads from
    /// the global register).
    pub fn set_buffer_bytes(&mut self, bytes: u64) {
        self.buffer_bytes = bytes;
    }

    /// Software's receive buffer is at `base` (what a store to the global
    /// register does).
    pub fn register_buffer(&mut self, base: u64) {
        self.buffer_base = Some(base);
    }

    /// The receive-buffer size the NIC asks for.
    pub fn buffer_bytes(&self) -> u64 {
        self.buffer_bytes
    }

    /// Where software put the receive buffer, once it has.
    pub fn buffer_base(&self) -> Option<u64> {
        self.buffer_base
    }

    /// Entries of core `core`'s CQ not yet popped (visible or not).
    pub fn queued(&self, core: usize) -> usize {
        self.cores.get(core).map_or(0, |c| c.cq.len())
    }

    fn visible(&self, core: usize, cycle: u64) -> usize {
        self.cores[core]
            .cq
            .iter()
            .take_while(|e| e.visible <= cycle)
            .count()
    }

    fn split(&self, off: u64) -> Option<(usize, u64)> {
        let core = (off / CORE_BLOCK) as usize;
        (core < self.cores.len()).then_some((core, off % CORE_BLOCK))
    }
}

impl BusDevice for NebulaQueues {
    fn mmio_load(&mut self, off: u64, _size: u8, cycle: u64) -> Option<u64> {
        if off == GLOBAL_OFFSET {
            self.stats.size_reads += 1;
            return Some(self.buffer_bytes);
        }
        let Some((core, reg)) = self.split(off) else {
            self.stats.bad_accesses += 1;
            return Some(0);
        };
        let v = match reg {
            0x00 => self.visible(core, cycle) as u64,
            0x08 => {
                let q = &mut self.cores[core];
                match q.cq.front() {
                    Some(e) if e.visible <= cycle => {
                        let e = q.cq.pop_front().expect("front");
                        q.popped_len = e.len as u64;
                        q.popped_token = e.token as u64;
                        self.stats.pops += 1;
                        e.addr
                    }
                    _ => {
                        self.stats.empty_pops += 1;
                        0
                    }
                }
            }
            0x10 => self.cores[core].popped_len,
            0x18 => self.cores[core].popped_token,
            0x50 => match self.cores[core].cq.get(1) {
                Some(e) if e.visible <= cycle => e.addr,
                _ => 0,
            },
            _ => {
                self.stats.bad_accesses += 1;
                0
            }
        };
        Some(v)
    }

    fn mmio_store(
        &mut self,
        off: u64,
        _size: u8,
        value: u64,
        cycle: u64,
        _mem: Dma<'_>,
    ) -> Option<StoreEffect> {
        if off == GLOBAL_OFFSET + 8 {
            self.buffer_base = Some(value);
            let cmd = NebulaCommand::Register { base: value };
            self.commands.push_back((0, cycle, cmd));
            return Some(StoreEffect::Yield);
        }
        let Some((core, reg)) = self.split(off) else {
            self.stats.bad_accesses += 1;
            return Some(StoreEffect::Done);
        };
        let q = &mut self.cores[core];
        match reg {
            0x20 => q.send_addr = value,
            0x28 => q.send_len = value,
            0x30 => {
                let cmd = NebulaCommand::Send {
                    addr: q.send_addr,
                    len: q.send_len as u32,
                    token: value as u32,
                };
                self.commands.push_back((core, cycle, cmd));
                self.stats.sends += 1;
                return Some(StoreEffect::Yield);
            }
            0x40 => q.free_addr = value,
            0x48 => {
                let cmd = NebulaCommand::Free {
                    addr: q.free_addr,
                    len: value as u32,
                };
                self.commands.push_back((core, cycle, cmd));
                self.stats.frees += 1;
                return Some(StoreEffect::Yield);
            }
            _ => self.stats.bad_accesses += 1,
        }
        Some(StoreEffect::Done)
    }

    fn is_status(&self, off: u64) -> bool {
        off < GLOBAL_OFFSET && off.is_multiple_of(CORE_BLOCK)
    }

    fn has_output(&self) -> bool {
        self.has_commands()
    }

    fn peek_status(&self, off: u64, cycle: u64) -> u64 {
        match self.split(off) {
            Some((core, 0)) => self.visible(core, cycle) as u64,
            _ => 0,
        }
    }

    fn next_change_after(&self, cycle: u64) -> Option<u64> {
        self.cores
            .iter()
            .filter_map(|c| c.cq.iter().map(|e| e.visible).find(|&v| v > cycle))
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_appear_at_their_cycle_and_pop_in_order() {
        let mut q = NebulaQueues::new(2, 4096);
        q.push(
            1,
            CqEntry {
                visible: 100,
                addr: 0x8000_1000,
                len: 64,
                token: 7,
            },
        );
        q.push(
            1,
            CqEntry {
                visible: 150,
                addr: 0x8000_2000,
                len: 32,
                token: 8,
            },
        );
        assert_eq!(q.peek_status(CORE_BLOCK, 99), 0);
        assert_eq!(q.peek_status(CORE_BLOCK, 100), 1);
        assert_eq!(q.next_change_after(100), Some(150));
        assert_eq!(q.mmio_load(CORE_BLOCK + 8, 8, 99), Some(0));
        assert_eq!(q.mmio_load(CORE_BLOCK + 0x50, 8, 200), Some(0x8000_2000));
        assert_eq!(q.mmio_load(CORE_BLOCK + 8, 8, 120), Some(0x8000_1000));
        assert_eq!(q.mmio_load(CORE_BLOCK + 0x10, 8, 120), Some(64));
        assert_eq!(q.mmio_load(CORE_BLOCK + 0x18, 8, 120), Some(7));
        assert_eq!(q.peek_status(0, 1000), 0, "core 0's queue is its own");
        assert_eq!(q.stats.empty_pops, 1);
    }
}
