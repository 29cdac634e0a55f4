//! The kernel side of `zmem bench device` (and of the verdict's rounds,
//! [`super::sample`]): the same corpus through a hot-added
//! kernel zram device (`zmem_host::HotDevice`) with the same algorithm,
//! written with O_DIRECT pwrite and read back with O_DIRECT random preads of
//! the same sizes and offsets as the engine's reads. Each device keeps a
//! crash journal while it exists, so `zmem trial --recover` removes it if
//! zmem is killed. Which algorithms the kernel offers, found out without root
//! where the machine allows it, is [`offered`] (a child module).

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::time::Instant;

use zmem_codec::PAGE_SIZE;
use zmem_corpus::Corpus;
use zmem_host::HotDevice;
use zmem_kernel::MmStat;

use super::device_rows::{Options, Row, Target};

mod offered;
use super::random_read::{aligned_buffer, read_phase, request_indexes};
pub use offered::{offered, Offered};

/// Bytes per pwrite while writing the corpus (large, as dd would, so the
/// kernel's write rate is not a syscall-rate measurement).
const WRITE_CHUNK: usize = 1 << 20;

/// Why kernel rows cannot be produced here, or None when they can.
pub fn unavailable_reason() -> Option<String> {
    HotDevice::available().err().map(|e| e.to_string())
}

/// When the kernel's own zram cannot be measured here: why, and what root
/// would add, as one plain line; None when it can.
pub fn without_kernel_rows() -> Option<String> {
    unavailable_reason().map(|why| {
        format!(
            "{why}: engine rows only (the same algorithms, byte-exact, in user space); \
             as root each algorithm the kernel offers is also measured through a real zram device \
             (the kernel's own rows: its allocator, block layer and locking), and the verdict is made on those"
        )
    })
}

/// The algorithms the kernel's zram offers, empty when unknown: the list of
/// [`offered`] (which also says how it knows).
pub fn algorithms() -> Vec<String> {
    offered().algorithms
}

pub(crate) fn open_direct(d: &HotDevice, write: bool) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(libc::O_DIRECT)
        .open(d.dev_path())
}

/// Write the corpus to a device and return (seconds in the pwrite calls, mm_stat).
pub fn write_corpus(d: &HotDevice, corpus: &Corpus) -> Result<(f64, MmStat), String> {
    write_corpus_chunks(d, corpus).map(|(t, m)| (t.iter().sum(), m))
}

/// Write the corpus to a device in 1 MiB pwrites and return the seconds of
/// each call and the mm_stat afterwards.
pub fn write_corpus_chunks(d: &HotDevice, corpus: &Corpus) -> Result<(Vec<f64>, MmStat), String> {
    let f = open_direct(d, true).map_err(|e| format!("open {}: {e}", d.dev_path().display()))?;
    let data = corpus.bytes();
    let (mut raw, off) = aligned_buffer(WRITE_CHUNK);
    let buf = &mut raw[off..off + WRITE_CHUNK];
    let mut elapsed = Vec::with_capacity(data.len() / WRITE_CHUNK + 1);
    let mut pos = 0;
    while pos < data.len() {
        let n = WRITE_CHUNK.min(data.len() - pos);
        buf[..n].copy_from_slice(&data[pos..pos + n]);
        // Only the syscall is timed, not filling the aligned buffer.
        let t = Instant::now();
        f.write_all_at(&buf[..n], pos as u64)
            .map_err(|e| format!("pwrite at {pos}: {e}"))?;
        elapsed.push(t.elapsed().as_secs_f64());
        pos += n;
    }
    f.sync_all().map_err(|e| format!("fsync: {e}"))?;
    let m = d
        .read_attr(zmem_kernel::attr::MM_STAT)
        .map_err(|e| format!("mm_stat: {e}"))?;
    let m = MmStat::parse(&m).ok_or_else(|| format!("cannot parse mm_stat {m:?}"))?;
    Ok((elapsed, m))
}

/// A fresh device configured with `algo` (and the level of `opts`) and
/// room for `pages` pages.
pub(crate) fn configured_device(
    algo: &str,
    pages: usize,
    opts: &Options,
) -> Result<HotDevice, String> {
    let d = HotDevice::create_journaled().map_err(|e| e.to_string())?;
    d.write_attr(zmem_kernel::attr::COMP_ALGORITHM, algo)
        .map_err(|e| format!("kernel zram has no algorithm {algo}: {e}"))?;
    if let Some(l) = opts.params.level {
        d.write_attr(zmem_kernel::attr::ALGORITHM_PARAMS, &format!("level={l}"))
            .map_err(|e| format!("kernel refused level={l}: {e}"))?;
    }
    d.write_attr(
        zmem_kernel::attr::DISKSIZE,
        &((pages * PAGE_SIZE) as u64).to_string(),
    )
    .map_err(|e| format!("setting disksize failed: {e}"))?;
    Ok(d)
}

/// Kernel rows for one algorithm: one per page-cluster value.
pub fn run_kernel(
    corpus: &Corpus,
    algo: &str,
    opts: &Options,
    progress: &mut dyn FnMut(&str),
) -> Vec<Row> {
    let threads = opts.threads.max(1);
    let pages = corpus.page_count();
    let fail = |reason: String| {
        vec![Row::unavailable(
            Target::Kernel,
            algo,
            &corpus.name,
            threads,
            reason,
        )]
    };
    progress("write");
    // As on the engine side: every pass into a fresh device (created and
    // removed outside the timed syscalls), the last one is read back.
    let passes = opts.write_passes_for(pages);
    let mut write_s = 0.0;
    let mut last = None;
    for _ in 0..passes {
        drop(last.take());
        let d = match configured_device(algo, pages, opts) {
            Ok(d) => d,
            Err(e) => return fail(e),
        };
        match write_corpus(&d, corpus) {
            Ok((secs, m)) => {
                write_s += secs;
                last = Some((d, m));
            }
            Err(e) => return fail(e),
        }
    }
    let Some((d, m)) = last else {
        return fail("no write pass ran".into());
    };
    let write_mibps = (passes * pages * PAGE_SIZE) as f64 / write_s / (1 << 20) as f64;
    let f = match open_direct(&d, false) {
        Ok(f) => f,
        Err(e) => return fail(format!("open {}: {e}", d.dev_path().display())),
    };
    let mut rows = Vec::new();
    for &pc in &opts.page_clusters {
        progress(&format!("reads pc={pc}"));
        let plan = request_indexes(pages, pc, opts.requests, threads, opts.seed);
        let n = 1usize << pc;
        let r = read_phase(pc, &plan, |buf, index| {
            let len = n.min(pages - index) * PAGE_SIZE;
            f.read_exact_at(&mut buf[..len], (index * PAGE_SIZE) as u64)
                .map_err(|e| e.to_string())
        });
        match r {
            Ok(r) => rows.push(Row::measured(
                Target::Kernel,
                algo,
                &corpus.name,
                threads,
                &m,
                write_mibps,
                &r,
            )),
            Err(e) => rows.push(Row::unavailable(
                Target::Kernel,
                algo,
                &corpus.name,
                threads,
                e,
            )),
        }
    }
    rows
}
