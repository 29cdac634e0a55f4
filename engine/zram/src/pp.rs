//! Post-processing buckets (`zram_pp_ctl`, zram_drv.c): the slots a
//! recompression (and later a writeback) pass selected, grouped by object
//! size so the largest objects — the ones that free the most allocator
//! memory — are processed first.
//!
//! * bucket width [`PP_BUCKET_SIZE_RANGE`] = 64 bytes, `NUM_PP_BUCKETS` =
//!   PAGE_SIZE/64 + 1 buckets (65 at 4 KiB, 257 at 16 KiB, 1025 at 64 KiB),
//!   bucket id = object size / 64 (HUGE slots, one page, land in the last);
//! * insertion at the head of a bucket, selection from the last bucket down to 0
//!   taking the head: largest first, LIFO within a bucket;
//! * a placed slot carries PP_SLOT; any access or free clears it, so the
//!   processor re-checks it under the slot lock and skips slots that changed;
//! * releasing a slot (processed or not) clears PP_SLOT again.

use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::{AcqRel, Release};

use zmem_codec::PAGE_SIZE;

use crate::device::Meta;
use crate::slot::{Flag, SlotGuard};
use zmem_kernel::{AttrError, Errno};

/// Width of one bucket in bytes.
pub const PP_BUCKET_SIZE_RANGE: usize = 64;
/// `NUM_PP_BUCKETS` = PAGE_SIZE / PP_BUCKET_SIZE_RANGE + 1.
pub const fn num_pp_buckets(page_size: usize) -> usize {
    page_size / PP_BUCKET_SIZE_RANGE + 1
}

/// The selected slots of one post-processing pass.
#[derive(Debug)]
pub struct PpCtl {
    /// Slot indexes per bucket; the end of each Vec is the list head.
    buckets: Vec<Vec<usize>>,
    len: usize,
}

impl Default for PpCtl {
    fn default() -> Self {
        PpCtl::new()
    }
}

impl PpCtl {
    /// `init_pp_ctl` at 4 KiB pages: 65 empty buckets.
    pub fn new() -> Self {
        PpCtl::for_page(PAGE_SIZE)
    }

    /// `init_pp_ctl` for pages of `page_size` bytes.
    pub fn for_page(page_size: usize) -> Self {
        PpCtl {
            buckets: vec![Vec::new(); num_pp_buckets(page_size)],
            len: 0,
        }
    }

    /// Bucket id of an object size.
    pub fn bucket_of(&self, size: usize) -> usize {
        (size / PP_BUCKET_SIZE_RANGE).min(self.buckets.len() - 1)
    }

    /// `place_pp_slot`: insert at the head of the slot's size bucket and set
    /// PP_SLOT (the slot is locked by the caller). Returns false when the
    /// bucket node could not be allocated (the scan then stops).
    pub fn place(&mut self, index: usize, g: &mut SlotGuard<'_>) -> bool {
        let id = self.bucket_of(g.size());
        let b = &mut self.buckets[id];
        if b.try_reserve(1).is_err() {
            return false;
        }
        b.push(index);
        g.set(Flag::PpSlot);
        self.len += 1;
        true
    }

    /// `select_pp_slot`: the head of the highest non-empty bucket.
    pub fn select(&mut self) -> Option<usize> {
        let idx = self.buckets.iter_mut().rev().find_map(|b| b.pop())?;
        self.len -= 1;
        Some(idx)
    }

    /// Number of slots still placed.
    pub fn len(&self) -> usize {
        self.len
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// `release_pp_ctl`: release every slot that was not processed (clear PP_SLOT).
    pub fn release_all(&mut self, meta: &Meta) {
        while let Some(i) = self.select() {
            release_slot(meta, i);
        }
    }
}

impl Meta {
    /// The scan shared by recompress and writeback: every slot of `range`
    /// that is allocated, not WB and not SAME, and not refused by `skip`, is
    /// placed in `ctl` (the scan stops when a bucket node cannot be
    /// allocated, as the kernel's).
    pub(crate) fn scan_pp_slots(
        &self,
        range: std::ops::Range<usize>,
        ctl: &mut PpCtl,
        skip: impl Fn(&SlotGuard<'_>) -> bool,
    ) {
        for index in range {
            let mut g = self.table[index].lock();
            if !g.allocated() || g.test(Flag::Wb) || g.test(Flag::Same) || skip(&g) {
                continue;
            }
            if !ctl.place(index, &mut g) {
                break;
            }
        }
    }

    /// Mark a recompress or writeback pass running (`pp_in_progress`); EAGAIN
    /// when one already is. The pass ends when the guard drops.
    pub(crate) fn begin_pp(&self) -> Result<PpGuard<'_>, AttrError> {
        if self.pp_in_progress.swap(true, AcqRel) {
            return Err(AttrError::new(
                Errno::EAGAIN,
                "another recompress or writeback is running",
            ));
        }
        Ok(PpGuard(&self.pp_in_progress))
    }
}

/// Clears `pp_in_progress` when a pass ends, however it ends.
pub(crate) struct PpGuard<'a>(&'a AtomicBool);

impl Drop for PpGuard<'_> {
    fn drop(&mut self) {
        self.0.store(false, Release);
    }
}

/// `release_pp_slot`: clear PP_SLOT of one slot.
pub fn release_slot(meta: &Meta, index: usize) {
    let mut g = meta.table[index].lock();
    g.clear(Flag::PpSlot);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slot::Slot;

    #[test]
    fn largest_first_lifo_within_bucket() {
        let slots: Vec<Slot> = (0..5).map(|_| Slot::default()).collect();
        let sizes = [100, 4096, 120, 60, 1000];
        let mut ctl = PpCtl::new();
        for (i, s) in slots.iter().enumerate() {
            let mut g = s.lock();
            g.set_size(sizes[i]);
            assert!(ctl.place(i, &mut g));
            assert!(g.test(Flag::PpSlot));
        }
        assert_eq!(num_pp_buckets(PAGE_SIZE), 65);
        assert_eq!(ctl.bucket_of(4096), 64);
        assert_eq!(PpCtl::for_page(16384).bucket_of(16384), 256);
        assert_eq!(num_pp_buckets(65536), 1025);
        // 100 and 120 share bucket 1: slot 2 (inserted last) comes first.
        let order: Vec<usize> = std::iter::from_fn(|| ctl.select()).collect();
        assert_eq!(order, vec![1, 4, 2, 0, 3]);
        assert!(ctl.is_empty());
    }
}
