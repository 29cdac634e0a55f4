//! `zmem bench zswap` for people: the table's columns and a row's cells,
//! and what is under the table — the corpora and what the access pattern and
//! the columns mean.

use std::fmt::Write as _;

use zmem_corpus::Corpus;
use zmem_measure::zswap::Row;

/// The columns of the `--zswap` table, in the order of [`zswap_cells`].
pub const ZSWAP_COLUMNS: [&str; 18] = [
    "engine",
    "target",
    "algo",
    "pool",
    "pages",
    "budget",
    "accesses",
    "hit_rate",
    "stored",
    "ram_used",
    "B/stored",
    "written_back",
    "limit_hits",
    "rejects",
    "ram_peak",
    "lat_mean_us",
    "lat_p99_us",
    "backing_r/w",
];

/// One row's cells, under [`ZSWAP_COLUMNS`].
pub fn zswap_cells(r: &Row) -> Vec<String> {
    let opt = |v: Option<u64>| v.map_or("-".into(), |v| v.to_string());
    vec![
        r.engine.clone(),
        r.target.name().into(),
        r.algo.clone(),
        r.allocator.clone(),
        r.pages.to_string(),
        r.budget_bytes.to_string(),
        r.accesses.to_string(),
        format!("{:.3}", r.hit_rate),
        r.stored_pages.to_string(),
        r.ram_used.to_string(),
        r.bytes_per_stored_page
            .map_or("-".into(), |b| format!("{b:.1}")),
        r.written_back.to_string(),
        opt(r.pool_limit_hit),
        opt(r.rejects),
        r.ram_peak.to_string(),
        format!("{:.2}", r.lat_mean_ns / 1000.0),
        format!("{:.2}", r.lat_p99_ns / 1000.0),
        format!("{}/{}", r.backing_reads, r.backing_writes),
    ]
}

/// The corpora, then the pattern (`hot` share of the pages getting
/// `hot_access` of `accesses` swap-ins) and the columns explained.
pub fn zswap_notes(corpora: &[Corpus], hot: f64, hot_access: f64, accesses: usize) -> String {
    let mut o = crate::corpora::corpus_lines(corpora);
    let _ = writeln!(
        o,
        "pattern: {:.0}% of the pages get {:.0}% of {} swap-ins (each followed by a swap-out); budget = zswap \
         pool limit = zram mem_limit in bytes; zram overflows to a disk swap file and never writes back; \
         hit = served from RAM; latency of the swap-in in microseconds; backing_r/w = page reads/writes of the file; \
         stored = pages in the pool at the end, B/stored = ram_used / stored; target kernel = the running kernel's zswap \
         (pool limit = max_pool_percent of RAM, at least 1 %), with the engine at that same limit in the row before it",
        hot * 100.0,
        hot_access * 100.0,
        accesses
    );
    o
}
