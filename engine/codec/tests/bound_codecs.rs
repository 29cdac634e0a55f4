//! The four C-library-bound codecs: parameters, dictionaries, formats, pool.

mod common;

use std::sync::Arc;

use common::{compress, sample_pages, Rng};
use zmem_codec::{find, CodecError, Params, StreamPool, MAX_COMPRESSED, PAGE_SIZE};

const BOUND: [&str; 4] = ["lz4", "lz4hc", "zstd", "deflate"];

fn err_of(name: &str, p: Params) -> String {
    match find(name).unwrap().new_stream(&p) {
        Ok(_) => panic!("{name}: {p:?} was accepted"),
        Err(e @ CodecError::InvalidParam { .. }) => e.to_string(),
        Err(e) => panic!("{name}: {p:?} gave {e:?}, expected InvalidParam"),
    }
}

#[test]
fn every_level_in_range_round_trips_and_out_of_range_names_the_range() {
    let cases: [(&str, &[i32], &[i32], &str); 4] = [
        ("lz4", &[1, 2, 8, 65537], &[0, -1, 65538], "1..=65537"),
        ("lz4hc", &[1, 4, 9, 10, 12], &[0, 13, -3], "1..=12"),
        ("zstd", &[-5, -1, 0, 1, 3, 19, 22], &[23, -200000], "..=22"),
        ("deflate", &[-1, 0, 1, 6, 9], &[10, -2], "-1..=9"),
    ];
    for (name, good, bad, range) in cases {
        for &l in good {
            let mut s = find(name)
                .unwrap()
                .new_stream(&Params::with_level(l))
                .unwrap();
            for (kind, page) in sample_pages() {
                let c = compress(s.as_mut(), &page);
                let mut out = vec![0u8; PAGE_SIZE];
                s.decompress(&c, &mut out).unwrap();
                assert_eq!(out, page, "{name} level {l} {kind}");
            }
        }
        for &l in bad {
            let e = err_of(name, Params::with_level(l));
            assert!(
                e.contains(&format!("level={l}")) && e.contains(range),
                "{name}: {e}"
            );
        }
    }
}

#[test]
fn levels_change_the_output() {
    let text = sample_pages()
        .into_iter()
        .find(|(k, _)| *k == "text")
        .unwrap()
        .1;
    let size = |name: &str, l: i32| {
        let mut s = find(name)
            .unwrap()
            .new_stream(&Params::with_level(l))
            .unwrap();
        compress(s.as_mut(), &text).len()
    };
    assert!(
        size("lz4", 1) < size("lz4", 64),
        "lz4 acceleration has no effect"
    );
    assert!(
        size("lz4hc", 12) < size("lz4", 1),
        "lz4hc is no better than lz4"
    );
    assert!(
        size("zstd", 19) < size("zstd", -50),
        "zstd level has no effect"
    );
    assert!(
        size("deflate", 9) < size("deflate", 0),
        "deflate level has no effect"
    );
}

#[test]
fn wrong_parameters_are_rejected() {
    let dict = Params::default().dict_bytes(b"some dictionary".to_vec());
    let e = err_of("deflate", dict.clone());
    assert!(
        e.contains("no dictionary") && e.contains("`zmem codecs` lists"),
        "{e}"
    );
    for name in ["lz4", "lz4hc", "zstd"] {
        let p = Params {
            deflate_winbits: Some(-11),
            ..Params::default()
        };
        assert!(err_of(name, p).contains("deflate.winbits"), "{name}");
        let e = err_of(name, Params::default().dict_bytes(Vec::new()));
        assert!(e.contains("empty"), "{name}: {e}");
    }
    for w in [0, 8, -8, 16, -16, 100] {
        let e = err_of(
            "deflate",
            Params {
                deflate_winbits: Some(w),
                ..Params::default()
            },
        );
        assert!(e.contains("-15..=-9") && e.contains("9..=15"), "{e}");
    }
}

/// A page that repeats a 200-byte record every 3000 bytes: a match beyond a
/// 2 KiB window.
fn far_match_page() -> Vec<u8> {
    let mut r = Rng(77);
    let mut p: Vec<u8> = (0..PAGE_SIZE).map(|_| r.next() as u8).collect();
    let rec: Vec<u8> = p[100..1100].to_vec();
    p[3050..4050].copy_from_slice(&rec);
    p
}

#[test]
fn deflate_window_bits_are_applied() {
    let page = far_match_page();
    let mut small = find("deflate")
        .unwrap()
        .new_stream(&Params::default())
        .unwrap();
    let mut wide = find("deflate")
        .unwrap()
        .new_stream(&Params {
            deflate_winbits: Some(-15),
            ..Params::default()
        })
        .unwrap();
    let cs = compress(small.as_mut(), &page);
    let cw = compress(wide.as_mut(), &page);
    // Only the 32 KiB window sees the 1000-byte repeat 2950 bytes back.
    assert!(
        cw.len() + 500 < cs.len(),
        "window 15: {} bytes, window 11: {} bytes",
        cw.len(),
        cs.len()
    );
    // Raw deflate: both decode with either stream (the decoder takes any window).
    let mut out = vec![0u8; PAGE_SIZE];
    small.decompress(&cw, &mut out).unwrap();
    assert_eq!(out, page);
    // The kernel's -11 stream is plain raw deflate: no zlib header (0x78 ..).
    let mut z = find("deflate")
        .unwrap()
        .new_stream(&Params {
            deflate_winbits: Some(11),
            ..Params::default()
        })
        .unwrap();
    let cz = compress(z.as_mut(), &page);
    assert_eq!(cz[0] & 0x0f, 8, "positive winbits gives a zlib header");
    assert_eq!(cz[0] >> 4, 11 - 8, "zlib header CINFO is window bits - 8");
    z.decompress(&cz, &mut out).unwrap();
    assert_eq!(out, page);
    assert!(
        small.decompress(&cz, &mut out).is_err(),
        "raw decoder accepted a zlib stream"
    );
}

#[test]
fn zstd_writes_standard_frames_with_content_size() {
    let mut s = find("zstd")
        .unwrap()
        .new_stream(&Params::default())
        .unwrap();
    for (kind, page) in sample_pages() {
        let c = compress(s.as_mut(), &page);
        assert_eq!(&c[..4], &[0x28, 0xb5, 0x2f, 0xfd], "{kind}: zstd magic");
        let fhd = c[4];
        assert_ne!(
            fhd >> 6,
            0,
            "{kind}: frame content size flag set (a page is > 255 bytes)"
        );
        assert_eq!(fhd & 0x04, 0, "{kind}: no checksum");
    }
}

#[test]
fn dictionaries_are_used_and_required() {
    let mut r = Rng(99);
    let page: Vec<u8> = (0..PAGE_SIZE).map(|_| r.next() as u8).collect();
    // The page itself (plus noise) as the dictionary: only a codec that uses
    // the dictionary can compress a random page.
    let mut dict = vec![0u8; 2048];
    dict.extend_from_slice(&page);
    let dict = Arc::new(dict);
    for name in ["lz4", "lz4hc", "zstd"] {
        let p = Params {
            dict: Some(dict.clone()),
            ..Params::default()
        };
        let mut s = find(name).unwrap().new_stream(&p).unwrap();
        for round in 0..3 {
            let c = compress(s.as_mut(), &page);
            assert!(
                c.len() < 200,
                "{name} round {round}: {} bytes with the page as dictionary",
                c.len()
            );
            let mut out = vec![0u8; PAGE_SIZE];
            s.decompress(&c, &mut out).unwrap();
            assert_eq!(out, page, "{name} round {round}");
            // Other pages in between must not change what the next page references.
            let other = sample_pages()[2].1.clone();
            let c2 = compress(s.as_mut(), &other);
            s.decompress(&c2, &mut out).unwrap();
            assert_eq!(out, other, "{name} round {round}: other page");
        }
        let c = compress(s.as_mut(), &page);
        let mut plain = find(name).unwrap().new_stream(&Params::default()).unwrap();
        let mut out = vec![0u8; PAGE_SIZE];
        let r = plain.decompress(&c, &mut out);
        assert!(
            r.is_err() || out != page,
            "{name}: decoded a dictionary stream without the dictionary"
        );
    }
}

#[test]
fn stream_pool_serves_threads() {
    for name in BOUND {
        let pool = Arc::new(StreamPool::new(find(name).unwrap(), Params::default()).unwrap());
        let handles: Vec<_> = (0..4)
            .map(|t| {
                let pool = pool.clone();
                std::thread::spawn(move || {
                    let pages = sample_pages();
                    let mut dst = vec![0u8; MAX_COMPRESSED];
                    let mut out = vec![0u8; PAGE_SIZE];
                    for i in 0..200 {
                        let page = &pages[(i + t) % pages.len()].1;
                        let n = pool.compress(page, &mut dst).unwrap();
                        pool.decompress(&dst[..n], &mut out).unwrap();
                        assert_eq!(&out, page);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    }
}

#[test]
fn over_long_input_is_an_error() {
    for name in BOUND {
        let mut s = find(name).unwrap().new_stream(&Params::default()).unwrap();
        for (kind, page) in sample_pages() {
            let mut c = compress(s.as_mut(), &page);
            c.extend_from_slice(&[0x55, 0x00, 0x13]);
            let mut out = vec![0u8; PAGE_SIZE];
            assert!(
                s.decompress(&c, &mut out).is_err(),
                "{name} {kind}: trailing bytes accepted"
            );
        }
    }
}

#[test]
fn metadata_is_complete() {
    for name in BOUND {
        let b = find(name).unwrap();
        assert!(b.in_kernel());
        assert!(!b.description().contains("not implemented"));
        assert!(b.params().iter().any(|p| p.key == "level"), "{name}");
        let has_dict = b.params().iter().any(|p| p.key == "dict");
        assert_eq!(has_dict, name != "deflate", "{name}");
    }
}
