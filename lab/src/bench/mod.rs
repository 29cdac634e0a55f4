//! Benchmarks behind `zmem bench`, one module per mode.

pub mod codecs;
pub mod device;
pub mod kernel;
pub mod zswap;
pub mod recomp;
pub mod fastpath;
pub mod writeback;
