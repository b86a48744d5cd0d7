//! Bad guest programs end with a clear error, never a hang, and a run's
//! memory stays bounded (issue 9, the guest side).

mod common;

use common::*;
use nanopu_core::Exception;
use nanopu_node::loader::{load_bytes, LoadError};
use nanopu_node::{dram::Dram, Node, NodeConfig, NodeError, RunEnd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

fn dram() -> Dram {
    Dram::new(0x8000_0000, 16 << 30).unwrap()
}

#[test]
fn a_handler_that_faults_on_every_entry_is_a_trap_storm_not_a_hang() {
    // The handler's first store goes through a stack pointer outside DRAM:
    // every entry faults at the same instruction, which re-enters the handler.
    let body = "    la a0, handler\n    csrw mtvec, a0\n    li sp, 0x1000\n    ecall\n\
                \n    .align 2\nhandler:\n    addi sp, sp, -16\n    sd ra, 8(sp)\n    mret\n";
    let mut node = asm_node("storm", body, 1);
    match node.run(u64::MAX) {
        Err(NodeError::Fault(f)) => {
            assert_eq!(f.cause, Exception::StoreAccessFault);
            assert!(f.reason.contains("trap storm"), "{f}");
            assert!(f.instruction.starts_with("sd ra, 8(sp)"), "{f}");
            let msg = NodeError::Fault(f).to_string();
            assert!(!msg.contains('\n'), "one line: {msg}");
        }
        other => panic!("expected a trap storm, got {other:?}"),
    }
    assert!(node.hart_stats(0).traps <= 300, "stopped early");
}

#[test]
fn traps_that_return_are_not_a_storm() {
    // 1000 ecalls at the same pc, each returned from with mret.
    let body = format!(
        "    la a0, handler\n    csrw mtvec, a0\n    li s0, 1000\n\
         1:  ecall\n    addi s0, s0, -1\n    bnez s0, 1b\n    li a0, 0\n{}\
         \n    .align 2\nhandler:\n    csrr t0, mepc\n    addi t0, t0, 4\n    csrw mepc, t0\n    mret\n",
        exit_with("a0")
    );
    let mut node = asm_node("ecalls", &body, 1);
    assert_eq!(node.run(u64::MAX).unwrap(), RunEnd::Exited(0));
    assert_eq!(node.hart_stats(0).traps, 1000);
}

#[test]
fn a_stop_request_ends_an_endless_run_with_where_each_hart_is() {
    let mut node = asm_node("endless", "1:  addi a0, a0, 1\n    j 1b\n", 2);
    let flag = Arc::new(AtomicBool::new(false));
    node.set_stop_request(flag.clone());
    let raiser = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        flag.store(true, Ordering::Relaxed);
    });
    let started = std::time::Instant::now();
    let result = node.run(u64::MAX);
    raiser.join().unwrap();
    match result {
        Err(NodeError::Interrupted(harts)) => {
            assert!(started.elapsed().as_secs() < 10);
            for h in 0..2 {
                assert!(
                    harts.contains(&format!("hart {h}: running, cycle ")),
                    "{harts}"
                );
            }
            assert!(harts.contains("pc 0x8000000"), "{harts}");
        }
        other => panic!("expected an interrupted run, got {other:?}"),
    }
}

#[test]
fn a_stop_request_reaches_a_single_hart_in_one_long_slice() {
    let mut node = asm_node("endless1", "1:  addi a0, a0, 1\n    j 1b\n", 1);
    let flag = Arc::new(AtomicBool::new(false));
    node.set_stop_request(flag.clone());
    let raiser = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        flag.store(true, Ordering::Relaxed);
    });
    let result = node.run(u64::MAX);
    raiser.join().unwrap();
    assert!(
        matches!(result, Err(NodeError::Interrupted(_))),
        "{result:?}"
    );
}

#[test]
fn a_two_gigabyte_bss_costs_no_host_memory() {
    let body = format!(
        "    la a0, big\n    li a1, 0x7ffffff8\n    add a0, a0, a1\n    ld a0, 0(a0)\n{}\
         \n    .section .bss\n    .align 12\nbig: .skip 0x80000000\n",
        exit_with("a0")
    );
    let elf = assemble("bigbss", &body);
    let mut d = dram();
    let program = load_bytes("bigbss", &elf, &mut d).unwrap();
    assert!(program.loaded_bytes < 1 << 16);
    let resident = d.resident_bytes();
    assert!(
        resident < 1 << 20,
        "{resident} bytes of DRAM touched by loading"
    );
    let mut node = Node::with_program_bytes(NodeConfig::default(), "bigbss", &elf).unwrap();
    assert_eq!(node.run(u64::MAX).unwrap(), RunEnd::Exited(0));
    let resident = node.dram().resident_bytes();
    assert!(resident < 1 << 20, "{resident} bytes of DRAM after the run");
}

#[test]
fn overlapping_segments_still_zero_their_bss() {
    // A .bss that overlaps bytes an earlier segment loaded must read zero.
    let body = format!(
        "    la a0, data\n    ld a0, 0(a0)\n{}\n    .section .data\n    .align 3\ndata: .dword 0x1234\n",
        exit_with("a0")
    );
    let mut elf = assemble("overlap", &body);
    // Turn a program header that loads nothing (GNU_STACK, RISCV_ATTRIBUTES)
    // into a second PT_LOAD over the last segment's addresses with no file
    // bytes, placed after it: the loader must zero what it loaded before.
    let file = elf::ElfBytes::<elf::endian::AnyEndian>::minimal_parse(&elf).unwrap();
    let (phoff, phentsize) = (file.ehdr.e_phoff as usize, file.ehdr.e_phentsize as usize);
    let headers: Vec<_> = file.segments().unwrap().iter().collect();
    let last = headers
        .iter()
        .rposition(|p| p.p_type == elf::abi::PT_LOAD)
        .unwrap();
    let spare = headers
        .iter()
        .position(|p| p.p_type != elf::abi::PT_LOAD)
        .expect("a spare program header");
    let entry = |i: usize| phoff + i * phentsize..phoff + (i + 1) * phentsize;
    let data_segment = elf[entry(last)].to_vec();
    let mut bss = data_segment.clone();
    bss[32..40].copy_from_slice(&0u64.to_le_bytes()); // p_filesz
    let (first, second) = if spare > last {
        (last, spare)
    } else {
        (spare, last)
    };
    elf[entry(first)].copy_from_slice(&data_segment);
    elf[entry(second)].copy_from_slice(&bss);
    let cfg = NodeConfig {
        cores: 1,
        ..NodeConfig::default()
    };
    let mut node = Node::with_program_bytes(cfg, "overlap", &elf).unwrap();
    assert_eq!(node.run(u64::MAX).unwrap(), RunEnd::Exited(0));
}

/// Counts what it is given, keeps nothing.
struct Counter(Arc<AtomicU64>);

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.fetch_add(buf.len() as u64, Ordering::Relaxed);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes a 1 MiB buffer to stdout `times` times through HTIF SYS_write.
fn writer_program(times: u64) -> String {
    format!(
        "    li s0, {times}\n\
         1:  la a0, block\n    li t0, 64\n    sd t0, 0(a0)\n    li t0, 1\n    sd t0, 8(a0)\n\
             la t0, buf\n    sd t0, 16(a0)\n    li t0, 0x100000\n    sd t0, 24(a0)\n\
             la t1, tohost\n    sd a0, 0(t1)\n\
         2:  la t1, fromhost\n    ld t2, 0(t1)\n    beqz t2, 2b\n    sd zero, 0(t1)\n\
             addi s0, s0, -1\n    bnez s0, 1b\n    li a0, 0\n{}\
         \n    .section .data\n    .align 6\nblock: .skip 64\n\
         \n    .section .bss\n    .align 12\nbuf: .skip 0x100000\n",
        exit_with("a0")
    )
}

fn one_core() -> NodeConfig {
    NodeConfig {
        cores: 1,
        ..NodeConfig::default()
    }
}

#[test]
fn streamed_output_is_not_kept() {
    let elf = assemble("writer", &writer_program(512));
    let mut node = Node::with_program_bytes(one_core(), "writer", &elf).unwrap();
    let count = Arc::new(AtomicU64::new(0));
    node.htif_mut().unwrap().sink = Some(Box::new(Counter(count.clone())));
    assert_eq!(node.run(u64::MAX).unwrap(), RunEnd::Exited(0));
    assert_eq!(count.load(Ordering::Relaxed), 512 << 20);
    let htif = node.htif().unwrap();
    assert!(htif.output.is_empty() && htif.output_dropped == 0);
}

/// A fork runs on exactly as the original (cycles, instructions, output,
/// memory); one is refused while output goes to a sink.
#[test]
fn a_fork_runs_on_as_the_original() {
    // 200,000 loads and stores over 128 KB (beyond the L1), then 2 MB out.
    let work = "    li s0, 0\n    li s1, 200000\n    la s2, buf\n\
         3:  slli t0, s0, 50\n    srli t0, t0, 47\n    add t0, s2, t0\n\
             ld t1, 0(t0)\n    add t1, t1, s0\n    sd t1, 0(t0)\n\
             addi s0, s0, 1\n    blt s0, s1, 3b\n";
    let elf = assemble("writer", &format!("{work}{}", writer_program(2)));
    let mut node = Node::with_program_bytes(one_core(), "writer", &elf).unwrap();
    assert_eq!(node.run(300_000).unwrap(), RunEnd::Limit);
    let mut fork = node.fork().unwrap();
    for n in [&mut node, &mut fork] {
        assert_eq!(n.run(u64::MAX).unwrap(), RunEnd::Exited(0));
    }
    let state = |n: &Node| {
        (
            format!("{:?}", n.hart_summaries()),
            n.instret(),
            n.htif().unwrap().output.clone(),
            format!("{:?}", n.memory_stats()),
            n.dram().slice(0x8000_0000, 1 << 21).unwrap().to_vec(),
        )
    };
    assert!(state(&node) == state(&fork));
    assert_eq!(fork.htif().unwrap().output.len(), 2 << 20);
    node.htif_mut().unwrap().sink = Some(Box::new(Counter(Arc::new(AtomicU64::new(0)))));
    assert!(matches!(node.fork(), Err(NodeError::Fork(_))));
}

#[test]
fn kept_output_is_bounded() {
    use nanopu_node::htif::OUTPUT_KEEP;
    let times = (OUTPUT_KEEP >> 20) as u64 + 4;
    let elf = assemble("writer", &writer_program(times));
    let mut node = Node::with_program_bytes(one_core(), "writer", &elf).unwrap();
    assert_eq!(node.run(u64::MAX).unwrap(), RunEnd::Exited(0));
    let htif = node.htif().unwrap();
    assert_eq!(htif.output.len(), OUTPUT_KEEP);
    assert_eq!(htif.output_dropped, 4 << 20);
}

#[test]
fn a_misaligned_entry_point_is_rejected_at_load() {
    let mut elf = assemble("entry", "    nop\n    nop\n");
    let entry = u64::from_le_bytes(elf[24..32].try_into().unwrap());
    elf[24..32].copy_from_slice(&(entry + 1).to_le_bytes());
    let e = load_bytes("entry", &elf, &mut dram()).unwrap_err();
    assert!(matches!(e, LoadError::MisalignedEntry { .. }), "{e}");
    assert!(e.to_string().contains("0x80000001"), "{e}");
}

#[test]
fn a_truncated_elf_says_what_is_missing() {
    let elf = assemble("trunc", "    nop\n");
    let e = load_bytes("trunc", &elf[..40], &mut dram()).unwrap_err();
    assert!(e.to_string().contains("truncated ELF file"), "{e}");
    assert!(e.to_string().contains("at byte 40"), "{e}");
    let shoff = u64::from_le_bytes(elf[0x28..0x30].try_into().unwrap()) as usize;
    let e = load_bytes("trunc", &elf[..shoff + 10], &mut dram()).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("truncated ELF file") && msg.contains("section header table"),
        "{msg}"
    );
}

#[test]
fn a_corrupt_section_table_is_named() {
    let mut elf = assemble("corrupt", "    nop\n");
    let file = elf::ElfBytes::<elf::endian::AnyEndian>::minimal_parse(&elf).unwrap();
    let shoff = file.ehdr.e_shoff as usize;
    let shentsize = file.ehdr.e_shentsize as usize;
    let symtab = file
        .section_headers()
        .unwrap()
        .iter()
        .position(|s| s.sh_type == elf::abi::SHT_SYMTAB)
        .unwrap();
    // sh_offset of the symbol table far past the end of the file.
    let at = shoff + symtab * shentsize + 24;
    elf[at..at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let e = load_bytes("corrupt", &elf, &mut dram()).unwrap_err();
    assert!(matches!(e, LoadError::CorruptSections { .. }), "{e}");
    assert!(
        e.to_string().contains("section header table is corrupt"),
        "{e}"
    );
}

#[test]
fn io_errors_name_their_cause_once() {
    let e = Node::with_program(
        NodeConfig::default(),
        std::path::Path::new("/nonexistent/x.elf"),
    )
    .err()
    .unwrap();
    let mut chain = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        chain += &format!(": {s}");
        source = s.source();
    }
    assert_eq!(chain.matches("os error 2").count(), 1, "{chain}");
}

#[test]
fn files_beyond_the_size_limit_or_not_regular_are_refused() {
    use nanopu_node::loader::read_limited;
    let e = read_limited(std::path::Path::new("/dev/zero"), 1 << 20).unwrap_err();
    assert!(e.to_string().contains("not a regular file"), "{e}");
    let e = read_limited(std::path::Path::new("/"), 1 << 20).unwrap_err();
    assert!(e.to_string().contains("a directory"), "{e}");
    let me = std::env::current_exe().unwrap();
    let e = read_limited(&me, 1024).unwrap_err();
    assert!(matches!(e, LoadError::TooLarge { limit: 1024, .. }), "{e}");
    assert!(e.to_string().contains("1024-byte"), "{e}");
}

#[test]
fn a_zero_clock_is_blamed_on_the_clock() {
    let mut cfg = NodeConfig::default();
    cfg.core.clock_mhz = 0;
    let e = cfg.validate().unwrap_err();
    assert!(
        matches!(
            e,
            nanopu_node::NodeConfigError::Core(nanopu_core::CoreConfigError::ClockPeriod(0))
        ),
        "{e:?}"
    );
    assert!(e.to_string().starts_with("core.clock_mhz = 0"), "{e}");
}

/// A device that answers nothing, for window checks.
#[derive(Clone)]
struct Silent;

impl nanopu_node::BusDevice for Silent {
    fn mmio_load(&mut self, _: u64, _: u8, _: u64) -> Option<u64> {
        None
    }

    fn mmio_store(
        &mut self,
        _: u64,
        _: u8,
        _: u64,
        _: u64,
        _: nanopu_node::Dma<'_>,
    ) -> Option<nanopu_node::StoreEffect> {
        None
    }
}

#[test]
fn device_windows_may_not_overlap_dram_or_each_other() {
    let mut cfg = NodeConfig::default();
    cfg.devices.uart = Some(0x200_0100);
    let e = Node::new(cfg, 0x8000_0000).err().expect("refused");
    assert_eq!(
        e.to_string(),
        "cannot attach a device: devices.uart = 0x2000100: the window [0x2000100, 0x2001100) overlaps devices.clint's"
    );
    let mut cfg = NodeConfig::default();
    cfg.devices.clint = Some(nanopu_node::config::DRAM_BASE + 0x1000);
    let e = Node::new(cfg, 0x8000_0000).err().expect("refused");
    assert!(e.to_string().contains("devices.clint = 0x80001000"), "{e}");
    assert!(e.to_string().contains("overlaps DRAM"), "{e}");
    // A NIC design's device is checked when the design attaches it.
    let mut cfg = NodeConfig {
        dram_bytes: 1 << 20,
        ..NodeConfig::default()
    };
    cfg.devices.icenic = Some(nanopu_node::config::DRAM_BASE + 0x1000);
    let mut node = Node::new(cfg, 0x8000_0000).expect("no IceNIC yet: nothing to refuse");
    let base = node.cfg().devices.base("icenic", 0);
    let e = node
        .attach_device("icenic", base, 0x1000, Silent)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "devices.icenic = 0x80001000: the window [0x80001000, 0x80002000) overlaps DRAM [0x80000000, 0x80100000)"
    );
    let e = node
        .attach_device("late", u64::MAX - 0x10, 0x1000, Silent)
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("runs past the end of the address space"),
        "{e}"
    );
    assert!(node.device::<Silent>().is_none(), "nothing attached");
}

#[test]
fn devices_answer_where_the_configuration_puts_them() {
    // The CLINT moved: mtimecmp is written and read back at the new
    // address; the old one faults.
    let base = 0x300_0000u64;
    let src = format!(
        "    li t0, {new:#x}
    li t1, 1234
    sd t1, 0(t0)
    ld a0, 0(t0)
    li t0, {old:#x}
    ld a1, 0(t0)
1:  j 1b
",
        new = base + 0x4000,
        old = 0x200_4000u64,
    );
    let elf = assemble("clint_moved", &src);
    let mut cfg = NodeConfig {
        cores: 1,
        ..NodeConfig::default()
    };
    cfg.devices.clint = Some(base);
    let mut node = Node::with_program_bytes(cfg, "clint_moved", &elf).unwrap();
    let e = node.run(1_000_000).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("load access fault"), "{msg}");
    assert_eq!(
        node.hart(0).x(10),
        1234,
        "the CLINT answers at its new address"
    );
    assert_eq!(node.clint().unwrap().mtimecmp[0], 1234);
}

#[test]
fn uart_bytes_join_the_program_output() {
    let src = format!(
        "    li t0, {uart:#x}
    li t1, 'h'
    sw t1, 0(t0)
    li t1, 'i'
    sw t1, 0(t0)
    li a0, 0
{exit}",
        uart = nanopu_node::uart::UART_BASE,
        exit = exit_with("a0"),
    );
    let elf = assemble("uart_out", &src);
    let cfg = NodeConfig {
        cores: 1,
        ..NodeConfig::default()
    };
    let mut node = Node::with_program_bytes(cfg, "uart_out", &elf).unwrap();
    assert_eq!(node.run(1_000_000).unwrap(), RunEnd::Exited(0));
    assert_eq!(node.htif().unwrap().output, b"hi");
    assert!(node.uart_output().is_empty(), "HTIF collects it");
}

/// Pausing a run (for progress reports) changes nothing: four cores
/// streaming through the shared LLC and DRAM, whose results depend on how
/// their slices are cut, reach the same state paused every 100,000 cycles
/// as in one piece, with and without a stop flag (which bounds slices).
#[test]
fn a_paused_run_ends_as_an_uninterrupted_one() {
    let cfg = NodeConfig {
        cores: 4,
        ..NodeConfig::default()
    };
    let state = |n: &Node| {
        (
            format!("{:?}", n.hart_summaries()),
            n.instret(),
            format!("{:?}", n.memory_stats()),
        )
    };
    let mut ends = Vec::new();
    for stop_flag in [false, true] {
        let fresh = || {
            let mut n = Node::with_program(cfg.clone(), &program("stream")).unwrap();
            if stop_flag {
                n.set_stop_request(Arc::new(AtomicBool::new(false)));
            }
            n
        };
        let mut whole = fresh();
        assert_eq!(whole.run(u64::MAX).unwrap(), RunEnd::Exited(0));
        let mut paused = fresh();
        let (mut pauses, mut at) = (0, 0);
        let end = loop {
            at += 100_000;
            match paused.run_pausing(u64::MAX, Some(at)).unwrap() {
                Some(end) => break end,
                None => pauses += 1,
            }
        };
        assert_eq!(end, RunEnd::Exited(0));
        assert!(pauses > 100, "{pauses} pauses");
        assert!(state(&whole) == state(&paused), "stop flag {stop_flag}");
        ends.push(state(&whole));
    }
    // Looking at a stop flag cuts slices into pieces that end where the
    // slices do: the same results.
    assert!(ends[0] == ends[1], "a stop flag changed the results");
    // Run to each pause time instead, the same program ends elsewhere: what
    // pausing avoids.
    let mut cut = Node::with_program(cfg.clone(), &program("stream")).unwrap();
    let mut whole = Node::with_program(cfg, &program("stream")).unwrap();
    whole.run(u64::MAX).unwrap();
    let mut limit = 0;
    while cut.exit().is_none() {
        limit += 100_000;
        cut.run(limit).unwrap();
    }
    assert!(
        state(&whole) != state(&cut),
        "runs cut at each limit end as uninterrupted ones now: this test's reason is gone"
    );
}
