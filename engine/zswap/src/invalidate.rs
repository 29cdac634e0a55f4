//! `zswap_invalidate`: the swap slot was freed; erase and free its entry.

use crate::engine::{Entry, Inner, Obj, Zswap};
use crate::stats::dec;
use crate::PAGE_SIZE;

impl Zswap {
    /// Erases the entry at `offset`; returns whether there was one.
    pub fn invalidate(&self, offset: u64) -> bool {
        let mut inner = self.lock();
        match inner.tree.remove(&offset) {
            Some(e) => {
                self.free_entry(&mut inner, e);
                true
            }
            None => false,
        }
    }

    /// `zswap_entry_free`: LRU removal, pool free, counters. The entry must
    /// already be out of the tree.
    pub(crate) fn free_entry(&self, inner: &mut Inner, e: Entry) {
        match e.obj {
            Obj::Pool { handle, .. } => {
                inner.lru.remove(e.seq);
                let _ = inner.pool.free(handle);
            }
            Obj::Same(_) => dec(&self.counters.same_filled_pages),
        }
        inner.compressed_bytes -= u64::from(e.length);
        dec(&self.counters.stored_pages);
        if e.length as usize == PAGE_SIZE {
            dec(&self.counters.stored_incompressible_pages);
        }
    }
}
