//! A recoverable device: its store (the slot table and the zspages) in two
//! memfds that a holder keeps after the process dies, and the recovery that
//! makes a new device of the same options from a dead one's store.
//!
//! What survives is what is in the memfds: each slot's flags word (size,
//! SAME, HUGE, IDLE, priority, FAST …), its handle word (a same-filled page's
//! fill word) and its hint, the address of its object's bytes in the dead
//! process's mapping of the zspage memfd ([`Store::zspages_base`] + offset).
//! The allocator's own bookkeeping (size classes, zspage lists, handle
//! tables) and the counters are process memory: recovery rebuilds them by
//! copying every object, compressed as it is, into a fresh pool of the new
//! device (no recompression), walking only the table's written pages
//! (`SEEK_DATA`: a sparse 256 GiB device costs what it held). The new store
//! replaces the old one at the holder only when complete, so a recovery that
//! dies is tried again from the same store.
//!
//! A write is durable once its slot is committed (`slot.rs`): the object's
//! bytes are copied into the pool first, the slot's commit is the last
//! store, the old object is freed after it, and the reply is sent after
//! that. A slot found mid-commit ([`crate::slot::COMMIT`]) was an
//! unacknowledged change: it is rolled back to its old contents, whose
//! object is still whole.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::Ordering::Relaxed;

use zmem_kernel::KernelModel;
use zmem_zpool::{RegionView, SharedRegion, Zpool, ZsPool};

use crate::device::Meta;
use crate::idle::now_ns;
use crate::slot::{self, Flag, Slot, COMMIT, TRANSIENT};
use crate::table::SlotTable;

/// Reserve of the zspage memfd per byte of disksize: a pool is at most
/// a little above disksize (a page per object, plus partly used zspages);
/// the reserve is address space and file size, not memory.
const RESERVE_PER_DISKSIZE: u64 = 4;
/// Reserve beyond that, for small devices.
const RESERVE_EXTRA: u64 = 64 << 20;

/// The store of a recoverable device, as a holder keeps it.
#[derive(Debug)]
pub struct Store {
    /// The slot table's memfd (`nr_pages` slots of 32 bytes).
    pub table: OwnedFd,
    /// The zspages' memfd.
    pub zspages: OwnedFd,
    /// Where the device's process mapped the zspage memfd: a slot's hint
    /// minus this is its object's offset in the memfd.
    pub zspages_base: u64,
    /// Slots (pages of disksize).
    pub nr_pages: u64,
}

/// What a recovery found.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RecoverReport {
    /// Slots holding a page (objects and same-filled).
    pub pages: u64,
    /// Objects copied into the new pool.
    pub objects: u64,
    /// Slots found mid-change (an unacknowledged write or discard) and
    /// rolled back to their old contents.
    pub rolled_back: u64,
    /// Slots whose object lies outside the zspage memfd (dropped, empty).
    pub lost: u64,
}

/// The zspage memfd of a recoverable device's pool, as [`Meta`] keeps it.
pub(crate) struct Shared {
    zspages: OwnedFd,
    base: u64,
}

/// A zsmalloc pool in a new memfd sized for `disksize`, as `kernel`'s.
pub(crate) fn shared_pool(
    allocator: &str,
    kernel: &KernelModel,
    disksize: u64,
) -> Result<(Box<dyn Zpool>, Shared), String> {
    let a = allocator.strip_suffix('\n').unwrap_or(allocator);
    if a != "zsmalloc" {
        return Err(format!(
            "a recoverable device needs zsmalloc (recovery finds its objects by address), not {a}"
        ));
    }
    let reserve = disksize
        .saturating_mul(RESERVE_PER_DISKSIZE)
        .saturating_add(RESERVE_EXTRA);
    let region = SharedRegion::create(reserve)
        .map_err(|e| format!("cannot create the zspage memfd of {reserve} bytes: {e}"))?;
    let shared = Shared {
        zspages: region
            .fd()
            .try_clone_to_owned()
            .map_err(|e| format!("dup of the zspage memfd: {e}"))?,
        base: region.base() as u64,
    };
    let o = crate::pool::options(kernel);
    let pool = ZsPool::shared(o, region).map_err(|e| e.to_string())?;
    Ok((Box::new(pool), shared))
}

/// Byte ranges of `fd` (of `len` bytes) that hold data (`SEEK_DATA`/`SEEK_HOLE`).
fn data_extents(fd: BorrowedFd<'_>, len: u64) -> std::io::Result<Vec<(u64, u64)>> {
    let mut out = Vec::new();
    let mut pos = 0u64;
    while pos < len {
        // SAFETY: lseek on an open fd; the offset is checked below.
        let start = unsafe { libc::lseek(fd.as_raw_fd(), pos as libc::off_t, libc::SEEK_DATA) };
        if start < 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::ENXIO) {
                break; // no data past `pos`
            }
            return Err(e);
        }
        // SAFETY: as above.
        let end = unsafe { libc::lseek(fd.as_raw_fd(), start, libc::SEEK_HOLE) };
        if end < 0 {
            return Err(std::io::Error::last_os_error());
        }
        out.push((start as u64, (end as u64).min(len)));
        pos = end as u64;
    }
    Ok(out)
}

/// A dead slot's four words as the state to keep: `(handle, flags, hint)`,
/// rolled back when it was found mid-commit; `None` for an empty slot.
fn settled([handle, flags, ac_time, hint]: [u64; 4]) -> Option<(u64, u64, u64, bool)> {
    let rolled = flags & COMMIT != 0;
    let f = flags & !TRANSIENT & !Flag::PpSlot.bit();
    let (h, hint) = if !rolled {
        (handle, hint)
    } else if slot::old_is_object(f) {
        (0, ac_time)
    } else {
        (ac_time, 0)
    };
    let held = slot::flags_test(f, Flag::Same) || slot::size_of_flags(f) != 0;
    held.then_some((h, f, hint, rolled))
}

impl Meta {
    pub(crate) fn shared_store(&self) -> Option<Store> {
        let s = self.shared.as_ref()?;
        Some(Store {
            table: self.table.fd()?.try_clone_to_owned().ok()?,
            zspages: s.zspages.try_clone().ok()?,
            zspages_base: s.base,
            nr_pages: self.nr_pages() as u64,
        })
    }

    /// Copy the dead device's slots into this (new, empty) one.
    pub(crate) fn recover_from(&self, old: Store) -> Result<RecoverReport, String> {
        if self.shared.is_none() {
            return Err("this device is not recoverable".into());
        }
        if old.nr_pages != self.nr_pages() as u64 {
            return Err(format!(
                "the saved store has {} slots ({} bytes), this device {}",
                old.nr_pages,
                old.nr_pages * self.page as u64,
                self.disksize
            ));
        }
        if self.stats.pages_stored.load(Relaxed) != 0 {
            return Err("this device already holds pages".into());
        }
        let extents = data_extents(old.table.as_fd(), old.nr_pages * 32)
            .map_err(|e| format!("reading the saved slot table: {e}"))?;
        let table = SlotTable::open(old.table, old.nr_pages as usize)
            .map_err(|e| format!("mapping the saved slot table: {e}"))?;
        let view = RegionView::open(old.zspages.as_fd())
            .map_err(|e| format!("mapping the saved zspages: {e}"))?;
        let mut rep = RecoverReport::default();
        let now = if self.track_actime { now_ns() } else { 0 };
        for (start, end) in extents {
            let first = (start / 32) as usize;
            let last = (end.div_ceil(32) as usize).min(table.len());
            for i in first..last {
                self.recover_slot(i, &table[i], &view, old.zspages_base, now, &mut rep)?;
            }
        }
        self.stats
            .max_used_pages
            .fetch_max(self.pool.total_pages(), Relaxed);
        Ok(rep)
    }

    /// One slot of the dead table into the same slot of this one.
    fn recover_slot(
        &self,
        i: usize,
        old: &Slot,
        view: &RegionView,
        base: u64,
        now: u64,
        rep: &mut RecoverReport,
    ) -> Result<(), String> {
        let Some((h, f, hint, rolled)) = settled(old.raw()) else {
            return Ok(());
        };
        rep.rolled_back += u64::from(rolled);
        let st = &self.stats;
        if slot::flags_test(f, Flag::Same) {
            self.table[i].set_raw([h, f, now, 0]);
            st.same_pages.fetch_add(1, Relaxed);
            st.pages_stored.fetch_add(1, Relaxed);
            rep.pages += 1;
            return Ok(());
        }
        let size = slot::size_of_flags(f);
        let bytes = hint
            .checked_sub(base)
            .filter(|_| !slot::flags_test(f, Flag::Wb))
            .and_then(|off| view.bytes(off as usize, size));
        let Some(bytes) = bytes else {
            rep.lost += 1;
            return Ok(());
        };
        let nh = self
            .pool
            .malloc(size)
            .map_err(|e| format!("slot {i}: allocating {size} bytes: {e}"))?;
        let new_hint = self
            .pool
            .write(nh, bytes)
            .map_err(|e| format!("slot {i}: writing the object: {e}"))?;
        self.table[i].set_raw([nh.0.get(), f, now, new_hint.raw()]);
        st.pages_stored.fetch_add(1, Relaxed);
        st.compr_data_size.fetch_add(size as u64, Relaxed);
        if slot::flags_test(f, Flag::Huge) {
            st.huge_pages.fetch_add(1, Relaxed);
            st.huge_pages_since.fetch_add(1, Relaxed);
        }
        rep.pages += 1;
        rep.objects += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Zram;
    use crate::PAGE_SIZE;
    use zmem_device::BlockDevice;

    const PAGES: u64 = 256;

    fn device() -> Zram {
        Zram::builder()
            .recoverable(true)
            .algorithm("lz4", Default::default())
            .disksize(PAGES * PAGE_SIZE as u64)
            .build()
            .unwrap()
    }

    /// A page of kind `k`: same-filled, compressible, or incompressible (huge).
    fn page(seed: u64, k: u64) -> Vec<u8> {
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        match k % 3 {
            0 => vec![seed as u8; PAGE_SIZE],
            1 => (0..PAGE_SIZE)
                .map(|i| {
                    if i % 64 < 8 {
                        next() as u8
                    } else {
                        (i / 64) as u8
                    }
                })
                .collect(),
            _ => (0..PAGE_SIZE).map(|_| next() as u8).collect(),
        }
    }

    fn read(d: &Zram, i: u64) -> Vec<u8> {
        let mut b = vec![0u8; PAGE_SIZE];
        d.read_at(i * PAGE_SIZE as u64, &mut b).unwrap();
        b
    }

    /// The state fields of mm_stat (what is stored, not its history).
    fn held(d: &Zram) -> [u64; 4] {
        let m = d.mm_stat();
        [
            m.orig_data_size,
            m.compr_data_size,
            m.same_pages,
            m.huge_pages,
        ]
    }

    #[test]
    fn a_recovered_device_reads_back_every_page_with_the_same_mm_stat() {
        let d = device();
        let mut model = vec![vec![0u8; PAGE_SIZE]; PAGES as usize];
        for i in 0..PAGES {
            let p = page(i, i);
            d.write_at(i * PAGE_SIZE as u64, &p).unwrap();
            model[i as usize] = p;
        }
        for i in (0..PAGES).step_by(7) {
            d.discard(i * PAGE_SIZE as u64, PAGE_SIZE as u64).unwrap();
            model[i as usize] = vec![0; PAGE_SIZE];
        }
        for i in (0..PAGES).step_by(5) {
            let p = page(i + 1000, i + 1);
            d.write_at(i * PAGE_SIZE as u64, &p).unwrap();
            model[i as usize] = p;
        }
        let before = (held(&d), d.mm_stat().mem_used_total);
        let store = d.shared_store().expect("a recoverable device has a store");
        drop(d); // the process's own mappings go; the memfds stay
        let r = device();
        let rep = r.recover_from(store).unwrap();
        assert_eq!((rep.rolled_back, rep.lost), (0, 0));
        for i in 0..PAGES {
            assert!(read(&r, i) == model[i as usize], "page {i}");
        }
        assert_eq!(held(&r), before.0, "orig, compr, same, huge");
        assert!(
            r.mm_stat().mem_used_total <= before.1,
            "repacked, never larger"
        );
        assert!(r.mm_stat().mem_used_total > 0);
    }

    /// A slot found mid-commit is rolled back to the old page: the object of
    /// the old page is still whole (freed only after the commit).
    #[test]
    fn a_slot_caught_mid_commit_is_rolled_back() {
        let d = device();
        let (a, b) = (page(1, 1), page(2, 2));
        d.write_at(0, &a).unwrap();
        d.write_at(PAGE_SIZE as u64, &b).unwrap();
        d.write_at(2 * PAGE_SIZE as u64, &page(3, 0)).unwrap();
        {
            let g = d.meta();
            let m = g.as_deref().unwrap();
            // Slot 0 was being changed to slot 1's object when the process
            // died: the old flags and old hint (in ac_time) are what counts.
            let [_, fa, _, hint_a] = m.table[0].raw();
            let [hb, _, _, hint_b] = m.table[1].raw();
            m.table[0].poke([hb, fa | TRANSIENT, hint_a, hint_b]);
            // Slot 2 (same-filled) was being discarded: its fill word is kept.
            let [h2, f2, _, _] = m.table[2].raw();
            m.table[2].poke([0, f2 | TRANSIENT, h2, 0]);
            // Slot 1 was locked by a reader: whole, kept as it is.
            let [h, f, t, hint] = m.table[1].raw();
            m.table[1].poke([h, f | (TRANSIENT & !COMMIT), t, hint]);
        }
        let store = d.shared_store().unwrap();
        drop(d);
        let r = device();
        let rep = r.recover_from(store).unwrap();
        assert_eq!((rep.pages, rep.rolled_back, rep.lost), (3, 2, 0));
        assert!(read(&r, 0) == a, "slot 0 rolled back to its old page");
        assert!(read(&r, 1) == b, "a slot locked by a reader is whole");
        assert!(read(&r, 2) == page(3, 0), "the fill word comes back");
        let mut w = vec![0u8; PAGE_SIZE];
        r.write_at(0, &page(9, 1)).unwrap();
        r.read_at(0, &mut w).unwrap();
        assert!(w == page(9, 1), "the recovered device takes writes");
    }

    #[test]
    fn recovery_refuses_what_does_not_fit() {
        let d = device();
        d.write_at(0, &page(5, 1)).unwrap();
        let other = Zram::builder()
            .recoverable(true)
            .disksize(2 * PAGES * PAGE_SIZE as u64)
            .build()
            .unwrap();
        let e = other.recover_from(d.shared_store().unwrap()).unwrap_err();
        assert!(e.contains("slots"), "{e}");
        let e = d.recover_from(d.shared_store().unwrap()).unwrap_err();
        assert!(e.contains("already holds"), "{e}");
        let plain = Zram::builder().disksize(4096).build().unwrap();
        assert!(plain.shared_store().is_none());
        let e = Zram::builder()
            .recoverable(true)
            .allocator("zbud")
            .disksize(4096)
            .build()
            .unwrap_err();
        assert!(e.message.contains("zsmalloc"), "{}", e.message);
    }

    /// Random writes, overwrites and discards from several threads, a
    /// "death" at a random point with some slots caught mid-commit, then
    /// recovery: every committed page reads back as the model says.
    #[test]
    fn randomized_death_and_recovery_match_the_model() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for round in 0..4 {
            let d = device();
            let mut model = vec![vec![0u8; PAGE_SIZE]; PAGES as usize];
            let ops = 200 + rnd(800);
            for op in 0..ops {
                let i = rnd(PAGES);
                let off = i * PAGE_SIZE as u64;
                if rnd(5) == 0 {
                    d.discard(off, PAGE_SIZE as u64).unwrap();
                    model[i as usize] = vec![0; PAGE_SIZE];
                } else {
                    let p = page(op * 31 + round, rnd(3));
                    d.write_at(off, &p).unwrap();
                    model[i as usize] = p;
                }
            }
            // Unacknowledged changes in flight at the death: slots whose new
            // contents (another slot's object) were being committed.
            {
                let g = d.meta();
                let m = g.as_deref().unwrap();
                for _ in 0..rnd(4) {
                    let (i, j) = (rnd(PAGES) as usize, rnd(PAGES) as usize);
                    let [h, f, _, hint] = m.table[i].raw();
                    let key = if slot::old_is_object(f) { hint } else { h };
                    let [hj, _, _, hintj] = m.table[j].raw();
                    m.table[i].poke([hj, f | TRANSIENT, key, hintj]);
                }
            }
            let before = held(&d);
            let store = d.shared_store().unwrap();
            drop(d);
            let r = device();
            r.recover_from(store).unwrap();
            for i in 0..PAGES {
                assert!(read(&r, i) == model[i as usize], "round {round} page {i}");
            }
            assert_eq!(held(&r), before, "round {round}");
        }
    }
}
