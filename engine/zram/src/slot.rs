//! The slot table: one entry per page of disksize, as `zram->table`.
//!
//! An entry is a handle word, a flags word, an access time and (zmem's own)
//! where the object's bytes were written, to prefetch them on a read (see
//! [`zmem_zpool::ObjHint`]). The flags word
//! follows the kernel's 6.15–6.18 layout: the low [`FLAG_SHIFT`] bits hold the
//! object size, the bits above hold the flags in the kernel's order, with the
//! per-slot lock as a flag bit (`ZRAM_ENTRY_LOCK`). Above the flags come the
//! kernel's two priority bits (which of the 4 compressors, primary 0 or
//! secondary 1..3, stored the slot), then one zmem bit, [`Flag::Fast`]: the
//! slot was stored by the device's fast algorithm (a fifth compressor, not a
//! priority), so all four kernel priorities stay available for recompression,
//! and [`Flag::Unmoved`] (precise recompression made no progress). Every field is changed only
//! under the slot lock; the lock is a spin-then-yield bit lock, so slots are
//! independent and there is no table-wide lock.
//!
//! A change is committed when the guard drops, so that a slot table in
//! memory that outlives the process (a recoverable device, `recover.rs`) is
//! never seen half-changed: handle and hint are kept in the guard; a guard
//! that changed them first saves the old handle (or the old object's hint)
//! in the ac_time word and sets [`COMMIT`] in the flags word (old flags
//! kept), then stores handle and hint, then the new flags without
//! [`COMMIT`] (the commit point), then ac_time, then unlocks. A dead
//! process's slot with [`COMMIT`] set is rolled back to its old contents by
//! recovery; one with only the lock bit set is whole (old or new).

use std::sync::atomic::{AtomicU64, Ordering};

/// `ZRAM_FLAG_SHIFT = PAGE_SHIFT + 1`: bits below hold the object size; 17,
/// for the largest page modelled (64 KiB, PAGE_SHIFT 16), at every page size.
pub const FLAG_SHIFT: u32 = 17;
const SIZE_MASK: u64 = (1 << FLAG_SHIFT) - 1;

/// Slot flags, by the kernel's names and order (bit = FLAG_SHIFT + ordinal).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Flag {
    /// Page is one repeated machine word, kept in the handle; nothing allocated.
    Same = 0,
    /// The per-slot lock (never visible through a guard).
    EntryLock = 1,
    /// Data lives on the backing device; handle = block index.
    Wb = 2,
    /// Selected into a post-processing bucket (writeback/recompress).
    PpSlot = 3,
    /// Stored uncompressed.
    Huge = 4,
    /// Not accessed since the last idle marking.
    Idle = 5,
    /// Recompression with the last secondary algorithm made no progress.
    Incompressible = 6,
    // Ordinals 7 and 8 are the two priority bits (ZRAM_COMP_PRIORITY_BIT1/2).
    /// zmem extension: stored by the device's fast algorithm (`fast_algorithm`)
    /// instead of the priority in the priority bits (which are 0 then). Cleared
    /// when the slot is freed or recompressed.
    Fast = 9,
    /// zmem extension: a precise recompression pass (`recompress from=`) found
    /// no progress for this slot; later precise passes skip it, as the kernel's
    /// pass skips INCOMPRESSIBLE slots, so unshrinkable slots (often the
    /// largest, visited first) do not use up every round's `max_pages`.
    /// Cleared when the slot is freed or rewritten.
    Unmoved = 10,
}

impl Flag {
    #[inline]
    pub(crate) const fn bit(self) -> u64 {
        1 << (FLAG_SHIFT + self as u32)
    }
}

const LOCK: u64 = Flag::EntryLock.bit();
/// zmem: a change of handle and hint is being stored (see the file's doc);
/// the flags word still holds the old flags and ac_time the old key.
pub(crate) const COMMIT: u64 = 1 << (FLAG_SHIFT + 11);
/// The flags word's lock and commit bits (never part of a slot's state).
pub(crate) const TRANSIENT: u64 = LOCK | COMMIT;
const PRIO_SHIFT: u32 = FLAG_SHIFT + 7;
const PRIO_MASK: u64 = 0b11 << PRIO_SHIFT;

/// One slot table entry: handle, flags, ac_time and the object hint, 32
/// bytes aligned to 32, so that no entry straddles two cache lines (a read
/// of a cold slot is one miss, not two).
#[derive(Debug, Default, zerocopy::FromZeros)]
#[repr(C, align(32))]
pub struct Slot {
    handle: AtomicU64,
    flags: AtomicU64,
    /// Access time in ns of the device clock; 0 = never / freed.
    ac_time: AtomicU64,
    /// [`zmem_zpool::ObjHint::raw`] of the slot's object; 0 = none (empty,
    /// same-filled and written-back slots).
    hint: AtomicU64,
}

const _: () = assert!(std::mem::size_of::<Slot>() == 32);

impl Slot {
    /// Take the slot lock (spins briefly, then yields).
    #[inline]
    pub fn lock(&self) -> SlotGuard<'_> {
        let mut spins = 0u32;
        loop {
            let f = self.flags.load(Ordering::Relaxed);
            if f & LOCK == 0
                && self
                    .flags
                    .compare_exchange_weak(f, f | LOCK, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return SlotGuard::new(self, f);
            }
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }

    /// Take the lock only if it is free (`zram_slot_trylock`).
    #[inline]
    pub fn try_lock(&self) -> Option<SlotGuard<'_>> {
        let f = self.flags.load(Ordering::Relaxed);
        if f & LOCK != 0 {
            return None;
        }
        self.flags
            .compare_exchange(f, f | LOCK, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| SlotGuard::new(self, f))
    }

    /// The four words as they are in memory (handle, flags, ac_time, hint),
    /// for a recovery that reads a dead process's table.
    pub(crate) fn raw(&self) -> [u64; 4] {
        [
            self.handle.load(Ordering::Acquire),
            self.flags.load(Ordering::Acquire),
            self.ac_time.load(Ordering::Relaxed),
            self.hint.load(Ordering::Relaxed),
        ]
    }

    /// Store the four words exactly (lock and commit bits too): a test's
    /// picture of a process that died mid-change.
    #[cfg(test)]
    pub(crate) fn poke(&self, [handle, flags, ac_time, hint]: [u64; 4]) {
        self.handle.store(handle, Ordering::Relaxed);
        self.flags.store(flags, Ordering::Relaxed);
        self.ac_time.store(ac_time, Ordering::Relaxed);
        self.hint.store(hint, Ordering::Relaxed);
    }

    /// Set the four words of a slot nothing else uses (a table being rebuilt).
    pub(crate) fn set_raw(&self, [handle, flags, ac_time, hint]: [u64; 4]) {
        self.handle.store(handle, Ordering::Relaxed);
        self.ac_time.store(ac_time, Ordering::Relaxed);
        self.hint.store(hint, Ordering::Relaxed);
        self.flags.store(flags & !TRANSIENT, Ordering::Release);
    }
}

/// A locked slot. Field changes are written back when the guard drops
/// (which releases the lock).
pub struct SlotGuard<'a> {
    slot: &'a Slot,
    /// The flags word without the lock bit.
    flags: u64,
    /// The flags word as it was when locked.
    old_flags: u64,
    handle: u64,
    hint: u64,
    /// Whether handle or hint changed (stored by the commit at drop).
    moved: bool,
}

impl Drop for SlotGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        if self.moved {
            self.commit();
        }
        self.slot.flags.store(self.flags & !LOCK, Ordering::Release);
    }
}

impl<'a> SlotGuard<'a> {
    #[inline]
    fn new(slot: &'a Slot, flags: u64) -> Self {
        SlotGuard {
            slot,
            flags,
            old_flags: flags,
            handle: slot.handle.load(Ordering::Relaxed),
            hint: slot.hint.load(Ordering::Relaxed),
            moved: false,
        }
    }

    /// Store a new handle and hint so that a process dying at any point
    /// leaves either the old or the new slot, or one marked [`COMMIT`] with
    /// the old key in ac_time (the file's doc). The caller then unlocks.
    #[cold]
    fn commit(&mut self) {
        let s = self.slot;
        let old_handle = s.handle.load(Ordering::Relaxed);
        let old_key = if old_is_object(self.old_flags) {
            s.hint.load(Ordering::Relaxed)
        } else {
            old_handle
        };
        let ac_time = s.ac_time.load(Ordering::Relaxed);
        s.ac_time.store(old_key, Ordering::Relaxed);
        s.flags
            .store(self.old_flags | LOCK | COMMIT, Ordering::Release);
        s.handle.store(self.handle, Ordering::Relaxed);
        s.hint.store(self.hint, Ordering::Relaxed);
        s.flags.store(self.flags | LOCK, Ordering::Release);
        s.ac_time.store(ac_time, Ordering::Relaxed);
    }
}

/// Whether the flags word `f` describes a slot whose contents are an object
/// of the allocator (found by its hint), rather than a fill word or a
/// backing block in the handle word, or nothing.
pub(crate) fn old_is_object(f: u64) -> bool {
    f & SIZE_MASK != 0 && f & (Flag::Same.bit() | Flag::Wb.bit()) == 0
}

/// The object size held in a flags word.
pub(crate) fn size_of_flags(f: u64) -> usize {
    (f & SIZE_MASK) as usize
}

/// Whether flag `x` is set in a flags word.
pub(crate) fn flags_test(f: u64, x: Flag) -> bool {
    f & x.bit() != 0
}

impl SlotGuard<'_> {
    #[inline]
    pub fn handle(&self) -> u64 {
        self.handle
    }
    #[inline]
    pub fn set_handle(&mut self, h: u64) {
        self.moved |= h != self.handle;
        self.handle = h;
    }
    /// Object size in bytes (0 for empty and same-filled slots).
    #[inline]
    pub fn size(&self) -> usize {
        (self.flags & SIZE_MASK) as usize
    }
    #[inline]
    pub fn set_size(&mut self, size: usize) {
        debug_assert!(size <= 1 << (FLAG_SHIFT - 1));
        self.flags = (self.flags & !SIZE_MASK) | (size as u64 & SIZE_MASK);
    }
    #[inline]
    pub fn test(&self, f: Flag) -> bool {
        self.flags & f.bit() != 0
    }
    #[inline]
    pub fn set(&mut self, f: Flag) {
        debug_assert!(f != Flag::EntryLock);
        self.flags |= f.bit();
    }
    #[inline]
    pub fn clear(&mut self, f: Flag) {
        debug_assert!(f != Flag::EntryLock);
        self.flags &= !f.bit();
    }
    /// Index (0..3) of the algorithm that compressed this slot.
    #[inline]
    pub fn priority(&self) -> u8 {
        ((self.flags & PRIO_MASK) >> PRIO_SHIFT) as u8
    }
    #[inline]
    pub fn set_priority(&mut self, prio: u8) {
        self.flags = (self.flags & !PRIO_MASK) | (((prio & 0b11) as u64) << PRIO_SHIFT);
    }
    /// Where the slot's object was written (a prefetch hint; 0 = none).
    #[inline]
    pub fn hint(&self) -> u64 {
        self.hint
    }
    #[inline]
    pub fn set_hint(&mut self, h: u64) {
        self.moved |= h != self.hint;
        self.hint = h;
    }
    #[inline]
    pub fn ac_time(&self) -> u64 {
        self.slot.ac_time.load(Ordering::Relaxed)
    }
    #[inline]
    pub fn set_ac_time(&mut self, t: u64) {
        self.slot.ac_time.store(t, Ordering::Relaxed)
    }
    /// `zram_allocated`: size != 0 || SAME || WB.
    #[inline]
    pub fn allocated(&self) -> bool {
        self.size() != 0 || self.test(Flag::Same) || self.test(Flag::Wb)
    }
}

/// A snapshot of one slot, for tests and `block_state`-like listings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotInfo {
    pub index: usize,
    pub size: usize,
    pub same: bool,
    pub wb: bool,
    pub huge: bool,
    pub idle: bool,
    pub incompressible: bool,
    pub pp_slot: bool,
    pub priority: u8,
    /// Stored by the fast algorithm (zmem extension flag).
    pub fast: bool,
    /// A precise recompression pass made no progress (zmem extension flag).
    pub unmoved: bool,
    pub ac_time_ns: u64,
}

impl SlotInfo {
    pub(crate) fn of(index: usize, g: &SlotGuard<'_>) -> Self {
        SlotInfo {
            index,
            size: g.size(),
            same: g.test(Flag::Same),
            wb: g.test(Flag::Wb),
            huge: g.test(Flag::Huge),
            idle: g.test(Flag::Idle),
            incompressible: g.test(Flag::Incompressible),
            pp_slot: g.test(Flag::PpSlot),
            priority: g.priority(),
            fast: g.test(Flag::Fast),
            unmoved: g.test(Flag::Unmoved),
            ac_time_ns: g.ac_time(),
        }
    }

    /// The six `block_state` flag characters: s w h i r n.
    pub fn flag_chars(&self) -> String {
        let c = |b: bool, ch: char| if b { ch } else { '.' };
        [
            c(self.same, 's'),
            c(self.wb, 'w'),
            c(self.huge, 'h'),
            c(self.idle, 'i'),
            c(self.priority != 0, 'r'),
            c(self.incompressible, 'n'),
        ]
        .iter()
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_do_not_overlap() {
        let s = Slot::default();
        let mut g = s.lock();
        g.set_size(4096);
        g.set(Flag::Huge);
        g.set_priority(3);
        g.set(Flag::Idle);
        g.set(Flag::Fast);
        assert_eq!(g.size(), 4096);
        assert!(g.test(Flag::Fast));
        g.set_priority(0);
        assert!(
            g.test(Flag::Fast) && !g.test(Flag::Incompressible),
            "priority bits do not touch FAST"
        );
        g.clear(Flag::Fast);
        g.set_priority(3);
        assert_eq!(g.priority(), 3);
        assert!(g.test(Flag::Huge) && g.test(Flag::Idle) && !g.test(Flag::Same));
        assert!(s.try_lock().is_none(), "locked slot refuses try_lock");
        g.set_priority(1);
        g.clear(Flag::Huge);
        assert_eq!(
            (g.size(), g.priority(), g.test(Flag::Huge)),
            (4096, 1, false)
        );
        drop(g);
        let g = s.try_lock().expect("unlocked after drop");
        assert_eq!(
            (g.size(), g.priority(), g.test(Flag::Idle)),
            (4096, 1, true)
        );
    }
}
