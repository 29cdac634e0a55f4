//! `zmem bench device` (and `floor`): the corpus through an engine zram device per
//! algorithm — mm_stat after writing, write MiB/s, then random reads of
//! 2^page_cluster consecutive pages (page-cluster 0..3, as the published fio
//! method reads a swap device) with MiB/s, IOPS, mean and p99 latency — and,
//! with root and kernel zram, the same through a hot-added kernel device read
//! back with O_DIRECT preads ([`super::kernel`]), so the rows sit side by side.

use std::time::Instant;

use serde::Serialize;
use zmem_codec::{Params, PAGE_SIZE};
use zmem_corpus::Corpus;
use zmem_device::BlockDevice;
use zmem_kernel::KernelModel;
use zmem_zram::Zram;

use crate::engine::{running_kernel, EngineKernel};

use super::device_rows::huge_class_size;
pub use super::device_rows::{Options, Row, Target, MAX_AUTO_WRITE_PASSES, WRITE_BYTES_MIN};
use super::random_read::{read_phase_at, request_indexes};

/// Progress events, for a progress bar.
#[derive(Debug, Clone)]
pub struct Progress {
    /// Steps done and total (one step per algorithm and target phase).
    pub done: usize,
    pub total: usize,
    /// What is running, e.g. "lz4 engine: reads pc=2".
    pub what: String,
}

/// Engine overhead: write + read of the corpus's non-same-filled pages
/// through the engine, against compress + decompress of the same pages by
/// the codec alone (one thread, best of 3 passes each).
#[derive(Debug, Clone, Serialize)]
pub struct Overhead {
    pub algo: String,
    pub pages: usize,
    /// MiB of pages per second through compress + decompress, codec only.
    pub codec_mibps: f64,
    /// MiB of pages per second through write_page + read_page.
    pub engine_mibps: f64,
    /// engine_mibps / codec_mibps.
    pub engine_share: f64,
}

/// Measure [`Overhead`] for one algorithm; None when it is unavailable or
/// the corpus has no page that reaches the codec.
pub fn measure_overhead(
    corpus: &Corpus,
    engine: &EngineKernel,
    algo: &str,
    params: &Params,
) -> Option<Overhead> {
    let pages: Vec<&[u8]> = corpus
        .pages()
        .filter(|p| zmem_codec::same_filled(p).is_none())
        .collect();
    if pages.is_empty() {
        return None;
    }
    let backend = zmem_codec::find(algo).ok()?;
    let page = corpus.page_size();
    let params = &Params {
        page_size: Some(page),
        ..params.clone()
    };
    let mut stream = backend.new_stream(params).ok()?;
    let mut comp = vec![0u8; zmem_codec::max_compressed(page)];
    let mut out = vec![0u8; page];
    // The codec does the same work as the engine: pages at or above
    // huge_class_size are stored raw by zram and never decompressed.
    let huge = huge_class_size(engine, algo, params).ok()?;
    let mut best_codec = f64::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        for p in &pages {
            let n = stream.compress(p, &mut comp).unwrap_or(page);
            if n < huge {
                stream.decompress(&comp[..n], &mut out).ok()?;
            }
        }
        best_codec = best_codec.min(t.elapsed().as_secs_f64());
    }
    let mut best_engine = f64::MAX;
    for _ in 0..3 {
        let dev = Zram::for_kernel(engine.model.with_page_size(page).ok()?)
            .algorithm(algo, params.clone())
            .disksize((pages.len() * page) as u64)
            .build()
            .ok()?;
        let t = Instant::now();
        for (i, p) in pages.iter().enumerate() {
            dev.write_page(i, p).ok()?;
        }
        for i in 0..pages.len() {
            dev.read_page(i, &mut out).ok()?;
        }
        best_engine = best_engine.min(t.elapsed().as_secs_f64());
    }
    let mib = (pages.len() * page) as f64 / (1 << 20) as f64;
    let (codec_mibps, engine_mibps) = (mib / best_codec, mib / best_engine);
    Some(Overhead {
        algo: algo.to_string(),
        pages: pages.len(),
        codec_mibps,
        engine_mibps,
        engine_share: engine_mibps / codec_mibps,
    })
}

/// Everything a run produced.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub rows: Vec<Row>,
    /// The kernel version whose zram the engine rows behave as, and why that one.
    pub engine_kernel: String,
    pub engine_kernel_why: String,
    /// Engine overhead per available algorithm.
    pub overhead: Vec<Overhead>,
    /// Why kernel rows are missing (not root, no zram, disabled), if they are.
    pub kernel_missing: Option<String>,
}

/// The algorithms to run.
pub fn algorithms(opts: &Options) -> Vec<String> {
    if opts.algorithms.is_empty() {
        zmem_codec::names().into_iter().map(String::from).collect()
    } else {
        opts.algorithms.clone()
    }
}

/// Write the corpus `opts.write_passes_for` times, each pass into a fresh
/// engine device (built and dropped outside the timed part, as the kernel
/// side does). Returns the device of the last pass and the write MiB/s, or
/// why there are no rows.
fn write_passes(corpus: &Corpus, algo: &str, opts: &Options) -> Result<(Zram, f64), String> {
    let pages = corpus.page_count();
    let engine = opts.engine();
    let build = || {
        engine
            .zram()
            .name("zram-bench")
            .algorithm(algo, opts.params.clone())
            .disksize((pages * corpus.page_size()) as u64)
            .build()
            .map_err(|e| e.message)
    };
    let passes = opts.write_passes_for(pages);
    let mut write_s = 0.0;
    let mut dev = build()?;
    for pass in 0..passes {
        if pass > 0 {
            // The previous pass's device is dropped here, untimed.
            dev = build()?;
        }
        let t = Instant::now();
        for (i, p) in corpus.pages().enumerate() {
            dev.write_page(i, p)
                .map_err(|e| format!("write failed: {e}"))?;
        }
        write_s += t.elapsed().as_secs_f64();
    }
    let write_mibps = (passes * pages * corpus.page_size()) as f64 / write_s / (1 << 20) as f64;
    Ok((dev, write_mibps))
}

/// Check that every page reads back as written.
fn verify_pages(dev: &Zram, corpus: &Corpus) -> Result<(), String> {
    let mut b = vec![0u8; corpus.page_size()];
    for (i, p) in corpus.pages().enumerate() {
        if dev.read_page(i, &mut b).is_err() || b != p {
            return Err(format!("page {i} did not read back as written"));
        }
    }
    Ok(())
}

/// Write the corpus into an engine device with `algo`, then read it back
/// at each page-cluster value. Verifies every page after writing.
pub fn run_engine(
    corpus: &Corpus,
    algo: &str,
    opts: &Options,
    progress: &mut dyn FnMut(&str),
) -> Vec<Row> {
    let threads = opts.threads.max(1);
    let pages = corpus.page_count();
    let fail = |reason: String| {
        vec![Row::unavailable(
            Target::Engine,
            algo,
            &corpus.name,
            threads,
            reason,
        )]
    };
    progress("write");
    let (dev, write_mibps) = match write_passes(corpus, algo, opts) {
        Ok(d) => d,
        Err(e) => return fail(e),
    };
    let m = dev.mm_stat();
    // Verify everything before timing reads.
    if let Err(e) = verify_pages(&dev, corpus) {
        return fail(e);
    }
    let mut rows = Vec::new();
    for &pc in &opts.page_clusters {
        progress(&format!("reads pc={pc}"));
        let plan = request_indexes(pages, pc, opts.requests, threads, opts.seed);
        let n = 1usize << pc;
        let page = corpus.page_size();
        let r = read_phase_at(page, pc, &plan, |buf, index| {
            let len = (n.min(pages - index)) * page;
            dev.read_at((index * page) as u64, &mut buf[..len])
                .map_err(|e| e.to_string())
        });
        match r {
            Ok(r) => rows.push(Row::measured(
                Target::Engine,
                algo,
                &corpus.name,
                threads,
                &m,
                write_mibps,
                &r,
            )),
            Err(e) => rows.push(Row::unavailable(
                Target::Engine,
                algo,
                &corpus.name,
                threads,
                e,
            )),
        }
    }
    rows
}

/// Why the running kernel's zram cannot stand beside an engine modelling
/// `page`-byte pages: its own page differs (one slot holds one page, so the
/// figures would not compare). `None` when the pages agree.
pub fn page_size_refusal(page: usize) -> Option<String> {
    // SAFETY: sysconf has no preconditions.
    let host = match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
        v if v > 0 => v as usize,
        _ => PAGE_SIZE,
    };
    (host != page).then(|| {
        format!(
            "the running kernel has {host}-byte pages and the engine models {page}-byte pages \
             (--page-size): kernel rows only on a kernel with {page}-byte pages"
        )
    })
}

/// The model at `page`-byte pages and the corpus cut into such pages.
fn with_page(
    model: KernelModel,
    corpus: &Corpus,
    page: usize,
) -> Result<(KernelModel, Corpus), String> {
    let model = model.with_page_size(page).map_err(|e| e.to_string())?;
    let corpus = if corpus.page_size() == page {
        corpus.clone()
    } else {
        corpus
            .clone()
            .with_page_size(page)
            .map_err(|e| e.to_string())?
    };
    Ok((model, corpus))
}

/// A run refused as a whole (a page size zmem does not model): one
/// unavailable row per algorithm, with the reason.
fn refused(algos: &[String], corpus: &Corpus, opts: &Options, why: String) -> Report {
    let rows = algos
        .iter()
        .map(|a| {
            Row::unavailable(
                Target::Engine,
                a,
                &corpus.name,
                opts.threads.max(1),
                why.clone(),
            )
        })
        .collect();
    Report {
        rows,
        engine_kernel: String::new(),
        engine_kernel_why: why.clone(),
        overhead: Vec::new(),
        kernel_missing: Some(why),
    }
}

/// The whole run: for each algorithm, the engine rows, then (where the kernel
/// has the algorithm) the kernel rows. The engine behaves as the zram of
/// [`EngineKernel::pick`]'s version (the running kernel's beside kernel rows).
pub fn run(corpus: &Corpus, opts: &Options, progress: &mut dyn FnMut(Progress)) -> Report {
    let algos = algorithms(opts);
    let page = opts.page_size.unwrap_or(PAGE_SIZE);
    let kernel_missing = if !opts.kernel {
        Some("kernel rows not requested".to_string())
    } else {
        page_size_refusal(page).or_else(super::kernel::unavailable_reason)
    };
    let running = running_kernel();
    let engine = EngineKernel::pick(opts.kernel_model, kernel_missing.is_none(), running.clone());
    let (model, corpus) = match with_page(engine.model, corpus, page) {
        Ok(m) => m,
        Err(e) => return refused(&algos, corpus, opts, e),
    };
    let corpus = &corpus;
    let engine = EngineKernel {
        model,
        why: engine.why,
    };
    let opts = &Options {
        kernel_model: Some(model),
        params: Params {
            page_size: Some(page),
            ..opts.params.clone()
        },
        ..opts.clone()
    };
    let tag = |mut rows: Vec<Row>, version: Option<String>| {
        for r in &mut rows {
            r.kernel.clone_from(&version);
            r.page_size = Some(page);
        }
        rows
    };
    let kernel_algos = if kernel_missing.is_none() {
        super::kernel::algorithms()
    } else {
        Vec::new()
    };
    let steps_per = 1 + opts.page_clusters.len();
    let total = algos.len() * (steps_per + usize::from(opts.floor))
        + algos.iter().filter(|a| kernel_algos.contains(a)).count() * steps_per;
    let mut done = 0;
    let mut rows = Vec::new();
    let mut overhead = Vec::new();
    for algo in &algos {
        let mut step = |what: &str| {
            progress(Progress {
                done,
                total,
                what: format!("{algo} engine: {what}"),
            });
            done += 1;
        };
        let engine_rows = tag(
            run_engine(corpus, algo, opts, &mut step),
            Some(model.to_string()),
        );
        if engine_rows.iter().any(|r| r.reason.is_none()) {
            overhead.extend(measure_overhead(corpus, &engine, algo, &opts.params));
        }
        rows.extend(engine_rows);
        if opts.floor {
            progress(Progress {
                done,
                total,
                what: format!("{algo} codec floor"),
            });
            done += 1;
            if page == PAGE_SIZE {
                rows.extend(super::floor::run_floor(corpus, algo, opts));
            } else {
                let why = "the codec floor (--floor) is measured at 4 KiB pages only".to_string();
                rows.push(Row::unavailable(
                    Target::Codec,
                    algo,
                    &corpus.name,
                    opts.threads.max(1),
                    why,
                ));
            }
        }
        if kernel_algos.contains(algo) {
            let mut step = |what: &str| {
                progress(Progress {
                    done,
                    total,
                    what: format!("{algo} kernel: {what}"),
                });
                done += 1;
            };
            let version = running.as_ref().ok().map(|v| v.to_string());
            rows.extend(tag(
                super::kernel::run_kernel(corpus, algo, opts, &mut step),
                version,
            ));
        }
    }
    progress(Progress {
        done: total,
        total,
        what: "done".into(),
    });
    Report {
        rows,
        engine_kernel: if page == PAGE_SIZE {
            model.to_string()
        } else {
            format!("{model} ({} KiB pages)", page / 1024)
        },
        engine_kernel_why: engine.why,
        overhead,
        kernel_missing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_rows_carry_mm_stat_and_rates() {
        let c = zmem_corpus::default_corpus();
        let opts = Options {
            requests: 200,
            kernel: false,
            write_passes: 2,
            ..Options::default()
        };
        let rows = run_engine(&c, "lz4", &opts, &mut |_| {});
        assert_eq!(rows.len(), 4);
        for (pc, r) in rows.iter().enumerate() {
            assert_eq!(r.reason, None);
            assert_eq!(r.page_cluster, Some(pc as u32));
            assert_eq!(r.orig_data_size, Some(c.page_count() as u64 * 4096));
            assert!(r.same_pages.unwrap() >= 160);
            assert!(r.ratio.unwrap() > 1.0 && r.effective_ratio.unwrap() > 1.0);
            assert!(
                r.iops.unwrap() > 0.0
                    && r.lat_p99_ns.unwrap() > 0.0
                    && r.write_mibps.unwrap() > 0.0
            );
        }
        let bad = run_engine(&c, "nope", &opts, &mut |_| {});
        assert_eq!(bad.len(), 1);
        assert!(bad[0]
            .reason
            .as_deref()
            .unwrap()
            .contains("unknown algorithm"));
    }

    /// Engine rows carry the version they behave as; 6.1's zsmalloc stores
    /// the same objects in a different amount of memory.
    #[test]
    fn engine_rows_as_kernel_6_1() {
        let c = zmem_corpus::default_corpus();
        let opts = |k: &str| Options {
            requests: 50,
            kernel: false,
            write_passes: 1,
            page_clusters: vec![0],
            algorithms: vec!["lzo".into()],
            kernel_model: Some(zmem_kernel::KernelModel::parse(k).unwrap()),
            ..Options::default()
        };
        let old = run(&c, &opts("6.1"), &mut |_| {});
        let new = run(&c, &opts("7.3"), &mut |_| {});
        assert_eq!(
            (old.engine_kernel.as_str(), new.engine_kernel.as_str()),
            ("6.1", "7.3")
        );
        let (o, n) = (&old.rows[0], &new.rows[0]);
        assert_eq!(o.kernel.as_deref(), Some("6.1"));
        assert_eq!(o.compr_data_size, n.compr_data_size);
        assert_ne!(o.mem_used_total, n.mem_used_total);
    }

    /// The floor stores what the engine stores: the same objects (so the
    /// same compr_data_size, same and huge pages) in no more memory.
    #[test]
    fn floor_stores_what_the_engine_stores() {
        let c = zmem_corpus::default_corpus();
        let opts = Options {
            requests: 300,
            kernel: false,
            write_passes: 2,
            ..Options::default()
        };
        for algo in ["lz4", "lzo-rle", "zstd"] {
            let rows = crate::modes::floor::run_floor(&c, algo, &opts);
            assert_eq!(rows.len(), 4, "{algo}: {:?}", rows[0].reason);
            let engine = run_engine(&c, algo, &opts, &mut |_| {});
            for (f, e) in rows.iter().zip(&engine) {
                assert_eq!(f.target, Target::Codec);
                assert_eq!(f.reason, None);
                assert_eq!(f.page_cluster, e.page_cluster);
                assert_eq!(
                    (
                        f.orig_data_size,
                        f.compr_data_size,
                        f.same_pages,
                        f.huge_pages
                    ),
                    (
                        e.orig_data_size,
                        e.compr_data_size,
                        e.same_pages,
                        e.huge_pages
                    ),
                    "{algo}"
                );
                // A pool that wastes nothing holds no more than zsmalloc.
                assert!(f.mem_used_total <= e.mem_used_total, "{algo}");
                assert!(f.write_mibps.unwrap() > 0.0 && f.lat_mean_ns.unwrap() > 0.0);
            }
        }
    }
}
