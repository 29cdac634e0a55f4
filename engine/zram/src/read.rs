//! The read path (`zram_read_page`); a WB slot is read from the backing
//! device (`writeback.rs`).

use crate::streams::Comp;
use zmem_codec::{fill_page, CodecError};
use zmem_zpool::ObjHint;

use crate::device::Meta;
use crate::slot::{Flag, SlotGuard};
use zmem_device::IoError;

impl Meta {
    /// Read one full page at `index` into `dst`, then mark the slot accessed.
    pub(crate) fn read_page(&self, index: usize, dst: &mut [u8]) -> Result<(), IoError> {
        let mut g = self.table[index].lock();
        let r = self.read_locked(&g, dst);
        if r.is_ok() {
            self.mark_accessed(&mut g);
        }
        r.map_err(|e| IoError::Io(format!("page {index}: {e}")))
    }

    /// Produce the slot's page with the slot locked (`zram_read_from_zspool`):
    /// same-filled/empty → fill, huge → raw copy, else decompress with the
    /// fast compressor (FAST) or the slot's priority.
    pub(crate) fn read_locked(&self, g: &SlotGuard<'_>, dst: &mut [u8]) -> Result<(), String> {
        debug_assert_eq!(dst.len(), self.page);
        if g.test(Flag::Wb) {
            return self.read_from_bdev(g, dst);
        }
        // The object's lines start to arrive while the pool looks it up.
        ObjHint::from_raw(g.hint()).prefetch(g.size());
        let Some(h) = (!g.test(Flag::Same))
            .then(|| Meta::handle_of(g.handle()))
            .flatten()
        else {
            fill_page(dst, g.handle());
            return Ok(());
        };
        let mut res: Result<(), String> = Ok(());
        if g.test(Flag::Huge) {
            self.pool
                .read(h, &mut |src: &[u8]| {
                    if src.len() == self.page {
                        dst.copy_from_slice(src);
                    } else {
                        res = Err(format!("huge object is {} bytes, not a page", src.len()));
                    }
                })
                .map_err(|e| e.to_string())?;
            return res;
        }
        let mut stream = self.comp_of(g)?.streams.get().map_err(|e| e.to_string())?;
        let size = g.size();
        self.pool
            .read(h, &mut |src: &[u8]| {
                let src = &src[..size.min(src.len())];
                res = stream
                    .decompress(src, dst)
                    .map_err(|e: CodecError| format!("decompression failed: {e}"));
            })
            .map_err(|e| e.to_string())?;
        res
    }

    /// The compressor that stored the slot's object: the fast compressor
    /// (FAST) or the one of the slot's priority.
    fn comp_of(&self, g: &SlotGuard<'_>) -> Result<&Comp, String> {
        if g.test(Flag::Fast) {
            return self.fast.as_ref().ok_or_else(|| {
                "slot is flagged FAST, but this device has no fast compressor".to_string()
            });
        }
        let prio = g.priority() as usize;
        self.comps[prio]
            .as_ref()
            .ok_or_else(|| format!("no compressor of priority {prio}"))
    }

    /// Decompress `src` into one page with the algorithm that stored the slot
    /// (the written-back object of a `compressed_writeback` slot).
    pub(crate) fn decompress(
        &self,
        g: &SlotGuard<'_>,
        src: &[u8],
        dst: &mut [u8],
    ) -> Result<(), String> {
        let mut stream = self.comp_of(g)?.streams.get().map_err(|e| e.to_string())?;
        stream
            .decompress(src, dst)
            .map_err(|e: CodecError| format!("decompression failed: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use crate::{RecompressParams, Zram, PAGE_SIZE};
    use zmem_codec::Params;
    use zmem_device::BlockDevice;
    use zmem_files::testutil::ScratchDir;

    /// Text, then random letters: lz4 halves it, zstd does better.
    fn text(seed: u8) -> Vec<u8> {
        let mut x = u64::from(seed).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..PAGE_SIZE)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                match i < PAGE_SIZE / 2 {
                    true => b"slot handle zspage "[(i + seed as usize) % 19],
                    false => b'a' + (x % 16) as u8,
                }
            })
            .collect()
    }

    /// The slot's hint, and where its object really is (0 when it has none).
    fn hint_and_object(d: &Zram, index: usize) -> (u64, u64) {
        let meta = d.meta().clone().unwrap();
        let g = meta.table[index].lock();
        let mut at = 0;
        if let Some(h) = crate::device::Meta::handle_of(g.handle()) {
            if !g.test(crate::slot::Flag::Same) && !g.test(crate::slot::Flag::Wb) {
                meta.pool
                    .read(h, &mut |obj| at = obj.as_ptr() as usize as u64)
                    .unwrap();
            }
        }
        (g.hint(), at)
    }

    #[test]
    fn a_slot_hints_its_object_and_drops_the_hint_when_the_object_goes() {
        let dir = ScratchDir::new("zram-hint");
        let backing = dir.join("backing");
        std::fs::File::create(&backing)
            .unwrap()
            .set_len(16 * PAGE_SIZE as u64)
            .unwrap();
        let d = Zram::builder()
            .algorithm("lz4", Params::default())
            .secondary(1, "zstd", Params::default())
            .backing_dev(&backing)
            .disksize(16 * PAGE_SIZE as u64)
            .build()
            .unwrap();
        let stored = |i| {
            let (hint, at) = hint_and_object(&d, i);
            assert!(
                hint != 0 && hint == at,
                "slot {i}: hint {hint:#x}, object at {at:#x}"
            );
        };
        for i in 0..4 {
            d.write_page(i, &text(i as u8)).unwrap();
            stored(i);
        }
        // Same-filled, discarded and written-back slots have no object.
        d.write_page(0, &[0u8; PAGE_SIZE]).unwrap();
        assert_eq!(hint_and_object(&d, 0), (0, 0));
        d.discard(PAGE_SIZE as u64, PAGE_SIZE as u64).unwrap();
        assert_eq!(hint_and_object(&d, 1), (0, 0));
        d.attr_write("writeback", "page_index=2").unwrap();
        assert_eq!(hint_and_object(&d, 2), (0, 0));
        // A recompressed slot hints its new object; every page reads back.
        d.recompress(&RecompressParams::new()).unwrap();
        assert_eq!(d.slot_info(3).unwrap().priority, 1);
        stored(3);
        let mut back = vec![0u8; PAGE_SIZE];
        for (i, want) in [(0, vec![0u8; PAGE_SIZE]), (2, text(2)), (3, text(3))] {
            d.read_page(i, &mut back).unwrap();
            assert_eq!(back, want, "page {i}");
        }
    }
}
