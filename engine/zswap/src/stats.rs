//! Statistics under the debugfs names of `/sys/kernel/debug/zswap/` (6.18),
//! the meminfo pair `Zswap`/`Zswapped`, the vmstat events `zswpin`,
//! `zswpout`, `zswpwb`, and the swap core's counters of this engine
//! (zeromap pages, backing-store reads and writes).
//!
//! Which of them a kernel has depends on its version
//! ([`zmem_kernel::KernelModel::zswap_stats`]): `same_filled_pages` and
//! `duplicate_entry` are counted here under every version and shown only
//! under the kernels that have them (before 6.12: same-filled entries; 6.12+
//! sends zero pages to the swap core's zeromap and compresses other
//! same-filled pages).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Event counters (monotonic) and gauges (current values).
#[derive(Debug, Default)]
pub struct Counters {
    pub pool_limit_hit: AtomicU64,
    pub reject_reclaim_fail: AtomicU64,
    pub reject_alloc_fail: AtomicU64,
    pub reject_kmemcache_fail: AtomicU64,
    pub reject_compress_fail: AtomicU64,
    pub reject_compress_poor: AtomicU64,
    pub decompress_fail: AtomicU64,
    pub written_back_pages: AtomicU64,
    pub stored_pages: AtomicU64,
    pub stored_incompressible_pages: AtomicU64,
    pub same_filled_pages: AtomicU64,
    pub duplicate_entry: AtomicU64,
    pub zswpin: AtomicU64,
    pub zswpout: AtomicU64,
    pub zswpwb: AtomicU64,
    pub zero_pages: AtomicU64,
    pub backing_reads: AtomicU64,
    pub backing_writes: AtomicU64,
}

pub(crate) fn inc(c: &AtomicU64) {
    c.fetch_add(1, Relaxed);
}

pub(crate) fn dec(c: &AtomicU64) {
    c.fetch_sub(1, Relaxed);
}

/// A snapshot of every statistic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    pub pool_limit_hit: u64,
    pub reject_reclaim_fail: u64,
    pub reject_alloc_fail: u64,
    pub reject_kmemcache_fail: u64,
    pub reject_compress_fail: u64,
    pub reject_compress_poor: u64,
    pub decompress_fail: u64,
    pub written_back_pages: u64,
    /// Bytes: Σ pool pages × PAGE_SIZE.
    pub pool_total_size: u64,
    pub stored_pages: u64,
    pub stored_incompressible_pages: u64,
    /// Same-filled entries now (kernels before 6.12).
    pub same_filled_pages: u64,
    /// Stores that replaced an entry at the same offset (kernels before 6.10).
    pub duplicate_entry: u64,
    /// vmstat: loads served from the pool.
    pub zswpin: u64,
    /// vmstat: stores accepted.
    pub zswpout: u64,
    /// vmstat: entries written back.
    pub zswpwb: u64,
    /// Swap core: zero-filled pages currently recorded in the zeromap.
    pub zero_pages: u64,
    /// Backing file: page reads and page writes.
    pub backing_reads: u64,
    pub backing_writes: u64,
}

impl Stats {
    /// The debugfs file names, in the kernel's order, readable through [`crate::Zswap::attr_read`].
    pub const DEBUGFS: [&'static str; 11] = zmem_kernel::zswap::DEBUGFS_FILES;

    /// A statistic by its debugfs (or vmstat / zmem) name.
    pub fn get(&self, name: &str) -> Option<u64> {
        Some(match name {
            "pool_limit_hit" => self.pool_limit_hit,
            "reject_reclaim_fail" => self.reject_reclaim_fail,
            "reject_alloc_fail" => self.reject_alloc_fail,
            "reject_kmemcache_fail" => self.reject_kmemcache_fail,
            "reject_compress_fail" => self.reject_compress_fail,
            "reject_compress_poor" => self.reject_compress_poor,
            "decompress_fail" => self.decompress_fail,
            "written_back_pages" => self.written_back_pages,
            "pool_total_size" => self.pool_total_size,
            "stored_pages" => self.stored_pages,
            "stored_incompressible_pages" => self.stored_incompressible_pages,
            "same_filled_pages" => self.same_filled_pages,
            "duplicate_entry" => self.duplicate_entry,
            "zswpin" => self.zswpin,
            "zswpout" => self.zswpout,
            "zswpwb" => self.zswpwb,
            "zero_pages" => self.zero_pages,
            "backing_reads" => self.backing_reads,
            "backing_writes" => self.backing_writes,
            _ => return None,
        })
    }

    /// meminfo `Zswap:` in bytes (the pool).
    pub fn zswap_bytes(&self) -> u64 {
        self.pool_total_size
    }

    /// meminfo `Zswapped:` in bytes (original data of the stored pages).
    pub fn zswapped_bytes(&self) -> u64 {
        self.stored_pages * crate::PAGE_SIZE as u64
    }

    /// `/proc/meminfo` lines for the pair.
    pub fn meminfo(&self) -> String {
        format!(
            "Zswap:    {:>8} kB\nZswapped: {:>8} kB\n",
            self.zswap_bytes() / 1024,
            self.zswapped_bytes() / 1024
        )
    }
}

impl Counters {
    pub(crate) fn snapshot(&self, pool_pages: u64) -> Stats {
        let g = |c: &AtomicU64| c.load(Relaxed);
        Stats {
            pool_limit_hit: g(&self.pool_limit_hit),
            reject_reclaim_fail: g(&self.reject_reclaim_fail),
            reject_alloc_fail: g(&self.reject_alloc_fail),
            reject_kmemcache_fail: g(&self.reject_kmemcache_fail),
            reject_compress_fail: g(&self.reject_compress_fail),
            reject_compress_poor: g(&self.reject_compress_poor),
            decompress_fail: g(&self.decompress_fail),
            written_back_pages: g(&self.written_back_pages),
            pool_total_size: pool_pages * crate::PAGE_SIZE as u64,
            stored_pages: g(&self.stored_pages),
            stored_incompressible_pages: g(&self.stored_incompressible_pages),
            same_filled_pages: g(&self.same_filled_pages),
            duplicate_entry: g(&self.duplicate_entry),
            zswpin: g(&self.zswpin),
            zswpout: g(&self.zswpout),
            zswpwb: g(&self.zswpwb),
            zero_pages: g(&self.zero_pages),
            backing_reads: g(&self.backing_reads),
            backing_writes: g(&self.backing_writes),
        }
    }
}
