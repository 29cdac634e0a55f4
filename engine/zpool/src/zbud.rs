//! zbud: up to two objects ("buddies") per 4 KiB page, in 64-byte chunks
//! (`mm/zbud.c`, removed from the kernel in 6.15).
//!
//! * The first chunk of each page is the header; 63 chunks are usable.
//! * The first buddy is left-justified right after the header, the last buddy
//!   right-justified at the end of the page.
//! * 63 "unbuddied" lists indexed by free chunks hold pages with one buddy;
//!   pages with two buddies are on the buddied list. Allocation takes the
//!   first page of the first non-empty unbuddied list with enough free chunks,
//!   else a new page. Pages are added at the list head (`list_add`).
//! * Largest object: PAGE_SIZE − header − one chunk = 3968 bytes.
//!
//! One pool lock (the kernel's `pool->lock`); reads take it shared.

use crate::handle::{HandleCodec, HandleTable};
use crate::list::{Linked, Links, Slab};
use crate::page::{alloc_page, Page};
use crate::{Handle, ObjHint, PoolStats, Zpool, ZpoolError, PAGE_SIZE};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Chunk size (`PAGE_SIZE >> NCHUNKS_ORDER`, order 6).
pub const CHUNK_SIZE: usize = 64;
/// Header, rounded up to a chunk.
pub const ZHDR_SIZE_ALIGNED: usize = CHUNK_SIZE;
/// Usable chunks per page.
pub const NCHUNKS: usize = (PAGE_SIZE - ZHDR_SIZE_ALIGNED) / CHUNK_SIZE;
/// Largest object zbud accepts.
pub const ZBUD_MAX_ALLOC: usize = PAGE_SIZE - ZHDR_SIZE_ALIGNED - CHUNK_SIZE;
/// List index of the buddied (full) list, after the 63 unbuddied lists.
const BUDDIED: usize = NCHUNKS;

/// Chunks an object of `size` bytes occupies.
pub fn size_to_chunks(size: usize) -> usize {
    size.div_ceil(CHUNK_SIZE)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bud {
    First,
    Last,
}

#[derive(Debug, Clone, Copy)]
struct Loc {
    page: u32,
    bud: Bud,
    size: u32,
}

struct ZbudPage {
    page: Page,
    first_chunks: usize,
    last_chunks: usize,
    links: Links,
}

impl Linked for ZbudPage {
    fn links(&self) -> &Links {
        &self.links
    }
    fn links_mut(&mut self) -> &mut Links {
        &mut self.links
    }
}

impl ZbudPage {
    fn num_free_chunks(&self) -> usize {
        NCHUNKS - self.first_chunks - self.last_chunks
    }

    fn offset(&self, bud: Bud) -> usize {
        match bud {
            Bud::First => ZHDR_SIZE_ALIGNED,
            Bud::Last => PAGE_SIZE - self.last_chunks * CHUNK_SIZE,
        }
    }
}

struct Inner {
    pages: Slab<ZbudPage>,
    handles: HandleTable<Loc>,
    objects: u64,
    bytes_stored: u64,
    internal_frag: u64,
}

/// A zbud pool.
pub struct ZbudPool {
    inner: RwLock<Inner>,
    codec: HandleCodec,
}

impl Default for ZbudPool {
    fn default() -> Self {
        Self::new()
    }
}

impl ZbudPool {
    pub fn new() -> Self {
        ZbudPool {
            inner: RwLock::new(Inner {
                pages: Slab::new(NCHUNKS + 1),
                handles: HandleTable::new(),
                objects: 0,
                bytes_stored: 0,
                internal_frag: 0,
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

    /// Pages on the unbuddied lists (one buddy) and on the buddied list.
    pub fn page_counts(&self) -> (usize, usize) {
        let g = self.r();
        (
            (0..NCHUNKS).map(|l| g.pages.list_len(l)).sum(),
            g.pages.list_len(BUDDIED),
        )
    }
}

impl Zpool for ZbudPool {
    fn name(&self) -> &'static str {
        "zbud"
    }

    fn malloc(&self, size: usize) -> Result<Handle, ZpoolError> {
        if size == 0 {
            return Err(ZpoolError::ZeroSize);
        }
        if size > ZBUD_MAX_ALLOC {
            return Err(ZpoolError::TooLarge {
                size,
                max: ZBUD_MAX_ALLOC,
            });
        }
        let chunks = size_to_chunks(size);
        let mut g = self.w();
        let g = &mut *g;
        let found = (chunks..NCHUNKS).find_map(|i| g.pages.first(i));
        let (id, bud) = match found {
            Some(id) => {
                g.pages.unlink(id);
                let bud = if g.pages.get(id).first_chunks == 0 {
                    Bud::First
                } else {
                    Bud::Last
                };
                (id, bud)
            }
            None => {
                let page = alloc_page()?;
                let id = g.pages.insert(ZbudPage {
                    page,
                    first_chunks: 0,
                    last_chunks: 0,
                    links: Links::default(),
                });
                (id, Bud::First)
            }
        };
        let (slot, gen) = match g.handles.insert(Loc {
            page: id,
            bud,
            size: size as u32,
        }) {
            Ok(x) => x,
            Err(e) => {
                // Put the page back as it was.
                let p = g.pages.get(id);
                if p.first_chunks == 0 && p.last_chunks == 0 {
                    g.pages.remove(id);
                } else {
                    let free = p.num_free_chunks();
                    g.pages.push_front(free, id);
                }
                return Err(e);
            }
        };
        let p = g.pages.get_mut(id);
        match bud {
            Bud::First => p.first_chunks = chunks,
            Bud::Last => p.last_chunks = chunks,
        }
        if p.first_chunks == 0 || p.last_chunks == 0 {
            let free = p.num_free_chunks();
            g.pages.push_front(free, id);
        } else {
            g.pages.push_front(BUDDIED, id);
        }
        g.objects += 1;
        g.bytes_stored += size as u64;
        g.internal_frag += (chunks * CHUNK_SIZE - size) as u64;
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
        let p = g.pages.get_mut(loc.page);
        let chunks = match loc.bud {
            Bud::First => std::mem::take(&mut p.first_chunks),
            Bud::Last => std::mem::take(&mut p.last_chunks),
        };
        g.pages.unlink(loc.page);
        let p = g.pages.get(loc.page);
        if p.first_chunks == 0 && p.last_chunks == 0 {
            g.pages.remove(loc.page);
        } else {
            let free = p.num_free_chunks();
            g.pages.push_front(free, loc.page);
        }
        g.objects -= 1;
        g.bytes_stored -= u64::from(loc.size);
        g.internal_frag -= (chunks * CHUNK_SIZE) as u64 - u64::from(loc.size);
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

    /// zbud has no compaction.
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
            pages_compacted: 0,
        }
    }

    fn max_alloc(&self) -> usize {
        ZBUD_MAX_ALLOC
    }

    /// The first size zbud cannot hold (3969).
    fn huge_class_size(&self) -> usize {
        ZBUD_MAX_ALLOC + 1
    }

    /// The chunk count of `size` (the unbuddied list it needs).
    fn class_index(&self, size: usize) -> usize {
        size_to_chunks(size)
    }
}
