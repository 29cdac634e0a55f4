//! The read path (`zram_read_page`); a WB slot is read from the backing
//! device (`writeback.rs`).

use crate::streams::Comp;
use zmem_codec::{fill_page, CodecError, PAGE_SIZE};

use crate::device::Meta;
use crate::slot::{Flag, SlotGuard};
use zmem_sysfs::IoError;

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
        debug_assert_eq!(dst.len(), PAGE_SIZE);
        if g.test(Flag::Wb) {
            return self.read_from_bdev(g, dst);
        }
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
                    if src.len() == PAGE_SIZE {
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
    /// (the written-back object of a `writeback_compressed` slot).
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
