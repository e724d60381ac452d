//! Online growth (and shrink) of a unit, what initiators are told, and how
//! backing files are opened: created 0600, a symbolic link never followed.

mod common;

use std::os::unix::fs::PermissionsExt;

use common::*;
use netcfgd_scsi::LogicalUnit;

/// READ CAPACITY(16): the last LBA.
fn last_lba(f: &Fixture) -> u64 {
    let d = f.ok(&[0x9E, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 0, 0], &[]);
    u64::from_be_bytes(d[..8].try_into().unwrap())
}

#[test]
fn growing_a_unit_online_reports_capacity_data_has_changed() {
    let f = fixture();
    assert_eq!(last_lba(&f), BLOCKS - 1);
    // A READ past the end is refused before the growth...
    let read_at = |lba: u32| [0x28, 0, (lba >> 24) as u8, (lba >> 16) as u8, (lba >> 8) as u8, lba as u8, 0, 0, 1, 0];
    f.fails(&read_at(BLOCKS as u32), &[], ILLEGAL_REQUEST, 0x21, 0x00);
    assert_eq!(f.lu.resize(2 * SIZE).unwrap(), 2 * BLOCKS);
    assert_eq!(f.target.capacity_changed(&f.lu), 1);
    // ...the next command of a nexus that was there learns the change first,
    f.fails(&[0u8; 6], &[], UNIT_ATTENTION, 0x2A, 0x09);
    // then sees the new capacity, and the new blocks read (as zeros).
    assert_eq!(last_lba(&f), 2 * BLOCKS - 1);
    assert_eq!(f.ok(&read_at(BLOCKS as u32), &[]), vec![0u8; BLOCK as usize]);
    assert_eq!(std::fs::metadata(&f.path).unwrap().len(), 2 * SIZE);
}

#[test]
fn a_shrunk_unit_refuses_what_is_past_its_new_end() {
    let f = fixture();
    f.ok(&[0u8; 6], &[]); // nexus 1 is known to the target from now on
    assert_eq!(f.lu.resize(SIZE / 2).unwrap(), BLOCKS / 2);
    f.target.capacity_changed(&f.lu);
    f.fails(&[0u8; 6], &[], UNIT_ATTENTION, 0x2A, 0x09);
    let lba = (BLOCKS / 2) as u32;
    f.fails(&[0x28, 0, (lba >> 24) as u8, (lba >> 16) as u8, (lba >> 8) as u8, lba as u8, 0, 0, 1, 0], &[], ILLEGAL_REQUEST, 0x21, 0x00);
}

#[test]
fn created_files_are_private_and_symlinks_are_not_followed() {
    let dir = TempDir::new();
    let path = dir.0.join("new.img");
    LogicalUnit::open(&path, options(512, false)).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "a tenant's volume is readable by its owner only");

    let victim = dir.0.join("victim");
    std::fs::write(&victim, vec![7u8; 4096]).unwrap();
    let link = dir.0.join("link.img");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let err = LogicalUnit::open(&link, options(512, false)).err().expect("a symlink is refused");
    assert_eq!(err.raw_os_error(), Some(libc::ELOOP));

    // The caller's check sees the opened file and can refuse it.
    let err = LogicalUnit::open_checked(&victim, options(512, false), |m| {
        assert_eq!(m.len(), 4096);
        Err(std::io::Error::new(std::io::ErrorKind::PermissionDenied, "no"))
    })
    .err()
    .expect("refused by the check");
    assert_eq!(err.kind(), std::io::ErrorKind::PermissionDenied);
    assert_eq!(std::fs::metadata(&victim).unwrap().len(), 4096, "a refused file is not touched");
}
