//! `842`: the kernel's software 842 format (`lib/842`, "sw842"), as zram's
//! `backend_842.c` uses it. The compressor makes the same choices as the
//! kernel's `sw842_compress` (same templates, same fifo indices, same repeat
//! and zero ops), so its output is the kernel's byte for byte; the decompressor
//! accepts the kernel's streams and checks the CRC-32 trailer.
//!
//! Format summary (full description in docs/formats/842.md): MSB-first
//! bitstream of 5-bit opcodes over 8-byte blocks; templates 0x00..=0x19 mix raw
//! 2/4/8-byte data with indices into 2-, 4- and 8-byte fifos of recent output;
//! 0x1B repeats the last block, 0x1C writes 8 zeros, 0x1D carries a short
//! tail, 0x1E ends the stream; then `crc32_be(0, data)` in 32 bits, zero bits
//! to the byte, zero bytes to a multiple of 8.

mod compress;
mod crc;
mod decompress;
mod format;
#[cfg(test)]
pub(crate) mod test_pages;

use zmem_kernel::KernelSpan;

use super::{check_page, reject_params};
use crate::{AlgorithmInfo, Backend, CodecError, Params, Stream};

pub use crc::crc32_be;
pub use format::compress_bound;

const NAME: &str = "842";

/// What is known about `842` (the registry's facts).
pub static INFO: AlgorithmInfo = AlgorithmInfo {
    name: NAME,
    description: "IBM 842 as the kernel's sw842 writes it (8/4/2-byte fifos, repeat/zero ops, CRC-32 trailer); pure Rust",
    params: &[],
    level: None,
    zram: Some(KernelSpan::since(4, 7)),
    zram_kconfig: Some("CONFIG_ZRAM_BACKEND_842"),
    crypto: Some(NAME),
    zswap: Some(KernelSpan::since(4, 1)),
};

/// The `842` backend.
pub struct Sw842Backend;
/// The `842` backend (registry entry).
pub static SW842: Sw842Backend = Sw842Backend;

impl Backend for Sw842Backend {
    fn info(&self) -> &'static AlgorithmInfo {
        &INFO
    }
    fn new_stream(&self, params: &Params) -> Result<Box<dyn Stream>, CodecError> {
        reject_params(NAME, params)?;
        Ok(Box::new(Sw842Stream {
            compressor: compress::Compressor::with_max_input(params.page()),
        }))
    }
}

/// Compress any input of at most one 64 KiB page (tails shorter than 8 bytes
/// use the software-only short-data op, as the kernel does). `None` if it
/// does not fit in `dst`. Allocates a compressor; streams reuse theirs.
pub fn compress_any(src: &[u8], dst: &mut [u8]) -> Result<Option<usize>, CodecError> {
    if src.len() > compress::MAX_ANY_INPUT {
        return Err(CodecError::InvalidInput {
            algo: NAME,
            reason: format!(
                "input is {} bytes, at most {} are taken",
                src.len(),
                compress::MAX_ANY_INPUT
            ),
        });
    }
    Ok(compress::Compressor::with_max_input(src.len()).compress(src, dst))
}

/// Decompress a stream that must produce exactly `dst.len()` bytes.
pub fn decompress_any(src: &[u8], dst: &mut [u8]) -> Result<(), CodecError> {
    decompress::decompress(src, dst).map_err(|e| CodecError::corrupt(NAME, e))
}

struct Sw842Stream {
    compressor: compress::Compressor,
}

impl Stream for Sw842Stream {
    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CodecError> {
        check_page(NAME, src)?;
        self.compressor
            .compress(src, dst)
            .ok_or(CodecError::DstTooSmall {
                capacity: dst.len(),
            })
    }

    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<(), CodecError> {
        decompress_any(src, dst)
    }
}

#[cfg(test)]
mod tests {
    use super::test_pages::*;
    use super::*;
    use crate::{MAX_COMPRESSED, PAGE_SIZE};

    fn stream() -> Box<dyn Stream> {
        SW842.new_stream(&Params::default()).unwrap()
    }

    fn comp(src: &[u8]) -> Vec<u8> {
        let mut out = vec![0u8; compress_bound(src.len())];
        let n = compress_any(src, &mut out)
            .unwrap()
            .expect("bound always fits");
        out.truncate(n);
        out
    }

    // Reference streams published with lib842 (a port of the kernel's sw842),
    // used as the kernel's output for these inputs.
    const RANDOM_IN: [u8; 32] = [
        0x0f, 0x07, 0x32, 0xb4, 0xaf, 0x6b, 0xe4, 0x0c, 0x5f, 0x8b, 0x4e, 0x4c, 0x4e, 0x3f, 0xfd,
        0x44, 0xf0, 0x5f, 0xd6, 0x60, 0x22, 0x4d, 0xc5, 0x2f, 0x37, 0x8c, 0xbb, 0x3d, 0xd2, 0x17,
        0x9b, 0xde,
    ];
    const RANDOM_OUT: [u8; 40] = [
        0x00, 0x78, 0x39, 0x95, 0xa5, 0x7b, 0x5f, 0x20, 0x60, 0x17, 0xe2, 0xd3, 0x93, 0x13, 0x8f,
        0xff, 0x51, 0x01, 0xe0, 0xbf, 0xac, 0xc0, 0x44, 0x9b, 0x8a, 0x5e, 0x03, 0x78, 0xcb, 0xb3,
        0xdd, 0x21, 0x79, 0xbd, 0xef, 0x47, 0xe0, 0xe6, 0xe6, 0x00,
    ];
    const LIMIT_IN: [u8; 32] = [
        0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x12, 0x12, 0x12, 0x12, 0x13, 0x13, 0x14,
        0x15, 0x17, 0x17, 0x17, 0x17, 0x17, 0x17, 0x17, 0x17, 0x17, 0x17, 0x17, 0x17, 0x17, 0x17,
        0x17, 0x17,
    ];
    const LIMIT_OUT: [u8; 32] = [
        0x00, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x04, 0x84, 0x84, 0x84, 0x84, 0xc4,
        0xc5, 0x05, 0x40, 0x2e, 0x2e, 0x2e, 0x2e, 0x2e, 0x2e, 0x2e, 0x2f, 0xb0, 0x3d, 0x6a, 0xe4,
        0xe2, 0x58,
    ];
    const MIXED_OUT: [u8; 56] = [
        0x00, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x8e, 0xc2, 0x00, 0x78, 0x39, 0x95, 0xa5,
        0x7b, 0x5f, 0x20, 0x60, 0x17, 0xe2, 0xd3, 0x93, 0x13, 0x8f, 0xff, 0x51, 0x01, 0xe0, 0xbf,
        0xac, 0xc0, 0x44, 0x9b, 0x8a, 0x5e, 0x03, 0x78, 0xcb, 0xb3, 0xdd, 0x21, 0x79, 0xbd, 0xef,
        0x27, 0xab, 0x7c, 0x09, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    ];

    fn check_vector(input: &[u8], expected: &[u8]) {
        assert_eq!(comp(input), expected, "compressed bytes for {input:02x?}");
        let mut back = vec![0u8; input.len()];
        decompress_any(expected, &mut back).unwrap();
        assert_eq!(back, input);
    }

    #[test]
    fn reference_vectors() {
        check_vector(&[], &[0xf0, 0, 0, 0, 0, 0, 0, 0]);
        check_vector(&[0u8; 32], &[0xe6, 0xc2, 0xf0, 0, 0, 0, 0, 0]);
        check_vector(&RANDOM_IN, &RANDOM_OUT);
        check_vector(&LIMIT_IN, &LIMIT_OUT);
        let mut mixed = vec![0x11u8; 32];
        mixed.extend_from_slice(&RANDOM_IN);
        check_vector(&mixed, &MIXED_OUT);
    }

    /// lib842's 800-byte text vector (English, UTF-8, with the C string's
    /// NUL). lib842's serial port keeps each value's fifo slots in a list it
    /// appends to and takes the head, i.e. the *oldest* live slot; the
    /// kernel's hlist adds at the head and takes the first match, the *newest*
    /// (what we do). So index values differ where a value sits in several
    /// slots, but hit/miss, hence every template, the length and the CRC are
    /// the same.
    #[test]
    fn lib842_text_vector_same_templates_and_length() {
        let input = include_bytes!("sw842/testdata/lib842_text.in");
        let reference = include_bytes!("sw842/testdata/lib842_text.842");
        let ours = comp(input);
        assert_eq!(ours.len(), reference.len());
        assert_eq!(ops(&ours), ops(reference));
        assert_eq!(
            &ours[ours.len() - 8..],
            &reference[reference.len() - 8..],
            "END + CRC tail"
        );
        for s in [&ours[..], &reference[..]] {
            let mut back = vec![0u8; input.len()];
            decompress_any(s, &mut back).unwrap();
            assert_eq!(&back[..], &input[..]);
        }
    }

    /// The opcode sequence of a stream (templates and special ops, no args).
    fn ops(stream: &[u8]) -> Vec<u8> {
        use super::format::*;
        let bits: Vec<u8> = stream
            .iter()
            .flat_map(|b| (0..8).rev().map(move |i| (b >> i) & 1))
            .collect();
        let mut p = 0;
        let mut get = |n: usize| {
            let v = bits[p..p + n].iter().fold(0u64, |a, &b| a << 1 | b as u64);
            p += n;
            v
        };
        let mut v = Vec::new();
        loop {
            let op = get(5) as u32;
            v.push(op as u8);
            match op {
                OP_END => return v,
                OP_REPEAT => drop(get(6)),
                OP_ZEROS => {}
                OP_SHORT_DATA => {
                    let n = get(3) as usize;
                    get(8 * n);
                }
                t => {
                    for a in TEMPLATES[t as usize] {
                        get(match a {
                            Action::Data(s) => 8 * *s as usize,
                            Action::Index(2) => 8,
                            Action::Index(4) => 9,
                            Action::Index(_) => 8,
                        });
                    }
                }
            }
        }
    }

    #[test]
    fn hand_checked_small_streams() {
        // 16 bytes: D8 block, then an I8 hit on fifo index 0 after a different
        // block? No: the second block repeats the first -> REPEAT(0).
        let mut v = [0u8; 16];
        v[..8].copy_from_slice(b"ABCDEFGH");
        v[8..].copy_from_slice(b"ABCDEFGH");
        // 00000 + 64 data bits, 11011 000000, 11110, crc 32 bits.
        let out = comp(&v);
        assert_eq!(out[0], 0x02); // 00000 010 ('A' = 0x41 -> 0100 0001)
        assert_eq!(out.len(), 16); // 5+64+11+5+32 = 117 bits -> 15 bytes -> 16
        let mut back = [0u8; 16];
        decompress_any(&out, &mut back).unwrap();
        assert_eq!(back, v);
        // A block seen two blocks ago is an I8 index: A, B, A -> third is 0x19 idx 0.
        let mut w = Vec::new();
        w.extend_from_slice(b"ABCDEFGH");
        w.extend_from_slice(b"12345678");
        w.extend_from_slice(b"ABCDEFGH");
        let out = comp(&w);
        // bits 138..151: 11001 00000000 (template 0x19, index 0)
        let bits: String = out.iter().map(|b| format!("{b:08b}")).collect();
        assert_eq!(&bits[138..151], "1100100000000");
        // Short tail of 3 bytes: 11101 011 + 24 bits.
        let out = comp(b"xyz");
        let bits: String = out.iter().map(|b| format!("{b:08b}")).collect();
        assert_eq!(&bits[..8], "11101011");
        assert_eq!(
            &bits[8..32],
            format!("{:08b}{:08b}{:08b}", b'x', b'y', b'z')
        );
        assert_eq!(&bits[32..37], "11110");
        let crc = crc32_be(0, b"xyz");
        assert_eq!(&bits[37..69], format!("{crc:032b}"));
    }

    #[test]
    fn round_trips_every_kind_of_page() {
        let mut s = stream();
        for (name, page) in all_kinds() {
            let mut c = vec![0u8; MAX_COMPRESSED];
            let n = s.compress(&page, &mut c).unwrap();
            assert!(n <= compress_bound(PAGE_SIZE) && n % 8 == 0, "{name}: {n}");
            let mut back = vec![0u8; PAGE_SIZE];
            s.decompress(&c[..n], &mut back)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(back == page, "{name}: round trip differs");
            // A fresh stream gives the same bytes: no state leaks between pages.
            let mut c2 = vec![0u8; MAX_COMPRESSED];
            let n2 = stream().compress(&page, &mut c2).unwrap();
            assert_eq!(&c[..n], &c2[..n2], "{name}: depends on earlier pages");
        }
    }

    #[test]
    fn ratios_are_plausible() {
        let mut s = stream();
        let mut c = vec![0u8; MAX_COMPRESSED];
        // ZEROS, 7 x REPEAT(64), REPEAT(63), END, CRC: 130 bits -> 17 bytes -> 24.
        assert_eq!(s.compress(&vec![0u8; PAGE_SIZE], &mut c).unwrap(), 24);
        let n = s.compress(&heap_like(7), &mut c).unwrap();
        assert!(n < PAGE_SIZE / 2, "heap-like page compresses to {n}");
        let n = s.compress(&random(7), &mut c).unwrap();
        assert!(n > PAGE_SIZE, "random page should expand, got {n}");
    }

    #[test]
    fn too_small_destination_is_reported() {
        let mut s = stream();
        let page = heap_like(3);
        let mut c = vec![0u8; MAX_COMPRESSED];
        let n = s.compress(&page, &mut c).unwrap();
        for cap in [0, 1, n / 2, n - 8, n - 1] {
            let mut small = vec![0u8; cap];
            assert_eq!(
                s.compress(&page, &mut small),
                Err(CodecError::DstTooSmall { capacity: cap })
            );
        }
        let mut exact = vec![0u8; n];
        assert_eq!(s.compress(&page, &mut exact), Ok(n));
        assert_eq!(&exact[..], &c[..n]);
        let mut short = vec![0u8; 100];
        assert!(matches!(
            s.compress(&short.clone(), &mut short),
            Err(CodecError::InvalidInput { .. })
        ));
    }

    #[test]
    fn truncation_at_every_length_is_an_error() {
        let mut s = stream();
        for page in [heap_like(1), text(1), sparse(1)] {
            let mut c = vec![0u8; MAX_COMPRESSED];
            let n = s.compress(&page, &mut c).unwrap();
            // Cutting off only zero padding is an error too: the length must be
            // exactly what the compressor wrote.
            let mut back = vec![0u8; PAGE_SIZE];
            for len in 0..n {
                assert!(
                    s.decompress(&c[..len], &mut back).is_err(),
                    "cut to {len} of {n}"
                );
            }
            // Longer than the padded stream, or non-zero padding: rejected.
            let mut long = c[..n].to_vec();
            long.extend_from_slice(&[0u8; 8]);
            assert!(s.decompress(&long, &mut back).is_err());
        }
    }

    #[test]
    fn bit_flips_are_caught_by_the_crc_or_structure() {
        let mut s = stream();
        let page = heap_like(11);
        let mut c = vec![0u8; MAX_COMPRESSED];
        let n = s.compress(&page, &mut c).unwrap();
        let mut back = vec![0u8; PAGE_SIZE];
        let (mut silent, mut caught) = (0, 0);
        for bit in 0..n * 8 {
            let mut bad = c[..n].to_vec();
            bad[bit / 8] ^= 0x80 >> (bit % 8);
            match s.decompress(&bad, &mut back) {
                Err(CodecError::Corrupt { .. }) => caught += 1,
                Err(e) => panic!("unexpected error kind {e}"),
                Ok(()) => {
                    // A flip may only go unnoticed if the output is unchanged:
                    // a pad bit, or an index to another fifo slot that holds
                    // the same value (common on heap pages: zero halves).
                    assert_eq!(back, page, "bit {bit} changed the data without an error");
                    silent += 1;
                }
            }
        }
        assert!(
            caught > 3 * silent,
            "{caught} flips caught, {silent} harmless"
        );
    }

    #[test]
    fn crc_mismatch_is_corrupt() {
        let page = text(5);
        let mut c = vec![0u8; MAX_COMPRESSED];
        let n = stream().compress(&page, &mut c).unwrap();
        let mut back = vec![0u8; PAGE_SIZE];
        // Decode once to find where the data ends, then corrupt only the CRC:
        // re-encode the same stream with a wrong CRC by flipping a CRC bit. The
        // CRC is the 32 bits before the end marker's padding; find it by trying
        // flips from the end until the error mentions the CRC.
        let mut found = false;
        for bit in (0..n * 8).rev().take(80) {
            let mut bad = c[..n].to_vec();
            bad[bit / 8] ^= 0x80 >> (bit % 8);
            if let Err(e) = stream().decompress(&bad, &mut back) {
                if e.to_string().contains("CRC mismatch") {
                    found = true;
                    break;
                }
            }
        }
        assert!(found, "no flip near the end gave a CRC mismatch");
    }

    #[test]
    fn malformed_streams() {
        let mut back = vec![0u8; 16];
        let bad = |src: &[u8], back: &mut [u8]| decompress_any(src, back).unwrap_err().to_string();
        // Invalid opcodes 0x1A and 0x1F.
        assert!(bad(&[0x1A << 3, 0, 0, 0, 0, 0, 0, 0], &mut back).contains("invalid opcode"));
        assert!(bad(&[0x1F << 3, 0, 0, 0, 0, 0, 0, 0], &mut back).contains("invalid opcode"));
        // REPEAT first: nothing to repeat.
        assert!(bad(&[0xD8, 0, 0, 0, 0, 0, 0, 0], &mut back).contains("no previous"));
        // I8 index with no output yet.
        assert!(bad(&[0xC8, 0, 0, 0, 0, 0, 0, 0], &mut back).contains("points past"));
        // ZEROS beyond the output: 3 zero ops into 16 bytes.
        assert!(bad(&[0xE7, 0x39, 0xE0, 0, 0, 0, 0, 0], &mut back).contains("overrun"));
        // Empty input, and short data of length 0.
        assert!(bad(&[], &mut back).contains("truncated"));
        assert!(bad(&[0xE8, 0, 0, 0, 0, 0, 0, 0], &mut back).contains("0 bytes"));
        // Valid stream for 32 zero bytes decoded into a 16-byte buffer.
        assert!(bad(&[0xe6, 0xc2, 0xf0, 0, 0, 0, 0, 0], &mut back).contains("overrun"));
        // ... and into a 40-byte buffer: CRC fine, length wrong.
        let mut big = vec![0u8; 40];
        assert!(bad(&[0xe6, 0xc2, 0xf0, 0, 0, 0, 0, 0], &mut big).contains("expected 40"));
        // Non-zero padding after the stream.
        assert!(bad(&[0xe6, 0xc2, 0xf0, 0, 0, 0, 0, 1], &mut [0u8; 32]).contains("zero-padded"));
        assert!(bad(&[0xe6, 0xc2, 0xf0, 0, 0, 0, 0], &mut [0u8; 32]).contains("zero-padded"));
    }

    #[test]
    fn random_input_never_panics() {
        let mut r = Rng::new(99);
        let mut back = vec![0u8; PAGE_SIZE];
        for len in (0..600).step_by(7) {
            let src: Vec<u8> = (0..len).map(|_| r.next() as u8).collect();
            let _ = decompress_any(&src, &mut back);
        }
    }

    /// A slow, literal model of the kernel's compressor: fifos as arrays of
    /// slots with their write times, and a lookup that scans every slot for
    /// the value and takes the most recently written one (what the kernel's
    /// head-inserted hash chains return). The fast compressor must produce the
    /// same bytes.
    fn naive_kernel_compress(src: &[u8]) -> Vec<u8> {
        use super::format::*;
        let mut bits: Vec<bool> = Vec::new();
        let put = |bits: &mut Vec<bool>, v: u64, n: u32| {
            for i in (0..n).rev() {
                bits.push((v >> i) & 1 == 1);
            }
        };
        // (value, write time) per slot; None = never written.
        let mut f8: Vec<Option<(u64, usize)>> = vec![None; 256];
        let mut f4: Vec<Option<(u64, usize)>> = vec![None; 512];
        let mut f2: Vec<Option<(u64, usize)>> = vec![None; 256];
        let find = |f: &[Option<(u64, usize)>], v: u64| {
            f.iter()
                .enumerate()
                .filter(|(_, e)| matches!(e, Some((x, _)) if *x == v))
                .max_by_key(|(_, e)| e.unwrap().1)
                .map(|(i, _)| i as u64)
        };
        let mut time = 0usize;
        let blocks: Vec<u64> = src
            .chunks_exact(8)
            .map(|b| u64::from_be_bytes(b.try_into().unwrap()))
            .collect();
        let mut last = blocks.first().map(|v| !v).unwrap_or(0);
        let mut rep = 0u64;
        for (k, &v) in blocks.iter().enumerate() {
            if v == last {
                rep += 1;
                if rep == 64 {
                    put(&mut bits, OP_REPEAT as u64, 5);
                    put(&mut bits, 63, 6);
                    rep = 0;
                }
            } else {
                if rep > 0 {
                    put(&mut bits, OP_REPEAT as u64, 5);
                    put(&mut bits, rep - 1, 6);
                    rep = 0;
                }
                if v == 0 {
                    put(&mut bits, OP_ZEROS as u64, 5);
                } else {
                    let part = |size: usize, at: usize| {
                        (v >> (64 - 8 * (at + size))) & (u64::MAX >> (64 - 8 * size))
                    };
                    let lookup = |size: usize, at: usize| match size {
                        8 => find(&f8, v),
                        4 => find(&f4, part(4, at)),
                        _ => find(&f2, part(2, at)),
                    };
                    let t = COMPRESS_ORDER
                        .iter()
                        .map(|&t| t as usize)
                        .find(|&t| {
                            let mut at = 0;
                            TEMPLATES[t].iter().all(|a| {
                                let ok = match *a {
                                    Action::Index(s) => lookup(s as usize, at).is_some(),
                                    Action::Data(_) => true,
                                };
                                at += match *a {
                                    Action::Index(s) | Action::Data(s) => s as usize,
                                };
                                ok
                            })
                        })
                        .unwrap();
                    put(&mut bits, t as u64, 5);
                    let mut at = 0;
                    for a in TEMPLATES[t] {
                        match *a {
                            Action::Data(s) => put(&mut bits, part(s as usize, at), 8 * s as u32),
                            Action::Index(s) => {
                                let n = match s {
                                    2 => I2_BITS,
                                    4 => I4_BITS,
                                    _ => I8_BITS,
                                };
                                put(&mut bits, lookup(s as usize, at).unwrap(), n)
                            }
                        }
                        at += match *a {
                            Action::Index(s) | Action::Data(s) => s as usize,
                        };
                    }
                }
            }
            last = v;
            time += 1;
            f8[k % 256] = Some((v, time));
            for d in 0..2 {
                time += 1;
                f4[(2 * k + d) % 512] = Some(((v >> (32 - 32 * d)) & 0xFFFF_FFFF, time));
            }
            for d in 0..4 {
                time += 1;
                f2[(4 * k + d) % 256] = Some(((v >> (48 - 16 * d)) & 0xFFFF, time));
            }
        }
        if rep > 0 {
            put(&mut bits, OP_REPEAT as u64, 5);
            put(&mut bits, rep - 1, 6);
        }
        let tail = &src[blocks.len() * 8..];
        if !tail.is_empty() {
            put(&mut bits, OP_SHORT_DATA as u64, 5);
            put(&mut bits, tail.len() as u64, 3);
            for &b in tail {
                put(&mut bits, b as u64, 8);
            }
        }
        put(&mut bits, OP_END as u64, 5);
        put(&mut bits, crc32_be(0, src) as u64, 32);
        while !bits.len().is_multiple_of(64) {
            bits.push(false);
        }
        bits.chunks(8)
            .map(|c| c.iter().fold(0u8, |a, &b| a << 1 | b as u8))
            .collect()
    }

    #[test]
    fn fast_compressor_equals_literal_kernel_model() {
        let mut inputs: Vec<Vec<u8>> = all_kinds().into_iter().map(|(_, p)| p).collect();
        // Few distinct values, so that every fifo holds each value in many
        // slots and wraps several times: the "most recent slot" rule decides.
        let mut r = Rng::new(77);
        for _ in 0..6 {
            let vocab: Vec<u16> = (0..1 + r.below(12)).map(|_| r.next() as u16).collect();
            inputs.push(
                (0..PAGE_SIZE / 2)
                    .flat_map(|_| vocab[r.below(vocab.len() as u64) as usize].to_be_bytes())
                    .collect(),
            );
        }
        inputs.push(include_bytes!("sw842/testdata/lib842_text.in").to_vec());
        inputs.push(b"short tail".to_vec());
        let mut s = stream();
        for (i, input) in inputs.iter().enumerate() {
            let fast = if input.len() == PAGE_SIZE {
                let mut c = vec![0u8; MAX_COMPRESSED];
                let n = s.compress(input, &mut c).unwrap();
                c.truncate(n);
                c
            } else {
                comp(input)
            };
            assert!(
                fast == naive_kernel_compress(input),
                "input {i} differs from the kernel model"
            );
        }
    }

    #[test]
    fn params_are_rejected() {
        let e = SW842
            .new_stream(&Params {
                level: Some(1),
                ..Params::default()
            })
            .err()
            .unwrap();
        assert!(e.to_string().contains("no parameters"), "{e}");
    }
}
