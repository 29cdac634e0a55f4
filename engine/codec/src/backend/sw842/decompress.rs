//! The sw842 decompressor: accepts every stream the kernel's `sw842_decompress`
//! accepts for the same output length, and checks the CRC as newer kernels do.
//! Every read and write is bounds-checked; malformed input is an error.

use super::crc::crc32_be;
use super::format::*;

/// Why a stream was rejected.
pub type DecodeError = String;

/// MSB-first bit reader.
struct BitReader<'a> {
    data: &'a [u8],
    bit: usize,
}

impl<'a> BitReader<'a> {
    /// Read `n` bits (1..=32) as an unsigned value.
    #[inline(always)]
    fn get(&mut self, n: u32) -> Result<u64, DecodeError> {
        debug_assert!((1..=32).contains(&n));
        let end = self.bit + n as usize;
        if end > self.data.len() * 8 {
            return Err(format!(
                "truncated: needs {n} more bits at bit {} of {}",
                self.bit,
                self.data.len() * 8
            ));
        }
        let byte = self.bit >> 3;
        let word = match self.data.get(byte..byte + 8) {
            Some(b) => u64::from_be_bytes(b.try_into().unwrap()),
            None => {
                let mut b = [0u8; 8];
                let rest = &self.data[byte..];
                b[..rest.len()].copy_from_slice(rest);
                u64::from_be_bytes(b)
            }
        };
        let v = (word << (self.bit & 7)) >> (64 - n);
        self.bit = end;
        Ok(v)
    }
}

/// Decompress `src` into `dst`, which the stream must fill exactly.
///
/// Longer than a screen on purpose: one loop over the template operations,
/// as lib/842/842_decompress.c is, sharing the bit reader and output position.
pub fn decompress(src: &[u8], dst: &mut [u8]) -> Result<(), DecodeError> {
    let mut r = BitReader { data: src, bit: 0 };
    let olen = dst.len();
    let mut out = 0usize;
    loop {
        let op = r.get(OP_BITS)? as u32;
        match op {
            OP_REPEAT => {
                let n = r.get(REPEAT_BITS)? as usize + 1;
                if out < 8 {
                    return Err(format!(
                        "repeat at output byte {out} has no previous 8 bytes"
                    ));
                }
                if out + 8 * n > olen {
                    return Err(format!(
                        "repeat of {n} blocks at byte {out} overruns {olen} bytes"
                    ));
                }
                for _ in 0..n {
                    dst.copy_within(out - 8..out, out);
                    out += 8;
                }
            }
            OP_ZEROS => {
                if out + 8 > olen {
                    return Err(format!("zeros at byte {out} overrun {olen} bytes"));
                }
                dst[out..out + 8].fill(0);
                out += 8;
            }
            OP_SHORT_DATA => {
                let n = r.get(SHORT_DATA_BITS)? as usize;
                if n == 0 {
                    return Err("short data of 0 bytes".into());
                }
                if out + n > olen {
                    return Err(format!(
                        "short data of {n} bytes at byte {out} overruns {olen} bytes"
                    ));
                }
                for _ in 0..n {
                    dst[out] = r.get(8)? as u8;
                    out += 1;
                }
            }
            OP_END => break,
            t if (t as usize) < OPS_MAX => {
                if out + 8 > olen {
                    return Err(format!(
                        "template {t:#x} at byte {out} overruns {olen} bytes"
                    ));
                }
                for &a in TEMPLATES[t as usize] {
                    match a {
                        Action::Data(s) => {
                            let s = s as usize;
                            if s == 8 {
                                let hi = r.get(32)?;
                                let lo = r.get(32)?;
                                dst[out..out + 8].copy_from_slice(&((hi << 32) | lo).to_be_bytes());
                            } else {
                                let v = r.get(8 * s as u32)?;
                                dst[out..out + s].copy_from_slice(&v.to_be_bytes()[8 - s..]);
                            }
                            out += s;
                        }
                        Action::Index(s) => {
                            let (bits, fifo) = match s {
                                2 => (I2_BITS, 2 * I2_ENTRIES as usize),
                                4 => (I4_BITS, 4 * I4_ENTRIES as usize),
                                _ => (I8_BITS, 8 * I8_ENTRIES as usize),
                            };
                            let s = s as usize;
                            let index = r.get(bits)? as usize;
                            let from = fifo_offset(index * s, out, fifo, s)?;
                            dst.copy_within(from..from + s, out);
                            out += s;
                        }
                    }
                }
            }
            t => return Err(format!("invalid opcode {t:#x}")),
        }
    }
    let crc = r.get(CRC_BITS)? as u32;
    let actual = crc32_be(0, &dst[..out]);
    if crc != actual {
        return Err(format!(
            "CRC mismatch: stream says {crc:#010x}, data has {actual:#010x}"
        ));
    }
    if out != olen {
        return Err(format!("decodes to {out} bytes, expected {olen}"));
    }
    // The compressor pads the stream to a multiple of 8 bytes with zeros; we
    // take exactly that length (the kernel's decompressor ignores what follows
    // END + CRC, but every stream the kernel writes has this length).
    let used = r.bit.div_ceil(8);
    let padded = used.div_ceil(8) * 8;
    if src.len() != padded || src[used..].iter().any(|&b| b != 0) {
        return Err(format!(
            "stream ends at byte {used} and should be zero-padded to {padded} bytes, but has {}",
            src.len()
        ));
    }
    Ok(())
}

/// Where an index into a fifo of `fifo` bytes points, for output position
/// `out`: the most recent `size`-byte chunk at `offset` modulo the fifo size,
/// strictly before the current 8-byte block (as `__do_index` resolves it).
#[inline(always)]
fn fifo_offset(offset: usize, out: usize, fifo: usize, size: usize) -> Result<usize, DecodeError> {
    let total = out & !7;
    let mut at = offset;
    if total > fifo {
        let mut section = total - total % fifo;
        if offset >= total % fifo {
            section -= fifo;
        }
        at += section;
    }
    if at + size > total {
        return Err(format!(
            "index to byte {offset} of the {size}-byte fifo points past output byte {total}"
        ));
    }
    Ok(at)
}
