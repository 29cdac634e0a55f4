//! zmem-kernel: the kernel's zram and zswap ABI as data, with no I/O: what
//! the files under `/sys/block/zramN`, `/proc` and zswap's debugfs say and how
//! the kernel parses what is written to them.
//!
//! * [`Errno`] and [`AttrError`]: how an attribute or an I/O fails;
//! * the kernel's parsers ([`memparse`], [`kstrtoull`] and friends,
//!   [`next_args`], [`sysfs_streq`]), with their quirks;
//! * [`MmStat`], [`IoStat`], [`BdStat`]: the statistics lines, parsed and rendered;
//! * [`proc`]: `/proc/swaps`, `/proc/meminfo`, `/proc/mounts`;
//! * [`zswap`]: zswap's debugfs statistics by name;
//! * [`ZRAM_ATTRS`]: every zram attribute, declared once (mode, kernel versions,
//!   whether the engine has it), and [`KernelVersion`]/[`KernelSpan`];
//! * [`KernelModel`]: one kernel version's zram as the engine serves it
//!   (attributes, zsmalloc's chain, writeback, recompression, parameters),
//!   and that version's zswap (same-filled and incompressible pages, the
//!   allocators, parameters and debugfs statistics; [`SameFilled`], [`ZSWAP_STATS`]).
//!
//! This crate depends on no other zmem crate.

mod attrs;
mod errno;
mod error;
mod model;
mod parse;
pub mod proc;
mod stat;
#[doc(hidden)]
pub mod testutil;
mod version;
pub mod zswap;

pub use attrs::{
    attr, page_type, zram_attr, Change, Feature, Kernels, Mode, Syntax, ZramAttr, BLOCK_ATTRS,
    ZRAM_ATTRS,
};
pub use errno::Errno;
pub use error::AttrError;
pub use model::{ChainRule, KernelModel, ModelError, SameFilled, PAGE_SHIFTS, ZSWAP_STATS};
pub use parse::{
    kstrtobool, kstrtoint, kstrtoll, kstrtou16, kstrtoul, kstrtoull, memparse, next_args,
    sysfs_streq,
};
pub use proc::SwapEntry;
pub use stat::{
    parse_comp_algorithm, parse_debug_stat_miss_free, parse_recomp_algorithm, render_debug_stat,
    BdStat, IoStat, MmStat,
};
pub use version::{KernelSpan, KernelVersion};
