//! Shared by the codec integration tests: the registry's streams and sample pages.

#![allow(dead_code)]

use zmem_codec::{Backend, Params, Stream, MAX_COMPRESSED, PAGE_SIZE};

/// A stream with default params for every registry backend; any error fails
/// the test (all nine algorithms are implemented).
pub fn available(test: &str) -> Vec<(&'static dyn Backend, Box<dyn Stream>)> {
    let out: Vec<_> = zmem_codec::all()
        .iter()
        .map(|b| match b.new_stream(&Params::default()) {
            Ok(s) => (*b, s),
            Err(e) => panic!(
                "{test}: {}: new_stream with default params failed: {e}",
                b.name()
            ),
        })
        .collect();
    assert_eq!(out.len(), 9, "{test}: the registry has nine algorithms");
    out
}

/// A small deterministic generator (xorshift64*), so failures reproduce.
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Pages of the shapes zram sees: zero, sparse, text, pointer-like, random.
pub fn sample_pages() -> Vec<(&'static str, Vec<u8>)> {
    let mut r = Rng(0x5eed_1234_abcd_0001);
    let mut pages = Vec::new();
    pages.push(("zero", vec![0u8; PAGE_SIZE]));
    let mut sparse = vec![0u8; PAGE_SIZE];
    for _ in 0..24 {
        let o = r.below(PAGE_SIZE / 8) * 8;
        sparse[o..o + 8].copy_from_slice(&r.next().to_le_bytes());
    }
    pages.push(("sparse", sparse));
    let words = [
        "zram ",
        "page ",
        "slot ",
        "handle ",
        "the ",
        "of ",
        "compress ",
        "\n",
        "0x7ffd ",
    ];
    let mut text = Vec::with_capacity(PAGE_SIZE);
    while text.len() < PAGE_SIZE {
        text.extend_from_slice(words[r.below(words.len())].as_bytes());
    }
    text.truncate(PAGE_SIZE);
    pages.push(("text", text));
    let mut ptrs = vec![0u8; PAGE_SIZE];
    for c in ptrs.chunks_exact_mut(8) {
        let v = match r.below(3) {
            0 => 0x0000_7f3a_0000_0000u64 | (r.next() & 0xff_fff8),
            1 => r.next() % 100,
            _ => 0,
        };
        c.copy_from_slice(&v.to_le_bytes());
    }
    pages.push(("pointers", ptrs));
    let mut random = vec![0u8; PAGE_SIZE];
    for c in random.chunks_exact_mut(8) {
        c.copy_from_slice(&r.next().to_le_bytes());
    }
    pages.push(("random", random));
    pages
}

/// Compress `page` and return the stream bytes.
pub fn compress(s: &mut dyn Stream, page: &[u8]) -> Vec<u8> {
    let mut dst = vec![0u8; MAX_COMPRESSED];
    let n = s
        .compress(page, &mut dst)
        .expect("compress into MAX_COMPRESSED succeeds");
    dst.truncate(n);
    dst
}
