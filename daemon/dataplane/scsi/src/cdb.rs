//! Bounds-checked big-endian field readers for CDBs and parameter lists.
//! Everything here comes from the network, so nothing indexes directly:
//! a short buffer reads as zeros for the fixed-size fields the dispatcher has
//! already length-checked, and `Cdb::new` refuses CDBs shorter than the
//! opcode's fixed length before any handler runs.

/// Reads `N` bytes at `off` as big-endian, zero-padded past the end of `buf`.
fn be<const N: usize>(buf: &[u8], off: usize) -> u64 {
    let mut v = 0u64;
    for i in 0..N {
        v = (v << 8) | u64::from(buf.get(off + i).copied().unwrap_or(0));
    }
    v
}

pub fn u8_at(buf: &[u8], off: usize) -> u8 {
    buf.get(off).copied().unwrap_or(0)
}
pub fn be16(buf: &[u8], off: usize) -> u16 {
    be::<2>(buf, off) as u16
}
pub fn be24(buf: &[u8], off: usize) -> u32 {
    be::<3>(buf, off) as u32
}
pub fn be32(buf: &[u8], off: usize) -> u32 {
    be::<4>(buf, off) as u32
}
pub fn be64(buf: &[u8], off: usize) -> u64 {
    be::<8>(buf, off)
}

/// Writes `v` big-endian into `buf[off..off+2]` if it fits (response buffers
/// are sized by us, so a miss is a bug, but never a panic).
pub fn put16(buf: &mut [u8], off: usize, v: u16) {
    if let Some(d) = buf.get_mut(off..off + 2) {
        d.copy_from_slice(&v.to_be_bytes());
    }
}
pub fn put32(buf: &mut [u8], off: usize, v: u32) {
    if let Some(d) = buf.get_mut(off..off + 4) {
        d.copy_from_slice(&v.to_be_bytes());
    }
}
pub fn put64(buf: &mut [u8], off: usize, v: u64) {
    if let Some(d) = buf.get_mut(off..off + 8) {
        d.copy_from_slice(&v.to_be_bytes());
    }
}

#[cfg(test)]
/// The CDB length implied by the group code in the opcode's top three bits
/// (SPC-4 4.2.5.1); None for the vendor/reserved groups.
pub fn cdb_length(opcode: u8) -> Option<usize> {
    match opcode >> 5 {
        0 => Some(6),
        1 | 2 => Some(10),
        4 => Some(16),
        5 => Some(12),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_bounds_checked() {
        let b = [0x12, 0x34, 0x56];
        assert_eq!(be16(&b, 0), 0x1234);
        assert_eq!(be16(&b, 2), 0x5600);
        assert_eq!(be32(&b, 10), 0);
        assert_eq!(be64(&[1, 2, 3, 4, 5, 6, 7, 8], 0), 0x0102030405060708);
        let mut out = [0u8; 3];
        put32(&mut out, 0, 7); // does not fit: ignored, no panic
        assert_eq!(out, [0, 0, 0]);
    }
}
