//! `zmem bench codecs` for people: the table's columns and a row's cells
//! (latencies in µs; JSON and CSV carry the fields of docs/fields.md, in ns).

use zmem_measure::codecs::{Row, Status};

/// The column names of [`Row`] in order, for table and CSV output.
/// The human table's columns (µs for latencies, as the cells print them;
/// JSON and CSV use the field names of docs/fields.md, in ns).
pub const CODECS_COLUMNS: [&str; 17] = [
    "algo",
    "corpus",
    "status",
    "ratio",
    "compress_mb_s",
    "decompress_mb_s",
    "reclaim_mb_s",
    "compress_us_mean",
    "compress_us_p99",
    "decompress_us_mean",
    "decompress_us_p99",
    "pages",
    "same_filled_pages",
    "verified_pages",
    "orig_bytes",
    "compressed_bytes",
    "reason",
];

/// The row's cells in [`CODECS_COLUMNS`] order (`-` for a missing number).
pub fn codec_cells(r: &Row) -> Vec<String> {
    let f =
        |v: Option<f64>, prec: usize| v.map_or_else(|| "-".to_string(), |v| format!("{v:.prec$}"));
    vec![
        r.algorithm.clone(),
        r.corpus.clone(),
        match r.status {
            Status::Ok => "ok",
            Status::Unavailable => "unavailable",
            Status::Failed => "FAILED",
        }
        .to_string(),
        f(r.ratio, 3),
        f(r.compress_mb_s, 1),
        f(r.decompress_mb_s, 1),
        f(r.reclaim_mb_s, 1),
        f(r.compress_us_mean, 2),
        f(r.compress_us_p99, 2),
        f(r.decompress_us_mean, 2),
        f(r.decompress_us_p99, 2),
        r.pages.to_string(),
        r.same_filled_pages.to_string(),
        r.verified_pages.to_string(),
        r.orig_bytes.to_string(),
        r.compressed_bytes.to_string(),
        r.reason.clone().unwrap_or_default(),
    ]
}
