//! zsmalloc: size classes, multi-page zspages, objects spanning pages,
//! fullness groups and compaction, with the accounting of `mm/zsmalloc.c`
//! (6.3+ rules, `CONFIG_ZSMALLOC_CHAIN_SIZE` configurable 4..=16).
//!
//! Locking follows the kernel's per-class model: each distinct size class has
//! its own `RwLock` holding its zspages, fullness lists and handle table, so
//! objects of different classes never contend. Reads take the class lock
//! shared; allocation, free, writes and compaction take it exclusively.
//! Pool-wide counters are atomics.

mod arena;
pub mod class;
mod compact;
mod shared;
mod state;
mod zspage;

use crate::handle::HandleCodec;
use crate::prefetch::prefetch;
use crate::{Handle, ObjHint, PoolOptions, PoolStats, Zpool, ZpoolError};
use arena::Arena;
pub use arena::{wait_background, ArenaStats};
use class::{ChainRule, ClassTable, CHAIN_SIZE_RANGE};
pub use shared::{map_shared, memfd, RegionView, SharedRegion};
use state::{ClassState, ObjLoc};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use zspage::NIL;

/// Per-class figures, as `/sys/kernel/debug/zsmalloc/<pool>/classes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClassStat {
    /// Raw class index (the largest index merged into the class).
    pub index: usize,
    pub size: usize,
    pub pages_per_zspage: usize,
    pub objs_per_zspage: usize,
    /// Existing zspages.
    pub zspages: u64,
    /// Chunks in existing zspages.
    pub obj_allocated: u64,
    /// Allocated objects.
    pub obj_used: u64,
    /// `zspages × pages_per_zspage`.
    pub pages_used: u64,
    /// `zs_can_compact`: pages compaction could free now.
    pub freeable: u64,
    /// Zspages per fullness group: 0 %, 0–9 %, 10–19 %, …, 90–99 %, 100 %.
    pub fullness: [u64; 12],
}

/// A zsmalloc pool.
pub struct ZsPool {
    table: ClassTable,
    /// Declared before `arena`: the zspages (owners of arena runs) are
    /// dropped before the arena unmaps its chunks.
    classes: Box<[RwLock<ClassState>]>,
    arena: Arena,
    codec: HandleCodec,
    pages_allocated: AtomicU64,
    objects: AtomicU64,
    bytes_stored: AtomicU64,
    internal_frag: AtomicU64,
    pages_compacted: AtomicU64,
    compaction_in_progress: AtomicBool,
}

fn write_lock(l: &RwLock<ClassState>) -> RwLockWriteGuard<'_, ClassState> {
    l.write().unwrap_or_else(|e| e.into_inner())
}

fn read_lock(l: &RwLock<ClassState>) -> RwLockReadGuard<'_, ClassState> {
    l.read().unwrap_or_else(|e| e.into_inner())
}

impl ZsPool {
    /// A pool with `chain_size` = `CONFIG_ZSMALLOC_CHAIN_SIZE` (4..=16).
    pub fn new(chain_size: usize) -> Result<Self, ZpoolError> {
        Self::with_rule(chain_size, ChainRule::LeastWaste)
    }

    /// A pool whose classes choose pages per zspage by `rule` (6.3+:
    /// [`ChainRule::LeastWaste`]; 6.1 and 6.2: [`ChainRule::MostUsedPercent`]
    /// with a chain of 4).
    pub fn with_rule(chain_size: usize, rule: ChainRule) -> Result<Self, ZpoolError> {
        Self::with_options(PoolOptions {
            chain_size,
            chain_rule: rule,
            ..PoolOptions::default()
        })
    }

    /// A pool with `opts`' chain size, chain rule and page size.
    pub fn with_options(opts: PoolOptions) -> Result<Self, ZpoolError> {
        Self::with_arena(opts, Arena::new())
    }

    /// A recoverable pool: [`ZsPool::with_options`] whose zspages live in
    /// `region` (a memfd that a holder keeps after the process dies). Each
    /// object's bytes are at its [`ObjHint`] address, `region.base()` plus
    /// its offset in the memfd.
    pub fn shared(opts: PoolOptions, region: SharedRegion) -> Result<Self, ZpoolError> {
        Self::with_arena(opts, Arena::shared(region))
    }

    fn with_arena(opts: PoolOptions, arena: Arena) -> Result<Self, ZpoolError> {
        let PoolOptions {
            chain_size,
            chain_rule: rule,
            ..
        } = opts;
        if !CHAIN_SIZE_RANGE.contains(&chain_size) {
            return Err(ZpoolError::InvalidOption(format!(
                "zsmalloc chain size {chain_size} is outside {}..={}",
                CHAIN_SIZE_RANGE.start(),
                CHAIN_SIZE_RANGE.end()
            )));
        }
        let table = ClassTable::for_page(opts.geometry()?, chain_size, rule);
        let classes = (0..table.classes.len())
            .map(|_| RwLock::new(ClassState::new()))
            .collect();
        Ok(ZsPool {
            table,
            classes,
            arena,
            codec: HandleCodec::new(),
            pages_allocated: AtomicU64::new(0),
            objects: AtomicU64::new(0),
            bytes_stored: AtomicU64::new(0),
            internal_frag: AtomicU64::new(0),
            pages_compacted: AtomicU64::new(0),
            compaction_in_progress: AtomicBool::new(false),
        })
    }

    /// The class table (geometry, merging, huge_class_size).
    pub fn class_table(&self) -> &ClassTable {
        &self.table
    }

    /// The zspage memory source: pages mapped, in use, free and resident.
    pub fn arena_stats(&self) -> ArenaStats {
        self.arena.stats()
    }

    /// Per-class figures for every distinct class, ascending size.
    pub fn class_stats(&self) -> Vec<ClassStat> {
        self.table
            .classes
            .iter()
            .zip(self.classes.iter())
            .map(|(c, l)| {
                let st = read_lock(l);
                debug_assert_eq!(st.handles.len() as u64, st.objs_inuse);
                ClassStat {
                    index: c.index,
                    size: c.size,
                    pages_per_zspage: c.pages_per_zspage,
                    objs_per_zspage: c.objs_per_zspage,
                    zspages: st.nr_zspages,
                    obj_allocated: st.objs_allocated,
                    obj_used: st.objs_inuse,
                    pages_used: st.nr_zspages * c.pages_per_zspage as u64,
                    freeable: st.can_compact(c),
                    fullness: st.fullness_histogram(),
                }
            })
            .collect()
    }

    fn locate(&self, h: Handle) -> Result<(usize, u32, u32), ZpoolError> {
        let p = self.codec.decode(h)?;
        if p.shard >= self.classes.len() {
            return Err(ZpoolError::BadHandle(h.0.get()));
        }
        Ok((p.shard, p.slot, p.gen))
    }
}

impl Zpool for ZsPool {
    fn name(&self) -> &'static str {
        "zsmalloc"
    }

    fn malloc(&self, size: usize) -> Result<Handle, ZpoolError> {
        if size == 0 {
            return Err(ZpoolError::ZeroSize);
        }
        if size > self.table.max_alloc_size() {
            return Err(ZpoolError::TooLarge {
                size,
                max: self.table.max_alloc_size(),
            });
        }
        let ci = self.table.class_for_alloc(size);
        let class = &self.table.classes[ci];
        let mut st = write_lock(&self.classes[ci]);
        let (slot, gen) = st.handles.insert(ObjLoc {
            zspage: NIL,
            idx: 0,
            size: size as u32,
        })?;
        let id = match st.find_get_zspage() {
            Some(id) => id,
            None => match st.alloc_zspage(class, &self.arena) {
                Ok(id) => {
                    self.pages_allocated
                        .fetch_add(class.pages_per_zspage as u64, Relaxed);
                    id
                }
                Err(e) => {
                    st.handles.remove(slot, gen);
                    return Err(e);
                }
            },
        };
        let idx = st.zspage_mut(id).obj_malloc(class, slot);
        st.objs_inuse += 1;
        st.fix_fullness(class, id);
        let loc = st.handles.get_mut(slot, gen).expect("just inserted");
        loc.zspage = id;
        loc.idx = idx;
        drop(st);
        self.objects.fetch_add(1, Relaxed);
        self.bytes_stored.fetch_add(size as u64, Relaxed);
        self.internal_frag
            .fetch_add((class.size - size) as u64, Relaxed);
        Ok(self.codec.encode(ci, slot, gen))
    }

    fn free(&self, handle: Handle) -> Result<(), ZpoolError> {
        let (ci, slot, gen) = self.locate(handle)?;
        let class = &self.table.classes[ci];
        let mut st = write_lock(&self.classes[ci]);
        let loc = st
            .handles
            .remove(slot, gen)
            .ok_or(ZpoolError::BadHandle(handle.0.get()))?;
        st.zspage_mut(loc.zspage).obj_free(class, loc.idx);
        st.objs_inuse -= 1;
        if st.fix_fullness(class, loc.zspage) == 0 {
            st.free_zspage(class, loc.zspage, &self.arena);
            self.pages_allocated
                .fetch_sub(class.pages_per_zspage as u64, Relaxed);
        }
        drop(st);
        let size = loc.size as usize;
        self.objects.fetch_sub(1, Relaxed);
        self.bytes_stored.fetch_sub(size as u64, Relaxed);
        self.internal_frag
            .fetch_sub((class.size - size) as u64, Relaxed);
        Ok(())
    }

    fn write(&self, handle: Handle, src: &[u8]) -> Result<ObjHint, ZpoolError> {
        let (ci, slot, gen) = self.locate(handle)?;
        let class = &self.table.classes[ci];
        let mut st = write_lock(&self.classes[ci]);
        let loc = *st
            .handles
            .get(slot, gen)
            .ok_or(ZpoolError::BadHandle(handle.0.get()))?;
        if src.len() != loc.size as usize {
            return Err(ZpoolError::SizeMismatch {
                size: loc.size as usize,
                got: src.len(),
            });
        }
        Ok(st.zspage_mut(loc.zspage).write_obj(class, loc.idx, src))
    }

    fn read(&self, handle: Handle, f: &mut dyn FnMut(&[u8])) -> Result<(), ZpoolError> {
        let (ci, slot, gen) = self.locate(handle)?;
        let class = &self.table.classes[ci];
        let st = read_lock(&self.classes[ci]);
        let loc = *st
            .handles
            .get(slot, gen)
            .ok_or(ZpoolError::BadHandle(handle.0.get()))?;
        let obj = st
            .zspage(loc.zspage)
            .object(class, loc.idx, loc.size as usize);
        prefetch(obj);
        f(obj);
        Ok(())
    }

    fn obj_size(&self, handle: Handle) -> Result<usize, ZpoolError> {
        let (ci, slot, gen) = self.locate(handle)?;
        let st = read_lock(&self.classes[ci]);
        st.handles
            .get(slot, gen)
            .map(|l| l.size as usize)
            .ok_or(ZpoolError::BadHandle(handle.0.get()))
    }

    fn total_pages(&self) -> u64 {
        self.pages_allocated.load(Relaxed)
    }

    /// `zs_compact`: classes from the largest down; a concurrent caller
    /// returns 0 at once.
    fn compact(&self) -> u64 {
        if self.compaction_in_progress.swap(true, Relaxed) {
            return 0;
        }
        let mut freed = 0;
        for (class, lock) in self.table.classes.iter().zip(self.classes.iter()).rev() {
            let mut st = write_lock(lock);
            let n = compact::compact_class(&mut st, class, &self.arena);
            if n > 0 {
                self.pages_allocated.fetch_sub(n, Relaxed);
            }
            freed += n;
        }
        self.pages_compacted.fetch_add(freed, Relaxed);
        self.compaction_in_progress.store(false, Relaxed);
        freed
    }

    fn compactable_pages(&self) -> u64 {
        self.table
            .classes
            .iter()
            .zip(self.classes.iter())
            .map(|(c, l)| read_lock(l).can_compact(c))
            .sum()
    }

    fn stats(&self) -> PoolStats {
        PoolStats {
            objects: self.objects.load(Relaxed),
            pages: self.pages_allocated.load(Relaxed),
            bytes_stored: self.bytes_stored.load(Relaxed),
            internal_frag: self.internal_frag.load(Relaxed),
            pages_compacted: self.pages_compacted.load(Relaxed),
        }
    }

    fn max_alloc(&self) -> usize {
        self.table.max_alloc_size()
    }

    fn huge_class_size(&self) -> usize {
        self.table.huge_class_size
    }

    fn class_index(&self, size: usize) -> usize {
        self.table.lookup_class_index(size)
    }
}

const _: () = assert!(class::ZS_MAX_ALLOC_SIZE == crate::PAGE_SIZE);
