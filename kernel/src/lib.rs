//! Access to the kernel's own compressed memory: zram devices, zswap,
//! the VM sysctls and cgroups. This crate never depends on zmem's engine.

pub mod hotdev;
pub mod trial;

// Ops for the kernel's zram and zswap (issue 11).
pub mod apply;
pub mod attr;
pub mod config;
pub mod exporter;
pub mod json;
pub mod persist;
pub mod policy;
pub mod status;
pub mod sys;
pub mod units;
pub mod zram;
pub mod zswap;

#[cfg(test)]
mod testutil;

pub use hotdev::{HotDevice, KernelZramUnavailable};
