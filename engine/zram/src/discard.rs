//! DISCARD / WRITE_ZEROES (`zram_bio_discard`) and the swap slot-free notification.

use std::sync::atomic::Ordering::Relaxed;

use crate::device::Meta;

impl Meta {
    /// Free every whole page in `[offset, offset+len)`: a leading partial page
    /// is skipped (nothing happens if the range does not reach the next page
    /// boundary), a trailing partial page is ignored; `notify_free++` per page.
    /// Returns the pages freed.
    pub(crate) fn discard(&self, offset: u64, len: u64) -> u64 {
        let p = self.page as u64;
        let mut index = (offset / p) as usize;
        let off = offset % p;
        let mut n = len;
        if off != 0 {
            if n <= p - off {
                return 0;
            }
            n -= p - off;
            index += 1;
        }
        let mut freed = 0;
        while n >= p {
            let mut g = self.table[index].lock();
            let old = self.release_slot(&mut g);
            drop(g);
            self.free_after_commit(old);
            self.stats.notify_free.fetch_add(1, Relaxed);
            index += 1;
            n -= p;
            freed += 1;
        }
        freed
    }

    /// `zram_slot_free_notify`: count, try-lock, free; a busy slot counts
    /// miss_free and stays allocated.
    pub(crate) fn slot_free_notify(&self, index: usize) -> bool {
        self.stats.notify_free.fetch_add(1, Relaxed);
        match self.table[index].try_lock() {
            Some(mut g) => {
                let old = self.release_slot(&mut g);
                drop(g);
                self.free_after_commit(old);
                true
            }
            None => {
                self.stats.miss_free.fetch_add(1, Relaxed);
                false
            }
        }
    }
}
