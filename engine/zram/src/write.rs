//! The write path (`zram_write_page`) and slot freeing (`zram_free_page`).

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use zmem_codec::{max_compressed, same_filled, CodecError, MAX_COMPRESSED};
use zmem_zpool::ZpoolError;

use crate::device::Meta;
use crate::idle::now_ns;
use crate::slot::{Flag, SlotGuard};
use crate::streams::PRIMARY;
use zmem_device::IoError;

thread_local! {
    /// The compression output buffer (2 x PAGE_SIZE), one per thread like the
    /// kernel's per-CPU stream buffer.
    static COMP_BUF: RefCell<Box<[u8]>> = RefCell::new(vec![0u8; MAX_COMPRESSED].into_boxed_slice());
}

impl Meta {
    /// `zram_free_page` (zram_drv.c): exact side effects, slot locked by the caller.
    pub(crate) fn free_slot(&self, g: &mut SlotGuard<'_>) {
        if let Some(h) = self.release_slot(g) {
            // A failure here means the table and the pool disagree; the slot
            // is dropped either way.
            let _ = self.pool.free(h);
        }
    }

    /// [`Meta::free_slot`] but for the allocator's free: returns the handle
    /// of the slot's object, which the caller frees after the guard drops
    /// (after the slot's commit), so that until then the old object is
    /// whole for a recovery that rolls the slot back (`slot.rs`).
    pub(crate) fn release_slot(&self, g: &mut SlotGuard<'_>) -> Option<zmem_zpool::Handle> {
        let st = &self.stats;
        let mut old = None;
        if self.track_actime {
            g.set_ac_time(0);
        }
        g.clear(Flag::Idle);
        g.clear(Flag::Incompressible);
        g.clear(Flag::PpSlot);
        g.clear(Flag::Fast);
        g.clear(Flag::Unmoved);
        g.set_priority(0);
        if g.test(Flag::Huge) {
            g.clear(Flag::Huge);
            // A WB slot keeps HUGE only for the read path of
            // compressed_writeback; huge_pages already dropped at writeback.
            if !g.test(Flag::Wb) {
                st.huge_pages.fetch_sub(1, Relaxed);
            }
        }
        if g.test(Flag::Wb) {
            g.clear(Flag::Wb);
            self.free_block_bdev(g.handle());
        } else if g.test(Flag::Same) {
            g.clear(Flag::Same);
            st.same_pages.fetch_sub(1, Relaxed);
        } else {
            let h = Meta::handle_of(g.handle())?;
            old = Some(h);
            st.compr_data_size.fetch_sub(g.size() as u64, Relaxed);
        }
        st.pages_stored.fetch_sub(1, Relaxed);
        g.set_handle(0);
        g.set_hint(0);
        g.set_size(0);
        old
    }

    /// Free the object a slot held, once the slot's new contents are committed.
    #[inline]
    pub(crate) fn free_after_commit(&self, old: Option<zmem_zpool::Handle>) {
        if let Some(h) = old {
            let _ = self.pool.free(h);
        }
    }

    /// `zram_accessed`: clear IDLE and PP_SLOT, ac_time := now.
    #[inline]
    pub(crate) fn mark_accessed(&self, g: &mut SlotGuard<'_>) {
        g.clear(Flag::Idle);
        g.clear(Flag::PpSlot);
        if self.track_actime {
            g.set_ac_time(now_ns());
        }
    }

    /// `zram_can_store_page` (zram_drv.c): sample the pool total into the peak,
    /// then compare it with the limit.
    #[inline]
    fn can_store(&self, limit_pages: &AtomicU64) -> bool {
        let total = self.pool.total_pages();
        self.stats.max_used_pages.fetch_max(total, Relaxed);
        let limit = limit_pages.load(Relaxed);
        limit == 0 || total <= limit
    }

    /// At mem_limit, before the write is refused: compact the pool if that
    /// can free pages (zsmalloc's shrinker: `zs_shrinker_count` = Σ
    /// `zs_can_compact`, then `zs_shrinker_scan` = `zs_compact`, counted in
    /// pages_compacted), then check the limit again. The kernel runs that
    /// shrinker from memory reclaim, not from zram's mem_limit check; this is
    /// zmem's stand-in for "the kernel would have compacted by now"
    /// (docs/zram.md, "Compaction").
    #[cold]
    fn compact_then_can_store(&self, limit_pages: &AtomicU64) -> bool {
        if self.pool.compactable_pages() == 0 {
            return false;
        }
        self.pool.compact();
        self.can_store(limit_pages)
    }

    /// Write one full page at `index`; `fast`: compress with the fast
    /// algorithm (when the device has one) instead of the primary.
    pub(crate) fn write_page(
        &self,
        index: usize,
        page: &[u8],
        limit_pages: &AtomicU64,
        fast: bool,
    ) -> Result<(), IoError> {
        debug_assert_eq!(page.len(), self.page);
        if let Some(word) = same_filled(page) {
            let mut g = self.table[index].lock();
            let old = self.release_slot(&mut g);
            g.set(Flag::Same);
            g.set_handle(word);
            self.mark_accessed(&mut g);
            drop(g);
            self.free_after_commit(old);
            self.stats.same_pages.fetch_add(1, Relaxed);
            self.stats.pages_stored.fetch_add(1, Relaxed);
            return Ok(());
        }
        let fast_comp = if fast { self.fast.as_ref() } else { None };
        let fast = fast_comp.is_some();
        let comp = match fast_comp {
            Some(c) => c,
            None => self.comps[PRIMARY]
                .as_ref()
                .ok_or_else(|| IoError::Io("no primary compressor".into()))?,
        };
        COMP_BUF.with(|cell| {
            let mut buf = cell.borrow_mut();
            if buf.len() < max_compressed(self.page) {
                *buf = vec![0u8; max_compressed(self.page)].into_boxed_slice();
            }
            let buf = &mut buf[..max_compressed(self.page)];
            let comp_len = match comp.streams.compress(page, &mut buf[..]) {
                Ok(n) => n,
                // Does not fit even 2 pages: certainly incompressible.
                Err(CodecError::DstTooSmall { .. }) => usize::MAX,
                Err(e) => return Err(IoError::Io(format!("compression failed: {e}"))),
            };
            if comp_len >= self.huge_class_size {
                self.store(index, page, true, 0, fast, limit_pages)
            } else {
                self.store(index, &buf[..comp_len], false, 0, fast, limit_pages)
            }
        })
    }

    /// Allocate, check mem_limit, copy, then replace the slot's old contents
    /// (freed only now, so a failed write keeps them).
    pub(crate) fn store(
        &self,
        index: usize,
        obj: &[u8],
        huge: bool,
        prio: u8,
        fast: bool,
        limit_pages: &AtomicU64,
    ) -> Result<(), IoError> {
        let h = self.pool.malloc(obj.len()).map_err(|e| match e {
            ZpoolError::NoMemory => IoError::NoSpace(format!("allocator out of memory: {e}")),
            e => IoError::Io(format!("allocation of {} bytes failed: {e}", obj.len())),
        })?;
        if !self.can_store(limit_pages) && !self.compact_then_can_store(limit_pages) {
            let _ = self.pool.free(h);
            return Err(IoError::NoSpace(format!(
                "mem_limit of {} bytes reached",
                limit_pages.load(Relaxed) * self.page as u64
            )));
        }
        let hint = match self.pool.write(h, obj) {
            Ok(hint) => hint,
            Err(e) => {
                let _ = self.pool.free(h);
                return Err(IoError::Io(format!("writing the object failed: {e}")));
            }
        };
        let mut g = self.table[index].lock();
        let old = self.release_slot(&mut g);
        if huge {
            g.set(Flag::Huge);
        }
        g.set_handle(h.0.get());
        g.set_hint(hint.raw());
        g.set_size(obj.len());
        g.set_priority(prio);
        if fast {
            g.set(Flag::Fast);
        }
        self.mark_accessed(&mut g);
        drop(g);
        self.free_after_commit(old);
        let st = &self.stats;
        st.pages_stored.fetch_add(1, Relaxed);
        st.compr_data_size.fetch_add(obj.len() as u64, Relaxed);
        if huge {
            st.huge_pages.fetch_add(1, Relaxed);
            st.huge_pages_since.fetch_add(1, Relaxed);
        }
        if fast {
            st.fast_writes.fetch_add(1, Relaxed);
        }
        Ok(())
    }
}
