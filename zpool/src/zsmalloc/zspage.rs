//! A zspage: `pages_per_zspage` order-0 pages treated as one byte range cut
//! into `objs_per_zspage` chunks of the class size. Chunks may straddle a
//! page boundary.
//!
//! In-memory layout, as the kernel's:
//! * an allocated non-huge chunk starts with an 8-byte header
//!   `(handle slot << 1) | OBJ_ALLOCATED_TAG`, followed by the object bytes;
//! * a free chunk starts with a link word `next free index << 1` (tag clear),
//!   the last one holding the end marker;
//! * a huge zspage (1 page, 1 object) has no header: the object starts at
//!   byte 0 and its handle slot is kept in the zspage descriptor.

use super::class::{ClassGeom, ZS_HANDLE_SIZE};
use crate::page::{alloc_page, Page};
use crate::{ZpoolError, PAGE_SIZE};

/// Bit 0 of an allocated chunk's header.
pub(super) const OBJ_ALLOCATED_TAG: u64 = 1;
/// Link word of the last free chunk.
const FREE_END: u64 = u64::MAX << 1;
/// "No object" in `freeobj`.
pub(super) const NO_OBJ: u32 = u32::MAX;
/// "No zspage" in list links.
pub(super) const NIL: u32 = u32::MAX;

pub(super) struct Zspage {
    pub pages: Box<[Page]>,
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
    pub fn new(class: &ClassGeom) -> Result<Self, ZpoolError> {
        let mut pages = Vec::with_capacity(class.pages_per_zspage);
        for _ in 0..class.pages_per_zspage {
            pages.push(alloc_page()?);
        }
        let mut z = Zspage {
            pages: pages.into_boxed_slice(),
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
        // A header never straddles: chunk offsets are multiples of 16.
        let (p, o) = (off / PAGE_SIZE, off % PAGE_SIZE);
        u64::from_ne_bytes(self.pages[p][o..o + 8].try_into().expect("8 bytes"))
    }

    fn write_word(&mut self, off: usize, v: u64) {
        let (p, o) = (off / PAGE_SIZE, off % PAGE_SIZE);
        self.pages[p][o..o + 8].copy_from_slice(&v.to_ne_bytes());
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

    /// The object bytes if they lie in one page.
    pub fn contiguous(&self, class: &ClassGeom, idx: u32, len: usize) -> Option<&[u8]> {
        let off = Self::data_offset(class, idx);
        let (p, o) = (off / PAGE_SIZE, off % PAGE_SIZE);
        (o + len <= PAGE_SIZE).then(|| &self.pages[p][o..o + len])
    }

    /// Copy `dst.len()` bytes starting at zspage byte `off` (may straddle).
    fn copy_out_at(&self, off: usize, dst: &mut [u8]) {
        let (p, o) = (off / PAGE_SIZE, off % PAGE_SIZE);
        let first = dst.len().min(PAGE_SIZE - o);
        dst[..first].copy_from_slice(&self.pages[p][o..o + first]);
        if first < dst.len() {
            let rest = dst.len() - first;
            dst[first..].copy_from_slice(&self.pages[p + 1][..rest]);
        }
    }

    fn copy_in_at(&mut self, off: usize, src: &[u8]) {
        let (p, o) = (off / PAGE_SIZE, off % PAGE_SIZE);
        let first = src.len().min(PAGE_SIZE - o);
        self.pages[p][o..o + first].copy_from_slice(&src[..first]);
        if first < src.len() {
            let rest = src.len() - first;
            self.pages[p + 1][..rest].copy_from_slice(&src[first..]);
        }
    }

    /// Copy the object's bytes out (two partial copies if it straddles).
    pub fn read_obj(&self, class: &ClassGeom, idx: u32, dst: &mut [u8]) {
        self.copy_out_at(Self::data_offset(class, idx), dst);
    }

    /// Write the object's bytes (two partial copies if it straddles).
    pub fn write_obj(&mut self, class: &ClassGeom, idx: u32, src: &[u8]) {
        self.copy_in_at(Self::data_offset(class, idx), src);
    }

    /// The whole chunk `idx` (header included), for migration.
    pub fn read_chunk(&self, class: &ClassGeom, idx: u32, dst: &mut [u8]) {
        self.copy_out_at(idx as usize * class.size, &mut dst[..class.size]);
    }

    pub fn write_chunk(&mut self, class: &ClassGeom, idx: u32, src: &[u8]) {
        self.copy_in_at(idx as usize * class.size, &src[..class.size]);
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
