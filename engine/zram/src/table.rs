//! The memory of the slot table (`zram->table`): `n` slots in an anonymous
//! mapping of their own.
//!
//! An empty slot is all zero bits, and a fresh anonymous mapping reads as
//! zeros and costs memory only once a page of it is written. So, unlike the
//! kernel's table (vzalloc'd whole at `disksize`), a page of ours costs memory
//! only once slots on it are used, and a device of 256 GiB starts at once.
//!
//! Why not a zeroed `Box<[Slot]>`: [`Slot`] is aligned to 32 bytes (no slot
//! straddles two cache lines), and Rust's allocator zeroes memory of that
//! alignment by writing it (`calloc` serves only the default alignment).
//! With the box, `zmem serve --size 256G` took 1.6–4 s and 2.1 GB of RSS
//! before it served a request (docs/zram.md, "Slot table").
//!
//! A recoverable device's table ([`SlotTable::shared`]) is a memfd mapped
//! shared instead: sparse the same way (a shmem page is allocated when first
//! written), and kept by whoever holds a duplicate of the memfd after the
//! process dies ([`SlotTable::open`] maps it again for recovery).

use std::ops::Deref;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;

use crate::slot::Slot;

/// The slot table: derefs to `[Slot]`.
pub struct SlotTable {
    ptr: NonNull<Slot>,
    len: usize,
    /// Length of the mapping in bytes (0: no mapping, for an empty table).
    bytes: usize,
    /// The memfd of a shared table.
    fd: Option<OwnedFd>,
}

// SAFETY: the table owns its mapping outright, like a Box<[Slot]>, and Slot
// is Send + Sync (its fields are atomics), so the table can move to and be
// shared between threads.
unsafe impl Send for SlotTable {}
// SAFETY: as above; shared access only ever yields `&[Slot]`.
unsafe impl Sync for SlotTable {}

/// All-zero bits must be a valid, empty slot: the mapping starts as zeros.
const fn zeros_are_a_slot<T: zerocopy::FromZeros>() {}
const _: () = zeros_are_a_slot::<Slot>();

impl SlotTable {
    /// A table of `n` empty slots; `None` when the memory cannot be mapped.
    pub fn new(n: usize) -> Option<SlotTable> {
        let bytes = n.checked_mul(std::mem::size_of::<Slot>())?;
        if bytes == 0 {
            return Some(SlotTable {
                ptr: NonNull::dangling(),
                len: 0,
                bytes: 0,
                fd: None,
            });
        }
        // SAFETY: a new private anonymous mapping at an address the kernel
        // chooses; it affects no memory that exists.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return None;
        }
        Some(SlotTable {
            ptr: NonNull::new(raw.cast())?,
            len: n,
            bytes,
            fd: None,
        })
    }

    /// A table of `n` empty slots in a new memfd, mapped shared.
    pub fn shared(n: usize) -> std::io::Result<SlotTable> {
        let bytes = n
            .checked_mul(std::mem::size_of::<Slot>())
            .ok_or_else(|| std::io::Error::other("slot table too large"))?;
        let fd = zmem_zpool::memfd("zmem-slot-table", bytes as u64)?;
        Self::open(fd, n)
    }

    /// Map the table of `n` slots in memfd `fd` (made by
    /// [`SlotTable::shared`], possibly by a process now dead).
    pub fn open(fd: OwnedFd, n: usize) -> std::io::Result<SlotTable> {
        let (ptr, bytes) = zmem_zpool::map_shared(fd.as_fd(), true)?;
        if bytes != n * std::mem::size_of::<Slot>() {
            if bytes != 0 {
                // SAFETY: the mapping just made, of `bytes` bytes, unused.
                unsafe { libc::munmap(ptr.as_ptr().cast(), bytes) };
            }
            return Err(std::io::Error::other(format!(
                "the slot table holds {bytes} bytes, not {n} slots"
            )));
        }
        Ok(SlotTable {
            ptr: ptr.cast(),
            len: n,
            bytes,
            fd: Some(fd),
        })
    }

    /// The memfd of a shared table.
    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.fd.as_ref().map(|f| f.as_fd())
    }
}

impl Deref for SlotTable {
    type Target = [Slot];

    fn deref(&self) -> &[Slot] {
        // SAFETY: `ptr` is a mapping of `len * size_of::<Slot>()` bytes (or
        // dangling with `len` 0), page-aligned and so aligned for Slot,
        // zero-filled by the kernel, and all-zero bits are a valid Slot
        // (FromZeros, checked above). It stays mapped until drop, and is only
        // ever reached through shared references, whose writes go through
        // Slot's atomics.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for SlotTable {
    fn drop(&mut self) {
        if self.bytes != 0 {
            // SAFETY: the mapping made in `new`, of that length; no reference
            // into it outlives `self`.
            unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.bytes) };
        }
    }
}

impl std::fmt::Debug for SlotTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SlotTable({} slots)", self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_table_is_empty_slots_aligned_to_their_size() {
        for n in [0, 1, 3000] {
            let t = SlotTable::new(n).unwrap();
            assert_eq!(t.len(), n);
            for s in t.iter() {
                assert_eq!(
                    s as *const Slot as usize % 32,
                    0,
                    "no slot straddles a line"
                );
                let g = s.lock();
                assert!(!g.allocated() && g.size() == 0 && g.handle() == 0 && g.priority() == 0);
                assert_eq!((g.ac_time(), g.hint()), (0, 0));
            }
        }
        assert!(
            SlotTable::new(usize::MAX / 8).is_none(),
            "an impossible size is refused, not a panic"
        );
        assert!(
            SlotTable::new(1 << 50).is_none(),
            "more than the address space is refused"
        );
    }

    /// Pages of the table cost memory only once slots on them are used.
    #[test]
    fn an_untouched_table_costs_no_memory() {
        let rss = || -> u64 {
            let s = std::fs::read_to_string("/proc/self/statm").unwrap();
            s.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 4096
        };
        let before = rss();
        let t = SlotTable::new(1 << 25).unwrap(); // 1 GiB of table: a 128 GiB device
        let g = t[12345].lock();
        drop(g);
        let grown = rss().saturating_sub(before);
        assert!(
            grown < 64 << 20,
            "the table's memory was written: RSS grew {grown} bytes"
        );
    }
}
