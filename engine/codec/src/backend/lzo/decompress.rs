//! The LZO1X decoder (what the kernel's `lzo1x_decompress_safe` accepts):
//! version-0 streams from any LZO1X compressor (the kernel's, liblzo2's
//! lzo1x_1 and lzo1x_999) and version-1 (lzo-rle) streams.
//!
//! Every read of the input and every write and look-behind of the output is
//! checked; a stream that runs past its input, past the output, refers before
//! the start of the output, lacks the end marker or has bytes after it is a
//! [`DecodeError`].

use super::{M2_MAX_OFFSET, MIN_ZERO_RUN_LENGTH, VERSION_MARKER};

/// Why a stream was rejected (the kernel's `LZO_E_*` codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// The stream ends inside an instruction (`LZO_E_INPUT_OVERRUN`).
    InputOverrun,
    /// The stream decodes to more bytes than the output holds (`LZO_E_OUTPUT_OVERRUN`).
    OutputOverrun,
    /// A match refers to bytes before the start of the output (`LZO_E_LOOKBEHIND_OVERRUN`).
    LookbehindOverrun,
    /// The end-of-stream instruction is malformed (`LZO_E_ERROR`).
    BadEndMarker,
    /// Bytes follow the end-of-stream marker (`LZO_E_INPUT_NOT_CONSUMED`).
    InputNotConsumed,
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DecodeError::InputOverrun => "input overrun: the stream is truncated",
            DecodeError::OutputOverrun => {
                "output overrun: the stream decodes to more than the page"
            }
            DecodeError::LookbehindOverrun => {
                "look-behind overrun: a match reaches before the start of the output"
            }
            DecodeError::BadEndMarker => "malformed end-of-stream marker",
            DecodeError::InputNotConsumed => {
                "input not consumed: bytes follow the end-of-stream marker"
            }
        })
    }
}

impl std::error::Error for DecodeError {}

type R<T> = Result<T, DecodeError>;

/// Decoder state: input and output cursors over checked slices.
struct Dec<'a, 'b> {
    src: &'a [u8],
    ip: usize,
    out: &'b mut [u8],
    op: usize,
}

impl Dec<'_, '_> {
    #[inline(always)]
    fn byte(&mut self) -> R<usize> {
        match self.src.get(self.ip) {
            Some(&b) => {
                self.ip += 1;
                Ok(b as usize)
            }
            None => Err(DecodeError::InputOverrun),
        }
    }

    #[inline(always)]
    fn le16(&mut self) -> R<usize> {
        match self.src.get(self.ip..self.ip + 2) {
            Some(b) => {
                self.ip += 2;
                Ok(b[0] as usize | (b[1] as usize) << 8)
            }
            None => Err(DecodeError::InputOverrun),
        }
    }

    /// A 255-extended length: `base` + 255 per zero byte + the first non-zero byte.
    #[inline(always)]
    fn extended_len(&mut self, base: usize) -> R<usize> {
        let start = self.ip;
        let rest = self.src.get(start..).unwrap_or(&[]);
        let zeros = rest
            .iter()
            .position(|&b| b != 0)
            .ok_or(DecodeError::InputOverrun)?;
        self.ip = start + zeros + 1;
        // zeros < src.len(), so this cannot overflow.
        Ok(base + zeros * 255 + rest[zeros] as usize)
    }

    /// Copy `t` literals from the input.
    #[inline(always)]
    fn literals(&mut self, t: usize) -> R<()> {
        let (ip, op) = (self.ip, self.op);
        if ip + t + 16 <= self.src.len() && op + t + 16 <= self.out.len() {
            // Room on both sides: copy 16 bytes at a time, overshooting harmlessly.
            let mut k = 0;
            while k < t {
                let w: [u8; 16] = self.src[ip + k..ip + k + 16].try_into().unwrap();
                self.out[op + k..op + k + 16].copy_from_slice(&w);
                k += 16;
            }
        } else {
            let s = self.src.get(ip..ip + t).ok_or(DecodeError::InputOverrun)?;
            let d = self
                .out
                .get_mut(op..op + t)
                .ok_or(DecodeError::OutputOverrun)?;
            d.copy_from_slice(s);
        }
        self.ip = ip + t;
        self.op = op + t;
        Ok(())
    }

    /// Copy the 0..=3 literals that follow a match.
    #[inline(always)]
    fn trailing(&mut self, t: usize) -> R<()> {
        let (ip, op) = (self.ip, self.op);
        if ip + 4 <= self.src.len() && op + 4 <= self.out.len() {
            let w: [u8; 4] = self.src[ip..ip + 4].try_into().unwrap();
            self.out[op..op + 4].copy_from_slice(&w);
        } else {
            let s = self.src.get(ip..ip + t).ok_or(DecodeError::InputOverrun)?;
            let d = self
                .out
                .get_mut(op..op + t)
                .ok_or(DecodeError::OutputOverrun)?;
            d.copy_from_slice(s);
        }
        self.ip = ip + t;
        self.op = op + t;
        Ok(())
    }

    /// Copy `len` bytes from `dist` back in the output (overlap allowed).
    ///
    /// A short match (at most 8 bytes, as every M2) is one 8-byte word; longer
    /// far matches move 16 bytes at a time and near ones 8. Each chunk is
    /// loaded whole before it is stored (`copy_within`), and only reads bytes
    /// written before it because the distance is at least the chunk size.
    /// Up to a chunk past the match is overwritten, harmlessly, where the
    /// output has room; near the end, and for distances below 8, bytes are
    /// copied one at a time. (16-byte chunks for short matches too were
    /// slower on heap pages: docs/lzo.md, "Speed".)
    #[inline(always)]
    fn copy_match(&mut self, dist: usize, len: usize) -> R<()> {
        let op = self.op;
        if dist > op {
            return Err(DecodeError::LookbehindOverrun);
        }
        let m = op - dist;
        let room = self.out.len();
        if len <= 8 && dist >= 8 && op + 8 <= room {
            self.out.copy_within(m..m + 8, op);
        } else if dist >= 16 && op + len + 16 <= room {
            copy_chunks::<16>(self.out, m, op, len);
        } else if dist >= 8 && op + len + 8 <= room {
            copy_chunks::<8>(self.out, m, op, len);
        } else {
            if op + len > room {
                return Err(DecodeError::OutputOverrun);
            }
            if dist == 1 {
                let b = self.out[m];
                self.out[op..op + len].fill(b);
            } else {
                for k in 0..len {
                    self.out[op + k] = self.out[m + k];
                }
            }
        }
        self.op = op + len;
        Ok(())
    }
}

/// Copy the match at `m` of `len` bytes to `op` in `C`-byte chunks, the last
/// one overshooting by less than `C`. The caller checked that `m + C <= op`
/// (each chunk reads only bytes already written) and that `op + len + C` fits.
#[inline(always)]
fn copy_chunks<const C: usize>(out: &mut [u8], m: usize, op: usize, len: usize) {
    let mut k = 0;
    while k < len {
        out.copy_within(m + k..m + k + C, op + k);
        k += C;
    }
}

/// Decode `src` into `dst`; returns how many bytes were written.
/// The stream must end with its end marker exactly at the end of `src`.
///
/// Longer than a screen on purpose: one state machine over the instruction
/// kinds, as lib/lzo/lzo1x_decompress_safe.c is, whose states share the
/// position, the pending literal count and every bounds check.
pub fn decompress(src: &[u8], dst: &mut [u8]) -> Result<usize, DecodeError> {
    if src.len() < 3 {
        return Err(DecodeError::InputOverrun);
    }
    let mut d = Dec {
        src,
        ip: 0,
        out: dst,
        op: 0,
    };
    // A version-1 stream starts with 17 and its version; a version-0 stream
    // never starts with 17 (it would mean "copy 0 literals").
    let mut rle = false;
    if src.len() >= 5 && src[0] == VERSION_MARKER {
        rle = src[1] != 0;
        d.ip = 2;
    }

    // `state`: literals copied by the previous instruction (0..=3), or 4 after a
    // literal run of 4 or more. It selects what opcodes 0..15 mean.
    let mut state;
    if src[d.ip] > 17 {
        let t = src[d.ip] as usize - 17;
        d.ip += 1;
        if t < 4 {
            d.trailing(t)?;
            state = t;
        } else {
            d.literals(t)?;
            state = 4;
        }
    } else {
        state = 0;
    }

    loop {
        let t = d.byte()?;
        let (dist, len, next);
        if t < 16 {
            if state == 0 {
                // A literal run of 4 or more.
                let n = if t == 0 { d.extended_len(15)? } else { t };
                d.literals(n + 3)?;
                state = 4;
                continue;
            }
            let h = d.byte()?;
            next = t & 3;
            if state != 4 {
                // After 1..3 literals: a 2-byte match within 1 KiB.
                dist = 1 + (t >> 2) + (h << 2);
                len = 2;
            } else {
                // After a literal run: a 3-byte match at 2..3 KiB.
                dist = 1 + M2_MAX_OFFSET + (t >> 2) + (h << 2);
                len = 3;
            }
        } else if t >= 64 {
            // M2: 3..8 bytes within 2 KiB.
            let h = d.byte()?;
            next = t & 3;
            dist = 1 + ((t >> 2) & 7) + (h << 3);
            len = (t >> 5) + 1;
        } else if t >= 32 {
            // M3: within 16 KiB.
            len = if t & 31 == 0 {
                d.extended_len(31)? + 2
            } else {
                (t & 31) + 2
            };
            let w = d.le16()?;
            dist = 1 + (w >> 2);
            next = w & 3;
        } else {
            // M4 (16..48 KiB), the end marker, or in version 1 a zero run.
            let w = match src.get(d.ip..d.ip + 2) {
                Some(b) => b[0] as usize | (b[1] as usize) << 8,
                None => return Err(DecodeError::InputOverrun),
            };
            if rle && (w & 0xfffc) == 0xfffc && (t & 0xf8) == 0x18 {
                let x = *src.get(d.ip + 2).ok_or(DecodeError::InputOverrun)? as usize;
                let run = ((t & 7) | (x << 3)) + MIN_ZERO_RUN_LENGTH;
                let z = d
                    .out
                    .get_mut(d.op..d.op + run)
                    .ok_or(DecodeError::OutputOverrun)?;
                z.fill(0);
                d.op += run;
                d.ip += 3;
                next = w & 3;
                d.trailing(next)?;
                state = next;
                continue;
            }
            len = if t & 7 == 0 {
                d.extended_len(7)? + 2
            } else {
                (t & 7) + 2
            };
            let w = d.le16()?;
            let back = ((t & 8) << 11) + (w >> 2);
            if back == 0 {
                // End of stream: only the 3-byte form `0x11 0 0` is valid.
                if len != 3 {
                    return Err(DecodeError::BadEndMarker);
                }
                if d.ip != src.len() {
                    return Err(DecodeError::InputNotConsumed);
                }
                return Ok(d.op);
            }
            dist = back + 0x4000;
            next = w & 3;
        }
        d.copy_match(dist, len)?;
        d.trailing(next)?;
        state = next;
    }
}
