//! The LZ4 fast encoder as the kernel's `lib/lz4/lz4_compress.c` runs it
//! (`LZ4_compress_fast`, the LZ4 1.7.3 lineage imported in 4.11 and the
//! same in every kernel to at least 7.3), so a page compresses to exactly
//! the bytes zram's `lz4` stores. liblz4 1.10's search differs in details
//! (it probes one position closer to the end, for one) and writes other
//! bytes on some pages.
//!
//! What the output depends on:
//! * one hash table, no chain: the last position seen for each hash. A page
//!   (under 64 KiB) uses 2^13 u16 entries and the 4-byte hash
//!   `(u32_le * 2654435761) >> 19`, zeroed for each page;
//! * the skip: after `acceleration << 6` failed probes the step grows by one
//!   every 64 probes (`LZ4_SKIPTRIGGER`);
//! * the search stops when the next probe would pass `MFLIMIT` (12) bytes
//!   before the end; matches end `LASTLITERALS` (5) bytes before it; a match
//!   is extended backwards over equal bytes down to the previous sequence's
//!   end ("catch up"); after a match, `end - 2` is inserted and `end` is tried
//!   at once for a match with no literals;
//! * a dictionary (`dict=`, 6.12's `backend_lz4.c`): `LZ4_loadDict` inserts
//!   every third position of its last 64 KiB into a table of 2^12 u32 entries
//!   with the 5-byte hash `((u64_le << 24) * 889523592379) >> 52`; each page
//!   starts from a copy of that table and is compressed as
//!   `LZ4_compress_fast_continue` does with the dictionary as an external
//!   block (positions 64 KiB + i for the dictionary, 64 KiB + dictionary
//!   length + i for the page; a candidate farther than 65535 bytes or below
//!   the dictionary is refused).
//!
//! The destination is checked exactly: the kernel's output-limited mode
//! refuses a little earlier, but zram gives it two pages, so it never is.

use crate::CodecError;

use super::super::lz4_block::{count, read32, read64, Out, MAX_DISTANCE, MINMATCH};
pub(super) use super::super::lz4_block::{DICT_MAX, LASTLITERALS, MFLIMIT};

/// `LZ4_minLength`: shorter inputs are written as literals only.
const MIN_LENGTH: usize = MFLIMIT + 1;
const SKIP_TRIGGER: u32 = 6;
/// `LZ4_HASHLOG` (`LZ4_MEMORY_USAGE` 14 - 2): the u32 table's hash bits.
const HASH_LOG: u32 = 12;
/// The largest input the u16 table serves (`LZ4_64Klimit` - 1).
pub const MAX_INPUT: usize = 64 * 1024 + MFLIMIT - 2;
/// `HASH_UNIT`: a dictionary position is inserted when 8 bytes follow it.
const HASH_UNIT: usize = 8;
/// Where the dictionary starts in the index space (`64 * KB`).
const DICT_BASE: u32 = 64 * 1024;

/// The hash table: 2^13 u16 entries without a dictionary (`byU16`), 2^12
/// u32 entries with one (`byU32` on a 64-bit kernel).
trait Table {
    fn hash(src: &[u8], at: usize) -> usize;
    fn get(&self, h: usize) -> u32;
    fn put(&mut self, h: usize, idx: u32);
}

struct U16Table(Box<[u16]>);
struct U32Table(Box<[u32]>);

impl Table for U16Table {
    #[inline(always)]
    fn hash(src: &[u8], at: usize) -> usize {
        (read32(src, at).wrapping_mul(2_654_435_761) >> (32 - (HASH_LOG + 1))) as usize
    }
    #[inline(always)]
    fn get(&self, h: usize) -> u32 {
        u32::from(self.0[h])
    }
    #[inline(always)]
    fn put(&mut self, h: usize, idx: u32) {
        self.0[h] = idx as u16;
    }
}

impl Table for U32Table {
    #[inline(always)]
    fn hash(src: &[u8], at: usize) -> usize {
        ((read64(src, at) << 24).wrapping_mul(889_523_592_379) >> (64 - HASH_LOG)) as usize
    }
    #[inline(always)]
    fn get(&self, h: usize) -> u32 {
        self.0[h]
    }
    #[inline(always)]
    fn put(&mut self, h: usize, idx: u32) {
        self.0[h] = idx;
    }
}

/// Where a table entry points: into the page or into the dictionary.
#[derive(Clone, Copy)]
enum Ref {
    Src(usize),
    Dict(usize),
}

/// The page and the optional external dictionary, in the index space.
struct Window<'a> {
    src: &'a [u8],
    dict: &'a [u8],
    /// The index of `src[0]` (0 without a dictionary).
    prefix: u32,
    /// `matchlimit`: matches end before this position.
    match_limit: usize,
    /// `mflimit`: no search, and no match start, past this position.
    mf_limit: usize,
}

impl Window<'_> {
    /// The candidate at index `m` for a match at `ip`, if it may be used:
    /// not below the dictionary, not farther than `MAX_DISTANCE`, and its
    /// first 4 bytes equal those at `ip`.
    #[inline(always)]
    fn candidate(&self, m: u32, ip: usize) -> Option<Ref> {
        let here = self.prefix + ip as u32;
        if m + MAX_DISTANCE < here {
            return None;
        }
        let r = if m >= self.prefix {
            Ref::Src((m - self.prefix) as usize)
        } else {
            let dict_start = self.prefix - self.dict.len() as u32;
            if m < dict_start {
                return None;
            }
            Ref::Dict((m - dict_start) as usize)
        };
        let v = match r {
            Ref::Src(p) => read32(self.src, p),
            Ref::Dict(p) => read32(self.dict, p),
        };
        (v == read32(self.src, ip)).then_some(r)
    }

    /// The match length at `ip` against `r` (at least `MINMATCH`); a match
    /// that reaches the dictionary's end continues into the page's start.
    #[inline(always)]
    fn match_len(&self, ip: usize, r: Ref) -> usize {
        match r {
            Ref::Src(p) => {
                MINMATCH
                    + count(
                        self.src,
                        ip + MINMATCH,
                        self.src,
                        p + MINMATCH,
                        self.match_limit,
                    )
            }
            Ref::Dict(p) => {
                let limit = (ip + self.dict.len() - p).min(self.match_limit);
                let mut len =
                    MINMATCH + count(self.src, ip + MINMATCH, self.dict, p + MINMATCH, limit);
                if ip + len == limit {
                    len += count(self.src, ip + len, self.src, 0, self.match_limit);
                }
                len
            }
        }
    }
}

/// The compressor of one stream: its table, reused page after page.
pub struct FastCompressor {
    acceleration: u32,
    table: U16Table,
    dict: Option<LoadedDict>,
}

/// A dictionary's last 64 KiB and the table after `LZ4_loadDict`, copied
/// into `work` for each page.
struct LoadedDict {
    bytes: Vec<u8>,
    loaded: Box<[u32]>,
    work: U32Table,
}

impl FastCompressor {
    /// A compressor at `acceleration` (below 1 is 1, as the kernel has it),
    /// with the dictionary's last 64 KiB if any (one shorter than 8 bytes
    /// loads nothing, as `LZ4_loadDict`).
    pub fn new(acceleration: i32, dict: Option<&[u8]>) -> Self {
        let dict = dict.filter(|d| d.len() >= HASH_UNIT).map(|d| {
            let d = &d[d.len().saturating_sub(DICT_MAX)..];
            let mut t = U32Table(vec![0u32; 1 << HASH_LOG].into_boxed_slice());
            for p in (0..=d.len() - HASH_UNIT).step_by(3) {
                t.put(U32Table::hash(d, p), DICT_BASE + p as u32);
            }
            LoadedDict {
                bytes: d.to_vec(),
                loaded: t.0.clone(),
                work: t,
            }
        });
        FastCompressor {
            acceleration: acceleration.max(1) as u32,
            table: U16Table(vec![0u16; 1 << (HASH_LOG + 1)].into_boxed_slice()),
            dict,
        }
    }

    /// Compress `src` (at most [`MAX_INPUT`] bytes) into `dst`; the length
    /// written.
    pub fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, CodecError> {
        if src.len() > MAX_INPUT {
            return Err(CodecError::InvalidInput {
                algo: "lz4",
                reason: format!("input is {} bytes, at most {MAX_INPUT}", src.len()),
            });
        }
        let mut out = Out { buf: dst, pos: 0 };
        let accel = self.acceleration;
        match &mut self.dict {
            None => {
                self.table.0.fill(0);
                let w = Window {
                    src,
                    dict: &[],
                    prefix: 0,
                    match_limit: src.len().saturating_sub(LASTLITERALS),
                    mf_limit: src.len().saturating_sub(MFLIMIT),
                };
                encode(&mut self.table, &w, accel, &mut out)?;
            }
            Some(d) => {
                d.work.0.copy_from_slice(&d.loaded);
                let w = Window {
                    src,
                    dict: &d.bytes,
                    prefix: DICT_BASE + d.bytes.len() as u32,
                    match_limit: src.len().saturating_sub(LASTLITERALS),
                    mf_limit: src.len().saturating_sub(MFLIMIT),
                };
                encode(&mut d.work, &w, accel, &mut out)?;
            }
        }
        Ok(out.pos)
    }
}

/// `LZ4_compress_generic`: sequences, then the last literals.
fn encode<T: Table>(t: &mut T, w: &Window, accel: u32, out: &mut Out) -> Result<(), CodecError> {
    let src = w.src;
    let mut anchor = 0usize;
    if src.len() < MIN_LENGTH {
        return out.last_literals(src);
    }
    t.put(T::hash(src, 0), w.prefix);
    let mut ip = 1usize;
    let mut forward_h = T::hash(src, ip);
    'seq: loop {
        // Find a match, probing further apart after each 64 failures.
        let mut forward = ip;
        let mut step = 1usize;
        let mut probes = accel << SKIP_TRIGGER;
        let mut r = loop {
            let h = forward_h;
            ip = forward;
            forward += step;
            step = (probes >> SKIP_TRIGGER) as usize;
            probes += 1;
            if forward > w.mf_limit {
                break 'seq;
            }
            let m = t.get(h);
            forward_h = T::hash(src, forward);
            t.put(h, w.prefix + ip as u32);
            if let Some(r) = w.candidate(m, ip) {
                break r;
            }
        };
        // Catch up: extend backwards over equal bytes.
        loop {
            let prev = match r {
                Ref::Src(p) if p > 0 => src[p - 1],
                Ref::Dict(p) if p > 0 => w.dict[p - 1],
                _ => break,
            };
            if ip <= anchor || src[ip - 1] != prev {
                break;
            }
            ip -= 1;
            r = match r {
                Ref::Src(p) => Ref::Src(p - 1),
                Ref::Dict(p) => Ref::Dict(p - 1),
            };
        }
        let mut token = out.literals(&src[anchor..ip])?;
        loop {
            let len = w.match_len(ip, r);
            out.offset_and_length(token, w.distance(ip, r), len)?;
            ip += len;
            anchor = ip;
            if ip > w.mf_limit {
                break 'seq;
            }
            t.put(T::hash(src, ip - 2), w.prefix + ip as u32 - 2);
            // The end of the match may start the next one, with no literals.
            let h = T::hash(src, ip);
            let m = t.get(h);
            t.put(h, w.prefix + ip as u32);
            match w.candidate(m, ip) {
                Some(next) => {
                    r = next;
                    token = out.literals(&[])?;
                }
                None => break,
            }
        }
        ip += 1;
        forward_h = T::hash(src, ip);
    }
    out.last_literals(&src[anchor..])
}

impl Window<'_> {
    /// The offset of a match at `ip` against `r`.
    #[inline(always)]
    fn distance(&self, ip: usize, r: Ref) -> u16 {
        let from = match r {
            Ref::Src(p) => self.prefix + p as u32,
            Ref::Dict(p) => self.prefix - (self.dict.len() - p) as u32,
        };
        (self.prefix + ip as u32 - from) as u16
    }
}
