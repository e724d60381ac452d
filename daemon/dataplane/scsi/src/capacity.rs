//! READ CAPACITY(10) and (16) (SBC-3 5.15, 5.16).

use crate::cdb;
use crate::sense::Sense;
use crate::status;
use crate::target::{Cmd, CmdResult};

pub fn read_capacity_10(cmd: &mut Cmd) -> CmdResult {
    // PMI and the LBA field are obsolete; SBC-3 still requires LBA 0 when PMI is 0.
    let pmi = cdb::u8_at(cmd.cdb, 8) & 0x01 != 0;
    if !pmi && cdb::be32(cmd.cdb, 2) != 0 {
        return Err(Sense::invalid_cdb_field(2, None));
    }
    let last = cmd.lu.blocks().saturating_sub(1);
    // Too big for 32 bits: 0xFFFFFFFF tells the initiator to use READ CAPACITY(16).
    let last32 = u32::try_from(last).unwrap_or(u32::MAX);
    cmd.data_in.resize(8, 0);
    cdb::put32(cmd.data_in, 0, last32);
    cdb::put32(cmd.data_in, 4, cmd.lu.block_size());
    Ok(status::GOOD)
}

/// READ CAPACITY(16) byte 14: LBPME (bit 7) and LBPRZ (bit 6).
const LBPME: u8 = 0x80;
const LBPRZ: u8 = 0x40;

pub fn read_capacity_16(cmd: &mut Cmd) -> CmdResult {
    let alloc = cdb::be32(cmd.cdb, 10) as usize;
    let lu = cmd.lu;
    let out = &mut *cmd.data_in;
    out.resize(32, 0);
    cdb::put64(out, 0, lu.blocks().saturating_sub(1));
    cdb::put32(out, 8, lu.block_size());
    // byte 12: no protection. Byte 13: LOGICAL BLOCKS PER PHYSICAL BLOCK
    // EXPONENT 0, although a hole cannot be smaller than the 4 KiB
    // filesystem block: VPD B0h's OPTIMAL UNMAP GRANULARITY says that, and
    // libiscsi's GET LBA STATUS test expects descriptors to start on a
    // physical block boundary (against SBC-3) once the exponent is non-zero.
    // Bytes 14-15: LBPME|LBPRZ, lowest aligned LBA 0.
    out[14] = LBPME | LBPRZ;
    out.truncate(alloc);
    Ok(status::GOOD)
}

