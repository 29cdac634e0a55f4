//! The LZ4 block format as the kernel's lib/lz4 writes it (`lz4defs.h`),
//! shared by our two encoders of it: the fast one (`lz4/compress.rs`,
//! `lz4_compress.c`) and the HC one (`lz4hc/compress.rs`, `lz4hc_compress.c`).
//! Their match finders differ; the format's limits, the byte reads, the
//! match-length count and the writing of sequences are these.

use crate::CodecError;

/// `MINMATCH`: the shortest match.
pub(super) const MINMATCH: usize = 4;
/// `MFLIMIT`: the match search stops this many bytes before the end.
pub(super) const MFLIMIT: usize = 12;
/// `LASTLITERALS`: a match ends at least this many bytes before the end.
pub(super) const LASTLITERALS: usize = 5;
/// `MAX_DISTANCE`: the farthest offset.
pub(super) const MAX_DISTANCE: u32 = 65_535;
/// `ML_MASK`, `RUN_MASK`: the token's match and literal length fields.
pub(super) const ML_MASK: usize = 15;
pub(super) const RUN_MASK: usize = 15;
/// A dictionary is its last 64 KiB.
pub const DICT_MAX: usize = 64 * 1024;

#[inline(always)]
pub(super) fn read32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

#[inline(always)]
pub(super) fn read64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// `LZ4_count`: equal bytes of `a[ai..]` and `b[bi..]`, counted while
/// `ai < a_limit`, eight at a time.
#[inline(always)]
pub(super) fn count(a: &[u8], mut ai: usize, b: &[u8], mut bi: usize, a_limit: usize) -> usize {
    let start = ai;
    while ai + 8 <= a_limit && bi + 8 <= b.len() {
        let x = read64(a, ai) ^ read64(b, bi);
        if x != 0 {
            return ai - start + (x.trailing_zeros() / 8) as usize;
        }
        ai += 8;
        bi += 8;
    }
    while ai < a_limit && bi < b.len() && a[ai] == b[bi] {
        ai += 1;
        bi += 1;
    }
    ai - start
}

/// The destination, with its capacity checked on every write.
pub(super) struct Out<'a> {
    pub(super) buf: &'a mut [u8],
    pub(super) pos: usize,
}

impl Out<'_> {
    #[inline(always)]
    pub(super) fn room(&self, n: usize) -> Result<(), CodecError> {
        if self.pos + n > self.buf.len() {
            return Err(CodecError::DstTooSmall {
                capacity: self.buf.len(),
            });
        }
        Ok(())
    }

    /// A length's continuation bytes (255s, then the rest).
    #[inline(always)]
    pub(super) fn length(&mut self, mut n: usize) -> Result<(), CodecError> {
        self.room(n / 255 + 1)?;
        while n >= 255 {
            self.buf[self.pos] = 255;
            self.pos += 1;
            n -= 255;
        }
        self.buf[self.pos] = n as u8;
        self.pos += 1;
        Ok(())
    }

    /// A sequence's token with its literal count, and the literals; the
    /// token's position (its match length is filled in later).
    #[inline(always)]
    pub(super) fn literals(&mut self, lits: &[u8]) -> Result<usize, CodecError> {
        self.room(1)?;
        let token = self.pos;
        self.buf[token] = (lits.len().min(RUN_MASK) << 4) as u8;
        self.pos += 1;
        if lits.len() >= RUN_MASK {
            self.length(lits.len() - RUN_MASK)?;
        }
        self.room(lits.len())?;
        self.buf[self.pos..self.pos + lits.len()].copy_from_slice(lits);
        self.pos += lits.len();
        Ok(token)
    }

    /// The match's offset and its length (`len` >= `MINMATCH`).
    #[inline(always)]
    pub(super) fn offset_and_length(
        &mut self,
        token: usize,
        offset: u16,
        len: usize,
    ) -> Result<(), CodecError> {
        self.room(2)?;
        self.buf[self.pos..self.pos + 2].copy_from_slice(&offset.to_le_bytes());
        self.pos += 2;
        let code = len - MINMATCH;
        self.buf[token] |= code.min(ML_MASK) as u8;
        if code >= ML_MASK {
            self.length(code - ML_MASK)?;
        }
        Ok(())
    }

    pub(super) fn last_literals(&mut self, lits: &[u8]) -> Result<(), CodecError> {
        self.literals(lits).map(|_| ())
    }
}

/// Pages for both encoders' tests.
#[cfg(test)]
pub(super) mod test_pages {
    /// xorshift64: the same bytes for the same seed.
    pub fn rng(seed: u64) -> impl FnMut() -> u64 {
        let mut s = seed | 1;
        move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        }
    }

    /// `len` bytes of zram's words in a seeded order: text with many matches.
    pub fn text(len: usize, seed: u64) -> Vec<u8> {
        let words: [&[u8]; 6] = [
            b"slot ", b"handle ", b"zspage ", b"idle ", b"huge ", b"class ",
        ];
        let mut r = rng(seed);
        let mut v = Vec::new();
        while v.len() < len {
            v.extend_from_slice(words[(r() % 6) as usize]);
        }
        v.truncate(len);
        v
    }

    /// A page of segments (zeros, a byte, a word, random bytes, copies of
    /// earlier bytes), so matches occur at many lengths and distances.
    pub fn segments(segs: &[(u8, usize, u64)]) -> Vec<u8> {
        let mut p = Vec::with_capacity(4096);
        for &(kind, len, seed) in segs {
            let mut r = rng(seed);
            for i in 0..len {
                let b = match kind % 5 {
                    0 => 0,
                    1 => seed as u8,
                    2 => (seed >> ((i % 8) * 8)) as u8,
                    3 => r() as u8,
                    _ if !p.is_empty() => p[(seed as usize + i) % p.len()],
                    _ => seed as u8,
                };
                p.push(b);
            }
        }
        p.resize(4096, 0x3c);
        p.truncate(4096);
        p
    }
}
