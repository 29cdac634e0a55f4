//! zmem-serve: a served device. An engine device (a zram device, or zswap's
//! block view over a backing file) is built from a [`Spec`] the way a script
//! configures /sys/block/zramN, optionally maintained by the policy engine,
//! and served over NBD with a control socket answering attributes by their
//! sysfs names ([`run`]), swap-safe when it can or must be ([`SwapUse`]).
//! The transport is thin: the engine is shared.

mod device;
mod run;
mod safety;

pub use device::{fast_when, EngineSpec};
pub use run::{run, Spec};
pub use safety::SwapUse;
