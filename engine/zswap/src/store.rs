//! `zswap_store`: limit check, compression, allocation, LRU insertion.

use zmem_codec::{MAX_COMPRESSED, PAGE_SIZE};
use zmem_zpool::ZpoolError;

use zmem_kernel::SameFilled;

use crate::engine::{Entry, Inner, Obj, Zswap};
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

        if let Some(word) = self.same_filled_entry(page) {
            let mut inner = self.lock();
            inc(&self.counters.same_filled_pages);
            self.insert(&mut inner, offset, Obj::Same(word), 0, 0);
            return Ok(());
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
        // Before 6.5, zbud and z3fold objects begin with the swap entry
        // (`struct zswap_header`); the allocator refuses what does not fit.
        let hlen = self.header_bytes(&inner);
        let handle = match inner.pool.malloc(hlen + data.len()) {
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
        let object: std::borrow::Cow<[u8]> = if hlen == 0 {
            data.into()
        } else {
            let mut o = offset.to_ne_bytes()[..hlen.min(8)].to_vec();
            o.resize(hlen, 0);
            o.extend_from_slice(data);
            o.into()
        };
        let hint = match inner.pool.write(handle, &object) {
            Ok(hint) => hint,
            Err(e) => {
                let _ = inner.pool.free(handle);
                inc(&self.counters.reject_alloc_fail);
                return Err(StoreReject::AllocFail(e.to_string()));
            }
        };
        if data.len() == PAGE_SIZE {
            inc(&self.counters.stored_incompressible_pages);
        }
        let obj = Obj::Pool { handle, hint };
        self.insert(&mut inner, offset, obj, data.len(), ci);
        Ok(())
    }

    /// The word of a page this kernel's zswap keeps as a same-filled entry
    /// (any word before 6.10, only zero in 6.10 and 6.11, none after:
    /// [`SameFilled`]).
    fn same_filled_entry(&self, page: &[u8]) -> Option<u64> {
        let word = zmem_codec::same_filled(page)?;
        match self.kernel.zswap_same_filled() {
            SameFilled::AnyWord => Some(word),
            SameFilled::ZeroOnly => (word == 0).then_some(word),
            SameFilled::Zeromap => None,
        }
    }

    /// Puts a new entry at `offset`, replacing (and freeing) an old one
    /// (`duplicate_entry` in kernels that count it); a pool object goes on
    /// the LRU's head.
    fn insert(&self, inner: &mut Inner, offset: u64, obj: Obj, length: usize, codec: usize) {
        if let Some(old) = inner.tree.remove(&offset) {
            inc(&self.counters.duplicate_entry);
            self.free_entry(inner, old);
        }
        inner.compressed_bytes += length as u64;
        let seq = match obj {
            Obj::Pool { .. } => inner.lru.add(offset),
            Obj::Same(_) => 0,
        };
        let entry = Entry {
            obj,
            length: length as u32,
            referenced: true,
            seq,
            codec,
        };
        inner.tree.insert(offset, entry);
        inc(&self.counters.stored_pages);
        inc(&self.counters.zswpout);
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::Obj;
    use crate::{Backing, Source, Zswap, PAGE_SIZE};
    use zmem_files::testutil::ScratchDir;
    use zmem_kernel::KernelModel;

    fn engine(dir: &ScratchDir, kernel: &str, zpool: &str) -> Zswap {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let backing = Backing::create(dir.join(&format!("{kernel}-{zpool}-{n}")), 16).unwrap();
        Zswap::builder()
            .kernel(KernelModel::parse(kernel).unwrap())
            .compressor("lz4")
            .zpool(zpool)
            .build(backing)
            .unwrap()
    }

    fn filled(word: u64) -> Vec<u8> {
        word.to_ne_bytes().repeat(PAGE_SIZE / 8)
    }

    /// xorshift bytes: lz4 cannot compress them below PAGE_SIZE.
    fn noise(seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..PAGE_SIZE)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    fn text(n: u8) -> Vec<u8> {
        (0..PAGE_SIZE)
            .map(|j| b"the zswap entry of a page"[(j + n as usize) % 25] ^ (j / 300) as u8)
            .collect()
    }

    /// 6.1: a same-filled page (any word) is an entry with no pool object,
    /// counted in stored_pages and same_filled_pages; 6.12: a zero page goes
    /// to the zeromap and another same-filled page is compressed.
    #[test]
    fn same_filled_pages_by_version() {
        let dir = ScratchDir::new("zswap-same-filled");
        let mut out = vec![0u8; PAGE_SIZE];
        let old = engine(&dir, "6.1", "zsmalloc");
        assert_eq!(old.swap_out(0, &filled(0)).unwrap(), Source::Pool);
        assert_eq!(old.swap_out(1, &filled(0x5a5a)).unwrap(), Source::Pool);
        let s = old.stats();
        assert_eq!(
            (s.stored_pages, s.same_filled_pages, s.zero_pages),
            (2, 2, 0)
        );
        assert_eq!((old.pool_pages(), old.lru_len()), (0, 0));
        assert_eq!(old.attr_read("same_filled_pages").unwrap(), "2\n");
        assert_eq!(old.swap_in(1, &mut out, true).unwrap(), Source::Pool);
        assert_eq!(out, filled(0x5a5a));
        old.swap_free(0);
        assert_eq!(old.stats().same_filled_pages, 0);
        assert_eq!(old.stats().stored_pages, 0);

        let ten = engine(&dir, "6.10", "zsmalloc");
        ten.swap_out(0, &filled(0)).unwrap();
        ten.swap_out(1, &filled(0x5a5a)).unwrap();
        assert_eq!(ten.stats().same_filled_pages, 1);
        assert_eq!(ten.lru_len(), 1, "the non-zero page is compressed");

        let new = engine(&dir, "6.12", "zsmalloc");
        assert_eq!(new.swap_out(0, &filled(0)).unwrap(), Source::Zero);
        assert_eq!(new.swap_out(1, &filled(0x5a5a)).unwrap(), Source::Pool);
        let s = new.stats();
        assert_eq!(
            (s.stored_pages, s.same_filled_pages, s.zero_pages),
            (1, 0, 1)
        );
        assert_eq!(new.lru_len(), 1);
        let e = new.attr_read("same_filled_pages").unwrap_err();
        assert_eq!(e.errno, crate::Errno::ENOENT);
    }

    /// A page that does not compress: rejected to the backing file before
    /// 6.18 (reject_compress_poor), kept as-is from 6.18 on.
    #[test]
    fn incompressible_pages_by_version() {
        let dir = ScratchDir::new("zswap-incompressible");
        let mut out = vec![0u8; PAGE_SIZE];
        for (kernel, source) in [("6.1", Source::Backing), ("6.12", Source::Backing)] {
            let z = engine(&dir, kernel, "zsmalloc");
            assert_eq!(z.swap_out(3, &noise(7)).unwrap(), source, "{kernel}");
            let s = z.stats();
            assert_eq!((s.stored_pages, s.backing_writes), (0, 1), "{kernel}");
            assert_eq!(
                s.reject_compress_poor + s.reject_compress_fail,
                1,
                "{kernel}"
            );
            assert_eq!(z.swap_in(3, &mut out, true).unwrap(), Source::Backing);
            assert_eq!(out, noise(7));
        }
        for kernel in ["6.18", "7.3"] {
            let z = engine(&dir, kernel, "zsmalloc");
            assert_eq!(z.swap_out(3, &noise(7)).unwrap(), Source::Pool, "{kernel}");
            assert_eq!(z.stats().stored_incompressible_pages, 1);
            assert_eq!(z.attr_read("stored_incompressible_pages").unwrap(), "1\n");
        }
        let e = engine(&dir, "6.12", "zsmalloc").attr_read("stored_incompressible_pages");
        assert_eq!(e.unwrap_err().errno, crate::Errno::ENOENT);
    }

    /// Before 6.5 a zbud object is the 8-byte zswap_header and the
    /// compressed page; zsmalloc's never had it. The page reads back.
    #[test]
    fn zswap_header_in_zbud_before_6_5() {
        let dir = ScratchDir::new("zswap-header");
        let mut out = vec![0u8; PAGE_SIZE];
        for (kernel, zpool, hlen) in [
            ("6.1", "zbud", 8),
            ("6.1", "zsmalloc", 0),
            ("6.5", "zbud", 0),
        ] {
            let z = engine(&dir, kernel, zpool);
            z.store(5, &text(1)).unwrap();
            {
                let inner = z.lock();
                let e = inner.tree[&5];
                let Obj::Pool { handle, .. } = e.obj else {
                    panic!("a pool entry")
                };
                let size = inner.pool.obj_size(handle).unwrap();
                assert_eq!(size, e.length as usize + hlen, "{kernel} {zpool}");
            }
            assert!(z.load(5, &mut out, false).unwrap());
            assert_eq!(out, text(1), "{kernel} {zpool}");
        }
    }

    /// zsmalloc as each version's: 6.1 chains at most 4 pages, so its huge
    /// class starts lower than 6.12's.
    #[test]
    fn zsmalloc_chain_by_version() {
        let dir = ScratchDir::new("zswap-chain");
        let huge = |k: &str| engine(&dir, k, "zsmalloc").lock().pool.huge_class_size();
        assert!(
            huge("6.1") < huge("6.12"),
            "{} {}",
            huge("6.1"),
            huge("6.12")
        );
        assert_eq!(huge("6.12"), huge("7.3"));
    }
}
