//! Access to the kernel's own compressed memory: zram devices, zswap,
//! the VM sysctls and cgroups. This crate never depends on zmem's engine.

pub mod hotdev;

pub use hotdev::{HotDevice, KernelZramUnavailable};
