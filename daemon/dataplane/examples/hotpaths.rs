//! Same-run comparison of the data path's hot helpers against the
//! hand-written versions they replaced (kept under bench/dataplane/baseline/,
//! as they were but for their unit tests, which the current modules carry,
//! and the ring's `Op`, which is now the crate's): CRC32C on iSCSI-sized
//! buffers, MD5 on CHAP-sized inputs, and the io_uring batch of backing reads.
//!
//!     cd daemon/dataplane && cargo run --release --no-default-features --example hotpaths [-- ROUNDS]
//!
//! Each round times every pair, alternating which goes first; the table
//! prints medians over the rounds (std::time only, no nightly). Results:
//! docs/benchmarks.md, "Hot paths on the crates".

use std::hint::black_box;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

use _dataplane::{digest, md5, uring};

#[allow(dead_code)]
#[path = "../../../bench/dataplane/baseline/digest.rs"]
mod old_digest;
#[allow(dead_code)]
#[path = "../../../bench/dataplane/baseline/md5.rs"]
mod old_md5;
#[allow(dead_code)]
#[path = "../../../bench/dataplane/baseline/uring.rs"]
mod old_uring;

/// Runs `f` in repetitions until about `budget` has passed; ns per call.
fn time_per_call(budget: Duration, mut f: impl FnMut()) -> f64 {
    let mut reps = 1u64;
    loop {
        let t = Instant::now();
        for _ in 0..reps {
            f();
        }
        let e = t.elapsed();
        if e >= budget {
            return e.as_nanos() as f64 / reps as f64;
        }
        reps = if e.as_nanos() == 0 { reps * 16 } else { (reps as f64 * 1.3 * budget.as_nanos() as f64 / e.as_nanos() as f64) as u64 + 1 };
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// One pass of a ring case: a 4 KiB read per offset, each into its own
/// 4 KiB of `bufs`, submitted and reaped by `run` (either ring: the baseline
/// takes the crate's `Op`); every read must return its whole 4 KiB.
fn read_batch(fd: RawFd, offsets: &[u64], bufs: &mut [u8], run: impl FnOnce(&[uring::Op], &mut Vec<Option<io::Result<usize>>>) -> io::Result<()>) {
    let ops: Vec<uring::Op> = offsets
        .iter()
        .zip(bufs.chunks_mut(4096))
        .map(|(&offset, b)| uring::Op { fd, write: false, offset, buf: b.as_mut_ptr(), len: 4096 })
        .collect();
    let mut results = Vec::new();
    run(&ops, &mut results).expect("ring");
    assert!(results.iter().all(|r| matches!(r, Some(Ok(4096)))));
}

struct Case {
    name: String,
    /// Bytes per call, for a throughput column (0: none).
    bytes: usize,
    ours: Box<dyn FnMut()>,
    krate: Box<dyn FnMut()>,
}

fn main() {
    let rounds: usize = std::env::args().nth(1).map(|a| a.parse().expect("ROUNDS: a number")).unwrap_or(7);
    let budget = Duration::from_millis(150);
    let data: Vec<u8> = (0..(1usize << 20)).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8).collect();
    let mut cases: Vec<Case> = Vec::new();

    for &len in &[48usize, 8 << 10, 64 << 10, 1 << 20] {
        let (a, b) = (data[..len].to_vec(), data[..len].to_vec());
        assert_eq!(old_digest::crc32c(&a), digest::crc32c(&b), "CRC32C disagrees at {len} bytes");
        cases.push(Case {
            name: format!("crc32c {len} B"),
            bytes: len,
            ours: Box::new(move || {
                black_box(old_digest::crc32c(black_box(&a)));
            }),
            krate: Box::new(move || {
                black_box(digest::crc32c(black_box(&b)));
            }),
        });
    }
    // CHAP_R = MD5(id || secret || challenge): 1 + 16 + 16 bytes here
    // (secrets are 12-16 bytes, our challenge 16); 1 + 16 + 1024 for a long
    // initiator challenge in mutual CHAP.
    for &clen in &[16usize, 1024] {
        let (id, secret, challenge) = ([42u8], data[..16].to_vec(), data[100..100 + clen].to_vec());
        let (s2, c2) = (secret.clone(), challenge.clone());
        assert_eq!(old_md5::md5(&[&id, &secret, &challenge]), md5::md5(&[&id, &s2, &c2]), "MD5 disagrees");
        cases.push(Case {
            name: format!("md5 CHAP {} B", 17 + clen),
            bytes: 0,
            ours: Box::new(move || {
                black_box(old_md5::md5(black_box(&[&id, &secret, &challenge])));
            }),
            krate: Box::new(move || {
                black_box(md5::md5(black_box(&[&id, &s2, &c2])));
            }),
        });
    }

    // The ring: a batch of QD 4 KiB reads at scattered offsets of a
    // page-cached 64 MiB file, submitted and reaped by `run` (what one pass
    // over a connection's input does), and a batch of one (the enter's fixed cost).
    let path = std::env::temp_dir().join(format!("netcfgd-hotpaths-{}", std::process::id()));
    let mut f = std::fs::OpenOptions::new().create(true).truncate(true).read(true).write(true).open(&path).expect("temp file");
    for _ in 0..64 {
        f.write_all(&data).expect("write temp file");
    }
    let _ = std::fs::remove_file(&path);
    let f = std::sync::Arc::new(f);
    for &qd in &[1usize, 32, 128] {
        let mut old_ring = match old_uring::Ring::new(128) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("io_uring unavailable here ({e}): ring cases skipped");
                break;
            }
        };
        let mut new_ring = uring::Ring::new(128).expect("the crate's ring where ours worked");
        let fd = f.as_raw_fd();
        let offsets: Vec<u64> = (0..qd as u64).map(|i| (i.wrapping_mul(2_654_435_761) % 16384) * 4096).collect();
        let (mut b1, mut b2) = (vec![0u8; qd * 4096], vec![0u8; qd * 4096]);
        let (o1, o2) = (offsets.clone(), offsets);
        let (f1, f2) = (f.clone(), f.clone());
        cases.push(Case {
            name: format!("io_uring {qd} x 4 KiB reads"),
            bytes: qd * 4096,
            ours: Box::new(move || {
                let _keep = &f1;
                // SAFETY: each op's buffer is a distinct 4 KiB of b1, which
                // read_batch holds, untouched, until run returns.
                read_batch(fd, &o1, &mut b1, |ops, results| unsafe { old_ring.run(ops, results) });
            }),
            krate: Box::new(move || {
                let _keep = &f2;
                // SAFETY: as above, with b2.
                read_batch(fd, &o2, &mut b2, |ops, results| unsafe { new_ring.run(ops, results) });
            }),
        });
    }

    let mut ours: Vec<Vec<f64>> = vec![Vec::new(); cases.len()];
    let mut krate: Vec<Vec<f64>> = vec![Vec::new(); cases.len()];
    for round in 0..rounds {
        for (i, c) in cases.iter_mut().enumerate() {
            if round % 2 == 0 {
                ours[i].push(time_per_call(budget, &mut c.ours));
                krate[i].push(time_per_call(budget, &mut c.krate));
            } else {
                krate[i].push(time_per_call(budget, &mut c.krate));
                ours[i].push(time_per_call(budget, &mut c.ours));
            }
        }
    }
    println!("# {rounds} interleaved rounds, medians; ns per call (GB/s where it applies)");
    println!("{:28} {:>16} {:>16} {:>8}", "case", "ours (before)", "crate (now)", "ours/crate");
    for (i, c) in cases.iter().enumerate() {
        let (o, k) = (median(ours[i].clone()), median(krate[i].clone()));
        let fmt = |ns: f64| if c.bytes > 0 { format!("{ns:.0} ({:.2})", c.bytes as f64 / ns) } else { format!("{ns:.0}") };
        println!("{:28} {:>16} {:>16} {:>8.2}", c.name, fmt(o), fmt(k), o / k);
    }
}
