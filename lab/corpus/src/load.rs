//! Which pages a command runs on: the corpus files it was given, or a
//! default — the built-in synthetic corpus for the bench modes, this
//! machine's memory plus the synthetic sections for the verdict and the
//! full table.

use std::path::PathBuf;

use anyhow::Result;

use crate::corpus::{self, Corpus};
use crate::machine;

/// The bench modes' corpora: every file given, or the built-in synthetic
/// corpus when none is.
pub fn files_or_default(paths: &[PathBuf]) -> Result<Vec<Corpus>> {
    if paths.is_empty() {
        Ok(vec![corpus::default_corpus()])
    } else {
        corpus::load_all(paths)
    }
}

/// One corpus: the one file given, several joined into one, or (none given)
/// this machine's memory (at most `capture` bytes, sampled evenly) plus the
/// synthetic sections. `capturing` runs just before the capture starts; the
/// notes say what went in.
pub fn joined_or_machine(
    paths: &[PathBuf],
    capture: u64,
    capturing: impl FnOnce(),
) -> Result<(Corpus, Vec<String>)> {
    match paths {
        [] => {
            capturing();
            Ok(machine::default_corpus_with_memory(capture))
        }
        [one] => Ok((Corpus::load(one)?, vec![])),
        many => {
            let cs = corpus::load_all(many)?;
            let mut data = Vec::new();
            for c in &cs {
                data.extend_from_slice(c.bytes());
            }
            let name = cs
                .iter()
                .map(|c| c.name.clone())
                .collect::<Vec<_>>()
                .join(" + ");
            Ok((Corpus::from_bytes(name.clone(), name, data)?, vec![]))
        }
    }
}

/// Captured memory in the verdict's corpus: large enough not to sit in the
/// CPU cache, bounded by an eighth of the memory available now.
pub fn verdict_capture() -> u64 {
    let avail = zmem_host::Sys::real()
        .meminfo_get("MemAvailable")
        .ok()
        .flatten()
        .map_or(u64::MAX, |bytes| bytes / 8);
    (64u64 << 20).min(avail).max(4 << 20)
}
