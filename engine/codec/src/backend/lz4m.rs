//! `lz4m`: LZ4 adapted to in-memory data (Kwon et al., ICCE 2017), in the
//! token layout of the deployed "lz4m" (Huawei's kernel `lib/lz4m`): the page
//! is a sequence of 32-bit words; hashing, matching, lengths and offsets are
//! all in words. Not in the mainline kernel; a zmem extension. The exact format
//! is in docs/formats/lz4m.md:
//!
//! ```text
//! sequence := token:u16le [lit-ext] literals:4*L bytes [match-ext]
//! token    := L:3 bits (15..13) | M:3 bits (12..10) | offset:10 bits (9..0)
//! ```
//!
//! L and M of 7 are followed by LZ4-style extension bytes (each added, 255
//! means another follows). A sequence with M = 0 ends the stream (its offset is
//! 0); every other sequence copies M words from `offset` words back.

use super::reject_params;
use super::{check_4k_page, only_4k};
use crate::{AlgorithmInfo, Backend, CodecError, Params, Stream, PAGE_SIZE};

const NAME: &str = "lz4m";

const WORDS: usize = PAGE_SIZE / 4;
/// Largest offset in words (10 bits).
const MAX_OFFSET: usize = (1 << 10) - 1;
const HASH_BITS: u32 = 12;
/// Largest output: one token, 4 extension bytes, every word a literal, the
/// terminating token carrying them.
pub const MAX_COMPRESSED_LEN: usize = 2 + ext_len(WORDS) + 4 * WORDS;

/// Bytes of the extension that encodes a length of `n` in a 3-bit field.
const fn ext_len(n: usize) -> usize {
    if n < 7 {
        0
    } else {
        (n - 7) / 255 + 1
    }
}

#[inline(always)]
fn hash(w: u32) -> usize {
    (w.wrapping_mul(2_654_435_761) >> (32 - HASH_BITS)) as usize
}

/// What is known about `lz4m` (the registry's facts).
pub static INFO: AlgorithmInfo = AlgorithmInfo {
    name: NAME,
    description: "LZ4m: word-granular LZ4 for memory pages (16-bit token: 3-bit literal and match lengths in words, 10-bit word offset); zmem extension",
    params: &[],
    level: None,
    zram: None,
    zram_kconfig: None,
    crypto: None,
    zswap: None,
};

/// The `lz4m` backend.
pub struct Lz4mBackend;
/// The `lz4m` backend (registry entry).
pub static LZ4M: Lz4mBackend = Lz4mBackend;

impl Backend for Lz4mBackend {
    fn info(&self) -> &'static AlgorithmInfo {
        &INFO
    }
    fn new_stream(&self, params: &Params) -> Result<Box<dyn Stream>, CodecError> {
        reject_params(NAME, params)?;
        only_4k(NAME, params)?;
        Ok(Box::new(Lz4mStream {
            table: Box::new([0; 1 << HASH_BITS]),
            words: Box::new([0; WORDS]),
            dist: Box::new([0; WORDS]),
        }))
    }
}

struct Lz4mStream {
    /// Word position of the latest word with each hash. Never cleared: a
    /// stale entry is only used after checking that it is an earlier position
    /// within reach holding the same word, which makes it a valid match.
    table: Box<[u16; 1 << HASH_BITS]>,
    /// The page as words.
    words: Box<[u32; WORDS]>,
    /// Per word: distance in words to the candidate match position.
    dist: Box<[u16; WORDS]>,
}

/// Output cursor over the caller's buffer.
struct Out<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl Out<'_> {
    #[inline(always)]
    fn ext(&mut self, mut n: usize) {
        while n >= 255 {
            self.buf[self.pos] = 255;
            self.pos += 1;
            n -= 255;
        }
        self.buf[self.pos] = n as u8;
        self.pos += 1;
    }

    /// Write one sequence: literals `src[from..to]` (whole words), then a
    /// match of `mlen` words at `offset`; `Err` if it does not fit.
    #[inline(always)]
    fn sequence(
        &mut self,
        src: &[u8],
        from: usize,
        to: usize,
        mlen: usize,
        offset: usize,
    ) -> Result<(), ()> {
        let n = to - from;
        let l = n / 4;
        let need = 2 + ext_len(l) + n + ext_len(mlen);
        if self.pos + need > self.buf.len() {
            return Err(());
        }
        let token = (l.min(7) << 13 | mlen.min(7) << 10 | offset) as u16;
        self.buf[self.pos..self.pos + 2].copy_from_slice(&token.to_le_bytes());
        self.pos += 2;
        if l >= 7 {
            self.ext(l - 7);
        }
        if n <= 16 && from + 16 <= src.len() && self.pos + 16 <= self.buf.len() {
            // Short runs: copy a fixed 16 bytes (the excess is overwritten by
            // what follows) instead of calling memcpy for a few bytes.
            self.buf[self.pos..self.pos + 16].copy_from_slice(&src[from..from + 16]);
        } else {
            self.buf[self.pos..self.pos + n].copy_from_slice(&src[from..to]);
        }
        self.pos += n;
        if mlen >= 7 {
            self.ext(mlen - 7);
        }
        Ok(())
    }
}

impl Stream for Lz4mStream {
    fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CodecError> {
        check_4k_page(NAME, src)?;
        let too_small = CodecError::DstTooSmall {
            capacity: dst.len(),
        };
        let w = &mut *self.words;
        // Pass 1, without branches: for every word, the latest earlier
        // position with the same hash (all positions are inserted), and
        // whether it holds the same word within reach (a bit in `starts`).
        let table = &mut *self.table;
        let dist = &mut *self.dist;
        let mut starts = [0u64; WORDS / 64];
        for (k, flags) in starts.iter_mut().enumerate() {
            let mut bits = 0u64;
            for (j, c) in src[256 * k..256 * k + 256].chunks_exact(4).enumerate() {
                let p = 64 * k + j;
                // Words are loaded here; `w[cand]` for a valid candidate
                // (cand < p) is already filled, and an invalid one is masked
                // by the distance check.
                let x = u32::from_ne_bytes(c.try_into().unwrap());
                w[p] = x;
                let h = hash(x);
                let cand = table[h] as usize & (WORDS - 1);
                table[h] = p as u16;
                let d = p.wrapping_sub(cand);
                let ok = (d.wrapping_sub(1) < MAX_OFFSET) & (w[cand] == x);
                dist[p] = d as u16;
                bits |= (ok as u64) << j;
            }
            *flags = bits;
        }
        // Pass 2: greedy parse. Jump to the next position that has a match,
        // extend it forward, emit the literals before it and the match.
        let mut out = Out { buf: dst, pos: 0 };
        let mut anchor = 0usize;
        let mut p = 0usize;
        'parse: loop {
            // Next set bit at or after p.
            let mut k = p / 64;
            if k >= WORDS / 64 {
                break;
            }
            let mut bits = starts[k] & (!0u64 << (p % 64));
            while bits == 0 {
                k += 1;
                if k == WORDS / 64 {
                    break 'parse;
                }
                bits = starts[k];
            }
            let start = 64 * k + bits.trailing_zeros() as usize;
            let d = dist[start] as usize;
            // Extend forward, two words per step.
            let mut end = start + 1;
            let pair = |i: usize| w[i] as u64 | (w[i + 1] as u64) << 32;
            while end + 2 <= WORDS {
                let diff = pair(end) ^ pair(end - d);
                if diff != 0 {
                    end += (diff.trailing_zeros() / 32) as usize;
                    break;
                }
                end += 2;
            }
            if end == WORDS - 1 && w[end] == w[end - d] {
                end += 1;
            }
            out.sequence(src, 4 * anchor, 4 * start, end - start, d)
                .map_err(|()| too_small.clone())?;
            anchor = end;
            p = end;
        }
        out.sequence(src, 4 * anchor, PAGE_SIZE, 0, 0)
            .map_err(|()| too_small)?;
        Ok(out.pos)
    }

    fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<(), CodecError> {
        decompress(src, dst).map_err(|e| CodecError::corrupt(NAME, e))
    }
}

/// Decode a stream that must fill `dst` exactly (any multiple of 4 bytes).
///
/// Longer than a screen on purpose: one decoding loop (tokens, literals,
/// matches) whose positions and checks are shared by every branch; this is
/// the hot path `zmem bench codecs` measures (docs/own-codecs.md).
pub fn decompress(src: &[u8], dst: &mut [u8]) -> Result<(), String> {
    if !dst.len().is_multiple_of(4) {
        return Err(format!("output of {} bytes is not whole words", dst.len()));
    }
    let mut ip = 0usize;
    let mut op = 0usize;
    let olen = dst.len();
    let read_ext = |ip: &mut usize, base: usize| -> Result<usize, String> {
        let mut n = base;
        loop {
            let b = *src.get(*ip).ok_or("truncated in a length extension")?;
            *ip += 1;
            n += b as usize;
            if b != 255 {
                return Ok(n);
            }
            if n > olen {
                return Err(format!("length {n} words exceeds the output"));
            }
        }
    };
    loop {
        let t = src
            .get(ip..ip + 2)
            .ok_or_else(|| format!("truncated: no token at byte {ip}"))?;
        let token = u16::from_le_bytes([t[0], t[1]]) as usize;
        ip += 2;
        let mut l = token >> 13;
        let mut m = (token >> 10) & 7;
        let offset = token & 0x3FF;
        if l == 7 {
            l = read_ext(&mut ip, 7)?;
        }
        let lbytes = 4 * l;
        if op + lbytes > dst.len() {
            return Err(format!(
                "{l} literal words at byte {op} overrun {} bytes",
                dst.len()
            ));
        }
        let lits = src.get(ip..ip + lbytes).ok_or("truncated in literals")?;
        if l <= 4 {
            // A few words: fixed-size copies beat a memcpy call.
            for (k, c) in lits.chunks_exact(4).enumerate() {
                dst[op + 4 * k..op + 4 * k + 4].copy_from_slice(c);
            }
        } else {
            dst[op..op + lbytes].copy_from_slice(lits);
        }
        ip += lbytes;
        op += lbytes;
        if m == 0 {
            if offset != 0 {
                return Err(format!("final sequence has offset {offset}"));
            }
            if ip != src.len() {
                return Err(format!(
                    "{} bytes follow the final sequence",
                    src.len() - ip
                ));
            }
            if op != dst.len() {
                return Err(format!("decodes to {op} bytes, expected {}", dst.len()));
            }
            return Ok(());
        }
        if m == 7 {
            m = read_ext(&mut ip, 7)?;
        }
        let (mbytes, obytes) = (4 * m, 4 * offset);
        if offset == 0 || obytes > op {
            return Err(format!(
                "match offset {offset} words at output word {}",
                op / 4
            ));
        }
        if op + mbytes > dst.len() {
            return Err(format!(
                "{m} match words at byte {op} overrun {} bytes",
                dst.len()
            ));
        }
        if m <= 4 {
            // Word by word, in order: also right when the match overlaps
            // itself (offset < m), since each word read is already written.
            for k in 0..m {
                let from = op - obytes + 4 * k;
                let word: [u8; 4] = dst[from..from + 4].try_into().unwrap();
                dst[op + 4 * k..op + 4 * k + 4].copy_from_slice(&word);
            }
        } else if obytes >= mbytes {
            dst.copy_within(op - obytes..op - obytes + mbytes, op);
        } else {
            // Overlapping: the period is `offset` words; copy it forward in
            // growing chunks.
            let mut done = 0;
            while done < mbytes {
                let n = (mbytes - done).min(obytes + done);
                dst.copy_within(op - obytes..op - obytes + n, op + done);
                done += n;
            }
        }
        op += mbytes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::sw842::test_pages::*;
    use crate::MAX_COMPRESSED;

    fn stream() -> Box<dyn Stream> {
        LZ4M.new_stream(&Params::default()).unwrap()
    }

    fn comp(page: &[u8]) -> Vec<u8> {
        let mut c = vec![0u8; MAX_COMPRESSED];
        let n = stream().compress(page, &mut c).unwrap();
        c.truncate(n);
        c
    }

    #[test]
    fn round_trips_every_kind_of_page() {
        let mut s = stream();
        for (name, page) in all_kinds() {
            let mut c = vec![0u8; MAX_COMPRESSED];
            let n = s.compress(&page, &mut c).unwrap();
            assert!(n <= MAX_COMPRESSED_LEN, "{name}: {n}");
            let mut back = vec![0u8; PAGE_SIZE];
            s.decompress(&c[..n], &mut back)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(back == page, "{name}: round trip differs");
        }
        assert_eq!(MAX_COMPRESSED_LEN, 4102);
    }

    #[test]
    fn hand_checked_streams() {
        // Zero page: 1 literal word, then a match of 1023 words at offset 1
        // (M = 7 + 255 + 255 + 255 + 251), then the end token.
        let c = comp(&[0u8; PAGE_SIZE]);
        let tok = (1u16 << 13 | 7 << 10 | 1).to_le_bytes();
        assert_eq!(c, [tok[0], tok[1], 0, 0, 0, 0, 255, 255, 255, 251, 0, 0]);
        // Random page: everything literal in the final sequence:
        // token (L=7, M=0), ext 1017 = 255*3 + 252, 4096 bytes.
        let page = random(1);
        let c = comp(&page);
        assert_eq!(&c[..6], &[0x00, 0xE0, 255, 255, 255, 252]);
        assert_eq!(&c[6..], &page[..]);
        // "ABCD" "EFGH" "ABCD" "EFGH" ... : 2 literal words, then a match of
        // 1022 words at offset 2.
        let page: Vec<u8> = b"ABCDEFGH"
            .iter()
            .copied()
            .cycle()
            .take(PAGE_SIZE)
            .collect();
        let c = comp(&page);
        let tok = (2u16 << 13 | 7 << 10 | 2).to_le_bytes();
        assert_eq!(
            c,
            [
                tok[0], tok[1], b'A', b'B', b'C', b'D', b'E', b'F', b'G', b'H', 255, 255, 255, 250,
                0, 0
            ]
        );
        let mut back = vec![0u8; PAGE_SIZE];
        decompress(&c, &mut back).unwrap();
        assert_eq!(back, page);
    }

    #[test]
    fn too_small_destination_is_reported() {
        let mut s = stream();
        for page in [heap_like(4), random(4), text(4)] {
            let n = comp(&page).len();
            for cap in [0, 1, n / 2, n - 1] {
                let mut small = vec![0u8; cap];
                assert_eq!(
                    s.compress(&page, &mut small),
                    Err(CodecError::DstTooSmall { capacity: cap })
                );
            }
            let mut exact = vec![0u8; n];
            assert_eq!(s.compress(&page, &mut exact), Ok(n));
        }
    }

    #[test]
    fn truncation_at_every_length_is_an_error() {
        let mut s = stream();
        let mut back = vec![0u8; PAGE_SIZE];
        for page in [heap_like(5), text(5), sparse(5)] {
            let c = comp(&page);
            for len in 0..c.len() {
                assert!(
                    s.decompress(&c[..len], &mut back).is_err(),
                    "truncated to {len}"
                );
            }
            let mut long = c.clone();
            long.push(0);
            assert!(s.decompress(&long, &mut back).is_err());
        }
    }

    #[test]
    fn bit_flips_never_panic() {
        let mut s = stream();
        let mut back = vec![0u8; PAGE_SIZE];
        let page = heap_like(8);
        let c = comp(&page);
        let mut caught = 0;
        for bit in 0..c.len() * 8 {
            let mut bad = c.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            if s.decompress(&bad, &mut back).is_err() {
                caught += 1;
            }
        }
        // No checksum: flips in literals decode to other data. Flips in
        // tokens and lengths mostly break the structure.
        assert!(caught > 0);
    }

    #[test]
    fn malformed_streams() {
        let mut back = vec![0u8; 16];
        let err = |src: &[u8], back: &mut [u8]| decompress(src, back).unwrap_err();
        assert!(err(&[], &mut back).contains("no token"));
        // Match before any output.
        assert!(err(&(1u16 << 10 | 1).to_le_bytes(), &mut back).contains("offset"));
        // Match offset 0.
        let mut s = (1u16 << 13 | 1 << 10).to_le_bytes().to_vec();
        s.extend_from_slice(b"abcd");
        assert!(err(&s, &mut back).contains("offset 0"));
        // Final sequence with an offset.
        let mut s = (1u16 << 13 | 3).to_le_bytes().to_vec();
        s.extend_from_slice(b"abcd");
        assert!(err(&s, &mut back).contains("final sequence has offset"));
        // Too short output.
        let mut s = (1u16 << 13).to_le_bytes().to_vec();
        s.extend_from_slice(b"abcd");
        assert!(err(&s, &mut back).contains("expected 16"));
        // Overrun by literals, by a match, and an endless extension.
        assert!(err(&(5u16 << 13).to_le_bytes(), &mut back).contains("overrun"));
        let mut s = (1u16 << 13 | 6 << 10 | 1).to_le_bytes().to_vec();
        s.extend_from_slice(b"abcd");
        assert!(err(&s, &mut back).contains("overrun"));
        let mut s = (7u16 << 13).to_le_bytes().to_vec();
        s.extend_from_slice(&[255; 64]);
        assert!(err(&s, &mut back).contains("exceeds") || err(&s, &mut back).contains("truncated"));
        // Output not whole words.
        assert!(err(&[0, 0], &mut [0u8; 3]).contains("whole words"));
    }

    #[test]
    fn random_input_never_panics() {
        let mut r = Rng::new(3);
        let mut back = vec![0u8; PAGE_SIZE];
        for len in 0..800 {
            let src: Vec<u8> = (0..len).map(|_| r.next() as u8).collect();
            let _ = decompress(&src, &mut back);
        }
    }
}
