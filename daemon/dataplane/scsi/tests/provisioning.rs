//! UNMAP, WRITE SAME, GET LBA STATUS and READ CAPACITY(16)'s provisioning
//! bits, checked both through SCSI and against the file's real extent map.
mod common;
use common::*;
use std::os::unix::io::AsRawFd;

fn get_lba_status(f: &Fixture, lba: u64, alloc: u32) -> Vec<u8> {
    let mut c = cdb16(0x9E, 0x12, lba, alloc);
    c[10..14].copy_from_slice(&alloc.to_be_bytes());
    f.ok(&c, &[])
}

/// (lba, blocks, status) descriptors of a GET LBA STATUS response.
fn extents(d: &[u8]) -> Vec<(u64, u32, u8)> {
    let n = (be32(d, 0) as usize - 4) / 16;
    (0..n).map(|i| {
        let o = 8 + 16 * i;
        (be64(d, o), be32(d, o + 8), d[o + 12])
    }).collect()
}

fn unmap_list(ranges: &[(u64, u32)]) -> Vec<u8> {
    let mut p = vec![0u8; 8];
    p[0..2].copy_from_slice(&((6 + 16 * ranges.len()) as u16).to_be_bytes());
    p[2..4].copy_from_slice(&((16 * ranges.len()) as u16).to_be_bytes());
    for (lba, n) in ranges {
        p.extend_from_slice(&lba.to_be_bytes());
        p.extend_from_slice(&n.to_be_bytes());
        p.extend_from_slice(&[0; 4]);
    }
    p
}

fn unmap_cdb(len: usize) -> [u8; 10] {
    let mut c = [0u8; 10];
    c[0] = UNMAP;
    c[7..9].copy_from_slice(&(len as u16).to_be_bytes());
    c
}

/// Whether byte `off` of the file lies in a hole, per SEEK_HOLE/SEEK_DATA.
fn in_hole(f: &Fixture, off: i64) -> bool {
    let file = std::fs::File::open(&f.path).unwrap();
    let data = unsafe { libc::lseek(file.as_raw_fd(), off, libc::SEEK_DATA) };
    data < 0 || data > off
}

#[test]
fn fresh_volume_is_one_deallocated_extent() {
    let f = fixture();
    let d = get_lba_status(&f, 0, 64);
    assert_eq!(extents(&d), vec![(0, BLOCKS as u32, 1)]);
}

#[test]
fn written_then_unmapped_blocks_show_in_get_lba_status_and_seek_hole() {
    let f = fixture();
    // Write 64 KiB at block 256 (offset 128 KiB): whole filesystem blocks.
    f.ok(&cdb10(WRITE_10, 0, 256, 128), &pattern(128, 1));
    assert!(!in_hole(&f, 256 * 512));
    let e = extents(&get_lba_status(&f, 0, 1024));
    assert_eq!(e[0], (0, 256, 1));
    assert_eq!(e[1], (256, 128, 0));
    assert_eq!(e[2], (384, BLOCKS as u32 - 384, 1));

    // Unmap the middle 32 KiB (blocks 288..352).
    let list = unmap_list(&[(288, 64)]);
    f.ok(&unmap_cdb(list.len()), &list);
    assert!(in_hole(&f, 300 * 512), "SEEK_HOLE sees the punched hole");
    assert!(!in_hole(&f, 260 * 512));
    let e = extents(&get_lba_status(&f, 256, 1024));
    assert_eq!(&e[..3], &[(256, 32, 0), (288, 64, 1), (352, 32, 0)]);
    // LBPRZ: unmapped blocks read back as zeros, the file size is unchanged.
    assert_eq!(f.ok(&cdb10(READ_10, 0, 288, 64), &[]), vec![0u8; 64 * 512]);
    assert_eq!(std::fs::metadata(&f.path).unwrap().len(), SIZE);
}

#[test]
fn get_lba_status_truncates_to_allocation_length() {
    let f = fixture();
    f.ok(&cdb10(WRITE_10, 0, 256, 8), &pattern(8, 1));
    let d = get_lba_status(&f, 0, 24);
    assert_eq!(d.len(), 24);
    assert_eq!(be64(&d, 8), 0);
    let mut c = cdb16(0x9E, 0x12, BLOCKS, 0);
    c[13] = 24;
    f.fails(&c, &[], ILLEGAL_REQUEST, 0x21, 0x00);
}

#[test]
fn unmap_parameter_list_errors() {
    let f = fixture();
    f.ok(&unmap_cdb(0), &[]);
    // Shorter than the header.
    f.fails(&unmap_cdb(4), &[0; 4], ILLEGAL_REQUEST, 0x1A, 0x00);
    // Descriptor length claims more than was sent.
    let mut list = unmap_list(&[(0, 8)]);
    list[3] = 32;
    f.fails(&unmap_cdb(list.len()), &list, ILLEGAL_REQUEST, 0x1A, 0x00);
    // Range past the end: nothing is unmapped, even the valid first descriptor.
    f.ok(&cdb10(WRITE_10, 0, 0, 8), &pattern(8, 1));
    let list = unmap_list(&[(0, 8), (BLOCKS - 1, 2)]);
    f.fails(&unmap_cdb(list.len()), &list, ILLEGAL_REQUEST, 0x21, 0x00);
    assert_eq!(f.ok(&cdb10(READ_10, 0, 0, 8), &[]), pattern(8, 1));
    // Too many descriptors.
    let many: Vec<(u64, u32)> = (0..257).map(|i| (i, 1)).collect();
    let list = unmap_list(&many);
    f.fails(&unmap_cdb(list.len()), &list, ILLEGAL_REQUEST, 0x26, 0x00);
    // ANCHOR is not supported.
    let list = unmap_list(&[(0, 8)]);
    let mut cdb = unmap_cdb(list.len());
    cdb[1] = 1;
    f.invalid_field(&cdb, &list, 1);
}

#[test]
fn write_same_writes_pattern_and_unmaps_zeros() {
    let f = fixture();
    let block = pattern(1, 77);
    f.ok(&cdb10(WRITE_SAME_10, 0, 1024, 40), &block);
    let d = f.ok(&cdb10(READ_10, 0, 1024, 40), &[]);
    assert!(d.chunks(512).all(|c| c == &block[..]));
    // UNMAP bit with a zero block deallocates.
    f.ok(&cdb16(WRITE_SAME_16, 0x08, 1024, 32), &[0u8; 512]);
    assert!(in_hole(&f, 1024 * 512));
    assert_eq!(extents(&get_lba_status(&f, 1024, 64))[0], (1024, 32, 1));
    // UNMAP bit with non-zero data still deallocates: the blocks read as zeros.
    f.ok(&cdb10(WRITE_SAME_10, 0, 2048, 8), &block);
    f.ok(&cdb16(WRITE_SAME_16, 0x08, 2048, 8), &block);
    assert_eq!(f.ok(&cdb10(READ_10, 0, 2048, 8), &[]), vec![0u8; 8 * 512]);
    assert!(in_hole(&f, 2048 * 512));
    // Longer than MAXIMUM WRITE SAME LENGTH (16 MiB of blocks).
    f.invalid_field(&cdb16(WRITE_SAME_16, 0x08, 0, 32769), &[0u8; 512], 10);
}

#[test]
fn write_same_zero_blocks_means_to_the_end() {
    let f = fixture();
    f.ok(&cdb10(WRITE_10, 0, BLOCKS as u32 - 16, 16), &pattern(16, 1));
    f.ok(&cdb16(WRITE_SAME_16, 0x08, BLOCKS - 16, 0), &[0u8; 512]);
    assert_eq!(f.ok(&cdb10(READ_10, 0, BLOCKS as u32 - 16, 16), &[]), vec![0u8; 16 * 512]);
}

#[test]
fn write_same_errors() {
    let f = fixture();
    f.invalid_field(&cdb10(WRITE_SAME_10, 0, 0, 1), &[0u8; 1024], 7);
    f.fails(&cdb16(WRITE_SAME_16, 0, BLOCKS - 1, 2), &[0u8; 512], ILLEGAL_REQUEST, 0x21, 0x00);
    // NDOB and ANCHOR are not supported.
    f.invalid_field(&cdb16(WRITE_SAME_16, 0x01, 0, 1), &[], 1);
    f.invalid_field(&cdb16(WRITE_SAME_16, 0x10, 0, 1), &[0u8; 512], 1);
}

#[test]
fn read_capacity_reports_size_and_provisioning() {
    let f = fixture();
    let d = f.ok(&[0x25, 0, 0, 0, 0, 0, 0, 0, 0, 0], &[]);
    assert_eq!(be32(&d, 0) as u64, BLOCKS - 1);
    assert_eq!(be32(&d, 4), 512);
    let mut c = cdb16(0x9E, 0x10, 0, 0);
    c[13] = 32;
    let d = f.ok(&c, &[]);
    assert_eq!(d.len(), 32);
    assert_eq!(be64(&d, 0), BLOCKS - 1);
    assert_eq!(be32(&d, 8), 512);
    assert_eq!(d[14] & 0xC0, 0xC0, "LBPME and LBPRZ");
    c[13] = 12;
    assert_eq!(f.ok(&c, &[]).len(), 12, "allocation length truncates");
}

#[test]
fn read_capacity_10_saturates_for_huge_units() {
    let dir = TempDir::new();
    let path = dir.0.join("big.img");
    let mut o = options(512, false);
    o.size_bytes = Some(3 << 40); // 3 TiB, sparse
    let lu = std::sync::Arc::new(netcfgd_scsi::LogicalUnit::open(&path, o).unwrap());
    let t = netcfgd_scsi::Target::new("iqn.t");
    t.add_lun(0, lu);
    let mut d = Vec::new();
    let c = t.execute(0, &nexus(1), &[0x25, 0, 0, 0, 0, 0, 0, 0, 0, 0], &[], &mut d);
    assert_eq!(c.status, GOOD);
    assert_eq!(be32(&d, 0), 0xFFFF_FFFF);
}
