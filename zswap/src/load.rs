//! `zswap_load`: decompress an entry; exclusive loads erase it (6.18).

use crate::engine::{Zswap, ZswapError};
use crate::stats::inc;
use crate::PAGE_SIZE;

impl Zswap {
    /// Loads the page at `offset` into `out` (PAGE_SIZE bytes). Returns
    /// `Ok(false)` if zswap holds no entry there (the caller reads the backing
    /// store). `exclusive` (6.18's swap-cache path) erases the entry after a
    /// successful load; otherwise the entry stays where it is on the LRU (the
    /// swap-cache bypass of older kernels kept it). No load touches
    /// `referenced`: mm/zswap.c sets it only in `zswap_store_page`. A decompression failure
    /// counts `decompress_fail`, keeps the entry and is an error (-EIO).
    pub fn load(&self, offset: u64, out: &mut [u8], exclusive: bool) -> Result<bool, ZswapError> {
        if out.len() != PAGE_SIZE {
            return Err(ZswapError::BadLength(out.len()));
        }
        let mut inner = self.lock();
        self.pace_worker(&mut inner);
        let Some(e) = inner.tree.get(&offset).copied() else {
            return Ok(false);
        };
        self.read_entry(&inner, offset, &e, out)?;
        inc(&self.counters.zswpin);
        if exclusive {
            inner.tree.remove(&offset);
            self.free_entry(&mut inner, e);
        }
        Ok(true)
    }
}
