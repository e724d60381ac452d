//! INQUIRY (SPC-4 6.6): standard data and the VPD pages an SBC-3 thin
//! provisioned disk is expected to have (00, 80, 83, B0, B1, B2).

use crate::backing::LogicalUnit;
use crate::cdb;
use crate::limits;
use crate::sense::Sense;
use crate::status;
use crate::target::{Cmd, CmdResult};
use crate::Nexus;

pub const VENDOR: &[u8; 8] = b"NETCFG  ";
pub const PRODUCT: &[u8; 16] = b"netcfgd volume  ";
pub const REVISION: &[u8; 4] = b"0001";

/// Peripheral device type 0: direct access block device.
const TYPE_DISK: u8 = 0x00;
/// Peripheral qualifier 011b + type 1Fh: no logical unit at this LUN.
const NO_LU: u8 = 0x7F;

// Version descriptors (SPC-4 table 34): the standards we claim, no revision.
const VERSION_SAM5: u16 = 0x00A0;
const VERSION_ISCSI: u16 = 0x0960;
const VERSION_SPC4: u16 = 0x0460;
const VERSION_SBC3: u16 = 0x04C0;

// VPD page codes.
pub const VPD_SUPPORTED_PAGES: u8 = 0x00;
pub const VPD_UNIT_SERIAL_NUMBER: u8 = 0x80;
pub const VPD_DEVICE_IDENTIFICATION: u8 = 0x83;
pub const VPD_BLOCK_LIMITS: u8 = 0xB0;
pub const VPD_BLOCK_DEVICE_CHARACTERISTICS: u8 = 0xB1;
pub const VPD_LOGICAL_BLOCK_PROVISIONING: u8 = 0xB2;
const SUPPORTED_VPD: [u8; 6] = [
    VPD_SUPPORTED_PAGES,
    VPD_UNIT_SERIAL_NUMBER,
    VPD_DEVICE_IDENTIFICATION,
    VPD_BLOCK_LIMITS,
    VPD_BLOCK_DEVICE_CHARACTERISTICS,
    VPD_LOGICAL_BLOCK_PROVISIONING,
];

// Designator fields of VPD page 0x83 (SPC-4 7.8.6).
const CODE_SET_BINARY: u8 = 1;
const CODE_SET_ASCII: u8 = 2;
const CODE_SET_UTF8: u8 = 3;
const PROTOCOL_ISCSI: u8 = 5;
const ASSOC_LU: u8 = 0;
const ASSOC_TARGET_PORT: u8 = 1;
const ASSOC_TARGET_DEVICE: u8 = 2;
const DESIG_T10_VENDOR_ID: u8 = 1;
const DESIG_NAA: u8 = 3;
const DESIG_RELATIVE_TARGET_PORT: u8 = 4;
const DESIG_SCSI_NAME_STRING: u8 = 8;

pub fn inquiry(cmd: &mut Cmd) -> CmdResult {
    let evpd = cdb::u8_at(cmd.cdb, 1) & 0x01 != 0;
    let page = cdb::u8_at(cmd.cdb, 2);
    let alloc = usize::from(cdb::be16(cmd.cdb, 3));
    let out = &mut *cmd.data_in;
    if !evpd {
        if page != 0 {
            return Err(Sense::invalid_cdb_field(2, None));
        }
        standard(out, TYPE_DISK);
    } else {
        let lu = cmd.lu;
        match page {
            VPD_SUPPORTED_PAGES => vpd(out, page, &SUPPORTED_VPD),
            VPD_UNIT_SERIAL_NUMBER => vpd(out, page, lu.serial().as_bytes()),
            VPD_DEVICE_IDENTIFICATION => device_identification(out, lu, cmd.nexus, cmd.target.name()),
            VPD_BLOCK_LIMITS => block_limits(out, lu),
            VPD_BLOCK_DEVICE_CHARACTERISTICS => block_device_characteristics(out),
            VPD_LOGICAL_BLOCK_PROVISIONING => logical_block_provisioning(out),
            _ => return Err(Sense::invalid_cdb_field(2, None)),
        }
    }
    out.truncate(alloc);
    Ok(status::GOOD)
}

/// INQUIRY to a LUN with no logical unit: qualifier 011b (SPC-4 6.6.2).
pub fn inquiry_missing_lun(cdb: &[u8], out: &mut Vec<u8>) -> CmdResult {
    let evpd = cdb::u8_at(cdb, 1) & 0x01 != 0;
    let page = cdb::u8_at(cdb, 2);
    if !evpd && page != 0 {
        return Err(Sense::invalid_cdb_field(2, None));
    }
    if evpd {
        vpd(out, page, &[]);
        out[0] = NO_LU;
    } else {
        standard(out, NO_LU);
    }
    out.truncate(usize::from(cdb::be16(cdb, 3)));
    Ok(status::GOOD)
}

fn standard(out: &mut Vec<u8>, peripheral: u8) {
    out.clear();
    out.resize(74, 0);
    out[0] = peripheral;
    out[2] = 0x06; // VERSION: SPC-4
    out[3] = 0x10 | 0x02; // HISUP, RESPONSE DATA FORMAT 2
    out[4] = (74 - 5) as u8; // ADDITIONAL LENGTH
    out[7] = 0x02; // CMDQUE: full task management model
    out[8..16].copy_from_slice(VENDOR);
    out[16..32].copy_from_slice(PRODUCT);
    out[32..36].copy_from_slice(REVISION);
    for (i, v) in [VERSION_SAM5, VERSION_ISCSI, VERSION_SPC4, VERSION_SBC3].iter().enumerate() {
        cdb::put16(out, 58 + 2 * i, *v);
    }
}

/// A VPD page: 4-byte header then `body`.
fn vpd(out: &mut Vec<u8>, page: u8, body: &[u8]) {
    out.clear();
    out.extend_from_slice(&[TYPE_DISK, page, 0, 0]);
    out.extend_from_slice(body);
    let len = (out.len() - 4) as u16;
    cdb::put16(out, 2, len);
}

/// Appends one designation descriptor (SPC-4 7.8.6.1).
fn designator(out: &mut Vec<u8>, code_set: u8, piv_protocol: Option<u8>, assoc: u8, kind: u8, id: &[u8]) {
    let b0 = piv_protocol.map_or(0, |p| p << 4) | code_set;
    let b1 = if piv_protocol.is_some() { 0x80 } else { 0 } | (assoc << 4) | kind;
    out.extend_from_slice(&[b0, b1, 0, id.len() as u8]);
    out.extend_from_slice(id);
}

/// SCSI name strings are null-terminated and padded to a multiple of 4
/// bytes (SPC-4 7.8.6.11), at most 256.
fn scsi_name(name: &str) -> Vec<u8> {
    let mut v: Vec<u8> = name.bytes().take(251).collect();
    v.push(0);
    while v.len() % 4 != 0 {
        v.push(0);
    }
    v
}

/// The NAA designator: NAA 5 (IEEE Registered) unless the configured value
/// already names its NAA type in the top nibble.
pub fn naa_value(lu: &LogicalUnit) -> u64 {
    let naa = lu.naa();
    if naa >> 60 == 0 {
        0x5000_0000_0000_0000 | naa
    } else {
        naa
    }
}

fn device_identification(out: &mut Vec<u8>, lu: &LogicalUnit, nexus: &Nexus, target_name: &str) {
    vpd(out, VPD_DEVICE_IDENTIFICATION, &[]);
    designator(out, CODE_SET_BINARY, None, ASSOC_LU, DESIG_NAA, &naa_value(lu).to_be_bytes());
    let mut t10 = VENDOR.to_vec();
    t10.extend(lu.serial().bytes().take(200));
    designator(out, CODE_SET_ASCII, None, ASSOC_LU, DESIG_T10_VENDOR_ID, &t10);
    // The port we answer on; relative port 1 (one portal group per target).
    designator(out, CODE_SET_BINARY, Some(PROTOCOL_ISCSI), ASSOC_TARGET_PORT, DESIG_RELATIVE_TARGET_PORT, &[0, 0, 0, 1]);
    designator(out, CODE_SET_UTF8, Some(PROTOCOL_ISCSI), ASSOC_TARGET_PORT, DESIG_SCSI_NAME_STRING, &scsi_name(&nexus.target_port));
    designator(out, CODE_SET_UTF8, Some(PROTOCOL_ISCSI), ASSOC_TARGET_DEVICE, DESIG_SCSI_NAME_STRING, &scsi_name(target_name));
    let len = (out.len() - 4) as u16;
    cdb::put16(out, 2, len);
}

fn block_limits(out: &mut Vec<u8>, lu: &LogicalUnit) {
    let mut b = [0u8; 0x3C];
    let l = limits::Limits::for_unit(lu);
    // b[0] bit 0 WSNZ stays 0: WRITE SAME with 0 blocks means "to the end".
    b[1] = l.max_compare_and_write as u8;
    cdb::put16(&mut b, 2, l.optimal_granularity as u16);
    cdb::put32(&mut b, 4, l.max_transfer);
    cdb::put32(&mut b, 8, l.optimal_transfer);
    cdb::put32(&mut b, 16, l.max_unmap_lba_count);
    cdb::put32(&mut b, 20, l.max_unmap_descriptors);
    cdb::put32(&mut b, 24, l.optimal_granularity);
    // UGAVALID with alignment 0: unmap granularity counts from LBA 0.
    b[28] = 0x80;
    cdb::put64(&mut b, 32, l.max_write_same);
    vpd(out, VPD_BLOCK_LIMITS, &b);
}

fn block_device_characteristics(out: &mut Vec<u8>) {
    let mut b = [0u8; 0x3C];
    cdb::put16(&mut b, 0, 0x0001); // MEDIUM ROTATION RATE: non-rotating medium
    vpd(out, VPD_BLOCK_DEVICE_CHARACTERISTICS, &b);
}

/// Bits of VPD page B2 byte 5 (SBC-3 6.6.4).
const LBPU: u8 = 0x80;
const LBPWS: u8 = 0x40;
const LBPWS10: u8 = 0x20;
const LBPRZ: u8 = 0x04;
const PROVISIONING_TYPE_THIN: u8 = 0x02;

fn logical_block_provisioning(out: &mut Vec<u8>) {
    // THRESHOLD EXPONENT 0: no thresholds; no provisioning group descriptor.
    vpd(out, VPD_LOGICAL_BLOCK_PROVISIONING, &[0, LBPU | LBPWS | LBPWS10 | LBPRZ, PROVISIONING_TYPE_THIN, 0]);
}
