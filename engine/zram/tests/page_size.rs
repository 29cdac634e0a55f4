//! zram on kernels with 16 and 64 KiB pages (`KernelModel::with_page_size`):
//! a slot holds one such page, same-filled detection looks at all of it,
//! huge pages follow that page size's huge_class_size, mm_stat counts in
//! those pages; and, checked against the real kernels (Debian's arm64-16k
//! 6.12 and a ppc64el 64 KiB kernel, `scripts/vm pages`), the same corpus
//! gives the kernel's mm_stat per backend (fixtures/page-size/).

use zmem_codec::Params;
use zmem_device::BlockDevice;
use zmem_kernel::KernelModel;
use zmem_zram::Zram;

fn dev(page: usize, algo: &str, pages: u64) -> Zram {
    let kernel = KernelModel::parse("6.12")
        .unwrap()
        .with_page_size(page)
        .unwrap();
    Zram::builder()
        .kernel(kernel)
        .algorithm(algo, Params::default())
        .disksize(pages * page as u64)
        .build()
        .unwrap()
}

fn text(n: usize, seed: u64) -> Vec<u8> {
    let words = ["slot ", "zspage ", "handle ", "page\n", "class "];
    let mut x = seed | 1;
    let mut p = Vec::with_capacity(n + 8);
    while p.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p.extend_from_slice(words[(x % 5) as usize].as_bytes());
    }
    p.truncate(n);
    p
}

#[test]
fn a_16k_device_stores_16k_pages() {
    let d = dev(16384, "lz4", 8);
    assert_eq!((d.page_size(), d.disksize()), (16384, 8 * 16384));
    // Same-filled over the whole 16 KiB: a page whose first 4 KiB are one
    // word but whose rest is not is compressed, not same-filled.
    let mut not_same = vec![0u8; 16384];
    not_same[8000] = 1;
    d.write_at(0, &vec![0u8; 16384]).unwrap();
    d.write_at(16384, &not_same).unwrap();
    d.write_at(2 * 16384, &text(16384, 3)).unwrap();
    let random: Vec<u8> = text(16384, 9)
        .iter()
        .enumerate()
        .map(|(i, b)| b ^ (i * 131 % 251) as u8 ^ (i >> 3) as u8)
        .collect();
    d.write_at(3 * 16384, &random).unwrap();
    let mm = d.mm_stat();
    assert_eq!(mm.orig_data_size, 4 * 16384);
    assert_eq!(mm.same_pages, 1);
    assert_eq!(mm.mem_used_total % 16384, 0, "whole 16 KiB pages");
    for (i, want) in [vec![0u8; 16384], not_same, text(16384, 3), random]
        .iter()
        .enumerate()
    {
        let mut back = vec![0u8; 16384];
        d.read_at(i as u64 * 16384, &mut back).unwrap();
        assert!(&back == want, "page {i}");
    }
    // A 4 KiB write inside a 16 KiB page: read-modify-write of the page.
    d.write_at(2 * 16384 + 4096, &[7u8; 4096]).unwrap();
    let mut back = vec![0u8; 16384];
    d.read_at(2 * 16384, &mut back).unwrap();
    let mut want = text(16384, 3);
    want[4096..8192].fill(7);
    assert_eq!(back, want);
    assert_eq!(d.mm_stat().orig_data_size, 4 * 16384);
}

#[test]
fn huge_pages_follow_the_page_size() {
    // Bytes that do not compress: stored raw, one whole 64 KiB page each.
    let d = dev(65536, "lzo-rle", 4);
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let noise: Vec<u8> = (0..65536)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    d.write_at(0, &noise).unwrap();
    let mm = d.mm_stat();
    assert_eq!((mm.huge_pages, mm.compr_data_size), (1, 65536));
    assert_eq!(mm.mem_used_total, 65536);
    assert_eq!(
        d.attr_read("mm_stat").unwrap().split_whitespace().next(),
        Some("65536")
    );
}

#[test]
fn lz4m_is_refused_on_a_16k_kernel() {
    let kernel = KernelModel::default().with_page_size(16384).unwrap();
    let e = Zram::builder()
        .kernel(kernel)
        .algorithm("lz4m", Params::default())
        .disksize(1 << 20)
        .build()
        .unwrap_err();
    assert!(e.message.contains("4 KiB-page format"), "{}", e.message);
}

// ---- The real kernels' figures (fixtures/page-size/README.md) ----

use std::io::Read;
use std::path::{Path, PathBuf};

use zmem_kernel::{KernelVersion, MmStat};

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/page-size")
}

/// One fixture file: the kernel (version, page size), the input, the lines.
struct Fixture {
    file: String,
    version: KernelVersion,
    page: usize,
    input: String,
    /// (config, fields) of each non-comment line.
    lines: Vec<(String, Vec<String>)>,
}

fn header<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.strip_prefix("# ")?.strip_prefix(key)?.strip_prefix(' '))
}

fn fixture(path: &Path) -> Fixture {
    let file = path.file_name().unwrap().to_string_lossy().to_string();
    let text = std::fs::read_to_string(path).expect(&file);
    let kernel = header(&text, "kernel").unwrap_or_else(|| panic!("{file}: no '# kernel'"));
    let version = KernelVersion::parse(kernel.split_whitespace().next().unwrap())
        .unwrap_or_else(|| panic!("{file}: kernel {kernel}"));
    let page = header(&text, "page_size")
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("{file}: no '# page_size'"));
    let input = header(&text, "pages")
        .and_then(|p| p.split(':').next())
        .unwrap_or_else(|| panic!("{file}: no '# pages'"))
        .to_string();
    let lines = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let mut f = l.split_whitespace().map(str::to_string);
            (f.next().unwrap(), f.collect())
        })
        .collect();
    Fixture {
        file,
        version,
        page,
        input,
        lines,
    }
}

/// The input's bytes, zero-padded to whole pages of `page` bytes.
fn input_bytes(name: &str, page: usize) -> Vec<u8> {
    let path = match name {
        "kernel-pages.bin.gz" => Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../codec/tests/fixtures/kernel-pages.bin.gz"),
        other => fixture_dir().join(other),
    };
    let mut data = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&path).expect(name))
        .read_to_end(&mut data)
        .expect("gunzip");
    data.resize(data.len().next_multiple_of(page), 0);
    data
}

/// `ALGO[:key=value,...]` as the fixtures write a configuration.
fn config(c: &str) -> (String, Params) {
    let (algo, args) = c.split_once(':').unwrap_or((c, ""));
    let mut params = Params::default();
    for kv in args.split(',').filter(|a| !a.is_empty()) {
        match kv.split_once('=') {
            Some(("level", v)) => params.level = Some(v.parse().expect(kv)),
            _ => panic!("{c}: unknown parameter {kv}"),
        }
    }
    (algo.to_string(), params)
}

/// An engine device as the kernel of `f` (its version and page size), big
/// enough for `bytes` plus the 1 MiB the recording adds to disksize.
fn engine(f: &Fixture, c: &str, bytes: usize) -> Zram {
    let kernel = KernelModel::new(f.version)
        .unwrap()
        .with_page_size(f.page)
        .unwrap();
    let (algo, params) = config(c);
    Zram::builder()
        .kernel(kernel)
        .algorithm(algo, params)
        .disksize(bytes as u64 + (1 << 20))
        .build()
        .unwrap_or_else(|e| panic!("{}: {c}: {}", f.file, e.message))
}

fn fixtures(prefix: &str) -> Vec<Fixture> {
    let mut v: Vec<Fixture> = std::fs::read_dir(fixture_dir())
        .expect("fixtures/page-size")
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with(prefix) && n.ends_with(".txt")
        })
        .map(|p| fixture(&p))
        .collect();
    v.sort_by(|a, b| a.file.cmp(&b.file));
    v
}

/// Where the engine is known to differ from a kernel at pages above 4 KiB,
/// and why (a configuration, `ALGO` or `ALGO:key=value`; an `ALGO` entry
/// covers its levels too), with the tolerance of its mm_stat:
///
/// * deflate: the kernel's lib/zlib_deflate (`zlib_tr_tally` in
///   lib/zlib_deflate/deftree.c) ends a deflate block early when, at every
///   4096th symbol, fewer than half are matches and the block's estimated
///   output is under half its input (zlib's old TRUNCATE_BLOCK heuristic,
///   unconditional there); classic zlib 1.3.1, which the engine binds, has
///   no such check. A 4 KiB page never reaches it with a block worth
///   cutting, so 4 KiB pages are equal; larger pages are cut into other
///   blocks.
/// * zstd level 9 on 6.12's lib/zstd 1.5.2 at 64 KiB: 4 of 11 fixture pages
///   differ by a few bytes (lazy2 over a 2^16 window; libzstd 1.5.7's
///   hash-chain search differs from 1.5.2's there). Its default level 3 and
///   levels 1 are equal.
const KNOWN: [(&str, f64, &str); 2] = [
    (
        "deflate",
        0.05,
        "lib/zlib_deflate cuts blocks every 4096 symbols (zlib_tr_tally), zlib 1.3.1 does not",
    ),
    (
        "zstd:level=9",
        0.001,
        "lazy2 of lib/zstd 1.5.2 over a 64 KiB window differs from libzstd 1.5.7's",
    ),
];

/// The KNOWN entry of configuration `c` at pages of `page` bytes.
fn known(page: usize, c: &str) -> Option<&'static (&'static str, f64, &'static str)> {
    KNOWN
        .iter()
        .find(|k| page > 4096 && (c == k.0 || c.starts_with(&format!("{}:", k.0))))
}

fn tolerance(page: usize, algo: &str) -> f64 {
    known(page, algo).map_or(0.001, |k| k.1)
}

fn within(engine: u64, kernel: u64, tolerance: f64) -> bool {
    (engine as f64 - kernel as f64).abs() <= kernel as f64 * tolerance
}

#[test]
fn mm_stat_equals_the_kernels_at_4k_16k_and_64k() {
    let all = fixtures("mm_stat-");
    assert!(!all.is_empty(), "no mm_stat fixtures");
    let mut pages_seen = Vec::new();
    for f in &all {
        let data = input_bytes(&f.input, f.page);
        pages_seen.push(f.page);
        for (c, fields) in &f.lines {
            let want: Vec<u64> = fields.iter().map(|x| x.parse().unwrap()).collect();
            let d = engine(f, c, data.len());
            d.write_at(0, &data).unwrap();
            let m: MmStat = d.mm_stat();
            let what = format!("{} {c}: engine {m:?}, kernel {want:?}", f.file);
            assert_eq!(m.orig_data_size, want[0], "{what}");
            let t = tolerance(f.page, c);
            assert!(
                within(m.compr_data_size, want[1], t),
                "compr_data_size {what}"
            );
            assert!(
                within(m.mem_used_total, want[2], t),
                "mem_used_total {what}"
            );
            assert_eq!((m.same_pages, m.huge_pages), (want[3], want[4]), "{what}");
            println!(
                "{} {c}: compr_data_size {} / {}, mem_used_total {} / {}",
                f.file, m.compr_data_size, want[1], m.mem_used_total, want[2]
            );
        }
    }
    println!("page sizes checked: {pages_seen:?}");
}

/// The engine's per-page figure as the recording writes it: the growth of
/// compr_data_size, `S` (same-filled) or `H` (huge).
fn per_page(d: &Zram, data: &[u8], page: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut prev = d.mm_stat();
    for (i, p) in data.chunks(page).enumerate() {
        d.write_at((i * page) as u64, p).unwrap();
        let now = d.mm_stat();
        out.push(if now.same_pages > prev.same_pages {
            "S".to_string()
        } else if now.huge_pages > prev.huge_pages {
            "H".to_string()
        } else {
            (now.compr_data_size - prev.compr_data_size).to_string()
        });
        prev = now;
    }
    out
}

#[test]
fn every_page_compresses_to_the_kernels_length_at_16k_and_64k() {
    let all: Vec<Fixture> = fixtures("lengths-")
        .into_iter()
        .chain(fixtures("kernel-sizes-"))
        .collect();
    assert!(!all.is_empty(), "no per-page fixtures");
    for f in &all {
        let data = input_bytes(&f.input, f.page);
        for (c, want) in &f.lines {
            if let Some(k) = known(f.page, c) {
                // Checked in total by the mm_stat test where it has the
                // configuration; pages differ: KNOWN.
                println!("{} {c}: not compared page by page: {}", f.file, k.2);
                continue;
            }
            let d = engine(f, c, data.len());
            let got = per_page(&d, &data, f.page);
            assert_eq!(got.len(), want.len(), "{} {c}: pages", f.file);
            let differ: Vec<usize> = (0..got.len()).filter(|&i| got[i] != want[i]).collect();
            assert!(
                differ.is_empty(),
                "{} {c}: {} of {} pages differ, first {:?}: engine {:?} kernel {:?}",
                f.file,
                differ.len(),
                got.len(),
                differ.first(),
                differ.first().map(|&i| &got[i]),
                differ.first().map(|&i| &want[i]),
            );
        }
    }
}
