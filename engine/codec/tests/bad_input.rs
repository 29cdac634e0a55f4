//! Bad input for every registry codec: random pages round-trip; random bytes,
//! truncated and mutated valid streams never panic (truncated ones are errors,
//! mutated ones at most a wrong page of the right length).
//! Truncation must be an error, except that a format with padding (842) may
//! decode exactly the original page when only padding was cut.

mod common;

use common::{available, compress, sample_pages, Rng};
use proptest::prelude::*;
use zmem_codec::{CodecError, MAX_COMPRESSED, PAGE_SIZE};

/// A page built from segments: zeros, a repeated byte, a repeated word, random
/// bytes, or a copy of earlier data (so LZ matches occur at many distances).
fn page_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec((0u8..5, 1usize..700, any::<u64>()), 1..30).prop_map(|segs| {
        let mut p = Vec::with_capacity(PAGE_SIZE);
        for (kind, len, seed) in segs {
            let mut r = Rng(seed | 1);
            for i in 0..len {
                if p.len() == PAGE_SIZE {
                    break;
                }
                let b = match kind {
                    0 => 0,
                    1 => seed as u8,
                    2 => (seed >> ((i % 8) * 8)) as u8,
                    3 => r.next() as u8,
                    _ if !p.is_empty() => p[(seed as usize + i) % p.len()],
                    _ => seed as u8,
                };
                p.push(b);
            }
        }
        let mut r = Rng(0x1234_5678_9abc_def1 ^ p.len() as u64);
        while p.len() < PAGE_SIZE {
            p.push(r.next() as u8);
        }
        p
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_pages_round_trip(page in page_strategy()) {
        for (b, mut s) in available("random_pages_round_trip") {
            let c = compress(s.as_mut(), &page);
            let mut out = vec![0xa5u8; PAGE_SIZE];
            s.decompress(&c, &mut out).map_err(|e| TestCaseError::fail(format!("{}: {e}", b.name())))?;
            prop_assert!(out == page, "{}: round trip changed the page", b.name());
        }
    }

    #[test]
    fn random_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..6000)) {
        for (_b, mut s) in available("random_bytes_never_panic") {
            let mut out = vec![0u8; PAGE_SIZE];
            let _ = s.decompress(&data, &mut out);
        }
    }

    #[test]
    fn mutated_streams_never_panic(page in page_strategy(), seed in any::<u64>()) {
        for (b, mut s) in available("mutated_streams_never_panic") {
            let c = compress(s.as_mut(), &page);
            let mut r = Rng(seed | 1);
            for _ in 0..16 {
                let mut m = c.clone();
                match r.below(4) {
                    0 => { let i = r.below(m.len()); m[i] ^= 1 << r.below(8); }
                    1 => { let i = r.below(m.len()); m[i] = r.next() as u8; }
                    2 => { let i = r.below(m.len() + 1); m.insert(i, r.next() as u8); }
                    _ => { let i = r.below(m.len()); m.remove(i); }
                }
                let mut out = vec![0u8; PAGE_SIZE];
                match s.decompress(&m, &mut out) {
                    Ok(()) | Err(CodecError::Corrupt { .. }) => {}
                    Err(e) => prop_assert!(false, "{}: mutated stream gave {e:?}, expected Corrupt", b.name()),
                }
                prop_assert_eq!(out.len(), PAGE_SIZE);
                // The stream still works after bad input.
                let mut back = vec![0u8; PAGE_SIZE];
                s.decompress(&c, &mut back).map_err(|e| TestCaseError::fail(format!("{}: {e}", b.name())))?;
                prop_assert!(back == page, "{}: stream broken after bad input", b.name());
            }
        }
    }
}

/// Formats without padding, where every truncation must be an error.
fn strict(name: &str) -> bool {
    matches!(name, "lz4" | "lz4hc" | "zstd" | "deflate")
}

#[test]
fn truncated_streams_are_errors() {
    for (b, mut s) in available("truncated_streams_are_errors") {
        for (kind, page) in sample_pages() {
            let c = compress(s.as_mut(), &page);
            let cuts: Vec<usize> = if c.len() <= 64 {
                (0..c.len()).collect()
            } else {
                (0..32)
                    .chain(c.len() - 32..c.len())
                    .chain((32..c.len() - 32).step_by(37))
                    .collect()
            };
            for cut in cuts {
                let mut out = vec![0u8; PAGE_SIZE];
                let r = s.decompress(&c[..cut], &mut out);
                // An error, or (for formats with padding, e.g. 842's 8-byte
                // alignment, when only padding was cut) exactly the page.
                let ok = match &r {
                    Err(CodecError::Corrupt { .. }) => true,
                    Ok(()) => out == page && !strict(b.name()),
                    Err(_) => false,
                };
                assert!(
                    ok,
                    "{} {kind}: stream cut to {cut} of {} bytes gave {r:?}",
                    b.name(),
                    c.len()
                );
            }
        }
    }
}

#[test]
fn wrong_output_size_is_an_error() {
    for (b, mut s) in available("wrong_output_size_is_an_error") {
        for (kind, page) in sample_pages() {
            let c = compress(s.as_mut(), &page);
            for len in [PAGE_SIZE - 8, PAGE_SIZE - 1] {
                let mut small = vec![0u8; len];
                assert!(
                    s.decompress(&c, &mut small).is_err(),
                    "{} {kind}: decoded into {len} bytes",
                    b.name()
                );
            }
        }
    }
}

#[test]
fn incompressible_page_into_small_buffer_is_dst_too_small() {
    let random = sample_pages()
        .into_iter()
        .find(|(k, _)| *k == "random")
        .unwrap()
        .1;
    for (b, mut s) in available("incompressible_page_into_small_buffer_is_dst_too_small") {
        let mut dst = vec![0u8; 3072];
        match s.compress(&random, &mut dst) {
            Err(CodecError::DstTooSmall { capacity }) => assert_eq!(capacity, 3072, "{}", b.name()),
            r => panic!("{}: random page into 3072 bytes gave {r:?}", b.name()),
        }
        // And the stream is still usable.
        let c = compress(s.as_mut(), &random);
        let mut out = vec![0u8; PAGE_SIZE];
        s.decompress(&c, &mut out).unwrap();
        assert_eq!(out, random, "{}", b.name());
    }
}

#[test]
fn input_that_is_not_one_page_is_rejected() {
    for (b, mut s) in available("input_that_is_not_one_page_is_rejected") {
        let mut dst = vec![0u8; MAX_COMPRESSED];
        for len in [0, 100, PAGE_SIZE - 1, PAGE_SIZE + 1] {
            let src = vec![7u8; len];
            assert!(
                matches!(
                    s.compress(&src, &mut dst),
                    Err(CodecError::InvalidInput { .. })
                ),
                "{}: {len}-byte input accepted",
                b.name()
            );
        }
    }
}
