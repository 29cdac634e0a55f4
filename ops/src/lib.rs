//! zmem-ops: the kernel's own zram and zswap, run by zmem. Status in words,
//! `apply` of a zram-generator.conf (and its undo), `persist` across reboots,
//! the Prometheus exporter, and `zmem policy` over kernel devices and served
//! ones alike. Everything goes through [`zmem_host::Sys`], so each feature
//! runs against a fixture tree as well as against the running kernel.

pub mod apply;
pub mod exporter;
pub mod persist;
pub mod policy;
pub mod status;
pub mod zram;
pub mod zswap;
