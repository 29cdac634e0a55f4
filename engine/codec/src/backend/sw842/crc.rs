//! The CRC that sw842 appends: the kernel's `crc32_be(0, data, len)`.
//!
//! Polynomial 0x04C11DB7, processed MSB-first (not reflected), initial value 0,
//! no final XOR. This is *not* the zlib/IEEE CRC-32 (`crc32fast`), which is the
//! reflected form with pre- and post-inversion, so we compute it ourselves with
//! eight 256-entry tables (slice-by-8), built at compile time.

const POLY: u32 = 0x04C1_1DB7;

const fn build_tables() -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut b = 0;
    while b < 256 {
        let mut crc = (b as u32) << 24;
        let mut i = 0;
        while i < 8 {
            crc = if crc & 0x8000_0000 != 0 {
                (crc << 1) ^ POLY
            } else {
                crc << 1
            };
            i += 1;
        }
        t[0][b] = crc;
        b += 1;
    }
    // t[k][b] is the CRC contribution of byte b followed by k zero bytes.
    let mut k = 1;
    while k < 8 {
        let mut b = 0;
        while b < 256 {
            let prev = t[k - 1][b];
            t[k][b] = (prev << 8) ^ t[0][(prev >> 24) as usize];
            b += 1;
        }
        k += 1;
    }
    t
}

static TABLES: [[u32; 256]; 8] = build_tables();

/// Continue a big-endian CRC-32 over `data` (the kernel's `crc32_be(crc, data, len)`).
pub fn crc32_be(mut crc: u32, data: &[u8]) -> u32 {
    let t = &TABLES;
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let hi = crc ^ u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
        let lo = u32::from_be_bytes([c[4], c[5], c[6], c[7]]);
        crc = t[7][(hi >> 24) as usize]
            ^ t[6][((hi >> 16) & 0xff) as usize]
            ^ t[5][((hi >> 8) & 0xff) as usize]
            ^ t[4][(hi & 0xff) as usize]
            ^ t[3][(lo >> 24) as usize]
            ^ t[2][((lo >> 16) & 0xff) as usize]
            ^ t[1][((lo >> 8) & 0xff) as usize]
            ^ t[0][(lo & 0xff) as usize];
    }
    for &b in chunks.remainder() {
        crc = (crc << 8) ^ t[0][((crc >> 24) ^ b as u32) as usize];
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bit-at-a-time reference, straight from the definition.
    fn crc_bitwise(mut crc: u32, data: &[u8]) -> u32 {
        for &b in data {
            crc ^= (b as u32) << 24;
            for _ in 0..8 {
                crc = if crc & 0x8000_0000 != 0 {
                    (crc << 1) ^ POLY
                } else {
                    crc << 1
                };
            }
        }
        crc
    }

    #[test]
    fn matches_bitwise_definition_at_every_length() {
        let data: Vec<u8> = (0..300u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for len in 0..data.len() {
            assert_eq!(
                crc32_be(0, &data[..len]),
                crc_bitwise(0, &data[..len]),
                "len {len}"
            );
        }
        assert_eq!(
            crc32_be(0x1234_5678, &data),
            crc_bitwise(0x1234_5678, &data)
        );
    }

    #[test]
    fn known_values() {
        // CRC-32/MPEG-2 uses the same polynomial and bit order with init
        // 0xFFFFFFFF; its check value for "123456789" is 0x0376E6E7.
        assert_eq!(crc32_be(0xFFFF_FFFF, b"123456789"), 0x0376_E6E7);
        // With init 0, zeros stay zero (the kernel's all-zero page trailer).
        assert_eq!(crc32_be(0, &[0u8; 4096]), 0);
        assert_eq!(crc32_be(0, b""), 0);
    }
}
