//! The iSCSI event loops' io_uring, on the `io-uring` crate (the same crate
//! and version libublk drives the ublk queues with, so one ring
//! implementation serves both frontends). One ring per event loop, used only
//! to run a batch of positional reads and writes and wait for all of them
//! (`run`): N backing transfers cost one `io_uring_enter` instead of N
//! pread/pwrite calls.
//!
//! The ring never has more in flight than it has submission entries, and
//! `run` returns only when every submitted transfer has completed, so the
//! buffers the caller lent are free again and the completion queue (twice
//! the size) cannot overflow.

use std::io;
use std::os::fd::RawFd;

use io_uring::{opcode, register, types, IoUring};

/// io_uring_enter's flag to wait for completions (linux/io_uring.h).
const IORING_ENTER_GETEVENTS: u32 = 1;

/// One transfer: `len` bytes between `buf` and `fd` at `offset`.
#[derive(Clone, Copy, Debug)]
pub struct Op {
    pub fd: RawFd,
    pub write: bool,
    pub offset: u64,
    pub buf: *mut u8,
    pub len: u32,
}

pub struct Ring {
    ring: IoUring,
    entries: usize,
    /// io_uring_enter calls made (for stats).
    pub enters: u64,
}

impl Ring {
    /// A ring of `entries` submission slots (a power of two). Fails with the
    /// kernel's error where io_uring is missing or forbidden (ENOSYS, EPERM
    /// under a seccomp filter or kernel.io_uring_disabled), and with
    /// EOPNOTSUPP when READ/WRITE are not offered (kernels before 5.6).
    pub fn new(entries: u32) -> io::Result<Ring> {
        // Only the loop's own thread submits, and it reaps right after
        // submitting: completion work can wait for the next enter.
        let ring = match IoUring::builder().setup_single_issuer().setup_defer_taskrun().build(entries) {
            Ok(r) => r,
            // Kernels before 6.1 lack DEFER_TASKRUN: a plain ring.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => IoUring::new(entries)?,
            Err(e) => return Err(e),
        };
        let mut probe = register::Probe::new();
        ring.submitter().register_probe(&mut probe)?;
        if !probe.is_supported(opcode::Read::CODE) || !probe.is_supported(opcode::Write::CODE) {
            return Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP));
        }
        let entries = ring.params().sq_entries() as usize;
        Ok(Ring { ring, entries, enters: 0 })
    }

    /// Copies completions out; returns how many.
    fn reap(&mut self, base: usize, results: &mut [Option<io::Result<usize>>]) -> usize {
        let mut n = 0;
        for cqe in self.ring.completion() {
            let i = cqe.user_data() as usize;
            if let Some(slot) = i.checked_sub(base).and_then(|i| results.get_mut(i)) {
                let res = cqe.result();
                *slot = Some(if res < 0 { Err(io::Error::from_raw_os_error(-res)) } else { Ok(res as usize) });
            }
            n += 1;
        }
        n
    }

    /// Runs every transfer and waits for all of them. `results[i]` is set
    /// for `ops[i]`; None means it never ran (the ring failed; the caller
    /// runs it another way and drops the ring). The buffers must stay valid
    /// for the call only.
    ///
    /// # Safety
    /// Each op's `buf` must point to `len` bytes the caller owns
    /// (writable for reads) and that nothing else touches during the call.
    pub unsafe fn run(&mut self, ops: &[Op], results: &mut Vec<Option<io::Result<usize>>>) -> io::Result<()> {
        results.clear();
        results.resize_with(ops.len(), || None);
        let mut base = 0;
        for chunk in ops.chunks(self.entries) {
            {
                let mut sq = self.ring.submission();
                for (k, op) in chunk.iter().enumerate() {
                    let fd = types::Fd(op.fd);
                    let sqe = if op.write {
                        opcode::Write::new(fd, op.buf, op.len).offset(op.offset).build()
                    } else {
                        opcode::Read::new(fd, op.buf, op.len).offset(op.offset).build()
                    };
                    // The queue is empty here (every earlier chunk was
                    // submitted and reaped) and a chunk fits it.
                    sq.push(&sqe.user_data((base + k) as u64)).map_err(|_| io::Error::from_raw_os_error(libc::EBUSY))?;
                }
            } // dropping `sq` publishes the tail
            let n = chunk.len();
            let mut submitted = 0usize;
            let mut reaped = 0usize;
            let mut failure = None;
            loop {
                if reaped >= submitted && (failure.is_some() || submitted == n) {
                    break;
                }
                let r = if failure.is_none() {
                    self.ring.submit_and_wait(n - reaped)
                } else {
                    // After a failed submit the unsubmitted entries stay in
                    // the queue (the ring is dropped by the caller): only
                    // wait for what the kernel took, submitting nothing.
                    self.ring.submitter().enter::<libc::sigset_t>(0, (submitted - reaped) as u32, IORING_ENTER_GETEVENTS, None)
                };
                self.enters += 1;
                match r {
                    Ok(k) if failure.is_none() => submitted = (submitted + k).min(n),
                    Ok(_) => {}
                    // A hard error while only waiting cannot leave the
                    // buffers to the kernel: keep waiting.
                    Err(e) if failure.is_some() || matches!(e.raw_os_error(), Some(libc::EINTR | libc::EAGAIN | libc::EBUSY)) => {}
                    Err(e) => {
                        // The kernel took none of the rest: they are reported unrun.
                        submitted = n - self.ring.submission().len();
                        failure = Some(e);
                    }
                }
                reaped += self.reap(base, &mut results[base..base + n]);
            }
            if let Some(e) = failure {
                return Err(e);
            }
            base += n;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;

    #[test]
    fn reads_and_writes_in_one_batch() {
        let ring = Ring::new(8);
        let mut ring = match ring {
            Ok(r) => r,
            Err(e) => {
                eprintln!("SKIPPED: io_uring unavailable here: {e}");
                return;
            }
        };
        let path = std::env::temp_dir().join(format!("netcfgd-uring-test-{}", std::process::id()));
        let mut f = std::fs::OpenOptions::new().create(true).truncate(true).read(true).write(true).open(&path).unwrap();
        f.write_all(&(0..=255u8).cycle().take(64 * 1024).collect::<Vec<u8>>()).unwrap();
        let fd = f.as_raw_fd();
        // 20 ops on an 8-entry ring: three chunks.
        let mut bufs: Vec<Vec<u8>> = (0..20).map(|_| vec![0u8; 512]).collect();
        bufs[3] = vec![7u8; 512];
        let ops: Vec<Op> = bufs
            .iter_mut()
            .enumerate()
            .map(|(i, b)| Op { fd, write: i == 3, offset: (i as u64) * 1000, buf: b.as_mut_ptr(), len: 512 })
            .collect();
        let mut results = Vec::new();
        unsafe { ring.run(&ops, &mut results) }.unwrap();
        for (i, r) in results.iter().enumerate() {
            assert_eq!(*r.as_ref().unwrap().as_ref().unwrap(), 512, "op {i}");
            if i != 3 {
                assert_eq!(bufs[i][0], ((i * 1000) % 256) as u8);
            }
        }
        let mut back = vec![0u8; 512];
        use std::os::unix::fs::FileExt;
        f.read_exact_at(&mut back, 3000).unwrap();
        assert_eq!(back, vec![7u8; 512]);
        // A bad fd fails that op only.
        let mut b = vec![0u8; 16];
        let ops = [Op { fd: -1, write: false, offset: 0, buf: b.as_mut_ptr(), len: 16 }];
        unsafe { ring.run(&ops, &mut results) }.unwrap();
        assert_eq!(results[0].as_ref().unwrap().as_ref().unwrap_err().raw_os_error(), Some(libc::EBADF));
        assert!(ring.enters >= 4);
        // A short read at the end of the file reports what was read.
        let mut tail = vec![0u8; 4096];
        let ops = [Op { fd, write: false, offset: 64 * 1024 - 100, buf: tail.as_mut_ptr(), len: 4096 }];
        unsafe { ring.run(&ops, &mut results) }.unwrap();
        assert_eq!(*results[0].as_ref().unwrap().as_ref().unwrap(), 100);
        let _ = std::fs::remove_file(&path);
    }
}
