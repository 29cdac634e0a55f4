//! zswap's statistics files in debugfs, by the names mm/zswap.c
//! (`zswap_debugfs_init`, Linux 6.18) gives them.

/// Where they are.
pub const DEBUGFS_DIR: &str = "/sys/kernel/debug/zswap";

/// Every file, in the kernel's order: eight event counters, then three gauges.
pub const DEBUGFS_FILES: [&str; 11] = [
    "pool_limit_hit",
    "reject_reclaim_fail",
    "reject_alloc_fail",
    "reject_kmemcache_fail",
    "reject_compress_fail",
    "reject_compress_poor",
    "decompress_fail",
    "written_back_pages",
    "pool_total_size",
    "stored_pages",
    "stored_incompressible_pages",
];

/// The event counters (they only grow; a run's effect is their difference).
pub const EVENT_COUNTERS: &[&str] = DEBUGFS_FILES.split_at(8).0;

/// The gauges (what is in the pool now).
pub const GAUGES: &[&str] = DEBUGFS_FILES.split_at(8).1;
