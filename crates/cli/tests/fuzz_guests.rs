//! Random guest programs driving each NIC's host interface (issue 53): the
//! nanoPU's netRX/netTX registers and LNIC CSRs, IceNIC's MMIO queues and
//! RDMA doorbells, with random values (message headers, DRAM addresses,
//! anything), in a loop. Whatever a program does, the run ends with a
//! clear result (exit 0, 1 or 3) or one clear error (125), never a panic,
//! a hang or unbounded memory (each run is watched: `watched.rs`).
//! `PROPTEST_CASES=N` runs more.

mod watched;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use std::path::PathBuf;

/// Registers the operations use.
const REGS: [&str; 3] = ["t0", "t1", "t2"];
/// The LNIC CSRs (`nanopu-abi.md`), read.
const CSRS: [u16; 10] = [0x52, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x60, 0x61];
/// Those a program may write.
const WRITABLE_CSRS: [u16; 6] = [0x53, 0x54, 0x55, 0x56, 0x60, 0x61];
/// Register offsets of IceNIC's window and of the RDMA doorbell page, and
/// a few that nothing answers.
const MMIO_OFFSETS: [u16; 9] = [0x00, 0x08, 0x10, 0x12, 0x14, 0x18, 0x1c, 0x40, 0x7f8];
/// The data area, in the program's `.bss`.
const DATA: u64 = 0x8001_0000;

#[derive(Clone, Debug)]
enum Op {
    /// `li reg, value`.
    Li(usize, u64),
    /// `mv x31, reg`: a netTX word.
    Tx(usize),
    /// `mv x31, x30`: a netRX word straight back.
    Copy,
    /// `mv reg, x30`.
    Rx(usize),
    /// `add x31, x30, x30`: one pop, one push.
    TxRxRx,
    /// `csrw csr, reg`.
    CsrW(u16, usize),
    /// `csrr reg, csr`.
    CsrR(u16, usize),
    /// A store of `1 << size` bytes from `reg` at `offset` of the NIC's
    /// MMIO window (`s0`: IceNIC's registers, the RDMA doorbells, or for
    /// the nanoPU NIC, which has none, the data area).
    MmioStore(u16, u32, usize),
    /// A load likewise.
    MmioLoad(u16, u32, usize),
    /// `sd reg, 8 * word(s2)`: a word of the program's own data area
    /// (WQEs, frames for the NIC to read).
    Data(u16, usize),
}

/// A guest: its operations, run in a loop; whether it exits after 1000
/// rounds, and whether it installs a trap handler that skips what faults.
#[derive(Clone, Debug)]
struct Guest {
    ops: Vec<Op>,
    exits: bool,
    handler: bool,
}

/// Values worth trying: message headers for the client, for others and
/// too long, send requests and addresses in the data area and around DRAM,
/// small numbers, anything.
fn value() -> impl Strategy<Value = u64> {
    prop_oneof![
        (0u64..4, 0u64..3, 0u64..2200).prop_map(|(ip, ctx, len)| {
            let ip = [0x0a00_0002u64, 0x0a00_0001, 0xffff_ffff, 0][ip as usize];
            (ip << 32) | (ctx << 16) | len
        }),
        (0u64..64).prop_map(|i| DATA + i * 64),
        (0u64..3, 0u64..2048)
            .prop_map(|(at, len)| (len << 48) | [DATA, 0x8000_0000, 0x10][at as usize]),
        0u64..16,
        any::<u64>(),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let reg = 0..REGS.len();
    prop_oneof![
        3 => (reg.clone(), value()).prop_map(|(r, v)| Op::Li(r, v)),
        3 => reg.clone().prop_map(Op::Tx),
        1 => Just(Op::Copy),
        1 => reg.clone().prop_map(Op::Rx),
        1 => Just(Op::TxRxRx),
        2 => (prop::sample::select(&WRITABLE_CSRS[..]), reg.clone())
            .prop_map(|(c, r)| Op::CsrW(c, r)),
        1 => (prop::sample::select(&CSRS[..]), reg.clone()).prop_map(|(c, r)| Op::CsrR(c, r)),
        3 => (prop::sample::select(&MMIO_OFFSETS[..]), 0u32..4, reg.clone())
            .prop_map(|(o, s, r)| Op::MmioStore(o, s, r)),
        2 => (prop::sample::select(&MMIO_OFFSETS[..]), 0u32..4, reg.clone())
            .prop_map(|(o, s, r)| Op::MmioLoad(o, s, r)),
        2 => (0u16..256, reg).prop_map(|(w, r)| Op::Data(w, r)),
    ]
}

fn guest() -> impl Strategy<Value = Guest> {
    (
        prop::collection::vec(op(), 1..24),
        prop::bool::weighted(0.1),
        any::<bool>(),
    )
        .prop_map(|(ops, exits, handler)| Guest {
            ops,
            exits,
            handler,
        })
}

/// The program, its MMIO operations at `mmio`: uncompressed (so that the
/// trap handler, if any, skips a faulting instruction with `mepc + 4`),
/// the bases in `s0` and `s2`, then the operations in a loop.
fn source(g: &Guest, mmio: u64) -> String {
    let mut s = format!(".option norvc\nli s0, {mmio:#x}\nli s2, {DATA:#x}\nli s3, 0\n");
    if g.handler {
        s.push_str("la t3, 9f\ncsrw mtvec, t3\n");
    }
    s.push_str("1:\n");
    for op in &g.ops {
        let size = |s: u32| ["b", "h", "w", "d"][s as usize];
        let line = match *op {
            Op::Li(r, v) => format!("li {}, {v:#x}", REGS[r]),
            Op::Tx(r) => format!("mv x31, {}", REGS[r]),
            Op::Copy => "mv x31, x30".into(),
            Op::Rx(r) => format!("mv {}, x30", REGS[r]),
            Op::TxRxRx => "add x31, x30, x30".into(),
            Op::CsrW(c, r) => format!("csrw {c:#x}, {}", REGS[r]),
            Op::CsrR(c, r) => format!("csrr {}, {c:#x}", REGS[r]),
            Op::MmioStore(o, w, r) => format!("s{} {}, {o}(s0)", size(w), REGS[r]),
            Op::MmioLoad(o, w, r) => format!("l{} {}, {o}(s0)", size(w), REGS[r]),
            Op::Data(w, r) => format!("sd {}, {}(s2)", REGS[r], 8 * w),
        };
        s.push_str(&line);
        s.push('\n');
    }
    if g.exits {
        s.push_str(
            "addi s3, s3, 1\nli t3, 1000\nblt s3, t3, 1b\nli a0, 1\nla a1, tohost\nsd a0, 0(a1)\n",
        );
    }
    s.push_str("j 1b\n.align 2\n9: csrr t4, mepc\naddi t4, t4, 4\ncsrw mepc, t4\nmret\n");
    s
}

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("nanopu-fuzz-guests-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// [`source`] assembled with a data area, written to the temporary
/// directory.
fn build(g: &Guest, mmio: u64, name: &str) -> String {
    let image = nanopu_testkit::assemble(
        name,
        &format!(
            "{}\n.bss\n.align 6\n.skip 0x20000\n",
            nanopu_testkit::bare_metal(&source(g, mmio))
        ),
        None,
        &["-Wl,-N", "-Wl,-Ttext=0x80000000"],
    );
    let path = dir().join(format!("{name}.elf"));
    std::fs::write(&path, image).unwrap();
    path.display().to_string()
}

/// `nanopu args`: within the limits, no panic, a known status, one
/// `error:` line with 125 and none otherwise.
fn check(args: &[&str]) -> Result<(), TestCaseError> {
    let r = watched::nanopu(args, &dir());
    let what = format!("nanopu {args:?}: exit {:?}\n{}", r.code, r.stderr);
    if std::env::var_os("NANOPU_FUZZ_VERBOSE").is_some() {
        eprintln!("{:?} {}: {}", r.code, args[0], r.last_line());
    }
    prop_assert!(r.killed.is_none(), "{:?}: {}", r.killed, what);
    prop_assert!(!r.stderr.contains("panicked"), "panic: {}", what);
    prop_assert!(matches!(r.code, Some(0 | 1 | 3 | 125)), "status: {}", what);
    let errors = r.stderr.lines().filter(|l| l.starts_with("error:")).count();
    prop_assert_eq!(errors, usize::from(r.code == Some(125)), "{}", what);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: nanopu_testkit::proptest_cases(12),
        // Each case runs the simulator three times.
        max_shrink_iters: 20,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_guests_on_every_nic_end_clearly(g in guest()) {
        static CASE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = CASE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // The client starts at once (the program may never boot).
        let load = ["--load", "--count", "4", "--timeout-ns", "20000", "--start-ns", "500", "--max-sim-ms", "1"];
        let nanopu = build(&g, DATA + 0x1000, &format!("nanopu{n}"));
        let mut args = vec!["run", nanopu.as_str(), "--cores", "1"];
        args.extend(load);
        check(&args)?;
        let icenic = build(&g, 0x1001_6000, &format!("icenic{n}"));
        let mut args = vec!["run", icenic.as_str(), "--cores", "1", "--nic", "icenic"];
        args.extend(load);
        check(&args)?;
        // Two nodes with RDMA NICs, the program on both.
        let rdma = build(&g, 0x1002_0000, &format!("rdma{n}"));
        let cfg = dir().join(format!("rdma{n}.toml"));
        std::fs::write(
            &cfg,
            format!(
                "[network.topology]\nkind = \"single-switch\"\nhosts = 2\n[nic.transport]\nprotocol = \"ndp\"\n\
                 [node]\ncores = 1\n[[programs]]\nhosts = \"0-1\"\nnic = \"rdma\"\nprogram = \"{rdma}\"\n"
            ),
        )
        .unwrap();
        check(&["net", cfg.to_str().unwrap(), "--until-us", "300"])?;
    }
}
