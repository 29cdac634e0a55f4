//! zstd dictionaries for pages (`zmem dict train`), in the format zram's
//! `algorithm_params … dict=FILE` loads.
//!
//! Each page that zram would compress (not same-filled) is one training
//! sample. Large corpora are sampled evenly so training stays bounded.

use anyhow::{bail, Result};
use zmem_codec::PAGE_SIZE;

/// The dictionary size zram users typically pick.
pub const DEFAULT_SIZE: usize = 16 * 1024;
/// Training samples at most (pages); more are sampled evenly.
pub const MAX_SAMPLES: usize = 16 * 1024;

/// The pages of `corpus` used as samples: not same-filled, and every
/// `step`-th one of those (`step` ≥ 1), at most [`MAX_SAMPLES`].
pub fn samples(corpus: &[u8], step: usize) -> Vec<&[u8]> {
    let cand: Vec<&[u8]> = corpus
        .chunks_exact(PAGE_SIZE)
        .filter(|p| zmem_codec::same_filled(p).is_none())
        .step_by(step.max(1))
        .collect();
    if cand.len() <= MAX_SAMPLES {
        return cand;
    }
    (0..MAX_SAMPLES)
        .map(|i| cand[i * cand.len() / MAX_SAMPLES])
        .collect()
}

/// Train a dictionary of at most `size` bytes on the pages of `corpus`
/// (taking every `step`-th compressible page).
pub fn train(corpus: &[u8], size: usize, step: usize) -> Result<Vec<u8>> {
    if !(256..=1 << 20).contains(&size) {
        bail!("dictionary size must be between 256 bytes and 1 MiB, got {size}");
    }
    let s = samples(corpus, step);
    if s.len() < 8 {
        bail!(
            "too few pages to train a dictionary: {} compressible pages (need at least 8)",
            s.len()
        );
    }
    let dict = zstd::dict::from_samples(&s, size)
        .map_err(|e| anyhow::anyhow!("zstd dictionary training failed on {} pages: {e} (the pages may be too uniform or too random)", s.len()))?;
    Ok(dict)
}

/// Whether `bytes` is a zstd dictionary in the trained format (magic 0xEC30A437).
pub fn is_zstd_dict(bytes: &[u8]) -> bool {
    bytes.len() >= 8 && bytes[..4] == [0x37, 0xa4, 0x30, 0xec]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{generate, Kind};

    #[test]
    fn trains_on_text_pages_and_rejects_bad_input() {
        let c = generate(Kind::Text, 5, 256);
        let d = train(&c, 8192, 1).unwrap();
        assert!(d.len() <= 8192 && d.len() > 256);
        assert!(is_zstd_dict(&d));
        let e = train(&vec![0u8; 64 * PAGE_SIZE], 8192, 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("too few pages"), "{e}");
        assert!(train(&c, 10, 1).is_err());
    }

    #[test]
    fn dictionary_helps_small_text_pages() {
        // The same vocabulary in every page: a dictionary must shrink pages.
        let c = generate(Kind::Text, 5, 256);
        let d = train(&c, 16384, 2).unwrap();
        let test_page = &c[PAGE_SIZE * 3..PAGE_SIZE * 4];
        let plain = zstd::bulk::compress(test_page, 3).unwrap().len();
        let with = zstd::bulk::Compressor::with_dictionary(3, &d)
            .unwrap()
            .compress(test_page)
            .unwrap()
            .len();
        assert!(with < plain, "with dict {with} vs plain {plain}");
    }
}
