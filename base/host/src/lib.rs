//! zmem-host: the machine, read and changed reversibly.
//!
//! * [`Sys`]: `/sys`, `/proc` and `/run` under a root: the running kernel, or a
//!   fixture tree whose emulator plays the kernel for tests;
//! * [`HotDevice`]: a kernel zram device zmem hot-added and removes again;
//! * [`SysfsDevice`]: a kernel zram device as an attribute target;
//! * [`backing`]: a backing device or file checked and claimed as the kernel claims it;
//! * [`set_io_flusher`], [`lock_all_on_fault`]: what makes a process safe to
//!   serve the swap device it backs (`zmem serve`);
//! * [`zswap_compressors`]: which compressors the running kernel can give zswap;
//! * the one host layer every command that changes the machine uses
//!   (`zmem apply`/`--revert`, `trial`/`--recover`, `tune`, the kernel rows of
//!   `bench`): [`Action`]s (zram hot_add/reset/hot_remove, attribute, sysctl
//!   and zswap parameter writes, mkswap/swapon/swapoff, swap files, cgroups),
//!   each undo written to a [`Journal`] before the change is made, undone in
//!   reverse by a [`Guard`] (also on panic and, with [`SignalWatch`], on
//!   Ctrl-C/SIGTERM/SIGHUP, or replayed by the signal itself in runs that never
//!   check for it), and replayed from a dead process's journal by
//!   [`recover_journals`].
//!
//! Modules (arrows point one way):
//!
//! ```text
//! undo (Guard, recovery) ──► hotdev ──► journal, action, knob
//! action ──► knob ──► sys ──► swap, sys::fixture (a child of sys)
//! journal ──► sys;   cgroup ──► knob, cgroup_psi;   crypto ──► sys;   action, knob ──► teardown ──► sys;   signal ──► undo, hotdev;   backing ──► signature;   swap_dir, swap_safety (leaves); files zmem reads and writes are zmem-files'
//! ```

mod action;
pub mod backing;
mod cgroup;
mod cgroup_psi;
mod crypto;
mod hotdev;
mod journal;
mod knob;
mod signal;
mod swap;
mod swap_dir;
mod swap_safety;
mod sys;
mod sysfs_device;
mod teardown;
mod undo;

pub use action::{zram_incarnation, Action};
pub use cgroup::{
    detect as memory_hierarchy, own_memory_limit, Cgroup, CgroupVersion, MemoryHierarchy,
};
pub use cgroup_psi::{
    parse_pressure, system_pressure, Pressure, PsiFile, PsiLine, PsiScope, SYSTEM_MEMORY_PRESSURE,
};
pub use crypto::{zswap_compressor_available, zswap_compressors};
pub use hotdev::{HotDevice, KernelZramUnavailable};
pub use journal::{
    discard as discard_journal, orphans_in as orphan_journals, pending_lines as journal_lines,
    read_trusted as read_journal, test_pause_step, write_file as write_journal, Journal,
    JOURNAL_DIR,
};
pub use knob::{active_swaps, cgroup_pids, read_knob, PAGE_CLUSTER, SWAPPINESS, ZSWAP_PARAMS};
pub use signal::SignalWatch;
pub use swap::{create_swap_file, swapoff, swapon, verify_swap_file, DISK_PRIORITY, ZRAM_PRIORITY};
pub use swap_dir::{swap_dir_refusal, swapless_filesystem};
pub use swap_safety::{
    has_capability, io_flusher, lock_all_on_fault, memlock_limit, set_io_flusher, CAP_IPC_LOCK,
    CAP_SYS_RESOURCE,
};
pub use sys::{Sys, FIXTURE_LOG};
pub use sysfs_device::{find_ctl_sockets, SysfsDevice};
pub use teardown::{holders as zram_holders, retry_busy, TEARDOWN_TIMEOUT};
pub use undo::{recover_dir as recover_journals, Guard, Recovery};
