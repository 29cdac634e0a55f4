//! The engine as a real kernel's zram on fixed pages: what Debian's 6.1
//! kernel reported for generated corpora, recorded once in the VM lab
//! (`fixtures/kernel-mm_stat-6.1.txt` says by which command:
//! `scripts/vm check 6.1`'s kernel rows, or
//! `fixtures/record-kernel-mm-stat.sh 6.1`), against an engine device
//! behaving as 6.1 on the same pages: every mm_stat figure equal,
//! mem_used_total included (6.1's zsmalloc: chains of 4 pages, huge class
//! from 3257 bytes). lzo and lzo-rle only: the other codecs' bytes are the
//! codecs' own question.

use zmem_codec::{Params, PAGE_SIZE};
use zmem_corpus::Kind;
use zmem_device::BlockDevice;
use zmem_kernel::{KernelModel, MmStat};
use zmem_zram::Zram;

/// One fixture line: corpus (`KIND-SIZE`), algorithm, and the kernel's
/// orig_data_size, compr_data_size, mem_used_total, same and huge pages.
struct Recorded {
    kind: Kind,
    pages: usize,
    algo: String,
    stat: [u64; 5],
}

fn recorded(text: &str) -> Vec<Recorded> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(f.len(), 7, "{l}");
            let (kind, size) = f[0].rsplit_once('-').unwrap();
            let bytes = match size.strip_suffix('K') {
                Some(k) => k.parse::<usize>().unwrap() << 10,
                None => size.strip_suffix('M').unwrap().parse::<usize>().unwrap() << 20,
            };
            let n = |i: usize| f[i].parse::<u64>().unwrap();
            Recorded {
                kind: kind.parse().unwrap(),
                pages: bytes / PAGE_SIZE,
                algo: f[1].to_string(),
                stat: [n(2), n(3), n(4), n(5), n(6)],
            }
        })
        .collect()
}

fn engine(r: &Recorded, version: &str) -> [u64; 5] {
    let dev = Zram::builder()
        .kernel(KernelModel::parse(version).unwrap())
        .algorithm(&r.algo, Params::default())
        .disksize((r.pages * PAGE_SIZE) as u64)
        .build()
        .unwrap();
    // `zmem corpus gen KIND --seed 1` of at most 1024 pages.
    let pages = zmem_corpus::generate(r.kind, 1, r.pages);
    for (i, p) in pages.chunks(PAGE_SIZE).enumerate() {
        dev.write_page(i, p).unwrap();
    }
    let m = MmStat::parse(&dev.attr_read("mm_stat").unwrap()).unwrap();
    [
        m.orig_data_size,
        m.compr_data_size,
        m.mem_used_total,
        m.same_pages,
        m.huge_pages,
    ]
}

#[test]
fn engine_as_6_1_equals_debians_6_1() {
    let fixture = recorded(include_str!("fixtures/kernel-mm_stat-6.1.txt"));
    assert!(fixture.len() >= 2);
    let mut newest_differs = false;
    for r in &fixture {
        assert_eq!(engine(r, "6.1"), r.stat, "{:?} {}", r.kind, r.algo);
        newest_differs |= engine(r, "7.3")[2] != r.stat[2];
    }
    // The fixture can tell the versions apart: 7.3's zsmalloc stores the
    // same objects in a different number of pages.
    assert!(newest_differs);
}
