//! The device: configuration before `disksize`, the initialised state
//! ([`Meta`]: slot table, allocator, compressors, stats), the init lock, and
//! the builder for embedding.
//!
//! The init lock is the kernel's `init_lock` rwsem, striped: each thread takes
//! the read side of its own cache-line-padded stripe, so I/O threads never
//! write a shared cache line; `disksize` and `reset` take every stripe's write
//! side. Configuration changes are serialised by the config mutex.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

use zmem_codec::{Backend, Params};
use zmem_kernel::attr;
use zmem_zpool::{Handle, Zpool};

use crate::fastpath::{FastMode, FastPath};
use crate::pool::{self, PoolFactory, DEFAULT_ALLOCATOR};
use crate::slot::{self, SlotInfo};
use crate::stats::Stats;
use crate::streams::{self, Backends, Comp, DEFAULT_ALGORITHM, MAX_COMPS, PRIMARY};
use crate::table::SlotTable;
use crate::writeback::{Backing, BackingFault, WbLimit};
use zmem_kernel::{AttrError, Errno, ZramAttr};
use zmem_kernel::{IoStat, KernelModel, MmStat};

/// Configuration that takes effect at the next `disksize` (and is cleared by `reset`).
#[derive(Debug, Clone)]
pub struct Config {
    /// Algorithm per priority; priority 0 is always set.
    pub comp_algs: [Option<String>; MAX_COMPS],
    /// `algorithm_params` per priority.
    pub params: [Params; MAX_COMPS],
    /// Allocator name (zmem extension; the kernel always uses zsmalloc).
    pub allocator: String,
    /// `fast_algorithm` (zmem extension): the fast path's compressor.
    pub fast_alg: Option<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            comp_algs: [Some(DEFAULT_ALGORITHM.to_string()), None, None, None],
            params: Default::default(),
            allocator: DEFAULT_ALLOCATOR.to_string(),
            fast_alg: None,
        }
    }
}

/// The state of an initialised device (what `disksize` creates and `reset` destroys).
pub struct Meta {
    pub disksize: u64,
    pub table: SlotTable,
    pub pool: Box<dyn Zpool>,
    pub comps: [Option<Comp>; MAX_COMPS],
    /// The fast path's compressor (zmem extension; slots flagged FAST).
    pub fast: Option<Comp>,
    /// Number of compressors created (`num_active_comps`).
    pub num_active_comps: usize,
    /// Objects of at least this many bytes are stored raw (HUGE).
    pub huge_class_size: usize,
    pub stats: Stats,
    /// Whether ac_time is kept (CONFIG_ZRAM_TRACK_ENTRY_ACTIME).
    pub track_actime: bool,
    /// A recompress (or writeback) pass is running (`pp_in_progress`).
    pub pp_in_progress: AtomicBool,
    /// The backing device set before `disksize` (fixed while initialised).
    pub backing: Option<Arc<Backing>>,
    /// `compressed_writeback` as it was at `disksize`.
    pub wb_compressed: bool,
    /// A written-back slot keeps its object's size, priority and HUGE and
    /// INCOMPRESSIBLE flags and its access time
    /// ([`KernelModel::writeback_keeps_slot`]); before 7.0 it is freed first.
    pub wb_keeps_slot: bool,
    /// A recoverable device's zspage memfd (its table's is the table's).
    pub(crate) shared: Option<crate::recover::Shared>,
    /// `PAGE_SIZE` of the kernel modelled: the bytes of every slot's page.
    pub page: usize,
}

impl Meta {
    /// Number of slots (pages).
    pub fn nr_pages(&self) -> usize {
        self.table.len()
    }

    /// The name of the algorithm that stored a compressed (or huge) slot:
    /// the fast algorithm when FAST is set, else the slot's priority.
    pub(crate) fn stored_by(&self, g: &slot::SlotGuard<'_>) -> Option<&'static str> {
        if g.test(slot::Flag::Fast) {
            self.fast.as_ref().map(|c| c.name)
        } else {
            self.comps[g.priority() as usize].as_ref().map(|c| c.name)
        }
    }

    /// The allocator handle stored in a slot's handle word.
    #[inline]
    pub(crate) fn handle_of(raw: u64) -> Option<Handle> {
        std::num::NonZeroU64::new(raw).map(Handle)
    }
}

/// A new state's slot table, allocator and (recoverable) zspage memfd.
type NewStore = (SlotTable, Box<dyn Zpool>, Option<crate::recover::Shared>);

#[repr(align(128))]
struct Stripe(RwLock<Option<Arc<Meta>>>);

const STRIPES: usize = 16;
static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);
thread_local! {
    static MY_STRIPE: Cell<usize> = const { Cell::new(usize::MAX) };
}

fn my_stripe() -> usize {
    MY_STRIPE.with(|c| {
        let mut v = c.get();
        if v == usize::MAX {
            v = NEXT_STRIPE.fetch_add(1, Ordering::Relaxed) % STRIPES;
            c.set(v);
        }
        v
    })
}

struct InitLock {
    stripes: Box<[Stripe]>,
}

impl InitLock {
    fn new() -> Self {
        InitLock {
            stripes: (0..STRIPES).map(|_| Stripe(RwLock::new(None))).collect(),
        }
    }
    #[inline]
    fn read(&self) -> RwLockReadGuard<'_, Option<Arc<Meta>>> {
        self.stripes[my_stripe()]
            .0
            .read()
            .unwrap_or_else(|e| e.into_inner())
    }
    fn write(&self) -> Vec<RwLockWriteGuard<'_, Option<Arc<Meta>>>> {
        self.stripes
            .iter()
            .map(|s| s.0.write().unwrap_or_else(|e| e.into_inner()))
            .collect()
    }
}

/// A zram device.
pub struct Zram {
    name: String,
    /// The kernel version whose zram this device behaves as.
    pub(crate) kernel: KernelModel,
    backends: Backends,
    /// A custom allocator factory; `None`: zmem-zpool's, with the kernel's zsmalloc.
    pool_factory: Option<PoolFactory>,
    track_actime: bool,
    /// Keep the store in memfds (`ZramBuilder::recoverable`).
    recoverable: bool,
    pub(crate) config: Mutex<Config>,
    pub(crate) limit_pages: AtomicU64,
    pub(crate) fast_path: FastPath,
    state: InitLock,
    openers: AtomicUsize,
    claim: AtomicBool,
    /// `backing_dev` (set before init, released by reset).
    pub(crate) backing: Mutex<Option<Arc<Backing>>>,
    pub(crate) backing_fault: Option<BackingFault>,
    /// `compressed_writeback` (before init only; kept by reset).
    pub(crate) wb_compressed: AtomicBool,
    /// `writeback_batch_size`: writeback requests a pass keeps in flight (kept by reset).
    pub(crate) wb_batch_size: AtomicU32,
    /// `writeback_limit_enable` / `writeback_limit` (kept across reset, as the kernel's code).
    pub(crate) wb_limit: Mutex<WbLimit>,
}

impl std::fmt::Debug for Zram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Zram")
            .field("name", &self.name)
            .field(attr::DISKSIZE, &self.disksize())
            .finish()
    }
}

/// Keeps a device "open" (as an opened block device): `reset` refuses with EBUSY.
#[derive(Debug)]
pub struct OpenGuard<'a> {
    dev: &'a Zram,
}

impl Drop for OpenGuard<'_> {
    fn drop(&mut self) {
        self.dev.openers.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Default for Zram {
    fn default() -> Self {
        Zram::new()
    }
}

impl Zram {
    /// An uninitialised device with the kernel's defaults (lzo-rle,
    /// zsmalloc, no mem_limit, access-time tracking on). Configure it through
    /// attributes, then write `disksize`.
    pub fn new() -> Self {
        ZramBuilder::new().build_uninit()
    }

    /// A builder for embedding.
    pub fn builder() -> ZramBuilder {
        ZramBuilder::new()
    }

    /// A builder for a device that behaves as kernel `model`'s zram: the one way
    /// every tool that models a kernel (`zmem bench`'s modes, `zmem serve`) builds
    /// its engine device, so none forgets the model.
    pub fn for_kernel(model: KernelModel) -> ZramBuilder {
        ZramBuilder::new().kernel(model)
    }

    /// The device name (e.g. `zram0`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The kernel version whose zram this device behaves as.
    pub fn kernel(&self) -> KernelModel {
        self.kernel
    }

    /// `PAGE_SIZE` of the kernel modelled: what one slot stores, the unit of
    /// disksize, mem_limit and mm_stat's page counts.
    pub fn page_size(&self) -> usize {
        self.kernel.page_size()
    }

    /// The algorithms this device offers.
    pub fn backends(&self) -> &Backends {
        &self.backends
    }

    pub(crate) fn lock_config(&self) -> MutexGuard<'_, Config> {
        self.config.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The initialised state for I/O (the read side of the init lock).
    #[inline]
    pub(crate) fn meta(&self) -> RwLockReadGuard<'_, Option<Arc<Meta>>> {
        self.state.read()
    }

    /// Whether `disksize` has been set (`initstate`).
    pub fn is_initialized(&self) -> bool {
        self.meta().is_some()
    }

    /// Device size in bytes (0 while uninitialised).
    pub fn disksize(&self) -> u64 {
        self.meta().as_ref().map_or(0, |m| m.disksize)
    }

    /// Mark the device open: `reset` fails with EBUSY while any guard lives.
    pub fn open(&self) -> OpenGuard<'_> {
        self.openers.fetch_add(1, Ordering::AcqRel);
        OpenGuard { dev: self }
    }

    /// Initialise with `disksize` bytes (rounded up to a page): the kernel's
    /// `disksize_store` after parsing.
    pub fn init(&self, disksize: u64) -> Result<(), AttrError> {
        if disksize == 0 {
            return Err(AttrError::new(
                Errno::EINVAL,
                "disksize must be greater than 0",
            ));
        }
        let cfg = self.lock_config();
        if self.is_initialized() {
            return Err(AttrError::new(
                Errno::EBUSY,
                "cannot change disksize for an initialized device",
            ));
        }
        let page = self.page_size();
        let disksize = disksize
            .checked_add(page as u64 - 1)
            .map(|d| d & !(page as u64 - 1))
            .ok_or_else(|| AttrError::new(Errno::ENOMEM, "disksize too large for a slot table"))?;
        let nr_pages = usize::try_from(disksize / page as u64)
            .ok()
            .filter(|&n| n <= (1usize << 40))
            .ok_or_else(|| AttrError::new(Errno::ENOMEM, "disksize too large for a slot table"))?;
        let (table, pool, shared) = self.new_store(&cfg, disksize, nr_pages)?;
        let huge_class_size = pool.huge_class_size();
        crate::recompress::note_huge_class_size(huge_class_size, page);
        let comp = |name: &str, params: &Params| {
            let backend = self.backends.find(name).ok_or_else(|| {
                AttrError::new(Errno::EINVAL, format!("unknown algorithm '{name}'"))
            })?;
            // The stream writes as this kernel's zram does.
            let params = Params {
                kernel: Some(self.kernel.version()),
                page_size: Some(page),
                ..params.clone()
            };
            streams::create(backend, &params)
        };
        let mut comps: [Option<Comp>; MAX_COMPS] = Default::default();
        let mut num_active_comps = 0;
        for (slot, (alg, params)) in comps.iter_mut().zip(cfg.comp_algs.iter().zip(&cfg.params)) {
            let Some(name) = alg.as_deref() else {
                continue;
            };
            *slot = Some(comp(name, params)?);
            num_active_comps += 1;
        }
        let fast = cfg
            .fast_alg
            .as_deref()
            .map(|name| comp(name, &Params::default()))
            .transpose()?;
        let meta = Arc::new(Meta {
            disksize,
            table,
            pool,
            comps,
            fast,
            num_active_comps,
            huge_class_size,
            stats: Stats::default(),
            track_actime: self.track_actime,
            pp_in_progress: AtomicBool::new(false),
            backing: self.backing_dev(),
            wb_compressed: self.wb_compressed.load(Ordering::Relaxed),
            wb_keeps_slot: self.kernel.writeback_keeps_slot(),
            shared,
            page,
        });
        for mut g in self.state.write() {
            *g = Some(meta.clone());
        }
        drop(cfg);
        Ok(())
    }

    /// The slot table and the allocator of a new state: in memfds when the
    /// device is recoverable.
    fn new_store(
        &self,
        cfg: &Config,
        disksize: u64,
        nr_pages: usize,
    ) -> Result<NewStore, AttrError> {
        let nomem = |e: String| AttrError::new(Errno::ENOMEM, e);
        if self.recoverable {
            if self.backing_dev().is_some() {
                return Err(AttrError::new(
                    Errno::EINVAL,
                    "a recoverable device has no backing_dev (its blocks are not recovered)",
                ));
            }
            let table = SlotTable::shared(nr_pages).map_err(|e| {
                nomem(format!(
                    "cannot create a slot table of {nr_pages} entries: {e}"
                ))
            })?;
            let (pool, shared) =
                crate::recover::shared_pool(&cfg.allocator, &self.kernel, disksize)
                    .map_err(|e| AttrError::new(Errno::EINVAL, e))?;
            return Ok((table, pool, Some(shared)));
        }
        let table = SlotTable::new(nr_pages).ok_or_else(|| {
            nomem(format!(
                "cannot allocate a slot table of {nr_pages} entries"
            ))
        })?;
        let pool = match &self.pool_factory {
            Some(f) => f(&cfg.allocator),
            None => pool::create_for(&cfg.allocator, &self.kernel),
        }
        .map_err(nomem)?;
        Ok((table, pool, None))
    }

    /// A recoverable device's store, duplicated for a holder that keeps it
    /// after this process dies (`None`: not recoverable, or uninitialised).
    pub fn shared_store(&self) -> Option<crate::recover::Store> {
        self.meta().as_deref()?.shared_store()
    }

    /// Make this device (recoverable, initialised with the dead one's
    /// options and disksize, empty) hold what a dead device's `old` store
    /// held: every slot whose change had been committed, the others rolled
    /// back (`recover.rs`). The old store can be let go afterwards.
    pub fn recover_from(
        &self,
        old: crate::recover::Store,
    ) -> Result<crate::recover::RecoverReport, String> {
        let g = self.meta();
        let m = g.as_deref().ok_or("the device is not initialised")?;
        m.recover_from(old)
    }

    /// `reset`: refuse while open, then free every slot (releasing backing
    /// blocks), destroy the pool and compressors, zero the stats and the
    /// limit, restore the default algorithm and parameters, and release the
    /// backing device (`reset_bdev`). `writeback_limit[_enable]`,
    /// `writeback_batch_size` and `compressed_writeback` are kept, as the
    /// kernel's code does.
    pub fn reset(&self) -> Result<(), AttrError> {
        if self.openers.load(Ordering::Acquire) != 0 {
            return Err(AttrError::new(Errno::EBUSY, "device is open"));
        }
        if self.claim.swap(true, Ordering::AcqRel) {
            return Err(AttrError::new(
                Errno::EBUSY,
                "device is already being reset",
            ));
        }
        let mut cfg = self.lock_config();
        let meta = {
            let mut guards = self.state.write();
            let mut m = None;
            for g in guards.iter_mut() {
                m = g.take();
            }
            m
        };
        self.limit_pages.store(0, Ordering::Relaxed);
        self.fast_path.reset();
        if let Some(meta) = meta {
            // Free every slot (zram_meta_free) so the allocator sees the frees.
            for s in meta.table.iter() {
                let mut g = s.lock();
                meta.free_slot(&mut g);
            }
        }
        *self.backing.lock().unwrap_or_else(|e| e.into_inner()) = None;
        let allocator = std::mem::take(&mut cfg.allocator);
        *cfg = Config {
            allocator,
            ..Config::default()
        };
        drop(cfg);
        self.claim.store(false, Ordering::Release);
        Ok(())
    }

    /// mm_stat as numbers.
    pub fn mm_stat(&self) -> MmStat {
        let limit = self.limit_pages.load(Ordering::Relaxed);
        match self.meta().as_deref() {
            Some(m) => {
                let ps = m.pool.stats();
                m.stats
                    .mm_stat(m.pool.total_pages(), ps.pages_compacted, limit, m.page)
            }
            None => MmStat {
                mem_limit: limit * self.page_size() as u64,
                ..MmStat::default()
            },
        }
    }

    /// io_stat as numbers.
    pub fn io_stat(&self) -> IoStat {
        self.meta()
            .as_deref()
            .map(|m| m.stats.io_stat())
            .unwrap_or_default()
    }

    /// miss_free (debug_stat).
    pub fn miss_free(&self) -> u64 {
        self.meta()
            .as_deref()
            .map_or(0, |m| m.stats.miss_free.load(Ordering::Relaxed))
    }

    /// `huge_class_size` of the device's allocator (0 while uninitialised).
    pub fn huge_class_size(&self) -> usize {
        self.meta().as_deref().map_or(0, |m| m.huge_class_size)
    }

    /// Snapshot of one slot (None when out of range or uninitialised).
    pub fn slot_info(&self, index: usize) -> Option<SlotInfo> {
        let g = self.meta();
        let m = g.as_deref()?;
        let s = m.table.get(index)?;
        let lock = s.lock();
        Some(SlotInfo::of(index, &lock))
    }

    /// The allocated slots, like debugfs `block_state`.
    pub fn block_state(&self) -> Vec<SlotInfo> {
        let g = self.meta();
        let Some(m) = g.as_deref() else {
            return Vec::new();
        };
        m.table
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let lock = s.lock();
                lock.allocated().then(|| SlotInfo::of(i, &lock))
            })
            .collect()
    }

    /// How many allocated slots `pred` accepts (what `block_state()` would
    /// list), without collecting them.
    pub fn count_slots(&self, pred: impl Fn(&SlotInfo) -> bool) -> u64 {
        let g = self.meta();
        let Some(m) = g.as_deref() else { return 0 };
        m.table
            .iter()
            .enumerate()
            .filter(|(i, s)| {
                let lock = s.lock();
                lock.allocated() && pred(&SlotInfo::of(*i, &lock))
            })
            .count() as u64
    }

    /// Current configuration (algorithms, params, allocator).
    pub fn config(&self) -> Config {
        self.lock_config().clone()
    }

    /// Whether access times are tracked (idle by age available).
    pub fn tracks_access_time(&self) -> bool {
        self.track_actime
    }
}

/// Builds a device for embedding; `build` initialises it when a disksize was given.
pub struct ZramBuilder {
    name: String,
    kernel: KernelModel,
    disksize: Option<u64>,
    algorithms: Vec<(usize, String, Params)>,
    allocator: String,
    mem_limit: u64,
    track_actime: bool,
    fast_alg: Option<String>,
    fast_path: (FastMode, u32, u64),
    extra: Vec<&'static dyn Backend>,
    pool_factory: Option<PoolFactory>,
    backing_dev: Option<String>,
    backing_fault: Option<BackingFault>,
    wb_compressed: bool,
    recoverable: bool,
}

impl Default for ZramBuilder {
    fn default() -> Self {
        ZramBuilder::new()
    }
}

impl ZramBuilder {
    pub fn new() -> Self {
        ZramBuilder {
            name: "zram".into(),
            kernel: KernelModel::newest(),
            disksize: None,
            algorithms: Vec::new(),
            allocator: DEFAULT_ALLOCATOR.into(),
            mem_limit: 0,
            track_actime: true,
            fast_alg: None,
            fast_path: (FastMode::Off, crate::fastpath::DEFAULT_LIMIT_PCT, 0),
            extra: Vec::new(),
            pool_factory: None,
            backing_dev: None,
            backing_fault: None,
            wb_compressed: false,
            recoverable: false,
        }
    }
    /// Keep the slot table and the zspages in memfds that a holder can
    /// keep after this process dies ([`Zram::shared_store`], [`Zram::recover_from`];
    /// zsmalloc only, no backing_dev).
    pub fn recoverable(mut self, on: bool) -> Self {
        self.recoverable = on;
        self
    }
    /// Device name, e.g. `zram0`.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }
    /// Behave as the zram of this kernel version (default: the newest zmem
    /// models): its attributes, zsmalloc, writeback pass and parameters.
    pub fn kernel(mut self, kernel: KernelModel) -> Self {
        self.kernel = kernel;
        self
    }
    /// Size in bytes (rounded up to a page). Without it the device stays uninitialised.
    pub fn disksize(mut self, bytes: u64) -> Self {
        self.disksize = Some(bytes);
        self
    }
    /// The primary algorithm (kernel name) and its parameters.
    pub fn algorithm(self, name: impl Into<String>, params: Params) -> Self {
        self.secondary(PRIMARY, name, params)
    }
    /// The algorithm of priority `prio` (0 = primary, 1..3 = secondary).
    pub fn secondary(mut self, prio: usize, name: impl Into<String>, params: Params) -> Self {
        self.algorithms.push((prio, name.into(), params));
        self
    }
    /// Allocator: zsmalloc (default), zbud or z3fold.
    pub fn allocator(mut self, name: impl Into<String>) -> Self {
        self.allocator = name.into();
        self
    }
    /// mem_limit in bytes (0 = unlimited).
    pub fn mem_limit(mut self, bytes: u64) -> Self {
        self.mem_limit = bytes;
        self
    }
    /// Keep per-slot access times (needed for `idle <seconds>`); on by default.
    pub fn track_access_time(mut self, on: bool) -> Self {
        self.track_actime = on;
        self
    }
    /// The fast path's algorithm (`fast_algorithm algo=NAME`).
    pub fn fast_algorithm(mut self, name: impl Into<String>) -> Self {
        self.fast_alg = Some(name.into());
        self
    }
    /// When the normal write path uses the fast algorithm (`fast_path`):
    /// mode, pool usage threshold in percent of mem_limit, write rate in pages/s (0 = off).
    pub fn fast_path(mut self, mode: FastMode, limit_pct: u32, rate: u64) -> Self {
        self.fast_path = (mode, limit_pct.min(100), rate);
        self
    }
    /// Offer an extra compression back-end beyond the codec registry.
    pub fn backend(mut self, b: &'static dyn Backend) -> Self {
        self.extra.push(b);
        self
    }
    /// Backing device for writeback (`backing_dev`): a block device or a
    /// regular file of at least 2 pages, opened read-write.
    pub fn backing_dev(mut self, path: impl AsRef<std::path::Path>) -> Self {
        self.backing_dev = Some(path.as_ref().display().to_string());
        self
    }
    /// `compressed_writeback`: write the compressed object, not the page.
    pub fn compressed_writeback(mut self, on: bool) -> Self {
        self.wb_compressed = on;
        self
    }
    /// Fault injection for the backing file: `f(op, block)` returning true
    /// fails that block I/O with an I/O error (tests and failure drills).
    pub fn backing_fault(mut self, f: BackingFault) -> Self {
        self.backing_fault = Some(f);
        self
    }
    /// Use a custom allocator factory (for embedding and tests).
    pub fn pool_factory(mut self, f: PoolFactory) -> Self {
        self.pool_factory = Some(f);
        self
    }

    fn build_uninit(&mut self) -> Zram {
        Zram {
            name: std::mem::take(&mut self.name),
            kernel: self.kernel,
            backends: Backends::with_extra(std::mem::take(&mut self.extra)),
            pool_factory: self.pool_factory.take(),
            track_actime: self.track_actime,
            recoverable: self.recoverable,
            config: Mutex::new(Config {
                allocator: self.allocator.clone(),
                ..Config::default()
            }),
            limit_pages: AtomicU64::new(self.mem_limit.div_ceil(self.kernel.page_size() as u64)),
            fast_path: FastPath::default(),
            state: InitLock::new(),
            openers: AtomicUsize::new(0),
            claim: AtomicBool::new(false),
            backing: Mutex::new(None),
            backing_fault: self.backing_fault.take(),
            wb_compressed: AtomicBool::new(self.wb_compressed),
            wb_batch_size: AtomicU32::new(crate::writeback::DEFAULT_WB_BATCH_SIZE),
            wb_limit: Mutex::new(WbLimit::default()),
        }
    }

    /// Create the device, with the same checks and errors as the attribute
    /// path (comp_algorithm, algorithm_params, backing_dev, then disksize).
    pub fn build(mut self) -> Result<Zram, AttrError> {
        let dev = self.build_uninit();
        {
            let mut cfg = dev.lock_config();
            for (prio, name, params) in std::mem::take(&mut self.algorithms) {
                if prio >= MAX_COMPS {
                    return Err(AttrError::new(
                        Errno::EINVAL,
                        format!("priority {prio} is not in 0..{MAX_COMPS}"),
                    ));
                }
                let n = dev.check_algorithm_name(&name)?;
                cfg.comp_algs[prio] = Some(n);
                cfg.params[prio] = params;
            }
            if let Some(name) = self.fast_alg.take() {
                cfg.fast_alg = Some(dev.check_algorithm_name(&name)?);
            }
        }
        if self.wb_compressed && !dev.kernel.compressed_writeback() {
            return Err(AttrError::new(
                Errno::EINVAL,
                format!(
                    "{} needs kernel {}; this device behaves as {}",
                    attr::COMPRESSED_WRITEBACK,
                    ZramAttr::of(attr::COMPRESSED_WRITEBACK).kernels,
                    dev.kernel
                ),
            ));
        }
        if let Some(path) = self.backing_dev.take() {
            dev.backing_dev_store(&path)?;
        }
        if let Some(d) = self.disksize {
            dev.init(d)?;
        }
        let (mode, pct, rate) = self.fast_path;
        if mode != FastMode::Off && dev.is_initialized() && dev.fast_algorithm().is_none() {
            return Err(AttrError::new(
                Errno::EINVAL,
                "fast_path needs a fast algorithm (fast_algorithm)",
            ));
        }
        dev.fast_path.set(mode, pct, rate);
        Ok(dev)
    }
}

impl Zram {
    /// `__comp_algorithm_store`'s name checks: length (E2BIG), one trailing
    /// newline stripped, known name (EINVAL).
    pub(crate) fn check_algorithm_name(&self, buf: &str) -> Result<String, AttrError> {
        if buf.len() >= streams::MAX_ALG_NAME {
            return Err(AttrError::new(
                Errno::E2BIG,
                format!(
                    "algorithm name is {} bytes; the limit is {}",
                    buf.len(),
                    streams::MAX_ALG_NAME - 1
                ),
            ));
        }
        let name = buf.strip_suffix('\n').unwrap_or(buf);
        if self.backends.find(name).is_none() {
            return Err(AttrError::new(
                Errno::EINVAL,
                format!(
                    "unknown algorithm '{name}'; valid algorithms: {}",
                    self.backends.names().join(" ")
                ),
            ));
        }
        Ok(name.to_string())
    }
}
