//! LRU writeback: `zswap_writeback_entry`, the memory-pressure shrinker
//! (second chance on `referenced`) and the shrink worker that runs after a
//! store found the pool full.

use crate::engine::{Inner, Zswap};
use crate::pool;
use crate::stats::inc;
use crate::PAGE_SIZE;

/// `MAX_RECLAIM_RETRIES`: the shrink worker gives up after this many failures.
pub const MAX_RECLAIM_RETRIES: u32 = 16;

/// Result of one LRU walk step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    WrittenBack,
    Failed,
    Empty,
}

impl Zswap {
    /// Writes the entry at `offset` back to the backing file and frees it.
    /// On failure (`reject_reclaim_fail`) the entry stays in the pool.
    fn writeback(&self, inner: &mut Inner, offset: u64) -> bool {
        let Some(e) = inner.tree.get(&offset).copied() else {
            return false;
        };
        let mut page = vec![0u8; PAGE_SIZE];
        let ok = self.read_entry(inner, offset, &e, &mut page).is_ok()
            && self.backing.write(offset, &page).is_ok();
        if !ok {
            inc(&self.counters.reject_reclaim_fail);
            return false;
        }
        inc(&self.counters.backing_writes);
        inner.tree.remove(&offset);
        self.free_entry(inner, e);
        inc(&self.counters.written_back_pages);
        inc(&self.counters.zswpwb);
        true
    }

    /// One step from the LRU tail: referenced entries lose the bit and rotate
    /// (second chance); the first unreferenced entry is rotated then written
    /// back. At most `budget` entries are looked at.
    fn lru_step(&self, inner: &mut Inner, budget: usize) -> (Step, usize) {
        let mut seen = 0;
        while seen < budget {
            let Some((seq, offset)) = inner.lru.tail() else {
                return (Step::Empty, seen);
            };
            seen += 1;
            let new_seq = inner.lru.rotate(seq);
            let e = inner
                .tree
                .get_mut(&offset)
                .expect("LRU entries are in the tree");
            e.seq = new_seq;
            if e.referenced {
                e.referenced = false;
                continue;
            }
            let step = if self.writeback(inner, offset) {
                Step::WrittenBack
            } else {
                Step::Failed
            };
            return (step, seen);
        }
        (Step::Failed, seen)
    }

    /// `zswap_shrinker_count`: freeable entries scaled by the compression
    /// ratio, minus (and consuming) disk swap-ins since the last count.
    /// 0 when `shrinker_enabled` is off.
    pub fn shrinker_count(&self) -> u64 {
        if !self.params().shrinker_enabled {
            return 0;
        }
        let mut inner = self.lock();
        let lru = inner.lru.len() as u64;
        let protected = inner.disk_swapins.min(lru);
        inner.disk_swapins -= protected;
        let freeable = lru - protected;
        let stored = inner.tree.len() as u64;
        if stored == 0 {
            return 0;
        }
        freeable * inner.pool.total_pages() / stored
    }

    /// `zswap_shrinker_scan`: walks up to `nr_to_scan` LRU entries from the
    /// tail with second chance; returns pages written back. Does nothing
    /// when `shrinker_enabled` is off.
    pub fn shrinker_scan(&self, nr_to_scan: usize) -> usize {
        if !self.params().shrinker_enabled {
            return 0;
        }
        let mut inner = self.lock();
        let mut left = nr_to_scan;
        let mut written = 0;
        while left > 0 {
            let (step, seen) = self.lru_step(&mut inner, left);
            left -= seen.min(left);
            match step {
                Step::WrittenBack => written += 1,
                Step::Failed => {}
                Step::Empty => break,
            }
        }
        written
    }

    /// `shrink_worker`: writes back from the LRU tail until the pool is at or
    /// below the accept threshold; gives up after [`MAX_RECLAIM_RETRIES`]
    /// failures or when the LRU is empty. Returns pages written back.
    /// Runs regardless of `shrinker_enabled`, as in the kernel.
    pub fn run_shrink_worker(&self) -> usize {
        let p = self.params();
        let accept = pool::accept_pages(self.ram_bytes, &p);
        let mut inner = self.lock();
        let mut failures = 0;
        let mut written = 0;
        let mut since_compact = 0;
        while inner.pool.total_pages() > accept {
            let budget = inner.lru.len().max(1) * 2;
            match self.lru_step(&mut inner, budget).0 {
                Step::WrittenBack => {
                    written += 1;
                    since_compact += 1;
                    // Freed objects leave holes in zspages; compact like
                    // zsmalloc's own shrinker would under pressure.
                    if since_compact >= 32 {
                        inner.pool.compact();
                        since_compact = 0;
                    }
                }
                Step::Failed => {
                    failures += 1;
                    if failures >= MAX_RECLAIM_RETRIES {
                        break;
                    }
                }
                Step::Empty => {
                    inner.pool.compact();
                    break;
                }
            }
            if inner.pool.total_pages() <= accept {
                break;
            }
        }
        if inner.pool.total_pages() > accept {
            inner.pool.compact();
        }
        written
    }
}
