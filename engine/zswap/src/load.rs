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

#[cfg(test)]
mod tests {
    use crate::engine::Obj;
    use crate::{Backing, Zswap, PAGE_SIZE};
    use zmem_files::testutil::ScratchDir;

    /// Every stored entry keeps where its object is; loads (which prefetch
    /// from it) give the pages back, in every pool.
    #[test]
    fn an_entry_hints_its_object_and_loads_give_the_page_back() {
        let dir = ScratchDir::new("zswap-hint");
        for (i, zpool) in ["zsmalloc", "zbud", "z3fold"].into_iter().enumerate() {
            let backing = Backing::create(dir.join(&format!("b{i}")), 16).unwrap();
            let z = Zswap::builder()
                .compressor("lz4")
                .zpool(zpool)
                .build(backing)
                .unwrap();
            let page = |n: u8| -> Vec<u8> {
                (0..PAGE_SIZE)
                    .map(|j| b"zswap entry hint"[(j + n as usize) % 16] ^ (j / 700) as u8)
                    .collect()
            };
            for n in 0..4u8 {
                z.store(u64::from(n), &page(n)).unwrap();
            }
            {
                let inner = z.lock();
                for e in inner.tree.values() {
                    let Obj::Pool { handle, hint } = e.obj else {
                        panic!("{zpool}: a pool entry expected")
                    };
                    let mut at = 0;
                    inner
                        .pool
                        .read(handle, &mut |obj| at = obj.as_ptr() as usize as u64)
                        .unwrap();
                    assert_eq!(hint.raw(), at, "{zpool}");
                }
            }
            let mut out = vec![0u8; PAGE_SIZE];
            for n in 0..4u8 {
                assert!(z.load(u64::from(n), &mut out, false).unwrap());
                assert_eq!(out, page(n), "{zpool}, page {n}");
            }
        }
    }
}
