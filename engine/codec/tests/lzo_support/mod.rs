//! Test pages for the lzo tests and the lzo benchmark (shared by
//! `tests/lzo_kernel.rs`, `tests/lzo_liblzo.rs` and `benches/lzo.rs`).
//!
//! Each corpus is a list of 4 KiB pages: text from files on the machine,
//! heap pages (the running process's own `[heap]`, and synthetic pages laid
//! out like a malloc heap), zero-heavy pages, fio-style partially
//! compressible pages, executable pages and random pages.

#![allow(dead_code)]

use std::fs;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;

pub mod liblzo;

pub const PAGE: usize = 4096;

/// A named list of pages.
pub struct Corpus {
    pub name: &'static str,
    pub pages: Vec<Vec<u8>>,
}

/// xorshift64*: deterministic pages without a crate.
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn fill(&mut self, b: &mut [u8]) {
        for c in b.chunks_mut(8) {
            let v = self.next().to_le_bytes();
            c.copy_from_slice(&v[..c.len()]);
        }
    }
}

fn pages_of(bytes: &[u8], max: usize) -> Vec<Vec<u8>> {
    bytes
        .chunks_exact(PAGE)
        .take(max)
        .map(|p| p.to_vec())
        .collect()
}

fn collect_files(dir: &Path, ext: &[&str], out: &mut Vec<u8>, limit: usize) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if out.len() >= limit {
            return;
        }
        if p.is_dir() {
            collect_files(&p, ext, out, limit);
        } else if ext.is_empty() || p.extension().is_some_and(|e| ext.iter().any(|x| e == *x)) {
            if let Ok(mut f) = fs::File::open(&p) {
                let _ = f.read_to_end(out);
            }
        }
    }
}

/// English text and source code from the machine: the common licenses, C
/// headers and this workspace's Rust sources.
pub fn text(max: usize) -> Corpus {
    let limit = (max + 1) * PAGE;
    let mut bytes = Vec::new();
    collect_files(
        Path::new("/usr/share/common-licenses"),
        &[],
        &mut bytes,
        limit / 3,
    );
    let ws = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf();
    collect_files(&ws, &["rs", "md"], &mut bytes, 2 * limit / 3);
    collect_files(Path::new("/usr/include"), &["h"], &mut bytes, limit);
    Corpus {
        name: "text",
        pages: pages_of(&bytes, max),
    }
}

/// Synthetic heap pages: malloc chunk headers, pointers into a heap and a
/// library mapping, small integers, short strings and zero padding.
pub fn heap_synthetic(max: usize, seed: u64) -> Corpus {
    let mut rng = Rng(seed);
    let heap_base = 0x0000_55d4_a000_0000u64 + ((rng.next() & 0xfff) << 12);
    let lib_base = 0x0000_7f3c_1200_0000u64;
    let words = [
        "fd",
        "inode",
        "slot",
        "handle",
        "zspage",
        "page",
        "GFP_KERNEL",
        "lzo-rle",
        "/usr/lib",
        "errno",
    ];
    let mut pages = Vec::with_capacity(max);
    for _ in 0..max {
        let mut p = vec![0u8; PAGE];
        let mut i = 0;
        while i + 16 <= PAGE {
            // A chunk: size header, then a payload of a few words.
            let n_words = 2 + rng.below(12);
            let size = ((n_words * 8 + 8 + 15) & !15) as u64;
            p[i..i + 8].copy_from_slice(&(size | 1).to_le_bytes());
            i += 8;
            let kind = rng.below(5);
            for _ in 0..n_words {
                if i + 8 > PAGE {
                    break;
                }
                let v: u64 = match (kind, rng.below(6)) {
                    (0, _) => 0,
                    (1, 0..=3) => heap_base + (rng.below(1 << 16) as u64 & !15),
                    (1, _) => lib_base + (rng.below(1 << 20) as u64 & !7),
                    (2, _) => rng.below(300) as u64,
                    (3, _) => {
                        let w = words[rng.below(words.len())].as_bytes();
                        let mut b = [0u8; 8];
                        let k = w.len().min(8);
                        b[..k].copy_from_slice(&w[..k]);
                        u64::from_le_bytes(b)
                    }
                    (_, 0) => rng.next(),
                    (_, 1..=2) => heap_base + (rng.below(1 << 14) as u64 & !15),
                    _ => 0,
                };
                p[i..i + 8].copy_from_slice(&v.to_le_bytes());
                i += 8;
            }
            i = (i + 15) & !15;
        }
        pages.push(p);
    }
    Corpus {
        name: "heap-synthetic",
        pages,
    }
}

/// The running process's own `[heap]`, read through `/proc/self/mem`,
/// without same-filled pages (zram stores those without compressing).
pub fn heap_process(max: usize) -> Corpus {
    // Fill the heap with ordinary allocations first (each below the mmap
    // threshold, so they land in [heap]): strings, maps, linked nodes, vectors.
    struct Node {
        id: u64,
        name: String,
        next: Option<Box<Node>>,
        weights: Vec<u32>,
    }
    let mut keep: Vec<Box<dyn std::any::Any>> = Vec::new();
    let mut map = std::collections::BTreeMap::new();
    let mut hash = std::collections::HashMap::new();
    let mut list: Option<Box<Node>> = None;
    for i in 0..30_000u64 {
        map.insert(i * 7919 % 100_003, format!("value-{i}-{}", i * i));
        if i % 3 == 0 {
            hash.insert(
                format!("/proc/{}/status", i % 977),
                vec![i as u32; (i % 24) as usize],
            );
        }
        if i % 5 == 0 {
            list = Some(Box::new(Node {
                id: i,
                name: format!("node{i}"),
                next: list,
                weights: vec![1, 2, i as u32],
            }));
        }
        if i % 50 == 0 {
            keep.push(Box::new(vec![i; (i % 64) as usize]));
        }
    }
    let checksum = std::iter::successors(list.as_deref(), |n| n.next.as_deref())
        .map(|n| n.id + n.name.len() as u64 + n.weights.len() as u64)
        .sum::<u64>();
    keep.push(Box::new(checksum));
    keep.push(Box::new(map));
    keep.push(Box::new(hash));
    let mut pages = Vec::new();
    if let (Ok(maps), Ok(mem)) = (
        fs::read_to_string("/proc/self/maps"),
        fs::File::open("/proc/self/mem"),
    ) {
        // The main thread allocates from [heap]; a test thread from its own
        // malloc arena, an anonymous mapping: take the one holding `probe`.
        let probe = keep
            .last()
            .map(|b| &**b as *const dyn std::any::Any as *const u8 as u64)
            .unwrap_or(0);
        let holds_probe = |l: &str| {
            let range = l.split_whitespace().next().unwrap_or("");
            let (a, b) = range.split_once('-').unwrap_or(("0", "0"));
            let (a, b) = (
                u64::from_str_radix(a, 16).unwrap_or(0),
                u64::from_str_radix(b, 16).unwrap_or(0),
            );
            a <= probe && probe < b
        };
        for line in maps
            .lines()
            .filter(|l| l.ends_with("[heap]") || holds_probe(l))
        {
            let range = line.split_whitespace().next().unwrap_or("");
            let (a, b) = range.split_once('-').unwrap_or(("0", "0"));
            let (a, b) = (
                u64::from_str_radix(a, 16).unwrap_or(0),
                u64::from_str_radix(b, 16).unwrap_or(0),
            );
            let mut addr = a;
            while addr + PAGE as u64 <= b && pages.len() < max {
                let mut p = vec![0u8; PAGE];
                if mem.read_exact_at(&mut p, addr).is_ok() && !same_filled(&p) {
                    pages.push(p);
                }
                addr += PAGE as u64;
            }
        }
    }
    drop(keep);
    // Drop the list iteratively (a deep Box chain would recurse).
    while let Some(mut n) = list {
        list = n.next.take();
    }
    Corpus {
        name: "heap-process",
        pages,
    }
}

/// Mostly zero pages with a few islands of data (sparse structures, bss).
pub fn zero_heavy(max: usize, seed: u64) -> Corpus {
    let mut rng = Rng(seed);
    let mut pages = Vec::with_capacity(max);
    for k in 0..max {
        let mut p = vec![0u8; PAGE];
        let islands = 1 + rng.below(12);
        for _ in 0..islands {
            let len = 1 + rng.below(if k % 3 == 0 { 8 } else { 200 });
            let at = rng.below(PAGE - len);
            if rng.below(2) == 0 {
                rng.fill(&mut p[at..at + len]);
            } else {
                let b = rng.next() as u8 | 1;
                p[at..at + len].fill(b);
            }
        }
        pages.push(p);
    }
    Corpus {
        name: "zero-heavy",
        pages,
    }
}

/// fio-style partially compressible pages (`buffer_compress_percentage`,
/// `buffer_compress_chunk=512`): each 512-byte segment starts with random
/// bytes and is zero-filled for the rest.
pub fn fio(max: usize, seed: u64) -> Corpus {
    let mut rng = Rng(seed);
    let mut pages = Vec::with_capacity(max);
    let percentages = [10, 25, 50, 75, 90];
    for k in 0..max {
        let pct = percentages[k % percentages.len()];
        let mut p = vec![0u8; PAGE];
        for seg in p.chunks_mut(512) {
            let random = 512 * (100 - pct) / 100;
            rng.fill(&mut seg[..random]);
        }
        pages.push(p);
    }
    Corpus { name: "fio", pages }
}

/// Pages of the running executable (code, tables, strings).
pub fn executable(max: usize) -> Corpus {
    let bytes = fs::read("/proc/self/exe").unwrap_or_default();
    let pages = pages_of(&bytes, usize::MAX)
        .into_iter()
        .filter(|p| !same_filled(p))
        .take(max)
        .collect();
    Corpus {
        name: "executable",
        pages,
    }
}

/// Random pages (incompressible: stored as huge by zram).
pub fn random(max: usize, seed: u64) -> Corpus {
    let mut rng = Rng(seed);
    let pages = (0..max)
        .map(|_| {
            let mut p = vec![0u8; PAGE];
            rng.fill(&mut p);
            p
        })
        .collect();
    Corpus {
        name: "random",
        pages,
    }
}

/// zram's same-filled check (one repeated machine word).
pub fn same_filled(p: &[u8]) -> bool {
    let w = &p[..8];
    p.chunks_exact(8).all(|c| c == w)
}
