//! zmem-serve: a served device. An engine device (a zram device, or zswap's
//! block view over a backing file) is built from a [`Spec`] the way a script
//! configures /sys/block/zramN, optionally maintained by the policy engine,
//! and served over NBD (or as the kernel block device /dev/ublkbN, `ublk`)
//! with a control socket answering attributes by their sysfs names ([`run`]),
//! swap-safe when it can or must be ([`SwapUse`]). The transport is thin:
//! the engine is shared.

mod device;
mod keeper;
mod run;
mod safety;
mod ublk;

pub use device::{fast_when, EngineSpec};
pub use run::{Recovery, Spec};
pub use safety::SwapUse;

/// Build the device and serve it until SIGINT, SIGTERM or SIGHUP: over NBD
/// on `listen`, or with `ublk` as the kernel block device /dev/ublkbN.
pub fn run(s: Spec) -> anyhow::Result<()> {
    match s.ublk.clone() {
        Some(u) => ublk::run(s, u),
        None => run::run(s),
    }
}
