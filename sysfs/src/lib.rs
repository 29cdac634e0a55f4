//! zmem-sysfs: the `/sys/block/zramN` vocabulary every other zmem crate
//! speaks, and the access to the kernel's `/sys` and `/proc`.
//!
//! * [`Errno`] and [`AttrError`]: how an attribute or an I/O fails;
//! * the kernel's parsers ([`memparse`], [`kstrtoull`] and friends,
//!   [`next_args`], [`sysfs_streq`]), with their quirks;
//! * [`MmStat`], [`IoStat`], [`BdStat`]: the statistics lines, parsed and rendered;
//! * [`BlockDevice`]: what an engine device (zram, zswap's block view) offers
//!   the NBD server and the control socket;
//! * [`AttrTarget`]: read and write attributes by name, implemented by a
//!   kernel device ([`SysfsDevice`]), a served device ([`CtlClient`]) and every
//!   [`BlockDevice`] (in process);
//! * the control-socket protocol ([`ctl`]);
//! * [`Sys`]: `/sys` and `/proc` under a root, the running kernel or a fixture tree;
//! * [`HotDevice`]: a kernel zram device zmem hot-added and removes again;
//! * [`input`]: files a user hands zmem, checked before they are read;
//! * [`signature`]: what a file or device already holds, before zmem writes to it.
//!
//! This crate depends on no other zmem crate.

mod attr;
mod blockdev;
pub mod ctl;
mod errno;
mod fixture;
mod hotdev;
pub mod input;
mod parse;
mod privilege;
pub mod proc;
pub mod signature;
mod stat;
mod sys;
#[doc(hidden)]
pub mod testutil;
pub mod zswap;

pub use attr::{AttrError, AttrTarget, DeviceTarget, DryRun, SysfsDevice};
pub use blockdev::{BlockDevice, IoError};
pub use ctl::{find_ctl_sockets, CtlClient};
pub use errno::Errno;
pub use hotdev::{HotDevice, KernelZramUnavailable};
pub use parse::{
    kstrtobool, kstrtoint, kstrtoll, kstrtou16, kstrtoul, kstrtoull, memparse, next_args,
    sysfs_streq,
};
pub use privilege::euid_is_root;
pub use proc::SwapEntry;
pub use stat::{
    parse_comp_algorithm, parse_debug_stat_miss_free, parse_recomp_algorithm, render_debug_stat,
    BdStat, IoStat, MmStat,
};
pub use sys::{Sys, FIXTURE_LOG};
