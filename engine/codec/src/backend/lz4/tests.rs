//! Unit tests of the kernel's LZ4 fast encoder: round trips through liblz4's
//! decoder, the format's end rules, the acceleration, dictionaries, a full
//! destination, and where it parts from liblz4 1.10's encoder.

use lzzzz::lz4;

use super::compress::{FastCompressor, DICT_MAX, LASTLITERALS, MAX_INPUT, MFLIMIT};
use crate::backend::lz4_block::test_pages::{rng, segments, text};
use crate::CodecError;

fn compress(c: &mut FastCompressor, src: &[u8]) -> Vec<u8> {
    let mut dst = vec![0u8; src.len() + src.len() / 255 + 16];
    let n = c.compress(src, &mut dst).unwrap();
    dst.truncate(n);
    dst
}

fn round_trip(c: &mut FastCompressor, src: &[u8], dict: Option<&[u8]>) -> usize {
    let out = compress(c, src);
    let mut back = vec![0u8; src.len()];
    let got = match dict {
        None => lz4::decompress(&out, &mut back),
        Some(d) => lz4::decompress_with_dict(&out, &mut back, d),
    }
    .unwrap();
    assert_eq!(got, src.len());
    assert!(back == src, "round trip");
    out.len()
}

#[test]
fn round_trips_at_several_accelerations() {
    let mut r = rng(7);
    let random: Vec<u8> = (0..4096).map(|_| r() as u8).collect();
    let zeros = vec![0u8; 4096];
    let mut runs = vec![0u8; 4096];
    for (i, b) in runs.iter_mut().enumerate() {
        *b = (i / 300) as u8;
    }
    for accel in [1, 2, 3, 8, 64, 1000, 65537] {
        let mut c = FastCompressor::new(accel, None);
        for page in [&text(4096, accel as u64), &random, &zeros, &runs] {
            round_trip(&mut c, page, None);
        }
    }
}

#[test]
fn higher_acceleration_finds_fewer_matches() {
    let page = text(4096, 3);
    let n1 = round_trip(&mut FastCompressor::new(1, None), &page, None);
    let n64 = round_trip(&mut FastCompressor::new(64, None), &page, None);
    assert!(n64 > n1, "acceleration 64 {n64} vs 1 {n1}");
    // Below 1 is 1, as LZ4_compress_fast has it.
    assert_eq!(
        round_trip(&mut FastCompressor::new(0, None), &page, None),
        n1
    );
}

#[test]
fn short_inputs_are_literals() {
    let mut c = FastCompressor::new(1, None);
    for len in 0..=MFLIMIT + 1 {
        let src = vec![b'a'; len];
        let n = round_trip(&mut c, &src, None);
        if len <= MFLIMIT {
            assert_eq!(n, 1 + len, "{len} bytes: a token and the literals");
        }
    }
}

#[test]
fn a_run_is_one_literal_one_match_and_the_last_literals() {
    let mut c = FastCompressor::new(1, None);
    let out = compress(&mut c, &[7u8; 4096]);
    // Token (1 literal, long match), the literal, offset 1, the length bytes
    // for 4096 - 1 - 5 - 4 - 15 = 4071 (15 x 255 + 246), then the last
    // LASTLITERALS literals.
    assert_eq!(&out[..4], &[0x1f, 7, 1, 0]);
    assert_eq!(out.len(), 4 + 15 + 1 + 1 + LASTLITERALS);
    assert_eq!(out[4 + 15], 246);
    assert_eq!(out[out.len() - LASTLITERALS - 1], (LASTLITERALS << 4) as u8);
}

#[test]
fn dictionary_helps_and_round_trips() {
    let dict = text(20_000, 11);
    let page = text(4096, 12);
    let plain = round_trip(&mut FastCompressor::new(1, None), &page, None);
    let mut c = FastCompressor::new(1, Some(&dict));
    let with = round_trip(&mut c, &page, Some(&dict));
    assert!(with < plain, "dict {with} vs none {plain}");
    // The stream is reusable: the same page gives the same bytes again.
    assert_eq!(round_trip(&mut c, &page, Some(&dict)), with);
    // Only the last 64 KiB of a longer dictionary are used.
    let mut long = vec![0x5au8; 100_000];
    long.extend_from_slice(&dict);
    let tail = &long[long.len() - DICT_MAX..];
    let mut c = FastCompressor::new(1, Some(&long));
    let from_long = compress(&mut c, &page);
    assert_eq!(
        compress(&mut FastCompressor::new(1, Some(tail)), &page),
        from_long
    );
    round_trip(&mut c, &page, Some(tail));
    round_trip(&mut c, &page, Some(&long));
}

#[test]
fn a_match_runs_from_the_dictionary_into_the_page() {
    // The dictionary ends with the page's first bytes: a match that starts
    // in the dictionary continues into the page.
    let page = text(4096, 21);
    let mut dict = text(1000, 22);
    dict.extend_from_slice(&page[..512]);
    let mut c = FastCompressor::new(1, Some(&dict));
    let n = round_trip(&mut c, &page, Some(&dict));
    let plain = round_trip(&mut FastCompressor::new(1, None), &page, None);
    assert!(n < plain, "{n} vs {plain}");
}

#[test]
fn tiny_dictionaries_round_trip() {
    let page = text(4096, 5);
    let plain = round_trip(&mut FastCompressor::new(1, None), &page, None);
    for len in 1..16 {
        let dict = text(len, 6);
        let n = round_trip(&mut FastCompressor::new(1, Some(&dict)), &page, Some(&dict));
        if len < 8 {
            // LZ4_loadDict loads nothing under HASH_UNIT bytes.
            assert_eq!(n, plain, "dictionary of {len} bytes");
        }
    }
}

#[test]
fn full_destination_is_an_error() {
    let mut r = rng(9);
    let random: Vec<u8> = (0..4096).map(|_| r() as u8).collect();
    let mut c = FastCompressor::new(1, None);
    let mut dst = vec![0u8; 4096];
    assert!(matches!(
        c.compress(&random, &mut dst),
        Err(CodecError::DstTooSmall { .. })
    ));
    // The same stream still works afterwards.
    round_trip(&mut c, &text(4096, 1), None);
    // A destination of exactly the output's length is enough.
    let out = compress(&mut c, &random);
    let mut exact = vec![0u8; out.len()];
    assert_eq!(c.compress(&random, &mut exact).unwrap(), out.len());
    assert_eq!(exact, out);
}

#[test]
fn inputs_over_64_kib_are_refused() {
    let mut c = FastCompressor::new(1, None);
    round_trip(&mut c, &text(MAX_INPUT, 2), None);
    let mut dst = vec![0u8; 70_000];
    assert!(matches!(
        c.compress(&vec![0u8; MAX_INPUT + 1], &mut dst),
        Err(CodecError::InvalidInput { .. })
    ));
}

#[test]
fn same_as_liblz4_on_most_pages() {
    // The kernel's encoder is liblz4's of 2016; liblz4 1.10's search differs
    // in details. Most pages come out the same, byte for byte.
    let mut c = FastCompressor::new(1, None);
    let mut same = 0;
    for seed in 0..50 {
        let page = text(4096, seed);
        let ours = compress(&mut c, &page);
        let mut theirs = vec![0u8; 4200];
        let n = lz4::compress(&page, &mut theirs, 1).unwrap();
        same += usize::from(ours[..] == theirs[..n]);
    }
    assert!(same >= 40, "{same} of 50 pages equal");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 128, ..Default::default() })]

    #[test]
    fn any_page_round_trips_at_any_acceleration(
        segs in proptest::collection::vec((0u8..5, 1usize..900, proptest::prelude::any::<u64>()), 1..20),
        accel in 1i32..=20,
        with_dict in proptest::prelude::any::<bool>(),
    ) {
        let page = segments(&segs);
        let mut dict = text(10_000, accel as u64);
        dict.extend_from_slice(&page[..1000]);
        let dict = with_dict.then_some(dict.as_slice());
        round_trip(&mut FastCompressor::new(accel, dict), &page, dict);
    }
}
