//! The LZO1X-1 encoder with the kernel's parameters (`lib/lzo/lzo1x_compress.c`).
//!
//! What makes the output byte-exact with the kernel (see `docs/lzo.md`):
//! * dictionary of `2^13` u16 positions, zeroed per chunk; an empty entry is
//!   position 0 of the chunk, which is compared like any other candidate;
//! * hash `(dv * 0x1824429d) >> 19` of the little-endian u32 at the position;
//! * the first position tried is 5 (4, then one literal step), every miss
//!   advances by `1 + (literal run so far >> 5)`, and the search stops 20 bytes
//!   before the chunk end (those bytes are always literals);
//! * a candidate is taken when its 4 bytes equal; the match is extended
//!   8 bytes at a time and stops as soon as its end passes `ip_end`;
//! * lzo-rle: 4 zero bytes at the position start a zero run (no hash look-up,
//!   no dictionary update), bounded by `ip_end` and by 2051 bytes;
//! * inputs over 0xbfff (0xbffe) bytes are cut into chunks with a literal carry.

use super::{
    M2_MAX_LEN, M2_MAX_OFFSET, M3_MARKER, M3_MAX_LEN, M3_MAX_OFFSET, M4_MARKER, M4_MAX_LEN,
    M4_MAX_OFFSET_V0, M4_MAX_OFFSET_V1, MAX_ZERO_RUN_LENGTH, MIN_ZERO_RUN_LENGTH, RLE_VERSION,
    VERSION_MARKER,
};
use crate::CodecError;

/// `D_BITS`: the kernel's dictionary has 2^13 entries (userspace liblzo: 2^14).
pub const D_BITS: u32 = 13;
/// Entries in the dictionary.
pub const D_SIZE: usize = 1 << D_BITS;
/// The multiplicative hash constant of LZO1X-1.
const HASH_MULTIPLIER: u32 = 0x1824_429d;
/// Bytes at the end of a chunk that the match search never starts in.
const TAIL: usize = 20;
/// The encoder may copy literals 16 bytes at a time past the end of the run;
/// a direct destination needs this much room beyond the worst case.
const OVERCOPY: usize = 16;

/// `lzo1x_worst_compress(n)` plus the two version bytes of lzo-rle: no
/// input of `n` bytes compresses to more.
pub const fn worst_compress(n: usize) -> usize {
    n + n / 16 + 64 + 3 + 2
}

/// A reusable encoder: the dictionary (the kernel's wrkmem) and a scratch
/// output for destinations smaller than the worst case.
pub struct Compressor {
    dict: Box<[u16; D_SIZE]>,
    scratch: Vec<u8>,
}

impl Default for Compressor {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Compressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compressor")
            .field("d_bits", &D_BITS)
            .finish()
    }
}

impl Compressor {
    /// A new encoder with its dictionary allocated (16 KiB).
    pub fn new() -> Self {
        Compressor {
            dict: Box::new([0u16; D_SIZE]),
            scratch: Vec::new(),
        }
    }

    /// Compress `src` (any length) into `dst`; `rle` selects lzo-rle
    /// (bitstream version 1) over plain lzo. Returns the compressed length,
    /// or [`CodecError::DstTooSmall`] if the result does not fit in `dst`.
    pub fn compress(&mut self, src: &[u8], dst: &mut [u8], rle: bool) -> Result<usize, CodecError> {
        let need = worst_compress(src.len()) + OVERCOPY;
        if dst.len() >= need {
            return Ok(encode(src, dst, &mut self.dict, rle));
        }
        if self.scratch.len() < need {
            self.scratch.resize(need, 0);
        }
        let n = encode(src, &mut self.scratch, &mut self.dict, rle);
        if n > dst.len() {
            return Err(CodecError::DstTooSmall {
                capacity: dst.len(),
            });
        }
        dst[..n].copy_from_slice(&self.scratch[..n]);
        Ok(n)
    }
}

#[inline(always)]
fn read_u32(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(b[i..i + 4].try_into().unwrap())
}

#[inline(always)]
fn read_u64(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(b[i..i + 8].try_into().unwrap())
}

/// The output cursor and where the last instruction keeps its "S" bits
/// (the count of literals that follow it): 2 bytes back after a match,
/// 3 bytes back after a zero run (`state_offset` in the kernel).
struct Out<'a> {
    buf: &'a mut [u8],
    op: usize,
    state_back: usize,
}

impl Out<'_> {
    #[inline(always)]
    fn push(&mut self, b: u8) {
        self.buf[self.op] = b;
        self.op += 1;
    }

    /// A literal-run length `t >= 4` as an instruction: `t - 3` when it fits
    /// the opcode's nibble, else 0, a 255-extension and the remainder.
    #[inline(always)]
    fn literal_len(&mut self, t: usize) {
        if t <= 18 {
            self.push((t - 3) as u8);
        } else {
            let mut tt = t - 18;
            self.push(0);
            while tt > 255 {
                tt -= 255;
                self.push(0);
            }
            self.push(tt as u8);
        }
    }

    /// A length beyond what an M3/M4 opcode holds: 255-extension bytes and the remainder.
    #[inline(always)]
    fn length_extension(&mut self, mut m_len: usize) {
        while m_len > 255 {
            m_len -= 255;
            self.push(0);
        }
        self.push(m_len as u8);
    }

    /// `t` pending literals `src[ii..ii + t]` before an instruction (main loop):
    /// 1..=3 go into the S bits of the previous instruction.
    #[inline(always)]
    fn literals(&mut self, src: &[u8], ii: usize, t: usize) {
        if t <= 3 {
            // t >= 1 here, so an instruction precedes (the first run has >= 5 literals).
            let s = self.op - self.state_back;
            self.buf[s] |= t as u8;
            let w: [u8; 4] = src[ii..ii + 4].try_into().unwrap();
            self.buf[self.op..self.op + 4].copy_from_slice(&w);
            self.op += t;
        } else if t <= 16 {
            self.push((t - 3) as u8);
            let w: [u8; 16] = src[ii..ii + 16].try_into().unwrap();
            self.buf[self.op..self.op + 16].copy_from_slice(&w);
            self.op += t;
        } else {
            self.literal_len(t);
            self.buf[self.op..self.op + t].copy_from_slice(&src[ii..ii + t]);
            self.op += t;
        }
    }
}

/// Compress all of `src` into `out`, which holds at least
/// `worst_compress(src.len()) + OVERCOPY` bytes (`lzogeneric1x_1_compress`).
fn encode(src: &[u8], out: &mut [u8], dict: &mut [u16; D_SIZE], rle: bool) -> usize {
    debug_assert!(out.len() >= worst_compress(src.len()) + OVERCOPY);
    let mut o = Out {
        buf: out,
        op: 0,
        state_back: 2,
    };
    let m4_max_offset = if rle {
        o.push(VERSION_MARKER);
        o.push(RLE_VERSION);
        M4_MAX_OFFSET_V1
    } else {
        M4_MAX_OFFSET_V0
    };
    let data_start = o.op;

    let mut ip = 0;
    let mut l = src.len();
    let mut t = 0;
    while l > TAIL {
        let ll = l.min(m4_max_offset + 1);
        dict.fill(0);
        t = encode_chunk(src, ip, ip + ll, &mut o, t, dict, rle);
        ip += ll;
        l -= ll;
    }
    t += l;

    if t > 0 {
        let ii = src.len() - t;
        if o.op == data_start && t <= 238 {
            o.push((17 + t) as u8);
        } else if t <= 3 {
            let s = o.op - o.state_back;
            o.buf[s] |= t as u8;
        } else {
            o.literal_len(t);
        }
        o.buf[o.op..o.op + t].copy_from_slice(&src[ii..]);
        o.op += t;
    }

    // End of stream: an M4 of distance 0 (`M4_MARKER | 1, 0, 0`).
    o.push(M4_MARKER | 1);
    o.push(0);
    o.push(0);
    o.op
}

/// One chunk `src[cs..ce]` (`lzo1x_1_do_compress`), with `ti` literals carried
/// from the previous chunk. Returns the literals left pending at its end.
fn encode_chunk(
    src: &[u8],
    cs: usize,
    ce: usize,
    o: &mut Out<'_>,
    mut ti: usize,
    dict: &mut [u16; D_SIZE],
    rle: bool,
) -> usize {
    let inp = &src[..ce];
    let ip_end = ce - TAIL;
    let mut ii = cs;
    let mut ip = cs + 4_usize.saturating_sub(ti);

    'literal: loop {
        ip += 1 + ((ip - ii) >> 5);
        loop {
            if ip >= ip_end {
                break 'literal;
            }
            let dv = read_u32(inp, ip);
            let mut run_length = 0;
            let mut m_pos = 0;
            if dv == 0 && rle {
                let limit = ip_end.min(ip + MAX_ZERO_RUN_LENGTH + 1);
                run_length = zero_run(inp, ip + 4, limit) - ip;
                if run_length > MAX_ZERO_RUN_LENGTH {
                    run_length = MAX_ZERO_RUN_LENGTH;
                }
            } else {
                let h = (dv.wrapping_mul(HASH_MULTIPLIER) >> (32 - D_BITS)) as usize & (D_SIZE - 1);
                m_pos = cs + dict[h] as usize;
                dict[h] = (ip - cs) as u16;
                if dv != read_u32(inp, m_pos) {
                    continue 'literal;
                }
            }

            ii -= ti;
            ti = 0;
            let t = ip - ii;
            if t != 0 {
                o.literals(inp, ii, t);
            }

            if run_length != 0 {
                ip += run_length;
                let r = run_length - MIN_ZERO_RUN_LENGTH;
                // As an M4 opcode: H = 1, L = r & 7, distance field 0x3fff (0xbfff), then r >> 3.
                o.push(0x18 | (r & 7) as u8);
                o.push(0xfc);
                o.push(0xff);
                o.push((r >> 3) as u8);
                o.state_back = 3;
                ii = ip;
                continue;
            }

            let m_len = match_len(inp, ip, m_pos, ip_end);
            let mut m_off = ip - m_pos;
            ip += m_len;
            if m_len <= M2_MAX_LEN && m_off <= M2_MAX_OFFSET {
                m_off -= 1;
                o.push((((m_len - 1) << 5) | ((m_off & 7) << 2)) as u8);
                o.push((m_off >> 3) as u8);
            } else if m_off <= M3_MAX_OFFSET {
                m_off -= 1;
                if m_len <= M3_MAX_LEN {
                    o.push(M3_MARKER | (m_len - 2) as u8);
                } else {
                    o.push(M3_MARKER);
                    o.length_extension(m_len - M3_MAX_LEN);
                }
                o.push((m_off << 2) as u8);
                o.push((m_off >> 6) as u8);
            } else {
                m_off -= 0x4000;
                let h = ((m_off >> 11) & 8) as u8;
                if m_len <= M4_MAX_LEN {
                    o.push(M4_MARKER | h | (m_len - 2) as u8);
                } else {
                    o.push(M4_MARKER | h);
                    o.length_extension(m_len - M4_MAX_LEN);
                }
                o.push((m_off << 2) as u8);
                o.push((m_off >> 6) as u8);
            }
            o.state_back = 2;
            ii = ip;
        }
    }
    ce - (ii - ti)
}

/// End of the zero bytes starting at `ir`, looking no farther than `limit`.
#[inline(always)]
fn zero_run(inp: &[u8], mut ir: usize, limit: usize) -> usize {
    while ir + 8 <= limit {
        let v = read_u64(inp, ir);
        if v != 0 {
            return ir + (v.trailing_zeros() / 8) as usize;
        }
        ir += 8;
    }
    while ir < limit && inp[ir] == 0 {
        ir += 1;
    }
    ir
}

/// Length of the match at `ip` against `m_pos` whose first 4 bytes are
/// known equal, the kernel's way: compare 8 bytes at a time; once the end
/// passes `ip_end`, stop without looking at the last word.
#[inline(always)]
fn match_len(inp: &[u8], ip: usize, m_pos: usize, ip_end: usize) -> usize {
    // Bounds: m_pos < ip < ip_end = inp.len() - 20. A word is read at
    // ip + m_len only while ip + m_len < ip_end + 8 (the loop stops once
    // ip + m_len >= ip_end, and m_len grows by 8), so every 8-byte read ends
    // before ip_end + 16 = inp.len() - 4. Checked once here for all of them.
    assert!(m_pos < ip && ip < ip_end && ip_end + TAIL <= inp.len());
    let word = |i: usize| -> u64 {
        debug_assert!(i + 8 <= inp.len());
        // SAFETY: i + 8 <= inp.len() by the bound above (i <= ip + m_len with
        // ip + m_len < ip_end + 8); read_unaligned has no alignment needs.
        u64::from_le(unsafe { inp.as_ptr().add(i).cast::<u64>().read_unaligned() })
    };
    let mut m_len = 4;
    let mut v = word(ip + m_len) ^ word(m_pos + m_len);
    if v == 0 {
        loop {
            m_len += 8;
            v = word(ip + m_len) ^ word(m_pos + m_len);
            if ip + m_len >= ip_end {
                return m_len;
            }
            if v != 0 {
                break;
            }
        }
    }
    m_len + (v.trailing_zeros() / 8) as usize
}
