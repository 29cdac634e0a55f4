//! `zmem bench codecs`: every algorithm on every corpus at the codec level.
//!
//! Per algorithm and corpus: ratio (orig/compressed), compress and decompress
//! MB/s, reclaim MB/s (compress speed × (1 − compressed/orig): memory freed per
//! second of CPU), and per-page compress/decompress latency (mean, p99).
//!
//! As zram does, same-filled pages are detected first and never reach the
//! codec; they are counted, and every figure above is over the other pages.
//! Every page is verified to round-trip. Throughput comes from untimed-per-page
//! passes over all pages (best of several), latency from a separate pass that
//! times each page on its own, so the clock reads do not slow the throughput.

use std::time::{Duration, Instant};

use serde::Serialize;
use zmem_codec::{Backend, Params, MAX_COMPRESSED, PAGE_SIZE};
use zmem_corpus::Corpus;

/// How long to measure.
#[derive(Debug, Clone)]
pub struct Options {
    /// Algorithms by kernel name, in the order to run; empty = all, registry order.
    pub algorithms: Vec<String>,
    /// Parameters for every algorithm (default: each backend's default).
    pub params: Params,
    /// Minimum time of the throughput passes, per direction, per algorithm and corpus.
    pub min_time: Duration,
    /// At most this many throughput passes per direction.
    pub max_passes: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            algorithms: Vec::new(),
            params: Params::default(),
            min_time: Duration::from_millis(200),
            max_passes: 20,
        }
    }
}

/// Whether a row has numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Measured and every page verified.
    Ok,
    /// The backend is not available (the params do not apply to it).
    Unavailable,
    /// A page failed to compress or to round-trip: a codec bug.
    Failed,
}

/// One algorithm on one corpus.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    #[serde(rename = "algo")]
    pub algorithm: String,
    pub corpus: String,
    pub status: Status,
    /// Why the row is unavailable or failed.
    pub reason: Option<String>,
    /// Pages in the corpus.
    pub pages: usize,
    /// Pages left out of the codec calls (zram stores only the word).
    #[serde(rename = "same_pages")]
    pub same_filled_pages: usize,
    /// Pages compressed and verified to round-trip.
    pub verified_pages: usize,
    /// Bytes given to the codec (pages − same-filled pages, × 4096).
    #[serde(rename = "orig_data_size")]
    pub orig_bytes: u64,
    /// Their compressed size.
    #[serde(rename = "compr_data_size")]
    pub compressed_bytes: u64,
    /// orig_bytes / compressed_bytes.
    pub ratio: Option<f64>,
    /// MB/s (10^6 bytes of uncompressed data per second).
    #[serde(rename = "compress_mbps")]
    pub compress_mb_s: Option<f64>,
    #[serde(rename = "decompress_mbps")]
    pub decompress_mb_s: Option<f64>,
    /// compress_mb_s × (1 − compressed_bytes / orig_bytes).
    #[serde(rename = "reclaim_mbps")]
    pub reclaim_mb_s: Option<f64>,
    /// Per-page latency in microseconds (nanoseconds in JSON and CSV).
    #[serde(
        rename = "compress_lat_mean_ns",
        serialize_with = "crate::fields::opt_us_as_ns"
    )]
    pub compress_us_mean: Option<f64>,
    #[serde(
        rename = "compress_lat_p99_ns",
        serialize_with = "crate::fields::opt_us_as_ns"
    )]
    pub compress_us_p99: Option<f64>,
    #[serde(
        rename = "decompress_lat_mean_ns",
        serialize_with = "crate::fields::opt_us_as_ns"
    )]
    pub decompress_us_mean: Option<f64>,
    #[serde(
        rename = "decompress_lat_p99_ns",
        serialize_with = "crate::fields::opt_us_as_ns"
    )]
    pub decompress_us_p99: Option<f64>,
}

impl Row {
    fn empty(algorithm: &str, corpus: &Corpus, status: Status, reason: Option<String>) -> Row {
        Row {
            algorithm: algorithm.to_string(),
            corpus: corpus.name.clone(),
            status,
            reason,
            pages: corpus.page_count(),
            same_filled_pages: 0,
            verified_pages: 0,
            orig_bytes: 0,
            compressed_bytes: 0,
            ratio: None,
            compress_mb_s: None,
            decompress_mb_s: None,
            reclaim_mb_s: None,
            compress_us_mean: None,
            compress_us_p99: None,
            decompress_us_mean: None,
            decompress_us_p99: None,
        }
    }
}

/// Progress of a run: `done` of `total` (algorithm, corpus) cells, and the one
/// being measured now.
#[derive(Debug, Clone)]
pub struct Progress<'a> {
    pub done: usize,
    pub total: usize,
    pub algorithm: &'a str,
    pub corpus: &'a str,
}

/// Resolve `--algo` names (empty = all, registry order); an unknown name is
/// an error listing the valid ones.
pub fn select(names: &[String]) -> Result<Vec<&'static dyn Backend>, zmem_codec::CodecError> {
    if names.is_empty() {
        return Ok(zmem_codec::all().to_vec());
    }
    names.iter().map(|n| zmem_codec::find(n.trim())).collect()
}

/// Run every selected algorithm on every corpus. Unknown algorithms are an
/// error before anything runs; unavailable ones (params that do not apply) give a row with
/// the reason; verification failures give a `failed` row (the run goes on).
pub fn run(
    corpora: &[Corpus],
    opts: &Options,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Vec<Row>, zmem_codec::CodecError> {
    let backends = select(&opts.algorithms)?;
    let total = backends.len() * corpora.len();
    let mut rows = Vec::with_capacity(total);
    for b in &backends {
        for c in corpora {
            progress(Progress {
                done: rows.len(),
                total,
                algorithm: b.name(),
                corpus: &c.name,
            });
            rows.push(measure(*b, &opts.params, c, opts));
        }
    }
    progress(Progress {
        done: rows.len(),
        total,
        algorithm: "",
        corpus: "",
    });
    Ok(rows)
}

/// Measure one algorithm on one corpus.
pub fn measure(
    backend: &'static dyn Backend,
    params: &Params,
    corpus: &Corpus,
    opts: &Options,
) -> Row {
    let name = backend.name();
    let mut stream = match backend.new_stream(params) {
        Ok(s) => s,
        Err(e) => return Row::empty(name, corpus, Status::Unavailable, Some(e.to_string())),
    };
    let codec_pages: Vec<&[u8]> = corpus
        .pages()
        .filter(|p| zmem_codec::same_filled(p).is_none())
        .collect();
    let mut row = Row::empty(name, corpus, Status::Ok, None);
    row.same_filled_pages = corpus.page_count() - codec_pages.len();
    row.orig_bytes = (codec_pages.len() * PAGE_SIZE) as u64;
    if codec_pages.is_empty() {
        row.reason = Some("every page is same-filled; no codec call".into());
        return row;
    }

    // Pass 1: compress each page (timed alone), keep the output, verify.
    let mut store: Vec<u8> = Vec::with_capacity(codec_pages.len() * PAGE_SIZE / 2);
    let mut ends: Vec<usize> = Vec::with_capacity(codec_pages.len());
    let mut c_ns: Vec<u64> = Vec::with_capacity(codec_pages.len());
    let mut d_ns: Vec<u64> = Vec::with_capacity(codec_pages.len());
    let mut dst = vec![0u8; MAX_COMPRESSED];
    let mut out = vec![0u8; PAGE_SIZE];
    // Warm up (first use of a per-thread library state, caches) so the first
    // timed page does not carry one-off costs.
    if let Ok(n) = stream.compress(codec_pages[0], &mut dst) {
        let _ = stream.decompress(&dst[..n], &mut out);
    }
    for (i, page) in codec_pages.iter().enumerate() {
        let t = Instant::now();
        let r = stream.compress(page, &mut dst);
        c_ns.push(t.elapsed().as_nanos() as u64);
        match r {
            Ok(n) => {
                store.extend_from_slice(&dst[..n]);
                ends.push(store.len());
            }
            Err(e) => return failed(row, format!("page {i}: compress: {e}")),
        }
    }
    for (i, page) in codec_pages.iter().enumerate() {
        let src = &store[if i == 0 { 0 } else { ends[i - 1] }..ends[i]];
        out.fill(0);
        let t = Instant::now();
        let r = stream.decompress(src, &mut out);
        d_ns.push(t.elapsed().as_nanos() as u64);
        if let Err(e) = r {
            return failed(row, format!("page {i}: decompress: {e}"));
        }
        if out.as_slice() != *page {
            return failed(row, format!("page {i}: round trip changed the page"));
        }
    }
    row.verified_pages = codec_pages.len();
    row.compressed_bytes = store.len() as u64;

    // Pass 2: throughput, best of several passes over all pages.
    let compress_s = best_pass(opts, || {
        for page in &codec_pages {
            std::hint::black_box(stream.compress(page, &mut dst).ok());
        }
    });
    let decompress_s = best_pass(opts, || {
        let mut start = 0;
        for &end in &ends {
            std::hint::black_box(stream.decompress(&store[start..end], &mut out).ok());
            start = end;
        }
    });

    let orig = row.orig_bytes as f64;
    let comp = row.compressed_bytes as f64;
    let c_mb_s = orig / compress_s / 1e6;
    row.ratio = Some(orig / comp);
    row.compress_mb_s = Some(c_mb_s);
    row.decompress_mb_s = Some(orig / decompress_s / 1e6);
    row.reclaim_mb_s = Some(c_mb_s * (1.0 - comp / orig));
    let (m, p) = mean_p99(&mut c_ns);
    row.compress_us_mean = Some(m);
    row.compress_us_p99 = Some(p);
    let (m, p) = mean_p99(&mut d_ns);
    row.decompress_us_mean = Some(m);
    row.decompress_us_p99 = Some(p);
    row
}

fn failed(mut row: Row, reason: String) -> Row {
    row.status = Status::Failed;
    row.reason = Some(reason);
    row.verified_pages = 0;
    row
}

/// Seconds of the fastest pass; passes repeat until `min_time` or `max_passes`.
fn best_pass(opts: &Options, mut pass: impl FnMut()) -> f64 {
    let start = Instant::now();
    let mut best = f64::MAX;
    for _ in 0..opts.max_passes.max(1) {
        let t = Instant::now();
        pass();
        best = best.min(t.elapsed().as_secs_f64());
        if start.elapsed() >= opts.min_time {
            break;
        }
    }
    best.max(1e-9)
}

/// Mean and 99th percentile (nearest rank) of nanosecond samples, in µs.
fn mean_p99(ns: &mut [u64]) -> (f64, f64) {
    if ns.is_empty() {
        return (0.0, 0.0);
    }
    let mean = ns.iter().sum::<u64>() as f64 / ns.len() as f64;
    ns.sort_unstable();
    (mean / 1e3, super::percentile(ns, 0.99) / 1e3)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quick() -> Options {
        Options {
            min_time: Duration::ZERO,
            max_passes: 1,
            ..Options::default()
        }
    }

    #[test]
    fn rows_for_every_algorithm_with_consistent_numbers() {
        let corpus = zmem_corpus::from_sections(&zmem_corpus::default_sections(5)[..]);
        let mut seen = Vec::new();
        let rows = run(std::slice::from_ref(&corpus), &quick(), &mut |p| {
            seen.push(p.done)
        })
        .unwrap();
        assert_eq!(rows.len(), zmem_codec::all().len());
        assert_eq!(seen.last(), Some(&rows.len()));
        for (r, b) in rows.iter().zip(zmem_codec::all()) {
            assert_eq!(r.algorithm, b.name());
            assert_eq!(r.pages, 1024);
            match r.status {
                Status::Ok => {
                    assert_eq!(r.same_filled_pages, 160, "{}", r.algorithm);
                    assert_eq!(r.verified_pages, 1024 - 160);
                    assert_eq!(r.orig_bytes, (1024 - 160) * 4096);
                    let ratio = r.ratio.unwrap();
                    assert!((ratio - r.orig_bytes as f64 / r.compressed_bytes as f64).abs() < 1e-9);
                    assert!(ratio > 1.2, "{}: ratio {ratio}", r.algorithm);
                    let reclaim = r.reclaim_mb_s.unwrap();
                    let want = r.compress_mb_s.unwrap() * (1.0 - 1.0 / ratio);
                    assert!((reclaim - want).abs() < 1e-6 * want.abs().max(1.0));
                    assert!(r.compress_us_p99.unwrap() > 0.0 && r.decompress_us_p99.unwrap() > 0.0);
                    assert!(r.decompress_mb_s.unwrap() > 0.0);
                }
                Status::Unavailable | Status::Failed => {
                    panic!("{}: {:?} {:?}", r.algorithm, r.status, r.reason)
                }
            }
        }
        let lz4 = rows.iter().find(|r| r.algorithm == "lz4").unwrap();
        assert_eq!(lz4.status, Status::Ok);
    }

    #[test]
    fn unknown_algorithm_lists_valid_ones() {
        let opts = Options {
            algorithms: vec!["lz4".into(), "snappy".into()],
            ..quick()
        };
        let e = run(&[zmem_corpus::default_corpus()], &opts, &mut |_| {})
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("snappy") && e.contains("lzo-rle") && e.contains("deflate"),
            "{e}"
        );
    }

    #[test]
    fn all_same_filled_corpus_makes_no_codec_call() {
        let c = Corpus::from_bytes("zeros", "test", vec![0u8; 4 * PAGE_SIZE]).unwrap();
        let opts = Options {
            algorithms: vec!["zstd".into()],
            ..quick()
        };
        let rows = run(&[c], &opts, &mut |_| {}).unwrap();
        assert_eq!(rows[0].same_filled_pages, 4);
        assert_eq!(rows[0].verified_pages, 0);
        assert_eq!(rows[0].ratio, None);
        assert!(rows[0].reason.as_deref().unwrap().contains("same-filled"));
    }

    #[test]
    fn percentile() {
        let mut v: Vec<u64> = (1..=100).map(|x| x * 1000).collect();
        let (m, p) = mean_p99(&mut v);
        assert!((m - 50.5).abs() < 1e-9);
        assert!((p - 99.0).abs() < 1e-9);
    }

    #[test]
    fn params_that_do_not_apply_make_rows_unavailable() {
        let opts = Options {
            algorithms: vec!["lz4".into(), "deflate".into()],
            params: Params {
                deflate_winbits: Some(-12),
                ..Params::default()
            },
            ..quick()
        };
        let c = Corpus::from_bytes("one", "test", {
            let mut p = vec![0u8; PAGE_SIZE];
            p[..5].copy_from_slice(b"hello");
            p
        })
        .unwrap();
        let rows = run(&[c], &opts, &mut |_| {}).unwrap();
        assert_eq!(rows[0].status, Status::Unavailable);
        assert!(rows[0]
            .reason
            .as_deref()
            .unwrap()
            .contains("deflate.winbits"));
        assert_eq!(rows[1].status, Status::Ok);
    }
}
