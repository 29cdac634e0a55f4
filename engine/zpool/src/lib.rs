//! Allocators for compressed objects, behind one interface (the kernel's zpool).
//!
//! * `zsmalloc`: size classes, multi-page zspages, objects spanning pages,
//!   fullness groups and compaction, accounted exactly as `mm/zsmalloc.c`.
//! * `zbud`: two buddies per page in 64-byte chunks.
//! * `z3fold`: up to three objects per page, plus headless pages.
//!
//! Objects live in pages the allocator owns (4 KiB, or zsmalloc's 16 and
//! 64 KiB pages of other kernels: [`PoolOptions::page_size`]); a [`Handle`]
//! maps to the object's bytes. A stale or foreign handle is an error, never access to
//! another object's bytes.

use std::sync::Arc;
use thiserror::Error;

mod handle;
mod list;
mod page;
mod prefetch;
mod z3fold;
mod zbud;
mod zsmalloc;

pub use prefetch::ObjHint;
pub use z3fold::Z3foldPool;
pub use zbud::ZbudPool;
pub use zsmalloc::class::ChainRule;
pub use zsmalloc::{class, map_shared, memfd, wait_background, RegionView, SharedRegion, ZsPool};

/// Page size of the pools by default, and of the memory they take from the
/// OS (a 16 or 64 KiB zsmalloc page is 4 or 16 of them).
pub const PAGE_SIZE: usize = 4096;

/// An opaque, non-zero reference to one allocated object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Handle(pub std::num::NonZeroU64);

/// Allocator errors.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ZpoolError {
    /// Size 0 (the kernel's -EINVAL).
    #[error("object size 0 is invalid")]
    ZeroSize,
    /// Larger than the allocator can hold (the kernel's -ENOSPC).
    #[error("object of {size} bytes is larger than the maximum {max}")]
    TooLarge { size: usize, max: usize },
    /// No memory for a new page.
    #[error("out of memory")]
    NoMemory,
    /// The handle is not a live object of this pool.
    #[error("invalid or freed handle {0:#x}")]
    BadHandle(u64),
    /// A write whose length differs from the object's size.
    #[error("write of {got} bytes to an object of {size} bytes")]
    SizeMismatch { size: usize, got: usize },
    /// Unknown allocator name; lists the valid ones.
    #[error("unknown allocator '{0}'; valid allocators: zsmalloc, zbud, z3fold")]
    UnknownAllocator(String),
    /// A pool option out of range (e.g. a zsmalloc chain size outside 4..=16).
    #[error("invalid pool option: {0}")]
    InvalidOption(String),
}

/// Accounting every allocator reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Live objects.
    pub objects: u64,
    /// Pages currently owned (the basis of mem_used_total / pool_total_size).
    pub pages: u64,
    /// Sum of the requested object sizes.
    pub bytes_stored: u64,
    /// Bytes allocated to objects beyond what they asked for (class rounding,
    /// chunk rounding, headers), i.e. internal fragmentation.
    pub internal_frag: u64,
    /// Cumulative pages released by compaction.
    pub pages_compacted: u64,
}

/// The one allocator interface the zram and zswap engines use.
///
/// All methods take `&self`; implementations are internally synchronised so
/// that different objects can be used from different threads.
pub trait Zpool: Send + Sync {
    /// `zsmalloc`, `zbud` or `z3fold`.
    fn name(&self) -> &'static str;
    /// Allocate an object of `size` bytes (1..=max_alloc()).
    fn malloc(&self, size: usize) -> Result<Handle, ZpoolError>;
    /// Free an object. A stale or foreign handle is an error.
    fn free(&self, handle: Handle) -> Result<(), ZpoolError>;
    /// Write the object's bytes; `src.len()` must equal its size. Returns
    /// where the bytes are now, for prefetching before a later read (an
    /// [`ObjHint`]: compaction may move the object, so it is a hint only).
    fn write(&self, handle: Handle, src: &[u8]) -> Result<ObjHint, ZpoolError>;
    /// Give the object's bytes to `f`, in place (no allocator here splits an
    /// object: zsmalloc's zspage pages are contiguous, zbud and z3fold objects
    /// lie in one page). `f` runs under the object's (class) lock,
    /// held shared: it must not malloc, free or write in the same pool.
    /// Bytes never written are unspecified (never another live object's).
    fn read(&self, handle: Handle, f: &mut dyn FnMut(&[u8])) -> Result<(), ZpoolError>;
    /// Size the object was allocated with.
    fn obj_size(&self, handle: Handle) -> Result<usize, ZpoolError>;
    /// Pages currently owned by the pool (`zs_get_total_pages`).
    fn total_pages(&self) -> u64;
    /// Compact; returns the pages released by this call.
    fn compact(&self) -> u64;
    /// Pages a compaction could release now (zsmalloc's shrinker count,
    /// Σ `zs_can_compact`); 0 for allocators without pool-wide compaction.
    fn compactable_pages(&self) -> u64 {
        0
    }
    /// Current accounting.
    fn stats(&self) -> PoolStats;
    /// Largest object size accepted.
    fn max_alloc(&self) -> usize;
    /// zsmalloc's `huge_class_size` (objects at least this big are stored raw
    /// by zram); allocators without classes return their own cut-off.
    fn huge_class_size(&self) -> usize;
    /// `zs_lookup_class_index(size)`: the (merged) class a raw size lands in.
    fn class_index(&self, size: usize) -> usize;
}

/// Allocator names, for help and error messages.
pub const NAMES: [&str; 3] = ["zsmalloc", "zbud", "z3fold"];

/// Options of [`create`]. A bare `usize` converts into the zsmalloc chain size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolOptions {
    /// zsmalloc's `CONFIG_ZSMALLOC_CHAIN_SIZE` (4..=16, default 8); ignored by
    /// zbud and z3fold.
    pub chain_size: usize,
    /// How zsmalloc chooses a class's pages per zspage (6.3+ by default).
    pub chain_rule: ChainRule,
    /// The kernel's `PAGE_SIZE`: 4096, 16384 or 65536. zsmalloc cuts its
    /// classes and zspages for it; zbud and z3fold take 4096 only.
    pub page_size: usize,
}

impl Default for PoolOptions {
    fn default() -> Self {
        PoolOptions {
            chain_size: zsmalloc::class::DEFAULT_CHAIN_SIZE,
            chain_rule: ChainRule::LeastWaste,
            page_size: PAGE_SIZE,
        }
    }
}

impl PoolOptions {
    /// zsmalloc's arithmetic at [`page_size`](Self::page_size); a size
    /// other than 4, 16 or 64 KiB is an [`ZpoolError::InvalidOption`].
    pub fn geometry(&self) -> Result<class::Geometry, ZpoolError> {
        match self.page_size {
            4096 => Ok(class::Geometry { page_shift: 12 }),
            16384 => Ok(class::Geometry { page_shift: 14 }),
            65536 => Ok(class::Geometry { page_shift: 16 }),
            n => Err(ZpoolError::InvalidOption(format!(
                "page size {n}: zsmalloc is modelled at 4096, 16384 and 65536-byte pages"
            ))),
        }
    }
}

impl From<usize> for PoolOptions {
    fn from(chain_size: usize) -> Self {
        PoolOptions {
            chain_size,
            ..PoolOptions::default()
        }
    }
}

/// Create an allocator by name (`zsmalloc`, `zbud`, `z3fold`).
pub fn create(name: &str, opts: impl Into<PoolOptions>) -> Result<Box<dyn Zpool>, ZpoolError> {
    let opts = opts.into();
    if name != "zsmalloc" && NAMES.contains(&name) && opts.page_size != PAGE_SIZE {
        return Err(ZpoolError::InvalidOption(format!(
            "{name} is modelled at 4 KiB pages only, not {} (zsmalloc takes 16 and 64 KiB pages)",
            opts.page_size
        )));
    }
    match name {
        "zsmalloc" => Ok(Box::new(ZsPool::with_options(opts)?)),
        "zbud" => Ok(Box::new(ZbudPool::new())),
        "z3fold" => Ok(Box::new(Z3foldPool::new())),
        other => Err(ZpoolError::UnknownAllocator(other.to_string())),
    }
}

/// [`create`], shared between threads.
pub fn create_shared(
    name: &str,
    opts: impl Into<PoolOptions>,
) -> Result<Arc<dyn Zpool>, ZpoolError> {
    create(name, opts).map(Arc::from)
}
