//! The timed random-read phase of device mode, the same for the engine
//! device and the kernel device: aligned request offsets of 2^page_cluster
//! pages (as swap cluster readahead reads, see mm/swap_state.c), one buffer
//! per reader thread, per-request latency and the readers' CPU time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use zmem_codec::PAGE_SIZE;

/// The result of one random-read phase.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReadResult {
    pub page_cluster: u32,
    pub mibps: f64,
    pub iops: f64,
    pub lat_mean_ns: f64,
    /// The median request: robust against the preemption spikes of a busy machine.
    pub lat_p50_ns: f64,
    pub lat_p99_ns: f64,
    /// CPU seconds the reader threads used (user + system, from
    /// /proc/thread-self/stat; 10 ms resolution), None where unreadable.
    pub cpu_s: Option<f64>,
    /// Wall-clock seconds of the phase.
    pub wall_s: f64,
}

/// This thread's CPU time in nanoseconds (CLOCK_THREAD_CPUTIME_ID: the
/// scheduler's own accounting, not /proc's 10 ms clock ticks, which read
/// 0 or 1 tick for a phase of a few milliseconds).
fn thread_cpu_ns() -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec we own; the clock id is a constant.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (r == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// The random request offsets of one phase, per thread: page indexes aligned
/// to the request size (2^pc pages), as swap cluster readahead reads.
pub fn request_indexes(
    pages: usize,
    page_cluster: u32,
    requests: usize,
    threads: usize,
    seed: u64,
) -> Vec<Vec<usize>> {
    let n = 1usize << page_cluster;
    let slots = (pages / n).max(1);
    let mut x = seed ^ (page_cluster as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let per = requests.div_ceil(threads.max(1));
    (0..threads.max(1))
        .map(|_| {
            (0..per)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (x % slots as u64) as usize * n
                })
                .collect()
        })
        .collect()
}

/// Run one read phase: each thread issues its requests through `read`
/// (given the thread's buffer and a page index) and times each one.
pub(crate) fn read_phase<F>(
    page_cluster: u32,
    plan: &[Vec<usize>],
    read: F,
) -> Result<ReadResult, String>
where
    F: Fn(&mut [u8], usize) -> Result<(), String> + Sync,
{
    read_phase_at(PAGE_SIZE, page_cluster, plan, read)
}

/// [`read_phase`] over pages of `page_size` bytes (a 16 or 64 KiB kernel's).
pub(crate) fn read_phase_at<F>(
    page_size: usize,
    page_cluster: u32,
    plan: &[Vec<usize>],
    read: F,
) -> Result<ReadResult, String>
where
    F: Fn(&mut [u8], usize) -> Result<(), String> + Sync,
{
    let bytes = page_size << page_cluster;
    let failed = AtomicU64::new(0);
    let mut cpu_ns = Some(0u64);
    let start = Instant::now();
    let mut lats: Vec<u64> = std::thread::scope(|s| {
        let hs: Vec<_> = plan
            .iter()
            .map(|idx| {
                let read = &read;
                let failed = &failed;
                s.spawn(move || {
                    let (mut raw, off) = aligned_buffer(bytes);
                    let buf = &mut raw[off..off + bytes];
                    let mut lat = Vec::with_capacity(idx.len());
                    let cpu0 = thread_cpu_ns();
                    for &i in idx {
                        let t = Instant::now();
                        if read(buf, i).is_err() {
                            failed.fetch_add(1, Ordering::Relaxed);
                        }
                        lat.push(t.elapsed().as_nanos() as u64);
                    }
                    let cpu = cpu0.zip(thread_cpu_ns()).map(|(a, b)| b.saturating_sub(a));
                    (lat, cpu)
                })
            })
            .collect();
        let mut all = Vec::new();
        for h in hs {
            let (lat, cpu) = h.join().unwrap_or_default();
            all.extend(lat);
            cpu_ns = cpu_ns.zip(cpu).map(|(a, b)| a + b);
        }
        all
    });
    let wall = start.elapsed().as_secs_f64();
    if failed.load(Ordering::Relaxed) > 0 {
        return Err(format!("{} reads failed", failed.load(Ordering::Relaxed)));
    }
    let n = lats.len().max(1);
    lats.sort_unstable();
    let mean = lats.iter().sum::<u64>() as f64 / n as f64;
    let p99 = lats
        .get((n * 99).div_ceil(100).saturating_sub(1))
        .copied()
        .unwrap_or(0) as f64;
    Ok(ReadResult {
        page_cluster,
        mibps: (lats.len() * bytes) as f64 / wall / (1 << 20) as f64,
        iops: lats.len() as f64 / wall,
        lat_mean_ns: mean,
        lat_p50_ns: lats.get(n.saturating_sub(1) / 2).copied().unwrap_or(0) as f64,
        lat_p99_ns: p99,
        cpu_s: cpu_ns.map(|t| t as f64 / 1e9),
        wall_s: wall,
    })
}

/// A buffer with a 4096-aligned window of `len` bytes at the returned offset
/// (O_DIRECT needs aligned memory; over-allocating keeps this safe code).
pub(crate) fn aligned_buffer(len: usize) -> (Vec<u8>, usize) {
    let v = vec![0u8; len + 4096];
    let off = v.as_ptr().align_offset(4096);
    (v, off)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_plan_is_aligned_in_range_and_deterministic() {
        for pc in 0..4 {
            let p = request_indexes(100, pc, 1000, 2, 7);
            assert_eq!(p.len(), 2);
            assert_eq!(p[0].len(), 500);
            for &i in p.iter().flatten() {
                assert_eq!(i % (1 << pc), 0);
                assert!(i + (1 << pc) <= 100 || (1 << pc) > 100);
            }
            assert_eq!(p, request_indexes(100, pc, 1000, 2, 7));
        }
    }
}
