//! DRAM: one shared-memory file (memfd) mapped at start and backed by the
//! host only where the guest touches it, so a 16 GB map costs nothing up
//! front.
//!
//! Why a shared file and not a private anonymous mapping: in a private
//! mapping a guest that reads a word it has never written (a hash insert
//! looks at a bucket first) maps the host's shared zero page there, and its
//! first write then replaces that page, which flushes the TLB of every host
//! core the process runs on. With the simulator on two threads each such
//! page cost an inter-processor interrupt: the G-Opt experiment spent as
//! long in the kernel as in the simulator (sys 9.5 s, user 13 s). In a
//! shared mapping the first touch, read or write, allocates the page
//! writable, and nothing is ever replaced. The file also says exactly which
//! pages hold data, in memory or swapped out (`SEEK_DATA`), which
//! [`Dram::try_clone`] copies.

use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::ptr::NonNull;

/// The node's main memory, `size` bytes starting at guest address `base`.
pub struct Dram {
    base: u64,
    size: u64,
    ptr: NonNull<u8>,
    /// The memory file the mapping shows.
    file: File,
    /// A copy-on-write view of a frozen node's file ([`Dram::cow_fork`]):
    /// `file` is that node's, and what this one wrote is in private pages.
    cow: bool,
}

// SAFETY: Dram owns its mapping exclusively; nothing else aliases it.
unsafe impl Send for Dram {}

impl Dram {
    /// Reserves `size` bytes (at least 8: see [`Dram::access_offset`]).
    /// Pages are zero and cost no host memory until touched.
    pub fn new(base: u64, size: u64) -> std::io::Result<Dram> {
        if size < 8 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("DRAM of {size} bytes: at least 8 are needed"),
            ));
        }
        let file = memory_file()?;
        // Setting the size allocates nothing.
        file.set_len(size)?;
        Ok(Dram {
            base,
            size,
            ptr: map(&file, size, libc::MAP_SHARED)?,
            file,
            cow: false,
        })
    }

    /// A copy that shares this memory's pages until either writes them: a
    /// private mapping of this memory's file. Nothing is copied up front,
    /// so a copy of a 1 GB store costs what the copy then writes.
    ///
    /// Only for memory nothing writes any more (a frozen node's,
    /// `FrozenNode`): a page the copy has not written yet shows this
    /// memory's current contents. A copy-on-write copy cannot be copied
    /// again ([`Dram::try_clone`] refuses: which of its pages are its own
    /// is the kernel's to know).
    pub(crate) fn cow_fork(&self) -> std::io::Result<Dram> {
        let file = self.file.try_clone()?;
        Ok(Dram {
            base: self.base,
            size: self.size,
            ptr: map(&file, self.size, libc::MAP_PRIVATE)?,
            file,
            cow: true,
        })
    }

    /// Makes `into` (memory of the same size, not a copy-on-write copy) a
    /// copy of this memory, writing only the pages that differ: the pages
    /// `into` already has are reused, not freed and allocated again. For a
    /// node copied again and again as it runs (a boot seed), each copy
    /// then costs a read of the memory, not its allocation.
    pub fn copy_into(&self, into: &mut Dram) -> std::io::Result<()> {
        if into.cow || self.cow || into.size != self.size || into.base != self.base {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "copying DRAM into memory of another size, or a copy-on-write copy",
            ));
        }
        let page = page_size();
        let theirs = into.data_ranges()?;
        let mut t = theirs.iter().peekable();
        // SAFETY: the whole mapping; `&self` keeps it unchanged meanwhile.
        let src = unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.size as usize) };
        let mut run = 0..0;
        for range in self.data_ranges()? {
            for off in range.clone().step_by(page) {
                let end = (off + page).min(range.end);
                while t.next_if(|r| r.end <= off).is_some() {}
                let backed = t.peek().is_some_and(|r| r.start <= off);
                let bytes = &src[off..end];
                let write = if backed {
                    // SAFETY: inside `into`'s mapping, which `&mut` makes ours.
                    let dst = unsafe {
                        std::slice::from_raw_parts(into.ptr.as_ptr().add(off), end - off)
                    };
                    dst != bytes
                } else {
                    !is_zero(bytes)
                };
                if !write {
                    continue;
                }
                if run.end != off {
                    into.file
                        .write_all_at(&src[run.clone()], run.start as u64)?;
                    run = off..off;
                }
                run.end = end;
            }
        }
        into.file.write_all_at(&src[run.clone()], run.start as u64)
    }

    pub fn base(&self) -> u64 {
        self.base
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// Host memory (or swap) the mapping occupies now: the pages the guest
    /// or the loader touched, what a large untouched `.bss` must not cost.
    /// For a copy-on-write copy: the frozen memory's, which it shares.
    pub fn resident_bytes(&self) -> u64 {
        self.file.metadata().map_or(u64::MAX, |m| m.blocks() * 512)
    }

    /// The byte ranges of the file that hold pages (in memory or swapped
    /// out), in order; the rest are holes, zero and unbacked.
    fn data_ranges(&self) -> std::io::Result<Vec<std::ops::Range<usize>>> {
        let fd = self.file.as_raw_fd();
        let mut ranges = Vec::new();
        let mut at: libc::off_t = 0;
        let end = self.size as libc::off_t;
        while at < end {
            // SAFETY: lseek on an open file descriptor.
            let data = unsafe { libc::lseek(fd, at, libc::SEEK_DATA) };
            if data < 0 {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::ENXIO) {
                    break; // no data after `at`
                }
                return Err(e);
            }
            // SAFETY: as above.
            let hole = unsafe { libc::lseek(fd, data, libc::SEEK_HOLE) };
            if hole < 0 {
                return Err(std::io::Error::last_os_error());
            }
            ranges.push(data as usize..(hole.min(end)) as usize);
            at = hole;
        }
        Ok(ranges)
    }

    /// A copy of the memory in a file of its own: the pages the guest or
    /// the loader touched are copied (those that hold anything but zeros),
    /// the others stay unbacked in the copy too.
    pub fn try_clone(&self) -> std::io::Result<Dram> {
        if self.cow {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "a copy-on-write copy of a frozen node's memory cannot be copied again",
            ));
        }
        let copy = Dram::new(self.base, self.size)?;
        let page = page_size();
        // SAFETY: the whole mapping; `&self` keeps it unchanged meanwhile.
        let bytes = unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.size as usize) };
        // Runs of pages with data are written into the copy's file, not
        // stored through its mapping: a page the kernel allocates for a
        // write(2) of a whole page is not zeroed first (through the mapping
        // each page was zeroed, then overwritten: 8 % of nb-mica's host time).
        let mut run = 0..0;
        for range in self.data_ranges()? {
            for off in range.clone().step_by(page) {
                let end = (off + page).min(range.end);
                if is_zero(&bytes[off..end]) {
                    continue;
                }
                if run.end != off {
                    copy.file
                        .write_all_at(&bytes[run.clone()], run.start as u64)?;
                    run = off..off;
                }
                run.end = end;
            }
        }
        copy.file
            .write_all_at(&bytes[run.clone()], run.start as u64)?;
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

/// Maps `file`'s first `size` bytes read-write with `flags` (shared or
/// private) at no fixed address; unmapped in [`Dram`]'s Drop.
fn map(file: &File, size: u64, flags: libc::c_int) -> std::io::Result<NonNull<u8>> {
    // SAFETY: a mapping of the whole file at no fixed address; the result
    // is checked before use.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            flags | libc::MAP_NORESERVE,
            file.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    // A child of `fork` (Python's multiprocessing "fork" start method)
    // would share the guest's memory with its parent rather than copy
    // it: it gets no mapping instead, so using an inherited node there
    // fails at once, never silently.
    // SAFETY: the range is the mapping just made; advice only.
    unsafe { libc::madvise(p, size as usize, libc::MADV_DONTFORK) };
    Ok(NonNull::new(p as *mut u8).expect("mmap returned null"))
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

/// Whether `bytes` are all zero, looked at a word at a time.
fn is_zero(bytes: &[u8]) -> bool {
    // SAFETY: any bytes are valid u64s.
    let (head, words, tail) = unsafe { bytes.align_to::<u64>() };
    head.iter().all(|&b| b == 0) && words.iter().all(|&w| w == 0) && tail.iter().all(|&b| b == 0)
}

/// A new, empty memory file (closed on `exec`). A host whose limit of open
/// files is reached has it raised to the hard limit once (as Go's runtime
/// does at start): a cluster of a thousand nodes needs a thousand files.
fn memory_file() -> std::io::Result<File> {
    let create = || {
        // SAFETY: a NUL-terminated name and valid flags.
        let fd = unsafe { libc::memfd_create(c"nanopu-dram".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            // SAFETY: `fd` was just opened and nothing else owns it.
            Ok(unsafe { File::from_raw_fd(fd) })
        }
    };
    match create() {
        Err(e) if e.raw_os_error() == Some(libc::EMFILE) && raise_open_files_limit() => create(),
        r => r,
    }
}

/// Raises the soft limit of open files to the hard one; whether it rose.
fn raise_open_files_limit() -> bool {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is writable; then read by setrlimit.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max && {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim) == 0
        }
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
    fn a_read_backs_its_page_once_and_a_write_replaces_nothing() {
        // A private mapping would show the zero page here and replace it at
        // the write (a TLB flush on every host core): a file page instead,
        // taken at the read and written in place.
        let mut d = Dram::new(0x8000_0000, 1 << 30).unwrap();
        assert_eq!(d.resident_bytes(), 0);
        let off = d.offset(0x8000_0000 + (1 << 29), 8).unwrap();
        assert_eq!(d.read(off, 8), 0);
        let page = d.resident_bytes();
        assert!((4096..=2 << 20).contains(&page), "{page}");
        d.write(off, 8, 5);
        assert_eq!(d.resident_bytes(), page);
        assert_eq!(d.data_ranges().unwrap().len(), 1);
    }

    #[test]
    fn a_page_is_zero_only_if_every_byte_is() {
        let mut page = vec![0u8; 4096 + 3];
        assert!(is_zero(&page[1..]));
        for i in [1, 7, 8, 2048, 4095, 4098] {
            page[i] = 1;
            assert!(!is_zero(&page[1..]), "byte {i}");
            page[i] = 0;
        }
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
        assert!(c.resident_bytes() <= 2 * 4096 * 4);
    }

    #[test]
    fn a_copy_into_an_older_copy_writes_what_changed() {
        let mut d = Dram::new(0x8000_0000, 1 << 30).unwrap();
        let far = d.offset(0x8000_0000 + (1 << 29) + 12, 8).unwrap();
        d.write(0, 8, 7);
        let mut c = d.try_clone().unwrap();
        d.write(0, 8, 8);
        d.write(far, 8, 0xdead_beef);
        d.write(3 * 4096, 8, 5);
        d.write(3 * 4096, 8, 0); // touched, zero again: stays a hole
        c.write(4096 * 8, 8, 3); // the copy's own page is not the source's
        d.copy_into(&mut c).unwrap();
        assert_eq!((c.read(0, 8), c.read(far, 8)), (8, 0xdead_beef));
        assert_eq!(c.read(3 * 4096, 8), 0);
        assert!(c.resident_bytes() <= 3 * 4096 * 4);
        let mut small = Dram::new(0x8000_0000, 4096).unwrap();
        assert!(d.copy_into(&mut small).is_err());
    }

    #[test]
    fn a_copy_on_write_copy_shares_until_written_and_is_not_copied_again() {
        let mut d = Dram::new(0x8000_0000, 1 << 30).unwrap();
        d.write(0, 8, 7);
        d.write(8192, 8, 9);
        let mut a = d.cow_fork().unwrap();
        let b = d.cow_fork().unwrap();
        a.write(0, 8, 1);
        a.write(4096 * 100, 8, 2);
        assert_eq!(
            (a.read(0, 8), a.read(8192, 8), a.read(4096 * 100, 8)),
            (1, 9, 2)
        );
        assert_eq!((b.read(0, 8), b.read(4096 * 100, 8)), (7, 0));
        assert_eq!((d.read(0, 8), d.read(4096 * 100, 8)), (7, 0));
        assert!(a.try_clone().is_err());
        assert!(d.copy_into(&mut a).is_err());
        drop(d); // the file lives on in the copies
        assert_eq!(b.read(8192, 8), 9);
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
