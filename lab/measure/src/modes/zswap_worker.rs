//! The worker of the kernel side of `zmem bench zswap`
//! ([`super::zswap_kernel`]): a child process in the bench's memory cgroup
//! that holds the corpus in an anonymous mapping and swaps its pages out and
//! in, in the engine's order.
//!
//! * swap-out of a page: `madvise(MADV_PAGEOUT)` on it (mm/madvise.c →
//!   `reclaim_pages`: the page is reclaimed now, written through
//!   `swap_writeout`, where `zswap_store` takes it or it goes to the swap
//!   file; a zero-filled page only sets the swap core's zeromap);
//! * swap-in: a write to the page (`lock or` of 0 into its first byte, a
//!   single write fault): `do_swap_page` reads it from zswap (`zswap_load`, which erases
//!   the entry), the zeromap or the swap file, and frees the swap slot
//!   (`should_try_to_free_swap` for a write fault), like the engine's
//!   exclusive swap-in.

use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use zmem_codec::PAGE_SIZE;
use zmem_corpus::Corpus;
use zmem_host::Sys;

use super::zswap_counters::{Measured, Snapshot};

/// Pages per madvise call for the initial page-out.
const PAGEOUT_CHUNK: usize = 256;

/// An anonymous private mapping of whole pages, without transparent huge pages.
struct Mapping {
    ptr: *mut u8,
    pages: usize,
}

impl Mapping {
    fn new(pages: usize) -> Result<Mapping> {
        let len = pages * PAGE_SIZE;
        // SAFETY: an anonymous mapping with no address hint; checked below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            bail!("mmap of {len} bytes: {}", std::io::Error::last_os_error());
        }
        // SAFETY: ptr/len is the mapping just made. Huge pages would be
        // swapped as large folios; the engine swaps single pages.
        unsafe { libc::madvise(ptr, len, libc::MADV_NOHUGEPAGE) };
        Ok(Mapping {
            ptr: ptr.cast(),
            pages,
        })
    }

    fn page(&self, i: usize) -> &[u8] {
        assert!(i < self.pages);
        // SAFETY: i is in range; the mapping lives as long as self.
        unsafe { std::slice::from_raw_parts(self.ptr.add(i * PAGE_SIZE), PAGE_SIZE) }
    }

    fn fill(&mut self, i: usize, data: &[u8]) {
        assert!(i < self.pages && data.len() == PAGE_SIZE);
        // SAFETY: i is in range and data is one page; no other reference
        // into the mapping is alive (&mut self).
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr.add(i * PAGE_SIZE), PAGE_SIZE)
        };
    }

    /// One write access to page `i` that changes nothing: a single write
    /// fault if the page is swapped out. (An atomic `fetch_or(0)` is not
    /// enough: LLVM turns an idempotent read-modify-write into a fenced load.)
    fn touch_write(&self, i: usize) {
        assert!(i < self.pages);
        // SAFETY: the page start is in the mapping; the mapping is only
        // accessed by this thread.
        let p = unsafe { self.ptr.add(i * PAGE_SIZE) };
        #[cfg(target_arch = "x86_64")]
        // SAFETY: p points to a writable byte of the mapping; `lock or 0`
        // leaves it unchanged.
        unsafe {
            std::arch::asm!("lock or byte ptr [{p}], 0", p = in(reg) p, options(nostack));
        }
        #[cfg(not(target_arch = "x86_64"))]
        // SAFETY: as above (a read fault, then a write fault, elsewhere).
        unsafe {
            let v = std::ptr::read_volatile(p);
            std::ptr::write_volatile(p, v);
        }
    }

    /// `madvise(MADV_PAGEOUT)` on pages `first..first + n`; false on failure.
    fn pageout(&self, first: usize, n: usize) -> bool {
        assert!(first + n <= self.pages);
        // SAFETY: the range lies inside the mapping.
        let r = unsafe {
            libc::madvise(
                self.ptr.add(first * PAGE_SIZE).cast(),
                n * PAGE_SIZE,
                libc::MADV_PAGEOUT,
            )
        };
        r == 0
    }

    /// Pages resident in RAM (mincore).
    fn resident(&self) -> u64 {
        let mut v = vec![0u8; self.pages];
        // SAFETY: v has one byte per page of the mapping.
        let r = unsafe { libc::mincore(self.ptr.cast(), self.pages * PAGE_SIZE, v.as_mut_ptr()) };
        if r != 0 {
            return 0;
        }
        v.iter().filter(|b| *b & 1 == 1).count() as u64
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len is the mapping made in new.
        unsafe { libc::munmap(self.ptr.cast(), self.pages * PAGE_SIZE) };
    }
}

/// Keeps this process on the CPU it runs on: pages faulted in sit in that
/// CPU's LRU batch, which `MADV_PAGEOUT` drains (`lru_add_drain`) before it
/// isolates them.
fn pin_to_current_cpu() {
    // SAFETY: sched_getcpu/sched_setaffinity on this process with a valid set.
    unsafe {
        let cpu = libc::sched_getcpu();
        if cpu < 0 {
            return;
        }
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu as usize, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// Waits until zswap's pool stops changing (the kernel's shrink worker runs
/// on a workqueue after a refused store), at most 2 s.
fn settle(sys: &Sys) {
    let key = |s: &Snapshot| (s.stored_pages(), s.pool_bytes(), s.vm("zswpwb"));
    let mut last = key(&Snapshot::take(sys));
    for _ in 0..40 {
        std::thread::sleep(Duration::from_millis(50));
        let now = key(&Snapshot::take(sys));
        if now == last {
            return;
        }
        last = now;
    }
}

/// Pool bytes now (debugfs, else meminfo).
fn pool_now(sys: &Sys) -> u64 {
    sys.read(&format!(
        "{}/pool_total_size",
        zmem_kernel::zswap::DEBUGFS_DIR
    ))
    .ok()
    .and_then(|v| v.trim().parse().ok())
    .unwrap_or_else(|| sys.meminfo_get("Zswap").ok().flatten().unwrap_or(0))
}

/// Every page out, then `seq`: swap-in (timed), check, swap-out.
pub fn run(corpus: &Corpus, seq: &[usize]) -> Result<Measured> {
    pin_to_current_cpu();
    let sys = Sys::real();
    let n = corpus.page_count();
    let mut map = Mapping::new(n)?;
    let mut m = Measured {
        start: Snapshot::take(&sys),
        lat_ns: Vec::with_capacity(seq.len()),
        ..Measured::default()
    };
    for i in 0..n {
        map.fill(i, corpus.page(i));
    }
    for first in (0..n).step_by(PAGEOUT_CHUNK) {
        if !map.pageout(first, PAGEOUT_CHUNK.min(n - first)) {
            m.pageout_errors += 1;
        }
    }
    settle(&sys);
    m.resident_after_fill = map.resident();
    m.filled = Snapshot::take(&sys);
    m.pool_peak = m.filled.pool_bytes();
    for (k, &i) in seq.iter().enumerate() {
        let t0 = Instant::now();
        map.touch_write(i);
        m.lat_ns.push(t0.elapsed().as_nanos() as u64);
        if map.page(i) != corpus.page(i) {
            m.wrong_pages += 1;
        }
        if !map.pageout(i, 1) {
            m.pageout_errors += 1;
        }
        if k % 64 == 0 {
            m.pool_peak = m.pool_peak.max(pool_now(&sys));
        }
    }
    settle(&sys);
    m.end = Snapshot::take(&sys);
    m.pool_peak = m.pool_peak.max(m.end.pool_bytes());
    Ok(m)
}
