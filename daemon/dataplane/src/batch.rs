//! Backing I/O for the event loops: each loop owns one `IoEngine`. With an
//! io_uring the protocol defers plain READs and WRITEs (the SCSI crate's
//! `Target::plan`) and runs them here, a batch per pass over a connection's
//! input, on one `io_uring_enter`. Without one (kernel too old, io_uring
//! forbidden by a seccomp filter or kernel.io_uring_disabled, or switched
//! off) every command goes through `Target::execute` as before, and
//! `describe()` says why for `stats()["io_engine"]`.

use std::io;

use netcfgd_scsi::{BlockIo, WriteOrderHold};

use crate::uring::{Op, Ring};

/// Submission slots per ring: a whole CmdSN window of 4 KiB commands fits.
pub const RING_ENTRIES: u32 = 128;
/// Larger transfers are not batched: the syscall is noise next to the copy,
/// and 32 in-flight 128 KiB buffers miss the cache where one reused buffer
/// does not (measured: 128 KiB reads cost more CPU batched).
pub const MAX_BATCHED_TRANSFER: usize = 64 * 1024;

/// A planned transfer waiting for the batch to run, with what its answer needs.
pub struct Pending {
    pub io: BlockIo,
    /// Write: the Data-Out (at least `io.len()` bytes). Read: the destination
    /// (exactly `io.len()` bytes once run).
    pub buf: Vec<u8>,
    pub itt: u32,
    pub lun: u64,
    pub edtl: u32,
    /// The PDU's R bit.
    pub read: bool,
    /// Residual of a write (what the CDB asked vs what was sent), from `residual::plan_write`.
    pub residual: Option<(u8, u32)>,
}

pub struct IoEngine {
    ring: Option<Ring>,
    /// Batch writes too. Off by default: on ext4 io_uring hands buffered
    /// writes to a kernel worker thread (no async buffered writes there),
    /// which measured slower than pwrite (docs/dataplane.md).
    batch_writes: bool,
    why_sync: String,
    ops: Vec<Op>,
    /// Per transfer of the last `run`.
    pub results: Vec<Option<io::Result<usize>>>,
    /// io_uring_enter calls so far (to feed the counters as deltas).
    pub enters: u64,
}

impl IoEngine {
    /// Every command through `Target::execute`.
    pub fn synchronous(why: &str) -> IoEngine {
        IoEngine { ring: None, batch_writes: false, why_sync: why.to_string(), ops: Vec::new(), results: Vec::new(), enters: 0 }
    }

    /// Batched on an io_uring when the kernel allows it, else synchronous.
    /// Reads are batched; writes too with `batch_writes`.
    pub fn batched(batch_writes: bool) -> IoEngine {
        match Ring::new(RING_ENTRIES) {
            Ok(ring) => IoEngine { ring: Some(ring), batch_writes, ..IoEngine::synchronous("") },
            Err(e) => IoEngine::synchronous(&format!("io_uring unavailable: {e}")),
        }
    }

    pub fn batching(&self) -> bool {
        self.ring.is_some()
    }

    /// Whether a planned transfer goes to the ring; the others are done
    /// synchronously, in order, after the batch before them.
    pub fn accepts(&self, io: &BlockIo) -> bool {
        self.ring.is_some() && io.len() <= MAX_BATCHED_TRANSFER && (self.batch_writes || !io.is_write())
    }

    /// "io_uring", or "sync (why)".
    pub fn describe(&self) -> String {
        if self.ring.is_some() && self.batch_writes {
            "io_uring (reads and writes)".to_string()
        } else if self.ring.is_some() {
            "io_uring (reads)".to_string()
        } else {
            format!("sync ({})", self.why_sync)
        }
    }

    /// Performs every transfer of the batch (each `buf` sized by the
    /// caller), all of them in flight together, holding the write-order lock
    /// of the units written. `results[i]` answers `batch[i]`. If the ring
    /// fails, what it did not run runs synchronously and the engine stops
    /// batching.
    pub fn run(&mut self, batch: &mut [Pending], use_ring: bool) {
        self.ops.clear();
        for p in batch.iter_mut() {
            let len = p.io.len().min(p.buf.len());
            self.ops.push(Op { fd: p.io.fd(), write: p.io.is_write(), offset: p.io.offset(), buf: p.buf.as_mut_ptr(), len: len as u32 });
        }
        // From here the buffers are reached only through `ops`.
        let _hold = WriteOrderHold::new(batch.iter().map(|p| &p.io));
        self.results.clear();   // Ring::run clears it too; the sync path relies on this one
        if let Some(ring) = self.ring.as_mut().filter(|_| use_ring) {
            // SAFETY: each op points into its Pending's buffer, which the
            // caller lent us mutably for this call and nothing else touches.
            let r = unsafe { ring.run(&self.ops, &mut self.results) };
            self.enters = ring.enters;
            if let Err(e) = r {
                self.why_sync = format!("io_uring failed: {e}");
                self.ring = None;
            }
        }
        self.results.resize_with(batch.len(), || None);
        for (op, r) in self.ops.iter().zip(self.results.iter_mut()) {
            if r.is_none() {
                *r = Some(transfer(op));
            }
        }
    }
}

/// One synchronous pread/pwrite (the `finish_*` calls complete short ones).
fn transfer(op: &Op) -> io::Result<usize> {
    // SAFETY: op.buf holds op.len bytes lent to `run`; the fd is held open
    // by the op's BlockIo.
    let n = unsafe {
        if op.write {
            libc::pwrite(op.fd, op.buf as *const libc::c_void, op.len as usize, op.offset as libc::off_t)
        } else {
            libc::pread(op.fd, op.buf.cast(), op.len as usize, op.offset as libc::off_t)
        }
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}
