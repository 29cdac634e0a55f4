//! The sw842 compressor, choosing exactly what the kernel's `sw842_compress`
//! chooses, so the output is byte-for-byte the kernel's.
//!
//! The kernel keeps, for each fifo (8-, 4- and 2-byte values), one hash node per
//! fifo slot in a chained hash table and takes the *most recently written*
//! slot holding the value. Slots are overwritten in ring order, so if the most
//! recent write of a value has been overwritten, every older one has been too.
//! That makes "value -> chunk number of its most recent write" plus a window
//! check an exact replacement for the chains:
//!
//! * 8-byte and 4-byte values: open-addressed tables keyed by value holding the
//!   global chunk number of the latest write. Entries are never removed within
//!   one input (an input of at most one page has at most a quarter of the
//!   table's entries in distinct values: 512 / 1024 at 4 KiB), so probe
//!   chains stay intact. The tables are sized for the page the compressor
//!   is made for ([`Compressor::with_max_input`]: 4, 16 or 64 KiB).
//! * 2-byte values: a direct table of 65536 chunk numbers.
//!
//! Chunk numbers are global across inputs: each input starts [`INPUT_STRIDE`]
//! blocks after the previous one, so an entry from an earlier input is both
//! "empty" for probing and outside every fifo window, and no table is cleared
//! per page.

use super::crc::crc32_be;
use super::format::*;

/// Longest input of [`Compressor::new`] (a 4 KiB page).
pub const MAX_INPUT: usize = 4096;
/// Longest input any compressor takes (a 64 KiB page).
pub const MAX_ANY_INPUT: usize = 65536;

/// Global block numbers between the starts of two inputs of at most
/// `max_blocks` blocks: more than an input's blocks plus the widest fifo
/// window (256 blocks), and a multiple of every fifo size so that
/// `chunk % entries` is the fifo index (1024 at 4 KiB).
const fn input_stride(max_blocks: u32) -> u32 {
    (max_blocks + 256).next_multiple_of(1024)
}
const _: () =
    assert!(input_stride(512) == 1024 && 1024 % I8_ENTRIES == 0 && 1024 % I4_ENTRIES == 0);

#[derive(Clone, Copy, Default)]
struct Entry8 {
    value: u64,
    chunk: u32,
}

#[derive(Clone, Copy, Default)]
struct Entry4 {
    value: u32,
    chunk: u32,
}

#[inline(always)]
fn hash8(v: u64, bits: u32) -> usize {
    (v.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
}

#[inline(always)]
fn hash4(v: u32, bits: u32) -> usize {
    (v.wrapping_mul(0x9E37_79B1) >> (32 - bits)) as usize
}

/// Bit masks of the six 4- and 2-byte index lookups a template may need:
/// bit 0/1 = the 4-byte halves, bits 2..=5 = the 2-byte quarters.
const fn required_mask(t: usize) -> u8 {
    let acts = TEMPLATES[t];
    let mut m = 0u8;
    let mut b = 0u8;
    let mut i = 0;
    while i < acts.len() {
        match acts[i] {
            Action::Index(4) => m |= 1 << (b / 4),
            Action::Index(2) => m |= 1 << (2 + b / 2),
            _ => {}
        }
        b += match acts[i] {
            Action::Data(s) | Action::Index(s) => s,
        };
        i += 1;
    }
    m
}

/// For each set of hits among the six 4-/2-byte lookups, the template the
/// kernel picks (the first in [`COMPRESS_ORDER`] whose indices all hit) when
/// the 8-byte lookup missed.
const SELECT: [u8; 64] = {
    let mut sel = [0u8; 64];
    let mut mask = 0;
    while mask < 64 {
        let mut i = 0;
        while i < OPS_MAX {
            let t = COMPRESS_ORDER[i] as usize;
            let needs_i8 = TEMPLATES[t].len() == 1 && matches!(TEMPLATES[t][0], Action::Index(8));
            if !needs_i8 && required_mask(t) & !(mask as u8) == 0 {
                sel[mask] = t as u8;
                break;
            }
            i += 1;
        }
        mask += 1;
    }
    sel
};

/// One template's arguments as (shift, bits, source) steps, precomputed.
#[derive(Clone, Copy)]
enum Arg {
    /// `bits` raw bits of the block value, taken from `value >> shift`.
    Data {
        shift: u8,
        bits: u8,
    },
    /// Index of the 2-byte quarter / 4-byte half at this position.
    I2(u8),
    I4(u8),
    I8,
    None,
}

const fn build_args() -> [[Arg; 5]; OPS_MAX] {
    let mut all = [[Arg::None; 5]; OPS_MAX];
    let mut t = 0;
    while t < OPS_MAX {
        let acts = TEMPLATES[t];
        let mut b = 0u8;
        let mut i = 0;
        let mut o = 0;
        while i < acts.len() {
            match acts[i] {
                Action::Data(8) => {
                    all[t][o] = Arg::Data {
                        shift: 32,
                        bits: 32,
                    };
                    o += 1;
                    all[t][o] = Arg::Data { shift: 0, bits: 32 };
                    b += 8;
                }
                Action::Data(s) => {
                    all[t][o] = Arg::Data {
                        shift: 64 - 8 * (b + s),
                        bits: 8 * s,
                    };
                    b += s;
                }
                Action::Index(2) => {
                    all[t][o] = Arg::I2(b / 2);
                    b += 2;
                }
                Action::Index(4) => {
                    all[t][o] = Arg::I4(b / 4);
                    b += 4;
                }
                Action::Index(_) => {
                    all[t][o] = Arg::I8;
                    b += 8;
                }
            }
            o += 1;
            i += 1;
        }
        t += 1;
    }
    all
}

const ARGS: [[Arg; 5]; OPS_MAX] = build_args();

/// MSB-first bit writer straight into the caller's buffer. Bits collect in a
/// 64-bit register and leave in big-endian 32-bit words. Writing past the end
/// sets `overflow` instead (the result then does not fit).
struct BitWriter<'a> {
    out: &'a mut [u8],
    pos: usize,
    acc: u64,
    nbits: u32,
    overflow: bool,
}

impl<'a> BitWriter<'a> {
    fn new(out: &'a mut [u8]) -> Self {
        BitWriter {
            out,
            pos: 0,
            acc: 0,
            nbits: 0,
            overflow: false,
        }
    }

    /// Append the low `n` bits of `v` (n <= 32; `v` has no bits above n).
    #[inline(always)]
    fn put(&mut self, v: u64, n: u32) {
        debug_assert!(n <= 32 && (n == 32 || v >> n == 0));
        self.acc = (self.acc << n) | v;
        self.nbits += n;
        if self.nbits >= 32 {
            self.nbits -= 32;
            let word = ((self.acc >> self.nbits) as u32).to_be_bytes();
            match self.out.get_mut(self.pos..self.pos + 4) {
                Some(d) => d.copy_from_slice(&word),
                None => self.overflow = true,
            }
            self.pos += 4;
        }
    }

    /// Flush the partial word (zero bits fill the last byte), pad with zero
    /// bytes to a multiple of 8, and return the length.
    fn finish(mut self) -> Option<usize> {
        let tail = self.nbits.div_ceil(8) as usize;
        let bytes = ((self.acc << (32 - self.nbits)) as u32).to_be_bytes();
        let len = self.pos + tail;
        let padded = len.div_ceil(8) * 8;
        if self.overflow || padded > self.out.len() {
            return None;
        }
        self.out[self.pos..len].copy_from_slice(&bytes[..tail]);
        self.out[len..padded].fill(0);
        self.pos = padded;
        Some(padded)
    }
}

/// Reusable compressor state (the kernel's `SW842_MEM_COMPRESS` work memory).
pub struct Compressor {
    t8: Box<[Entry8]>,
    t4: Box<[Entry4]>,
    t2: Box<[u32]>,
    next_block: u32,
    max_input: usize,
    /// [`input_stride`] of `max_input`.
    stride: u32,
    /// Restart numbering well before 2-byte chunk numbers (4 per block) overflow.
    renumber_at: u32,
}

impl Default for Compressor {
    fn default() -> Self {
        Self::new()
    }
}

impl Compressor {
    /// A compressor for inputs of at most a 4 KiB page.
    pub fn new() -> Self {
        Self::with_max_input(MAX_INPUT)
    }

    /// A compressor for inputs of at most `max_input` bytes (rounded up to a
    /// power of two from 4096 to [`MAX_ANY_INPUT`]).
    pub fn with_max_input(max_input: usize) -> Self {
        let max_input = max_input
            .clamp(MAX_INPUT, MAX_ANY_INPUT)
            .next_power_of_two();
        let max_blocks = (max_input / 8) as u32;
        let stride = input_stride(max_blocks);
        Compressor {
            t8: vec![Entry8::default(); 4 * max_blocks as usize].into_boxed_slice(),
            t4: vec![Entry4::default(); 8 * max_blocks as usize].into_boxed_slice(),
            t2: vec![0u32; 1 << 16].into_boxed_slice(),
            next_block: stride,
            max_input,
            stride,
            renumber_at: (u32::MAX / 4) - 4 * stride,
        }
    }

    /// Slot of `v` in the 8-byte table and the chunk of its latest write in
    /// this input, or the empty slot where it goes.
    #[inline(always)]
    fn probe8(&self, v: u64, base: u32) -> (usize, Option<u32>) {
        let n = self.t8.len();
        let mut s = hash8(v, n.trailing_zeros());
        loop {
            let e = self.t8[s];
            if e.chunk < base {
                return (s, None);
            }
            if e.value == v {
                return (s, Some(e.chunk));
            }
            s = (s + 1) & (n - 1);
        }
    }

    #[inline(always)]
    fn probe4(&self, v: u32, base: u32) -> (usize, Option<u32>) {
        let n = self.t4.len();
        let mut s = hash4(v, n.trailing_zeros());
        loop {
            let e = self.t4[s];
            if e.chunk < base {
                return (s, None);
            }
            if e.value == v {
                return (s, Some(e.chunk));
            }
            s = (s + 1) & (n - 1);
        }
    }

    /// Record block `g` (global block number) holding `v` in all three fifos.
    #[inline(always)]
    fn update(&mut self, slot8: usize, v: u64, g: u32, base: u32) {
        self.t8[slot8] = Entry8 { value: v, chunk: g };
        let base4 = 2 * base;
        for (d, h) in [(v >> 32) as u32, v as u32].into_iter().enumerate() {
            let (s, _) = self.probe4(h, base4);
            self.t4[s] = Entry4 {
                value: h,
                chunk: 2 * g + d as u32,
            };
        }
        for d in 0..4u32 {
            let q = (v >> (48 - 16 * d)) as u16;
            self.t2[q as usize] = 4 * g + d;
        }
    }

    /// Compress `src` (at most [`max_input`](Self::max_input) bytes) into
    /// `dst` in the kernel's sw842 format. `None` if the result does not fit
    /// in `dst`.
    pub fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Option<usize> {
        assert!(
            src.len() <= self.max_input,
            "sw842 compressor takes at most {} bytes",
            self.max_input
        );
        if self.next_block >= self.renumber_at {
            self.t8.fill(Entry8::default());
            self.t4.fill(Entry4::default());
            self.t2.fill(0);
            self.next_block = self.stride;
        }
        let base = self.next_block;
        self.next_block += self.stride;

        let mut w = BitWriter::new(dst);
        let blocks = src.chunks_exact(8);
        let tail = blocks.remainder();
        // The kernel starts `last` as the complement of the first block so it
        // never counts as a repeat.
        let mut last = match src.get(..8) {
            Some(b) => !u64::from_be_bytes(b.try_into().unwrap()),
            None => 0,
        };
        let mut repeat = 0u32;
        for (k, b) in blocks.enumerate() {
            let v = u64::from_be_bytes(b.try_into().unwrap());
            let g = base + k as u32;
            let (slot8, hit8) = self.probe8(v, base);
            if v == last {
                repeat += 1;
                if repeat == REPEAT_MAX {
                    w.put(OP_REPEAT as u64, OP_BITS);
                    w.put((repeat - 1) as u64, REPEAT_BITS);
                    repeat = 0;
                }
            } else {
                if repeat > 0 {
                    w.put(OP_REPEAT as u64, OP_BITS);
                    w.put((repeat - 1) as u64, REPEAT_BITS);
                    repeat = 0;
                }
                if v == 0 {
                    w.put(OP_ZEROS as u64, OP_BITS);
                } else {
                    self.emit(&mut w, v, g, base, hit8);
                }
                if w.overflow {
                    return None;
                }
            }
            last = v;
            self.update(slot8, v, g, base);
        }
        if repeat > 0 {
            w.put(OP_REPEAT as u64, OP_BITS);
            w.put((repeat - 1) as u64, REPEAT_BITS);
        }
        if !tail.is_empty() {
            w.put(OP_SHORT_DATA as u64, OP_BITS);
            w.put(tail.len() as u64, SHORT_DATA_BITS);
            for &b in tail {
                w.put(b as u64, 8);
            }
        }
        w.put(OP_END as u64, OP_BITS);
        w.put(crc32_be(0, src) as u64, CRC_BITS);
        w.finish()
    }

    /// Pick and write the template for the non-zero, non-repeat block `v`.
    #[inline(always)]
    fn emit(&self, w: &mut BitWriter<'_>, v: u64, g: u32, base: u32, hit8: Option<u32>) {
        if let Some(c) = hit8 {
            if c + I8_ENTRIES >= g {
                w.put(0x19, OP_BITS);
                w.put((c % I8_ENTRIES) as u64, I8_BITS);
                return;
            }
        }
        let mut idx4 = [0u32; 2];
        let mut idx2 = [0u32; 4];
        let mut mask = 0usize;
        let (cur4, base4) = (2 * g, 2 * base);
        for (d, idx) in idx4.iter_mut().enumerate() {
            let h = (v >> (32 - 32 * d)) as u32;
            if let (_, Some(c)) = self.probe4(h, base4) {
                if c + I4_ENTRIES >= cur4 {
                    *idx = c % I4_ENTRIES;
                    mask |= 1 << d;
                }
            }
        }
        let cur2 = 4 * g;
        for (d, idx) in idx2.iter_mut().enumerate() {
            let q = (v >> (48 - 16 * d)) as u16;
            let c = self.t2[q as usize];
            // Entries of earlier inputs are at least a stride behind, so the
            // window check alone rejects them.
            if c + I2_ENTRIES >= cur2 {
                *idx = c % I2_ENTRIES;
                mask |= 1 << (2 + d);
            }
        }
        let t = SELECT[mask] as usize;
        w.put(t as u64, OP_BITS);
        for a in ARGS[t] {
            match a {
                Arg::Data { shift, bits } => {
                    w.put((v >> shift) & ((1u64 << bits) - 1), bits as u32)
                }
                Arg::I2(i) => w.put(idx2[i as usize] as u64, I2_BITS),
                Arg::I4(i) => w.put(idx4[i as usize] as u64, I4_BITS),
                Arg::I8 => unreachable!("I8 is handled above"),
                Arg::None => break,
            }
        }
    }
}
