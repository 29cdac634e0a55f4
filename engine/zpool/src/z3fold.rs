//! z3fold: up to three objects per 4 KiB page plus headless pages
//! (`mm/z3fold.c`, removed from the kernel in 6.15).
//!
//! * 64-byte chunks; the header takes one chunk (63 usable). FIRST is
//!   left-justified after the header, LAST right-justified at the page end,
//!   MIDDLE starts right after FIRST when placed (`start_middle`).
//! * An object larger than PAGE_SIZE − header − one chunk (3968 bytes) gets a
//!   headless page of its own; larger than PAGE_SIZE is an error.
//! * Pages with a free buddy slot are on 63 unbuddied lists indexed by the
//!   largest free run (`num_free_chunks`); allocation takes the first page of
//!   the first list with enough chunks and picks the buddy as the kernel's
//!   `get_free_buddy`.
//! * When an object is freed and the page is not empty, the page is compacted
//!   at once (the kernel queues this work; we run it synchronously): a page
//!   left with one object (and no foreign objects) moves it into another page
//!   with room and is released (counted in `pages_compacted`); otherwise the
//!   middle object moves toward a free end when that gains ≥ 3 chunks
//!   (`BIG_CHUNK_GAP`), or to the front if it is alone.
//! * Handles are indirect (our handle table stands for the kernel's per-page
//!   buddy slots), so moved objects keep their handles.
//!
//! Simplifications: one set of unbuddied lists instead of per-CPU lists, one
//! pool lock (reads shared) instead of per-page locks.

use crate::handle::{HandleCodec, HandleTable};
use crate::list::{Linked, Links, Slab};
use crate::page::{alloc_page, Page};
use crate::{Handle, ObjHint, PoolStats, Zpool, ZpoolError, PAGE_SIZE};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Chunk size.
pub const CHUNK_SIZE: usize = 64;
/// Header, rounded up to a chunk.
pub const ZHDR_SIZE_ALIGNED: usize = CHUNK_SIZE;
/// Header chunks.
pub const ZHDR_CHUNKS: usize = 1;
/// Chunks per page.
pub const TOTAL_CHUNKS: usize = PAGE_SIZE / CHUNK_SIZE;
/// Usable chunks per page.
pub const NCHUNKS: usize = TOTAL_CHUNKS - ZHDR_CHUNKS;
/// Minimum gain (chunks) for moving the middle object.
pub const BIG_CHUNK_GAP: usize = 3;
/// Objects larger than this get a headless page.
pub const HEADLESS_THRESHOLD: usize = PAGE_SIZE - ZHDR_SIZE_ALIGNED - CHUNK_SIZE;

/// Chunks an object of `size` bytes occupies.
pub fn size_to_chunks(size: usize) -> usize {
    size.div_ceil(CHUNK_SIZE)
}

const HEADLESS: usize = 0;
const FIRST: usize = 1;
const MIDDLE: usize = 2;
const LAST: usize = 3;
const NO_SLOT: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
struct Loc {
    page: u32,
    bud: usize,
    size: u32,
    /// Moved in from another page (counted in that page's `foreign`).
    foreign: bool,
}

struct Z3Page {
    page: Page,
    headless: bool,
    first_chunks: usize,
    middle_chunks: usize,
    last_chunks: usize,
    start_middle: usize,
    /// Handle slot of each buddy (index by HEADLESS/FIRST/MIDDLE/LAST).
    slots: [u32; 4],
    /// Objects moved in from other pages (`foreign_handles`).
    foreign: u32,
    links: Links,
}

impl Linked for Z3Page {
    fn links(&self) -> &Links {
        &self.links
    }
    fn links_mut(&mut self) -> &mut Links {
        &mut self.links
    }
}

impl Z3Page {
    fn new(page: Page, headless: bool) -> Self {
        Z3Page {
            page,
            headless,
            first_chunks: 0,
            middle_chunks: 0,
            last_chunks: 0,
            start_middle: 0,
            slots: [NO_SLOT; 4],
            foreign: 0,
            links: Links::default(),
        }
    }

    fn num_free_chunks(&self) -> usize {
        if self.middle_chunks != 0 {
            let before = if self.first_chunks != 0 {
                0
            } else {
                self.start_middle - ZHDR_CHUNKS
            };
            let after = if self.last_chunks != 0 {
                0
            } else {
                TOTAL_CHUNKS - (self.start_middle + self.middle_chunks)
            };
            before.max(after)
        } else {
            NCHUNKS - self.first_chunks - self.last_chunks
        }
    }

    /// `get_free_buddy`; HEADLESS means none fits.
    fn free_buddy(&self, chunks: usize) -> usize {
        if self.middle_chunks != 0 {
            if self.first_chunks == 0 && chunks <= self.start_middle - ZHDR_CHUNKS {
                FIRST
            } else if self.last_chunks == 0 {
                LAST
            } else {
                HEADLESS
            }
        } else if self.first_chunks == 0 {
            FIRST
        } else if self.last_chunks == 0 {
            LAST
        } else {
            MIDDLE
        }
    }

    /// Place an object of `chunks` in buddy `bud`.
    fn set_bud(&mut self, bud: usize, chunks: usize, slot: u32) {
        match bud {
            FIRST => self.first_chunks = chunks,
            LAST => self.last_chunks = chunks,
            _ => {
                self.middle_chunks = chunks;
                self.start_middle = self.first_chunks + ZHDR_CHUNKS;
            }
        }
        self.slots[bud] = slot;
    }

    fn chunks_of(&self, bud: usize) -> usize {
        match bud {
            FIRST => self.first_chunks,
            MIDDLE => self.middle_chunks,
            LAST => self.last_chunks,
            _ => TOTAL_CHUNKS,
        }
    }

    fn offset(&self, bud: usize) -> usize {
        match bud {
            HEADLESS => 0,
            FIRST => ZHDR_SIZE_ALIGNED,
            MIDDLE => self.start_middle * CHUNK_SIZE,
            _ => PAGE_SIZE - self.last_chunks * CHUNK_SIZE,
        }
    }

    fn is_empty(&self) -> bool {
        self.first_chunks == 0 && self.middle_chunks == 0 && self.last_chunks == 0
    }

    fn buddies(&self) -> usize {
        [self.first_chunks, self.middle_chunks, self.last_chunks]
            .iter()
            .filter(|&&c| c != 0)
            .count()
    }

    /// `mchunk_memmove`: move the middle object to chunk `dst`.
    fn move_middle(&mut self, dst: usize) {
        let src = self.start_middle * CHUNK_SIZE;
        let len = self.middle_chunks * CHUNK_SIZE;
        self.page.copy_within(src..src + len, dst * CHUNK_SIZE);
    }
}

struct Inner {
    pages: Slab<Z3Page>,
    handles: HandleTable<Loc>,
    objects: u64,
    bytes_stored: u64,
    internal_frag: u64,
    pages_compacted: u64,
}

impl Inner {
    /// `add_to_unbuddied`: file a page that has a free buddy slot.
    fn add_to_unbuddied(&mut self, id: u32) {
        let p = self.pages.get(id);
        if p.first_chunks == 0 || p.last_chunks == 0 || p.middle_chunks == 0 {
            let free = p.num_free_chunks();
            self.pages.push_front(free, id);
        }
    }

    /// `__z3fold_alloc`: take the first page with ≥ `chunks` free chunks.
    fn find_page(&mut self, chunks: usize) -> Option<u32> {
        let id = (chunks..NCHUNKS).find_map(|i| self.pages.first(i))?;
        self.pages.unlink(id);
        Some(id)
    }

    /// `z3fold_compact_page`: in-page move of the middle object.
    fn compact_in_page(&mut self, id: u32) {
        let p = self.pages.get_mut(id);
        if p.middle_chunks == 0 {
            return;
        }
        if p.first_chunks == 0 && p.last_chunks == 0 {
            // Alone: move to the front; it becomes FIRST.
            p.move_middle(ZHDR_CHUNKS);
            p.first_chunks = p.middle_chunks;
            p.middle_chunks = 0;
            p.start_middle = 0;
            let slot = std::mem::replace(&mut p.slots[MIDDLE], NO_SLOT);
            p.slots[FIRST] = slot;
            self.handles
                .get_slot_mut(slot)
                .expect("middle object has a live handle")
                .bud = FIRST;
            return;
        }
        if p.first_chunks != 0
            && p.last_chunks == 0
            && p.start_middle - (p.first_chunks + ZHDR_CHUNKS) >= BIG_CHUNK_GAP
        {
            let dst = p.first_chunks + ZHDR_CHUNKS;
            p.move_middle(dst);
            p.start_middle = dst;
        } else if p.last_chunks != 0
            && p.first_chunks == 0
            && TOTAL_CHUNKS - (p.last_chunks + p.start_middle + p.middle_chunks) >= BIG_CHUNK_GAP
        {
            let dst = TOTAL_CHUNKS - p.last_chunks - p.middle_chunks;
            p.move_middle(dst);
            p.start_middle = dst;
        }
    }

    /// `compact_single_buddy`: move the one object of page `id` into another
    /// page with room. Returns true if moved (page `id` is then empty).
    fn compact_single_buddy(&mut self, id: u32) -> bool {
        let p = self.pages.get(id);
        let Some(bud) = [FIRST, MIDDLE, LAST]
            .into_iter()
            .find(|&b| p.chunks_of(b) != 0 && p.slots[b] != NO_SLOT)
        else {
            return false;
        };
        let chunks = p.chunks_of(bud);
        let slot = p.slots[bud];
        let Some(new) = self.find_page(chunks) else {
            return false;
        };
        let new_bud = self.pages.get(new).free_buddy(chunks);
        if new_bud == HEADLESS {
            self.add_to_unbuddied(new);
            return false;
        }
        let (old_p, new_p) = self.pages.get2_mut(id, new);
        new_p.set_bud(new_bud, chunks, slot);
        new_p.foreign += 1;
        let (src, dst) = (old_p.offset(bud), new_p.offset(new_bud));
        let len = chunks * CHUNK_SIZE;
        new_p.page[dst..dst + len].copy_from_slice(&old_p.page[src..src + len]);
        match bud {
            FIRST => old_p.first_chunks = 0,
            MIDDLE => old_p.middle_chunks = 0,
            _ => old_p.last_chunks = 0,
        }
        old_p.slots[bud] = NO_SLOT;
        let loc = self
            .handles
            .get_slot_mut(slot)
            .expect("moved object has a live handle");
        loc.page = new;
        loc.bud = new_bud;
        loc.foreign = true;
        self.add_to_unbuddied(new);
        true
    }

    /// `do_compact_page`, run synchronously after a free.
    fn compact_page(&mut self, id: u32) {
        self.pages.unlink(id);
        let p = self.pages.get(id);
        if p.foreign == 0 && p.buddies() == 1 && self.compact_single_buddy(id) {
            self.pages.remove(id);
            self.pages_compacted += 1;
            return;
        }
        self.compact_in_page(id);
        self.add_to_unbuddied(id);
    }
}

/// A z3fold pool.
pub struct Z3foldPool {
    inner: RwLock<Inner>,
    codec: HandleCodec,
}

impl Default for Z3foldPool {
    fn default() -> Self {
        Self::new()
    }
}

impl Z3foldPool {
    pub fn new() -> Self {
        Z3foldPool {
            inner: RwLock::new(Inner {
                pages: Slab::new(NCHUNKS),
                handles: HandleTable::new(),
                objects: 0,
                bytes_stored: 0,
                internal_frag: 0,
                pages_compacted: 0,
            }),
            codec: HandleCodec::new(),
        }
    }

    fn w(&self) -> RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    fn r(&self) -> RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    fn parts(&self, h: Handle) -> Result<(u32, u32), ZpoolError> {
        let p = self.codec.decode(h)?;
        if p.shard != 0 {
            return Err(ZpoolError::BadHandle(h.0.get()));
        }
        Ok((p.slot, p.gen))
    }

    /// Pages by objects held: [headless, 1 buddy, 2 buddies, 3 buddies].
    pub fn page_histogram(&self) -> [u64; 4] {
        let g = self.r();
        let mut h = [0u64; 4];
        for (_, p) in g.pages.iter() {
            if p.headless {
                h[0] += 1;
            } else {
                h[p.buddies()] += 1;
            }
        }
        h
    }
}

fn frag_of(size: usize) -> u64 {
    if size > HEADLESS_THRESHOLD {
        (PAGE_SIZE - size) as u64
    } else {
        (size_to_chunks(size) * CHUNK_SIZE - size) as u64
    }
}

impl Zpool for Z3foldPool {
    fn name(&self) -> &'static str {
        "z3fold"
    }

    fn malloc(&self, size: usize) -> Result<Handle, ZpoolError> {
        if size == 0 {
            return Err(ZpoolError::ZeroSize);
        }
        if size > PAGE_SIZE {
            return Err(ZpoolError::TooLarge {
                size,
                max: PAGE_SIZE,
            });
        }
        let mut g = self.w();
        let g = &mut *g;
        let (slot, gen) = g.handles.insert(Loc {
            page: 0,
            bud: HEADLESS,
            size: size as u32,
            foreign: false,
        })?;
        let placed = if size > HEADLESS_THRESHOLD {
            alloc_page().map(|page| {
                let mut p = Z3Page::new(page, true);
                p.slots[HEADLESS] = slot;
                (g.pages.insert(p), HEADLESS)
            })
        } else {
            let chunks = size_to_chunks(size);
            let found = g.find_page(chunks).and_then(|id| {
                let bud = g.pages.get(id).free_buddy(chunks);
                if bud == HEADLESS {
                    // Cannot happen given the list invariants; file it back.
                    g.add_to_unbuddied(id);
                    None
                } else {
                    Some((id, bud))
                }
            });
            match found {
                Some(x) => Ok(x),
                None => alloc_page().map(|page| (g.pages.insert(Z3Page::new(page, false)), FIRST)),
            }
            .map(|(id, bud)| {
                g.pages.get_mut(id).set_bud(bud, chunks, slot);
                g.add_to_unbuddied(id);
                (id, bud)
            })
        };
        let (id, bud) = match placed {
            Ok(x) => x,
            Err(e) => {
                g.handles.remove(slot, gen);
                return Err(e);
            }
        };
        let loc = g.handles.get_mut(slot, gen).expect("just inserted");
        loc.page = id;
        loc.bud = bud;
        g.objects += 1;
        g.bytes_stored += size as u64;
        g.internal_frag += frag_of(size);
        Ok(self.codec.encode(0, slot, gen))
    }

    fn free(&self, handle: Handle) -> Result<(), ZpoolError> {
        let (slot, gen) = self.parts(handle)?;
        let mut g = self.w();
        let g = &mut *g;
        let loc = g
            .handles
            .remove(slot, gen)
            .ok_or(ZpoolError::BadHandle(handle.0.get()))?;
        g.objects -= 1;
        g.bytes_stored -= u64::from(loc.size);
        g.internal_frag -= frag_of(loc.size as usize);
        let p = g.pages.get_mut(loc.page);
        if p.headless {
            g.pages.remove(loc.page);
            return Ok(());
        }
        match loc.bud {
            FIRST => p.first_chunks = 0,
            MIDDLE => p.middle_chunks = 0,
            _ => p.last_chunks = 0,
        }
        p.slots[loc.bud] = NO_SLOT;
        if loc.foreign {
            p.foreign -= 1;
        }
        if p.is_empty() {
            g.pages.remove(loc.page);
        } else {
            g.compact_page(loc.page);
        }
        Ok(())
    }

    fn write(&self, handle: Handle, src: &[u8]) -> Result<ObjHint, ZpoolError> {
        let (slot, gen) = self.parts(handle)?;
        let mut g = self.w();
        let loc = *g
            .handles
            .get(slot, gen)
            .ok_or(ZpoolError::BadHandle(handle.0.get()))?;
        if src.len() != loc.size as usize {
            return Err(ZpoolError::SizeMismatch {
                size: loc.size as usize,
                got: src.len(),
            });
        }
        let p = g.pages.get_mut(loc.page);
        let off = p.offset(loc.bud);
        let dst = &mut p.page[off..off + src.len()];
        dst.copy_from_slice(src);
        Ok(ObjHint::of(dst))
    }

    fn read(&self, handle: Handle, f: &mut dyn FnMut(&[u8])) -> Result<(), ZpoolError> {
        let (slot, gen) = self.parts(handle)?;
        let g = self.r();
        let loc = *g
            .handles
            .get(slot, gen)
            .ok_or(ZpoolError::BadHandle(handle.0.get()))?;
        let p = g.pages.get(loc.page);
        let off = p.offset(loc.bud);
        f(&p.page[off..off + loc.size as usize]);
        Ok(())
    }

    fn obj_size(&self, handle: Handle) -> Result<usize, ZpoolError> {
        let (slot, gen) = self.parts(handle)?;
        let g = self.r();
        g.handles
            .get(slot, gen)
            .map(|l| l.size as usize)
            .ok_or(ZpoolError::BadHandle(handle.0.get()))
    }

    fn total_pages(&self) -> u64 {
        self.r().pages.len() as u64
    }

    /// Pages are compacted as objects are freed; there is nothing left for a
    /// pool-wide pass (the kernel's z3fold has none either).
    fn compact(&self) -> u64 {
        0
    }

    fn stats(&self) -> PoolStats {
        let g = self.r();
        PoolStats {
            objects: g.objects,
            pages: g.pages.len() as u64,
            bytes_stored: g.bytes_stored,
            internal_frag: g.internal_frag,
            pages_compacted: g.pages_compacted,
        }
    }

    fn max_alloc(&self) -> usize {
        PAGE_SIZE
    }

    /// Objects of at least 3969 bytes take a headless page of their own.
    fn huge_class_size(&self) -> usize {
        HEADLESS_THRESHOLD + 1
    }

    /// The chunk count of `size`.
    fn class_index(&self, size: usize) -> usize {
        size_to_chunks(size)
    }
}
