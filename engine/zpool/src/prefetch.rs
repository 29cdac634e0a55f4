//! Asking for an object's bytes before they are needed.
//!
//! A random object of a pool larger than the CPU cache is cold, and so are
//! the handle cell and the zspage descriptor that lead to it: a read that
//! walks slot → handle → zspage → object pays one cache miss after another.
//! An [`ObjHint`] is where the object's bytes were when it was written. The
//! caller keeps it beside the handle (zram: in the slot) and calls
//! [`ObjHint::prefetch`] as soon as it has it, so the object's lines arrive
//! while the lookup that finds the object for certain is still under way.
//!
//! A hint is only ever prefetched, never read through: compaction may have
//! moved the object and its old memory may be unmapped since. A prefetch is
//! a hint to the CPU; it does not fault and does not change the program's
//! state, so a stale hint costs a wasted fetch and nothing else.

use crate::PAGE_SIZE;

/// Where an object's bytes were when it was last written (0: unknown).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ObjHint(u64);

impl ObjHint {
    /// No hint: [`ObjHint::prefetch`] does nothing.
    pub const NONE: ObjHint = ObjHint(0);

    /// The hint for an object whose bytes are `obj`.
    pub(crate) fn of(obj: &[u8]) -> Self {
        ObjHint(obj.as_ptr() as usize as u64)
    }

    /// The hint as a word, for keeping it in a table.
    pub fn raw(self) -> u64 {
        self.0
    }

    /// A hint kept with [`ObjHint::raw`].
    pub fn from_raw(v: u64) -> Self {
        ObjHint(v)
    }

    /// Ask for the first `len` bytes (at most a page) at the hint.
    #[inline]
    pub fn prefetch(self, len: usize) {
        if self.0 != 0 {
            prefetch_range(self.0 as usize, len.min(PAGE_SIZE));
        }
    }
}

/// Ask for every cache line of an object at once, before the decompressor
/// walks it: the lines are then fetched in parallel rather than one miss
/// after another.
#[inline]
pub(crate) fn prefetch(obj: &[u8]) {
    prefetch_range(obj.as_ptr() as usize, obj.len());
}

#[inline]
fn prefetch_range(addr: usize, len: usize) {
    #[cfg(target_arch = "x86_64")]
    if len != 0 {
        // Line addresses, computed so that none overflows near the top of
        // the address space.
        let last = addr.saturating_add(len - 1) & !63;
        let mut line = addr & !63;
        loop {
            // SAFETY: PREFETCHT0 is a hint. It never faults, whatever the
            // address (mapped or not), and has no architectural effect; the
            // pointer is never dereferenced. SSE, which provides it, is part
            // of x86_64.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    std::ptr::without_provenance(line),
                )
            };
            if line >= last {
                break;
            }
            line += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (addr, len);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{create, NAMES};

    #[test]
    fn every_pool_hints_where_the_written_object_is() {
        for name in NAMES {
            let pool = create(name, 8usize).unwrap();
            for size in [1, 100, 2000, 3600, pool.max_alloc()] {
                let h = pool.malloc(size).unwrap();
                let hint = pool.write(h, &vec![0xa5; size]).unwrap();
                let mut at = 0u64;
                pool.read(h, &mut |obj| at = obj.as_ptr() as usize as u64)
                    .unwrap();
                assert_eq!(hint.raw(), at, "{name}, {size} bytes");
                hint.prefetch(size);
            }
        }
    }

    #[test]
    fn a_hint_round_trips_and_stale_or_absent_hints_are_harmless() {
        let obj = vec![7u8; 1000];
        let h = ObjHint::of(&obj);
        assert_ne!(h, ObjHint::NONE);
        assert_eq!(ObjHint::from_raw(h.raw()), h);
        h.prefetch(obj.len());
        let stale = h.raw();
        drop(obj);
        // Freed memory, an unmapped address and the null hint: no fault.
        ObjHint::from_raw(stale).prefetch(4096);
        ObjHint::from_raw(0xdead_0000_0000).prefetch(4096);
        ObjHint::NONE.prefetch(4096);
        ObjHint::from_raw(u64::MAX - 10).prefetch(4096);
    }
}
