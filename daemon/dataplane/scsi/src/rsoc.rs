//! REPORT SUPPORTED OPERATION CODES and REPORT SUPPORTED TASK MANAGEMENT
//! FUNCTIONS (SPC-4 6.35, 6.36), generated from the command table.

use crate::cdb;
use crate::opcodes::{self, CommandInfo, COMMANDS};
use crate::sense::Sense;
use crate::status;
use crate::target::{Cmd, CmdResult};

const RCTD: u8 = 0x80;
const CTDP: u8 = 0x02;
const SERVACTV: u8 = 0x01;
/// SUPPORT field values (SPC-4 table 223).
const SUPPORT_NOT_SUPPORTED: u8 = 0b001;
const SUPPORT_STANDARD: u8 = 0b011;

/// Command timeouts descriptor (SPC-4 6.35.4): 0 = no timeout reported.
fn timeouts_descriptor(out: &mut Vec<u8>) {
    out.extend_from_slice(&[0, 0x0A, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
}

/// Usage data as reported: byte 0 is the operation code and the service
/// action field holds the service action itself, not our mask (SPC-4 6.35.3).
fn usage_data(c: &CommandInfo, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(c.usage);
    out[start] = c.opcode;
    if let Some(sa) = c.service_action {
        if let Some(b) = out.get_mut(start + 1) {
            *b = (*b & !0x1F) | (sa as u8 & 0x1F);
        }
    }
}

pub fn report_supported_operation_codes(cmd: &mut Cmd) -> CmdResult {
    let rctd = cdb::u8_at(cmd.cdb, 2) & RCTD != 0;
    let options = cdb::u8_at(cmd.cdb, 2) & 0x07;
    let opcode = cdb::u8_at(cmd.cdb, 3);
    let sa = cdb::be16(cmd.cdb, 4);
    let alloc = cdb::be32(cmd.cdb, 6) as usize;
    let out = &mut *cmd.data_in;
    match options {
        0 => {
            out.resize(4, 0);
            for c in COMMANDS {
                let mut d = [0u8; 8];
                d[0] = c.opcode;
                cdb::put16(&mut d, 2, c.service_action.unwrap_or(0));
                d[5] = if rctd { CTDP } else { 0 } | if c.service_action.is_some() { SERVACTV } else { 0 };
                cdb::put16(&mut d, 6, c.cdb_len() as u16);
                out.extend_from_slice(&d);
                if rctd {
                    timeouts_descriptor(out);
                }
            }
            let len = (out.len() - 4) as u32;
            cdb::put32(out, 0, len);
        }
        1..=3 => {
            let has_sa = opcodes::has_service_actions(opcode);
            let wanted = match (options, has_sa) {
                (1, true) | (2, false) => return Err(Sense::invalid_cdb_field(2, Some(2))),
                (1, false) | (3, false) => opcodes::find(opcode, None),
                _ => opcodes::find(opcode, Some(sa)),
            };
            out.resize(4, 0);
            match wanted {
                Some(c) => {
                    out[1] = if rctd { 0x80 } else { 0 } | SUPPORT_STANDARD;
                    cdb::put16(out, 2, c.cdb_len() as u16);
                    usage_data(c, out);
                    if rctd {
                        timeouts_descriptor(out);
                    }
                }
                None => out[1] = SUPPORT_NOT_SUPPORTED,
            }
        }
        _ => return Err(Sense::invalid_cdb_field(2, Some(2))),
    }
    out.truncate(alloc);
    Ok(status::GOOD)
}

/// ABORT TASK and LOGICAL UNIT RESET, the two TMFs `Target` implements.
const ATS: u8 = 0x80;
const LURS: u8 = 0x08;
const REPD: u8 = 0x80;

pub fn report_supported_tmfs(cmd: &mut Cmd) -> CmdResult {
    let repd = cdb::u8_at(cmd.cdb, 2) & REPD != 0;
    let alloc = cdb::be32(cmd.cdb, 6) as usize;
    if alloc < 4 {
        return Err(Sense::invalid_cdb_field(6, None));
    }
    let out = &mut *cmd.data_in;
    out.resize(if repd { 16 } else { 4 }, 0);
    out[0] = ATS | LURS;
    if repd {
        out[3] = 0x0C;
    }
    out.truncate(alloc);
    Ok(status::GOOD)
}
