//! Loading a bare-metal RV64 ELF program into DRAM at its link addresses.

use crate::dram::Dram;
use elf::abi;
use elf::endian::AnyEndian;
use elf::file::Class;
use elf::ElfBytes;
use std::path::Path;

/// Why a program could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{0}: not an ELF file ({1})")]
    NotElf(String, String),
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
    #[error("{path}: segment at {addr:#x} claims {size} bytes beyond the end of the file")]
    Truncated { path: String, addr: u64, size: u64 },
    #[error("{path}: entry point {entry:#x} is outside DRAM")]
    EntryOutsideMemory { path: String, entry: u64 },
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

fn machine_name(m: u16) -> &'static str {
    match m {
        abi::EM_386 => "x86",
        abi::EM_X86_64 => "x86-64",
        abi::EM_ARM => "ARM",
        abi::EM_AARCH64 => "AArch64",
        _ => "unknown",
    }
}

/// Reads and loads the ELF at `path` into `dram`.
pub fn load_file(path: &Path, dram: &mut Dram) -> Result<Program, LoadError> {
    let name = path.display().to_string();
    let data = std::fs::read(path).map_err(|source| LoadError::Io {
        path: name.clone(),
        source,
    })?;
    load_bytes(&name, &data, dram)
}

/// Loads an ELF image already in memory; `name` appears in errors.
pub fn load_bytes(name: &str, data: &[u8], dram: &mut Dram) -> Result<Program, LoadError> {
    let path = name.to_string();
    if data.len() >= 5 && &data[..4] == b"\x7fELF" {
        if data[4] == 1 {
            return Err(LoadError::Not64Bit(path));
        }
        if data.len() >= 6 && data[5] == 2 {
            return Err(LoadError::BigEndian(path));
        }
    }
    let file = ElfBytes::<AnyEndian>::minimal_parse(data)
        .map_err(|e| LoadError::NotElf(path.clone(), e.to_string()))?;
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
    for ph in segments.iter().filter(|p| p.p_type == abi::PT_LOAD) {
        any = true;
        if ph.p_memsz == 0 {
            continue;
        }
        let addr = ph.p_paddr;
        if dram.offset(addr, ph.p_memsz).is_none() || ph.p_filesz > ph.p_memsz {
            return Err(LoadError::SegmentOutsideMemory {
                path,
                addr,
                size: ph.p_memsz,
                base,
                end,
            });
        }
        let src = data
            .get(ph.p_offset as usize..)
            .and_then(|d| d.get(..ph.p_filesz as usize))
            .ok_or_else(|| LoadError::Truncated {
                path: path.clone(),
                addr,
                size: ph.p_filesz,
            })?;
        let dst = dram.slice_mut(addr, ph.p_memsz).expect("checked above");
        dst[..src.len()].copy_from_slice(src);
        dst[src.len()..].fill(0);
        loaded += ph.p_filesz;
    }
    if !any {
        return Err(LoadError::NoSegments(path));
    }
    let entry = file.ehdr.e_entry;
    if dram.offset(entry, 2).is_none() {
        return Err(LoadError::EntryOutsideMemory { path, entry });
    }
    let (mut tohost, mut fromhost) = (None, None);
    if let Ok(Some((symbols, strings))) = file.symbol_table() {
        for sym in symbols.iter() {
            match strings.get(sym.st_name as usize) {
                Ok("tohost") => tohost = Some(sym.st_value),
                Ok("fromhost") => fromhost = Some(sym.st_value),
                _ => {}
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
        assert!(matches!(e, LoadError::NotElf(..)), "{e}");
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
