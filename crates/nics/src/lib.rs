//! The NIC designs a node can have, one folder each, and the interface they
//! share: everything of a design (its parameters with their sources, its
//! engine, its wire format, its host-side devices, its stats) lives in its
//! folder, so `ls crates/nics/src/rdma` answers "which files are the RDMA
//! NIC?".
//!
//! A NIC sits between the wire and a node's cores. The co-simulation loop
//! (`nanopu_system::cluster`) drives it through three calls and asks it for
//! nothing else:
//!
//! - [`NicDesign::frame_in`]: a frame's first bit reaches the NIC;
//! - [`NicDesign::take_from_cores`]: the cores have run; take what they
//!   handed the NIC (register-file messages and commands, MMIO doorbells and
//!   the DMA reads behind them), each at the time it happened;
//! - [`NicDesign::handle`]: an event the NIC scheduled comes due.
//!
//! It answers through a [`NicIo`] (frames for the wire, events to schedule,
//! notes for the experiment's records), and reaches the node only through
//! [`Cores`], the node's narrow NIC-side interface. It owns no clock and no
//! queue, so a design can be tested alone.
//!
//! | module | design |
//! |---|---|
//! | [`nanopu`] | the nanoPU NIC: messages straight into the register file (nanoPU Fig. 1) |
//! | [`icenic`] | a traditional DMA NIC (IceNIC), a device on the node's bus |
//! | [`nebula`] | NEBULA's integrated NIC and RSS, RPCValet, SRQ_emu, NEBULA_base (NEBULA §VI) |
//! | [`rdma`] | an RDMA NIC behind PCIe: queue pairs and verbs (HERD §2-3) |
//!
//! Adding a design is one module that implements [`NicDesign`] plus one arm
//! of [`NodeNic`] (and of [`NicKind`], if configuration files should name
//! it); a design of your own, outside this crate, plugs in as
//! [`NodeNic::Custom`]. `docs/adding-a-nic.md` walks through it with the
//! traditional NIC as the example.

pub mod icenic;
pub mod kind;
pub mod mac;
pub mod nanopu;
pub mod nebula;
pub mod rdma;

use nanopu_node::{Node, OverlapError};
use nanopu_sim::{Io, SimDuration, SimTime};
use nanopu_transport::NanoTransport;

pub use kind::NicKind;

/// A NIC design. See the module documentation.
pub trait NicDesign {
    /// The design's own timed events, handed back through
    /// [`NicDesign::handle`] at the time they were scheduled for.
    type Event;

    /// Attaches the design's host-side device(s) to `node`'s bus
    /// ([`Node::attach_device`]: a register window the cores reach by MMIO),
    /// once, when the design is built for the node. A design the cores
    /// reach only through the register file (the nanoPU NIC) attaches none.
    fn attach(&self, _node: &mut Node) -> Result<(), OverlapError> {
        Ok(())
    }

    /// `frame`'s first bit reaches the NIC at `first_bit`.
    fn frame_in(
        &mut self,
        frame: &[u8],
        first_bit: SimTime,
        cores: &mut Cores<'_>,
        io: &mut NicIo<Self::Event>,
    );

    /// The cores have run: take what they handed the NIC.
    fn take_from_cores(&mut self, cores: &mut Cores<'_>, io: &mut NicIo<Self::Event>);

    /// An event scheduled through [`NicIo::schedule`] comes due at `now`.
    fn handle(
        &mut self,
        event: Self::Event,
        now: SimTime,
        cores: &mut Cores<'_>,
        io: &mut NicIo<Self::Event>,
    );

    /// The design's counters, for reports.
    fn stats(&self) -> serde_json::Value;

    /// The design's counters with those of the host-side device(s) it
    /// attached to `node` (what a report of the node shows), so that no
    /// caller reaches into a design's device by its type. By default
    /// [`NicDesign::stats`]: a design whose devices count nothing of
    /// their own, or report it through the design, need not say more.
    fn stats_on(&self, _node: &Node) -> serde_json::Value {
        self.stats()
    }

    /// NanoTransport, if the design runs one.
    fn transport(&self) -> Option<&NanoTransport> {
        None
    }

    /// Takes a consumed frame buffer for reuse; returns it if not taken.
    fn recycle(&mut self, frame: Vec<u8>) -> Option<Vec<u8>> {
        Some(frame)
    }

    /// Whether [`NicDesign::recycle`] would take a buffer now.
    fn wants_frames(&self) -> bool {
        false
    }
}

/// The node as its NIC sees it: the cores behind their NIC-side interfaces
/// ([`Node::deliver_to_core`], [`Node::take_core_output`], the bus devices)
/// and the node's clock.
pub struct Cores<'a> {
    pub node: &'a mut Node,
    pub period: SimDuration,
}

impl Cores<'_> {
    /// The first core cycle at or after `t`.
    pub fn cycle_at(&self, t: SimTime) -> u64 {
        t.to_cycle_ceil(self.period)
    }

    /// When core cycle `cycle` begins.
    pub fn time_of(&self, cycle: u64) -> SimTime {
        SimTime::from_cycle(cycle, self.period)
    }
}

/// Something the wiring records about a node (never changes what the NIC
/// does).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NicNote {
    /// The program sent its boot message (a message to 0.0.0.0).
    Booted { at: SimTime },
    /// A core sent a message of `len` bytes to `dst_ip`.
    Sent { dst_ip: u32, len: u16, at: SimTime },
    /// A message of `len` bytes from `src_ip` reached a core; `first_word`
    /// is its first payload word, if it has one.
    Delivered {
        src_ip: u32,
        len: u16,
        first_word: Option<u64>,
        at: SimTime,
    },
    /// A message could not be put into a core's RX FIFO.
    DeliveryFailed,
}

/// What a NIC asks of the world around it during one call: the one I/O
/// vocabulary of the simulator ([`Io`]: frames for the wire, events to
/// schedule, [`NicNote`]s), and the setting NICs need beside it.
#[derive(Debug)]
pub struct NicIo<E> {
    io: Io<E, NicNote>,
    /// Boot messages go out on the wire (a direct link to a load generator
    /// that waits for them) rather than stopping at the wiring (a switched
    /// network has no route for 0.0.0.0).
    pub boot_on_wire: bool,
}

impl<E> Default for NicIo<E> {
    fn default() -> Self {
        NicIo {
            io: Io::default(),
            boot_on_wire: false,
        }
    }
}

impl<E> std::ops::Deref for NicIo<E> {
    type Target = Io<E, NicNote>;
    fn deref(&self) -> &Self::Target {
        &self.io
    }
}

impl<E> std::ops::DerefMut for NicIo<E> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.io
    }
}

/// What a NIC asked for, taken out of its [`NicIo`].
pub type NicRequests<'a, E> = nanopu_sim::Drain<'a, E, NicNote>;

/// A design with its own scratch [`NicIo`] (so [`NodeNic`] can wrap its
/// events without allocating).
pub struct Wrapped<N: NicDesign> {
    pub nic: N,
    io: NicIo<N::Event>,
}

impl<N: NicDesign> Wrapped<N> {
    pub fn new(nic: N) -> Self {
        Wrapped {
            nic,
            io: NicIo::default(),
        }
    }

    fn call<E>(
        &mut self,
        outer: &mut NicIo<E>,
        wrap: impl Fn(N::Event) -> E,
        f: impl FnOnce(&mut N, &mut NicIo<N::Event>),
    ) {
        self.io.boot_on_wire = outer.boot_on_wire;
        f(&mut self.nic, &mut self.io);
        outer.io.absorb(&mut self.io.io, wrap);
    }
}

/// A design of your own, outside this crate: its events are plain numbers
/// it interprets itself.
pub type CustomNic = Box<dyn NicDesign<Event = u64>>;

/// The NIC of a node: one arm per design.
pub enum NodeNic {
    Nanopu(Box<Wrapped<nanopu::NanoPuNic>>),
    Icenic(Box<Wrapped<icenic::IceNicPort>>),
    Custom(Box<Wrapped<CustomNic>>),
    Nebula(Box<Wrapped<nebula::NebulaNic>>),
    Rdma(Box<Wrapped<rdma::RdmaNic>>),
}

/// An event of one of [`NodeNic`]'s designs.
#[derive(Debug)]
pub enum NodeNicEvent {
    Nanopu(nanopu::NanoPuEvent),
    Icenic(icenic::IceNicEvent),
    Custom(u64),
    Nebula(nebula::NebulaEvent),
    Rdma(rdma::RdmaEvent),
}

impl NicDesign for CustomNic {
    type Event = u64;
    fn attach(&self, node: &mut Node) -> Result<(), OverlapError> {
        (**self).attach(node)
    }
    fn frame_in(&mut self, f: &[u8], t: SimTime, c: &mut Cores<'_>, io: &mut NicIo<u64>) {
        (**self).frame_in(f, t, c, io)
    }
    fn take_from_cores(&mut self, c: &mut Cores<'_>, io: &mut NicIo<u64>) {
        (**self).take_from_cores(c, io)
    }
    fn handle(&mut self, e: u64, t: SimTime, c: &mut Cores<'_>, io: &mut NicIo<u64>) {
        (**self).handle(e, t, c, io)
    }
    fn stats(&self) -> serde_json::Value {
        (**self).stats()
    }
    fn stats_on(&self, node: &Node) -> serde_json::Value {
        (**self).stats_on(node)
    }
    fn transport(&self) -> Option<&NanoTransport> {
        (**self).transport()
    }
    fn recycle(&mut self, frame: Vec<u8>) -> Option<Vec<u8>> {
        (**self).recycle(frame)
    }
    fn wants_frames(&self) -> bool {
        (**self).wants_frames()
    }
}

/// Calls `$body` with the design of `$nic` bound to `$n`, wrapping its
/// events into [`NodeNicEvent`] on the way out.
macro_rules! each_design {
    ($nic:expr, $io:expr, |$n:ident, $inner:ident| $body:expr) => {
        match $nic {
            NodeNic::Nanopu(w) => w.call($io, NodeNicEvent::Nanopu, |$n, $inner| $body),
            NodeNic::Icenic(w) => w.call($io, NodeNicEvent::Icenic, |$n, $inner| $body),
            NodeNic::Custom(w) => w.call($io, NodeNicEvent::Custom, |$n, $inner| $body),
            NodeNic::Nebula(w) => w.call($io, NodeNicEvent::Nebula, |$n, $inner| $body),
            NodeNic::Rdma(w) => w.call($io, NodeNicEvent::Rdma, |$n, $inner| $body),
        }
    };
}

impl NodeNic {
    /// See [`NicDesign::attach`].
    pub fn attach(&self, node: &mut Node) -> Result<(), OverlapError> {
        match self {
            NodeNic::Nanopu(w) => w.nic.attach(node),
            NodeNic::Icenic(w) => w.nic.attach(node),
            NodeNic::Custom(w) => w.nic.attach(node),
            NodeNic::Nebula(w) => w.nic.attach(node),
            NodeNic::Rdma(w) => w.nic.attach(node),
        }
    }

    pub fn nanopu(nic: nanopu::NanoPuNic) -> NodeNic {
        NodeNic::Nanopu(Box::new(Wrapped::new(nic)))
    }

    pub fn icenic(nic: icenic::IceNicPort) -> NodeNic {
        NodeNic::Icenic(Box::new(Wrapped::new(nic)))
    }

    pub fn custom(nic: CustomNic) -> NodeNic {
        NodeNic::Custom(Box::new(Wrapped::new(nic)))
    }

    pub fn nebula(nic: nebula::NebulaNic) -> NodeNic {
        NodeNic::Nebula(Box::new(Wrapped::new(nic)))
    }

    /// NEBULA's NIC, if that is the design.
    pub fn as_nebula(&self) -> Option<&nebula::NebulaNic> {
        match self {
            NodeNic::Nebula(w) => Some(&w.nic),
            _ => None,
        }
    }

    pub fn rdma(nic: rdma::RdmaNic) -> NodeNic {
        NodeNic::Rdma(Box::new(Wrapped::new(nic)))
    }

    /// The RDMA NIC, if that is the design.
    pub fn as_rdma(&self) -> Option<&rdma::RdmaNic> {
        match self {
            NodeNic::Rdma(w) => Some(&w.nic),
            _ => None,
        }
    }

    pub fn as_nebula_mut(&mut self) -> Option<&mut nebula::NebulaNic> {
        match self {
            NodeNic::Nebula(w) => Some(&mut w.nic),
            _ => None,
        }
    }

    pub fn as_rdma_mut(&mut self) -> Option<&mut rdma::RdmaNic> {
        match self {
            NodeNic::Rdma(w) => Some(&mut w.nic),
            _ => None,
        }
    }

    /// The design's name, for reports.
    pub fn kind_name(&self) -> &'static str {
        match self {
            NodeNic::Nanopu(_) => NicKind::Nanopu.name(),
            NodeNic::Icenic(_) => NicKind::Icenic.name(),
            NodeNic::Custom(_) => "custom",
            NodeNic::Nebula(w) => w.nic.design().name(),
            NodeNic::Rdma(_) => NicKind::Rdma.name(),
        }
    }

    /// The nanoPU NIC, if that is the design.
    pub fn as_nanopu(&self) -> Option<&nanopu::NanoPuNic> {
        match self {
            NodeNic::Nanopu(w) => Some(&w.nic),
            _ => None,
        }
    }

    pub fn frame_in(
        &mut self,
        frame: &[u8],
        first_bit: SimTime,
        cores: &mut Cores<'_>,
        io: &mut NicIo<NodeNicEvent>,
    ) {
        each_design!(self, io, |n, inner| n
            .frame_in(frame, first_bit, cores, inner))
    }

    pub fn take_from_cores(&mut self, cores: &mut Cores<'_>, io: &mut NicIo<NodeNicEvent>) {
        each_design!(self, io, |n, inner| n.take_from_cores(cores, inner))
    }

    pub fn handle(
        &mut self,
        event: NodeNicEvent,
        now: SimTime,
        cores: &mut Cores<'_>,
        io: &mut NicIo<NodeNicEvent>,
    ) {
        match (self, event) {
            (NodeNic::Nanopu(w), NodeNicEvent::Nanopu(e)) => {
                w.call(io, NodeNicEvent::Nanopu, |n, i| n.handle(e, now, cores, i))
            }
            (NodeNic::Icenic(w), NodeNicEvent::Icenic(e)) => {
                w.call(io, NodeNicEvent::Icenic, |n, i| n.handle(e, now, cores, i))
            }
            (NodeNic::Custom(w), NodeNicEvent::Custom(e)) => {
                w.call(io, NodeNicEvent::Custom, |n, i| n.handle(e, now, cores, i))
            }
            (NodeNic::Nebula(w), NodeNicEvent::Nebula(e)) => {
                w.call(io, NodeNicEvent::Nebula, |n, i| n.handle(e, now, cores, i))
            }
            (NodeNic::Rdma(w), NodeNicEvent::Rdma(e)) => {
                w.call(io, NodeNicEvent::Rdma, |n, i| n.handle(e, now, cores, i))
            }
            _ => unreachable!("an event goes back to the design that scheduled it"),
        }
    }

    pub fn stats(&self) -> serde_json::Value {
        match self {
            NodeNic::Nanopu(w) => w.nic.stats(),
            NodeNic::Icenic(w) => w.nic.stats(),
            NodeNic::Custom(w) => w.nic.stats(),
            NodeNic::Nebula(w) => w.nic.stats(),
            NodeNic::Rdma(w) => w.nic.stats(),
        }
    }

    /// See [`NicDesign::stats_on`].
    pub fn stats_on(&self, node: &Node) -> serde_json::Value {
        match self {
            NodeNic::Nanopu(w) => w.nic.stats_on(node),
            NodeNic::Icenic(w) => w.nic.stats_on(node),
            NodeNic::Custom(w) => w.nic.stats_on(node),
            NodeNic::Nebula(w) => w.nic.stats_on(node),
            NodeNic::Rdma(w) => w.nic.stats_on(node),
        }
    }

    pub fn transport(&self) -> Option<&NanoTransport> {
        match self {
            NodeNic::Nanopu(w) => w.nic.transport(),
            NodeNic::Icenic(w) => w.nic.transport(),
            NodeNic::Custom(w) => w.nic.transport(),
            NodeNic::Nebula(w) => w.nic.transport(),
            NodeNic::Rdma(w) => w.nic.transport(),
        }
    }

    pub fn recycle(&mut self, frame: Vec<u8>) -> Option<Vec<u8>> {
        match self {
            NodeNic::Nanopu(w) => w.nic.recycle(frame),
            NodeNic::Icenic(w) => w.nic.recycle(frame),
            NodeNic::Custom(w) => w.nic.recycle(frame),
            NodeNic::Nebula(w) => w.nic.recycle(frame),
            NodeNic::Rdma(w) => w.nic.recycle(frame),
        }
    }

    pub fn wants_frames(&self) -> bool {
        match self {
            NodeNic::Nanopu(w) => w.nic.wants_frames(),
            NodeNic::Icenic(w) => w.nic.wants_frames(),
            NodeNic::Custom(w) => w.nic.wants_frames(),
            NodeNic::Nebula(w) => w.nic.wants_frames(),
            NodeNic::Rdma(w) => w.nic.wants_frames(),
        }
    }
}

/// The IPv4 destination of an Ethernet frame (0 if too short to have one).
pub(crate) fn frame_dst_ip(frame: &[u8]) -> u32 {
    const DST: usize = nanopu_wire::frame::IPV4_OFFSET + 16;
    frame
        .get(DST..DST + 4)
        .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}
