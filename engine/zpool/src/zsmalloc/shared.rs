//! Zspage memory that outlives the process: one memfd, mapped shared at one
//! address, from which a recoverable pool's arena carves its chunks.
//!
//! The memfd is sized to a reserve (a recoverable device asks for four times
//! its disksize) but, as any shmem file, costs memory only for the pages
//! written: the arena populates a chunk when it takes it, as it does its
//! anonymous chunks, and gives a freed run's pages back with
//! a hole punched in the memfd (`fallocate`) where an anonymous arena uses
//! `MADV_DONTNEED`. Whoever holds a duplicate of the memfd (`zmem serve`'s
//! keeper) keeps the bytes after the process dies; an object's place is its
//! offset from [`SharedRegion::base`], the same in every mapping of the memfd.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::PAGE_SIZE;

/// A memfd mapped `MAP_SHARED` at [`SharedRegion::base`].
pub struct SharedRegion {
    fd: OwnedFd,
    base: NonNull<u8>,
    len: usize,
    /// Bytes handed out by [`SharedRegion::take`].
    used: AtomicUsize,
}

// SAFETY: the region owns its mapping; handing out disjoint ranges is
// synchronised by the atomic `used`, and the bytes are reached only through
// the arena's runs (each owned once) or by a recovery that reads them.
unsafe impl Send for SharedRegion {}
// SAFETY: as for `Send`.
unsafe impl Sync for SharedRegion {}

impl std::fmt::Debug for SharedRegion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SharedRegion({} bytes at {:p})", self.len, self.base)
    }
}

/// A new memfd of `len` bytes named `name` (close-on-exec), all a hole.
pub fn memfd(name: &str, len: u64) -> std::io::Result<OwnedFd> {
    let cname = std::ffi::CString::new(name).map_err(std::io::Error::other)?;
    // SAFETY: a valid NUL-terminated name; the result is checked.
    let fd = unsafe { libc::memfd_create(cname.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just created and is owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let len = libc::off_t::try_from(len).map_err(std::io::Error::other)?;
    // SAFETY: ftruncate on our own fd.
    if unsafe { libc::ftruncate(fd.as_raw_fd(), len) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(fd)
}

/// Map the whole of `fd` shared, readable and (when `write`) writable.
pub fn map_shared(fd: BorrowedFd<'_>, write: bool) -> std::io::Result<(NonNull<u8>, usize)> {
    // SAFETY: fstat fills the struct it is given.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a valid out-pointer; `fd` is open.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let len = usize::try_from(st.st_size).map_err(std::io::Error::other)?;
    if len == 0 {
        return Ok((NonNull::dangling(), 0));
    }
    let prot = libc::PROT_READ | if write { libc::PROT_WRITE } else { 0 };
    // SAFETY: a new shared mapping of the memfd at an address the kernel
    // picks; it touches no existing memory; the result is checked.
    let raw = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            prot,
            libc::MAP_SHARED | libc::MAP_NORESERVE,
            fd.as_raw_fd(),
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    NonNull::new(raw.cast())
        .map(|p| (p, len))
        .ok_or_else(|| std::io::Error::other("mmap returned null"))
}

impl SharedRegion {
    /// A new region of `len` bytes (rounded up to 2 MiB), all a hole.
    pub fn create(len: u64) -> std::io::Result<SharedRegion> {
        let len = len.max(1).div_ceil(2 << 20) * (2 << 20);
        let fd = memfd("zmem-zspages", len)?;
        let (base, len) = map_shared(fd.as_fd(), true)?;
        Ok(SharedRegion {
            fd,
            base,
            len,
            used: AtomicUsize::new(0),
        })
    }

    /// The memfd (a holder keeps a duplicate of it).
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Address of the first byte in this process.
    pub fn base(&self) -> usize {
        self.base.as_ptr() as usize
    }

    /// Bytes of the reserve.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the reserve is empty (never: `create` rounds up).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The next `pages` pages of the reserve, populated; `None` when the
    /// reserve is used up.
    pub(super) fn take(&self, pages: usize) -> Option<NonNull<u8>> {
        let bytes = pages * PAGE_SIZE;
        let off = self
            .used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
                (u + bytes <= self.len).then_some(u + bytes)
            })
            .ok()?;
        // SAFETY: `off + bytes <= len`: inside the mapping.
        let p = unsafe { self.base.as_ptr().add(off) };
        // SAFETY: advice on our own mapping (EINVAL before 5.14: pages then
        // fault on first touch).
        unsafe { libc::madvise(p.cast(), bytes, libc::MADV_POPULATE_WRITE) };
        NonNull::new(p)
    }

    /// Give a run's pages back to the OS: a hole punched in the memfd
    /// (`fallocate`, not `MADV_REMOVE`, which fails with EINVAL in a process
    /// that locked its memory, as `zmem serve --swap` does; the pages would
    /// stay for good). They read as zero after, here and in every mapping.
    pub(super) fn remove(&self, p: NonNull<u8>, pages: usize) {
        let off = p.as_ptr() as usize - self.base();
        // SAFETY: a plain syscall on our own memfd; the range is a run inside
        // the reserve that no zspage uses any more.
        unsafe {
            libc::fallocate(
                self.fd.as_raw_fd(),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                off as libc::off_t,
                (pages * PAGE_SIZE) as libc::off_t,
            )
        };
    }
}

impl Drop for SharedRegion {
    fn drop(&mut self) {
        if self.len != 0 {
            // SAFETY: the mapping made in `create`; no run outlives the
            // arena that owns the region.
            unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
        }
    }
}

/// A read-only view of another process's region (a dead server's), for a
/// recovery that copies its objects out.
pub struct RegionView {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: a read-only mapping owned by the view; `&self` only reads.
unsafe impl Send for RegionView {}
// SAFETY: as for `Send`.
unsafe impl Sync for RegionView {}

impl RegionView {
    /// Map `fd` read-only.
    pub fn open(fd: BorrowedFd<'_>) -> std::io::Result<RegionView> {
        let (base, len) = map_shared(fd, false)?;
        Ok(RegionView { base, len })
    }

    /// `len` bytes at offset `off`, or `None` when outside the region.
    pub fn bytes(&self, off: usize, len: usize) -> Option<&[u8]> {
        let end = off.checked_add(len)?;
        if end > self.len {
            return None;
        }
        // SAFETY: `off..end` lies inside the mapping, which lives as long as
        // `self`; nothing writes through it (read-only mapping; the process
        // that wrote it is gone).
        Some(unsafe { std::slice::from_raw_parts(self.base.as_ptr().add(off), len) })
    }
}

impl Drop for RegionView {
    fn drop(&mut self) {
        if self.len != 0 {
            // SAFETY: the mapping made in `open`; borrowed slices end with `self`.
            unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_region_is_shared_through_its_fd_and_costs_only_what_is_taken() {
        let r = SharedRegion::create(64 << 30).unwrap();
        assert_eq!(r.len(), 64 << 30, "a 64 GiB reserve maps at once");
        let p = r.take(4).unwrap();
        // SAFETY: 4 pages just taken from the region.
        let run = unsafe { std::slice::from_raw_parts_mut(p.as_ptr(), 4 * PAGE_SIZE) };
        run.fill(0xa5);
        let dup = r.fd().try_clone_to_owned().unwrap();
        let off = p.as_ptr() as usize - r.base();
        drop(r);
        let v = RegionView::open(dup.as_fd()).unwrap();
        assert!(v
            .bytes(off, 4 * PAGE_SIZE)
            .unwrap()
            .iter()
            .all(|&b| b == 0xa5));
        assert!(v.bytes(64 << 30, 1).is_none(), "past the end is refused");
        assert!(v.bytes(usize::MAX, 2).is_none());
    }

    /// A run given back leaves the memfd even when its mapping is locked
    /// (`MADV_REMOVE` there fails with EINVAL).
    #[test]
    fn a_locked_run_leaves_the_memfd() {
        let r = SharedRegion::create(1).unwrap();
        let p = r.take(8).unwrap();
        let len = 8 * PAGE_SIZE;
        // SAFETY: 8 pages just taken from the region.
        unsafe { std::slice::from_raw_parts_mut(p.as_ptr(), len) }.fill(0x5a);
        // SAFETY: locking a range of our own mapping.
        if unsafe { libc::mlock(p.as_ptr().cast(), len) } != 0 {
            eprintln!(
                "SKIP a_locked_run_leaves_the_memfd: mlock: {}",
                std::io::Error::last_os_error()
            );
            return;
        }
        let blocks = |fd: BorrowedFd<'_>| {
            let f = std::fs::File::from(fd.try_clone_to_owned().unwrap());
            std::os::unix::fs::MetadataExt::blocks(&f.metadata().unwrap())
        };
        assert!(blocks(r.fd()) >= (len / 512) as u64);
        r.remove(p, 8);
        assert_eq!(
            blocks(r.fd()),
            0,
            "the locked run's pages stayed in the memfd"
        );
        // SAFETY: the run, still mapped (the region lives), reads as zeros.
        let back = unsafe { std::slice::from_raw_parts(p.as_ptr(), len) };
        assert!(back.iter().all(|&b| b == 0));
    }

    #[test]
    fn a_used_up_reserve_refuses() {
        let r = SharedRegion::create(1).unwrap();
        assert_eq!(r.len(), 2 << 20);
        assert!(r.take(512).is_some());
        assert!(r.take(1).is_none());
    }
}
