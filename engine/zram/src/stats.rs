//! zram's statistics (`zram->stats`), turned into the `mm_stat`, `io_stat`
//! and `bd_stat` lines of zmem-kernel (which render them as the kernel does).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use zmem_kernel::{BdStat, IoStat, MmStat};

/// Counters of an initialised device; all zeroed by `reset`.
#[derive(Debug, Default)]
pub struct Stats {
    pub pages_stored: AtomicU64,
    pub compr_data_size: AtomicU64,
    pub same_pages: AtomicU64,
    pub huge_pages: AtomicU64,
    pub huge_pages_since: AtomicU64,
    pub max_used_pages: AtomicU64,
    pub failed_reads: AtomicU64,
    pub failed_writes: AtomicU64,
    pub notify_free: AtomicU64,
    pub miss_free: AtomicU64,
    /// Backing-device blocks in use (written-back slots).
    pub bd_count: AtomicU64,
    /// Pages read from the backing device.
    pub bd_reads: AtomicU64,
    /// Pages written to the backing device.
    pub bd_writes: AtomicU64,
    /// zmem: pages stored by the fast algorithm (`fast_path` read).
    pub fast_writes: AtomicU64,
}

impl Stats {
    pub fn bd_stat(&self) -> BdStat {
        BdStat {
            bd_count: self.bd_count.load(Relaxed),
            bd_reads: self.bd_reads.load(Relaxed),
            bd_writes: self.bd_writes.load(Relaxed),
        }
    }

    /// mm_stat given the pool figures (pages owned, pages compacted), the
    /// limit and the page size they count in.
    pub fn mm_stat(
        &self,
        pool_pages: u64,
        pages_compacted: u64,
        limit_pages: u64,
        page_size: usize,
    ) -> MmStat {
        let p = page_size as u64;
        MmStat {
            orig_data_size: self.pages_stored.load(Relaxed) * p,
            compr_data_size: self.compr_data_size.load(Relaxed),
            mem_used_total: pool_pages * p,
            mem_limit: limit_pages * p,
            mem_used_max: self.max_used_pages.load(Relaxed) * p,
            same_pages: self.same_pages.load(Relaxed),
            pages_compacted,
            huge_pages: self.huge_pages.load(Relaxed),
            huge_pages_since: self.huge_pages_since.load(Relaxed),
        }
    }

    pub fn io_stat(&self) -> IoStat {
        IoStat {
            failed_reads: self.failed_reads.load(Relaxed),
            failed_writes: self.failed_writes.load(Relaxed),
            invalid_io: 0,
            notify_free: self.notify_free.load(Relaxed),
        }
    }
}
