//! CRC32C (Castagnoli), the iSCSI header and data digest (RFC 7143 13.1,
//! appendix B.4), from the `crc32c` crate: the SSE4.2 `crc32` instruction
//! where the CPU has it (chosen at run time), its own tables elsewhere.
//! Measured against the slicing-by-8 tables this module had before
//! (docs/benchmarks.md, "Hot paths on the crates"): on iSCSI-sized buffers
//! the instruction is many times faster, so ours went.

/// CRC32C of several pieces, as if concatenated.
pub fn crc32c_parts(parts: &[&[u8]]) -> u32 {
    parts.iter().fold(0, |crc, p| crc32c::crc32c_append(crc, p))
}

/// CRC32C of one buffer.
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_value() {
        // The standard check value for CRC-32C.
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
    }

    #[test]
    fn rfc3720_examples() {
        // RFC 3720 B.4: 32 bytes of zeros, of ones, incrementing, decrementing.
        assert_eq!(crc32c(&[0u8; 32]), 0x8A91_36AA);
        assert_eq!(crc32c(&[0xffu8; 32]), 0x62A8_AB43);
        let inc: Vec<u8> = (0..32).collect();
        assert_eq!(crc32c(&inc), 0x46DD_794E);
        let dec: Vec<u8> = (0..32).rev().collect();
        assert_eq!(crc32c(&dec), 0x113F_DB5C);
    }

    #[test]
    fn parts_equal_whole() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7) as u8).collect();
        assert_eq!(crc32c_parts(&[&data[..13], &data[13..500], &data[500..]]), crc32c(&data));
        assert_eq!(crc32c_parts(&[]), crc32c(b""));
    }

    #[test]
    fn every_length_and_alignment() {
        // The hardware path works in 8-byte words with a byte-wise head and
        // tail: check odd lengths and misaligned starts against a bitwise
        // reference, so a wrong tail or head cannot hide.
        fn bitwise(data: &[u8]) -> u32 {
            let mut crc = !0u32;
            for &b in data {
                crc ^= b as u32;
                for _ in 0..8 {
                    crc = if crc & 1 != 0 { (crc >> 1) ^ 0x82F6_3B78 } else { crc >> 1 };
                }
            }
            !crc
        }
        let data: Vec<u8> = (0..600u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        for start in 0..9 {
            for len in (0..300).chain([511, 512, 513]) {
                let s = &data[start..start + len];
                assert_eq!(crc32c(s), bitwise(s), "start {start} len {len}");
            }
        }
    }
}
