//! DRAM: one anonymous mapping reserved at start and backed by the host
//! only where the guest touches it, so a 16 GB map costs nothing up front.

use std::ptr::NonNull;

/// DRAM from this offset on is backed by the host's transparent huge
/// pages (2 MB) where it has them; below it by 4 KB pages.
///
/// Why: a guest that reads a word it has never written (a hash insert
/// looks at a bucket first) maps the host's shared zero page there, and
/// its first write then replaces it, which flushes the TLB of every host
/// core the process runs on: with the simulator on two threads each such
/// page cost an inter-processor interrupt, and the G-Opt experiment spent
/// as much time in the kernel as in the simulator (sys 9.5 s, user 13 s).
/// Huge pages take those faults once per 2 MB. The first 8 MB (text, data,
/// stacks of a small program) stay in small pages, so a cluster of many
/// small nodes does not grow by 2 MB a node.
pub const HUGE_PAGES_FROM: u64 = 8 << 20;

/// The node's main memory, `size` bytes starting at guest address `base`.
pub struct Dram {
    base: u64,
    size: u64,
    ptr: NonNull<u8>,
}

// SAFETY: Dram owns its mapping exclusively; nothing else aliases it.
unsafe impl Send for Dram {}

impl Dram {
    /// Reserves `size` bytes (at least 8: see [`Dram::access_offset`]).
    /// Pages are zero and cost no host memory until written.
    pub fn new(base: u64, size: u64) -> std::io::Result<Dram> {
        if size < 8 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("DRAM of {size} bytes: at least 8 are needed"),
            ));
        }
        // SAFETY: an anonymous private mapping with no fixed address; the
        // result is checked before use and unmapped in Drop.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        if size > HUGE_PAGES_FROM {
            // SAFETY: the range lies inside the mapping just made. Advice
            // only: where the host has no transparent huge pages it fails
            // and nothing changes.
            unsafe {
                libc::madvise(
                    (p as *mut u8).add(HUGE_PAGES_FROM as usize) as *mut libc::c_void,
                    (size - HUGE_PAGES_FROM) as usize,
                    libc::MADV_HUGEPAGE,
                )
            };
        }
        Ok(Dram {
            base,
            size,
            ptr: NonNull::new(p as *mut u8).expect("mmap returned null"),
        })
    }

    pub fn base(&self) -> u64 {
        self.base
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// Host memory the mapping occupies now (pages the guest or the loader
    /// touched), from `mincore`: what a large untouched `.bss` must not cost.
    pub fn resident_bytes(&self) -> u64 {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
        let mut resident = Some(0u64);
        self.pages(|_, _, flag| {
            resident = match flag {
                Some(f) => resident.map(|r| r + (f & 1) as u64 * page),
                None => None,
            }
        });
        resident.unwrap_or(u64::MAX)
    }

    /// Calls `f(offset, length, mincore flag)` for each page of the
    /// mapping, the flag `None` where `mincore` failed.
    fn pages(&self, mut f: impl FnMut(usize, usize, Option<u8>)) {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let chunk_pages = 1usize << 16;
        let mut flags = vec![0u8; chunk_pages];
        let size = self.size as usize;
        let mut at = 0usize;
        while at < size {
            let len = (size - at).min(chunk_pages * page);
            // SAFETY: [ptr + at, ptr + at + len) lies inside the mapping and
            // `flags` has room for one byte per page of it.
            let r = unsafe {
                libc::mincore(
                    self.ptr.as_ptr().add(at) as *mut libc::c_void,
                    len,
                    flags.as_mut_ptr(),
                )
            };
            for (i, &flag) in flags[..len.div_ceil(page)].iter().enumerate() {
                let off = at + i * page;
                f(off, page.min(size - off), (r == 0).then_some(flag));
            }
            at += len;
        }
    }

    /// A copy of the memory in a mapping of its own: the pages the guest
    /// or the loader touched are copied (those that hold anything but
    /// zeros), the others stay unbacked in the copy too.
    pub fn try_clone(&self) -> std::io::Result<Dram> {
        let copy = Dram::new(self.base, self.size)?;
        // `mincore` says which pages are in host memory; a page swapped out
        // is not, so with swap in use every page is looked at.
        let every_page = swap_in_use();
        self.pages(|off, n, flag| {
            if !every_page && flag.is_some_and(|f| f & 1 == 0) {
                return;
            }
            // SAFETY: [off, off + n) lies inside both mappings, which do not
            // overlap; `&self` keeps the source unchanged.
            unsafe {
                let src = std::slice::from_raw_parts(self.ptr.as_ptr().add(off), n);
                if src.iter().any(|&b| b != 0) {
                    std::ptr::copy_nonoverlapping(src.as_ptr(), copy.ptr.as_ptr().add(off), n);
                }
            }
        });
        Ok(copy)
    }

    /// Offset of `[addr, addr + len)` in the mapping, if it lies inside.
    #[inline(always)]
    pub fn offset(&self, addr: u64, len: u64) -> Option<usize> {
        let off = addr.wrapping_sub(self.base);
        (off < self.size && len <= self.size - off).then_some(off as usize)
    }

    /// [`Dram::offset`] of a `size`-byte (1..=8) access: one compare, as
    /// the mapping holds at least 8 bytes (an address below `base` wraps
    /// to an offset beyond any size).
    #[inline(always)]
    pub fn access_offset(&self, addr: u64, size: u8) -> Option<usize> {
        debug_assert!((1..=8).contains(&size));
        let off = addr.wrapping_sub(self.base);
        (off <= self.size - size as u64).then_some(off as usize)
    }

    /// Reads `size` (1..=8) bytes little-endian at a checked offset.
    #[inline(always)]
    pub fn read(&self, off: usize, size: u8) -> u64 {
        // SAFETY: callers obtain `off` from `offset(addr, size)`, so the
        // bytes lie inside the mapping; unaligned reads are allowed.
        unsafe {
            let p = self.ptr.as_ptr().add(off);
            match size {
                1 => *p as u64,
                2 => (p as *const u16).read_unaligned() as u64,
                4 => (p as *const u32).read_unaligned() as u64,
                _ => (p as *const u64).read_unaligned(),
            }
        }
    }

    /// Writes the low `size` (1..=8) bytes of `v` at a checked offset.
    #[inline(always)]
    pub fn write(&mut self, off: usize, size: u8, v: u64) {
        // SAFETY: as in `read`.
        unsafe {
            let p = self.ptr.as_ptr().add(off);
            match size {
                1 => *p = v as u8,
                2 => (p as *mut u16).write_unaligned(v as u16),
                4 => (p as *mut u32).write_unaligned(v as u32),
                _ => (p as *mut u64).write_unaligned(v),
            }
        }
    }

    /// The bytes `[addr, addr + len)`, if inside.
    pub fn slice(&self, addr: u64, len: u64) -> Option<&[u8]> {
        let off = self.offset(addr, len)?;
        // SAFETY: bounds checked by `offset`; the borrow of self prevents writes.
        Some(unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(off), len as usize) })
    }

    /// The writable bytes `[addr, addr + len)`, if inside.
    pub fn slice_mut(&mut self, addr: u64, len: u64) -> Option<&mut [u8]> {
        let off = self.offset(addr, len)?;
        // SAFETY: bounds checked by `offset`; the exclusive borrow of self
        // makes this the only reference.
        Some(unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().add(off), len as usize) })
    }
}

/// Whether the host has swap space in use (or it cannot tell).
fn swap_in_use() -> bool {
    let Ok(info) = std::fs::read_to_string("/proc/meminfo") else {
        return true;
    };
    let kb = |key: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    };
    match (kb("SwapTotal:"), kb("SwapFree:")) {
        (Some(total), Some(free)) => total != free,
        _ => true,
    }
}

impl Drop for Dram {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping created in `new`.
        unsafe {
            libc::munmap(self.ptr.as_ptr() as *mut libc::c_void, self.size as usize);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sixteen_gigabytes_cost_nothing_until_touched() {
        let mut d = Dram::new(0x8000_0000, 16 << 30).unwrap();
        let off = d.offset(0x8000_0000 + (15 << 30), 8).unwrap();
        assert_eq!(d.read(off, 8), 0);
        d.write(off, 8, 0x1122_3344_5566_7788);
        assert_eq!(d.read(off, 4), 0x5566_7788);
        assert_eq!(d.read(off + 1, 2), 0x6677);
    }

    #[test]
    fn a_copy_has_the_contents_and_is_independent() {
        let mut d = Dram::new(0x8000_0000, 1 << 30).unwrap();
        let far = d.offset(0x8000_0000 + (1 << 29) + 12, 8).unwrap();
        d.write(0, 8, 7);
        d.write(far, 8, 0xdead_beef);
        let mut c = d.try_clone().unwrap();
        assert_eq!((c.read(0, 8), c.read(far, 8)), (7, 0xdead_beef));
        assert_eq!(c.read(4096, 8), 0);
        c.write(0, 8, 9);
        d.write(far, 8, 1);
        assert_eq!((d.read(0, 8), c.read(far, 8)), (7, 0xdead_beef));
        // Two pages touched, not the whole gigabyte: the far one may be a
        // 2 MB huge page (`HUGE_PAGES_FROM`).
        assert!(c.resident_bytes() <= 2 * (2 << 20));
    }

    #[test]
    fn bounds_are_checked() {
        let d = Dram::new(0x8000_0000, 4096).unwrap();
        assert!(d.offset(0x8000_0000 + 4088, 8).is_some());
        assert!(d.offset(0x8000_0000 + 4089, 8).is_none());
        for (addr, size) in [
            (0x8000_0000 + 4088, 8),
            (0x8000_0000 + 4095, 1),
            (0x7fff_ffff, 1),
        ] {
            assert_eq!(d.access_offset(addr, size), d.offset(addr, size as u64));
        }
        assert!(d.access_offset(0x8000_0000 + 4089, 8).is_none());
        assert!(d.access_offset(0x8000_0000 + 4096, 1).is_none());
        assert!(d.access_offset(0x7fff_ffff, 2).is_none());
        assert!(Dram::new(0x8000_0000, 4).is_err());
        assert!(d.offset(0x7fff_ffff, 1).is_none());
        assert!(d.offset(u64::MAX, 8).is_none());
    }
}
