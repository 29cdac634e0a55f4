//! `zmem bench --zswap` for people: what is under the table — the corpora
//! and what the access pattern and the columns mean.

use std::fmt::Write as _;

use zmem_corpus::Corpus;

/// The corpora, then the pattern (`hot` share of the pages getting
/// `hot_access` of `accesses` swap-ins) and the columns explained.
pub fn zswap_notes(corpora: &[Corpus], hot: f64, hot_access: f64, accesses: usize) -> String {
    let mut o = String::new();
    for c in corpora {
        let _ = writeln!(
            o,
            "corpus {}: {} pages ({})",
            c.name,
            c.page_count(),
            c.source
        );
    }
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
