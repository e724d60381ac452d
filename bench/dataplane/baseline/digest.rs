//! CRC32C (Castagnoli), the iSCSI header and data digest (RFC 7143 13.1,
//! appendix B.4). Table driven, slicing by 8: digests run on every PDU when
//! negotiated, so the byte-at-a-time loop would cost more than the copy.

const POLY: u32 = 0x82F6_3B78; // reflected 0x1EDC6F41

/// Eight 256-entry tables, built at compile time.
const TABLES: [[u32; 256]; 8] = build_tables();

const fn build_tables() -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut s = 1;
    while s < 8 {
        let mut i = 0;
        while i < 256 {
            let prev = t[s - 1][i];
            t[s][i] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            i += 1;
        }
        s += 1;
    }
    t
}

/// Continue a CRC32C over `data` from state `crc` (start with `!0`, finish with `!`).
pub fn update(mut crc: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let lo = u32::from_le_bytes([c[0], c[1], c[2], c[3]]) ^ crc;
        let hi = u32::from_le_bytes([c[4], c[5], c[6], c[7]]);
        crc = TABLES[7][(lo & 0xff) as usize]
            ^ TABLES[6][((lo >> 8) & 0xff) as usize]
            ^ TABLES[5][((lo >> 16) & 0xff) as usize]
            ^ TABLES[4][(lo >> 24) as usize]
            ^ TABLES[3][(hi & 0xff) as usize]
            ^ TABLES[2][((hi >> 8) & 0xff) as usize]
            ^ TABLES[1][((hi >> 16) & 0xff) as usize]
            ^ TABLES[0][(hi >> 24) as usize];
    }
    for &b in chunks.remainder() {
        crc = (crc >> 8) ^ TABLES[0][((crc ^ b as u32) & 0xff) as usize];
    }
    crc
}

/// CRC32C of several pieces, as if concatenated.
pub fn crc32c_parts(parts: &[&[u8]]) -> u32 {
    !parts.iter().fold(!0u32, |crc, p| update(crc, p))
}

/// CRC32C of one buffer.
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c_parts(&[data])
}
