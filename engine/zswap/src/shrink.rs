//! LRU writeback as Linux 6.18 `mm/zswap.c` does it: `zswap_writeback_entry`,
//! the per-entry callback `shrink_memcg_cb` (second chance on `referenced`),
//! `shrink_memcg` (one entry per node per attempt), the memory-pressure
//! shrinker (`zswap_shrinker_count` / `zswap_shrinker_scan`) and
//! `shrink_worker`, which runs after a store found the pool full.
//!
//! The engine has one memory cgroup and one NUMA node, so `shrink_memcg`
//! looks at exactly one entry: the oldest one on the LRU. The worker never
//! compacts the pool (the kernel's zsmalloc compacts from its own shrinker
//! under memory pressure, not from zswap).

use crate::engine::{Inner, Zswap};
use crate::params::ShrinkWorker;
use crate::pool;
use crate::stats::inc;
use crate::PAGE_SIZE;

/// `MAX_RECLAIM_RETRIES` (include/linux/swap.h): the shrink worker gives up
/// after this many failed attempts.
pub const MAX_RECLAIM_RETRIES: u32 = 16;

/// What `shrink_memcg_cb` did with the entry it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Visit {
    /// `referenced` was set: cleared, entry rotated (`LRU_ROTATE`).
    Rotated,
    /// Rotated, then written back and freed (`LRU_REMOVED_RETRY`).
    WrittenBack,
    /// Rotated, writeback failed (`reject_reclaim_fail`, `LRU_RETRY`); the
    /// entry stays in the pool.
    Failed,
}

/// The result of one `shrink_memcg` call (the kernel's return codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    /// 0: an entry was written back.
    WrittenBack,
    /// -EAGAIN: an entry was looked at but not written back (it was
    /// referenced and got its second chance, or its writeback failed).
    Again,
    /// -ENOENT: the LRU is empty.
    NoEntry,
}

/// What one run of the shrink worker did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkerRun {
    /// Entries written back.
    pub written_back: usize,
    /// `shrink_memcg` calls that looked at an entry.
    pub attempts: usize,
    /// Failures counted (the run ends at [`MAX_RECLAIM_RETRIES`]).
    pub failures: u32,
    /// Whether the run ended on the failure count rather than on reaching
    /// the accept threshold.
    pub gave_up: bool,
}

/// `mult_frac(x, n, d)` (include/linux/math.h): x × n / d without overflowing
/// the intermediate product.
pub fn mult_frac(x: u64, n: u64, d: u64) -> u64 {
    let (q, r) = (x / d, x % d);
    q * n + r * n / d
}

impl Zswap {
    /// `zswap_writeback_entry`: decompresses the entry at `offset`, writes the
    /// page to the backing file and frees the entry. On failure the entry
    /// stays in the pool.
    fn writeback(&self, inner: &mut Inner, offset: u64) -> bool {
        let Some(e) = inner.tree.get(&offset).copied() else {
            return false;
        };
        let mut page = vec![0u8; PAGE_SIZE];
        let ok = self.read_entry(inner, offset, &e, &mut page).is_ok()
            && self.backing.write(offset, &page).is_ok();
        if !ok {
            return false;
        }
        inc(&self.counters.backing_writes);
        inner.tree.remove(&offset);
        self.free_entry(inner, e);
        inc(&self.counters.zswpwb);
        true
    }

    /// `shrink_memcg_cb` on the oldest LRU entry; `None` when the LRU is
    /// empty. A referenced entry loses the bit and is rotated; otherwise it
    /// is rotated first (so a failure leaves it at the young end) and
    /// written back.
    pub(crate) fn visit_oldest(&self, inner: &mut Inner) -> Option<Visit> {
        let (seq, offset) = inner.lru.tail()?;
        let new_seq = inner.lru.rotate(seq);
        let e = inner
            .tree
            .get_mut(&offset)
            .expect("LRU entries are in the tree");
        e.seq = new_seq;
        if e.referenced {
            e.referenced = false;
            return Some(Visit::Rotated);
        }
        if self.writeback(inner, offset) {
            inc(&self.counters.written_back_pages);
            Some(Visit::WrittenBack)
        } else {
            inc(&self.counters.reject_reclaim_fail);
            Some(Visit::Failed)
        }
    }

    /// `shrink_memcg` for the engine's one cgroup and one node: walks one
    /// entry (`nr_to_walk = 1`).
    fn shrink_memcg(&self, inner: &mut Inner) -> Attempt {
        match self.visit_oldest(inner) {
            None => Attempt::NoEntry,
            Some(Visit::WrittenBack) => Attempt::WrittenBack,
            Some(Visit::Rotated | Visit::Failed) => Attempt::Again,
        }
    }

    /// `zswap_shrinker_count`: LRU entries minus (and consuming) disk
    /// swap-ins since the last count, scaled by the memory saving factor
    /// `mult_frac(freeable, nr_backing, nr_stored)`. With memory cgroups (the
    /// default, as on any kernel not booted with `cgroup_disable=memory`)
    /// `nr_backing` is the cgroup's compressed bytes (`MEMCG_ZSWAP_B`) in
    /// pages; without, it is the pool's pages. 0 when `shrinker_enabled` is
    /// off.
    pub fn shrinker_count(&self) -> u64 {
        if !self.params().shrinker_enabled {
            return 0;
        }
        let mut inner = self.lock();
        let nr_backing = if self.memcg {
            inner.compressed_bytes / PAGE_SIZE as u64
        } else {
            inner.pool.total_pages()
        };
        let nr_stored = inner.tree.len() as u64;
        if nr_stored == 0 {
            return 0;
        }
        let lru = inner.lru.len() as u64;
        if lru == 0 {
            return 0;
        }
        let protected = inner.disk_swapins.min(lru);
        inner.disk_swapins -= protected;
        let freeable = lru - protected;
        if freeable == 0 {
            return 0;
        }
        mult_frac(freeable, nr_backing, nr_stored)
    }

    /// `zswap_shrinker_scan`: looks at up to `nr_to_scan` entries from the
    /// oldest end with second chance; returns pages written back. Does
    /// nothing when `shrinker_enabled` is off.
    pub fn shrinker_scan(&self, nr_to_scan: usize) -> usize {
        if !self.params().shrinker_enabled {
            return 0;
        }
        let mut inner = self.lock();
        let mut written = 0;
        for _ in 0..nr_to_scan {
            match self.visit_oldest(&mut inner) {
                None => break,
                Some(Visit::WrittenBack) => written += 1,
                Some(_) => {}
            }
        }
        written
    }

    /// One step of `shrink_worker`'s loop on `st`: a `shrink_memcg`
    /// attempt, or the end of the cgroup walk (a failure only if the walk
    /// found no entry). The engine has one cgroup, so the two alternate.
    /// Returns whether the run goes on: not after [`MAX_RECLAIM_RETRIES`]
    /// failures, nor once the pool is at or below `thr`.
    pub(crate) fn worker_step(&self, inner: &mut Inner, st: &mut WorkerState, thr: u64) -> bool {
        if st.at_walk_end {
            st.at_walk_end = false;
            if st.walk_attempts == 0 && count_failure(&mut st.run) {
                return false;
            }
            st.walk_attempts = 0;
        } else {
            st.at_walk_end = true;
            match self.shrink_memcg(inner) {
                Attempt::NoEntry => {}
                Attempt::WrittenBack => {
                    st.run.attempts += 1;
                    st.walk_attempts += 1;
                    st.run.written_back += 1;
                }
                Attempt::Again => {
                    st.run.attempts += 1;
                    st.walk_attempts += 1;
                    if count_failure(&mut st.run) {
                        return false;
                    }
                }
            }
        }
        inner.pool.total_pages() > thr
    }

    /// `shrink_worker`: repeats `shrink_memcg` until the pool is at or below
    /// the accept threshold (checked after each step, so a run makes at least
    /// one attempt), ending early after [`MAX_RECLAIM_RETRIES`] failures.
    /// An attempt that looks at an entry without writing it back is a
    /// failure; so is a walk of the cgroup tree that found no entry. The
    /// kernel walks all cgroups round-robin and the end of each walk is a
    /// step of its own; with one cgroup the steps alternate between it and
    /// the end of the walk. Runs regardless of `shrinker_enabled`, as in the
    /// kernel; never compacts.
    pub fn run_shrink_worker(&self) -> WorkerRun {
        let thr = pool::accept_pages(self.ram_bytes, &self.params());
        let mut inner = self.lock();
        let mut st = WorkerState::default();
        while self.worker_step(&mut inner, &mut st, thr) {}
        st.run
    }

    /// [`ShrinkWorker::Paced`]: the queued run (if any) makes its next
    /// `steps` steps. Called at the start of every store and load.
    pub(crate) fn pace_worker(&self, inner: &mut Inner) {
        let ShrinkWorker::Paced(steps) = self.worker else {
            return;
        };
        let Some(mut st) = inner.queued_worker.take() else {
            return;
        };
        let thr = pool::accept_pages(self.ram_bytes, &self.params());
        for _ in 0..steps {
            if !self.worker_step(inner, &mut st, thr) {
                return;
            }
        }
        inner.queued_worker = Some(st);
    }
}

/// A shrink-worker run in progress (the state of `shrink_worker`'s loop).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct WorkerState {
    run: WorkerRun,
    walk_attempts: usize,
    at_walk_end: bool,
}

/// Counts one failure; true when the run must end.
fn count_failure(run: &mut WorkerRun) -> bool {
    run.failures += 1;
    run.gave_up = run.failures >= MAX_RECLAIM_RETRIES;
    run.gave_up
}

#[cfg(test)]
mod tests {
    use super::mult_frac;

    #[test]
    fn mult_frac_as_the_kernel_macro() {
        assert_eq!(mult_frac(10, 3, 4), 7);
        assert_eq!(mult_frac(8, 8, 8), 8);
        assert_eq!(mult_frac(7, 0, 5), 0);
        assert_eq!(mult_frac(u64::MAX / 2, 2, 4), u64::MAX / 4);
    }
}
