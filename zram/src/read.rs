//! The read path (`zram_read_page`).

use zmem_codec::{fill_page, CodecError, PAGE_SIZE};

use crate::blockdev::IoError;
use crate::device::Meta;
use crate::slot::{Flag, SlotGuard};

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
            return Err("slot is written back, but this device has no backing device".into());
        }
        let Some(h) = (!g.test(Flag::Same)).then(|| Meta::handle_of(g.handle())).flatten() else {
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
        let comp = if g.test(Flag::Fast) {
            self.fast.as_ref().ok_or("slot is flagged FAST, but this device has no fast compressor")?
        } else {
            let prio = g.priority() as usize;
            self.comps[prio].as_ref().ok_or_else(|| format!("no compressor of priority {prio}"))?
        };
        let mut stream = comp.streams.get().map_err(|e| e.to_string())?;
        let size = g.size();
        self.pool
            .read(h, &mut |src: &[u8]| {
                let src = &src[..size.min(src.len())];
                res = stream.decompress(src, dst).map_err(|e: CodecError| format!("decompression failed: {e}"));
            })
            .map_err(|e| e.to_string())?;
        res
    }
}
