//! Pages of 16 and 64 KiB (kernels with PAGE_SHIFT 14 and 16): every backend
//! a kernel has compresses them whole into the 2 x PAGE_SIZE zcomp buffer and
//! back; the 4 KiB-page formats (lz4m, wkdm) are refused with a reason; a
//! stream made for one page size takes its pages and no other length.

use zmem_codec::{all, find, max_compressed, CodecError, Params, PAGE_SIZES};

/// A page of `n` bytes of one kind: text-like, random, zero, or half of each.
fn page(kind: &str, n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let words = [&b"zram "[..], b"page ", b"slot ", b"zspage ", b"handle\n"];
    match kind {
        "text" => {
            let mut p = Vec::with_capacity(n + 8);
            while p.len() < n {
                p.extend_from_slice(words[(rnd() % 5) as usize]);
            }
            p.truncate(n);
            p
        }
        "random" => (0..n).map(|_| rnd() as u8).collect(),
        "zero" => vec![0; n],
        _ => {
            let mut p = page("text", n, seed);
            for b in &mut p[n / 2..] {
                *b = rnd() as u8;
            }
            p
        }
    }
}

fn at(page_size: usize) -> Params {
    Params {
        page_size: Some(page_size),
        ..Params::default()
    }
}

#[test]
fn every_kernel_backend_round_trips_16k_and_64k_pages() {
    for backend in all().iter().filter(|b| b.in_kernel()) {
        let name = backend.name();
        for &size in &PAGE_SIZES[1..] {
            let mut s = backend.new_stream(&at(size)).unwrap();
            for (i, kind) in ["text", "random", "zero", "mixed", "text"]
                .iter()
                .enumerate()
            {
                let p = page(kind, size, i as u64);
                let mut dst = vec![0u8; max_compressed(size)];
                let n = s
                    .compress(&p, &mut dst)
                    .unwrap_or_else(|e| panic!("{name} {size} {kind}: {e}"));
                let mut back = vec![0u8; size];
                s.decompress(&dst[..n], &mut back).unwrap();
                assert!(back == p, "{name} {size} {kind}: round trip");
                if *kind == "text" {
                    assert!(n < size / 2, "{name} {size}: text page gave {n}");
                }
            }
        }
    }
}

#[test]
fn lz4m_and_wkdm_are_4k_formats() {
    for name in ["lz4m", "wkdm"] {
        for &size in &PAGE_SIZES[1..] {
            match find(name).unwrap().new_stream(&at(size)) {
                Err(e @ CodecError::InvalidParam { .. }) => {
                    let m = e.to_string();
                    assert!(m.contains("4 KiB-page format"), "{m}");
                    assert!(m.contains(&format!("{} KiB pages", size / 1024)), "{m}");
                }
                other => panic!("{name} at {size}: {:?}", other.map(|_| ())),
            }
        }
        // A 4 KiB stream refuses a larger input rather than reading part of it.
        let mut s = find(name).unwrap().new_stream(&at(4096)).unwrap();
        let mut dst = vec![0u8; max_compressed(16384)];
        assert!(s.compress(&page("text", 16384, 1), &mut dst).is_err());
    }
}

#[test]
fn a_page_is_4_16_or_64_kib() {
    let mut s = find("lz4").unwrap().new_stream(&at(16384)).unwrap();
    let mut dst = vec![0u8; max_compressed(65536)];
    for bad in [8192, 16383, 131072] {
        assert!(s.compress(&vec![1u8; bad], &mut dst).is_err(), "{bad}");
    }
}

#[test]
fn sw842_stream_output_does_not_depend_on_its_table_size() {
    // A stream sized for 64 KiB pages writes the kernel's format for each
    // page as a fresh compressor for that page does.
    let mut s = find("842").unwrap().new_stream(&at(65536)).unwrap();
    for (i, kind) in ["text", "mixed", "random", "text"].iter().enumerate() {
        let p = page(kind, 65536, 10 + i as u64);
        let mut a = vec![0u8; max_compressed(65536)];
        let mut b = vec![0u8; max_compressed(65536)];
        let n = s.compress(&p, &mut a).unwrap();
        let m = zmem_codec::backend::sw842::compress_any(&p, &mut b)
            .unwrap()
            .unwrap();
        assert_eq!(a[..n], b[..m], "{kind}");
    }
}
