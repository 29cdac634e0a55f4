//! Shared helpers of the zram tests: devices and pages of every kind.
#![allow(dead_code)]

use zmem_codec::Params;
use zmem_kernel::Errno;
use zmem_zram::{Zram, PAGE_SIZE};

/// The algorithm the engine tests use.
pub const ALGO: &str = "lz4";

/// An initialised lz4/zsmalloc device of `bytes`.
pub fn device(bytes: u64) -> Zram {
    Zram::builder()
        .algorithm(ALGO, Params::default())
        .disksize(bytes)
        .build()
        .expect("lz4 + zsmalloc device")
}

/// A small deterministic PRNG (xorshift64*).
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Page kinds: 0 zero, 1 same-filled pattern, 2 text-like, 3 random (huge),
/// 4 half random, 5 sparse.
pub fn page(kind: u64, seed: u64) -> Vec<u8> {
    let mut r = Rng(seed | 1);
    let mut p = vec![0u8; PAGE_SIZE];
    match kind % 6 {
        0 => {}
        1 => zmem_codec::fill_page(&mut p, r.next()),
        2 => {
            let words: [&[u8]; 8] = [
                b"the ", b"slot ", b"zspage ", b"handle ", b"class ", b"page ", b"idle ", b"huge\n",
            ];
            let mut i = 0;
            while i < PAGE_SIZE {
                let w = words[r.below(8) as usize];
                let n = w.len().min(PAGE_SIZE - i);
                p[i..i + n].copy_from_slice(&w[..n]);
                i += n;
            }
        }
        3 => p
            .chunks_mut(8)
            .for_each(|c| c.copy_from_slice(&r.next().to_ne_bytes())),
        4 => p[..PAGE_SIZE / 2]
            .chunks_mut(8)
            .for_each(|c| c.copy_from_slice(&r.next().to_ne_bytes())),
        _ => {
            for _ in 0..16 {
                let i = r.below(PAGE_SIZE as u64) as usize;
                p[i] = r.next() as u8;
            }
        }
    }
    p
}

/// Word salad with stray bytes: lz4 (byte matches) stores it smaller than
/// lz4m (word matches).
pub fn phrases(seed: u64) -> Vec<u8> {
    let mut r = Rng(seed.wrapping_mul(2) | 1);
    let words: [&[u8]; 6] = [b"alpha ", b"be ", b"gamma, ", b"de ", b"epsilon. ", b"z "];
    let mut p = Vec::new();
    while p.len() < PAGE_SIZE {
        p.extend_from_slice(words[r.below(6) as usize]);
        if r.below(5) == 0 {
            p.push(r.next() as u8);
        }
    }
    p.truncate(PAGE_SIZE);
    p
}

/// The content of page `index` at version `v` (0 = zeros): the version is
/// embedded so a reader can tell which write it sees and verify the rest.
pub fn content(index: usize, v: u64) -> Vec<u8> {
    if v == 0 {
        return vec![0u8; PAGE_SIZE];
    }
    let mut p = page(v % 6, (index as u64) << 32 | v);
    if zmem_codec::same_filled(&p).is_some() {
        return p; // same-filled pages carry no room for a tag; checked by value
    }
    p[..8].copy_from_slice(&v.to_le_bytes());
    p[8..16].copy_from_slice(&(index as u64).to_le_bytes());
    p
}

/// lz4 primary plus the given secondaries, initialised with `bytes`.
pub fn dev_with(secondaries: &[(usize, &str)], bytes: u64) -> Zram {
    let mut b = Zram::builder().algorithm("lz4", Params::default());
    for &(p, n) in secondaries {
        b = b.secondary(p, n, Params::default());
    }
    b.disksize(bytes).build().expect("device")
}

pub fn errno(r: Result<(), zmem_kernel::AttrError>) -> Errno {
    r.expect_err("the kernel refuses this").errno
}
