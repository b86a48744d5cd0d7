//! What a node shows of itself: its configuration, harts, counters,
//! devices and memory, and descriptions of where each hart is, for
//! reports, tests and error messages.

use super::{harts_in, HartState, Node};
use crate::clint::Clint;
use crate::config::NodeConfig;
use crate::device::DeviceMap;
use crate::dram::Dram;
use crate::htif::Htif;
use crate::loader::Program;
use crate::memory::MemoryStats;
use nanopu_core::{Hart, HartStats, NetIf, Observer, TextTrace};

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

impl Node {
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

    /// The node's DRAM.
    pub fn dram(&self) -> &Dram {
        self.bus.dram()
    }

    /// Counters of the LLC and DRAM: hits, misses, write-backs, bytes per
    /// source, bandwidth over time.
    pub fn memory_stats(&self) -> MemoryStats {
        self.bus.memory().stats()
    }

    /// The devices on the node's bus.
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
