//! A zspage: `pages_per_zspage` order-0 pages treated as one byte range cut
//! into `objs_per_zspage` chunks of the class size. Chunks may straddle a
//! page boundary; the pages are virtually contiguous (a run of the pool's
//! arena, `arena.rs`), so a straddling object is still one slice.
//!
//! In-memory layout, as the kernel's:
//! * an allocated non-huge chunk starts with an 8-byte header
//!   `(handle slot << 1) | OBJ_ALLOCATED_TAG`, followed by the object bytes;
//! * a free chunk starts with a link word `next free index << 1` (tag clear),
//!   the last one holding the end marker;
//! * a huge zspage (1 page, 1 object) has no header: the object starts at
//!   byte 0 and its handle slot is kept in the zspage descriptor.

use super::arena::{Arena, Run};
use super::class::{ClassGeom, ZS_HANDLE_SIZE};
use crate::{ObjHint, ZpoolError, PAGE_SIZE};

/// Bit 0 of an allocated chunk's header.
pub(super) const OBJ_ALLOCATED_TAG: u64 = 1;
/// Link word of the last free chunk.
const FREE_END: u64 = u64::MAX << 1;
/// "No object" in `freeobj`.
pub(super) const NO_OBJ: u32 = u32::MAX;
/// "No zspage" in list links.
pub(super) const NIL: u32 = u32::MAX;

pub(super) struct Zspage {
    /// The zspage's `pages_per_zspage` pages, contiguous.
    pub mem: Run,
    /// Allocated objects.
    pub inuse: u32,
    /// Head of the free-object list (index), or `NO_OBJ`.
    pub freeobj: u32,
    /// Fullness group the zspage is filed under (when on a list).
    pub fullness: u8,
    /// Whether the zspage is on a fullness list (false while isolated).
    pub listed: bool,
    pub prev: u32,
    pub next: u32,
    /// Huge zspage: the handle slot of its one object.
    pub huge_slot: u32,
}

impl Zspage {
    /// Allocate the pages and thread all chunks on the free list
    /// (`alloc_zspage` + `init_zspage`).
    pub fn new(class: &ClassGeom, arena: &Arena) -> Result<Self, ZpoolError> {
        let mut z = Zspage {
            mem: arena.alloc(class.zspage_bytes / PAGE_SIZE)?,
            inuse: 0,
            freeobj: 0,
            fullness: 0,
            listed: false,
            prev: NIL,
            next: NIL,
            huge_slot: NO_OBJ,
        };
        if !class.is_huge() {
            for i in 0..class.objs_per_zspage {
                let link = if i + 1 == class.objs_per_zspage {
                    FREE_END
                } else {
                    ((i + 1) as u64) << 1
                };
                z.write_word(i * class.size, link);
            }
        }
        Ok(z)
    }

    fn read_word(&self, off: usize) -> u64 {
        u64::from_ne_bytes(self.mem.bytes()[off..off + 8].try_into().expect("8 bytes"))
    }

    fn write_word(&mut self, off: usize, v: u64) {
        self.mem.bytes_mut()[off..off + 8].copy_from_slice(&v.to_ne_bytes());
    }

    /// The handle slot of chunk `idx` if it is allocated (`find_alloced_obj`).
    pub fn allocated_slot(&self, class: &ClassGeom, idx: usize) -> Option<u32> {
        if class.is_huge() {
            return (self.inuse == 1).then_some(self.huge_slot);
        }
        let w = self.read_word(idx * class.size);
        (w & OBJ_ALLOCATED_TAG != 0).then_some((w >> 1) as u32)
    }

    /// `obj_malloc`: take the first free chunk, tag it with `slot`.
    pub fn obj_malloc(&mut self, class: &ClassGeom, slot: u32) -> u32 {
        let idx = self.freeobj;
        debug_assert_ne!(idx, NO_OBJ, "obj_malloc on a full zspage");
        if class.is_huge() {
            self.freeobj = NO_OBJ;
            self.huge_slot = slot;
        } else {
            let off = idx as usize * class.size;
            let link = self.read_word(off);
            self.freeobj = if link == FREE_END {
                NO_OBJ
            } else {
                (link >> 1) as u32
            };
            self.write_word(off, (u64::from(slot) << 1) | OBJ_ALLOCATED_TAG);
        }
        self.inuse += 1;
        idx
    }

    /// `obj_free`: put chunk `idx` at the head of the free list.
    pub fn obj_free(&mut self, class: &ClassGeom, idx: u32) {
        if class.is_huge() {
            self.huge_slot = NO_OBJ;
        } else {
            let link = if self.freeobj == NO_OBJ {
                FREE_END
            } else {
                u64::from(self.freeobj) << 1
            };
            self.write_word(idx as usize * class.size, link);
        }
        self.freeobj = idx;
        self.inuse -= 1;
    }

    /// Byte offset of the object data of chunk `idx` in the zspage.
    fn data_offset(class: &ClassGeom, idx: u32) -> usize {
        idx as usize * class.size + if class.is_huge() { 0 } else { ZS_HANDLE_SIZE }
    }

    /// The object's bytes, in place (pages are contiguous, so an object
    /// spanning two pages is one slice too).
    #[inline]
    pub fn object(&self, class: &ClassGeom, idx: u32, len: usize) -> &[u8] {
        let off = Self::data_offset(class, idx);
        &self.mem.bytes()[off..off + len]
    }

    /// Write the object's bytes; returns where they are.
    pub fn write_obj(&mut self, class: &ClassGeom, idx: u32, src: &[u8]) -> ObjHint {
        let off = Self::data_offset(class, idx);
        let dst = &mut self.mem.bytes_mut()[off..off + src.len()];
        dst.copy_from_slice(src);
        ObjHint::of(dst)
    }

    /// The whole chunk `idx` (header included), for migration.
    pub fn chunk(&self, class: &ClassGeom, idx: u32) -> &[u8] {
        let off = idx as usize * class.size;
        &self.mem.bytes()[off..off + class.size]
    }

    pub fn write_chunk(&mut self, class: &ClassGeom, idx: u32, src: &[u8]) {
        let off = idx as usize * class.size;
        self.mem.bytes_mut()[off..off + class.size].copy_from_slice(src);
    }

    pub fn is_full(&self, class: &ClassGeom) -> bool {
        self.inuse as usize == class.objs_per_zspage
    }
}

/// Fullness group (`get_fullness_group`, 6.3+): 0 empty, 1..=10 for
/// 0–9 %, …, 90–99 %, 11 full.
pub(super) fn fullness_group(inuse: usize, objs_per_zspage: usize) -> u8 {
    if inuse == 0 {
        0
    } else if inuse == objs_per_zspage {
        11
    } else {
        ((100 * inuse / objs_per_zspage) / 10 + 1) as u8
    }
}

/// Number of fullness groups (ZS_INUSE_RATIO_0 … ZS_INUSE_RATIO_100).
pub(super) const NR_FULLNESS_GROUPS: usize = 12;
/// ZS_INUSE_RATIO_10.
pub(super) const RATIO_10: u8 = 1;
/// ZS_INUSE_RATIO_99.
pub(super) const RATIO_99: u8 = 10;
