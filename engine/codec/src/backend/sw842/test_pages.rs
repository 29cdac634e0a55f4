//! Deterministic test pages shared by the unit tests of sw842, lz4m and wkdm.

use crate::PAGE_SIZE;

/// xorshift64*: small, deterministic, good enough for test data.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const WORDS: &[&str] = &[
    "the",
    "page",
    "zram",
    "swap",
    "memory",
    "compressed",
    "slot",
    "handle",
    "kernel",
    "of",
    "and",
    "a",
    "to",
    "in",
    "is",
    "idle",
    "writeback",
    "huge",
    "class",
    "zspage",
];

/// English-like text.
pub fn text(seed: u64) -> Vec<u8> {
    let mut r = Rng::new(seed);
    let mut p = Vec::with_capacity(PAGE_SIZE + 16);
    while p.len() < PAGE_SIZE {
        p.extend_from_slice(WORDS[r.below(WORDS.len() as u64) as usize].as_bytes());
        p.push(if r.below(12) == 0 { b'\n' } else { b' ' });
    }
    p.truncate(PAGE_SIZE);
    p
}

/// Heap-like: malloc'd structs with pointers into a nearby region, small
/// integers, arrays, short strings, zero runs and doubles.
pub fn heap_like(seed: u64) -> Vec<u8> {
    let mut r = Rng::new(seed);
    let base = 0x0000_55d4_a3c0_0000u64 + (r.below(1 << 8) << 20);
    let mut p: Vec<u8> = Vec::with_capacity(PAGE_SIZE + 256);
    let mut id = r.below(1000);
    while p.len() < PAGE_SIZE {
        match r.below(10) {
            0..=3 => {
                // struct node { size header; next; prev; id; u32 len; u32 flags; zero }
                p.extend_from_slice(&0x41u64.to_le_bytes());
                for _ in 0..2 {
                    p.extend_from_slice(&(base + (r.below(1 << 14) << 4)).to_le_bytes());
                }
                id += 1 + r.below(3);
                p.extend_from_slice(&id.to_le_bytes());
                p.extend_from_slice(&(r.below(200) as u32).to_le_bytes());
                p.extend_from_slice(&(1u32 << r.below(4)).to_le_bytes());
                p.extend_from_slice(&[0u8; 16]);
            }
            4 | 5 => {
                let n = 4 + r.below(24);
                let mut v = r.below(50) as u32;
                for _ in 0..n {
                    v += r.below(8) as u32;
                    p.extend_from_slice(&v.to_le_bytes());
                }
            }
            6 => {
                let n = 1 + r.below(5);
                for _ in 0..n {
                    p.extend_from_slice(WORDS[r.below(WORDS.len() as u64) as usize].as_bytes());
                    p.push(b' ');
                }
                while !p.len().is_multiple_of(8) {
                    p.push(0);
                }
            }
            7 => {
                let n = 16 * (1 + r.below(8)) as usize;
                p.resize(p.len() + n, 0);
            }
            8 => {
                for _ in 0..1 + r.below(6) {
                    let x = (r.below(100_000) as f64) / 16.0;
                    p.extend_from_slice(&x.to_le_bytes());
                }
            }
            _ => {
                // a vtable-like pointer repeated across objects
                let vt = 0x0000_55d4_a2a0_0000u64 + (r.below(64) << 3);
                for _ in 0..1 + r.below(4) {
                    p.extend_from_slice(&vt.to_le_bytes());
                    p.extend_from_slice(&(r.below(16)).to_le_bytes());
                }
            }
        }
    }
    p.truncate(PAGE_SIZE);
    p
}

/// Zeros with a few aligned u64s (small integers, pointers, random values).
pub fn sparse(seed: u64) -> Vec<u8> {
    let mut r = Rng::new(seed);
    let mut p = vec![0u8; PAGE_SIZE];
    for _ in 0..4 + r.below(60) {
        let at = 8 * r.below(PAGE_SIZE as u64 / 8) as usize;
        let v = match r.below(3) {
            0 => r.below(256),
            1 => 0x0000_7f00_0000_0000 | (r.below(1 << 36) << 3),
            _ => r.next(),
        };
        p[at..at + 8].copy_from_slice(&v.to_le_bytes());
    }
    p
}

/// Incompressible bytes.
pub fn random(seed: u64) -> Vec<u8> {
    let mut r = Rng::new(seed);
    (0..PAGE_SIZE / 8)
        .flat_map(|_| r.next().to_le_bytes())
        .collect()
}

/// One page of every kind, several seeds each, with names for messages.
pub fn all_kinds() -> Vec<(String, Vec<u8>)> {
    let mut v = vec![("zero".to_string(), vec![0u8; PAGE_SIZE])];
    let mut same = vec![0u8; PAGE_SIZE];
    crate::fill_page(&mut same, 0x0123_4567_89ab_cdef);
    v.push(("same-filled".into(), same));
    for seed in 0..4 {
        v.push((format!("text{seed}"), text(seed)));
        v.push((format!("heap{seed}"), heap_like(seed)));
        v.push((format!("sparse{seed}"), sparse(seed)));
        v.push((format!("random{seed}"), random(seed)));
    }
    v
}
