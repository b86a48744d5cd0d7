//! NEBULA's integrated NIC (Sutherland et al., ISCA'20, seed 004, Fig. 3)
//! and the designs it is measured against (§VI), one [`NicDesign`] with a
//! [`NebulaDesign`] each:
//!
//! | design | dispatch ([`dispatch`]) | receive buffers | steering |
//! |---|---|---|---|
//! | RSS | per-core queues, uniform | per connection (static) | no |
//! | RPCValet | single queue, one RPC per core | per connection (static) | no |
//! | SRQ_emu | per-core queues, uniform | shared, [`buffers::BufferManager`] | no |
//! | NEBULA_base | JBSQ(2) | shared, [`buffers::BufferManager`] | no |
//! | NEBULA | JBSQ(2) | shared, [`buffers::BufferManager`] | payload into the core's L1 |
//!
//! Cores see the NIC through its memory-mapped queues
//! (`queues.rs`, `sdk/include/nebula.h`): `wait_for_RPC`
//! polls the core's completion queue, `free_buffer` and `RPC_send` are
//! commands. The NIC writes every payload into memory through the node's
//! memory system (LLC, DRAM, `[node.llc] dma_allocation`), so where the
//! buffers sit decides the LLC misses and DRAM traffic: per-connection
//! buffers (1024 nodes x 256 messages, §VI) are far larger than the LLC, the
//! shared buffer (81 KB) stays in it. Latency is measured as the paper does
//! (§VI): from the NIC receiving the RPC to the core freeing its buffer.
//! [`load`] drives a node with this NIC from a built-in client.

pub mod buffers;
pub mod dispatch;
pub mod queues;

use crate::mac::Mac;
use crate::{Cores, NicDesign, NicIo, NicNote};
use buffers::BufferManager;
use dispatch::{Dispatcher, Policy};
use nanopu_node::Node;
use nanopu_node::OverlapError;
use nanopu_sim::SimTime;
use nanopu_wire::Flags;
use queues::{CqEntry, NebulaCommand, NebulaQueues, NEBULA_BASE, NEBULA_SIZE};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The five designs of NEBULA §VI.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum NebulaDesign {
    Rss,
    RpcValet,
    SrqEmu,
    NebulaBase,
    Nebula,
}

impl NebulaDesign {
    pub const ALL: [NebulaDesign; 5] = [
        NebulaDesign::Rss,
        NebulaDesign::RpcValet,
        NebulaDesign::SrqEmu,
        NebulaDesign::NebulaBase,
        NebulaDesign::Nebula,
    ];

    pub fn name(self) -> &'static str {
        match self {
            NebulaDesign::Rss => "RSS",
            NebulaDesign::RpcValet => "RPCValet",
            NebulaDesign::SrqEmu => "SRQ_emu",
            NebulaDesign::NebulaBase => "NEBULA_base",
            NebulaDesign::Nebula => "NEBULA",
        }
    }

    /// Shared receive buffers under the buffer manager (else per connection).
    pub fn shared_buffers(self) -> bool {
        matches!(
            self,
            NebulaDesign::SrqEmu | NebulaDesign::NebulaBase | NebulaDesign::Nebula
        )
    }

    pub fn policy(self) -> Policy {
        match self {
            NebulaDesign::Rss | NebulaDesign::SrqEmu => Policy::PerCore,
            NebulaDesign::RpcValet => Policy::SingleQueue { bound: 1 },
            NebulaDesign::NebulaBase | NebulaDesign::Nebula => Policy::SingleQueue { bound: 2 },
        }
    }

    pub fn steering(self) -> bool {
        self == NebulaDesign::Nebula
    }
}

/// Parameters of the NIC, each with its source.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NebulaConfig {
    /// Shared receive buffer: §VI, NEBULA_base "allocates 81KB of buffering
    /// for incoming RPCs, corresponding to 10 x E[N_q] = 160 slots of 512B".
    pub shared_buffer_bytes: u64,
    /// Per-connection buffers: §VI, "a cluster size of 1024 servers".
    pub connections: u32,
    /// §VI: "256 outstanding messages per node pair".
    pub per_connection_messages: u32,
    /// §VI: "a maximum per-message size of 512B"; here 576 B, the largest
    /// MICA request with a 512 B value (32 B of header) in whole 64 B
    /// blocks, so that a SET fits its slot.
    pub per_connection_slot_bytes: u64,
    /// NIC back end to a core's CQ (Fig. 3a step 4). Assumption: Table II's
    /// mesh, "3 cycles/hop", about 4 hops from the chip's edge to a tile.
    pub notify_cycles: u64,
    /// Line requests the NIC keeps in flight to the LLC. Assumption: as the
    /// IceNIC's DMA (icenet `nMemXacts = 8`); the paper gives none.
    pub dma_outstanding_lines: usize,
    /// Bytes of payload per packet of a multi-packet message (the wire's MTU
    /// payload; NEBULA's own is 64 B, §V-D: an assumption of ours, fewer
    /// packets for the same bytes).
    pub mtu_payload: u32,
    /// Seed of RSS's uniform spreading.
    pub seed: u64,
}

impl Default for NebulaConfig {
    fn default() -> Self {
        NebulaConfig {
            shared_buffer_bytes: 160 * 512,
            connections: 1024,
            per_connection_messages: 256,
            per_connection_slot_bytes: 576,
            notify_cycles: 12,
            dma_outstanding_lines: 8,
            mtu_payload: 1024,
            seed: 1,
        }
    }
}

impl NebulaConfig {
    /// Bytes of receive buffer the design needs software to provide.
    pub fn buffer_bytes(&self, design: NebulaDesign) -> u64 {
        if design.shared_buffers() {
            self.shared_buffer_bytes
        } else {
            self.connections as u64
                * self.per_connection_messages as u64
                * self.per_connection_slot_bytes
        }
    }
}

/// A NIC that cannot be built for a node.
#[derive(Debug, thiserror::Error)]
pub enum NebulaError {
    #[error("the NEBULA NIC's queues: {0}")]
    Attach(#[from] nanopu_node::device::OverlapError),
    #[error("the NEBULA NIC needs at least one core")]
    NoCores,
}

/// Counters of the NIC.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct NebulaStats {
    pub rx_frames: u64,
    /// RPCs whose payload is in memory (all packets written).
    pub rpcs: u64,
    /// RPCs refused for lack of buffer (a NACK each).
    pub nacks: u64,
    pub replies: u64,
    pub frees: u64,
    /// Frames that are not requests for this node (dropped).
    pub bad_frames: u64,
    /// Commands naming no live RPC or buffer, or a reply outside DRAM.
    pub bad_commands: u64,
    /// Packets before software registered its receive buffer (NACKed).
    pub before_buffer: u64,
    /// Payload bytes the NIC wrote, and lines it steered into L1s.
    pub payload_bytes: u64,
    pub steered_lines: u64,
}

struct Rpc {
    src_ip: u32,
    src_port: u16,
    dst_port: u16,
    tid: u16,
    /// Offset in the receive buffer, bytes reserved, message length.
    offset: u64,
    reserved: u64,
    msg_len: u32,
    received: u32,
    received_at: SimTime,
    core: usize,
    freed: bool,
    replied: bool,
}

/// The NIC's own events.
#[derive(Debug)]
pub enum NebulaEvent {
    /// RPC `token`'s payload is in memory: dispatch it.
    Arrived(u32),
}

/// The most frame buffers the NIC keeps for reuse (replies in flight at
/// once, beyond which buffers are freed).
const SPARE_FRAMES: usize = 256;

/// NEBULA's NIC (any of the five designs).
pub struct NebulaNic {
    design: NebulaDesign,
    cfg: NebulaConfig,
    mac: Mac,
    ip: u32,
    shared: BufferManager,
    dispatch: Dispatcher,
    rpcs: Vec<Option<Rpc>>,
    free_tokens: Vec<u32>,
    reassembly: HashMap<(u32, u16, u16), u32>,
    by_offset: HashMap<u64, u32>,
    scratch: Vec<u8>,
    /// Frame buffers the wire gave back ([`NicDesign::recycle`]), for the
    /// NIC's next replies and NACKs.
    spare_frames: Vec<Vec<u8>>,
    pub stats: NebulaStats,
    /// Every RPC finished: when the NIC received it and its server-side
    /// latency (received to freed, ns), in the order they finished.
    pub completions: Vec<(SimTime, u64)>,
    /// When each NACK was sent.
    pub nacked_at: Vec<SimTime>,
    /// Whether the node was announced ready (its receive buffer registered).
    announced: bool,
}

impl NebulaNic {
    /// The NIC of a node with `cores` cores (address `ip`); its queues go on
    /// the node's bus with [`NicDesign::attach`], as every design's devices do.
    pub fn new(
        design: NebulaDesign,
        cfg: NebulaConfig,
        mac: Mac,
        ip: u32,
        cores: usize,
    ) -> Result<NebulaNic, NebulaError> {
        if cores == 0 {
            return Err(NebulaError::NoCores);
        }
        Ok(NebulaNic::build(design, cfg, mac, ip, cores))
    }

    fn build(
        design: NebulaDesign,
        cfg: NebulaConfig,
        mac: Mac,
        ip: u32,
        cores: usize,
    ) -> NebulaNic {
        NebulaNic {
            design,
            shared: BufferManager::new(cfg.shared_buffer_bytes),
            dispatch: Dispatcher::new(design.policy(), cores, cfg.seed),
            cfg,
            mac,
            ip,
            rpcs: Vec::new(),
            free_tokens: Vec::new(),
            reassembly: HashMap::new(),
            by_offset: HashMap::new(),
            scratch: Vec::new(),
            spare_frames: Vec::new(),
            stats: NebulaStats::default(),
            completions: Vec::new(),
            nacked_at: Vec::new(),
            announced: false,
        }
    }

    /// Nothing has reached the NIC yet: no frame, RPC or command, not even
    /// the buffer's registration (what a store's preload leaves it at).
    pub fn untouched(&self) -> bool {
        let s = &self.stats;
        !self.announced
            && self.rpcs.is_empty()
            && self.reassembly.is_empty()
            && self.completions.is_empty()
            && self.nacked_at.is_empty()
            && s.rx_frames + s.rpcs + s.nacks + s.replies + s.frees + s.bad_frames + s.bad_commands
                == 0
    }

    pub fn design(&self) -> NebulaDesign {
        self.design
    }

    pub fn dispatcher(&self) -> &Dispatcher {
        &self.dispatch
    }

    fn nack(
        &mut self,
        info: &crate::nanopu::message::PacketInfo,
        at: SimTime,
        io: &mut NicIo<NebulaEvent>,
    ) {
        self.stats.nacks += 1;
        self.nacked_at.push(at);
        let frame = wire::frame(
            self.spare_frames.pop().unwrap_or_default(),
            self.ip,
            info.src_ip,
            info.dst_context,
            info.src_context,
            info.tx_msg_id,
            info.msg_len,
            Flags::NACK,
            &[],
        );
        io.transmit(frame, self.mac.transmit_ready(at));
    }

    /// Where a new RPC's payload goes: its offset and bytes reserved.
    fn reserve(&mut self, info: &crate::nanopu::message::PacketInfo) -> Option<(u64, u64)> {
        let len = info.msg_len as u64;
        if self.design.shared_buffers() {
            let off = self.shared.alloc(len)?;
            Some((
                off,
                len.div_ceil(buffers::SLOT_BYTES).max(1) * buffers::SLOT_BYTES,
            ))
        } else {
            let conn = info.src_context as u64;
            let slot = self.cfg.per_connection_slot_bytes;
            if conn >= self.cfg.connections as u64 || len > slot {
                return None;
            }
            let k = info.tx_msg_id as u64 % self.cfg.per_connection_messages as u64;
            Some((
                (conn * self.cfg.per_connection_messages as u64 + k) * slot,
                slot,
            ))
        }
    }

    fn push_to_core(&mut self, core: usize, token: u32, cycle: u64, cores: &mut Cores<'_>) {
        let base = cores
            .node
            .device::<NebulaQueues>()
            .and_then(|q| q.buffer_base())
            .unwrap_or(0);
        let rpc = self.rpcs[token as usize].as_mut().expect("live rpc");
        rpc.core = core;
        let addr = base + rpc.offset;
        let mut visible = cycle + self.cfg.notify_cycles;
        if self.design.steering() {
            let len = rpc.msg_len as u64;
            if let Some(done) =
                cores
                    .node
                    .nic_steer_to_l1d(core, addr, len, cycle, self.cfg.dma_outstanding_lines)
            {
                self.stats.steered_lines += len.div_ceil(64).max(1);
                visible = visible.max(done);
            }
        }
        let entry = CqEntry {
            visible,
            addr,
            len: rpc.msg_len,
            token,
        };
        if let Some(q) = cores.node.device_mut::<NebulaQueues>() {
            q.push(core, entry);
        }
    }

    fn retire_if_done(&mut self, token: u32) {
        let done = matches!(&self.rpcs[token as usize], Some(r) if r.freed && r.replied);
        if done {
            self.rpcs[token as usize] = None;
            self.free_tokens.push(token);
        }
    }

    fn command(
        &mut self,
        core: usize,
        cycle: u64,
        cmd: NebulaCommand,
        cores: &mut Cores<'_>,
        io: &mut NicIo<NebulaEvent>,
    ) {
        let base = cores
            .node
            .device::<NebulaQueues>()
            .and_then(|q| q.buffer_base())
            .unwrap_or(0);
        match cmd {
            NebulaCommand::Register { .. } => {
                // The program is ready: the boot message of the nanoPU ABI
                // (to 0.0.0.0), which load generators wait for.
                if std::mem::replace(&mut self.announced, true) {
                    return;
                }
                let at = cores.time_of(cycle);
                io.note(NicNote::Booted { at });
                if io.boot_on_wire {
                    let frame = wire::frame(
                        self.spare_frames.pop().unwrap_or_default(),
                        self.ip,
                        0,
                        0,
                        0,
                        0,
                        0,
                        Flags::DATA,
                        &[],
                    );
                    io.transmit(frame, self.mac.transmit_ready(at));
                }
            }
            NebulaCommand::Free { addr, len } => {
                let Some(&token) = self.by_offset.get(&addr.wrapping_sub(base)) else {
                    self.stats.bad_commands += 1;
                    return;
                };
                let rpc = self.rpcs[token as usize].as_mut().expect("live rpc");
                if rpc.freed || rpc.core != core {
                    self.stats.bad_commands += 1;
                    return;
                }
                if self.design.shared_buffers() && self.shared.free(rpc.offset, len as u64).is_err()
                {
                    self.stats.bad_commands += 1;
                    return;
                }
                rpc.freed = true;
                self.stats.frees += 1;
                let received_at = rpc.received_at;
                self.by_offset.remove(&rpc.offset);
                let at = cores.time_of(cycle);
                let ns = at.since(received_at).fs() / 1_000_000;
                self.completions.push((received_at, ns));
                self.retire_if_done(token);
                if let Some(next) = self.dispatch.finish(core) {
                    self.push_to_core(core, next, cycle, cores);
                }
            }
            NebulaCommand::Send { addr, len, token } => {
                let live = self.rpcs.get(token as usize).and_then(|r| r.as_ref());
                let Some(rpc) = live.filter(|r| !r.replied && r.core == core) else {
                    self.stats.bad_commands += 1;
                    return;
                };
                let (dst_ip, dst_port, src_port, tid) =
                    (rpc.src_ip, rpc.src_port, rpc.dst_port, rpc.tid);
                let mut bytes = std::mem::take(&mut self.scratch);
                bytes.clear();
                // A reply fits one IPv4 length field: no larger read is made.
                let read = if len <= u16::MAX as u32 {
                    bytes.resize(len as usize, 0);
                    cores
                        .node
                        .dma_read(addr, &mut bytes, cycle, self.cfg.dma_outstanding_lines)
                } else {
                    None
                };
                match read {
                    Some(done) => {
                        let frame = wire::frame(
                            self.spare_frames.pop().unwrap_or_default(),
                            self.ip,
                            dst_ip,
                            src_port,
                            dst_port,
                            tid,
                            len as u16,
                            Flags::DATA,
                            &bytes,
                        );
                        io.transmit(frame, self.mac.transmit_ready(cores.time_of(done)));
                        self.stats.replies += 1;
                    }
                    _ => self.stats.bad_commands += 1,
                }
                self.scratch = bytes;
                self.rpcs[token as usize].as_mut().expect("live").replied = true;
                self.retire_if_done(token);
            }
        }
    }
}

impl NicDesign for NebulaNic {
    type Event = NebulaEvent;

    /// The queues' register window at [`NEBULA_BASE`], one block per core.
    /// A node forked from one booted behind another NEBULA design already has
    /// the queues: they are told this design's receive-buffer size, and the
    /// rest of their state (the program's registration included) stays.
    fn attach(&self, node: &mut Node) -> Result<(), OverlapError> {
        let bytes = self.cfg.buffer_bytes(self.design);
        if let Some(queues) = node.device_mut::<NebulaQueues>() {
            queues.set_buffer_bytes(bytes);
            return Ok(());
        }
        let queues = NebulaQueues::new(node.cores(), bytes);
        let base = node.cfg().devices.base("nebula", NEBULA_BASE);
        node.attach_device("nebula", base, NEBULA_SIZE, queues)
    }

    fn frame_in(
        &mut self,
        frame: &[u8],
        first_bit: SimTime,
        cores: &mut Cores<'_>,
        io: &mut NicIo<NebulaEvent>,
    ) {
        self.stats.rx_frames += 1;
        let Some((info, flags, payload)) = wire::parse(frame) else {
            self.stats.bad_frames += 1;
            return;
        };
        if !flags.contains(Flags::DATA) || info.dst_ip != self.ip {
            self.stats.bad_frames += 1;
            return;
        }
        let in_nic = self.mac.received(first_bit, frame.len());
        let cycle = cores.cycle_at(in_nic);
        let Some(base) = cores
            .node
            .device::<NebulaQueues>()
            .and_then(|q| q.buffer_base())
        else {
            self.stats.before_buffer += 1;
            self.nack(&info, in_nic, io);
            return;
        };
        let key = (info.src_ip, info.src_context, info.tx_msg_id);
        let token = match self.reassembly.get(&key) {
            Some(&t) => t,
            None => {
                let Some((offset, reserved)) = self.reserve(&info) else {
                    self.nack(&info, in_nic, io);
                    return;
                };
                let rpc = Rpc {
                    src_ip: info.src_ip,
                    src_port: info.src_context,
                    dst_port: info.dst_context,
                    tid: info.tx_msg_id,
                    offset,
                    reserved,
                    msg_len: info.msg_len as u32,
                    received: 0,
                    received_at: in_nic,
                    core: usize::MAX,
                    freed: false,
                    replied: false,
                };
                let t = match self.free_tokens.pop() {
                    Some(t) => {
                        self.rpcs[t as usize] = Some(rpc);
                        t
                    }
                    None => {
                        self.rpcs.push(Some(rpc));
                        (self.rpcs.len() - 1) as u32
                    }
                };
                self.reassembly.insert(key, t);
                self.by_offset.insert(offset, t);
                t
            }
        };
        let rpc = self.rpcs[token as usize].as_mut().expect("live rpc");
        let at = rpc.offset + info.pkt_offset as u64 * self.cfg.mtu_payload as u64;
        let fits = at + payload.len() as u64 <= rpc.offset + rpc.reserved;
        let written = if fits {
            cores
                .node
                .dma_write(base + at, payload, cycle, self.cfg.dma_outstanding_lines)
        } else {
            None
        };
        let Some(done) = written else {
            self.stats.bad_frames += 1;
            return;
        };
        self.stats.payload_bytes += payload.len() as u64;
        rpc.received += payload.len() as u32;
        rpc.received_at = rpc.received_at.max(in_nic);
        if rpc.received >= rpc.msg_len {
            self.reassembly.remove(&key);
            self.stats.rpcs += 1;
            io.schedule(cores.time_of(done), NebulaEvent::Arrived(token));
        }
    }

    fn take_from_cores(&mut self, cores: &mut Cores<'_>, io: &mut NicIo<NebulaEvent>) {
        // Most calls find no command: looking first through the shared
        // accessor keeps the sleepers' wake memos (`Node::device_mut` drops them).
        while let Some((core, cycle, cmd)) = match cores.node.device::<NebulaQueues>() {
            Some(q) if q.has_commands() => cores
                .node
                .device_mut::<NebulaQueues>()
                .and_then(NebulaQueues::take_command),
            _ => None,
        } {
            self.command(core, cycle, cmd, cores, io);
        }
    }

    fn handle(
        &mut self,
        event: NebulaEvent,
        now: SimTime,
        cores: &mut Cores<'_>,
        _io: &mut NicIo<NebulaEvent>,
    ) {
        match event {
            NebulaEvent::Arrived(token) => {
                if let Some(core) = self.dispatch.arrive(token) {
                    let cycle = cores.cycle_at(now);
                    self.push_to_core(core, token, cycle, cores);
                }
            }
        }
    }

    fn recycle(&mut self, frame: Vec<u8>) -> Option<Vec<u8>> {
        if self.wants_frames() {
            self.spare_frames.push(frame);
            None
        } else {
            Some(frame)
        }
    }

    fn wants_frames(&self) -> bool {
        self.spare_frames.len() < SPARE_FRAMES
    }

    fn stats(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self.stats).expect("counters serialize");
        v["design"] = self.design.name().into();
        v["buffer_scrubs"] = self.shared.scrubs.into();
        v["assigned_behind"] = self.dispatch.assigned_behind.into();
        v
    }
}

/// The frames between clients and this NIC: the nanoPU transport header
/// (`nanopu_wire`), one message per `tx_msg_id` (the paper's `tid`, §V-D),
/// the source context naming the client's connection; a NACK is a header
/// with the NACK flag and the refused message's id.
pub mod wire {
    use crate::nanopu::message::PacketInfo;
    use nanopu_wire::{
        EthernetAddress, EthernetRepr, Flags, FrameRepr, Ipv4Address, Ipv4Repr, NanoTransportRepr,
    };

    /// A frame of `payload` (one packet of a message of `msg_len` bytes),
    /// written into `buf` (a spare frame buffer, or a new one: what it held
    /// is replaced), so that a buffer reused frame after frame allocates
    /// nothing.
    #[allow(clippy::too_many_arguments)]
    pub fn frame(
        buf: Vec<u8>,
        src_ip: u32,
        dst_ip: u32,
        src_context: u16,
        dst_context: u16,
        tid: u16,
        msg_len: u16,
        flags: Flags,
        payload: &[u8],
    ) -> Vec<u8> {
        frame_at(
            buf,
            src_ip,
            dst_ip,
            src_context,
            dst_context,
            tid,
            msg_len,
            0,
            flags,
            payload,
        )
    }

    /// Packet `pkt_offset` of a message (see [`frame`]).
    #[allow(clippy::too_many_arguments)]
    pub fn frame_at(
        mut buf: Vec<u8>,
        src_ip: u32,
        dst_ip: u32,
        src_context: u16,
        dst_context: u16,
        tid: u16,
        msg_len: u16,
        pkt_offset: u16,
        flags: Flags,
        payload: &[u8],
    ) -> Vec<u8> {
        let repr = FrameRepr::new(
            EthernetRepr {
                src_addr: EthernetAddress::for_ipv4(src_ip),
                dst_addr: EthernetAddress::for_ipv4(dst_ip),
                ethertype: nanopu_wire::ethernet::ETHERTYPE_IPV4,
            },
            Ipv4Repr {
                src_addr: Ipv4Address::from_bits(src_ip),
                dst_addr: Ipv4Address::from_bits(dst_ip),
                protocol: nanopu_wire::nanotransport::PROTOCOL,
                payload_len: 0,
                ttl: 64,
                tos: 0,
                ident: 0,
                dont_frag: true,
            },
            NanoTransportRepr {
                flags,
                src_context,
                dst_context,
                msg_len,
                pkt_offset,
                pull_offset: 0,
                tx_msg_id: tid,
                buf_ptr: 0,
                buf_size_class: 0,
                priority: 0,
                grant_offset: 0,
            },
            payload.len(),
        );
        buf.clear();
        buf.resize(repr.frame_len(), 0);
        repr.emit(payload, &mut buf)
            .expect("the frame fits its own length");
        buf
    }

    /// A frame's header and payload, `None` if it is not one.
    pub fn parse(frame: &[u8]) -> Option<(PacketInfo, Flags, &[u8])> {
        let (r, payload) = FrameRepr::parse(frame).ok()?;
        let info = PacketInfo {
            src_ip: r.ip.src_addr.to_bits(),
            dst_ip: r.ip.dst_addr.to_bits(),
            src_context: r.nt.src_context,
            dst_context: r.nt.dst_context,
            msg_len: r.nt.msg_len,
            pkt_offset: r.nt.pkt_offset,
            tx_msg_id: r.nt.tx_msg_id,
        };
        Some((info, r.nt.flags, payload))
    }
}
