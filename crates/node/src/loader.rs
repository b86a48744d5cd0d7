//! Loading a bare-metal RV64 ELF program into DRAM at its link addresses.
//!
//! The file is checked before anything is loaded: a size limit
//! ([`MAX_ELF_BYTES`]) so that `/dev/zero` or a huge file cannot exhaust host
//! memory, the header and both header tables inside the file (a truncated
//! file is reported as such, with what is missing), every segment inside
//! DRAM, the entry point inside DRAM and 2-byte aligned. A `.bss` costs
//! nothing: the lazily mapped DRAM is already zero where nothing was written.

use crate::dram::Dram;
use elf::abi;
use elf::endian::AnyEndian;
use elf::file::Class;
use elf::ElfBytes;
use std::io::Read;
use std::path::Path;

/// The largest ELF file the loader reads (256 MiB): far more than any guest
/// program (DRAM contents beyond it are `.bss`, which costs no file bytes).
pub const MAX_ELF_BYTES: u64 = 256 << 20;

/// Size of the ELF64 file header.
const EHDR64_BYTES: usize = 64;

/// Why a program could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The cause is part of the message (not a `source`), so that printing
    /// the error chain shows it once.
    #[error("cannot read {path}: {cause}")]
    Io { path: String, cause: std::io::Error },
    #[error("{path}: {kind}, not an ELF program file")]
    NotRegularFile { path: String, kind: &'static str },
    #[error("{path}: {size} bytes, more than the {limit}-byte ({mib} MiB) limit on ELF files", mib = limit >> 20)]
    TooLarge { path: String, size: u64, limit: u64 },
    #[error("{0}: empty file, not an ELF program")]
    Empty(String),
    #[error("{0}: not an ELF file ({1})")]
    NotElf(String, String),
    #[error("{path}: truncated ELF file: {what}")]
    TruncatedElf { path: String, what: String },
    #[error("{path}: corrupt ELF header: {reason}")]
    CorruptHeader { path: String, reason: String },
    #[error("{path}: the section header table is corrupt ({reason}); cannot look up tohost")]
    CorruptSections { path: String, reason: String },
    #[error("{0}: a 32-bit ELF; the nanoPU runs RV64 programs")]
    Not64Bit(String),
    #[error("{0}: a big-endian ELF; RISC-V is little-endian")]
    BigEndian(String),
    #[error("{path}: built for machine {machine} ({name}), not RISC-V (243)")]
    NotRiscV {
        path: String,
        machine: u16,
        name: &'static str,
    },
    #[error("{0}: has no loadable segments")]
    NoSegments(String),
    #[error("{path}: segment at {addr:#x} ({size} bytes) lies outside DRAM [{base:#x}, {end:#x})")]
    SegmentOutsideMemory {
        path: String,
        addr: u64,
        size: u64,
        base: u64,
        end: u64,
    },
    #[error(
        "{path}: segment at {addr:#x} has more file bytes ({filesz}) than memory bytes ({memsz})"
    )]
    SegmentFileLargerThanMemory {
        path: String,
        addr: u64,
        filesz: u64,
        memsz: u64,
    },
    #[error("{path}: truncated ELF file: segment at {addr:#x} needs file bytes {offset}..{end}, the file has {len}", end = *offset as u128 + *size as u128)]
    Truncated {
        path: String,
        addr: u64,
        offset: u64,
        size: u64,
        len: u64,
    },
    #[error("{path}: its segments load {bytes} bytes from a {len}-byte file, more than twice its size (their file ranges overlap)")]
    SegmentsOverlapInFile { path: String, bytes: u64, len: u64 },
    #[error("{path}: entry point {entry:#x} is outside DRAM")]
    EntryOutsideMemory { path: String, entry: u64 },
    #[error("{path}: entry point {entry:#x} is not 2-byte aligned (RV64GC instructions are)")]
    MisalignedEntry { path: String, entry: u64 },
}

/// What the loader found in the program.
#[derive(Clone, Debug)]
pub struct Program {
    pub path: String,
    pub entry: u64,
    /// Address of the HTIF `tohost` word, if the program defines one.
    pub tohost: Option<u64>,
    pub fromhost: Option<u64>,
    /// Bytes loaded from the file.
    pub loaded_bytes: u64,
}

/// The program's argv[0]: its file name without the directories, so that
/// where a program is checked out never changes what it computes (argv
/// strings sit on the guest's stack: a longer path moves the stack and so
/// which cache sets the program's locals use).
pub fn argv0(path: &std::path::Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

impl Program {
    /// See [`argv0`].
    pub fn argv0(&self) -> String {
        argv0(std::path::Path::new(&self.path))
    }
}

fn machine_name(m: u16) -> &'static str {
    match m {
        abi::EM_386 => "x86",
        abi::EM_X86_64 => "x86-64",
        abi::EM_ARM => "ARM",
        abi::EM_AARCH64 => "AArch64",
        _ => "unknown",
    }
}

/// Reads and loads the ELF at `path` into `dram` (see [`read_program`]).
pub fn load_file(path: &Path, dram: &mut Dram) -> Result<Program, LoadError> {
    let data = read_program(path)?;
    load_bytes(&path.display().to_string(), &data, dram)
}

/// Reads the program file at `path`: the one way every command (and the
/// Python package) reads a guest program, so that each gets the same
/// checks. Only regular files of at most [`MAX_ELF_BYTES`] are read: a
/// device such as `/dev/zero` or a FIFO is refused before it is opened (a
/// FIFO would block the open), a larger file before a byte is read.
pub fn read_program(path: &Path) -> Result<Vec<u8>, LoadError> {
    read_limited(path, MAX_ELF_BYTES)
}

/// Reads the regular file at `path`, refusing anything larger than `limit`.
pub fn read_limited(path: &Path, limit: u64) -> Result<Vec<u8>, LoadError> {
    let name = path.display().to_string();
    let io = |cause| LoadError::Io {
        path: name.clone(),
        cause,
    };
    let meta = std::fs::metadata(path).map_err(io)?;
    if !meta.is_file() {
        let kind = if meta.is_dir() {
            "a directory"
        } else {
            "not a regular file (a device, pipe or socket)"
        };
        return Err(LoadError::NotRegularFile { path: name, kind });
    }
    let too_large = |size| LoadError::TooLarge {
        path: name.clone(),
        size,
        limit,
    };
    if meta.len() > limit {
        return Err(too_large(meta.len()));
    }
    let file = std::fs::File::open(path).map_err(io)?;
    let mut data = Vec::with_capacity(meta.len() as usize);
    // The file may grow between the two calls: read one byte past the limit
    // to notice, never more.
    file.take(limit + 1).read_to_end(&mut data).map_err(io)?;
    if data.len() as u64 > limit {
        return Err(too_large(data.len() as u64));
    }
    Ok(data)
}

/// Little-endian field of `size` bytes at `at` in the ELF header (in bounds).
fn field(data: &[u8], at: usize, size: usize) -> u64 {
    let mut b = [0u8; 8];
    b[..size].copy_from_slice(&data[at..at + size]);
    u64::from_le_bytes(b)
}

/// Checks what the `elf` crate would otherwise report vaguely: the header
/// and the two header tables must lie inside the file.
fn check_layout(path: &str, data: &[u8]) -> Result<(), LoadError> {
    let len = data.len() as u64;
    if data.is_empty() {
        return Err(LoadError::Empty(path.into()));
    }
    if data.len() < 4 || &data[..4] != b"\x7fELF" {
        return Err(LoadError::NotElf(
            path.into(),
            "it does not start with the ELF magic bytes 7f 45 4c 46".into(),
        ));
    }
    if data.len() >= 5 && data[4] == 1 {
        return Err(LoadError::Not64Bit(path.into()));
    }
    if data.len() >= 6 && data[5] == 2 {
        return Err(LoadError::BigEndian(path.into()));
    }
    if data.len() < EHDR64_BYTES {
        return Err(LoadError::TruncatedElf {
            path: path.into(),
            what: format!("the file ends at byte {len}, inside the {EHDR64_BYTES}-byte ELF header"),
        });
    }
    let table = |name: &str, off: u64, entsize: u64, num: u64| -> Result<(), LoadError> {
        let end = off as u128 + entsize as u128 * num as u128;
        if num != 0 && end > len as u128 {
            return Err(LoadError::TruncatedElf {
                path: path.into(),
                what: format!(
                    "the {name} ({num} entries of {entsize} bytes at offset {off}) ends at byte {end}, past the end of the file ({len} bytes)"
                ),
            });
        }
        Ok(())
    };
    table(
        "program header table",
        field(data, 0x20, 8),
        field(data, 0x36, 2),
        field(data, 0x38, 2),
    )?;
    table(
        "section header table",
        field(data, 0x28, 8),
        field(data, 0x3a, 2),
        field(data, 0x3c, 2),
    )
}

/// Loads an ELF image already in memory; `name` appears in errors.
pub fn load_bytes(name: &str, data: &[u8], dram: &mut Dram) -> Result<Program, LoadError> {
    let path = name.to_string();
    check_layout(name, data)?;
    let file =
        ElfBytes::<AnyEndian>::minimal_parse(data).map_err(|e| LoadError::CorruptHeader {
            path: path.clone(),
            reason: e.to_string(),
        })?;
    if file.ehdr.class != Class::ELF64 {
        return Err(LoadError::Not64Bit(path));
    }
    if file.ehdr.e_machine != abi::EM_RISCV {
        let machine = file.ehdr.e_machine;
        return Err(LoadError::NotRiscV {
            path,
            machine,
            name: machine_name(machine),
        });
    }
    let segments = file
        .segments()
        .ok_or_else(|| LoadError::NoSegments(path.clone()))?;
    let (base, end) = (dram.base(), dram.base() + dram.size());
    let mut loaded = 0;
    let mut any = false;
    // Ranges written from the file so far: a later segment's zero-filled
    // part must clear them; elsewhere the fresh DRAM is already zero, and
    // leaving it untouched keeps a large .bss free of host memory.
    let mut written: Vec<(u64, u64)> = Vec::new();
    for ph in segments.iter().filter(|p| p.p_type == abi::PT_LOAD) {
        any = true;
        if ph.p_memsz == 0 {
            continue;
        }
        let addr = ph.p_paddr;
        if dram.offset(addr, ph.p_memsz).is_none() {
            return Err(LoadError::SegmentOutsideMemory {
                path,
                addr,
                size: ph.p_memsz,
                base,
                end,
            });
        }
        if ph.p_filesz > ph.p_memsz {
            return Err(LoadError::SegmentFileLargerThanMemory {
                path,
                addr,
                filesz: ph.p_filesz,
                memsz: ph.p_memsz,
            });
        }
        let src = usize::try_from(ph.p_offset)
            .ok()
            .and_then(|o| data.get(o..))
            .and_then(|d| d.get(..ph.p_filesz as usize))
            .ok_or_else(|| LoadError::Truncated {
                path: path.clone(),
                addr,
                offset: ph.p_offset,
                size: ph.p_filesz,
                len: data.len() as u64,
            })?;
        // Real programs load each file byte once; a crafted one could name
        // the same bytes in thousands of segments and fill DRAM.
        if loaded + ph.p_filesz > 2 * data.len() as u64 {
            return Err(LoadError::SegmentsOverlapInFile {
                path,
                bytes: loaded + ph.p_filesz,
                len: data.len() as u64,
            });
        }
        let dst = dram.slice_mut(addr, ph.p_filesz).expect("checked above");
        dst.copy_from_slice(src);
        let (zero_from, zero_to) = (addr + ph.p_filesz, addr + ph.p_memsz);
        for &(a, b) in &written {
            let (from, to) = (a.max(zero_from), b.min(zero_to));
            if from < to {
                dram.slice_mut(from, to - from)
                    .expect("inside the segment")
                    .fill(0);
            }
        }
        if ph.p_filesz > 0 {
            written.push((addr, addr + ph.p_filesz));
        }
        loaded += ph.p_filesz;
    }
    if !any {
        return Err(LoadError::NoSegments(path));
    }
    let entry = file.ehdr.e_entry;
    if dram.offset(entry, 2).is_none() {
        return Err(LoadError::EntryOutsideMemory { path, entry });
    }
    if entry % 2 != 0 {
        return Err(LoadError::MisalignedEntry { path, entry });
    }
    let (mut tohost, mut fromhost) = (None, None);
    let corrupt = |e: elf::ParseError| LoadError::CorruptSections {
        path: path.clone(),
        reason: e.to_string(),
    };
    if let Some((symbols, strings)) = file.symbol_table().map_err(corrupt)? {
        for sym in symbols.iter() {
            match strings.get(sym.st_name as usize) {
                Ok("tohost") => tohost = Some(sym.st_value),
                Ok("fromhost") => fromhost = Some(sym.st_value),
                Ok(_) => {}
                Err(e) => return Err(corrupt(e)),
            }
        }
    }
    Ok(Program {
        path,
        entry,
        tohost,
        fromhost,
        loaded_bytes: loaded,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dram() -> Dram {
        Dram::new(0x8000_0000, 1 << 20).unwrap()
    }

    #[test]
    fn rejects_non_elf() {
        let e = load_bytes("x", b"hello world, not an elf", &mut dram()).unwrap_err();
        assert!(matches!(e, LoadError::NotElf(..)), "{e}");
        let e = load_bytes("x", b"", &mut dram()).unwrap_err();
        assert!(matches!(e, LoadError::Empty(..)), "{e}");
    }

    #[test]
    fn rejects_32_bit() {
        let mut img = vec![0u8; 64];
        img[..4].copy_from_slice(b"\x7fELF");
        img[4] = 1;
        let e = load_bytes("x", &img, &mut dram()).unwrap_err();
        assert!(matches!(e, LoadError::Not64Bit(_)), "{e}");
    }

    #[test]
    fn rejects_other_machines() {
        // The host's own test binary is an x86-64 ELF.
        let me = std::env::current_exe().unwrap();
        let data = std::fs::read(me).unwrap();
        let e = load_bytes("self", &data, &mut dram()).unwrap_err();
        assert!(matches!(e, LoadError::NotRiscV { .. }), "{e}");
        assert!(e.to_string().contains("x86-64"));
    }
}
