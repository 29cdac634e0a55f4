//! The shared harness of the codec fuzz targets (one per algorithm, plus a
//! round trip). Every target checks the same property: no input makes a
//! decoder panic, read or write out of bounds, or loop; a successful decode
//! fills exactly one page.

use std::cell::RefCell;
use std::collections::HashMap;

use zmem_codec::{CodecError, Params, Stream, MAX_COMPRESSED, PAGE_SIZE};

/// A fixed dictionary for the dictionary-taking codecs (lz4, lz4hc, zstd).
fn dict() -> Vec<u8> {
    let mut d = Vec::with_capacity(8192);
    let words: &[&[u8]] = &[
        b"zram ",
        b"slot ",
        b"\0\0\0\0\0\0\0\0",
        b"\x7f\0\0\x55\x55\0\0\0",
        b"the page ",
    ];
    let mut i = 0usize;
    while d.len() < 8192 {
        d.extend_from_slice(words[i % words.len()]);
        i = i.wrapping_mul(31).wrapping_add(7);
    }
    d
}

thread_local! {
    // (algorithm, with dictionary) -> stream; None when the backend is not available.
    static STREAMS: RefCell<HashMap<(&'static str, bool), Option<Box<dyn Stream>>>> = RefCell::new(HashMap::new());
}

fn with_stream<R>(
    name: &'static str,
    with_dict: bool,
    f: impl FnOnce(&mut dyn Stream) -> R,
) -> Option<R> {
    STREAMS.with(|m| {
        let mut m = m.borrow_mut();
        let slot = m.entry((name, with_dict)).or_insert_with(|| {
            let b = zmem_codec::find(name).expect("fuzz target names a registry algorithm");
            let takes_dict = b.params().iter().any(|p| p.key == "dict");
            if with_dict && !takes_dict {
                return None;
            }
            let params = if with_dict {
                Params::default().dict_bytes(dict())
            } else {
                Params::default()
            };
            match b.new_stream(&params) {
                Ok(s) => Some(s),
                Err(e) => panic!("{name}: new_stream: {e}"),
            }
        });
        slot.as_mut().map(|s| f(s.as_mut()))
    })
}

/// Decode arbitrary bytes with `name`'s decoder. The first byte's low bit
/// picks the stream with a dictionary (for codecs that take one).
pub fn decompress(name: &'static str, data: &[u8]) {
    let with_dict = data.first().is_some_and(|b| b & 1 == 1);
    let input = if data.is_empty() { data } else { &data[1..] };
    let mut out = vec![0u8; PAGE_SIZE];
    let r = with_stream(name, with_dict, |s| s.decompress(input, &mut out))
        .or_else(|| with_stream(name, false, |s| s.decompress(input, &mut out)));
    match r {
        None | Some(Ok(())) | Some(Err(CodecError::Corrupt { .. })) => {}
        Some(Err(e)) => panic!("{name}: decoder returned {e:?}, expected Ok or Corrupt"),
    }
    assert_eq!(out.len(), PAGE_SIZE);
}

/// Compress a page made from the input with an algorithm chosen by the first
/// byte, into a destination whose size the second byte picks, and check the
/// round trip (or a clean DstTooSmall).
pub fn roundtrip(data: &[u8]) {
    if data.len() < 2 {
        return;
    }
    let all = zmem_codec::all();
    let b = all[data[0] as usize % all.len()];
    let cap = match data[1] % 4 {
        0 => MAX_COMPRESSED,
        1 => PAGE_SIZE,
        2 => PAGE_SIZE * 3 / 4,
        _ => 64 + data[1] as usize * 8,
    };
    let with_dict = data[1] & 0x80 != 0;
    let mut page = vec![0u8; PAGE_SIZE];
    let body = &data[2..];
    if !body.is_empty() {
        // Repeat the input to fill the page, so short inputs still make matches.
        for (i, p) in page.iter_mut().enumerate() {
            *p = body[i % body.len()];
        }
        if body.len() < PAGE_SIZE {
            // Keep a tail of zeros when the input is short (sparse-like pages).
            let keep = (body.len() * 7).min(PAGE_SIZE);
            page[keep..].fill(0);
        }
    }
    let name = b.name();
    let mut dst = vec![0u8; cap];
    let mut out = vec![0u8; PAGE_SIZE];
    let mut run = |s: &mut dyn Stream| match s.compress(&page, &mut dst) {
        Ok(n) => {
            assert!(n <= cap, "{name}: wrote {n} into {cap}");
            s.decompress(&dst[..n], &mut out)
                .unwrap_or_else(|e| panic!("{name}: own output: {e}"));
            assert!(out == page, "{name}: round trip changed the page");
        }
        Err(CodecError::DstTooSmall { .. }) => assert!(
            cap < MAX_COMPRESSED,
            "{name}: page does not fit MAX_COMPRESSED"
        ),
        Err(e) => panic!("{name}: compress: {e}"),
    };
    if with_stream(name, with_dict, &mut run).is_none() {
        with_stream(name, false, &mut run);
    }
}

/// Compress a page made from the input with `name` at the level the first
/// byte picks (1..=12: lz4hc's levels, lz4's accelerations), with the fixed dictionary when the second byte's low
/// bit is set, into a destination whose size the second byte picks; check
/// the round trip (or a clean DstTooSmall). For encoders of our own.
pub fn compress_levels(name: &'static str, data: &[u8]) {
    if data.len() < 3 {
        return;
    }
    let mut params = Params::with_level(1 + (data[0] % 12) as i32);
    if data[1] & 1 == 1 {
        params = params.dict_bytes(dict());
    }
    let cap = match (data[1] >> 1) % 4 {
        0 => MAX_COMPRESSED,
        1 => PAGE_SIZE,
        2 => PAGE_SIZE / 2,
        _ => 16 + data[2] as usize * 16,
    };
    let body = &data[2..];
    let page: Vec<u8> = (0..PAGE_SIZE).map(|i| body[i % body.len()]).collect();
    let mut s = zmem_codec::find(name)
        .expect("fuzz target names a registry algorithm")
        .new_stream(&params)
        .unwrap_or_else(|e| panic!("{name}: new_stream: {e}"));
    check_round_trip(name, s.as_mut(), &page, cap);
}

/// Compress `page` into `cap` bytes and decode it back: the page again, or a
/// clean DstTooSmall (only below MAX_COMPRESSED).
fn check_round_trip(name: &str, s: &mut dyn Stream, page: &[u8], cap: usize) {
    let mut dst = vec![0u8; cap];
    match s.compress(page, &mut dst) {
        Ok(n) => {
            assert!(n <= cap, "{name}: wrote {n} into {cap}");
            let mut out = vec![0u8; PAGE_SIZE];
            s.decompress(&dst[..n], &mut out)
                .unwrap_or_else(|e| panic!("{name}: own output: {e}"));
            assert!(out == page, "{name}: round trip changed the page");
        }
        Err(CodecError::DstTooSmall { .. }) => {
            assert!(cap < MAX_COMPRESSED, "{name}: DstTooSmall into {cap}")
        }
        Err(e) => panic!("{name}: compress returned {e:?}"),
    }
}

thread_local! {
    // (major, minor) -> the zstd level-3 stream modelling that kernel.
    static ZSTD_AS: RefCell<HashMap<(u16, u16), Box<dyn Stream>>> = RefCell::new(HashMap::new());
}

/// Compress a page made from the input (repeated from byte 1 on) with zstd
/// level 3 as Linux 6.12 writes it (lib/zstd 1.5.2's double-fast match
/// finder under libzstd's entropy stage), on one stream reused across inputs
/// as zram reuses it, into a destination whose size byte 0 picks; libzstd
/// decodes it back to the page, or compression reports DstTooSmall cleanly.
pub fn compress_zstd_6_12(data: &[u8]) {
    compress_zstd_as("zstd 6.12", (6, 12), data);
}

/// As [`compress_zstd_6_12`], as Linux 6.1 writes it (lib/zstd 1.4.10's
/// double-fast at the crypto API's parameters, under libzstd's entropy stage).
pub fn compress_zstd_6_1(data: &[u8]) {
    compress_zstd_as("zstd 6.1", (6, 1), data);
}

fn compress_zstd_as(name: &str, (major, minor): (u16, u16), data: &[u8]) {
    if data.len() < 2 {
        return;
    }
    let cap = match data[0] % 4 {
        0 => MAX_COMPRESSED,
        1 => PAGE_SIZE,
        2 => PAGE_SIZE / 2,
        _ => 16 + data[0] as usize * 16,
    };
    let body = &data[1..];
    let page: Vec<u8> = (0..PAGE_SIZE).map(|i| body[i % body.len()]).collect();
    ZSTD_AS.with(|streams| {
        let mut streams = streams.borrow_mut();
        let s = streams.entry((major, minor)).or_insert_with(|| {
            let params = Params {
                level: Some(3),
                kernel: Some(zmem_kernel::KernelVersion::new(major, minor)),
                ..Params::default()
            };
            zmem_codec::find("zstd")
                .expect("zstd is in the registry")
                .new_stream(&params)
                .unwrap_or_else(|e| panic!("{name}: new_stream: {e}"))
        });
        check_round_trip(name, s.as_mut(), &page, cap);
    });
}
