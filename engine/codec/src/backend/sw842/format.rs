//! Constants and template tables of the 842 format (see docs/formats/842.md
//! and the kernel's `lib/842/842.h`).

/// Bits of an opcode.
pub const OP_BITS: u32 = 5;
/// Repeat the last 8 output bytes (n + 1) times; 6-bit n follows.
pub const OP_REPEAT: u32 = 0x1B;
/// 8 zero bytes.
pub const OP_ZEROS: u32 = 0x1C;
/// Software-only: 3-bit n (1..=7) then n raw bytes (input tails shorter than 8).
pub const OP_SHORT_DATA: u32 = 0x1D;
/// End of the stream; the 32-bit CRC follows.
pub const OP_END: u32 = 0x1E;
/// Number of regular templates (0x00..=0x19).
pub const OPS_MAX: usize = 0x1A;

pub const REPEAT_BITS: u32 = 6;
/// Largest repeat count one REPEAT op carries (the field is count - 1).
pub const REPEAT_MAX: u32 = 64;
pub const SHORT_DATA_BITS: u32 = 3;
pub const CRC_BITS: u32 = 32;

/// Index bits and fifo sizes (in entries) of the 2-, 4- and 8-byte fifos.
pub const I2_BITS: u32 = 8;
pub const I4_BITS: u32 = 9;
pub const I8_BITS: u32 = 8;
pub const I2_ENTRIES: u32 = 1 << I2_BITS;
pub const I4_ENTRIES: u32 = 1 << I4_BITS;
pub const I8_ENTRIES: u32 = 1 << I8_BITS;

/// One action of a template: copy `size` raw bytes (`Data`) or an index into
/// the `size`-byte fifo (`Index`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Data(u8),
    Index(u8),
}

use Action::{Data as D, Index as I};

/// The actions of templates 0x00..=0x19, in opcode order; each sums to 8 bytes.
pub const TEMPLATES: [&[Action]; OPS_MAX] = [
    &[D(8)],                   // 0x00
    &[D(4), D(2), I(2)],       // 0x01
    &[D(4), I(2), D(2)],       // 0x02
    &[D(4), I(2), I(2)],       // 0x03
    &[D(4), I(4)],             // 0x04
    &[D(2), I(2), D(4)],       // 0x05
    &[D(2), I(2), D(2), I(2)], // 0x06
    &[D(2), I(2), I(2), D(2)], // 0x07
    &[D(2), I(2), I(2), I(2)], // 0x08
    &[D(2), I(2), I(4)],       // 0x09
    &[I(2), D(2), D(4)],       // 0x0A
    &[I(2), D(4), I(2)],       // 0x0B
    &[I(2), D(2), I(2), D(2)], // 0x0C
    &[I(2), D(2), I(2), I(2)], // 0x0D
    &[I(2), D(2), I(4)],       // 0x0E
    &[I(2), I(2), D(4)],       // 0x0F
    &[I(2), I(2), D(2), I(2)], // 0x10
    &[I(2), I(2), I(2), D(2)], // 0x11
    &[I(2), I(2), I(2), I(2)], // 0x12
    &[I(2), I(2), I(4)],       // 0x13
    &[I(4), D(4)],             // 0x14
    &[I(4), D(2), I(2)],       // 0x15
    &[I(4), I(2), D(2)],       // 0x16
    &[I(4), I(2), I(2)],       // 0x17
    &[I(4), I(4)],             // 0x18
    &[I(8)],                   // 0x19
];

/// The order in which the kernel's compressor tries templates: cheapest
/// first, ties in the kernel's order (which decides the exact bytes when two
/// templates of equal cost both apply). D8 (0x00) is the fallback.
pub const COMPRESS_ORDER: [u8; OPS_MAX] = [
    0x19, 0x18, 0x17, 0x13, 0x12, 0x16, 0x15, 0x0E, 0x09, 0x11, 0x10, 0x0D, 0x08, 0x14, 0x04, 0x0F,
    0x0C, 0x0B, 0x07, 0x06, 0x03, 0x0A, 0x05, 0x02, 0x01, 0x00,
];

/// Encoded size in bits of a template with its arguments.
#[cfg(test)]
pub const fn template_bits(t: usize) -> u32 {
    let acts = TEMPLATES[t];
    let mut bits = OP_BITS;
    let mut i = 0;
    while i < acts.len() {
        bits += match acts[i] {
            Action::Data(s) => 8 * s as u32,
            Action::Index(2) => I2_BITS,
            Action::Index(4) => I4_BITS,
            Action::Index(_) => I8_BITS,
        };
        i += 1;
    }
    bits
}

/// Worst-case compressed size of `len` input bytes: D8 for every block,
/// SHORT_DATA for the tail, END, CRC, byte rounding, padding to 8.
pub const fn compress_bound(len: usize) -> usize {
    let blocks = len / 8;
    let tail = len % 8;
    let mut bits = blocks * (OP_BITS as usize + 64) + OP_BITS as usize + CRC_BITS as usize;
    if tail > 0 {
        bits += OP_BITS as usize + SHORT_DATA_BITS as usize + 8 * tail;
    }
    (bits.div_ceil(8)).div_ceil(8) * 8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_covers_eight_bytes_and_the_order_is_by_cost() {
        for (t, acts) in TEMPLATES.iter().enumerate() {
            let n: u32 = acts
                .iter()
                .map(|a| match a {
                    Action::Data(s) | Action::Index(s) => *s as u32,
                })
                .sum();
            assert_eq!(n, 8, "template {t:#x}");
        }
        let mut seen = [false; OPS_MAX];
        for w in COMPRESS_ORDER.windows(2) {
            assert!(
                template_bits(w[0] as usize) <= template_bits(w[1] as usize),
                "{w:x?}"
            );
        }
        for &t in &COMPRESS_ORDER {
            assert!(!seen[t as usize]);
            seen[t as usize] = true;
        }
        assert_eq!(template_bits(0x19), 13);
        assert_eq!(template_bits(0x00), 69);
        assert_eq!(compress_bound(4096), 4424);
        assert_eq!(compress_bound(0), 8);
    }
}
