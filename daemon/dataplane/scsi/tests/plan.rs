//! The split path: `Target::plan` and `BlockIo::finish_*` agree with `execute`.
mod common;
use common::*;
use netcfgd_scsi::{BlockIo, Plan, WriteOrderHold};
use std::os::unix::fs::FileExt;

fn io(p: Plan) -> BlockIo {
    match p {
        Plan::Io(io) => io,
        other => panic!("expected a transfer, got {:?}", other),
    }
}

/// Perform a planned transfer as a transport would (here with plain pread/pwrite).
fn perform(f: &Fixture, io: &BlockIo, buf: &mut [u8]) -> std::io::Result<usize> {
    let file = std::fs::OpenOptions::new().read(true).write(true).open(&f.path).unwrap();
    if io.is_write() {
        file.write_at(buf, io.offset())
    } else {
        file.read_at(buf, io.offset())
    }
}

#[test]
fn plain_read_and_write_become_transfers() {
    let f = fixture();
    let n = nexus(1);
    let data = pattern(2, 5);
    let w = io(f.target.plan(0, &n, &cdb10(WRITE_10, 0, 7, 2), data.len()));
    assert!(w.is_write());
    assert_eq!((w.offset(), w.len()), (7 * 512, 1024));
    let mut d = data.clone();
    let r = perform(&f, &w, &mut d);
    assert_eq!(w.finish_write(r, &data).status, GOOD);
    let r = io(f.target.plan(0, &n, &cdb10(READ_10, 0, 7, 2), 0));
    assert!(!r.is_write() && r.conflicts_with(&w) && !r.conflicts_with(&io(f.target.plan(0, &n, &cdb10(READ_10, 0, 9, 1), 0))));
    let mut buf = vec![0u8; r.len()];
    let res = perform(&f, &r, &mut buf);
    assert_eq!(r.finish_read(res, &mut buf).status, GOOD);
    assert_eq!(buf, data);
    // And execute sees the same bytes.
    assert_eq!(f.ok(&cdb10(READ_10, 0, 7, 2), &[]), data);
}

#[test]
fn short_and_failed_transfers_are_finished_or_reported() {
    let f = fixture();
    let n = nexus(1);
    let data = pattern(4, 9);
    f.ok(&cdb10(WRITE_10, 0, 0, 4), &data);
    let r = io(f.target.plan(0, &n, &cdb10(READ_10, 0, 0, 4), 0));
    let mut buf = vec![0u8; r.len()];
    buf[..100].copy_from_slice(&data[..100]);
    assert_eq!(r.finish_read(Ok(100), &mut buf).status, GOOD);
    assert_eq!(buf, data);
    let c = r.finish_read(Err(std::io::Error::from_raw_os_error(5)), &mut buf);
    assert_sense(&c, 0x3, 0x11, 0x00);
    let w = io(f.target.plan(0, &n, &cdb10(WRITE_10, 0, 0, 4), data.len()));
    let c = w.finish_write(Err(std::io::Error::from_raw_os_error(28)), &data);
    assert_sense(&c, 0x3, 0x0C, 0x00);
    let fresh = pattern(4, 1);
    assert_eq!(w.finish_write(Ok(0), &fresh).status, GOOD);
    assert_eq!(f.ok(&cdb10(READ_10, 0, 0, 4), &[]), fresh);
}

#[test]
fn everything_else_goes_through_execute_or_is_answered() {
    let f = fixture();
    let n = nexus(1);
    assert!(matches!(f.target.plan(0, &n, &cdb10(SYNCHRONIZE_CACHE_10, 0, 0, 0), 0), Plan::Execute));
    assert!(matches!(f.target.plan(0, &n, &[INQUIRY, 0, 0, 0, 96, 0], 0), Plan::Execute));
    // FUA needs a sync before status: execute does it.
    assert!(matches!(f.target.plan(0, &n, &cdb10(WRITE_10, 0x08, 0, 1), 512), Plan::Execute));
    // Nothing to move.
    assert!(matches!(f.target.plan(0, &n, &cdb10(READ_10, 0, 0, 0), 0), Plan::Execute));
    // Errors are answered with the same sense as execute gives.
    let planned = |cdb: &[u8], dl: usize| match f.target.plan(0, &n, cdb, dl) {
        Plan::Done(c) => c,
        other => panic!("expected an answer, got {:?}", other),
    };
    let (c, _) = f.run(&cdb10(READ_10, 0, BLOCKS as u32, 1), &[]);
    assert_eq!(planned(&cdb10(READ_10, 0, BLOCKS as u32, 1), 0), c);
    let (c, _) = f.run(&cdb10(WRITE_10, 0, 0, 2), &[0; 512]);
    assert_eq!(planned(&cdb10(WRITE_10, 0, 0, 2), 512), c);
    let mut bad = cdb16(WRITE_16, 0, 0, 1);
    bad[1] = 0xE0; // WRPROTECT
    let (c, _) = f.run(&bad, &[0; 512]);
    assert_eq!(planned(&bad, 512), c);
    assert!(matches!(f.target.plan(9, &n, &cdb10(READ_10, 0, 0, 1), 0), Plan::Done(_)));
    // A unit attention is reported (and consumed) by plan, as by execute.
    f.target.lun_reset(0, &n);
    assert_sense(&planned(&cdb10(READ_10, 0, 0, 1), 0), UNIT_ATTENTION, 0x29, 0x03);
    assert!(matches!(f.target.plan(0, &n, &cdb10(READ_10, 0, 0, 1), 0), Plan::Io(_)));
}

#[test]
fn read_only_unit_plans_no_writes() {
    let f = fixture_with(BLOCK, true);
    let c = match f.target.plan(0, &nexus(1), &cdb10(WRITE_10, 0, 0, 1), 512) {
        Plan::Done(c) => c,
        other => panic!("{:?}", other),
    };
    assert_sense(&c, DATA_PROTECT, 0x27, 0x00);
}

#[test]
fn write_order_hold_excludes_compare_and_write() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let f = Arc::new(fixture());
    let n = nexus(1);
    let w1 = io(f.target.plan(0, &n, &cdb10(WRITE_10, 0, 0, 1), 512));
    let w2 = io(f.target.plan(0, &n, &cdb10(WRITE_10, 0, 8, 1), 512));
    let done = Arc::new(AtomicBool::new(false));
    let hold = WriteOrderHold::new([&w1, &w2]);
    let t = {
        let (f, done) = (f.clone(), done.clone());
        std::thread::spawn(move || {
            let mut cdb = [0u8; 16];
            cdb[0] = 0x89;
            cdb[13] = 1;
            let (c, _) = f.run(&cdb, &[0u8; 1024]);
            done.store(true, Ordering::SeqCst);
            c.status
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert!(!done.load(Ordering::SeqCst), "COMPARE AND WRITE ran while planned writes were held");
    drop(hold);
    assert_eq!(t.join().unwrap(), GOOD);
}
