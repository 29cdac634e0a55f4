//! The LZ4HC encoder as the kernel's `lib/lz4/lz4hc_compress.c` runs it (the
//! LZ4 1.7.3 lineage, in the kernel since 4.11): a hash chain over 4-byte
//! sequences with no optimal parser, so a page compresses to exactly the bytes
//! zram's `lz4hc` stores. liblz4 1.10 writes other bytes at every level (its
//! levels 10..=12 use the optimal parser, and its chain search differs).
//!
//! What the output depends on:
//! * a hash table of 2^15 u32 positions, hash `(u32_le * 2654435761) >> 17`,
//!   and a chain table of 2^16 u16 back-distances indexed by the position's
//!   low 16 bits (capped at 65535, which ends a chain);
//! * positions are indices in a virtual space where the input starts at
//!   64 KiB (the dictionary, when there is one, right before it), so an empty
//!   hash entry (0) is below every window;
//! * `1 << (level - 1)` chain steps per search;
//! * the parse: a first match, then a wider match searched from 2 bytes
//!   before its end, then a third from 3 bytes before the second's end,
//!   with the "empirical" back-off and the `OPTIMAL_ML` (18) overlap
//!   corrections; the search stops `MFLIMIT` (12) bytes before the end and
//!   matches stop `LASTLITERALS` (5) bytes before it;
//! * a dictionary (`dict=`, 6.12's `backend_lz4hc.c`): its last 64 KiB are
//!   loaded as `LZ4_loadDictHC` does, then the page is compressed as
//!   `LZ4_compress_HC_continue` does with the dictionary as an external block.

use crate::CodecError;

const HASH_LOG: u32 = 15;
const HASH_SIZE: usize = 1 << HASH_LOG;
const CHAIN_SIZE: usize = 1 << 16;
/// Where the input (or the dictionary) starts in the index space (`64 * KB`).
const WINDOW: u32 = 64 * 1024;
// MAX_DISTANCE is also the cap of a chain delta.
use super::super::lz4_block::{count, read32, Out, MAX_DISTANCE, MINMATCH, ML_MASK};
pub(super) use super::super::lz4_block::{DICT_MAX, LASTLITERALS, MFLIMIT};

/// `OPTIMAL_ML`: the longest match length that fits the token.
const OPTIMAL_ML: usize = ML_MASK - 1 + MINMATCH;

/// Chain steps per search at `level` (1..=12, checked by the backend), as
/// `LZ4HC_compress_generic` computes them.
pub fn attempts(level: i32) -> u32 {
    1 << (level.clamp(1, 12) - 1)
}

#[inline]
fn hash(v: u32) -> usize {
    (v.wrapping_mul(2_654_435_761) >> (32 - HASH_LOG)) as usize
}

/// The input and the optional external dictionary, in the index space.
struct Window<'a> {
    dict: &'a [u8],
    src: &'a [u8],
    /// `dictLimit`: the index of `src[0]` (the dictionary is below it).
    prefix: u32,
    /// `matchlimit`: matches end before this input position.
    match_limit: usize,
}

impl Window<'_> {
    /// The lowest index a search at input position `ip` may reach.
    #[inline]
    fn low(&self, ip: usize) -> u32 {
        let at = self.prefix + ip as u32;
        if WINDOW + WINDOW > at {
            WINDOW
        } else {
            at - (WINDOW - 1)
        }
    }
}

/// A found match: its length, the index it copies from, where it starts.
#[derive(Clone, Copy)]
struct Match {
    len: usize,
    from: u32,
    start: usize,
}

/// The hash and chain tables, reused for every page of one stream.
pub struct HcCompressor {
    hash: Box<[u32]>,
    chain: Box<[u16]>,
    next: u32,
    attempts: u32,
    /// With a dictionary: the tables after loading it, copied in per page.
    dict: Option<LoadedDict>,
}

/// A dictionary's last 64 KiB and the hash and chain tables after
/// `LZ4_loadDictHC` inserted them.
struct LoadedDict {
    bytes: Vec<u8>,
    hash: Box<[u32]>,
    chain: Box<[u16]>,
}

impl HcCompressor {
    /// A compressor for `level`, with the dictionary's last 64 KiB if any.
    pub fn new(level: i32, dict: Option<&[u8]>) -> Self {
        let mut c = HcCompressor {
            hash: vec![0u32; HASH_SIZE].into_boxed_slice(),
            chain: vec![0xffffu16; CHAIN_SIZE].into_boxed_slice(),
            next: WINDOW,
            attempts: attempts(level),
            dict: None,
        };
        if let Some(d) = dict {
            let d = &d[d.len().saturating_sub(DICT_MAX)..];
            // LZ4_loadDictHC: every dictionary position with 4 bytes after it.
            if d.len() >= 4 {
                for pos in 0..d.len() - 3 {
                    c.insert_at(WINDOW + pos as u32, read32(d, pos));
                }
            }
            c.dict = Some(LoadedDict {
                bytes: d.to_vec(),
                hash: c.hash.clone(),
                chain: c.chain.clone(),
            });
        }
        c
    }

    #[inline]
    fn insert_at(&mut self, idx: u32, v: u32) {
        let h = hash(v);
        let delta = (idx - self.hash[h]).min(MAX_DISTANCE);
        self.chain[idx as u16 as usize] = delta as u16;
        self.hash[h] = idx;
    }

    /// `LZ4HC_Insert`: every input position below `ip` into the tables.
    #[inline]
    fn insert(&mut self, w: &Window, ip: usize) {
        let target = w.prefix + ip as u32;
        while self.next < target {
            let pos = (self.next - w.prefix) as usize;
            self.insert_at(self.next, read32(w.src, pos));
            self.next += 1;
        }
    }

    /// Length of a match of `src[ip..]` against the dictionary at `m`,
    /// continuing into the input when it reaches the dictionary's end.
    #[inline]
    fn dict_len(w: &Window, ip: usize, m: u32) -> usize {
        let dpos = (m - WINDOW) as usize;
        let vlimit = (ip + (w.prefix - m) as usize).min(w.match_limit);
        let mut len = MINMATCH + count(w.src, ip + MINMATCH, w.dict, dpos + MINMATCH, vlimit);
        if ip + len == vlimit && vlimit < w.match_limit {
            len += count(w.src, ip + len, w.src, 0, w.match_limit);
        }
        len
    }

    /// `LZ4HC_InsertAndFindBestMatch`: the longest match at `ip`, or none.
    fn best_match(&mut self, w: &Window, ip: usize) -> Option<(usize, u32)> {
        self.insert(w, ip);
        let low = w.low(ip);
        let here = read32(w.src, ip);
        let mut m = self.hash[hash(here)];
        let (mut ml, mut from) = (0usize, 0u32);
        let mut left = self.attempts;
        while m >= low && left > 0 {
            left -= 1;
            if m >= w.prefix {
                let mp = (m - w.prefix) as usize;
                if w.src[mp + ml] == w.src[ip + ml] && read32(w.src, mp) == here {
                    let len =
                        MINMATCH + count(w.src, ip + MINMATCH, w.src, mp + MINMATCH, w.match_limit);
                    if len > ml {
                        (ml, from) = (len, m);
                    }
                }
            } else if read32(w.dict, (m - WINDOW) as usize) == here {
                let len = Self::dict_len(w, ip, m);
                if len > ml {
                    (ml, from) = (len, m);
                }
            }
            m -= u32::from(self.chain[m as u16 as usize]);
        }
        (ml > 0).then_some((ml, from))
    }

    /// `LZ4HC_InsertAndGetWiderMatch`: a match at `ip`, extended back to no
    /// further than `low_ip`, longer than `longest`; `None` if there is none.
    fn wider_match(
        &mut self,
        w: &Window,
        ip: usize,
        low_ip: usize,
        longest: usize,
    ) -> Option<Match> {
        self.insert(w, ip);
        let low = w.low(ip);
        let here = read32(w.src, ip);
        let delta = ip - low_ip;
        let mut m = self.hash[hash(here)];
        let mut best: Option<Match> = None;
        let mut longest = longest;
        let mut left = self.attempts;
        while m >= low && left > 0 {
            left -= 1;
            if m >= w.prefix {
                let mp = (m - w.prefix) as usize;
                if w.src[low_ip + longest] == w.src[mp + longest - delta]
                    && read32(w.src, mp) == here
                {
                    let mut len =
                        MINMATCH + count(w.src, ip + MINMATCH, w.src, mp + MINMATCH, w.match_limit);
                    let mut back = 0;
                    while ip - back > low_ip
                        && mp > back
                        && w.src[ip - back - 1] == w.src[mp - back - 1]
                    {
                        back += 1;
                    }
                    len += back;
                    if len > longest {
                        longest = len;
                        best = Some(Match {
                            len,
                            from: m - back as u32,
                            start: ip - back,
                        });
                    }
                }
            } else {
                let dpos = (m - WINDOW) as usize;
                if read32(w.dict, dpos) == here {
                    let mut len = Self::dict_len(w, ip, m);
                    let mut back = 0;
                    while ip - back > low_ip
                        && m - back as u32 > low
                        && w.src[ip - back - 1] == w.dict[dpos - back - 1]
                    {
                        back += 1;
                    }
                    len += back;
                    if len > longest {
                        longest = len;
                        best = Some(Match {
                            len,
                            from: m - back as u32,
                            start: ip - back,
                        });
                    }
                }
            }
            m -= u32::from(self.chain[m as u16 as usize]);
        }
        best
    }

    /// Compress `src` into `dst`; the length written.
    pub fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CodecError> {
        let prefix = match &self.dict {
            None => {
                // The chain is only read at positions inserted for this input,
                // so only the hash table needs clearing.
                self.hash.fill(0);
                WINDOW
            }
            Some(d) => {
                self.hash.copy_from_slice(&d.hash);
                self.chain.copy_from_slice(&d.chain);
                WINDOW + d.bytes.len() as u32
            }
        };
        self.next = prefix;
        let dict = self.dict.take();
        let w = Window {
            dict: dict.as_ref().map_or(&[][..], |d| d.bytes.as_slice()),
            src,
            prefix,
            match_limit: src.len().saturating_sub(LASTLITERALS),
        };
        let mut out = Out { buf: dst, pos: 0 };
        let r = self.parse(&w, &mut out);
        self.dict = dict;
        r.map(|()| out.pos)
    }

    /// `LZ4HC_compress_generic`'s parse: sequences, then the last literals.
    fn parse(&mut self, w: &Window, out: &mut Out) -> Result<(), CodecError> {
        let src = w.src;
        let mflimit = src.len().saturating_sub(MFLIMIT);
        let mut anchor = 0usize;
        let mut ip = 1usize;
        'main: while ip < mflimit {
            let Some((first_len, first_from)) = self.best_match(w, ip) else {
                ip += 1;
                continue;
            };
            let (mut ml, mut r) = (first_len, first_from);
            // Saved in case the search skips too much.
            let (mut start0, mut ref0, mut ml0) = (ip, r, ml);
            'search2: loop {
                let m2 = if ip + ml < mflimit {
                    self.wider_match(w, ip + ml - 2, ip, ml)
                } else {
                    None
                };
                let Some(mut m2) = m2 else {
                    out.sequence(w, &mut anchor, ip, ml, r)?;
                    ip += ml;
                    continue 'main;
                };
                if start0 < ip && m2.start < ip + ml0 {
                    (ip, r, ml) = (start0, ref0, ml0);
                }
                if m2.start - ip < 3 {
                    // The first match is too short: the second replaces it.
                    (ml, ip, r) = (m2.len, m2.start, m2.from);
                    continue 'search2;
                }
                loop {
                    // _Search3: ml2 > ml and ip + 3 <= start2.
                    if m2.start - ip < OPTIMAL_ML {
                        let mut new_ml = ml.min(OPTIMAL_ML);
                        if ip + new_ml > m2.start + m2.len - MINMATCH {
                            new_ml = m2.start - ip + m2.len - MINMATCH;
                        }
                        let correction = new_ml as isize - (m2.start - ip) as isize;
                        if correction > 0 {
                            m2.shift(correction as usize);
                        }
                    }
                    let m3 = if m2.start + m2.len < mflimit {
                        self.wider_match(w, m2.start + m2.len - 3, m2.start, m2.len)
                    } else {
                        None
                    };
                    let Some(m3) = m3 else {
                        // No better match: two sequences.
                        if m2.start < ip + ml {
                            ml = m2.start - ip;
                        }
                        out.sequence(w, &mut anchor, ip, ml, r)?;
                        out.sequence(w, &mut anchor, m2.start, m2.len, m2.from)?;
                        ip = m2.start + m2.len;
                        continue 'main;
                    };
                    if m3.start < ip + ml + 3 {
                        // No room for the second match: drop it.
                        if m3.start >= ip + ml {
                            if m2.start < ip + ml {
                                m2.shift(ip + ml - m2.start);
                                if m2.len < MINMATCH {
                                    m2 = m3;
                                }
                            }
                            out.sequence(w, &mut anchor, ip, ml, r)?;
                            (ip, r, ml) = (m3.start, m3.from, m3.len);
                            (start0, ref0, ml0) = (m2.start, m2.from, m2.len);
                            continue 'search2;
                        }
                        m2 = m3;
                        continue;
                    }
                    // Three ascending matches: write the first.
                    if m2.start < ip + ml {
                        if m2.start - ip < ML_MASK {
                            ml = ml.min(OPTIMAL_ML);
                            if ip + ml > m2.start + m2.len - MINMATCH {
                                ml = m2.start - ip + m2.len - MINMATCH;
                            }
                            let correction = ml as isize - (m2.start - ip) as isize;
                            if correction > 0 {
                                m2.shift(correction as usize);
                            }
                        } else {
                            ml = m2.start - ip;
                        }
                    }
                    out.sequence(w, &mut anchor, ip, ml, r)?;
                    (ip, r, ml) = (m2.start, m2.from, m2.len);
                    m2 = m3;
                }
            }
        }
        out.last_literals(&src[anchor..])
    }
}

impl Match {
    /// Move the start forward by `by` bytes (the match keeps its offset); a
    /// length that would go below 0 becomes 0 (the caller then drops it).
    #[inline]
    fn shift(&mut self, by: usize) {
        self.start += by;
        self.from += by as u32;
        self.len = self.len.saturating_sub(by);
    }
}

impl Out<'_> {
    /// `LZ4HC_encodeSequence`: the literals from `anchor` to `ip`, then a
    /// match of `len` bytes copied from index `from`.
    fn sequence(
        &mut self,
        w: &Window,
        anchor: &mut usize,
        ip: usize,
        len: usize,
        from: u32,
    ) -> Result<(), CodecError> {
        let token = self.literals(&w.src[*anchor..ip])?;
        let offset = (w.prefix + ip as u32 - from) as u16;
        self.offset_and_length(token, offset, len)?;
        *anchor = ip + len;
        Ok(())
    }
}
