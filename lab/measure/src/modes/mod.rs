//! Benchmarks behind `zmem bench`, one module per mode.

pub mod codecs;
pub mod device;
mod device_rows;
pub mod fastpath;
mod floor;
pub mod kernel;
pub(crate) mod random_read;
pub mod recomp;
pub mod sample;
pub mod transport;
pub mod writeback;
mod writeback_kernel;
pub mod zswap;
mod zswap_counters;
mod zswap_kernel;
mod zswap_worker;

/// Nearest-rank percentile `p` (0..=1) of sorted samples; 0 when empty.
pub(crate) fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i] as f64
}
