//! zram's statistics (`zram->stats`) and their rendering as `mm_stat`,
//! `io_stat` and `debug_stat`, byte for byte as the kernel prints them.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use zmem_codec::PAGE_SIZE;

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

/// `mm_stat` as numbers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MmStat {
    pub orig_data_size: u64,
    pub compr_data_size: u64,
    pub mem_used_total: u64,
    pub mem_limit: u64,
    pub mem_used_max: u64,
    pub same_pages: u64,
    pub pages_compacted: u64,
    pub huge_pages: u64,
    pub huge_pages_since: u64,
}

impl MmStat {
    /// The kernel's line: nine fields of width 8 separated by one space.
    pub fn render(&self) -> String {
        format!(
            "{:8} {:8} {:8} {:8} {:8} {:8} {:8} {:8} {:8}\n",
            self.orig_data_size,
            self.compr_data_size,
            self.mem_used_total,
            self.mem_limit,
            self.mem_used_max,
            self.same_pages,
            self.pages_compacted,
            self.huge_pages,
            self.huge_pages_since
        )
    }

    /// Parse a rendered line (ours or the kernel's) back.
    pub fn parse(s: &str) -> Option<MmStat> {
        let v: Vec<u64> = s
            .split_whitespace()
            .map(|f| f.parse().ok())
            .collect::<Option<_>>()?;
        let [a, b, c, d, e, f, g, h, i]: [u64; 9] = v.try_into().ok()?;
        Some(MmStat {
            orig_data_size: a,
            compr_data_size: b,
            mem_used_total: c,
            mem_limit: d,
            mem_used_max: e,
            same_pages: f,
            pages_compacted: g,
            huge_pages: h,
            huge_pages_since: i,
        })
    }
}

/// `io_stat` as numbers (invalid_io is always 0 and not kept).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IoStat {
    pub failed_reads: u64,
    pub failed_writes: u64,
    pub notify_free: u64,
}

impl IoStat {
    /// `%8llu %8llu 0 %8llu\n`.
    pub fn render(&self) -> String {
        format!(
            "{:8} {:8} 0 {:8}\n",
            self.failed_reads, self.failed_writes, self.notify_free
        )
    }
}

/// `debug_stat` (6.15+): `version: 1`, then the constant 0 and miss_free.
pub fn render_debug_stat(miss_free: u64) -> String {
    format!("version: 1\n0 {miss_free:8}\n")
}

/// `bd_stat` as numbers (in 4 KiB units, as the kernel prints them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BdStat {
    pub bd_count: u64,
    pub bd_reads: u64,
    pub bd_writes: u64,
}

/// `FOUR_K(x)`: pages to 4 KiB units (1 with 4 KiB pages).
const fn four_k(pages: u64) -> u64 {
    pages * (PAGE_SIZE as u64 / 4096)
}

impl BdStat {
    /// `%8llu %8llu %8llu\n`: bd_count, bd_reads, bd_writes in 4 KiB units.
    pub fn render(&self) -> String {
        format!(
            "{:8} {:8} {:8}\n",
            four_k(self.bd_count),
            four_k(self.bd_reads),
            four_k(self.bd_writes)
        )
    }

    /// Parse a rendered line back.
    pub fn parse(s: &str) -> Option<BdStat> {
        let v: Vec<u64> = s
            .split_whitespace()
            .map(|f| f.parse().ok())
            .collect::<Option<_>>()?;
        let [bd_count, bd_reads, bd_writes]: [u64; 3] = v.try_into().ok()?;
        Some(BdStat {
            bd_count,
            bd_reads,
            bd_writes,
        })
    }
}

impl Stats {
    pub fn bd_stat(&self) -> BdStat {
        BdStat {
            bd_count: self.bd_count.load(Relaxed),
            bd_reads: self.bd_reads.load(Relaxed),
            bd_writes: self.bd_writes.load(Relaxed),
        }
    }

    /// mm_stat given the pool figures (pages owned, pages compacted) and the limit.
    pub fn mm_stat(&self, pool_pages: u64, pages_compacted: u64, limit_pages: u64) -> MmStat {
        let p = PAGE_SIZE as u64;
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
            notify_free: self.notify_free.load(Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_device_renders_like_the_kernel() {
        assert_eq!(
            MmStat::default().render(),
            "       0        0        0        0        0        0        0        0        0\n"
        );
        assert_eq!(IoStat::default().render(), "       0        0 0        0\n");
        assert_eq!(render_debug_stat(0), "version: 1\n0        0\n");
        let m = MmStat {
            orig_data_size: 123456789,
            huge_pages: 3,
            ..Default::default()
        };
        assert_eq!(MmStat::parse(&m.render()), Some(m));
        assert!(
            m.render().starts_with("123456789        0"),
            "wide numbers are not cut"
        );
        assert_eq!(BdStat::default().render(), "       0        0        0\n");
        let b = BdStat {
            bd_count: 3,
            bd_reads: 12345678,
            bd_writes: 7,
        };
        assert_eq!(b.render(), "       3 12345678        7\n");
        assert_eq!(BdStat::parse(&b.render()), Some(b));
    }
}
