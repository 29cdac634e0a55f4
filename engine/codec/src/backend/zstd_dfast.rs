//! zstd's double-fast match finder as the kernel's lib/zstd has it
//! (`zstd_double_fast.c`, the no-dictionary block compressor), in the two
//! generations zram's kernels carry, written from their descriptions (not
//! copied) for one page at a time: the sequences (literal length, offset or
//! repcode, match length) it finds, which `zstd_producer.rs` hands to
//! libzstd 1.5.7's entropy stage (the external sequence producer).
//!
//! * [`Finder::V1_5_2`] (Linux 6.2 to 6.14): where 1.5.7 differs (upstream
//!   632677516), when a short match is found at `ip`, a long (8-byte) match
//!   at `ip + 1` replaces it whatever the lengths. Its loop (from 1.5.1 on)
//!   looks one position ahead and grows the step every 256 positions
//!   without a match.
//! * [`Finder::V1_4_10`] (Linux 5.16 to 6.1): the older loop, one position
//!   at a time: the repcode at `ip + 1`, the long match at `ip`, the short
//!   match at `ip` (then a long one at `ip + 1` replaces it, as in 1.5.2);
//!   without a match the step is `((ip - anchor) >> 8) + 1`.
//!
//! Both have two hash tables (long: 8 bytes, `hashLog` bits; small:
//! `minMatch` bytes, `chainLog` bits), backward catch-up, complementary
//! insertion of two positions per match, and the immediate repcode after a
//! match. The first byte of the page is never a match source (`index >
//! prefixLowest`).

/// `kSearchStrength`: the step grows every `1 << 8` positions without a match.
const STEP_INCR: usize = 1 << 8;
/// `HASH_READ_SIZE`: the last 8 bytes are never a search position.
const HASH_READ: usize = 8;

/// The offset code of repcode 1 in a sequence (`offBase` 1); a new offset
/// `o` has the code `o + 3`, as zstd's sequence store keeps them.
pub(super) const REPCODE_1: u32 = 1;

/// One sequence: `lit` literals, then `ml` bytes copied from `off_base`
/// ([`REPCODE_1`], or a new offset plus 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Sequence {
    pub lit: u32,
    pub off_base: u32,
    pub ml: u32,
}

/// Which lib/zstd's double-fast search runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Finder {
    /// lib/zstd 1.4.10 (upstream 20821a46f; Linux 5.16 to 6.1).
    V1_4_10,
    /// lib/zstd 1.5.2 (Linux 6.2 to 6.14).
    V1_5_2,
}

/// The match finder's state: its two hash tables, reused page after page.
pub(super) struct DoubleFast {
    finder: Finder,
    long: Vec<u32>,
    small: Vec<u32>,
    long_log: u32,
    small_log: u32,
    min_match: u32,
    /// The index of the current page's first byte; entries at or below it
    /// (earlier pages, empty slots) are not candidates, as zstd's window.
    base: u32,
}

fn read32(s: &[u8], p: usize) -> u32 {
    u32::from_le_bytes(s[p..p + 4].try_into().expect("4 bytes"))
}

fn read64(s: &[u8], p: usize) -> u64 {
    u64::from_le_bytes(s[p..p + 8].try_into().expect("8 bytes"))
}

/// `ZSTD_hash8Ptr`.
fn hash8(s: &[u8], p: usize, bits: u32) -> usize {
    (read64(s, p).wrapping_mul(0xCF1B_BCDC_B7A5_6463) >> (64 - bits)) as usize
}

/// `ZSTD_hashPtr(p, bits, mls)` for the small table (`mls` 4 to 7).
fn hash_mls(s: &[u8], p: usize, bits: u32, mls: u32) -> usize {
    let wide = |prime: u64, bytes: u32| {
        ((read64(s, p) << (64 - 8 * bytes)).wrapping_mul(prime) >> (64 - bits)) as usize
    };
    match mls {
        5 => wide(889_523_592_379, 5),
        6 => wide(227_718_039_650_203, 6),
        7 => wide(58_295_818_150_454_627, 7),
        _ => (read32(s, p).wrapping_mul(2_654_435_761) >> (32 - bits)) as usize,
    }
}

/// `ZSTD_count`: how many bytes from `a` equal those from `b` (`b < a`),
/// up to the end of `s`.
fn count(s: &[u8], a: usize, b: usize) -> usize {
    let n = s.len();
    let mut k = 0;
    while a + k + 8 <= n {
        let x = read64(s, a + k) ^ read64(s, b + k);
        if x != 0 {
            return k + (x.trailing_zeros() / 8) as usize;
        }
        k += 8;
    }
    while a + k < n && s[a + k] == s[b + k] {
        k += 1;
    }
    k
}

/// What one search from a position found.
enum Found {
    /// The repcode at `ip + 1`, already stored; `ip` moved there.
    Repcode(usize),
    /// A new match at `ip` from `m` of `ml` bytes, before catch-up.
    Match { ip: usize, m: usize, ml: usize },
    /// No match before the end of the page.
    End,
}

impl DoubleFast {
    /// A match finder with zstd's `hashLog` (long table), `chainLog` (small
    /// table) and `minMatch` (clamped to 4..=7 as the block compressor's
    /// templates).
    pub(super) fn new(finder: Finder, hash_log: u32, chain_log: u32, min_match: u32) -> DoubleFast {
        DoubleFast {
            finder,
            long: vec![0; 1 << hash_log],
            small: vec![0; 1 << chain_log],
            long_log: hash_log,
            small_log: chain_log,
            min_match: if (5..=7).contains(&min_match) {
                min_match
            } else {
                4
            },
            base: 1,
        }
    }

    fn hs(&self, s: &[u8], p: usize) -> usize {
        hash_mls(s, p, self.small_log, self.min_match)
    }

    fn hl(&self, s: &[u8], p: usize) -> usize {
        hash8(s, p, self.long_log)
    }

    fn idx(&self, p: usize) -> u32 {
        self.base + p as u32
    }

    /// The candidate an index names in this page, if it is one.
    fn at(&self, index: u32) -> Option<usize> {
        (index > self.base).then(|| (index - self.base) as usize)
    }

    /// Parse one block (a page) into `out`; returns the length of the last
    /// literals. The tables keep the page's positions, which the next page
    /// does not see.
    pub(super) fn parse(&mut self, src: &[u8], out: &mut Vec<Sequence>) -> usize {
        out.clear();
        let n = src.len();
        if self.base as usize > (u32::MAX as usize) - 2 * n - 2 {
            self.long.fill(0);
            self.small.fill(0);
            self.base = 1;
        }
        let last = if n < HASH_READ + 2 {
            n
        } else if self.finder == Finder::V1_4_10 {
            self.search_1_4(src, out)
        } else {
            self.search(src, out)
        };
        self.base += n as u32;
        last
    }

    /// 1.4.10's block compressor: one position per iteration, a match
    /// stored, or the step taken.
    fn search_1_4(&mut self, s: &[u8], out: &mut Vec<Sequence>) -> usize {
        let ilimit = s.len() - HASH_READ;
        let mut anchor = 0;
        // As in `search`: no history at the first position, repcodes 1 only.
        let mut ip = 1;
        let (mut off1, mut off2) = (1usize, 0usize);
        while ip < ilimit {
            let curr = ip;
            let (hl, hs) = (self.hl(s, ip), self.hs(s, ip));
            let (idxl, idxs) = (self.long[hl], self.small[hs]);
            self.long[hl] = self.idx(ip);
            self.small[hs] = self.idx(ip);
            let ml = if off1 > 0 && read32(s, ip + 1 - off1) == read32(s, ip + 1) {
                let ml = count(s, ip + 5, ip + 5 - off1) + 4;
                ip += 1;
                out.push(seq(ip - anchor, REPCODE_1, ml));
                ml
            } else if let Some((at, m, ml)) = self.match_1_4(s, ip, idxl, idxs) {
                let (at, m, ml) = catch_up(s, anchor, at, m, ml);
                off2 = off1;
                off1 = at - m;
                out.push(seq(at - anchor, off1 as u32 + 3, ml));
                ip = at;
                ml
            } else {
                ip += ((ip - anchor) >> 8) + 1;
                continue;
            };
            ip += ml;
            anchor = ip;
            if ip <= ilimit {
                self.insert_after_match(s, curr, ip);
                (ip, off1, off2) = self.immediate_repcodes(s, out, ip, off1, off2);
                anchor = ip;
            }
        }
        s.len() - anchor
    }

    /// 1.4.10's new match at `ip` (its tables already hold `ip`): the long
    /// match there, else the short one, which a long match at `ip + 1`
    /// replaces. `(start, source, length)` before catch-up.
    fn match_1_4(
        &mut self,
        s: &[u8],
        ip: usize,
        idxl: u32,
        idxs: u32,
    ) -> Option<(usize, usize, usize)> {
        if let Some(m) = self.at(idxl).filter(|&m| read64(s, m) == read64(s, ip)) {
            return Some((ip, m, count(s, ip + 8, m + 8) + 8));
        }
        let m = self.at(idxs).filter(|&m| read32(s, m) == read32(s, ip))?;
        let hl1 = self.hl(s, ip + 1);
        let idxl1 = self.long[hl1];
        self.long[hl1] = self.idx(ip + 1);
        Some(
            match self
                .at(idxl1)
                .filter(|&l| read64(s, l) == read64(s, ip + 1))
            {
                Some(l) => (ip + 1, l, count(s, ip + 9, l + 8) + 8),
                None => (ip, m, count(s, ip + 4, m + 4) + 4),
            },
        )
    }

    /// 1.5.2's block compressor: one iteration per match stored.
    fn search(&mut self, s: &[u8], out: &mut Vec<Sequence>) -> usize {
        let ilimit = s.len() - HASH_READ;
        let mut anchor = 0;
        // The first position has no history; the repcodes start at 1, 4, 8,
        // and only those within the bytes before `ip` are kept (1).
        let mut ip = 1;
        let (mut off1, mut off2) = (1usize, 0usize);
        loop {
            let mut step = 1;
            let mut next_step = ip + STEP_INCR;
            let mut ip1 = ip + step;
            if ip1 > ilimit {
                return s.len() - anchor;
            }
            let mut hl0 = self.hl(s, ip);
            let mut idxl0 = self.long[hl0];
            let mut hl1 = hl0;
            let mut curr;
            let found = loop {
                let hs0 = self.hs(s, ip);
                let idxs0 = self.small[hs0];
                curr = ip;
                self.long[hl0] = self.idx(ip);
                self.small[hs0] = self.idx(ip);
                if off1 > 0 && read32(s, ip + 1 - off1) == read32(s, ip + 1) {
                    let ml = count(s, ip + 5, ip + 5 - off1) + 4;
                    ip += 1;
                    out.push(seq(ip - anchor, REPCODE_1, ml));
                    break Found::Repcode(ml);
                }
                hl1 = self.hl(s, ip1);
                if let Some(m) = self.at(idxl0).filter(|&m| read64(s, m) == read64(s, ip)) {
                    break Found::Match {
                        ip,
                        m,
                        ml: count(s, ip + 8, m + 8) + 8,
                    };
                }
                let idxl1 = self.long[hl1];
                if let Some(m) = self.at(idxs0).filter(|&m| read32(s, m) == read32(s, ip)) {
                    // A short match here; a long one at ip + 1 replaces it.
                    break match self.at(idxl1).filter(|&l| read64(s, l) == read64(s, ip1)) {
                        Some(l) => Found::Match {
                            ip: ip1,
                            m: l,
                            ml: count(s, ip1 + 8, l + 8) + 8,
                        },
                        None => Found::Match {
                            ip,
                            m,
                            ml: count(s, ip + 4, m + 4) + 4,
                        },
                    };
                }
                if ip1 >= next_step {
                    step += 1;
                    next_step += STEP_INCR;
                }
                ip = ip1;
                ip1 += step;
                hl0 = hl1;
                idxl0 = idxl1;
                if ip1 > ilimit {
                    break Found::End;
                }
            };
            let ml = match found {
                Found::End => return s.len() - anchor,
                Found::Repcode(ml) => ml,
                Found::Match { ip: at, m, ml } => {
                    let (at, m, ml) = catch_up(s, anchor, at, m, ml);
                    off2 = off1;
                    off1 = at - m;
                    if step < 4 {
                        self.long[hl1] = self.idx(ip1);
                    }
                    out.push(seq(at - anchor, off1 as u32 + 3, ml));
                    ip = at;
                    ml
                }
            };
            ip += ml;
            anchor = ip;
            if ip <= ilimit {
                self.insert_after_match(s, curr, ip);
                (ip, off1, off2) = self.immediate_repcodes(s, out, ip, off1, off2);
                anchor = ip;
            }
        }
    }

    /// Complementary insertion: the position two after the search's and the
    /// two before the match's end.
    fn insert_after_match(&mut self, s: &[u8], curr: usize, ip: usize) {
        let ins = curr + 2;
        let h = self.hl(s, ins);
        self.long[h] = self.idx(ins);
        let h = self.hl(s, ip - 2);
        self.long[h] = self.idx(ip - 2);
        let h = self.hs(s, ins);
        self.small[h] = self.idx(ins);
        let h = self.hs(s, ip - 1);
        self.small[h] = self.idx(ip - 1);
    }

    /// Repcode 2 right after a match, as often as it matches (no literals;
    /// it swaps the two repcodes). Returns the new position and repcodes.
    fn immediate_repcodes(
        &mut self,
        s: &[u8],
        out: &mut Vec<Sequence>,
        mut ip: usize,
        mut off1: usize,
        mut off2: usize,
    ) -> (usize, usize, usize) {
        let ilimit = s.len() - HASH_READ;
        while ip <= ilimit && off2 > 0 && read32(s, ip) == read32(s, ip - off2) {
            let rl = count(s, ip + 4, ip + 4 - off2) + 4;
            std::mem::swap(&mut off1, &mut off2);
            let h = self.hs(s, ip);
            self.small[h] = self.idx(ip);
            let h = self.hl(s, ip);
            self.long[h] = self.idx(ip);
            out.push(seq(0, REPCODE_1, rl));
            ip += rl;
        }
        (ip, off1, off2)
    }
}

fn seq(lit: usize, off_base: u32, ml: usize) -> Sequence {
    Sequence {
        lit: lit as u32,
        off_base,
        ml: ml as u32,
    }
}

/// Extend a match found at `at` (from `m`, `ml` bytes) backwards while the
/// bytes before both agree, never before `anchor` (both finders' catch-up).
fn catch_up(
    s: &[u8],
    anchor: usize,
    mut at: usize,
    mut m: usize,
    mut ml: usize,
) -> (usize, usize, usize) {
    while at > anchor && m > 0 && s[at - 1] == s[m - 1] {
        at -= 1;
        m -= 1;
        ml += 1;
    }
    (at, m, ml)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decode the sequences back into the page: every match copies bytes
    /// that equal the page's, and the lengths cover it.
    fn replay(src: &[u8], seqs: &[Sequence], last: usize) -> Vec<u8> {
        let (mut out, mut pos) = (Vec::new(), 0usize);
        let (mut off1, mut off2) = (1usize, 4usize);
        for q in seqs {
            out.extend_from_slice(&src[pos..pos + q.lit as usize]);
            pos += q.lit as usize;
            let off = if q.off_base == REPCODE_1 {
                if q.lit == 0 {
                    std::mem::swap(&mut off1, &mut off2);
                }
                off1
            } else {
                off2 = off1;
                off1 = (q.off_base - 3) as usize;
                off1
            };
            assert!(off >= 1 && off <= out.len(), "offset {off} at {pos}");
            for _ in 0..q.ml {
                out.push(out[out.len() - off]);
            }
            pos += q.ml as usize;
        }
        out.extend_from_slice(&src[pos..pos + last]);
        out
    }

    fn pages() -> Vec<Vec<u8>> {
        let text: Vec<u8> = b"the quick brown fox jumps over the lazy dog; "
            .iter()
            .copied()
            .cycle()
            .take(4096)
            .collect();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut noise = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let random: Vec<u8> = (0..4096).map(|_| noise() as u8).collect();
        let mixed: Vec<u8> = (0..4096u32)
            .map(|i| {
                if i % 64 < 40 {
                    (i / 64) as u8
                } else {
                    noise() as u8 & 3
                }
            })
            .collect();
        let words = [
            &b"slot "[..],
            b"handle ",
            b"zspage ",
            b"size class ",
            b"huge ",
            b"idle ",
        ];
        let prose: Vec<u8> = std::iter::repeat_with(|| {
            let x = noise();
            let mut w = words[(x % 6) as usize].to_vec();
            w.push(b'0' + (x >> 8) as u8 % 10);
            w
        })
        .flatten()
        .take(4096)
        .collect();
        vec![text, random, mixed, vec![7u8; 4096], prose]
    }

    #[test]
    fn sequences_rebuild_the_page() {
        for (finder, mls) in [(Finder::V1_5_2, 4), (Finder::V1_4_10, 5)] {
            let mut df = DoubleFast::new(finder, 13, 12, mls);
            let mut seqs = Vec::new();
            for page in pages().iter().chain(pages().iter()) {
                let last = df.parse(page, &mut seqs);
                assert_eq!(&replay(page, &seqs, last), page, "{finder:?}");
            }
        }
    }

    /// The two generations parse the same page differently: 1.4.10 looks at
    /// every position until the step grows, 1.5.2 one ahead.
    #[test]
    fn the_generations_differ() {
        let parse = |finder, page: &[u8]| {
            let mut df = DoubleFast::new(finder, 13, 12, 5);
            let mut seqs = Vec::new();
            let last = df.parse(page, &mut seqs);
            (seqs, last)
        };
        let differ: Vec<usize> = pages()
            .iter()
            .enumerate()
            .filter(|(_, p)| parse(Finder::V1_4_10, p) != parse(Finder::V1_5_2, p))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(differ, [4], "only the prose page");
    }

    #[test]
    fn repeated_text_is_matches_and_random_is_literals() {
        let mut df = DoubleFast::new(Finder::V1_5_2, 13, 12, 4);
        let mut seqs = Vec::new();
        let p = pages();
        assert_eq!(df.parse(&p[1], &mut seqs), 4096, "random: all literals");
        assert!(seqs.is_empty());
        df.parse(&p[0], &mut seqs);
        let matched: u32 = seqs.iter().map(|q| q.ml).sum();
        assert!(matched > 3900, "text: {matched} bytes matched");
    }

    #[test]
    fn a_page_does_not_match_the_previous_one() {
        for finder in [Finder::V1_5_2, Finder::V1_4_10] {
            let mut df = DoubleFast::new(finder, 13, 12, 4);
            let mut seqs = Vec::new();
            let random = &pages()[1];
            df.parse(random, &mut seqs);
            assert_eq!(df.parse(random, &mut seqs), 4096, "{finder:?}");
        }
    }
}
