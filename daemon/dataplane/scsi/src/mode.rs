//! MODE SENSE and MODE SELECT (6 and 10) with the pages an SBC disk is
//! expected to have: Caching (08h), Control (0Ah), Informational Exceptions
//! Control (1Ch). Only WCE in the caching page is changeable: clearing it
//! makes every write synchronous (fdatasync before status).

use std::sync::atomic::Ordering;

use crate::cdb;
use crate::opcodes::{MODE_SELECT_6, MODE_SENSE_6};
use crate::sense::{self, Sense};
use crate::status;
use crate::target::{Cmd, CmdResult, Lun};

pub const PAGE_CACHING: u8 = 0x08;
pub const PAGE_CONTROL: u8 = 0x0A;
pub const PAGE_INFORMATIONAL_EXCEPTIONS: u8 = 0x1C;
pub const PAGE_ALL: u8 = 0x3F;
const SUBPAGE_ALL: u8 = 0xFF;

/// Page control values (SPC-4 table 97).
const PC_CURRENT: u8 = 0;
const PC_CHANGEABLE: u8 = 1;
const PC_DEFAULT: u8 = 2;
const PC_SAVED: u8 = 3;

/// Device-specific parameter of the mode parameter header (SBC-3 6.4.1).
const WP: u8 = 0x80;
const DPOFUA: u8 = 0x10;

/// WCE: bit 2 of caching page byte 2.
const WCE: u8 = 0x04;
/// SWP: bit 3 of control page byte 4.
const SWP: u8 = 0x08;

/// One page as it reads under page control `pc`.
fn page(lun: &Lun, code: u8, pc: u8) -> Vec<u8> {
    let changeable = pc == PC_CHANGEABLE;
    match code {
        PAGE_CACHING => {
            let mut p = vec![0u8; 20];
            p[0] = PAGE_CACHING;
            p[1] = 18;
            let wce = if pc == PC_DEFAULT { true } else { lun.write_cache.load(Ordering::Relaxed) };
            if changeable || wce {
                p[2] = WCE;
            }
            p
        }
        PAGE_CONTROL => {
            let mut p = vec![0u8; 12];
            p[0] = PAGE_CONTROL;
            p[1] = 10;
            let swp = pc != PC_DEFAULT && lun.software_write_protect.load(Ordering::Relaxed);
            if changeable || swp {
                p[4] = SWP;
            }
            if !changeable {
                // GLTSD: no implicit log saving; D_SENSE 0: fixed-format sense.
                p[2] = 0x02;
                // QUEUE ALGORITHM MODIFIER 1: unrestricted reordering.
                p[3] = 0x10;
                // BUSY TIMEOUT PERIOD: unlimited.
                p[8] = 0xFF;
                p[9] = 0xFF;
            }
            p
        }
        PAGE_INFORMATIONAL_EXCEPTIONS => {
            let mut p = vec![0u8; 12];
            p[0] = PAGE_INFORMATIONAL_EXCEPTIONS;
            p[1] = 10;
            if !changeable {
                p[2] = 0x08; // DEXCPT: we have no failure prediction to report
            }
            p
        }
        _ => Vec::new(),
    }
}

const ALL_PAGES: [u8; 3] = [PAGE_CACHING, PAGE_CONTROL, PAGE_INFORMATIONAL_EXCEPTIONS];

pub fn mode_sense(cmd: &mut Cmd) -> CmdResult {
    let six = cdb::u8_at(cmd.cdb, 0) == MODE_SENSE_6;
    let b1 = cdb::u8_at(cmd.cdb, 1);
    let dbd = b1 & 0x08 != 0;
    let llbaa = !six && b1 & 0x10 != 0;
    let pc = cdb::u8_at(cmd.cdb, 2) >> 6;
    let code = cdb::u8_at(cmd.cdb, 2) & 0x3F;
    let subpage = cdb::u8_at(cmd.cdb, 3);
    let alloc = if six { usize::from(cdb::u8_at(cmd.cdb, 4)) } else { usize::from(cdb::be16(cmd.cdb, 7)) };
    if pc == PC_SAVED {
        return Err(sense::SAVING_PARAMETERS_NOT_SUPPORTED);
    }
    // We have no subpages: subpage 0, or FFh ("all") with any page.
    if subpage != 0 && subpage != SUBPAGE_ALL {
        return Err(Sense::invalid_cdb_field(3, None));
    }
    let codes: &[u8] = match code {
        PAGE_ALL => &ALL_PAGES,
        PAGE_CACHING => &[PAGE_CACHING],
        PAGE_CONTROL => &[PAGE_CONTROL],
        PAGE_INFORMATIONAL_EXCEPTIONS => &[PAGE_INFORMATIONAL_EXCEPTIONS],
        _ => return Err(Sense::invalid_cdb_field(2, Some(5))),
    };
    let lu = cmd.lu;
    let device_specific = DPOFUA | if cmd.lun.write_protected() { WP } else { 0 };
    let header_len = if six { 4 } else { 8 };
    let bd_len = match (dbd, llbaa) {
        (true, _) => 0,
        (false, true) => 16,
        (false, false) => 8,
    };
    let out = &mut *cmd.data_in;
    out.resize(header_len, 0);
    if six {
        out[2] = device_specific;
        out[3] = bd_len as u8;
    } else {
        out[3] = device_specific;
        if llbaa && !dbd {
            out[4] = 0x01; // LONGLBA
        }
        cdb::put16(out, 6, bd_len as u16);
    }
    match bd_len {
        8 => {
            let mut d = [0u8; 8];
            cdb::put32(&mut d, 0, u32::try_from(lu.blocks()).unwrap_or(u32::MAX));
            cdb::put32(&mut d, 4, lu.block_size() & 0x00FF_FFFF);
            out.extend_from_slice(&d);
        }
        16 => {
            let mut d = [0u8; 16];
            cdb::put64(&mut d, 0, lu.blocks());
            cdb::put32(&mut d, 12, lu.block_size());
            out.extend_from_slice(&d);
        }
        _ => {}
    }
    for &c in codes {
        out.extend_from_slice(&page(cmd.lun, c, pc));
    }
    let total = out.len();
    if six {
        out[0] = (total - 1).min(255) as u8;
    } else {
        cdb::put16(out, 0, (total - 2) as u16);
    }
    out.truncate(alloc);
    Ok(status::GOOD)
}

/// MODE SELECT(6)/(10): the caching page may change WCE; any other field
/// must match what MODE SENSE reports (SPC-4 6.11: changing a
/// non-changeable field is INVALID FIELD IN PARAMETER LIST).
pub fn mode_select(cmd: &mut Cmd) -> CmdResult {
    let six = cdb::u8_at(cmd.cdb, 0) == MODE_SELECT_6;
    let b1 = cdb::u8_at(cmd.cdb, 1);
    if b1 & 0x01 != 0 {
        // SP: we keep no saved pages.
        return Err(Sense::invalid_cdb_field(1, Some(0)));
    }
    let param_len = if six { usize::from(cdb::u8_at(cmd.cdb, 4)) } else { usize::from(cdb::be16(cmd.cdb, 7)) };
    if param_len == 0 {
        return Ok(status::GOOD);
    }
    if cmd.data_out.len() < param_len {
        return Err(sense::PARAMETER_LIST_LENGTH_ERROR);
    }
    let list = &cmd.data_out[..param_len];
    let (header_len, bd_len) = if six {
        (4, usize::from(cdb::u8_at(list, 3)))
    } else {
        (8, usize::from(cdb::be16(list, 6)))
    };
    if list.len() < header_len || list.len() < header_len + bd_len {
        return Err(sense::PARAMETER_LIST_LENGTH_ERROR);
    }
    // A block descriptor may only restate our block length.
    if bd_len >= 8 {
        let bl_off = header_len + bd_len - 3;
        if cdb::be24(list, bl_off) != cmd.lu.block_size() && cdb::be24(list, bl_off) != 0 {
            return Err(Sense::invalid_param_field(bl_off as u16, None));
        }
    }
    let mut off = header_len + bd_len;
    let mut new_wce = None;
    let mut new_swp = None;
    while off < list.len() {
        let code = cdb::u8_at(list, off) & 0x3F;
        let spf = cdb::u8_at(list, off) & 0x40 != 0;
        if spf {
            return Err(Sense::invalid_param_field(off as u16, Some(6)));
        }
        let len = usize::from(cdb::u8_at(list, off + 1)) + 2;
        let given = list.get(off..off + len).ok_or(sense::PARAMETER_LIST_LENGTH_ERROR)?;
        let current = page(cmd.lun, code, PC_CURRENT);
        let changeable = page(cmd.lun, code, PC_CHANGEABLE);
        if current.is_empty() {
            return Err(Sense::invalid_param_field(off as u16, None));
        }
        if given.len() != current.len() {
            return Err(Sense::invalid_param_field((off + 1) as u16, None));
        }
        // Byte 0 carries PS, which an initiator may echo back; ignore it.
        for i in 2..given.len() {
            if (given[i] ^ current[i]) & !changeable[i] != 0 {
                return Err(Sense::invalid_param_field((off + i) as u16, None));
            }
        }
        match code {
            PAGE_CACHING => new_wce = Some(given[2] & WCE != 0),
            PAGE_CONTROL => new_swp = Some(given[4] & SWP != 0),
            _ => {}
        }
        off += len;
    }
    let mut changed = false;
    if let Some(wce) = new_wce {
        changed |= cmd.lun.write_cache.swap(wce, Ordering::Relaxed) != wce;
    }
    if let Some(swp) = new_swp {
        changed |= cmd.lun.software_write_protect.swap(swp, Ordering::Relaxed) != swp;
    }
    if changed {
        // SPC-4 5.13: other nexuses learn of the change by unit attention.
        for n in cmd.target.known_nexuses() {
            if &n != cmd.nexus {
                cmd.lun.unit_attentions.establish(&n, sense::MODE_PARAMETERS_CHANGED);
            }
        }
    }
    Ok(status::GOOD)
}
