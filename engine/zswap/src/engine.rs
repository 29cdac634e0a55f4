//! The engine: entries by swap offset, the pool, the LRU, codecs, the backing
//! store, and the swap core around zswap (zeromap, fallback to the backing file).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use zmem_codec::{Params as CodecParams, StreamPool};
use zmem_kernel::{AttrError, ChainRule, Errno, KernelModel, SameFilled};
use zmem_zpool::{Handle, ObjHint, Zpool};

use crate::backing::{Backing, BackingError};
use crate::lru::Lru;
use crate::params::{self, Params, ShrinkWorker};
use crate::pool::{self, Limit};
use crate::stats::{inc, Counters, Stats};
use crate::PAGE_SIZE;

/// Where an entry's page is.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Obj {
    /// An object in the pool.
    Pool {
        handle: Handle,
        /// Where the pool wrote the object: prefetched before the pool looks
        /// it up (zmem's own, see `zmem_zpool::ObjHint`).
        hint: ObjHint,
    },
    /// A same-filled page kept as its word, with no object (kernels before
    /// 6.12, [`SameFilled`]); never on the LRU.
    Same(u64),
}

/// One stored page (`struct zswap_entry`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    pub obj: Obj,
    /// Compressed length; PAGE_SIZE means stored raw (incompressible); 0 a
    /// same-filled page.
    pub length: u32,
    pub referenced: bool,
    /// LRU sequence number.
    pub seq: u64,
    /// Index into [`Zswap::codecs`]: the compressor this entry was stored with.
    pub codec: usize,
}

pub(crate) struct Inner {
    pub tree: HashMap<u64, Entry>,
    pub lru: Lru,
    pub limit: Limit,
    pub pool: Box<dyn Zpool>,
    /// Swap core: offsets whose page is all zeroes (the 6.11+ swap zeromap).
    pub zeromap: HashSet<u64>,
    /// Pages read from the backing store since the shrinker last counted
    /// (the per-lruvec "disk swapins" protection).
    pub disk_swapins: u64,
    /// Σ entry lengths: what the kernel charges to the memory cgroup
    /// (`obj_cgroup_charge_zswap`, `MEMCG_ZSWAP_B`).
    pub compressed_bytes: u64,
    /// [`ShrinkWorker::Paced`]: the run queued by a refused store.
    pub queued_worker: Option<crate::shrink::WorkerState>,
}

/// Build-time configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// RAM size the `max_pool_percent` applies to.
    pub ram_bytes: u64,
    pub params: Params,
    pub worker: ShrinkWorker,
    /// Whether the modelled kernel has memory cgroups enabled (the
    /// `zswap_shrinker_count` formula depends on it).
    pub memcg: bool,
    /// The kernel version whose zswap the engine behaves as.
    pub kernel: KernelModel,
}

/// zswap over a backing store.
pub struct Zswap {
    pub(crate) ram_bytes: u64,
    pub(crate) kernel: KernelModel,
    pub(crate) worker: ShrinkWorker,
    pub(crate) memcg: bool,
    pub(crate) params: RwLock<Params>,
    /// Codecs by name; only grows (entries keep the one they were stored with,
    /// as old zswap pools keep serving their entries after a compressor change).
    pub(crate) codecs: RwLock<Vec<Arc<StreamPool>>>,
    pub(crate) current_codec: RwLock<usize>,
    pub(crate) inner: Mutex<Inner>,
    pub(crate) backing: Backing,
    pub(crate) counters: Counters,
}

impl std::fmt::Debug for Zswap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Zswap")
            .field("params", &self.params())
            .field("stats", &self.stats())
            .finish()
    }
}

/// An engine failure.
#[derive(Debug, thiserror::Error)]
pub enum ZswapError {
    #[error(transparent)]
    Backing(#[from] BackingError),
    #[error("a page is {PAGE_SIZE} bytes, got a buffer of {0}")]
    BadLength(usize),
    #[error("decompression of swap offset {offset} failed: {reason}")]
    Decompress { offset: u64, reason: String },
}

/// Where [`Zswap::swap_in`] found a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The zeromap (page filled with zeroes).
    Zero,
    /// The zswap pool.
    Pool,
    /// The backing file.
    Backing,
    /// Nothing stored at this offset (filled with zeroes).
    Empty,
}

fn mem_total() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| zmem_kernel::proc::meminfo_value(&s, "MemTotal"))
        .unwrap_or(1 << 30)
}

/// Builds a [`Zswap`].
#[derive(Debug, Clone)]
pub struct ZswapBuilder {
    config: Config,
}

impl Default for ZswapBuilder {
    fn default() -> Self {
        ZswapBuilder {
            config: Config {
                ram_bytes: mem_total(),
                params: Params::default(),
                worker: ShrinkWorker::Inline,
                memcg: true,
                kernel: KernelModel::newest(),
            },
        }
    }
}

impl ZswapBuilder {
    /// RAM size for `max_pool_percent` (default: this machine's MemTotal).
    pub fn ram_size(mut self, bytes: u64) -> Self {
        self.config.ram_bytes = bytes;
        self
    }
    pub fn params(mut self, p: Params) -> Self {
        self.config.params = p;
        self
    }
    pub fn compressor(mut self, name: impl Into<String>) -> Self {
        self.config.params.compressor = name.into();
        self
    }
    pub fn zpool(mut self, name: impl Into<String>) -> Self {
        self.config.params.zpool = name.into();
        self
    }
    pub fn max_pool_percent(mut self, pct: u32) -> Self {
        self.config.params.max_pool_percent = pct;
        self
    }
    /// A byte limit instead of the percent of RAM.
    pub fn max_pool_bytes(mut self, bytes: u64) -> Self {
        self.config.params.max_pool_bytes = bytes;
        self
    }
    pub fn accept_threshold_percent(mut self, pct: u32) -> Self {
        self.config.params.accept_threshold_percent = pct;
        self
    }
    pub fn shrinker_enabled(mut self, on: bool) -> Self {
        self.config.params.shrinker_enabled = on;
        self
    }
    pub fn incompressible(mut self, mode: crate::Incompressible) -> Self {
        self.config.params.incompressible = mode;
        self
    }
    pub fn worker(mut self, w: ShrinkWorker) -> Self {
        self.config.worker = w;
        self
    }
    /// `false` models a kernel booted with `cgroup_disable=memory`:
    /// `zswap_shrinker_count` then scales by pool pages instead of the
    /// cgroup's compressed bytes (default `true`).
    pub fn memcg(mut self, on: bool) -> Self {
        self.config.memcg = on;
        self
    }

    /// Behave as the zswap of kernel `kernel` (default: the newest modeled):
    /// its same-filled pages ([`SameFilled`]), what it does with a page that
    /// does not compress (sets [`Params::incompressible`]; a later
    /// [`incompressible`](Self::incompressible) overrides it), the 8-byte
    /// `zswap_header` in zbud and z3fold before 6.5, and zsmalloc's zspage
    /// chain (4 pages and whole-percent usage before 6.3).
    pub fn kernel(mut self, kernel: KernelModel) -> Self {
        self.config.kernel = kernel;
        self.config.params.incompressible = if kernel.zswap_stores_incompressible() {
            crate::Incompressible::Store
        } else {
            crate::Incompressible::Reject
        };
        self
    }

    /// Builds the engine over `backing`. Bad names or values give the
    /// parameter setters' errors.
    pub fn build(self, backing: Backing) -> Result<Zswap, AttrError> {
        let p = self.config.params;
        let backend = params::parse_compressor(&p.compressor)?;
        let zname = params::parse_zpool(&p.zpool)?;
        // accept_threshold_percent is a plain uint in mm/zswap.c (6.18): 150 is
        // accepted (the pool then accepts again as soon as it is below its limit).
        let pool = create_pool(zname, &self.config.kernel)?;
        let codec = StreamPool::new(backend, CodecParams::default())
            .map_err(|e| AttrError::new(Errno::EINVAL, format!("compressor: {e}")))?;
        Ok(Zswap {
            ram_bytes: self.config.ram_bytes,
            kernel: self.config.kernel,
            worker: self.config.worker,
            memcg: self.config.memcg,
            params: RwLock::new(Params {
                compressor: backend.name().into(),
                zpool: zname.into(),
                ..p
            }),
            codecs: RwLock::new(vec![Arc::new(codec)]),
            current_codec: RwLock::new(0),
            inner: Mutex::new(Inner {
                tree: HashMap::new(),
                lru: Lru::default(),
                limit: Limit::default(),
                pool,
                zeromap: HashSet::new(),
                disk_swapins: 0,
                compressed_bytes: 0,
                queued_worker: None,
            }),
            backing,
            counters: Counters::default(),
        })
    }
}

/// Allocator `name` as kernel `kernel`'s zswap has it (zsmalloc with that
/// version's zspage chain and pages-per-zspage rule).
pub(crate) fn create_pool(name: &str, kernel: &KernelModel) -> Result<Box<dyn Zpool>, AttrError> {
    let opts = zmem_zpool::PoolOptions {
        chain_size: kernel.zspage_chain_size(),
        chain_rule: match kernel.zspage_chain_rule() {
            ChainRule::LeastWaste => zmem_zpool::ChainRule::LeastWaste,
            ChainRule::MostUsedPercent => zmem_zpool::ChainRule::MostUsedPercent,
        },
        ..zmem_zpool::PoolOptions::default()
    };
    zmem_zpool::create(name, opts).map_err(|e| AttrError::new(Errno::EINVAL, format!("zpool: {e}")))
}

impl Zswap {
    pub fn builder() -> ZswapBuilder {
        ZswapBuilder::default()
    }

    /// A builder for a zswap that behaves as kernel `model`'s: the one way every
    /// tool that models a kernel builds its engine zswap.
    pub fn for_kernel(model: KernelModel) -> ZswapBuilder {
        ZswapBuilder::default().kernel(model)
    }

    /// The kernel version whose zswap this engine behaves as.
    pub fn kernel(&self) -> KernelModel {
        self.kernel
    }

    /// Bytes before each compressed object in the current allocator
    /// (`zswap_header`, [`KernelModel::zswap_header_bytes`]).
    pub(crate) fn header_bytes(&self, inner: &Inner) -> usize {
        self.kernel.zswap_header_bytes(inner.pool.name())
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Current parameters.
    pub fn params(&self) -> Params {
        self.params
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn ram_bytes(&self) -> u64 {
        self.ram_bytes
    }

    pub fn backing(&self) -> &Backing {
        &self.backing
    }

    /// Pool limit and accept threshold in pages.
    pub fn limits(&self) -> (u64, u64) {
        let p = self.params();
        (
            pool::max_pages(self.ram_bytes, &p),
            pool::accept_pages(self.ram_bytes, &p),
        )
    }

    /// Pages the pool occupies.
    pub fn pool_pages(&self) -> u64 {
        self.lock().pool.total_pages()
    }

    /// A snapshot of the statistics.
    pub fn stats(&self) -> Stats {
        let pages = self.pool_pages();
        self.counters.snapshot(pages)
    }

    /// Whether `offset` has an entry in the pool.
    pub fn contains(&self, offset: u64) -> bool {
        self.lock().tree.contains_key(&offset)
    }

    /// Whether a shrink-worker run is queued ([`ShrinkWorker::Paced`]).
    pub fn worker_queued(&self) -> bool {
        self.lock().queued_worker.is_some()
    }

    /// Number of entries on the LRU.
    pub fn lru_len(&self) -> usize {
        self.lock().lru.len()
    }

    /// The LRU from the oldest entry (the one the shrinker looks at next) to
    /// the youngest: (swap offset, `referenced`).
    pub fn lru_snapshot(&self) -> Vec<(u64, bool)> {
        let inner = self.lock();
        inner
            .lru
            .offsets()
            .map(|o| (o, inner.tree[&o].referenced))
            .collect()
    }

    /// Σ compressed lengths of the stored entries: what the kernel charges to
    /// the memory cgroup (memory.stat `zswap`, `MEMCG_ZSWAP_B`).
    pub fn compressed_bytes(&self) -> u64 {
        self.lock().compressed_bytes
    }

    pub(crate) fn codec(&self, i: usize) -> Arc<StreamPool> {
        self.codecs.read().unwrap_or_else(|e| e.into_inner())[i].clone()
    }

    /// Reads entry `e` of `offset` into `out` (decompressing unless raw;
    /// a same-filled entry fills it with its word).
    pub(crate) fn read_entry(
        &self,
        inner: &Inner,
        offset: u64,
        e: &Entry,
        out: &mut [u8],
    ) -> Result<(), ZswapError> {
        let (handle, hint) = match e.obj {
            Obj::Pool { handle, hint } => (handle, hint),
            Obj::Same(word) => {
                for w in out.chunks_exact_mut(8) {
                    w.copy_from_slice(&word.to_ne_bytes());
                }
                return Ok(());
            }
        };
        let hlen = self.header_bytes(inner);
        hint.prefetch(hlen + e.length as usize);
        let mut res: Result<(), String> = Ok(());
        let codec = self.codec(e.codec);
        let r = inner.pool.read(handle, &mut |src: &[u8]| {
            let src = &src[hlen.min(src.len())..(hlen + e.length as usize).min(src.len())];
            res = if e.length as usize == PAGE_SIZE {
                out.copy_from_slice(&src[..PAGE_SIZE]);
                Ok(())
            } else {
                codec.decompress(src, out).map_err(|er| er.to_string())
            };
        });
        let res = r.map_err(|er| er.to_string()).and(res);
        res.map_err(|reason| {
            inc(&self.counters.decompress_fail);
            ZswapError::Decompress { offset, reason }
        })
    }

    /// Swap core write: a zero-filled page goes to the zeromap (6.12+; before,
    /// the swap core has none and zswap takes it); otherwise
    /// [`Zswap::store`]; a rejected page is written to the backing file.
    /// On a backing-file error the page is lost as the kernel's swap write
    /// error would lose it, and every other page stays readable.
    pub fn swap_out(&self, offset: u64, page: &[u8]) -> Result<Source, ZswapError> {
        if page.len() != PAGE_SIZE {
            return Err(ZswapError::BadLength(page.len()));
        }
        if offset >= self.backing.slots() {
            return Err(BackingError::OutOfRange {
                offset,
                slots: self.backing.slots(),
            }
            .into());
        }
        let zeromap = self.kernel.zswap_same_filled() == SameFilled::Zeromap;
        if zeromap && zmem_codec::same_filled(page) == Some(0) {
            self.invalidate(offset);
            let mut inner = self.lock();
            if inner.zeromap.insert(offset) {
                inc(&self.counters.zero_pages);
            }
            self.backing.free(offset);
            return Ok(Source::Zero);
        }
        self.clear_zero(offset);
        match self.store(offset, page) {
            Ok(()) => {
                self.backing.free(offset);
                Ok(Source::Pool)
            }
            Err(_) => {
                self.backing.write(offset, page)?;
                inc(&self.counters.backing_writes);
                Ok(Source::Backing)
            }
        }
    }

    fn clear_zero(&self, offset: u64) {
        let mut inner = self.lock();
        if inner.zeromap.remove(&offset) {
            crate::stats::dec(&self.counters.zero_pages);
        }
    }

    /// Swap core read of `offset` into `out`: zeromap, then [`Zswap::load`],
    /// then the backing file. `exclusive` frees the page afterwards (swap-in
    /// followed by the slot being freed, 6.18's exclusive load); otherwise the
    /// page stays where it is (a pool hit leaves `referenced` alone).
    pub fn swap_in(
        &self,
        offset: u64,
        out: &mut [u8],
        exclusive: bool,
    ) -> Result<Source, ZswapError> {
        if out.len() != PAGE_SIZE {
            return Err(ZswapError::BadLength(out.len()));
        }
        {
            let mut inner = self.lock();
            if inner.zeromap.contains(&offset) {
                if exclusive {
                    inner.zeromap.remove(&offset);
                    crate::stats::dec(&self.counters.zero_pages);
                }
                out.fill(0);
                return Ok(Source::Zero);
            }
        }
        if self.load(offset, out, exclusive)? {
            return Ok(Source::Pool);
        }
        if self.backing.contains(offset) {
            self.backing.read(offset, out)?;
            inc(&self.counters.backing_reads);
            self.lock().disk_swapins += 1;
            if exclusive {
                self.backing.free(offset);
            }
            return Ok(Source::Backing);
        }
        out.fill(0);
        Ok(Source::Empty)
    }

    /// Swap core: the slot at `offset` is freed (zeromap, pool, backing file).
    pub fn swap_free(&self, offset: u64) {
        self.clear_zero(offset);
        self.invalidate(offset);
        self.backing.free(offset);
    }
}
