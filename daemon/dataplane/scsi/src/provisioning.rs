//! Logical block provisioning (SBC-3 4.7): UNMAP, WRITE SAME (with and
//! without UNMAP) and GET LBA STATUS. A thin file volume deallocates by
//! punching holes, and reports mapped/deallocated extents by SEEK_DATA and
//! SEEK_HOLE, so what GET LBA STATUS says is what the filesystem holds.

use crate::cdb;
use crate::limits::Limits;
use crate::locks;
use crate::opcodes::WRITE_SAME_16;
use crate::sense::{self, Sense};
use crate::status;
use crate::target::{Cmd, CmdResult};

const UNMAP_BIT: u8 = 0x08;
const UNMAP_HEADER_LEN: usize = 8;
const UNMAP_DESCRIPTOR_LEN: usize = 16;

/// UNMAP (SBC-3 5.28). Every descriptor is validated before any block is
/// deallocated, so a bad list changes nothing.
pub fn unmap(cmd: &mut Cmd) -> CmdResult {
    cmd.check_writable()?;
    let param_len = usize::from(cdb::be16(cmd.cdb, 7));
    if param_len == 0 {
        return Ok(status::GOOD);
    }
    let list = &cmd.data_out[..param_len.min(cmd.data_out.len())];
    if list.len() < UNMAP_HEADER_LEN {
        return Err(sense::PARAMETER_LIST_LENGTH_ERROR);
    }
    let bd_len = usize::from(cdb::be16(list, 2));
    if bd_len > list.len() - UNMAP_HEADER_LEN {
        return Err(sense::PARAMETER_LIST_LENGTH_ERROR);
    }
    // An incomplete trailing descriptor is ignored (SBC-3 5.28.2).
    let count = bd_len / UNMAP_DESCRIPTOR_LEN;
    let limits = Limits::for_unit(cmd.lu);
    if count > limits.max_unmap_descriptors as usize {
        return Err(Sense::invalid_param_field(2, None));
    }
    let descriptors = || {
        (0..count).map(|i| {
            let d = UNMAP_HEADER_LEN + i * UNMAP_DESCRIPTOR_LEN;
            (d, cdb::be64(list, d), u64::from(cdb::be32(list, d + 8)))
        })
    };
    for (d, lba, blocks) in descriptors() {
        if blocks > u64::from(limits.max_unmap_lba_count) {
            return Err(Sense::invalid_param_field((d + 8) as u16, None));
        }
        if !cmd.lu.range_ok(lba, blocks) {
            return Err(sense::LOGICAL_BLOCK_ADDRESS_OUT_OF_RANGE);
        }
    }
    let _order = locks::read(cmd.lu.write_order());
    for (_, lba, blocks) in descriptors() {
        cmd.lu.deallocate(lba, blocks).map_err(|_| sense::WRITE_ERROR)?;
    }
    Ok(status::GOOD)
}

/// WRITE SAME(10)/(16) (SBC-3 5.42, 5.43): NUMBER OF LOGICAL BLOCKS 0 means
/// "through the last LBA" (we report WSNZ=0). With UNMAP we deallocate
/// (the blocks then read as zeros: LBPRZ); otherwise we write the block.
pub fn write_same(cmd: &mut Cmd) -> CmdResult {
    cmd.check_writable()?;
    let sixteen = cdb::u8_at(cmd.cdb, 0) == WRITE_SAME_16;
    let (lba, mut blocks, len_field) = if sixteen {
        (cdb::be64(cmd.cdb, 2), u64::from(cdb::be32(cmd.cdb, 10)), 10)
    } else {
        (u64::from(cdb::be32(cmd.cdb, 2)), u64::from(cdb::be16(cmd.cdb, 7)), 7)
    };
    let unmap = cdb::u8_at(cmd.cdb, 1) & UNMAP_BIT != 0;
    if lba > cmd.lu.blocks() {
        return Err(sense::LOGICAL_BLOCK_ADDRESS_OUT_OF_RANGE);
    }
    if blocks == 0 {
        blocks = cmd.lu.blocks() - lba;
    }
    if blocks > Limits::for_unit(cmd.lu).max_write_same {
        return Err(Sense::invalid_cdb_field(len_field, None));
    }
    if !cmd.lu.range_ok(lba, blocks) {
        return Err(sense::LOGICAL_BLOCK_ADDRESS_OUT_OF_RANGE);
    }
    let bs = cmd.lu.block_size() as usize;
    if cmd.data_out.len() != bs {
        return Err(Sense::invalid_cdb_field(len_field, None));
    }
    let block = cmd.data_out;
    let _order = locks::read(cmd.lu.write_order());
    if unmap {
        // SBC-3 lets the device server unmap instead of writing; with LBPRZ
        // the blocks then read as zeros whatever the Data-Out block held
        // (libiscsi's suite and Linux LIO rely on exactly this).
        cmd.lu.deallocate(lba, blocks).map_err(|_| sense::WRITE_ERROR)?;
        return Ok(status::GOOD);
    }
    // Repeat the block into a buffer of up to 1 MiB and write that in strides.
    let per_chunk = ((1usize << 20) / bs).max(1) as u64;
    let chunk_blocks = blocks.min(per_chunk) as usize;
    let mut buf = Vec::with_capacity(chunk_blocks * bs);
    for _ in 0..chunk_blocks {
        buf.extend_from_slice(block);
    }
    let mut done = 0u64;
    while done < blocks {
        let n = (blocks - done).min(per_chunk) as usize;
        cmd.lu.write_at(lba + done, &buf[..n * bs]).map_err(|_| sense::WRITE_ERROR)?;
        done += n as u64;
    }
    Ok(status::GOOD)
}

/// Provisioning status values of an LBA status descriptor (SBC-3 table 64).
const MAPPED: u8 = 0;
const DEALLOCATED: u8 = 1;
const MAX_DESCRIPTORS: usize = 64;

/// GET LBA STATUS (SBC-3 5.17): extents from the requested LBA on, each a
/// run of blocks with one provisioning status, as many as fit.
pub fn get_lba_status(cmd: &mut Cmd) -> CmdResult {
    let start = cdb::be64(cmd.cdb, 2);
    let alloc = cdb::be32(cmd.cdb, 10) as usize;
    if start >= cmd.lu.blocks() {
        return Err(sense::LOGICAL_BLOCK_ADDRESS_OUT_OF_RANGE);
    }
    let room = (alloc.saturating_sub(8) / 16).clamp(1, MAX_DESCRIPTORS);
    let out = &mut *cmd.data_in;
    out.resize(8, 0);
    let mut lba = start;
    while lba < cmd.lu.blocks() && (out.len() - 8) / 16 < room {
        let (mapped, run) = cmd.lu.extent_at(lba).map_err(|_| sense::UNRECOVERED_READ_ERROR)?;
        let run = run.clamp(1, u64::from(u32::MAX));
        let mut d = [0u8; 16];
        cdb::put64(&mut d, 0, lba);
        cdb::put32(&mut d, 8, run as u32);
        d[12] = if mapped { MAPPED } else { DEALLOCATED };
        out.extend_from_slice(&d);
        lba += run;
    }
    let len = (out.len() - 4) as u32;
    cdb::put32(out, 0, len);
    out.truncate(alloc);
    Ok(status::GOOD)
}
