//! `zswap_store`: limit check, compression, allocation, LRU insertion.

use zmem_codec::{MAX_COMPRESSED, PAGE_SIZE};
use zmem_zpool::ZpoolError;

use crate::engine::{Entry, Zswap};
use crate::params::{Incompressible, ShrinkWorker};
use crate::pool::{self, Check};
use crate::stats::inc;

/// Why a store was refused (the page then goes to the backing store).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreReject {
    #[error("zswap is disabled")]
    Disabled,
    #[error("pool is full (limit hit)")]
    LimitHit,
    #[error("pool is above the accept threshold after hitting its limit")]
    Hysteresis,
    #[error("page does not compress (reject_compress_poor)")]
    CompressPoor,
    #[error("compressor failed: {0}")]
    CompressFail(String),
    #[error("allocation failed: {0}")]
    AllocFail(String),
    #[error("page is not {PAGE_SIZE} bytes")]
    BadPage,
}

impl Zswap {
    /// Stores one page at swap offset `offset`. On any refusal the stale entry
    /// at `offset` (if any) is invalidated, as the kernel does so a later
    /// writeback cannot overwrite newer data on the backing store. A refusal
    /// while the pool is marked full (`zswap_pool_reached_full`), whatever
    /// its reason, starts the shrink worker (mm/zswap.c queues
    /// `zswap_shrink_work`); a store refused because zswap is disabled does
    /// not.
    pub fn store(&self, offset: u64, page: &[u8]) -> Result<(), StoreReject> {
        let r = self.try_store(offset, page);
        if let Err(e) = &r {
            self.invalidate(offset);
            let mut inner = self.lock();
            let queue = inner.limit.reached_full
                && !matches!(e, StoreReject::Disabled | StoreReject::BadPage);
            match self.worker {
                ShrinkWorker::Inline if queue => {
                    drop(inner);
                    self.run_shrink_worker();
                }
                ShrinkWorker::Paced(_) if queue && inner.queued_worker.is_none() => {
                    inner.queued_worker = Some(Default::default());
                }
                _ => {}
            }
        }
        r
    }

    fn try_store(&self, offset: u64, page: &[u8]) -> Result<(), StoreReject> {
        if page.len() != PAGE_SIZE {
            return Err(StoreReject::BadPage);
        }
        let p = self.params();
        if !p.enabled {
            return Err(StoreReject::Disabled);
        }
        let (max, accept) = (
            pool::max_pages(self.ram_bytes, &p),
            pool::accept_pages(self.ram_bytes, &p),
        );
        {
            let mut inner = self.lock();
            self.pace_worker(&mut inner);
            let cur = inner.pool.total_pages();
            match inner.limit.check(cur, max, accept) {
                Check::Accept => {}
                Check::LimitHit => {
                    inc(&self.counters.pool_limit_hit);
                    return Err(StoreReject::LimitHit);
                }
                Check::Hysteresis => return Err(StoreReject::Hysteresis),
            }
        }

        let ci = *self.current_codec.read().unwrap_or_else(|e| e.into_inner());
        let codec = self.codec(ci);
        let mut buf = vec![0u8; MAX_COMPRESSED];
        let compressed = codec.compress(page, &mut buf);
        let data: &[u8] = match (compressed, p.incompressible) {
            (Ok(n), _) if n > 0 && n < PAGE_SIZE => &buf[..n],
            // 6.18: failure, empty or ≥ PAGE_SIZE → the raw page.
            (_, Incompressible::Store) => page,
            // ≤ 6.17 stored a PAGE_SIZE result as an object that saved
            // nothing; the raw page is the same size and needs no decompression.
            (Ok(n), Incompressible::Reject) if n == PAGE_SIZE => page,
            (Ok(_), Incompressible::Reject) => {
                inc(&self.counters.reject_compress_poor);
                return Err(StoreReject::CompressPoor);
            }
            (Err(zmem_codec::CodecError::DstTooSmall { .. }), Incompressible::Reject) => {
                inc(&self.counters.reject_compress_poor);
                return Err(StoreReject::CompressPoor);
            }
            (Err(e), Incompressible::Reject) => {
                inc(&self.counters.reject_compress_fail);
                return Err(StoreReject::CompressFail(e.to_string()));
            }
        };
        let mut inner = self.lock();
        let handle = match inner.pool.malloc(data.len()) {
            Ok(h) => h,
            Err(e @ (ZpoolError::TooLarge { .. } | ZpoolError::ZeroSize)) => {
                inc(&self.counters.reject_compress_poor);
                return Err(StoreReject::AllocFail(e.to_string()));
            }
            Err(e) => {
                inc(&self.counters.reject_alloc_fail);
                return Err(StoreReject::AllocFail(e.to_string()));
            }
        };
        let hint = match inner.pool.write(handle, data) {
            Ok(hint) => hint,
            Err(e) => {
                let _ = inner.pool.free(handle);
                inc(&self.counters.reject_alloc_fail);
                return Err(StoreReject::AllocFail(e.to_string()));
            }
        };
        if let Some(old) = inner.tree.remove(&offset) {
            self.free_entry(&mut inner, old);
        }
        inner.compressed_bytes += data.len() as u64;
        let seq = inner.lru.add(offset);
        let entry = Entry {
            handle,
            hint,
            length: data.len() as u32,
            referenced: true,
            seq,
            codec: ci,
        };
        if entry.length as usize == PAGE_SIZE {
            inc(&self.counters.stored_incompressible_pages);
        }
        inner.tree.insert(offset, entry);
        inc(&self.counters.stored_pages);
        inc(&self.counters.zswpout);
        Ok(())
    }
}
