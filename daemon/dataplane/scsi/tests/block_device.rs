//! A logical unit on a real block device (a loop device over a temporary
//! file): size from BLKGETSIZE64, UNMAP and WRITE SAME through BLKZEROOUT,
//! GET LBA STATUS reporting everything mapped. Needs root and loop devices;
//! where they are missing the test says so and returns.
mod common;
use common::*;
use std::process::Command;
use std::sync::Arc;

struct Loop(String);

impl Loop {
    fn attach(file: &std::path::Path) -> Option<Loop> {
        let out = Command::new("losetup").args(["--find", "--show"]).arg(file).output().ok()?;
        if !out.status.success() {
            return None;
        }
        Some(Loop(String::from_utf8(out.stdout).ok()?.trim().to_string()))
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.0]).status();
    }
}

#[test]
fn loop_device_backed_unit() {
    let dir = TempDir::new();
    let file = dir.0.join("backing.img");
    std::fs::write(&file, vec![0xEEu8; 4 << 20]).unwrap();
    let dev = match Loop::attach(&file) {
        Some(d) => d,
        None => {
            eprintln!("SKIPPED: no loop device (not root, or no loop support)");
            return;
        }
    };
    let mut o = options(512, false);
    o.size_bytes = None;
    let lu = Arc::new(netcfgd_scsi::LogicalUnit::open(std::path::Path::new(&dev.0), o).unwrap());
    assert_eq!(lu.blocks(), (4 << 20) / 512, "BLKGETSIZE64");
    let t = netcfgd_scsi::Target::new("iqn.t");
    t.add_lun(0, lu);
    let n = nexus(1);
    let mut d = Vec::new();
    let mut run = |cdb: &[u8], out: &[u8], d: &mut Vec<u8>| t.execute(0, &n, cdb, out, d);

    assert_eq!(run(&cdb10(0x28, 0, 100, 1), &[], &mut d).status, GOOD);
    assert_eq!(d, vec![0xEE; 512]);
    // UNMAP through BLKZEROOUT: the blocks read back as zeros (LBPRZ).
    let mut list = vec![0u8, 22, 0, 16, 0, 0, 0, 0];
    list.extend_from_slice(&100u64.to_be_bytes());
    list.extend_from_slice(&8u32.to_be_bytes());
    list.extend_from_slice(&[0; 4]);
    let c = run(&[0x42, 0, 0, 0, 0, 0, 0, 0, 24, 0], &list, &mut d);
    assert_eq!(c.status, GOOD, "{:02x?}", c.sense);
    run(&cdb10(0x28, 0, 99, 10), &[], &mut d);
    assert_eq!(&d[..512], &[0xEE; 512][..], "block before untouched");
    assert!(d[512..512 * 9].iter().all(|&b| b == 0), "unmapped blocks are zeros");
    assert_eq!(&d[512 * 9..], &[0xEE; 512][..], "block after untouched");
    // A block device reports everything mapped.
    let mut gls = cdb16(0x9E, 0x12, 100, 0);
    gls[13] = 24;
    run(&gls, &[], &mut d);
    assert_eq!((be64(&d, 8), d[20]), (100, 0));
    // Synchronize cache is an fdatasync on the device.
    assert_eq!(run(&cdb10(0x35, 0, 0, 0), &[], &mut d).status, GOOD);
}
