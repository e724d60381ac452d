//! Per-command cost of `Target::execute` with no network in the way:
//! 4 KiB random READ(10) and WRITE(10) against a page-cached 64 MiB file,
//! on 1 and 2 threads (each thread its own nexus and reused Data-In buffer).
//!
//!   cargo run --release --example execute_bench [seconds-per-case]

use std::sync::Arc;
use std::time::{Duration, Instant};

use netcfgd_scsi::{LogicalUnit, LuOptions, Nexus, Target};

const BLOCKS_PER_IO: u16 = 8; // 4 KiB of 512-byte blocks
const SIZE: u64 = 64 << 20;

fn cdb(op: u8, lba: u32) -> [u8; 10] {
    let mut c = [0u8; 10];
    c[0] = op;
    c[2..6].copy_from_slice(&lba.to_be_bytes());
    c[7..9].copy_from_slice(&BLOCKS_PER_IO.to_be_bytes());
    c
}

fn run(target: &Arc<Target>, threads: usize, op: u8, secs: f64) -> f64 {
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let target = target.clone();
            std::thread::spawn(move || {
                let nexus = Nexus {
                    initiator_port: format!("iqn.2026-01.bench:i{},i,0x23d00000000{}", t, t),
                    target_port: "iqn.2026-01.bench:t,t,0x0001".into(),
                };
                let data_out = vec![0x5Au8; 4096];
                let mut data_in = Vec::new();
                let mut x: u64 = 0x9E37_79B9_7F4A_7C15 ^ t as u64;
                let slots = SIZE / 4096;
                let deadline = Instant::now() + Duration::from_secs_f64(secs);
                let mut n = 0u64;
                while Instant::now() < deadline {
                    for _ in 0..256 {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let lba = ((x % slots) * 8) as u32;
                        let c = target.execute(0, &nexus, &cdb(op, lba), &data_out, &mut data_in);
                        assert_eq!(c.status, 0);
                        n += 1;
                    }
                }
                n
            })
        })
        .collect();
    let total: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    total as f64 / secs
}

fn main() {
    let secs: f64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(2.0);
    let dir = std::env::temp_dir().join(format!("netcfgd-scsi-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let opts = LuOptions { block_size: 512, size_bytes: Some(SIZE), read_only: false, serial: "BENCH".into(), naa: 1 };
    let lu = Arc::new(LogicalUnit::open(&dir.join("lun0.img"), opts).unwrap());
    let target = Arc::new(Target::new("iqn.2026-01.bench:t"));
    target.add_lun(0, lu);
    // Populate the file so reads come from the page cache, not holes.
    let fill = vec![0xA5u8; 1 << 20];
    let nexus = Nexus { initiator_port: "fill,i,0x0".into(), target_port: "t,t,0x1".into() };
    let mut d = Vec::new();
    for mb in 0..(SIZE >> 20) as u32 {
        let mut c = [0u8; 10];
        c[0] = 0x2A;
        c[2..6].copy_from_slice(&(mb * 2048).to_be_bytes());
        c[7..9].copy_from_slice(&2048u16.to_be_bytes());
        assert_eq!(target.execute(0, &nexus, &c, &fill, &mut d).status, 0);
    }
    for (name, op) in [("READ(10) 4k", 0x28u8), ("WRITE(10) 4k", 0x2A)] {
        for threads in [1, 2] {
            let ops = run(&target, threads, op, secs);
            println!("{:<13} threads={} {:>9.0} ops/s {:>6.2} us/op/thread", name, threads, ops, threads as f64 * 1e6 / ops);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
