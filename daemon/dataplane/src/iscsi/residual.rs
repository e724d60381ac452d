//! Residuals for writes (RFC 7143 11.4.5). For reads the transport sees how
//! much Data-In a command made; for writes only the CDB says how much it
//! wants, so for the block write commands this module reads the transfer
//! length and, when the initiator's Expected Data Transfer Length is
//! shorter, shortens the command to what was sent (as Linux LIO does). Any
//! other command goes to the SCSI layer unchanged.

/// Where a block write CDB keeps its transfer length: (offset, bytes).
fn length_field(opcode: u8) -> Option<(usize, usize)> {
    match opcode {
        0x0a => Some((4, 1)),        // WRITE(6): 0 means 256 blocks
        0x2a | 0x2e => Some((7, 2)), // WRITE(10), WRITE AND VERIFY(10)
        0xaa | 0xae => Some((6, 4)), // WRITE(12), WRITE AND VERIFY(12)
        0x8a | 0x8e => Some((10, 4)), // WRITE(16), WRITE AND VERIFY(16)
        _ => None,
    }
}

fn read_be(b: &[u8]) -> u64 {
    b.iter().fold(0u64, |acc, x| (acc << 8) | *x as u64)
}

/// What a write will do given the initiator's EDTL.
#[derive(Debug, PartialEq, Eq)]
pub struct WritePlan {
    /// Bytes of Data-Out to hand to the SCSI layer.
    pub data_len: usize,
    /// (flag bit, count) for the SCSI Response: 0x04 overflow, 0x02 underflow.
    pub residual: Option<(u8, u32)>,
}

/// Plan a write; may shorten the CDB's transfer length in place.
pub fn plan_write(cdb: &mut [u8], block_size: u32, edtl: u32) -> WritePlan {
    let same = WritePlan { data_len: edtl as usize, residual: None };
    let Some((off, n)) = cdb.first().and_then(|op| length_field(*op)) else { return same };
    let Some(field) = cdb.get(off..off + n) else { return same };
    let mut blocks = read_be(field);
    if cdb[0] == 0x0a && blocks == 0 {
        blocks = 256;
    }
    let bs = block_size.max(1) as u64;
    let wanted = blocks.saturating_mul(bs);
    let edtl64 = edtl as u64;
    if wanted == edtl64 {
        return same;
    }
    if wanted < edtl64 {
        return WritePlan {
            data_len: wanted as usize,
            residual: Some((0x02, (edtl64 - wanted).min(u32::MAX as u64) as u32)),
        };
    }
    // Overflow: write only the whole blocks that were sent.
    let fit = edtl64 / bs;
    let mut v = fit;
    for i in (0..n).rev() {
        cdb[off + i] = v as u8;
        v >>= 8;
    }
    if cdb[0] == 0x0a && fit == 0 {
        // WRITE(6) cannot say zero blocks; nothing to write at all.
        return WritePlan { data_len: 0, residual: Some((0x04, wanted.min(u32::MAX as u64) as u32)) };
    }
    WritePlan {
        data_len: (fit * bs) as usize,
        residual: Some((0x04, (wanted - edtl64).min(u32::MAX as u64) as u32)),
    }
}

/// WRITE(6) with no blocks to write after shortening: skip the SCSI layer.
pub fn is_empty_write6(cdb: &[u8], plan: &WritePlan) -> bool {
    cdb.first() == Some(&0x0a) && plan.data_len == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write10(blocks: u16) -> Vec<u8> {
        let mut c = vec![0u8; 16];
        c[0] = 0x2a;
        c[7..9].copy_from_slice(&blocks.to_be_bytes());
        c
    }

    #[test]
    fn exact_is_untouched() {
        let mut c = write10(2);
        assert_eq!(plan_write(&mut c, 512, 1024), WritePlan { data_len: 1024, residual: None });
    }

    #[test]
    fn underflow_writes_what_the_cdb_says() {
        let mut c = write10(1);
        assert_eq!(plan_write(&mut c, 512, 10000), WritePlan { data_len: 512, residual: Some((0x02, 9488)) });
    }

    #[test]
    fn overflow_shortens_the_cdb() {
        let mut c = write10(2);
        assert_eq!(plan_write(&mut c, 512, 512), WritePlan { data_len: 512, residual: Some((0x04, 512)) });
        assert_eq!(&c[7..9], &[0, 1]);
        let mut c = write10(1);
        assert_eq!(plan_write(&mut c, 512, 200), WritePlan { data_len: 0, residual: Some((0x04, 312)) });
        assert_eq!(&c[7..9], &[0, 0]);
    }

    #[test]
    fn other_commands_pass_through() {
        let mut c = vec![0x35u8; 10];
        assert_eq!(plan_write(&mut c, 512, 77), WritePlan { data_len: 77, residual: None });
        let mut short = vec![0x2au8, 0];
        assert_eq!(plan_write(&mut short, 512, 5).residual, None);
    }
}
