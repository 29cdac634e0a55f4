//! Corpora: files of raw 4 KiB pages, and the built-in default corpus.
//!
//! A corpus file is what `dd if=/dev/zram0 of=pages.bin` or `pv` produce: raw
//! pages back to back, no header. The default corpus is generated on the fly,
//! deterministically from a seed, as named [`Section`]s (text, heap-like,
//! sparse, same-filled, random), so runs on different machines compare. A
//! later section source (pages captured from this machine's processes) is one
//! more `Section` pushed by [`default_sections`]'s caller.

use std::path::Path;

use anyhow::{bail, Context, Result};
use zmem_codec::PAGE_SIZE;

/// The seed of the built-in default corpus.
pub const DEFAULT_SEED: u64 = 0x7a6d_656d_2d63_6f72; // "zmem-cor"

/// A named run of pages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Corpus {
    /// The file path, or `default` for the built-in corpus.
    pub name: String,
    /// Where the pages came from (file path, or the built-in sections).
    pub source: String,
    data: Vec<u8>,
    /// The page the corpus is cut into: 4096, or the 16/64 KiB page of
    /// another kernel ([`Corpus::with_page_size`]).
    page: usize,
}

impl Corpus {
    /// A corpus from page bytes; `data.len()` must be a multiple of [`PAGE_SIZE`].
    pub fn from_bytes(
        name: impl Into<String>,
        source: impl Into<String>,
        data: Vec<u8>,
    ) -> Result<Self> {
        let name = name.into();
        check_len(&name, data.len() as u64)?;
        Ok(Corpus {
            name,
            source: source.into(),
            data,
            page: PAGE_SIZE,
        })
    }

    /// Load a file of raw 4 KiB pages. An unreadable file, an empty one or a
    /// length that is not a multiple of 4096 is an error naming the file; so
    /// is anything but a regular file or block device (a FIFO or `/dev/zero`
    /// would block or never end) and a corpus larger than the memory that is
    /// available to hold it. See [`open_checked`].
    pub fn load(path: &Path) -> Result<Self> {
        use std::io::Read;
        let shown = path.display().to_string();
        let input = open_checked(path)?;
        let cap = load_cap();
        if input.len > cap {
            bail!(
                "corpus {shown}: {} bytes is more than the {} bytes of memory available to                  load it; capture a smaller sample (zmem capture --max)",
                input.len,
                cap
            );
        }
        let mut data = Vec::with_capacity(input.len as usize);
        input
            .file
            .take(input.len)
            .read_to_end(&mut data)
            .with_context(|| format!("corpus {shown}: cannot read"))?;
        check_len(&shown, data.len() as u64)?;
        Ok(Corpus {
            name: shown.clone(),
            source: shown,
            data,
            page: PAGE_SIZE,
        })
    }

    /// The same bytes cut into pages of `page_size` bytes (4096, 16384 or
    /// 65536: a kernel with 16 or 64 KiB pages stores 4 or 16 of the
    /// corpus's 4 KiB pages per slot, as `dd` of the file into its zram
    /// does). A last partial page is filled with zeros, as a short write
    /// leaves it.
    pub fn with_page_size(mut self, page_size: usize) -> Result<Self> {
        if !zmem_codec::PAGE_SIZES.contains(&page_size) {
            bail!("page size {page_size}: zmem models 4096, 16384 and 65536-byte pages");
        }
        let whole = self.data.len().next_multiple_of(page_size);
        self.data.resize(whole, 0);
        self.page = page_size;
        Ok(self)
    }

    /// The page size the corpus is cut into (4096 unless
    /// [`with_page_size`](Self::with_page_size)).
    pub fn page_size(&self) -> usize {
        self.page
    }

    /// Number of pages.
    pub fn page_count(&self) -> usize {
        self.data.len() / self.page
    }

    /// Page `i`.
    pub fn page(&self, i: usize) -> &[u8] {
        &self.data[i * self.page..(i + 1) * self.page]
    }

    /// Every page in order.
    pub fn pages(&self) -> std::slice::ChunksExact<'_, u8> {
        self.data.chunks_exact(self.page)
    }

    /// The raw bytes (to write the corpus to a file).
    pub fn bytes(&self) -> &[u8] {
        &self.data
    }
}

/// Opens a corpus file for reading after checking it: a regular file or a
/// block device ([`zmem_files::input`]), not empty, a whole number of 4 KiB
/// pages. Every corpus command (`corpus info`, `bench`, `recommend`, `dict
/// train`, …) goes through here, so they accept and refuse the same files.
pub fn open_checked(path: &Path) -> Result<zmem_files::input::Input> {
    let shown = path.display().to_string();
    let input = zmem_files::input::open_input("corpus", path)?;
    check_len(&shown, input.len)?;
    Ok(input)
}

/// The most bytes a corpus may have to be loaded whole: the memory
/// available now (MemAvailable) less a quarter for everything else, or
/// 4 GiB where /proc/meminfo cannot be read.
fn load_cap() -> u64 {
    let avail_kb = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        m.lines()
            .find(|l| l.starts_with("MemAvailable:"))
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
    });
    avail_kb.map_or(4 << 30, |kb| kb * 1024 / 4 * 3)
}

fn check_len(name: &str, len: u64) -> Result<()> {
    if len == 0 {
        bail!("corpus {name}: is empty, expected raw 4 KiB pages");
    }
    if !len.is_multiple_of(PAGE_SIZE as u64) {
        bail!(
            "corpus {name}: length {len} bytes is not a multiple of {PAGE_SIZE} \
             ({} whole pages and {} bytes left over)",
            len / PAGE_SIZE as u64,
            len % PAGE_SIZE as u64
        );
    }
    Ok(())
}

/// Load every file; the first bad one is an error naming it.
pub fn load_all(paths: &[impl AsRef<Path>]) -> Result<Vec<Corpus>> {
    paths.iter().map(|p| Corpus::load(p.as_ref())).collect()
}

/// One named part of the default corpus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub name: String,
    /// What the pages are like, one line.
    pub what: String,
    pub pages: Vec<u8>,
}

impl Section {
    pub fn page_count(&self) -> usize {
        self.pages.len() / PAGE_SIZE
    }
}

/// A small, fast, deterministic generator (SplitMix64). Not for cryptography.
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

const WORDS: &[&str] = &[
    "the", "of", "and", "memory", "page", "swap", "kernel", "process", "compress", "device", "is",
    "to", "in", "a", "that", "with", "for", "zram", "slot", "handle", "write", "read", "return",
    "error", "value", "struct", "file", "system", "user", "time", "size", "data",
];

/// English-like prose, log lines and JSON records.
fn text_page(r: &mut Rng) -> Vec<u8> {
    let mut p = Vec::with_capacity(PAGE_SIZE + 128);
    while p.len() < PAGE_SIZE {
        match r.below(3) {
            0 => {
                // A sentence.
                let n = 6 + r.below(14);
                for i in 0..n {
                    let w = WORDS[r.below(WORDS.len() as u64) as usize];
                    if i == 0 {
                        p.extend(w.bytes().enumerate().map(|(j, b)| {
                            if j == 0 {
                                b.to_ascii_uppercase()
                            } else {
                                b
                            }
                        }));
                    } else {
                        p.push(b' ');
                        p.extend_from_slice(w.as_bytes());
                    }
                }
                p.extend_from_slice(b". ");
            }
            1 => {
                let line = format!(
                    "Nov 22 03:{:02}:{:02} host zmem[{}]: {} {} {}\n",
                    r.below(60),
                    r.below(60),
                    1000 + r.below(9000),
                    WORDS[r.below(WORDS.len() as u64) as usize],
                    WORDS[r.below(WORDS.len() as u64) as usize],
                    r.below(100_000)
                );
                p.extend_from_slice(line.as_bytes());
            }
            _ => {
                let rec = format!(
                    "{{\"id\":{},\"name\":\"{}\",\"size\":{},\"ok\":{}}}\n",
                    r.below(1 << 20),
                    WORDS[r.below(WORDS.len() as u64) as usize],
                    r.below(1 << 16),
                    r.below(2) == 1
                );
                p.extend_from_slice(rec.as_bytes());
            }
        }
    }
    p.truncate(PAGE_SIZE);
    p
}

/// A heap-like page: malloc chunks with size headers, pointers into a few
/// regions, small integers, short strings, doubles and zero padding.
fn heap_page(r: &mut Rng) -> Vec<u8> {
    let mut p = vec![0u8; PAGE_SIZE];
    let heap_base = 0x0000_5555_5555_0000u64 + (r.below(256) << 16);
    let mmap_base = 0x0000_7f3a_1c00_0000u64 + (r.below(4096) << 12);
    let mut off = 0usize;
    while off + 16 <= PAGE_SIZE {
        let words = 2 + r.below(14) as usize; // chunk of 16..128 bytes
        let chunk = (words * 8).min(PAGE_SIZE - off);
        p[off..off + 8].copy_from_slice(&((chunk as u64) | 1).to_le_bytes());
        let kind = r.below(6);
        let mut o = off + 8;
        while o + 8 <= off + chunk {
            let v: u64 = match kind {
                0 => heap_base + (r.below(1 << 14) << 4),
                1 => mmap_base + (r.below(1 << 12) << 3),
                2 => r.below(1000),
                3 => (r.below(1 << 20) as f64 * 0.25).to_bits(),
                4 => {
                    let w = WORDS[r.below(WORDS.len() as u64) as usize].as_bytes();
                    let mut b = [0u8; 8];
                    b[..w.len().min(8)].copy_from_slice(&w[..w.len().min(8)]);
                    u64::from_le_bytes(b)
                }
                _ => 0,
            };
            p[o..o + 8].copy_from_slice(&v.to_le_bytes());
            o += 8;
        }
        off += chunk;
    }
    p
}

/// Mostly zero with a few scattered words: the "zeros with noise" pages.
fn sparse_page(r: &mut Rng) -> Vec<u8> {
    let mut p = vec![0u8; PAGE_SIZE];
    for _ in 0..4 + r.below(60) {
        let o = (r.below((PAGE_SIZE / 8) as u64) * 8) as usize;
        let v = match r.below(3) {
            0 => r.below(256),
            1 => 0x0000_7ffc_0000_0008u64 | (r.below(1 << 24) << 3),
            _ => r.next(),
        };
        p[o..o + 8].copy_from_slice(&v.to_le_bytes());
    }
    p
}

/// Same-filled: mostly zero pages, some one repeated non-zero word.
fn same_filled_page(r: &mut Rng, i: usize) -> Vec<u8> {
    let word: u64 = if i % 4 == 3 {
        [0xffff_ffff_ffff_ffff, 0x0101_0101_0101_0101, r.next()][i % 3]
    } else {
        0
    };
    let mut p = vec![0u8; PAGE_SIZE];
    zmem_codec::fill_page(&mut p, word);
    p
}

fn random_page(r: &mut Rng) -> Vec<u8> {
    let mut p = vec![0u8; PAGE_SIZE];
    for c in p.chunks_exact_mut(8) {
        c.copy_from_slice(&r.next().to_le_bytes());
    }
    p
}

fn section(name: &str, what: &str, n: usize, mut make: impl FnMut(usize) -> Vec<u8>) -> Section {
    let mut pages = Vec::with_capacity(n * PAGE_SIZE);
    for i in 0..n {
        let p = make(i);
        debug_assert_eq!(p.len(), PAGE_SIZE);
        pages.extend_from_slice(&p);
    }
    Section {
        name: name.into(),
        what: what.into(),
        pages,
    }
}

/// The synthetic sections of the default corpus, from `seed` (1024 pages, 4 MiB).
pub fn default_sections(seed: u64) -> Vec<Section> {
    let mut r = Rng(seed);
    vec![
        section(
            "text",
            "English-like prose, log lines and JSON records",
            320,
            |_| text_page(&mut r),
        ),
        section(
            "heap",
            "malloc chunks: pointers, small integers, doubles, short strings",
            384,
            |_| heap_page(&mut r),
        ),
        section(
            "sparse",
            "zero pages with 4..64 scattered words",
            128,
            |_| sparse_page(&mut r),
        ),
        section(
            "same-filled",
            "zero pages and pages of one repeated word (zram stores only the word)",
            160,
            |i| same_filled_page(&mut r, i),
        ),
        section(
            "random",
            "random bytes (incompressible: zram stores them huge)",
            32,
            |_| random_page(&mut r),
        ),
    ]
}

/// Join sections into one corpus named `default`, pages interleaved so that
/// consecutive pages differ as in real memory. `source` lists the sections.
pub fn from_sections(sections: &[Section]) -> Corpus {
    let total: usize = sections.iter().map(Section::page_count).sum();
    let mut data = Vec::with_capacity(total * PAGE_SIZE);
    let mut next = vec![0usize; sections.len()];
    // Round-robin weighted by size: take from each section in proportion.
    while data.len() < total * PAGE_SIZE {
        for (i, s) in sections.iter().enumerate() {
            let share = (s.page_count() * 16).div_ceil(total.max(1)).max(1);
            for _ in 0..share {
                if next[i] < s.page_count() {
                    data.extend_from_slice(
                        &s.pages[next[i] * PAGE_SIZE..(next[i] + 1) * PAGE_SIZE],
                    );
                    next[i] += 1;
                }
            }
        }
    }
    let source = format!(
        "built-in: {}",
        sections
            .iter()
            .map(|s| format!("{} {}", s.page_count(), s.name))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Corpus {
        name: "default".into(),
        source,
        data,
        page: PAGE_SIZE,
    }
}

/// The built-in default corpus: [`default_sections`] of [`DEFAULT_SEED`].
pub fn default_corpus() -> Corpus {
    from_sections(&default_sections(DEFAULT_SEED))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("zmem-measure-corpus-{}-{name}", std::process::id()))
    }

    #[test]
    fn default_corpus_is_deterministic_and_mixed() {
        let a = default_corpus();
        let b = default_corpus();
        assert_eq!(a, b);
        assert_eq!(a.page_count(), 1024);
        let c = from_sections(&default_sections(1));
        assert_ne!(a.bytes(), c.bytes(), "the seed changes the pages");
        let same = a
            .pages()
            .filter(|p| zmem_codec::same_filled(p).is_some())
            .count();
        assert!(same >= 160, "same-filled pages: {same}");
        let zero = a.pages().filter(|p| p.iter().all(|&b| b == 0)).count();
        assert!(zero > 64 && zero < same, "zero pages: {zero}");
        let text = a.pages().filter(|p| p.iter().all(|b| b.is_ascii())).count();
        assert!(text >= 320, "text pages: {text}");
        // Interleaved: the first 32 pages are not all from one section.
        let first_text = a
            .pages()
            .take(32)
            .filter(|p| {
                p.iter()
                    .all(|b| b.is_ascii_graphic() || *b == b' ' || *b == b'\n')
            })
            .count();
        assert!(first_text > 0 && first_text < 32, "{first_text}");
    }

    #[test]
    fn load_checks_length_and_names_the_file() {
        let p = tmp("ok");
        let mut data = vec![1u8; 3 * PAGE_SIZE];
        data[PAGE_SIZE] = 2;
        std::fs::write(&p, &data).unwrap();
        let c = Corpus::load(&p).unwrap();
        assert_eq!(c.page_count(), 3);
        assert_eq!(c.page(1)[0], 2);
        assert_eq!(c.name, p.display().to_string());

        std::fs::write(&p, vec![0u8; PAGE_SIZE + 10]).unwrap();
        let e = format!("{:#}", Corpus::load(&p).unwrap_err());
        assert!(
            e.contains(&p.display().to_string()) && e.contains("not a multiple of 4096"),
            "{e}"
        );

        std::fs::write(&p, b"").unwrap();
        let e = format!("{:#}", Corpus::load(&p).unwrap_err());
        assert!(
            e.contains(&p.display().to_string()) && e.contains("empty"),
            "{e}"
        );
        std::fs::remove_file(&p).unwrap();

        let e = format!("{:#}", Corpus::load(&p).unwrap_err());
        assert!(
            e.contains(&p.display().to_string()) && e.contains("cannot read"),
            "{e}"
        );
        let e = format!("{:#}", Corpus::load(&std::env::temp_dir()).unwrap_err());
        assert!(e.contains("directory"), "{e}");
    }
}
