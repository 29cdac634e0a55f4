//! Synthetic corpora: pages with a known character, made deterministically
//! from a seed, for comparisons that anyone can repeat.
//!
//! | kind | what each page is |
//! |---|---|
//! | `text` | English-like prose, log lines and JSON records |
//! | `zero-mixed` | a mix like real anonymous memory: zero pages, other same-filled pages, text, small-integer tables, pointer arrays and random bytes |
//! | `fio-style` | fio's `buffer_compress_percentage=N`: in every 512-byte chunk (fio's default `buffer_compress_chunk`) the first (100−N)% are random bytes and the rest zeros |
//! | `zram-perf` | 1024 32-bit words `(rand() & 0xffff) + i` (i = word index), the pattern of zram performance tests |
//! | `random` | random bytes (incompressible; zram stores them as huge pages) |

use std::fmt;
use std::io::Write;
use std::path::Path;
use std::str::FromStr;

use anyhow::{bail, Context, Result};
use zmem_codec::PAGE_SIZE;

use crate::sidecar::{self, Sidecar};

/// A small, fast, deterministic generator (SplitMix64). Not for cryptography.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
    pub fn fill(&mut self, buf: &mut [u8]) {
        for c in buf.chunks_mut(8) {
            let v = self.next_u64().to_le_bytes();
            c.copy_from_slice(&v[..c.len()]);
        }
    }
}

/// The kinds of synthetic corpus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Text,
    ZeroMixed,
    /// fio's `buffer_compress_percentage` (0..=100).
    FioStyle {
        compress_percentage: u8,
    },
    ZramPerf,
    Random,
}

/// Names accepted on the command line.
pub const KIND_NAMES: &str = "text, zero-mixed, fio-style, zram-perf, random";

impl FromStr for Kind {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s {
            "text" => Kind::Text,
            "zero-mixed" => Kind::ZeroMixed,
            "fio-style" | "fio" => Kind::FioStyle {
                compress_percentage: 50,
            },
            "zram-perf" => Kind::ZramPerf,
            "random" => Kind::Random,
            _ => bail!("unknown corpus kind {s:?}; kinds: {KIND_NAMES}"),
        })
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kind::Text => f.write_str("text"),
            Kind::ZeroMixed => f.write_str("zero-mixed"),
            Kind::FioStyle {
                compress_percentage,
            } => write!(f, "fio-style:{compress_percentage}"),
            Kind::ZramPerf => f.write_str("zram-perf"),
            Kind::Random => f.write_str("random"),
        }
    }
}

const WORDS: &[&str] = &[
    "the",
    "of",
    "and",
    "to",
    "in",
    "a",
    "is",
    "that",
    "for",
    "it",
    "as",
    "was",
    "with",
    "be",
    "by",
    "on",
    "not",
    "he",
    "this",
    "are",
    "or",
    "his",
    "from",
    "at",
    "which",
    "but",
    "have",
    "an",
    "had",
    "they",
    "you",
    "were",
    "memory",
    "page",
    "swap",
    "kernel",
    "device",
    "compressed",
    "process",
    "request",
    "server",
    "value",
    "system",
    "buffer",
    "cache",
    "session",
    "user",
    "file",
    "network",
    "thread",
    "result",
    "error",
    "window",
    "table",
    "index",
    "record",
    "stream",
    "latency",
    "number",
    "string",
    "object",
    "function",
    "return",
    "content",
    "list",
    "because",
    "between",
    "through",
    "during",
    "without",
    "against",
    "another",
    "however",
    "should",
    "would",
    "could",
    "little",
    "people",
    "between",
    "important",
    "information",
    "application",
    "performance",
    "available",
];

fn text_page(rng: &mut Rng, page: &mut [u8]) {
    let mut out = Vec::with_capacity(PAGE_SIZE + 256);
    while out.len() < PAGE_SIZE {
        match rng.below(10) {
            // A log line.
            0 => {
                let _ = writeln!(
                    out,
                    "2026-11-{:02}T{:02}:{:02}:{:02}.{:03}Z INFO worker[{}] {} {} in {} ms",
                    1 + rng.below(28),
                    rng.below(24),
                    rng.below(60),
                    rng.below(60),
                    rng.below(1000),
                    rng.below(64),
                    WORDS[rng.below(WORDS.len() as u64) as usize],
                    WORDS[rng.below(WORDS.len() as u64) as usize],
                    rng.below(5000)
                );
            }
            // A JSON record.
            1 => {
                let _ = write!(
                    out,
                    "{{\"id\":{},\"name\":\"{}_{}\",\"score\":{}.{},\"tags\":[\"{}\",\"{}\"]}},",
                    rng.below(1_000_000),
                    WORDS[rng.below(WORDS.len() as u64) as usize],
                    rng.below(100),
                    rng.below(100),
                    rng.below(100),
                    WORDS[rng.below(WORDS.len() as u64) as usize],
                    WORDS[rng.below(WORDS.len() as u64) as usize]
                );
            }
            // A sentence.
            _ => {
                let n = 6 + rng.below(14);
                for i in 0..n {
                    let w = WORDS[rng.below(WORDS.len() as u64) as usize];
                    if i == 0 {
                        let mut c = w.chars();
                        if let Some(f) = c.next() {
                            out.extend(f.to_uppercase().to_string().bytes());
                            out.extend(c.as_str().bytes());
                        }
                    } else {
                        out.push(b' ');
                        out.extend(w.bytes());
                    }
                }
                out.extend_from_slice(if rng.below(4) == 0 { b".\n" } else { b". " });
            }
        }
    }
    page.copy_from_slice(&out[..PAGE_SIZE]);
}

fn fio_page(rng: &mut Rng, page: &mut [u8], pct: u8) {
    const CHUNK: usize = 512;
    let random = CHUNK * (100 - pct.min(100) as usize) / 100;
    for c in page.chunks_mut(CHUNK) {
        rng.fill(&mut c[..random]);
        c[random..].fill(0);
    }
}

fn zram_perf_page(rng: &mut Rng, page: &mut [u8]) {
    for (i, w) in page.chunks_exact_mut(4).enumerate() {
        let v = ((rng.next_u64() as u32) & 0xffff).wrapping_add(i as u32);
        w.copy_from_slice(&v.to_ne_bytes());
    }
}

fn zero_mixed_page(rng: &mut Rng, page: &mut [u8]) {
    match rng.below(100) {
        0..=39 => page.fill(0),
        40..=49 => zmem_codec::fill_page(page, rng.next_u64() & 0xff_ffff),
        50..=69 => text_page(rng, page),
        // A table of small integers (counters, lengths, enum values).
        70..=82 => {
            for w in page.chunks_exact_mut(4) {
                let v = if rng.below(3) == 0 {
                    0
                } else {
                    rng.below(300) as u32
                };
                w.copy_from_slice(&v.to_le_bytes());
            }
        }
        // An array of heap pointers: the same high bits, varying low bits.
        83..=92 => {
            let base = 0x5555_0000_0000u64 + (rng.below(1 << 20) << 12);
            for w in page.chunks_exact_mut(8) {
                let v = if rng.below(5) == 0 {
                    0
                } else {
                    base + (rng.below(1 << 16) << 4)
                };
                w.copy_from_slice(&v.to_le_bytes());
            }
        }
        _ => rng.fill(page),
    }
}

/// Fill `pages` (a whole number of 4 KiB pages) with `kind`, deterministically from `seed`.
pub fn fill(kind: Kind, seed: u64, pages: &mut [u8]) {
    let mut rng = Rng::new(seed ^ 0x7a6d_656d_5f6c_6162);
    for page in pages.chunks_exact_mut(PAGE_SIZE) {
        match kind {
            Kind::Text => text_page(&mut rng, page),
            Kind::ZeroMixed => zero_mixed_page(&mut rng, page),
            Kind::FioStyle {
                compress_percentage,
            } => fio_page(&mut rng, page, compress_percentage),
            Kind::ZramPerf => zram_perf_page(&mut rng, page),
            Kind::Random => rng.fill(page),
        }
    }
}

/// `n` pages of `kind`.
pub fn generate(kind: Kind, seed: u64, n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n * PAGE_SIZE];
    fill(kind, seed, &mut v);
    v
}

/// Write a corpus of `size` bytes (rounded up to whole pages, at least one)
/// and its sidecar, as [`crate::capture::to_file`] writes captures: an
/// existing file that is not a zmem corpus is refused unless `force`.
pub fn write_corpus(kind: Kind, size: u64, seed: u64, out: &Path, force: bool) -> Result<Sidecar> {
    if let Kind::FioStyle {
        compress_percentage,
    } = kind
    {
        if compress_percentage > 100 {
            bail!("--compress-percentage must be 0..=100, got {compress_percentage}");
        }
    }
    let pages = size.div_ceil(PAGE_SIZE as u64).max(1);
    crate::capture::to_file(out, force, |w| {
        // Generate in chunks of 1024 pages with seeds derived per chunk, so memory stays bounded.
        let mut same = 0u64;
        let mut done = 0u64;
        let mut chunk_no = 0u64;
        while done < pages {
            let n = (pages - done).min(1024) as usize;
            let buf = generate(
                kind,
                seed.wrapping_add(chunk_no.wrapping_mul(0x1000_0000_01b3)),
                n,
            );
            same += sidecar::count_same_filled(&buf);
            w.write_all(&buf)
                .with_context(|| format!("writing {}", out.display()))?;
            done += n as u64;
            chunk_no += 1;
        }
        Ok(Sidecar {
            source: "synthetic".into(),
            kind: Some(kind.to_string()),
            seed: Some(seed),
            pages,
            same_filled_pages: same,
            created_unix: sidecar::now_unix(),
            ..Default::default()
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zlib_like_ratio(buf: &[u8]) -> f64 {
        // Count distinct 4-byte shingles per page as a cheap compressibility proxy.
        let mut total = 0usize;
        for p in buf.chunks_exact(PAGE_SIZE) {
            let mut v: Vec<u32> = p
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
                .collect();
            v.sort_unstable();
            v.dedup();
            total += v.len();
        }
        (buf.len() / 4) as f64 / total as f64
    }

    #[test]
    fn deterministic_and_seed_dependent() {
        for k in [
            Kind::Text,
            Kind::ZeroMixed,
            Kind::FioStyle {
                compress_percentage: 60,
            },
            Kind::ZramPerf,
            Kind::Random,
        ] {
            let a = generate(k, 7, 16);
            assert_eq!(a, generate(k, 7, 16), "{k}");
            assert_ne!(a, generate(k, 8, 16), "{k}");
            assert_eq!(a.len(), 16 * PAGE_SIZE);
        }
    }

    #[test]
    fn kinds_have_their_character() {
        let z = generate(Kind::ZeroMixed, 1, 400);
        let same = sidecar::count_same_filled(&z);
        assert!(
            (120..=260).contains(&same),
            "zero-mixed same-filled {same}/400"
        );
        let t = generate(Kind::Text, 1, 8);
        assert!(
            t.iter().all(|&b| b == b'\n' || (0x20..0x7f).contains(&b)),
            "text is printable"
        );
        let f = generate(
            Kind::FioStyle {
                compress_percentage: 75,
            },
            1,
            4,
        );
        for c in f.chunks(512) {
            assert!(
                c[128..].iter().all(|&b| b == 0),
                "fio 75%: last 384 bytes of each chunk are zero"
            );
            assert!(c[..128].iter().any(|&b| b != 0));
        }
        let p = generate(Kind::ZramPerf, 1, 1);
        for (i, w) in p.chunks_exact(4).enumerate() {
            let v = u32::from_ne_bytes(w.try_into().unwrap());
            assert!(v >= i as u32 && v <= i as u32 + 0xffff, "word {i} = {v}");
        }
        let r = generate(Kind::Random, 1, 8);
        assert_eq!(sidecar::count_same_filled(&r), 0);
        assert!(zlib_like_ratio(&r) < 1.01);
        assert!(zlib_like_ratio(&t) > 1.5);
    }

    #[test]
    fn parse_kinds() {
        assert_eq!("text".parse::<Kind>().unwrap(), Kind::Text);
        assert_eq!("zram-perf".parse::<Kind>().unwrap(), Kind::ZramPerf);
        let e = "nope".parse::<Kind>().unwrap_err().to_string();
        assert!(e.contains("zero-mixed"), "{e}");
    }

    #[test]
    fn write_corpus_rounds_to_pages_and_writes_sidecar() {
        let dir = std::env::temp_dir().join(format!("zmem-synth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("c.bin");
        let sc = write_corpus(Kind::ZeroMixed, 10_000, 3, &out, false).unwrap();
        assert_eq!(sc.pages, 3);
        assert_eq!(std::fs::metadata(&out).unwrap().len(), 3 * PAGE_SIZE as u64);
        let back = Sidecar::read_for(&out).unwrap().unwrap();
        assert_eq!(back, sc);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
