//! SYNCHRONIZE CACHE and PRE-FETCH (SBC-3 5.22, 5.10): the page cache is
//! the cache, so these map to fdatasync and posix_fadvise(WILLNEED).

use crate::cdb;
use crate::sense;
use crate::status;
use crate::target::{Cmd, CmdResult};

/// LBA and block count of a 10- or 16-byte CDB with the SBC layout.
fn lba_and_count(cdb: &[u8]) -> (u64, u64) {
    if cdb.len() >= 16 && cdb[0] >= 0x80 {
        (cdb::be64(cdb, 2), u64::from(cdb::be32(cdb, 10)))
    } else {
        (u64::from(cdb::be32(cdb, 2)), u64::from(cdb::be16(cdb, 7)))
    }
}

/// Flushes the whole file regardless of range: fdatasync has no range
/// form worth using here (sync_file_range does not flush metadata), and a
/// range outside the medium is still an error.
pub fn synchronize_cache(cmd: &mut Cmd) -> CmdResult {
    let (lba, count) = lba_and_count(cmd.cdb);
    if !cmd.lu.range_ok(lba, count) {
        return Err(sense::LOGICAL_BLOCK_ADDRESS_OUT_OF_RANGE);
    }
    cmd.lu.sync().map_err(|_| sense::WRITE_ERROR)?;
    Ok(status::GOOD)
}

/// CONDITION MET when the whole range fits in the cache (we hint the kernel
/// to read it ahead); GOOD when it did not take the hint. Count 0 means "to
/// the end of the medium".
pub fn pre_fetch(cmd: &mut Cmd) -> CmdResult {
    let (lba, mut count) = lba_and_count(cmd.cdb);
    if lba > cmd.lu.blocks() {
        return Err(sense::LOGICAL_BLOCK_ADDRESS_OUT_OF_RANGE);
    }
    if count == 0 {
        count = cmd.lu.blocks() - lba;
    }
    if !cmd.lu.range_ok(lba, count) {
        return Err(sense::LOGICAL_BLOCK_ADDRESS_OUT_OF_RANGE);
    }
    if cmd.lu.prefetch(lba, count) {
        Ok(status::CONDITION_MET)
    } else {
        Ok(status::GOOD)
    }
}
