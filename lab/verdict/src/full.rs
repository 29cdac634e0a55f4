//! `zmem bench full`: codec figures (`zmem_measure::codecs`) and device
//! figures (`zmem_measure::device`, engine and kernel) for every algorithm, plus zstd
//! with a dictionary trained on the corpus, joined into the complete table.

use std::time::Duration;

use anyhow::Result;
use zmem_codec::Params;
use zmem_corpus::Corpus;
use zmem_measure::{codecs, device};

use crate::score::Weights;
use crate::table::{self, FullTable};

/// Label of the dictionary rows.
pub const DICT_LABEL: &str = "zstd+dict";

/// Where the zstd dictionary comes from.
#[derive(Debug, Clone)]
pub enum Dict {
    /// Train one of this many bytes on every other compressible page of the corpus.
    Train(usize),
    /// Use these bytes (`--dict FILE`).
    Given(Vec<u8>, String),
    /// No dictionary rows.
    None,
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    pub algorithms: Vec<String>,
    pub weights: Weights,
    /// Codec throughput passes: minimum time per direction.
    pub min_time: Duration,
    /// Device random reads per page-cluster value.
    pub requests: usize,
    pub page_clusters: Vec<u32>,
    /// Also run kernel zram (root only; skipped with the reason otherwise).
    pub kernel: bool,
    pub dict: Dict,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            algorithms: Vec::new(),
            weights: Weights::default(),
            min_time: Duration::from_millis(200),
            requests: 20_000,
            page_clusters: vec![0, 1, 2, 3],
            kernel: true,
            dict: Dict::Train(zmem_corpus::DEFAULT_DICT_SIZE),
        }
    }
}

/// The zstd dictionary of the dictionary rows, if they are to be measured,
/// with a note on where it came from (or why there are no such rows).
fn dictionary(
    corpus: &Corpus,
    dict: &Dict,
    with_dict: bool,
    notes: &mut Vec<String>,
) -> Option<Vec<u8>> {
    match dict {
        Dict::None => None,
        _ if !with_dict => None,
        Dict::Given(d, name) => {
            notes.push(format!(
                "{DICT_LABEL}: zstd with the dictionary {name} ({} bytes)",
                d.len()
            ));
            Some(d.clone())
        }
        Dict::Train(size) => match zmem_corpus::train_dict(corpus.bytes(), *size, 2) {
            Ok(d) => {
                notes.push(format!(
                    "{DICT_LABEL}: zstd with a {} byte dictionary trained on every other compressible page of this corpus (so it has seen half the pages it is measured on)",
                    d.len()
                ));
                Some(d)
            }
            Err(e) => {
                notes.push(format!("{DICT_LABEL}: no rows: {e:#}"));
                None
            }
        },
    }
}

/// Run everything and assemble the table. `progress(what, done, total)`.
pub fn run(
    corpus: &Corpus,
    opts: &Options,
    progress: &mut dyn FnMut(&str, usize, usize),
) -> Result<FullTable> {
    let copts = codecs::Options {
        algorithms: opts.algorithms.clone(),
        min_time: opts.min_time,
        ..Default::default()
    };
    codecs::select(&copts.algorithms)?;
    let with_dict = !matches!(opts.dict, Dict::None)
        && (opts.algorithms.is_empty()
            || opts
                .algorithms
                .iter()
                .any(|a| a == zmem_codec::backend::zstd::INFO.name));
    let n_algos = if opts.algorithms.is_empty() {
        zmem_codec::all().len()
    } else {
        opts.algorithms.len()
    };
    let dev_steps = n_algos * (1 + opts.page_clusters.len()) * if opts.kernel { 2 } else { 1 };
    let total = n_algos + usize::from(with_dict) * 2 + dev_steps;
    let mut done = 0usize;

    // 1. Codec level.
    let mut codec_rows = codecs::run(std::slice::from_ref(corpus), &copts, &mut |p| {
        if !p.algorithm.is_empty() {
            progress(&format!("codec {}", p.algorithm), p.done, total);
        }
    })?;
    done += n_algos;

    // 2. The dictionary.
    let mut notes = Vec::new();
    let dict = dictionary(corpus, &opts.dict, with_dict, &mut notes);
    let dict_params = dict.map(|d| Params::default().dict_bytes(d));
    if let Some(p) = &dict_params {
        progress(&format!("codec {DICT_LABEL}"), done, total);
        let zstd = zmem_codec::find(zmem_codec::backend::zstd::INFO.name)?;
        let mut r = codecs::measure(zstd, p, corpus, &copts);
        r.algorithm = DICT_LABEL.into();
        codec_rows.push(r);
        done += 1;
    }

    // 3. Device level, engine and kernel.
    let dopts = device::Options {
        algorithms: opts.algorithms.clone(),
        requests: opts.requests,
        page_clusters: opts.page_clusters.clone(),
        kernel: opts.kernel,
        ..Default::default()
    };
    let base = done;
    let report = device::run(corpus, &dopts, &mut |p| {
        progress(&p.what, base + p.done, total)
    });
    done = base + dev_steps;
    let mut device_rows = report.rows;
    if let Some(p) = dict_params {
        progress(&format!("{DICT_LABEL} engine"), done, total);
        let o = device::Options {
            params: p,
            kernel: false,
            ..dopts.clone()
        };
        let mut rows = device::run_engine(
            corpus,
            zmem_codec::backend::zstd::INFO.name,
            &o,
            &mut |_| {},
        );
        for r in &mut rows {
            r.algo = DICT_LABEL.into();
        }
        device_rows.extend(rows);
    }
    progress("done", total, total);
    let mut t = table::assemble(
        &corpus.name,
        corpus.page_count(),
        &codec_rows,
        &device_rows,
        report.kernel_missing,
        opts.weights,
    );
    t.notes.extend(notes);
    t.notes.push(format!("corpus source: {}", corpus.source));
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_full_run_has_rows_dict_and_best_lines() {
        let c = zmem_corpus::default_corpus();
        let opts = Options {
            algorithms: vec!["lz4".into(), "zstd".into()],
            min_time: Duration::from_millis(5),
            requests: 200,
            page_clusters: vec![0, 1],
            kernel: false,
            ..Default::default()
        };
        let t = run(&c, &opts, &mut |_, _, _| {}).unwrap();
        let labels: Vec<String> = t.rows.iter().map(|r| r.label()).collect();
        for want in [
            "lz4 pc0 (engine)",
            "lz4 pc1 (engine)",
            "zstd pc0 (engine)",
            "zstd+dict pc0 (engine)",
        ] {
            assert!(
                labels.iter().any(|l| l == want),
                "{want} missing from {labels:?}"
            );
        }
        assert!(t.best.is_some());
        let zd = t.rows.iter().find(|r| r.algo == DICT_LABEL).unwrap();
        assert!(zd.compress_mb_s.is_some() && zd.effective_ratio.is_some());
    }
}
