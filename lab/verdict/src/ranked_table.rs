//! The verdict's measurements as a [`FullTable`], so the recommendation
//! (sizes, swappiness, page-cluster, zram or zswap, the config file) is
//! worked out by the same code as `zmem recommend`'s (`crate::recommend`).

use zmem_measure::ReadResult;

use crate::rank::{Ranked, Ranking};
use crate::score::{self, Metrics};
use crate::table::{FullRow, FullTable, Missing};

fn row(r: &Ranked, pc: u32, score: Option<f64>) -> FullRow {
    FullRow {
        target: r.target.clone(),
        algo: r.algo.clone(),
        page_cluster: pc,
        ratio: Some(r.orig_data_size as f64 / r.compr_data_size.max(1) as f64),
        effective_ratio: Some(r.effective_ratio),
        compress_mb_s: None,
        decompress_mb_s: None,
        reclaim_mb_s: None,
        decompress_us_mean: None,
        decompress_us_p99: None,
        write_mib_s: Some(r.write_mibps.median),
        read_mib_s: Some(r.read_mibps.median),
        iops: Some(1e9 / r.read_lat_ns.median),
        lat_mean_ns: Some(r.read_lat_ns.median),
        lat_p99_ns: None,
        score,
    }
}

/// The table: every deployable candidate at page-cluster 0 (score = its
/// median verdict score), the winner at page-cluster 0..3 from `pcs`
/// (scored among themselves), and the engine rows (unscored).
pub fn to_table(r: &Ranking, pcs: &[ReadResult]) -> FullTable {
    let mut rows: Vec<FullRow> = r
        .ranked
        .iter()
        .filter(|x| x.algo != r.winner || pcs.is_empty())
        .map(|x| row(x, 0, x.score.map(|s| s.median)))
        .collect();
    if let Some(w) = r.ranked.iter().find(|x| x.algo == r.winner) {
        let metrics: Vec<Option<Metrics>> = pcs
            .iter()
            .map(|p| {
                Some(Metrics {
                    throughput: p.mibps,
                    ratio: w.effective_ratio,
                    latency: p.lat_mean_ns,
                    iops: p.iops,
                })
            })
            .collect();
        let scores = score::scores(&metrics, &r.weights);
        for (p, s) in pcs.iter().zip(scores) {
            let mut fr = row(w, p.page_cluster, s);
            fr.read_mib_s = Some(p.mibps);
            fr.iops = Some(p.iops);
            fr.lat_mean_ns = Some(p.lat_mean_ns);
            fr.lat_p99_ns = Some(p.lat_p99_ns);
            rows.push(fr);
        }
    }
    if r.target == "kernel" {
        rows.extend(r.engine.iter().map(|x| row(x, 0, None)));
    }
    FullTable {
        corpus: r.corpus.clone(),
        pages: r.pages,
        weights: r.weights,
        rows,
        missing: r
            .failed
            .iter()
            .map(|(what, why)| Missing {
                target: String::new(),
                algo: what.clone(),
                reason: why.clone(),
            })
            .collect(),
        kernel_missing: None,
        best: None,
        notes: vec![],
    }
}
