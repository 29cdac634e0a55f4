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
