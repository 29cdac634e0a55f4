//! zram as a library: a compressed page store that behaves like the kernel's
//! zram — slot table with same-filled/huge/idle rules, mem_limit, attributes
//! by their sysfs names with the kernel's syntax, errors and statistics — and
//! runs in process with per-slot locks and one compression stream per thread.
//!
//! One file per concern, as the kernel's driver:
//! * `device`: configuration, init/reset, the builder, the init lock;
//! * `slot`: the slot table entry, flags and per-slot lock;
//! * `write`, `read`, `discard`, `idle`: the page paths;
//! * `io`: byte-range block I/O and the `zmem_device::BlockDevice` implementation;
//! * `attrs`: attributes (the kernel's parsers and errnos are zmem-kernel's);
//! * `stats`: counters and their exact rendering;
//! * `streams`, `pool`: compressors and allocators;
//! * `recompress` + `pp`: secondary algorithms, `recompress`, post-processing buckets;
//! * `writeback` + `backing`: `writeback`, `writeback_limit`, `bd_stat`; the backing file and its bitmap;
//! * `recover`: a recoverable device's store in memfds, and recovery from a dead one's;
//! * `fastpath`: the fast algorithm and when writes use it (zmem-admin' policy engine
//!   moves its slots back to the primary in the background).
//!
//! The concern files and `device` import each other on purpose: `Zram`
//! (device.rs) holds the state each concern defines (the fast path, the
//! backing store, the writeback limit, a recoverable device's memfds), and each concern's file adds its
//! methods to `Zram`, as every function of zram_drv.c takes `struct zram`.
//!
//! ```no_run
//! use zmem_device::BlockDevice;
//! use zmem_zram::Zram;
//! let dev = Zram::new();
//! dev.attr_write("comp_algorithm", "lz4").unwrap();
//! dev.attr_write("disksize", "64M").unwrap();
//! dev.write_at(0, &[7u8; 4096]).unwrap();
//! print!("{}", dev.attr_read("mm_stat").unwrap());
//! ```

mod attrs;
mod backing;
mod device;
mod discard;
mod fastpath;
mod idle;
mod io;
mod pool;
mod pp;
mod precise;
mod read;
mod recompress;
mod recover;
mod slot;
mod stats;
mod streams;
mod table;
mod write;
mod writeback;

pub use attrs::WRITABLE;
pub use device::{Config, OpenGuard, Zram, ZramBuilder};
pub use fastpath::FastMode;
pub use pool::PoolFactory;
pub use recompress::{
    global_huge_class_size, huge_class_size_at, RecompressParams, RecompressReport,
};
pub use recover::{RecoverReport, Store};
pub use slot::SlotInfo;
pub use writeback::{BackingFault, BdOp, WbLimit, WritebackParams, WritebackReport};
pub use zmem_codec::PAGE_SIZE;
/// The pools' background work (zspage memory populated ahead): wait for it
/// before `fork`.
pub use zmem_zpool::wait_background;
