//! The small SPC/SBC commands with no state of their own: TEST UNIT READY,
//! REQUEST SENSE, START STOP UNIT, READ DEFECT DATA.

use crate::cdb;
use crate::opcodes::READ_DEFECT_DATA_10;
use crate::sense::{self, Sense};
use crate::status;
use crate::target::{Cmd, CmdResult};

/// Always ready: the backing store is open for as long as the LUN exists.
pub fn test_unit_ready(_cmd: &mut Cmd) -> CmdResult {
    Ok(status::GOOD)
}

/// REQUEST SENSE (SPC-4 6.39): with autosense on iSCSI there is never a
/// deferred error to report, so this returns a pending unit attention (and
/// clears it) or NO SENSE. DESC=1 asks for descriptor format.
pub fn request_sense(cmd: &mut Cmd) -> CmdResult {
    let desc = cdb::u8_at(cmd.cdb, 1) & 0x01 != 0;
    let alloc = usize::from(cdb::u8_at(cmd.cdb, 4));
    let s = cmd.lun.unit_attentions.take(cmd.nexus).unwrap_or(sense::NO_ADDITIONAL_SENSE);
    if desc {
        // Descriptor format (SPC-4 4.5.2) with no descriptors.
        cmd.data_in.clear();
        cmd.data_in.extend_from_slice(&[0x72, s.key, s.asc, s.ascq, 0, 0, 0, 0]);
    } else {
        s.write_fixed(cmd.data_in);
    }
    cmd.data_in.truncate(alloc);
    Ok(status::GOOD)
}

/// START STOP UNIT (SBC-3 5.25): a file-backed disk has no motor and no
/// medium to eject; power conditions are accepted as no-ops. LOEJ on a
/// non-removable medium is refused.
pub fn start_stop_unit(cmd: &mut Cmd) -> CmdResult {
    let b4 = cdb::u8_at(cmd.cdb, 4);
    let power_condition = b4 >> 4;
    let loej = b4 & 0x02 != 0;
    if power_condition == 0 && loej {
        return Err(Sense::invalid_cdb_field(4, Some(1)));
    }
    // Power conditions we know: 0 START_VALID, 1 ACTIVE, 2 IDLE, 3 STANDBY,
    // 7 LU_CONTROL, 0xA/0xB FORCE_*. Others are reserved.
    if !matches!(power_condition, 0 | 1 | 2 | 3 | 7 | 0xA | 0xB) {
        return Err(Sense::invalid_cdb_field(4, Some(7)));
    }
    Ok(status::GOOD)
}

/// REPORT LUNS is answered by the target before the LUN lookup; the table
/// entry exists for REPORT SUPPORTED OPERATION CODES.
pub fn unreachable_report_luns(_cmd: &mut Cmd) -> CmdResult {
    Err(sense::INTERNAL_TARGET_FAILURE)
}

/// READ DEFECT DATA(10)/(12) (SBC-3 5.19, 5.20): a file has no defect list;
/// we return the header with the requested list types marked valid and
/// a DEFECT LIST LENGTH of 0.
pub fn read_defect_data(cmd: &mut Cmd) -> CmdResult {
    let ten = cdb::u8_at(cmd.cdb, 0) == READ_DEFECT_DATA_10;
    let (flags, alloc) = if ten {
        (cdb::u8_at(cmd.cdb, 2), usize::from(cdb::be16(cmd.cdb, 7)))
    } else {
        (cdb::u8_at(cmd.cdb, 1), cdb::be32(cmd.cdb, 6) as usize)
    };
    // REQ_PLIST, REQ_GLIST and the DEFECT LIST FORMAT echo back as PLISTV, GLISTV, format.
    let header = flags & 0x1F;
    cmd.data_in.resize(if ten { 4 } else { 8 }, 0);
    cmd.data_in[1] = header;
    cmd.data_in.truncate(alloc);
    Ok(status::GOOD)
}
