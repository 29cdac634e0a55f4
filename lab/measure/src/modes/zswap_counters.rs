//! What the kernel side of `zmem bench zswap` counts: the kernel's zswap
//! counters at one point of the run ([`Snapshot`]: /proc/vmstat,
//! /sys/kernel/debug/zswap, /proc/meminfo) and what the worker measured
//! ([`Measured`]), passed from the worker to the bench as JSON.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use zmem_codec::PAGE_SIZE;
use zmem_host::Sys;

/// vmstat events read at each phase.
const VMSTAT: [&str; 5] = ["zswpin", "zswpout", "zswpwb", "pswpin", "pswpout"];

/// Counters at one point of the run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Snapshot {
    pub vmstat: BTreeMap<String, u64>,
    /// /sys/kernel/debug/zswap (empty without debugfs).
    pub debugfs: BTreeMap<String, u64>,
    /// meminfo `Zswap:` and `Zswapped:` in bytes.
    pub zswap_bytes: u64,
    pub zswapped_bytes: u64,
}

impl Snapshot {
    pub(crate) fn take(sys: &Sys) -> Snapshot {
        let vm = sys.vmstat().unwrap_or_default();
        let vmstat = VMSTAT
            .iter()
            .map(|k| {
                let v = vm.iter().find(|(n, _)| n == k).map_or(0, |(_, v)| *v);
                (k.to_string(), v)
            })
            .collect();
        let debugfs = zmem_kernel::zswap::DEBUGFS_FILES
            .iter()
            .filter_map(|k| {
                let v = sys.read(&format!("{}/{k}", zmem_kernel::zswap::DEBUGFS_DIR));
                Some((k.to_string(), v.ok()?.trim().parse().ok()?))
            })
            .collect();
        let mi = |k: &str| sys.meminfo_get(k).ok().flatten().unwrap_or(0);
        Snapshot {
            vmstat,
            debugfs,
            zswap_bytes: mi("Zswap"),
            zswapped_bytes: mi("Zswapped"),
        }
    }

    pub fn vm(&self, k: &str) -> u64 {
        self.vmstat.get(k).copied().unwrap_or(0)
    }

    /// A debugfs value, if debugfs was readable.
    pub fn dbg(&self, k: &str) -> Option<u64> {
        self.debugfs.get(k).copied()
    }

    /// Pool bytes: debugfs `pool_total_size`, else meminfo `Zswap:`.
    pub fn pool_bytes(&self) -> u64 {
        self.dbg("pool_total_size").unwrap_or(self.zswap_bytes)
    }

    /// Stored pages: debugfs `stored_pages`, else `Zswapped:` / PAGE_SIZE.
    pub fn stored_pages(&self) -> u64 {
        self.dbg("stored_pages")
            .unwrap_or(self.zswapped_bytes / PAGE_SIZE as u64)
    }
}

/// What the worker measured.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Measured {
    /// Before the corpus is written, after the initial page-out, at the end.
    pub start: Snapshot,
    pub filled: Snapshot,
    pub end: Snapshot,
    /// Pages still resident after the initial page-out (mincore).
    pub resident_after_fill: u64,
    /// Latency of each access (the write fault), ns.
    pub lat_ns: Vec<u64>,
    /// Largest pool size seen (sampled every 64 accesses), bytes.
    pub pool_peak: u64,
    /// Accesses whose page differed from the corpus.
    pub wrong_pages: u64,
    /// madvise(MADV_PAGEOUT) calls that failed.
    pub pageout_errors: u64,
}
