//! READ, WRITE, VERIFY, WRITE AND VERIFY (6/10/12/16 as SBC-3 defines them),
//! COMPARE AND WRITE and ORWRITE(16). The hot path: decode, range-check, one pread or
//! pwrite straight between the backing file and the transport's buffers.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::backing::LogicalUnit;
use crate::plan::BlockIo;

use crate::cdb;
use crate::limits::Limits;
use crate::locks;
use crate::opcodes::*;
use crate::sense::{self, Sense};
use crate::status;
use crate::target::{Cmd, CmdResult, Lun};

/// FUA: the data must reach stable storage before status (we advertise a
/// volatile write cache, so this means fdatasync).
const FUA: u8 = 0x08;

/// (LBA, transfer length, byte offset of the length field) of a
/// READ/WRITE/VERIFY-family CDB, per its size.
pub fn decode(cdb: &[u8]) -> (u64, u64, u16) {
    match cdb::u8_at(cdb, 0) {
        READ_6 | WRITE_6 => {
            let lba = u64::from(cdb::be24(cdb, 1) & 0x1F_FFFF);
            // SBC-3 5.7: a TRANSFER LENGTH of 0 in READ(6)/WRITE(6) means 256.
            let len = match cdb::u8_at(cdb, 4) {
                0 => 256,
                n => u64::from(n),
            };
            (lba, len, 4)
        }
        op if (0x80..0xA0).contains(&op) => (cdb::be64(cdb, 2), u64::from(cdb::be32(cdb, 10)), 10),
        op if op >= 0xA0 => (u64::from(cdb::be32(cdb, 2)), u64::from(cdb::be32(cdb, 6)), 6),
        _ => (u64::from(cdb::be32(cdb, 2)), u64::from(cdb::be16(cdb, 7)), 7),
    }
}

/// Common checks: transfer length within MAXIMUM TRANSFER LENGTH, range
/// inside the medium. Returns the transfer size in bytes.
fn check(cmd: &Cmd, lba: u64, len: u64, len_field: u16) -> Result<usize, Sense> {
    check_unit(cmd.lu, lba, len, len_field)
}

fn check_unit(lu: &LogicalUnit, lba: u64, len: u64, len_field: u16) -> Result<usize, Sense> {
    if len > u64::from(Limits::for_unit(lu).max_transfer) {
        return Err(Sense::invalid_cdb_field(len_field, None));
    }
    if !lu.range_ok(lba, len) {
        return Err(sense::LOGICAL_BLOCK_ADDRESS_OUT_OF_RANGE);
    }
    Ok((len << lu.block_shift()) as usize)
}

/// The Data-Out buffer must hold the whole transfer.
fn data_out<'a>(cmd: &Cmd<'a>, nbytes: usize, len_field: u16) -> Result<&'a [u8], Sense> {
    cmd.data_out.get(..nbytes).ok_or(Sense::invalid_cdb_field(len_field, None))
}

/// A write's LBA and Data-Out, once the unit takes writes and the transfer
/// passes `check` and `data_out`.
fn write_args<'a>(cmd: &Cmd<'a>) -> Result<(u64, &'a [u8]), Sense> {
    cmd.check_writable()?;
    let (lba, len, field) = decode(cmd.cdb);
    let nbytes = check(cmd, lba, len, field)?;
    Ok((lba, data_out(cmd, nbytes, field)?))
}

/// The split path (`Target::plan`): a plain READ or WRITE that passed the
/// target's checks becomes one transfer, unless it has nothing to move or a
/// write must be synced before status (those go through `execute`).
pub(crate) fn plan(slot: &Arc<Lun>, cdb: &[u8], data_out_len: usize) -> Result<Option<BlockIo>, Sense> {
    let write = matches!(cdb::u8_at(cdb, 0), WRITE_6 | WRITE_10 | WRITE_12 | WRITE_16);
    let lu = &slot.lu;
    if write {
        slot.check_writable()?;
    }
    let (lba, len, field) = decode(cdb);
    let nbytes = check_unit(lu, lba, len, field)?;
    if nbytes == 0 {
        return Ok(None);
    }
    if write {
        if data_out_len < nbytes {
            return Err(Sense::invalid_cdb_field(field, None));
        }
        if needs_sync(cdb, slot) {
            return Ok(None);
        }
    }
    Ok(Some(BlockIo::new(slot.clone(), write, lu.offset(lba), nbytes)))
}

/// The plain transfers `plan` takes.
pub(crate) fn is_plain(opcode: u8) -> bool {
    matches!(opcode, READ_6 | READ_10 | READ_12 | READ_16 | WRITE_6 | WRITE_10 | WRITE_12 | WRITE_16)
}

pub fn read(cmd: &mut Cmd) -> CmdResult {
    let (lba, len, field) = decode(cmd.cdb);
    let nbytes = check(cmd, lba, len, field)?;
    // FUA on a read asks for the medium, not the cache; the page cache is
    // coherent with the file, so there is nothing stale to bypass.
    cmd.lu.read_into(lba, nbytes, cmd.data_in).map_err(|_| sense::UNRECOVERED_READ_ERROR)?;
    Ok(status::GOOD)
}

pub fn write(cmd: &mut Cmd) -> CmdResult {
    let (lba, data) = write_args(cmd)?;
    let _order = locks::read(cmd.lu.write_order());
    cmd.lu.write_at(lba, data).map_err(|_| sense::WRITE_ERROR)?;
    sync_if_needed(cmd)?;
    Ok(status::GOOD)
}

/// FUA (not in the 6-byte CDBs, whose byte 1 is LBA) or a disabled write
/// cache make a write durable before status.
fn sync_if_needed(cmd: &Cmd) -> Result<(), Sense> {
    if needs_sync(cmd.cdb, cmd.lun) {
        cmd.lu.sync().map_err(|_| sense::WRITE_ERROR)?;
    }
    Ok(())
}

fn needs_sync(cdb: &[u8], lun: &Lun) -> bool {
    let fua = cdb.len() > 6 && cdb::u8_at(cdb, 0) != WRITE_6 && cdb::u8_at(cdb, 1) & FUA != 0;
    fua || !lun.write_cache.load(Ordering::Relaxed)
}

/// BYTCHK values (SBC-3 5.29, table 71).
const BYTCHK_NONE: u8 = 0;
const BYTCHK_COMPARE: u8 = 1;
const BYTCHK_ONE_BLOCK: u8 = 3;

/// First differing byte offset of `a` vs `b`.
fn first_difference(a: &[u8], b: &[u8]) -> Option<usize> {
    a.iter().zip(b.iter()).position(|(x, y)| x != y)
}

fn miscompare(offset: usize) -> Sense {
    sense::MISCOMPARE_DURING_VERIFY_OPERATION.with_information(offset as u32)
}

pub fn verify(cmd: &mut Cmd) -> CmdResult {
    let (lba, len, field) = decode(cmd.cdb);
    let bytchk = (cdb::u8_at(cmd.cdb, 1) >> 1) & 0x03;
    if bytchk == 2 {
        return Err(Sense::invalid_cdb_field(1, Some(2)));
    }
    let nbytes = check(cmd, lba, len, field)?;
    let mut medium = Vec::new();
    cmd.lu.read_into(lba, nbytes, &mut medium).map_err(|_| sense::UNRECOVERED_READ_ERROR)?;
    match bytchk {
        BYTCHK_NONE => Ok(status::GOOD),
        BYTCHK_COMPARE => {
            let expected = data_out(cmd, nbytes, field)?;
            match first_difference(&medium, expected) {
                Some(off) => Err(miscompare(off)),
                None => Ok(status::GOOD),
            }
        }
        BYTCHK_ONE_BLOCK => {
            let bs = cmd.lu.block_size() as usize;
            let block = data_out(cmd, bs.min(nbytes), field)?;
            for (i, chunk) in medium.chunks(bs).enumerate() {
                if let Some(off) = first_difference(chunk, block) {
                    return Err(miscompare(i * bs + off));
                }
            }
            Ok(status::GOOD)
        }
        _ => Err(Sense::invalid_cdb_field(1, Some(2))),
    }
}

/// WRITE AND VERIFY: write, then (BYTCHK=1) read back and compare.
pub fn write_and_verify(cmd: &mut Cmd) -> CmdResult {
    let (lba, data) = write_args(cmd)?;
    let bytchk = cdb::u8_at(cmd.cdb, 1) & 0x02 != 0;
    let _order = locks::read(cmd.lu.write_order());
    cmd.lu.write_at(lba, data).map_err(|_| sense::WRITE_ERROR)?;
    // Verification is of the medium: make the data durable first.
    cmd.lu.sync().map_err(|_| sense::WRITE_ERROR)?;
    if bytchk {
        let mut back = Vec::new();
        cmd.lu.read_into(lba, data.len(), &mut back).map_err(|_| sense::UNRECOVERED_READ_ERROR)?;
        if let Some(off) = first_difference(&back, data) {
            return Err(miscompare(off));
        }
    }
    Ok(status::GOOD)
}

/// COMPARE AND WRITE (SBC-3 5.2): Data-Out is the verify data then the
/// write data, NUMBER OF LOGICAL BLOCKS each. The compare and the write run
/// under the unit's write-order lock held exclusively, so no other write
/// (which holds it shared) lands between them.
pub fn compare_and_write(cmd: &mut Cmd) -> CmdResult {
    cmd.check_writable()?;
    let lba = cdb::be64(cmd.cdb, 2);
    let blocks = u64::from(cdb::u8_at(cmd.cdb, 13));
    if blocks > u64::from(Limits::for_unit(cmd.lu).max_compare_and_write) {
        return Err(Sense::invalid_cdb_field(13, None));
    }
    if !cmd.lu.range_ok(lba, blocks) {
        return Err(sense::LOGICAL_BLOCK_ADDRESS_OUT_OF_RANGE);
    }
    // Data-Out must be exactly verify + write data; this also catches a
    // 256-block request whose count wrapped to 0 in the one-byte field.
    let n = (blocks << cmd.lu.block_shift()) as usize;
    if cmd.data_out.len() != 2 * n {
        return Err(Sense::invalid_cdb_field(13, None));
    }
    if blocks == 0 {
        return Ok(status::GOOD);
    }
    let (verify_data, write_data) = cmd.data_out.split_at(n);
    let mut current = Vec::new();
    let _exclusive = locks::write(cmd.lu.write_order());
    cmd.lu.read_into(lba, n, &mut current).map_err(|_| sense::UNRECOVERED_READ_ERROR)?;
    if let Some(off) = first_difference(&current, verify_data) {
        return Err(miscompare(off));
    }
    cmd.lu.write_at(lba, write_data).map_err(|_| sense::WRITE_ERROR)?;
    sync_if_needed(cmd)?;
    Ok(status::GOOD)
}

/// ORWRITE(16) (SBC-3 5.9), the default bitmap operation: OR the Data-Out
/// into the medium. Read-modify-write under the exclusive write-order lock,
/// like COMPARE AND WRITE, so concurrent writes cannot be lost.
pub fn orwrite(cmd: &mut Cmd) -> CmdResult {
    let (lba, data) = write_args(cmd)?;
    let mut medium = Vec::new();
    let _exclusive = locks::write(cmd.lu.write_order());
    cmd.lu.read_into(lba, data.len(), &mut medium).map_err(|_| sense::UNRECOVERED_READ_ERROR)?;
    for (m, d) in medium.iter_mut().zip(data.iter()) {
        *m |= *d;
    }
    cmd.lu.write_at(lba, &medium).map_err(|_| sense::WRITE_ERROR)?;
    sync_if_needed(cmd)?;
    Ok(status::GOOD)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_each_size() {
        assert_eq!(decode(&[READ_6, 0x01, 0x02, 0x03, 0, 0]), (0x10203, 256, 4));
        assert_eq!(decode(&[READ_6, 0xFF, 0xFF, 0xFF, 7, 0]), (0x1F_FFFF, 7, 4));
        assert_eq!(decode(&[READ_10, 0, 0, 0, 0, 1, 0, 0, 2, 0]), (1, 2, 7));
        assert_eq!(decode(&[READ_12, 0, 0, 0, 0, 9, 0, 0, 1, 0, 0, 0]), (9, 0x100, 6));
        let mut c16 = [0u8; 16];
        c16[0] = READ_16;
        c16[2] = 0x80;
        c16[13] = 3;
        assert_eq!(decode(&c16), (0x8000_0000_0000_0000, 3, 10));
    }
}
