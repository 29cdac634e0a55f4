//! zmem-files: the files zmem reads and writes on a machine others share.
//!
//! * [`input`]: files a user hands zmem, checked before they are read;
//! * [`signature`]: what a file or device already holds, before zmem writes to it;
//! * [`StateDir`], [`write_output`], [`write_outputs`], [`Staging`]: the one
//!   writer of every file zmem writes (private, new or replaced only when
//!   zmem's and yours, never through a link, all or nothing), and
//!   [`shared_dir`], the one check of `/run/zmem`;
//! * [`trusted_dir`], [`trusted_file`], [`trusted_in_tree`]: the one check of
//!   a rendezvous point (a socket, lock, journal, swap directory, `--root`
//!   tree) before it is trusted: owner, mode and every directory above it;
//! * [`InstanceLock`]: one trial per machine, one `zmem policy` per state file (flock);
//! * [`euid_is_root`]: whether this process may change the machine.
//!
//! Modules (arrows point one way): `lock ──► trust ──► output ──► output::{batch ──► place}`;
//! `trust ──► output`; `input`, `signature`, `privilege` are leaves.

pub mod input;
mod lock;
mod output;
mod privilege;
pub mod signature;
#[doc(hidden)]
pub mod testutil;
mod trust;

pub use lock::{
    describe_holder, hold_for_process, release_process_locks, InstanceLock, LockError, TRIAL_LOCK,
};
pub use output::{
    check_output, utc_civil, utc_stamp, write_output, write_output_for, write_outputs, OutputFile,
    Readers, Replace, Staging, StateDir, STATE_DIR_ENV,
};
pub use privilege::euid_is_root;
pub use trust::{private_dir, shared_dir, trusted_dir, trusted_file, trusted_in_tree, Kind};
