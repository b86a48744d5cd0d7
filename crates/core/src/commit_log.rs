//! A commit log in Spike's `--log-commits` format, so a run can be diffed
//! against Spike instruction by instruction.
//!
//! One line per retired instruction (riscv-isa-sim `riscv/execute.cc`,
//! `commit_log_print_insn`):
//!
//! ```text
//! core   0: 3 0x0000000080000004 (0x00a28293) x5  0x0000000080000010
//! core   0: 3 0x0000000080000008 (0x0062b023) mem 0x0000000080000010 0x0000000000000007
//! ```
//!
//! hart, privilege before the instruction, pc, encoding (4 or 8 hex digits),
//! then the registers written in Spike's order (its `std::map` keyed by
//! `reg << 4 | kind`: x registers, f registers, CSRs as `c<num>_<name>`),
//! the loads (`mem ADDR`) and the stores (`mem ADDR VALUE`, VALUE as wide
//! as the store). Instructions that trap are not logged (Spike neither).
//!
//! CSRs written implicitly are logged as Spike logs them where the model
//! has the same state: `mstatus` when an FP instruction first makes FS
//! dirty, and `fflags` when an FP operation changes it (Spike also logs it
//! when the operation raises flags that were already set; see README).

use crate::csr::num;
use crate::debug::{MemoryPeek, Observer};
use crate::decode_cache::Decoded;
use crate::hart::Hart;
use nanopu_isa::{Format, Opcode, RegFile};
use std::io::Write;

/// Register-write kinds, as Spike keys its `log_reg_write` map.
const KIND_X: u32 = 0;
const KIND_F: u32 = 1;
const KIND_CSR: u32 = 4;

/// A memory access of the instruction being logged.
#[derive(Clone, Copy, Default)]
struct Access {
    addr: u64,
    size: u8,
    load: bool,
    store: bool,
    /// The value stored (None: read memory after the instruction, for AMOs).
    value: Option<u64>,
}

/// Writes Spike's commit log for every hart it observes.
pub struct CommitLog<W: Write> {
    out: W,
    /// State before the instruction: privilege, mstatus, fflags, access.
    privilege: u8,
    mstatus: u64,
    fflags: u8,
    access: Option<Access>,
    /// The source operand of a CSR instruction (rs1's value or the immediate).
    csr_src: u64,
    /// The first write error (later lines are dropped; reported by `flush`).
    error: Option<std::io::Error>,
}

impl<W: Write> CommitLog<W> {
    pub fn new(out: W) -> CommitLog<W> {
        CommitLog {
            out,
            privilege: 3,
            mstatus: 0,
            fflags: 0,
            access: None,
            csr_src: 0,
            error: None,
        }
    }

    /// The writer, once the run is over.
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// Bytes a load or store of `op` moves, and whether it loads and stores.
fn memory_op(op: Opcode) -> Option<(u8, bool, bool)> {
    use Opcode::*;
    Some(match op {
        Lb | Lbu => (1, true, false),
        Lh | Lhu => (2, true, false),
        Lw | Lwu | Flw | LrW => (4, true, false),
        Ld | Fld | LrD => (8, true, false),
        Sb => (1, false, true),
        Sh => (2, false, true),
        Sw | Fsw | ScW => (4, false, true),
        Sd | Fsd | ScD => (8, false, true),
        AmoswapW | AmoaddW | AmoxorW | AmoandW | AmoorW | AmominW | AmomaxW | AmominuW
        | AmomaxuW | AmocasW => (4, true, true),
        AmoswapD | AmoaddD | AmoxorD | AmoandD | AmoorD | AmominD | AmomaxD | AmominuD
        | AmomaxuD | AmocasD => (8, true, true),
        _ => return None,
    })
}

/// Spike's name of CSR `csr` (`riscv/encoding.h`), or ours for the nanoPU's.
pub fn csr_name(csr: u16) -> String {
    if let Some((_, name)) = crate::debug::DEBUG_CSRS.iter().find(|(n, _)| *n == csr) {
        return (*name).to_string();
    }
    match csr {
        num::TIME => "time".into(),
        0x3a2 => "pmpcfg2".into(),
        0x3b1..=0x3bf => format!("pmpaddr{}", csr - 0x3b0),
        0xb03..=0xb1f => format!("mhpmcounter{}", csr - 0xb00),
        0xc03..=0xc1f => format!("hpmcounter{}", csr - 0xc00),
        0x323..=0x33f => format!("mhpmevent{}", csr - 0x320),
        num::TSELECT => "tselect".into(),
        0x7a1..=0x7a3 => format!("tdata{}", csr - 0x7a0),
        num::MCONFIGPTR => "mconfigptr".into(),
        _ => "unknown".into(),
    }
}

impl<W: Write> CommitLog<W> {
    fn line(
        &mut self,
        hart: &Hart,
        pc: u64,
        d: &Decoded,
        mem: &mut dyn MemoryPeek,
    ) -> std::io::Result<()> {
        let i = &d.inst;
        let out = &mut self.out;
        write!(out, "core{:4}: {} 0x{pc:016x} (", hart.id(), self.privilege)?;
        if i.len == 2 {
            write!(out, "0x{:04x})", i.raw & 0xffff)?;
        } else {
            write!(out, "0x{:08x})", i.raw)?;
        }
        // Register writes: at most rd, two CSRs and mstatus; Spike's order.
        let mut writes: [(u32, u64); 5] = [(u32::MAX, 0); 5];
        let mut n = 0;
        let mut push = |key: u32, value: u64| {
            if !writes[..n].iter().any(|w| w.0 == key) {
                writes[n] = (key, value);
                n += 1;
            }
        };
        let [dest, ..] = i.op.format().operands();
        match dest {
            RegFile::X if i.rd != 0 => push((i.rd as u32) << 4 | KIND_X, hart.x(i.rd as usize)),
            RegFile::F => push((i.rd as u32) << 4 | KIND_F, hart.fregs()[i.rd as usize]),
            _ => {}
        }
        if matches!(i.op.format(), Format::Csr | Format::CsrI) {
            let csr = (i.imm as u32 & 0xfff) as u16;
            let writes_csr = matches!(i.op, Opcode::Csrrw | Opcode::Csrrwi) || i.rs1 != 0;
            if writes_csr {
                // fcsr is written through fflags and frm (Spike's composite CSR).
                let parts: &[u16] = if csr == num::FCSR {
                    &[num::FFLAGS, num::FRM]
                } else {
                    std::slice::from_ref(&csr)
                };
                for &c in parts {
                    // The NIC command CSRs read as zero: log the command written.
                    let value = if c == num::LNICCMD || c == num::LNICUCMD {
                        match i.op {
                            Opcode::Csrrc | Opcode::Csrrci => Some(0),
                            _ => Some(self.csr_src),
                        }
                    } else {
                        hart.peek_csr(c)
                    };
                    if let Some(v) = value {
                        push((c as u32) << 4 | KIND_CSR, v);
                    }
                }
            }
        } else if hart.csr().fflags != self.fflags {
            push(
                (num::FFLAGS as u32) << 4 | KIND_CSR,
                hart.csr().fflags as u64,
            );
        }
        let mstatus = hart.csr().mstatus_read();
        if mstatus != self.mstatus || i.op == Opcode::Mret {
            push((num::MSTATUS as u32) << 4 | KIND_CSR, mstatus);
        }
        let writes = &mut writes[..n];
        writes.sort_unstable_by_key(|w| w.0);
        for &(key, value) in writes.iter() {
            let r = key >> 4;
            match key & 0xf {
                KIND_X => write!(out, " x{r:<2} 0x{value:016x}")?,
                KIND_F => write!(out, " f{r:<2} 0x{value:016x}")?,
                _ => write!(out, " c{r}_{} 0x{value:016x}", csr_name(r as u16))?,
            }
        }
        if let Some(a) = self.access {
            if a.load {
                write!(out, " mem 0x{:016x}", a.addr)?;
            }
            let stored = match (a.store, a.value) {
                (false, _) => None,
                (true, Some(v)) => Some(v),
                (true, None) => mem.peek(a.addr, a.size),
            };
            let sc_failed = matches!(i.op, Opcode::ScW | Opcode::ScD)
                && if i.rd != 0 {
                    hart.x(i.rd as usize) != 0
                } else {
                    stored.is_some_and(|v| Some(v) != mem.peek(a.addr, a.size))
                };
            if let (Some(v), false) = (stored, sc_failed) {
                let width = 2 * a.size as usize;
                write!(out, " mem 0x{:016x} 0x{v:0width$x}", a.addr)?;
            }
        }
        writeln!(out)
    }
}

impl<W: Write> Observer for CommitLog<W> {
    fn before(&mut self, hart: &Hart, d: &Decoded) -> bool {
        let i = &d.inst;
        self.privilege = hart.privilege() as u8;
        self.mstatus = hart.csr().mstatus_read();
        self.fflags = hart.csr().fflags;
        self.csr_src = match i.op.format() {
            Format::CsrI => i.rs1 as u64,
            _ => hart.x(i.rs1 as usize),
        };
        self.access = memory_op(i.op).map(|(size, load, store)| {
            let base = hart.x(i.rs1 as usize);
            let addr = base.wrapping_add(i.imm as i64 as u64);
            let mask = if size == 8 {
                u64::MAX
            } else {
                (1 << (8 * size)) - 1
            };
            let value = match i.op {
                _ if !store || load => None,
                Opcode::Fsw | Opcode::Fsd => Some(hart.fregs()[i.rs2 as usize] & mask),
                _ => Some(hart.x(i.rs2 as usize) & mask),
            };
            Access {
                addr,
                size,
                load,
                store,
                value,
            }
        });
        false
    }

    fn after(
        &mut self,
        hart: &Hart,
        _issue: u64,
        pc: u64,
        d: &Decoded,
        retired: bool,
        mem: &mut dyn MemoryPeek,
    ) {
        if !retired || self.error.is_some() {
            return;
        }
        if let Err(e) = self.line(hart, pc, d, mem) {
            self.error = Some(e);
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.out.flush()
    }
}
