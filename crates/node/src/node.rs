//! A nanoPU node: its harts, memory system and devices, and the loop that
//! runs them in time order.
//!
//! Each hart keeps its own cycle count. The node always runs the hart that
//! is furthest behind, for at most `quantum_cycles` past the next one and
//! never past the next timer event, so harts stay within a quantum of each
//! other and interrupts are taken at the exact cycle. A hart that waits
//! (`wfi`, an idle polling loop, a stall on netRX/netTX) is put to sleep and
//! costs no host time: when something can wake it, the node advances it to
//! that cycle, by whole loop iterations for a polling loop, so its cycle and
//! instruction counts stay exact.
//!
//! A loop polling memory words wakes when another hart stores to one. The
//! store's time is known only when it is made, so the bus keeps the words
//! the sleeping pollers read and a store to one ends the storing hart's
//! slice after it (as a CLINT store does): the wake check that follows
//! finds the poller's words changed while the storing hart stands at the
//! store's cycle. Until session 26 the check came only at the end of the
//! slice, which nothing bounds while the other harts sleep: a poller woke
//! a whole slice late or, when no hart was running by then, at its own
//! (earlier) cycle, seeing a value written millions of cycles in its
//! future (`stream` on four cores: three harts 3.4 M cycles behind their
//! bookings, past the LLC banks' ring, and 10 M cycles of bank waits).
//!
//! # What the scheduler computes, and what it remembers
//!
//! The rule above fixes every slice (which hart, up to which cycle); the
//! scheduler below finds the same slices with less work, so results are
//! bit-identical to scanning every hart before every slice:
//!
//! - Running and sleeping harts are bit masks; the hart furthest behind and
//!   the one next behind it come from one pass over the running harts.
//! - A sleeping hart that cannot continue has a *wake memo*: that answer and
//!   its wake cycle (the earliest cycle at which time alone wakes it: a
//!   timer, a message arriving, a thread-scheduler event). Both depend only
//!   on the hart (frozen while it sleeps, its own cycle included), its
//!   network interface and the devices, so the memo holds until one of
//!   these may change. It is dropped when the hart's state changes; for
//!   every hart as soon as any hart touches a device (the bus counts device
//!   stores and loads other than status reads: a CLINT store raises another
//!   hart's interrupt, a device register read may have effects; a status
//!   read has none, by definition); for one core when the NIC delivers to
//!   it or takes its output; for every hart when anything else outside the
//!   run reaches the node through a `&mut` method (a DMA, the traditional
//!   NIC, a debugger). Device status registers a hart polls change only
//!   as above or with time, which its wake cycle covers; memory words it
//!   polls may change with any store, so every wake check reads those again
//!   (the memo holds for the rest).
//! - When a run ends at its limit, sleepers move to the limit
//!   (`idle_until`); one whose wake cycle is later keeps its memo
//!   (time alone wakes it, and not before then). If a wake check at the
//!   new cycle would still change something (a device interrupt line rose,
//!   enabled or not; its thread scheduler has a transition, an arrival or
//!   a rising interrupt due by then, which it counts at the cycle it is
//!   brought to) the next wake check calls `can_wake` on it for that; the
//!   memo remembers the first cycle at which that happens, so other
//!   sleepers cost no wake check at all.
//! - Harts with output for the NIC are a bit mask too (only a hart's own
//!   slice makes output), and the earliest memo'd wake-up is cached while
//!   the memos hold.
//!
//! Why slices are no longer than a quantum: harts share the L2 and DRAM
//! timing model (requests are accounted in the order they are made), DRAM
//! contents and LR/SC reservations, and an interrupt another hart raises
//! through the CLINT is seen at the start of the next slice. Running a hart
//! further would reorder these and change results; doing it exactly needs
//! the core to stop before its first shared access (a bus hook in its run
//! loop). In message-heavy programs slices are short for another reason:
//! the node runs only up to the next network event
//! (`docs/parallel-network.md`).

use crate::bus_device::NicDevice;
use crate::clint::{Clint, CLINT_BASE, CLINT_SIZE};
use crate::config::{NodeConfig, NodeConfigError, DRAM_BASE};
use crate::device::{Device, DeviceMap, OverlapError};
use crate::dram::Dram;
use crate::htif::{Htif, HtifError, HtifRequest};
use crate::loader::{load_file, LoadError, Program};
use crate::memory::{MemoryStats, MemorySystem, NodeBus};
use crate::uart::{Uart, UART_BASE, UART_SIZE};
use nanopu_core::{DecodeCache, GuestFault, Hart, HartStats, NetIf, Observer, Stop, TextTrace};
use std::cell::Cell;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

mod debug;
pub use debug::ObservedEnd;

/// What a hart is doing, as far as the node's scheduling is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HartState {
    Running,
    /// In `wfi`: wakes when an interrupt is pending in `mie`.
    Wfi,
    /// In an idle loop (see [`Stop::Poll`]): wakes on an interrupt, a
    /// message, or a change in a word the loop reads (`Hart::watched`).
    Poll {
        period_cycles: u64,
        period_instret: u64,
    },
    /// Stalled reading an empty netRX.
    RxEmpty,
    /// Stalled writing a full netTX.
    TxFull,
}

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

/// One hart's counters, for reports (`run --stats-json`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct HartSummary {
    pub cycles: u64,
    pub instret: u64,
    pub icache_misses: u64,
    pub dcache_misses: u64,
    pub branch_mispredicts: u64,
    pub traps: u64,
    pub interrupts: u64,
    pub idle_cycles: u64,
    /// Of `instret`, the instructions of skipped polling-loop iterations.
    pub idle_instret: u64,
}

/// How a run ended without error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunEnd {
    /// The program exited through HTIF with this code.
    Exited(u64),
    /// Every hart reached the cycle limit.
    Limit,
}

/// Why a node could not be built or a run failed.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// The cause is in the message, not a `source`: printed once in a chain.
    #[error("invalid node configuration: {0}")]
    Config(NodeConfigError),
    #[error("cannot attach a device: {0}")]
    Device(OverlapError),
    /// The cause is in the message, not a `source`: printed once in a chain.
    #[error("cannot reserve {bytes} bytes of DRAM: {cause}")]
    Memory { bytes: u64, cause: std::io::Error },
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error("guest fault: {0}")]
    Fault(GuestFault),
    #[error("host I/O error: {0}")]
    Htif(HtifError),
    #[error("deadlock: every hart waits for something that can never happen\n{0}")]
    Deadlock(String),
    /// [`Node::set_stop_request`] was raised (Ctrl-C): where each hart was.
    #[error("interrupted\n{0}")]
    Interrupted(String),
    #[error("cannot fork the node: {0}")]
    Fork(&'static str),
}

// Not `#[from]`: that would make the cause a `source` too, printed twice in
// a chain.
impl From<OverlapError> for NodeError {
    fn from(e: OverlapError) -> Self {
        NodeError::Device(e)
    }
}

/// With a [`Node::set_stop_request`] (or a pause, [`Node::run_pausing`]), the
/// longest piece of a slice a hart runs before the node looks at the flag (a
/// quarter of a millisecond at 3.2 GHz; several harts already take turns
/// every `quantum_cycles`). The pieces end where the slice would have, so
/// looking changes no result.
pub const STOP_CHECK_CYCLES: u64 = 1 << 20;

/// What the node's loop does after a slice ([`Node::run_slice`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum SliceEnd {
    /// Picks the next hart.
    Next,
    /// Returns `RunEnd::Limit` to the caller: the NIC has something to
    /// take, an observer stopped a hart, or a pause came.
    Return,
}

/// One simulated nanoPU node.
pub struct Node {
    cfg: NodeConfig,
    harts: Vec<Hart>,
    states: Vec<HartState>,
    bus: NodeBus,
    decode_cache: DecodeCache,
    program: Option<Program>,
    /// Exit code once the program has exited, with the exiting hart.
    exit: Option<(u64, usize)>,
    /// Watches every instruction (an instruction trace, a commit log), if
    /// anything does.
    observer: Option<Box<dyn Observer + Send>>,
    /// The hart an observer stopped (see [`Node::run_observed`]).
    observer_stop: Option<usize>,
    /// Return between two slices once nothing can happen before this cycle
    /// (see [`Node::run_pausing`]).
    pause_at: Option<u64>,
    /// A hart's slice a pause interrupted, with the cycle it runs to: the
    /// next run goes on with it before anything else.
    slice_in_progress: Option<(usize, u64)>,
    /// Messages the cores sent while no NIC is attached.
    sent: TxSink,
    /// A NIC takes the cores' messages and commands (it drains them with
    /// [`Node::take_core_output`] between runs, and its devices' output
    /// through [`Node::device_mut`]); otherwise the node collects the
    /// messages in `sent` and its devices keep only the last
    /// [`TX_SINK_KEEP`] items of output.
    nic_attached: bool,
    /// Set from outside (a Ctrl-C handler) to stop the run: looked at
    /// between slices and every [`STOP_CHECK_CYCLES`] inside one, never per
    /// instruction; the run then ends with [`NodeError::Interrupted`].
    stop_request: Option<Arc<AtomicBool>>,
    /// For each hart in an idle loop: the words its loop reads and their
    /// values when it went to sleep.
    watches: Vec<Vec<(u64, u64)>>,
    /// The bus's set of words that sleepers poll (a store to one ends the
    /// storing hart's slice) no longer matches `watches` and the states.
    watched_stale: bool,
    /// Bit `h`: hart `h` sleeps (its state is not `Running`).
    sleeping: u64,
    /// For each sleeping hart whose bit is set in `memo_valid`, what the
    /// scheduler last worked out: it cannot continue now, and this is its
    /// [`wake_cycle`](Node::wake_cycle), the earliest cycle at which time
    /// alone wakes it. Both depend only on the hart (frozen while it
    /// sleeps), its network interface and the devices; the memo is dropped
    /// when any of these may have changed (see the module documentation).
    wake_memo: Vec<Option<u64>>,
    /// Bit `h`: `wake_memo[h]` holds, as of `memo_device_accesses`.
    memo_valid: u64,
    /// Bit `h`: hart `h`'s memo holds for everything but the memory words
    /// its loop polls (any store may change them), which every wake check
    /// reads again ([`watched_words_changed`](Node::watched_words_changed)).
    memo_reads_memory: u64,
    /// With a wake memo: the first cycle after the hart's at which a wake
    /// check ([`can_wake`](Node::can_wake)) would change something again
    /// (see [`recheck_cycle`](Node::recheck_cycle); `u64::MAX`: never).
    memo_recheck_at: Vec<u64>,
    /// The bus's device-access count when `memo_valid` was last checked
    /// against it.
    memo_device_accesses: u64,
    /// Bit `h`: sleeping hart `h` was moved forward in time by
    /// [`idle_until`](Node::idle_until) with its memo kept, and `can_wake`
    /// there would change its state (it reached its `memo_recheck_at`: one
    /// of its device interrupt lines rose, or its thread scheduler has
    /// something due): the next wake check still calls
    /// [`can_wake`](Node::can_wake) on it for that.
    owed_check: u64,
    /// Bit `h`: hart `h` may have output for a NIC (commands, complete
    /// netTX messages): only a hart's own run produces it, so the node sets
    /// the bit after each slice and [`take_core_output`](Node::take_core_output)
    /// looks at these harts alone.
    may_have_output: u64,
    /// Scratch for the netTX messages [`take_core_output`](Node::take_core_output)
    /// hands over: kept between calls, so that a NIC that takes the words
    /// and leaves a spare buffer of its own in their place (the nanoPU NIC)
    /// makes a steady stream of messages allocate nothing.
    tx_words: Vec<u64>,
    /// Scratch for [`nic_steer_to_l1d`](Node::nic_steer_to_l1d): the dirty
    /// lines the installed ones evicted, written back after.
    steer_victims: Vec<u64>,
    /// Bumped whenever a wake memo is made (keys `wake_cache`).
    memo_gen: u64,
    /// The earliest wake-up among the sleepers with a valid memo, as
    /// `(their mask, memo_gen, answer)`: [`next_wake`](Node::next_wake) is
    /// asked far more often (after every slice, by the network around the
    /// node) than memos change.
    wake_cache: Cell<Option<WakeCache>>,
    /// Schedule by the plain rule, without the shortcuts above (see
    /// [`Node::set_reference_scheduling`]).
    reference: bool,
}

/// Refuses a device window `[base, base + size)` that overlaps DRAM (DRAM
/// is tried first on every access: the device would never be reached).
fn clear_of_dram(
    name: &'static str,
    base: u64,
    size: u64,
    dram: &Dram,
) -> Result<(), OverlapError> {
    let end = base.saturating_add(size);
    let (lo, hi) = (dram.base(), dram.base() + dram.size());
    if base < hi && lo < end {
        return Err(OverlapError {
            name,
            base,
            end,
            other: format!("overlaps DRAM [{lo:#x}, {hi:#x})"),
        });
    }
    Ok(())
}

/// The earliest wake-up `(cycle, hart)` among the sleepers with a valid
/// memo, as `(their mask, memo generation, answer)`.
type WakeCache = (u64, u64, Option<(u64, usize)>);

/// The harts whose bits are set in `mask`, lowest first.
fn harts_in(mut mask: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        if mask == 0 {
            return None;
        }
        let h = mask.trailing_zeros() as usize;
        mask &= mask - 1;
        Some(h)
    })
}

impl Node {
    /// A node with empty memory; every hart starts at `entry`.
    pub fn new(cfg: NodeConfig, entry: u64) -> Result<Node, NodeError> {
        cfg.validate().map_err(NodeError::Config)?;
        let dram = Dram::new(DRAM_BASE, cfg.dram_bytes).map_err(|cause| NodeError::Memory {
            bytes: cfg.dram_bytes,
            cause,
        })?;
        let clock_hz = cfg.core.clock_mhz as u64 * 1_000_000;
        let mut devices = DeviceMap::default();
        let clint = Clint::new(cfg.cores, clock_hz, cfg.mtime_hz);
        let base = cfg.devices.base("clint", CLINT_BASE);
        clear_of_dram("clint", base, CLINT_SIZE, &dram)?;
        devices.attach("clint", base, CLINT_SIZE, Device::Clint(clint))?;
        let base = cfg.devices.base("uart", UART_BASE);
        clear_of_dram("uart", base, UART_SIZE, &dram)?;
        devices.attach("uart", base, UART_SIZE, Device::Uart(Uart::default()))?;
        let bus = NodeBus::new(
            cfg.cores,
            dram,
            devices,
            MemorySystem::new(&cfg),
            cfg.mmio_cycles,
        );
        let harts = (0..cfg.cores)
            .map(|id| Hart::new(id, entry, &cfg.core, cfg.netif.clone()))
            .collect();
        let cfg_cores = cfg.cores;
        Ok(Node {
            states: vec![HartState::Running; cfg.cores],
            decode_cache: DecodeCache::new(cfg.decode_cache_entries),
            harts,
            bus,
            cfg,
            program: None,
            exit: None,
            observer: None,
            observer_stop: None,
            pause_at: None,
            slice_in_progress: None,
            sent: TxSink::default(),
            nic_attached: false,
            stop_request: None,
            watches: vec![Vec::new(); cfg_cores],
            watched_stale: false,
            sleeping: 0,
            wake_memo: vec![None; cfg_cores],
            memo_recheck_at: vec![u64::MAX; cfg_cores],
            memo_valid: 0,
            memo_reads_memory: 0,
            memo_device_accesses: 0,
            owed_check: 0,
            may_have_output: 0,
            tx_words: Vec::new(),
            steer_victims: Vec::new(),
            memo_gen: 0,
            wake_cache: Cell::new(None),
            reference: false,
        })
    }

    /// A node running the ELF program at `path`.
    pub fn with_program(cfg: NodeConfig, path: &Path) -> Result<Node, NodeError> {
        let mut node = Node::new(cfg, DRAM_BASE)?;
        let program = load_file(path, node.bus.dram_mut())?;
        node.start_program(program)?;
        Ok(node)
    }

    /// A node running an ELF image given as bytes.
    pub fn with_program_bytes(cfg: NodeConfig, name: &str, elf: &[u8]) -> Result<Node, NodeError> {
        let mut node = Node::new(cfg, DRAM_BASE)?;
        let program = crate::loader::load_bytes(name, elf, node.bus.dram_mut())?;
        node.start_program(program)?;
        Ok(node)
    }

    fn start_program(&mut self, program: Program) -> Result<(), NodeError> {
        for h in &mut self.harts {
            h.set_pc(program.entry);
        }
        if let Some(to) = program.tohost {
            // fromhost is optional for programs that only exit.
            let mut htif = Htif::new(to, program.fromhost.unwrap_or(to + 64));
            htif.request_cycles = self.cfg.htif_request_cycles;
            htif.bytes_per_cycle = self.cfg.htif_bytes_per_cycle;
            // argv[0]: prototype start-up code refuses an empty argument list.
            htif.args = vec![program.argv0()];
            self.bus
                .devices_mut()
                .attach("htif", to, 8, Device::Htif(Box::new(htif)))?;
        }
        self.decode_cache.invalidate();
        self.program = Some(program);
        Ok(())
    }

    pub fn cfg(&self) -> &NodeConfig {
        &self.cfg
    }

    /// Number of cores (harts).
    pub fn cores(&self) -> usize {
        self.harts.len()
    }

    /// Hart `h`, to read its state (registers, counters, network
    /// interface); the node alone changes it.
    pub fn hart(&self, h: usize) -> &Hart {
        &self.harts[h]
    }

    /// Hart `h`'s cycle.
    pub fn cycle(&self, h: usize) -> u64 {
        self.harts[h].cycle()
    }

    /// Every hart's counters, hart 0 first.
    pub fn hart_summaries(&self) -> Vec<HartSummary> {
        self.harts
            .iter()
            .map(|h| HartSummary {
                cycles: h.cycle(),
                instret: h.instret(),
                icache_misses: h.stats().icache_misses,
                dcache_misses: h.stats().dcache_misses,
                branch_mispredicts: h.predictor().mispredicts,
                traps: h.stats().traps,
                interrupts: h.stats().interrupts,
                idle_cycles: h.stats().idle_cycles,
                idle_instret: h.stats().idle_instret,
            })
            .collect()
    }

    /// Hart `h`'s counters.
    pub fn hart_stats(&self, h: usize) -> &HartStats {
        self.harts[h].stats()
    }

    /// Core `h`'s register-file network interface (its queues and counters).
    pub fn netif(&self, h: usize) -> &NetIf {
        self.harts[h].net()
    }

    /// Keeps (or stops keeping) every core's thread-scheduler events, for
    /// the timeline (see [`Node::drain_hts_notes`]).
    pub fn keep_hts_notes(&mut self, on: bool) {
        for h in &mut self.harts {
            h.net_mut().hts.notes = on.then(Vec::new);
        }
    }

    /// Hands over (core, cycle, event) every kept scheduler event, and
    /// forgets them.
    pub fn drain_hts_notes(&mut self, mut f: impl FnMut(usize, u64, nanopu_core::HtsNote)) {
        for (i, h) in self.harts.iter_mut().enumerate() {
            if let Some(notes) = &mut h.net_mut().hts.notes {
                for &(cycle, note) in notes.iter() {
                    f(i, cycle, note);
                }
                notes.clear();
            }
        }
    }

    /// Core `h`'s thread scheduler decision (`ltargetcontext`,
    /// `ltargetpriority`) at the core's cycle; brings the scheduler there.
    pub fn hts_target(&mut self, h: usize) -> (u16, u8) {
        self.forget_wake(h);
        let now = self.harts[h].cycle();
        self.harts[h].net_mut().hts_target(now)
    }

    /// What hart `h` is doing, as far as scheduling is concerned.
    pub fn hart_state(&self, h: usize) -> HartState {
        self.states[h]
    }

    /// The program loaded, if any.
    pub fn program(&self) -> Option<&Program> {
        self.program.as_ref()
    }

    /// The exit code once the program has exited, with the exiting hart.
    pub fn exit(&self) -> Option<(u64, usize)> {
        self.exit
    }

    /// Writes an instruction trace (one line per instruction) there, or no
    /// trace with `None`; returns the previous observer (flush it).
    pub fn set_trace(
        &mut self,
        trace: Option<Box<dyn std::io::Write + Send>>,
    ) -> Option<Box<dyn Observer + Send>> {
        let observer = trace.map(|t| Box::new(TextTrace::new(t)) as Box<dyn Observer + Send>);
        self.set_observer(observer)
    }

    /// Calls `observer` around every instruction of every hart from now on
    /// (a commit log, say; idle loops are then executed, not skipped), or
    /// nothing with `None`; returns the previous observer (flush it).
    pub fn set_observer(
        &mut self,
        observer: Option<Box<dyn Observer + Send>>,
    ) -> Option<Box<dyn Observer + Send>> {
        std::mem::replace(&mut self.observer, observer)
    }

    /// Messages the cores sent while no NIC is attached.
    pub fn sent(&self) -> &TxSink {
        &self.sent
    }

    /// Takes the oldest message kept in [`sent`](Self::sent).
    pub fn pop_sent(&mut self) -> Option<SentMessage> {
        self.sent.messages.pop_front()
    }

    /// With `on`, schedules by the plain rule, without the shortcuts the
    /// module documentation lists: every sleeping hart is checked
    /// ([`can_wake`](Self::can_wake): `mip`, thread scheduler, wake
    /// condition) before every slice, `mip` is brought up to date in full
    /// before every slice, every core is asked for NIC output. Slower and,
    /// by design, bit-identical: tests compare the two.
    pub fn set_reference_scheduling(&mut self, on: bool) {
        self.reference = on;
        self.forget_wakes();
        self.may_have_output = self.all_harts();
    }

    /// Every hart, as a mask.
    fn all_harts(&self) -> u64 {
        u64::MAX >> (64 - self.harts.len())
    }

    /// A NIC takes the cores' messages and commands from now on (with
    /// [`take_core_output`](Self::take_core_output), and its devices'
    /// output through [`device_mut`](Self::device_mut)), and the run
    /// returns as soon as there is some ([`crate::BusDevice::has_output`]).
    pub fn attach_nic(&mut self) {
        self.nic_attached = true;
    }

    /// Stops the run (with [`NodeError::Interrupted`]) once `flag` is set;
    /// the flag is looked at between slices and every
    /// [`STOP_CHECK_CYCLES`] inside one, never per instruction. Attaching a
    /// flag changes no result.
    pub fn set_stop_request(&mut self, flag: Arc<AtomicBool>) {
        self.stop_request = Some(flag);
    }

    /// The node's DRAM.
    pub fn dram(&self) -> &Dram {
        self.bus.dram()
    }

    /// The devices on the node's bus.
    /// Counters of the LLC and DRAM: hits, misses, write-backs, bytes per
    /// source, bandwidth over time.
    pub fn memory_stats(&self) -> MemoryStats {
        self.bus.memory().stats()
    }

    pub fn devices(&self) -> &DeviceMap {
        self.bus.devices()
    }

    /// HTIF host I/O (program output, arguments), if the program has it.
    pub fn htif(&self) -> Option<&Htif> {
        self.bus.devices().htif()
    }

    pub fn htif_mut(&mut self) -> Option<&mut Htif> {
        self.forget_wakes();
        self.bus.devices_mut().htif_mut()
    }

    /// The interrupt controller (`mtime`, `mtimecmp`, `msip`).
    pub fn clint(&self) -> Option<&Clint> {
        self.bus.devices().clint()
    }

    /// What the program wrote to the UART while it had no HTIF.
    pub fn uart_output(&self) -> &[u8] {
        self.bus.uart_output()
    }

    /// Iterations of delay loops the block engine ran at once (a
    /// diagnostic: the results are those of running them one by one).
    pub fn delay_iterations_skipped(&self) -> u64 {
        self.decode_cache.delay_iterations_skipped()
    }

    /// Loops the block engine unrolled (a diagnostic, counted per block
    /// built: the results are those of running the loop's block again
    /// each iteration).
    pub fn loops_unrolled(&self) -> u64 {
        self.decode_cache.loops_unrolled()
    }

    /// Blocks the block engine built as traces past a branch or jump (a
    /// diagnostic, counted per block built: the results are those of its
    /// basic blocks run one after another).
    pub fn blocks_traced(&self) -> u64 {
        self.decode_cache.blocks_traced()
    }

    /// The decoded-instruction cache misses so far.
    pub fn decode_misses(&self) -> u64 {
        self.decode_cache.misses
    }

    /// Instructions retired by all harts.
    pub fn instret(&self) -> u64 {
        self.harts.iter().map(|h| h.instret()).sum()
    }

    /// Instructions the harts executed one by one: [`Node::instret`]
    /// without those of skipped polling-loop iterations (which retire
    /// without being simulated, see `Hart::skip_idle_iterations`). Speed
    /// figures (simulated MIPS) count these. A guest that writes minstret
    /// makes it meaningless.
    pub fn executed_instret(&self) -> u64 {
        self.harts
            .iter()
            .map(|h| h.instret().saturating_sub(h.stats().idle_instret))
            .sum()
    }

    /// Simulated time of the node in femtoseconds, taken from hart `h`.
    pub fn time_fs(&self, h: usize) -> u64 {
        self.harts[h].cycle() * self.cfg.core.period_fs()
    }

    /// Sets the interrupt bits devices drive (the CLINT's timer and software
    /// interrupts) of hart `h`, and the thread scheduler's bit from its HTS.
    fn update_mip(&mut self, h: usize) {
        let hart = &mut self.harts[h];
        let devices = self.bus.devices();
        let raised = devices.interrupts(h, hart.cycle());
        hart.set_interrupt_lines(devices.interrupt_lines(), raised);
    }

    /// Before a slice of hart `h`: its device interrupt lines in `mip`, as
    /// [`update_mip`](Self::update_mip) sets them. Its thread scheduler is
    /// brought to the hart's cycle only if a line changed: otherwise the
    /// hart's run does it first thing, at the same cycle (it takes a pending
    /// interrupt before executing anything), and the scheduler's next event,
    /// read in between to end the slice, is the same either way.
    fn update_lines_for_slice(&mut self, h: usize) {
        let hart = &mut self.harts[h];
        let devices = self.bus.devices();
        let lines = devices.interrupt_lines();
        let raised = devices.interrupts(h, hart.cycle()) & lines;
        if hart.csr().mip & lines != raised {
            hart.set_interrupt_lines(lines, raised);
        }
    }

    /// Brings hart `h`'s `mip` up to date with the devices and its thread
    /// scheduler, as the run loop does before every slice (for inspecting
    /// a stopped node).
    pub fn update_interrupts(&mut self, h: usize) {
        self.forget_wake(h);
        self.update_mip(h);
    }

    /// Whether sleeping hart `h` can continue now.
    fn can_wake(&mut self, h: usize) -> bool {
        self.update_mip(h);
        let hart = &mut self.harts[h];
        // A stalled netRX/netTX access has not executed yet: an enabled
        // interrupt (the thread scheduler's, say) is taken before it.
        match self.states[h] {
            HartState::Running => true,
            HartState::Wfi => hart.interrupt_waiting(),
            HartState::Poll { period_cycles, .. } => {
                // The loop's inputs as its last iteration read them (from
                // its start: a device register may change within it).
                let since = hart.cycle().saturating_sub(period_cycles);
                hart.pending_interrupt().is_some()
                    || hart.net().msgs_ready(hart.cycle())
                    || self.watched_words_changed(h, since)
            }
            HartState::RxEmpty => {
                hart.pending_interrupt().is_some() || hart.net().msgs_ready(hart.cycle())
            }
            HartState::TxFull => {
                hart.pending_interrupt().is_some() || hart.net().tx_check(0).is_ok()
            }
        }
    }

    /// Gives the bus the memory words the sleeping pollers read: a store to
    /// one ends the storing hart's slice, and the wake check after it wakes
    /// the poller at the store's cycle.
    fn watch_polled_words(&mut self) {
        self.watched_stale = false;
        let states = &self.states;
        let pollers =
            harts_in(self.sleeping).filter(|&h| matches!(states[h], HartState::Poll { .. }));
        let words = pollers.flat_map(|h| self.watches[h].iter().map(|&(word, _)| word));
        self.bus.watch_words(words);
    }

    /// Whether a word polling hart `h`'s loop reads differs from the value
    /// it read, as of `since` (the start of its last iteration).
    fn watched_words_changed(&self, h: usize, since: u64) -> bool {
        self.watches[h]
            .iter()
            .any(|&(word, v)| self.bus.peek_word(word, since) != v)
    }

    /// [`watched_words_changed`](Self::watched_words_changed) for a hart
    /// in a polling loop, from the start of its last iteration.
    fn poll_words_changed(&self, h: usize) -> bool {
        match self.states[h] {
            HartState::Poll { period_cycles, .. } => {
                self.watched_words_changed(h, self.harts[h].cycle().saturating_sub(period_cycles))
            }
            _ => false,
        }
    }

    /// The earliest cycle at which sleeping hart `h` may wake, if any.
    fn wake_cycle(&self, h: usize) -> Option<u64> {
        let hart = &self.harts[h];
        let cycle = hart.cycle();
        // Interrupts wake a sleeper in wfi when enabled in mie, a poller or
        // a stalled access when also enabled globally (they are then taken).
        let irq_wakes = match self.states[h] {
            HartState::Running => return Some(cycle),
            HartState::Wfi => true,
            _ => hart.interrupts_enabled(),
        };
        // A device interrupt (the CLINT's timer) enabled in mie.
        let timer = if irq_wakes {
            self.bus
                .devices()
                .next_interrupts(h)
                .filter(|&(_, line)| hart.interrupt_enabled(line))
                .map(|(c, _)| c.max(cycle))
                .min()
        } else {
            None
        };
        // The thread scheduler's interrupt (a message for another context,
        // a demotion, an idle timeout), if enabled in mie.
        let hts = if irq_wakes {
            hart.next_hts_event_cycle().map(|c| c.max(cycle))
        } else {
            None
        };
        // A message already delivered but not yet arrived wakes a poller or
        // a core stalled on netRX when it arrives; a core stalled on netTX
        // goes on as soon as its NIC has taken a message from the FIFO.
        let message = match self.states[h] {
            HartState::Poll { .. } | HartState::RxEmpty => hart.net().next_rx_cycle(),
            HartState::TxFull if hart.net().tx_check(0).is_ok() => Some(cycle),
            _ => None,
        };
        // A device status register the loop reads changes by itself.
        let device = match self.states[h] {
            HartState::Poll { period_cycles, .. } => {
                let since = cycle.saturating_sub(period_cycles);
                self.watches[h]
                    .iter()
                    .filter(|&&(word, _)| self.bus.dram().offset(word, 8).is_none())
                    .filter_map(|&(word, _)| self.bus.devices().next_change_after(word, since))
                    .min()
                    .map(|c| c.max(cycle))
            }
            _ => None,
        };
        [timer, message, hts, device].into_iter().flatten().min()
    }

    /// Sets hart `h`'s scheduling state (and the `sleeping` mask); its
    /// wake memo, if any, no longer holds.
    fn set_state(&mut self, h: usize, state: HartState) {
        self.watched_stale |= matches!(self.states[h], HartState::Poll { .. })
            || matches!(state, HartState::Poll { .. });
        self.states[h] = state;
        self.forget_wake(h);
        if state == HartState::Running {
            self.sleeping &= !(1 << h);
        } else {
            self.sleeping |= 1 << h;
        }
    }

    /// The harts that run, as a mask.
    fn running(&self) -> u64 {
        self.all_harts() & !self.sleeping
    }

    /// Forgets what the scheduler worked out for every sleeping hart:
    /// something outside the run (a NIC, a debugger) may have changed what
    /// wakes them.
    fn forget_wakes(&mut self) {
        self.memo_valid = 0;
    }

    /// Forgets what the scheduler worked out for hart `h`.
    fn forget_wake(&mut self, h: usize) {
        self.memo_valid &= !(1 << h);
    }

    /// The harts whose wake memo holds: none if a hart touched a device
    /// since the memos were made.
    fn memos_valid(&self) -> u64 {
        if self.bus.device_accesses() == self.memo_device_accesses {
            self.memo_valid
        } else {
            0
        }
    }

    /// Drops the memos if a hart touched a device since they were made.
    fn check_wake_memos(&mut self) {
        let n = self.bus.device_accesses();
        if n != self.memo_device_accesses {
            self.memo_device_accesses = n;
            self.forget_wakes();
        }
    }

    /// Right after a wake check of sleeping hart `h` that left it asleep:
    /// the first cycle after the hart's at which another check would have
    /// effects (its `mip` and thread scheduler are up to date until then):
    /// one of its device interrupt lines rises (enabled or not), or its
    /// thread scheduler would change when brought there (a timed
    /// transition, an arrival, a rising interrupt counted at that cycle).
    fn recheck_cycle(&self, h: usize) -> u64 {
        let cycle = self.harts[h].cycle();
        let line_rise = (self.bus.devices().next_interrupts(h))
            .map(|(c, _)| c)
            .filter(|&c| c > cycle)
            .min()
            .unwrap_or(u64::MAX);
        line_rise.min(self.harts[h].net().hts_sync_current_until())
    }

    /// [`can_wake`](Self::can_wake) for a sleeping hart `h` with no valid
    /// memo: if it cannot continue, remembers so with its wake cycle. Device
    /// status registers a loop polls change only by a device access that
    /// changes state (which drops the memos), by the NIC (which drops them
    /// too) or with time (its wake cycle covers it: `next_change_after`).
    /// Memory words it polls may change with any store: the memo marks
    /// them, and every wake check reads them again.
    fn can_wake_memo(&mut self, h: usize) -> bool {
        if self.can_wake(h) {
            return true;
        }
        let watches_memory = matches!(self.states[h], HartState::Poll { .. })
            && self.watches[h]
                .iter()
                .any(|&(word, _)| self.bus.dram().offset(word, 8).is_some());
        if watches_memory {
            self.memo_reads_memory |= 1 << h;
        } else {
            self.memo_reads_memory &= !(1 << h);
        }
        self.wake_memo[h] = self.wake_cycle(h);
        self.memo_recheck_at[h] = self.recheck_cycle(h);
        self.memo_valid |= 1 << h;
        self.memo_gen = self.memo_gen.wrapping_add(1);
        false
    }

    /// The earliest wake-up of the sleeping harts, `(cycle, hart)`, through
    /// the memos (their minimum is cached while they hold).
    fn next_wake(&self) -> Option<(u64, usize)> {
        let memoed = self.memos_valid() & self.sleeping;
        let known = match self.wake_cache.get() {
            Some((mask, gen, known)) if mask == memoed && gen == self.memo_gen => known,
            _ => {
                let known = harts_in(memoed)
                    .filter_map(|h| self.wake_memo[h].map(|c| (c, h)))
                    .min();
                self.wake_cache.set(Some((memoed, self.memo_gen, known)));
                known
            }
        };
        #[cfg(debug_assertions)]
        for h in harts_in(memoed) {
            debug_assert_eq!(self.wake_memo[h], self.wake_cycle(h), "hart {h}");
        }
        let rest = harts_in(self.sleeping & !memoed)
            .filter_map(|h| self.wake_cycle(h).map(|c| (c, h)))
            .min();
        match (known, rest) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The running hart furthest behind (the lowest-numbered one of those
    /// at the same cycle), and the cycle of the one next behind it, if any.
    fn two_furthest_behind(&self) -> Option<(usize, Option<u64>)> {
        let mut first: Option<(u64, usize)> = None;
        let mut second: Option<u64> = None;
        for h in harts_in(self.running()) {
            let c = self.harts[h].cycle();
            match first {
                Some((f, _)) if c >= f => {
                    second = Some(second.map_or(c, |s| s.min(c)));
                }
                _ => {
                    second = first.map(|(f, _)| second.map_or(f, |s| s.min(f)));
                    first = Some((c, h));
                }
            }
        }
        first.map(|(_, h)| (h, second))
    }

    /// The cycle of the hart furthest ahead: how far the node's clock has
    /// gone (harts that wait are moved on to where the run stopped).
    pub fn latest_cycle(&self) -> u64 {
        self.harts.iter().map(|h| h.cycle()).max().unwrap_or(0)
    }

    /// The cycle of the running hart furthest behind, if any hart runs.
    pub fn lead_cycle(&self) -> Option<u64> {
        harts_in(self.running())
            .map(|h| self.harts[h].cycle())
            .min()
    }

    /// The earliest cycle at which any hart may still do something: the
    /// running harts' positions and the sleepers' wake-ups.
    pub fn output_horizon(&self) -> Option<u64> {
        match (self.lead_cycle(), self.next_wake_cycle()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The earliest cycle at which a sleeping hart may wake, if any can.
    pub fn next_wake_cycle(&self) -> Option<u64> {
        self.next_wake().map(|(c, _)| c)
    }

    /// Advances sleeping hart `h` to cycle `to` (not past it) and marks it running.
    fn advance(&mut self, h: usize, to: u64) {
        self.advance_rounding(h, to, false);
    }

    /// Like [`advance`](Self::advance); with `round_up`, a hart in an idle
    /// loop goes to the first loop head at or after `to`.
    fn advance_rounding(&mut self, h: usize, to: u64, round_up: bool) {
        self.move_sleeper(h, to, round_up);
        self.set_state(h, HartState::Running);
    }

    /// Moves sleeping hart `h` forward in time towards `to` without waking
    /// it: a stall to `to`, or whole iterations of its idle loop up to `to`
    /// (with `round_up`, to the first loop head at or after it).
    fn move_sleeper(&mut self, h: usize, to: u64, round_up: bool) {
        let hart = &mut self.harts[h];
        match self.states[h] {
            HartState::Poll {
                period_cycles,
                period_instret,
            } => {
                if to > hart.cycle() {
                    let span = to - hart.cycle();
                    let k = if round_up {
                        span.div_ceil(period_cycles)
                    } else {
                        span / period_cycles
                    };
                    hart.skip_idle_iterations(period_cycles, period_instret, k);
                }
            }
            HartState::Running => {}
            _ => hart.stall_until(to),
        }
    }

    /// A copy of the node in its current state (memory, caches, harts,
    /// devices), which runs on exactly as this one would: for running
    /// several experiments from one expensive start (a store's preload).
    /// The copy's DRAM holds the pages this node touched. Refused while an
    /// observer or an HTIF output sink is attached (neither can be copied,
    /// and leaving one behind would silently change what the copy reports).
    pub fn fork(&self) -> Result<Node, NodeError> {
        if self.observer.is_some() {
            return Err(NodeError::Fork(
                "an observer (trace, commit log) is attached",
            ));
        }
        if self.bus.devices().htif().is_some_and(|h| h.sink.is_some()) {
            return Err(NodeError::Fork("its HTIF output goes to a sink"));
        }
        let bus = self.bus.fork().map_err(|cause| NodeError::Memory {
            bytes: self.bus.dram().size(),
            cause,
        })?;
        // Every field, so that a new one cannot be forgotten here.
        Ok(Node {
            cfg: self.cfg.clone(),
            harts: self.harts.clone(),
            states: self.states.clone(),
            bus,
            decode_cache: self.decode_cache.clone(),
            program: self.program.clone(),
            exit: self.exit,
            observer: None,
            observer_stop: self.observer_stop,
            pause_at: None,
            slice_in_progress: self.slice_in_progress,
            sent: self.sent.clone(),
            nic_attached: self.nic_attached,
            stop_request: self.stop_request.clone(),
            watches: self.watches.clone(),
            watched_stale: self.watched_stale,
            sleeping: self.sleeping,
            wake_memo: self.wake_memo.clone(),
            memo_valid: self.memo_valid,
            memo_reads_memory: self.memo_reads_memory,
            memo_recheck_at: self.memo_recheck_at.clone(),
            memo_device_accesses: self.memo_device_accesses,
            owed_check: self.owed_check,
            may_have_output: self.may_have_output,
            tx_words: Vec::new(),
            steer_victims: Vec::new(),
            memo_gen: self.memo_gen,
            wake_cache: self.wake_cache.clone(),
            reference: self.reference,
        })
    }

    /// Runs until the program exits or every hart reaches cycle `limit`.
    pub fn run(&mut self, limit: u64) -> Result<RunEnd, NodeError> {
        self.run_inner(limit, None)
    }

    /// [`run`](Self::run), returning early (`Ok(None)`) between two slices
    /// once no hart can do anything before cycle `pause` (every running
    /// hart is at or past it, and no sleeper wakes before it), or inside a
    /// long slice once its hart is past `pause` (checked every
    /// [`STOP_CHECK_CYCLES`]; the next call goes on with the slice). Running
    /// on afterwards with the same `limit` gives exactly what an
    /// uninterrupted run gives, unlike a run to `pause` as the limit, which
    /// would cut the harts' slices there and move the sleepers to it (a
    /// multi-core program's results depend on both). For progress reports
    /// during a long run.
    pub fn run_pausing(
        &mut self,
        limit: u64,
        pause: Option<u64>,
    ) -> Result<Option<RunEnd>, NodeError> {
        self.pause_at = pause;
        let end = self.run_inner(limit, None);
        // The loop takes the pause time when it pauses.
        let paused = pause.is_some() && self.pause_at.take().is_none();
        match end {
            Ok(RunEnd::Limit) if paused => Ok(None),
            end => end.map(Some),
        }
    }

    /// [`run`](Self::run), with `external` (if any) as the observer instead
    /// of the node's own; a [`Stop::Break`] leaves it with the hart in
    /// `observer_stop`. Never inlined: one call per run, and
    /// `docs/profile/kernels.sh` counts host instructions from its entry.
    #[inline(never)]
    fn run_inner(
        &mut self,
        limit: u64,
        mut external: Option<&mut dyn Observer>,
    ) -> Result<RunEnd, NodeError> {
        let observed = external.is_some() || self.observer.is_some();
        loop {
            if let Some((code, _)) = self.exit {
                return Ok(RunEnd::Exited(code));
            }
            if self.stop_requested() {
                return Err(NodeError::Interrupted(self.describe_harts()));
            }
            if let Some((h, end)) = self.slice_in_progress.take() {
                // A pause came inside this slice: it goes on first, as if
                // nothing had come between.
                let end = end.min(limit);
                if self.run_slice(h, end, external.as_deref_mut(), observed)? == SliceEnd::Return {
                    return Ok(RunEnd::Limit);
                }
                continue;
            }
            if let Some(at) = self.pause_at {
                // Between slices: the loop keeps no state of its own, so
                // the next call goes on exactly from here.
                if self.output_horizon().is_some_and(|c| c >= at) {
                    // Taken: tells `run_pausing` the run paused.
                    self.pause_at = None;
                    return Ok(RunEnd::Limit);
                }
            }
            // Wake sleepers whose condition holds now (another hart's store
            // to the CLINT, a message delivered to their RX FIFO); those
            // with a valid memo cannot.
            self.check_wake_memos();
            if self.reference {
                self.forget_wakes();
                self.may_have_output = self.all_harts();
            }
            let unknown = self.sleeping & !self.memo_valid;
            let owed = self.sleeping & self.memo_valid & std::mem::take(&mut self.owed_check);
            // With a memo, only the memory words a poller reads can have
            // changed: `can_wake` would find the rest as the memo says.
            let words = self.sleeping & self.memo_valid & self.memo_reads_memory & !owed;
            if unknown | owed | words != 0 {
                let leader = self.lead_cycle();
                for h in harts_in(unknown | owed | words) {
                    let wakes = if owed & (1 << h) != 0 {
                        let wakes = self.can_wake(h);
                        if !wakes {
                            self.memo_recheck_at[h] = self.recheck_cycle(h);
                        }
                        wakes
                    } else if words & (1 << h) != 0 {
                        self.poll_words_changed(h)
                    } else {
                        self.can_wake_memo(h)
                    };
                    if wakes {
                        let at = leader.unwrap_or(self.harts[h].cycle());
                        self.advance(h, at);
                    }
                }
            }
            // The earliest future wake-up (a timer, a message arriving).
            let next_wake = self.next_wake();
            let behind = self.two_furthest_behind();
            let runnable = behind.map(|(h, _)| h);
            let h = match (runnable, next_wake) {
                (Some(h), Some((c, w))) if c <= self.harts[h].cycle() && c < limit => {
                    self.advance(w, c);
                    continue;
                }
                (Some(h), _) => h,
                (None, Some((c, w))) if c < limit => {
                    self.advance(w, c);
                    continue;
                }
                (None, _) if limit != u64::MAX => {
                    self.idle_until(limit);
                    return Ok(RunEnd::Limit);
                }
                (None, _) => return Err(NodeError::Deadlock(self.describe_waits())),
            };
            if self.harts[h].cycle() >= limit {
                self.idle_until(limit);
                return Ok(RunEnd::Limit);
            }
            let mut end = limit;
            if let Some((c, _)) = next_wake {
                end = end.min(c);
            }
            if let Some(Some(next)) = behind.map(|(_, next)| next) {
                end = end.min(next.saturating_add(self.cfg.quantum_cycles));
            }
            if self.stop_request.is_some() {
                end = end.min(self.harts[h].cycle().saturating_add(STOP_CHECK_CYCLES));
            }
            if self.reference {
                self.update_mip(h);
            } else {
                self.update_lines_for_slice(h);
            }
            for (c, _) in self.bus.devices().next_interrupts(h) {
                if c > self.harts[h].cycle() {
                    end = end.min(c);
                }
            }
            // The thread scheduler's interrupt is taken at its cycle too.
            if let Some(c) = self.harts[h].next_hts_event_cycle() {
                end = end.min(c);
            }
            if self.watched_stale {
                self.watch_polled_words();
            }
            self.harts[h].begin_slice();
            if self.run_slice(h, end, external.as_deref_mut(), observed)? == SliceEnd::Return {
                return Ok(RunEnd::Limit);
            }
        }
    }

    /// What follows every slice of hart `h` that ended with `stop`: its
    /// output collected when no NIC takes it, its new state.
    pub(crate) fn end_slice(
        &mut self,
        h: usize,
        stop: Stop,
        observed: bool,
    ) -> Result<(), NodeError> {
        self.may_have_output |= 1 << h;
        if !self.nic_attached {
            self.harts[h].net_mut().outbox.clear();
            self.collect_sent(h);
            self.bus
                .devices_mut()
                .discard_nic_output_beyond(TX_SINK_KEEP);
        }
        self.after_stop(h, stop, observed)
    }

    /// Runs hart `h` to cycle `end` (or until it stops), then does what the
    /// node does after every slice. With a stop flag or a pause to look at,
    /// the slice runs in pieces of at most [`STOP_CHECK_CYCLES`] that end
    /// where one run would (the harts' interleaving, and so a multi-core
    /// program's results, must not depend on whether anyone looks): a pause
    /// due between two pieces keeps the rest of the slice in
    /// `slice_in_progress`.
    fn run_slice<'o>(
        &mut self,
        h: usize,
        mut end: u64,
        mut external: Option<&mut (dyn Observer + 'o)>,
        observed: bool,
    ) -> Result<SliceEnd, NodeError> {
        let looked_at = self.stop_request.is_some() || self.pause_at.is_some();
        let stop = loop {
            let piece_end = match looked_at {
                true => end.min(self.harts[h].cycle().saturating_add(STOP_CHECK_CYCLES)),
                false => end,
            };
            let observer: Option<&mut dyn Observer> = match external {
                Some(ref mut o) => Some(&mut **o),
                None => self.observer.as_deref_mut().map(|o| o as &mut dyn Observer),
            };
            let stop = match observer {
                None => self.harts[h].run(&mut self.bus, &mut self.decode_cache, piece_end),
                Some(o) => {
                    self.harts[h].run_observed(&mut self.bus, &mut self.decode_cache, piece_end, o)
                }
            };
            end = self.harts[h].slice_bound(end);
            let cycle = self.harts[h].cycle();
            if stop != Stop::Limit || piece_end >= end || cycle < piece_end || cycle >= end {
                break stop;
            }
            // Cut only to look: the slice goes on.
            if self.stop_requested() {
                return Err(NodeError::Interrupted(self.describe_harts()));
            }
            if self.pause_at.is_some_and(|at| cycle >= at) {
                self.pause_at = None;
                self.slice_in_progress = Some((h, end));
                return Ok(SliceEnd::Return);
            }
        };
        self.end_slice(h, stop, observed)?;
        if self.observer_stop.is_some() {
            return Ok(SliceEnd::Return);
        }
        if self.nic_attached
            && (self.harts[h].net().has_output() || self.bus.devices().nic_output())
        {
            // The NIC (or the link, for a DMA NIC's frames) must see this
            // before time moves on.
            return Ok(SliceEnd::Return);
        }
        Ok(SliceEnd::Next)
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
        f: impl FnOnce(&mut T, crate::bus_device::Dma<'_>) -> R,
    ) -> Option<R> {
        self.forget_wakes();
        let r = self.bus.with_device_dma(f);
        self.finish_dma_writes();
        r
    }

    /// The cores' side of the devices' DMA writes: their L1 D-cache lines
    /// over the written bytes are invalidated.
    fn finish_dma_writes(&mut self) {
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

    fn for_each_line(&mut self, addr: u64, len: u64, mut f: impl FnMut(&mut [Hart], u64)) {
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

    fn after_stop(&mut self, h: usize, stop: Stop, observed: bool) -> Result<(), NodeError> {
        if stop == Stop::Yield {
            // A receive buffer posted may have taken a held frame.
            self.finish_dma_writes();
        }
        match stop {
            Stop::Limit => {}
            Stop::Break => self.observer_stop = Some(h),
            Stop::Wfi => self.set_state(h, HartState::Wfi),
            // A trace lists every retired instruction (and a debugger's
            // breakpoints must be seen): no skipping then.
            Stop::Poll { .. } if !self.cfg.idle_skip || observed => {}
            Stop::Poll {
                period_cycles,
                period_instret,
            } => {
                self.set_state(
                    h,
                    HartState::Poll {
                        period_cycles,
                        period_instret,
                    },
                );
                let cycle = self.harts[h].cycle().saturating_sub(period_cycles);
                let watch = &mut self.watches[h];
                watch.clear();
                // Memory as the loop read it (a DMA write may have landed
                // since, before the run stopped: it must wake the loop); a
                // device register as of the iteration's start.
                let hart = &self.harts[h];
                for (&word, &seen) in hart.watched().iter().zip(hart.watched_seen()) {
                    watch.push((
                        word,
                        seen.unwrap_or_else(|| self.bus.peek_word(word, cycle)),
                    ));
                }
                self.watched_stale = true;
            }
            Stop::RxEmpty => self.set_state(h, HartState::RxEmpty),
            Stop::TxFull => self.set_state(h, HartState::TxFull),
            Stop::Yield => {
                let Some(htif) = self.bus.devices_mut().htif_mut() else {
                    return Ok(());
                };
                // The hart waits for the host to serve what it asked.
                let owed = htif.take_owed_cycles();
                match htif.take_request() {
                    Some(HtifRequest::Exit(code)) => self.exit = Some((code, h)),
                    Some(HtifRequest::Error(e)) => return Err(NodeError::Htif(e)),
                    _ => {}
                }
                if owed > 0 {
                    let hart = &mut self.harts[h];
                    hart.stall_until(hart.cycle().saturating_add(owed));
                }
            }
            Stop::Fault(f) => return Err(NodeError::Fault(f)),
        }
        Ok(())
    }

    /// Takes the complete messages hart `h` has sent.
    fn collect_sent(&mut self, h: usize) {
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

    /// Moves every sleeping hart forward to `limit`.
    ///
    /// A sleeper stays asleep (its state, watches and `sleeping` bit are
    /// untouched); only its cycle and counters move, as one stall or whole
    /// loop iterations, which is the same as moving it in several steps.
    fn idle_until(&mut self, limit: u64) {
        let valid = self.memos_valid();
        let (mut owed, mut dropped) = (0u64, 0u64);
        for h in harts_in(self.sleeping) {
            let hart = &mut self.harts[h];
            let cycle = hart.cycle();
            if cycle >= limit {
                continue;
            }
            let now = match self.states[h] {
                HartState::Poll {
                    period_cycles,
                    period_instret,
                } => {
                    // A loop polling for messages stays at or before the
                    // limit, so a message due just after it finds the loop
                    // where step-by-step execution would; a spin on memory
                    // goes to the first loop head past it (callers then see
                    // the hart reach the limit; see the README on its one
                    // inexactness).
                    let span = limit - cycle;
                    let k = if self.watches[h].is_empty() {
                        span / period_cycles
                    } else {
                        span.div_ceil(period_cycles)
                    };
                    hart.skip_idle_iterations(period_cycles, period_instret, k);
                    cycle + k * period_cycles
                }
                // Not in `sleeping` (kept in step by `set_state`).
                HartState::Running => continue,
                _ => {
                    hart.stall_until(limit);
                    limit
                }
            };
            let bit = 1 << h;
            // Time alone wakes the hart at its wake cycle and nothing else
            // changed: its memo still holds before that cycle.
            if valid & bit != 0 && self.wake_memo[h].is_none_or(|w| now < w) {
                // A wake check at `now` still has effects (on `mip`, on
                // the thread scheduler's state and counters): owed.
                if self.memo_recheck_at[h] <= now {
                    owed |= bit;
                }
                debug_assert_eq!(self.wake_memo[h], self.wake_cycle(h), "hart {h} at {now}");
            } else {
                dropped |= bit;
            }
        }
        self.owed_check |= owed;
        self.memo_valid &= !dropped;
    }

    fn stop_requested(&self) -> bool {
        self.stop_request
            .as_ref()
            .is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// One line per hart: its state, cycle, pc and instruction.
    pub fn describe_harts(&mut self) -> String {
        let mut out = Vec::new();
        for h in 0..self.harts.len() {
            let pc = self.harts[h].pc();
            let inst = self.harts[h].describe_pc(&mut self.bus);
            let state = match self.states[h] {
                HartState::Running => "running",
                HartState::Wfi => "in wfi",
                HartState::Poll { .. } => "in an idle polling loop",
                HartState::RxEmpty => "stalled on an empty netRX",
                HartState::TxFull => "stalled on a full netTX",
            };
            let cycle = self.harts[h].cycle();
            out.push(format!(
                "  hart {h}: {state}, cycle {cycle}, pc {pc:#x} ({inst})"
            ));
        }
        out.join("\n")
    }

    /// One line per hart saying what it waits for.
    pub fn describe_waits(&mut self) -> String {
        let mut out = Vec::new();
        for h in 0..self.harts.len() {
            let pc = self.harts[h].pc();
            let inst = self.harts[h].describe_pc(&mut self.bus);
            let what = match self.states[h] {
                HartState::Running => "running".to_string(),
                HartState::Wfi => "in wfi with no interrupt enabled that can fire".into(),
                HartState::Poll {
                    period_cycles,
                    period_instret,
                } => format!(
                    "polling in an idle loop ({period_instret} instructions every {period_cycles} cycles) for a message, interrupt or memory change that nothing will cause"
                ),
                HartState::RxEmpty => format!(
                    "reading netRX (x30) with an empty RX FIFO for context {}, and no message can arrive",
                    self.harts[h].net().current_context
                ),
                HartState::TxFull => "writing netTX (x31) with a full TX FIFO that nothing drains".into(),
            };
            out.push(format!("  hart {h}: {what}, at pc {pc:#x} ({inst})"));
        }
        out.join("\n")
    }
}
