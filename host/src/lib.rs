//! zmem-host: the machine zmem runs on, read and changed.
//!
//! * [`Sys`]: `/sys`, `/proc` and `/run` under a root: the running kernel, or a
//!   fixture tree whose emulator plays the kernel for tests;
//! * [`HotDevice`]: a kernel zram device zmem hot-added and removes again;
//! * [`SysfsDevice`]: a kernel zram device as an attribute target;
//! * [`input`]: files a user hands zmem, checked before they are read;
//! * [`signature`]: what a file or device already holds, before zmem writes to it.

mod hotdev;
pub mod input;
mod privilege;
pub mod signature;
mod sys;
mod sysfs_device;
#[doc(hidden)]
pub mod testutil;

pub use hotdev::{HotDevice, KernelZramUnavailable};
pub use privilege::euid_is_root;
pub use sys::{Sys, FIXTURE_LOG};
pub use sysfs_device::{find_ctl_sockets, SysfsDevice};
