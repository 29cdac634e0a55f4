//! zmem's own page codecs (842, lz4m, wkdm) side by side with C lz4 (liblz4
//! through lzzzz, acceleration 1, as the kernel's default) on the same
//! deterministic heap-like pages.
//!
//! Run: `cargo bench -p zmem-codec --bench own_codecs`
//!
//! First a summary table: ratio, and compress / decompress speed as the best
//! of many short rounds in which the codecs take turns (so that load from
//! other processes on a shared machine hits them alike). Then criterion's
//! own measurement of each. Set `OWN_CODECS_SUMMARY_ONLY=1` for the table
//! alone. Each criterion iteration compresses (or decompresses) all pages;
//! throughput is in uncompressed bytes. Results: docs/own-codecs.md.

use criterion::{black_box, criterion_group, Criterion, Throughput};
use std::time::{Duration, Instant};
use zmem_codec::{Params, Stream, MAX_COMPRESSED, PAGE_SIZE};

const PAGES: usize = 64;

/// xorshift64*.
struct Rng(u64);
impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
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
    "struct",
    "request",
    "connection",
    "buffer",
    "timeout",
];

/// One heap-like page: malloc'd structs (size header, two pointers into a
/// nearby region, an id, small fields, zero padding), arrays of small
/// integers, short NUL-padded strings, zero runs, doubles and vtable-like
/// pointers with small tags.
fn heap_page(seed: u64) -> Vec<u8> {
    let mut r = Rng::new(seed);
    let base = 0x0000_55d4_a3c0_0000u64 + (r.below(1 << 8) << 20);
    let mut p: Vec<u8> = Vec::with_capacity(PAGE_SIZE + 256);
    let mut id = r.below(1000);
    while p.len() < PAGE_SIZE {
        match r.below(10) {
            0..=3 => {
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
                let mut v = r.below(50) as u32;
                for _ in 0..4 + r.below(24) {
                    v += r.below(8) as u32;
                    p.extend_from_slice(&v.to_le_bytes());
                }
            }
            6 => {
                for _ in 0..1 + r.below(5) {
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
                    p.extend_from_slice(&((r.below(100_000) as f64) / 16.0).to_le_bytes());
                }
            }
            _ => {
                let vt = 0x0000_55d4_a2a0_0000u64 + (r.below(64) << 3);
                for _ in 0..1 + r.below(4) {
                    p.extend_from_slice(&vt.to_le_bytes());
                    p.extend_from_slice(&r.below(16).to_le_bytes());
                }
            }
        }
    }
    p.truncate(PAGE_SIZE);
    p
}

/// A codec under test: zmem's through the registry, or C lz4 directly.
enum Codec {
    Own(Box<dyn Stream>),
    Lz4C,
}

impl Codec {
    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> usize {
        match self {
            Codec::Own(s) => s.compress(src, dst).expect("compress"),
            Codec::Lz4C => lzzzz::lz4::compress(src, dst, 1).expect("lz4 compress"),
        }
    }
    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) {
        match self {
            Codec::Own(s) => s.decompress(src, dst).expect("decompress"),
            Codec::Lz4C => {
                let n = lzzzz::lz4::decompress(src, dst).expect("lz4 decompress");
                assert_eq!(n, dst.len());
            }
        }
    }
}

fn codecs() -> Vec<(&'static str, Codec)> {
    let mut v = vec![("lz4 (C, acc 1)", Codec::Lz4C)];
    for name in ["842", "lz4m", "wkdm"] {
        let s = zmem_codec::find(name)
            .unwrap()
            .new_stream(&Params::default())
            .unwrap();
        v.push((name, Codec::Own(s)));
    }
    v
}

fn pages() -> Vec<Vec<u8>> {
    (0..PAGES as u64).map(heap_page).collect()
}

/// Compress every page with every codec, checking the round trip.
fn compress_all(pages: &[Vec<u8>]) -> Vec<(&'static str, Vec<Vec<u8>>)> {
    let mut compressed = Vec::new();
    for (name, mut codec) in codecs() {
        let mut outs = Vec::new();
        for p in pages {
            let mut dst = vec![0u8; MAX_COMPRESSED];
            let n = codec.compress(p, &mut dst);
            dst.truncate(n);
            let mut back = vec![0u8; PAGE_SIZE];
            codec.decompress(&dst, &mut back);
            assert!(&back == p, "{name}: round trip differs");
            outs.push(dst);
        }
        compressed.push((name, outs));
    }
    compressed
}

/// Pages of this process's own `[heap]` after it builds typical data
/// structures (strings, a hash map, a B-tree, a linked list of boxed structs,
/// doubles), read through /proc/self/mem; same-filled pages are left out, as
/// zram stores them without a codec. `None` where /proc is not readable.
fn process_heap_pages(max: usize) -> Option<Vec<Vec<u8>>> {
    use std::collections::{BTreeMap, HashMap};
    use std::io::{Read, Seek, SeekFrom};
    let mut r = Rng::new(42);
    let words: Vec<String> = (0..20_000)
        .map(|i| {
            format!(
                "{}-{}",
                WORDS[r.below(WORDS.len() as u64) as usize],
                i % 977
            )
        })
        .collect();
    let mut counts: HashMap<&str, u32> = HashMap::new();
    for w in &words {
        *counts.entry(w.as_str()).or_default() += 1;
    }
    let tree: BTreeMap<u64, Vec<u32>> = (0..3000)
        .map(|i| (r.next() % 1_000_000, (0..(i % 7) as u32).collect()))
        .collect();
    struct Node {
        id: u64,
        val: u32,
        next: Option<Box<Node>>,
    }
    let mut list: Option<Box<Node>> = None;
    for i in 0..30_000 {
        list = Some(Box::new(Node {
            id: i,
            val: (i % 100) as u32,
            next: list,
        }));
    }
    let floats: Vec<f64> = (0..5000).map(|i| i as f64 / 7.0).collect();

    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let line = maps.lines().find(|l| l.ends_with("[heap]"))?;
    let range = line.split_whitespace().next()?;
    let (a, b) = range.split_once('-')?;
    let (start, end) = (
        u64::from_str_radix(a, 16).ok()?,
        u64::from_str_radix(b, 16).ok()?,
    );
    let mut mem = std::fs::File::open("/proc/self/mem").ok()?;
    let mut all = Vec::new();
    let mut addr = start;
    while addr + PAGE_SIZE as u64 <= end {
        let mut page = vec![0u8; PAGE_SIZE];
        mem.seek(SeekFrom::Start(addr)).ok()?;
        if mem.read_exact(&mut page).is_ok() && zmem_codec::same_filled(&page).is_none() {
            all.push(page);
        }
        addr += PAGE_SIZE as u64;
    }
    black_box((&counts, &tree, &floats));
    let mut n = 0;
    let mut l = list.as_deref();
    while let Some(node) = l {
        n += node.id + node.val as u64;
        l = node.next.as_deref();
    }
    black_box(n);
    // Evenly spaced sample.
    let step = all.len().div_ceil(max).max(1);
    Some(all.into_iter().step_by(step).collect())
}

/// Ratio and best-of-rounds speeds, codecs interleaved round by round.
fn summary(label: &str, pages: &[Vec<u8>], rounds: usize) {
    let total = (pages.len() * PAGE_SIZE) as f64;
    let compressed = compress_all(pages);
    let mut codecs = codecs();
    let mut best_c = vec![f64::MAX; codecs.len()];
    let mut best_d = vec![f64::MAX; codecs.len()];
    let mut dst = vec![0u8; MAX_COMPRESSED];
    let mut back = vec![0u8; PAGE_SIZE];
    for _ in 0..rounds {
        for (i, (_, codec)) in codecs.iter_mut().enumerate() {
            let t = Instant::now();
            for p in pages {
                black_box(codec.compress(black_box(p), &mut dst));
            }
            best_c[i] = best_c[i].min(t.elapsed().as_secs_f64());
            let t = Instant::now();
            for s in &compressed[i].1 {
                codec.decompress(black_box(s), &mut back);
            }
            best_d[i] = best_d[i].min(t.elapsed().as_secs_f64());
        }
    }
    println!(
        "{label}: {} x {PAGE_SIZE} B; best of {rounds} interleaved rounds",
        pages.len()
    );
    println!(
        "{:16} {:>7} {:>12} {:>12} {:>9}",
        "codec", "ratio", "comp MB/s", "decomp MB/s", "C vs lz4"
    );
    let lz4_c = total / best_c[0];
    for (i, (name, outs)) in compressed.iter().enumerate() {
        let size: usize = outs.iter().map(|o| o.len()).sum();
        let c = total / best_c[i];
        println!(
            "{name:16} {:>7.3} {:>12.0} {:>12.0} {:>8.2}x",
            total / size as f64,
            c / 1e6,
            total / best_d[i] / 1e6,
            c / lz4_c
        );
    }
}

fn bench(c: &mut Criterion) {
    let pages = pages();
    let total = (PAGES * PAGE_SIZE) as u64;
    let compressed = compress_all(&pages);

    let mut g = c.benchmark_group("compress");
    g.throughput(Throughput::Bytes(total));
    for (name, mut codec) in codecs() {
        let mut dst = vec![0u8; MAX_COMPRESSED];
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut n = 0;
                for p in &pages {
                    n += codec.compress(black_box(p), &mut dst);
                }
                n
            })
        });
    }
    g.finish();

    let mut g = c.benchmark_group("decompress");
    g.throughput(Throughput::Bytes(total));
    for ((name, mut codec), (_, outs)) in codecs().into_iter().zip(&compressed) {
        let mut back = vec![0u8; PAGE_SIZE];
        g.bench_function(name, |b| {
            b.iter(|| {
                for s in outs {
                    codec.decompress(black_box(s), &mut back);
                }
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = bench
}

fn main() {
    summary("heap-like pages", &pages(), 200);
    match process_heap_pages(256) {
        Some(p) => summary("this process's [heap] pages (same-filled left out)", &p, 50),
        None => println!("this process's [heap]: /proc/self/mem not readable, skipped"),
    }
    if std::env::var_os("OWN_CODECS_SUMMARY_ONLY").is_some() {
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
