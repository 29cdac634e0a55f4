//! zmem-device: the interface every zram-like device offers, wherever it runs.
//!
//! * [`BlockDevice`]: what an engine device (zram, zswap's block view) offers
//!   the NBD server and the control socket;
//! * [`AttrTarget`]: read and write attributes by their sysfs names; a served
//!   device's control socket ([`CtlClient`], protocol in [`ctl`]) and every
//!   in-process [`BlockDevice`] ([`DeviceTarget`]) are targets, and so is a
//!   kernel device (`zmem_host::SysfsDevice`).

mod attr;
mod blockdev;
pub mod ctl;

pub use attr::{AttrTarget, DeviceTarget, DryRun};
pub use blockdev::{BlockDevice, IoError};
pub use ctl::CtlClient;
