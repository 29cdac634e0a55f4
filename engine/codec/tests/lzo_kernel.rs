//! Fidelity with the kernel: our lzo / lzo-rle compressed length of every page
//! equals what the kernel's zram stores for it.
//!
//! A hot-added kernel zram device is set to `lzo`, then to `lzo-rle`. Pages are
//! written one at a time with O_DIRECT at successive offsets; after each page
//! the growth of `compr_data_size` in mm_stat is the kernel's compressed
//! length. Same-filled pages add 0 (and count in `same_pages`); pages that
//! compress to `huge_class_size` or more are stored huge and add PAGE_SIZE
//! (and count in `huge_pages`). Needs root and zram; skipped otherwise.

mod lzo_support;

use std::fs::OpenOptions;
use std::os::unix::fs::{FileExt, OpenOptionsExt};

use lzo_support::{Corpus, PAGE};
use zmem_codec::{Params, MAX_COMPRESSED};
use zmem_host::HotDevice;

/// A page-aligned buffer for O_DIRECT.
struct Aligned {
    buf: Vec<u8>,
    off: usize,
}
impl Aligned {
    fn new() -> Self {
        let buf = vec![0u8; 2 * PAGE];
        let off = (PAGE - buf.as_ptr() as usize % PAGE) % PAGE;
        Aligned { buf, off }
    }
    fn page(&mut self) -> &mut [u8] {
        &mut self.buf[self.off..self.off + PAGE]
    }
}

#[derive(Default)]
struct Tally {
    compared: usize,
    exact: usize,
    huge_both: usize,
    same_filled: usize,
    mismatches: Vec<String>,
    max_exact_len: usize,
    min_huge_ours: usize,
}

fn corpora() -> Vec<Corpus> {
    vec![
        lzo_support::text(600),
        lzo_support::heap_process(400),
        lzo_support::heap_synthetic(600, 1),
        lzo_support::zero_heavy(500, 2),
        lzo_support::fio(400, 3),
        lzo_support::executable(400),
        lzo_support::random(100, 4),
        edges(),
        Corpus {
            name: "same-filled",
            pages: [0u64, 0xffff_ffff_ffff_ffff, 0x0000_55d4_a000_1230]
                .iter()
                .map(|w| w.to_ne_bytes().repeat(PAGE / 8))
                .collect(),
        },
    ]
}

#[test]
fn lzo_and_lzo_rle_lengths_match_kernel() {
    if let Err(e) = HotDevice::available() {
        zmem_files::testutil::skip(&format!("SKIP lzo_and_lzo_rle_lengths_match_kernel: {e}"));
        return;
    }
    let corpora = corpora();
    let total: usize = corpora.iter().map(|c| c.pages.len()).sum();
    assert!(total > 1000, "corpora too small: {total} pages");
    // Every corpus that must be present is (the process heap can be small).
    for c in &corpora {
        assert!(
            !c.pages.is_empty() || c.name == "heap-process",
            "corpus {} is empty",
            c.name
        );
    }

    let mut overall = (0usize, 0usize);
    for algo in ["lzo", "lzo-rle"] {
        let dev = match HotDevice::with_config(algo, (total * PAGE + (1 << 20)) as u64) {
            Ok(d) => d,
            Err(e) => {
                zmem_files::testutil::skip(&format!(
                    "SKIP lzo_and_lzo_rle_lengths_match_kernel: {e}"
                ));
                return;
            }
        };
        let file = OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_DIRECT)
            .open(dev.dev_path())
            .unwrap_or_else(|e| panic!("open {} O_DIRECT: {e}", dev.dev_path().display()));
        let mut stream = zmem_codec::find(algo)
            .unwrap()
            .new_stream(&Params::default())
            .unwrap();
        let mut dst = vec![0u8; MAX_COMPRESSED];
        let mut buf = Aligned::new();
        let mut slot = 0u64;
        let mut before = dev.mm_stat().unwrap();
        for c in &corpora {
            let mut t = Tally {
                min_huge_ours: usize::MAX,
                ..Tally::default()
            };
            for (i, p) in c.pages.iter().enumerate() {
                buf.page().copy_from_slice(p);
                file.write_all_at(buf.page(), slot * PAGE as u64).unwrap();
                slot += 1;
                let after = dev.mm_stat().unwrap();
                let grew = (after.compr_data_size - before.compr_data_size) as usize;
                let same = after.same_pages - before.same_pages;
                let huge = after.huge_pages - before.huge_pages;
                before = after;
                if same == 1 {
                    assert!(
                        zmem_codec::same_filled(p).is_some(),
                        "{algo} {} page {i}: kernel says same-filled",
                        c.name
                    );
                    assert_eq!(grew, 0);
                    t.same_filled += 1;
                    continue;
                }
                assert!(
                    zmem_codec::same_filled(p).is_none(),
                    "{algo} {} page {i}: same-filled not seen",
                    c.name
                );
                let ours = stream.compress(p, &mut dst).unwrap();
                let mut back = vec![0u8; PAGE];
                stream.decompress(&dst[..ours], &mut back).unwrap();
                assert!(back == *p, "{algo} {} page {i}: round trip", c.name);
                t.compared += 1;
                if huge == 1 {
                    assert_eq!(grew, PAGE, "{algo}: a huge page adds PAGE_SIZE");
                    t.min_huge_ours = t.min_huge_ours.min(ours);
                    // The kernel's length is at least huge_class_size; ours must be too.
                    if ours >= HUGE_CLASS_SIZE {
                        t.exact += 1;
                        t.huge_both += 1;
                    } else {
                        t.mismatches
                            .push(format!("page {i}: kernel huge, ours {ours}"));
                    }
                } else if grew == ours {
                    t.exact += 1;
                    t.max_exact_len = t.max_exact_len.max(ours);
                } else {
                    t.mismatches
                        .push(format!("page {i}: kernel {grew}, ours {ours}"));
                }
            }
            println!(
                "{algo:8} {:15} pages {:4}  same-filled {:4}  compared {:4}  exact {:4} (huge both {:3}, max exact len {:4}, min huge ours {})",
                c.name,
                c.pages.len(),
                t.same_filled,
                t.compared,
                t.exact,
                t.huge_both,
                t.max_exact_len,
                if t.min_huge_ours == usize::MAX { "-".to_string() } else { t.min_huge_ours.to_string() },
            );
            for m in t.mismatches.iter().take(10) {
                println!("  MISMATCH {algo} {}: {m}", c.name);
            }
            overall.0 += t.compared;
            overall.1 += t.exact;
        }
    }
    let (compared, exact) = overall;
    println!("lzo fidelity: {exact} of {compared} compressed pages match the kernel exactly");
    assert!(compared > 1000);
    assert!(
        exact * 1000 >= compared * 999,
        "only {exact} of {compared} pages match the kernel"
    );
}

/// Pages aimed at the encoder's corners: zero runs of 3..=5 and around the
/// 2051-byte RLE limit, runs and matches ending near `ip_end` (20 bytes before
/// the end), 1..=3 literals right after a run or a match, repeats at short
/// distances.
fn edges() -> Corpus {
    let mut rng = lzo_support::Rng(77);
    let mut pages = Vec::new();
    // Background without zero bytes; every third page compressible word
    // salad, the others random (so short runs are seen by both paths).
    let words: [&[u8]; 8] = [
        b"slot ",
        b"handle ",
        b"zspage ",
        b"idle ",
        b"huge ",
        b"mm_stat ",
        b"class ",
        b"page ",
    ];
    let mut k = 0usize;
    let mut noise = |rng: &mut lzo_support::Rng| {
        k += 1;
        let mut p = Vec::with_capacity(PAGE + 16);
        if !k.is_multiple_of(3) {
            while p.len() < PAGE {
                p.extend_from_slice(words[rng.below(words.len())]);
                p.push(b'0' + rng.below(10) as u8);
            }
        } else {
            while p.len() < PAGE {
                p.push(rng.next() as u8 | 1);
            }
        }
        p.truncate(PAGE);
        p
    };
    for run in [3, 4, 5, 7, 8, 9, 2047, 2050, 2051, 2052, 2055, 2100, 4000] {
        for start in [0, 1, 5, 6, 100] {
            let mut p = noise(&mut rng);
            let end = (start + run).min(PAGE);
            p[start..end].fill(0);
            pages.push(p);
        }
        for gap_to_end in [0, 1, 3, 17, 19, 20, 21, 24, 28, 40] {
            let mut p = noise(&mut rng);
            let end = PAGE - gap_to_end;
            p[end.saturating_sub(run)..end].fill(0);
            pages.push(p);
        }
    }
    for lits in 1..=3 {
        for run in [4, 10, 300] {
            let mut p = noise(&mut rng);
            let mut at = 50;
            while at + run + lits + 8 < PAGE {
                p[at..at + run].fill(0);
                at += run + lits;
            }
            pages.push(p);
        }
    }
    for period in [1, 2, 3, 4, 5, 7, 8, 9, 16, 33, 100, 2048, 2049] {
        for tail_noise in [0, 5, 19, 20, 21, 30] {
            let mut p = noise(&mut rng);
            let n = PAGE - tail_noise;
            let seed_bytes = p[..period].to_vec();
            for i in period..n {
                p[i] = seed_bytes[i % period];
            }
            pages.push(p);
        }
    }
    Corpus {
        name: "edges",
        pages,
    }
}

/// zsmalloc's `huge_class_size` for 4 KiB pages on the reference kernel
/// (6.18): compressed lengths at or above it are stored as huge pages.
const HUGE_CLASS_SIZE: usize = 3625;
