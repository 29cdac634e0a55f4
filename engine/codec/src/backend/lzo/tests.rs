//! Hand-made vectors, round trips and decoder errors for lzo / lzo-rle.

use super::*;
use crate::{Backend, Params, PAGE_SIZE};

/// A small deterministic generator (xorshift64*), so tests need no crate.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn compress(src: &[u8], rle: bool) -> Vec<u8> {
    let mut c = Compressor::new();
    let mut out = vec![0u8; worst_compress(src.len()) + 64];
    let n = c.compress(src, &mut out, rle).unwrap();
    out.truncate(n);
    out
}

fn round_trip(src: &[u8], rle: bool) -> Vec<u8> {
    let z = compress(src, rle);
    let mut back = vec![0u8; src.len()];
    let n = decompress(&z, &mut back)
        .unwrap_or_else(|e| panic!("decode of {} bytes (rle {rle}): {e}", src.len()));
    assert_eq!(n, src.len());
    assert!(
        back == src,
        "round trip differs for {} bytes (rle {rle})",
        src.len()
    );
    z
}

/// Pages of several kinds: text, pointer-heavy, sparse, random.
fn sample_pages() -> Vec<Vec<u8>> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut pages = Vec::new();
    let text =
        b"The quick brown fox jumps over the lazy dog; zram stores compressed pages in zsmalloc. ";
    pages.push(text.iter().cycle().take(PAGE_SIZE).copied().collect());
    let mut heap = vec![0u8; PAGE_SIZE];
    for w in heap.chunks_exact_mut(8) {
        let v = match rng.below(4) {
            0 => 0,
            1 => 0x0000_5555_5555_0000 | (rng.next() & 0xfff0),
            2 => rng.next() & 0xff,
            _ => rng.next(),
        };
        w.copy_from_slice(&v.to_le_bytes());
    }
    pages.push(heap);
    let mut sparse = vec![0u8; PAGE_SIZE];
    for _ in 0..40 {
        let i = rng.below(PAGE_SIZE);
        sparse[i] = rng.next() as u8;
    }
    pages.push(sparse);
    pages.push((0..PAGE_SIZE).map(|_| rng.next() as u8).collect());
    let mut half = vec![0u8; PAGE_SIZE];
    for b in half[..PAGE_SIZE / 2].iter_mut() {
        *b = rng.next() as u8;
    }
    pages.push(half);
    pages.push(vec![0u8; PAGE_SIZE]);
    pages.push(vec![0xaau8; PAGE_SIZE]);
    pages
}

#[test]
fn all_zero_page_lzo_rle_vector() {
    // Worked out by hand from the algorithm: 5 literals (the search starts
    // at 5), a 2051-byte run, a 2020-byte run up to ip_end, 20 tail literals.
    let z = compress(&[0u8; PAGE_SIZE], true);
    let mut want = vec![17, 1, 2, 0, 0, 0, 0, 0];
    want.extend([0x1f, 0xfc, 0xff, 0xff]); // run of 2047 + 4
    want.extend([0x18, 0xfc, 0xff, 0xfc]); // run of 2016 + 4
    want.extend([0, 2]); // 20 literals: 0, then 20 - 18
    want.extend([0u8; 20]);
    want.extend([0x11, 0, 0]);
    assert_eq!(z, want);
    round_trip(&[0u8; PAGE_SIZE], true);
}

#[test]
fn all_zero_page_lzo_vector() {
    // Plain lzo: 5 literals, then one M3 match at distance 5 running to
    // ip_end + 5 (length 4076: 0x20, 15 x 0, 218, offset 4 << 2), 15 tail literals.
    let z = compress(&[0u8; PAGE_SIZE], false);
    let mut want = vec![2, 0, 0, 0, 0, 0, 0x20];
    want.extend([0u8; 15]);
    want.extend([218, 4 << 2, 0]);
    want.push(12);
    want.extend([0u8; 15]);
    want.extend([0x11, 0, 0]);
    assert_eq!(z, want);
    round_trip(&[0u8; PAGE_SIZE], false);
}

#[test]
fn rle_header_and_short_inputs() {
    // Empty input: only the end marker (after 17 1 in lzo-rle).
    assert_eq!(compress(&[], false), [0x11, 0, 0]);
    assert_eq!(compress(&[], true), [17, 1, 0x11, 0, 0]);
    // Up to 20 bytes: one first-byte literal run (17 + t).
    assert_eq!(compress(b"abc", false), [20, b'a', b'b', b'c', 0x11, 0, 0]);
    assert_eq!(
        compress(b"abc", true),
        [17, 1, 20, b'a', b'b', b'c', 0x11, 0, 0]
    );
    for n in 0..300 {
        let src: Vec<u8> = (0..n).map(|i| (i * 7 % 13) as u8).collect();
        for rle in [false, true] {
            let z = round_trip(&src, rle);
            assert_eq!(z.starts_with(&[17, 1]), rle, "n {n}");
        }
    }
}

#[test]
fn rle_op_layout_decodes() {
    // "abc", a zero run of 100 (r = 96: 0x18 | (96 & 7), 0xfc | S, 0xff, 96 >> 3)
    // with S = 2 trailing literals "de", end.
    let s = [
        17, 1, 20, b'a', b'b', b'c', 0x18, 0xfe, 0xff, 12, b'd', b'e', 0x11, 0, 0,
    ];
    let mut out = vec![0u8; 105];
    assert_eq!(decompress(&s, &mut out), Ok(105));
    let mut want = b"abc".to_vec();
    want.extend([0u8; 100]);
    want.extend(b"de");
    assert_eq!(out, want);
    // The same bytes in a version-0 stream are an M4 match, not a zero run.
    let mut v0 = s;
    v0[1] = 0;
    assert_ne!(decompress(&v0, &mut out), Ok(105));
}

#[test]
fn rle_instruction_emitted_for_zero_runs() {
    let mut page: Vec<u8> = (0..PAGE_SIZE).map(|i| (i * 31 % 251) as u8 | 1).collect();
    page[1000..1300].fill(0);
    let z = round_trip(&page, true);
    // The run starts where the search finds 4 zero bytes: 0x18 | (r & 7), 0xfc | S, 0xff, r >> 3.
    let pos = z
        .windows(3)
        .position(|w| w[0] & 0xf8 == 0x18 && w[1] & 0xfc == 0xfc && w[2] == 0xff);
    let p = pos.expect("an RLE instruction");
    let r = ((z[p] & 7) as usize | (z[p + 3] as usize) << 3) + 4;
    assert!((296..=300).contains(&r), "run {r}");
    // Plain lzo has no such instruction and is longer here.
    let z0 = round_trip(&page, false);
    assert!(!z0
        .windows(3)
        .any(|w| w[0] & 0xf8 == 0x18 && w[1] & 0xfc == 0xfc && w[2] == 0xff));
}

#[test]
fn round_trips_pages_and_long_inputs() {
    for page in sample_pages() {
        for rle in [false, true] {
            let z = round_trip(&page, rle);
            assert!(z.len() <= worst_compress(PAGE_SIZE));
        }
    }
    // Inputs over 0xbfff bytes are cut into chunks with a literal carry.
    let mut rng = Rng(7);
    let mut big = Vec::new();
    while big.len() < 200_000 {
        let k = rng.below(64) + 1;
        if rng.below(3) == 0 {
            big.extend(std::iter::repeat_n(0u8, k * 10));
        } else if rng.below(2) == 0 && big.len() > 70_000 {
            let from = rng.below(big.len() - 60_000) + 10_000;
            let piece = big[from..from + k * 4].to_vec();
            big.extend(piece);
        } else {
            big.extend((0..k).map(|_| rng.next() as u8));
        }
    }
    for len in [0xbfff, 0xc000, 0xc001, 0x17ffe, 0x17fff, 0x18000, big.len()] {
        round_trip(&big[..len], false);
        round_trip(&big[..len], true);
    }
}

/// Matches at every distance the decoder copies differently (below 8 byte
/// by byte, 8..16 in words, 16 and more in 16-byte chunks), overlapping
/// their own output (length > distance), short and long, and ending at
/// every position near the end of the page, where the chunked copies have no
/// room to overshoot.
#[test]
fn matches_of_every_distance_and_overlap_round_trip() {
    let mut rng = Rng(11);
    for period in 1..=40usize {
        let unit: Vec<u8> = (0..period).map(|_| rng.next() as u8 | 1).collect();
        for tail in [0usize, 1, 3, 7, 15, 16, 17, 31, 40] {
            // Random head, the pattern repeated, then `tail` random bytes.
            let mut page: Vec<u8> = (0..64).map(|_| rng.next() as u8).collect();
            while page.len() < PAGE_SIZE - tail {
                page.push(unit[page.len() % period]);
            }
            page.extend((0..tail).map(|_| rng.next() as u8));
            page.truncate(PAGE_SIZE);
            for rle in [false, true] {
                round_trip(&page, rle);
            }
        }
        // Short repeats (M2 matches of 3..8 bytes) between random literals.
        let mut page = Vec::with_capacity(PAGE_SIZE);
        while page.len() < PAGE_SIZE {
            let k = rng.below(8) + 3;
            let start = page.len().saturating_sub(period);
            let rep: Vec<u8> = (0..k)
                .map(|i| page.get(start + i).copied().unwrap_or(9))
                .collect();
            page.extend(rep);
            page.extend((0..rng.below(4)).map(|_| rng.next() as u8));
        }
        page.truncate(PAGE_SIZE);
        for rle in [false, true] {
            round_trip(&page, rle);
        }
    }
}

#[test]
fn decoder_rejects_malformed_streams() {
    let mut out = [0u8; 64];
    // Too short for even the end marker.
    assert_eq!(decompress(&[], &mut out), Err(DecodeError::InputOverrun));
    assert_eq!(
        decompress(&[0x11, 0], &mut out),
        Err(DecodeError::InputOverrun)
    );
    // A good stream, then with a byte after the end marker.
    assert_eq!(decompress(&[20, 1, 2, 3, 0x11, 0, 0], &mut out), Ok(3));
    assert_eq!(
        decompress(&[20, 1, 2, 3, 0x11, 0, 0, 0], &mut out),
        Err(DecodeError::InputNotConsumed)
    );
    // No end marker.
    assert_eq!(
        decompress(&[20, 1, 2, 3], &mut out),
        Err(DecodeError::InputOverrun)
    );
    // End marker of the wrong length (M4 distance 0 with L = 2).
    assert_eq!(
        decompress(&[20, 1, 2, 3, 0x12, 0, 0], &mut out),
        Err(DecodeError::BadEndMarker)
    );
    // A match before the start of the output: 1 literal, then M2 at distance 9.
    assert_eq!(
        decompress(&[18, 7, 0x40, 1, 0x11, 0, 0], &mut out),
        Err(DecodeError::LookbehindOverrun)
    );
    // More output than room.
    assert_eq!(
        decompress(&[20, 1, 2, 3, 0x11, 0, 0], &mut out[..2]),
        Err(DecodeError::OutputOverrun)
    );
    // A zero run larger than the output.
    let s = [17, 1, 20, 1, 2, 3, 0x18, 0xfc, 0xff, 12, 0x11, 0, 0];
    assert_eq!(decompress(&s, &mut out), Err(DecodeError::OutputOverrun));
    // A literal-length extension that runs off the end.
    assert_eq!(
        decompress(&[0, 0, 0, 0], &mut out),
        Err(DecodeError::InputOverrun)
    );

    // No strict prefix of a real stream decodes to the page (`17 1 0` alone
    // is a valid empty version-0 stream, so "not the page" is the property).
    for page in sample_pages() {
        for rle in [false, true] {
            let z = compress(&page, rle);
            let mut back = vec![0u8; PAGE_SIZE];
            for cut in 0..z.len() {
                let r = decompress(&z[..cut], &mut back);
                assert!(
                    r.is_err() || r.unwrap() < PAGE_SIZE,
                    "prefix {cut} of {} accepted",
                    z.len()
                );
            }
            // One byte short of the page.
            assert_eq!(
                decompress(&z, &mut back[..PAGE_SIZE - 1]),
                Err(DecodeError::OutputOverrun)
            );
        }
    }
}

#[test]
fn mutated_streams_never_panic() {
    let mut rng = Rng(0xdead_beef);
    let mut back = vec![0u8; PAGE_SIZE];
    let mut big = vec![0u8; 3 * PAGE_SIZE];
    for page in sample_pages() {
        for rle in [false, true] {
            let z = compress(&page, rle);
            for _ in 0..300 {
                let mut m = z.clone();
                for _ in 0..1 + rng.below(4) {
                    let i = rng.below(m.len());
                    match rng.below(3) {
                        0 => m[i] ^= 1 << rng.below(8),
                        1 => m[i] = rng.next() as u8,
                        _ => {
                            m.insert(i, rng.next() as u8);
                        }
                    }
                }
                let _ = decompress(&m, &mut back);
                let _ = decompress(&m, &mut big);
            }
        }
    }
    for _ in 0..2000 {
        let n = rng.below(64);
        let s: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
        let _ = decompress(&s, &mut back);
    }
}

#[test]
fn stream_api() {
    for b in [&LZO, &LZO_RLE] {
        assert!(b.in_kernel());
        let mut s = b.new_stream(&Params::default()).unwrap();
        for page in sample_pages() {
            let mut dst = vec![0u8; crate::MAX_COMPRESSED];
            let n = s.compress(&page, &mut dst).unwrap();
            assert_eq!(&dst[..n], &compress(&page, b.rle())[..]);
            let mut back = vec![0u8; PAGE_SIZE];
            s.decompress(&dst[..n], &mut back).unwrap();
            assert_eq!(back, page);
            // An exact-size destination works (through the scratch buffer),
            // one byte less is DstTooSmall.
            let mut exact = vec![0u8; n];
            assert_eq!(s.compress(&page, &mut exact).unwrap(), n);
            assert_eq!(exact, &dst[..n]);
            let mut small = vec![0u8; n - 1];
            assert!(matches!(
                s.compress(&page, &mut small),
                Err(CodecError::DstTooSmall { .. })
            ));
            // A short destination for decompression is an error, as is a long one.
            assert!(s.decompress(&dst[..n], &mut back[..PAGE_SIZE - 8]).is_err());
            let mut long = vec![0u8; PAGE_SIZE + 1];
            assert!(s.decompress(&dst[..n], &mut long).is_err());
        }
        assert!(s.compress(&[0u8; 100], &mut [0u8; 8192]).is_err());
        let e = b
            .new_stream(&Params {
                level: Some(3),
                ..Params::default()
            })
            .err()
            .unwrap();
        assert!(e.to_string().contains("no parameters"), "{e}");
    }
    assert_eq!(crate::find("lzo-rle").unwrap().name(), "lzo-rle");
}
