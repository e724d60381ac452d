//! INQUIRY and its VPD pages, MODE SENSE/SELECT, REPORT LUNS, REPORT
//! SUPPORTED OPERATION CODES, missing LUNs and unknown opcodes.
mod common;
use common::*;

fn inquiry(f: &Fixture, evpd: bool, page: u8) -> Vec<u8> {
    f.ok(&[0x12, evpd as u8, page, 0x01, 0x00, 0], &[])
}

#[test]
fn standard_inquiry() {
    let f = fixture();
    let d = inquiry(&f, false, 0);
    assert_eq!(d[0], 0x00, "qualifier 0, direct access block device");
    assert_eq!(d[2], 0x06, "SPC-4");
    assert_eq!(d[3] & 0x0F, 2, "response data format");
    assert_eq!(d[4] as usize + 5, d.len());
    assert_eq!(&d[8..16], b"NETCFG  ");
    assert!(d[16..36].iter().all(|b| b.is_ascii_graphic() || *b == b' '));
    let versions: Vec<u16> = (0..8).map(|i| u16::from_be_bytes([d[58 + 2 * i], d[59 + 2 * i]])).collect();
    assert!(versions.contains(&0x04C0), "SBC-3 version descriptor");
    assert!(versions.contains(&0x0460), "SPC-4 version descriptor");
    // ALLOCATION LENGTH truncates.
    assert_eq!(f.ok(&[0x12, 0, 0, 0, 5, 0], &[]).len(), 5);
    // EVPD=0 with a page code is invalid.
    f.invalid_field(&[0x12, 0, 0x80, 0, 255, 0], &[], 2);
}

#[test]
fn vpd_pages() {
    let f = fixture();
    let d = inquiry(&f, true, 0x00);
    assert_eq!(&d[4..], &[0x00, 0x80, 0x83, 0xB0, 0xB1, 0xB2]);
    for &page in &d[4..] {
        let p = inquiry(&f, true, page);
        assert_eq!(p[1], page);
        assert_eq!(u16::from_be_bytes([p[2], p[3]]) as usize + 4, p.len(), "page {:02x} length", page);
    }
    let d = inquiry(&f, true, 0x80);
    assert_eq!(&d[4..], b"SERIAL0001");

    let d = inquiry(&f, true, 0x83);
    let mut found_naa = false;
    let mut found_t10 = false;
    let mut o = 4;
    while o + 4 <= d.len() {
        let (kind, len) = (d[o + 1] & 0x0F, d[o + 3] as usize);
        let id = &d[o + 4..o + 4 + len];
        if kind == 3 {
            found_naa = true;
            assert_eq!(len, 8);
            assert_eq!(id[0] >> 4, 5, "NAA 5");
            assert_eq!(d[o] & 0x0F, 1, "binary");
        }
        if kind == 1 {
            found_t10 = true;
            assert!(id.starts_with(b"NETCFG  "));
            assert_eq!(d[o] & 0x0F, 2, "ASCII");
        }
        o += 4 + len;
    }
    assert_eq!(o, d.len(), "descriptors fill the page exactly");
    assert!(found_naa && found_t10);

    let b0 = inquiry(&f, true, 0xB0);
    assert_eq!(b0.len(), 64);
    assert_eq!(be32(&b0, 8), 16384, "max transfer: 8 MiB of 512-byte blocks");
    assert!(be32(&b0, 20) > 0, "max unmap LBA count");
    assert!(be32(&b0, 24) > 0, "max unmap descriptors");
    assert!(be64(&b0, 36) > 0, "max write same length");
    assert_eq!(u16::from_be_bytes([b0[6], b0[7]]), 8, "optimal granularity 4 KiB");
    let b1 = inquiry(&f, true, 0xB1);
    assert_eq!(u16::from_be_bytes([b1[4], b1[5]]), 1, "non-rotating");
    let b2 = inquiry(&f, true, 0xB2);
    assert_eq!(b2[5] & 0xE0, 0xE0, "LBPU LBPWS LBPWS10");
    assert_eq!(b2[6] & 0x07, 2, "thin provisioned");

    f.invalid_field(&[0x12, 1, 0x99, 0, 255, 0], &[], 2);
}

#[test]
fn missing_lun() {
    let f = fixture();
    let n = nexus(1);
    let (c, d) = f.run_as(&n, 5, &[0x12, 0, 0, 0, 36, 0], &[]);
    assert_eq!(c.status, GOOD);
    assert_eq!(d[0], 0x7F, "peripheral qualifier 011b, type 1Fh");
    let (c, _) = f.run_as(&n, 5, &[0, 0, 0, 0, 0, 0], &[]);
    assert_sense(&c, ILLEGAL_REQUEST, 0x25, 0x00);
    let (c, d) = f.run_as(&n, 5, &[0x03, 0, 0, 0, 18, 0], &[]);
    assert_eq!(c.status, GOOD);
    assert_eq!((d[2], d[12]), (ILLEGAL_REQUEST, 0x25));
    // REPORT LUNS works through any LUN.
    let (c, d) = f.run_as(&n, 5, &[0xA0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0], &[]);
    assert_eq!(c.status, GOOD);
    assert_eq!(be32(&d, 0), 8);
}

#[test]
fn report_luns_lists_and_encodes() {
    let f = fixture();
    f.target.add_lun(300, f.lu.clone());
    let d = f.ok(&[0xA0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0], &[]);
    assert_eq!(be32(&d, 0), 16);
    assert_eq!(&d[8..16], &[0, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(&d[16..18], &[0x41, 0x2C], "flat space addressing for 300");
    assert_eq!(f.target.luns(), vec![0, 300]);
    f.invalid_field(&[0xA0, 0, 3, 0, 0, 0, 0, 0, 1, 0, 0, 0], &[], 2);
    f.target.remove_lun(300);
    assert_eq!(f.target.luns(), vec![0]);
    // LUN 0's users hear that the inventory changed.
    f.fails(&[0u8; 6], &[], UNIT_ATTENTION, 0x3F, 0x0E);
}

#[test]
fn unknown_opcode_and_reserved_bits() {
    let f = fixture();
    for op in [0x9C, 0x8C, 0x04, 0xC0, 0xFF] {
        let (c, d) = f.run(&[op, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], &[]);
        assert_sense(&c, ILLEGAL_REQUEST, 0x20, 0x00);
        assert!(d.is_empty());
    }
    f.fails(&[], &[], ILLEGAL_REQUEST, 0x20, 0x00);
    // NACA in the control byte: not supported, so invalid.
    f.invalid_field(&[0, 0, 0, 0, 0, 0x04], &[], 5);
    // Short CDB for its opcode.
    f.fails(&[0x28, 0, 0], &[], ILLEGAL_REQUEST, 0x24, 0x00);
    // Unknown service action of a known opcode.
    f.invalid_field(&[0x9E, 0x1F, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0], &[], 1);
}

fn mode_sense6(f: &Fixture, b1: u8, page: u8) -> Vec<u8> {
    f.ok(&[0x1A, b1, page, 0, 255, 0], &[])
}

/// (page code, page bytes) of a mode parameter list after `skip` bytes.
fn pages(d: &[u8], skip: usize) -> Vec<(u8, Vec<u8>)> {
    let mut v = Vec::new();
    let mut o = skip;
    while o + 2 <= d.len() {
        let len = d[o + 1] as usize + 2;
        v.push((d[o] & 0x3F, d[o..o + len].to_vec()));
        o += len;
    }
    v
}

#[test]
fn mode_sense_pages_and_header() {
    let f = fixture();
    let d = mode_sense6(&f, 0, 0x3F);
    assert_eq!(d[0] as usize + 1, d.len(), "mode data length");
    assert_eq!(d[2], 0x10, "DPOFUA, not write protected");
    assert_eq!(d[3], 8, "one block descriptor");
    assert_eq!(be32(&d, 4) as u64, BLOCKS);
    assert_eq!(be32(&d, 8) & 0xFF_FFFF, 512);
    let p = pages(&d, 12);
    assert_eq!(p.iter().map(|x| x.0).collect::<Vec<_>>(), vec![0x08, 0x0A, 0x1C]);
    assert_eq!(p[0].1[2] & 0x04, 0x04, "WCE");
    assert_eq!(p[1].1[2] & 0x04, 0, "D_SENSE clear: fixed format sense");
    // DBD drops the block descriptor.
    let d = mode_sense6(&f, 0x08, 0x08);
    assert_eq!(d[3], 0);
    assert_eq!(d.len(), 4 + 20);
    // MODE SENSE(10) with LLBAA: a 16-byte descriptor.
    let d = f.ok(&[0x5A, 0x10, 0x0A, 0, 0, 0, 0, 0, 255, 0], &[]);
    assert_eq!(u16::from_be_bytes([d[0], d[1]]) as usize + 2, d.len());
    assert_eq!(d[4] & 1, 1, "LONGLBA");
    assert_eq!(u16::from_be_bytes([d[6], d[7]]), 16);
    assert_eq!(be64(&d, 8), BLOCKS);
    // Saved values: not supported. Unknown page: invalid field.
    f.fails(&[0x1A, 0, 0xC8, 0, 255, 0], &[], ILLEGAL_REQUEST, 0x39, 0x00);
    f.invalid_field(&[0x1A, 0, 0x19, 0, 255, 0], &[], 2);
    // Allocation length truncates.
    assert_eq!(f.ok(&[0x1A, 0, 0x3F, 0, 4, 0], &[]).len(), 4);
}

#[test]
fn mode_sense_write_protect_bit() {
    let f = fixture_with(512, true);
    let d = mode_sense6(&f, 0, 0x3F);
    assert_eq!(d[2] & 0x80, 0x80);
}

#[test]
fn mode_select_changes_wce_only() {
    let f = fixture();
    let d = mode_sense6(&f, 0x08, 0x08);
    let mut list = vec![0u8; 4];
    list.extend_from_slice(&d[4..]);
    list[4 + 2] &= !0x04; // clear WCE
    f.ok(&[0x15, 0x10, 0, 0, list.len() as u8, 0], &list);
    let d = mode_sense6(&f, 0x08, 0x08);
    assert_eq!(d[4 + 2] & 0x04, 0, "WCE now clear");
    // Writes still work (now synchronous).
    f.ok(&cdb10(0x2A, 0, 0, 1), &pattern(1, 0));
    // A non-changeable field: refused with a pointer into the parameter list.
    let mut bad = list.clone();
    bad[4 + 3] = 0xFF;
    let c = f.fails(&[0x15, 0x10, 0, 0, bad.len() as u8, 0], &bad, ILLEGAL_REQUEST, 0x26, 0x00);
    assert_eq!(u16::from_be_bytes([c.sense[16], c.sense[17]]), 7);
    // SP: no saved pages.
    f.invalid_field(&[0x15, 0x11, 0, 0, list.len() as u8, 0], &list, 1);
    // Other nexuses learn of the change.
    let _ = f.run_as(&nexus(2), 0, &[0u8; 6], &[]);
    list[4 + 2] |= 0x04;
    f.ok(&[0x15, 0x10, 0, 0, list.len() as u8, 0], &list);
    let (c, _) = f.run_as(&nexus(2), 0, &[0u8; 6], &[]);
    assert_sense(&c, UNIT_ATTENTION, 0x2A, 0x01);
}

#[test]
fn report_supported_operation_codes() {
    let f = fixture();
    let d = f.ok(&[0xA3, 0x0C, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0], &[]);
    let n = be32(&d, 0) as usize / 8;
    let descs: Vec<&[u8]> = (0..n).map(|i| &d[4 + 8 * i..12 + 8 * i]).collect();
    assert!(descs.iter().any(|x| x[0] == 0x28 && x[5] == 0 && x[7] == 10));
    assert!(descs.iter().any(|x| x[0] == 0x9E && x[3] == 0x10 && x[5] & 1 == 1), "SERVACTV");
    assert_eq!(n, netcfgd_scsi::supported_commands().len());
    // RCTD adds a 12-byte timeouts descriptor per command.
    let d = f.ok(&[0xA3, 0x0C, 0x80, 0, 0, 0, 0, 0, 0x10, 0, 0, 0], &[]);
    assert_eq!(be32(&d, 0) as usize, n * 20);
    assert_eq!(d[4 + 5] & 0x02, 0x02, "CTDP");
    // One command: READ(16) usage data.
    let d = f.ok(&[0xA3, 0x0C, 0x01, 0x88, 0, 0, 0, 0, 1, 0, 0, 0], &[]);
    assert_eq!(d[1] & 0x07, 3, "supported");
    assert_eq!(u16::from_be_bytes([d[2], d[3]]), 16);
    assert_eq!(d[4], 0x88);
    assert_eq!(d[5], 0x18, "DPO and FUA are used");
    // With a service action: the usage data carries it.
    let d = f.ok(&[0xA3, 0x0C, 0x02, 0x9E, 0, 0x10, 0, 0, 1, 0, 0, 0], &[]);
    assert_eq!((d[1] & 0x07, d[4], d[5]), (3, 0x9E, 0x10));
    // Not supported.
    let d = f.ok(&[0xA3, 0x0C, 0x01, 0x9C, 0, 0, 0, 0, 1, 0, 0, 0], &[]);
    assert_eq!(d[1] & 0x07, 1);
    // Option 1 on an opcode with service actions, option 2 on one without.
    f.invalid_field(&[0xA3, 0x0C, 0x01, 0x9E, 0, 0, 0, 0, 1, 0, 0, 0], &[], 2);
    f.invalid_field(&[0xA3, 0x0C, 0x02, 0x28, 0, 0, 0, 0, 1, 0, 0, 0], &[], 2);
}

#[test]
fn every_advertised_command_is_dispatched() {
    // Whatever REPORT SUPPORTED OPERATION CODES lists must never answer
    // INVALID COMMAND OPERATION CODE.
    let f = fixture();
    for (op, sa, name) in netcfgd_scsi::supported_commands() {
        let mut cdb = [0u8; 16];
        cdb[0] = op;
        cdb[1] = sa.unwrap_or(0) as u8;
        let (c, _) = f.run(&cdb, &[]);
        if c.status == CHECK_CONDITION {
            assert_ne!((c.sense[12], c.sense[13]), (0x20, 0x00), "{}", name);
        }
    }
}

#[test]
fn start_stop_and_sync_and_prefetch() {
    let f = fixture();
    f.ok(&[0x1B, 0, 0, 0, 0x01, 0], &[]);
    f.ok(&[0x1B, 0x01, 0, 0, 0x00, 0], &[]);
    f.invalid_field(&[0x1B, 0, 0, 0, 0x02, 0], &[], 4);
    f.ok(&cdb10(0x35, 0, 0, 0), &[]);
    f.ok(&cdb16(0x91, 0, 0, 8), &[]);
    f.fails(&cdb16(0x91, 0, BLOCKS, 8), &[], ILLEGAL_REQUEST, 0x21, 0x00);
    let (c, _) = f.run(&cdb10(0x34, 0, 0, 8), &[]);
    assert_eq!(c.status, CONDITION_MET);
    let (c, _) = f.run(&cdb16(0x90, 0x02, 0, 0), &[]);
    assert_eq!(c.status, CONDITION_MET);
    f.fails(&cdb16(0x90, 0, BLOCKS + 1, 0), &[], ILLEGAL_REQUEST, 0x21, 0x00);
}

#[test]
fn software_write_protect_via_control_page() {
    let f = fixture();
    let d = mode_sense6(&f, 0x08, 0x0A);
    let changeable = f.ok(&[0x1A, 0x08, 0x4A, 0, 255, 0], &[]);
    assert_eq!(changeable[4 + 4] & 0x08, 0x08, "SWP is changeable");
    let mut list = vec![0u8; 4];
    list.extend_from_slice(&d[4..]);
    list[4 + 4] |= 0x08;
    f.ok(&[0x15, 0x10, 0, 0, list.len() as u8, 0], &list);
    assert_eq!(mode_sense6(&f, 0, 0x0A)[2] & 0x80, 0x80, "WP in the header");
    f.fails(&cdb10(0x2A, 0, 0, 1), &pattern(1, 0), DATA_PROTECT, 0x27, 0x02);
    f.fails(&[0x42, 0, 0, 0, 0, 0, 0, 0, 24, 0], &[0u8; 24], DATA_PROTECT, 0x27, 0x02);
    f.ok(&cdb10(0x28, 0, 0, 1), &[]);
    list[4 + 4] &= !0x08;
    f.ok(&[0x15, 0x10, 0, 0, list.len() as u8, 0], &list);
    f.ok(&cdb10(0x2A, 0, 0, 1), &pattern(1, 0));
}

#[test]
fn read_defect_data_reports_an_empty_list() {
    let f = fixture();
    let d = f.ok(&[0x37, 0, 0x18 | 0x05, 0, 0, 0, 0, 0, 32, 0], &[]);
    assert_eq!(d, vec![0, 0x1D, 0, 0]);
    let d = f.ok(&[0xB7, 0x08, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0], &[]);
    assert_eq!(d, vec![0, 0x08, 0, 0, 0, 0, 0, 0]);
}

#[test]
fn re_adding_the_same_unit_keeps_its_state() {
    let f = fixture();
    // A RESERVE(6) reservation and a pending condition-free nexus 2.
    let _ = f.run_as(&nexus(2), 0, &[0u8; 6], &[]);
    f.ok(&[0x16, 0, 0, 0, 0, 0], &[]);
    f.target.add_lun(0, f.lu.clone());
    let (c, _) = f.run_as(&nexus(2), 0, &[0u8; 6], &[]);
    assert_eq!(c.status, RESERVATION_CONFLICT, "reservation kept, no unit attention");
    // A different unit at the same LUN is a new device: state starts
    // afresh, and the nexuses that knew the old one are told the medium
    // may have changed.
    let other = std::sync::Arc::new(
        netcfgd_scsi::LogicalUnit::open(&f.dir.0.join("other.img"), options(512, false)).unwrap(),
    );
    f.target.add_lun(0, other);
    let (c, _) = f.run_as(&nexus(2), 0, &[0u8; 6], &[]);
    assert_sense(&c, UNIT_ATTENTION, 0x28, 0x00);
    let (c, _) = f.run_as(&nexus(2), 0, &[0u8; 6], &[]);
    assert_eq!(c.status, GOOD);
}
