//! zmem-zswap: zswap as a library — a compressed cache of swapped-out pages in
//! front of a backing store (a file), following Linux 6.18 `mm/zswap.c`
//! (see `docs/zswap.md` and mm/zswap.c).
//!
//! * [`Zswap`]: the engine. [`Zswap::store`] / [`Zswap::load`] /
//!   [`Zswap::invalidate`] are the kernel's `zswap_store` / `zswap_load` /
//!   `zswap_invalidate` by swap offset; [`Zswap::swap_out`] / [`Zswap::swap_in`]
//!   add the swap core around them (zeromap for zero-filled pages, the
//!   backing file when zswap rejects a page).
//! * Pool limit + `accept_threshold_percent` hysteresis (`pool`), the LRU
//!   with second chance and writeback (`lru`, `shrink`).
//! * Parameters under `/sys/module/zswap/parameters` names and statistics
//!   under the debugfs names (`attrs`, `stats`).
//! * [`ZswapDevice`]: the block-device view (a [`BlockDevice`], as zram is).
//!
//! `engine` and `shrink` import each other on purpose: the shrinker writes
//! back entries of the engine's tree and LRU, and the engine calls it when the
//! pool is full, as `zswap_store` and `shrink_memcg` do in mm/zswap.c.

mod attrs;
mod backing;
mod blockdev;
mod engine;
mod invalidate;
mod load;
mod lru;
mod params;
mod pool;
mod shrink;
mod stats;
mod store;

pub use backing::{Backing, BackingError};
pub use blockdev::ZswapDevice;
pub use engine::{Config, Source, Zswap, ZswapBuilder, ZswapError};
pub use params::{Incompressible, Params, ShrinkWorker};
pub use shrink::{Attempt, Visit, WorkerRun, MAX_RECLAIM_RETRIES};
pub use stats::Stats;
pub use store::StoreReject;
pub use zmem_codec::PAGE_SIZE;
pub use zmem_device::{BlockDevice, IoError};
pub use zmem_kernel::{AttrError, Errno};
