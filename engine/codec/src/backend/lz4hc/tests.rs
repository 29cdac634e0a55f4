//! Unit tests of the kernel's LZ4HC encoder: round trips through liblz4's
//! decoder, the format's end rules, dictionaries and a full destination.

use lzzzz::lz4;

use super::compress::{attempts, HcCompressor, DICT_MAX, LASTLITERALS, MFLIMIT};
use crate::backend::lz4_block::test_pages::{rng, segments, text};
use crate::CodecError;

fn round_trip(c: &mut HcCompressor, src: &[u8], dict: Option<&[u8]>) -> usize {
    let mut dst = vec![0u8; src.len() + src.len() / 255 + 16];
    let n = c.compress(src, &mut dst).unwrap();
    let mut back = vec![0u8; src.len()];
    let got = match dict {
        None => lz4::decompress(&dst[..n], &mut back),
        Some(d) => lz4::decompress_with_dict(&dst[..n], &mut back, d),
    }
    .unwrap();
    assert_eq!(got, src.len());
    assert!(back == src, "round trip");
    n
}

#[test]
fn attempts_per_level() {
    assert_eq!(attempts(1), 1);
    assert_eq!(attempts(9), 256);
    assert_eq!(attempts(12), 2048);
}

#[test]
fn round_trips_at_every_level() {
    let mut r = rng(7);
    let random: Vec<u8> = (0..4096).map(|_| r() as u8).collect();
    let zeros = vec![0u8; 4096];
    let mut runs = vec![0u8; 4096];
    for (i, b) in runs.iter_mut().enumerate() {
        *b = (i / 300) as u8;
    }
    for level in 1..=12 {
        let mut c = HcCompressor::new(level, None);
        for page in [&text(4096, level as u64), &random, &zeros, &runs] {
            round_trip(&mut c, page, None);
        }
    }
}

#[test]
fn short_inputs_are_literals() {
    let mut c = HcCompressor::new(9, None);
    for len in 0..=MFLIMIT + 1 {
        let src = vec![b'a'; len];
        let n = round_trip(&mut c, &src, None);
        if len <= MFLIMIT {
            assert_eq!(n, 1 + len, "{len} bytes: a token and the literals");
        }
    }
}

#[test]
fn the_last_bytes_are_literals() {
    let mut c = HcCompressor::new(9, None);
    let src = vec![7u8; 4096];
    let mut dst = vec![0u8; 4200];
    let n = c.compress(&src, &mut dst).unwrap();
    // One literal, one long match, then LASTLITERALS literals.
    assert_eq!(dst[n - LASTLITERALS - 1], (LASTLITERALS << 4) as u8);
    assert!(dst[n - LASTLITERALS..n].iter().all(|&b| b == 7));
}

#[test]
fn higher_levels_never_lose_much_and_find_more() {
    let page = text(4096, 3);
    let n1 = round_trip(&mut HcCompressor::new(1, None), &page, None);
    let n12 = round_trip(&mut HcCompressor::new(12, None), &page, None);
    assert!(n12 < n1, "level 12 {n12} vs level 1 {n1}");
}

#[test]
fn dictionary_helps_and_round_trips() {
    let dict = text(20_000, 11);
    let page = text(4096, 12);
    let plain = round_trip(&mut HcCompressor::new(9, None), &page, None);
    let mut c = HcCompressor::new(9, Some(&dict));
    let with = round_trip(&mut c, &page, Some(&dict));
    assert!(with < plain, "dict {with} vs none {plain}");
    // The stream is reusable: the same page gives the same length again.
    assert_eq!(round_trip(&mut c, &page, Some(&dict)), with);
    // Only the last 64 KiB of a longer dictionary are used.
    let mut long = vec![0x5au8; 100_000];
    long.extend_from_slice(&dict);
    let tail = &long[long.len() - DICT_MAX..];
    let mut c = HcCompressor::new(9, Some(&long));
    assert_eq!(round_trip(&mut c, &page, Some(tail)), with);
}

#[test]
fn tiny_dictionaries_round_trip() {
    let page = text(4096, 5);
    for len in 1..8 {
        let dict = text(len, 6);
        round_trip(&mut HcCompressor::new(9, Some(&dict)), &page, Some(&dict));
    }
}

#[test]
fn full_destination_is_an_error() {
    let mut r = rng(9);
    let random: Vec<u8> = (0..4096).map(|_| r() as u8).collect();
    let mut c = HcCompressor::new(9, None);
    let mut dst = vec![0u8; 4096];
    assert!(matches!(
        c.compress(&random, &mut dst),
        Err(CodecError::DstTooSmall { .. })
    ));
    // The same stream still works afterwards.
    round_trip(&mut c, &text(4096, 1), None);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..Default::default() })]

    #[test]
    fn any_page_round_trips_at_any_level(
        segs in proptest::collection::vec((0u8..5, 1usize..900, proptest::prelude::any::<u64>()), 1..20),
        level in 1i32..=12,
        with_dict in proptest::prelude::any::<bool>(),
    ) {
        let page = segments(&segs);
        let dict = text(10_000, level as u64);
        let dict = with_dict.then_some(dict.as_slice());
        round_trip(&mut HcCompressor::new(level, dict), &page, dict);
    }
}
