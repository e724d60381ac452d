//! Shared fixtures: a target with one thin file-backed LUN in a private
//! temporary directory, a CDB runner, and sense assertions.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use netcfgd_scsi::{Completion, LogicalUnit, LuOptions, Nexus, Target};

// Not every test file uses every name.
#[allow(unused_imports)]
pub use netcfgd_scsi::op::*;
#[allow(unused_imports)]
pub use netcfgd_scsi::status::{CHECK_CONDITION, CONDITION_MET, GOOD, RESERVATION_CONFLICT};

pub const ILLEGAL_REQUEST: u8 = 0x5;
pub const UNIT_ATTENTION: u8 = 0x6;
pub const DATA_PROTECT: u8 = 0x7;
pub const MISCOMPARE: u8 = 0xE;

/// A directory removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new() -> TempDir {
        static N: AtomicU32 = AtomicU32::new(0);
        let p = std::env::temp_dir().join(format!(
            "netcfgd-scsi-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub struct Fixture {
    pub dir: TempDir,
    pub target: Target,
    pub lu: Arc<LogicalUnit>,
    pub path: PathBuf,
}

pub const BLOCK: u32 = 512;
/// 8 MiB: big enough for 4 KiB hole granularity, small enough to be quick.
pub const SIZE: u64 = 8 << 20;
pub const BLOCKS: u64 = SIZE / BLOCK as u64;

pub fn options(block_size: u32, read_only: bool) -> LuOptions {
    LuOptions {
        block_size,
        size_bytes: Some(SIZE),
        read_only,
        serial: "SERIAL0001".into(),
        naa: 0x0600_1405_1234_5678,
    }
}

pub fn fixture() -> Fixture {
    fixture_with(BLOCK, false)
}

pub fn fixture_with(block_size: u32, read_only: bool) -> Fixture {
    let dir = TempDir::new();
    let path = dir.0.join("lun0.img");
    if read_only {
        // A read-only unit cannot create its file: make it first.
        let f = std::fs::File::create(&path).unwrap();
        f.set_len(SIZE).unwrap();
    }
    let lu = Arc::new(LogicalUnit::open(&path, options(block_size, read_only)).unwrap());
    let target = Target::new("iqn.2026-01.test:tgt");
    target.add_lun(0, lu.clone());
    Fixture { dir, target, lu, path }
}

pub fn nexus(i: u32) -> Nexus {
    Nexus {
        initiator_port: format!("iqn.2026-01.test:init{},i,0x23d00000000{}", i, i),
        target_port: "iqn.2026-01.test:tgt,t,0x0001".into(),
    }
}

impl Fixture {
    /// Runs a CDB on LUN 0 as nexus 1.
    pub fn run(&self, cdb: &[u8], data_out: &[u8]) -> (Completion, Vec<u8>) {
        self.run_as(&nexus(1), 0, cdb, data_out)
    }

    pub fn run_as(&self, n: &Nexus, lun: u64, cdb: &[u8], data_out: &[u8]) -> (Completion, Vec<u8>) {
        let mut data_in = vec![0xAA; 3]; // stale bytes execute must clear
        let c = self.target.execute(lun, n, cdb, data_out, &mut data_in);
        (c, data_in)
    }

    /// Runs a CDB that must fail with CHECK CONDITION and this sense
    /// key/asc/ascq; the completion, for checks of the rest of its sense.
    pub fn fails(&self, cdb: &[u8], data_out: &[u8], key: u8, asc: u8, ascq: u8) -> Completion {
        let (c, _) = self.run(cdb, data_out);
        assert_sense(&c, key, asc, ascq);
        c
    }

    /// Runs a CDB that must fail with INVALID FIELD IN CDB pointing at `byte`.
    pub fn invalid_field(&self, cdb: &[u8], data_out: &[u8], byte: u16) -> Completion {
        let (c, _) = self.run(cdb, data_out);
        assert_invalid_cdb_field(&c, byte);
        c
    }

    /// Runs and asserts GOOD, returning Data-In.
    pub fn ok(&self, cdb: &[u8], data_out: &[u8]) -> Vec<u8> {
        let (c, d) = self.run(cdb, data_out);
        assert_eq!(c.status, GOOD, "cdb {:02x?} sense {:02x?}", cdb, c.sense);
        assert!(c.sense.is_empty());
        d
    }
}

/// Asserts CHECK CONDITION with this key/asc/ascq, in fixed format.
pub fn assert_sense(c: &Completion, key: u8, asc: u8, ascq: u8) {
    assert_eq!(c.status, CHECK_CONDITION, "status (sense {:02x?})", c.sense);
    let s = &c.sense;
    assert_eq!(s.len(), 18, "fixed format sense is 18 bytes");
    assert_eq!(s[0] & 0x7F, 0x70, "response code");
    assert_eq!(s[7], 10, "additional sense length");
    assert_eq!((s[2] & 0x0F, s[12], s[13]), (key, asc, ascq), "sense {:02x?}", s);
}

/// Asserts INVALID FIELD IN CDB with the field pointer at `byte` (C/D set).
pub fn assert_invalid_cdb_field(c: &Completion, byte: u16) {
    assert_sense(c, ILLEGAL_REQUEST, 0x24, 0x00);
    assert_eq!(c.sense[15] & 0xC0, 0xC0, "SKSV and C/D");
    assert_eq!(u16::from_be_bytes([c.sense[16], c.sense[17]]), byte, "field pointer");
}

/// A READ/WRITE-family CDB (SBC-3): the opcode, byte 1, the LBA from byte 2
/// and the transfer length from byte `len_at`, both big-endian.
fn rw_cdb<const N: usize>(op: u8, b1: u8, lba: &[u8], len: &[u8], len_at: usize) -> [u8; N] {
    let mut c = [0u8; N];
    c[0] = op;
    c[1] = b1;
    c[2..2 + lba.len()].copy_from_slice(lba);
    c[len_at..len_at + len.len()].copy_from_slice(len);
    c
}

pub fn cdb10(op: u8, b1: u8, lba: u32, len: u16) -> [u8; 10] {
    rw_cdb(op, b1, &lba.to_be_bytes(), &len.to_be_bytes(), 7)
}

pub fn cdb12(op: u8, b1: u8, lba: u32, len: u32) -> [u8; 12] {
    rw_cdb(op, b1, &lba.to_be_bytes(), &len.to_be_bytes(), 6)
}

pub fn cdb16(op: u8, b1: u8, lba: u64, len: u32) -> [u8; 16] {
    rw_cdb(op, b1, &lba.to_be_bytes(), &len.to_be_bytes(), 10)
}

/// A recognisable pattern for `blocks` blocks starting at `seed`.
pub fn pattern(blocks: usize, seed: u8) -> Vec<u8> {
    (0..blocks * BLOCK as usize).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

pub fn be32(b: &[u8], off: usize) -> u32 {
    u32::from_be_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}
pub fn be64(b: &[u8], off: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[off..off + 8]);
    u64::from_be_bytes(a)
}
