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

use crate::clint::{Clint, CLINT_BASE, CLINT_SIZE};
use crate::config::{NodeConfig, NodeConfigError, DRAM_BASE};
use crate::device::{Device, DeviceMap, OverlapError};
use crate::dram::Dram;
use crate::htif::{Htif, HtifError, HtifRequest};
use crate::loader::{load_file, LoadError, Program};
use crate::memory::{MemorySystem, NodeBus};
use crate::uart::{Uart, UART_BASE, UART_SIZE};
use nanopu_core::{DecodeCache, GuestFault, Hart, Observer, Stop};
use std::cell::Cell;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

mod debug;
mod fork;
mod inspect;
mod nic_port;
mod wake;

pub use debug::ObservedEnd;
pub use fork::FrozenNode;
pub use inspect::HartSummary;
pub use nic_port::{CoreOutput, SentMessage, TxSink, TX_SINK_KEEP};

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

    /// Stops the run (with [`NodeError::Interrupted`]) once `flag` is set;
    /// the flag is looked at between slices and every
    /// [`STOP_CHECK_CYCLES`] inside one, never per instruction. Attaching a
    /// flag changes no result.
    pub fn set_stop_request(&mut self, flag: Arc<AtomicBool>) {
        self.stop_request = Some(flag);
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

    fn stop_requested(&self) -> bool {
        self.stop_request
            .as_ref()
            .is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed))
    }
}
