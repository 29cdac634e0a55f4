//! Zspage memory: runs of virtually contiguous 4 KiB pages carved from
//! chunks the pool maps from the OS in batches.
//!
//! The kernel's zsmalloc takes each zspage page from the buddy allocator
//! (`alloc_zspage` → `alloc_page`), already resident; a user-space pool that
//! grows its heap instead pays a first-touch page fault (trap + zeroing) on
//! every new page, in the write path. Here the pool maps chunks of 64 KiB
//! doubling up to 2 MiB and populates each chunk at once
//! (`MADV_POPULATE_WRITE`, Linux 5.14+; older kernels fault on first touch as
//! before); the 2 MiB ones, 2 MiB-aligned, are then advised `MADV_HUGEPAGE`
//! so that khugepaged may turn them into transparent huge pages later. A zspage gets `pages_per_zspage` contiguous pages of a
//! chunk, so an object spanning two pages is one slice (no copy on read) and
//! the read path reaches the object bytes through the zspage with no page
//! array in between.
//!
//! A pool that has reached 2 MiB chunks is growing: when it maps one, it
//! starts a short-lived thread (`zmem-populate`) that maps and populates the
//! next one into the spare cache below, so the faults and the zeroing happen
//! on another core while the write path fills the current chunk; the
//! kernel's buddy allocator likewise has free pages ready. If the chunk is
//! not ready in time, the pool maps its own. [`wait_background`] waits for
//! such threads (a caller about to `fork` needs none running).
//!
//! When a pool is dropped, its chunks go to a process-wide cache (up to
//! 128 MiB) after `MADV_FREE`: the next pool takes them back, still
//! resident unless the kernel reclaimed them under pressure, with no fault
//! and no zeroing — as the kernel's zsmalloc reuses pages through the buddy
//! allocator.
//!
//! Freed runs are kept on free lists by length and reused, resident, by the
//! next zspage of that length; above a cap (an eighth of the pages in use,
//! at least one 2 MiB chunk) a freed run is given back to the OS with
//! `MADV_DONTNEED` (its next use faults again; `MADV_DONTNEED_LOCKED` in a
//! process that locked its memory). The accounting the kernel
//! exposes (`pages_allocated`, mem_used_total) counts zspage pages only, as
//! `zs_get_total_pages`; the resident memory of the process is that plus the
//! resident free runs (≤ the cap) plus the populated, not yet used tail of
//! the newest chunk (< 2 MiB) plus the chunks populated ahead (2 MiB each,
//! at most two outstanding, kept in the spare cache when growth stops).
//! docs/zpool.md states this cost.
//!
//! A recoverable pool's arena ([`Arena::shared`]) carves its chunks from a
//! [`SharedRegion`] (a memfd that outlives the process, `shared.rs`) instead:
//! no spare cache and no chunk populated ahead (the region is one mapping),
//! and a run given back is a hole punched in the memfd.

use super::shared::SharedRegion;
use crate::{ZpoolError, PAGE_SIZE};
use std::ptr::NonNull;
use std::sync::Mutex;

/// Largest run at 4 KiB pages: `CONFIG_ZSMALLOC_CHAIN_SIZE` is at most 16.
pub(super) const MAX_RUN_PAGES: usize = 16;
/// Largest run of any zspage: 16 zsmalloc pages of 64 KiB (16 of ours each).
const MAX_ANY_RUN_PAGES: usize = MAX_RUN_PAGES * 16;
/// First chunk: 16 pages (64 KiB), so a small pool costs little.
const FIRST_CHUNK_PAGES: usize = 16;
/// Chunks double up to 512 pages (2 MiB, one PMD-sized huge page).
const MAX_CHUNK_PAGES: usize = 512;
const HUGE_BYTES: usize = MAX_CHUNK_PAGES * PAGE_SIZE;
/// Most bytes of chunks the process keeps for the next pool.
const SPARE_MAX_BYTES: usize = 128 << 20;

/// Chunks of dropped pools, lazily freed (`MADV_FREE`): (address, pages).
static SPARE: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());

fn spare() -> std::sync::MutexGuard<'static, Vec<(usize, usize)>> {
    SPARE.lock().unwrap_or_else(|e| e.into_inner())
}

/// A spare chunk of exactly `pages` pages, if the cache has one.
fn take_spare(pages: usize) -> Option<NonNull<u8>> {
    let mut sp = spare();
    let i = sp.iter().rposition(|&(_, n)| n == pages)?;
    NonNull::new(sp.swap_remove(i).0 as *mut u8)
}

/// `pages` contiguous pages owned by one zspage: like a `Box<[u8]>` whose
/// memory belongs to the pool's [`Arena`] and goes back to it with
/// [`Arena::free`] (not on drop).
pub(super) struct Run {
    ptr: NonNull<u8>,
    pages: usize,
}

// SAFETY: a `Run` is the only handle to its bytes (the arena hands each run
// out once and takes it back by value), so it may move to and be shared
// between threads exactly like the `Box<[u8]>` it replaces; `&Run` gives
// only shared access, `&mut Run` exclusive access.
unsafe impl Send for Run {}
// SAFETY: see `Send`: shared references only read.
unsafe impl Sync for Run {}

impl Run {
    /// The run's bytes.
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` points at `pages * PAGE_SIZE` bytes mapped readable
        // and writable for the arena's lifetime, which outlives every run
        // (runs live in the pool's classes; the arena is dropped after them
        // and unmaps only then). The bytes are initialised: fresh mappings
        // are zero-filled by the kernel, reused ones hold old data. No `&mut`
        // to them exists while `&self` is borrowed (unique ownership).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.pages * PAGE_SIZE) }
    }

    /// The run's bytes, writable.
    #[inline]
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`; `&mut self` guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.pages * PAGE_SIZE) }
    }

    #[cfg(test)]
    pub fn pages(&self) -> usize {
        self.pages
    }
}

/// One mapping from the OS.
struct Chunk {
    base: NonNull<u8>,
    pages: usize,
}

struct Inner {
    chunks: Vec<Chunk>,
    /// Pages handed out from the newest chunk.
    bump: usize,
    /// Free resident runs by length (index = pages).
    free: [Vec<NonNull<u8>>; MAX_ANY_RUN_PAGES + 1],
    /// Free runs given back to the OS (MADV_DONTNEED), by length.
    cold: [Vec<NonNull<u8>>; MAX_ANY_RUN_PAGES + 1],
    /// Pages on the free lists that are still resident.
    free_resident: usize,
    /// Pages in runs owned by zspages.
    in_use: usize,
}

/// The pool's source of zspage memory.
pub(super) struct Arena {
    inner: Mutex<Inner>,
    /// Where chunks come from in a recoverable pool (else from `mmap`).
    region: Option<SharedRegion>,
}

// SAFETY: the raw pointers in `Inner` refer to mappings the arena owns; they
// are only used under the mutex.
unsafe impl Send for Arena {}
// SAFETY: as for `Send`: every access goes through the mutex.
unsafe impl Sync for Arena {}

/// Counters of an arena, for tests and docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ArenaStats {
    /// Pages mapped from the OS.
    pub mapped_pages: u64,
    /// Pages in runs owned by zspages (= the pool's pages_allocated).
    pub in_use_pages: u64,
    /// Pages on the free lists still resident.
    pub free_resident_pages: u64,
}

/// A chunk of exactly `pages` pages: a spare one when the cache has it
/// (a dropped pool's, or one the populator mapped ahead), else a fresh one.
fn map_chunk(pages: usize) -> Option<NonNull<u8>> {
    take_spare(pages).or_else(|| map_fresh(pages))
}

/// Map `pages` pages: 2 MiB-aligned with huge pages requested when a chunk
/// is 2 MiB, then populated. `None` when the OS refuses.
fn map_fresh(pages: usize) -> Option<NonNull<u8>> {
    let len = pages * PAGE_SIZE;
    let huge = len == HUGE_BYTES;
    // Over-map by 2 MiB so an aligned window exists; trim the rest.
    let map_len = if huge { len + HUGE_BYTES } else { len };
    // SAFETY: an anonymous private mapping at an address the kernel picks
    // touches no existing memory; the result is checked for MAP_FAILED.
    let raw = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            map_len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        return None;
    }
    let mut base = raw.cast::<u8>();
    if huge {
        let head = base.align_offset(HUGE_BYTES);
        let tail = map_len - head - len;
        // SAFETY: both ranges lie inside the mapping just created and are
        // not used by anything; unmapping them cannot fail in a way that
        // leaves `base..base+len` unmapped.
        unsafe {
            if head > 0 {
                libc::munmap(raw, head);
            }
            base = base.add(head);
            if tail > 0 {
                libc::munmap(base.add(len).cast(), tail);
            }
        }
    }
    // SAFETY: advice on our own mapping; on kernels without
    // MADV_POPULATE_WRITE it fails with EINVAL and pages fault on first
    // touch instead. MADV_HUGEPAGE comes after populating, so the write
    // path gets 4 KiB pages at once (a huge page allocated here may stall
    // in direct compaction: measured, cold-pool writes were ~10% slower) and
    // khugepaged may collapse the chunk into a huge page later, in the
    // background, for long-lived pools. Both are advice: failure (no THP,
    // old kernel) changes nothing but speed.
    unsafe {
        libc::madvise(base.cast(), len, libc::MADV_POPULATE_WRITE);
        if huge {
            libc::madvise(base.cast(), len, libc::MADV_HUGEPAGE);
        }
    }
    NonNull::new(base)
}

/// Threads populating a 2 MiB chunk ahead of need (each maps one and ends).
static AHEAD: Mutex<Vec<std::thread::JoinHandle<()>>> = Mutex::new(Vec::new());
/// Most such threads at once: pools growing side by side share them.
const AHEAD_MAX: usize = 2;

/// Chunks populated ahead, for the unit test.
#[cfg(test)]
static POPULATED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Have one 2 MiB chunk mapped and populated by a short-lived thread
/// (`zmem-populate`) and left in the spare cache, where the next
/// `map_chunk(MAX_CHUNK_PAGES)` of any pool takes it. When the thread cannot
/// be started, or two are already at work, the pool maps its own chunk when
/// it needs one, as without this.
fn populate_ahead() {
    let mut ahead = AHEAD.lock().unwrap_or_else(|e| e.into_inner());
    ahead.retain(|h| !h.is_finished());
    if ahead.len() >= AHEAD_MAX {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("zmem-populate".into())
        .spawn(|| {
            if let Some(p) = map_fresh(MAX_CHUNK_PAGES) {
                #[cfg(test)]
                POPULATED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                give_spare(p, MAX_CHUNK_PAGES, false);
            }
        });
    if let Ok(h) = spawned {
        ahead.push(h);
    }
}

/// Wait for the chunks being populated in the background: afterwards no
/// thread of the pools' runs (until a pool grows again). For callers that
/// must be single-threaded, e.g. before `fork`.
pub fn wait_background() {
    let ahead = std::mem::take(&mut *AHEAD.lock().unwrap_or_else(|e| e.into_inner()));
    for h in ahead {
        // A populating thread that panicked left nothing behind to undo.
        let _ = h.join();
    }
}

/// Put a chunk nothing uses into the spare cache, or unmap it when the
/// cache is full. `lazy_free`: its contents are of no further use (a dropped
/// pool's chunk), so it is advised `MADV_FREE` first and the kernel may take
/// its pages under pressure (they then read as zero).
fn give_spare(p: NonNull<u8>, pages: usize, lazy_free: bool) {
    let len = pages * PAGE_SIZE;
    let mut sp = spare();
    let held: usize = sp.iter().map(|&(_, n)| n * PAGE_SIZE).sum();
    if held + len > SPARE_MAX_BYTES {
        drop(sp);
        // SAFETY: a mapping of exactly `len` bytes that nothing refers to.
        unsafe { libc::munmap(p.as_ptr().cast(), len) };
        return;
    }
    if lazy_free {
        // SAFETY: advice on a mapping of exactly `len` bytes that nothing
        // refers to; ownership passes to the spare cache below.
        unsafe { libc::madvise(p.as_ptr().cast(), len, libc::MADV_FREE) };
    }
    sp.push((p.as_ptr() as usize, pages));
}

impl Arena {
    pub fn new() -> Self {
        Self::with_region(None)
    }

    /// An arena whose chunks are carved from `region`.
    pub fn shared(region: SharedRegion) -> Self {
        Self::with_region(Some(region))
    }

    fn with_region(region: Option<SharedRegion>) -> Self {
        Arena {
            region,
            inner: Mutex::new(Inner {
                chunks: Vec::new(),
                bump: 0,
                free: std::array::from_fn(|_| Vec::new()),
                cold: std::array::from_fn(|_| Vec::new()),
                free_resident: 0,
                in_use: 0,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A run of `pages` contiguous pages (1..=16 at 4 KiB zspage pages,
    /// up to 256 for a chain of 16 pages of 64 KiB).
    pub fn alloc(&self, pages: usize) -> Result<Run, ZpoolError> {
        debug_assert!((1..=MAX_ANY_RUN_PAGES).contains(&pages));
        let mut a = self.lock();
        let chunks = a.chunks.len();
        let ptr = match a.free[pages].pop() {
            Some(p) => {
                a.free_resident -= pages;
                p
            }
            None => match a.cold[pages].pop() {
                Some(p) => p,
                None => a.carve(pages, self.region.as_ref())?,
            },
        };
        a.in_use += pages;
        // A pool that just mapped a full-size chunk is growing: have its
        // next chunk ready before this one runs out. The thread is started
        // after the lock is let go, so writers to this pool do not wait on it.
        let grew_full =
            a.chunks.len() > chunks && a.chunks.last().is_some_and(|c| c.pages == MAX_CHUNK_PAGES);
        drop(a);
        if grew_full && self.region.is_none() {
            populate_ahead();
        }
        Ok(Run { ptr, pages })
    }

    /// Take a run back; it is reused by the next zspage of its length.
    pub fn free(&self, run: Run) {
        let mut a = self.lock();
        a.in_use -= run.pages;
        let cap = MAX_CHUNK_PAGES.max(a.in_use / 8);
        if a.free_resident + run.pages > cap {
            if let Some(r) = &self.region {
                r.remove(run.ptr, run.pages);
                a.cold[run.pages].push(run.ptr);
                return;
            }
            drop_contents(run.ptr, run.pages);
            a.cold[run.pages].push(run.ptr);
        } else {
            a.free_resident += run.pages;
            a.free[run.pages].push(run.ptr);
        }
    }

    pub fn stats(&self) -> ArenaStats {
        let a = self.lock();
        ArenaStats {
            mapped_pages: a.chunks.iter().map(|c| c.pages as u64).sum(),
            in_use_pages: a.in_use as u64,
            free_resident_pages: a.free_resident as u64,
        }
    }
}

impl Inner {
    /// Cut `pages` from the newest chunk, mapping a new one when it is short
    /// (its remainder becomes one free run).
    fn carve(
        &mut self,
        pages: usize,
        region: Option<&SharedRegion>,
    ) -> Result<NonNull<u8>, ZpoolError> {
        let room = self.chunks.last().map_or(0, |c| c.pages - self.bump);
        if room < pages {
            if room > 0 {
                let c = self.chunks.last().expect("room > 0");
                // SAFETY: `bump + room == c.pages`, inside the chunk.
                let rest = unsafe { c.base.add(self.bump * PAGE_SIZE) };
                self.free[room].push(rest);
                self.free_resident += room;
            }
            // A run longer than the chunk the doubling gives (zspages of
            // 16 or 64 KiB pages) gets a chunk of its own length.
            let next = self
                .chunks
                .last()
                .map_or(FIRST_CHUNK_PAGES, |c| (c.pages * 2).min(MAX_CHUNK_PAGES))
                .max(pages);
            let base = match region {
                Some(r) => r.take(next),
                None => map_chunk(next),
            }
            .ok_or(ZpoolError::NoMemory)?;
            self.chunks.push(Chunk { base, pages: next });
            self.bump = 0;
        }
        let c = self.chunks.last().expect("a chunk with room");
        // SAFETY: `bump + pages <= c.pages`, so the run lies in the chunk.
        let p = unsafe { c.base.add(self.bump * PAGE_SIZE) };
        self.bump += pages;
        Ok(p)
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        let a = self.inner.get_mut().unwrap_or_else(|e| e.into_inner());
        if self.region.is_some() {
            // The chunks are the region's: unmapped with it.
            return;
        }
        // The pool's zspages are gone: no chunk is used any more.
        for c in a.chunks.drain(..) {
            give_spare(c.base, c.pages, true);
        }
    }
}

/// `MADV_DONTNEED_LOCKED` (Linux 5.18; the libc crate does not name it yet).
const MADV_DONTNEED_LOCKED: libc::c_int = 24;

/// Give a run's pages back to the OS (the next touch maps a zero page). In a
/// process that locked its memory (`zmem serve --swap`: `mlockall`)
/// `MADV_DONTNEED` fails with EINVAL and the pages would stay resident for
/// good; `MADV_DONTNEED_LOCKED` drops them there (before 5.18 it fails too
/// and the run stays resident: nothing is lost but memory).
fn drop_contents(ptr: NonNull<u8>, pages: usize) {
    // SAFETY (both calls): the run is ours (the caller took it by value)
    // and no zspage uses it any more; on private anonymous memory these
    // advices only drop its contents.
    let r = unsafe { libc::madvise(ptr.as_ptr().cast(), pages * PAGE_SIZE, libc::MADV_DONTNEED) };
    if r != 0 {
        unsafe { libc::madvise(ptr.as_ptr().cast(), pages * PAGE_SIZE, MADV_DONTNEED_LOCKED) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Under a memory lock (`zmem serve --swap` locks everything) a freed
    /// run's pages still go back to the OS: they read as zeros after.
    #[test]
    fn a_locked_run_is_given_back() {
        const PAGES: usize = 8;
        let len = PAGES * PAGE_SIZE;
        // SAFETY: a private anonymous mapping of our own, unmapped below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        // SAFETY: the mapping above, `len` bytes.
        let bytes = unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), len) };
        bytes.fill(0x5a);
        // SAFETY: locking our own mapping.
        if unsafe { libc::mlock(p, len) } != 0 {
            eprintln!(
                "SKIP a_locked_run_is_given_back: mlock: {}",
                std::io::Error::last_os_error()
            );
            // SAFETY: the mapping above.
            unsafe { libc::munmap(p, len) };
            return;
        }
        drop_contents(NonNull::new(p.cast()).unwrap(), PAGES);
        let kept = bytes.iter().filter(|&&b| b != 0).count();
        // SAFETY: the mapping above, no longer used.
        unsafe { libc::munmap(p, len) };
        assert_eq!(kept, 0, "the locked run's pages were not dropped");
    }

    #[test]
    fn runs_are_disjoint_reused_and_counted() {
        let a = Arena::new();
        let mut runs: Vec<Run> = (1..=MAX_RUN_PAGES)
            .cycle()
            .take(200)
            .map(|p| a.alloc(p).unwrap())
            .collect();
        for (i, r) in runs.iter_mut().enumerate() {
            assert!(r.bytes().len() == r.pages() * PAGE_SIZE);
            r.bytes_mut().fill(i as u8);
        }
        for (i, r) in runs.iter().enumerate() {
            assert!(
                r.bytes().iter().all(|&b| b == i as u8),
                "run {i} overwritten"
            );
        }
        let used: usize = runs.iter().map(|r| r.pages()).sum();
        assert_eq!(a.stats().in_use_pages, used as u64);
        let p3 = runs.iter().position(|r| r.pages() == 3).unwrap();
        let addr = runs[p3].bytes().as_ptr();
        a.free(runs.swap_remove(p3));
        let again = a.alloc(3).unwrap();
        assert_eq!(again.bytes().as_ptr(), addr, "a freed run is reused");
        runs.push(again);
        for r in runs {
            a.free(r);
        }
        let s = a.stats();
        assert_eq!(s.in_use_pages, 0);
        assert!(s.free_resident_pages <= MAX_CHUNK_PAGES as u64);
    }

    #[test]
    fn a_pool_at_full_chunk_size_gets_its_next_chunk_populated_ahead() {
        use std::sync::atomic::Ordering::Relaxed;
        let before = POPULATED.load(Relaxed);
        let a = Arena::new();
        // 16 + 32 + 64 + 128 + 256 pages fill the growing chunks; one run
        // more maps the first 2 MiB chunk, which asks for the next.
        let growing = FIRST_CHUNK_PAGES * 31 / MAX_RUN_PAGES;
        let mut runs: Vec<Run> = (0..=growing)
            .map(|_| a.alloc(MAX_RUN_PAGES).unwrap())
            .collect();
        let t = std::time::Instant::now();
        while POPULATED.load(Relaxed) == before {
            assert!(t.elapsed().as_secs() < 30, "no chunk populated ahead");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        // The pool keeps growing through as many 2 MiB chunks as it needs,
        // whether the spare cache has them or not; every run is usable.
        for i in 0..3 * MAX_CHUNK_PAGES / MAX_RUN_PAGES {
            let mut r = a.alloc(MAX_RUN_PAGES).unwrap();
            r.bytes_mut().fill(i as u8);
            runs.push(r);
        }
        let s = a.stats();
        assert_eq!(s.in_use_pages, (runs.len() * MAX_RUN_PAGES) as u64);
        assert!(s.mapped_pages >= s.in_use_pages);
        for r in runs {
            a.free(r);
        }
        // Joins whatever is still populating. That no thread is left after
        // it is checked where it matters, by the fork of the zswap kernel
        // bench (cli/tests/zswap_cli.rs): other tests here grow pools meanwhile.
        wait_background();
    }
}
