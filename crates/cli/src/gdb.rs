//! `nanopu run --gdb [HOST:]PORT`: a GDB remote stub (the `gdbstub` crate)
//! over a node stopped at the program's entry point.
//!
//! Each hart is a thread (thread id = hart + 1). The node runs through
//! [`Node::run_observed`] with a [`DebugObserver`] that checks breakpoints and
//! single steps before each instruction, and every [`POLL_INSTRUCTIONS`]
//! instructions lets the stub look for a Ctrl-C from gdb; a run without
//! `--gdb` never goes through this path. All-stop: when one hart stops, all
//! do; when gdb resumes, every hart runs (a `step` steps its thread while
//! the others continue, gdb's default).
//!
//! Registers: x0-x31, pc and f0-f31 in the `g` packet; fflags, frm, fcsr
//! and the CSRs of [`DEBUG_CSRS`] one at a time (`p`/`P`), described by a
//! target description with gdb's RISC-V register numbers (CSR n is 65 + n).
//! `monitor netrx` and `monitor lnic` show the nanoPU network interface.
//! The connection (packets, malformed input, Ctrl-C) is `session.rs`'s.

use anyhow::{Context, Result};
use gdbstub::arch::{Arch, RegId, Registers};
use gdbstub::common::{Signal, Tid};
use gdbstub::stub::MultiThreadStopReason;
use gdbstub::target::ext::base::multithread::{
    MultiThreadBase, MultiThreadResume, MultiThreadResumeOps, MultiThreadSchedulerLocking,
    MultiThreadSchedulerLockingOps, MultiThreadSingleStep, MultiThreadSingleStepOps,
};
use gdbstub::target::ext::base::single_register_access::{
    SingleRegisterAccess, SingleRegisterAccessOps,
};
use gdbstub::target::ext::base::BaseOps;
use gdbstub::target::ext::breakpoints::{
    Breakpoints, BreakpointsOps, SwBreakpoint, SwBreakpointOps,
};
use gdbstub::target::ext::monitor_cmd::{outputln, ConsoleOutput, MonitorCmd, MonitorCmdOps};
use gdbstub::target::ext::thread_extra_info::{ThreadExtraInfo, ThreadExtraInfoOps};
use gdbstub::target::{Target, TargetError, TargetResult};
use nanopu_core::csr::num;
use nanopu_core::debug::DEBUG_CSRS;
use nanopu_core::decode_cache::Decoded;
use nanopu_core::{Hart, MemoryPeek, Observer};
use nanopu_node::{HartState, Node, NodeError, ObservedEnd};
use std::collections::HashSet;
use std::fmt::Write as _;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

mod session;

/// Instructions run between looks at the connection (for gdb's Ctrl-C).
pub const POLL_INSTRUCTIONS: u64 = 1 << 16;

/// gdb's register number of CSR 0 (its RISC-V numbering).
const FIRST_CSR_REGNUM: usize = 65;

/// Where `--gdb` listens: `PORT` or `:PORT` is 127.0.0.1; a host only if named.
pub fn listen_address(spec: &str) -> Result<SocketAddr> {
    let (host, port) = match spec.rsplit_once(':') {
        Some(("", port)) | Some(("localhost", port)) => ("127.0.0.1", port),
        Some((host, port)) => (host.trim_start_matches('[').trim_end_matches(']'), port),
        None => ("127.0.0.1", spec),
    };
    let port: u16 = port
        .parse()
        .with_context(|| format!("--gdb {spec}: expected [HOST:]PORT with a port number"))?;
    (host, port)
        .to_socket_addrs()
        .with_context(|| format!("--gdb {spec}: cannot resolve host {host}"))?
        .next()
        .with_context(|| format!("--gdb {spec}: host {host} has no address"))
}

/// The architecture as the stub describes it to gdb: RV64 with F and D and
/// the machine-mode CSRs.
pub enum NanopuRiscv {}

/// The registers of the `g` packet.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CoreRegs {
    pub x: [u64; 32],
    pub pc: u64,
    pub f: [u64; 32],
}

impl Registers for CoreRegs {
    type ProgramCounter = u64;

    fn pc(&self) -> u64 {
        self.pc
    }

    fn gdb_serialize(&self, mut write_byte: impl FnMut(Option<u8>)) {
        let words = self.x.iter().chain([&self.pc]).chain(self.f.iter());
        for w in words {
            w.to_le_bytes()
                .into_iter()
                .for_each(|b| write_byte(Some(b)));
        }
    }

    fn gdb_deserialize(&mut self, bytes: &[u8]) -> Result<(), ()> {
        if bytes.len() < 33 * 8 || !bytes.len().is_multiple_of(8) {
            return Err(());
        }
        let mut words = bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")));
        for x in self.x.iter_mut() {
            *x = words.next().ok_or(())?;
        }
        self.pc = words.next().ok_or(())?;
        for f in self.f.iter_mut() {
            match words.next() {
                Some(v) => *f = v,
                None => break,
            }
        }
        Ok(())
    }
}

/// A register by gdb's RISC-V number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NanopuRegId {
    X(u8),
    Pc,
    F(u8),
    Csr(u16),
}

impl RegId for NanopuRegId {
    fn from_raw_id(id: usize) -> Option<(Self, Option<NonZeroUsize>)> {
        let (reg, bytes) = match id {
            0..=31 => (NanopuRegId::X(id as u8), 8),
            32 => (NanopuRegId::Pc, 8),
            33..=64 => (NanopuRegId::F((id - 33) as u8), 8),
            _ if id - FIRST_CSR_REGNUM <= 0xfff => {
                let csr = (id - FIRST_CSR_REGNUM) as u16;
                (NanopuRegId::Csr(csr), csr_bytes(csr))
            }
            _ => return None,
        };
        Some((reg, NonZeroUsize::new(bytes)))
    }
}

/// fflags, frm and fcsr are 32 bits wide in gdb's FPU feature.
fn csr_bytes(csr: u16) -> usize {
    if csr <= num::FCSR {
        4
    } else {
        8
    }
}

impl Arch for NanopuRiscv {
    type Usize = u64;
    type Registers = CoreRegs;
    type BreakpointKind = usize;
    type RegId = NanopuRegId;

    fn target_description_xml() -> Option<&'static str> {
        static XML: OnceLock<String> = OnceLock::new();
        Some(XML.get_or_init(target_xml))
    }
}

/// The target description: gdb's riscv cpu, fpu and csr features.
fn target_xml() -> String {
    const X: [&str; 32] = [
        "zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "fp", "s1", "a0", "a1", "a2", "a3", "a4",
        "a5", "a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4",
        "t5", "t6",
    ];
    const F: [&str; 32] = [
        "ft0", "ft1", "ft2", "ft3", "ft4", "ft5", "ft6", "ft7", "fs0", "fs1", "fa0", "fa1", "fa2",
        "fa3", "fa4", "fa5", "fa6", "fa7", "fs2", "fs3", "fs4", "fs5", "fs6", "fs7", "fs8", "fs9",
        "fs10", "fs11", "ft8", "ft9", "ft10", "ft11",
    ];
    let mut s = String::from(
        "<?xml version=\"1.0\"?>\n<!DOCTYPE target SYSTEM \"gdb-target.dtd\">\n<target version=\"1.0\">\n\
         <architecture>riscv:rv64</architecture>\n<feature name=\"org.gnu.gdb.riscv.cpu\">\n",
    );
    for (i, name) in X.iter().enumerate() {
        let ty = match i {
            1 => "code_ptr",
            2..=4 | 8 => "data_ptr",
            _ => "int",
        };
        let _ = writeln!(
            s,
            "<reg name=\"{name}\" bitsize=\"64\" type=\"{ty}\" regnum=\"{i}\"/>"
        );
    }
    s.push_str("<reg name=\"pc\" bitsize=\"64\" type=\"code_ptr\" regnum=\"32\"/>\n</feature>\n");
    s.push_str(
        "<feature name=\"org.gnu.gdb.riscv.fpu\">\n<union id=\"riscv_double\">\
         <field name=\"float\" type=\"ieee_single\"/><field name=\"double\" type=\"ieee_double\"/></union>\n",
    );
    for (i, name) in F.iter().enumerate() {
        let _ = writeln!(
            s,
            "<reg name=\"{name}\" bitsize=\"64\" type=\"riscv_double\" regnum=\"{}\"/>",
            33 + i
        );
    }
    for (csr, name) in [
        (num::FFLAGS, "fflags"),
        (num::FRM, "frm"),
        (num::FCSR, "fcsr"),
    ] {
        let _ = writeln!(
            s,
            "<reg name=\"{name}\" bitsize=\"32\" type=\"int\" regnum=\"{}\" group=\"float\"/>",
            FIRST_CSR_REGNUM + csr as usize
        );
    }
    s.push_str("</feature>\n<feature name=\"org.gnu.gdb.riscv.csr\">\n");
    for &(csr, name) in DEBUG_CSRS.iter().filter(|(c, _)| *c > num::FCSR) {
        let _ = writeln!(
            s,
            "<reg name=\"{name}\" bitsize=\"64\" type=\"int\" regnum=\"{}\" group=\"system\"/>",
            FIRST_CSR_REGNUM + csr as usize
        );
    }
    s.push_str("</feature>\n</target>\n");
    s
}

fn tid_of(hart: usize) -> Tid {
    Tid::new(hart + 1).expect("hart + 1 is not zero")
}

/// Why the observer stopped the node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cause {
    Breakpoint(usize),
    Stepped(usize),
    /// Time to look at the connection.
    Poll,
}

/// Per hart, how a single step is going.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StepState {
    Off,
    /// The stepped instruction has not executed yet.
    Pending,
    /// It has: stop before the next one.
    Done,
}

/// The observer a debug session runs the node with.
pub struct DebugObserver {
    breakpoints: HashSet<u64>,
    /// Per hart, the pc it was resumed at: its first instruction there runs
    /// even if a breakpoint is set on it (gdb steps over it itself, but a
    /// breakpoint at the stop pc must not stop the hart again).
    resume_pc: Vec<Option<u64>>,
    step: Vec<StepState>,
    budget: u64,
    cause: Option<Cause>,
}

impl Observer for DebugObserver {
    fn before(&mut self, hart: &Hart, _d: &Decoded) -> bool {
        let h = hart.id();
        let pc = hart.pc();
        let resumed_here = self.resume_pc[h].take() == Some(pc);
        let cause = if self.step[h] == StepState::Done {
            self.step[h] = StepState::Off;
            Some(Cause::Stepped(h))
        } else if !resumed_here && self.breakpoints.contains(&pc) {
            Some(Cause::Breakpoint(h))
        } else {
            self.budget = self.budget.saturating_sub(1);
            (self.budget == 0).then_some(Cause::Poll)
        };
        if cause.is_some() {
            self.cause = cause;
            // Stopped before this instruction: resuming runs it.
            self.resume_pc[h] = Some(pc);
        }
        cause.is_some()
    }

    fn after(
        &mut self,
        hart: &Hart,
        _issue: u64,
        pc: u64,
        _d: &Decoded,
        retired: bool,
        _mem: &mut dyn MemoryPeek,
    ) {
        // A trap completes a step too (the hart is at the handler); a stall
        // on netRX/netTX does not (the instruction is retried).
        let h = hart.id();
        if self.step[h] == StepState::Pending && (retired || hart.pc() != pc) {
            self.step[h] = StepState::Done;
        }
    }
}

/// The node under gdb's control.
pub struct GdbTarget<'a> {
    node: &'a mut Node,
    obs: DebugObserver,
    limit: u64,
    /// The hart of the last stop (what `monitor` commands show by default).
    last_hart: usize,
    /// Per hart, whether gdb gave it a resume action of its own.
    has_action: Vec<bool>,
    /// Only the harts with an action run (gdb's scheduler locking, used
    /// to step one thread over a breakpoint).
    locked: bool,
}

impl<'a> GdbTarget<'a> {
    pub fn new(node: &'a mut Node, limit: u64) -> GdbTarget<'a> {
        let n = node.cores();
        GdbTarget {
            node,
            obs: DebugObserver {
                breakpoints: HashSet::new(),
                resume_pc: vec![None; n],
                step: vec![StepState::Off; n],
                budget: POLL_INSTRUCTIONS,
                cause: None,
            },
            limit,
            last_hart: 0,
            has_action: vec![false; n],
            locked: false,
        }
    }

    fn hart_of(&self, tid: Tid) -> TargetResult<usize, Self> {
        let h = tid.get() - 1;
        if h < self.node.cores() {
            Ok(h)
        } else {
            Err(TargetError::NonFatal)
        }
    }

    /// Runs until something for gdb happens; `None` means "look at the
    /// connection, then go on".
    fn run(&mut self) -> Result<Option<MultiThreadStopReason<u64>>, NodeError> {
        self.obs.budget = POLL_INSTRUCTIONS;
        self.obs.cause = None;
        let mut only = (0..self.has_action.len()).filter(|&h| self.has_action[h]);
        let alone = match (self.locked, only.next(), only.next()) {
            (true, Some(h), None) => Some(h),
            _ => None,
        };
        let end = match alone {
            Some(h) => self.node.run_hart_observed(h, self.limit, &mut self.obs),
            None => self.node.run_observed(self.limit, &mut self.obs),
        };
        let end = match end {
            Err(NodeError::Fault(f)) => {
                eprintln!("gdb: guest fault: {f}");
                self.last_hart = f.hart;
                let signal = match f.cause {
                    nanopu_core::Exception::IllegalInstruction => Signal::SIGILL,
                    _ => Signal::SIGSEGV,
                };
                return Ok(Some(MultiThreadStopReason::SignalWithThread {
                    tid: tid_of(f.hart),
                    signal,
                }));
            }
            Err(NodeError::Deadlock(waits)) => {
                eprintln!(
                    "gdb: deadlock: every hart waits for something that can never happen\n{waits}"
                );
                return Ok(Some(MultiThreadStopReason::SignalWithThread {
                    tid: tid_of(self.last_hart),
                    signal: Signal::SIGABRT,
                }));
            }
            end => end?,
        };
        Ok(match end {
            ObservedEnd::Exited(code) => Some(MultiThreadStopReason::Exited(match code {
                0 => 0,
                c => c.clamp(1, 255) as u8,
            })),
            ObservedEnd::Limit => {
                eprintln!(
                    "gdb: every hart reached --max-cycles {}; the program is stopped there",
                    self.limit
                );
                Some(MultiThreadStopReason::SignalWithThread {
                    tid: tid_of(self.last_hart),
                    signal: Signal::SIGXCPU,
                })
            }
            ObservedEnd::Stopped { hart } => match self.obs.cause.take() {
                Some(Cause::Breakpoint(h)) => {
                    self.last_hart = h;
                    Some(MultiThreadStopReason::SwBreak(tid_of(h)))
                }
                Some(Cause::Stepped(h)) => {
                    self.last_hart = h;
                    Some(MultiThreadStopReason::SignalWithThread {
                        tid: tid_of(h),
                        signal: Signal::SIGTRAP,
                    })
                }
                Some(Cause::Poll) => None,
                None => {
                    self.last_hart = hart;
                    Some(MultiThreadStopReason::SignalWithThread {
                        tid: tid_of(hart),
                        signal: Signal::SIGTRAP,
                    })
                }
            },
        })
    }

    fn monitor(&mut self, cmd: &str, mut out: ConsoleOutput<'_>) {
        let mut words = cmd.split_whitespace();
        let what = words.next().unwrap_or("help");
        let hart = match words.next().map(str::parse::<usize>) {
            None => self.last_hart,
            Some(Ok(h)) if h < self.node.cores() => h,
            Some(_) => {
                outputln!(out, "expected a hart number below {}", self.node.cores());
                return;
            }
        };
        match what {
            "netrx" => {
                let text = self.describe_netrx(hart);
                outputln!(out, "{text}");
            }
            "lnic" => {
                let text = self.describe_lnic(hart);
                outputln!(out, "{text}");
            }
            _ => {
                outputln!(
                    out,
                    "nanopu monitor commands (HART defaults to the hart of the last stop):"
                );
                outputln!(
                    out,
                    "  monitor netrx [HART]  the current context's netRX FIFO: depth and head word"
                );
                outputln!(out, "  monitor lnic [HART]   the LNIC CSRs, registered contexts and the hart's state");
            }
        }
    }

    fn describe_netrx(&self, h: usize) -> String {
        let hart = self.node.hart(h);
        let net = hart.net();
        let context = net.current_context;
        if !net.rx_active() {
            return format!(
                "hart {h}: context {context} is not registered (x30 is an ordinary register)"
            );
        }
        let now = hart.cycle();
        let depth = net.rx_len(context);
        let head = match (net.rx_peek(now), net.next_rx_cycle()) {
            (Some(w), _) => format!("head word {w:#018x}"),
            (None, Some(at)) => format!("no word has arrived yet; the next arrives at cycle {at}"),
            (None, None) => "empty".into(),
        };
        format!(
            "hart {h} context {context}: netRX FIFO {depth} word(s) delivered, {head} (cycle {now})"
        )
    }

    fn describe_lnic(&self, h: usize) -> String {
        let hart = self.node.hart(h);
        let net = hart.net();
        let mut s = String::new();
        let state = match self.node.hart_state(h) {
            HartState::Running => "running".to_string(),
            HartState::Wfi => "in wfi".into(),
            HartState::Poll { .. } => "in an idle polling loop".into(),
            HartState::RxEmpty => "stalled on an empty netRX".into(),
            HartState::TxFull => "stalled on a full netTX".into(),
        };
        let _ = writeln!(
            s,
            "hart {h}: {state}, cycle {}, pc {:#x}",
            hart.cycle(),
            hart.pc()
        );
        for csr in [
            num::LCURCONTEXT,
            num::LCURPRIORITY,
            num::LMSGSRDY,
            num::LNICRDY,
            num::LTARGETCONTEXT,
            num::LTARGETPRIORITY,
            num::LMSGCYCLES,
            num::LIDLECYCLES,
        ] {
            let name = nanopu_core::commit_log::csr_name(csr);
            let v = hart.peek_csr(csr).unwrap_or(0);
            let _ = writeln!(s, "  {name:<16} ({csr:#05x}) = {v} ({v:#x})");
        }
        let contexts: Vec<String> = net
            .contexts()
            .map(|(c, p)| format!("{c} (priority {p}, {} RX words)", net.rx_len(c)))
            .collect();
        let _ = write!(
            s,
            "  registered contexts: {}\n  netTX: {} message(s) sent, output waiting: {}",
            if contexts.is_empty() {
                "none".to_string()
            } else {
                contexts.join(", ")
            },
            net.tx_messages,
            net.has_output()
        );
        s
    }
}

impl Target for GdbTarget<'_> {
    type Arch = NanopuRiscv;
    type Error = NodeError;

    fn base_ops(&mut self) -> BaseOps<'_, NanopuRiscv, NodeError> {
        BaseOps::MultiThread(self)
    }

    fn support_breakpoints(&mut self) -> Option<BreakpointsOps<'_, Self>> {
        Some(self)
    }

    fn support_monitor_cmd(&mut self) -> Option<MonitorCmdOps<'_, Self>> {
        Some(self)
    }
}

impl MultiThreadBase for GdbTarget<'_> {
    fn read_registers(&mut self, regs: &mut CoreRegs, tid: Tid) -> TargetResult<(), Self> {
        let hart = self.node.hart(self.hart_of(tid)?);
        regs.x = *hart.xregs();
        regs.pc = hart.pc();
        regs.f = *hart.fregs();
        Ok(())
    }

    fn write_registers(&mut self, regs: &CoreRegs, tid: Tid) -> TargetResult<(), Self> {
        let h = self.hart_of(tid)?;
        let hart = self.node.hart_mut(h);
        for (r, &v) in regs.x.iter().enumerate() {
            hart.write_x(r, v);
        }
        for (r, &v) in regs.f.iter().enumerate() {
            hart.write_f(r, v);
        }
        hart.set_pc(regs.pc);
        Ok(())
    }

    fn support_single_register_access(&mut self) -> Option<SingleRegisterAccessOps<'_, Tid, Self>> {
        Some(self)
    }

    fn read_addrs(&mut self, start: u64, data: &mut [u8], _tid: Tid) -> TargetResult<usize, Self> {
        match self.node.peek_memory(start, data) {
            0 => Err(TargetError::NonFatal),
            n => Ok(n),
        }
    }

    fn write_addrs(&mut self, start: u64, data: &[u8], _tid: Tid) -> TargetResult<(), Self> {
        if self.node.poke_memory(start, data) {
            Ok(())
        } else {
            Err(TargetError::NonFatal)
        }
    }

    fn list_active_threads(
        &mut self,
        thread_is_active: &mut dyn FnMut(Tid),
    ) -> Result<(), NodeError> {
        (0..self.node.cores()).for_each(|h| thread_is_active(tid_of(h)));
        Ok(())
    }

    fn support_resume(&mut self) -> Option<MultiThreadResumeOps<'_, Self>> {
        Some(self)
    }

    fn support_thread_extra_info(&mut self) -> Option<ThreadExtraInfoOps<'_, Self>> {
        Some(self)
    }
}

impl SingleRegisterAccess<Tid> for GdbTarget<'_> {
    fn read_register(
        &mut self,
        tid: Tid,
        reg: NanopuRegId,
        buf: &mut [u8],
    ) -> TargetResult<usize, Self> {
        let hart = self.node.hart(self.hart_of(tid)?);
        let (value, bytes) = match reg {
            NanopuRegId::X(r) => (hart.x(r as usize), 8),
            NanopuRegId::Pc => (hart.pc(), 8),
            NanopuRegId::F(r) => (hart.fregs()[r as usize], 8),
            NanopuRegId::Csr(c) => (hart.peek_csr(c).ok_or(TargetError::NonFatal)?, csr_bytes(c)),
        };
        let n = bytes.min(buf.len());
        buf[..n].copy_from_slice(&value.to_le_bytes()[..n]);
        Ok(n)
    }

    fn write_register(&mut self, tid: Tid, reg: NanopuRegId, val: &[u8]) -> TargetResult<(), Self> {
        let h = self.hart_of(tid)?;
        let mut bytes = [0u8; 8];
        let n = val.len().min(8);
        bytes[..n].copy_from_slice(&val[..n]);
        let value = u64::from_le_bytes(bytes);
        let hart = self.node.hart_mut(h);
        match reg {
            NanopuRegId::X(r) => hart.write_x(r as usize, value),
            NanopuRegId::Pc => hart.set_pc(value),
            NanopuRegId::F(r) => hart.write_f(r as usize, value),
            NanopuRegId::Csr(c) => {
                if let Err(e) = hart.poke_csr(c, value) {
                    eprintln!("gdb: {e}");
                    return Err(TargetError::NonFatal);
                }
            }
        }
        Ok(())
    }
}

impl MultiThreadResume for GdbTarget<'_> {
    fn resume(&mut self) -> Result<(), NodeError> {
        for h in 0..self.node.cores() {
            self.obs.resume_pc[h] = Some(self.node.hart(h).pc());
        }
        Ok(())
    }

    fn clear_resume_actions(&mut self) -> Result<(), NodeError> {
        self.obs.step.iter_mut().for_each(|s| *s = StepState::Off);
        self.has_action.iter_mut().for_each(|a| *a = false);
        self.locked = false;
        Ok(())
    }

    // Signals gdb passes back (after a fault stop, say) are ignored: the
    // guest has no signals.
    fn set_resume_action_continue(
        &mut self,
        tid: Tid,
        _signal: Option<Signal>,
    ) -> Result<(), NodeError> {
        if let Ok(h) = self.hart_of(tid) {
            self.has_action[h] = true;
        }
        Ok(())
    }

    fn support_single_step(&mut self) -> Option<MultiThreadSingleStepOps<'_, Self>> {
        Some(self)
    }

    fn support_scheduler_locking(&mut self) -> Option<MultiThreadSchedulerLockingOps<'_, Self>> {
        Some(self)
    }
}

impl MultiThreadSchedulerLocking for GdbTarget<'_> {
    fn set_resume_action_scheduler_lock(&mut self) -> Result<(), NodeError> {
        self.locked = true;
        Ok(())
    }
}

impl MultiThreadSingleStep for GdbTarget<'_> {
    fn set_resume_action_step(
        &mut self,
        tid: Tid,
        _signal: Option<Signal>,
    ) -> Result<(), NodeError> {
        if let Ok(h) = self.hart_of(tid) {
            self.obs.step[h] = StepState::Pending;
            self.has_action[h] = true;
        }
        Ok(())
    }
}

impl Breakpoints for GdbTarget<'_> {
    fn support_sw_breakpoint(&mut self) -> Option<SwBreakpointOps<'_, Self>> {
        Some(self)
    }
}

impl SwBreakpoint for GdbTarget<'_> {
    fn add_sw_breakpoint(&mut self, addr: u64, _kind: usize) -> TargetResult<bool, Self> {
        self.obs.breakpoints.insert(addr);
        Ok(true)
    }

    fn remove_sw_breakpoint(&mut self, addr: u64, _kind: usize) -> TargetResult<bool, Self> {
        Ok(self.obs.breakpoints.remove(&addr))
    }
}

impl MonitorCmd for GdbTarget<'_> {
    fn handle_monitor_cmd(&mut self, cmd: &[u8], out: ConsoleOutput<'_>) -> Result<(), NodeError> {
        self.monitor(&String::from_utf8_lossy(cmd), out);
        Ok(())
    }
}

impl ThreadExtraInfo for GdbTarget<'_> {
    fn thread_extra_info(&self, tid: Tid, buf: &mut [u8]) -> Result<usize, NodeError> {
        let h = tid.get() - 1;
        if h >= self.node.cores() {
            return Ok(0);
        }
        let state = match self.node.hart_state(h) {
            HartState::Running => "running",
            HartState::Wfi => "wfi",
            HartState::Poll { .. } => "polling",
            HartState::RxEmpty => "waiting on netRX",
            HartState::TxFull => "waiting on netTX",
        };
        let info = format!("hart {h} ({state}, cycle {})", self.node.cycle(h));
        let n = info.len().min(buf.len());
        buf[..n].copy_from_slice(&info.as_bytes()[..n]);
        Ok(n)
    }
}

/// What the debug session ended with.
pub enum SessionEnd {
    /// The program exited with this status (already clamped like `run`'s).
    Exited(u8),
    /// gdb detached: the program is to run on without it.
    Detached,
    /// gdb killed the program.
    Killed,
    /// gdb closed the connection without detaching.
    Lost,
    /// Ctrl-C (SIGINT) here: where each hart was.
    Interrupted(String),
}

/// How often `accept` looks at Ctrl-C while waiting for gdb.
const ACCEPT_POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// Waits for gdb on `addr` and serves it until the program exits, gdb goes
/// away or `interrupt` is raised (Ctrl-C); the node is stopped at its entry
/// point.
pub fn serve(
    node: &mut Node,
    addr: SocketAddr,
    limit: u64,
    interrupt: &AtomicBool,
) -> Result<SessionEnd> {
    let listener =
        TcpListener::bind(addr).with_context(|| format!("--gdb: cannot listen on {addr}"))?;
    let local = listener.local_addr().context("--gdb: listening socket")?;
    listener
        .set_nonblocking(true)
        .context("--gdb: listening socket")?;
    eprintln!(
        "gdb: waiting for a connection on {local} (gdb-multiarch -ex 'target remote {local}')"
    );
    let (stream, peer) = loop {
        if interrupt.load(Ordering::Relaxed) {
            return Ok(SessionEnd::Interrupted(node.describe_harts()));
        }
        match listener.accept() {
            Ok(conn) => break conn,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(ACCEPT_POLL),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e).context("--gdb: accepting a connection"),
        }
    };
    drop(listener);
    stream
        .set_nonblocking(false)
        .context("--gdb: the connection")?;
    eprintln!("gdb: connected from {peer}");
    let mut target = GdbTarget::new(node, limit);
    session::Session::new(stream, interrupt)
        .context("--gdb: the connection")?
        .serve(&mut target)
}
