//! zmem-ops: the kernel's own zram and zswap, run by zmem. Status in words,
//! `apply` of a zram-generator.conf (and its undo), `persist` across reboots,
//! the Prometheus exporter, and `zmem policy`'s round over every kernel and
//! served device (the engine itself is zmem-policy's). Everything goes through [`zmem_host::Sys`], so each feature
//! runs against a fixture tree as well as against the running kernel.

pub mod apply;
pub mod exporter;
pub mod persist;
mod policy;
pub mod status;
mod zram;
mod zswap;

pub use policy::round_all;
pub use zram::{read_device, ZramDevice};
