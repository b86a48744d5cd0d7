//! HTIF host I/O through the `tohost` / `fromhost` words (the riscv-tests
//! and Spike convention, `nanopu-abi.md` "Build conventions").
//!
//! A store that changes `tohost` is served at once, during the store, and
//! the storing hart is then held for the time the prototype's front-end
//! server takes ([`Htif::take_owed_cycles`]: a cost per request and per
//! byte moved, [`DEFAULT_HTIF_REQUEST_CYCLES`],
//! [`DEFAULT_HTIF_BYTES_PER_CYCLE`]), so the guest's `while (fromhost == 0)`
//! loop ends on its first test and output costs simulated time, which
//! `--max-cycles` bounds.

use crate::bus_device::{BusDevice, Dma, StoreEffect};
use crate::dram::Dram;
use std::io::Write;

pub const SYS_EXIT: u64 = 93;
pub const SYS_WRITE: u64 = 64;
pub const SYS_READ: u64 = 63;
pub const SYS_GETMAINVARS: u64 = 2011;
const ENOSYS: i64 = 38;
const EBADF: i64 = 9;
const ENOMEM: i64 = 12;

/// How much output a node keeps in [`Htif::output`] when it does not echo
/// (tests and network hosts): 16 MiB, more than any test program prints.
pub const OUTPUT_KEEP: usize = 16 << 20;

/// Core cycles a request to the host costs besides its bytes. Source: the
/// prototype's host (fesvr, through FireSim's serial bridge) serves HTIF
/// only between steps of the target, 128 target cycles each in the
/// nanoPU's FireSim runs (l-nic/chipyard `software/local_firesim` launch
/// script: `+fesvr-step-size=128`); a syscall is five dependent accesses
/// over the serial link (read `tohost`, read the syscall block, write its
/// result, write `fromhost`, clear `tohost`), one step each: an
/// assumption, 5 x 128.
pub const DEFAULT_HTIF_REQUEST_CYCLES: u64 = 640;
/// Bytes a request's buffer (`SYS_write`'s output, `SYS_read`'s input)
/// moves per core cycle. Source: the serial link between the chip and
/// fesvr is 32 bits wide (testchipip `SerialAdapter.SERIAL_TSI_WIDTH = 32`,
/// "hardcoded in FESVR"), one word a cycle.
pub const DEFAULT_HTIF_BYTES_PER_CYCLE: u64 = 4;

/// What a `tohost` write asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HtifRequest {
    /// Nothing to do (tohost written with 0).
    None,
    /// A syscall or console request was served; the guest continues.
    Served,
    /// The program ended with this exit code.
    Exit(u64),
    /// The request was malformed; the run must stop with this error.
    Error(HtifError),
}

/// A malformed HTIF request (the guest's fault, reported with the run).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HtifError {
    #[error("tohost at {0:#x} is outside DRAM")]
    TohostOutsideDram(u64),
    #[error("tohost = {value:#x}: unknown HTIF device {device} command {command}")]
    UnknownDevice {
        value: u64,
        device: u64,
        command: u64,
    },
    #[error("tohost points at a syscall block at {0:#x}, outside DRAM")]
    SyscallBlockOutsideDram(u64),
    #[error("SYS_write of {len} bytes from {addr:#x}: buffer outside DRAM")]
    WriteOutsideDram { addr: u64, len: u64 },
    #[error("SYS_read into {0:#x}: buffer outside DRAM")]
    ReadOutsideDram(u64),
}

/// Host side of HTIF for one node.
pub struct Htif {
    pub tohost: u64,
    pub fromhost: u64,
    /// What the guest wrote to fds 1 and 2 (and the console), unless
    /// `echo` streams it: at most [`OUTPUT_KEEP`] bytes, the first ones.
    pub output: Vec<u8>,
    /// Output bytes not kept in `output` because it was full.
    pub output_dropped: u64,
    /// Stream output to the host's stdout as it arrives instead of keeping
    /// it, so a guest that writes without end runs in constant memory.
    pub echo: bool,
    /// Stream output here instead (takes precedence over `echo`).
    pub sink: Option<Box<dyn Write + Send>>,
    /// Bytes served to `SYS_read` on fd 0.
    pub stdin: Vec<u8>,
    stdin_pos: usize,
    /// Program arguments for `SYS_getmainvars` (argv[0] first).
    pub args: Vec<String>,
    /// Syscalls the host does not implement (number, count).
    pub unsupported: Vec<(u64, u64)>,
    /// The last request that needs the node's attention (exit or error).
    request: Option<HtifRequest>,
    /// Core cycles a request costs besides its bytes.
    pub request_cycles: u64,
    /// Bytes a request's buffer moves per core cycle (0: free).
    pub bytes_per_cycle: u64,
    /// Cycles the requests served cost, not yet charged to the hart.
    owed_cycles: u64,
}

/// A copy without the output `sink` (a writer cannot be copied: see
/// [`crate::Node::fork`]).
impl Clone for Htif {
    fn clone(&self) -> Htif {
        Htif {
            tohost: self.tohost,
            fromhost: self.fromhost,
            output: self.output.clone(),
            output_dropped: self.output_dropped,
            echo: self.echo,
            sink: None,
            stdin: self.stdin.clone(),
            stdin_pos: self.stdin_pos,
            args: self.args.clone(),
            unsupported: self.unsupported.clone(),
            request: self.request.clone(),
            request_cycles: self.request_cycles,
            bytes_per_cycle: self.bytes_per_cycle,
            owed_cycles: self.owed_cycles,
        }
    }
}

impl Htif {
    pub fn new(tohost: u64, fromhost: u64) -> Htif {
        Htif {
            tohost,
            fromhost,
            output: Vec::new(),
            output_dropped: 0,
            echo: false,
            sink: None,
            stdin: Vec::new(),
            stdin_pos: 0,
            args: Vec::new(),
            unsupported: Vec::new(),
            request: None,
            request_cycles: DEFAULT_HTIF_REQUEST_CYCLES,
            bytes_per_cycle: DEFAULT_HTIF_BYTES_PER_CYCLE,
            owed_cycles: 0,
        }
    }

    /// The cycles the requests served since the last call cost the hart
    /// that made them (taken).
    pub fn take_owed_cycles(&mut self) -> u64 {
        std::mem::take(&mut self.owed_cycles)
    }

    /// Charges one request that moved `bytes` bytes.
    fn charge(&mut self, bytes: u64) {
        let transfer = match self.bytes_per_cycle {
            0 => 0,
            b => bytes.div_ceil(b),
        };
        self.owed_cycles = self
            .owed_cycles
            .saturating_add(self.request_cycles)
            .saturating_add(transfer);
    }

    /// The exit or error a `tohost` write asked for, if any (taken).
    pub fn take_request(&mut self) -> Option<HtifRequest> {
        self.request.take()
    }

    /// Whether a store of `size` bytes at `addr` touches `tohost`.
    #[inline(always)]
    pub fn is_tohost_store(&self, addr: u64, size: u8) -> bool {
        addr < self.tohost + 8 && addr + size as u64 > self.tohost
    }

    /// Serves the value now in `tohost`.
    pub fn serve(&mut self, dram: &mut Dram) -> HtifRequest {
        let Some(off) = dram.offset(self.tohost, 8) else {
            return HtifRequest::Error(HtifError::TohostOutsideDram(self.tohost));
        };
        let value = dram.read(off, 8);
        if value == 0 {
            return HtifRequest::None;
        }
        let device = value >> 56;
        let command = (value >> 48) & 0xff;
        // A negative exit code (`tohost = (code << 1) | 1`, as the nanoPU
        // artifact's syscalls.c writes for `exit(-1)`) sets the device byte;
        // fesvr would take it for device 255 and leave the guest spinning.
        // Read it as the exit it means: code -1 is `u64::MAX` here.
        let negative_exit = (value as i64) < 0 && (value as i64 >> 1) >= i64::from(i32::MIN);
        let request = if value & 1 == 1 && (device == 0 || negative_exit) {
            return HtifRequest::Exit(((value as i64) >> 1) as u64);
        } else if device == 1 && command == 1 {
            // Console putchar (fesvr's "bcd" device).
            self.emit(&[value as u8]);
            self.charge(1);
            HtifRequest::Served
        } else if device == 0 {
            self.syscall(dram, value & ((1 << 48) - 1))
        } else {
            HtifRequest::Error(HtifError::UnknownDevice {
                value,
                device,
                command,
            })
        };
        if let HtifRequest::Served = request {
            dram.write(off, 8, 0);
            let reply = if device == 1 { value & !0xff } else { 1 };
            if let Some(f) = dram.offset(self.fromhost, 8) {
                dram.write(f, 8, reply);
            }
        }
        request
    }

    /// Writes `bytes` to the sink or the host's stdout if echoing, else
    /// keeps them (up to [`OUTPUT_KEEP`] bytes in all).
    pub fn emit(&mut self, bytes: &[u8]) {
        if let Some(sink) = self.sink.as_mut() {
            let _ = sink.write_all(bytes);
            return;
        }
        if self.echo {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(bytes);
            let _ = out.flush();
            return;
        }
        let room = OUTPUT_KEEP.saturating_sub(self.output.len());
        let kept = bytes.len().min(room);
        self.output.extend_from_slice(&bytes[..kept]);
        self.output_dropped += (bytes.len() - kept) as u64;
    }

    fn syscall(&mut self, dram: &mut Dram, magic: u64) -> HtifRequest {
        let Some(words) = dram.slice(magic, 64) else {
            return HtifRequest::Error(HtifError::SyscallBlockOutsideDram(magic));
        };
        let w = |i: usize| u64::from_le_bytes(words[i * 8..i * 8 + 8].try_into().unwrap());
        let (num, a0, a1, a2) = (w(0), w(1), w(2), w(3));
        let mut moved = 0;
        let ret: i64 = match num {
            SYS_EXIT => return HtifRequest::Exit(a0),
            SYS_WRITE if a0 == 1 || a0 == 2 => match dram.slice(a1, a2) {
                Some(bytes) => {
                    self.emit(bytes);
                    moved = a2;
                    a2 as i64
                }
                None => {
                    return HtifRequest::Error(HtifError::WriteOutsideDram { addr: a1, len: a2 })
                }
            },
            SYS_WRITE => -EBADF,
            SYS_READ if a0 == 0 => {
                let n = (a2 as usize).min(self.stdin.len() - self.stdin_pos);
                match dram.slice_mut(a1, n as u64) {
                    Some(buf) => {
                        buf.copy_from_slice(&self.stdin[self.stdin_pos..self.stdin_pos + n]);
                        self.stdin_pos += n;
                        moved = n as u64;
                        n as i64
                    }
                    None => return HtifRequest::Error(HtifError::ReadOutsideDram(a1)),
                }
            }
            SYS_READ => -EBADF,
            SYS_GETMAINVARS => self.getmainvars(dram, a0, a1),
            _ => {
                match self.unsupported.iter_mut().find(|(n, _)| *n == num) {
                    Some((_, count)) => *count += 1,
                    None => self.unsupported.push((num, 1)),
                }
                -ENOSYS
            }
        };
        let off = dram.offset(magic, 8).expect("checked above");
        dram.write(off, 8, ret as u64);
        self.charge(moved);
        HtifRequest::Served
    }

    /// Fills `buf` with `argc, argv[0..argc], NULL, NULL (envp)` followed by
    /// the strings, the layout riscv-tests' and pk's `getmainvars` expect.
    fn getmainvars(&self, dram: &mut Dram, buf: u64, limit: u64) -> i64 {
        let n = self.args.len() as u64;
        let header = 8 * (n + 3);
        let strings: u64 = self.args.iter().map(|a| a.len() as u64 + 1).sum();
        if header + strings > limit {
            return -ENOMEM;
        }
        let Some(out) = dram.slice_mut(buf, header + strings) else {
            return -ENOMEM;
        };
        out.fill(0);
        out[..8].copy_from_slice(&n.to_le_bytes());
        let mut at = header;
        for (i, a) in self.args.iter().enumerate() {
            let ptr = buf + at;
            out[8 + 8 * i..16 + 8 * i].copy_from_slice(&ptr.to_le_bytes());
            out[at as usize..at as usize + a.len()].copy_from_slice(a.as_bytes());
            at += a.len() as u64 + 1;
        }
        0
    }
}

/// HTIF's window is its `tohost` word in DRAM: a store there (already in
/// memory) is served at once.
impl BusDevice for Htif {
    fn mmio_load(&mut self, _off: u64, _size: u8, _cycle: u64) -> Option<u64> {
        None
    }

    fn mmio_store(
        &mut self,
        _off: u64,
        _size: u8,
        _value: u64,
        _cycle: u64,
        mem: Dma<'_>,
    ) -> Option<StoreEffect> {
        Some(match self.serve(mem.dram) {
            HtifRequest::None => StoreEffect::Done,
            HtifRequest::Served => StoreEffect::Yield,
            request => {
                self.request = Some(request);
                StoreEffect::Yield
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: u64 = 0x8000_0000;

    fn setup() -> (Htif, Dram) {
        let dram = Dram::new(BASE, 1 << 20).unwrap();
        (Htif::new(BASE + 0x1000, BASE + 0x1040), dram)
    }

    fn put(d: &mut Dram, addr: u64, v: u64) {
        let o = d.offset(addr, 8).unwrap();
        d.write(o, 8, v);
    }

    fn get(d: &Dram, addr: u64) -> u64 {
        d.read(d.offset(addr, 8).unwrap(), 8)
    }

    #[test]
    fn exit_code() {
        let (mut h, mut d) = setup();
        put(&mut d, h.tohost, (3 << 1) | 1);
        assert_eq!(h.serve(&mut d), HtifRequest::Exit(3));
        // exit(-1) as the nanoPU artifact's syscalls.c writes it.
        put(&mut d, h.tohost, (-1i64 << 1 | 1) as u64);
        assert_eq!(h.serve(&mut d), HtifRequest::Exit(u64::MAX));
    }

    #[test]
    fn write_syscall_answers_through_fromhost() {
        let (mut h, mut d) = setup();
        let magic = BASE + 0x2000;
        d.slice_mut(BASE + 0x3000, 3)
            .unwrap()
            .copy_from_slice(b"hi\n");
        for (i, v) in [SYS_WRITE, 1, BASE + 0x3000, 3].into_iter().enumerate() {
            put(&mut d, magic + 8 * i as u64, v);
        }
        put(&mut d, h.tohost, magic);
        assert_eq!(h.serve(&mut d), HtifRequest::Served);
        assert_eq!(h.output, b"hi\n");
        assert_eq!(get(&d, magic), 3);
        assert_eq!(get(&d, h.fromhost), 1);
        assert_eq!(get(&d, h.tohost), 0);
    }

    #[test]
    fn requests_cost_time_per_request_and_per_byte() {
        let (mut h, mut d) = setup();
        let magic = BASE + 0x2000;
        for (i, v) in [SYS_WRITE, 1, BASE + 0x3000, 1 << 16]
            .into_iter()
            .enumerate()
        {
            put(&mut d, magic + 8 * i as u64, v);
        }
        put(&mut d, h.tohost, magic);
        assert_eq!(h.serve(&mut d), HtifRequest::Served);
        assert_eq!(
            h.take_owed_cycles(),
            DEFAULT_HTIF_REQUEST_CYCLES + (1 << 16) / DEFAULT_HTIF_BYTES_PER_CYCLE
        );
        assert_eq!(h.take_owed_cycles(), 0);
        // An exit costs nothing (the run ends).
        put(&mut d, h.tohost, 1);
        assert_eq!(h.serve(&mut d), HtifRequest::Exit(0));
        assert_eq!(h.take_owed_cycles(), 0);
    }

    #[test]
    fn kept_output_is_bounded_and_counts_what_it_drops() {
        let (mut h, _) = setup();
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..(OUTPUT_KEEP >> 20) + 3 {
            h.emit(&chunk);
        }
        assert_eq!(h.output.len(), OUTPUT_KEEP);
        assert_eq!(h.output_dropped, 3 << 20);
    }

    #[test]
    fn bad_pointer_is_an_error_not_a_panic() {
        let (mut h, mut d) = setup();
        put(&mut d, h.tohost, 0x10);
        assert!(matches!(h.serve(&mut d), HtifRequest::Error(_)));
    }

    #[test]
    fn getmainvars_lays_out_argv() {
        let (mut h, mut d) = setup();
        h.args = vec!["prog".into(), "x".into()];
        let buf = BASE + 0x4000;
        assert_eq!(h.getmainvars(&mut d, buf, 4096), 0);
        assert_eq!(get(&d, buf), 2);
        let argv1 = get(&d, buf + 16);
        assert_eq!(d.slice(argv1, 2).unwrap(), b"x\0");
        assert_eq!(get(&d, buf + 24), 0);
    }
}
