//! Handles: an index into a handle table plus a generation counter.
//!
//! The kernel hands out the address of an 8-byte cell (zsmalloc's
//! "zs_handle" slab, z3fold's buddy slots) that holds the object's current
//! location, so that objects can move while handles stay stable. We do the
//! same with a table of cells, and make handles safe to misuse:
//!
//! ```text
//!  63        52 51     44 43                    18 17            0
//! +------------+---------+------------------------+--------------+
//! | pool tag   | shard   | slot (cell index)      | generation   |
//! +------------+---------+------------------------+--------------+
//! ```
//!
//! * `generation` (1..=2^18-1, never 0 so the handle is non-zero) is bumped
//!   when a cell is freed; a stale handle no longer matches. A cell whose
//!   generation would wrap is retired (never reused), so a stale handle can
//!   never alias a later object.
//! * `shard` is the table a cell lives in (zsmalloc: one table per size class,
//!   under that class's lock).
//! * `pool tag` tells pools apart (4095 tags, from a process-wide counter), so
//!   a handle from another pool is rejected in all but contrived cases.

use crate::{Handle, ZpoolError};
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU32, Ordering};

const GEN_BITS: u32 = 18;
const SLOT_BITS: u32 = 26;
const SHARD_BITS: u32 = 8;
const TAG_BITS: u32 = 12;
const GEN_MAX: u32 = (1 << GEN_BITS) - 1;
/// Largest number of cells one table can hold.
pub const MAX_SLOTS: u32 = 1 << SLOT_BITS;
/// Number of shards a handle can address.
pub const MAX_SHARDS: usize = 1 << SHARD_BITS;

const _: () = assert!(GEN_BITS + SLOT_BITS + SHARD_BITS + TAG_BITS == 64);

static NEXT_TAG: AtomicU32 = AtomicU32::new(0);

/// Encodes and checks handles for one pool.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HandleCodec {
    tag: u64,
}

/// A decoded handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HandleParts {
    pub shard: usize,
    pub slot: u32,
    pub gen: u32,
}

impl HandleCodec {
    pub(crate) fn new() -> Self {
        let n = NEXT_TAG.fetch_add(1, Ordering::Relaxed);
        HandleCodec {
            tag: u64::from(n % ((1 << TAG_BITS) - 1) + 1),
        }
    }

    pub(crate) fn encode(&self, shard: usize, slot: u32, gen: u32) -> Handle {
        debug_assert!(shard < MAX_SHARDS && slot < MAX_SLOTS && (1..=GEN_MAX).contains(&gen));
        let v = (self.tag << (64 - TAG_BITS))
            | ((shard as u64) << (SLOT_BITS + GEN_BITS))
            | (u64::from(slot) << GEN_BITS)
            | u64::from(gen);
        Handle(NonZeroU64::new(v).expect("generation is never 0"))
    }

    /// Split a handle; a handle of another pool is `BadHandle`.
    pub(crate) fn decode(&self, h: Handle) -> Result<HandleParts, ZpoolError> {
        let v = h.0.get();
        if v >> (64 - TAG_BITS) != self.tag {
            return Err(ZpoolError::BadHandle(v));
        }
        Ok(HandleParts {
            shard: ((v >> (SLOT_BITS + GEN_BITS)) & ((1 << SHARD_BITS) - 1)) as usize,
            slot: ((v >> GEN_BITS) & ((1 << SLOT_BITS) - 1)) as u32,
            gen: (v & u64::from(GEN_MAX)) as u32,
        })
    }
}

enum Cell<T> {
    Live {
        gen: u32,
        val: T,
    },
    /// Free; `gen` is the generation the next object will get.
    Free {
        gen: u32,
        next: u32,
    },
    /// Generation exhausted: never handed out again.
    Retired,
}

const NIL: u32 = u32::MAX;

/// A table of handle cells holding `T` (the object's location).
pub(crate) struct HandleTable<T> {
    cells: Vec<Cell<T>>,
    free_head: u32,
    live: usize,
}

impl<T> HandleTable<T> {
    pub(crate) fn new() -> Self {
        HandleTable {
            cells: Vec::new(),
            free_head: NIL,
            live: 0,
        }
    }

    /// Number of live cells.
    pub(crate) fn len(&self) -> usize {
        self.live
    }

    /// Store `val` in a free cell; returns (slot, generation).
    pub(crate) fn insert(&mut self, val: T) -> Result<(u32, u32), ZpoolError> {
        let (slot, gen) = if self.free_head != NIL {
            let slot = self.free_head;
            let Cell::Free { gen, next } = self.cells[slot as usize] else {
                unreachable!("free list points at a non-free cell")
            };
            self.free_head = next;
            self.cells[slot as usize] = Cell::Live { gen, val };
            (slot, gen)
        } else {
            let slot = self.cells.len() as u32;
            if slot >= MAX_SLOTS {
                return Err(ZpoolError::NoMemory);
            }
            self.cells
                .try_reserve(1)
                .map_err(|_| ZpoolError::NoMemory)?;
            self.cells.push(Cell::Live { gen: 1, val });
            (slot, 1)
        };
        self.live += 1;
        Ok((slot, gen))
    }

    pub(crate) fn get(&self, slot: u32, gen: u32) -> Option<&T> {
        match self.cells.get(slot as usize) {
            Some(Cell::Live { gen: g, val }) if *g == gen => Some(val),
            _ => None,
        }
    }

    pub(crate) fn get_mut(&mut self, slot: u32, gen: u32) -> Option<&mut T> {
        match self.cells.get_mut(slot as usize) {
            Some(Cell::Live { gen: g, val }) if *g == gen => Some(val),
            _ => None,
        }
    }

    /// The live cell at `slot`, whatever its generation (for relocation by
    /// compaction, which finds cells through object headers).
    pub(crate) fn get_slot_mut(&mut self, slot: u32) -> Option<&mut T> {
        match self.cells.get_mut(slot as usize) {
            Some(Cell::Live { val, .. }) => Some(val),
            _ => None,
        }
    }

    /// Free the cell; `None` if (slot, gen) is not live.
    pub(crate) fn remove(&mut self, slot: u32, gen: u32) -> Option<T> {
        let cell = self.cells.get_mut(slot as usize)?;
        match cell {
            Cell::Live { gen: g, .. } if *g == gen => {}
            _ => return None,
        }
        let next_gen = gen + 1;
        let new = if next_gen > GEN_MAX {
            Cell::Retired
        } else {
            Cell::Free {
                gen: next_gen,
                next: self.free_head,
            }
        };
        let old = std::mem::replace(cell, new);
        if next_gen <= GEN_MAX {
            self.free_head = slot;
        }
        self.live -= 1;
        match old {
            Cell::Live { val, .. } => Some(val),
            _ => unreachable!(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_generation_is_rejected_and_cells_retire() {
        let mut t = HandleTable::new();
        let (s, g) = t.insert(7u32).unwrap();
        assert_eq!(t.get(s, g), Some(&7));
        assert_eq!(t.remove(s, g), Some(7));
        assert_eq!(t.get(s, g), None);
        assert_eq!(t.remove(s, g), None);
        let (s2, g2) = t.insert(8).unwrap();
        assert_eq!((s2, g2), (s, g + 1));
        assert_eq!(t.get(s, g), None);
        // Exhaust the generations of one cell: it retires, a new cell is used.
        let (mut s, mut g) = (s2, g2);
        t.remove(s, g).unwrap();
        loop {
            let (ns, ng) = t.insert(0).unwrap();
            if ns != s {
                assert_eq!(g, GEN_MAX);
                break;
            }
            s = ns;
            g = ng;
            t.remove(s, g).unwrap();
        }
    }

    #[test]
    fn codec_round_trip_and_foreign_pool() {
        let a = HandleCodec::new();
        let b = HandleCodec::new();
        let h = a.encode(200, MAX_SLOTS - 1, GEN_MAX);
        assert_eq!(
            a.decode(h).unwrap(),
            HandleParts {
                shard: 200,
                slot: MAX_SLOTS - 1,
                gen: GEN_MAX
            }
        );
        assert!(matches!(b.decode(h), Err(ZpoolError::BadHandle(_))));
    }
}
